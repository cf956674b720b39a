# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Data model of the Configure phase: criteria, component references, constraints,
validation phases, the resolved :class:`RecipeResult` and the per-component
:class:`ComponentBundle` that deployers turn into files.

Everything here is plain data with ``to_dict``/``from_dict`` so a result
round-trips through YAML/JSON (Ansible return values, ``recipe.yaml`` in a
bundle, ``set_stats``).  Field names of the serialized form follow AICR's
``aicr.nvidia.com/v1alpha1`` camelCase spelling.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

API_VERSION = "aicr.nvidia.com/v1alpha1"
ACCEPTED_API_VERSIONS = ("aicr.nvidia.com/v1alpha1", "aicr.run/v1beta1", "aicr.run/v1alpha1")
RESULT_KIND = "RecipeResult"

ANY = "any"
CRITERIA_FIELDS = ("service", "accelerator", "os", "intent", "platform", "nodes")

#: Allowed values per criteria field (``nodes`` is an integer; 0 means any).
CRITERIA_VALUES: Dict[str, tuple] = {
    "service": (ANY, "eks", "gke", "aks", "oke", "self-managed", "kind", "bcm", "lke", "togetherai", "generic"),
    "accelerator": (ANY, "h100", "h200", "gb200", "gb300", "b200", "b300", "a100", "l40s", "l40", "rtx-pro-6000"),
    "os": (ANY, "ubuntu", "rhel", "cos", "amazonlinux", "talos", "sles"),
    "intent": (ANY, "training", "inference"),
    "platform": (ANY, "kubeflow", "dynamo", "nim", "slurm", "kueue", "runai"),
}

COMPONENT_TYPES = ("Helm", "Kustomize")


@dataclass
class Criteria:
    """A point in criteria space. ``any`` (or empty) means *unspecified*."""

    service: str = ANY
    accelerator: str = ANY
    os: str = ANY
    intent: str = ANY
    platform: str = ANY
    nodes: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return {
            "service": self.service,
            "accelerator": self.accelerator,
            "os": self.os,
            "intent": self.intent,
            "platform": self.platform,
            "nodes": self.nodes,
        }

    @classmethod
    def from_dict(cls, data: Optional[Dict[str, Any]]) -> "Criteria":
        data = data or {}
        kwargs: Dict[str, Any] = {}
        for name in CRITERIA_FIELDS:
            value = data.get(name)
            if name == "nodes":
                kwargs[name] = int(value or 0)
            else:
                kwargs[name] = str(value).strip().lower() if value not in (None, "") else ANY
        return cls(**kwargs)

    def specificity(self) -> int:
        """Number of fields that are not ``any`` (used to order overlays)."""
        count = sum(1 for name in CRITERIA_FIELDS[:-1] if getattr(self, name) != ANY)
        return count + (1 if self.nodes else 0)


@dataclass
class Constraint:
    """``name`` is ``{Type}.{Subtype}.{Key}``; ``value`` is e.g. ``">= 1.30"`` or a bare value."""

    name: str
    value: str
    severity: str = "error"  # error | warning
    unit: str = ""
    message: str = ""

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": self.name, "value": self.value}
        if self.severity != "error":
            out["severity"] = self.severity
        if self.unit:
            out["unit"] = self.unit
        if self.message:
            out["message"] = self.message
        return out

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Constraint":
        return cls(
            name=str(data["name"]),
            value=str(data.get("value", "")),
            severity=str(data.get("severity") or "error"),
            unit=str(data.get("unit") or ""),
            message=str(data.get("message") or ""),
        )


@dataclass
class ComponentRef:
    """A component as declared by recipes (after merging), before values are computed."""

    name: str
    type: str = "Helm"
    source: str = ""  # Helm repository URL, ``oci://`` registry, or Kustomize git/OCI source
    chart: str = ""
    version: str = ""
    namespace: str = ""
    path: str = ""  # Kustomize path inside the source
    tag: str = ""  # Kustomize tag/ref
    values_file: str = ""
    overrides: Dict[str, Any] = field(default_factory=dict)
    dependency_refs: List[str] = field(default_factory=list)
    manifest_files: List[str] = field(default_factory=list)
    patches: List[Any] = field(default_factory=list)
    expected_resources: List[Any] = field(default_factory=list)
    enabled: bool = True

    _KEYS = (
        ("name", "name"), ("type", "type"), ("source", "source"), ("chart", "chart"),
        ("version", "version"), ("namespace", "namespace"), ("path", "path"), ("tag", "tag"),
        ("values_file", "valuesFile"), ("overrides", "overrides"), ("dependency_refs", "dependencyRefs"),
        ("manifest_files", "manifestFiles"), ("patches", "patches"), ("expected_resources", "expectedResources"),
    )

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for attr, key in self._KEYS:
            value = getattr(self, attr)
            if value in ("", [], {}, None) and attr not in ("name", "type"):
                continue
            out[key] = copy.deepcopy(value)
        if not self.enabled:
            out["enabled"] = False
        return out

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ComponentRef":
        kwargs: Dict[str, Any] = {}
        for attr, key in cls._KEYS:
            if key in data and data[key] is not None:
                kwargs[attr] = copy.deepcopy(data[key])
        for attr in ("name", "type", "source", "chart", "version", "namespace", "path", "tag", "values_file"):
            if attr in kwargs:
                kwargs[attr] = str(kwargs[attr])
        kwargs["enabled"] = bool(data.get("enabled", True))
        return cls(**kwargs)


@dataclass
class ValidationPhase:
    """One phase of the ``validation`` section (deployment, performance, conformance, ...)."""

    checks: List[str] = field(default_factory=list)
    constraints: List[Constraint] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)  # unknown keys kept verbatim

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = copy.deepcopy(self.extra)
        if self.checks:
            out["checks"] = list(self.checks)
        if self.constraints:
            out["constraints"] = [c.to_dict() for c in self.constraints]
        return out

    @classmethod
    def from_dict(cls, data: Optional[Dict[str, Any]]) -> "ValidationPhase":
        data = dict(data or {})
        checks = [str(c) for c in data.pop("checks", None) or []]
        constraints = [Constraint.from_dict(c) for c in data.pop("constraints", None) or []]
        return cls(checks=checks, constraints=constraints, extra=copy.deepcopy(data))


@dataclass
class RecipeResult:
    """The resolved recipe for one criteria query: what a bundle is rendered from."""

    criteria: Criteria
    applied_overlays: List[str] = field(default_factory=list)
    constraints: List[Constraint] = field(default_factory=list)
    component_refs: List[ComponentRef] = field(default_factory=list)
    deployment_order: List[str] = field(default_factory=list)
    validation: Dict[str, ValidationPhase] = field(default_factory=dict)
    metadata: Dict[str, Any] = field(default_factory=dict)  # e.g. recipe dirs, catalog version

    def component(self, name: str) -> ComponentRef:
        for ref in self.component_refs:
            if ref.name == name:
                return ref
        raise KeyError(name)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": RESULT_KIND,
            "metadata": copy.deepcopy(self.metadata),
            "criteria": self.criteria.to_dict(),
            "appliedOverlays": list(self.applied_overlays),
            "constraints": [c.to_dict() for c in self.constraints],
            "componentRefs": [c.to_dict() for c in self.component_refs],
            "deploymentOrder": list(self.deployment_order),
            "validation": {k: v.to_dict() for k, v in self.validation.items()},
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "RecipeResult":
        return cls(
            criteria=Criteria.from_dict(data.get("criteria")),
            applied_overlays=[str(x) for x in data.get("appliedOverlays") or []],
            constraints=[Constraint.from_dict(c) for c in data.get("constraints") or []],
            component_refs=[ComponentRef.from_dict(c) for c in data.get("componentRefs") or []],
            deployment_order=[str(x) for x in data.get("deploymentOrder") or []],
            validation={str(k): ValidationPhase.from_dict(v) for k, v in (data.get("validation") or {}).items()},
            metadata=copy.deepcopy(data.get("metadata") or {}),
        )


@dataclass
class ComponentBundle:
    """Everything a deployer needs for one enabled component, values and manifests resolved.

    ``manifests`` maps a file name (e.g. ``tuning.yaml``) to the Jinja2-rendered text; manifests
    that rendered to nothing are already dropped.  ``order`` is the 0-based index in the
    deployment order (Argo CD sync-wave, deploy.sh sequence).
    """

    name: str
    type: str  # Helm | Kustomize
    order: int
    namespace: str
    repository: str = ""  # https:// Helm repo or oci:// registry; empty for manifest-only
    chart: str = ""  # chart name without repo prefix
    version: str = ""
    values: Dict[str, Any] = field(default_factory=dict)
    manifests: Dict[str, str] = field(default_factory=dict)
    dependency_refs: List[str] = field(default_factory=list)
    kustomize_path: str = ""
    kustomize_tag: str = ""

    @property
    def is_oci(self) -> bool:
        return self.repository.startswith("oci://")

    @property
    def manifest_only(self) -> bool:
        return self.type == "Helm" and not self.repository

    def to_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name, "type": self.type, "order": self.order, "namespace": self.namespace,
            "repository": self.repository, "chart": self.chart, "version": self.version,
            "values": copy.deepcopy(self.values), "manifests": dict(self.manifests),
            "dependencyRefs": list(self.dependency_refs),
            "kustomizePath": self.kustomize_path, "kustomizeTag": self.kustomize_tag,
        }
