# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Quarantine bookkeeping on a Node object: what we changed, what was there before, who did it and why.

Pure logic (no API calls). Three markers live on the node:

* label ``dsxos.io/quarantine`` = ``quarantined`` | ``released``;
* annotation ``dsxos.io/quarantine-prior``: JSON :class:`QuarantineRecord` - the node's state before our first
  action (``unschedulable``, taints, the prior values of the labels we set) and what WE applied (cordon, taints,
  labels) with the actor who first applied each (``applied_by``) and every actor that asked for each (``held_by``),
  plus the current reason and the actor who gave it (``reason``/``actor`` always belong together), the reasons given so far with their actors (``reasons``) and
  ``since``. A release undoes only what we applied, so a cordon or taint someone else set survives it; a release
  scoped to its actor (``release_scope="actor"``) also keeps what another actor asked for through this module;
* annotation ``dsxos.io/quarantine-history``: JSON list of ``{action, reason, actor, time, op}`` (bounded length;
  every entry pairs an actor with the reason that actor gave; ``op`` is the operation id of the task that wrote it,
  so a task whose PATCH response was lost can recognise its own applied change).

:func:`plan_action` turns (node, request) into a :class:`Plan` whose ``patch`` (strategic merge patch with the
node's ``metadata.resourceVersion`` as a precondition) carries ``spec.unschedulable`` and the annotations in the
SAME request: a node is never cordoned without its reason being recorded.
"""
from __future__ import annotations

import getpass
import json
import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import (
    K8sInvalidName, validate_label_key, validate_label_value,
)

LABEL_STATE = "dsxos.io/quarantine"
ANN_PRIOR = "dsxos.io/quarantine-prior"
ANN_HISTORY = "dsxos.io/quarantine-history"
STATE_QUARANTINED = "quarantined"
STATE_RELEASED = "released"
DEFAULT_HISTORY_LIMIT = 20
MAX_REASON_LEN = 1024
#: reasons kept in the record (the history keeps every change up to ``history_limit``)
MAX_RECORD_REASONS = 10

ACTIONS = ("cordon", "uncordon", "taint", "untaint", "label", "release")
#: actions that put (more of) a node into quarantine: a reason is required
QUARANTINE_ACTIONS = ("cordon", "taint", "label")
#: actions that take capacity away: the circuit breaker is consulted for them
CAPACITY_ACTIONS = ("cordon", "taint")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: what a release undoes: everything the record holds, or only what the releasing actor holds alone
RELEASE_SCOPES = ("all", "actor")


def new_operation_id() -> str:
    """A fresh operation id (``op-`` and 16 hex digits): one per task, stamped into every history entry it writes."""
    return "op-" + uuid.uuid4().hex[:16]


def default_actor() -> str:
    """Who acts: ``$DSXOS_ACTOR``, else ``<user>@<host>``."""
    env = os.environ.get("DSXOS_ACTOR")
    if env:
        return env
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname() or 'localhost'}"


class QuarantineStateError(K8sError):
    """A request option or an annotation on the node is malformed (names the node/field/value)."""


def json_object_list(text: Optional[str]) -> list[dict[str, Any]]:
    """A JSON list of objects from an annotation (anything malformed counts as empty: rewritten on the next change)."""
    if not text:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    return [dict(e) for e in data if isinstance(e, dict)] if isinstance(data, list) else []


@dataclass(frozen=True)
class Taint:
    """A node taint; identity is ``(key, effect)`` as for the API server."""

    key: str
    effect: str
    value: Optional[str] = None

    @property
    def ident(self) -> tuple[str, str]:
        """``(key, effect)``."""
        return (self.key, self.effect)

    def to_dict(self) -> dict[str, Any]:
        """API form (``timeAdded`` is not kept: the server sets it for NoExecute taints)."""
        out: dict[str, Any] = {"key": self.key, "effect": self.effect}
        if self.value not in (None, ""):
            out["value"] = self.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Taint":
        """From an API taint dict (unvalidated: taints already on a node are taken as they are)."""
        value = data.get("value")
        return cls(str(data.get("key", "")), str(data.get("effect", "")), None if value in (None, "") else str(value))


def validate_taint(data: Any, index: int, require_effect: bool = True) -> Taint:
    """A user-supplied taint ``{key, value?, effect}``; raises :class:`K8sInvalidName`/:class:`QuarantineStateError`."""
    where = f"taints[{index}]"
    if not isinstance(data, Mapping):
        raise QuarantineStateError(f"{where} must be a dict with key, effect and optional value, got {data!r}")
    unknown = sorted(set(data) - {"key", "value", "effect"})
    if unknown:
        raise QuarantineStateError(f"{where} has unknown field(s) {', '.join(unknown)} (allowed: key, value, effect)")
    key = validate_label_key(data.get("key"), f"{where}.key")
    value = data.get("value")
    if value is not None:
        value = validate_label_value(str(value), f"{where}.value")
    effect = data.get("effect")
    if effect is None and not require_effect:
        return Taint(key, "", value or None)
    if effect not in TAINT_EFFECTS:
        raise QuarantineStateError(f"{where}.effect must be one of {', '.join(TAINT_EFFECTS)}, got {effect!r}")
    return Taint(key, str(effect), value or None)


def validate_labels(data: Any) -> dict[str, Optional[str]]:
    """User-supplied labels ``{key: value}``; a null value removes the label. The state label is reserved."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise QuarantineStateError(f"labels must be a dict of label key -> value (null removes), got {data!r}")
    out: dict[str, Optional[str]] = {}
    for key, value in data.items():
        validate_label_key(key, "labels key")
        if key == LABEL_STATE:
            raise QuarantineStateError(f"labels key {key!r} is managed by dsxos.cluster.node_quarantine and cannot be set directly")
        out[key] = None if value is None else validate_label_value(str(value), f"labels[{key}]")
    return out


def validate_reason(reason: Any, action: str) -> Optional[str]:
    """The reason string (required for quarantine actions, at most 1024 characters)."""
    if reason is None or (isinstance(reason, str) and not reason.strip()):
        if action in QUARANTINE_ACTIONS:
            raise QuarantineStateError(f"reason is required for action {action!r} (it is recorded on the node in {ANN_HISTORY})")
        return None
    if not isinstance(reason, str):
        raise QuarantineStateError(f"reason must be a string, got {type(reason).__name__}")
    if len(reason) > MAX_REASON_LEN:
        raise QuarantineStateError(f"reason is {len(reason)} characters long; at most {MAX_REASON_LEN} are allowed")
    return reason.strip()


@dataclass
class QuarantineRecord:  # pylint: disable=too-many-instance-attributes
    """Content of the ``dsxos.io/quarantine-prior`` annotation."""

    prior_unschedulable: bool = False
    prior_taints: list[dict[str, Any]] = field(default_factory=list)
    prior_labels: dict[str, Optional[str]] = field(default_factory=dict)
    cordoned: bool = False
    taints: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    #: the current reason and the actor who gave it
    reason: str = ""
    actor: str = ""
    since: str = ""
    #: who first applied each thing we hold: ``cordon``, ``taint:<key>:<effect>``, ``label:<key>`` -> actor
    applied_by: dict[str, str] = field(default_factory=dict)
    #: the reasons given so far (oldest first, at most MAX_RECORD_REASONS): ``{reason, actor, time}``
    reasons: list[dict[str, str]] = field(default_factory=list)
    #: every actor that asked for each thing the record covers (``cordon``, ``taint:<key>:<effect>``, ``label:<key>``):
    #: a release scoped to one actor (``release_scope: actor``) undoes only what no other actor still asks for
    held_by: dict[str, list[str]] = field(default_factory=dict)

    def claim(self, slot: str, actor: str) -> None:
        """Note that ``actor`` asks for ``slot``."""
        holders = self.held_by.get(slot, [])
        if actor and actor not in holders:
            self.held_by[slot] = sorted(holders + [actor])

    def others_hold(self, slot: str, actor: str) -> bool:
        """Does an actor other than ``actor`` still ask for ``slot``?"""
        return any(holder != actor for holder in self.held_by.get(slot, []))

    def holds_anything(self) -> bool:
        """Does the record still claim a cordon, a taint or a label?"""
        return bool(self.cordoned or self.taints or self.labels)

    def give_reason(self, reason: str, actor: str, now: str) -> None:
        """Make ``reason`` (given by ``actor``) the current one and add the pair to ``reasons``."""
        self.reason, self.actor = reason, actor
        if not self.reasons or (self.reasons[-1].get("reason"), self.reasons[-1].get("actor")) != (reason, actor):
            self.reasons = (self.reasons + [{"reason": reason, "actor": actor, "time": now}])[-MAX_RECORD_REASONS:]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (stable key order)."""
        return {"prior": {"unschedulable": self.prior_unschedulable, "taints": self.prior_taints, "labels": self.prior_labels},
                "applied": {"cordon": self.cordoned, "taints": self.taints, "labels": sorted(self.labels)},
                "applied_by": dict(sorted(self.applied_by.items())), "reasons": self.reasons,
                "held_by": {slot: sorted(holders) for slot, holders in sorted(self.held_by.items()) if holders},
                "reason": self.reason, "actor": self.actor, "since": self.since}

    def to_json(self) -> str:
        """Compact JSON for the annotation."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, node: str) -> "QuarantineRecord":
        """Parse the annotation; raises :class:`QuarantineStateError` naming the node and annotation when malformed."""
        try:
            data = json.loads(text)
            prior, applied = data["prior"], data["applied"]
            reason, actor, since = str(data.get("reason") or ""), str(data.get("actor") or ""), str(data.get("since") or "")
            reasons = [{"reason": str(r.get("reason") or ""), "actor": str(r.get("actor") or ""), "time": str(r.get("time") or "")}
                       for r in data.get("reasons") or []]
            if "reasons" not in data and reason:  # a record written before reasons were kept
                reasons = [{"reason": reason, "actor": actor, "time": since}]
            applied_by = {str(k): str(v) for k, v in (data.get("applied_by") or {}).items()}
            held_by = {str(k): sorted({str(a) for a in v}) for k, v in (data.get("held_by") or {}).items() if v}
            if "held_by" not in data:  # a record written before claims were kept: the first applier holds each thing
                held_by = {slot: [who] for slot, who in applied_by.items() if who}
            return cls(prior_unschedulable=bool(prior.get("unschedulable", False)),
                       prior_taints=[dict(t) for t in prior.get("taints") or []],
                       prior_labels={str(k): (None if v is None else str(v)) for k, v in (prior.get("labels") or {}).items()},
                       cordoned=bool(applied.get("cordon", False)),
                       taints=[dict(t) for t in applied.get("taints") or []],
                       labels=[str(k) for k in applied.get("labels") or []],
                       reason=reason, actor=actor, since=since, reasons=reasons, applied_by=applied_by, held_by=held_by)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise QuarantineStateError(f"node {node}: annotation {ANN_PRIOR} is not a valid quarantine record ({exc}): {text[:200]!r}",
                                       resource="nodes", name=node, node=node) from exc


@dataclass
class NodeView:
    """The parts of a Node the quarantine logic reads."""

    name: str
    resource_version: str
    unschedulable: bool
    taints: list[dict[str, Any]]
    labels: dict[str, str]
    annotations: dict[str, str]

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> "NodeView":
        """From a Node as a plain (camelCase) dict."""
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        return cls(name=str(meta.get("name", "")), resource_version=str(meta.get("resourceVersion") or ""),
                   unschedulable=bool(spec.get("unschedulable")), taints=[dict(t) for t in spec.get("taints") or []],
                   labels=dict(meta.get("labels") or {}), annotations=dict(meta.get("annotations") or {}))

    def record(self) -> Optional[QuarantineRecord]:
        """Our record on the node, if any."""
        text = self.annotations.get(ANN_PRIOR)
        return None if not text else QuarantineRecord.from_json(text, self.name)

    def history(self) -> list[dict[str, Any]]:
        """The history annotation (a malformed one counts as empty: it is rewritten on the next change)."""
        return json_object_list(self.annotations.get(ANN_HISTORY))

    @property
    def state(self) -> Optional[str]:
        """Value of the state label."""
        return self.labels.get(LABEL_STATE)


@dataclass(frozen=True)
class QuarantineRequest:  # pylint: disable=too-many-instance-attributes
    """One action to apply to a node."""

    action: str
    reason: Optional[str] = None
    actor: str = ""
    taints: tuple[Taint, ...] = ()
    labels: tuple[tuple[str, Optional[str]], ...] = ()
    now: str = ""
    #: cordon only: keep an existing record's reason (drain's "ensure cordoned")
    keep_existing_reason: bool = False
    history_limit: int = DEFAULT_HISTORY_LIMIT
    #: stamped into the history entry of every change (one per task; see :func:`applied_operation`)
    operation_id: str = field(default_factory=new_operation_id)
    #: release only: ``all`` undoes everything the record holds (an operator's release); ``actor`` undoes only what
    #: ``actor`` asked for and no other actor still asks for (the sentinel releasing its own incident)
    release_scope: str = "all"


@dataclass
class Plan:
    """Result of :func:`plan_action`: whether anything changes and the patch that does it."""

    node: str
    changed: bool
    patch: Optional[dict[str, Any]]
    after: dict[str, Any]
    new_quarantine: bool
    message: str
    history_entry: Optional[dict[str, Any]] = None
    before: dict[str, Any] = field(default_factory=dict)


def _taint_ids(taints: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(t.get("key", "")), str(t.get("effect", ""))) for t in taints}


def _same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return Taint.from_dict(a) == Taint.from_dict(b)


def _taint_slot(key: Any, effect: Any) -> str:
    return f"taint:{key}:{effect}"


def _apply_quarantine(view: NodeView, rec: QuarantineRecord, req: QuarantineRequest, state: dict[str, Any]) -> None:
    if req.action == "cordon":
        rec.claim("cordon", req.actor)
    for taint in req.taints:
        rec.claim(_taint_slot(taint.key, taint.effect), req.actor)
    for key in dict(req.labels):
        rec.claim(f"label:{key}", req.actor)
    if req.action == "cordon" and not state["unschedulable"]:
        state["unschedulable"] = True
        rec.cordoned = True
        rec.applied_by["cordon"] = req.actor
    for taint in req.taints:
        current = [t for t in state["taints"] if (t.get("key"), t.get("effect")) == taint.ident]
        if current and _same_taint(current[0], taint.to_dict()):
            continue
        state["taints"] = [t for t in state["taints"] if (t.get("key"), t.get("effect")) != taint.ident] + [taint.to_dict()]
        rec.taints = [t for t in rec.taints if (t.get("key"), t.get("effect")) != taint.ident] + [taint.to_dict()]
        rec.applied_by.setdefault(_taint_slot(taint.key, taint.effect), req.actor)
    for key, value in req.labels:
        if state["labels"].get(key) == value:
            continue
        if key not in rec.labels:
            rec.prior_labels[key] = view.labels.get(key)
            rec.labels.append(key)
        rec.applied_by.setdefault(f"label:{key}", req.actor)
        if value is None:
            state["labels"].pop(key, None)
        else:
            state["labels"][key] = value
    if req.reason and req.reason != rec.reason and not (req.keep_existing_reason and rec.reason):
        rec.give_reason(req.reason, req.actor, req.now)
    state["labels"][LABEL_STATE] = STATE_QUARANTINED


def _apply_release(rec: QuarantineRecord, req: QuarantineRequest, state: dict[str, Any]) -> None:
    """Undo what the record holds: everything (scope ``all``), or only what ``req.actor`` asked for and no other actor
    still asks for (scope ``actor``); what stays keeps its record, with the reason of an actor still holding it."""
    scoped = req.release_scope == "actor"
    if scoped:
        rec.held_by = {slot: [a for a in holders if a != req.actor] for slot, holders in rec.held_by.items()}
        rec.held_by = {slot: holders for slot, holders in rec.held_by.items() if holders}
    else:
        rec.held_by = {}

    def kept(slot: str) -> bool:
        return scoped and bool(rec.held_by.get(slot))

    if rec.cordoned and not kept("cordon"):
        if not rec.prior_unschedulable:
            state["unschedulable"] = False
        rec.cordoned = False
    undone = _taint_ids([t for t in rec.taints if not kept(_taint_slot(t.get("key"), t.get("effect")))])
    kept_taints = [t for t in state["taints"] if (t.get("key"), t.get("effect")) not in undone]
    restored = [t for t in rec.prior_taints if (t.get("key"), t.get("effect")) in undone]
    state["taints"] = kept_taints + restored
    rec.taints = [t for t in rec.taints if (t.get("key"), t.get("effect")) not in undone]
    for key in list(rec.labels):
        if kept(f"label:{key}"):
            continue
        prior = rec.prior_labels.pop(key, None)
        if prior is None:
            state["labels"].pop(key, None)
        else:
            state["labels"][key] = prior
        rec.labels.remove(key)
    held = {"cordon"} if rec.cordoned else set()
    held |= {_taint_slot(t.get("key"), t.get("effect")) for t in rec.taints} | {f"label:{key}" for key in rec.labels}
    rec.applied_by = {slot: who for slot, who in rec.applied_by.items() if slot in held}
    if scoped and rec.holds_anything():
        holders = {a for slot in held for a in rec.held_by.get(slot, [])}
        given = [r for r in rec.reasons if r.get("actor") in holders]
        if given:
            rec.reason, rec.actor = given[-1]["reason"], given[-1]["actor"]


def _apply_undo(rec: Optional[QuarantineRecord], req: QuarantineRequest, state: dict[str, Any]) -> None:
    if req.action == "uncordon":
        state["unschedulable"] = False
        if rec is not None:
            rec.cordoned = False
            rec.applied_by.pop("cordon", None)
        return

    # untaint: a taint without effect removes every effect of that key
    def hit(taint: Mapping[str, Any]) -> bool:
        return any(taint.get("key") == t.key and (not t.effect or taint.get("effect") == t.effect) for t in req.taints)
    state["taints"] = [t for t in state["taints"] if not hit(t)]
    if rec is not None:
        rec.taints = [t for t in rec.taints if not hit(t)]
        held = {_taint_slot(t.get("key"), t.get("effect")) for t in rec.taints}
        rec.applied_by = {k: v for k, v in rec.applied_by.items() if not k.startswith("taint:") or k in held}


def plan_action(node: Mapping[str, Any], req: QuarantineRequest) -> Plan:  # pylint: disable=too-many-locals,too-many-branches
    """Compute the change ``req`` makes to ``node`` (a Node as a camelCase dict)."""
    if req.action not in ACTIONS:
        raise QuarantineStateError(f"unknown action {req.action!r}; expected one of {', '.join(ACTIONS)}")
    if req.release_scope not in RELEASE_SCOPES:
        raise QuarantineStateError(f"release_scope must be one of {', '.join(RELEASE_SCOPES)}, got {req.release_scope!r}")
    view = NodeView.from_node(node)
    old_rec = view.record()
    rec = QuarantineRecord.from_json(old_rec.to_json(), view.name) if old_rec else None
    state: dict[str, Any] = {"unschedulable": view.unschedulable, "taints": [dict(t) for t in view.taints],
                             "labels": dict(view.labels)}
    new_quarantine = False
    if req.action in QUARANTINE_ACTIONS:
        if rec is None:
            new_quarantine = True
            rec = QuarantineRecord(prior_unschedulable=view.unschedulable, prior_taints=[dict(t) for t in view.taints],
                                   actor=req.actor, since=req.now)
        _apply_quarantine(view, rec, req, state)
    elif req.action == "release":
        if rec is not None:
            _apply_release(rec, req, state)
        if (view.state is not None or rec is not None) and (rec is None or not rec.holds_anything()):
            state["labels"][LABEL_STATE] = STATE_RELEASED
    else:
        _apply_undo(rec, req, state)
    if rec is not None and req.action not in QUARANTINE_ACTIONS and not rec.holds_anything():
        # a quarantine action keeps its record even when it claims nothing (a foreign cordon still gets our reason)
        rec = None
        if view.state == STATE_QUARANTINED or old_rec is not None:
            state["labels"][LABEL_STATE] = STATE_RELEASED

    ann_prior_new = rec.to_json() if rec is not None else None
    # compared in normal form: a record written by an older version (no applied_by/reasons) is not a change by itself
    ann_prior_old = old_rec.to_json() if old_rec is not None else None
    spec_patch: dict[str, Any] = {}
    if state["unschedulable"] != view.unschedulable:
        spec_patch["unschedulable"] = True if state["unschedulable"] else None
    if state["taints"] != view.taints:
        spec_patch["taints"] = state["taints"] or None
    label_patch = {k: v for k, v in state["labels"].items() if view.labels.get(k) != v}
    label_patch.update({k: None for k in view.labels if k not in state["labels"]})
    # a record whose reason changed is a change of its own (the history says why)
    record_changed = (ann_prior_new or None) != (ann_prior_old or None)
    if record_changed and req.action in QUARANTINE_ACTIONS and rec is not None and old_rec is not None:
        # another actor asking, with the same reason, for what is already there changes nothing (the same cordon twice
        # is idempotent); an actor with a reason of its own is recorded as holding what it asked for
        record_changed = _without_claims(rec) != _without_claims(old_rec)
        if not record_changed:
            ann_prior_new = ann_prior_old
    changed = bool(spec_patch or label_patch or record_changed)
    after = {"unschedulable": state["unschedulable"], "taints": state["taints"], "state": state["labels"].get(LABEL_STATE),
             "reason": rec.reason if rec is not None else None}
    old_reason = old_rec.reason if old_rec is not None else None
    before = {"unschedulable": view.unschedulable, "taints": view.taints, "state": view.state, "reason": old_reason}
    if not changed:
        return Plan(view.name, False, None, after, False, _describe(req.action, view.name, False), before=before)
    entry: dict[str, Any] = {"action": req.action, "reason": req.reason or "", "actor": req.actor, "time": req.now}
    if req.operation_id:
        entry["op"] = req.operation_id
    if spec_patch:
        entry["spec"] = sorted(spec_patch)
    history = (view.history() + [entry])[-max(1, req.history_limit):]
    annotations: dict[str, Optional[str]] = {ANN_HISTORY: json.dumps(history, separators=(",", ":"))}
    if record_changed:
        annotations[ANN_PRIOR] = ann_prior_new
    meta: dict[str, Any] = {"resourceVersion": view.resource_version, "annotations": annotations}
    if label_patch:
        meta["labels"] = label_patch
    patch: dict[str, Any] = {"metadata": meta}
    if spec_patch:
        patch["spec"] = spec_patch
    return Plan(view.name, True, patch, after, new_quarantine, _describe(req.action, view.name, True), entry, before)


def _without_claims(rec: QuarantineRecord) -> dict[str, Any]:
    data = rec.to_dict()
    data.pop("held_by", None)
    return data


def history_patch(node: Mapping[str, Any], entry: Mapping[str, Any], history_limit: int = DEFAULT_HISTORY_LIMIT) -> dict[str, Any]:
    """A patch that only appends ``entry`` to the history annotation (with the resourceVersion precondition)."""
    view = NodeView.from_node(node)
    paired = dict(entry)
    paired.setdefault("reason", "")
    paired.setdefault("actor", "")
    history = (view.history() + [paired])[-max(1, history_limit):]
    return {"metadata": {"resourceVersion": view.resource_version,
                         "annotations": {ANN_HISTORY: json.dumps(history, separators=(",", ":"))}}}


def applied_operation(node: Mapping[str, Any], operation_id: str) -> Optional[dict[str, Any]]:
    """The latest history entry on ``node`` stamped with ``operation_id`` (None when there is none): proof that a
    change of that operation reached the node, e.g. a PATCH whose response was lost."""
    if not operation_id:
        return None
    found = [e for e in NodeView.from_node(node).history() if e.get("op") == operation_id]
    return found[-1] if found else None


def _describe(action: str, node: str, changed: bool) -> str:
    past = {"cordon": "cordoned", "uncordon": "uncordoned", "taint": "tainted", "untaint": "untainted", "label": "labelled",
            "release": "released"}[action]
    return f"node {node} {past}" if changed else f"node {node} already {past} (nothing to change)"


def check_request(action: str, reason: Any, taints: Any, labels: Any) -> tuple[Optional[str], tuple[Taint, ...], dict[str, Optional[str]]]:
    """Validate the user options of one action; returns (reason, taints, labels)."""
    if action not in ACTIONS:
        raise QuarantineStateError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    clean_reason = validate_reason(reason, action)
    raw_taints = list(taints or [])
    parsed = tuple(validate_taint(t, i, require_effect=action != "untaint") for i, t in enumerate(raw_taints))
    clean_labels = validate_labels(labels)
    if action in ("taint", "untaint") and not parsed:
        raise QuarantineStateError(f"action {action!r} needs at least one entry in taints")
    if action == "label" and not clean_labels:
        raise QuarantineStateError("action 'label' needs at least one entry in labels")
    if action in ("uncordon", "release") and (parsed or clean_labels):
        raise QuarantineStateError(f"action {action!r} takes no taints or labels (release undoes exactly what was applied)")
    if action in ("untaint",) and clean_labels:
        raise QuarantineStateError("action 'untaint' takes no labels")
    return clean_reason, parsed, clean_labels


__all__ = ["ACTIONS", "ANN_HISTORY", "ANN_PRIOR", "CAPACITY_ACTIONS", "K8sInvalidName", "LABEL_STATE", "NodeView", "Plan",
           "QUARANTINE_ACTIONS", "QuarantineRecord", "RELEASE_SCOPES", "QuarantineRequest", "QuarantineStateError", "STATE_QUARANTINED",
           "STATE_RELEASED", "Taint", "applied_operation", "check_request", "default_actor", "history_patch", "json_object_list", "new_operation_id",
           "plan_action"]
