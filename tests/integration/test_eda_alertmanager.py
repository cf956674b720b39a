# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Operate end to end: a real Alertmanager -> the EDA source dsxos.cluster.alertmanager_gpu -> a real ansible-rulebook.

* The source runs from the INSTALLED collection (``installed_collection``): as its own mock runner (a subprocess
  printing each batch as a JSON line) for the Alertmanager and HTTP tests, and loaded by ``ansible-rulebook`` for the
  storm test.
* Alertmanager is Debian's ``prometheus-alertmanager`` (tests/harness/alertmanager_process.py), configured from
  extensions/alertmanager/alertmanager.yml with test timings; alerts are posted to ITS API (``/api/v2/alerts``).
* ``ansible-rulebook`` (tests/harness/rulebook_process.py) runs a copy of extensions/eda/rulebooks/gpu_sentinel.yml
  whose two playbook names point at stand-in playbooks that record what they received (the real sentinel playbooks
  run in tests/integration/test_sentinel_chain_e2e.py), and extensions/eda/rulebooks/gpu_sentinel_controller.yml
  against a stand-in of the AWX API that records the job template launches.

Missing tools are failures naming what to install: ``prometheus-alertmanager`` (apt), ``ansible-rulebook``
(requirements-test.txt), Java 17+ (``openjdk-17-jre-headless``).
"""
from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from tests.harness.alertmanager_process import AlertmanagerProcess, alert, alertmanager_config, free_port
from tests.harness.polling import wait_until
from tests.harness.rulebook_process import RulebookProcess, localhost_inventory

REPO = Path(__file__).resolve().parents[2]
PLUGIN_REL = Path("ansible_collections/dsxos/cluster/extensions/eda/plugins/event_source/alertmanager_gpu.py")
TOKEN = "t0ken-for-tests-only"
WAIT_S = 90.0


# ---------------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------------

def http_post(url: str, body: bytes, headers: Optional[Dict[str, str]] = None, chunked: bool = False) -> Tuple[int, Dict[str, str], Any]:
    """POST ``body``; returns (status, headers, parsed JSON body or text)."""
    host, _sep, rest = url[len("http://"):].partition("/")
    conn = http.client.HTTPConnection(host, timeout=30)
    try:
        if chunked:
            conn.putrequest("POST", "/" + rest)
            for key, value in (headers or {}).items():
                conn.putheader(key, value)
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            try:
                for start in range(0, len(body), 65536):
                    chunk = body[start:start + 65536]
                    conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                conn.send(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            conn.request("POST", "/" + rest, body=body, headers=dict(headers or {}, **{"Content-Type": "application/json"}))
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = text
        return resp.status, dict(resp.getheaders()), parsed
    finally:
        conn.close()


def metrics(url: str) -> Dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode("utf-8")
    out = {}
    for line in text.splitlines():
        if line.startswith("dsxos_") and "_created" not in line:
            name, _sep, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def webhook_payload(alerts: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"version": "4", "status": "firing", "receiver": "test", "groupLabels": {}, "commonLabels": {},
            "commonAnnotations": {}, "externalURL": "http://am", "groupKey": "{}", "truncatedAlerts": 0, "alerts": alerts}


def wh_alert(node: str, fingerprint: str, status: str = "firing", **labels: str) -> Dict[str, Any]:
    return {"status": status, "labels": dict({"node": node, "alertname": "GpuFault", "fault_class": "memory"}, **labels),
            "annotations": {}, "startsAt": "2026-03-01T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "", "fingerprint": fingerprint}


class SourceProcess:
    """The installed source plugin run as its own mock runner: batches on stdout (JSON lines), log on stderr."""

    def __init__(self, plugin: Path, workdir: Path, args: Dict[str, Any], consumer_delay_s: float = 0.0) -> None:
        self.port = free_port()
        self.args = dict(args, host="127.0.0.1", port=self.port)
        self.batches: List[Dict[str, Any]] = []
        self.stderr_path = workdir / ("source-%d.log" % self.port)
        stderr = open(self.stderr_path, "wb")  # pylint: disable=consider-using-with
        try:
            self.proc = subprocess.Popen(
                [sys.executable, str(plugin), "--args", json.dumps(self.args), "--consumer-delay", str(consumer_delay_s)],
                stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True, cwd=str(workdir),
                env=dict(os.environ, PYTHONPATH=""))
        finally:
            stderr.close()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        wait_until(self._healthy, 60, "the source's /healthz (log: %s)" % self.stderr_path, step_s=0.1)

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.batches.append(json.loads(line))

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError("the source exited with %s: %s" % (self.proc.returncode, self.log()))
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def log(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def events(self, status: Optional[str] = None) -> List[Dict[str, Any]]:
        return [event for batch in list(self.batches) for event in batch["batch"] if status in (None, event["status"])]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def plugin(installed_collection: Path) -> Path:
    path = installed_collection / PLUGIN_REL
    assert path.is_file(), "the installed collection has no %s" % PLUGIN_REL
    return path


@pytest.fixture
def sources(tmp_path: Path):
    started: List[SourceProcess] = []

    def start(plugin_path: Path, args: Dict[str, Any], consumer_delay_s: float = 0.0) -> SourceProcess:
        source = SourceProcess(plugin_path, tmp_path, args, consumer_delay_s)
        started.append(source)
        return source

    yield start
    for source in started:
        source.stop()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "eda-token"
    path.write_text(TOKEN + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


# ---------------------------------------------------------------------------------------------------------------------
# Alertmanager -> source
# ---------------------------------------------------------------------------------------------------------------------

def test_alertmanager_groups_by_node_inhibits_and_the_source_normalizes(plugin, sources, token_file, tmp_path):
    source = sources(plugin, {"token_file": str(token_file), "batch_window_s": 0.5})
    with AlertmanagerProcess(str(tmp_path / "am"), alertmanager_config(source.url, token_file)) as manager:
        common = {"alertname": "GpuFault", "severity": "critical"}
        hardware = [
            dict(common, node="n-a", gpu="0", fault_class="nvlink", code="74", action="quarantine", UUID="GPU-aaaa-0000"),
            dict(common, node="n-b", gpu="3", fault_class="fatal-hardware", code="48", action="quarantine"),
            dict(common, Hostname="n-c", gpu="1", fault_class="memory", code="94"),
        ]
        application = [
            dict(common, alertname="GpuXidApplication", node="n-a", gpu="0", fault_class="application", code="13",
                 pod="train-0", namespace="ml"),
            dict(common, alertname="GpuXidApplication", node="n-a", gpu="1", fault_class="application", code="13"),
        ]
        unsafe = [dict(common, node="n-d\n", gpu="0", fault_class="pcie"), dict(common, node="Bad_Node", fault_class="pcie")]
        unrouted = [{"alertname": "Watchdog", "node": "n-a"}]
        manager.post_alerts([alert(labels) for labels in hardware + unsafe + unrouted])
        time.sleep(0.3)
        manager.post_alerts([alert(labels) for labels in application])

        def firing_nodes():
            found = {(e["node"], e["gpu"], e["fault_class"]) for e in source.events("firing")}
            return found if len(found) >= 4 and source.log().count("alert rejected") >= 2 else None

        wait_until(firing_nodes, WAIT_S, "4 firing events and 2 rejections", step_s=0.1)
        time.sleep(3)  # anything else Alertmanager would send has had group_interval to arrive
        found = {(e["node"], e["gpu"], e["fault_class"]) for e in source.events("firing")}
        assert found == {("n-a", "0", "nvlink"), ("n-b", "3", "fatal-hardware"), ("n-c", "1", "memory"),
                         ("n-a", "1", "application")}, source.batches

        by_node = {e["node"] + "/" + str(e["gpu"]): e for e in source.events("firing")}
        nvlink = by_node["n-a/0"]
        assert set(nvlink) == {"node", "gpu", "uuid", "code", "fault_class", "action", "status", "fingerprint", "starts_at",
                               "ends_at", "pods", "alertname", "severity", "labels", "dropped_labels"}
        assert nvlink["dropped_labels"] == []
        assert (nvlink["code"], nvlink["uuid"], nvlink["action"], nvlink["severity"]) == (74, "GPU-aaaa-0000", "quarantine", "critical")
        assert nvlink["ends_at"] is None and nvlink["starts_at"].endswith("Z") and len(nvlink["fingerprint"]) == 16
        assert by_node["n-c/1"]["labels"]["Hostname"] == "n-c" and by_node["n-a/1"]["pods"] == []

        # Inhibition: the application alert on n-a GPU 0 (under the NVLink fault) never reached the source.
        held = {(a["labels"].get("node"), a["labels"].get("gpu"), a["labels"].get("fault_class")): a for a in manager.alerts()}
        assert held[("n-a", "0", "application")]["status"]["inhibitedBy"], held[("n-a", "0", "application")]
        assert not held[("n-a", "1", "application")]["status"]["inhibitedBy"]

        # Grouping: one webhook per node group (group_by: [node]); the alerts without a node label share group {}.
        log = source.log()
        groups = set(re.findall(r"webhook from receiver \S+, group (.*): [0-9]+ alerts", log))
        assert groups == {"{'node': 'n-a'}", "{'node': 'n-b'}", "{}", "{'node': 'n-d\\n'}", "{'node': 'Bad_Node'}"}, log
        assert "receiver 'dsxos-gpu-sentinel'" in log
        # Unsafe node names: rejected, logged (escaped), counted, never passed on.
        assert "alert rejected (invalid_node)" in log and "'n-d\\n'" in log and "'Bad_Node'" in log
        assert not any(e["node"] in ("n-d", "Bad_Node", "n-d\n") for e in source.events())
        assert TOKEN not in log
        counted = metrics(source.url + "/metrics")
        assert counted['dsxos_eda_alerts_rejected_total{reason="invalid_node"}'] >= 2

        # Resolution: the resolved events follow, with their end time.
        manager.post_alerts([alert(labels, resolved=True) for labels in hardware + application + unsafe])

        def resolved_events():
            got = {(e["node"], e["gpu"]): e for e in source.events("resolved")}
            return got if len(got) >= 4 else None

        resolved = wait_until(resolved_events, WAIT_S, "4 resolved events", step_s=0.1)
        assert set(resolved) == {("n-a", "0"), ("n-b", "3"), ("n-c", "1"), ("n-a", "1")}
        assert all(e["ends_at"] and e["fingerprint"] == by_node[e["node"] + "/" + e["gpu"]]["fingerprint"]
                   for e in resolved.values())
        firing_index = max(i for i, b in enumerate(source.batches) if b["status"] == "firing")
        assert all(i > firing_index for i, b in enumerate(source.batches) if b["status"] == "resolved")
        keys = [(e["fingerprint"], e["status"]) for e in source.events()]
        assert len(keys) == len(set(keys)), "duplicate events passed on: %s" % keys


# ---------------------------------------------------------------------------------------------------------------------
# Direct HTTP: authentication, limits, schema, back pressure
# ---------------------------------------------------------------------------------------------------------------------

def test_direct_posts_are_authenticated_bounded_and_validated(plugin, sources, token_file):
    source = sources(plugin, {"token_file": str(token_file), "batch_window_s": 0.2, "max_body_bytes": 65536})
    url = source.url + "/alerts"
    good = json.dumps(webhook_payload([wh_alert("n1", "f1")])).encode()
    auth = {"Authorization": "Bearer " + TOKEN}
    assert http_post(url, good)[0] == 401
    status, headers, body = http_post(url, good, {"Authorization": "Bearer wrong"})
    assert (status, body["error"]) == (401, "unauthorized") and headers["WWW-Authenticate"].startswith("Bearer")
    assert http_post(url, good, {"Authorization": "Basic " + TOKEN})[0] == 401
    status, _headers, body = http_post(url, b"{not json", auth)
    assert (status, body["error"]) == (400, "malformed_json")
    status, _headers, body = http_post(url, b"[" * 60000 + b"]" * 3, auth)
    assert (status, body["error"]) == (400, "malformed_json")
    bad_schema = webhook_payload([dict(wh_alert("n1", "f2"), status="pending"), "x"])
    bad_schema.pop("receiver")
    status, _headers, body = http_post(url, json.dumps(bad_schema).encode(), auth)
    assert (status, body["error"]) == (400, "invalid_payload")
    assert [e.split(":")[0] for e in body["errors"]] == ["receiver", "alerts[0].status", "alerts[1]"]
    huge = json.dumps(webhook_payload([wh_alert("n1", "f3", pad="x" * 70000)])).encode()
    status, _headers, body = http_post(url, huge, auth)
    assert (status, body["error"]) == (413, "too_large")
    status = http_post(url, huge, auth, chunked=True)[0]
    assert status == 413
    newline = webhook_payload([wh_alert("n1\n", "f4"), wh_alert("n2", "f5")])
    status, _headers, body = http_post(url, json.dumps(newline).encode(), auth)
    assert status == 200 and body["accepted"] == 1
    assert [(r["reason"], r["fingerprint"]) for r in body["rejected"]] == [("invalid_node", "f4")]
    status, _headers, body = http_post(url, good, auth)
    assert status == 200 and body == {"accepted": 1, "duplicates": 0, "rejected": []}
    assert http_post(url, good, auth)[2]["duplicates"] == 1

    wait_until(lambda: len(source.events()) >= 2, WAIT_S, "the two accepted events", step_s=0.1)
    time.sleep(0.5)
    assert sorted(e["fingerprint"] for e in source.events()) == ["f1", "f5"]
    assert "'n1\\n'" in source.log() and TOKEN not in source.log()
    counted = metrics(source.url + "/metrics")
    assert counted['dsxos_eda_requests_rejected_total{reason="unauthorized"}'] == 3
    assert counted['dsxos_eda_requests_rejected_total{reason="malformed_json"}'] == 2
    assert counted['dsxos_eda_requests_rejected_total{reason="invalid_payload"}'] == 1
    assert counted['dsxos_eda_requests_rejected_total{reason="too_large"}'] == 2
    assert counted['dsxos_eda_alerts_rejected_total{reason="invalid_node"}'] == 1
    assert counted["dsxos_eda_alerts_received_total"] == 4
    assert counted["dsxos_eda_alerts_deduplicated_total"] == 1
    assert counted["dsxos_eda_events_forwarded_total"] == 2


def test_hmac_signature_and_separate_metrics_port(plugin, sources):
    metrics_port = free_port()
    source = sources(plugin, {"hmac_secret": "s3cr3t", "batch_window_s": 0.2, "metrics_port": metrics_port})
    url = source.url + "/alerts"
    body = json.dumps(webhook_payload([wh_alert("n1", "f1")])).encode()
    signature = hmac.new(b"s3cr3t", body, hashlib.sha256).hexdigest()
    assert http_post(url, body)[0] == 401
    assert http_post(url, body, {"X-Hub-Signature-256": "sha256=" + "0" * 64})[0] == 401
    assert http_post(url, body + b" ", {"X-Hub-Signature-256": "sha256=" + signature})[0] == 401
    assert http_post(url, body, {"X-Hub-Signature-256": "sha256=" + signature})[0] == 200
    wait_until(source.events, WAIT_S, "the signed event", step_s=0.1)
    counted = metrics("http://127.0.0.1:%d/metrics" % metrics_port)
    assert counted['dsxos_eda_requests_rejected_total{reason="unauthorized"}'] == 3
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(source.url + "/metrics", timeout=10)  # pylint: disable=consider-using-with


def test_a_full_queue_answers_503_with_retry_after_and_loses_nothing_it_accepted(plugin, sources, token_file):
    source = sources(plugin, {"token_file": str(token_file), "queue_size": 4, "batch_window_s": 0, "batch_max": 1,
                              "retry_after_s": 7}, consumer_delay_s=2.0)
    url = source.url + "/alerts"
    auth = {"Authorization": "Bearer " + TOKEN}
    answers = []
    for index in range(12):
        status, headers, _body = http_post(url, json.dumps(webhook_payload([wh_alert("n%d" % index, "f%d" % index)])).encode(),
                                           auth)
        answers.append(status)
        if status == 503:
            assert headers["Retry-After"] == "7"
    assert answers.count(503) >= 4 and answers[:4] == [200] * 4, answers
    accepted = ["f%d" % i for i, status in enumerate(answers) if status == 200]
    counted = metrics(source.url + "/metrics")
    assert counted['dsxos_eda_requests_rejected_total{reason="queue_full"}'] == answers.count(503)
    wait_until(lambda: len(source.events()) == len(accepted), WAIT_S, "every accepted event", step_s=0.5)
    assert [e["fingerprint"] for e in source.events()] == accepted


# ---------------------------------------------------------------------------------------------------------------------
# Real ansible-rulebook: a storm becomes a handful of playbook runs
# ---------------------------------------------------------------------------------------------------------------------

STANDIN = """---
- name: Stand-in for dsxos.cluster.KIND (records what it received)
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Record the sentinel events
      vars:
        started: "{{ lookup('ansible.builtin.pipe', 'date +%s.%N') | float }}"
        record:
          started: "{{ started }}"
          sentinel_events: "{{ sentinel_events }}"
          first_received_at: "{{ ansible_eda.event.first_received_at }}"
          emitted_at: "{{ ansible_eda.event.emitted_at }}"
          status: "{{ ansible_eda.event.status }}"
          phase: "{{ sentinel_phase | default('all') }}"
      ansible.builtin.copy:
        dest: "OUT/KIND-{{ ansible_eda.event.batch_id }}-{{ sentinel_phase | default('all') }}.json"
        content: "{{ record | to_json }}"
        mode: "0600"
"""


def percentile(values: List[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def test_rulebook_turns_a_storm_of_200_alerts_over_40_nodes_into_a_few_playbook_runs(installed_collection, token_file, tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    for kind in ("remediate", "release"):
        (tmp_path / ("%s.yml" % kind)).write_text(STANDIN.replace("KIND", kind).replace("OUT", str(out)), encoding="utf-8")
    text = (REPO / "extensions/eda/rulebooks/gpu_sentinel.yml").read_text(encoding="utf-8")
    for kind, count in (("remediate", 2), ("release", 1)):  # remediate: the intake, then the rest
        assert text.count("name: dsxos.cluster.%s\n" % kind) == count
        text = text.replace("name: dsxos.cluster.%s\n" % kind, "name: %s\n" % (tmp_path / ("%s.yml" % kind)))
    rulebook = tmp_path / "gpu_sentinel.yml"
    rulebook.write_text(text, encoding="utf-8")
    rulebook_vars = {"sentinel_eda_port": free_port(), "sentinel_eda_token_file": str(token_file), "sentinel_batch_window_s": 2,
                     "sentinel_batch_max": 500}
    # started and stopped (its process group) by the harness; its log stays in tmp_path/ansible-rulebook.log
    with RulebookProcess(tmp_path, rulebook, localhost_inventory(), rulebook_vars, installed_collection, step_s=0.1) as engine:
        config = alertmanager_config(engine.url, token_file, group_wait="1s", group_interval="2s")
        with AlertmanagerProcess(str(tmp_path / "am"), config) as manager:
            nodes = ["gpu-node-%02d" % i for i in range(40)]
            storm = [{"alertname": "GpuEccUncorrectable", "severity": "critical", "node": node, "gpu": str(gpu),
                      "fault_class": "memory", "code": "48", "action": "quarantine"} for node in nodes for gpu in range(5)]
            posted_at: Dict[Tuple[str, str], float] = {}
            began = time.time()
            for start in range(0, len(storm), 20):
                chunk = storm[start:start + 20]
                posted = time.time()
                manager.post_alerts([alert(labels) for labels in chunk])
                for labels in chunk:
                    posted_at[(labels["node"], labels["gpu"])] = posted
                time.sleep(0.2)
            storm_s = time.time() - began

            def runs(kind: str, phase: str = "all") -> List[Dict[str, Any]]:
                found = []
                for path in sorted(out.glob("%s-*-%s.json" % (kind, phase))):
                    try:
                        found.append(json.loads(path.read_text(encoding="utf-8")))
                    except ValueError:
                        return []
                return found

            def covered(kind: str, count: int) -> Optional[List[Dict[str, Any]]]:
                got = runs(kind)
                return got if sum(len(run["sentinel_events"]) for run in got) >= count else None

            remediations = wait_until(lambda: covered("remediate", 200), 240, "remediation runs covering 200 alerts",
                                      step_s=0.5)
            time.sleep(4)
            remediations = runs("remediate")
            intakes = runs("remediate", "intake")
            manager.post_alerts([alert(labels, resolved=True) for labels in storm])
            releases = wait_until(lambda: covered("release", 200), 240, "release runs covering 200 alerts", step_s=0.5)
            time.sleep(4)
            releases = runs("release")
    rulebook_log = engine.log_path.read_text(encoding="utf-8", errors="replace")
    assert TOKEN not in rulebook_log

    for kind, found in (("remediate", remediations), ("release", releases)):
        events = [event for run in found for event in run["sentinel_events"]]
        fingerprints = [event["fingerprint"] for event in events]
        assert len(fingerprints) == 200 and len(set(fingerprints)) == 200, "%s: duplicates or missing" % kind
        assert {event["node"] for event in events} == set(nodes)
        assert {event["status"] for event in events} == {"firing" if kind == "remediate" else "resolved"}
        assert 1 <= len(found) <= 8, "%s: %d playbook runs for 200 alerts" % (kind, len(found))
        assert max(len({e["node"] for e in run["sentinel_events"]}) for run in found) >= 10

    # every batch had its intake first (the rulebook lock keeps the intakes in order), with the same events
    assert sorted(json.dumps(run["sentinel_events"], sort_keys=True) for run in intakes) == \
        sorted(json.dumps(run["sentinel_events"], sort_keys=True) for run in remediations)
    assert [run["phase"] for run in intakes] == ["intake"] * len(intakes)
    latencies = [float(run["started"]) - posted_at[(e["node"], e["gpu"])] for run in intakes for e in run["sentinel_events"]]
    source_latencies = [float(run["started"]) - float(run["first_received_at"]) for run in intakes]
    figures = {"storm_s": round(storm_s, 2), "remediate_runs": len(remediations), "release_runs": len(releases),
               "events_per_run": [len(run["sentinel_events"]) for run in remediations],
               "nodes_per_run": [len({e["node"] for e in run["sentinel_events"]}) for run in remediations],
               "alert_to_playbook_p50_s": round(percentile(latencies, 0.5), 2),
               "alert_to_playbook_p95_s": round(percentile(latencies, 0.95), 2),
               "source_receive_to_playbook_max_s": round(max(source_latencies), 2),
               "batch_emit_to_playbook_max_s": round(max(float(run["started"]) - float(run["emitted_at"]) for run in intakes), 2)}
    print("EDA storm figures: " + json.dumps(figures))
    assert figures["alert_to_playbook_p95_s"] < 120


# ---------------------------------------------------------------------------------------------------------------------
# Real ansible-rulebook with the controller rulebook: run_job_template against a stand-in AWX API
# ---------------------------------------------------------------------------------------------------------------------

CONTROLLER_TOKEN = "c0ntroller-t0ken-for-tests-only"
TEMPLATES = {"dsxos GPU sentinel remediate": 7, "dsxos GPU sentinel release": 8}


class ControllerStandin:
    """The part of the AWX / AAP API that ansible-rulebook's run_job_template uses (config, unified job templates by
    name, launch, the jobs list it polls with ``id__in``); records every request, every job ends ``successful``."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # pylint: disable=import-outside-toplevel
        from urllib.parse import parse_qs, urlparse  # pylint: disable=import-outside-toplevel
        self.requests: List[Dict[str, Any]] = []
        self.launches: List[Dict[str, Any]] = []
        lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return

            def _answer(self, status: int, body: Dict[str, Any]) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self, body: Any = None) -> Tuple[str, Dict[str, List[str]]]:
                url = urlparse(self.path)
                with lock:
                    standin.requests.append({"method": self.command, "path": url.path, "auth": self.headers.get("Authorization"),
                                             "body": body})
                return url.path, parse_qs(url.query)

            def do_GET(self) -> None:  # noqa: N802  (http.server's name)
                path, query = self._record()
                if path == "/api/v2/config/":
                    self._answer(200, {"version": "4.6.0"})
                elif path == "/api/v2/unified_job_templates/":
                    name = query.get("name", [""])[0]
                    results = [{"id": TEMPLATES[name], "type": "job_template", "name": name,
                                "summary_fields": {"organization": {"name": "Default"}},
                                "related": {"launch": "/api/v2/job_templates/%d/launch/" % TEMPLATES[name]},
                                "ask_limit_on_launch": False, "ask_labels_on_launch": False, "ask_inventory_on_launch": False,
                                "ask_variables_on_launch": True}] if name in TEMPLATES else []
                    self._answer(200, {"count": len(results), "next": None, "results": results})
                elif path == "/api/v2/jobs/":
                    ids = [int(i) for i in query.get("id__in", [""])[0].split(",") if i]
                    self._answer(200, {"count": len(ids), "next": None, "results": [
                        {"id": i, "status": "successful", "created": "2026-03-01T10:00:00Z", "artifacts": {},
                         "url": "/api/v2/jobs/%d/" % i} for i in ids]})
                else:
                    self._answer(404, {"detail": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                path = self._record(body)[0]
                match = re.fullmatch(r"/api/v2/job_templates/(\d+)/launch/", path)
                if not match:
                    self._answer(404, {"detail": "not found"})
                    return
                with lock:
                    job = 100 + len(standin.launches)
                    standin.launches.append({"template": int(match.group(1)), "job": job, "extra_vars": body.get("extra_vars") or {}})
                self._answer(201, {"id": job, "job": job, "url": "/api/v2/jobs/%d/" % job, "status": "pending"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "ControllerStandin":
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_the_controller_rulebook_launches_the_job_templates_intake_first_then_the_rest_then_the_release(installed_collection, token_file,
                                                                                                        tmp_path):
    """extensions/eda/rulebooks/gpu_sentinel_controller.yml loaded by a real ansible-rulebook (as the EDA controller
    runs it): a firing alert posted to the source launches the remediate job template twice (intake, then all) with the
    normalized events, its resolved alert the release template; every API call carries the controller token, which
    never reaches the log."""
    rulebook_vars = {"sentinel_eda_host": "127.0.0.1", "sentinel_eda_port": free_port(), "sentinel_eda_token_file": str(token_file),
                     "sentinel_batch_window_s": 1, "sentinel_batch_quiet_s": 0.3}
    with ControllerStandin() as controller:
        env = {"EDA_CONTROLLER_URL": controller.url, "EDA_CONTROLLER_TOKEN": CONTROLLER_TOKEN, "EDA_CONTROLLER_SSL_VERIFY": "no"}
        rulebook = REPO / "extensions/eda/rulebooks/gpu_sentinel_controller.yml"
        with RulebookProcess(tmp_path, rulebook, localhost_inventory(), rulebook_vars, installed_collection, extra_env=env) as engine:
            headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
            firing = webhook_payload([wh_alert("gpu-node-07", "fp-c1", gpu="3", code="48")])
            status = http_post(engine.url + "/alerts", json.dumps(firing).encode("utf-8"), headers)[0]
            assert status == 200, status
            wait_until(lambda: len(controller.launches) >= 2, WAIT_S, what="the two remediate launches", step_s=0.2)
            resolved = webhook_payload([wh_alert("gpu-node-07", "fp-c1", status="resolved", gpu="3", code="48")])
            resolved["status"] = "resolved"
            status = http_post(engine.url + "/alerts", json.dumps(resolved).encode("utf-8"), headers)[0]
            assert status == 200, status
            wait_until(lambda: len(controller.launches) >= 3, WAIT_S, what="the release launch", step_s=0.2)
            log = engine.log()
    intake, rest, release = controller.launches[:3]
    assert (intake["template"], rest["template"], release["template"]) == (7, 7, 8), controller.launches
    assert intake["extra_vars"]["sentinel_phase"] == "intake" and intake["extra_vars"]["sentinel_lock_wait_s"] == 0
    assert rest["extra_vars"]["sentinel_phase"] == "all"
    for launch, status in ((intake, "firing"), (rest, "firing"), (release, "resolved")):
        (event,) = launch["extra_vars"]["sentinel_events"]
        assert (event["node"], event["fingerprint"], event["status"], event["gpu"]) == ("gpu-node-07", "fp-c1", status, "3"), event
    assert release["extra_vars"]["sentinel_lock_wait_release_s"] == 15
    assert {r["auth"] for r in controller.requests} == {"Bearer " + CONTROLLER_TOKEN}, "every call carries the controller token"
    assert CONTROLLER_TOKEN not in log and TOKEN not in log
