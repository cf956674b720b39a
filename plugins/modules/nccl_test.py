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

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import (
    DEFAULT_LARGE_MESSAGE_BYTES, canonical_collective, parse_nccl_output,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_runner import (
    LocalLaunch, NcclRunnerError, NcclTestArgs, binary_path, run_one,
)


def _tail(text, limit):
    if limit <= 0:
        return ""
    return text[-limit:]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary_dir=dict(type="path", required=True),
            collective=dict(type="str", default="all_reduce"),
            gpus=dict(type="int", default=8),
            min_bytes=dict(type="str", default="1M"),
            max_bytes=dict(type="str", default="8G"),
            step_factor=dict(type="int", default=2),
            iters=dict(type="int", default=20),
            warmup=dict(type="int", default=5),
            check=dict(type="bool", default=True),
            env=dict(type="dict", default={}),
            timeout_s=dict(type="int", default=600),
            extra_args=dict(type="list", elements="str", default=[]),
            mpirun=dict(type="dict", default={}, options=dict(
                enabled=dict(type="bool", default=False),
                path=dict(type="str", default="mpirun"),
                args=dict(type="list", elements="str", default=[]),
                allow_run_as_root=dict(type="bool", default=False),
            )),
            ignore_warn_patterns=dict(type="list", elements="str", default=[]),
            large_message_bytes=dict(type="int"),
            log_tail_chars=dict(type="int", default=4000),
            fail_on_error=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    host = socket.gethostname() or "localhost"
    mpi = params["mpirun"] or {}
    use_mpi = bool(mpi.get("enabled"))
    try:
        if params["gpus"] is None or params["gpus"] < 1:
            raise NcclRunnerError("must be an integer >= 1", path="nccl_test", field="gpus", value=params["gpus"])
        if params["timeout_s"] < 1:
            raise NcclRunnerError("must be >= 1 second", path="nccl_test", field="timeout_s", value=params["timeout_s"])
        test_args = NcclTestArgs(min_bytes=params["min_bytes"], max_bytes=params["max_bytes"],
                                 step_factor=params["step_factor"], gpus=1 if use_mpi else params["gpus"],
                                 iters=params["iters"], warmup=params["warmup"], check=1 if params["check"] else 0,
                                 extra=list(params["extra_args"]))
        launch = LocalLaunch(binary_dir=params["binary_dir"], collective=params["collective"], args=test_args,
                             processes=params["gpus"] if use_mpi else 1, env=params["env"],
                             mpirun=mpi.get("path") or "mpirun", mpirun_args=list(mpi.get("args") or []),
                             allow_run_as_root=bool(mpi.get("allow_run_as_root")), timeout_s=params["timeout_s"])
        command = launch.to_command()
        binary = binary_path(params["binary_dir"], params["collective"])
    except NcclRunnerError as err:
        module.fail_json(msg=str(err), error=err.to_dict())

    collective = canonical_collective(params["collective"])
    base = dict(changed=False, host=host, collective=collective, ranks=params["gpus"], command=command.argv)
    if module.check_mode:
        module.exit_json(ok=None, reasons=[], **base)

    if not os.access(binary, os.X_OK):
        reasons = ["nccl-tests binary not found or not executable on %s: %s" % (host, binary)]
        if params["fail_on_error"]:
            module.fail_json(msg="nccl-tests %s on %s did not run: %s" % (collective, host, reasons[0]), ok=False,
                             reasons=reasons, **base)
        module.exit_json(ok=False, reasons=reasons, **base)

    output = run_one(command)
    text = output.stdout
    if output.stderr:
        text = text + ("\n" if text and not text.endswith("\n") else "") + output.stderr
    large = params["large_message_bytes"] if params["large_message_bytes"] is not None else DEFAULT_LARGE_MESSAGE_BYTES
    parsed = parse_nccl_output(text, collective=collective, source="nccl_test %s on %s" % (collective, host),
                               large_message_bytes=large, ignore_warn_patterns=params["ignore_warn_patterns"])
    reasons = list(parsed.reasons)
    if output.timed_out:
        reasons.insert(0, "timed out after %d s" % params["timeout_s"])
    elif output.error:
        reasons.insert(0, output.error)
    elif output.rc != 0:
        reasons.insert(0, "test exited with status %d" % output.rc)
    ok = parsed.ok and output.ok and not reasons
    parsed.ok = ok
    parsed.reasons = reasons
    result = dict(base)
    result.update(ok=ok, reasons=reasons, busbw=parsed.large_message_busbw, ranks=parsed.ranks or params["gpus"],
                  exit_status=output.rc, timed_out=output.timed_out, duration_s=round(output.duration_s, 3),
                  result=parsed.to_dict(), log_tail=_tail(text, params["log_tail_chars"]))
    if params["fail_on_error"] and not ok:
        module.fail_json(msg="nccl-tests %s on %s failed: %s" % (collective, host, "; ".join(reasons)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
