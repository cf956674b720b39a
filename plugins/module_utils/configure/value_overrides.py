# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Bundle-time value overrides: ``component:path.to.field=value`` (``aicr bundle --set``).

* ``component`` is a component of the recipe or one of its registry ``valueOverrideKeys`` aliases; the path is
  dot-separated map keys (no list indexes: a path through a list or a scalar is an error naming the segment).
* The value is typed like a YAML scalar: ``true``/``false``, ``null``/``~``, integers, floats; ``'...'`` or
  ``"..."`` keeps the text inside as a string (the way to write an empty string or ``"true"`` as text);
  anything else is a string.
* ``component:enabled=false`` leaves the component out of the bundle: out of the deployment order, out of
  ``recipe.yaml`` (marked disabled), and out of the ``dependencyRefs`` of the components that named it (an edge to a
  left-out component is assumed satisfied outside the bundle, as AICR prunes it; the result warns about it).
  ``enabled=true`` on a component the recipe disables is refused, like AICR does.
* An override for a component that is not in the bundle (unknown, disabled by the recipe, left out by
  ``disabled_components`` or ``enabled=false``) is refused instead of being dropped silently.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import RecipeResult, SchedulingPaths

ENABLED_KEY = "enabled"
_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?$")


class ValueOverrideError(RenderError):
    """A ``set`` entry is malformed or cannot apply; ``value`` is the entry as given."""


@dataclass(frozen=True)
class SetOverride:
    """One parsed ``component:path=value`` entry (``raw`` is the text as given)."""

    component: str
    path: Tuple[str, ...]
    value: Any
    raw: str

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


@dataclass
class OverridePlan:
    """What the ``set`` entries mean for one recipe: components to leave out, value overrides per component."""

    dropped: List[str] = field(default_factory=list)
    values: Dict[str, List[SetOverride]] = field(default_factory=dict)


def parse_scalar(text: str) -> Any:
    """A ``set`` value typed as a YAML scalar (see the module docstring)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "~"):
        return None
    if _INT.match(text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts (sys.int_info.default_max_str_digits): kept as text
            return text
    if _FLOAT.match(text):
        return float(text)
    return text


def parse_set(entries: Optional[Sequence[Any]], option: str = "set") -> List[SetOverride]:
    """Parse ``component:path.to.field=value`` strings; an error names the entry and what is wrong with it."""
    out: List[SetOverride] = []
    for index, raw in enumerate(entries or ()):
        where = "%s[%d]" % (option, index)
        if not isinstance(raw, str):
            raise ValueOverrideError("%s must be a 'component:path=value' string" % where, field=where, value=raw)
        component, colon, rest = raw.partition(":")
        path_text, equals, value_text = rest.partition("=")
        if not colon or not equals:
            raise ValueOverrideError("%s %r: expected 'component:path.to.field=value'" % (where, raw), field=where, value=raw)
        if not component.strip() or component != component.strip():
            raise ValueOverrideError("%s %r: the component name is empty or has spaces" % (where, raw), field=where, value=raw)
        path = tuple(path_text.split("."))
        if any(not part for part in path):
            raise ValueOverrideError("%s %r: the value path %r has an empty segment" % (where, raw, path_text),
                                     field=where, value=raw)
        if value_text == "":
            raise ValueOverrideError("%s %r: the value is empty (write '' for an empty string)" % (where, raw),
                                     field=where, value=raw)
        value = parse_scalar(value_text)
        if path == (ENABLED_KEY,) and not isinstance(value, bool):
            raise ValueOverrideError("%s %r: %s takes true or false" % (where, raw, ENABLED_KEY), field=where, value=raw)
        out.append(SetOverride(component, path, value, raw))
    return out


def alias_map(result: RecipeResult, scheduling: Mapping[str, SchedulingPaths]) -> Dict[str, str]:
    """Every name a ``set`` entry may use -> the component it means (the name itself wins over an alias)."""
    names: Dict[str, str] = {}
    for ref in result.component_refs:
        for alias in scheduling.get(ref.name, SchedulingPaths()).override_keys:
            names.setdefault(alias, ref.name)
    for ref in result.component_refs:
        names[ref.name] = ref.name
    return names


def plan_overrides(result: RecipeResult, overrides: Sequence[SetOverride], scheduling: Mapping[str, SchedulingPaths],
                   left_out: Iterable[str] = (), structured: Optional[Mapping[str, Any]] = None) -> OverridePlan:
    """Resolve the components of ``overrides``; decide which components ``enabled`` drops.

    ``left_out`` are components already left out (``disabled_components``); ``structured`` is the
    ``values_overrides`` mapping, checked against the same set of components."""
    names = alias_map(result, scheduling)
    recipe_disabled = {ref.name for ref in result.component_refs if not ref.enabled}
    absent: Dict[str, str] = {name: "the recipe disables it" for name in recipe_disabled}
    absent.update({name: "disabled_components lists it" for name in left_out or () if name in names.values()})
    plan = OverridePlan()
    enabled: Dict[str, Tuple[bool, SetOverride]] = {}
    resolved: List[Tuple[str, SetOverride]] = []
    for item in overrides:
        target = names.get(item.component)
        if target is None:
            raise ValueOverrideError("set %r names component %r, which is not part of the recipe (components: %s)" % (
                item.raw, item.component, ", ".join(sorted(ref.name for ref in result.component_refs))),
                field="set", value=item.raw)
        if item.path == (ENABLED_KEY,):
            if item.value and target in recipe_disabled:
                raise ValueOverrideError("set %r: component %r is disabled by the recipe and cannot be re-enabled at "
                                         "bundle time" % (item.raw, target), field="set", value=item.raw)
            enabled[target] = (bool(item.value), item)
        else:
            resolved.append((target, item))
    for target, (value, item) in enabled.items():
        if not value and target not in absent:
            absent[target] = "set %r removes it" % item.raw
            plan.dropped.append(target)
    for target, item in resolved:
        if target in absent:
            raise ValueOverrideError("set %r cannot apply: component %r is not in the bundle (%s)" % (
                item.raw, target, absent[target]), field="set", value=item.raw)
        plan.values.setdefault(target, [])
    # aliases first, then the component's own name: on the same path the own name wins
    for target, item in sorted(resolved, key=lambda pair: pair[1].component == pair[0]):
        plan.values[target].append(item)
    for name, extra in (structured or {}).items():
        if name in absent and not (isinstance(extra, Mapping) and set(extra) == {ENABLED_KEY}):
            raise ValueOverrideError("values_overrides for component %r cannot apply: it is not in the bundle (%s)" % (
                name, absent[name]), field="values_overrides", value=name)
    plan.dropped.sort()
    return plan


def apply_set(values: Dict[str, Any], overrides: Sequence[SetOverride]) -> Dict[str, Any]:
    """A copy of ``values`` with ``overrides`` applied (shallowest path first, then by path; the last entry for one
    path wins).  A path through a list or a scalar is an error naming the segment."""
    out = copy.deepcopy(values)
    last: Dict[Tuple[str, ...], SetOverride] = {}
    for item in overrides:
        last.pop(item.path, None)
        last[item.path] = item
    for path in sorted(last, key=lambda p: (len(p), p)):
        item = last[path]
        current = out
        for depth, part in enumerate(path[:-1]):
            nxt = current.get(part)
            if nxt is None and part not in current:
                nxt = current[part] = {}
            if not isinstance(nxt, dict):
                raise ValueOverrideError("set %r: %s is a %s, not a mapping, so the path cannot go through it" % (
                    item.raw, ".".join(path[:depth + 1]), _kind(nxt)), field="set", value=item.raw)
            current = nxt
        current[path[-1]] = copy.deepcopy(item.value)
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def without_components(result: RecipeResult, names: Iterable[str], why: str) -> RecipeResult:
    """A copy of ``result`` with ``names`` disabled: out of the deployment order and of the other components'
    ``dependencyRefs`` (one warning per pruned edge, in ``metadata.warnings``)."""
    drop: Set[str] = {ref.name for ref in result.component_refs if ref.name in set(names) and ref.enabled}
    if not drop:
        return result
    out = RecipeResult.from_dict(result.to_dict())
    warnings = list(out.metadata.get("warnings") or [])
    for ref in out.component_refs:
        if ref.name in drop:
            ref.enabled = False
            continue
        for dep in ref.dependency_refs:
            if dep in drop:
                warnings.append("component %r depends on %r, which %s leaves out of the bundle; the dependency is "
                                "assumed to be satisfied outside the bundle" % (ref.name, dep, why))
        ref.dependency_refs = [d for d in ref.dependency_refs if d not in drop]
    out.deployment_order = [name for name in out.deployment_order if name not in drop]
    enabled = [ref for ref in out.component_refs if ref.enabled]
    order = {name: i for i, name in enumerate(out.deployment_order)}
    enabled.sort(key=lambda r: order.get(r.name, len(order)))
    out.component_refs = enabled + sorted((ref for ref in out.component_refs if not ref.enabled), key=lambda r: r.name)
    out.metadata["warnings"] = warnings
    out.metadata["disabledComponents"] = sorted(set(out.metadata.get("disabledComponents") or []) | drop)
    return out
