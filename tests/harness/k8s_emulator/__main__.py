# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""``python -m tests.harness.k8s_emulator serve --nodes 8 --profile h100-eks --kubeconfig ./out/kubeconfig``."""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from .emulator import DEFAULT_GIT_VERSION, Emulator
from .profiles import PROFILES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.k8s_emulator", description="Kubernetes API emulator for tests")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve until SIGTERM/SIGINT")
    serve.add_argument("--nodes", type=int, default=4, help="number of nodes to seed (default 4)")
    serve.add_argument("--node-prefix", default=None, help="name nodes <prefix>1..<prefix>N (default: the provider's style)")
    serve.add_argument("--profile", default="h100-eks", choices=sorted(PROFILES), help="node profile")
    serve.add_argument("--kubeconfig", default="./out/kubeconfig", help="where to write the kubeconfig")
    serve.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 = random free port)")
    serve.add_argument("--time-scale", type=float, default=1.0, help="emulated-delay multiplier (0.01: 30 s grace -> 0.3 s)")
    serve.add_argument("--git-version", default=DEFAULT_GIT_VERSION, help="version reported by /version")
    serve.add_argument("--pods-per-node", type=int, default=0, help="bulk-seed this many Running pods per node")
    serve.add_argument("--demo-workloads", action="store_true",
                       help="add a GPU training Deployment and an inference Deployment with PodDisruptionBudgets (for make demo)")
    serve.add_argument("--require-auth", action="store_true", help="reject requests without the kubeconfig's token (401)")
    serve.add_argument("--crds", action="append", default=[], help="YAML file of CustomResourceDefinitions to serve (repeatable)")
    serve.add_argument("--certify-jobs", action="store_true",
                       help="answer certify's nccl-tests Jobs with output of the fabric simulator (tests/harness/fabric_sim.py)")
    serve.add_argument("--degraded", action="append", default=[], metavar="NODE=FRACTION",
                       help="with --certify-jobs: the node's NCCL bandwidth is FRACTION of a healthy node's (repeatable)")
    return parser


def install_certify_jobs(emu: Emulator, degraded: list[str], seed: int = 9) -> None:
    """Job pods of certify's Kubernetes runner complete with simulated nccl-tests output of their nodes.

    The pod of completion index 0 prints the output of the Job's node group (annotation ``dsxos.io/certify-nodes``),
    the other indexes a worker line; ``degraded`` nodes (``NODE=FRACTION``) are slower, as a bad NIC or link is.
    """
    from ..fabric_sim import FabricSimulator  # pylint: disable=import-outside-toplevel

    slow = {}
    for item in degraded:
        name, sep, fraction = item.partition("=")
        if not sep:
            raise SystemExit("--degraded wants NODE=FRACTION, got %r" % item)
        slow[name] = float(fraction)
    names = sorted(n["metadata"]["name"] for n in emu.api.list("v1", "Node"))
    sim = FabricSimulator(names, degraded_nodes=slow, seed=seed)

    def behaviour(job: dict, pod: dict) -> tuple:
        annotations = job["metadata"].get("annotations") or {}
        index = (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", "0")
        if "dsxos.io/certify-nodes" not in annotations:
            return None
        if index != "0":
            return 20.0, 0, "worker %s ready\n" % index
        return 20.0, 0, sim.run_group(annotations["dsxos.io/certify-nodes"].split(","),
                                      annotations.get("dsxos.io/certify-collective", "all_reduce"))

    emu.job_behaviour = behaviour


def seed_demo_workloads(emu: Emulator, nodes: int) -> None:
    """A training job's workers (1 GPU each, spread over the nodes) and an inference service behind a PDB."""
    emu.add_namespace("training")
    emu.add_namespace("inference")
    emu.add_deployment("trainer", namespace="training", replicas=max(2, nodes), labels={"app": "trainer"}, gpu=1, grace_s=30)
    emu.add_deployment("llm-serve", namespace="inference", replicas=max(3, nodes // 2), labels={"app": "llm-serve"}, gpu=1, grace_s=30)
    emu.settle()
    emu.add_pdb("llm-serve", {"app": "llm-serve"}, namespace="inference", max_unavailable=1)
    emu.add_pdb("trainer", {"app": "trainer"}, namespace="training", max_unavailable="50%")


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    emu = Emulator(time_scale=args.time_scale, git_version=args.git_version, port=args.port, require_auth=args.require_auth)
    for path in args.crds:
        emu.register_crds_from_file(path)
    if args.nodes:
        emu.add_nodes(args.nodes, args.profile, name_prefix=args.node_prefix, start_index=1 if args.node_prefix else None)
    if args.pods_per_node:
        emu.seed_pods(args.pods_per_node)
    emu.start()
    if args.demo_workloads:
        seed_demo_workloads(emu, args.nodes)
    if args.certify_jobs:
        install_certify_jobs(emu, args.degraded)
    emu.write_kubeconfig(args.kubeconfig)
    done = threading.Event()

    def _stop(_signum: int, _frame: Any) -> None:
        done.set()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    sys.stdout.write(f"{args.kubeconfig}\n")
    sys.stdout.write(json.dumps({"url": emu.url, "kubeconfig": args.kubeconfig, "nodes": args.nodes, "profile": args.profile,
                                 "time_scale": emu.time_scale}) + "\n")
    sys.stdout.flush()
    while not done.wait(0.5):
        pass
    emu.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
