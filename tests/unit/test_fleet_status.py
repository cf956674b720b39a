# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fleet status and the useful-work measure against the Kubernetes emulator, with exact expected numbers.

The quarantine records and incidents on the nodes are written by the real writers (``node_quarantine.run_node_action``
and ``remediation_state.apply_incident``) with fixed clocks, so the report reads exactly the shapes the sentinel
writes. The window is one day, S = 2026-03-07T00:00:00Z .. T = S + 24 h:

* gpu-0 (8 GPUs): alert at S+2h, cordoned at S+2h+60s, incident opened S+2h+70s, one remediation attempt at S+3h,
  recertifying S+4h, released and returned at S+5h.  Quarantined 10740 s; TTQ 60 s; TTR 10740 s.
* gpu-1 (8 GPUs): alert at S+20h, cordoned at S+20h+120s, incident opened S+20h+130s, attempts at S+21h and S+22h,
  still remediating.  Quarantined 14280 s; TTQ 120 s.
* gpu-2 (8 GPUs): created at S+12h, never quarantined.

Work: succeeded 8 GPUs x 4 h + 4 x 1.5 h + 2 x 1 h (clipped to the window) + an estimated finished Job without pods
(1 GPU x 2 pods x 1 h) = 42 GPU-h; a pod failing on gpu-1 after its alert = 8 x 7230 s = 16.0667 GPU-h lost to
faults; quarantine (10740 + 14280) s x 8 = 55.6 GPU-h; a pod failing on gpu-0 outside any incident = 1 GPU-h failed_other.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import entry as operate_entry, fleet_status as fs
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import FLEET_STATUS
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.fleet_report import render_formats, to_html
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import format_time, incident_id_for, parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import QuarantineOptions, run_node_action
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import apply_incident, validate_options
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

S = parse_rfc3339("2026-03-07T00:00:00Z")
T = S + 86400
H = 3600.0
NOW = format_time(T)


def at(seconds):
    return lambda: S + seconds


def iso(seconds):
    return format_time(S + seconds)


def auth(emu, **kw):
    out = {"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0, "retries": 1}
    out.update(kw)
    return out


def incident(client, when, **params):
    base = {"emit_events": False, "actor": "dsxos-sentinel"}
    base.update(params)
    return apply_incident(client, validate_options(base), clock=at(when))


def quarantine(client, node, action, when, reason=None):
    report = run_node_action(client, [node], QuarantineOptions(action=action, reason=reason, actor="dsxos-sentinel"), clock=at(when))
    assert report.results[0].status in ("changed", "ok"), report.results[0]


def set_created(emu, name, when):
    rt = emu.registry.lookup("", "v1", "nodes")

    def change(obj):
        obj["metadata"]["creationTimestamp"] = when
        return True
    emu.store.mutate(rt, None, name, change)


def pod(name, node, gpus, phase, start, end=None, namespace="training", owner=None, containers=None):
    containers = containers or [gpus]
    status = {"phase": phase, "startTime": iso(start), "containerStatuses": []}
    for index in range(len(containers)):
        if phase == "Running":
            state = {"running": {"startedAt": iso(start)}}
        else:
            state = {"terminated": {"exitCode": 0 if phase == "Succeeded" else 1, "startedAt": iso(start), "finishedAt": iso(end)}}
        status["containerStatuses"].append({"name": f"c{index}", "ready": phase == "Running", "restartCount": 0, "image": "x", "imageID": "",
                                            "state": state})
    meta = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    spec_containers = []
    for index, count in enumerate(containers):
        resources = {"limits": {"nvidia.com/gpu": str(count)}, "requests": {"nvidia.com/gpu": str(count)}} if count else {}
        spec_containers.append({"name": f"c{index}", "image": "x", "resources": resources})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": spec_containers, "restartPolicy": "Never"}, "status": status}


def job(name, condition, gpus=1, start=None, end=None, succeeded=0):
    status = {"conditions": [{"type": condition, "status": "True"}], "succeeded": succeeded}
    if start is not None:
        status["startTime"] = iso(start)
    if end is not None:
        status["completionTime"] = iso(end)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "training"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}},
            "status": status}


@pytest.fixture
def fleet(k8s_emulator):
    """The scenario of the module docstring, written through the real writers."""
    emu = k8s_emulator
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    assert names == ["gpu-0", "gpu-1", "gpu-2"]
    set_created(emu, "gpu-0", "2026-03-01T00:00:00Z")
    set_created(emu, "gpu-1", "2026-03-01T00:00:00Z")
    set_created(emu, "gpu-2", iso(12 * H))
    client = client_from_params(auth(emu))
    try:
        alert_a = {"fingerprint": "a0a0a0a0", "starts_at": iso(2 * H), "fault_class": "gpu-fatal"}
        id_a = incident_id_for("gpu-0", alert_a["fingerprint"], alert_a["starts_at"])
        quarantine(client, "gpu-0", "cordon", 2 * H + 60, reason=f"sentinel incident {id_a}: reboot (rule fallen-off-bus)")
        incident(client, 2 * H + 70, action="open", node="gpu-0", incident=id_a, remediation="reboot", rule="fallen-off-bus",
                 reason="XID 79 on GPU 3", events=[alert_a])
        incident(client, 3 * H, action="advance", node="gpu-0", incident=id_a, state="remediating", attempt=True, remediation="reboot")
        incident(client, 4 * H, action="advance", node="gpu-0", incident=id_a, state="recertifying")
        quarantine(client, "gpu-0", "release", 5 * H)
        incident(client, 5 * H, action="close", node="gpu-0", incident=id_a, outcome="returned", message="recertified")

        alert_b = {"fingerprint": "b1b1b1b1", "starts_at": iso(20 * H), "fault_class": "gpu-fatal"}
        id_b = incident_id_for("gpu-1", alert_b["fingerprint"], alert_b["starts_at"])
        quarantine(client, "gpu-1", "cordon", 20 * H + 120, reason=f"sentinel incident {id_b}: reset_gpu (rule dbe)")
        incident(client, 20 * H + 130, action="open", node="gpu-1", incident=id_b, remediation="reset_gpu", rule="dbe",
                 reason="double-bit ECC on GPU 5", events=[alert_b])
        incident(client, 21 * H, action="advance", node="gpu-1", incident=id_b, state="remediating", attempt=True)
        incident(client, 22 * H, action="advance", node="gpu-1", incident=id_b, state="remediating", attempt=True, error="reset failed")
    finally:
        client.close()

    emu.add_namespace("training")
    with_pods = emu.api.insert(job("with-pods", "Complete", gpus=2, start=13 * H, end=14.5 * H, succeeded=1))
    emu.api.insert(job("ttl-gone", "Complete", gpus=1, start=15 * H, end=16 * H, succeeded=2))
    emu.api.insert(job("broken", "Failed", gpus=1))
    for obj in (pod("p-ok-0", "gpu-0", 8, "Succeeded", 6 * H, 10 * H),
                pod("p-ok-2", "gpu-2", 4, "Succeeded", 13 * H, 14.5 * H, owner=with_pods, containers=[2, 2]),
                pod("p-old", "gpu-0", 2, "Succeeded", -2 * H, 1 * H),
                pod("p-fault", "gpu-1", 8, "Failed", 18 * H, 20 * H + 30),
                pod("p-app-fail", "gpu-0", 1, "Failed", 11 * H, 12 * H),
                pod("p-run", "gpu-2", 2, "Running", 22 * H),
                pod("p-cpu", "gpu-2", 0, "Succeeded", 1 * H, 2 * H, containers=[0])):
        emu.api.insert(obj)
    return emu, id_a, id_b


def module_params(emu, **kw):
    out = {key: spec.get("default") for key, spec in FLEET_STATUS.spec.items()}
    out.update(auth(emu), now=NOW, window_s=86400.0, buckets=4)
    out.update(kw)
    return out


def test_fleet_report_has_exact_availability_ttq_mttr_and_work_volume(fleet):
    emu, id_a, id_b = fleet
    result = call_entry(FLEET_STATUS, module_params(emu), False, False)
    assert not result.get("failed"), result
    report = result["report"]
    assert report["window"] == {"start": "2026-03-07T00:00:00.000Z", "end": "2026-03-08T00:00:00.000Z", "seconds": 86400.0}
    fleet_ = report["fleet"]
    assert (fleet_["nodes"], fleet_["gpu_nodes"], fleet_["gpus"], fleet_["quarantined"]) == (3, 3, 24.0, 1)
    assert fleet_["quarantined_node_s"] == 25020.0 and fleet_["node_s"] == 216000.0
    assert fleet_["availability"] == 0.884167  # 1 - 25020 / 216000
    assert fleet_["by_state"] == {"remediating": 1}
    assert fleet_["incidents"] == {"in_window": 2, "open": 1, "returned": 1, "released": 0}
    assert fleet_["ttq"] == {"count": 2, "mean_s": 90.0, "median_s": 90.0, "p90_s": 120.0, "min_s": 60.0, "max_s": 120.0}
    assert fleet_["mttr"] == {"count": 1, "mean_s": 10740.0, "median_s": 10740.0, "p90_s": 10740.0, "min_s": 10740.0, "max_s": 10740.0}
    assert fleet_["remediation_attempts"] == 3

    work = report["work"]
    assert work["gpu_hours"] == {"succeeded": 42.0, "succeeded_estimated": 2.0, "lost_faults": 16.0667, "lost_quarantine": 55.6,
                                 "failed_other": 1.0, "running": 4.0}
    assert work["useful_fraction"] == 0.369501  # 42 / (42 + 16.0667 + 55.6)
    assert work["pods"] == {"succeeded": 3, "running": 1, "failed_fault": 1, "failed_other": 1, "unmeasured": 0}
    assert work["jobs"] == {"complete": 2, "failed": 1, "active": 0, "without_pods": 1}

    assert [(r["node"], r["state"], r["incident"], r["since"], r["attempts"], r["last_error"]) for r in report["quarantined"]] == [
        ("gpu-1", "remediating", id_b, iso(20 * H + 120), 2, "reset failed")]
    assert report["quarantined"][0]["reason"] == f"sentinel incident {id_b}: reset_gpu (rule dbe)"

    rows = {r["node"]: r for r in report["nodes"]}
    assert {n: r["availability"] for n, r in rows.items()} == {"gpu-0": 0.875694, "gpu-1": 0.834722, "gpu-2": 1.0}
    assert rows["gpu-0"]["ttq_s"] == [60.0] and rows["gpu-0"]["ttr_s"] == [10740.0] and rows["gpu-0"]["remediation_attempts"] == 1
    assert rows["gpu-1"]["ttq_s"] == [120.0] and rows["gpu-1"]["ttr_s"] == [] and rows["gpu-1"]["remediation_attempts"] == 2
    assert rows["gpu-2"]["node_s"] == 43200.0 and rows["gpu-2"]["gpu_hours"] == {"succeeded": 6.0, "lost_faults": 0.0, "lost_quarantine": 0.0}
    assert rows["gpu-0"]["gpu_hours"] == {"succeeded": 34.0, "lost_faults": 0.0, "lost_quarantine": 23.8667}
    assert rows["gpu-1"]["gpu_hours"] == {"succeeded": 0.0, "lost_faults": 16.0667, "lost_quarantine": 31.7333}

    assert [(i["node"], i["id"], i["state"], i["outcome"], i["ttq_s"], i["ttr_s"]) for i in report["incidents"]] == [
        ("gpu-0", id_a, "returned", "returned", 60.0, 10740.0), ("gpu-1", id_b, "remediating", None, 120.0, None)]
    assert report["incidents"][0]["first_alert_at"] == iso(2 * H) and report["incidents"][0]["quarantined_at"] == iso(2 * H + 60)

    timeline = report["timeline"]
    assert [b["availability"] for b in timeline] == [0.751389, 1.0, 1.0, 0.77963]
    assert [b["gpu_hours"]["succeeded"] for b in timeline] == [2.0, 32.0, 8.0, 0.0]
    assert [b["gpu_hours"]["lost_faults"] for b in timeline] == [0.0, 0.0, 0.0, 16.0667]
    assert [b["gpu_hours"]["lost_quarantine"] for b in timeline] == [23.8667, 0.0, 0.0, 31.7333]
    assert report["problems"] == []

    assert result["summary"]["useful_fraction"] == 0.369501 and result["summary"]["quarantined_nodes"][0]["node"] == "gpu-1"
    assert "| gpu-1 | remediating | " + id_b in result["markdown"]
    assert result["changed"] is False and result["files"] == {}


def test_files_written_atomically_only_when_content_changes(fleet, tmp_path):
    emu = fleet[0]
    dest = tmp_path / "status"
    first = call_entry(FLEET_STATUS, module_params(emu, dest_dir=str(dest)), False, False)
    assert first["changed"] is True and sorted(p.name for p in dest.iterdir()) == ["fleet-status.html", "fleet-status.json", "fleet-status.md"]
    assert json.loads((dest / "fleet-status.json").read_text())["work"]["gpu_hours"]["succeeded"] == 42.0
    mtimes = {p.name: p.stat().st_mtime_ns for p in dest.iterdir()}

    again = call_entry(FLEET_STATUS, module_params(emu, dest_dir=str(dest)), False, False)
    assert again["changed"] is False and again["changed_files"] == []
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == mtimes

    later = module_params(emu, dest_dir=str(dest), now=format_time(T + 600))
    check = call_entry(FLEET_STATUS, later, True, False)  # check mode: would change, writes nothing
    assert check["changed"] is True and len(check["changed_files"]) == 3
    assert {p.name: p.stat().st_mtime_ns for p in dest.iterdir()} == mtimes
    done = call_entry(FLEET_STATUS, later, False, False)
    assert done["changed"] is True and [p.name for p in dest.iterdir() if p.name.startswith(".")] == []


def test_the_default_window_ends_after_an_incident_opened_seconds_ago(k8s_emulator, monkeypatch):
    """Without ``now`` the window ends at the current time rounded UP to the minute: an incident opened in the current
    minute is in the report (rounded down it was not), and a rerun in the same minute gives the same window."""
    emu = k8s_emulator
    emu.add_nodes(1, "h100-eks", name_prefix="gpu-")
    minute = parse_rfc3339("2026-12-02T08:42:00Z")
    client = client_from_params(auth(emu))
    try:
        alert = {"fingerprint": "fp-now", "starts_at": format_time(minute + 5)}
        opened = incident(client, minute + 11 - S, action="open", node="gpu-0", incident=incident_id_for("gpu-0", "fp-now", alert["starts_at"]),
                          rule="fallen-off-bus", remediation="reboot", reason="XID 79", events=[alert])
        assert opened.get("changed"), opened
    finally:
        client.close()
    params = {key: spec.get("default") for key, spec in FLEET_STATUS.spec.items()}
    params.update(auth(emu), window_s=3600.0, buckets=4)
    for wall in (minute + 40, minute + 59.5):
        monkeypatch.setattr(operate_entry, "time", SimpleNamespace(time=lambda wall=wall: wall))
        result = call_entry(FLEET_STATUS, params, False, False)
        assert not result.get("failed"), result
        assert result["report"]["window"]["end"] == "2026-12-02T08:43:00.000Z"
        assert [i["node"] for i in result["report"]["incidents"]] == ["gpu-0"], result["report"]["incidents"]


def test_bad_options_fail_before_any_api_call(k8s_emulator):
    for bad, field in (({"buckets": 0}, "buckets"), ({"window_s": 1.0}, "window_s"), ({"now": "yesterday"}, "now"),
                       ({"namespaces": ["Bad_NS"]}, "namespaces[0]"), ({"dest_dir": "/tmp/x", "basename": "../x"}, "basename")):
        result = call_entry(FLEET_STATUS, module_params(k8s_emulator, **bad), False, False)
        assert result["failed"] and result["error"]["field"] == field, (bad, result)
    assert k8s_emulator.api_calls() == 0


def test_quarantine_without_history_and_undone_quarantine():
    options = fs.validate_options(T, 86400.0, 4)
    trimmed = {"metadata": {"name": "n1", "labels": {"dsxos.io/quarantine": "quarantined"},
                            "annotations": {"dsxos.io/quarantine-prior": json.dumps(
                                {"prior": {}, "applied": {"cordon": True}, "reason": "manual", "actor": "ops", "since": iso(23 * H)})}},
               "status": {"allocatable": {"nvidia.com/gpu": "4"}}}
    undone = {"metadata": {"name": "n2", "labels": {"dsxos.io/quarantine": "released"}, "annotations": {"dsxos.io/quarantine-history": json.dumps(
        [{"action": "cordon", "reason": "x", "actor": "a", "time": iso(1 * H)}, {"action": "uncordon", "reason": "", "actor": "a", "time": iso(2 * H)}])}}}
    report = fs.build_report([trimmed, undone], [], [], options)
    rows = {r["node"]: r for r in report["nodes"]}
    assert rows["n1"]["quarantined_s"] == 3600.0 and rows["n1"]["gpu_hours"]["lost_quarantine"] == 4.0
    assert rows["n2"]["quarantined_s"] == 3600.0 and rows["n2"]["gpus"] == 0.0
    assert report["quarantined"] == [{"node": "n1", "state": fs.NO_INCIDENT, "incident": None, "release_due": None, "action": None, "reason": "manual",
                                      "actor": "ops",
                                      "since": iso(23 * H), "incident_opened_at": None, "attempts": 0, "last_error": "", "gpus": 4.0,
                                      "unschedulable": False}]
    assert report["work"]["useful_fraction"] == 0.0


def test_malformed_annotations_are_problems_not_failures():
    node = {"metadata": {"name": "n1", "labels": {"dsxos.io/quarantine": "quarantined", "dsxos.io/incident-state": "draining"},
                         "annotations": {"dsxos.io/quarantine-prior": "{not json", "dsxos.io/incident": "[]"}}}
    report = fs.build_report([node], [], [], fs.validate_options(T, 3600.0, 1))
    assert len(report["problems"]) == 3 and "dsxos.io/quarantine-prior" in report["problems"][0]
    assert report["quarantined"][0]["state"] == fs.NO_INCIDENT and report["nodes"][0]["quarantined_s"] == 3600.0


def test_gpu_request_counts_init_containers_and_limits():
    spec = {"initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "2"}}}, {"resources": {"limits": {"nvidia.com/gpu": 3}}}, {}]}
    assert fs.gpu_request(spec) == 8.0
    spec["initContainers"] = []
    assert fs.gpu_request(spec) == 5.0
    assert fs.gpu_request({"containers": [{"resources": {"requests": {"amd.com/gpu": "1"}}}]}, "amd.com/gpu") == 1.0


def test_empty_fleet_renders_in_every_format():
    report = fs.build_report([], [], [], fs.validate_options(T, 3600.0, 2))
    assert report["fleet"]["availability"] is None and report["work"]["useful_fraction"] is None
    rendered = render_formats(report, ["json", "markdown", "html"])
    assert json.loads(rendered["json"]) == report and "None." in rendered["markdown"]
    assert rendered["html"].count('class="point"') == 0 and rendered["html"].count('class="bar ') == 6


def test_hostile_names_are_escaped_in_html():
    options = fs.validate_options(T, 86400.0, 2)
    node = {"metadata": {"name": "<script>alert(1)</script>", "labels": {"dsxos.io/quarantine": "quarantined"},
                         "annotations": {"dsxos.io/quarantine-prior": json.dumps({"prior": {}, "applied": {"cordon": True},
                                                                                  "reason": "<img src=x onerror=alert(2)>", "since": iso(H)})}}}
    page = to_html(fs.build_report([node], [], [], options))
    assert "<script>" not in page and "<img" not in page and "&lt;img src=x onerror=alert(2)&gt;" in page


def test_a_release_that_closed_the_incident_but_died_shows_as_release_unfinished(k8s_emulator):
    """A release closed the incident and died before releasing its quarantine: the report's quarantined row names the
    closed incident and the state release-unfinished (not quarantined-without-incident), with the release due."""
    emu = k8s_emulator
    emu.add_nodes(1, "h100-eks", name_prefix="gpu-")
    client = client_from_params(auth(emu))
    try:
        alert = {"fingerprint": "fp-1", "starts_at": iso(2 * H)}
        ident = incident_id_for("gpu-0", "fp-1", alert["starts_at"])
        incident(client, 2 * H + 5, action="open", node="gpu-0", incident=ident, rule="fallen-off-bus", remediation="reboot",
                 reason="XID 79", events=[alert])
        quarantine(client, "gpu-0", "cordon", 2 * H + 6, reason=f"sentinel incident {ident}: reboot (rule r): XID 79")
        incident(client, 3 * H, action="resolve", node="gpu-0", events=[alert])
        incident(client, 3 * H + 1, action="close", node="gpu-0", incident=ident, outcome="released")
    finally:
        client.close()
    result = call_entry(FLEET_STATUS, module_params(emu), False, False)
    [row] = result["report"]["quarantined"]
    assert row["state"] == "release-unfinished" and row["incident"] == ident and row["release_due"] == {"incident": ident, "unfinished": True}
