# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Drain many nodes at once without ever violating a PodDisruptionBudget.

Flow: cordon every node first (in parallel, reason recorded in the same patch, an existing quarantine reason kept),
then per node: list its pods (``fieldSelector spec.nodeName``), classify them (:mod:`drain_policy`), open ONE watch on
the node's pods from the list's resourceVersion, and - depending on ``mode`` -

* ``immediate``: evict every candidate through the Eviction API;
* ``allow_completion``: evict nothing, wait for the candidates to finish (Succeeded/Failed or gone);
* ``delete_after_timeout``: evict, and DELETE the pods still refused after ``eviction_timeout_s`` (explicit opt-in).

Evictions of all nodes share one worker pool and the client's QPS limiter. A 429 from a budget is not a failure: the
pod is retried with exponential backoff (``pdb_retry_s`` doubling up to ``pdb_retry_max_s``) until the deadline, and
the budget that blocks is named. Deletions are observed through the watch (no per-pod polling). Every pod gets an
outcome. A failed node stays cordoned with its reason recorded (plus a ``drain-failed`` history entry).
Rerunning after an interruption converges: the cordon is idempotent, gone pods are simply no longer listed and
terminating ones are only waited for.
"""
from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError, K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import (
    BLOCK, EVICT, SKIP, WAIT, DrainPolicy, EvictionRefusal, PodDecision, classify_pod,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.eviction_scheduler import RetryScheduler, delete_pod, evict_pod
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import (
    CHANGED, FAILED, MISSING, REFUSED, NodeActionResult, QuarantineOptions, append_history, default_actor, now_rfc3339,
    run_node_action, validate_nodes,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.pod_watch import PodWatch, list_node_pods
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import DEFAULT_HISTORY_LIMIT

MODES = ("immediate", "allow_completion", "delete_after_timeout")
MAX_WATCH_RESTARTS = 50

# pod outcomes
EVICTED = "evicted"
DELETED = "deleted"
COMPLETED = "completed"
GONE = "gone"
SKIPPED = "skipped"
BLOCKED = "blocked"
PDB_BLOCKED = "pdb_blocked"
TIMED_OUT = "timed_out"
POD_FAILED = "failed"
WOULD_EVICT = "would_evict"
WOULD_WAIT = "would_wait"
DRY_RUN_OK = "dry_run_ok"
#: the events that answer one eviction/deletion request (exactly one per request a job sent)
ANSWERS = ("accepted", "gone", "failed", "refused")
SUCCESS_OUTCOMES = (EVICTED, DELETED, COMPLETED, GONE, SKIPPED, WOULD_EVICT, WOULD_WAIT, DRY_RUN_OK)

# node statuses
DRAINED = "drained"
NODE_BLOCKED = "blocked"
NODE_TIMED_OUT = "timed_out"
NODE_FAILED = "failed"
NODE_MISSING = "missing"
NODE_REFUSED = "refused"


class DrainError(K8sError):
    """Bad drain options (names the option and value)."""


@dataclass
class DrainOptions:  # pylint: disable=too-many-instance-attributes
    """Options of :func:`drain_nodes`."""

    reason: str
    mode: str = "immediate"
    actor: str = ""
    timeout_s: float = 600.0
    eviction_timeout_s: Optional[float] = None
    grace_period_s: Optional[int] = None
    policy: DrainPolicy = field(default_factory=DrainPolicy)
    check_mode: bool = False
    dry_run: bool = False
    ignore_missing: bool = False
    pdb_retry_s: float = 1.0
    pdb_retry_max_s: float = 5.0
    eviction_workers: int = 0
    circuit_breaker: Optional[BreakerConfig] = None
    history_limit: int = DEFAULT_HISTORY_LIMIT

    def validate(self) -> None:
        """Raise :class:`DrainError` naming the bad option (``field``) and its ``value``."""
        if self.mode not in MODES:
            raise DrainError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}", field="mode", value=self.mode)
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise DrainError("reason is required: a drain cordons the node and records why", field="reason", value=self.reason)
        if self.timeout_s <= 0:
            raise DrainError(f"timeout_s must be > 0, got {self.timeout_s!r}", field="timeout_s", value=self.timeout_s)
        if self.eviction_timeout_s is not None and not 0 < self.eviction_timeout_s <= self.timeout_s:
            raise DrainError(f"eviction_timeout_s must be > 0 and <= timeout_s ({self.timeout_s:g}), got {self.eviction_timeout_s!r}",
                             field="eviction_timeout_s", value=self.eviction_timeout_s)
        if self.grace_period_s is not None and self.grace_period_s < 0:
            raise DrainError(f"grace_period_s must be >= 0, got {self.grace_period_s!r}", field="grace_period_s", value=self.grace_period_s)
        if self.pdb_retry_s <= 0 or self.pdb_retry_max_s < self.pdb_retry_s:
            raise DrainError(f"need 0 < pdb_retry_s <= pdb_retry_max_s, got {self.pdb_retry_s!r} and {self.pdb_retry_max_s!r}",
                             field="pdb_retry_s", value=self.pdb_retry_s)
        if self.eviction_workers < 0:
            raise DrainError(f"eviction_workers must be >= 0 (0 = from the QPS), got {self.eviction_workers!r}",
                             field="eviction_workers", value=self.eviction_workers)

    def eviction_budget_s(self) -> float:
        """Seconds to keep evicting (or waiting for completion) before giving up / deleting."""
        if self.eviction_timeout_s is not None:
            return self.eviction_timeout_s
        return self.timeout_s / 2.0 if self.mode == "delete_after_timeout" else self.timeout_s


@dataclass
class PodOutcome:
    """What happened to one pod."""

    namespace: str
    name: str
    outcome: str
    reason: str = ""
    pdb: Optional[str] = None
    attempts: int = 0
    gpu: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Module return form."""
        return {"namespace": self.namespace, "name": self.name, "outcome": self.outcome, "reason": self.reason, "pdb": self.pdb,
                "attempts": self.attempts, "gpu": self.gpu}


@dataclass
class NodeDrainResult:  # pylint: disable=too-many-instance-attributes
    """Outcome for one node."""

    node: str
    status: str
    message: str = ""
    cordon: Optional[dict[str, Any]] = None
    pods: list[PodOutcome] = field(default_factory=list)
    changed: bool = False
    duration_s: float = 0.0
    watch_restarts: int = 0
    finished_at: float = 0.0

    def counts(self) -> dict[str, int]:
        """Pods per outcome."""
        out: dict[str, int] = {}
        for pod in self.pods:
            out[pod.outcome] = out.get(pod.outcome, 0) + 1
        return out

    def blocking_pdbs(self) -> list[str]:
        """Budgets that blocked a pod until the end."""
        return sorted({p.pdb for p in self.pods if p.pdb and p.outcome in (PDB_BLOCKED, TIMED_OUT, DELETED)})

    def to_dict(self) -> dict[str, Any]:
        """Module return form."""
        return {"node": self.node, "status": self.status, "message": self.message, "changed": self.changed, "cordon": self.cordon,
                "counts": self.counts(), "blocking_pdbs": self.blocking_pdbs(), "pods": [p.to_dict() for p in self.pods],
                "duration_s": round(self.duration_s, 3), "watch_restarts": self.watch_restarts}


@dataclass
class DrainReport:
    """Outcome of one :func:`drain_nodes` call."""

    mode: str
    results: list[NodeDrainResult] = field(default_factory=list)
    api_calls: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    failed: bool = False
    msg: str = ""
    breaker: Optional[dict[str, Any]] = None

    @property
    def changed(self) -> bool:
        """Any cordon or pod removal (or would there be, in check mode)?"""
        return any(r.changed for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        """Module return values."""
        totals: dict[str, int] = {}
        for res in self.results:
            for key, value in res.counts().items():
                totals[key] = totals.get(key, 0) + value
        return {"changed": self.changed, "mode": self.mode, "nodes": [r.to_dict() for r in self.results],
                "drained_nodes": [r.node for r in self.results if r.status == DRAINED],
                "failed_nodes": [r.node for r in self.results if r.status not in (DRAINED, NODE_MISSING)],
                "missing_nodes": [r.node for r in self.results if r.status == NODE_MISSING],
                "totals": totals, "api_calls": self.api_calls, "elapsed_s": round(self.elapsed_s, 3), "circuit_breaker": self.breaker,
                "failed": self.failed, "msg": self.msg}


class _NodeDrain:  # pylint: disable=too-many-instance-attributes
    """Drain of one node (runs on its own thread; evictions go to the shared :class:`RetryScheduler`)."""

    def __init__(self, client: KubeApi, node: str, options: DrainOptions, scheduler: RetryScheduler) -> None:
        self.client = client
        self.node = node
        self.options = options
        self.scheduler = scheduler
        self.events: "queue.Queue[tuple[Any, ...]]" = queue.Queue()
        self.outcomes: dict[str, PodOutcome] = {}
        self.pending: dict[str, PodDecision] = {}  # candidates without a final outcome
        self.removal_requested: dict[str, str] = {}  # key -> EVICTED/DELETED once the API accepted it
        self.last_refusal: dict[str, EvictionRefusal] = {}
        self.attempts: dict[str, int] = {}
        #: key -> eviction/deletion requests a job is about to send or has sent (counted by the job, under the lock,
        #: BEFORE its request: so any watch event or list the request causes sees it) and answers this thread has handled
        self._sent_lock = threading.Lock()
        self.sent: dict[str, int] = {}
        self.answered: dict[str, int] = {}
        #: keys whose pod left while a request for it was in flight: the request's answer decides the outcome
        self.vanished: set[str] = set()
        self.started = time.monotonic()
        self.deadline = self.started + options.timeout_s
        self.eviction_deadline = self.started + options.eviction_budget_s()
        self.watch: Optional[PodWatch] = None
        self.watch_restarts = 0
        self.cancel = threading.Event()

    # -------------------------------------------------------------- entry

    def run(self, cordon: NodeActionResult) -> NodeDrainResult:
        """Drain after the cordon; never raises K8sError (it becomes the node's result)."""
        result = NodeDrainResult(self.node, DRAINED, cordon=cordon.to_dict(), changed=cordon.changed)
        try:
            self._drain(result)
        except K8sError as err:
            result.status, result.message = NODE_FAILED, f"node {self.node}: {err}"
        finally:
            self.cancel.set()
            if self.watch is not None:
                self.watch.stop()
        result.pods = sorted(self.outcomes.values(), key=lambda p: (p.namespace, p.name))
        result.changed = result.changed or any(p.outcome in (EVICTED, DELETED) for p in result.pods)
        result.watch_restarts = self.watch_restarts
        result.finished_at = time.monotonic()
        result.duration_s = result.finished_at - self.started
        if result.status not in (DRAINED,) and not (self.options.check_mode or self.options.dry_run):
            self._record_failure(result)
        return result

    def _record_failure(self, result: NodeDrainResult) -> None:
        entry = {"action": "drain-failed", "reason": result.message[:500], "actor": self.options.actor, "time": now_rfc3339()}
        try:
            append_history(self.client, self.node, entry, self.options.history_limit)
        except K8sError as err:
            result.message += f" (could not record the failure on the node: {err})"

    # -------------------------------------------------------------- phases

    def _drain(self, result: NodeDrainResult) -> None:
        pods, resource_version = list_node_pods(self.client, self.node)
        decisions = [classify_pod(p, self.options.policy) for p in pods]
        blockers = [d for d in decisions if d.action == BLOCK]
        for dec in decisions:
            if dec.action == SKIP:
                self._finish(dec, SKIPPED, dec.reason)
            elif dec.action == BLOCK:
                self._finish(dec, BLOCKED, dec.reason)
        if blockers:
            result.status = NODE_BLOCKED
            result.message = (f"node {self.node}: {len(blockers)} pod(s) prevent the drain (nothing was evicted): "
                              + "; ".join(d.reason for d in blockers[:10]))
            return
        candidates = [d for d in decisions if d.action in (EVICT, WAIT)]
        if self.options.check_mode:
            for dec in candidates:
                what = WOULD_WAIT if dec.action == WAIT or self.options.mode == "allow_completion" else WOULD_EVICT
                self._finish(dec, what, "check mode")
            result.changed = result.changed or any(d.action == EVICT for d in candidates) and self.options.mode != "allow_completion"
            return
        if self.options.dry_run:
            self._dry_run(candidates)
        else:
            self.pending = {d.key: d for d in candidates}
            if self.pending:
                self.watch = PodWatch(self.client, self.node, resource_version, self.events, self.deadline - time.monotonic())
                self.watch.start()
                if self.options.mode != "allow_completion":
                    for dec in candidates:
                        if dec.action == EVICT:
                            self.scheduler.submit(self._evict_job(dec))
                self._wait()
        self._verdict(result)

    def _dry_run(self, candidates: list[PodDecision]) -> None:
        for dec in candidates:
            if dec.action == WAIT or self.options.mode == "allow_completion":
                self._finish(dec, WOULD_WAIT, "dry run")
                continue
            try:
                refusal = evict_pod(self.client, dec, self.options.grace_period_s, True)
            except K8sNotFound:
                self._finish(dec, GONE, "pod already gone")
                continue
            except K8sError as err:
                self._finish(dec, POD_FAILED, str(err))
                continue
            if refusal is None:
                self._finish(dec, DRY_RUN_OK, "server accepted the eviction (dryRun=All)")
            else:
                self._finish(dec, PDB_BLOCKED, refusal.describe(), refusal.pdb)

    def _verdict(self, result: NodeDrainResult) -> None:
        bad = [p for p in self.outcomes.values() if p.outcome not in SUCCESS_OUTCOMES]
        if not bad:
            result.status = DRAINED
            result.message = f"node {self.node} drained" if not self.options.dry_run else f"node {self.node}: dry run passed"
            if self.options.dry_run:
                return
            return
        timed = [p for p in bad if p.outcome in (TIMED_OUT, PDB_BLOCKED)]
        result.status = NODE_TIMED_OUT if timed and len(timed) == len(bad) else NODE_FAILED
        pdbs = sorted({p.pdb for p in bad if p.pdb})
        detail = "; ".join(f"{p.namespace}/{p.name}: {p.outcome} ({p.reason})" for p in bad[:10])
        more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        blocking = f"; blocking PodDisruptionBudget(s): {', '.join(pdbs)}" if pdbs else ""
        result.message = f"node {self.node} not drained, {len(bad)} pod(s) left{blocking}: {detail}{more}; the node stays cordoned"

    # -------------------------------------------------------------- bookkeeping

    def _finish(self, dec: PodDecision, outcome: str, reason: str, pdb: Optional[str] = None) -> None:
        self.pending.pop(dec.key, None)
        if dec.key in self.outcomes and self.outcomes[dec.key].outcome not in (SKIPPED, BLOCKED):
            return
        self.outcomes[dec.key] = PodOutcome(dec.namespace, dec.name, outcome, reason, pdb, self.attempts.get(dec.key, 0), dec.gpu)

    # -------------------------------------------------------------- evictions

    def _evict_job(self, dec: PodDecision, delay_s: float = 0.0) -> Callable[[], None]:
        def job() -> None:
            if self.cancel.is_set():
                return
            self.attempts[dec.key] = self.attempts.get(dec.key, 0) + 1
            self._count_sent(dec.key)
            try:
                refusal = evict_pod(self.client, dec, self.options.grace_period_s, False)
            except K8sNotFound:
                self.events.put(("gone", dec.key, "pod already gone when evicted"))
                return
            except K8sError as err:
                self.events.put(("failed", dec.key, str(err)))
                return
            except Exception as exc:  # pylint: disable=broad-except  # every request gets its answer, or the pod waits for timeout_s
                self.events.put(("failed", dec.key, f"eviction failed: {type(exc).__name__}: {exc}"))
                return
            if refusal is None:
                self.events.put(("accepted", dec.key, EVICTED))
                return
            self.events.put(("refused", dec.key, refusal))
            if not refusal.retryable:
                return
            next_delay = min(self.options.pdb_retry_max_s, self.options.pdb_retry_s if delay_s <= 0 else delay_s * 2)
            if time.monotonic() + next_delay >= self.eviction_deadline:
                self.events.put(("eviction_deadline", dec.key, refusal))
                return
            self.scheduler.submit(self._evict_job(dec, next_delay), next_delay)
        return job

    def _delete_job(self, dec: PodDecision) -> Callable[[], None]:
        def job() -> None:
            if self.cancel.is_set():
                return
            self._count_sent(dec.key)
            try:
                delete_pod(self.client, dec, self.options.grace_period_s, False)
            except K8sNotFound:
                self.events.put(("gone", dec.key, "pod already gone when deleted"))
                return
            except K8sError as err:
                self.events.put(("failed", dec.key, str(err)))
                return
            except Exception as exc:  # pylint: disable=broad-except  # every request gets its answer, or the pod waits for timeout_s
                self.events.put(("failed", dec.key, f"deletion failed: {type(exc).__name__}: {exc}"))
                return
            self.events.put(("accepted", dec.key, DELETED))
        return job

    # -------------------------------------------------------------- waiting

    def _wait(self) -> None:  # pylint: disable=too-many-branches
        deleting_started = False
        while self.pending:
            now = time.monotonic()
            if (self.options.mode != "immediate" and not deleting_started and now >= self.eviction_deadline):
                deleting_started = True
                self._eviction_phase_over()
                continue
            if now >= self.deadline:
                break
            wake = self.deadline if deleting_started or self.options.mode == "immediate" else min(self.deadline, self.eviction_deadline)
            try:
                event = self.events.get(timeout=max(0.01, wake - now))
            except queue.Empty:
                continue
            self._handle(event)
        for key, dec in list(self.pending.items()):
            refusal = self.last_refusal.get(key)
            if key in self.vanished:
                self._finish(dec, GONE, "pod went away while a request for it was unanswered")
            elif key in self.removal_requested:
                self._finish(dec, TIMED_OUT, f"{self.removal_requested[key]} but still terminating after timeout_s {self.options.timeout_s:g} s")
            elif refusal is not None and refusal.kind == "pdb":
                self._finish(dec, PDB_BLOCKED, f"{refusal.describe()} until timeout_s {self.options.timeout_s:g} s", refusal.pdb)
            elif self.options.mode == "allow_completion":
                self._finish(dec, TIMED_OUT, f"still running after {self.options.eviction_budget_s():g} s (allow_completion)")
            else:
                self._finish(dec, TIMED_OUT, f"not removed within timeout_s {self.options.timeout_s:g} s")

    def _eviction_phase_over(self) -> None:
        """allow_completion: stop waiting; delete_after_timeout: delete every pod not yet accepted for removal."""
        if self.options.mode == "allow_completion":
            self.deadline = time.monotonic()
            return
        for key, dec in list(self.pending.items()):
            if key not in self.removal_requested and key not in self.vanished and dec.action == EVICT:
                self.scheduler.submit(self._delete_job(dec))

    def _handle(self, event: tuple[Any, ...]) -> None:  # pylint: disable=too-many-branches
        kind = event[0]
        if kind == "pod":
            self._on_pod(event[1], event[2])
        elif kind == "watch_end":
            self._restart_watch(event[1])
        else:
            key = event[1]
            dec = self.pending.get(key)
            if dec is None:
                return
            if kind in ANSWERS:
                self.answered[key] = self.answered.get(key, 0) + 1
            if key in self.vanished:
                self._answer_after_vanish(dec, kind, event)
                return
            if kind == "accepted":
                self.removal_requested[key] = event[2]
            elif kind == "gone":
                self._finish(dec, GONE, event[2])
            elif kind == "failed":
                self._finish(dec, POD_FAILED, event[2])
            elif kind == "refused":
                refusal: EvictionRefusal = event[2]
                self.last_refusal[key] = refusal
                if not refusal.retryable:
                    self._finish(dec, POD_FAILED, refusal.describe())
            elif kind == "eviction_deadline" and self.options.mode == "immediate":
                refusal = event[2]
                self._finish(dec, PDB_BLOCKED, f"{refusal.describe()}; gave up at the deadline", refusal.pdb)

    def _on_pod(self, etype: Any, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        dec = self.pending.get(key)
        if dec is None or (dec.uid and meta.get("uid") and meta.get("uid") != dec.uid):
            return
        if etype == "DELETED":
            how = self.removal_requested.get(key)
            if how == DELETED:
                self._finish(dec, DELETED, self._pdb_note(key, "deleted after the eviction timeout"), self._pdb_name(key))
            elif how == EVICTED:
                self._finish(dec, EVICTED, self._retry_note(key))
            elif self._in_flight(key):
                # our request is unanswered: its answer (handled later, in order) says whether we removed the pod
                self.vanished.add(key)
            else:
                self._finish(dec, COMPLETED if self.options.mode == "allow_completion" else GONE, "pod went away on its own")
        elif etype == "MODIFIED" and self.options.mode == "allow_completion":
            phase = (obj.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                self._finish(dec, COMPLETED, f"finished (phase {phase})")

    def _count_sent(self, key: str) -> None:
        """Called by a job right before its request: from now on the pod's disappearance waits for the answer."""
        with self._sent_lock:
            self.sent[key] = self.sent.get(key, 0) + 1

    def _in_flight(self, key: str) -> bool:
        """Whether a request for the pod was sent (or is about to be) and its answer is not handled yet."""
        with self._sent_lock:
            return self.sent.get(key, 0) > self.answered.get(key, 0)

    def _answer_after_vanish(self, dec: PodDecision, kind: str, event: tuple[Any, ...]) -> None:
        """The pod left while a request for it was unanswered; now an answer came: accepted means we removed it."""
        key = dec.key
        if kind == "accepted":
            self.removal_requested[key] = event[2]
            self._on_pod("DELETED", {"metadata": {"namespace": dec.namespace, "name": dec.name, "uid": dec.uid}})
        elif not self._in_flight(key):
            what = {"gone": "pod went away on its own (the server no longer knew it)", "failed": f"pod went away on its own ({event[2]})",
                    "refused": "pod went away on its own (its eviction was refused)"}.get(kind, "pod went away on its own")
            self._finish(dec, GONE, what)

    def _pdb_name(self, key: str) -> Optional[str]:
        refusal = self.last_refusal.get(key)
        return refusal.pdb if refusal is not None else None

    def _pdb_note(self, key: str, text: str) -> str:
        refusal = self.last_refusal.get(key)
        return f"{text} ({refusal.describe()})" if refusal is not None else text

    def _retry_note(self, key: str) -> str:
        refusal = self.last_refusal.get(key)
        if refusal is None:
            return "evicted"
        return f"evicted after {self.attempts.get(key, 1)} attempts ({refusal.describe()} meanwhile)"

    def _restart_watch(self, err: Optional[K8sError]) -> None:
        """The watch ended (server timeout, 410 Gone, lost connection): re-list to settle what we missed, watch again."""
        if not self.pending or time.monotonic() >= self.deadline:
            return
        self.watch_restarts += 1
        if self.watch_restarts > MAX_WATCH_RESTARTS:
            raise K8sError(f"watch of pods on node {self.node} keeps failing ({self.watch_restarts} restarts): {err}",
                           verb="watch", resource="pods", node=self.node)
        if err is not None:
            time.sleep(min(1.0, 0.05 * self.watch_restarts))
        pods, resource_version = list_node_pods(self.client, self.node)
        present = {f"{p['metadata'].get('namespace')}/{p['metadata'].get('name')}": p for p in pods}
        for key, dec in list(self.pending.items()):
            pod = present.get(key)
            if pod is None or (dec.uid and pod["metadata"].get("uid") != dec.uid):
                self._on_pod("DELETED", {"metadata": {"namespace": dec.namespace, "name": dec.name, "uid": dec.uid}})
            else:
                self._on_pod("MODIFIED", pod)
        if self.pending:
            self.watch = PodWatch(self.client, self.node, resource_version, self.events, self.deadline - time.monotonic())
            self.watch.start()


def eviction_workers(client: KubeApi, options: DrainOptions) -> int:
    """Worker threads for evictions: the option, else from the QPS (evictions are I/O bound and rate limited)."""
    if options.eviction_workers:
        return options.eviction_workers
    qps = float(getattr(getattr(client, "auth", None), "qps", 50.0) or 50.0)
    return max(4, min(64, int(qps) if qps > 0 else 64))


def drain_nodes(client: KubeApi, nodes: Sequence[str], options: DrainOptions) -> DrainReport:
    """Drain many nodes, called by ``operate.entry.NODE_DRAIN`` (raises K8sInvalidName/DrainError on bad input before any call)."""
    started = time.monotonic()
    names = validate_nodes(nodes)
    options.validate()
    options.actor = options.actor or default_actor()
    report = DrainReport(options.mode)
    cordons = run_node_action(client, names, QuarantineOptions(
        action="cordon", reason=f"drain: {options.reason.strip()}", actor=options.actor, check_mode=options.check_mode,
        dry_run=options.dry_run, ignore_missing=options.ignore_missing, circuit_breaker=options.circuit_breaker,
        keep_existing_reason=True, history_limit=options.history_limit))
    report.breaker = cordons.breaker
    by_node = {r.node: r for r in cordons.results}
    scheduler = RetryScheduler(eviction_workers(client, options))
    results: dict[str, NodeDrainResult] = {}
    try:
        runnable = []
        for name in names:
            cordon = by_node[name]
            if cordon.status == MISSING:
                results[name] = NodeDrainResult(name, NODE_MISSING, message=f"node {name} not found", cordon=cordon.to_dict())
            elif cordon.status == REFUSED:
                results[name] = NodeDrainResult(name, NODE_REFUSED, message=cordon.message, cordon=cordon.to_dict())
            elif cordon.status == FAILED:
                results[name] = NodeDrainResult(name, NODE_FAILED, message=f"cordon failed: {cordon.message}", cordon=cordon.to_dict())
            elif options.dry_run and cordon.status == CHANGED:
                # the cordon was only simulated: the pods would still be drained from a schedulable node - go on
                runnable.append(name)
            else:
                runnable.append(name)
        if runnable:
            with ThreadPoolExecutor(max_workers=min(len(runnable), 512), thread_name_prefix="dsxos-drain") as pool:
                futures = {n: pool.submit(_NodeDrain(client, n, options, scheduler).run, by_node[n]) for n in runnable}
                for name, future in futures.items():
                    results[name] = future.result()
    finally:
        scheduler.close()
    report.results = [results[n] for n in names]
    report.api_calls = dict(getattr(client, "stats", {}) or {})
    report.elapsed_s = time.monotonic() - started
    _summarise(report, options)
    return report


def _summarise(report: DrainReport, options: DrainOptions) -> None:
    bad = [r for r in report.results if r.status != DRAINED and not (r.status == NODE_MISSING and options.ignore_missing)]
    if bad:
        report.failed = True
        hint = " (set ignore_missing=true to skip unknown nodes)" if any(r.status == NODE_MISSING for r in bad) else ""
        report.msg = f"{len(bad)} of {len(report.results)} node(s) not drained{hint}: " + " | ".join(r.message for r in bad[:5])
    else:
        done = sum(1 for r in report.results if r.status == DRAINED)
        verb = "would drain" if options.check_mode else ("dry-run drained" if options.dry_run else "drained")
        report.msg = f"{verb} {done} node(s) ({options.mode})"


__all__ = ["DrainError", "DrainOptions", "DrainReport", "MODES", "NodeDrainResult", "PodOutcome", "drain_nodes", "eviction_workers"]
