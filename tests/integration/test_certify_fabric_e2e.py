# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""End to end: the certify role over SSH on the 8-host network-namespace fabric with the nccl-tests CPU stand-in.

One host's link is slowed with tc tbf, one host's recorded NVML readings carry a DBE ECC error, one inventory
host does not exist on the network and one inventory host has a hostile name (``$(id)``). The report must name exactly
the slowed host with a bandwidth reason, the DBE host with a gpu-health reason, list the ghost host and the hostile
host as excluded (the hostile one refused before any connection), and pass the others; the playbook's summary line,
its set_stats and every report file must state the same counts. The same role then runs under ansible-runner, as
AWX runs it, and its set_stats must carry the summary.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml
from test_certify_report_browser import open_page  # pylint: disable=import-error

from ansible_collections.dsxos.cluster.tests.harness.netns_fabric_fixture import (  # noqa: F401  pylint: disable=unused-import
    nccl_standin_dir, netns_fabric, netns_fabric_factory)

NVML_FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "nvml"
GHOST = "dsx-ghost"
HOSTILE = "$(id)"


def _inventory(fabric, directory: Path, dbe_host: str) -> Path:
    """The fabric's inventory plus an unreachable host, with per-host recorded NVML readings."""
    data = yaml.safe_load(Path(fabric.inventory_path).read_text(encoding="utf-8"))
    data["all"]["children"]["gpu_nodes"]["hosts"][GHOST] = {"ansible_host": str(fabric.subnet.network_address + 250)}
    data["all"]["children"]["gpu_nodes"]["hosts"][HOSTILE] = {}  # no ansible_host: the name itself would be the target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "host_vars").mkdir(exist_ok=True)
    for name in fabric.names + [GHOST]:  # the hostile host gets no file: its name is never a path either
        recording = "h100x8_ecc_dbe_volatile.json" if name == dbe_host else "h100x8_healthy.json"
        (directory / "host_vars" / f"{name}.yml").write_text(
            f"certify_recorded_readings: {NVML_FIXTURES / recording}\n", encoding="utf-8")
    path = directory / "hosts.yml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _certify_vars(fabric, binary_dir: Path, report_dir: Path, categories) -> dict:
    return {
        "certify_target_group": "gpu_nodes",
        "certify_categories": list(categories),
        "certify_scale": "diagnose",
        "certify_mpirun": {"binary_dir": str(binary_dir), "launcher_env": fabric.mpirun_env(), "allow_run_as_root": True,
                           "args": {"min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1}},
        # The CPU stand-in's healthy busbw swings up to 3x between runs on a 2-core machine, and more with other
        # test workers beside it; a link at 50 Mbit/s is ~40x slower (200 Mbit/s, ~10x, once passed as healthy
        # under CI's own load). Gate relative to the fleet with a wide margin instead of GPU floors.
        "certify_thresholds": {"use_builtin_floors": False, "relative": {"fraction": 0.25, "mad_z": 50}},
        # Generous: under a loaded machine (parallel test workers) SSH connects and mpirun starts slowly; a host that
        # misses a deadline is excluded (unreachable), which is not what this test is about.
        "certify_timeout_s": 150,
        "certify_report_dir": str(report_dir),
        "certify_gpu_health": {"expected_gpu_count": 8},
    }


def test_certify_role_names_the_slow_and_the_dbe_host(ansible_run, netns_fabric, nccl_standin_dir, tmp_path):  # pylint: disable=redefined-outer-name
    names = netns_fabric.names
    slow, dbe = names[5], names[2]
    netns_fabric.slow_link(slow, rate="50mbit")
    inventory = _inventory(netns_fabric, tmp_path / "inventory", dbe)
    report_dir = tmp_path / "report"

    result = ansible_run("dsxos.cluster.certify", inventory=inventory, expect_rc=None,
                         extra_vars=_certify_vars(netns_fabric, nccl_standin_dir, report_dir, ["gpu-health", "nccl-all-reduce"]),
                         extra_args=["-f", "10", "-T", "60"])
    assert result.rc in (0, 4), result.describe()  # 4: the ghost host is unreachable (reported, not a crash)

    report = json.loads((report_dir / "certify-report.json").read_text(encoding="utf-8"))
    assert report["result"] == "FAILED"
    verdicts = {name: node["verdict"] for name, node in report["nodes"].items()}
    detail = json.dumps({"verdicts": verdicts, "nccl": report["categories"].get("nccl-all-reduce"),
                         "rounds": report["isolation"]["round_summary"]}, default=str)[:6000]
    assert verdicts[slow] == "failed" and verdicts[dbe] == "failed" and verdicts[GHOST] == "excluded", (slow, detail)
    assert verdicts[HOSTILE] == "excluded" and "invalid host name" in report["nodes"][HOSTILE]["reasons"][0]
    assert {n for n, v in verdicts.items() if v == "passed"} == set(names) - {slow, dbe}
    assert {n for n, v in verdicts.items() if v == "failed"} == {slow, dbe}
    assert not any(HOSTILE in r for n, v in report["nodes"].items() if n != HOSTILE for r in v["reasons"]), report["nodes"]
    assert not [t for t in result.tasks if t["host"] == HOSTILE and t["action"] in ("ansible.builtin.ping", "ping")
                and t["status"] != "skipped"], "the hostile host was contacted"

    # one source of truth: the summary line, set_stats and every rendered report state the report's counts
    totals = report["totals"]
    assert (totals["nodes"], totals["passed"], totals["failed"], totals["excluded"]) == (len(names) + 2, len(names) - 2, 2, 2)
    headline = result.task("dsxos.cluster.certify : Show the outcome")["result"]["msg"][0]
    assert " ".join(headline.split()) == "FAILED: %d passed, %d failed, %d excluded" % (totals["passed"], totals["failed"], totals["excluded"])
    stats = result.task("dsxos.cluster.certify : Publish the outcome for AWX workflows")["result"]["ansible_stats"]["data"]["dsxos_certify"]
    expected_counts = {"nodes": totals["nodes"], "passed": totals["passed"], "failed": totals["failed"], "excluded": totals["excluded"],
                       "faulty_links": totals["link_faults"]}
    assert {k: int(v) for k, v in stats["counts"].items()} == expected_counts
    assert sorted(stats["failed_nodes"]) == sorted([slow, dbe]) and sorted(stats["excluded_nodes"]) == sorted([GHOST, HOSTILE])
    markdown = (report_dir / "certify-report.md").read_text(encoding="utf-8")
    assert "| Nodes | %d total: %d passed, %d failed, %d excluded |" % (
        totals["nodes"], totals["passed"], totals["failed"], totals["excluded"]) in markdown
    html = (report_dir / "certify-report.html").read_text(encoding="utf-8")
    assert ('%d total<br><span class="ok">%d passed</span>, <span class="bad">%d failed</span>, <span class="warn">%d excluded</span>'
            % (totals["nodes"], totals["passed"], totals["failed"], totals["excluded"])) in html

    # platform and GPU come from what the run measured; the chart has every message size measured (1M, 2M)
    assert report["platform"]["name"] == "gpu_nodes" and report["platform"]["service"] == "ssh"
    assert report["gpu"]["product"] == "NVIDIA H100 80GB HBM3" and report["gpu"]["count_per_node"] == 8
    assert report["gpu"]["driver_version"] and report["gpu"]["cuda_version"] and report["gpu"]["nccl_tests_version"]
    sizes = [p["bytes"] for p in report["categories"]["nccl-all-reduce"]["bandwidth_by_size"]]
    assert sizes == [1 << 20, 2 << 20]
    page = open_page(report_dir / "certify-report.html")
    assert page["problems"] == [] and sorted(b for _s, b in page["points"]) == sizes and page["renderedPoints"] == len(sizes)
    cards = {c.split("\n", 1)[0].strip().lower(): c for c in page["cards"]}
    assert "gpu_nodes" in cards["platform"] and report["gpu"]["driver_version"] in cards["gpu"]

    slow_reasons = " ".join(report["nodes"][slow]["reasons"]).lower()
    assert "bandwidth" in slow_reasons or "busbw" in slow_reasons, report["nodes"][slow]
    assert report["nodes"][slow]["categories"]["nccl-all-reduce"]["status"] == "failed"
    assert report["nodes"][slow]["categories"]["gpu-health"]["status"] == "passed"
    dbe_reasons = " ".join(report["nodes"][dbe]["reasons"])
    assert "DBE" in dbe_reasons or "double-bit" in dbe_reasons.lower(), report["nodes"][dbe]
    assert report["nodes"][dbe]["categories"]["gpu-health"]["status"] == "failed"
    assert report["nodes"][dbe]["categories"]["nccl-all-reduce"]["status"] == "passed"
    assert report["isolation"]["rounds"] >= 2

    for suffix in ("json", "xml", "md", "html"):
        assert (report_dir / f"certify-report.{suffix}").is_file(), suffix
    assert slow in (report_dir / "certify-report.md").read_text(encoding="utf-8")


def test_certify_role_under_ansible_runner_publishes_set_stats(installed_collection, netns_fabric,  # pylint: disable=redefined-outer-name
                                                               nccl_standin_dir, tmp_path):  # pylint: disable=redefined-outer-name
    import ansible_runner  # pylint: disable=import-outside-toplevel

    dbe = netns_fabric.names[0]
    private = tmp_path / "runner"
    inventory = _inventory(netns_fabric, private / "inventory", dbe)
    (private / "project").mkdir(parents=True)
    (private / "project" / "certify.yml").write_text(
        "- name: Certify as an AWX job template would\n  ansible.builtin.import_playbook: dsxos.cluster.certify\n", encoding="utf-8")
    (private / "env").mkdir()
    envvars = {"ANSIBLE_COLLECTIONS_PATH": str(installed_collection), "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False",
               "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
               "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])}
    (private / "env" / "envvars").write_text(yaml.safe_dump(envvars), encoding="utf-8")
    extravars = _certify_vars(netns_fabric, nccl_standin_dir, tmp_path / "report", ["gpu-health"])
    extravars["ansible_python_interpreter"] = sys.executable
    run = ansible_runner.run(private_data_dir=str(private), playbook="certify.yml", inventory=str(inventory),
                             extravars=extravars, quiet=True, timeout=600)
    assert run.rc in (0, 4), "".join(run.stdout.readlines()[-60:])

    stats_events = [e for e in run.events if e.get("event") == "playbook_on_stats"]
    assert stats_events, "no playbook_on_stats event"
    artifact = stats_events[-1]["event_data"].get("artifact_data") or {}
    summary = next(iter(v for k, v in artifact.items() if k.startswith("dsxos_certify")), None)
    assert summary is not None, artifact
    text = json.dumps(summary)
    assert "FAILED" in text and dbe in text
