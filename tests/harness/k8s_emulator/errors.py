# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""API errors of the emulator, rendered as Kubernetes ``Status`` objects (``metav1.Status``)."""
from __future__ import annotations

from typing import Any

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "AlreadyExists",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


class ApiError(Exception):
    """An error answered to the client as a ``Status`` body with the given HTTP code."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details
        self.headers = headers or {}
        self.cause = ""

    def status(self) -> dict[str, Any]:
        """The ``Status`` object (``kind: Status``) for the response body."""
        return status_object(self.code, self.message, self.reason, self.details, failure=True)


def status_object(code: int, message: str, reason: str, details: dict[str, Any] | None,
                  failure: bool = True) -> dict[str, Any]:
    """Build a ``metav1.Status`` dict."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if failure else "Success",
    }
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    return out


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    """404 like ``nodes "x" not found``."""
    return ApiError(404, f'{_qualified(plural, group)} "{name}" not found', "NotFound", _details(name, group, plural))


def already_exists(plural: str, group: str, name: str) -> ApiError:
    """409 like ``pods "x" already exists``."""
    return ApiError(409, f'{_qualified(plural, group)} "{name}" already exists', "AlreadyExists", _details(name, group, plural))


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    """409 Conflict (e.g. a stale resourceVersion)."""
    return ApiError(409, f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}', "Conflict",
                    _details(name, group, plural))


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; each cause is (field, reason, message) e.g. ("metadata.name", "FieldValueInvalid", "Invalid value: ...")."""
    msgs = [f"{field}: {msg}" for field, _reason, msg in causes]
    joined = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    details = _details(name, group, kind)
    details["causes"] = [{"reason": reason, "message": msg, "field": field} for field, reason, msg in causes]
    return ApiError(422, f'{kind}.{group} "{name}" is invalid: {joined}' if group else f'{kind} "{name}" is invalid: {joined}',
                    "Invalid", details)


def bad_request(message: str) -> ApiError:
    """400 BadRequest."""
    return ApiError(400, message, "BadRequest")


def forbidden(plural: str, group: str, name: str | None, message: str) -> ApiError:
    """403 Forbidden with the apiserver's ``<resource> "<name>" is forbidden: <why>`` message."""
    subject = f'{_qualified(plural, group)} "{name}"' if name else _qualified(plural, group)
    return ApiError(403, f"{subject} is forbidden: {message}", "Forbidden", _details(name, group, plural))
