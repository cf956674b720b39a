# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The certification report (a :func:`report_model.build_report` document) as text: JSON, JUnit XML, Markdown.

:data:`RENDERERS` maps each format (``json``, ``junit``, ``markdown``, ``html``; the HTML page is
:mod:`report_html`) to its renderer and :func:`render_formats` renders the requested ones. Every renderer is
deterministic (the same document gives byte-identical text) and treats all text from the report as untrusted
(XML-escaped, Markdown-escaped). Numbers, sizes and durations are formatted by :mod:`report_format`.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_format import format_gbps, format_seconds, format_size, software_versions
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_html import to_html
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_model import CertifyReportError

FORMATS = ("json", "junit", "markdown", "html")
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def to_json(report: Mapping[str, Any]) -> str:
    """The report as stable, indented JSON (key order as built, UTF-8 kept, trailing newline)."""
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _xml_text(value: Any) -> str:
    return _XML_ILLEGAL.sub("\ufffd", str(value))


def _attr(value: Any) -> str:
    return quoteattr(_xml_text(value), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _junit_time(value: Optional[float]) -> str:
    """JUnit's ``time`` attribute: seconds with three decimals, ``0.000`` when unknown."""
    return "%.3f" % (value or 0.0)


def _junit_case(cat: str, node: str, info: Mapping[str, Any], result: Optional[Mapping[str, Any]], limit: Optional[float]) -> Tuple[str, str]:
    """One <testcase> and its outcome (passed, failed, skipped)."""
    attrs = "classname=%s name=%s time=%s" % (_attr(cat), _attr(node), _attr(_junit_time(result and result.get("duration_s"))))
    if result is None:
        if info["verdict"] == "excluded":
            why = "node excluded: " + "; ".join(info["reasons"])
        else:
            why = "no %s result for this node" % cat
        return "    <testcase %s>\n      <skipped message=%s/>\n    </testcase>\n" % (attrs, _attr(why)), "skipped"
    status = result["status"]
    if status == "failed":
        message = result["reason"] or "; ".join(info["reasons"]) or "failed"
        detail = [message]
        if result.get("value") is not None:
            detail.append("measured: %s %s" % (result["value"], result.get("unit") or ""))
        if limit is not None:
            detail.append("threshold: %s %s" % (limit, result.get("unit") or "GB/s"))
        body = _xml_text(xml_escape("\n".join(d.strip() for d in detail)))
        return ("    <testcase %s>\n      <failure message=%s type=\"certification\">%s</failure>\n    </testcase>\n"
                % (attrs, _attr(message), body)), "failed"
    if status in ("excluded", "skipped"):
        why = result["reason"] or ("; ".join(info["reasons"]) if status == "excluded" else "") or status
        return "    <testcase %s>\n      <skipped message=%s/>\n    </testcase>\n" % (attrs, _attr(why)), "skipped"
    out = "    <testcase %s>\n" % attrs
    if result.get("value") is not None or result.get("reason"):
        value = result.get("value")
        parts = (result.get("reason") or "", "" if value is None else value, result.get("unit") or "")
        text = " ".join(str(p) for p in parts if p != "").strip()
        out += "      <system-out>%s</system-out>\n" % _xml_text(xml_escape(text))
    return out + "    </testcase>\n", "passed"


def to_junit(report: Mapping[str, Any]) -> str:
    """JUnit XML: a <testsuite> per category, a <testcase classname=category name=node> per node x category.

    Failed results carry ``<failure message=reason>``, excluded/skipped ones (and nodes without a result in a
    category) ``<skipped message=...>``. Confirmed link faults add a ``link-faults`` suite; a report without any
    category gets one ``certify`` suite with the node verdicts, so CI always sees every node.
    """
    suites: List[Tuple[str, str, Dict[str, int], float]] = []
    nodes = report["nodes"]
    for cat, info in report["categories"].items():
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        body = ""
        limit = info["threshold"].get("limit")
        for node, node_info in nodes.items():
            case, outcome = _junit_case(cat, node, node_info, node_info["categories"].get(cat), limit)
            body += case
            counts["tests"] += 1
            counts["failures"] += outcome == "failed"
            counts["skipped"] += outcome == "skipped"
        suites.append((cat, body, counts, info.get("duration_s") or 0.0))
    if not report["categories"] and nodes:
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        body = ""
        for node, node_info in nodes.items():
            result = {"status": node_info["verdict"], "reason": "; ".join(node_info["reasons"])}
            case, outcome = _junit_case("certify", node, node_info, result, None)
            body += case
            counts["tests"] += 1
            counts["failures"] += outcome == "failed"
            counts["skipped"] += outcome == "skipped"
        suites.append(("certify", body, counts, report["durations"].get("total_s") or 0.0))
    faulty = [link for link in report["link_faults"] if link["status"] == "faulty"]
    if faulty:
        body = ""
        for link in faulty:
            name = "-".join(link["domains"]) or link["message"]
            attrs = "classname=\"link-faults\" name=%s time=\"0.000\"" % _attr(name)
            body += ("    <testcase %s>\n      <failure message=%s type=\"link\">%s</failure>\n    </testcase>\n"
                     % (attrs, _attr(link["message"]), _xml_text(xml_escape("nodes: " + ", ".join(link["nodes"])))))
        suites.append(("link-faults", body, {"tests": len(faulty), "failures": len(faulty), "skipped": 0}, 0.0))
    total = {key: sum(s[2][key] for s in suites) for key in ("tests", "failures", "skipped")}
    total_time = report["durations"].get("total_s") or sum(s[3] for s in suites)
    stamp = _junit_timestamp(report.get("started"))
    props = [("result", report["result"]), ("result_reason", report["result_reason"])]
    for key in ("name", "service", "kubernetes_version"):
        if report["platform"].get(key):
            props.append(("platform." + key, report["platform"][key]))
    for key in ("product", "count_per_node", "driver_version", "cuda_version", "nccl_version", "nccl_tests_version"):
        if report["gpu"].get(key) is not None:
            props.append(("gpu." + key, report["gpu"][key]))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>\n',
             '<testsuites name="dsxos.cluster certify" tests="%d" failures="%d" errors="0" skipped="%d" time="%s">\n'
             % (total["tests"], total["failures"], total["skipped"], _junit_time(total_time))]
    for index, (name, body, counts, secs) in enumerate(suites):
        lines.append('  <testsuite name=%s id="%d" tests="%d" failures="%d" errors="0" skipped="%d" time="%s"%s>\n'
                     % (_attr(name), index, counts["tests"], counts["failures"], counts["skipped"], _junit_time(secs),
                        " timestamp=%s" % _attr(stamp) if stamp else ""))
        lines.append("    <properties>\n")
        lines.extend("      <property name=%s value=%s/>\n" % (_attr(k), _attr(v)) for k, v in props)
        lines.append("    </properties>\n")
        lines.append(body)
        lines.append("  </testsuite>\n")
    lines.append("</testsuites>\n")
    return "".join(lines)


def _junit_timestamp(value: Optional[str]) -> Optional[str]:
    """JUnit's timestamp attribute: ISO 8601 without a zone (the XSD pattern), in UTC when a zone was given."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(timezone.utc).replace(tzinfo=None)
    return parsed.strftime("%Y-%m-%dT%H:%M:%S")


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def md(value: Any) -> str:
    """Markdown-escape untrusted text for a table cell or a list item (one line, control characters dropped)."""
    text = " ".join(_XML_ILLEGAL.sub(" ", str(value)).split())
    return _MD_SPECIAL.sub(r"\\\1", text)


def to_markdown(report: Mapping[str, Any]) -> str:
    """A Markdown summary: overview table, failed/excluded nodes with reasons, link faults, bandwidth tables, rounds."""
    plat, gpu, totals = report["platform"], report["gpu"], report["totals"]
    out = ["# GPU cluster certification: %s" % report["result"], ""]
    out.append("| | |")
    out.append("|---|---|")
    out.append("| Result | **%s**: %s |" % (report["result"], md(report["result_reason"])))
    platform = ", ".join(md(plat[k]) for k in ("name", "service") if plat.get(k))
    if plat.get("kubernetes_version"):
        platform += (", " if platform else "") + "Kubernetes " + md(plat["kubernetes_version"])
    out.append("| Platform | %s |" % (platform or "-"))
    gpu_text = md(gpu["product"]) if gpu.get("product") else "-"
    if gpu.get("count_per_node") is not None:
        gpu_text += " x %d per node" % gpu["count_per_node"]
        if totals.get("gpus") is not None:
            gpu_text += " (%d GPUs)" % totals["gpus"]
    versions = software_versions(gpu)
    if versions:
        gpu_text += "; " + ", ".join("%s %s" % (label, md(version)) for label, version in versions)
    out.append("| GPU | %s |" % gpu_text)
    out.append("| Nodes | %d total: %d passed, %d failed, %d excluded |" % (totals["nodes"], totals["passed"], totals["failed"], totals["excluded"]))
    if report.get("started") or report.get("finished"):
        out.append("| Run | %s to %s |" % (md(report.get("started") or "?"), md(report.get("finished") or "?")))
    durations = report["durations"]
    took = format_seconds(durations.get("total_s"))
    if durations.get("ansible_overhead_s") is not None:
        took += " (Ansible overhead %s)" % format_seconds(durations["ansible_overhead_s"])
    out.append("| Duration | %s |" % took)
    iso = report["isolation"]
    if iso["rounds"] or iso["tests"]:
        out.append("| Isolation | %d round(s), %d test(s) |" % (iso["rounds"], iso["tests"]))
    out.append("")
    for verdict, title in (("failed", "Failed nodes"), ("excluded", "Excluded nodes")):
        rows = [(n, v) for n, v in report["nodes"].items() if v["verdict"] == verdict]
        if rows:
            out += ["## %s" % title, "", "| Node | Reasons |", "|---|---|"]
            out += ["| %s | %s |" % (md(n), "<br>".join(md(r) for r in v["reasons"])) for n, v in rows]
            out.append("")
    if report["link_faults"]:
        out += ["## Link faults", "", "| Status | Domains | Nodes | Detail |", "|---|---|---|---|"]
        for link in report["link_faults"]:
            out.append("| %s | %s | %s | %s |" % (
                link["status"], md(" - ".join(link["domains"])) or "-", md(", ".join(link["nodes"])) or "-", md(link["message"])))
        out.append("")
    if report["categories"]:
        out += ["## Categories", "",
                "| Category | Status | Passed | Failed | Excluded | Skipped | Threshold | Median | Peak busbw | Duration |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for cat, info in report["categories"].items():
            th = info["threshold"]
            out.append("| %s | %s | %d | %d | %d | %d | %s | %s | %s | %s |" % (
                md(cat), info["status"], info["nodes"]["passed"], info["nodes"]["failed"], info["nodes"]["excluded"],
                info["nodes"]["skipped"], format_gbps(th.get("limit")), format_gbps(th.get("median")),
                format_gbps(info["peak_busbw_gbps"]), format_seconds(info.get("duration_s"))))
        out.append("")
        with_sizes = [c for c, i in report["categories"].items() if i["bandwidth_by_size"]]
        if with_sizes:
            sizes = sorted({p["bytes"] for c in with_sizes for p in report["categories"][c]["bandwidth_by_size"]})
            out += ["## Bus bandwidth by message size (GB/s)", "",
                    "| Size | %s |" % " | ".join(md(c) for c in with_sizes),
                    "|---:|%s|" % "|".join(["---:"] * len(with_sizes))]
            lookup = {c: {p["bytes"]: p["busbw_gbps"] for p in report["categories"][c]["bandwidth_by_size"]} for c in with_sizes}
            for size in sizes:
                out.append("| %s | %s |" % (format_size(size), " | ".join(format_gbps(lookup[c].get(size), unit=False) for c in with_sizes)))
            out.append("")
    if report["failed_groups"]:
        out += ["## Failed groups", "", "| Group | Nodes | Reason |", "|---|---|---|"]
        for group in report["failed_groups"]:
            out.append("| %s | %s | %s |" % (md(group["id"]), md(", ".join(group["nodes"])), md(group["reason"])))
        out.append("")
    if iso["round_summary"]:
        out += ["## Isolation rounds", "", "| Round | Tests | Passed | Failed | Condemned |", "|---:|---:|---:|---:|---|"]
        for rnd in iso["round_summary"]:
            passed = sum(1 for t in rnd["tests"] if t["outcome"] == "passed")
            failed = sum(1 for t in rnd["tests"] if t["outcome"] == "failed")
            condemned = md(", ".join(rnd["condemned"])) or "-"
            out.append("| %d | %d | %d | %d | %s |" % (rnd["round"], len(rnd["tests"]), passed, failed, condemned))
        out.append("")
    if report["warnings"]:
        out += ["## Warnings", ""] + ["- %s" % md(w) for w in report["warnings"]] + [""]
    return "\n".join(out)


RENDERERS = {"json": to_json, "junit": to_junit, "markdown": to_markdown, "html": to_html}


def render_formats(report: Mapping[str, Any], formats: Iterable[str] = FORMATS) -> Dict[str, str]:
    """``{format: text}`` for each requested format (json, junit, markdown, html)."""
    out = {}
    for fmt in formats:
        if fmt not in RENDERERS:
            raise CertifyReportError("unknown report format; use %s" % ", ".join(FORMATS), field="formats", value=fmt)
        out[fmt] = RENDERERS[fmt](report)
    return out
