# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""An AICR-layout tree written in the upstream style (``fixtures/aicr_upstream_style``: Go-template manifests,
``nodeScheduling``/``podScheduling``/``valueOverrideKeys`` in the registry, mixins, a criteria-wildcard overlay,
manifest-only components, one ``*.j2`` manifest) resolved and rendered through the modules' entry points with the
helm, argocd and flux deployers, with and without the bundle's scheduling options and ``set`` overrides. Every object
of every bundle is validated (kubernetes-validate, the shared CRD schemas); checksums verify; a second render of the
same inputs changes nothing."""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import (
    is_jinja_manifest, template_environment)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER, BUNDLE_VERIFY, RECIPE_RESOLVE
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template import compile_go_template

from manifest_validation import validate_objects

TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "aicr_upstream_style")
CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}
LEAF = "h100-eks-ubuntu-training"
DEPLOYERS = ("helm", "argocd", "flux")
OCI_URL = "oci://registry.example.com/bundles/h100-eks"
DEPLOYER_OPTIONS: Dict[str, Dict[str, Any]] = {
    "helm": {},
    "argocd": {"repo_url": "https://git.example.com/ops/bundles.git", "revision": "main", "path": "clusters/a"},
    "flux": {"values_from": "configmap", "oci_url": OCI_URL, "oci_ref": "v1"},
}

SYSTEM_SELECTOR = {"node-role.example.com/system": "true"}
ACCEL_SELECTOR = {"nvidia.com/gpu.present": "true"}
WORKLOAD_SELECTOR = {"example.com/workload": "training"}
GATE_TAINT = "example.com/node-prep=pending:NoSchedule"
SYSTEM_TOL = [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}]
ACCEL_TOL = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
DEFAULT_TOL = [{"operator": "Exists"}]
#: the bundle_render options of the "scheduled" variant (bundle_render's own option names)
SCHEDULED: Dict[str, Any] = {
    "system_node_selector": SYSTEM_SELECTOR,
    "system_node_tolerations": ["dedicated=system:NoSchedule"],
    "accelerated_node_selector": ACCEL_SELECTOR,
    "accelerated_node_tolerations": ["nvidia.com/gpu:NoSchedule"],
    "workload_gate_taint": GATE_TAINT,
    "workload_selector": WORKLOAD_SELECTOR,
    "nodes": 16,
    # aliases from the registry's valueOverrideKeys; '...' keeps a string; a value that picks the else-if branch
    "set": ["nodeprep:packages.tuned.version=0.4.0", "gpuoperator:driver.version='570.172.08'", "sysctl:profile=minimal"],
}
VARIANTS = {"plain": {}, "scheduled": SCHEDULED}
MANIFEST_OBJECTS = 7  # node-prep: ConfigMap + DaemonSet; sysctl: DaemonSet; workload defaults: 2 PriorityClass, LimitRange, ResourceQuota


def params(entry_point, **given):
    out = {name: option.get("default") for name, option in entry_point.spec.items()}
    out.update(given)
    return out


@pytest.fixture(scope="module")
def resolved() -> Dict[str, Any]:
    return entry.run_resolve(params(RECIPE_RESOLVE, criteria=CRITERIA, recipe_dirs=[TREE], include_builtin=False))


def render(recipe: Dict[str, Any], dest: str, deployer: str, variant: Dict[str, Any], **options: Any) -> Dict[str, Any]:
    return entry.run_render(params(BUNDLE_RENDER, recipe=recipe, dest=dest, deployer=deployer,
                                   deployer_options=options or DEPLOYER_OPTIONS[deployer], recipe_dirs=[TREE],
                                   include_builtin=False, **variant))


def read_tree(dest: str) -> Dict[str, bytes]:
    out: Dict[str, bytes] = {}
    for root, _dirs, names in os.walk(dest):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, dest).replace(os.sep, "/")] = handle.read()
    return out


def docs_of(tree: Dict[str, bytes], relpath: str) -> List[Any]:
    return [d for d in yaml.safe_load_all(tree[relpath].decode("utf-8")) if d is not None]


def manifest_objects(tree: Dict[str, bytes], component: str) -> Dict[str, Dict[str, Any]]:
    """``{"Kind/name": object}`` of one component's rendered manifests."""
    out = {}
    for relpath in sorted(tree):
        if relpath.startswith("%s/manifests/" % component):
            for doc in docs_of(tree, relpath):
                out["%s/%s" % (doc["kind"], doc["metadata"]["name"])] = doc
    return out


def validate_tree(tree: Dict[str, bytes]) -> int:
    """Every object of every YAML file but Helm values and the recipe; returns the count."""
    total = 0
    for relpath in sorted(tree):
        if relpath.endswith((".yaml", ".yml")) and relpath.rsplit("/", 1)[-1] not in ("values.yaml", "recipe.yaml"):
            total += validate_objects(docs_of(tree, relpath), where=relpath)
    return total


@pytest.fixture(scope="module")
def bundles(resolved, tmp_path_factory) -> Dict[tuple, Dict[str, Any]]:
    """Every deployer x variant rendered twice into the same directory: the trees and both results."""
    out = {}
    for deployer in DEPLOYERS:
        for variant, extra in VARIANTS.items():
            dest = str(tmp_path_factory.mktemp("%s-%s" % (deployer, variant)) / "bundle")
            first = render(resolved["recipe"], dest, deployer, extra)
            tree = read_tree(dest)
            second = render(resolved["recipe"], dest, deployer, extra)
            out[(deployer, variant)] = {"dest": dest, "first": first, "second": second, "tree": tree,
                                        "again": read_tree(dest)}
    return out


# ---------------------------------------------------------------------------- the tree itself

def test_leaf_resolves_with_chain_wildcard_overlay_and_mixins(resolved):
    recipe = resolved["recipe"]
    assert resolved["applied_overlays"] == ["base", "eks", "h100-any", "h100-eks", LEAF]
    assert recipe["metadata"]["appliedMixins"] == ["os-ubuntu", "platform-batch"]
    assert recipe["metadata"]["warnings"] == []
    order = resolved["deployment_order"]
    assert sorted(order) == ["cert-manager", "gpu-operator", "gpu-sysctl", "gpu-workload-defaults",
                             "node-prep-customizations", "node-prep-operator"]
    refs = {ref["name"]: ref for ref in recipe["componentRefs"]}
    for name, ref in refs.items():
        for dep in ref.get("dependencyRefs") or []:
            assert order.index(dep) < order.index(name), (name, dep)
    # registry defaults: repo/chart keeps the chart, OCI source, registry manifestFiles, no invented namespace
    assert (refs["gpu-operator"]["chart"], refs["gpu-operator"]["namespace"]) == ("gpu-operator", "gpu-operator")
    assert refs["node-prep-operator"]["source"] == "oci://ghcr.io/example-org/charts"
    assert refs["gpu-sysctl"]["manifestFiles"] == ["components/gpu-sysctl/manifests/sysctl-daemonset.yaml"]
    assert not refs["gpu-sysctl"].get("namespace")
    assert refs["node-prep-customizations"]["namespace"] == "node-prep"
    # overrides merge deeply along the chain (eks service + h100 accelerator + leaf intent)
    assert refs["node-prep-customizations"]["overrides"] == {
        "service": "eks", "accelerator": "h100", "intent": "multiNodeTraining", "packages": {"tuned": {"profile": "training"}}}
    constraints = {c["name"]: c["value"] for c in recipe["constraints"]}
    assert constraints == {"K8s.server.version": ">= 1.32", "OS.release.ID": "ubuntu", "OS.release.VERSION_ID": "24.04",
                           "OS.sysctl./proc/sys/kernel/osrelease": ">= 6.8"}
    assert set(recipe["validation"]) == {"deployment", "health", "performance"}


def _fixture_manifests() -> List[str]:
    out = []
    for root, _dirs, names in os.walk(os.path.join(TREE, "components")):
        out += [os.path.join(root, n) for n in names if os.sep + "manifests" in root]
    return sorted(out)


@pytest.mark.parametrize("path", _fixture_manifests(), ids=os.path.basename)
def test_fixture_manifest_compiles_with_the_engine_its_name_picks(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if is_jinja_manifest(path):
        assert path.endswith(".yaml.j2")
        template_environment().compile(text, name=os.path.basename(path), filename=path)
    else:
        assert compile_go_template(text, path).path == path


def test_fixture_go_templates_use_the_upstream_constructs():
    """The tree keeps covering what it is for: each construct appears in some Go-template manifest."""
    go_text = ""
    for path in _fixture_manifests():
        if not is_jinja_manifest(path):
            with open(path, encoding="utf-8") as handle:
                go_text += handle.read()
    for construct in (':= index .Values "', "toYaml", "| nindent", "{{- else if ", "{{- else }}", "range $name, $pkg :=",
                      "range $i, $pc :=", "{{- range $v.sysctls }}", "{{- with ", '{{- define "', '{{- include "',
                      "| default ", "| quote", "required ", "printf ", "namespace: kube-system", ".Release.Namespace"):
        assert construct in go_text, construct
    assert sum(1 for p in _fixture_manifests() if is_jinja_manifest(p)) == 1


# ---------------------------------------------------------------------------- rendering

@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_every_rendered_object_validates(bundles, deployer, variant):
    tree = bundles[(deployer, variant)]["tree"]
    checked = validate_tree(tree)
    manifests = sum(len(docs_of(tree, p)) for p in tree if "/manifests/" in p)
    assert manifests == MANIFEST_OBJECTS
    assert checked >= MANIFEST_OBJECTS + (6 if deployer != "helm" else 2)  # + Applications / releases, namespaces
    for relpath, content in tree.items():
        text = content.decode("utf-8")
        assert "{{" not in text and "{%" not in text and "<no value>" not in text, relpath
    # the *.j2 manifest lost its suffix; the Go templates kept their names
    assert "gpu-workload-defaults/manifests/quota.yaml" in tree
    assert not any(p.endswith(".j2") for p in tree)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_checksums_verify_and_second_render_changes_nothing(bundles, deployer, variant):
    bundle = bundles[(deployer, variant)]
    assert bundle["first"]["changed"] is True
    second = bundle["second"]
    assert (second["changed"], second["added"], second["removed"], second["modified"]) == (False, [], [], [])
    assert bundle["again"] == bundle["tree"]
    verified = entry.run_bundle_verify(params(BUNDLE_VERIFY, bundle=bundle["dest"]))
    assert verified["ok"] is True and not verified.get("failed"), verified["msg"]
    assert verified["counts"]["verified"] == len(bundle["tree"]) - 1


def test_verify_catches_a_tampered_manifest(resolved, tmp_path):
    dest = str(tmp_path / "bundle")
    render(resolved["recipe"], dest, "helm", {})
    with open(os.path.join(dest, "gpu-sysctl", "manifests", "sysctl-daemonset.yaml"), "a", encoding="utf-8") as handle:
        handle.write("# edited by hand\n")
    verified = entry.run_bundle_verify(params(BUNDLE_VERIFY, bundle=dest, fail_on_mismatch=False))
    assert verified["ok"] is False and verified["modified"] == ["gpu-sysctl/manifests/sysctl-daemonset.yaml"]


def test_manifests_are_the_same_in_every_deployer(bundles):
    for variant in VARIANTS:
        trees = [bundles[(d, variant)]["tree"] for d in DEPLOYERS]
        manifests = [{p: c for p, c in t.items() if "/manifests/" in p} for t in trees]
        assert manifests[0] == manifests[1] == manifests[2], variant


# ---------------------------------------------------------------------------- scheduling at the registry paths

def _values(bundles, variant: str, component: str) -> Dict[str, Any]:
    return yaml.safe_load(bundles[("helm", variant)]["tree"]["%s/values.yaml" % component])


def test_default_scheduling_tolerates_everything_and_writes_no_selector(bundles):
    gpu = _values(bundles, "plain", "gpu-operator")
    assert gpu["operator"]["tolerations"] == DEFAULT_TOL  # replaces the values file's control-plane toleration
    assert gpu["daemonsets"]["tolerations"] == DEFAULT_TOL
    assert "nodeSelector" not in gpu["operator"] and "nodeSelector" not in gpu["daemonsets"]
    assert gpu["driver"] == {"enabled": True, "version": "580.95.05", "rdma": {"enabled": True, "useHostMofed": False}}
    operator = _values(bundles, "plain", "node-prep-operator")
    assert operator["estimatedNodeCount"] == 0 and operator["controller"]["env"]["gateTaint"] == ""
    prep = manifest_objects(bundles[("helm", "plain")]["tree"], "node-prep-customizations")
    pod = prep["DaemonSet/node-prep-agent"]["spec"]["template"]["spec"]
    assert pod["tolerations"] == DEFAULT_TOL and "nodeSelector" not in pod
    assert "workload-selector" not in prep["ConfigMap/node-prep-packages"]["data"]
    sysctl = manifest_objects(bundles[("helm", "plain")]["tree"], "gpu-sysctl")["DaemonSet/gpu-sysctl"]
    assert sysctl["spec"]["template"]["spec"]["tolerations"] == DEFAULT_TOL
    assert sysctl["spec"]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "10m", "memory": "16Mi"}}
    assert bundles[("helm", "plain")]["first"]["scheduling"]["nodes"] == 0


def test_scheduling_options_land_at_the_registry_paths(bundles):
    cert = _values(bundles, "scheduled", "cert-manager")
    assert cert["nodeSelector"] == cert["webhook"]["nodeSelector"] == SYSTEM_SELECTOR
    assert cert["tolerations"] == cert["webhook"]["tolerations"] == SYSTEM_TOL
    gpu = _values(bundles, "scheduled", "gpu-operator")
    assert (gpu["operator"]["nodeSelector"], gpu["operator"]["tolerations"]) == (SYSTEM_SELECTOR, SYSTEM_TOL)
    assert (gpu["daemonsets"]["nodeSelector"], gpu["daemonsets"]["tolerations"]) == (ACCEL_SELECTOR, ACCEL_TOL)
    assert gpu["daemonsets"]["priorityClassName"] == "system-node-critical"
    operator = _values(bundles, "scheduled", "node-prep-operator")
    assert operator["estimatedNodeCount"] == 16  # nodeCountPaths
    assert operator["controller"]["env"] == {"gateTaint": GATE_TAINT, "logLevel": "info"}  # taintStrPaths
    assert (operator["controller"]["nodeSelector"], operator["controller"]["tolerations"]) == (SYSTEM_SELECTOR, SYSTEM_TOL)
    prep = _values(bundles, "scheduled", "node-prep-customizations")
    assert prep["acceleratedNodeSelector"] == ACCEL_SELECTOR and prep["acceleratedTolerations"] == ACCEL_TOL
    assert prep["workloadSelector"] == WORKLOAD_SELECTOR  # podScheduling.workload.workloadSelectorPaths
    defaults = _values(bundles, "scheduled", "gpu-workload-defaults")
    assert defaults == _values(bundles, "plain", "gpu-workload-defaults")  # no scheduling paths: untouched


def test_scheduling_and_set_reach_the_go_template_manifests(bundles):
    for deployer in DEPLOYERS:
        tree = bundles[(deployer, "scheduled")]["tree"]
        prep = manifest_objects(tree, "node-prep-customizations")
        pod = prep["DaemonSet/node-prep-agent"]["spec"]["template"]["spec"]
        assert (pod["nodeSelector"], pod["tolerations"]) == (ACCEL_SELECTOR, ACCEL_TOL), deployer
        data = prep["ConfigMap/node-prep-packages"]["data"]
        assert json.loads(data["workload-selector"]) == WORKLOAD_SELECTOR
        assert data["tuned"] == "ghcr.io/example-org/node-prep/tuned:0.4.0"  # set through the nodeprep alias
        assert data["tuned-profile"] == "training" and data["intent"] == "multiNodeTraining"
        sysctl = manifest_objects(tree, "gpu-sysctl")["DaemonSet/gpu-sysctl"]
        spec = sysctl["spec"]["template"]["spec"]
        assert (spec["nodeSelector"], spec["tolerations"]) == (ACCEL_SELECTOR, ACCEL_TOL)
        assert spec["containers"][0]["resources"] == {"requests": {"cpu": "1m", "memory": "4Mi"}}  # else-if branch
        assert sysctl["metadata"]["annotations"]["gpu-sysctl.example.com/profile"] == "minimal"
    gpu = _values(bundles, "scheduled", "gpu-operator")
    assert gpu["driver"]["version"] == "570.172.08" and gpu["driver"]["rdma"]["enabled"] is True
    assert bundles[("helm", "scheduled")]["first"]["scheduling"]["workload_gate_taint"] == GATE_TAINT


def test_set_enabled_false_drops_a_manifest_only_component(resolved, tmp_path):
    out = render(resolved["recipe"], str(tmp_path / "b"), "flux", {"set": ["workloaddefaults:enabled=false"]})
    tree = read_tree(str(tmp_path / "b"))
    assert "gpu-workload-defaults" not in [c["name"] for c in out["components"]]
    assert not any(p.startswith("gpu-workload-defaults/") for p in tree)
    assert "gpu-workload-defaults" not in tree["kustomization.yaml"].decode()
    validate_tree(tree)


# ---------------------------------------------------------------------------- namespaces of manifest-only components

def test_kube_system_manifest_keeps_its_namespace(bundles):
    for deployer in DEPLOYERS:
        for variant in VARIANTS:
            tree = bundles[(deployer, variant)]["tree"]
            sysctl = manifest_objects(tree, "gpu-sysctl")["DaemonSet/gpu-sysctl"]
            assert sysctl["metadata"]["namespace"] == "kube-system", (deployer, variant)
            # the other manifest-only components render into their registry namespaces (.Release.Namespace / Jinja2)
            defaults = manifest_objects(tree, "gpu-workload-defaults")
            assert defaults["LimitRange/gpu-workload-defaults"]["metadata"]["namespace"] == "gpu-workloads"
            assert defaults["ResourceQuota/gpu-workload-defaults"]["metadata"]["namespace"] == "gpu-workloads"
            assert "namespace" not in defaults["PriorityClass/training-high"]["metadata"]
            assert manifest_objects(tree, "node-prep-customizations")["DaemonSet/node-prep-agent"]["metadata"][
                "namespace"] == "node-prep"


def test_helm_scripts_apply_kube_system_manifests_without_namespace_flag(bundles):
    tree = bundles[("helm", "scheduled")]["tree"]
    assert "gpu-sysctl/namespace.yaml" not in tree  # no namespace of its own: none is created
    assert "node-prep-customizations/namespace.yaml" in tree
    for script in ("deploy.sh", "undeploy.sh"):
        lines = [line for line in tree[script].decode().splitlines() if "kubectl" in line]
        sysctl = [line for line in lines if "gpu-sysctl/manifests/" in line]
        assert sysctl and all(not re.search(r"\s(-n|--namespace)\s", line) for line in sysctl), (script, sysctl)
        prep = [line for line in lines if "node-prep-customizations/manifests/" in line]
        assert prep and all(" -n node-prep " in line for line in prep), (script, prep)


def test_argocd_and_flux_leave_kube_system_to_the_manifest(bundles):
    argo = bundles[("argocd", "scheduled")]["tree"]
    (app,) = docs_of(argo, "applications/gpu-sysctl.yaml")
    assert "namespace" not in app["spec"]["destination"]
    assert app["spec"]["source"]["path"] == "clusters/a/gpu-sysctl/manifests"
    (prep_app,) = docs_of(argo, "applications/node-prep-customizations.yaml")
    assert prep_app["spec"]["destination"]["namespace"] == "node-prep"
    flux = bundles[("flux", "scheduled")]["tree"]
    namespaces = {doc["metadata"]["name"] for doc in docs_of(flux, "namespaces.yaml")}
    assert "kube-system" not in namespaces and {"node-prep", "gpu-workloads", "gpu-operator"} <= namespaces
    (kustomization,) = docs_of(flux, "kustomization.yaml")
    assert "gpu-sysctl/manifests/sysctl-daemonset.yaml" in kustomization["resources"]
    # the README table does not claim `default` for a component without a namespace
    row = [line for line in flux["README.md"].decode().splitlines() if line.startswith("| ") and "| gpu-sysctl |" in line]
    assert len(row) == 1 and "(as the manifests declare)" in row[0] and "| default |" not in row[0]


# ---------------------------------------------------------------------------- flux OCI source

def test_flux_readme_mentions_the_oci_source_only_when_rendered(bundles, resolved, tmp_path):
    tree = bundles[("flux", "plain")]["tree"]
    assert "flux-oci-source.yaml" in tree and "flux-oci-source.yaml" not in docs_of(tree, "kustomization.yaml")[0]["resources"]
    readme = tree["README.md"].decode()
    assert "kubectl apply -f flux-oci-source.yaml" in readme and OCI_URL in readme and "tag `v1`" in readme
    source, apply = docs_of(tree, "flux-oci-source.yaml")
    assert (source["kind"], source["spec"]["url"], apply["kind"]) == ("OCIRepository", OCI_URL, "Kustomization")
    render(resolved["recipe"], str(tmp_path / "git"), "flux", {}, values_from="inline")
    plain = read_tree(str(tmp_path / "git"))
    assert "flux-oci-source.yaml" not in plain and "flux-oci-source" not in plain["README.md"].decode()
