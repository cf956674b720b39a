# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""PodDisruptionBudget arithmetic (the disruption controller's) and the pods/eviction subresource.

Healthy = Running pod with condition Ready=True and no deletionTimestamp. Expected pods = the scale of the
controllers owning the matching pods (Deployment via its ReplicaSet, ReplicaSet, StatefulSet, Job parallelism,
DaemonSet desiredNumberScheduled); pods without a controller are left out (with an integer ``minAvailable`` the
expected count is simply the number of matching pods, as upstream). Percentages round up
(``GetScaledValueFromIntOrPercent(..., roundUp=true)``) for both minAvailable and maxUnavailable.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ApiError
from .resources import ResourceRegistry
from .selectors import labels_match, selector_from_spec
from .store import Store

EVICTION_BLOCKED = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


def pod_is_ready(pod: dict[str, Any]) -> bool:
    """Ready condition True."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def pod_is_healthy(pod: dict[str, Any]) -> bool:
    """Counts towards a PDB's currentHealthy."""
    return (not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") == "Running"
            and pod_is_ready(pod))


def scaled_value(value: Any, total: int, round_up: bool = True) -> int:
    """intstr scaling: ``"50%"`` of total (rounded up), or the int itself."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            pct = float(value[:-1])
        except ValueError as exc:
            raise ApiError(422, f"invalid value for IntOrString: invalid value {value!r}") from exc
        raw = pct * total / 100.0
        return int(math.ceil(raw) if round_up else math.floor(raw))
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError as exc:
            raise ApiError(422, f"invalid value for IntOrString: invalid value {value!r}") from exc
    return int(value or 0)


@dataclass
class BudgetState:
    """What the disruption controller computes for one PDB."""

    name: str
    namespace: str
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    disruptions_allowed: int
    healthy_pods: list[str]

    def status_fields(self) -> dict[str, Any]:
        """The PDB ``status`` counters."""
        return {"currentHealthy": self.current_healthy, "desiredHealthy": self.desired_healthy,
                "expectedPods": self.expected_pods, "disruptionsAllowed": self.disruptions_allowed}


class DisruptionLogic:
    """PDB evaluation and evictions against a :class:`Store`."""

    def __init__(self, store: Store, registry: ResourceRegistry) -> None:
        self.store = store
        self.registry = registry
        self._pods = registry.lookup("", "v1", "pods")
        self._pdbs = registry.lookup("policy", "v1", "poddisruptionbudgets")

    def matching_pods(self, pdb: dict[str, Any]) -> list[dict[str, Any]]:
        """Pods of the PDB's namespace its selector matches (a PDB with an empty selector matches all)."""
        selector = selector_from_spec((pdb.get("spec") or {}).get("selector"), "spec.selector")
        if selector is None:
            return []
        return self.store.list(self._pods, pdb["metadata"]["namespace"], selector)[0]

    def pdbs_for_pod(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """PDBs in the pod's namespace whose selector matches the pod's labels."""
        out = []
        for pdb in self.store.iter_objects(self._pdbs, pod["metadata"]["namespace"]):
            selector = selector_from_spec((pdb.get("spec") or {}).get("selector"), "spec.selector")
            if labels_match(selector, pod["metadata"].get("labels")):
                out.append(pdb)
        return out

    def _controller_scale(self, namespace: str, ref: dict[str, Any]) -> int | None:
        kind, name = ref.get("kind"), ref.get("name", "")
        lookups = {"ReplicaSet": ("apps", "replicasets"), "StatefulSet": ("apps", "statefulsets"), "Deployment": ("apps", "deployments"),
                   "Job": ("batch", "jobs"), "DaemonSet": ("apps", "daemonsets"), "ReplicationController": ("", "replicationcontrollers")}
        if kind not in lookups:
            return None
        group, plural = lookups[kind]
        rt = self.registry.lookup(group, "v1", plural)
        obj = self.store.find(rt, namespace, name) if rt else None
        if obj is None:
            return None
        if kind == "ReplicaSet":
            for owner in obj["metadata"].get("ownerReferences") or ():
                if owner.get("controller") and owner.get("kind") == "Deployment":
                    scale = self._controller_scale(namespace, owner)
                    if scale is not None:
                        return scale
        if kind == "DaemonSet":
            return int((obj.get("status") or {}).get("desiredNumberScheduled", 0))
        if kind == "Job":
            return int((obj.get("spec") or {}).get("parallelism", 1))
        return int((obj.get("spec") or {}).get("replicas", 1))

    def evaluate(self, pdb: dict[str, Any]) -> BudgetState:
        """currentHealthy / desiredHealthy / expectedPods / disruptionsAllowed for ``pdb`` now."""
        spec = pdb.get("spec") or {}
        namespace = pdb["metadata"]["namespace"]
        pods = self.matching_pods(pdb)
        healthy = [p["metadata"]["name"] for p in pods if pod_is_healthy(p)]
        min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
        if max_unavailable is None and isinstance(min_available, int):
            expected = len(pods)
            desired = int(min_available)
        else:
            seen: dict[tuple[str, str], int] = {}
            for pod in pods:
                for ref in pod["metadata"].get("ownerReferences") or ():
                    if ref.get("controller"):
                        key = (ref.get("kind", ""), ref.get("name", ""))
                        if key not in seen:
                            scale = self._controller_scale(namespace, ref)
                            seen[key] = scale if scale is not None else 0
            expected = sum(seen.values())
            if max_unavailable is not None:
                desired = max(0, expected - scaled_value(max_unavailable, expected, True))
            else:
                desired = scaled_value(min_available, expected, True)
        allowed = max(0, len(healthy) - desired)
        return BudgetState(pdb["metadata"]["name"], namespace, len(healthy), desired, expected, allowed, healthy)

    def evict(self, namespace: str, name: str, body: dict[str, Any] | None, dry_run: bool) -> dict[str, Any]:
        """POST pods/<name>/eviction: check the (single) matching PDB, then delete the pod gracefully.

        Returns the success Status; raises 429 (budget), 500 (several PDBs), 404 (no pod).
        """
        body = body or {}
        options = dict(body.get("deleteOptions") or {})
        with self.store.lock:
            pod = self.store.get(self._pods, namespace, name)
            phase = (pod.get("status") or {}).get("phase")
            ignore_pdb = phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))
            if not ignore_pdb:
                pdbs = self.pdbs_for_pod(pod)
                if len(pdbs) > 1:
                    raise ApiError(500, MULTIPLE_PDBS, "InternalError")
                if pdbs:
                    self._check_budget(pdbs[0], pod)
            self.store.delete(self._pods, namespace, name, options, dry_run=dry_run)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _check_budget(self, pdb: dict[str, Any], pod: dict[str, Any]) -> None:
        state = self.evaluate(pdb)
        spec = pdb.get("spec") or {}
        if not pod_is_ready(pod):
            policy = spec.get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
            if policy == "AlwaysAllow" or state.current_healthy >= state.desired_healthy:
                return
        elif state.disruptions_allowed > 0:
            return
        cause = {"reason": "DisruptionBudget",
                 "message": f"The disruption budget {state.name} needs {state.desired_healthy} healthy pods and has "
                            f"{state.current_healthy} currently"}
        raise ApiError(429, EVICTION_BLOCKED, "TooManyRequests", {"causes": [cause]})
