# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Batch quarantine: every node the sentinel plan decided to ``open`` quarantined in one call, concurrently.

During an alert storm the remediate run used to quarantine nodes one after another (lock, breaker, cordon, open
incident, unlock: several module calls per node), so the last node of a 150-node storm was cordoned minutes after the
first. :func:`quarantine_batch` opens the incident of every ``open`` decision on a bounded thread pool. It is the one
way the sentinel opens an incident: the remediate run calls it for all nodes at once (``sentinel_quarantine`` with the
events, :mod:`.sentinel_intake`), and ``roles/sentinel/tasks/steps.yml`` calls it with one decision for a node the
batch left to it (its lock already held: ``take_locks=False``). Per node:

1. take the node's Lease lock (:class:`~.node_lock.NodeLock`, holder ``<actor>/<run>``; unless ``take_locks`` is off)
   and read the node's incident
   record (:func:`~.remediation_state.get_states`); a node locked by another run, missing, or with an open incident
   is left to the per-node loop (``deferred``), which handles it exactly as before;
2. ask the circuit breaker ONCE for all locked nodes without an incident, in decision order
   (:meth:`~.circuit_breaker.CircuitBreaker.record`: the same admissions as asking node by node); a refused node is
   left untouched, its alerts are recorded (``node_incident record``) and it is reported ``held_back``;
3. cordon and taint each admitted node with the decision's reason (:func:`~.node_quarantine.apply_to_node`: the
   quarantine record carries the reason) - all cordons first, so the last node is cordoned as early as possible;
4. open the incident in state ``quarantined`` (or the decision's state) with its Kubernetes Event
   (:func:`~.remediation_state.apply_incident`);
5. release every lock it took (always, also after an error).

Nothing here is a second implementation: locks, breaker, quarantine record and incident record are the modules'
own code. After the batch the per-node loop continues each ``quarantined`` node from its recorded state (the incident
it finds is the one it was started for, so it neither asks the breaker again nor opens anything: it drains,
remediates and recertifies). A node whose batch step failed is ``deferred`` with the error: the loop runs it from
whatever is recorded (a cordon without an incident is resumed: the breaker admits a node it already counted for
free, the cordon changes nothing, the incident opens).

Check mode reads the nodes and asks the breaker's ``check`` (no write): ``quarantined`` then means "would be".
"""
from __future__ import annotations

import time
from concurrent.futures import Executor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_namespace
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig, CircuitBreaker
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError, format_time, parse_rfc3339, validate_fingerprint
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import LockRequest, try_lock, unlock_quietly
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import validate_request as validate_lock_request
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import (
    CHANGED, OK, QuarantineOptions, apply_to_node, build_request, now_rfc3339,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import (
    IncidentOptions, apply_incident, get_states, validate_options as validate_incident_options,
)

#: node outcomes
QUARANTINED = "quarantined"
ALREADY_OPEN = "already_open"
HELD_BACK = "held_back"
DEFERRED = "deferred"
IGNORED = "ignored"

#: decisions that open an incident: ``open`` (state ``quarantined``) and ``needs_attention`` (a node at its attempt cap
#: without an open incident: the incident opens in ``needs-attention`` and the node stays quarantined with that reason)
OPENING_KINDS = ("open", "needs_attention")
QUARANTINE_TAINT = {"key": "dsxos.io/quarantine", "effect": "NoSchedule"}
DEFAULT_WORKERS = 16
MAX_WORKERS = 64
LOCK_PURPOSE = "sentinel"
REASON_LIMIT = 1000


class BatchQuarantineError(IncidentError):
    """Bad input of the batch (names the decision and the field)."""


def run_all(pool: Executor, work: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``work`` of every item on ``pool``; waits for ALL of them before returning their results in order or raising the
    first error (``pool.map`` would raise at the first error while later items still run - an unlock after it could
    miss a lock one of them takes)."""
    futures = [pool.submit(work, item) for item in items]
    wait(futures)
    return [future.result() for future in futures]


def take_node_lock(client: KubeApi, request: LockRequest, outcome: Any, enabled: bool) -> bool:
    """A batch's lock step for one node: ``outcome.lock = "held"`` and True, or ``outcome.detail``/``error`` set and False
    (locked by another run, or the API failed); True without a lock when ``enabled`` is off (check mode, the caller's lock)."""
    if not enabled:
        return True
    refused = try_lock(client, request)
    if refused is not None:
        outcome.detail, outcome.error = refused
        return False
    outcome.lock = "held"
    return True


def release_node_lock(client: KubeApi, request: LockRequest, outcome: Any) -> None:
    """Release the lock :func:`take_node_lock` took for ``outcome`` (``outcome.lock``: released / release failed: ...)."""
    if outcome.lock == "held":
        outcome.lock = unlock_quietly(client, request)


def truncate_reason(text: str, length: int = REASON_LIMIT) -> str:
    """The cordon reason cut to ``length`` the way Jinja's ``truncate`` cuts (leeway 5, whole words, ``...``)."""
    if len(text) <= length + 5:
        return text
    head = text[:length - 3]
    cut = head.rsplit(" ", 1)[0]
    return cut + "..."


@dataclass(frozen=True)
class BatchOptions:  # pylint: disable=too-many-instance-attributes
    """Run-wide settings of a batch (what ``steps.yml`` takes from the role's variables)."""

    holder: str
    actor: str
    lock_namespace: str = "dsxos-system"
    lock_duration_s: int = 1800
    lock_wait_s: float = 0.0
    taint: bool = True
    breaker: Optional[BreakerConfig] = None
    event_namespace: str = "default"
    workers: int = DEFAULT_WORKERS
    #: False when the caller already holds every node's lock as ``holder`` (the role's per-node steps): none is taken
    #: or released here
    take_locks: bool = True
    #: (purpose, seconds) pairs: how long to wait for a lock held for one of these purposes (``node_lock``'s
    #: ``wait_for_purposes``; the sentinel's releases)
    lock_wait_for_purposes: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class BatchItem:
    """One ``open`` decision, validated: the lock request, the incident to open and the alerts to record when refused."""

    node: str
    incident: str
    reason: str
    lock: LockRequest
    open: IncidentOptions
    record: IncidentOptions


@dataclass
class NodeOutcome:  # pylint: disable=too-many-instance-attributes
    """What the batch did for one node."""

    node: str
    incident: str
    status: str = DEFERRED
    detail: str = ""
    changed: bool = False
    cordoned_at: Optional[str] = None
    quarantine_time: Optional[str] = None
    lock: str = ""
    error: Optional[dict[str, Any]] = None
    current: Optional[dict[str, Any]] = None
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Module return value of one node."""
        return {"node": self.node, "incident": self.incident, "status": self.status, "detail": self.detail, "changed": self.changed,
                "cordoned_at": self.cordoned_at, "quarantine_time": self.quarantine_time, "lock": self.lock, "error": self.error,
                "current": self.current, "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise BatchQuarantineError(f"{where} must be a non-empty string", field=where, value=value)
    return value


def checked_decisions(decisions: Sequence[Any], options: BatchOptions) -> list[tuple[str, Mapping[str, Any]]]:
    """Check the batch's run-wide options (``workers``, ``event_namespace``) and that every decision is a mapping; the
    decisions with where each is (``decisions[<i>]``) - the common start of every batch's validation."""
    if not isinstance(options.workers, int) or isinstance(options.workers, bool) or not 1 <= options.workers <= MAX_WORKERS:
        raise BatchQuarantineError(f"workers must be an integer in 1..{MAX_WORKERS}", field="workers", value=options.workers)
    validate_namespace(options.event_namespace, "event_namespace")
    out: list[tuple[str, Mapping[str, Any]]] = []
    for index, decision in enumerate(decisions):
        where = f"decisions[{index}]"
        if not isinstance(decision, Mapping):
            raise BatchQuarantineError(f"{where} must be a decision of dsxos.cluster.sentinel_plan (a dict)", field=where, value=decision)
        out.append((where, decision))
    return out


def validate_batch(decisions: Sequence[Any], options: BatchOptions) -> tuple[list[BatchItem], list[dict[str, Any]]]:
    """The ``open`` decisions as :class:`BatchItem` (every field checked before any API call) and the ignored ones.

    A decision of another kind, or a dry run, is not this batch's: it is returned in the second list (the per-node loop
    handles it). Two ``open`` decisions for one node are refused (the policy gives one decision per node).
    """
    items: list[BatchItem] = []
    ignored: list[dict[str, Any]] = []
    seen: set[str] = set()
    for where, decision in checked_decisions(decisions, options):
        if decision.get("kind") not in OPENING_KINDS or decision.get("dry_run"):
            ignored.append({"node": decision.get("node"), "kind": decision.get("kind"), "dry_run": bool(decision.get("dry_run"))})
            continue
        node = _text(decision.get("node"), f"{where}.node")
        if node in seen:
            raise BatchQuarantineError(f"{where}: node {node} has two open decisions", field=f"{where}.node", value=node)
        seen.add(node)
        incident = _text(decision.get("incident"), f"{where}.incident")
        reason = _text(decision.get("reason"), f"{where}.reason")
        events = decision.get("events")
        for number, event in enumerate(events if isinstance(events, (list, tuple)) else []):
            if isinstance(event, Mapping):
                validate_fingerprint(event.get("fingerprint"), f"{where}.events[{number}].fingerprint")
                parse_rfc3339(str(event.get("starts_at") or ""), f"{where}.events[{number}].starts_at")
        common = {"node": node, "actor": options.actor, "event_namespace": options.event_namespace, "events": events}
        opening = validate_incident_options(dict(common, action="open", incident=incident, state=decision.get("state") or "quarantined",
                                                 remediation=decision.get("action"), rule=decision.get("rule") or "", reason=reason,
                                                 gpus=list(decision.get("gpus") or [])))
        record = validate_incident_options(dict(common, action="record"))
        lock = validate_lock_request({"node": node, "holder": options.holder, "state": "acquire", "namespace": options.lock_namespace,
                                      "duration_s": options.lock_duration_s, "purpose": LOCK_PURPOSE, "reason": incident,
                                      "wait_timeout_s": options.lock_wait_s, "wait_for_purposes": dict(options.lock_wait_for_purposes)})
        items.append(BatchItem(node=opening.node, incident=opening.incident, reason=reason, lock=lock, open=opening, record=record))
    return items, ignored


class BatchQuarantine:
    """One batch through one client (thread-safe: the client's rate limiter is shared by the pool)."""

    def __init__(self, client: KubeApi, options: BatchOptions, check_mode: bool = False, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.options = options
        self.check_mode = check_mode
        self.clock = clock
        self.breaker_result: Optional[dict[str, Any]] = None

    # ------------------------------------------------------------------ steps of one node

    def _lock_and_read(self, item: BatchItem, outcome: NodeOutcome) -> bool:
        """Lock (not in check mode) and read; True when the node goes on to the breaker."""
        started = time.monotonic()
        if not take_node_lock(self.client, item.lock, outcome, not self.check_mode and self.options.take_locks):
            return False
        outcome.seconds["lock"] = time.monotonic() - started
        try:
            state = get_states(self.client, [item.node])[item.node]
        except K8sError as err:
            outcome.detail, outcome.error = f"read failed: {err}", err.to_dict()
            return False
        if not state.get("exists"):
            outcome.detail = f"node {item.node} not found"
            return False
        if state.get("unreadable"):
            outcome.detail = f"incident record unreadable: {state.get('error')}"
            return False
        current = state.get("incident")
        if current is not None:
            outcome.current = dict(current)
            if current.get("id") == item.incident:
                outcome.status, outcome.detail = ALREADY_OPEN, f"incident {item.incident} is open ({current.get('state')})"
            else:
                outcome.detail = f"incident {current.get('id')} is open: the alerts join it"
            return False
        return True

    def _hold_back(self, item: BatchItem, outcome: NodeOutcome, refusal: str) -> None:
        """A node the breaker refuses: untouched; its alerts recorded (rate rules count them), as steps.yml does."""
        outcome.status, outcome.detail = HELD_BACK, f"circuit breaker: {refusal}"
        if self.check_mode:
            return
        try:
            recorded = apply_incident(self.client, item.record)
            outcome.changed = bool(recorded.get("changed"))
        except (K8sError, IncidentError) as err:
            outcome.error = err.to_dict()
            outcome.detail += f"; recording the alerts failed: {err}"

    def _cordon(self, item: BatchItem, outcome: NodeOutcome) -> bool:
        """Cordon + taint with the recorded reason; True when the node is quarantined (or would be)."""
        started = time.monotonic()
        taints = [dict(QUARANTINE_TAINT)] if self.options.taint else []
        request = build_request(QuarantineOptions(action="cordon", reason=truncate_reason(item.reason), actor=self.options.actor,
                                                  taints=taints), now_rfc3339(self.clock))
        result = apply_to_node(self.client, item.node, request, check_mode=self.check_mode)
        outcome.seconds["cordon"] = time.monotonic() - started
        if result.status not in (OK, CHANGED):
            outcome.detail, outcome.error = f"cordon failed: {result.message}", result.error
            return False
        outcome.changed = outcome.changed or result.changed
        outcome.quarantine_time = request.now
        outcome.cordoned_at = format_time(self.clock())
        return True

    def _open(self, item: BatchItem, outcome: NodeOutcome) -> None:
        """Open the incident (its state and Event); ``quarantined`` when it is open afterwards."""
        started = time.monotonic()
        try:
            opened = apply_incident(self.client, item.open, check_mode=self.check_mode)
        except (K8sError, IncidentError) as err:
            outcome.detail, outcome.error = f"opening incident {item.incident} failed: {err}", err.to_dict()
            return
        finally:
            outcome.seconds["open"] = time.monotonic() - started
        incident = opened.get("incident")
        if incident is None or incident.get("id") != item.incident:
            outcome.detail = str(opened.get("msg") or "incident not opened")
            return
        outcome.status, outcome.detail = QUARANTINED, str(opened.get("msg") or "")
        outcome.current = dict(incident)
        outcome.changed = outcome.changed or bool(opened.get("changed"))
        if opened.get("event_error"):
            outcome.error = opened["event_error"]

    def _unlock(self, item: BatchItem, outcome: NodeOutcome) -> None:
        release_node_lock(self.client, item.lock, outcome)

    # ------------------------------------------------------------------ the batch

    def _ask_breaker(self, items: Sequence[BatchItem]) -> dict[str, str]:
        """One breaker decision for the nodes in order; returns the refused ones (raises K8sError when unavailable)."""
        config = self.options.breaker
        if config is None or not config.enabled or not items:
            return {}
        breaker = CircuitBreaker(self.client, config, self.clock)
        nodes = [i.node for i in items]
        if self.check_mode:
            decision = breaker.check(nodes)
        else:
            reasons = "; ".join(truncate_reason(i.reason) for i in items[:3])
            decision = breaker.record(nodes, truncate_reason(f"sentinel batch of {len(nodes)} node(s): {reasons}"), self.options.actor)
        self.breaker_result = decision.to_dict(config)
        return dict(decision.refused)

    def run(self, items: Sequence[BatchItem]) -> list[NodeOutcome]:
        """Quarantine ``items``; every lock taken is released before returning."""
        outcomes = {i.node: NodeOutcome(i.node, i.incident) for i in items}
        if not items:
            return []
        workers = max(1, min(self.options.workers, len(items)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            try:
                ready = run_all(pool, lambda i: self._lock_and_read(i, outcomes[i.node]), items)
                candidates = [i for i, ok in zip(items, ready) if ok]
                try:
                    refused = self._ask_breaker(candidates)
                except K8sError as err:
                    for item in candidates:
                        outcomes[item.node].detail = f"circuit breaker unavailable, nothing quarantined: {err}"
                        outcomes[item.node].error = err.to_dict()
                    candidates, refused = [], {}
                run_all(pool, lambda i: self._hold_back(i, outcomes[i.node], refused[i.node]), [i for i in candidates if i.node in refused])
                admitted = [i for i in candidates if i.node not in refused]
                cordoned = run_all(pool, lambda i: self._cordon(i, outcomes[i.node]), admitted)
                run_all(pool, lambda i: self._open(i, outcomes[i.node]), [i for i, ok in zip(admitted, cordoned) if ok])
            finally:
                run_all(pool, lambda i: self._unlock(i, outcomes[i.node]), items)
        return [outcomes[i.node] for i in items]


def summarize(outcomes: Sequence[NodeOutcome], ignored: Sequence[Mapping[str, Any]], breaker: Optional[Mapping[str, Any]],
              check_mode: bool, elapsed_s: float, api_calls: Mapping[str, int]) -> dict[str, Any]:
    """The module result: per node, by status, the breaker's decision and one line."""
    def names(status: str) -> list[str]:
        return [o.node for o in outcomes if o.status == status]

    quarantined, held = names(QUARANTINED), names(HELD_BACK)
    deferred = [{"node": o.node, "incident": o.incident, "reason": o.detail} for o in outcomes if o.status == DEFERRED]
    verb = "would quarantine" if check_mode else "quarantined"
    text = f"batch: {verb} {len(quarantined)} of {len(outcomes)} node(s)"
    if held:
        text += f"; circuit breaker held back {len(held)}: {', '.join(held[:20])}{' ...' if len(held) > 20 else ''}"
    if names(ALREADY_OPEN):
        text += f"; {len(names(ALREADY_OPEN))} already open"
    if deferred:
        text += f"; {len(deferred)} left to the per-node steps: " + "; ".join(f"{d['node']} ({d['reason']})" for d in deferred[:5])
        text += " ..." if len(deferred) > 5 else ""
    return {"changed": any(o.changed for o in outcomes), "nodes": [o.to_dict() for o in outcomes], "quarantined": quarantined,
            "already_open": names(ALREADY_OPEN),
            "held_back": [{"node": o.node, "incident": o.incident, "reason": o.detail} for o in outcomes if o.status == HELD_BACK],
            "deferred": deferred, "ignored": list(ignored), "circuit_breaker": dict(breaker) if breaker else None,
            "elapsed_s": round(elapsed_s, 3), "api_calls": dict(api_calls), "msg": text}


def quarantine_batch(client: KubeApi, decisions: Sequence[Any], options: BatchOptions, check_mode: bool = False,
                     clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """Validate every decision, then quarantine the ``open`` ones concurrently (see the module docstring)."""
    started = time.monotonic()
    items, ignored = validate_batch(decisions, options)
    batch = BatchQuarantine(client, options, check_mode, clock)
    outcomes = batch.run(items)
    return summarize(outcomes, ignored, batch.breaker_result, check_mode, time.monotonic() - started, dict(getattr(client, "stats", {}) or {}))


__all__ = ["ALREADY_OPEN", "DEFERRED", "HELD_BACK", "IGNORED", "OPENING_KINDS", "QUARANTINED", "BatchItem", "BatchOptions", "BatchQuarantine",
           "BatchQuarantineError", "NodeOutcome", "checked_decisions", "quarantine_batch", "release_node_lock", "run_all", "summarize",
           "take_node_lock", "truncate_reason", "validate_batch"]
