# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""kube/lean_core_api.py against the emulator: every direct route answers exactly what the typed ``CoreV1Api`` method
answers (bodies, errors and their classes), the other calls go to the typed API, and a raw-JSON call never imports
``kubernetes.client.api.core_v1_api`` (checked in a fresh interpreter)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kubernetes.client import exceptions as kube_exceptions

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sConflict, K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.lean_core_api import ROUTES, LeanCoreV1Api
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMP = "application/strategic-merge-patch+json"
VOLATILE = ("resourceVersion", "managedFields", "creationTimestamp", "uid")


def strip(obj):
    """An object without the fields two writes of the same content differ in."""
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj


@pytest.fixture
def pair(k8s_emulator):
    """(emulator, lean api, typed api) over one client."""
    k8s_emulator.add_nodes(3, "h100-eks", name_prefix="gpu-")
    k8s_emulator.seed_pods(2, nodes=["gpu-0"])
    client = client_from_params({"kubeconfig": k8s_emulator.kubeconfig_path, "retry_backoff_s": 0})
    lean = client.core
    assert isinstance(lean, LeanCoreV1Api)
    yield k8s_emulator, lean, lean.typed
    client.close()


def raw(response):
    return json.loads(response.data)


def test_reads_and_lists_answer_what_the_typed_methods_answer(pair):
    _emu, lean, typed = pair
    before = lean.direct_calls
    assert raw(lean.read_node("gpu-1", _preload_content=False)) == raw(typed.read_node("gpu-1", _preload_content=False))
    for options in ({}, {"label_selector": "kubernetes.io/hostname=gpu-2"}, {"limit": 2}, {"field_selector": "metadata.name=gpu-0"}):
        assert raw(lean.list_node(_preload_content=False, **options))["items"] == raw(typed.list_node(_preload_content=False, **options))["items"]
    pods = raw(lean.list_pod_for_all_namespaces(field_selector="spec.nodeName=gpu-0", _preload_content=False))["items"]
    assert len(pods) == 2 and pods == raw(typed.list_pod_for_all_namespaces(field_selector="spec.nodeName=gpu-0", _preload_content=False))["items"]
    assert raw(lean.list_namespaced_pod("workloads", _preload_content=False))["items"] == pods
    assert raw(lean.read_namespace(name="default", _preload_content=False))["metadata"]["name"] == "default"
    page = raw(lean.list_node(limit=2, _preload_content=False))
    rest = raw(lean.list_node(limit=2, _continue=page["metadata"]["continue"], _preload_content=False))
    assert [n["metadata"]["name"] for n in page["items"] + rest["items"]] == ["gpu-0", "gpu-1", "gpu-2"]
    assert lean.direct_calls - before == 10


def test_writes_send_the_same_bodies_and_content_types(pair):
    emu, lean, typed = pair
    patch = {"metadata": {"labels": {"dsxos.io/test": "lean"}}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    dry = raw(lean.patch_node("gpu-1", patch, _preload_content=False, _content_type=SMP, dry_run="All"))
    assert dry["metadata"]["labels"]["dsxos.io/test"] == "lean"
    assert "dsxos.io/test" not in emu.api.get("v1", "Node", "gpu-1")["metadata"]["labels"], "dryRun=All reached the server"
    lean.patch_node("gpu-1", patch, _preload_content=False, _content_type=SMP)
    typed.patch_node("gpu-2", patch, _preload_content=False, _content_type=SMP)
    one, two = (emu.api.get("v1", "Node", n) for n in ("gpu-1", "gpu-2"))
    assert one["metadata"]["labels"]["dsxos.io/test"] == two["metadata"]["labels"]["dsxos.io/test"] == "lean"
    assert one["spec"]["taints"] == two["spec"]["taints"], "the strategic merge patch merged the same way"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lean", "namespace": "default"}, "data": {"a": "1"}}
    created = raw(lean.create_namespaced_config_map("default", body, _preload_content=False))
    replaced = raw(lean.replace_namespaced_config_map("lean", "default", dict(body, data={"a": "2"}), _preload_content=False))
    assert created["data"] == {"a": "1"} and replaced["data"] == {"a": "2"}
    assert strip(raw(lean.read_namespaced_config_map("lean", "default", _preload_content=False))) == \
        strip(raw(typed.read_namespaced_config_map("lean", "default", _preload_content=False)))
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "lean.1", "namespace": "default"}, "reason": "Lean",
             "involvedObject": {"kind": "Node", "name": "gpu-1"}, "message": "m", "type": "Normal"}
    assert raw(lean.create_namespaced_event("default", event, _preload_content=False))["reason"] == "Lean"
    assert raw(lean.create_namespace({"metadata": {"name": "lean-ns"}}, _preload_content=False))["metadata"]["name"] == "lean-ns"


@pytest.mark.parametrize("call", [
    lambda api: api.read_node("gpu-9", _preload_content=False),
    lambda api: api.read_namespaced_config_map("nope", "default", _preload_content=False),
    lambda api: api.create_namespace({"metadata": {"name": "default"}}, _preload_content=False),
    lambda api: api.patch_node("gpu-1", {"metadata": {"resourceVersion": "1"}}, _preload_content=False, _content_type=SMP),
    lambda api: api.list_node(label_selector="a in (", _preload_content=False),
])
def test_errors_are_the_exceptions_the_typed_method_raises(pair, call):
    _emu, lean, typed = pair
    with pytest.raises(kube_exceptions.ApiException) as direct:
        call(lean)
    with pytest.raises(kube_exceptions.ApiException) as reference:
        call(typed)
    assert type(direct.value) is type(reference.value)
    assert direct.value.status == reference.value.status and json.loads(direct.value.body) == json.loads(reference.value.body)


def test_the_client_translates_direct_errors_as_before(pair):
    emu, lean, _typed = pair
    client = client_from_params({"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0})
    with pytest.raises(K8sNotFound):
        client.call("get", "nodes", client.core.read_node, "gpu-9", _preload_content=False)
    with pytest.raises(K8sConflict):
        client.call("create", "namespaces", client.core.create_namespace, {"metadata": {"name": "default"}}, _preload_content=False)
    assert client.core.direct_calls == 2 and client.core.typed_calls == 0 and lean.typed_calls == 0
    client.close()


def test_typed_answers_other_options_and_other_methods_take_the_typed_api(pair):
    _emu, lean, _typed = pair
    node = lean.read_node("gpu-0")  # _preload_content defaults to True: a typed V1Node
    assert node.metadata.name == "gpu-0" and lean.typed_calls == 1
    assert lean.list_node(_preload_content=False, send_initial_events=False) is not None and lean.typed_calls == 2, "an unknown option"
    assert lean.read_node_status("gpu-0").metadata.name == "gpu-0", "a method without a route is the typed API's"
    lean.patch_node("gpu-0", {"metadata": {"labels": {"a": "b"}}}, _preload_content=False)
    assert lean.typed_calls == 3, "a PATCH without its content type: the typed method picks it"
    assert lean.direct_calls == 0


def test_discarded_answers_give_their_connection_back(pair):
    """An unread raw answer keeps its connection; discard() reads it so the pool reuses one connection."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import discard, ensure_namespace  # pylint: disable=import-outside-toplevel
    emu, _lean, _typed = pair
    client = client_from_params({"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0})
    for _round in range(10):
        ensure_namespace(client, "dsxos-system")
        discard(client.call("get", "nodes", client.core.read_node, "gpu-0", _preload_content=False))
    manager = client.api_client.rest_client.pool_manager
    pools = [manager.pools[key] for key in manager.pools.keys()]
    assert sum(p.num_connections for p in pools) == 1, [p.num_connections for p in pools]
    client.close()


def test_evictions_deletions_and_watches_go_out_directly(pair):
    """The drain's calls: the eviction (429 from a budget is the typed API's exception), the DELETE with its options,
    and the pod watch - none of them imports the typed API."""
    emu, lean, typed = pair
    pod = raw(lean.list_namespaced_pod("workloads", _preload_content=False))["items"][0]["metadata"]
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod["name"], "namespace": "workloads"}}
    lean.create_namespaced_pod_eviction(pod["name"], "workloads", body, _preload_content=False, dry_run="All")
    with pytest.raises(kube_exceptions.NotFoundException):
        lean.create_namespaced_pod_eviction("gone", "workloads", dict(body, metadata={"name": "gone", "namespace": "workloads"}),
                                            _preload_content=False)
    other = raw(lean.list_namespaced_pod("workloads", _preload_content=False))["items"][1]["metadata"]
    lean.delete_namespaced_pod(other["name"], "workloads", body={"preconditions": {"uid": other["uid"]}, "gracePeriodSeconds": 0},
                               grace_period_seconds=0, _preload_content=False)
    emu.wait_for(lambda: len(raw(typed.list_namespaced_pod("workloads", _preload_content=False))["items"]) == 1, 20, what="pod deleted")
    stream = lean.list_pod_for_all_namespaces(watch=True, field_selector="spec.nodeName=gpu-0", timeout_seconds=1,
                                              allow_watch_bookmarks=True, _preload_content=False)
    events = [json.loads(line) for line in stream.read().decode().splitlines() if line.strip()]
    assert [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"] == [pod["name"]]
    assert lean.typed_calls == 0 and lean.direct_calls == 6


def test_a_watch_through_a_lean_method_yields_the_typed_objects(pair):
    """kubernetes.watch deserializes by the list method's return type: the lean methods carry the typed ones (the watch goes out directly)."""
    emu, lean, _typed = pair
    from kubernetes import watch  # pylint: disable=import-outside-toplevel
    stream = watch.Watch().stream(lean.list_node, timeout_seconds=1, _request_timeout=5)
    names = sorted(event["object"].metadata.name for event in stream)
    assert names == ["gpu-0", "gpu-1", "gpu-2"] and lean.typed_calls == 0 and lean.direct_calls == 1 and emu


def test_bad_calls_fail_like_a_python_call():
    lean = LeanCoreV1Api(api_client=None, typed_factory=lambda: None)
    with pytest.raises(TypeError, match="takes 1 positional"):
        lean.read_node("a", "b", _preload_content=False)
    with pytest.raises(ValueError, match="missing the required parameter"):
        lean.read_namespaced_config_map("a", _preload_content=False)
    assert set(ROUTES) <= set(dir(LeanCoreV1Api))


def test_a_raw_json_call_never_imports_the_typed_core_api(k8s_emulator):
    """In a fresh interpreter: the intake's calls (read, patch, list, ConfigMap, Event, namespace) leave
    kubernetes.client.api.core_v1_api unimported (it costs ~0.9 s of CPU)."""
    k8s_emulator.add_nodes(1, "h100-eks", name_prefix="gpu-")
    script = f"""
import json, sys
sys.path.insert(0, {os.path.join(REPO, 'tests')!r})
import conftest  # the collection on sys.path
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params, ensure_namespace
client = client_from_params({{"kubeconfig": {k8s_emulator.kubeconfig_path!r}}})
core = client.core
node = json.loads(client.call("get", "nodes", core.read_node, "gpu-0", _preload_content=False).data)
client.call("patch", "nodes", core.patch_node, "gpu-0", {{"metadata": {{"labels": {{"x": "y"}}}}}}, _preload_content=False,
            _content_type="application/strategic-merge-patch+json")
client.call("list", "nodes", core.list_node, label_selector="x=y", _preload_content=False)
ensure_namespace(client, "dsxos-system")
print(json.dumps({{"imported": "kubernetes.client.api.core_v1_api" in sys.modules, "node": node["metadata"]["name"],
                  "direct": core.direct_calls, "typed": core.typed_calls}}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"imported": False, "node": "gpu-0", "direct": 5, "typed": 0}, out.stderr
