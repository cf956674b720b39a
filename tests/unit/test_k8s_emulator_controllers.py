# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Simulated controllers: scheduler, kubelet, Deployment/ReplicaSet, StatefulSet, DaemonSet, Job, garbage collection, taints."""
from __future__ import annotations

from kubernetes import client

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.profiles import CLIQUE_LABEL, RACK_LABEL
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)


def _field(obj, *path):
    """obj.a.b... or None when a step is None (status is absent until a controller writes it)."""
    for attr in path:
        obj = getattr(obj, attr, None) if obj is not None else None
    return obj


def _running(emu, namespace="default", selector=None):
    return [p for p in emu.api.pods(namespace, label_selector=selector)
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def test_deployment_replaces_evicted_pod_on_another_node(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    nodes = emu.add_nodes(3, "h100-eks")
    emu.add_deployment("web", replicas=3)
    emu.wait_for(lambda: len(_running(emu)) == 3, 10, what="3 running")
    assert sorted(p["spec"]["nodeName"] for p in _running(emu)) == sorted(nodes)  # spread one per node
    core = client.CoreV1Api(k8s_client)
    target = nodes[0]
    core.patch_node(target, {"spec": {"unschedulable": True}})
    victim = next(p for p in _running(emu) if p["spec"]["nodeName"] == target)["metadata"]["name"]
    core.create_namespaced_pod_eviction(victim, "default", client.V1Eviction(metadata=client.V1ObjectMeta(name=victim, namespace="default")))
    emu.wait_for(lambda: len(_running(emu)) == 3 and emu.api.find("v1", "Pod", victim, "default") is None, 10, what="replacement")
    assert all(p["spec"]["nodeName"] != target for p in _running(emu))
    apps = client.AppsV1Api(k8s_client)
    emu.wait_for(lambda: _field(apps.read_namespaced_deployment("web", "default"), "status", "ready_replicas") == 3, 10,
                 what="deployment status")
    dep = apps.read_namespaced_deployment("web", "default")
    assert dep.status.observed_generation == 1
    assert {c.type: c.status for c in dep.status.conditions}["Available"] == "True"
    rs = client.AppsV1Api(k8s_client).list_namespaced_replica_set("default").items
    assert len(rs) == 1 and rs[0].metadata.owner_references[0].kind == "Deployment"
    assert rs[0].metadata.name == f"web-{rs[0].metadata.labels['pod-template-hash']}"


def test_scheduler_respects_cordon_taints_selector_and_gpu_capacity(k8s_emulator):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    gpu = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    emu.add_nodes(1, "cpu", name_prefix="cpu-")
    emu.cordon(gpu[0])
    emu.taint("cpu-0", "dedicated", "NoSchedule", "infra")
    emu.add_deployment("train", replicas=3, gpu=4, node_selector={"nvidia.com/gpu.present": "true"})
    emu.wait_for(lambda: len(_running(emu, selector="app=train")) == 2, 10, what="2 train pods")
    pods = emu.api.pods("default", label_selector="app=train")
    placed = sorted(p["spec"].get("nodeName", "") for p in pods)
    assert placed == ["", "gpu-1", "gpu-1"]  # 8 GPUs: two 4-GPU pods fit on the only schedulable GPU node
    pending = next(p for p in pods if not p["spec"].get("nodeName"))

    def unschedulable_message():
        pod = emu.api.get("v1", "Pod", pending["metadata"]["name"], "default")
        cond = next((c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"), {})
        return cond.get("message") if cond.get("reason") == "Unschedulable" else None
    message = emu.wait_for(unschedulable_message, 5, what="Unschedulable condition")
    assert message.startswith("0/3 nodes are available:")
    assert "1 Insufficient nvidia.com/gpu" in message and "1 node(s) were unschedulable" in message
    assert "1 node(s) had untolerated taint {dedicated: infra}" in message
    emu.cordon(gpu[0], False)
    emu.wait_for(lambda: len(_running(emu, selector="app=train")) == 3, 10, what="third pod after uncordon")
    emu.add_deployment("infra", replicas=1, tolerations=[{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}],
                       node_selector={"kubernetes.io/hostname": "cpu-0"})
    emu.wait_for(lambda: [p["spec"]["nodeName"] for p in _running(emu, selector="app=infra")] == ["cpu-0"], 10, what="infra on cpu-0")


def test_noexecute_taint_evicts_untolerating_pods(k8s_emulator):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    nodes = emu.add_nodes(2, "cpu")
    emu.add_deployment("web", replicas=2)
    emu.wait_for(lambda: len(_running(emu)) == 2, 10, what="2 running")
    emu.taint(nodes[0], "dsxos.io/remediation", "NoExecute")
    emu.wait_for(lambda: len(_running(emu)) == 2 and all(p["spec"]["nodeName"] == nodes[1] for p in _running(emu)), 10,
                 what="pods moved off the NoExecute node")


def test_job_completes_with_exit_code_and_log(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    emu.add_nodes(1, "h200-eks")
    emu.add_job("nccl", duration_s=5, exit_code=0, log="# Avg bus bandwidth    : 371.2\n", gpu=8)
    batch = client.BatchV1Api(k8s_client)
    emu.wait_for(lambda: _field(batch.read_namespaced_job_status("nccl", "default"), "status", "succeeded") == 1, 10, what="job success")
    job = batch.read_namespaced_job("nccl", "default")
    assert {c.type for c in job.status.conditions} >= {"Complete", "SuccessCriteriaMet"} and job.status.completion_time
    core = client.CoreV1Api(k8s_client)
    pod = core.list_namespaced_pod("default", label_selector="job-name=nccl").items[0]
    assert pod.status.phase == "Succeeded"
    assert pod.status.container_statuses[0].state.terminated.exit_code == 0
    assert core.read_namespaced_pod_log(pod.metadata.name, "default") == "# Avg bus bandwidth    : 371.2\n"


def test_job_fails_after_backoff_limit(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    emu.add_nodes(1, "cpu")
    emu.add_job("flaky", duration_s=1, exit_code=3, backoff_limit=1)
    batch = client.BatchV1Api(k8s_client)

    def failed():
        conds = _field(batch.read_namespaced_job("flaky", "default"), "status", "conditions") or []
        return any(c.type == "Failed" and c.status == "True" for c in conds)
    emu.wait_for(failed, 10, what="job failure")
    job = batch.read_namespaced_job("flaky", "default")
    assert job.status.failed == 2 and next(c for c in job.status.conditions if c.type == "Failed").reason == "BackoffLimitExceeded"
    pods = client.CoreV1Api(k8s_client).list_namespaced_pod("default", label_selector="job-name=flaky").items
    assert sorted(p.status.container_statuses[0].state.terminated.exit_code for p in pods) == [3, 3]


def test_job_retry_sequence_and_python_hook(k8s_emulator):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    emu.add_nodes(2, "gb200-eks")
    emu.add_job("retry", duration_s=1, exit_codes=[1, 0])
    calls = []

    def behaviour(job, pod):
        calls.append((job["metadata"]["name"], pod["spec"]["nodeName"]))
        if job["metadata"]["name"] != "hooked":
            return None
        return 2.0, 0, f"all_reduce on {pod['spec']['nodeName']}\n"
    emu.job_behaviour = behaviour
    emu.add_job("hooked", parallelism=2, completions=2, indexed=True)

    def done(name):
        job = emu.api.get("batch/v1", "Job", name, "default")
        return any(c["type"] == "Complete" for c in job.get("status", {}).get("conditions", []))
    emu.wait_for(lambda: done("retry") and done("hooked"), 10, what="both jobs complete")
    assert emu.api.get("batch/v1", "Job", "retry", "default")["status"]["failed"] == 1
    hooked = emu.api.get("batch/v1", "Job", "hooked", "default")
    assert hooked["status"]["succeeded"] == 2 and hooked["status"]["completedIndexes"] == "0,1"
    pods = emu.api.pods("default", label_selector="job-name=hooked")
    logs = {emu.pod_log(p) for p in pods}
    assert logs == {f"all_reduce on {p['spec']['nodeName']}\n" for p in pods}
    assert sum(1 for name, _node in calls if name == "hooked") == 2


def test_daemonset_one_pod_per_eligible_node(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    emu.add_nodes(2, "cpu", name_prefix="cpu-")
    emu.cordon("gpu-0")
    emu.add_daemonset("device-plugin", node_selector={"nvidia.com/gpu.present": "true"})
    apps = client.AppsV1Api(k8s_client)
    emu.wait_for(lambda: _field(apps.read_namespaced_daemon_set("device-plugin", "kube-system"), "status", "number_ready") == 3, 10,
                 what="ds ready")
    pods = emu.api.pods("kube-system", label_selector="app=device-plugin")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["gpu-0", "gpu-1", "gpu-2"]
    assert pods[0]["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    emu.add_nodes(1, "h100-eks", name_prefix="gpu-new-")
    emu.wait_for(lambda: _field(apps.read_namespaced_daemon_set("device-plugin", "kube-system"), "status", "desired_number_scheduled") == 4, 10,
                 what="ds follows new node")
    emu.wait_for(lambda: len(_running(emu, "kube-system", "app=device-plugin")) == 4, 10, what="4 ds pods")


def test_statefulset_ordinal_pods_and_recreation(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    emu.add_nodes(2, "cpu")
    emu.add_statefulset("etcd", replicas=3)
    emu.wait_for(lambda: len(_running(emu, selector="app=etcd")) == 3, 10, what="3 etcd pods")
    assert sorted(p["metadata"]["name"] for p in _running(emu, selector="app=etcd")) == ["etcd-0", "etcd-1", "etcd-2"]
    old_uid = emu.api.get("v1", "Pod", "etcd-1", "default")["metadata"]["uid"]
    client.CoreV1Api(k8s_client).delete_namespaced_pod("etcd-1", "default")

    def recreated():
        pod = emu.api.find("v1", "Pod", "etcd-1", "default")
        return pod and pod["metadata"]["uid"] != old_uid and pod["status"].get("phase") == "Running"
    emu.wait_for(recreated, 10, what="etcd-1 recreated")
    client.AppsV1Api(k8s_client).patch_namespaced_stateful_set_scale("etcd", "default", {"spec": {"replicas": 1}})
    emu.wait_for(lambda: [p["metadata"]["name"] for p in emu.api.pods("default", label_selector="app=etcd")] == ["etcd-0"], 10,
                 what="scale down")


def test_garbage_collection_and_orphaning(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator
    emu.add_nodes(2, "cpu")
    emu.add_deployment("gc", replicas=2)
    emu.add_deployment("keep", replicas=1)
    emu.wait_for(lambda: len(_running(emu)) == 3, 10, what="3 pods")
    apps = client.AppsV1Api(k8s_client)
    apps.delete_namespaced_deployment("gc", "default")
    emu.wait_for(lambda: emu.api.pods("default", label_selector="app=gc") == [] and
                 emu.api.list("apps/v1", "ReplicaSet", "default", "app=gc") == [], 10, what="cascade")
    rs_name = emu.api.list("apps/v1", "ReplicaSet", "default", "app=keep")[0]["metadata"]["name"]
    apps.delete_namespaced_deployment("keep", "default", propagation_policy="Orphan")
    rs = emu.api.get("apps/v1", "ReplicaSet", rs_name, "default")
    assert not rs["metadata"].get("ownerReferences")
    emu.settle()
    pods = emu.api.pods("default", label_selector="app=keep")
    assert len(pods) == 1 and pods[0]["metadata"]["ownerReferences"][0]["name"] == rs_name


def test_node_profiles_carry_gpu_topology_labels(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    names = k8s_emulator.add_nodes(20, "gb200-eks") + k8s_emulator.add_nodes(1, "a100-aks")
    node = client.CoreV1Api(k8s_client).read_node(names[0])
    labels = node.metadata.labels
    assert labels["nvidia.com/gpu.count"] == "4" and labels["nvidia.com/gpu.present"] == "true"
    assert labels["nvidia.com/cuda.driver.major"] == "570" and labels["kubernetes.io/arch"] == "arm64"
    assert labels[RACK_LABEL] == "block-000" and labels[CLIQUE_LABEL].endswith(".0")
    assert client.CoreV1Api(k8s_client).read_node(names[19]).metadata.labels[CLIQUE_LABEL].endswith(".1")
    assert node.status.allocatable["nvidia.com/gpu"] == "4" and node.spec.provider_id.startswith("aws:///")
    assert node.status.node_info.kubelet_version.startswith("v1.31") and node.status.node_info.architecture == "arm64"
    aks = client.CoreV1Api(k8s_client).read_node(names[20])
    assert aks.spec.provider_id.startswith("azure:///subscriptions/") and aks.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
