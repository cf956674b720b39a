# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Isolating faulty links between topology domains, and covering the domain pairs nobody checked (pure, no I/O).

* **cross** - once domains have verified nodes, transversal tests (one verified node per domain) cover every pair of
  domains (:meth:`LinkSearch._plan_coverage`).
* A failing cross test whose members are all healthy means a fault *between* domains: its unverified domain pairs
  are narrowed with block designs (bipartite when the candidate pairs form a bipartite graph), laid out twice
  (contiguous and strided blocks) so that one transient clears nothing wrongly, until a two-node test isolates one
  pair, which is retested with other nodes (:meth:`LinkSearch._plan_pair_search`, :meth:`LinkSearch._plan_link_retests`)
  and reported as ``faulty link between X and Y``.

:class:`LinkSearch` adds these plans to :class:`.isolation_evidence.IsolationEvidence`; the planner
(:class:`.isolation_planner.IsolationPlanner`) calls them for each open failure.
"""
from __future__ import annotations

import math
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_evidence import IsolationEvidence, UnverifiedPairs
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import GroupTest
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import chunks


def _strided(items: Sequence[Any], count: int) -> List[List[Any]]:
    count = max(1, min(count, len(items)))
    return [list(items[i::count]) for i in range(count)]


class LinkSearch(IsolationEvidence):
    """Plans the tests that narrow a fault between domains down to one link, and the coverage transversals."""

    def _rep(self, domain: int, busy: Set[str], taken: Set[str], avoid: Set[str]) -> Optional[str]:
        fallback = None
        for cand in self._verified_by_domain[domain]:
            if cand in busy or cand in taken:
                continue
            if cand not in avoid:
                return cand
            if fallback is None:
                fallback = cand
        return fallback

    def _free_count(self, domain: int, busy: Set[str]) -> int:
        return sum(1 for n in self._verified_by_domain[domain] if n not in busy)

    def _domain_test(self, domains: Sequence[int], busy: Set[str], avoid: Set[str]) -> Optional[List[str]]:
        """One free verified node per domain (avoiding ``avoid`` when possible), or None."""
        picked = []
        taken: Set[str] = set()
        for domain in domains:
            rep = self._rep(domain, busy, taken, avoid)
            if rep is None:
                return None
            picked.append(rep)
            taken.add(rep)
        return picked

    def _has_candidate(self, members: Sequence[int], pairs: Any) -> bool:
        """True when an unverified pair among sorted ``members`` is in ``pairs``."""
        ok = self._ok_mask
        nd = self._ndom
        full = self._mask(members)
        for a in members:
            missing = (full & ~ok[a]) >> (a + 1)
            base = a * nd + a + 1
            while missing:
                low = missing & -missing
                if base + low.bit_length() - 1 in pairs:
                    return True
                missing ^= low
        return False

    def _bipartite(self, pairs: Any) -> Optional[Tuple[List[int], List[int]]]:
        adj: Dict[int, List[int]] = {}
        for code in pairs:
            a, b = divmod(code, self._ndom)
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
        color: Dict[int, int] = {}
        for start in sorted(adj):
            if start in color:
                continue
            color[start] = 0
            stack = [start]
            while stack:
                cur = stack.pop()
                for nxt in adj[cur]:
                    if nxt not in color:
                        color[nxt] = 1 - color[cur]
                        stack.append(nxt)
                    elif color[nxt] == color[cur]:
                        return None
        side_a = sorted(d for d, c in color.items() if c == 0)
        side_b = sorted(d for d, c in color.items() if c == 1)
        if len(side_a) > len(side_b):
            side_a, side_b = side_b, side_a
        return side_a, side_b

    def _plan_link_retests(self, tid: str, code: int, busy: Set[str], tests: List[GroupTest]) -> bool:
        """The only candidate pair of a failed test: test it with as many disjoint node pairs, in parallel, as
        the evidence still missing (a domain has many verified nodes, so a link needs no extra rounds)."""
        a, b = divmod(code, self._ndom)
        ids, clean = self._link_isolated().get(code, ([], 0))
        avoid: Set[str] = set()
        for old in ids:
            avoid.update(self._tests[old].test.nodes)
        copies = max(1, self._needed - len(ids), self.config.confirmations - clean)
        planned = 0
        for index in range(copies):
            picked = self._domain_test([a, b], busy, avoid)
            if picked is None:
                break
            why = "retest link %s-%s with other nodes (%d/%d this round; %d isolated failure(s) so far, from %s)" % (
                self._pair_names(code) + (index + 1, copies, len(ids), tid))
            self._new_test(picked, "confirm", why, busy, tests)
            planned += 1
        if not planned:
            self._log("waiting", test=tid, reason="no free verified nodes in %s/%s" % self._pair_names(code))
        return planned > 0

    def _plan_pair_search(self, tid: str, pairs: Any, busy: Set[str], tests: List[GroupTest]) -> bool:
        nd = self._ndom
        if len(pairs) == 1:
            return self._plan_link_retests(tid, next(iter(pairs)), busy, tests)
        if len(pairs) <= self._cross_step_tests:
            codes = sorted(pairs)
            degree: Dict[int, int] = {}
            for code in codes:
                for d in divmod(code, nd):
                    degree[d] = degree.get(d, 0) + 1
            if all(self._free_count(d, busy) >= deg for d, deg in degree.items()):
                for code in codes:
                    picked = self._domain_test(list(divmod(code, nd)), busy, set())
                    if picked is not None:
                        why = "isolate link %s-%s: one of %d candidate pair(s) of %s, tested on its own" % (
                            self._pair_names(code) + (len(codes), tid))
                        self._new_test(picked, "cross", why, busy, tests)
                return True
        if isinstance(pairs, UnverifiedPairs):
            domains = pairs.active_domains()
        else:
            domains = sorted({c // nd for c in pairs} | {c % nd for c in pairs})
        free = {d: self._free_count(d, busy) for d in domains}
        limit = self._cross_step_tests
        sides = self._bipartite(pairs) if len(pairs) <= len(domains) ** 2 // 4 else None  # denser is never bipartite
        candidates: List[Tuple[List[int], List[int]]] = []
        # Two layouts (contiguous and strided blocks) cover every candidate pair twice: a pair is cleared
        # when either of its tests passes, so one transient clears nothing wrongly and the pairs left are
        # the intersection of two failing tests (a much smaller set than one block pair).
        if sides is not None:
            side_a, side_b = sides
            cap_a = max(1, min(free[d] for d in side_a))  # tests each A domain can be in
            cap_b = max(1, min(free[d] for d in side_b))
            n_a = max(1, min(len(side_a), cap_b, round(math.sqrt(limit * len(side_a) / len(side_b)))))
            n_b = max(1, min(len(side_b), cap_a, limit // n_a))
            layouts = 1 if (n_a == len(side_a) and n_b == len(side_b)) else 2
            if layouts == 2:
                n_a = max(1, min(n_a, cap_b // 2))
                n_b = max(1, min(n_b, cap_a // 2))
            for split in (chunks, _strided)[:layouts]:
                for block_a in split(side_a, n_a):
                    for block_b in split(side_b, n_b):
                        candidates.append((block_a, block_b))
            shape = "bipartite %dx%d blocks over %d+%d domains, %d layout(s)" % (
                n_a, n_b, len(side_a), len(side_b), layouts)
        else:
            min_free = min(free.values())
            layouts = 2 if min_free >= 4 and len(domains) > 3 else 1
            blocks = 3
            while blocks + 1 <= len(domains) and (blocks + 1) * blocks // 2 <= limit \
                    and blocks * layouts <= min_free:
                blocks += 1
            blocks = min(blocks, len(domains))
            if blocks == len(domains):
                layouts = 1
            for split in (chunks, _strided)[:layouts]:
                parts = split(domains, blocks)
                for i, part_i in enumerate(parts):
                    for part_j in parts[i + 1:]:
                        candidates.append((part_i, part_j))
            shape = "%d blocks over %d domains (all block pairs), %d layout(s)" % (blocks, len(domains), layouts)
        seen: Set[FrozenSet[int]] = set()
        unique = []
        for block_a, block_b in candidates:
            key = frozenset(block_a) | frozenset(block_b)
            if key not in seen:
                seen.add(key)
                unique.append((block_a, block_b))
        candidates = unique
        planned = 0
        skipped = 0
        for block_a, block_b in candidates:
            members = sorted(set(block_a) | set(block_b))
            if not self._has_candidate(members, pairs):
                continue
            picked = self._domain_test(members, busy, set())
            if picked is None:
                skipped += 1
                continue
            why = "search %d candidate domain pair(s) of %s: %s, test %d" % (len(pairs), tid, shape, planned + 1)
            self._new_test(picked, "cross", why, busy, tests)
            planned += 1
        if skipped:
            self._log("waiting", test=tid, reason="%d search test(s) deferred: not enough free verified nodes" % skipped)
        return planned > 0

    # .......................................................... coverage
    def _plan_coverage(self, blocked: List[Any], busy: Set[str], tests: List[GroupTest]) -> None:
        """Transversal tests (one verified node per domain) over domain pairs nobody has checked yet."""
        nd = self._ndom
        if nd < 2:
            return
        live = [d for d in range(nd) if any(n not in busy for n in self._verified_by_domain[d])]
        if len(live) < 2:
            return
        conflict = [0] * nd
        ok = self._ok_mask
        for pairs in blocked:  # pairs under search: a transversal holding one would fail again
            for a in pairs.domains:
                conflict[a] |= pairs.mask & ~ok[a] & ~(1 << a)
        for code in self._link_condemned:
            a, b = divmod(code, nd)
            conflict[a] |= 1 << b
            conflict[b] |= 1 << a
        skip = [self._ok_mask[d] | conflict[d] | (1 << d) for d in range(nd)]
        for _attempt in range(self.config.cross_per_round):
            live_mask = self._mask(live)
            seed = next((a for a in live if live_mask & ~skip[a]), None)
            if seed is None:
                return
            other = live_mask & ~skip[seed]
            members = [seed, (other & -other).bit_length() - 1]
            members_mask = self._mask(members)
            for d in live:
                if (members_mask >> d) & 1 or conflict[d] & members_mask or not members_mask & ~skip[d]:
                    continue
                members.append(d)
                members_mask |= 1 << d
            members.sort()
            picked = self._domain_test(members, busy, set())
            if picked is None:
                return
            new_pairs = 0
            for d in members:
                new_pairs += (members_mask & ~skip[d]).bit_count()
                skip[d] |= members_mask
            why = "cover %d unchecked domain pair(s): one verified node from each of %d domains" % (
                new_pairs // 2, len(members))
            self._new_test(picked, "cross", why, busy, tests)
            live = [d for d in live if any(n not in busy for n in self._verified_by_domain[d])]
