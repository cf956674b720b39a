# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The batch drain (operate/batch_drain.py, module sentinel_drain) in-process against the emulator.

Decisions come from the real policy and the nodes are quarantined by the real batch quarantine first, so the drain is
fed exactly what the sentinel role feeds it. Timings are short and explicit (emulator time scale 0.01, PDB retries every
10-50 ms); a budget that must block is made to block by its spec.
"""
from __future__ import annotations

import json
import threading

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_drain import drain_batch, validate_drain_batch
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_quarantine import BatchOptions, BatchQuarantineError, quarantine_batch
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import DrainError, DrainOptions
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import DrainPolicy
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import LockRequest, NodeLock
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import get_states
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import PolicyOptions, plan
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

STARTS = "2026-03-01T10:00:00Z"
HOLDER = "dsxos-sentinel/run-1"
HOST = "kubernetes.io/hostname"
WIDE = BreakerConfig(max_fraction=1.0, max_nodes=100)
FAST = DrainOptions(reason="sentinel batch drain", actor="dsxos-sentinel", timeout_s=30.0, pdb_retry_s=0.01, pdb_retry_max_s=0.05,
                    policy=DrainPolicy.build(force=True))


def client_for(emu):
    return KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig_path, "retries": 1, "retry_backoff_s": 0.01}))


def alert(node, fault_class):
    return {"node": node, "gpu": "3", "uuid": None, "code": 79, "fault_class": fault_class, "action": None, "status": "firing",
            "fingerprint": f"fp-{node}", "starts_at": STARTS, "ends_at": None, "pods": [], "alertname": "GpuXid", "severity": "critical",
            "labels": {"cluster": "test"}}


def decide(client, faults, destructive=True):
    """The policy's decisions for one alert per node ({node: fault class}), node state read from the cluster first."""
    state = get_states(client, list(faults))
    events = [alert(n, c) for n, c in faults.items()]
    return plan(events, None, state, PolicyOptions(destructive=destructive, now=parse_rfc3339(STARTS) + 60))["decisions"]


def options(**kw):
    values = dict(holder=HOLDER, actor="dsxos-sentinel", breaker=WIDE, workers=4)
    values.update(kw)
    return BatchOptions(**values)


def quarantined(client, faults, destructive=True):
    """Decide and quarantine (the role's first task); the decisions as the role then has them."""
    decisions = decide(client, faults, destructive)
    quarantine_batch(client, decisions, options())
    return decisions


def incident(emu, name):
    text = (emu.api.get("v1", "Node", name)["metadata"].get("annotations") or {}).get("dsxos.io/incident")
    return json.loads(text) if text else None


def reasons(emu, name):
    return [e["reason"] for e in emu.api.list("v1", "Event", "default") if e["involvedObject"]["name"] == name]


def pods_on(emu, name):
    return sorted(p["metadata"]["name"] for p in emu.api.list("v1", "Pod", "workloads")
                  if p["spec"].get("nodeName") == name and not p["metadata"].get("deletionTimestamp"))


def lease_holder(emu, name):
    lease = emu.api.get("coordination.k8s.io/v1", "Lease", f"dsxos-node-lock-{name}", "dsxos-system")
    return lease["spec"].get("holderIdentity")


@pytest.fixture
def cluster(k8s_emulator):
    """Six GPU nodes, three pods each (one of them requests a GPU), emulator time scale 0.01."""
    emu = k8s_emulator
    names = emu.add_nodes(6, "h100-eks", name_prefix="gpu-")
    emu.seed_pods(2, nodes=names)
    emu.seed_pods(1, nodes=names, gpu_per_pod=1, labels={"gpu": "yes"}, namespace="workloads-gpu")
    return emu, names


def gpu_pods_on(emu, name):
    return [p for p in emu.api.list("v1", "Pod", "workloads-gpu") if p["spec"].get("nodeName") == name and not p["metadata"].get("deletionTimestamp")]


def test_every_drain_decision_is_drained_at_once_full_or_partial_and_recorded(cluster):
    emu, names = cluster
    full, partial, none_ = names[:2], names[2:4], names[4]
    faults = dict({n: "fallen-off-bus" for n in full}, **{n: "memory" for n in partial}, **{none_: "certification"})
    with client_for(emu) as client:
        decisions = quarantined(client, faults)
        kinds = {d["node"]: d["steps"]["drain"] for d in decisions}
        result = drain_batch(client, decisions, options(), FAST)
    assert kinds[full[0]] == "full" and kinds[partial[0]] == "partial", kinds
    assert result["changed"] and sorted(result["drained"]) == sorted(full + partial), result["msg"]
    assert not result["failed_nodes"] and not result["left"]
    assert [i["node"] for i in result["ignored"]] == [n for n in names[4:] if n in faults]
    for name in full:
        assert not pods_on(emu, name) and not gpu_pods_on(emu, name), "a full drain removes every pod"
    for name in partial:
        assert len(pods_on(emu, name)) == 2 and not gpu_pods_on(emu, name), "a partial drain removes only the GPU pods"
    assert len(pods_on(emu, names[5])) == 2 and len(gpu_pods_on(emu, names[5])) == 1, "nodes without a decision are untouched"
    for name in full + partial:
        recorded = incident(emu, name)
        assert recorded["state"] == "drained", recorded
        assert sorted(reasons(emu, name)) == ["SentinelDrained", "SentinelDraining", "SentinelQuarantined"]
        assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True
        assert not lease_holder(emu, name), "every lock is released"
        row = next(r for r in result["nodes"] if r["node"] == name)
        assert row["status"] == "drained" and row["state"] == "drained" and row["result"]["status"] == "drained"
        assert row["drain"] == ("full" if name in full else "partial")


def test_a_partial_drain_evicts_only_the_pods_the_alerts_map_to_the_faulty_gpu(cluster):
    """A GPU reset's partial drain: on a node whose alert names the pod on the faulty GPU, only that pod goes (the other
    GPU job stays); on a node whose alert names no pod, every GPU pod goes (the safe side for a reset)."""
    emu, names = cluster
    mapped, unmapped = names[:2]
    emu.seed_pods(1, nodes=names, gpu_per_pod=1, namespace="other-gpu-job")
    on_gpu = next(p["metadata"]["name"] for p in gpu_pods_on(emu, mapped))
    events = [dict(alert(mapped, "memory"), pods=[{"namespace": "workloads-gpu", "name": on_gpu}]), alert(unmapped, "memory")]
    with client_for(emu) as client:
        state = get_states(client, [mapped, unmapped])
        decisions = plan(events, None, state, PolicyOptions(destructive=True, now=parse_rfc3339(STARTS) + 60))["decisions"]
        quarantine_batch(client, decisions, options())
        result = drain_batch(client, decisions, options(), FAST)
    assert sorted(result["drained"]) == sorted([mapped, unmapped]), result["msg"]

    def other_job_on(name):
        return [p for p in emu.api.list("v1", "Pod", "other-gpu-job") if p["spec"].get("nodeName") == name
                and not p["metadata"].get("deletionTimestamp")]
    assert not gpu_pods_on(emu, mapped) and len(other_job_on(mapped)) == 1, "only the pod on the faulty GPU is evicted"
    assert not gpu_pods_on(emu, unmapped) and not other_job_on(unmapped), "no pod named: every GPU pod is evicted"
    assert len(pods_on(emu, mapped)) == 2 and len(pods_on(emu, unmapped)) == 2, "pods without a GPU stay on both"


def test_a_rerun_after_the_drain_leaves_the_nodes_to_the_per_node_steps_and_changes_nothing(cluster):
    emu, names = cluster
    with client_for(emu) as client:
        decisions = quarantined(client, {n: "fallen-off-bus" for n in names[:2]})
        drain_batch(client, decisions, options(), FAST)
        before = {n: emu.api.get("v1", "Node", n)["metadata"]["annotations"] for n in names[:2]}
        again = drain_batch(client, decisions, options(), FAST)
    assert not again["changed"] and not again["drained"] and [d["node"] for d in again["left"]] == names[:2]
    assert all("(recorded: " in d["reason"] and d["reason"].endswith(" drained)") for d in again["left"])
    assert {n: emu.api.get("v1", "Node", n)["metadata"]["annotations"] for n in names[:2]} == before


def test_locked_unquarantined_and_other_incident_nodes_are_left_untouched(cluster):
    emu, names = cluster
    locked, never, free = names[:3]
    with client_for(emu) as client:
        decisions = quarantined(client, {locked: "fallen-off-bus", free: "fallen-off-bus"})
        # a node whose decision opens but whose quarantine did not happen (no incident recorded)
        decisions += decide(client, {never: "fallen-off-bus"})
        NodeLock(client, LockRequest(node=locked, holder="someone-else", duration_s=600, purpose="sentinel")).acquire()
        result = drain_batch(client, decisions, options(), FAST)
    left = {d["node"]: d["reason"] for d in result["left"]}
    assert result["drained"] == [free]
    assert left[locked].startswith("locked: ") and "someone-else" in left[locked]
    assert {d["node"]: d["locked_by"] for d in result["left"]} == {locked: {"holder": "someone-else", "purpose": "sentinel"}, never: None}
    assert "is not open in state quarantined or draining (recorded: None None)" in left[never]
    assert len(pods_on(emu, locked)) == 2 and len(pods_on(emu, never)) == 2, "left nodes keep their pods"
    assert incident(emu, locked)["state"] == "quarantined" and incident(emu, never) is None
    assert lease_holder(emu, locked) == "someone-else", "a lock held by another run is never touched"


def test_a_blocked_drain_fails_the_node_with_its_error_recorded_and_the_next_run_resumes(k8s_emulator):
    emu = k8s_emulator
    blocked, fine = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    emu.add_deployment("solo", namespace="workloads", replicas=1, node_selector={HOST: blocked}, grace_s=1)
    emu.wait_for(lambda: len(pods_on(emu, blocked)) == 1, 20, what="solo running")
    emu.add_pdb("solo", {"app": "solo"}, namespace="workloads", min_available=1)
    emu.settle()
    short = DrainOptions(reason="sentinel batch drain", actor="dsxos-sentinel", timeout_s=1.0, pdb_retry_s=0.01, pdb_retry_max_s=0.05)
    with client_for(emu) as client:
        decisions = quarantined(client, {blocked: "fallen-off-bus", fine: "fallen-off-bus"})
        result = drain_batch(client, decisions, options(), short)
        assert result["drained"] == [fine] and [f["node"] for f in result["failed_nodes"]] == [blocked], result["msg"]
        failed = result["failed_nodes"][0]["reason"]
        assert "workloads/solo" in failed or "solo" in failed, failed
        recorded = incident(emu, blocked)
        assert recorded["state"] == "draining" and recorded["last_error"].startswith("drain ") and "solo" in recorded["last_error"]
        assert emu.api.get("v1", "Node", blocked)["spec"]["unschedulable"] is True, "a node that failed to drain stays cordoned"
        assert not lease_holder(emu, blocked)
        # the budget is lifted: the next run's batch resumes the drain from the recorded state
        emu.api.delete("policy/v1", "PodDisruptionBudget", "solo", "workloads")
        again = drain_batch(client, decisions, options(), FAST)
    assert again["drained"] == [blocked] and [d["node"] for d in again["left"]] == [fine], again["msg"]
    assert incident(emu, blocked)["state"] == "drained"


def test_check_mode_writes_nothing(cluster):
    emu, names = cluster
    with client_for(emu) as client:
        decisions = quarantined(client, {n: "fallen-off-bus" for n in names[:2]})
        result = drain_batch(client, decisions, options(), FAST, check_mode=True)
    assert result["changed"] and result["drained"] == names[:2] and all(r["status"] == "would_drain" for r in result["nodes"])
    assert all(incident(emu, n)["state"] == "quarantined" and len(pods_on(emu, n)) == 2 for n in names[:2])
    assert not [lease for lease in emu.api.list("coordination.k8s.io/v1", "Lease", "dsxos-system") if lease["spec"].get("holderIdentity")]


def test_a_run_without_destructive_drains_nothing(cluster):
    emu, names = cluster
    with client_for(emu) as client:
        decisions = quarantined(client, {n: "fallen-off-bus" for n in names[:2]}, destructive=False)
        calls = emu.api_calls()
        result = drain_batch(client, decisions, options(), FAST)
    assert not result["nodes"] and not result["changed"] and emu.api_calls() == calls
    assert [i["drain"] for i in result["ignored"]] == ["none", "none"]


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: dict(d, node="gpu-0\n"), "RFC 1123"),
    (lambda d: dict(d, node="-gpu"), "RFC 1123"),
    (lambda d: dict(d, incident="Not An Id"), "incident"),
    (lambda d: dict(d, steps=dict(d["steps"], drain="most")), "steps.drain"),
    (lambda d: dict(d, steps=None), "steps.drain"),
    (lambda d: "junk", "must be a decision"),
    (lambda d: dict(d, drain_pods=[{"namespace": "ml", "name": "Train_0"}]), "decisions[0].drain_pods[0].name"),
    (lambda d: dict(d, drain_pods="ml/train-0"), "decisions[0].drain_pods"),
])
def test_bad_decisions_are_refused_before_any_api_call(cluster, mutate, needle):
    emu, names = cluster
    with client_for(emu) as client:
        decision = decide(client, {names[0]: "fallen-off-bus"})[0]
    calls = emu.api_calls()
    params = {k: v.get("default") for k, v in entry.SENTINEL_DRAIN.spec.items()}
    params.update(kubeconfig=emu.kubeconfig_path, decisions=[mutate(decision)], holder=HOLDER, actor="a")
    result = call_entry(entry.SENTINEL_DRAIN, params)
    assert result["failed"] and needle in result["msg"], result["msg"]
    assert emu.api_calls() == calls, "nothing sent"


def test_bad_drain_options_name_the_option_before_any_api_call(cluster):
    emu, names = cluster
    with client_for(emu) as client:
        decisions = decide(client, {names[0]: "fallen-off-bus"})
    calls = emu.api_calls()
    params = {k: v.get("default") for k, v in entry.SENTINEL_DRAIN.spec.items()}
    params.update(kubeconfig=emu.kubeconfig_path, decisions=decisions, holder=HOLDER, actor="a", drain={"timeout_s": -1})
    result = call_entry(entry.SENTINEL_DRAIN, params)
    assert result["failed"] and "timeout_s" in result["msg"] and emu.api_calls() == calls
    with pytest.raises(DrainError, match="pdb_retry_s"):
        with client_for(emu) as client:
            drain_batch(client, decisions, options(), DrainOptions(reason="r", pdb_retry_s=2.0, pdb_retry_max_s=1.0))


def test_two_decisions_for_one_node_and_bad_workers_are_refused():
    decision = {"node": "gpu-1", "kind": "open", "incident": "sen-00000000000a", "steps": {"drain": "full"}}
    with pytest.raises(BatchQuarantineError, match="two decisions"):
        validate_drain_batch([decision, decision], options())
    with pytest.raises(BatchQuarantineError, match="workers"):
        validate_drain_batch([decision], options(workers=65))
    items, others = validate_drain_batch([decision, dict(decision, node="gpu-2", kind="join")], options())
    assert [i.node for i in items] == ["gpu-1"] and items[0].lock.holder == HOLDER and items[0].kind == "full"
    assert others == [{"node": "gpu-2", "kind": "join", "drain": "full", "dry_run": False}]


def test_entry_drains_through_call_entry_with_the_module_options(cluster):
    emu, names = cluster
    with client_for(emu) as client:
        decisions = quarantined(client, {n: "fallen-off-bus" for n in names[:3]})
    params = {k: v.get("default") for k, v in entry.SENTINEL_DRAIN.spec.items()}
    params.update(kubeconfig=emu.kubeconfig_path, decisions=decisions, holder=HOLDER, actor="dsxos-sentinel", retry_backoff_s=0.01,
                  drain={"force": True, "pdb_retry_s": 0.01, "pdb_retry_max_s": 0.05, "timeout_s": 30.0, "mode": None})
    result = call_entry(entry.SENTINEL_DRAIN, params)
    assert "failed" not in result, result
    assert result["drained"] == names[:3] and result["api_calls"] and result["elapsed_s"] >= 0
    assert all(not pods_on(emu, n) for n in names[:3])


def test_a_node_a_release_holds_is_waited_for_then_drained(cluster):
    """``lock_wait_for_purposes``: the batch waits for a short holder (a release) and drains the node once it ends."""
    emu, names = cluster
    held, free = names[:2]
    with client_for(emu) as client:
        decisions = quarantined(client, {held: "fallen-off-bus", free: "fallen-off-bus"})
        NodeLock(client, LockRequest(node=held, holder="release-run", duration_s=600, purpose="sentinel-release")).acquire()
        ends = threading.Timer(1.0, lambda: NodeLock(client, LockRequest(node=held, holder="release-run", state="release")).release())
        ends.start()
        try:
            result = drain_batch(client, decisions, options(lock_wait_for_purposes=(("sentinel-release", 60.0),)), FAST)
        finally:
            ends.cancel()
    assert sorted(result["drained"]) == sorted([held, free]) and result["left"] == [], result["msg"]
    assert incident(emu, held)["state"] == "drained" and not pods_on(emu, held)
