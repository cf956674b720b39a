# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""operate/sentinel_policy.py: rules by priority, safety rules (opt-out, application class, unknown class, attempt cap,
destructive), event validation, batches; hypothesis streams through the pure incident functions."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_classes import FAULT_CLASSES
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_changes import (
    AdvanceRequest, OpenRequest, plan_advance, plan_close, plan_open, plan_record,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import format_time, parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import (
    ACTIONS, PolicyOptions, SentinelPolicyError, plan, validate_event, validate_rules,
)

T0 = parse_rfc3339("2026-03-01T10:00:00Z")


def at(offset_s):
    return format_time(T0 + offset_s)


def ev(node="gpu-0", fingerprint="fp-1", fault_class="fallen-off-bus", offset_s=0, status="firing", **kw):
    out = {"node": node, "gpu": "3", "uuid": "GPU-1", "code": 79, "fault_class": fault_class, "action": "", "status": status,
           "fingerprint": fingerprint, "starts_at": at(offset_s), "ends_at": None, "pods": [{"namespace": "ml", "name": "train-0"}],
           "alertname": "GpuXidFatal", "severity": "critical", "labels": {"cluster": "a"}}
    out.update(kw)
    return out


def decide(events, rules=None, state=None, **options):
    opts = {"destructive": True, "now": T0 + 3600}
    opts.update(options)
    return plan(events, rules, state or {}, PolicyOptions(**opts))


def by_node(result):
    return {d["node"]: d for d in result["decisions"]}


def test_default_rules_open_an_incident_with_a_deterministic_id_and_steps():
    result = decide([ev(), ev("gpu-1", "fp-2", "memory"), ev("gpu-2", "fp-3", "nvlink")])
    nodes = by_node(result)
    assert (nodes["gpu-0"]["kind"], nodes["gpu-0"]["action"], nodes["gpu-0"]["rule"]) == ("open", "reboot", "fallen-off-bus")
    assert nodes["gpu-0"]["incident"] == decide([ev()])["decisions"][0]["incident"] and nodes["gpu-0"]["incident"].startswith("sen-")
    assert nodes["gpu-0"]["incident"] in nodes["gpu-0"]["reason"] and nodes["gpu-0"]["gpus"] == [3]
    assert nodes["gpu-0"]["steps"] == {"quarantine": True, "drain": "full", "remediate": True, "recertify": True}
    assert nodes["gpu-1"]["action"] == "reset_gpu" and nodes["gpu-1"]["steps"]["drain"] == "partial"
    assert nodes["gpu-2"]["steps"] == {"quarantine": True, "drain": "full", "remediate": False, "recertify": False}
    assert result["batches"] == {"reboot": ["gpu-0"], "reset_gpu": ["gpu-1"], "quarantine_drain": ["gpu-2"]}


def test_a_partial_drain_keeps_to_the_mapped_pods_only_when_every_faulty_gpu_names_its_pods():
    train = {"namespace": "ml", "name": "train-0"}
    infer = {"namespace": "serve", "name": "infer-0"}

    def drain_pods(*events):
        (decision,) = decide(list(events))["decisions"]
        assert decision["steps"]["drain"] == "partial"
        return decision["drain_pods"], decision["pods"]

    assert drain_pods(ev(fault_class="memory")) == ([train], [train])
    # two GPUs, each with its pod named
    assert drain_pods(ev(fault_class="memory"), ev(fingerprint="fp-2", fault_class="memory", gpu="5", pods=[infer]))[0] == [train, infer]
    # GPU 5's alert names no pod (mapping off, an aggregating rule): every GPU pod goes, the pods stay listed for the reset
    assert drain_pods(ev(fault_class="memory"), ev(fingerprint="fp-2", fault_class="memory", gpu="5", pods=[])) == ([], [train])
    # a second alert for GPU 3 without the pod label: GPU 3 is still mapped by the first
    assert drain_pods(ev(fault_class="memory"), ev(fingerprint="fp-2", fault_class="memory", pods=[]))[0] == [train]
    # an alert without a GPU: the whole node's GPU pods
    assert drain_pods(ev(fault_class="memory"), ev(fingerprint="fp-2", fault_class="memory", gpu=None, pods=[]))[0] == []
    assert drain_pods(ev(fault_class="memory", pods=[]))[0] == []


def test_first_match_by_priority_and_labels_codes_severity():
    rules = [{"name": "broad", "match": {}, "action": "quarantine", "priority": 50},
             {"name": "xid79-prod", "match": {"code": [79], "labels": {"cluster": "a"}, "severity": ["critical"]}, "action": "reboot",
              "priority": 10},
             {"name": "never", "match": {"alertname": ["Other"]}, "action": "replace", "priority": 1}]
    assert decide([ev()], rules)["decisions"][0]["rule"] == "xid79-prod"
    assert decide([ev(labels={"cluster": "b"})], rules)["decisions"][0]["rule"] == "broad"
    assert [r["name"] for r in decide([], rules)["rules"]] == ["never", "xid79-prod", "broad"]


def test_non_destructive_keeps_only_the_quarantine():
    decision = decide([ev()], destructive=False)["decisions"][0]
    assert decision["steps"] == {"quarantine": True, "drain": "none", "remediate": False, "recertify": False}
    assert decision["held_back"] == ["drain (full)", "remediation reboot", "recertification"]


def test_opt_out_label_records_only():
    state = {"gpu-0": {"labels": {"dsxos.io/sentinel": "disabled"}}}
    result = decide([ev()], state=state)
    assert result["decisions"][0]["kind"] == "record" and not result["acting"] and result["records"][0]["node"] == "gpu-0"


def test_unknown_class_records_even_when_a_rule_matches_it():
    rules = [{"name": "all", "match": {"fault_class": ["unknown"]}, "action": "reboot"}]
    for fault_class in ("unknown", "cosmic-ray", None):
        result = decide([ev(fault_class=fault_class)], rules)
        assert result["decisions"][0]["kind"] == "record" and not result["acting"]


def test_application_alerts_act_only_through_a_rate_rule():
    rules = [{"name": "app", "match": {"fault_class": ["application"]}, "action": "reboot", "priority": 1},
             {"name": "storm", "match": {"fault_class": ["application"]}, "action": "quarantine", "rate": {"count": 3, "window_s": 60}}]
    two = [ev(fingerprint=f"a{i}", fault_class="application", offset_s=i) for i in range(2)]
    assert not decide(two, rules)["acting"]
    # a third one, recorded on the node earlier, within the window
    state = {"gpu-0": {"recent": [{"fingerprint": "a-old", "fault_class": "application", "starts_at": at(-30)}]}}
    storm = decide(two, rules, state)["decisions"][0]
    assert (storm["kind"], storm["action"], storm["rule"]) == ("open", "quarantine", "storm")
    # outside the window it does not count
    state = {"gpu-0": {"recent": [{"fingerprint": "a-old", "fault_class": "application", "starts_at": at(-300)}]}}
    assert not decide(two, rules, state)["acting"]


def test_attempt_cap_gives_needs_attention():
    attempts = [{"time": at(3000 + i), "incident": "sen-x", "action": "reboot"} for i in range(3)]
    decision = decide([ev()], state={"gpu-0": {"attempts": attempts}})["decisions"][0]
    assert decision["kind"] == "needs_attention" and decision["state"] == "needs-attention" and "needs attention" in decision["reason"]
    assert decision["steps"]["remediate"] is False
    old = [{"time": at(-90000), "incident": "sen-x", "action": "reboot"}] * 3
    assert decide([ev()], state={"gpu-0": {"attempts": old}})["decisions"][0]["kind"] == "open"


def test_open_incident_resume_join_and_stale():
    incident = {"id": "sen-aaaaaaaaaaaa", "node": "gpu-0", "state": "remediating", "action": "reboot", "opened_at": at(100),
                "updated_at": at(100), "events": [{"fingerprint": "fp-1", "starts_at": at(0)}]}
    state = {"gpu-0": {"incident": incident}}
    result = decide([ev(), ev(fingerprint="fp-new", offset_s=200), ev(fingerprint="fp-old", offset_s=-50)], state=state)
    decision = result["decisions"][0]
    assert (decision["kind"], decision["incident"], decision["action"]) == ("resume", "sen-aaaaaaaaaaaa", "reboot")
    assert [e["fingerprint"] for e in decision["join_events"]] == ["fp-new"]
    assert [(s["fingerprint"], s["verdict"]) for s in result["skipped"]] == [("fp-old", "stale")]
    join = decide([ev(fingerprint="fp-new", offset_s=200)], state=state)["decisions"][0]
    assert join["kind"] == "join" and not join["acts"]


def test_replay_after_release_never_acts_and_resolved_only_releases_its_incident():
    history = [{"id": "sen-bbbbbbbbbbbb", "outcome": "released", "opened_at": at(10), "ended_at": at(500),
                "events": [{"fingerprint": "fp-1", "starts_at": at(0)}]}]
    result = decide([ev(), ev(fingerprint="fp-1", status="resolved")], state={"gpu-0": {"history": history}})
    assert not result["decisions"] and not result["releases"]
    assert sorted(s["verdict"] for s in result["skipped"]) == ["ended", "replay"]
    fresh = decide([ev(offset_s=600)], state={"gpu-0": {"history": history}})
    assert fresh["decisions"][0]["kind"] == "open", "the same alert firing again after the release opens a new incident"


def test_an_unreadable_node_state_skips_only_that_node():
    state = {"gpu-0": {"exists": True, "unreadable": True, "error": "node gpu-0: annotation dsxos.io/incident is not JSON", "incident": None},
             "gpu-1": {"exists": True, "incident": None}}
    result = decide([ev(), ev("gpu-1", "fp-2")], state=state)
    assert [d["node"] for d in result["decisions"]] == ["gpu-1"]
    assert [(s["node"], s["verdict"]) for s in result["skipped"]] == [("gpu-0", "unreadable")]
    assert "not JSON" in result["skipped"][0]["reason"]


def test_delayed_run_lets_a_later_alert_join_the_open_incident():
    incident = {"id": "sen-aaaaaaaaaaaa", "node": "gpu-0", "state": "quarantined", "action": "reboot", "opened_at": at(1200),
                "updated_at": at(1200), "events": [{"fingerprint": "fp-1", "starts_at": at(0)}]}
    result = decide([ev(fingerprint="fp-2", offset_s=300)], state={"gpu-0": {"incident": incident}})
    assert result["decisions"][0]["kind"] == "join" and not result["skipped"]


def test_malformed_events_are_rejected_one_by_one():
    bad = [ev(node="gpu-0\n"), ev(node="GPU_0"), ev(node="a;rm -rf /"), "not a dict", ev(fingerprint="x y"), ev(status="pending"),
           ev(gpu="GPU-3"), ev(code="79"), ev(starts_at="2026-03-01T10:00:00Z\n"), ev(pods=[{"namespace": "ml", "name": "p\n"}]),
           ev(labels={"k": "v\x00"}), ev(fault_class="Fatal Hardware")]
    result = decide(bad + [ev(node="gpu-9")])
    assert [r["index"] for r in result["rejected"]] == list(range(len(bad)))
    assert "RFC 1123" in result["rejected"][0]["reason"] and result["rejected"][3]["event"] == {"type": "str"}
    assert [d["node"] for d in result["decisions"]] == ["gpu-9"]
    assert result["nodes"] == ["gpu-9"]


def test_bad_rules_fail_naming_rule_and_field():
    cases = [([{"name": "x", "action": "explode"}], "rules\\[0\\].action"),
             ([{"name": "x", "action": "reboot", "match": {"fault_class": ["fatal_hardware"]}}], "unknown fault class"),
             ([{"name": "x", "action": "reboot", "mtach": {}}], "unknown key"),
             ([{"name": "x", "action": "reboot"}, {"name": "x", "action": "record"}], "unique"),
             ([{"name": "x", "action": "reboot", "rate": {"count": 0, "window_s": 5}}], "rate")]
    for rules, needle in cases:
        with pytest.raises(SentinelPolicyError, match=needle):
            validate_rules(rules)


def test_rule_dry_run_and_run_dry_run_do_not_act():
    rules = [{"name": "x", "match": {}, "action": "reboot", "dry_run": True}]
    assert decide([ev()], rules)["decisions"][0]["dry_run"] and not decide([ev()], rules)["acting"]
    assert not decide([ev()], dry_run=True)["acting"]


def test_manual_run_through_the_entry_point():
    params = {k: v.get("default") for k, v in entry.SENTINEL_PLAN.spec.items()}
    params.update(manual_nodes=["gpu-5"], manual_reason="suspect NVLink", manual_action="quarantine_drain", now=at(0), destructive=True)
    result = call_entry(entry.SENTINEL_PLAN, params)
    decision = result["decisions"][0]
    assert (decision["kind"], decision["action"], decision["rule"]) == ("open", "quarantine_drain", "manual") and not result["changed"]
    params.update(rules=[{"name": "bad", "action": "nope"}])
    failed = call_entry(entry.SENTINEL_PLAN, params)
    assert failed["failed"] and "rules[0].action" in failed["msg"]


def test_validate_event_normalizes():
    event = validate_event(ev(gpu=5, starts_at="2026-03-01T10:00:00.123456789Z"))
    assert event.gpu == 5 and event.to_dict()["gpu"] == "5"


# ---------------------------------------------------------------------------------------------------- properties

NODES = ["gpu-0", "gpu-1", "gpu-2"]
event_strategy = st.builds(
    lambda node, index, fault_class, offset, status: ev(node, f"fp-{index}", fault_class, offset, status),
    st.sampled_from(NODES), st.integers(0, 30), st.sampled_from(FAULT_CLASSES + ("cosmic-ray",)), st.integers(0, 5000),
    st.sampled_from(["firing", "firing", "firing", "resolved"]))
rule_strategy = st.builds(
    lambda classes, action, priority: {"match": {"fault_class": classes}, "action": action, "priority": priority},
    st.lists(st.sampled_from(FAULT_CLASSES), min_size=1, max_size=4, unique=True), st.sampled_from(ACTIONS), st.integers(0, 100))


def ruleset(raw):
    return [dict(r, name=f"r{i}") for i, r in enumerate(raw)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(event_strategy, max_size=25), st.lists(rule_strategy, min_size=1, max_size=6), st.sets(st.sampled_from(NODES)))
def test_property_never_acts_on_application_only_or_opted_out_nodes(events, raw_rules, opted_out):
    state = {n: {"labels": {"dsxos.io/sentinel": "disabled"}} for n in opted_out}
    result = decide(events, ruleset(raw_rules), state)
    for decision in result["acting"]:
        assert decision["node"] not in opted_out
        classes = {e["fault_class"] for e in decision["events"]}
        assert classes - {"application", "unknown", "cosmic-ray"}, f"acted on application/unknown alerts only: {decision}"
    for decision in result["decisions"]:
        if decision["node"] in opted_out:
            assert decision["kind"] == "record"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(event_strategy, min_size=1, max_size=6), min_size=1, max_size=12), st.integers(0, 3),
       st.lists(st.booleans(), min_size=12, max_size=12))
def test_property_random_streams_never_exceed_the_attempt_cap(batches, cap, outcomes):
    """Batches of alerts over time, each run applied through the pure incident functions the role uses: every open or
    resumed incident tries a remediation (advance remediating with attempt), then is returned or left open. The number
    of attempts recorded within any window never exceeds the cap, and an incident never acts on stale/replayed alerts."""
    window = 3000.0
    nodes = {n: {"metadata": {"name": n, "resourceVersion": "1", "labels": {}, "annotations": {}}, "spec": {}} for n in NODES}

    def apply(name, change):
        meta = nodes[name]["metadata"]
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

    rules = ruleset([{"match": {"fault_class": [c for c in FAULT_CLASSES if c not in ("application", "unknown")]}, "action": "reboot"}])
    for step, batch in enumerate(batches):
        now_s = T0 + 400 * step
        now = format_time(now_s)
        batch = [dict(e, starts_at=format_time(min(parse_rfc3339(e["starts_at"]), now_s))) for e in batch]
        state = {n: NodeIncidents.from_node(nodes[n]).to_state() for n in NODES}
        result = plan(batch, rules, state, PolicyOptions(destructive=True, attempt_cap=cap, attempt_window_s=window, now=now_s))
        for decision in result["decisions"]:
            name = decision["node"]
            if decision["kind"] == "record":
                apply(name, plan_record(NodeIncidents.from_node(nodes[name]), decision["record_events"], now))
                continue
            if decision["kind"] not in ("open", "resume", "needs_attention"):
                continue
            if decision["kind"] != "resume":
                change = plan_open(NodeIncidents.from_node(nodes[name]), OpenRequest(
                    incident=decision["incident"], action=decision["action"], reason=decision["reason"], events=tuple(decision["events"]),
                    state=decision["state"] or "quarantined"), now)
                apply(name, change)
                if not change.result.get("opened"):
                    continue
            view = NodeIncidents.from_node(nodes[name])
            if view.current is None or view.current.state == "needs-attention":
                continue
            change = plan_advance(view, AdvanceRequest(incident=view.current.id, state="remediating", attempt=True, attempt_cap=cap,
                                                       attempt_window_s=window), now, now_s)
            apply(name, change)
            after = NodeIncidents.from_node(nodes[name])
            assert after.attempts_within(now_s, window) <= cap
            if not change.result["capped"] and outcomes[step % len(outcomes)]:
                apply(name, plan_advance(after, AdvanceRequest(incident=view.current.id, state="recertifying"), now, now_s))
                apply(name, plan_close(NodeIncidents.from_node(nodes[name]), view.current.id, "returned", "", now))
        for name in NODES:
            view = NodeIncidents.from_node(nodes[name])
            for offset in range(0, int(window), 400):
                assert view.attempts_within(now_s - offset, window) <= cap


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.builds(lambda node, index, fault_class, offset: ev(node, f"fp-{index}", fault_class, offset),
                          st.sampled_from(NODES), st.integers(0, 30), st.sampled_from(["application", "unknown", "cosmic-ray"]),
                          st.integers(0, 5000)), min_size=1, max_size=25),
       st.lists(rule_strategy, min_size=1, max_size=6))
def test_property_application_and_unknown_streams_never_act_without_a_rate_rule(events, raw_rules):
    rules = ruleset(raw_rules) + [{"name": "catch-all", "match": {}, "action": "reboot", "priority": 1000}]
    result = decide(events, rules)
    assert not result["acting"] and not result["batches"]
    assert {d["kind"] for d in result["decisions"]} <= {"record"}
