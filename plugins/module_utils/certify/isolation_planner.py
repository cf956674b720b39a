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
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import (
    Grouping, GroupingConfig, NodeInfo, chunks, group_nodes, natural_key)

PURPOSES = ("screen", "split", "confirm", "cross")
HEALTHY = "healthy"
FAULTY = "faulty"
EXCLUDED = "excluded"
INCONCLUSIVE = "inconclusive"
PASSED = "PASSED"
#: screening merges groups (``screen_size``) only from this many groups on: a small cluster keeps one test per
#: group, a large one saves half of its screening tests for one more split level per fault.
SCREEN_MERGE_MIN_GROUPS = 8
_SUPPORT_SCAN = 4096  # candidate sets up to this size are narrowed by counting the failed tests that hold each pair
INCOMPLETE = "INCOMPLETE"
FAILED = "FAILED"


class IsolationError(CertifyError):
    """Bad planner input: unknown/missing test results, bad configuration values."""


@dataclass(frozen=True)
class IsolationConfig:
    """Planner knobs.

    An *isolated failure* of a node is a failed test in which every other member and every domain pair
    has been proven healthy by a passing test (counted also retroactively, once the others pass); of a
    link, a failed test whose members are all proven healthy and whose only unverified domain pair is
    that link.  A node or link is condemned when it has ``min_evidence`` isolated failures, of which at
    least ``confirmations`` were planned as retests against known-good partners (different ones each
    time).  With independent transients of rate ``p`` a healthy node reaches ``min_evidence`` only with
    probability ``p ** min_evidence`` (3e-7 at 5 % and the default 6 per node and run).

    ``screen_size``: the screening round tests consecutive topology groups together up to this many nodes
    (None: every group on its own); ``split_levels`` is derived from ``min_evidence`` (a failing test is
    cut into as many parts as let its candidates be isolated by the round that brings the last evidence).
    ``cross_step_tests``: most tests one link-search step may use (None: ``max(16, ceil(nodes / 64))``).
    """

    confirmations: int = 1
    min_test_size: int = 2
    singles_max: int = 2
    max_rounds: int = 32
    cross_domain: bool = True
    cross_step_tests: Optional[int] = None
    cross_per_round: int = 2
    min_evidence: int = 6
    screen_size: Optional[int] = 32
    grouping: GroupingConfig = field(default_factory=GroupingConfig)

    def validate(self) -> None:
        if self.screen_size is not None and (not isinstance(self.screen_size, int) or isinstance(self.screen_size, bool)
                                             or self.screen_size < 1):
            raise IsolationError("screen_size must be an integer >= 1 or null", field="screen_size", value=self.screen_size)
        for name, low in (("confirmations", 1), ("min_test_size", 1), ("singles_max", 1), ("max_rounds", 1),
                          ("cross_per_round", 1), ("min_evidence", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise IsolationError("%s must be an integer >= %d" % (name, low), field=name, value=value)
        if self.min_evidence < self.confirmations:
            raise IsolationError("min_evidence must be >= confirmations (%d)" % self.confirmations, field="min_evidence",
                                 value=self.min_evidence)
        if self.cross_step_tests is not None and (not isinstance(self.cross_step_tests, int) or self.cross_step_tests < 3):
            raise IsolationError("cross_step_tests must be an integer >= 3 or null", field="cross_step_tests",
                                 value=self.cross_step_tests)


@dataclass(frozen=True)
class GroupTest:
    """One collective test to run on ``nodes`` (``purpose``: screen, split, confirm or cross)."""

    id: str
    nodes: Tuple[str, ...]
    purpose: str
    why: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "nodes": list(self.nodes), "purpose": self.purpose, "why": self.why}


@dataclass
class Round:
    """The tests of one round; they can all run at the same time (disjoint nodes)."""

    number: int
    tests: List[GroupTest]

    def to_dict(self) -> Dict[str, Any]:
        return {"number": self.number, "tests": [t.to_dict() for t in self.tests]}


@dataclass(frozen=True)
class TestOutcome:
    """What a test run showed: ``passed`` plus the reason (log excerpt) and measured bus bandwidth."""

    __test__ = False  # not a pytest test class

    passed: bool
    reason: str = ""
    busbw: Optional[float] = None

    @classmethod
    def coerce(cls, value: Any, test_id: str) -> "TestOutcome":
        if isinstance(value, TestOutcome):
            return value
        if isinstance(value, bool):
            return cls(passed=value)
        if isinstance(value, Mapping) and isinstance(value.get("passed"), bool):
            busbw = value.get("busbw")
            if busbw is not None and not isinstance(busbw, (int, float)):
                raise IsolationError("busbw must be a number", field="results.%s.busbw" % test_id, value=busbw)
            return cls(passed=value["passed"], reason=str(value.get("reason") or ""),
                       busbw=float(busbw) if busbw is not None else None)
        raise IsolationError("result must be a TestOutcome, a bool or a mapping with a boolean 'passed'",
                             field="results.%s" % test_id, value=value)


@dataclass(frozen=True)
class Verdict:
    """Final word on one node."""

    status: str
    reason: str
    evidence: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class LinkFault:
    """A fault between two topology domains (``status`` faulty when confirmed, else suspect)."""

    domains: Tuple[str, str]
    nodes: Tuple[str, ...]
    evidence: Tuple[str, ...]
    status: str = FAULTY

    def describe(self) -> str:
        return "%s link between %s and %s (nodes %s; tests %s)" % (
            "faulty" if self.status == FAULTY else "suspect", self.domains[0], self.domains[1],
            ", ".join(self.nodes), ", ".join(self.evidence))

    def to_dict(self) -> Dict[str, Any]:
        return {"domains": list(self.domains), "nodes": list(self.nodes), "evidence": list(self.evidence),
                "status": self.status, "message": self.describe()}


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


class _TestPairs:
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

    def restricted(self, domains: Set[int]) -> "_TestPairs":
        """The pairs of this test among ``domains`` only."""
        return _TestPairs(self._ok, self._nd, sorted(domains), self._iter)

    def active_domains(self) -> List[int]:
        """Domains that take part in at least one unverified pair."""
        ok, mask = self._ok, self.mask
        return [a for a in self.domains if mask & ~ok[a] & ~(1 << a)]


def _intersect(first: Any, second: Any) -> Any:
    if isinstance(first, _TestPairs) and isinstance(second, _TestPairs):
        # the unverified pairs of two tests that both hold them: those among the domains the tests share
        return first.restricted(set(first.domains) & set(second.domains))
    if len(first) > len(second):
        first, second = second, first
    return {code for code in first if code in second}


def _overlaps(first: Any, second: Any) -> bool:
    if len(first) > len(second):
        first, second = second, first
    return any(code in second for code in first)


def _strided(items: Sequence[Any], count: int) -> List[List[Any]]:
    count = max(1, min(count, len(items)))
    return [list(items[i::count]) for i in range(count)]


class IsolationPlanner:
    """Plans rounds of parallel group tests until every node has a verdict."""

    def __init__(self, nodes: Sequence[NodeInfo], config: Optional[IsolationConfig] = None,
                 grouping: Optional[Grouping] = None) -> None:
        self.config = config or IsolationConfig()
        self.config.validate()
        self.grouping = grouping if grouping is not None else group_nodes(nodes, self.config.grouping)
        self._all_nodes = [n.name for n in nodes]
        self.trace: List[Dict[str, Any]] = []
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
            cand_pairs = _TestPairs(self._ok_mask, self._ndom, rec.domains, self._unverified_pairs) \
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
                            common = _intersect(target, other)
                            if common and len(common) < len(target):
                                target = common
                    support = sum(1 for w in pair_work if w[2] == tid or _overlaps(target, w[3]))
                targets.append((-support, len(target), count, seq, tid, target))
            targets.sort(key=lambda t: t[:5])
            for _support, _size, _count, _seq, tid, target in targets:
                if any(_overlaps(target, done) for done in searched):
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

    # .......................................................... node isolation
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

    # .......................................................... link search
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
        if isinstance(pairs, _TestPairs):
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
