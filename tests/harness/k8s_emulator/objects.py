# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Per-kind validation and defaulting applied on create/update (the subset of the apiserver's that tests rely on)."""
from __future__ import annotations

import re
from typing import Any

from .errors import invalid
from .resources import ResourceType

_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
                 "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
             "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")

#: kinds whose names must be RFC 1123 labels (not subdomains)
_LABEL_NAMED = frozenset({"Namespace", "Service"})

DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def validate_name(rt: ResourceType, name: str) -> list[tuple[str, str, str]]:
    """Causes for an invalid ``metadata.name`` (empty list when valid)."""
    if rt.kind in _LABEL_NAMED:
        if len(name) > 63:
            return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": must be no more than 63 characters')]
        if not _LABEL_RE.match(name):
            return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {LABEL_MSG}')]
        return []
    if len(name) > 253:
        return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": must be no more than 253 characters')]
    if not _SUBDOMAIN_RE.match(name):
        return [("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {SUBDOMAIN_MSG}')]
    return []


def _validate_labels(labels: Any, field: str) -> list[tuple[str, str, str]]:
    causes: list[tuple[str, str, str]] = []
    if labels is None:
        return causes
    if not isinstance(labels, dict):
        return [(field, "FieldValueInvalid", "Invalid value: must be a map of strings")]
    for key, value in labels.items():
        prefix, _sep, short = str(key).rpartition("/")
        if (prefix and not _SUBDOMAIN_RE.match(prefix)) or not short or len(short) > 63 or not _QUALIFIED_NAME_RE.match(short):
            causes.append((field, "FieldValueInvalid", f'Invalid value: "{key}": name part must consist of alphanumeric characters, '
                                                       "'-', '_' or '.', and must start and end with an alphanumeric character"))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE_RE.match(value):
            causes.append((f"{field}", "FieldValueInvalid", f'Invalid value: "{value}": a valid label must be an empty string or '
                                                            "consist of alphanumeric characters, '-', '_' or '.', and must start "
                                                            "and end with an alphanumeric character"))
    return causes


def validate(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Raise 422 Invalid for the checks the emulator implements (names, labels, required pod/workload fields)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    causes = validate_name(rt, name)
    causes += _validate_labels(meta.get("labels"), "metadata.labels")
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if rt.kind == "Pod":
        if not spec.get("containers"):
            causes.append(("spec.containers", "FieldValueRequired", "Required value"))
    if rt.kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        selector = spec.get("selector")
        if not selector:
            causes.append(("spec.selector", "FieldValueRequired", "Required value"))
        else:
            tmpl_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            match_labels = selector.get("matchLabels") or {}
            if any(tmpl_labels.get(k) != v for k, v in match_labels.items()):
                causes.append(("spec.template.metadata.labels", "FieldValueInvalid",
                               f"Invalid value: {tmpl_labels!r}: `selector` does not match template `labels`"))
        if not ((spec.get("template") or {}).get("spec") or {}).get("containers"):
            causes.append(("spec.template.spec.containers", "FieldValueRequired", "Required value"))
        replicas = spec.get("replicas")
        if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
            causes.append(("spec.replicas", "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0"))
    if rt.kind == "PodDisruptionBudget":
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            causes.append(("spec", "FieldValueInvalid", "Invalid value: minAvailable and maxUnavailable cannot be both set"))
    if causes:
        raise invalid(rt.kind, rt.group, name, causes)


def apply_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Fill the defaults real apiservers (and admission) add on create."""
    spec = obj.setdefault("spec", {}) if rt.kind in _SPEC_KINDS else obj.get("spec")
    if rt.kind == "Pod":
        default_pod_spec(spec)
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", "BestEffort")
    elif rt.kind == "Namespace":
        spec.setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        labels = obj["metadata"].setdefault("labels", {})
        labels.setdefault("kubernetes.io/metadata.name", obj["metadata"]["name"])
    elif rt.kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        if rt.kind == "Deployment":
            spec.setdefault("strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
            spec.setdefault("progressDeadlineSeconds", 600)
        if rt.kind == "StatefulSet":
            spec.setdefault("podManagementPolicy", "OrderedReady")
        default_pod_spec((spec.get("template") or {}).setdefault("spec", {}), workload=True)
    elif rt.kind == "DaemonSet":
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        default_pod_spec((spec.get("template") or {}).setdefault("spec", {}), workload=True)
    elif rt.kind == "Job":
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        spec.setdefault("parallelism", 1)
        uid = obj["metadata"]["uid"]
        if not spec.get("selector"):
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        tmpl_meta = spec.setdefault("template", {}).setdefault("metadata", {})
        tmpl_labels = tmpl_meta.setdefault("labels", {})
        for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
            tmpl_labels.setdefault(key, uid)
        for key in ("batch.kubernetes.io/job-name", "job-name"):
            tmpl_labels.setdefault(key, obj["metadata"]["name"])
        default_pod_spec(spec["template"].setdefault("spec", {}), workload=True)
        spec["template"]["spec"].setdefault("restartPolicy", "Never")
    elif rt.kind == "PodDisruptionBudget":
        if spec is not None and spec.get("minAvailable") is None and spec.get("maxUnavailable") is None:
            spec["minAvailable"] = 1
        obj.setdefault("status", {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
    elif rt.kind == "Secret":
        obj.setdefault("type", "Opaque")


_SPEC_KINDS = frozenset({"Pod", "Namespace", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "PodDisruptionBudget", "Node"})


#: kinds whose metadata.generation the apiserver maintains (others, e.g. Pods up to 1.33, Nodes, Leases, have none)
GENERATION_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "PodDisruptionBudget",
                              "CustomResourceDefinition", "ReplicationController", "Ingress", "NetworkPolicy", "HorizontalPodAutoscaler"})


def tracks_generation(rt: ResourceType) -> bool:
    """Does the apiserver set and bump ``metadata.generation`` for this type (custom resources always do)?"""
    return rt.custom or rt.kind in GENERATION_KINDS


_NODE_INFO_KEYS = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion", "kubeletVersion",
                   "kubeProxyVersion", "operatingSystem", "architecture")


def fill_zero_fields(kind: str, obj: dict[str, Any]) -> None:
    """Fields the apiserver always serialises, even empty (Go structs without omitempty): what a client sees from it."""
    status = obj.get("status")
    if kind == "Pod" and isinstance(status, dict):
        for cond in status.get("conditions") or ():
            if isinstance(cond, dict):
                cond.setdefault("lastProbeTime", None)
        for key in ("containerStatuses", "initContainerStatuses"):
            for cstat in status.get(key) or ():
                if isinstance(cstat, dict):
                    cstat.setdefault("lastState", {})
    elif kind == "Node":
        status = obj.setdefault("status", {}) if status is None else status
        if isinstance(status, dict):
            status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
            info = status.setdefault("nodeInfo", {})
            for key in _NODE_INFO_KEYS:
                info.setdefault(key, "")


def _image_pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or an untagged image, else ``IfNotPresent`` (the apiserver's defaulting)."""
    name = image.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    return "Always" if "@" not in image and tag in ("", "latest") else "IfNotPresent"


def default_pod_spec(spec: dict[str, Any], workload: bool = False) -> None:
    """Pod spec defaults (restart policy, grace period, scheduler, container defaults) and, on pods, what admission adds
    (service account, priority, default NoExecute tolerations)."""
    if not workload:
        spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            if not isinstance(container, dict):
                continue
            container.setdefault("resources", {})
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("imagePullPolicy", _image_pull_policy(str(container.get("image") or "")))
    if not workload:
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        tolerations = spec.setdefault("tolerations", [])
        for tol in DEFAULT_TOLERATIONS:
            if not any(t.get("key") == tol["key"] and t.get("effect") == tol["effect"] for t in tolerations):
                tolerations.append(dict(tol))
