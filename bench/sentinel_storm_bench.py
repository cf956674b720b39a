# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Alert storm benchmark: 1,000 alerts in 10 s over 150 (or 375) of 1,500 nodes, through the real chain.

Chain (``--chain eda``, the default): alerts are POSTed to a real Alertmanager (tests/harness/alertmanager_process.py,
configured from extensions/alertmanager/alertmanager.yml with ``--group-wait``), which sends them to the EDA source
``dsxos.cluster.alertmanager_gpu`` inside a real ``ansible-rulebook`` (tests/harness/rulebook_process.py) running the
shipped rulebook ``dsxos.cluster.gpu_sentinel``, which runs the real ``dsxos.cluster.remediate`` playbook of the freshly built and
installed collection against the Kubernetes emulator (1,500 GPU nodes). ``--chain playbook`` skips Alertmanager and
EDA: one ``ansible-playbook dsxos.cluster.remediate`` run gets every alert as ``sentinel_events`` (the playbook's
share of the latency).

Measured per faulty node:

* cordon time: the time in the node's quarantine record (``dsxos.io/quarantine-prior`` ``since``, written with the
  cordon) minus the POST of the node's FIRST alert; P50, P90, max;
* duplicates: nodes with more than one incident (``SentinelQuarantined`` Events, open + ended incidents);
* lost: faulty nodes never quarantined within ``--timeout-s``;
* with ``--drain``: pods on the faulty nodes (``--pods-per-node``, 30 s grace each), the ``nvlink`` fault class (action
  ``quarantine_drain``) and ``sentinel_destructive: true``; the wall time from the first POST until every faulty node's
  incident is ``drained`` (the run drains all nodes in one ``sentinel_drain`` task). NVSentinel's 8 minutes are with
  the pods' real 30 s grace: compare with ``--time-scale 1`` (the default 0.01 makes a 30 s grace 0.3 s).

The circuit breaker's default (10% of GPU nodes, at most 10) would refuse most of a 150-node storm: the bench raises
``max_nodes`` to the number of faulty nodes and says so. The uptime load average is printed beside the figures.

Usage: python bench/sentinel_storm_bench.py [--faulty 150|375] [--nodes 1500] [--alerts 1000] [--post-s 10]
       [--chain eda|playbook] [--group-wait 1s] [--batch-window-s 5] [--batch-quiet-s 1] [--batch-first-quiet-s 0.2]
       [--workers 16] [--qps 500] [--drain] [--no-batch]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position
sys.path.insert(0, str(REPO / "tests" / "integration"))

from playbook_runner import build_and_install  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import parse_rfc3339  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.alertmanager_process import (  # noqa: E402
    AlertmanagerProcess, alert, alertmanager_config, free_port, rfc3339)
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.emulator import Emulator  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.rulebook_process import RulebookProcess, localhost_inventory  # noqa: E402

#: NVSentinel v0.4.0 published figures (150 / 375 simultaneous fatal events; draining 150 nodes x 15 pods, 30 s grace).
NVSENTINEL = {150: {"cordon_p50_s": 16.75, "cordon_p90_s": 28.15, "drain_all_s": 480.0}, 375: {"cordon_p90_s": 163.0}}
TOKEN = "bench-token-not-secret"
VENV_BIN = Path(sys.executable).parent
#: Alertmanager timings of the benches besides ``--group-wait`` (``alertmanager_config(..., group_wait=..., **AM_TIMINGS)``)
AM_TIMINGS = {"group_interval": "5s", "repeat_interval": "4h"}


def load_average() -> str:
    with open("/proc/loadavg", encoding="utf-8") as handle:
        return " ".join(handle.read().split()[:3])


def percentile(values: List[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = fraction * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# ---------------------------------------------------------------------------------------------------- the cluster

class Cluster:
    """The emulator with the GPU fleet, and what the sentinel recorded on the nodes."""

    def __init__(self, workdir: Path, nodes: int, time_scale: float) -> None:
        self.emu = Emulator(time_scale=time_scale, seed=7, workdir=str(workdir / "emulator"))
        self.emu.start()
        self.names = self.emu.add_nodes(nodes, "h100-eks", name_prefix="gpu-node-")

    def stop(self) -> None:
        self.emu.stop()

    def annotations(self, name: str) -> Dict[str, str]:
        return self.emu.api.get("v1", "Node", name)["metadata"].get("annotations") or {}

    def cordon_time(self, name: str) -> Optional[float]:
        """When the sentinel cordoned the node (the quarantine record's ``since``), or None."""
        text = self.annotations(name).get("dsxos.io/quarantine-prior")
        if not text:
            return None
        since = json.loads(text).get("since")
        return parse_rfc3339(since) if since else None

    def drained_time(self, name: str) -> Optional[float]:
        text = self.annotations(name).get("dsxos.io/incident")
        if not text:
            return None
        steps = [s for s in json.loads(text).get("steps") or [] if s.get("state") == "drained"]
        return parse_rfc3339(steps[0]["time"]) if steps else None

    def incidents_per_node(self) -> Dict[str, int]:
        """Incidents recorded on each node: the open one plus the ended ones (Events are not used: the emulator expires
        them like Kubernetes does, scaled by its time scale)."""
        counts: Dict[str, int] = {}
        for node in self.emu.api.list("v1", "Node"):
            meta = node["metadata"]
            notes = meta.get("annotations") or {}
            count = (1 if notes.get("dsxos.io/incident") else 0) + len(json.loads(notes.get("dsxos.io/incident-history") or "[]"))
            if count:
                counts[meta["name"]] = count
        return counts


# ---------------------------------------------------------------------------------------------------- the chain

def timeline(log_path: Path, origin: float) -> Dict[str, float]:
    """Seconds from ``origin`` to the first start of each TIMELINE task in an Ansible log (local time stamps)."""
    out: Dict[str, float] = {}
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        if "TASK [" not in line:
            continue
        stamp = line[:23]
        try:
            when = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) + int(stamp[20:23]) / 1000.0
        except ValueError:
            continue
        for key, name in TIMELINE.items():
            if key not in out and name in line:
                out[key] = round(when - origin, 2)
    return out


def inventory(path: Path, host_vars: Dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(localhost_inventory(host_vars)), encoding="utf-8")
    return path


#: tasks whose first start (from ANSIBLE_LOG_PATH) splits the time: playbook start, plan, batch, after the batch
TIMELINE = {"playbook": "Start the run", "plan": "Validate the events", "decided": "Show the decisions",
            "batch": "Quarantine every node the plan opens", "after batch": "Warn when the batch failed"}


def ansible_env(collections: Path, log_path: Optional[Path] = None) -> Dict[str, str]:
    extra = {"ANSIBLE_LOG_PATH": str(log_path)} if log_path else {}
    return dict(os.environ, **extra, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False",
                ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="False",
                PATH=str(VENV_BIN) + os.pathsep + os.environ.get("PATH", ""))


def sentinel_vars(cluster: Cluster, args: argparse.Namespace, faulty: int) -> Dict[str, Any]:
    return {"sentinel_k8s_auth": {"kubeconfig": cluster.emu.kubeconfig_path, "qps": args.qps, "burst": max(100, int(args.qps))},
            "sentinel_circuit_breaker": {"max_fraction": 1.0, "max_nodes": max(10, faulty)},
            "sentinel_batch_quarantine": not args.no_batch, "sentinel_batch_workers": args.workers,
            "sentinel_destructive": bool(args.drain),
            "sentinel_drain": {"timeout_s": 600, "force": True, "pdb_retry_s": 0.2, "pdb_retry_max_s": 1.0},
            "sentinel_fail_on_error": False}


def rulebook_process(workdir: Path, collections: Path, inventory_path: Path, rulebook_vars: Dict[str, Any]) -> RulebookProcess:
    """ansible-rulebook running the shipped rulebook dsxos.cluster.gpu_sentinel, as the benches run it, started: its Ansible
    log in ``workdir``/ansible.log (the timeline), up to 240 s to start, and stopped with the playbooks it started (by PID:
    ansible-runner gives them a session of their own). A missing ansible-rulebook or Java ends the bench (SystemExit)."""
    return RulebookProcess(workdir, "dsxos.cluster.gpu_sentinel", inventory_path, rulebook_vars, collections, vars_name="rulebook-vars.yml",
                           extra_env={"ANSIBLE_LOG_PATH": str(workdir / "ansible.log"), "ANSIBLE_HOST_KEY_CHECKING": "False"},
                           verbose=False, start_timeout_s=240, step_s=0.5, kill_descendants=True, error=SystemExit, log_tail=4000).start()


def firing(labels: Dict[str, str]) -> Dict[str, Any]:
    """An alert for Alertmanager that stays firing for an hour (like Prometheus re-sending it): without ``endsAt``
    Alertmanager resolves it after its resolve_timeout (5 min) and the release runs would queue before later storms."""
    body = alert(labels)
    body["endsAt"] = rfc3339(time.time() + 3600)
    return body


def storm_alerts(faulty: List[str], count: int, fault_class: str) -> List[Dict[str, str]]:
    """``count`` alert label sets over the faulty nodes: every node at least once, then GPUs 0-7 round robin."""
    out = []
    for index in range(count):
        node = faulty[index % len(faulty)]
        gpu = (index // len(faulty)) % 8
        out.append({"alertname": "GpuXidFatal", "severity": "critical", "node": node, "gpu": str(gpu), "fault_class": fault_class,
                    "code": "74" if fault_class == "nvlink" else "79", "action": "reboot"})
    return out


def post_storm(post: Any, labels: List[Dict[str, str]], post_s: float, chunks: int) -> Dict[str, float]:
    """POST ``labels`` in ``chunks`` evenly over ``post_s`` seconds; returns the first post time per node."""
    first: Dict[str, float] = {}
    size = max(1, -(-len(labels) // chunks))
    began = time.time()
    for number, start in enumerate(range(0, len(labels), size)):
        due = began + number * post_s / chunks
        time.sleep(max(0.0, due - time.time()))
        chunk = labels[start:start + size]
        posted = time.time()
        post(chunk)
        for item in chunk:
            first.setdefault(item["node"], posted)
    return first


def to_event(labels: Dict[str, str], index: int, starts_at: str) -> Dict[str, Any]:
    """A normalized alert event (what the EDA source would produce) for ``--chain playbook``."""
    return {"node": labels["node"], "gpu": labels["gpu"], "uuid": None, "code": int(labels["code"]), "fault_class": labels["fault_class"],
            "action": labels["action"], "status": "firing", "fingerprint": f"bench{index:06d}", "starts_at": starts_at, "ends_at": None,
            "pods": [], "alertname": labels["alertname"], "severity": labels["severity"], "labels": dict(labels)}


def wait_for(cluster: Cluster, faulty: List[str], timeout_s: float, drained: bool) -> Dict[str, Dict[str, Optional[float]]]:
    deadline = time.monotonic() + timeout_s
    seen: Dict[str, Dict[str, Optional[float]]] = {n: {"cordon": None, "drained": None} for n in faulty}
    while time.monotonic() < deadline:
        for name in faulty:
            if seen[name]["cordon"] is None:
                seen[name]["cordon"] = cluster.cordon_time(name)
            if drained and seen[name]["drained"] is None:
                seen[name]["drained"] = cluster.drained_time(name)
        if all(v["cordon"] is not None and (not drained or v["drained"] is not None) for v in seen.values()):
            # the batch opens the incidents after all cordons: count incidents once every cordoned node has one
            if all(cluster.annotations(n).get("dsxos.io/incident") for n in faulty) or time.monotonic() > deadline - 1:
                break
        time.sleep(0.5)
    return seen


# ---------------------------------------------------------------------------------------------------- one scenario

def run_storm(args: argparse.Namespace, work: Path, collections: Path, faulty_count: int) -> Dict[str, Any]:
    work = work / f"scenario-{faulty_count}"
    work.mkdir()
    cluster = Cluster(work, args.nodes, args.time_scale)
    runner: Optional[subprocess.Popen] = None
    rulebook: Optional[RulebookProcess] = None
    try:
        stride = max(1, args.nodes // faulty_count)
        faulty = [cluster.names[i * stride] for i in range(faulty_count)]
        if args.drain:
            cluster.emu.seed_pods(args.pods_per_node, namespace="train", nodes=faulty)
        fault_class = "nvlink" if args.drain else "fallen-off-bus"
        labels = storm_alerts(faulty, args.alerts, fault_class)
        inv = inventory(work / f"inventory-{faulty_count}.yml", sentinel_vars(cluster, args, faulty_count))
        load_before = load_average()
        if args.chain == "eda":
            token = work / "eda-token"
            token.write_text(TOKEN + "\n", encoding="utf-8")
            token.chmod(0o600)
            port = free_port()
            rulebook_vars = {"sentinel_eda_port": port, "sentinel_eda_token_file": str(token), "sentinel_batch_window_s": args.batch_window_s,
                             "sentinel_batch_quiet_s": args.batch_quiet_s,
                             "sentinel_batch_first_quiet_s": args.batch_first_quiet_s,
                             "sentinel_batch_max": 100000, "sentinel_queue_size": 100000}
            rulebook = rulebook_process(work, collections, inv, rulebook_vars)
            config = alertmanager_config(rulebook.url, token, group_wait=args.group_wait, **AM_TIMINGS)
            with AlertmanagerProcess(str(work / f"am-{faulty_count}"), config) as manager:
                began = time.time()
                first = post_storm(lambda chunk: manager.post_alerts([firing(item) for item in chunk]), labels, args.post_s, args.chunks)
                posted_s = time.time() - began
                seen = wait_for(cluster, faulty, args.timeout_s, args.drain)
        else:
            starts_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            events = [to_event(item, index, starts_at) for index, item in enumerate(labels)]
            extra = work / f"events-{faulty_count}.json"
            extra.write_text(json.dumps({"sentinel_events": events}), encoding="utf-8")
            began = time.time()
            first = {n: began for n in faulty}
            log = open(work / f"playbook-{faulty_count}.log", "wb")  # pylint: disable=consider-using-with
            runner = subprocess.Popen([str(VENV_BIN / "ansible-playbook"), "-i", str(inv), "dsxos.cluster.remediate", "-e", f"@{extra}"],
                                      cwd=str(work), env=ansible_env(collections, work / "ansible.log"), stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
            log.close()
            posted_s = 0.0
            seen = wait_for(cluster, faulty, args.timeout_s, args.drain)
        load_after = load_average()
        split = timeline(work / "ansible.log", min(first.values()))
        cordon = {n: v["cordon"] - first[n] for n, v in seen.items() if v["cordon"] is not None}
        incidents = cluster.incidents_per_node()
        duplicates = sorted(n for n, c in incidents.items() if c > 1)
        lost = sorted(n for n in faulty if n not in cordon)
        unexpected = sorted(n for n in incidents if n not in set(faulty))
        drained = [v["drained"] for v in seen.values() if v["drained"] is not None]
        values = list(cordon.values())
        return {"faulty": faulty_count, "nodes": args.nodes, "alerts": len(labels), "post_s": round(posted_s, 2), "chain": args.chain,
                "quarantined": len(cordon), "incidents": sum(incidents.values()), "duplicates": len(duplicates), "lost": len(lost),
                "unexpected": len(unexpected),
                "cordon_p50_s": round(percentile(values, 0.5), 2), "cordon_p90_s": round(percentile(values, 0.9), 2),
                "cordon_max_s": round(max(values), 2) if values else None,
                "cordon_mean_s": round(statistics.mean(values), 2) if values else None,
                "drain_all_s": round(max(drained) - min(first.values()), 1) if args.drain and len(drained) == faulty_count else None,
                "drained": len(drained) if args.drain else None, "first_post_to_task_s": split,
                "first_cordon_s": round(min(v["cordon"] for v in seen.values() if v["cordon"] is not None) - min(first.values()), 2) if values else None,
                "load_before": load_before, "load_after": load_after}
    finally:
        if runner is not None and runner.poll() is None:
            os.killpg(runner.pid, signal.SIGTERM)
            runner.wait(timeout=30)
        if rulebook is not None:
            rulebook.stop()
        cluster.stop()


def report(results: List[Dict[str, Any]], args: argparse.Namespace) -> None:
    print()
    print(f"Storm bench: chain {args.chain}, group_wait {args.group_wait if args.chain == 'eda' else '-'}, batch window "
          f"{args.batch_window_s if args.chain == 'eda' else '-'} s (quiet {args.batch_quiet_s if args.chain == 'eda' else '-'} s, "
          f"after a calm {args.batch_first_quiet_s if args.chain == 'eda' else '-'} s), "
          f"batch quarantine {'off' if args.no_batch else 'on'} "
          f"({args.workers} workers, client qps {args.qps:g}), circuit breaker raised to max_nodes = faulty nodes (default 10% / 10 "
          f"would hold back all but 10), emulator time scale {args.time_scale:g}")
    print()
    print("| faulty / nodes | alerts | quarantined | duplicates | lost | cordon P50 | cordon P90 | cordon max | NVSentinel P50 / P90 | "
          "P90 ratio | all drained | NVSentinel drain | load before -> after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        nv = NVSENTINEL.get(r["faulty"], {})
        nv_text = " / ".join(f"{nv[k]:g} s" for k in ("cordon_p50_s", "cordon_p90_s") if k in nv) or "-"
        ratio = "-"
        if nv.get("cordon_p90_s") and r["cordon_p90_s"]:
            factor = nv["cordon_p90_s"] / r["cordon_p90_s"]
            ratio = f"{factor:.2f}x faster" if factor >= 1 else f"{1 / factor:.2f}x slower"
        drain = f"{r['drain_all_s']} s" if r.get("drain_all_s") is not None else ("-" if not args.drain else f"{r['drained']} drained")
        nv_drain = f"{nv['drain_all_s']:g} s" if args.drain and nv.get("drain_all_s") else "-"
        if nv_drain != "-" and r.get("drain_all_s"):
            nv_drain += f" ({nv['drain_all_s'] / r['drain_all_s']:.1f}x{'' if args.time_scale == 1 else ', grace periods scaled'})"
        print(f"| {r['faulty']} / {r['nodes']} | {r['alerts']} in {r['post_s']} s | {r['quarantined']} | {r['duplicates']} | {r['lost']} | "
              f"{r['cordon_p50_s']} s | {r['cordon_p90_s']} s | {r['cordon_max_s']} s | {nv_text} | {ratio} | {drain} | {nv_drain} | "
              f"{r['load_before']} -> {r['load_after']} |")
    print()
    for r in results:
        print(f"{r['faulty']} nodes: seconds from the first POST to the first start of: {json.dumps(r['first_post_to_task_s'])}; "
              f"first cordon {r['first_cordon_s']} s")
    print()
    print(json.dumps(results))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--faulty", type=int, action="append", help="faulty nodes (repeatable; default 150)")
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--alerts", type=int, default=1000)
    parser.add_argument("--post-s", type=float, default=10.0, help="seconds over which the alerts are posted")
    parser.add_argument("--chunks", type=int, default=20, help="POSTs the storm is split into")
    parser.add_argument("--chain", choices=["eda", "playbook"], default="eda")
    parser.add_argument("--group-wait", default="1s", help="Alertmanager group_wait (production example: 30s)")
    parser.add_argument("--batch-window-s", type=float, default=5.0, help="the EDA source's batch window (sentinel_batch_window_s; shipped 5)")
    parser.add_argument("--batch-first-quiet-s", type=float, default=0.2,
                        help="the EDA source's quiet time for the first window after a calm (sentinel_batch_first_quiet_s; shipped 0.2)")
    parser.add_argument("--batch-quiet-s", type=float, default=1.0,
                        help="the EDA source's quiet time (sentinel_batch_quiet_s; shipped 1; the window's length keeps a fixed window)")
    parser.add_argument("--workers", type=int, default=16, help="sentinel_batch_workers")
    parser.add_argument("--qps", type=float, default=500.0, help="client QPS of the sentinel's modules (sentinel_k8s_auth.qps)")
    parser.add_argument("--keep-work", action="store_true", help="keep the work directory (logs of ansible-rulebook and every run)")
    parser.add_argument("--no-batch", action="store_true", help="sentinel_batch_quarantine: false (the per-node loop only)")
    parser.add_argument("--drain", action="store_true", help="pods on the faulty nodes, quarantine_drain, wait until all drained")
    parser.add_argument("--pods-per-node", type=int, default=15)
    parser.add_argument("--time-scale", type=float, default=0.01, help="emulator time scale (grace periods)")
    parser.add_argument("--timeout-s", type=float, default=900.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dsxos-storm-bench-"))
    try:
        print(f"building and installing the collection (load {load_average()}) ...", flush=True)
        collections = build_and_install(work / "collections", work / "dist")
        results = []
        for count in args.faulty or [150]:
            print(f"storm over {count} of {args.nodes} nodes ({args.chain}) ...", flush=True)
            results.append(run_storm(args, work, collections, count))
            print(json.dumps(results[-1]), flush=True)
        report(results, args)
    finally:
        if args.keep_work:
            print(f"work directory kept: {work} (ansible.log of every run under scenario-*/)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    # the storm's correctness is part of the figure: exactly the faulty nodes quarantined once, none lost, none drained short
    wrong = [f"{r['faulty']} faulty: {r['quarantined']} quarantined, {r['duplicates']} duplicate(s), {r['lost']} lost, "
             f"{r['unexpected']} unexpected" + (f", {r['drained']} drained" if r["drained"] is not None else "")
             for r in results if r["quarantined"] != r["faulty"] or r["duplicates"] or r["lost"] or r["unexpected"]
             or (r["drained"] is not None and r["drained"] != r["faulty"])]
    if wrong:
        print("STORM FAILED: " + "; ".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "storm-bench"
    sys.exit(main())
