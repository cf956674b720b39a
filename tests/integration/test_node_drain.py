# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.node_drain against both Kubernetes backends (the emulator and the real control plane, ``k8s_cluster``):
real ansible-playbook runs (PDB that blocks then allows, failure reporting, an interrupted run) plus in-process runs of
the module_utils for the slower modes. The exact request counts the emulator keeps are asserted in emulator-only twins."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest
from playbook_runner import _bin, default_inventory, playbook_env  # pylint: disable=import-error

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import DrainPolicy
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import DrainOptions, drain_nodes

PRIOR = "dsxos.io/quarantine-prior"
HISTORY = "dsxos.io/quarantine-history"
HOST = "kubernetes.io/hostname"


def _children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    stat = handle.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def kill_tree(pid):
    """SIGKILL ``pid`` and every descendant; returns their pids. ansible-playbook's workers call setsid(), so killing the
    playbook's process group leaves the worker and its module running: stop the whole tree first (stopped processes spawn
    nothing), then kill it."""
    stopped, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            os.kill(current, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        stopped.append(current)
        todo.extend(_children(current))
    for current in stopped:
        try:
            os.kill(current, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return stopped


def alive(pid):
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def running(emu, namespace, selector):
    return [p for p in emu.api.pods(namespace, label_selector=selector)
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def start_training(emu, nodes, replicas, grace_s=None, gpu=1):
    """A GPU Deployment spread over ``nodes`` with a maxUnavailable-1 PDB created once every pod is up."""
    emu.add_deployment("train", namespace="ml", replicas=replicas, gpu=gpu, grace_s=grace_s)
    emu.wait_for(lambda: len(running(emu, "ml", "app=train")) == replicas, 20, what="training pods running")
    emu.add_pdb("train", {"app": "train"}, namespace="ml", max_unavailable=1)
    emu.settle()
    assert not emu.pdb_violated("train", "ml")
    counts = {n: len(emu.api.pods("ml", node=n)) for n in nodes}
    return max(nodes, key=lambda n: (counts[n], n))


DRAIN_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s: {kubeconfig: "{{ kubeconfig }}"}
  tasks:
    - name: preview
      dsxos.cluster.node_drain: {nodes: ["{{ target }}"], reason: "XID 79", gpu_pods_only: true}
      check_mode: true
    - name: drain
      dsxos.cluster.node_drain: {nodes: ["{{ target }}"], reason: "XID 79", gpu_pods_only: true, pdb_retry_s: 0.05, pdb_retry_max_s: 0.2,
                                 timeout_s: 60}
    - name: drain again
      dsxos.cluster.node_drain: {nodes: ["{{ target }}"], reason: "XID 79", gpu_pods_only: true}
"""


def test_drain_waits_for_a_blocking_pdb_without_violating_it(k8s_cluster_factory, ansible_run):
    emu = k8s_cluster_factory(time_scale=0.05)
    nodes = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    emu.add_daemonset("device-plugin", tolerations=[{"operator": "Exists"}])
    target = start_training(emu, nodes, replicas=15)
    emu.add_deployment("web", namespace="ml", replicas=1, node_selector={HOST: target})
    emu.add_deployment("operator", namespace="gpu-operator", replicas=1, node_selector={HOST: target})
    emu.wait_for(lambda: len(running(emu, None, "app in (web,operator)")) == 2, 20, what="web and operator pods")
    train_on_target = {p["metadata"]["name"] for p in emu.api.pods("ml", node=target, label_selector="app=train")}
    assert len(train_on_target) == 5

    result = ansible_run(DRAIN_PLAYBOOK, extra_vars={"kubeconfig": emu.kubeconfig_path, "target": target})

    preview = result.task("preview")["result"]
    assert preview["changed"] and preview["totals"]["would_evict"] == 5
    drain = result.task("drain")["result"]
    assert drain["changed"] and drain["drained_nodes"] == [target]
    pods = {p["name"]: p for p in drain["nodes"][0]["pods"]}
    evicted = {name for name, p in pods.items() if p["outcome"] == "evicted"}
    assert evicted == train_on_target
    waited = [p for p in pods.values() if p["attempts"] > 1]
    assert waited and all("PodDisruptionBudget train" in p["reason"] for p in waited), "the budget must have blocked for a while"
    skipped = {p["reason"] for p in pods.values() if p["outcome"] == "skipped"}
    assert any("DaemonSet" in r for r in skipped) and any("protected namespace gpu-operator" in r for r in skipped)
    assert any("gpu_pods_only" in r for r in skipped)
    assert not result.task("drain again")["changed"]

    assert not emu.pdb_violated("train", "ml")
    metrics = emu.pdb_metrics("train", "ml")
    assert metrics["min_healthy"] >= metrics["desired"] == 14
    node = emu.api.get("v1", "Node", target)
    assert node["spec"]["unschedulable"] is True
    assert json.loads(node["metadata"]["annotations"][PRIOR])["reason"] == "drain: XID 79"
    assert not emu.api.pods("ml", node=target, label_selector="app=train")
    assert len(running(emu, "ml", "app=train")) == 15


FAILURE_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s: {kubeconfig: "{{ kubeconfig }}"}
  tasks:
    - name: unmanaged pod blocks
      dsxos.cluster.node_drain: {nodes: ["{{ nodes[0] }}"], reason: maintenance}
      ignore_errors: true
    - name: budget never allows
      dsxos.cluster.node_drain: {nodes: ["{{ nodes[1] }}"], reason: maintenance, timeout_s: 0.6, pdb_retry_s: 0.05, pdb_retry_max_s: 0.1}
      ignore_errors: true
    - name: unknown and invalid nodes
      dsxos.cluster.node_drain: {nodes: ["{{ nodes[2] }}", no-such-node], reason: maintenance}
      ignore_errors: true
"""


def test_drain_failures_name_the_cause_and_leave_the_node_cordoned(k8s_cluster, ansible_run):
    emu = k8s_cluster
    nodes = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    emu.seed_pods(1, namespace="scratch", nodes=[nodes[0]])
    emu.add_deployment("solo", replicas=1, node_selector={HOST: nodes[1]})
    emu.wait_for(lambda: len(running(emu, "default", "app=solo")) == 1, 20, what="solo running")
    emu.add_pdb("solo", {"app": "solo"}, min_available=1)
    emu.settle()

    result = ansible_run(FAILURE_PLAYBOOK, extra_vars={"kubeconfig": emu.kubeconfig_path, "nodes": nodes})

    blocked = result.task("unmanaged pod blocks")
    assert blocked["failed"] and "not managed by a controller" in blocked["msg"] and "force=true" in blocked["msg"]
    assert blocked["result"]["nodes"][0]["status"] == "blocked"
    assert emu.api.pods("scratch", node=nodes[0]), "nothing may be evicted when a pod blocks the drain"
    budget = result.task("budget never allows")
    assert budget["failed"] and "blocking PodDisruptionBudget(s): solo" in budget["msg"]
    assert budget["result"]["nodes"][0]["blocking_pdbs"] == ["solo"]
    assert budget["result"]["nodes"][0]["pods"][0]["outcome"] == "pdb_blocked"
    assert not emu.pdb_violated("solo") and len(running(emu, "default", "app=solo")) == 1
    unknown = result.task("unknown and invalid nodes")
    assert unknown["failed"] and "node no-such-node not found" in unknown["msg"] and unknown["result"]["drained_nodes"] == [nodes[2]]
    for name in nodes[:2]:
        node = emu.api.get("v1", "Node", name)
        assert node["spec"]["unschedulable"] is True and json.loads(node["metadata"]["annotations"][PRIOR])["reason"] == "drain: maintenance"
        assert json.loads(node["metadata"]["annotations"][HISTORY])[-1]["action"] == "drain-failed"


def _interrupted_drain_setup(emu, installed_collection, tmp_path):
    """Training on 3 nodes, the drain playbook of the busiest one, its environment; pod starts held from now on."""
    nodes = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    target = start_training(emu, nodes, replicas=15, grace_s=10)
    on_target = {p["metadata"]["name"] for p in emu.api.pods("ml", node=target, label_selector="app=train")}
    playbook = f"""
- hosts: localhost
  gather_facts: false
  tasks:
    - name: drain
      dsxos.cluster.node_drain: {{kubeconfig: "{emu.kubeconfig_path}", nodes: ["{target}"], reason: "XID 79", pdb_retry_s: 0.1, pdb_retry_max_s: 0.2}}
"""
    workdir = tmp_path / "interrupted"
    workdir.mkdir()
    (workdir / "playbook.yml").write_text(playbook, encoding="utf-8")
    (workdir / "inventory.ini").write_text(default_inventory(), encoding="utf-8")
    env = playbook_env(installed_collection, workdir, workdir / "results.jsonl")

    # Hold the drain at a known point: no replacement becomes Ready while the first run is alive, so the budget
    # (maxUnavailable 1) lets exactly ONE eviction through and refuses every other one, however slow the machine is.
    emu.set_kubelet_start_delay(1e9)

    def removed():
        pods = {p["metadata"]["name"]: p for p in emu.api.pods("ml", node=target, label_selector="app=train")}
        return {n for n in on_target if n not in pods or pods[n]["metadata"].get("deletionTimestamp")}

    def start():
        return subprocess.Popen([_bin("ansible-playbook"), "-i", "inventory.ini", "playbook.yml"], cwd=workdir, env=env,  # pylint: disable=consider-using-with
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return target, on_target, playbook, removed, start


def test_interrupted_drain_rerun_converges(k8s_cluster_factory, ansible_run, installed_collection, tmp_path):
    # replacements take 5 emulated seconds (1 s real) to become Ready, so the budget holds the drain back pod by pod
    emu = k8s_cluster_factory(time_scale=0.2, kubelet_start_delay_s=5.0)
    target, on_target, playbook, removed, start = _interrupted_drain_setup(emu, installed_collection, tmp_path)
    proc = start()
    try:
        # the known point: one pod evicted; the budget refuses the others (retried every 0.1 to 0.2 s) while starts are held
        emu.wait_for(removed, 120, what="the first eviction")
        time.sleep(0.5)
    finally:
        killed = kill_tree(proc.pid)
        proc.wait(timeout=30)
    # SIGKILL takes effect asynchronously: give the killed processes a moment to exit
    emu.wait_for(lambda: not [pid for pid in killed if alive(pid)], 10, 0.05, what="the first run really dead (every process of its tree)")
    first_run_removed = removed()
    assert len(first_run_removed) == 1, f"the budget must have let exactly one eviction through, got {sorted(first_run_removed)}"
    assert emu.api.get("v1", "Node", target)["spec"]["unschedulable"] is True
    assert not emu.pdb_violated("train", "ml")

    # release the hold: replacements start again (the one created during the hold is replaced by a fresh pod)
    emu.set_kubelet_start_delay(5.0)
    for pod in emu.api.pods("ml", label_selector="app=train"):
        if pod["status"].get("phase") == "Pending" and not pod["metadata"].get("deletionTimestamp"):
            emu.api.delete("v1", "Pod", pod["metadata"]["name"], "ml", grace_period_seconds=0)

    rerun = ansible_run(playbook)
    drained = rerun.task("drain")["result"]
    assert drained["drained_nodes"] == [target]
    pods = {p["name"]: p["outcome"] for p in drained["nodes"][0]["pods"]}
    assert set(pods.values()) <= {"evicted", "gone"}
    assert {n for n, outcome in pods.items() if outcome == "evicted"} == on_target - first_run_removed, \
        "the rerun evicts exactly the pods the interrupted run left"
    assert not emu.api.pods("ml", node=target)
    assert not emu.pdb_violated("train", "ml")
    emu.wait_for(lambda: len(running(emu, "ml", "app=train")) == 15, 30, what="every replacement running")
    assert json.loads(emu.api.get("v1", "Node", target)["metadata"]["annotations"][PRIOR])["reason"] == "drain: XID 79"


@pytest.mark.emulator_only("api_calls")
def test_interrupted_drain_sends_nothing_after_the_kill(k8s_cluster_factory, installed_collection, tmp_path):
    """The emulator's request counts: the first run reached a refused eviction, and after the kill nothing is sent."""
    emu = k8s_cluster_factory(time_scale=0.2, kubelet_start_delay_s=5.0)
    target, _on_target, _playbook, removed, start = _interrupted_drain_setup(emu, installed_collection, tmp_path)
    proc = start()
    try:
        evictions_before = emu.api_calls("create", "pods/eviction")
        # the known point: one pod evicted and the next eviction already refused by the budget
        emu.wait_for(lambda: removed() and emu.api_calls("create", "pods/eviction") >= evictions_before + 2, 120,
                     what="the first eviction and a refused one")
    finally:
        kill_tree(proc.pid)
        proc.wait(timeout=30)
    evictions = emu.api_calls("create", "pods/eviction")
    time.sleep(0.5)  # > 2 x pdb_retry_max_s: a surviving first run would have retried by now
    assert emu.api_calls("create", "pods/eviction") == evictions, "the first run must really be dead"
    assert len(removed()) == 1
    assert emu.api.get("v1", "Node", target)["spec"]["unschedulable"] is True
    assert not emu.pdb_violated("train", "ml")


def _completion_and_forced_drain(emu, after_completion=lambda: None):
    """allow_completion waits for a running Job (``after_completion()`` runs once it drained), delete_after_timeout
    deletes what a budget protects; returns the drain client's request counts after the first drain and at the end."""
    # the fine-tuning job runs until the test completes it (no race with the wall clock of a loaded machine)
    emu.job_behaviour = lambda job, pod: (1e9, 0, "")
    nodes = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    emu.add_job("finetune", namespace="ml", duration_s=50, gpu=1, node_selector={HOST: nodes[0]})
    emu.add_deployment("solo", replicas=1, node_selector={HOST: nodes[1]})
    emu.wait_for(lambda: len(running(emu, "default", "app=solo")) == 1 and len(running(emu, "ml", None)) == 1, 20, what="pods running")
    emu.add_pdb("solo", {"app": "solo"}, min_available=1)
    emu.settle()
    with KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig_path})) as client:
        started = time.monotonic()
        reports = []
        worker = threading.Thread(target=lambda: reports.append(drain_nodes(client, [nodes[0]], DrainOptions(
            reason="maintenance", mode="allow_completion", timeout_s=20))))
        worker.start()
        try:
            emu.wait_for(lambda: client.stats.get("list pods", 0) > 0, 20, what="the drain listing the node's pods")
            time.sleep(0.3)
            assert worker.is_alive(), "allow_completion must wait for the running job"
            job_pod = running(emu, "ml", None)[0]
            emu.api.patch("v1", "Pod", job_pod["metadata"]["name"], {"status": {"phase": "Succeeded"}}, namespace="ml",
                          subresource="status")
        finally:
            worker.join(30)
        waited = reports[0]
        assert waited.results[0].status == "drained" and time.monotonic() - started >= 0.3
        assert [p.outcome for p in waited.results[0].pods] == ["completed"]
        calls = dict(client.stats)
        after_completion()

        forced = drain_nodes(client, [nodes[1]], DrainOptions(reason="psu", mode="delete_after_timeout", timeout_s=10,
                                                              eviction_timeout_s=0.5, pdb_retry_s=0.1, pdb_retry_max_s=0.2,
                                                              policy=DrainPolicy()))
        pod = forced.results[0].pods[0]
        assert forced.results[0].status == "drained" and pod.outcome == "deleted" and pod.pdb == "solo"
        assert "blocked by PodDisruptionBudget solo" in pod.reason

        dry = drain_nodes(client, [nodes[0]], DrainOptions(reason="again", dry_run=True))
        assert dry.results[0].status == "drained" and not dry.failed
        return calls, dict(client.stats)


def test_allow_completion_and_delete_after_timeout_in_process(k8s_cluster_factory):
    emu = k8s_cluster_factory(time_scale=0.05)
    after_completion, after_all = _completion_and_forced_drain(emu)
    # the drain's own client: no eviction while waiting for completion, one DELETE after the eviction timeout
    assert after_completion.get("create pods/eviction", 0) == 0
    assert after_all.get("delete pods", 0) == 1


@pytest.mark.emulator_only("api_calls")
def test_allow_completion_and_delete_after_timeout_requests(k8s_cluster_factory):
    """What the emulator served: no eviction while waiting for completion, exactly one DELETE of a pod in all."""
    emu = k8s_cluster_factory(time_scale=0.05)
    evictions = []
    _completion_and_forced_drain(emu, after_completion=lambda: evictions.append(emu.api_calls("create", "pods/eviction")))
    assert evictions == [0]
    assert emu.api_calls("delete", "pods") == 1
