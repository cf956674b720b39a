# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Single alert -> cordon latency through real Alertmanager + EDA (ansible-rulebook, dsxos.cluster.gpu_sentinel) + the
dsxos.cluster.remediate playbook, against the Kubernetes emulator; P50/P95 over ``--runs`` repetitions.

Each repetition POSTs ONE alert for a fresh node to Alertmanager and waits for the node's cordon (the time in its
quarantine record, ``dsxos.io/quarantine-prior`` ``since``), then for the playbook process to end, so repetitions never
queue behind each other. The time is split by polling the processes under ansible-rulebook (every 50 ms):

  to playbook - the POST until an ``ansible-playbook`` process exists: Alertmanager's group_wait, the EDA source's batch
                window, ansible-rulebook and ansible-runner starting the process;
  playbook    - from there to the cordon: Python/Ansible start-up, the plan (read the node, decide), the batch quarantine.

``after group_wait`` subtracts the configured group_wait (the issue's target: P95 < 3 s after group_wait).
``--chain playbook`` runs ``ansible-playbook dsxos.cluster.remediate`` directly with the event (no Alertmanager, no
EDA): the playbook's share alone.

Usage: python bench/sentinel_alert_latency_bench.py [--runs 10] [--group-wait 1s] [--batch-window-s 5] [--batch-quiet-s 1] [--chain eda|playbook]
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sentinel_storm_bench as storm  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.dsxos.cluster.tests.harness.rulebook_process import descendants  # noqa: E402  # pylint: disable=wrong-import-position


def playbook_pids(root: int) -> List[int]:
    """ansible-playbook processes below ``root``."""
    found = []
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"ansible-playbook" in handle.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def seconds(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0}
    for unit in ("ms", "s", "m"):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    return float(text)


def wait_cordon(cluster: storm.Cluster, node: str, timeout_s: float, root: Optional[int]) -> tuple[Optional[float], Optional[float]]:
    """(cordon time, first time an ansible-playbook process was seen under ``root``)."""
    deadline = time.monotonic() + timeout_s
    started: Optional[float] = None
    while time.monotonic() < deadline:
        if started is None and root is not None and playbook_pids(root):
            started = time.time()
        cordon = cluster.cordon_time(node)
        if cordon is not None:
            return cordon, started
        time.sleep(0.05)
    return None, started


def wait_idle(root: int, timeout_s: float, quiet_s: float = 1.5) -> None:
    """Until no playbook runs under ``root`` for ``quiet_s`` (the rulebook starts a batch's second run right after its
    intake: a single poll between the two would see none)."""
    deadline = time.monotonic() + timeout_s
    calm_since = time.monotonic()
    while time.monotonic() < deadline:
        if playbook_pids(root):
            calm_since = time.monotonic()
        elif time.monotonic() - calm_since >= quiet_s:
            return
        time.sleep(0.1)


def summary(values: List[float]) -> str:
    if not values:
        return "-"
    return f"{storm.percentile(values, 0.5):.2f} / {storm.percentile(values, 0.95):.2f}"


def main() -> int:  # pylint: disable=too-many-locals,too-many-statements
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--chain", choices=["eda", "playbook"], default="eda")
    parser.add_argument("--group-wait", default="1s", help="Alertmanager group_wait (production example: 30s)")
    parser.add_argument("--batch-window-s", type=float, default=5.0, help="the EDA source's batch window (sentinel_batch_window_s; shipped 5)")
    parser.add_argument("--batch-quiet-s", type=float, default=1.0, help="the EDA source's quiet time (sentinel_batch_quiet_s; shipped 1)")
    parser.add_argument("--batch-first-quiet-s", type=float, default=0.2,
                        help="the EDA source's quiet time after a calm (sentinel_batch_first_quiet_s; shipped 0.2)")
    parser.add_argument("--qps", type=float, default=500.0)
    parser.add_argument("--timeout-s", type=float, default=180.0)
    args = parser.parse_args()
    args.no_batch, args.workers, args.drain = False, 16, False
    work = Path(tempfile.mkdtemp(prefix="dsxos-latency-bench-"))
    rulebook = None
    cluster = None
    try:
        print(f"building and installing the collection (load {storm.load_average()}) ...", flush=True)
        collections = storm.build_and_install(work / "collections", work / "dist")
        cluster = storm.Cluster(work / "cluster", args.nodes, 0.01)
        inv = storm.inventory(work / "inventory.yml", storm.sentinel_vars(cluster, args, args.runs))
        load_before = storm.load_average()
        rows: List[Dict[str, Any]] = []
        if args.chain == "eda":
            token = work / "eda-token"
            token.write_text(storm.TOKEN + "\n", encoding="utf-8")
            token.chmod(0o600)
            port = storm.free_port()
            rulebook = storm.rulebook_process(work, collections, inv, {"sentinel_eda_port": port, "sentinel_eda_token_file": str(token),
                                                                       "sentinel_batch_window_s": args.batch_window_s,
                                                                       "sentinel_batch_quiet_s": args.batch_quiet_s,
                                                                       "sentinel_batch_first_quiet_s": args.batch_first_quiet_s})
            config = storm.alertmanager_config(rulebook.url, token, group_wait=args.group_wait, **storm.AM_TIMINGS)
            with storm.AlertmanagerProcess(str(work / "am"), config) as manager:
                posted = 0.0
                for index in range(args.runs):
                    node = cluster.names[index]
                    labels = storm.storm_alerts([node], 1, "fallen-off-bus")
                    # a single alert: the one before it came more than a batch window ago
                    time.sleep(max(0.0, posted + args.batch_window_s + 0.5 - time.time()))
                    posted = time.time()
                    manager.post_alerts([storm.firing(item) for item in labels])
                    cordon, started = wait_cordon(cluster, node, args.timeout_s, rulebook.proc.pid)
                    rows.append({"node": node, "total": None if cordon is None else cordon - posted,
                                 "to_playbook": None if started is None else started - posted,
                                 "playbook": None if (started is None or cordon is None) else cordon - started})
                    print(json.dumps(rows[-1]), flush=True)
                    wait_idle(rulebook.proc.pid, args.timeout_s)
        else:
            for index in range(args.runs):
                node = cluster.names[index]
                event = storm.to_event(storm.storm_alerts([node], 1, "fallen-off-bus")[0], index, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                extra = work / f"event-{index}.json"
                extra.write_text(json.dumps({"sentinel_events": [event]}), encoding="utf-8")
                started = time.time()
                proc = subprocess.run([str(storm.VENV_BIN / "ansible-playbook"), "-i", str(inv), "dsxos.cluster.remediate", "-e", f"@{extra}"],
                                      cwd=str(work), env=storm.ansible_env(collections), capture_output=True, timeout=args.timeout_s, check=False)
                cordon = cluster.cordon_time(node)
                if proc.returncode != 0:
                    print(proc.stdout.decode(errors="replace")[-3000:])
                rows.append({"node": node, "total": None if cordon is None else cordon - started, "to_playbook": 0.0,
                             "playbook": None if cordon is None else cordon - started})
                print(json.dumps(rows[-1]), flush=True)
        load_after = storm.load_average()
        totals = [r["total"] for r in rows if r["total"] is not None]
        group_wait = seconds(args.group_wait) if args.chain == "eda" else 0.0
        print()
        print(f"Single alert -> cordon, chain {args.chain}, {args.runs} runs, {len(totals)} cordoned; Alertmanager group_wait "
              f"{args.group_wait if args.chain == 'eda' else '-'}, EDA batch window {args.batch_window_s if args.chain == 'eda' else '-'} s "
              f"(quiet {args.batch_quiet_s if args.chain == 'eda' else '-'} s, after a calm "
              f"{args.batch_first_quiet_s if args.chain == 'eda' else '-'} s); "
              f"load {load_before} -> {load_after}")
        print()
        print("| P50 / P95 (s) | total | after group_wait | to playbook process | playbook to cordon |")
        print("|---|---|---|---|---|")
        print(f"| | {summary(totals)} | {summary([t - group_wait for t in totals])} | "
              f"{summary([r['to_playbook'] for r in rows if r['to_playbook'] is not None])} | "
              f"{summary([r['playbook'] for r in rows if r['playbook'] is not None])} |")
        print()
        print(json.dumps({"chain": args.chain, "runs": args.runs, "group_wait": args.group_wait, "batch_window_s": args.batch_window_s,
                          "batch_quiet_s": args.batch_quiet_s,
                          "batch_first_quiet_s": args.batch_first_quiet_s, "rows": rows, "load_before": load_before, "load_after": load_after}))
    finally:
        if rulebook is not None:
            rulebook.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    sys.exit(main())
