# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Two sentinel defects, fixed:

* a sentinel release undid a FOREIGN cordon: the quarantine record holds one cordon per node, and a release undid it
  even when another actor had asked for it through node_quarantine (before the sentinel, or independently after). The
  record now keeps every actor that asked for each thing (``held_by``) and the sentinel releases with
  ``release_scope: actor``: only what it alone holds is undone; the rest keeps its record and its owner's reason.
* a lost incident PATCH (applied, response lost, the client's retry meets 409) counted a remediation attempt twice: the
  attempt now carries a key written in the same patch, and a re-planned write finds it already counted.
"""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_QUARANTINE
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import ANN_ATTEMPTS, ANN_INCIDENT
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_changes import AdvanceRequest, OpenRequest, plan_advance, plan_open
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import format_time, parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (
    ANN_PRIOR, LABEL_STATE, QuarantineRequest, QuarantineStateError, Taint, plan_action,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import run_node_incident, validate_options
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

SENTINEL = "dsxos-sentinel"
QUARANTINE_TAINT = Taint("dsxos.io/quarantine", "NoSchedule")


def node(unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"unschedulable": True} if unschedulable else {}
    return {"metadata": {"name": "gpu-1", "resourceVersion": "1", "labels": {}, "annotations": {}}, "spec": spec}


def apply(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = patch.get("metadata") or {}
    for section in ("labels", "annotations"):
        for key, value in (meta.get(section) or {}).items():
            if value is None:
                out["metadata"][section].pop(key, None)
            else:
                out["metadata"][section][key] = value
    for key, value in (patch.get("spec") or {}).items():
        if value is None:
            out["spec"].pop(key, None)
        else:
            out["spec"][key] = value
    out["metadata"]["resourceVersion"] = str(int(out["metadata"]["resourceVersion"]) + 1)
    return out


def act(obj: dict[str, Any], action: str, actor: str, reason: str | None = None, **kwargs: Any) -> dict[str, Any]:
    plan = plan_action(obj, QuarantineRequest(action=action, reason=reason, actor=actor, now="2026-03-01T10:00:00.000Z", **kwargs))
    return apply(obj, plan.patch) if plan.changed else obj


def record(obj: dict[str, Any]) -> dict[str, Any]:
    return json.loads(obj["metadata"]["annotations"][ANN_PRIOR])


# ---------------------------------------------------------------------------------------------------- (a) foreign cordon

def test_sentinel_release_keeps_a_cordon_another_actor_asked_for_before():
    alice = act(node(), "cordon", "ops-alice", "RMA 4711")
    quarantined = act(alice, "cordon", SENTINEL, "sentinel incident sen-000000000001: reboot", taints=(QUARANTINE_TAINT,))
    assert record(quarantined)["held_by"] == {"cordon": ["dsxos-sentinel", "ops-alice"],
                                              "taint:dsxos.io/quarantine:NoSchedule": ["dsxos-sentinel"]}

    released = act(quarantined, "release", SENTINEL, "sentinel incident sen-000000000001 released", release_scope="actor")

    assert released["spec"].get("unschedulable") is True, "the cordon ops-alice asked for survives the sentinel's release"
    assert not released["spec"].get("taints"), "the sentinel's own taint is undone"
    kept = record(released)
    assert (kept["reason"], kept["actor"]) == ("RMA 4711", "ops-alice"), "what stays keeps its owner's reason"
    assert kept["held_by"] == {"cordon": ["ops-alice"]} and kept["applied"]["cordon"] is True and kept["applied"]["taints"] == []
    assert released["metadata"]["labels"][LABEL_STATE] == "quarantined"
    # ops-alice's own release then returns the node to exactly its state before anyone's quarantine
    free = act(released, "release", "ops-alice", "RMA done", release_scope="actor")
    assert not free["spec"].get("unschedulable") and ANN_PRIOR not in free["metadata"]["annotations"]
    assert free["metadata"]["labels"][LABEL_STATE] == "released"


def test_sentinel_release_keeps_a_cordon_another_actor_asked_for_independently_after():
    quarantined = act(node(), "cordon", SENTINEL, "sentinel incident sen-000000000002: reboot", taints=(QUARANTINE_TAINT,))
    both = act(quarantined, "cordon", "ops-bob", "kernel upgrade window")
    assert record(both)["held_by"]["cordon"] == ["dsxos-sentinel", "ops-bob"]
    released = act(both, "release", SENTINEL, "sentinel incident sen-000000000002 returned", release_scope="actor")
    assert released["spec"].get("unschedulable") is True and not released["spec"].get("taints")
    assert record(released)["reason"] == "kernel upgrade window", "never cordoned without a recorded reason"


def test_the_sentinel_alone_gets_everything_undone_and_an_operator_release_undoes_everything():
    quarantined = act(node(), "cordon", SENTINEL, "sentinel incident sen-000000000003: reboot", taints=(QUARANTINE_TAINT,))
    alone = act(quarantined, "release", SENTINEL, "returned", release_scope="actor")
    assert not alone["spec"].get("unschedulable") and not alone["spec"].get("taints")
    assert ANN_PRIOR not in alone["metadata"]["annotations"] and alone["metadata"]["labels"][LABEL_STATE] == "released"

    shared = act(act(node(), "cordon", "ops-alice", "RMA 4711"), "cordon", SENTINEL, "sentinel incident", taints=(QUARANTINE_TAINT,))
    everything = act(shared, "release", "ops-carol", "all clear")  # release_scope all (the default): an operator's release
    assert not everything["spec"].get("unschedulable") and ANN_PRIOR not in everything["metadata"]["annotations"]


def test_a_cordon_from_kubectl_before_the_sentinel_still_survives_and_old_records_read_their_first_applier():
    kubectl = act(node(unschedulable=True), "cordon", SENTINEL, "sentinel incident", taints=(QUARANTINE_TAINT,))
    assert act(kubectl, "release", SENTINEL, "released", release_scope="actor")["spec"]["unschedulable"] is True

    old = act(node(), "cordon", "ops-alice", "RMA 4711")
    text = record(old)
    text.pop("held_by")  # a record written before claims were kept
    old["metadata"]["annotations"][ANN_PRIOR] = json.dumps(text)
    assert not plan_action(old, QuarantineRequest(action="cordon", reason="RMA 4711", actor="ops-alice")).changed
    shared = act(old, "cordon", SENTINEL, "sentinel incident", taints=(QUARANTINE_TAINT,))
    assert act(shared, "release", SENTINEL, "released", release_scope="actor")["spec"]["unschedulable"] is True


def test_the_same_cordon_by_another_actor_with_the_same_reason_changes_nothing_and_scope_is_checked():
    first = act(node(), "cordon", "ops-alice", "RMA 4711")
    assert not plan_action(first, QuarantineRequest(action="cordon", reason="RMA 4711", actor="ops-bob")).changed
    with pytest.raises(QuarantineStateError, match="release_scope"):
        plan_action(first, QuarantineRequest(action="release", actor="ops-alice", release_scope="mine"))


def test_node_quarantine_module_release_scope_actor_against_the_emulator(k8s_emulator):
    emu = k8s_emulator
    name = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]

    def params(**kw: Any) -> dict[str, Any]:
        out = {key: spec.get("default") for key, spec in NODE_QUARANTINE.spec.items()}
        out.update(kubeconfig=emu.kubeconfig_path, retry_backoff_s=0.01, nodes=[name])
        out.update(kw)
        return out

    assert call_entry(NODE_QUARANTINE, params(action="cordon", reason="RMA 4711", actor="ops-alice"))["changed"]
    assert call_entry(NODE_QUARANTINE, params(action="cordon", reason="sentinel incident sen-00000000000a", actor=SENTINEL,
                                              taints=[{"key": "dsxos.io/quarantine", "effect": "NoSchedule"}]))["changed"]
    result = call_entry(NODE_QUARANTINE, params(action="release", reason="released", actor=SENTINEL, release_scope="actor"))
    assert "failed" not in result and result["changed"], result
    obj = emu.api.get("v1", "Node", name)
    assert obj["spec"]["unschedulable"] is True and not obj["spec"].get("taints")
    assert json.loads(obj["metadata"]["annotations"][ANN_PRIOR])["actor"] == "ops-alice"
    bad = call_entry(NODE_QUARANTINE, params(action="release", release_scope="everything"))
    assert bad.get("failed"), bad


# ---------------------------------------------------------------------------------------------------- (b) attempt counted once

T0 = parse_rfc3339("2026-03-01T10:00:00Z")


def _apply_change(obj: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    for section, values in (("annotations", change.annotations), ("labels", change.labels)):
        for key, value in values.items():
            if value is None:
                meta[section].pop(key, None)
            else:
                meta[section][key] = value
    return out


def test_a_keyed_attempt_is_counted_once_however_often_it_is_planned():
    obj = node()
    obj = _apply_change(obj, plan_open(NodeIncidents.from_node(obj), OpenRequest(
        incident="sen-000000000001", action="reboot", reason="sentinel incident", events=({"fingerprint": "fp-1", "starts_at": format_time(T0)},),
        state="quarantined"), format_time(T0 + 1)))
    request = AdvanceRequest(incident="sen-000000000001", state="remediating", attempt=True, attempt_key="run-1/op-1")
    counted = plan_advance(NodeIncidents.from_node(obj), request, format_time(T0 + 2), T0 + 2)
    assert counted.changed and counted.result["incident"]["attempts"] == 1
    obj = _apply_change(obj, counted)
    assert json.loads(obj["metadata"]["annotations"][ANN_ATTEMPTS])[0]["key"] == "run-1/op-1"
    again = plan_advance(NodeIncidents.from_node(obj), request, format_time(T0 + 3), T0 + 3)
    assert not again.changed and again.result["attempt_counted"] and again.result["incident"]["attempts"] == 1
    # another attempt (another key: a later run resuming) is counted
    other = plan_advance(NodeIncidents.from_node(obj), AdvanceRequest(incident="sen-000000000001", state="remediating", attempt=True,
                                                                      attempt_key="run-2/op-9"), format_time(T0 + 4), T0 + 4)
    assert other.changed and other.result["incident"]["attempts"] == 2


def test_a_lost_incident_patch_response_does_not_count_the_attempt_twice(k8s_emulator):
    emu = k8s_emulator
    name = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    client = KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig_path, "retries": 3, "retry_backoff_s": 0.01}))
    incident = "sen-00000000000b"

    def run(**params: Any) -> dict[str, Any]:
        return run_node_incident(client, validate_options(dict(params, node=name, incident=incident)))

    with client:
        run(action="open", remediation="reboot", reason="sentinel incident x", state="quarantined",
            events=[{"fingerprint": "fp-1", "starts_at": "2026-03-01T10:00:00Z"}])
        emu.faults.set(f"/api/v1/nodes/{name}", methods=["PATCH"], apply_drop_rate=1.0, limit=1)
        result = run(action="advance", state="remediating", attempt=True, remediation="reboot")
    assert emu.faults.injected["apply_drop"] == 1, "the first PATCH was applied and its answer dropped"
    assert "failed" not in result and result["changed"] and result["response_lost"], result
    annotations = emu.api.get("v1", "Node", name)["metadata"]["annotations"]
    assert json.loads(annotations[ANN_INCIDENT])["attempts"] == 1, "the attempt is counted once"
    assert len(json.loads(annotations[ANN_ATTEMPTS])) == 1
    assert result["incident"]["attempts"] == 1 and result["event"]["reason"] == "SentinelRemediating"


# ---------------------------------------------------------------------------------------------------- found by the chain test

def test_a_second_alert_that_fired_during_an_incident_and_arrives_after_it_returned_starts_nothing():
    """A second alert posted during a remediation may reach the sentinel only after the incident returned (remediated
    and recertified). It would have joined the incident, so it is a replay; an alert that started after the end opens a
    new incident, and one that started before the incident's first alert is not refused by it. An incident RELEASED
    because its alerts resolved covers only its own alerts: one that started meanwhile and still fires was never handled
    (the release's close refuses to swallow a joined one) and opens a new incident - no older event cancels a fresh fault."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_changes import AdvanceRequest, plan_advance, plan_close
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_replay import classify_firing

    def ended(outcome):
        obj = node()
        obj = _apply_change(obj, plan_open(NodeIncidents.from_node(obj), OpenRequest(
            incident="sen-000000000001", action="reboot", reason="sentinel incident", events=({"fingerprint": "fp-1", "starts_at": format_time(T0)},)),
            format_time(T0 + 1)))
        if outcome == "returned":
            for offset, state in ((10, "draining"), (11, "drained"), (12, "remediating"), (60, "recertifying")):
                obj = _apply_change(obj, plan_advance(NodeIncidents.from_node(obj), AdvanceRequest(incident="sen-000000000001", state=state),
                                                      format_time(T0 + offset), T0 + offset))
        obj = _apply_change(obj, plan_close(NodeIncidents.from_node(obj), "sen-000000000001", outcome, "", format_time(T0 + 100)))
        return NodeIncidents.from_node(obj)
    returned, released = ended("returned"), ended("released")
    assert classify_firing(returned, "fp-2", format_time(T0 + 50)).kind == "replay", "fired during the remediation: covered by it"
    assert classify_firing(released, "fp-2", format_time(T0 + 50)).kind == "new", "a released incident never looked at it"
    assert classify_firing(returned, "fp-2", format_time(T0 + 70)).kind == "new", "fired during the recertification: not vouched for"
    for view in (returned, released):
        assert classify_firing(view, "fp-2", format_time(T0 + 150)).kind == "new", "fired after the incident ended"
        assert classify_firing(view, "fp-0", format_time(T0 - 5)).kind == "new", "an ended incident refuses only what it covered"
        assert classify_firing(view, "fp-1", format_time(T0)).kind == "replay", "its own alert, re-sent, is a replay"
