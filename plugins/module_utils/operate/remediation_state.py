# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The sentinel's incident record on Nodes through the API: read, write with resourceVersion preconditions, Events.

Each write operation (``open``, ``advance``, ``join``, ``resolve``, ``close``, ``record``) is: GET the node, plan the
change with :mod:`.incident_changes` (pure), PATCH the annotations and the state label in ONE strategic merge patch that carries
the node's ``metadata.resourceVersion``; a concurrent writer makes the patch fail with 409 and the node is read and the
change planned again (``conflict_retries``). A change that happened emits one ``core/v1`` Event on the Node
(``involvedObject`` the Node, ``reason`` ``SentinelQuarantined`` ... ``SentinelReturned``, source ``dsxos-sentinel``);
the Event's name is derived from the incident, the step and the node's resourceVersion, so a retried step never
creates two Events. Events are best effort, as in Kubernetes: a refused Event is reported (``event_error``), the
recorded state stands.

``get`` returns the plain state of many nodes (the policy's ``node_state``); ``list`` returns the quarantined nodes and
the nodes with an open incident as rows and Markdown (the status playbook).
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import discard
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sConflict, K8sError, K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_label_selector, validate_namespace, validate_node_name
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import (
    DRAINING, LABEL_INCIDENT_STATE, OPEN_STATES, OUTCOMES, RECERTIFYING, REMEDIATING, STATES,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_changes import (
    AdvanceRequest, Change, OpenRequest, plan_advance, plan_close, plan_join, plan_open, plan_record, plan_resolve,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_status import status_markdown, status_row
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import IncidentError, format_time, validate_incident_id, validate_text
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_incidents import NodeIncidents
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import live_locks
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import patch_node, read_node
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import LABEL_STATE, STATE_QUARANTINED, default_actor

ACTIONS = ("get", "list", "open", "advance", "join", "resolve", "close", "record")
#: the incident states only a live run is in (the status calls such a node stalled when no run holds it)
MID_RUN_STATES = (DRAINING, REMEDIATING, RECERTIFYING)
WRITE_ACTIONS = ("open", "advance", "join", "resolve", "close", "record")
EVENT_SOURCE = "dsxos-sentinel"
DEFAULT_EVENT_NAMESPACE = "default"
DEFAULT_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class IncidentOptions:  # pylint: disable=too-many-instance-attributes
    """A validated ``node_incident`` request."""

    action: str
    node: str = ""
    nodes: tuple[str, ...] = ()
    incident: str = ""
    state: str = ""
    remediation: str = ""
    rule: str = ""
    reason: str = ""
    message: str = ""
    error: str = ""
    events: tuple[Mapping[str, Any], ...] = ()
    gpus: tuple[int, ...] = ()
    outcome: str = ""
    attempt: bool = False
    attempt_cap: int = 3
    attempt_window_s: float = 86400.0
    #: names the attempt an ``advance`` with ``attempt`` counts ("" = one generated per write operation)
    attempt_key: str = ""
    label_selector: str = ""
    #: ``list`` only: the namespace of the node locks, to say which run holds each node ("" = locks not read)
    lock_namespace: str = ""
    actor: str = ""
    emit_events: bool = True
    event_namespace: str = DEFAULT_EVENT_NAMESPACE
    history_limit: int = 20
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES
    #: ``close`` only: leave an incident with a firing alert open (an automatic release)
    require_all_resolved: bool = False


def _need(value: Any, name: str, action: str) -> None:
    if value in (None, "", [], ()):
        raise IncidentError(f"action {action!r} needs {name}", field=name, value=value)


def validate_options(params: Mapping[str, Any]) -> IncidentOptions:  # pylint: disable=too-many-branches
    """Check the module's params (names RFC 1123 with fullmatch, ids, states, numbers) before any API call."""
    action = params.get("action")
    if action not in ACTIONS:
        raise IncidentError(f"action must be one of {', '.join(ACTIONS)}", field="action", value=action)
    node = params.get("node") or ""
    if action in WRITE_ACTIONS:
        _need(node, "node", action)
    if node:
        node = validate_node_name(node, "node")
    nodes = tuple(validate_node_name(n, f"nodes[{i}]") for i, n in enumerate(params.get("nodes") or []))
    if action == "get" and not nodes and not node:
        raise IncidentError("action 'get' needs nodes (or node)", field="nodes", value=[])
    incident = params.get("incident") or ""
    if action in ("open", "advance", "close"):
        _need(incident, "incident", action)
    if incident:
        validate_incident_id(incident)
    state = params.get("state") or ""
    if action == "advance":
        _need(state, "state", action)
    if action == "open":
        state = state or OPEN_STATES[0]
    if state and state not in STATES:
        raise IncidentError(f"state must be one of {', '.join(STATES)}", field="state", value=state)
    outcome = params.get("outcome") or ""
    if action == "close":
        _need(outcome, "outcome", action)
    if outcome and outcome not in OUTCOMES:
        raise IncidentError(f"outcome must be one of {', '.join(OUTCOMES)}", field="outcome", value=outcome)
    events = params.get("events") or []
    if not isinstance(events, (list, tuple)) or not all(isinstance(e, Mapping) for e in events):
        raise IncidentError("events must be a list of alert events (dicts with fingerprint and starts_at)", field="events", value=events)
    if action in ("open", "resolve", "record"):
        _need(events, "events", action)
    gpus = []
    for index, gpu in enumerate(params.get("gpus") or []):
        if isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu < 1024:
            raise IncidentError("gpus must be GPU indexes (0-1023)", field=f"gpus[{index}]", value=gpu)
        gpus.append(gpu)
    cap = params.get("attempt_cap")
    cap = 3 if cap is None else cap
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise IncidentError("attempt_cap must be an integer >= 0", field="attempt_cap", value=cap)
    window = float(params.get("attempt_window_s") or 86400.0)
    if window <= 0:
        raise IncidentError("attempt_window_s must be > 0", field="attempt_window_s", value=window)
    history_limit = int(params.get("history_limit") or 20)
    retries = params.get("conflict_retries")
    retries = DEFAULT_CONFLICT_RETRIES if retries is None else int(retries)
    if history_limit < 1 or retries < 0:
        raise IncidentError("history_limit must be >= 1 and conflict_retries >= 0", field="history_limit", value=history_limit)
    namespace = validate_namespace(params.get("event_namespace") or DEFAULT_EVENT_NAMESPACE, "event_namespace")
    selector = validate_label_selector(params.get("label_selector") or "", "label_selector")
    lock_namespace = validate_namespace(params["lock_namespace"], "lock_namespace") if params.get("lock_namespace") else ""
    if action == "open":
        _need(params.get("remediation"), "remediation", action)
        validate_text(params.get("reason"), "reason", required=True, sanitize=True)
    return IncidentOptions(
        action=action, node=node, nodes=nodes or ((node,) if node else ()), incident=incident, state=state,
        remediation=validate_text(params.get("remediation"), "remediation"), rule=validate_text(params.get("rule"), "rule"),
        reason=validate_text(params.get("reason"), "reason", sanitize=True), message=validate_text(params.get("detail"), "detail", sanitize=True),
        error=validate_text(params.get("error"), "error", sanitize=True), events=tuple(dict(e) for e in events), gpus=tuple(gpus),
        outcome=outcome, attempt=bool(params.get("attempt")), attempt_cap=cap, attempt_window_s=window,
        attempt_key=validate_text(params.get("attempt_key"), "attempt_key"), label_selector=selector, lock_namespace=lock_namespace,
        actor=validate_text(params.get("actor"), "actor") or default_actor(), emit_events=params.get("emit_events") is not False,
        event_namespace=namespace, history_limit=history_limit, conflict_retries=retries,
        require_all_resolved=bool(params.get("require_all_resolved")))


def event_body(node: Mapping[str, Any], namespace: str, change: Change, incident_id: str, actor: str, now: str) -> dict[str, Any]:
    """A ``core/v1`` Event about the Node (name derived from node, incident, reason and the node's resourceVersion)."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    event = change.event or {}
    seed = f"{name}\0{incident_id}\0{event.get('reason')}\0{meta.get('resourceVersion')}\0{event.get('message')}"
    suffix = hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name[:200]}.{suffix}", "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "dsxos.cluster", "dsxos.io/incident": incident_id or "none"},
                         "annotations": {"dsxos.io/actor": actor[:253]}},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta.get("uid") or name},
            "reason": event.get("reason", ""), "message": event.get("message", "")[:1024], "type": event.get("type", "Normal"),
            "source": {"component": EVENT_SOURCE}, "reportingComponent": EVENT_SOURCE, "reportingInstance": actor[:128],
            "firstTimestamp": now, "lastTimestamp": now, "count": 1}


def emit_event(client: KubeApi, node: Mapping[str, Any], options: IncidentOptions, change: Change, incident_id: str,
               now: str) -> Optional[dict[str, Any]]:
    """Create the Event; None when created (or already there), else the error (Events are best effort)."""
    body = event_body(node, options.event_namespace, change, incident_id, options.actor, now)
    try:
        discard(client.call("create", "events", client.core.create_namespaced_event, options.event_namespace, body, _preload_content=False))
    except K8sConflict:
        return None
    except K8sError as err:
        return err.to_dict()
    return None


def _plan(view: NodeIncidents, options: IncidentOptions, now: str, now_s: float, attempt_key: str = "") -> Change:
    action = options.action
    if action == "open":
        return plan_open(view, OpenRequest(incident=options.incident, action=options.remediation, reason=options.reason,
                                           events=options.events, state=options.state, rule=options.rule, actor=options.actor,
                                           gpus=options.gpus, message=options.message), now)
    if action == "advance":
        return plan_advance(view, AdvanceRequest(incident=options.incident, state=options.state, message=options.message,
                                                 error=options.error, attempt=options.attempt, attempt_cap=options.attempt_cap,
                                                 attempt_window_s=options.attempt_window_s, remediation=options.remediation,
                                                 attempt_key=attempt_key or options.attempt_key), now, now_s)
    if action == "join":
        return plan_join(view, options.incident or None, options.events, now)
    if action == "resolve":
        return plan_resolve(view, options.events, now)
    if action == "close":
        return plan_close(view, options.incident, options.outcome, options.message, now, options.history_limit, options.require_all_resolved)
    return plan_record(view, options.events, now)


def apply_incident(client: KubeApi, options: IncidentOptions, check_mode: bool = False,
                   clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """One write operation on one node: read, plan, patch with the resourceVersion (409: again), emit the Event.

    A remediation attempt carries a key (``options.attempt_key``, else one generated for this operation) written in the
    same patch as the count: when a PATCH was applied but its response lost, the client's retry meets 409, the node is
    read again, and the planned attempt is found already counted - it is reported as this operation's change
    (``response_lost``), never counted twice."""
    attempts = 0
    key = (options.attempt_key or "op-" + uuid.uuid4().hex[:16]) if options.attempt else ""
    sent: Optional[Change] = None
    while True:
        attempts += 1
        now_s = clock()
        now = format_time(now_s)
        try:
            node = read_node(client, options.node)
        except K8sNotFound as err:
            raise IncidentError(f"node {options.node} not found", node=options.node, resource="nodes", name=options.node) from err
        view = NodeIncidents.from_node(node)
        change = _plan(view, options, now, now_s, key)
        result = dict(change.result)
        result.update({"changed": change.changed, "msg": change.message, "attempts": attempts})
        if sent is not None and not change.changed and result.get("attempt_counted"):
            # our earlier PATCH was applied; only its response was lost
            result.update(changed=True, response_lost=True,
                          msg=f"{sent.message} (the API server applied our first attempt; its response was lost)")
            _announce(client, node, options, sent, result, now)
            return result
        if not change.changed or check_mode:
            return result
        meta: dict[str, Any] = {"resourceVersion": view.resource_version, "annotations": dict(change.annotations)}
        if change.labels:
            meta["labels"] = dict(change.labels)
        try:
            written = patch_node(client, options.node, {"metadata": meta}, False)
        except K8sConflict:
            if attempts > options.conflict_retries:
                raise IncidentError(f"node {options.node}: still conflicting after {attempts} attempts (another writer keeps "
                                    "changing it)", node=options.node, resource="nodes", name=options.node) from None
            sent = change if key else None
            continue
        _announce(client, written, options, change, result, now)
        return result


def _announce(client: KubeApi, node: Mapping[str, Any], options: IncidentOptions, change: Change, result: dict[str, Any], now: str) -> None:
    """Emit the Event of ``change`` (when it has one) and note it in ``result``."""
    if change.event is None or not options.emit_events:
        return
    incident = (result.get("incident") or result.get("closed") or {}).get("id") or options.incident
    error = emit_event(client, node, options, change, incident, now)
    result["event"] = {"reason": change.event["reason"], "type": change.event["type"], "message": change.event["message"]}
    if error is not None:
        result["event_error"] = error


def get_states(client: KubeApi, nodes: Sequence[str]) -> dict[str, Any]:
    """Plain incident state of each node (``exists: false`` for a missing one).

    A node whose incident annotation cannot be parsed gets ``unreadable: true`` and ``error`` (its message) instead of
    failing the whole batch; :meth:`NodeIncidents.from_state` refuses such a state, so the policy skips only that node.
    """
    out: dict[str, Any] = {}
    for name in nodes:
        try:
            node = read_node(client, name)
        except K8sNotFound:
            out[name] = {"exists": False, "labels": {}, "incident": None, "history": [], "attempts": [], "recent": []}
            continue
        try:
            out[name] = NodeIncidents.from_node(node).to_state()
        except IncidentError as err:
            meta = node.get("metadata") or {}
            out[name] = {"exists": True, "unreadable": True, "error": str(err), "labels": dict(meta.get("labels") or {}),
                         "unschedulable": bool((node.get("spec") or {}).get("unschedulable")), "incident": None, "history": [],
                         "attempts": [], "recent": []}
    return out


def _list(client: KubeApi, selector: str) -> list[dict[str, Any]]:
    resp = client.call("list", "nodes", client.core.list_node, label_selector=selector, _preload_content=False)
    return list(json.loads(resp.data).get("items") or [])


def list_status(client: KubeApi, extra_selector: str = "", lock_namespace: str = "") -> dict[str, Any]:
    """Nodes quarantined by us or with an open incident: rows (sorted by node), counts by state, ``release_due``
    (``[{node, incident, unfinished}]``: the releases the sweep of a release run finishes) and Markdown.

    With ``lock_namespace`` each row has ``locked_by`` (``{holder, purpose, reason, expires_at}`` of the run holding the
    node now, else None) and ``stalled`` (draining, remediating or recertifying while no run holds the node: its run
    died), and ``release_due`` leaves out the locked nodes (the run holding one releases it when it ends)."""
    locks = live_locks(client, lock_namespace) if lock_namespace else None
    extra = ("," + extra_selector) if extra_selector else ""
    found: dict[str, dict[str, Any]] = {}
    for selector in (f"{LABEL_STATE}={STATE_QUARANTINED}{extra}", f"{LABEL_INCIDENT_STATE}{extra}"):
        for node in _list(client, selector):
            found[str((node.get("metadata") or {}).get("name"))] = node
    rows = []
    for name in sorted(found):
        try:
            rows.append(status_row(NodeIncidents.from_node(found[name])))
        except IncidentError as err:
            rows.append({"node": name, "quarantine": None, "incident": None, "state": "unreadable", "release_due": None, "orphan_incident": None,
                         "action": None, "reason": str(err), "since": None, "updated": None, "attempts": 0, "last_error": str(err),
                         "unschedulable": None})
    if locks is not None:
        for row in rows:
            row["locked_by"] = locks.get(row["node"])
            if row["locked_by"]:
                row["release_due"] = None  # the run holding the node releases it when it ends
            # in the middle of its steps and no run holds it: the run died (the alert's next delivery resumes it)
            row["stalled"] = bool(row.get("state") in MID_RUN_STATES and not row["locked_by"])
    counts: dict[str, int] = {}
    for row in rows:
        key = str(row.get("state") or "quarantined-without-incident")
        counts[key] = counts.get(key, 0) + 1
    # the releases no alert will bring any more (a release that died; resolved alerts marked while another run held the node)
    due = [{"node": row["node"], **row["release_due"]} for row in rows if row.get("release_due")]
    return {"nodes": rows, "counts": counts, "release_due": due, "markdown": status_markdown(rows)}


def run_node_incident(client: KubeApi, options: IncidentOptions, check_mode: bool = False,
                      clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """The ``node_incident`` module: ``get`` / ``list`` read; the other actions write one node."""
    if options.action == "get":
        return {"changed": False, "nodes": get_states(client, options.nodes)}
    if options.action == "list":
        out = list_status(client, options.label_selector, options.lock_namespace)
        out["changed"] = False
        return out
    return apply_incident(client, options, check_mode, clock)


__all__ = ["ACTIONS", "IncidentOptions", "apply_incident", "emit_event", "event_body", "get_states", "list_status",
           "run_node_incident", "validate_options"]
