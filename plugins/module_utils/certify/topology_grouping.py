# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Topology-aware grouping of GPU nodes for parallel fabric screening.

Nodes are grouped by the first topology source that names at least one eligible node:

1. a Kubernetes node label (``GroupingConfig.label_keys`` in order: NVLink clique,
   Topograph accelerator/block labels, network level 1, rack);
2. an inventory host variable (``GroupingConfig.host_var_key``);
3. an inventory group whose name starts with one of ``GroupingConfig.inventory_group_prefixes``;
4. otherwise ``ceil(sqrt(N))`` disjoint groups of consecutive node names (natural order).

Every eligible node lands in exactly one group.  Each group carries its topology
*domain* (the label value, host-var value, inventory group, or a synthetic ``sqrt-<i>``);
the isolation planner treats domains as the units between which link faults can sit.
Domains larger than ``max_group_size`` are split into near-equal groups; groups smaller
than ``min_group_size`` are merged (a merged group spans several domains).
Cordoned and unready nodes are excluded, each with its reason.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError

#: Label keys tried in order (NVLink domain first, then the switch hierarchy, then racks).
DEFAULT_LABEL_KEYS: Tuple[str, ...] = (
    "nvidia.com/gpu.clique",
    "network.topology.nvidia.com/accelerator",
    "network.topology.nvidia.com/block",
    "topology.kubernetes.io/network-level-1",
    "topology.kubernetes.io/rack",
)
DEFAULT_HOST_VAR_KEY = "dsxos_topology_domain"
DEFAULT_INVENTORY_PREFIXES: Tuple[str, ...] = ("clique_", "rack_", "switch_", "leaf_")

#: Domain name given to nodes that the chosen topology source does not name.
UNASSIGNED_DOMAIN = "(unassigned)"


class GroupingError(CertifyError):
    """Bad grouping input (duplicate node, empty name, inconsistent size limits)."""


@dataclass(frozen=True)
class NodeInfo:
    """One candidate node: its name, Kubernetes labels, readiness and inventory placement."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    ready: bool = True
    cordoned: bool = False
    inventory_groups: Tuple[str, ...] = ()
    host_vars: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "labels": dict(self.labels), "ready": self.ready, "cordoned": self.cordoned,
                "inventory_groups": list(self.inventory_groups), "host_vars": dict(self.host_vars)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "nodes") -> "NodeInfo":
        if not isinstance(data, Mapping):
            raise GroupingError("node entry must be a mapping", file=source, value=data)
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise GroupingError("node entry needs a non-empty string name", file=source, field="name", value=name)
        labels = data.get("labels") or {}
        if not isinstance(labels, Mapping):
            raise GroupingError("node labels must be a mapping", file=source, field="%s.labels" % name, value=labels)
        groups = data.get("inventory_groups") or ()
        if isinstance(groups, str) or not isinstance(groups, (list, tuple)):
            raise GroupingError("inventory_groups must be a list", file=source, field="%s.inventory_groups" % name,
                                value=groups)
        host_vars = data.get("host_vars") or {}
        if not isinstance(host_vars, Mapping):
            raise GroupingError("host_vars must be a mapping", file=source, field="%s.host_vars" % name, value=host_vars)
        return cls(name=name, labels={str(k): str(v) for k, v in labels.items()}, ready=bool(data.get("ready", True)),
                   cordoned=bool(data.get("cordoned", False)), inventory_groups=tuple(str(g) for g in groups),
                   host_vars=dict(host_vars))


def node_info_from_k8s(node: Mapping[str, Any]) -> NodeInfo:
    """Build a :class:`NodeInfo` from a Kubernetes ``Node`` object (dict form).

    ``spec.unschedulable`` means cordoned; the ``Ready`` condition must have status ``True``.
    """
    meta = node.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise GroupingError("Kubernetes Node without metadata.name", field="metadata.name", value=name)
    spec = node.get("spec") or {}
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(isinstance(c, Mapping) and c.get("type") == "Ready" and str(c.get("status")) == "True"
                for c in conditions)
    labels = meta.get("labels") or {}
    return NodeInfo(name=name, labels={str(k): str(v) for k, v in labels.items()}, ready=ready,
                    cordoned=bool(spec.get("unschedulable", False)))


@dataclass(frozen=True)
class GroupingConfig:
    """How to group.  ``max_group_size`` None means no upper limit."""

    label_keys: Tuple[str, ...] = DEFAULT_LABEL_KEYS
    host_var_key: Optional[str] = DEFAULT_HOST_VAR_KEY
    inventory_group_prefixes: Tuple[str, ...] = DEFAULT_INVENTORY_PREFIXES
    min_group_size: int = 2
    max_group_size: Optional[int] = 64

    def validate(self) -> None:
        if not isinstance(self.min_group_size, int) or self.min_group_size < 1:
            raise GroupingError("min_group_size must be an integer >= 1", field="min_group_size",
                                value=self.min_group_size)
        if self.max_group_size is not None:
            if not isinstance(self.max_group_size, int) or self.max_group_size < 1:
                raise GroupingError("max_group_size must be an integer >= 1 or null", field="max_group_size",
                                    value=self.max_group_size)
            if self.max_group_size < self.min_group_size:
                raise GroupingError("max_group_size is smaller than min_group_size (%d)" % self.min_group_size,
                                    field="max_group_size", value=self.max_group_size)


@dataclass(frozen=True)
class NodeGroup:
    """One screening group: its name, the topology domains it covers and its nodes (sorted)."""

    name: str
    domains: Tuple[str, ...]
    nodes: Tuple[str, ...]

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "domains": list(self.domains), "nodes": list(self.nodes)}


@dataclass
class Grouping:
    """Result of :func:`group_nodes`."""

    strategy: str
    groups: List[NodeGroup]
    domain_of: Dict[str, str]
    excluded: Dict[str, str]
    unassigned: Tuple[str, ...] = ()
    order: Tuple[str, ...] = ()  # eligible nodes in natural order

    @property
    def domains(self) -> List[str]:
        """Distinct domains, sorted naturally."""
        return sorted(set(self.domain_of.values()), key=natural_key)

    def to_dict(self) -> Dict[str, Any]:
        return {"strategy": self.strategy, "groups": [g.to_dict() for g in self.groups],
                "domain_of": dict(self.domain_of), "excluded": dict(self.excluded),
                "unassigned": list(self.unassigned)}


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> Tuple[Any, ...]:
    """Sort key that orders ``node2`` before ``node10``."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(text))


def exclusion_reason(node: NodeInfo) -> Optional[str]:
    """Why ``node`` cannot be tested, or None when it can."""
    reasons = []
    if node.cordoned:
        reasons.append("cordoned (spec.unschedulable)")
    if not node.ready:
        reasons.append("not Ready")
    return " and ".join(reasons) if reasons else None


def _inventory_domain(node: NodeInfo, prefixes: Sequence[str]) -> Optional[str]:
    for prefix in prefixes:
        matches = sorted(g for g in node.inventory_groups if g.startswith(prefix))
        if matches:
            return matches[0]
    return None


def _choose_source(nodes: Sequence[NodeInfo], config: GroupingConfig) -> Tuple[str, Dict[str, Optional[str]]]:
    """Return (strategy, {node: domain or None}) for the first source that names any node."""
    for key in config.label_keys:
        found = {n.name: (n.labels.get(key) or None) for n in nodes}
        if any(found.values()):
            return "label:%s" % key, found
    if config.host_var_key:
        key = config.host_var_key
        found = {n.name: (str(n.host_vars[key]) if n.host_vars.get(key) not in (None, "") else None) for n in nodes}
        if any(found.values()):
            return "host_var:%s" % key, found
    if config.inventory_group_prefixes:
        found = {n.name: _inventory_domain(n, config.inventory_group_prefixes) for n in nodes}
        if any(found.values()):
            return "inventory:%s" % ",".join(config.inventory_group_prefixes), found
    return "sqrt", {}


def chunks(items: Sequence[Any], count: int) -> List[List[Any]]:
    """Split ``items`` into ``count`` consecutive near-equal chunks (the first ones one longer).

    ``count`` is clamped to ``1..len(items)``, so no chunk is empty; no items give no chunks.
    """
    count = max(1, min(count, len(items)))
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return [c for c in out if c]


def _split_domain(members: List[str], max_size: Optional[int]) -> List[List[str]]:
    if max_size is None or len(members) <= max_size:
        return [members]
    return chunks(members, math.ceil(len(members) / max_size))


def _sqrt_groups(names: List[str], config: GroupingConfig) -> List[List[str]]:
    total = len(names)
    count = max(1, math.ceil(math.sqrt(total)))
    if config.max_group_size is not None:
        count = max(count, math.ceil(total / config.max_group_size))
    count = min(count, max(1, total // config.min_group_size))
    return chunks(names, count)


def _merge_small(groups: List[Tuple[Tuple[str, ...], List[str]]],
                 min_size: int) -> List[Tuple[Tuple[str, ...], List[str]]]:
    """Merge groups below ``min_size`` with each other (in order); a remainder that is still
    too small joins the smallest other group."""
    out = [g for g in groups if len(g[1]) >= min_size]
    domains: List[str] = []
    members: List[str] = []
    for group_domains, group_members in (g for g in groups if len(g[1]) < min_size):
        domains.extend(group_domains)
        members.extend(group_members)
        if len(members) >= min_size:
            out.append((tuple(dict.fromkeys(domains)), members))
            domains, members = [], []
    if members:
        if out:
            index = min(range(len(out)), key=lambda i: (len(out[i][1]), i))
            old_domains, old_members = out[index]
            out[index] = (tuple(dict.fromkeys(old_domains + tuple(domains))), old_members + members)
        else:
            out.append((tuple(dict.fromkeys(domains)), members))
    return out


def group_nodes(nodes: Sequence[NodeInfo], config: Optional[GroupingConfig] = None) -> Grouping:
    """Group ``nodes`` for parallel screening (see the module docstring for the rules)."""
    config = config or GroupingConfig()
    config.validate()
    seen = set()
    for index, node in enumerate(nodes):
        if not isinstance(node, NodeInfo):
            raise GroupingError("node entry is not a NodeInfo", field="nodes[%d]" % index, value=node)
        if not node.name:
            raise GroupingError("node without a name", field="nodes[%d].name" % index, value=node.name)
        if node.name in seen:
            raise GroupingError("duplicate node name", field="nodes[%d].name" % index, value=node.name)
        seen.add(node.name)

    excluded: Dict[str, str] = {}
    eligible: List[NodeInfo] = []
    for node in nodes:
        reason = exclusion_reason(node)
        if reason:
            excluded[node.name] = reason
        else:
            eligible.append(node)
    keys = {n.name: natural_key(n.name) for n in eligible}
    eligible.sort(key=lambda n: keys[n.name])
    if not eligible:
        return Grouping(strategy="none", groups=[], domain_of={}, excluded=excluded)

    strategy, found = _choose_source(eligible, config)
    domain_of: Dict[str, str] = {}
    raw: List[Tuple[Tuple[str, ...], List[str]]] = []
    unassigned: List[str] = []
    if strategy == "sqrt":
        for index, chunk in enumerate(_sqrt_groups([n.name for n in eligible], config)):
            domain = "sqrt-%d" % (index + 1)
            raw.append(((domain,), chunk))
            for name in chunk:
                domain_of[name] = domain
    else:
        by_domain: Dict[str, List[str]] = {}
        for node in eligible:
            domain = found.get(node.name)
            if domain is None:
                unassigned.append(node.name)
                domain = UNASSIGNED_DOMAIN
            domain_of[node.name] = domain
            by_domain.setdefault(domain, []).append(node.name)
        for domain in sorted(by_domain, key=natural_key):
            for chunk in _split_domain(by_domain[domain], config.max_group_size):
                raw.append(((domain,), chunk))

    groups: List[NodeGroup] = []
    for index, (domains, members) in enumerate(_merge_small(raw, config.min_group_size)):
        base = domains[0] if len(domains) == 1 else "+".join(domains[:3]) + ("+..." if len(domains) > 3 else "")
        groups.append(NodeGroup(name="g%03d:%s" % (index + 1, base), domains=tuple(domains),
                                nodes=tuple(sorted(members, key=keys.__getitem__))))
    return Grouping(strategy=strategy, groups=groups, domain_of=domain_of, excluded=excluded,
                    unassigned=tuple(unassigned), order=tuple(n.name for n in eligible))
