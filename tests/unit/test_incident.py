# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""operate/incident.py and its neighbours (node_incidents, incident_replay, incident_changes, incident_status, incident_values:
the pure state machine, stale/replay rules) and operate/remediation_state.py (the Node annotations, resourceVersion
preconditions and Events) in-process against the emulator; node_incident's DOCUMENTATION = its spec."""
from __future__ import annotations

import ast
import json
import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import (
    ANN_ATTEMPTS, ANN_INCIDENT, ANN_INCIDENT_HISTORY, LABEL_INCIDENT_STATE, NEEDS_ATTENTION, STATES,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_changes import (
    AdvanceRequest, OpenRequest, plan_advance, plan_close, plan_join, plan_open, plan_record, plan_resolve,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_replay import classify_firing, classify_resolved
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError, format_time, incident_id_for, parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import run_node_incident, validate_options
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import PolicyOptions, plan
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
T0 = parse_rfc3339("2026-03-01T10:00:00Z")


def at(offset_s):
    return format_time(T0 + offset_s)


def ev(fingerprint, offset_s=0):
    return {"fingerprint": fingerprint, "starts_at": at(offset_s)}


class FakeNode:
    """A Node dict whose annotations/labels follow the planned changes (what the API patch does)."""

    def __init__(self, name="gpu-0"):
        self.node = {"metadata": {"name": name, "resourceVersion": "1", "labels": {}, "annotations": {}}, "spec": {}}

    @property
    def view(self):
        return NodeIncidents.from_node(self.node)

    def apply(self, change):
        meta = self.node["metadata"]
        for key, value in change.annotations.items():
            if value is None:
                meta["annotations"].pop(key, None)
            else:
                meta["annotations"][key] = value
        for key, value in change.labels.items():
            if value is None:
                meta["labels"].pop(key, None)
            else:
                meta["labels"][key] = value
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return change


def opened(fake, incident="sen-000000000001", events=(ev("fp-1"),), offset_s=10, state="quarantined", action="reboot"):
    request = OpenRequest(incident=incident, action=action, reason=f"sentinel incident {incident}", events=tuple(events), state=state)
    return fake.apply(plan_open(fake.view, request, at(offset_s)))


def advance(fake, state, offset_s=20, incident="sen-000000000001", **kw):
    return fake.apply(plan_advance(fake.view, AdvanceRequest(incident=incident, state=state, **kw), at(offset_s), T0 + offset_s))


def test_open_records_incident_label_and_event_and_is_idempotent():
    fake = FakeNode()
    change = opened(fake)
    assert change.changed and change.event["reason"] == "SentinelQuarantined"
    assert fake.node["metadata"]["labels"][LABEL_INCIDENT_STATE] == "quarantined"
    incident = json.loads(fake.node["metadata"]["annotations"][ANN_INCIDENT])
    assert incident["id"] == "sen-000000000001" and incident["events"] == [ev("fp-1")] and incident["opened_at"] == at(10)
    again = plan_open(fake.view, OpenRequest(incident="sen-000000000001", action="reboot", reason="r", events=(ev("fp-1"),)), at(11))
    assert not again.changed and again.result["opened"] is False
    other = plan_open(fake.view, OpenRequest(incident="sen-000000000002", action="reboot", reason="r", events=(ev("fp-9", 30),)), at(40))
    assert not other.changed and other.result["conflict"] == "sen-000000000001"


def test_state_machine_walks_to_returned_and_refuses_skips():
    fake = FakeNode()
    opened(fake)
    for offset, state in enumerate(("draining", "drained"), start=20):
        assert advance(fake, state, offset).event["reason"] == {"draining": "SentinelDraining", "drained": "SentinelDrained"}[state]
    with pytest.raises(IncidentError, match="cannot go from drained to quarantined"):
        plan_advance(fake.view, AdvanceRequest(incident="sen-000000000001", state="quarantined"), at(30), T0 + 30)
    assert advance(fake, "remediating", 30, attempt=True).result["incident"]["attempts"] == 1
    assert advance(fake, "recertifying", 40).changed
    with pytest.raises(IncidentError, match="use close"):
        plan_advance(fake.view, AdvanceRequest(incident="sen-000000000001", state="returned"), at(41), T0 + 41)
    closed = fake.apply(plan_close(fake.view, "sen-000000000001", "returned", "recertified", at(50)))
    assert closed.event["reason"] == "SentinelReturned" and closed.result["ended"]
    meta = fake.node["metadata"]
    assert ANN_INCIDENT not in meta["annotations"] and LABEL_INCIDENT_STATE not in meta["labels"]
    history = json.loads(meta["annotations"][ANN_INCIDENT_HISTORY])
    assert history[0]["outcome"] == "returned" and history[0]["events"] == [ev("fp-1")]
    steps = [s["state"] for s in closed.result["closed"]["steps"]]
    assert steps == ["quarantined", "draining", "drained", "remediating", "recertifying", "returned"]


def test_return_only_after_recertifying_release_from_any_state():
    fake = FakeNode()
    opened(fake)
    with pytest.raises(IncidentError, match="only a recertified incident"):
        plan_close(fake.view, "sen-000000000001", "returned", "", at(20))
    assert fake.apply(plan_close(fake.view, "sen-000000000001", "released", "alert resolved", at(20))).event["reason"] == "SentinelReleased"


def test_a_run_for_an_ended_incident_does_nothing():
    fake = FakeNode()
    opened(fake)
    fake.apply(plan_close(fake.view, "sen-000000000001", "released", "", at(20)))
    late = plan_advance(fake.view, AdvanceRequest(incident="sen-000000000001", state="draining"), at(30), T0 + 30)
    assert not late.changed and late.result["ended"] is True and late.result["outcome"] == "released"
    assert not plan_close(fake.view, "sen-000000000001", "released", "", at(31)).changed
    assert not plan_open(fake.view, OpenRequest(incident="sen-000000000001", action="reboot", reason="r", events=(ev("fp-1"),)),
                         at(32)).changed
    with pytest.raises(IncidentError, match="unknown incident"):
        plan_advance(fake.view, AdvanceRequest(incident="sen-0000000000ff", state="draining"), at(30), T0 + 30)


def test_stale_alert_and_replay_after_release_never_act():
    fake = FakeNode()
    opened(fake, events=(ev("fp-1", 0),), offset_s=10)
    assert classify_firing(fake.view, "fp-1", at(0)).kind == "resume"
    assert classify_firing(fake.view, "fp-old", at(-5)).kind == "stale", "started before the incident's alert, not part of it"
    assert classify_firing(fake.view, "fp-new", at(15)).kind == "join"
    fake.apply(plan_close(fake.view, "sen-000000000001", "released", "", at(100)))
    assert classify_firing(fake.view, "fp-1", at(0)).kind == "replay"
    assert classify_firing(fake.view, "fp-1", at(-3)).kind == "replay", "an older occurrence than the one the incident held"
    assert classify_firing(fake.view, "fp-1", at(50)).kind == "new", \
        "a later occurrence the released incident never held (it fired again before the release, delivered after it)"
    assert classify_firing(fake.view, "fp-old", at(-5)).kind == "new", "an ended incident refuses only its own alerts"
    assert classify_firing(fake.view, "fp-1", at(200)).kind == "new", "the same alert firing again after the release is new"
    refused = plan_open(fake.view, OpenRequest(incident="sen-000000000002", action="reboot", reason="r", events=(ev("fp-1", 0),)), at(300))
    assert not refused.changed and refused.result["stale"][0]["verdict"] == "replay"


def test_new_incident_after_release_is_not_cancelled_by_an_older_resolved_alert():
    fake = FakeNode()
    opened(fake, events=(ev("fp-1", 0),), offset_s=10)
    fake.apply(plan_close(fake.view, "sen-000000000001", "released", "", at(100)))
    opened(fake, incident="sen-000000000002", events=(ev("fp-1", 200),), offset_s=210)
    old = plan_resolve(fake.view, [ev("fp-1", 0)], at(220))
    assert not old.changed and old.result["ignored"][0]["verdict"] == "stale" and not old.result["all_resolved"]
    other = plan_resolve(fake.view, [ev("fp-zz", 150)], at(220))
    assert not other.changed and other.result["ignored"][0]["verdict"] == "not-ours"
    assert classify_resolved(fake.view, "fp-1", at(200)).kind == "resolve"
    done = fake.apply(plan_resolve(fake.view, [ev("fp-1", 200)], at(230)))
    assert done.changed and done.result["all_resolved"] and done.result["resolved"] == ["fp-1"]


def test_an_alert_that_started_after_the_incidents_alert_joins_even_when_a_delayed_run_opened_it():
    fake = FakeNode()
    opened(fake, events=(ev("fp-1", 0),), offset_s=1200)  # alert at 10:00, incident opened by a delayed run at 10:20
    assert classify_firing(fake.view, "fp-2", at(300)).kind == "join", "started at 10:05, after the incident's alert"
    assert classify_firing(fake.view, "fp-0", at(-60)).kind == "stale", "started before the incident's earliest alert"
    joined = fake.apply(plan_join(fake.view, None, [ev("fp-2", 300)], at(1300)))
    assert joined.result["joined"] == ["fp-2"] and not joined.result["stale"]
    fake.node["metadata"]["annotations"][ANN_INCIDENT] = json.dumps(dict(json.loads(fake.node["metadata"]["annotations"][ANN_INCIDENT]),
                                                                         events=[]))
    assert classify_firing(fake.view, "fp-2", at(300)).kind == "stale", "without recorded alerts the opening time counts"
    assert classify_firing(fake.view, "fp-3", at(1250)).kind == "join"


def test_release_waits_for_every_alert_of_the_incident():
    fake = FakeNode()
    opened(fake, events=(ev("fp-1", 0), ev("fp-2", 1)), offset_s=10)
    first = fake.apply(plan_resolve(fake.view, [ev("fp-1", 0)], at(20)))
    assert first.changed and not first.result["all_resolved"]
    assert fake.apply(plan_resolve(fake.view, [ev("fp-2", 1)], at(30))).result["all_resolved"]


def test_join_adds_alerts_without_starting_anything():
    fake = FakeNode()
    opened(fake, offset_s=10)
    advance(fake, "remediating", 20, attempt=True)
    joined = fake.apply(plan_join(fake.view, None, [ev("fp-2", 15), ev("fp-3", -5)], at(25)))
    assert joined.result["joined"] == ["fp-2"] and joined.result["stale"][0]["fingerprint"] == "fp-3"
    assert joined.event["reason"] == "SentinelJoined" and fake.view.current.state == "remediating"
    assert fake.view.current.attempts == 1 and not joined.labels


def test_attempt_cap_sends_the_incident_to_needs_attention():
    fake = FakeNode()
    opened(fake, offset_s=10)
    for offset in (20, 30):
        advance(fake, "remediating", offset, attempt=True, attempt_cap=2)
    capped = advance(fake, "remediating", 40, attempt=True, attempt_cap=2)
    assert capped.result["capped"] and capped.result["state"] == NEEDS_ATTENTION and capped.event["type"] == "Warning"
    assert len(json.loads(fake.node["metadata"]["annotations"][ANN_ATTEMPTS])) == 2
    # outside the window the attempts no longer count
    assert fake.view.attempts_within(T0 + 40 + 86400, 86400) == 0


@pytest.mark.parametrize("state", [s for s in STATES if s != "returned"])
def test_resume_from_every_state_is_idempotent_and_converges(state):
    """A rerun that finds the incident in ``state`` re-enters it without change and can go on to its end."""
    fake = FakeNode()
    path = {"quarantined": [], "draining": ["draining"], "drained": ["draining", "drained"],
            "remediating": ["draining", "drained", "remediating"], "recertifying": ["draining", "drained", "remediating", "recertifying"],
            "needs-attention": ["needs-attention"]}[state]
    opened(fake)
    for index, step in enumerate(path):
        advance(fake, step, 20 + index, attempt=step == "remediating")
    rerun = plan_advance(fake.view, AdvanceRequest(incident="sen-000000000001", state=state), at(60), T0 + 60)
    assert not rerun.changed and rerun.result["state"] == state
    rest = {"quarantined": ["draining", "drained", "remediating", "recertifying"], "draining": ["drained", "remediating", "recertifying"],
            "drained": ["remediating", "recertifying"], "remediating": ["recertifying"], "recertifying": [],
            "needs-attention": ["recertifying"]}[state]
    for index, step in enumerate(rest):
        advance(fake, step, 70 + index, attempt=step == "remediating")
    assert fake.apply(plan_close(fake.view, "sen-000000000001", "returned", "", at(90))).result["ended"]


def test_record_keeps_recent_alerts_bounded_and_unique():
    fake = FakeNode()
    for index in range(5):
        fake.apply(plan_record(fake.view, [dict(ev(f"app-{index}", index), fault_class="application")], at(index), limit=3))
    assert not plan_record(fake.view, [dict(ev("app-4", 4), fault_class="application")], at(9)).changed
    assert [r["fingerprint"] for r in fake.view.recent] == ["app-2", "app-3", "app-4"]


def test_malformed_annotation_and_ids_are_named():
    fake = FakeNode()
    fake.node["metadata"]["annotations"][ANN_INCIDENT] = "{not json"
    with pytest.raises(IncidentError, match="gpu-0.*dsxos.io/incident"):
        NodeIncidents.from_node(fake.node)
    with pytest.raises(IncidentError, match="incident id"):
        plan_open(FakeNode().view, OpenRequest(incident="Bad_ID", action="reboot", reason="r", events=()), at(0))
    for bad in ("2026-03-01T10:00:00Z\n", "2026-03-01 10:00", "yesterday"):
        with pytest.raises(IncidentError):
            parse_rfc3339(bad)
    assert parse_rfc3339("2026-03-01T12:00:00.123456789+02:00") == pytest.approx(T0 + 0.123456789, abs=1e-6)
    assert incident_id_for("gpu-0", "fp", at(0)) == incident_id_for("gpu-0", "fp", at(0)) != incident_id_for("gpu-1", "fp", at(0))


def test_free_text_is_folded_into_one_line_and_non_strings_are_refused():
    stderr = "modprobe: FATAL: Module nvidia is in use.\r\n\n  rmmod:\tERROR\x00\x1b[0m  done\n"
    options = validate_options({"action": "advance", "node": "gpu-1", "incident": "sen-000000000001", "state": "remediating",
                                "detail": stderr, "error": stderr + "x" * 3000, "reason": "line one\nline two"})
    assert options.message == "modprobe: FATAL: Module nvidia is in use. rmmod: ERROR [0m done"
    assert options.error.startswith(options.message) and len(options.error) == 1024 and "\n" not in options.error
    assert options.reason == "line one line two"
    for bad in (["a"], 5, {"a": 1}):
        with pytest.raises(IncidentError, match="must be a string"):
            validate_options({"action": "advance", "node": "gpu-1", "incident": "sen-000000000001", "state": "draining", "error": bad})
    with pytest.raises(IncidentError, match="reason is required"):
        validate_options({"action": "open", "node": "gpu-1", "incident": "sen-000000000001", "remediation": "reboot", "reason": "\n \r",
                          "events": [ev("fp-1")]})
    with pytest.raises(IncidentError, match="control characters"):
        validate_options({"action": "open", "node": "gpu-1", "incident": "sen-000000000001", "remediation": "re\nboot", "reason": "r", "events": [ev("fp-1")]})


def test_options_refuse_bad_names_before_any_call():
    with pytest.raises(Exception, match="RFC 1123"):
        validate_options({"action": "advance", "node": "gpu-1; rm -rf /", "incident": "sen-1", "state": "draining"})
    with pytest.raises(IncidentError, match="needs incident"):
        validate_options({"action": "close", "node": "gpu-1", "outcome": "released"})


# ---------------------------------------------------------------------------------------------------- against the emulator


def client_for(emu):
    return KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig_path, "retries": 1, "retry_backoff_s": 0.01}))


def run(client, **params):
    return run_node_incident(client, validate_options(params))


def test_writes_carry_the_resource_version_and_emit_events(k8s_emulator):
    emu = k8s_emulator
    name = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    emu.faults.set(f"/api/v1/nodes/{name}", methods=["PATCH"], error_rate=1.0, error_code=409)
    opening = dict(action="open", node=name, incident="sen-00000000000a", remediation="reboot", reason="sentinel incident x",
                   events=[ev("fp-1")], gpus=[3])
    with client_for(emu) as client:
        with pytest.raises(IncidentError, match="still conflicting after 3 attempts"):
            run(client, conflict_retries=2, **opening)
        assert ANN_INCIDENT not in (emu.api.get("v1", "Node", name)["metadata"].get("annotations") or {})
        emu.faults.clear()
        out = run(client, **opening)
        assert out["changed"] and out["opened"] and out["attempts"] == 1 and out["event"]["reason"] == "SentinelQuarantined"
        assert run(client, action="advance", node=name, incident="sen-00000000000a", state="draining")["state"] == "draining"
        again = run(client, action="advance", node=name, incident="sen-00000000000a", state="draining")
        assert not again["changed"]
        state = run(client, action="get", nodes=[name, "no-such-node"])["nodes"]
        assert state[name]["incident"]["state"] == "draining" and state["no-such-node"]["exists"] is False
        listed = run(client, action="list")
        assert [r["node"] for r in listed["nodes"]] == [name] and "| " + name + " | sen-00000000000a | draining |" in listed["markdown"]
        closed = run(client, action="close", node=name, incident="sen-00000000000a", outcome="released", detail="manual")
        assert closed["ended"] and closed["event"]["reason"] == "SentinelReleased"
        assert run(client, action="list")["nodes"] == []
    events = [e for e in emu.api.list("v1", "Event", "default") if e["involvedObject"]["name"] == name]
    assert sorted(e["reason"] for e in events) == ["SentinelDraining", "SentinelQuarantined", "SentinelReleased"]
    assert all(e["involvedObject"]["kind"] == "Node" and e["source"]["component"] == "dsxos-sentinel" for e in events)


def test_get_marks_a_node_with_a_malformed_incident_unreadable_and_the_policy_skips_only_it(k8s_emulator):
    emu = k8s_emulator
    bad, good = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        client.core.patch_node(bad, {"metadata": {"annotations": {ANN_INCIDENT: "{not json"}}})
        state = run(client, action="get", nodes=[bad, good])["nodes"]
    assert state[bad]["unreadable"] is True and "dsxos.io/incident" in state[bad]["error"] and state[bad]["incident"] is None
    assert state[good]["incident"] is None and "unreadable" not in state[good]
    with pytest.raises(IncidentError, match="dsxos.io/incident"):
        NodeIncidents.from_state(bad, state[bad])
    events = [dict(node=n, status="firing", fingerprint="fp-" + n, starts_at=at(0), fault_class="fallen-off-bus", alertname="GpuXidFatal",
                   severity="critical", labels={}) for n in (bad, good)]
    result = plan(events, None, state, PolicyOptions(destructive=True, now=T0 + 60))
    assert [d["node"] for d in result["decisions"]] == [good]
    assert [(s["node"], s["verdict"]) for s in result["skipped"]] == [(bad, "unreadable")]


def test_missing_node_and_check_mode(k8s_emulator):
    emu = k8s_emulator
    name = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    with client_for(emu) as client:
        with pytest.raises(IncidentError, match="not found"):
            run(client, action="record", node="gpu-missing", events=[ev("fp-1")])
        preview = run_node_incident(client, validate_options({"action": "open", "node": name, "incident": "sen-00000000000b",
                                                              "remediation": "reboot", "reason": "r", "events": [ev("fp-1")]}), check_mode=True)
        assert preview["changed"] and preview["opened"]
    assert ANN_INCIDENT not in (emu.api.get("v1", "Node", name)["metadata"].get("annotations") or {})


# ---------------------------------------------------------------------------------------------------- module contract


def _options_of(module):
    source = open(os.path.join(REPO, "plugins", "modules", module + ".py"), encoding="utf-8").read()  # pylint: disable=consider-using-with
    namespace = {}
    exec(source.split("from ansible.module_utils.basic import")[0], namespace)  # pylint: disable=exec-used
    main = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert len(main.body) == 2
    doc = yaml.safe_load(namespace["DOCUMENTATION"])
    yaml.safe_load(namespace["EXAMPLES"])
    yaml.safe_load(namespace["RETURN"])
    return doc


def _compare(doc, spec):
    problems = []
    for key in sorted(set(doc) | set(spec)):
        if key not in doc or key not in spec:
            problems.append(f"{key}: documented {key in doc}, declared {key in spec}")
            continue
        documented, declared = doc[key], spec[key]
        for what, a, b in (("type", documented.get("type"), declared.get("type", "str")), ("choices", documented.get("choices"), declared.get("choices")),
                           ("elements", documented.get("elements"), declared.get("elements")),
                           ("required", bool(documented.get("required")), bool(declared.get("required")))):
            if a != b:
                problems.append(f"{key}.{what}: documented {a!r}, declared {b!r}")
        if declared.get("default") not in (None,) and documented.get("default") != declared.get("default"):
            problems.append(f"{key}.default: documented {documented.get('default')!r}, declared {declared.get('default')!r}")
    return problems


def fragment_options(name):
    """The options of one of the collection's doc fragments (plugins/doc_fragments/<name>.py)."""
    source = open(os.path.join(REPO, "plugins", "doc_fragments", name + ".py"), encoding="utf-8").read()  # pylint: disable=consider-using-with
    namespace = {}
    exec(source, namespace)  # pylint: disable=exec-used
    return yaml.safe_load(namespace["ModuleDocFragment"].DOCUMENTATION)["options"]


@pytest.mark.parametrize("module,point,k8s", [("node_incident", entry.NODE_INCIDENT, True), ("sentinel_plan", entry.SENTINEL_PLAN, True)])
def test_documentation_is_the_spec(module, point, k8s):
    doc = _options_of(module)
    spec = {k: v for k, v in point.spec.items() if not (k8s and k in K8S_AUTH_SPEC)}
    fragments = doc.get("extends_documentation_fragment") or []
    options = dict(doc["options"])
    if "dsxos.cluster.sentinel_policy" in fragments:
        options.update(fragment_options("sentinel_policy"))
    assert not _compare(options, spec)
    assert ("dsxos.cluster.k8s_auth" in fragments) == k8s
    runtime = yaml.safe_load(open(os.path.join(REPO, "meta", "runtime.yml"), encoding="utf-8"))  # pylint: disable=consider-using-with
    assert (module in runtime["action_groups"]["k8s"]) == k8s


def test_entry_turns_bad_input_into_a_clean_failure():
    params = {k: v.get("default") for k, v in entry.NODE_INCIDENT.spec.items()}
    params.update(action="open", node="gpu-1\n", incident="sen-1", remediation="reboot", reason="r", events=[ev("fp")])
    result = call_entry(entry.NODE_INCIDENT, params)
    assert result["failed"] and "RFC 1123" in result["msg"]


# ---------------------------------------------------------------------------------------------------- automatic release: close only when all resolved


def test_close_with_require_all_resolved_leaves_an_incident_with_a_firing_alert_open():
    fake = FakeNode()
    opened(fake)
    fake.apply(plan_resolve(fake.view, [ev("fp-1")], at(20)))
    fake.apply(plan_join(fake.view, "sen-000000000001", [ev("fp-2", 21)], at(22)))
    refused = plan_close(fake.view, "sen-000000000001", "released", "alert resolved", at(23), require_all_resolved=True)
    assert not refused.changed and refused.result["unresolved"] == ["fp-2"] and refused.result["ended"] is False
    assert "fp-2 still fire" in refused.message and fake.view.current.id == "sen-000000000001"
    # without the flag (a release by hand) the incident closes whatever fires
    assert plan_close(fake.view, "sen-000000000001", "released", "by hand", at(23)).changed
    fake.apply(plan_resolve(fake.view, [ev("fp-2", 21)], at(24)))
    closed = fake.apply(plan_close(fake.view, "sen-000000000001", "released", "alert resolved", at(25), require_all_resolved=True))
    assert closed.changed and closed.result["ended"] and fake.view.current is None


def test_an_alert_joined_between_the_release_read_and_its_close_keeps_the_incident_open(k8s_emulator, monkeypatch):
    """The close re-decides on the read its write carries: a join that lands after the close read the node makes the
    close's PATCH fail with 409, and the close, planned again, refuses (the joined alert is never closed as a replay)."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate import remediation_state  # pylint: disable=import-outside-toplevel
    emu = k8s_emulator
    name = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    with client_for(emu) as client, client_for(emu) as other:
        run(client, action="open", node=name, incident="sen-00000000000b", remediation="reboot", reason="sentinel incident b",
            events=[ev("fp-1")])
        run(client, action="resolve", node=name, events=[ev("fp-1")])
        real_read = remediation_state.read_node
        reads = []

        def read_then_join(api, node):
            seen = real_read(api, node)
            if api is client:  # the close's reads (the join below reads through ``other``)
                reads.append(seen["metadata"]["resourceVersion"])
                if len(reads) == 1:  # an intake joins a new alert while the release holds its read
                    run(other, action="join", node=name, incident="sen-00000000000b", events=[ev("fp-2", 30)])
            return seen
        monkeypatch.setattr(remediation_state, "read_node", read_then_join)
        out = run(client, action="close", node=name, incident="sen-00000000000b", outcome="released", require_all_resolved=True)
        monkeypatch.undo()
        assert len(reads) == 2 and reads[0] != reads[1], "the first PATCH met 409 and the close read the node again"
        assert out["changed"] is False and out["unresolved"] == ["fp-2"] and out["attempts"] == 2
        state = run(client, action="get", nodes=[name])["nodes"][name]
        assert state["incident"]["id"] == "sen-00000000000b" and state["all_resolved"] is False
        assert [e["fingerprint"] for e in state["incident"]["events"]] == ["fp-1", "fp-2"] and state["history"] == []


def test_an_unfinished_release_is_only_a_released_incident_whose_quarantine_is_still_there():
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (  # pylint: disable=import-outside-toplevel
        ANN_PRIOR, LABEL_STATE)
    fake = FakeNode()
    opened(fake)
    meta = fake.node["metadata"]
    meta["labels"][LABEL_STATE] = "quarantined"
    meta["annotations"][ANN_PRIOR] = json.dumps({"reason": "sentinel incident sen-000000000001: reboot (rule r): XID 79", "since": at(10)})
    assert fake.view.standing().unfinished_release != "sen-000000000001", "still open"
    fake.apply(plan_close(fake.view, "sen-000000000001", "released", "", at(20)))
    assert fake.view.standing().unfinished_release == "sen-000000000001"
    assert fake.view.standing().unfinished_release != "sen-00000000000", "an id prefix is not the incident"
    meta["annotations"][ANN_PRIOR] = json.dumps({"reason": "RMA 1234 by an operator", "since": at(30)})
    assert fake.view.standing().unfinished_release != "sen-000000000001", "another actor's quarantine is not ours to release"
    meta["annotations"][ANN_PRIOR] = json.dumps({"reason": "sentinel incident sen-000000000001: x", "since": at(10)})
    meta["labels"][LABEL_STATE] = "released"
    assert fake.view.standing().unfinished_release != "sen-000000000001", "released already"
    meta["labels"][LABEL_STATE] = "quarantined"
    fake.apply(plan_open(fake.view, OpenRequest(incident="sen-000000000002", action="reboot", reason="r", events=(ev("fp-2", 40),)), at(41)))
    assert fake.view.standing().unfinished_release != "sen-000000000001", "a new incident is open: its quarantine is not the old one's"


def test_the_plain_state_keeps_the_quarantine_reason_so_the_policy_sees_an_unfinished_release():
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (  # pylint: disable=import-outside-toplevel
        ANN_PRIOR, LABEL_STATE)
    fake = FakeNode()
    opened(fake)
    fake.node["metadata"]["labels"][LABEL_STATE] = "quarantined"
    fake.node["metadata"]["annotations"][ANN_PRIOR] = json.dumps({"reason": "sentinel incident sen-000000000001: x", "since": at(10)})
    fake.apply(plan_close(fake.view, "sen-000000000001", "released", "", at(20)))
    plain = NodeIncidents.from_state("gpu-0", fake.view.to_state())
    assert plain.quarantine() == fake.view.quarantine() and plain.standing().unfinished_release == "sen-000000000001"
    resolved = [dict(node="gpu-0", status="resolved", fingerprint="fp-1", starts_at=at(0), ends_at=at(15), fault_class="fallen-off-bus",
                     alertname="GpuXidFatal", severity="critical", labels={})]
    result = plan(resolved, None, {"gpu-0": fake.view.to_state()}, PolicyOptions(destructive=True, now=T0 + 60))
    assert result["releases"] == [{"node": "gpu-0", "incident": "sen-000000000001", "state": None, "events": result["releases"][0]["events"],
                                   "unfinished": True}] and result["skipped"] == []
    fake.node["metadata"]["labels"][LABEL_STATE] = "released"
    again = plan(resolved, None, {"gpu-0": fake.view.to_state()}, PolicyOptions(destructive=True, now=T0 + 60))
    assert again["releases"] == [] and [s["verdict"] for s in again["skipped"]] == ["ended"]


def test_an_alert_that_fires_again_during_its_open_incident_joins_it_and_keeps_it_open():
    """The incident's alert resolves, then fires again (a new startsAt) before the release: the new occurrence joins the
    incident (a resolved alert never hides a fresh fault), the release's close refuses, a late resolve of the OLD
    occurrence changes nothing, and the new occurrence's resolve lets the incident close."""
    fake = FakeNode()
    opened(fake, events=(ev("fp-1", 0),), offset_s=10)
    fake.apply(plan_resolve(fake.view, [ev("fp-1", 0)], at(20)))
    assert fake.view.current.all_resolved
    assert classify_firing(fake.view, "fp-1", at(0)).kind == "resume", "the resolved occurrence itself, re-sent"
    assert classify_firing(fake.view, "fp-1", at(30)).kind == "join"
    joined = fake.apply(plan_join(fake.view, "sen-000000000001", [ev("fp-1", 30)], at(31)))
    assert joined.changed and joined.result["joined"] == ["fp-1"]
    assert [(e.starts_at, bool(e.resolved_at)) for e in fake.view.current.events] == [(at(0), True), (at(30), False)]
    assert not fake.view.current.all_resolved and classify_firing(fake.view, "fp-1", at(30)).kind == "resume"
    assert not plan_join(fake.view, "sen-000000000001", [ev("fp-1", 30)], at(32)).changed, "joined once"
    assert not plan_close(fake.view, "sen-000000000001", "released", "", at(33), require_all_resolved=True).changed
    late = plan_resolve(fake.view, [ev("fp-1", 0)], at(34))
    assert not late.changed and late.result["ignored"][0]["verdict"] == "stale"
    fake.apply(plan_resolve(fake.view, [ev("fp-1", 30)], at(40)))
    assert fake.apply(plan_close(fake.view, "sen-000000000001", "released", "", at(41), require_all_resolved=True)).changed
    assert classify_firing(fake.view, "fp-1", at(30)).kind == "replay" and classify_firing(fake.view, "fp-1", at(35)).kind == "new"


def test_a_returned_incident_covers_every_occurrence_up_to_its_recertification():
    """The recertification vouches for the node as it found it: an alert (this one again, or another) that started
    before the recertification started is covered; one that started during the recertification or after the return
    was not seen by it and opens a new incident. A history entry written before vouched_at falls back to its end."""
    fake = FakeNode()
    opened(fake, events=(ev("fp-1", 0),), offset_s=10)
    for offset, state in ((20, "draining"), (21, "drained"), (22, "remediating"), (60, "recertifying")):
        advance(fake, state, offset)
    fake.apply(plan_close(fake.view, "sen-000000000001", "returned", "", at(100)))
    assert fake.view.history[-1]["vouched_at"] == at(60)
    assert classify_firing(fake.view, "fp-1", at(50)).kind == "replay", "fired again during the remediation: covered"
    assert classify_firing(fake.view, "fp-2", at(50)).kind == "replay", "another alert during the remediation: would have joined"
    assert classify_firing(fake.view, "fp-1", at(70)).kind == "new", "started during the recertification: not vouched for"
    assert classify_firing(fake.view, "fp-2", at(70)).kind == "new"
    assert classify_firing(fake.view, "fp-1", at(150)).kind == "new"
    fake.node["metadata"]["annotations"][ANN_INCIDENT_HISTORY] = json.dumps(
        [{k: v for k, v in fake.view.history[-1].items() if k != "vouched_at"}])
    assert classify_firing(fake.view, "fp-1", at(70)).kind == "replay", "an entry without vouched_at covers up to its end"
    released = FakeNode("gpu-1")
    opened(released, events=(ev("fp-1", 0),), offset_s=10)
    advance(released, "recertifying", 60)
    released.apply(plan_close(released.view, "sen-000000000001", "released", "", at(100)))
    assert "vouched_at" not in released.view.history[-1], "only a returned incident was vouched for"


def _quarantined_by_sentinel(fake, incident="sen-000000000001"):
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (  # pylint: disable=import-outside-toplevel
        ANN_PRIOR, LABEL_STATE)
    fake.node["metadata"]["labels"][LABEL_STATE] = "quarantined"
    fake.node["metadata"]["annotations"][ANN_PRIOR] = json.dumps({"reason": f"sentinel incident {incident}: reboot (rule r): XID 79",
                                                                  "since": at(10)})


def test_release_due_is_an_unfinished_release_or_an_open_incident_whose_alerts_all_resolved():
    fake = FakeNode()
    opened(fake, events=(ev("fp-1"), ev("fp-2")))
    _quarantined_by_sentinel(fake)
    assert fake.view.standing().release_due is None, "its alerts fire"
    fake.apply(plan_resolve(fake.view, [ev("fp-1")], at(20)))
    assert fake.view.standing().release_due is None, "one alert still fires"
    fake.apply(plan_resolve(fake.view, [ev("fp-2")], at(21)))
    assert fake.view.standing().release_due == {"incident": "sen-000000000001", "unfinished": False}
    plain = NodeIncidents.from_state("gpu-0", fake.view.to_state())
    assert plain.standing().release_due == fake.view.standing().release_due and fake.view.to_state()["release_due"] == fake.view.standing().release_due
    fake.apply(plan_close(fake.view, "sen-000000000001", "released", "", at(30)))
    assert fake.view.standing().release_due == {"incident": "sen-000000000001", "unfinished": True}, "closed, its quarantine still there"
    assert NodeIncidents.from_state("gpu-0", fake.view.to_state()).standing().release_due == fake.view.standing().release_due

    attention = FakeNode("gpu-1")
    opened(attention, state=NEEDS_ATTENTION)
    _quarantined_by_sentinel(attention)
    attention.apply(plan_resolve(attention.view, [ev("fp-1")], at(20)))
    assert attention.view.current.all_resolved and attention.view.standing().release_due is None, "a human releases a node that needs attention"

    # in the middle of its steps, its run releases it when it ends (a lapsed lock does not make it the sweep's)
    busy = FakeNode("gpu-2")
    opened(busy)
    _quarantined_by_sentinel(busy)
    busy.apply(plan_resolve(busy.view, [ev("fp-1")], at(15)))
    for offset, state in ((20, "draining"), (21, "drained"), (22, "remediating"), (23, "recertifying")):
        advance(busy, state, offset)
        assert (busy.view.standing().release_due is not None) is (state == "drained"), state
    opted = FakeNode("gpu-3")
    opened(opted)
    _quarantined_by_sentinel(opted)
    opted.apply(plan_resolve(opted.view, [ev("fp-1")], at(15)))
    assert opted.view.standing().release_due is not None
    opted.node["metadata"]["labels"]["dsxos.io/sentinel"] = "disabled"
    assert opted.view.standing().release_due is None, "an opted-out node is left alone"


@settings(max_examples=300, deadline=None)
@given(incident=st.one_of(st.from_regex(r"sen-[0-9a-f]{12}", fullmatch=True), st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)),
       tail=st.text(alphabet="abcdef0123456789-: x", max_size=12))
def test_a_reason_names_an_incident_only_as_a_whole_word(incident, tail):
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import (  # pylint: disable=import-outside-toplevel
        incident_reason, reason_incident_id,
    )
    assert reason_incident_id(incident_reason(incident, "reboot")) == incident
    reason = f"sentinel incident {incident}{tail}"
    expected = tail == "" or tail[0] in ": "
    assert (reason_incident_id(reason) == incident) is expected
    assert reason_incident_id(f"RMA: sentinel incident {incident}") is None, "the prefix, not anywhere in the text"


def test_list_reports_the_releases_due_and_leaves_out_a_node_another_run_holds(k8s_emulator):
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import (  # pylint: disable=import-outside-toplevel
        LockRequest, NodeLock)
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (  # pylint: disable=import-outside-toplevel
        ANN_PRIOR, LABEL_STATE)
    emu = k8s_emulator
    unfinished, resolved, held, firing, attention, manual, stalled = emu.add_nodes(7, "h100-eks", name_prefix="gpu-")
    with client_for(emu) as client:
        def quarantine(name, reason):
            client.core.patch_node(name, {"metadata": {"labels": {LABEL_STATE: "quarantined"},
                                                       "annotations": {ANN_PRIOR: json.dumps({"reason": reason, "since": at(0)})}},
                                          "spec": {"unschedulable": True}})
        for index, name in enumerate((unfinished, resolved, held, firing, attention)):
            incident = "sen-00000000001%d" % index
            run(client, action="open", node=name, incident=incident, remediation="reboot", reason=f"sentinel incident {incident}: x",
                events=[ev("fp-1")], state=NEEDS_ATTENTION if name == attention else "quarantined")
            quarantine(name, f"sentinel incident {incident}: reboot (rule r): XID 79")
            if name != firing:
                run(client, action="resolve", node=name, events=[ev("fp-1")])
        run(client, action="close", node=unfinished, incident="sen-000000000010", outcome="released")
        for name, incident in ((stalled, "sen-000000000016"), (held, None)):  # a run died remediating one; another run remediates the other
            if incident:
                run(client, action="open", node=name, incident=incident, remediation="reboot", reason=f"sentinel incident {incident}: x",
                    events=[ev("fp-1")])
                quarantine(name, f"sentinel incident {incident}: reboot (rule r): XID 79")
                run(client, action="resolve", node=name, events=[ev("fp-1")])
        for state in ("draining", "drained", "remediating"):
            run(client, action="advance", node=stalled, incident="sen-000000000016", state=state)
        quarantine(manual, "RMA 1234 by an operator")
        NodeLock(client, LockRequest(node=held, holder="dsxos-sentinel/run-9", namespace="dsxos-system", purpose="sentinel",
                                     reason="sen-000000000012", duration_s=600)).acquire()
        without_locks = run(client, action="list")
        listed = run(client, action="list", lock_namespace="dsxos-system")
    assert without_locks["release_due"] == [{"node": unfinished, "incident": "sen-000000000010", "unfinished": True},
                                            {"node": resolved, "incident": "sen-000000000011", "unfinished": False},
                                            {"node": held, "incident": "sen-000000000012", "unfinished": False}]
    assert listed["release_due"] == without_locks["release_due"][:2], "the node another run holds is that run's to release"
    rows = {r["node"]: r for r in listed["nodes"]}
    assert rows[held]["locked_by"]["holder"] == "dsxos-sentinel/run-9" and rows[held]["locked_by"]["purpose"] == "sentinel"
    assert rows[held]["release_due"] is None and rows[held]["stalled"] is False, "the run holding it releases it"
    assert rows[stalled]["stalled"] is True and rows[stalled]["release_due"] is None and rows[unfinished]["stalled"] is False
    assert f"{stalled} (remediating)" in listed["markdown"]
    assert rows[unfinished]["locked_by"] is None and "locked_by" not in {k for r in without_locks["nodes"] for k in r}
    assert rows[unfinished]["state"] == "release-unfinished" and rows[unfinished]["incident"] == "sen-000000000010"
    assert listed["counts"]["release-unfinished"] == 1 and rows[manual]["state"] is None and rows[manual]["release_due"] is None
    assert rows[attention]["release_due"] is None and rows[firing]["release_due"] is None
    assert "2 release(s) due" in listed["markdown"] and f"{unfinished} (sen-000000000010, quarantine release unfinished)" in listed["markdown"]
    with pytest.raises(K8sInvalidName, match="lock_namespace"):
        validate_options({"action": "list", "lock_namespace": "Not_A_Namespace"})


def test_an_orphan_quarantine_names_an_incident_that_was_never_recorded():
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import reason_incident_id  # pylint: disable=import-outside-toplevel
    assert reason_incident_id("sentinel incident sen-0123456789ab: reboot") == "sen-0123456789ab"
    assert reason_incident_id("sentinel incident sen-0123456789ab") == "sen-0123456789ab"
    assert reason_incident_id("sentinel incident manual-rma-7 returned: x") == "manual-rma-7", "any incident id"
    for other in ("sentinel incident sen-0123456789ab-: x", "RMA sentinel incident sen-0123456789ab", "", None, "sentinel incident sen-XYZ"):
        assert reason_incident_id(other) is None, other
    fake = FakeNode()
    _quarantined_by_sentinel(fake, "sen-0123456789ab")
    assert fake.view.standing().orphan_incident == "sen-0123456789ab" and fake.view.standing().release_due is None, "never swept"
    assert NodeIncidents.from_state("gpu-0", fake.view.to_state()).standing().orphan_incident == "sen-0123456789ab"
    opened(fake, incident="sen-0123456789ab")
    assert fake.view.standing().orphan_incident is None, "recorded now (the alert's next delivery resumed it)"
    fake.apply(plan_close(fake.view, "sen-0123456789ab", "released", "", at(30)))
    assert fake.view.standing().orphan_incident is None and fake.view.standing().unfinished_release == "sen-0123456789ab"
