# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fault injection (latency, 5xx, 429 with Retry-After, dropped connections) configurable at runtime, optionally per path prefix."""
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

    def applies(self, method: str, path: str) -> bool:
        """Does this rule cover the request?"""
        return path.startswith(self.path_prefix) and (not self.methods or method in self.methods)


@dataclass
class FaultDecision:
    """What to do with one request: sleep, then answer an error / drop the connection / serve normally."""

    delay_s: float = 0.0
    action: str = "serve"  # serve | error | throttle | drop
    code: int = 0
    retry_after_s: int = 0


class FaultInjector:
    """Holds the active rules; :meth:`decide` is called once per request (thread-safe, seeded RNG)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self.injected: dict[str, int] = {"latency": 0, "error": 0, "throttle": 0, "drop": 0}

    def set(self, path_prefix: str = "/", methods: tuple[str, ...] | list[str] = (), **settings: Any) -> FaultRule:
        """Add a rule (latency_s, latency_range, error_rate, error_code, throttle_rate, retry_after_s, drop_rate).

        Rules are checked most-specific (longest prefix) first; the first covering rule applies.
        """
        rule = FaultRule(path_prefix=path_prefix, methods=tuple(m.upper() for m in methods), **settings)
        for rate in (rule.error_rate, rule.throttle_rate, rule.drop_rate):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"fault rate must be within [0, 1], got {rate!r} for prefix {path_prefix!r}")
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
            if decision.action != "serve":
                self.injected[decision.action] += 1
            return decision
