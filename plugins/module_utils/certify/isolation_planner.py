# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Adaptive fault isolation for multi-node collective tests (pure planner, no I/O).

The caller runs the group tests of each round (in parallel: a node is in at most one
test per round), reports pass/fail per test with :meth:`IsolationPlanner.record`, and asks
for the next round until :meth:`IsolationPlanner.done`.  Reasoning rests on one rule:
*a passing test proves every member healthy and every pair of its topology domains
linked correctly*; a failing test is explained by an unverified member, an unverified
domain pair, or a transient.

Rounds:

1. **screen** - every topology group once (:mod:`topology_grouping`).
2. Follow-ups, all planned together each round, smallest problem first:

   * **split** - a failing test with several unverified members is cut into
     ``ceil(sqrt(c))`` parts (or single members when ``c <= singles_max``); parts are padded
     with verified nodes to ``min_test_size``; a single member is tested with healthy partners
     from its own domain (or from a domain whose link to it is verified).
   * **confirm** - a suspect (it failed once as the only unverified member, with verified
     partners and verified links) is retested with *different* partners; it is condemned only
     after that first isolated failure *and* ``confirmations`` more, each with partners it has
     not failed with before (one more when another suspect explains the same earlier failures),
     so a transient never condemns a node.  A pass clears it.
   * **cross** - once domains have verified nodes, transversal tests (one verified node per
     domain) cover every pair of domains.  A failing cross test whose members are all healthy
     (parent fails, parts pass) means a fault *between* domains: its unverified domain pairs
     are narrowed with block designs (bipartite when the candidate pairs form a bipartite
     graph), laid out twice (contiguous and strided blocks) so that one transient clears nothing
     wrongly, until a two-node test isolates one pair, which is confirmed with other nodes and
     reported as ``faulty link between X and Y``.
   * A failing test left with no unverified member and no unverified pair is recorded as a
     transient.

Every decision goes to :attr:`IsolationPlanner.trace` (JSON-serializable dicts).

The planner's parts: the data it takes and gives (:mod:`.isolation_model`), what has been proven so far and the
condemnation rule (:mod:`.isolation_evidence`), the split and confirm tests (:mod:`.isolation_node_search`), the
link search and the coverage transversals (:mod:`.isolation_link_search`). This file plans the rounds.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_evidence import (
    UnverifiedPairs, intersect_pairs, pairs_overlap)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_link_search import LinkSearch
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import (
    EXCLUDED, FAILED, FAULTY, HEALTHY, INCOMPLETE, INCONCLUSIVE, PASSED, PURPOSES, GroupTest, IsolationConfig, IsolationError,
    LinkFault, Round, TestOutcome, Verdict)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_node_search import NodeSearch
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import Grouping, NodeInfo, natural_key

#: screening merges groups (``screen_size``) only from this many groups on: a small cluster keeps one test per
#: group, a large one saves half of its screening tests for one more split level per fault.
SCREEN_MERGE_MIN_GROUPS = 8
_SUPPORT_SCAN = 4096  # candidate sets up to this size are narrowed by counting the failed tests that hold each pair


class IsolationPlanner(NodeSearch, LinkSearch):
    """Plans rounds of parallel group tests until every node has a verdict."""

    def __init__(self, nodes: Sequence[NodeInfo], config: Optional[IsolationConfig] = None,
                 grouping: Optional[Grouping] = None) -> None:
        super().__init__(nodes, config, grouping)
        self._advance()

    # ------------------------------------------------------------------ public API
    def plan_round(self) -> Round:
        """The round to run now (the same object until its results are recorded); empty when done."""
        if self._pending is not None:
            return self._pending
        return Round(number=self._round, tests=[])

    def record(self, results: Mapping[str, Any]) -> None:
        """Record the outcome of every test of the pending round (``{test_id: TestOutcome}``)."""
        pending = self._pending
        if pending is None:
            raise IsolationError("no round is pending: the isolation is finished", field="results",
                                 value=sorted(results)[:5] if isinstance(results, Mapping) else results)
        if not isinstance(results, Mapping):
            raise IsolationError("results must be a mapping of test id to outcome", field="results", value=results)
        expected = {t.id for t in pending.tests}
        unknown = sorted(set(results) - expected)
        if unknown:
            raise IsolationError("result for a test that is not in round %d" % pending.number, field="results",
                                 value=unknown[0])
        missing = sorted(expected - set(results))
        if missing:
            raise IsolationError("missing result for a test of round %d" % pending.number, field="results",
                                 value=missing[0])
        outcomes = {tid: TestOutcome.coerce(results[tid], tid) for tid in sorted(expected)}
        for test in pending.tests:
            outcome = outcomes[test.id]
            if outcome.passed:
                self._on_pass(self._tests[test.id], outcome)
        for test in pending.tests:
            outcome = outcomes[test.id]
            if not outcome.passed:
                self._on_fail(self._tests[test.id], outcome)
        self._judge_suspects()
        self._pending = None
        self._advance()

    def done(self) -> bool:
        """True when no further round is needed."""
        return self._finished

    @property
    def rounds(self) -> int:
        """Rounds planned so far."""
        return self._round

    @property
    def tests_planned(self) -> int:
        """Tests planned so far."""
        return self._test_count

    def verdicts(self) -> Dict[str, Verdict]:
        """Verdict per node (every node given to the constructor)."""
        out: Dict[str, Verdict] = {}
        link_nodes: Dict[str, List[str]] = {}
        for link in self.link_faults():
            for node in link.nodes:
                link_nodes.setdefault(node, []).append("%s-%s" % link.domains)
        for name in self._all_nodes:
            if name in self._excluded:
                out[name] = Verdict(EXCLUDED, self._excluded[name])
            elif name in self._condemned:
                ids = self._condemned[name]
                out[name] = Verdict(FAULTY, "failed %d tests in which every other member was proven healthy (%d of them "
                                    "retests with different healthy partners)" % (len(ids), self._clean_of[name]), ids)
            elif name in self._verified:
                reason = "passed %s" % self._verified[name]
                if self._cleared_after_failure.get(name):
                    reason += " (an earlier isolated failure was transient)"
                if name in link_nodes:
                    reason += "; endpoint of faulty link %s" % ", ".join(link_nodes[name])
                out[name] = Verdict(HEALTHY, reason, (self._verified[name],))
            else:
                reason = self._inconclusive.get(name) or ("not resolved yet" if not self._finished else "not resolved")
                out[name] = Verdict(INCONCLUSIVE, reason, tuple(self._failures_of.get(name, ())))
        return out

    def link_faults(self) -> List[LinkFault]:
        """Condemned links, then links with too little evidence (status suspect) once finished."""
        out = []
        for code in sorted(self._link_condemned):
            nodes, ids = self._link_condemned[code]
            out.append(LinkFault(self._pair_names(code), nodes, ids, FAULTY))
        if self._finished:
            for code, (ids, _clean) in sorted(self._link_isolated().items()):
                if code in self._link_condemned:
                    continue
                out.append(LinkFault(self._pair_names(code), self._link_nodes(code, ids), tuple(ids), "suspect"))
        return out

    def result(self) -> str:
        """FAILED when a node or link is faulty; INCOMPLETE when a node is excluded or unresolved, a link
        stays suspect or domain pairs stay unchecked; else PASSED."""
        if self._condemned or self._link_condemned:
            return FAILED
        if not self._finished or not self._eligible or self._excluded or self._uncovered:
            return INCOMPLETE
        if len(self._verified) < len(self._eligible):
            return INCOMPLETE
        if any(code not in self._link_condemned for code in self._link_isolated()):
            return INCOMPLETE
        return PASSED

    def summary(self) -> Dict[str, Any]:
        """Everything a module returns: result, counts, verdicts, links, trace."""
        verdicts = self.verdicts()
        return {"result": self.result(), "rounds": self._round, "tests": self._test_count,
                "finished": self._finished, "finish_reason": self._finish_reason,
                "grouping": self.grouping.to_dict(),
                "faulty_nodes": sorted((n for n, v in verdicts.items() if v.status == FAULTY), key=natural_key),
                "verdicts": {n: v.to_dict() for n, v in verdicts.items()},
                "links": [l.to_dict() for l in self.link_faults()], "trace": list(self.trace)}

    # ------------------------------------------------------------------ planning
    def _advance(self) -> None:
        if self._finished:
            return
        if self._round >= self.config.max_rounds:
            self._finish("round limit (%d) reached" % self.config.max_rounds)
            return
        busy: Set[str] = set()
        tests: List[GroupTest] = []
        self._waiting_logged = set()
        if self._round == 0:
            for names, members in self._screen_units():
                why = "screen group %s" % names[0] if len(names) == 1 else \
                    "screen groups %s together (%d nodes)" % (", ".join(names), len(members))
                self._new_test(members, "screen", why, busy, tests)
        else:
            waiting = self._plan_followups(busy, tests)
            if not tests:
                self._finish("no further test is useful" if not waiting else
                             "%d failed test(s) cannot be followed up (no healthy partner or node left)" % waiting)
                return
        if not tests:
            self._finish("nothing to test")
            return
        self._round += 1
        self._pending = Round(number=self._round, tests=tests)
        self._log("round", tests=len(tests), purposes={p: sum(1 for t in tests if t.purpose == p) for p in PURPOSES})
        for test in tests:
            self._log("plan", test=test.id, purpose=test.purpose, nodes=list(test.nodes), why=test.why)

    def _screen_units(self) -> List[Tuple[List[str], List[str]]]:
        """Consecutive topology groups merged up to ``screen_size`` nodes (a group is never cut)."""
        units: List[Tuple[List[str], List[str]]] = []
        limit = self.config.screen_size if len(self.grouping.groups) >= SCREEN_MERGE_MIN_GROUPS else None
        for group in self.grouping.groups:
            if units and limit is not None and len(units[-1][1]) + len(group.nodes) <= limit:
                units[-1][0].append(group.name)
                units[-1][1].extend(group.nodes)
            else:
                units.append(([group.name], list(group.nodes)))
        return units

    def _finish(self, reason: str) -> None:
        self._finished = True
        self._finish_reason = reason
        for name in self._eligible:
            if name not in self._verified and name not in self._condemned:
                failures = self._failures_of.get(name, [])
                evidence = self._node_isolated(name)[0] if failures else []
                if evidence:
                    why = "failed %d isolation test(s), fewer than the %d needed to condemn (%s)" % (
                        len(evidence), self._needed, reason)
                elif failures:
                    why = "in failed test(s) %s but never isolated (%s)" % (", ".join(failures[-3:]), reason)
                else:
                    why = "never tested (%s)" % reason
                self._inconclusive[name] = why
                self._log("inconclusive", node=name, reason=why)
        uncovered = self._coverable_uncovered_count()
        self._uncovered = uncovered
        if uncovered:
            self._log("uncovered-pairs", count=uncovered,
                      reason="domain pairs never checked together (%s)" % reason)
        self._log("done", reason=reason, rounds=self._round, tests=self._test_count, result=self.result())

    def _coverable_uncovered_count(self) -> int:
        if not self.config.cross_domain or self._ndom < 2:
            return 0
        live = [d for d in range(self._ndom) if self._verified_by_domain[d]]
        pairs = self._unverified_pairs(live)
        return sum(1 for c in pairs if c not in self._link_condemned)

    def _plan_followups(self, busy: Set[str], tests: List[GroupTest]) -> int:
        """Plan one round of follow-up tests; return how many open failures could not be served."""
        node_work: List[Tuple[int, int, str, List[str]]] = []
        pair_work: List[Tuple[int, int, str, Any]] = []
        still_open: List[str] = []
        for tid in self._open:
            rec = self._tests[tid]
            cause = self._explained_by(rec)
            if cause:
                self._log("explained", test=tid, by=cause)
                continue
            cand_nodes = [n for n in rec.test.nodes if n not in self._verified]
            cand_pairs = UnverifiedPairs(self._ok_mask, self._ndom, rec.domains, self._unverified_pairs) \
                if len(rec.domains) > 1 else None
            pair_count = len(cand_pairs) if cand_pairs is not None else 0
            if not cand_nodes and not pair_count:
                self._log("transient", test=tid,
                          reason="every member and domain pair passed other tests: counted as a transient failure")
                continue
            still_open.append(tid)
            if cand_nodes:
                node_work.append((len(cand_nodes), -rec.seq, tid, cand_nodes))
            else:
                pair_work.append((pair_count, -rec.seq, tid, cand_pairs))
        self._open = still_open
        node_work.sort(key=lambda w: w[:3])
        pair_work.sort(key=lambda w: w[:3])

        unserved = 0
        for _count, _seq, tid, cands in node_work:
            if not self._plan_node_work(tid, cands, busy, tests):
                if not any(c in busy for c in cands):
                    unserved += 1
        if self.config.cross_domain:
            searched: List[Any] = []
            # Narrow each failed test's candidates by the other failed tests, then search first the candidate sets
            # that most failed tests share: a faulty link fails every test that holds it, a transient only one.
            targets = []
            held = [set(w[3]) if len(w[3]) <= _SUPPORT_SCAN else w[3] for w in pair_work]
            for count, seq, tid, cands_p in pair_work:
                if len(cands_p) <= _SUPPORT_SCAN:
                    # the candidates held by the most failed tests (a transient cannot hijack the narrowing)
                    scored: Dict[int, int] = {}
                    for code in cands_p:
                        scored[code] = sum(1 for other in held if code in other)
                    support = max(scored.values())
                    target = {code for code, score in scored.items() if score == support}
                else:
                    target = cands_p
                    for _count2, _seq2, other_id, other in pair_work:
                        if other_id != tid:
                            common = intersect_pairs(target, other)
                            if common and len(common) < len(target):
                                target = common
                    support = sum(1 for w in pair_work if w[2] == tid or pairs_overlap(target, w[3]))
                targets.append((-support, len(target), count, seq, tid, target))
            targets.sort(key=lambda t: t[:5])
            for _support, _size, _count, _seq, tid, target in targets:
                if any(pairs_overlap(target, done) for done in searched):
                    continue
                if self._plan_pair_search(tid, target, busy, tests):
                    searched.append(target)
                else:
                    unserved += 1
            # In round 2, coverage waits while a screened domain has no verified node yet but is being split: one
            # transversal in round 3 then covers its pairs too (one test instead of two).
            pending = {self._dom[n] for w in node_work for n in w[3]} if self._round == 1 else set()
            if not any(not self._verified_by_domain[d] for d in pending):
                self._plan_coverage([w[3] for w in pair_work], busy, tests)
        return unserved
