# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The values the sentinel's incident records hold, validated and formatted (pure).

* times: RFC 3339 in (:func:`parse_rfc3339`, any offset and number of fraction digits), RFC 3339 UTC with
  milliseconds out (:func:`format_time`);
* alert fingerprints, incident ids and free texts (:func:`validate_fingerprint`, :func:`validate_incident_id`,
  :func:`validate_text`);
* the id of the incident a firing alert opens (:func:`incident_id_for`) and the quarantine reason that names an
  incident (:func:`incident_reason`, read back by :func:`reason_incident_id`);
* :class:`IncidentError`, the error of every incident request and record.
"""
from __future__ import annotations

import datetime
import hashlib
import re
import unicodedata
from typing import Any, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError

MAX_TEXT = 1024

_FINGERPRINT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_INCIDENT_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_RFC3339_RE = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


class IncidentError(InputError):
    """A bad incident request or a malformed incident annotation (names the node, field and value)."""


def parse_rfc3339(value: Any, field_name: str = "time") -> float:
    """RFC 3339 time (``Z`` or an offset, any number of fraction digits) -> epoch seconds; :class:`IncidentError` otherwise."""
    if not isinstance(value, str):
        raise IncidentError(f"{field_name} must be an RFC 3339 time such as 2026-01-01T00:00:00Z, got {type(value).__name__}",
                            field=field_name, value=value)
    match = _RFC3339_RE.fullmatch(value)
    if not match:
        raise IncidentError(f"{field_name} must be an RFC 3339 time such as 2026-01-01T00:00:00Z", field=field_name, value=value)
    date, clock, frac, zone = match.groups()
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        moment = datetime.datetime.fromisoformat(f"{date}T{clock}{zone}")
    except ValueError as exc:
        raise IncidentError(f"{field_name} is not a valid time ({exc})", field=field_name, value=value) from exc
    return moment.timestamp() + (float("0" + frac[:10]) if frac else 0.0)


def format_time(epoch: float) -> str:
    """Epoch seconds -> RFC 3339 UTC with milliseconds (``2026-01-01T00:00:00.000Z``)."""
    moment = datetime.datetime.fromtimestamp(round(epoch, 3), tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def validate_fingerprint(value: Any, field_name: str = "fingerprint") -> str:
    """An alert fingerprint: 1-128 characters of letters, digits, ``.``, ``_``, ``:``, ``-`` (whole string)."""
    if not isinstance(value, str) or not _FINGERPRINT_RE.fullmatch(value):
        raise IncidentError(f"{field_name} must be 1-128 letters, digits, '.', '_', ':' or '-' starting with a letter or digit",
                            field=field_name, value=value)
    return value


def validate_incident_id(value: Any, field_name: str = "incident") -> str:
    """An incident id: an RFC 1123 label (lower-case letters, digits, ``-``; at most 63 characters)."""
    if not isinstance(value, str) or not _INCIDENT_RE.fullmatch(value):
        raise IncidentError(f"{field_name} must be an incident id such as sen-3f2a9c1b0d4e (lower-case letters, digits and '-', "
                            "at most 63 characters)", field=field_name, value=value)
    return value


def _clean_text(value: str) -> str:
    """Control characters (newlines included) become spaces, runs of whitespace one space, then at most MAX_TEXT characters."""
    text = "".join(" " if unicodedata.category(c) == "Cc" else c for c in value)
    return re.sub(r"\s+", " ", text).strip()[:MAX_TEXT]


def validate_text(value: Any, field_name: str, required: bool = False, sanitize: bool = False) -> str:
    """A free text of at most 1024 printable characters (no control characters except tab).

    With ``sanitize`` (multi-line messages such as a command's stderr) control characters are replaced by spaces, runs
    of whitespace collapsed and the text truncated instead of refused; a value that is not a string is still refused.
    """
    if value is None or value == "":
        if required:
            raise IncidentError(f"{field_name} is required", field=field_name, value=value)
        return ""
    if not isinstance(value, str):
        raise IncidentError(f"{field_name} must be a string, got {type(value).__name__}", field=field_name, value=value)
    if sanitize:
        value = _clean_text(value)
        if required and not value:
            raise IncidentError(f"{field_name} is required", field=field_name, value=value)
        return value
    if len(value) > MAX_TEXT or any(ord(c) < 32 and c not in "\t" for c in value):
        raise IncidentError(f"{field_name} must be at most {MAX_TEXT} characters without control characters", field=field_name,
                            value=value[:200])
    return value


def incident_id_for(node: str, fingerprint: str, starts_at: str) -> str:
    """The id of the incident a firing event opens: ``sen-`` + 12 hex digits of sha256(node, fingerprint, starts_at).

    Deterministic, so a rerun of the same event after a crash between the cordon and the incident record names the
    same incident in its quarantine reason.
    """
    digest = hashlib.sha256(f"{node}\0{fingerprint}\0{starts_at}".encode("utf-8")).hexdigest()
    return "sen-" + digest[:12]


def incident_reason(incident_id: str, detail: str) -> str:
    """The quarantine reason the sentinel records for an incident: ``sentinel incident <id>: <detail>`` (at most 1,000
    characters). :func:`reason_incident_id` reads it back; the role's task files write the same prefix."""
    return f"sentinel incident {incident_id}: {detail}"[:1000]


#: the incident id a sentinel quarantine reason starts with (:func:`incident_reason`, the role's task files): a whole
#: incident id (:func:`validate_incident_id`) followed by the end, ``:`` or a space
_REASON_ID_RE = re.compile(r"^sentinel incident (" + _INCIDENT_RE.pattern + r")(?=$|[: ])")


def reason_incident_id(reason: Any) -> Optional[str]:
    """The incident id a sentinel quarantine reason starts with (``sentinel incident <id>`` followed by the end, ``:`` or
    a space), else None. The one reading of the reason: "does it name incident X" is ``reason_incident_id(r) == X``."""
    match = _REASON_ID_RE.match(str(reason or ""))
    return match.group(1) if match else None


def time_or_none(text: Any) -> Optional[float]:
    """:func:`parse_rfc3339` of ``text``, or None when it is not an RFC 3339 time."""
    try:
        return parse_rfc3339(text)
    except IncidentError:
        return None


__all__ = ["MAX_TEXT", "IncidentError", "format_time", "incident_id_for", "incident_reason", "parse_rfc3339", "reason_incident_id",
           "time_or_none", "validate_fingerprint", "validate_incident_id", "validate_text"]
