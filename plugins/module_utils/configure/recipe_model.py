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
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import check_depth

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

# ------------------------------------------------------------------------------------------- validation
#: Component names are Helm release names (and file/folder names of a bundle, arguments of ``deploy.sh``):
#: a DNS-1123 label of at most 53 characters (Helm's release-name limit): lowercase letters, digits and ``-``,
#: starting and ending with a letter or digit (so never ``-set``, never ``../x``).
COMPONENT_NAME_MAX = 53
_COMPONENT_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_REF_STRING_FIELDS = ("type", "source", "chart", "version", "namespace", "path", "tag", "valuesFile")


def validate_component_name(name: Any, path: Optional[str] = None, field: str = "name") -> str:
    """Return ``name`` when it is a valid component name (see :data:`COMPONENT_NAME_MAX`), else raise
    :class:`RecipeSchemaError` naming ``path`` (the file), ``field`` and the value."""
    if not isinstance(name, str) or not name:
        raise RecipeSchemaError("component name must be a non-empty string", path=path, field=field, value=name)
    if len(name) > COMPONENT_NAME_MAX or not _COMPONENT_NAME_RE.match(name):
        raise RecipeSchemaError("invalid component name: it must be a DNS-1123 label of at most %d characters "
                                "(lowercase letters, digits and '-', starting and ending with a letter or digit), "
                                "as Helm release names" % COMPONENT_NAME_MAX, path=path, field=field, value=name)
    return name


def _field(prefix: str, rest: str) -> str:
    return "%s.%s" % (prefix, rest) if prefix else rest


def _list_of(value: Any, path: Optional[str], where: str, kind: type = str) -> List[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecipeSchemaError("%s must be a list" % where, path=path, field=where, value=value)
    for pos, item in enumerate(value):
        if not isinstance(item, kind) or (kind is str and not item):
            raise RecipeSchemaError("%s[%d] must be a %s" % (where, pos, "non-empty string" if kind is str else "mapping"),
                                    path=path, field="%s[%d]" % (where, pos), value=item)
    return value


def _mapping(value: Any, path: Optional[str], where: str) -> Dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecipeSchemaError("%s must be a mapping" % where, path=path, field=where, value=value)
    return value


def _check_constraint_items(items: Any, path: Optional[str], where: str) -> None:
    for pos, item in enumerate(_list_of(items, path, where, dict)):
        if not isinstance(item.get("name"), str) or not item["name"].strip():
            raise RecipeSchemaError("%s[%d] has no name" % (where, pos), path=path, field="%s[%d].name" % (where, pos),
                                    value=item.get("name"))
        if item.get("value") is None or isinstance(item["value"], (dict, list)):
            raise RecipeSchemaError("constraint %s needs a scalar value" % item["name"], path=path,
                                    field="%s[%s].value" % (where, item["name"]), value=item.get("value"))


def _check_result_ref(ref: Dict[str, Any], pos: int, path: Optional[str], prefix: str) -> str:
    name = validate_component_name(ref.get("name"), path, _field(prefix, "componentRefs[%d].name" % pos))
    where = _field(prefix, "componentRefs[%s]" % name)
    for key in _REF_STRING_FIELDS:
        value = ref.get(key)
        if value is not None and not isinstance(value, str) and not (
                key == "version" and isinstance(value, (int, float)) and not isinstance(value, bool)):
            raise RecipeSchemaError("%s.%s must be a string" % (where, key), path=path, field="%s.%s" % (where, key),
                                    value=value)
    if ref.get("type") not in (None, "") and ref["type"] not in COMPONENT_TYPES:
        raise RecipeSchemaError("%s.type must be one of %s" % (where, ", ".join(COMPONENT_TYPES)), path=path,
                                field="%s.type" % where, value=ref["type"])
    _mapping(ref.get("overrides"), path, "%s.overrides" % where)
    _list_of(ref.get("manifestFiles"), path, "%s.manifestFiles" % where)
    _list_of(ref.get("dependencyRefs"), path, "%s.dependencyRefs" % where)
    for key in ("patches", "expectedResources"):
        if ref.get(key) is not None and not isinstance(ref[key], list):
            raise RecipeSchemaError("%s.%s must be a list" % (where, key), path=path, field="%s.%s" % (where, key),
                                    value=ref[key])
    if "enabled" in ref and not isinstance(ref["enabled"], bool):
        raise RecipeSchemaError("%s.enabled must be true or false" % where, path=path, field="%s.enabled" % where,
                                value=ref["enabled"])
    return name


def validate_result_dict(data: Any, path: Optional[str] = None, prefix: str = "recipe") -> Dict[str, Any]:
    """Check a serialized :class:`RecipeResult` (the ``recipe`` option of bundle_render/constraint_check, a bundle's
    ``recipe.yaml``) with the messages the recipe store uses for overlay files: components need a valid name
    (:func:`validate_component_name`) and appear once, ``deploymentOrder`` names only components of
    ``componentRefs`` (each once), list fields are lists, nothing nests deeper than ``safe_yaml.MAX_DEPTH``.
    Errors name ``path`` (the file, if any) and the field (``prefix`` first: the option name)."""
    if not isinstance(data, dict):
        raise RecipeSchemaError("a recipe must be a mapping (a RecipeResult, as recipe_resolve returns it)",
                                path=path, field=prefix or "(document)", value=type(data).__name__)
    check_depth(data, source=path, field=prefix or None, error=RecipeSchemaError)
    criteria = _mapping(data.get("criteria"), path, _field(prefix, "criteria"))
    nodes = criteria.get("nodes")
    if nodes not in (None, "") and (isinstance(nodes, bool) or not str(nodes).strip().isdigit()):
        raise RecipeSchemaError("criteria.nodes must be a non-negative integer", path=path,
                                field=_field(prefix, "criteria.nodes"), value=nodes)
    names: List[str] = []
    for pos, ref in enumerate(_list_of(data.get("componentRefs"), path, _field(prefix, "componentRefs"), dict)):
        name = _check_result_ref(ref, pos, path, prefix)
        if name in names:
            raise RecipeSchemaError("componentRefs lists %r twice" % name, path=path,
                                    field=_field(prefix, "componentRefs[%s]" % name), value=name)
        names.append(name)
    known = set(names)
    order_field = _field(prefix, "deploymentOrder")
    seen = set()
    for pos, name in enumerate(_list_of(data.get("deploymentOrder"), path, order_field)):
        if name not in known:
            raise RecipeSchemaError("deploymentOrder names %r, which is not in componentRefs (known: %s)"
                                    % (name, ", ".join(names) or "none"), path=path,
                                    field="%s[%d]" % (order_field, pos), value=name)
        if name in seen:
            raise RecipeSchemaError("deploymentOrder lists %r twice" % name, path=path,
                                    field="%s[%d]" % (order_field, pos), value=name)
        seen.add(name)
    _check_constraint_items(data.get("constraints"), path, _field(prefix, "constraints"))
    for phase, body in _mapping(data.get("validation"), path, _field(prefix, "validation")).items():
        where = _field(prefix, "validation.%s" % phase)
        body = _mapping(body, path, where)
        _list_of(body.get("checks"), path, where + ".checks")
        _check_constraint_items(body.get("constraints"), path, where + ".constraints")
    _list_of(data.get("appliedOverlays"), path, _field(prefix, "appliedOverlays"))
    _mapping(data.get("metadata"), path, _field(prefix, "metadata"))
    return data


def _switched_off(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() == "false")


def require_components(result: "RecipeResult", path: Optional[str] = None, field: str = "recipe",
                       disabled: Any = ()) -> "RecipeResult":
    """Refuse a recipe with no enabled component (less ``disabled``) in its deployment order: rendering it would
    replace a bundle with an empty one."""
    enabled = {ref.name for ref in result.component_refs if ref.enabled} - set(disabled or ())
    if not any(name in enabled for name in result.deployment_order):
        raise RecipeSchemaError("the recipe has no enabled component in its deploymentOrder; refusing to render an empty "
                                "bundle (resolve the recipe with recipe_resolve, or check its componentRefs)",
                                path=path, field=field, value=len(result.component_refs))
    return result


def render_input(recipe: Any, values_overrides: Any = None, disabled: Any = ()) -> "RecipeResult":
    """The ``recipe`` option of bundle_render as a validated :class:`RecipeResult` (:func:`validate_result_dict`),
    after checking that ``values_overrides`` is a mapping nested at most ``safe_yaml.MAX_DEPTH`` levels and that
    some component is left to render once ``disabled`` and ``values_overrides.<name>.enabled: false`` are applied
    (:func:`require_components`)."""
    overrides = _mapping(values_overrides, None, "values_overrides")
    check_depth(overrides, field="values_overrides", error=RecipeSchemaError)
    result = RecipeResult.from_dict(recipe)
    off = set(disabled or ())
    off.update(name for name, extra in overrides.items() if isinstance(extra, dict) and _switched_off(extra.get("enabled")))
    return require_components(result, disabled=off)


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
    def from_dict(cls, data: Dict[str, Any], path: Optional[str] = None, prefix: str = "recipe") -> "RecipeResult":
        """Build from the serialized form, validated first (:func:`validate_result_dict`; ``path``/``prefix`` name
        the file or option in errors)."""
        validate_result_dict(data, path, prefix)
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


#: ``nodeScheduling`` keys of a registry entry: (section, key) -> attribute of :class:`SchedulingPaths`
SCHEDULING_PATH_KEYS = (
    ("system", "nodeSelectorPaths", "system_node_selector"),
    ("system", "tolerationPaths", "system_tolerations"),
    ("accelerated", "nodeSelectorPaths", "accelerated_node_selector"),
    ("accelerated", "tolerationPaths", "accelerated_tolerations"),
    ("accelerated", "taintStrPaths", "workload_gate_taint"),
)


@dataclass
class SchedulingPaths:
    """Where one component's Helm values receive the bundle's scheduling options (AICR registry fields).

    ``nodeScheduling.{system,accelerated}.{nodeSelectorPaths,tolerationPaths}``, ``nodeScheduling.accelerated.
    taintStrPaths`` (the workload-gate taint as a ``key=value:Effect`` string), ``nodeScheduling.nodeCountPaths``
    (the estimated node count) and ``podScheduling.workload.workloadSelectorPaths`` (the workload selector).
    Paths are dot-separated keys into the values.  ``override_keys`` are the registry's ``valueOverrideKeys``:
    other names a ``set`` override may use for the component.
    """

    system_node_selector: List[str] = field(default_factory=list)
    system_tolerations: List[str] = field(default_factory=list)
    accelerated_node_selector: List[str] = field(default_factory=list)
    accelerated_tolerations: List[str] = field(default_factory=list)
    workload_gate_taint: List[str] = field(default_factory=list)
    node_count: List[str] = field(default_factory=list)
    workload_selector: List[str] = field(default_factory=list)
    override_keys: List[str] = field(default_factory=list)

    def all_paths(self) -> List[str]:
        """Every selector/toleration/workload-selector path (the ones a recipe may opt out of)."""
        return (self.system_node_selector + self.system_tolerations + self.accelerated_node_selector
                + self.accelerated_tolerations + self.workload_selector)

    @classmethod
    def from_registry(cls, entry: Optional[Dict[str, Any]], path: Optional[str] = None) -> "SchedulingPaths":
        """Read the scheduling fields of one registry entry (``None``: no entry); bad shapes name file and field."""
        entry = entry or {}
        name = entry.get("name", "?")
        out = cls()

        def mapping(value: Any, where: str) -> Dict[str, Any]:
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise RecipeSchemaError("must be a mapping", path=path, field="components[%s].%s" % (name, where), value=value)
            return value

        def paths(value: Any, where: str) -> List[str]:
            if value is None:
                return []
            where = "components[%s].%s" % (name, where)
            if not isinstance(value, list):
                raise RecipeSchemaError("must be a list of dot-separated value paths", path=path, field=where, value=value)
            for item in value:
                if not isinstance(item, str) or not item or any(not part for part in item.split(".")):
                    raise RecipeSchemaError("value path must be a non-empty dot-separated string without empty segments",
                                            path=path, field=where, value=item)
            return list(value)

        scheduling = mapping(entry.get("nodeScheduling"), "nodeScheduling")
        for section, key, attr in SCHEDULING_PATH_KEYS:
            block = mapping(scheduling.get(section), "nodeScheduling.%s" % section)
            setattr(out, attr, paths(block.get(key), "nodeScheduling.%s.%s" % (section, key)))
        out.node_count = paths(scheduling.get("nodeCountPaths"), "nodeScheduling.nodeCountPaths")
        workload = mapping(mapping(entry.get("podScheduling"), "podScheduling").get("workload"), "podScheduling.workload")
        out.workload_selector = paths(workload.get("workloadSelectorPaths"), "podScheduling.workload.workloadSelectorPaths")
        keys = entry.get("valueOverrideKeys")
        if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys)):
            raise RecipeSchemaError("must be a list of names", path=path, field="components[%s].valueOverrideKeys" % name,
                                    value=keys)
        out.override_keys = list(keys or [])
        return out
