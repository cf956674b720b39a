# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Snapshots: builders, merge, round trip, criteria inference."""
from __future__ import annotations

import json

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import evaluate_constraints
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import ConstraintError, RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import Criteria
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml, load_yaml_text
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.snapshot import (
    OS_KERNEL, Snapshot, accelerator_from_product, infer_criteria, infer_criteria_with_evidence, os_from_release,
    snapshot_from_aicr, snapshot_from_host_facts, snapshot_from_values, sysctl_path,
)


def _host(distribution="Ubuntu", version="24.04", kernel="6.8.0-1015-aws", **extra):
    facts = {"distribution": distribution, "distribution_version": version,
             "distribution_major_version": version.split(".")[0], "os_family": "Debian",
             "kernel": kernel, "architecture": "x86_64"}
    out = {"ansible_facts": facts}
    out.update(extra)
    return out


# ----------------------------------------------------------------------------- host facts

def test_snapshot_from_host_facts_keys_and_sources():
    snap = snapshot_from_host_facts({"gpu-1": _host(dsxos_sysctl={"net.core.rmem_max": "16777216",
                                                                  "/proc/sys/vm/swappiness": " 0 "}),
                                     "gpu-2": _host()})
    assert snap.hosts == ["gpu-1", "gpu-2"]
    assert snap.measurements["OS.release.ID"] == "ubuntu"
    assert snap.measurements["OS.release.VERSION_ID"] == "24.04"
    assert snap.measurements["OS.host.distribution"] == "Ubuntu"
    assert snap.measurements["OS.host.distribution_major_version"] == "24"
    assert snap.measurements["OS.host.os_family"] == "Debian"
    assert snap.measurements["OS.host.architecture"] == "x86_64"
    assert snap.measurements[OS_KERNEL] == "6.8.0-1015-aws"
    assert snap.measurements["OS.sysctl./proc/sys/net/core/rmem_max"] == "16777216"
    assert snap.measurements["OS.sysctl./proc/sys/vm/swappiness"] == "0"
    assert snap.sources["OS.release.ID"] == "ansible_facts:gpu-1,gpu-2"
    assert snap.sources["OS.sysctl./proc/sys/vm/swappiness"] == "ansible_facts:gpu-1"
    assert snap.variants == {}


def test_snapshot_from_injected_fact_variables_and_skipped_hosts():
    snap = snapshot_from_host_facts({
        "node": {"ansible_distribution": "RedHat", "ansible_distribution_version": "9.4", "ansible_kernel": "5.14.0-427.el9"},
        "no-facts": {"inventory_hostname": "no-facts"},
    })
    assert snap.hosts == ["node"]
    assert snap.measurements["OS.release.ID"] == "rhel"
    assert snap.measurements["OS.release.VERSION_ID"] == "9.4"
    assert snap.measurements[OS_KERNEL] == "5.14.0-427.el9"


@pytest.mark.parametrize("distribution,release_id", [
    ("Ubuntu", "ubuntu"), ("RedHat", "rhel"), ("Rocky", "rocky"), ("CentOS", "centos"), ("Amazon", "amzn"),
    ("SLES", "sles"), ("Debian", "debian"), ("Some New OS", "some-new-os"),
])
def test_distribution_fact_maps_to_os_release_id(distribution, release_id):
    snap = snapshot_from_host_facts({"h": _host(distribution=distribution)})
    assert snap.measurements["OS.release.ID"] == release_id


def test_heterogeneous_hosts_record_minimum_and_variants():
    snap = snapshot_from_host_facts({
        "gpu-a": _host(kernel="6.8.0-1015-aws"),
        "gpu-b": _host(kernel="6.5.0-1020-aws"),
        "gpu-c": _host(kernel="6.8.0-1015-aws"),
    })
    assert snap.measurements[OS_KERNEL] == "6.5.0-1020-aws"
    assert snap.variants[OS_KERNEL] == {"gpu-a": "6.8.0-1015-aws", "gpu-b": "6.5.0-1020-aws", "gpu-c": "6.8.0-1015-aws"}
    assert snap.is_heterogeneous(OS_KERNEL)
    assert not snap.is_heterogeneous("OS.release.ID")
    result = evaluate_constraints([{"name": OS_KERNEL, "value": ">= 6.8"}], snap)[0]
    assert result.status == "fail"
    assert result.measured == "6.5.0-1020-aws"
    assert "on gpu-b" in result.message
    assert "hosts differ" in result.message


def test_heterogeneous_non_versions_pick_most_common():
    snap = snapshot_from_host_facts({"a": _host(distribution="Ubuntu"), "b": _host(distribution="RedHat"),
                                     "c": _host(distribution="Ubuntu")})
    assert snap.measurements["OS.release.ID"] == "ubuntu"
    assert snap.variants["OS.release.ID"] == {"a": "ubuntu", "b": "rhel", "c": "ubuntu"}
    result = evaluate_constraints([{"name": "OS.release.ID", "value": "ubuntu"}], snap)[0]
    assert result.status == "fail" and "on b" in result.message


def test_many_hosts_source_is_abbreviated():
    snap = snapshot_from_host_facts({"n%02d" % i: _host() for i in range(8)})
    assert snap.sources["OS.release.ID"] == "ansible_facts:n00,n01,n02,n03,n04 and 3 more"


def test_bad_hostvars_are_schema_errors():
    with pytest.raises(RecipeSchemaError, match="hostvars"):
        snapshot_from_host_facts(["a"])
    with pytest.raises(RecipeSchemaError) as info:
        snapshot_from_host_facts({"h": _host(dsxos_sysctl=["kernel.osrelease"])})
    assert "hostvars[h].dsxos_sysctl" in str(info.value)
    with pytest.raises(RecipeSchemaError, match=r"hostvars\[h\]"):
        snapshot_from_host_facts({"h": "Ubuntu"})


def test_sysctl_path():
    assert sysctl_path("kernel.osrelease") == "/proc/sys/kernel/osrelease"
    assert sysctl_path("/proc/sys/kernel/osrelease") == "/proc/sys/kernel/osrelease"


# ----------------------------------------------------------------------------- values, merge, round trip

def test_snapshot_from_values_and_bad_names():
    snap = snapshot_from_values({"K8s.server.version": "v1.31.2", "Network.ib.bandwidth": 390.5})
    assert snap.sources == {"K8s.server.version": "user", "Network.ib.bandwidth": "user"}
    with pytest.raises(ConstraintError) as info:
        snapshot_from_values({"K8s.version": "1.30"})
    assert "K8s.version" in str(info.value)
    with pytest.raises(RecipeSchemaError):
        snapshot_from_values(["K8s.server.version"])


def test_merge_later_wins_and_records_source():
    facts = snapshot_from_host_facts({"a": _host(kernel="6.8.0"), "b": _host(kernel="6.5.0")})
    user = snapshot_from_values({OS_KERNEL: "6.9.0", "K8s.server.version": "1.31.0"}, source="user")
    merged = facts.merge(user)
    assert merged.measurements[OS_KERNEL] == "6.9.0"
    assert merged.sources[OS_KERNEL] == "user"
    assert OS_KERNEL not in merged.variants
    assert merged.measurements["OS.release.ID"] == "ubuntu"
    assert merged.hosts == ["a", "b"]
    # the operands are unchanged
    assert facts.measurements[OS_KERNEL] == "6.5.0" and OS_KERNEL in facts.variants
    back = user.merge(facts)
    assert back.measurements[OS_KERNEL] == "6.5.0"
    assert back.variants[OS_KERNEL] == {"a": "6.8.0", "b": "6.5.0"}
    assert back.measurements["K8s.server.version"] == "1.31.0"
    with pytest.raises(RecipeSchemaError):
        facts.merge({"a.b.c": 1})


def test_round_trip_through_dict_json_and_yaml():
    snap = snapshot_from_host_facts({"a": _host(kernel="6.8.0"), "b": _host(kernel="6.5.0")}).merge(
        snapshot_from_values({"GPU.smi.gpu-count": 8, "Network.ib.bandwidth": 390.5}))
    data = snap.to_dict()
    assert data["kind"] == "Snapshot"
    assert Snapshot.from_dict(data) == snap
    assert Snapshot.from_dict(json.loads(json.dumps(data))) == snap
    assert Snapshot.from_dict(load_yaml_text(dump_yaml(data))) == snap


def test_from_dict_flat_mapping_and_errors():
    snap = Snapshot.from_dict({"K8s.server.version": "1.31"})
    assert snap.measurements == {"K8s.server.version": "1.31"} and snap.sources["K8s.server.version"] == "user"
    with pytest.raises(RecipeSchemaError, match="measurements"):
        Snapshot.from_dict({"kind": "Snapshot", "measurements": "nope"})
    with pytest.raises(RecipeSchemaError, match="variants"):
        Snapshot.from_dict({"measurements": {}, "variants": {"a.b.c": "x"}})
    with pytest.raises(RecipeSchemaError, match="hosts"):
        Snapshot.from_dict({"measurements": {}, "hosts": "a"})
    with pytest.raises(RecipeSchemaError, match="sources"):
        Snapshot.from_dict({"measurements": {}, "sources": ["x"]})
    with pytest.raises(RecipeSchemaError):
        Snapshot.from_dict("K8s.server.version")


def test_aicr_snapshot_document_is_flattened():
    document = load_yaml_text("""
kind: Snapshot
measurements:
  - type: K8s
    subtypes:
      - subtype: server
        data: {version: v1.33.5-eks-3025e55}
  - type: GPU
    subtypes:
      - subtype: smi
        data: {driver: 570.133.20, gpu.model: NVIDIA H100 80GB HBM3, gpu-count: 8}
  - type: OS
    subtypes:
      - subtype: release
        data: {ID: ubuntu, VERSION_ID: "24.04"}
      - subtype: sysctl
        data: {/proc/sys/kernel/osrelease: 6.8.0-1015-aws}
""")
    snap = Snapshot.from_dict(document)
    assert snap.measurements["GPU.smi.gpu.model"] == "NVIDIA H100 80GB HBM3"
    assert snap.measurements["OS.sysctl./proc/sys/kernel/osrelease"] == "6.8.0-1015-aws"
    assert snap.sources["K8s.server.version"] == "user"
    assert snapshot_from_aicr(document).sources["K8s.server.version"] == "aicr"
    assert infer_criteria(snap).to_dict() == {"service": "eks", "accelerator": "h100", "os": "ubuntu",
                                              "intent": "any", "platform": "any", "nodes": 0}
    with pytest.raises(RecipeSchemaError, match=r"measurements\[0\]"):
        snapshot_from_aicr({"measurements": [{"subtypes": []}]})
    with pytest.raises(RecipeSchemaError, match=r"subtypes\[0\]"):
        snapshot_from_aicr({"measurements": [{"type": "K8s", "subtypes": [{"data": {}}]}]})


# ----------------------------------------------------------------------------- inference

@pytest.mark.parametrize("product,accelerator", [
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H100 NVL", "h100"), ("NVIDIA-H100-80GB-HBM3", "h100"),
    ("NVIDIA H200", "h200"), ("NVIDIA H200 NVL", "h200"),
    ("NVIDIA GB200", "gb200"), ("NVIDIA-GB200", "gb200"), ("NVIDIA B200", "b200"),
    ("NVIDIA GB300", "gb300"), ("NVIDIA B300 SXM6 AC", "b300"),
    ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA A100 80GB PCIe", "a100"),
    ("NVIDIA L40S", "l40s"), ("NVIDIA L40", "l40"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
])
def test_accelerator_from_product(product, accelerator):
    assert accelerator_from_product(product) == accelerator


@pytest.mark.parametrize("product", ["NVIDIA GH200 480GB", "Tesla T4", "", None, "NVIDIA A10G"])
def test_accelerator_not_recognised(product):
    assert accelerator_from_product(product) is None


@pytest.mark.parametrize("release,expected", [
    ("ubuntu", "ubuntu"), ("rhel", "rhel"), ("redhat", "rhel"), ("rocky", "rhel"), ("centos", "rhel"),
    ("cos", "cos"), ("Container-Optimized OS from Google", "cos"), ("amzn", "amazonlinux"), ("amazon", "amazonlinux"),
    ("Amazon Linux 2023", "amazonlinux"), ("Ubuntu 22.04.4 LTS", "ubuntu"), ("talos", "talos"), ("sles", "sles"),
])
def test_os_from_release(release, expected):
    assert os_from_release(release)[0] == expected


def test_os_from_release_unknown_and_note():
    assert os_from_release("gentoo") == (None, "")
    assert os_from_release("rocky")[1] == "RHEL-compatible distribution"


@pytest.mark.parametrize("values,service", [
    ({"K8s.node.provider-id": "aws:///us-west-2a/i-0abc"}, "eks"),
    ({"K8s.node.provider-id": "gce://project/us-central1-a/node"}, "gke"),
    ({"K8s.node.provider-id": "azure:///subscriptions/x/resourceGroups/y"}, "aks"),
    ({"K8s.node.provider-id": "oci://ocid1.instance.oc1.iad.abc"}, "oke"),
    ({"K8s.server.version": "v1.33.5-eks-3025e55"}, "eks"),
    ({"K8s.server.version": "v1.32.2-gke.1182003"}, "gke"),
    ({"K8s.server.version": "v1.31.2"}, "any"),
    ({}, "any"),
    ({"K8s.server.service": "self-managed", "K8s.node.provider-id": "aws:///x/i-1"}, "self-managed"),
    ({"Deployment.cluster.service": "self-managed"}, "self-managed"),
    ({"K8s.node.provider": "gce"}, "gke"),
])
def test_service_inference(values, service):
    criteria, evidence = infer_criteria_with_evidence(snapshot_from_values(values))
    assert criteria.service == service
    assert evidence["service"]["value"] == service
    if service != "any":
        assert evidence["service"]["source"] in values


def test_infer_criteria_with_evidence_full():
    snap = snapshot_from_values({
        "GPU.smi.gpu.model": "NVIDIA H100 80GB HBM3", "OS.release.ID": "rocky",
        "K8s.node.provider-id": "aws:///us-west-2a/i-0abc",
    })
    criteria, evidence = infer_criteria_with_evidence(snap)
    assert criteria == Criteria(service="eks", accelerator="h100", os="rhel")
    assert evidence["accelerator"] == {"value": "h100", "source": "GPU.smi.gpu.model", "raw": "NVIDIA H100 80GB HBM3",
                                       "note": ""}
    assert evidence["os"]["note"] == "RHEL-compatible distribution"
    assert evidence["intent"]["value"] == "any" and evidence["platform"]["value"] == "any"
    assert infer_criteria(snap.to_dict()) == criteria


def test_inference_falls_back_to_node_label_and_os_image():
    snap = snapshot_from_values({"K8s.node.nvidia.com/gpu.product": "NVIDIA-GB200",
                                 "K8s.node.os-image": "Ubuntu 24.04.1 LTS"})
    criteria, evidence = infer_criteria_with_evidence(snap)
    assert (criteria.accelerator, criteria.os) == ("gb200", "ubuntu")
    assert evidence["accelerator"]["source"] == "K8s.node.nvidia.com/gpu.product"
    assert evidence["os"]["source"] == "K8s.node.os-image"


def test_inference_unrecognised_values_stay_any_with_evidence():
    criteria, evidence = infer_criteria_with_evidence({"GPU.smi.gpu.model": "Tesla T4", "OS.release.ID": "gentoo"})
    assert (criteria.accelerator, criteria.os, criteria.service) == ("any", "any", "any")
    assert evidence["accelerator"]["note"] == "GPU product not recognised"
    assert evidence["accelerator"]["raw"] == "Tesla T4"
    assert evidence["os"]["note"] == "OS not recognised"


def test_inference_notes_heterogeneous_hosts():
    snap = Snapshot(measurements={"GPU.smi.gpu.model": "NVIDIA H100 80GB HBM3", "OS.release.ID": "ubuntu"},
                    variants={"GPU.smi.gpu.model": {"a": "NVIDIA H100 80GB HBM3", "b": "NVIDIA H200"},
                              "OS.release.ID": {"a": "ubuntu", "b": "rhel"}})
    evidence = infer_criteria_with_evidence(snap)[1]
    assert evidence["accelerator"]["note"] == "hosts also report: h200"
    assert "hosts differ: rhel, ubuntu" in evidence["os"]["note"]


def test_inference_from_host_facts():
    criteria = infer_criteria(snapshot_from_host_facts({"a": _host(distribution="Amazon", version="2023")}))
    assert criteria.os == "amazonlinux"


def test_infer_criteria_counts_nodes():
    """nodes: the K8s.node.count measurement, else the hosts measured, else 0 (any)."""
    hosts = snapshot_from_host_facts({"a": _host(distribution="Ubuntu", version="22.04"),
                                      "b": _host(distribution="Ubuntu", version="22.04")})
    criteria, evidence = infer_criteria_with_evidence(hosts)
    assert criteria.nodes == 2 and evidence["nodes"]["source"] == "hosts"
    counted = Snapshot.from_dict({"measurements": {"K8s.node.count": "16"}})
    assert infer_criteria(counted).nodes == 16
    assert infer_criteria(Snapshot.from_dict({"measurements": {"K8s.node.count": "many"}})).nodes == 0
    assert infer_criteria({"OS.release.ID": "ubuntu"}).nodes == 0
