# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Merging of recipe specs (overlay on top of the already merged recipe).

The rules (see ``docs/recipes.md``):

* ``constraints`` are keyed by ``name``: a later constraint replaces the earlier one in place.
* ``componentRefs`` are keyed by ``name`` and merged field by field
  (:func:`merge_component_ref`).
* ``validation`` phases are replaced whole, per phase name (``phase: null`` removes one).
* ``overrides`` are merged *deeply* (:func:`deep_merge`).

Nothing here mutates its inputs: specs parsed from files are cached by the
store and shared between resolutions.  Data is depth-checked where it enters (``safe_yaml`` at load,
``check_depth`` for options); the walks here still refuse anything deeper than
:data:`..common.safe_yaml.MAX_DEPTH` with a :class:`RecipeSchemaError` rather than a ``RecursionError``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import MAX_DEPTH
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError

#: Component fields replaced by the overlay when the overlay value is non-empty.
SCALAR_FIELDS = ("type", "source", "chart", "version", "namespace", "path", "tag", "valuesFile")
#: List fields replaced whole when present (not null) in the overlay, even when empty.
REPLACED_LIST_FIELDS = ("dependencyRefs", "patches", "expectedResources")
#: List fields appended to (without duplicates).
APPENDED_LIST_FIELDS = ("manifestFiles",)


def _too_deep() -> RecipeSchemaError:
    return RecipeSchemaError("data nested deeper than %d levels; refused" % MAX_DEPTH, field="overrides")


def copy_data(value: Any, depth: int = 0) -> Any:
    """Copy plain YAML data (dicts, lists, scalars); faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            raise _too_deep()
        return {k: copy_data(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            raise _too_deep()
        return [copy_data(v, depth + 1) for v in value]
    return value


def deep_merge(base: Any, overlay: Any, depth: int = 0) -> Any:
    """Return ``overlay`` merged onto ``base`` as new data.

    Maps merge recursively; lists and scalars in ``overlay`` replace; an explicit
    ``None`` in ``overlay`` is kept as ``None`` (it does not delete the key, so a
    Helm ``key: null`` reaches the chart).  Neither input is modified.
    """
    if isinstance(base, dict) and isinstance(overlay, dict):
        if depth >= MAX_DEPTH:
            raise _too_deep()
        out = {k: copy_data(v, depth + 1) for k, v in base.items()}
        for key, value in overlay.items():
            if key in out and isinstance(out[key], dict) and isinstance(value, dict):
                out[key] = deep_merge(out[key], value, depth + 1)
            else:
                out[key] = copy_data(value, depth + 1)
        return out
    return copy_data(overlay, depth)


def merge_component_ref(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> Dict[str, Any]:
    """Merge one componentRef mapping onto another of the same name (new dict)."""
    out: Dict[str, Any] = {k: copy_data(v) for k, v in base.items()}
    for key, value in overlay.items():
        if key == "name":
            continue
        if key in SCALAR_FIELDS:
            if value not in (None, ""):
                out[key] = value
        elif key in REPLACED_LIST_FIELDS:
            if value is not None:
                out[key] = copy_data(value)
        elif key in APPENDED_LIST_FIELDS:
            merged = list(out.get(key) or [])
            for item in value or []:
                if item not in merged:
                    merged.append(item)
            out[key] = merged
        elif key == "overrides":
            if value:
                out[key] = deep_merge(out.get(key) or {}, value)
        elif value is not None:  # unknown/extension fields: replaced when present
            out[key] = copy_data(value)
    return out


def _merge_named(base: List[Dict[str, Any]], overlay: List[Dict[str, Any]], component: bool) -> List[Dict[str, Any]]:
    out = list(base)  # entries are replaced, never mutated, so a shallow copy suffices
    index = {item["name"]: pos for pos, item in enumerate(out)}
    for item in overlay:
        name = item["name"]
        pos = index.get(name)
        if pos is None:
            index[name] = len(out)
            out.append(merge_component_ref({"name": name}, item) if component else copy_data(item))
        elif component:
            out[pos] = merge_component_ref(out[pos], item)
        else:
            out[pos] = copy_data(item)
    return out


def empty_spec() -> Dict[str, Any]:
    """The neutral element of :func:`merge_spec`."""
    return {"constraints": [], "componentRefs": [], "validation": {}}


def merge_spec(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> Dict[str, Any]:
    """Merge an overlay (or mixin) ``spec`` onto a merged spec; returns a new spec.

    Only ``constraints``, ``componentRefs`` and ``validation`` are merged; ``base``,
    ``criteria`` and ``mixins`` steer resolution and are not part of the result.
    """
    validation = dict(base.get("validation") or {})
    for phase, body in (overlay.get("validation") or {}).items():
        if body is None:  # ``phase: null`` removes an inherited phase
            validation.pop(phase, None)
        else:
            validation[phase] = copy_data(body)
    return {
        "constraints": _merge_named(list(base.get("constraints") or []), list(overlay.get("constraints") or []), False),
        "componentRefs": _merge_named(list(base.get("componentRefs") or []), list(overlay.get("componentRefs") or []), True),
        "validation": validation,
    }
