# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Everything the sentinel records on one node, read once from a Node, and where the node stands (pure).

:class:`NodeIncidents` reads the annotations of :mod:`.incident` (the open incident, the history of ended ones, the
remediation attempts, the recently recorded alerts), the quarantine record of :mod:`.quarantine_state` and the opt-out
label, from a Node (:meth:`NodeIncidents.from_node`) or from the plain form the ``node_incident`` module returns
(:meth:`NodeIncidents.from_state`). :meth:`NodeIncidents.standing` gives the one reading of where the node stands
between its incidents and its quarantine (:class:`Standing`: open incident, unfinished release, release due, orphan
quarantine).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import (
    ANN_ATTEMPTS, ANN_EVENTS, ANN_INCIDENT, ANN_INCIDENT_HISTORY, LABEL_OPT_OUT, OPT_OUT_VALUE, RELEASE_UNFINISHED, RELEASE_WAITING_STATES,
    RELEASED, Incident,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError, parse_rfc3339, reason_incident_id
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (
    ANN_PRIOR, LABEL_STATE, STATE_QUARANTINED, json_object_list)


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
                   history=json_object_list(annotations.get(ANN_INCIDENT_HISTORY)), attempts=json_object_list(annotations.get(ANN_ATTEMPTS)),
                   recent=json_object_list(annotations.get(ANN_EVENTS)))

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


__all__ = ["NodeIncidents", "Standing"]
