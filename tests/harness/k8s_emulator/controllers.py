# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Simulated control plane: scheduler, kubelet, ReplicaSet/Deployment/StatefulSet/DaemonSet/Job controllers, garbage
collector, namespace lifecycle, NoExecute taint eviction, PDB status and CRD establishment.

One background thread, event driven (store events mark objects dirty) plus a timer heap for delays, all delays in
emulated seconds multiplied by the emulator's time scale.
"""
from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .disruption import pod_is_ready
from .errors import ApiError
from .objects import default_pod_spec
from .scheduling import DAEMONSET_TOLERATIONS, node_free, node_selector_matches, pod_is_active, pod_requests, untolerated_taints
from .util import deep_copy, now_rfc3339, random_suffix

if TYPE_CHECKING:  # pragma: no cover
    from .emulator import Emulator

ANN_DURATION = "emulator.dsxos.io/duration"
ANN_EXIT_CODE = "emulator.dsxos.io/exit-code"
ANN_EXIT_CODES = "emulator.dsxos.io/exit-codes"
ANN_LOG = "emulator.dsxos.io/log"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: dict[str, Any]) -> str:
    """Stable ``pod-template-hash`` (10 chars of the apiserver's safe alphabet)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:10])


def _owner_ref(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def _controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def _set_condition(conditions: list[dict[str, Any]], ctype: str, status: str, reason: str = "", message: str | None = None) -> None:
    """Upsert a condition keeping lastTransitionTime when the status does not change (``message=""`` is written, None is not)."""
    for cond in conditions:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now_rfc3339()
            cond["status"] = status
            if reason:
                cond["reason"] = reason
            if message is not None:
                cond["message"] = message
            return
    cond = {"type": ctype, "status": status, "lastTransitionTime": now_rfc3339()}
    if reason:
        cond["reason"] = reason
    if message is not None:
        cond["message"] = message
    conditions.append(cond)


class Controllers:  # pylint: disable=too-many-instance-attributes,too-many-public-methods
    """The background reconcilers."""

    def __init__(self, emu: "Emulator") -> None:
        self.emu = emu
        self.store = emu.store
        reg = emu.registry
        self.rt_pods = reg.lookup("", "v1", "pods")
        self.rt_nodes = reg.lookup("", "v1", "nodes")
        self.rt_ns = reg.lookup("", "v1", "namespaces")
        self.rt_rs = reg.lookup("apps", "v1", "replicasets")
        self.rt_deploy = reg.lookup("apps", "v1", "deployments")
        self.rt_sts = reg.lookup("apps", "v1", "statefulsets")
        self.rt_ds = reg.lookup("apps", "v1", "daemonsets")
        self.rt_jobs = reg.lookup("batch", "v1", "jobs")
        self.rt_pdb = reg.lookup("policy", "v1", "poddisruptionbudgets")
        self.rt_crd = reg.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        self._events: "queue.SimpleQueue[tuple[str, str, dict[str, Any], dict[str, Any] | None] | None]" = queue.SimpleQueue()
        self._timers: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()
        self._timer_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dirty: dict[str, set[tuple[str, str]]] = {k: set() for k in ("rs", "deploy", "sts", "ds", "job", "pdb", "crd")}
        self._pending: set[tuple[str, str]] = set()
        self._to_schedule: set[tuple[str, str]] = set()
        self._resched = False
        self._started: set[str] = set()
        self._deleting: dict[str, int] = {}
        self._terminating_ns: set[str] = set()
        self._gc_uids: set[str] = set()
        self._foreground: set[tuple[str, str, str]] = set()
        self._taint_nodes: set[str] = set()
        self._all_ds = False
        self._busy = threading.Event()
        self._idle = threading.Event()
        self.errors: list[str] = []
        self.kubelet_start_delay_s = 1.0
        store_listeners = self.store.listeners
        store_listeners.append(self._on_event)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the control loop thread."""
        self._thread = threading.Thread(target=self._run, name="k8s-emulator-controllers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the control loop."""
        self._stop.set()
        self._events.put(None)
        if self._thread:
            self._thread.join(timeout=5)

    def kick(self) -> None:
        """Wake the loop (e.g. after an out-of-band change)."""
        self._idle.clear()
        self._events.put(None)

    def _on_event(self, etype: str, storage: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self._idle.clear()
        self._events.put((etype, storage, obj, old))

    def after(self, emulated_s: float, func: Callable[..., None], *args: Any) -> None:
        """Run ``func(*args)`` on the control thread after ``emulated_s`` emulated seconds."""
        due = time.monotonic() + max(0.0, emulated_s) * self.emu.time_scale
        with self._timer_lock:
            heapq.heappush(self._timers, (due, next(self._seq), func, args))
        self._events.put(None)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Block until the loop has no queued events and no dirty work (timers may still be pending)."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._timer_lock:
                wait = self._timers[0][0] - time.monotonic() if self._timers else 0.2
            wait = min(max(wait, 0.0), 0.2)
            try:
                item = self._events.get(timeout=wait) if wait > 0 else self._events.get_nowait()
            except queue.Empty:
                item = None
            self._observe_item(item)
            for _drained in range(100000):
                try:
                    self._observe_item(self._events.get_nowait())
                except queue.Empty:
                    break
            self._run_timers()
            self._guarded(self._reconcile_all)
            if self._events.empty() and not any(self._dirty.values()) and not self._to_schedule and not self._resched:
                self._idle.set()
                if not self._events.empty():  # an event raced in: not idle after all
                    self._idle.clear()

    def _guarded(self, func: Callable[..., None], *args: Any) -> None:
        try:
            func(*args)
        except ApiError as err:
            self._record(f"{func.__name__}{args}: {err.code} {err.message}")
        except Exception as exc:  # pylint: disable=broad-except  # a controller bug must not kill the loop
            self._record(f"{func.__name__}{args}: {type(exc).__name__}: {exc}")

    def _record(self, text: str) -> None:
        self.errors.append(text)
        del self.errors[:-200]

    def _run_timers(self) -> None:
        now = time.monotonic()
        while True:
            with self._timer_lock:
                if not self._timers or self._timers[0][0] > now:
                    return
                _due, _seq, func, args = heapq.heappop(self._timers)
            self._guarded(func, *args)

    # ------------------------------------------------------------------ event intake

    def _observe_item(self, item: tuple[str, str, dict[str, Any], dict[str, Any] | None] | None) -> None:
        if item is None:
            return
        etype, storage, obj, old = item
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        if etype == "DELETED":
            if self.store.dependents(meta["uid"]):
                self._gc_uids.add(meta["uid"])
        elif meta.get("deletionTimestamp") and "foregroundDeletion" in (meta.get("finalizers") or ()):
            self._foreground.add((storage, ns, name))
        ref = _controller_of(obj)
        if ref is not None:
            key = {"ReplicaSet": "rs", "Deployment": "deploy", "StatefulSet": "sts", "DaemonSet": "ds", "Job": "job"}.get(ref.get("kind", ""))
            if key:
                self._dirty[key].add((ns, ref.get("name", "")))
        if storage == "pods":
            self._observe_pod(etype, obj)
        elif storage == "nodes":
            self._all_ds = True
            self._resched = True
            if etype != "DELETED":
                self._taint_nodes.add(name)
        elif storage == self.rt_rs.store_name:
            self._dirty["rs"].add((ns, name))
        elif storage == self.rt_deploy.store_name:
            self._dirty["deploy"].add((ns, name))
        elif storage == self.rt_sts.store_name:
            self._dirty["sts"].add((ns, name))
        elif storage == self.rt_ds.store_name:
            self._dirty["ds"].add((ns, name))
        elif storage == self.rt_jobs.store_name:
            self._dirty["job"].add((ns, name))
        elif storage == self.rt_pdb.store_name and etype != "DELETED":
            self._dirty["pdb"].add((ns, name))
        elif storage == "namespaces" and etype != "DELETED" and meta.get("deletionTimestamp"):
            self._terminating_ns.add(name)
        elif storage == self.rt_crd.store_name and etype != "DELETED":
            self._dirty["crd"].add(("", name))

    def _observe_pod(self, etype: str, pod: dict[str, Any]) -> None:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        key = (meta["namespace"], meta["name"])
        uid = meta["uid"]
        for pdb in self.store.iter_objects(self.rt_pdb, meta["namespace"]):
            self._dirty["pdb"].add((meta["namespace"], pdb["metadata"]["name"]))
        if etype == "DELETED":
            self._pending.discard(key)
            self._to_schedule.discard(key)
            self._started.discard(uid)
            self._deleting.pop(uid, None)
            self._resched = True
            return
        if meta.get("deletionTimestamp"):
            self._pending.discard(key)
            self._to_schedule.discard(key)
            grace = int(meta.get("deletionGracePeriodSeconds") or 0)
            if self._deleting.get(uid) != grace:
                self._deleting[uid] = grace
                self.after(grace, self._kubelet_remove, meta["namespace"], meta["name"], uid)
            return
        phase = status.get("phase")
        if not spec.get("nodeName"):
            if phase == "Pending" and spec.get("schedulerName", "default-scheduler") == "default-scheduler":
                if key not in self._pending:
                    self._pending.add(key)
                    self._to_schedule.add(key)
            return
        if phase == "Pending" and uid not in self._started:
            self._started.add(uid)
            self.after(self.kubelet_start_delay_s, self._kubelet_start, meta["namespace"], meta["name"], uid)
        if phase in ("Succeeded", "Failed"):
            self._resched = True

    # ------------------------------------------------------------------ reconcile dispatch

    def _reconcile_all(self) -> None:
        if self._taint_nodes:
            nodes, self._taint_nodes = self._taint_nodes, set()
            for node in nodes:
                self._guarded(self._taint_manager, node)
        if self._gc_uids:
            uids, self._gc_uids = self._gc_uids, set()
            for uid in uids:
                self._guarded(self._collect, uid)
        if self._foreground:
            items, self._foreground = self._foreground, set()
            for item in items:
                self._guarded(self._foreground_delete, *item)
        if self._terminating_ns:
            for ns in list(self._terminating_ns):
                self._guarded(self._namespace_purge, ns)
        if self._all_ds:
            self._all_ds = False
            for ds in self.store.iter_objects(self.rt_ds):
                self._dirty["ds"].add((ds["metadata"]["namespace"], ds["metadata"]["name"]))
        handlers = (("crd", self._reconcile_crd), ("deploy", self._reconcile_deployment), ("rs", self._reconcile_replicaset),
                    ("sts", self._reconcile_statefulset), ("ds", self._reconcile_daemonset), ("job", self._reconcile_job))
        for kind, handler in handlers:
            if self._dirty[kind]:
                keys, self._dirty[kind] = self._dirty[kind], set()
                for ns, name in sorted(keys):
                    self._guarded(handler, ns, name)
        if self._to_schedule or (self._resched and self._pending):
            self._guarded(self._schedule)
        elif not self._pending:
            self._resched = False
        if self._dirty["pdb"]:
            keys, self._dirty["pdb"] = self._dirty["pdb"], set()
            for ns, name in sorted(keys):
                self._guarded(self._reconcile_pdb, ns, name)

    # ------------------------------------------------------------------ scheduler

    def _schedule(self) -> None:
        keys = self._pending if self._resched else self._to_schedule
        self._resched = False
        self._to_schedule = set()
        if not keys:
            return
        nodes = sorted(self.store.iter_objects(self.rt_nodes), key=lambda n: n["metadata"]["name"])
        free_cache: dict[str, dict[str, float]] = {}
        pods = []
        for key in list(keys):
            pod = self.store.find(self.rt_pods, key[0], key[1])
            if pod is None or (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                self._pending.discard(key)
                continue
            pods.append(pod)
        pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
        for pod in pods:
            self._schedule_one(pod, nodes, free_cache)

    def _schedule_one(self, pod: dict[str, Any], nodes: list[dict[str, Any]], free_cache: dict[str, dict[str, float]]) -> None:
        spec = pod.get("spec") or {}
        need = pod_requests(spec)
        owner = _controller_of(pod)
        owner_uid = owner.get("uid") if owner else None
        reasons: dict[str, int] = {}
        best: tuple[Any, ...] | None = None
        best_node = None
        for node in nodes:
            name = node["metadata"]["name"]
            bad = untolerated_taints(spec, node)
            if bad:
                if any(t.get("key") == "node.kubernetes.io/unschedulable" for t in bad):
                    why = "node(s) were unschedulable"
                else:
                    why = "node(s) had untolerated taint {" + f"{bad[0].get('key')}: {bad[0].get('value', '')}" + "}"
                reasons[why] = reasons.get(why, 0) + 1
                continue
            if not node_selector_matches(spec, node):
                reasons["node(s) didn't match Pod's node affinity/selector"] = reasons.get("node(s) didn't match Pod's node affinity/selector", 0) + 1
                continue
            if name not in free_cache:
                free_cache[name] = node_free(node, self.store.pods_on_node(name))
            free = free_cache[name]
            short = [res for res, amount in need.items() if amount > 0 and free.get(res, 0.0) + 1e-9 < amount]
            if free["pods"] < 1:
                short.append("pods")
            if short:
                for res in short:
                    why = "Too many pods" if res == "pods" else f"Insufficient {res}"
                    reasons[why] = reasons.get(why, 0) + 1
                continue
            on_node = self.store.pods_on_node(name)
            same_owner = sum(1 for p in on_node if owner_uid and any(r.get("uid") == owner_uid for r in p["metadata"].get("ownerReferences") or ()))
            score = (same_owner, len(on_node), name)
            if best is None or score < best:
                best, best_node = score, name
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        if best_node is None:
            detail = ", ".join(f"{count} {why}" for why, count in sorted(reasons.items()))
            message = f"0/{len(nodes)} nodes are available: {detail}." if detail else f"0/{len(nodes)} nodes are available."

            def mark(obj: dict[str, Any]) -> None:
                conds = obj.setdefault("status", {}).setdefault("conditions", [])
                _set_condition(conds, "PodScheduled", "False", "Unschedulable", message)
            self.store.mutate(self.rt_pods, key[0], key[1], mark)
            return
        for res, amount in need.items():
            free_cache[best_node][res] -= amount
        free_cache[best_node]["pods"] -= 1

        def bind(obj: dict[str, Any]) -> bool:
            if (obj.get("spec") or {}).get("nodeName") or obj["metadata"].get("deletionTimestamp"):
                return False
            obj["spec"]["nodeName"] = best_node
            conds = obj.setdefault("status", {}).setdefault("conditions", [])
            _set_condition(conds, "PodScheduled", "True")
            for cond in conds:
                if cond["type"] == "PodScheduled":
                    cond.pop("reason", None)
                    cond.pop("message", None)
            return True
        self._pending.discard(key)
        self.store.mutate(self.rt_pods, key[0], key[1], bind)

    # ------------------------------------------------------------------ kubelet

    def _kubelet_start(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.find(self.rt_pods, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        node = self.store.find(self.rt_nodes, None, pod["spec"].get("nodeName", ""))
        host_ip = next((a["address"] for a in ((node or {}).get("status") or {}).get("addresses") or () if a.get("type") == "InternalIP"), "")
        now = now_rfc3339()
        behaviour = self._behaviour(pod)

        def run(obj: dict[str, Any]) -> bool:
            if obj["metadata"]["uid"] != uid or obj.get("status", {}).get("phase") != "Pending":
                return False
            status = obj.setdefault("status", {})
            status.update({"phase": "Running", "hostIP": host_ip, "podIP": f"100.64.{hash(name) % 250}.{hash(uid) % 250 + 1}",
                           "startTime": now})
            status["podIPs"] = [{"ip": status["podIP"]}]
            status["hostIPs"] = [{"ip": host_ip}] if host_ip else []
            conds = status.setdefault("conditions", [])
            for ctype in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"):
                _set_condition(conds, ctype, "True")
            status["containerStatuses"] = [
                {"name": c.get("name", "main"), "image": c.get("image", ""), "imageID": "", "ready": True, "started": True,
                 "restartCount": 0, "containerID": f"containerd://{uid.replace('-', '')}{i}",
                 "state": {"running": {"startedAt": now}}}
                for i, c in enumerate(obj.get("spec", {}).get("containers") or ())]
            return True
        self.store.mutate(self.rt_pods, namespace, name, run)
        if behaviour is not None:
            duration, exit_code, log_text = behaviour
            if log_text:
                self.emu.set_pod_log(namespace, name, log_text)
            self.after(duration, self._kubelet_finish, namespace, name, uid, exit_code)

    def _behaviour(self, pod: dict[str, Any]) -> tuple[float, int, str] | None:
        """(duration_s, exit_code, log) for run-to-completion pods (Job pods, or pods annotated with a duration)."""
        ann = pod["metadata"].get("annotations") or {}
        owner = _controller_of(pod)
        job = None
        if owner is not None and owner.get("kind") == "Job":
            job = self.store.find(self.rt_jobs, pod["metadata"]["namespace"], owner.get("name", ""))
        if job is None and ANN_DURATION not in ann:
            return None
        hook = self.emu.job_behaviour
        if hook is not None and job is not None:
            result = hook(deep_copy(job), deep_copy(pod))
            if result is not None:
                duration, exit_code, log_text = result
                return float(duration), int(exit_code), str(log_text or "")
        duration = float(ann.get(ANN_DURATION, "1"))
        exit_code = int(ann.get(ANN_EXIT_CODE, "0"))
        if ANN_EXIT_CODES in ann and job is not None:
            codes = [int(c) for c in ann[ANN_EXIT_CODES].split(",") if c.strip()]
            attempt = sum(1 for k in self.store.dependents(job["metadata"]["uid"]) if k[0] == "pods") - 1
            if codes:
                exit_code = codes[min(max(attempt, 0), len(codes) - 1)]
        return duration, exit_code, ann.get(ANN_LOG, "")

    def _kubelet_finish(self, namespace: str, name: str, uid: str, exit_code: int) -> None:
        now = now_rfc3339()

        def finish(obj: dict[str, Any]) -> bool:
            if obj["metadata"]["uid"] != uid or obj.get("status", {}).get("phase") != "Running":
                return False
            status = obj["status"]
            status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
            for cond in status.get("conditions") or ():
                if cond["type"] in ("Ready", "ContainersReady"):
                    cond.update({"status": "False", "reason": "PodCompleted", "lastTransitionTime": now})
            for cstat in status.get("containerStatuses") or ():
                started = ((cstat.get("state") or {}).get("running") or {}).get("startedAt", now)
                cstat.update({"ready": False, "started": False, "state": {"terminated": {
                    "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                    "startedAt": started, "finishedAt": now, "containerID": cstat.get("containerID", "")}}})
            return True
        self.store.mutate(self.rt_pods, namespace, name, finish)

    def _kubelet_remove(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.find(self.rt_pods, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid or not pod["metadata"].get("deletionTimestamp"):
            return
        if pod["metadata"].get("finalizers"):
            return
        self.store.remove_now(self.rt_pods, namespace, name, uid)

    # ------------------------------------------------------------------ taint manager

    def _taint_manager(self, node_name: str) -> None:
        node = self.store.find(self.rt_nodes, None, node_name)
        if node is None or not any(t.get("effect") == "NoExecute" for t in (node.get("spec") or {}).get("taints") or ()):
            return
        for pod in self.store.pods_on_node(node_name):
            if pod["metadata"].get("deletionTimestamp") or not pod_is_active(pod):
                continue
            spec = pod.get("spec") or {}
            bad = untolerated_taints(spec, node, ("NoExecute",))
            if bad:
                self.store.delete(self.rt_pods, pod["metadata"]["namespace"], pod["metadata"]["name"])
                continue
            limited = [tol.get("tolerationSeconds") for tol in spec.get("tolerations") or ()
                       if tol.get("tolerationSeconds") is not None and tol.get("effect") in ("NoExecute", "")
                       and any(t.get("effect") == "NoExecute" and (not tol.get("key") or tol.get("key") == t.get("key"))
                               for t in (node.get("spec") or {}).get("taints") or ())]
            if limited:
                self.after(float(min(limited)), self._taint_evict, pod["metadata"]["namespace"], pod["metadata"]["name"],
                           pod["metadata"]["uid"], node_name)

    def _taint_evict(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        pod = self.store.find(self.rt_pods, namespace, name)
        node = self.store.find(self.rt_nodes, None, node_name)
        if pod is None or node is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        if any(t.get("effect") == "NoExecute" for t in (node.get("spec") or {}).get("taints") or ()):
            self.store.delete(self.rt_pods, namespace, name)

    # ------------------------------------------------------------------ garbage collection / namespaces

    def _collect(self, uid: str) -> None:
        for storage, ns, name in self.store.dependents(uid):
            obj = self.store.get_key((storage, ns, name))
            if obj is None or obj["metadata"].get("deletionTimestamp"):
                continue
            rt = self.emu.registry.by_kind(obj["apiVersion"], obj["kind"])
            if rt is None:
                continue
            alive = [r for r in obj["metadata"].get("ownerReferences") or () if r.get("uid") != uid and self._uid_alive(r)]
            if alive:
                continue
            try:
                self.store.delete(rt, ns or None, name, {"propagationPolicy": "Background"})
            except ApiError:
                continue

    def _uid_alive(self, ref: dict[str, Any]) -> bool:
        rt = self.emu.registry.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if rt is None:
            return False
        for obj in self.store.iter_objects(rt):
            if obj["metadata"]["uid"] == ref.get("uid"):
                return True
        return False

    def _foreground_delete(self, storage: str, ns: str, name: str) -> None:
        rt = next((r for r in self.emu.registry.all() if r.store_name == storage), None)
        if rt is None:
            return
        obj = self.store.find(rt, ns or None, name)
        if obj is None:
            return
        uid = obj["metadata"]["uid"]
        deps = self.store.dependents(uid)
        if deps:
            self._collect(uid)
            return

        def drop(o: dict[str, Any]) -> None:
            o["metadata"]["finalizers"] = [f for f in o["metadata"].get("finalizers") or () if f != "foregroundDeletion"]
        self.store.mutate(rt, ns or None, name, drop)

    def _namespace_purge(self, ns: str) -> None:
        nso = self.store.find(self.rt_ns, None, ns)
        if nso is None:
            self._terminating_ns.discard(ns)
            return
        remaining = 0
        for rt in self.emu.registry.all():
            if not rt.namespaced or (rt.storage and rt.group):
                continue
            for obj in self.store.iter_objects(rt, ns):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    try:
                        self.store.delete(rt, ns, obj["metadata"]["name"])
                    except ApiError:
                        continue
        if remaining == 0:
            self.store.remove_now(self.rt_ns, None, ns)
            self._terminating_ns.discard(ns)

    # ------------------------------------------------------------------ helpers for workload controllers

    def _owned_pods(self, owner: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for storage, ns, name in self.store.dependents(owner["metadata"]["uid"]):
            if storage == "pods":
                pod = self.store.get_key((storage, ns, name))
                if pod is not None:
                    out.append(pod)
        return out

    def _new_pod(self, owner: dict[str, Any], name: str | None, extra_labels: dict[str, str],
                 node_name: str | None = None, extra_annotations: dict[str, str] | None = None) -> dict[str, Any] | None:
        template = deep_copy(((owner.get("spec") or {}).get("template")) or {})
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        labels.update(extra_labels)
        annotations = dict(tmeta.get("annotations") or {})
        annotations.update(extra_annotations or {})
        meta: dict[str, Any] = {"namespace": owner["metadata"]["namespace"], "labels": labels, "ownerReferences": [_owner_ref(owner)]}
        if annotations:
            meta["annotations"] = annotations
        if name:
            meta["name"] = name
        else:
            meta["generateName"] = f"{owner['metadata']['name']}-"
        spec = template.get("spec") or {}
        default_pod_spec(spec)
        if node_name:
            spec["nodeName"] = node_name
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        try:
            return self.store.create(self.rt_pods, owner["metadata"]["namespace"], body)
        except ApiError as err:
            if err.code in (403, 404, 409):
                return None
            raise

    def _write_status(self, rt: Any, ns: str, name: str, status: dict[str, Any]) -> None:
        def change(obj: dict[str, Any]) -> bool:
            current = obj.get("status") or {}
            merged = dict(current)
            merged.update(status)
            if merged == current:
                return False
            obj["status"] = merged
            return True
        self.store.mutate(rt, ns, name, change)

    @staticmethod
    def _delete_order(pod: dict[str, Any]) -> tuple[int, int, str]:
        assigned = 1 if (pod.get("spec") or {}).get("nodeName") else 0
        ready = 1 if pod_is_ready(pod) else 0
        return (assigned, ready, "~" + pod["metadata"].get("creationTimestamp", ""))

    # ------------------------------------------------------------------ ReplicaSet / Deployment

    def _reconcile_replicaset(self, ns: str, name: str) -> None:
        rs = self.store.find(self.rt_rs, ns, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        spec = rs.get("spec") or {}
        want = int(spec.get("replicas", 1))
        pods = self._owned_pods(rs)
        active = [p for p in pods if pod_is_active(p) and not p["metadata"].get("deletionTimestamp")]
        if len(active) < want:
            hash_label = ((spec.get("selector") or {}).get("matchLabels") or {})
            extra = {k: v for k, v in hash_label.items() if k == "pod-template-hash"}
            for _missing in range(want - len(active)):
                self._new_pod(rs, None, extra)
        elif len(active) > want:
            for pod in sorted(active, key=self._delete_order)[: len(active) - want]:
                self.store.delete(self.rt_pods, ns, pod["metadata"]["name"])
        pods = [p for p in self._owned_pods(rs) if pod_is_active(p) and not p["metadata"].get("deletionTimestamp")]
        ready = sum(1 for p in pods if pod_is_ready(p))
        self._write_status(self.rt_rs, ns, name, {
            "replicas": len(pods), "fullyLabeledReplicas": len(pods), "readyReplicas": ready, "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1)})

    def _reconcile_deployment(self, ns: str, name: str) -> None:
        dep = self.store.find(self.rt_deploy, ns, name)
        if dep is None or dep["metadata"].get("deletionTimestamp"):
            return
        spec = dep.get("spec") or {}
        want = int(spec.get("replicas", 1))
        template = spec.get("template") or {}
        phash = template_hash(template)
        owned = [self.store.get_key(k) for k in self.store.dependents(dep["metadata"]["uid"]) if k[0] == self.rt_rs.store_name]
        owned = [rs for rs in owned if rs is not None]
        new_rs = next((rs for rs in owned if (rs["metadata"].get("labels") or {}).get("pod-template-hash") == phash), None)
        revision = str(1 + max([int((rs["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0")) for rs in owned] or [0]))
        if not spec.get("paused"):
            if new_rs is None:
                tmpl = deep_copy(template)
                tmpl.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = phash
                selector = deep_copy(spec.get("selector") or {})
                selector.setdefault("matchLabels", {})["pod-template-hash"] = phash
                body = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": f"{name}-{phash}", "namespace": ns, "labels": dict(tmpl["metadata"]["labels"]),
                                     "annotations": {"deployment.kubernetes.io/revision": revision,
                                                     "deployment.kubernetes.io/desired-replicas": str(want)},
                                     "ownerReferences": [_owner_ref(dep)]},
                        "spec": {"replicas": want, "selector": selector, "template": tmpl}}
                try:
                    new_rs = self.store.create(self.rt_rs, ns, body)
                except ApiError as err:
                    if err.code != 409:
                        raise
                    new_rs = self.store.find(self.rt_rs, ns, f"{name}-{phash}")
            elif int((new_rs.get("spec") or {}).get("replicas", 0)) != want:
                self.store.mutate(self.rt_rs, ns, new_rs["metadata"]["name"], lambda o: o["spec"].__setitem__("replicas", want))
            for rs in owned:
                if new_rs is not None and rs["metadata"]["uid"] == new_rs["metadata"]["uid"]:
                    continue
                if int((rs.get("spec") or {}).get("replicas", 0)) != 0:
                    self.store.mutate(self.rt_rs, ns, rs["metadata"]["name"], lambda o: o["spec"].__setitem__("replicas", 0))
        owned = [self.store.get_key(k) for k in self.store.dependents(dep["metadata"]["uid"]) if k[0] == self.rt_rs.store_name]
        owned = [rs for rs in owned if rs is not None]
        total = sum(int((rs.get("status") or {}).get("replicas", 0)) for rs in owned)
        ready = sum(int((rs.get("status") or {}).get("readyReplicas", 0)) for rs in owned)
        updated = int(((new_rs or {}).get("status") or {}).get("replicas", 0)) if new_rs else 0
        status = deep_copy(dep.get("status") or {})
        conds = status.get("conditions") or []
        available_ok = want == 0 or ready >= max(1, want - self._max_unavailable(spec, want))
        _set_condition(conds, "Available", "True" if available_ok else "False",
                       "MinimumReplicasAvailable" if available_ok else "MinimumReplicasUnavailable",
                       "Deployment has minimum availability." if available_ok else "Deployment does not have minimum availability.")
        complete = updated == want and ready >= want
        _set_condition(conds, "Progressing", "True", "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                       f'ReplicaSet "{name}-{phash}" has successfully progressed.' if complete else f'ReplicaSet "{name}-{phash}" is progressing.')
        self._write_status(self.rt_deploy, ns, name, {
            "replicas": total, "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": ready,
            "unavailableReplicas": max(0, want - ready), "observedGeneration": dep["metadata"].get("generation", 1),
            "conditions": conds})

    @staticmethod
    def _max_unavailable(spec: dict[str, Any], want: int) -> int:
        value = ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable", "25%")
        if isinstance(value, str) and value.endswith("%"):
            return int(float(value[:-1]) * want / 100.0)
        return int(value)

    # ------------------------------------------------------------------ StatefulSet

    def _reconcile_statefulset(self, ns: str, name: str) -> None:
        sts = self.store.find(self.rt_sts, ns, name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        want = int(spec.get("replicas", 1))
        revision = f"{name}-{template_hash(spec.get('template') or {})}"
        pods = {p["metadata"]["name"]: p for p in self._owned_pods(sts)}
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        for idx in range(want):
            pod_name = f"{name}-{idx}"
            pod = pods.get(pod_name)
            if pod is None:
                if self.store.find(self.rt_pods, ns, pod_name) is None:
                    self._new_pod(sts, pod_name, {"statefulset.kubernetes.io/pod-name": pod_name, "apps.kubernetes.io/pod-index": str(idx),
                                                  "controller-revision-hash": revision})
                if ordered:
                    break
                continue
            if ordered and not (pod_is_ready(pod) and not pod["metadata"].get("deletionTimestamp")):
                break
        for pod_name, pod in pods.items():
            idx_text = pod_name.rsplit("-", 1)[-1]
            if idx_text.isdigit() and int(idx_text) >= want and not pod["metadata"].get("deletionTimestamp"):
                self.store.delete(self.rt_pods, ns, pod_name)
        pods_now = [p for p in self._owned_pods(sts) if not p["metadata"].get("deletionTimestamp")]
        ready = sum(1 for p in pods_now if pod_is_ready(p))
        self._write_status(self.rt_sts, ns, name, {
            "replicas": len(pods_now), "readyReplicas": ready, "currentReplicas": len(pods_now), "updatedReplicas": len(pods_now),
            "availableReplicas": ready, "currentRevision": revision, "updateRevision": revision,
            "observedGeneration": sts["metadata"].get("generation", 1), "collisionCount": 0})

    # ------------------------------------------------------------------ DaemonSet

    def _reconcile_daemonset(self, ns: str, name: str) -> None:
        ds = self.store.find(self.rt_ds, ns, name)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return
        pod_spec = deep_copy(((ds.get("spec") or {}).get("template") or {}).get("spec") or {})
        tolerations = pod_spec.setdefault("tolerations", [])
        for tol in DAEMONSET_TOLERATIONS:
            if not any(t.get("key") == tol["key"] and t.get("effect") == tol["effect"] for t in tolerations):
                tolerations.append(dict(tol))
        eligible = set()
        for node in self.store.iter_objects(self.rt_nodes):
            if node_selector_matches(pod_spec, node) and not untolerated_taints(pod_spec, node):
                eligible.add(node["metadata"]["name"])
        by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in self._owned_pods(ds):
            if pod["metadata"].get("deletionTimestamp") or not pod_is_active(pod):
                continue
            by_node.setdefault(pod["spec"].get("nodeName", ""), []).append(pod)
        revision = template_hash((ds.get("spec") or {}).get("template") or {})
        gen = str(ds["metadata"].get("generation", 1))
        for node_name in sorted(eligible - set(by_node)):
            self._new_pod_ds(ds, node_name, tolerations, revision, gen)
        misscheduled = 0
        for node_name, pods in by_node.items():
            extra = pods if node_name not in eligible else pods[1:]
            if node_name not in eligible:
                misscheduled += 1
            for pod in extra:
                self.store.delete(self.rt_pods, ns, pod["metadata"]["name"])
        current = [p for p in self._owned_pods(ds) if not p["metadata"].get("deletionTimestamp") and pod_is_active(p)]
        scheduled_nodes = {p["spec"].get("nodeName") for p in current} & eligible
        ready_nodes = {p["spec"].get("nodeName") for p in current if pod_is_ready(p)} & eligible
        self._write_status(self.rt_ds, ns, name, {
            "desiredNumberScheduled": len(eligible), "currentNumberScheduled": len(scheduled_nodes),
            "numberReady": len(ready_nodes), "numberAvailable": len(ready_nodes), "updatedNumberScheduled": len(scheduled_nodes),
            "numberMisscheduled": misscheduled, "numberUnavailable": max(0, len(eligible) - len(ready_nodes)),
            "observedGeneration": ds["metadata"].get("generation", 1)})

    def _new_pod_ds(self, ds: dict[str, Any], node_name: str, tolerations: list[dict[str, Any]], revision: str, gen: str) -> None:
        owner = deep_copy(ds)
        owner["spec"]["template"].setdefault("spec", {})["tolerations"] = tolerations
        self._new_pod(owner, None, {"controller-revision-hash": revision, "pod-template-generation": gen}, node_name=node_name)

    # ------------------------------------------------------------------ Job

    def _reconcile_job(self, ns: str, name: str) -> None:  # pylint: disable=too-many-locals
        job = self.store.find(self.rt_jobs, ns, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        spec, status = job.get("spec") or {}, deep_copy(job.get("status") or {})
        conds = status.get("conditions") or []
        if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conds):
            return
        pods = self._owned_pods(job)
        active = [p for p in pods if pod_is_active(p) and not p["metadata"].get("deletionTimestamp")]
        succeeded = [p for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"]
        failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        backoff = int(spec.get("backoffLimit", 6))
        indexed = spec.get("completionMode") == "Indexed"
        done_indexes = {(p["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index") for p in succeeded}
        n_succeeded = len(done_indexes) if indexed else len(succeeded)
        now = now_rfc3339()
        status.setdefault("startTime", now)
        finished = False
        if len(failed) > backoff:
            for pod in active:
                self.store.delete(self.rt_pods, ns, pod["metadata"]["name"])
            _set_condition(conds, "FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
            _set_condition(conds, "Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
            finished = True
        elif (completions is not None and n_succeeded >= int(completions)) or (completions is None and succeeded and not active):
            _set_condition(conds, "SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods")
            _set_condition(conds, "Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")
            status["completionTime"] = now
            finished = True
        elif not spec.get("suspend"):
            remaining = parallelism if completions is None else min(parallelism, int(completions) - n_succeeded)
            missing = remaining - len(active)
            busy_indexes = {(p["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index") for p in active}
            next_index = 0
            for _slot in range(max(0, missing)):
                if indexed:
                    while str(next_index) in done_indexes or str(next_index) in busy_indexes:
                        next_index += 1
                    idx = str(next_index)
                    busy_indexes.add(idx)
                    self._new_pod(job, f"{name}-{idx}-{random_suffix()}", {"batch.kubernetes.io/job-completion-index": idx},
                                  extra_annotations={"batch.kubernetes.io/job-completion-index": idx})
                else:
                    self._new_pod(job, None, {})
        pods = self._owned_pods(job)
        act = [p for p in pods if pod_is_active(p) and not p["metadata"].get("deletionTimestamp")]
        new_status = dict(status)
        new_status.update({"active": 0 if finished else len(act), "succeeded": n_succeeded, "failed": len(failed),
                           "ready": 0 if finished else sum(1 for p in act if pod_is_ready(p)), "terminating": 0,
                           "uncountedTerminatedPods": {}, "conditions": conds})
        if indexed:
            new_status["completedIndexes"] = ",".join(sorted((i for i in done_indexes if i is not None), key=int))
        if not conds:
            new_status.pop("conditions")
        self._write_status(self.rt_jobs, ns, name, new_status)

    # ------------------------------------------------------------------ PDB / CRD

    def _reconcile_pdb(self, ns: str, name: str) -> None:
        pdb = self.store.find(self.rt_pdb, ns, name)
        if pdb is None:
            return
        state = self.emu.disruption.evaluate(pdb)
        self.emu.pdb_tracker.set_desired(ns, name, state.desired_healthy)
        status = deep_copy(pdb.get("status") or {})
        status.update(state.status_fields())
        status["observedGeneration"] = pdb["metadata"].get("generation", 1)
        conds = status.get("conditions") or []
        allowed = state.disruptions_allowed > 0
        _set_condition(conds, "DisruptionAllowed", "True" if allowed else "False",
                       "SufficientPods" if allowed else "InsufficientPods", "")
        for cond in conds:
            cond["observedGeneration"] = pdb["metadata"].get("generation", 1)
        status["conditions"] = conds
        self._write_status(self.rt_pdb, ns, name, status)

    def _reconcile_crd(self, _ns: str, name: str) -> None:
        crd = self.store.find(self.rt_crd, None, name)
        if crd is None:
            return
        status = deep_copy(crd.get("status") or {})
        conds = status.get("conditions") or []
        _set_condition(conds, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
        _set_condition(conds, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
        status["conditions"] = conds
        status["acceptedNames"] = (crd.get("spec") or {}).get("names") or {}
        status["storedVersions"] = [v.get("name") for v in (crd.get("spec") or {}).get("versions") or () if v.get("storage")]
        self._write_status(self.rt_crd, "", name, status)
