# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The certification report as one self-contained HTML page: inline CSS and inline SVG charts, no script,
no external asset (a Content-Security-Policy meta tag forbids loading any).

Charts: bus bandwidth against message size for every category (log2 x-axis), per-node bandwidth of each
category against its threshold (failed bars highlighted), and the isolation rounds as a timeline table.
Every piece of text from the report (node names, reasons, log excerpts) is HTML-escaped: it is untrusted.

Entry point: :func:`to_html` (takes the document built by :func:`report_model.build_report`); sizes, bandwidths
and durations are written by the formatters of :mod:`report_format`, shared with the other renderers.
"""
from __future__ import annotations

import math
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import PAGE_CSS as _CSS
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import PALETTE
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import escape_html as _e
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import format_tick as _fmt_tick
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import nice_axis as _nice_max
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_format import (
    format_gbps, format_seconds, format_size, software_versions)

RESULT_COLOURS = {"PASSED": "#1a7f37", "INCOMPLETE": "#9a6700", "FAILED": "#cf222e"}
STATUS_CLASS = {"passed": "ok", "failed": "bad", "excluded": "warn", "skipped": "muted", "pending": "muted"}
BAR_OK, BAR_FAILED, BAR_EXCLUDED = "#4c78a8", "#cf222e", "#bf8700"
MAX_LABELLED_BARS = 48


def line_chart_svg(series: Sequence[Tuple[str, Sequence[Tuple[int, float]]]], title: str, width: int = 960, height: int = 340) -> str:
    """SVG line chart of busbw (GB/s) against message size (bytes) on a log2 x-axis, one line per series."""
    left, right, top, bottom = 64, 190, 16, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [math.log2(x) for _name, points in series for x, _y in points]
    ys = [y for _name, points in series for _x, y in points]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (20.0, 33.0)
    if x_hi - x_lo < 1:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    y_max, y_step = _nice_max(max(ys) if ys else 0.0)

    def px(log_x: float) -> float:
        return left + (log_x - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return top + plot_h - y / y_max * plot_h

    out = ['<svg class="line-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
           'aria-label="%s">' % (width, height, width, height, _e(title)), "<title>%s</title>" % _e(title)]
    ticks = int(round(y_max / y_step))
    for i in range(ticks + 1):
        y = i * y_step
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d8dee4"/>' % (left, py(y), left + plot_w, py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, py(y) + 4, _fmt_tick(y)))
    exponents = list(range(int(math.ceil(x_lo)), int(math.floor(x_hi)) + 1))
    stride = max(1, int(math.ceil(len(exponents) / 14.0)))
    for exp in exponents[::stride]:
        x = px(exp)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eef1f4"/>' % (x, top, x, top + plot_h))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, top + plot_h + 16, _e(format_size(2 ** exp))))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#57606a"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#57606a"/>' % (left, top, left, top + plot_h))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">message size (log2 scale)</text>' % (left + plot_w / 2, height - 8))
    out.append('<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">bus bandwidth (GB/s)</text>' % (top + plot_h / 2))
    for index, (name, points) in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        coords = [(px(math.log2(x)), py(y), x, y) for x, y in points]
        out.append('<g class="series"><title>%s</title>' % _e(name))
        if len(coords) > 1:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                       % (colour, " ".join("%.1f,%.1f" % (cx, cy) for cx, cy, _x, _y in coords)))
        for cx, cy, x, y in coords:
            out.append('<circle class="point" data-series="%s" data-bytes="%d" data-busbw="%s" cx="%.1f" cy="%.1f" r="3" fill="%s">'
                       '<title>%s: %s at %s</title></circle>'
                       % (_e(name), x, _e(format_gbps(y, unit=False)), cx, cy, colour, _e(name), _e(format_gbps(y)), _e(format_size(x))))
        ly = top + 10 + index * 18
        out.append('<rect x="%d" y="%d" width="14" height="4" fill="%s"/>' % (left + plot_w + 14, ly - 4, colour))
        label = name if len(name) <= 24 else name[:23] + "\u2026"
        out.append('<text x="%d" y="%d">%s</text></g>' % (left + plot_w + 34, ly + 2, _e(label)))
    out.append("</svg>")
    return "".join(out)


def bar_chart_svg(values: Mapping[str, float], statuses: Mapping[str, str], limit: Optional[float], median: Optional[float],
                  title: str, width: int = 960, height: int = 300) -> str:
    """SVG bar chart of per-node busbw with the threshold (dashed red) and median (dotted grey) lines.

    A bar is red when the node's status in this category is ``failed`` (or, without a status, below the limit),
    amber when excluded. Node names label the x-axis up to :data:`MAX_LABELLED_BARS` bars; every bar has a tooltip.
    """
    names = list(values)
    labelled = len(names) <= MAX_LABELLED_BARS
    left, right, top = 64, 120, 22
    bottom = 76 if labelled else 34
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(list(values.values()) + [limit or 0.0, median or 0.0])
    y_max, y_step = _nice_max(peak * 1.05)

    def py(y: float) -> float:
        return top + plot_h - y / y_max * plot_h

    out = ['<svg class="bar-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
           'aria-label="%s">' % (width, height, width, height, _e(title)), "<title>%s</title>" % _e(title)]
    for i in range(int(round(y_max / y_step)) + 1):
        y = i * y_step
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d8dee4"/>' % (left, py(y), left + plot_w, py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, py(y) + 4, _fmt_tick(y)))
    slot = plot_w / max(1, len(names))
    gap = min(4.0, slot * 0.2)
    for index, name in enumerate(names):
        value = values[name]
        status = statuses.get(name) or ("failed" if limit is not None and value < limit else "passed")
        colour = BAR_FAILED if status == "failed" else BAR_EXCLUDED if status == "excluded" else BAR_OK
        x = left + index * slot + gap / 2
        out.append('<rect class="bar %s" data-node="%s" x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s: %s (%s)</title></rect>'
                   % (_e(status), _e(name), x, py(value), max(0.5, slot - gap), py(0) - py(value), colour, _e(name), _e(format_gbps(value)), _e(status)))
        if labelled:
            cx = x + (slot - gap) / 2
            label = name if len(name) <= 18 else name[:17] + "\u2026"
            out.append('<text transform="translate(%.1f %d) rotate(-45)" text-anchor="end">%s</text>' % (cx + 3, top + plot_h + 12, _e(label)))
    if not labelled:
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d nodes (hover a bar for its name)</text>'
                   % (left + plot_w / 2, top + plot_h + 22, len(names)))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#57606a"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#57606a"/>' % (left, top, left, top + plot_h))
    out.append('<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">GB/s</text>' % (top + plot_h / 2))
    if median is not None:
        out.append('<line class="median" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#57606a" stroke-dasharray="2 3"/>'
                   % (left, py(median), left + plot_w, py(median)))
        label_y = py(median) + 4 if limit is None or abs(py(median) - py(limit)) > 30 else py(limit) - 30
        label_y = max(float(top) + 6, label_y)
        out.append('<text x="%d" y="%.1f" style="fill:#57606a">median</text><text x="%d" y="%.1f" style="fill:#57606a">%s</text>'
                   % (left + plot_w + 6, label_y - 6, left + plot_w + 6, label_y + 7, _e(format_gbps(median))))
    if limit is not None:
        out.append('<line class="threshold" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>'
                   % (left, py(limit), left + plot_w, py(limit), BAR_FAILED))
        out.append('<text x="%d" y="%.1f" style="fill:%s;font-weight:600">threshold</text>'
                   '<text x="%d" y="%.1f" style="fill:%s">%s</text>'
                   % (left + plot_w + 6, py(limit) - 2, BAR_FAILED, left + plot_w + 6, py(limit) + 11, BAR_FAILED, _e(format_gbps(limit))))
    out.append("</svg>")
    return "".join(out)


def _card(key: str, value: str) -> str:
    return '<div class="card"><div class="k">%s</div><div class="v">%s</div></div>' % (_e(key), value)


def _reasons(reasons: Sequence[str]) -> str:
    if len(reasons) == 1:
        return _e(reasons[0])
    return '<ul class="reasons">%s</ul>' % "".join("<li>%s</li>" % _e(r) for r in reasons)


def _overview(report: Mapping[str, Any]) -> List[str]:
    plat, gpu, totals = report["platform"], report["gpu"], report["totals"]
    platform = " / ".join(_e(plat[k]) for k in ("name", "service") if plat.get(k)) or "-"
    if plat.get("kubernetes_version"):
        platform += "<br>Kubernetes %s" % _e(plat["kubernetes_version"])
    gpu_text = _e(gpu.get("product") or "-")
    if gpu.get("count_per_node") is not None:
        gpu_text += "<br>%d per node" % gpu["count_per_node"]
        if totals.get("gpus") is not None:
            gpu_text += ", %d in all" % totals["gpus"]
    for label, version in software_versions(gpu):
        gpu_text += "<br>%s %s" % (_e(label), _e(version))
    nodes = ('%d total<br><span class="ok">%d passed</span>, <span class="bad">%d failed</span>, <span class="warn">%d excluded</span>'
             % (totals["nodes"], totals["passed"], totals["failed"], totals["excluded"]))
    durations = report["durations"]
    took = _e(format_seconds(durations.get("total_s")))
    if durations.get("ansible_overhead_s") is not None:
        took += "<br>Ansible overhead %s" % _e(format_seconds(durations["ansible_overhead_s"]))
    run = "%s<br>to %s" % (_e(report.get("started") or "?"), _e(report.get("finished") or "?"))
    iso = report["isolation"]
    cards = [_card("Platform", platform), _card("GPU", gpu_text), _card("Nodes", nodes), _card("Duration", took), _card("Run", run)]
    if iso["rounds"] or iso["tests"]:
        cards.append(_card("Isolation", "%d round(s)<br>%d test(s)" % (iso["rounds"], iso["tests"])))
    if totals.get("link_faults") or totals.get("suspect_links"):
        cards.append(_card("Links", '<span class="bad">%d faulty</span>, <span class="warn">%d suspect</span>'
                           % (totals["link_faults"], totals["suspect_links"])))
    return ['<div class="cards">%s</div>' % "".join(cards)]


def _problem_nodes(report: Mapping[str, Any]) -> List[str]:
    out: List[str] = []
    for verdict, title in (("failed", "Failed nodes"), ("excluded", "Excluded nodes")):
        rows = [(n, v) for n, v in report["nodes"].items() if v["verdict"] == verdict]
        if rows:
            out.append('<h2 id="%s">%s (%d)</h2>' % (verdict, title, len(rows)))
            out.append("<table><tr><th>Node</th><th>Reasons</th></tr>")
            out.extend('<tr><td class="%s">%s</td><td>%s</td></tr>' % (STATUS_CLASS[verdict], _e(n), _reasons(v["reasons"])) for n, v in rows)
            out.append("</table>")
    if report["link_faults"]:
        out.append('<h2 id="links">Link faults</h2><table><tr><th>Status</th><th>Domains</th><th>Nodes</th><th>Detail</th></tr>')
        for link in report["link_faults"]:
            cls = "bad" if link["status"] == "faulty" else "warn"
            out.append('<tr><td class="%s">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>'
                       % (cls, _e(link["status"]), _e(" \u2013 ".join(link["domains"]) or "-"), _e(", ".join(link["nodes"]) or "-"),
                          _e(link["message"])))
        out.append("</table>")
    return out


def _categories(report: Mapping[str, Any]) -> List[str]:
    cats = report["categories"]
    if not cats:
        return []
    out = ['<h2 id="categories">Categories</h2>',
           '<table><tr><th>Category</th><th>Status</th><th class="num">Passed</th><th class="num">Failed</th>'
           '<th class="num">Excluded</th><th class="num">Skipped</th><th class="num">Threshold</th><th class="num">Median</th>'
           '<th class="num">Peak busbw</th><th class="num">Duration</th></tr>']
    for cat, info in cats.items():
        th = info["threshold"]
        out.append('<tr><td>%s</td><td class="%s">%s</td><td class="num">%d</td><td class="num">%d</td><td class="num">%d</td>'
                   '<td class="num">%d</td><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td></tr>'
                   % (_e(cat), STATUS_CLASS[info["status"]], _e(info["status"]), info["nodes"]["passed"], info["nodes"]["failed"],
                      info["nodes"]["excluded"], info["nodes"]["skipped"], _e(format_gbps(th.get("limit"))),
                      _e(format_gbps(th.get("median"))), _e(format_gbps(info["peak_busbw_gbps"])), _e(format_seconds(info.get("duration_s")))))
    out.append("</table>")
    series = [(cat, [(p["bytes"], p["busbw_gbps"]) for p in info["bandwidth_by_size"]]) for cat, info in cats.items() if info["bandwidth_by_size"]]
    if series:
        out.append('<h2 id="bandwidth">Bus bandwidth by message size</h2>')
        out.append('<div class="chart">%s</div>' % line_chart_svg(series, "Bus bandwidth (GB/s) by message size, per category"))
    with_nodes = [(cat, info) for cat, info in cats.items() if info["per_node"]]
    if with_nodes:
        out.append('<h2 id="per-node">Per-node bandwidth against the threshold</h2>')
    for cat, info in with_nodes:
        th = info["threshold"]
        statuses = {n: r["categories"][cat]["status"] for n, r in report["nodes"].items() if cat in r["categories"]}
        parts = []
        if th.get("floor") is not None:
            parts.append("floor %s" % format_gbps(th["floor"]))
        if th.get("relative_fraction") is not None and th.get("median") is not None:
            parts.append("%g x median %s" % (th["relative_fraction"], format_gbps(th["median"])))
        below = sum(1 for n, v in info["per_node"].items() if statuses.get(n) == "failed")
        out.append("<h3>%s</h3><p>Threshold %s%s; %d of %d node(s) failed.</p>"
                   % (_e(cat), _e(format_gbps(th.get("limit"))), (" (" + _e(", ".join(parts)) + ")") if parts else "", below, len(info["per_node"])))
        out.append('<div class="chart">%s</div>' % bar_chart_svg(info["per_node"], statuses, th.get("limit"), th.get("median"),
                                                                 "Per-node bus bandwidth for %s" % cat))
    return out


def _isolation(report: Mapping[str, Any]) -> List[str]:
    iso = report["isolation"]
    out: List[str] = []
    if report["failed_groups"]:
        out.append('<h2 id="groups">Failed groups</h2><table><tr><th>Group</th><th>Nodes</th><th>Reason</th></tr>')
        out.extend("<tr><td>%s</td><td>%s</td><td>%s</td></tr>" % (_e(g["id"]), _e(", ".join(g["nodes"])), _e(g["reason"]))
                   for g in report["failed_groups"])
        out.append("</table>")
    if not iso["round_summary"]:
        if iso["rounds"] or iso["tests"]:
            out.append('<h2 id="isolation">Isolation</h2><p>%d round(s), %d test(s); no trace was recorded.</p>' % (iso["rounds"], iso["tests"]))
        return out
    out.append('<h2 id="isolation">Isolation rounds</h2>')
    finish = iso.get("finish_reason")
    out.append("<p>%d round(s), %d test(s)%s. Each chip is one group test (green passed, red failed); hover it for its nodes.</p>"
               % (iso["rounds"], iso["tests"], "; finished: " + _e(finish) if finish else ""))
    out.append('<table class="timeline"><tr><th class="num">Round</th><th>Tests</th><th>Condemned</th><th>Cleared</th></tr>')
    for rnd in iso["round_summary"]:
        chips = []
        for test in rnd["tests"]:
            tip = "%s (%s) on %s" % (test["id"], test["purpose"], ", ".join(test["nodes"]))
            if test["busbw"] is not None:
                tip += ": %s" % format_gbps(test["busbw"])
            if test["reason"]:
                tip += " - " + test["reason"]
            chips.append('<span class="chip %s" title="%s">%s \u00b7 %d node(s)</span>'
                         % (STATUS_CLASS.get(test["outcome"], "muted"), _e(tip), _e(test["purpose"] or test["id"]), len(test["nodes"])))
        out.append('<tr><td class="num">%d</td><td>%s</td><td%s>%s</td><td>%s</td></tr>'
                   % (rnd["round"], "".join(chips), ' class="bad"' if rnd["condemned"] else "", _e(", ".join(rnd["condemned"])),
                      _e(", ".join(rnd["cleared"]))))
    out.append("</table>")
    return out


def _node_matrix(report: Mapping[str, Any]) -> List[str]:
    nodes, cats = report["nodes"], list(report["categories"])
    if not nodes:
        return ['<h2 id="nodes">Nodes</h2><p>No node was certified.</p>']
    out = ['<h2 id="nodes">All nodes</h2><table><tr><th>Node</th><th>Verdict</th>%s<th>Reasons</th></tr>'
           % "".join("<th>%s</th>" % _e(c) for c in cats)]
    for name, info in nodes.items():
        cells = []
        for cat in cats:
            result = info["categories"].get(cat)
            if result is None:
                cells.append('<td class="muted">-</td>')
                continue
            text = result["status"]
            if result.get("value") is not None:
                text += " (%g%s)" % (result["value"], " " + result["unit"] if result.get("unit") else "")
            tip = ' title="%s"' % _e(result["reason"]) if result.get("reason") else ""
            cells.append('<td class="%s"%s>%s</td>' % (STATUS_CLASS[result["status"]], tip, _e(text)))
        out.append('<tr><td>%s</td><td class="%s">%s</td>%s<td>%s</td></tr>'
                   % (_e(name), STATUS_CLASS[info["verdict"]], _e(info["verdict"]), "".join(cells),
                      _reasons(info["reasons"]) if info["reasons"] else ""))
    out.append("</table>")
    return out


def _durations(report: Mapping[str, Any]) -> List[str]:
    per = report["durations"]["per_category"]
    if not per:
        return []
    out = ['<h2 id="durations">Durations</h2><table><tr><th>Category</th><th class="num">Time</th></tr>']
    out.extend('<tr><td>%s</td><td class="num">%s</td></tr>' % (_e(c), _e(format_seconds(s))) for c, s in per.items())
    out.append("</table>")
    return out


def to_html(report: Mapping[str, Any]) -> str:
    """The whole page (UTF-8 text)."""
    result = str(report["result"])
    colour = RESULT_COLOURS.get(result, "#57606a")
    body: List[str] = ['<header><h1>GPU cluster certification</h1>',
                       '<span class="badge result" style="background:%s">%s</span>' % (colour, _e(result)),
                       '<p class="reason">%s</p></header>' % _e(report["result_reason"])]
    body += _overview(report)
    body += _problem_nodes(report)
    body += _categories(report)
    body += _isolation(report)
    body += _node_matrix(report)
    body += _durations(report)
    if report.get("warnings"):
        body.append('<h2 id="warnings">Warnings</h2><ul>%s</ul>' % "".join("<li>%s</li>" % _e(w) for w in report["warnings"]))
    body.append("<footer>Report schema %s. Generated by dsxos.cluster certify_report.</footer>" % _e(report.get("schema", "")))
    title = "GPU cluster certification: %s" % result
    if report["platform"].get("name"):
        title += " (%s)" % report["platform"]["name"]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n%s\n</main>\n</body>\n</html>\n"
            % (_e(title), _CSS.strip(), "\n".join(body)))
