# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Bearer-token authentication and a small RBAC rule table to simulate 401/403 answers."""
from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class AccessRule:
    """Allow or deny ``verbs`` on ``resources`` (``pods``, ``pods/eviction``, ``*``) for ``users`` in ``namespaces``."""

    effect: str  # "allow" | "deny"
    verbs: tuple[str, ...] = ("*",)
    resources: tuple[str, ...] = ("*",)
    users: tuple[str, ...] = ("*",)
    namespaces: tuple[str, ...] = ("*",)
    groups: tuple[str, ...] = ("*",)

    def covers(self, user: str, verb: str, resource: str, namespace: str, group: str) -> bool:
        """Does this rule talk about the request?"""
        def hit(values: tuple[str, ...], value: str) -> bool:
            return "*" in values or value in values
        base = resource.split("/", 1)[0]
        return (hit(self.users, user) and hit(self.verbs, verb) and (hit(self.resources, resource) or hit(self.resources, base + "/*"))
                and hit(self.namespaces, namespace) and hit(self.groups, group))


class AccessControl:
    """Tokens -> users, and first-match RBAC rules; with no rule covering a request the default effect applies."""

    def __init__(self, admin_token: str) -> None:
        self._lock = threading.Lock()
        self.tokens: dict[str, str] = {admin_token: "kubernetes-admin"}
        self.require_auth = False
        self.default_effect = "allow"
        self._rules: list[AccessRule] = []

    def add_token(self, token: str, user: str) -> None:
        """Accept ``token`` as ``user``."""
        with self._lock:
            self.tokens[token] = user

    def user_for(self, authorization: str | None) -> str | None:
        """The user behind an ``Authorization`` header; None if unauthenticated (only an error when require_auth)."""
        if authorization and authorization.lower().startswith("bearer "):
            token = authorization[7:].strip()
            with self._lock:
                user = self.tokens.get(token)
            if user is not None:
                return user
            return None if self.require_auth else "system:unknown-token"
        return None if self.require_auth else "system:anonymous"

    def deny(self, verbs: list[str] | tuple[str, ...] = ("*",), resources: list[str] | tuple[str, ...] = ("*",),
             users: list[str] | tuple[str, ...] = ("*",), namespaces: list[str] | tuple[str, ...] = ("*",),
             groups: list[str] | tuple[str, ...] = ("*",)) -> AccessRule:
        """Add a deny rule (checked in insertion order with allow rules)."""
        return self._add(AccessRule("deny", tuple(verbs), tuple(resources), tuple(users), tuple(namespaces), tuple(groups)))

    def allow(self, verbs: list[str] | tuple[str, ...] = ("*",), resources: list[str] | tuple[str, ...] = ("*",),
              users: list[str] | tuple[str, ...] = ("*",), namespaces: list[str] | tuple[str, ...] = ("*",),
              groups: list[str] | tuple[str, ...] = ("*",)) -> AccessRule:
        """Add an allow rule (useful with ``default_effect = "deny"``)."""
        return self._add(AccessRule("allow", tuple(verbs), tuple(resources), tuple(users), tuple(namespaces), tuple(groups)))

    def _add(self, rule: AccessRule) -> AccessRule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        """Drop all rules and go back to allow-all."""
        with self._lock:
            self._rules.clear()
            self.default_effect = "allow"

    def allowed(self, user: str, verb: str, resource: str, namespace: str, group: str) -> bool:
        """Is the request permitted?"""
        with self._lock:
            for rule in self._rules:
                if rule.covers(user, verb, resource, namespace or "", group):
                    return rule.effect == "allow"
            return self.default_effect == "allow"
