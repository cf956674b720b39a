# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Certify on Kubernetes: the Job runner, node certification labels and the certify role, against both Kubernetes
backends (``k8s_cluster``: the emulator and the real control plane, whose real Job controller and scheduler run the
Jobs on simulated nodes).

Job pods take their log text from the fabric simulator through the backend's Job behaviour hook: the pod of
completion index 0 prints the nccl-tests output of the Job's nodes (annotation ``dsxos.io/certify-nodes``). Kubernetes
1.20 has no Indexed Jobs (the field is dropped): there every pod of a multi-node Job has no index, counts as index 0 and
prints the output; the runner reads the log of one of them.
"""
from __future__ import annotations

import json
import os
import re

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_rounds import certify_nccl, nodes_from_params, validate_config
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import run_certify_nccl, run_node_certification
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_kubernetes import (
    ANNOTATION_COLLECTIVE, ANNOTATION_NODES, INDEX_ANNOTATION, LABEL_JOB, KubernetesRunner, build_job, job_name,
    kube_options_from_params)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_rounds import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.node_certification import (
    ANNOTATION_REASON, LABEL_CERTIFIED_AT, LABEL_VALID_UNTIL, LABEL_VERDICT, aggregate_certification, certification_summary,
    normalize_result, validate_input)
from ansible_collections.dsxos.cluster.tests.harness.fabric_sim import FabricSimulator

NAMESPACE = "dsxos-certify"


def fabric_cluster(emu, count=8, hang=(), **sim_kwargs):
    """Nodes gpu-1..gpu-N and a Job hook answering with simulated nccl-tests output (``hang`` nodes never finish)."""
    names = emu.add_nodes(count, "h100-eks", name_prefix="gpu-", start_index=1)
    sim = FabricSimulator(names, **sim_kwargs)
    placements = []

    def behaviour(job, pod):
        annotations = job["metadata"].get("annotations") or {}
        nodes = annotations[ANNOTATION_NODES].split(",")
        placements.append((job["metadata"]["name"], nodes, pod["spec"].get("nodeName")))
        if set(nodes) & set(hang):
            return 100000.0, 0, "# nccl-tests version 2.13.10\n"
        index = (pod["metadata"].get("annotations") or {}).get(INDEX_ANNOTATION, "0")
        if index != "0":
            return 20.0, 0, "worker %s ready\n" % index
        return 20.0, 0, sim.run_group(nodes, annotations[ANNOTATION_COLLECTIVE])

    emu.job_behaviour = behaviour
    return names, placements


def node_labels(emu, name):
    return emu.api.get("v1", "Node", name)["metadata"]


def test_job_layout_pins_single_and_multi_node_tests():
    opts = kube_options_from_params({"image": "nccl:2.13", "run_id": "abc123", "node_hostnames": {"n1": "host-n1"}},
                                    timeout_s=60)
    single = build_job(opts, "r1-split-001", ["n1"], "all_reduce")
    assert single["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "host-n1"}
    assert single["spec"]["completions"] == 1 and "completionMode" not in single["spec"]
    multi = build_job(opts, "r1-screen-001", ["n1", "n2", "n3"], "all_gather")
    spec = multi["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 3
    assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] == 60
    pod = spec["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    # one term per node: Kubernetes accepts exactly one value in a metadata.name field term (terms are ORed)
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]} for n in ("n1", "n2", "n3")]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname" and anti["labelSelector"]["matchLabels"] == {LABEL_JOB: multi["metadata"]["name"]}
    assert pod["hostNetwork"] is True and pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["DSXOS_NCCL_NODES"] == "n1,n2,n3" and env["DSXOS_NCCL_BINARY"] == "all_gather_perf"
    assert len(job_name("abcdefabcdef", "r12-confirm-123-with-a-very-long-suffix-x" * 2, "reduce_scatter")) <= 52
    with pytest.raises(CertifyError, match="kubernetes.image"):
        kube_options_from_params({}, timeout_s=60)
    with pytest.raises(CertifyError, match="kubernetes.colour"):
        kube_options_from_params({"image": "x", "colour": 1})


def test_kubernetes_runner_finds_the_slow_node_with_jobs_pinned_to_their_nodes(k8s_cluster):
    emu = k8s_cluster
    names, placements = fabric_cluster(emu, degraded_nodes={"gpu-3": 0.5}, seed=4)
    client = client_from_params({"kubeconfig": emu.kubeconfig_path})
    runner = KubernetesRunner(client, kube_options_from_params({"image": "nccl:2.13", "poll_s": 1}, timeout_s=30))
    assert runner.ensure_namespace() is True and runner.ensure_namespace() is False
    data = certify_nccl(nodes_from_params(names), validate_config({}), runner).to_dict()
    assert data["faulty_nodes"] == ["gpu-3"] and data["result"] == "FAILED"
    assert "busbw" in data["nodes"]["gpu-3"]["reason"]
    assert sorted(data["healthy_nodes"]) == sorted(n for n in names if n != "gpu-3")
    for job, nodes, placed in placements:
        assert placed in nodes, "pod of %s ran on %s, not on its nodes %s" % (job, placed, nodes)
    per_job = {}
    for job, nodes, placed in placements:
        per_job.setdefault(job, (nodes, []))[1].append(placed)
    assert all(sorted(nodes) == sorted(placed) for nodes, placed in per_job.values()), "one pod per node"
    assert runner.jobs_created and sorted(runner.jobs_created) == sorted(runner.jobs_deleted)
    assert emu.api.list("batch/v1", "Job", namespace=NAMESPACE) == []
    assert client.stats.get("watch jobs", 0) >= 1 and client.stats["get pods/log"] == len(runner.jobs_created)


def _hanging_job(emu):
    """gpu-2's Jobs never finish; returns the runner and the certification data."""
    names, _placements = fabric_cluster(emu, count=4, hang={"gpu-2"}, seed=1)
    client = client_from_params({"kubeconfig": emu.kubeconfig_path})
    runner = KubernetesRunner(client, kube_options_from_params({"image": "nccl:2.13", "poll_s": 0.5}, timeout_s=2))
    runner.ensure_namespace()
    data = certify_nccl(nodes_from_params(names), validate_config({"scale": "per-group"}), runner).to_dict()
    hung = [t for t in data["tests"] if "gpu-2" in t["nodes"]][0]
    assert hung["timed_out"] and not hung["passed"]
    assert any("timed out after" in r for r in hung["reasons"])
    assert hung["id"] in " ".join(data["nodes"]["gpu-2"]["reason"].split())
    return runner, data


def test_hanging_job_is_deleted_at_the_timeout_and_reported(k8s_cluster):
    emu = k8s_cluster
    runner, _data = _hanging_job(emu)
    assert runner.jobs_created and sorted(runner.jobs_created) == sorted(runner.jobs_deleted)
    assert emu.api.list("batch/v1", "Job", namespace=NAMESPACE) == [], "the hanging Job must be deleted"
    # the hung pods get the Job pods' 10 s grace period (real seconds on the real control plane)
    emu.wait_for(lambda: not emu.api.list("v1", "Pod", namespace=NAMESPACE), timeout=60, what="pods of deleted jobs gone")


@pytest.mark.emulator_only("api_calls")
def test_hanging_job_delete_request(k8s_cluster):
    emu = k8s_cluster
    _hanging_job(emu)
    assert emu.api_calls(verb="delete", resource="jobs") >= 1, "the hanging Job must be deleted"
    emu.wait_for(lambda: not emu.api.list("v1", "Pod", namespace=NAMESPACE), timeout=10, what="pods of deleted jobs gone")


def test_module_entry_point_lists_nodes_and_refuses_bad_input(k8s_cluster):
    emu = k8s_cluster
    names, _placements = fabric_cluster(emu, count=4, seed=2)
    emu.cordon(names[3])
    params = {"runner": "kubernetes", "kubeconfig": emu.kubeconfig_path, "node_selector": "nvidia.com/gpu.present=true",
              "kubernetes": {"image": "nccl:2.13", "poll_s": 1}, "timeout_s": 30, "collectives": ["all_reduce"]}
    messages = []
    result = run_certify_nccl(params, progress=lambda msg, info: messages.append(msg))
    assert result["excluded_nodes"] == [names[3]] and result["nodes"][names[3]]["reason"].startswith("cordoned")
    assert result["result"] == "INCOMPLETE" and not result["faulty_nodes"]
    assert result["jobs"]["namespace"] == NAMESPACE and messages[0].startswith("round 1: ")
    checked = run_certify_nccl(dict(params), check_mode=True)
    assert checked["skipped"] and checked["grouping"]["groups"]
    with pytest.raises(CertifyError, match="empty target"):
        run_certify_nccl(dict(params, node_selector="pool=none"))
    with pytest.raises(CertifyError, match="node_selector needs runner: kubernetes"):
        run_certify_nccl(dict(params, runner="hosts"))
    bad_api = run_certify_nccl(dict(params, kubeconfig=None, host="http://127.0.0.1:9", retries=0))
    assert bad_api["failed"] and "cannot reach" in bad_api["msg"]


def test_node_certification_labels_are_idempotent_and_never_cordon(k8s_cluster):
    emu = k8s_cluster
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-", start_index=1)
    params = {"kubeconfig": emu.kubeconfig_path, "nodes": names, "categories": ["gpu-health"], "label": True,
              "results": {"gpu-health": {names[0]: {"verdict": "ok", "reasons": []},
                                         names[1]: {"verdict": "fail", "reasons": ["GPU 3: volatile DBE ECC errors 2"]}}},
              "excluded": {names[2]: "unreachable: ssh timeout"}, "certified_at": 1767225600, "valid_for_s": 3600}
    preview = run_node_certification(params, check_mode=True)
    assert preview["changed"] and preview["changed_nodes"] == names
    assert LABEL_VERDICT not in (node_labels(emu, names[0]).get("labels") or {})
    first = run_node_certification(params)
    assert first["changed"] and first["summary"]["failed_nodes"] == [names[1]]
    second = run_node_certification(params)
    assert not second["changed"] and second["changed_nodes"] == []
    verdicts = {}
    for name in names:
        meta = node_labels(emu, name)
        verdicts[name] = meta["labels"][LABEL_VERDICT]
        assert meta["labels"][LABEL_CERTIFIED_AT] == "1767225600" and meta["labels"][LABEL_VALID_UNTIL] == "1767229200"
        assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable")
    assert verdicts == {names[0]: "passed", names[1]: "failed", names[2]: "excluded"}
    reasons = json.loads(node_labels(emu, names[1])["annotations"][ANNOTATION_REASON])
    assert reasons == {"gpu-health": {"status": "failed", "reason": "GPU 3: volatile DBE ECC errors 2"}}
    missing = run_node_certification(dict(params, nodes=names + ["gpu-99"]))
    assert missing["failed"] and missing["missing_nodes"] == ["gpu-99"]


def test_aggregation_of_category_results():
    raw = {"gpu-health": {"a": {"verdict": "warn", "reasons": ["temp 86 C"]}, "b": {"failed": True, "msg": "NVML library not found"},
                          "c": {"unreachable": True, "msg": "ssh: connect timed out"}, "d": "garbage"},
           "nccl-loopback": {"a": {"ok": True, "busbw": 470.0}, "b": {"ok": True, "busbw": 468.0},
                             "c": {"skipped": True}, "d": {"ok": True, "busbw": 300.0}, "e": {"ok": True, "busbw": 471.0}}}
    verdicts = {
        "a": {"status": "healthy", "reason": "passed r1", "busbw": {"all_reduce": 360.0}},
        "b": {"status": "healthy", "reason": "passed r1", "busbw": {"all_reduce": 361.0}},
        "c": {"status": "excluded", "reason": "unreachable"},
        "d": {"status": "inconclusive", "reason": "not resolved"},
        "e": {"status": "faulty", "reason": "failed 3 isolation tests: busbw 120 GB/s", "failed_collectives": ["all_reduce"],
              "busbw": {"all_reduce": 120.0}}}
    bandwidth = {"all_reduce": {"bandwidth_by_size": {"1048576": 14.9}, "per_node": {"a": 360.0, "c": None},
                                "threshold": {"floor": None, "relative": {"fraction": 0.9, "mad_z": 3.5}},
                                "fleet": {"multi-node": {"median": 359.0}}}}
    nccl = {"collectives": ["all_reduce"], "nodes": verdicts, "bandwidth": bandwidth,
            "failed_groups": [{"test": "r1-screen-002", "nodes": ["d", "e"], "reasons": ["all_reduce: busbw 120"]}],
            "link_faults": [], "rounds": 5, "test_count": 9, "trace": [], "durations": {"total_s": 12.0}}
    data = validate_input({"nodes": ["a", "b", "c", "d", "e"], "categories": ["gpu-health", "nccl-loopback", "nccl-all-reduce"],
                           "results": raw, "nccl": nccl, "excluded": {"c": "unreachable: ssh timeout"},
                           "started": "2026-01-01T00:00:00Z", "finished": 1767225720})
    report = aggregate_certification(data)
    nodes = report["nodes"]
    assert nodes["a"]["verdict"] == "passed" and nodes["a"]["categories"]["gpu-health"]["reason"].startswith("passed with warnings")
    assert nodes["b"]["verdict"] == "failed" and "NVML library not found" in nodes["b"]["reasons"][0]
    assert nodes["c"]["verdict"] == "excluded" and nodes["c"]["reasons"] == ["unreachable: ssh timeout"]
    assert nodes["d"]["verdict"] == "failed" and nodes["d"]["categories"]["nccl-loopback"]["status"] == "failed"
    assert "low against the other hosts" in nodes["d"]["categories"]["nccl-loopback"]["reason"]
    assert nodes["e"]["categories"]["nccl-all-reduce"] == {"status": "failed", "reason": "failed 3 isolation tests: busbw 120 GB/s",
                                                           "value": 120.0, "unit": "GB/s"}
    assert report["categories"]["nccl-all-reduce"]["per_node"] == {"a": 360.0}
    assert report["categories"]["nccl-all-reduce"]["threshold"] == {"unit": "GB/s", "relative_fraction": 0.9, "mad_z": 3.5,
                                                                    "median": 359.0}
    assert report["failed_groups"] == [{"id": "r1-screen-002", "nodes": ["d", "e"], "reason": "all_reduce: busbw 120"}]
    assert report["finished"] == "2026-01-01T00:02:00Z" and report["durations"]["total_s"] == 120.0
    summary = certification_summary(report)
    assert (summary["result"], summary["failed_nodes"], summary["excluded_nodes"]) == ("FAILED", ["b", "d", "e"], ["c"])
    assert normalize_result({"skipped": True, "skip_reason": "Conditional result was False"})["status"] == "skipped"


def _role_vars(emu, tmp_path, **extra):
    values = {"certify_runner": "kubernetes", "certify_categories": ["nccl-all-reduce"],
              "certify_k8s_auth": {"kubeconfig": emu.kubeconfig_path},
              "certify_kubernetes": {"image": "registry.example.com/nccl-tests:2.13", "poll_s": 1},
              "certify_timeout_s": 60, "certify_report_dir": str(tmp_path / "report"), "certify_valid_for_s": 3600,
              "certify_platform": {"name": "emulated EKS", "service": "eks"}}
    values.update(extra)
    return values


def test_role_certifies_kubernetes_nodes_labels_them_and_writes_the_report(k8s_cluster, ansible_run, tmp_path):
    emu = k8s_cluster
    names, _placements = fabric_cluster(emu, degraded_nodes={"gpu-6": 0.5}, seed=9)
    result = ansible_run("dsxos.cluster.certify", extra_vars=_role_vars(emu, tmp_path))
    for name in names:
        labels = node_labels(emu, name)["labels"]
        assert labels[LABEL_VERDICT] == ("failed" if name == "gpu-6" else "passed"), name
        assert int(labels[LABEL_VALID_UNTIL]) - int(labels[LABEL_CERTIFIED_AT]) == 3600
        assert not emu.api.get("v1", "Node", name)["spec"].get("unschedulable"), "certify never cordons"
    reason = json.loads(node_labels(emu, "gpu-6")["annotations"][ANNOTATION_REASON])
    assert reason["nccl-all-reduce"]["status"] == "failed" and "busbw" in reason["nccl-all-reduce"]["reason"]
    assert re.search(r"certify_nccl: round 1: \d+ groups running, suspects so far: \[\]", result.stdout), result.describe()
    assert re.search(r"certify_nccl: round \d+ done: .* suspects so far: \[gpu-6\]", result.stdout)
    stats = result.task("dsxos.cluster.certify : Publish the outcome for AWX workflows")["result"]["ansible_stats"]["data"]
    summary = stats["dsxos_certify"]
    assert summary["result"] == "FAILED" and summary["failed_nodes"] == ["gpu-6"] and summary["counts"]["passed"] == 7
    report = json.loads((tmp_path / "report" / "certify-report.json").read_text(encoding="utf-8"))
    assert report["result"] == "FAILED" and report["nodes"]["gpu-6"]["verdict"] == "failed"
    assert sorted(os.listdir(tmp_path / "report")) == ["certify-report.html", "certify-report.json", "certify-report.md",
                                                       "certify-report.xml"]
    assert summary["report"]["json"].endswith("certify-report.json")


BAD_REQUESTS = [
    ({"certify_categories": ["nccl-all-reduce", "nccl-bogus"]}, "nccl-bogus"),
    ({"certify_thresholds": {"relative": {"fraction": 2}}}, "field relative.fraction"),
    ({"certify_node_selector": "pool=nothing-here"}, "empty target"),
    ({"certify_kubernetes": {}}, "kubernetes.image"),
]


@pytest.mark.parametrize("extra, message", BAD_REQUESTS)
def test_role_refuses_bad_requests_before_running_anything(k8s_cluster, ansible_run, tmp_path, extra, message):
    emu = k8s_cluster
    fabric_cluster(emu, count=2, seed=3)
    result = ansible_run("dsxos.cluster.certify", extra_vars=_role_vars(emu, tmp_path, **extra), expect_rc=2)
    assert message in result.stdout, result.describe()
    assert emu.api.list("batch/v1", "Job", namespace=NAMESPACE) == []


@pytest.mark.emulator_only("api_calls")
@pytest.mark.parametrize("extra, message", BAD_REQUESTS)
def test_role_refuses_bad_requests_without_a_job_request(k8s_cluster, ansible_run, tmp_path, extra, message):
    emu = k8s_cluster
    fabric_cluster(emu, count=2, seed=3)
    result = ansible_run("dsxos.cluster.certify", extra_vars=_role_vars(emu, tmp_path, **extra), expect_rc=2)
    assert message in result.stdout, result.describe()
    assert emu.api_calls(verb="create", resource="jobs") == 0
