# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The sentinel playbooks (dsxos.cluster.remediate / release / recertify / status) through real ansible-playbook runs
against the Kubernetes emulator, with stub remediation and recertification task files (tests/integration/sentinel_stubs)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

STUBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sentinel_stubs")
PRIOR = "dsxos.io/quarantine-prior"
INCIDENT = "dsxos.io/incident"
HISTORY = "dsxos.io/incident-history"
FOREIGN = {"key": "team.example.com/maintenance", "effect": "NoSchedule"}


def stub(name):
    return os.path.join(STUBS, name + ".yml")


def event(node, fingerprint, starts_at="2026-03-01T10:00:00Z", fault_class="fallen-off-bus", status="firing", gpu="3", code=79, pods=()):
    return {"node": node, "gpu": gpu, "uuid": "GPU-1234", "code": code, "fault_class": fault_class, "action": None, "status": status,
            "fingerprint": fingerprint, "starts_at": starts_at, "ends_at": None, "pods": [{"namespace": n, "name": p} for n, p in pods],
            "alertname": "XidCritical", "severity": "critical", "labels": {"cluster": "test"}}


def base_vars(emu, tmp_path, **extra):
    out = {"sentinel_k8s_auth": {"kubeconfig": emu.kubeconfig_path, "retries": 2, "retry_backoff_s": 0.01},
           "sentinel_destructive": True, "sentinel_stub_dir": str(tmp_path),
           "sentinel_remediation_tasks": {a: stub("remediation_ok") for a in ("reboot", "reset_gpu", "driver_reload", "replace")},
           "sentinel_recertify_tasks": stub("recertify_pass"), "sentinel_circuit_breaker": {"max_fraction": 1.0, "max_nodes": 50},
           "sentinel_drain": {"timeout_s": 60, "pdb_retry_s": 0.05, "pdb_retry_max_s": 0.2}}
    out.update(extra)
    return out


def node_of(emu, name):
    return emu.api.get("v1", "Node", name)


def incident_of(emu, name):
    text = (node_of(emu, name)["metadata"].get("annotations") or {}).get(INCIDENT)
    return json.loads(text) if text else None


def history_of(emu, name):
    return json.loads((node_of(emu, name)["metadata"].get("annotations") or {}).get(HISTORY) or "[]")


def events_of(emu, name):
    items = emu.api.list("v1", "Event", "default")
    return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]


def stats_of(result):
    """The dsxos_sentinel set_stats data of a run (from the result callback's record of the task)."""
    return result.task("dsxos.cluster.sentinel : Publish the summary")["result"]["ansible_stats"]["data"]["dsxos_sentinel"]


def spec_state(emu, name):
    node = node_of(emu, name)
    return bool(node["spec"].get("unschedulable")), node["spec"].get("taints") or []


def test_remediate_quarantines_drains_remediates_recertifies_and_returns_exactly(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    nodes = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    target = nodes[0]
    emu.taint(target, FOREIGN["key"], FOREIGN["effect"])
    before = spec_state(emu, target)
    emu.add_deployment("train", namespace="ml", replicas=3, gpu=1)
    emu.wait_for(lambda: len([p for p in emu.api.pods("ml") if p["status"].get("phase") == "Running"]) == 3, 20, what="pods running")
    on_target = [p["metadata"]["name"] for p in emu.api.pods("ml", node=target)]
    events = [event(target, "fp-a1", pods=[("ml", on_target[0])] if on_target else ())]

    result = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_events=events))

    summary = stats_of(result)
    assert summary["acted"] == [target] and not summary["failed"]
    outcome = summary["outcomes"][0]
    assert outcome["status"] == "returned" and outcome["incident"].startswith("sen-")
    assert spec_state(emu, target) == before, "the node must be exactly as before the quarantine (foreign taint kept)"
    assert incident_of(emu, target) is None
    ended = history_of(emu, target)
    assert [(h["id"], h["outcome"]) for h in ended] == [(outcome["incident"], "returned")]
    assert not [p for p in emu.api.pods("ml", node=target) if not p["metadata"].get("deletionTimestamp")], "drained"
    call = json.loads((tmp_path / f"remediation-{target}-1.json").read_text())
    assert call["incident"] == outcome["incident"] and call["state"] == "remediating" and call["gpus"] == [3]
    assert call["host"] == target
    recert = json.loads((tmp_path / f"recertify-{target}.json").read_text())
    assert recert["state"] == "recertifying"
    history = json.loads(node_of(emu, target)["metadata"]["annotations"]["dsxos.io/quarantine-history"])
    assert outcome["incident"] in history[0]["reason"], "the quarantine reason names the incident"
    reasons = [e["reason"] for e in sorted(events_of(emu, target), key=lambda e: e["metadata"]["creationTimestamp"])]
    for step in ("SentinelQuarantined", "SentinelDraining", "SentinelDrained", "SentinelRemediating", "SentinelRecertifying",
                 "SentinelReturned"):
        assert step in reasons, (step, reasons)
