# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Deployment order of components from their ``dependencyRefs``.

Kahn's topological sort with an alphabetical tie-break (a heap), so the order is
deterministic: among the components whose dependencies are all deployed, the
alphabetically first one goes next.
"""
from __future__ import annotations

import heapq
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import DependencyError


def _find_cycle(remaining: Mapping[str, List[str]]) -> List[str]:
    """Return a cycle ``[a, b, ..., a]`` among nodes Kahn's algorithm could not place.

    Every remaining node still waits for at least one remaining dependency, so
    following (alphabetically first) remaining dependencies must revisit a node.
    """
    node = min(remaining)
    path: List[str] = []
    seen: Dict[str, int] = {}
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = min(dep for dep in remaining[node] if dep in remaining)
    cycle = path[seen[node]:]
    start = cycle.index(min(cycle))
    cycle = cycle[start:] + cycle[:start]
    return cycle + [cycle[0]]


def deployment_order(graph: Mapping[str, Sequence[str]], disabled: Iterable[str] = (),
                     warnings: Optional[List[str]] = None) -> List[str]:
    """Order ``{component: [dependencyRefs]}`` so every component follows its dependencies.

    ``disabled`` components are left out; a dependencyRef to a disabled component
    is dropped and a message appended to ``warnings`` (when given).  A
    dependencyRef naming no component of ``graph`` raises :class:`DependencyError`
    naming the component and the ref; a cycle raises it with the path
    ``"a -> b -> a"``.
    """
    disabled_set: Set[str] = set(disabled)
    for name in sorted(graph):
        for dep in graph[name] or ():
            if dep not in graph:
                raise DependencyError(
                    "component %r has a dependencyRef to %r, which is not a component of this recipe" % (name, dep),
                    field="componentRefs[%s].dependencyRefs" % name, value=dep)

    deps: Dict[str, List[str]] = {}
    for name in sorted(graph):
        if name in disabled_set:
            continue
        kept: List[str] = []
        for dep in graph[name] or ():
            if dep in disabled_set:
                if warnings is not None:
                    warnings.append("component %r: dependencyRef %r dropped because %r is disabled" % (name, dep, dep))
                continue
            if dep not in kept:
                kept.append(dep)
        deps[name] = kept

    dependents: Dict[str, List[str]] = {name: [] for name in deps}
    waiting: Dict[str, int] = {}
    for name, refs in deps.items():
        waiting[name] = len(refs)
        for dep in refs:
            dependents[dep].append(name)

    ready = [name for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order: List[str] = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for dependent in dependents[name]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                heapq.heappush(ready, dependent)

    if len(order) != len(deps):
        placed = set(order)
        remaining = {name: refs for name, refs in deps.items() if name not in placed}
        cycle = _find_cycle(remaining)
        raise DependencyError("dependency cycle between components: %s" % " -> ".join(cycle),
                              field="componentRefs[%s].dependencyRefs" % cycle[0], value=cycle[1])
    return order
