# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fault injection (latency, 5xx, 429 with Retry-After, dropped connections, lost responses) configurable at runtime,
optionally per path prefix and method, optionally only a limited number of times.

``drop`` closes the connection BEFORE the request is served (nothing changes); ``apply_drop`` serves the request (a
write is stored) and then closes the connection without sending the answer: the client sees a dropped connection
although its change was applied (what a lost response looks like).
"""
from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any


@dataclass
class FaultRule:
    """Faults applied to requests whose path starts with ``path_prefix`` (and whose method is in ``methods`` if given)."""

    path_prefix: str = "/"
    methods: tuple[str, ...] = ()
    latency_s: float = 0.0
    latency_range: tuple[float, float] | None = None
    error_rate: float = 0.0
    error_code: int = 500
    throttle_rate: float = 0.0
    retry_after_s: int = 1
    drop_rate: float = 0.0
    apply_drop_rate: float = 0.0
    #: inject at most this many faults (not counting latency) with this rule (0: no limit); afterwards it covers nothing
    limit: int = 0
    fired: int = 0

    def applies(self, method: str, path: str) -> bool:
        """Does this rule cover the request?"""
        if self.limit and self.fired >= self.limit:
            return False
        return path.startswith(self.path_prefix) and (not self.methods or method in self.methods)


@dataclass
class FaultDecision:
    """What to do with one request: sleep, then answer an error / drop the connection / serve normally."""

    delay_s: float = 0.0
    action: str = "serve"  # serve | error | throttle | drop | apply_drop
    code: int = 0
    retry_after_s: int = 0


class FaultInjector:
    """Holds the active rules; :meth:`decide` is called once per request (thread-safe, seeded RNG)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self.injected: dict[str, int] = {"latency": 0, "error": 0, "throttle": 0, "drop": 0, "apply_drop": 0}

    def set(self, path_prefix: str = "/", methods: tuple[str, ...] | list[str] = (), **settings: Any) -> FaultRule:
        """Add a rule (latency_s, latency_range, error_rate, error_code, throttle_rate, retry_after_s, drop_rate,
        apply_drop_rate, limit).

        Rules are checked most-specific (longest prefix) first; the first covering rule applies.
        """
        rule = FaultRule(path_prefix=path_prefix, methods=tuple(m.upper() for m in methods), **settings)
        for rate in (rule.error_rate, rule.throttle_rate, rule.drop_rate, rule.apply_drop_rate):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"fault rate must be within [0, 1], got {rate!r} for prefix {path_prefix!r}")
        if rule.limit < 0:
            raise ValueError(f"fault limit must be >= 0, got {rule.limit!r} for prefix {path_prefix!r}")
        with self._lock:
            self._rules.append(rule)
            self._rules.sort(key=lambda r: -len(r.path_prefix))
        return rule

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self._rules.clear()

    @property
    def rules(self) -> list[FaultRule]:
        """Active rules (copy)."""
        with self._lock:
            return list(self._rules)

    def decide(self, method: str, path: str) -> FaultDecision:
        """Roll the dice for one request."""
        with self._lock:
            rule = next((r for r in self._rules if r.applies(method, path)), None)
            if rule is None:
                return FaultDecision()
            decision = FaultDecision()
            if rule.latency_range:
                decision.delay_s = self._rng.uniform(*rule.latency_range)
            else:
                decision.delay_s = rule.latency_s
            if decision.delay_s > 0:
                self.injected["latency"] += 1
            roll = self._rng.random()
            if roll < rule.drop_rate:
                decision.action = "drop"
            elif roll < rule.drop_rate + rule.error_rate:
                decision.action, decision.code = "error", rule.error_code
            elif roll < rule.drop_rate + rule.error_rate + rule.throttle_rate:
                decision.action, decision.code, decision.retry_after_s = "throttle", 429, rule.retry_after_s
            elif roll < rule.drop_rate + rule.error_rate + rule.throttle_rate + rule.apply_drop_rate:
                decision.action = "apply_drop"
            if decision.action != "serve":
                self.injected[decision.action] += 1
                rule.fired += 1
            return decision
