# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fleet status and the useful-work measure: who is quarantined and why, how fast faults are isolated and repaired,
how available the fleet was, and how many GPU-hours of work completed against how many were lost.

Pure computation over plain (camelCase) Kubernetes objects - Nodes with the quarantine record of
:mod:`.quarantine_state` and the incident annotations of :mod:`.incident`, Pods and Jobs - plus :func:`collect`, the
only part that talks to the API (paged lists). Every formula is defined in ``docs/operate-status.md``; the names in
the report (``ttq_s``, ``ttr_s``, ``availability``, ``gpu_hours``) are the ones used there.

Time is always an input (``now``, epoch seconds): the same objects and the same ``now`` give the same report, so a
report file changes only when the fleet (or the time) does.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_storage import validate_basename
from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_label_selector, validate_namespace
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.fleet_report import (
    DEFAULT_BASENAME, FORMATS, render_formats, to_markdown, write_report,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import ANN_INCIDENT, LABEL_INCIDENT_STATE, RETURNED, Incident
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError, format_time, parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents, Standing
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (
    QUARANTINE_ACTIONS, STATE_QUARANTINED, NodeView, QuarantineStateError,
)

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_WINDOW_S = 7 * 86400.0
DEFAULT_BUCKETS = 24
MAX_BUCKETS = 500
PAGE_SIZE = 500
#: the state shown for a node quarantined without an open incident (a manual quarantine, or one the sentinel lost)
NO_INCIDENT = "quarantined-without-incident"


class FleetStatusError(InputError):
    """A bad fleet_status option (names the field and the value)."""


@dataclass(frozen=True)
class FleetOptions:
    """A validated request: the window ``[now - window_s, now]``, chart buckets, the GPU resource name, selectors."""

    now: float
    window_s: float = DEFAULT_WINDOW_S
    buckets: int = DEFAULT_BUCKETS
    gpu_resource: str = DEFAULT_GPU_RESOURCE
    label_selector: str = ""
    namespaces: tuple[str, ...] = ()

    @property
    def start(self) -> float:
        """Start of the window (epoch seconds)."""
        return self.now - self.window_s


def validate_options(now: float, window_s: Any = DEFAULT_WINDOW_S, buckets: Any = DEFAULT_BUCKETS, gpu_resource: Any = DEFAULT_GPU_RESOURCE,
                     label_selector: Any = "", namespaces: Optional[Sequence[Any]] = None) -> FleetOptions:
    """Check every option before any API call."""
    if isinstance(window_s, bool) or not isinstance(window_s, (int, float)) or not 60 <= float(window_s) <= 366 * 86400:
        raise FleetStatusError("window_s must be a number of seconds between 60 and 31622400 (366 days)", field="window_s", value=window_s)
    if isinstance(buckets, bool) or not isinstance(buckets, int) or not 1 <= buckets <= MAX_BUCKETS:
        raise FleetStatusError(f"buckets must be an integer between 1 and {MAX_BUCKETS}", field="buckets", value=buckets)
    if not isinstance(gpu_resource, str) or not gpu_resource or len(gpu_resource) > 253 or any(c.isspace() for c in gpu_resource):
        raise FleetStatusError("gpu_resource must be an extended resource name such as nvidia.com/gpu", field="gpu_resource", value=gpu_resource)
    selector = validate_label_selector(label_selector or "", "label_selector")
    spaces = tuple(validate_namespace(n, f"namespaces[{i}]") for i, n in enumerate(namespaces or []))
    return FleetOptions(now=float(now), window_s=float(window_s), buckets=buckets, gpu_resource=gpu_resource, label_selector=selector,
                        namespaces=spaces)


# ---------------------------------------------------------------------------------------------------- small helpers


def _ts(value: Any) -> Optional[float]:
    """An RFC 3339 time as epoch seconds, None when absent or malformed."""
    if not value:
        return None
    try:
        return parse_rfc3339(str(value))
    except IncidentError:
        return None


def _iso(epoch: Optional[float]) -> Optional[str]:
    return None if epoch is None else format_time(epoch)


def _overlap(start: float, end: float, lo: float, hi: float) -> float:
    """Seconds of ``[start, end]`` inside ``[lo, hi]``."""
    return max(0.0, min(end, hi) - max(start, lo))


def _quantity(value: Any) -> float:
    """A count quantity (``"8"``, ``8``, ``"8k"`` is not a GPU count: only plain numbers count, anything else is 0)."""
    try:
        number = float(str(value).strip())
    except (TypeError, ValueError):
        return 0.0
    return number if number > 0 else 0.0


def _stats(values: Sequence[float]) -> dict[str, Any]:
    """count, mean, median, p90 (nearest rank), min, max of durations in seconds (None when there are none)."""
    if not values:
        return {"count": 0, "mean_s": None, "median_s": None, "p90_s": None, "min_s": None, "max_s": None}
    ordered = sorted(values)
    rank = max(1, -(-9 * len(ordered) // 10))  # ceil(0.9 * n)
    return {"count": len(ordered), "mean_s": round(statistics.fmean(ordered), 3), "median_s": round(statistics.median(ordered), 3),
            "p90_s": round(ordered[rank - 1], 3), "min_s": round(ordered[0], 3), "max_s": round(ordered[-1], 3)}


def _r(value: float, digits: int = 4) -> float:
    return round(value, digits)


def gpu_request(pod_spec: Mapping[str, Any], resource: str = DEFAULT_GPU_RESOURCE) -> float:
    """The pod's effective GPU request: max(sum over containers, max over init containers); a container's request is
    ``resources.requests[resource]``, else ``resources.limits[resource]`` (extended resources: requests == limits)."""
    def one(container: Mapping[str, Any]) -> float:
        res = container.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        return _quantity(requests.get(resource)) if resource in requests else _quantity(limits.get(resource))
    main = sum(one(c) for c in pod_spec.get("containers") or [])
    init = max([one(c) for c in pod_spec.get("initContainers") or []] or [0.0])
    return max(main, init)


def node_gpus(node: Mapping[str, Any], resource: str = DEFAULT_GPU_RESOURCE) -> float:
    """GPUs of a node: ``status.allocatable[resource]``, else ``status.capacity[resource]``, else 0."""
    status = node.get("status") or {}
    for key in ("allocatable", "capacity"):
        value = (status.get(key) or {}).get(resource)
        if value is not None:
            return _quantity(value)
    return 0.0


def pod_run(pod: Mapping[str, Any], now: float) -> tuple[Optional[float], Optional[float]]:
    """(start, end) of a pod's run: start = ``status.startTime`` (else the earliest container ``startedAt``); end = the
    latest container ``finishedAt`` of a terminal pod, ``now`` for a Running pod, None when unknown."""
    status = pod.get("status") or {}
    started, finished = [], []
    for cstat in list(status.get("containerStatuses") or []):
        state = cstat.get("state") or {}
        for key in ("running", "terminated"):
            moment = _ts((state.get(key) or {}).get("startedAt"))
            if moment is not None:
                started.append(moment)
        end = _ts((state.get("terminated") or {}).get("finishedAt"))
        if end is not None:
            finished.append(end)
    start = _ts(status.get("startTime"))
    if start is None and started:
        start = min(started)
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed"):
        end_s = max(finished) if finished else None
    elif phase == "Running":
        end_s = now
    else:
        end_s = None
    if start is not None and end_s is not None and end_s < start:
        end_s = start
    return start, end_s


# ---------------------------------------------------------------------------------------------------- per node


@dataclass
class IncidentSpan:  # pylint: disable=too-many-instance-attributes
    """One incident of a node as the report sees it (open or ended)."""

    id: str
    node: str
    action: str
    state: str
    first_alert_at: Optional[float]
    opened_at: Optional[float]
    quarantined_at: Optional[float]
    ended_at: Optional[float]
    outcome: Optional[str]
    attempts: int = 0

    def fault_interval(self, now: float) -> tuple[Optional[float], float]:
        """``[first alert (else opened), ended (else now)]``: the time a pod failing on the node is lost to the fault."""
        start = self.first_alert_at if self.first_alert_at is not None else self.opened_at
        return start, self.ended_at if self.ended_at is not None else now

    @property
    def ttq_s(self) -> Optional[float]:
        """Time to quarantine: quarantined_at - first_alert_at (0 when the node was quarantined already)."""
        if self.first_alert_at is None or self.quarantined_at is None:
            return None
        return max(0.0, self.quarantined_at - self.first_alert_at)

    @property
    def ttr_s(self) -> Optional[float]:
        """Time to return (returned incidents only): ended_at - quarantined_at."""
        if self.outcome != RETURNED or self.ended_at is None or self.quarantined_at is None:
            return None
        return max(0.0, self.ended_at - self.quarantined_at)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"id": self.id, "node": self.node, "action": self.action, "state": self.state, "outcome": self.outcome,
                "first_alert_at": _iso(self.first_alert_at), "quarantined_at": _iso(self.quarantined_at), "opened_at": _iso(self.opened_at),
                "ended_at": _iso(self.ended_at), "ttq_s": None if self.ttq_s is None else _r(self.ttq_s, 3),
                "ttr_s": None if self.ttr_s is None else _r(self.ttr_s, 3), "attempts": self.attempts}


@dataclass
class NodeFacts:  # pylint: disable=too-many-instance-attributes
    """What the report knows about one node."""

    name: str
    gpus: float
    created: Optional[float]
    quarantine_state: Optional[str]
    unschedulable: bool
    intervals: list[tuple[float, Optional[float]]] = field(default_factory=list)
    reason: Optional[str] = None
    actor: Optional[str] = None
    since: Optional[float] = None
    incidents: list[IncidentSpan] = field(default_factory=list)
    current: Optional[Incident] = None
    #: the open incident's or unfinished release's state and id, the release no alert will bring any more
    #: (:meth:`NodeIncidents.standing`)
    standing: Standing = field(default_factory=Standing)
    attempt_times: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def quarantine_intervals(view: NodeView, record_since: Optional[float], created: Optional[float],
                         window_start: float) -> list[tuple[float, Optional[float]]]:
    """Quarantine intervals ``(start, end)`` (end None: still quarantined) from the history annotation.

    A ``cordon``/``taint``/``label`` entry starts one (when none is open), ``release`` ends it. A node labelled
    ``quarantined`` whose history shows no open interval (history trimmed) is quarantined since its record's ``since``,
    else its creation, else the window start. A node not labelled ``quarantined`` whose history still has an open
    interval (undone by ``uncordon``/``untaint``) ended it at the last history entry.
    """
    intervals: list[tuple[float, Optional[float]]] = []
    open_start: Optional[float] = None
    last: Optional[float] = None
    for entry in view.history():
        moment = _ts(entry.get("time"))
        if moment is None:
            continue
        last = moment if last is None else max(last, moment)
        action = entry.get("action")
        if action in QUARANTINE_ACTIONS and open_start is None:
            open_start = moment
        elif action == "release" and open_start is not None:
            intervals.append((open_start, max(open_start, moment)))
            open_start = None
    if view.state == STATE_QUARANTINED:
        if open_start is None:
            open_start = next((t for t in (record_since, created) if t is not None), window_start)
        intervals.append((open_start, None))
    elif open_start is not None:
        intervals.append((open_start, max(open_start, last if last is not None else open_start)))
    return intervals


def _quarantined_at(intervals: Sequence[tuple[float, Optional[float]]], opened: Optional[float]) -> Optional[float]:
    """Start of the quarantine interval covering ``opened`` (1 s of slack either side), else ``opened``."""
    if opened is None:
        return None
    for start, end in intervals:
        if start <= opened + 1.0 and (end is None or end >= opened - 1.0):
            return min(start, opened)
    return opened


def _first_alert(events: Iterable[Mapping[str, Any]]) -> Optional[float]:
    times = [t for t in (_ts(e.get("starts_at")) for e in events) if t is not None]
    return min(times) if times else None


def node_facts(node: Mapping[str, Any], options: FleetOptions) -> NodeFacts:
    """One Node (camelCase dict) -> :class:`NodeFacts`; malformed annotations are reported in ``problems``, never fatal."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    view = NodeView.from_node(node)
    facts = NodeFacts(name=name, gpus=node_gpus(node, options.gpu_resource), created=_ts(meta.get("creationTimestamp")),
                      quarantine_state=view.state, unschedulable=view.unschedulable)
    record = None
    try:
        record = view.record()
    except QuarantineStateError as err:
        facts.problems.append(str(err))
    if record is not None:
        facts.reason, facts.actor, facts.since = record.reason or None, record.actor or None, _ts(record.since)
    facts.intervals = quarantine_intervals(view, facts.since, facts.created, options.start)
    if view.state == STATE_QUARANTINED and facts.since is None:
        facts.since = facts.intervals[-1][0]
    try:
        incidents = NodeIncidents.from_node(node)
    except IncidentError as err:
        facts.problems.append(str(err))
        meta_only = dict(node)
        meta_only["metadata"] = dict(meta, annotations={k: v for k, v in (meta.get("annotations") or {}).items()
                                                        if k != ANN_INCIDENT})
        incidents = NodeIncidents.from_node(meta_only)
    for entry in incidents.history:
        opened = _ts(entry.get("opened_at"))
        facts.incidents.append(IncidentSpan(id=str(entry.get("id") or ""), node=name, action=str(entry.get("action") or ""),
                                            state=str(entry.get("outcome") or ""), first_alert_at=_first_alert(entry.get("events") or []),
                                            opened_at=opened, quarantined_at=_quarantined_at(facts.intervals, opened),
                                            ended_at=_ts(entry.get("ended_at")), outcome=str(entry.get("outcome") or "") or None))
    current = incidents.current
    facts.current = current
    facts.standing = incidents.standing()
    if current is not None:
        opened = _ts(current.opened_at)
        facts.incidents.append(IncidentSpan(id=current.id, node=name, action=current.action, state=current.state,
                                            first_alert_at=_first_alert(e.to_dict() for e in current.events), opened_at=opened,
                                            quarantined_at=_quarantined_at(facts.intervals, opened), ended_at=None, outcome=None,
                                            attempts=current.attempts))
    facts.attempt_times = [t for t in (_ts(a.get("time")) for a in incidents.attempts) if t is not None]
    if current is None and incidents.labels.get(LABEL_INCIDENT_STATE):
        facts.problems.append(f"node {name}: label {LABEL_INCIDENT_STATE} is set but no incident is recorded")
    return facts


def quarantined_seconds(facts: NodeFacts, lo: float, hi: float, now: float) -> float:
    """Seconds of ``[lo, hi]`` the node was quarantined (intervals merged, so overlaps never count twice)."""
    spans = sorted((s, now if e is None else e) for s, e in facts.intervals)
    total, cur_s, cur_e = 0.0, None, None
    for start, end in spans:
        if cur_e is None or start > cur_e:
            if cur_s is not None and cur_e is not None:
                total += _overlap(cur_s, cur_e, lo, hi)
            cur_s, cur_e = start, end
        else:
            cur_e = max(cur_e, end)
    if cur_s is not None and cur_e is not None:
        total += _overlap(cur_s, cur_e, lo, hi)
    return total


def node_seconds(facts: NodeFacts, lo: float, hi: float) -> float:
    """Seconds of ``[lo, hi]`` the node existed (from its creationTimestamp)."""
    start = lo if facts.created is None else max(lo, facts.created)
    return max(0.0, hi - start)


# ---------------------------------------------------------------------------------------------------- work volume


@dataclass
class WorkItem:  # pylint: disable=too-many-instance-attributes
    """One pod's GPU work: where, how many GPUs, when, and its class."""

    namespace: str
    name: str
    node: str
    gpus: float
    start: float
    end: float
    kind: str  # succeeded | running | failed_fault | failed_other
    incident: Optional[str] = None


def _owner_uid(meta: Mapping[str, Any], kind: str) -> Optional[str]:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == kind and ref.get("uid"):
            return str(ref["uid"])
    return None


def classify_pods(pods: Sequence[Mapping[str, Any]], nodes: Mapping[str, NodeFacts],  # pylint: disable=too-many-locals
                  options: FleetOptions) -> tuple[list[WorkItem], dict[str, int]]:
    """GPU pods -> work items; counts of pods per class (and ``unmeasured``: terminal pods without times)."""
    items: list[WorkItem] = []
    counts = {"succeeded": 0, "running": 0, "failed_fault": 0, "failed_other": 0, "unmeasured": 0}
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        gpus = gpu_request(spec, options.gpu_resource)
        phase = status.get("phase")
        if gpus <= 0 or phase not in ("Succeeded", "Failed", "Running"):
            continue
        start, end = pod_run(pod, options.now)
        if start is None or end is None:
            counts["unmeasured"] += 1
            continue
        node = str(spec.get("nodeName") or "")
        kind, incident = "running", None
        if phase == "Succeeded":
            kind = "succeeded"
        elif phase == "Failed":
            kind = "failed_other"
            for span in (nodes[node].incidents if node in nodes else []):
                lo, hi = span.fault_interval(options.now)
                if lo is not None and lo <= end <= hi:
                    kind, incident = "failed_fault", span.id
                    break
        counts[kind] += 1
        items.append(WorkItem(str(meta.get("namespace") or ""), str(meta.get("name") or ""), node, gpus, start, end, kind, incident))
    return items, counts


def job_summary(jobs: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]], options: FleetOptions) -> tuple[dict[str, Any], list[WorkItem]]:
    """Jobs by outcome, and for each finished GPU Job none of whose pods is listed any more (deleted by
    ``ttlSecondsAfterFinished``) an ESTIMATED work item: template GPUs x succeeded pods x (completionTime - startTime)."""
    owners = {_owner_uid(p.get("metadata") or {}, "Job") for p in pods}
    counts = {"complete": 0, "failed": 0, "active": 0, "without_pods": 0}
    estimated: list[WorkItem] = []
    for job in jobs:
        meta, status = job.get("metadata") or {}, job.get("status") or {}
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        if conds.get("Complete") == "True":
            counts["complete"] += 1
        elif conds.get("Failed") == "True":
            counts["failed"] += 1
        else:
            counts["active"] += 1
            continue
        if meta.get("uid") in owners or conds.get("Complete") != "True":
            continue
        gpus = gpu_request(((job.get("spec") or {}).get("template") or {}).get("spec") or {}, options.gpu_resource)
        start, end = _ts(status.get("startTime")), _ts(status.get("completionTime"))
        succeeded = int(status.get("succeeded") or 0)
        if gpus <= 0 or start is None or end is None or succeeded <= 0:
            continue
        counts["without_pods"] += 1
        estimated.append(WorkItem(str(meta.get("namespace") or ""), str(meta.get("name") or ""), "", gpus * succeeded, start, max(start, end),
                                  "succeeded"))
    return counts, estimated


# ---------------------------------------------------------------------------------------------------- the report


def _availability(quarantined: float, existed: float) -> Optional[float]:
    return None if existed <= 0 else _r(1.0 - quarantined / existed, 6)


def _gpu_hours(items: Iterable[WorkItem], lo: float, hi: float) -> float:
    return sum(i.gpus * _overlap(i.start, i.end, lo, hi) for i in items) / 3600.0


def _quarantine_row(facts: NodeFacts) -> dict[str, Any]:
    current = facts.current
    reason = facts.reason or (current.reason if current else None)
    if current is not None and current.state == "needs-attention" and current.steps:
        reason = current.steps[-1].get("message") or reason
    standing = facts.standing
    return {"node": facts.name, "state": standing.state or NO_INCIDENT, "incident": standing.incident, "release_due": standing.release_due,
            "action": current.action if current else None, "reason": reason, "actor": facts.actor,
            "since": _iso(facts.since), "incident_opened_at": current.opened_at if current else None,
            "attempts": current.attempts if current else 0, "last_error": current.last_error if current else "",
            "gpus": facts.gpus, "unschedulable": facts.unschedulable}


def build_report(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],  # pylint: disable=too-many-locals
                 jobs: Sequence[Mapping[str, Any]], options: FleetOptions) -> dict[str, Any]:
    """The fleet report (see docs/operate-status.md for every field and formula)."""
    lo, hi, now = options.start, options.now, options.now
    facts = {f.name: f for f in (node_facts(n, options) for n in nodes)}
    items, pod_counts = classify_pods(pods, facts, options)
    job_counts, estimated = job_summary(jobs, pods, options)
    by_kind: dict[str, list[WorkItem]] = {"succeeded": [], "running": [], "failed_fault": [], "failed_other": []}
    for item in items:
        by_kind[item.kind].append(item)

    node_rows, incidents = [], []
    q_total = exist_total = lost_q_total = 0.0
    for name in sorted(facts):
        f = facts[name]
        q_s, n_s = quarantined_seconds(f, lo, hi, now), node_seconds(f, lo, hi)
        q_total, exist_total = q_total + q_s, exist_total + n_s
        lost_q = q_s * f.gpus / 3600.0
        lost_q_total += lost_q
        spans = [s for s in f.incidents if (s.opened_at or 0) <= hi and (s.ended_at is None or s.ended_at >= lo)]
        incidents.extend(spans)
        mine = [i for i in items if i.node == name]
        node_rows.append({
            "node": name, "gpus": f.gpus, "quarantine": f.quarantine_state, "incident_state": f.current.state if f.current else None,
            "incident": f.current.id if f.current else None, "quarantined_s": _r(q_s, 3), "node_s": _r(n_s, 3),
            "availability": _availability(q_s, n_s), "incidents": len(spans),
            "remediation_attempts": sum(1 for t in f.attempt_times if lo < t <= hi),
            "ttq_s": [_r(s.ttq_s, 3) for s in spans if s.ttq_s is not None and s.opened_at is not None and s.opened_at >= lo],
            "ttr_s": [_r(s.ttr_s, 3) for s in spans if s.ttr_s is not None and s.ended_at is not None and s.ended_at >= lo],
            "gpu_hours": {"succeeded": _r(_gpu_hours((i for i in mine if i.kind == "succeeded"), lo, hi)),
                          "lost_faults": _r(_gpu_hours((i for i in mine if i.kind == "failed_fault"), lo, hi)),
                          "lost_quarantine": _r(lost_q)},
            "problems": f.problems})
    incidents.sort(key=lambda s: (s.opened_at or 0.0, s.node, s.id))
    ttq = [s.ttq_s for s in incidents if s.ttq_s is not None and s.opened_at is not None and s.opened_at >= lo]
    ttr = [s.ttr_s for s in incidents if s.ttr_s is not None and s.ended_at is not None and s.ended_at >= lo]
    succeeded = _gpu_hours(by_kind["succeeded"], lo, hi)
    succeeded_est = _gpu_hours(estimated, lo, hi)
    lost_faults = _gpu_hours(by_kind["failed_fault"], lo, hi)
    denominator = succeeded + succeeded_est + lost_faults + lost_q_total
    quarantined = [_quarantine_row(f) for n, f in sorted(facts.items()) if f.quarantine_state == STATE_QUARANTINED or f.current is not None]
    by_state: dict[str, int] = {}
    for row in quarantined:
        by_state[row["state"]] = by_state.get(row["state"], 0) + 1
    return {
        "kind": "FleetStatus", "version": 1,
        "window": {"start": format_time(lo), "end": format_time(hi), "seconds": options.window_s},
        "gpu_resource": options.gpu_resource,
        "fleet": {
            "nodes": len(facts), "gpu_nodes": sum(1 for f in facts.values() if f.gpus > 0), "gpus": sum(f.gpus for f in facts.values()),
            "quarantined": len([r for r in quarantined if facts[r["node"]].quarantine_state == STATE_QUARANTINED]),
            "by_state": dict(sorted(by_state.items())), "availability": _availability(q_total, exist_total),
            "quarantined_node_s": _r(q_total, 3), "node_s": _r(exist_total, 3),
            "incidents": {"in_window": len(incidents), "open": sum(1 for s in incidents if s.ended_at is None),
                          "returned": sum(1 for s in incidents if s.outcome == RETURNED and s.ended_at is not None and s.ended_at >= lo),
                          "released": sum(1 for s in incidents if s.outcome == "released" and s.ended_at is not None and s.ended_at >= lo)},
            "ttq": _stats(ttq), "mttr": _stats(ttr),
            "remediation_attempts": sum(r["remediation_attempts"] for r in node_rows),
        },
        "work": {
            "gpu_hours": {"succeeded": _r(succeeded + succeeded_est), "succeeded_estimated": _r(succeeded_est), "lost_faults": _r(lost_faults),
                          "lost_quarantine": _r(lost_q_total), "failed_other": _r(_gpu_hours(by_kind["failed_other"], lo, hi)),
                          "running": _r(_gpu_hours(by_kind["running"], lo, hi))},
            "useful_fraction": None if denominator <= 0 else _r((succeeded + succeeded_est) / denominator, 6),
            "pods": pod_counts, "jobs": job_counts,
        },
        "quarantined": quarantined,
        "nodes": node_rows,
        "incidents": [s.to_dict() for s in incidents],
        "timeline": timeline(facts, items + estimated, options),
        "problems": [p for f in facts.values() for p in f.problems],
    }


def timeline(facts: Mapping[str, NodeFacts], items: Sequence[WorkItem], options: FleetOptions) -> list[dict[str, Any]]:
    """The window cut into ``options.buckets`` equal buckets: availability and GPU-hours per bucket (the charts)."""
    out = []
    width = options.window_s / options.buckets
    for index in range(options.buckets):
        lo = options.start + index * width
        hi = options.now if index == options.buckets - 1 else lo + width
        q_s = sum(quarantined_seconds(f, lo, hi, options.now) for f in facts.values())
        n_s = sum(node_seconds(f, lo, hi) for f in facts.values())
        lost_q = sum(quarantined_seconds(f, lo, hi, options.now) * f.gpus for f in facts.values()) / 3600.0
        out.append({"start": format_time(lo), "end": format_time(hi), "availability": _availability(q_s, n_s),
                    "quarantined_nodes": _r(q_s / (hi - lo), 4) if hi > lo else 0.0,
                    "gpu_hours": {"succeeded": _r(_gpu_hours((i for i in items if i.kind == "succeeded"), lo, hi)),
                                  "lost_faults": _r(_gpu_hours((i for i in items if i.kind == "failed_fault"), lo, hi)),
                                  "lost_quarantine": _r(lost_q)}})
    return out


def summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """The small form published with ``set_stats`` (AWX shows it on the job): the fleet numbers, no per-node rows."""
    fleet, work = report["fleet"], report["work"]
    return {"window": report["window"], "nodes": fleet["nodes"], "gpus": fleet["gpus"], "quarantined": fleet["quarantined"],
            "by_state": fleet["by_state"], "availability": fleet["availability"], "incidents": fleet["incidents"],
            "ttq_mean_s": fleet["ttq"]["mean_s"], "mttr_mean_s": fleet["mttr"]["mean_s"],
            "remediation_attempts": fleet["remediation_attempts"], "gpu_hours": work["gpu_hours"], "useful_fraction": work["useful_fraction"],
            "quarantined_nodes": [{k: r.get(k) for k in ("node", "state", "incident", "reason", "since")} for r in report["quarantined"]]}


# ---------------------------------------------------------------------------------------------------- reading the cluster


def _list_all(client: KubeApi, resource: str, fn: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token = None
    while True:
        extra = {"_continue": token} if token else {}
        resp = client.call("list", resource, fn, *args, limit=PAGE_SIZE, _preload_content=False, **kwargs, **extra)
        data = json.loads(resp.data)
        items.extend(data.get("items") or [])
        token = (data.get("metadata") or {}).get("continue")
        if not token:
            return items


def collect(client: KubeApi, options: FleetOptions) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes (``label_selector``), Pods and Jobs (every namespace, or ``namespaces``) as plain dicts."""
    nodes = _list_all(client, "nodes", client.core.list_node, label_selector=options.label_selector)
    if options.namespaces:
        pods = [p for ns in options.namespaces for p in _list_all(client, "pods", client.core.list_namespaced_pod, ns)]
        jobs = [j for ns in options.namespaces for j in _list_all(client, "jobs", client.batch.list_namespaced_job, ns)]
    else:
        pods = _list_all(client, "pods", client.core.list_pod_for_all_namespaces)
        jobs = _list_all(client, "jobs", client.batch.list_job_for_all_namespaces)
    return nodes, pods, jobs


def run_fleet_status(client: KubeApi, options: FleetOptions, dest_dir: str = "", formats: Sequence[str] = FORMATS,
                     basename: str = DEFAULT_BASENAME, check_mode: bool = False) -> dict[str, Any]:
    """The ``fleet_status`` module: read the cluster, build the report, render it and (with ``dest_dir``) write the files."""
    for index, fmt in enumerate(formats):
        if fmt not in FORMATS:
            raise FleetStatusError(f"formats[{index}] must be one of {', '.join(FORMATS)}", field=f"formats[{index}]", value=fmt)
    if dest_dir:
        validate_basename(basename)
    nodes, pods, jobs = collect(client, options)
    report = build_report(nodes, pods, jobs, options)
    rendered = render_formats(report, list(dict.fromkeys(formats)))
    result: dict[str, Any] = {"changed": False, "report": report, "summary": summary(report), "markdown": rendered.get("markdown") or to_markdown(report),
                              "files": {}, "changed_files": []}
    if dest_dir:
        written = write_report(dest_dir, rendered, basename, check_mode)
        result.update(files=written["files"], changed_files=written["changed_files"], changed=bool(written["changed_files"]))
    return result


__all__ = ["DEFAULT_BUCKETS", "DEFAULT_GPU_RESOURCE", "DEFAULT_WINDOW_S", "FleetOptions", "FleetStatusError", "IncidentSpan", "NO_INCIDENT",
           "NodeFacts", "WorkItem", "build_report", "classify_pods", "collect", "gpu_request", "job_summary", "node_facts", "node_gpus",
           "node_seconds", "pod_run", "quarantine_intervals", "quarantined_seconds", "run_fleet_status", "summary", "timeline", "validate_options"]
