# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""CRUD of every served kind through the real client, metadata bookkeeping, and the apiserver's error Status objects."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)

_POD_SPEC = {"containers": [{"name": "main", "image": "nginx:1.27"}]}
_TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": _POD_SPEC}

#: (apiVersion, kind, namespaced, body spec/extra fields)
KINDS = [
    ("v1", "Namespace", False, {}),
    ("v1", "Node", False, {"spec": {"providerID": "aws:///us-east-1a/i-0123"}}),
    ("v1", "Pod", True, {"spec": _POD_SPEC}),
    ("v1", "ConfigMap", True, {"data": {"k": "v"}}),
    ("v1", "Secret", True, {"stringData": {"k": "v"}}),
    ("v1", "Event", True, {"involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Test", "message": "hello"}),
    ("events.k8s.io/v1", "Event", True, {
        "regarding": {"kind": "Node", "name": "n"}, "reason": "Test", "note": "hi", "eventTime": "2026-01-01T00:00:00.000000Z",
        "action": "Test", "reportingController": "t", "reportingInstance": "t"}),
    ("coordination.k8s.io/v1", "Lease", True, {"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
    ("policy/v1", "PodDisruptionBudget", True, {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}}),
    ("apps/v1", "Deployment", True, {"spec": {"replicas": 0, "selector": {"matchLabels": {"app": "x"}}, "template": _TEMPLATE}}),
    ("apps/v1", "ReplicaSet", True, {"spec": {"replicas": 0, "selector": {"matchLabels": {"app": "x"}}, "template": _TEMPLATE}}),
    ("apps/v1", "StatefulSet", True, {"spec": {"replicas": 0, "serviceName": "x", "selector": {"matchLabels": {"app": "x"}},
                                               "template": _TEMPLATE}}),
    ("apps/v1", "DaemonSet", True, {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": _TEMPLATE}}),
    ("batch/v1", "Job", True, {"spec": {"suspend": True, "template": {"spec": dict(_POD_SPEC, restartPolicy="Never")}}}),
    ("argoproj.io/v1alpha1", "Application", True, {"spec": {
        "project": "default", "source": {"repoURL": "https://x", "path": "."}, "destination": {"server": "https://kubernetes.default.svc"}}}),
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease", True, {"spec": {"interval": "5m", "chart": {"spec": {"chart": "gpu-operator"}}}}),
]


@pytest.mark.parametrize("api_version,kind,namespaced,extra", KINDS, ids=[f"{k[0]}/{k[1]}" for k in KINDS])
def test_crud_roundtrip_every_kind(k8s_client, tmp_path, api_version, kind, namespaced, extra):  # pylint: disable=redefined-outer-name
    dyn = dynamic.DynamicClient(k8s_client, cache_file=str(tmp_path / "cache.json"))
    res = dyn.resources.get(api_version=api_version, kind=kind)
    ns = {"namespace": "default"} if namespaced else {}
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "obj-1", "labels": {"tier": "a"}, **ns}}
    body.update(json.loads(json.dumps(extra)))
    created = res.create(body=body, **ns)
    meta = created.metadata
    assert meta.name == "obj-1" and meta.uid and meta.creationTimestamp and int(meta.resourceVersion) > 0
    assert created.kind == kind and created.apiVersion == api_version
    got = res.get(name="obj-1", **ns)
    assert got.metadata.uid == meta.uid
    listed = res.get(**ns)
    assert "obj-1" in [i.metadata.name for i in listed.items]
    assert int(listed.metadata.resourceVersion) >= int(meta.resourceVersion)
    for _attempt in range(10):  # controllers may write status in between: read-modify-write with retry on 409, like any client
        replaced_body = res.get(name="obj-1", **ns).to_dict()
        replaced_body["metadata"]["annotations"] = {"replaced": "yes"}
        try:
            replaced = res.replace(body=replaced_body, **ns)
            break
        except ApiException as err:
            assert err.status == 409
    else:
        raise AssertionError("replace kept conflicting")
    assert replaced.metadata.annotations["replaced"] == "yes"
    assert int(replaced.metadata.resourceVersion) > int(meta.resourceVersion)
    patched = res.patch(name="obj-1", body={"metadata": {"labels": {"tier": "b"}}}, content_type="application/merge-patch+json", **ns)
    assert patched.metadata.labels["tier"] == "b" and patched.metadata.annotations["replaced"] == "yes"
    res.delete(name="obj-1", **ns)
    if kind == "Namespace":  # namespaces terminate through the namespace controller
        return
    with pytest.raises(ApiException) as exc:
        res.get(name="obj-1", **ns)
    assert exc.value.status == 404


def test_events_are_shared_between_core_and_events_api(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    core.create_namespaced_event("default", {"metadata": {"name": "ev1"}, "involvedObject": {"kind": "Node", "name": "n1"},
                                             "reason": "Rebooted", "message": "node rebooted", "type": "Warning"})
    new = client.EventsV1Api(k8s_client).read_namespaced_event("ev1", "default")
    assert new.note == "node rebooted" and new.regarding.name == "n1" and new.reason == "Rebooted"
    found = core.list_namespaced_event("default", field_selector="involvedObject.name=n1,reason=Rebooted").items
    assert [e.metadata.name for e in found] == ["ev1"]


def test_metadata_bookkeeping_generate_name_generation_and_global_resource_version(k8s_client):  # pylint: disable=redefined-outer-name
    apps = client.AppsV1Api(k8s_client)
    dep = apps.create_namespaced_deployment("default", {"metadata": {"generateName": "web-"}, "spec": {
        "replicas": 0, "selector": {"matchLabels": {"app": "w"}}, "template": {"metadata": {"labels": {"app": "w"}}, "spec": _POD_SPEC}}})
    assert dep.metadata.name.startswith("web-") and len(dep.metadata.name) == 9
    assert dep.metadata.generation == 1 and dep.spec.strategy.type == "RollingUpdate"
    cm = client.CoreV1Api(k8s_client).create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert int(cm.metadata.resource_version) > int(dep.metadata.resource_version)
    dep2 = apps.patch_namespaced_deployment(dep.metadata.name, "default", {"spec": {"replicas": 0, "paused": True}})
    assert dep2.metadata.generation == 2
    dep3 = apps.patch_namespaced_deployment(dep.metadata.name, "default", {"metadata": {"labels": {"x": "y"}}})
    assert dep3.metadata.generation == 2


def _status(exc: ApiException) -> dict:
    return json.loads(exc.body)


def test_not_found_status_names_resource_and_object(k8s_client):  # pylint: disable=redefined-outer-name
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(k8s_client).read_node("ghost")
    body = _status(exc.value)
    assert exc.value.status == 404
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": 'nodes "ghost" not found',
                    "reason": "NotFound", "details": {"name": "ghost", "kind": "nodes"}, "code": 404}
    with pytest.raises(ApiException) as exc:
        client.AppsV1Api(k8s_client).read_namespaced_deployment("nope", "default")
    assert _status(exc.value)["message"] == 'deployments.apps "nope" not found'


def test_already_exists_and_stale_resource_version_conflict(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}, "data": {"a": "1"}})
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}})
    assert exc.value.status == 409 and _status(exc.value)["reason"] == "AlreadyExists"
    assert _status(exc.value)["message"] == 'configmaps "cfg" already exists'
    core.patch_namespaced_config_map("cfg", "default", {"data": {"a": "2"}})
    stale = first.to_dict()
    stale["data"] = {"a": "3"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("cfg", "default", client.V1ConfigMap(**{k: stale[k] for k in ("metadata", "data")}))
    body = _status(exc.value)
    assert exc.value.status == 409 and body["reason"] == "Conflict"
    assert body["message"] == ('Operation cannot be fulfilled on configmaps "cfg": the object has been modified; '
                               "please apply your changes to the latest version and try again")
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_config_map("cfg", "default", {"metadata": {"resourceVersion": first.metadata.resource_version}})
    assert exc.value.status == 409


def test_invalid_name_is_422_with_rfc1123_message(k8s_client):  # pylint: disable=redefined-outer-name
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(k8s_client).create_namespaced_pod("default", {"metadata": {"name": "Bad_Name"}, "spec": _POD_SPEC})
    body = _status(exc.value)
    assert exc.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith('Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(k8s_client).create_namespace({"metadata": {"name": "has.dots"}})
    assert exc.value.status == 422 and "RFC 1123 label" in _status(exc.value)["message"]
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(k8s_client).create_namespaced_pod("default", {"metadata": {"name": "nocontainers"}, "spec": {"containers": []}})
    assert exc.value.status == 422 and "spec.containers: Required value" in _status(exc.value)["message"]


def test_bad_requests_are_400(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}})
    assert exc.value.status == 400 and "cannot be handled as a ConfigMap" in _status(exc.value)["message"]
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "x", "namespace": "other"}})
    assert exc.value.status == 400 and "does not match the namespace" in _status(exc.value)["message"]
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("x", "default", {"metadata": {"name": "y"}})
    assert exc.value.status == 400
    req = urllib.request.Request(f"{k8s_emulator.url}/api/v1/namespaces/default/configmaps", data=b"{not json", method="POST",
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(req, timeout=5)  # nosec - local emulator
    assert raw.value.code == 400 and json.loads(raw.value.read())["reason"] == "BadRequest"
    assert k8s_emulator.api_calls("create", "configmaps") >= 2


def test_missing_and_terminating_namespace(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("missing", {"metadata": {"name": "x"}})
    assert exc.value.status == 404 and _status(exc.value)["message"] == 'namespaces "missing" not found'
    core.create_namespace({"metadata": {"name": "doomed"}})
    # the finalizer holds the namespace in Terminating until the test lets go (however slow the machine)
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "x", "finalizers": ["test.dsxos.io/hold"]}})
    k8s_emulator.add_nodes(1)
    core.create_namespaced_pod("doomed", {"metadata": {"name": "p"}, "spec": _POD_SPEC})
    ns = core.delete_namespace("doomed")
    assert ns["status"]["phase"] == "Terminating" and ns["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "y"}})
    assert exc.value.status == 403 and "is being terminated" in _status(exc.value)["message"]
    k8s_emulator.wait_for(lambda: (k8s_emulator.api.find("v1", "ConfigMap", "x", "doomed") or {}).get("metadata", {}).get("deletionTimestamp"),
                          10, what="the namespace purge deleting the held ConfigMap")
    core.patch_namespaced_config_map("x", "doomed", {"metadata": {"finalizers": None}})
    k8s_emulator.wait_for(lambda: k8s_emulator.api.find("v1", "Namespace", "doomed") is None, 10, what="namespace removal")
    assert k8s_emulator.api.list("v1", "ConfigMap", "doomed") == [] and k8s_emulator.api.list("v1", "Pod", "doomed") == []


def test_status_subresource_splits_spec_and_status(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    k8s_emulator.add_nodes(1, name_prefix="gpu-")
    node = core.read_node("gpu-0")
    assert node.status.capacity["nvidia.com/gpu"] == "8"
    updated = core.patch_node("gpu-0", {"status": {"capacity": {"nvidia.com/gpu": "4"}}, "metadata": {"labels": {"a": "b"}}})
    assert updated.status.capacity["nvidia.com/gpu"] == "8" and updated.metadata.labels["a"] == "b"
    updated = core.patch_node_status("gpu-0", {"status": {"capacity": {"nvidia.com/gpu": "4"}}, "metadata": {"labels": {"c": "d"}},
                                               "spec": {"unschedulable": True}})
    # as kube-apiserver's node status strategy (checked by tests/integration/test_emulator_vs_real.py): the spec is kept,
    # labels and annotations pass through
    assert updated.status.capacity["nvidia.com/gpu"] == "4" and updated.metadata.labels["c"] == "d" and not updated.spec.unschedulable


def test_delete_returns_status_and_deletecollection(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    for i in range(3):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}", "labels": {"group": "g" if i < 2 else "h"}}})
    status = core.delete_namespaced_config_map("c2", "default")
    assert status["status"] == "Success" and status["details"]["name"] == "c2" and status["details"]["kind"] == "configmaps"
    core.delete_collection_namespaced_config_map("default", label_selector="group=g")
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == []


def test_scale_subresource(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    k8s_emulator.add_nodes(2)
    apps = client.AppsV1Api(k8s_client)
    k8s_emulator.add_deployment("web", replicas=1)
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 1 and scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3
    k8s_emulator.wait_for(lambda: (apps.read_namespaced_deployment("web", "default").status or client.V1DeploymentStatus()).ready_replicas == 3,
                          10, what="3 ready")
