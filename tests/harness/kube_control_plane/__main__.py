# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Command line of the real control plane (docs/real-control-plane.md), run from the collection root::

    python -m tests.harness.kube_control_plane build
    python -m tests.harness.kube_control_plane start --state-dir DIR [--nodes 4] [--profile h100-eks] [--node-prefix gpu-]
    python -m tests.harness.kube_control_plane stop --state-dir DIR

``build`` builds into the cache once and prints the directory holding ``bin/``. ``start`` starts etcd, kube-apiserver,
kube-controller-manager and kube-scheduler in the background (and, with ``--nodes``, a node simulator process that
registers that many Ready nodes and runs their pods), returns once everything is ready and prints the description as
JSON (``DIR/real-cluster.json``: ``kubeconfig``, ``kubeconfigs`` per user, ``url``, ``pids``, ``nodes``). ``stop`` stops
every process recorded in ``DIR``. Both are idempotent.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from . import build as kube_build
from .cluster import ClusterError, stop_state_dir
from .keeper import simulate, start


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.kube_control_plane", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build the control plane into the cache (once) and print its directory")
    for name in ("start", "simulate"):
        cmd = sub.add_parser(name, help="start the control plane in the background" if name == "start" else argparse.SUPPRESS)
        cmd.add_argument("--state-dir", required=True, type=Path)
        cmd.add_argument("--nodes", type=int, default=0, help="simulated Ready nodes to register (0: none)")
        cmd.add_argument("--profile", default="h100-eks", help="node profile (tests/harness/k8s_emulator/profiles.py)")
        cmd.add_argument("--node-prefix", default=None, help="node names <prefix><index> instead of the profile's names")
    stop = sub.add_parser("stop", help="stop every process recorded in the state directory")
    stop.add_argument("--state-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(kube_build.build())
            return 0
        args.state_dir = args.state_dir.resolve()
        args.state_dir.mkdir(parents=True, exist_ok=True)
        if args.command == "stop":
            print(json.dumps({"stopped": stop_state_dir(args.state_dir)}))
            return 0
        if args.command == "simulate":
            return simulate(args.state_dir, args.nodes, args.profile, args.node_prefix)
        print(json.dumps(start(args.state_dir, args.nodes, args.profile, args.node_prefix), sort_keys=True))
        return 0
    except (kube_build.BuildError, ClusterError) as exc:
        print(str(exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
