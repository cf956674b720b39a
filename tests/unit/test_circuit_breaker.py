# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The circuit breaker in-process against the emulator: the CIRCUIT_BREAKER entry and node_quarantine's breaker option.

The window is long (3600 s) and time is injected where it matters, so nothing waits on the wall clock.
"""
from __future__ import annotations

import json

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import (
    BreakerConfig, CircuitBreaker, CircuitBreakerError, run_circuit_breaker,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import CIRCUIT_BREAKER, NODE_QUARANTINE
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

BREAKER = {"max_nodes": 2, "max_fraction": 0.5, "window_s": 3600}
CONFIGMAP = ("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system")


def defaults(entry):
    return {key: spec.get("default") for key, spec in entry.spec.items()}


def breaker_params(emu, **kw):
    out = defaults(CIRCUIT_BREAKER)
    out.update(kubeconfig=emu.kubeconfig_path, retry_backoff_s=0, max_nodes=2, max_fraction=0.5, actor="sre-bot")
    out.update(kw)
    return out


def quarantine_params(emu, **kw):
    out = defaults(NODE_QUARANTINE)
    out.update(kubeconfig=emu.kubeconfig_path, retry_backoff_s=0, circuit_breaker=dict(BREAKER), actor="ops-bot")
    out.update(kw)
    return out


@pytest.fixture
def fleet(k8s_emulator):
    """Ten GPU nodes and two CPU nodes (the CPU nodes do not count towards the limit)."""
    names = k8s_emulator.add_nodes(10, "h100-eks", name_prefix="gpu-")
    k8s_emulator.add_nodes(2, "cpu", name_prefix="cpu-")
    return k8s_emulator, names


def test_breaker_trips_at_its_cap_and_refuses_every_new_node(fleet):
    emu, names = fleet
    result = call_entry(NODE_QUARANTINE, quarantine_params(emu, nodes=names[:3], action="cordon", reason="XID storm"))
    assert "failed" not in result, "refused nodes are reported, not failed, unless fail_on_refused"
    assert result["changed_nodes"] == names[:2] and result["refused_nodes"] == [names[2]]
    assert result["circuit_breaker"]["gpu_nodes"] == 10 and result["circuit_breaker"]["limit"] == 2
    refused = next(r for r in result["nodes"] if r["node"] == names[2])
    assert "above the limit 2" in refused["message"]
    assert not emu.api.get("v1", "Node", names[2])["spec"].get("unschedulable"), "a refused node is left untouched"
    data = emu.api.get(*CONFIGMAP[:3], namespace=CONFIGMAP[3])["data"]
    assert data["status"] == "open" and sorted(e["node"] for e in json.loads(data["entries"])) == sorted(names[:2])

    check = call_entry(CIRCUIT_BREAKER, breaker_params(emu, action="check", nodes=[names[3]]))
    assert check["allowed"] is False and "is open" in check["refused"][names[3]] and check["changed"] is False
    rerun = call_entry(CIRCUIT_BREAKER, breaker_params(emu, action="check", nodes=names[:2]))
    assert rerun["allowed"] is True, "nodes already counted in the window pass again for free"

    strict = call_entry(NODE_QUARANTINE, quarantine_params(emu, nodes=[names[4]], action="cordon", reason="x", fail_on_refused=True))
    assert strict["failed"] and "refused by the circuit breaker" in strict["msg"]


def test_breaker_never_blocks_a_release(fleet):
    emu, names = fleet
    call_entry(NODE_QUARANTINE, quarantine_params(emu, nodes=names[:3], action="cordon", reason="XID storm"))
    for action in ("release", "uncordon"):
        node = names[0] if action == "release" else names[1]
        result = call_entry(NODE_QUARANTINE, quarantine_params(emu, nodes=[node], action=action))
        assert "failed" not in result and result["changed_nodes"] == [node] and result["circuit_breaker"] is None
        assert not emu.api.get("v1", "Node", node)["spec"].get("unschedulable")
    again = call_entry(NODE_QUARANTINE, quarantine_params(emu, nodes=[names[0]], action="cordon", reason="XID storm"))
    assert again["changed_nodes"] == [names[0]], "a node counted in the window is admitted again while the breaker is open"


def test_reset_closes_the_breaker_and_never_replays_old_entries(fleet):
    emu, names = fleet
    call_entry(NODE_QUARANTINE, quarantine_params(emu, nodes=names[:3], action="cordon", reason="XID storm"))
    checked = call_entry(CIRCUIT_BREAKER, breaker_params(emu, action="reset", reason="reviewed"), check_mode=True)
    assert checked["changed"] and emu.api.get(*CONFIGMAP[:3], namespace=CONFIGMAP[3])["data"]["status"] == "open"
    reset = call_entry(CIRCUIT_BREAKER, breaker_params(emu, action="reset", reason="reviewed"))
    assert reset["changed"] and reset["state"]["status"] == "closed"
    after = call_entry(NODE_QUARANTINE, quarantine_params(emu, nodes=names[3:5], action="cordon", reason="new fault", fail_on_refused=True))
    assert "failed" not in after and after["changed_nodes"] == names[3:5]
    status = call_entry(CIRCUIT_BREAKER, breaker_params(emu, action="status"))
    assert status["active_nodes"] == sorted(names[3:5]) and status["state"]["status"] == "closed" and status["changed"] is False
    data = emu.api.get(*CONFIGMAP[:3], namespace=CONFIGMAP[3])["data"]
    assert data["resetAt"] and "sre-bot" in data["reason"]


def test_record_in_check_mode_writes_nothing(fleet):
    emu, names = fleet
    result = call_entry(CIRCUIT_BREAKER, breaker_params(emu, action="record", nodes=names[:1], reason="x"), check_mode=True)
    assert result["changed"] is True and result["allowed"] is True
    assert emu.api.find(*CONFIGMAP[:3], namespace=CONFIGMAP[3]) is None


def test_window_slides_with_the_injected_clock(fleet):
    emu, names = fleet
    config = BreakerConfig(max_nodes=2, max_fraction=0.5, window_s=60)
    now = [1_800_000_000.0]
    with client_from_params({"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0}) as client:
        breaker = CircuitBreaker(client, config, clock=lambda: now[0])
        assert breaker.record(names[:2], "a").allowed
        assert not breaker.check(names[2:3]).allowed
        now[0] += 61
        assert breaker.record(names[2:3], "b").admitted == [names[2]], "entries older than the window no longer count"
        assert run_circuit_breaker(client, "status", config, clock=lambda: now[0])["active_nodes"] == [names[2]]


@pytest.mark.parametrize("action, nodes, needle", [
    ("check", [], "needs at least one node"), ("record", ["gpu-1; reboot"], "nodes[0]"), ("check", ["UPPER"], "nodes[0]"),
])
def test_bad_input_is_refused_before_any_api_call(k8s_emulator, action, nodes, needle):
    result = call_entry(CIRCUIT_BREAKER, breaker_params(k8s_emulator, action=action, nodes=nodes))
    assert result["failed"] and needle in result["msg"]
    assert k8s_emulator.api_calls() == 0


@pytest.mark.parametrize("settings, needle", [
    ({"max_fraction": 0}, "max_fraction"), ({"max_nodes": 0}, "max_nodes"), ({"window_s": -1}, "window_s"),
    ({"namespace": "Bad_NS"}, "namespace"), ({"gpu_node_selector": "a b c"}, "gpu_node_selector"),
])
def test_bad_settings_name_the_option(k8s_emulator, settings, needle):
    result = call_entry(CIRCUIT_BREAKER, breaker_params(k8s_emulator, **settings))
    assert result["failed"] and needle in result["msg"]
    assert k8s_emulator.api_calls() == 0


def test_breaker_errors_are_dsxos_errors():
    with pytest.raises(CircuitBreakerError) as err:
        BreakerConfig.from_params({"colour": "red"})
    assert err.value.to_dict()["error"] == "CircuitBreakerError" and "unknown option" in str(err.value)
