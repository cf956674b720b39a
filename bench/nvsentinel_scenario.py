# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""NVSentinel v0.4.0's published scale scenario, replayed on the emulator with dsxos.cluster's node actions.

Scenario (NVSentinel scale test on a 1500-node EKS cluster): 15 pods per node, 30 s termination grace, 150 nodes
(then 375 and 750) fail at once. NVSentinel needed P50 16.75 s / P90 28.15 s to cordon the 150 nodes and about
8 minutes to drain them, bottlenecked at ~5 evictions/s.

Here: the emulator serves 1500 nodes x 15 bare pods (its own process, so it does not share the GIL with the client);
the bench calls the module_utils in-process with one KubeClient (QPS limiter, default 50 QPS / burst 100):
``run_node_action(cordon, circuit_breaker=...)`` on all failing nodes at once, then ``drain_nodes(force=True)``.

Reported per case: cordon latency P50/P90 measured from the moment the nodes fail, total time until every pod of every
failed node is gone, evictions/s during the eviction phase, API calls by verb. Targets for 150 nodes: cordon P90 < 5 s,
everything drained < 90 s in REAL time (a 30 s grace period plus 2,250 evictions at 50 QPS).

Time scale: only emulated delays scale (grace period, kubelet), API work runs at full speed. At ``--time-scale`` s < 1 the
real-time equivalent of the drain is reported as ``measured + grace * (1 - s)`` (the grace tail is the only scaled part on
the critical path) and labelled as an estimate; ``--full`` also runs the 150-node case at time scale 1 (real figure).

Quick mode (default, ~2 minutes on 2 cores): all three cases quarantine, only the 150-node case drains (at time scale 0.1).
``--full`` (~10 minutes): every case drains, and the 150-node case runs again at time scale 1.

Usage: python bench/nvsentinel_scenario.py [--time-scale 0.1] [--cases 150,375,750] [--drain-cases 150] [--qps 50] [--full] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import DrainPolicy  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import DrainOptions, drain_nodes  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import QuarantineOptions, run_node_action  # noqa: E402

CLUSTER_NODES = 1500
PODS_PER_NODE = 15
GRACE_S = 30.0
NVSENTINEL = {"cordon_p50_s": 16.75, "cordon_p90_s": 28.15, "drain_s": 480.0, "evictions_per_s": 5.0}
TARGET_CORDON_P90_S = 5.0
TARGET_DRAIN_S = 90.0


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, int(round(pct / 100.0 * len(ordered) + 0.5)))
    return ordered[min(rank, len(ordered)) - 1]


class EmulatorProcess:
    """``python -m tests.harness.k8s_emulator serve`` in its own process."""

    def __init__(self, time_scale: float, workdir: str) -> None:
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, "-m", "tests.harness.k8s_emulator", "serve", "--nodes", str(CLUSTER_NODES), "--pods-per-node",
             str(PODS_PER_NODE), "--time-scale", str(time_scale), "--kubeconfig", self.kubeconfig],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.proc.stdout.readline()
        info = self.proc.stdout.readline()
        if not info:
            raise RuntimeError(f"emulator did not start: {self.proc.stderr.read() if self.proc.stderr else ''}")
        self.info = json.loads(info)

    def stop(self) -> None:
        """SIGTERM and wait."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


class EvictionMonitor(threading.Thread):
    """Samples the client's eviction counter to time the eviction phase."""

    def __init__(self, client: KubeClient) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.first: float | None = None
        self.last: float | None = None
        self.count = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(0.02):
            count = self.client.stats.get("create pods/eviction", 0)
            if count > self.count:
                now = time.monotonic()
                self.first = self.first or now
                self.last = now
                self.count = count


def run_case(failing: int, time_scale: float, qps: float, burst: int, seed: int, drain: bool = True) -> dict[str, Any]:
    """One scenario run on a fresh 1500-node emulator (``drain=False``: quarantine only)."""
    with tempfile.TemporaryDirectory(prefix="dsxos-nvsentinel-") as workdir:
        emu = EmulatorProcess(time_scale, workdir)
        try:
            client = KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig, "qps": qps, "burst": burst, "retries": 8}))
            client.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dsxos-system"}})
            names = sorted(json.loads(client.core.list_node(_preload_content=False).data)["items"],
                           key=lambda n: n["metadata"]["name"])
            victims = random.Random(seed).sample([n["metadata"]["name"] for n in names], failing)
            client.stats.clear()
            breaker = BreakerConfig(max_fraction=failing / CLUSTER_NODES, max_nodes=failing)
            reason = "NVSentinel scenario: GPU XID 79 (fell off the bus)"
            t_fail = time.monotonic()
            quarantine = run_node_action(client, victims, QuarantineOptions(action="cordon", reason=reason, actor="bench",
                                                                            circuit_breaker=breaker))
            cordon_latency = [r.finished_at - t_fail for r in quarantine.results]
            cordon_calls = dict(client.stats)
            monitor = EvictionMonitor(client)
            report = None
            if drain:
                monitor.start()
                t_drain = time.monotonic()
                report = drain_nodes(client, victims, DrainOptions(reason=reason, actor="bench", policy=DrainPolicy.build(force=True),
                                                                   timeout_s=1800))
                t_done = time.monotonic()
                monitor.stop_event.set()
                monitor.join()
            client.close()
        finally:
            emu.stop()
    base = {"failing_nodes": failing, "time_scale": time_scale, "qps": qps, "burst": burst, "drained": drain,
            "quarantined": len([r for r in quarantine.results if r.status == "changed"]),
            "refused_by_breaker": len(quarantine.names("refused")),
            "cordon_p50_s": statistics.median(cordon_latency), "cordon_p90_s": percentile(cordon_latency, 90),
            "cordon_max_s": max(cordon_latency), "cordon_api_calls": cordon_calls}
    if report is None:
        return base
    totals = report.to_dict()["totals"]
    evictions = totals.get("evicted", 0)
    phase = (monitor.last - monitor.first) if monitor.first and monitor.last and monitor.last > monitor.first else 0.0
    drain_total = t_done - t_fail
    grace_scaled = GRACE_S * time_scale
    return {
        **base,
        "drain_wall_s": drain_total, "drain_only_s": t_done - t_drain,
        "drain_real_time_s": drain_total if time_scale >= 1.0 else drain_total + GRACE_S - grace_scaled,
        "real_time_is_estimate": time_scale < 1.0,
        "drained_nodes": len(report.to_dict()["drained_nodes"]), "failed_nodes": len(report.to_dict()["failed_nodes"]),
        "evictions": evictions, "evictions_per_s": evictions / phase if phase > 0 else float(evictions),
        "pod_outcomes": totals, "api_calls": report.api_calls, "api_calls_total": sum(report.api_calls.values()),
    }


def print_case(res: dict[str, Any]) -> None:
    """Figures next to NVSentinel's published ones."""
    if not res["drained"]:
        print(f"-- {res['failing_nodes']} of {CLUSTER_NODES} nodes fail at once: quarantine only (the drain runs with --full) --")
        print(f"  cordon latency P50 {res['cordon_p50_s']:.2f} s, P90 {res['cordon_p90_s']:.2f} s (NVSentinel published only the 150-node "
              f"figures); quarantined {res['quarantined']}, refused {res['refused_by_breaker']}; API calls "
              + json.dumps(res["cordon_api_calls"], sort_keys=True))
        return
    est = " (estimate: measured + grace x (1 - scale))" if res["real_time_is_estimate"] else " (measured at time scale 1)"
    print(f"-- {res['failing_nodes']} of {CLUSTER_NODES} nodes fail at once (time scale {res['time_scale']:g}, QPS {res['qps']:g}/burst "
          f"{res['burst']}) --")
    rows = [
        ("quarantined / refused by breaker", f"{res['quarantined']} / {res['refused_by_breaker']}", ""),
        ("cordon latency P50", f"{res['cordon_p50_s']:.2f} s", f"NVSentinel {NVSENTINEL['cordon_p50_s']} s -> "
                                                               f"{NVSENTINEL['cordon_p50_s'] / max(res['cordon_p50_s'], 1e-6):.1f}x"),
        ("cordon latency P90", f"{res['cordon_p90_s']:.2f} s", f"NVSentinel {NVSENTINEL['cordon_p90_s']} s -> "
                                                               f"{NVSENTINEL['cordon_p90_s'] / max(res['cordon_p90_s'], 1e-6):.1f}x"),
        ("drained nodes / failed", f"{res['drained_nodes']} / {res['failed_nodes']}", ""),
        ("evictions", f"{res['evictions']} at {res['evictions_per_s']:.1f}/s",
         f"NVSentinel ~{NVSENTINEL['evictions_per_s']:g}/s -> {res['evictions_per_s'] / NVSENTINEL['evictions_per_s']:.1f}x"),
        ("fail -> all pods gone (wall)", f"{res['drain_wall_s']:.1f} s", ""),
        ("fail -> all pods gone (real time)", f"{res['drain_real_time_s']:.1f} s{est}",
         f"NVSentinel ~{NVSENTINEL['drain_s']:.0f} s (150 nodes) -> {NVSENTINEL['drain_s'] / max(res['drain_real_time_s'], 1e-6):.1f}x"),
        ("API calls", f"{res['api_calls_total']} " + json.dumps(res["api_calls"], sort_keys=True), ""),
    ]
    if res["failing_nodes"] == 150:
        rows.insert(3, ("target cordon P90 < 5 s", "OK" if res["cordon_p90_s"] < TARGET_CORDON_P90_S else "MISSED", ""))
        rows.append(("target all drained < 90 s real time", "OK" if res["drain_real_time_s"] < TARGET_DRAIN_S else "MISSED", ""))
    width = max(len(r[0]) for r in rows)
    for label, value, versus in rows:
        print(f"  {label.ljust(width)}  {value}  {versus}".rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--time-scale", type=float, default=0.1, help="emulated delays x this (default 0.1: 30 s grace -> 3 s)")
    parser.add_argument("--cases", default="150,375,750", help="failing node counts (default 150,375,750)")
    parser.add_argument("--drain-cases", default="150", help="cases that also drain in quick mode (default 150; --full: all)")
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--full", action="store_true", help="also run the 150-node case at time scale 1 (takes ~1.5 min)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # pool-full notices from the many threads
    print(f"== nvsentinel_scenario: {CLUSTER_NODES} nodes x {PODS_PER_NODE} pods, {GRACE_S:g} s grace ==")
    results = []
    drain_cases = {int(c) for c in args.drain_cases.split(",") if c.strip()}
    plan = [(int(c), args.time_scale, args.full or int(c) in drain_cases) for c in args.cases.split(",") if c.strip()]
    if args.full:
        plan.append((150, 1.0, True))
    ok = True
    for failing, scale, drain in plan:
        res = run_case(failing, scale, args.qps, args.burst, args.seed, drain)
        print_case(res)
        results.append(res)
        if failing == 150:
            ok = ok and res["cordon_p90_s"] < TARGET_CORDON_P90_S and res.get("drain_real_time_s", 0.0) < TARGET_DRAIN_S
        ok = ok and res.get("failed_nodes", 0) == 0
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
