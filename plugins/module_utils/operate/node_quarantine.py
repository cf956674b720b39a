# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Cordon / uncordon / taint / untaint / label / release many nodes at once, recording who, why and when.

Per node: GET, plan (:mod:`quarantine_state`), PATCH with the node's resourceVersion as a precondition; a 409 re-reads
and re-plans (bounded). Nodes are processed in parallel by a thread pool sized from the client's QPS. Capacity actions
(cordon, taint) of nodes not already quarantined consult the optional circuit breaker in ONE atomic batch; refused
nodes are reported and left alone. ``check_mode`` plans without writing; ``dry_run`` sends the patch with
``dryRun=All`` (server-side validation, nothing stored).

Every patch's history entry carries the task's operation id (``QuarantineRequest.operation_id``). When a PATCH was
applied but its response lost (the client's retry then meets 409, the node is re-read and the plan finds nothing to
do), the id on the node proves the change was ours: the node is reported ``changed`` with ``response_lost: true``.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig, CircuitBreaker, format_time
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sConflict, K8sError, K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_node_name
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (
    CAPACITY_ACTIONS, DEFAULT_HISTORY_LIMIT, Plan, QuarantineRequest, QuarantineStateError, Taint, applied_operation, check_request, default_actor,
    history_patch, plan_action,
)

DEFAULT_CONFLICT_RETRIES = 5
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MAX_WORKERS = 64

# per-node outcome
OK = "ok"
CHANGED = "changed"
MISSING = "missing"
REFUSED = "refused"
FAILED = "failed"


def now_rfc3339(clock: Callable[[], float] = time.time) -> str:
    """Current UTC time, RFC 3339 with milliseconds."""
    return format_time(clock())


def worker_count(client: KubeApi, items: int) -> int:
    """Threads for ``items`` parallel node operations: bounded by the client's QPS (2 requests per node)."""
    qps = float(getattr(getattr(client, "auth", None), "qps", 50.0) or 50.0)
    return max(1, min(items, MAX_WORKERS, int(qps) if qps > 0 else MAX_WORKERS))


@dataclass
class NodeActionResult:  # pylint: disable=too-many-instance-attributes
    """Outcome for one node."""

    node: str
    action: str
    status: str
    changed: bool = False
    message: str = ""
    unschedulable: Optional[bool] = None
    taints: Optional[list[dict[str, Any]]] = None
    state: Optional[str] = None
    reason: Optional[str] = None
    attempts: int = 0
    error: Optional[dict[str, Any]] = None
    history_entry: Optional[dict[str, Any]] = None
    elapsed_s: float = 0.0
    before: Optional[dict[str, Any]] = None
    #: a PATCH of this task was applied but its response lost; the change was found on the node by its operation id
    response_lost: bool = False
    #: time.monotonic() when the node's outcome was known (benchmarks measure latency from their own start)
    finished_at: float = field(default_factory=time.monotonic)

    def to_dict(self) -> dict[str, Any]:
        """Module return form."""
        return {"node": self.node, "action": self.action, "status": self.status, "changed": self.changed, "message": self.message,
                "unschedulable": self.unschedulable, "taints": self.taints, "state": self.state, "reason": self.reason,
                "attempts": self.attempts, "error": self.error, "history_entry": self.history_entry,
                "elapsed_s": round(self.elapsed_s, 4), "response_lost": self.response_lost}


@dataclass
class QuarantineOptions:  # pylint: disable=too-many-instance-attributes
    """Everything :func:`run_node_action` needs besides the client and node names."""

    action: str
    reason: Optional[str] = None
    actor: str = ""
    taints: Sequence[dict[str, Any]] = ()
    labels: Optional[dict[str, Optional[str]]] = None
    check_mode: bool = False
    dry_run: bool = False
    ignore_missing: bool = False
    fail_on_refused: bool = False
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES
    history_limit: int = DEFAULT_HISTORY_LIMIT
    circuit_breaker: Optional[BreakerConfig] = None
    keep_existing_reason: bool = False
    #: release: ``all`` or ``actor`` (only what this actor asked for and nobody else still asks for)
    release_scope: str = "all"


@dataclass
class QuarantineReport:
    """Outcome of one module call."""

    action: str
    results: list[NodeActionResult] = field(default_factory=list)
    breaker: Optional[dict[str, Any]] = None
    api_calls: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    failed: bool = False
    msg: str = ""

    @property
    def changed(self) -> bool:
        """Did any node change (or would it, in check mode)?"""
        return any(r.changed for r in self.results)

    def diff(self) -> dict[str, Any]:
        """Ansible diff: per node unschedulable/taints/state/reason before and after."""
        keys = ("unschedulable", "taints", "state", "reason")
        before = {r.node: r.before for r in self.results if r.changed and r.before is not None}
        after = {r.node: {k: getattr(r, k) for k in keys} for r in self.results if r.changed and r.before is not None}
        return {"before": before, "after": after}

    def names(self, status: str) -> list[str]:
        """Nodes with this status."""
        return [r.node for r in self.results if r.status == status]

    def to_dict(self) -> dict[str, Any]:
        """Module return values."""
        return {"changed": self.changed, "action": self.action, "nodes": [r.to_dict() for r in self.results],
                "changed_nodes": [r.node for r in self.results if r.changed], "missing_nodes": self.names(MISSING),
                "refused_nodes": self.names(REFUSED), "failed_nodes": self.names(FAILED), "circuit_breaker": self.breaker,
                "api_calls": self.api_calls, "elapsed_s": round(self.elapsed_s, 3), "failed": self.failed, "msg": self.msg}


def read_node(client: KubeApi, name: str) -> dict[str, Any]:
    """GET a node as a plain camelCase dict (no model deserialisation)."""
    resp = client.call("get", "nodes", client.core.read_node, name, _preload_content=False)
    return json.loads(resp.data)


def patch_node(client: KubeApi, name: str, patch: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    """Strategic-merge PATCH of a node (the patch carries metadata.resourceVersion: a stale one is a 409)."""
    kwargs: dict[str, Any] = {"_preload_content": False, "_content_type": STRATEGIC_MERGE_PATCH}
    if dry_run:
        kwargs["dry_run"] = "All"
    resp = client.call("patch", "nodes", client.core.patch_node, name, patch, **kwargs)
    return json.loads(resp.data)


def append_history(client: KubeApi, name: str, entry: dict[str, Any], history_limit: int = DEFAULT_HISTORY_LIMIT,
                   conflict_retries: int = DEFAULT_CONFLICT_RETRIES) -> None:
    """Append one entry to a node's quarantine history (re-read on 409); raises K8sError when it cannot."""
    attempts = 0
    while True:
        attempts += 1
        try:
            patch_node(client, name, history_patch(read_node(client, name), entry, history_limit), False)
            return
        except K8sConflict:
            if attempts > conflict_retries:
                raise


def _result_from_plan(plan: Plan, action: str, status: str, attempts: int) -> NodeActionResult:
    return NodeActionResult(node=plan.node, action=action, status=status, changed=plan.changed, message=plan.message,
                            unschedulable=plan.after["unschedulable"], taints=plan.after["taints"], state=plan.after["state"],
                            reason=plan.after["reason"], attempts=attempts, history_entry=plan.history_entry, before=plan.before)


def _error_result(node: str, action: str, err: K8sError, attempts: int) -> NodeActionResult:
    if isinstance(err, K8sNotFound) and err.resource == "nodes":
        return NodeActionResult(node, action, MISSING, message=f"node {node} not found", attempts=attempts, error=err.to_dict())
    return NodeActionResult(node, action, FAILED, message=f"node {node}: {err}", attempts=attempts, error=err.to_dict())


def apply_to_node(client: KubeApi, name: str, request: QuarantineRequest, check_mode: bool = False, dry_run: bool = False,
                  conflict_retries: int = DEFAULT_CONFLICT_RETRIES, node: Optional[dict[str, Any]] = None,
                  allow: Optional[Callable[[Plan], Optional[str]]] = None) -> NodeActionResult:
    """Apply one request to one node with conflict handling; never raises K8sError (it becomes the result).

    ``node`` is an already-read copy (saves the first GET). ``allow(plan)`` may veto a change (returns the refusal text).
    When a patch of ours was sent but its answer never came (a 409 on the client's retry, a connection error) and the
    node, read again, needs nothing more, the node's history is searched for this request's operation id: found, the
    node is reported changed by us (``response_lost``), with the plan that was sent.
    """
    started = time.monotonic()
    attempts = 0
    sent: Optional[Plan] = None
    while True:
        attempts += 1
        try:
            current = node if node is not None else read_node(client, name)
            node = None
            plan = plan_action(current, request)
            if not plan.changed:
                mine = applied_operation(current, request.operation_id) if sent is not None else None
                if sent is not None and mine is not None:
                    result = _result_from_plan(sent, request.action, CHANGED, attempts)
                    result.message = f"{sent.message} (the API server applied our first attempt; its response was lost)"
                    result.history_entry, result.response_lost = mine, True
                else:
                    result = _result_from_plan(plan, request.action, OK, attempts)
                break
            refusal = allow(plan) if allow is not None else None
            if refusal:
                result = NodeActionResult(name, request.action, REFUSED, message=f"node {name} not quarantined: {refusal}",
                                          attempts=attempts)
                break
            if not check_mode:
                sent = None if dry_run else plan
                patch_node(client, name, plan.patch or {}, dry_run)
            result = _result_from_plan(plan, request.action, CHANGED, attempts)
            break
        except K8sConflict as err:
            if attempts > conflict_retries:
                result = NodeActionResult(name, request.action, FAILED, attempts=attempts, error=err.to_dict(),
                                          message=f"node {name}: still conflicting after {attempts} attempts "
                                                  f"(another writer keeps changing it): {err}")
                break
        except QuarantineStateError as err:
            result = NodeActionResult(name, request.action, FAILED, message=str(err), attempts=attempts, error=err.to_dict())
            break
        except K8sError as err:
            result = _error_result(name, request.action, err, attempts)
            break
    result.finished_at = time.monotonic()
    result.elapsed_s = result.finished_at - started
    return result


def build_request(options: QuarantineOptions, now: str) -> QuarantineRequest:
    """Validate the options into a :class:`QuarantineRequest`."""
    reason, taints, labels = check_request(options.action, options.reason, options.taints, options.labels)
    if options.history_limit < 1:
        raise QuarantineStateError(f"history_limit must be >= 1, got {options.history_limit}")
    if options.conflict_retries < 0:
        raise QuarantineStateError(f"conflict_retries must be >= 0, got {options.conflict_retries}")
    return QuarantineRequest(action=options.action, reason=reason, actor=options.actor or default_actor(), taints=taints,
                             labels=tuple(sorted(labels.items())), now=now, keep_existing_reason=options.keep_existing_reason,
                             history_limit=options.history_limit, release_scope=options.release_scope)


def validate_nodes(nodes: Sequence[Any]) -> list[str]:
    """Every name valid (RFC 1123) and unique, in order; raises K8sInvalidName before any API call."""
    if not nodes:
        raise QuarantineStateError("nodes must name at least one node")
    out: list[str] = []
    for index, name in enumerate(nodes):
        valid = validate_node_name(name, f"nodes[{index}]")
        if valid not in out:
            out.append(valid)
    return out


def run_node_action(client: KubeApi, nodes: Sequence[str], options: QuarantineOptions,
                    clock: Callable[[], float] = time.time) -> QuarantineReport:
    """Quarantine actions on many nodes, called by ``operate.entry.NODE_QUARANTINE`` (raises K8sInvalidName/QuarantineStateError on bad input)."""
    started = time.monotonic()
    names = validate_nodes(nodes)
    request = build_request(options, now_rfc3339(clock))
    report = QuarantineReport(options.action)
    breaker_cfg = options.circuit_breaker if (options.circuit_breaker and options.circuit_breaker.enabled
                                              and options.action in CAPACITY_ACTIONS) else None
    with ThreadPoolExecutor(max_workers=worker_count(client, len(names))) as pool:
        if breaker_cfg is None:
            futures = [pool.submit(apply_to_node, client, n, request, options.check_mode, options.dry_run, options.conflict_retries)
                       for n in names]
            report.results = [f.result() for f in futures]
        else:
            report.results = _run_with_breaker(client, pool, names, request, options, breaker_cfg, report, clock)
    report.api_calls = dict(getattr(client, "stats", {}) or {})
    report.elapsed_s = time.monotonic() - started
    _summarise(report, options)
    return report


def _run_with_breaker(client: KubeApi, pool: ThreadPoolExecutor, names: list[str], request: QuarantineRequest,  # pylint: disable=too-many-arguments
                      options: QuarantineOptions, cfg: BreakerConfig, report: QuarantineReport,
                      clock: Callable[[], float]) -> list[NodeActionResult]:
    def first_read(name: str) -> tuple[Optional[dict[str, Any]], Optional[Plan], Optional[NodeActionResult]]:
        try:
            node = read_node(client, name)
            return node, plan_action(node, request), None
        except QuarantineStateError as err:
            return None, None, NodeActionResult(name, request.action, FAILED, message=str(err), attempts=1, error=err.to_dict())
        except K8sError as err:
            return None, None, _error_result(name, request.action, err, 1)

    reads = dict(zip(names, pool.map(first_read, names)))
    new_nodes = [n for n in names if reads[n][1] is not None and reads[n][1].changed and reads[n][1].new_quarantine]
    refused: dict[str, str] = {}
    breaker = CircuitBreaker(client, cfg, clock)
    if new_nodes:
        try:
            if options.check_mode or options.dry_run:
                decision = breaker.check(new_nodes)
            else:
                decision = breaker.record(new_nodes, request.reason or "", request.actor)
        except K8sError as err:
            failure = f"circuit breaker {cfg.namespace}/{cfg.name} unavailable, nothing quarantined: {err}"
            report.breaker = {"error": err.to_dict(), "message": failure}
            return [reads[n][2] or NodeActionResult(n, request.action, FAILED, message=failure, error=err.to_dict()) for n in names]
        refused = decision.refused
        report.breaker = decision.to_dict(cfg)

    def allow(plan: Plan) -> Optional[str]:
        return refused.get(plan.node) if plan.new_quarantine else None

    def finish(name: str) -> NodeActionResult:
        node, plan, error = reads[name]
        if error is not None:
            return error
        if plan is not None and plan.new_quarantine and name in refused:
            return NodeActionResult(name, request.action, REFUSED, message=f"node {name} not quarantined: {refused[name]}", attempts=1)
        return apply_to_node(client, name, request, options.check_mode, options.dry_run, options.conflict_retries, node=node,
                             allow=allow)

    return list(pool.map(finish, names))


def _summarise(report: QuarantineReport, options: QuarantineOptions) -> None:
    problems = []
    failed = report.names(FAILED)
    missing = report.names(MISSING)
    refused = report.names(REFUSED)
    if failed:
        problems.append(f"{len(failed)} node(s) failed: " + "; ".join(r.message for r in report.results if r.status == FAILED)[:2000])
    if missing and not options.ignore_missing:
        problems.append(f"node(s) not found: {', '.join(missing)} (set ignore_missing=true to skip unknown nodes)")
    if refused and options.fail_on_refused:
        problems.append(f"{len(refused)} node(s) refused by the circuit breaker: {', '.join(refused)}")
    report.failed = bool(problems)
    done = [r.node for r in report.results if r.changed]
    verb = "would change" if options.check_mode else "changed"
    summary = f"{options.action}: {verb} {len(done)} of {len(report.results)} node(s)"
    if refused:
        summary += f"; circuit breaker refused {len(refused)}: {', '.join(refused)}"
    if missing:
        summary += f"; missing: {', '.join(missing)}"
    report.msg = "; ".join(problems) if problems else summary


__all__ = ["NodeActionResult", "QuarantineOptions", "QuarantineReport", "Taint", "append_history", "apply_to_node", "build_request", "default_actor",
           "read_node", "run_node_action", "validate_nodes"]
