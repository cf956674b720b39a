# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""node_drain in-process against the emulator: drain_nodes and the NODE_DRAIN entry (no ansible-playbook).

Timings are short and explicit (emulator time scale 0.01, PDB retries every 10-50 ms, small timeouts); a budget that must
block is made to block by its spec, and is lifted by the test, so nothing depends on how fast the machine is.
"""
from __future__ import annotations

import json
import threading

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import DrainPolicy
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_DRAIN, node_drain_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import node_drain as node_drain_module
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import DrainError, DrainOptions, drain_nodes
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

HOST = "kubernetes.io/hostname"
PRIOR = "dsxos.io/quarantine-prior"
HISTORY = "dsxos.io/quarantine-history"
FAST = {"pdb_retry_s": 0.01, "pdb_retry_max_s": 0.05}


def running(emu, namespace, selector):
    return [p for p in emu.api.pods(namespace, label_selector=selector)
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def client_for(emu):
    return client_from_params({"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0})


def entry_params(emu, **kw):
    out = {key: spec.get("default") for key, spec in NODE_DRAIN.spec.items()}
    out.update(kubeconfig=emu.kubeconfig_path, retry_backoff_s=0, **FAST)
    out.update(kw)
    return out


@pytest.fixture
def guarded(k8s_emulator):
    """Two GPU nodes; ``solo`` (1 replica, grace 1 s emulated) on the first, guarded by a minAvailable-1 budget."""
    emu = k8s_emulator
    nodes = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    emu.add_deployment("solo", replicas=1, node_selector={HOST: nodes[0]}, grace_s=1)
    emu.wait_for(lambda: len(running(emu, "default", "app=solo")) == 1, 20, what="solo running")
    emu.add_pdb("solo", {"app": "solo"}, min_available=1)
    emu.settle()
    return emu, nodes


def test_drain_waits_while_a_budget_blocks_and_finishes_once_it_allows(guarded):
    emu, nodes = guarded
    reports = []
    with client_for(emu) as client:
        worker = threading.Thread(target=lambda: reports.append(drain_nodes(client, [nodes[0]], DrainOptions(
            reason="XID 79", timeout_s=30, **FAST))))
        worker.start()
        try:
            emu.wait_for(lambda: emu.api_calls("create", "pods/eviction") >= 3, 20, what="evictions refused by the budget")
            assert emu.api.pods("default", node=nodes[0]), "the budget must hold the pod while it refuses"
            assert emu.api.get("v1", "Node", nodes[0])["spec"]["unschedulable"] is True, "the node is cordoned first"
            emu.api.patch("policy/v1", "PodDisruptionBudget", "solo", {"spec": {"minAvailable": 0}}, namespace="default")
        finally:
            worker.join(30)
    assert not worker.is_alive() and reports
    result = reports[0].results[0]
    assert result.status == "drained" and not reports[0].failed
    pod = result.pods[0]
    assert pod.outcome == "evicted" and pod.attempts >= 3 and "PodDisruptionBudget solo" in pod.reason
    assert not emu.api.pods("default", node=nodes[0], label_selector="app=solo")
    node = emu.api.get("v1", "Node", nodes[0])
    assert json.loads(node["metadata"]["annotations"][PRIOR])["reason"] == "drain: XID 79"


def test_budget_that_never_allows_fails_naming_it_and_the_node_stays_cordoned(guarded):
    emu, nodes = guarded
    with client_for(emu) as client:
        report = drain_nodes(client, [nodes[0]], DrainOptions(reason="maintenance", timeout_s=0.3, **FAST))
    result = report.results[0]
    assert report.failed and result.status == "timed_out" and result.blocking_pdbs() == ["solo"]
    assert result.pods[0].outcome == "pdb_blocked" and "blocking PodDisruptionBudget(s): solo" in report.msg
    assert len(running(emu, "default", "app=solo")) == 1 and not emu.pdb_violated("solo")
    node = emu.api.get("v1", "Node", nodes[0])
    assert node["spec"]["unschedulable"] is True
    assert json.loads(node["metadata"]["annotations"][HISTORY])[-1]["action"] == "drain-failed"


def test_dry_run_evicts_nothing(guarded):
    emu, nodes = guarded
    emu.add_deployment("web", replicas=1, node_selector={HOST: nodes[1]})
    emu.wait_for(lambda: len(running(emu, "default", "app=web")) == 1, 20, what="web running")
    before = {p["metadata"]["name"] for p in emu.api.pods(None)}
    with client_for(emu) as client:
        report = drain_nodes(client, nodes, DrainOptions(reason="preview", dry_run=True, **FAST))
    outcomes = {r.node: [p.outcome for p in r.pods] for r in report.results}
    assert outcomes[nodes[0]] == ["pdb_blocked"], "the server checks the budget in a dry run too"
    assert outcomes[nodes[1]] == ["dry_run_ok"]
    assert {p["metadata"]["name"] for p in emu.api.pods(None)} == before
    assert not any(p["metadata"].get("deletionTimestamp") for p in emu.api.pods(None))
    for name in nodes:
        assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable"), "a dry run cordons nothing"


def test_check_mode_changes_nothing(guarded):
    emu, nodes = guarded
    result = call_entry(NODE_DRAIN, entry_params(emu, nodes=[nodes[0]], reason="preview"), check_mode=True)
    assert result["changed"] is True and "failed" not in result
    assert result["totals"] == {"would_evict": 1} and result["msg"].startswith("would drain 1 node")
    assert emu.api_calls("create", "pods/eviction") == 0 and emu.api_calls("patch", "nodes") == 0
    assert not emu.api.get("v1", "Node", nodes[0])["spec"].get("unschedulable")
    assert len(running(emu, "default", "app=solo")) == 1


def test_entry_drains_and_a_rerun_changes_nothing(guarded):
    emu, nodes = guarded
    emu.add_deployment("web", replicas=2, node_selector={HOST: nodes[1]})
    emu.wait_for(lambda: len(running(emu, "default", "app=web")) == 2, 20, what="web running")
    first = call_entry(NODE_DRAIN, entry_params(emu, nodes=[nodes[1]], reason="kernel upgrade", timeout_s=20))
    assert first["changed"] and first["drained_nodes"] == [nodes[1]] and first["totals"] == {"evicted": 2}
    again = call_entry(NODE_DRAIN, entry_params(emu, nodes=[nodes[1]], reason="kernel upgrade", timeout_s=20))
    assert again["changed"] is False and again["drained_nodes"] == [nodes[1]]


def test_missing_node_fails_unless_ignored(guarded):
    emu, nodes = guarded
    failed = call_entry(NODE_DRAIN, entry_params(emu, nodes=[nodes[1], "no-such-node"], reason="x"))
    assert failed["failed"] and "node no-such-node not found" in failed["msg"] and failed["missing_nodes"] == ["no-such-node"]
    ignored = call_entry(NODE_DRAIN, entry_params(emu, nodes=["no-such-node"], reason="x", ignore_missing=True))
    assert "failed" not in ignored and ignored["missing_nodes"] == ["no-such-node"]


@pytest.mark.parametrize("nodes", [["gpu-1; reboot"], ["GPU_1"], [""], ["ok-node", "-bad"]])
def test_invalid_node_names_are_refused_before_any_api_call(k8s_emulator, nodes):
    with pytest.raises(K8sInvalidName) as err:
        node_drain_from_params(entry_params(k8s_emulator, nodes=nodes, reason="x"))
    assert err.value.field.startswith("nodes[") and repr(err.value.value) in str(err.value)
    result = call_entry(NODE_DRAIN, entry_params(k8s_emulator, nodes=nodes, reason="x"))
    assert result["failed"] and result["error"]["error"] == "K8sInvalidName" and "nodes[" in result["msg"]
    assert k8s_emulator.api_calls() == 0


@pytest.mark.parametrize("options, needle", [
    ({"reason": " "}, "reason is required"), ({"mode": "yolo"}, "mode must be one of"), ({"timeout_s": 0}, "timeout_s"),
    ({"eviction_timeout_s": 700}, "eviction_timeout_s"), ({"pdb_retry_s": 2.0, "pdb_retry_max_s": 1.0}, "pdb_retry_s"),
    ({"eviction_workers": -1}, "eviction_workers"), ({"protected_namespaces_extra": ["Bad_NS"]}, "protected_namespaces_extra[0]"),
    ({"only_pods": [{"namespace": "ml", "name": "Bad_Pod"}]}, "only_pods[0].name"),
    ({"only_pods": [{"namespace": "ml\n", "name": "train-0"}]}, "only_pods[0].namespace"),
])
def test_bad_options_are_refused_before_any_api_call(k8s_emulator, options, needle):
    params = entry_params(k8s_emulator, nodes=["gpu-0"], reason="x")
    params.update(options)
    result = call_entry(NODE_DRAIN, params)
    assert result["failed"] and needle in result["msg"]
    assert k8s_emulator.api_calls() == 0


def test_drain_error_is_a_dsxos_error():
    with pytest.raises(DrainError) as err:
        DrainOptions(reason="x", mode="nope").validate()
    assert err.value.to_dict()["error"] == "DrainError" and (err.value.field, err.value.value) == ("mode", "nope")


def test_allow_completion_policy_skips_protected_namespaces(k8s_emulator):
    emu = k8s_emulator
    nodes = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")
    emu.add_deployment("operator", namespace="gpu-operator", replicas=1, node_selector={HOST: nodes[0]})
    emu.wait_for(lambda: len(running(emu, "gpu-operator", "app=operator")) == 1, 20, what="operator running")
    with client_for(emu) as client:
        report = drain_nodes(client, nodes, DrainOptions(reason="x", mode="allow_completion", timeout_s=5, policy=DrainPolicy()))
    pod = report.results[0].pods[0]
    assert report.results[0].status == "drained" and pod.outcome == "skipped" and "protected namespace gpu-operator" in pod.reason
    assert emu.api_calls("create", "pods/eviction") == 0


def test_only_pods_drains_just_those_pods_of_the_node(k8s_emulator):
    emu = k8s_emulator
    node = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    emu.seed_pods(3, namespace="ml", nodes=[node], gpu_per_pod=1)
    result = call_entry(NODE_DRAIN, entry_params(emu, nodes=[node], reason="GPU 3 reset", force=True, timeout_s=20,
                                                 only_pods=[{"namespace": "ml", "name": "w-0-1"}]))
    assert not result.get("failed"), result
    left = sorted(p["metadata"]["name"] for p in emu.api.list("v1", "Pod", "ml") if not p["metadata"].get("deletionTimestamp"))
    assert left == ["w-0-0", "w-0-2"], left


# ---------------------------------------------------------------- the order of two observers: the answer and the watch
# The eviction's answer (on a worker thread) and the pod's DELETED watch event (on the watch thread) race: on a loaded
# machine the watch can win. The outcome must not depend on who wins. These tests force the slow path deterministically.

def _solo_node(emu):
    """One GPU node running ``solo`` (1 replica, grace 1 s emulated)."""
    node = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    emu.add_deployment("solo", replicas=1, node_selector={HOST: node}, grace_s=1)
    emu.wait_for(lambda: len(running(emu, "default", "app=solo")) == 1, 20, what="solo running")
    return node


def _deletions_handled(monkeypatch):
    """An Event set once a drain has handled a pod's DELETED watch event."""
    seen = threading.Event()
    real_on_pod = node_drain_module._NodeDrain._on_pod  # pylint: disable=protected-access

    def on_pod(self, etype, obj):
        real_on_pod(self, etype, obj)
        if etype == "DELETED":
            seen.set()

    monkeypatch.setattr(node_drain_module._NodeDrain, "_on_pod", on_pod)  # pylint: disable=protected-access
    return seen


def _drain_one_pod(emu, monkeypatch, hold_answer):
    """Drain one pod with ``hold_answer(deleted_seen)`` run after the server accepted the eviction, before its answer
    is handed to the drain; ``deleted_seen`` is set once the drain has handled the pod's DELETED watch event."""
    node = _solo_node(emu)
    deleted_seen = _deletions_handled(monkeypatch)
    real_evict = node_drain_module.evict_pod

    def evict(*args, **kwargs):
        answer = real_evict(*args, **kwargs)
        hold_answer(deleted_seen)
        return answer

    monkeypatch.setattr(node_drain_module, "evict_pod", evict)
    with client_for(emu) as client:
        report = drain_nodes(client, [node], DrainOptions(reason="XID 79", timeout_s=60, **FAST))
    return report, deleted_seen


def test_a_pod_deleted_before_its_eviction_is_answered_is_evicted_not_gone(k8s_emulator, monkeypatch):
    report, deleted_seen = _drain_one_pod(k8s_emulator, monkeypatch, lambda seen: seen.wait(30))
    assert deleted_seen.is_set(), "the slow path was not forced: the drain never handled the DELETED event"
    result = report.results[0]
    assert result.status == "drained" and [p.outcome for p in result.pods] == ["evicted"], result.to_dict()
    assert report.changed


def test_the_usual_order_answer_first_is_still_evicted(k8s_emulator, monkeypatch):
    report, dummy_seen = _drain_one_pod(k8s_emulator, monkeypatch, lambda seen: None)
    result = report.results[0]
    assert result.status == "drained" and [p.outcome for p in result.pods] == ["evicted"], result.to_dict()


def test_a_lost_eviction_answer_whose_retry_finds_the_pod_gone_is_evicted(k8s_emulator):
    """The server applies the eviction and the connection drops before the answer: the retry meets 404. That 404
    is the first attempt's success, not a pod that went away on its own."""
    emu = k8s_emulator
    node = _solo_node(emu)
    pod = running(emu, "default", "app=solo")[0]["metadata"]["name"]
    emu.faults.set(f"/api/v1/namespaces/default/pods/{pod}/eviction", methods=["POST"], apply_drop_rate=1.0, limit=1)
    # the retry waits until the pod is gone (grace 1 s at time scale 0.01), so it meets 404
    with client_from_params({"kubeconfig": emu.kubeconfig_path, "retries": 2, "retry_backoff_s": 1.0}) as client:
        report = drain_nodes(client, [node], DrainOptions(reason="XID 79", timeout_s=60, **FAST))
    assert emu.faults.injected["apply_drop"] == 1
    assert emu.api_calls("create", "pods/eviction") >= 2, "the eviction was retried"
    result = report.results[0]
    assert result.status == "drained" and [p.outcome for p in result.pods] == ["evicted"], result.to_dict()


def test_a_pod_that_goes_away_on_its_own_while_its_eviction_is_in_flight_is_gone(k8s_emulator, monkeypatch):
    """The pod is deleted by someone else after our eviction was sent and before the server served it (the drain has
    handled its DELETED event by then): the server answers 404 to that first attempt, so the pod is gone, not evicted."""
    emu = k8s_emulator
    node = _solo_node(emu)
    deleted_seen = _deletions_handled(monkeypatch)
    real_evict = node_drain_module.evict_pod

    def evict(client, decision, *args, **kwargs):
        emu.api.delete("v1", "Pod", decision.name, namespace=decision.namespace, grace_period_seconds=0)
        assert deleted_seen.wait(30), "the drain never handled the DELETED event"
        return real_evict(client, decision, *args, **kwargs)

    monkeypatch.setattr(node_drain_module, "evict_pod", evict)
    with client_for(emu) as client:
        report = drain_nodes(client, [node], DrainOptions(reason="XID 79", timeout_s=60, **FAST))
    result = report.results[0]
    assert result.status == "drained" and [p.outcome for p in result.pods] == ["gone"], result.to_dict()
    assert "went away on its own" in result.pods[0].reason, result.to_dict()


def test_a_watch_restart_that_no_longer_lists_a_pod_under_eviction_waits_for_the_answer(k8s_emulator, monkeypatch):
    """The watch ends just as the eviction is sent; the drain re-lists only once the evicted pod is gone, before it has
    handled anything of the eviction: the list misses the pod while its eviction is unanswered. The answer decides."""
    emu = k8s_emulator
    node = _solo_node(emu)
    restarted = threading.Event()
    real_restart = node_drain_module._NodeDrain._restart_watch  # pylint: disable=protected-access
    real_evict_job = node_drain_module._NodeDrain._evict_job  # pylint: disable=protected-access

    def restart(self, err):
        emu.wait_for(lambda: not emu.api.pods("default", node=node, label_selector="app=solo"), 20, what="the pod gone")
        real_restart(self, err)
        restarted.set()

    def evict_job(self, dec, delay_s=0.0):
        job = real_evict_job(self, dec, delay_s)

        def ended_watch_then_job():
            self.events.put(("watch_end", None))  # the watch ends now: queued ahead of anything the eviction brings
            job()
        return ended_watch_then_job

    monkeypatch.setattr(node_drain_module._NodeDrain, "_restart_watch", restart)  # pylint: disable=protected-access
    monkeypatch.setattr(node_drain_module._NodeDrain, "_evict_job", evict_job)  # pylint: disable=protected-access
    with client_for(emu) as client:
        report = drain_nodes(client, [node], DrainOptions(reason="XID 79", timeout_s=60, **FAST))
    result = report.results[0]
    assert restarted.is_set()
    assert result.status == "drained" and [p.outcome for p in result.pods] == ["evicted"], result.to_dict()
