# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Alertmanager webhook payloads to normalized GPU fault events: validation, normalization, dedup, batching.

Pure Python (no Ansible, no I/O); the Event-Driven Ansible source ``extensions/eda/plugins/event_source/alertmanager_gpu.py``
is its only caller. See docs/operate-eda.md.

* :func:`validate_payload` checks an Alertmanager webhook payload (version ``"4"``) and raises
  :class:`AlertPayloadError` listing every problem by field path (``alerts[3].labels.node``); nothing of a bad
  payload is passed on.
* :func:`normalize_payload` turns each alert of a valid payload into exactly one :class:`Normalized` result: an
  event (the dict of :data:`EVENT_KEYS`) or a :class:`Rejection` (reason + message) when a value taken from the
  alert's labels (node, GPU, UUID, code, pod, action) is not safe to act on.
* :class:`Deduplicator` drops an event whose ``(fingerprint, status)`` was passed on within a time window (bounded
  memory: the oldest keys are forgotten first).
* :class:`Batcher` collects events for a window (or up to a maximum count) and hands them out as batches, one per
  status, so that a storm of alerts becomes a few playbook runs over many nodes.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_catalog import lookup_dcgm_error
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_classes import FAULT_CLASSES
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import (
    K8sInvalidName, validate_namespace, validate_node_name, validate_subdomain,
)

#: The keys of one normalized event, in order (the contract with the sentinel playbooks).
EVENT_KEYS = ("node", "gpu", "uuid", "code", "fault_class", "action", "status", "fingerprint", "starts_at", "ends_at",
              "pods", "alertname", "severity", "labels", "dropped_labels")
#: The webhook payload version this module understands.
PAYLOAD_VERSION = "4"
STATUSES = ("firing", "resolved")
#: Why an alert of a valid payload is not passed on (a small fixed set: the metrics label ``reason`` uses it).
REJECT_REASONS = ("missing_node", "invalid_node", "invalid_label")
#: Labels that name the node, in order of preference (DCGM exporter: ``Hostname``; scrape target: ``instance``).
NODE_LABELS = ("node", "Hostname", "instance")

_RFC3339_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})")
_ZERO_TIME_RE = re.compile(r"0001-01-01[Tt]00:00:00(\.0+)?([Zz]|[+-]00:00)")
_FINGERPRINT_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
# A node name: RFC 1123 subdomain. kube.names uses ``re.match`` with ``$``, which accepts a trailing newline;
# every name is checked against this one with ``fullmatch`` too.
_NODE_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_PORT_SUFFIX_RE = re.compile(r"(.+):[0-9]{1,5}")
_GPU_RE = re.compile(r"[0-9]{1,4}")
_UUID_RE = re.compile(r"(GPU|MIG)-[A-Za-z0-9/_-]{1,120}")
_CODE_RE = re.compile(r"[0-9]{1,9}|DCGM_FR_[A-Z0-9_]{1,80}")
_ACTION_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]{0,62})?")
_MAX_SHOWN = 80
#: Jinja2 delimiters: a label holding one never reaches a playbook's extra vars (no template text in events).
_TEMPLATE_MARKERS = ("{{", "{%", "{#")


class AlertPayloadError(InputError):
    """A webhook payload that is not a valid Alertmanager version-4 payload.

    ``errors`` lists every problem as ``"<field path>: <what is wrong>"``; ``field`` is the first one's path.
    """

    def __init__(self, errors: List[Tuple[str, str]]) -> None:
        self.errors = ["%s: %s" % (path, what) for path, what in errors]
        shown = "; ".join(self.errors[:5]) + ("; ... %d more" % (len(self.errors) - 5) if len(self.errors) > 5 else "")
        super().__init__("invalid Alertmanager webhook payload: " + shown, field=errors[0][0] if errors else None)


@dataclass(frozen=True)
class PayloadLimits:
    """Bounds of one payload (anything larger is an :class:`AlertPayloadError`)."""

    max_alerts: int = 5000
    max_labels: int = 64
    max_key_len: int = 256
    max_value_len: int = 4096

    def validate(self) -> "PayloadLimits":
        for name in ("max_alerts", "max_labels", "max_key_len", "max_value_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError("%s must be a positive integer" % name, field=name, value=value)
        return self


DEFAULT_LIMITS = PayloadLimits()


@dataclass(frozen=True)
class Rejection:
    """An alert of a valid payload that is not passed on: ``reason`` (one of :data:`REJECT_REASONS`) and why."""

    reason: str
    message: str
    fingerprint: str
    status: str
    alertname: str
    index: int

    def to_dict(self) -> Dict[str, Any]:
        return {"reason": self.reason, "message": self.message, "fingerprint": self.fingerprint, "status": self.status,
                "alertname": self.alertname, "index": self.index}


Normalized = Union[Dict[str, Any], Rejection]


def shown(value: Any) -> str:
    """``repr(value)`` cut to a loggable length (control characters stay escaped, e.g. a trailing ``\\n``)."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "...(%d chars)" % len(text)


# ---------------------------------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------------------------------

class _Problems:
    """Collects per-field problems, at most ``cap`` of them."""

    def __init__(self, cap: int = 50) -> None:
        self.items: List[Tuple[str, str]] = []
        self.cap = cap

    def add(self, path: str, what: str) -> None:
        if len(self.items) < self.cap:
            self.items.append((path, what))


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_str(problems: _Problems, data: Mapping[str, Any], key: str, path: str, required: bool = True,
               max_len: int = 4096) -> None:
    if key not in data:
        if required:
            problems.add(path + key, "is required")
        return
    value = data[key]
    if not isinstance(value, str):
        problems.add(path + key, "must be a string, got %s" % _type_name(value))
    elif len(value) > max_len:
        problems.add(path + key, "is %d characters long; at most %d are allowed" % (len(value), max_len))


def _check_string_map(problems: _Problems, data: Mapping[str, Any], key: str, path: str, limits: PayloadLimits,
                      required: bool = True) -> None:
    if key not in data:
        if required:
            problems.add(path + key, "is required")
        return
    value = data[key]
    if not isinstance(value, dict):
        problems.add(path + key, "must be an object of strings, got %s" % _type_name(value))
        return
    if len(value) > limits.max_labels:
        problems.add(path + key, "has %d entries; at most %d are allowed" % (len(value), limits.max_labels))
        return
    for name, item in value.items():
        if not isinstance(name, str) or not name or len(name) > limits.max_key_len:
            problems.add("%s%s" % (path, key), "has an empty, non-string or too long key %s" % shown(name))
        elif not isinstance(item, str):
            problems.add("%s%s.%s" % (path, key, name), "must be a string, got %s" % _type_name(item))
        elif len(item) > limits.max_value_len:
            problems.add("%s%s.%s" % (path, key, name),
                         "is %d characters long; at most %d are allowed" % (len(item), limits.max_value_len))


def _check_time(problems: _Problems, data: Mapping[str, Any], key: str, path: str) -> None:
    if key not in data:
        problems.add(path + key, "is required")
        return
    value = data[key]
    if not isinstance(value, str):
        problems.add(path + key, "must be an RFC 3339 time string, got %s" % _type_name(value))
    elif not _RFC3339_RE.fullmatch(value):
        problems.add(path + key, "is not an RFC 3339 time: %s" % shown(value))


def _check_alert(problems: _Problems, alert: Any, path: str, limits: PayloadLimits) -> None:
    if not isinstance(alert, dict):
        problems.add(path.rstrip("."), "must be an object, got %s" % _type_name(alert))
        return
    if "status" not in alert:
        problems.add(path + "status", "is required")
    elif alert["status"] not in STATUSES:
        problems.add(path + "status", "must be 'firing' or 'resolved', got %s" % shown(alert["status"]))
    _check_string_map(problems, alert, "labels", path, limits)
    _check_string_map(problems, alert, "annotations", path, limits, required=False)
    _check_time(problems, alert, "startsAt", path)
    _check_time(problems, alert, "endsAt", path)
    if "fingerprint" not in alert:
        problems.add(path + "fingerprint", "is required")
    elif not isinstance(alert["fingerprint"], str) or not _FINGERPRINT_RE.fullmatch(alert["fingerprint"]):
        problems.add(path + "fingerprint", "must be 1-128 characters out of letters, digits, '_', '.', ':' and '-', got %s"
                     % shown(alert["fingerprint"]))
    _check_str(problems, alert, "generatorURL", path, required=False)


def validate_payload(payload: Any, limits: PayloadLimits = DEFAULT_LIMITS) -> Dict[str, Any]:
    """Return ``payload`` if it is a valid Alertmanager webhook payload (version ``"4"``), else raise :class:`AlertPayloadError`.

    Required: ``version`` (``"4"``), ``status``, ``receiver``, ``alerts`` (a list of at most ``limits.max_alerts``
    objects, each with ``status``, ``labels``, ``startsAt``, ``endsAt`` and ``fingerprint``; ``annotations`` and
    ``generatorURL`` optional), ``groupLabels``, ``commonLabels``. Optional: ``commonAnnotations``, ``externalURL``,
    ``groupKey``, ``truncatedAlerts`` (a non-negative integer). Unknown keys are ignored.
    """
    problems = _Problems()
    if not isinstance(payload, dict):
        raise AlertPayloadError([("(payload)", "must be a JSON object, got %s" % _type_name(payload))])
    if "version" not in payload:
        problems.add("version", "is required")
    elif payload["version"] != PAYLOAD_VERSION:
        problems.add("version", "must be %r, got %s" % (PAYLOAD_VERSION, shown(payload["version"])))
    if "status" not in payload:
        problems.add("status", "is required")
    elif payload["status"] not in STATUSES:
        problems.add("status", "must be 'firing' or 'resolved', got %s" % shown(payload["status"]))
    _check_str(problems, payload, "receiver", "")
    _check_str(problems, payload, "externalURL", "", required=False)
    _check_str(problems, payload, "groupKey", "", required=False, max_len=65536)
    _check_string_map(problems, payload, "groupLabels", "", limits)
    _check_string_map(problems, payload, "commonLabels", "", limits)
    _check_string_map(problems, payload, "commonAnnotations", "", limits, required=False)
    if "truncatedAlerts" in payload:
        value = payload["truncatedAlerts"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.add("truncatedAlerts", "must be a non-negative integer, got %s" % shown(value))
    alerts = payload.get("alerts")
    if "alerts" not in payload:
        problems.add("alerts", "is required")
    elif not isinstance(alerts, list):
        problems.add("alerts", "must be a list, got %s" % _type_name(alerts))
    elif len(alerts) > limits.max_alerts:
        problems.add("alerts", "holds %d alerts; at most %d are allowed" % (len(alerts), limits.max_alerts))
    else:
        for index, alert in enumerate(alerts):
            _check_alert(problems, alert, "alerts[%d]." % index, limits)
    if problems.items:
        raise AlertPayloadError(problems.items)
    return payload


# ---------------------------------------------------------------------------------------------------------------------
# Normalization
# ---------------------------------------------------------------------------------------------------------------------

class _Reject(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def check_node_name(value: Any, field_name: str = "node") -> str:
    """Return ``value`` if it is a valid node name (RFC 1123 subdomain, whole string: no trailing newline), else raise
    :class:`kube.names.K8sInvalidName`."""
    name = validate_node_name(value, field_name)
    if not _NODE_RE.fullmatch(name):
        raise K8sInvalidName("%s is not a valid RFC 1123 subdomain (it holds a character outside [a-z0-9.-])" % field_name,
                             field_name, value)
    return name


def _node_of(labels: Mapping[str, str]) -> str:
    for key in NODE_LABELS:
        value = labels.get(key)
        if value is None or value == "":
            continue
        if key == "instance":
            match = _PORT_SUFFIX_RE.fullmatch(value)
            if match:
                value = match.group(1)
        try:
            return check_node_name(value, key)
        except K8sInvalidName:
            raise _Reject("invalid_node", "label %s is not a valid node name (RFC 1123 subdomain): %s" % (key, shown(value))) from None
    raise _Reject("missing_node", "the alert has none of the labels %s" % ", ".join(NODE_LABELS))


def _optional(labels: Mapping[str, str], keys: Tuple[str, ...], pattern: Any, what: str) -> Optional[str]:
    for key in keys:
        value = labels.get(key)
        if value is None or value == "":
            continue
        if not pattern.fullmatch(value):
            raise _Reject("invalid_label", "label %s is not %s: %s" % (key, what, shown(value)))
        return value
    return None


def _pods_of(labels: Mapping[str, str]) -> List[Dict[str, str]]:
    pod = labels.get("pod") or ""
    namespace = labels.get("namespace") or ""
    if not pod:
        return []
    if not namespace:
        raise _Reject("invalid_label", "label pod %s comes without a namespace label" % shown(pod))
    try:
        validate_subdomain(pod, "pod")
        validate_namespace(namespace, "namespace")
        if not _NODE_RE.fullmatch(pod) or not _NODE_RE.fullmatch(namespace):
            raise K8sInvalidName("holds a character outside [a-z0-9.-]", "pod", pod)
    except K8sInvalidName:
        raise _Reject("invalid_label", "labels pod/namespace are not valid Kubernetes names: %s/%s"
                      % (shown(namespace), shown(pod))) from None
    return [{"namespace": namespace, "name": pod}]


def _code(text: Optional[str]) -> Optional[int]:
    """The number of a ``code`` label: digits as they are, a ``DCGM_FR_*`` name through the DCGM catalog (None when
    the catalog does not know it; the name stays in ``labels``)."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    entry = lookup_dcgm_error(text)
    return entry.code if entry.known else None


def looks_like_template(value: Any) -> bool:
    """Whether a string holds a Jinja2 delimiter (``{{``, ``{%`` or ``{#``)."""
    return isinstance(value, str) and any(marker in value for marker in _TEMPLATE_MARKERS)


def _untemplated(value: str) -> str:
    return "" if looks_like_template(value) else value


def normalize_alert(alert: Mapping[str, Any]) -> Dict[str, Any]:
    """The normalized event of one VALIDATED alert (see :data:`EVENT_KEYS`); raises ``_Reject`` for unsafe labels.

    ``fault_class`` outside :data:`gpu.fault_classes.FAULT_CLASSES` becomes ``unknown`` (the original stays in
    ``labels``). ``ends_at`` is None for a firing alert and for Alertmanager's zero time ``0001-01-01T00:00:00Z``.
    A label whose key or value holds template text (``{{``, ``{%``, ``{#``) is left out of the event's ``labels`` and
    named in ``dropped_labels``; such an ``alertname`` or ``severity`` becomes ``""``.
    """
    labels = dict(alert["labels"])
    node = _node_of(labels)
    gpu = _optional(labels, ("gpu",), _GPU_RE, "a GPU index (digits)")
    uuid = _optional(labels, ("UUID", "uuid"), _UUID_RE, "a GPU or MIG UUID (GPU-... / MIG-...)")
    code_text = _optional(labels, ("code",), _CODE_RE, "an XID/DCGM code (digits or a DCGM_FR_* name)")
    action = labels.get("action") or ""
    if not _ACTION_RE.fullmatch(action):
        raise _Reject("invalid_label", "label action is not a label value (letters, digits, '-', '_', '.'): %s" % shown(action))
    fault_class = labels.get("fault_class") or "unknown"
    if fault_class not in FAULT_CLASSES:
        fault_class = "unknown"
    dropped = [k for k, v in labels.items() if looks_like_template(k) or looks_like_template(v)]
    status = alert["status"]
    ends_at = alert["endsAt"]
    if status == "firing" or _ZERO_TIME_RE.fullmatch(ends_at):
        ends_at = None
    return {
        "node": node,
        "gpu": gpu,
        "uuid": uuid,
        "code": _code(code_text),
        "fault_class": fault_class,
        "action": _untemplated(action),
        "status": status,
        "fingerprint": alert["fingerprint"],
        "starts_at": alert["startsAt"],
        "ends_at": ends_at,
        "pods": _pods_of(labels),
        "alertname": _untemplated(labels.get("alertname", "")),
        "severity": _untemplated(labels.get("severity", "")),
        "labels": {k: v for k, v in labels.items() if k not in dropped},
        # a key that is itself template text is named by a placeholder, never by its text
        "dropped_labels": sorted("(template text)" if looks_like_template(k) else k for k in dropped),
    }


def normalize_payload(payload: Any, limits: PayloadLimits = DEFAULT_LIMITS) -> List[Normalized]:
    """Validate ``payload`` (:class:`AlertPayloadError` if it is not valid), then one result per alert, in order:
    the normalized event dict, or a :class:`Rejection` saying why the alert is not passed on."""
    validate_payload(payload, limits)
    out: List[Normalized] = []
    for index, alert in enumerate(payload["alerts"]):
        try:
            out.append(normalize_alert(alert))
        except _Reject as exc:
            out.append(Rejection(reason=exc.reason, message=exc.message, fingerprint=alert["fingerprint"],
                                 status=alert["status"], alertname=_untemplated(str(alert["labels"].get("alertname", ""))),
                                 index=index))
    return out


def split_results(results: List[Normalized]) -> Tuple[List[Dict[str, Any]], List[Rejection]]:
    """``(events, rejections)`` of :func:`normalize_payload`'s results."""
    events = [item for item in results if isinstance(item, dict)]
    rejections = [item for item in results if isinstance(item, Rejection)]
    return events, rejections


# ---------------------------------------------------------------------------------------------------------------------
# Dedup
# ---------------------------------------------------------------------------------------------------------------------

def _dedup_key(event: Mapping[str, Any]) -> Tuple[str, str, str]:
    """``(fingerprint, status, starts_at)``: a new occurrence of an alert (a new ``startsAt``) is a new event."""
    return (event["fingerprint"], event["status"], str(event.get("starts_at") or ""))


class Deduplicator:
    """Remembers the ``(fingerprint, status, starts_at)`` of events passed on, for ``window_s`` seconds, at most ``max_entries``.

    Alertmanager re-sends every alert of a group on each ``group_interval`` change and ``repeat_interval``; those
    re-sends are duplicates. Passing on one status forgets the other of the same occurrence, so an alert that
    resolves and fires again is passed on again; a new occurrence (a new ``starts_at``) is never a duplicate. The
    caller supplies ``now`` (monotonic seconds): no clock here.
    """

    def __init__(self, window_s: float = 600.0, max_entries: int = 100000) -> None:
        if isinstance(window_s, bool) or not isinstance(window_s, (int, float)) or window_s < 0:
            raise InputError("dedup window must be a non-negative number of seconds", field="dedup_window_s", value=window_s)
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise InputError("dedup memory must be a positive integer", field="dedup_max_entries", value=max_entries)
        self.window_s = float(window_s)
        self.max_entries = max_entries
        self._seen: "OrderedDict[Tuple[str, str, str], float]" = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def _expire(self, now: float) -> None:
        while self._seen:
            key, seen_at = next(iter(self._seen.items()))
            if now - seen_at < self.window_s:
                break
            del self._seen[key]

    def is_duplicate(self, event: Mapping[str, Any], now: float) -> bool:
        """Whether ``event``'s ``(fingerprint, status, starts_at)`` was recorded less than ``window_s`` ago (records
        nothing)."""
        self._expire(now)
        return _dedup_key(event) in self._seen

    def record(self, event: Mapping[str, Any], now: float) -> None:
        """Remember ``event`` as passed on at ``now``; forget the other status of the same occurrence."""
        key = _dedup_key(event)
        other = (key[0], "resolved" if key[1] == "firing" else "firing", key[2])
        self._seen.pop(other, None)
        self._seen.pop(key, None)
        self._seen[key] = now
        while len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)

    def split(self, events: List[Dict[str, Any]], now: float) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
        """``(fresh, duplicates)`` of ``events``, recording nothing (a duplicate also within ``events`` itself)."""
        fresh: List[Dict[str, Any]] = []
        duplicates: List[Dict[str, Any]] = []
        keys = set()
        for event in events:
            key = _dedup_key(event)
            if key in keys or self.is_duplicate(event, now):
                duplicates.append(event)
            else:
                keys.add(key)
                fresh.append(event)
        return fresh, duplicates


# ---------------------------------------------------------------------------------------------------------------------
# Batching
# ---------------------------------------------------------------------------------------------------------------------

@dataclass
class Batch:
    """Events of one status collected in one window."""

    status: str
    events: List[Dict[str, Any]] = field(default_factory=list)
    opened_at: float = 0.0

    def nodes(self) -> List[str]:
        return sorted({event["node"] for event in self.events})

    def to_event(self, batch_id: int, **extra: Any) -> Dict[str, Any]:
        """The batch as one rulebook event: ``batch`` (the events), ``status``, ``nodes``, ``count``, ``batch_id``."""
        out = {"batch": list(self.events), "status": self.status, "nodes": self.nodes(), "count": len(self.events),
               "batch_id": batch_id}
        out.update(extra)
        return out


class Batcher:
    """Collects events into batches: a window opens with the first event and closes ``window_s`` later, or
    ``quiet_s`` after its latest event when no other came meanwhile (a lone alert is not held for the whole window,
    a storm that keeps arriving still fills it), or as soon as it holds ``max_size`` events; then every status
    collected is handed out as one :class:`Batch`, in the order each status first arrived (so a firing alert and its
    resolution keep their order). ``quiet_s`` None (or not below ``window_s``) keeps the fixed window. A window that
    opens after a calm of at least ``window_s`` (no event at all meanwhile) and holds the alerts of ONE node closes
    ``first_quiet_s`` after its latest event instead (when set, and when shorter than ``quiet_s``): a lone fault after a
    calm is handed on at once. The first alert of a second node turns the window back to ``quiet_s``: the start of a
    storm (several nodes' notifications together) still becomes one batch, not a small batch whose run the rest of the
    storm would wait for. ``now`` is the caller's monotonic clock.
    """

    def __init__(self, window_s: float = 2.0, max_size: int = 500, quiet_s: Optional[float] = None,
                 first_quiet_s: Optional[float] = None) -> None:
        if isinstance(window_s, bool) or not isinstance(window_s, (int, float)) or window_s < 0:
            raise InputError("batch window must be a non-negative number of seconds", field="batch_window_s", value=window_s)
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise InputError("batch size must be a positive integer", field="batch_max", value=max_size)
        if quiet_s is not None and (isinstance(quiet_s, bool) or not isinstance(quiet_s, (int, float)) or quiet_s < 0):
            raise InputError("batch quiet time must be a non-negative number of seconds", field="batch_quiet_s", value=quiet_s)
        if first_quiet_s is not None and (isinstance(first_quiet_s, bool) or not isinstance(first_quiet_s, (int, float)) or first_quiet_s < 0):
            raise InputError("first batch quiet time must be a non-negative number of seconds", field="batch_first_quiet_s", value=first_quiet_s)
        self.window_s = float(window_s)
        self.max_size = max_size
        self.quiet_s = None if quiet_s is None else float(quiet_s)
        self.first_quiet_s = None if first_quiet_s is None else float(first_quiet_s)
        self._previous_at: Optional[float] = None
        self._leading = False
        self._nodes: set = set()
        self._groups: "OrderedDict[str, Batch]" = OrderedDict()
        self._count = 0
        self._opened_at: Optional[float] = None
        self._last_at: Optional[float] = None

    def __len__(self) -> int:
        return self._count

    def deadline(self) -> Optional[float]:
        """When the open window closes (None when no event is waiting)."""
        if self._opened_at is None:
            return None
        closes = self._opened_at + self.window_s
        quiet = self.quiet_s
        if self._leading and len(self._nodes) <= 1 and self.first_quiet_s is not None:
            quiet = self.first_quiet_s if quiet is None else min(quiet, self.first_quiet_s)
        if quiet is not None and self._last_at is not None:
            closes = min(closes, self._last_at + quiet)
        return closes

    def add(self, event: Dict[str, Any], now: float) -> List[Batch]:
        """Add one event; returns the batches of the window when it just reached ``max_size`` (else [])."""
        if self._opened_at is None:
            self._opened_at = now
            self._leading = self._previous_at is None or now - self._previous_at >= self.window_s
        self._last_at = self._previous_at = now
        self._nodes.add(event.get("node"))
        group = self._groups.get(event["status"])
        if group is None:
            group = self._groups[event["status"]] = Batch(status=event["status"], opened_at=self._opened_at)
        group.events.append(event)
        self._count += 1
        return self.flush() if self._count >= self.max_size else []

    def due(self, now: float) -> bool:
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def poll(self, now: float) -> List[Batch]:
        """The window's batches when it is due, else []."""
        return self.flush() if self.due(now) else []

    def flush(self) -> List[Batch]:
        """Every batch collected so far (one per status, in arrival order), emptying the batcher."""
        batches = list(self._groups.values())
        self._groups = OrderedDict()
        self._count = 0
        self._opened_at = None
        self._last_at = None
        self._leading = False
        self._nodes = set()
        return batches
