#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_test
short_description: Run one intra-node nccl-tests benchmark on a host and return the parsed result
version_added: "0.1.0"
description:
  - Runs on each GPU host. Starts one nccl-tests binary (for example C(all_reduce_perf)) over the host's GPUs, under a hard
    time limit, and parses its output into the collection's NCCL result (rows, bus bandwidth, reasons).
  - By default the binary runs alone with C(-g) O(gpus) (one process drives every GPU). With O(mpirun.enabled=true) it runs as
    C(mpirun -np) O(gpus) on this host, one process per GPU with C(-g 1) (needed by MPI builds of nccl-tests and by the CPU
    stand-in used in tests).
  - The task does not fail when the test fails, unless O(fail_on_error=true); the verdict is in RV(ok) and RV(reasons). A test
    that runs past O(timeout_s) is killed with its whole process group (SIGTERM, then SIGKILL) and reported as
    C(timed out after N s). Output that is not nccl-tests output (garbage, a crash) gives reasons, never a traceback.
  - Never changes anything on the host (C(changed) is always false). In check mode nothing is run; RV(command) shows what would run.
author:
  - dsxos.cluster contributors (@dsxos)
requirements:
  - nccl-tests binaries (or the CPU stand-in) on the managed host; C(mpirun) when O(mpirun.enabled=true)
options:
  binary_dir:
    description: Directory holding the nccl-tests binaries (C(all_reduce_perf), C(all_gather_perf), ...).
    type: path
    required: true
  collective:
    description: Collective to test. C(all_reduce), C(allreduce) and C(all_reduce_perf) are the same.
    type: str
    default: all_reduce
  gpus:
    description: Number of GPUs (ranks) to test on this host.
    type: int
    default: 8
  min_bytes:
    description: Smallest message size (C(-b)), bytes or with K/M/G.
    type: str
    default: 1M
  max_bytes:
    description: Largest message size (C(-e)), bytes or with K/M/G.
    type: str
    default: 8G
  step_factor:
    description: Size multiplier between rows (C(-f)).
    type: int
    default: 2
  iters:
    description: Timed iterations per size (C(-n)).
    type: int
    default: 20
  warmup:
    description: Warm-up iterations per size (C(-w)).
    type: int
    default: 5
  check:
    description: Validate the results (C(-c 1)); wrong values then fail the test.
    type: bool
    default: true
  env:
    description: Environment for the test (for example C(NCCL_DEBUG), C(NCCL_IB_HCA)); exported to every rank under mpirun.
    type: dict
    default: {}
  timeout_s:
    description: Wall-clock limit in seconds; the test is killed after it.
    type: int
    default: 600
  extra_args:
    description: Further arguments for the test binary, one list element per argument.
    type: list
    elements: str
    default: []
  mpirun:
    description: Run the test as C(mpirun -np gpus) on this host, each process C(-g 1).
    type: dict
    default: {}
    suboptions:
      enabled:
        description: Use mpirun.
        type: bool
        default: false
      path:
        description: mpirun program (name on the PATH or path).
        type: str
        default: mpirun
      args:
        description: Extra mpirun arguments, one list element per argument (for example C(--mca), C(btl), C(self,vader)).
        type: list
        elements: str
        default: []
      allow_run_as_root:
        description: Pass C(--allow-run-as-root) (Open MPI refuses to run as root otherwise).
        type: bool
        default: false
  ignore_warn_patterns:
    description: Regular expressions; C(NCCL WARN) messages matching one are warnings instead of failure reasons.
    type: list
    elements: str
    default: []
  large_message_bytes:
    description: Rows at or above this size count as large messages for RV(busbw) (default 1 GiB).
    type: int
  log_tail_chars:
    description: Characters of the end of the output returned in RV(log_tail).
    type: int
    default: 4000
  fail_on_error:
    description: Fail the task when the test did not pass (non-zero exit, timeout, reasons in the output).
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: All-reduce over the 8 GPUs of every host
  dsxos.cluster.nccl_test:
    binary_dir: /opt/nccl-tests/build
    collective: all_reduce
    gpus: 8
    min_bytes: 1M
    max_bytes: 8G
    env:
      NCCL_DEBUG: WARN
    timeout_s: 900
  register: intra

- name: Show the large-message bus bandwidth
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }}: {{ intra.busbw }} GB/s ok={{ intra.ok }} {{ intra.reasons }}"

- name: MPI build of nccl-tests (one process per GPU), failing the task on a bad result
  dsxos.cluster.nccl_test:
    binary_dir: /opt/nccl-tests/build-mpi
    gpus: 8
    mpirun:
      enabled: true
      allow_run_as_root: true
    fail_on_error: true
"""

RETURN = r"""
ok:
  description: True when the test ran to the end, exited 0 and its output has no failure reason. Null in check mode.
  returned: always
  type: bool
reasons:
  description: Why the test is not usable (timeout, exit status, NCCL errors, wrong values, garbage output).
  returned: always
  type: list
  elements: str
busbw:
  description: Large-message bus bandwidth in GB/s (best row at or above O(large_message_bytes), else the largest size).
  returned: when the test ran
  type: float
collective:
  description: Canonical collective name.
  returned: always
  type: str
  sample: all_reduce
ranks:
  description: Ranks in the test (from the log, else O(gpus)).
  returned: always
  type: int
host:
  description: Host name of the managed host.
  returned: always
  type: str
command:
  description: The command line run (or that would run in check mode), one list element per argument.
  returned: always
  type: list
  elements: str
exit_status:
  description: Exit status of the test (negative - killed by that signal; 127 - could not start). Not called C(rc), so that
    Ansible does not fail the task on a failed test; O(fail_on_error) decides.
  returned: when the test ran
  type: int
timed_out:
  description: True when the test was killed at O(timeout_s).
  returned: when the test ran
  type: bool
duration_s:
  description: Wall-clock seconds the test ran.
  returned: when the test ran
  type: float
result:
  description: The full parsed result (C(collective), C(ranks), C(hosts), C(devices), C(rows), C(avg_busbw), C(max_busbw),
    C(large_message_busbw), C(ok), C(reasons), C(warnings), C(parameters), ...), as dsxos.cluster's NCCL parser returns it.
  returned: when the test ran
  type: dict
log_tail:
  description: The end of the output (stdout, then stderr), at most O(log_tail_chars) characters.
  returned: when the test ran
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.host_entry import NCCL_TEST
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish


def main() -> None:
    module = AnsibleModule(argument_spec=NCCL_TEST.spec, supports_check_mode=True, **NCCL_TEST.module_options)
    finish(module, call_entry(NCCL_TEST, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
