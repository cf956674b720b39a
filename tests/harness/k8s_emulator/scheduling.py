# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Scheduling predicates: taints/tolerations, node selectors and required node affinity, and resource fit."""
from __future__ import annotations

from typing import Any

from .util import parse_quantity

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
#: tolerations the DaemonSet controller adds to its pods
DAEMONSET_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


def toleration_matches(tol: dict[str, Any], taint: dict[str, Any]) -> bool:
    """Upstream ``ToleratesTaint``: effect (empty = all), key (empty + Exists = all), operator Equal/Exists."""
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    operator = tol.get("operator") or "Equal"
    if not tol.get("key"):
        return operator == "Exists"
    if tol.get("key") != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (tol.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(pod_spec: dict[str, Any], node: dict[str, Any], effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> list[dict[str, Any]]:
    """Node taints (of the given effects) the pod does not tolerate; cordon counts as the unschedulable NoSchedule taint."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or () if t.get("effect") in effects]
    if (node.get("spec") or {}).get("unschedulable") and "NoSchedule" in effects:
        if not any(t.get("key") == UNSCHEDULABLE_TAINT["key"] for t in taints):
            taints.append(dict(UNSCHEDULABLE_TAINT))
    tolerations = pod_spec.get("tolerations") or ()
    return [t for t in taints if not any(toleration_matches(tol, t) for tol in tolerations)]


def _expr_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), [str(v) for v in expr.get("values") or ()]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])
        except ValueError:
            return False
    return False


def node_selector_matches(pod_spec: dict[str, Any], node: dict[str, Any]) -> bool:
    """``nodeSelector`` and required node affinity (terms ORed, expressions ANDed; matchFields metadata.name)."""
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        exprs_ok = all(_expr_matches(e, labels) for e in term.get("matchExpressions") or ())
        fields_ok = all(_expr_matches(e, {"metadata.name": node["metadata"]["name"]}) for e in term.get("matchFields") or ())
        if exprs_ok and fields_ok and (term.get("matchExpressions") or term.get("matchFields")):
            return True
    return False


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, float]:
    """Summed container requests (limits stand in for missing requests, as for extended resources)."""
    total = {name: 0.0 for name in RESOURCES}
    for container in pod_spec.get("containers") or ():
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for name in RESOURCES:
            value = requests.get(name, limits.get(name))
            if value is not None:
                total[name] += parse_quantity(value)
    return total


def pod_is_active(pod: dict[str, Any]) -> bool:
    """Not terminal (Succeeded/Failed)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def node_free(node: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, float]:
    """Allocatable minus the requests of the node's non-terminal pods; also the free pod slots under ``pods``."""
    alloc = (node.get("status") or {}).get("allocatable") or {}
    free = {name: parse_quantity(alloc.get(name, 0)) for name in RESOURCES}
    free["pods"] = parse_quantity(alloc.get("pods", 110))
    for pod in pods:
        if not pod_is_active(pod):
            continue
        for name, value in pod_requests(pod.get("spec") or {}).items():
            free[name] -= value
        free["pods"] -= 1
    return free
