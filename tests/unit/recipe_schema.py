# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Test helper: JSON schemas of the catalog under ``recipes/``.

* ``OVERLAY_SCHEMA`` (kind ``RecipeMetadata``), ``MIXIN_SCHEMA`` (kind ``RecipeMixin``) and
  ``REGISTRY_SCHEMA`` (kind ``ComponentRegistry``) are stricter than the engine's structural
  checks: unknown keys are errors, criteria values are the enums of ``recipe_model``.
* ``CUSTOM_RESOURCE_SCHEMAS`` cover the custom resources that catalog manifests create and that
  ``manifest_validation`` has no CRD for (``PrometheusRule``, ``NicClusterPolicy``): the fields
  the catalog uses, closed against typos.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import (
    ACCEPTED_API_VERSIONS, COMPONENT_TYPES, CRITERIA_VALUES)

_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63}
_STR = {"type": "string", "minLength": 1}
_STR_LIST = {"type": "array", "items": _STR, "uniqueItems": True}
_RELPATH = {"type": "string", "pattern": r"^components/[a-z0-9-]+/([a-z0-9-]+/)*[A-Za-z0-9._-]+\.ya?ml(\.j2)?$"}
_CHECK_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}

CONSTRAINT_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["name", "value"],
    "additionalProperties": False,
    "properties": {
        "name": _STR,
        "value": {"type": ["string", "number"]},
        "severity": {"enum": ["error", "warning"]},
        "unit": {"type": "string"},
        "message": {"type": "string"},
    },
}

CRITERIA_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": dict(
        {field: {"enum": list(values)} for field, values in CRITERIA_VALUES.items()},
        nodes={"type": "integer", "minimum": 0},
    ),
}

COMPONENT_REF_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "type": {"enum": list(COMPONENT_TYPES)},
        "source": {"type": "string", "pattern": r"^(https://|oci://)\S+[^/]$"},
        "chart": _STR,
        "version": {"type": "string", "pattern": r"^v?\d+(\.\d+){1,2}([-+][0-9A-Za-z.-]+)?$"},
        "namespace": _NAME,
        "valuesFile": _RELPATH,
        "manifestFiles": {"type": "array", "items": _RELPATH, "uniqueItems": True},
        "dependencyRefs": {"type": "array", "items": _NAME, "uniqueItems": True},
        "overrides": {"type": "object"},
    },
}

VALIDATION_PHASE_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "checks": {"type": "array", "items": _CHECK_NAME, "uniqueItems": True, "minItems": 1},
        "constraints": {"type": "array", "items": CONSTRAINT_SCHEMA},
        "dcgmDiagLevel": {"type": "integer", "minimum": 1, "maximum": 4},
        "nodes": {"type": "integer", "minimum": 1},
    },
}

VALIDATION_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {phase: VALIDATION_PHASE_SCHEMA
                   for phase in ("deployment", "performance", "health", "conformance")},
}


def _document(kind: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "type": "object",
        "required": ["kind", "apiVersion", "metadata", "spec"],
        "additionalProperties": False,
        "properties": {
            "kind": {"const": kind},
            "apiVersion": {"enum": list(ACCEPTED_API_VERSIONS)},
            "metadata": {"type": "object", "required": ["name"], "additionalProperties": False,
                         "properties": {"name": _NAME}},
            "spec": spec,
        },
    }


OVERLAY_SCHEMA: Dict[str, Any] = _document("RecipeMetadata", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "base": _NAME,
        "criteria": CRITERIA_SCHEMA,
        "mixins": {"type": "array", "items": _NAME, "uniqueItems": True},
        "constraints": {"type": "array", "items": CONSTRAINT_SCHEMA},
        "componentRefs": {"type": "array", "items": COMPONENT_REF_SCHEMA},
        "validation": VALIDATION_SCHEMA,
    },
})

MIXIN_SCHEMA: Dict[str, Any] = _document("RecipeMixin", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "constraints": {"type": "array", "items": CONSTRAINT_SCHEMA},
        "componentRefs": {"type": "array", "items": COMPONENT_REF_SCHEMA},
    },
})

#: registry ``nodeScheduling`` paths: dot-separated values keys
_VALUE_PATHS: Dict[str, Any] = {"type": "array", "minItems": 1, "uniqueItems": True,
                                "items": {"type": "string", "pattern": r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$"}}

REGISTRY_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "components"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"enum": list(ACCEPTED_API_VERSIONS)},
        "kind": {"const": "ComponentRegistry"},
        "components": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "displayName", "helm"],
                "additionalProperties": False,
                "properties": {
                    "name": _NAME,
                    "displayName": _STR,
                    "helm": {
                        "type": "object",
                        "required": ["defaultRepository", "defaultNamespace"],
                        "additionalProperties": False,
                        "properties": {
                            "defaultRepository": {"type": "string", "pattern": r"^((https://|oci://)\S+[^/])?$"},
                            "defaultChart": {"type": "string", "pattern": r"^[a-z0-9][-a-z0-9]*$"},
                            "defaultVersion": COMPONENT_REF_SCHEMA["properties"]["version"],
                            "defaultNamespace": _NAME,
                        },
                        # a chart needs a name and a pinned version; manifest-only entries have neither
                        "if": {"properties": {"defaultRepository": {"minLength": 1}}},
                        "then": {"required": ["defaultChart", "defaultVersion"]},
                        "else": {"not": {"anyOf": [{"required": ["defaultChart"]}, {"required": ["defaultVersion"]}]}},
                    },
                    "valueOverrideKeys": {"type": "array", "items": {"type": "string", "pattern": r"^[a-z0-9][-a-z0-9]*$"},
                                          "uniqueItems": True},
                    "nodeScheduling": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "nodeCountPaths": _VALUE_PATHS,
                            "system": {"type": "object", "additionalProperties": False,
                                       "properties": {"nodeSelectorPaths": _VALUE_PATHS, "tolerationPaths": _VALUE_PATHS}},
                            "accelerated": {"type": "object", "additionalProperties": False,
                                            "properties": {"nodeSelectorPaths": _VALUE_PATHS, "tolerationPaths": _VALUE_PATHS,
                                                           "taintStrPaths": _VALUE_PATHS}},
                        },
                    },
                    "podScheduling": {
                        "type": "object", "additionalProperties": False,
                        "properties": {"workload": {"type": "object", "additionalProperties": False,
                                                    "properties": {"workloadSelectorPaths": _VALUE_PATHS}}},
                    },
                },
            },
        },
    },
}

# ------------------------------------------------------------------ custom resources of catalog manifests

_META_CLUSTER = {"type": "object", "required": ["name"], "additionalProperties": False,
                 "properties": {"name": _NAME, "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}}
_META_NAMESPACED = {"type": "object", "required": ["name", "namespace"], "additionalProperties": False,
                    "properties": dict(_META_CLUSTER["properties"], namespace=_NAME)}
_DURATION = {"type": "string", "pattern": r"^([0-9]+(ms|s|m|h|d|w|y))+$"}

PROMETHEUS_RULE_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _META_NAMESPACED,
        "spec": {
            "type": "object", "required": ["groups"], "additionalProperties": False,
            "properties": {"groups": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["name", "rules"], "additionalProperties": False,
                "properties": {
                    "name": _STR,
                    "interval": _DURATION,
                    "rules": {"type": "array", "minItems": 1, "items": {
                        "type": "object", "required": ["alert", "expr"], "additionalProperties": False,
                        "properties": {
                            "alert": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
                            "expr": _STR,
                            "for": _DURATION,
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                        }}},
                }}}},
        },
    },
}

_IMAGE_SPEC = {"repository": _STR, "image": _STR, "version": _STR}

NIC_CLUSTER_POLICY_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "mellanox.com/v1alpha1"},
        "kind": {"const": "NicClusterPolicy"},
        "metadata": _META_CLUSTER,
        "spec": {
            "type": "object", "additionalProperties": False, "required": ["rdmaSharedDevicePlugin"],
            "properties": {
                "nodeAffinity": {"type": "object"},
                "ofedDriver": {"type": "object", "required": list(_IMAGE_SPEC), "additionalProperties": False,
                               "properties": dict(_IMAGE_SPEC, upgradePolicy={"type": "object"})},
                "rdmaSharedDevicePlugin": {"type": "object", "required": list(_IMAGE_SPEC) + ["config"],
                                           "additionalProperties": False,
                                           "properties": dict(_IMAGE_SPEC, config=_STR)},
            },
        },
    },
}

CUSTOM_RESOURCE_SCHEMAS: Dict[Tuple[str, str], Dict[str, Any]] = {
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE_SCHEMA,
    ("mellanox.com/v1alpha1", "NicClusterPolicy"): NIC_CLUSTER_POLICY_SCHEMA,
}
