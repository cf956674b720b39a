# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Entry points of the Certify modules that run on every GPU host, one :class:`EntryPoint` per module.

AnsiballZ ships and imports this file on each host once per task, so it imports only the host-side certify files
(the local nccl-tests run and its parser, the goodput launcher and statistics) and ``common``: never the Kubernetes
client or the controller-side certification code (see ``tests/unit/test_architecture.py``). The controller-side
modules are in :mod:`.entry`.

* :data:`NCCL_TEST`: one nccl-tests run on this host.
* :data:`TRAINING_GOODPUT`: run one rank of the goodput workload, or evaluate the ranks' logs.
"""
from __future__ import annotations

import socket
import sys
from typing import Any, Dict, Mapping

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_inputs import log_entries
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_launcher import GoodputLaunchError, LaunchConfig, launch_rank
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_stats import evaluate_logs
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_local_test import local_launch, run_local_test
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import canonical_collective
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_runner import binary_path
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint


def _host() -> str:
    """This host's name, as the results and messages show it."""
    return socket.gethostname() or "localhost"


# ---------------------------------------------------------------------------- nccl_test
NCCL_TEST_SPEC: Dict[str, Any] = dict(
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
)


def run_nccl_test(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """The ``nccl_test`` module: one nccl-tests run on this host; ``fail_on_error`` turns a bad run into a failure."""
    del diff
    host = _host()
    launch = local_launch(params["binary_dir"], params["collective"], params["gpus"], params["timeout_s"],
                          min_bytes=params["min_bytes"], max_bytes=params["max_bytes"], step_factor=params["step_factor"],
                          iters=params["iters"], warmup=params["warmup"], check=params["check"], env=params["env"],
                          extra_args=params["extra_args"], mpirun=params["mpirun"])
    command = launch.to_command()
    binary = binary_path(params["binary_dir"], params["collective"])
    collective = canonical_collective(params["collective"])
    base = dict(changed=False, host=host, collective=collective, ranks=params["gpus"], command=command.argv)
    if check_mode:
        return dict(base, ok=None, reasons=[])
    outcome = run_local_test(command, binary, collective, host, params["gpus"], params["timeout_s"],
                             large_message_bytes=params["large_message_bytes"],
                             ignore_warn_patterns=params["ignore_warn_patterns"], log_tail_chars=params["log_tail_chars"])
    if outcome.pop("did_not_run", False):
        result = dict(base, ok=False, reasons=outcome["reasons"])
        if params["fail_on_error"]:
            result.update(failed=True, msg="nccl-tests %s on %s did not run: %s" % (collective, host, outcome["reasons"][0]))
        return result
    result = dict(base)
    result.update(outcome)
    if params["fail_on_error"] and not result["ok"]:
        result.update(failed=True, msg="nccl-tests %s on %s failed: %s" % (collective, host, "; ".join(result["reasons"])))
    return result


NCCL_TEST = EntryPoint(name="nccl_test", doing="running nccl-tests on this host", spec=NCCL_TEST_SPEC, run=run_nccl_test)


# ---------------------------------------------------------------------------- training_goodput
TRAINING_GOODPUT_SPEC: Dict[str, Any] = dict(
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
)
_LAUNCH_OPTIONS = ("script", "rank", "world_size", "master_addr", "workdir", "master_port", "ifname", "steps", "batch_size",
                   "hidden", "layers", "checkpoint_every", "interrupt_after", "restart_delay_s", "comm_timeout_s", "timeout_s",
                   "threads", "extra_args", "clean", "max_log_bytes")


def _goodput_run(params: Mapping[str, Any], check_mode: bool) -> Dict[str, Any]:
    """Run this host's rank (both attempts); a workload failure is a result unless ``fail_on: fail``."""
    config = LaunchConfig(python=params["python"] or sys.executable, host=params["host"] or _host(),
                          **{name: params[name] for name in _LAUNCH_OPTIONS})
    problems = config.problems()
    if problems:
        raise GoodputLaunchError("; ".join(problems))
    if check_mode:
        return dict(changed=True, mode="run", msg="check mode: would run rank %d of %d" % (config.rank, config.world_size),
                    host=config.host, rank=config.rank, log="", attempt_results=[], timed_out=False, workload_failed=False,
                    reason=None)
    result = launch_rank(config)
    result.update(changed=True, mode="run")
    if result["reason"] and params["fail_on"] == "fail":
        result.update(failed=True, msg=result["reason"])
    return result


def _goodput_evaluate(params: Mapping[str, Any]) -> Dict[str, Any]:
    """Goodput of the job from every rank's log (``runs``, ``logs``, ``expected_hosts``)."""
    entries, run_steps = log_entries(params["runs"], params["logs"], params["expected_hosts"])
    expected_steps = params["expected_steps"]
    if expected_steps is None and params["profile"] == "dsxos":
        expected_steps = run_steps
    result = evaluate_logs(entries, profile=params["profile"], world_size=params["world_size"],
                           expected_steps=expected_steps, min_goodput=params["min_goodput"])
    result["warnings_found"] = result.pop("warnings")
    result.update(changed=False, mode="evaluate")
    if params["fail_on"] == "fail" and not result["passed"]:
        result.update(failed=True, msg="training goodput failed: %s" % "; ".join(result["reasons"][:5]))
    return result


def run_training_goodput(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """The ``training_goodput`` module: ``mode: run`` (one rank, on each host) or ``mode: evaluate`` (once)."""
    del diff
    if params["mode"] == "evaluate":
        return _goodput_evaluate(params)
    return _goodput_run(params, check_mode)


TRAINING_GOODPUT = EntryPoint(name="training_goodput", doing="measuring training goodput", spec=TRAINING_GOODPUT_SPEC,
                              run=run_training_goodput,
                              module_options={"required_if": [("mode", "run", ("script", "rank", "world_size", "master_addr",
                                                                               "workdir"))]})
