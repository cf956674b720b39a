# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The sentinel's intake in one call (operate/sentinel_intake.py; modules sentinel_quarantine with events and
sentinel_plan with read_state) in-process against the emulator: the same decisions as reading first and planning
second, bad input refused before any API call, and the batch's failure never loses the plan."""
from __future__ import annotations

import json

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import entry, sentinel_intake
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_quarantine import BatchOptions
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import LockRequest, NodeLock
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import get_states, run_node_incident
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import validate_options as validate_incident_options
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_intake import (
    join_alerts, plan_and_quarantine, plan_with_state, read_states,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import PolicyOptions, SentinelPolicyError, plan
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

STARTS = "2026-03-01T10:00:00Z"
HOLDER = "dsxos-sentinel/run-1"
POLICY = PolicyOptions(destructive=True, now=parse_rfc3339(STARTS) + 60)


def client_for(emu):
    return KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig_path, "retries": 1, "retry_backoff_s": 0.01}))


def alert(node, fingerprint, status="firing", fault_class="fallen-off-bus"):
    return {"node": node, "gpu": "3", "uuid": None, "code": 79, "fault_class": fault_class, "action": None, "status": status,
            "fingerprint": fingerprint, "starts_at": STARTS, "ends_at": None, "pods": [], "alertname": "GpuXidFatal", "severity": "critical",
            "labels": {}}


def batch_options(**kw):
    values = dict(holder=HOLDER, actor="dsxos-sentinel", breaker=BreakerConfig(max_fraction=1.0, max_nodes=100), workers=4)
    values.update(kw)
    return BatchOptions(**values)


def calls_since(emu, before):
    """``{"verb resource": n}`` served since the ``before`` snapshot of ``emu.call_counts()``."""
    now = emu.call_counts()
    return {k: n - before.get(k, 0) for k, n in now.items() if n - before.get(k, 0)}


def writes(calls):
    return {k: n for k, n in calls.items() if k.split(" ", 1)[0] not in ("get", "list", "watch")}


def incident(emu, name):
    text = (emu.api.get("v1", "Node", name)["metadata"].get("annotations") or {}).get("dsxos.io/incident")
    return json.loads(text) if text else None


def lease_holder(emu, name):
    lease = emu.api.get("coordination.k8s.io/v1", "Lease", f"dsxos-node-lock-{name}", "dsxos-system")
    return lease["spec"].get("holderIdentity")


def mixed_events(names):
    """Fresh nodes, an unknown node, a malformed name, an application alert (recorded only) and a resolved alert."""
    return ([alert(n, f"fp-{n}") for n in names[:4]] + [alert("gpu-missing", "fp-missing"), alert("bad name\n", "fp-bad"),
            alert(names[4], "fp-app", fault_class="application"), alert(names[5], "fp-res", status="resolved")])


def test_one_call_decides_exactly_as_reading_first_and_planning_second(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(8, "h100-eks", name_prefix="gpu-")
    events = mixed_events(names)
    with client_for(emu) as client:
        first = plan_and_quarantine(client, events[:2], None, POLICY, batch=batch_options())  # two nodes with open incidents
        assert first["quarantined"] == names[:2]
        before = emu.call_counts()
        together = plan_with_state(client, events, None, POLICY)
        reads = calls_since(emu, before)
        separate = plan(events, None, get_states(client, plan(events, None, {}, POLICY)["nodes"]), POLICY)
    assert together == separate
    assert set(reads) == {"get nodes"} and reads["get nodes"] == 7, f"planning reads each named node once: {reads}"
    kinds = {d["node"]: d["kind"] for d in together["decisions"]}
    assert kinds[names[0]] == "resume" and kinds[names[2]] == "open" and kinds[names[4]] == "record"
    assert [r["index"] for r in together["rejected"]] == [5]


def test_read_states_reads_many_nodes_concurrently_with_the_same_result(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(40, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        plan_and_quarantine(client, [alert(n, f"fp-{n}") for n in names[:5]], None, POLICY, batch=batch_options())
        wanted = names + ["gpu-nowhere"] + names[:3]
        assert read_states(client, wanted, workers=8) == get_states(client, list(dict.fromkeys(wanted)))
        assert read_states(client, []) == {}


def test_plan_and_quarantine_opens_every_incident_and_a_rerun_changes_nothing(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(10, "h100-eks", name_prefix="gpu-")
    events = [alert(n, f"fp-{n}") for n in names[:6]]
    with client_for(emu) as client:
        result = plan_and_quarantine(client, events, None, POLICY, batch=batch_options())
        again = plan_and_quarantine(client, events, None, POLICY, batch=batch_options())
    assert result["changed"] and result["quarantined"] == names[:6], result["msg"]
    decisions = {d["node"]: d for d in result["plan"]["decisions"]}
    for name in names[:6]:
        assert incident(emu, name)["id"] == decisions[name]["incident"]
        assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True
        assert not lease_holder(emu, name)
        row = next(n for n in result["nodes"] if n["node"] == name)
        assert row["current"]["id"] == decisions[name]["incident"] and row["current"]["state"] == "quarantined"
    assert not again["changed"] and again["quarantined"] == []
    assert {d["kind"] for d in again["plan"]["decisions"]} == {"resume"}, "the rerun resumes: nothing is opened twice"


def test_the_intake_joins_new_alerts_of_open_incidents_without_the_lock_another_run_holds(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(4, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        first = plan_and_quarantine(client, [alert(n, f"fp-{n}") for n in names[:3]], None, POLICY, batch=batch_options())
        assert first["quarantined"] == names[:3] and first["joined"] == []
        # another run holds names[0] (its remediation takes minutes): the join does not wait for it
        NodeLock(client, LockRequest(node=names[0], holder="dsxos-sentinel/other-run", duration_s=600)).acquire()
        later = [alert(names[0], "fp-new-0"), alert(names[1], f"fp-{names[1]}"), alert(names[1], "fp-new-1"), alert(names[3], "fp-3")]
        before = emu.call_counts()
        second = plan_and_quarantine(client, later, None, POLICY, batch=batch_options())
        check = plan_and_quarantine(client, [alert(names[2], "fp-new-2")], None, POLICY, batch=batch_options(), check_mode=True)
    kinds = {d["node"]: d["kind"] for d in second["plan"]["decisions"]}
    assert kinds == {names[0]: "join", names[1]: "resume", names[3]: "open"}
    assert second["quarantined"] == [names[3]]
    assert sorted((j["node"], j["changed"]) for j in second["joined"]) == [(names[0], True), (names[1], True)], second["joined"]
    assert "joined to the open incidents of 2 node(s)" in second["msg"] and second["changed"]
    for name, fingerprint in ((names[0], "fp-new-0"), (names[1], "fp-new-1")):
        assert fingerprint in [e["fingerprint"] for e in incident(emu, name)["events"]]
    assert lease_holder(emu, names[0]) == "dsxos-sentinel/other-run", "the other run's lock is untouched"
    assert calls_since(emu, before).get("create leases", 0) == 1, "only the new node was locked"
    assert check["joined"] == [] and "fp-new-2" not in [e["fingerprint"] for e in incident(emu, names[2])["events"]]


def test_a_join_that_fails_is_listed_not_raised(k8s_emulator, monkeypatch):
    emu = k8s_emulator
    names = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        plan_and_quarantine(client, [alert(n, f"fp-{n}") for n in names], None, POLICY, batch=batch_options())

        def broken(client, request, **kwargs):
            raise K8sError("boom", verb="patch", resource="nodes", name=request.node, status=500)
        monkeypatch.setattr(sentinel_intake, "apply_incident", broken)
        result = plan_and_quarantine(client, [alert(names[0], "fp-x")], None, POLICY, batch=batch_options())
    assert [(j["node"], j["changed"], "error" in j) for j in result["joined"]] == [(names[0], False, True)]
    assert "1 failed, joined again by the role" in result["msg"] and "batch_error" not in result


def test_without_a_batch_or_without_open_decisions_nothing_is_written(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(4, "h100-eks", name_prefix="gpu-")
    before = emu.call_counts()
    with client_for(emu) as client:
        planned = plan_and_quarantine(client, [alert(n, f"fp-{n}") for n in names], None, POLICY, batch=None)
        recorded = plan_and_quarantine(client, [alert(names[0], "fp-a", fault_class="application")], None, POLICY, batch=batch_options())
    assert not writes(calls_since(emu, before)), calls_since(emu, before)
    assert not planned["changed"] and planned["quarantined"] == [] and len(planned["plan"]["decisions"]) == 4
    assert "nothing to quarantine" in recorded["msg"] and recorded["plan"]["decisions"][0]["kind"] == "record"


def test_a_batch_that_cannot_run_returns_the_plan_with_the_error(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        result = plan_and_quarantine(client, [alert(n, f"fp-{n}") for n in names], None, POLICY, batch=batch_options(workers=0))
    assert result["batch_error"]["field"] == "workers" and "per-node steps" in result["msg"]
    assert [d["node"] for d in result["plan"]["decisions"]] == names and result["quarantined"] == []
    assert all(incident(emu, n) is None for n in names)


def test_any_exception_of_the_batch_keeps_the_plan(k8s_emulator, monkeypatch):
    """A bug inside the batch (not an API error) must not lose the plan: the per-node steps still run every node."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate import sentinel_intake  # pylint: disable=import-outside-toplevel

    def broken(*args, **kwargs):
        del args, kwargs
        raise RuntimeError("boom")
    monkeypatch.setattr(sentinel_intake, "quarantine_batch", broken)
    emu = k8s_emulator
    names = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        result = plan_and_quarantine(client, [alert(n, f"fp-{n}") for n in names], None, POLICY, batch=batch_options())
    assert result["batch_error"] == {"error": "RuntimeError", "msg": "boom"} and "RuntimeError" in result["msg"]
    assert [d["node"] for d in result["plan"]["decisions"]] == names and result["quarantined"] == []


def test_the_caller_s_lock_is_used_not_taken_or_released(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        NodeLock(client, LockRequest(node=names[0], holder=HOLDER, state="acquire", namespace="dsxos-system", duration_s=600)).acquire()
        result = plan_and_quarantine(client, [alert(names[0], "fp-0")], None, POLICY, batch=batch_options(take_locks=False))
    assert result["quarantined"] == [names[0]] and result["nodes"][0]["lock"] == ""
    assert lease_holder(emu, names[0]) == HOLDER, "the per-node steps still hold their lock"


def test_bad_rules_fail_before_any_api_call(k8s_emulator):
    emu = k8s_emulator
    emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    before = emu.call_counts()
    with client_for(emu) as client, pytest.raises(SentinelPolicyError) as err:
        plan_and_quarantine(client, [alert("gpu-0", "fp")], [{"name": "x", "action": "explode"}], POLICY, batch=batch_options())
    assert "action" in str(err.value) and not calls_since(emu, before)


def _params(point, emu, **kw):
    params = {k: v.get("default") for k, v in point.spec.items()}
    params.update(kubeconfig=emu.kubeconfig_path, retry_backoff_s=0.01, now="2026-03-01T10:01:00Z", **kw)
    return params


def test_the_modules_entries_plan_and_quarantine_from_events(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(20, "h100-eks", name_prefix="gpu-")
    events = [alert(n, f"fp-{n}") for n in names[:4]]
    preview = call_entry(entry.SENTINEL_QUARANTINE, _params(entry.SENTINEL_QUARANTINE, emu, events=events, holder=HOLDER, actor="a"),
                         check_mode=True)
    assert "failed" not in preview, preview
    assert preview["quarantined"] == names[:2] and preview["changed"], "check mode predicts the change"
    assert all(incident(emu, n) is None and not emu.api.get("v1", "Node", n)["spec"].get("unschedulable") for n in names)
    result = call_entry(entry.SENTINEL_QUARANTINE, _params(entry.SENTINEL_QUARANTINE, emu, events=events, holder=HOLDER, actor="a"))
    # the breaker's defaults: 10 % of 20 GPU nodes = 2
    assert result["quarantined"] == names[:2] and [h["node"] for h in result["held_back"]] == names[2:4]
    assert len(result["plan"]["decisions"]) == 4
    planned = call_entry(entry.SENTINEL_PLAN, _params(entry.SENTINEL_PLAN, emu, events=events, read_state=True))
    assert "failed" not in planned, planned
    assert {d["node"]: d["kind"] for d in planned["decisions"]} == {names[0]: "resume", names[1]: "resume", names[2]: "open", names[3]: "open"}
    pure = call_entry(entry.SENTINEL_PLAN, _params(entry.SENTINEL_PLAN, emu, events=events))
    assert {d["kind"] for d in pure["decisions"]} == {"open"}, "without read_state nothing is read"


def test_the_modules_entries_refuse_contradictory_input(k8s_emulator):
    emu = k8s_emulator
    both = call_entry(entry.SENTINEL_PLAN, _params(entry.SENTINEL_PLAN, emu, events=[alert("gpu-0", "fp")], read_state=True,
                                                   node_state={"gpu-0": {}}))
    assert both["failed"] and "node_state" in both["msg"]
    bad_manual = call_entry(entry.SENTINEL_QUARANTINE, _params(entry.SENTINEL_QUARANTINE, emu, manual_nodes=["gpu-0"], holder=HOLDER, actor="a"))
    assert bad_manual["failed"] and "manual_reason" in bad_manual["msg"]
    exclusive = entry.SENTINEL_QUARANTINE.module_options["mutually_exclusive"]
    assert ("decisions", "events") in exclusive and ("decisions", "manual_nodes") in exclusive


def test_a_join_that_meets_an_ended_incident_says_so_and_writes_nothing(k8s_emulator):
    """An intake planned while the incident was open; a release closed it before the join was written: the join result
    says ``ended`` (the intake reports the node pending), and a plan made now opens a new incident for the alert."""
    emu = k8s_emulator
    name = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")[0]
    with client_for(emu) as client:
        first = plan_and_quarantine(client, [alert(name, "fp-a")], None, POLICY, batch=batch_options())
        decided = plan_with_state(client, [alert(name, "fp-b")], None, POLICY)
        [join] = [d for d in decided["decisions"] if d["node"] == name]
        assert join["kind"] == "join"
        run_node_incident(client, validate_incident_options({"action": "close", "node": name, "incident": first["plan"]["decisions"][0]["incident"],
                                                             "outcome": "released"}))
        [result] = join_alerts(client, decided["decisions"], batch_options())
        again = plan_with_state(client, [alert(name, "fp-b")], None, POLICY)
    assert result["ended"] is True and result["changed"] is False and "already ended" in result["msg"]
    assert incident(emu, name) is None, "nothing joined to a closed incident"
    assert [d["kind"] for d in again["decisions"]] == ["open"]
