# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""DCGM active diagnostics: the ``dcgmi diag -r <level> -j`` command and its JSON output.

Two JSON shapes are understood:

* DCGM 3.x (``dcgmi/Diag.cpp``): ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests":
  [{"name", "results": [...]}]}]}, "version", "Driver Version Detected", "GPU Device IDs",
  "GPU Device Serials": {"0": serial}}`` - the version and driver at the top level, not in the
  diagnostic object.  Categories ``Deployment``, ``Integration``, ``Hardware``, ``Stress``; test names
  are display names (``Denylist`` ... ``Inforom``, ``PCIe``, ``GPU Memory``, ``Diagnostic``,
  ``Targeted Stress``, ``Targeted Power``, ``Memory Bandwidth``, ``Memtest``, ``Pulse Test``, ``EUD Test``).
  A Deployment test has one result ``{"status"}``, plus ``"gpu_id": <int>`` and ``"warnings":
  [{"warnings": msg, "error_id", "error_category", "error_severity"}]`` when it reports an error (the
  message key really is ``warnings`` there); a per-GPU result is ``{"gpu_id": "3", "status",
  "warnings": [{"warning", "error_id", "error_category", "error_severity"}], "info": "text"}``.
  NVVS's own JSON and older releases write ``"gpu_ids": "0,1,..."``, upper-case statuses, bare strings in
  ``warnings`` and ``null`` entries in ``tests``; all are accepted.
* DCGM 4.x: ``{"DCGM Diagnostic": {"test_categories": [... "results": [{"entity_group",
  "entity_group_id", "entity_id", "status", "warnings": [{"warning", "error_id",
  "error_category", "error_severity"}], "info": [...]}], "test_summary": {...}}]},
  "entity_groups": [{"entity_group", "entity_group_id", "entities": [{"entity_id", "serial_num",
  "device_id"}]}], "metadata": {"version", "Driver Version Detected"}}``; test names are plugin names
  (``software``, ``pcie``, ``memory``, ``diagnostic``, ``targeted_stress``, ...).
* Both write only ``Pass``, ``Fail`` and ``Skip`` (a DCGM warning result is written as ``Fail``);
  ``runtime_error`` (with ``version``) inside the diagnostic object reports a diagnostic that did not run.

:func:`parse_dcgm_diag` turns either into per-test results ``{test, category, status
(pass|fail|warn|skip), gpu_ids, failed_gpu_ids, warned_gpu_ids, error_codes, messages, info, entities}``;
:func:`diag_checks` turns a parsed report into health checks (same shape as
:mod:`health_checks`' checks) with actions from :mod:`fault_catalog`.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_catalog import lookup_dcgm_error, strongest_action
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.errors import GpuError

DIAG_LEVELS = (1, 2, 3, 4)
#: Generous wall-clock limits per level (level 3 takes tens of minutes, level 4 hours on 8 GPUs).
DEFAULT_TIMEOUT_S = {1: 300, 2: 1200, 3: 3600, 4: 10800}
#: Seconds coreutils ``timeout`` waits after its SIGTERM before it SIGKILLs the diagnostic (``--kill-after``).
KILL_AFTER_S = 30
STATUS_RANK = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}
_STATUS_WORDS = {
    "pass": "pass", "passed": "pass", "ok": "pass",
    "fail": "fail", "failed": "fail", "error": "fail",
    "warn": "warn", "warning": "warn",
    "skip": "skip", "skipped": "skip", "not run": "skip", "notrun": "skip", "": "skip", "n/a": "skip",
}
_GPU_GROUP_ID = 1  # DCGM_FE_GPU


class DcgmDiagError(GpuError):
    """Bad diagnostic request (level, GPU list) or unparsable ``dcgmi diag`` output."""


def validate_level(level: Any, field: str = "dcgm_level") -> int:
    """A DCGM diagnostic level 1-4 (``run`` levels of ``dcgmi diag -r``)."""
    if isinstance(level, bool) or not isinstance(level, int) or level not in DIAG_LEVELS:
        raise DcgmDiagError("DCGM diagnostic level must be one of 1, 2, 3, 4", field=field, value=level)
    return level


def build_dcgmi_diag_command(level: Any, dcgmi: str = "dcgmi", gpu_ids: Optional[Sequence[int]] = None,
                             timeout_s: Optional[int] = None, timeout_bin: str = "timeout") -> List[str]:
    """argv for ``dcgmi diag -r <level> -j [-i ids]``, optionally under coreutils ``timeout``.

    Run by :func:`dcgm_run.run_argv` (a list, never a shell string); ``timeout`` sends SIGKILL
    :data:`KILL_AFTER_S` seconds after its SIGTERM.
    """
    validate_level(level)
    argv = [dcgmi, "diag", "-r", str(level), "-j"]
    if gpu_ids:
        ids = list(gpu_ids)
        for gpu in ids:
            if isinstance(gpu, bool) or not isinstance(gpu, int) or gpu < 0:
                raise DcgmDiagError("GPU ids must be non-negative integers", field="gpu_ids", value=gpu)
        argv += ["-i", ",".join(str(gpu) for gpu in ids)]
    if timeout_s is not None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int) or timeout_s <= 0:
            raise DcgmDiagError("the DCGM diagnostic timeout must be a positive number of seconds", field="dcgm_timeout_s",
                                value=timeout_s)
        argv = [timeout_bin, "--kill-after=%d" % KILL_AFTER_S, "%ds" % timeout_s] + argv
    return argv


def _load(output: Any, source: str) -> Dict[str, Any]:
    if isinstance(output, dict):
        return output
    if isinstance(output, bytes):
        output = output.decode("utf-8", "replace")
    if not isinstance(output, str):
        raise DcgmDiagError("dcgmi diag output must be text or a mapping", file=source, value=type(output).__name__)
    start = output.find("{")
    end = output.rfind("}")
    if start < 0 or end < start:
        snippet = output.strip()[:200]
        raise DcgmDiagError("dcgmi diag printed no JSON document", file=source, value=snippet or "(empty output)")
    try:
        data = json.loads(output[start:end + 1])
    except ValueError as exc:
        raise DcgmDiagError("dcgmi diag output is not valid JSON: %s" % exc, file=source,
                            line=output[:start].count("\n") + getattr(exc, "lineno", 1)) from exc
    if not isinstance(data, dict):
        raise DcgmDiagError("dcgmi diag JSON must be an object", file=source, value=type(data).__name__)
    return data


def normalize_status(raw: Any) -> str:
    """``Pass``/``PASS``/``Skip``/``Not Run``/... -> pass | fail | warn | skip (unknown words -> warn)."""
    word = " ".join(str(raw if raw is not None else "").strip().lower().split())
    return _STATUS_WORDS.get(word, "warn")


def _gpu_ids(result: Dict[str, Any]) -> List[int]:
    ids: List[int] = []
    for key in ("gpu_ids", "gpu_id"):
        raw = result.get(key)
        if raw is None:
            continue
        if isinstance(raw, int) and not isinstance(raw, bool):
            ids.append(raw)
        elif isinstance(raw, str):
            ids.extend(int(part) for part in re.findall(r"\d+", raw))
        elif isinstance(raw, list):
            ids.extend(int(part) for part in raw if isinstance(part, int) and not isinstance(part, bool))
    group = result.get("entity_group")
    group_id = result.get("entity_group_id")
    entity_id = result.get("entity_id")
    if isinstance(entity_id, int) and (group == "GPU" or group_id == _GPU_GROUP_ID):
        ids.append(entity_id)
    return sorted(set(ids))


def _as_list(value: Any) -> List[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return [item for item in value if item is not None]
    return [value]


def _parse_result(result: Dict[str, Any]) -> Dict[str, Any]:
    errors: List[Dict[str, Any]] = []
    messages: List[str] = []
    for warning in _as_list(result.get("warnings")):
        if isinstance(warning, dict):
            # dcgmi 3.x writes a Deployment (level one) test's message under "warnings", per-GPU tests under "warning"
            text = warning.get("warning") if warning.get("warning") is not None else warning.get("warnings")
            message = str(text if text is not None else "").strip()
            code = warning.get("error_id")
            entry: Dict[str, Any] = {"message": message}
            if isinstance(code, int) and not isinstance(code, bool):
                fault = lookup_dcgm_error(code)
                entry.update({"code": code, "name": fault.mnemonic})
            if "error_severity" in warning:
                entry["reported_severity"] = warning.get("error_severity")
            if "error_category" in warning:
                entry["reported_category"] = warning.get("error_category")
            errors.append(entry)
            if message:
                messages.append(message)
        else:
            messages.append(str(warning).strip())
    info = [str(item).strip() for item in _as_list(result.get("info")) if str(item).strip()]
    entity = None
    if "entity_group" in result or "entity_group_id" in result:
        entity = {"group": result.get("entity_group"), "group_id": result.get("entity_group_id"), "id": result.get("entity_id")}
    return {
        "status": normalize_status(result.get("status")),
        "raw_status": result.get("status"),
        "gpu_ids": _gpu_ids(result),
        "entity": entity,
        "errors": errors,
        "error_codes": sorted({e["code"] for e in errors if "code" in e}),
        "messages": messages,
        "info": info,
    }


def _worst(statuses: Sequence[str]) -> str:
    return max(statuses, key=lambda s: STATUS_RANK.get(s, 0)) if statuses else "skip"


def _parse_test(category: str, test: Dict[str, Any]) -> Dict[str, Any]:
    entities = [_parse_result(r) for r in _as_list(test.get("results")) if isinstance(r, dict)]
    summary = test.get("test_summary") if isinstance(test.get("test_summary"), dict) else None
    summary_parsed = _parse_result(summary) if summary else None
    statuses = [e["status"] for e in entities]
    if summary_parsed is not None:
        statuses.append(summary_parsed["status"])
    everything = entities + ([summary_parsed] if summary_parsed else [])
    messages: List[str] = []
    info: List[str] = []
    for item in everything:
        for message in item["messages"]:
            if message not in messages:
                messages.append(message)
        for line in item["info"]:
            if line not in info:
                info.append(line)
    return {
        "test": str(test.get("name", "")),
        "category": category,
        "status": _worst(statuses),
        "gpu_ids": sorted({gpu for e in entities for gpu in e["gpu_ids"]}),
        "failed_gpu_ids": sorted({gpu for e in entities if e["status"] == "fail" for gpu in e["gpu_ids"]}),
        "warned_gpu_ids": sorted({gpu for e in entities if e["status"] == "warn" for gpu in e["gpu_ids"]}),
        "error_codes": sorted({code for item in everything for code in item["error_codes"]}),
        "messages": messages,
        "info": info,
        "entities": entities,
        "summary": summary_parsed,
    }


def parse_dcgm_diag(output: Any, source: str = "dcgmi diag -j") -> Dict[str, Any]:
    """Parse ``dcgmi diag -j`` output (text, possibly with noise around the JSON, or a decoded mapping)."""
    data = _load(output, source)
    if isinstance(data.get("DCGM Diagnostic"), dict):
        fmt, root = "dcgm4", data["DCGM Diagnostic"]
    elif isinstance(data.get("DCGM GPU Diagnostic"), dict):
        fmt, root = "dcgm3", data["DCGM GPU Diagnostic"]
    else:
        raise DcgmDiagError("not a dcgmi diag document (no 'DCGM Diagnostic' or 'DCGM GPU Diagnostic' object)",
                            file=source, field="(top level)", value=sorted(data)[:6])
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    version = metadata.get("version") or root.get("version") or data.get("version")
    driver = (metadata.get("Driver Version Detected") or root.get("Driver Version Detected")
              or data.get("Driver Version Detected"))
    runtime_error = root.get("runtime_error") or data.get("runtime_error")
    categories = root.get("test_categories")
    if categories is not None and not isinstance(categories, list):
        raise DcgmDiagError("test_categories must be a list", file=source, field="test_categories", value=type(categories).__name__)
    tests: List[Dict[str, Any]] = []
    for cat_pos, category in enumerate(categories or []):
        if category is None:
            continue
        if not isinstance(category, dict):
            raise DcgmDiagError("a test category must be an object", file=source, field="test_categories[%d]" % cat_pos,
                                value=category)
        name = str(category.get("category", ""))
        for test in _as_list(category.get("tests")):
            if isinstance(test, dict):
                tests.append(_parse_test(name, test))
    serials: Dict[str, str] = {}
    for group in _as_list(data.get("entity_groups")):
        if isinstance(group, dict) and (group.get("entity_group") == "GPU" or group.get("entity_group_id") == _GPU_GROUP_ID):
            for entity in _as_list(group.get("entities")):
                if isinstance(entity, dict) and entity.get("serial_num"):
                    serials[str(entity.get("entity_id"))] = str(entity["serial_num"])
    legacy_serials = root.get("GPU Device Serials") or data.get("GPU Device Serials")
    if isinstance(legacy_serials, dict):
        serials.update({str(k): str(v) for k, v in legacy_serials.items()})
    counts = {status: sum(1 for t in tests if t["status"] == status) for status in STATUS_RANK}
    if runtime_error:
        status = "error"
    elif not tests:
        status = "error"
        runtime_error = "dcgmi diag reported no test results"
    else:
        status = _worst([t["status"] for t in tests])
    return {"format": fmt, "version": version, "driver_version": driver, "status": status,
            "runtime_error": runtime_error, "tests": tests, "counts": counts, "gpu_serials": serials}


def error_report(message: str, version: Optional[str] = None) -> Dict[str, Any]:
    """A report for a diagnostic that could not run or whose output could not be read."""
    return {"format": None, "version": version, "driver_version": None, "status": "error", "runtime_error": message,
            "tests": [], "counts": {status: 0 for status in STATUS_RANK}, "gpu_serials": {}}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "test"


def diag_checks(report: Dict[str, Any], level: Optional[int] = None) -> List[Dict[str, Any]]:
    """Health checks (status ok|warn|fail, reason, action) from a parsed DCGM report."""
    label = "DCGM diagnostic" + (" level %d" % level if level else "")
    if report.get("status") == "error":
        return [{"check": "dcgm_diag", "scope": "host", "gpu_index": None, "status": "fail",
                 "reason": "%s did not complete: %s" % (label, report.get("runtime_error")),
                 "action": "contact_support",
                 "hint": "Check that nv-hostengine (or the DCGM service) runs and that no workload holds the GPUs; rerun dcgmi diag."}]
    checks: List[Dict[str, Any]] = []
    for test in report.get("tests", []):
        if test["status"] not in ("fail", "warn"):
            continue
        faults = [lookup_dcgm_error(code) for code in test["error_codes"]]
        action = strongest_action(f.action for f in faults)
        if action == "none" and test["status"] == "fail":
            action = "contact_support"  # DCGM failed the test; without a known code nobody can say more
        gpus = (test["failed_gpu_ids"] if test["status"] == "fail" else test["warned_gpu_ids"]) or test["gpu_ids"]
        where = " on GPU %s" % ",".join(str(g) for g in gpus) if gpus else ""
        detail = "; ".join(test["messages"][:3])
        checks.append({
            "check": "dcgm_%s" % _slug(test["test"]),
            "scope": "gpu" if len(gpus) == 1 else "host",
            "gpu_index": gpus[0] if len(gpus) == 1 else None,
            "gpu_ids": gpus,
            "status": test["status"],
            "reason": "%s %s/%s %s%s%s" % (label, test["category"], test["test"],
                                           "failed" if test["status"] == "fail" else "warned", where,
                                           (": " + detail) if detail else ""),
            "action": action,
            "hint": "; ".join(sorted({f.name for f in faults})) or "See the DCGM messages.",
            "faults": [f.to_dict() for f in faults],
        })
    if not checks:
        counts = report.get("counts", {})
        checks.append({"check": "dcgm_diag", "scope": "host", "gpu_index": None, "status": "ok",
                       "reason": "%s passed (%d passed, %d skipped)" % (label, counts.get("pass", 0), counts.get("skip", 0)),
                       "action": "none", "hint": ""})
    return checks
