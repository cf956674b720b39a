# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Prior-state bookkeeping of node quarantines (pure logic, no API)."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (
    ANN_HISTORY, ANN_PRIOR, LABEL_STATE, QuarantineRequest, QuarantineStateError, Taint, check_request, history_patch,
    plan_action,
)

FOREIGN = {"key": "team.example.com/maintenance", "effect": "NoSchedule"}
OURS = Taint("dsxos.io/gpu-fault", "NoSchedule", "xid-79")


def node(unschedulable: bool = False, taints: Any = None, labels: Any = None, annotations: Any = None, rv: str = "7") -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = list(taints)
    return {"metadata": {"name": "gpu-1", "resourceVersion": rv, "labels": dict(labels or {}), "annotations": dict(annotations or {})},
            "spec": spec}


def apply(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply our strategic merge patch like the API server (maps merge, null deletes, taints list replaced)."""
    out = copy.deepcopy(obj)
    meta = patch.get("metadata") or {}
    assert meta.get("resourceVersion") == obj["metadata"]["resourceVersion"], "patch must carry the resourceVersion precondition"
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


def req(action: str, reason: str | None = "xid 79", **kwargs: Any) -> QuarantineRequest:
    kwargs.setdefault("actor", "tester@host")
    kwargs.setdefault("operation_id", "op-test")
    return QuarantineRequest(action=action, reason=reason, now="2026-01-01T00:00:00.000Z", **kwargs)


def test_cordon_records_reason_and_prior_in_the_same_patch():
    plan = plan_action(node(), req("cordon"))
    assert plan.changed and plan.new_quarantine
    assert plan.patch["spec"] == {"unschedulable": True}
    annotations = plan.patch["metadata"]["annotations"]
    prior = json.loads(annotations[ANN_PRIOR])
    assert prior["prior"]["unschedulable"] is False and prior["applied"]["cordon"] is True and prior["reason"] == "xid 79"
    history = json.loads(annotations[ANN_HISTORY])
    assert history == [{"action": "cordon", "reason": "xid 79", "actor": "tester@host", "time": "2026-01-01T00:00:00.000Z",
                        "op": "op-test", "spec": ["unschedulable"]}]
    assert plan.patch["metadata"]["labels"] == {LABEL_STATE: "quarantined"}


def test_second_cordon_same_reason_is_no_change_different_reason_is_recorded():
    after = apply(node(), plan_action(node(), req("cordon")).patch)
    again = plan_action(after, req("cordon"))
    assert not again.changed and again.patch is None
    other = plan_action(after, req("cordon", reason="xid 48"))
    assert other.changed and "spec" not in other.patch
    assert json.loads(other.patch["metadata"]["annotations"][ANN_PRIOR])["reason"] == "xid 48"
    assert len(json.loads(other.patch["metadata"]["annotations"][ANN_HISTORY])) == 2


def test_release_keeps_foreign_cordon_and_taint():
    start = node(unschedulable=True, taints=[FOREIGN])
    quarantined = apply(start, plan_action(start, req("cordon", taints=(OURS,))).patch)
    assert quarantined["spec"]["taints"] == [FOREIGN, OURS.to_dict()]
    prior = json.loads(quarantined["metadata"]["annotations"][ANN_PRIOR])
    assert prior["prior"]["unschedulable"] is True and prior["applied"]["cordon"] is False
    released = apply(quarantined, plan_action(quarantined, req("release", reason=None)).patch)
    assert released["spec"]["unschedulable"] is True, "someone else's cordon must survive a release"
    assert released["spec"]["taints"] == [FOREIGN]
    assert ANN_PRIOR not in released["metadata"]["annotations"]
    assert released["metadata"]["labels"][LABEL_STATE] == "released"
    assert not plan_action(released, req("release", reason=None)).changed


def test_release_removes_our_cordon_and_restores_overwritten_taint_value_and_labels():
    start = node(taints=[{"key": "dsxos.io/gpu-fault", "effect": "NoSchedule", "value": "old"}], labels={"team": "a"})
    step1 = apply(start, plan_action(start, req("cordon", taints=(OURS,))).patch)
    assert step1["spec"]["taints"] == [OURS.to_dict()]
    step2 = apply(step1, plan_action(step1, req("label", labels=(("team", "repair"), ("rma", "1234")))).patch)
    assert step2["metadata"]["labels"]["team"] == "repair" and step2["metadata"]["labels"]["rma"] == "1234"
    released = apply(step2, plan_action(step2, req("release", reason="fixed")).patch)
    assert "unschedulable" not in released["spec"]
    assert released["spec"]["taints"] == [{"key": "dsxos.io/gpu-fault", "effect": "NoSchedule", "value": "old"}]
    assert released["metadata"]["labels"] == {"team": "a", LABEL_STATE: "released"}


def test_uncordon_of_last_claim_ends_the_quarantine():
    cordoned = apply(node(), plan_action(node(), req("cordon")).patch)
    plan = plan_action(cordoned, req("uncordon", reason=None))
    assert plan.patch["spec"] == {"unschedulable": None}
    out = apply(cordoned, plan.patch)
    assert ANN_PRIOR not in out["metadata"]["annotations"] and out["metadata"]["labels"][LABEL_STATE] == "released"


def test_untaint_without_effect_removes_every_effect_and_keeps_quarantine_while_cordoned():
    taints = (Taint("dsxos.io/gpu-fault", "NoSchedule"), Taint("dsxos.io/gpu-fault", "NoExecute"))
    tainted = apply(node(), plan_action(node(), req("cordon", taints=taints)).patch)
    out = apply(tainted, plan_action(tainted, req("untaint", reason=None, taints=(Taint("dsxos.io/gpu-fault", ""),))).patch)
    assert "taints" not in out["spec"] and out["spec"]["unschedulable"] is True
    assert out["metadata"]["labels"][LABEL_STATE] == "quarantined"
    assert json.loads(out["metadata"]["annotations"][ANN_PRIOR])["applied"]["taints"] == []


def test_foreign_cordon_gets_a_recorded_reason_and_keep_existing_reason():
    foreign = node(unschedulable=True)
    plan = plan_action(foreign, req("cordon", reason="drain: maintenance", keep_existing_reason=True))
    assert plan.changed and "spec" not in plan.patch
    recorded = apply(foreign, plan.patch)
    assert json.loads(recorded["metadata"]["annotations"][ANN_PRIOR])["reason"] == "drain: maintenance"
    kept = plan_action(recorded, req("cordon", reason="drain: another", keep_existing_reason=True))
    assert not kept.changed


def test_history_is_bounded_and_history_patch_appends():
    current = node()
    for index in range(30):
        action = "cordon" if index % 2 == 0 else "uncordon"
        current = apply(current, plan_action(current, req(action, reason=f"r{index}", history_limit=5)).patch)
    history = json.loads(current["metadata"]["annotations"][ANN_HISTORY])
    assert len(history) == 5 and history[-1]["reason"] == "r29"
    patch = history_patch(current, {"action": "drain-failed", "reason": "pdb web"}, history_limit=5)
    assert json.loads(patch["metadata"]["annotations"][ANN_HISTORY])[-1]["action"] == "drain-failed"
    assert patch["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]


def test_malformed_prior_annotation_names_node_and_annotation():
    broken = node(annotations={ANN_PRIOR: "{not json"})
    with pytest.raises(QuarantineStateError, match=r"gpu-1.*dsxos.io/quarantine-prior"):
        plan_action(broken, req("release", reason=None))


@pytest.mark.parametrize("action,reason,taints,labels,match", [
    ("cordon", None, [], None, "reason is required"),
    ("cordon", "   ", [], None, "reason is required"),
    ("taint", "x", [], None, "needs at least one entry in taints"),
    ("taint", "x", [{"key": "a", "effect": "Sometimes"}], None, "effect must be one of"),
    ("taint", "x", [{"key": "a", "effect": "NoSchedule", "colour": "red"}], None, "unknown field"),
    ("label", "x", [], {LABEL_STATE: "x"}, "reserved|managed"),
    ("release", None, [{"key": "a", "effect": "NoSchedule"}], None, "takes no taints"),
    ("explode", "x", [], None, "unknown action"),
])
def test_check_request_rejects_bad_options(action, reason, taints, labels, match):
    with pytest.raises(QuarantineStateError, match=match):
        check_request(action, reason, taints, labels)


def test_check_request_rejects_invalid_label_and_taint_names():
    with pytest.raises(K8sInvalidName, match="rm -rf"):
        check_request("label", "x", [], {"ok": "rm -rf /"})
    with pytest.raises(K8sInvalidName, match="Bad Key"):
        check_request("taint", "x", [{"key": "Bad Key", "effect": "NoSchedule"}], None)
