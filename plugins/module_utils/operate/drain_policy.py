# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Which pods a drain evicts, skips or is blocked by, and what an eviction refusal says (pure logic, no API calls).

Pod rules follow ``kubectl drain``: DaemonSet pods and mirror (static) pods are skipped, finished pods (Succeeded/Failed)
need no eviction, pods not managed by a controller block the drain unless ``force``, pods with ``emptyDir`` volumes
block it unless ``delete_emptydir_data``. On top: protected namespaces (the namespaces the built-in recipe catalog
installs, ``kube-system``, and the runtime namespace ``kai-resource-reservation``) are skipped, and ``gpu_pods_only``
restricts the drain to pods that request ``nvidia.com/gpu`` (or a MIG slice ``nvidia.com/mig-*``); ``mapped_pods``
restricts it further, on the nodes it names, to the pods mapped to a faulty GPU (a partial drain before a GPU reset).

:func:`parse_eviction_refusal` reads the Status of a refused eviction (429 with a ``DisruptionBudget`` cause, or the
500 "more than one PodDisruptionBudget") and names the budget that blocks.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName, validate_namespace, validate_subdomain

#: namespaces the built-in recipe catalog installs components into (docs/catalog.md "Namespaces installed by the catalog";
#: tests/unit/test_drain_policy.py keeps this in sync with the catalog).
CATALOG_NAMESPACES = ("cert-manager", "gpu-operator", "kai-scheduler", "kube-system", "kubeflow-system", "monitoring",
                      "node-feature-discovery", "nvidia-dra-driver-gpu", "nvidia-network-operator")
#: namespaces charts of the catalog create at run time (KAI Scheduler's GPU-sharing reservation pods)
RUNTIME_NAMESPACES = ("kai-resource-reservation",)
DEFAULT_PROTECTED_NAMESPACES = tuple(sorted(set(CATALOG_NAMESPACES) | set(RUNTIME_NAMESPACES) | {"kube-system"}))

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
MANAGED_KINDS = ("ReplicationController", "ReplicaSet", "Job", "DaemonSet", "StatefulSet")

# pod decisions
EVICT = "evict"
SKIP = "skip"
BLOCK = "block"
WAIT = "wait"  # already terminating: only wait for it to go

_BUDGET_NEEDS_RE = re.compile(r"disruption budget (\S+) needs (\d+) healthy pods? and has (\d+) currently")
_BUDGET_PROCESSING_RE = re.compile(r"disruption budget (\S+) is still being processed")
_BUDGET_ANY_RE = re.compile(r"disruption budget (\S+?)[\s.,:;]")
MULTIPLE_PDBS_MARK = "more than one PodDisruptionBudget"


def pod_refs(value: Any, field_name: str = "pods") -> tuple[tuple[str, str], ...]:
    """A list of ``{namespace, name}`` as validated ``(namespace, name)`` pairs (names the field and value when bad)."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise K8sInvalidName(f"{field_name} must be a list of {{namespace, name}}", field_name, value)
    pods = []
    for index, pod in enumerate(value):
        where = f"{field_name}[{index}]"
        if not isinstance(pod, Mapping):
            raise K8sInvalidName(f"{where} must be a mapping with namespace and name", where, pod)
        pods.append((validate_namespace(pod.get("namespace"), f"{where}.namespace"), validate_subdomain(pod.get("name"), f"{where}.name")))
    return tuple(pods)


@dataclass(frozen=True)
class DrainPolicy:
    """Options that decide what happens to each pod."""

    protected_namespaces: frozenset[str] = frozenset(DEFAULT_PROTECTED_NAMESPACES)
    gpu_pods_only: bool = False
    delete_emptydir_data: bool = False
    force: bool = False
    #: ``(node, namespace, name)`` of the pods mapped to a faulty GPU (the DCGM exporter's pod labels of the alerts), for
    #: the nodes in ``mapped_nodes``: on those nodes only these pods are evicted (the partial drain before a GPU reset);
    #: a node without a mapping follows ``gpu_pods_only`` (every GPU pod: the exporter did not say which pods)
    mapped_pods: frozenset[tuple[str, str, str]] = frozenset()
    mapped_nodes: frozenset[str] = frozenset()

    def with_mapped_pods(self, mapping: Mapping[str, Iterable[tuple[str, str]]]) -> "DrainPolicy":
        """This policy with ``mapping`` (node -> its ``(namespace, name)`` pods on the faulty GPUs); a node mapped to no
        pod is left out (it follows ``gpu_pods_only``)."""
        pods = frozenset((node, namespace, name) for node, items in mapping.items() for namespace, name in items)
        return replace(self, mapped_pods=pods, mapped_nodes=frozenset(pod[0] for pod in pods))

    @classmethod
    def build(cls, extra_protected: Iterable[str] = (), gpu_pods_only: bool = False, delete_emptydir_data: bool = False,
              force: bool = False, protect_defaults: bool = True) -> "DrainPolicy":
        """Default protected namespaces (unless ``protect_defaults`` is false) plus ``extra_protected``."""
        base = set(DEFAULT_PROTECTED_NAMESPACES) if protect_defaults else set()
        return cls(frozenset(base | set(extra_protected)), gpu_pods_only, delete_emptydir_data, force)


@dataclass
class PodDecision:
    """What a drain does with one pod (``action`` is evict / skip / block / wait) and why."""

    namespace: str
    name: str
    uid: str
    action: str
    reason: str
    gpu: bool = False
    grace_s: Optional[int] = None
    controller: Optional[str] = None
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


def _quantity_positive(value: Any) -> bool:
    text = str(value).strip()
    try:
        return float(text) > 0
    except ValueError:
        return bool(text) and text not in ("0", "0m")


def pod_requests_gpu(pod: Mapping[str, Any]) -> bool:
    """Does any (init) container request or limit ``nvidia.com/gpu`` (or a MIG slice) above zero?"""
    spec = pod.get("spec") or {}
    for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        resources = (container or {}).get("resources") or {}
        for bucket in ("requests", "limits"):
            for key, value in ((resources.get(bucket) or {}).items()):
                if (key == GPU_RESOURCE or key.startswith(MIG_RESOURCE_PREFIX)) and _quantity_positive(value):
                    return True
    return False


def controller_of(pod: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The ownerReference with ``controller: true``, if any."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def emptydir_volumes(pod: Mapping[str, Any]) -> list[str]:
    """Names of the pod's emptyDir volumes."""
    return [str(v.get("name")) for v in (pod.get("spec") or {}).get("volumes") or () if isinstance(v, Mapping) and "emptyDir" in v]


def classify_pod(pod: Mapping[str, Any], policy: DrainPolicy) -> PodDecision:  # pylint: disable=too-many-return-statements
    """Decide what a drain does with ``pod`` (a Pod as a camelCase dict)."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    gpu = pod_requests_gpu(pod)
    grace = spec.get("terminationGracePeriodSeconds")
    ref = controller_of(pod)
    controller = f"{ref.get('kind')}/{ref.get('name')}" if ref else None

    def decide(action: str, reason: str) -> PodDecision:
        return PodDecision(namespace, name, str(meta.get("uid", "")), action, reason, gpu,
                           None if grace is None else int(grace), controller)

    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return decide(SKIP, "mirror pod (static pod managed by the kubelet)")
    if ref is not None and ref.get("kind") == "DaemonSet":
        return decide(SKIP, f"DaemonSet pod ({controller})")
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return decide(SKIP, f"finished pod (phase {phase})")
    if namespace in policy.protected_namespaces:
        return decide(SKIP, f"protected namespace {namespace}")
    node = str(spec.get("nodeName") or "")
    if node in policy.mapped_nodes:
        if (node, namespace, name) not in policy.mapped_pods:
            return decide(SKIP, "not mapped to the faulty GPU(s) (a partial drain evicts only the pods the alerts name)")
    elif policy.gpu_pods_only and not gpu:
        return decide(SKIP, "requests no nvidia.com/gpu (gpu_pods_only)")
    if meta.get("deletionTimestamp"):
        return decide(WAIT, "already terminating")
    problems = []
    if ref is None and not policy.force:
        problems.append(f"pod {namespace}/{name} is not managed by a controller (ReplicationController, ReplicaSet, Job, DaemonSet or "
                        "StatefulSet) and would not come back; set force=true to evict it")
    volumes = emptydir_volumes(pod)
    if volumes and not policy.delete_emptydir_data:
        problems.append(f"pod {namespace}/{name} has local storage (emptyDir volume(s) {', '.join(volumes)}) that eviction deletes; "
                        "set delete_emptydir_data=true to continue")
    if problems:
        return decide(BLOCK, "; ".join(problems))
    decision = decide(EVICT, "evict")
    if ref is None:
        decision.notes.append("unmanaged pod evicted (force)")
    if volumes:
        decision.notes.append(f"emptyDir data deleted ({', '.join(volumes)})")
    return decision


@dataclass(frozen=True)
class EvictionRefusal:
    """Why the API server refused an eviction."""

    kind: str  # "pdb" (retry later), "multiple_pdbs" (never succeeds), "throttled" (plain API throttling)
    pdb: Optional[str]
    message: str
    needs: Optional[int] = None
    has: Optional[int] = None

    @property
    def retryable(self) -> bool:
        """A PDB block clears when other pods become healthy; several PDBs on one pod never do."""
        return self.kind != "multiple_pdbs"

    def describe(self) -> str:
        """Human-readable cause."""
        if self.kind == "pdb" and self.pdb:
            counts = f" (needs {self.needs} healthy, has {self.has})" if self.needs is not None else ""
            return f"blocked by PodDisruptionBudget {self.pdb}{counts}"
        return self.message


def _status_dict(status: Any) -> dict[str, Any]:
    if isinstance(status, bytes):
        status = status.decode("utf-8", "replace")
    if isinstance(status, str):
        try:
            status = json.loads(status)
        except ValueError:
            return {"message": status}
    return dict(status) if isinstance(status, Mapping) else {}


def parse_eviction_refusal(code: int, status: Any) -> Optional[EvictionRefusal]:
    """Interpret a refused eviction (HTTP ``code``, Status body as dict/JSON text); None when it is not a refusal.

    429 with a ``DisruptionBudget`` cause (or the budget message) -> kind ``pdb`` naming the budget; 500 "more than one
    PodDisruptionBudget" -> kind ``multiple_pdbs``; any other 429 -> ``throttled``.
    """
    body = _status_dict(status)
    message = str(body.get("message") or "")
    causes = [c for c in ((body.get("details") or {}).get("causes") or []) if isinstance(c, Mapping)]
    if code == 500 and MULTIPLE_PDBS_MARK in message:
        return EvictionRefusal("multiple_pdbs", None, message or "the pod has more than one PodDisruptionBudget")
    if code != 429:
        return None
    texts = [str(c.get("message") or "") for c in causes if c.get("reason") == "DisruptionBudget"]
    texts += [message] + [str(c.get("message") or "") for c in causes]
    is_budget = any(c.get("reason") == "DisruptionBudget" for c in causes) or "disruption budget" in message.lower()
    if not is_budget:
        return EvictionRefusal("throttled", None, message or "429 Too Many Requests")
    for text in texts:
        match = _BUDGET_NEEDS_RE.search(text)
        if match:
            return EvictionRefusal("pdb", match.group(1), text, int(match.group(2)), int(match.group(3)))
    for text in texts:
        match = _BUDGET_PROCESSING_RE.search(text) or _BUDGET_ANY_RE.search(text + " ")
        if match and match.group(1).lower() not in ("budget", "budget."):
            return EvictionRefusal("pdb", match.group(1).rstrip("."), text)
    return EvictionRefusal("pdb", None, message or "blocked by a PodDisruptionBudget")


__all__ = ["BLOCK", "CATALOG_NAMESPACES", "DEFAULT_PROTECTED_NAMESPACES", "DrainPolicy", "EVICT", "EvictionRefusal", "PodDecision",
           "SKIP", "WAIT", "classify_pod", "parse_eviction_refusal", "pod_refs", "pod_requests_gpu"]
