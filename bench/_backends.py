# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What the Kubernetes benches share: the two backends and the side-by-side table.

* ``emulator``: ``tests/harness/k8s_emulator`` (in-process, or ``python -m tests.harness.k8s_emulator serve`` in its own
  process: :class:`EmulatorProcess`), delays scaled by a time scale.
* ``real``: :class:`RealBackend`, the real control plane of ``tests/harness/kube_control_plane`` (kube-apiserver,
  controller-manager, scheduler v1.20.2, etcd 3.4) with its state under a temporary directory, plus a
  ``NodeSimulator`` (simulated kubelets: nodes Ready, pods Running, graceful deletion after the real grace period).
  Everything runs in real time.

Both are reached only through the official ``kubernetes`` client (``rawapi`` for raw JSON calls and for
``policy/v1beta1``, which the client has no classes for). :func:`install_signal_handlers` turns SIGTERM/SIGHUP into
``KeyboardInterrupt`` so that the ``finally`` blocks stop every process also on Ctrl-C or a kill.

This file starts with ``_``: ``make bench`` does not run it.
"""
from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position

from ansible_collections.dsxos.cluster.tests.harness.kube_control_plane import rawapi  # noqa: E402  # pylint: disable=wrong-import-position
from ansible_collections.dsxos.cluster.tests.harness.kube_control_plane.cluster import RealCluster  # noqa: E402  # pylint: disable=wrong-import-position
from ansible_collections.dsxos.cluster.tests.harness.kube_control_plane.node_simulator import NodeSimulator  # noqa: E402  # pylint: disable=wrong-import-position

BACKENDS = ("emulator", "real")
REAL_VERSION = "Kubernetes v1.20.2 (kube-apiserver, controller-manager, scheduler) + etcd 3.4, simulated kubelets"


def backends_from_arg(value: str) -> list[str]:
    """``emulator``, ``real`` or ``both`` -> the list to run."""
    if value == "both":
        return list(BACKENDS)
    if value not in BACKENDS:
        raise SystemExit(f"--backend: emulator, real or both, not {value!r}")
    return [value]


def add_backend_argument(parser: Any) -> None:
    parser.add_argument("--backend", default="both", choices=("emulator", "real", "both"),
                        help="emulator (tests/harness/k8s_emulator), real (kube-apiserver 1.20 + simulated kubelets) or both (default)")


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread (Ctrl-C already does): cleanup runs in ``finally``."""
    def interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)


def load_average() -> str:
    """``uptime``'s load average, for every printed figure (the machine is shared)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def parallel(func: Callable[[Any], Any], items: Iterable[Any], workers: int = 16) -> list[Any]:
    """``func`` over ``items`` on a thread pool; the first exception is raised."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(func, items))


def fmt_ratio(numerator: Optional[float], denominator: Optional[float]) -> str:
    if numerator is None or denominator is None or denominator <= 0:
        return "n/a"
    return f"{numerator / denominator:.1f}x"


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str] = ()) -> str:
    """One plain-text table (also returned, for the JSON record)."""
    table = [list(header)] + [list(r) + [""] * (len(header) - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = [f"== {title} =="]
    for index, row in enumerate(table):
        lines.append("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if index == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    lines.extend("  " + note for note in notes)
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def api_client_for(kubeconfig: str) -> Any:
    """An ``ApiClient`` of the official client for ``kubeconfig`` (any backend)."""
    from kubernetes import config  # pylint: disable=import-outside-toplevel

    return config.new_client_from_config(config_file=kubeconfig)


def create_namespace(api: Any, name: str) -> None:
    status, data = rawapi.call_status(api, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    if status >= 400 and status != 409:
        raise RuntimeError(f"create namespace {name}: {status} {data}")


def create_bound_pods(api: Any, namespace: str, nodes: Sequence[tuple[int, str]], per_node: int, grace_s: int, workers: int = 16) -> int:
    """``per_node`` bare pods on each ``(index, node)``, named ``w-<index>-<i>`` and bound at creation (``spec.nodeName``: no
    scheduling), as the emulator's ``seed_pods`` makes them; the backend's kubelet (emulated or simulated) runs them."""
    def create(item: tuple[int, str]) -> None:
        index, node = item
        for i in range(per_node):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"w-{index}-{i}", "labels": {"app": "workload"}},
                   "spec": {"nodeName": node, "terminationGracePeriodSeconds": grace_s, "automountServiceAccountToken": False,
                            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
            status, data = rawapi.call_status(api, "POST", f"/api/v1/namespaces/{namespace}/pods", pod)
            if status >= 400 and status != 409:
                raise RuntimeError(f"create pod w-{index}-{i}: {status} {str(data)[:300]}")
    parallel(create, list(nodes), workers)
    return len(nodes) * per_node


# ---- the real control plane --------------------------------------------------------------------------------------
class RealBackend:
    """A RealCluster (state under a temporary directory) and a NodeSimulator; :meth:`stop` is idempotent.

    ``qps`` raises the scheduler's and controller-manager's client QPS (their defaults are 50 and 20); ``sim`` keyword
    arguments go to the NodeSimulator (heartbeat intervals for large clusters).
    """

    def __init__(self, node_monitor_grace_s: int = 40, qps: Optional[int] = None, log: Callable[[str], None] = lambda m: None,
                 **sim: Any) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="dsxos-bench-real-")
        extra: dict[str, list[str]] = {}
        if qps:
            flags = ["--kube-api-qps", str(qps), "--kube-api-burst", str(qps * 2)]
            extra = {"kube-scheduler": flags, "kube-controller-manager": flags}
        self.cluster = RealCluster(state_dir=Path(self.tmp.name) / "state", node_monitor_grace_s=node_monitor_grace_s,
                                   extra_args=extra, log=log)
        self.sim_kwargs = sim
        self.sim: Optional[NodeSimulator] = None
        self.api: Any = None
        self.started_in_s = 0.0

    def start(self) -> "RealBackend":
        try:
            begin = time.monotonic()
            self.cluster.start()
            self.started_in_s = time.monotonic() - begin
            self.api = self.cluster.api_client()
            self.sim = NodeSimulator(str(self.cluster.kubeconfig_path), **self.sim_kwargs).start()
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> "RealBackend":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def kubeconfig(self) -> str:
        return str(self.cluster.kubeconfig_path)

    def stop(self) -> None:
        """Simulator first (its watch), then every control-plane process group, then the temporary directory."""
        if self.sim is not None:
            try:
                self.sim.stop()
            finally:
                self.sim = None
        if self.api is not None:
            try:
                self.api.close()
            except Exception:  # pylint: disable=broad-except
                pass
            self.api = None
        try:
            self.cluster.stop()
        finally:
            self.tmp.cleanup()

    # ---- raw calls as admin --------------------------------------------------------------------------------------
    def call(self, method: str, path: str, body: Any = None, query: Optional[Sequence[tuple[str, Any]]] = None,
             content_type: str = rawapi.JSON) -> Any:
        return rawapi.call(self.api, method, path, body, query, content_type)

    def create_namespace(self, name: str) -> None:
        """The namespace and, before any pod can be admitted there, its default service account."""
        create_namespace(self.api, name)
        self.cluster.wait_for_service_account(name)

    def set_unschedulable(self, node: str, value: bool) -> None:
        self.call("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": value}}, content_type=rawapi.MERGE)

    def pods_on(self, node: str, namespace: Optional[str] = None) -> list[dict[str, Any]]:
        """Pods bound to ``node`` from the apiserver's watch cache (``resourceVersion=0``: cheap, slightly stale)."""
        path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
        return self.call("GET", path, query=[("fieldSelector", f"spec.nodeName={node}"), ("resourceVersion", "0")]).get("items") or []

    def running(self, namespace: str) -> int:
        items = self.call("GET", f"/api/v1/namespaces/{namespace}/pods", query=[("resourceVersion", "0")]).get("items") or []
        return len([p for p in items if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")])

    def create_bound_pods(self, namespace: str, nodes: Sequence[tuple[int, str]], per_node: int, grace_s: int, workers: int = 16) -> int:
        return create_bound_pods(self.api, namespace, nodes, per_node, grace_s, workers)

    def wait(self, predicate: Callable[[], bool], timeout_s: float, what: str, interval: float = 0.5) -> float:
        """Poll ``predicate`` until true; returns the seconds waited; raises TimeoutError naming ``what``."""
        begin = time.monotonic()
        while not predicate():
            if time.monotonic() - begin > timeout_s:
                sim = self.sim.last_errors[-3:] if self.sim else []
                raise TimeoutError(f"real backend: {what} not reached after {timeout_s:.0f} s (simulator errors: {sim})")
            time.sleep(interval)
        return time.monotonic() - begin

    def request_counts(self) -> dict[str, int]:
        """kube-apiserver's ``apiserver_request_total`` summed by ``VERB resource[/subresource] code`` (all clients)."""
        status, data = rawapi.call_status(self.api, "GET", "/metrics")
        text = data.get("message", "") if isinstance(data, dict) else str(data)
        if status != 200:
            return {}
        out: dict[str, int] = {}
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
            resource = labels.get("resource", "") + ("/" + labels["subresource"] if labels.get("subresource") else "")
            key = f"{labels.get('verb', '')} {resource} {labels.get('code', '')}"
            out[key] = out.get(key, 0) + int(float(line.rsplit(" ", 1)[1]))
        return out

    def evictions(self, before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
        """Eviction requests between two :meth:`request_counts`, by answer code (only drainers send evictions)."""
        out: dict[str, int] = {}
        for key, value in after.items():
            verb, resource, code = key.split(" ")
            if verb == "POST" and resource == "pods/eviction":
                delta = value - before.get(key, 0)
                if delta:
                    out[code] = out.get(code, 0) + delta
        return out


class PdbWatcher(threading.Thread):
    """Polls PodDisruptionBudgets' status (any backend): the minimum of ``currentHealthy - desiredHealthy`` per budget."""

    def __init__(self, poll: Callable[[], list[dict[str, Any]]], interval_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.poll = poll
        self.interval_s = interval_s
        self.margin: dict[str, int] = {}
        self.errors = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.sample()
            self.stop_event.wait(self.interval_s)

    def sample(self) -> None:
        try:
            items = self.poll()
        except Exception:  # pylint: disable=broad-except
            self.errors += 1
            return
        for pdb in items:
            status = pdb.get("status") or {}
            if "desiredHealthy" not in status:
                continue
            margin = int(status.get("currentHealthy", 0)) - int(status["desiredHealthy"])
            name = pdb["metadata"]["name"]
            self.margin[name] = min(margin, self.margin.get(name, margin))

    def finish(self) -> dict[str, int]:
        self.stop_event.set()
        self.join(timeout=5)
        self.sample()
        return dict(self.margin)
