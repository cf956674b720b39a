# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Drain one node holding 110 pods: dsxos.cluster.node_drain against kubernetes.core.k8s_drain in the retry loop its users write.

Cluster (emulator, same seed and time scale for both runs): 4 worker nodes full with 11 Deployments x 40 replicas
(10 pods of each per node, 110 on the drained node), each with a PodDisruptionBudget ``maxUnavailable: 10%`` (4 pods), so
budgets refuse evictions part of the time until replacements are Ready; 2 empty spare nodes take the replacements.

* kubernetes.core.k8s_drain (kubernetes.core from the ``ansible`` 12.3.0 bundle) evicts one pod at a time and fails on the
  first HTTP 429, so it runs as users write it: ``until: result is succeeded``, ``retries: 60``, ``delay: 10 s`` (scaled by
  the time scale like every emulated delay);
* dsxos.cluster.node_drain runs once with its defaults, its PDB retry delays scaled the same way.

Both are real ``ansible-playbook`` runs. The clock stops when the playbook has ended AND no pod is left on the node.
Printed side by side: wall time, ratio (target >= 5x), API calls, k8s_drain attempts and the emulator's PDB metrics
(minimum healthy pods against desiredHealthy per budget; a violation fails the bench).

Usage: python bench/drain_bench.py [--time-scale 0.1] [--json FILE]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position
sys.path.append(os.path.join(REPO, "tests", "integration"))

from playbook_runner import build_and_install, run_playbook  # noqa: E402  # pylint: disable=wrong-import-position,import-error

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.emulator import Emulator  # noqa: E402

WORKERS = 4
SPARES = 2
DEPLOYMENTS = 11
PER_NODE = 10
TARGET_RATIO = 5.0
USER_DELAY_S = 10.0  # the delay k8s_drain users put in their retry loop, in cluster seconds

K8S_DRAIN_PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: drain with kubernetes.core.k8s_drain
      kubernetes.core.k8s_drain:
        kubeconfig: "{{ kubeconfig }}"
        name: "{{ target }}"
        delete_options: {ignore_daemonsets: true, delete_emptydir_data: true}
      register: drained
      until: drained is succeeded
      retries: 60
      delay: "{{ delay }}"
"""

OUR_PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: drain with dsxos.cluster.node_drain
      dsxos.cluster.node_drain:
        kubeconfig: "{{ kubeconfig }}"
        nodes: ["{{ target }}"]
        reason: drain benchmark
        pdb_retry_s: "{{ pdb_retry_s }}"
        pdb_retry_max_s: "{{ pdb_retry_max_s }}"
      register: drained
"""


def collections_root(base: Path) -> Path:
    """The freshly built dsxos.cluster plus a link to kubernetes.core from the ansible bundle."""
    spec = importlib.util.find_spec("ansible_collections.kubernetes.core")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("kubernetes.core is not importable: pip install ansible==12.3.0 into the venv")
    core_dir = Path(list(spec.submodule_search_locations)[0])
    root = build_and_install(base / "collections", base / "dist")
    link = root / "ansible_collections" / "kubernetes"
    if not link.exists():
        link.symlink_to(core_dir.parent, target_is_directory=True)
    return root


def build_cluster(time_scale: float) -> tuple[Emulator, str]:
    """Start an emulator with the scenario; returns it and the node to drain."""
    emu = Emulator(time_scale=time_scale, seed=4711).start()
    workers = emu.add_nodes(WORKERS, "h100-eks", name_prefix="worker-")
    for index in range(DEPLOYMENTS):
        emu.add_deployment(f"svc-{index:02d}", namespace="apps", replicas=WORKERS * PER_NODE, cpu="100m", grace_s=30)
    total = WORKERS * PER_NODE * DEPLOYMENTS

    def ready() -> bool:
        pods = emu.api.pods("apps")
        return len([p for p in pods if p["status"].get("phase") == "Running"]) == total
    emu.wait_for(ready, 120, interval=0.1, what=f"{total} pods running")
    for index in range(DEPLOYMENTS):
        emu.add_pdb(f"svc-{index:02d}", {"app": f"svc-{index:02d}"}, namespace="apps", max_unavailable="10%")
    emu.add_nodes(SPARES, "h100-eks", name_prefix="spare-")
    emu.settle(30)
    target = workers[0]
    on_target = len(emu.api.pods("apps", node=target))
    if on_target != DEPLOYMENTS * PER_NODE:
        raise SystemExit(f"scenario setup: {on_target} pods on {target}, expected {DEPLOYMENTS * PER_NODE}")
    return emu, target


def pdb_summary(emu: Emulator) -> dict[str, Any]:
    """Per-budget minimum healthy vs desired, and the violations."""
    out = {}
    for index in range(DEPLOYMENTS):
        metrics = emu.pdb_metrics(f"svc-{index:02d}", "apps") or {}
        out[f"svc-{index:02d}"] = {"min_healthy": metrics.get("min_healthy"), "desired": metrics.get("desired"),
                                   "violations": metrics.get("violations", 0)}
    return out


def run_one(label: str, playbook: str, extra: dict[str, Any], time_scale: float, root: Path, workdir: Path) -> dict[str, Any]:
    """Fresh cluster, one ansible-playbook run, wait until the node is empty."""
    emu, target = build_cluster(time_scale)
    try:
        extra = dict(extra, kubeconfig=emu.kubeconfig_path, target=target)
        calls_before = emu.api_calls()
        start = time.monotonic()
        result = run_playbook(playbook, root, workdir / label, extra_vars=extra)
        played = time.monotonic() - start
        emu.wait_for(lambda: not emu.api.pods("apps", node=target), 600, interval=0.02, what=f"{target} empty after {label}")
        wall = time.monotonic() - start
        record = result.tasks[-1] if result.tasks else {}
        pdbs = pdb_summary(emu)
        return {"label": label, "rc": result.rc, "wall_s": wall, "playbook_s": played, "attempts": (record.get("result") or {}).get("attempts", 1),
                "api_calls": emu.api_calls() - calls_before, "evictions": emu.api_calls("create", "pods/eviction"),
                "pdbs": pdbs, "violations": sum(p["violations"] or 0 for p in pdbs.values()),
                "min_margin": min((p["min_healthy"] or 0) - (p["desired"] or 0) for p in pdbs.values()),
                "tail": "" if result.rc == 0 else result.describe()[-1500:]}
    finally:
        emu.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--time-scale", type=float, default=0.1, help="emulated delays x this (default 0.1: 30 s grace -> 3 s)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    scale = args.time_scale
    with tempfile.TemporaryDirectory(prefix="dsxos-drain-bench-") as tmp:
        base = Path(tmp)
        root = collections_root(base)
        theirs = run_one("k8s_drain", K8S_DRAIN_PLAY, {"delay": max(1, int(round(USER_DELAY_S * scale)))}, scale, root, base)
        ours = run_one("node_drain", OUR_PLAY, {"pdb_retry_s": 1.0 * scale, "pdb_retry_max_s": 5.0 * scale}, scale, root, base)
    ratio = theirs["wall_s"] / max(ours["wall_s"], 1e-6)
    print(f"== drain_bench: 1 node, {DEPLOYMENTS * PER_NODE} pods, {DEPLOYMENTS} PDBs (maxUnavailable 10%), time scale {scale:g} ==")
    rows = [
        ("", "kubernetes.core.k8s_drain + until/retries", "dsxos.cluster.node_drain"),
        ("ansible-playbook rc", str(theirs["rc"]), str(ours["rc"])),
        ("wall time until node empty", f"{theirs['wall_s']:.1f} s", f"{ours['wall_s']:.1f} s"),
        ("  of which the playbook", f"{theirs['playbook_s']:.1f} s", f"{ours['playbook_s']:.1f} s"),
        ("task attempts", str(theirs["attempts"]), str(ours["attempts"])),
        ("API calls (emulator)", str(theirs["api_calls"]), str(ours["api_calls"])),
        ("eviction requests", str(theirs["evictions"]), str(ours["evictions"])),
        ("PDB violations", str(theirs["violations"]), str(ours["violations"])),
        ("min (healthy - desired) over budgets", str(theirs["min_margin"]), str(ours["min_margin"])),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    verdict = "OK" if ratio >= TARGET_RATIO else "MISSED"
    print(f"  speed-up: {ratio:.1f}x (target >= {TARGET_RATIO:g}x: {verdict}); node_drain PDB violations: {ours['violations']} "
          f"(must be 0)")
    print("  per-PDB minimum healthy / desired (node_drain): "
          + ", ".join(f"{k} {v['min_healthy']}/{v['desired']}" for k, v in ours["pdbs"].items()))
    for run in (theirs, ours):
        if run["rc"] != 0:
            print(f"  {run['label']} failed:\n{run['tail']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"k8s_drain": theirs, "node_drain": ours, "ratio": ratio}, handle, indent=2)
    return 0 if ratio >= TARGET_RATIO and ours["violations"] == 0 and ours["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
