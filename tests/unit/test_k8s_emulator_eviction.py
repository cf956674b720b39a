# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""pods/eviction against PodDisruptionBudgets, graceful deletion timing, PDB metrics; the budget arithmetic as units."""
from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.disruption import EVICTION_BLOCKED, scaled_value
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)


def _evict(core, name, namespace="default", dry_run=None):
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    if dry_run:
        body.delete_options = client.V1DeleteOptions(dry_run=["All"])
    return core.create_namespaced_pod_eviction(name, namespace, body)


def _ready_pods(emu, selector="app=web"):
    return sorted(p["metadata"]["name"] for p in emu.api.pods("default", label_selector=selector)
                  if not p["metadata"].get("deletionTimestamp")
                  and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))


@pytest.fixture
def web(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    k8s_emulator.add_nodes(4, "h100-eks")
    k8s_emulator.add_deployment("web", replicas=3)
    k8s_emulator.add_pdb("web-pdb", {"app": "web"}, min_available=2)
    k8s_emulator.wait_for(lambda: len(_ready_pods(k8s_emulator)) == 3, 10, what="3 ready web pods")
    k8s_emulator.wait_for(lambda: (k8s_emulator.api.get("policy/v1", "PodDisruptionBudget", "web-pdb", "default")["status"]
                                   .get("disruptionsAllowed") == 1), 10, what="PDB status")
    return k8s_emulator, client.CoreV1Api(k8s_client)


def test_eviction_allowed_then_blocked_with_apiserver_message(web):  # pylint: disable=redefined-outer-name
    emu, core = web
    emu.controllers.kubelet_start_delay_s = 100  # replacement pods start 1 s (real) later: the second eviction must meet 2/2 healthy
    first, second = _ready_pods(emu)[:2]
    _evict(core, first)
    evicted = core.read_namespaced_pod(first, "default")
    assert evicted.metadata.deletion_timestamp is not None and evicted.metadata.deletion_grace_period_seconds == 30
    with pytest.raises(ApiException) as exc:
        _evict(core, second)
    body = json.loads(exc.value.body)
    assert exc.value.status == 429 and body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"] == [{"reason": "DisruptionBudget",
                                          "message": "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]
    emu.wait_for(lambda: len(_ready_pods(emu)) == 3, 10, what="replacement pod ready")
    _evict(core, second)
    assert emu.pdb_min_healthy("web-pdb") == 2 and not emu.pdb_violated("web-pdb")
    assert emu.api_calls("create", "pods/eviction") == 3


def test_graceful_deletion_is_scaled_and_kubelet_removes_pod(web):  # pylint: disable=redefined-outer-name
    emu, core = web
    victim = _ready_pods(emu)[0]
    started = time.monotonic()
    _evict(core, victim)
    assert emu.api.find("v1", "Pod", victim, "default") is not None
    emu.wait_for(lambda: emu.api.find("v1", "Pod", victim, "default") is None, 5, what="pod removal")
    assert time.monotonic() - started >= 30 * emu.time_scale * 0.9
    quick = _ready_pods(emu)[0]
    core.delete_namespaced_pod(quick, "default", grace_period_seconds=0)
    assert emu.api.find("v1", "Pod", quick, "default") is None


def test_dry_run_eviction_changes_nothing(web):  # pylint: disable=redefined-outer-name
    emu, core = web
    victim = _ready_pods(emu)[0]
    rv = emu.api.get("v1", "Pod", victim, "default")["metadata"]["resourceVersion"]
    _evict(core, victim, dry_run=True)
    after = emu.api.get("v1", "Pod", victim, "default")["metadata"]
    assert after["resourceVersion"] == rv and not after.get("deletionTimestamp")


def test_more_than_one_pdb_is_500_and_missing_pod_404(web):  # pylint: disable=redefined-outer-name
    emu, core = web
    emu.add_pdb("web-pdb-2", {"app": "web"}, max_unavailable=1)
    with pytest.raises(ApiException) as exc:
        _evict(core, _ready_pods(emu)[0])
    assert exc.value.status == 500
    assert json.loads(exc.value.body)["message"] == ("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                                     "does not support.")
    with pytest.raises(ApiException) as exc:
        _evict(core, "ghost")
    assert exc.value.status == 404 and json.loads(exc.value.body)["message"] == 'pods "ghost" not found'


def test_violation_is_recorded_when_pods_are_deleted_behind_the_budget(web):  # pylint: disable=redefined-outer-name
    emu, core = web
    for name in _ready_pods(emu)[:2]:
        core.delete_namespaced_pod(name, "default")
    assert emu.pdb_violated("web-pdb") and emu.pdb_min_healthy("web-pdb") == 1
    assert emu.pdb_metrics("web-pdb")["desired"] == 2


@pytest.mark.parametrize("spec,expected_desired,expected_allowed", [
    ({"maxUnavailable": "30%"}, 3, 2),   # ceil(1.5) = 2 unavailable -> 5 - 2
    ({"minAvailable": "50%"}, 3, 2),     # ceil(2.5) = 3
    ({"minAvailable": 4}, 4, 1),
    ({"maxUnavailable": 0}, 5, 0),
])
def test_percent_budgets_round_up(k8s_emulator, spec, expected_desired, expected_allowed):  # pylint: disable=redefined-outer-name
    k8s_emulator.add_nodes(5, "cpu")
    k8s_emulator.add_deployment("api", replicas=5)
    k8s_emulator.api.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b", "namespace": "default"},
                             "spec": dict(spec, selector={"matchLabels": {"app": "api"}})})
    k8s_emulator.wait_for(lambda: k8s_emulator.api.get("policy/v1", "PodDisruptionBudget", "b", "default")["status"].get("currentHealthy") == 5,
                          10, what="5 healthy")
    status = k8s_emulator.api.get("policy/v1", "PodDisruptionBudget", "b", "default")["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (5, expected_desired, expected_allowed)


def test_unready_pod_eviction_follows_unhealthy_pod_policy(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    k8s_emulator.add_nodes(1, "cpu")
    k8s_emulator.seed_pods(2, namespace="default", labels={"app": "solo"})
    k8s_emulator.add_pdb("solo", {"app": "solo"}, min_available=2)
    core = client.CoreV1Api(k8s_client)
    core.patch_namespaced_pod_status("w-0-0", "default", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    with pytest.raises(ApiException) as exc:
        _evict(core, "w-0-0")
    assert exc.value.status == 429 and json.loads(exc.value.body)["message"] == EVICTION_BLOCKED
    client.PolicyV1Api(k8s_client).patch_namespaced_pod_disruption_budget(
        "solo", "default", {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}, _content_type="application/merge-patch+json")
    _evict(core, "w-0-0")
    with pytest.raises(ApiException):
        _evict(core, "w-0-1")


def test_scaled_value_units():
    assert scaled_value("30%", 5) == 2 and scaled_value("50%", 5) == 3 and scaled_value("10%", 1) == 1
    assert scaled_value(3, 100) == 3 and scaled_value("0%", 7) == 0 and scaled_value("100%", 7) == 7


def test_budget_created_before_pods_are_up_is_not_a_false_violation(k8s_emulator):  # pylint: disable=redefined-outer-name
    # maxUnavailable budgets start at desiredHealthy 0 (no pods yet) and grow as pods come up: that ramp is
    # neither armed at 0 nor counted as a disruption.
    k8s_emulator.add_nodes(4, "h100-eks")
    k8s_emulator.add_pdb("ramp", {"app": "ramp"}, max_unavailable=1)
    k8s_emulator.add_deployment("ramp", replicas=4)
    k8s_emulator.wait_for(lambda: k8s_emulator.api.get("policy/v1", "PodDisruptionBudget", "ramp", "default")["status"].get("currentHealthy") == 4,
                          10, what="4 healthy pods behind the budget")
    k8s_emulator.settle()
    assert not k8s_emulator.pdb_violated("ramp")
    assert k8s_emulator.pdb_min_healthy("ramp") in (3, 4)
