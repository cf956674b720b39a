# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_render's AICR bundle options end to end: node scheduling at the registry paths, ``set`` overrides and
``enabled=false`` in every deployer, manifest-only components without a namespace."""
from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER, RECIPE_RESOLVE

from recipe_tree import RecipeTree, helm_entry

CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}
ARGO = {"repo_url": "https://git.example.com/ops/bundles.git", "revision": "v1"}


def params(entry_point, **given):
    out = {name: option.get("default") for name, option in entry_point.spec.items()}
    out.update(given)
    return out


@pytest.fixture(scope="module")
def recipe():
    return entry.run_resolve(params(RECIPE_RESOLVE, criteria=CRITERIA))["recipe"]


def _values(dest, name):
    with open(os.path.join(dest, name, "values.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_default_scheduling_tolerates_everything_and_sets_no_selector(tmp_path, recipe):
    out = entry.run_render(params(BUNDLE_RENDER, recipe=recipe, dest=str(tmp_path)))
    gpu = _values(str(tmp_path), "gpu-operator")
    assert gpu["daemonsets"]["tolerations"] == [{"operator": "Exists"}]
    assert gpu["operator"]["tolerations"] == [{"operator": "Exists"}]
    assert "nodeSelector" not in gpu["daemonsets"] and "nodeSelector" not in gpu.get("operator", {})
    assert out["scheduling"]["accelerated_node_tolerations"] == [{"operator": "Exists"}]


def test_explicit_scheduling_lands_at_registry_paths(tmp_path, recipe):
    entry.run_render(params(
        BUNDLE_RENDER, recipe=recipe, dest=str(tmp_path),
        system_node_selector={"nodeGroup": "system"}, system_node_tolerations=["dedicated=system:NoSchedule"],
        accelerated_node_selector={"nvidia.com/gpu.present": "true"},
        accelerated_node_tolerations=["nvidia.com/gpu=present:NoSchedule", {"key": "x", "operator": "Exists"}]))
    dest = str(tmp_path)
    gpu = _values(dest, "gpu-operator")
    system_tol = [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}]
    accel_tol = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                 {"key": "x", "operator": "Exists"}]
    assert gpu["operator"]["nodeSelector"] == {"nodeGroup": "system"} and gpu["operator"]["tolerations"] == system_tol
    assert gpu["daemonsets"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert gpu["daemonsets"]["tolerations"] == accel_tol
    nfd = _values(dest, "nfd")
    assert nfd["master"]["nodeSelector"] == {"nodeGroup": "system"} and "nodeSelector" not in nfd.get("worker", {})
    assert nfd["worker"]["tolerations"] == accel_tol  # accelerated is written after system: it wins on shared paths
    assert _values(dest, "cert-manager")["webhook"]["nodeSelector"] == {"nodeGroup": "system"}
    assert _values(dest, "kai-scheduler")["global"]["tolerations"] == system_tol


def test_precedence_set_then_scheduling_then_values_overrides(tmp_path, recipe):
    entry.run_render(params(
        BUNDLE_RENDER, recipe=recipe, dest=str(tmp_path), accelerated_node_selector={"pool": "gpu"},
        set=["gpu-operator:daemonsets.nodeSelector.zone=a", "gpuoperator:driver.version='570'",
             "gpu-operator:operator.tolerations=none"],
        values_overrides={"gpu-operator": {"operator": {"nodeSelector": {"pinned": "yes"}}}},
        system_node_selector={"pool": "system"}))
    gpu = _values(str(tmp_path), "gpu-operator")
    assert gpu["daemonsets"]["nodeSelector"] == {"pool": "gpu"}  # injection replaces a selector `set` wrote into
    assert gpu["driver"]["version"] == "570"  # an alias (registry valueOverrideKeys) reaches the component
    assert gpu["operator"]["tolerations"] == [{"operator": "Exists"}]  # a scalar `set` there is replaced by tolerations
    assert gpu["operator"]["nodeSelector"] == {"pool": "system", "pinned": "yes"}  # values_overrides merge last


@pytest.mark.parametrize("deployer, options", [("helm", {}), ("argocd", ARGO), ("flux", {})])
def test_enabled_false_drops_component_everywhere(tmp_path, recipe, deployer, options):
    out = entry.run_render(params(BUNDLE_RENDER, recipe=recipe, dest=str(tmp_path), deployer=deployer,
                                  deployer_options=options, set=["cert-manager:enabled=false"]))
    files = out["files"]
    assert not any(f.startswith("cert-manager/") or f == "applications/cert-manager.yaml" for f in files)
    assert "cert-manager" not in [c["name"] for c in out["components"]]
    assert out["disabled_components"] == ["cert-manager"]
    with open(os.path.join(str(tmp_path), "recipe.yaml"), encoding="utf-8") as handle:
        kept = yaml.safe_load(handle)
    assert "cert-manager" not in kept["deploymentOrder"]
    assert all("cert-manager" not in (ref.get("dependencyRefs") or []) for ref in kept["componentRefs"])
    assert [ref for ref in kept["componentRefs"] if ref["name"] == "cert-manager"][0]["enabled"] is False
    text = "".join(open(os.path.join(str(tmp_path), f), encoding="utf-8").read() for f in files
                   if f.endswith((".sh", ".yaml")) and f != "recipe.yaml")
    assert "jetstack" not in text
    if deployer == "helm":
        with open(os.path.join(str(tmp_path), "deploy.sh"), encoding="utf-8") as handle:
            assert "cert-manager" not in handle.read()


def test_dependents_of_a_dropped_component_warn(tmp_path):
    tree = RecipeTree(tmp_path / "recipes")
    tree.registry([helm_entry("base-crds", namespace="crds"), helm_entry("app", namespace="apps")])
    tree.base(component_refs=[{"name": "base-crds"}, {"name": "app", "dependencyRefs": ["base-crds"]}])
    recipe = entry.run_resolve(params(RECIPE_RESOLVE, recipe_dirs=[tree.root], include_builtin=False))["recipe"]
    out = entry.run_render(params(BUNDLE_RENDER, recipe=recipe, dest=str(tmp_path / "b"), recipe_dirs=[tree.root],
                                  include_builtin=False, set=["base-crds:enabled=false"]))
    assert [c["name"] for c in out["components"]] == ["app"]
    assert any("'app' depends on 'base-crds'" in w and "outside the bundle" in w for w in out["warnings"])


def test_bad_set_fails_the_task_naming_the_entry(tmp_path, recipe):
    result = call_entry(BUNDLE_RENDER, params(BUNDLE_RENDER, recipe=recipe, dest=str(tmp_path), set=["gpu-operator:a..b=1"]),
                        False, False)
    assert result["failed"] is True and "gpu-operator:a..b=1" in result["msg"] and "empty segment" in result["msg"]
    result = call_entry(BUNDLE_RENDER, params(BUNDLE_RENDER, recipe=recipe, dest=str(tmp_path),
                                              accelerated_node_tolerations=["nvidia.com/gpu=present:Never"]), False, False)
    assert result["failed"] is True and "accelerated_node_tolerations" in result["msg"] and "Never" in result["msg"]
    assert not os.listdir(str(tmp_path))


def test_manifest_only_component_without_namespace(tmp_path):
    tree = RecipeTree(tmp_path / "recipes")
    tree.registry([{"name": "sysctl", "displayName": "sysctl", "helm": {"defaultRepository": ""}},
                   helm_entry("chart", namespace="apps")])
    tree.manifest("sysctl", "ds.yaml", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: sysctl\n"
                  "  namespace: kube-system\nspec: {}\n")
    tree.manifest("chart", "extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: other\n")
    tree.base(component_refs=[{"name": "sysctl", "manifestFiles": ["components/sysctl/manifests/ds.yaml"]},
                              {"name": "chart", "manifestFiles": ["components/chart/manifests/extra.yaml"]}])
    recipe = entry.run_resolve(params(RECIPE_RESOLVE, recipe_dirs=[tree.root], include_builtin=False))["recipe"]
    assert [ref["name"] for ref in recipe["componentRefs"] if not ref.get("namespace")] == ["sysctl"]
    common = dict(recipe=recipe, recipe_dirs=[tree.root], include_builtin=False)
    helm = tmp_path / "helm"
    out = entry.run_render(params(BUNDLE_RENDER, dest=str(helm), **common))
    assert "sysctl/namespace.yaml" not in out["files"]
    script = (helm / "deploy.sh").read_text(encoding="utf-8")
    assert "kubectl apply -f sysctl/manifests/" in script and "-n sysctl" not in script
    assert "kubectl apply -f chart/manifests/" in script  # a manifest declaring another namespace: no -n apps
    assert "--namespace apps" in script
    assert "kubectl delete -f sysctl/manifests/" in (helm / "undeploy.sh").read_text(encoding="utf-8")
    argo = tmp_path / "argo"
    entry.run_render(params(BUNDLE_RENDER, dest=str(argo), deployer="argocd", deployer_options=ARGO, **common))
    app = yaml.safe_load((argo / "applications" / "sysctl.yaml").read_text(encoding="utf-8"))
    assert "namespace" not in app["spec"]["destination"]
    flux = tmp_path / "flux"
    entry.run_render(params(BUNDLE_RENDER, dest=str(flux), deployer="flux", **common))
    namespaces = (flux / "namespaces.yaml").read_text(encoding="utf-8")
    assert "sysctl" not in namespaces and "apps" in namespaces
