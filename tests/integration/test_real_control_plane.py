# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Against a REAL control plane (kube-apiserver, kube-controller-manager, kube-scheduler 1.20 and etcd 3.4, built once
into the cache by scripts/build_kube_control_plane.sh) with simulated nodes: the real scheduler places a Deployment's
pods, the real disruption controller computes the PodDisruptionBudget, the real eviction subresource answers, and
dsxos.cluster.node_quarantine runs through ansible-playbook against it (docs/real-control-plane.md).
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Dict, List, Optional

# real_cluster comes from conftest.py (one control plane per pytest worker, shared with the two-backend tests).
from ansible_collections.dsxos.cluster.tests.harness.kube_control_plane.pytest_fixture import node_simulator_factory  # noqa: F401  pylint: disable=unused-import
from ansible_collections.dsxos.cluster.tests.harness.kube_control_plane import rawapi

NAMESPACE = "real-pdb"
PDB_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget"
PRIOR = "dsxos.io/quarantine-prior"
HISTORY = "dsxos.io/quarantine-history"


def _call(api_client: Any, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> tuple[int, Dict[str, Any]]:
    """A raw API call through the official client; returns (status, JSON body) also for error answers."""
    return rawapi.call_status(api_client, method, path, body)


def _wait(what: str, check: Callable[[], Any], timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError("%s: not reached within %.0f s (last: %r)" % (what, timeout_s, last))


def _running_pods(api_client: Any) -> List[Dict[str, Any]]:
    items = _call(api_client, "GET", "/api/v1/namespaces/%s/pods?labelSelector=app%%3Dtrainer" % NAMESPACE)[1]["items"]
    return [p for p in items if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def _evict(api_client: Any, pod: str, version: str) -> tuple[int, Dict[str, Any]]:
    body = {"apiVersion": "policy/%s" % version, "kind": "Eviction", "metadata": {"name": pod, "namespace": NAMESPACE}}
    return _call(api_client, "POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (NAMESPACE, pod), body)


def test_real_scheduler_pdb_eviction_and_node_quarantine(real_cluster, node_simulator_factory, ansible_run):  # pylint: disable=redefined-outer-name
    cluster = real_cluster
    sim = node_simulator_factory()
    nodes = sim.add_nodes(4, "h100-eks", name_prefix="real-gpu-")
    api = cluster.api_client()
    try:
        # the nodes carry the profile's GPU labels and capacity and are Ready (their not-ready taint removed)
        node = _call(api, "GET", "/api/v1/nodes/%s" % nodes[0])[1]
        assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        _wait("nodes schedulable", lambda: all(not (_call(api, "GET", "/api/v1/nodes/%s" % n)[1]["spec"].get("taints")) for n in nodes))

        assert _call(api, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})[0] == 201
        cluster.wait_for_service_account(NAMESPACE)
        labels = {"app": "trainer"}
        deployment = {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer", "namespace": NAMESPACE},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"terminationGracePeriodSeconds": 2, "containers": [{
                    "name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}
        assert _call(api, "POST", "/apis/apps/v1/namespaces/%s/deployments" % NAMESPACE, deployment)[0] == 201
        pdb = {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "trainer", "namespace": NAMESPACE},
               "spec": {"minAvailable": 2, "selector": {"matchLabels": labels}}}
        assert _call(api, "POST", "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % NAMESPACE, pdb)[0] == 201

        pods = _wait("3 trainer pods Running", lambda: [p for p in [_running_pods(api)] if len(p) == 3])[0]
        # 8 GPUs each: the real scheduler put every pod on its own node
        assert len({p["spec"]["nodeName"] for p in pods}) == 3 and {p["spec"]["nodeName"] for p in pods} <= set(nodes)
        assert all(p["status"]["podIP"] and p["status"]["containerStatuses"][0]["ready"] for p in pods)
        pdb_path = "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets/trainer" % NAMESPACE
        _wait("the disruption controller allows 1", lambda: _call(api, "GET", pdb_path)[1].get("status", {}).get("disruptionsAllowed") == 1)

        first, second = pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]
        status, body = _evict(api, first, "v1beta1")
        assert status == 201, body
        status, body = _evict(api, second, "v1beta1")
        assert status == 429, body
        assert PDB_MESSAGE in body["message"], body
        assert body["details"]["causes"][0]["reason"] == "DisruptionBudget", body
        # a policy/v1 Eviction body (what the kubernetes client >= 22 sends, and eviction_scheduler.py builds) is
        # refused by 1.20, which has no policy/v1: the real answer is a 400, not a budget decision
        status, body = _evict(api, second, "v1")
        assert status == 400 and 'no kind "Eviction" is registered for version "policy/v1"' in body["message"], body

        # the evicted pod terminates gracefully (the simulator deletes it after its 2 s), the ReplicaSet replaces it
        _wait("the evicted pod is gone", lambda: _call(api, "GET", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, first))[0] == 404)
        _wait("3 pods Running again", lambda: len(_running_pods(api)) == 3)
        _wait("the budget allows 1 again", lambda: _call(api, "GET", pdb_path)[1].get("status", {}).get("disruptionsAllowed") == 1)
        status, body = _evict(api, second, "v1beta1")
        assert status == 201, body

        # a Job run by the real Job controller, its pod finished by the simulator's hook, its log served through the
        # apiserver's pods/log (proxied to the simulator's kubelet endpoint)
        sim.job_behaviour = lambda job, pod: (0.5, 0, "# nccl-tests on %s\nAvg bus bandwidth : 371.2\n" % pod["spec"]["nodeName"])
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "probe", "namespace": NAMESPACE},
               "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
                   {"name": "main", "image": "nvcr.io/nvidia/nccl-tests:2.13", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}
        assert _call(api, "POST", "/apis/batch/v1/namespaces/%s/jobs" % NAMESPACE, job)[0] == 201
        job_path = "/apis/batch/v1/namespaces/%s/jobs/probe" % NAMESPACE
        done = _wait("the Job Complete", lambda: [c for c in _call(api, "GET", job_path)[1].get("status", {}).get("conditions") or []
                                                  if c["type"] == "Complete"])
        assert done[0]["status"] == "True"
        job_pod = _call(api, "GET", "/api/v1/namespaces/%s/pods?labelSelector=job-name%%3Dprobe" % NAMESPACE)[1]["items"][0]
        assert job_pod["status"]["phase"] == "Succeeded"
        assert job_pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
        with cluster.api_client() as log_client:
            from kubernetes import client  # pylint: disable=import-outside-toplevel

            text = client.CoreV1Api(log_client).read_namespaced_pod_log(job_pod["metadata"]["name"], NAMESPACE)
        assert "Avg bus bandwidth : 371.2" in text and job_pod["spec"]["nodeName"] in text

        # one of our modules through ansible-playbook: cordon with a reason, then release
        target = pods[2]["spec"]["nodeName"]
        playbook = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s: {kubeconfig: "{{ kubeconfig }}", retries: 3, retry_backoff_s: 0.2}
  tasks:
    - name: node_quarantine
      dsxos.cluster.node_quarantine: {nodes: ["{{ target }}"], action: "{{ action }}", reason: "{{ reason }}", actor: ops-bot}
"""
        extra = {"kubeconfig": str(cluster.kubeconfig_path), "target": target}
        cordon = ansible_run(playbook, extra_vars=dict(extra, action="cordon", reason="XID 79 on a real apiserver")).task("node_quarantine")
        assert cordon["changed"] and cordon["result"]["changed_nodes"] == [target], cordon
        seen = _call(api, "GET", "/api/v1/nodes/%s" % target)[1]
        assert seen["spec"]["unschedulable"] is True
        assert json.loads(seen["metadata"]["annotations"][PRIOR])["reason"] == "XID 79 on a real apiserver"
        release = ansible_run(playbook, extra_vars=dict(extra, action="release", reason="GPU replaced")).task("node_quarantine")
        assert release["changed"], release
        after = _call(api, "GET", "/api/v1/nodes/%s" % target)[1]
        assert not after["spec"].get("unschedulable")
        history = json.loads(after["metadata"]["annotations"][HISTORY])
        assert [(h["action"], h["reason"]) for h in history] == [("cordon", "XID 79 on a real apiserver"), ("release", "GPU replaced")]
        assert history[0]["actor"] == "ops-bot"
        assert sim.counts["errors"] == 0, sim.last_errors
    finally:
        api.close()


DRAIN_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s: {kubeconfig: "{{ kubeconfig }}"}
  tasks:
    - name: drain
      dsxos.cluster.node_drain: {nodes: ["{{ target }}"], reason: "XID 79", timeout_s: 120, pdb_retry_s: 0.5}
      register: drained
"""


def test_node_drain_evicts_through_the_real_eviction_api_of_an_old_server(  # pylint: disable=redefined-outer-name
        real_cluster, node_simulator_factory, ansible_run):
    """The drain sends policy/v1 Evictions; a 1.20 server refuses that body (400), so the drain falls back to
    policy/v1beta1 (as kubectl does) and the real disruption controller's budget is honoured."""
    cluster = real_cluster
    sim = node_simulator_factory()
    nodes = sim.add_nodes(4, "h100-eks", name_prefix="drain-gpu-")
    api = cluster.api_client()
    namespace = "real-drain"
    try:
        _wait("nodes schedulable", lambda: all(not (_call(api, "GET", "/api/v1/nodes/%s" % n)[1]["spec"].get("taints")) for n in nodes))
        assert _call(api, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})[0] == 201
        cluster.wait_for_service_account(namespace)
        labels = {"app": "drained"}
        deployment = {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "drained", "namespace": namespace},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"terminationGracePeriodSeconds": 1,
                         "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                             {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}]}}},
                         "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                         "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}
        assert _call(api, "POST", "/apis/apps/v1/namespaces/%s/deployments" % namespace, deployment)[0] == 201
        pdb = {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "drained", "namespace": namespace},
               "spec": {"minAvailable": 2, "selector": {"matchLabels": labels}}}
        assert _call(api, "POST", "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % namespace, pdb)[0] == 201

        def running() -> List[Dict[str, Any]]:
            items = _call(api, "GET", "/api/v1/namespaces/%s/pods?labelSelector=app%%3Ddrained" % namespace)[1]["items"]
            return [p for p in items if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                    and p["spec"].get("nodeName") in nodes]

        pods = _wait("3 pods Running on the drain nodes", lambda: [r for r in [running()] if len(r) == 3])[0]
        target = pods[0]["spec"]["nodeName"]
        _wait("budget computed", lambda: (_call(api, "GET", "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets/drained"
                                                % namespace)[1].get("status") or {}).get("disruptionsAllowed") == 1)

        result = ansible_run(DRAIN_PLAYBOOK, extra_vars={"kubeconfig": str(cluster.kubeconfig_path), "target": target})
        drain = result.task("drain")["result"]
        assert drain["changed"] and drain["drained_nodes"] == [target], result.describe()
        outcomes = {p["name"]: p["outcome"] for p in drain["nodes"][0]["pods"]}
        assert outcomes == {pods[0]["metadata"]["name"]: "evicted"}, outcomes
        node = _call(api, "GET", "/api/v1/nodes/%s" % target)[1]
        assert node["spec"]["unschedulable"] is True
        assert json.loads(node["metadata"]["annotations"][PRIOR])["reason"] == "drain: XID 79"
        # the replacement lands on the fourth node: the budget is whole again, nothing on the drained node
        _wait("3 pods Running again, none on the drained node",
              lambda: len(running()) == 3 and all(p["spec"]["nodeName"] != target for p in running()))
    finally:
        _call(api, "DELETE", "/api/v1/namespaces/%s" % namespace)
