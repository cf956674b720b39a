#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: training_goodput
short_description: Run the training-goodput workload on a host, or compute a job's goodput from the rank logs
version_added: "0.1.0"
description:
  - Training goodput certifies that a cluster does useful training work, not only that its parts are healthy. A tiny
    real training job (PyTorch, C(DistributedDataParallel) over the C(gloo) backend on the CPU) runs across the hosts with
    periodic checkpoints, an injected interruption and a resume from the last checkpoint; its logs are parsed with
    regex profiles into goodput and completed work.
  - "O(mode=run) runs on each host one rank of the workload C(goodput_train.py) (shipped in the C(dsxos.cluster.certify)
    role's C(files/)): the first attempt stops every rank after step O(interrupt_after) (exit status 75), the module starts
    the second attempt, which resumes from the newest checkpoint. Attempt N meets at port O(master_port) + N - 1. All ranks
    must run at the same time: start the task with C(async) and C(poll: 0) and wait with C(ansible.builtin.async_status)
    (a plain task runs only C(forks) hosts at once, and the other ranks would never join). The workload is killed
    (its whole process group) when O(timeout_s) runs out; keep the task's C(async) above it."
  - "O(mode=evaluate) parses the rank logs (O(runs), the registered results of O(mode=run), or O(logs)) with a
    built-in or user regex O(profile) and returns C(goodput) = (t_total - t_checkpoint - t_resume - t_save) /
    (t_total - t_resume), C(steps_completed), C(samples), C(gpu_seconds) (world size x the summed step time of the
    completed steps), every C(t_*) component and per-rank statistics, with a verdict and its reasons. Hosts without a
    log (unreachable, failed) are reported as excluded, not as a crash. It runs wherever the task runs; use
    C(run_once) and C(delegate_to: localhost)."
  - Garbage in a log (unreadable lines, a log without any step) becomes a reason or a warning, never a traceback.
author:
  - dsxos.cluster contributors (@dsxos)
requirements:
  - "O(mode=run): PyTorch (CPU build is enough, for example C(torch==2.13.0)) for the O(python) interpreter on the host."
options:
  mode:
    description: V(run) one rank on this host, or V(evaluate) the logs of all ranks.
    type: str
    choices: [run, evaluate]
    default: run
  script:
    description: Path on the host of C(goodput_train.py). Required with O(mode=run).
    type: path
  python:
    description: Python interpreter that runs the workload (needs PyTorch). Default is the interpreter running this module.
    type: path
  host:
    description: Name of this host in the report (use C(inventory_hostname)); default is the system host name.
    type: str
  rank:
    description: Rank of this host, 0 to O(world_size) - 1. Rank 0 hosts the rendezvous and writes the checkpoints.
    type: int
  world_size:
    description:
      - With O(mode=run) the number of ranks (hosts) of the job. Compute it from the hosts still in the play
        (C(ansible_play_hosts)), so that an unreachable host does not leave the others waiting.
      - With O(mode=evaluate) the number of ranks expected; ranks without a log are reasons.
    type: int
  master_addr:
    description: Address of rank 0 that every rank can reach (its fabric address). Required with O(mode=run).
    type: str
  master_port:
    description: TCP port of the rendezvous of attempt 1 (attempt 2 uses the next port).
    type: int
    default: 29500
  ifname:
    description: Network interface gloo uses (C(GLOO_SOCKET_IFNAME)); default is the interface that routes to O(master_addr).
    type: str
  workdir:
    description: Directory on the host for checkpoints (C(checkpoints/)), the event log (C(goodput-rank<N>.log)) and the
      workload's output (C(goodput-rank<N>.out)). Created when missing. Required with O(mode=run).
    type: path
  clean:
    description: Remove the checkpoints and logs of an earlier run in O(workdir) first (only files the workload writes).
    type: bool
    default: true
  steps:
    description: Training steps of the job.
    type: int
    default: 200
  batch_size:
    description: Samples per rank and step.
    type: int
    default: 64
  hidden:
    description: Width of the hidden layers of the MLP.
    type: int
    default: 256
  layers:
    description: Number of hidden layers.
    type: int
    default: 3
  checkpoint_every:
    description: Rank 0 writes a checkpoint every this many steps (V(0) never; then the resume starts from step 0).
    type: int
    default: 50
  interrupt_after:
    description: The first attempt stops after this step and the job resumes from its last checkpoint. Default is 60 % of
      O(steps); V(0) runs without interruption.
    type: int
  restart_delay_s:
    description: Seconds to wait between the interruption and the restart (a scheduler's requeue time).
    type: float
    default: 0.0
  comm_timeout_s:
    description: Rendezvous and collective timeout of the workload in seconds; a rank that waits longer for its peers fails.
    type: float
    default: 60.0
  timeout_s:
    description: Wall-clock limit of all attempts together; the workload is killed when it runs out and the result says so.
    type: float
    default: 600.0
  threads:
    description: CPU threads per rank (C(torch.set_num_threads)).
    type: int
    default: 1
  extra_args:
    description: More arguments for the workload, for example fault injection C(--hang-at-step 5) or C(--step-delay-s 0.2).
    type: list
    elements: str
    default: []
  max_log_bytes:
    description: At most this many bytes of the rank's event log are returned in C(log).
    type: int
    default: 4194304
  runs:
    description:
      - With O(mode=evaluate) the results of O(mode=run) (as registered by C(ansible.builtin.async_status)), one per host.
        An entry needs C(log) and C(rank); a failed entry without a log (C(failed), C(unreachable), C(msg)) makes its host
        excluded with that message; empty entries are ignored.
    type: list
    elements: dict
    default: []
  logs:
    description:
      - With O(mode=evaluate) rank logs given directly, each C(text) or C(path) (read where the task runs), with optional
        C(rank) and C(host). Use it for logs of other training jobs (Megatron-LM, NeMo) with their O(profile).
    type: list
    elements: dict
    default: []
  expected_hosts:
    description: With O(mode=evaluate) the hosts that should have a run; a host without one is reported as excluded
      (unreachable or not run).
    type: list
    elements: str
    default: []
  profile:
    description:
      - Log profile, the name of a built-in one (V(dsxos), V(megatron), V(nemo)) or a dict with C(events) (event kind to regex),
        and optional C(base) (a built-in profile to extend), C(prefix) (regex with C(ts), C(rank), C(attempt) groups),
        C(marker), C(timestamp_format) (V(auto), V(iso), V(epoch) or a strptime format), C(step_time_unit) and
        C(duration_unit) (V(s), V(ms), V(us)), C(samples_scope) (V(rank) or V(global)). See docs/certify-goodput.md.
    type: raw
    default: dsxos
  expected_steps:
    description: With O(mode=evaluate) the steps the job must complete; default O(steps) for the V(dsxos) profile.
    type: int
  min_goodput:
    description: With O(mode=evaluate) the lowest goodput (0 to 1) that passes.
    type: float
  fail_on:
    description: With O(mode=evaluate), V(fail) fails the task when the verdict is C(fail); V(never) only reports.
      With O(mode=run), V(fail) fails the task when the workload fails or times out.
    type: str
    choices: [never, fail]
    default: never
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Start one rank per host, all at once
  dsxos.cluster.training_goodput:
    mode: run
    script: /var/tmp/dsxos-goodput/goodput_train.py
    host: "{{ inventory_hostname }}"
    rank: "{{ ansible_play_hosts.index(inventory_hostname) }}"
    world_size: "{{ ansible_play_hosts | length }}"
    master_addr: "{{ hostvars[ansible_play_hosts[0]].fabric_address }}"
    workdir: /var/tmp/dsxos-goodput
    steps: 200
    checkpoint_every: 50
    timeout_s: 900
  async: 1200
  poll: 0
  register: goodput_job

- name: Wait for every rank
  ansible.builtin.async_status:
    jid: "{{ goodput_job.ansible_job_id }}"
  register: goodput_run
  until: goodput_run.finished
  retries: 240
  delay: 5

- name: Goodput of the job
  dsxos.cluster.training_goodput:
    mode: evaluate
    runs: "{{ ansible_play_hosts_all | map('extract', hostvars) | map(attribute='goodput_run', default={}) | list }}"
    expected_hosts: "{{ ansible_play_hosts_all }}"
    world_size: "{{ ansible_play_hosts | length }}"
    expected_steps: 200
    min_goodput: 0.8
  run_once: true
  delegate_to: localhost
  register: goodput

- name: Megatron-LM logs fetched to the controller, with a longer step pattern
  dsxos.cluster.training_goodput:
    mode: evaluate
    logs:
      - {path: /srv/logs/job-17/rank0.log, rank: 0, host: gpu-a1}
    profile:
      base: megatron
      events:
        start: "^> initializing torch distributed"
  delegate_to: localhost
"""

RETURN = r"""
goodput:
  description: (t_total - t_checkpoint - t_resume - t_save) / (t_total - t_resume); null when it cannot be computed.
  returned: mode is evaluate
  type: float
  sample: 0.93
verdict:
  description: C(pass) or C(fail) (O(mode=evaluate)).
  returned: mode is evaluate
  type: str
passed:
  description: True when there is no reason.
  returned: mode is evaluate
  type: bool
reasons:
  description: Why the job fails (excluded hosts, errors, timeouts, unreadable logs, too few steps, low goodput).
  returned: mode is evaluate
  type: list
  elements: str
warnings_found:
  description: Problems that do not fail the job (some unreadable lines, timestamps going backwards).
  returned: mode is evaluate
  type: list
  elements: str
steps_completed:
  description: Steps every rank completed that survive in the final model (recomputed steps count once).
  returned: mode is evaluate
  type: int
steps_recomputed:
  description: Steps computed after the last checkpoint of an interrupted attempt, lost and computed again.
  returned: mode is evaluate
  type: int
samples:
  description: Training samples of the completed steps (all ranks).
  returned: mode is evaluate
  type: int
gpu_seconds:
  description: World size x the sum over completed steps of the slowest rank's step time (device-seconds of useful work;
    CPU seconds for the CPU workload).
  returned: mode is evaluate
  type: float
t_total:
  description: Seconds from the first event of any rank to the last event of any rank.
  returned: mode is evaluate
  type: float
t_checkpoint:
  description: Seconds in periodic checkpoints (slowest rank).
  returned: mode is evaluate
  type: float
t_resume:
  description: Seconds from the interruption until training was back (restart, rendezvous, checkpoint load).
  returned: mode is evaluate
  type: float
t_save:
  description: Seconds of the final save.
  returned: mode is evaluate
  type: float
ranks:
  description: Per rank C(rank), C(host), C(steps_completed), C(steps_recomputed), C(samples), C(t_step), C(t_lost),
    C(t_checkpoint), C(t_save), C(t_resume), C(t_startup), C(step_time_mean), C(step_time_max), C(attempts), C(complete),
    C(errors), C(warnings), C(malformed_lines).
  returned: mode is evaluate
  type: list
  elements: dict
log:
  description: The rank's event log (O(mode=run)), at most O(max_log_bytes).
  returned: mode is run
  type: str
attempt_results:
  description: Per attempt C(attempt), C(rc), C(seconds), C(port) (O(mode=run)). Not C(attempts), which C(until) loops set.
  returned: mode is run
  type: list
  elements: dict
timed_out:
  description: The workload was killed at O(timeout_s) (O(mode=run)).
  returned: mode is run
  type: bool
workload_failed:
  description: The workload did not finish (O(mode=run)); C(reason) says why.
  returned: mode is run
  type: bool
reason:
  description: Why the workload failed (its error line or the end of its output), or null (O(mode=run)).
  returned: mode is run
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.host_entry import TRAINING_GOODPUT
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish


def main() -> None:
    module = AnsibleModule(argument_spec=TRAINING_GOODPUT.spec, supports_check_mode=True, **TRAINING_GOODPUT.module_options)
    finish(module, call_entry(TRAINING_GOODPUT, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
