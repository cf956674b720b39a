# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A ``ServiceMonitor`` as the Prometheus scrape configuration prometheus-operator generates for it, over given targets.

Tests have no Kubernetes service discovery (no kubelet, no pod network), so the targets are given: each
:class:`Target` is one endpoint address of the monitored Service (a pod listening on 127.0.0.1) with the
``__meta_kubernetes_*`` labels Prometheus's ``kubernetes_sd_configs`` role ``endpoints`` gives such a target (endpoint,
pod, service and namespace meta labels). :func:`scrape_config` returns a ``scrape_config`` whose ``static_configs``
carry exactly those labels and whose ``relabel_configs`` are the ones prometheus-operator writes for the monitor's
endpoint (``pkg/prometheus/promcfg.go``, ``generateServiceMonitorConfig``, role ``endpoints``, relabel selector
mechanism, one shard):

1. ``job`` -> ``__tmp_prometheus_job_name``;
2. one ``keep`` per ``selector.matchLabels`` entry (``__meta_kubernetes_service_label_<l>`` and ``..._labelpresent_<l>``
   against ``(<value>);true``), the ``matchExpressions`` (``In``/``NotIn``/``Exists``/``DoesNotExist``);
3. the endpoint's port: ``keep`` on ``__meta_kubernetes_endpoint_port_name`` (``port``), or on the pod's container port
   name/number (``targetPort``);
4. ``node`` (address target kind ``Node``), ``pod`` (kind ``Pod``), ``namespace``, ``service``, ``pod``, ``container``;
5. ``drop`` of pods in phase ``Failed``/``Succeeded`` (``filterRunning``, default true);
6. the Service's ``targetLabels`` and the pod's ``podTargetLabels``;
7. ``job`` from the service name, then from the Service label named by ``jobLabel``;
8. ``endpoint`` (the port name, or the target port);
9. the endpoint's own ``relabelings`` (camelCase -> snake_case, the action lower-cased, as ``generateRelabelConfig``);
10. the sharding rules (``__tmp_hash`` hashmod 1, keep shard ``0``: what the config reloader substitutes for
    ``$(SHARD)`` with one shard).

``honorLabels`` -> ``honor_labels``, ``honorTimestamps`` -> ``honor_timestamps`` (only when set), ``interval`` /
``scrapeTimeout`` / ``path`` / ``params`` / ``scheme`` as given, ``metricRelabelings`` -> ``metric_relabel_configs``.
Targets outside the monitor's namespaces (``namespaceSelector``: ``matchNames``, ``any``; default its own namespace)
are left out, as the service discovery would never list them. Fields this translation does not know (TLS,
authorization, sample limits, ...) are refused (ValueError naming them), never silently dropped.

:func:`gpu_operator_dcgm_service_monitor` and :func:`kube_state_metrics_service_monitor` build the two monitors the
catalog's charts create from the rendered values (the GPU Operator's ``state-dcgm-exporter`` asset with the
``dcgmExporter.serviceMonitor`` edits, kube-prometheus-stack's kube-state-metrics monitor).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

#: prometheus-operator's ``sanitizeLabelName``
_INVALID_LABEL_CHAR = re.compile(r"[^a-zA-Z0-9_]")
#: the RelabelConfig fields of the ServiceMonitor CRD and their Prometheus names, in generateRelabelConfig's order
RELABEL_FIELDS = (("sourceLabels", "source_labels"), ("separator", "separator"), ("targetLabel", "target_label"),
                  ("regex", "regex"), ("modulus", "modulus"), ("replacement", "replacement"), ("action", "action"))
RELABEL_ACTIONS = frozenset({"replace", "keep", "drop", "keepequal", "dropequal", "hashmod", "labelmap", "labeldrop",
                             "labelkeep", "lowercase", "uppercase"})
#: Endpoint fields :func:`scrape_config` translates; anything else in an endpoint is refused
ENDPOINT_FIELDS = frozenset({"port", "targetPort", "path", "scheme", "params", "interval", "scrapeTimeout", "honorLabels",
                             "honorTimestamps", "relabelings", "metricRelabelings", "filterRunning"})
#: ServiceMonitor spec fields :func:`scrape_config` translates
SPEC_FIELDS = frozenset({"endpoints", "selector", "namespaceSelector", "jobLabel", "targetLabels", "podTargetLabels"})
HASH_LABEL = "__tmp_hash"
DISABLE_SHARDING_LABEL = "__tmp_disable_sharding"


def sanitize_label_name(name: str) -> str:
    """prometheus-operator's (and Prometheus's service discovery's) label name sanitizing: ``[^a-zA-Z0-9_]`` -> ``_``."""
    return _INVALID_LABEL_CHAR.sub("_", name)


@dataclass(frozen=True)
class Target:  # pylint: disable=too-many-instance-attributes
    """One address of a Service's Endpoints, backed by a pod (what ``kubernetes_sd_configs`` role ``endpoints`` lists)."""

    address: str
    node: str
    namespace: str
    service: str
    pod: str
    port_name: str
    port_number: int
    container: str = ""
    service_labels: Mapping[str, str] = field(default_factory=dict)
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    pod_ip: str = "127.0.0.1"
    host_ip: str = "127.0.0.1"
    pod_uid: str = ""
    phase: str = "Running"
    ready: bool = True
    controller_kind: str = "DaemonSet"
    controller_name: str = ""
    protocol: str = "TCP"

    def meta_labels(self) -> Dict[str, str]:
        """The target's labels before relabelling, as the endpoints role of Kubernetes service discovery sets them."""
        labels = {
            "__address__": self.address,
            "__meta_kubernetes_namespace": self.namespace,
            "__meta_kubernetes_endpoints_name": self.service,
            "__meta_kubernetes_endpoint_node_name": self.node,
            "__meta_kubernetes_endpoint_ready": "true" if self.ready else "false",
            "__meta_kubernetes_endpoint_port_name": self.port_name,
            "__meta_kubernetes_endpoint_port_protocol": self.protocol,
            "__meta_kubernetes_endpoint_address_target_kind": "Pod",
            "__meta_kubernetes_endpoint_address_target_name": self.pod,
            "__meta_kubernetes_service_name": self.service,
            "__meta_kubernetes_pod_name": self.pod,
            "__meta_kubernetes_pod_ip": self.pod_ip,
            "__meta_kubernetes_pod_ready": "true" if self.ready else "false",
            "__meta_kubernetes_pod_phase": self.phase,
            "__meta_kubernetes_pod_node_name": self.node,
            "__meta_kubernetes_pod_host_ip": self.host_ip,
            "__meta_kubernetes_pod_uid": self.pod_uid or ("uid-" + self.pod),
            "__meta_kubernetes_pod_controller_kind": self.controller_kind,
            "__meta_kubernetes_pod_controller_name": self.controller_name or self.service,
            "__meta_kubernetes_pod_container_name": self.container,
            "__meta_kubernetes_pod_container_port_name": self.port_name,
            "__meta_kubernetes_pod_container_port_number": str(self.port_number),
            "__meta_kubernetes_pod_container_port_protocol": self.protocol,
            "__meta_kubernetes_pod_container_init": "false",
        }
        for prefix, source in (("__meta_kubernetes_service", self.service_labels), ("__meta_kubernetes_endpoints", self.service_labels),
                               ("__meta_kubernetes_pod", self.pod_labels)):
            for key, value in source.items():
                labels["%s_label_%s" % (prefix, sanitize_label_name(key))] = value
                labels["%s_labelpresent_%s" % (prefix, sanitize_label_name(key))] = "true"
        return labels


def relabel_config(raw: Mapping[str, Any], where: str = "relabeling") -> Dict[str, Any]:
    """One ServiceMonitor ``RelabelConfig`` (camelCase) as a Prometheus ``relabel_config`` (snake_case, as prometheus-operator's
    generateRelabelConfig writes it: only the fields given, the action lower-cased)."""
    if not isinstance(raw, Mapping):
        raise ValueError("%s: a relabeling is a mapping, got %r" % (where, raw))
    known = {camel for camel, _snake in RELABEL_FIELDS}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError("%s: unknown RelabelConfig field(s) %s (known: %s)" % (where, ", ".join(unknown), ", ".join(sorted(known))))
    out: Dict[str, Any] = {}
    for camel, snake in RELABEL_FIELDS:
        value = raw.get(camel)
        if value is None or value == "" or (camel == "sourceLabels" and not value) or (camel == "modulus" and value == 0):
            continue
        if camel == "sourceLabels":
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ValueError("%s: sourceLabels must be a list of label names, got %r" % (where, value))
            value = list(value)
        if camel == "action":
            value = str(value).lower()
            if value not in RELABEL_ACTIONS:
                raise ValueError("%s: unknown relabel action %r" % (where, raw.get(camel)))
        out[snake] = value
    return out


def _namespaces(monitor: Mapping[str, Any]) -> Optional[List[str]]:
    """The namespaces the monitor's service discovery watches (None: all)."""
    spec = monitor.get("spec") or {}
    selector = spec.get("namespaceSelector") or {}
    if selector.get("any"):
        return None
    names = selector.get("matchNames")
    if names:
        return list(names)
    return [str((monitor.get("metadata") or {}).get("namespace") or "default")]


def _selector_relabelings(selector: Mapping[str, Any]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    match_labels = selector.get("matchLabels") or {}
    for key in sorted(match_labels):
        name = sanitize_label_name(key)
        out.append({"action": "keep", "source_labels": ["__meta_kubernetes_service_label_" + name, "__meta_kubernetes_service_labelpresent_" + name],
                    "regex": "(%s);true" % match_labels[key]})
    for expression in selector.get("matchExpressions") or []:
        name = sanitize_label_name(expression["key"])
        operator = expression["operator"]
        values = "|".join(expression.get("values") or [])
        if operator in ("In", "NotIn"):
            out.append({"action": "keep" if operator == "In" else "drop",
                        "source_labels": ["__meta_kubernetes_service_label_" + name, "__meta_kubernetes_service_labelpresent_" + name],
                        "regex": "(%s);true" % values})
        elif operator in ("Exists", "DoesNotExist"):
            out.append({"action": "keep" if operator == "Exists" else "drop",
                        "source_labels": ["__meta_kubernetes_service_labelpresent_" + name], "regex": "true"})
        else:
            raise ValueError("selector.matchExpressions: unknown operator %r" % operator)
    return out


def relabel_configs(monitor: Mapping[str, Any], index: int = 0) -> List[Dict[str, Any]]:
    """The ``relabel_configs`` prometheus-operator generates for endpoint ``index`` of ``monitor`` (see the module doc)."""
    spec = monitor.get("spec") or {}
    endpoint = (spec.get("endpoints") or [])[index]
    rules: List[Dict[str, Any]] = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
    rules.extend(_selector_relabelings(spec.get("selector") or {}))
    port, target_port = endpoint.get("port"), endpoint.get("targetPort")
    if port:
        rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": port})
    elif target_port not in (None, "", 0):
        if isinstance(target_port, str):
            rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": target_port})
        else:
            rules.append({"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": str(target_port)})
    kind = ["__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"]
    rules.extend([
        {"source_labels": kind, "separator": ";", "regex": "Node;(.*)", "replacement": "${1}", "target_label": "node"},
        {"source_labels": kind, "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
    ])
    if endpoint.get("filterRunning", True):
        rules.append({"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)"})
    for label in spec.get("targetLabels") or []:
        rules.append({"source_labels": ["__meta_kubernetes_service_label_" + sanitize_label_name(label)],
                      "target_label": sanitize_label_name(label), "regex": "(.+)", "replacement": "${1}"})
    for label in spec.get("podTargetLabels") or []:
        rules.append({"source_labels": ["__meta_kubernetes_pod_label_" + sanitize_label_name(label)],
                      "target_label": sanitize_label_name(label), "regex": "(.+)", "replacement": "${1}"})
    rules.append({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"})
    if spec.get("jobLabel"):
        rules.append({"source_labels": ["__meta_kubernetes_service_label_" + sanitize_label_name(spec["jobLabel"])],
                      "target_label": "job", "regex": "(.+)", "replacement": "${1}"})
    if port:
        rules.append({"target_label": "endpoint", "replacement": port})
    elif target_port not in (None, "", 0):
        rules.append({"target_label": "endpoint", "replacement": str(target_port)})
    for position, raw in enumerate(endpoint.get("relabelings") or []):
        rules.append(relabel_config(raw, "endpoints[%d].relabelings[%d]" % (index, position)))
    rules.extend([
        {"source_labels": ["__address__", HASH_LABEL], "target_label": HASH_LABEL, "regex": "(.+);", "replacement": "$1", "action": "replace"},
        {"source_labels": [HASH_LABEL], "target_label": HASH_LABEL, "modulus": 1, "action": "hashmod"},
        {"source_labels": [HASH_LABEL, DISABLE_SHARDING_LABEL], "regex": "0;|.+;.+", "action": "keep"},
    ])
    return rules


def scrape_config(monitor: Mapping[str, Any], targets: Sequence[Target], index: int = 0,
                  interval: Optional[str] = None) -> Dict[str, Any]:
    """The Prometheus ``scrape_config`` of endpoint ``index`` of ``monitor`` (a ServiceMonitor object) over ``targets``.

    ``interval`` replaces the endpoint's ``interval`` (tests scrape faster than a cluster); everything else is the
    monitor's. Targets in namespaces the monitor does not watch are left out (the service discovery never lists them)."""
    metadata = monitor.get("metadata") or {}
    spec = monitor.get("spec") or {}
    unknown = sorted(set(spec) - SPEC_FIELDS)
    if unknown:
        raise ValueError("ServiceMonitor %s: spec field(s) %s not translated" % (metadata.get("name"), ", ".join(unknown)))
    endpoints = spec.get("endpoints") or []
    if not 0 <= index < len(endpoints):
        raise ValueError("ServiceMonitor %s has no endpoint %d" % (metadata.get("name"), index))
    endpoint = endpoints[index]
    unknown = sorted(set(endpoint) - ENDPOINT_FIELDS)
    if unknown:
        raise ValueError("ServiceMonitor %s endpoints[%d]: field(s) %s not translated" % (metadata.get("name"), index, ", ".join(unknown)))
    config: Dict[str, Any] = {"job_name": "serviceMonitor/%s/%s/%d" % (metadata.get("namespace"), metadata.get("name"), index),
                              "honor_labels": bool(endpoint.get("honorLabels", False))}
    if endpoint.get("honorTimestamps") is not None:
        config["honor_timestamps"] = bool(endpoint["honorTimestamps"])
    scrape_interval = interval or endpoint.get("interval")
    if scrape_interval:
        config["scrape_interval"] = scrape_interval
    if endpoint.get("scrapeTimeout"):
        config["scrape_timeout"] = endpoint["scrapeTimeout"]
    if endpoint.get("path"):
        config["metrics_path"] = endpoint["path"]
    if endpoint.get("params"):
        config["params"] = endpoint["params"]
    if endpoint.get("scheme"):
        config["scheme"] = endpoint["scheme"]
    namespaces = _namespaces(monitor)
    chosen = [t for t in targets if namespaces is None or t.namespace in namespaces]
    config["static_configs"] = [{"targets": [t.address], "labels": {k: v for k, v in t.meta_labels().items() if k != "__address__"}}
                                for t in chosen]
    config["relabel_configs"] = relabel_configs(monitor, index)
    metric = [relabel_config(raw, "endpoints[%d].metricRelabelings[%d]" % (index, i)) for i, raw in enumerate(endpoint.get("metricRelabelings") or [])]
    if metric:
        config["metric_relabel_configs"] = metric
    return config


# ------------------------------------------------------------------------------------------------ the charts' monitors

#: The GPU Operator's dcgm-exporter Service (assets/state-dcgm-exporter/0600_service.yaml): name, label, port
DCGM_SERVICE = "nvidia-dcgm-exporter"
DCGM_PORT_NAME = "gpu-metrics"
DCGM_PORT = 9400
#: kube-prometheus-stack's kube-state-metrics Service (the kube-state-metrics subchart, release name ``kube-prometheus-stack``)
KSM_SERVICE = "kube-prometheus-stack-kube-state-metrics"
KSM_PORT_NAME = "http"
KSM_PORT = 8080
#: kube-prometheus-stack's defaults for ``kube-state-metrics.prometheus.monitor`` (values.yaml of the chart)
KSM_MONITOR_DEFAULTS: Dict[str, Any] = {"honorLabels": True, "relabelings": [], "metricRelabelings": []}


def gpu_operator_dcgm_service_monitor(values: Mapping[str, Any], namespace: str) -> Dict[str, Any]:
    """The ServiceMonitor the GPU Operator creates for dcgm-exporter from its Helm ``values`` (ClusterPolicy
    ``dcgmExporter.serviceMonitor``): the asset ``state-dcgm-exporter/0500_service_monitor.yaml`` (port ``gpu-metrics``,
    path ``/metrics``, ``jobLabel: app``, selector ``app: nvidia-dcgm-exporter`` in the operator's namespace) with the
    ClusterPolicy's ``interval``, ``honorLabels``, ``additionalLabels`` and ``relabelings`` applied. ValueError when the
    values do not enable the exporter and its monitor."""
    exporter = values.get("dcgmExporter") or {}
    monitor = exporter.get("serviceMonitor") or {}
    if not exporter.get("enabled", True) or not monitor.get("enabled"):
        got = {"dcgmExporter.enabled": exporter.get("enabled"), "serviceMonitor": monitor}
        raise ValueError("gpu-operator values: dcgmExporter.enabled and dcgmExporter.serviceMonitor.enabled must be true "
                         "for Prometheus to scrape dcgm-exporter (got %r)" % got)
    endpoint: Dict[str, Any] = {"port": DCGM_PORT_NAME, "path": "/metrics"}
    if monitor.get("interval"):
        endpoint["interval"] = monitor["interval"]
    if monitor.get("honorLabels") is not None:
        endpoint["honorLabels"] = bool(monitor["honorLabels"])
    if monitor.get("relabelings"):
        endpoint["relabelings"] = [dict(r) for r in monitor["relabelings"]]
    labels = {"app": DCGM_SERVICE}
    labels.update(monitor.get("additionalLabels") or {})
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": DCGM_SERVICE, "namespace": namespace, "labels": labels},
            "spec": {"endpoints": [endpoint], "jobLabel": "app", "namespaceSelector": {"matchNames": [namespace]},
                     "selector": {"matchLabels": {"app": DCGM_SERVICE}}}}


def kube_state_metrics_service_monitor(values: Mapping[str, Any], namespace: str) -> Dict[str, Any]:
    """The ServiceMonitor kube-prometheus-stack creates for its kube-state-metrics from the stack's Helm ``values``
    (``kube-state-metrics.prometheus.monitor`` over the chart's defaults): port ``http``, ``jobLabel:
    app.kubernetes.io/name``, selector on the subchart's name/instance labels."""
    ksm = values.get("kube-state-metrics") or {}
    monitor = dict(KSM_MONITOR_DEFAULTS)
    monitor.update(((ksm.get("prometheus") or {}).get("monitor")) or {})
    endpoint: Dict[str, Any] = {"port": KSM_PORT_NAME, "honorLabels": bool(monitor.get("honorLabels"))}
    if monitor.get("interval"):
        endpoint["interval"] = monitor["interval"]
    if monitor.get("scrapeTimeout"):
        endpoint["scrapeTimeout"] = monitor["scrapeTimeout"]
    if monitor.get("relabelings"):
        endpoint["relabelings"] = [dict(r) for r in monitor["relabelings"]]
    if monitor.get("metricRelabelings"):
        endpoint["metricRelabelings"] = [dict(r) for r in monitor["metricRelabelings"]]
    selector = {"app.kubernetes.io/name": "kube-state-metrics", "app.kubernetes.io/instance": "kube-prometheus-stack"}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": KSM_SERVICE, "namespace": namespace, "labels": dict(selector)},
            "spec": {"endpoints": [endpoint], "jobLabel": "app.kubernetes.io/name", "namespaceSelector": {"matchNames": [namespace]},
                     "selector": {"matchLabels": selector}}}
