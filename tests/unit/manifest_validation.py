# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Test helper: validate rendered Kubernetes objects, strictly.

* core kinds (Namespace, ConfigMap, Service, ...) with ``kubernetes_validate`` (strict schemas
  of Kubernetes ``K8S_VERSION``: unknown fields are errors);
* Argo CD and Flux kinds against the ``openAPIV3Schema`` of the served version of the matching
  CRD in ``SHARED_DIR/schemas/crds`` (``x-kubernetes-*`` keys are annotations, but an object
  schema with ``properties`` and no ``x-kubernetes-preserve-unknown-fields`` rejects unknown
  fields, as the API server would silently prune them);
* ``kustomize.config.k8s.io/v1beta1`` Kustomization and Flux's
  ``kustomize.toolkit.fluxcd.io/v1`` Kustomization (no CRD shipped in shared/) with small
  schemas of our own.

A missing shared directory is an error, never a skip.  The second half of the file builds the
sample RecipeResult/ComponentBundle list that every bundle test renders.
"""
from __future__ import annotations

import copy
import functools
import importlib.util
import os
from typing import Any, Dict, Iterable, List, Tuple

import jsonschema
import kubernetes_validate
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import (
    ComponentBundle, ComponentRef, Criteria, RecipeResult)


def _tests_conftest() -> Any:
    """tests/conftest.py, loaded by path (``import conftest`` could pick another conftest)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conftest.py")
    spec = importlib.util.spec_from_file_location("dsxos_tests_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHARED_DIR = _tests_conftest().SHARED_DIR

K8S_VERSION = "1.33"
CRD_DIR = os.path.join(SHARED_DIR, "schemas", "crds")

_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
         "maxLength": 253}

KUSTOMIZE_CONFIG_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "resources"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "kustomize.config.k8s.io/v1beta1"},
        "kind": {"const": "Kustomization"},
        "namespace": {"type": "string"},
        "resources": {"type": "array", "uniqueItems": True,
                      "items": {"type": "string", "minLength": 1, "not": {"pattern": r"(^/)|(^|/)\.\.(/|$)"}}},
    },
}

FLUX_KUSTOMIZATION_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "kustomize.toolkit.fluxcd.io/v1"},
        "kind": {"const": "Kustomization"},
        "metadata": {"type": "object", "required": ["name", "namespace"],
                     "properties": {"name": _NAME, "namespace": _NAME}},
        "spec": {
            "type": "object",
            "required": ["interval", "prune", "sourceRef"],
            "additionalProperties": False,
            "properties": {
                "interval": {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"},
                "timeout": {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"},
                "path": {"type": "string"},
                "prune": {"type": "boolean"},
                "wait": {"type": "boolean"},
                "targetNamespace": _NAME,
                "dependsOn": {"type": "array", "items": {
                    "type": "object", "required": ["name"], "additionalProperties": False,
                    "properties": {"name": _NAME, "namespace": _NAME}}},
                "sourceRef": {"type": "object", "required": ["kind", "name"], "additionalProperties": False,
                              "properties": {"kind": {"enum": ["GitRepository", "OCIRepository", "Bucket"]},
                                             "name": _NAME, "namespace": _NAME}},
            },
        },
    },
}

_OWN_SCHEMAS = {
    ("kustomize.config.k8s.io/v1beta1", "Kustomization"): KUSTOMIZE_CONFIG_SCHEMA,
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"): FLUX_KUSTOMIZATION_SCHEMA,
}


def _close_objects(schema: Any) -> Any:
    """Deep copy of an OpenAPI schema where object schemas with ``properties`` reject unknown keys."""
    if isinstance(schema, list):
        return [_close_objects(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _close_objects(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema \
            and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@functools.lru_cache(maxsize=1)
def crd_schemas() -> Dict[Tuple[str, str], Dict[str, Any]]:
    """``{(apiVersion, kind): openAPIV3Schema}`` for every served version of the shared CRDs."""
    if not os.path.isdir(CRD_DIR):
        raise AssertionError("shared CRD directory is missing: %s (set DSXOS_SHARED_DIR)" % CRD_DIR)
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for name in sorted(os.listdir(CRD_DIR)):
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(CRD_DIR, name), "rb") as handle:
            for doc in yaml.load_all(handle, Loader=yaml.CSafeLoader):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                spec = doc["spec"]
                for version in spec["versions"]:
                    if not version.get("served", True):
                        continue
                    key = ("%s/%s" % (spec["group"], version["name"]), spec["names"]["kind"])
                    out[key] = _close_objects(version["schema"]["openAPIV3Schema"])
    if not out:
        raise AssertionError("no CustomResourceDefinition found under %s" % CRD_DIR)
    return out


def _validate_schema(schema: Dict[str, Any], doc: Dict[str, Any], where: str) -> List[str]:
    validator = jsonschema.Draft7Validator(schema)
    return ["%s: %s at /%s" % (where, err.message, "/".join(str(p) for p in err.absolute_path))
            for err in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def object_errors(doc: Any, where: str = "<doc>") -> List[str]:
    """Problems of one object (empty list when valid)."""
    if not isinstance(doc, dict):
        return ["%s: not a mapping: %r" % (where, type(doc).__name__)]
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return ["%s: apiVersion and kind must be strings" % where]
    where = "%s (%s %s)" % (where, api_version, kind)
    key = (api_version, kind)
    if key in _OWN_SCHEMAS:
        return _validate_schema(_OWN_SCHEMAS[key], doc, where)
    group = api_version.split("/")[0] if "/" in api_version else ""
    if group.endswith(("argoproj.io", "fluxcd.io")):
        schemas = crd_schemas()
        if key not in schemas:
            return ["%s: no CRD for this apiVersion/kind in %s" % (where, CRD_DIR)]
        errors = _validate_schema(schemas[key], doc, where)
        if kind == "HelmRelease" and isinstance(doc.get("spec"), dict) \
                and ("chart" in doc["spec"]) == ("chartRef" in doc["spec"]):
            # the CRD's x-kubernetes-validations rule, which jsonschema does not evaluate
            errors.append("%s: either chart or chartRef must be set" % where)
        return errors
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return ["%s: %s at /%s" % (where, exc.message, "/".join(str(p) for p in exc.absolute_path))]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return ["%s: %s" % (where, exc.message)]
    return []


def validate_objects(docs: Iterable[Any], where: str = "<docs>") -> int:
    """Validate every object; raise ``AssertionError`` listing all problems.  Returns the count."""
    errors: List[str] = []
    count = 0
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        count += 1
        errors.extend(object_errors(doc, "%s[%d]" % (where, index)))
    if errors:
        raise AssertionError("invalid Kubernetes objects:\n  " + "\n  ".join(errors))
    return count


def load_docs(files: Dict[str, Any], relpath: str) -> List[Any]:
    """Parse every YAML document of ``files[relpath]`` (a BundleFile)."""
    return [d for d in yaml.load_all(files[relpath].content.decode("utf-8"), Loader=yaml.CSafeLoader)
            if d is not None]


def validate_bundle(files: Dict[str, Any], skip: Iterable[str] = ("values.yaml", "recipe.yaml")) -> int:
    """Validate every object of every ``*.yaml`` file of a rendered bundle, except files named in ``skip``
    (Helm values and the recipe are not Kubernetes objects).  Returns the number of objects checked."""
    skipped = set(skip)
    total = 0
    for relpath in sorted(files):
        if not relpath.endswith((".yaml", ".yml")) or relpath.rsplit("/", 1)[-1] in skipped:
            continue
        total += validate_objects(load_docs(files, relpath), where=relpath)
    return total


# --------------------------------------------------------------------------------------------
# Sample inputs shared by the bundle tests (built by hand from the data model).
# --------------------------------------------------------------------------------------------

GPU_OPERATOR_MANIFEST = """apiVersion: v1
kind: ConfigMap
metadata:
  name: dcgm-metrics
data:
  metrics.csv: |
    DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization.
"""

NETWORK_MANIFEST = """apiVersion: v1
kind: ConfigMap
metadata:
  name: nic-config
data:
  mtu: "9000"
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: gpu-critical
value: 1000000
globalDefault: false
description: GPU system pods
"""

KUSTOMIZE_SOURCE = "https://github.com/example/gpu-kustomize"


def sample_components() -> List[ComponentBundle]:
    """cert-manager (https), gpu-operator (https, depends on cert-manager, one manifest),
    kai-scheduler (oci://), nic-tuning (manifest-only), node-tweaks (Kustomize)."""
    return [
        ComponentBundle(name="cert-manager", type="Helm", order=0, namespace="cert-manager",
                        repository="https://charts.jetstack.io", chart="cert-manager", version="v1.17.2",
                        values={"crds": {"enabled": True}, "replicaCount": 1}),
        ComponentBundle(name="gpu-operator", type="Helm", order=1, namespace="gpu-operator",
                        repository="https://helm.ngc.nvidia.com/nvidia", chart="gpu-operator", version="v25.3.0",
                        values={"driver": {"enabled": True, "version": "570.133.20"}, "dcgmExporter": {"enabled": True}},
                        manifests={"dcgm-metrics.yaml": GPU_OPERATOR_MANIFEST},
                        dependency_refs=["cert-manager", "not-in-bundle"]),
        ComponentBundle(name="kai-scheduler", type="Helm", order=2, namespace="kai-scheduler",
                        repository="oci://ghcr.io/nvidia/kai-scheduler", chart="kai-scheduler", version="v0.9.3",
                        values={"global": {"gpuSharing": True}}, dependency_refs=["gpu-operator"]),
        ComponentBundle(name="nic-tuning", type="Helm", order=3, namespace="network-tuning",
                        values={"mtu": 9000}, manifests={"nic.yaml": NETWORK_MANIFEST},
                        dependency_refs=["gpu-operator"]),
        ComponentBundle(name="node-tweaks", type="Kustomize", order=4, namespace="node-tweaks",
                        repository=KUSTOMIZE_SOURCE, kustomize_path="deploy/overlays/gpu", kustomize_tag="v1.2.0",
                        dependency_refs=["nic-tuning"]),
    ]


def sample_result(components: List[ComponentBundle] = None) -> RecipeResult:
    comps = components if components is not None else sample_components()
    refs = [ComponentRef(name=c.name, type=c.type, source=c.repository, chart=c.chart, version=c.version,
                         namespace=c.namespace, path=c.kustomize_path, tag=c.kustomize_tag,
                         dependency_refs=list(c.dependency_refs)) for c in comps]
    return RecipeResult(
        criteria=Criteria(service="eks", accelerator="h100", os="ubuntu", intent="training"),
        applied_overlays=["base", "eks", "eks-training", "h100-eks-ubuntu-training"],
        component_refs=refs,
        deployment_order=[c.name for c in sorted(comps, key=lambda c: c.order)],
        metadata={"catalog": "test"},
    )


def copy_components(components: List[ComponentBundle]) -> List[ComponentBundle]:
    return copy.deepcopy(components)
