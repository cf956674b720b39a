# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A stand-in of kube-state-metrics' Node metrics: reads the Node objects of a cluster at every scrape and serves them.

``KubeStateMetricsStandin(list_nodes, allowlist)`` serves, for every Node ``list_nodes()`` returns (the objects of the
test's Kubernetes backend, emulator or real):

* ``kube_node_labels{node, label_<name>...}`` 1 with ONLY the labels the ``--metric-labels-allowlist`` lets through
  (``allowlist``: kube-state-metrics' ``metricLabelsAllowlist`` values, ``nodes=[dsxos.io/certification]``; ``*`` all),
  named as kube-state-metrics names them (``label_`` + the key with every character outside ``[a-zA-Z0-9_]`` as ``_``);
* ``kube_node_status_capacity{node, resource, unit}`` per ``status.capacity`` entry (``nvidia.com/gpu`` ->
  ``resource="nvidia_com_gpu", unit="integer"``, cpu in cores, memory in bytes);
* ``kube_node_status_condition{node, condition, status}`` per condition, 1 for its status and 0 for the other two;
* ``kube_node_spec_unschedulable{node}``.

So a label the Certify phase writes on a Node reaches Prometheus exactly when the catalog's allowlist names it.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .dcgm_exporter_standin import MetricsServer, format_value

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_ALLOW_ITEM = re.compile(r"^\s*([a-z0-9.]+)\s*=\s*\[(.*)\]\s*$")
_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30,
           "Ti": 2 ** 40, "Pi": 2 ** 50}
HELP = {
    "kube_node_labels": "Kubernetes labels converted to Prometheus labels.",
    "kube_node_status_capacity": "The capacity for different resources of a node.",
    "kube_node_status_condition": "The condition of a cluster node.",
    "kube_node_spec_unschedulable": "Whether a node can schedule new pods.",
}


def sanitize(name: str) -> str:
    return _INVALID.sub("_", name)


def parse_allowlist(items: Any) -> Dict[str, List[str]]:
    """``metricLabelsAllowlist`` (a list of ``resource=[label,...]``, or one comma-joined string as the flag takes it) ->
    resource -> label keys; ValueError on anything else."""
    if items is None:
        return {}
    if isinstance(items, str):
        items = re.findall(r"[a-z0-9.]+=\[[^\]]*\]", items)
    if not isinstance(items, (list, tuple)):
        raise ValueError("metricLabelsAllowlist must be a list of 'resource=[label,...]', got %r" % (items,))
    out: Dict[str, List[str]] = {}
    for item in items:
        match = _ALLOW_ITEM.match(str(item))
        if not match:
            raise ValueError("metricLabelsAllowlist entry %r is not 'resource=[label,...]'" % (item,))
        labels = [part.strip() for part in match.group(2).split(",") if part.strip()]
        out.setdefault(match.group(1), []).extend(labels)
    return out


def quantity(text: str) -> Optional[float]:
    """A Kubernetes quantity as a number (None when it is not a plain one)."""
    match = _QUANTITY.match(str(text))
    if not match or match.group(2) not in _SUFFIX:
        return None
    return float(match.group(1)) * _SUFFIX[match.group(2)]


def _unit(resource: str) -> str:
    if resource == "cpu":
        return "core"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return "byte"
    return "integer"


def node_samples(nodes: Sequence[Mapping[str, Any]], allowlist: Mapping[str, Sequence[str]]) -> List[Tuple[str, Dict[str, str], float]]:
    """Every (metric, labels, value) kube-state-metrics serves for ``nodes`` with ``allowlist``."""
    allowed = list(allowlist.get("nodes") or [])
    out: List[Tuple[str, Dict[str, str], float]] = []
    for node in nodes:
        name = node["metadata"]["name"]
        node_labels = node["metadata"].get("labels") or {}
        labels = {"node": name}
        for key in sorted(node_labels):
            if "*" in allowed or key in allowed:
                labels["label_" + sanitize(key)] = node_labels[key]
        out.append(("kube_node_labels", labels, 1.0))
        for resource, amount in sorted(((node.get("status") or {}).get("capacity") or {}).items()):
            value = quantity(amount)
            if value is not None:
                out.append(("kube_node_status_capacity", {"node": name, "resource": sanitize(resource), "unit": _unit(resource)}, value))
        for condition in (node.get("status") or {}).get("conditions") or []:
            for status in ("true", "false", "unknown"):
                out.append(("kube_node_status_condition", {"node": name, "condition": condition["type"], "status": status},
                            1.0 if str(condition.get("status")).lower() == status else 0.0))
        out.append(("kube_node_spec_unschedulable", {"node": name}, 1.0 if (node.get("spec") or {}).get("unschedulable") else 0.0))
    return out


def exposition(samples: Sequence[Tuple[str, Dict[str, str], float]]) -> str:
    lines: List[str] = []
    by_metric: Dict[str, List[Tuple[Dict[str, str], float]]] = {}
    for metric, labels, value in samples:
        by_metric.setdefault(metric, []).append((labels, value))
    for metric, items in by_metric.items():
        lines.append("# HELP %s %s" % (metric, HELP.get(metric, metric)))
        lines.append("# TYPE %s gauge" % metric)
        for labels, value in items:
            body = ",".join('%s="%s"' % (k, v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")) for k, v in labels.items())
            lines.append("%s{%s} %s" % (metric, body, format_value(value)))
    return "\n".join(lines) + "\n"


class KubeStateMetricsStandin(MetricsServer):
    """kube-state-metrics' Node metrics over ``list_nodes()`` (called at every scrape)."""

    def __init__(self, list_nodes: Callable[[], Sequence[Mapping[str, Any]]], allowlist: Mapping[str, Sequence[str]]) -> None:
        super().__init__(lambda: exposition(node_samples(list_nodes(), allowlist)))
        self.allowlist = dict(allowlist)
