# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""cluster_snapshot: node facts, summary, Snapshot measurements and criteria, against the emulator."""
from __future__ import annotations

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.cluster_snapshot import (
    collect_cluster_snapshot, node_facts, os_release_of, provider_of, snapshot_from_cluster, summarize_nodes,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import evaluate_constraints
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.snapshot import Snapshot
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.profiles import PROFILES, build_node
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name


@pytest.mark.parametrize("provider_id, expected", [
    ("aws:///us-east-1a/i-0abc", ("aws", "eks")), ("gce://proj/us-central1-a/n1", ("gce", "gke")),
    ("azure:///subscriptions/x/vm/1", ("azure", "aks")), ("oci://ocid1.instance.oc1", ("oci", "oke")),
    ("", (None, None)), ("metal://rack1/n1", ("metal", None)),
])
def test_provider_of(provider_id, expected):
    assert provider_of(provider_id) == expected


@pytest.mark.parametrize("image, expected", [
    ("Ubuntu 22.04.5 LTS", ("ubuntu", "22.04")), ("Amazon Linux 2023.7.20250512", ("amzn", "2023")),
    ("Container-Optimized OS from Google", ("cos", None)), ("Red Hat Enterprise Linux 9.4 (Plow)", ("rhel", "9.4")),
    ("Something Else 1", (None, None)),
])
def test_os_release_of(image, expected):
    assert os_release_of(image) == expected


def test_node_facts_from_gfd_labels():
    facts = node_facts(build_node(PROFILES["a100-aks"], 3, name_prefix="gpu-"))
    assert facts["name"] == "gpu-3" and facts["ready"] is True
    assert facts["gpu_product"] == "NVIDIA-A100-SXM4-40GB" and facts["gpu_count"] == 8
    assert facts["driver_version"] == "550.127.08" and facts["cuda_version"] == "12.4"
    assert facts["service"] == "aks" and facts["provider"] == "azure"
    assert facts["kernel_version"] == "5.15.0-1079-azure" and facts["kubelet_version"] == "v1.31.5"
    assert facts["os_id"] == "ubuntu" and facts["os_version"] == "22.04"
    cpu = node_facts(build_node(PROFILES["cpu"], 0))
    assert cpu["gpu_count"] == 0 and cpu["gpu_product"] is None and cpu["driver_version"] is None


def test_summary_and_variants_on_mixed_drivers():
    nodes = [build_node(PROFILES["h100-eks"], i) for i in range(3)] + [build_node(PROFILES["cpu"], 3)]
    nodes[1]["metadata"]["labels"]["nvidia.com/cuda.driver.major"] = "550"
    nodes[1]["metadata"]["labels"]["nvidia.com/cuda.driver.minor"] = "90"
    nodes[1]["metadata"]["labels"]["nvidia.com/cuda.driver.rev"] = "07"
    facts = [node_facts(n) for n in nodes]
    summary = summarize_nodes(facts)
    assert summary["nodes"] == 4 and summary["gpu_nodes"] == 3 and summary["gpus"] == 24
    assert summary["gpu_products"] == {"NVIDIA-H100-80GB-HBM3": {"nodes": 3, "gpus": 24}}
    assert summary["versions"]["driver"]["min"] == "550.90.07"
    assert summary["versions"]["driver"]["variants"] == ["550.90.07", "570.124.06"] and not summary["versions"]["driver"]["uniform"]
    snap = snapshot_from_cluster({"gitVersion": "v1.31.4-eks-2a8d8e5"}, facts)
    assert snap.get("GPU.smi.driver") == "550.90.07"
    assert set(snap.variants["GPU.smi.driver"].values()) == {"550.90.07", "570.124.06"}
    assert len(snap.hosts) == 3  # GPU nodes only
    assert "K8s.node.provider-id" not in snap.variants
    results = {r.name: r for r in evaluate_constraints([{"name": "GPU.smi.driver", "value": ">= 570"}], snap)}
    assert results["GPU.smi.driver"].status == "fail"


def test_collect_against_emulator(k8s_emulator):
    k8s_emulator.add_nodes(2, "h100-eks")
    k8s_emulator.add_nodes(1, "cpu")
    k8s_emulator.cordon(k8s_emulator.add_nodes(1, "h100-eks")[0])
    client = client_from_params({"kubeconfig": k8s_emulator.kubeconfig_path})
    out = collect_cluster_snapshot(client)
    snap = Snapshot.from_dict(out["snapshot"])
    assert snap.get("K8s.server.version") == "v1.31.4-eks-2a8d8e5"
    assert snap.get("GPU.smi.gpu.model") == "NVIDIA-H100-80GB-HBM3" and snap.get("GPU.smi.gpu-count") == 8
    assert snap.get("OS.release.ID") == "amzn" and snap.get("OS.sysctl./proc/sys/kernel/osrelease").startswith("6.1.134")
    assert out["criteria"]["service"] == "eks" and out["criteria"]["accelerator"] == "h100" and out["criteria"]["os"] == "amazonlinux"
    assert out["summary"]["nodes"] == 4 and out["summary"]["gpus"] == 24 and len(out["summary"]["unschedulable"]) == 1
    assert [n["name"] for n in out["nodes"]] == sorted(n["name"] for n in out["nodes"])
    assert client.stats == {"get version": 1, "list nodes": 1}


def test_label_selector_and_host_fact_merge(k8s_emulator):
    k8s_emulator.add_nodes(2, "h100-eks", labels={"pool": "a"})
    k8s_emulator.add_nodes(2, "a100-aks", labels={"pool": "b"})
    client = client_from_params({"kubeconfig": k8s_emulator.kubeconfig_path})
    facts = {"h1": {"ansible_facts": {"distribution": "Ubuntu", "distribution_version": "24.04"}}}
    out = collect_cluster_snapshot(client, "pool=b", host_facts=facts)
    assert {n["gpu_product"] for n in out["nodes"]} == {"NVIDIA-A100-SXM4-40GB"}
    assert out["snapshot"]["measurements"]["OS.release.VERSION_ID"] == "24.04"
    assert out["snapshot"]["sources"]["OS.release.VERSION_ID"].startswith("ansible_facts:")
    assert out["criteria"]["accelerator"] == "a100" and out["criteria"]["service"] == "aks"


def test_bad_selector_is_refused(k8s_emulator):
    client = client_from_params({"kubeconfig": k8s_emulator.kubeconfig_path})
    with pytest.raises(K8sInvalidName):
        collect_cluster_snapshot(client, "pool=$(reboot)")


def test_pagination(k8s_emulator):
    k8s_emulator.add_nodes(7, "cpu")
    client = client_from_params({"kubeconfig": k8s_emulator.kubeconfig_path})
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure.cluster_snapshot import list_nodes  # pylint: disable=import-outside-toplevel
    assert len(list_nodes(client, page_size=3)) == 7
    assert client.stats["list nodes"] >= 3


def test_criteria_infer_the_node_count(k8s_emulator):
    """The criteria carry the number of nodes the cluster shows: its GPU nodes (CPU nodes do not count)."""
    k8s_emulator.add_nodes(3, "h100-eks")
    k8s_emulator.add_nodes(2, "cpu")
    client = client_from_params({"kubeconfig": k8s_emulator.kubeconfig_path})
    out = collect_cluster_snapshot(client)
    assert out["snapshot"]["measurements"]["K8s.node.count"] == 3
    assert out["criteria"]["nodes"] == 3
    assert out["evidence"]["nodes"]["source"] == "K8s.node.count"
    host_facts = {"h%d" % i: {"ansible_facts": {"distribution": "Ubuntu"}} for i in range(5)}
    merged = collect_cluster_snapshot(client, host_facts=host_facts)
    assert merged["criteria"]["nodes"] == 3  # the cluster's count wins over the hosts list


def test_node_count_without_gpus_counts_every_node():
    facts = [node_facts(build_node(PROFILES["cpu"], i)) for i in range(2)]
    snap = snapshot_from_cluster({"gitVersion": "v1.31.0"}, facts)
    assert snap.get("K8s.node.count") == 2 and snap.sources["K8s.node.count"] == "kubernetes:nodes"
    assert snapshot_from_cluster({"gitVersion": "v1.31.0"}, []).get("K8s.node.count") is None
