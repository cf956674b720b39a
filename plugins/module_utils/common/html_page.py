# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Pieces shared by the self-contained HTML reports (the certification report, the fleet status report): the page
style sheet, the chart palette, escaping of untrusted text, and round axis ticks for the inline SVG charts."""
from __future__ import annotations

import html
import math
import re
from typing import Any, Tuple

#: Okabe-Ito colours (distinguishable with colour-vision deficiencies), then a few extra.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", "#7f7f7f", "#8c564b")

PAGE_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1120px;margin:0 auto;padding:24px}
h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.25em;margin:28px 0 10px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:1.05em;margin:18px 0 6px}
.badge{display:inline-block;padding:4px 14px;border-radius:16px;color:#fff;font-weight:700;letter-spacing:.04em}
.reason{margin:10px 0 0;font-size:1.05em}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(190px,1fr));gap:12px;margin-top:18px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px 14px}
.card .k{color:#59636e;font-size:.8em;text-transform:uppercase;letter-spacing:.05em}.card .v{font-size:1.15em;margin-top:4px}
table{border-collapse:collapse;background:#fff;width:100%;font-size:.92em}
th,td{border:1px solid #d0d7de;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37}.bad{color:#cf222e;font-weight:600}.warn{color:#9a6700}.muted{color:#6e7781}
td.ok{background:#dafbe1;color:#116329}td.bad{background:#ffebe9}td.warn{background:#fff8c5}td.muted{background:#f6f8fa}
.chip{display:inline-block;margin:2px;padding:1px 7px;border-radius:10px;font-size:.85em;border:1px solid}
.chip.ok{border-color:#1a7f37;background:#dafbe1}.chip.bad{border-color:#cf222e;background:#ffebe9}.chip.muted{border-color:#8c959f}
.chart{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:8px;margin:8px 0;overflow-x:auto}
svg text{font-family:inherit;font-size:11px;fill:#1f2328}
ul.reasons{margin:0;padding-left:18px}
footer{margin-top:32px;color:#6e7781;font-size:.85em}
"""

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def escape_html(value: Any) -> str:
    """HTML-escape untrusted text (control characters, which HTML forbids, become U+FFFD)."""
    return html.escape(_CONTROL.sub("\ufffd", str(value)), quote=True)


def nice_axis(value: float) -> Tuple[float, float]:
    """An axis maximum and tick step covering ``value`` with round numbers."""
    if value <= 0:
        return 1.0, 0.2
    raw = value / 5.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        step = factor * magnitude
        if step >= raw:
            break
    return step * math.ceil(value / step), step


def format_tick(value: float) -> str:
    return ("%d" % value) if float(value).is_integer() else ("%g" % value)
