# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Jinja2 filters over the Configure phase: versions, constraints, deployment order, criteria.

Thin adapters: each filter converts its input, calls one function from
``plugins/module_utils`` and turns :class:`RecipeError`/``ValueError`` into
:class:`AnsibleFilterError` with the same clear message.  Documentation lives in
the sidecar files ``plugins/filter/<filter>.yml``.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import (
    OPERATORS, compare_versions, evaluate_constraints, summarize,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.snapshot import Snapshot, infer_criteria_with_evidence

#: Word aliases accepted by version_compare, as in ansible.builtin.version.
_OPERATOR_ALIASES = {"ge": ">=", "le": "<=", "gt": ">", "lt": "<", "eq": "==", "ne": "!=", "=": "=="}


def _fail(filter_name: str, exc: Exception) -> AnsibleFilterError:
    return AnsibleFilterError("dsxos.cluster.%s: %s" % (filter_name, exc))


def version_compare(left: Any, operator: str, right: Any) -> bool:
    """``'6.8.0-1015-aws' | dsxos.cluster.version_compare('>=', '6.8')`` -> True."""
    op = _OPERATOR_ALIASES.get(str(operator).strip(), str(operator).strip())
    if op not in OPERATORS:
        raise AnsibleFilterError("dsxos.cluster.version_compare: unknown operator %r (allowed: %s)"
                                 % (operator, ", ".join(OPERATORS + tuple(sorted(_OPERATOR_ALIASES)))))
    try:
        sign = compare_versions(left, right)
    except ValueError as exc:
        raise _fail("version_compare", exc) from None
    return {">=": sign >= 0, "<=": sign <= 0, ">": sign > 0, "<": sign < 0, "==": sign == 0, "!=": sign != 0}[op]


def constraint_check(constraints: Any, snapshot: Any) -> List[Dict[str, Any]]:
    """Evaluate constraints (list of ``{name, value}`` or a ``{name: value}`` mapping) against a snapshot."""
    if isinstance(constraints, Mapping):
        constraints = [{"name": name, "value": value} for name, value in constraints.items()]
    if not isinstance(constraints, (list, tuple)):
        raise AnsibleFilterError("dsxos.cluster.constraint_check: constraints must be a list of {name, value} "
                                 "mappings, got %s" % type(constraints).__name__)
    try:
        snap = Snapshot.from_dict(snapshot if snapshot is not None else {})
        return [result.to_dict() for result in evaluate_constraints(list(constraints), snap)]
    except (RecipeError, ValueError) as exc:
        raise _fail("constraint_check", exc) from None


def constraints_ok(results: Any, missing_is_failure: bool = False) -> bool:
    """True when no error-severity constraint failed (or, optionally, is missing)."""
    if not isinstance(results, (list, tuple)):
        raise AnsibleFilterError("dsxos.cluster.constraints_ok: expects the list returned by constraint_check, got %s"
                                 % type(results).__name__)
    try:
        return bool(summarize(results, missing_is_failure=bool(missing_is_failure))["ok"])
    except (RecipeError, ValueError) as exc:
        raise _fail("constraints_ok", exc) from None


def deployment_order(graph: Any) -> List[str]:
    """``{name: [dependencyRefs]}`` -> names ordered so dependencies come first."""
    # Imported here so this plugin loads even where the module is unavailable.
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure.deployment_order import (  # pylint: disable=import-outside-toplevel
        deployment_order as order_components,
    )
    if not isinstance(graph, Mapping):
        raise AnsibleFilterError("dsxos.cluster.deployment_order: expects a mapping name -> list of dependencies, got %s"
                                 % type(graph).__name__)
    clean: Dict[str, List[str]] = {}
    for name, deps in graph.items():
        if deps is None:
            deps = []
        if isinstance(deps, str) or not isinstance(deps, (list, tuple)):
            raise AnsibleFilterError("dsxos.cluster.deployment_order: dependencies of %r must be a list, got %r"
                                     % (name, deps))
        clean[str(name)] = [str(dep) for dep in deps]
    try:
        return list(order_components(clean))
    except (RecipeError, ValueError) as exc:
        raise _fail("deployment_order", exc) from None


def infer_criteria(snapshot: Any, evidence: bool = False) -> Dict[str, Any]:
    """Criteria dict from a snapshot; with ``evidence=true`` ``{criteria, evidence}``."""
    try:
        criteria, found = infer_criteria_with_evidence(Snapshot.from_dict(snapshot if snapshot is not None else {}))
    except (RecipeError, ValueError) as exc:
        raise _fail("infer_criteria", exc) from None
    if evidence:
        return {"criteria": criteria.to_dict(), "evidence": found}
    return criteria.to_dict()


class FilterModule:
    """dsxos.cluster recipe filters."""

    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {
            "version_compare": version_compare,
            "constraint_check": constraint_check,
            "constraints_ok": constraints_ok,
            "deployment_order": deployment_order,
            "infer_criteria": infer_criteria,
        }
