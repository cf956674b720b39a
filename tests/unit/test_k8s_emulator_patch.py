# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The three patch types (merge, strategic merge, JSON patch) and server-side dryRun, through the real client."""
from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.patches import json_patch, merge_patch, strategic_merge_patch
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)

MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"


@pytest.fixture
def node(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    name = k8s_emulator.add_nodes(1, "h100-eks", taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])[0]
    return client.CoreV1Api(k8s_client), name


def test_strategic_merge_cordon_and_labels(node):  # pylint: disable=redefined-outer-name
    core, name = node
    patched = core.patch_node(name, {"spec": {"unschedulable": True}, "metadata": {"labels": {"dsxos.io/maintenance": "true"}}})
    assert patched.spec.unschedulable is True
    assert patched.metadata.labels["dsxos.io/maintenance"] == "true"
    assert patched.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    patched = core.patch_node(name, {"spec": {"unschedulable": None}, "metadata": {"labels": {"dsxos.io/maintenance": None}}})
    assert patched.spec.unschedulable is None and "dsxos.io/maintenance" not in patched.metadata.labels


def test_strategic_merge_replaces_taints_list_like_the_apiserver(node):  # pylint: disable=redefined-outer-name
    core, name = node
    patched = core.patch_node(name, {"spec": {"taints": [{"key": "dsxos.io/drain", "effect": "NoExecute"}]}})
    assert [(t.key, t.effect) for t in patched.spec.taints] == [("dsxos.io/drain", "NoExecute")]


def test_strategic_merge_conditions_by_type_and_containers_by_name(k8s_emulator, node):  # pylint: disable=redefined-outer-name
    core, name = node
    status = core.patch_node_status(name, {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}})
    by_type = {c.type: c for c in status.status.conditions}
    assert by_type["Ready"].status == "False" and by_type["Ready"].reason == "KubeletNotReady"
    assert by_type["MemoryPressure"].status == "False" and len(status.status.conditions) == 4
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "image": "img:1", "env": [{"name": "X", "value": "1"}]}, {"name": "b", "image": "img:1"}]}})
    pod = core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "b", "image": "img:2"}]}})
    assert [(c.name, c.image) for c in pod.spec.containers] == [("a", "img:1"), ("b", "img:2")]
    assert pod.spec.containers[0].env[0].name == "X"
    pod = core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}})
    assert [c.name for c in pod.spec.containers] == ["b"]
    assert k8s_emulator.api_calls("patch", "pods") == 2


def test_merge_patch_replaces_lists_and_null_deletes(node):  # pylint: disable=redefined-outer-name
    core, name = node
    patched = core.patch_node(name, {"metadata": {"labels": {"a": "1", "topology.kubernetes.io/zone": None}}}, _content_type=MERGE)
    assert patched.metadata.labels["a"] == "1" and "topology.kubernetes.io/zone" not in patched.metadata.labels


def test_json_patch_with_test_operation(node):  # pylint: disable=redefined-outer-name
    core, name = node
    ops = [{"op": "test", "path": "/spec/taints/0/key", "value": "nvidia.com/gpu"},
           {"op": "add", "path": "/metadata/labels/dsxos.io~1role", "value": "worker"},
           {"op": "remove", "path": "/spec/taints/0"}]
    patched = core.patch_node(name, ops)
    assert patched.metadata.labels["dsxos.io/role"] == "worker" and not patched.spec.taints
    with pytest.raises(ApiException) as exc:
        core.patch_node(name, [{"op": "test", "path": "/metadata/labels/dsxos.io~1role", "value": "nope"}])
    # kube-apiserver does not say why a JSON patch did not apply: a generic 422 Invalid with empty details
    answer = json.loads(exc.value.body)
    assert exc.value.status == 422 and answer["reason"] == "Invalid" and answer["details"] == {}
    assert answer["message"] == "the server rejected our request due to an error in our request"
    with pytest.raises(ApiException) as exc:
        core.patch_node(name, [{"op": "replace", "path": "/spec/missing/deep", "value": 1}])
    assert exc.value.status == 422


def test_strategic_merge_unsupported_for_custom_resources(k8s_client):  # pylint: disable=redefined-outer-name
    objs = client.CustomObjectsApi(k8s_client)
    objs.create_namespaced_custom_object("argoproj.io", "v1alpha1", "default", "applications",
                                         {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "gpu-operator"},
                                          "spec": {"project": "default"}})
    with pytest.raises(ApiException) as exc:
        objs.patch_namespaced_custom_object("argoproj.io", "v1alpha1", "default", "applications", "gpu-operator", {"spec": {"project": "x"}},
                                            _content_type=SMP)
    assert exc.value.status == 415
    got = objs.patch_namespaced_custom_object("argoproj.io", "v1alpha1", "default", "applications", "gpu-operator",
                                              {"spec": {"project": "x"}}, _content_type=MERGE)
    assert got["spec"]["project"] == "x"


def test_dry_run_create_update_patch_delete_persist_nothing(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    rv_before = k8s_emulator.store.resource_version
    dry = core.create_namespaced_config_map("default", {"metadata": {"name": "d"}, "data": {"a": "1"}}, dry_run="All")
    assert dry.metadata.name == "d" and dry.data == {"a": "1"}
    assert k8s_emulator.api.find("v1", "ConfigMap", "d", "default") is None
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "BAD"}}, dry_run="All")
    assert exc.value.status == 422
    assert k8s_emulator.store.resource_version == rv_before
    core.create_namespaced_config_map("default", {"metadata": {"name": "d"}, "data": {"a": "1"}})
    rv_created = k8s_emulator.store.resource_version
    assert core.patch_namespaced_config_map("d", "default", {"data": {"a": "2"}}, dry_run="All").data == {"a": "2"}
    replaced = core.replace_namespaced_config_map("d", "default", {"metadata": {"name": "d"}, "data": {"a": "3"}}, dry_run="All")
    assert replaced.data == {"a": "3"}
    core.delete_namespaced_config_map("d", "default", dry_run="All")
    assert k8s_emulator.api.get("v1", "ConfigMap", "d", "default")["data"] == {"a": "1"}
    assert k8s_emulator.store.resource_version == rv_created


def test_patch_helpers_units():
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]}) == {"a": {"c": 2, "d": 3}, "l": [3]}
    target = {"metadata": {"finalizers": ["a"]}, "spec": {"volumes": [{"name": "v1", "x": 1}], "tolerations": [{"key": "k"}]}}
    out = strategic_merge_patch(target, {"metadata": {"finalizers": ["b"]},
                                         "spec": {"volumes": [{"name": "v2"}], "tolerations": [{"key": "z"}]}})
    assert out["metadata"]["finalizers"] == ["a", "b"]
    assert [v["name"] for v in out["spec"]["volumes"]] == ["v1", "v2"]
    assert out["spec"]["tolerations"] == [{"key": "z"}]
    assert target["spec"]["volumes"] == [{"name": "v1", "x": 1}]
    ops = [{"op": "add", "path": "/a/-", "value": 3}, {"op": "move", "from": "/a", "path": "/b"},
           {"op": "copy", "from": "/b", "path": "/c"}, {"op": "replace", "path": "/c/0", "value": 9}]
    doc = json_patch({"a": [1, 2]}, ops)
    assert doc == {"b": [1, 2, 3], "c": [9, 2, 3]}
