# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Sentinel incidents recorded on the Node: where they are kept, their states and moves, and the incident record (pure).

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

The rest of the incident logic lives beside this file: the values it holds (:mod:`.incident_values`), everything
recorded on one node and where the node stands (:mod:`.node_incidents`), stale/replay detection
(:mod:`.incident_replay`), the planned changes (:mod:`.incident_changes`: every ``plan_*`` function returns the
annotations, labels and Kubernetes Event to write, written by :mod:`.remediation_state`) and the status table
(:mod:`.incident_status`). Nothing here talks to the API.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError, time_or_none

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
        start, recorded = time_or_none(starts_at), time_or_none(latest.starts_at)
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
        recertification started (what it covers ends there, see :func:`.incident_replay.classify_firing`)."""
        out = {"id": self.id, "action": self.action, "outcome": outcome, "opened_at": self.opened_at, "ended_at": ended_at,
               "events": [{"fingerprint": e.fingerprint, "starts_at": e.starts_at} for e in self.events]}
        recertified = [str(step.get("time")) for step in self.steps if isinstance(step, Mapping) and step.get("state") == RECERTIFYING
                       and step.get("time")]
        if outcome == RETURNED and recertified:
            out["vouched_at"] = recertified[-1]
        return out


__all__ = ["ANN_ATTEMPTS", "ANN_EVENTS", "ANN_INCIDENT", "ANN_INCIDENT_HISTORY", "ATTEMPT_LIMIT", "DRAINED", "DRAINING", "EVENT_LIMIT",
           "EVENT_REASONS", "EventRef", "HISTORY_LIMIT", "Incident", "LABEL_INCIDENT_STATE", "LABEL_OPT_OUT", "NEEDS_ATTENTION",
           "OPEN_STATES", "OPT_OUT_VALUE", "OUTCOMES", "QUARANTINED", "RECENT_LIMIT", "RECERTIFYING", "RELEASED", "RELEASE_UNFINISHED",
           "RELEASE_WAITING_STATES", "REMEDIATING", "RETURNED", "STATES", "STEP_LIMIT", "TRANSITIONS"]
