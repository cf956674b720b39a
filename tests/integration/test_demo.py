# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""`make demo`'s script end to end: the whole lifecycle on the built-in cluster.

configure (three bundles) -> certify (NCCL Jobs find the degraded node) -> an XID 79 alert posted to a real Alertmanager
-> the shipped EDA source inside a real ansible-rulebook -> dsxos.cluster.remediate: quarantine, drain, remediate,
recertify, return -> status and fleet reports. And: a missing tool is named with what to install, before anything starts.

The lifecycle is checked on the session's one ``make demo`` run (the real Makefile target, as a newcomer runs it: fixture
``newcomer_demo``, tests/integration/newcomer_demo.py), which test_readme.py reads too.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from newcomer_demo import NewcomerDemo
from playbook_runner import REPO

DEGRADED = "ip-10-0-0-5.ec2.internal"


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["VENV"] = str(Path(sys.executable).parent.parent)
    env["ANSIBLE_HOME"] = str(tmp_path / "ansible-home")
    return env


def _processes_mentioning(text: str) -> list:
    """Command lines of live processes that mention ``text`` (what the demo started under its out dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmdline:
            found.append("%s: %s" % (entry.name, cmdline[:300]))
    return found


def test_demo_runs_the_whole_lifecycle_on_the_built_in_cluster(newcomer_demo: NewcomerDemo) -> None:
    out = newcomer_demo.out
    text = newcomer_demo.stdout
    assert newcomer_demo.returncode == 0, text[-6000:] + newcomer_demo.stderr[-3000:]
    assert not _processes_mentioning(str(out)), "the demo left processes running"
    for recap in [line for line in text.splitlines() if line.startswith("localhost ")]:
        assert "failed=0" in recap, recap

    # Configure: three bundles for the inferred criteria, constraints checked against the cluster, drift shown.
    for deployer in ("helm", "argocd", "flux"):
        assert (out / "bundles" / deployer / "checksums.txt").is_file()
    assert "h100-eks-training" in (out / "bundles" / "helm" / "recipe.yaml").read_text(encoding="utf-8")
    assert "Constraints: 1 passed, 0 failed, 0 missing" in text
    assert "Inferred criteria: service eks, accelerator h100, os amazonlinux." in text
    assert re.search(r"^\s+node\s+GPU\s+GPUs\s+driver\s+ready\s+schedulable$", text, re.M), text[:4000]
    assert re.search(r"^\s+cert-manager\s+v\S+\s+-\s+missing$", text, re.M)

    # Certify: the degraded node is found and named; the report is written in four formats and parses.
    assert "Certification FAILED: 7 passed, 1 failed, 0 excluded" in text, text[-8000:]
    assert re.search(r"^\s+bad node %s: nccl-all-reduce: " % re.escape(DEGRADED), text, re.M)
    certify = json.loads((out / "certify" / "certify-report.json").read_text(encoding="utf-8"))
    verdicts = {name: node["verdict"] for name, node in certify["nodes"].items()}
    assert verdicts.pop(DEGRADED) == "failed" and set(verdicts.values()) == {"passed"} and len(verdicts) == 7
    ET.parse(out / "certify" / "certify-report.xml")
    assert DEGRADED in (out / "certify" / "certify-report.md").read_text(encoding="utf-8")
    assert "<html" in (out / "certify" / "certify-report.html").read_text(encoding="utf-8").lower()

    # Operate: the alert went through Alertmanager and ansible-rulebook; the sentinel walked the node through every
    # state and returned it, recertified, as it was.
    operate = json.loads((out / "operate.json").read_text(encoding="utf-8"))
    node = operate["node"]
    assert node != DEGRADED and DEGRADED not in operate["neighbours"]
    assert re.search(r"^POST http://127\.0\.0\.1:\d+/api/v2/alerts: GPUFallenOffBus \(XID 79\) on GPU 3 of %s$" % re.escape(node), text, re.M)
    assert "EDA source dsxos.cluster.alertmanager_gpu on http://127.0.0.1:" in text
    assert operate["outcome"] == "returned" and operate["incident"].startswith("sen-") and operate["action"] == "reboot"
    assert operate["unschedulable"] is False and operate["certification"] == "passed"
    # The drain was real: the workloads on the node when the alert came are gone from it (evicted, PDBs respected).
    assert operate["pods_before"] and not set(operate["pods_before"]) & set(operate["pods_after"]), operate
    assert "failed=0" in operate["remediate_recap"] and "unreachable=0" in operate["remediate_recap"], operate["remediate_recap"]
    reasons = [item["reason"] for item in operate["timeline"]]
    steps = ["SentinelQuarantined", "SentinelDraining", "SentinelDrained", "SentinelRemediating", "SentinelRecertifying", "SentinelReturned"]
    assert [r for r in reasons if r in steps] == steps, reasons
    cordon = [h for h in operate["quarantine_history"] if h["action"] in ("cordon", "taint")]
    release = [h for h in operate["quarantine_history"] if h["action"] == "release"]
    assert cordon and release, operate["quarantine_history"]
    why = cordon[-1]["reason"]
    assert operate["incident"] in why and "fallen-off-bus" in why and "79" in why, why
    assert cordon[-1]["actor"].startswith("dsxos-sentinel") and operate["incident"] in release[-1]["reason"]
    assert "The story of %s:" % node in text
    assert re.search(r"^\s+cordoned and tainted at \d\d:\d\d:\d\d by dsxos-sentinel", text, re.M)
    assert re.search(r"^\s+why: sentinel incident %s: reboot" % operate["incident"], text, re.M), text[-6000:]
    assert re.search(r"^\s+returned to service at \d\d:\d\d:\d\d by dsxos-sentinel", text, re.M)
    recertify = json.loads(Path(operate["recertify_report"]).read_text(encoding="utf-8"))
    assert recertify["nodes"][node]["verdict"] == "passed"

    # Reports: status (nothing left quarantined) and the fleet report with the returned incident.
    status = json.loads((out / "sentinel" / "status.json").read_text(encoding="utf-8"))
    assert status["nodes"] == []
    fleet = json.loads((out / "sentinel" / "fleet-status.json").read_text(encoding="utf-8"))
    incidents = {i["id"]: i for i in fleet["incidents"]}
    assert incidents[operate["incident"]]["outcome"] == "returned" and incidents[operate["incident"]]["node"] == node
    assert "<html" in (out / "sentinel" / "fleet-status.html").read_text(encoding="utf-8").lower()
    assert re.search(r"^\s+%s\s+%s\s+reboot\s+returned\s+[0-9.]+\s+[0-9.]+$" % (re.escape(node), operate["incident"]), text, re.M), text[-4000:]

    # Useful work: GPU Jobs completed on the certified nodes, the one on the alert node was killed by the XID; the report's
    # GPU-hours are non-zero, come from the pods' own start and finish times, and add up.
    work = operate["work"]
    assert sorted(work["jobs"].values()).count("Complete") == 6 and list(work["jobs"].values()).count("Failed") == 1, work["jobs"]
    victim = next(row for row in work["pods"] if row["phase"] == "Failed")
    assert victim["node"] == node and victim["exit_code"] == 134 and operate["fault_victim"].endswith("/" + victim["pod"])
    assert all(row["phase"] == "Succeeded" and row["node"] != node for row in work["pods"] if row is not victim)
    hours, pods = fleet["work"]["gpu_hours"], fleet["work"]["pods"]
    assert hours["succeeded"] > 0 and hours["lost_faults"] > 0 and hours["lost_quarantine"] > 0, hours
    assert pods["succeeded"] == 6 and pods["failed_fault"] == 1 and pods["failed_other"] == 0, pods
    # the same GPU-hours as GPUs x (finishedAt - startTime) of the demo's pods (the report rounds to 4 decimals)
    assert abs(hours["succeeded"] - work["gpu_hours"]["succeeded"]) < 2e-4, (hours, work["gpu_hours"])
    assert abs(hours["lost_faults"] - work["gpu_hours"]["failed"]) < 2e-4, (hours, work["gpu_hours"])
    assert abs(hours["lost_quarantine"] - fleet["fleet"]["quarantined_node_s"] * 8 / 3600) < 2e-4, (hours, fleet["fleet"])
    # completed + lost to the fault + lost to quarantine = accounted; useful fraction = completed / accounted
    accounted = hours["succeeded"] + hours["lost_faults"] + hours["lost_quarantine"]
    assert 0 < fleet["work"]["useful_fraction"] < 1 and abs(fleet["work"]["useful_fraction"] - hours["succeeded"] / accounted) < 2e-3
    shown = re.search(r"^\s+completed\s+([0-9.]+) .*\n\s+lost to the fault\s+([0-9.]+) .*\n\s+lost to quarantine\s+([0-9.]+) .*\n"
                      r"\s+accounted\s+([0-9.]+)  = completed \+ lost to the fault \+ lost to quarantine\n"
                      r"\s+useful work\s+([0-9.]+) %  = completed / accounted$", text, re.M)
    assert shown, text[-5000:]
    completed, lost_fault, lost_quarantine, total, percent = (float(v) for v in shown.groups())
    assert (completed, lost_fault, lost_quarantine) == (hours["succeeded"], hours["lost_faults"], hours["lost_quarantine"])
    assert completed > 0 and lost_fault > 0 and lost_quarantine > 0 and abs(completed + lost_fault + lost_quarantine - total) < 1e-4
    assert abs(percent - 100 * completed / total) < 0.2, (percent, completed, total)
    listed = text.split("\nReports:\n", 1)[1].split("\nBundles:", 1)[0].split()
    for wanted in ("certify/certify-report.json", "certify/certify-report.html", "sentinel/status.json", "sentinel/status.md",
                   "sentinel/fleet-status.json", "sentinel/fleet-status.md", "sentinel/fleet-status.html", "operate.json"):
        assert str(out / wanted) in listed, (wanted, listed)
    assert operate["recertify_report"] in listed
    assert all(Path(path).is_file() for path in listed)
    for log in ("emulator.log", "ansible-rulebook.log"):
        assert (out / "logs" / log).stat().st_size > 0
    token = (out / "eda" / "eda-token").read_text(encoding="utf-8").strip()
    assert len(token) >= 32 and (out / "eda" / "eda-token").stat().st_mode & 0o077 == 0
    for where in (text, (out / "logs" / "ansible-rulebook.log").read_text(encoding="utf-8", errors="replace"),
                  (out / "alertmanager" / "alertmanager.log").read_text(encoding="utf-8", errors="replace")):
        assert token not in where, "the bearer token leaked into the output or a log"
    assert "{'" not in text, "a Python dict leaked into the demo output"
    assert re.search(r"^The demo took \d+ s\.$", text, re.M)


def test_demo_names_a_missing_java_and_starts_nothing(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dirname").symlink_to("/usr/bin/dirname")  # all demo.sh needs before its check; no java on this PATH
    env = dict(_env(tmp_path), PATH=str(bin_dir))
    out = tmp_path / "demo"
    proc = subprocess.run(["/bin/bash", str(REPO / "scripts" / "demo.sh"), str(tmp_path), str(tmp_path / "inventory.ini"), str(out)],
                          capture_output=True, text=True, env=env, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "java (ansible-rulebook's rule engine needs Java 17+) is not installed: apt-get install openjdk-17-jre-headless" in proc.stdout
    assert "nothing was started" in proc.stdout
    assert not out.exists(), "the demo must stop before it creates anything"


def test_demo_check_names_every_missing_tool_with_its_install_command(tmp_path: Path, monkeypatch) -> None:
    spec = importlib.util.spec_from_file_location("demo_operate", REPO / "scripts" / "demo_operate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module.shutil, "which", lambda name: None)
    monkeypatch.setattr(module.os, "access", lambda path, mode: False)
    problems = module.missing_tools(tmp_path / "no-venv")
    assert problems[0] == "prometheus-alertmanager (the real Alertmanager) is not installed: apt-get install prometheus-alertmanager"
    assert problems[1] == "java (ansible-rulebook's rule engine needs Java 17+) is not installed: apt-get install openjdk-17-jre-headless"
    assert problems[2].startswith("ansible-rulebook is not installed in %s: " % (tmp_path / "no-venv"))
    assert re.search(r"pip install ansible-rulebook==\d", problems[2]) and len(problems) == 3
