# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Circuit breaker window math, admission, opening and reset (pure logic)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import (
    BreakerConfig, BreakerEntry, BreakerState, CircuitBreakerError, decide, format_time, limit_for, parse_time, reset_state,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName

T0 = 1_780_000_000.0
CFG = BreakerConfig(max_fraction=0.1, max_nodes=10, window_s=3600)


@pytest.mark.parametrize("gpu_nodes,fraction,cap,expected", [
    (1500, 0.1, 10, 10), (1500, 0.1, 200, 150), (50, 0.1, 10, 5), (4, 0.1, 10, 1), (0, 0.1, 10, 1), (150, 0.1, 100, 15),
    (7, 1.0, 10, 7),
])
def test_limit(gpu_nodes, fraction, cap, expected):
    assert limit_for(gpu_nodes, fraction, cap) == expected


def test_admits_up_to_limit_then_opens_and_refuses_everything_new():
    nodes = [f"n{i}" for i in range(8)]
    result = decide(BreakerState(), nodes, T0, CFG, gpu_nodes=50, reason="xid", actor="a")
    assert result.limit == 5 and result.admitted == nodes[:5]
    assert set(result.refused) == set(nodes[5:])
    assert "above the limit 5" in result.refused["n5"] and "is open" in result.refused["n6"]
    assert result.state.status == "open" and result.changed
    # a node already counted in the window passes again, even while open; a new one does not
    again = decide(result.state, ["n0", "n9"], T0 + 10, CFG, 50)
    assert again.admitted == ["n0"] and list(again.refused) == ["n9"] and not again.changed


def test_sliding_window_forgets_old_entries():
    state = BreakerState(entries=[BreakerEntry(f"old{i}", T0 - 3700) for i in range(5)] + [BreakerEntry("recent", T0 - 100)])
    result = decide(state, ["a", "b", "c", "d"], T0, CFG, gpu_nodes=50)
    assert result.admitted == ["a", "b", "c", "d"] and not result.refused
    assert sorted(e.node for e in result.state.entries) == ["a", "b", "c", "d", "recent"]
    assert result.active_nodes == ["a", "b", "c", "d", "recent"]


def test_reset_closes_and_never_replays_old_entries():
    tripped = decide(BreakerState(), [f"n{i}" for i in range(7)], T0, CFG, gpu_nodes=50).state
    assert tripped.status == "open"
    reset = reset_state(tripped, T0 + 60, "ops", "incident reviewed")
    assert reset.status == "closed" and reset.entries == [] and "ops" in reset.reason and "incident reviewed" in reset.reason
    # an entry written before the reset (e.g. by a racing writer) is ignored
    reset.entries.append(BreakerEntry("stale", T0 + 30))
    result = decide(reset, [f"m{i}" for i in range(5)], T0 + 120, CFG, gpu_nodes=50)
    assert len(result.admitted) == 5 and not result.refused and result.state.status == "closed"
    assert "stale" not in {e.node for e in result.state.entries}


def test_state_round_trips_through_configmap_data():
    state = decide(BreakerState(), ["n1", "n2"], T0 + 0.25, CFG, gpu_nodes=100, reason="r", actor="me").state
    data = state.to_data()
    assert all(isinstance(v, str) for v in data.values())
    back = BreakerState.from_data(data, "cm")
    assert [(e.node, e.time, e.reason, e.actor) for e in back.entries] == [("n1", T0 + 0.25, "r", "me"), ("n2", T0 + 0.25, "r", "me")]
    assert parse_time(format_time(T0 + 0.5), "t") == T0 + 0.5


@pytest.mark.parametrize("data,match", [
    ({"status": "half-open"}, "data.status"),
    ({"entries": "{oops"}, "data.entries is not JSON"),
    ({"entries": json.dumps({"a": 1})}, "must be a JSON list"),
    ({"entries": json.dumps([{"node": "n", "time": "yesterday"}])}, r"entries\[0\].time"),
    ({"resetAt": "2026-13-01T00:00:00Z"}, "resetAt"),
])
def test_malformed_configmap_is_named(data, match):
    with pytest.raises(CircuitBreakerError, match=match):
        BreakerState.from_data(data, "configmap dsxos-system/dsxos-circuit-breaker")


def test_config_validation():
    cfg = BreakerConfig.from_params({"max_fraction": 0.5, "max_nodes": 3, "window_s": 60, "namespace": None})
    assert cfg.namespace == "dsxos-system" and cfg.limit(100) == 3
    with pytest.raises(CircuitBreakerError, match="max_fraction"):
        BreakerConfig.from_params({"max_fraction": 1.5})
    with pytest.raises(CircuitBreakerError, match="max_nodes"):
        BreakerConfig.from_params({"max_nodes": 0})
    with pytest.raises(CircuitBreakerError, match="window_s"):
        BreakerConfig.from_params({"window_s": -1})
    with pytest.raises(CircuitBreakerError, match="unknown option"):
        BreakerConfig.from_params({"threshold": 3})
    with pytest.raises(K8sInvalidName, match="Bad_NS"):
        BreakerConfig.from_params({"namespace": "Bad_NS"})
