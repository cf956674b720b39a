# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The HTML fleet status page in headless Chromium (the DevTools pipe client of test_certify_report_browser.py).

No console message, log entry or uncaught exception; one availability point per time bucket, three stacked bars per
bucket, one bar per node, three segments in the useful-work bar - counted in the rendered DOM, each laid out with a box.
Chromium missing is a failure, not a skip.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.fleet_report import to_html
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.fleet_status import build_report, validate_options
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import format_time, parse_rfc3339
from ansible_collections.dsxos.cluster.tests.integration.test_certify_report_browser import CHROMIUM, PipeBrowser

S = parse_rfc3339("2026-03-07T00:00:00Z")
H = 3600.0
BUCKETS = 6


def _node(name: str, history=None, quarantined: bool = False) -> Dict[str, Any]:
    annotations = {}
    if history:
        annotations["dsxos.io/quarantine-history"] = json.dumps([{"action": a, "reason": "xid 79", "actor": "s", "time": format_time(S + t)}
                                                                 for a, t in history])
    if quarantined:
        record = {"prior": {}, "applied": {"cordon": True}, "reason": "xid 79 <b>", "actor": "s", "since": format_time(S + history[-1][1])}
        annotations["dsxos.io/quarantine-prior"] = json.dumps(record)
    return {"metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z", "annotations": annotations,
                         "labels": {"dsxos.io/quarantine": "quarantined" if quarantined else "released"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


def _pod(name: str, node: str, phase: str, start: float, end: float) -> Dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "t"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": phase, "startTime": format_time(S + start),
                       "containerStatuses": [{"name": "c", "state": {"terminated": {"startedAt": format_time(S + start),
                                                                                    "finishedAt": format_time(S + end)}}}]}}


def _report() -> Dict[str, Any]:
    nodes = [_node("gpu-0", [("cordon", 2 * H), ("release", 5 * H)]), _node("gpu-1", [("cordon", 20 * H)], quarantined=True), _node("gpu-2")]
    pods = [_pod("a", "gpu-0", "Succeeded", 6 * H, 10 * H), _pod("b", "gpu-2", "Succeeded", 1 * H, 23 * H)]
    return build_report(nodes, pods, [], validate_options(S + 24 * H, 24 * H, BUCKETS))


def open_page(path: Path) -> Dict[str, Any]:
    """Load the page; return the problems Chromium reported and the chart elements of the DOM."""
    assert Path(CHROMIUM).is_file(), "Chromium is needed for this test: apt-get install chromium (scripts/system_deps.sh)"
    profile = tempfile.mkdtemp(prefix="dsxos-chromium-")
    browser = PipeBrowser(profile)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.send(domain + ".enable", session=session)
        browser.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        browser.wait_event("Page.loadEventFired")
        script = """JSON.stringify({
            title: document.title,
            points: Array.from(document.querySelectorAll('svg.availability-chart circle.point')).map(c => +c.dataset.availability),
            drawnPoints: Array.from(document.querySelectorAll('svg.availability-chart circle.point'))
                .filter(c => { const b = c.getBBox(); return b.width > 0 && b.height > 0; }).length,
            bars: Array.from(document.querySelectorAll('svg.work-chart rect.bar')).map(r => [+r.dataset.bucket, r.dataset.kind, +r.dataset.gpuHours]),
            nodeBars: Array.from(document.querySelectorAll('svg.node-chart rect.node-bar')).map(r => [r.dataset.node, +r.dataset.availability]),
            shares: Array.from(document.querySelectorAll('svg.share-chart rect.share')).map(r => [r.dataset.kind, +r.dataset.fraction]),
            cards: Array.from(document.querySelectorAll('.card')).map(c => c.innerText),
            scripts: document.querySelectorAll('script').length
        })"""
        value = browser.send("Runtime.evaluate", {"expression": script, "returnByValue": True}, session=session)
        page = json.loads(value["result"]["value"])
        problems = []
        for event in browser.events:
            method, params = event.get("method"), event.get("params") or {}
            if method == "Runtime.exceptionThrown":
                problems.append("exception: %s" % json.dumps(params.get("exceptionDetails"))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                problems.append("console %s: %s" % (params.get("type"), json.dumps(params.get("args"))[:500]))
            elif method == "Log.entryAdded" and (params.get("entry") or {}).get("level") in ("error", "warning"):
                problems.append("log: %s" % (params.get("entry") or {}).get("text"))
        page["problems"] = problems
        return page
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)


def test_fleet_page_renders_in_chromium_without_errors_and_every_point_is_drawn(tmp_path):
    report = _report()
    page_file = tmp_path / "fleet-status.html"
    page_file.write_text(to_html(report), encoding="utf-8")

    page = open_page(page_file)

    assert page["problems"] == [], page["problems"]
    assert page["scripts"] == 0 and page["title"].startswith("Fleet status: ")
    assert page["points"] == [b["availability"] for b in report["timeline"]] and len(page["points"]) == BUCKETS
    assert page["drawnPoints"] == BUCKETS
    assert len(page["bars"]) == 3 * BUCKETS
    assert sorted(page["bars"]) == sorted([i, k, b["gpu_hours"][k]] for i, b in enumerate(report["timeline"])
                                          for k in ("succeeded", "lost_faults", "lost_quarantine"))
    assert page["nodeBars"] == [["gpu-0", 0.875], ["gpu-1", 0.833333], ["gpu-2", 1.0]]
    assert [k for k, _f in page["shares"]] == ["succeeded", "lost_faults", "lost_quarantine"]
    assert abs(sum(f for _k, f in page["shares"]) - 1.0) < 1e-5
    cards = {c.split("\n", 1)[0].strip().lower(): c for c in page["cards"]}
    assert "1 of 3 nodes" in cards["quarantined"]
