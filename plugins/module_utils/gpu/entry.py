# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Entry point of the GPU health module, which runs on every GPU host.

AnsiballZ ships and imports this file on each host once per task, so it imports only ``gpu`` and ``common``
(see ``tests/unit/test_architecture.py``).

* :data:`GPU_HEALTH`: NVML readings (live or recorded), XIDs from the kernel log and DCGM diagnostics judged against a
  health policy.
"""
from __future__ import annotations

import socket
from typing import Any, Dict, Mapping

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.dcgm_run import dcgm_report
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.errors import GpuError
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.health_checks import STATUS_RANK, evaluate, validate_policy
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.kernel_log import (
    DEFAULT_SINCE, SOURCES, attach_to_reading, parse_since, read_kernel_log,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_reader import import_pynvml, read_gpus
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_recording import RecordedNvml


def _host() -> str:
    """This host's name, as the results and messages show it."""
    return socket.gethostname() or "localhost"


# ---------------------------------------------------------------------------- gpu_health
GPU_HEALTH_SPEC: Dict[str, Any] = dict(
    expected_gpu_count=dict(type="int"),
    xid_window_s=dict(type="float", default=5.0),
    thresholds=dict(type="dict", default={}),
    recorded_readings=dict(type="path"),
    return_readings=dict(type="bool", default=False),
    dcgm_level=dict(type="int", default=0, choices=[0, 1, 2, 3, 4]),
    dcgm_timeout_s=dict(type="int"),
    dcgmi_path=dict(type="path"),
    dcgm_recorded_output=dict(type="path"),
    fail_on=dict(type="str", default="never", choices=["never", "warn", "fail"]),
    kernel_log=dict(type="str", default="auto", choices=list(SOURCES)),
    kernel_log_since=dict(type="str", default=DEFAULT_SINCE),
    kernel_log_file=dict(type="path"),
)
_FAIL_RANK = {"never": 99, "warn": 1, "fail": 2}


def run_gpu_health(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """The ``gpu_health`` module: read the GPUs (NVML, or ``recorded_readings``), optionally run DCGM, judge."""
    del check_mode, diff  # read-only: check mode reads and judges just the same
    if params["dcgm_recorded_output"] and not params["dcgm_level"]:
        raise GpuError("dcgm_recorded_output needs dcgm_level 1-4 (the level the output was produced with)")
    if params["xid_window_s"] < 0:
        raise GpuError("xid_window_s must not be negative (got %s)" % params["xid_window_s"])
    policy = validate_policy(params["thresholds"])
    if params["recorded_readings"]:
        nvml: Any = RecordedNvml.from_file(params["recorded_readings"])
        host = nvml.recording.get("host") or _host()
    else:
        nvml = import_pynvml()
        host = _host()
    since = parse_since(params["kernel_log_since"])
    readings = read_gpus(nvml, host=host, xid_window_s=params["xid_window_s"])
    source = params["kernel_log"]
    if params["recorded_readings"] and not params["kernel_log_file"] and source == "auto":
        source = "off"  # offline triage: this host's kernel log is not the recorded host's
    if source != "off" or params["kernel_log_file"]:
        attach_to_reading(readings, read_kernel_log(source, since=since, log_file=params["kernel_log_file"]))
    level = params["dcgm_level"]
    report = None
    if level:
        report = dcgm_report(level, _host(), dcgmi_path=params["dcgmi_path"], timeout_s=params["dcgm_timeout_s"],
                             recorded_output=params["dcgm_recorded_output"])
    result = evaluate(readings, params["expected_gpu_count"], policy, dcgm=report, dcgm_level=level or None)
    result["dcgm"] = report
    if params["return_readings"]:
        result["readings"] = readings
    result["changed"] = False
    log = readings.get("kernel_log") or {}
    if log.get("status") == "unavailable":
        result["warnings"] = [str(log.get("message"))]
    if STATUS_RANK[result["verdict"]] >= _FAIL_RANK[params["fail_on"]]:
        result.update(failed=True, msg="GPU health %s on %s: %s" % (result["verdict"], result["host"],
                                                                    "; ".join(result["reasons"][:5])))
    return result


GPU_HEALTH = EntryPoint(name="gpu_health", doing="checking GPU health", spec=GPU_HEALTH_SPEC, run=run_gpu_health)
