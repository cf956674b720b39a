# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Errors of the Kubernetes access layer.

Every error says which verb on which resource failed (and the object name/namespace when known), so modules can hand
``str(err)`` straight to ``fail_json`` and ``err.to_dict()`` to its ``error`` return value.
"""
from __future__ import annotations

from typing import Any, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import DsxosError


class K8sError(DsxosError):
    """Base class of every Kubernetes access failure; ``str()`` is the full message (composed by the raiser).

    Besides the base class's named fields it carries the HTTP ``status``, the Status ``reason`` and a ``detail``.
    """

    render_fields = False

    def __init__(self, message: str, verb: Optional[str] = None, resource: Optional[str] = None, name: Optional[str] = None,
                 namespace: Optional[str] = None, status: Optional[int] = None, reason: Optional[str] = None,
                 server: Optional[str] = None, detail: Optional[str] = None, **fields: Any) -> None:
        self.status = status
        self.reason = reason
        self.detail = detail
        super().__init__(message, verb=verb, resource=resource, name=name, namespace=namespace, server=server, **fields)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly description (``error`` is the class name)."""
        out = super().to_dict()
        out.update(status=self.status, reason=self.reason, detail=self.detail)
        return out


class K8sConfigError(K8sError):
    """Bad connection options or an unreadable kubeconfig (names the option/file and value)."""


class K8sNotFound(K8sError):
    """404: the object (or the resource type) does not exist."""


class K8sConflict(K8sError):
    """409: optimistic-concurrency conflict (stale resourceVersion) or AlreadyExists."""


class K8sForbidden(K8sError):
    """403: RBAC refused the request (names verb, resource and the user/serviceaccount when the Status says it)."""

    def __init__(self, message: str, user: Optional[str] = None, **kwargs: Any) -> None:
        self.user = user
        super().__init__(message, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["user"] = self.user
        return out


class K8sUnauthorized(K8sError):
    """401: no or bad credentials."""


class K8sUnreachable(K8sError):
    """The API server could not be reached (connection refused/reset, DNS, TLS, timeout); names the server URL."""


class K8sRetriesExhausted(K8sError):
    """Retryable failures (429/5xx/connection errors) persisted through every retry; names attempts and the last status."""

    def __init__(self, message: str, attempts: int = 0, **kwargs: Any) -> None:
        self.attempts = attempts
        super().__init__(message, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["attempts"] = self.attempts
        return out


class K8sInvalid(K8sError):
    """400/422: the server rejected the request body or parameters."""


class K8sApiError(K8sError):
    """Any other non-success answer (405, 410, non-retryable 5xx ...)."""


class K8sTimeout(K8sError):
    """A wait (watch, lease wait) ran past its deadline."""


class K8sDeadlineExceeded(K8sRetriesExhausted, K8sUnreachable, K8sTimeout):
    """One API call and its retries ran into the client's overall deadline (option ``deadline_s``).

    Names the server, the verb and resource, the attempts, the elapsed time and the last failure. It is a
    :class:`K8sRetriesExhausted`, a :class:`K8sUnreachable` and a :class:`K8sTimeout` at once, so callers that caught a
    hung server as "unreachable" or a failing one as "exhausted" before the deadline existed still catch it.
    """

    def __init__(self, message: str, elapsed_s: float = 0.0, deadline_s: float = 0.0, **kwargs: Any) -> None:
        self.elapsed_s = elapsed_s
        self.deadline_s = deadline_s
        super().__init__(message, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(elapsed_s=round(self.elapsed_s, 3), deadline_s=self.deadline_s)
        return out
