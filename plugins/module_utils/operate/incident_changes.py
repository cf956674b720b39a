# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The planned changes of the sentinel's incident operations: open, advance, join, resolve, close, record (pure).

Every ``plan_*`` function takes a :class:`.node_incidents.NodeIncidents` view and returns a :class:`Change`: the
annotations and labels to write (one strategic merge patch carrying the node's resourceVersion, written by
:mod:`.remediation_state`), the Kubernetes Event to emit and the result values. Moves follow the state machine of
:mod:`.incident` (:data:`.incident.TRANSITIONS`); stale and replayed alerts are refused (:mod:`.incident_replay`).
Nothing here talks to the API.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import (
    ANN_ATTEMPTS, ANN_EVENTS, ANN_INCIDENT, ANN_INCIDENT_HISTORY, ATTEMPT_LIMIT, EVENT_LIMIT, EVENT_REASONS, HISTORY_LIMIT,
    LABEL_INCIDENT_STATE, NEEDS_ATTENTION, OPEN_STATES, OUTCOMES, QUARANTINED, RECENT_LIMIT, RECERTIFYING, REMEDIATING, RETURNED, STATES,
    STEP_LIMIT, TRANSITIONS, EventRef, Incident,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_replay import classify_firing, classify_resolved
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import (
    MAX_TEXT, IncidentError, parse_rfc3339, validate_fingerprint, validate_incident_id,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents


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


def _dump(items: Any) -> str:
    return json.dumps(items, sort_keys=True, separators=(",", ":"))


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


__all__ = ["AdvanceRequest", "Change", "OpenRequest", "attempt_counted", "plan_advance", "plan_close", "plan_join", "plan_open",
           "plan_record", "plan_resolve"]
