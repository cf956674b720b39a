# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The fleet status report (:func:`.fleet_status.build_report`) as JSON, Markdown and one self-contained HTML page.

The HTML page has inline CSS and inline SVG charts, no script and no external asset (a Content-Security-Policy meta
tag forbids loading any), like the certification report whose escaping, palette, axis helpers and CSS it reuses:
availability per time bucket (a line, one ``circle.point`` per bucket), GPU-hours per bucket (stacked bars, one
``rect.bar`` per bucket and kind), availability per node (one ``rect.node-bar`` per node) and the useful-work share
(``rect.share``). Every text from the cluster (node names, reasons) is escaped: it is untrusted.

:func:`write_report` writes the files atomically, each only when its content changed (the report holds no
generation time: its ``window.end`` is the input ``now``).
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_format import format_seconds
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_storage import write_report_files
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import PAGE_CSS as _CSS
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import PALETTE
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import escape_html as _e
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import format_tick as _fmt_tick
from ansible_collections.dsxos.cluster.plugins.module_utils.common.html_page import nice_axis as _nice_max

FORMATS = ("json", "markdown", "html")
DEFAULT_BASENAME = "fleet-status"
WORK_KINDS = (("succeeded", "completed work", "#1a7f37"), ("lost_faults", "lost to faults", "#cf222e"),
              ("lost_quarantine", "lost to quarantine", "#bf8700"))
_EXTRA_CSS = ".legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px}"


def to_json(report: Mapping[str, Any]) -> str:
    """Stable JSON (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else "%.2f %%" % (100.0 * value)


def _num(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else ("%.*f" % (digits, value))


def _md(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def to_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: fleet numbers, the useful-work measure, quarantined nodes, incidents, nodes."""
    fleet, work, window = report["fleet"], report["work"], report["window"]
    hours = work["gpu_hours"]
    lines = ["# Fleet status", "", f"Window {window['start']} .. {window['end']} ({format_seconds(window['seconds'])}).", "",
             "| measure | value |", "|---|---|",
             f"| nodes (with GPUs) | {fleet['nodes']} ({fleet['gpu_nodes']}) |", f"| GPUs | {_num(fleet['gpus'], 0)} |",
             f"| quarantined now | {fleet['quarantined']} |", f"| availability | {_pct(fleet['availability'])} |",
             f"| incidents (open / returned / released) | {fleet['incidents']['in_window']} ({fleet['incidents']['open']} / "
             f"{fleet['incidents']['returned']} / {fleet['incidents']['released']}) |",
             f"| time to quarantine (mean / p90) | {format_seconds(fleet['ttq']['mean_s'])} / {format_seconds(fleet['ttq']['p90_s'])} |",
             f"| time to return, MTTR (mean / p90) | {format_seconds(fleet['mttr']['mean_s'])} / {format_seconds(fleet['mttr']['p90_s'])} |",
             f"| remediation attempts | {fleet['remediation_attempts']} |", "",
             "## Useful work", "", "| GPU-hours | value |", "|---|---|",
             f"| completed successfully | {_num(hours['succeeded'])} |", f"| lost to faults | {_num(hours['lost_faults'])} |",
             f"| lost to quarantine | {_num(hours['lost_quarantine'])} |", f"| failed, not a fault | {_num(hours['failed_other'])} |",
             f"| running (not counted yet) | {_num(hours['running'])} |", f"| **useful fraction** | **{_pct(work['useful_fraction'])}** |", ""]
    lines += ["## Quarantined nodes", ""]
    if report["quarantined"]:
        lines += ["| node | state | incident | reason | since | attempts |", "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(_md(r.get(k)) for k in ("node", "state", "incident", "reason", "since", "attempts")) + " |"
                  for r in report["quarantined"]]
    else:
        lines.append("None.")
    lines += ["", "## Incidents", ""]
    if report["incidents"]:
        lines += ["| node | incident | action | state | first alert | quarantined | ended | TTQ | TTR |", "|---|---|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join([_md(i["node"]), _md(i["id"]), _md(i["action"]), _md(i["state"]), _md(i["first_alert_at"]),
                                     _md(i["quarantined_at"]), _md(i["ended_at"]), format_seconds(i["ttq_s"]), format_seconds(i["ttr_s"])]) + " |"
                  for i in report["incidents"]]
    else:
        lines.append("None in the window.")
    lines += ["", "## Nodes", "", "| node | GPUs | availability | quarantined | incidents | attempts | GPU-h completed | GPU-h lost |",
              "|---|---|---|---|---|---|---|---|"]
    for row in report["nodes"]:
        lost = row["gpu_hours"]["lost_faults"] + row["gpu_hours"]["lost_quarantine"]
        cells = [_md(row["node"]), _num(row["gpus"], 0), _pct(row["availability"]), format_seconds(row["quarantined_s"]), str(row["incidents"]),
                 str(row["remediation_attempts"]), _num(row["gpu_hours"]["succeeded"]), _num(lost)]
        lines.append("| " + " | ".join(cells) + " |")
    if report.get("problems"):
        lines += ["", "## Problems", ""] + [f"- {_md(p)}" for p in report["problems"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------- HTML charts


def _svg_open(cls: str, width: int, height: int, title: str) -> List[str]:
    return ['<svg class="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">'
            % (cls, width, height, width, height, _e(title)), "<title>%s</title>" % _e(title)]


def availability_chart_svg(timeline: Sequence[Mapping[str, Any]], width: int = 960, height: int = 300) -> str:  # pylint: disable=too-many-locals
    """Fleet availability (percent) per bucket: a line with one ``circle.point`` per bucket that has nodes."""
    left, right, top, bottom = 64, 24, 16, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    count = max(1, len(timeline))

    def px(index: int) -> float:
        return left + (index + 0.5) / count * plot_w

    def py(pct: float) -> float:
        return top + plot_h - pct / 100.0 * plot_h

    out = _svg_open("availability-chart", width, height, "Fleet availability per time bucket")
    for pct in range(0, 101, 20):
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d8dee4"/>' % (left, py(pct), left + plot_w, py(pct)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%d %%</text>' % (left - 6, py(pct) + 4, pct))
    stride = max(1, -(-count // 8))
    for index in range(0, len(timeline), stride):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (px(index), top + plot_h + 16, _e(str(timeline[index]["start"])[:16])))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#57606a"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">availability</text>' % (top + plot_h / 2))
    points = [(px(i), py(100.0 * b["availability"]), i, b) for i, b in enumerate(timeline) if b.get("availability") is not None]
    if len(points) > 1:
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (PALETTE[0], " ".join("%.1f,%.1f" % (x, y) for x, y, _i, _b in points)))
    for x, y, index, bucket in points:
        out.append('<circle class="point" data-bucket="%d" data-availability="%.6f" cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s .. %s: %s</title></circle>'
                   % (index, bucket["availability"], x, y, PALETTE[0], _e(bucket["start"]), _e(bucket["end"]), _e(_pct(bucket["availability"]))))
    out.append("</svg>")
    return "".join(out)


def work_chart_svg(timeline: Sequence[Mapping[str, Any]], width: int = 960, height: int = 300) -> str:  # pylint: disable=too-many-locals
    """GPU-hours per bucket as stacked bars: completed (green), lost to faults (red), lost to quarantine (amber)."""
    left, right, top, bottom = 64, 24, 16, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(b["gpu_hours"][k] for k, _l, _c in WORK_KINDS) for b in timeline]
    y_max, y_step = _nice_max(max(totals or [0.0]))

    def py(value: float) -> float:
        return top + plot_h - value / y_max * plot_h

    out = _svg_open("work-chart", width, height, "GPU-hours per time bucket")
    for i in range(int(round(y_max / y_step)) + 1):
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d8dee4"/>' % (left, py(i * y_step), left + plot_w, py(i * y_step)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, py(i * y_step) + 4, _fmt_tick(i * y_step)))
    slot = plot_w / max(1, len(timeline))
    gap = min(4.0, slot * 0.2)
    for index, bucket in enumerate(timeline):
        base = 0.0
        for kind, label, colour in WORK_KINDS:
            value = float(bucket["gpu_hours"][kind])
            out.append('<rect class="bar %s" data-bucket="%d" data-kind="%s" data-gpu-hours="%.4f" x="%.2f" y="%.1f" width="%.2f" height="%.1f" '
                       'fill="%s"><title>%s .. %s: %.2f GPU-hours %s</title></rect>'
                       % (kind, index, kind, value, left + index * slot + gap / 2, py(base + value), max(0.5, slot - gap),
                          py(base) - py(base + value), colour, _e(bucket["start"]), _e(bucket["end"]), value, _e(label)))
            base += value
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#57606a"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">GPU-hours</text>' % (top + plot_h / 2))
    out.append("</svg>")
    return "".join(out)


def node_chart_svg(nodes: Sequence[Mapping[str, Any]], width: int = 960) -> str:  # pylint: disable=too-many-locals
    """Availability per node, one horizontal ``rect.node-bar`` each (red below 99 %)."""
    row, left, right, top = 18, 200, 80, 8
    height = top * 2 + row * max(1, len(nodes))
    plot_w = width - left - right
    out = _svg_open("node-chart", width, height, "Availability per node")
    for index, node in enumerate(nodes):
        avail = node.get("availability")
        value = 0.0 if avail is None else float(avail)
        y = top + index * row
        colour = "#cf222e" if value < 0.99 else "#4c78a8"
        name = str(node["node"])
        label = name if len(name) <= 28 else name[:27] + "\u2026"
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, y + 12, _e(label)))
        out.append('<rect class="node-bar" data-node="%s" data-availability="%s" x="%d" y="%d" width="%.2f" height="%d" fill="%s">'
                   '<title>%s: %s</title></rect>' % (_e(name), "" if avail is None else "%.6f" % value, left, y + 2, max(0.5, value * plot_w),
                                                     row - 4, colour, _e(name), _e(_pct(avail))))
        out.append('<text x="%.1f" y="%d">%s</text>' % (left + max(0.5, value * plot_w) + 4, y + 12, _e(_pct(avail))))
    out.append("</svg>")
    return "".join(out)


def share_chart_svg(gpu_hours: Mapping[str, float], width: int = 960, height: int = 40) -> str:
    """The useful-work measure as one stacked bar: completed against lost to faults and to quarantine."""
    total = sum(float(gpu_hours[k]) for k, _l, _c in WORK_KINDS)
    out = _svg_open("share-chart", width, height, "GPU-hours completed against lost")
    x = 0.0
    for kind, label, colour in WORK_KINDS:
        part = 0.0 if total <= 0 else float(gpu_hours[kind]) / total
        out.append('<rect class="share %s" data-kind="%s" data-fraction="%.6f" x="%.2f" y="4" width="%.2f" height="%d" fill="%s"><title>%s: %.2f GPU-hours'
                   ' (%s)</title></rect>' % (kind, kind, part, x, part * width, height - 8, colour, _e(label), float(gpu_hours[kind]), _e(_pct(part))))
        x += part * width
    out.append("</svg>")
    return "".join(out)


def _card(key: str, value: str) -> str:
    return '<div class="card"><div class="k">%s</div><div class="v">%s</div></div>' % (_e(key), _e(value))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], cls: str) -> str:
    head = "".join("<th>%s</th>" % _e(h) for h in headers)
    body = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % _e("" if c is None else c) for c in row) for row in rows)
    return '<table class="%s"><thead><tr>%s</tr></thead><tbody>%s</tbody></table>' % (cls, head, body)


def to_html(report: Mapping[str, Any]) -> str:
    """The whole page (UTF-8 text)."""
    fleet, work, window = report["fleet"], report["work"], report["window"]
    hours = work["gpu_hours"]
    body: List[str] = ["<header><h1>Fleet status</h1>", '<p class="reason">Window %s .. %s (%s)</p></header>'
                       % (_e(window["start"]), _e(window["end"]), _e(format_seconds(window["seconds"])))]
    body.append('<div class="cards">%s</div>' % "".join([
        _card("availability", _pct(fleet["availability"])), _card("useful work", _pct(work["useful_fraction"])),
        _card("quarantined", "%d of %d nodes" % (fleet["quarantined"], fleet["nodes"])),
        _card("GPU-hours completed", _num(hours["succeeded"])), _card("GPU-hours lost", _num(hours["lost_faults"] + hours["lost_quarantine"])),
        _card("time to quarantine", format_seconds(fleet["ttq"]["mean_s"])), _card("MTTR", format_seconds(fleet["mttr"]["mean_s"])),
        _card("remediation attempts", str(fleet["remediation_attempts"]))]))
    legend = '<p class="legend">%s</p>' % "".join('<span><i style="background:%s"></i>%s</span>' % (c, _e(label)) for _k, label, c in WORK_KINDS)
    body += ['<h2 id="useful-work">Useful work</h2>', legend, '<div class="chart">%s</div>' % share_chart_svg(hours),
             '<div class="chart">%s</div>' % work_chart_svg(report["timeline"]),
             '<h2 id="availability">Availability</h2>', '<div class="chart">%s</div>' % availability_chart_svg(report["timeline"])]
    body.append('<h2 id="quarantined">Quarantined nodes</h2>')
    body.append(_table(["node", "state", "incident", "reason", "since", "attempts"],
                       [[r.get(k) for k in ("node", "state", "incident", "reason", "since", "attempts")] for r in report["quarantined"]], "quarantined")
                if report["quarantined"] else "<p>None.</p>")
    body.append('<h2 id="incidents">Incidents</h2>')
    body.append(_table(["node", "incident", "action", "state", "first alert", "quarantined", "ended", "TTQ", "TTR"],
                       [[i["node"], i["id"], i["action"], i["state"], i["first_alert_at"], i["quarantined_at"], i["ended_at"],
                         format_seconds(i["ttq_s"]), format_seconds(i["ttr_s"])] for i in report["incidents"]], "incidents")
                if report["incidents"] else "<p>None in the window.</p>")
    body += ['<h2 id="nodes">Nodes</h2>', '<div class="chart">%s</div>' % node_chart_svg(report["nodes"])]
    if report.get("problems"):
        body.append('<h2 id="problems">Problems</h2><ul>%s</ul>' % "".join("<li>%s</li>" % _e(p) for p in report["problems"]))
    body.append("<footer>Generated by dsxos.cluster fleet_status; formulas in docs/operate-status.md.</footer>")
    title = "Fleet status: %s available, %s useful work" % (_pct(fleet["availability"]), _pct(work["useful_fraction"]))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n<style>%s%s</style>\n</head>\n<body>\n<main>\n%s\n</main>\n</body>\n</html>\n"
            % (_e(title), _CSS.strip(), _EXTRA_CSS, "\n".join(body)))


RENDERERS = {"json": to_json, "markdown": to_markdown, "html": to_html}


def render_formats(report: Mapping[str, Any], formats: Sequence[str]) -> Dict[str, str]:
    """``{format: text}`` for each requested format."""
    return {fmt: RENDERERS[fmt](report) for fmt in formats}


def write_report(dest_dir: str, rendered: Mapping[str, str], basename: str = DEFAULT_BASENAME, check_mode: bool = False) -> Dict[str, Any]:
    """``<basename>.json|.md|.html`` in ``dest_dir``, each written atomically and only when its content changed."""
    return write_report_files(dest_dir, rendered, basename, check_mode)


__all__ = ["DEFAULT_BASENAME", "FORMATS", "RENDERERS", "availability_chart_svg", "node_chart_svg", "render_formats", "share_chart_svg",
           "to_html", "to_json", "to_markdown", "work_chart_svg", "write_report"]
