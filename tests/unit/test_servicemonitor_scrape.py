# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""tests/harness/servicemonitor_scrape.py: a ServiceMonitor as the scrape config prometheus-operator generates.

The expected relabelling is prometheus-operator's ``generateServiceMonitorConfig`` (pkg/prometheus/promcfg.go, role
``endpoints``, one shard), written out here rule by rule; the last test runs the translation through Prometheus' own
relabelling (``promtool check service-discovery``, Debian's ``prometheus`` package) and checks the labels a target ends
with, as they would on a Kubernetes target of the same Service.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.dsxos.cluster.tests.harness.servicemonitor_scrape import (
    Target, gpu_operator_dcgm_service_monitor, kube_state_metrics_service_monitor, relabel_config, relabel_configs, sanitize_label_name,
    scrape_config,
)

#: what the catalog's gpu-operator values set (recipes/components/gpu-operator/values.yaml), inlined: this file tests the
#: translation, not the catalog
NODE_RELABELINGS = [{"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"},
                    {"action": "labeldrop", "regex": "pod|namespace|container"}]
SHARDING = [
    {"source_labels": ["__address__", "__tmp_hash"], "target_label": "__tmp_hash", "regex": "(.+);", "replacement": "$1", "action": "replace"},
    {"source_labels": ["__tmp_hash"], "target_label": "__tmp_hash", "modulus": 1, "action": "hashmod"},
    {"source_labels": ["__tmp_hash", "__tmp_disable_sharding"], "regex": "0;|.+;.+", "action": "keep"},
]
KIND = ["__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"]


def monitor(**endpoint):
    return {"metadata": {"name": "exporter", "namespace": "gpu"},
            "spec": {"selector": {"matchLabels": {"app": "exp"}}, "namespaceSelector": {"matchNames": ["gpu"]}, "jobLabel": "app",
                     "endpoints": [dict({"port": "metrics"}, **endpoint)]}}


def target(node="n1", pod="exp-1", namespace="gpu", service="exp-svc", port_name="metrics", address="127.0.0.1:9400", **kwargs):
    return Target(address=address, node=node, namespace=namespace, service=service, pod=pod, port_name=port_name, port_number=9400,
                  container="exporter", service_labels=kwargs.pop("service_labels", {"app": "exp"}),
                  pod_labels=kwargs.pop("pod_labels", {"app": "exp"}), **kwargs)


def test_relabel_config_is_snake_case_in_the_operators_order_with_the_action_lower_cased():
    raw = {"action": "Replace", "replacement": "$1", "regex": "(.*)", "targetLabel": "node", "separator": ";",
           "sourceLabels": ["__meta_kubernetes_pod_node_name"], "modulus": 0}
    out = relabel_config(raw)
    assert list(out) == ["source_labels", "separator", "target_label", "regex", "replacement", "action"]
    assert out == {"source_labels": ["__meta_kubernetes_pod_node_name"], "separator": ";", "target_label": "node", "regex": "(.*)",
                   "replacement": "$1", "action": "replace"}
    dropped = relabel_config({"action": "labeldrop", "regex": "pod|namespace|container"})
    assert dropped == {"regex": "pod|namespace|container", "action": "labeldrop"}
    assert relabel_config({"action": "hashmod", "sourceLabels": ["a"], "targetLabel": "h", "modulus": 4})["modulus"] == 4


@pytest.mark.parametrize("raw, message", [
    ({"source_labels": ["a"]}, r"unknown RelabelConfig field\(s\) source_labels"),
    ({"action": "explode"}, "unknown relabel action"),
    ({"sourceLabels": "a"}, "sourceLabels must be a list"),
    ("action: keep", "a relabeling is a mapping"),
])
def test_relabel_config_refuses_what_the_crd_does_not_have(raw, message):
    with pytest.raises(ValueError, match=message):
        relabel_config(raw)


def test_relabel_configs_are_prometheus_operators_for_an_endpoints_monitor():
    mon = monitor(relabelings=NODE_RELABELINGS)
    mon["spec"]["selector"]["matchExpressions"] = [{"key": "tier", "operator": "In", "values": ["gpu", "hpc"]},
                                                   {"key": "app.kubernetes.io/part-of", "operator": "Exists"},
                                                   {"key": "legacy", "operator": "DoesNotExist"},
                                                   {"key": "zone", "operator": "NotIn", "values": ["a"]}]
    mon["spec"]["targetLabels"] = ["team"]
    mon["spec"]["podTargetLabels"] = ["app.kubernetes.io/version"]
    assert relabel_configs(mon) == [
        {"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"},
        {"action": "keep", "source_labels": ["__meta_kubernetes_service_label_app", "__meta_kubernetes_service_labelpresent_app"], "regex": "(exp);true"},
        {"action": "keep", "source_labels": ["__meta_kubernetes_service_label_tier", "__meta_kubernetes_service_labelpresent_tier"],
         "regex": "(gpu|hpc);true"},
        {"action": "keep", "source_labels": ["__meta_kubernetes_service_labelpresent_app_kubernetes_io_part_of"], "regex": "true"},
        {"action": "drop", "source_labels": ["__meta_kubernetes_service_labelpresent_legacy"], "regex": "true"},
        {"action": "drop", "source_labels": ["__meta_kubernetes_service_label_zone", "__meta_kubernetes_service_labelpresent_zone"], "regex": "(a);true"},
        {"action": "keep", "source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": "metrics"},
        {"source_labels": KIND, "separator": ";", "regex": "Node;(.*)", "replacement": "${1}", "target_label": "node"},
        {"source_labels": KIND, "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)"},
        {"source_labels": ["__meta_kubernetes_service_label_team"], "target_label": "team", "regex": "(.+)", "replacement": "${1}"},
        {"source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_version"], "target_label": "app_kubernetes_io_version",
         "regex": "(.+)", "replacement": "${1}"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"},
        {"source_labels": ["__meta_kubernetes_service_label_app"], "target_label": "job", "regex": "(.+)", "replacement": "${1}"},
        {"target_label": "endpoint", "replacement": "metrics"},
        {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node", "action": "replace"},
        {"regex": "pod|namespace|container", "action": "labeldrop"},
    ] + SHARDING


def test_target_port_and_filter_running_variants():
    by_name = relabel_configs(monitor(port=None, targetPort="http-metrics", filterRunning=False))
    assert {"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": "http-metrics"} in by_name
    assert {"target_label": "endpoint", "replacement": "http-metrics"} in by_name
    assert not [r for r in by_name if r.get("source_labels") == ["__meta_kubernetes_pod_phase"]], "filterRunning: false"
    by_number = relabel_configs(monitor(port=None, targetPort=9400))
    assert {"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": "9400"} in by_number
    assert {"target_label": "endpoint", "replacement": "9400"} in by_number


def test_scrape_config_carries_the_endpoint_settings_and_only_the_watched_namespaces():
    mon = monitor(interval="30s", scrapeTimeout="10s", path="/metrics", scheme="http", params={"collect[]": ["gpu"]}, honorLabels=True,
                  honorTimestamps=False, metricRelabelings=[{"action": "drop", "sourceLabels": ["__name__"], "regex": "go_.*"}])
    inside, outside = target(), target(namespace="default", pod="other-1", address="127.0.0.1:9401")
    config = scrape_config(mon, [inside, outside])
    assert config["job_name"] == "serviceMonitor/gpu/exporter/0"
    assert (config["honor_labels"], config["honor_timestamps"], config["scrape_interval"], config["scrape_timeout"]) == (True, False, "30s", "10s")
    assert (config["metrics_path"], config["scheme"], config["params"]) == ("/metrics", "http", {"collect[]": ["gpu"]})
    assert config["metric_relabel_configs"] == [{"source_labels": ["__name__"], "regex": "go_.*", "action": "drop"}]
    assert [c["targets"] for c in config["static_configs"]] == [["127.0.0.1:9400"]], "the default namespace is not watched"
    labels = config["static_configs"][0]["labels"]
    assert labels["__meta_kubernetes_pod_node_name"] == "n1" and labels["__meta_kubernetes_endpoint_address_target_kind"] == "Pod"
    assert labels["__meta_kubernetes_service_label_app"] == "exp" and labels["__meta_kubernetes_service_labelpresent_app"] == "true"
    assert "__address__" not in labels
    assert scrape_config(mon, [inside], interval="1s")["scrape_interval"] == "1s", "a test may scrape faster"
    assert scrape_config(dict(mon, spec=dict(mon["spec"], namespaceSelector={"any": True})), [inside, outside])["static_configs"][1]["targets"] == \
        ["127.0.0.1:9401"]
    own = dict(mon, spec={k: v for k, v in mon["spec"].items() if k != "namespaceSelector"})
    assert len(scrape_config(own, [inside, outside])["static_configs"]) == 1, "without a selector: the monitor's own namespace"
    assert "honor_timestamps" not in scrape_config(monitor(), [inside]), "only when set"


def test_scrape_config_refuses_fields_it_does_not_translate():
    with pytest.raises(ValueError, match="tlsConfig"):
        scrape_config(monitor(tlsConfig={"insecureSkipVerify": True}), [target()])
    bad = monitor()
    bad["spec"]["sampleLimit"] = 10
    with pytest.raises(ValueError, match="sampleLimit"):
        scrape_config(bad, [target()])
    with pytest.raises(ValueError, match="no endpoint 1"):
        scrape_config(monitor(), [target()], index=1)


def test_the_charts_monitors_from_values():
    monitor = {"enabled": True, "interval": "15s", "honorLabels": True, "additionalLabels": {"release": "kps"},
               "relabelings": NODE_RELABELINGS}
    values = {"dcgmExporter": {"enabled": True, "serviceMonitor": monitor}}
    mon = gpu_operator_dcgm_service_monitor(values, "gpu-operator")
    assert mon["metadata"] == {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator", "labels": {"app": "nvidia-dcgm-exporter", "release": "kps"}}
    assert mon["spec"]["endpoints"] == [{"port": "gpu-metrics", "path": "/metrics", "interval": "15s", "honorLabels": True,
                                         "relabelings": NODE_RELABELINGS}]
    assert mon["spec"]["jobLabel"] == "app" and mon["spec"]["namespaceSelector"] == {"matchNames": ["gpu-operator"]}
    with pytest.raises(ValueError, match="serviceMonitor.enabled"):
        gpu_operator_dcgm_service_monitor({"dcgmExporter": {"enabled": True}}, "gpu-operator")
    ksm = kube_state_metrics_service_monitor({}, "monitoring")
    assert ksm["spec"]["endpoints"] == [{"port": "http", "honorLabels": True}], "kube-prometheus-stack's default: honorLabels"
    ksm = kube_state_metrics_service_monitor({"kube-state-metrics": {"prometheus": {"monitor": {"honorLabels": False, "interval": "1m"}}}},
                                             "monitoring")
    assert ksm["spec"]["endpoints"] == [{"port": "http", "honorLabels": False, "interval": "1m"}]
    assert sanitize_label_name("app.kubernetes.io/name") == "app_kubernetes_io_name"


def test_prometheus_relabels_the_translated_targets_as_it_would_kubernetes_ones(tmp_path):
    """Prometheus' own relabelling (promtool check service-discovery) over the translation: the selected pod's target ends
    with the labels the operator's rules give it, `node` from the pod's node and the pod's own pod/namespace/container
    dropped; a target of another Service, one on another port and a Failed pod are dropped."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed: install Debian's prometheus package (apt-get install -y prometheus; scripts/system_deps.sh does)"
    targets = [target(),
               target(pod="other-svc-1", address="127.0.0.1:9402", service_labels={"app": "other"}),
               target(pod="exp-2", address="127.0.0.1:9403", port_name="debug"),
               target(pod="exp-3", address="127.0.0.1:9404", phase="Failed")]
    config = scrape_config(monitor(interval="15s", honorLabels=True, relabelings=NODE_RELABELINGS), targets)
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump({"scrape_configs": [config]}), encoding="utf-8")
    checked = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    found = subprocess.run([promtool, "check", "service-discovery", "--timeout=1s", str(path), config["job_name"]],
                           capture_output=True, text=True, check=False, timeout=60)
    assert found.returncode == 0, found.stdout + found.stderr
    results = json.loads(found.stdout)
    kept = [r["labels"] for r in results if r.get("labels")]
    assert len(results) == 4 and len(kept) == 1, results
    public = {k: v for k, v in kept[0].items() if not k.startswith("__")}
    assert public == {"instance": "127.0.0.1:9400", "job": "exp", "service": "exp-svc", "endpoint": "metrics", "node": "n1"}, public
    assert kept[0]["__scrape_interval__"] == "15s"
