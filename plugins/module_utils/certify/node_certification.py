# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The certification verdict of each node, aggregated over categories, and its Kubernetes labels.

:func:`aggregate_certification` turns what the Certify categories returned (per-host module results
of ``gpu_health``/``nccl_test``/``training_goodput``, the ``certify_nccl`` result, unreachable hosts)
into one report dict, the ``report`` input of ``certify_report`` (see its module docstring)::

    {platform: {name, service, kubernetes_version}, gpu: {product, count_per_node},
     started, finished (ISO 8601), durations: {total_s, per_category},
     nodes: {name: {verdict: passed|failed|excluded, reasons: [...],
                    categories: {category: {status: passed|failed|excluded|skipped, reason, value?, unit?}}}},
     categories: {category: {bandwidth_by_size: {size: busbw}, per_node: {node: busbw},
                             threshold: {floor, relative_fraction, median, mad_z, unit}}},
     failed_groups: [{id, nodes, reason}], link_faults: [...], isolation: {rounds, tests, trace, finish_reason}}

:func:`certification_summary` gives the result and counts published with ``set_stats``.

Per node: any ``failed`` (or ``inconclusive``) category fails the node; else a node excluded from a
category (unreachable, cordoned, not Ready, not run) is ``excluded``; otherwise it ``passed``.
``skipped`` and ``not-available`` categories do not count.

:func:`label_nodes` publishes verdicts on Kubernetes nodes: labels ``dsxos.io/certification``
(passed|failed|excluded), ``dsxos.io/certified-at`` and ``dsxos.io/certification-valid-until`` (unix
seconds) and the annotation ``dsxos.io/certification-reason`` (JSON, per category status and
reason).  It is idempotent (a node already carrying the same values is not patched), supports check
mode, and never cordons, taints or otherwise touches ``spec``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError, K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_node_name
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_thresholds import evaluate_fleet, validate_thresholds
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_model import build_report

LABEL_VERDICT = "dsxos.io/certification"
#: A rerun with the same outcome relabels a node only when less than this share of its validity is left.
DEFAULT_RENEW_FRACTION = 0.5
LABEL_CERTIFIED_AT = "dsxos.io/certified-at"
LABEL_VALID_UNTIL = "dsxos.io/certification-valid-until"
ANNOTATION_REASON = "dsxos.io/certification-reason"
VERDICTS = ("passed", "failed", "excluded")
CATEGORIES = ("gpu-health", "dcgm-diag", "nccl-loopback", "nccl-all-reduce", "nccl-all-gather", "nccl-alltoall",
              "training-goodput")
#: category statuses: the first three decide, the others are informational
STATUSES = ("passed", "failed", "excluded", "inconclusive", "skipped", "not-available")
DEFAULT_VALID_FOR_S = 7 * 24 * 3600
#: what the report's ``gpu`` holds (see :func:`measured_gpu`)
GPU_KEYS = ("product", "count_per_node", "driver_version", "cuda_version", "nccl_version", "nccl_tests_version")
MAX_REASON_CHARS = 500
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_PASS_WORDS = {"ok", "pass", "passed", "healthy", "success", "succeeded", "true"}
_WARN_WORDS = {"warn", "warning"}
_FAIL_WORDS = {"fail", "failed", "faulty", "error", "false"}
_NCCL_STATUS = {"healthy": "passed", "faulty": "failed", "excluded": "excluded", "inconclusive": "inconclusive"}


class CertificationError(CertifyError):
    """Bad certification input (unknown category or verdict, malformed results)."""


def nccl_category(collective: str) -> str:
    """``all_reduce`` -> ``nccl-all-reduce`` (the role's category name for a collective)."""
    return "nccl-" + collective.replace("_", "-")


def _short(text: Any) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 3] + "..."


def normalize_result(raw: Any, category: str = "") -> Dict[str, Any]:
    """One host's module result (as registered by Ansible) -> ``{status, reason, reasons, ...}``.

    Understands unreachable/skipped/failed task results, ``verdict`` (ok|warn|fail), ``passed`` or ``ok`` (bool),
    ``result``/``status`` strings (PASSED/FAILED...), ``reasons`` lists, and keeps ``busbw``,
    ``recommended_action`` and ``goodput`` values when present.  Garbage becomes a failed status
    with a reason, never an exception.
    """
    if not isinstance(raw, Mapping):
        return {"status": "failed", "reason": "no usable %s result: %s" % (category or "category", _short(repr(raw))),
                "reasons": []}
    msg = _short(raw.get("msg"))
    if raw.get("unreachable"):
        reason = "unreachable" + (": %s" % msg if msg else "")
        return {"status": "excluded", "reason": reason, "reasons": [reason]}
    if raw.get("skipped"):
        reason = _short(raw.get("skip_reason") or raw.get("msg") or "skipped")
        status = "not-available" if raw.get("not_available") else "skipped"
        return {"status": status, "reason": reason, "reasons": [reason]}
    explicit = raw.get("status") if raw.get("status") in STATUSES else None
    reasons = [_short(r) for r in (raw.get("reasons") or []) if str(r or "").strip()] \
        if isinstance(raw.get("reasons"), (list, tuple)) else []
    status = explicit
    warn = False
    if status is None:
        verdict = str(raw.get("verdict") if raw.get("verdict") is not None else "").lower()
        result = str(raw.get("result") if raw.get("result") is not None else raw.get("status") or "").lower()
        if raw.get("failed"):
            status = "failed"
        elif verdict in _FAIL_WORDS or result in _FAIL_WORDS or raw.get("passed") is False or raw.get("ok") is False:
            status = "failed"
        elif verdict in _WARN_WORDS:
            status, warn = "passed", True
        elif verdict in _PASS_WORDS or result in _PASS_WORDS or raw.get("passed") is True or raw.get("ok") is True:
            status = "passed"
        elif result == "incomplete" or verdict == "inconclusive":
            status = "inconclusive"
        else:
            status = "failed"
            reasons.append(msg or "result has no verdict (keys: %s)" % ", ".join(sorted(str(k) for k in raw)[:10]))
    if status == "failed" and not reasons and msg:
        reasons.append(msg)
    reason = reasons[0] if reasons else ("ok" if status == "passed" else status)
    if warn:
        reason = "passed with warnings: " + reason
    out: Dict[str, Any] = {"status": status, "reason": reason, "reasons": reasons[:10]}
    for key in ("busbw", "recommended_action", "goodput", "value", "duration_s"):
        if raw.get(key) is not None:
            out[key] = raw[key]
    return out


def node_verdict(categories: Mapping[str, Mapping[str, Any]], excluded_reason: Optional[str] = None) -> Tuple[str, List[str]]:
    """(verdict, reasons) of one node from its category results (see the module docstring)."""
    if excluded_reason:
        return "excluded", [excluded_reason]
    failed = []
    excluded = []
    decided = 0
    for cat in sorted(categories, key=_category_order):
        entry = categories[cat]
        status = entry.get("status")
        if status in ("failed", "inconclusive"):
            failed.append("%s: %s" % (cat, entry.get("reason") or status))
        elif status == "excluded":
            excluded.append("%s: %s" % (cat, entry.get("reason") or "excluded"))
        if status in ("passed", "failed", "inconclusive", "excluded"):
            decided += 1
    if failed:
        return "failed", failed
    if excluded:
        return "excluded", excluded
    if decided == 0:
        return "excluded", ["no certification category ran on this node"]
    return "passed", []


def _category_order(name: str) -> Tuple[int, str]:
    return (CATEGORIES.index(name) if name in CATEGORIES else len(CATEGORIES), name)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def group_test_reasons(test: Mapping[str, Any], collective: Optional[str] = None) -> List[str]:
    """Why one group test (a ``certify_nccl`` ``tests`` entry) failed, without the fleet numbers of its round.

    A bandwidth judgement quotes the measured busbw only: the median and the threshold of a category are stated
    once, by the report (each round judged against the fleet it had then, so its numbers would contradict them).
    Any other reason (log error, launcher exit code, timeout) is kept as the judge wrote it.
    """
    out: List[str] = []
    for coll, judgement in (test.get("collectives") or {}).items():
        if (collective is not None and coll != collective) or not isinstance(judgement, Mapping) or judgement.get("passed"):
            continue
        if _is_number(judgement.get("busbw")):
            out.append("%s: busbw %.2f GB/s, low against the other results of round %s"
                       % (coll, judgement["busbw"], test.get("round", "?")))
        else:
            out.extend("%s: %s" % (coll, _short(r)) for r in judgement.get("reasons") or [])
    return out


def _node_nccl_reason(entry: Mapping[str, Any], tests: Mapping[str, Mapping[str, Any]], collective: str) -> str:
    """The planner's sentence plus what the node's evidence tests showed for ``collective`` (no round numbers)."""
    reasons = entry.get("reasons") or []
    head = str(reasons[0]) if reasons else str(entry.get("reason") or "")
    if not tests:  # tests not returned: the planner's own reason is all there is
        return _short(entry.get("reason"))
    details: List[str] = []
    for test_id in entry.get("evidence") or []:
        for reason in group_test_reasons(tests.get(test_id) or {}, collective):
            if reason not in details:
                details.append(reason)
    return _short("%s: %s" % (head, "; ".join(details[:3])) if details else head)


def _nccl_categories(nccl: Mapping[str, Any]) -> Tuple[Dict[str, Dict[str, Dict[str, Any]]], Dict[str, Dict[str, Any]]]:
    """certify_nccl result -> ({node: {category: entry}}, {category: report section})."""
    per_node: Dict[str, Dict[str, Dict[str, Any]]] = {}
    sections: Dict[str, Dict[str, Any]] = {}
    nodes = nccl.get("nodes") or {}
    if not isinstance(nodes, Mapping):
        raise CertificationError("nccl.nodes must be a mapping of node to verdict", field="nccl.nodes", value=nodes)
    bandwidth = nccl.get("bandwidth") or {}
    tests = {str(t.get("id")): t for t in nccl.get("tests") or [] if isinstance(t, Mapping)}
    for coll in nccl.get("collectives") or []:
        cat = nccl_category(str(coll))
        band = bandwidth.get(coll) or {}
        sections[cat] = _nccl_section(band)
        for name, entry in nodes.items():
            status = _NCCL_STATUS.get(str(entry.get("status")), "failed")
            failed_colls = entry.get("failed_collectives") or []
            if status == "failed" and failed_colls and coll not in failed_colls:
                status = "passed"
            reason = _node_nccl_reason(entry, tests, str(coll)) if status in ("failed", "inconclusive") else _short(entry.get("reason"))
            if status == "inconclusive":
                status, reason = "failed", "inconclusive: " + reason
            item: Dict[str, Any] = {"status": status, "reason": reason if status != "passed" else "ok"}
            busbw = (entry.get("busbw") or {}).get(coll)
            if isinstance(busbw, (int, float)) and not isinstance(busbw, bool):
                item.update(value=busbw, unit="GB/s")
            per_node.setdefault(name, {})[cat] = item
    return per_node, sections


def _nccl_section(band: Mapping[str, Any]) -> Dict[str, Any]:
    """One collective's bandwidth section in the certify_report shape."""
    threshold: Dict[str, Any] = {"unit": "GB/s"}
    raw = band.get("threshold") or {}
    floor = (raw.get("floor") or {}).get("floor") if isinstance(raw.get("floor"), Mapping) else None
    relative = raw.get("relative") or {}
    fleet = (band.get("fleet") or {}).get("multi-node") or {}
    if floor is not None:
        threshold["floor"] = floor
    if relative.get("fraction") is not None:
        threshold["relative_fraction"] = relative["fraction"]
    if relative.get("mad_z") is not None:
        threshold["mad_z"] = relative["mad_z"]
    if fleet.get("median") is not None:
        threshold["median"] = fleet["median"]
    per_node = {n: v for n, v in (band.get("per_node") or {}).items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"bandwidth_by_size": dict(band.get("bandwidth_by_size") or {}), "per_node": per_node, "threshold": threshold}


def _iso(value: Any) -> Optional[str]:
    """Unix seconds (number or digit string) -> ISO 8601 UTC; other strings pass through."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) or (isinstance(value, str) and value.replace(".", "", 1).isdigit()):
        return datetime.fromtimestamp(float(value), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def epoch_seconds(value: Any) -> Optional[float]:
    """Unix seconds from a number, a digit string or an ISO 8601 date-time (``None`` when unreadable)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return None
    return None


@dataclass
class CertificationInput:  # pylint: disable=too-many-instance-attributes
    """What :func:`aggregate_certification` needs (module options of the same names)."""

    nodes: List[str]
    results: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    nccl: Optional[Dict[str, Any]] = None
    excluded: Dict[str, str] = field(default_factory=dict)
    categories: List[str] = field(default_factory=list)
    platform: Dict[str, Any] = field(default_factory=dict)
    gpu: Dict[str, Any] = field(default_factory=dict)
    started: Any = None
    finished: Any = None
    durations: Dict[str, Any] = field(default_factory=dict)
    loopback_thresholds: Optional[Dict[str, Any]] = None


def validate_input(params: Mapping[str, Any]) -> CertificationInput:
    """Check the module options (unknown category, empty target, wrong shapes) and build the input."""
    nodes = params.get("nodes")
    if not isinstance(nodes, (list, tuple)) or not nodes:
        raise CertificationError("empty target: no node to certify", field="nodes", value=nodes)
    names = [str(n) for n in nodes]
    categories = list(params.get("categories") or [])
    for index, cat in enumerate(categories):
        if cat not in CATEGORIES:
            raise CertificationError("unknown category (allowed: %s)" % ", ".join(CATEGORIES), field="categories[%d]" % index,
                                     value=cat)
    results = params.get("results") or {}
    if not isinstance(results, Mapping):
        raise CertificationError("results must map category -> host -> module result", field="results", value=results)
    for cat, per_host in results.items():
        if cat not in CATEGORIES:
            raise CertificationError("unknown category (allowed: %s)" % ", ".join(CATEGORIES), field="results.%s" % cat, value=cat)
        if not isinstance(per_host, Mapping):
            raise CertificationError("must map host -> module result", field="results.%s" % cat, value=per_host)
    excluded = params.get("excluded") or {}
    if not isinstance(excluded, Mapping):
        raise CertificationError("excluded must map node -> reason", field="excluded", value=excluded)
    nccl = params.get("nccl") or None
    if nccl is not None and not isinstance(nccl, Mapping):
        raise CertificationError("nccl must be the certify_nccl result", field="nccl", value=nccl)
    for key in ("platform", "gpu", "durations"):
        if params.get(key) is not None and not isinstance(params[key], Mapping):
            raise CertificationError("must be a mapping", field=key, value=params[key])
    return CertificationInput(nodes=names, results={c: dict(v) for c, v in results.items()},
                              nccl=dict(nccl) if nccl else None,
                              excluded={str(k): str(v) for k, v in excluded.items() if v},
                              categories=categories, platform=dict(params.get("platform") or {}),
                              gpu=dict(params.get("gpu") or {}), started=params.get("started"),
                              finished=params.get("finished"), durations=dict(params.get("durations") or {}),
                              loopback_thresholds=dict(params["loopback_thresholds"]) if params.get("loopback_thresholds") else None)


def _judge_loopback_fleet(entries: Dict[str, Dict[str, Any]], thresholds: Any) -> Dict[str, Any]:
    """Fail intra-node results that are low against the other hosts (median/MAD; nccl_thresholds' relative policy).

    Returns the category's threshold settings for the report (which states the median and the threshold once; the
    reasons quote the measured busbw only).
    """
    config = validate_thresholds(thresholds, source="loopback_thresholds") if thresholds else validate_thresholds(None)
    values = {h: e["busbw"] for h, e in entries.items() if e["status"] == "passed" and _is_number(e.get("busbw"))}
    if not values:
        return {}
    for host, verdict in evaluate_fleet(values, profile=None, policy=config.relative).items():
        if not verdict.passed:
            entry = entries[host]
            reason = "busbw %.2f GB/s, low against the other hosts' intra-node results" % values[host]
            entry.update(status="failed", reason=reason, reasons=[reason])
    if len(values) < config.relative.min_fleet_size:
        return {}
    return {"relative_fraction": config.relative.fraction, "mad_z": config.relative.mad_z}


def _report_category(entry: Mapping[str, Any]) -> Dict[str, Any]:
    """A normalised category entry reduced to the certify_report keys (status, reason, value, unit, duration_s)."""
    status = entry.get("status")
    reason = entry.get("reason") or ""
    if status == "inconclusive":
        status, reason = "failed", "inconclusive: " + reason
    elif status == "not-available":
        status = "skipped"
    out: Dict[str, Any] = {"status": status, "reason": reason}
    value = entry.get("busbw", entry.get("value"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        out["value"] = value
        out["unit"] = "GB/s" if "busbw" in entry else str(entry.get("unit") or "")
    if isinstance(entry.get("duration_s"), (int, float)) and not isinstance(entry.get("duration_s"), bool):
        out["duration_s"] = entry["duration_s"]
    return out


def aggregate_certification(data: CertificationInput) -> Dict[str, Any]:
    """Build the certification report (the ``report`` input of ``certify_report``; see the module docstring)."""
    nodes: Dict[str, Dict[str, Any]] = {n: {"categories": {}} for n in data.nodes}
    sections: Dict[str, Dict[str, Any]] = {}
    for cat in sorted(data.results, key=_category_order):
        per_node: Dict[str, float] = {}
        normalized = {host: normalize_result(raw, cat) for host, raw in data.results[cat].items()
                      if host in nodes and not data.excluded.get(host)}
        threshold: Dict[str, Any] = {"unit": "GB/s"}
        if cat == "nccl-loopback":
            threshold.update(_judge_loopback_fleet(normalized, data.loopback_thresholds))
        for host, entry in normalized.items():
            nodes[host]["categories"][cat] = _report_category(entry)
            if isinstance(entry.get("busbw"), (int, float)) and not isinstance(entry.get("busbw"), bool):
                per_node[host] = entry["busbw"]
        if per_node:
            sections[cat] = {"per_node": per_node, "threshold": threshold}
    nccl = data.nccl or {}
    if nccl.get("nodes"):
        nccl_nodes, nccl_sections = _nccl_categories(nccl)
        sections.update(nccl_sections)
        for host, cats in nccl_nodes.items():
            if host in nodes and not data.excluded.get(host):
                nodes[host]["categories"].update(cats)
    elif nccl.get("failed") or nccl.get("msg"):
        for cat in (c for c in data.categories if c.startswith("nccl-") and c != "nccl-loopback"):
            for host in nodes:
                if not data.excluded.get(host):  # an excluded host took no part: the failure is not its own
                    nodes[host]["categories"][cat] = {"status": "failed", "reason": _short(nccl.get("msg") or "certify_nccl failed")}
    for cat in data.categories:
        for host, entry in nodes.items():
            if cat not in entry["categories"]:
                entry["categories"][cat] = {"status": "excluded", "reason": data.excluded.get(host) or "not run on this node"}
    for host in data.nodes:
        entry = nodes[host]
        verdict, reasons = node_verdict(entry["categories"], data.excluded.get(host))
        if verdict == "excluded" and data.excluded.get(host):
            for cat_entry in entry["categories"].values():  # excluded before anything ran: every category says why
                cat_entry.clear()
                cat_entry.update(status="excluded", reason=data.excluded[host])
        entry.update(verdict=verdict, reasons=reasons)
    durations: Dict[str, Any] = {}
    for key in ("total_s", "ansible_overhead_s"):
        if data.durations.get(key) is not None:
            durations[key] = data.durations[key]
    per_category = dict(data.durations.get("per_category") or {})
    total_nccl = (nccl.get("durations") or {}).get("total_s")
    if total_nccl is not None:
        for coll in nccl.get("collectives") or []:
            per_category.setdefault(nccl_category(str(coll)), round(float(total_nccl) / max(1, len(nccl["collectives"])), 3))
    if per_category:
        durations["per_category"] = per_category
    started, finished = epoch_seconds(data.started), epoch_seconds(data.finished)
    if "total_s" not in durations and started is not None and finished is not None and finished >= started:
        durations["total_s"] = round(finished - started, 3)
    tests = {str(t.get("id")): t for t in nccl.get("tests") or [] if isinstance(t, Mapping)}
    failed_groups = [{"id": g.get("test") or g.get("id"), "nodes": list(g.get("nodes") or []),
                      "reason": _short("; ".join(group_test_reasons(tests.get(str(g.get("test") or g.get("id"))) or {})
                                                 or g.get("reasons") or []) or g.get("reason") or "")}
                     for g in (nccl.get("failed_groups") or [])]
    link_keys = ("domains", "nodes", "evidence", "status", "message")
    links = [{k: v for k, v in link.items() if k in link_keys} for link in (nccl.get("link_faults") or [])]
    report: Dict[str, Any] = {"nodes": nodes, "categories": sections, "failed_groups": failed_groups, "link_faults": links,
                              "durations": durations}
    if nccl.get("nodes"):
        report["isolation"] = {"rounds": nccl.get("rounds", 0), "tests": nccl.get("test_count", len(nccl.get("tests") or [])),
                               "trace": nccl.get("trace") or [], "finish_reason": nccl.get("finish_reason")}
    if data.platform:
        report["platform"] = {k: data.platform[k] for k in ("name", "service", "kubernetes_version") if data.platform.get(k)}
    gpu = measured_gpu(data)
    gpu.update({k: v for k, v in data.gpu.items() if v is not None and v != ""})
    if not gpu.get("product") and nccl.get("accelerator"):
        gpu["product"] = nccl["accelerator"]
    if gpu:
        report["gpu"] = {k: gpu[k] for k in GPU_KEYS if gpu.get(k) is not None}
    if _iso(data.started):
        report["started"] = _iso(data.started)
    if _iso(data.finished):
        report["finished"] = _iso(data.finished)
    return report


def _agreed(values: Sequence[Any]) -> Optional[str]:
    """The one value every host reported, or the distinct values joined (``550.54, 555.42``); None when none did."""
    distinct = sorted({str(v) for v in values if v not in (None, "")})
    return ", ".join(distinct) if distinct else None


def measured_gpu(data: CertificationInput) -> Dict[str, Any]:
    """GPU product, count per node, driver, CUDA and NCCL versions as the run's own results state them.

    ``gpu-health``/``dcgm-diag`` results carry the NVML readings (``gpus[].name``, ``driver_version``,
    ``cuda_driver_version``), ``nccl-loopback`` results the parsed log (``result.nccl_version``), the ``certify_nccl``
    result the versions its logs named (``software``).
    """
    products: List[Any] = []
    counts: List[int] = []
    drivers: List[Any] = []
    cudas: List[Any] = []
    for cat in ("gpu-health", "dcgm-diag"):
        for host, raw in (data.results.get(cat) or {}).items():
            if not isinstance(raw, Mapping) or data.excluded.get(host) or raw.get("skipped") or raw.get("unreachable"):
                continue
            gpus = [g for g in raw.get("gpus") or [] if isinstance(g, Mapping)]
            products.extend(g.get("name") for g in gpus)
            if gpus:
                counts.append(len(gpus))
            drivers.append(raw.get("driver_version"))
            cudas.append(raw.get("cuda_driver_version"))
    nccl_versions: List[Any] = []
    tests_versions: List[Any] = []
    for raw in (data.results.get("nccl-loopback") or {}).values():
        parsed = raw.get("result") if isinstance(raw, Mapping) else None
        if isinstance(parsed, Mapping):
            nccl_versions.append(parsed.get("nccl_version"))
            tests_versions.append(parsed.get("tests_version"))
    software = (data.nccl or {}).get("software") or {}
    if isinstance(software, Mapping):
        nccl_versions.append(software.get("nccl"))
        tests_versions.append(software.get("nccl_tests"))
    out: Dict[str, Any] = {"product": _agreed(products), "driver_version": _agreed(drivers), "cuda_version": _agreed(cudas),
                           "nccl_version": _agreed(nccl_versions), "nccl_tests_version": _agreed(tests_versions)}
    if counts:
        out["count_per_node"] = max(set(counts), key=lambda c: (counts.count(c), c))
    return {k: v for k, v in out.items() if v is not None}


def certification_summary(report: Mapping[str, Any]) -> Dict[str, Any]:
    """Result and counts of an aggregated report, taken from the report document itself.

    The counts come from :func:`report_model.build_report` (its ``totals`` and ``result``), the same computation
    the JSON, JUnit, Markdown and HTML reports show, so the module's summary can never disagree with them.
    """
    document = build_report(report)
    nodes = document["nodes"]
    totals = document["totals"]
    names = list(nodes)
    return {"result": document["result"], "nodes": totals["nodes"], "passed": totals["passed"], "failed": totals["failed"],
            "excluded": totals["excluded"], "faulty_links": totals["link_faults"],
            "failed_nodes": [n for n in names if nodes[n]["verdict"] == "failed"],
            "excluded_nodes": [n for n in names if nodes[n]["verdict"] == "excluded"],
            "reasons": {n: nodes[n]["reasons"] for n in names if nodes[n]["verdict"] != "passed"}}


# ---------------------------------------------------------------------------- labels
@dataclass
class LabelRequest:
    """Labels to publish for one node."""

    node: str
    verdict: str
    reasons: Dict[str, Any]
    certified_at: int
    valid_until: int

    def labels(self) -> Dict[str, str]:
        return {LABEL_VERDICT: self.verdict, LABEL_CERTIFIED_AT: str(self.certified_at),
                LABEL_VALID_UNTIL: str(self.valid_until)}

    def annotation(self) -> str:
        return json.dumps(self.reasons, sort_keys=True, separators=(",", ":"))


def label_requests(report_nodes: Mapping[str, Mapping[str, Any]], certified_at: Optional[int] = None,
                   valid_for_s: int = DEFAULT_VALID_FOR_S, clock: Any = time.time) -> List[LabelRequest]:
    """One :class:`LabelRequest` per node of a report's ``nodes`` (or ``{node: {verdict, reasons|categories}}``)."""
    if isinstance(valid_for_s, bool) or not isinstance(valid_for_s, int) or valid_for_s < 0:
        raise CertificationError("valid_for_s must be an integer >= 0", field="valid_for_s", value=valid_for_s)
    when = int(certified_at if certified_at is not None else clock())
    if when < 0:
        raise CertificationError("certified_at must be unix seconds >= 0", field="certified_at", value=certified_at)
    out = []
    for name in sorted(report_nodes):
        entry = report_nodes[name]
        if not isinstance(entry, Mapping):
            raise CertificationError("node entry must be a mapping with a verdict", field="nodes.%s" % name, value=entry)
        verdict = entry.get("verdict")
        if verdict not in VERDICTS:
            raise CertificationError("unknown verdict (allowed: %s)" % ", ".join(VERDICTS), field="nodes.%s.verdict" % name,
                                     value=verdict)
        try:
            validate_node_name(name)
        except K8sError as err:
            raise CertificationError(str(err), field="nodes", value=name) from None
        reasons: Dict[str, Any] = {}
        for cat, cat_entry in sorted((entry.get("categories") or {}).items()):
            if isinstance(cat_entry, Mapping):
                reasons[cat] = {"status": cat_entry.get("status"), "reason": _short(cat_entry.get("reason"))}
        if not reasons and entry.get("reasons"):
            reasons["node"] = {"status": verdict, "reason": _short("; ".join(str(r) for r in entry["reasons"]))}
        out.append(LabelRequest(node=name, verdict=verdict, reasons=reasons, certified_at=when, valid_until=when + valid_for_s))
    return out


def _read_node(client: KubeApi, name: str) -> Dict[str, Any]:
    resp = client.call("get", "nodes", client.core.read_node, name, _preload_content=False)
    return json.loads(resp.data)


def _statuses(reasons: Any) -> Dict[str, Any]:
    if not isinstance(reasons, Mapping):
        return {}
    return {c: (e or {}).get("status") if isinstance(e, Mapping) else None for c, e in reasons.items()}


def _int_label(labels: Mapping[str, Any], key: str) -> Optional[int]:
    try:
        return int(str(labels.get(key)))
    except (TypeError, ValueError):
        return None


def still_certified(node: Mapping[str, Any], request: LabelRequest, renew_fraction: float = DEFAULT_RENEW_FRACTION) -> bool:
    """True when ``node`` already carries ``request``'s outcome and that certification is not due for renewal.

    The same outcome: the verdict label and every category's status in the reason annotation (not the measured
    figures the reasons quote). Not due: more than ``renew_fraction`` of the requested validity is still left on the
    node's ``certification-valid-until``. A rerun that certifies the same thing within that window keeps the
    certification of record (its time, validity and reasons) instead of relabelling every node on every run.
    """
    if renew_fraction <= 0:
        return False
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(LABEL_VERDICT) != request.verdict:
        return False
    valid_until = _int_label(labels, LABEL_VALID_UNTIL)
    if valid_until is None or _int_label(labels, LABEL_CERTIFIED_AT) is None:
        return False
    if valid_until - request.certified_at <= renew_fraction * (request.valid_until - request.certified_at):
        return False
    try:
        current = json.loads((meta.get("annotations") or {}).get(ANNOTATION_REASON) or "null")
    except ValueError:
        return False
    return _statuses(current) == _statuses(request.reasons)


def plan_labels(node: Mapping[str, Any], request: LabelRequest, renew_fraction: float = 0.0) -> Optional[Dict[str, Any]]:
    """The metadata patch that brings ``node`` to ``request``, or None when it already matches (or, with
    ``renew_fraction`` > 0, when :func:`still_certified` says the node's certification of record stands)."""
    if still_certified(node, request, renew_fraction):
        return None
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    want_labels = request.labels()
    patch_labels = {k: v for k, v in want_labels.items() if labels.get(k) != v}
    patch_ann = {}
    current = annotations.get(ANNOTATION_REASON)
    try:
        same = current is not None and json.loads(current) == request.reasons
    except ValueError:
        same = False
    if not same:
        patch_ann[ANNOTATION_REASON] = request.annotation()
    if not patch_labels and not patch_ann:
        return None
    patch: Dict[str, Any] = {"metadata": {}}
    if patch_labels:
        patch["metadata"]["labels"] = patch_labels
    if patch_ann:
        patch["metadata"]["annotations"] = patch_ann
    return patch


def label_nodes(client: KubeApi, requests: Sequence[LabelRequest], check_mode: bool = False,
                renew_fraction: float = 0.0) -> Dict[str, Any]:
    """Apply label requests; returns ``{nodes: [...], changed_nodes, missing_nodes, failed_nodes, changed}``.

    Only ``metadata.labels`` and ``metadata.annotations`` are patched: never ``spec`` (no cordon, no taint).
    """
    results = []
    for request in requests:
        entry: Dict[str, Any] = {"node": request.node, "verdict": request.verdict, "labels": request.labels(),
                                 "status": "ok", "changed": False}
        try:
            node = _read_node(client, request.node)
            patch = plan_labels(node, request, renew_fraction)
            if patch is not None:
                entry.update(status="changed", changed=True, patch=patch)
                if not check_mode:
                    client.call("patch", "nodes", client.core.patch_node, request.node, patch,
                                _preload_content=False, _content_type=STRATEGIC_MERGE_PATCH)
        except K8sNotFound:
            entry.update(status="missing", message="node %s does not exist" % request.node)
        except K8sError as err:
            entry.update(status="failed", message=str(err))
        results.append(entry)
    return {"nodes": results, "changed": any(r["changed"] for r in results),
            "changed_nodes": [r["node"] for r in results if r["changed"]],
            "missing_nodes": [r["node"] for r in results if r["status"] == "missing"],
            "failed_nodes": [r["node"] for r in results if r["status"] == "failed"]}
