# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""node_quarantine in-process against the emulator: run_node_action and the NODE_QUARANTINE entry (no ansible-playbook)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_QUARANTINE, node_quarantine_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import QuarantineOptions, run_node_action
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import QuarantineStateError
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

PRIOR = "dsxos.io/quarantine-prior"
HISTORY = "dsxos.io/quarantine-history"
STATE = "dsxos.io/quarantine"
FAULT = {"key": "dsxos.io/gpu-fault", "value": "xid-79", "effect": "NoSchedule"}
FOREIGN = {"key": "team.example.com/maintenance", "effect": "NoSchedule"}


def params(emu, **kw):
    out = {key: spec.get("default") for key, spec in NODE_QUARANTINE.spec.items()}
    out.update(kubeconfig=emu.kubeconfig_path, retry_backoff_s=0)
    out.update(kw)
    return out


def node(emu, name):
    return emu.api.get("v1", "Node", name)


@pytest.fixture
def gpu_nodes(k8s_emulator):
    """Three GPU nodes; the second carries a foreign taint, the third a foreign cordon."""
    names = k8s_emulator.add_nodes(3, "h100-eks", name_prefix="gpu-")
    k8s_emulator.taint(names[1], FOREIGN["key"], FOREIGN["effect"])
    k8s_emulator.cordon(names[2])
    return k8s_emulator, names


def test_cordon_records_reason_and_prior_state_and_release_restores_it(gpu_nodes):
    emu, names = gpu_nodes
    cordoned = call_entry(NODE_QUARANTINE, params(emu, nodes=names, action="cordon", reason="XID 79 alert", taints=[FAULT], actor="ops-bot"))
    assert "failed" not in cordoned and cordoned["changed_nodes"] == names
    for name, was_cordoned, had in ((names[0], False, []), (names[1], False, [FOREIGN]), (names[2], True, [])):
        obj = node(emu, name)
        assert obj["spec"]["unschedulable"] is True and FAULT in obj["spec"]["taints"]
        assert obj["metadata"]["labels"][STATE] == "quarantined"
        prior = json.loads(obj["metadata"]["annotations"][PRIOR])
        assert prior["reason"] == "XID 79 alert" and prior["actor"] == "ops-bot"
        assert prior["prior"]["unschedulable"] is was_cordoned and prior["prior"]["taints"] == had
        history = json.loads(obj["metadata"]["annotations"][HISTORY])
        assert [(h["action"], h["reason"], h["actor"]) for h in history] == [("cordon", "XID 79 alert", "ops-bot")]

    again = call_entry(NODE_QUARANTINE, params(emu, nodes=names, action="cordon", reason="XID 79 alert", taints=[FAULT]))
    assert again["changed"] is False, "the same cordon twice is idempotent"

    released = call_entry(NODE_QUARANTINE, params(emu, nodes=names, action="release", reason="GPU replaced"))
    assert released["changed_nodes"] == names
    first, tainted, cordoned_before = (node(emu, n) for n in names)
    assert not first["spec"].get("unschedulable") and not first["spec"].get("taints")
    assert tainted["spec"]["taints"] == [FOREIGN], "a taint someone else set survives the release"
    assert cordoned_before["spec"]["unschedulable"] is True, "a cordon someone else set survives the release"
    for obj in (first, tainted, cordoned_before):
        assert obj["metadata"]["labels"][STATE] == "released" and PRIOR not in obj["metadata"]["annotations"]
        assert json.loads(obj["metadata"]["annotations"][HISTORY])[-1]["action"] == "release"


def test_check_mode_changes_nothing_and_diff_shows_the_change(gpu_nodes):
    emu, names = gpu_nodes
    before = [node(emu, n) for n in names]
    result = call_entry(NODE_QUARANTINE, params(emu, nodes=names[:2], action="cordon", reason="XID 79", taints=[FAULT]),
                        check_mode=True, diff=True)
    assert result["changed"] is True and result["changed_nodes"] == names[:2]
    assert set(result["diff"]["before"]) == set(names[:2]) and result["diff"]["after"][names[0]]["unschedulable"] is True
    assert emu.api_calls("patch", "nodes") == 0
    assert [node(emu, n) for n in names] == before
    plain = call_entry(NODE_QUARANTINE, params(emu, nodes=names[:1], action="cordon", reason="XID 79"), check_mode=True)
    assert "diff" not in plain


def test_dry_run_sends_patches_that_store_nothing(gpu_nodes):
    emu, names = gpu_nodes
    result = call_entry(NODE_QUARANTINE, params(emu, nodes=names[:1], action="cordon", reason="XID 79", dry_run=True))
    assert result["changed"] and emu.api_calls("patch", "nodes") == 1
    assert not node(emu, names[0])["spec"].get("unschedulable")


def test_untaint_without_effect_removes_every_effect_of_the_key(gpu_nodes):
    """A taint entry as Ansible fills it (``value``/``effect`` None) is accepted: the entry drops the None fields."""
    emu, names = gpu_nodes
    both = [FAULT, dict(FAULT, effect="NoExecute")]
    call_entry(NODE_QUARANTINE, params(emu, nodes=names[:1], action="taint", reason="XID 79", taints=both))
    assert len(node(emu, names[0])["spec"]["taints"]) == 2
    result = call_entry(NODE_QUARANTINE, params(emu, nodes=names[:1], action="untaint",
                                                taints=[{"key": FAULT["key"], "value": None, "effect": None}]))
    assert "failed" not in result and result["changed"]
    assert not node(emu, names[0])["spec"].get("taints")


def test_missing_node_is_reported_and_fails_unless_ignored(gpu_nodes):
    emu, names = gpu_nodes
    failed = call_entry(NODE_QUARANTINE, params(emu, nodes=[names[0], "no-such-node"], action="cordon", reason="t"))
    assert failed["failed"] and failed["missing_nodes"] == ["no-such-node"] and failed["changed_nodes"] == [names[0]]
    assert "ignore_missing" in failed["msg"]
    ignored = call_entry(NODE_QUARANTINE, params(emu, nodes=["no-such-node"], action="cordon", reason="t", ignore_missing=True))
    assert "failed" not in ignored and ignored["missing_nodes"] == ["no-such-node"]


def test_run_node_action_reports_each_node(gpu_nodes):
    emu, names = gpu_nodes
    with client_from_params({"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0}) as client:
        report = run_node_action(client, names, QuarantineOptions(action="label", reason="RMA 1234", labels={"dsxos.io/repair": "rma"}))
    assert [r.status for r in report.results] == ["changed"] * 3 and not report.failed
    assert all(node(emu, n)["metadata"]["labels"]["dsxos.io/repair"] == "rma" for n in names)


@pytest.mark.parametrize("nodes", [["gpu-1; rm -rf /"], ["Gpu-0"], ["gpu-0", "a..b"], []])
def test_invalid_node_names_are_refused_before_any_api_call(k8s_emulator, nodes):
    with pytest.raises((K8sInvalidName, QuarantineStateError)):
        node_quarantine_from_params(params(k8s_emulator, nodes=nodes, action="cordon", reason="t"))
    result = call_entry(NODE_QUARANTINE, params(k8s_emulator, nodes=nodes, action="cordon", reason="t"))
    assert result["failed"] and result["error"]["error"] in ("K8sInvalidName", "QuarantineStateError")
    assert k8s_emulator.api_calls() == 0


@pytest.mark.parametrize("options, needle", [
    ({"action": "cordon", "reason": None}, "reason is required"),
    ({"action": "taint", "reason": "x", "taints": []}, "needs at least one entry in taints"),
    ({"action": "release", "taints": [FAULT]}, "takes no taints or labels"),
    ({"action": "label", "reason": "x", "labels": {STATE: "x"}}, "is managed by dsxos.cluster.node_quarantine"),
    ({"action": "cordon", "reason": "x", "history_limit": -1}, "history_limit"),
    ({"action": "cordon", "reason": "x", "circuit_breaker": {"max_fraction": 2}}, "max_fraction"),
])
def test_bad_options_are_refused_before_any_api_call(k8s_emulator, options, needle):
    result = call_entry(NODE_QUARANTINE, params(k8s_emulator, nodes=["gpu-0"], **options))
    assert result["failed"] and needle in result["msg"]
    assert k8s_emulator.api_calls() == 0


def test_a_malformed_record_on_a_node_names_the_node(gpu_nodes):
    emu, names = gpu_nodes
    emu.api.patch("v1", "Node", names[0], {"metadata": {"annotations": {PRIOR: "{not json"}}})
    result = call_entry(NODE_QUARANTINE, params(emu, nodes=names[:1], action="release"))
    assert result["failed"] and result["failed_nodes"] == [names[0]]
    error = result["nodes"][0]["error"]
    assert error["error"] == "QuarantineStateError" and error["node"] == names[0]
