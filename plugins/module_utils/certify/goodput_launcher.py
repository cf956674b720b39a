# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Launching one rank of the training-goodput workload on this host (roles/certify/files/goodput_train.py).

:func:`launch_rank` is the rank's elastic agent: it runs attempt 1; when that stops on purpose after the
injected interruption (exit status :data:`EXIT_INTERRUPTED`), it starts attempt 2, which resumes from the
newest checkpoint.  Attempt N meets its peers at ``master_port + N - 1`` (no wait for the old port to be
free).  The workload runs in its own session; when ``timeout_s`` (for all attempts together) runs out, its
whole process group gets SIGTERM, then SIGKILL.  Workload failures are results, never exceptions; only a
setup problem (no script, workdir not writable, interpreter missing) raises :class:`GoodputLaunchError`.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError

EXIT_INTERRUPTED = 75
KILL_GRACE_S = 5.0
EVENT_MARKER = " dsxos-goodput "


class GoodputLaunchError(CertifyError):
    """The workload could not be started (names the host, path or option)."""


@dataclass
class LaunchConfig:  # pylint: disable=too-many-instance-attributes
    """What one rank runs.  ``interrupt_after=None`` means 60 % of ``steps``; 0 means no interruption."""

    script: str
    python: str
    host: str
    rank: int
    world_size: int
    master_addr: str
    workdir: str
    master_port: int = 29500
    ifname: Optional[str] = None
    steps: int = 200
    batch_size: int = 64
    hidden: int = 256
    layers: int = 3
    checkpoint_every: int = 50
    interrupt_after: Optional[int] = None
    restart_delay_s: float = 0.0
    comm_timeout_s: float = 60.0
    timeout_s: float = 600.0
    threads: int = 1
    extra_args: List[str] = field(default_factory=list)
    clean: bool = True
    max_log_bytes: int = 4194304

    def problems(self) -> List[str]:
        """Every option that is out of range, as ``name must ... (got value)``."""
        found = []
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            found.append("rank %d must be in [0, world_size %d)" % (self.rank, self.world_size))
        for name in ("steps", "batch_size", "hidden", "layers", "threads", "max_log_bytes"):
            if getattr(self, name) < 1:
                found.append("%s must be at least 1 (got %s)" % (name, getattr(self, name)))
        for name in ("checkpoint_every", "restart_delay_s"):
            if getattr(self, name) < 0:
                found.append("%s must not be negative (got %s)" % (name, getattr(self, name)))
        if self.interrupt_after is not None and not 0 <= self.interrupt_after < self.steps:
            found.append("interrupt_after must be in [0, steps %d) (got %s)" % (self.steps, self.interrupt_after))
        for name in ("timeout_s", "comm_timeout_s"):
            if getattr(self, name) <= 0:
                found.append("%s must be positive (got %s)" % (name, getattr(self, name)))
        if not 1 <= self.master_port <= 65534:
            found.append("master_port must be in [1, 65534] (got %s)" % self.master_port)
        if not self.master_addr:
            found.append("master_addr must not be empty")
        return found

    @property
    def log_path(self) -> str:
        return os.path.join(self.workdir, "goodput-rank%d.log" % self.rank)

    @property
    def output_path(self) -> str:
        return os.path.join(self.workdir, "goodput-rank%d.out" % self.rank)

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.workdir, "checkpoints")

    def effective_interrupt_after(self) -> int:
        return (self.steps * 3) // 5 if self.interrupt_after is None else self.interrupt_after

    def argv(self, attempt: int) -> List[str]:
        """Command line of ``attempt`` (1 or 2)."""
        argv = [
            self.python, self.script, "--rank", str(self.rank), "--world-size", str(self.world_size),
            "--master-addr", self.master_addr, "--master-port", str(self.master_port + attempt - 1), "--attempt", str(attempt),
            "--steps", str(self.steps), "--batch-size", str(self.batch_size), "--hidden", str(self.hidden),
            "--layers", str(self.layers), "--checkpoint-every", str(self.checkpoint_every),
            "--checkpoint-dir", self.checkpoint_dir, "--interrupt-after", str(self.effective_interrupt_after()),
            "--log-file", self.log_path, "--comm-timeout-s", str(self.comm_timeout_s), "--threads", str(self.threads),
        ]
        if self.ifname:
            argv += ["--ifname", self.ifname]
        return argv + [str(arg) for arg in self.extra_args]


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    """SIGTERM the workload's process group, SIGKILL what is left after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def _clean(config: LaunchConfig) -> None:
    """Remove what an earlier run of this rank left (its logs, rank 0's checkpoints); nothing else."""
    for path in (config.log_path, config.output_path):
        if os.path.exists(path):
            os.unlink(path)
    for name in os.listdir(config.checkpoint_dir):
        if name.startswith("checkpoint-") or name.startswith("final.pt"):
            os.unlink(os.path.join(config.checkpoint_dir, name))


def failure_reason(output_path: str) -> Optional[str]:
    """The workload's last ``event=error`` message, else the last line of its output that is not an event."""
    try:
        with open(output_path, "r", encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle.read()[-20000:].splitlines() if line.strip()]
    except OSError:
        return None
    errors = [line for line in lines if EVENT_MARKER.strip() in line and " event=error " in line]
    if errors:
        return errors[-1].split(" message=", 1)[-1]
    others = [line for line in lines if EVENT_MARKER.strip() not in line]
    return others[-1][:500] if others else None


def launch_rank(config: LaunchConfig, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Run this rank (attempt 1, and attempt 2 after the interruption) and return what happened."""
    problems = config.problems()
    if problems:
        raise GoodputLaunchError("; ".join(problems), field="training_goodput", value=config.host)
    if not os.path.isfile(config.script):
        raise GoodputLaunchError("workload script not found on %s (copy roles/certify/files/goodput_train.py there first)" % config.host,
                                 field="script", value=config.script)
    try:
        os.makedirs(config.checkpoint_dir, exist_ok=True)
        if config.clean:
            _clean(config)
    except OSError as err:
        raise GoodputLaunchError("cannot prepare the work directory on %s: %s" % (config.host, err.strerror or err),
                                 field="workdir", value=config.workdir) from None
    run_env = dict(os.environ if env is None else env)
    run_env.update(RANK=str(config.rank), WORLD_SIZE=str(config.world_size), MASTER_ADDR=config.master_addr,
                   PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(config.threads))
    started = time.monotonic()
    deadline = started + config.timeout_s
    attempts: List[Dict[str, Any]] = []
    timed_out = False
    for attempt in (1, 2):
        run_env["MASTER_PORT"] = str(config.master_port + attempt - 1)
        began = time.monotonic()
        with open(config.output_path, "ab") as out:
            try:
                proc = subprocess.Popen(config.argv(attempt), stdout=out, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                                        stdin=subprocess.DEVNULL, cwd=config.workdir, env=run_env, start_new_session=True)
            except OSError as err:
                raise GoodputLaunchError("cannot start the workload on %s: %s" % (config.host, err.strerror or err),
                                         field="python", value=config.python) from None
            try:
                rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                rc = proc.returncode
                timed_out = True
        attempts.append({"attempt": attempt, "rc": rc, "seconds": round(time.monotonic() - began, 3),
                         "port": config.master_port + attempt - 1})
        if timed_out or rc != EXIT_INTERRUPTED or attempt == 2:
            break
        if config.restart_delay_s:
            time.sleep(config.restart_delay_s)
    log = ""
    try:
        with open(config.log_path, "rb") as handle:
            log = handle.read(config.max_log_bytes).decode("utf-8", errors="replace")
    except OSError:
        pass
    reason = None
    if timed_out:
        reason = "rank %d on %s killed at its timeout of %s s (attempt %d)" % (config.rank, config.host, config.timeout_s, len(attempts))
    elif attempts[-1]["rc"] != 0:
        reason = "rank %d on %s: workload exited with status %s: %s" % (
            config.rank, config.host, attempts[-1]["rc"], failure_reason(config.output_path) or "no output")
    return {
        "host": config.host, "rank": config.rank, "world_size": config.world_size, "log": log, "log_path": config.log_path,
        "output_path": config.output_path, "checkpoint_dir": config.checkpoint_dir, "attempt_results": attempts,
        "timed_out": timed_out, "timeout_s": config.timeout_s, "workload_failed": reason is not None, "reason": reason,
        "elapsed_s": round(time.monotonic() - started, 3), "steps": config.steps,
        "interrupt_after": config.effective_interrupt_after(),
    }
