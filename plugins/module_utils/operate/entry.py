# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Entry points of the Operate phase node actions, one :class:`EntryPoint` per module.

``NODE_QUARANTINE``, ``CIRCUIT_BREAKER``, ``NODE_DRAIN`` and ``NODE_LOCK`` carry each module's argument spec (the one
copy; the modules' DOCUMENTATION and the ``dsxos.cluster.circuit_breaker`` doc fragment describe exactly it) and its
``run(params, check_mode, diff) -> dict``. A run validates every input before any API call (node names as RFC 1123
subdomains, options naming themselves), raises domain errors (:class:`~..common.errors.DsxosError` subclasses) for bad
input, and returns the module's result (with ``failed`` when a node action failed); it never touches AnsibleModule.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Dict, Mapping

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params, run_with_client
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_namespace, validate_node_name
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import (
    DEFAULT_GPU_SELECTOR, DEFAULT_NAME, DEFAULT_NAMESPACE, BreakerConfig, run_circuit_breaker,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import DrainPolicy, pod_refs
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import MODES, DrainOptions, drain_nodes
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import NodeLock, validate_request, validate_wait_for_purposes
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import (
    DEFAULT_CONFLICT_RETRIES, QuarantineOptions, build_request, run_node_action, validate_nodes,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import ACTIONS, DEFAULT_HISTORY_LIMIT, TAINT_EFFECTS, default_actor
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import OUTCOMES as INCIDENT_OUTCOMES
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident import STATES as INCIDENT_STATES
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import parse_rfc3339
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import ACTIONS as INCIDENT_ACTIONS
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import run_node_incident
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import validate_options as validate_incident_options
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import ACTIONS as SENTINEL_ACTIONS
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import PolicyOptions, SentinelPolicyError, manual_events
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import plan as sentinel_plan

# ---------------------------------------------------------------------------------------------------- specs

#: The breaker's settings: top level in the circuit_breaker module (doc fragment ``dsxos.cluster.circuit_breaker.settings``)
#: and inside the ``circuit_breaker`` option of the node actions (``BREAKER_OPTION_SPEC``, doc fragment
#: ``dsxos.cluster.circuit_breaker``). The doc fragment documents exactly these, once.
BREAKER_SETTINGS_SPEC: Dict[str, Any] = dict(
    namespace=dict(type="str", default=DEFAULT_NAMESPACE),
    name=dict(type="str", default=DEFAULT_NAME),
    max_fraction=dict(type="float", default=0.1),
    max_nodes=dict(type="int", default=10),
    window_s=dict(type="float", default=3600.0),
    gpu_node_selector=dict(type="str", default=DEFAULT_GPU_SELECTOR),
)
BREAKER_OPTION_SPEC: Dict[str, Any] = dict(type="dict", options=dict(enabled=dict(type="bool", default=True), **BREAKER_SETTINGS_SPEC))

NODE_QUARANTINE_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    nodes=dict(type="list", elements="str", required=True),
    action=dict(type="str", required=True, choices=list(ACTIONS)),
    reason=dict(type="str"),
    actor=dict(type="str"),
    taints=dict(type="list", elements="dict", default=[], options=dict(
        key=dict(type="str", required=True, no_log=False),
        value=dict(type="str"),
        effect=dict(type="str", choices=list(TAINT_EFFECTS)),
    )),
    labels=dict(type="dict"),
    dry_run=dict(type="bool", default=False),
    ignore_missing=dict(type="bool", default=False),
    fail_on_refused=dict(type="bool", default=False),
    conflict_retries=dict(type="int", default=DEFAULT_CONFLICT_RETRIES),
    history_limit=dict(type="int", default=DEFAULT_HISTORY_LIMIT),
    release_scope=dict(type="str", default="all", choices=["all", "actor"]),
    circuit_breaker=BREAKER_OPTION_SPEC,
)

CIRCUIT_BREAKER_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    action=dict(type="str", default="status", choices=["check", "record", "reset", "status"]),
    nodes=dict(type="list", elements="str", default=[]),
    reason=dict(type="str"),
    actor=dict(type="str"),
    **BREAKER_SETTINGS_SPEC,
)

NODE_DRAIN_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    nodes=dict(type="list", elements="str", required=True),
    reason=dict(type="str", required=True),
    actor=dict(type="str"),
    mode=dict(type="str", default="immediate", choices=list(MODES)),
    timeout_s=dict(type="float", default=600.0),
    eviction_timeout_s=dict(type="float"),
    grace_period_s=dict(type="int"),
    gpu_pods_only=dict(type="bool", default=False),
    only_pods=dict(type="list", elements="dict", default=[], options=dict(namespace=dict(type="str", required=True),
                                                                          name=dict(type="str", required=True))),
    protected_namespaces_extra=dict(type="list", elements="str", default=[]),
    protect_default_namespaces=dict(type="bool", default=True),
    delete_emptydir_data=dict(type="bool", default=False),
    force=dict(type="bool", default=False),
    dry_run=dict(type="bool", default=False),
    ignore_missing=dict(type="bool", default=False),
    pdb_retry_s=dict(type="float", default=1.0),
    pdb_retry_max_s=dict(type="float", default=5.0),
    eviction_workers=dict(type="int", default=0),
    circuit_breaker=BREAKER_OPTION_SPEC,
)

NODE_LOCK_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    node=dict(type="str", required=True),
    holder=dict(type="str", required=True),
    state=dict(type="str", choices=["acquire", "renew", "release"], default="acquire"),
    namespace=dict(type="str", default=DEFAULT_NAMESPACE),
    duration_s=dict(type="int", default=900),
    purpose=dict(type="str", default=""),
    reason=dict(type="str", default=""),
    wait_timeout_s=dict(type="float", default=0.0),
    wait_for_purposes=dict(type="dict", default={}),
    poll_interval_s=dict(type="float", default=2.0),
    force=dict(type="bool", default=False),
)

# ---------------------------------------------------------------------------------------------------- runs


def _breaker(params: Mapping[str, Any]) -> Any:
    breaker = params.get("circuit_breaker")
    return BreakerConfig.from_params(breaker) if breaker else None


def _number(params: Mapping[str, Any], key: str, default: Any) -> Any:
    value = params.get(key)
    return default if value is None else value


def quarantine_options_from_params(params: Mapping[str, Any], check_mode: bool = False) -> QuarantineOptions:
    """Validated :class:`QuarantineOptions` from the module's params (a taint's ``None`` fields, filled in by Ansible, dropped)."""
    taints = [{k: v for k, v in dict(t).items() if v is not None} if isinstance(t, Mapping) else t for t in params.get("taints") or ()]
    options = QuarantineOptions(
        action=params["action"], reason=params.get("reason"), actor=params.get("actor") or "", taints=taints,
        labels=params.get("labels"), check_mode=check_mode, dry_run=bool(params.get("dry_run")),
        ignore_missing=bool(params.get("ignore_missing")), fail_on_refused=bool(params.get("fail_on_refused")),
        conflict_retries=int(_number(params, "conflict_retries", DEFAULT_CONFLICT_RETRIES)),
        history_limit=int(_number(params, "history_limit", DEFAULT_HISTORY_LIMIT)), circuit_breaker=_breaker(params),
        release_scope=params.get("release_scope") or "all")
    build_request(options, "")
    return options


def node_quarantine_from_params(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """``node_quarantine``: validate, connect with the k8s_auth params, :func:`run_node_action`; ``diff`` adds the diff."""
    names = validate_nodes(params.get("nodes") or [])
    options = quarantine_options_from_params(params, check_mode)
    with client_from_params(params) as client:
        report = run_node_action(client, names, options)
    result = report.to_dict()
    if diff:
        result["diff"] = report.diff()
    return result


def circuit_breaker_from_params(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``circuit_breaker``: validate, connect with the k8s_auth params, :func:`run_circuit_breaker`."""
    config = BreakerConfig.from_params({k: params.get(k) for k in BREAKER_SETTINGS_SPEC}, where="options")
    nodes = [validate_node_name(n, f"nodes[{i}]") for i, n in enumerate(params.get("nodes") or [])]
    actor = params.get("actor") or default_actor()
    with client_from_params(params) as client:
        return run_circuit_breaker(client, params.get("action") or "status", config, nodes, params.get("reason") or "", actor, check_mode)


def drain_options_from_params(params: Mapping[str, Any], check_mode: bool = False) -> DrainOptions:
    """Validated :class:`DrainOptions` from the module's params."""
    extra = list(params.get("protected_namespaces_extra") or [])
    for index, namespace in enumerate(extra):
        validate_namespace(namespace, f"protected_namespaces_extra[{index}]")
    policy = DrainPolicy.build(extra, gpu_pods_only=bool(params.get("gpu_pods_only")),
                               delete_emptydir_data=bool(params.get("delete_emptydir_data")), force=bool(params.get("force")),
                               protect_defaults=params.get("protect_default_namespaces", True) is not False)
    options = DrainOptions(
        reason=params.get("reason") or "", mode=params.get("mode") or "immediate", actor=params.get("actor") or "",
        timeout_s=float(_number(params, "timeout_s", 600.0)), eviction_timeout_s=params.get("eviction_timeout_s"),
        grace_period_s=params.get("grace_period_s"), policy=policy, check_mode=check_mode, dry_run=bool(params.get("dry_run")),
        ignore_missing=bool(params.get("ignore_missing")), pdb_retry_s=float(_number(params, "pdb_retry_s", 1.0)),
        pdb_retry_max_s=float(_number(params, "pdb_retry_max_s", 5.0)), eviction_workers=int(_number(params, "eviction_workers", 0)),
        circuit_breaker=_breaker(params))
    options.validate()
    return options


def node_drain_from_params(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``node_drain``: validate, connect with the k8s_auth params, :func:`drain_nodes`; ``only_pods`` restricts the drain
    of every given node to those pods."""
    names = validate_nodes(params.get("nodes") or [])
    options = drain_options_from_params(params, check_mode)
    only = pod_refs(params.get("only_pods"), "only_pods")
    if only:
        options = dataclasses.replace(options, policy=options.policy.with_mapped_pods({name: only for name in names}))
    with client_from_params(params) as client:
        return drain_nodes(client, names, options).to_dict()


def run_node_lock(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``node_lock``: connection options + node, holder, state, namespace, duration_s, purpose, reason, wait_timeout_s,
    poll_interval_s, wait_for_purposes, force."""
    request = validate_request(params)
    return run_with_client(params, lambda client: NodeLock(client, request, check_mode=check_mode).run())


# ---------------------------------------------------------------------------------------------------- entry points

NODE_QUARANTINE = EntryPoint(name="node_quarantine", doing="acting on nodes", spec=NODE_QUARANTINE_SPEC, run=node_quarantine_from_params)
CIRCUIT_BREAKER = EntryPoint(name="circuit_breaker", doing="consulting the circuit breaker", spec=CIRCUIT_BREAKER_SPEC,
                             run=circuit_breaker_from_params)
NODE_DRAIN = EntryPoint(name="node_drain", doing="draining nodes", spec=NODE_DRAIN_SPEC, run=node_drain_from_params)
NODE_LOCK = EntryPoint(name="node_lock", doing="handling a node lock", spec=NODE_LOCK_SPEC, run=run_node_lock)

# ---------------------------------------------------------------------------------------------------- sentinel (issue 11)

#: the policy's inputs (``sentinel_plan``, and ``sentinel_quarantine`` when it is given the events)
SENTINEL_POLICY_SPEC: Dict[str, Any] = dict(
    events=dict(type="list", elements="raw", default=[]),
    rules=dict(type="list", elements="raw", default=[]),
    manual_nodes=dict(type="list", elements="str", default=[]),
    manual_reason=dict(type="str", default=""),
    manual_action=dict(type="str", default="quarantine", choices=[a for a in SENTINEL_ACTIONS if a != "record"]),
    destructive=dict(type="bool", default=False),
    dry_run=dict(type="bool", default=False),
    attempt_cap=dict(type="int", default=3),
    attempt_window_s=dict(type="float", default=86400.0),
    now=dict(type="str"),
)
SENTINEL_PLAN_SPEC: Dict[str, Any] = dict(K8S_AUTH_SPEC, node_state=dict(type="dict", default={}), read_state=dict(type="bool", default=False),
                                          **SENTINEL_POLICY_SPEC)

NODE_INCIDENT_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    action=dict(type="str", required=True, choices=list(INCIDENT_ACTIONS)),
    node=dict(type="str"),
    nodes=dict(type="list", elements="str", default=[]),
    incident=dict(type="str"),
    state=dict(type="str", choices=list(INCIDENT_STATES)),
    remediation=dict(type="str"),
    rule=dict(type="str"),
    reason=dict(type="str"),
    detail=dict(type="str"),
    error=dict(type="str"),
    events=dict(type="list", elements="dict", default=[]),
    gpus=dict(type="list", elements="int", default=[]),
    outcome=dict(type="str", choices=list(INCIDENT_OUTCOMES)),
    attempt=dict(type="bool", default=False),
    attempt_cap=dict(type="int", default=3),
    attempt_window_s=dict(type="float", default=86400.0),
    label_selector=dict(type="str", default=""),
    lock_namespace=dict(type="str", default=""),
    actor=dict(type="str"),
    emit_events=dict(type="bool", default=True),
    event_namespace=dict(type="str", default="default"),
    history_limit=dict(type="int", default=20),
    conflict_retries=dict(type="int", default=5),
    require_all_resolved=dict(type="bool", default=False),
)


def policy_inputs(params: Mapping[str, Any]) -> tuple[PolicyOptions, list[Dict[str, Any]]]:
    """The policy's options and the manual run's events from the ``SENTINEL_POLICY_SPEC`` parameters."""
    now = parse_rfc3339(params["now"], "now") if params.get("now") else time.time()
    options = PolicyOptions(destructive=bool(params.get("destructive")), dry_run=bool(params.get("dry_run")),
                            attempt_cap=int(_number(params, "attempt_cap", 3)), attempt_window_s=float(_number(params, "attempt_window_s", 86400.0)),
                            now=now)
    manual: list[Dict[str, Any]] = []
    if params.get("manual_nodes"):
        manual = manual_events(params["manual_nodes"], params.get("manual_reason") or "", params.get("manual_action") or "quarantine", now)
    return options, manual


def run_sentinel_plan(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``sentinel_plan``: events + rules + node state -> decisions; with ``read_state`` the nodes' records are read here
    (:func:`~.sentinel_intake.plan_with_state`), otherwise it is pure (no cluster, same result in check mode)."""
    options, manual = policy_inputs(params)
    events, rules = list(params.get("events") or []), params.get("rules") or None
    if params.get("read_state"):
        if params.get("node_state"):
            raise SentinelPolicyError("node_state and read_state are mutually exclusive (read_state reads it)", field="node_state",
                                      value=sorted(params["node_state"])[:5])
        from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_intake import (  # pylint: disable=import-outside-toplevel
            plan_with_state,
        )
        sentinel_plan(events, rules, {}, options, manual)  # bad input fails before connecting
        result = run_with_client(params, lambda client: plan_with_state(client, events, rules, options, manual))
    else:
        result = sentinel_plan(events, rules, params.get("node_state") or {}, options, manual)
    result["changed"] = False
    return result


def run_node_incident_entry(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``node_incident``: validate, connect with the k8s_auth params, :func:`run_node_incident`."""
    options = validate_incident_options(params)
    return run_with_client(params, lambda client: run_node_incident(client, options, check_mode))


SENTINEL_PLAN = EntryPoint(name="sentinel_plan", doing="planning remediation", spec=SENTINEL_PLAN_SPEC, run=run_sentinel_plan)
NODE_INCIDENT = EntryPoint(name="node_incident", doing="recording an incident", spec=NODE_INCIDENT_SPEC, run=run_node_incident_entry,
                           module_options=dict(required_if=[("action", "open", ("node", "incident", "remediation", "reason")),
                                                            ("action", "advance", ("node", "incident", "state")),
                                                            ("action", "close", ("node", "incident", "outcome")),
                                                            ("action", "join", ("node",)), ("action", "resolve", ("node",)),
                                                            ("action", "record", ("node",))]))

__all__ = ["BREAKER_OPTION_SPEC", "BREAKER_SETTINGS_SPEC", "CIRCUIT_BREAKER", "NODE_DRAIN", "NODE_INCIDENT", "NODE_LOCK", "NODE_QUARANTINE",
           "SENTINEL_PLAN", "circuit_breaker_from_params", "drain_options_from_params", "node_drain_from_params", "node_quarantine_from_params",
           "quarantine_options_from_params", "run_node_incident_entry", "run_node_lock", "run_sentinel_plan"]

# ---------------------------------------------------------------------------------------------------- fleet status (issue 11)

FLEET_STATUS_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    window_s=dict(type="float", default=604800.0),
    now=dict(type="str"),
    dest_dir=dict(type="path"),
    formats=dict(type="list", elements="str", default=["json", "markdown", "html"], choices=["json", "markdown", "html"]),
    basename=dict(type="str", default="fleet-status"),
    label_selector=dict(type="str", default=""),
    namespaces=dict(type="list", elements="str", default=[]),
    gpu_resource=dict(type="str", default="nvidia.com/gpu"),
    buckets=dict(type="int", default=24),
)


def run_fleet_status_entry(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``fleet_status``: validate (``now`` defaults to the current minute), read the cluster, report, write ``dest_dir``."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.fleet_status import (  # pylint: disable=import-outside-toplevel
        run_fleet_status, validate_options as validate_fleet_options,
    )
    # the current time rounded UP to the minute: the window holds everything recorded so far (rounded down, an incident
    # of the current minute fell outside it), and reruns within the same minute still write nothing new
    now = parse_rfc3339(params["now"], "now") if params.get("now") else float(math.ceil(time.time() / 60.0) * 60)
    options = validate_fleet_options(now, _number(params, "window_s", 604800.0), _number(params, "buckets", 24),
                                     params.get("gpu_resource") or "nvidia.com/gpu", params.get("label_selector") or "", params.get("namespaces") or [])
    return run_with_client(params, lambda client: run_fleet_status(client, options, params.get("dest_dir") or "",
                                                                   params.get("formats") or ["json", "markdown", "html"],
                                                                   params.get("basename") or "fleet-status", check_mode))


FLEET_STATUS = EntryPoint(name="fleet_status", doing="reporting the fleet status", spec=FLEET_STATUS_SPEC, run=run_fleet_status_entry)

# ---------------------------------------------------------------------------------------------------- batch quarantine (storms)

#: the run-wide options of the sentinel's batches (doc fragment ``dsxos.cluster.sentinel_batch``): sentinel_quarantine, sentinel_drain
SENTINEL_BATCH_SPEC: Dict[str, Any] = dict(
    lock=dict(type="bool", default=True),
    holder=dict(type="str", required=True),
    actor=dict(type="str", required=True),
    lock_namespace=dict(type="str", default="dsxos-system"),
    lock_duration_s=dict(type="int", default=1800),
    lock_wait_s=dict(type="float", default=0.0),
    lock_wait_for_purposes=dict(type="dict", default={}),
    event_namespace=dict(type="str", default="default"),
    workers=dict(type="int", default=16),
)
SENTINEL_QUARANTINE_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    decisions=dict(type="list", elements="dict"),
    quarantine=dict(type="bool", default=True),
    taint=dict(type="bool", default=True),
    circuit_breaker=BREAKER_OPTION_SPEC,
    **SENTINEL_BATCH_SPEC,
    **SENTINEL_POLICY_SPEC,
)


def batch_options_from_params(params: Mapping[str, Any]) -> Any:
    """:class:`~.batch_quarantine.BatchOptions` from the SENTINEL_BATCH_SPEC params (+ ``taint`` and ``circuit_breaker``)."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_quarantine import BatchOptions  # pylint: disable=import-outside-toplevel
    return BatchOptions(holder=params["holder"], actor=params["actor"], lock_namespace=params.get("lock_namespace") or "dsxos-system",
                        lock_duration_s=int(_number(params, "lock_duration_s", 1800)), lock_wait_s=float(_number(params, "lock_wait_s", 0.0)),
                        taint=params.get("taint") is not False, breaker=_breaker(params) or BreakerConfig(),
                        event_namespace=params.get("event_namespace") or "default", workers=int(_number(params, "workers", 16)),
                        take_locks=params.get("lock") is not False,
                        lock_wait_for_purposes=validate_wait_for_purposes(params.get("lock_wait_for_purposes"), "lock_wait_for_purposes"))


def run_sentinel_quarantine(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``sentinel_quarantine``: with ``decisions``, validate each and :func:`quarantine_batch`; without, plan from the
    events and quarantine in the same call (:func:`~.sentinel_intake.plan_and_quarantine`, ``quarantine: false`` only
    plans)."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_quarantine import (  # pylint: disable=import-outside-toplevel
        quarantine_batch, validate_batch,
    )
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_intake import (  # pylint: disable=import-outside-toplevel
        plan_and_quarantine,
    )
    options = batch_options_from_params(params)
    if params.get("decisions") is not None:
        decisions = list(params["decisions"])
        validate_batch(decisions, options)
        return run_with_client(params, lambda client: quarantine_batch(client, decisions, options, check_mode))
    policy, manual = policy_inputs(params)
    events, rules = list(params.get("events") or []), params.get("rules") or None
    sentinel_plan(events, rules, {}, policy, manual)  # bad input fails before connecting
    validate_batch([], options)
    batch = options if params.get("quarantine") is not False else None
    return run_with_client(params, lambda client: plan_and_quarantine(client, events, rules, policy, manual, batch, check_mode))


SENTINEL_QUARANTINE = EntryPoint(name="sentinel_quarantine", doing="quarantining a batch of nodes", spec=SENTINEL_QUARANTINE_SPEC,
                                 run=run_sentinel_quarantine,
                                 module_options=dict(mutually_exclusive=[("decisions", "events"), ("decisions", "manual_nodes"),
                                                                         ("decisions", "rules")]))


# ---------------------------------------------------------------------------------------------------- batch drain (storms)

#: the options of ``node_drain`` a batch drain takes (``sentinel_drain``'s ``drain``; the role's ``sentinel_drain``)
DRAIN_SETTINGS = ("mode", "timeout_s", "eviction_timeout_s", "grace_period_s", "protected_namespaces_extra", "protect_default_namespaces",
                  "delete_emptydir_data", "force", "pdb_retry_s", "pdb_retry_max_s", "eviction_workers")
SENTINEL_DRAIN_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    decisions=dict(type="list", elements="dict", required=True),
    drain=dict(type="dict", default={}, options={k: NODE_DRAIN_SPEC[k] for k in DRAIN_SETTINGS}),
    **SENTINEL_BATCH_SPEC,
)


def run_sentinel_drain(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:  # pylint: disable=unused-argument
    """``sentinel_drain``: validate the decisions and the drain options, then :func:`~.batch_drain.drain_batch`."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.batch_drain import (  # pylint: disable=import-outside-toplevel
        drain_batch, validate_drain_batch,
    )
    options = batch_options_from_params(params)
    settings = {k: v for k, v in dict(params.get("drain") or {}).items() if v is not None}
    drain = drain_options_from_params(dict(settings, reason=f"sentinel batch drain ({params['holder']})", actor=params["actor"]), check_mode)
    decisions = list(params.get("decisions") or [])
    validate_drain_batch(decisions, options)  # bad input fails before connecting
    return run_with_client(params, lambda client: drain_batch(client, decisions, options, drain, check_mode))


SENTINEL_DRAIN = EntryPoint(name="sentinel_drain", doing="draining a batch of nodes", spec=SENTINEL_DRAIN_SPEC, run=run_sentinel_drain)
