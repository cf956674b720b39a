# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.certify_report through real ansible-playbook runs: files, idempotence, check mode, set_stats,
bad input, and the ConfigMap against both Kubernetes backends (``k8s_cluster``: the emulator and the real control plane)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

NODES = ["host-%d" % i for i in range(1, 9)]
SLOW = "host-5"

PLAY = """
- name: Report
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write report
      dsxos.cluster.certify_report:
        report: "{{ results }}"
        dest_dir: "{{ dest }}"
        basename: "{{ basename | default('certify-report') }}"
      register: written

    - name: Publish summary
      ansible.builtin.set_stats:
        data:
          certify: "{{ written.summary }}"
"""

CM_PLAY = """
- name: Report to a ConfigMap
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Store report
      dsxos.cluster.certify_report:
        report: "{{ results }}"
        configmap:
          namespace: dsxos-system
          name: certify-report-latest
          compress_above_bytes: "{{ compress_above | default(524288) }}"
        kubeconfig: "{{ kubeconfig }}"
        retry_backoff_s: 0
"""


def results(slow=SLOW, name="lab-a"):
    """Results as the certify role hands them over: one slow host on all_reduce, one host unreachable."""
    per_node = {n: (151.0 if n == slow else 362.0) for n in NODES}
    nodes = {n: {"verdict": "failed" if n == slow else "passed",
                 "reasons": ["all_reduce: busbw 151.0 GB/s below threshold 325.8 GB/s"] if n == slow else [],
                 "categories": {"all_reduce": {"status": "failed" if n == slow else "passed", "value": per_node[n], "unit": "GB/s"},
                                "gpu-health": {"status": "passed"}}}
             for n in NODES}
    nodes["host-9"] = {"verdict": "excluded", "reasons": ["unreachable: ssh: connect to host 10.200.0.9 port 22: Connection timed out"]}
    return {
        "platform": {"name": name, "service": "ssh"},
        "gpu": {"product": "CPU stand-in", "count_per_node": 1},
        "started": "2026-03-01T10:00:00+00:00", "finished": "2026-03-01T10:03:10+00:00",
        "durations": {"per_category": {"all_reduce": 120.0, "gpu-health": 20.0}},
        "nodes": nodes,
        "categories": {"all_reduce": {"bandwidth_by_size": {"1M": 40.5, "16M": 180.2, "256M": 340.0, "1G": 360.1},
                                      "per_node": per_node, "threshold": {"floor": 100, "relative_fraction": 0.9, "median": 362.0}}},
        "isolation": {"rounds": 3, "tests": 6, "trace": [
            {"round": 1, "event": "plan", "test": "r1-screen-001", "purpose": "screen", "nodes": NODES[:4]},
            {"round": 1, "event": "plan", "test": "r1-screen-002", "purpose": "screen", "nodes": NODES[4:]},
            {"round": 1, "event": "passed", "test": "r1-screen-001", "busbw": 361.0},
            {"round": 1, "event": "failed", "test": "r1-screen-002", "busbw": 150.0, "reason": "busbw below 85 %"},
        ]},
    }


def test_report_files_idempotent_check_mode_and_set_stats(ansible_run, tmp_path):
    dest = tmp_path / "reports"
    first = ansible_run(PLAY, extra_vars={"results": results(), "dest": str(dest)})
    task = first.task("Write report")
    assert task["changed"] is True and task["result"]["result"] == "FAILED"
    assert sorted(p.name for p in dest.iterdir()) == ["certify-report.html", "certify-report.json", "certify-report.md", "certify-report.xml"]
    report = json.loads((dest / "certify-report.json").read_text(encoding="utf-8"))
    failed = [n for n, v in report["nodes"].items() if v["verdict"] == "failed"]
    assert failed == [SLOW] and "busbw" in report["nodes"][SLOW]["reasons"][0]
    assert report["nodes"]["host-9"]["verdict"] == "excluded" and report["totals"]["passed"] == 7
    suite = ET.parse(dest / "certify-report.xml").getroot().find("testsuite")
    assert suite.get("tests") == "9" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    stats = first.task("Publish summary")["result"]["ansible_stats"]["data"]["certify"]
    assert stats["result"] == "FAILED" and list(stats["failed_nodes"]) == [SLOW] and list(stats["excluded_nodes"]) == ["host-9"]

    before = {p.name: p.read_bytes() for p in dest.iterdir()}
    second = ansible_run(PLAY, extra_vars={"results": results(), "dest": str(dest)})
    assert second.task("Write report")["changed"] is False and second.task("Write report")["result"]["changed_files"] == []

    checked = ansible_run(PLAY, extra_vars={"results": results(name="lab-b"), "dest": str(dest)}, check=True)
    assert checked.task("Write report")["changed"] is True and len(checked.task("Write report")["result"]["changed_files"]) == 4
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == before, "check mode must not write"


def test_bad_input_fails_naming_the_field(ansible_run, tmp_path):
    bad = results()
    bad["nodes"][SLOW]["categories"]["all_reduce"]["status"] = "degraded"
    run = ansible_run(PLAY, extra_vars={"results": bad, "dest": str(tmp_path / "r")}, expect_rc=2)
    msg = run.task("Write report")["msg"]
    assert "field nodes.%s.categories.all_reduce.status" % SLOW in msg and "'degraded'" in msg
    assert not (tmp_path / "r").exists()
    run = ansible_run(PLAY, extra_vars={"results": results(), "dest": str(tmp_path / "r"), "basename": "../up"}, expect_rc=2)
    assert "field basename" in run.task("Write report")["msg"]


def test_configmap_created_then_unchanged_and_compressed(ansible_run, k8s_cluster):
    k8s_cluster.add_namespace("dsxos-system")
    extra = {"results": results(), "kubeconfig": k8s_cluster.kubeconfig_path}
    first = ansible_run(CM_PLAY, extra_vars=extra).task("Store report")
    assert first["changed"] and first["result"]["configmap"]["action"] == "created"
    obj = k8s_cluster.api.find("v1", "ConfigMap", "certify-report-latest", "dsxos-system")
    assert json.loads(obj["data"]["certify-report.json"])["result"] == "FAILED"
    again = ansible_run(CM_PLAY, extra_vars=extra).task("Store report")
    assert again["changed"] is False and again["result"]["configmap"]["action"] == "unchanged"
    packed = ansible_run(CM_PLAY, extra_vars=dict(extra, compress_above=64)).task("Store report")
    assert packed["changed"] and packed["result"]["configmap"]["compressed"] is True
    obj = k8s_cluster.api.find("v1", "ConfigMap", "certify-report-latest", "dsxos-system")
    assert sorted(obj["binaryData"]) == ["certify-report.json.gz", "certify-report.md.gz"]
