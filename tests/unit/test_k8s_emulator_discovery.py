# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Discovery documents of the emulator, read through the official kubernetes client (typed and dynamic)."""
from __future__ import annotations

import json
import urllib.request

from kubernetes import client, dynamic

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)


def _get(url: str, accept: str = "application/json") -> tuple[int, str, dict]:
    req = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(req, timeout=5) as resp:  # nosec - local emulator
        return resp.status, resp.headers.get("Content-Type", ""), json.loads(resp.read())


def _get_doc(url: str) -> dict:
    return _get(url)[2]


def test_version_reports_configured_git_version(k8s_client):  # pylint: disable=redefined-outer-name
    info = client.VersionApi(k8s_client).get_code()
    assert info.git_version == "v1.31.4-eks-2a8d8e5"
    assert info.major == "1" and info.minor == "31+"


def test_core_resource_list_has_verbs_scope_shortnames_and_subresources(k8s_emulator):  # pylint: disable=redefined-outer-name
    doc = _get_doc(f"{k8s_emulator.url}/api/v1")
    by_name = {r["name"]: r for r in doc["resources"]}
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "v1"
    assert by_name["pods"]["namespaced"] is True and by_name["pods"]["kind"] == "Pod" and "po" in by_name["pods"]["shortNames"]
    assert by_name["nodes"]["namespaced"] is False and "watch" in by_name["nodes"]["verbs"]
    assert by_name["pods/eviction"] == {"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
                                        "version": "v1", "kind": "Eviction", "verbs": ["create"]}
    for sub in ("pods/log", "pods/status", "nodes/status"):
        assert sub in by_name, sub


def test_api_groups_list_and_group_versions(k8s_emulator):  # pylint: disable=redefined-outer-name
    groups = _get_doc(f"{k8s_emulator.url}/apis")
    names = {g["name"]: g for g in groups["groups"]}
    for group in ("apps", "batch", "policy", "coordination.k8s.io", "events.k8s.io", "argoproj.io", "helm.toolkit.fluxcd.io"):
        assert group in names, group
    assert names["helm.toolkit.fluxcd.io"]["preferredVersion"]["groupVersion"] == "helm.toolkit.fluxcd.io/v2"
    apps = _get_doc(f"{k8s_emulator.url}/apis/apps/v1")
    assert {"deployments", "deployments/scale", "replicasets", "statefulsets", "daemonsets"} <= {r["name"] for r in apps["resources"]}
    group = _get_doc(f"{k8s_emulator.url}/apis/policy")
    assert group["kind"] == "APIGroup" and group["versions"][0]["version"] == "v1"


def test_aggregated_discovery_accept_gets_legacy_document(k8s_emulator):  # pylint: disable=redefined-outer-name
    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
    status, ctype, doc = _get(f"{k8s_emulator.url}/apis", accept)
    assert status == 200 and ctype == "application/json" and doc["kind"] == "APIGroupList"


def test_unknown_group_version_is_404(k8s_emulator):  # pylint: disable=redefined-outer-name
    try:
        _get(f"{k8s_emulator.url}/apis/nope.example.com/v1")
    except urllib.error.HTTPError as err:
        body = json.loads(err.read())
        assert err.code == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"
    else:
        raise AssertionError("expected 404")


def test_dynamic_client_discovers_builtin_and_custom_kinds(k8s_emulator, k8s_client, tmp_path):  # pylint: disable=redefined-outer-name
    k8s_emulator.add_nodes(2, "gb200-eks")
    dyn = dynamic.DynamicClient(k8s_client, cache_file=str(tmp_path / "discovery.json"))
    nodes = dyn.resources.get(api_version="v1", kind="Node").get()
    assert len(nodes.items) == 2
    assert nodes.items[0].metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-GB200"
    hr = dyn.resources.get(api_version="helm.toolkit.fluxcd.io/v2", kind="HelmRelease")
    assert hr.namespaced and hr.name == "helmreleases"
    pdb = dyn.resources.get(api_version="policy/v1", kind="PodDisruptionBudget")
    assert "pdb" in pdb.short_names
    assert dyn.resources.get(api_version="v1", kind="Pod").subresources["eviction"].kind == "Eviction"


def test_registered_crd_kind_is_discoverable_and_crd_object_registers_kind(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    k8s_emulator.register_crd("nvidia.com", "v1", "ClusterPolicy", namespaced=False)
    doc = _get_doc(f"{k8s_emulator.url}/apis/nvidia.com/v1")
    assert doc["resources"][0]["name"] == "clusterpolicies" and doc["resources"][0]["namespaced"] is False
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "nicclusterpolicies.mellanox.com"},
           "spec": {"group": "mellanox.com", "scope": "Cluster",
                    "names": {"plural": "nicclusterpolicies", "kind": "NicClusterPolicy", "singular": "nicclusterpolicy"},
                    "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}}}]}}
    client.ApiextensionsV1Api(k8s_client).create_custom_resource_definition(crd)
    objs = client.CustomObjectsApi(k8s_client)
    objs.create_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies",
                                      {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"}})
    got = objs.get_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy")
    assert got["metadata"]["uid"]
    k8s_emulator.wait_for(lambda: any(c["type"] == "Established" for c in
                                      (k8s_emulator.api.get("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                                            "nicclusterpolicies.mellanox.com").get("status") or {}).get("conditions", [])),
                          5, what="CRD Established")
