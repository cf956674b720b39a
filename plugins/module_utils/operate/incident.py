# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Sentinel incidents recorded on the Node: the state machine, stale/replay detection and the planned changes (pure).

One node has at most one OPEN incident. It lives in annotations of the Node, next to the quarantine record of
:mod:`.quarantine_state` (whose reason names the incident id):

* ``dsxos.io/incident``: JSON :class:`Incident` of the open incident (removed when it ends);
* ``dsxos.io/incident-history``: JSON list of ended incidents ``{id, action, outcome, opened_at, ended_at, events}``
  (bounded), so a replayed alert is recognised after a release;
* ``dsxos.io/sentinel-attempts``: JSON list of remediation attempts ``{time, incident, action, key}`` (bounded; ``key``
  names the write that counted it, so a retried write never counts twice) for the
  attempt cap per node and window;
* ``dsxos.io/sentinel-events``: JSON list of recently recorded (not acted on) events ``{fingerprint, fault_class,
  starts_at, recorded_at}`` for the policy's rate rules;
* label ``dsxos.io/incident-state``: the open incident's state (``kubectl get nodes -l dsxos.io/incident-state=needs-attention``).

States: ``quarantined`` -> ``draining`` -> ``drained`` -> ``remediating`` -> ``recertifying`` -> ``returned`` | ``needs-attention``
(:data:`TRANSITIONS`). ``returned`` ends the incident; a release (``close`` with outcome ``released``) ends it from any state.

Every ``plan_*`` function takes a :class:`NodeIncidents` view and returns a :class:`Change`: the annotations and labels
to write (one strategic merge patch carrying the node's resourceVersion, written by :mod:`.remediation_state`), the
Kubernetes Event to emit and the result values. Nothing here talks to the API.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import ANN_PRIOR, LABEL_STATE, STATE_QUARANTINED

ANN_INCIDENT = "dsxos.io/incident"
ANN_INCIDENT_HISTORY = "dsxos.io/incident-history"
ANN_ATTEMPTS = "dsxos.io/sentinel-attempts"
ANN_EVENTS = "dsxos.io/sentinel-events"
LABEL_INCIDENT_STATE = "dsxos.io/incident-state"
#: ``dsxos.io/sentinel=disabled`` on a node: its events are recorded, never acted on
LABEL_OPT_OUT = "dsxos.io/sentinel"
OPT_OUT_VALUE = "disabled"

QUARANTINED = "quarantined"
DRAINING = "draining"
DRAINED = "drained"
REMEDIATING = "remediating"
RECERTIFYING = "recertifying"
RETURNED = "returned"
RELEASED = "released"
NEEDS_ATTENTION = "needs-attention"
#: the status of a node whose incident a release closed without releasing its quarantine (the release sweep finishes it)
RELEASE_UNFINISHED = "release-unfinished"
STATES = (QUARANTINED, DRAINING, DRAINED, REMEDIATING, RECERTIFYING, RETURNED, NEEDS_ATTENTION)
#: states an incident can be opened in
OPEN_STATES = (QUARANTINED, NEEDS_ATTENTION)
#: the states in which an incident waits for a release once its run ended (the remediate run reports them "waiting")
RELEASE_WAITING_STATES = (QUARANTINED, DRAINED)
#: how an incident ends
OUTCOMES = (RETURNED, RELEASED)

#: allowed moves (staying in the same state is an idempotent no-op, except a new remediation attempt)
TRANSITIONS: dict[str, frozenset[str]] = {
    QUARANTINED: frozenset({DRAINING, REMEDIATING, RECERTIFYING, NEEDS_ATTENTION}),
    DRAINING: frozenset({DRAINED, NEEDS_ATTENTION}),
    DRAINED: frozenset({REMEDIATING, RECERTIFYING, NEEDS_ATTENTION}),
    REMEDIATING: frozenset({REMEDIATING, RECERTIFYING, NEEDS_ATTENTION}),
    RECERTIFYING: frozenset({RETURNED, NEEDS_ATTENTION}),
    NEEDS_ATTENTION: frozenset({RECERTIFYING}),
}

#: Kubernetes Event reason per step
EVENT_REASONS = {QUARANTINED: "SentinelQuarantined", DRAINING: "SentinelDraining", DRAINED: "SentinelDrained",
                 REMEDIATING: "SentinelRemediating", RECERTIFYING: "SentinelRecertifying", RETURNED: "SentinelReturned",
                 NEEDS_ATTENTION: "SentinelNeedsAttention", "released": "SentinelReleased", "joined": "SentinelJoined",
                 "resolved": "SentinelResolved"}

HISTORY_LIMIT = 20
STEP_LIMIT = 50
EVENT_LIMIT = 50
ATTEMPT_LIMIT = 50
RECENT_LIMIT = 100
MAX_TEXT = 1024

_FINGERPRINT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_INCIDENT_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_RFC3339_RE = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


class IncidentError(InputError):
    """A bad incident request or a malformed incident annotation (names the node, field and value)."""


# ---------------------------------------------------------------------------------------------------- small validators


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


# ---------------------------------------------------------------------------------------------------- records


@dataclass
class EventRef:
    """One alert that is part of an incident (``fingerprint`` + ``starts_at``), and when it resolved."""

    fingerprint: str
    starts_at: str
    resolved_at: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        out: dict[str, Any] = {"fingerprint": self.fingerprint, "starts_at": self.starts_at}
        if self.resolved_at:
            out["resolved_at"] = self.resolved_at
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EventRef":
        """From JSON (fields taken as strings)."""
        resolved = data.get("resolved_at")
        return cls(str(data["fingerprint"]), str(data.get("starts_at") or ""), str(resolved) if resolved else None)


@dataclass
class Incident:  # pylint: disable=too-many-instance-attributes
    """The open incident of a node (annotation ``dsxos.io/incident``)."""

    id: str
    node: str
    state: str
    action: str
    opened_at: str
    updated_at: str
    rule: str = ""
    reason: str = ""
    actor: str = ""
    events: list[EventRef] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)
    attempts: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    last_error: str = ""

    def has(self, fingerprint: str) -> bool:
        """Is this alert part of the incident?"""
        return any(e.fingerprint == fingerprint for e in self.events)

    def event(self, fingerprint: str) -> Optional[EventRef]:
        """The incident's record of an alert: its latest occurrence (an alert that resolved and fired again while the
        incident was open is recorded once per occurrence)."""
        return next((e for e in reversed(self.events) if e.fingerprint == fingerprint), None)

    def refires(self, fingerprint: str, starts_at: str) -> bool:
        """Is this a NEW occurrence of one of the incident's alerts: its latest occurrence resolved, and this one started
        after it? (It joins the incident: the incident may not close while it fires.)"""
        latest = self.event(fingerprint)
        if latest is None or not latest.resolved_at:
            return False
        start, recorded = _when(starts_at), _when(latest.starts_at)
        return start is not None and recorded is not None and start > recorded + 1e-6

    @property
    def all_resolved(self) -> bool:
        """Has every alert of the incident resolved?"""
        return bool(self.events) and all(e.resolved_at for e in self.events)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (stable keys)."""
        return {"id": self.id, "node": self.node, "state": self.state, "action": self.action, "rule": self.rule,
                "reason": self.reason, "actor": self.actor, "opened_at": self.opened_at, "updated_at": self.updated_at,
                "events": [e.to_dict() for e in self.events], "gpus": list(self.gpus), "attempts": self.attempts,
                "steps": list(self.steps), "last_error": self.last_error}

    def to_json(self) -> str:
        """Compact JSON for the annotation."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Any, node: str) -> "Incident":
        """Parse a stored incident; :class:`IncidentError` naming the node when malformed."""
        try:
            if not isinstance(data, Mapping):
                raise TypeError(f"expected an object, got {type(data).__name__}")
            state = str(data["state"])
            if state not in STATES:
                raise ValueError(f"unknown state {state!r}")
            return cls(id=str(data["id"]), node=str(data.get("node") or node), state=state, action=str(data.get("action") or ""),
                       opened_at=str(data["opened_at"]), updated_at=str(data.get("updated_at") or data["opened_at"]),
                       rule=str(data.get("rule") or ""), reason=str(data.get("reason") or ""), actor=str(data.get("actor") or ""),
                       events=[EventRef.from_dict(e) for e in data.get("events") or []],
                       gpus=[int(g) for g in data.get("gpus") or []], attempts=int(data.get("attempts") or 0),
                       steps=[dict(s) for s in data.get("steps") or []], last_error=str(data.get("last_error") or ""))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IncidentError(f"node {node}: annotation {ANN_INCIDENT} is not a valid incident ({exc})", node=node,
                                resource="nodes", name=node) from exc

    def summary(self, outcome: str, ended_at: str) -> dict[str, Any]:
        """The history entry of this incident once it ended; a returned one also records ``vouched_at``, when its last
        recertification started (what it covers ends there, see :func:`classify_firing`)."""
        out = {"id": self.id, "action": self.action, "outcome": outcome, "opened_at": self.opened_at, "ended_at": ended_at,
               "events": [{"fingerprint": e.fingerprint, "starts_at": e.starts_at} for e in self.events]}
        recertified = [str(step.get("time")) for step in self.steps if isinstance(step, Mapping) and step.get("state") == RECERTIFYING
                       and step.get("time")]
        if outcome == RETURNED and recertified:
            out["vouched_at"] = recertified[-1]
        return out


def _json_list(text: Optional[str]) -> list[dict[str, Any]]:
    """A JSON list of objects from an annotation (anything malformed counts as empty: rewritten on the next change)."""
    if not text:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    return [dict(e) for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _dump(items: Any) -> str:
    return json.dumps(items, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Standing:
    """Where a node stands between its incidents and its quarantine (:meth:`NodeIncidents.standing`)."""

    #: the open incident's state, ``release-unfinished``, or None
    state: Optional[str] = None
    #: the open incident, or the one whose release is unfinished
    incident: Optional[str] = None
    #: ``{incident, unfinished}``: the release no alert will bring any more
    release_due: Optional[dict[str, Any]] = None
    #: the incident a sentinel quarantine names that was never recorded
    orphan_incident: Optional[str] = None

    @property
    def unfinished_release(self) -> Optional[str]:
        """The incident a release closed without releasing its quarantine (state ``release-unfinished``), else None."""
        return self.incident if self.state == RELEASE_UNFINISHED else None


@dataclass
class NodeIncidents:  # pylint: disable=too-many-instance-attributes
    """Everything the sentinel records on one node, read from a Node (camelCase dict)."""

    node: str
    exists: bool = True
    resource_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    current: Optional[Incident] = None
    history: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    recent: list[dict[str, Any]] = field(default_factory=list)
    #: the quarantine record's reason and since when read from the plain form (:meth:`from_state`); else the annotation
    prior: Optional[dict[str, Any]] = None

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> "NodeIncidents":
        """From a Node as returned by the API (camelCase dict)."""
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        annotations = dict(meta.get("annotations") or {})
        current = None
        text = annotations.get(ANN_INCIDENT)
        if text:
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise IncidentError(f"node {name}: annotation {ANN_INCIDENT} is not JSON ({exc})", node=name, resource="nodes",
                                    name=name) from exc
            current = Incident.from_dict(data, name)
        return cls(node=name, exists=True, resource_version=str(meta.get("resourceVersion") or ""), labels=dict(meta.get("labels") or {}),
                   annotations=annotations, unschedulable=bool((node.get("spec") or {}).get("unschedulable")), current=current,
                   history=_json_list(annotations.get(ANN_INCIDENT_HISTORY)), attempts=_json_list(annotations.get(ANN_ATTEMPTS)),
                   recent=_json_list(annotations.get(ANN_EVENTS)))

    @classmethod
    def from_state(cls, node: str, data: Optional[Mapping[str, Any]]) -> "NodeIncidents":
        """From the plain form :meth:`to_state` returns (the ``node_incident`` module's ``get``; the policy's input)."""
        data = dict(data or {})
        if data.get("unreadable"):
            raise IncidentError(str(data.get("error") or f"node {node}: annotation {ANN_INCIDENT} is unreadable"), node=node,
                                resource="nodes", name=node)
        incident = data.get("incident")
        quarantine = data.get("quarantine") if isinstance(data.get("quarantine"), Mapping) else {}
        # the quarantine record's reason and since survive the plain form (quarantine(), unfinished_release())
        return cls(node=node, exists=data.get("exists", True) is not False, labels=dict(data.get("labels") or {}),
                   prior={"reason": quarantine.get("reason"), "since": quarantine.get("since")},
                   unschedulable=bool(data.get("unschedulable")),
                   current=Incident.from_dict(incident, node) if incident else None,
                   history=[dict(h) for h in data.get("history") or [] if isinstance(h, Mapping)],
                   attempts=[dict(a) for a in data.get("attempts") or [] if isinstance(a, Mapping)],
                   recent=[dict(r) for r in data.get("recent") or [] if isinstance(r, Mapping)])

    def quarantine(self) -> dict[str, Any]:
        """The quarantine record's state, reason and since (from :mod:`.quarantine_state`'s annotation)."""
        out: dict[str, Any] = {"state": self.labels.get(LABEL_STATE), "reason": None, "since": None}
        if self.prior is not None:
            out["reason"], out["since"] = self.prior.get("reason") or None, self.prior.get("since") or None
            return out
        text = self.annotations.get(ANN_PRIOR)
        if text:
            try:
                data = json.loads(text)
                out["reason"], out["since"] = data.get("reason"), data.get("since")
            except (ValueError, AttributeError):
                pass
        return out

    @property
    def opted_out(self) -> bool:
        """``dsxos.io/sentinel=disabled``?"""
        return self.labels.get(LABEL_OPT_OUT) == OPT_OUT_VALUE

    def attempts_within(self, now: float, window_s: float) -> int:
        """Remediation attempts recorded in ``(now - window_s, now]``."""
        count = 0
        for attempt in self.attempts:
            try:
                moment = parse_rfc3339(attempt.get("time"))
            except IncidentError:
                continue
            if now - window_s < moment <= now + 1e-6:
                count += 1
        return count

    def ended(self, incident_id: str) -> Optional[dict[str, Any]]:
        """The history entry of an ended incident."""
        return next((h for h in reversed(self.history) if h.get("id") == incident_id), None)

    def standing(self) -> "Standing":
        """Where the node stands between its incidents and its quarantine, read once (the status rows, ``to_state``, the
        fleet report and the release sweep all take it from here):

        - ``unfinished_release``: the latest ended incident when it ended ``released`` while the node still carries
          the quarantine the sentinel gave it for that incident (state quarantined, the reason naming it, no incident
          open). A release closes first and releases the quarantine second; a run that died between the two leaves
          exactly this, and the next release finishes it.
        - ``orphan_incident``: the incident a sentinel quarantine names when that incident was never recorded (no
          incident open, none ended with that id): the run cordoned the node and died before it opened the incident.
          The alert's next delivery resumes it (the id is derived from the alert); a release by hand of that id
          releases the quarantine. Never released automatically: the other alerts of the dead run's batch are unknown
          and may still fire.
        - ``release_due``: the release this node waits for and that no alert will bring any more: ``{incident,
          unfinished: true}`` for an unfinished release, or ``{incident, unfinished: false}`` for an open incident
          whose alerts all resolved and that waits for a release (state ``quarantined`` or ``drained``: a release that
          died before its close, or resolved alerts marked while another run held the node); else None. Never a node
          in the middle of its steps (its run releases it when it ends, whatever its lock says), one that needs
          attention (a human releases it) or one opted out of the sentinel. The release sweep finishes them.
        - ``state`` / ``incident``: the open incident's, else ``release-unfinished`` and the unfinished release's
          incident, else None.
        """
        quarantine = self.quarantine()
        named = reason_incident_id(quarantine.get("reason")) if quarantine.get("state") == STATE_QUARANTINED else None
        current = self.current
        unfinished = orphan = None
        if current is None and named:
            last = self.history[-1] if self.history else {}
            if last.get("id") == named and last.get("outcome") == RELEASED:
                unfinished = named
            elif self.ended(named) is None:
                orphan = named
        due: Optional[dict[str, Any]] = None
        if not self.opted_out:
            if unfinished:
                due = {"incident": unfinished, "unfinished": True}
            elif current is not None and current.all_resolved and current.state in RELEASE_WAITING_STATES:
                due = {"incident": current.id, "unfinished": False}
        if current is not None:
            return Standing(state=current.state, incident=current.id, release_due=due)
        return Standing(state=RELEASE_UNFINISHED if unfinished else None, incident=unfinished, release_due=due, orphan_incident=orphan)

    def to_state(self) -> dict[str, Any]:
        """Plain form for module results and the policy."""
        standing = self.standing()
        return {"exists": self.exists, "labels": dict(self.labels), "unschedulable": self.unschedulable,
                "incident": self.current.to_dict() if self.current else None, "history": list(self.history),
                "attempts": list(self.attempts), "recent": list(self.recent), "quarantine": self.quarantine(),
                "opted_out": self.opted_out, "all_resolved": bool(self.current is not None and self.current.all_resolved),
                "unfinished_release": standing.unfinished_release, "release_due": standing.release_due,
                "orphan_quarantine": standing.orphan_incident}


# ---------------------------------------------------------------------------------------------------- stale / replay


@dataclass(frozen=True)
class Verdict:
    """What a firing or resolved alert means for a node: ``kind`` and why."""

    kind: str
    reason: str
    incident: Optional[str] = None


#: firing: ``new`` (may open an incident), ``resume`` (part of the open incident), ``join`` (new alert during an open
#: incident), ``stale`` (started before the open incident's earliest alert, not part of it), ``replay`` (already handled and ended)
FIRING_VERDICTS = ("new", "resume", "join", "stale", "replay")
#: resolved: ``resolve`` (part of the open incident), ``stale`` (an older occurrence), ``ended`` (its incident already
#: ended), ``not-ours`` (no incident of ours holds it)
RESOLVED_VERDICTS = ("resolve", "stale", "ended", "not-ours")


def _when(text: Any) -> Optional[float]:
    try:
        return parse_rfc3339(text)
    except IncidentError:
        return None


def _incident_start(incident: Incident) -> tuple[Optional[float], str]:
    """When the incident's trouble began: the earliest ``starts_at`` of its alerts (its ``opened_at`` when none is recorded).

    Not ``opened_at`` alone: a delayed run opens the incident well after its alert started, and an alert that started in
    between belongs to the same trouble (it joins) rather than being stale.
    """
    starts = [(moment, ref.starts_at) for ref in incident.events for moment in (_when(ref.starts_at),) if moment is not None]
    if starts:
        return min(starts)
    return _when(incident.opened_at), incident.opened_at


def _covered_until(entry: Mapping[str, Any]) -> Optional[float]:
    """Until when an ended incident covers alerts: a returned one until its last recertification started (``vouched_at``;
    an alert that started later was not seen by it), else - and for entries written before ``vouched_at`` - its end."""
    vouched = _when(entry.get("vouched_at")) if entry.get("outcome") == RETURNED else None
    return vouched if vouched is not None else _when(entry.get("ended_at"))


def classify_firing(view: NodeIncidents, fingerprint: str, starts_at: str) -> Verdict:
    """Is a firing alert new, part of / joining the open incident, stale or a replay?"""
    start = parse_rfc3339(starts_at, "starts_at")
    current = view.current
    if current is not None:
        if current.refires(fingerprint, starts_at):
            return Verdict("join", f"a new occurrence of an alert of open incident {current.id} (the earlier one resolved)", current.id)
        if current.has(fingerprint):
            return Verdict("resume", f"part of open incident {current.id}", current.id)
        since, since_text = _incident_start(current)
        if since is not None and start < since - 1e-6:
            return Verdict("stale", f"started at {starts_at}, before incident {current.id} began ({since_text}), "
                                    "and is not part of it", current.id)
        return Verdict("join", f"new alert during open incident {current.id}", current.id)
    for entry in reversed(view.history):
        ended_at = _covered_until(entry)
        for ref in entry.get("events") or []:
            if ref.get("fingerprint") != fingerprint:
                continue
            recorded = _when(ref.get("starts_at"))
            # a returned incident covers every occurrence up to its last recertification's start (the remediation and
            # the recertification came after them); a released one only the occurrences it recorded and older ones (it
            # only saw those resolve)
            covered = (ended_at is not None and start <= ended_at) if entry.get("outcome") == RETURNED else (
                recorded is not None and start <= recorded + 1e-6)
            if ref.get("starts_at") == starts_at or covered:
                return Verdict("replay", f"already handled by incident {entry.get('id')} ({entry.get('outcome')} at "
                                         f"{entry.get('ended_at')})", str(entry.get("id")))
    # An alert that started while an incident was open and reaches us only after that incident was RETURNED (remediated
    # and recertified: a second alert during a remediation, delivered after it) would have joined it: it is covered by
    # that incident and starts nothing new. An incident RELEASED because its alerts resolved covers nothing it did not
    # hold: an alert that started meanwhile and still fires (an intake that came after the release, or a join the
    # release's close refused to swallow) is a fault nobody handled, and opens a new incident. An alert that started
    # before the incident's first alert was never part of it and may open one.
    for entry in reversed(view.history):
        if entry.get("outcome") != RETURNED:
            continue
        ended_at = _covered_until(entry)
        starts = [_when(r.get("starts_at")) for r in entry.get("events") or []]
        began = min([t for t in starts if t is not None], default=_when(entry.get("opened_at")))
        if ended_at is not None and began is not None and began - 1e-6 <= start <= ended_at:
            return Verdict("replay", f"started at {starts_at}, while incident {entry.get('id')} was open (it ended "
                                     f"{entry.get('outcome')} at {entry.get('ended_at')}): would have joined it", str(entry.get("id")))
    return Verdict("new", "no open incident")


def classify_resolved(view: NodeIncidents, fingerprint: str, starts_at: str) -> Verdict:
    """Does a resolved alert belong to the open incident (and may release it), or to nothing we still hold?"""
    start = parse_rfc3339(starts_at, "starts_at")
    current = view.current
    if current is not None:
        ref = current.event(fingerprint)
        if ref is not None:
            recorded = _when(ref.starts_at)
            if recorded is not None and start < recorded - 1e-6:
                return Verdict("stale", f"resolves an occurrence from {starts_at}, older than the one incident {current.id} holds "
                                        f"({ref.starts_at})", current.id)
            return Verdict("resolve", f"part of open incident {current.id}", current.id)
    for entry in reversed(view.history):
        if any(r.get("fingerprint") == fingerprint for r in entry.get("events") or []):
            return Verdict("ended", f"its incident {entry.get('id')} already ended ({entry.get('outcome')})", str(entry.get("id")))
    if current is not None:
        return Verdict("not-ours", f"not part of open incident {current.id}", current.id)
    return Verdict("not-ours", "no incident holds it")


# ---------------------------------------------------------------------------------------------------- planned changes


@dataclass
class Change:
    """What one incident operation changes on the node (annotations/labels: a value of None removes)."""

    changed: bool
    annotations: dict[str, Optional[str]] = field(default_factory=dict)
    labels: dict[str, Optional[str]] = field(default_factory=dict)
    #: Kubernetes Event to emit: ``{reason, type, message}``
    event: Optional[dict[str, str]] = None
    result: dict[str, Any] = field(default_factory=dict)
    message: str = ""


def _step(state: str, now: str, message: str) -> dict[str, Any]:
    return {"state": state, "time": now, "message": message[:MAX_TEXT]}


def _write_incident(incident: Incident) -> dict[str, Optional[str]]:
    return {ANN_INCIDENT: incident.to_json()}


def _event_refs(events: Sequence[Mapping[str, Any]]) -> list[EventRef]:
    refs: list[EventRef] = []
    for index, event in enumerate(events):
        fingerprint = validate_fingerprint(event.get("fingerprint"), f"events[{index}].fingerprint")
        starts_at = str(event.get("starts_at") or "")
        parse_rfc3339(starts_at, f"events[{index}].starts_at")
        if all(r.fingerprint != fingerprint for r in refs):
            refs.append(EventRef(fingerprint, starts_at))
    return refs


def _result(view: NodeIncidents, incident: Optional[Incident], **extra: Any) -> dict[str, Any]:
    out = {"node": view.node, "incident": incident.to_dict() if incident else None, "state": incident.state if incident else None}
    out.update(extra)
    return out


def _sort_firing(view: NodeIncidents, refs: list[EventRef]) -> tuple[list[EventRef], list[dict[str, Any]]]:
    """Split alerts into those that may act (new/resume/join) and the stale or replayed ones (with reasons)."""
    usable: list[EventRef] = []
    refused: list[dict[str, Any]] = []
    for ref in refs:
        verdict = classify_firing(view, ref.fingerprint, ref.starts_at)
        if verdict.kind in ("stale", "replay"):
            refused.append({"fingerprint": ref.fingerprint, "starts_at": ref.starts_at, "verdict": verdict.kind, "reason": verdict.reason})
        else:
            usable.append(ref)
    return usable, refused


@dataclass(frozen=True)
class OpenRequest:  # pylint: disable=too-many-instance-attributes
    """``open``: a new incident with this id, remediation action, rule, reason, alerts and GPUs."""

    incident: str
    action: str
    reason: str
    events: tuple[Mapping[str, Any], ...]
    state: str = QUARANTINED
    rule: str = ""
    actor: str = ""
    gpus: tuple[int, ...] = ()
    message: str = ""


def plan_open(view: NodeIncidents, req: OpenRequest, now: str) -> Change:
    """Open an incident (idempotent for the same id). Refused when every alert is stale or a replay, or when another
    incident is open (the alerts then belong to it: use ``join``)."""
    validate_incident_id(req.incident)
    if req.state not in OPEN_STATES:
        raise IncidentError(f"an incident opens in state {' or '.join(OPEN_STATES)}, not {req.state!r}", field="state", value=req.state,
                            node=view.node)
    refs = _event_refs(req.events)
    current = view.current
    if current is not None:
        if current.id != req.incident:
            return Change(False, result=_result(view, current, opened=False, conflict=current.id),
                          message=f"node {view.node}: incident {current.id} is open; {req.incident} not opened (join it instead)")
        new = [r for r in refs if not current.has(r.fingerprint)]
        usable, refused = _sort_firing(view, new)
        if not usable:
            return Change(False, result=_result(view, current, opened=False, stale=refused),
                          message=f"node {view.node}: incident {current.id} already open")
        current.events.extend(usable[: max(0, EVENT_LIMIT - len(current.events))])
        current.updated_at = now
        result = _result(view, current, opened=False, joined=[r.fingerprint for r in usable], stale=refused)
        return Change(True, _write_incident(current), result=result,
                      message=f"node {view.node}: incident {current.id} already open; {len(usable)} alert(s) added")
    ended = view.ended(req.incident)
    if ended is not None:
        return Change(False, result=_result(view, None, opened=False, ended=True, outcome=ended.get("outcome")),
                      message=f"node {view.node}: incident {req.incident} already ended ({ended.get('outcome')} at {ended.get('ended_at')})")
    usable, refused = _sort_firing(view, refs)
    if refs and not usable:
        return Change(False, result=_result(view, None, opened=False, stale=refused),
                      message=f"node {view.node}: incident {req.incident} not opened: every alert is stale or a replay "
                              f"({'; '.join(r['reason'] for r in refused)[:400]})")
    incident = Incident(id=req.incident, node=view.node, state=req.state, action=req.action, opened_at=now, updated_at=now,
                        rule=req.rule, reason=req.reason, actor=req.actor, events=usable[:EVENT_LIMIT], gpus=list(req.gpus),
                        steps=[_step(req.state, now, req.message or req.reason)])
    event_type = "Warning"
    text = f"incident {incident.id} opened ({req.state}): {req.reason}"
    return Change(True, _write_incident(incident), {LABEL_INCIDENT_STATE: req.state},
                  event={"reason": EVENT_REASONS[req.state], "type": event_type, "message": text},
                  result=_result(view, incident, opened=True, stale=refused), message=f"node {view.node}: {text}")


@dataclass(frozen=True)
class AdvanceRequest:
    """``advance``: move incident ``incident`` to ``state``; ``attempt`` counts a remediation attempt against the cap."""

    incident: str
    state: str
    message: str = ""
    error: str = ""
    attempt: bool = False
    attempt_cap: int = 3
    attempt_window_s: float = 86400.0
    remediation: str = ""
    #: identifies this attempt (one per write operation, e.g. ``<run>/<operation id>``): recorded with the attempt in the
    #: same patch, so a retried write whose first PATCH was applied (its response lost) never counts the attempt twice
    attempt_key: str = ""


def attempt_counted(view: "NodeIncidents", incident_id: str, key: str) -> bool:
    """Is the attempt ``key`` of incident ``incident_id`` already recorded on the node?"""
    return bool(key) and any(a.get("key") == key and a.get("incident") == incident_id for a in view.attempts)


def _not_current(view: NodeIncidents, incident_id: str, what: str) -> Change:
    ended = view.ended(incident_id)
    if ended is not None:
        return Change(False, result=_result(view, None, ended=True, outcome=ended.get("outcome")),
                      message=f"node {view.node}: incident {incident_id} already ended ({ended.get('outcome')} at "
                              f"{ended.get('ended_at')}); nothing to {what}")
    other = f"incident {view.current.id} is open" if view.current else "no incident is open"
    raise IncidentError(f"node {view.node}: unknown incident {incident_id} ({other})", field="incident", value=incident_id,
                        node=view.node)


def plan_advance(view: NodeIncidents, req: AdvanceRequest, now: str, now_s: float) -> Change:
    """Move the open incident ``req.incident`` to ``req.state`` (a no-op when it is there already, ``ended`` when the
    incident has ended). Entering ``remediating`` with ``attempt`` records an attempt; at the cap the incident goes to
    ``needs-attention`` instead (``capped``)."""
    validate_incident_id(req.incident)
    if req.state not in STATES or req.state == RETURNED:
        raise IncidentError(f"state must be one of {', '.join(s for s in STATES if s != RETURNED)} (returned ends the incident: "
                            "use close with outcome returned)", field="state", value=req.state, node=view.node)
    current = view.current
    if current is None or current.id != req.incident:
        return _not_current(view, req.incident, "advance")
    target, message = req.state, req.message
    capped = False
    attempts = list(view.attempts)
    if target == REMEDIATING and req.attempt and attempt_counted(view, current.id, req.attempt_key):
        return Change(False, result=_result(view, current, ended=False, capped=False, attempt_counted=True),
                      message=f"node {view.node}: incident {current.id} attempt {req.attempt_key} already counted "
                              f"({current.attempts} attempt(s), state {current.state})")
    if target == REMEDIATING and req.attempt:
        used = view.attempts_within(now_s, req.attempt_window_s)
        if used >= req.attempt_cap:
            capped = True
            target = NEEDS_ATTENTION
            message = (f"remediation attempt cap reached: {used} attempt(s) within {req.attempt_window_s:g} s "
                       f"(cap {req.attempt_cap}); a human must look at node {view.node}")
    if target == current.state and not (target == REMEDIATING and req.attempt and not capped):
        if req.error and req.error != current.last_error:
            current.last_error = req.error[:MAX_TEXT]
            current.updated_at = now
            return Change(True, _write_incident(current), result=_result(view, current, ended=False, capped=capped),
                          message=f"node {view.node}: incident {current.id} error recorded")
        return Change(False, result=_result(view, current, ended=False, capped=capped),
                      message=f"node {view.node}: incident {current.id} already {target}")
    if target != current.state and target not in TRANSITIONS.get(current.state, frozenset()):
        raise IncidentError(f"node {view.node}: incident {current.id} cannot go from {current.state} to {target} "
                            f"(allowed: {', '.join(sorted(TRANSITIONS.get(current.state, ()))) or 'none'})", field="state",
                            value=target, node=view.node)
    current.state = target
    current.updated_at = now
    current.last_error = req.error[:MAX_TEXT] if req.error else ""
    annotations: dict[str, Optional[str]] = {}
    if target == REMEDIATING and req.attempt:
        current.attempts += 1
        entry = {"time": now, "incident": current.id, "action": req.remediation or current.action}
        if req.attempt_key:
            entry["key"] = req.attempt_key
        attempts = (attempts + [entry])[-ATTEMPT_LIMIT:]
        annotations[ANN_ATTEMPTS] = _dump(attempts)
        message = message or f"remediation attempt {current.attempts} ({req.remediation or current.action})"
    current.steps = (current.steps + [_step(target, now, message)])[-STEP_LIMIT:]
    annotations.update(_write_incident(current))
    kind = "Warning" if target == NEEDS_ATTENTION else "Normal"
    text = f"incident {current.id} {target}" + (f": {message}" if message else "")
    return Change(True, annotations, {LABEL_INCIDENT_STATE: target}, event={"reason": EVENT_REASONS[target], "type": kind, "message": text},
                  result=_result(view, current, ended=False, capped=capped), message=f"node {view.node}: {text}")


def plan_join(view: NodeIncidents, incident_id: Optional[str], events: Sequence[Mapping[str, Any]], now: str) -> Change:
    """Add alerts to the open incident (a second alert during remediation starts nothing new); stale ones are refused."""
    refs = _event_refs(events)
    current = view.current
    if current is None or (incident_id and current.id != incident_id):
        if incident_id:
            return _not_current(view, incident_id, "join")
        return Change(False, result=_result(view, None, joined=[], stale=[]), message=f"node {view.node}: no open incident to join")
    usable, refused = _sort_firing(view, [r for r in refs if not current.has(r.fingerprint) or current.refires(r.fingerprint, r.starts_at)])
    if not usable:
        return Change(False, result=_result(view, current, joined=[], stale=refused),
                      message=f"node {view.node}: nothing new for incident {current.id}")
    current.events.extend(usable[: max(0, EVENT_LIMIT - len(current.events))])
    current.updated_at = now
    text = f"incident {current.id}: alert(s) {', '.join(r.fingerprint for r in usable)} joined (nothing new started)"
    return Change(True, _write_incident(current), event={"reason": EVENT_REASONS["joined"], "type": "Normal", "message": text},
                  result=_result(view, current, joined=[r.fingerprint for r in usable], stale=refused), message=f"node {view.node}: {text}")


def plan_resolve(view: NodeIncidents, events: Sequence[Mapping[str, Any]], now: str) -> Change:
    """Mark resolved alerts of the open incident; ``all_resolved`` says whether the incident may be released.
    A resolved alert of another (older) incident or occurrence changes nothing."""
    refs = _event_refs(events)
    current = view.current
    resolved: list[str] = []
    ignored: list[dict[str, Any]] = []
    for ref in refs:
        verdict = classify_resolved(view, ref.fingerprint, ref.starts_at)
        if verdict.kind != "resolve" or current is None:
            ignored.append({"fingerprint": ref.fingerprint, "starts_at": ref.starts_at, "verdict": verdict.kind, "reason": verdict.reason})
            continue
        held = current.event(ref.fingerprint)
        if held is not None and not held.resolved_at:
            held.resolved_at = now
            resolved.append(ref.fingerprint)
    all_resolved = bool(current is not None and current.all_resolved)
    if current is None or not resolved:
        return Change(False, result=_result(view, current, resolved=[], ignored=ignored, all_resolved=all_resolved),
                      message=f"node {view.node}: no alert of an open incident resolved")
    current.updated_at = now
    text = f"incident {current.id}: alert(s) {', '.join(resolved)} resolved" + ("; every alert resolved" if all_resolved else "")
    return Change(True, _write_incident(current), event={"reason": EVENT_REASONS["resolved"], "type": "Normal", "message": text},
                  result=_result(view, current, resolved=resolved, ignored=ignored, all_resolved=all_resolved), message=f"node {view.node}: {text}")


def plan_close(view: NodeIncidents, incident_id: str, outcome: str, message: str, now: str,  # pylint: disable=too-many-arguments
               history_limit: int = HISTORY_LIMIT, require_all_resolved: bool = False) -> Change:
    """End the open incident ``incident_id`` (``returned`` only from ``recertifying``; ``released`` from any state).

    With ``require_all_resolved`` an incident with an alert that has not resolved is NOT closed (``unresolved`` names
    those alerts): an automatic release decides on the same read that its write carries as resourceVersion, so an alert
    joined after the release read the node is never closed with the incident (and taken as a replay later)."""
    validate_incident_id(incident_id)
    if outcome not in OUTCOMES:
        raise IncidentError(f"outcome must be one of {', '.join(OUTCOMES)}", field="outcome", value=outcome, node=view.node)
    current = view.current
    if current is None or current.id != incident_id:
        return _not_current(view, incident_id, "close")
    if require_all_resolved and not current.all_resolved:
        firing = [e.fingerprint for e in current.events if not e.resolved_at]
        return Change(False, result=_result(view, current, ended=False, all_resolved=False, unresolved=firing),
                      message=f"node {view.node}: incident {current.id} not closed: alert(s) {', '.join(firing) or '(none)'} still fire")
    if outcome == RETURNED and current.state != RECERTIFYING:
        raise IncidentError(f"node {view.node}: incident {current.id} is {current.state}; only a recertified incident "
                            "(recertifying) is returned - release it instead", field="outcome", value=outcome, node=view.node)
    history = (view.history + [current.summary(outcome, now)])[-max(1, history_limit):]
    text = f"incident {current.id} {outcome}" + (f": {message}" if message else "")
    current.steps = (current.steps + [_step(outcome, now, message)])[-STEP_LIMIT:]
    result = _result(view, None, ended=True, outcome=outcome, closed=current.to_dict())
    return Change(True, {ANN_INCIDENT: None, ANN_INCIDENT_HISTORY: _dump(history)}, {LABEL_INCIDENT_STATE: None},
                  event={"reason": EVENT_REASONS[outcome], "type": "Normal", "message": text}, result=result,
                  message=f"node {view.node}: {text}")


def plan_record(view: NodeIncidents, events: Sequence[Mapping[str, Any]], now: str, limit: int = RECENT_LIMIT) -> Change:
    """Remember alerts that were recorded, not acted on (the policy's rate rules count them); duplicates are ignored."""
    recent = list(view.recent)
    seen = {(r.get("fingerprint"), r.get("starts_at")) for r in recent}
    added: list[str] = []
    for index, event in enumerate(events):
        fingerprint = validate_fingerprint(event.get("fingerprint"), f"events[{index}].fingerprint")
        starts_at = str(event.get("starts_at") or "")
        parse_rfc3339(starts_at, f"events[{index}].starts_at")
        if (fingerprint, starts_at) in seen:
            continue
        seen.add((fingerprint, starts_at))
        recent.append({"fingerprint": fingerprint, "starts_at": starts_at, "fault_class": str(event.get("fault_class") or "unknown"),
                       "recorded_at": now})
        added.append(fingerprint)
    if not added:
        return Change(False, result=_result(view, view.current, recorded=[]), message=f"node {view.node}: nothing new to record")
    recent = recent[-max(1, limit):]
    return Change(True, {ANN_EVENTS: _dump(recent)}, result=_result(view, view.current, recorded=added),
                  message=f"node {view.node}: {len(added)} alert(s) recorded")


# ---------------------------------------------------------------------------------------------------- status


def status_row(view: NodeIncidents) -> dict[str, Any]:
    """One line of the status table: node, incident, state, action, reason, since, attempts, last error."""
    quarantine = view.quarantine()
    current = view.current
    standing = view.standing()
    return {"node": view.node, "quarantine": quarantine["state"], "incident": standing.incident, "state": standing.state,
            "release_due": standing.release_due, "orphan_incident": standing.orphan_incident,
            "action": current.action if current else None,
            "reason": (current.steps[-1]["message"] if current and current.state == NEEDS_ATTENTION and current.steps else None)
            or quarantine["reason"] or (current.reason if current else None),
            "since": current.opened_at if current else quarantine["since"], "updated": current.updated_at if current else None,
            "attempts": current.attempts if current else 0, "last_error": current.last_error if current else "",
            "unschedulable": view.unschedulable}


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def status_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The status rows as a Markdown table."""
    lines = ["# Sentinel status", "", f"{len(rows)} node(s) quarantined or with an open incident.", ""]
    if rows:
        lines += ["| node | incident | state | action | reason | since |", "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(_cell(r.get(k)) for k in ("node", "incident", "state", "action", "reason", "since")) + " |" for r in rows]
    orphans = [r for r in rows if r.get("orphan_incident")]
    if orphans:
        lines += ["", f"{len(orphans)} node(s) cordoned by a run that died before it recorded the incident (the alert's next "
                  "delivery resumes it; or release by hand with sentinel_nodes and sentinel_incident): "
                  + ", ".join(f"{_cell(r.get('node'))} ({_cell(r.get('orphan_incident'))})" for r in orphans)]
    stalled = [r for r in rows if r.get("stalled")]
    if stalled:
        names = ", ".join(f"{_cell(r.get('node'))} ({_cell(r.get('state'))})" for r in stalled)
        lines += ["", f"{len(stalled)} node(s) in the middle of their steps with no run holding them (its run died or outlived its "
                  f"lease; a firing alert's next delivery resumes it, else recertify mode or a release by hand): {names}"]
    due = [r for r in rows if r.get("release_due")]
    if due:
        lines += ["", f"{len(due)} release(s) due that no alert will bring (a release run's sweep finishes them): "
                  + ", ".join(f"{_cell(r.get('node'))} ({_cell(r['release_due'].get('incident'))}"
                              + (", quarantine release unfinished)" if r["release_due"].get("unfinished") else ", every alert resolved)")
                              for r in due)]
    return "\n".join(lines) + "\n"


__all__ = ["RELEASE_UNFINISHED", "incident_reason", "reason_incident_id", "Standing",
           "ANN_ATTEMPTS", "ANN_EVENTS", "ANN_INCIDENT", "ANN_INCIDENT_HISTORY", "AdvanceRequest", "Change", "attempt_counted", "EVENT_REASONS",
           "EventRef", "FIRING_VERDICTS", "Incident", "IncidentError", "LABEL_INCIDENT_STATE", "LABEL_OPT_OUT", "NodeIncidents",
           "OPT_OUT_VALUE", "OUTCOMES", "OpenRequest", "RESOLVED_VERDICTS", "STATES", "TRANSITIONS", "Verdict", "classify_firing",
           "classify_resolved", "format_time", "incident_id_for", "parse_rfc3339", "plan_advance", "plan_close", "plan_join",
           "plan_open", "plan_record", "plan_resolve", "status_markdown", "status_row", "validate_fingerprint",
           "validate_incident_id", "validate_text"]
