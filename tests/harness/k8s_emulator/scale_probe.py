# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Scale probe: seed a big cluster in-process, then time per-node pod listing and GET throughput through the real client.

Used by the scale unit test and reusable by a benchmark script (``run_scale_probe()`` returns plain numbers).
"""
from __future__ import annotations

import random
import statistics
import threading
import time
from typing import Any

from .emulator import Emulator


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return 0.0
    return 0.0


def run_scale_probe(emu: Emulator, nodes: int = 1500, pods_per_node: int = 15, profile: str = "h100-eks",
                    samples: int = 200, throughput_requests: int = 1000, threads: int = 4) -> dict[str, Any]:
    """Seed ``nodes`` x ``pods_per_node`` into a started emulator and measure; every list result is checked."""
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel

    rss_before = rss_mib()
    started = time.perf_counter()
    names = emu.add_nodes(nodes, profile)
    seeded = emu.seed_pods(pods_per_node, namespace="workloads", nodes=names)
    seed_s = time.perf_counter() - started
    settled = emu.settle(60)
    rss_growth = rss_mib() - rss_before
    core = client.CoreV1Api(config.new_client_from_config(config_file=emu.kubeconfig_path))
    latencies, wrong = [], 0
    for node in random.Random(7).sample(names, min(samples, len(names))):
        begin = time.perf_counter()
        pods = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
        latencies.append(time.perf_counter() - begin)
        if len(pods) != pods_per_node or {p.spec.node_name for p in pods} != {node}:
            wrong += 1
    done: list[int] = []
    per_thread = throughput_requests // threads

    def hammer() -> None:
        api = client.CoreV1Api(config.new_client_from_config(config_file=emu.kubeconfig_path))
        for i in range(per_thread):
            api.read_node(names[i % len(names)], _preload_content=False).read()
        done.append(per_thread)
    workers = [threading.Thread(target=hammer) for _thread in range(threads)]
    begin = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    elapsed = time.perf_counter() - begin
    ordered = sorted(latencies)
    return {
        "nodes": nodes, "pods": seeded, "seed_s": seed_s, "settled": settled, "rss_growth_mib": rss_growth,
        "list_by_node_median_ms": statistics.median(latencies) * 1000.0,
        "list_by_node_p95_ms": ordered[int(len(ordered) * 0.95) - 1] * 1000.0 if ordered else 0.0,
        "wrong_lists": wrong, "requests": sum(done), "requests_per_s": sum(done) / elapsed if elapsed > 0 else 0.0,
    }


def format_report(result: dict[str, Any]) -> str:
    """One line for logs and benchmark output."""
    return (f"[k8s-emulator scale] seed {result['nodes']} nodes + {result['pods']} pods: {result['seed_s']:.2f}s; "
            f"RSS +{result['rss_growth_mib']:.0f} MiB; list pods by spec.nodeName via client: median "
            f"{result['list_by_node_median_ms']:.1f} ms, p95 {result['list_by_node_p95_ms']:.1f} ms; "
            f"GET throughput: {result['requests_per_s']:.0f} req/s")
