# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The collection's playbooks as AWX runs them on an execution node: ``ansible-runner transmit <private_data_dir> -p
<playbook> | ansible-runner worker | ansible-runner process <dir>`` (docs/awx.md).

``transmit`` packs the private data directory (project, inventory, env) into a stream, ``worker`` unpacks it into
its own temporary directory and runs the playbook, ``process`` turns the event stream back into artifacts
(``artifacts/job_events``, ``rc``, ``status``). Each test reads the ``playbook_on_stats`` event's
``artifact_data``: what ``set_stats`` published, which AWX shows on the job and passes to the next workflow node.

* configure: against nothing, bundles rendered into a temporary directory;
* remediate (a manual quarantine), status, the fleet status report task file, release and recertify: against the
  Kubernetes emulator, through its kubeconfig; recertify with the test stub of the recertification task file.

Certify is not run here: it needs GPU hosts (the network-namespace fabric), and test_certify_fabric_e2e.py runs it
under ansible-runner.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import yaml

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)
from playbook_runner import collections_path

# pylint: disable=redefined-outer-name

VENV_BIN = Path(sys.executable).parent
STUBS = Path(__file__).resolve().parent / "sentinel_stubs"


class Pipeline:  # pylint: disable=too-few-public-methods
    """A private data directory run through transmit | worker | process; one directory per run."""

    def __init__(self, collections: Path, tmp_path: Path) -> None:
        self.collections = collections
        self.tmp_path = tmp_path
        self.count = 0

    def run(self, playbook_text: str, extravars: Dict[str, Any], expect_status: str = "successful") -> Dict[str, Any]:
        """Run one playbook; return ``{"stats": artifact_data, "status", "rc", "events", "dir"}``."""
        self.count += 1
        base = self.tmp_path / f"pipeline-{self.count}"
        private, out, work = base / "private", base / "processed", base / "worker"
        for sub in ("project", "inventory", "env"):
            (private / sub).mkdir(parents=True)
        work.mkdir()
        (private / "project" / "main.yml").write_text(playbook_text, encoding="utf-8")
        (private / "inventory" / "hosts").write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n",
                                                     encoding="utf-8")
        envvars = {"ANSIBLE_COLLECTIONS_PATH": collections_path(self.collections), "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False",
                   "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
                   "ANSIBLE_HOME": str(base / "ansible-home"), "ANSIBLE_GALAXY_SERVER": "https://galaxy.invalid", "ANSIBLE_NOCOLOR": "1"}
        (private / "env" / "envvars").write_text(yaml.safe_dump(envvars), encoding="utf-8")
        (private / "env" / "extravars").write_text(json.dumps(extravars), encoding="utf-8")
        runner = shlex.quote(str(VENV_BIN / "ansible-runner"))
        command = (f"{runner} transmit {shlex.quote(str(private))} -p main.yml | {runner} worker --private-data-dir {shlex.quote(str(work))} "
                   f"| {runner} process {shlex.quote(str(out))}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", os.defpath)])
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], env=env, cwd=base, capture_output=True, text=True,
                              timeout=600, check=False)
        artifact = out / "artifacts"  # process writes the artifacts of the one job it receives here
        assert (artifact / "job_events").is_dir() and (artifact / "status").is_file(), \
            f"no artifacts from the pipeline (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        files = sorted((artifact / "job_events").glob("*.json"), key=lambda p: int(p.name.split("-", 1)[0]))
        events = [json.loads(p.read_text(encoding="utf-8")) for p in files]
        status = (artifact / "status").read_text(encoding="utf-8").strip()
        stdout = "".join(e.get("stdout", "") + "\n" for e in events)
        assert status == expect_status, f"status {status}, pipeline rc={proc.returncode}\n{stdout[-6000:]}\n{proc.stderr[-2000:]}"
        stats = [e for e in events if e.get("event") == "playbook_on_stats"]
        assert stats, "no playbook_on_stats event:\n" + stdout[-4000:]
        return {"stats": stats[-1]["event_data"].get("artifact_data") or {}, "status": status, "events": events, "dir": artifact,
                "rc": int((artifact / "rc").read_text(encoding="utf-8").strip()), "stdout": stdout}


def _import(name: str) -> str:
    return f"- name: {name} as an AWX job template runs it\n  ansible.builtin.import_playbook: dsxos.cluster.{name}\n"


def test_configure_through_transmit_worker_process(installed_collection, tmp_path):
    bundles = tmp_path / "bundles"
    variables = {"configure_output_dir": str(bundles), "configure_deployers": ["helm", "flux"]}
    run = Pipeline(installed_collection, tmp_path).run(_import("configure"), variables)
    assert run["rc"] == 0
    summary = run["stats"]["dsxos_configure"]
    assert summary["criteria"]["service"] == "eks" and summary["criteria"]["accelerator"] == "h100"
    assert (bundles / "helm" / "checksums.txt").is_file() and (bundles / "flux" / "checksums.txt").is_file()
    assert any(e.get("event") == "runner_on_ok" for e in run["events"]), "the worker's events reach process"


def _sentinel_vars(emu, tmp_path, **extra):
    out = {"sentinel_k8s_auth": {"kubeconfig": emu.kubeconfig_path, "retries": 2, "retry_backoff_s": 0.01},
           "sentinel_stub_dir": str(tmp_path), "sentinel_recertify_tasks": str(STUBS / "recertify_pass.yml"),
           "sentinel_circuit_breaker": {"max_fraction": 1.0, "max_nodes": 50}}
    out.update(extra)
    return out


def test_sentinel_playbooks_through_transmit_worker_process(installed_collection, k8s_emulator, tmp_path):
    emu = k8s_emulator
    nodes = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    pipe = Pipeline(installed_collection, tmp_path)

    manual = _sentinel_vars(emu, tmp_path, sentinel_nodes=nodes[:2], sentinel_reason="operator: flaky NVLink", sentinel_manual_action="quarantine")
    remediate = pipe.run(_import("remediate"), manual)
    summary = remediate["stats"]["dsxos_sentinel"]
    assert summary["mode"] == "remediate" and sorted(summary["acted"]) == nodes[:2] and summary["failed"] == []
    incidents = {o["node"]: o["incident"] for o in summary["outcomes"]}
    assert all(i.startswith("sen-") for i in incidents.values()) and set(incidents) == set(nodes[:2])
    assert all(emu.api.get("v1", "Node", n)["spec"].get("unschedulable") for n in nodes[:2])

    status = pipe.run(_import("status"), _sentinel_vars(emu, tmp_path))
    listed = status["stats"]["dsxos_sentinel_status"]
    assert sorted(r["node"] for r in listed["nodes"]) == nodes[:2]

    report_dir = tmp_path / "fleet"
    fleet_play = ("- name: Fleet status report as an AWX job template runs it\n  hosts: localhost\n  connection: local\n  gather_facts: false\n"
                  "  tasks:\n    - name: Report\n      ansible.builtin.include_role:\n        name: dsxos.cluster.sentinel\n"
                  "        tasks_from: status_report\n")
    fleet = pipe.run(fleet_play, _sentinel_vars(emu, tmp_path, sentinel_status_dir=str(report_dir), sentinel_status_window_s=3600))
    published = fleet["stats"]["dsxos_fleet_status"]
    assert published["nodes"] == 3 and published["quarantined"] == 2
    assert sorted(q["node"] for q in published["quarantined_nodes"]) == nodes[:2]
    assert {q["incident"] for q in published["quarantined_nodes"]} == set(incidents.values())
    assert sorted(Path(p).name for p in published["files"].values()) == ["fleet-status.html", "fleet-status.json", "fleet-status.md"]
    assert json.loads((report_dir / "fleet-status.json").read_text())["fleet"]["quarantined"] == 2

    release = pipe.run(_import("release"), _sentinel_vars(emu, tmp_path, sentinel_nodes=[nodes[0]], sentinel_incident=incidents[nodes[0]]))
    released = release["stats"]["dsxos_sentinel"]
    assert released["mode"] == "release" and released["acted"] == [nodes[0]] and released["failed"] == []
    assert not emu.api.get("v1", "Node", nodes[0])["spec"].get("unschedulable")

    recertify = pipe.run(_import("recertify"), _sentinel_vars(emu, tmp_path, sentinel_nodes=[nodes[1]]))
    recertified = recertify["stats"]["dsxos_sentinel"]
    assert recertified["mode"] == "recertify" and recertified["acted"] == [nodes[1]] and recertified["failed"] == []
    assert [o["status"] for o in recertified["outcomes"]] == ["returned"]
    assert json.loads((tmp_path / f"recertify-{nodes[1]}.json").read_text())["incident"] == incidents[nodes[1]]

    after = pipe.run(fleet_play, _sentinel_vars(emu, tmp_path, sentinel_status_dir=str(report_dir), sentinel_status_window_s=3600))
    final = after["stats"]["dsxos_fleet_status"]
    assert final["quarantined"] == 0 and final["incidents"]["in_window"] == 2
    assert final["incidents"]["returned"] == 1 and final["incidents"]["released"] == 1
