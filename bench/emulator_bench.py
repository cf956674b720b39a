# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Kubernetes emulator at NVSentinel scale: 1500 nodes / 22,500 pods.

Measures, through the official kubernetes client (typed models, as modules use it), the latency of listing the pods of
one node (``fieldSelector spec.nodeName``), and the peak RSS of the process (emulator + client).

Targets: list-pods-on-node median < 20 ms, peak RSS < 1 GiB.

Usage: python bench/emulator_bench.py [--nodes 1500] [--pods-per-node 15] [--samples 300] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position

from kubernetes import client as kube_client  # noqa: E402  # pylint: disable=wrong-import-position
from kubernetes import config as kube_config  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.emulator import Emulator  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.scale_probe import rss_mib  # noqa: E402

TARGET_MEDIAN_MS = 20.0
TARGET_RSS_MIB = 1024.0


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, int(round(pct / 100.0 * len(ordered) + 0.5)))
    return ordered[min(rank, len(ordered)) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--pods-per-node", type=int, default=15)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    rss_start = rss_mib()
    with Emulator(time_scale=1.0, seed=7) as emu:
        begin = time.perf_counter()
        names = emu.add_nodes(args.nodes, "h100-eks")
        pods = emu.seed_pods(args.pods_per_node, nodes=names)
        seed_s = time.perf_counter() - begin
        emu.settle(60)
        rss_seeded = rss_mib()
        api = kube_client.CoreV1Api(kube_config.new_client_from_config(config_file=emu.kubeconfig_path))
        api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={names[0]}")  # warm the connection
        latencies_typed, latencies_raw, wrong = [], [], 0
        for node in random.Random(11).sample(names, min(args.samples, len(names))):
            start = time.perf_counter()
            items = api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
            latencies_typed.append((time.perf_counter() - start) * 1000.0)
            if len(items) != args.pods_per_node or {p.spec.node_name for p in items} != {node}:
                wrong += 1
            start = time.perf_counter()
            raw = api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}", _preload_content=False)
            count = len(json.loads(raw.data)["items"])
            latencies_raw.append((time.perf_counter() - start) * 1000.0)
            if count != args.pods_per_node:
                wrong += 1
        start = time.perf_counter()
        all_nodes = api.list_node(_preload_content=False)
        list_nodes_ms = (time.perf_counter() - start) * 1000.0
        node_count = len(json.loads(all_nodes.data)["items"])
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    figures = {
        "nodes": node_count, "pods": pods, "seed_s": round(seed_s, 2), "samples": len(latencies_typed), "wrong_lists": wrong,
        "list_pods_on_node_typed_median_ms": round(statistics.median(latencies_typed), 2),
        "list_pods_on_node_typed_p90_ms": round(percentile(latencies_typed, 90), 2),
        "list_pods_on_node_raw_median_ms": round(statistics.median(latencies_raw), 2),
        "list_pods_on_node_raw_p90_ms": round(percentile(latencies_raw, 90), 2),
        "list_all_nodes_ms": round(list_nodes_ms, 1),
        "rss_start_mib": round(rss_start, 1), "rss_seeded_mib": round(rss_seeded, 1), "peak_rss_mib": round(peak_rss, 1),
    }
    ok_latency = figures["list_pods_on_node_typed_median_ms"] < TARGET_MEDIAN_MS
    ok_rss = peak_rss < TARGET_RSS_MIB
    rows = [
        ("seeded", f"{node_count} nodes, {pods} pods in {seed_s:.2f} s", ""),
        ("list pods on node, typed client", f"median {figures['list_pods_on_node_typed_median_ms']:.2f} ms, "
                                            f"p90 {figures['list_pods_on_node_typed_p90_ms']:.2f} ms",
         f"target median < {TARGET_MEDIAN_MS:g} ms: {'OK' if ok_latency else 'MISSED'} "
         f"({TARGET_MEDIAN_MS / max(figures['list_pods_on_node_typed_median_ms'], 1e-6):.1f}x headroom)"),
        ("list pods on node, raw JSON", f"median {figures['list_pods_on_node_raw_median_ms']:.2f} ms, "
                                        f"p90 {figures['list_pods_on_node_raw_p90_ms']:.2f} ms", ""),
        ("list all nodes (raw)", f"{list_nodes_ms:.1f} ms", ""),
        ("peak RSS (emulator + client)", f"{peak_rss:.0f} MiB (seeded: {rss_seeded:.0f} MiB)",
         f"target < {TARGET_RSS_MIB:.0f} MiB: {'OK' if ok_rss else 'MISSED'} ({TARGET_RSS_MIB / max(peak_rss, 1e-6):.1f}x headroom)"),
        ("wrong list results", str(wrong), "must be 0"),
    ]
    width = max(len(r[0]) for r in rows)
    print("== emulator_bench: 1500-node emulator through the official client ==")
    for label, value, verdict in rows:
        print(f"  {label.ljust(width)}  {value}  {verdict}".rstrip())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=2)
    return 0 if ok_latency and ok_rss and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
