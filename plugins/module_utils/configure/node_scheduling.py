# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Node scheduling of a bundle: selectors, tolerations, the workload gate and the node count, written into each
component's Helm values at the paths its registry entry names (AICR's ``nodeScheduling`` / ``podScheduling``).

Options (the ``aicr bundle`` flags of the same meaning):

* ``system_node_selector`` / ``accelerated_node_selector`` / ``workload_selector``: ``{label: value}`` or a list of
  ``key=value`` strings.  No default: an empty selector is written nowhere.
* ``system_node_tolerations`` / ``accelerated_node_tolerations``: a list of ``key=value:Effect`` (operator Equal),
  ``key:Effect`` (operator Exists) strings or toleration mappings.  Not given (``None``): AICR's default, one
  toleration ``{operator: Exists}`` that tolerates every taint.  An empty list writes nothing.
* ``workload_gate_taint``: ``key=value:Effect`` or ``key:Effect`` (or a mapping), written as that string at the
  ``accelerated.taintStrPaths``.
* ``nodes``: the estimated node count, written as an integer at ``nodeCountPaths`` when above 0.

Per path, as AICR does it: a recipe that sets a selector/toleration path to an empty value (``[]``, ``{}``,
``null``) in its componentRef ``overrides`` opts that path out; a recipe or ``set`` override that puts a non-empty
value at a toleration path gets the bundle's tolerations appended (duplicates dropped); otherwise the bundle's value
replaces what the component's values hold there.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import SchedulingPaths

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("Exists", "Equal")
#: AICR's tolerations when none are given: tolerate every taint
DEFAULT_TOLERATIONS: List[Dict[str, Any]] = [{"operator": "Exists"}]
_TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class NodeSchedulingError(RenderError):
    """A scheduling option is malformed; ``field`` names the option, ``value`` the offending entry."""


@dataclass
class SchedulingOptions:
    """The validated scheduling options of one bundle (see the module docstring)."""

    system_node_selector: Dict[str, str] = field(default_factory=dict)
    system_tolerations: List[Dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(DEFAULT_TOLERATIONS))
    accelerated_node_selector: Dict[str, str] = field(default_factory=dict)
    accelerated_tolerations: List[Dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(DEFAULT_TOLERATIONS))
    workload_gate_taint: str = ""
    workload_selector: Dict[str, str] = field(default_factory=dict)
    nodes: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return copy.deepcopy({
            "system_node_selector": self.system_node_selector, "system_node_tolerations": self.system_tolerations,
            "accelerated_node_selector": self.accelerated_node_selector,
            "accelerated_node_tolerations": self.accelerated_tolerations,
            "workload_gate_taint": self.workload_gate_taint, "workload_selector": self.workload_selector,
            "nodes": self.nodes,
        })


def _check_label_key(key: Any, option: str, raw: Any) -> str:
    if not isinstance(key, str) or not key or len(key.rsplit("/", 1)[-1]) > 63 or not _LABEL_KEY.match(key):
        raise NodeSchedulingError("%s: label key %r is not a valid Kubernetes label key" % (option, key),
                                  field=option, value=raw)
    return key


def parse_node_selector(value: Any, option: str) -> Dict[str, str]:
    """``{key: value}``, a list of ``key=value`` strings or one such string -> ``{key: value}``."""
    if value is None:
        return {}
    out: Dict[str, str] = {}
    if isinstance(value, Mapping):
        for key, val in value.items():
            if isinstance(val, bool):
                val = "true" if val else "false"
            if not isinstance(val, (str, int)) or isinstance(val, bool):
                raise NodeSchedulingError("%s: the value of label %r must be a string" % (option, key), field=option,
                                          value={key: val})
            out[_check_label_key(key, option, {key: val})] = str(val)
        return out
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise NodeSchedulingError("%s must be a mapping of labels or a list of key=value strings" % option,
                                  field=option, value=value)
    for item in items:
        if not isinstance(item, str) or "=" not in item:
            raise NodeSchedulingError("%s: invalid selector %r, expected key=value" % (option, item), field=option,
                                      value=item)
        key, val = item.split("=", 1)
        out[_check_label_key(key, option, item)] = val
    return out


def _toleration_from_string(item: str, option: str) -> Dict[str, Any]:
    parts = item.split(":")
    if len(parts) != 2:
        raise NodeSchedulingError("%s: invalid toleration %r, expected key=value:Effect or key:Effect" % (option, item),
                                  field=option, value=item)
    key_value, effect = parts
    key, has_value, val = key_value.partition("=")
    if not has_value:
        key, val = key_value, ""
    return _toleration({"key": key, "value": val, "effect": effect,
                        "operator": "Equal" if val else "Exists"}, option, item)


def _toleration(data: Mapping[str, Any], option: str, raw: Any) -> Dict[str, Any]:
    unknown = sorted(str(k) for k in data if k not in _TOLERATION_KEYS)
    if unknown:
        raise NodeSchedulingError("%s: unknown toleration field(s) %s; allowed: %s" % (
            option, ", ".join(unknown), ", ".join(_TOLERATION_KEYS)), field=option, value=raw)
    key = data.get("key") or ""
    val = data.get("value")
    val = "" if val is None else val
    effect = data.get("effect") or ""
    operator = data.get("operator") or ("Equal" if val != "" else ("Exists" if not key else "Equal"))
    if not isinstance(key, str) or not isinstance(val, str) or not isinstance(effect, str):
        raise NodeSchedulingError("%s: toleration key, value and effect must be strings" % option, field=option, value=raw)
    if key:
        _check_label_key(key, option, raw)
    if effect and effect not in EFFECTS:
        raise NodeSchedulingError("%s: invalid taint effect %r in %r; allowed: %s" % (option, effect, raw, ", ".join(EFFECTS)),
                                  field=option, value=raw)
    if operator not in OPERATORS:
        raise NodeSchedulingError("%s: toleration operator %r in %r must be Exists or Equal" % (option, operator, raw),
                                  field=option, value=raw)
    if operator == "Exists" and val:
        raise NodeSchedulingError("%s: a toleration with operator Exists takes no value (%r)" % (option, raw),
                                  field=option, value=raw)
    if not key and operator != "Exists":
        raise NodeSchedulingError("%s: a toleration without a key must use operator Exists (%r)" % (option, raw),
                                  field=option, value=raw)
    out: Dict[str, Any] = {}
    if key:
        out["key"] = key
    out["operator"] = operator
    if val:
        out["value"] = val
    if effect:
        out["effect"] = effect
    seconds = data.get("tolerationSeconds")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int) or effect != "NoExecute":
            raise NodeSchedulingError("%s: tolerationSeconds must be an integer and needs effect NoExecute (%r)" % (option, raw),
                                      field=option, value=raw)
        out["tolerationSeconds"] = seconds
    return out


def parse_tolerations(value: Any, option: str) -> Optional[List[Dict[str, Any]]]:
    """Strings (``key=value:Effect``, ``key:Effect``) and/or toleration mappings -> normalized mappings.

    ``None`` stays ``None`` (the caller applies :data:`DEFAULT_TOLERATIONS`)."""
    if value is None:
        return None
    items = [value] if isinstance(value, (str, Mapping)) else value
    if not isinstance(items, list):
        raise NodeSchedulingError("%s must be a list of tolerations" % option, field=option, value=value)
    out: List[Dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            out.append(_toleration_from_string(item, option))
        elif isinstance(item, Mapping):
            out.append(_toleration(item, option, dict(item)))
        else:
            raise NodeSchedulingError("%s: a toleration is a key=value:Effect string or a mapping" % option,
                                      field=option, value=item)
    return out


def parse_taint(value: Any, option: str = "workload_gate_taint") -> str:
    """``key=value:Effect`` / ``key:Effect`` (or ``{key, value, effect}``) -> that canonical string; ``None``/"" -> ""."""
    if value in (None, ""):
        return ""
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in ("key", "value", "effect"))
        if unknown:
            raise NodeSchedulingError("%s: unknown taint field(s) %s; allowed: effect, key, value" % (option, ", ".join(unknown)),
                                      field=option, value=dict(value))
        key, val, effect = value.get("key") or "", value.get("value") or "", value.get("effect") or ""
        raw: Any = dict(value)
    elif isinstance(value, str):
        parts = value.split(":")
        if len(parts) != 2:
            raise NodeSchedulingError("%s: invalid taint %r, expected key=value:Effect or key:Effect" % (option, value),
                                      field=option, value=value)
        key, _sep, val = parts[0].partition("=")
        effect = parts[1]
        raw = value
    else:
        raise NodeSchedulingError("%s must be a key=value:Effect string" % option, field=option, value=value)
    if not key:
        raise NodeSchedulingError("%s: the taint %r has no key" % (option, raw), field=option, value=raw)
    _check_label_key(key, option, raw)
    if effect not in EFFECTS:
        raise NodeSchedulingError("%s: invalid taint effect %r in %r; allowed: %s" % (option, effect, raw, ", ".join(EFFECTS)),
                                  field=option, value=raw)
    return "%s=%s:%s" % (key, val, effect) if val else "%s:%s" % (key, effect)


def parse_nodes(value: Any, option: str = "nodes") -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            return int(value.strip())
        raise NodeSchedulingError("%s must be a non-negative integer" % option, field=option, value=value)
    if value < 0:
        raise NodeSchedulingError("%s must be >= 0 (0 means unset)" % option, field=option, value=value)
    return value


def scheduling_options(system_node_selector: Any = None, system_node_tolerations: Any = None,
                       accelerated_node_selector: Any = None, accelerated_node_tolerations: Any = None,
                       workload_gate_taint: Any = None, workload_selector: Any = None, nodes: Any = 0) -> SchedulingOptions:
    """Validate the bundle's scheduling options (names as in the ``bundle_render`` module)."""
    system_tol = parse_tolerations(system_node_tolerations, "system_node_tolerations")
    accel_tol = parse_tolerations(accelerated_node_tolerations, "accelerated_node_tolerations")
    return SchedulingOptions(
        system_node_selector=parse_node_selector(system_node_selector, "system_node_selector"),
        system_tolerations=copy.deepcopy(DEFAULT_TOLERATIONS) if system_tol is None else system_tol,
        accelerated_node_selector=parse_node_selector(accelerated_node_selector, "accelerated_node_selector"),
        accelerated_tolerations=copy.deepcopy(DEFAULT_TOLERATIONS) if accel_tol is None else accel_tol,
        workload_gate_taint=parse_taint(workload_gate_taint),
        workload_selector=parse_node_selector(workload_selector, "workload_selector"),
        nodes=parse_nodes(nodes),
    )


def _lookup(data: Any, path: str) -> tuple:
    current = data
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return False, None
        current = current[part]
    return True, current


def _parent(values: Dict[str, Any], path: str) -> tuple:
    """The mapping holding the last segment of ``path``; missing or non-mapping ancestors become mappings (as AICR)."""
    parts = path.split(".")
    current = values
    for part in parts[:-1]:
        nxt = current.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            current[part] = nxt
        current = nxt
    return current, parts[-1]


def _identity(toleration: Any) -> Any:
    if not isinstance(toleration, Mapping):
        return None
    return tuple(str(toleration.get(k, "")) for k in _TOLERATION_KEYS)


def _merge_tolerations(existing: List[Any], additions: List[Dict[str, Any]]) -> List[Any]:
    seen = {_identity(t) for t in existing} - {None}
    out = list(existing)
    for tol in additions:
        if _identity(tol) not in seen:
            seen.add(_identity(tol))
            out.append(copy.deepcopy(tol))
    return out


def path_policy(paths: SchedulingPaths, authored: Optional[Mapping[str, Any]],
                set_paths: Iterable[str] = ()) -> tuple:
    """(opt-out paths, append paths) of one component: see the module docstring."""
    explicit: Set[str] = set(set_paths)
    opt_out: Set[str] = set()
    append: Set[str] = set()
    for path in paths.all_paths():
        found, value = _lookup(authored or {}, path)
        if not found and path not in explicit:
            continue
        if found and value in (None, [], {}):
            opt_out.add(path)
        else:
            append.add(path)
    return opt_out, append


def apply_scheduling(values: Dict[str, Any], paths: SchedulingPaths, options: SchedulingOptions,
                     authored: Optional[Mapping[str, Any]] = None, set_paths: Iterable[str] = ()) -> List[str]:
    """Write ``options`` into ``values`` (in place) at ``paths``; returns the paths written, in order."""
    opt_out, append = path_policy(paths, authored, set_paths)
    written: List[str] = []

    def selector(target: List[str], labels: Dict[str, str]) -> None:
        if not labels:
            return
        for path in target:
            if path not in opt_out:
                parent, key = _parent(values, path)
                parent[key] = dict(labels)
                written.append(path)

    def tolerations(target: List[str], tols: List[Dict[str, Any]]) -> None:
        if not tols:
            return
        for path in target:
            if path in opt_out:
                continue
            parent, key = _parent(values, path)
            existing = parent.get(key) if path in append and isinstance(parent.get(key), list) else []
            parent[key] = _merge_tolerations(existing, tols)
            written.append(path)

    def scalar(target: List[str], value: Any) -> None:
        for path in target:
            parent, key = _parent(values, path)
            parent[key] = value
            written.append(path)

    selector(paths.system_node_selector, options.system_node_selector)
    tolerations(paths.system_tolerations, options.system_tolerations)
    selector(paths.accelerated_node_selector, options.accelerated_node_selector)
    tolerations(paths.accelerated_tolerations, options.accelerated_tolerations)
    selector(paths.workload_selector, options.workload_selector)
    if options.workload_gate_taint:
        scalar(paths.workload_gate_taint, options.workload_gate_taint)
    if options.nodes > 0:
        scalar(paths.node_count, options.nodes)
    return written
