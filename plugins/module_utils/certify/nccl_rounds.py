# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Adaptive multi-node NCCL certification: group, test, judge, isolate, report.

:func:`certify_nccl` drives one certification run over a set of nodes (inventory hosts or
Kubernetes nodes):

1. the nodes are grouped by topology (:mod:`topology_grouping`); cordoned, not-Ready and
   unreachable nodes are excluded, each with its reason;
2. an :class:`~isolation_planner.IsolationPlanner` plans rounds of disjoint group tests;
3. each round's tests are launched through a *runner* (``runner.run_tests(tests, collective)``
   returns ``{test_id: RunOutput}``; see :mod:`runner_hosts` and :mod:`runner_kubernetes`), once per collective;
4. every log is parsed with :func:`nccl_results.parse_nccl_output` and judged with
   :mod:`nccl_thresholds`: the absolute floor of the accelerator/scope/collective when one is known,
   and the fleet of group results of this run: the round's own results plus the passing results of
   earlier rounds (median/MAD; with fewer than ``min_fleet_size`` results, ``fraction`` x the best
   result).  A timed-out, failed or unreadable log fails the test
   with its reason;
5. the outcomes go back into the planner until it is done; a progress callback hears about every
   round.

The result (:class:`CertifyNcclResult`) holds a verdict per node with reasons, link faults,
rounds and tests, per-collective bus bandwidth by message size and per node, the failed groups,
the isolation trace and durations.

Scales: ``diagnose`` (adaptive isolation, the default), ``per-group`` (the screening round only:
a failing group's nodes stay inconclusive, named with the group's reasons) and ``full`` (one test
over every eligible node; when it fails, adaptive isolation follows unless
``diagnose_on_failure`` is false).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import (
    EXCLUDED, FAILED, FAULTY, HEALTHY, INCOMPLETE, INCONCLUSIVE, PASSED, GroupTest, IsolationConfig, TestOutcome)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_planner import IsolationPlanner
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import COLLECTIVES, canonical_collective
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_result_model import DEFAULT_LARGE_MESSAGE_BYTES, NcclResult
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import parse_nccl_output
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_thresholds import (
    ThresholdConfig, accelerator_from_device_name, evaluate, fleet_stats, validate_thresholds)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import (
    GroupingConfig, NodeInfo, group_nodes, natural_key)

SCALES = ("diagnose", "per-group", "full")
DEFAULT_COLLECTIVES: Tuple[str, ...] = ("all_reduce",)
UNREACHABLE_REASON = "unreachable"
_ISOLATION_KEYS = ("confirmations", "min_test_size", "singles_max", "max_rounds", "cross_domain", "cross_step_tests",
                   "cross_per_round", "min_evidence", "screen_size", "grouping")
_GROUPING_KEYS = ("label_keys", "host_var_key", "inventory_group_prefixes", "min_group_size", "max_group_size")
_NODE_KEYS = ("name", "address", "labels", "groups", "host_vars", "cordoned", "ready", "reachable", "exclude_reason")
_STDERR_TAIL = 400


@dataclass
class RunOutput:
    """What a runner reports for one group test (launcher exit status, logs, wall time, timeout)."""

    rc: int
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False

    def to_dict(self) -> Dict[str, Any]:
        return {"rc": self.rc, "stdout": self.stdout, "stderr": self.stderr, "duration_s": self.duration_s,
                "timed_out": self.timed_out}


#: ``progress(message, info)`` - ``info`` has ``round``, ``phase`` (start|done), ``tests``, ``suspects``.
ProgressCallback = Callable[[str, Dict[str, Any]], None]


@dataclass(frozen=True)
class CertifyNode:
    """One node to certify: inventory host or Kubernetes node.

    ``exclude_reason`` (e.g. ``unreachable``) keeps it out of every test and is reported as its reason.
    """

    name: str
    address: Optional[str] = None
    labels: Mapping[str, str] = field(default_factory=dict)
    groups: Tuple[str, ...] = ()
    host_vars: Mapping[str, Any] = field(default_factory=dict)
    cordoned: bool = False
    ready: bool = True
    exclude_reason: Optional[str] = None

    def node_info(self) -> NodeInfo:
        return NodeInfo(name=self.name, labels=dict(self.labels), ready=self.ready and not self.exclude_reason,
                        cordoned=self.cordoned, inventory_groups=self.groups, host_vars=dict(self.host_vars))

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "address": self.address, "labels": dict(self.labels), "groups": list(self.groups),
                "host_vars": dict(self.host_vars), "cordoned": self.cordoned, "ready": self.ready,
                "exclude_reason": self.exclude_reason}


def _bool(value: Any, default: bool, where: str) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    raise CertifyError("must be true or false", field=where, value=value)


def nodes_from_params(entries: Any, source: str = "nodes") -> List[CertifyNode]:
    """Validate ``[{name, address, labels, groups, host_vars, cordoned, ready, reachable, exclude_reason}]``.

    ``reachable: false`` without ``exclude_reason`` excludes the node as ``unreachable``.
    An empty list is an error: there is nothing to certify.
    """
    if not isinstance(entries, (list, tuple)):
        raise CertifyError("nodes must be a list of mappings", field=source, value=entries)
    if not entries:
        raise CertifyError("empty target: no node to certify", field=source, value=[])
    out: List[CertifyNode] = []
    seen = set()
    for index, entry in enumerate(entries):
        where = "%s[%d]" % (source, index)
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, Mapping):
            raise CertifyError("node entry must be a mapping or a name", field=where, value=entry)
        unknown = sorted(set(entry) - set(_NODE_KEYS))
        if unknown:
            raise CertifyError("unknown key (allowed: %s)" % ", ".join(_NODE_KEYS), field="%s.%s" % (where, unknown[0]),
                               value=entry[unknown[0]])
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise CertifyError("node needs a non-empty name", field=where + ".name", value=name)
        if name in seen:
            raise CertifyError("duplicate node name", field=where + ".name", value=name)
        seen.add(name)
        labels = entry.get("labels") or {}
        if not isinstance(labels, Mapping):
            raise CertifyError("labels must be a mapping", field=where + ".labels", value=labels)
        groups = entry.get("groups") or ()
        if isinstance(groups, str) or not isinstance(groups, (list, tuple)):
            raise CertifyError("groups must be a list of inventory group names", field=where + ".groups", value=groups)
        host_vars = entry.get("host_vars") or {}
        if not isinstance(host_vars, Mapping):
            raise CertifyError("host_vars must be a mapping", field=where + ".host_vars", value=host_vars)
        address = entry.get("address")
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise CertifyError("address must be a non-empty string", field=where + ".address", value=address)
        reason = entry.get("exclude_reason")
        if reason is not None and not isinstance(reason, str):
            raise CertifyError("exclude_reason must be a string", field=where + ".exclude_reason", value=reason)
        if not _bool(entry.get("reachable"), True, where + ".reachable") and not reason:
            reason = UNREACHABLE_REASON
        out.append(CertifyNode(name=name, address=address, labels={str(k): str(v) for k, v in labels.items()},
                               groups=tuple(str(g) for g in groups), host_vars=dict(host_vars),
                               cordoned=_bool(entry.get("cordoned"), False, where + ".cordoned"),
                               ready=_bool(entry.get("ready"), True, where + ".ready"),
                               exclude_reason=reason or None))
    return out


@dataclass
class CertifyNcclConfig:
    """Validated settings of one run (see :func:`validate_config`)."""

    collectives: Tuple[str, ...] = DEFAULT_COLLECTIVES
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    isolation: IsolationConfig = field(default_factory=IsolationConfig)
    scale: str = "diagnose"
    diagnose_on_failure: bool = True
    accelerator: Optional[str] = None
    large_message_bytes: int = DEFAULT_LARGE_MESSAGE_BYTES
    ignore_warn_patterns: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        iso = self.isolation
        return {"collectives": list(self.collectives), "scale": self.scale, "diagnose_on_failure": self.diagnose_on_failure,
                "accelerator": self.accelerator, "large_message_bytes": self.large_message_bytes,
                "ignore_warn_patterns": list(self.ignore_warn_patterns), "thresholds": self.thresholds.to_dict(),
                "isolation": {"confirmations": iso.confirmations, "min_test_size": iso.min_test_size,
                              "singles_max": iso.singles_max, "max_rounds": iso.max_rounds,
                              "cross_domain": iso.cross_domain, "cross_step_tests": iso.cross_step_tests,
                              "cross_per_round": iso.cross_per_round, "min_evidence": iso.min_evidence,
                              "screen_size": iso.screen_size,
                              "grouping": {"label_keys": list(iso.grouping.label_keys),
                                           "host_var_key": iso.grouping.host_var_key,
                                           "inventory_group_prefixes": list(iso.grouping.inventory_group_prefixes),
                                           "min_group_size": iso.grouping.min_group_size,
                                           "max_group_size": iso.grouping.max_group_size}}}


def _isolation_config(data: Any) -> IsolationConfig:
    if data is None:
        return IsolationConfig()
    if not isinstance(data, Mapping):
        raise CertifyError("isolation must be a mapping", field="isolation", value=data)
    unknown = sorted(set(data) - set(_ISOLATION_KEYS))
    if unknown:
        raise CertifyError("unknown key (allowed: %s)" % ", ".join(_ISOLATION_KEYS), field="isolation.%s" % unknown[0],
                           value=data[unknown[0]])
    kwargs: Dict[str, Any] = {k: v for k, v in data.items() if k != "grouping" and v is not None}
    grouping = data.get("grouping") or {}
    if not isinstance(grouping, Mapping):
        raise CertifyError("isolation.grouping must be a mapping", field="isolation.grouping", value=grouping)
    unknown = sorted(set(grouping) - set(_GROUPING_KEYS))
    if unknown:
        raise CertifyError("unknown key (allowed: %s)" % ", ".join(_GROUPING_KEYS),
                           field="isolation.grouping.%s" % unknown[0], value=grouping[unknown[0]])
    gkw: Dict[str, Any] = {}
    for key in ("label_keys", "inventory_group_prefixes"):
        if grouping.get(key) is not None:
            value = grouping[key]
            if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise CertifyError("must be a list of strings", field="isolation.grouping.%s" % key, value=value)
            gkw[key] = tuple(value)
    for key in ("host_var_key", "min_group_size", "max_group_size"):
        if key in grouping and (grouping[key] is not None or key == "max_group_size"):
            gkw[key] = grouping[key]
    try:
        gconf = GroupingConfig(**gkw)
        gconf.validate()
        config = IsolationConfig(grouping=gconf, **kwargs)
        config.validate()
    except CertifyError as err:
        raise CertifyError(err.message, field="isolation.%s" % (err.field or ""), value=err.value) from None
    if isinstance(config.cross_domain, bool) is False:
        raise CertifyError("must be true or false", field="isolation.cross_domain", value=config.cross_domain)
    return config


def validate_config(params: Mapping[str, Any]) -> CertifyNcclConfig:
    """Build a :class:`CertifyNcclConfig` from module-style params.

    Keys (all optional): ``collectives`` (names as nccl-tests or short spellings: ``all_reduce``,
    ``allreduce``, ``all_reduce_perf``), ``thresholds`` (see :func:`nccl_thresholds.validate_thresholds`),
    ``isolation`` (:class:`IsolationConfig` fields plus ``grouping``: :class:`GroupingConfig` fields),
    ``scale``, ``diagnose_on_failure``, ``accelerator``, ``large_message_bytes``,
    ``ignore_warn_patterns``.  Raises :class:`CertifyError` or ``ThresholdConfigError`` naming the
    field and value.
    """
    raw = params.get("collectives")
    if raw is None:
        raw = list(DEFAULT_COLLECTIVES)
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise CertifyError("collectives must be a non-empty list", field="collectives", value=raw)
    collectives: List[str] = []
    for index, name in enumerate(raw):
        canon = canonical_collective(name) if isinstance(name, str) else None
        if canon is None:
            raise CertifyError("unknown collective (allowed: %s)" % ", ".join(COLLECTIVES), field="collectives[%d]" % index,
                               value=name)
        if canon not in collectives:
            collectives.append(canon)
    scale = params.get("scale") or "diagnose"
    if scale not in SCALES:
        raise CertifyError("unknown scale (allowed: %s)" % ", ".join(SCALES), field="scale", value=scale)
    thresholds = params.get("thresholds")
    if thresholds is not None and not isinstance(thresholds, ThresholdConfig):
        thresholds = validate_thresholds(thresholds, source="thresholds")
    accelerator = params.get("accelerator") or None
    if accelerator is not None and not isinstance(accelerator, str):
        raise CertifyError("accelerator must be a string such as h100-sxm", field="accelerator", value=accelerator)
    large = params.get("large_message_bytes")
    if large is None:
        large = DEFAULT_LARGE_MESSAGE_BYTES
    if isinstance(large, bool) or not isinstance(large, int) or large < 0:
        raise CertifyError("large_message_bytes must be an integer >= 0", field="large_message_bytes", value=large)
    patterns = params.get("ignore_warn_patterns") or ()
    if isinstance(patterns, str) or not isinstance(patterns, (list, tuple)):
        raise CertifyError("ignore_warn_patterns must be a list of regular expressions", field="ignore_warn_patterns",
                           value=patterns)
    return CertifyNcclConfig(collectives=tuple(collectives), thresholds=thresholds or ThresholdConfig(),
                             isolation=_isolation_config(params.get("isolation")), scale=scale,
                             diagnose_on_failure=_bool(params.get("diagnose_on_failure"), True, "diagnose_on_failure"),
                             accelerator=accelerator.lower() if accelerator else None, large_message_bytes=large,
                             ignore_warn_patterns=tuple(str(p) for p in patterns))


# ---------------------------------------------------------------------------- judging
@dataclass
class CollectiveJudgement:
    """One test under one collective: pass/fail with reasons, the measured value and the numbers used."""

    collective: str
    passed: bool
    reasons: List[str]
    busbw: Optional[float] = None
    bandwidth_by_size: Dict[int, float] = field(default_factory=dict)
    floor: Optional[float] = None
    median: Optional[float] = None
    rc: int = 0
    timed_out: bool = False
    duration_s: float = 0.0
    notes: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"collective": self.collective, "passed": self.passed, "reasons": list(self.reasons), "busbw": self.busbw,
                "bandwidth_by_size": {str(k): v for k, v in sorted(self.bandwidth_by_size.items())},
                "floor": self.floor, "median": self.median, "rc": self.rc, "timed_out": self.timed_out,
                "duration_s": round(self.duration_s, 3), "notes": list(self.notes), "warnings": list(self.warnings)}


@dataclass
class TestRecord:
    """One planned test and what every collective showed."""

    __test__ = False  # not a pytest test class

    test: GroupTest
    round: int
    judgements: Dict[str, CollectiveJudgement] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(j.passed for j in self.judgements.values())

    @property
    def reasons(self) -> List[str]:
        out: List[str] = []
        for coll, judgement in self.judgements.items():
            out.extend("%s: %s" % (coll, r) for r in judgement.reasons)
        return out

    def to_dict(self) -> Dict[str, Any]:
        data = self.test.to_dict()
        data.update(round=self.round, passed=self.passed, reasons=self.reasons,
                    busbw={c: j.busbw for c, j in self.judgements.items()},
                    duration_s=round(max((j.duration_s for j in self.judgements.values()), default=0.0), 3),
                    timed_out=any(j.timed_out for j in self.judgements.values()),
                    collectives={c: j.to_dict() for c, j in self.judgements.items()})
        return data


def _tail(text: str, limit: int = _STDERR_TAIL) -> str:
    text = (text or "").strip()
    if not text:
        return ""
    last = [line.strip() for line in text.splitlines() if line.strip()][-3:]
    joined = " | ".join(last)
    return joined if len(joined) <= limit else "..." + joined[-limit:]


def _output_fields(out: Any) -> Tuple[int, str, str, float, bool]:
    """(rc, stdout, stderr, duration_s, timed_out) of a RunOutput-like object or mapping."""
    get = out.get if isinstance(out, Mapping) else (lambda key, default=None: getattr(out, key, default))
    try:
        rc = int(get("rc", -1) if get("rc", -1) is not None else -1)
    except (TypeError, ValueError):
        rc = -1
    stdout = get("stdout", "") or ""
    stderr = get("stderr", "") or ""
    if isinstance(stdout, bytes):
        stdout = stdout.decode("utf-8", "replace")
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    try:
        duration = float(get("duration_s", 0.0) or 0.0)
    except (TypeError, ValueError):
        duration = 0.0
    return rc, str(stdout), str(stderr), duration, bool(get("timed_out", False))


class _Judge:
    """Judges the tests of each round; the fleet of usable results grows over the run."""

    def __init__(self, config: CertifyNcclConfig) -> None:
        self.config = config
        self.fleet: Dict[Tuple[str, str], Dict[str, float]] = {}
        self.by_size: Dict[str, Dict[int, List[float]]] = {}
        self.accelerator = config.accelerator
        self.software: Dict[str, str] = {}  # nccl / nccl_tests versions as the logs state them (for the report)

    def _parse(self, test: GroupTest, collective: str, out: Any) -> Tuple[CollectiveJudgement, Optional[NcclResult]]:
        rc, stdout, stderr, duration, timed_out = _output_fields(out)
        reasons: List[str] = []
        if timed_out:
            reasons.append("timed out after %.0f s: the test was killed" % duration)
        result = parse_nccl_output(stdout, collective=collective, source=test.id,
                                   large_message_bytes=self.config.large_message_bytes,
                                   ignore_warn_patterns=self.config.ignore_warn_patterns)
        if not result.ok and not (timed_out and not stdout.strip()):
            reasons.extend("log: %s" % r for r in result.reasons)
        if rc != 0 and not timed_out:
            detail = _tail(stderr)
            reasons.append("launcher exit code %d%s" % (rc, (": " + detail) if detail else ""))
        judgement = CollectiveJudgement(collective=collective, passed=False, reasons=reasons, rc=rc, timed_out=timed_out,
                                        duration_s=duration, warnings=list(result.warnings))
        usable = result.ok and not timed_out and rc == 0 and result.large_message_busbw is not None
        if usable:
            judgement.busbw = result.large_message_busbw
            judgement.bandwidth_by_size = {row.size: row.best_busbw for row in result.rows if row.best_busbw is not None}
            if self.accelerator is None and result.device_names:
                self.accelerator = accelerator_from_device_name(result.device_names[0])
            for key, value in (("nccl", result.nccl_version), ("nccl_tests", result.tests_version)):
                if value and key not in self.software:
                    self.software[key] = value
            return judgement, result
        return judgement, None

    def judge(self, tests: Sequence[GroupTest], collective: str, outputs: Mapping[str, Any]) -> Dict[str, CollectiveJudgement]:
        """Judge one round's outputs of ``collective``.

        The fleet a result is compared with is every usable result of this round plus the *passing* results of
        earlier rounds: follow-up tests concentrate on suspects, so earlier failures would drag the median down.
        """
        judged: Dict[str, CollectiveJudgement] = {}
        usable: Dict[str, Tuple[str, float]] = {}
        for test in tests:
            out = outputs.get(test.id) if isinstance(outputs, Mapping) else None
            if out is None:
                judged[test.id] = CollectiveJudgement(collective=collective, passed=False,
                                                      reasons=["the runner returned no result for this test"], rc=-1)
                continue
            judgement, result = self._parse(test, collective, out)
            judged[test.id] = judgement
            if result is not None and judgement.busbw is not None:
                scope = "intra-node" if len(test.nodes) == 1 else "multi-node"
                usable[test.id] = (scope, judgement.busbw)
        policy = self.config.thresholds.relative
        round_fleet: Dict[str, Dict[str, float]] = {}
        for test_id, (scope, value) in usable.items():
            round_fleet.setdefault(scope, dict(self.fleet.get((collective, scope), {})))[test_id] = value
        for test_id, (scope, value) in usable.items():
            judgement = judged[test_id]
            fleet_values = round_fleet[scope]
            stats = fleet_stats(fleet_values, policy)
            profile = self.config.thresholds.floor_for(self.accelerator, scope, collective)
            verdict = evaluate(value, profile=profile, fleet=stats, policy=policy, entity=test_id)
            judgement.reasons.extend(verdict.reasons)
            judgement.notes.extend(verdict.notes)
            judgement.floor = verdict.floor
            judgement.median = verdict.median
            if not stats.relative_applied and len(fleet_values) >= 2:
                best = max(fleet_values.values())
                limit = policy.fraction * best
                if value < limit:
                    judgement.reasons.append(
                        "busbw %.2f GB/s is below %.2f x the best result %.2f GB/s = %.2f GB/s (fleet of %d %s results is too "
                        "small for median/MAD)" % (value, policy.fraction, best, limit, len(fleet_values), scope))
                judgement.notes.append("small fleet: compared with the best of %d results" % len(fleet_values))
            judgement.passed = not judgement.reasons
        for test_id, (scope, value) in usable.items():
            judgement = judged[test_id]
            if judgement.passed:
                self.fleet.setdefault((collective, scope), {})[test_id] = value
                sizes = self.by_size.setdefault(collective, {})
                for size, busbw in judgement.bandwidth_by_size.items():
                    sizes.setdefault(size, []).append(busbw)
        return judged

    def bandwidth_by_size(self, collective: str) -> Dict[str, float]:
        """Median busbw per message size over the passing tests of ``collective``."""
        out = {}
        for size, values in sorted(self.by_size.get(collective, {}).items()):
            ordered = sorted(values)
            mid = len(ordered) // 2
            out[str(size)] = round(ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0, 3)
        return out


# ---------------------------------------------------------------------------- result
@dataclass
class CertifyNcclResult:  # pylint: disable=too-many-instance-attributes
    """Everything one run found; :meth:`to_dict` is what the module returns."""

    result: str
    scale: str
    collectives: List[str]
    nodes: Dict[str, Dict[str, Any]]
    link_faults: List[Dict[str, Any]]
    rounds: int
    tests: List[TestRecord]
    bandwidth: Dict[str, Dict[str, Any]]
    failed_groups: List[Dict[str, Any]]
    grouping: Dict[str, Any]
    trace: List[Dict[str, Any]]
    durations: Dict[str, Any]
    accelerator: Optional[str] = None
    finish_reason: str = ""
    software: Dict[str, str] = field(default_factory=dict)

    def names(self, status: str) -> List[str]:
        return sorted((n for n, v in self.nodes.items() if v["status"] == status), key=natural_key)

    def to_dict(self) -> Dict[str, Any]:
        return {"result": self.result, "scale": self.scale, "collectives": list(self.collectives), "nodes": self.nodes,
                "faulty_nodes": self.names(FAULTY), "healthy_nodes": self.names(HEALTHY),
                "excluded_nodes": self.names(EXCLUDED), "inconclusive_nodes": self.names(INCONCLUSIVE),
                "link_faults": self.link_faults, "rounds": self.rounds, "test_count": len(self.tests),
                "tests": [t.to_dict() for t in self.tests], "bandwidth": self.bandwidth,
                "failed_groups": self.failed_groups, "grouping": self.grouping, "trace": self.trace,
                "durations": self.durations, "accelerator": self.accelerator, "finish_reason": self.finish_reason,
                "software": dict(self.software),
                "summary": "%s: %d node(s) healthy, %d faulty, %d excluded, %d inconclusive, %d faulty link(s); "
                           "%d round(s), %d test(s)" % (
                               self.result, len(self.names(HEALTHY)), len(self.names(FAULTY)), len(self.names(EXCLUDED)),
                               len(self.names(INCONCLUSIVE)),
                               sum(1 for link in self.link_faults if link.get("status") == FAULTY), self.rounds,
                               len(self.tests))}


# ---------------------------------------------------------------------------- the loop
class _Run:
    """State of one :func:`certify_nccl` call."""

    def __init__(self, nodes: Sequence[CertifyNode], config: CertifyNcclConfig, runner: Any,
                 progress: Optional[ProgressCallback], clock: Callable[[], float]) -> None:
        self.nodes = list(nodes)
        self.config = config
        self.runner = runner
        self.progress = progress
        self.clock = clock
        self.judge = _Judge(config)
        self.records: Dict[str, TestRecord] = {}
        self.round_durations: List[Dict[str, Any]] = []
        self.round_number = 0

    def _say(self, message: str, info: Dict[str, Any]) -> None:
        if self.progress is not None:
            self.progress(message, info)

    def run_round(self, tests: Sequence[GroupTest], suspects: List[str]) -> Dict[str, TestOutcome]:
        """Run ``tests`` under every collective and return one outcome per test."""
        self.round_number += 1
        number = self.round_number
        self._say("round %d: %d groups running, suspects so far: [%s]" % (number, len(tests), ", ".join(suspects)),
                  {"round": number, "phase": "start", "tests": [t.to_dict() for t in tests], "suspects": list(suspects)})
        started = self.clock()
        for test in tests:
            self.records[test.id] = TestRecord(test=test, round=number)
        for collective in self.config.collectives:
            try:
                outputs = self.runner.run_tests(list(tests), collective)
            except CertifyError:
                raise
            except Exception as err:  # pylint: disable=broad-except
                # a runner crash is reported per test, never as a traceback
                outputs = {t.id: RunOutput(rc=-1, stderr="runner error: %s: %s" % (type(err).__name__, err)) for t in tests}
            for test_id, judgement in self.judge.judge(tests, collective, outputs or {}).items():
                self.records[test_id].judgements[collective] = judgement
        outcomes = {}
        for test in tests:
            rec = self.records[test.id]
            first = rec.judgements.get(self.config.collectives[0])
            outcomes[test.id] = TestOutcome(passed=rec.passed, reason="; ".join(rec.reasons)[:2000],
                                            busbw=first.busbw if first else None)
        elapsed = self.clock() - started
        failed = [t.id for t in tests if not outcomes[t.id].passed]
        self.round_durations.append({"round": number, "tests": len(tests), "failed": len(failed),
                                     "duration_s": round(elapsed, 3)})
        return outcomes

    def after_round(self, outcomes: Mapping[str, TestOutcome], suspects: List[str]) -> None:
        number = self.round_number
        failed = sorted(tid for tid, o in outcomes.items() if not o.passed)
        self._say("round %d done: %d passed, %d failed; suspects so far: [%s]" % (
            number, len(outcomes) - len(failed), len(failed), ", ".join(suspects)),
            {"round": number, "phase": "done", "failed": failed, "suspects": list(suspects)})


def _suspects(planner: IsolationPlanner) -> List[str]:
    out = [n for n, v in planner.verdicts().items()
           if v.status == FAULTY or (v.status == INCONCLUSIVE and v.evidence)]
    return sorted(out, key=natural_key)


def _node_entry(status: str, reason: str, evidence: Sequence[str]) -> Dict[str, Any]:
    return {"status": status, "reason": reason, "evidence": list(evidence), "busbw": {}, "failed_collectives": [],
            "reasons": [reason] if reason else []}


def _evidence_reasons(run: _Run, evidence: Sequence[str]) -> Tuple[List[str], List[str]]:
    """Distinct failure reasons and failed collectives of the given tests (first test first)."""
    reasons: List[str] = []
    collectives: List[str] = []
    for tid in evidence:
        rec = run.records.get(tid)
        if rec is None:
            continue
        for coll, judgement in rec.judgements.items():
            if not judgement.passed and coll not in collectives:
                collectives.append(coll)
        for reason in rec.reasons:
            if reason not in reasons:
                reasons.append(reason)
    return reasons, collectives


def _assemble(run: _Run, planner: Optional[IsolationPlanner], verdicts: Dict[str, Dict[str, Any]],
              links: List[Dict[str, Any]], result: str, grouping: Dict[str, Any], trace: List[Dict[str, Any]],
              started: float, finish_reason: str) -> CertifyNcclResult:
    del planner
    config = run.config
    records = list(run.records.values())
    by_node: Dict[str, List[TestRecord]] = {}
    for rec in records:
        for node in rec.test.nodes:
            by_node.setdefault(node, []).append(rec)
    for name, entry in verdicts.items():
        if entry["status"] in (FAULTY, INCONCLUSIVE) and entry["evidence"]:
            extra, colls = _evidence_reasons(run, entry["evidence"])
            entry["failed_collectives"] = colls
            entry["reasons"] = [entry["reason"]] + extra[:5]
            if extra:
                entry["reason"] = "%s: %s" % (entry["reason"], extra[0])
        for coll in config.collectives:
            values = []
            verified = entry["evidence"][0] if entry["status"] == HEALTHY and entry["evidence"] else None
            for rec in by_node.get(name, []):
                judgement = rec.judgements.get(coll)
                if judgement is None or judgement.busbw is None:
                    continue
                if verified is not None:
                    if rec.test.id == verified:
                        values = [judgement.busbw]
                        break
                    continue
                values.append(judgement.busbw)
            entry["busbw"][coll] = round(min(values), 3) if values else None
    bandwidth: Dict[str, Dict[str, Any]] = {}
    for coll in config.collectives:
        stats = {}
        for scope in ("multi-node", "intra-node"):
            fleet = run.judge.fleet.get((coll, scope))
            if fleet:
                stats[scope] = fleet_stats(fleet, config.thresholds.relative).to_dict()
        profile = config.thresholds.floor_for(run.judge.accelerator, "multi-node", coll)
        bandwidth[coll] = {"bandwidth_by_size": run.judge.bandwidth_by_size(coll),
                           "per_node": {n: verdicts[n]["busbw"].get(coll) for n in sorted(verdicts, key=natural_key)},
                           "fleet": stats,
                           "threshold": {"floor": profile.to_dict() if profile else None,
                                         "relative": config.thresholds.relative.to_dict()}}
    failed_groups = [{"test": rec.test.id, "round": rec.round, "purpose": rec.test.purpose, "nodes": list(rec.test.nodes),
                      "collectives": [c for c, j in rec.judgements.items() if not j.passed], "reasons": rec.reasons}
                     for rec in records if not rec.passed]
    durations = {"total_s": round(run.clock() - started, 3), "rounds": run.round_durations,
                 "tests_s": round(sum(max((j.duration_s for j in r.judgements.values()), default=0.0) for r in records), 3)}
    return CertifyNcclResult(result=result, scale=config.scale, collectives=list(config.collectives), nodes=verdicts,
                             link_faults=links, rounds=run.round_number, tests=records, bandwidth=bandwidth,
                             failed_groups=failed_groups, grouping=grouping, trace=trace, durations=durations,
                             accelerator=run.judge.accelerator, finish_reason=finish_reason, software=dict(run.judge.software))


def _link_dicts(run: _Run, planner: IsolationPlanner) -> List[Dict[str, Any]]:
    out = []
    for link in planner.link_faults():
        data = link.to_dict()
        data["reasons"] = _evidence_reasons(run, link.evidence)[0][:5]
        out.append(data)
    return out


def _planner_verdicts(planner: IsolationPlanner, by_name: Mapping[str, CertifyNode]) -> Dict[str, Dict[str, Any]]:
    out = {}
    for name, verdict in planner.verdicts().items():
        reason = verdict.reason
        node = by_name.get(name)
        if verdict.status == EXCLUDED and node is not None and node.exclude_reason:
            reason = node.exclude_reason
        out[name] = _node_entry(verdict.status, reason, verdict.evidence)
    return out


def _full_test(run: _Run, planner: IsolationPlanner) -> Optional[TestOutcome]:
    eligible = list(planner.grouping.order)
    if len(eligible) < 2:
        return None
    test = GroupTest(id="full-001", nodes=tuple(eligible), purpose="screen",
                     why="one test over all %d eligible nodes (scale full)" % len(eligible))
    outcome = run.run_round([test], [])["full-001"]
    run.after_round({"full-001": outcome}, [])
    return outcome


def certify_nccl(nodes: Sequence[CertifyNode], config: CertifyNcclConfig, runner: Any,
                 progress: Optional[ProgressCallback] = None, clock: Callable[[], float] = time.monotonic) -> CertifyNcclResult:
    """Certify ``nodes`` with multi-node collective tests launched through ``runner``.

    ``runner.run_tests(tests, collective)`` gets the tests of one round (``GroupTest`` with ``id`` and
    ``nodes``; no node is in two of them) and returns ``{test_id: RunOutput}`` (or mappings with the same
    keys).  A runner exception fails every test of the round with its message.
    """
    if not nodes:
        raise CertifyError("empty target: no node to certify", field="nodes", value=[])
    started = clock()
    by_name = {n.name: n for n in nodes}
    infos = [n.node_info() for n in nodes]
    grouping = group_nodes(infos, config.isolation.grouping)
    # per-group screens every topology group on its own (no merged screening tests)
    isolation = replace(config.isolation, screen_size=None) if config.scale == "per-group" else config.isolation
    planner = IsolationPlanner(infos, isolation, grouping=grouping)
    run = _Run(nodes, config, runner, progress, clock)
    trace: List[Dict[str, Any]] = []

    if config.scale == "full":
        outcome = _full_test(run, planner)
        if outcome is not None and outcome.passed:
            verdicts = _planner_verdicts(planner, by_name)
            for name, entry in verdicts.items():
                if entry["status"] != EXCLUDED:
                    verdicts[name] = _node_entry(HEALTHY, "passed full-001 (all eligible nodes together)", ["full-001"])
            trace.append({"round": 1, "event": "passed", "test": "full-001", "purpose": "screen", "busbw": outcome.busbw})
            result = INCOMPLETE if any(v["status"] == EXCLUDED for v in verdicts.values()) else PASSED
            return _assemble(run, planner, verdicts, [], result, grouping.to_dict(), trace, started,
                             "the full-cluster test passed")
        if outcome is not None:
            trace.append({"round": 1, "event": "failed", "test": "full-001", "purpose": "screen", "busbw": outcome.busbw,
                          "reason": outcome.reason[:300]})
            if not config.diagnose_on_failure:
                verdicts = _planner_verdicts(planner, by_name)
                for name, entry in verdicts.items():
                    if entry["status"] != EXCLUDED:
                        verdicts[name] = _node_entry(INCONCLUSIVE, "the full-cluster test full-001 failed; not isolated "
                                                     "(diagnose_on_failure is false)", ["full-001"])
                return _assemble(run, planner, verdicts, [], FAILED, grouping.to_dict(), trace, started,
                                 "the full-cluster test failed")

    while not planner.done():
        rnd = planner.plan_round()
        if not rnd.tests:
            break
        suspects = _suspects(planner)
        outcomes = run.run_round(rnd.tests, suspects)
        planner.record(outcomes)
        run.after_round(outcomes, _suspects(planner))
        if config.scale == "per-group":
            break

    verdicts = _planner_verdicts(planner, by_name)
    result = planner.result()
    finish = planner.summary()["finish_reason"]
    if config.scale == "per-group" and not planner.done():
        finish = "scale per-group: screening round only"
        for name, entry in verdicts.items():
            if entry["status"] == INCONCLUSIVE:
                failing = [r.test.id for r in run.records.values() if name in r.test.nodes and not r.passed]
                entry.update(_node_entry(INCONCLUSIVE, "in failing group %s (scale per-group does not isolate)" %
                                         ", ".join(failing), failing))
        failed_any = any(not r.passed for r in run.records.values())
        unresolved = any(v["status"] in (EXCLUDED, INCONCLUSIVE) for v in verdicts.values())
        result = FAILED if failed_any else (INCOMPLETE if unresolved else PASSED)
    trace.extend(planner.trace)
    return _assemble(run, planner, verdicts, _link_dicts(run, planner), result, grouping.to_dict(), trace, started, finish)
