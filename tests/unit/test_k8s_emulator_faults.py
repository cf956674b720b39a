# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fault injection (latency, 5xx, 429 + Retry-After, dropped connections), auth (401), RBAC refusals (403) and call counters."""
from __future__ import annotations

import json
import time

import pytest
import urllib3
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.faults import FaultInjector
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)


def _no_retry_client(emu):
    """A CoreV1Api whose urllib3 pool does not retry (the default Retry honours Retry-After and re-sends on dropped reads)."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=emu.kubeconfig_path, client_configuration=cfg)
    cfg.retries = False
    return client.CoreV1Api(client.ApiClient(cfg))


def test_fixed_latency_on_a_path_prefix(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    k8s_emulator.add_nodes(1)
    k8s_emulator.faults.set("/api/v1/nodes", latency_s=0.5)
    started = time.monotonic()
    core.list_node()
    slow = time.monotonic() - started
    started = time.monotonic()
    core.list_namespace()
    fast = time.monotonic() - started
    assert slow >= 0.5 and fast < 0.5
    assert k8s_emulator.faults.injected["latency"] == 1


def test_error_and_throttle_rates(k8s_emulator):  # pylint: disable=redefined-outer-name
    core = _no_retry_client(k8s_emulator)
    k8s_emulator.faults.set("/", error_rate=1.0, error_code=503)
    with pytest.raises(ApiException) as exc:
        core.list_namespace()
    assert exc.value.status == 503 and json.loads(exc.value.body)["reason"] == "ServiceUnavailable"
    k8s_emulator.faults.clear()
    k8s_emulator.faults.set("/api/v1/namespaces/default/pods", throttle_rate=1.0, retry_after_s=7)
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("default")
    assert exc.value.status == 429 and exc.value.headers["Retry-After"] == "7"
    assert json.loads(exc.value.body)["details"]["retryAfterSeconds"] == 7
    assert core.list_namespace().items  # other paths unaffected
    k8s_emulator.faults.clear()
    k8s_emulator.faults.set("/", error_rate=0.3, methods=["GET"])
    outcomes = []
    for _request in range(60):
        try:
            core.list_namespace()
            outcomes.append("ok")
        except ApiException as err:
            outcomes.append(err.status)
    # seeded RNG: deterministic, but the bounds do not depend on the seed
    assert 5 <= outcomes.count(500) <= 35 and outcomes.count("ok") == 60 - outcomes.count(500)
    assert k8s_emulator.faults.injected["error"] == 1 + outcomes.count(500)


def test_dropped_connections(k8s_emulator):  # pylint: disable=redefined-outer-name
    core = _no_retry_client(k8s_emulator)
    k8s_emulator.faults.set("/api/v1/namespaces", drop_rate=1.0)
    with pytest.raises((urllib3.exceptions.HTTPError, ConnectionError)):
        core.list_namespace(_request_timeout=5)
    assert k8s_emulator.faults.injected["drop"] == 1
    k8s_emulator.faults.clear()
    assert core.list_namespace().items


def test_fault_injector_units():
    inj = FaultInjector(seed=7)
    inj.set("/", latency_range=(0.1, 0.2))
    inj.set("/apis/apps", drop_rate=1.0, methods=["post"])
    decision = inj.decide("GET", "/apis/apps/v1/deployments")
    assert 0.1 <= decision.delay_s <= 0.2 and decision.action == "serve"
    assert inj.decide("POST", "/apis/apps/v1/namespaces/x/deployments").action == "drop"
    with pytest.raises(ValueError):
        inj.set("/", error_rate=1.5)


def test_require_auth_rejects_missing_or_unknown_token(k8s_emulator_factory):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator_factory(require_auth=True)
    good = client.CoreV1Api(config.new_client_from_config(config_file=emu.kubeconfig_path))
    assert good.list_namespace().items
    cfg = client.Configuration()
    cfg.host = emu.url
    cfg.api_key = {"BearerToken": "wrong"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(client.ApiClient(cfg)).list_namespace()
    assert exc.value.status == 401 and json.loads(exc.value.body)["reason"] == "Unauthorized"


def test_rbac_rule_table_refuses_with_apiserver_message(k8s_emulator, k8s_client, tmp_path):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    emu.add_nodes(1)
    emu.access.add_token("drainer-token", "system:serviceaccount:dsxos:drainer")
    emu.access.deny(verbs=["create"], resources=["pods/eviction"], users=["system:serviceaccount:dsxos:drainer"])
    emu.access.deny(verbs=["list"], resources=["nodes"], users=["system:serviceaccount:dsxos:drainer"])
    path = emu.write_kubeconfig(str(tmp_path / "drainer.kubeconfig"), token="drainer-token", user="drainer")
    core = client.CoreV1Api(config.new_client_from_config(config_file=path))
    emu.seed_pods(1, namespace="default")
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_eviction("w-0-0", "default", client.V1Eviction(metadata=client.V1ObjectMeta(name="w-0-0")))
    body = json.loads(exc.value.body)
    assert exc.value.status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('pods "w-0-0" is forbidden: User "system:serviceaccount:dsxos:drainer" cannot create resource '
                               '"pods/eviction" in API group "" in the namespace "default"')
    with pytest.raises(ApiException) as exc:
        core.list_node()
    assert json.loads(exc.value.body)["message"] == ('nodes is forbidden: User "system:serviceaccount:dsxos:drainer" cannot list '
                                                     'resource "nodes" in API group "" at the cluster scope')
    assert core.read_namespaced_pod("w-0-0", "default").metadata.name == "w-0-0"
    assert client.CoreV1Api(k8s_client).list_node().items  # the admin is not affected


def test_call_counters_by_verb_and_resource(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.read_namespaced_config_map("a", "default")
    core.list_namespaced_config_map("default")
    core.list_namespaced_config_map("default")
    counts = k8s_emulator.call_counts()
    assert counts["create configmaps"] == 1 and counts["get configmaps"] == 1 and counts["list configmaps"] == 2
    assert k8s_emulator.api_calls(verb="list") == 2 and k8s_emulator.api_calls(resource="configmaps") == 4
    assert k8s_emulator.stats()["time_scale"] == 0.01
