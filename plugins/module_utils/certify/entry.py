# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Entry points of the Certify phase, one :class:`EntryPoint` per module.

Each holds the module's argument spec (the one copy: the module, its controller action and its DOCUMENTATION use
it) and ``run(params, check_mode, diff, **context) -> dict``, which validates the parameters, calls the domain files
and raises a :class:`DsxosError` for bad input. Modules and actions reach this file only through
``common.entry.call_entry``.

* :data:`CERTIFY_NCCL` (controller action with progress): the adaptive NCCL certification over hosts or Kubernetes.
* :data:`CERTIFY_REPORT` (controller action): build, render and store the certification report.
* :data:`NODE_CERTIFICATION`: per-node verdicts from the categories' results, optionally as node labels.

The modules that run on every GPU host have lighter entry files: ``nccl_test`` and ``training_goodput`` in
:mod:`.host_entry`, ``gpu_health`` in ``gpu/entry.py``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_rounds import SCALES, CertifyNode, certify_nccl, nodes_from_params, validate_config
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_thresholds import load_thresholds_file
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.node_certification import (
    CATEGORIES, DEFAULT_RENEW_FRACTION, DEFAULT_VALID_FOR_S, CertificationError, aggregate_certification, certification_summary,
    epoch_seconds, label_nodes, label_requests, validate_input,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_model import CertifyReportError, build_report, summarize
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_render import FORMATS, render_formats
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_storage import (
    DEFAULT_BASENAME, DEFAULT_COMPRESS_ABOVE_BYTES, REWRITE_CHOICES, configmap_payload, report_of_record, store_configmap,
    validate_basename, write_report_files,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_hosts import REFUSED_PREFIX, HostsRunner, refuse_invalid_hosts, validate_hosts_launch
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_kubernetes import (
    HOSTNAME_LABEL, KubeRunnerOptions, KubernetesRunner, k8s_nodes, kube_options_from_params, positive_number,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import group_nodes
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_namespace, validate_subdomain


# ---------------------------------------------------------------------------- certify_nccl
CERTIFY_NCCL_SPEC: Dict[str, Any] = dict(K8S_AUTH_SPEC)
CERTIFY_NCCL_SPEC.update(
    runner={"type": "str", "default": "hosts", "choices": ["hosts", "kubernetes"]},
    nodes={"type": "list", "elements": "raw"},
    node_selector={"type": "str"},
    collectives={"type": "list", "elements": "str", "default": ["all_reduce"]},
    scale={"type": "str", "default": "diagnose", "choices": list(SCALES)},
    diagnose_on_failure={"type": "bool", "default": True},
    thresholds={"type": "dict"},
    thresholds_file={"type": "path"},
    accelerator={"type": "str"},
    isolation={"type": "dict", "default": {}},
    timeout_s={"type": "float", "default": 1800.0},
    max_parallel={"type": "int", "default": 0},
    mpirun={"type": "dict"},
    kubernetes={"type": "dict"},
    create_namespace={"type": "bool", "default": True},
    large_message_bytes={"type": "int"},
    ignore_warn_patterns={"type": "list", "elements": "str", "default": []},
    validate_only={"type": "bool", "default": False},
    return_tests={"type": "bool", "default": True},
)


def _thresholds(params: Mapping[str, Any]) -> Any:
    if params.get("thresholds_file") and params.get("thresholds"):
        raise CertifyError("give thresholds or thresholds_file, not both", field="thresholds_file",
                           value=params["thresholds_file"])
    if params.get("thresholds_file"):
        return load_thresholds_file(params["thresholds_file"])
    return params.get("thresholds")


def run_certify_nccl(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False,
                     progress: Optional[Callable[[str, Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """The ``certify_nccl`` module: validate, list/accept nodes, build the runner, run :func:`certify_nccl`.

    Bad input raises (:class:`CertifyError`, ``ThresholdConfigError``, ...: all :class:`DsxosError`);
    Kubernetes access failures come back as ``failed`` with the message.  ``validate_only`` stops after the
    validation and returns the normalised configuration; check mode also plans the grouping.
    """
    del diff
    config = validate_config({"collectives": params.get("collectives"), "thresholds": _thresholds(params),
                              "isolation": params.get("isolation"), "scale": params.get("scale"),
                              "diagnose_on_failure": params.get("diagnose_on_failure"),
                              "accelerator": params.get("accelerator"),
                              "large_message_bytes": params.get("large_message_bytes"),
                              "ignore_warn_patterns": params.get("ignore_warn_patterns")})
    runner_kind = params.get("runner") or "hosts"
    timeout_s = positive_number(params.get("timeout_s") if params.get("timeout_s") is not None else 1800.0, "timeout_s", float, 1.0)
    max_parallel = positive_number(params.get("max_parallel") or 0, "max_parallel", int, 0)
    validate_only = bool(params.get("validate_only"))
    nodes: List[CertifyNode] = []
    if params.get("nodes") is not None:
        nodes = nodes_from_params(params["nodes"])
    launch: Dict[str, Any] = {}
    kube_opts: Optional[KubeRunnerOptions] = None
    if runner_kind == "hosts":
        if params.get("node_selector"):
            raise CertifyError("node_selector needs runner: kubernetes (the hosts runner takes nodes)", field="node_selector",
                               value=params["node_selector"])
        if params.get("nodes") is None and not validate_only:
            raise CertifyError("empty target: the hosts runner needs nodes", field="nodes", value=None)
        # an inventory host whose name or address cannot be used safely is excluded on its own (never launched)
        nodes = refuse_invalid_hosts(nodes, mpirun=params.get("mpirun") is not None or not validate_only)
        launch = dict(params.get("mpirun") or {})
        launch.setdefault("timeout_s", timeout_s)
        if params.get("mpirun") is not None or not validate_only:
            validate_hosts_launch(launch, config.collectives)
    elif params.get("kubernetes") is not None or not validate_only:
        kube_opts = kube_options_from_params(params.get("kubernetes") or {}, timeout_s=timeout_s, max_parallel=max_parallel)
    base = {"changed": False, "config": config.to_dict(), "runner": runner_kind}
    client = None
    try:
        if runner_kind == "kubernetes":
            client = client_from_params(params)
            if params.get("nodes") is None:
                nodes = k8s_nodes(client, params.get("node_selector"))
                if not nodes:
                    raise CertifyError("empty target: no Kubernetes node matches the node selector", field="node_selector",
                                       value=params.get("node_selector") or "")
            if kube_opts is not None and kube_opts.recertify_nodes:
                # a node cordoned by the quarantine of its certification failure is certified again (its Jobs tolerate it)
                nodes = [replace(n, cordoned=False) if n.name in kube_opts.recertify_nodes else n for n in nodes]
            if kube_opts is not None:
                hostnames = {n.name: n.labels[HOSTNAME_LABEL] for n in nodes if n.labels.get(HOSTNAME_LABEL)}
                hostnames.update(kube_opts.node_hostnames)
                kube_opts.node_hostnames = hostnames
        if validate_only:
            base.update(msg="configuration is valid", nodes_given=[n.name for n in nodes],
                        refused_hosts={n.name: n.exclude_reason for n in nodes
                                       if runner_kind == "hosts" and n.exclude_reason and n.exclude_reason.startswith(REFUSED_PREFIX)})
            return base
        if check_mode:
            grouping = group_nodes([n.node_info() for n in nodes], config.isolation.grouping)
            base.update(skipped=True, msg="check mode: no test was run", grouping=grouping.to_dict(),
                        nodes_given=[n.name for n in nodes])
            return base
        if runner_kind == "kubernetes":
            if kube_opts is None:
                raise CertifyError("the kubernetes runner needs its Job options", field="kubernetes", value=None)
            runner: Any = KubernetesRunner(client, kube_opts)
            if params.get("create_namespace", True):
                runner.ensure_namespace()
        else:
            runner = HostsRunner({n.name: n.address for n in nodes}, launch, max_parallel=max_parallel)
        result = certify_nccl(nodes, config, runner, progress=progress).to_dict()
    except K8sError as err:
        base.update(failed=True, msg=str(err), error=err.to_dict())
        return base
    finally:
        if client is not None:
            client.close()
    if not params.get("return_tests", True):
        result["tests"] = []
    base.update(result)
    base["msg"] = result["summary"]
    if runner_kind == "kubernetes":
        base["jobs"] = {"namespace": kube_opts.namespace, "run_id": kube_opts.run_id,  # type: ignore[union-attr]
                        "created": len(runner.jobs_created), "deleted": len(runner.jobs_deleted)}
        if client is not None:
            base["api_calls"] = dict(client.stats)
    return base


CERTIFY_NCCL = EntryPoint(name="certify_nccl", doing="certifying the NCCL fabric", spec=CERTIFY_NCCL_SPEC, run=run_certify_nccl)


# ---------------------------------------------------------------------------- certify_report
CERTIFY_REPORT_SPEC: Dict[str, Any] = dict(K8S_AUTH_SPEC)
CERTIFY_REPORT_SPEC.update(
    report={"type": "dict", "required": True},
    dest_dir={"type": "path"},
    formats={"type": "list", "elements": "str", "choices": list(FORMATS), "default": list(FORMATS)},
    basename={"type": "str", "default": DEFAULT_BASENAME},
    rewrite={"type": "str", "choices": list(REWRITE_CHOICES), "default": "outcome"},
    configmap={"type": "dict", "options": {
        "namespace": {"type": "str", "required": True},
        "name": {"type": "str", "required": True},
        "compress_above_bytes": {"type": "int", "default": DEFAULT_COMPRESS_ABOVE_BYTES},
    }},
)


def run_certify_report(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """What the ``certify_report`` module/action does: build, render, write files, store the ConfigMap."""
    del diff
    report = build_report(params.get("report") or {})
    basename = validate_basename(params.get("basename") or DEFAULT_BASENAME)
    formats = list(params.get("formats") or FORMATS)
    dest_dir = params.get("dest_dir")
    configmap = params.get("configmap")
    if not dest_dir and not configmap:
        raise CertifyReportError("give dest_dir, configmap or both: the report would be stored nowhere", field="dest_dir")
    if configmap:  # names are checked before anything is rendered, written or sent
        namespace = validate_namespace(configmap.get("namespace"), "configmap.namespace")
        name = validate_subdomain(configmap.get("name"), "configmap.name")
    kept = None
    if dest_dir and params.get("rewrite", "outcome") == "outcome":
        kept = report_of_record(str(dest_dir), report, list(dict.fromkeys(formats + ["json"])), basename)
    if kept is not None:  # same outcome as the report of record: keep it (its timings and measurements) as it is
        report = kept
    wanted = list(dict.fromkeys(formats + ["json"] + (["markdown"] if configmap else [])))
    rendered = render_formats(report, wanted)
    result: Dict[str, Any] = {"changed": False, "summary": summarize(report), "result": report["result"],
                              "warnings_in_report": list(report["warnings"]), "files": {}, "changed_files": [],
                              "kept_report_of_record": kept is not None}
    if report["warnings"]:
        result["warnings"] = ["certify report: %s" % w for w in report["warnings"][:20]]
    if dest_dir:
        written = write_report_files(str(dest_dir), {f: rendered[f] for f in formats}, basename, check_mode)
        result.update(written)
        result["changed"] = bool(written["changed_files"])
    if configmap:
        payload = configmap_payload(report, basename, rendered["json"], rendered["markdown"],
                                    configmap.get("compress_above_bytes", DEFAULT_COMPRESS_ABOVE_BYTES))
        try:
            with client_from_params(params) as client:
                stored = store_configmap(client, namespace, name, payload, check_mode)
        except K8sError as err:
            result.update(failed=True, msg=str(err), error=err.to_dict())
            return result
        stored["bytes"] = payload["bytes"]
        stored["stored_bytes"] = payload["stored_bytes"]
        result["configmap"] = stored
        result["changed"] = result["changed"] or stored["changed"]
    return result


CERTIFY_REPORT = EntryPoint(name="certify_report", doing="writing the certification report", spec=CERTIFY_REPORT_SPEC,
                            run=run_certify_report)


# ---------------------------------------------------------------------------- node_certification
NODE_CERTIFICATION_SPEC: Dict[str, Any] = dict(K8S_AUTH_SPEC)
NODE_CERTIFICATION_SPEC.update({
    "nodes": {"type": "list", "elements": "str", "required": True},
    "categories": {"type": "list", "elements": "str", "default": [], "choices": list(CATEGORIES)},
    "results": {"type": "dict", "default": {}},
    "nccl": {"type": "dict"},
    "excluded": {"type": "dict", "default": {}},
    "platform": {"type": "dict"},
    "gpu": {"type": "dict"},
    "started": {"type": "raw"},
    "finished": {"type": "raw"},
    "durations": {"type": "dict"},
    "loopback_thresholds": {"type": "dict"},
    "label": {"type": "bool", "default": False},
    "certified_at": {"type": "int"},
    "valid_for_s": {"type": "int", "default": DEFAULT_VALID_FOR_S},
    "renew_fraction": {"type": "float", "default": DEFAULT_RENEW_FRACTION},
    "ignore_missing": {"type": "bool", "default": False},
})


def run_node_certification(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """The ``node_certification`` module: aggregate, then (``label: true``) label the Kubernetes nodes.

    Returns ``report`` (the certify_report input), ``summary`` and, when labelling, ``labels``
    (per node outcome), ``changed_nodes``, ``missing_nodes``, ``failed_nodes``.  Raises
    :class:`CertificationError` on bad input; Kubernetes failures are returned as ``failed``.
    """
    del diff
    data = validate_input(params)
    report = aggregate_certification(data)
    summary = certification_summary(report)
    out: Dict[str, Any] = {"changed": False, "report": report, "summary": summary, "msg": "%s: %d passed, %d failed, %d excluded"
                           % (summary["result"], summary["passed"], summary["failed"], summary["excluded"])}
    if not params.get("label"):
        return out
    certified_at = params.get("certified_at")
    if certified_at is None:
        finished = epoch_seconds(data.finished)
        certified_at = int(finished) if finished is not None else None
    requests = label_requests(report["nodes"], certified_at, params.get("valid_for_s", DEFAULT_VALID_FOR_S))
    renew_fraction = params.get("renew_fraction", DEFAULT_RENEW_FRACTION)
    if renew_fraction is None or not 0.0 <= float(renew_fraction) <= 1.0:
        raise CertificationError("renew_fraction must be between 0 and 1", field="renew_fraction", value=renew_fraction)
    try:
        with client_from_params(params) as client:
            labelled = label_nodes(client, requests, check_mode=check_mode, renew_fraction=renew_fraction)
    except K8sError as err:
        out.update(failed=True, msg=str(err), error=err.to_dict())
        return out
    out.update(changed=labelled["changed"], labels=labelled["nodes"], changed_nodes=labelled["changed_nodes"],
               missing_nodes=labelled["missing_nodes"], failed_nodes=labelled["failed_nodes"],
               api_calls=dict(getattr(client, "stats", {}) or {}))
    problems = labelled["failed_nodes"] + ([] if params.get("ignore_missing") else labelled["missing_nodes"])
    if problems:
        out.update(failed=True, msg="could not label node(s) %s: %s" % (", ".join(problems), "; ".join(
            r.get("message", "") for r in labelled["nodes"] if r["node"] in problems)))
    return out


NODE_CERTIFICATION = EntryPoint(name="node_certification", doing="aggregating node certification verdicts",
                                spec=NODE_CERTIFICATION_SPEC, run=run_node_certification)
