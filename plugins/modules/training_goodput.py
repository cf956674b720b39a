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

import os
import signal
import socket
import sys
import time
import subprocess

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.goodput import GoodputError, evaluate_logs

EXIT_INTERRUPTED = 75
KILL_GRACE_S = 5.0


def _kill_group(proc):
    """SIGTERM the workload's process group, SIGKILL what is left after a grace period."""
    for sig, wait_s in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _clean(workdir, rank):
    ckpt_dir = os.path.join(workdir, "checkpoints")
    for name in ("goodput-rank%d.log" % rank, "goodput-rank%d.out" % rank):
        path = os.path.join(workdir, name)
        if os.path.exists(path):
            os.unlink(path)
    if os.path.isdir(ckpt_dir):
        for name in os.listdir(ckpt_dir):
            if name.startswith("checkpoint-") or name.startswith("final.pt"):
                os.unlink(os.path.join(ckpt_dir, name))


def _tail_reason(out_path):
    """The last line of the workload's output that is not an event line (a traceback's last line, an argparse error)."""
    try:
        with open(out_path, "r", encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle.read()[-20000:].splitlines() if line.strip()]
    except OSError:
        return None
    events = [line for line in lines if " dsxos-goodput " in line and " event=error " in line]
    if events:
        return events[-1].split(" message=", 1)[-1]
    others = [line for line in lines if " dsxos-goodput " not in line]
    return others[-1][:500] if others else None


def _workload_argv(params, python, attempt, port, log_path, ckpt_dir):
    steps = params["steps"]
    interrupt_after = params["interrupt_after"]
    if interrupt_after is None:
        interrupt_after = (steps * 3) // 5
    argv = [
        python, params["script"], "--rank", str(params["rank"]), "--world-size", str(params["world_size"]),
        "--master-addr", params["master_addr"], "--master-port", str(port), "--attempt", str(attempt),
        "--steps", str(steps), "--batch-size", str(params["batch_size"]), "--hidden", str(params["hidden"]),
        "--layers", str(params["layers"]), "--checkpoint-every", str(params["checkpoint_every"]),
        "--checkpoint-dir", ckpt_dir, "--interrupt-after", str(interrupt_after), "--log-file", log_path,
        "--comm-timeout-s", str(params["comm_timeout_s"]), "--threads", str(params["threads"]),
    ]
    if params["ifname"]:
        argv += ["--ifname", params["ifname"]]
    return argv + list(params["extra_args"])


def run_rank(module):
    """Run attempt 1 and, after an interruption (exit 75), attempt 2 of this host's rank; never raises on workload failure."""
    params = module.params
    rank, world_size = params["rank"], params["world_size"]
    workdir = params["workdir"]
    python = params["python"] or sys.executable
    host = params["host"] or socket.gethostname()
    if not os.path.isfile(params["script"]):
        module.fail_json(msg="workload script not found on %s: %s (copy roles/certify/files/goodput_train.py there first)"
                         % (host, params["script"]))
    log_path = os.path.join(workdir, "goodput-rank%d.log" % rank)
    out_path = os.path.join(workdir, "goodput-rank%d.out" % rank)
    ckpt_dir = os.path.join(workdir, "checkpoints")
    try:
        os.makedirs(ckpt_dir, exist_ok=True)
        if params["clean"]:
            _clean(workdir, rank)
    except OSError as err:
        module.fail_json(msg="cannot prepare workdir %s on %s: %s" % (workdir, host, err.strerror or err))
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size), MASTER_ADDR=params["master_addr"],
               PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(params["threads"]))
    started = time.monotonic()
    deadline = started + params["timeout_s"]
    attempts = []
    timed_out = False
    for attempt in (1, 2):
        port = params["master_port"] + attempt - 1
        env["MASTER_PORT"] = str(port)
        argv = _workload_argv(params, python, attempt, port, log_path, ckpt_dir)
        began = time.monotonic()
        with open(out_path, "ab") as out:
            try:
                proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                                        cwd=workdir, env=env, start_new_session=True)
            except OSError as err:
                module.fail_json(msg="cannot start %s on %s: %s" % (python, host, err.strerror or err))
            try:
                rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                rc = proc.returncode
                timed_out = True
        attempts.append({"attempt": attempt, "rc": rc, "seconds": round(time.monotonic() - began, 3), "port": port})
        if timed_out or rc != EXIT_INTERRUPTED or attempt == 2:
            break
        if params["restart_delay_s"]:
            time.sleep(params["restart_delay_s"])
    log = ""
    try:
        with open(log_path, "rb") as handle:
            log = handle.read(params["max_log_bytes"]).decode("utf-8", errors="replace")
    except OSError:
        pass
    last_rc = attempts[-1]["rc"]
    reason = None
    if timed_out:
        reason = "rank %d on %s killed at its timeout of %s s (attempt %d)" % (rank, host, params["timeout_s"], len(attempts))
    elif last_rc != 0:
        reason = "rank %d on %s: workload exited with status %s: %s" % (rank, host, last_rc, _tail_reason(out_path) or "no output")
    result = dict(
        changed=True, mode="run", host=host, rank=rank, world_size=world_size, log=log, log_path=log_path, output_path=out_path,
        checkpoint_dir=ckpt_dir, attempt_results=attempts, timed_out=timed_out, timeout_s=params["timeout_s"],
        workload_failed=reason is not None, reason=reason, elapsed_s=round(time.monotonic() - started, 3),
        steps=params["steps"],
    )
    if reason and params["fail_on"] == "fail":
        module.fail_json(msg=reason, **result)
    module.exit_json(**result)


def _entries(module):
    """Log entries for goodput.evaluate_logs from ``runs``, ``logs`` and ``expected_hosts``."""
    params = module.params
    entries = []
    seen_hosts = set()
    expected_steps = None
    for index, run in enumerate(params["runs"]):
        if not run:
            continue
        host = run.get("host") or run.get("item") or "run %d" % index
        seen_hosts.add(host)
        entry = {"rank": run.get("rank"), "host": host, "timed_out": bool(run.get("timed_out")), "timeout_s": run.get("timeout_s")}
        if run.get("steps") and expected_steps is None:
            expected_steps = run["steps"]
        if run.get("unreachable"):
            entry["missing"] = "unreachable: %s" % (run.get("msg") or "host could not be reached")
        elif run.get("log"):
            entry["text"] = run["log"]
        else:
            entry["missing"] = run.get("reason") or run.get("msg") or "no log returned"
        entries.append(entry)
    for index, item in enumerate(params["logs"]):
        entry = {"rank": item.get("rank"), "host": item.get("host")}
        if item.get("host"):
            seen_hosts.add(item["host"])
        if item.get("text") is not None:
            entry["text"] = item["text"]
        elif item.get("path"):
            try:
                with open(item["path"], "rb") as handle:
                    entry["text"] = handle.read()
                entry["source"] = item["path"]
            except OSError as err:
                entry["missing"] = "cannot read %s: %s" % (item["path"], err.strerror or err)
        else:
            module.fail_json(msg="logs[%d] needs text or path (got keys %s)" % (index, ", ".join(sorted(item)) or "none"))
        entries.append(entry)
    for host in params["expected_hosts"]:
        if host not in seen_hosts:
            entries.append({"host": host, "missing": "unreachable or did not run the workload"})
    return entries, expected_steps


def evaluate(module):
    params = module.params
    entries, run_steps = _entries(module)
    expected_steps = params["expected_steps"]
    if expected_steps is None and params["profile"] == "dsxos":
        expected_steps = run_steps
    try:
        result = evaluate_logs(entries, profile=params["profile"], world_size=params["world_size"],
                               expected_steps=expected_steps, min_goodput=params["min_goodput"])
    except GoodputError as err:
        module.fail_json(msg=str(err), error=err.to_dict())
    result["warnings_found"] = result.pop("warnings")
    result.update(changed=False, mode="evaluate")
    if params["fail_on"] == "fail" and not result["passed"]:
        module.fail_json(msg="training goodput failed: %s" % "; ".join(result["reasons"][:5]), **result)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", default="run", choices=["run", "evaluate"]),
            script=dict(type="path"),
            python=dict(type="path"),
            host=dict(type="str"),
            rank=dict(type="int"),
            world_size=dict(type="int"),
            master_addr=dict(type="str"),
            master_port=dict(type="int", default=29500),
            ifname=dict(type="str"),
            workdir=dict(type="path"),
            clean=dict(type="bool", default=True),
            steps=dict(type="int", default=200),
            batch_size=dict(type="int", default=64),
            hidden=dict(type="int", default=256),
            layers=dict(type="int", default=3),
            checkpoint_every=dict(type="int", default=50),
            interrupt_after=dict(type="int"),
            restart_delay_s=dict(type="float", default=0.0),
            comm_timeout_s=dict(type="float", default=60.0),
            timeout_s=dict(type="float", default=600.0),
            threads=dict(type="int", default=1),
            extra_args=dict(type="list", elements="str", default=[]),
            max_log_bytes=dict(type="int", default=4194304),
            runs=dict(type="list", elements="dict", default=[]),
            logs=dict(type="list", elements="dict", default=[]),
            expected_hosts=dict(type="list", elements="str", default=[]),
            profile=dict(type="raw", default="dsxos"),
            expected_steps=dict(type="int"),
            min_goodput=dict(type="float"),
            fail_on=dict(type="str", default="never", choices=["never", "fail"]),
        ),
        required_if=[("mode", "run", ("script", "rank", "world_size", "master_addr", "workdir"))],
        supports_check_mode=True,
    )
    params = module.params
    if params["mode"] == "evaluate":
        evaluate(module)
    problems = []
    if params["world_size"] < 1 or not 0 <= params["rank"] < params["world_size"]:
        problems.append("rank %d must be in [0, world_size %d)" % (params["rank"], params["world_size"]))
    for name in ("steps", "batch_size", "hidden", "layers", "threads", "max_log_bytes"):
        if params[name] < 1:
            problems.append("%s must be at least 1 (got %s)" % (name, params[name]))
    for name in ("checkpoint_every", "restart_delay_s"):
        if params[name] < 0:
            problems.append("%s must not be negative (got %s)" % (name, params[name]))
    if params["interrupt_after"] is not None and not 0 <= params["interrupt_after"] < params["steps"]:
        problems.append("interrupt_after must be in [0, steps %d) (got %s)" % (params["steps"], params["interrupt_after"]))
    if params["timeout_s"] <= 0 or params["comm_timeout_s"] <= 0:
        problems.append("timeout_s and comm_timeout_s must be positive")
    if not 1 <= params["master_port"] <= 65534:
        problems.append("master_port must be in [1, 65534] (got %s)" % params["master_port"])
    if problems:
        module.fail_json(msg="; ".join(problems))
    if module.check_mode:
        module.exit_json(changed=True, mode="run", msg="check mode: would run rank %d of %d" % (params["rank"], params["world_size"]),
                         log="", attempt_results=[], timed_out=False, workload_failed=False, reason=None)
    run_rank(module)


if __name__ == "__main__":
    main()
