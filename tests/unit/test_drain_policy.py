# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Pod filtering, protected namespaces and PDB refusal parsing of the drain (pure logic)."""
from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import (
    BLOCK, CATALOG_NAMESPACES, DEFAULT_PROTECTED_NAMESPACES, EVICT, SKIP, WAIT, DrainPolicy, classify_pod, parse_eviction_refusal,
    pod_requests_gpu,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pod(name: str = "p", namespace: str = "team", owner: str | None = "ReplicaSet", gpu: Any = None, phase: str = "Running",
        annotations: Any = None, volumes: Any = None, deleting: bool = False, init_gpu: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "annotations": dict(annotations or {})}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "owner", "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    container: dict[str, Any] = {"name": "main"}
    if gpu is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpu}}
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 30}
    if init_gpu is not None:
        spec["initContainers"] = [{"name": "init", "resources": {"requests": {"nvidia.com/mig-1g.10gb": init_gpu}}}]
    if volumes:
        spec["volumes"] = volumes
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def test_kubectl_like_skips():
    policy = DrainPolicy()
    assert classify_pod(pod(owner="DaemonSet"), policy).action == SKIP
    assert classify_pod(pod(annotations={"kubernetes.io/config.mirror": "abc"}, owner=None), policy).action == SKIP
    for phase in ("Succeeded", "Failed"):
        decision = classify_pod(pod(phase=phase), policy)
        assert decision.action == SKIP and phase in decision.reason
    decision = classify_pod(pod(namespace="gpu-operator"), policy)
    assert decision.action == SKIP and "protected namespace gpu-operator" in decision.reason
    assert classify_pod(pod(deleting=True), policy).action == WAIT
    assert classify_pod(pod(), policy).action == EVICT


def test_unmanaged_and_emptydir_block_unless_forced():
    strict = DrainPolicy()
    bare = classify_pod(pod(owner=None), strict)
    assert bare.action == BLOCK and "force=true" in bare.reason and "team/p" in bare.reason
    local = classify_pod(pod(volumes=[{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}]), strict)
    assert local.action == BLOCK and "scratch" in local.reason and "cfg" not in local.reason and "delete_emptydir_data" in local.reason
    both = classify_pod(pod(owner=None, volumes=[{"name": "scratch", "emptyDir": {}}]), strict)
    assert "force" in both.reason and "emptyDir" in both.reason
    lenient = DrainPolicy.build(force=True, delete_emptydir_data=True)
    decision = classify_pod(pod(owner=None, volumes=[{"name": "scratch", "emptyDir": {}}]), lenient)
    assert decision.action == EVICT and len(decision.notes) == 2


def test_gpu_pods_only_and_gpu_detection():
    policy = DrainPolicy.build(gpu_pods_only=True)
    assert classify_pod(pod(gpu=None), policy).action == SKIP
    assert classify_pod(pod(gpu="0"), policy).action == SKIP
    assert classify_pod(pod(gpu="8"), policy).action == EVICT
    assert pod_requests_gpu(pod(init_gpu="1"))
    assert not pod_requests_gpu(pod(gpu=0))


def test_extra_and_disabled_protection():
    policy = DrainPolicy.build(["batch-critical"])
    assert classify_pod(pod(namespace="batch-critical"), policy).action == SKIP
    assert classify_pod(pod(namespace="kube-system"), policy).action == SKIP
    unprotected = DrainPolicy.build(protect_defaults=False)
    assert classify_pod(pod(namespace="monitoring"), unprotected).action == EVICT


def test_protected_namespaces_follow_the_catalog():
    """The constant equals the namespaces of every component of every leaf recipe of the built-in catalog (resolved by the
    recipe engine; modules cannot do this at run time: AnsiballZ ships module_utils, not the recipes) and the catalog doc."""
    store = RecipeStore.load([], include_builtin=True)
    bases = {doc.base for doc in store.overlays.values() if doc.base}
    leaves = [name for name in store.overlays if name not in bases and name != "base"]
    assert len(leaves) >= 5
    installed = {ref.namespace for name in leaves for ref in resolve(store, store.overlays[name].criteria).component_refs}
    assert installed == set(CATALOG_NAMESPACES)
    with open(os.path.join(REPO, "docs", "catalog.md"), encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("<!-- namespaces:start -->", 1)[1].split("<!-- namespaces:end -->", 1)[0]
    assert set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE)) == set(CATALOG_NAMESPACES)
    assert set(CATALOG_NAMESPACES) | {"kube-system", "kai-resource-reservation"} == set(DEFAULT_PROTECTED_NAMESPACES)


def test_pdb_refusal_names_the_budget():
    status = {"kind": "Status", "code": 429, "reason": "TooManyRequests",
              "message": "Cannot evict pod as it would violate the pod's disruption budget.",
              "details": {"causes": [{"reason": "DisruptionBudget",
                                      "message": "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}]}}
    refusal = parse_eviction_refusal(429, json.dumps(status))
    assert refusal.kind == "pdb" and refusal.pdb == "web-pdb" and refusal.needs == 2 and refusal.has == 2 and refusal.retryable
    assert refusal.describe() == "blocked by PodDisruptionBudget web-pdb (needs 2 healthy, has 2)"
    processing = dict(status, details={"causes": [{"reason": "DisruptionBudget",
                                                   "message": "The disruption budget train is still being processed by the server."}]})
    assert parse_eviction_refusal(429, processing).pdb == "train"
    bare = parse_eviction_refusal(429, {"message": "Cannot evict pod as it would violate the pod's disruption budget."})
    assert bare.kind == "pdb" and bare.pdb is None


def test_other_refusals():
    multiple = parse_eviction_refusal(500, {"message": "This pod has more than one PodDisruptionBudget, which the eviction "
                                                       "subresource does not support."})
    assert multiple.kind == "multiple_pdbs" and not multiple.retryable
    throttled = parse_eviction_refusal(429, {"message": "Too many requests, please try again later.", "details": {"retryAfterSeconds": 1}})
    assert throttled.kind == "throttled"
    assert parse_eviction_refusal(500, {"message": "etcd timeout"}) is None
    assert parse_eviction_refusal(403, b'{"message": "forbidden"}') is None
    assert parse_eviction_refusal(429, "not json at all").kind == "throttled"


@pytest.mark.parametrize("value,expected", [("1", True), ("0", False), ("500m", True), (2, True), ("0m", False)])
def test_gpu_quantities(value, expected):
    assert pod_requests_gpu(pod(gpu=value)) is expected


def _on(node: str, **kwargs: Any) -> dict[str, Any]:
    out = pod(**kwargs)
    out["spec"]["nodeName"] = node
    return out


def test_a_partial_drain_evicts_only_the_pods_mapped_to_the_faulty_gpu():
    policy = DrainPolicy.build(gpu_pods_only=True).with_mapped_pods({"gpu-a": [("team", "on-gpu-3")], "gpu-b": []})
    assert policy.mapped_nodes == frozenset({"gpu-a"}), "a node mapped to no pod follows gpu_pods_only"
    assert classify_pod(_on("gpu-a", name="on-gpu-3", gpu=1), policy).action == EVICT
    other = classify_pod(_on("gpu-a", name="on-gpu-5", gpu=1), policy)
    assert other.action == SKIP and "not mapped to the faulty GPU" in other.reason
    assert classify_pod(_on("gpu-a", name="on-gpu-3", namespace="gpu-operator", gpu=1), policy).action == SKIP, "protected stays"
    assert classify_pod(_on("gpu-b", name="any", gpu=1), policy).action == EVICT
    assert classify_pod(_on("gpu-b", name="cpu-only"), policy).action == SKIP
    assert classify_pod(_on("gpu-c", name="on-gpu-3", gpu=1), policy).action == EVICT, "the same name on another node: gpu_pods_only"


@settings(max_examples=200, deadline=None)
@given(pods=st.lists(st.tuples(st.sampled_from(["gpu-a", "gpu-b", "gpu-c"]), st.sampled_from(["team", "ml"]),
                               st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True), st.booleans()), max_size=25,
                     unique_by=lambda p: (p[1], p[2])),
       mapping=st.dictionaries(st.sampled_from(["gpu-a", "gpu-b", "gpu-c"]),
                               st.lists(st.tuples(st.sampled_from(["team", "ml"]), st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)),
                                        max_size=4)))
def test_a_partial_drain_evicts_exactly_the_mapped_pods_or_every_gpu_pod_of_an_unmapped_node(pods, mapping):
    policy = DrainPolicy.build(gpu_pods_only=True).with_mapped_pods(mapping)
    for node, namespace, name, gpu in pods:
        action = classify_pod(_on(node, name=name, namespace=namespace, gpu=1 if gpu else None), policy).action
        mapped = mapping.get(node, [])
        expected = (namespace, name) in mapped if mapped else gpu
        assert (action == EVICT) is expected, (node, namespace, name, gpu, mapping)


def test_pod_refs_name_the_bad_field():
    from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import pod_refs  # pylint: disable=import-outside-toplevel
    assert pod_refs([{"namespace": "ml", "name": "train-0"}], "only_pods") == (("ml", "train-0"),)
    assert pod_refs(None) == ()
    for bad, where in (([{"namespace": "ml", "name": "Train_0"}], "only_pods[0].name"), (["ml/train-0"], "only_pods[0]"),
                       ([{"namespace": "ml\n", "name": "a"}], "only_pods[0].namespace"), ("ml/train-0", "only_pods")):
        with pytest.raises(K8sInvalidName, match=re.escape(where)):
            pod_refs(bad, "only_pods")
