# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Read a Kubernetes cluster into node facts, a summary and a :class:`Snapshot` (read-only).

* :func:`node_facts` - one Node object (API JSON form) -> GPU product/count, driver/CUDA (GPU Feature Discovery labels),
  kernel, OS image, runtime, kubelet, providerID and the managed service it implies;
* :func:`summarize_nodes` - counts per GPU product, minimum and variants of every version;
* :func:`snapshot_from_cluster` - the measurements ``constraint_check`` / ``recipe_resolve`` understand
  (``K8s.server.version``, ``K8s.node.*``, ``GPU.smi.*``, ``OS.release.*``, kernel) with per-node variants;
* :func:`collect_cluster_snapshot` - all of it from a live Kubernetes client (:class:`KubeApi`), merged with host facts/snapshots.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_label_selector
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.snapshot import (
    GPU_COUNT, GPU_CUDA, GPU_DRIVER, GPU_MODEL, K8S_NODE_GPU_PRODUCT, K8S_NODE_KERNEL, K8S_NODE_OS_IMAGE, K8S_NODE_PROVIDER,
    K8S_NODE_COUNT, K8S_NODE_PROVIDER_ID, K8S_SERVER_VERSION, OS_ARCHITECTURE, OS_KERNEL, OS_RELEASE_ID, OS_RELEASE_VERSION_ID, Snapshot,
    infer_criteria_with_evidence, representative_value, snapshot_from_host_facts,
)

LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_GPU_COUNT = "nvidia.com/gpu.count"
LABEL_GPU_MEMORY = "nvidia.com/gpu.memory"
LABEL_GPU_FAMILY = "nvidia.com/gpu.family"
LABEL_DRIVER = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev")
LABEL_CUDA = ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
K8S_NODE_KUBELET = "K8s.node.kubelet-version"
K8S_NODE_RUNTIME = "K8s.node.container-runtime-version"
K8S_NODE_GPU_COUNT = "K8s.node.nvidia.com/gpu.count"
SOURCE_PREFIX = "kubernetes"
#: per-node identities: different on every node by design, so never reported as variants
_NO_VARIANTS = frozenset({K8S_NODE_PROVIDER_ID})

#: providerID scheme -> managed Kubernetes service
PROVIDER_SERVICES = {"aws": "eks", "gce": "gke", "azure": "aks", "oci": "oke", "kind": "kind"}
_ARCH_NAMES = {"amd64": "x86_64", "arm64": "aarch64"}
#: (os-release ID, pattern on the lower-cased osImage) in matching order
_OS_IMAGES = (
    ("rhcos", r"red hat enterprise linux coreos"), ("rhel", r"red hat enterprise linux"), ("ubuntu", r"ubuntu"),
    ("amzn", r"amazon linux|bottlerocket"), ("cos", r"container-optimized os"), ("rocky", r"rocky linux"),
    ("almalinux", r"almalinux"), ("centos", r"centos"), ("sles", r"suse linux enterprise"), ("talos", r"talos"),
    ("flatcar", r"flatcar"), ("debian", r"debian"),
)
#: summary version fields: fact key -> summary key
_VERSION_FIELDS = (("driver_version", "driver"), ("cuda_version", "cuda"), ("kernel_version", "kernel"),
                   ("kubelet_version", "kubelet"), ("container_runtime_version", "container_runtime"), ("os_image", "os_image"))


def _int(value: Any) -> Optional[int]:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def provider_of(provider_id: str) -> tuple[Optional[str], Optional[str]]:
    """``aws:///us-east-1a/i-0abc`` -> (``aws``, ``eks``); (None, None) when empty/unknown."""
    match = re.match(r"^([a-z0-9-]+)://", provider_id or "")
    if not match:
        return None, None
    scheme = match.group(1)
    return scheme, PROVIDER_SERVICES.get(scheme)


def os_release_of(os_image: str) -> tuple[Optional[str], Optional[str]]:
    """``Ubuntu 22.04.5 LTS`` -> (``ubuntu``, ``22.04``); ``Amazon Linux 2023.7.20250512`` -> (``amzn``, ``2023``)."""
    text = (os_image or "").strip().lower()
    for os_id, pattern in _OS_IMAGES:
        if re.search(pattern, text):
            version = re.search(r"(\d+(?:\.\d+)?)", text)
            value = version.group(1) if version else None
            if value and os_id == "amzn":
                value = value.split(".", 1)[0]
            return os_id, value
    return None, None


def _driver_version(labels: Mapping[str, str]) -> Optional[str]:
    full = labels.get("nvidia.com/cuda.driver-version.full")
    parts = [labels.get(key) for key in LABEL_DRIVER]
    if all(parts):
        return ".".join(str(p) for p in parts)
    if full:
        return str(full)
    if parts[0] and parts[1]:
        return f"{parts[0]}.{parts[1]}"
    return None


def _cuda_version(labels: Mapping[str, str]) -> Optional[str]:
    major, minor = (labels.get(key) for key in LABEL_CUDA)
    if major and minor:
        return f"{major}.{minor}"
    return labels.get("nvidia.com/cuda.runtime-version.full") or None


def _condition(node: Mapping[str, Any], kind: str) -> Optional[str]:
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return cond.get("status")
    return None


def node_facts(node: Mapping[str, Any]) -> dict[str, Any]:
    """Facts of one Node (API JSON form: ``metadata``, ``spec``, ``status``)."""
    meta = node.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    capacity = status.get("capacity") or {}
    provider_id = spec.get("providerID") or ""
    provider, service = provider_of(provider_id)
    os_id, os_version = os_release_of(info.get("osImage") or "")
    gpu_count = _int(labels.get(LABEL_GPU_COUNT))
    if gpu_count is None:
        gpu_count = _int(capacity.get("nvidia.com/gpu")) or 0
    gpu_labels = {k: v for k, v in sorted(labels.items()) if k.startswith(("nvidia.com/", "network.topology.nvidia.com/"))}
    return {
        "name": meta.get("name"),
        "ready": _condition(node, "Ready") == "True",
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [dict(t) for t in spec.get("taints") or ()],
        "gpu_product": labels.get(LABEL_GPU_PRODUCT),
        "gpu_count": gpu_count,
        "gpu_memory_mib": _int(labels.get(LABEL_GPU_MEMORY)),
        "gpu_family": labels.get(LABEL_GPU_FAMILY),
        "driver_version": _driver_version(labels),
        "cuda_version": _cuda_version(labels),
        "kernel_version": info.get("kernelVersion"),
        "os_image": info.get("osImage"),
        "os_id": os_id,
        "os_version": os_version,
        "architecture": info.get("architecture") or labels.get("kubernetes.io/arch"),
        "container_runtime_version": info.get("containerRuntimeVersion"),
        "kubelet_version": info.get("kubeletVersion"),
        "provider_id": provider_id or None,
        "provider": provider,
        "service": service,
        "instance_type": labels.get("node.kubernetes.io/instance-type"),
        "zone": labels.get("topology.kubernetes.io/zone"),
        "gpu_labels": gpu_labels,
    }


def summarize_nodes(facts: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts per GPU product, minimum and distinct values of each version, readiness and services."""
    gpu_nodes = [f for f in facts if f.get("gpu_count")]
    products: dict[str, dict[str, int]] = {}
    for fact in gpu_nodes:
        entry = products.setdefault(str(fact.get("gpu_product") or "unknown"), {"nodes": 0, "gpus": 0})
        entry["nodes"] += 1
        entry["gpus"] += int(fact.get("gpu_count") or 0)
    versions: dict[str, dict[str, Any]] = {}
    scope = gpu_nodes or list(facts)
    for key, out in _VERSION_FIELDS:
        values = [f.get(key) for f in scope if f.get(key)]
        if values:
            variants = sorted({str(v) for v in values})
            versions[out] = {"min": representative_value(sorted(values, key=str)), "variants": variants, "uniform": len(variants) == 1}
    return {
        "nodes": len(facts),
        "gpu_nodes": len(gpu_nodes),
        "gpus": sum(int(f.get("gpu_count") or 0) for f in gpu_nodes),
        "ready": sum(1 for f in facts if f.get("ready")),
        "not_ready": sorted(str(f.get("name")) for f in facts if not f.get("ready")),
        "unschedulable": sorted(str(f.get("name")) for f in facts if f.get("unschedulable")),
        "gpu_products": dict(sorted(products.items())),
        "services": sorted({str(f["service"]) for f in facts if f.get("service")}),
        "versions": versions,
    }


def _node_measurements(fact: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pairs = (
        (K8S_NODE_PROVIDER_ID, fact.get("provider_id")), (K8S_NODE_PROVIDER, fact.get("provider")),
        (K8S_NODE_OS_IMAGE, fact.get("os_image")), (K8S_NODE_KERNEL, fact.get("kernel_version")),
        (K8S_NODE_KUBELET, fact.get("kubelet_version")), (K8S_NODE_RUNTIME, fact.get("container_runtime_version")),
        (OS_KERNEL, fact.get("kernel_version")), (OS_RELEASE_ID, fact.get("os_id")), (OS_RELEASE_VERSION_ID, fact.get("os_version")),
        (OS_ARCHITECTURE, _ARCH_NAMES.get(str(fact.get("architecture")), fact.get("architecture"))),
    )
    for name, value in pairs:
        if value not in (None, ""):
            out[name] = value
    if fact.get("gpu_count"):
        for name, value in ((K8S_NODE_GPU_PRODUCT, fact.get("gpu_product")), (GPU_MODEL, fact.get("gpu_product")),
                            (K8S_NODE_GPU_COUNT, str(fact.get("gpu_count"))), (GPU_COUNT, int(fact.get("gpu_count") or 0)),
                            (GPU_DRIVER, fact.get("driver_version")), (GPU_CUDA, fact.get("cuda_version"))):
            if value not in (None, ""):
                out[name] = value
    return out


def snapshot_from_cluster(version: Mapping[str, Any], facts: list[Mapping[str, Any]]) -> Snapshot:
    """A :class:`Snapshot` from the server version document and node facts.

    Node measurements come from the GPU nodes when there are any (the recipe targets them), else from every node;
    when nodes disagree the value is the lowest version (or the most common value) and ``variants`` lists each node's.
    """
    snap = Snapshot()
    git_version = version.get("gitVersion") or version.get("git_version")
    if git_version:
        snap.measurements[K8S_SERVER_VERSION] = str(git_version)
        snap.sources[K8S_SERVER_VERSION] = f"{SOURCE_PREFIX}:/version"
    scope = [f for f in facts if f.get("gpu_count")] or list(facts)
    per_name: dict[str, dict[str, Any]] = {}
    for fact in scope:
        for name, value in _node_measurements(fact).items():
            per_name.setdefault(name, {})[str(fact.get("name"))] = value
    for name in sorted(per_name):
        values = per_name[name]
        snap.measurements[name] = representative_value(sorted(values.values(), key=str))
        nodes = sorted(values)
        listed = ",".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
        snap.sources[name] = f"{SOURCE_PREFIX}:{listed}"
        if name not in _NO_VARIANTS and len({repr(v) for v in values.values()}) > 1:
            snap.variants[name] = dict(sorted(values.items()))
    snap.hosts = sorted(str(f.get("name")) for f in scope)
    if scope:
        snap.measurements[K8S_NODE_COUNT] = len(scope)
        snap.sources[K8S_NODE_COUNT] = f"{SOURCE_PREFIX}:{'GPU nodes' if any(f.get('gpu_count') for f in scope) else 'nodes'}"
    return snap


def list_nodes(client: KubeApi, label_selector: str = "", page_size: int = 500) -> list[dict[str, Any]]:
    """Every Node matching the selector, as API JSON dicts (paginated)."""
    nodes: list[dict[str, Any]] = []
    token: Optional[str] = None
    while True:
        kwargs: dict[str, Any] = {"limit": page_size}
        if label_selector:
            kwargs["label_selector"] = label_selector
        if token:
            kwargs["_continue"] = token
        page = client.call("list", "nodes", client.core.list_node, **kwargs)
        nodes.extend(client.to_plain(item) for item in page.items or ())
        token = getattr(page.metadata, "_continue", None) if page.metadata is not None else None
        if not token:
            return nodes


def collect_cluster_snapshot(client: KubeApi, label_selector: str = "", host_facts: Optional[Mapping[str, Any]] = None,
                             extra_snapshot: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """Read version + nodes; return ``{snapshot, nodes, summary, criteria, evidence, server_version}``.

    ``host_facts`` (Ansible hostvars) and then ``extra_snapshot`` (a snapshot dict, e.g. NVML measurements) are merged
    over the cluster's measurements with :meth:`Snapshot.merge` (they win on the names they have).
    """
    selector = validate_label_selector(label_selector or "")
    version = client.to_plain(client.call("get", "version", client.version.get_code)) or {}
    facts = [node_facts(node) for node in list_nodes(client, selector)]
    facts.sort(key=lambda f: str(f.get("name")))
    snap = snapshot_from_cluster(version, facts)
    if host_facts:
        snap = snap.merge(snapshot_from_host_facts(host_facts))
    if extra_snapshot:
        snap = snap.merge(Snapshot.from_dict(extra_snapshot))
    criteria, evidence = infer_criteria_with_evidence(snap)
    return {
        "server_version": version.get("gitVersion"),
        "snapshot": snap.to_dict(),
        "nodes": facts,
        "summary": summarize_nodes(facts),
        "criteria": criteria.to_dict(),
        "evidence": evidence,
    }
