# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""certify_report: totals and result, input validation, JSON Schema, JUnit, Markdown, HTML, files and the ConfigMap."""
from __future__ import annotations

import base64
import copy
import gzip
import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.certify import entry, report_model, report_render, report_storage
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_format import format_size
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_html import to_html
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_planner import IsolationPlanner
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import NodeInfo
from ansible_collections.dsxos.cluster.tests.harness.fabric_sim import SIZES, FabricSimulator, OutcomeJudge
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "docs" / "schemas" / "certify-report.schema.json").read_text(encoding="utf-8"))
NODES = ["gpu-%d" % i for i in range(1, 9)]
HOSTILE = '<script>alert("x")</script>|*'
SLOW = "gpu-3"


def _isolation_summary():
    sim = FabricSimulator(NODES, degraded_nodes={SLOW: 0.4}, seed=7)
    planner = IsolationPlanner([NodeInfo(name=n) for n in NODES])
    judge = OutcomeJudge(sim)
    while not planner.done():
        rnd = planner.plan_round()
        planner.record({t.id: judge.judge(t.nodes, sim.run_group(t.nodes)) for t in rnd.tests})
    return planner.summary()


ISOLATION = _isolation_summary()


def sample(**changes):
    """An 8-node run: gpu-3 slow on all_reduce (isolated by the real planner), everything else passing."""
    per_node = {n: (148.2 if n == SLOW else 360.0 + i) for i, n in enumerate(NODES)}
    nodes = {}
    for name in NODES:
        slow = name == SLOW
        nodes[name] = {
            "verdict": "failed" if slow else "passed",
            "reasons": ["all_reduce: busbw 148.2 GB/s below threshold 324.0 GB/s"] if slow else [],
            "categories": {
                "gpu-health": {"status": "passed"},
                "all_reduce": {"status": "failed" if slow else "passed", "value": per_node[name], "unit": "GB/s",
                               "reason": "busbw 148.2 GB/s below threshold 324.0 GB/s" if slow else "", "duration_s": 12.5},
                "all_gather": {"status": "passed", "value": 300.0, "unit": "GB/s"},
            },
        }
    data = {
        "platform": {"name": "lab-a", "service": "eks", "kubernetes_version": "v1.31.4"},
        "gpu": {"product": "NVIDIA H100 80GB HBM3", "count_per_node": 8},
        "started": "2026-03-01T10:00:00Z", "finished": "2026-03-01T10:14:32Z",
        "durations": {"per_category": {"gpu-health": 41.2, "all_reduce": 600.5, "all_gather": 180}, "ansible_overhead_s": 22.4},
        "nodes": nodes,
        "categories": {
            "all_reduce": {"bandwidth_by_size": {str(s): round(360 * s / (s + (16 << 20)), 2) for s in SIZES},
                           "per_node": per_node, "threshold": {"floor": 300, "relative_fraction": 0.9, "median": 360}},
            "all_gather": {"bandwidth_by_size": {"1M": 9.1, "1G": 290.9, "8G": 298.8}, "per_node": {n: 300.0 for n in NODES},
                           "threshold": {"floor": 250}},
        },
        "failed_groups": [{"id": "r1-screen-001", "nodes": ["gpu-1", "gpu-2", SLOW], "reason": "bus bandwidth below 85 %"}],
        "isolation": copy.deepcopy(ISOLATION),
        "link_faults": [],
    }
    data.update(changes)
    return data


def with_node(data, name, entry):
    data["nodes"][name] = entry
    return data


def validate_schema(report):
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(json.loads(report_render.to_json(report))), key=lambda e: list(e.path))
    assert not errors, "; ".join("%s: %s" % (list(e.path), e.message) for e in errors)


# ------------------------------------------------------------------------------------------------ totals and result

def test_failed_node_gives_failed_with_totals():
    report = report_model.build_report(sample())
    assert report["result"] == report_model.FAILED
    assert report["totals"] == {"nodes": 8, "passed": 7, "failed": 1, "excluded": 0, "gpus": 64, "link_faults": 0, "suspect_links": 0}
    assert "gpu-3" in report["result_reason"] and "1 of 8" in report["result_reason"]
    assert report["nodes"][SLOW]["reasons"] == ["all_reduce: busbw 148.2 GB/s below threshold 324.0 GB/s"]
    cat = report["categories"]["all_reduce"]
    assert cat["status"] == "failed" and cat["nodes"] == {"passed": 7, "failed": 1, "excluded": 0, "skipped": 0}
    assert cat["threshold"]["limit"] == pytest.approx(324.0)  # max(floor 300, 0.9 x median 360)
    assert cat["bandwidth_by_size"][0] == {"bytes": 1 << 20, "busbw_gbps": pytest.approx(360 * (1 << 20) / ((1 << 20) + (16 << 20)), abs=0.01)}
    assert [p["bytes"] for p in cat["bandwidth_by_size"]] == sorted(SIZES)
    assert report["categories"]["all_gather"]["bandwidth_by_size"][-1] == {"bytes": 8 << 30, "busbw_gbps": 298.8}
    assert report["durations"]["total_s"] == pytest.approx(872.0)  # finished - started
    assert report["isolation"]["rounds"] == ISOLATION["rounds"] and report["isolation"]["tests"] == ISOLATION["tests"]
    assert any(SLOW in r["condemned"] for r in report["isolation"]["round_summary"])
    assert report["warnings"] == []


def test_excluded_without_failure_is_incomplete():
    data = sample()
    for name in NODES:
        data["nodes"][name] = {"verdict": "passed", "categories": {"all_reduce": {"status": "passed"}}}
    data = with_node(data, "gpu-9", {"verdict": "excluded", "reasons": ["unreachable: ssh timed out after 30 s"]})
    report = report_model.build_report(data)
    assert report["result"] == report_model.INCOMPLETE
    assert report["totals"]["excluded"] == 1 and report["totals"]["failed"] == 0 and report["totals"]["nodes"] == 9
    assert "gpu-9" in report["result_reason"]


def test_all_passed_is_passed():
    data = sample()
    for name in NODES:
        data["nodes"][name] = {"verdict": "passed", "categories": {"all_reduce": {"status": "passed"}}}
    report = report_model.build_report(data)
    assert report["result"] == report_model.PASSED and report["result_reason"] == "all 8 node(s) passed"


def test_link_fault_fails_a_run_whose_nodes_all_passed_and_suspect_link_is_incomplete():
    data = sample()
    for name in NODES:
        data["nodes"][name] = {"verdict": "passed"}
    link = {"domains": ["leaf-1", "leaf-2"], "nodes": ["gpu-1", "gpu-5"], "evidence": ["r3-cross-001"]}
    report = report_model.build_report(dict(data, link_faults=[link]))
    assert report["result"] == report_model.FAILED and report["totals"]["link_faults"] == 1
    assert "faulty link between leaf-1 and leaf-2" in report["result_reason"]
    suspect = report_model.build_report(dict(data, link_faults=[dict(link, status="suspect")]))
    assert suspect["result"] == report_model.INCOMPLETE and suspect["totals"]["suspect_links"] == 1


def test_no_nodes_is_incomplete():
    report = report_model.build_report({})
    assert report["result"] == report_model.INCOMPLETE and report["result_reason"] == "no node was certified"
    assert report["totals"]["nodes"] == 0
    validate_schema(report)


def test_verdicts_are_derived_overridden_and_planner_words_accepted():
    data = sample(nodes={
        "gpu-1": {"categories": {"all_reduce": {"status": "failed", "reason": "busbw 10 GB/s below 324 GB/s"}}},
        "gpu-2": {"verdict": "passed", "categories": {"all_reduce": {"status": "fail", "reason": "NCCL WARN timeout"}}},
        "gpu-3": {"verdict": "healthy"},
        "gpu-4": {"verdict": "faulty", "reasons": "failed 3 isolation tests"},
        "gpu-5": {"verdict": "inconclusive"},
        "gpu-6": {"categories": {"all_reduce": "ok"}},
    })
    nodes = report_model.build_report(data)["nodes"]
    assert nodes["gpu-1"]["verdict"] == "failed" and nodes["gpu-1"]["reasons"] == ["all_reduce: busbw 10 GB/s below 324 GB/s"]
    assert nodes["gpu-2"]["verdict"] == "failed"
    assert nodes["gpu-3"]["verdict"] == "passed" and nodes["gpu-4"]["reasons"] == ["failed 3 isolation tests"]
    assert nodes["gpu-5"]["verdict"] == "excluded" and nodes["gpu-5"]["reasons"] == ["excluded without a recorded reason"]
    assert nodes["gpu-6"]["verdict"] == "passed"
    report = report_model.build_report(data)
    assert any("gpu-2" in w and "overridden" in w for w in report["warnings"])
    validate_schema(report)


def test_unknown_keys_are_warnings_not_errors():
    report = report_model.build_report(sample(node={"gpu-1": {}}, platform={"name": "x", "region": "eu"}))
    assert "unknown key node ignored" in report["warnings"]
    assert "unknown key platform.region ignored" in report["warnings"]


@pytest.mark.parametrize("mutate, field, value", [
    (lambda d: d["nodes"]["gpu-1"]["categories"]["all_reduce"].update(status="bogus"), "nodes.gpu-1.categories.all_reduce.status", "bogus"),
    (lambda d: d["nodes"]["gpu-1"].update(verdict="maybe"), "nodes.gpu-1.verdict", "maybe"),
    (lambda d: d["categories"]["all_reduce"]["bandwidth_by_size"].update(huge=3.0), "categories.all_reduce.bandwidth_by_size.huge", "huge"),
    (lambda d: d["categories"]["all_reduce"]["threshold"].update(relative_fraction=1.5),
     "categories.all_reduce.threshold.relative_fraction", 1.5),
    (lambda d: d["categories"]["all_reduce"]["per_node"].update({"gpu-1": -4}), "categories.all_reduce.per_node.gpu-1", -4),
    (lambda d: d["categories"]["all_reduce"]["per_node"].update({"gpu-1": float("nan")}), "categories.all_reduce.per_node.gpu-1", None),
    (lambda d: d["categories"]["all_reduce"]["threshold"].update(floor="fast"), "categories.all_reduce.threshold.floor", "fast"),
    (lambda d: d.update(started="yesterday"), "started", "yesterday"),
    (lambda d: d.update(finished="2026-03-01T09:00:00Z"), "finished", "2026-03-01T09:00:00Z"),
    (lambda d: d.update(nodes=["gpu-1"]), "nodes", None),
    (lambda d: d["nodes"].update({"": {"verdict": "passed"}}), "nodes", ""),
    (lambda d: d["nodes"].update({"gpu-9": {}}), "nodes.gpu-9.verdict", None),
    (lambda d: d.update(gpu={"count_per_node": -1}), "gpu.count_per_node", -1),
    (lambda d: d["isolation"].update(trace="r1 passed"), "isolation.trace", "r1 passed"),
    (lambda d: d["isolation"].update(trace=[{"round": 1}, "garbage"]), "isolation.trace[1]", "garbage"),
    (lambda d: d.update(failed_groups=[{"id": "g1", "nodes": "gpu-1"}]), "failed_groups[0].nodes", "gpu-1"),
    (lambda d: d.update(link_faults=[{"status": "broken"}]), "link_faults[0].status", "broken"),
    (lambda d: d["durations"].update(total_s=-1), "durations.total_s", -1),
])
def test_bad_input_names_field_and_value(mutate, field, value):
    data = sample()
    mutate(data)
    with pytest.raises(report_model.CertifyReportError) as info:
        report_model.build_report(data)
    assert info.value.field == field, str(info.value)
    assert "field %s" % field in str(info.value)
    if value is not None:
        assert repr(value) in str(info.value)


def test_garbage_reason_is_kept_as_text_and_cut():
    garbage = "\x00\x1b[31mSegmentation fault\n" + "A" * 5000
    data = with_node(sample(), "gpu-9", {"verdict": "failed", "reasons": [garbage]})
    report = report_model.build_report(data)
    reason = report["nodes"]["gpu-9"]["reasons"][0]
    assert reason.startswith("\x00\x1b[31mSegmentation fault") and "characters cut" in reason and len(reason) < 2100
    validate_schema(report)


# ------------------------------------------------------------------------------------------------ JSON

def test_json_is_schema_valid_and_stable():
    assert jsonschema.Draft202012Validator.check_schema(SCHEMA) is None
    data = sample()
    report = report_model.build_report(data)
    validate_schema(report)
    text = report_render.to_json(report)
    assert text == report_render.to_json(report_model.build_report(sample())), "same input must render the same bytes"
    shuffled = sample()
    shuffled["nodes"] = dict(reversed(list(shuffled["nodes"].items())))
    assert report_render.to_json(report_model.build_report(shuffled)) == text, "node order of the input must not matter"
    assert list(json.loads(text)["nodes"]) == NODES
    assert "generated" not in text


def test_schema_rejects_what_the_docs_forbid():
    report = json.loads(report_render.to_json(report_model.build_report(sample())))
    report["result"] = "GREEN"
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(report))
    report = json.loads(report_render.to_json(report_model.build_report(sample())))
    report["nodes"][SLOW]["reasons"] = []
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(report)), "a failed node needs a reason"


def test_docs_describe_every_schema_field():
    doc = (REPO / "docs" / "certify-report.md").read_text(encoding="utf-8")
    fields = set()

    def walk(schema, prefix):
        for key, sub in (schema.get("properties") or {}).items():
            fields.add(prefix + key)
            walk(sub, prefix + key + ".")
        if "$ref" in schema:
            walk(SCHEMA["$defs"][schema["$ref"].split("/")[-1]], prefix)
        extra = schema.get("additionalProperties")
        parent = prefix.rstrip(".").rsplit(".", 1)[-1]
        if isinstance(extra, dict):
            walk(extra, prefix + {"nodes": "<node>.", "categories": "<category>."}.get(parent, "<name>."))
        if isinstance(schema.get("items"), dict):
            walk(schema["items"], prefix.rstrip(".") + "[].")

    walk(SCHEMA, "")
    assert "nodes.<node>.categories.<category>.status" in fields and "failed_groups[].reason" in fields
    missing = sorted(f for f in fields if "`%s`" % f not in doc)
    assert not missing, "fields not documented in docs/certify-report.md: %s" % missing


# ------------------------------------------------------------------------------------------------ JUnit

def test_junit_counts_failures_and_skips():
    data = with_node(sample(), HOSTILE + "\x01", {"verdict": "excluded", "reasons": ["unreachable & <down>\x07"]})
    report = report_model.build_report(data)
    root = ET.fromstring(report_render.to_junit(report).encode("utf-8"))
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["all_reduce", "all_gather", "gpu-health"]
    nodes = len(report["nodes"])
    for suite in suites:
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases) == nodes
        assert int(suite.get("failures")) == len([c for c in cases if c.find("failure") is not None])
        assert int(suite.get("skipped")) == len([c for c in cases if c.find("skipped") is not None])
        assert all(c.get("classname") == suite.get("name") for c in cases)
    assert int(root.get("tests")) == 3 * nodes and int(root.get("failures")) == 1 and int(root.get("skipped")) == 3
    failure = [c for c in suites[0].findall("testcase") if c.get("name") == SLOW][0].find("failure")
    assert failure.get("message") == "busbw 148.2 GB/s below threshold 324.0 GB/s" and "threshold: 324.0 GB/s" in failure.text
    hostile = [c for c in suites[0].findall("testcase") if c.get("name").startswith("<script>")][0]
    assert hostile.get("name") == HOSTILE + "\ufffd"
    assert hostile.find("skipped").get("message") == "node excluded: unreachable & <down>\ufffd"
    assert suites[0].get("time") == "600.500" and suites[0].get("timestamp") == "2026-03-01T10:00:00"
    props = {p.get("name"): p.get("value") for p in suites[0].find("properties")}
    assert props["result"] == "FAILED" and props["gpu.product"] == "NVIDIA H100 80GB HBM3"


def test_junit_without_categories_lists_nodes_and_link_faults():
    data = {"nodes": {"a": {"verdict": "passed"}, "b": {"verdict": "excluded", "reasons": ["unreachable"]}},
            "link_faults": [{"domains": ["leaf-1", "leaf-2"], "nodes": ["a"]}]}
    root = ET.fromstring(report_render.to_junit(report_model.build_report(data)))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"certify", "link-faults"}
    assert [c.get("name") for c in suites["certify"].findall("testcase")] == ["a", "b"]
    assert suites["certify"].findall("testcase")[1].find("skipped").get("message") == "unreachable"
    link_case = suites["link-faults"].find("testcase")
    assert link_case.get("name") == "leaf-1-leaf-2" and link_case.find("failure") is not None
    assert root.get("failures") == "1" and root.get("tests") == "3"


# ------------------------------------------------------------------------------------------------ Markdown

def test_markdown_summary_tables_and_escaping():
    data = with_node(sample(), HOSTILE, {"verdict": "excluded", "reasons": ["host | unreachable"]})
    text = report_render.to_markdown(report_model.build_report(data))
    lines = text.splitlines()
    assert lines[0] == "# GPU cluster certification: FAILED"
    assert "| Nodes | 9 total: 7 passed, 1 failed, 1 excluded |" in lines
    failed = lines.index("## Failed nodes")
    assert lines[failed + 2:failed + 5] == ["| Node | Reasons |", "|---|---|",
                                            "| gpu-3 | all\\_reduce: busbw 148.2 GB/s below threshold 324.0 GB/s |"]
    assert "| \\<script\\>alert(\"x\")\\</script\\>\\|\\* | host \\| unreachable |" in lines
    assert "<script>" not in text
    header = [l for l in lines if l.startswith("| Size |")][0]
    assert header == "| Size | all\\_reduce | all\\_gather |"
    assert "| 8 GiB | %.1f | 298.8 |" % round(360 * (8 << 30) / ((8 << 30) + (16 << 20)), 2) in lines
    assert "| 1 MiB | 21.2 | 9.1 |" in lines and "| 2 MiB | 40.0 | - |" in lines
    for table_line in [l for l in lines if l.startswith("|")]:
        cells = re.split(r"(?<!\\)\|", table_line)
        assert cells[0] == "" and cells[-1] == "", table_line
    assert "## Isolation rounds" in lines


# ------------------------------------------------------------------------------------------------ HTML

class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.attrs = []
        self.text = []
        self.stack = []
        self.errors = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))
        if tag not in ("meta", "line", "circle", "rect", "polyline", "br", "path"):
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in ("line", "circle", "rect", "polyline", "path"):
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unexpected </%s> (open: %s)" % (tag, self.stack[-3:]))
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_self_contained_with_charts_and_escapes_untrusted_text():
    data = with_node(sample(), HOSTILE, {"verdict": "excluded", "reasons": ['"><img src=x onerror=alert(1)>']})
    page = to_html(report_model.build_report(data))
    parser = _Collector()
    parser.feed(page)
    parser.close()
    assert not parser.errors and parser.stack == [], (parser.errors, parser.stack)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert HOSTILE in "".join(parser.text), "the name must still be shown, as text"
    svgs = [a for t, a in parser.attrs if t == "svg"]
    assert [s["class"] for s in svgs] == ["line-chart", "bar-chart", "bar-chart"]
    for tag, attrs in parser.attrs:
        assert not any(k in ("src", "href") or k.startswith("on") for k in attrs), (tag, attrs)
        assert "url(" not in attrs.get("style", "")
    assert re.search(r"<link|@import|https?://(?!www\.w3\.org/2000/svg)", page) is None
    failed_bars = [a for t, a in parser.attrs if t == "rect" and "bar failed" in a.get("class", "")]
    assert len(failed_bars) == 1
    assert sum(1 for t, a in parser.attrs if t == "line" and a.get("class") == "threshold") == 2
    assert "gpu-3: 148.2 GB/s (failed)" in "".join(parser.text)
    chips = [a for t, a in parser.attrs if t == "span" and "chip" in a.get("class", "")]
    assert len(chips) == ISOLATION["tests"]
    assert sum(1 for t, a in parser.attrs if t == "polyline") == 2
    assert "1 MiB" in parser.text and "8 GiB" in parser.text


def test_html_handles_many_nodes_without_labels_and_empty_reports():
    names = ["node-%04d" % i for i in range(300)]
    data = {"nodes": {n: {"verdict": "passed", "categories": {"all_reduce": {"status": "passed"}}} for n in names},
            "categories": {"all_reduce": {"per_node": {n: 350.0 for n in names}, "threshold": {"floor": 300}}}}
    page = to_html(report_model.build_report(data))
    assert page.count('class="bar passed"') == 300 and "300 nodes (hover a bar for its name)" in page
    empty = to_html(report_model.build_report({}))
    assert "No node was certified." in empty and "<svg" not in empty
    assert format_size(1 << 20) == "1 MiB" and format_size(1536) == "1.5 KiB" and format_size(512) == "512 B"


# ------------------------------------------------------------------------------------------------ files

def test_files_written_atomically_idempotent_and_check_mode(tmp_path):
    report = report_model.build_report(sample())
    dest = tmp_path / "out" / "reports"
    first = report_storage.write_report_files(str(dest), report_render.render_formats(report), "run-1")
    assert sorted(os.listdir(dest)) == ["run-1.html", "run-1.json", "run-1.md", "run-1.xml"]
    assert sorted(first["changed_files"]) == sorted(first["files"].values())
    assert json.loads((dest / "run-1.json").read_text(encoding="utf-8"))["result"] == "FAILED"
    mtimes = {p: os.stat(p).st_mtime_ns for p in first["files"].values()}
    again = report_storage.write_report_files(str(dest), report_render.render_formats(report_model.build_report(sample())), "run-1")
    assert again["changed_files"] == [] and {p: os.stat(p).st_mtime_ns for p in again["files"].values()} == mtimes
    changed = report_model.build_report(sample(platform={"name": "lab-b"}))
    checked = report_storage.write_report_files(str(dest), report_render.render_formats(changed), "run-1", check_mode=True)
    assert len(checked["changed_files"]) == 4
    assert json.loads((dest / "run-1.json").read_text(encoding="utf-8"))["platform"]["name"] == "lab-a"
    only_json = report_storage.write_report_files(str(dest), report_render.render_formats(changed, ["json"]), "run-1")
    assert only_json["changed_files"] == [str(dest / "run-1.json")]
    assert sorted(os.listdir(dest)) == ["run-1.html", "run-1.json", "run-1.md", "run-1.xml"], "no temporary file left behind"
    missing = tmp_path / "never"
    report_storage.write_report_files(str(missing), report_render.render_formats(report), check_mode=True)
    assert not missing.exists()


def test_bad_destination_and_basename(tmp_path):
    report = report_model.build_report(sample())
    (tmp_path / "file").write_text("x")
    with pytest.raises(report_model.CertifyReportError, match="field dest_dir"):
        report_storage.write_report_files(str(tmp_path / "file"), report_render.render_formats(report, ["json"]))
    for bad in ("../escape", "a/b", "", ".hidden"):
        with pytest.raises(report_model.CertifyReportError, match="field basename"):
            report_storage.write_report_files(str(tmp_path), report_render.render_formats(report, ["json"]), bad)
    with pytest.raises(report_model.CertifyReportError, match="stored nowhere"):
        entry.run_certify_report({"report": sample()})


def test_run_returns_summary(tmp_path):
    result = entry.run_certify_report({"report": sample(), "dest_dir": str(tmp_path), "formats": ["json", "junit"], "basename": "r"})
    assert result["changed"] and sorted(result["files"]) == ["json", "junit"]
    summary = result["summary"]
    assert summary["result"] == "FAILED" and list(summary["failed_nodes"]) == [SLOW]
    assert summary["totals"]["nodes"] == 8 and summary["categories"]["all_reduce"] == "failed"
    assert entry.run_certify_report({"report": sample(), "dest_dir": str(tmp_path), "formats": ["json", "junit"], "basename": "r"})["changed"] is False


# ------------------------------------------------------------------------------------------------ ConfigMap

def _cm(emu, name="certify-report", namespace="dsxos-system"):
    return emu.api.find("v1", "ConfigMap", name, namespace)


def _k8s(emu, **kw):
    out = {"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0}
    out.update(kw)
    return out


def test_configmap_created_unchanged_replaced_and_check_mode(k8s_emulator):
    k8s_emulator.add_namespace("dsxos-system")
    params = _k8s(k8s_emulator, report=sample(), configmap={"namespace": "dsxos-system", "name": "certify-report"})
    checked = entry.run_certify_report(params, check_mode=True)
    assert checked["configmap"]["action"] == "created" and checked["changed"] and _cm(k8s_emulator) is None
    first = entry.run_certify_report(params)
    assert first["configmap"] == dict(first["configmap"], action="created", changed=True, compressed=False,
                                      keys=["certify-report.json", "certify-report.md"])
    obj = _cm(k8s_emulator)
    assert json.loads(obj["data"]["certify-report.json"])["result"] == "FAILED"
    assert obj["data"]["certify-report.md"].startswith("# GPU cluster certification: FAILED")
    assert obj["metadata"]["labels"]["dsxos.io/certify-result"] == "FAILED"
    version = obj["metadata"]["resourceVersion"]
    again = entry.run_certify_report(params)
    assert again["configmap"]["action"] == "unchanged" and again["changed"] is False
    assert _cm(k8s_emulator)["metadata"]["resourceVersion"] == version
    params["report"] = sample(platform={"name": "lab-b"})
    replaced = entry.run_certify_report(params)
    assert replaced["configmap"]["action"] == "replaced" and replaced["changed"]
    assert json.loads(_cm(k8s_emulator)["data"]["certify-report.json"])["platform"]["name"] == "lab-b"


def test_large_report_is_gzipped_into_binary_data(k8s_emulator):
    k8s_emulator.add_namespace("dsxos-system")
    names = ["gpu-%04d" % i for i in range(1200)]
    reason = "all_reduce busbw below threshold; NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129"
    data = {"nodes": {n: {"verdict": "failed" if i % 7 == 0 else "passed", "reasons": [reason] if i % 7 == 0 else [],
                          "categories": {c: {"status": "failed" if i % 7 == 0 and c == "all_reduce" else "passed", "value": 350.0 + i % 5,
                                             "reason": reason if i % 7 == 0 and c == "all_reduce" else ""}
                                         for c in ("all_reduce", "all_gather", "alltoall", "gpu-health")}}
                      for i, n in enumerate(names)},
            "categories": {"all_reduce": {"per_node": {n: 350.0 + i % 5 for i, n in enumerate(names)}, "threshold": {"floor": 300}}}}
    params = _k8s(k8s_emulator, report=data, configmap={"namespace": "dsxos-system", "name": "big"})
    result = entry.run_certify_report(params)
    stored = result["configmap"]
    assert stored["compressed"] and stored["bytes"] > report_storage.DEFAULT_COMPRESS_ABOVE_BYTES and stored["stored_bytes"] < stored["bytes"] / 4
    obj = _cm(k8s_emulator, "big")
    assert not obj.get("data") and sorted(obj["binaryData"]) == ["certify-report.json.gz", "certify-report.md.gz"]
    assert obj["metadata"]["annotations"]["dsxos.io/compression"] == "gzip"
    text = gzip.decompress(base64.b64decode(obj["binaryData"]["certify-report.json.gz"])).decode("utf-8")
    assert text == report_render.to_json(report_model.build_report(data))
    assert json.loads(text)["totals"]["failed"] == len(range(0, 1200, 7))
    assert entry.run_certify_report(params)["configmap"]["action"] == "unchanged"
    with pytest.raises(report_model.CertifyReportError, match="too large for a ConfigMap"):
        report_storage.configmap_payload(report_model.build_report(data), json_text="x" * (2 << 20), compress_above_bytes=10 << 20)


def test_configmap_small_threshold_then_uncompressed_again(k8s_emulator):
    k8s_emulator.add_namespace("dsxos-system")
    params = _k8s(k8s_emulator, report=sample(), configmap={"namespace": "dsxos-system", "name": "c", "compress_above_bytes": 100})
    assert entry.run_certify_report(params)["configmap"]["compressed"] is True
    params["configmap"] = dict(params["configmap"], compress_above_bytes=report_storage.DEFAULT_COMPRESS_ABOVE_BYTES)
    back = entry.run_certify_report(params)["configmap"]
    assert back["action"] == "replaced" and back["compressed"] is False
    obj = _cm(k8s_emulator, "c")
    assert not obj.get("binaryData") and "dsxos.io/compression" not in obj["metadata"]["annotations"]


def test_configmap_errors_name_the_problem(k8s_emulator):
    result = entry.run_certify_report(_k8s(k8s_emulator, report=sample(), configmap={"namespace": "absent-ns", "name": "r"}))
    assert result["failed"] and "absent-ns" in result["msg"] and result["error"]["status"] == 404
    calls = k8s_emulator.api_calls()
    bad = call_entry(entry.CERTIFY_REPORT, _k8s(k8s_emulator, report=sample(), configmap={"namespace": "Bad_NS", "name": "r"}))
    assert bad["failed"] and "configmap.namespace" in bad["msg"] and "Bad_NS" in bad["msg"]
    bad_name = call_entry(entry.CERTIFY_REPORT, _k8s(k8s_emulator, report=sample(), configmap={"namespace": "ns", "name": "no/slash"}))
    assert bad_name["failed"] and "configmap.name" in bad_name["msg"] and "no/slash" in bad_name["msg"]
    assert k8s_emulator.api_calls() == calls, "invalid names never reach the API"
    with client_from_params(_k8s(k8s_emulator)) as client:
        k8s_emulator.add_namespace("dsxos-system")
        k8s_emulator.access.deny(verbs=["create"], resources=["configmaps"])
        payload = report_storage.configmap_payload(report_model.build_report(sample()))
        with pytest.raises(Exception, match="RBAC refused create configmaps"):
            report_storage.store_configmap(client, "dsxos-system", "r", payload)


# ------------------------------------------------------------------------------------------------ one run, one set of numbers

def _certify_run(excluded_host="$(id)", nccl_failed=False):
    """A role-like run through the real modules' code: certify_nccl on the simulator, node_certification, the report."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_rounds import (  # pylint: disable=import-outside-toplevel
        RunOutput, certify_nccl, nodes_from_params, validate_config)

    sim = FabricSimulator(NODES, degraded_nodes={SLOW: 0.1}, seed=5)

    class Runner:  # pylint: disable=too-few-public-methods
        def run_tests(self, tests, collective):
            return {t.id: RunOutput(rc=0, stdout=sim.run_group(list(t.nodes), collective), duration_s=1.0) for t in tests}

    if nccl_failed:
        nccl = {"failed": True, "msg": "certify_nccl failed: something global"}
    else:
        config = validate_config({"collectives": ["all_reduce"], "thresholds": {"use_builtin_floors": False, "relative": {"fraction": 0.5}}})
        nccl = certify_nccl(nodes_from_params([{"name": n} for n in NODES]), config, Runner()).to_dict()
    fixture = json.loads((REPO / "tests" / "unit" / "fixtures" / "nvml" / "h100x8_healthy.json").read_text(encoding="utf-8"))
    health = {n: {"verdict": "ok", "driver_version": fixture["driver_version"], "cuda_driver_version": fixture["cuda_driver_version"],
                  "gpus": [{"name": g["name"]} for g in fixture["gpus"]]} for n in NODES}
    health[excluded_host] = {"skipped": True, "skip_reason": "Conditional result was False"}
    params = {"nodes": NODES + [excluded_host], "categories": ["gpu-health", "nccl-all-reduce"],
              "results": {"gpu-health": health}, "nccl": nccl,
              "excluded": {excluded_host: "refused: invalid host name %r: only letters, digits, '.', '-' and '_' are allowed" % excluded_host},
              "platform": {"name": "gpu_nodes", "service": "ssh"},
              "started": "2026-03-01T10:00:00Z", "finished": "2026-03-01T10:05:00Z"}
    return entry.run_node_certification(params), nccl


def _rendered_counts(rendered):
    """(passed, failed, excluded) as each rendered format states them."""
    md_match = re.search(r"\| Nodes \| (\d+) total: (\d+) passed, (\d+) failed, (\d+) excluded \|", rendered["markdown"])
    html_match = re.search(r'(\d+) total<br><span class="ok">(\d+) passed</span>, <span class="bad">(\d+) failed</span>, '
                           r'<span class="warn">(\d+) excluded</span>', rendered["html"])
    junit = ET.fromstring(rendered["junit"].encode("utf-8"))
    suite = next(s for s in junit.iter("testsuite") if s.get("name") == "nccl-all-reduce")
    return {"markdown": tuple(int(g) for g in md_match.groups()), "html": tuple(int(g) for g in html_match.groups()),
            "junit_failures": int(suite.get("failures"))}


@pytest.mark.parametrize("nccl_failed", [False, True], ids=["isolated", "nccl-module-failed"])
def test_summary_json_markdown_html_counts_agree_with_an_excluded_host(tmp_path, nccl_failed):
    certification, _nccl = _certify_run(nccl_failed=nccl_failed)
    summary = certification["summary"]
    result = entry.run_certify_report({"report": certification["report"], "dest_dir": str(tmp_path), "basename": "r"})
    document = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    totals = document["totals"]
    counts = _rendered_counts({"markdown": (tmp_path / "r.md").read_text(encoding="utf-8"),
                               "html": (tmp_path / "r.html").read_text(encoding="utf-8"),
                               "junit": (tmp_path / "r.xml").read_text(encoding="utf-8")})
    expected = (totals["nodes"], totals["passed"], totals["failed"], totals["excluded"])
    assert (summary["nodes"], summary["passed"], summary["failed"], summary["excluded"]) == expected
    assert tuple(result["summary"]["totals"][k] for k in ("nodes", "passed", "failed", "excluded")) == expected
    assert counts["markdown"] == expected and counts["html"] == expected
    assert summary["result"] == result["summary"]["result"] == document["result"] == "FAILED"
    # the invalid host is excluded with its own reason, in every category, and nobody else inherits it
    assert document["nodes"]["$(id)"]["verdict"] == "excluded" and totals["excluded"] == 1
    assert all(c["status"] == "excluded" and "invalid host name" in c["reason"] for c in document["nodes"]["$(id)"]["categories"].values())
    assert not any("$(id)" in r for n, v in document["nodes"].items() if n != "$(id)" for r in v["reasons"])
    if nccl_failed:
        assert (totals["passed"], totals["failed"]) == (0, 8)
        assert counts["junit_failures"] == 8
    else:
        assert (totals["passed"], totals["failed"]) == (7, 1) and summary["failed_nodes"] == [SLOW]
        assert counts["junit_failures"] == 1
    assert not any("overridden" in w for w in document["warnings"]), document["warnings"]


def _numbers_after(text, word):
    return {m.group(1) for m in re.finditer(r"%s\D{0,12}?(\d+(?:\.\d+)?) GB/s" % word, text, flags=re.IGNORECASE)}


def test_one_median_and_one_threshold_per_category_everywhere():
    certification, _nccl = _certify_run()
    report = report_model.build_report(certification["report"])
    threshold = report["categories"]["nccl-all-reduce"]["threshold"]
    median, limit = threshold["median"], threshold["limit"]
    assert median is not None and limit == pytest.approx(0.5 * median, abs=1e-6)
    rendered = report_render.render_formats(report, ["markdown", "html", "junit"])
    for fmt, text in rendered.items():
        medians = _numbers_after(text, "median")
        assert medians <= {"%.1f" % median}, (fmt, medians)
        thresholds = _numbers_after(text, "threshold")
        assert thresholds <= {"%.1f" % limit, "%g" % limit}, (fmt, thresholds)
        assert "fleet median" not in text and "best result" not in text, fmt
    assert "%.1f" % median in rendered["html"] and "%.1f" % limit in rendered["html"]
    # the reasons quote what was measured, the slow node's own busbw
    slow = report["nodes"][SLOW]
    assert slow["verdict"] == "failed" and "busbw" in slow["categories"]["nccl-all-reduce"]["reason"]
    # the isolation tooltips use the failed groups' wording, not the rounds' fleet numbers
    tips = [t["reason"] for r in report["isolation"]["round_summary"] for t in r["tests"] if t["outcome"] == "failed"]
    assert tips and all("median" not in t for t in tips)


def test_median_defaults_to_the_median_of_per_node_values():
    report = report_model.build_report({"categories": {"x": {"per_node": {"a": 1.0, "b": 3.0, "c": 10.0, "d": 4.0},
                                                             "threshold": {"relative_fraction": 0.5}}}})
    assert report["categories"]["x"]["threshold"]["median"] == 3.5 and report["categories"]["x"]["threshold"]["limit"] == 1.75


def test_platform_and_gpu_come_from_what_the_run_measured():
    certification, nccl = _certify_run()
    report = report_model.build_report(certification["report"])
    assert report["platform"]["name"] == "gpu_nodes" and report["platform"]["service"] == "ssh"
    gpu = report["gpu"]
    assert gpu["product"] == "NVIDIA H100 80GB HBM3" and gpu["count_per_node"] == 8
    assert gpu["driver_version"] == "550.90.07" and gpu["cuda_version"] == "12.4"
    assert gpu["nccl_tests_version"] == nccl["software"]["nccl_tests"] == "2.13.10"
    assert report["totals"]["gpus"] == 8 * 9
    markdown = report_render.to_markdown(report)
    assert "| Platform | gpu\\_nodes, ssh |" in markdown and "driver 550.90.07" in markdown and "CUDA 12.4" in markdown
    page = to_html(report)
    assert "Platform</div><div class=\"v\">gpu_nodes / ssh" in page and "CUDA 12.4" in page
    props = {p.get("name"): p.get("value") for p in ET.fromstring(report_render.to_junit(report).encode("utf-8")).iter("property")}
    assert props["gpu.driver_version"] == "550.90.07" and props["gpu.count_per_node"] == "8"
    validate_schema(report)


def test_bandwidth_chart_has_one_point_per_measured_size():
    certification, _nccl = _certify_run()
    report = report_model.build_report(certification["report"])
    sizes = [p["bytes"] for p in report["categories"]["nccl-all-reduce"]["bandwidth_by_size"]]
    assert sizes == list(SIZES)
    page = to_html(report)
    chart = page[page.index('<svg class="line-chart"'):]
    chart = chart[:chart.index("</svg>")]
    assert [int(b) for b in re.findall(r'<circle class="point" data-series="nccl-all-reduce" data-bytes="(\d+)"', chart)] == sizes
