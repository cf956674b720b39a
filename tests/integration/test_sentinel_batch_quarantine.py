# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The remediate playbook's batch quarantine (dsxos.cluster.sentinel_quarantine before the per-node loop) through real
ansible-playbook runs against the Kubernetes emulator, with the stub remediation and recertification task files of
tests/integration/sentinel_stubs."""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_INCIDENT, NODE_LOCK
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

STUBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sentinel_stubs")
BATCH_TASK = "Decide, and quarantine every node the plan opens an incident for"
STEPS = ["SentinelQuarantined", "SentinelDraining", "SentinelDrained", "SentinelRemediating", "SentinelRecertifying", "SentinelReturned"]


def stub(name):
    return os.path.join(STUBS, name + ".yml")


def alert(node, fingerprint, fault_class="fallen-off-bus", starts_at="2026-03-01T10:00:00Z"):
    return {"node": node, "gpu": "3", "uuid": "GPU-1234", "code": 79, "fault_class": fault_class, "action": None, "status": "firing",
            "fingerprint": fingerprint, "starts_at": starts_at, "ends_at": None, "pods": [], "alertname": "XidCritical",
            "severity": "critical", "labels": {"cluster": "test"}}


def run_vars(emu, tmp_path, events, **extra):
    out = {"sentinel_k8s_auth": {"kubeconfig": emu.kubeconfig_path, "retries": 2, "retry_backoff_s": 0.01},
           "sentinel_destructive": True, "sentinel_stub_dir": str(tmp_path), "sentinel_events": events,
           "sentinel_remediation_tasks": {"reboot": stub("remediation_ok")}, "sentinel_recertify_tasks": stub("recertify_pass"),
           "sentinel_circuit_breaker": {"max_fraction": 1.0, "max_nodes": 50}, "sentinel_batch_workers": 4,
           "sentinel_drain": {"timeout_s": 60, "pdb_retry_s": 0.05, "pdb_retry_max_s": 0.2}}
    out.update(extra)
    return out


def stats_of(result):
    return result.task("dsxos.cluster.sentinel : Publish the summary")["result"]["ansible_stats"]["data"]["dsxos_sentinel"]


def batch_of(result):
    found = [t for t in result.tasks if BATCH_TASK in t["task"]]
    assert len(found) == 1, [t["task"] for t in result.tasks if "uarantine" in t["task"]]
    return found[0]


def meta(emu, name):
    return emu.api.get("v1", "Node", name)["metadata"]


def annotation(emu, name, key, default="null"):
    return json.loads((meta(emu, name).get("annotations") or {}).get(key) or default)


def node_events(emu, name):
    # creationTimestamp has whole seconds: two steps in one second are ordered by their resourceVersion (written in order)
    items = sorted(emu.api.list("v1", "Event", "default"), key=lambda e: (e["metadata"]["creationTimestamp"], int(e["metadata"]["resourceVersion"])))
    return [e["reason"] for e in items if (e.get("involvedObject") or {}).get("name") == name]


def breaker_entries(emu):
    data = emu.api.get("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system")["data"]
    return sorted(e["node"] for e in json.loads(data["entries"]))


def intake_one(emu, ansible_run, tmp_path, fingerprint, starts_at="2026-03-01T10:00:00Z", **extra):
    """The first of two new nodes quarantined by an intake run for one certification alert (quarantine only):
    ``(node, its events, the run's variables, the incident id)``."""
    name = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")[0]
    events = [alert(name, fingerprint, "certification", starts_at=starts_at)]
    variables = run_vars(emu, tmp_path, events, **extra)
    ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="intake"), expect_rc=0)
    return name, events, variables, annotation(emu, name, "dsxos.io/incident")["id"]


def test_a_storm_is_quarantined_in_one_batch_then_each_node_remediated_exactly_once(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    names = emu.add_nodes(10, "h100-eks", name_prefix="gpu-")
    faulty = names[:4]
    events = [alert(n, f"fp-{n}-{i}") for n in faulty for i in range(3)]  # three alerts per node, one incident each
    variables = run_vars(emu, tmp_path, events, sentinel_circuit_breaker={"max_fraction": 1.0, "max_nodes": 3})

    result = ansible_run("dsxos.cluster.remediate", extra_vars=variables, expect_rc=0)

    batch = batch_of(result)["result"]
    assert batch["quarantined"] == faulty[:3] and [h["node"] for h in batch["held_back"]] == faulty[3:], batch["msg"]
    assert not batch["deferred"] and batch_of(result)["changed"]
    summary = stats_of(result)
    by_node = {o["node"]: o for o in summary["outcomes"]}
    assert sorted(by_node) == sorted(faulty) and not summary["failed"]
    for name in faulty[:3]:
        assert by_node[name]["status"] == "returned", by_node[name]
        assert not meta(emu, name).get("labels", {}).get("dsxos.io/incident-state")
        assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable"), "returned exactly as before"
        ended = annotation(emu, name, "dsxos.io/incident-history", "[]")
        assert [(h["id"], h["outcome"]) for h in ended] == [(by_node[name]["incident"], "returned")]
        assert node_events(emu, name) == STEPS, "each step exactly once, in order"
        assert sorted(p.name for p in tmp_path.glob(f"remediation-{name}-*.json")) == [f"remediation-{name}-1.json"], "one remediation"
        attempts = annotation(emu, name, "dsxos.io/sentinel-attempts", "[]")
        assert len(attempts) == 1 and attempts[0]["incident"] == by_node[name]["incident"]
        cordons = [h for h in annotation(emu, name, "dsxos.io/quarantine-history", "[]") if h["action"] == "cordon"]
        assert len(cordons) == 1 and by_node[name]["incident"] in cordons[0]["reason"]
    for name in faulty[3:]:
        outcome = by_node[name]
        assert outcome["status"] == "skipped" and outcome["message"].startswith("circuit breaker: ") and outcome["kind"] == "open"
        assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable") and not node_events(emu, name)
        assert sorted(e["fingerprint"] for e in annotation(emu, name, "dsxos.io/sentinel-events", "[]")) == [f"fp-{name}-{i}" for i in range(3)]
        assert not list(tmp_path.glob(f"remediation-{name}-*.json"))
    assert breaker_entries(emu) == sorted(faulty[:3]), "the breaker counted each node once"
    for name in names:
        lease = emu.api.get("coordination.k8s.io/v1", "Lease", f"dsxos-node-lock-{name}", "dsxos-system") if name in faulty else None
        assert lease is None or not lease["spec"].get("holderIdentity"), f"lock of {name} released"

    before = {n: emu.api.get("v1", "Node", n) for n in names}
    events_before = len(emu.api.list("v1", "Event", "default"))
    rerun = ansible_run("dsxos.cluster.remediate", extra_vars=variables, expect_rc=0)

    again = batch_of(rerun)
    assert not again["changed"], again
    assert again["result"]["quarantined"] == [] and [h["node"] for h in again["result"]["held_back"]] == faulty[3:]
    assert {n: emu.api.get("v1", "Node", n)["metadata"]["resourceVersion"] for n in names} == \
        {n: before[n]["metadata"]["resourceVersion"] for n in names}, "a rerun writes nothing to any node"
    assert len(emu.api.list("v1", "Event", "default")) == events_before
    assert len(list(tmp_path.glob("remediation-*.json"))) == 3
    assert not [t for t in rerun.tasks if t["changed"] and "sentinel" in t["task"] and "Lock" not in t["task"] and "Unlock" not in t["task"]]


def test_batch_and_per_node_loop_record_the_same_quarantine(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    names = emu.add_nodes(10, "h100-eks", name_prefix="gpu-")
    batched, looped = names[:2], names[2:4]
    quiet = {"sentinel_destructive": False}

    first = ansible_run("dsxos.cluster.remediate", extra_vars=run_vars(emu, tmp_path, [alert(n, "fp-" + n, "nvlink") for n in batched], **quiet))
    second = ansible_run("dsxos.cluster.remediate", extra_vars=run_vars(emu, tmp_path, [alert(n, "fp-" + n, "nvlink") for n in looped],
                                                                        sentinel_batch_quarantine=False, **quiet))

    assert batch_of(first)["result"]["quarantined"] == batched
    # a quarantine-only node the batch quarantined has nothing left to do: no per-node steps (lock, read, unlock)
    assert not [t["task"] for t in first.tasks if "sentinel : Lock " in t["task"] or "sentinel : Read under the lock" in t["task"]]
    assert sorted(t["task"].rsplit(" ", 1)[1] for t in second.tasks if "sentinel : Lock " in t["task"]) == looped
    # with the batch off the first task only plans; the per-node steps open each incident (one sentinel_quarantine call
    # with its decision, under the node's lock)
    assert batch_of(second)["result"]["quarantined"] == [] and not batch_of(second)["changed"]
    assert [d["node"] for d in batch_of(second)["result"]["plan"]["decisions"]] == looped
    opened = [t for t in second.tasks if "Open a new incident" in t["task"] and t["status"] != "skipped"]
    assert [t["result"]["quarantined"] for t in opened] == [[n] for n in looped], [t["status"] for t in opened]
    outcomes = stats_of(first)["outcomes"] + stats_of(second)["outcomes"]
    assert {o["node"]: o["status"] for o in outcomes} == {n: "quarantined" for n in batched + looped}
    assert len({o["message"].split(" ", 2)[2] for o in outcomes}) == 1, "the same 'waiting for a release' outcome"

    def shape(name):
        node = emu.api.get("v1", "Node", name)
        incident = annotation(emu, name, "dsxos.io/incident")
        prior = annotation(emu, name, "dsxos.io/quarantine-prior")
        return {"state": incident["state"], "action": incident["action"], "rule": incident["rule"], "steps": [s["state"] for s in incident["steps"]],
                "events": len(incident["events"]), "attempts": incident["attempts"], "reason_is_incident": incident["reason"] == prior["reason"],
                "label": node["metadata"]["labels"]["dsxos.io/incident-state"], "unschedulable": node["spec"]["unschedulable"],
                "taints": sorted((t["key"], t["effect"]) for t in node["spec"]["taints"]), "node_events": node_events(emu, name),
                "history": [h["action"] for h in annotation(emu, name, "dsxos.io/quarantine-history", "[]")]}

    expected = {"state": "quarantined", "action": "quarantine_drain", "rule": "nvlink", "steps": ["quarantined"], "events": 1, "attempts": 0,
                "reason_is_incident": True, "label": "quarantined", "unschedulable": True, "taints": [("dsxos.io/quarantine", "NoSchedule")],
                "node_events": ["SentinelQuarantined"], "history": ["cordon"]}
    assert {n: shape(n) for n in batched + looped} == {n: expected for n in batched + looped}
    assert breaker_entries(emu) == sorted(batched + looped)


def test_a_node_at_its_attempt_cap_opens_a_needs_attention_incident_on_both_paths(k8s_emulator, ansible_run, tmp_path):
    """No open incident, the attempt cap reached: the node is quarantined with an incident in needs-attention - by the
    run's first task (batch on) and by the per-node steps (batch off) alike - and no remediation runs."""
    import datetime  # pylint: disable=import-outside-toplevel
    emu = k8s_emulator
    names = emu.add_nodes(6, "h100-eks", name_prefix="gpu-")
    recent = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    capped = names[:2]
    for name in capped:
        attempts = [{"time": recent, "incident": f"sen-00000000000{i}", "action": "reboot", "key": f"k{i}"} for i in range(3)]
        emu.api.patch("v1", "Node", name, {"metadata": {"annotations": {"dsxos.io/sentinel-attempts": json.dumps(attempts)}}})
    batched = ansible_run("dsxos.cluster.remediate", extra_vars=run_vars(emu, tmp_path, [alert(capped[0], "fp-cap-0")]), expect_rc=0)
    looped = ansible_run("dsxos.cluster.remediate", extra_vars=run_vars(emu, tmp_path, [alert(capped[1], "fp-cap-1")],
                                                                        sentinel_batch_quarantine=False), expect_rc=0)
    assert batch_of(batched)["result"]["quarantined"] == [capped[0]]
    assert batch_of(looped)["result"]["quarantined"] == []
    for name, result in zip(capped, (batched, looped)):
        outcome = next(o for o in stats_of(result)["outcomes"] if o["node"] == name)
        assert outcome["status"] == "needs-attention", outcome
        incident = annotation(emu, name, "dsxos.io/incident")
        assert incident["state"] == "needs-attention" and emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True
        assert "needs attention" in annotation(emu, name, "dsxos.io/quarantine-prior")["reason"]
        assert not stats_of(result)["failed"]
    assert not list(tmp_path.glob("remediation-*.json")), "no remediation at the cap"


DRAIN_TASK = "Drain every node whose decision drains it, at once"
WARN_DRAIN_TASK = "dsxos.cluster.sentinel : Warn when the batch drain failed as a whole (the per-node steps then drain each node)"


def pods_on(emu, name):
    return [p for p in emu.api.list("v1", "Pod", "workloads") if p["spec"].get("nodeName") == name and not p["metadata"].get("deletionTimestamp")]


def test_the_storm_is_drained_in_one_batch_and_the_per_node_steps_go_on_from_drained(k8s_emulator, ansible_run, tmp_path):
    """Reboot nodes and quarantine-drain nodes with pods: ONE sentinel_drain call drains all of them (each incident
    draining -> drained under its lock); no per-node drain runs; the reboot nodes are remediated and returned, the
    quarantine-drain nodes wait for a release without per-node steps; the same records as the per-node drain."""
    emu = k8s_emulator
    names = emu.add_nodes(10, "h100-eks", name_prefix="gpu-")
    emu.seed_pods(3, nodes=names)
    reboot, drain_only, looped = names[:3], names[3:5], names[5:7]
    events = [alert(n, "fp-" + n) for n in reboot] + [alert(n, "fp-" + n, "nvlink") for n in drain_only]
    force = {"force": True, "timeout_s": 60, "pdb_retry_s": 0.05, "pdb_retry_max_s": 0.2}

    result = ansible_run("dsxos.cluster.remediate", extra_vars=run_vars(emu, tmp_path, events, sentinel_drain=force), expect_rc=0)

    drains = [t for t in result.tasks if DRAIN_TASK in t["task"]]
    assert len(drains) == 1 and drains[0]["changed"], [t["task"] for t in result.tasks if "rain" in t["task"]]
    batch = drains[0]["result"]
    assert sorted(batch["drained"]) == sorted(reboot + drain_only) and not batch["failed_nodes"] and not batch["left"], batch["msg"]
    assert not [t for t in result.tasks if "sentinel : Drain (" in t["task"] and t["status"] != "skipped"], "no per-node drain"
    assert sorted(t["task"].rsplit(" ", 1)[1] for t in result.tasks if "sentinel : Lock " in t["task"]) == reboot, \
        "only the nodes with a remediation left get per-node steps"
    by_node = {o["node"]: o for o in stats_of(result)["outcomes"]}
    for name in reboot:
        assert by_node[name]["status"] == "returned" and node_events(emu, name) == STEPS, (by_node[name], node_events(emu, name))
        assert not pods_on(emu, name)
    for name in drain_only:
        outcome = by_node[name]
        assert outcome["status"] == "drained" and outcome["message"] == f"incident {outcome['incident']} drained, waiting for a release"
        assert node_events(emu, name) == STEPS[:3] and not pods_on(emu, name)
        assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True
    for name in names:
        lease = emu.api.get("coordination.k8s.io/v1", "Lease", f"dsxos-node-lock-{name}", "dsxos-system") if name in reboot + drain_only else None
        assert lease is None or not lease["spec"].get("holderIdentity"), f"lock of {name} released"

    # the same nodes' drain through the per-node steps (batch drain off) records exactly the same
    off = ansible_run("dsxos.cluster.remediate", extra_vars=run_vars(emu, tmp_path, [alert(n, "fp-" + n, "nvlink") for n in looped],
                                                                     sentinel_drain=force, sentinel_batch_drain=False), expect_rc=0)
    assert not [t for t in off.tasks if DRAIN_TASK in t["task"] and t["status"] != "skipped"]
    assert sorted(n for t in off.tasks if "sentinel : Drain (" in t["task"] and t["status"] != "skipped" for n in t["result"]["drained_nodes"]) == looped

    def shape(name):
        incident = annotation(emu, name, "dsxos.io/incident")
        return {"state": incident["state"], "steps": [s["state"] for s in incident["steps"]], "events": node_events(emu, name),
                "pods": len(pods_on(emu, name)), "history": [h["action"] for h in annotation(emu, name, "dsxos.io/quarantine-history", "[]")],
                "status": next(o for o in stats_of(off)["outcomes"] + stats_of(result)["outcomes"] if o["node"] == name)["status"]}
    assert {n: shape(n) for n in drain_only + looped} == {n: shape(drain_only[0]) for n in drain_only + looped}


def test_a_node_the_batch_cannot_drain_fails_the_run_with_the_reason_and_the_next_run_resumes(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    blocked, fine = emu.add_nodes(4, "h100-eks", name_prefix="gpu-")[:2]
    emu.add_deployment("solo", namespace="workloads", replicas=1, node_selector={"kubernetes.io/hostname": blocked}, grace_s=1)
    emu.wait_for(lambda: len(pods_on(emu, blocked)) == 1, 20, what="solo running")
    emu.add_pdb("solo", {"app": "solo"}, namespace="workloads", min_available=1)
    emu.settle()
    events = [alert(n, "fp-" + n, "nvlink") for n in (blocked, fine)]
    variables = run_vars(emu, tmp_path, events, sentinel_drain={"timeout_s": 2, "pdb_retry_s": 0.05, "pdb_retry_max_s": 0.2})

    failed = ansible_run("dsxos.cluster.remediate", extra_vars=variables, expect_rc=2)

    summary = stats_of(failed)
    assert [f["node"] for f in summary["failed"]] == [blocked], summary["failed"]
    assert summary["failed"][0]["message"].startswith("batch drain: drain ") and "solo" in summary["failed"][0]["message"]
    assert {o["node"]: o["status"] for o in summary["outcomes"]} == {blocked: "failed", fine: "drained"}
    incident = annotation(emu, blocked, "dsxos.io/incident")
    assert incident["state"] == "draining" and "solo" in incident["last_error"]
    assert emu.api.get("v1", "Node", blocked)["spec"]["unschedulable"] is True and len(pods_on(emu, blocked)) == 1
    assert not [t for t in failed.tasks if "sentinel : Drain (" in t["task"] and t["status"] != "skipped"], "not drained a second time"

    # the budget is lifted; the next run resumes the drain, and a new alert for the node joins its incident
    emu.api.delete("policy/v1", "PodDisruptionBudget", "solo", "workloads")
    later = alert(blocked, "fp-later-" + blocked, "nvlink", starts_at="2026-03-01T10:05:00Z")
    resumed = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_events=events + [later]), expect_rc=0)
    drains = [t for t in resumed.tasks if DRAIN_TASK in t["task"]]
    assert drains[0]["result"]["drained"] == [blocked], drains[0]["result"]["msg"]
    incident = annotation(emu, blocked, "dsxos.io/incident")
    assert incident["state"] == "drained" and not pods_on(emu, blocked)
    assert sorted(e["fingerprint"] for e in incident["events"]) == sorted(["fp-" + blocked, "fp-later-" + blocked]), "the new alert joined"
    # the intake joins the new alert before the drain resumes; no second quarantine or draining Event
    assert node_events(emu, blocked) == STEPS[:2] + ["SentinelJoined", STEPS[2]], "the resumed incident"
    assert {o["node"]: o["status"] for o in stats_of(resumed)["outcomes"]} == {blocked: "drained", fine: "drained"}


def test_a_batch_drain_that_fails_as_a_whole_leaves_each_drain_to_the_per_node_steps(k8s_emulator, ansible_run, tmp_path):
    """Drain options the drain refuses (an eviction timeout beyond the timeout): the batch task fails as a whole, says so,
    and the run goes on - each node's own drain fails with the reason recorded, the summary is published, the run fails."""
    emu = k8s_emulator
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")[:2]
    variables = run_vars(emu, tmp_path, [alert(n, "fp-" + n, "nvlink") for n in names], sentinel_drain={"timeout_s": 5, "eviction_timeout_s": 50})

    result = ansible_run("dsxos.cluster.remediate", extra_vars=variables, expect_rc=2)

    drain = next(t for t in result.tasks if DRAIN_TASK in t["task"])
    assert "drained" not in drain["result"] and "eviction_timeout_s" in drain["result"]["msg"]
    assert "batch drain failed, the per-node steps drain each node" in result.task(WARN_DRAIN_TASK)["result"]["msg"]
    summary = stats_of(result)
    assert sorted(f["node"] for f in summary["failed"]) == names
    assert all("eviction_timeout_s" in f["message"] for f in summary["failed"]), summary["failed"]
    for name in names:
        incident = annotation(emu, name, "dsxos.io/incident")
        assert incident["state"] == "draining" and "eviction_timeout_s" in incident["last_error"]
        assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True


# ---------------------------------------------------------------------------------------------------------------------
# The rulebook's two runs per batch (sentinel_phase) and a release that meets a node another run holds
# ---------------------------------------------------------------------------------------------------------------------

def _entry_params(emu, entry, **params):
    out = {key: spec.get("default") for key, spec in entry.spec.items()}
    out.update(kubeconfig=emu.kubeconfig_path, retry_backoff_s=0.01)
    out.update(params)
    return out


@contextlib.contextmanager
def racing(when, act, poll_s=0.005):
    """While the body runs, a thread calls ``act()`` once, as soon as ``when()`` holds (another actor racing the run);
    yields an Event that is set once ``act`` returned."""
    done, stop = threading.Event(), threading.Event()

    def loop():
        while not stop.is_set():
            if when():
                act()
                done.set()
                return
            stop.wait(poll_s)
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield done
    finally:
        stop.set()
        thread.join(10)


def test_an_intake_run_quarantines_records_and_joins_then_ends_and_the_second_run_does_the_rest(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    first, other = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")[:2]
    for name in (first, other):
        emu.add_deployment("w-" + name, namespace="workloads", replicas=1, node_selector={"kubernetes.io/hostname": name}, grace_s=1)
    emu.wait_for(lambda: len(pods_on(emu, first)) == 1 and len(pods_on(emu, other)) == 1, 20, what="pods running")
    events = [alert(first, "fp-1", "nvlink"), alert(other, "fp-2", "nvlink")]
    variables = run_vars(emu, tmp_path, events)

    intake = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="intake"), expect_rc=0)
    summary = stats_of(intake)
    assert summary["phase"] == "intake" and sorted(summary["acted"]) == sorted([first, other]) and not summary["failed"]
    assert {o["node"]: o["status"] for o in summary["outcomes"]} == {first: "quarantined", other: "quarantined"}
    for name in (first, other):
        assert annotation(emu, name, "dsxos.io/incident")["state"] == "quarantined"
        assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True and len(pods_on(emu, name)) == 1, "not drained"
    assert not [t for t in intake.tasks if ("sentinel_drain" in t["task"] or "Drain every node" in t["task"]) and t["status"] != "skipped"]

    # a second intake with a new alert for a quarantined node joins it at once (no lock: it is written with the
    # node's resourceVersion), and opens nothing
    later = alert(first, "fp-1-later", "nvlink", starts_at="2026-03-01T10:05:00Z")
    joined = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="intake", sentinel_events=[later]), expect_rc=0)
    assert [(o["node"], o["status"]) for o in stats_of(joined)["outcomes"]] == [(first, "joined")]
    assert sorted(e["fingerprint"] for e in annotation(emu, first, "dsxos.io/incident")["events"]) == ["fp-1", "fp-1-later"]

    # the second run of each batch drains from the recorded state; the joined alert changes nothing there
    rest = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="all"), expect_rc=0)
    summary = stats_of(rest)
    assert summary["phase"] == "all" and {o["node"]: o["status"] for o in summary["outcomes"]} == {first: "drained", other: "drained"}
    for name in (first, other):
        assert annotation(emu, name, "dsxos.io/incident")["state"] == "drained" and not pods_on(emu, name)
    assert node_events(emu, first) == ["SentinelQuarantined", "SentinelJoined", "SentinelDraining", "SentinelDrained"]
    assert node_events(emu, other) == STEPS[:3]
    again = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="all", sentinel_events=[later]), expect_rc=0)
    assert [(o["node"], o["status"]) for o in stats_of(again)["outcomes"]] == [(first, "drained")]
    assert not [t for t in again.tasks if t.get("changed")], "a rerun over a waiting node changes nothing"


def test_a_release_for_a_node_another_run_holds_marks_the_alerts_and_that_run_releases_it_when_it_ends(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    held, free = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")[:2]
    events = [alert(held, "fp-h", "certification"), alert(free, "fp-f", "certification")]  # quarantine only
    variables = run_vars(emu, tmp_path, events)
    ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="intake"), expect_rc=0)
    incident = annotation(emu, held, "dsxos.io/incident")
    assert incident["state"] == "quarantined"

    # another run (the second run of a batch) holds the node while the alerts resolve
    taken = call_entry(NODE_LOCK, _entry_params(emu, NODE_LOCK, node=held, holder="dsxos-sentinel/other-run", purpose="sentinel",
                                                reason=incident["id"], duration_s=600))
    assert taken.get("held") is True, taken
    resolved = [dict(e, status="resolved", ends_at="2026-03-01T10:30:00Z") for e in events]
    release = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=resolved), expect_rc=0)
    outcomes = {o["node"]: o for o in stats_of(release)["outcomes"]}
    assert outcomes[free]["status"] == "released" and not emu.api.get("v1", "Node", free)["spec"].get("unschedulable")
    assert outcomes[held]["status"] == "deferred" and "other-run" in outcomes[held]["message"], outcomes[held]
    assert "releases the node when it ends" in outcomes[held]["message"]
    record = annotation(emu, held, "dsxos.io/incident")
    assert record["id"] == incident["id"] and all(e.get("resolved_at") for e in record["events"]), "the resolution is recorded"
    assert emu.api.get("v1", "Node", held)["spec"]["unschedulable"] is True, "nothing released under another run's lock"

    # that run ends (its lock given back); a run of the rest that finds the node waiting releases it
    call_entry(NODE_LOCK, _entry_params(emu, NODE_LOCK, node=held, holder="dsxos-sentinel/other-run", state="release"))
    rest = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="all", sentinel_events=events[:1]), expect_rc=0)
    statuses = [(o["node"], o["kind"], o["status"]) for o in stats_of(rest)["outcomes"]]
    assert statuses == [(held, "resume", "quarantined"), (held, "release", "released")], statuses
    assert not emu.api.get("v1", "Node", held)["spec"].get("unschedulable") and annotation(emu, held, "dsxos.io/incident") is None
    assert [(h["id"], h["outcome"]) for h in annotation(emu, held, "dsxos.io/incident-history", "[]")] == [(incident["id"], "released")]
    assert not annotation(emu, held, "dsxos.io/quarantine-prior", "{}").get("reason")


def test_a_close_without_its_quarantine_release_is_finished_by_the_next_release_and_then_changes_nothing(k8s_emulator, ansible_run, tmp_path):
    """An automatic release closes the incident first (only when every alert resolved), then releases the quarantine:
    a run that died between the two leaves a cordoned node whose record names the incident, and the next release of
    that incident finishes the quarantine release - never a release of another (older) incident."""
    emu = k8s_emulator
    name, first, variables, older = intake_one(emu, ansible_run, tmp_path, "fp-old", starts_at="2026-03-01T09:00:00Z")
    ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[dict(e, status="resolved") for e in first]), expect_rc=0)
    assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable")

    events = [alert(name, "fp-c", "certification")]
    ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="intake", sentinel_events=events), expect_rc=0)
    incident = annotation(emu, name, "dsxos.io/incident")["id"]
    assert incident != older
    # a release that died after its close: the incident is closed, the quarantine is still there
    closed = call_entry(NODE_INCIDENT, _entry_params(emu, NODE_INCIDENT, action="close", node=name, incident=incident, outcome="released",
                                                     actor="dsxos-sentinel"))
    assert closed["changed"] and emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True
    assert "sentinel incident " + incident in annotation(emu, name, "dsxos.io/quarantine-prior", "{}")["reason"], "the cordon has its record"

    # a release by hand of the OLDER released incident does not touch the quarantine of the newer one
    manual = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[], sentinel_nodes=[name], sentinel_incident=older),
                         expect_rc=0)
    [outcome] = stats_of(manual)["outcomes"]
    assert outcome["status"] == "skipped" and "is not open" in outcome["message"], outcome
    assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True

    resolved = [dict(e, status="resolved", ends_at="2026-03-01T10:30:00Z") for e in events]
    release = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=resolved), expect_rc=0)
    [outcome] = stats_of(release)["outcomes"]
    assert outcome["status"] == "released" and outcome["incident"] == incident and "its quarantine released now" in outcome["message"], outcome
    assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable") and not annotation(emu, name, "dsxos.io/quarantine-prior", "{}")
    again = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=resolved), expect_rc=0)
    summary = stats_of(again)
    assert summary["outcomes"] == [] and "ended" in json.dumps(summary["skipped"]), summary
    assert not [t for t in again.tasks if t.get("changed")], "a replay of the release changes nothing"


def test_a_release_never_closes_an_alert_joined_after_it_read_the_node(k8s_emulator, ansible_run, tmp_path):
    """Joins take no node lock: an intake joins a new alert while a release holds the node, after the release marked its
    alerts resolved and before its close. The close (require_all_resolved, on the read its write carries) writes
    nothing, the node stays quarantined and is reported waiting; the joined alert, once resolved, releases it."""
    emu = k8s_emulator
    name, events, variables, incident = intake_one(emu, ansible_run, tmp_path, "fp-r")
    late = dict(alert(name, "fp-late", "certification", starts_at="2026-03-01T10:05:00Z"))

    def resolved_on_the_node():
        record = annotation(emu, name, "dsxos.io/incident")
        return bool(record and all(e.get("resolved_at") for e in record["events"]))

    def join_late():  # the intake of a later batch, racing the release (no node lock)
        out = call_entry(NODE_INCIDENT, _entry_params(emu, NODE_INCIDENT, action="join", node=name, incident=incident, events=[late],
                                                      actor="dsxos-sentinel"))
        assert out["changed"], out
    # the node's reads answer after 1.5 s (the state is read after the wait): the join lands well before the close reads
    emu.faults.set(f"/api/v1/nodes/{name}", methods=["GET"], latency_s=1.5)
    try:
        with racing(resolved_on_the_node, join_late) as joined:
            resolved = [dict(e, status="resolved", ends_at="2026-03-01T10:30:00Z") for e in events]
            release = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=resolved), expect_rc=0)
    finally:
        emu.faults.clear()
    assert joined.is_set()
    [outcome] = stats_of(release)["outcomes"]
    assert outcome["status"] == "waiting" and outcome["message"] == f"alert(s) fp-late of incident {incident} still fire", outcome
    record = annotation(emu, name, "dsxos.io/incident")
    assert record["id"] == incident and [(e["fingerprint"], bool(e.get("resolved_at"))) for e in record["events"]] == [
        ("fp-r", True), ("fp-late", False)]
    assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True and annotation(emu, name, "dsxos.io/incident-history", "[]") == []

    done = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[dict(late, status="resolved")]), expect_rc=0)
    assert [(o["node"], o["status"]) for o in stats_of(done)["outcomes"]] == [(name, "released")]
    assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable")


def test_the_run_after_an_intake_waits_for_a_node_a_release_holds_and_never_for_another_remediation_run(k8s_emulator, ansible_run, tmp_path):
    emu = k8s_emulator
    waited, skipped = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")[:2]
    events = [alert(waited, "fp-w", "nvlink"), alert(skipped, "fp-s", "nvlink")]
    variables = run_vars(emu, tmp_path, events, sentinel_lock_wait_release_s=120)
    ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="intake"), expect_rc=0)
    for node, holder, purpose in ((waited, "dsxos-sentinel/release-run", "sentinel-release"), (skipped, "dsxos-sentinel/other-run", "sentinel")):
        taken = call_entry(NODE_LOCK, _entry_params(emu, NODE_LOCK, node=node, holder=holder, purpose=purpose, duration_s=600))
        assert taken.get("held") is True, taken
    # the release run ends a few seconds later (whatever it did, the node's state is read again under the lock)
    unlock = _entry_params(emu, NODE_LOCK, node=waited, holder="dsxos-sentinel/release-run", state="release")
    ends = threading.Timer(4.0, lambda: call_entry(NODE_LOCK, unlock))
    ends.start()
    try:
        rest = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="all"), expect_rc=0)
    finally:
        ends.cancel()
    outcomes = {o["node"]: o for o in stats_of(rest)["outcomes"]}
    assert outcomes[waited]["status"] == "drained", outcomes[waited]
    assert annotation(emu, waited, "dsxos.io/incident")["state"] == "drained"
    assert outcomes[skipped]["status"] == "skipped" and "other-run" in outcomes[skipped]["message"], outcomes[skipped]
    assert annotation(emu, skipped, "dsxos.io/incident")["state"] == "quarantined", "the other run's node is left to it"


def test_a_release_run_sweeps_up_the_releases_no_alert_will_bring_and_never_a_node_another_run_holds(k8s_emulator, ansible_run, tmp_path):
    """Alertmanager sends a group's resolved alerts once: a release that died after its close (quarantine still there),
    or before it (every alert resolved, incident open), would leave the node cordoned for good. Any release run - here
    one with no events at all, as a schedule runs it - finishes both; a node another run holds is left to that run, a
    node that needs attention and an operator's own cordon are never touched, and a second sweep changes nothing."""
    emu = k8s_emulator
    closed, resolved, held, attention, manual, orphan = emu.add_nodes(6, "h100-eks", name_prefix="gpu-")
    events = [alert(node, "fp-" + node, "certification") for node in (closed, resolved, held, attention)]
    variables = run_vars(emu, tmp_path, events)
    ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="intake"), expect_rc=0)
    ids = {node: annotation(emu, node, "dsxos.io/incident")["id"] for node in (closed, resolved, held, attention)}
    for node in (closed, resolved, held, attention):  # the resolved alerts reached a release that died (or was held off)
        out = call_entry(NODE_INCIDENT, _entry_params(emu, NODE_INCIDENT, action="resolve", node=node, actor="dsxos-sentinel",
                                                      events=[dict(e, status="resolved") for e in events if e["node"] == node]))
        assert out["all_resolved"] is True, out
    assert call_entry(NODE_INCIDENT, _entry_params(emu, NODE_INCIDENT, action="close", node=closed, incident=ids[closed], outcome="released",
                                                   actor="dsxos-sentinel"))["changed"]
    assert call_entry(NODE_INCIDENT, _entry_params(emu, NODE_INCIDENT, action="advance", node=attention, incident=ids[attention],
                                                   state="needs-attention", actor="dsxos-sentinel"))["changed"]
    assert call_entry(NODE_LOCK, _entry_params(emu, NODE_LOCK, node=held, holder="dsxos-sentinel/other-run", purpose="sentinel",
                                               duration_s=600))["held"]
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_QUARANTINE  # pylint: disable=import-outside-toplevel
    assert not call_entry(NODE_QUARANTINE, _entry_params(emu, NODE_QUARANTINE, nodes=[manual], action="cordon", reason="RMA 1234",
                                                         actor="ops")).get("failed")
    # a run that cordoned its node and died before it recorded the incident: the sweep never releases it (the dead
    # run's other alerts are unknown), a release by hand of that incident does
    lost = "sen-0123456789ab"
    assert not call_entry(NODE_QUARANTINE, _entry_params(emu, NODE_QUARANTINE, nodes=[orphan], action="cordon", actor="dsxos-sentinel",
                                                         reason=f"sentinel incident {lost}: reboot (rule r): XID 79")).get("failed")

    off = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[], sentinel_release_sweep=False), expect_rc=0)
    assert stats_of(off)["outcomes"] == [] and emu.api.get("v1", "Node", closed)["spec"]["unschedulable"] is True

    # at most sentinel_release_sweep_max per run (a run holds the rulebook lock while it releases): the rest next time
    first = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[], sentinel_release_sweep_max=1), expect_rc=0)
    second = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[]), expect_rc=0)
    assert len(stats_of(first)["outcomes"]) == 1 and len(stats_of(second)["outcomes"]) == 1, (stats_of(first), stats_of(second))
    outcomes = {o["node"]: o for o in stats_of(first)["outcomes"] + stats_of(second)["outcomes"]}
    assert sorted(outcomes) == sorted([closed, resolved]), outcomes
    assert outcomes[closed]["status"] == "released" and outcomes[closed]["incident"] == ids[closed], outcomes[closed]
    assert outcomes[closed]["message"].startswith("swept up: incident " + ids[closed] + " was closed; its quarantine released now"), outcomes[closed]
    assert outcomes[resolved]["status"] == "released" and outcomes[resolved]["incident"] == ids[resolved], outcomes[resolved]
    for node in (closed, resolved):
        assert not emu.api.get("v1", "Node", node)["spec"].get("unschedulable"), node
        assert annotation(emu, node, "dsxos.io/incident") is None and annotation(emu, node, "dsxos.io/incident-history", "[]")[-1]["outcome"] == "released"
    for node in (held, attention, manual, orphan):
        assert emu.api.get("v1", "Node", node)["spec"]["unschedulable"] is True, node
    assert annotation(emu, held, "dsxos.io/incident")["state"] == "quarantined", "the other run's node is that run's to release"
    assert annotation(emu, attention, "dsxos.io/incident")["state"] == "needs-attention"
    assert annotation(emu, manual, "dsxos.io/quarantine-prior", "{}")["reason"] == "RMA 1234"

    again = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[]), expect_rc=0)
    assert stats_of(again)["outcomes"] == [] and not [t for t in again.tasks if t.get("changed")], "a second sweep changes nothing"

    status = call_entry(NODE_INCIDENT, _entry_params(emu, NODE_INCIDENT, action="list"))
    assert {r["node"]: r["orphan_incident"] for r in status["nodes"]}[orphan] == lost and f"{orphan} ({lost})" in status["markdown"]
    wrong = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[], sentinel_nodes=[orphan],
                                                                 sentinel_incident="sen-000000000000"), expect_rc=0)
    assert [o["status"] for o in stats_of(wrong)["outcomes"]] == ["skipped"] and emu.api.get("v1", "Node", orphan)["spec"]["unschedulable"]
    by_hand = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[], sentinel_nodes=[orphan], sentinel_incident=lost),
                          expect_rc=0)
    [outcome] = stats_of(by_hand)["outcomes"]
    assert outcome["status"] == "released" and "was never recorded; its quarantine released now" in outcome["message"], outcome
    assert not emu.api.get("v1", "Node", orphan)["spec"].get("unschedulable") and emu.api.get("v1", "Node", manual)["spec"]["unschedulable"]


def test_a_release_held_off_by_a_dead_release_is_deferred_to_the_sweep_which_releases_the_node(k8s_emulator, ansible_run, tmp_path):
    """A killed release leaves its short lease behind. A release of the same node meanwhile waits (here 1 s), marks the
    alerts resolved and reports deferred to the sweep (a release holder never reads the node again when it ends); once
    the dead lease expired, the next release run - with no events - sweeps the node up."""
    emu = k8s_emulator
    name, events, variables, incident = intake_one(emu, ansible_run, tmp_path, "fp-d", sentinel_lock_wait_release_s=1)
    dead = call_entry(NODE_LOCK, _entry_params(emu, NODE_LOCK, node=name, holder="dsxos-sentinel/dead-release", purpose="sentinel-release",
                                               reason=incident, duration_s=600))
    assert dead.get("held") is True, dead
    resolved = [dict(e, status="resolved", ends_at="2026-03-01T10:30:00Z") for e in events]
    release = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=resolved), expect_rc=0)
    [outcome] = stats_of(release)["outcomes"]
    assert outcome["status"] == "deferred" and "dead-release" in outcome["message"], outcome
    assert outcome["message"].endswith("the first release run after that lease ends sweeps it up"), outcome
    assert emu.api.get("v1", "Node", name)["spec"]["unschedulable"] is True

    call_entry(NODE_LOCK, _entry_params(emu, NODE_LOCK, node=name, holder="dsxos-sentinel/dead-release", state="release"))  # its lease ran out
    sweep = ansible_run("dsxos.cluster.release", extra_vars=dict(variables, sentinel_events=[]), expect_rc=0)
    [swept] = stats_of(sweep)["outcomes"]
    assert swept["status"] == "released" and swept["incident"] == incident and swept["message"].startswith("swept up: "), swept
    assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable") and annotation(emu, name, "dsxos.io/incident") is None


def test_a_join_that_meets_an_incident_ended_meanwhile_reports_the_node_pending(k8s_emulator, ansible_run, tmp_path):
    """A new alert for a node with an open incident is a join; the incident ends (a release) between the plan's read and
    the join's read. The join writes nothing and says ``ended``; the run reports the node ``pending`` (the alert's next
    delivery decides again), never ``joined``, and leaves the node as the release left it."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_changes import plan_close  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import format_time  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents  # pylint: disable=import-outside-toplevel
    emu = k8s_emulator
    name, first, variables, incident = intake_one(emu, ansible_run, tmp_path, "fp-a")
    later = [alert(name, "fp-b", "certification", starts_at="2026-03-01T10:05:00Z")]

    def close_directly():  # the release, landing between the plan's read (1st GET) and the join's (2nd GET)
        change = plan_close(NodeIncidents.from_node(emu.api.get("v1", "Node", name)), incident, "released", "test", format_time(time.time()))

        def apply(obj):
            for part, values in (("annotations", change.annotations), ("labels", change.labels)):
                target = obj["metadata"].setdefault(part, {})
                for key, value in values.items():
                    target.pop(key, None) if value is None else target.__setitem__(key, value)  # pylint: disable=expression-not-assigned
        emu.store.mutate(emu.registry.lookup("", "v1", "nodes"), None, name, apply)
    emu.faults.set(f"/api/v1/nodes/{name}", methods=["GET"], latency_s=2.0)
    try:
        with racing(lambda: emu.faults.injected["latency"] >= 2, close_directly) as closed:
            run = ansible_run("dsxos.cluster.remediate", extra_vars=dict(variables, sentinel_phase="all", sentinel_events=later), expect_rc=0)
    finally:
        emu.faults.clear()
    assert closed.is_set()
    assert [t for t in run.tasks if BATCH_TASK in t["task"]][0]["result"]["joined"][0]["ended"] is True
    [outcome] = [o for o in stats_of(run)["outcomes"] if o["node"] == name]
    assert outcome["kind"] == "join" and outcome["status"] == "pending", outcome
    assert outcome["message"] == f"incident {incident} ended before the new alerts joined it; their next delivery decides again", outcome
    assert annotation(emu, name, "dsxos.io/incident") is None, "nothing joined, nothing reopened"
    assert [h["id"] for h in annotation(emu, name, "dsxos.io/incident-history", "[]")] == [incident]


def test_a_run_whose_lock_was_taken_during_a_long_step_stops_before_the_remediation_and_never_releases_that_lock(
        k8s_emulator, ansible_run, tmp_path):
    """The run renews its lock before it records the remediation (a lease taken before a long drain may lapse during
    it): when another run took the node meanwhile, the run stops there - no attempt recorded, no remediation, reported
    failed with the reason, the node quarantined in its recorded state - and leaves the other run's lock alone."""
    emu = k8s_emulator
    name = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")[0]
    events = [alert(name, "fp-l")]  # fallen-off-bus: reboot
    variables = run_vars(emu, tmp_path, events, sentinel_batch_drain=False)  # the per-node drain, under the run's lock

    def drained():
        record = annotation(emu, name, "dsxos.io/incident")
        return bool(record and record["state"] == "drained")
    # the lease's reads answer after 1.5 s (read after the wait): the hand-over lands before the renewal reads it
    emu.faults.set(f"/apis/coordination.k8s.io/v1/namespaces/dsxos-system/leases/dsxos-node-lock-{name}", methods=["GET"], latency_s=1.5)

    def hand_over():  # the lease lapsed during the drain and another run took the node
        def change(lease):
            lease["spec"].update(holderIdentity="dsxos-sentinel/other-run", leaseDurationSeconds=600,
                                 renewTime=time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()))
        emu.store.mutate(emu.registry.lookup("coordination.k8s.io", "v1", "leases"), "dsxos-system", "dsxos-node-lock-" + name, change)
    try:
        with racing(drained, hand_over) as taken:
            result = ansible_run("dsxos.cluster.remediate", extra_vars=variables, expect_rc=None)
    finally:
        emu.faults.clear()
    assert taken.is_set()
    [outcome] = stats_of(result)["outcomes"]
    assert outcome["status"] == "failed" and outcome["message"].startswith("before remediation reboot: cannot renew the lock"), outcome
    assert "other-run" in outcome["message"], outcome
    assert not list(tmp_path.glob(f"remediation-{name}-*.json")), "no remediation without the lock"
    assert annotation(emu, name, "dsxos.io/incident")["state"] == "drained" and emu.api.get("v1", "Node", name)["spec"]["unschedulable"]
    assert annotation(emu, name, "dsxos.io/sentinel-attempts", "[]") == [], "no attempt recorded without the lock"
    lease = emu.api.get("coordination.k8s.io/v1", "Lease", "dsxos-node-lock-" + name, "dsxos-system")
    assert lease["spec"]["holderIdentity"] == "dsxos-sentinel/other-run", "the other run's lock is not this run's to release"
