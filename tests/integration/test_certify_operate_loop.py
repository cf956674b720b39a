# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Certify -> Operate (issue 22): a node that fails certification is quarantined through the sentinel - directly by the
certify role (``certify_quarantine_failed``) or by the sentinel on the NodeCertificationFailed alert - and a later certify
run where it passes releases exactly that quarantine; a quarantine for another reason (an XID incident, an XID alert
joined to the certification incident) stays. Real ansible-playbook runs on both backends (``k8s_cluster``); the Jobs'
nccl-tests output comes from the fabric simulator (as in test_certify_kubernetes.py)."""
from __future__ import annotations

import json
import re

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.node_certification import LABEL_VERDICT
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_kubernetes import ANNOTATION_COLLECTIVE, ANNOTATION_NODES, INDEX_ANNOTATION
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import run_sentinel_quarantine
from ansible_collections.dsxos.cluster.tests.harness.fabric_sim import FabricSimulator

INCIDENT = "dsxos.io/incident"
HISTORY = "dsxos.io/incident-history"
PRIOR = "dsxos.io/quarantine-prior"
QUARANTINE_LABEL = "dsxos.io/quarantine"
CERT_REASON = re.compile(r"^sentinel incident sen-[0-9a-f]{12}: quarantine \(rule certification\): NodeCertificationFailed certification$")


def fabric(emu, names, degraded):
    """Answer every Job from a fabric simulator with ``degraded`` nodes (replaces the previous simulator)."""
    sim = FabricSimulator(names, degraded_nodes=degraded, seed=9)

    def behaviour(job, pod):
        annotations = job["metadata"].get("annotations") or {}
        nodes = annotations[ANNOTATION_NODES].split(",")
        if (pod["metadata"].get("annotations") or {}).get(INDEX_ANNOTATION, "0") != "0":
            return 1.0, 0, "worker ready\n"
        return 1.0, 0, sim.run_group(nodes, annotations[ANNOTATION_COLLECTIVE])

    emu.job_behaviour = behaviour


def certify_vars(emu, tmp_path, **extra):
    values = {"certify_runner": "kubernetes", "certify_categories": ["nccl-all-reduce"],
              "certify_k8s_auth": {"kubeconfig": emu.kubeconfig_path},
              "certify_kubernetes": {"image": "registry.example.com/nccl-tests:2.13", "poll_s": 0.5},
              "certify_timeout_s": 60, "certify_isolation": {"min_evidence": 2}, "certify_report_dir": str(tmp_path / "report"), "certify_valid_for_s": 3600,
              "sentinel_circuit_breaker": {"max_fraction": 1.0, "max_nodes": 50}}
    values.update(extra)
    return values


def meta(emu, name):
    return emu.api.get("v1", "Node", name)["metadata"]


def spec_state(emu, name):
    node = emu.api.get("v1", "Node", name)
    # the real control plane's node lifecycle controller mirrors the cordon as the node.kubernetes.io/unschedulable taint
    return bool(node["spec"].get("unschedulable")), [t["key"] for t in node["spec"].get("taints") or []
                                                     if t["key"] != "node.kubernetes.io/unschedulable"]


def incident_of(emu, name):
    text = (meta(emu, name).get("annotations") or {}).get(INCIDENT)
    return json.loads(text) if text else None


def verdict(emu, name):
    return (meta(emu, name).get("labels") or {}).get(LABEL_VERDICT)


def alert(node, fingerprint, starts_at, fault_class, alertname, code=None, gpu=None):
    return {"node": node, "gpu": gpu, "uuid": None, "code": code, "fault_class": fault_class, "action": None, "status": "firing",
            "fingerprint": fingerprint, "starts_at": starts_at, "ends_at": None, "pods": [], "alertname": alertname,
            "severity": "critical", "labels": {}}


def sentinel_intake(emu, events):
    """The sentinel's intake in process (what the rulebook's first run does): decide and quarantine."""
    result = run_sentinel_quarantine({"kubeconfig": emu.kubeconfig_path, "events": events, "holder": "dsxos-sentinel/test",
                                      "actor": "dsxos-sentinel", "lock_namespace": "dsxos-system",
                                      "circuit_breaker": {"enabled": True, "max_fraction": 1.0, "max_nodes": 50}})
    assert not result.get("failed"), result
    return result


def stats(result):
    return result.task("dsxos.cluster.certify : Publish the outcome for AWX workflows")["result"]["ansible_stats"]["data"]["dsxos_certify"]


def test_certify_quarantines_failed_nodes_and_releases_them_when_they_pass(k8s_cluster, ansible_run, tmp_path):
    emu = k8s_cluster
    names = emu.add_nodes(8, "h100-eks", name_prefix="gpu-", start_index=1)
    # gpu-6 is quarantined for an XID incident: excluded from the certification, never released by it
    sentinel_intake(emu, [alert("gpu-6", "xid-6", "2026-03-01T10:00:00Z", "fallen-off-bus", "GPUFallenOffBus", code=79, gpu="3")])
    xid = incident_of(emu, "gpu-6")
    assert xid and xid["rule"] == "fallen-off-bus"
    fabric(emu, names, {"gpu-3": 0.5})
    first = ansible_run("dsxos.cluster.certify", extra_vars=certify_vars(emu, tmp_path, certify_quarantine_failed=True))
    assert verdict(emu, "gpu-3") == "failed" and verdict(emu, "gpu-6") == "excluded"
    assert spec_state(emu, "gpu-3") == (True, ["dsxos.io/quarantine"])
    incident = incident_of(emu, "gpu-3")
    assert incident["state"] == "quarantined" and incident["rule"] == "certification" and incident["action"] == "quarantine"
    assert CERT_REASON.match(incident["reason"]), incident["reason"]
    prior = json.loads(meta(emu, "gpu-3")["annotations"][PRIOR])
    assert prior["reason"] == incident["reason"] and meta(emu, "gpu-3")["labels"][QUARANTINE_LABEL] == "quarantined"
    for name in names:
        if name not in ("gpu-3", "gpu-6"):
            assert verdict(emu, name) == "passed" and spec_state(emu, name) == (False, []) and incident_of(emu, name) is None, name
    assert stats(first)["quarantined_nodes"] == ["gpu-3"] and stats(first)["released_nodes"] == []

    # the fault is gone: the next run tests the quarantined gpu-3 again (its Jobs tolerate the quarantine) and releases it
    fabric(emu, names, {})
    second = ansible_run("dsxos.cluster.certify", extra_vars=certify_vars(emu, tmp_path, certify_quarantine_failed=True))
    assert verdict(emu, "gpu-3") == "passed", second.describe()
    assert spec_state(emu, "gpu-3") == (False, []) and incident_of(emu, "gpu-3") is None
    assert (meta(emu, "gpu-3").get("labels") or {}).get(QUARANTINE_LABEL) in (None, "released")
    history = json.loads(meta(emu, "gpu-3")["annotations"][HISTORY])
    assert history[-1]["id"] == incident["id"] and history[-1]["outcome"] == "released"
    assert stats(second)["released_nodes"] == ["gpu-3"] and stats(second)["quarantined_nodes"] == []
    # the XID quarantine stays, exactly as it was
    assert incident_of(emu, "gpu-6") == xid and spec_state(emu, "gpu-6")[0] and verdict(emu, "gpu-6") == "excluded"


def test_without_the_option_only_the_label_and_the_alert_loop_quarantines(k8s_cluster, ansible_run, tmp_path):
    emu = k8s_cluster
    names = emu.add_nodes(8, "h100-eks", name_prefix="gpu-", start_index=1)
    fabric(emu, names, {"gpu-3": 0.5})
    first = ansible_run("dsxos.cluster.certify", extra_vars=certify_vars(emu, tmp_path))
    assert verdict(emu, "gpu-3") == "failed" and spec_state(emu, "gpu-3") == (False, []) and incident_of(emu, "gpu-3") is None
    assert stats(first)["quarantined_nodes"] == []
    # the loop: label -> kube-state-metrics -> NodeCertificationFailed -> the sentinel quarantines with the certification reason
    intake = sentinel_intake(emu, [alert("gpu-3", "am-cert-3", "2026-03-01T10:00:00Z", "certification", "NodeCertificationFailed")])
    decision = intake["plan"]["decisions"][0]
    assert decision["action"] == "quarantine" and decision["steps"]["drain"] == "none" and not decision["steps"]["remediate"]
    incident = incident_of(emu, "gpu-3")
    assert CERT_REASON.match(incident["reason"]) and spec_state(emu, "gpu-3") == (True, ["dsxos.io/quarantine"])
    # gpu-5 too, and then an XID alert joins its certification incident: a passing certification must not release it
    sentinel_intake(emu, [alert("gpu-5", "am-cert-5", "2026-03-01T10:00:00Z", "certification", "NodeCertificationFailed")])
    sentinel_intake(emu, [alert("gpu-5", "xid-5", "2026-03-01T10:05:00Z", "memory", "GPUXidMemory", code=48, gpu="1")])
    assert [e["fingerprint"] for e in incident_of(emu, "gpu-5")["events"]] == ["am-cert-5", "xid-5"]

    fabric(emu, names, {})
    second = ansible_run("dsxos.cluster.certify", extra_vars=certify_vars(emu, tmp_path))
    assert verdict(emu, "gpu-3") == "passed" and verdict(emu, "gpu-5") == "passed", second.describe()
    assert spec_state(emu, "gpu-3") == (False, []) and incident_of(emu, "gpu-3") is None
    assert stats(second)["released_nodes"] == ["gpu-3"]
    # gpu-5: its certification alert resolved, the XID alert still fires: quarantined, waiting
    held = incident_of(emu, "gpu-5")
    assert held and spec_state(emu, "gpu-5") == (True, ["dsxos.io/quarantine"])
    assert {e["fingerprint"]: bool(e.get("resolved_at")) for e in held["events"]} == {"am-cert-5": True, "xid-5": False}
