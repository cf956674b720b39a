# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The sentinel status table: one row per quarantined node or node with an open incident, and its Markdown (pure).

:func:`status_row` reads a :class:`.node_incidents.NodeIncidents` (the ``node_incident`` module's ``list``);
:func:`status_markdown` renders the rows, then the orphan quarantines, the stalled nodes and the releases due.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import NEEDS_ATTENTION
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents


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


__all__ = ["status_markdown", "status_row"]
