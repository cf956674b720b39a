# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Simulated kubelets for a real control plane, in the spirit of KWOK, through the official ``kubernetes`` client.

* **Nodes** are registered from the emulator's profiles (``k8s_emulator.profiles.build_node``: the same GPU Feature
  Discovery, topology and placement labels, capacity/allocatable with ``nvidia.com/gpu``), with Ready conditions, and
  kept Ready by renewing their ``Lease`` in ``kube-node-lease`` (``renew_interval_s``) and refreshing the node status
  conditions (``status_interval_s``), so the node lifecycle controller never marks them NotReady.
* **Pods** bound by the real kube-scheduler to a simulated node become Running (``pods/status`` patch: phase, hostIP,
  podIP, startTime, conditions, containerStatuses) after ``start_delay_s``.
* **Graceful deletion**: a pod with a ``deletionTimestamp`` is removed (``gracePeriodSeconds=0``) once the timestamp
  (request time + grace period) has passed, as the kubelet does after stopping its containers.
* **Run-to-completion pods** (owned by a Job, or annotated ``emulator.dsxos.io/duration``) finish after a duration:
  ``job_behaviour(job, pod) -> (duration_s, exit_code, log_text)`` decides (``job`` is the owning Job as a dict, None for
  a bare pod; return None for the defaults), else the emulator's annotations on the pod (``emulator.dsxos.io/duration``,
  default 1 s, ``emulator.dsxos.io/exit-code``, ``emulator.dsxos.io/log``). The pod becomes Succeeded or Failed with
  ``state.terminated`` (exitCode, reason, and the last 4096 bytes of the log as the termination ``message``, as
  ``terminationMessagePolicy: FallbackToLogsOnError`` would give).
* **Logs**: without a kubelet the apiserver cannot serve ``pods/log``; the simulator therefore serves the kubelet's
  ``/containerLogs/<ns>/<pod>/<container>`` itself over HTTPS on 127.0.0.1 (one port for all its nodes, advertised
  in ``status.daemonEndpoints.kubeletEndpoint.Port`` and as the nodes' ``InternalDNS`` address ``localhost``; the
  control plane of :mod:`.cluster` prefers that address type). ``set_pod_log`` sets what it serves. Exec, attach,
  port-forward, metrics and ``follow`` are not served.

Everything runs on a thread pool (``workers``): one watch on all bound pods (raw JSON lines, no model
deserialisation), a timer heap for delayed actions, and batched lease renewals.
"""
from __future__ import annotations

import heapq
import http.server
import itertools
import json
import queue
import random
import ssl
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..k8s_emulator.profiles import PROFILES, build_node
from . import rawapi
from .certs import make_certificates

JobBehaviour = Callable[[Optional[Dict[str, Any]], Dict[str, Any]], Optional[Tuple[float, int, str]]]
SIMULATED_LABEL = "simulator.dsxos.io/simulated"
LOG_ADDRESS = "localhost"
TERMINATION_MESSAGE_BYTES = 4096


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: str) -> float:
    return datetime.strptime(text.replace(".000000", "")[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


class _LogHandler(http.server.BaseHTTPRequestHandler):
    """The kubelet's ``/containerLogs/<namespace>/<pod>/<container>`` endpoint."""

    simulator: "NodeSimulator"

    def do_GET(self) -> None:  # noqa: N802  pylint: disable=invalid-name
        """Answer a log request from the apiserver."""
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "containerLogs":
            self.send_error(404, "only /containerLogs is served by the node simulator")
            return
        text = self.simulator.pod_log(parts[1], parts[2])
        query = urllib.parse.parse_qs(url.query)
        if "tailLines" in query:
            count = int(query["tailLines"][0])
            text = "".join(text.splitlines(keepends=True)[-count:]) if count > 0 else ""
        data = text.encode("utf-8")
        if "limitBytes" in query:
            data = data[:int(query["limitBytes"][0])]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # pylint: disable=redefined-builtin
        """Quiet."""


class NodeSimulator:
    """Simulated nodes and kubelets against the cluster of ``kubeconfig`` (see the module docstring)."""

    def __init__(self, kubeconfig: str, workers: int = 16, start_delay_s: float = 0.2, renew_interval_s: float = 10.0,
                 lease_duration_s: int = 40, status_interval_s: float = 60.0, job_behaviour: Optional[JobBehaviour] = None,
                 serve_logs: bool = True, log: Callable[[str], None] = lambda message: None) -> None:
        from kubernetes import client, config  # pylint: disable=import-outside-toplevel

        self.kubeconfig = kubeconfig
        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        configuration.connection_pool_maxsize = workers + 4
        self.api = client.ApiClient(configuration)
        self.core = client.CoreV1Api(self.api)
        self.workers = workers
        self.start_delay_s = start_delay_s
        self.renew_interval_s = renew_interval_s
        self.lease_duration_s = lease_duration_s
        self.status_interval_s = status_interval_s
        self.job_behaviour = job_behaviour
        self.serve_logs = serve_logs
        self.log = log
        self.nodes: Dict[str, Dict[str, Any]] = {}
        self.pod_logs: Dict[Tuple[str, str], str] = {}
        self.counts: Dict[str, int] = {"started": 0, "completed": 0, "deleted": 0, "lease_renewals": 0, "errors": 0}
        self.last_errors: List[str] = []
        self._handled: Dict[Tuple[str, str], str] = {}  # (ns, name) -> uid/state key already acted on
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="node-sim")
        self._timers: List[Tuple[float, int, Callable[[], None]]] = []
        self._timer_seq = itertools.count()
        self._timer_cv = threading.Condition()
        self._stop = threading.Event()
        self._threads: List[threading.Thread] = []
        self._log_server: Optional[http.server.ThreadingHTTPServer] = None
        self._watch_resp: Any = None
        self._node_index = itertools.count()
        self.kubelet_port = 10250
        self._tmp = tempfile.TemporaryDirectory(prefix="dsxos-node-sim-")
        self._events: "queue.Queue[Dict[str, Any]]" = queue.Queue()

    # ---- raw API --------------------------------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None, query: Optional[Sequence[Tuple[str, Any]]] = None,
                content_type: str = rawapi.JSON, stream: bool = False, timeout: Optional[float] = 30.0) -> Any:
        """One API call through the official client's connection pool: the decoded JSON answer (raises ApiException),
        or with ``stream`` the unread response."""
        if stream:
            return rawapi.stream(self.api, method, path, body, query, content_type, timeout=None)
        return rawapi.call(self.api, method, path, body, query, content_type, timeout)

    def _safe(self, what: str, func: Callable[[], Any]) -> Any:
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel

        try:
            return func()
        except ApiException as exc:
            if exc.status in (404, 409, 422) and what.startswith(("delete", "start", "complete")):
                return None  # the pod went away or changed meanwhile: the watch brings its next state
            self._error("%s: %s %s" % (what, exc.status, (exc.body or "")[:300]))
        except Exception as exc:  # pylint: disable=broad-except
            self._error("%s: %r" % (what, exc))
        return None

    def _error(self, message: str) -> None:
        with self._lock:
            self.counts["errors"] += 1
            self.last_errors = (self.last_errors + [message])[-20:]

    # ---- lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> "NodeSimulator":
        """Start the log endpoint, the pod watch, the timer and the heartbeat threads."""
        if self._threads:
            return self
        if self.serve_logs:
            self._start_log_server()
        for target, name in ((self._watch_loop, "pods-watch"), (self._timer_loop, "timers"),
                             (self._heartbeat_loop, "heartbeats"), (self._event_loop, "pod-events")):
            thread = threading.Thread(target=target, name="node-sim-" + name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop every thread (nodes stay registered; their leases expire). Idempotent."""
        self._stop.set()
        with self._timer_cv:
            self._timer_cv.notify_all()
        self._events.put({})
        watch = self._watch_resp
        if watch is not None:  # unblock the watch thread's read
            try:
                watch.response.shutdown()
            except Exception:  # pylint: disable=broad-except
                pass
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()
        if self._log_server is not None:
            self._log_server.shutdown()
            self._log_server.server_close()
            self._log_server = None
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.api.close()
        self._tmp.cleanup()

    def __enter__(self) -> "NodeSimulator":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start_log_server(self) -> None:
        pki = Path(self._tmp.name)
        make_certificates(pki, ips=["127.0.0.1"], dns=[LOG_ADDRESS])
        handler = type("SimLogHandler", (_LogHandler,), {"simulator": self})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(pki / "apiserver.crt"), str(pki / "apiserver.key"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self.kubelet_port = int(server.server_address[1])
        self._log_server = server
        thread = threading.Thread(target=server.serve_forever, name="node-sim-logs", daemon=True)
        thread.start()

    # ---- nodes ----------------------------------------------------------------------------------------------------
    def add_nodes(self, count: int, profile: str = "h100-eks", name_prefix: Optional[str] = None,
                  labels: Optional[Dict[str, str]] = None, taints: Optional[List[Dict[str, Any]]] = None,
                  start_index: Optional[int] = None) -> List[str]:
        """Register ``count`` Ready nodes of ``profile`` (with their Leases) in parallel; return their names.

        ``start_index``: the first number in the names (``<prefix><n>``, as the emulator's ``add_nodes``); addresses and
        provider IDs always count on over every node of this simulator.
        """
        prof = PROFILES[profile]
        objs = []
        for i in range(count):
            index = next(self._node_index)
            node = build_node(prof, index, name_prefix=name_prefix, labels={SIMULATED_LABEL: "true", **(labels or {})}, taints=taints,
                              name_index=None if start_index is None else start_index + i)
            node["metadata"]["labels"].pop("emulator.dsxos.io/profile", None)
            node["metadata"]["labels"]["simulator.dsxos.io/profile"] = profile
            stamp = _now()
            for cond in node["status"]["conditions"]:
                cond.update({"lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
            node["status"]["addresses"].append({"type": "InternalDNS", "address": LOG_ADDRESS})
            node["status"]["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self.kubelet_port}}
            objs.append(node)
        futures = [self._pool.submit(self._register, node) for node in objs]
        wait(futures)
        for future in futures:
            future.result()
        return [node["metadata"]["name"] for node in objs]

    def _register(self, node: Dict[str, Any]) -> None:
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel

        name = node["metadata"]["name"]
        adopted = False
        try:
            created = self.request("POST", "/api/v1/nodes", node)
        except ApiException as exc:
            if exc.status != 409:
                raise
            created = self.request("GET", "/api/v1/nodes/%s" % name)
            self.request("PATCH", "/api/v1/nodes/%s/status" % name, {"status": node["status"]},
                         content_type=rawapi.STRATEGIC)
            adopted = True
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": name, "namespace": "kube-node-lease",
                              "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": created["metadata"]["uid"]}]},
                 "spec": {"holderIdentity": name, "leaseDurationSeconds": self.lease_duration_s, "renewTime": _micro_now()}}
        try:
            self.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease)
        except ApiException as exc:
            if exc.status != 409:
                raise
        with self._lock:
            self.nodes[name] = {"ip": next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"),
                                "status": node["status"], "pod_seq": random.Random(name).randrange(1, 200)}
        if adopted:  # an existing node may already have pods bound to it
            for pod in self.request("GET", "/api/v1/pods", query=[("fieldSelector", "spec.nodeName=%s" % name)]).get("items") or []:
                self._events.put(pod)

    def _heartbeat_loop(self) -> None:
        last_status = time.monotonic()
        while not self._stop.wait(self.renew_interval_s):
            names = list(self.nodes)
            refresh = time.monotonic() - last_status >= self.status_interval_s
            if refresh:
                last_status = time.monotonic()
            futures = [self._pool.submit(self._heartbeat, name, refresh) for name in names]
            wait(futures)

    def _heartbeat(self, name: str, refresh_status: bool) -> None:
        renew = {"spec": {"renewTime": _micro_now(), "holderIdentity": name}}
        self._safe("renew lease %s" % name, lambda: self.request(
            "PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/%s" % name, renew,
            content_type=rawapi.MERGE))
        with self._lock:
            self.counts["lease_renewals"] += 1
        if refresh_status:
            stamp = _now()
            conditions = [{"type": c["type"], "lastHeartbeatTime": stamp} for c in self.nodes[name]["status"]["conditions"]]
            self._safe("node status %s" % name, lambda: self.request(
                "PATCH", "/api/v1/nodes/%s/status" % name, {"status": {"conditions": conditions}},
                content_type=rawapi.STRATEGIC))

    # ---- timers ---------------------------------------------------------------------------------------------------
    def _later(self, delay_s: float, action: Callable[[], None]) -> None:
        with self._timer_cv:
            heapq.heappush(self._timers, (time.monotonic() + max(0.0, delay_s), next(self._timer_seq), action))
            self._timer_cv.notify()

    def _timer_loop(self) -> None:
        while not self._stop.is_set():
            with self._timer_cv:
                while not self._stop.is_set() and (not self._timers or self._timers[0][0] > time.monotonic()):
                    self._timer_cv.wait(timeout=(self._timers[0][0] - time.monotonic()) if self._timers else 1.0)
                if self._stop.is_set():
                    return
                due = []
                while self._timers and self._timers[0][0] <= time.monotonic():
                    due.append(heapq.heappop(self._timers)[2])
            for action in due:
                self._pool.submit(action)

    # ---- pods -----------------------------------------------------------------------------------------------------
    def _watch_loop(self) -> None:
        selector = ("fieldSelector", "spec.nodeName!=")
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    listing = self.request("GET", "/api/v1/pods", query=[selector], timeout=120)
                    for pod in listing.get("items") or []:
                        self._events.put(pod)
                    version = str(listing["metadata"]["resourceVersion"])
                resp = self._watch_resp = self.request("GET", "/api/v1/pods", stream=True, query=[
                    selector, ("watch", "true"), ("resourceVersion", version), ("allowWatchBookmarks", "true"),
                    ("timeoutSeconds", "120")])
                buffer = b""
                if resp.status >= 400:
                    raise RuntimeError("watch answered %s: %s" % (resp.status, resp.read()[:300]))
                for chunk in resp.response.stream(65536, decode_content=False):
                    if self._stop.is_set():
                        break
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            version = ""  # 410 Gone: list again
                            break
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self._events.put(obj)
                        elif event.get("type") == "DELETED":
                            meta = obj.get("metadata") or {}
                            with self._lock:
                                self._handled.pop((meta.get("namespace"), meta.get("name")), None)
                    if not version:
                        break
                resp.response.release_conn()
            except Exception as exc:  # pylint: disable=broad-except
                if self._stop.is_set():
                    return
                self._error("pod watch: %r" % exc)
                version = ""
                self._stop.wait(1.0)

    def _event_loop(self) -> None:
        while not self._stop.is_set():
            pod = self._events.get()
            if pod:
                self._on_pod(pod)

    def _on_pod(self, pod: Dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in self.nodes:
            return
        key = (meta.get("namespace"), meta.get("name"))
        uid = meta.get("uid")
        phase = (pod.get("status") or {}).get("phase")
        if meta.get("deletionTimestamp"):
            with self._lock:
                state = "%s/deleting" % uid
                if self._handled.get(key) == state:
                    return
                self._handled[key] = state
            due = _parse_time(meta["deletionTimestamp"]) - time.time()
            self._later(due, lambda: self._delete(key, uid))
            return
        with self._lock:
            if phase != "Pending" or self._handled.get(key) == "%s/starting" % uid:
                return
            self._handled[key] = "%s/starting" % uid
        self._later(self.start_delay_s, lambda: self._start_pod(pod))

    def _delete(self, key: Tuple[str, str], uid: str) -> None:
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        if self._safe("delete pod %s/%s" % key, lambda: self.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % key, body)) is not None:
            with self._lock:
                self.counts["deleted"] += 1
                self.pod_logs.pop(key, None)

    def _pod_ip(self, node: str) -> str:
        with self._lock:
            info = self.nodes[node]
            info["pod_seq"] = info["pod_seq"] % 250 + 1
            third = int(info["ip"].split(".")[3])
            return "100.%d.%d.%d" % (64 + third % 64, int(info["ip"].split(".")[2]), info["pod_seq"])

    def _start_pod(self, pod: Dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        node = spec["nodeName"]
        stamp = _now()
        host_network = bool(spec.get("hostNetwork"))
        pod_ip = self.nodes[node]["ip"] if host_network else self._pod_ip(node)
        statuses = [{"name": c["name"], "image": c.get("image", ""), "imageID": "docker-pullable://%s@sha256:%s" % (c.get("image", ""), "0" * 64),
                     "containerID": "containerd://%032x" % random.getrandbits(128), "ready": True, "restartCount": 0,
                     "started": True, "state": {"running": {"startedAt": stamp}}} for c in spec.get("containers") or []]
        conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
                      for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
        status = {"phase": "Running", "hostIP": self.nodes[node]["ip"], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
                  "startTime": stamp, "conditions": conditions, "containerStatuses": statuses, "qosClass": _qos(spec)}
        key = "%s/%s" % (meta["namespace"], meta["name"])
        done = self._safe("start pod %s" % key, lambda: self.request(
            "PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (meta["namespace"], meta["name"]),
            {"metadata": {"uid": meta["uid"]}, "status": status}, content_type=rawapi.STRATEGIC))
        if done is None:
            return
        with self._lock:
            self.counts["started"] += 1
        behaviour = self._completion(pod)
        if behaviour is not None:
            duration, code, text = behaviour
            if text:
                self.set_pod_log(meta["namespace"], meta["name"], text)
            self._later(duration, lambda: self._complete(done, code, text))

    def _completion(self, pod: Dict[str, Any]) -> Optional[Tuple[float, int, str]]:
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job"), None)
        if owner is None and "emulator.dsxos.io/duration" not in annotations:
            return None
        if self.job_behaviour is not None:
            job = None
            if owner is not None:
                job = self._safe("get job %s" % owner["name"], lambda: self.request(
                    "GET", "/apis/batch/v1/namespaces/%s/jobs/%s" % (meta["namespace"], owner["name"])))
            decided = self.job_behaviour(job, pod)
            if decided is not None:
                return float(decided[0]), int(decided[1]), str(decided[2] or "")
        return (float(annotations.get("emulator.dsxos.io/duration", "1")), int(annotations.get("emulator.dsxos.io/exit-code", "0")),
                str(annotations.get("emulator.dsxos.io/log", "")))

    def _complete(self, pod: Dict[str, Any], code: int, text: str) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        stamp = _now()
        started = ((pod.get("status") or {}).get("startTime")) or stamp
        message = text.encode("utf-8")[-TERMINATION_MESSAGE_BYTES:].decode("utf-8", errors="ignore")
        statuses = [{"name": c["name"], "image": c.get("image", ""), "ready": False, "restartCount": 0, "started": False,
                     "imageID": "docker-pullable://%s@sha256:%s" % (c.get("image", ""), "0" * 64),
                     "containerID": "containerd://%032x" % random.getrandbits(128),
                     "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                              "message": message or None, "startedAt": started, "finishedAt": stamp}}}
                    for c in spec.get("containers") or []]
        conditions = [{"type": t, "status": "False", "reason": "PodCompleted", "lastProbeTime": None, "lastTransitionTime": stamp}
                      for t in ("Ready", "ContainersReady")]
        status = {"phase": "Succeeded" if code == 0 else "Failed", "conditions": conditions, "containerStatuses": statuses}
        key = "%s/%s" % (meta["namespace"], meta["name"])
        if self._safe("complete pod %s" % key, lambda: self.request(
                "PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (meta["namespace"], meta["name"]),
                {"metadata": {"uid": meta["uid"]}, "status": status}, content_type=rawapi.STRATEGIC)) is not None:
            with self._lock:
                self.counts["completed"] += 1

    # ---- logs -----------------------------------------------------------------------------------------------------
    def set_pod_log(self, namespace: str, name: str, text: str) -> None:
        """What ``pods/log`` returns for the pod (every container)."""
        with self._lock:
            self.pod_logs[(namespace, name)] = text

    def pod_log(self, namespace: str, name: str) -> str:
        """The log text the simulator serves for a pod ("" when none)."""
        with self._lock:
            return self.pod_logs.get((namespace, name), "")

    # ---- waiting --------------------------------------------------------------------------------------------------
    def running_pods(self, namespace: Optional[str] = None, label_selector: str = "") -> int:
        """How many pods (of ``namespace``, all when None) are Running on the simulated nodes, counted by a list."""
        path = "/api/v1/namespaces/%s/pods" % namespace if namespace else "/api/v1/pods"
        query = [("fieldSelector", "status.phase=Running")]
        if label_selector:
            query.append(("labelSelector", label_selector))
        items = self.request("GET", path, query=query, timeout=120).get("items") or []
        return sum(1 for pod in items if pod["spec"].get("nodeName") in self.nodes)

    def wait_running(self, count: int, namespace: Optional[str] = None, label_selector: str = "", timeout_s: float = 120.0,
                     interval_s: float = 0.5) -> float:
        """Wait until at least ``count`` pods are Running; return the seconds waited."""
        begin = time.monotonic()
        seen = 0
        while time.monotonic() - begin < timeout_s:
            seen = self.running_pods(namespace, label_selector)
            if seen >= count:
                return time.monotonic() - begin
            time.sleep(interval_s)
        raise TimeoutError("%d of %d pods Running after %.0f s (simulator errors: %s)" % (seen, count, timeout_s, self.last_errors[-3:]))


def _qos(spec: Dict[str, Any]) -> str:
    containers = spec.get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(r.get("limits") and all(str((r.get("requests") or r["limits"]).get(k)) == str(v) for k, v in r["limits"].items())
                     and set(r["limits"]) >= {"cpu", "memory"} for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"
