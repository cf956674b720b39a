# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Criteria -> RecipeResult: overlay selection and order, inheritance, mixins, registry
defaults, disabled components, errors, round-trip and speed."""
from __future__ import annotations

import json
import time

import pytest

from recipe_tree import RecipeTree, standard_tree

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import DependencyError, RecipeResolveError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import Criteria, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import (
    inheritance_chain, matching_overlays, resolve, validate_inheritance)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml, load_yaml_text

H100_EKS_TRAINING = {"service": "eks", "accelerator": "h100", "intent": "training"}


def _store(root):
    return RecipeStore.load([str(root)], include_builtin=False)


@pytest.fixture(name="std_store")
def fixture_std_store(tmp_path):
    standard_tree(tmp_path)
    return _store(tmp_path)


def test_full_resolution(std_store):
    result = resolve(std_store, H100_EKS_TRAINING)
    assert result.criteria == Criteria(service="eks", accelerator="h100", intent="training")
    assert result.applied_overlays == ["base", "eks", "eks-training", "h100-eks-training"]
    assert [(c.name, c.value) for c in result.constraints] == [
        ("K8s.server.version", ">= 1.30"), ("OS.release.ID", "ubuntu")]
    assert result.deployment_order == ["cert-manager", "nfd", "gpu-operator", "tuning"]
    assert [r.name for r in result.component_refs] == result.deployment_order
    gpu = result.component("gpu-operator")
    assert (gpu.source, gpu.chart, gpu.version, gpu.namespace) == (
        "https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0", "gpu-operator")
    assert gpu.values_file == "components/gpu-operator/values-eks.yaml"
    assert gpu.dependency_refs == ["nfd", "cert-manager"]
    assert gpu.overrides == {"driver": {"enabled": True, "version": "580", "rdma": True}, "cdi": {"enabled": True}}
    nfd = result.component("nfd")
    assert nfd.version == "0.18.3"  # recipe version beats the registry default
    assert nfd.chart == "node-feature-discovery"
    cert = result.component("cert-manager")
    assert (cert.chart, cert.namespace, cert.version) == ("cert-manager", "cert-manager", "v1.20.2")
    tuning = result.component("tuning")
    assert tuning.source == "" and tuning.namespace == "skyhook"
    assert sorted(result.validation) == ["deployment", "performance"]
    assert result.validation["performance"].constraints[0].value == ">= 300"
    assert result.metadata["recipeDirs"] == std_store.dirs
    assert result.metadata["warnings"] == []
    assert result.metadata["appliedMixins"] == ["os-ubuntu"]


def test_base_only_when_nothing_matches(std_store):
    result = resolve(std_store, {"service": "aks"})
    assert result.applied_overlays == ["base"]
    assert result.deployment_order == ["nfd", "gpu-operator"]
    assert "no overlay matched" in result.metadata["warnings"][0]


def test_specific_overlay_does_not_match_any_query(std_store):
    assert resolve(std_store, {}).applied_overlays == ["base"]
    assert resolve(std_store, {"intent": "training"}).applied_overlays == ["base"]


def test_overlay_without_base_inherits_base_and_all_matches_apply_by_specificity(tmp_path):
    tree = standard_tree(tmp_path)
    tree.overlay("training", criteria={"intent": "training"},
                 component_refs=[{"name": "nfd", "overrides": {"from": "training"}}])
    tree.overlay("zz-all", criteria={}, component_refs=[{"name": "nfd", "overrides": {"from": "all", "all": True}}])
    tree.overlay("a-nodes", criteria={"service": "eks", "nodes": 8},
                 component_refs=[{"name": "nfd", "overrides": {"from": "nodes"}}])
    store = _store(tmp_path)
    assert inheritance_chain(store, "training") == [store.overlays["training"]]
    result = resolve(store, dict(H100_EKS_TRAINING, nodes=8))
    # specificity: zz-all 0; eks 1, training 1 (name order); a-nodes 2, eks-training 2; h100-eks-training 3
    assert result.applied_overlays == ["base", "zz-all", "eks", "training", "a-nodes", "eks-training",
                                       "h100-eks-training"]
    assert result.component("nfd").overrides == {"from": "nodes", "all": True}
    without_nodes = resolve(store, H100_EKS_TRAINING)
    assert "a-nodes" not in without_nodes.applied_overlays


def test_chain_applied_parent_first_even_if_parent_does_not_match(tmp_path):
    tree = standard_tree(tmp_path)
    tree.overlay("middle", component_refs=[{"name": "nfd", "version": "mid"}])  # no criteria: chain-only
    tree.overlay("leaf", base="middle", criteria={"service": "gke", "os": "ubuntu"})
    store = _store(tmp_path)
    assert [d.name for d in matching_overlays(store, Criteria(service="gke", os="ubuntu"))] == ["gke", "leaf"]
    result = resolve(store, {"service": "gke", "os": "ubuntu"})
    assert result.applied_overlays == ["base", "gke", "middle", "leaf"]
    assert result.component("nfd").version == "mid"


def test_mixin_merged_right_after_its_overlay(tmp_path):
    tree = standard_tree(tmp_path)
    tree.mixin("pin", constraints=[{"name": "OS.release.ID", "value": "rhel"}],
               component_refs=[{"name": "nfd", "version": "from-mixin", "overrides": {"m": 1}}])
    tree.overlay("eks", criteria={"service": "eks"}, mixins=["pin"],
                 constraints=[{"name": "K8s.server.version", "value": ">= 1.30"}])
    tree.overlay("eks-training", base="eks", criteria={"service": "eks", "intent": "training"},
                 component_refs=[{"name": "nfd", "version": "from-leaf"}])
    store = _store(tmp_path)
    result = resolve(store, {"service": "eks", "intent": "training"})
    assert result.component("nfd").version == "from-leaf"  # the later overlay beats the earlier mixin
    assert result.component("nfd").overrides == {"m": 1}
    eks_only = resolve(store, {"service": "eks"})
    assert eks_only.component("nfd").version == "from-mixin"  # the mixin beats the overlay's parents
    assert eks_only.metadata["appliedMixins"] == ["pin"]


def test_missing_mixin_is_error(tmp_path):
    tree = standard_tree(tmp_path)
    path = tree.overlay("eks", criteria={"service": "eks"}, mixins=["nope"])
    with pytest.raises(RecipeResolveError) as err:
        resolve(_store(tmp_path), {"service": "eks"})
    assert "'nope'" in str(err.value) and path in str(err.value) and "spec.mixins" in str(err.value)
    with pytest.raises(RecipeResolveError):
        validate_inheritance(_store(tmp_path))


def test_missing_base_names_overlay_file_and_name(tmp_path):
    tree = standard_tree(tmp_path)
    path = tree.overlay("gke", base="gke-common", criteria={"service": "gke"})
    store = _store(tmp_path)
    with pytest.raises(RecipeResolveError) as err:
        resolve(store, {"service": "gke"})
    msg = str(err.value)
    assert path in msg and "'gke-common'" in msg and "spec.base" in msg
    assert resolve(store, {"service": "eks"}).applied_overlays[-1] == "eks"  # unrelated criteria still resolve
    with pytest.raises(RecipeResolveError):
        validate_inheritance(store)


def test_inheritance_cycle_prints_chain(tmp_path):
    tree = standard_tree(tmp_path)
    tree.overlay("a", base="b", criteria={"service": "gke"})
    tree.overlay("b", base="c")
    tree.overlay("c", base="a")
    with pytest.raises(RecipeResolveError) as err:
        resolve(_store(tmp_path), {"service": "gke"})
    assert "a -> b -> c -> a" in str(err.value)


def test_validate_inheritance_accepts_clean_tree(std_store):
    validate_inheritance(std_store)


def test_unknown_dependency_ref_names_component_ref_and_file(tmp_path):
    tree = standard_tree(tmp_path)
    path = tree.overlay("gke", criteria={"service": "gke"},
                        component_refs=[{"name": "nfd", "dependencyRefs": ["cert-manger"]}])
    with pytest.raises(DependencyError) as err:
        resolve(_store(tmp_path), {"service": "gke"})
    msg = str(err.value)
    assert "'nfd'" in msg and "'cert-manger'" in msg and path in msg


def test_dependency_cycle_in_recipe(tmp_path):
    tree = standard_tree(tmp_path)
    tree.overlay("gke", criteria={"service": "gke"}, component_refs=[{"name": "nfd", "dependencyRefs": ["gpu-operator"]}])
    with pytest.raises(DependencyError) as err:
        resolve(_store(tmp_path), {"service": "gke"})
    assert "gpu-operator -> nfd -> gpu-operator" in str(err.value)


def test_disabled_components(tmp_path):
    tree = standard_tree(tmp_path)
    tree.overlay("gke", criteria={"service": "gke"}, component_refs=[{"name": "nfd", "overrides": {"enabled": False}}])
    store = _store(tmp_path)
    result = resolve(store, {"service": "gke"})
    assert result.deployment_order == ["gpu-operator"]
    assert result.component("gpu-operator").dependency_refs == []
    assert result.component("nfd").enabled is False
    assert [r.name for r in result.component_refs] == ["gpu-operator", "nfd"]
    assert any("'nfd'" in w and "disabled" in w for w in result.metadata["warnings"])
    assert result.metadata["disabledComponents"] == ["nfd"]
    by_arg = resolve(store, H100_EKS_TRAINING, disabled=["cert-manager", "unknown"])
    assert by_arg.deployment_order == ["nfd", "gpu-operator", "tuning"]
    assert by_arg.component("gpu-operator").dependency_refs == ["nfd"]
    assert any("'unknown'" in w for w in by_arg.metadata["warnings"])


def test_component_without_registry_entry_or_source_is_error(tmp_path):
    tree = standard_tree(tmp_path)
    path = tree.overlay("gke", criteria={"service": "gke"}, component_refs=[{"name": "mystery", "type": "Helm"}])
    with pytest.raises(RecipeResolveError) as err:
        resolve(_store(tmp_path), {"service": "gke"})
    assert "'mystery'" in str(err.value) and "registry" in str(err.value) and path in str(err.value)


def test_defaults_without_registry_namespace_and_kustomize(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.registry([
        {"name": "kz", "kustomize": {"defaultSource": "https://github.com/x/y", "defaultPath": "deploy",
                                     "defaultTag": "v1"}},
        {"name": "plain", "helm": {"defaultRepository": "oci://ghcr.io/x"}},
    ])
    tree.base(component_refs=[
        {"name": "kz"},
        {"name": "plain", "type": "Helm", "chart": "repo/plain-chart"},
        {"name": "direct", "type": "Helm", "source": "https://charts.example.com", "version": "1.2"},
    ])
    result = resolve(_store(tmp_path), {})
    kz = result.component("kz")
    assert (kz.type, kz.source, kz.path, kz.tag, kz.namespace) == ("Kustomize", "https://github.com/x/y", "deploy", "v1", "kz")
    plain = result.component("plain")
    assert (plain.chart, plain.namespace, plain.version) == ("plain-chart", "plain", "")
    direct = result.component("direct")
    assert (direct.chart, direct.namespace) == ("direct", "direct")


def test_round_trip_yaml_and_json(std_store):
    result = resolve(std_store, H100_EKS_TRAINING, disabled=["nfd"])
    assert RecipeResult.from_dict(result.to_dict()) == result
    assert RecipeResult.from_dict(load_yaml_text(dump_yaml(result.to_dict()))) == result
    assert RecipeResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_resolve_does_not_mutate_store(std_store):
    first = resolve(std_store, H100_EKS_TRAINING).to_dict()
    resolve(std_store, {"service": "eks"})
    assert resolve(std_store, H100_EKS_TRAINING).to_dict() == first
    assert std_store.overlays["base"].spec["componentRefs"][1]["overrides"] == {"driver": {"enabled": True, "version": "580"}}


def test_resolve_with_150_overlays_is_fast(tmp_path):
    tree = standard_tree(tmp_path)
    services = ["eks", "gke", "aks", "oke", "kind"]
    accels = ["h100", "h200", "gb200", "b200", "a100", "l40s"]
    oses = ["ubuntu", "rhel", "cos", "talos", "sles"]
    count = 0
    for service in services:
        for accel in accels:
            for os_name in oses:
                tree.overlay("%s-%s-%s" % (accel, service, os_name),
                             criteria={"service": service, "accelerator": accel, "os": os_name},
                             component_refs=[{"name": "gpu-operator", "overrides": {"tag": "%s-%s" % (accel, os_name)}}])
                count += 1
    assert count == 150
    store = _store(tmp_path)
    resolve(store, {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"})
    start = time.perf_counter()
    for _round in range(20):
        result = resolve(store, {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"})
    per_call = (time.perf_counter() - start) / 20
    assert result.component("gpu-operator").overrides["tag"] == "h100-ubuntu"
    assert per_call < 0.02, "resolve took %.1f ms" % (per_call * 1000)
