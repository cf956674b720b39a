# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Sending evictions and deletions: :class:`RetryScheduler` (a worker pool plus one timer thread, so a backoff never holds a
worker), :func:`evict_pod` (POST pods/eviction once; a refusal by a PodDisruptionBudget is returned as an
:class:`~.drain_policy.EvictionRefusal`, not raised) and :func:`delete_pod` (DELETE with a uid precondition).
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import ApiException, discard
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import EvictionRefusal, PodDecision, parse_eviction_refusal


class RetryScheduler:
    """Runs callables on a worker pool, now or after a delay (one timer thread, a heap), so backoff never holds a worker."""

    def __init__(self, workers: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="dsxos-evict")
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._timer = threading.Thread(target=self._loop, name="dsxos-evict-timer", daemon=True)
        self._timer.start()

    def submit(self, job: Callable[[], None], delay_s: float = 0.0) -> None:
        """Run ``job`` on the pool after ``delay_s`` seconds."""
        if delay_s <= 0:
            self.pool.submit(job)
            return
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._seq), job))
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._heap or self._heap[0][0] > time.monotonic()):
                    timeout = None if not self._heap else max(0.0, self._heap[0][0] - time.monotonic())
                    self._cond.wait(timeout)
                if self._closed:
                    return
                dummy_due, dummy_seq, job = heapq.heappop(self._heap)
            self.pool.submit(job)

    def close(self) -> None:
        """Stop the timer and wait for running jobs."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._timer.join(timeout=5)
        self.pool.shutdown(wait=True)


#: Eviction body versions, newest first. policy/v1 Eviction is served from Kubernetes 1.22; older API servers refuse
#: its body with 400 "no kind "Eviction" is registered for version "policy/v1"", and then policy/v1beta1 is sent (as
#: kubectl drain does after discovery). The first version a server accepts is remembered per API server.
EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
_EVICTION_VERSION_BY_SERVER: dict[str, str] = {}


def _version_refused(status: int, body: Any, version: str) -> bool:
    """True when the API server refused the Eviction body only because it does not know its apiVersion."""
    if status not in (400, 404, 415):
        return False
    text = (body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")).replace('\\"', '"')
    return 'no kind "Eviction" is registered for version "%s"' % version in text or \
        ("Eviction" in text and version in text and "not registered" in text)


#: answers after which the request may have been applied all the same (a gateway or server failure after the write)
_MAYBE_APPLIED_STATUS = (500, 502, 503, 504)


def _maybe_applied(exc: BaseException) -> bool:
    """Whether a failed request may have reached the server and been applied: a 5xx, or a connection lost after the
    request was sent (read timeout, reset, no answer). A refused connection, a 429 or a 4xx never applied anything."""
    status = getattr(exc, "status", None)
    if status is not None:
        try:
            return int(status) in _MAYBE_APPLIED_STATUS
        except (TypeError, ValueError):
            return False
    reason = getattr(exc, "reason", None)
    for err in (exc, reason):
        name = type(err).__name__
        if name in ("NewConnectionError", "ConnectTimeoutError", "ConnectionRefusedError", "NameResolutionError"):
            return False
    return True


def evict_pod(client: KubeApi, decision: PodDecision, grace_period_s: Optional[int], dry_run: bool) -> Optional[EvictionRefusal]:
    """POST pods/eviction once (through client.call: QPS limiter, retries of 5xx/throttling).

    Returns None when accepted, an :class:`EvictionRefusal` when a budget refuses (not retried here); raises K8sError.
    The body is policy/v1, or policy/v1beta1 on an API server older than 1.22 (see :data:`EVICTION_VERSIONS`).
    A 404 after an attempt that may have been applied unheard (a lost answer, a 5xx; :func:`_maybe_applied`) counts as
    accepted: that attempt evicted the pod. Any other 404 means the pod was already gone.
    """
    delete_options: dict[str, Any] = {"preconditions": {"uid": decision.uid}} if decision.uid else {}
    if grace_period_s is not None:
        delete_options["gracePeriodSeconds"] = grace_period_s
    if dry_run:
        delete_options["dryRun"] = ["All"]
    kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": client.auth.request_timeout_s}
    if dry_run:
        kwargs["dry_run"] = "All"
    server = str(getattr(client, "server", "") or "")
    maybe_applied = [False]

    def once() -> Optional[EvictionRefusal]:
        known = _EVICTION_VERSION_BY_SERVER.get(server)
        versions = (known,) if known else EVICTION_VERSIONS
        for version in versions:
            body: dict[str, Any] = {"apiVersion": version, "kind": "Eviction",
                                    "metadata": {"name": decision.name, "namespace": decision.namespace}}
            if delete_options:
                body["deleteOptions"] = delete_options
            try:
                discard(client.core.create_namespaced_pod_eviction(decision.name, decision.namespace, body, **kwargs))
                _EVICTION_VERSION_BY_SERVER[server] = version
                return None
            except Exception as exc:  # pylint: disable=broad-except  # noted, then handled below or re-raised
                maybe_applied[0] = maybe_applied[0] or _maybe_applied(exc)
                if not isinstance(exc, ApiException):
                    raise
                status = int(getattr(exc, "status", 0) or 0)
                if version != versions[-1] and _version_refused(status, getattr(exc, "body", None), version):
                    continue
                refusal = parse_eviction_refusal(status, getattr(exc, "body", None))
                if refusal is not None and refusal.kind != "throttled":
                    _EVICTION_VERSION_BY_SERVER[server] = version
                    return refusal
                raise
        return None  # not reached: the last version either returns or raises
    try:
        return client.call("create", "pods/eviction", once)
    except K8sNotFound:
        if maybe_applied[0] and not dry_run:
            # an earlier attempt may have been applied without our hearing it (its answer was lost, or a 5xx) and now
            # the pod is gone: that attempt evicted it
            return None
        raise


def delete_pod(client: KubeApi, decision: PodDecision, grace_period_s: Optional[int], dry_run: bool) -> None:
    """DELETE the pod (uid precondition); a 404 means it is already gone."""
    body: dict[str, Any] = {"preconditions": {"uid": decision.uid}} if decision.uid else {}
    kwargs: dict[str, Any] = {"_preload_content": False}
    if grace_period_s is not None:
        body["gracePeriodSeconds"] = grace_period_s
        kwargs["grace_period_seconds"] = grace_period_s
    if dry_run:
        body["dryRun"] = ["All"]
        kwargs["dry_run"] = "All"
    discard(client.call("delete", "pods", client.core.delete_namespaced_pod, decision.name, decision.namespace, body=body, **kwargs))


__all__ = ["RetryScheduler", "delete_pod", "evict_pod"]
