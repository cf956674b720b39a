# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What adaptive fault isolation has proven so far, and the rule it reasons with (pure, no I/O).

*A passing test proves every member healthy and every pair of its topology domains linked correctly*; a failing test
is explained by an unverified member, an unverified domain pair, or a transient. :class:`IsolationEvidence` keeps the
planned tests and their outcomes: the verified nodes (per domain), the verified domain pairs (one bit mask per
domain), the failures of each node, and the nodes and links condemned. A node or link is condemned once it has
``min_evidence`` *isolated* failures (every other member and domain pair proven healthy), ``confirmations`` of them
planned as retests against known-good partners. Every decision goes to :attr:`IsolationEvidence.trace`.

:class:`UnverifiedPairs` is the set of unverified domain pairs of one test, read on demand from the masks. The
planning itself (:mod:`.isolation_planner`, :mod:`.isolation_node_search`, :mod:`.isolation_link_search`) builds on
:class:`IsolationEvidence`.
"""
from __future__ import annotations

import math
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import GroupTest, IsolationConfig, Round, TestOutcome
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import Grouping, NodeInfo, group_nodes, natural_key


class _TestRecord:
    """Planner-side bookkeeping of one planned test."""

    __slots__ = ("test", "domains", "suspect", "suspect_link", "passed", "seq", "depth")

    def __init__(self, test: GroupTest, domains: Tuple[int, ...], suspect: Optional[str],
                 suspect_link: Optional[int], seq: int, depth: int = 0) -> None:
        self.seq = seq
        self.depth = depth
        self.test = test
        self.domains = domains
        self.suspect = suspect
        self.suspect_link = suspect_link
        self.passed: Optional[bool] = None


class UnverifiedPairs:
    """The unverified domain pairs of one test, read on demand from the planner's verification masks
    (a failing transversal over 256 domains has 32 640 of them; they are rarely all needed)."""

    __slots__ = ("_ok", "_nd", "domains", "mask", "_count", "_iter")

    def __init__(self, ok: List[int], nd: int, domains: Sequence[int], iterate: Any) -> None:
        self._ok = ok
        self._nd = nd
        self.domains = tuple(domains)
        mask = 0
        for d in domains:
            mask |= 1 << d
        self.mask = mask
        self._count: Optional[int] = None
        self._iter = iterate

    def __len__(self) -> int:
        if self._count is None:
            ok, mask = self._ok, self.mask
            self._count = sum(((mask & ~ok[a]) >> (a + 1)).bit_count() for a in self.domains)
        return self._count

    def __contains__(self, code: Any) -> bool:
        a, b = divmod(code, self._nd)
        return a != b and bool((self.mask >> a) & 1) and bool((self.mask >> b) & 1) and not (self._ok[a] >> b) & 1

    def __iter__(self) -> Any:
        return iter(self._iter(self.domains))

    def restricted(self, domains: Set[int]) -> "UnverifiedPairs":
        """The pairs of this test among ``domains`` only."""
        return UnverifiedPairs(self._ok, self._nd, sorted(domains), self._iter)

    def active_domains(self) -> List[int]:
        """Domains that take part in at least one unverified pair."""
        ok, mask = self._ok, self.mask
        return [a for a in self.domains if mask & ~ok[a] & ~(1 << a)]


def intersect_pairs(first: Any, second: Any) -> Any:
    """The candidate pairs both ``first`` and ``second`` hold (:class:`UnverifiedPairs` or sets of pair codes)."""
    if isinstance(first, UnverifiedPairs) and isinstance(second, UnverifiedPairs):
        # the unverified pairs of two tests that both hold them: those among the domains the tests share
        return first.restricted(set(first.domains) & set(second.domains))
    if len(first) > len(second):
        first, second = second, first
    return {code for code in first if code in second}


def pairs_overlap(first: Any, second: Any) -> bool:
    """Do ``first`` and ``second`` share a candidate pair?"""
    if len(first) > len(second):
        first, second = second, first
    return any(code in second for code in first)


class IsolationEvidence:
    """The planned tests and what their outcomes proved: verified and condemned nodes and domain pairs, the trace."""

    def __init__(self, nodes: Sequence[NodeInfo], config: Optional[IsolationConfig] = None,
                 grouping: Optional[Grouping] = None) -> None:
        self.config = config or IsolationConfig()
        self.config.validate()
        self.grouping = grouping if grouping is not None else group_nodes(nodes, self.config.grouping)
        self._all_nodes = [n.name for n in nodes]
        self.trace: List[Dict[str, Any]] = []
        # the round and finish state live here too: every part of the planner reads them
        self._round = 0
        self._pending: Optional[Round] = None
        self._finished = False
        self._finish_reason = ""
        self._tests: Dict[str, _TestRecord] = {}
        self._test_count = 0

        names = list(self.grouping.order) if len(self.grouping.order) == len(self.grouping.domain_of) \
            else sorted(self.grouping.domain_of, key=natural_key)
        self._domain_names: List[str] = sorted(set(self.grouping.domain_of.values()), key=natural_key)
        index = {d: i for i, d in enumerate(self._domain_names)}
        self._dom: Dict[str, int] = {n: index[self.grouping.domain_of[n]] for n in names}
        self._ndom = len(self._domain_names)
        self._eligible: List[str] = names
        self._excluded: Dict[str, str] = dict(self.grouping.excluded)
        for name in self._all_nodes:
            if name not in self._dom and name not in self._excluded:
                self._excluded[name] = "not placed in any group"

        self._verified: Dict[str, str] = {}  # node -> id of the first passing test
        self._verified_by_domain: Dict[int, List[str]] = {i: [] for i in range(self._ndom)}
        self._condemned: Dict[str, Tuple[str, ...]] = {}
        self._cleared_after_failure: Dict[str, int] = {}
        self._clean_of: Dict[str, int] = {}
        self._ok_mask: List[int] = [0] * self._ndom  # bit b of _ok_mask[a]: pair (a, b) verified
        self._link_condemned: Dict[int, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}
        self._failed_ids: List[str] = []  # every failed test, in order
        self._open: List[str] = []  # ids of failed tests not yet explained
        self._failures_of: Dict[str, List[str]] = {}
        self._inconclusive: Dict[str, str] = {}
        self._uncovered = 0
        self._failed_sets: Set[FrozenSet[str]] = set()
        self._waiting_logged: Set[str] = set()
        self._needed = self.config.min_evidence

        cross_tests = self.config.cross_step_tests
        self._cross_step_tests = cross_tests if cross_tests is not None else max(16, math.ceil(len(names) / 64))
        self._log("grouping", strategy=self.grouping.strategy, groups=len(self.grouping.groups),
                  domains=self._ndom, nodes=len(names))
        for name, reason in sorted(self._excluded.items(), key=lambda kv: natural_key(kv[0])):
            self._log("excluded", node=name, reason=reason)

    # ------------------------------------------------------------------ helpers
    def _log(self, event: str, **fields: Any) -> None:
        entry = {"round": self._round, "event": event}
        entry.update(fields)
        self.trace.append(entry)

    def _code(self, a: int, b: int) -> int:
        return a * self._ndom + b if a < b else b * self._ndom + a

    def _pair_names(self, code: int) -> Tuple[str, str]:
        a, b = divmod(code, self._ndom)
        return self._domain_names[a], self._domain_names[b]

    def _domains_of(self, nodes: Iterable[str]) -> Tuple[int, ...]:
        return tuple(sorted({self._dom[n] for n in nodes}))

    def _pair_verified(self, code: int) -> bool:
        a, b = divmod(code, self._ndom)
        return bool((self._ok_mask[a] >> b) & 1)

    @staticmethod
    def _mask(domains: Iterable[int]) -> int:
        mask = 0
        for d in domains:
            mask |= 1 << d
        return mask

    def _unverified_pairs(self, domains: Sequence[int], limit: int = 0) -> List[int]:
        """Codes (ascending) of the unverified pairs among sorted ``domains`` (at most ``limit`` when > 0)."""
        ok = self._ok_mask
        nd = self._ndom
        full = self._mask(domains)
        out: List[int] = []
        for a in domains:
            missing = (full & ~ok[a]) >> (a + 1)
            if not missing:
                continue
            base = a * nd + a + 1
            while missing:
                low = missing & -missing
                bit = low.bit_length() - 1
                out.append(base + bit)
                missing ^= low
            if limit and len(out) >= limit:
                return out[:limit]
        return out

    def _explained_by(self, rec: _TestRecord) -> Optional[str]:
        for node in rec.test.nodes:
            if node in self._condemned:
                return "faulty node %s" % node
        if self._link_condemned and len(rec.domains) > 1:
            present = set(rec.domains)
            for code in self._link_condemned:
                a, b = divmod(code, self._ndom)
                if a in present and b in present:
                    return "faulty link %s-%s" % self._pair_names(code)
        return None

    def _new_test(self, nodes: Sequence[str], purpose: str, why: str, busy: Set[str],
                  tests: List[GroupTest], depth: int = 0) -> _TestRecord:
        self._test_count += 1
        test_id = "r%d-%s-%03d" % (self._round + 1, purpose, len(tests) + 1)
        test = GroupTest(id=test_id, nodes=tuple(nodes), purpose=purpose, why=why)
        domains = self._domains_of(nodes)
        unverified = [n for n in nodes if n not in self._verified]
        pairs = self._unverified_pairs(domains, limit=2) if len(domains) > 1 else []
        suspect = unverified[0] if len(unverified) == 1 and not pairs and len(nodes) > 1 else None
        suspect_link = pairs[0] if not unverified and len(pairs) == 1 else None
        rec = _TestRecord(test, domains, suspect, suspect_link, self._test_count, depth)
        self._tests[test_id] = rec
        busy.update(nodes)
        tests.append(test)
        return rec

    # ------------------------------------------------------------------ results
    def _on_pass(self, rec: _TestRecord, outcome: TestOutcome) -> None:
        rec.passed = True
        test = rec.test
        newly = []
        for node in test.nodes:
            if node not in self._verified and node not in self._condemned:
                earlier = self._node_isolated(node)[0] if self._failures_of.get(node) else []
                self._verified[node] = test.id
                self._verified_by_domain[self._dom[node]].append(node)
                newly.append(node)
                if earlier:
                    self._cleared_after_failure[node] = len(earlier)
                    self._log("cleared", node=node, test=test.id,
                              reason="passed after %d isolated failure(s): counted as transient" % len(earlier))
        if len(rec.domains) > 1:
            ok = self._ok_mask
            full = self._mask(rec.domains)
            for a in rec.domains:
                ok[a] |= full & ~(1 << a)
        self._log("passed", test=test.id, purpose=test.purpose, busbw=outcome.busbw, verified=len(newly))

    def _on_fail(self, rec: _TestRecord, outcome: TestOutcome) -> None:
        rec.passed = False
        test = rec.test
        self._log("failed", test=test.id, purpose=test.purpose, busbw=outcome.busbw, reason=outcome.reason[:300])
        self._open.append(test.id)
        self._failed_ids.append(test.id)
        self._failed_sets.add(frozenset(test.nodes))
        for node in test.nodes:
            if node not in self._verified:
                self._failures_of.setdefault(node, []).append(test.id)
        if rec.suspect is not None and rec.suspect not in self._verified and rec.suspect not in self._condemned:
            ids, clean = self._node_isolated(rec.suspect)
            self._log("evidence", node=rec.suspect, test=test.id,
                      partners=sorted((n for n in test.nodes if n != rec.suspect), key=natural_key),
                      count=len(ids), retests=clean, needed=self._needed)
        if rec.suspect_link is not None and not self._pair_verified(rec.suspect_link) \
                and rec.suspect_link not in self._link_condemned:
            self._log("link-evidence", domains=list(self._pair_names(rec.suspect_link)), test=test.id,
                      nodes=list(test.nodes), needed=self._needed)

    def _node_isolated(self, node: str) -> Tuple[List[str], int]:
        """Failed tests of ``node`` in which every other member and every domain pair is proven healthy, and
        how many of them were planned that way (retests against known-good partners)."""
        ids: List[str] = []
        clean = 0
        verified = self._verified
        for tid in self._failures_of.get(node, ()):
            rec = self._tests[tid]
            if len(rec.test.nodes) < 2 or any(n != node and n not in verified for n in rec.test.nodes):
                continue
            if len(rec.domains) > 1 and self._unverified_pairs(rec.domains, limit=1):
                continue
            ids.append(tid)
            if rec.suspect == node:
                clean += 1
        return ids, clean

    def _link_isolated(self) -> Dict[int, Tuple[List[str], int]]:
        """Per unverified domain pair: failed tests whose members are all proven healthy and whose only
        unverified pair it is, and how many of them were planned that way."""
        out: Dict[int, Tuple[List[str], int]] = {}
        verified = self._verified
        for tid in self._failed_ids:
            rec = self._tests[tid]
            if len(rec.domains) < 2 or not all(n in verified for n in rec.test.nodes):
                continue
            pairs = self._unverified_pairs(rec.domains, limit=2)
            if len(pairs) != 1:
                continue
            ids, clean = out.get(pairs[0], ([], 0))
            ids.append(tid)
            out[pairs[0]] = (ids, clean + (1 if rec.suspect_link == pairs[0] else 0))
        return out

    def _link_nodes(self, code: int, ids: Sequence[str]) -> Tuple[str, ...]:
        """The nodes of the two domains of ``code`` that took part in the failed tests ``ids``."""
        ends = divmod(code, self._ndom)
        return tuple(sorted({n for tid in ids for n in self._tests[tid].test.nodes if self._dom[n] in ends},
                            key=natural_key))

    def _judge_suspects(self) -> None:
        """Condemn every node and link with ``min_evidence`` isolated failures, ``confirmations`` of them
        planned as retests against known-good partners."""
        needed, retests = self._needed, self.config.confirmations
        for node in sorted(self._failures_of, key=natural_key):
            if node in self._verified or node in self._condemned:
                continue
            ids, clean = self._node_isolated(node)
            if len(ids) >= needed and clean >= retests:
                self._condemned[node] = tuple(ids)
                self._clean_of[node] = clean
                self._log("condemned", node=node, tests=list(ids),
                          reason="failed %d tests in which every other member was proven healthy, %d of them retests "
                                 "with different healthy partners" % (len(ids), clean))
        for code, (ids, clean) in sorted(self._link_isolated().items()):
            if code in self._link_condemned or len(ids) < needed or clean < retests:
                continue
            nodes_all = self._link_nodes(code, ids)
            self._link_condemned[code] = (nodes_all, tuple(ids))
            self._log("link-condemned", domains=list(self._pair_names(code)), nodes=list(nodes_all), tests=list(ids),
                      reason="faulty link between %s and %s: %d failed tests with only this pair unverified, %d of them "
                             "retests with other nodes" % (self._pair_names(code) + (len(ids), clean)))
