# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Isolating faulty nodes: the follow-up tests of a failed test that still holds unverified members (pure, no I/O).

* **split** - a failing test with several unverified members is cut into as many parts as let its candidates be
  isolated by the round that brings the last evidence (or into single members when ``c <= singles_max``); parts are
  padded with verified nodes to ``min_test_size``; a single member is tested with healthy partners from its own domain
  (or from a domain whose link to it is verified).
* **confirm** - a suspect (it failed as the only unverified member, with verified partners and verified links) is
  retested with *different* partners, so a transient never condemns a node.

:class:`NodeSearch` adds these plans to :class:`.isolation_evidence.IsolationEvidence`; the planner
(:class:`.isolation_planner.IsolationPlanner`) calls them for each open failure.
"""
from __future__ import annotations

from typing import List, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_evidence import IsolationEvidence
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import GroupTest
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import chunks, natural_key


class NodeSearch(IsolationEvidence):
    """Plans the split and confirm tests that isolate the faulty members of failed tests."""

    def _partners(self, node: str, count: int, busy: Set[str], avoid: Set[str]) -> Tuple[List[str], bool]:
        """Pick ``count`` verified partners for ``node``: same domain first, then domains whose link
        to it is verified; last resort any domain not condemned (``clean`` False then)."""
        home = self._dom[node]
        chosen: List[str] = []

        def take(domain: int) -> None:
            for cand in self._verified_by_domain[domain]:
                if len(chosen) >= count:
                    return
                if cand not in busy and cand not in avoid and cand != node and cand not in chosen:
                    chosen.append(cand)

        take(home)
        if len(chosen) >= count:
            return chosen, True
        others = [d for d in range(self._ndom) if d != home and self._verified_by_domain[d]]
        for domain in others:
            if (self._ok_mask[home] >> domain) & 1:
                take(domain)
                if len(chosen) >= count:
                    return chosen, True
        clean = True
        for domain in others:
            code = self._code(home, domain)
            if not (self._ok_mask[home] >> domain) & 1 and code not in self._link_condemned:
                before = len(chosen)
                take(domain)
                if len(chosen) > before:
                    clean = False
                if len(chosen) >= count:
                    break
        return chosen, clean and len(chosen) >= count

    def _plan_single(self, node: str, source: str, busy: Set[str], tests: List[GroupTest], depth: int = 0) -> bool:
        """Test ``node`` with known-good partners, avoiding the partners of its earlier retests."""
        evidence, clean = self._node_isolated(node) if self._failures_of.get(node) else ([], 0)
        avoid: Set[str] = set()
        for tid in self._failures_of.get(node, ()):
            rec = self._tests[tid]
            if rec.suspect == node:
                avoid.update(n for n in rec.test.nodes if n != node)
        count = max(1, self.config.min_test_size - 1)
        partners, clean_pick = self._partners(node, count, busy, avoid)
        if not partners and avoid:
            partners, clean_pick = self._partners(node, count, busy, set())
        if not partners:
            if node not in self._waiting_logged:
                self._waiting_logged.add(node)
                self._log("waiting", node=node, test=source, reason="no unused healthy partner available this round")
            return False
        purpose = "confirm" if evidence else "split"
        why = ("retest suspect %s (isolated failure %d of %d, %d retest(s) so far) with different partner(s) %s" %
               (node, len(evidence), self._needed, clean, ", ".join(partners))) if evidence else \
            "isolate %s (from %s) with healthy partner(s) %s" % (node, source, ", ".join(partners))
        if not clean_pick:
            why += " [partner link not yet verified: counts only once that link passes]"
        self._new_test([node] + partners, purpose, why, busy, tests, depth)
        return True

    def _arity(self, count: int, depth: int) -> int:
        """Parts to cut ``count`` candidates into so that they are isolated by the round that brings the
        last evidence (one split per round; depth = splits already made above this test)."""
        levels = max(1, self._needed - 1 - depth)
        arity = 2
        while arity ** levels < count:
            arity += 1
        return min(arity, count)

    def _plan_node_work(self, tid: str, cands: List[str], busy: Set[str], tests: List[GroupTest]) -> bool:
        free = [n for n in cands if n not in busy]
        if not free:
            return False
        depth = self._tests[tid].depth + 1
        if len(cands) == 1:
            return self._plan_single(free[0], tid, busy, tests, depth)
        free.sort(key=lambda n: (self._dom[n], natural_key(n)))
        planned = False
        if len(free) <= self.config.singles_max:
            alone = [node for node in free if not self._plan_single(node, tid, busy, tests, depth)]
            planned = len(alone) < len(free)
            if len(alone) >= 2:
                # No healthy partner anywhere: test the candidates in pairs; passing pairs become partners.
                for chunk in chunks(alone, len(alone) // 2):
                    if frozenset(chunk) in self._failed_sets:
                        continue
                    why = "split %s (%d unverified, no healthy partner yet) into pairs of candidates" % (tid, len(cands))
                    self._new_test(chunk, "split", why, busy, tests, depth)
                    planned = True
            return planned
        parts = chunks(free, self._arity(len(free), depth - 1))
        for index, part in enumerate(parts):
            if len(part) == 1:
                planned = self._plan_single(part[0], tid, busy, tests, depth) or planned
                continue
            if frozenset(part) in self._failed_sets:
                continue  # that part failed already; its own follow-up narrows it
            pad: List[str] = []
            need = self.config.min_test_size - len(part)
            if need > 0:
                pad = self._partners(part[0], need, busy | set(part), set())[0]
            why = "split %s (%d unverified) part %d/%d" % (tid, len(cands), index + 1, len(parts))
            if pad:
                why += " padded with healthy %s" % ", ".join(pad)
            self._new_test(part + pad, "split", why, busy, tests, depth)
            planned = True
        return planned
