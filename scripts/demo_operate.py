# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""`make demo`, Operate part: an XID 79 alert through a real Alertmanager and Event-Driven Ansible to the sentinel.

Started by scripts/demo.sh once demo/lifecycle.yml has configured and certified the built-in cluster:

* ``check``: are the real tools there (``prometheus-alertmanager``, ``java`` 17+, ``ansible-rulebook``)? Prints what to
  install for each missing one and exits 3; nothing is started.
* ``run``: writes a token file, the rulebook's variables and an inventory whose ``localhost`` carries the sentinel's
  settings (the rulebook passes only ``sentinel_events`` to the playbooks), starts ``ansible-rulebook`` with the shipped
  rulebook ``extensions/eda/rulebooks/gpu_sentinel.yml`` and Alertmanager configured from the shipped
  ``extensions/alertmanager/alertmanager.yml`` (both on 127.0.0.1, free ports; tests/harness/rulebook_process.py and
  tests/harness/alertmanager_process.py, the same code as the tests). With ``--go-file`` that happens while
  the lifecycle playbook still runs (its output held back until the file exists). Then it picks the alert's node (the
  first node the certification passed) and two healthy neighbours for its recertification, posts the alert to
  Alertmanager's API and polls the node's incident record (what ``dsxos.cluster.node_incident`` ``get`` returns, read with the same code
  from the installed collection) until the incident has ended. Then it prints the timeline from the Kubernetes Events
  the sentinel wrote, stops what it started and writes ``<out>/operate.json``.

Logs: ``<out>/logs/ansible-rulebook.log``, ``<out>/alertmanager/alertmanager.log``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from tests.harness.rulebook_process import RulebookProcess

REPO = Path(__file__).resolve().parents[1]
RULEBOOK_REL = Path("ansible_collections/dsxos/cluster/extensions/eda/rulebooks/gpu_sentinel.yml")
ALERTMANAGER_REL = Path("ansible_collections/dsxos/cluster/extensions/alertmanager/alertmanager.yml")
INSTALL = {
    "prometheus-alertmanager": "apt-get install prometheus-alertmanager",
    "java": "apt-get install openjdk-17-jre-headless",
}
EXIT_MISSING = 3
EXIT_FAILED = 1
# Sentinel Events in the order an incident goes through them (roles/sentinel, docs/operate-sentinel.md).
STEPS = ("SentinelQuarantined", "SentinelDraining", "SentinelDrained", "SentinelRemediating", "SentinelRecertifying",
         "SentinelReturned", "SentinelNeedsAttention", "SentinelReleased")


_HELD: List[str] = []
_HOLD = [False]


def say(text: str = "") -> None:
    """Print a line; while held (the servers start next to the lifecycle playbook), keep it until release()."""
    if _HOLD[0]:
        _HELD.append(text)
        return
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def release() -> None:
    _HOLD[0] = False
    for text in _HELD:
        say(text)
    _HELD.clear()


# ---------------------------------------------------------------------------------------------------------------- check

def java_major(java: str) -> Optional[int]:
    """The major version ``java -version`` reports (None when it cannot be read)."""
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def alertmanager_binary() -> Optional[str]:
    found = shutil.which("prometheus-alertmanager")
    if found:
        return found
    return "/usr/bin/prometheus-alertmanager" if os.access("/usr/bin/prometheus-alertmanager", os.X_OK) else None


def missing_tools(venv: Path) -> List[str]:
    """One line per missing tool: what it is and the command that installs it."""
    problems = []
    if alertmanager_binary() is None:
        problems.append("prometheus-alertmanager (the real Alertmanager) is not installed: %s" % INSTALL["prometheus-alertmanager"])
    java = shutil.which("java")
    if java is None:
        problems.append("java (ansible-rulebook's rule engine needs Java 17+) is not installed: %s" % INSTALL["java"])
    else:
        major = java_major(java)
        if major is None or major < 17:
            problems.append("java %s is too old for ansible-rulebook (Java 17+): %s" % (major or "?", INSTALL["java"]))
    if not (venv / "bin" / "ansible-rulebook").exists():
        pin = next((line.strip() for line in (REPO / "requirements-test.txt").read_text(encoding="utf-8").splitlines()
                    if line.startswith("ansible-rulebook==")), "ansible-rulebook")
        problems.append("ansible-rulebook is not installed in %s: %s/bin/pip install %s (or `make venv`, the test stack)" % (venv, venv, pin))
    return problems


def cmd_check(args: argparse.Namespace) -> int:
    problems = missing_tools(Path(args.venv))
    if not problems:
        return 0
    say("The demo's Operate part runs a real Alertmanager and a real ansible-rulebook; missing here:")
    for line in problems:
        say("  - " + line)
    say("Install them (root) and run `make demo` again; nothing was started.")
    return EXIT_MISSING


# ------------------------------------------------------------------------------------------------------------------ run

def free_port() -> int:
    from tests.harness.alertmanager_process import free_port as _free  # pylint: disable=import-outside-toplevel
    return _free()


def kube_client(collections: Path, kubeconfig: str) -> Any:
    """A client of the installed collection (the one its modules use)."""
    if str(collections) not in sys.path:
        sys.path.insert(0, str(collections))
    # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params
    return KubeClient(auth_from_params({"kubeconfig": kubeconfig, "retries": 2, "retry_backoff_s": 0.2}))


def incident_state(client: Any, node: str) -> Dict[str, Any]:
    """What ``dsxos.cluster.node_incident`` with ``action: get`` returns for the node."""
    # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.remediation_state import get_states
    return get_states(client, [node])[node]


def sentinel_events(client: Any, node: str, namespace: str = "default") -> List[Dict[str, Any]]:
    resp = client.call("list", "events", client.core.list_namespaced_event, namespace,
                       field_selector="involvedObject.name=%s" % node, _preload_content=False)
    items = json.loads(resp.data).get("items") or []
    found = [e for e in items if str(e.get("reason", "")).startswith("Sentinel")]
    return sorted(found, key=lambda e: (e.get("firstTimestamp") or e.get("eventTime") or (e.get("metadata") or {}).get("creationTimestamp") or "",
                                        STEPS.index(e["reason"]) if e.get("reason") in STEPS else len(STEPS)))


def pick_nodes(report_path: Path, wanted: str) -> Dict[str, Any]:
    """The alert's node and the recertification neighbours, from the certification report of the lifecycle run."""
    report = json.loads(report_path.read_text(encoding="utf-8"))
    verdicts = {name: (data or {}).get("verdict") for name, data in (report.get("nodes") or {}).items()}
    passed = sorted(n for n, v in verdicts.items() if v == "passed")
    bad = sorted(n for n, v in verdicts.items() if v == "failed")
    if wanted and verdicts.get(wanted) != "passed":
        raise RuntimeError("--node %s: the certification did not pass it (verdicts: %s)" % (wanted, verdicts))
    node = wanted or (passed[0] if passed else "")
    neighbours = [n for n in passed if n != node][:2]
    if not node or len(neighbours) < 2:
        raise RuntimeError("the certification passed too few nodes for the demo (verdicts: %s)" % verdicts)
    return {"node": node, "neighbours": neighbours, "bad": bad, "passed": passed}


def write_files(args: argparse.Namespace, out: Path, port: int) -> Dict[str, Path]:
    import yaml  # pylint: disable=import-outside-toplevel

    eda = out / "eda"
    eda.mkdir(parents=True, exist_ok=True)
    token = eda / "eda-token"
    token.write_text(secrets.token_hex(24) + "\n", encoding="utf-8")
    token.chmod(0o600)
    tolerate = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dsxos.io/quarantine", "operator": "Exists", "effect": "NoSchedule"}]
    sentinel = {
        "ansible_connection": "local",
        "ansible_python_interpreter": str(Path(args.venv) / "bin" / "python"),
        "sentinel_k8s_auth": {"kubeconfig": args.kubeconfig},
        "sentinel_destructive": True,
        "sentinel_actor": "dsxos-sentinel",
        "sentinel_drain": {"timeout_s": 120},
        "sentinel_remediation_tasks": {"reboot": str(REPO / "demo" / "sentinel" / "reboot_emulated.yml")},
        "sentinel_recertify_tasks": str(REPO / "demo" / "sentinel" / "recertify_kubernetes.yml"),
        # Written once the certification has run (the servers start before it ends).
        "demo_recertify_neighbours": "{{ lookup('ansible.builtin.file', '%s') | from_json }}" % (eda / "neighbours.json"),
        "demo_recertify_report_dir": str(out / "recertify"),
        "demo_recertify_kubernetes": {"image": "registry.example.com/nccl-tests:2.13", "poll_s": 1, "gpus_per_node": 0,
                                      "tolerations": tolerate},
    }
    inventory = eda / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": sentinel}}}, sort_keys=False), encoding="utf-8")
    rulebook_vars = eda / "vars.yml"
    rulebook_vars.write_text(yaml.safe_dump({"sentinel_eda_host": "127.0.0.1", "sentinel_eda_port": port,
                                             "sentinel_eda_token_file": str(token), "sentinel_batch_window_s": 1}), encoding="utf-8")
    return {"token": token, "inventory": inventory, "vars": rulebook_vars, "neighbours": eda / "neighbours.json"}


def xid79_alert(node: str) -> Dict[str, Any]:
    """What Prometheus sends for extensions/prometheus' GPUFallenOffBus rule on GPU 3 of ``node``."""
    from tests.harness.alertmanager_process import alert  # pylint: disable=import-outside-toplevel
    labels = {"alertname": "GPUFallenOffBus", "node": node, "gpu": "3", "uuid": "GPU-3a1f0c2d-79e5-4b6a-9c0d-0000000000a3",
              "code": "79", "action": "reboot", "severity": "critical", "fault_class": "fallen-off-bus"}
    return alert(labels, annotations={"summary": "XID on a GPU: GPU fell off the bus"})


def running_pods(client: Any, node: str) -> List[str]:
    """``namespace/name`` of the pods on ``node`` that have not finished (Jobs' completed pods do not count)."""
    resp = client.call("list", "pods", client.core.list_pod_for_all_namespaces, field_selector="spec.nodeName=%s" % node,
                       _preload_content=False)
    items = json.loads(resp.data).get("items") or []
    return sorted("%s/%s" % (i["metadata"]["namespace"], i["metadata"]["name"]) for i in items
                  if (i.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and not i["metadata"].get("deletionTimestamp"))


def quarantine_history(client: Any, node: str) -> List[Dict[str, Any]]:
    """The node's quarantine record history (annotation dsxos.io/quarantine-history: action, reason, actor, time)."""
    resp = client.call("get", "nodes", client.core.read_node, node, _preload_content=False)
    annotations = (json.loads(resp.data).get("metadata") or {}).get("annotations") or {}
    try:
        history = json.loads(annotations.get("dsxos.io/quarantine-history") or "[]")
    except ValueError:
        return []
    return [h for h in history if isinstance(h, dict)]


def tell_story(result: Dict[str, Any]) -> None:
    """Who cordoned the node, why, and when it was returned, from its quarantine history and incident."""
    node = result["node"]
    history = result.get("quarantine_history") or []
    cordon = next((h for h in reversed(history) if h.get("action") in ("cordon", "taint", "quarantine")), None)
    release = next((h for h in reversed(history) if h.get("action") == "release"), None)
    say("The story of %s:" % node)
    if result.get("certify_failed"):
        say("  certification had found %s slow (NCCL all-reduce); this node had passed." % ", ".join(result["certify_failed"]))
    if cordon:
        say("  cordoned and tainted at %s by %s" % (clock(cordon.get("time", "")), cordon.get("actor", "?")))
        say("    why: %s" % cordon.get("reason", "?"))
    say("  pods on it when the alert came: %s; on it now: %s" % (", ".join(result.get("pods_before") or []) or "none",
                                                                 ", ".join(result.get("pods_after") or []) or "none"))
    if release:
        say("  returned to service at %s by %s" % (clock(release.get("time", "")), release.get("actor", "?")))
        say("    why: %s" % release.get("reason", "?"))
    say("  now: %s, certification label %s; incident %s %s, %s s from the alert to the return"
        % ("unschedulable" if result.get("unschedulable") else "schedulable", result.get("certification") or "-",
           result.get("incident"), result.get("outcome"), result.get("seconds")))
    if result.get("recertify_report"):
        say("  recertification report: %s" % result["recertify_report"])


def clock(text: str) -> str:
    """``HH:MM:SS`` of an RFC 3339 time (UTC)."""
    match = re.search(r"T(\d\d:\d\d:\d\d)", text or "")
    return match.group(1) if match else "?"


def cmd_run(args: argparse.Namespace) -> int:  # pylint: disable=too-many-locals,too-many-statements
    out = Path(args.out).resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    collections = Path(args.collections).resolve()
    port = free_port()
    files = write_files(args, out, port)
    _HOLD[0] = bool(args.go_file)

    rulebook: Optional["RulebookProcess"] = None
    manager = None
    client = None
    result: Dict[str, Any] = {}

    def _terminate(_signum: int, _frame: Any) -> None:
        raise SystemExit(143)
    signal.signal(signal.SIGTERM, _terminate)

    try:
        # pylint: disable=import-outside-toplevel
        from tests.harness.alertmanager_process import AlertmanagerProcess, alertmanager_config
        from tests.harness.polling import wait_until
        from tests.harness.rulebook_process import RulebookProcess, find_java_home
        rulebook_log = logs / "ansible-rulebook.log"
        # the demo's check has said what to install; an empty JAVA_HOME here leaves the failure to ansible-rulebook's log
        rulebook = RulebookProcess(out / "eda", collections / RULEBOOK_REL, files["inventory"], files["vars"], collections, port=port,
                                   binary=Path(args.venv) / "bin" / "ansible-rulebook", log_path=rulebook_log,
                                   extra_env={"ANSIBLE_INVENTORY_UNPARSED_WARNING": "False", "ANSIBLE_PIPELINING": "True"},
                                   java_home=find_java_home(required=False), start_timeout_s=args.start_timeout_s, step_s=0.25,
                                   stop_timeout_s=20.0, error=RuntimeError, log_tail=3000)
        began = time.monotonic()
        rulebook.start(wait=False)  # Alertmanager starts while the rulebook's Java engine does
        config = alertmanager_config(rulebook.url, files["token"], group_wait="1s", group_interval="5s", repeat_interval="1h",
                                     base=collections / ALERTMANAGER_REL)
        manager = AlertmanagerProcess(str(out / "alertmanager"), config).start()
        say("Alertmanager %s: config %s (extensions/alertmanager/alertmanager.yml, group_wait 1s), log %s"
            % (manager.url, out / "alertmanager" / "alertmanager.yml", manager.log_path))
        rulebook.wait_ready()
        say("ansible-rulebook: rulebook %s, EDA source dsxos.cluster.alertmanager_gpu on %s (bearer token in %s), up in %.0f s"
            % (RULEBOOK_REL.name, rulebook.url, files["token"], time.monotonic() - began))

        if args.go_file:
            wait_until(lambda: Path(args.go_file).exists(), args.go_timeout_s, "the go file %s" % args.go_file, step_s=0.5, error=RuntimeError)
            release()
        picked = pick_nodes(Path(args.certify_report), args.node)
        node = picked["node"]
        result.update(node=node, neighbours=picked["neighbours"], certify_failed=picked["bad"])
        files["neighbours"].write_text(json.dumps(picked["neighbours"]), encoding="utf-8")
        client = kube_client(collections, args.kubeconfig)

        result["pods_before"] = running_pods(client, node)
        posted = time.monotonic()
        manager.post_alerts([xid79_alert(node)])
        say("POST %s/api/v2/alerts: GPUFallenOffBus (XID 79) on GPU 3 of %s" % (manager.url, node))

        seen: List[str] = []

        def progress() -> Optional[Dict[str, Any]]:
            if rulebook is not None and not rulebook.running():
                raise RuntimeError("ansible-rulebook exited with %s (log %s)" % (rulebook.returncode, rulebook_log))
            state = incident_state(client, node)
            current = state.get("incident") or {}
            label = current.get("state") or ("ended" if state.get("history") else "")
            if label and (not seen or seen[-1] != label):
                seen.append(label)
                say("  +%5.1f s  %s: %s" % (time.monotonic() - posted, node, label if current else "incident ended"))
            return state if state.get("history") and not current else None

        final = wait_until(progress, args.timeout_s, "the incident of %s to end (log %s)" % (node, rulebook_log), step_s=0.5,
                           error=RuntimeError)
        took = time.monotonic() - posted

        def recap() -> Optional[str]:
            text = rulebook_log.read_text(encoding="utf-8", errors="replace")
            lines = [line for line in text.splitlines() if re.match(r"^localhost\s+: ok=", line)]
            return lines[-1] if len(lines) >= 2 else None

        # The rulebook runs the playbook twice for the alert (its intake, then the rest); the second run goes on after the
        # incident closed (unlock, summary): stop nothing before its PLAY RECAP.
        recap_line = wait_until(recap, 180, "the PLAY RECAP of dsxos.cluster.remediate in %s" % rulebook_log, step_s=0.25, error=RuntimeError)
        result["remediate_recap"] = re.sub(r"\s+", " ", recap_line)
        say("dsxos.cluster.remediate (run by ansible-rulebook): %s" % result["remediate_recap"])
        ended = final["history"][-1]
        result.update(incident=ended.get("id"), outcome=ended.get("outcome"), action=ended.get("action"),
                      opened_at=ended.get("opened_at"), ended_at=ended.get("ended_at"), seconds=round(took, 1),
                      unschedulable=final.get("unschedulable"), certification=(final.get("labels") or {}).get("dsxos.io/certification"))
        events = sentinel_events(client, node)
        result["timeline"] = [{"reason": e.get("reason"), "time": e.get("firstTimestamp") or e.get("eventTime"),
                               "actor": ((e.get("metadata") or {}).get("annotations") or {}).get("dsxos.io/actor"), "message": e.get("message")}
                              for e in events]
        recertified = sorted((out / "recertify").glob("*/certify-report.json"))
        result["recertify_report"] = str(recertified[-1]) if recertified else ""
        result["quarantine_history"] = quarantine_history(client, node)
        result["pods_after"] = running_pods(client, node)
        say("Incident %s of %s ended %s %.0f s after the POST; timeline (Kubernetes Events of the node):"
            % (result["incident"], node, result["outcome"], took))
        for item in result["timeline"]:
            say("  %s  %-22s %s" % (clock(item["time"] or ""), item["reason"], item["message"]))
        tell_story(result)
    finally:
        release()
        if manager is not None:
            manager.stop()
            say("stopped Alertmanager")
        if rulebook is not None and rulebook.stop():
            say("stopped ansible-rulebook")
        if client is not None:
            client.close()
        (out / "operate.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if result.get("outcome") == "returned" else EXIT_FAILED


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/demo_operate.py", description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="say what to install when Alertmanager, Java or ansible-rulebook is missing")
    check.add_argument("--venv", default=str(REPO / ".venv"))
    run = sub.add_parser("run", help="alert -> Alertmanager -> EDA -> sentinel, until the node's incident ends")
    run.add_argument("--venv", default=str(REPO / ".venv"))
    run.add_argument("--collections", required=True, help="collections root holding the installed dsxos.cluster")
    run.add_argument("--kubeconfig", required=True)
    run.add_argument("--out", required=True)
    run.add_argument("--certify-report", required=True, help="certify-report.json of the lifecycle run")
    run.add_argument("--node", default="", help="node of the alert (default: the first node the certification passed)")
    run.add_argument("--start-timeout-s", type=float, default=180.0)
    run.add_argument("--timeout-s", type=float, default=600.0, help="most seconds from the alert to the end of the incident")
    run.add_argument("--go-file", default="", help="start the servers at once, post the alert once this file exists")
    run.add_argument("--go-timeout-s", type=float, default=1800.0)
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    try:
        return cmd_check(args) if args.command == "check" else cmd_run(args)
    except RuntimeError as err:
        sys.stderr.write("demo: %s\n" % err)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
