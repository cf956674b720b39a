# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The certification report document: input validation, totals, the result, and the compact summary.

The document is rendered by :mod:`report_render` (JSON, JUnit XML, Markdown) and :mod:`report_html`, and stored
by :mod:`report_storage` (files, ConfigMap).

Input (what the certify role assembles; every key is optional unless marked *required*)::

    platform:   {name, service, kubernetes_version}                  strings (numbers are turned into strings)
    gpu:        {product: str, count_per_node: int >= 0, driver_version, cuda_version, nccl_version, nccl_tests_version: str}
    started:    ISO 8601 date-time (2026-03-01T10:00:00Z)            finished: same, not before ``started``
    durations:  {total_s: number >= 0 (default finished - started), per_category: {category: seconds},
                 ansible_overhead_s: number >= 0}
    nodes:      {node name: {verdict: passed|failed|excluded, reasons: [str] | str,
                             categories: {category: {status: passed|failed|excluded|skipped,
                                                     reason: str, value: number, unit: str, duration_s: number}}}}
    categories: {category: {bandwidth_by_size: {message bytes (int, "1048576" or "1M"): busbw GB/s},
                            per_node: {node: busbw GB/s},
                            threshold: {floor, relative_fraction (0..1], median, mad_z, limit: numbers; unit: str}}}
                (one median and one limit per category, computed here: median as given, else the median of per_node;
                limit as given, else max(floor, relative_fraction x median); every renderer shows these two)
    failed_groups: [{id, nodes: [str], reason}]
    isolation:  {rounds: int, tests: int, trace: [event mappings], ...}   (IsolationPlanner.summary() fits as is)
    link_faults: [{domains: [a, b], nodes: [..], evidence: [..], status: faulty|suspect, message} | str]

Tolerance: the planner's words are accepted as verdicts (healthy = passed, faulty = failed, inconclusive =
excluded); ``pass``/``ok``/``fail`` likewise for statuses. A node without ``verdict`` gets the worst status of
its categories, and a node whose category failed is failed whatever its ``verdict`` says. A failed or excluded node
without reasons gets the reasons of its failed or excluded categories. Unknown keys are ignored and listed in the
report's ``warnings``. Wrong types, unknown statuses, negative or non-finite numbers and unparsable dates raise
:class:`CertifyReportError`, whose message names the field (``nodes.gpu-3.categories.nccl.status``) and the value.

Result: ``FAILED`` when a node failed or a link fault is confirmed (status ``faulty``, the default); else
``INCOMPLETE`` when a node is excluded, a link fault is only ``suspect`` or no node was certified at all; else
``PASSED``. The report embeds no generation time: the same input renders byte-identical files.

Entry points: :func:`build_report`, :func:`summarize`. The JSON layout is documented field by field in
docs/certify-report.md and as a JSON Schema in docs/schemas/certify-report.schema.json.
"""
from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import natural_key

SCHEMA_ID = "dsxos.cluster/certify-report/v1"
PASSED, INCOMPLETE, FAILED = "PASSED", "INCOMPLETE", "FAILED"
NODE_VERDICTS = ("passed", "failed", "excluded")
CATEGORY_STATUSES = ("passed", "failed", "excluded", "skipped")
MAX_REASON_CHARS = 2000
LINK_STATUSES = ("faulty", "suspect")
_SYNONYMS = {
    "pass": "passed", "ok": "passed", "healthy": "passed", "success": "passed",
    "fail": "failed", "faulty": "failed", "error": "failed",
    "inconclusive": "excluded", "unreachable": "excluded",
    "skip": "skipped",
}
_SEVERITY = {"passed": 0, "skipped": 0, "excluded": 1, "failed": 2}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_TOP_KEYS = ("platform", "gpu", "started", "finished", "durations", "nodes", "categories", "failed_groups",
             "isolation", "link_faults")
_NODE_KEYS = ("verdict", "reasons", "reason", "categories")
_NODE_CATEGORY_KEYS = ("status", "reason", "value", "unit", "duration_s")
_CATEGORY_KEYS = ("bandwidth_by_size", "per_node", "threshold")
_THRESHOLD_NUMBERS = ("floor", "relative_fraction", "median", "mad_z", "limit")
GPU_KEYS = ("product", "count_per_node", "driver_version", "cuda_version", "nccl_version", "nccl_tests_version")


class CertifyReportError(CertifyError):
    """The report input (or a module option) is malformed; ``field`` is the dotted key, ``value`` the bad value."""


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CertifyReportError("must be a mapping, got %s" % type(value).__name__, field=field, value=_short(value))
    return value


def _short(value: Any) -> Any:
    text = repr(value)
    return value if len(text) <= 200 else text[:200] + "..."


def _text(value: Any, field: str, default: Optional[str] = None, limit: int = MAX_REASON_CHARS) -> Optional[str]:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise CertifyReportError("must be a string, got %s" % type(value).__name__, field=field, value=_short(value))
    text = str(value)
    if len(text) > limit:
        text = text[:limit] + "... (%d characters cut)" % (len(text) - limit)
    return text


def _name(value: Any, field: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CertifyReportError("%s must be a non-empty string" % what, field=field, value=_short(value))
    if len(value) > 253:
        raise CertifyReportError("%s is longer than 253 characters" % what, field=field, value=_short(value))
    return value


def _number(value: Any, field: str, minimum: Optional[float] = 0.0, optional: bool = True) -> Optional[float]:
    if value is None and optional:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise CertifyReportError("must be a number", field=field, value=_short(value)) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CertifyReportError("must be a number, got %s" % type(value).__name__, field=field, value=_short(value))
    number = float(value)
    if not math.isfinite(number):
        raise CertifyReportError("must be a finite number", field=field, value=value)
    if minimum is not None and number < minimum:
        raise CertifyReportError("must be >= %g" % minimum, field=field, value=value)
    return round(number, 6)


def _count(value: Any, field: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) and not (isinstance(value, str) and value.strip().isdigit()):
        raise CertifyReportError("must be a non-negative integer", field=field, value=_short(value))
    number = int(value)
    if number < 0:
        raise CertifyReportError("must be a non-negative integer", field=field, value=value)
    return number


def _status(value: Any, field: str, allowed: Sequence[str]) -> str:
    if not isinstance(value, str):
        raise CertifyReportError("must be one of %s" % ", ".join(allowed), field=field, value=_short(value))
    word = value.strip().lower()
    word = _SYNONYMS.get(word, word)
    if word not in allowed:
        raise CertifyReportError("must be one of %s" % ", ".join(allowed), field=field, value=value)
    return word


def _timestamp(value: Any, field: str) -> Tuple[Optional[str], Optional[datetime]]:
    if value is None or value == "":
        return None, None
    if not isinstance(value, str):
        raise CertifyReportError("must be an ISO 8601 date-time string", field=field, value=_short(value))
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise CertifyReportError("is not an ISO 8601 date-time (e.g. 2026-03-01T10:00:00Z)", field=field, value=value) from None
    return value.strip(), parsed


def _message_size(key: Any, field: str) -> int:
    if isinstance(key, bool):
        raise CertifyReportError("message size must be a byte count", field=field, value=key)
    if isinstance(key, int):
        size = key
    elif isinstance(key, float) and key.is_integer():
        size = int(key)
    else:
        match = _SIZE_RE.match(str(key))
        if not match:
            raise CertifyReportError("message size must be a byte count such as 1048576 or 1M", field=field, value=_short(key))
        size = int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]
    if size <= 0:
        raise CertifyReportError("message size must be positive", field=field, value=key)
    return size


def _reasons(value: Any, field: str) -> List[str]:
    if value is None:
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise CertifyReportError("must be a list of strings", field=field, value=_short(value))
    out = []
    for index, item in enumerate(value):
        text = _text(item, "%s[%d]" % (field, index))
        if text and text not in out:
            out.append(text)
    return out


def _plain(value: Any, field: str) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise CertifyReportError("must be plain JSON data (%s)" % err, field=field, value=_short(value)) from None


def _unknown(data: Mapping[str, Any], allowed: Iterable[str], prefix: str, warnings: List[str]) -> None:
    for key in data:
        if key not in allowed:
            warnings.append("unknown key %s%s ignored" % (prefix, key))


def _worst(statuses: Iterable[str]) -> Optional[str]:
    worst: Optional[str] = None
    for status in statuses:
        if worst is None or _SEVERITY[status] > _SEVERITY[worst]:
            worst = status
    return worst


def _platform(raw: Any, warnings: List[str]) -> Dict[str, Optional[str]]:
    data = _mapping(raw, "platform")
    _unknown(data, ("name", "service", "kubernetes_version"), "platform.", warnings)
    return {key: _text(data.get(key), "platform.%s" % key, limit=200) for key in ("name", "service", "kubernetes_version")}


def _gpu(raw: Any, warnings: List[str]) -> Dict[str, Any]:
    data = _mapping(raw, "gpu")
    _unknown(data, GPU_KEYS, "gpu.", warnings)
    out: Dict[str, Any] = {"product": _text(data.get("product"), "gpu.product", limit=200),
                           "count_per_node": _count(data.get("count_per_node"), "gpu.count_per_node")}
    for key in GPU_KEYS[2:]:
        out[key] = _text(data.get(key), "gpu.%s" % key, limit=200)
    return out


def _node_category(raw: Any, field: str, warnings: List[str]) -> Dict[str, Any]:
    if isinstance(raw, str):
        raw = {"status": raw}
    data = _mapping(raw, field)
    _unknown(data, _NODE_CATEGORY_KEYS, field + ".", warnings)
    if "status" not in data:
        raise CertifyReportError("status is required (one of %s)" % ", ".join(CATEGORY_STATUSES), field=field + ".status")
    return {"status": _status(data.get("status"), field + ".status", CATEGORY_STATUSES),
            "reason": _text(data.get("reason"), field + ".reason", default=""),
            "value": _number(data.get("value"), field + ".value", minimum=None),
            "unit": _text(data.get("unit"), field + ".unit", limit=32),
            "duration_s": _number(data.get("duration_s"), field + ".duration_s")}


def _node(name: str, raw: Any, warnings: List[str]) -> Dict[str, Any]:
    field = "nodes.%s" % name
    data = _mapping(raw, field)
    _unknown(data, _NODE_KEYS, field + ".", warnings)
    categories: Dict[str, Dict[str, Any]] = {}
    for cat, entry in _mapping(data.get("categories"), field + ".categories").items():
        _name(cat, field + ".categories", "category name")
        categories[cat] = _node_category(entry, "%s.categories.%s" % (field, cat), warnings)
    given = None if data.get("verdict") is None else _status(data.get("verdict"), field + ".verdict", NODE_VERDICTS)
    derived = _worst(c["status"] for c in categories.values())
    candidates = [s for s in (given, derived) if s is not None]
    verdict = _worst(candidates) if candidates else None
    if verdict is None:
        raise CertifyReportError("has neither a verdict nor category results", field=field + ".verdict")
    if verdict == "skipped":
        verdict = "passed"
    reasons = _reasons(data.get("reasons"), field + ".reasons") + _reasons(data.get("reason"), field + ".reason")
    if verdict != "passed" and not reasons:
        reasons = ["%s: %s" % (cat, c["reason"] or c["status"]) for cat, c in categories.items() if c["status"] == verdict]
        if not reasons:
            reasons = ["%s without a recorded reason" % verdict]
    if given is not None and given != verdict:
        warnings.append("node %s: verdict %s overridden by its category results (%s)" % (name, given, verdict))
    return {"verdict": verdict, "reasons": reasons, "categories": categories}


def _median(values: Sequence[float]) -> Optional[float]:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return round(ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0, 6)


def _threshold(raw: Any, field: str, warnings: List[str], per_node: Mapping[str, float]) -> Dict[str, Any]:
    """The category's one pass line: ``median`` as given (the fleet median the run judged against), else the median of
    the per-node values; ``limit`` as given, else ``max(floor, relative_fraction x median)``. Every renderer shows these."""
    data = _mapping(raw, field)
    _unknown(data, _THRESHOLD_NUMBERS + ("unit",), field + ".", warnings)
    out: Dict[str, Any] = {key: _number(data.get(key), "%s.%s" % (field, key)) for key in _THRESHOLD_NUMBERS}
    if out["median"] is None:
        out["median"] = _median(list(per_node.values()))
    fraction = out["relative_fraction"]
    if fraction is not None and not 0 < fraction <= 1:
        raise CertifyReportError("must be in (0, 1]", field=field + ".relative_fraction", value=fraction)
    if out["limit"] is None:
        bounds = [b for b in (out["floor"], fraction * out["median"] if fraction is not None and out["median"] is not None else None)
                  if b is not None]
        out["limit"] = round(max(bounds), 6) if bounds else None
    out["unit"] = _text(data.get("unit"), field + ".unit", default="GB/s", limit=32)
    return out


def _category(name: str, raw: Any, warnings: List[str]) -> Dict[str, Any]:
    field = "categories.%s" % name
    data = _mapping(raw, field)
    _unknown(data, _CATEGORY_KEYS, field + ".", warnings)
    sizes: Dict[int, float] = {}
    for key, value in _mapping(data.get("bandwidth_by_size"), field + ".bandwidth_by_size").items():
        where = "%s.bandwidth_by_size.%s" % (field, key)
        size = _message_size(key, where)
        busbw = _number(value, where, optional=False)
        if size in sizes:
            raise CertifyReportError("message size given twice", field=where, value=key)
        sizes[size] = busbw  # type: ignore[assignment]
    per_node: Dict[str, float] = {}
    for node, value in _mapping(data.get("per_node"), field + ".per_node").items():
        _name(node, field + ".per_node", "node name")
        per_node[node] = _number(value, "%s.per_node.%s" % (field, node), optional=False)  # type: ignore[assignment]
    return {"bandwidth_by_size": [{"bytes": size, "busbw_gbps": sizes[size]} for size in sorted(sizes)],
            "per_node": {node: per_node[node] for node in sorted(per_node, key=natural_key)},
            "threshold": _threshold(data.get("threshold"), field + ".threshold", warnings, per_node)}


def _failed_groups(raw: Any) -> List[Dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise CertifyReportError("must be a list of {id, nodes, reason}", field="failed_groups", value=_short(raw))
    out = []
    for index, item in enumerate(raw):
        field = "failed_groups[%d]" % index
        data = _mapping(item, field)
        nodes = data.get("nodes") or []
        if not isinstance(nodes, (list, tuple)):
            raise CertifyReportError("must be a list of node names", field=field + ".nodes", value=_short(nodes))
        out.append({"id": _text(data.get("id"), field + ".id", default="group-%d" % (index + 1), limit=200),
                    "nodes": [_name(n, "%s.nodes[%d]" % (field, i), "node name") for i, n in enumerate(nodes)],
                    "reason": _text(data.get("reason"), field + ".reason", default="")})
    return out


def _link_faults(raw: Any) -> List[Dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise CertifyReportError("must be a list", field="link_faults", value=_short(raw))
    out = []
    for index, item in enumerate(raw):
        field = "link_faults[%d]" % index
        if isinstance(item, str):
            item = {"message": item}
        data = _mapping(item, field)
        lists = {}
        for key in ("domains", "nodes", "evidence"):
            value = data.get(key) or []
            if not isinstance(value, (list, tuple)):
                raise CertifyReportError("must be a list of strings", field="%s.%s" % (field, key), value=_short(value))
            lists[key] = [_text(v, "%s.%s[%d]" % (field, key, i), limit=253) for i, v in enumerate(value)]
        status = "faulty" if data.get("status") is None else _status(data.get("status"), field + ".status", LINK_STATUSES)
        message = _text(data.get("message"), field + ".message", default="")
        if not message:
            pair = " and ".join(lists["domains"]) or "unknown domains"
            message = "%s link between %s" % (status, pair)
        out.append({"domains": lists["domains"], "nodes": lists["nodes"], "evidence": lists["evidence"],
                    "status": status, "message": message})
    return out


def _round_summary(trace: List[Any], group_reasons: Mapping[str, str]) -> List[Dict[str, Any]]:
    """Rounds with their tests and outcomes, read from an IsolationPlanner trace (other events are skipped).

    A failed test's reason is its ``failed_groups`` reason when there is one (worded against the report's own
    thresholds), else the trace's."""
    rounds: Dict[int, Dict[str, Any]] = {}
    tests: Dict[str, Dict[str, Any]] = {}
    for entry in trace:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("round"), int):
            continue
        number = entry["round"]
        event = entry.get("event")
        if event in ("round", "plan") and number > 0:
            rounds.setdefault(number, {"round": number, "tests": [], "condemned": [], "cleared": []})
        if event == "plan" and isinstance(entry.get("test"), str):
            test = {"id": entry["test"], "purpose": str(entry.get("purpose") or ""),
                    "nodes": [str(n) for n in entry.get("nodes") or []], "outcome": "pending", "busbw": None, "reason": ""}
            tests[test["id"]] = test
            rounds[number]["tests"].append(test)
        elif event in ("passed", "failed") and entry.get("test") in tests:
            test = tests[entry["test"]]
            test["outcome"] = event
            busbw = entry.get("busbw")
            test["busbw"] = busbw if isinstance(busbw, (int, float)) and not isinstance(busbw, bool) and math.isfinite(busbw) else None
            test["reason"] = str(group_reasons.get(entry["test"]) or entry.get("reason") or "")[:MAX_REASON_CHARS]
        elif event in ("condemned", "cleared") and number in rounds and entry.get("node") is not None:
            rounds[number][event].append(str(entry["node"]))
        elif event == "link-condemned" and number in rounds:
            rounds[number]["condemned"].append("link " + "-".join(str(d) for d in entry.get("domains") or []))
    return [rounds[n] for n in sorted(rounds)]


def _isolation(raw: Any, failed_groups: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Rounds, tests and the trace; other keys (a planner summary's verdicts, links, grouping) are expected and ignored."""
    data = _mapping(raw, "isolation")
    trace = data.get("trace") or []
    if not isinstance(trace, (list, tuple)):
        raise CertifyReportError("must be a list of events", field="isolation.trace", value=_short(trace))
    for index, entry in enumerate(trace):
        if not isinstance(entry, Mapping):
            raise CertifyReportError("trace events must be mappings", field="isolation.trace[%d]" % index, value=_short(entry))
    trace = _plain(list(trace), "isolation.trace")
    summary = _round_summary(trace, {str(g["id"]): g["reason"] for g in failed_groups if g["reason"]})
    rounds = _count(data.get("rounds"), "isolation.rounds")
    tests = _count(data.get("tests"), "isolation.tests")
    return {"rounds": rounds if rounds is not None else len(summary),
            "tests": tests if tests is not None else sum(len(r["tests"]) for r in summary),
            "finish_reason": _text(data.get("finish_reason"), "isolation.finish_reason", default=None, limit=500),
            "round_summary": summary, "trace": trace}


def _durations(raw: Any, started: Optional[datetime], finished: Optional[datetime], warnings: List[str]) -> Dict[str, Any]:
    data = _mapping(raw, "durations")
    _unknown(data, ("total_s", "per_category", "ansible_overhead_s"), "durations.", warnings)
    total = _number(data.get("total_s"), "durations.total_s")
    if total is None and started is not None and finished is not None:
        try:
            total = round((finished - started).total_seconds(), 3)
        except TypeError:
            raise CertifyReportError("started and finished must both carry a time zone or both not", field="finished") from None
    per_category = {}
    for cat, value in _mapping(data.get("per_category"), "durations.per_category").items():
        _name(cat, "durations.per_category", "category name")
        per_category[cat] = _number(value, "durations.per_category.%s" % cat, optional=False)
    return {"total_s": total, "per_category": per_category,
            "ansible_overhead_s": _number(data.get("ansible_overhead_s"), "durations.ansible_overhead_s")}


def build_report(data: Mapping[str, Any]) -> Dict[str, Any]:
    """Validate the input (see the module docstring) and return the report document (schema ``SCHEMA_ID``)."""
    if not isinstance(data, Mapping):
        raise CertifyReportError("the report must be a mapping", field="report", value=_short(data))
    warnings: List[str] = []
    _unknown(data, _TOP_KEYS, "", warnings)
    started_text, started = _timestamp(data.get("started"), "started")
    finished_text, finished = _timestamp(data.get("finished"), "finished")
    if started is not None and finished is not None:
        try:
            backwards = finished < started
        except TypeError:
            raise CertifyReportError("started and finished must both carry a time zone or both not", field="finished",
                                     value=finished_text) from None
        if backwards:
            raise CertifyReportError("is before started (%s)" % started_text, field="finished", value=finished_text)

    nodes_raw = _mapping(data.get("nodes"), "nodes")
    nodes = {}
    for name in sorted(nodes_raw, key=lambda n: natural_key(str(n))):
        _name(name, "nodes", "node name")
        nodes[name] = _node(name, nodes_raw[name], warnings)

    categories_raw = _mapping(data.get("categories"), "categories")
    order: List[str] = []
    for cat in categories_raw:
        _name(cat, "categories", "category name")
        order.append(cat)
    for node in nodes.values():
        for cat in node["categories"]:
            if cat not in order:
                order.append(cat)
    durations = _durations(data.get("durations"), started, finished, warnings)
    for cat in durations["per_category"]:
        if cat not in order:
            order.append(cat)
    categories = {}
    for cat in order:
        entry = _category(cat, categories_raw.get(cat), warnings)
        counts = {status: 0 for status in CATEGORY_STATUSES}
        for node in nodes.values():
            result = node["categories"].get(cat)
            if result is not None:
                counts[result["status"]] += 1
        if counts["failed"]:
            status = "failed"
        elif counts["passed"]:
            status = "passed"
        elif counts["excluded"]:
            status = "excluded"
        else:
            status = "skipped"
        peak = max((p["busbw_gbps"] for p in entry["bandwidth_by_size"]), default=None)
        categories[cat] = {"status": status, "nodes": counts, "peak_busbw_gbps": peak,
                           "duration_s": durations["per_category"].get(cat)}
        categories[cat].update(entry)

    link_faults = _link_faults(data.get("link_faults"))
    failed_groups = _failed_groups(data.get("failed_groups"))
    gpu = _gpu(data.get("gpu"), warnings)
    totals = {"nodes": len(nodes)}
    for verdict in NODE_VERDICTS:
        totals[verdict] = sum(1 for n in nodes.values() if n["verdict"] == verdict)
    totals["gpus"] = gpu["count_per_node"] * len(nodes) if gpu["count_per_node"] is not None else None
    totals["link_faults"] = sum(1 for link in link_faults if link["status"] == "faulty")
    totals["suspect_links"] = len(link_faults) - totals["link_faults"]
    result, reason = _result(nodes, totals, link_faults)
    return {
        "schema": SCHEMA_ID,
        "result": result,
        "result_reason": reason,
        "platform": _platform(data.get("platform"), warnings),
        "gpu": gpu,
        "started": started_text,
        "finished": finished_text,
        "durations": durations,
        "totals": totals,
        "nodes": nodes,
        "categories": categories,
        "failed_groups": failed_groups,
        "link_faults": link_faults,
        "isolation": _isolation(data.get("isolation"), failed_groups),
        "warnings": warnings,
    }


def _listing(names: List[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


def _result(nodes: Mapping[str, Dict[str, Any]], totals: Mapping[str, Any], links: List[Dict[str, Any]]) -> Tuple[str, str]:
    failed = [n for n, v in nodes.items() if v["verdict"] == "failed"]
    excluded = [n for n, v in nodes.items() if v["verdict"] == "excluded"]
    faulty = [link["message"] for link in links if link["status"] == "faulty"]
    suspect = [link["message"] for link in links if link["status"] == "suspect"]
    if failed or faulty:
        parts = []
        if failed:
            parts.append("%d of %d node(s) failed: %s" % (len(failed), totals["nodes"], _listing(failed)))
        if faulty:
            parts.append("%d link fault(s): %s" % (len(faulty), _listing(faulty, 2)))
        return FAILED, "; ".join(parts)
    if not nodes:
        return INCOMPLETE, "no node was certified"
    if excluded or suspect:
        parts = []
        if excluded:
            parts.append("%d of %d node(s) excluded: %s" % (len(excluded), totals["nodes"], _listing(excluded)))
        if suspect:
            parts.append("%d suspect link(s) not confirmed" % len(suspect))
        return INCOMPLETE, "; ".join(parts)
    return PASSED, "all %d node(s) passed" % totals["nodes"]


def summarize(report: Mapping[str, Any]) -> Dict[str, Any]:
    """The compact summary a module returns (and a role hands to set_stats)."""
    nodes = report["nodes"]
    return {
        "result": report["result"], "result_reason": report["result_reason"], "totals": dict(report["totals"]),
        "platform": dict(report["platform"]), "gpu": dict(report["gpu"]),
        "failed_nodes": {n: v["reasons"] for n, v in nodes.items() if v["verdict"] == "failed"},
        "excluded_nodes": {n: v["reasons"] for n, v in nodes.items() if v["verdict"] == "excluded"},
        "link_faults": [link["message"] for link in report["link_faults"]],
        "categories": {c: i["status"] for c, i in report["categories"].items()},
        "duration_s": report["durations"].get("total_s"),
    }
