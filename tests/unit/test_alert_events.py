# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Alertmanager webhook payloads to normalized events: validation, normalization, dedup, batching (pure logic)."""
from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_classes import FAULT_CLASSES, HARDWARE_CLASSES
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.alert_events import (
    EVENT_KEYS, REJECT_REASONS, AlertPayloadError, Batcher, Deduplicator, PayloadLimits, Rejection, check_node_name,
    normalize_payload, split_results, validate_payload,
)

ZERO = "0001-01-01T00:00:00Z"


def alert(node="gpu-node-01", status="firing", fingerprint="a1b2c3d4e5f60718", **labels):
    base = {"alertname": "GpuXidFatal", "severity": "critical", "gpu": "3", "UUID": "GPU-5fa1c2d3-0000-1111-2222-333344445555",
            "code": "79", "fault_class": "fallen-off-bus", "action": "quarantine"}
    if node is not None:
        base["node"] = node
    base.update(labels)
    base = {key: value for key, value in base.items() if value is not None}
    return {"status": status, "labels": base, "annotations": {"summary": "GPU fell off the bus"},
            "startsAt": "2026-03-01T10:00:00.123456789Z", "endsAt": ZERO if status == "firing" else "2026-03-01T10:05:00Z",
            "generatorURL": "http://prometheus:9090/graph?g0.expr=x", "fingerprint": fingerprint}


def payload(*alerts, status="firing"):
    return {"version": "4", "groupKey": "{}:{node=\"gpu-node-01\"}", "truncatedAlerts": 0, "status": status,
            "receiver": "eda", "groupLabels": {"node": "gpu-node-01"}, "commonLabels": {}, "commonAnnotations": {},
            "externalURL": "http://alertmanager:9093", "alerts": list(alerts)}


def test_a_real_alertmanager_payload_becomes_one_event_per_alert_with_the_contract_keys():
    results = normalize_payload(payload(alert(), alert(node="gpu-node-02", fingerprint="ff00", gpu="0", code="48",
                                                       fault_class="fatal-hardware", pod="train-0", namespace="ml")))
    assert [tuple(event) for event in results] == [EVENT_KEYS, EVENT_KEYS]
    first, second = results
    assert first == {
        "node": "gpu-node-01", "gpu": "3", "uuid": "GPU-5fa1c2d3-0000-1111-2222-333344445555", "code": 79,
        "fault_class": "fallen-off-bus", "action": "quarantine", "status": "firing", "fingerprint": "a1b2c3d4e5f60718",
        "starts_at": "2026-03-01T10:00:00.123456789Z", "ends_at": None, "pods": [], "alertname": "GpuXidFatal",
        "severity": "critical", "labels": alert()["labels"], "dropped_labels": [],
    }
    assert second["pods"] == [{"namespace": "ml", "name": "train-0"}]
    assert second["code"] == 48 and second["fault_class"] == "fatal-hardware"


def test_resolved_alert_keeps_its_end_time_and_optional_labels_become_none():
    resolved = alert(status="resolved", gpu=None, UUID=None, code=None, action=None, fault_class=None, severity=None)
    (event,) = normalize_payload(payload(resolved, status="resolved"))
    assert event["status"] == "resolved" and event["ends_at"] == "2026-03-01T10:05:00Z"
    assert (event["gpu"], event["uuid"], event["code"], event["action"], event["severity"]) == (None, None, None, "", "")
    assert event["fault_class"] == "unknown"


def test_resolved_alert_with_zero_end_time_gets_none():
    resolved = alert(status="resolved")
    resolved["endsAt"] = ZERO
    assert normalize_payload(payload(resolved))[0]["ends_at"] is None


@pytest.mark.parametrize("labels,node", [
    ({"node": None, "Hostname": "dgx-b200-07"}, "dgx-b200-07"),
    ({"node": None, "instance": "dgx-b200-07.cluster.local:9400"}, "dgx-b200-07.cluster.local"),
    ({"node": None, "instance": "10.0.0.7:9400"}, "10.0.0.7"),
    ({"node": "n1", "Hostname": "other"}, "n1"),
    ({"node": None, "uuid": "MIG-GPU-5fa1/1/0", "UUID": None, "Hostname": "h"}, "h"),
])
def test_node_fallbacks(labels, node):
    assert normalize_payload(payload(alert(**labels)))[0]["node"] == node


@pytest.mark.parametrize("code,expected", [("48", 48), ("DCGM_FR_DBE_VIOLATION", 103), ("DCGM_FR_NOT_IN_THE_CATALOG", None)])
def test_code_label_digits_or_dcgm_error_name(code, expected):
    (event,) = normalize_payload(payload(alert(code=code)))
    assert event["code"] == expected and event["labels"]["code"] == code


def test_unknown_fault_class_is_recorded_as_unknown_and_the_original_kept_in_labels():
    (event,) = normalize_payload(payload(alert(fault_class="cosmic-ray")))
    assert event["fault_class"] == "unknown" and event["labels"]["fault_class"] == "cosmic-ray"
    assert "unknown" in FAULT_CLASSES


@pytest.mark.parametrize("labels,reason,needle", [
    ({"node": "gpu-node-01\n"}, "invalid_node", "'gpu-node-01\\n'"),
    ({"node": "GPU-NODE"}, "invalid_node", "label node"),
    ({"node": "a;rm -rf /"}, "invalid_node", "rm -rf"),
    ({"node": "x" * 300}, "invalid_node", "chars)"),
    ({"node": None}, "missing_node", "node, Hostname, instance"),
    ({"node": None, "Hostname": "$(reboot)"}, "invalid_node", "label Hostname"),
    ({"node": None, "instance": "bad host:9100"}, "invalid_node", "label instance"),
    ({"gpu": "0; reboot"}, "invalid_label", "label gpu"),
    ({"UUID": "not-a-uuid"}, "invalid_label", "label UUID"),
    ({"code": "XID79"}, "invalid_label", "label code"),
    ({"code": "dcgm_fr_x; reboot"}, "invalid_label", "label code"),
    ({"action": "drain; reboot"}, "invalid_label", "label action"),
    ({"pod": "train-0"}, "invalid_label", "without a namespace"),
    ({"pod": "Train_0", "namespace": "ml"}, "invalid_label", "pod/namespace"),
    ({"pod": "train-0\n", "namespace": "ml"}, "invalid_label", "pod/namespace"),
])
def test_unsafe_labels_are_rejected_with_a_reason_and_never_passed_on(labels, reason, needle):
    results = normalize_payload(payload(alert(node="ok-node"), alert(fingerprint="bad1", **labels)))
    events, rejections = split_results(results)
    assert [event["node"] for event in events] == ["ok-node"]
    (rejection,) = rejections
    assert isinstance(rejection, Rejection)
    assert rejection.reason == reason and reason in REJECT_REASONS
    assert needle in rejection.message
    assert rejection.fingerprint == "bad1" and rejection.index == 1 and rejection.status == "firing"
    assert len(rejection.message) < 400
    assert json.dumps(rejection.to_dict())


def test_check_node_name_refuses_a_trailing_newline():
    assert check_node_name("node-1") == "node-1"
    for bad in ("node-1\n", "node-1\r\n", "node-1 ", "\nnode-1", ""):
        with pytest.raises(K8sInvalidName):
            check_node_name(bad)


@pytest.mark.parametrize("mutate,path", [
    (lambda p: p.pop("version"), "version: is required"),
    (lambda p: p.update(version=4), "version: must be '4'"),
    (lambda p: p.update(version="3"), "version: must be '4'"),
    (lambda p: p.update(status="pending"), "status: must be 'firing' or 'resolved'"),
    (lambda p: p.pop("receiver"), "receiver: is required"),
    (lambda p: p.update(receiver=7), "receiver: must be a string, got int"),
    (lambda p: p.update(alerts={}), "alerts: must be a list, got dict"),
    (lambda p: p.pop("alerts"), "alerts: is required"),
    (lambda p: p.update(groupLabels=[]), "groupLabels: must be an object"),
    (lambda p: p.update(commonLabels={"a": 1}), "commonLabels.a: must be a string, got int"),
    (lambda p: p.update(truncatedAlerts=-1), "truncatedAlerts: must be a non-negative integer"),
    (lambda p: p.update(truncatedAlerts=True), "truncatedAlerts: must be a non-negative integer"),
    (lambda p: p.update(externalURL=None), "externalURL: must be a string, got null"),
    (lambda p: p["alerts"].append("x"), "alerts[1]: must be an object, got str"),
    (lambda p: p["alerts"][0].pop("status"), "alerts[0].status: is required"),
    (lambda p: p["alerts"][0].update(status="FIRING"), "alerts[0].status: must be 'firing' or 'resolved'"),
    (lambda p: p["alerts"][0].pop("labels"), "alerts[0].labels: is required"),
    (lambda p: p["alerts"][0]["labels"].update(node=None), "alerts[0].labels.node: must be a string, got null"),
    (lambda p: p["alerts"][0].update(startsAt="yesterday"), "alerts[0].startsAt: is not an RFC 3339 time"),
    (lambda p: p["alerts"][0].update(endsAt=0), "alerts[0].endsAt: must be an RFC 3339 time string, got int"),
    (lambda p: p["alerts"][0].update(startsAt="2026-03-01T10:00:00Z\n"), "alerts[0].startsAt: is not an RFC 3339 time"),
    (lambda p: p["alerts"][0].pop("fingerprint"), "alerts[0].fingerprint: is required"),
    (lambda p: p["alerts"][0].update(fingerprint="a b"), "alerts[0].fingerprint: must be 1-128 characters"),
    (lambda p: p["alerts"][0].update(annotations="x"), "alerts[0].annotations: must be an object"),
    (lambda p: p["alerts"][0]["labels"].update({"x" * 300: "v"}), "alerts[0].labels: has an empty, non-string or too long key"),
    (lambda p: p["alerts"][0]["labels"].update(big="v" * 5000), "alerts[0].labels.big: is 5000 characters long"),
])
def test_schema_errors_name_the_field(mutate, path):
    data = payload(alert())
    mutate(data)
    with pytest.raises(AlertPayloadError) as info:
        normalize_payload(data)
    assert any(item.startswith(path) for item in info.value.errors), info.value.errors
    assert path.split(":")[0] in str(info.value)
    assert isinstance(info.value, InputError)


@pytest.mark.parametrize("data", [None, [], "x", 4, [payload(alert())]])
def test_non_object_payload(data):
    with pytest.raises(AlertPayloadError, match=r"\(payload\): must be a JSON object"):
        validate_payload(data)


def test_every_problem_is_listed_and_limits_apply():
    data = payload(alert(), alert())
    data["alerts"][0].pop("startsAt")
    data["alerts"][1]["status"] = "x"
    data["version"] = "5"
    with pytest.raises(AlertPayloadError) as info:
        validate_payload(data)
    assert [item.split(":")[0] for item in info.value.errors] == ["version", "alerts[0].startsAt", "alerts[1].status"]
    with pytest.raises(AlertPayloadError, match="holds 3 alerts; at most 2"):
        validate_payload(payload(alert(), alert(), alert()), PayloadLimits(max_alerts=2))
    with pytest.raises(AlertPayloadError, match="labels: has 8 entries; at most 3"):
        validate_payload(payload(alert()), PayloadLimits(max_labels=3))
    with pytest.raises(InputError, match="max_alerts must be a positive integer"):
        PayloadLimits(max_alerts=0).validate()


def test_optional_payload_fields_may_be_absent_and_empty_alerts_yield_nothing():
    data = payload()
    for key in ("truncatedAlerts", "externalURL", "groupKey", "commonAnnotations"):
        data.pop(key)
    assert normalize_payload(data) == []


def test_input_is_not_modified():
    data = payload(alert(), alert(node="BAD"))
    before = copy.deepcopy(data)
    results = normalize_payload(data)
    results[0]["labels"]["node"] = "changed"
    assert data == before


# ---------------------------------------------------------------------------------------------------------------------
# Dedup
# ---------------------------------------------------------------------------------------------------------------------

def ev(fingerprint="f1", status="firing", node="n1"):
    return {"fingerprint": fingerprint, "status": status, "node": node}


def test_dedup_window_and_split_record_nothing():
    dedup = Deduplicator(window_s=10, max_entries=100)
    fresh, dups = dedup.split([ev(), ev(), ev("f2")], now=0.0)
    assert [e["fingerprint"] for e in fresh] == ["f1", "f2"] and len(dups) == 1
    assert len(dedup) == 0
    for event in fresh:
        dedup.record(event, now=0.0)
    assert dedup.is_duplicate(ev(), now=9.9)
    assert not dedup.is_duplicate(ev(status="resolved"), now=9.9)
    assert not dedup.is_duplicate(ev(), now=10.0)
    assert len(dedup) == 0


def test_dedup_resolution_forgets_the_firing_key_so_a_refire_passes():
    dedup = Deduplicator(window_s=100)
    dedup.record(ev(), 0.0)
    dedup.record(ev(status="resolved"), 1.0)
    assert not dedup.is_duplicate(ev(), 2.0)
    assert dedup.is_duplicate(ev(status="resolved"), 2.0)
    dedup.record(ev(), 3.0)
    assert not dedup.is_duplicate(ev(status="resolved"), 4.0)


def test_dedup_a_new_occurrence_of_the_same_alert_is_not_a_duplicate():
    dedup = Deduplicator(window_s=100)
    first = dict(ev(), starts_at="2026-03-01T10:00:00Z")
    dedup.record(first, 0.0)
    assert dedup.is_duplicate(dict(first), 1.0), "a re-send of the same occurrence is a duplicate"
    again = dict(ev(), starts_at="2026-03-01T10:30:00Z")
    assert not dedup.is_duplicate(again, 1.0), "a new startsAt is a new occurrence"
    fresh, dups = dedup.split([again, dict(again), dict(first)], 2.0)
    assert fresh == [again] and len(dups) == 2
    dedup.record(dict(first, status="resolved"), 3.0)
    assert not dedup.is_duplicate(first, 4.0) and dedup.is_duplicate(dict(first, status="resolved"), 4.0)


def test_template_text_in_labels_never_reaches_an_event():
    results = normalize_payload(payload(alert(alertname="Gpu{{ lookup('pipe', 'id') }}", severity="{% if 1 %}x{% endif %}",
                                              team="{# c #}", **{"{{ k }}": "v", "cluster": "a"})))
    event = results[0]
    assert isinstance(event, dict) and tuple(event) == EVENT_KEYS
    assert event["alertname"] == "" and event["severity"] == ""
    assert event["dropped_labels"] == ["(template text)", "alertname", "severity", "team"]
    assert event["labels"]["cluster"] == "a" and event["node"] == "gpu-node-01" and event["fault_class"] == "fallen-off-bus"
    assert not any(m in json.dumps(event) for m in ("{{", "{%", "{#"))


def test_dedup_memory_is_bounded():
    dedup = Deduplicator(window_s=1e9, max_entries=50)
    for index in range(1000):
        dedup.record(ev("f%d" % index), float(index))
    assert len(dedup) == 50
    assert dedup.is_duplicate(ev("f999"), 1000.0) and not dedup.is_duplicate(ev("f0"), 1000.0)


@pytest.mark.parametrize("kwargs", [{"window_s": -1}, {"window_s": "1"}, {"max_entries": 0}, {"max_entries": True}])
def test_dedup_options_are_checked(kwargs):
    with pytest.raises(InputError):
        Deduplicator(**kwargs)


# ---------------------------------------------------------------------------------------------------------------------
# Batching
# ---------------------------------------------------------------------------------------------------------------------

def test_batcher_collects_a_window_and_groups_by_status_in_arrival_order():
    batcher = Batcher(window_s=2.0, max_size=100)
    assert batcher.deadline() is None and batcher.poll(0.0) == []
    assert batcher.add(ev("a", "resolved", "n9"), 10.0) == []
    for index in range(40):
        assert batcher.add(ev("f%d" % index, "firing", "n%d" % (index % 20)), 10.5) == []
    assert batcher.deadline() == 12.0 and not batcher.due(11.9) and batcher.poll(11.9) == []
    batches = batcher.poll(12.0)
    assert [b.status for b in batches] == ["resolved", "firing"]
    assert len(batches[1].events) == 40 and len(batches[1].nodes()) == 20
    out = batches[1].to_event(7, first_received_at=1.5)
    assert out["count"] == 40 and out["batch_id"] == 7 and out["status"] == "firing" and out["first_received_at"] == 1.5
    assert out["nodes"] == sorted("n%d" % i for i in range(20)) and len(out["batch"]) == 40
    assert len(batcher) == 0 and batcher.deadline() is None


def test_batcher_hands_out_a_full_window_at_once():
    batcher = Batcher(window_s=60.0, max_size=3)
    assert batcher.add(ev("1"), 0.0) == [] and batcher.add(ev("2", "resolved"), 0.0) == []
    batches = batcher.add(ev("3"), 0.1)
    assert [(b.status, len(b.events)) for b in batches] == [("firing", 2), ("resolved", 1)]
    assert len(batcher) == 0


def test_a_lone_alert_waits_the_quiet_time_and_a_storm_that_keeps_arriving_fills_the_window():
    batcher = Batcher(window_s=5.0, max_size=100, quiet_s=1.0)
    assert batcher.add(ev("lone"), 100.0) == [] and batcher.deadline() == 101.0
    assert batcher.poll(100.9) == [] and [len(b.events) for b in batcher.poll(101.0)] == [1]
    for step in range(20):  # one event every 0.4 s: never quiet for 1 s
        out = batcher.poll(200.0 + 0.4 * step)
        assert out == [], "the window closed %.1f s after it opened" % (0.4 * step)
        batcher.add(ev("s%d" % step), 200.0 + 0.4 * step)
        if 0.4 * step < 4.0:
            assert batcher.deadline() == pytest.approx(min(205.0, 201.0 + 0.4 * step))
        if 0.4 * (step + 1) >= 5.0:
            break
    batches = batcher.poll(205.0)
    assert len(batches) == 1 and len(batches[0].events) == 13, "the storm filled the whole 5 s window"
    fixed = Batcher(window_s=5.0, max_size=100, quiet_s=None)
    fixed.add(ev("lone"), 0.0)
    assert fixed.deadline() == 5.0, "without quiet_s the window is fixed"


def test_the_first_window_after_a_calm_closes_after_the_short_quiet_time_the_storm_behind_it_fills_the_next():
    batcher = Batcher(window_s=5.0, max_size=100, quiet_s=1.0, first_quiet_s=0.2)
    batcher.add(ev("lone"), 100.0)
    assert batcher.deadline() == pytest.approx(100.2), "the first alert ever is handed on after 0.2 s"
    assert [len(b.events) for b in batcher.poll(100.2)] == [1]
    # a storm right behind it: its windows are not after a calm, they wait the full quiet second
    batcher.add(ev("s1"), 100.5)
    assert batcher.deadline() == pytest.approx(101.5)
    batcher.add(ev("s2"), 101.3)
    assert batcher.poll(101.6) == [] and [len(b.events) for b in batcher.poll(102.3)] == [2]
    # 4.9 s of calm is not a calm of a whole window; 5 s is
    batcher.add(ev("x"), 106.2)
    assert batcher.deadline() == pytest.approx(107.2)
    batcher.flush()
    batcher.add(ev("y"), 111.2)
    assert batcher.deadline() == pytest.approx(111.4)
    # a burst within the short quiet time stays together
    batcher.add(ev("y2"), 111.35)
    assert batcher.deadline() == pytest.approx(111.55) and [len(b.events) for b in batcher.poll(111.55)] == [2]
    # the start of a storm - a second node's alert in the window - is not a lone fault: the full quiet second
    batcher.flush()
    batcher.add(ev("z1", node="n1"), 120.0)
    assert batcher.deadline() == pytest.approx(120.2)
    batcher.add(ev("z2", node="n2"), 120.1)
    assert batcher.deadline() == pytest.approx(121.1) and batcher.poll(120.5) == []
    # never longer than quiet_s, and 0 still turns batching off
    assert Batcher(window_s=5.0, quiet_s=0.1, first_quiet_s=0.5).add(ev("a"), 0.0) == []
    off = Batcher(window_s=5.0, quiet_s=0.0, first_quiet_s=0.2)
    off.add(ev("a"), 0.0)
    assert off.deadline() == 0.0


@pytest.mark.parametrize("kwargs", [{"window_s": -0.1}, {"max_size": 0}, {"max_size": 2.5}, {"quiet_s": -1}, {"quiet_s": True},
                                    {"first_quiet_s": -0.1}, {"first_quiet_s": False}])
def test_batcher_options_are_checked(kwargs):
    with pytest.raises(InputError):
        Batcher(**kwargs)


# ---------------------------------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------------------------------

_TEXT = st.text(max_size=12)
_LABEL_VALUE = st.one_of(_TEXT, st.sampled_from(["gpu-node-1", "n1\n", "3", "GPU-abc", "79", "ml", "train-0", "x:9400"]))
_LABELS = st.dictionaries(st.sampled_from(["node", "Hostname", "instance", "gpu", "UUID", "uuid", "code", "fault_class",
                                           "action", "severity", "pod", "namespace", "alertname"]) | _TEXT,
                          _LABEL_VALUE | st.integers() | st.none(), max_size=8)
_JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=6)
_TIME = st.sampled_from(["2026-03-01T10:00:00Z", ZERO, "2026-03-01T10:00:00.5+02:00", "bad", ""]) | _JSONISH
_ALERT = st.fixed_dictionaries({}, optional={
    "status": st.sampled_from(["firing", "resolved", "x"]) | _JSONISH, "labels": _LABELS | _JSONISH,
    "annotations": st.dictionaries(_TEXT, _TEXT, max_size=2) | _JSONISH, "startsAt": _TIME, "endsAt": _TIME,
    "fingerprint": st.sampled_from(["f1", "f2", "a b"]) | _JSONISH, "generatorURL": _TEXT | _JSONISH,
}) | _JSONISH
_PAYLOAD = st.fixed_dictionaries({}, optional={
    "version": st.sampled_from(["4", 4, "3"]), "status": st.sampled_from(["firing", "resolved", 1]),
    "receiver": _TEXT | _JSONISH, "groupLabels": st.dictionaries(_TEXT, _TEXT, max_size=2) | _JSONISH,
    "commonLabels": st.dictionaries(_TEXT, _TEXT, max_size=2) | _JSONISH, "commonAnnotations": st.just({}) | _JSONISH,
    "externalURL": _TEXT | _JSONISH, "groupKey": _TEXT, "truncatedAlerts": st.integers(-2, 3) | _JSONISH,
    "alerts": st.lists(_ALERT, max_size=6) | _JSONISH,
}) | _JSONISH


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PAYLOAD)
def test_random_payloads_raise_only_the_validation_error(data):
    try:
        results = normalize_payload(data)
    except AlertPayloadError as exc:
        assert exc.errors and str(exc)
        return
    assert len(results) == len(data["alerts"])
    for item in results:
        assert isinstance(item, (dict, Rejection))


_VALID_ALERT = st.builds(
    lambda labels, status, fingerprint: {"status": status, "labels": labels, "annotations": {}, "fingerprint": fingerprint,
                                         "startsAt": "2026-03-01T10:00:00Z", "endsAt": ZERO},
    st.dictionaries(st.sampled_from(["node", "Hostname", "instance", "gpu", "UUID", "code", "fault_class", "action", "pod",
                                     "namespace"]) | st.text(min_size=1, max_size=8), _LABEL_VALUE, max_size=8),
    st.sampled_from(["firing", "resolved"]), st.text(alphabet="0123456789abcdef", min_size=4, max_size=16))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_VALID_ALERT, max_size=8))
def test_every_valid_alert_yields_exactly_one_event_or_one_rejection(alerts):
    results = normalize_payload(payload(*alerts))
    assert len(results) == len(alerts)
    for alert_in, item in zip(alerts, results):
        if isinstance(item, Rejection):
            assert item.reason in REJECT_REASONS and item.fingerprint == alert_in["fingerprint"]
        else:
            assert tuple(item) == EVENT_KEYS
            assert item["fault_class"] in FAULT_CLASSES
            assert check_node_name(item["node"]) == item["node"]
            assert "\n" not in item["node"] and item["labels"] == alert_in["labels"]
            assert item["code"] is None or isinstance(item["code"], int)
            json.dumps(item)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["f1", "f2", "f3"]), st.sampled_from(["firing", "resolved"]),
                          st.floats(0, 5)), max_size=40), st.integers(1, 7), st.one_of(st.none(), st.floats(0, 2)),
       st.one_of(st.none(), st.floats(0, 2)), st.booleans())
def test_batcher_loses_and_duplicates_nothing(items, max_size, quiet_s, first_quiet_s, node_per_fp):
    batcher = Batcher(window_s=1.0, max_size=max_size, quiet_s=quiet_s, first_quiet_s=first_quiet_s)
    windows, now, at = [], 0.0, {}
    for index, (fingerprint, status, step) in enumerate(items):
        now += step
        windows.append(batcher.poll(now))
        at[index] = now
        windows.append(batcher.add({"fingerprint": fingerprint, "status": status, "node": "n" + fingerprint[-1:] if node_per_fp else "n",
                                    "i": index}, now))
        assert len(batcher) < max_size
    windows.append(batcher.flush())
    out = [batch for window in windows for batch in window]
    seen = sorted(event["i"] for batch in out for event in batch.events)
    assert seen == list(range(len(items)))
    for window in windows:  # a window never outlives window_s, and never holds a gap of quiet_s (over all its statuses)
        if not window:
            continue
        times = sorted(at[event["i"]] for batch in window for event in batch.events)
        assert times[-1] - times[0] <= 1.0
        gap = max((b - a for a, b in zip(times, times[1:])), default=0.0)
        if quiet_s is not None:
            assert gap <= quiet_s
        # a window that opened after a calm of a whole window (1 s without any event) never holds a gap of first_quiet_s
        first = min(event["i"] for batch in window for event in batch.events)
        nodes = {event["node"] for batch in window for event in batch.events}
        if first_quiet_s is not None and len(nodes) == 1 and (first == 0 or at[first] - at[first - 1] >= 1.0):
            assert gap <= first_quiet_s
    assert all(batch.events and len(batch.events) <= max_size for batch in out)
    assert all(event["status"] == batch.status for batch in out for event in batch.events)


# ---------------------------------------------------------------------------------------------------------------------
# The shipped configuration agrees with the code
# ---------------------------------------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


def test_alertmanager_example_groups_by_node_sends_resolved_and_inhibits_application_by_hardware():
    config = yaml.safe_load((REPO / "extensions/alertmanager/alertmanager.yml").read_text(encoding="utf-8"))
    (route,) = config["route"]["routes"]
    assert route["group_by"] == ["node"] and route["receiver"] == "dsxos-gpu-sentinel"
    (rule,) = config["inhibit_rules"]
    assert rule["equal"] == ["node", "gpu"]
    assert rule["source_matchers"] == ['fault_class=~"%s"' % "|".join(HARDWARE_CLASSES)]
    assert rule["target_matchers"] == ['fault_class="application"']
    receiver = next(item for item in config["receivers"] if item["name"] == "dsxos-gpu-sentinel")
    (webhook,) = receiver["webhook_configs"]
    assert webhook["send_resolved"] is True and webhook["url"].endswith("/alerts")
    assert webhook["http_config"]["authorization"] == {"type": "Bearer", "credentials_file": "/etc/dsxos/eda-token"}


def _actions(rule):
    return rule.get("actions") or [rule["action"]]


def test_rulebooks_pass_the_batch_to_the_sentinel_playbooks_intakes_and_releases_in_order_the_rest_in_parallel():
    for name, kind in (("gpu_sentinel.yml", "run_playbook"), ("gpu_sentinel_controller.yml", "run_job_template")):
        (play,) = yaml.safe_load((REPO / "extensions/eda/rulebooks" / name).read_text(encoding="utf-8"))
        (source,) = play["sources"]
        assert "dsxos.cluster.alertmanager_gpu" in source
        assert play["execution_strategy"] == "parallel", name
        rules = {rule["condition"]: [action[kind] for action in _actions(rule) if kind in action] for rule in play["rules"]}
        # every rule has several actions: ansible-rulebook then starts each rule's first action one step after the match,
        # so the lock requests keep the order of the batches (a one-action rule would overtake an earlier several-action one)
        assert all(len(_actions(rule)) >= 2 for rule in play["rules"]), name
        assert sorted(rules) == ['event.batch is defined and event.status == "firing"', 'event.batch is defined and event.status == "resolved"']

        def extra(action):
            return action["extra_vars"] if kind == "run_playbook" else action["job_args"]["extra_vars"]
        intake, steps = rules['event.batch is defined and event.status == "firing"']
        (release,) = rules['event.batch is defined and event.status == "resolved"']
        # the intakes and the releases share one lock: one after another, in the order of their batches
        assert intake["lock"] == release["lock"] == "dsxos-sentinel-records", name
        assert "lock" not in steps, "the long second run must not hold the intakes' lock"
        # ... and never wait for a node's lock while they hold the rulebook's
        assert extra(intake) == {"sentinel_events": "{{ event.batch }}", "sentinel_phase": "intake", "sentinel_lock_wait_s": 0}
        assert extra(steps) == {"sentinel_events": "{{ event.batch }}", "sentinel_phase": "all"}
        # a release holds the rulebook lock: it waits only briefly for another release's node lock (never for a remediation run)
        assert extra(release) == {"sentinel_events": "{{ event.batch }}", "sentinel_lock_wait_s": 0, "sentinel_lock_wait_release_s": 15}
        if kind == "run_playbook":
            assert intake["name"] == steps["name"] == "dsxos.cluster.remediate" and release["name"] == "dsxos.cluster.release"
        else:
            assert intake["name"] == steps["name"] != release["name"]


def test_both_rulebooks_give_the_source_the_same_settings_and_every_secret_as_a_file():
    sources = {}
    for name in ("gpu_sentinel.yml", "gpu_sentinel_controller.yml"):
        (play,) = yaml.safe_load((REPO / "extensions/eda/rulebooks" / name).read_text(encoding="utf-8"))
        (source,) = play["sources"]
        sources[name] = {k: v for k, v in source["dsxos.cluster.alertmanager_gpu"].items() if k != "host"}
    assert sources["gpu_sentinel.yml"] == sources["gpu_sentinel_controller.yml"]
    settings = sources["gpu_sentinel.yml"]
    assert {"token_file", "hmac_secret_file", "hmac_header", "dedup_window_s", "queue_size"} <= set(settings)
    assert "token" not in settings and "hmac_secret" not in settings, "secrets come from files, never from a rulebook variable"
    assert settings["hmac_secret_file"] == "{{ sentinel_eda_hmac_secret_file | default('') }}", "HMAC is off unless a file is given"


def test_source_plugin_documents_every_option_it_reads():
    path = REPO / "extensions/eda/plugins/event_source/alertmanager_gpu.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == "DOCUMENTATION")
    documented = set(yaml.safe_load(docs)["options"])
    read = {node.args[1].value for node in ast.walk(tree) if isinstance(node, ast.Call) and len(node.args) >= 2
            and getattr(node.func, "id", "") in ("_int", "_float", "_secret") and isinstance(node.args[1], ast.Constant)}
    read |= {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
             and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and getattr(node.func.value, "id", "") == "args"
             and isinstance(node.args[0], ast.Constant)}
    read |= {key + "_file" for key in ("token", "hmac_secret")}
    assert read == documented
