# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The built-in catalog under ``recipes/``: files, schema, references, inheritance, and every
recipe resolved and rendered with every deployer (objects validated)."""
from __future__ import annotations

import copy
import csv
import functools
import os
import re
import time
from typing import Any, Dict, List, Set, Tuple

import jsonschema
import pytest
from jinja2 import TemplateSyntaxError

from manifest_validation import SHARED_DIR, load_docs, validate_objects
from recipe_schema import CUSTOM_RESOURCE_SCHEMAS, MIXIN_SCHEMA, OVERLAY_SCHEMA, REGISTRY_SCHEMA

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import (
    build_component_bundles, is_jinja_manifest, template_environment)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template import compile_go_template
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import parse_constraint, parse_constraint_value
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ANY, CRITERIA_FIELDS, CRITERIA_VALUES, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import (
    inheritance_chain, resolve, validate_inheritance)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_file, load_yaml_text

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CATALOG = os.path.join(REPO, "recipes")
CATALOG_DOC = os.path.join(REPO, "docs", "catalog.md")
DCGM_REFERENCE = os.path.join(SHARED_DIR, "reference", "dcgm-exporter")

DEPLOYERS = ("helm", "argocd", "flux")
DEPLOYER_OPTIONS = {"argocd": {"repo_url": "https://git.example.com/gitops.git", "revision": "main"}}
NCCL_CHECKS = ["nccl-all-reduce-bw", "nccl-all-gather-bw", "nccl-alltoall-bw"]


def _yaml_files(sub: str) -> List[str]:
    top = os.path.join(CATALOG, sub)
    return sorted(name for name in os.listdir(top) if name.endswith(".yaml"))


def _all_catalog_files() -> List[str]:
    out = []
    for root, _dirs, files in os.walk(CATALOG):
        for name in files:
            out.append(os.path.relpath(os.path.join(root, name), CATALOG).replace(os.sep, "/"))
    return sorted(out)


OVERLAY_FILES = _yaml_files("overlays")
MIXIN_FILES = _yaml_files("mixins")
MANIFEST_FILES = [p for p in _all_catalog_files() if "/manifests/" in p]
DATA_FILES = [p for p in _all_catalog_files() if p not in MANIFEST_FILES]


@functools.lru_cache(maxsize=1)
def store() -> RecipeStore:
    """The catalog alone (the builtin directory, nothing layered on top)."""
    return RecipeStore.load([], include_builtin=True, builtin_dir=CATALOG)


def _overlay_data(name: str) -> Dict[str, Any]:
    return load_yaml_file(os.path.join(CATALOG, "overlays", name))


def _full_recipe_names() -> List[str]:
    """Overlays with service, accelerator, os and intent set: the recipes users deploy
    (every leaf, plus the OS-level recipes that a platform leaf extends)."""
    out = []
    for name in OVERLAY_FILES:
        criteria = (_overlay_data(name).get("spec") or {}).get("criteria") or {}
        if all(criteria.get(f) not in (None, ANY) for f in ("service", "accelerator", "os", "intent")):
            out.append(name[:-len(".yaml")])
    return out


FULL_RECIPES = _full_recipe_names()


@functools.lru_cache(maxsize=None)
def resolved(name: str) -> RecipeResult:
    doc = store().overlays[name]
    return resolve(store(), doc.criteria)


@functools.lru_cache(maxsize=None)
def bundles(name: str) -> Tuple[Any, ...]:
    return tuple(build_component_bundles(store(), resolved(name)))


def leaves() -> List[str]:
    """Overlays that no other overlay names as its base."""
    bases = {doc.base for doc in store().overlays.values() if doc.base}
    return sorted(name for name in store().overlays if name not in bases and name != "base")


def _schema_errors(schema: Dict[str, Any], data: Any) -> List[str]:
    validator = jsonschema.Draft7Validator(schema)
    return ["/%s: %s" % ("/".join(str(p) for p in err.absolute_path), err.message)
            for err in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))]


# ---------------------------------------------------------------------------- files and schema

@pytest.mark.parametrize("relpath", DATA_FILES)
def test_every_data_file_is_yaml_mapping(relpath):
    assert relpath.endswith(".yaml"), "only YAML files belong in recipes/: %s" % relpath
    data = load_yaml_file(os.path.join(CATALOG, relpath))
    assert isinstance(data, dict) and data, "%s must hold a non-empty mapping" % relpath


def compile_manifest(path: str) -> str:
    """Compile one manifest with the engine the file-name rule picks (``*.j2``: Jinja2, else Go ``text/template``),
    as the renderer does; returns the engine used.  A syntax error fails (Jinja2's or :class:`RenderError`)."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if is_jinja_manifest(path):
        template_environment().compile(text, name=os.path.basename(path), filename=path)
        return "jinja2"
    compile_go_template(text, path)
    return "go"


@pytest.mark.parametrize("relpath", MANIFEST_FILES)
def test_every_manifest_template_compiles(relpath):
    engine = compile_manifest(os.path.join(CATALOG, relpath))
    assert engine == ("jinja2" if relpath.endswith(".j2") else "go"), relpath


def test_manifest_engine_rule_is_the_file_name(tmp_path):
    """The compile check above follows the renderer's rule: Jinja2 syntax in a file not named *.j2 is a Go template
    (and fails to compile as one), Go syntax in a *.j2 file is Jinja2 (and fails as one)."""
    go_text = '{{- $v := index .Values "x" }}\nname: {{ $v.name | quote }}\n'
    jinja_text = "{% for k in values %}{{ k }}{% endfor %}\n"
    assert compile_manifest(_write(tmp_path, "go.yaml", go_text)) == "go"
    assert compile_manifest(_write(tmp_path, "jinja.yaml.j2", jinja_text)) == "jinja2"
    with pytest.raises(RenderError) as err:
        compile_manifest(_write(tmp_path, "jinja.yaml", jinja_text))
    assert err.value.file and err.value.file.endswith("jinja.yaml")
    with pytest.raises(TemplateSyntaxError):
        compile_manifest(_write(tmp_path, "go.yaml.j2", go_text))


def _write(directory: Any, name: str, text: str) -> str:
    path = os.path.join(str(directory), name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


@pytest.mark.parametrize("name", OVERLAY_FILES)
def test_overlay_schema(name):
    data = _overlay_data(name)
    assert _schema_errors(OVERLAY_SCHEMA, data) == []
    assert data["metadata"]["name"] + ".yaml" == name, "metadata.name must equal the file name"


@pytest.mark.parametrize("name", MIXIN_FILES)
def test_mixin_schema(name):
    data = load_yaml_file(os.path.join(CATALOG, "mixins", name))
    assert _schema_errors(MIXIN_SCHEMA, data) == []
    assert data["metadata"]["name"] + ".yaml" == name


def test_registry_schema_and_unique_names():
    data = load_yaml_file(os.path.join(CATALOG, "registry.yaml"))
    assert _schema_errors(REGISTRY_SCHEMA, data) == []
    names = [c["name"] for c in data["components"]]
    assert len(names) == len(set(names))


def test_schema_rejects_bad_criteria_and_unknown_keys():
    good = _overlay_data("h100-eks-ubuntu-training.yaml")
    bad = copy.deepcopy(good)
    bad["spec"]["criteria"]["accelerator"] = "h1000"
    bad["spec"]["componentRefs"] = [{"name": "gpu-operator", "valuesfile": "components/gpu-operator/values.yaml"}]
    errors = _schema_errors(OVERLAY_SCHEMA, bad)
    assert _schema_errors(OVERLAY_SCHEMA, good) == []
    assert any("h1000" in e for e in errors) and any("valuesfile" in e for e in errors)


def test_store_loads_whole_catalog():
    loaded = store()
    assert sorted(loaded.overlays) == sorted(n[:-5] for n in OVERLAY_FILES)
    assert sorted(loaded.mixins) == sorted(n[:-5] for n in MIXIN_FILES)
    assert set(loaded.registry) >= {"gpu-operator", "network-operator", "cert-manager", "kube-prometheus-stack",
                                    "prometheus-operator-crds", "nvidia-dra-driver-gpu", "kai-scheduler",
                                    "kubeflow-trainer", "nfd", "node-problem-detector", "aws-efa", "gpu-health-rules"}


# ---------------------------------------------------------------------------- criteria

def test_criteria_values_are_known_and_unique():
    seen: Dict[Tuple[Any, ...], str] = {}
    for name, doc in sorted(store().overlays.items()):
        if name == "base":
            assert doc.criteria is None
            continue
        assert doc.criteria is not None, "overlay %s has no criteria" % name
        for field in CRITERIA_FIELDS[:-1]:
            assert getattr(doc.criteria, field) in CRITERIA_VALUES[field], (name, field)
        key = tuple(doc.criteria.to_dict()[f] for f in CRITERIA_FIELDS)
        assert key not in seen, "overlays %s and %s have the same criteria %s" % (seen.get(key), name, key)
        seen[key] = name


def test_catalog_covers_required_criteria_values():
    used = {f: {getattr(d.criteria, f) for d in store().overlays.values() if d.criteria} for f in CRITERIA_FIELDS[:-1]}
    assert used["service"] >= {"eks", "gke", "aks", "oke", "self-managed"}
    assert used["accelerator"] >= {"h100", "h200", "gb200", "b200", "a100", "l40s"}
    assert used["intent"] >= {"training", "inference"}
    assert used["os"] >= {"ubuntu", "rhel", "cos", "amazonlinux"}
    assert "kubeflow" in used["platform"]
    assert 20 <= len(leaves()) <= 30


# ---------------------------------------------------------------------------- references and inheritance

def _refs_of(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list((data.get("spec") or {}).get("componentRefs") or [])


def test_every_referenced_file_exists():
    missing = []
    documents = [("overlays/" + n, _overlay_data(n)) for n in OVERLAY_FILES]
    documents += [("mixins/" + n, load_yaml_file(os.path.join(CATALOG, "mixins", n))) for n in MIXIN_FILES]
    for relpath, data in documents:
        spec = data.get("spec") or {}
        if spec.get("base") and spec["base"] + ".yaml" not in OVERLAY_FILES:
            missing.append("%s: base %s" % (relpath, spec["base"]))
        for mixin in spec.get("mixins") or []:
            if mixin + ".yaml" not in MIXIN_FILES:
                missing.append("%s: mixin %s" % (relpath, mixin))
        for ref in _refs_of(data):
            for item in ([ref["valuesFile"]] if ref.get("valuesFile") else []) + list(ref.get("manifestFiles") or []):
                if not os.path.isfile(os.path.join(CATALOG, item)):
                    missing.append("%s: %s" % (relpath, item))
                elif not item.startswith("components/%s/" % ref["name"]):
                    missing.append("%s: %s is outside components/%s/" % (relpath, item, ref["name"]))
    assert missing == []


def test_every_component_directory_and_file_is_used():
    used: Set[str] = set()
    documents = [_overlay_data(n) for n in OVERLAY_FILES]
    documents += [load_yaml_file(os.path.join(CATALOG, "mixins", n)) for n in MIXIN_FILES]
    for data in documents:
        for ref in _refs_of(data):
            used.update([ref["valuesFile"]] if ref.get("valuesFile") else [])
            used.update(ref.get("manifestFiles") or [])
    present = {p for p in _all_catalog_files() if p.startswith("components/")}
    assert present - used == set(), "files nobody references"
    component_dirs = {p.split("/")[1] for p in present}
    assert component_dirs == set(store().registry), "components/ and registry.yaml must list the same components"


def test_component_refs_agree_with_registry():
    """A componentRef that pins source/version pins the registry's (one place to bump, tested)."""
    registry = store().registry
    problems = []
    documents = [("overlays/" + n, _overlay_data(n)) for n in OVERLAY_FILES]
    documents += [("mixins/" + n, load_yaml_file(os.path.join(CATALOG, "mixins", n))) for n in MIXIN_FILES]
    for relpath, data in documents:
        for ref in _refs_of(data):
            helm = registry[ref["name"]]["helm"] if ref["name"] in registry else None
            if helm is None:
                problems.append("%s: %s not in registry.yaml" % (relpath, ref["name"]))
                continue
            for key, default in (("source", "defaultRepository"), ("version", "defaultVersion")):
                if key in ref and str(ref[key]) != str(helm.get(default)):
                    problems.append("%s: %s.%s %s != registry %s" % (relpath, ref["name"], key, ref[key], helm.get(default)))
    assert problems == []


def test_inheritance_is_acyclic_and_layered():
    validate_inheritance(store())
    for name, doc in store().overlays.items():
        if name == "base":
            continue
        chain = inheritance_chain(store(), name)
        assert chain[-1].name == name
        parent = store().overlays.get(doc.base or "base")
        assert parent is not None
        # a child's criteria extend its parent's: every field the parent sets, the child sets equally
        if parent.criteria is not None:
            for field in CRITERIA_FIELDS[:-1]:
                value = getattr(parent.criteria, field)
                assert value == ANY or getattr(doc.criteria, field) == value, (name, parent.name, field)
            assert doc.criteria.specificity() == parent.criteria.specificity() + 1, (name, parent.name)
        else:
            assert doc.criteria.specificity() == 1, "overlay %s inherits from base directly" % name


# ---------------------------------------------------------------------------- resolution

@pytest.mark.parametrize("name", FULL_RECIPES)
def test_recipe_resolves_to_its_chain_only(name):
    result = resolved(name)
    expected = ["base"] + [doc.name for doc in inheritance_chain(store(), name)]
    assert result.applied_overlays == expected
    assert result.metadata["warnings"] == []
    order = result.deployment_order
    assert sorted(order) == sorted(ref.name for ref in result.component_refs)
    for ref in result.component_refs:
        assert ref.enabled
        for dep in ref.dependency_refs:
            assert order.index(dep) < order.index(ref.name), (name, ref.name, dep)
    criteria = store().overlays[name].criteria
    has_trainer = "kubeflow-trainer" in order
    assert has_trainer == (criteria.platform == "kubeflow"), name
    assert ("aws-efa" in order) == (criteria.service == "eks")
    assert ("node-problem-detector" in order) == (criteria.service in ("eks", "oke", "self-managed"))
    for always in ("gpu-operator", "nfd", "kube-prometheus-stack", "prometheus-operator-crds", "gpu-health-rules",
                   "nvidia-dra-driver-gpu", "kai-scheduler", "cert-manager"):
        assert always in order


@pytest.mark.parametrize("name", FULL_RECIPES)
def test_recipe_constraints_and_validation(name):
    result = resolved(name)
    criteria = result.criteria
    names = {c.name: c.value for c in result.constraints}
    for constraint in result.constraints:
        parse_constraint(constraint.name, constraint.value)
    assert "K8s.server.version" in names and "OS.release.ID" in names and "OS.kernel.version" in names
    expected_os_id = {"ubuntu": "ubuntu", "rhel": "rhel", "cos": "cos", "amazonlinux": "amzn"}[criteria.os]
    assert names["OS.release.ID"] == expected_os_id
    assert set(result.validation) >= {"deployment", "health", "conformance"}
    health = result.validation["health"]
    assert health.checks == ["gpu-health", "dcgm-diag"]
    assert health.extra["dcgmDiagLevel"] == (3 if criteria.intent == "training" else 2)
    for phase in result.validation.values():
        for constraint in phase.constraints:
            parse_constraint_value(constraint.name, constraint.value)
    if criteria.intent == "training":
        perf = result.validation["performance"]
        assert perf.checks == NCCL_CHECKS
        floors = {c.name: parse_constraint_value(c.name, c.value) for c in perf.constraints}
        assert sorted(floors) == sorted(NCCL_CHECKS)
        for op, operand in floors.values():
            assert op == ">=" and float(operand) > 0
        # all-gather cannot beat all-reduce's floor; alltoall is network-bound and lowest
        values = {k: float(v[1]) for k, v in floors.items()}
        assert values["nccl-alltoall-bw"] < values["nccl-all-gather-bw"] <= values["nccl-all-reduce-bw"]
    else:
        assert "performance" not in result.validation


def test_driver_ownership_matches_service():
    """Preinstalled drivers (GKE, AKS, OKE, EKS AL2023) switch the operator's driver off and pin a
    driver version floor; operator-managed drivers keep it on and agree with the DRA driver root."""
    for name in FULL_RECIPES:
        values = {b.name: b.values for b in bundles(name)}
        criteria = store().overlays[name].criteria
        preinstalled = criteria.service in ("gke", "aks", "oke") or criteria.os == "amazonlinux"
        gpu_values = values["gpu-operator"]
        assert gpu_values["driver"]["enabled"] is (not preinstalled), name
        dra_root = values["nvidia-dra-driver-gpu"]["nvidiaDriverRoot"]
        if not preinstalled:
            assert dra_root == gpu_values["hostPaths"]["driverInstallDir"], name
        else:
            assert "GPU.smi.driver" in {c.name for c in resolved(name).constraints}, name
        assert values["nvidia-dra-driver-gpu"]["resources"]["computeDomains"]["enabled"] is (criteria.accelerator == "gb200")


# ---------------------------------------------------------------------------- rendering

def _custom_or_core_errors(docs: List[Any], where: str) -> int:
    core = []
    for index, doc in enumerate(docs):
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key in CUSTOM_RESOURCE_SCHEMAS:
            assert _schema_errors(CUSTOM_RESOURCE_SCHEMAS[key], doc) == [], "%s[%d]" % (where, index)
        else:
            core.append(doc)
    return validate_objects(core, where) + len(docs) - len(core)


@pytest.mark.parametrize("deployer", DEPLOYERS)
@pytest.mark.parametrize("name", FULL_RECIPES)
def test_recipe_renders_with_every_deployer(name, deployer):
    result = resolved(name)
    components = list(bundles(name))
    files = render_bundle(result, components, deployer, DEPLOYER_OPTIONS.get(deployer))
    checked = 0
    for relpath in sorted(files):
        if not relpath.endswith((".yaml", ".yml")) or relpath.rsplit("/", 1)[-1] in ("values.yaml", "recipe.yaml"):
            continue
        checked += _custom_or_core_errors(load_docs(files, relpath), relpath)
    manifest_count = sum(len(b.manifests) for b in components)
    assert checked >= manifest_count
    if deployer != "helm":  # one Application / HelmRelease per component at least
        assert checked >= len(components)
    text = "".join(f.content.decode("utf-8") for f in files.values())
    for component in components:
        assert component.name in text
    for body in (m for b in components for m in b.manifests.values()):
        assert "{{" not in body and "{%" not in body, "unrendered template text"


def test_rendering_the_whole_catalog_is_fast():
    started = time.perf_counter()
    fresh = RecipeStore.load([], include_builtin=True, builtin_dir=CATALOG)
    for name in FULL_RECIPES:
        result = resolve(fresh, fresh.overlays[name].criteria)
        components = build_component_bundles(fresh, result)
        for deployer in DEPLOYERS:
            render_bundle(result, components, deployer, DEPLOYER_OPTIONS.get(deployer))
    assert time.perf_counter() - started < 5.0


# ---------------------------------------------------------------------------- manifests

def _dcgm_reference_metrics() -> Set[str]:
    names: Set[str] = set()
    for file_name in ("default-counters.csv", "dcp-metrics-included.csv"):
        with open(os.path.join(DCGM_REFERENCE, file_name), encoding="utf-8") as handle:
            for row in csv.reader(handle):
                if row and row[0].strip().startswith("DCGM_FI_"):
                    names.add(row[0].strip())
    return names


def _manifest_docs(name: str, component: str) -> List[Any]:
    bundle = {b.name: b for b in bundles(name)}[component]
    return [d for text in bundle.manifests.values() for d in load_yaml_text(text, multi=True) if d]


def test_gpu_health_rules_are_the_plain_rule_file():
    """The PrometheusRule holds exactly the groups of extensions/prometheus/dsxos-gpu-health.rules.yml (the rules
    themselves, their labels and promtool tests: tests/unit/test_alert_rules.py)."""
    known = _dcgm_reference_metrics()
    assert "DCGM_FI_DEV_XID_ERRORS" in known, "reference list unreadable"
    (rule,) = _manifest_docs("h100-eks-ubuntu-training", "gpu-health-rules")
    assert rule["kind"] == "PrometheusRule" and rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["role"] == "gpu-health"
    plain = load_yaml_file(os.path.join(REPO, "extensions", "prometheus", "dsxos-gpu-health.rules.yml"))
    assert rule["spec"]["groups"] == plain["groups"]
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    for name in ("GPUXidMemory", "GPUFallenOffBus", "GPURowRemapFailure", "GPUMissing"):  # default exporter counters
        used = set(re.findall(r"\bDCGM_FI_[A-Z0-9_]+", alerts[name]["expr"]))
        assert used and used <= known, (name, used - known)


def test_gpu_health_rules_follow_values_and_can_be_switched_off():
    result = resolved("h100-eks-ubuntu-training")
    components = build_component_bundles(store(), result, extra_overrides={"gpu-health-rules": {"ruleLabels": {"release": "kps"}}})
    rules = {b.name: b for b in components}["gpu-health-rules"].manifests["gpu-health-rules.yaml"]
    assert '    release: "kps"' in rules and "DCGM_FI_DEV_XID_ERRORS == 79" in rules
    switched_off = build_component_bundles(store(), result, extra_overrides={"gpu-health-rules": {"enabled": False}})
    assert "gpu-health-rules" not in {b.name for b in switched_off}


def test_nic_cluster_policy_renders_nothing_when_disabled():
    result = resolved("h100-aks-ubuntu-training")
    off = build_component_bundles(store(), result,
                                  extra_overrides={"network-operator": {"nicClusterPolicy": {"enabled": False}}})
    network = {b.name: b for b in off}["network-operator"]
    assert network.manifests == {} and network.chart == "network-operator"


def test_nic_cluster_policy_follows_service():
    (self_managed,) = _manifest_docs("h100-self-managed-ubuntu-training", "network-operator")
    (oke,) = _manifest_docs("h100-oke-ubuntu-training", "network-operator")
    assert self_managed["kind"] == oke["kind"] == "NicClusterPolicy"
    assert "ofedDriver" in self_managed["spec"] and "ofedDriver" not in oke["spec"]
    config = load_yaml_text(oke["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert config["configList"][0]["selectors"]["vendors"] == ["15b3"]
    values = {b.name: b.values for b in bundles("h100-self-managed-ubuntu-training")}
    assert values["gpu-operator"]["driver"]["rdma"]["enabled"] is True
    assert "network-operator" in {b.name: b for b in bundles("h100-self-managed-ubuntu-training")}["gpu-operator"].dependency_refs
    assert "network-operator" not in {b.name for b in bundles("h100-self-managed-ubuntu-inference")}


def test_gke_gets_critical_pod_quota_only_on_gke():
    for name in FULL_RECIPES:
        manifests = {b.name: b for b in bundles(name)}["gpu-operator"].manifests
        on_gke = store().overlays[name].criteria.service == "gke"
        assert ("gke-critical-pods-quota.yaml" in manifests) == on_gke, name
    (quota,) = [d for d in _manifest_docs("b200-gke-cos-training", "gpu-operator") if d["kind"] == "ResourceQuota"]
    assert quota["metadata"]["namespace"] == "gpu-operator"
    validate_objects([quota], "gke-critical-pods-quota.yaml")


# ---------------------------------------------------------------------------- documentation

def test_documented_namespaces_match_catalog():
    with open(CATALOG_DOC, encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("<!-- namespaces:start -->", 1)[1].split("<!-- namespaces:end -->", 1)[0]
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE))
    installed = {b.namespace for name in FULL_RECIPES for b in bundles(name)}
    assert documented == installed
