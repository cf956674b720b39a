# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Measure the real control plane with simulated nodes at scale: register N nodes, create N x P bare pods (the real
scheduler places them, the simulator runs them) and time each phase::

    python -m tests.harness.kube_control_plane.scale_probe --nodes 1500 --pods-per-node 15 [--workers 32] [--qps 500]

Prints one JSON line: nodes_registered_s, pods_created_s, pods_running_s (from the first create until all are
Running), the components' RSS, and the simulator's counters.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional

from .cluster import RealCluster
from .node_simulator import NodeSimulator

NAMESPACE = "scale"


def _rss_mib(pid: int) -> float:
    try:
        with open("/proc/%d/status" % pid, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        pass
    return 0.0


def run_probe(cluster: RealCluster, nodes: int, pods_per_node: int, workers: int = 32, timeout_s: float = 1800.0) -> Dict[str, Any]:
    """Register ``nodes`` nodes and run ``nodes * pods_per_node`` pods on ``cluster``; return the measurements."""
    result: Dict[str, Any] = {"nodes": nodes, "pods": nodes * pods_per_node, "workers": workers}
    sim = NodeSimulator(str(cluster.kubeconfig_path), workers=workers, renew_interval_s=20.0, lease_duration_s=120,
                        status_interval_s=300.0, start_delay_s=0.0)
    sim.start()
    try:
        begin = time.monotonic()
        sim.add_nodes(nodes, "h100-eks", name_prefix="scale-")
        result["nodes_registered_s"] = round(time.monotonic() - begin, 1)
        sim.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        cluster.wait_for_service_account(NAMESPACE)
        total = nodes * pods_per_node

        def create(index: int) -> None:
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-%05d" % index, "labels": {"app": "scale"}},
                   "spec": {"terminationGracePeriodSeconds": 1, "automountServiceAccountToken": False,
                            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
            sim.request("POST", "/api/v1/namespaces/%s/pods" % NAMESPACE, pod)

        begin = time.monotonic()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(create, range(total)))
        result["pods_created_s"] = round(time.monotonic() - begin, 1)
        deadline = time.monotonic() + timeout_s
        while sim.counts["started"] < total and time.monotonic() < deadline:  # the simulator's count: no list per poll
            time.sleep(1.0)
        result["pods_running_s"] = round(time.monotonic() - begin, 1)
        result["pods_running_listed"] = sim.running_pods(NAMESPACE)  # confirmed by one list
        result["rss_mib"] = {name: _rss_mib(pid) for name, pid in cluster.pids.items()}
        result["simulator"] = dict(sim.counts)
    finally:
        sim.stop()
    return result


def main(argv: Optional[List[str]] = None) -> int:
    """Start a control plane, probe it, print the JSON line, stop it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, default=1500)
    parser.add_argument("--pods-per-node", type=int, default=15)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--qps", type=int, default=500, help="client QPS of the scheduler and controller-manager")
    args = parser.parse_args(argv)
    qps = ["--kube-api-qps", str(args.qps), "--kube-api-burst", str(args.qps * 2)]
    with RealCluster(extra_args={"kube-scheduler": qps, "kube-controller-manager": qps}, node_monitor_grace_s=300,
                     log=lambda message: print(message, file=sys.stderr)) as cluster:
        started = cluster.started_in_s
        result = run_probe(cluster, args.nodes, args.pods_per_node, args.workers)
        result["control_plane_ready_s"] = started
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
