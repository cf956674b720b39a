# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Node profiles: what a GPU (or CPU) node of a given cloud/instance type looks like (labels, capacity, nodeInfo, providerID).

GPU labels follow NVIDIA GPU Feature Discovery (``nvidia.com/gpu.*``, ``nvidia.com/cuda.*``); the rack is the
topograph block label ``network.topology.nvidia.com/block`` (and ``.../spine`` one level up); NVLink-domain
systems (GB200 NVL72) also carry ``nvidia.com/gpu.clique`` (``<cluster-uuid>.<clique-id>``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RACK_LABEL = "network.topology.nvidia.com/block"
SPINE_LABEL = "network.topology.nvidia.com/spine"
CLIQUE_LABEL = "nvidia.com/gpu.clique"


@dataclass(frozen=True)
class NodeProfile:
    """Static description of one node type."""

    name: str
    provider: str  # aws | azure | gce | none
    instance_type: str
    region: str
    zone: str
    cpu: str
    memory: str
    arch: str = "amd64"
    gpu_product: str = ""
    gpu_count: int = 0
    gpu_memory_mib: int = 0
    gpu_family: str = ""
    compute_capability: tuple[int, int] = (0, 0)
    driver: tuple[int, int, int] = (570, 124, 6)
    cuda_runtime: tuple[int, int] = (12, 8)
    os_image: str = "Amazon Linux 2023.7.20250512"
    kernel: str = "6.1.134-150.224.amzn2023.x86_64"
    kubelet: str = "v1.31.7-eks-473151a"
    runtime: str = "containerd://1.7.27"
    nodes_per_rack: int = 16
    racks_per_spine: int = 8
    nvlink_domain: int = 0  # nodes per NVLink clique (0 = no clique label)
    extra_labels: dict[str, str] = field(default_factory=dict)
    efa: int = 0

    @property
    def has_gpu(self) -> bool:
        """True for GPU profiles."""
        return self.gpu_count > 0


PROFILES: dict[str, NodeProfile] = {
    "h100-eks": NodeProfile("h100-eks", "aws", "p5.48xlarge", "us-east-1", "us-east-1a", "192", "2097152Mi",
                            gpu_product="NVIDIA-H100-80GB-HBM3", gpu_count=8, gpu_memory_mib=81559, gpu_family="hopper",
                            compute_capability=(9, 0), efa=32, nodes_per_rack=4),
    "h200-eks": NodeProfile("h200-eks", "aws", "p5en.48xlarge", "us-east-2", "us-east-2b", "192", "2097152Mi",
                            gpu_product="NVIDIA-H200", gpu_count=8, gpu_memory_mib=143771, gpu_family="hopper",
                            compute_capability=(9, 0), efa=16, nodes_per_rack=4),
    "gb200-eks": NodeProfile("gb200-eks", "aws", "p6e-gb200.36xlarge", "us-east-1", "us-east-1-dfw-2a", "144", "983040Mi",
                             arch="arm64", gpu_product="NVIDIA-GB200", gpu_count=4, gpu_memory_mib=189471, gpu_family="blackwell",
                             compute_capability=(10, 0), kernel="6.1.134-150.224.amzn2023.aarch64", efa=17,
                             nodes_per_rack=18, nvlink_domain=18),
    "a100-aks": NodeProfile("a100-aks", "azure", "Standard_ND96asr_v4", "eastus", "eastus-1", "96", "928Gi",
                            gpu_product="NVIDIA-A100-SXM4-40GB", gpu_count=8, gpu_memory_mib=40960, gpu_family="ampere",
                            compute_capability=(8, 0), driver=(550, 127, 8), cuda_runtime=(12, 4),
                            os_image="Ubuntu 22.04.5 LTS", kernel="5.15.0-1079-azure", kubelet="v1.31.5",
                            runtime="containerd://1.7.25-1", nodes_per_rack=8,
                            extra_labels={"kubernetes.azure.com/agentpool": "gpu", "kubernetes.azure.com/os-sku": "Ubuntu"}),
    "h100-gke": NodeProfile("h100-gke", "gce", "a3-highgpu-8g", "us-central1", "us-central1-a", "208", "1872Gi",
                            gpu_product="NVIDIA-H100-80GB-HBM3", gpu_count=8, gpu_memory_mib=81559, gpu_family="hopper",
                            compute_capability=(9, 0), driver=(550, 90, 7), cuda_runtime=(12, 4),
                            os_image="Container-Optimized OS from Google", kernel="6.1.100+", kubelet="v1.31.5-gke.1023000",
                            runtime="containerd://1.7.24", nodes_per_rack=4,
                            extra_labels={"cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
                                          "cloud.google.com/gke-nodepool": "gpu-pool"}),
    "cpu": NodeProfile("cpu", "aws", "m6i.4xlarge", "us-east-1", "us-east-1a", "16", "65536Mi", nodes_per_rack=32),
}


def _node_name(profile: NodeProfile, index: int, prefix: str | None) -> str:
    if prefix:
        return f"{prefix}{index}"
    if profile.provider == "aws":
        return f"ip-10-{(index // 65536) % 256}-{(index // 256) % 256}-{index % 256}.ec2.internal"
    if profile.provider == "azure":
        return f"aks-gpu-12345678-vmss{index:06x}"
    if profile.provider == "gce":
        return f"gke-dsxos-gpu-pool-5f1c2a9e-{index:04d}"
    return f"node-{index}"


def _provider_id(profile: NodeProfile, name: str, index: int) -> str:
    if profile.provider == "aws":
        return f"aws:///{profile.zone}/i-0{index:016x}"
    if profile.provider == "azure":
        return ("azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mc_dsxos_rg_eastus/providers/"
                f"Microsoft.Compute/virtualMachineScaleSets/aks-gpu-12345678-vmss/virtualMachines/{index}")
    if profile.provider == "gce":
        return f"gce://dsxos-project/{profile.zone}/{name}"
    return f"kind://docker/dsxos/{name}"


def build_node(profile: NodeProfile, index: int, name_prefix: str | None = None, labels: dict[str, str] | None = None,
               taints: list[dict[str, Any]] | None = None, cluster_uuid: str = "6a1e7c52-0d3f-4a5b-9c8e-2b7d1f0e9a34",
               name_index: int | None = None) -> dict[str, Any]:
    """A ready ``Node`` object for profile ``profile`` (the index-th node of the cluster; ``name_prefix`` + ``name_index`` names it)."""
    name = _node_name(profile, index if name_index is None else name_index, name_prefix)
    rack = index // max(1, profile.nodes_per_rack)
    node_labels: dict[str, str] = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": profile.arch,
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": profile.arch,
        "node.kubernetes.io/instance-type": profile.instance_type, "beta.kubernetes.io/instance-type": profile.instance_type,
        "topology.kubernetes.io/region": profile.region, "topology.kubernetes.io/zone": profile.zone,
        RACK_LABEL: f"block-{rack:03d}", SPINE_LABEL: f"spine-{rack // max(1, profile.racks_per_spine):02d}",
        "emulator.dsxos.io/profile": profile.name,
    }
    capacity = {"cpu": profile.cpu, "memory": profile.memory, "pods": "110", "ephemeral-storage": "1952560Mi",
                "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    if profile.has_gpu:
        driver_major, driver_minor, driver_rev = profile.driver
        node_labels.update({
            "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": profile.gpu_product,
            "nvidia.com/gpu.count": str(profile.gpu_count), "nvidia.com/gpu.memory": str(profile.gpu_memory_mib),
            "nvidia.com/gpu.family": profile.gpu_family, "nvidia.com/gpu.machine": profile.instance_type,
            "nvidia.com/gpu.compute.major": str(profile.compute_capability[0]),
            "nvidia.com/gpu.compute.minor": str(profile.compute_capability[1]),
            "nvidia.com/cuda.driver.major": str(driver_major), "nvidia.com/cuda.driver.minor": str(driver_minor),
            "nvidia.com/cuda.driver.rev": f"{driver_rev:02d}" if driver_rev < 10 else str(driver_rev),
            "nvidia.com/cuda.driver-version.full": f"{driver_major}.{driver_minor}.{driver_rev:02d}",
            "nvidia.com/cuda.runtime.major": str(profile.cuda_runtime[0]),
            "nvidia.com/cuda.runtime.minor": str(profile.cuda_runtime[1]),
            "nvidia.com/cuda.runtime-version.full": f"{profile.cuda_runtime[0]}.{profile.cuda_runtime[1]}",
            "nvidia.com/mig.capable": "true" if profile.gpu_family in ("ampere", "hopper", "blackwell") else "false",
            "nvidia.com/gpu.deploy.driver": "pre-installed",
        })
        if profile.nvlink_domain:
            node_labels[CLIQUE_LABEL] = f"{cluster_uuid}.{index // profile.nvlink_domain}"
        capacity["nvidia.com/gpu"] = str(profile.gpu_count)
        if profile.efa:
            capacity["vpc.amazonaws.com/efa"] = str(profile.efa)
    node_labels.update(profile.extra_labels)
    node_labels.update(labels or {})
    allocatable = dict(capacity)
    allocatable["cpu"] = str(int(profile.cpu) - 1) if profile.cpu.isdigit() else profile.cpu
    ip = f"10.{(index // 65536) % 256}.{(index // 256) % 256}.{index % 256}"
    spec: dict[str, Any] = {"providerID": _provider_id(profile, name, index)}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": node_labels,
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": spec,
        "status": {
            "capacity": capacity, "allocatable": allocatable,
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"},
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "machineID": f"ec2{index:029x}", "systemUUID": f"ec2{index:05x}-0000-0000-0000-000000000000",
                "bootID": f"{index:08x}-1111-2222-3333-444444444444", "kernelVersion": profile.kernel, "osImage": profile.os_image,
                "containerRuntimeVersion": profile.runtime, "kubeletVersion": profile.kubelet,
                "kubeProxyVersion": profile.kubelet, "operatingSystem": "linux", "architecture": profile.arch,
            },
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
