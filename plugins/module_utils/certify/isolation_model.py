# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What adaptive fault isolation takes and gives, as data: the planner's knobs (:class:`IsolationConfig`), the tests it
plans (:class:`GroupTest`, grouped in a :class:`Round`), what a test showed (:class:`TestOutcome`), the verdict on a
node (:class:`Verdict`, statuses ``healthy``, ``faulty``, ``excluded``, ``inconclusive``) and a fault between two
topology domains (:class:`LinkFault`); the run's result is ``PASSED``, ``FAILED`` or ``INCOMPLETE``.
Planned by :class:`.isolation_planner.IsolationPlanner`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import GroupingConfig

PURPOSES = ("screen", "split", "confirm", "cross")
HEALTHY = "healthy"
FAULTY = "faulty"
EXCLUDED = "excluded"
INCONCLUSIVE = "inconclusive"
PASSED = "PASSED"
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
