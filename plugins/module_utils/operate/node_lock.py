# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A per-node lock held as a ``coordination.k8s.io/v1`` Lease, so only one automation acts on a node at a time.

The Lease ``dsxos-node-lock-<node>`` (:func:`lease_name_for`: a node name too long for that - over 236 characters -
gets ``dsxos-node-lock-<first 219/220 characters>-<sha256 hex>``, exactly 253 characters, so distinct nodes never share a
Lease) lives in a dedicated namespace (default ``dsxos-system``, created when missing) and carries ``holderIdentity``,
``leaseDurationSeconds``, ``acquireTime``, ``renewTime``, ``leaseTransitions``, the annotations ``dsxos.io/node`` (the
full node name, always), ``dsxos.io/lock-purpose``, ``dsxos.io/lock-reason``, ``dsxos.io/previous-holder``,
``dsxos.io/released-by``/``released-at``, and the label ``dsxos.io/node`` when the node name fits a label value
(<= 63 characters). Every write is a PUT with the read ``resourceVersion`` (optimistic concurrency):
on 409 the Lease is read again and the decision re-made.

* ``acquire``: free (absent, released or expired) -> take it (``created``/``acquired``/``taken_over``, the previous
  holder recorded); held by us -> renew (a write: ``changed`` is true and ``renewTime`` moves); held by someone else and
  not expired -> wait up to ``wait_timeout_s``, then fail naming the holder and the expiry.
* ``renew``: only by the holder (fails otherwise, naming the current holder).
* ``release``: by the holder clears ``holderIdentity``; not held / held by someone else -> no-op with a message, unless
  ``force`` (which records who broke whose lock).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import (
    K8sConflict, K8sError, K8sNotFound, discard, ensure_namespace,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import (
    MAX_LABEL, MAX_SUBDOMAIN, K8sInvalidName, require_printable, validate_namespace, validate_node_name, validate_subdomain,
)

LEASE_PREFIX = "dsxos-node-lock-"
DEFAULT_NAMESPACE = "dsxos-system"
ANN_PURPOSE = "dsxos.io/lock-purpose"
ANN_REASON = "dsxos.io/lock-reason"
ANN_PREVIOUS = "dsxos.io/previous-holder"
ANN_RELEASED_BY = "dsxos.io/released-by"
ANN_RELEASED_AT = "dsxos.io/released-at"
LABEL_NODE = "dsxos.io/node"
#: the full node name of the Lease (the label holds it only when it fits a label value)
ANN_NODE = "dsxos.io/node"
LABEL_MANAGED = "app.kubernetes.io/managed-by"
MAX_CONFLICT_RETRIES = 10
#: seconds between two tries while the holder's purpose is one of ``wait_for_purposes`` (a short operation)
SHORT_POLL_S = 0.5
STATES = ("acquire", "release", "renew")


class NodeLockHeld(K8sError):
    """The lock is held by someone else and has not expired (names holder and expiry)."""

    def __init__(self, message: str, holder: str, expires_at: Optional[str], purpose: str = "", **kwargs: Any) -> None:
        self.holder = holder
        self.expires_at = expires_at
        self.purpose = purpose
        super().__init__(message, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"holder": self.holder, "expires_at": self.expires_at, "purpose": self.purpose})
        return out


class NodeLockNotHeld(K8sError):
    """``renew`` by someone who does not hold the lock."""


class NodeLockCollision(K8sConflict):
    """The Lease of this lock name records another node (two long node names sharing a hashed lock name)."""


@dataclass(frozen=True)
class LockRequest:
    """What the caller wants."""

    node: str
    holder: str
    state: str = "acquire"
    namespace: str = DEFAULT_NAMESPACE
    duration_s: int = 900
    purpose: str = ""
    reason: str = ""
    wait_timeout_s: float = 0.0
    poll_interval_s: float = 2.0
    force: bool = False
    #: (purpose, seconds): wait that long (instead of ``wait_timeout_s``, when longer) for a holder whose lease names
    #: that purpose - a short operation worth waiting for (the sentinel's releases)
    wait_for_purposes: tuple[tuple[str, float], ...] = ()

    def wait_for(self, purpose: str) -> float:
        """Seconds to wait for a holder whose lease names ``purpose``."""
        return max([self.wait_timeout_s] + [seconds for name, seconds in self.wait_for_purposes if name == purpose])

    @property
    def lease_name(self) -> str:
        """``dsxos-node-lock-<node>``, or its hashed form for a very long node name (:func:`lease_name_for`)."""
        return lease_name_for(self.node)


def lease_name_for(node: str) -> str:
    """The Lease name of ``node``'s lock: always a valid RFC 1123 subdomain of at most 253 characters.

    ``dsxos-node-lock-<node>`` while that is at most 252 characters (nodes up to 236 characters: readable, and the
    name of every lock taken so far). A longer node name is truncated to 220 characters (219 when the cut ends at a
    '.', which may not precede '-') and gets ``-<sha256 of the whole node name, hex>`` so the result is exactly 253
    characters: it can never equal a short form (those are shorter), and two long names share it only if their first
    characters AND 64+ bits of their SHA-256 agree. The Lease also records the full node name (annotation
    ``dsxos.io/node``), and :class:`NodeLock` refuses a Lease that records another node.
    """
    name = LEASE_PREFIX + node
    if len(name) < MAX_SUBDOMAIN:
        return name
    keep = MAX_SUBDOMAIN - len(LEASE_PREFIX) - 1 - 16
    head = node[:keep]
    if head.endswith("."):
        head = head[:-1]
    digest = hashlib.sha256(node.encode("utf-8")).hexdigest()
    return f"{LEASE_PREFIX}{head}-{digest[:MAX_SUBDOMAIN - len(LEASE_PREFIX) - len(head) - 1]}"


def node_labels(node: str) -> dict[str, str]:
    """The Lease's labels: ``dsxos.io/node`` only when the node name is a valid label value (<= 63 characters)."""
    labels = {LABEL_MANAGED: "dsxos.cluster"}
    if len(node) <= MAX_LABEL:
        labels[LABEL_NODE] = node
    return labels


def validate_request(params: Mapping[str, Any]) -> LockRequest:
    """Check node (RFC 1123), namespace, holder, state and numbers; raise :class:`K8sInvalidName` naming the field."""
    node = validate_node_name(params.get("node"))
    namespace = validate_namespace(params.get("namespace") or DEFAULT_NAMESPACE)
    holder = params.get("holder")
    if not isinstance(holder, str) or not holder.strip():
        raise K8sInvalidName("holder must be a non-empty string identifying who takes the lock", "holder", holder)
    if len(holder) > 253:
        raise K8sInvalidName("holder must be at most 253 printable characters", "holder", holder)
    require_printable(holder, "holder")
    state = params.get("state") or "acquire"
    if state not in STATES:
        raise K8sInvalidName(f"state must be one of {', '.join(STATES)}", "state", state)
    duration = params.get("duration_s") if params.get("duration_s") is not None else 900
    if isinstance(duration, bool) or not isinstance(duration, int) or duration < 1:
        raise K8sInvalidName("duration_s must be a whole number of seconds >= 1", "duration_s", duration)
    wait = float(params.get("wait_timeout_s") or 0.0)
    poll = float(params.get("poll_interval_s") or 2.0)
    if wait < 0 or poll <= 0:
        raise K8sInvalidName("wait_timeout_s must be >= 0 and poll_interval_s > 0", "wait_timeout_s", wait)
    for key in ("purpose", "reason"):
        value = params.get(key) or ""
        if not isinstance(value, str) or len(value) > 1024:
            raise K8sInvalidName(f"{key} must be a string of at most 1024 characters", key, value)
    validate_subdomain(lease_name_for(node), "lease name (dsxos-node-lock-<node>)")
    return LockRequest(node=node, holder=holder, state=state, namespace=namespace, duration_s=duration,
                       purpose=params.get("purpose") or "", reason=params.get("reason") or "", wait_timeout_s=wait,
                       poll_interval_s=poll, force=bool(params.get("force")),
                       wait_for_purposes=validate_wait_for_purposes(params.get("wait_for_purposes")))


def validate_wait_for_purposes(value: Any, field: str = "wait_for_purposes") -> tuple[tuple[str, float], ...]:
    """``{purpose: seconds}`` (seconds >= 0) as sorted pairs; raise :class:`K8sInvalidName` naming the bad entry."""
    if value in (None, ""):
        return ()
    if not isinstance(value, Mapping):
        raise K8sInvalidName(f"{field} must be a mapping of lock purpose to seconds", field, value)
    pairs = []
    for purpose, seconds in value.items():
        if not isinstance(purpose, str) or not purpose or len(purpose) > 1024:
            raise K8sInvalidName(f"{field}: a purpose must be a non-empty string of at most 1024 characters", field, purpose)
        try:
            number = float(seconds)
        except (TypeError, ValueError):
            number = -1.0
        if isinstance(seconds, bool) or not number >= 0 or number == float("inf"):
            raise K8sInvalidName(f"{field}[{purpose}] must be a number of seconds >= 0", f"{field}.{purpose}", seconds)
        pairs.append((purpose, number))
    return tuple(sorted(pairs))


def format_micro_time(moment: datetime.datetime) -> str:
    """RFC 3339 with microseconds in UTC (a Kubernetes ``MicroTime``)."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any) -> Optional[datetime.datetime]:
    """A ``MicroTime``/``Time`` string or datetime -> aware UTC datetime; None when empty/unparseable."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    text = str(value).strip().replace("Z", "+00:00")
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def lease_view(lease: Optional[Mapping[str, Any]], now: datetime.datetime) -> dict[str, Any]:
    """Holder, times, expiry and annotations of a Lease (API JSON form), as returned to the user."""
    if not lease:
        return {"exists": False, "holder": None, "expired": True, "expires_at": None}
    spec = lease.get("spec") or {}
    meta = lease.get("metadata") or {}
    renew = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    expires = renew + datetime.timedelta(seconds=int(duration)) if renew is not None and duration else None
    holder = spec.get("holderIdentity") or None
    return {
        "exists": True, "name": meta.get("name"), "namespace": meta.get("namespace"), "holder": holder,
        "acquire_time": spec.get("acquireTime"), "renew_time": spec.get("renewTime"), "lease_duration_s": duration,
        "lease_transitions": spec.get("leaseTransitions") or 0,
        "expires_at": format_micro_time(expires) if expires and holder else None,
        "expired": holder is None or expires is None or expires <= now,
        "annotations": dict(meta.get("annotations") or {}), "resource_version": meta.get("resourceVersion"),
    }


class NodeLock:
    """Acquire/renew/release one node's Lease through a Kubernetes client (:class:`KubeApi`)."""

    def __init__(self, client: KubeApi, request: LockRequest, check_mode: bool = False,
                 clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.timezone.utc),
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.req = request
        self.check_mode = check_mode
        self.clock = clock
        self.sleep = sleep

    # ------------------------------------------------------------------ API

    def _read(self) -> Optional[dict[str, Any]]:
        try:
            lease = self.client.call("get", "leases", self.client.coordination.read_namespaced_lease, self.req.lease_name, self.req.namespace)
        except K8sNotFound:
            return None
        plain = self.client.to_plain(lease)
        recorded = ((plain.get("metadata") or {}).get("annotations") or {}).get(ANN_NODE)
        if recorded and recorded != self.req.node:
            raise NodeLockCollision(f"lease {self.req.namespace}/{self.req.lease_name} records node {recorded!r}, not "
                                    f"{self.req.node!r}: two node names share one lock name; refusing to touch it", verb="get",
                                    resource="leases", name=self.req.lease_name, namespace=self.req.namespace, status=409,
                                    reason="LockNameCollision", node=self.req.node)
        return plain

    def _ensure_namespace(self) -> None:
        ensure_namespace(self.client, self.req.namespace, {LABEL_MANAGED: "dsxos.cluster"})

    def _body(self, current: Optional[Mapping[str, Any]], spec: dict[str, Any], annotations: dict[str, Optional[str]]) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.req.lease_name, "namespace": self.req.namespace, "labels": node_labels(self.req.node)}
        merged = dict(((current or {}).get("metadata") or {}).get("annotations") or {})
        merged[ANN_NODE] = self.req.node
        for key, value in annotations.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        meta["annotations"] = merged
        if current is not None:
            meta["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
            labels = dict((current.get("metadata") or {}).get("labels") or {})
            labels.update(meta["labels"])
            meta["labels"] = labels
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}

    def _write(self, current: Optional[Mapping[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        if current is None:
            created = self.client.call("create", "leases", self.client.coordination.create_namespaced_lease, self.req.namespace, body)
            return self.client.to_plain(created)
        replaced = self.client.call("update", "leases", self.client.coordination.replace_namespaced_lease,
                                    self.req.lease_name, self.req.namespace, body)
        return self.client.to_plain(replaced)

    # ------------------------------------------------------------------ decisions

    def _result(self, changed: bool, action: str, lease: Optional[Mapping[str, Any]], message: str, **extra: Any) -> dict[str, Any]:
        now = self.clock()
        view = lease_view(lease, now)
        out = {"changed": changed, "action": action, "node": self.req.node, "lease_name": self.req.lease_name,
               "namespace": self.req.namespace, "holder": view.get("holder"), "held": view.get("holder") == self.req.holder and not view["expired"],
               "expires_at": view.get("expires_at"), "lease": view, "message": message}
        out.update(extra)
        return out

    def _with_conflicts(self, step: Callable[[Optional[dict[str, Any]]], Optional[dict[str, Any]]]) -> dict[str, Any]:
        """Run ``step(current_lease)`` until it returns a result without meeting a 409 (re-reading each time)."""
        for dummy in range(MAX_CONFLICT_RETRIES):
            current = self._read()
            try:
                result = step(current)
            except K8sConflict:
                continue
            if result is not None:
                return result
        raise K8sConflict(f"lease {self.req.namespace}/{self.req.lease_name}: still conflicting after {MAX_CONFLICT_RETRIES} "
                          "re-reads (another writer keeps changing it)", verb="update", resource="leases", name=self.req.lease_name,
                          namespace=self.req.namespace, status=409, node=self.req.node)

    def acquire(self) -> dict[str, Any]:
        """Take (or renew) the lock, waiting up to ``wait_timeout_s`` for another holder's lease to end."""
        if not self.check_mode:
            self._ensure_namespace()
        started = time.monotonic()
        waited = 0.0
        while True:
            outcome = self._with_conflicts(self._acquire_step)
            if outcome.get("action") != "held_by_other":
                outcome["waited_s"] = round(waited, 3)
                return outcome
            purpose = str(outcome["lease"]["annotations"].get(ANN_PURPOSE, ""))
            # the wait depends on the CURRENT holder's purpose (a short release is waited for, a long run is not)
            remaining = started + self.req.wait_for(purpose) - time.monotonic()
            if self.check_mode or remaining <= 0:
                holder, expires = outcome["holder"], outcome["expires_at"]
                suffix = f" (waited {waited:.1f} s)" if waited else ""
                raise NodeLockHeld(f"node {self.req.node} is locked by {holder!r} until {expires} (lease {self.req.namespace}/"
                                   f"{self.req.lease_name}, purpose {purpose!r}, reason "
                                   f"{outcome['lease']['annotations'].get(ANN_REASON, '')!r}){suffix}", holder=holder, expires_at=expires,
                                   purpose=purpose, verb="acquire", resource="leases", name=self.req.lease_name,
                                   namespace=self.req.namespace, node=self.req.node)
            # a holder of a wait_for_purposes purpose ends within seconds: poll it more often
            short = any(name == purpose for name, _seconds in self.req.wait_for_purposes)
            pause = min(self.req.poll_interval_s, SHORT_POLL_S if short else self.req.poll_interval_s, max(remaining, 0.0))
            self.sleep(pause)
            waited += pause

    def _acquire_step(self, current: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
        now = self.clock()
        view = lease_view(current, now)
        stamp = format_micro_time(now)
        annotations: dict[str, Optional[str]] = {ANN_PURPOSE: self.req.purpose, ANN_REASON: self.req.reason,
                                                 ANN_RELEASED_BY: None, ANN_RELEASED_AT: None}
        spec_old = (current or {}).get("spec") or {}
        if view["holder"] == self.req.holder:
            action, message = "renewed", f"lock on {self.req.node} renewed by {self.req.holder!r}"
            spec = dict(spec_old, holderIdentity=self.req.holder, leaseDurationSeconds=self.req.duration_s, renewTime=stamp)
            spec.setdefault("acquireTime", stamp)
        elif view["holder"] and not view["expired"]:
            return self._result(False, "held_by_other", current, f"node {self.req.node} is locked by {view['holder']!r} until {view['expires_at']}")
        else:
            previous = view["holder"]
            if current is None:
                action, message = "created", f"lock on {self.req.node} created and taken by {self.req.holder!r}"
            elif previous:
                action, message = "taken_over", f"lock on {self.req.node} taken over from {previous!r} (expired at {view['expires_at']})"
                annotations[ANN_PREVIOUS] = previous
            else:
                action, message = "acquired", f"lock on {self.req.node} acquired by {self.req.holder!r}"
            transitions = int(spec_old.get("leaseTransitions") or 0) + (1 if current is not None else 0)
            spec = {"holderIdentity": self.req.holder, "leaseDurationSeconds": self.req.duration_s, "acquireTime": stamp,
                    "renewTime": stamp, "leaseTransitions": transitions}
        body = self._body(current, spec, annotations)
        if self.check_mode:
            return self._result(True, action, body, message + " (check mode: nothing written)", previous_holder=view["holder"])
        written = self._write(current, body)
        return self._result(True, action, written, message, previous_holder=view["holder"])

    def renew(self) -> dict[str, Any]:
        """Move ``renewTime`` forward; only the holder may."""
        def step(current: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
            now = self.clock()
            view = lease_view(current, now)
            if view["holder"] != self.req.holder:
                who = f"held by {view['holder']!r}" if view["holder"] else ("does not exist" if current is None else "is not held")
                raise NodeLockNotHeld(f"cannot renew the lock on {self.req.node}: lease {self.req.namespace}/{self.req.lease_name} "
                                      f"{who}, not by {self.req.holder!r}", verb="renew", resource="leases", name=self.req.lease_name,
                                      namespace=self.req.namespace, node=self.req.node)
            spec = dict((current or {}).get("spec") or {}, leaseDurationSeconds=self.req.duration_s, renewTime=format_micro_time(now))
            annotations: dict[str, Optional[str]] = {}
            if self.req.reason:
                annotations[ANN_REASON] = self.req.reason
            if self.req.purpose:
                annotations[ANN_PURPOSE] = self.req.purpose
            body = self._body(current, spec, annotations)
            message = f"lock on {self.req.node} renewed by {self.req.holder!r}"
            if self.check_mode:
                return self._result(True, "renewed", body, message + " (check mode: nothing written)")
            return self._result(True, "renewed", self._write(current, body), message)
        return self._with_conflicts(step)

    def release(self) -> dict[str, Any]:
        """Clear ``holderIdentity`` if we hold the lock (or ``force``); otherwise a no-op with a message."""
        def step(current: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
            now = self.clock()
            view = lease_view(current, now)
            if current is None:
                return self._result(False, "absent", None, f"no lock on {self.req.node}: nothing to release")
            if not view["holder"]:
                return self._result(False, "not_held", current, f"the lock on {self.req.node} is not held: nothing to release")
            if view["holder"] != self.req.holder and not self.req.force:
                return self._result(False, "held_by_other", current, f"the lock on {self.req.node} is held by {view['holder']!r}, not "
                                    f"{self.req.holder!r}: left alone (force: true breaks it)")
            forced = view["holder"] != self.req.holder
            spec = dict(current.get("spec") or {})
            spec.pop("holderIdentity", None)
            spec["renewTime"] = format_micro_time(now)
            annotations: dict[str, Optional[str]] = {ANN_PREVIOUS: view["holder"], ANN_RELEASED_BY: self.req.holder,
                                                     ANN_RELEASED_AT: format_micro_time(now)}
            if self.req.reason:
                annotations[ANN_REASON] = self.req.reason
            body = self._body(current, spec, annotations)
            action = "force_released" if forced else "released"
            message = (f"lock on {self.req.node} held by {view['holder']!r} broken by {self.req.holder!r}" if forced
                       else f"lock on {self.req.node} released by {self.req.holder!r}")
            if self.check_mode:
                return self._result(True, action, body, message + " (check mode: nothing written)", previous_holder=view["holder"])
            return self._result(True, action, self._write(current, body), message, previous_holder=view["holder"])
        return self._with_conflicts(step)

    def _require_node(self) -> None:
        """Locks are taken for nodes that exist (a typo must not lock nothing); release works for gone nodes."""
        try:
            discard(self.client.call("get", "nodes", self.client.core.read_node, self.req.node, _preload_content=False))
        except K8sNotFound:
            raise K8sNotFound(f"node {self.req.node} not found: no lock taken", verb="get", resource="nodes",
                              name=self.req.node, status=404, reason="NotFound", server=self.client.server,
                              node=self.req.node) from None

    def run(self) -> dict[str, Any]:
        """Dispatch on ``state``."""
        if self.req.state in ("acquire", "renew"):
            self._require_node()
        if self.req.state == "acquire":
            return self.acquire()
        if self.req.state == "renew":
            return self.renew()
        return self.release()


def try_lock(client: KubeApi, request: LockRequest) -> Optional[tuple[str, dict[str, Any]]]:
    """Acquire ``request``'s lock (the batches' way): None when it is held now, else ``(detail, error)`` - held by another
    run (``locked: ...``) or the API failed (``lock failed: ...``)."""
    try:
        NodeLock(client, request).acquire()
    except NodeLockHeld as err:
        return f"locked: {err}", err.to_dict()
    except K8sError as err:
        return f"lock failed: {err}", err.to_dict()
    return None


def unlock_quietly(client: KubeApi, request: LockRequest) -> str:
    """Release the lock ``request`` took (same node, holder, namespace): ``released``, or ``release failed: <why>`` (an API
    error is reported, not raised: the lock then expires after its duration)."""
    release = LockRequest(node=request.node, holder=request.holder, state="release", namespace=request.namespace)
    try:
        NodeLock(client, release).release()
        return "released"
    except K8sError as err:
        return f"release failed: {err}"


def live_locks(client: KubeApi, namespace: str, now: Optional[datetime.datetime] = None) -> dict[str, dict[str, Any]]:
    """Every node lock held now in ``namespace``, by node: ``{holder, purpose, reason, expires_at}`` (one LIST of the
    collection's Leases; expired and released leases are left out, and so is a Lease that names no node)."""
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    resp = client.call("list", "leases", client.coordination.list_namespaced_lease, validate_namespace(namespace, "lock_namespace"),
                       label_selector=f"{LABEL_MANAGED}=dsxos.cluster", _preload_content=False)
    out: dict[str, dict[str, Any]] = {}
    for lease in json.loads(resp.data).get("items") or []:
        view = lease_view(lease, moment)
        labels = (lease.get("metadata") or {}).get("labels") or {}
        node = view["annotations"].get(ANN_NODE) or labels.get(LABEL_NODE)
        if view["expired"] or not node:
            continue
        out[str(node)] = {"holder": view["holder"], "purpose": view["annotations"].get(ANN_PURPOSE, ""),
                          "reason": view["annotations"].get(ANN_REASON, ""), "expires_at": view["expires_at"]}
    return out
