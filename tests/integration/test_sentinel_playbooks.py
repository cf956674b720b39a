# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The sentinel playbooks (dsxos.cluster.remediate / release / recertify / status) through real ansible-playbook runs
against the Kubernetes emulator, with stub remediation and recertification task files (tests/integration/sentinel_stubs)."""
from __future__ import annotations

import json
import os
import threading
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
    lease = emu.api.get("coordination.k8s.io/v1", "Lease", f"dsxos-node-lock-{target}", "dsxos-system")
    assert not lease["spec"].get("holderIdentity"), "the node lock is released at the end"
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


def test_a_gpu_reset_drains_only_the_pods_on_the_faulty_gpu_in_the_batch_and_in_the_per_node_steps(k8s_emulator, ansible_run, tmp_path):
    """A memory fault (reset_gpu: a partial drain) whose alert names the pod on the faulty GPU: that pod is evicted, the
    node's other GPU pod keeps running through the reset - in the batch drain and in the per-node steps alike."""
    emu = k8s_emulator
    batched, looped = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")[:2]
    for node, namespace in ((batched, "ml-a"), (looped, "ml-b")):
        emu.seed_pods(2, namespace=namespace, nodes=[node], gpu_per_pod=1)  # w-0-0 on the faulty GPU, w-0-1 on another
    drain = {"timeout_s": 60, "pdb_retry_s": 0.05, "pdb_retry_max_s": 0.2, "force": True}

    def alive(namespace):
        return sorted(p["metadata"]["name"] for p in emu.api.pods(namespace) if not p["metadata"].get("deletionTimestamp"))

    for node, namespace, batch in ((batched, "ml-a", True), (looped, "ml-b", False)):
        events = [event(node, "fp-mem-" + node, fault_class="memory", code=48, pods=[(namespace, "w-0-0")])]
        run = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_events=events, sentinel_drain=drain,
                                                                          sentinel_batch_drain=batch))
        outcome = stats_of(run)["outcomes"][0]
        assert outcome["status"] == "returned" and outcome["action"] == "reset_gpu", outcome
        assert alive(namespace) == ["w-0-1"], (batch, alive(namespace))
        call = json.loads((tmp_path / f"remediation-{node}-1.json").read_text())
        assert call["pods"] == [{"namespace": namespace, "name": "w-0-0"}] and call["gpus"] == [3], call


def test_recertify_failure_keeps_the_node_quarantined_then_recertify_returns_it(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    target = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")[0]
    variables = base_vars(emu, tmp_path, sentinel_events=[event(target, "fp-b1")], sentinel_recertify_tasks=stub("recertify_fail"))

    failed = ansible_run("dsxos.cluster.remediate", extra_vars=variables)

    outcome = stats_of(failed)["outcomes"][0]
    assert outcome["status"] == "needs-attention" and "NCCL all_reduce below floor" in outcome["message"]
    incident = incident_of(emu, target)
    assert incident["state"] == "needs-attention" and incident["id"] == outcome["incident"]
    node = node_of(emu, target)
    assert node["spec"]["unschedulable"] is True and node["metadata"]["labels"]["dsxos.io/incident-state"] == "needs-attention"
    reason = json.loads(node["metadata"]["annotations"][PRIOR])["reason"]
    assert incident["id"] in reason and "needs attention" in reason and "NCCL all_reduce below floor" in reason
    assert "SentinelNeedsAttention" in [e["reason"] for e in events_of(emu, target)]

    # a resolved alert does not release a node that needs attention; recertify.yml with a passing check returns it
    ansible_run("dsxos.cluster.release", extra_vars=base_vars(emu, tmp_path, sentinel_events=[event(target, "fp-b1", status="resolved")]))
    assert incident_of(emu, target)["state"] == "needs-attention"
    again = ansible_run("dsxos.cluster.recertify", extra_vars=base_vars(emu, tmp_path, sentinel_nodes=[target]))
    assert stats_of(again)["outcomes"][0]["status"] == "returned", json.dumps(stats_of(again)["outcomes"])
    assert incident_of(emu, target) is None and not node_of(emu, target)["spec"].get("unschedulable")


def test_second_alert_during_remediation_starts_nothing_new(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    target = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")[0]
    slow = base_vars(emu, tmp_path, sentinel_events=[event(target, "fp-c1")],
                     sentinel_remediation_tasks={"reboot": stub("remediation_slow")})
    first = {}
    runner = threading.Thread(target=lambda: first.setdefault("result", ansible_run("dsxos.cluster.remediate", extra_vars=slow)))
    runner.start()
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / f"started-{target}").exists():
            assert time.monotonic() < deadline and runner.is_alive(), "the first run never reached its remediation"
            time.sleep(0.5)
        second = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(
            emu, tmp_path, sentinel_events=[event(target, "fp-c2", starts_at="2099-01-01T00:00:00Z", fault_class="memory")]))
        outcome = stats_of(second)["outcomes"][0]
        assert outcome["status"] == "joined" and outcome["incident"] == incident_of(emu, target)["id"]
        incident = incident_of(emu, target)
        assert [e["fingerprint"] for e in incident["events"]] == ["fp-c1", "fp-c2"]
        assert incident["state"] == "remediating" and incident["attempts"] == 1
    finally:
        (tmp_path / f"go-{target}").write_text("go")
        runner.join(600)
    assert stats_of(first["result"])["outcomes"][0]["status"] == "returned"
    assert not list(tmp_path.glob(f"remediation-{target}-*.json")), "only the slow stub ran: no second remediation"


def test_a_run_that_dies_midway_resumes_from_the_recorded_state(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    target = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")[0]
    events = [event(target, "fp-d1")]
    crashing = base_vars(emu, tmp_path, sentinel_events=events, sentinel_remediation_tasks={"reboot": stub("remediation_fail")})

    crashed = ansible_run("dsxos.cluster.remediate", extra_vars=crashing, expect_rc=2)

    assert stats_of(crashed)["failed"][0]["node"] == target and "stub remediation crashed" in crashed.stdout
    incident = incident_of(emu, target)
    assert incident["state"] == "remediating" and incident["attempts"] == 1 and "stub remediation crashed" in incident["last_error"]
    assert node_of(emu, target)["spec"]["unschedulable"] is True
    lease = emu.api.get("coordination.k8s.io/v1", "Lease", f"dsxos-node-lock-{target}", "dsxos-system")
    assert not lease["spec"].get("holderIdentity"), "the lock is released when a step fails"

    resumed = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_events=events))

    outcome = stats_of(resumed)["outcomes"][0]
    assert outcome["kind"] == "resume" and outcome["status"] == "returned" and outcome["incident"] == incident["id"]
    assert json.loads((tmp_path / f"remediation-{target}-2.json").read_text())["attempts"] == 2, "second attempt, same incident"
    assert [h["outcome"] for h in history_of(emu, target)] == ["returned"]
    assert not node_of(emu, target)["spec"].get("unschedulable")
    # a third run of the same alert is a replay: nothing happens
    replay = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_events=events))
    assert not stats_of(replay)["outcomes"] and stats_of(replay)["skipped"][0]["verdict"] == "replay"


def test_release_only_what_was_caused_replays_and_old_resolved_alerts_change_nothing(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    first, second = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")[:2]
    emu.cordon(second)
    malformed = [event("gpu-0\n", "fp-x"), event(first, "fp bad"), {"node": first}, "junk"]
    quarantine = [event(first, "fp-e1", fault_class="certification"), event(second, "fp-e2", fault_class="certification")]
    run1 = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_events=malformed + quarantine,
                                                                       sentinel_destructive=False))
    summary = stats_of(run1)
    assert sorted(summary["acted"]) == [first, second] and [r["index"] for r in summary["rejected"]] == [0, 1, 2, 3]
    assert node_of(emu, first)["spec"]["unschedulable"] and incident_of(emu, first)["state"] == "quarantined"
    old_incident = incident_of(emu, first)["id"]

    status = ansible_run("dsxos.cluster.status", extra_vars=base_vars(emu, tmp_path, sentinel_status_dir=str(tmp_path / "status")))
    rows = json.loads((tmp_path / "status" / "status.json").read_text())["nodes"]
    expected = [(first, old_incident, "quarantined"), (second, incident_of(emu, second)["id"], "quarantined")]
    assert [(r["node"], r["incident"], r["state"]) for r in rows] == expected
    assert old_incident in (tmp_path / "status" / "status.md").read_text() and status.rc == 0

    # the resolved alert of the first node releases it only; an alert the second node never had releases nothing
    released = ansible_run("dsxos.cluster.release", extra_vars=base_vars(emu, tmp_path, sentinel_events=[
        event(first, "fp-e1", fault_class="certification", status="resolved"), event(second, "fp-zz", status="resolved")]))
    assert [o["node"] for o in stats_of(released)["outcomes"]] == [first]
    assert not node_of(emu, first)["spec"].get("unschedulable") and incident_of(emu, first) is None
    assert node_of(emu, second)["spec"]["unschedulable"] is True and incident_of(emu, second)["state"] == "quarantined"

    # replay of the old alert + a new fault: only the new fault opens an incident
    run3 = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_destructive=False, sentinel_events=[
        event(first, "fp-e1", fault_class="certification"), event(first, "fp-e3", starts_at="2099-01-01T00:00:00Z", fault_class="nvlink")]))
    new_incident = incident_of(emu, first)
    assert new_incident["id"] != old_incident and [e["fingerprint"] for e in new_incident["events"]] == ["fp-e3"]
    assert [s["verdict"] for s in stats_of(run3)["skipped"]] == ["replay"]

    # the old resolved alert cannot release the new incident
    before = node_of(emu, first)["metadata"]["resourceVersion"]
    ansible_run("dsxos.cluster.release", extra_vars=base_vars(emu, tmp_path, sentinel_events=[
        event(first, "fp-e1", fault_class="certification", status="resolved")]))
    assert node_of(emu, first)["metadata"]["resourceVersion"] == before and incident_of(emu, first)["id"] == new_incident["id"]

    # a manual release names the incident; the wrong id changes nothing
    wrong = ansible_run("dsxos.cluster.release", extra_vars=base_vars(emu, tmp_path, sentinel_nodes=[second], sentinel_incident=old_incident))
    assert stats_of(wrong)["outcomes"][0]["status"] == "skipped" and incident_of(emu, second) is not None
    ansible_run("dsxos.cluster.release", extra_vars=base_vars(emu, tmp_path, sentinel_nodes=[second],
                                                              sentinel_incident=incident_of(emu, second)["id"]))
    assert node_of(emu, second)["spec"]["unschedulable"] is True, "a cordon someone else set survives the release"
    assert incident_of(emu, second) is None and PRIOR not in node_of(emu, second)["metadata"]["annotations"]


def test_breaker_trips_at_its_threshold_and_never_blocks_a_release(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    nodes = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    breaker = {"max_nodes": 1, "max_fraction": 1.0}
    events = [event(n, f"fp-f{i}", fault_class="certification") for i, n in enumerate(nodes[:2])]
    run1 = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_events=events,
                                                                       sentinel_circuit_breaker=breaker))
    outcomes = {o["node"]: o for o in stats_of(run1)["outcomes"]}
    assert outcomes[nodes[0]]["status"] == "quarantined"
    assert outcomes[nodes[1]]["status"] == "skipped" and "circuit breaker" in outcomes[nodes[1]]["message"]
    assert not node_of(emu, nodes[1])["spec"].get("unschedulable") and incident_of(emu, nodes[1]) is None
    cm = emu.api.get("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system")
    assert cm["data"]["status"] == "open"
    released = ansible_run("dsxos.cluster.release", extra_vars=base_vars(emu, tmp_path, sentinel_circuit_breaker=breaker, sentinel_events=[
        event(nodes[0], "fp-f0", fault_class="certification", status="resolved")]))
    assert stats_of(released)["outcomes"][0]["status"] == "released"
    assert not node_of(emu, nodes[0])["spec"].get("unschedulable")


def test_dry_run_and_check_mode_write_nothing(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    target = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")[0]
    before = node_of(emu, target)["metadata"]["resourceVersion"]
    dry = ansible_run("dsxos.cluster.remediate", extra_vars=base_vars(emu, tmp_path, sentinel_events=[event(target, "fp-g1")],
                                                                      sentinel_dry_run=True))
    assert stats_of(dry)["outcomes"][0]["status"] == "dry_run" and "would open reboot" in stats_of(dry)["outcomes"][0]["message"]
    checked = ansible_run("dsxos.cluster.remediate", check=True, extra_vars=base_vars(emu, tmp_path, sentinel_events=[event(target, "fp-g1")]))
    assert stats_of(checked)["outcomes"][0]["status"] == "check_mode"
    assert node_of(emu, target)["metadata"]["resourceVersion"] == before and not events_of(emu, target)
    assert emu.api.find("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system") is None
