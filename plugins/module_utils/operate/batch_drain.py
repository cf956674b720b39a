# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Batch drain: every node of a sentinel run whose decision drains it, drained at once under its lock.

The per-node loop of a remediate run drains one node after another (lock, read, ``draining``, drain, ``drained``,
unlock: six module calls per node, a few seconds each even when the node has no pods), so after a 150-node storm the
last node is drained many minutes after the first, whatever the pods' grace periods. :func:`drain_batch` does the drain
step of every such node in one call:

1. per node, on a bounded thread pool: take the node's Lease lock (holder ``<actor>/<run>``, the per-node steps' own;
   unless ``take_locks`` is off) and read its incident record; only a node whose open incident is the decision's, in
   state ``quarantined`` or ``draining``, goes on - any other node is ``left`` to the per-node steps, which handle it
   from whatever is recorded, exactly as before;
2. advance each incident to ``draining`` with its Kubernetes Event (``<full|partial> drain``);
3. drain all of them with ONE :func:`~.node_drain.drain_nodes` call per kind of drain (``full``, and ``partial``: on each
   node only the pods its alerts map to the faulty GPU(s), or every pod that requests GPUs when they map none), run side
   by side: every node's pods are evicted concurrently through the shared eviction
   pool and the client's QPS limit, PodDisruptionBudgets respected;
4. advance each drained incident to ``drained``; a node that was not drained keeps its incident in ``draining`` with the
   drain's message recorded as the incident's error (``failed``: the next run resumes the drain);
5. release every lock it took (always, also after an error).

A node's step that fails with an API error fails that node only (``failed`` with the error; the incident records it
when it can be written). Nothing here is a second implementation: the lock, the incident record and the drain are the
modules' own code; after the batch the per-node loop continues each ``drained`` node from its recorded state
(remediation, recertification) and never drains it again.

Check mode takes no lock and writes nothing: the eligible nodes are reported ``would_drain``.
"""
from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_quarantine import (
    LOCK_PURPOSE, BatchOptions, BatchQuarantineError, checked_decisions, release_node_lock, run_all, take_node_lock,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import pod_refs
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import DRAINED, DRAINING, QUARANTINED
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import DRAINED as NODE_DRAINED
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import DrainOptions, NodeDrainResult, drain_nodes
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import LockRequest
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import validate_request as validate_lock_request
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import (
    IncidentOptions, apply_incident, get_states, validate_options as validate_incident_options,
)

#: node outcomes
BATCH_DRAINED = "drained"
WOULD_DRAIN = "would_drain"
FAILED = "failed"
LEFT = "left"

#: decisions whose drain the batch does (a ``resume`` continues an interrupted run's incident)
DRAINING_KINDS = ("open", "resume")
#: the incident states a drain starts from (``draining``: an interrupted drain is run again)
DRAINABLE_STATES = (QUARANTINED, DRAINING)
DRAIN_KINDS = ("full", "partial")
DETAIL_LIMIT = 900


@dataclass(frozen=True)
class DrainItem:
    """One decision whose drain the batch does, validated."""

    node: str
    incident: str
    kind: str
    lock: LockRequest
    #: the pods the alerts map to the faulty GPU(s) (``(namespace, name)``): a partial drain evicts only these when any
    pods: tuple[tuple[str, str], ...] = ()


@dataclass
class DrainOutcome:  # pylint: disable=too-many-instance-attributes
    """What the batch did for one node."""

    node: str
    incident: str
    kind: str
    status: str = LEFT
    detail: str = ""
    changed: bool = False
    lock: str = ""
    error: Optional[dict[str, Any]] = None
    current: Optional[dict[str, Any]] = None
    drain: Optional[dict[str, Any]] = None
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Module return value of one node."""
        return {"node": self.node, "incident": self.incident, "drain": self.kind, "status": self.status, "detail": self.detail,
                "changed": self.changed, "lock": self.lock, "error": self.error, "current": self.current, "result": self.drain,
                "state": (self.current or {}).get("state"), "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def validate_drain_batch(decisions: Sequence[Any], options: BatchOptions) -> tuple[list[DrainItem], list[dict[str, Any]]]:
    """The decisions whose drain the batch does (every field checked before any API call) and the others.

    A decision is the batch's when its kind is ``open`` or ``resume``, it is not a dry run and its ``steps.drain`` is
    ``full`` or ``partial``; any other decision is returned in the second list (``node``, ``kind``, ``drain``).
    """
    items: list[DrainItem] = []
    others: list[dict[str, Any]] = []
    seen: set[str] = set()
    for where, decision in checked_decisions(decisions, options):
        steps = decision.get("steps")
        drain = steps.get("drain") if isinstance(steps, Mapping) else None
        if drain not in DRAIN_KINDS + ("none",):
            raise BatchQuarantineError(f"{where}.steps.drain must be one of full, partial, none", field=f"{where}.steps.drain", value=drain)
        if decision.get("kind") not in DRAINING_KINDS or decision.get("dry_run") or drain == "none":
            others.append({"node": decision.get("node"), "kind": decision.get("kind"), "drain": drain, "dry_run": bool(decision.get("dry_run"))})
            continue
        node, incident = decision.get("node"), decision.get("incident")
        for name, value in (("node", node), ("incident", incident)):
            if not isinstance(value, str) or not value:
                raise BatchQuarantineError(f"{where}.{name} must be a non-empty string", field=f"{where}.{name}", value=value)
        # the incident options of the two advances validate the node name (RFC 1123) and the incident id
        validate_incident_options({"action": "advance", "node": node, "incident": incident, "state": DRAINING, "actor": options.actor,
                                   "event_namespace": options.event_namespace})
        if node in seen:
            raise BatchQuarantineError(f"{where}: node {node} has two decisions", field=f"{where}.node", value=node)
        seen.add(node)
        lock = validate_lock_request({"node": node, "holder": options.holder, "state": "acquire", "namespace": options.lock_namespace,
                                      "duration_s": options.lock_duration_s, "purpose": LOCK_PURPOSE, "reason": incident,
                                      "wait_timeout_s": options.lock_wait_s, "wait_for_purposes": dict(options.lock_wait_for_purposes)})
        items.append(DrainItem(node=node, incident=incident, kind=drain, lock=lock, pods=pod_refs(decision.get("drain_pods"), f"{where}.drain_pods")))
    return items, others


class BatchDrain:
    """One batch drain through one client (thread-safe: the client's rate limiter is shared by the pool)."""

    def __init__(self, client: KubeApi, options: BatchOptions, drains: Mapping[str, DrainOptions], check_mode: bool = False) -> None:
        self.client = client
        self.options = options
        self.drains = drains
        self.check_mode = check_mode

    def _advance(self, item: DrainItem, state: str, detail: str = "", error: str = "") -> dict[str, Any]:
        request: IncidentOptions = validate_incident_options({
            "action": "advance", "node": item.node, "incident": item.incident, "state": state, "detail": detail[:DETAIL_LIMIT],
            "error": error[:DETAIL_LIMIT], "actor": self.options.actor, "event_namespace": self.options.event_namespace})
        return apply_incident(self.client, request, check_mode=self.check_mode)

    def _lock_and_start(self, item: DrainItem, outcome: DrainOutcome) -> bool:
        """Lock, read, advance to ``draining``; True when the node is to be drained."""
        started = time.monotonic()
        if not take_node_lock(self.client, item.lock, outcome, not self.check_mode and self.options.take_locks):
            return False
        try:
            state = get_states(self.client, [item.node])[item.node]
            current = state.get("incident") if state.get("exists") and not state.get("unreadable") else None
            if current is None or current.get("id") != item.incident or current.get("state") not in DRAINABLE_STATES:
                outcome.current = dict(current) if current else None
                outcome.detail = (f"incident {item.incident} is not open in state quarantined or draining "
                                  f"(recorded: {(current or {}).get('id')} {(current or {}).get('state')})")
                return False
            if self.check_mode:
                outcome.status, outcome.current, outcome.detail = WOULD_DRAIN, dict(current), f"would {item.kind} drain"
                outcome.changed = True
                return False
            advanced = self._advance(item, DRAINING, f"{item.kind} drain")
        except (K8sError, IncidentError) as err:
            outcome.status, outcome.detail, outcome.error = FAILED, f"starting the drain failed: {err}", err.to_dict()
            return False
        finally:
            outcome.seconds["start"] = time.monotonic() - started
        if advanced.get("ended"):
            outcome.detail = str(advanced.get("msg") or f"incident {item.incident} has ended")
            return False
        outcome.current = advanced.get("incident")
        outcome.changed = bool(advanced.get("changed"))
        return True

    def _finish(self, item: DrainItem, outcome: DrainOutcome, result: NodeDrainResult) -> None:
        """Record the drain's result on the incident: ``drained``, or the error (the incident stays ``draining``)."""
        outcome.drain = {"status": result.status, "counts": result.counts(), "blocking_pdbs": result.blocking_pdbs(),
                         "duration_s": round(result.duration_s, 3), "message": result.message}
        outcome.seconds["drain"] = result.duration_s
        outcome.changed = outcome.changed or result.changed
        drained = result.status == NODE_DRAINED
        message = result.message or ("drained" if drained else f"drain {result.status}")
        try:
            if drained:
                advanced = self._advance(item, DRAINED, message)
            else:
                advanced = self._advance(item, DRAINING, error=f"drain {result.status}: {message}")
        except (K8sError, IncidentError) as err:
            outcome.status, outcome.error = FAILED, err.to_dict()
            outcome.detail = f"drain {result.status}; recording it on incident {item.incident} failed: {err}"
            return
        outcome.current = advanced.get("incident") or outcome.current
        outcome.changed = outcome.changed or bool(advanced.get("changed"))
        if advanced.get("ended"):
            outcome.status, outcome.detail = LEFT, str(advanced.get("msg") or f"incident {item.incident} has ended")
        elif drained:
            outcome.status, outcome.detail = BATCH_DRAINED, message
        else:
            outcome.status, outcome.detail = FAILED, f"drain {result.status}: {message}"
            outcome.error = {"error": "DrainFailed", "msg": outcome.detail, "node": item.node}

    def _unlock(self, item: DrainItem, outcome: DrainOutcome) -> None:
        release_node_lock(self.client, item.lock, outcome)

    def _drain(self, kind: str, items: Sequence[DrainItem]) -> dict[str, NodeDrainResult]:
        if not items:
            return {}
        try:
            report = drain_nodes(self.client, [i.node for i in items], self.drains[kind])
        except Exception as err:  # pylint: disable=broad-exception-caught  # the whole call failed (a bug included): each node records it
            return {i.node: NodeDrainResult(i.node, "failed", message=f"drain failed ({type(err).__name__}): {err}") for i in items}
        return {r.node: r for r in report.results}

    def run(self, items: Sequence[DrainItem]) -> list[DrainOutcome]:
        """Drain ``items``; every lock taken is released before returning."""
        outcomes = {i.node: DrainOutcome(i.node, i.incident, i.kind) for i in items}
        if not items:
            return []
        workers = max(1, min(self.options.workers, len(items)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            try:
                ready = run_all(pool, lambda i: self._lock_and_start(i, outcomes[i.node]), items)
                started = [i for i, ok in zip(items, ready) if ok]
                with ThreadPoolExecutor(max_workers=len(DRAIN_KINDS)) as kinds:
                    parts = run_all(kinds, lambda k: self._drain(k, [i for i in started if i.kind == k]), DRAIN_KINDS)
                results = {node: result for part in parts for node, result in part.items()}
                run_all(pool, lambda i: self._finish(i, outcomes[i.node], results[i.node]), started)
            finally:
                run_all(pool, lambda i: self._unlock(i, outcomes[i.node]), items)
        return [outcomes[i.node] for i in items]


def locked_by(outcome: DrainOutcome) -> Optional[dict[str, str]]:
    """The other holder of a node the batch could not lock (``holder``, lease ``purpose``); None for any other outcome."""
    error = outcome.error or {}
    if error.get("error") != "NodeLockHeld":
        return None
    return {"holder": str(error.get("holder") or ""), "purpose": str(error.get("purpose") or "")}


def summarize(outcomes: Sequence[DrainOutcome], others: Sequence[Mapping[str, Any]], check_mode: bool, elapsed_s: float,
              api_calls: Mapping[str, int]) -> dict[str, Any]:
    """The module result: per node, by status, and one line."""
    def names(status: str) -> list[str]:
        return [o.node for o in outcomes if o.status == status]

    def listed(status: str) -> list[dict[str, Any]]:
        return [{"node": o.node, "incident": o.incident, "reason": o.detail, "locked_by": locked_by(o)} for o in outcomes if o.status == status]

    drained = names(WOULD_DRAIN if check_mode else BATCH_DRAINED)
    failed, left = listed(FAILED), listed(LEFT)
    text = f"batch drain: {'would drain' if check_mode else 'drained'} {len(drained)} of {len(outcomes)} node(s)"
    if failed:
        text += f"; {len(failed)} not drained: " + "; ".join(f"{f['node']} ({f['reason']})" for f in failed[:5])
        text += " ..." if len(failed) > 5 else ""
    if left:
        text += f"; {len(left)} left to the per-node steps: " + "; ".join(f"{d['node']} ({d['reason']})" for d in left[:5])
        text += " ..." if len(left) > 5 else ""
    return {"changed": any(o.changed for o in outcomes), "nodes": [o.to_dict() for o in outcomes], "drained": drained, "failed_nodes": failed,
            "left": left, "ignored": list(others), "elapsed_s": round(elapsed_s, 3), "api_calls": dict(api_calls), "msg": text}


def drain_options_for(base: DrainOptions, kind: str, items: Sequence[DrainItem] = ()) -> DrainOptions:
    """``base`` for one kind of drain: ``partial`` evicts on each node only the pods its alerts map to the faulty GPU(s),
    or every pod that requests GPUs when they map none (``items``: the batch's decisions)."""
    policy = dataclasses.replace(base.policy, gpu_pods_only=kind == "partial")
    if kind == "partial":
        policy = policy.with_mapped_pods({i.node: i.pods for i in items if i.kind == "partial"})
    return dataclasses.replace(base, policy=policy)


def drain_batch(client: KubeApi, decisions: Sequence[Any], options: BatchOptions, drain: DrainOptions, check_mode: bool = False,
                clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    """Validate every decision and the drain options, then drain the batch's nodes concurrently (see the module docstring)."""
    started = clock()
    items, others = validate_drain_batch(decisions, options)
    drains = {kind: drain_options_for(dataclasses.replace(drain, check_mode=check_mode), kind, items) for kind in DRAIN_KINDS}
    for value in drains.values():
        value.validate()
    batch = BatchDrain(client, options, drains, check_mode)
    outcomes = batch.run(items)
    return summarize(outcomes, others, check_mode, clock() - started, dict(getattr(client, "stats", {}) or {}))


__all__ = ["BATCH_DRAINED", "DRAINABLE_STATES", "DRAINING_KINDS", "DRAIN_KINDS", "FAILED", "LEFT", "WOULD_DRAIN", "BatchDrain", "DrainItem",
           "DrainOutcome", "drain_batch", "drain_options_for", "summarize", "validate_drain_batch"]
