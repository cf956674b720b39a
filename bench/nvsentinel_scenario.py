# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""NVSentinel v0.4.0's published scale scenario, replayed with dsxos.cluster's node actions on the emulator and on a real
control plane, side by side with NVSentinel's published figures.

Scenario (NVSentinel scale test on a 1,503-node EKS cluster): 15 pods per node, 30 s termination grace, 150 nodes (then
375 and 750) get fatal events at once. NVSentinel needed P50 16.75 s / P90 28.15 s to cordon the 150 nodes and about
8 minutes to drain them (~5 evictions/s).

Backends (``--backend emulator|real|both``, default both; see ``bench/_backends.py``):

* emulator: ``python -m tests.harness.k8s_emulator serve`` in its own process (not sharing the bench's GIL); only
  emulated delays (grace period, kubelet) scale with ``--time-scale``, API work runs at full speed;
* real: kube-apiserver/controller-manager/scheduler v1.20.2 + etcd 3.4 on 127.0.0.1 with a NodeSimulator (simulated
  kubelets honour the real 30 s grace period): everything in real time.

Same layout on both: ``--nodes`` nodes, ``--pods-per-node`` bare pods (30 s grace) on each failing node and
``--background-pods-per-node`` on each other node (default 0: only the failing nodes carry pods, 2,250 pods, ~7 min for
both backends on 2 shared cores; ``--full-layout``: NVSentinel's 15 on every node, 22,500 pods, which the real control
plane takes ~10 minutes just to create here, ~17 min in all). The bench then calls the module_utils in-process with one KubeClient (QPS limiter,
default 50 QPS / burst 100), identically on both backends: ``run_node_action(cordon, circuit_breaker=...)`` on all
failing nodes at once, then ``drain_nodes(force=True)``.

Reported per case and backend: cordon latency P50/P90 from the moment the nodes fail, the time until every pod of every
failed node is gone (real time: measured on the real backend; on the emulator at ``--time-scale`` s < 1 estimated as
``measured + grace * (1 - s)``, the grace tail being the only scaled part on the critical path), evictions/s during the
eviction phase, client API calls; ratios against NVSentinel. Targets for 150 nodes: cordon P90 < 5 s, all drained
< 90 s real time.

Cases: ``--cases`` (default 150 on both backends; 375 and 750 are quarantined only unless listed in ``--drain-cases``
or ``--full``). ``--full`` also drains every case and reruns the 150-node case on the emulator at time scale 1.

Usage: python bench/nvsentinel_scenario.py [--backend both] [--full-layout] [--nodes 1500] [--pods-per-node 15]
           [--background-pods-per-node N] [--cases 150] [--drain-cases 150] [--time-scale 0.1] [--qps 50] [--full] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _backends  # noqa: E402  # pylint: disable=wrong-import-position
from _backends import REPO, RealBackend, fmt_ratio, load_average, print_table  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.circuit_breaker import BreakerConfig  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import DrainPolicy  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import KubeClient, auth_from_params  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_drain import DrainOptions, drain_nodes  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import QuarantineOptions, run_node_action  # noqa: E402

GRACE_S = 30.0
NAMESPACE = "workloads"
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

    def __init__(self, nodes: int, pods_per_node: int, time_scale: float, workdir: str) -> None:
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, "-m", "tests.harness.k8s_emulator", "serve", "--nodes", str(nodes), "--pods-per-node",
             str(pods_per_node), "--time-scale", str(time_scale), "--kubeconfig", self.kubeconfig],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.proc.stdout.readline()
        info = self.proc.stdout.readline()
        if not info:
            raise RuntimeError(f"emulator did not start: {self.proc.stderr.read() if self.proc.stderr else ''}")
        self.info = json.loads(info)

    def stop(self) -> None:
        """SIGTERM and wait."""
        if self.proc.poll() is not None:
            return
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


def sorted_node_names(client: KubeClient) -> list[str]:
    return sorted(n["metadata"]["name"] for n in json.loads(client.core.list_node(_preload_content=False).data)["items"])


def pick_victims(names: list[str], failing: int, seed: int) -> list[str]:
    return random.Random(seed).sample(names, failing)


def layout(names: list[str], victims: list[str], per_node: int, background: int) -> list[tuple[tuple[int, str], int]]:
    """((index, node), pod count) for every node that carries pods; the failing nodes first."""
    chosen = set(victims)
    first = [((names.index(v), v), per_node) for v in victims]
    rest = [((i, n), background) for i, n in enumerate(names) if n not in chosen and background > 0]
    return first + rest


def measure(kubeconfig: str, victims: list[str], nodes: int, qps: float, burst: int, drain: bool) -> dict[str, Any]:
    """The measured part, the same code on both backends: cordon all failing nodes at once, then drain them."""
    client = KubeClient(auth_from_params({"kubeconfig": kubeconfig, "qps": qps, "burst": burst, "retries": 8}))
    try:
        client.stats.clear()
        failing = len(victims)
        breaker = BreakerConfig(max_fraction=failing / nodes, max_nodes=failing)
        reason = "NVSentinel scenario: GPU XID 79 (fell off the bus)"
        t_fail = time.monotonic()
        quarantine = run_node_action(client, victims, QuarantineOptions(action="cordon", reason=reason, actor="bench", circuit_breaker=breaker))
        cordon_latency = [r.finished_at - t_fail for r in quarantine.results]
        out: dict[str, Any] = {
            "quarantined": len([r for r in quarantine.results if r.status == "changed"]),
            "refused_by_breaker": len(quarantine.names("refused")),
            "cordon_p50_s": statistics.median(cordon_latency), "cordon_p90_s": percentile(cordon_latency, 90),
            "cordon_max_s": max(cordon_latency), "cordon_api_calls": dict(client.stats), "drained": drain}
        if not drain:
            return out
        monitor = EvictionMonitor(client)
        monitor.start()
        t_drain = time.monotonic()
        report = drain_nodes(client, victims, DrainOptions(reason=reason, actor="bench", policy=DrainPolicy.build(force=True), timeout_s=1800))
        t_done = time.monotonic()
        monitor.stop_event.set()
        monitor.join()
        data = report.to_dict()
        evictions = data["totals"].get("evicted", 0)
        phase = (monitor.last - monitor.first) if monitor.first and monitor.last and monitor.last > monitor.first else 0.0
        failures: dict[str, int] = {}
        for node in data["nodes"]:
            if node["node"] in data["failed_nodes"]:
                message = re.sub(r"node \S+: ", "", str(node.get("message")))  # the same failure on many nodes counts once
                key = f"{node['status']}: {re.sub(r'[0-9]+[.][0-9]+', 'N', message)[:400]}"
                failures[key] = failures.get(key, 0) + 1
        out.update({"failures": failures, "drain_wall_s": t_done - t_fail, "drain_only_s": t_done - t_drain,
                    "drained_nodes": len(data["drained_nodes"]), "failed_nodes": len(data["failed_nodes"]),
                    "evictions": evictions, "evictions_per_s": evictions / phase if phase > 0 else float(evictions),
                    "pod_outcomes": data["totals"], "api_calls": report.api_calls, "api_calls_total": sum(report.api_calls.values())})
        return out
    finally:
        client.close()


def run_emulator(args: argparse.Namespace, failing: int, time_scale: float, drain: bool) -> dict[str, Any]:
    """One case on a fresh emulator process."""
    background = args.background_pods_per_node
    uniform = background == args.pods_per_node
    setup: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="dsxos-nvsentinel-") as workdir:
        begin = time.monotonic()
        emu = EmulatorProcess(args.nodes, args.pods_per_node if uniform else 0, time_scale, workdir)
        try:
            api = _backends.api_client_for(emu.kubeconfig)
            client = KubeClient(auth_from_params({"kubeconfig": emu.kubeconfig}))
            names = sorted_node_names(client)
            client.close()
            victims = pick_victims(names, failing, args.seed)
            _backends.create_namespace(api, "dsxos-system")
            if not uniform:
                _backends.create_namespace(api, NAMESPACE)
                for count in sorted({c for _n, c in layout(names, victims, args.pods_per_node, background)}, reverse=True):
                    group = [n for n, c in layout(names, victims, args.pods_per_node, background) if c == count]
                    _backends.create_bound_pods(api, NAMESPACE, group, count, int(GRACE_S))
                time.sleep(max(1.0, 2.0 * time_scale))  # the emulated kubelet starts pods after 1 s x time scale
            api.close()
            setup["setup_s"] = time.monotonic() - begin
            setup["load_before"] = load_average()
            res = measure(emu.kubeconfig, victims, args.nodes, args.qps, args.burst, drain)
        finally:
            emu.stop()
    res.update(setup)
    res.update({"backend": "emulator", "time_scale": time_scale})
    if drain:
        res["drain_real_time_s"] = res["drain_wall_s"] if time_scale >= 1.0 else res["drain_wall_s"] + GRACE_S * (1.0 - time_scale)
        res["real_time_is_estimate"] = time_scale < 1.0
    return res


def run_real(args: argparse.Namespace, failing: int, drain: bool) -> dict[str, Any]:
    """One case on a fresh real control plane with simulated kubelets (heartbeats relaxed for 1,500 nodes)."""
    setup: dict[str, Any] = {}
    backend = RealBackend(node_monitor_grace_s=300, workers=16, renew_interval_s=30.0, lease_duration_s=120, status_interval_s=300.0)
    begin = time.monotonic()
    with backend:
        setup["control_plane_s"] = backend.started_in_s
        mark = time.monotonic()
        assert backend.sim is not None
        backend.sim.add_nodes(args.nodes, "h100-eks")
        setup["nodes_s"] = time.monotonic() - mark
        client = KubeClient(auth_from_params({"kubeconfig": backend.kubeconfig}))
        names = sorted_node_names(client)
        client.close()
        victims = pick_victims(names, failing, args.seed)
        _backends.create_namespace(backend.api, "dsxos-system")
        backend.create_namespace(NAMESPACE)
        mark = time.monotonic()
        total = 0
        plan = layout(names, victims, args.pods_per_node, args.background_pods_per_node)
        for count in sorted({c for _n, c in plan}, reverse=True):
            total += backend.create_bound_pods(NAMESPACE, [n for n, c in plan if c == count], count, int(GRACE_S))
        setup["pods"] = total
        setup["pods_created_s"] = time.monotonic() - mark
        backend.wait(lambda: backend.sim is not None and backend.sim.counts["started"] >= total, 1800, f"{total} pods Running", 1.0)
        setup["pods_running_s"] = time.monotonic() - mark
        setup["setup_s"] = time.monotonic() - begin
        setup["load_before"] = load_average()
        res = measure(backend.kubeconfig, victims, args.nodes, args.qps, args.burst, drain)
        setup["simulator"] = dict(backend.sim.counts)
    res.update(setup)
    res.update({"backend": "real", "time_scale": 1.0})
    if drain:
        res["drain_real_time_s"] = res["drain_wall_s"]
        res["real_time_is_estimate"] = False
    return res


def case_table(args: argparse.Namespace, failing: int, results: dict[str, dict[str, Any]]) -> str:
    """One side-by-side table for one case: emulator, real, NVSentinel, ratios."""
    emu, real = results.get("emulator"), results.get("real")
    drained = any(r.get("drained") for r in results.values())

    def cell(res: Optional[dict[str, Any]], key: str, fmt: str = "{:.2f} s") -> str:
        if res is None or key not in res:
            return "-"
        return fmt.format(res[key])

    def versus(key: str, anchor: float, higher_is_better: bool = False) -> list[str]:
        out = []
        for res in (emu, real):
            value = None if res is None else res.get(key)
            out.append("-" if value is None else (fmt_ratio(value, anchor) if higher_is_better else fmt_ratio(anchor, value)))
        return out

    header = ["figure", "emulator", "real 1.20", "NVSentinel (EKS)", "NVS/emulator", "NVS/real"]
    rows = [
        ["quarantined / refused", cell(emu, "quarantined", "{}") + " / " + cell(emu, "refused_by_breaker", "{}") if emu else "-",
         cell(real, "quarantined", "{}") + " / " + cell(real, "refused_by_breaker", "{}") if real else "-", f"{failing}", "", ""],
        ["cordon latency P50", cell(emu, "cordon_p50_s"), cell(real, "cordon_p50_s"), f"{NVSENTINEL['cordon_p50_s']} s"]
        + versus("cordon_p50_s", NVSENTINEL["cordon_p50_s"]),
        ["cordon latency P90", cell(emu, "cordon_p90_s"), cell(real, "cordon_p90_s"), f"{NVSENTINEL['cordon_p90_s']} s"]
        + versus("cordon_p90_s", NVSENTINEL["cordon_p90_s"]),
        ["cordon latency max", cell(emu, "cordon_max_s"), cell(real, "cordon_max_s"), "-", "", ""],
    ]
    if drained:
        anchor = failing == 150
        rows += [
            ["drained / failed nodes", (cell(emu, "drained_nodes", "{}") + " / " + cell(emu, "failed_nodes", "{}")) if emu and emu.get("drained") else "-",
             (cell(real, "drained_nodes", "{}") + " / " + cell(real, "failed_nodes", "{}")) if real and real.get("drained") else "-", "", "", ""],
            ["evictions/s (eviction phase)", cell(emu, "evictions_per_s", "{:.1f}/s"), cell(real, "evictions_per_s", "{:.1f}/s"),
             f"~{NVSENTINEL['evictions_per_s']:g}/s"] + [r.replace("x", "x faster") if r not in ("-", "n/a") else r
                                                         for r in versus("evictions_per_s", NVSENTINEL["evictions_per_s"], True)],
            ["fail -> all pods gone, wall", cell(emu, "drain_wall_s", "{:.1f} s"), cell(real, "drain_wall_s", "{:.1f} s"), "", "", ""],
            ["fail -> all pods gone, real time", cell(emu, "drain_real_time_s", "{:.1f} s") + ("*" if emu and emu.get("real_time_is_estimate") else ""),
             cell(real, "drain_real_time_s", "{:.1f} s"), f"~{NVSENTINEL['drain_s']:.0f} s" if anchor else "-"]
            + (versus("drain_real_time_s", NVSENTINEL["drain_s"]) if anchor else ["", ""]),
            ["client API calls (drain)", cell(emu, "api_calls_total", "{}"), cell(real, "api_calls_total", "{}"), "", "", ""],
        ]
    rows += [["setup before the failure", cell(emu, "setup_s", "{:.0f} s"), cell(real, "setup_s", "{:.0f} s"), "", "", ""]]
    notes = []
    if emu and emu.get("real_time_is_estimate"):
        notes.append(f"* emulator at time scale {emu['time_scale']:g}: measured + {GRACE_S:g} s grace x (1 - scale)")
    if failing == 150:
        for res in (emu, real):
            if res is None:
                continue
            verdict = ["cordon P90 < 5 s: " + ("OK" if res["cordon_p90_s"] < TARGET_CORDON_P90_S else "MISSED")]
            if res.get("drained"):
                verdict.append("all drained < 90 s real time: " + ("OK" if res["drain_real_time_s"] < TARGET_DRAIN_S else "MISSED"))
            notes.append(f"targets ({res['backend']}): " + "; ".join(verdict))
    for res in (emu, real):
        if res is not None:
            notes.append(f"{res['backend']}: {res.get('load_before', '')} before the failure, {res.get('load_after', '')} after")
    for res in (emu, real):
        for failure, count in sorted((res or {}).get("failures", {}).items(), key=lambda item: -item[1])[:5]:
            notes.append(f"{res['backend']}: {count} node(s) not drained: {failure}")
    if real:
        notes.append(f"real setup: control plane {real['control_plane_s']:.0f} s, {args.nodes} nodes {real['nodes_s']:.0f} s, "
                     f"{real['pods']} pods created {real['pods_created_s']:.0f} s / Running {real['pods_running_s']:.0f} s")
    layout_text = (f"{args.pods_per_node} pods on each failing node, {args.background_pods_per_node} on each other node"
                   if args.background_pods_per_node != args.pods_per_node else f"{args.pods_per_node} pods on every node")
    title = f"nvsentinel_scenario: {failing} of {args.nodes} nodes fail at once; {layout_text}; {GRACE_S:g} s grace; client {args.qps:g} QPS/burst {args.burst}"
    return print_table(title, header, rows, notes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    _backends.add_backend_argument(parser)
    parser.add_argument("--nodes", type=int, default=1500, help="cluster size (default 1500)")
    parser.add_argument("--pods-per-node", type=int, default=15, help="pods on each failing node (default 15)")
    parser.add_argument("--background-pods-per-node", type=int, default=None,
                        help="pods on each healthy node (default 0; --full-layout: --pods-per-node)")
    parser.add_argument("--full-layout", action="store_true",
                        help="NVSentinel's layout, --pods-per-node on every node (22,500 pods: the real backend's setup takes ~12 min here)")
    parser.add_argument("--time-scale", type=float, default=0.1, help="the emulator's delays x this (default 0.1: 30 s grace -> 3 s)")
    parser.add_argument("--cases", default="150", help="failing node counts (default 150; NVSentinel also ran 375,750)")
    parser.add_argument("--drain-cases", default="150", help="cases that also drain (default 150; --full: all)")
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--full", action="store_true", help="drain every case and rerun the 150-node case on the emulator at time scale 1")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.background_pods_per_node is None:
        args.background_pods_per_node = args.pods_per_node if args.full_layout else 0
    backends = _backends.backends_from_arg(args.backend)
    _backends.install_signal_handlers()
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # pool-full notices from the many threads
    drain_cases = {int(c) for c in args.drain_cases.split(",") if c.strip()}
    cases = [int(c) for c in args.cases.split(",") if c.strip()]
    print(f"== nvsentinel_scenario: backends {', '.join(backends)}; {load_average()} ==", flush=True)
    records: list[dict[str, Any]] = []
    tables: list[str] = []
    ok = True
    plan = [(c, args.time_scale, args.full or c in drain_cases) for c in cases]
    if args.full and "emulator" in backends and args.time_scale < 1.0:
        plan.append((150, 1.0, True))
    done_real: set[int] = set()
    for failing, scale, drain in plan:
        results: dict[str, dict[str, Any]] = {}
        if "emulator" in backends:
            results["emulator"] = run_emulator(args, failing, scale, drain)
            results["emulator"]["load_after"] = load_average()
            print(f"   emulator, {failing} failing: done ({results['emulator']['load_after']})", flush=True)
        if "real" in backends and failing not in done_real:
            done_real.add(failing)
            results["real"] = run_real(args, failing, drain)
            results["real"]["load_after"] = load_average()
            print(f"   real, {failing} failing: done ({results['real']['load_after']})", flush=True)
        if not results:
            continue
        tables.append(case_table(args, failing, results))
        for res in results.values():
            res["failing_nodes"] = failing
            records.append(res)
            if failing == 150:
                ok = ok and res["cordon_p90_s"] < TARGET_CORDON_P90_S and res.get("drain_real_time_s", 0.0) < TARGET_DRAIN_S
            ok = ok and res.get("failed_nodes", 0) == 0
    print("Differences from NVSentinel's setup: one 2-core machine runs the API server (emulated, or kube-apiserver 1.20 + etcd 3.4 "
          "with every write fsynced on tmpfs), the simulated kubelets and the client, shared with other work; there are no real "
          "kubelets, containers, network or cloud; NVSentinel ran v0.4.0 in-cluster on a 1,503-node EKS cluster, from fatal "
          "health events through its own pipeline, while here the clock starts when the bench calls the cordon.", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"results": records, "tables": tables}, handle, indent=2, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
