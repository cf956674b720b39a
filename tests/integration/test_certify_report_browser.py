# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The HTML certification report in a real browser: headless Chromium (Debian package ``chromium``).

The page is opened through the DevTools protocol over a pipe (``--remote-debugging-pipe``: NUL-separated JSON on
file descriptors 3 and 4, no network, no extra Python package). The test collects every console message, log entry
and uncaught exception, then counts the chart elements in the rendered DOM: one ``circle.point`` per message size
measured and category, one bar per node with a bandwidth. Chromium missing is a failure, not a skip.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.certify import report_model
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_rounds import RunOutput, certify_nccl, nodes_from_params, validate_config
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.node_certification import aggregate_certification, validate_input
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_html import to_html
from ansible_collections.dsxos.cluster.tests.harness.fabric_sim import SIZES, FabricSimulator

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--remote-debugging-pipe"]
NAMES = ["gpu-%d" % i for i in range(1, 9)]


class PipeBrowser:
    """A minimal DevTools client over Chromium's debugging pipe (write to its fd 3, read from its fd 4)."""

    def __init__(self, profile: str) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def pipe_fds() -> None:  # the child must find the pipe ends at fds 3 and 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self._proc = subprocess.Popen(  # pylint: disable=consider-using-with,subprocess-popen-preexec-fn
            [CHROMIUM] + FLAGS + ["--user-data-dir=%s" % profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(3, 4), preexec_fn=pipe_fds)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: List[Dict[str, Any]] = []

    def send(self, method: str, params: Optional[Dict[str, Any]] = None, session: Optional[str] = None,
             timeout_s: float = 60.0) -> Dict[str, Any]:
        self._next_id += 1
        message: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                assert "error" not in reply, reply
                return reply.get("result") or {}
            self.events.append(reply)

    def wait_event(self, method: str, timeout_s: float = 60.0) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _read(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "no answer from Chromium in time; stderr: %s" % self.stderr_tail()
            ready, _w, _x = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 16)
                assert chunk, "Chromium closed the debugging pipe; stderr: %s" % self.stderr_tail()
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw.decode("utf-8"))

    def stderr_tail(self) -> str:
        if self._proc.poll() is None:
            return "(still running)"
        return (self._proc.stderr.read() or b"").decode("utf-8", "replace")[-2000:] if self._proc.stderr else ""

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout_s=10)
        except (AssertionError, OSError):
            pass
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=15)
        for fd in (self._to_child, self._from_child):
            os.close(fd)
        if self._proc.stderr:
            self._proc.stderr.close()


def open_page(path: Path) -> Dict[str, Any]:
    """Load ``path`` in headless Chromium; return the problems it reported and the chart counts from the DOM."""
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
            lineCharts: document.querySelectorAll('svg.line-chart').length,
            points: Array.from(document.querySelectorAll('svg.line-chart circle.point')).map(c => [c.dataset.series, +c.dataset.bytes]),
            renderedPoints: Array.from(document.querySelectorAll('svg.line-chart circle.point'))
                .filter(c => { const b = c.getBBox(); return b.width > 0 && b.height > 0; }).length,
            bars: Array.from(document.querySelectorAll('svg.bar-chart rect.bar')).map(r => r.dataset.node),
            badge: (document.querySelector('.badge.result') || {}).textContent,
            cards: Array.from(document.querySelectorAll('.card')).map(c => c.innerText),
            bodyHeight: document.body.scrollHeight
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


class SimRunner:  # pylint: disable=too-few-public-methods
    """Group tests answered by the fabric simulator (one slow node)."""

    def __init__(self, sim: FabricSimulator) -> None:
        self.sim = sim

    def run_tests(self, tests, collective):
        return {t.id: RunOutput(rc=0, stdout=self.sim.run_group(list(t.nodes), collective), duration_s=1.0) for t in tests}


def _report(tmp_path: Path) -> Dict[str, Any]:
    sim = FabricSimulator(NAMES, degraded_nodes={"gpu-6": 0.1}, seed=3)
    config = validate_config({"collectives": ["all_reduce", "all_gather"],
                              "thresholds": {"use_builtin_floors": False, "relative": {"fraction": 0.5}}})
    nccl = certify_nccl(nodes_from_params([{"name": n} for n in NAMES]), config, SimRunner(sim)).to_dict()
    health = json.loads((Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "nvml" / "h100x8_healthy.json").read_text())
    gpu_health = {n: {"verdict": "ok", "driver_version": health["driver_version"], "cuda_driver_version": health["cuda_driver_version"],
                      "gpus": [{"name": g.get("name")} for g in health["gpus"]]} for n in NAMES}
    data = validate_input({"nodes": NAMES + ["$(id)"], "categories": ["gpu-health", "nccl-all-reduce", "nccl-all-gather"],
                           "results": {"gpu-health": gpu_health}, "nccl": nccl,
                           "excluded": {"$(id)": "refused: invalid host name '$(id)'"},
                           "platform": {"name": "gpu_nodes", "service": "ssh"},
                           "started": "2026-03-01T10:00:00Z", "finished": "2026-03-01T10:05:00Z"})
    return report_model.build_report(aggregate_certification(data))


def test_html_report_renders_in_chromium_without_errors_and_every_point_is_drawn(tmp_path):
    report = _report(tmp_path)
    page_file = tmp_path / "certify-report.html"
    page_file.write_text(to_html(report), encoding="utf-8")

    page = open_page(page_file)

    assert page["problems"] == [], page["problems"]
    assert page["badge"] == "FAILED" and page["title"].startswith("GPU cluster certification: FAILED")
    assert page["lineCharts"] == 1 and page["bodyHeight"] > 500
    expected = sorted((cat, p["bytes"]) for cat, info in report["categories"].items() for p in info["bandwidth_by_size"])
    assert len(expected) == 2 * len(SIZES)  # every size the simulator measured (1 MiB .. 8 GiB), two collectives
    assert sorted((s, b) for s, b in page["points"]) == expected
    assert page["renderedPoints"] == len(expected)  # each one laid out with a real box, not just present in the markup
    per_node = sum(len(info["per_node"]) for info in report["categories"].values())
    assert len(page["bars"]) == per_node == 2 * len(NAMES)
    cards = {c.split("\n", 1)[0].strip().lower(): c for c in page["cards"]}
    assert "gpu_nodes" in cards["platform"] and "ssh" in cards["platform"]
    assert "NVIDIA H100 80GB HBM3" in cards["gpu"] and "550.90.07" in cards["gpu"] and "CUDA 12.4" in cards["gpu"]
    assert "9 total" in cards["nodes"] and "1 excluded" in cards["nodes"]


def test_hostile_text_stays_text_in_chromium(tmp_path):
    report = report_model.build_report({"nodes": {"<img src=x onerror=alert(1)>": {"verdict": "failed", "reasons": ["<script>alert(2)</script>"]},
                                                  "gpu-1": {"verdict": "passed"}},
                                        "categories": {"x": {"bandwidth_by_size": {"1M": 1.0}, "per_node": {"gpu-1": 1.0}}}})
    page_file = tmp_path / "hostile.html"
    page_file.write_text(to_html(report), encoding="utf-8")
    page = open_page(page_file)
    assert page["problems"] == [], page["problems"]
    assert page["points"] == [["x", 1 << 20]] and page["bars"] == ["gpu-1"]
