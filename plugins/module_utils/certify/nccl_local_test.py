# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One nccl-tests run on this host (``nccl_test``): build the launch, run it, judge the output.

:func:`local_launch` turns the module's options into a :class:`nccl_runner.LocalLaunch` (one process over all GPUs,
or one rank per GPU under a local ``mpirun``); :func:`run_local_test` runs it with :func:`nccl_runner.run_one`,
parses the output with :func:`nccl_results.parse_nccl_output` and adds why the run itself failed (timeout, exit
status, could not start) to the reasons.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_result_model import DEFAULT_LARGE_MESSAGE_BYTES
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import parse_nccl_output
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_runner import (
    LocalLaunch, NcclRunnerError, NcclTestArgs, run_one,
)


def local_launch(binary_dir: str, collective: str, gpus: Any, timeout_s: Any, min_bytes: str = "1M", max_bytes: str = "8G",
                 step_factor: int = 2, iters: int = 20, warmup: int = 5, check: bool = True,
                 env: Optional[Mapping[str, str]] = None, extra_args: Sequence[str] = (),
                 mpirun: Optional[Mapping[str, Any]] = None) -> LocalLaunch:
    """The launch of one test on this host; bad values raise :class:`NcclRunnerError` naming the option."""
    mpi = mpirun or {}
    use_mpi = bool(mpi.get("enabled"))
    if gpus is None or gpus < 1:
        raise NcclRunnerError("must be an integer >= 1", file="nccl_test", field="gpus", value=gpus)
    if timeout_s < 1:
        raise NcclRunnerError("must be >= 1 second", file="nccl_test", field="timeout_s", value=timeout_s)
    test_args = NcclTestArgs(min_bytes=min_bytes, max_bytes=max_bytes, step_factor=step_factor, gpus=1 if use_mpi else gpus,
                             iters=iters, warmup=warmup, check=1 if check else 0, extra=list(extra_args))
    return LocalLaunch(binary_dir=binary_dir, collective=collective, args=test_args, processes=gpus if use_mpi else 1,
                       env=dict(env or {}), mpirun=mpi.get("path") or "mpirun", mpirun_args=list(mpi.get("args") or []),
                       allow_run_as_root=bool(mpi.get("allow_run_as_root")), timeout_s=timeout_s)


def tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text`` (nothing for ``limit <= 0``)."""
    if limit <= 0:
        return ""
    return text[-limit:]


def run_local_test(command: Any, binary: str, collective: str, host: str, ranks: int, timeout_s: int,
                   large_message_bytes: Optional[int] = None, ignore_warn_patterns: Sequence[str] = (),
                   log_tail_chars: int = 4000) -> Dict[str, Any]:
    """Run ``command`` (the rendered launch) and return ``ok``, ``reasons``, ``busbw``, ``result``, ``log_tail``...

    A missing binary is a result (``ok: False`` with the reason), not an exception.
    """
    if not os.access(binary, os.X_OK):
        return {"ok": False, "reasons": ["nccl-tests binary not found or not executable on %s: %s" % (host, binary)],
                "did_not_run": True}
    output = run_one(command)
    text = output.stdout
    if output.stderr:
        text = text + ("\n" if text and not text.endswith("\n") else "") + output.stderr
    large = large_message_bytes if large_message_bytes is not None else DEFAULT_LARGE_MESSAGE_BYTES
    parsed = parse_nccl_output(text, collective=collective, source="nccl_test %s on %s" % (collective, host),
                               large_message_bytes=large, ignore_warn_patterns=list(ignore_warn_patterns))
    reasons = list(parsed.reasons)
    if output.timed_out:
        reasons.insert(0, "timed out after %d s" % timeout_s)
    elif output.error:
        reasons.insert(0, output.error)
    elif output.rc != 0:
        reasons.insert(0, "test exited with status %d" % output.rc)
    ok = parsed.ok and output.ok and not reasons
    parsed.ok = ok
    parsed.reasons = reasons
    return {"ok": ok, "reasons": reasons, "busbw": parsed.large_message_busbw, "ranks": parsed.ranks or ranks,
            "exit_status": output.rc, "timed_out": output.timed_out, "duration_s": round(output.duration_s, 3),
            "result": parsed.to_dict(), "log_tail": tail(text, log_tail_chars)}
