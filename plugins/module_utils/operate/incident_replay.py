# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Stale and replayed alerts: what a firing or resolved alert means for a node's incidents (pure).

A firing alert is ``new`` (it may open an incident), ``resume`` (part of the open incident), ``join`` (a new alert, or a
new occurrence of one, during the open incident), ``stale`` (it started before the open incident's trouble began and is
not part of it) or a ``replay`` (an ended incident already handled it: a returned incident covers alerts up to its last
recertification's start, a released one only the occurrences it held). A resolved alert ``resolve``-s the open
incident's alert, or is ``stale``, ``ended`` or ``not-ours``. Read from :class:`.node_incidents.NodeIncidents`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import RETURNED, Incident
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import parse_rfc3339, time_or_none
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents


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


def _incident_start(incident: Incident) -> tuple[Optional[float], str]:
    """When the incident's trouble began: the earliest ``starts_at`` of its alerts (its ``opened_at`` when none is recorded).

    Not ``opened_at`` alone: a delayed run opens the incident well after its alert started, and an alert that started in
    between belongs to the same trouble (it joins) rather than being stale.
    """
    starts = [(moment, ref.starts_at) for ref in incident.events for moment in (time_or_none(ref.starts_at),) if moment is not None]
    if starts:
        return min(starts)
    return time_or_none(incident.opened_at), incident.opened_at


def _covered_until(entry: Mapping[str, Any]) -> Optional[float]:
    """Until when an ended incident covers alerts: a returned one until its last recertification started (``vouched_at``;
    an alert that started later was not seen by it), else - and for entries written before ``vouched_at`` - its end."""
    vouched = time_or_none(entry.get("vouched_at")) if entry.get("outcome") == RETURNED else None
    return vouched if vouched is not None else time_or_none(entry.get("ended_at"))


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
            recorded = time_or_none(ref.get("starts_at"))
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
        starts = [time_or_none(r.get("starts_at")) for r in entry.get("events") or []]
        began = min([t for t in starts if t is not None], default=time_or_none(entry.get("opened_at")))
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
            recorded = time_or_none(ref.starts_at)
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


__all__ = ["FIRING_VERDICTS", "RESOLVED_VERDICTS", "Verdict", "classify_firing", "classify_resolved"]
