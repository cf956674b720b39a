# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Criteria: validation of a query, parsing of overlay criteria, and matching.

Matching rules (see ``docs/recipes.md``):

* an overlay field left at ``any`` (or empty) matches every query value;
* a specific overlay value matches only the same query value; it does **not**
  match a query field left at ``any``;
* ``nodes``: an overlay ``nodes: 0`` (or unset) matches any query; a non-zero
  overlay value matches only exactly that query value.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeResolveError, RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ANY, CRITERIA_FIELDS, CRITERIA_VALUES, Criteria

STRING_FIELDS = CRITERIA_FIELDS[:-1]


def _normalize(value: Any) -> str:
    return value.strip().lower() or ANY


def _parse_nodes(value: Any) -> Optional[int]:
    """``nodes`` as an int >= 0, or None when the value is not acceptable."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def allowed_values(name: str, extra_values: Optional[Mapping[str, Iterable[str]]] = None) -> List[str]:
    """Allowed values of criteria field ``name``: the model's enum plus ``extra_values[name]``."""
    values = list(CRITERIA_VALUES[name])
    for value in sorted((extra_values or {}).get(name) or ()):
        if value not in values:
            values.append(value)
    return values


def validate_criteria(data: Any, extra_values: Optional[Mapping[str, Iterable[str]]] = None, store: Any = None) -> Criteria:
    """Validate a criteria query (a mapping or a :class:`Criteria`) and return it normalized.

    Unknown fields and values outside ``model.CRITERIA_VALUES`` (plus ``extra_values``,
    or the values used by overlays of the user directories of ``store``) raise
    :class:`RecipeResolveError` listing what is allowed.  ``nodes`` must be an int >= 0.
    """
    if store is not None and extra_values is None:
        extra_values = store.extra_criteria_values
    if isinstance(data, Criteria):
        data = data.to_dict()
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise RecipeResolveError("criteria must be a mapping of %s" % ", ".join(CRITERIA_FIELDS),
                                 field="criteria", value=data)
    kwargs: Dict[str, Any] = {}
    for key in data:
        if key not in CRITERIA_FIELDS:
            raise RecipeResolveError("unknown criteria field %r; allowed fields: %s" % (key, ", ".join(CRITERIA_FIELDS)),
                                     field="criteria", value=key)
    for name in STRING_FIELDS:
        value = data.get(name)
        if value is None or value == "":
            kwargs[name] = ANY
            continue
        if not isinstance(value, str):
            raise RecipeResolveError("criteria %s must be a string" % name, field="criteria.%s" % name, value=value)
        normalized = _normalize(value)
        allowed = allowed_values(name, extra_values)
        if normalized not in allowed:
            raise RecipeResolveError("unknown criteria value %r for %s; allowed values: %s" % (value, name, ", ".join(allowed)),
                                     field="criteria.%s" % name, value=value)
        kwargs[name] = normalized
    nodes = _parse_nodes(data.get("nodes"))
    if nodes is None:
        raise RecipeResolveError("criteria nodes must be an integer >= 0 (0 means any)", field="criteria.nodes",
                                 value=data.get("nodes"))
    kwargs["nodes"] = nodes
    return Criteria(**kwargs)


def parse_overlay_criteria(data: Any, path: str) -> Criteria:
    """Parse ``spec.criteria`` of an overlay file.  Field names are checked strictly;
    values are not checked against the enum (an upstream tree may have newer values)."""
    if not isinstance(data, Mapping):
        raise RecipeSchemaError("spec.criteria must be a mapping", path=path, field="spec.criteria", value=data)
    kwargs: Dict[str, Any] = {}
    for key, value in data.items():
        if key not in CRITERIA_FIELDS:
            raise RecipeSchemaError("unknown criteria field %r; allowed fields: %s" % (key, ", ".join(CRITERIA_FIELDS)),
                                    path=path, field="spec.criteria", value=key)
        if key == "nodes":
            nodes = _parse_nodes(value)
            if nodes is None:
                raise RecipeSchemaError("criteria nodes must be an integer >= 0", path=path, field="spec.criteria.nodes",
                                        value=value)
            kwargs[key] = nodes
        elif value is None:
            kwargs[key] = ANY
        elif isinstance(value, str):
            kwargs[key] = _normalize(value)
        else:
            raise RecipeSchemaError("criteria %s must be a string" % key, path=path, field="spec.criteria.%s" % key,
                                    value=value)
    return Criteria(**kwargs)


def criteria_matches(overlay: Criteria, query: Criteria) -> bool:
    """True when overlay criteria ``overlay`` applies to the query ``query``."""
    for name in STRING_FIELDS:
        wanted = getattr(overlay, name)
        if wanted != ANY and wanted != getattr(query, name):
            return False
    return not overlay.nodes or overlay.nodes == query.nodes


def overlay_matches(overlay: Any, query: Criteria) -> bool:
    """``overlay`` is a :class:`Criteria` or an object with ``.criteria`` (a store overlay).

    An overlay without criteria (``None``: the base, intermediate overlays) never
    matches directly; it is only applied through the ``spec.base`` chain.
    """
    criteria = overlay if isinstance(overlay, Criteria) else getattr(overlay, "criteria", None)
    if criteria is None:
        return False
    return criteria_matches(criteria, query)


def criteria_key(criteria: Criteria) -> Tuple[Any, ...]:
    return tuple(getattr(criteria, name) for name in CRITERIA_FIELDS)


def duplicate_criteria(store: Any) -> List[Tuple[Dict[str, Any], List[str]]]:
    """Groups of overlays of ``store`` that declare identical criteria.

    Returns ``[(criteria_dict, [overlay names...]), ...]`` (sorted); empty when the
    catalog is clean.  At resolve time both overlays of such a group apply, in
    overlay-name order, so the alphabetically later one wins conflicts.
    """
    groups: Dict[Tuple[Any, ...], List[str]] = {}
    for name, overlay in store.overlays.items():
        if overlay.criteria is not None:
            groups.setdefault(criteria_key(overlay.criteria), []).append(name)
    out = []
    for key in sorted(groups, key=lambda k: tuple(str(x) for x in k)):
        names = groups[key]
        if len(names) > 1:
            out.append((dict(zip(CRITERIA_FIELDS, key)), sorted(names)))
    return out
