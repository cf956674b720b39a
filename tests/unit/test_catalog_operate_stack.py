# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Operate stack the built-in catalog deploys: everything the shipped GPU alert rules
(``extensions/prometheus/dsxos-gpu-health.rules.yml``, the ``gpu-health-rules`` PrometheusRule) need to act, with no
hand-written addition.

* dcgm-exporter's ServiceMonitor (GPU Operator values) sets ``node`` from the target pod's node and drops the target's
  pod/namespace/container, as docs/operate-alerts.md shows;
* the dcgm-exporter counters ConfigMap (``gpu-operator`` manifest ``dcgm-metrics.yaml``) enables every DCGM field any
  rule reads, each a real exporter field of the right type;
* kube-state-metrics allowlists every node label a rule reads from ``kube_node_labels``;
* every rule's ``node`` comes from something the catalog deploys (a named source per metric);
* Prometheus selects the PrometheusRule and the ServiceMonitors;
* the EDA receiver (an AlertmanagerConfig) is off by default, and when switched on matches
  ``extensions/alertmanager/alertmanager.yml`` with the token from a Secret;
* promtool: series shaped by the catalog (relabelled DCGM series, kube-state-metrics) of a healthy cluster raise no
  alert, and an XID 79 raises GPUFallenOffBus with the node, which the EDA source accepts.
"""
from __future__ import annotations

import csv
import functools
import glob
import os
import re
import shutil
import subprocess
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

import jsonschema
import pytest
import yaml

from manifest_validation import SHARED_DIR, validate_objects

from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_file, load_yaml_text
from ansible_collections.dsxos.cluster.plugins.module_utils.configure import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import build_component_bundles
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER, RECIPE_RESOLVE
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ANY
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import alert_events

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CATALOG = os.path.join(REPO, "recipes")
RULES = os.path.join(REPO, "extensions", "prometheus", "dsxos-gpu-health.rules.yml")
ALERTMANAGER_EXAMPLE = os.path.join(REPO, "extensions", "alertmanager", "alertmanager.yml")
ALERTS_DOC = os.path.join(REPO, "docs", "operate-alerts.md")
DCGM_REFERENCE = os.path.join(SHARED_DIR, "reference", "dcgm-exporter")
LEAF = "h100-eks-ubuntu-training"
EDA_URL = "http://eda.example.internal:5050/alerts"
CSV_KEY = "dcgm-metrics.csv"  # the key the GPU Operator mounts (MetricsConfigFileName)
PROMTOOL_TIMEOUT_S = 180

#: Where a rule's ``node`` label comes from, per metric family: (metric name pattern, source).
NODE_SOURCES: Tuple[Tuple[str, str], ...] = (
    (r"DCGM_FI_[A-Z0-9_]+", "dcgm-exporter series: the ServiceMonitor relabeling __meta_kubernetes_pod_node_name -> node"),
    (r"kube_node_[a-z_]+", "kube-state-metrics node metrics: their own node label (honorLabels)"),
)
_PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
    "max", "min", "sum", "count", "avg", "topk", "bottomk", "quantile", "stddev", "stdvar", "count_values", "group",
    "increase", "rate", "irate", "delta", "idelta", "deriv", "max_over_time", "min_over_time", "avg_over_time",
    "sum_over_time", "count_over_time", "last_over_time", "present_over_time", "absent", "absent_over_time",
    "label_replace", "label_join", "vector", "scalar", "time", "abs", "clamp_min", "clamp_max", "changes", "resets",
    "e",
}


# ---------------------------------------------------------------------------- catalog

@functools.lru_cache(maxsize=1)
def store() -> RecipeStore:
    return RecipeStore.load([], include_builtin=True, builtin_dir=CATALOG)


def _full_recipes() -> List[str]:
    out = []
    for name, doc in sorted(store().overlays.items()):
        criteria = doc.criteria
        if criteria is not None and all(getattr(criteria, f) not in (None, ANY, "") for f in ("service", "accelerator", "os", "intent")):
            out.append(name)
    return out


FULL_RECIPES = _full_recipes()


@functools.lru_cache(maxsize=None)
def _bundles(name: str, eda_url: str = "") -> Dict[str, Any]:
    result = resolve(store(), store().overlays[name].criteria)
    extra = {"kube-prometheus-stack": {"edaReceiver": {"url": eda_url}}} if eda_url else None
    return {b.name: b for b in build_component_bundles(store(), result, extra_overrides=extra)}


def _docs(bundle: Any) -> List[Dict[str, Any]]:
    return [d for text in bundle.manifests.values() for d in load_yaml_text(text, multi=True) if d]


def _rules() -> List[Dict[str, Any]]:
    return [rule for group in load_yaml_file(RULES)["groups"] for rule in group["rules"]]


def _get(data: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    node: Any = data
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


# ---------------------------------------------------------------------------- PromQL helpers

def metric_names(expr: str) -> Set[str]:
    """The metric names an expression reads (strings, label matchers, grouping lists, ranges and numbers removed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', " ", expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r" \1 ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    names = set(re.findall(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)", text))
    return {n for n in names if n not in _PROMQL_WORDS and not re.fullmatch(r"[0-9.e]+", n)}


def node_label_matchers(expr: str, metric: str) -> Set[str]:
    """Label names matched in the selectors of ``metric`` (``kube_node_labels{label_x="y"}`` -> ``label_x``)."""
    out: Set[str] = set()
    for body in re.findall(r"\b%s\{([^}]*)\}" % re.escape(metric), expr):
        out |= set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", body))
    return out


def dcgm_fields(expr: str) -> Set[str]:
    return set(re.findall(r"\bDCGM_FI_[A-Z0-9_]+", expr))


def missing_fields(rules: List[Dict[str, Any]], enabled: Set[str]) -> Dict[str, Set[str]]:
    """Per alert, the DCGM fields it reads that the counters CSV does not enable."""
    out = {}
    for rule in rules:
        missing = dcgm_fields(rule["expr"]) - enabled
        if missing:
            out[rule.get("alert") or rule.get("record")] = missing
    return out


def node_source(metric: str) -> Optional[str]:
    for pattern, source in NODE_SOURCES:
        if re.fullmatch(pattern, metric):
            return source
    return None


def ksm_label_name(kubernetes_label: str) -> str:
    """kube-state-metrics' label for a Kubernetes label: ``label_`` + the name with every invalid character as ``_``."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", kubernetes_label)


def allowlisted_node_labels(allowlist: List[str]) -> Set[str]:
    out: Set[str] = set()
    for entry_text in allowlist:
        match = re.fullmatch(r"\s*nodes\s*=\s*\[([^\]]*)\]\s*", entry_text)
        if match:
            out |= {ksm_label_name(part.strip()) for part in match.group(1).split(",") if part.strip()}
    return out


# ---------------------------------------------------------------------------- reference and CSV

@functools.lru_cache(maxsize=1)
def reference_types() -> Dict[str, Set[str]]:
    """DCGM fields of the shared dcgm-exporter lists (commented out or not) -> the metric types they are listed with."""
    assert os.path.isdir(DCGM_REFERENCE), "dcgm-exporter reference is missing: %s" % DCGM_REFERENCE
    types: Dict[str, Set[str]] = {}
    for file_name in ("default-counters.csv", "dcp-metrics-included.csv"):
        with open(os.path.join(DCGM_REFERENCE, file_name), encoding="utf-8") as handle:
            for line in handle:
                match = re.match(r"^#?\s*(DCGM_FI_[A-Z0-9_]+)\s*,\s*([a-z]+)\s*,", line.strip())
                if match:
                    types.setdefault(match.group(1), set()).add(match.group(2))
    assert "DCGM_FI_DEV_XID_ERRORS" in types
    return types


def parse_counters_csv(text: str) -> Dict[str, Tuple[str, str]]:
    """dcgm-exporter's collectors CSV: ``field, type, help`` per line, ``#`` comments -> {field: (type, help)}."""
    out: Dict[str, Tuple[str, str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = next(csv.reader([line], skipinitialspace=True))
        assert len(row) >= 3, "line %d: expected 'field, type, help': %r" % (number, line)
        field_name, metric_type, help_text = row[0].strip(), row[1].strip(), ",".join(row[2:]).strip()
        assert re.fullmatch(r"DCGM_FI_[A-Z0-9_]+", field_name), "line %d: not a DCGM field: %r" % (number, line)
        assert metric_type in ("gauge", "counter", "label"), "line %d: metric type %r" % (number, metric_type)
        assert help_text, "line %d: no help text" % number
        assert field_name not in out, "line %d: %s listed twice" % (number, field_name)
        out[field_name] = (metric_type, help_text)
    return out


def _counters_configmap(name: str) -> Dict[str, Any]:
    maps = [d for d in _docs(_bundles(name)["gpu-operator"]) if d["kind"] == "ConfigMap"]
    assert len(maps) == 1, "%s: expected one dcgm-exporter counters ConfigMap, got %d" % (name, len(maps))
    return maps[0]


# ---------------------------------------------------------------------------- 1. node on the DCGM series

def test_dcgm_servicemonitor_sets_node_from_the_target_pod_node():
    for name in FULL_RECIPES:
        exporter = _bundles(name)["gpu-operator"].values["dcgmExporter"]
        monitor = exporter["serviceMonitor"]
        assert exporter["enabled"] is True and monitor["enabled"] is True, name
        relabelings = monitor["relabelings"]
        assert {"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"} in relabelings, name
        assert {"action": "labeldrop", "regex": "pod|namespace|container"} in relabelings, name
        for item in relabelings:  # the ClusterPolicy field is prometheus-operator's RelabelConfig: camelCase keys
            assert set(item) <= {"action", "sourceLabels", "targetLabel", "regex", "replacement", "separator", "modulus"}, item


def test_docs_show_the_catalog_relabelings():
    with open(ALERTS_DOC, encoding="utf-8") as handle:
        doc = handle.read()
    block = re.search(r"```yaml\n(relabelings:\n.*?)```", doc, flags=re.DOTALL)
    assert block, "docs/operate-alerts.md lost its relabelings example"
    documented = yaml.safe_load(block.group(1))["relabelings"]
    catalog = load_yaml_file(os.path.join(CATALOG, "components", "gpu-operator", "values.yaml"))
    assert documented == catalog["dcgmExporter"]["serviceMonitor"]["relabelings"]


# ---------------------------------------------------------------------------- 2. counters ConfigMap

def test_counters_configmap_enables_every_rule_field_with_the_reference_type():
    reference = reference_types()
    for name in FULL_RECIPES:
        bundle = _bundles(name)["gpu-operator"]
        config_map = _counters_configmap(name)
        assert config_map["metadata"]["name"] == bundle.values["dcgmExporter"]["config"]["name"], name
        assert config_map["metadata"]["namespace"] == bundle.namespace == "gpu-operator", name
        assert set(config_map["data"]) == {CSV_KEY}, name
        validate_objects([config_map], "%s dcgm-metrics.yaml" % name)
    fields = parse_counters_csv(_counters_configmap(LEAF)["data"][CSV_KEY])
    assert missing_fields(_rules(), set(fields)) == {}, "rules read DCGM fields the counters ConfigMap leaves out"
    unknown = set(fields) - set(reference)
    assert unknown == set(), "not DCGM exporter fields of the shared reference lists: %s" % sorted(unknown)
    wrong = {f: (t, sorted(reference[f])) for f, (t, _help) in fields.items() if t not in reference[f]}
    assert wrong == {}, "metric types differ from the reference lists"


def test_counters_configmap_keeps_the_gpu_operator_default_set():
    """The CSV replaces the exporter's field set: every field of the GPU Operator's default collectors
    (dcp-metrics-included.csv, uncommented lines) stays enabled."""
    with open(os.path.join(DCGM_REFERENCE, "dcp-metrics-included.csv"), encoding="utf-8") as handle:
        default = {m.group(1) for m in (re.match(r"^(DCGM_FI_[A-Z0-9_]+)\s*,", line) for line in handle) if m}
    fields = parse_counters_csv(_counters_configmap(LEAF)["data"][CSV_KEY])
    assert default - set(fields) == set()


def test_a_rule_on_a_disabled_field_is_reported():
    fields = set(parse_counters_csv(_counters_configmap(LEAF)["data"][CSV_KEY]))
    rule = {"alert": "GPUNew", "expr": "DCGM_FI_DEV_RETIRED_PENDING > 0 or DCGM_FI_DEV_GPU_TEMP > 90"}
    assert missing_fields([rule], fields) == {"GPUNew": {"DCGM_FI_DEV_RETIRED_PENDING"}}
    with pytest.raises(AssertionError, match="listed twice"):
        parse_counters_csv("DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_GPU_TEMP, gauge, t\n")
    with pytest.raises(AssertionError, match="metric type"):
        parse_counters_csv("DCGM_FI_DEV_GPU_TEMP, gaugе, t\n")


def test_counters_configmap_follows_the_config_name():
    result = resolve(store(), store().overlays[LEAF].criteria)
    renamed = build_component_bundles(store(), result, extra_overrides={"gpu-operator": {"dcgmExporter": {"config": {"name": "mine"}}}})
    (config_map,) = [d for d in _docs({b.name: b for b in renamed}["gpu-operator"]) if d["kind"] == "ConfigMap"]
    assert config_map["metadata"]["name"] == "mine"
    for off in ({"dcgmExporter": {"config": {"name": ""}}}, {"dcgmExporter": {"enabled": False}}):
        bundles = {b.name: b for b in build_component_bundles(store(), result, extra_overrides={"gpu-operator": off})}
        assert [d for d in _docs(bundles["gpu-operator"]) if d["kind"] == "ConfigMap"] == [], off


# ---------------------------------------------------------------------------- 3. kube-state-metrics allowlist

def test_ksm_allowlist_covers_every_node_label_a_rule_reads():
    read: Set[str] = set()
    for rule in _rules():
        read |= {label for label in node_label_matchers(rule["expr"], "kube_node_labels") if label.startswith("label_")}
    assert "label_dsxos_io_certification" in read
    for name in FULL_RECIPES:
        values = _bundles(name)["kube-prometheus-stack"].values
        allowlist = values["kube-state-metrics"]["metricLabelsAllowlist"]
        assert "nodes=[dsxos.io/certification]" in allowlist, name
        assert read - allowlisted_node_labels(allowlist) == set(), (name, read - allowlisted_node_labels(allowlist))
        assert _get(values, "kubeStateMetrics.enabled", True) is not False, name
    assert ksm_label_name("dsxos.io/certification") == "label_dsxos_io_certification"
    assert allowlisted_node_labels(["pods=[app]", "nodes=[a.b/c, d-e]"]) == {"label_a_b_c", "label_d_e"}


# ---------------------------------------------------------------------------- 4. where every rule's node comes from

def test_every_rule_gets_node_from_what_the_catalog_deploys():
    sources: Dict[str, Dict[str, str]] = {}
    for rule in _rules():
        metrics = metric_names(rule["expr"])
        assert metrics, rule["alert"]
        named = {m: node_source(m) for m in metrics}
        unsourced = sorted(m for m, s in named.items() if s is None)
        assert unsourced == [], "%s reads %s, whose node label nothing in the catalog provides" % (rule["alert"], unsourced)
        sources[rule["alert"]] = named  # type: ignore[assignment]
    assert set(sources["GPUFallenOffBus"].values()) == {NODE_SOURCES[0][1]}
    assert set(sources["NodeCertificationFailed"].values()) == {NODE_SOURCES[1][1]}
    assert set(sources["GPUTelemetryAbsent"].values()) == {s for _p, s in NODE_SOURCES}
    # ... and the catalog deploys those sources, in every recipe
    for name in FULL_RECIPES:
        bundles = _bundles(name)
        relabelings = bundles["gpu-operator"].values["dcgmExporter"]["serviceMonitor"]["relabelings"]
        assert any(r.get("targetLabel") == "node" and r.get("sourceLabels") == ["__meta_kubernetes_pod_node_name"]
                   for r in relabelings), name
        assert _get(bundles["kube-prometheus-stack"].values, "kubeStateMetrics.enabled", True) is not False, name


def test_metric_name_extraction():
    assert metric_names('max by (node) (kube_node_labels{label_x="a b"}) > on (node) count by (node, gpu) '
                        '(increase(DCGM_FI_DEV_GPU_TEMP[5m]) / 1e9)') == {"kube_node_labels", "DCGM_FI_DEV_GPU_TEMP"}
    assert node_source("up") is None and node_source("kube_node_status_condition")


# ---------------------------------------------------------------------------- 5. Prometheus selects the objects

def _selects(selector: Optional[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    if not selector:  # kube-prometheus-stack renders {} (everything) for an empty selector
        return True
    assert set(selector) <= {"matchLabels"}, "only matchLabels selectors are understood here: %s" % selector
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def test_prometheus_selects_the_rule_and_the_dcgm_servicemonitor():
    for name in FULL_RECIPES:
        bundles = _bundles(name)
        spec = bundles["kube-prometheus-stack"].values["prometheus"]["prometheusSpec"]
        (rule,) = _docs(bundles["gpu-health-rules"])
        assert rule["kind"] == "PrometheusRule"
        assert spec["ruleSelectorNilUsesHelmValues"] is False and _selects(spec.get("ruleSelector"), rule["metadata"]["labels"]), name
        assert not spec.get("ruleNamespaceSelector"), name  # every namespace
        monitor = bundles["gpu-operator"].values["dcgmExporter"]["serviceMonitor"]
        assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False, name
        assert _selects(spec.get("serviceMonitorSelector"), monitor.get("additionalLabels") or {}), name
        assert not spec.get("serviceMonitorNamespaceSelector"), name


# ---------------------------------------------------------------------------- 6. the EDA receiver

_MATCHER = {"type": "object", "additionalProperties": False, "required": ["name", "matchType", "value"],
            "properties": {"name": {"type": "string"}, "matchType": {"enum": ["=", "!=", "=~", "!~"]},
                           "value": {"type": "string"}}}
ALERTMANAGER_CONFIG_SCHEMA: Dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1alpha1"}, "kind": {"const": "AlertmanagerConfig"},
        "metadata": {"type": "object", "additionalProperties": False, "required": ["name", "namespace"],
                     "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "spec": {"type": "object", "additionalProperties": False, "required": ["route", "receivers"], "properties": {
            "route": {"type": "object", "additionalProperties": False, "properties": {
                "receiver": {"type": "string"}, "matchers": {"type": "array", "items": _MATCHER},
                "groupBy": {"type": "array", "items": {"type": "string"}}, "groupWait": {"type": "string"},
                "groupInterval": {"type": "string"}, "repeatInterval": {"type": "string"}}},
            "inhibitRules": {"type": "array", "items": {"type": "object", "additionalProperties": False, "properties": {
                "sourceMatch": {"type": "array", "items": _MATCHER}, "targetMatch": {"type": "array", "items": _MATCHER},
                "equal": {"type": "array", "items": {"type": "string"}}}}},
            "receivers": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["name"],
                "properties": {"name": {"type": "string"}, "webhookConfigs": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["url"], "properties": {
                        "url": {"type": "string", "pattern": "^https?://"}, "sendResolved": {"type": "boolean"},
                        "maxAlerts": {"type": "integer", "minimum": 0},
                        "httpConfig": {"type": "object", "additionalProperties": False, "properties": {
                            "authorization": {"type": "object", "additionalProperties": False,
                                              "required": ["type", "credentials"], "properties": {
                                                  "type": {"const": "Bearer"},
                                                  "credentials": {"type": "object", "additionalProperties": False,
                                                                  "required": ["name", "key"], "properties": {
                                                                      "name": {"type": "string", "minLength": 1},
                                                                      "key": {"type": "string", "minLength": 1}}}}}}}}}}}}},
        }},
    },
}


def _matcher(text: str) -> Dict[str, str]:
    match = re.fullmatch(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"?(.*?)"?', text.strip())
    assert match, text
    return {"name": match.group(1), "matchType": match.group(2), "value": match.group(3)}


def _eda_receiver(name: str, url: str = "") -> List[Dict[str, Any]]:
    return [d for d in _docs(_bundles(name, url)["kube-prometheus-stack"]) if d["kind"] == "AlertmanagerConfig"]


def test_eda_receiver_is_off_by_default():
    for name in FULL_RECIPES:
        bundle = _bundles(name)["kube-prometheus-stack"]
        assert bundle.values["edaReceiver"]["url"] == "", name
        assert bundle.manifests == {}, name


def test_eda_receiver_matches_the_example_alertmanager_config():
    example = load_yaml_file(ALERTMANAGER_EXAMPLE)
    (route,) = [r for r in example["route"]["routes"] if r["receiver"] == "dsxos-gpu-sentinel"]
    (receiver,) = [r for r in example["receivers"] if r["name"] == "dsxos-gpu-sentinel"]
    (webhook,) = receiver["webhook_configs"]
    for name in FULL_RECIPES:
        bundle = _bundles(name, EDA_URL)["kube-prometheus-stack"]
        (config,) = _eda_receiver(name, EDA_URL)
        assert list(jsonschema.Draft7Validator(ALERTMANAGER_CONFIG_SCHEMA).iter_errors(config)) == [], name
        # in Alertmanager's own namespace, which the matcher strategy exempts from the namespace matcher
        assert config["metadata"]["namespace"] == bundle.namespace == "monitoring"
        strategy = bundle.values["alertmanager"]["alertmanagerSpec"]["alertmanagerConfigMatcherStrategy"]
        assert strategy == {"type": "OnNamespaceExceptForAlertmanagerNamespace"}
        spec = config["spec"]
        assert spec["route"]["matchers"] == [_matcher(m) for m in route["matchers"]]
        assert spec["route"]["groupBy"] == route["group_by"]
        assert (spec["route"]["groupWait"], spec["route"]["groupInterval"], spec["route"]["repeatInterval"]) == (
            route["group_wait"], route["group_interval"], route["repeat_interval"])
        assert spec["inhibitRules"] == [{"sourceMatch": [_matcher(m) for m in rule["source_matchers"]],
                                         "targetMatch": [_matcher(m) for m in rule["target_matchers"]],
                                         "equal": rule["equal"]} for rule in example["inhibit_rules"]]
        (sent,) = spec["receivers"][0]["webhookConfigs"]
        assert spec["route"]["receiver"] == spec["receivers"][0]["name"]
        assert sent["url"] == EDA_URL
        assert (sent["sendResolved"], sent["maxAlerts"]) == (webhook["send_resolved"], webhook["max_alerts"])
        authorization = sent["httpConfig"]["authorization"]
        assert authorization["type"] == webhook["http_config"]["authorization"]["type"] == "Bearer"
        assert authorization["credentials"] == bundle.values["edaReceiver"]["tokenSecret"] == {
            "name": "dsxos-eda-token", "key": "token"}


def test_eda_receiver_documented_url_is_the_source_default():
    """The example URL of the values hits the source's default port and path (docs/operate-eda.md options), as
    extensions/alertmanager/alertmanager.yml does."""
    with open(os.path.join(CATALOG, "components", "kube-prometheus-stack", "values.yaml"), encoding="utf-8") as handle:
        assert re.search(r'set: \["prometheus:edaReceiver\.url=http://[^"]+:5050/alerts"\]', handle.read())
    with open(ALERTMANAGER_EXAMPLE, encoding="utf-8") as handle:
        assert "127.0.0.1:5050/alerts" in handle.read()


def test_eda_receiver_switched_on_with_set_in_every_deployer(tmp_path):
    recipe = entry.run_resolve({**{k: o.get("default") for k, o in RECIPE_RESOLVE.spec.items()},
                                "criteria": {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}})["recipe"]
    for deployer, options in (("helm", {}), ("argocd", {"repo_url": "https://git.example.com/o/b.git", "revision": "v1"}),
                              ("flux", {})):
        dest = tmp_path / deployer
        params = {k: o.get("default") for k, o in BUNDLE_RENDER.spec.items()}
        params.update(recipe=recipe, dest=str(dest), deployer=deployer, deployer_options=options,
                      set=["prometheus:edaReceiver.url=%s" % EDA_URL])
        entry.run_render(params)
        found = glob.glob(str(dest / "**" / "eda-receiver.yaml"), recursive=True)
        assert len(found) == 1, (deployer, found)
        with open(found[0], encoding="utf-8") as handle:
            text = handle.read()
        (config,) = [d for d in yaml.safe_load_all(text) if d]
        assert config["kind"] == "AlertmanagerConfig"
        assert config["spec"]["receivers"][0]["webhookConfigs"][0]["url"] == EDA_URL
        # the token is never in the bundle: only the Secret's name and key
        credentials = config["spec"]["receivers"][0]["webhookConfigs"][0]["httpConfig"]["authorization"]["credentials"]
        assert credentials == {"name": "dsxos-eda-token", "key": "token"}


# ---------------------------------------------------------------------------- 7. promtool: healthy and faulty series

def _relabel(target: Dict[str, str], relabelings: List[Dict[str, Any]]) -> Dict[str, str]:
    """Prometheus relabeling (the actions the catalog uses), then the __ labels dropped, as at scrape time."""
    labels = dict(target)
    for item in relabelings:
        action = item.get("action", "replace")
        if action == "replace":
            value = item.get("separator", ";").join(labels.get(s, "") for s in item.get("sourceLabels", []))
            match = re.fullmatch(item.get("regex", "(.*)"), value)
            if match:
                result = match.expand(item.get("replacement", "$1").replace("$", "\\"))
                if result:
                    labels[item["targetLabel"]] = result
                else:
                    labels.pop(item["targetLabel"], None)
        elif action == "labeldrop":
            labels = {k: v for k, v in labels.items() if not re.fullmatch(item["regex"], k)}
        else:
            raise AssertionError("relabel action not modelled here: %s" % action)
    return {k: v for k, v in labels.items() if not k.startswith("__")}


def _series_labels(target: Dict[str, str], exposed: Dict[str, str], honor_labels: bool) -> Dict[str, str]:
    labels = dict(target)
    for key, value in exposed.items():
        if key in labels and not honor_labels:
            labels["exported_" + key] = value
        else:
            labels[key] = value
    return labels


def _promql_selector(metric: str, labels: Mapping[str, str]) -> str:
    return "%s{%s}" % (metric, ", ".join('%s="%s"' % (k, v) for k, v in sorted(labels.items())))


#: A healthy GPU under load, per minute (1m samples): warm, a little throttling, some link noise, all below thresholds.
HEALTHY_SERIES = {
    "DCGM_FI_DEV_GPU_TEMP": "62+0x300",
    "DCGM_FI_DEV_MEMORY_TEMP": "70+0x300",
    "DCGM_FI_DEV_POWER_USAGE": "550+0x300",
    "DCGM_FI_DEV_SM_CLOCK": "1980+0x300",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "0+33000000x300",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "0+1000000000x300",
    "DCGM_FI_DEV_THERMAL_VIOLATION": "0+600000000x300",  # 1 % of the time (ns per minute)
    "DCGM_FI_DEV_POWER_VIOLATION": "0+12000000000x300",  # 20 % of the time
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "0+5x300",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "0+2x300",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "0+5x300",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "0+5x300",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "2+0x300",
    "DCGM_FI_DEV_GPU_UTIL": "95+0x300",
}


def _healthy_value(field: str, metric_type: str) -> str:
    return HEALTHY_SERIES.get(field, "0+0x300")


def _catalog_series(xid_fault: Optional[Tuple[str, int]] = None) -> List[Dict[str, str]]:
    """Two 8-GPU nodes as the catalog deploys them: every enabled DCGM field through the catalog's ServiceMonitor
    settings, and the kube-state-metrics node series (allowlisted certification label)."""
    bundles = _bundles(LEAF)
    monitor = bundles["gpu-operator"].values["dcgmExporter"]["serviceMonitor"]
    fields = parse_counters_csv(_counters_configmap(LEAF)["data"][CSV_KEY])
    series: List[Dict[str, str]] = []
    for index, node in enumerate(("gpu-node-0", "gpu-node-1")):
        target = {"__meta_kubernetes_pod_node_name": node, "__address__": "10.0.0.%d:9400" % index,
                  "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-%d" % index, "container": "nvidia-dcgm-exporter",
                  "service": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics", "job": "nvidia-dcgm-exporter",
                  "instance": "10.0.0.%d:9400" % index}
        target_labels = _relabel(target, monitor["relabelings"])
        for gpu in range(8):
            exposed = {"gpu": str(gpu), "UUID": "GPU-%d-%d" % (index, gpu), "Hostname": "nvidia-dcgm-exporter-%d" % index,
                       "modelName": "NVIDIA H100 80GB HBM3", "device": "nvidia%d" % gpu}
            if gpu < 4:  # a training job on half of the GPUs: the exporter's pod mapping
                exposed.update(pod="trainer-%d" % index, namespace="team-a", container="trainer")
            labels = _series_labels(target_labels, exposed, monitor["honorLabels"])
            for field_name, (metric_type, _help) in sorted(fields.items()):
                if metric_type == "label":
                    continue
                value = _healthy_value(field_name, metric_type)
                if field_name == "DCGM_FI_DEV_XID_ERRORS" and xid_fault == (node, gpu):
                    value = "0x10 79x290"
                series.append({"series": _promql_selector(field_name, labels), "values": value})
        ksm = {"job": "kube-state-metrics", "instance": "10.0.9.9:8080", "node": node}
        series += [
            {"series": _promql_selector("kube_node_status_condition", dict(ksm, condition="Ready", status="true")),
             "values": "1+0x300"},
            {"series": _promql_selector("kube_node_status_capacity", dict(ksm, resource="nvidia_com_gpu", unit="integer")),
             "values": "8+0x300"},
            {"series": _promql_selector("kube_node_labels", dict(ksm, label_dsxos_io_certification="passed")),
             "values": "1+0x300"},
        ]
    return series


def _promtool_test(tmp_path: Any, series: List[Dict[str, str]], cases: List[Dict[str, Any]]) -> subprocess.CompletedProcess:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed (Debian's prometheus package; scripts/system_deps.sh)"
    shutil.copy(RULES, str(tmp_path / "rules.yml"))
    test = {"rule_files": ["rules.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": cases}]}
    (tmp_path / "catalog.test.yml").write_text(yaml.safe_dump(test, sort_keys=False), encoding="utf-8")
    return subprocess.run([promtool, "test", "rules", "catalog.test.yml"], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=PROMTOOL_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)


def test_a_healthy_catalog_deployment_raises_no_alert(tmp_path):
    alerts = [r["alert"] for r in _rules()]
    cases = [{"eval_time": t, "alertname": a, "exp_alerts": []} for t in ("15m", "1h", "2h30m", "4h") for a in alerts]
    result = _promtool_test(tmp_path, _catalog_series(), cases)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_xid_79_on_catalog_series_fires_with_the_node_and_the_eda_source_accepts_it(tmp_path):
    expected = {"node": "gpu-node-1", "gpu": "6", "uuid": "GPU-1-6", "code": "79", "action": "reboot",
                "severity": "critical", "fault_class": "fallen-off-bus"}
    rule = {r["alert"]: r for r in _rules()}["GPUFallenOffBus"]
    cases = [{"eval_time": "20m", "alertname": "GPUFallenOffBus",
              "exp_alerts": [{"exp_labels": expected, "exp_annotations": rule["annotations"]}]}]
    result = _promtool_test(tmp_path, _catalog_series(("gpu-node-1", 6)), cases)
    assert result.returncode == 0, result.stdout + result.stderr
    # the idle GPU (no workload) carries no pod: the exporter pod's labels were dropped at scrape time
    labels = dict(expected, alertname="GPUFallenOffBus")
    payload = {"version": "4", "status": "firing", "receiver": "dsxos-gpu-sentinel", "groupLabels": {"node": "gpu-node-1"},
               "commonLabels": labels, "alerts": [{"status": "firing", "labels": labels, "annotations": {},
                                                   "startsAt": "2026-12-04T00:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
                                                   "fingerprint": "0123456789abcdef"}]}
    accepted, rejected = alert_events.split_results(alert_events.normalize_payload(payload))
    assert rejected == [] and [(e["node"], e["gpu"], e["code"], e["pods"]) for e in accepted] == [("gpu-node-1", "6", 79, [])]
