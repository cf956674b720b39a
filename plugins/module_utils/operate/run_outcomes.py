# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The per-node outcomes of a remediate run for the nodes a batch settled, in one call.

A remediate run reports one outcome per decided node (``node``, ``kind``, ``action``, ``incident``, ``status``,
``state``, ``message``, ``held_back``): the summary, ``set_stats`` and AWX read them. For the nodes the per-node steps
handle, ``steps.yml`` writes it; for the nodes a batch settled (quarantined and only waiting, drained and only
waiting, held back by the breaker, not drained, locked by another run) the role used an ``ansible.builtin.set_fact``
loop, one item per node. Such a loop costs tens of milliseconds per item and copies the growing list every time: 4 to
11 s for a 150-node storm, and in an intake run (``sentinel_phase: intake``) that time is spent holding the rulebook's
lock that the next batch's cordon waits for. These functions build the same rows in one call (the role's filters
``dsxos.cluster.sentinel_*_outcomes``); each row is exactly what the per-node steps would have reported.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence

#: the decisions an intake run reports (the kinds the per-node loop handles)
REPORTED_KINDS = ("open", "resume", "join", "needs_attention")


class OutcomeError(ValueError):
    """A decision or batch entry without what an outcome needs."""


def _by_node(decisions: Iterable[Any]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for index, decision in enumerate(decisions or []):
        if not isinstance(decision, Mapping) or not isinstance(decision.get("node"), str):
            raise OutcomeError(f"decisions[{index}] must be a mapping with a node name, got {decision!r:.120}")
        out[decision["node"]] = decision
    return out


def outcome(decision: Mapping[str, Any], status: str, message: str, state: Optional[str] = None,
            incident: Optional[str] = None) -> dict[str, Any]:
    """One outcome row for ``decision`` (the row ``node_remediate.yml`` starts with, completed)."""
    return {"node": decision.get("node"), "kind": decision.get("kind"), "action": decision.get("action"),
            "incident": incident if incident is not None else decision.get("incident"), "status": status,
            "state": state if state is not None else decision.get("state"), "message": message,
            "held_back": list(decision.get("held_back") or [])}


def waiting_message(incident: Any, state: Any, held_back: Sequence[Any] = ()) -> str:
    """``incident <id> <state>, waiting for a release`` (with the alerts the breaker held back)."""
    text = f"incident {incident} {state}, waiting for a release"
    return text + (f" (held back: {', '.join(str(h) for h in held_back)})" if held_back else "")


def intake_outcomes(decisions: Sequence[Any], batch_nodes: Sequence[Any] = (), held_back: Sequence[Any] = (),  # pylint: disable=too-many-arguments
                    check_mode: bool = False, joined: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """What an intake run did for each decided node: ``quarantined`` (the batch opened its incident), ``joined`` (its
    new alerts were joined to the open incident), ``dry_run``/``check_mode``, or ``pending`` (left to the second run,
    also when ``joined`` - the intake's join results - says the incident ended before the join: the second run
    decides again). Nodes the breaker held back are reported by :func:`entry_outcomes` and left out here."""
    batch = {entry.get("node"): entry for entry in batch_nodes or [] if isinstance(entry, Mapping)}
    skipped = {entry.get("node") for entry in held_back or [] if isinstance(entry, Mapping)}
    ended = {entry.get("node") for entry in joined or [] if isinstance(entry, Mapping) and entry.get("ended")}
    rows = []
    for node, decision in _by_node(decisions).items():
        kind = decision.get("kind")
        if kind not in REPORTED_KINDS or node in skipped:
            continue
        done = batch.get(node) or {}
        current = done.get("current") if isinstance(done.get("current"), Mapping) else None
        state = current.get("state") if current else None
        if decision.get("dry_run") or check_mode:
            rows.append(outcome(decision, "dry_run" if decision.get("dry_run") else "check_mode",
                                f"would {kind} {decision.get('action')}", state))
        elif done.get("status") == "quarantined":
            rows.append(outcome(decision, "quarantined", str(done.get("detail") or ""), state))
        elif decision.get("join_events") and node in ended:
            rows.append(outcome(decision, "pending", f"incident {decision.get('incident')} ended before the new alerts joined it; "
                                                     "the second run decides again", state))
        elif decision.get("join_events"):
            rest = "" if kind == "join" else "; the rest is left to the second run"
            rows.append(outcome(decision, "joined", f"alerts joined to incident {decision.get('incident')}{rest}", state))
        else:
            rows.append(outcome(decision, "pending", f"{kind} {decision.get('action')} left to the second run", state))
    return rows


def entry_outcomes(entries: Sequence[Any], decisions: Sequence[Any], status: str, prefix: str = "",
                   states: Optional[Mapping[str, Any]] = None) -> list[dict[str, Any]]:
    """Outcomes for the entries a batch listed (``{node, incident, reason}``: held back, not drained, locked by another
    run) with their decisions' kind and action, ``status``, and ``prefix + reason`` as the message; ``states``
    (node -> state) overrides the decision's recorded state."""
    by_node = _by_node(decisions)
    rows = []
    for index, entry in enumerate(entries or []):
        if not isinstance(entry, Mapping) or entry.get("node") not in by_node:
            raise OutcomeError(f"entry {index} names no decided node: {entry!r:.120}")
        state = (states or {}).get(entry["node"])
        rows.append(outcome(by_node[entry["node"]], status, prefix + str(entry.get("reason") or ""), state,
                            entry.get("incident") or None))
    return rows


def waiting_outcomes(waiting: Sequence[Any], drained: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The nodes that only wait for a release, as the per-node steps report them: ``drained`` when this run's batch
    drained them, else the recorded state of a resumed incident, else ``quarantined`` (the batch just opened it)."""
    done = set(drained or [])
    rows = []
    for node, decision in _by_node(waiting).items():
        if node in done:
            state = "drained"
        elif decision.get("kind") == "resume":
            state = decision.get("state") or "quarantined"
        else:
            state = "quarantined"
        rows.append(outcome(decision, state, waiting_message(decision.get("incident"), state, decision.get("held_back") or ()), state))
    return rows


__all__ = ["OutcomeError", "REPORTED_KINDS", "entry_outcomes", "intake_outcomes", "outcome", "waiting_message", "waiting_outcomes"]
