# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Quarantine circuit breaker: refuse new quarantines beyond a fraction of the GPU nodes and an absolute cap within a
sliding window, with its state in a ConfigMap so every controller (and every rerun) sees the same count.

ConfigMap ``<namespace>/<name>`` (default ``dsxos-system/dsxos-circuit-breaker``), ``data``:

* ``status``: ``closed`` | ``open``; ``reason``: why it opened (or who reset it); ``openedAt``;
* ``entries``: JSON list ``[{node, time, reason, actor}]`` of admitted quarantines (pruned to the window);
* ``resetAt``: time of the last explicit reset. Entries at or before it are dropped and never counted again (a reset
  does not "replay" the quarantines that tripped the breaker).

Limit for a window: ``min(max_nodes, max(1, floor(max_fraction * gpu_nodes)))``. A batch is admitted node by node: a
node already counted in the window passes (reruns are free); a new node passes while the count stays within the limit;
the first node beyond it opens the breaker, and an open breaker refuses every new node until an explicit ``reset``.
Releases and uncordons never consult the breaker. Writes use the ConfigMap's resourceVersion (optimistic concurrency).
"""
from __future__ import annotations

import calendar
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sConflict, K8sError, K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import discard, ensure_namespace
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import (
    validate_label_selector, validate_namespace, validate_node_name, validate_subdomain,
)

STATUS_CLOSED = "closed"
STATUS_OPEN = "open"
DEFAULT_NAMESPACE = "dsxos-system"
DEFAULT_NAME = "dsxos-circuit-breaker"
DEFAULT_GPU_SELECTOR = "nvidia.com/gpu.present=true"
WRITE_ATTEMPTS = 8
MAX_ENTRIES = 5000


class CircuitBreakerError(K8sError):
    """Bad breaker options or an unreadable breaker ConfigMap (names the option/field and value)."""


def format_time(epoch: float) -> str:
    """RFC 3339 UTC with milliseconds."""
    whole = int(epoch)
    millis = int(round((epoch - whole) * 1000))
    if millis == 1000:
        whole, millis = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def parse_time(text: Any, where: str) -> float:
    """Inverse of :func:`format_time` (also accepts whole seconds)."""
    if not isinstance(text, str) or not text.endswith("Z"):
        raise CircuitBreakerError(f"{where}: expected an RFC 3339 UTC time such as 2026-01-01T00:00:00Z, got {text!r}")
    base, _dot, frac = text[:-1].partition(".")
    try:
        seconds = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
        return seconds + (float("0." + frac) if frac else 0.0)
    except ValueError as exc:
        raise CircuitBreakerError(f"{where}: expected an RFC 3339 UTC time such as 2026-01-01T00:00:00Z, got {text!r}") from exc


@dataclass(frozen=True)
class BreakerConfig:
    """Where the breaker lives and its limits."""

    enabled: bool = True
    namespace: str = DEFAULT_NAMESPACE
    name: str = DEFAULT_NAME
    max_fraction: float = 0.1
    max_nodes: int = 10
    window_s: float = 3600.0
    gpu_node_selector: str = DEFAULT_GPU_SELECTOR

    @classmethod
    def from_params(cls, params: Optional[Mapping[str, Any]], where: str = "circuit_breaker") -> "BreakerConfig":
        """Validate a module's ``circuit_breaker`` dict (None or missing keys take the defaults)."""
        data = dict(params or {})
        known = {"enabled", "namespace", "name", "max_fraction", "max_nodes", "window_s", "gpu_node_selector"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CircuitBreakerError(f"{where}: unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        values = {k: v for k, v in data.items() if v is not None}
        cfg = cls(**values)
        validate_namespace(cfg.namespace, f"{where}.namespace")
        validate_subdomain(cfg.name, f"{where}.name")
        validate_label_selector(cfg.gpu_node_selector, f"{where}.gpu_node_selector")
        if isinstance(cfg.max_fraction, bool) or not isinstance(cfg.max_fraction, (int, float)) or not 0 < float(cfg.max_fraction) <= 1:
            raise CircuitBreakerError(f"{where}.max_fraction must be a number in (0, 1], got {cfg.max_fraction!r}")
        if isinstance(cfg.max_nodes, bool) or not isinstance(cfg.max_nodes, int) or cfg.max_nodes < 1:
            raise CircuitBreakerError(f"{where}.max_nodes must be an integer >= 1, got {cfg.max_nodes!r}")
        if isinstance(cfg.window_s, bool) or not isinstance(cfg.window_s, (int, float)) or cfg.window_s <= 0:
            raise CircuitBreakerError(f"{where}.window_s must be a number of seconds > 0, got {cfg.window_s!r}")
        return cls(bool(cfg.enabled), cfg.namespace, cfg.name, float(cfg.max_fraction), int(cfg.max_nodes), float(cfg.window_s),
                   cfg.gpu_node_selector)

    def limit(self, gpu_nodes: int) -> int:
        """Most nodes quarantined within one window."""
        return limit_for(gpu_nodes, self.max_fraction, self.max_nodes)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict."""
        return {"enabled": self.enabled, "namespace": self.namespace, "name": self.name, "max_fraction": self.max_fraction,
                "max_nodes": self.max_nodes, "window_s": self.window_s, "gpu_node_selector": self.gpu_node_selector}


def limit_for(gpu_nodes: int, max_fraction: float, max_nodes: int) -> int:
    """``min(max_nodes, max(1, floor(max_fraction * gpu_nodes)))`` (a tiny epsilon absorbs float error: 0.1*150 -> 15)."""
    by_fraction = max(1, int(math.floor(max_fraction * max(0, gpu_nodes) + 1e-9)))
    return min(int(max_nodes), by_fraction)


@dataclass(frozen=True)
class BreakerEntry:
    """One admitted quarantine."""

    node: str
    time: float
    reason: str = ""
    actor: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"node": self.node, "time": format_time(self.time), "reason": self.reason, "actor": self.actor}


@dataclass
class BreakerState:
    """The ConfigMap's content."""

    status: str = STATUS_CLOSED
    reason: str = ""
    entries: list[BreakerEntry] = field(default_factory=list)
    reset_at: Optional[float] = None
    opened_at: Optional[float] = None

    def to_data(self) -> dict[str, str]:
        """ConfigMap ``data`` (all strings)."""
        return {"status": self.status, "reason": self.reason,
                "entries": json.dumps([e.to_dict() for e in self.entries], separators=(",", ":")),
                "resetAt": format_time(self.reset_at) if self.reset_at is not None else "",
                "openedAt": format_time(self.opened_at) if self.opened_at is not None else ""}

    @classmethod
    def from_data(cls, data: Optional[Mapping[str, Any]], where: str) -> "BreakerState":
        """Parse ConfigMap ``data``; raises :class:`CircuitBreakerError` naming the ConfigMap and key when malformed."""
        data = dict(data or {})
        status = data.get("status") or STATUS_CLOSED
        if status not in (STATUS_CLOSED, STATUS_OPEN):
            raise CircuitBreakerError(f"{where}: data.status must be 'closed' or 'open', got {status!r}")
        try:
            raw_entries = json.loads(data.get("entries") or "[]")
        except ValueError as exc:
            raise CircuitBreakerError(f"{where}: data.entries is not JSON ({exc}): {str(data.get('entries'))[:200]!r}") from exc
        if not isinstance(raw_entries, list):
            raise CircuitBreakerError(f"{where}: data.entries must be a JSON list, got {type(raw_entries).__name__}")
        entries = []
        for index, item in enumerate(raw_entries):
            if not isinstance(item, Mapping) or not isinstance(item.get("node"), str):
                raise CircuitBreakerError(f"{where}: data.entries[{index}] must be an object with node and time, got {item!r}")
            entries.append(BreakerEntry(item["node"], parse_time(item.get("time"), f"{where}: data.entries[{index}].time"),
                                        str(item.get("reason") or ""), str(item.get("actor") or "")))
        reset_at = parse_time(data["resetAt"], f"{where}: data.resetAt") if data.get("resetAt") else None
        opened_at = parse_time(data["openedAt"], f"{where}: data.openedAt") if data.get("openedAt") else None
        return cls(status, str(data.get("reason") or ""), entries, reset_at, opened_at)

    def active(self, now: float, window_s: float) -> list[BreakerEntry]:
        """Entries inside the window ``(now - window_s, now]`` and after the last reset."""
        start = now - window_s
        return [e for e in self.entries if e.time > start and (self.reset_at is None or e.time > self.reset_at)]

    def copy(self) -> "BreakerState":
        """Independent copy."""
        return BreakerState(self.status, self.reason, list(self.entries), self.reset_at, self.opened_at)


@dataclass
class BreakerDecision:
    """Outcome of a check/record for a batch of nodes."""

    admitted: list[str]
    refused: dict[str, str]
    state: BreakerState
    changed: bool
    limit: int
    gpu_nodes: int
    active_nodes: list[str]

    @property
    def allowed(self) -> bool:
        """Were all nodes admitted?"""
        return not self.refused

    def to_dict(self, config: BreakerConfig) -> dict[str, Any]:
        """Module return value."""
        return {"allowed": self.allowed, "admitted": self.admitted, "refused": self.refused, "changed": self.changed,
                "limit": self.limit, "gpu_nodes": self.gpu_nodes, "active_count": len(self.active_nodes),
                "active_nodes": self.active_nodes, "state": describe_state(self.state, config)}


def describe_state(state: BreakerState, config: BreakerConfig) -> dict[str, Any]:
    """Readable state for module returns."""
    return {"status": state.status, "reason": state.reason, "entries": [e.to_dict() for e in state.entries],
            "reset_at": format_time(state.reset_at) if state.reset_at is not None else None,
            "opened_at": format_time(state.opened_at) if state.opened_at is not None else None,
            "configmap": f"{config.namespace}/{config.name}"}


def decide(state: BreakerState, nodes: Sequence[str], now: float, config: BreakerConfig, gpu_nodes: int,
           reason: str = "", actor: str = "") -> BreakerDecision:
    """Admit or refuse ``nodes`` (pure). The returned state has the window pruned and the admitted entries added."""
    limit = config.limit(gpu_nodes)
    new = state.copy()
    before = state.to_data()
    new.entries = new.active(now, config.window_s)
    counted = {e.node for e in new.entries}
    admitted: list[str] = []
    refused: dict[str, str] = {}
    where = f"circuit breaker {config.namespace}/{config.name}"
    for node in nodes:
        if node in counted:
            if node not in admitted:
                admitted.append(node)
            continue
        if new.status == STATUS_OPEN:
            since = f" since {format_time(new.opened_at)}" if new.opened_at is not None else ""
            refused[node] = f"{where} is open{since}: {new.reason} (reset it with dsxos.cluster.circuit_breaker action=reset)"
            continue
        if len(counted) + 1 > limit:
            new.status = STATUS_OPEN
            new.opened_at = now
            new.reason = (f"quarantining {node} would make {len(counted) + 1} nodes quarantined within {config.window_s:g} s, above the "
                          f"limit {limit} = min(max_nodes {config.max_nodes}, max(1, floor(max_fraction {config.max_fraction:g} x "
                          f"{gpu_nodes} GPU nodes)))")
            refused[node] = f"{where} opened: {new.reason}"
            continue
        counted.add(node)
        admitted.append(node)
        new.entries.append(BreakerEntry(node, now, reason, actor))
    new.entries = new.entries[-MAX_ENTRIES:]
    changed = new.to_data() != before
    return BreakerDecision(admitted, refused, new, changed, limit, gpu_nodes, sorted(counted))


def reset_state(state: BreakerState, now: float, actor: str, reason: str) -> BreakerState:
    """Close the breaker and forget every entry up to now (they are never counted again)."""
    why = f"reset by {actor or 'unknown'} at {format_time(now)}" + (f": {reason}" if reason else "")
    return BreakerState(STATUS_CLOSED, why, [], now, None)


class CircuitBreaker:
    """The breaker ConfigMap through a :class:`KubeClient` (``client.core`` and ``client.call``)."""

    def __init__(self, client: KubeApi, config: BreakerConfig, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.config = config
        self.clock = clock

    @property
    def where(self) -> str:
        """``configmap <ns>/<name>``."""
        return f"configmap {self.config.namespace}/{self.config.name}"

    def read(self) -> tuple[BreakerState, Optional[str]]:
        """Current state and the ConfigMap's resourceVersion (None when it does not exist yet)."""
        try:
            resp = self.client.call("get", "configmaps", self.client.core.read_namespaced_config_map, self.config.name, self.config.namespace,
                                    _preload_content=False)
        except K8sNotFound:
            return BreakerState(), None
        cm = json.loads(resp.data)
        return BreakerState.from_data(cm.get("data"), self.where), (cm.get("metadata") or {}).get("resourceVersion")

    def gpu_node_count(self) -> int:
        """Number of nodes matching the GPU selector (one list call)."""
        result = self.client.call("list", "nodes", self.client.core.list_node, label_selector=self.config.gpu_node_selector,
                                  _preload_content=False)
        data = json.loads(result.data)
        return len(data.get("items") or [])

    def _write(self, state: BreakerState, resource_version: Optional[str]) -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "data": state.to_data(),
                "metadata": {"name": self.config.name, "namespace": self.config.namespace,
                             "labels": {"app.kubernetes.io/managed-by": "dsxos.cluster", "app.kubernetes.io/component": "circuit-breaker"}}}
        if resource_version is None:
            ensure_namespace(self.client, self.config.namespace)
            discard(self.client.call("create", "configmaps", self.client.core.create_namespaced_config_map, self.config.namespace, body,
                                     _preload_content=False))
        else:
            body["metadata"]["resourceVersion"] = resource_version
            discard(self.client.call("update", "configmaps", self.client.core.replace_namespaced_config_map, self.config.name,
                                     self.config.namespace, body, _preload_content=False))

    def check(self, nodes: Sequence[str]) -> BreakerDecision:
        """Would these nodes be admitted now? (no write)"""
        for node in nodes:
            validate_node_name(node)
        state, dummy = self.read()
        return decide(state, list(nodes), self.clock(), self.config, self.gpu_node_count())

    def record(self, nodes: Sequence[str], reason: str = "", actor: str = "") -> BreakerDecision:
        """Check and add admitted nodes atomically (retries on a concurrent write)."""
        for node in nodes:
            validate_node_name(node)
        gpu_nodes = self.gpu_node_count()
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            state, rv = self.read()
            result = decide(state, list(nodes), self.clock(), self.config, gpu_nodes, reason, actor)
            if not result.changed:
                return result
            try:
                self._write(result.state, rv)
                return result
            except K8sConflict:
                if attempt == WRITE_ATTEMPTS:
                    raise
        raise CircuitBreakerError(f"{self.where}: could not record after {WRITE_ATTEMPTS} attempts")  # pragma: no cover

    def reset(self, actor: str = "", reason: str = "", check_mode: bool = False) -> tuple[bool, BreakerState]:
        """Close the breaker and drop its entries; returns (changed, new state)."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            state, rv = self.read()
            changed = state.status != STATUS_CLOSED or bool(state.active(self.clock(), self.config.window_s))
            if not changed:
                return False, state
            new = reset_state(state, self.clock(), actor, reason)
            if check_mode:
                return True, new
            try:
                self._write(new, rv)
                return True, new
            except K8sConflict:
                if attempt == WRITE_ATTEMPTS:
                    raise
        raise CircuitBreakerError(f"{self.where}: could not reset after {WRITE_ATTEMPTS} attempts")  # pragma: no cover

    def status(self) -> dict[str, Any]:
        """State plus the current window count and limit."""
        state, rv = self.read()
        gpu_nodes = self.gpu_node_count()
        active = state.active(self.clock(), self.config.window_s)
        return {"exists": rv is not None, "limit": self.config.limit(gpu_nodes), "gpu_nodes": gpu_nodes,
                "active_count": len({e.node for e in active}), "active_nodes": sorted({e.node for e in active}),
                "state": describe_state(state, self.config), "config": self.config.to_dict()}


def run_circuit_breaker(client: KubeApi, action: str, config: BreakerConfig, nodes: Sequence[str] = (), reason: str = "",
                        actor: str = "", check_mode: bool = False, clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """One breaker action, called by ``operate.entry.CIRCUIT_BREAKER``: ``check`` | ``record`` | ``reset`` | ``status``."""
    breaker = CircuitBreaker(client, config, clock)
    if action in ("check", "record") and not nodes:
        raise CircuitBreakerError(f"action {action!r} needs at least one node in nodes")
    if action == "check" or (action == "record" and check_mode):
        result = breaker.check(nodes)
        out = result.to_dict(config)
        out["changed"] = action == "record" and result.changed
        return out
    if action == "record":
        return breaker.record(nodes, reason, actor).to_dict(config)
    if action == "reset":
        changed, state = breaker.reset(actor, reason, check_mode)
        return {"changed": changed, "state": describe_state(state, config)}
    if action == "status":
        out = breaker.status()
        out["changed"] = False
        return out
    raise CircuitBreakerError(f"unknown action {action!r}; expected check, record, reset or status")
