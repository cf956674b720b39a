# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The intake of one sentinel run, in one call: validate the alerts, read their nodes' records, decide, quarantine.

A remediate run used to start three module processes before it could decide anything (validate the events to learn
the node names, ``node_incident get`` those nodes, decide with what was read) and a fourth to quarantine. Each start
costs an interpreter, the module's imports and the ``kubernetes`` client (0.8 s of CPU, several seconds on a loaded
controller), and they all sit between an alert and its cordon. Here the same steps run in one process:

1. :func:`~.sentinel_policy.plan` with no node state validates every event and rule and names the nodes (pure; bad
   input fails here, before any API call);
2. :func:`read_states` reads those nodes' incident records concurrently (the same
   :func:`~.remediation_state.get_states` the ``node_incident get`` action uses);
3. :func:`~.sentinel_policy.plan` decides with what was read - the result is exactly ``sentinel_plan``'s;
4. :func:`~.batch_quarantine.quarantine_batch` quarantines every decision that opens an incident (``open``, and
   ``needs_attention`` for a node at its attempt cap) at once (optional);
5. :func:`join_alerts` writes the new alerts of open incidents (``join`` decisions, and ``resume`` ones that bring new
   alerts) to their incidents, ``workers`` nodes at a time - no lock: another run may hold the node for minutes, and
   each write carries the node's resourceVersion (a concurrent writer makes it read and plan again). A join that
   fails is listed with its error, not raised: the role's next task joins it again.

A failure of step 4 as a whole - any exception, a bug included (not of one node: those are ``deferred`` inside the
batch) - does not lose the plan: it is returned with ``batch_error`` and the role's per-node steps do every step
themselves. Bad input fails in step 1, before anything is read or written.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_quarantine import OPENING_KINDS, BatchOptions, quarantine_batch
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import apply_incident, get_states
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import validate_options as validate_incident_options
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import PolicyOptions, plan

#: nodes read at the same time (each read is one GET; the client's qps limit still applies)
READ_WORKERS = 16


def read_states(client: KubeApi, nodes: Sequence[str], workers: int = READ_WORKERS) -> dict[str, Any]:
    """:func:`get_states` of ``nodes``, ``workers`` at a time (a K8sError of any read propagates)."""
    names = list(dict.fromkeys(nodes))
    if len(names) <= 1:
        return get_states(client, names)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(names)))) as pool:
        parts = list(pool.map(lambda name: get_states(client, [name]), names))
    out: dict[str, Any] = {}
    for part in parts:
        out.update(part)
    return out


def plan_with_state(client: KubeApi, raw_events: Sequence[Any], raw_rules: Any, options: PolicyOptions,
                    manual: Sequence[Mapping[str, Any]] = (), workers: int = READ_WORKERS) -> dict[str, Any]:
    """Validate (no API call on bad input), read the named nodes, decide: ``sentinel_plan``'s result."""
    named = plan(raw_events, raw_rules, {}, options, manual)["nodes"]
    state = read_states(client, named, workers) if named else {}
    return plan(raw_events, raw_rules, state, options, manual)


def join_alerts(client: KubeApi, decisions: Sequence[Mapping[str, Any]], batch: BatchOptions, check_mode: bool = False) -> list[dict[str, Any]]:
    """Join the new alerts (``join_events``) of every decision that brings some (not a dry run) to its open incident, one
    incident write per node, ``batch.workers`` at a time: ``[{node, incident, changed, msg}]``, or ``error`` and ``msg`` for
    a join that failed (the caller joins it again). Nothing is written in check mode."""
    todo = [d for d in decisions if d.get("join_events") and not d.get("dry_run")]
    if check_mode or not todo:
        return []

    def join(decision: Mapping[str, Any]) -> dict[str, Any]:
        node, incident = decision.get("node"), decision.get("incident")
        try:
            request = validate_incident_options({"action": "join", "node": node, "incident": incident, "actor": batch.actor,
                                                 "events": list(decision.get("join_events") or []), "event_namespace": batch.event_namespace})
            done = apply_incident(client, request)
        except (K8sError, IncidentError) as err:
            return {"node": node, "incident": incident, "changed": False, "error": err.to_dict(), "msg": str(err)}
        return {"node": node, "incident": incident, "changed": bool(done.get("changed")), "msg": str(done.get("msg") or ""),
                "ended": bool(done.get("ended"))}
    with ThreadPoolExecutor(max_workers=max(1, min(batch.workers, len(todo)))) as pool:
        return list(pool.map(join, todo))


def plan_and_quarantine(client: KubeApi, raw_events: Sequence[Any], raw_rules: Any, options: PolicyOptions,
                        manual: Sequence[Mapping[str, Any]] = (), batch: Optional[BatchOptions] = None,
                        check_mode: bool = False) -> dict[str, Any]:
    """:func:`plan_with_state`, then (when ``batch`` is given) the batch quarantine of its ``open`` decisions.

    The result is the batch's (``quarantined``, ``held_back``, ``deferred``, ...; empty lists without a batch) with the
    plan under ``plan``; ``batch_error`` when the batch as a whole could not run (the plan is still returned).
    """
    decided = plan_with_state(client, raw_events, raw_rules, options, manual, batch.workers if batch else READ_WORKERS)
    empty: dict[str, Any] = {"changed": False, "nodes": [], "quarantined": [], "already_open": [], "held_back": [], "deferred": [],
                             "ignored": [], "circuit_breaker": None, "api_calls": dict(getattr(client, "stats", {}) or {})}
    opening = [d for d in decided["decisions"] if d.get("kind") in OPENING_KINDS and not d.get("dry_run")]
    counts = decided["counts"]
    text = f"planned {counts['events']} event(s): {counts['acting']} node(s) to act on, {len(opening)} to open"
    if batch is None:
        return dict(empty, plan=decided, msg=text)
    try:
        result = quarantine_batch(client, opening, batch, check_mode) if opening else dict(empty, msg=text + "; nothing to quarantine")
    except Exception as err:  # pylint: disable=broad-exception-caught  # any failure of the batch: the plan must survive
        error = err.to_dict() if hasattr(err, "to_dict") else {"error": type(err).__name__, "msg": str(err)}
        return dict(empty, plan=decided, batch_error=error,
                    msg=f"planned; the batch quarantine failed ({type(err).__name__}), the per-node steps do it: {err}")
    result["plan"] = decided
    try:
        joined = join_alerts(client, decided["decisions"], batch, check_mode)
    except Exception as err:  # pylint: disable=broad-exception-caught  # the quarantines stand; the role joins each node itself
        joined = []
        result["join_error"] = err.to_dict() if hasattr(err, "to_dict") else {"error": type(err).__name__, "msg": str(err)}
    result["joined"] = joined
    if joined:
        result["changed"] = bool(result.get("changed")) or any(j["changed"] for j in joined)
        failed = [j["node"] for j in joined if "error" in j]
        result["msg"] = f"{result.get('msg', '')}; new alerts joined to the open incidents of {len(joined) - len(failed)} node(s)" + (
            f" ({len(failed)} failed, joined again by the role: {', '.join(failed[:5])})" if failed else "")
    return result


__all__ = ["READ_WORKERS", "join_alerts", "plan_and_quarantine", "plan_with_state", "read_states"]
