# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The batch quarantine (operate/batch_quarantine.py, module sentinel_quarantine) in-process against the emulator.

Decisions come from the real policy (sentinel_policy.plan), so the batch is fed exactly what the role feeds it.
"""
from __future__ import annotations

import ast
import json
import os

import jinja2
import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_quarantine import (
    BatchOptions, BatchQuarantineError, quarantine_batch, truncate_reason, validate_batch,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import LockRequest, NodeLock
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import get_states
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import PolicyOptions, plan
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STARTS = "2026-03-01T10:00:00Z"
HOLDER = "dsxos-sentinel/run-1"
WIDE = BreakerConfig(max_fraction=1.0, max_nodes=100)


def client_for(emu):
    return KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig_path, "retries": 1, "retry_backoff_s": 0.01}))


def alert(node, fingerprint, fault_class="fallen-off-bus"):
    return {"node": node, "gpu": "3", "uuid": None, "code": 79, "fault_class": fault_class, "action": None, "status": "firing",
            "fingerprint": fingerprint, "starts_at": STARTS, "ends_at": None, "pods": [], "alertname": "GpuXidFatal", "severity": "critical",
            "labels": {"cluster": "test"}}


def decide(client, nodes, destructive=True):
    """The policy's decisions for one alert per node (node state read from the cluster first, as sentinel_intake does)."""
    events = [alert(n, f"fp-{n}") for n in nodes]
    state = get_states(client, nodes)
    return plan(events, None, state, PolicyOptions(destructive=destructive, now=parse_rfc3339(STARTS) + 60))["decisions"]


def options(**kw):
    values = dict(holder=HOLDER, actor="dsxos-sentinel", breaker=WIDE, workers=4)
    values.update(kw)
    return BatchOptions(**values)


def node(emu, name):
    return emu.api.get("v1", "Node", name)


def annotations(emu, name):
    return node(emu, name)["metadata"].get("annotations") or {}


def incident(emu, name):
    text = annotations(emu, name).get("dsxos.io/incident")
    return json.loads(text) if text else None


def sentinel_events(emu, name):
    return [e["reason"] for e in emu.api.list("v1", "Event", "default") if e["involvedObject"]["name"] == name]


def lease_holder(emu, name):
    lease = emu.api.get("coordination.k8s.io/v1", "Lease", f"dsxos-node-lock-{name}", "dsxos-system")
    return lease["spec"].get("holderIdentity")


def breaker_nodes(emu):
    data = emu.api.get("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system")["data"]
    return sorted(e["node"] for e in json.loads(data["entries"]))


def test_every_open_decision_is_quarantined_exactly_as_the_steps_do(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(12, "h100-eks", name_prefix="gpu-")
    faulty = names[:8]
    with client_for(emu) as client:
        decisions = decide(client, faulty)
        result = quarantine_batch(client, decisions, options())
    assert result["changed"] and result["quarantined"] == faulty, result["msg"]
    assert not result["held_back"] and not result["deferred"] and not result["already_open"]
    by_node = {d["node"]: d for d in decisions}
    for name in faulty:
        spec = node(emu, name)["spec"]
        assert spec["unschedulable"] is True
        assert {"key": "dsxos.io/quarantine", "effect": "NoSchedule"} in [{k: t[k] for k in ("key", "effect")} for t in spec["taints"]]
        prior = json.loads(annotations(emu, name)["dsxos.io/quarantine-prior"])
        assert prior["reason"] == by_node[name]["reason"] and by_node[name]["incident"] in prior["reason"]
        opened = incident(emu, name)
        assert opened["id"] == by_node[name]["incident"] and opened["state"] == "quarantined" and opened["attempts"] == 0
        assert node(emu, name)["metadata"]["labels"]["dsxos.io/incident-state"] == "quarantined"
        assert sentinel_events(emu, name) == ["SentinelQuarantined"]
        assert not lease_holder(emu, name), "every lock is released"
        row = next(n for n in result["nodes"] if n["node"] == name)
        assert row["quarantine_time"] == prior["since"] and row["cordoned_at"] >= row["quarantine_time"]
    for name in names[8:]:
        assert not node(emu, name)["spec"].get("unschedulable") and incident(emu, name) is None
    assert breaker_nodes(emu) == sorted(faulty), "the breaker counted each quarantined node once"


def test_a_rerun_of_the_same_decisions_changes_nothing(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(4, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        decisions = decide(client, names)
        first = quarantine_batch(client, decisions, options())
        before = {n: node(emu, n)["metadata"]["annotations"] for n in names}
        again = quarantine_batch(client, decisions, options())
    assert first["quarantined"] == names
    assert not again["changed"] and again["already_open"] == names and not again["quarantined"]
    assert {n: node(emu, n)["metadata"]["annotations"] for n in names} == before
    assert all(sentinel_events(emu, n) == ["SentinelQuarantined"] for n in names), "no second Event"
    assert all(len(json.loads(annotations(emu, n)["dsxos.io/quarantine-history"])) == 1 for n in names)


def test_the_breaker_holds_back_nodes_beyond_its_limit_untouched_with_their_alerts_recorded(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(10, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        decisions = decide(client, names[:6])
        result = quarantine_batch(client, decisions, options(breaker=BreakerConfig(max_fraction=1.0, max_nodes=3)))
    assert result["quarantined"] == names[:3], "admitted in decision order, like asking node by node"
    held = result["held_back"]
    assert [h["node"] for h in held] == names[3:6]
    assert all(h["reason"].startswith("circuit breaker: circuit breaker dsxos-system/dsxos-circuit-breaker") for h in held)
    assert result["circuit_breaker"]["limit"] == 3 and result["circuit_breaker"]["refused"]
    for name in names[3:6]:
        assert not node(emu, name)["spec"].get("unschedulable") and not node(emu, name)["spec"].get("taints")
        assert incident(emu, name) is None and "dsxos.io/quarantine-prior" not in annotations(emu, name)
        recorded = json.loads(annotations(emu, name)["dsxos.io/sentinel-events"])
        assert [r["fingerprint"] for r in recorded] == [f"fp-{name}"]
        assert not lease_holder(emu, name)
    assert breaker_nodes(emu) == sorted(names[:3])


def test_locked_nodes_and_other_incidents_are_left_to_the_per_node_loop(k8s_emulator):
    emu = k8s_emulator
    locked, other, free = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        NodeLock(client, LockRequest(node=locked, holder="someone-else", duration_s=600)).acquire()
        earlier = decide(client, [other])
        quarantine_batch(client, earlier, options())
        decisions = [d for d in decide(client, [locked, free]) if d["kind"] == "open"]
        fake = dict(earlier[0], incident="sen-0000000000ff")
        result = quarantine_batch(client, decisions + [fake], options())
    deferred = {d["node"]: d["reason"] for d in result["deferred"]}
    assert result["quarantined"] == [free]
    assert deferred[locked].startswith("locked: node ") and "someone-else" in deferred[locked]
    assert deferred[other] == f"incident {earlier[0]['incident']} is open: the alerts join it"
    assert not node(emu, locked)["spec"].get("unschedulable") and incident(emu, locked) is None
    assert lease_holder(emu, locked) == "someone-else", "a lock held by another run is never touched"
    assert incident(emu, other)["id"] == earlier[0]["incident"]


def test_a_failing_cordon_defers_the_node_and_still_releases_its_lock(k8s_emulator):
    emu = k8s_emulator
    bad, good = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        decisions = decide(client, [bad, good])
        emu.faults.set(f"/api/v1/nodes/{bad}", methods=["PATCH"], error_rate=1.0, error_code=500)
        result = quarantine_batch(client, decisions, options())
        emu.faults.clear()
    assert result["quarantined"] == [good]
    assert [d["node"] for d in result["deferred"]] == [bad] and result["deferred"][0]["reason"].startswith("cordon failed")
    assert not node(emu, bad)["spec"].get("unschedulable") and incident(emu, bad) is None
    assert not lease_holder(emu, bad) and not lease_holder(emu, good)


def test_check_mode_writes_nothing(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        decisions = decide(client, names)
        result = quarantine_batch(client, decisions, options(), check_mode=True)
    assert result["changed"] and result["quarantined"] == names
    assert all(not node(emu, n)["spec"].get("unschedulable") and incident(emu, n) is None for n in names)
    assert not emu.api.list("coordination.k8s.io/v1", "Lease", "dsxos-system")
    assert not [c for c in emu.api.list("v1", "ConfigMap", "dsxos-system") if c["metadata"]["name"] == "dsxos-circuit-breaker"]


def test_other_kinds_and_dry_runs_are_ignored(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        decisions = decide(client, names)
        dry = [dict(decisions[0], dry_run=True), dict(decisions[1], kind="resume")]
        result = quarantine_batch(client, dry, options())
    assert not result["changed"] and not result["nodes"]
    assert result["ignored"] == [{"node": names[0], "kind": "open", "dry_run": True}, {"node": names[1], "kind": "resume", "dry_run": False}]


def test_a_needs_attention_decision_opens_its_incident_in_needs_attention(k8s_emulator):
    """A node at its attempt cap without an open incident: quarantined, the incident opened in needs-attention."""
    emu = k8s_emulator
    names = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        decision = decide(client, names[:1])[0]
        capped = dict(decision, kind="needs_attention", state="needs-attention",
                      reason=f"sentinel incident {decision['incident']}: needs attention: 3 remediation attempt(s)")
        result = quarantine_batch(client, [capped], options())
    assert result["quarantined"] == [names[0]] and not result["ignored"], result["msg"]
    assert incident(emu, names[0])["state"] == "needs-attention" and node(emu, names[0])["spec"]["unschedulable"] is True
    prior = json.loads(annotations(emu, names[0])["dsxos.io/quarantine-prior"])
    assert "needs attention" in prior["reason"] and decision["incident"] in prior["reason"]
    assert result["nodes"][0]["current"]["state"] == "needs-attention"


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: dict(d, node="gpu-0\n"), "RFC 1123"),
    (lambda d: dict(d, incident="Not An Id"), "incident"),
    (lambda d: dict(d, events=[{"fingerprint": "fp x", "starts_at": STARTS}]), "fingerprint"),
    (lambda d: "junk", "must be a decision"),
])
def test_bad_decisions_are_refused_before_any_api_call(k8s_emulator, mutate, needle):
    emu = k8s_emulator
    name = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    with client_for(emu) as client:
        decision = decide(client, [name])[0]
    calls = emu.api_calls()
    params = {k: v.get("default") for k, v in entry.SENTINEL_QUARANTINE.spec.items()}
    params.update(kubeconfig=emu.kubeconfig_path, decisions=[mutate(decision)], holder=HOLDER, actor="a")
    result = call_entry(entry.SENTINEL_QUARANTINE, params)
    assert result["failed"] and needle in result["msg"], result["msg"]
    assert emu.api_calls() == calls, "nothing sent"


def test_two_open_decisions_for_one_node_and_bad_workers_are_refused():
    decision = {"node": "gpu-1", "kind": "open", "incident": "sen-00000000000a", "action": "reboot", "reason": "r",
                "events": [alert("gpu-1", "fp-1")], "gpus": [3]}
    with pytest.raises(BatchQuarantineError, match="two open decisions"):
        validate_batch([decision, decision], options())
    with pytest.raises(BatchQuarantineError, match="workers"):
        validate_batch([decision], options(workers=0))
    items, ignored = validate_batch([decision], options())
    assert [i.node for i in items] == ["gpu-1"] and not ignored and items[0].lock.holder == HOLDER and items[0].lock.reason == "sen-00000000000a"


def test_the_cordon_reason_is_cut_like_the_jinja_truncate_filter():
    env = jinja2.Environment()
    for text in ("short", "word " * 300, "x" * 1003, "x" * 1006, "a " * 600):
        assert truncate_reason(text) == env.from_string("{{ t | truncate(1000) }}").render(t=text)


def test_entry_runs_through_call_entry_with_the_breaker_on_by_default(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(20, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        decisions = decide(client, names[:4])
    params = {k: v.get("default") for k, v in entry.SENTINEL_QUARANTINE.spec.items()}
    params.update(kubeconfig=emu.kubeconfig_path, decisions=decisions, holder=HOLDER, actor="a", retry_backoff_s=0.01)
    result = call_entry(entry.SENTINEL_QUARANTINE, params)
    assert "failed" not in result, result
    # the defaults: max_fraction 0.1 of 20 GPU nodes = 2
    assert result["quarantined"] == names[:2] and [h["node"] for h in result["held_back"]] == names[2:4]
    assert result["api_calls"] and result["circuit_breaker"]["limit"] == 2


def test_documentation_is_the_spec_and_the_module_is_in_the_k8s_group():
    source = open(os.path.join(REPO, "plugins", "modules", "sentinel_quarantine.py"), encoding="utf-8").read()  # pylint: disable=consider-using-with
    namespace = {}
    exec(source.split("from ansible.module_utils.basic import")[0], namespace)  # pylint: disable=exec-used
    main = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert len(main.body) == 2, "thin module: AnsibleModule + finish(call_entry(...))"
    doc = yaml.safe_load(namespace["DOCUMENTATION"])
    assert yaml.safe_load(namespace["EXAMPLES"]) and yaml.safe_load(namespace["RETURN"])
    fragments = doc["extends_documentation_fragment"]
    assert fragments == ["dsxos.cluster.k8s_auth", "dsxos.cluster.sentinel_batch", "dsxos.cluster.circuit_breaker", "dsxos.cluster.sentinel_policy"]
    spec = {k: v for k, v in entry.SENTINEL_QUARANTINE.spec.items() if k not in K8S_AUTH_SPEC and k != "circuit_breaker"}
    documented = dict(doc["options"])
    for name in ("sentinel_policy", "sentinel_batch"):
        fragment = open(os.path.join(REPO, "plugins", "doc_fragments", name + ".py"), encoding="utf-8").read()  # pylint: disable=consider-using-with
        fragment_namespace = {}
        exec(fragment, fragment_namespace)  # pylint: disable=exec-used
        documented.update(yaml.safe_load(fragment_namespace["ModuleDocFragment"].DOCUMENTATION)["options"])
    assert sorted(documented) == sorted(spec)
    for key, declared in spec.items():
        assert documented[key].get("type") == declared.get("type", "str"), key
        assert documented[key].get("elements") == declared.get("elements"), key
        assert bool(documented[key].get("required")) == bool(declared.get("required")), key
        if declared.get("default") is not None:
            assert documented[key].get("default") == declared["default"], key
    runtime = yaml.safe_load(open(os.path.join(REPO, "meta", "runtime.yml"), encoding="utf-8"))  # pylint: disable=consider-using-with
    assert "sentinel_quarantine" in runtime["action_groups"]["k8s"]
