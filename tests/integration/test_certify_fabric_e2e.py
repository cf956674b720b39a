# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""End to end: the certify role over SSH on the 8-host network-namespace fabric with the nccl-tests CPU stand-in.

One host's link is slowed with tc tbf, one host's recorded NVML readings carry a DBE ECC error and one inventory
host does not exist on the network. The report must name exactly the slowed host with a bandwidth reason, the DBE
host with a gpu-health reason, list the ghost host as excluded, and pass the others. The same role then runs under
ansible-runner, as AWX runs it, and its set_stats must carry the summary.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml

from ansible_collections.dsxos.cluster.tests.harness.netns_fabric_fixture import (  # noqa: F401  pylint: disable=unused-import
    nccl_standin_dir, netns_fabric, netns_fabric_factory)

NVML_FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "nvml"
GHOST = "dsx-ghost"


def _inventory(fabric, directory: Path, dbe_host: str) -> Path:
    """The fabric's inventory plus an unreachable host, with per-host recorded NVML readings."""
    data = yaml.safe_load(Path(fabric.inventory_path).read_text(encoding="utf-8"))
    data["all"]["children"]["gpu_nodes"]["hosts"][GHOST] = {"ansible_host": str(fabric.subnet.network_address + 250)}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "host_vars").mkdir(exist_ok=True)
    for name in fabric.names + [GHOST]:
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
        # The CPU stand-in's healthy busbw swings up to 3x between runs on a 2-core machine; a link at 200 Mbit/s
        # is ~10x slower. Gate relative to the fleet with a wide margin instead of GPU floors.
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
    netns_fabric.slow_link(slow, rate="200mbit")
    inventory = _inventory(netns_fabric, tmp_path / "inventory", dbe)
    report_dir = tmp_path / "report"

    result = ansible_run("dsxos.cluster.certify", inventory=inventory, expect_rc=None,
                         extra_vars=_certify_vars(netns_fabric, nccl_standin_dir, report_dir, ["gpu-health", "nccl-all-reduce"]),
                         extra_args=["-f", "10", "-T", "60"])
    assert result.rc in (0, 4), result.describe()  # 4: the ghost host is unreachable (reported, not a crash)

    report = json.loads((report_dir / "certify-report.json").read_text(encoding="utf-8"))
    assert report["result"] == "FAILED"
    verdicts = {name: node["verdict"] for name, node in report["nodes"].items()}
    assert verdicts[slow] == "failed" and verdicts[dbe] == "failed" and verdicts[GHOST] == "excluded"
    assert {n for n, v in verdicts.items() if v == "passed"} == set(names) - {slow, dbe}

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
