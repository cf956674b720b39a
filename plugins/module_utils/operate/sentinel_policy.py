# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The sentinel's remediation policy: alert events + rules + what is recorded on the nodes -> decisions (pure).

Input: normalized alert events (``{node, gpu, uuid, code, fault_class, action, status, fingerprint, starts_at, ends_at,
pods, alertname, severity, labels}``), a ruleset and each node's recorded state (``node_incident`` ``get``:
labels, open incident, ended incidents, remediation attempts, recently recorded alerts). Output: one decision per
node, grouped into batches by action, plus the resolved alerts (releases), the recorded ones, the skipped ones (stale,
replayed, opted out, ...) and the rejected ones (malformed; never acted on).

Rules (``{name, match: {fault_class, code, labels, severity, alertname}, action, priority, dry_run, rate}``) are tried in
ascending ``priority`` (ties: list order); the first that matches an alert decides its action. Safety rules that no
ruleset can override:

* a node labelled ``dsxos.io/sentinel=disabled`` is never acted on: its alerts are recorded;
* an alert of an unknown fault class is recorded only;
* an ``application`` alert never condemns a node on its own: only a rate rule (``rate: {count: N, window_s: W}``: N
  distinct matching alerts of the same node within W seconds, counting the alerts recorded on the node) may act on it;
* a stale alert (started before the open incident's earliest alert and not part of it) or a replay (already handled by
  an ended incident) never acts;
* a node with ``attempt_cap`` remediation attempts within ``attempt_window_s`` is not remediated again: it goes to
  ``needs-attention`` and stays quarantined;
* ``destructive: false`` (the default) holds back every drain and remediation: only record and quarantine happen.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_classes import FAULT_CLASSES
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_node_name
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import pod_refs
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import NEEDS_ATTENTION
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_replay import classify_firing, classify_resolved
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import (
    IncidentError, format_time, incident_id_for, incident_reason, parse_rfc3339, validate_fingerprint, validate_text,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents

ACTIONS = ("record", "quarantine", "quarantine_drain", "partial_drain", "reset_gpu", "reboot", "replace", "contact_support",
           "driver_reload")
#: how strong an action is (ties between rules of the same priority go to the stronger one)
_STRENGTH = ("record", "quarantine", "partial_drain", "quarantine_drain", "reset_gpu", "driver_reload", "reboot", "contact_support", "replace")
ACTION_RANK = {a: i for i, a in enumerate(_STRENGTH)}
APPLICATION = "application"
#: certification alerts (NodeCertificationFailed: the node failed the Certify phase) quarantine at most: a failed
#: certification is a verdict to look at, never a reason to drain, reset, reboot or replace on its own
CERTIFICATION = "certification"
UNKNOWN = "unknown"
DEFAULT_PRIORITY = 100
MATCH_KEYS = ("fault_class", "code", "labels", "severity", "alertname")
RULE_KEYS = ("name", "match", "action", "priority", "dry_run", "rate")
MAX_EVENTS = 5000
MAX_PODS = 512
_NODE_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SHORT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:/@()+-]{0,255}")
_UUID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,79}")
_CLASS_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


class SentinelPolicyError(InputError):
    """A malformed rule or policy option (names the field and value); events are rejected one by one instead."""


@dataclass(frozen=True)
class Steps:
    """What an action does to a node after it is quarantined."""

    quarantine: bool
    drain: str
    remediate: bool
    recertify: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain form."""
        return {"quarantine": self.quarantine, "drain": self.drain, "remediate": self.remediate, "recertify": self.recertify}


#: per action: quarantine?, drain (none | partial: the pods on the faulty GPUs, see ``drain_pods`` | full), run the remediation
#: task file?, recertify and return?
ACTION_STEPS = {
    "record": Steps(False, "none", False, False),
    "quarantine": Steps(True, "none", False, False),
    "quarantine_drain": Steps(True, "full", False, False),
    "partial_drain": Steps(True, "partial", False, False),
    "reset_gpu": Steps(True, "partial", True, True),
    "driver_reload": Steps(True, "full", True, True),
    "reboot": Steps(True, "full", True, True),
    "replace": Steps(True, "full", True, False),
    "contact_support": Steps(True, "none", True, False),
}
QUARANTINE_ONLY = Steps(True, "none", False, False)


def steps_for(action: str, destructive: bool) -> tuple[Steps, list[str]]:
    """The steps of ``action``; without ``destructive`` only the quarantine is left (the rest is listed as held back)."""
    steps = ACTION_STEPS[action]
    if destructive or not steps.quarantine:
        return steps, []
    held = ([f"drain ({steps.drain})"] if steps.drain != "none" else []) + ([f"remediation {action}"] if steps.remediate else []) \
        + (["recertification"] if steps.recertify else [])
    return QUARANTINE_ONLY, held


# ---------------------------------------------------------------------------------------------------- events


class EventRejected(Exception):
    """One malformed event (the message says why); reported, never acted on."""


@dataclass(frozen=True)
class Event:  # pylint: disable=too-many-instance-attributes
    """A validated alert event."""

    node: str
    status: str
    fingerprint: str
    starts_at: str
    fault_class: str
    gpu: Optional[int] = None
    uuid: Optional[str] = None
    code: Optional[int] = None
    action: Optional[str] = None
    ends_at: Optional[str] = None
    alertname: str = ""
    severity: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    pods: tuple[tuple[str, str], ...] = ()
    index: int = -1
    manual: bool = False

    @property
    def start_s(self) -> float:
        """``starts_at`` as epoch seconds."""
        return parse_rfc3339(self.starts_at)

    def to_dict(self) -> dict[str, Any]:
        """The normalized event (contract form)."""
        return {"node": self.node, "gpu": None if self.gpu is None else str(self.gpu), "uuid": self.uuid, "code": self.code,
                "fault_class": self.fault_class, "action": self.action, "status": self.status, "fingerprint": self.fingerprint,
                "starts_at": self.starts_at, "ends_at": self.ends_at, "pods": [{"namespace": n, "name": p} for n, p in self.pods],
                "alertname": self.alertname, "severity": self.severity, "labels": dict(self.labels)}

    def describe(self) -> str:
        """``XidCritical fatal-hardware GPU 3 code 79`` (for reasons and messages)."""
        parts = [self.alertname or "alert", self.fault_class]
        if self.gpu is not None:
            parts.append(f"GPU {self.gpu}")
        if self.code is not None:
            parts.append(f"code {self.code}")
        return " ".join(parts)


def _text(raw: Mapping[str, Any], key: str, pattern: Any, what: str, optional: bool = True) -> Optional[str]:
    value = raw.get(key)
    if value is None or (optional and value == ""):
        if optional:
            return None
        raise EventRejected(f"{key} is required")
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise EventRejected(f"{key} must be {what}, got {value!r}"[:300])
    return value


def _node(value: Any) -> str:
    try:
        name = validate_node_name(value, "node")
    except K8sError as err:
        raise EventRejected(err.message) from None
    if not _NODE_RE.fullmatch(name):
        raise EventRejected(f"node is not a valid RFC 1123 subdomain (whole string), got {value!r}"[:300])
    return name


def _gpu(value: Any) -> Optional[int]:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise EventRejected(f"gpu must be a GPU index such as '3', got {value!r}")
    if isinstance(value, int):
        index = value
    elif isinstance(value, str) and re.fullmatch(r"[0-9]{1,4}", value):
        index = int(value)
    else:
        raise EventRejected(f"gpu must be a GPU index such as '3', got {value!r}"[:300])
    if not 0 <= index < 1024:
        raise EventRejected(f"gpu index must be 0-1023, got {index}")
    return index


def _code(value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 31:
        raise EventRejected(f"code must be an integer (XID or DCGM error code) or null, got {value!r}"[:300])
    return value


def _labels(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping) or len(value) > 128:
        raise EventRejected("labels must be a mapping of at most 128 string labels")
    out = []
    for key, val in value.items():
        if not isinstance(key, str) or not isinstance(val, str) or not key or len(key) > 256 or len(val) > 1024 \
                or any(ord(c) < 32 for c in key + val):
            raise EventRejected(f"labels must map strings to strings without control characters, got {key!r}: {val!r}"[:300])
        out.append((key, val))
    return tuple(sorted(out))


def _pods(value: Any) -> tuple[tuple[str, str], ...]:
    """An event's ``pods``: at most MAX_PODS, each validated by :func:`~.drain_policy.pod_refs` (the drain reads the same)."""
    if value is not None and (not isinstance(value, (list, tuple)) or len(value) > MAX_PODS):
        raise EventRejected(f"pods must be a list of at most {MAX_PODS} {{namespace, name}}")
    try:
        pods = pod_refs(value, "pods")
    except K8sError as err:
        raise EventRejected(err.message) from None
    for index, (namespace, name) in enumerate(pods):
        if not _NODE_RE.fullmatch(name) or not _NODE_RE.fullmatch(namespace):
            raise EventRejected(f"pods[{index}] has a name or namespace with trailing characters")
    return pods


def validate_event(raw: Any, index: int = -1) -> Event:
    """A normalized alert event, validated; :class:`EventRejected` says what is wrong."""
    if not isinstance(raw, Mapping):
        raise EventRejected(f"an event must be a mapping, got {type(raw).__name__}")
    node = _node(raw.get("node"))
    status = raw.get("status")
    if status not in ("firing", "resolved"):
        raise EventRejected(f"status must be firing or resolved, got {status!r}"[:300])
    try:
        fingerprint = validate_fingerprint(raw.get("fingerprint"))
        starts_at = str(raw.get("starts_at"))
        parse_rfc3339(raw.get("starts_at"), "starts_at")
        ends_at = raw.get("ends_at") or None
        if ends_at is not None:
            parse_rfc3339(ends_at, "ends_at")
    except IncidentError as err:
        raise EventRejected(err.message + f", got {err.value!r}"[:200]) from None
    fault_class = _text(raw, "fault_class", _CLASS_RE, "a fault class such as fatal-hardware") or UNKNOWN
    return Event(node=node, status=str(status), fingerprint=fingerprint, starts_at=starts_at, fault_class=fault_class,
                 gpu=_gpu(raw.get("gpu")), uuid=_text(raw, "uuid", _UUID_RE, "a GPU UUID"), code=_code(raw.get("code")),
                 action=_text(raw, "action", _SHORT_RE, "a short action name"), ends_at=ends_at,
                 alertname=_text(raw, "alertname", _SHORT_RE, "an alert name") or "",
                 severity=_text(raw, "severity", _SHORT_RE, "a severity") or "", labels=_labels(raw.get("labels")),
                 pods=_pods(raw.get("pods")), index=index)


def _summary(raw: Any) -> dict[str, Any]:
    """What a rejected event looked like (bounded, never echoed in full)."""
    if not isinstance(raw, Mapping):
        return {"type": type(raw).__name__}
    return {k: (repr(raw.get(k))[:120]) for k in ("node", "fingerprint", "status", "fault_class") if k in raw}


# ---------------------------------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:  # pylint: disable=too-many-instance-attributes
    """One validated rule."""

    name: str
    action: str
    priority: int = DEFAULT_PRIORITY
    dry_run: bool = False
    fault_classes: Optional[frozenset[str]] = None
    codes: Optional[frozenset[int]] = None
    labels: tuple[tuple[str, str], ...] = ()
    severities: Optional[frozenset[str]] = None
    alertnames: Optional[frozenset[str]] = None
    rate_count: int = 0
    rate_window_s: float = 0.0
    order: int = 0

    @property
    def is_rate(self) -> bool:
        """A rate rule (acts on N alerts within W seconds)."""
        return self.rate_count > 0

    def matches(self, event: Event) -> bool:
        """Does the alert match every condition of ``match``?"""
        if self.fault_classes is not None and event.fault_class not in self.fault_classes:
            return False
        if self.codes is not None and event.code not in self.codes:
            return False
        if self.severities is not None and event.severity not in self.severities:
            return False
        if self.alertnames is not None and event.alertname not in self.alertnames:
            return False
        labels = dict(event.labels)
        return all(labels.get(k) == v for k, v in self.labels)

    def to_dict(self) -> dict[str, Any]:
        """Plain form."""
        match: dict[str, Any] = {}
        if self.fault_classes is not None:
            match["fault_class"] = sorted(self.fault_classes)
        if self.codes is not None:
            match["code"] = sorted(self.codes)
        if self.labels:
            match["labels"] = dict(self.labels)
        if self.severities is not None:
            match["severity"] = sorted(self.severities)
        if self.alertnames is not None:
            match["alertname"] = sorted(self.alertnames)
        out: dict[str, Any] = {"name": self.name, "match": match, "action": self.action, "priority": self.priority, "dry_run": self.dry_run}
        if self.is_rate:
            out["rate"] = {"count": self.rate_count, "window_s": self.rate_window_s}
        return out


#: The built-in ruleset (used when no rules are given). Application alerts act only through the rate rule.
DEFAULT_RULES: tuple[dict[str, Any], ...] = (
    {"name": "fallen-off-bus", "match": {"fault_class": ["fallen-off-bus"]}, "action": "reboot", "priority": 10},
    {"name": "gpu-missing", "match": {"fault_class": ["gpu-missing"]}, "action": "reboot", "priority": 15},
    {"name": "memory", "match": {"fault_class": ["memory"]}, "action": "reset_gpu", "priority": 20},
    {"name": "fatal-hardware", "match": {"fault_class": ["fatal-hardware"]}, "action": "reset_gpu", "priority": 30},
    {"name": "nvlink", "match": {"fault_class": ["nvlink"]}, "action": "quarantine_drain", "priority": 40},
    {"name": "pcie", "match": {"fault_class": ["pcie"]}, "action": "quarantine_drain", "priority": 40},
    {"name": "certification", "match": {"fault_class": ["certification"]}, "action": "quarantine", "priority": 50},
    # a GPU throttling or over temperature for minutes slows every multi-node job on it: no new work, running jobs stay
    {"name": "thermal", "match": {"fault_class": ["thermal"]}, "action": "quarantine", "priority": 55},
    # power capping under a heavy load is often deliberate: recorded (and counted) only
    {"name": "power", "match": {"fault_class": ["power"]}, "action": "record", "priority": 60},
    {"name": "application-storm", "match": {"fault_class": ["application"]}, "action": "quarantine", "priority": 90,
     "rate": {"count": 5, "window_s": 600}},
)


def _str_list(value: Any, where: str) -> frozenset[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or not all(isinstance(i, str) and i for i in items):
        raise SentinelPolicyError(f"{where} must be a non-empty list of strings", field=where, value=value)
    return frozenset(items)


def validate_rule(raw: Any, index: int) -> Rule:  # pylint: disable=too-many-branches
    """One rule; :class:`SentinelPolicyError` names the rule and field."""
    where = f"rules[{index}]"
    if not isinstance(raw, Mapping):
        raise SentinelPolicyError(f"{where} must be a mapping with name, match, action", field=where, value=raw)
    unknown = sorted(set(raw) - set(RULE_KEYS))
    if unknown:
        raise SentinelPolicyError(f"{where} has unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(RULE_KEYS)})",
                                  field=where, value=unknown)
    name = raw.get("name")
    if not isinstance(name, str) or not _SHORT_RE.fullmatch(name):
        raise SentinelPolicyError(f"{where}.name must be a short name", field=f"{where}.name", value=name)
    action = raw.get("action")
    if action not in ACTIONS:
        raise SentinelPolicyError(f"{where}.action must be one of {', '.join(ACTIONS)}", field=f"{where}.action", value=action)
    priority = raw.get("priority", DEFAULT_PRIORITY)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise SentinelPolicyError(f"{where}.priority must be an integer (lower is tried first)", field=f"{where}.priority", value=priority)
    dry_run = raw.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise SentinelPolicyError(f"{where}.dry_run must be true or false", field=f"{where}.dry_run", value=dry_run)
    match = raw.get("match") or {}
    if not isinstance(match, Mapping):
        raise SentinelPolicyError(f"{where}.match must be a mapping", field=f"{where}.match", value=match)
    unknown = sorted(set(match) - set(MATCH_KEYS))
    if unknown:
        raise SentinelPolicyError(f"{where}.match has unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(MATCH_KEYS)})",
                                  field=f"{where}.match", value=unknown)
    classes = None
    if "fault_class" in match:
        classes = _str_list(match["fault_class"], f"{where}.match.fault_class")
        bad = sorted(classes - set(FAULT_CLASSES))
        if bad:
            raise SentinelPolicyError(f"{where}.match.fault_class names unknown fault class(es) {', '.join(bad)} "
                                      f"(known: {', '.join(FAULT_CLASSES)})", field=f"{where}.match.fault_class", value=bad)
    codes = None
    if "code" in match:
        raw_codes = match["code"] if isinstance(match["code"], (list, tuple)) else [match["code"]]
        if not raw_codes or any(isinstance(c, bool) or not isinstance(c, int) for c in raw_codes):
            raise SentinelPolicyError(f"{where}.match.code must be a non-empty list of integers", field=f"{where}.match.code",
                                      value=match["code"])
        codes = frozenset(raw_codes)
    labels = match.get("labels") or {}
    if not isinstance(labels, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise SentinelPolicyError(f"{where}.match.labels must map strings to strings", field=f"{where}.match.labels", value=labels)
    severities = _str_list(match["severity"], f"{where}.match.severity") if "severity" in match else None
    alertnames = _str_list(match["alertname"], f"{where}.match.alertname") if "alertname" in match else None
    rate_count, rate_window = 0, 0.0
    if raw.get("rate") is not None:
        rate = raw["rate"]
        count = rate.get("count") if isinstance(rate, Mapping) else None
        window = rate.get("window_s") if isinstance(rate, Mapping) else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 1 or isinstance(window, bool) \
                or not isinstance(window, (int, float)) or window <= 0:
            raise SentinelPolicyError(f"{where}.rate must be {{count: N >= 1, window_s: seconds > 0}}", field=f"{where}.rate", value=rate)
        rate_count, rate_window = count, float(window)
    return Rule(name=name, action=str(action), priority=priority, dry_run=dry_run, fault_classes=classes, codes=codes,
                labels=tuple(sorted(labels.items())), severities=severities, alertnames=alertnames, rate_count=rate_count,
                rate_window_s=rate_window, order=index)


def validate_rules(raw: Any) -> list[Rule]:
    """A ruleset (empty or None: :data:`DEFAULT_RULES`), sorted by priority then list order; names must be unique."""
    items = list(DEFAULT_RULES) if not raw else raw
    if not isinstance(items, (list, tuple)):
        raise SentinelPolicyError("rules must be a list of rules", field="rules", value=type(raw).__name__)
    rules = [validate_rule(r, i) for i, r in enumerate(items)]
    names = [r.name for r in rules]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SentinelPolicyError(f"rule names must be unique: {', '.join(dupes)}", field="rules", value=dupes)
    return sorted(rules, key=lambda r: (r.priority, r.order))


# ---------------------------------------------------------------------------------------------------- decisions


@dataclass
class Decision:  # pylint: disable=too-many-instance-attributes
    """What happens to one node."""

    node: str
    #: open | resume | join | needs_attention | record
    kind: str
    action: str = "record"
    rule: str = ""
    incident: Optional[str] = None
    reason: str = ""
    events: list[Event] = field(default_factory=list)
    join_events: list[Event] = field(default_factory=list)
    record_events: list[Event] = field(default_factory=list)
    dry_run: bool = False
    steps: Steps = ACTION_STEPS["record"]
    held_back: list[str] = field(default_factory=list)
    priority: int = DEFAULT_PRIORITY
    state: Optional[str] = None

    @property
    def acts(self) -> bool:
        """Does this decision change the node (beyond recording)?"""
        return self.kind in ("open", "resume", "needs_attention") and not self.dry_run

    def to_dict(self) -> dict[str, Any]:
        """Plain form (the role's loop item)."""
        gpus = sorted({e.gpu for e in self.events if e.gpu is not None})
        pods = [{"namespace": n, "name": p} for n, p in sorted({p for e in self.events for p in e.pods})]
        # a partial drain evicts only the mapped pods when every faulty GPU has its pods named by some alert; one alert
        # without a GPU, or a GPU no alert maps a pod to (the exporter's mapping is off, or an aggregating rule dropped
        # the pod label), and it evicts every GPU pod of the node (drain_pods empty): a GPU reset needs its GPU free
        named = {e.gpu for e in self.events if e.pods and e.gpu is not None}
        mapped = bool(pods) and all(e.gpu is not None and e.gpu in named for e in self.events)
        return {"node": self.node, "kind": self.kind, "action": self.action, "rule": self.rule, "incident": self.incident,
                "reason": self.reason, "state": self.state, "events": [e.to_dict() for e in self.events],
                "join_events": [e.to_dict() for e in self.join_events], "record_events": [e.to_dict() for e in self.record_events],
                "gpus": gpus, "pods": pods, "drain_pods": pods if mapped else [], "dry_run": self.dry_run,
                "steps": self.steps.to_dict(), "held_back": list(self.held_back), "acts": self.acts}


@dataclass(frozen=True)
class PolicyOptions:
    """Run-wide settings."""

    destructive: bool = False
    dry_run: bool = False
    attempt_cap: int = 3
    attempt_window_s: float = 86400.0
    now: float = 0.0


def _reason(incident: str, action: str, rule: str, event: Event) -> str:
    return validate_text(incident_reason(incident, f"{action} (rule {rule}): {event.describe()}"), "reason")


def _first_rule(rules: Sequence[Rule], event: Event) -> Optional[Rule]:
    return next((r for r in rules if not r.is_rate and r.matches(event)), None)


def _rate_hits(rule: Rule, events: Sequence[Event], view: NodeIncidents) -> list[Event]:
    """The node's alerts that fire ``rule`` (N distinct alerts within W s up to the newest), else []."""
    mine = [e for e in events if rule.matches(e)]
    if not mine:
        return []
    newest = max(e.start_s for e in mine)
    start = newest - rule.rate_window_s
    seen = {(e.fingerprint, e.starts_at) for e in mine if e.start_s > start}
    for entry in view.recent:
        if rule.fault_classes is not None and entry.get("fault_class") not in rule.fault_classes:
            continue
        try:
            moment = parse_rfc3339(entry.get("starts_at"))
        except IncidentError:
            continue
        if start < moment <= newest:
            seen.add((str(entry.get("fingerprint")), str(entry.get("starts_at"))))
    if len(seen) < rule.rate_count:
        return []
    return [e for e in mine if e.start_s > start]


@dataclass
class NodeOutcome:
    """The decision of one node and the alerts it skipped."""

    decision: Optional[Decision]
    skipped: list[dict[str, Any]] = field(default_factory=list)


def _skip(event: Event, reason: str, verdict: str = "skipped") -> dict[str, Any]:
    return {"node": event.node, "fingerprint": event.fingerprint, "starts_at": event.starts_at, "verdict": verdict, "reason": reason}


def _continue_open(node: str, view: NodeIncidents, usable: list[tuple[Event, str]], options: PolicyOptions) -> Decision:
    current = view.current
    if current is None:
        raise SentinelPolicyError(f"node {node}: no open incident to continue", node=node)
    resume = [e for e, kind in usable if kind == "resume"]
    join = [e for e, kind in usable if kind == "join"]
    action = current.action if current.action in ACTION_STEPS else "quarantine"
    steps, held = steps_for(action, options.destructive)
    kind = "resume" if resume else "join"
    return Decision(node=node, kind=kind, action=action, rule=current.rule, incident=current.id, reason=current.reason,
                    events=resume, join_events=join, dry_run=options.dry_run, steps=steps, held_back=held, state=current.state)


def decide_node(node: str, events: Sequence[Event], view: NodeIncidents, rules: Sequence[Rule], options: PolicyOptions) -> NodeOutcome:
    """The decision for one node from its valid firing alerts."""
    outcome = NodeOutcome(None)
    if not view.exists:
        outcome.skipped = [_skip(e, f"node {node} not found", "missing") for e in events]
        return outcome
    usable: list[tuple[Event, str]] = []
    for event in events:
        verdict = classify_firing(view, event.fingerprint, event.starts_at)
        if event.manual and view.current is not None:
            usable.append((event, "resume"))
        elif verdict.kind in ("stale", "replay"):
            outcome.skipped.append(_skip(event, verdict.reason, verdict.kind))
        else:
            usable.append((event, verdict.kind))
    if not usable:
        return outcome
    if view.opted_out:
        outcome.decision = Decision(node=node, kind="record", reason="node opted out (dsxos.io/sentinel=disabled): recorded, never acted on",
                                    record_events=[e for e, dummy in usable])
        return outcome
    if view.current is not None:
        outcome.decision = _continue_open(node, view, usable, options)
        return outcome
    fresh = [e for e, dummy in usable]
    candidates: list[tuple[Rule, list[Event]]] = []
    notes: list[str] = []
    for event in fresh:
        if event.manual:
            continue
        if event.fault_class not in FAULT_CLASSES or event.fault_class == UNKNOWN:
            notes.append(f"{event.fingerprint}: unknown fault class {event.fault_class}: recorded only")
            continue
        rule = _first_rule(rules, event)
        if rule is None:
            notes.append(f"{event.fingerprint}: no rule matched")
            continue
        if event.fault_class == APPLICATION and rule.action != "record":
            notes.append(f"{event.fingerprint}: application alerts never condemn a node on their own (rule {rule.name})")
            continue
        if event.fault_class == CERTIFICATION and rule.action not in ("record", "quarantine"):
            notes.append(f"{event.fingerprint}: a certification alert quarantines at most (rule {rule.name}: {rule.action})")
            rule = replace(rule, action="quarantine")
        candidates.append((rule, [event]))
    for rule in rules:
        if rule.is_rate:
            hits = _rate_hits(rule, [e for e in fresh if not e.manual], view)
            if hits and rule.action not in ("record", "quarantine") and all(e.fault_class == CERTIFICATION for e in hits):
                rule = replace(rule, action="quarantine")
            if hits:
                candidates.append((rule, hits))
    manual = [e for e in fresh if e.manual]
    if manual:
        candidates.append((Rule(name="manual", action=str(manual[0].action or "quarantine"), priority=-1), manual))
    acting = [(r, evs) for r, evs in candidates if r.action != "record"]
    if not acting:
        outcome.decision = Decision(node=node, kind="record", reason="; ".join(notes) or "recorded by rule",
                                    record_events=fresh)
        return outcome
    rule, hits = min(acting, key=lambda c: (c[0].priority, -ACTION_RANK[c[0].action], c[0].order))
    chosen = {e.fingerprint for e in hits}
    for other_rule, evs in acting:
        if other_rule.action != "record":
            chosen.update(e.fingerprint for e in evs)
    acted = [e for e in fresh if e.fingerprint in chosen]
    first = min(hits, key=lambda e: (e.start_s, e.fingerprint))
    incident = incident_id_for(node, first.fingerprint, first.starts_at)
    steps, held = steps_for(rule.action, options.destructive)
    kind = "open"
    reason = _reason(incident, rule.action, rule.name, first)
    state = None
    if ACTION_STEPS[rule.action].remediate and view.attempts_within(options.now, options.attempt_window_s) >= options.attempt_cap:
        kind, state = "needs_attention", NEEDS_ATTENTION
        reason = validate_text(incident_reason(incident, f"needs attention: {options.attempt_cap} remediation attempt(s) within "
                                                         f"{options.attempt_window_s:g} s; {rule.action} (rule {rule.name}) not tried again: "
                                                         f"{first.describe()}"), "reason")
        steps, held = QUARANTINE_ONLY, [f"remediation {rule.action} (attempt cap)"]
    outcome.decision = Decision(node=node, kind=kind, action=rule.action, rule=rule.name, incident=incident, reason=reason, events=acted,
                                record_events=[e for e in fresh if e.fingerprint not in chosen], dry_run=options.dry_run or rule.dry_run,
                                steps=steps, held_back=held, priority=rule.priority, state=state)
    return outcome


def manual_events(nodes: Sequence[Any], reason: str, action: str, now: float) -> list[dict[str, Any]]:
    """Events for a manual run (``sentinel_nodes`` + ``sentinel_reason``): one per node, fingerprint from node and reason."""
    if action not in ACTIONS or action == "record":
        raise SentinelPolicyError(f"manual_action must be one of {', '.join(a for a in ACTIONS if a != 'record')}",
                                  field="manual_action", value=action)
    validate_text(reason, "manual_reason", required=True)
    out = []
    for node in nodes:
        digest = hashlib.sha256(f"{node}\0{reason}".encode("utf-8")).hexdigest()[:16]
        out.append({"node": node, "status": "firing", "fingerprint": f"manual-{digest}", "starts_at": format_time(now),
                    "fault_class": UNKNOWN, "alertname": "manual", "severity": "manual", "action": action, "labels": {"reason": reason}})
    return out


def plan(raw_events: Sequence[Any], raw_rules: Any = None, node_state: Optional[Mapping[str, Any]] = None,  # pylint: disable=too-many-locals
         options: PolicyOptions = PolicyOptions(), manual: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Decisions for a batch of alert events (the ``sentinel_plan`` module)."""
    rules = validate_rules(raw_rules)
    if isinstance(options.attempt_cap, bool) or options.attempt_cap < 0 or options.attempt_window_s <= 0:
        raise SentinelPolicyError("attempt_cap must be >= 0 and attempt_window_s > 0", field="attempt_cap", value=options.attempt_cap)
    if len(raw_events) + len(manual) > MAX_EVENTS:
        raise SentinelPolicyError(f"at most {MAX_EVENTS} events per run, got {len(raw_events) + len(manual)}", field="events",
                                  value=len(raw_events))
    rejected: list[dict[str, Any]] = []
    firing: dict[str, list[Event]] = {}
    resolved: dict[str, list[Event]] = {}
    for index, raw in enumerate(list(raw_events) + list(manual)):
        try:
            event = validate_event(raw, index)
        except EventRejected as err:
            rejected.append({"index": index, "reason": str(err), "event": _summary(raw)})
            continue
        if index >= len(raw_events):
            event = Event(**{**event.__dict__, "manual": True})
        (firing if event.status == "firing" else resolved).setdefault(event.node, []).append(event)
    state = dict(node_state or {})
    views: dict[str, NodeIncidents] = {}
    decisions: list[Decision] = []
    skipped: list[dict[str, Any]] = []
    for node in sorted(set(firing) | set(resolved)):
        try:
            views[node] = NodeIncidents.from_state(node, state.get(node))
        except IncidentError as err:
            for event in firing.get(node, []) + resolved.get(node, []):
                skipped.append(_skip(event, str(err), "unreadable"))
            firing.pop(node, None)
            resolved.pop(node, None)
    for node in sorted(firing):
        outcome = decide_node(node, firing[node], views[node], rules, options)
        skipped.extend(outcome.skipped)
        if outcome.decision is not None:
            decisions.append(outcome.decision)
    releases = []
    for node in sorted(resolved):
        held, ignored, unfinished = [], [], {}
        for event in resolved[node]:
            verdict = classify_resolved(views[node], event.fingerprint, event.starts_at)
            if verdict.kind == "resolve":
                held.append(event)
            elif verdict.kind == "ended" and verdict.incident and views[node].standing().unfinished_release == verdict.incident:
                # closed by a release that did not get to release the quarantine: this release finishes it
                unfinished.setdefault(verdict.incident, []).append(event)
            else:
                ignored.append(_skip(event, verdict.reason, verdict.kind))
        skipped.extend(ignored)
        if held:
            current = views[node].current
            releases.append({"node": node, "incident": current.id if current else None, "state": current.state if current else None,
                             "events": [e.to_dict() for e in held]})
        for incident, events in unfinished.items():
            releases.append({"node": node, "incident": incident, "state": None, "events": [e.to_dict() for e in events], "unfinished": True})
    batches: dict[str, list[str]] = {}
    for decision in decisions:
        if decision.acts:
            batches.setdefault(decision.action, []).append(decision.node)
    out_decisions = [d.to_dict() for d in decisions]
    counts = {"events": len(raw_events) + len(manual), "rejected": len(rejected), "skipped": len(skipped), "releases": len(releases),
              "acting": sum(1 for d in decisions if d.acts), "recorded": sum(1 for d in decisions if d.kind == "record"),
              "joined": sum(1 for d in decisions if d.kind == "join"), "dry_run": sum(1 for d in decisions if d.dry_run)}
    return {"decisions": out_decisions, "acting": [d for d in out_decisions if d["acts"]],
            "records": [{"node": d.node, "reason": d.reason, "events": [e.to_dict() for e in d.record_events]}
                        for d in decisions if d.record_events],
            "batches": batches, "releases": releases, "skipped": skipped, "rejected": rejected, "counts": counts,
            "rules": [r.to_dict() for r in rules], "nodes": sorted(set(firing) | set(resolved) | set(views))}


__all__ = ["ACTIONS", "ACTION_STEPS", "DEFAULT_RULES", "Decision", "Event", "EventRejected", "PolicyOptions", "Rule",
           "SentinelPolicyError", "Steps", "decide_node", "manual_events", "plan", "steps_for", "validate_event",
           "validate_rule", "validate_rules"]
