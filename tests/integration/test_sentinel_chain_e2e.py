# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The whole Operate chain, end to end, with real parts only:

    POST /api/v2/alerts -> Alertmanager (extensions/alertmanager/alertmanager.yml, test timings)
      -> webhook -> dsxos.cluster.alertmanager_gpu (inside ansible-rulebook, the SHIPPED rulebook dsxos.cluster.gpu_sentinel)
      -> run_playbook dsxos.cluster.remediate / dsxos.cluster.release (real ansible-playbook through ansible-runner)
      -> the Kubernetes emulator (cordon, taint, drain, incident, Events, Lease lock, breaker ConfigMap).

One emulator, one ansible-rulebook and one Alertmanager serve the whole module (starting ansible-rulebook costs seconds);
every test uses its own nodes and resets the circuit breaker first. The sentinel's variables come from the rulebook's
inventory (ansible-rulebook hands its inventory to every playbook run; ``--vars`` only feed the rulebook): the emulator's
kubeconfig, ``sentinel_destructive: true``, and test-local remediation / recertification task files (no SSH host is
needed) written into the module's work directory. A node whose ``hold-<node>`` file exists makes the remediation stub wait
for ``go-<node>``: that is "midway".

Every playbook run the rulebook starts is observed through the test-only callback ``dsxos_result_dump`` (one JSON line
per task result, appended to one file): a run has started when its first task ("Start the run") is recorded and has
finished when its summary ("Publish the summary", the ``dsxos_sentinel`` stats) is. "Nothing runs" is therefore checked
by counting started runs, after a canary alert posted later has had its own run (the rulebook runs its actions one
after another, first in first out).

Missing tools are failures naming what to install: ``prometheus-alertmanager`` (apt), ``ansible-rulebook``
(requirements-test.txt), Java 17+ (``openjdk-17-jre-headless``).
"""
from __future__ import annotations

import http.client
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import CIRCUIT_BREAKER, NODE_QUARANTINE
from tests.harness.alertmanager_process import AlertmanagerProcess, alertmanager_config, free_port, rfc3339
from tests.harness.k8s_emulator.emulator import Emulator
from tests.harness.polling import wait_until
from tests.harness.rulebook_process import RulebookProcess, descendants, localhost_inventory
from playbook_runner import collections_path

REPO = Path(__file__).resolve().parents[2]
CALLBACK_DIR = REPO / "tests" / "integration" / "callback_plugins"
TOKEN = "chain-t0ken-for-tests-only"
PRIOR = "dsxos.io/quarantine-prior"
INCIDENT = "dsxos.io/incident"
HISTORY = "dsxos.io/incident-history"
RECORDED = "dsxos.io/sentinel-events"
BREAKER = {"max_nodes": 3, "max_fraction": 1.0, "window_s": 3600}
#: generous: a full remediate run is ~40 tasks of real ansible-playbook on a loaded, shared 2-core machine
RUN_WAIT_S = 300.0
START_TASK = "dsxos.cluster.sentinel : Start the run"
SUMMARY_TASK = "dsxos.cluster.sentinel : Publish the summary"

REMEDIATION_STUB = """---
# Chain test stub of a remediation task file: records its call; waits for go-<node> while hold-<node> exists.
- name: Chain stub remediation records its call
  dsxos_test.stubs.record_call:
    content: "{{ {'node': sentinel_node, 'incident': sentinel_incident.id, 'attempts': sentinel_incident.attempts} | to_json }}"
    dest: "{{ chain_dir }}/remediation-{{ sentinel_node }}-{{ sentinel_incident.attempts }}.json"

- name: Chain stub remediation waits for the go file while held
  ansible.builtin.wait_for:
    path: "{{ chain_dir }}/go-{{ sentinel_node }}"
    timeout: 600
  when: (chain_dir ~ '/hold-' ~ sentinel_node) is ansible.builtin.exists

- name: Chain stub remediation succeeds
  ansible.builtin.set_fact:
    sentinel_remediation_result: {ok: true, changed: true, message: "chain stub remediation done"}
"""

RECERTIFY_STUB = """---
# Chain test stub of the recertification task file: records its call and passes.
- name: Chain stub recertification records its call
  dsxos_test.stubs.record_call:
    content: "{{ {'node': sentinel_node, 'incident': sentinel_incident.id, 'state': sentinel_incident.state} | to_json }}"
    dest: "{{ chain_dir }}/recertify-{{ sentinel_node }}-{{ sentinel_incident.attempts }}.json"

- name: Chain stub recertification passes
  ansible.builtin.set_fact:
    sentinel_recertify_result: {passed: true, reason: "chain stub checks passed", report: "{{ chain_dir }}/report.json"}
"""


# ---------------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------------

def cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


class Chain:  # pylint: disable=too-many-instance-attributes
    """The emulator, ansible-rulebook (the shipped rulebook) and Alertmanager of this module, and what they did."""

    def __init__(self, workdir: Path, collections: Path) -> None:
        self.dir = workdir
        self.collections = collections
        self.dump = workdir / "runs.jsonl"
        self.emu = Emulator(time_scale=0.01, seed=4321, workdir=str(workdir / "emulator"))
        self.emu.start()
        self.rulebook: Optional[RulebookProcess] = None
        self.manager: Optional[AlertmanagerProcess] = None
        self.port = free_port()
        self.log_path = workdir / "ansible-rulebook.log"
        self.token_path = workdir / "eda-token"
        self.token_path.write_text(TOKEN + "\n", encoding="utf-8")
        self.token_path.chmod(0o600)
        #: runs SIGKILLed by kill_playbook (they never publish a summary)
        self.killed = 0

    # ------------------------------------------------------------------ start / stop

    def start(self) -> None:
        stubs = {"remediation": self.dir / "remediation_stub.yml", "recertify": self.dir / "recertify_stub.yml"}
        stubs["remediation"].write_text(REMEDIATION_STUB, encoding="utf-8")
        stubs["recertify"].write_text(RECERTIFY_STUB, encoding="utf-8")
        localhost = {
            "chain_dir": str(self.dir),
            "sentinel_k8s_auth": {"kubeconfig": self.emu.kubeconfig_path, "retries": 3, "retry_backoff_s": 0.05},
            "sentinel_destructive": True,
            "sentinel_remediation_tasks": {a: str(stubs["remediation"]) for a in ("reboot", "reset_gpu", "driver_reload", "replace")},
            "sentinel_recertify_tasks": str(stubs["recertify"]),
            "sentinel_circuit_breaker": BREAKER,
            "sentinel_drain": {"timeout_s": 60, "pdb_retry_s": 0.05, "pdb_retry_max_s": 0.2},
            # a killed run's lock expires after 30 s; a re-delivered alert's run waits for it
            "sentinel_lock_duration_s": 30, "sentinel_lock_wait_s": 150,
        }
        rulebook_vars = {"sentinel_eda_port": self.port, "sentinel_eda_token_file": str(self.token_path), "sentinel_batch_window_s": 1,
                         "sentinel_batch_max": 500, "sentinel_dedup_window_s": 5}
        # the inherited ANSIBLE_* settings are dropped: the playbook runs see only these
        self.rulebook = RulebookProcess(
            self.dir, "dsxos.cluster.gpu_sentinel", localhost_inventory(localhost), rulebook_vars, self.collections,
            log_path=self.log_path, clean_ansible_env=True, start_timeout_s=180, step_s=0.5,
            extra_env={"ANSIBLE_COLLECTIONS_PATH": collections_path(self.collections),
                       "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACK_DIR), "ANSIBLE_CALLBACKS_ENABLED": "dsxos_result_dump",
                       "DSXOS_RESULT_DUMP": str(self.dump), "ANSIBLE_HOME": str(self.dir / "ansible-home"),
                       "ANSIBLE_LOCAL_TEMP": str(self.dir / "ansible-tmp")}).start()
        # alerts posted through the API without an end are resolved by Alertmanager after resolve_timeout (Prometheus
        # would keep re-sending them): long enough that nothing resolves on its own during a slow run of this module
        config = alertmanager_config(self.source_url, self.token_path, group_wait="1s", group_interval="1s", repeat_interval="1h",
                                     resolve_timeout="2h")
        self.manager = AlertmanagerProcess(str(self.dir / "alertmanager"), config).start()

    def stop(self) -> None:
        if self.manager is not None:
            self.manager.stop()
        if self.rulebook is not None:
            self.rulebook.stop()
        self.emu.stop()

    # ------------------------------------------------------------------ inputs

    @property
    def source_url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def post(self, alerts: List[Dict[str, Any]]) -> None:
        assert self.manager is not None
        self.manager.post_alerts(alerts)

    def post_source(self, body: bytes, headers: Dict[str, str]) -> Tuple[int, Any]:
        """POST straight to the source's webhook (what a misbehaving or hostile sender would do)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("POST", "/alerts", body=body, headers=dict(headers, **{"Content-Type": "application/json"}))
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
        except (BrokenPipeError, ConnectionResetError):
            return 413, "connection closed while sending"
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text

    def reset_breaker(self) -> None:
        result = call_entry(CIRCUIT_BREAKER, self.module_params(CIRCUIT_BREAKER, action="reset", reason="chain test", actor="chain-test",
                                                                **BREAKER))
        assert "failed" not in result, result

    def module_params(self, entry: Any, **params: Any) -> Dict[str, Any]:
        out = {key: spec.get("default") for key, spec in entry.spec.items()}
        out.update(kubeconfig=self.emu.kubeconfig_path, retry_backoff_s=0.01)
        out.update(params)
        return out

    # ------------------------------------------------------------------ observations

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def records(self) -> List[Dict[str, Any]]:
        if not self.dump.exists():
            return []
        out = []
        for line in self.dump.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                break  # a line being written
        return out

    def started(self) -> int:
        """Playbook runs started so far (their first task recorded)."""
        return len(self.started_runs())

    def started_runs(self) -> List[str]:
        """The run ids of the playbook runs started so far, in order."""
        return [((r.get("result") or {}).get("ansible_facts") or {}).get("sentinel_run", "?") for r in self.records()
                if r.get("task") == START_TASK]

    def idle(self) -> None:
        """Wait until every started run but the killed ones has published its summary (the rulebook's parallel second
        runs may outlive the test that started them)."""
        wait_until(lambda: len(self.started_runs()) - len(self.summaries()) <= self.killed, RUN_WAIT_S, "every started run to finish")

    def summaries(self) -> List[Dict[str, Any]]:
        """The dsxos_sentinel summary of every finished run, in order."""
        return [r["result"]["ansible_stats"]["data"]["dsxos_sentinel"] for r in self.records()
                if r.get("task") == SUMMARY_TASK and r.get("status") == "ok"]

    def wait_runs(self, after: int, predicate: Callable[[List[Dict[str, Any]]], bool], what: str) -> List[Dict[str, Any]]:
        """Wait until the runs finished after the first ``after`` satisfy ``predicate``; returns them."""
        def check() -> Optional[List[Dict[str, Any]]]:
            assert self.rulebook is not None and self.rulebook.running(), "ansible-rulebook died:\n" + self.log()[-6000:]
            runs = self.summaries()[after:]
            return runs if runs and predicate(runs) else None
        return wait_until(check, RUN_WAIT_S, what)

    def node(self, name: str) -> Dict[str, Any]:
        return self.emu.api.get("v1", "Node", name)

    def annotation(self, name: str, key: str) -> Any:
        text = (self.node(name)["metadata"].get("annotations") or {}).get(key)
        return json.loads(text) if text else None

    def kill_playbook(self) -> List[int]:
        """SIGKILL the ansible-playbook run the rulebook started (its process group and every process below it)."""
        assert self.rulebook is not None
        found = [pid for pid in descendants(self.rulebook.pid) if "ansible-playbook" in cmdline(pid)]
        leaders = [pid for pid in found if not any(pid in descendants(other) for other in found if other != pid)]
        assert len(leaders) == 1, "expected one ansible-playbook under ansible-rulebook, found %s" % [(p, cmdline(p)) for p in found]
        leader = leaders[0]
        victims = [leader] + descendants(leader)
        self.killed += 1
        group = os.getpgid(leader)
        if group not in (os.getpgid(0), os.getpgid(self.rulebook.pid)):
            os.killpg(group, signal.SIGKILL)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_until(lambda: not any(os.path.exists("/proc/%d" % pid) and "ansible" in cmdline(pid) for pid in victims), 60,
                   "the killed ansible-playbook to disappear")
        return victims

    def unexplained_cordons(self, foreign: Tuple[str, ...] = ()) -> List[str]:
        """Cordoned nodes that carry no recorded quarantine reason (``foreign``: cordoned by the test as another actor would)."""
        bad = []
        for item in self.emu.api.list("v1", "Node"):
            name = item["metadata"]["name"]
            if not item["spec"].get("unschedulable") or name in foreign:
                continue
            text = (item["metadata"].get("annotations") or {}).get(PRIOR)
            if not text or not json.loads(text).get("reason"):
                bad.append(name)
        return bad


def am_alert(node: str, fault_class: str, starts_at: str, gpu: str = "3", resolved: bool = False, **labels: str) -> Dict[str, Any]:
    """One alert for Alertmanager's API with an explicit start (so a re-post is the same occurrence)."""
    body: Dict[str, Any] = {
        "labels": dict({"alertname": "GpuFault", "severity": "critical", "node": node, "gpu": gpu, "fault_class": fault_class}, **labels),
        "annotations": {}, "startsAt": starts_at, "generatorURL": "http://prometheus.test/graph"}
    if resolved:
        body["endsAt"] = rfc3339(time.time() - 1)
    return body


@pytest.fixture(scope="module")
def chain(installed_collection: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    started = Chain(tmp_path_factory.mktemp("chain"), installed_collection)
    try:
        started.start()
        yield started
    finally:
        started.stop()


# ---------------------------------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------------------------------

def test_alert_to_returned_node_second_alert_starts_nothing_new(chain):
    """Alertmanager -> source -> rulebook -> remediate: cordoned, drained, remediated, recertified, uncordoned; a second
    alert of the node during the remediation starts nothing new; the resolved alerts then change nothing."""
    chain.reset_breaker()
    emu = chain.emu
    node = emu.add_nodes(1, "h100-eks", name_prefix="loop-")[0]
    emu.add_deployment("train", namespace="loop", replicas=1, gpu=1, node_selector={"kubernetes.io/hostname": node})
    emu.wait_for(lambda: [p for p in emu.api.pods("loop", node=node) if p["status"].get("phase") == "Running"], 60, 0.2, what="pod running")
    (chain.dir / ("hold-" + node)).write_text("hold", encoding="utf-8")
    before = chain.summaries()
    first = am_alert(node, "fallen-off-bus", rfc3339(time.time() - 5), code="79")
    chain.post([first])

    wait_until((chain.dir / ("remediation-%s-1.json" % node)).exists, RUN_WAIT_S, "the remediation of " + node)
    incident = chain.annotation(node, INCIDENT)
    assert incident["state"] == "remediating" and incident["attempts"] == 1
    spec = chain.node(node)["spec"]
    assert spec.get("unschedulable") is True and {"key": "dsxos.io/quarantine", "effect": "NoSchedule"} in spec["taints"]
    assert incident["id"] in chain.annotation(node, PRIOR)["reason"], "the cordon's reason names the incident"
    assert not [p for p in emu.api.pods("loop", node=node) if not p["metadata"].get("deletionTimestamp")], "drained"

    # a second alert of the same node while the remediation runs
    second = am_alert(node, "memory", rfc3339(time.time()), gpu="1", code="48")
    chain.post([second])
    wait_until(lambda: chain.log().count("group {'node': '%s'}" % node) >= 2, 60,
               "the second notification of the node's group to reach the source")
    (chain.dir / ("go-" + node)).write_text("go", encoding="utf-8")

    # each firing batch: an intake run (serialized), then a run of the rest (parallel)
    runs = chain.wait_runs(len(before), lambda runs: len([r for r in runs if r["phase"] == "all"]) >= 2,
                           "the remediation and the run of the second alert")
    assert {r["mode"] for r in runs} == {"remediate"}
    # (Alertmanager may send the node's group again under load: every later run must start nothing new)
    intakes = [r for r in runs if r["phase"] == "intake"]
    assert len(intakes) >= 2 and [(o["node"], o["status"]) for o in intakes[0]["outcomes"]] == [(node, "quarantined")], intakes
    for later in intakes[1:]:
        assert {o["status"] for o in later["outcomes"]} <= {"joined"} and not later["acted"], later
    full = [r for r in runs if r["phase"] == "all"]
    (returned,) = [r for r in full if any(o["status"] == "returned" for o in r["outcomes"])]
    assert [(o["node"], o["status"]) for o in returned["outcomes"]] == [(node, "returned")] and not returned["failed"]
    for later in [r for r in full if r is not returned]:
        assert not later["acted"] and not later["failed"], later
        # the plan's skips (they carry a verdict; a skipped outcome - locked, incident ended - does not) are replays
        assert {s["verdict"] for s in later["skipped"] if s.get("node") == node and "verdict" in s} <= {"replay"}, later["skipped"]
        # a later run never acted on the node the first one held (it found it locked, or its incident already ended)
        assert [o for o in later["outcomes"] if o["status"] not in ("skipped", "joined")] == [], later["outcomes"]

    spec = chain.node(node)["spec"]
    assert not spec.get("unschedulable") and not spec.get("taints"), "uncordoned and untainted: exactly as before"
    assert chain.annotation(node, INCIDENT) is None
    history = chain.annotation(node, HISTORY)
    assert [(h["id"], h["outcome"]) for h in history] == [(incident["id"], "returned")], "exactly one incident"
    if any(r["outcomes"] for r in intakes[1:]):
        assert len(history[0]["events"]) == 2, "the intake joined the second alert to the incident"
    assert sorted(p.name for p in chain.dir.glob("remediation-%s-*.json" % node)) == ["remediation-%s-1.json" % node]
    assert json.loads((chain.dir / ("recertify-%s-1.json" % node)).read_text())["state"] == "recertifying"
    reasons = [e["reason"] for e in emu.api.list("v1", "Event", "default") if (e.get("involvedObject") or {}).get("name") == node]
    for step in ("SentinelQuarantined", "SentinelDraining", "SentinelDrained", "SentinelRemediating", "SentinelRecertifying",
                 "SentinelReturned"):
        assert step in reasons, (step, reasons)

    # the resolutions run dsxos.cluster.release, which finds nothing of theirs to release
    version = chain.node(node)["metadata"]["resourceVersion"]
    chain.idle()
    count = len(chain.summaries())
    chain.post([dict(first, endsAt=rfc3339(time.time() - 1)), dict(second, endsAt=rfc3339(time.time() - 1))])
    released = chain.wait_runs(count, lambda runs: any(r["mode"] == "release" for r in runs), "the release run")
    assert [r for r in released if r["mode"] == "release"][0]["acted"] == []
    assert chain.node(node)["metadata"]["resourceVersion"] == version, "a release after the return changes nothing"
    assert chain.unexplained_cordons() == []


def test_sigkill_midway_then_redelivery_resumes_and_converges(chain):
    """The remediate run is SIGKILLed during the remediation; Alertmanager re-sends the node's group (a new alert joins
    it) and the re-delivered alert resumes the same incident: one incident, the node returned, never cordoned without
    a reason."""
    chain.idle()
    chain.reset_breaker()
    node = chain.emu.add_nodes(1, "h100-eks", name_prefix="kill-")[0]
    hold = chain.dir / ("hold-" + node)
    hold.write_text("hold", encoding="utf-8")
    before = len(chain.summaries())
    started_before = chain.started()
    first = am_alert(node, "fallen-off-bus", rfc3339(time.time() - 5), code="79")
    chain.post([first])
    wait_until((chain.dir / ("remediation-%s-1.json" % node)).exists, RUN_WAIT_S, "the remediation of " + node)
    time.sleep(1.0)  # let the stub reach its wait

    killed = chain.kill_playbook()
    assert killed
    incident = chain.annotation(node, INCIDENT)
    assert incident["state"] == "remediating" and incident["attempts"] == 1
    assert chain.node(node)["spec"].get("unschedulable") is True and chain.unexplained_cordons() == []
    assert incident["id"] in chain.annotation(node, PRIOR)["reason"]
    assert len([r for r in chain.summaries()[before:] if r["phase"] == "all"]) == 0, "the killed run never finished"
    assert chain.started() == started_before + 2, "the intake, and the run that was killed"

    # re-delivery: a record-only alert joins the node's group, so Alertmanager sends the group again, the first alert with it
    hold.unlink()
    chain.post([am_alert(node, "power", rfc3339(time.time()), gpu="0")])
    runs = chain.wait_runs(before, lambda runs: any(o["node"] == node and o["status"] == "returned" for r in runs for o in r["outcomes"]),
                           "the re-delivered alert's run to return " + node)
    resumed = [o for r in runs for o in r["outcomes"] if o["node"] == node and o["status"] == "returned"][0]
    assert resumed["kind"] == "resume" and resumed["incident"] == incident["id"]
    assert [(h["id"], h["outcome"]) for h in chain.annotation(node, HISTORY)] == [(incident["id"], "returned")], "exactly one incident"
    assert not chain.node(node)["spec"].get("unschedulable") and not chain.node(node)["spec"].get("taints")
    assert json.loads((chain.dir / ("remediation-%s-2.json" % node)).read_text())["incident"] == incident["id"]
    lease = chain.emu.api.get("coordination.k8s.io/v1", "Lease", "dsxos-node-lock-" + node, "dsxos-system")
    assert not lease["spec"].get("holderIdentity"), "the lock of the killed run was taken over and released"
    recorded = [e["fingerprint"] for e in chain.annotation(node, RECORDED) or []]
    joined = [e["fingerprint"] for h in chain.annotation(node, HISTORY) for e in h["events"]]
    assert len(recorded + joined) >= 2, "the power alert is recorded or joined to the incident, nothing more: %s %s" % (recorded, joined)
    assert chain.unexplained_cordons() == []


# ---------------------------------------------------------------------------------------------------------------------
# Releases, the breaker, replays
# ---------------------------------------------------------------------------------------------------------------------

def test_resolved_alerts_release_only_their_own_breaker_trips_and_never_blocks_a_release_replays_change_nothing(chain):
    """Four certification alerts (quarantine, wait for a release) at once: the breaker (max 3 nodes) admits three and
    refuses the fourth. One of the three was cordoned before by another actor: the sentinel's release keeps that cordon.
    The resolutions release while the breaker is open; a replay of a released alert changes nothing."""
    chain.idle()
    chain.reset_breaker()
    emu = chain.emu
    nodes = emu.add_nodes(4, "h100-eks", name_prefix="rel-")
    foreign = nodes[1]
    params = chain.module_params(NODE_QUARANTINE, nodes=[foreign], action="cordon", reason="RMA 4711 (ops)", actor="ops-alice")
    pre = call_entry(NODE_QUARANTINE, params)
    assert "failed" not in pre and pre["changed"], pre
    starts = rfc3339(time.time() - 5)
    firing = {n: am_alert(n, "certification", starts, gpu="0") for n in nodes}
    # the node someone else cordoned first (so the breaker admits it), then the three others at once
    count = len(chain.summaries())
    chain.post([firing[foreign]])
    chain.wait_runs(count, lambda runs: any(o["node"] == foreign for r in runs for o in r["outcomes"]), "the quarantine of " + foreign)
    assert chain.annotation(foreign, INCIDENT)["state"] == "quarantined"
    chain.post([firing[n] for n in nodes if n != foreign])

    def settled(runs: List[Dict[str, Any]]) -> bool:
        seen = {o["node"] for r in runs for o in r["outcomes"]}
        return set(nodes) <= seen
    runs = chain.wait_runs(count, settled, "the quarantine of four nodes")
    outcomes = {o["node"]: o for r in runs for o in r["outcomes"] if o["node"] in nodes}
    quarantined = sorted(n for n, o in outcomes.items() if o["status"] == "quarantined")
    refused = sorted(n for n, o in outcomes.items() if o["status"] == "skipped")
    assert foreign in quarantined and len(quarantined) == 3 and len(refused) == 1, outcomes
    assert "circuit breaker" in outcomes[refused[0]]["message"]
    assert emu.api.get("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system")["data"]["status"] == "open"
    assert not chain.node(refused[0])["spec"].get("unschedulable") and chain.annotation(refused[0], INCIDENT) is None

    # resolve one alert of a node that does not share the foreign cordon: only that node is released
    own = [n for n in quarantined if n != foreign][0]
    count = len(chain.summaries())
    chain.post([dict(firing[own], endsAt=rfc3339(time.time() - 1))])
    runs = chain.wait_runs(count, lambda runs: any(r["mode"] == "release" for r in runs), "the release of " + own)
    release = [r for r in runs if r["mode"] == "release"][0]
    assert release["acted"] == [own], release
    assert not chain.node(own)["spec"].get("unschedulable") and chain.annotation(own, INCIDENT) is None
    for other in quarantined:
        if other != own:
            assert chain.node(other)["spec"].get("unschedulable") is True and chain.annotation(other, INCIDENT) is not None

    # resolve the rest (the breaker is still open: it is never asked for a release)
    count = len(chain.summaries())
    rest = [n for n in nodes if n != own]
    chain.post([dict(firing[n], endsAt=rfc3339(time.time() - 1)) for n in rest])
    expect = sorted(n for n in quarantined if n != own)
    runs = chain.wait_runs(count, lambda runs: sorted(n for r in runs if r["mode"] == "release" for n in r["acted"]) == expect,
                           "the releases of %s" % expect)
    assert emu.api.get("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system")["data"]["status"] == "open"
    for name in expect:
        assert chain.annotation(name, INCIDENT) is None
    node = chain.node(foreign)
    assert node["spec"].get("unschedulable") is True, "the cordon ops-alice set survives the sentinel's release"
    assert not [t for t in node["spec"].get("taints") or [] if t["key"] == "dsxos.io/quarantine"], "the sentinel's taint is gone"
    record = chain.annotation(foreign, PRIOR)
    assert record["reason"] == "RMA 4711 (ops)" and record["actor"] == "ops-alice", record
    for name in expect:
        if name != foreign:
            assert not chain.node(name)["spec"].get("unschedulable") and not chain.node(name)["spec"].get("taints")
    assert chain.unexplained_cordons() == []

    # a stale replay of a released alert (same labels, same start) changes nothing
    version = chain.node(own)["metadata"]["resourceVersion"]
    count = len(chain.summaries())
    chain.post([firing[own]])
    runs = chain.wait_runs(count, lambda runs: any(r["mode"] == "remediate" for r in runs), "the replay's run")
    replay = [r for r in runs if r["mode"] == "remediate"][0]
    assert not replay["acted"] and [s["verdict"] for s in replay["skipped"] if s.get("node") == own] == ["replay"], replay
    assert chain.node(own)["metadata"]["resourceVersion"] == version, "the replay changed the node"
    assert [h["outcome"] for h in chain.annotation(own, HISTORY)] == ["released"]


def test_a_fault_that_resolves_within_one_batch_is_quarantined_then_released_in_that_order(chain):
    """A firing alert and its resolution in one webhook: the source hands on the firing batch and the resolved batch of
    one window back to back; the rulebook's intake and release take its lock in that order, so the node is
    quarantined, then released - never left quarantined by a release that ran before the quarantine it releases."""
    chain.idle()
    chain.reset_breaker()
    node = chain.emu.add_nodes(1, "h100-eks", name_prefix="flap-")[0]
    count = len(chain.summaries())
    labels = {"node": node, "alertname": "GpuFault", "severity": "critical", "fault_class": "certification", "gpu": "0"}
    starts = rfc3339(time.time() - 5)
    alerts = [{"status": status, "labels": labels, "annotations": {}, "startsAt": starts, "endsAt": ends, "generatorURL": "",
               "fingerprint": "f1a9f1a9f1a9f1a9"} for status, ends in (("firing", "0001-01-01T00:00:00Z"), ("resolved", rfc3339()))]
    body = {"version": "4", "status": "resolved", "receiver": "dsxos-gpu-sentinel", "groupLabels": {"node": node},
            "commonLabels": labels, "commonAnnotations": {}, "externalURL": "http://am", "groupKey": "{}:{node=\"%s\"}" % node,
            "truncatedAlerts": 0, "alerts": alerts}
    status, answer = chain.post_source(json.dumps(body).encode(), {"Authorization": "Bearer " + TOKEN})
    assert status < 300, answer
    runs = chain.wait_runs(count, lambda runs: any(r["mode"] == "release" for r in runs), "the release run")
    chain.idle()
    runs = chain.summaries()[count:]
    order = [(r["mode"], r["phase"]) for r in runs]
    assert order.index(("remediate", "intake")) < order.index(("release", "all")), order
    (intake,) = [r for r in runs if r["phase"] == "intake"]
    (release,) = [r for r in runs if r["mode"] == "release"]
    assert intake["acted"] == [node] and release["acted"] == [node], (intake, release)
    assert not chain.node(node)["spec"].get("unschedulable") and not chain.node(node)["spec"].get("taints")
    assert chain.annotation(node, INCIDENT) is None
    assert [h["outcome"] for h in chain.annotation(node, HISTORY)] == ["released"]
    assert chain.unexplained_cordons() == []


# ---------------------------------------------------------------------------------------------------------------------
# Bad input through the chain
# ---------------------------------------------------------------------------------------------------------------------

def test_bad_input_is_refused_and_nothing_runs_unknown_fault_is_recorded_only(chain):
    """Malformed payload -> 400, no or wrong token -> 401, oversized body -> 413, an invalid node name (trailing newline
    included) -> rejected and logged: no playbook run starts for any of them (a canary posted afterwards gets the only
    run). An unknown fault class is recorded on the node and not acted on."""
    chain.reset_breaker()
    canary, unknown = chain.emu.add_nodes(2, "h100-eks", name_prefix="bad-")
    started = chain.started()
    count = len(chain.summaries())
    auth = {"Authorization": "Bearer " + TOKEN}
    good = {"version": "4", "status": "firing", "receiver": "dsxos-gpu-sentinel", "groupLabels": {}, "commonLabels": {},
            "commonAnnotations": {}, "externalURL": "http://am", "groupKey": "{}", "truncatedAlerts": 0,
            "alerts": [{"status": "firing", "labels": {"node": canary, "alertname": "GpuFault", "fault_class": "fallen-off-bus"},
                        "annotations": {}, "startsAt": rfc3339(), "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "",
                        "fingerprint": "badc0ffee0000001"}]}
    body = json.dumps(good).encode()
    assert chain.post_source(body, {})[0] == 401
    assert chain.post_source(body, {"Authorization": "Bearer wrong-token"})[0] == 401
    status, answer = chain.post_source(b"{not json", auth)
    assert (status, answer["error"]) == (400, "malformed_json"), answer
    status, answer = chain.post_source(json.dumps(dict(good, version="3", alerts=[{"status": "firing"}])).encode(), auth)
    assert (status, answer["error"]) == (400, "invalid_payload"), answer
    assert chain.post_source(b"[" + b" " * (1024 * 1024 + 16) + b"]", auth)[0] == 413
    # invalid node names through Alertmanager: rejected by the source and logged escaped
    bad_names = [am_alert("bad-node\n", "fallen-off-bus", rfc3339(), gpu="2"), am_alert("Bad_Node", "fallen-off-bus", rfc3339(), gpu="2")]
    chain.post(bad_names)
    wait_until(lambda: chain.log().count("alert rejected (invalid_node)") >= 2, 60, "the source to reject both invalid node names")
    assert "'bad-node\\n'" in chain.log() and "'Bad_Node'" in chain.log()
    assert TOKEN not in chain.log()

    # the canary: its run is the only one started since the bad input; an unknown fault class on another node with it
    chain.post([am_alert(canary, "certification", rfc3339(time.time() - 1), gpu="0"),
                am_alert(unknown, "cosmic-rays", rfc3339(time.time() - 1), gpu="0")])
    runs = chain.wait_runs(count, lambda runs: {canary, unknown} <= {n for r in runs for n in r["acted"] + r["recorded"]},
                           "the canary's and the unknown alert's run(s)")
    mine = [o["node"] for r in runs for o in r["outcomes"] if o["node"].startswith("bad-") or o["node"].lower().startswith("bad_")]
    assert set(mine) <= {canary}, "only the canary was acted on: %s" % mine
    assert chain.started() - started == len(runs), "a playbook run started for the refused input"
    assert all(n in (canary, unknown) for r in runs for n in r["acted"] + r["recorded"] if n.startswith("bad")), runs
    recorded = chain.annotation(unknown, RECORDED)
    assert recorded and recorded[-1]["fault_class"] == "unknown", recorded
    assert not chain.node(unknown)["spec"].get("unschedulable") and chain.annotation(unknown, INCIDENT) is None
    assert chain.node(canary)["spec"].get("unschedulable") is True
    for name in chain.emu.api.list("v1", "Node"):
        assert name["metadata"]["name"] not in ("bad-node", "Bad_Node")
    assert chain.unexplained_cordons() == []
    assert re.search(r"alert rejected \(invalid_node\)", chain.log())
