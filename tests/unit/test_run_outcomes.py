# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The outcome rows of the nodes a batch settled (operate/run_outcomes.py, the role's sentinel_*_outcomes filters)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.dsxos.cluster.plugins.filter.sentinel_outcomes import (
    FilterModule, sentinel_entry_outcomes, sentinel_intake_outcomes, sentinel_waiting_message, sentinel_waiting_outcomes,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.run_outcomes import (
    REPORTED_KINDS, OutcomeError, entry_outcomes, intake_outcomes, waiting_message, waiting_outcomes,
)
from ansible.errors import AnsibleFilterError

KEYS = ["node", "kind", "action", "incident", "status", "state", "message", "held_back"]


def decision(node, kind="open", action="quarantine", incident="sen-1", state=None, **extra):
    out = {"node": node, "kind": kind, "action": action, "incident": incident, "state": state, "held_back": [], "dry_run": False,
           "join_events": []}
    out.update(extra)
    return out


def test_intake_reports_quarantined_joined_pending_and_dry_runs_and_leaves_out_held_back_and_records():
    decisions = [decision("a"), decision("b", "join", incident="sen-b", state="remediating", join_events=[{"fingerprint": "f"}]),
                 decision("c", "resume", "reboot", "sen-c", "draining"), decision("d", dry_run=True), decision("e"),
                 decision("f", "record"), decision("g", "resume", "reboot", "sen-g", "quarantined", join_events=[{"fingerprint": "x"}])]
    batch = [{"node": "a", "status": "quarantined", "detail": "incident sen-1 opened", "current": {"id": "sen-1", "state": "quarantined"}},
             {"node": "e", "status": "held_back", "detail": "breaker", "current": None}]
    rows = intake_outcomes(decisions, batch, [{"node": "e", "incident": "sen-1", "reason": "circuit breaker: open"}])
    assert [list(r) for r in rows] == [KEYS] * 5
    assert [(r["node"], r["status"], r["state"]) for r in rows] == [
        ("a", "quarantined", "quarantined"), ("b", "joined", "remediating"), ("c", "pending", "draining"), ("d", "dry_run", None),
        ("g", "joined", "quarantined")]
    assert rows[0]["message"] == "incident sen-1 opened"
    assert rows[1]["message"] == "alerts joined to incident sen-b"
    assert rows[4]["message"] == "alerts joined to incident sen-g; the rest is left to the second run"
    assert rows[2]["message"] == "resume reboot left to the second run"
    assert [r["status"] for r in intake_outcomes(decisions[:2], batch, [], check_mode=True)] == ["check_mode", "check_mode"]
    # the incident of b ended before the intake's join was written: b is left to the second run, which decides again
    joins = [{"node": "b", "incident": "sen-b", "changed": False, "ended": True}, {"node": "a", "incident": "sen-1", "changed": False, "ended": False}]
    ended = intake_outcomes(decisions[:2], batch, [], joined=joins)
    assert [(r["node"], r["status"]) for r in ended] == [("a", "quarantined"), ("b", "pending")]
    assert ended[1]["message"] == "incident sen-b ended before the new alerts joined it; the second run decides again"


def test_entry_and_waiting_rows_match_what_the_per_node_steps_report():
    decisions = [decision("a", held_back=["fp-9"]), decision("b", "resume", "quarantine_drain", "sen-b", "quarantined"),
                 decision("c", "resume", "quarantine_drain", "sen-c", "drained"), decision("d", "open", "quarantine_drain", "sen-d")]
    held = entry_outcomes([{"node": "a", "incident": "sen-1", "reason": "circuit breaker: open"}], decisions, "skipped")
    assert held == [{"node": "a", "kind": "open", "action": "quarantine", "incident": "sen-1", "status": "skipped", "state": None,
                     "message": "circuit breaker: open", "held_back": ["fp-9"]}]
    failed = entry_outcomes([{"node": "d", "incident": "sen-d", "reason": "drain timed out"}], decisions, "failed", "batch drain: ",
                            {"d": "draining"})
    assert (failed[0]["status"], failed[0]["state"], failed[0]["message"]) == ("failed", "draining", "batch drain: drain timed out")
    waiting = waiting_outcomes(decisions, drained=["d"])
    assert [(r["node"], r["status"], r["state"]) for r in waiting] == [
        ("a", "quarantined", "quarantined"), ("b", "quarantined", "quarantined"), ("c", "drained", "drained"), ("d", "drained", "drained")]
    assert waiting[0]["message"] == "incident sen-1 quarantined, waiting for a release (held back: fp-9)"
    assert waiting[3]["message"] == waiting_message("sen-d", "drained") == "incident sen-d drained, waiting for a release"


def test_bad_input_is_named():
    with pytest.raises(OutcomeError, match="names no decided node"):
        entry_outcomes([{"node": "zz", "reason": "x"}], [decision("a")], "skipped")
    with pytest.raises(OutcomeError, match=r"decisions\[1\]"):
        waiting_outcomes([decision("a"), "not a decision"])
    with pytest.raises(AnsibleFilterError, match="dsxos.cluster.sentinel_entry_outcomes: entry 0 names no decided node"):
        sentinel_entry_outcomes([{"node": "zz"}], [decision("a")], "skipped")
    with pytest.raises(AnsibleFilterError, match="sentinel_waiting_outcomes"):
        sentinel_waiting_outcomes([{"kind": "open"}])
    with pytest.raises(AnsibleFilterError, match="sentinel_intake_outcomes"):
        sentinel_intake_outcomes([3])


def test_the_filters_are_registered_and_adapt_missing_lists():
    assert sorted(FilterModule().filters()) == ["sentinel_entry_outcomes", "sentinel_intake_outcomes", "sentinel_waiting_message",
                                                "sentinel_waiting_outcomes"]
    # one wording for a single node (steps.yml) and for the batch rows
    row = sentinel_waiting_outcomes([{"node": "a", "kind": "resume", "incident": "sen-a", "state": "drained", "held_back": ["fp-9"]}])[0]
    assert sentinel_waiting_message("sen-a", "drained", ["fp-9"]) == row["message"] == "incident sen-a drained, waiting for a release (held back: fp-9)"
    assert sentinel_waiting_message("sen-a", "quarantined", None) == "incident sen-a quarantined, waiting for a release"
    assert sentinel_intake_outcomes([], None, None) == [] and sentinel_waiting_outcomes(None) == []
    assert sentinel_entry_outcomes(None, [], "skipped") == []


_DECISION = st.builds(decision, st.sampled_from(["n%d" % i for i in range(12)]), st.sampled_from(list(REPORTED_KINDS) + ["record", "skip"]),
                      state=st.sampled_from([None, "quarantined", "draining", "drained"]), dry_run=st.booleans(),
                      join_events=st.lists(st.just({"fingerprint": "f"}), max_size=1))


@settings(max_examples=200, deadline=None)
@given(st.lists(_DECISION, max_size=12, unique_by=lambda d: d["node"]), st.sets(st.sampled_from(["n%d" % i for i in range(12)])),
       st.sets(st.sampled_from(["n%d" % i for i in range(12)])), st.booleans())
def test_one_row_per_reported_node_never_one_for_a_held_back_or_unreported_node(decisions, quarantined, held, check_mode):
    batch = [{"node": n, "status": "quarantined", "detail": "opened", "current": {"state": "quarantined"}} for n in sorted(quarantined)]
    rows = intake_outcomes(decisions, batch, [{"node": n} for n in sorted(held)], check_mode)
    expected = [d["node"] for d in decisions if d["kind"] in REPORTED_KINDS and d["node"] not in held]
    assert [r["node"] for r in rows] == expected
    for row in rows:
        source = next(d for d in decisions if d["node"] == row["node"])
        assert (row["kind"], row["action"], row["incident"]) == (source["kind"], source["action"], source["incident"])
        if check_mode or source["dry_run"]:
            assert row["status"] in ("check_mode", "dry_run")
        elif row["node"] in quarantined:
            assert row["status"] == "quarantined" and row["state"] == "quarantined"
        else:
            assert row["status"] == ("joined" if source["join_events"] else "pending")
    waiting = waiting_outcomes(decisions, sorted(quarantined))
    assert [r["node"] for r in waiting] == [d["node"] for d in decisions]
    assert all(r["status"] == r["state"] and r["message"].startswith("incident ") for r in waiting)
