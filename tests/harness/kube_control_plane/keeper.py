# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Keep a real control plane (and a node simulator process) running in the background, outside pytest: what
``python -m tests.harness.kube_control_plane start|stop`` and ``python -m tests.harness.service_keeper start
real-cluster`` use. See docs/real-control-plane.md.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional, Type

from . import build as kube_build
from .cluster import STATE_FILE, ClusterError, RealCluster, pid_alive, read_state, stop_state_dir, write_json

SIMULATOR_STATE = "node-simulator.json"
SIMULATOR_TIMEOUT_S = 300.0


def _running(state: Optional[Dict[str, Any]]) -> bool:
    return bool(state and state.get("ready") and all(pid_alive(int(pid)) for pid in state.get("pids", {}).values()))


def start(state_dir: Path, nodes: int, profile: str, node_prefix: Optional[str]) -> Dict[str, Any]:
    """Start the control plane (and a simulator process for ``nodes`` nodes); return the recorded description."""
    current = read_state(state_dir)
    if _running(current):
        assert current is not None
        return current
    stop_state_dir(state_dir)  # a half-dead leftover
    cluster = RealCluster(state_dir=state_dir, log=lambda message: print(message, file=sys.stderr))
    cluster.start()
    state = cluster.describe()
    if nodes > 0:
        sim_state = state_dir / SIMULATOR_STATE
        if sim_state.exists():
            sim_state.unlink()
        argv = [sys.executable, "-m", "tests.harness.kube_control_plane", "simulate", "--state-dir", str(state_dir),
                "--nodes", str(nodes), "--profile", profile]
        if node_prefix:
            argv += ["--node-prefix", node_prefix]
        with open(state_dir / "logs" / "node-simulator.log", "ab") as out:
            proc = subprocess.Popen(argv, cwd=str(Path(__file__).resolve().parents[3]), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        state["pids"]["node-simulator"] = proc.pid
        write_json(state_dir / STATE_FILE, state)
        deadline = time.monotonic() + SIMULATOR_TIMEOUT_S
        while not sim_state.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_state_dir(state_dir)
                tail = (state_dir / "logs" / "node-simulator.log").read_text(encoding="utf-8", errors="replace")[-3000:]
                raise ClusterError("the node simulator did not come up:\n%s" % tail)
            time.sleep(0.1)
        state["nodes"] = json.loads(sim_state.read_text(encoding="utf-8"))["nodes"]
        write_json(state_dir / STATE_FILE, state)
    return state


def simulate(state_dir: Path, nodes: int, profile: str, node_prefix: Optional[str]) -> int:
    """Foreground: run a node simulator for the control plane of ``state_dir`` until SIGTERM."""
    from .node_simulator import NodeSimulator  # pylint: disable=import-outside-toplevel

    stop = {"now": False}

    def on_signal(signum: int, frame: Any) -> None:  # pylint: disable=unused-argument
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sim = NodeSimulator(str(state_dir / "kubeconfig"), log=print)
    sim.start()
    try:
        names = sim.add_nodes(nodes, profile, name_prefix=node_prefix)
        write_json(state_dir / SIMULATOR_STATE, {"pid": os.getpid(), "nodes": names, "kubelet_port": sim.kubelet_port})
        print("simulating %d nodes: %s" % (len(names), ", ".join(names[:8])), flush=True)
        while not stop["now"]:
            signal.pause()
    finally:
        sim.stop()
    return 0


def start_real_cluster(state_dir: Path, nodes: int, profile: str, error: Type[Exception]) -> Dict[str, Any]:
    """:func:`start` for service_keeper: a failure is raised as ``error`` (its KeeperError)."""
    try:
        return start(state_dir, nodes, profile, None)
    except (kube_build.BuildError, ClusterError) as exc:
        raise error(str(exc)) from exc
