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

GPU work (what the fleet report's useful-work measure counts): before the alert, one GPU Job per certified node
(namespace ``training``, ``--work-gpus`` GPUs each, run by the emulator for ``--work-emulated-s`` emulated seconds:
annotation ``emulator.dsxos.io/duration``). ``--fault-after-s`` seconds after the alert node's Job pod started the
alert is posted, and the XID kills that pod: its status is written as the kubelet writes a crashed container's
(phase ``Failed``, exit code 134, ``finishedAt`` now), the emulated fault. The other Jobs complete on their own. The
pods' own ``startTime``/``finishedAt`` go into ``operate.json`` (``work``); the fleet report derives its GPU-hours from
the same fields.

Logs: ``<out>/logs/ansible-rulebook.log``, ``<out>/alertmanager/alertmanager.log``.
"""
from __future__ import annotations

import argparse
import calendar
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
#: the demo's GPU Jobs (their pods carry this label)
WORK_NAMESPACE = "training"
WORK_LABEL = "dsxos.io/demo-work"
#: the emulator runs a Job pod annotated with this many emulated seconds (tests/harness/k8s_emulator/controllers.py)
ANN_DURATION = "emulator.dsxos.io/duration"
GPU = "nvidia.com/gpu"
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


# ------------------------------------------------------------------------------------------------------------- GPU work

def gpu_job(name: str, node: str, gpus: int, emulated_s: float) -> Dict[str, Any]:
    """A one-pod training Job pinned to ``node`` (nodeSelector), ``gpus`` GPUs, no retry (``backoffLimit`` 0)."""
    labels = {WORK_LABEL: "true", "app": "finetune"}
    resources = {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": WORK_NAMESPACE, "labels": labels},
            "spec": {"backoffLimit": 0, "completions": 1, "parallelism": 1, "template": {
                "metadata": {"labels": labels, "annotations": {ANN_DURATION: str(emulated_s)}},
                "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": node},
                         "containers": [{"name": "train", "image": "registry.example.com/llm-finetune:1.0",
                                         "command": ["torchrun", "--nproc-per-node=%d" % gpus, "finetune.py"],
                                         "resources": resources}]}}}}


def start_gpu_jobs(client: Any, nodes: List[str], gpus: int, emulated_s: float) -> Dict[str, str]:
    """One GPU Job per node; returns {node: job name}."""
    jobs = {}
    for index, node in enumerate(nodes):
        name = "finetune-%d" % index
        client.call("create", "jobs", client.batch.create_namespaced_job, WORK_NAMESPACE, gpu_job(name, node, gpus, emulated_s))
        jobs[node] = name
    return jobs


def work_pods(client: Any) -> List[Dict[str, Any]]:
    resp = client.call("list", "pods", client.core.list_namespaced_pod, WORK_NAMESPACE, label_selector="%s=true" % WORK_LABEL,
                       _preload_content=False)
    return json.loads(resp.data).get("items") or []


def work_jobs(client: Any) -> List[Dict[str, Any]]:
    resp = client.call("list", "jobs", client.batch.list_namespaced_job, WORK_NAMESPACE, label_selector="%s=true" % WORK_LABEL,
                       _preload_content=False)
    return json.loads(resp.data).get("items") or []


def running_work_pod(client: Any, node: str) -> Optional[Dict[str, Any]]:
    """The demo's GPU pod Running on ``node``, if any."""
    for pod in work_pods(client):
        if (pod.get("spec") or {}).get("nodeName") == node and (pod.get("status") or {}).get("phase") == "Running":
            return pod
    return None


def rfc3339_now() -> str:
    """Now, to the second, as the kubelet writes container times (the next whole second is waited for by the caller)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def kill_pod(client: Any, namespace: str, name: str, message: str) -> Dict[str, Any]:
    """The fault kills the pod's containers: its status as the kubelet writes it (Failed, exit code 134, finishedAt now)."""
    for _attempt in range(5):
        resp = client.call("get", "pods", client.core.read_namespaced_pod, name, namespace, _preload_content=False)
        pod = json.loads(resp.data)
        status = pod.setdefault("status", {})
        if status.get("phase") != "Running":
            return pod
        now = rfc3339_now()
        status["phase"] = "Failed"
        for cond in status.get("conditions") or []:
            if cond.get("type") in ("Ready", "ContainersReady"):
                cond.update({"status": "False", "reason": "PodFailed", "lastTransitionTime": now})
        for cstat in status.get("containerStatuses") or []:
            started = ((cstat.get("state") or {}).get("running") or {}).get("startedAt") or status.get("startTime") or now
            cstat.update({"ready": False, "started": False, "state": {"terminated": {
                "exitCode": 134, "reason": "Error", "message": message, "startedAt": started, "finishedAt": now,
                "containerID": cstat.get("containerID", "")}}})
        try:
            resp = client.call("update", "pods", client.core.replace_namespaced_pod_status, name, namespace, pod, _preload_content=False)
            return json.loads(resp.data)
        except Exception as err:  # pylint: disable=broad-except  # a conflict: read again
            if getattr(err, "status", None) != 409:
                raise
    raise RuntimeError("could not write the failure of pod %s/%s (conflicts)" % (namespace, name))


def _epoch(text: Optional[str]) -> Optional[float]:
    if not text:
        return None
    return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))


def work_record(pods: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Each demo GPU pod with its own times, and the GPU-hours by outcome (GPUs x (finishedAt - startTime))."""
    rows = []
    totals = {"succeeded": 0.0, "failed": 0.0, "running": 0.0}
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        status = pod.get("status") or {}
        terminated = [((c.get("state") or {}).get("terminated") or {}) for c in status.get("containerStatuses") or []]
        finished = max((t.get("finishedAt") for t in terminated if t.get("finishedAt")), default=None)
        gpus = sum(int(((c.get("resources") or {}).get("limits") or {}).get(GPU, 0)) for c in (pod.get("spec") or {}).get("containers") or [])
        start, end = _epoch(status.get("startTime")), _epoch(finished)
        hours = gpus * (end - start) / 3600.0 if start is not None and end is not None else 0.0
        phase = status.get("phase")
        key = {"Succeeded": "succeeded", "Failed": "failed"}.get(phase, "running")
        totals[key] += hours
        rows.append({"pod": pod["metadata"]["name"], "job": (pod["metadata"].get("labels") or {}).get("job-name"),
                     "node": (pod.get("spec") or {}).get("nodeName"), "gpus": gpus, "phase": phase, "start": status.get("startTime"),
                     "end": finished, "exit_code": next((t.get("exitCode") for t in terminated if "exitCode" in t), None),
                     "gpu_hours": round(hours, 6)})
    return {"pods": rows, "gpu_hours": {k: round(v, 6) for k, v in totals.items()}}


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

        # GPU work: one Job per certified node; the one on the alert node is the fault's victim.
        jobs = start_gpu_jobs(client, picked["passed"], args.work_gpus, args.work_emulated_s)
        say("GPU work: %d Jobs in namespace %s, one per certified node, %d GPUs each, %s emulated s each (%.0f s of wall clock here)"
            % (len(jobs), WORK_NAMESPACE, args.work_gpus, args.work_emulated_s, args.work_emulated_s * args.time_scale))
        victim = wait_until(lambda: running_work_pod(client, node), 120, "Job %s to run on %s" % (jobs[node], node), step_s=0.25,
                            error=RuntimeError)
        victim_started = _epoch((victim.get("status") or {}).get("startTime")) or time.time()
        time.sleep(max(0.0, victim_started + args.fault_after_s - time.time()))

        result["pods_before"] = running_pods(client, node)
        posted = time.monotonic()
        manager.post_alerts([xid79_alert(node)])
        say("POST %s/api/v2/alerts: GPUFallenOffBus (XID 79) on GPU 3 of %s" % (manager.url, node))
        # The XID took GPU 3 away: the training process on it dies. Its container's finishedAt is written to the second
        # (as the kubelet does), so wait for the next second: the failure is not dated before the alert.
        time.sleep(1.0 - (time.time() % 1.0) + 0.05)
        killed = kill_pod(client, WORK_NAMESPACE, victim["metadata"]["name"],
                          "CUDA error: unspecified launch failure (Xid 79: GPU has fallen off the bus)")
        result["fault_victim"] = "%s/%s" % (WORK_NAMESPACE, killed["metadata"]["name"])
        say("  the XID kills %s (Job %s, %d GPUs, running since %s): phase %s, exit code 134"
            % (result["fault_victim"], jobs[node], args.work_gpus, clock((killed.get("status") or {}).get("startTime") or ""),
               (killed.get("status") or {}).get("phase")))

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

        def work_done() -> Optional[List[Dict[str, Any]]]:
            found = work_jobs(client)
            ended = [j for j in found if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                                             for c in (j.get("status") or {}).get("conditions") or [])]
            return found if len(found) == len(jobs) and len(ended) == len(found) else None

        finished_jobs = wait_until(work_done, args.timeout_s, "the demo's GPU Jobs to finish", step_s=0.5, error=RuntimeError)
        result["work"] = work_record(work_pods(client))

        def outcome(job: Dict[str, Any]) -> str:
            conditions = (job.get("status") or {}).get("conditions") or []
            return "Complete" if any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions) else "Failed"

        result["work"]["jobs"] = {j["metadata"]["name"]: outcome(j) for j in finished_jobs}
        say("GPU Jobs: %d Complete, %d Failed; from their pods' startTime and finishedAt: %.4f GPU-hours completed, %.4f killed by the XID"
            % (sum(1 for v in result["work"]["jobs"].values() if v == "Complete"), sum(1 for v in result["work"]["jobs"].values() if v == "Failed"),
               result["work"]["gpu_hours"]["succeeded"], result["work"]["gpu_hours"]["failed"]))
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
    run.add_argument("--work-gpus", type=int, default=4, help="GPUs of each demo GPU Job (one per certified node)")
    run.add_argument("--work-emulated-s", type=float, default=300.0, help="emulated seconds each demo GPU Job runs")
    run.add_argument("--time-scale", type=float, default=0.05, help="the emulator's time scale (for the printed wall-clock time)")
    run.add_argument("--fault-after-s", type=float, default=5.0,
                     help="wall-clock seconds the alert node's Job runs before the XID (the alert) kills it")
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
