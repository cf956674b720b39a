# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Drain one node holding 110 pods: dsxos.cluster.node_drain against kubernetes.core.k8s_drain in the retry loop its users write,
on the emulator and on a real control plane, side by side.

Cluster (a fresh one per run): 4 worker nodes full with 11 Deployments x 40 replicas (10 pods of each per node, 110 on the
drained node), each with a PodDisruptionBudget ``maxUnavailable: 10%`` (4 pods), so budgets refuse evictions part of the
time until replacements are Ready; 2 empty spare nodes take the replacements.

* ``--backend emulator``: tests/harness/k8s_emulator in-process, same seed and time scale for both runs (delays scaled);
* ``--backend real``: kube-apiserver/controller-manager/scheduler v1.20.2 + etcd 3.4 with a NodeSimulator (simulated
  kubelets: pods Running 0.2 s after binding, deleted when the real 30 s grace period has passed), in real time. The
  real scheduler places pods, so the 10-per-node layout is built in 4 stages (all workers but one cordoned, the
  Deployments scaled up by 10 each); the budgets are ``policy/v1beta1`` (1.20 has no ``policy/v1``);
* ``--backend both`` (default): both, then one table.

* kubernetes.core.k8s_drain (kubernetes.core from the ``ansible`` 12.3.0 bundle) evicts one pod at a time and fails on the
  first HTTP 429, so it runs as users write it: ``until: result is succeeded``, ``retries: 60``, ``delay: 10 s`` (scaled by
  the time scale like every emulated delay);
* dsxos.cluster.node_drain runs once with its defaults, its PDB retry delays scaled the same way.

Both are real ``ansible-playbook`` runs (the same playbooks on both backends). The clock stops when the playbook has ended
AND no pod is left on the node. Printed side by side: wall time, ratio (target >= 5x), API calls, k8s_drain attempts,
eviction requests, and the budgets' minimum healthy pods against desiredHealthy (emulator: its PDB metrics; real: the
PDB status polled every 0.25 s); a violation fails the bench.

Usage: python bench/drain_bench.py [--backend emulator|real|both] [--time-scale 0.1] [--json FILE]
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _backends  # noqa: E402  # pylint: disable=wrong-import-position
from _backends import REPO, PdbWatcher, RealBackend, fmt_ratio, load_average, print_table  # noqa: E402  # pylint: disable=wrong-import-position
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


def run_emulator(label: str, playbook: str, extra: dict[str, Any], time_scale: float, root: Path, workdir: Path) -> dict[str, Any]:
    """Fresh emulator cluster, one ansible-playbook run, wait until the node is empty."""
    emu, target = build_cluster(time_scale)
    try:
        extra = dict(extra, kubeconfig=emu.kubeconfig_path, target=target)
        calls_before = emu.api_calls()
        load_before = load_average()
        start = time.monotonic()
        result = run_playbook(playbook, root, workdir / f"emulator-{label}", extra_vars=extra)
        played = time.monotonic() - start
        emu.wait_for(lambda: not emu.api.pods("apps", node=target), 600, interval=0.02, what=f"{target} empty after {label}")
        wall = time.monotonic() - start
        record = result.tasks[-1] if result.tasks else {}
        pdbs = pdb_summary(emu)
        return {"backend": "emulator", "label": label, "rc": result.rc, "wall_s": wall, "playbook_s": played,
                "attempts": (record.get("result") or {}).get("attempts", 1),
                "api_calls": emu.api_calls() - calls_before, "evictions": str(emu.api_calls("create", "pods/eviction")),
                "pdbs": pdbs, "violations": sum(p["violations"] or 0 for p in pdbs.values()),
                "min_margin": min((p["min_healthy"] or 0) - (p["desired"] or 0) for p in pdbs.values()),
                "load_before": load_before, "load_after": load_average(), "time_scale": time_scale,
                "tail": "" if result.rc == 0 else result.describe()[-1500:]}
    finally:
        emu.stop()


def deployment(name: str, replicas: int) -> dict[str, Any]:
    """The Deployment the emulator's ``add_deployment(cpu="100m", grace_s=30)`` makes."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "apps", "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 30, "automountServiceAccountToken": False,
                                           "containers": [{"name": "main", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}]}}}}


def build_real_cluster(backend: RealBackend) -> str:
    """The same layout on the real control plane; returns the node to drain.

    The real scheduler decides placement, so the exact 10 pods per Deployment per node come from 4 stages: all workers but
    one cordoned, each Deployment scaled up by 10 (scaling does not change the pod template: no rollout)."""
    assert backend.sim is not None
    workers = backend.sim.add_nodes(WORKERS, "h100-eks", name_prefix="worker-")
    backend.create_namespace("apps")
    for stage, node in enumerate(workers):
        for other in workers:
            backend.set_unschedulable(other, other != node)
        for index in range(DEPLOYMENTS):
            name = f"svc-{index:02d}"
            if stage == 0:
                backend.call("POST", "/apis/apps/v1/namespaces/apps/deployments", deployment(name, PER_NODE))
            else:
                backend.call("PATCH", f"/apis/apps/v1/namespaces/apps/deployments/{name}/scale",
                             {"spec": {"replicas": PER_NODE * (stage + 1)}}, content_type=_backends.rawapi.MERGE)
        expected = DEPLOYMENTS * PER_NODE

        def placed(node: str = node) -> bool:
            pods = backend.pods_on(node, "apps")
            return len([p for p in pods if (p.get("status") or {}).get("phase") == "Running"]) == expected
        backend.wait(placed, 300, f"{expected} pods Running on {node}", 0.5)
    for node in workers:
        backend.set_unschedulable(node, False)
    for index in range(DEPLOYMENTS):
        name = f"svc-{index:02d}"
        backend.call("POST", "/apis/policy/v1beta1/namespaces/apps/poddisruptionbudgets",
                     {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "apps"},
                      "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": {"app": name}}}})
    spares = backend.sim.add_nodes(SPARES, "h100-eks", name_prefix="spare-")
    replicas = WORKERS * PER_NODE

    def settled() -> bool:
        pdbs = backend.call("GET", "/apis/policy/v1beta1/namespaces/apps/poddisruptionbudgets").get("items") or []
        budgets_ok = len(pdbs) == DEPLOYMENTS and all(
            (p.get("status") or {}).get("currentHealthy") == replicas and (p.get("status") or {}).get("disruptionsAllowed") == replicas // 10
            for p in pdbs)
        spares_ready = all(not (backend.call("GET", f"/api/v1/nodes/{n}").get("spec") or {}).get("taints") for n in spares)
        return budgets_ok and spares_ready
    backend.wait(settled, 120, "budgets observed (disruptionsAllowed 4) and spare nodes without the not-ready taint", 0.5)
    target = workers[0]
    on_target = len(backend.pods_on(target, "apps"))
    if on_target != DEPLOYMENTS * PER_NODE:
        raise SystemExit(f"real scenario setup: {on_target} pods on {target}, expected {DEPLOYMENTS * PER_NODE}")
    return target


def run_real(label: str, playbook: str, extra: dict[str, Any], root: Path, workdir: Path) -> dict[str, Any]:
    """Fresh real control plane + simulated kubelets, one ansible-playbook run, wait until the node is empty."""
    with RealBackend() as backend:
        begin = time.monotonic()
        target = build_real_cluster(backend)
        setup_s = time.monotonic() - begin
        extra = dict(extra, kubeconfig=backend.kubeconfig, target=target)
        watcher = PdbWatcher(lambda: backend.call("GET", "/apis/policy/v1beta1/namespaces/apps/poddisruptionbudgets").get("items") or [])
        watcher.start()
        counts_before = backend.request_counts()
        load_before = load_average()
        start = time.monotonic()
        try:
            result = run_playbook(playbook, root, workdir / f"real-{label}", extra_vars=extra)
            played = time.monotonic() - start
            backend.wait(lambda: not backend.pods_on(target, "apps"), 600, f"{target} empty after {label}", 0.1)
            wall = time.monotonic() - start
        finally:
            margins = watcher.finish()
        evictions = backend.evictions(counts_before, backend.request_counts())
        record = result.tasks[-1] if result.tasks else {}
        return {"backend": "real", "label": label, "rc": result.rc, "wall_s": wall, "playbook_s": played,
                "attempts": (record.get("result") or {}).get("attempts", 1), "api_calls": None,
                "evictions": f"{sum(evictions.values())} (" + ", ".join(f"{v}x {k}" for k, v in sorted(evictions.items())) + ")",
                "eviction_codes": evictions, "pdb_margins": margins, "violations": len([m for m in margins.values() if m < 0]),
                "min_margin": min(margins.values()) if margins else None, "setup_s": setup_s,
                "control_plane_s": backend.started_in_s, "simulator": dict(backend.sim.counts) if backend.sim else {},
                "load_before": load_before, "load_after": load_average(), "time_scale": 1.0,
                "tail": "" if result.rc == 0 else result.describe()[-1500:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    _backends.add_backend_argument(parser)
    parser.add_argument("--time-scale", type=float, default=0.1, help="the emulator's delays x this (default 0.1: 30 s grace -> 3 s)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    backends = _backends.backends_from_arg(args.backend)
    _backends.install_signal_handlers()
    scale = args.time_scale
    print(f"== drain_bench: backends {', '.join(backends)}; {load_average()} ==", flush=True)
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="dsxos-drain-bench-") as tmp:
        base = Path(tmp)
        root = collections_root(base)
        if "emulator" in backends:
            runs["emulator"] = {
                "k8s_drain": run_emulator("k8s_drain", K8S_DRAIN_PLAY, {"delay": max(1, int(round(USER_DELAY_S * scale)))}, scale, root, base),
                "node_drain": run_emulator("node_drain", OUR_PLAY, {"pdb_retry_s": 1.0 * scale, "pdb_retry_max_s": 5.0 * scale}, scale, root, base)}
            print(f"   emulator done ({load_average()})", flush=True)
        if "real" in backends:
            runs["real"] = {
                "k8s_drain": run_real("k8s_drain", K8S_DRAIN_PLAY, {"delay": int(USER_DELAY_S)}, root, base),
                "node_drain": run_real("node_drain", OUR_PLAY, {"pdb_retry_s": 1.0, "pdb_retry_max_s": 5.0}, root, base)}
            print(f"   real done ({load_average()})", flush=True)
    table, ok = report(runs, scale)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"runs": runs, "table": table}, handle, indent=2, default=str)
    return 0 if ok else 1


def report(runs: dict[str, dict[str, dict[str, Any]]], scale: float) -> tuple[str, bool]:
    """The side-by-side table: node_drain per backend, k8s_drain (the anchor) per backend, the ratios."""
    order = [b for b in ("emulator", "real") if b in runs]
    names = {"emulator": f"emulator (scale {scale:g})", "real": "real 1.20"}
    header = ["figure"] + [f"node_drain, {names[b]}" for b in order] + [f"k8s_drain, {names[b]}" for b in order] \
        + [f"k8s_drain/node_drain, {b}" for b in order]

    def row(title: str, key: str, fmt: str = "{}", ratio: bool = False) -> list[str]:
        cells = [title]
        for label in ("node_drain", "k8s_drain"):
            for backend in order:
                value = runs[backend][label].get(key)
                cells.append("n/a" if value is None else fmt.format(value))
        for backend in order:
            cells.append(fmt_ratio(runs[backend]["k8s_drain"].get(key), runs[backend]["node_drain"].get(key)) if ratio else "")
        return cells

    rows = [
        row("ansible-playbook rc", "rc"),
        row("wall time until node empty", "wall_s", "{:.1f} s", ratio=True),
        row("  of which the playbook", "playbook_s", "{:.1f} s", ratio=True),
        row("task attempts", "attempts"),
        row("API calls (emulator's count)", "api_calls", ratio=True),
        row("eviction requests", "evictions"),
        row("PDB violations", "violations"),
        row("min (healthy - desired) over budgets", "min_margin"),
    ]
    notes = []
    ok = True
    for backend in order:
        ours, theirs = runs[backend]["node_drain"], runs[backend]["k8s_drain"]
        ratio = theirs["wall_s"] / max(ours["wall_s"], 1e-6)
        good = ratio >= TARGET_RATIO and ours["violations"] == 0 and ours["rc"] == 0
        ok = ok and good
        notes.append(f"{backend}: speed-up {ratio:.1f}x (target >= {TARGET_RATIO:g}x: {'OK' if ratio >= TARGET_RATIO else 'MISSED'}); "
                     f"node_drain PDB violations {ours['violations']} (must be 0)")
        for run in (theirs, ours):
            notes.append(f"{backend} {run['label']}: {run['load_before']} before, {run['load_after']} after")
    if "emulator" in runs:
        notes.append("emulator: every emulated delay (grace period, kubelet, the k8s_drain retry delay, node_drain's PDB retry delays) "
                     f"x {scale:g}; the real backend runs in real time (30 s grace, delay 10 s)")
    if "real" in runs:
        real = runs["real"]["node_drain"]
        notes.append(f"real: eviction requests by answer code from kube-apiserver's apiserver_request_total; budgets from the "
                     f"policy/v1beta1 PDB status polled every 0.25 s; setup {real['setup_s']:.0f} s after a {real['control_plane_s']:.0f} s "
                     "control-plane start")
    if "emulator" in runs:
        notes.append("per-PDB minimum healthy / desired (node_drain, emulator): "
                     + ", ".join(f"{k} {v['min_healthy']}/{v['desired']}" for k, v in runs["emulator"]["node_drain"]["pdbs"].items()))
    table = print_table(f"drain_bench: 1 node, {DEPLOYMENTS * PER_NODE} pods, {DEPLOYMENTS} PDBs (maxUnavailable 10%); "
                        "anchor kubernetes.core.k8s_drain + until/retries", header, rows, notes)
    for backend in order:
        for run in runs[backend].values():
            if run["rc"] != 0:
                print(f"  {backend} {run['label']} failed:\n{run['tail']}")
    return table, ok


if __name__ == "__main__":
    sys.exit(main())
