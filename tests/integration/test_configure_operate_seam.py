# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Configure/Operate seam with real parts: what the catalog renders is what makes the sentinel act.

1. **Configure.** The catalog bundle of eks/h100/ubuntu/training is rendered through the collection's render entry point
   (``dsxos.cluster.bundle_render``, ``bundles`` with criteria), the EDA receiver switched on through the catalog's own
   variables (``set: prometheus:edaReceiver.*``: the source's URL and test timings). EVERYTHING below is read from the
   rendered bundle: the ``PrometheusRule`` (gpu-health-rules), the dcgm-exporter ServiceMonitor settings and counters
   ConfigMap (gpu-operator values and manifest), kube-state-metrics' label allowlist and the Alertmanager configuration
   with its ``AlertmanagerConfig`` receiver (kube-prometheus-stack values and manifest). A missing piece fails the test.
2. **Scrape.** One dcgm-exporter stand-in per node (the bundle's counters CSV, 8 GPUs) and a kube-state-metrics stand-in
   that reads the Nodes of the Kubernetes backend and exports the labels the bundle's allowlist names. The
   ServiceMonitors are translated into real scrape configs (tests/harness/servicemonitor_scrape.py): targets carry the
   ``__meta_kubernetes_*`` labels service discovery gives, then prometheus-operator's relabelling and the bundle's.
3. **Real Prometheus** (Debian 2.42) with the bundle's rules, 2 s scrapes and 1 s evaluations, alerting to a **real
   Alertmanager** configured as kube-prometheus-stack and prometheus-operator configure it from the bundle, whose EDA
   route posts to **the shipped rulebook** ``dsxos.cluster.gpu_sentinel`` in a real ansible-rulebook, which runs the
   sentinel playbooks against the test's Kubernetes backend (emulator and real control plane).
4. **Healthy, then faults.** All nodes healthy: no alert at all (not even pending). Then one fault per node: XID 79,
   ECC double-bit errors, NVLink errors, thermal throttling, a missing GPU, a failed certification label (written on
   the Node, as the Certify phase does). Every expected alert appears live for its node and for no other node.
5. **Rule time.** The ``for:`` of several rules is minutes long (thermal 15m, NVLink CRC 10m, GPU missing 5m,
   certification 1m), so the series the real Prometheus STORED of every metric the rules read (their labels exactly
   as the relabelling produced them; their values the stand-ins' own scenario, the faults moved to minute 10) are
   replayed through ``promtool test rules`` with the bundle's rules unchanged over 30 minutes of rule time: 10
   minutes of healthy data raise no alert at all, the healthy nodes none for all 30 minutes; with the faults from
   minute 10 every expected alert fires for its node by minute 30, nothing else.
6. **Quarantine.** Alerts without ``for`` reach the sentinel through the whole live chain. The alerts still pending
   live (their ``for`` not yet elapsed in real time, proven to fire by step 5) are posted to Alertmanager with the
   labels and annotations the real Prometheus computed, as Prometheus does once ``for`` has elapsed. Each faulty node
   ends as the shipped sentinel policy decides for its fault class (quarantined, or recorded for a record-only class),
   the healthy nodes untouched. ``sentinel_destructive`` stays false (the default): quarantine and record only.

Missing tools are failures naming what to install: ``prometheus`` and ``prometheus-alertmanager`` (apt),
``ansible-rulebook`` (requirements-test.txt), Java 17+ (``openjdk-17-jre-headless``).
"""
from __future__ import annotations

import glob
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import DEFAULT_RULES, steps_for
from tests.harness.alertmanager_operator_config import base_config, find_route, operator_config
from tests.harness.alertmanager_process import AlertmanagerProcess, free_port, rfc3339
from tests.harness.dcgm_exporter_standin import DcgmExporterStandin, GpuNodeModel, parse_counters_csv
from tests.harness.kube_state_metrics_standin import KubeStateMetricsStandin, parse_allowlist, sanitize
from tests.harness.polling import wait_until
from tests.harness.prometheus_process import PrometheusProcess, promtool_tests
from tests.harness.rulebook_process import RulebookProcess, localhost_inventory
from tests.harness.servicemonitor_scrape import (
    DCGM_PORT, DCGM_PORT_NAME, DCGM_SERVICE, KSM_PORT, KSM_PORT_NAME, KSM_SERVICE, Target, gpu_operator_dcgm_service_monitor,
    kube_state_metrics_service_monitor, scrape_config,
)

REPO = Path(__file__).resolve().parents[2]
CALLBACK_DIR = REPO / "tests" / "integration" / "callback_plugins"
CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}
TOKEN = "seam-t0ken-for-tests-only"
CERT_LABEL = "dsxos.io/certification"
INCIDENT = "dsxos.io/incident"
PRIOR = "dsxos.io/quarantine-prior"
RECORDED = "dsxos.io/sentinel-events"
QUARANTINE_TAINT = "dsxos.io/quarantine"
START_TASK = "dsxos.cluster.sentinel : Start the run"
SUMMARY_TASK = "dsxos.cluster.sentinel : Publish the summary"
FAULTY_GPU = 3
MISSING_GPU = 5
#: the node roles: two healthy nodes, then one fault each (dcgm faults of tests/harness/dcgm_exporter_standin.FAULTS,
#: ``certification``: the Node's dsxos.io/certification label turns ``failed``)
ROLES = ("healthy-a", "healthy-b", "xid", "dbe", "nvlink", "thermal", "missing", "certification")
#: what each fault must raise: (alertname, fault_class) - the expectation of this test, checked live and in rule time
EXPECTED: Dict[str, Set[Tuple[str, str]]] = {
    "xid": {("GPUFallenOffBus", "fallen-off-bus")},
    "dbe": {("GPUEccDoubleBitErrors", "memory")},
    "nvlink": {("GPUNvlinkRecoveryErrors", "nvlink"), ("GPUNvlinkCrcErrors", "nvlink")},
    "thermal": {("GPUThermalViolation", "thermal")},
    "missing": {("GPUMissing", "gpu-missing"), ("GPUCountBelowCapacity", "gpu-missing")},
    "certification": {("NodeCertificationFailed", "certification")},
}
#: live timings: scrape interval (and so timeout) and rule evaluation (Alertmanager's EDA route: render_bundle)
LIVE_SCRAPE = "2s"
LIVE_EVALUATION = "1s"
#: rule time (seconds): the faults start at minute 10 (a healthy history first), the replay ends at minute 30
RULE_ONSET_S = 600
RULE_END_S = 1800
RUN_WAIT_S = 240.0


# ---------------------------------------------------------------------------------------------------------------------
# The bundle
# ---------------------------------------------------------------------------------------------------------------------

def render_bundle(dest: Path, eda_url: str) -> Dict[str, Any]:
    """Render the catalog bundle through the collection's entry point; returns the render result of the bundle."""
    params = {name: option.get("default") for name, option in BUNDLE_RENDER.spec.items()}
    params.update(bundles=[{"criteria": dict(CRITERIA), "dest": str(dest)}],
                  set=["prometheus:edaReceiver.url=" + eda_url, "prometheus:edaReceiver.groupWait=1s",
                       "prometheus:edaReceiver.groupInterval=1s", "prometheus:edaReceiver.repeatInterval=1h"])
    result = call_entry(BUNDLE_RENDER, params)
    assert not result.get("failed"), "rendering the catalog bundle failed: %s" % result.get("msg")
    (bundle,) = result["bundles"]
    assert not bundle.get("failed"), bundle
    return bundle


def bundle_docs(dest: Path, component: str) -> List[Dict[str, Any]]:
    """Every YAML document of a component's rendered manifests."""
    docs: List[Dict[str, Any]] = []
    for path in sorted(glob.glob(str(dest / component / "manifests" / "*.yaml"))):
        with open(path, encoding="utf-8") as handle:
            docs.extend(d for d in yaml.safe_load_all(handle) if d)
    return docs


def bundle_values(dest: Path, component: str) -> Dict[str, Any]:
    with open(dest / component / "values.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


class Seam:  # pylint: disable=too-many-instance-attributes
    """What the test reads from the rendered bundle (every piece checked present, with the file to look at)."""

    def __init__(self, dest: Path, render: Mapping[str, Any]) -> None:
        namespaces = {c["name"]: c["namespace"] for c in render["components"]}
        for name in ("gpu-operator", "kube-prometheus-stack", "gpu-health-rules"):
            assert name in namespaces, "the bundle has no %s component: %s" % (name, sorted(namespaces))
        self.gpu_namespace = namespaces["gpu-operator"]
        self.monitoring_namespace = namespaces["kube-prometheus-stack"]
        rules = [d for d in bundle_docs(dest, "gpu-health-rules") if d.get("kind") == "PrometheusRule"]
        assert len(rules) == 1, "gpu-health-rules/manifests: expected one PrometheusRule, found %d" % len(rules)
        self.rule_groups: List[Dict[str, Any]] = rules[0]["spec"]["groups"]
        self.rules: Dict[str, Dict[str, Any]] = {r["alert"]: r for g in self.rule_groups for r in g["rules"] if "alert" in r}

        gpu_values = bundle_values(dest, "gpu-operator")
        self.dcgm_monitor = gpu_operator_dcgm_service_monitor(gpu_values, self.gpu_namespace)
        relabelings = self.dcgm_monitor["spec"]["endpoints"][0].get("relabelings") or []
        assert any(r.get("targetLabel") == "node" and "__meta_kubernetes_pod_node_name" in (r.get("sourceLabels") or []) for r in relabelings), \
            "gpu-operator/values.yaml: dcgmExporter.serviceMonitor.relabelings set no `node` from __meta_kubernetes_pod_node_name: %r" % relabelings
        config_name = ((gpu_values.get("dcgmExporter") or {}).get("config") or {}).get("name")
        assert config_name, "gpu-operator/values.yaml: dcgmExporter.config.name (the counters ConfigMap) is not set"
        maps = [d for d in bundle_docs(dest, "gpu-operator") if d.get("kind") == "ConfigMap" and d["metadata"]["name"] == config_name]
        assert len(maps) == 1, "gpu-operator/manifests: no ConfigMap %r (dcgmExporter.config.name)" % config_name
        (csv,) = maps[0]["data"].values()
        self.fields = parse_counters_csv(csv)

        self.stack_values = bundle_values(dest, "kube-prometheus-stack")
        self.ksm_monitor = kube_state_metrics_service_monitor(self.stack_values, self.monitoring_namespace)
        self.allowlist = parse_allowlist((self.stack_values.get("kube-state-metrics") or {}).get("metricLabelsAllowlist"))
        assert CERT_LABEL in self.allowlist.get("nodes", []) or "*" in self.allowlist.get("nodes", []), \
            "kube-prometheus-stack/values.yaml: kube-state-metrics.metricLabelsAllowlist does not export the node label %s: %r" \
            % (CERT_LABEL, self.allowlist)
        spec = self.stack_values.get("prometheus", {}).get("prometheusSpec", {})
        self.scrape_interval = str(spec.get("scrapeInterval") or "30s")
        self.evaluation_interval = str(spec.get("evaluationInterval") or "30s")
        self.am_configs = [d for d in bundle_docs(dest, "kube-prometheus-stack") if d.get("kind") == "AlertmanagerConfig"]
        assert self.am_configs, "kube-prometheus-stack/manifests: no AlertmanagerConfig (the EDA receiver, edaReceiver.url set)"
        am_spec = (self.stack_values.get("alertmanager") or {}).get("alertmanagerSpec") or {}
        self.matcher_strategy = str((am_spec.get("alertmanagerConfigMatcherStrategy") or {}).get("type") or "OnNamespace")

    def alertmanager_config(self, secrets: Mapping[Tuple[str, str], Mapping[str, str]]) -> Dict[str, Any]:
        """The configuration Alertmanager gets in the cluster: the chart's config with the bundle's values, plus the
        bundle's AlertmanagerConfig objects as the operator adds them (their Secrets from ``secrets``)."""
        return operator_config(base_config(self.stack_values), self.am_configs, secrets, self.monitoring_namespace, self.matcher_strategy)

    def eda_secret(self) -> Tuple[str, str, str]:
        """(namespace, name, key) of the Secret the EDA webhook's bearer token is read from."""
        (obj,) = self.am_configs
        (receiver,) = obj["spec"]["receivers"]
        (hook,) = receiver["webhookConfigs"]
        ref = hook["httpConfig"]["authorization"]["credentials"]
        return obj["metadata"]["namespace"], ref["name"], ref["key"]


def seconds(duration: str) -> float:
    """A Prometheus duration (``30s``, ``1m``, ``1h30m``) in seconds."""
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, "not a duration: %r" % duration
    return sum(int(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[u] for n, u in parts)


# ---------------------------------------------------------------------------------------------------------------------
# The sentinel's policy, as the shipped code decides it
# ---------------------------------------------------------------------------------------------------------------------

def policy_quarantines(fault_class: str) -> bool:
    """Does the built-in ruleset act on an alert of ``fault_class`` with a quarantine (``sentinel_destructive: false``)?"""
    rules = sorted(enumerate(DEFAULT_RULES), key=lambda item: (item[1].get("priority", 100), item[0]))
    for _index, rule in rules:
        if fault_class in rule["match"].get("fault_class", []) and not rule.get("rate"):
            return steps_for(rule["action"], False)[0].quarantine
    return False


# ---------------------------------------------------------------------------------------------------------------------
# The rule-time replay
# ---------------------------------------------------------------------------------------------------------------------

def promtool_values(values: Sequence[Optional[float]]) -> str:
    """promtool input values: a number per sample, ``stale`` where a series ends (Prometheus writes a staleness marker
    when a scraped series disappears), ``_`` while it stays absent."""
    out: List[str] = []
    previous: Optional[float] = None
    for value in values:
        if value is None:
            out.append("stale" if previous is not None else "_")
        else:
            out.append(str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value)))
        previous = value
    return " ".join(out)


def series_text(labels: Mapping[str, str]) -> str:
    name = labels["__name__"]
    body = ",".join('%s=%s' % (key, json.dumps(value)) for key, value in sorted(labels.items()) if key != "__name__")
    return "%s{%s}" % (name, body)


class Replay:
    """The stored series of the live run with the values of the scenario in rule time."""

    def __init__(self, seam: Seam, stored: List[Dict[str, str]], models: Mapping[str, GpuNodeModel], roles: Mapping[str, str],
                 instances: Mapping[str, str], last_values: Mapping[str, float]) -> None:
        self.seam = seam
        self.stored = stored
        self.models = models
        self.roles = roles
        self.instances = instances
        self.last_values = last_values
        self.kinds = {f.name: f.kind for f in seam.fields}
        #: the metrics the rules read: the only stored series that can change what they compute
        self.read = {name for group in seam.rule_groups for rule in group["rules"]
                     for name in re.findall(r"\b(DCGM_\w+|kube_\w+)", rule["expr"])}
        self.step = seconds(seam.scrape_interval)
        self.times = [k * self.step for k in range(int(RULE_END_S / self.step) + 1)]

    def rule_model(self, node: str, faulty: bool) -> GpuNodeModel:
        live = self.models[node]
        model = GpuNodeModel(live.node, live.gpus, live.model_name, live.driver_version, dict(live.workloads))
        if faulty:
            for fault, (gpu, _onset) in live.faults.items():
                model.inject(fault, gpu, RULE_ONSET_S)
        return model

    def input_series(self, faulty: bool) -> List[Dict[str, str]]:
        models = {node: self.rule_model(node, faulty) for node in self.models}
        out = []
        for labels in self.stored:
            name = labels["__name__"]
            if name not in self.read:
                continue
            if name.startswith("DCGM_"):
                assert labels.get("instance") in self.instances, "a stored DCGM series of no known exporter: %s" % labels
                node = self.instances[labels["instance"]]
                model = models[node]
                values = [model.value(name, self.kinds[name], int(labels["gpu"]), t) for t in self.times]
            elif name == "kube_node_labels":
                node = labels["node"]
                failing = faulty and self.roles.get(node) == "certification"
                wanted = labels.get("label_" + sanitize(CERT_LABEL))
                values = [1.0 if wanted == ("failed" if failing and t >= RULE_ONSET_S else "passed") else None for t in self.times]
            else:
                # node conditions, capacities, cordons: constant, as stored last
                values = [self.last_values[series_text(labels)]] * len(self.times)
            if any(v is not None for v in values):
                out.append({"series": series_text(labels), "values": promtool_values(values)})
        return out

    def tests(self, expected: Set[Tuple[str, str, str]]) -> List[Dict[str, Any]]:
        """One promtool test group over every node, the faults from RULE_ONSET_S:

        * every 5 minutes before the onset and at its last evaluation before: no ALERTS series at all (pending or firing);
        * every 5 minutes to the end: no ALERTS series of a healthy node, nor one without a faulty node's name;
        * at the end: exactly ``expected`` (alertname, node, fault_class), all firing, one series each."""
        interval = self.seam.scrape_interval
        faulty = sorted({node for _alert, node, _cls in expected})
        before = list(range(300, RULE_ONSET_S, 300)) + [RULE_ONSET_S - int(self.step)]
        nothing = [{"expr": "ALERTS", "eval_time": "%ds" % t, "exp_samples": []} for t in before]
        others = [{"expr": 'ALERTS{node!~"%s"}' % "|".join(n.replace(".", "\\\\.") for n in faulty), "eval_time": "%ds" % t, "exp_samples": []}
                  for t in range(300, RULE_END_S + 1, 300)]
        samples = [{"labels": '{alertname="%s", alertstate="firing", fault_class="%s", node="%s"}' % (alert, cls, node), "value": 1}
                   for alert, node, cls in sorted(expected)]
        final = [{"expr": "count by (alertname, alertstate, fault_class, node) (ALERTS)", "eval_time": "%ds" % RULE_END_S,
                  "exp_samples": samples}]
        return [{"name": "healthy for %d minutes, then one fault of each class until minute %d" % (RULE_ONSET_S // 60, RULE_END_S // 60),
                 "interval": interval, "input_series": self.input_series(True), "promql_expr_test": nothing + others + final}]


# ---------------------------------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------------------------------

class Runs:
    """The sentinel playbook runs, through the test-only callback dsxos_result_dump (one JSON line per task result)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def records(self) -> List[Dict[str, Any]]:
        out = []
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    break
        return out

    def counts(self) -> Tuple[int, int]:
        records = self.records()
        return (sum(1 for r in records if r.get("task") == START_TASK),
                sum(1 for r in records if r.get("task") == SUMMARY_TASK and r.get("status") == "ok"))

    def summaries(self) -> List[Dict[str, Any]]:
        return [r["result"]["ansible_stats"]["data"]["dsxos_sentinel"] for r in self.records()
                if r.get("task") == SUMMARY_TASK and r.get("status") == "ok"]


def node_state(api: Any, name: str) -> Dict[str, Any]:
    node = api.get("v1", "Node", name)
    annotations = node["metadata"].get("annotations") or {}
    incident = json.loads(annotations[INCIDENT]) if annotations.get(INCIDENT) else None
    prior = json.loads(annotations[PRIOR]) if annotations.get(PRIOR) else None
    recorded = json.loads(annotations[RECORDED]) if annotations.get(RECORDED) else []
    taints = [t for t in node["spec"].get("taints") or [] if t.get("key") == QUARANTINE_TAINT]
    return {"cordoned": bool(node["spec"].get("unschedulable")), "tainted": bool(taints), "incident": incident, "prior": prior,
            "recorded": recorded}


def test_rendered_catalog_drives_prometheus_alertmanager_and_the_sentinel(k8s_cluster, installed_collection, tmp_path):
    """Render -> real Prometheus with the bundle's scrape settings and rules -> real Alertmanager with the bundle's receiver
    -> the shipped rulebook -> the sentinel quarantines exactly the faulty nodes (see the module doc)."""
    started = time.monotonic()
    #: (phase, seconds since the start) for the report of a slow or failed run
    phases: List[Tuple[str, float]] = []
    api = k8s_cluster.api
    token_path = tmp_path / "eda-token"
    token_path.write_text(TOKEN + "\n", encoding="utf-8")
    token_path.chmod(0o600)
    eda_port = free_port()
    eda_url = "http://127.0.0.1:%d/alerts" % eda_port

    # ---- 1. Configure: render, read everything from the bundle
    dest = tmp_path / "bundle"
    seam = Seam(dest, render_bundle(dest, eda_url))

    # ---- the cluster: one GPU node per role, certified
    names = k8s_cluster.add_nodes(len(ROLES), "h100-eks", name_prefix="seam-", labels={CERT_LABEL: "passed"})
    roles = dict(zip(names, ROLES))
    by_role = {role: node for node, role in roles.items()}

    # ---- the shipped rulebook (starts slowly: started first, waited for later)
    dump = tmp_path / "runs.jsonl"
    runs = Runs(dump)
    localhost = {
        "sentinel_k8s_auth": {"kubeconfig": k8s_cluster.kubeconfig_path, "retries": 3, "retry_backoff_s": 0.05},
        "sentinel_destructive": False,
        # eight GPU nodes of which five fault at once: a breaker sized for the test's small cluster
        "sentinel_circuit_breaker": {"max_nodes": len(ROLES), "max_fraction": 1.0, "window_s": 3600},
    }
    rulebook_vars = {"sentinel_eda_port": eda_port, "sentinel_eda_token_file": str(token_path), "sentinel_batch_window_s": 1,
                     "sentinel_dedup_window_s": 600}
    rulebook = RulebookProcess(
        tmp_path, "dsxos.cluster.gpu_sentinel", localhost_inventory(localhost), rulebook_vars, installed_collection,
        clean_ansible_env=True, start_timeout_s=180, step_s=0.5,
        extra_env={"ANSIBLE_CALLBACK_PLUGINS": str(CALLBACK_DIR), "ANSIBLE_CALLBACKS_ENABLED": "dsxos_result_dump",
                   "DSXOS_RESULT_DUMP": str(dump), "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
                   "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")})
    standins: List[Any] = []
    executor = ThreadPoolExecutor(max_workers=1)
    prometheus: Optional[PrometheusProcess] = None
    manager: Optional[AlertmanagerProcess] = None
    try:
        rulebook.start(wait=False)

        # ---- 2. exporters: dcgm-exporter per node (the bundle's counters), kube-state-metrics over the backend's Nodes
        epoch = time.time()
        models: Dict[str, GpuNodeModel] = {}
        dcgm_targets: List[Target] = []
        instances: Dict[str, str] = {}
        for index, node in enumerate(names):
            model = GpuNodeModel(node, workloads={0: ("ml", "train-%s" % node, "pytorch")})
            models[node] = model
            standin = DcgmExporterStandin(model, seam.fields, epoch=epoch).start()
            standins.append(standin)
            instances[standin.address] = node
            pod = "%s-%05d" % (DCGM_SERVICE, index)
            dcgm_targets.append(Target(address=standin.address, node=node, namespace=seam.gpu_namespace, service=DCGM_SERVICE, pod=pod,
                                       port_name=DCGM_PORT_NAME, port_number=DCGM_PORT, container="nvidia-dcgm-exporter",
                                       service_labels={"app": DCGM_SERVICE}, pod_labels={"app": DCGM_SERVICE},
                                       controller_name=DCGM_SERVICE))
        ksm = KubeStateMetricsStandin(lambda: api.list("v1", "Node"), seam.allowlist).start()
        standins.append(ksm)
        ksm_labels = {"app.kubernetes.io/name": "kube-state-metrics", "app.kubernetes.io/instance": "kube-prometheus-stack"}
        ksm_target = Target(address=ksm.address, node=names[0], namespace=seam.monitoring_namespace, service=KSM_SERVICE,
                            pod=KSM_SERVICE + "-7d9f8b6c5-x2x4z", port_name=KSM_PORT_NAME, port_number=KSM_PORT,
                            container="kube-state-metrics", service_labels=ksm_labels, pod_labels=ksm_labels,
                            controller_kind="ReplicaSet", controller_name=KSM_SERVICE + "-7d9f8b6c5")
        # a target in another namespace that the monitors must not pick up (service discovery scope and selectors)
        stray = Target(address=ksm.address, node=names[1], namespace="default", service="stray", pod="stray-0", port_name="http",
                       port_number=8080, service_labels={"app": "stray"})

        # ---- 3. Alertmanager as the chart and the operator configure it, the EDA receiver from the bundle
        secret_ns, secret_name, secret_key = seam.eda_secret()
        am_config = seam.alertmanager_config({(secret_ns, secret_name): {secret_key: TOKEN}})
        (eda_receiver,) = [r["name"] for r in am_config["receivers"] if any(h.get("url") == eda_url for h in r.get("webhook_configs") or [])]
        assert find_route(am_config, eda_receiver), "no route to the EDA receiver %s: %s" % (eda_receiver, am_config["route"])
        manager = AlertmanagerProcess(str(tmp_path / "alertmanager"), am_config).start()

        scrape_configs = [scrape_config(seam.dcgm_monitor, dcgm_targets + [stray], interval=LIVE_SCRAPE),
                          scrape_config(seam.ksm_monitor, [ksm_target, stray], interval=LIVE_SCRAPE)]
        prometheus = PrometheusProcess(str(tmp_path / "prometheus"), {
            "global": {"scrape_interval": LIVE_SCRAPE, "evaluation_interval": LIVE_EVALUATION},
            "alerting": {"alertmanagers": [{"api_version": "v2", "static_configs": [{"targets": ["127.0.0.1:%d" % manager.port]}]}]},
            "scrape_configs": scrape_configs}, seam.rule_groups).start()

        phases.append(('prometheus+am started', round(time.monotonic() - started, 1)))
        # ---- healthy: every node scraped (8 GPUs each, its certification label exported), no alert at all

        def scraped() -> bool:
            per_node = {r["metric"].get("node"): float(r["value"][1]) for r in prometheus.query("count by (node) (DCGM_FI_DEV_GPU_TEMP)")}
            labelled = {r["metric"].get("node") for r in prometheus.query('kube_node_labels{label_%s="passed"}' % sanitize(CERT_LABEL))}
            return per_node == {n: 8.0 for n in names} and labelled == set(names)
        wait_until(scraped, 60, "Prometheus to scrape 8 GPUs of every node and the certification label (targets: %s)"
                   % [(t["labels"], t["health"], t.get("lastError")) for t in prometheus.targets()], step_s=0.5)
        active = prometheus.targets()
        assert sorted(t["labels"]["job"] for t in active) == sorted([DCGM_SERVICE] * len(names) + ["kube-state-metrics"]), \
            "the monitors picked up exactly their targets (not the stray one): %s" % [t["labels"] for t in active]
        sample = prometheus.series('DCGM_FI_DEV_GPU_TEMP{gpu="%d"}' % FAULTY_GPU)
        for labels in sample:
            assert labels["node"] == instances[labels["instance"]], "node comes from the target's pod node: %s" % labels
            assert "pod" not in labels and "namespace" not in labels, "the exporter pod's own labels are dropped: %s" % labels
        used = prometheus.series('DCGM_FI_DEV_GPU_TEMP{gpu="0"}')
        assert {(s["node"], s.get("pod"), s.get("namespace")) for s in used} == {(n, "train-" + n, "ml") for n in names}, \
            "the exporter's pod mapping survives (honorLabels): %s" % used
        # the first evaluations may run between the first scrape of kube-state-metrics and that of an exporter (a
        # GPUTelemetryAbsent pending for a second): from the first evaluation that sees everything, nothing at all
        wait_until(lambda: prometheus.alerts() == [], 15, "the start-up evaluations to settle: %s" % prometheus.alerts(), step_s=0.5)
        healthy_until = time.monotonic() + 5
        while time.monotonic() < healthy_until:
            assert prometheus.alerts() == [], "healthy nodes raised alerts: %s" % prometheus.alerts()
            time.sleep(0.5)

        phases.append(('healthy checked', round(time.monotonic() - started, 1)))
        # ---- 4. faults: one per faulty node
        onset = time.time() - epoch + 0.5
        for role, fault in (("xid", "xid"), ("dbe", "dbe"), ("nvlink", "nvlink"), ("thermal", "thermal")):
            models[by_role[role]].inject(fault, FAULTY_GPU, onset)
        models[by_role["missing"]].inject("missing", MISSING_GPU, onset)
        api.patch("v1", "Node", by_role["certification"], {"metadata": {"labels": {CERT_LABEL: "failed"}}})

        expected_live = {(alert, by_role[role], cls) for role, items in EXPECTED.items() for alert, cls in items}

        def live_alerts() -> Optional[List[Dict[str, Any]]]:
            alerts = prometheus.alerts()
            seen = {(a["labels"]["alertname"], a["labels"].get("node"), a["labels"].get("fault_class")) for a in alerts}
            unexpected = seen - expected_live
            assert not unexpected, "alerts no fault explains (wrong node or class): %s" % sorted(unexpected)
            return alerts if seen == expected_live else None
        alerts = wait_until(live_alerts, 90, "every expected alert, pending or firing, for its node: %s" % sorted(expected_live), step_s=1)
        for alert in alerts:
            node = alert["labels"]["node"]
            if alert["labels"].get("gpu") is not None:
                gpu = MISSING_GPU if roles[node] == "missing" else FAULTY_GPU
                assert alert["labels"]["gpu"] == str(gpu), alert

        phases.append(('live alerts', round(time.monotonic() - started, 1)))
        # ---- 5. rule time: the stored series through promtool with the bundle's rules unchanged
        now = time.time()
        stored = prometheus.series('{__name__=~"DCGM_.+"}', '{__name__=~"kube_node_.+"}', start=epoch, end=now)
        last = {series_text(r["metric"]): float(r["value"][1]) for r in prometheus.query('{__name__=~"kube_node_.+"}')}
        replay = Replay(seam, stored, models, roles, instances, last)
        # promtool runs beside the chain below (minutes of CPU on a loaded machine); its verdict is asserted at the end
        rule_time = executor.submit(promtool_tests, str(tmp_path / "promtool"), seam.rule_groups, replay.tests(expected_live),
                                    evaluation_interval=seam.evaluation_interval)

        # ---- 6. the chain: Prometheus' own firing alerts, and the pending ones posted as Prometheus posts them once
        #         `for` has elapsed (their labels and annotations exactly as the real Prometheus computed them; that
        #         they do fire with these labels over rule time is what the promtool replay asserts)
        rulebook.wait_ready()
        # the alerts checked above (exactly the expected ones); those pending then are posted (one that has fired
        # since is the same alert, labels and all, to Alertmanager)
        pending = [a for a in alerts if a["state"] == "pending"]
        for alert in pending:
            assert seconds(seam.rules[alert["labels"]["alertname"]].get("for", "0s")) > 0, alert
        if pending:
            manager.post_alerts([{"labels": a["labels"], "annotations": a["annotations"], "startsAt": a["activeAt"],
                                  "endsAt": rfc3339(time.time() + 3600), "generatorURL": prometheus.url + "/graph"} for a in pending])
        classes: Dict[str, Set[str]] = {}
        for alert, node, cls in expected_live:
            classes.setdefault(node, set()).add(cls)
        quarantined = {node for node, found in classes.items() if any(policy_quarantines(c) for c in found)}
        recorded_only = set(classes) - quarantined

        history: List[Tuple[int, int]] = []

        def settled() -> bool:
            assert rulebook.running(), "ansible-rulebook died:\n" + rulebook.log()[-6000:]
            states = {node: node_state(api, node) for node in classes}
            done = all(states[n]["cordoned"] and states[n]["tainted"] and states[n]["incident"] for n in quarantined)
            done = done and all(any(e.get("fault_class") in classes[n] for e in states[n]["recorded"]) for n in recorded_only)
            # every run started has finished, and no new one started for three polls (a batch runs intake, then all)
            history.append(runs.counts())
            calm = len(history) >= 3 and len(set(history[-3:])) == 1 and history[-1][0] == history[-1][1] > 0
            return done and calm
        wait_until(settled, RUN_WAIT_S, "the sentinel to quarantine %s and record %s" % (sorted(quarantined), sorted(recorded_only)),
                   step_s=1)

        phases.append(('settled', round(time.monotonic() - started, 1)))
        for name, result, test_file in rule_time.result(timeout=300):
            assert result.returncode == 0, "promtool test rules %s (%s):\n%s%s" % (test_file, name, result.stdout[-6000:], result.stderr[-6000:])
        phases.append(('promtool', round(time.monotonic() - started, 1)))
        for node, role in sorted(roles.items()):
            state = node_state(api, node)
            if node in quarantined:
                assert state["cordoned"] and state["tainted"], (role, state)
                assert state["incident"]["state"] == "quarantined", (role, state["incident"])
                assert state["prior"] and state["incident"]["id"] in state["prior"]["reason"], (role, state)
            else:
                assert not state["cordoned"] and not state["tainted"] and state["incident"] is None, (role, state)
            if role.startswith("healthy"):
                assert state["recorded"] == [] and state["prior"] is None, (role, state)
        dropped = {standin.address: standin.dropped for standin in standins if standin.dropped}
        print("scrapes dropped by the scraper (timeouts): %s" % (dropped or "none"))
        acted = sorted({n for s in runs.summaries() for n in s.get("acted") or []})
        assert acted == sorted(quarantined), "the sentinel acted on exactly the faulty nodes the policy quarantines: %s" % acted
    finally:
        print("phases (seconds since the start): %s" % phases)
        executor.shutdown(wait=True)
        for standin in standins:
            standin.stop()
        if prometheus is not None:
            prometheus.stop()
        if manager is not None:
            manager.stop()
        rulebook.stop()
