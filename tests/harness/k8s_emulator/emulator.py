# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The :class:`Emulator`: wires store, HTTP front end and controllers together, writes a kubeconfig, and offers seeding helpers."""
from __future__ import annotations

import os
import secrets
import tempfile
import threading
import time
from typing import Any, Callable

import yaml

from .access import AccessControl
from .api import StoreApi
from .controllers import ANN_DURATION, ANN_EXIT_CODE, ANN_EXIT_CODES, ANN_LOG, Controllers
from .disruption import DisruptionLogic
from .faults import FaultInjector
from .pdb_metrics import PdbTracker
from .profiles import PROFILES, build_node
from .resources import ResourceRegistry, ResourceType
from .server import ApiFrontend
from .store import Store
from .util import now_rfc3339, seed_random

DEFAULT_GIT_VERSION = "v1.31.4-eks-2a8d8e5"
JobBehaviour = Callable[[dict[str, Any], dict[str, Any]], "tuple[float, int, str] | None"]


def container_spec(name: str, image: str, gpu: int = 0, cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
    """A container as the test helpers build it (GPU limit = request); the real backend's facade builds the same."""
    resources: dict[str, Any] = {}
    if gpu:
        resources = {"limits": {"nvidia.com/gpu": str(gpu)}, "requests": {"nvidia.com/gpu": str(gpu)}}
    if cpu or memory:
        req = resources.setdefault("requests", {})
        if cpu:
            req["cpu"] = cpu
        if memory:
            req["memory"] = memory
    out: dict[str, Any] = {"name": name, "image": image}
    if resources:
        out["resources"] = resources
    return out


def _plural(kind: str) -> str:
    """English plural of a lower-cased kind, as CRD generators default it (policy -> policies, class -> classes)."""
    low = kind.lower()
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    return low + "s"


class Emulator:  # pylint: disable=too-many-instance-attributes,too-many-public-methods
    """A Kubernetes API emulator on 127.0.0.1 with simulated controllers.

    ``time_scale`` multiplies every emulated delay (grace periods, pod start, job durations): 0.01 turns a 30 s grace
    period into 0.3 s.
    """

    def __init__(self, *, time_scale: float = 1.0, git_version: str = DEFAULT_GIT_VERSION, token: str | None = None,
                 require_auth: bool = False, host: str = "127.0.0.1", port: int = 0, workdir: str | None = None,
                 seed: int | None = None, history_size: int = 20000, kubelet_start_delay_s: float = 1.0) -> None:
        if time_scale <= 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale!r}")
        seed_random(seed)
        self.time_scale = float(time_scale)
        self.git_version = git_version
        self.token = token or f"dsxos-emulator-{secrets.token_hex(8)}"
        self.registry = ResourceRegistry.with_builtins()
        self.store = Store(self.registry, history_size)
        self.access = AccessControl(self.token)
        self.access.require_auth = require_auth
        self.faults = FaultInjector(seed)
        self.disruption = DisruptionLogic(self.store, self.registry)
        self.pdb_tracker = PdbTracker(self.store, self.registry)
        self.store.listeners.append(self.pdb_tracker.on_event)
        self.store.listeners.append(self._crd_listener)
        self.controllers = Controllers(self)
        self.controllers.kubelet_start_delay_s = kubelet_start_delay_s
        self.api = StoreApi(self.store, self.registry, self.disruption)
        #: optional hook: job_behaviour(job, pod) -> (duration_s, exit_code, log_text) or None for the annotation defaults
        self.job_behaviour: JobBehaviour | None = None
        self._logs: dict[tuple[str, str], str] = {}
        self._logs_lock = threading.Lock()
        self._host, self._port = host, port
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="dsxos-k8s-emulator-")
        self.kubeconfig_path = os.path.join(self.workdir, "kubeconfig")
        self.frontend: ApiFrontend | None = None
        self.started_at = 0.0
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.add_namespace(ns)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "Emulator":
        """Bind the port, start the HTTP server and the controllers, write the kubeconfig."""
        self.frontend = ApiFrontend(self, self._host, self._port)
        self.frontend.start()
        self.controllers.start()
        self.write_kubeconfig(self.kubeconfig_path)
        self.started_at = time.monotonic()
        return self

    def stop(self) -> None:
        """Stop serving (open watches end)."""
        self.controllers.stop()
        if self.frontend is not None:
            self.frontend.stop()

    def __enter__(self) -> "Emulator":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        if self.frontend is None:
            raise RuntimeError("the emulator is not started; call start() first")
        return f"http://{self.frontend.host}:{self.frontend.port}"

    def kubeconfig(self, namespace: str = "default", user: str = "dsxos-emulator-admin", token: str | None = None) -> dict[str, Any]:
        """The kubeconfig document (plain http, bearer token)."""
        return {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "dsxos-emulator", "cluster": {"server": self.url}}],
            "users": [{"name": user, "user": {"token": token or self.token}}],
            "contexts": [{"name": "dsxos-emulator", "context": {"cluster": "dsxos-emulator", "user": user, "namespace": namespace}}],
            "current-context": "dsxos-emulator",
        }

    def write_kubeconfig(self, path: str, **kwargs: Any) -> str:
        """Write the kubeconfig atomically (temp + rename, mode 0600); returns the path."""
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                yaml.safe_dump(self.kubeconfig(**kwargs), handle, sort_keys=False)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    def version_info(self) -> dict[str, Any]:
        """The /version document."""
        core = self.git_version.lstrip("v").split("-", 1)[0].split(".")
        return {"major": core[0], "minor": core[1] + ("+" if "-" in self.git_version else ""), "gitVersion": self.git_version,
                "gitCommit": "0f5d7d8a6b1e9c2d4a3b5c6d7e8f90a1b2c3d4e5", "gitTreeState": "clean", "buildDate": "2025-01-15T17:20:10Z",
                "goVersion": "go1.22.10", "compiler": "gc", "platform": "linux/amd64"}

    # ------------------------------------------------------------------ metrics

    def api_calls(self, verb: str | None = None, resource: str | None = None) -> int:
        """Number of API calls served, optionally of one verb (``list``) and/or resource (``pods``, ``pods/eviction``)."""
        if self.frontend is None:
            return 0
        with self.frontend._count_lock:  # pylint: disable=protected-access
            return sum(n for (v, r), n in self.frontend.counters.items() if (verb is None or v == verb) and (resource is None or r == resource))

    def call_counts(self) -> dict[str, int]:
        """``{"verb resource": count}``."""
        if self.frontend is None:
            return {}
        with self.frontend._count_lock:  # pylint: disable=protected-access
            return {f"{v} {r}": n for (v, r), n in sorted(self.frontend.counters.items())}

    def stats(self) -> dict[str, Any]:
        """Time scale, object counts, resourceVersion, open watches, injected faults, controller errors."""
        counts = {rt.resource_label: self.store.count(rt) for rt in self.registry.all() if not (rt.storage and rt.group)}
        return {"time_scale": self.time_scale, "resource_version": self.store.resource_version,
                "objects": {k: v for k, v in counts.items() if v}, "watches": self.store.watcher_count(),
                "faults_injected": dict(self.faults.injected), "api_calls": self.api_calls(),
                "controller_errors": list(self.controllers.errors[-10:])}

    def pdb_min_healthy(self, name: str, namespace: str = "default") -> int | None:
        """Lowest healthy-pod count of a PDB since it was first satisfied (None if never satisfied / unknown)."""
        track = self.pdb_tracker.get(namespace, name)
        return None if track is None else track.min_healthy

    def pdb_violated(self, name: str, namespace: str = "default") -> bool:
        """Whether healthy pods ever dropped below the PDB's desiredHealthy."""
        track = self.pdb_tracker.get(namespace, name)
        return bool(track and track.violations)

    def pdb_metrics(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """All tracked numbers of one PDB."""
        track = self.pdb_tracker.get(namespace, name)
        return None if track is None else track.as_dict()

    # ------------------------------------------------------------------ logs

    def set_pod_log(self, namespace: str, name: str, text: str) -> None:
        """Program the text ``pods/log`` returns for a pod."""
        with self._logs_lock:
            self._logs[(namespace, name)] = text

    def pod_log(self, pod: dict[str, Any], container: str | None = None) -> str:
        """Log text for a pod (programmed text, else a one-line start message)."""
        meta = pod["metadata"]
        with self._logs_lock:
            text = self._logs.get((meta["namespace"], meta["name"]))
        if text is not None:
            return text
        names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
        return f"emulator: container {container or (names[0] if names else 'main')} of {meta['name']} on {(pod.get('spec') or {}).get('nodeName', '')}\n"

    # ------------------------------------------------------------------ CRDs

    def register_crd(self, group: str, version: str, kind: str, plural: str | None = None, namespaced: bool = True,
                     short_names: tuple[str, ...] = (), status: bool = True) -> ResourceType:
        """Serve an extra custom kind (no CRD object is stored)."""
        rt = ResourceType(group, version, plural or _plural(kind), kind, namespaced, tuple(short_names),
                          ("status",) if status else (), (), True)
        return self.registry.register(rt)

    def register_crds_from_file(self, path: str) -> list[ResourceType]:
        """Serve every version of every CustomResourceDefinition in a (multi-document) YAML file."""
        with open(path, encoding="utf-8") as handle:
            docs = [d for d in yaml.safe_load_all(handle) if isinstance(d, dict)]
        out = []
        for doc in docs:
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            out.extend(self._types_of_crd(doc))
        for rt in out:
            self.registry.register(rt)
        return out

    @staticmethod
    def _types_of_crd(crd: dict[str, Any]) -> list[ResourceType]:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        out = []
        for version in spec.get("versions") or ():
            if version.get("served", True) is False:
                continue
            subs = tuple(k for k in ("status", "scale") if k in (version.get("subresources") or {}))
            out.append(ResourceType(spec.get("group", ""), version.get("name", "v1"), names.get("plural", ""), names.get("kind", ""),
                                    spec.get("scope", "Namespaced") == "Namespaced", tuple(names.get("shortNames") or ()), subs,
                                    tuple(names.get("categories") or ()), True))
        return out

    def _crd_listener(self, etype: str, storage: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if storage != "customresourcedefinitions.apiextensions.k8s.io":
            return
        if old is not None:
            for rt in self._types_of_crd(old):
                self.registry.unregister(rt.group, rt.version, rt.plural)
        if etype != "DELETED":
            for rt in self._types_of_crd(obj):
                self.registry.register(rt)

    # ------------------------------------------------------------------ seeding helpers

    def add_namespace(self, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        """Create a namespace unless it exists."""
        rt = self.registry.lookup("", "v1", "namespaces")
        existing = self.store.find(rt, None, name)  # type: ignore[arg-type]
        if existing is not None:
            return existing
        return self.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}})

    def add_nodes(self, count: int, profile: str = "h100-eks", name_prefix: str | None = None, labels: dict[str, str] | None = None,
                  taints: list[dict[str, Any]] | None = None, start_index: int | None = None) -> list[str]:
        """Add ``count`` Ready nodes of a profile (see :data:`PROFILES`); returns their names.

        Without ``name_prefix`` names follow the provider's style (``ip-10-0-0-5.ec2.internal``); with it they are
        ``<prefix><n>`` counting from ``start_index`` (default 0). Addresses/provider IDs always use a cluster-wide index.
        """
        if profile not in PROFILES:
            raise KeyError(f"unknown node profile {profile!r}; known: {', '.join(sorted(PROFILES))}")
        prof = PROFILES[profile]
        rt = self.registry.lookup("", "v1", "nodes")
        base = self.store.count(rt)  # type: ignore[arg-type]
        first_name = start_index if start_index is not None else (0 if name_prefix else base)
        names = []
        for i in range(count):
            node = build_node(prof, base + i, name_prefix, labels, taints, name_index=first_name + i)
            node["metadata"]["creationTimestamp"] = now_rfc3339()
            self.store.insert(rt, node)  # type: ignore[arg-type]
            names.append(node["metadata"]["name"])
        return names

    def seed_pods(self, per_node: int, namespace: str = "workloads", nodes: list[str] | None = None,
                  labels: dict[str, str] | None = None, gpu_per_pod: int = 0, image: str = "registry.k8s.io/pause:3.10") -> int:
        """Bulk-insert Running+Ready bare pods bound to nodes (no scheduling, no validation): the fast path for scale tests."""
        self.add_namespace(namespace)
        rt_pods = self.registry.lookup("", "v1", "pods")
        rt_nodes = self.registry.lookup("", "v1", "nodes")
        node_names = nodes if nodes is not None else [n["metadata"]["name"] for n in self.store.iter_objects(rt_nodes)]  # type: ignore[arg-type]
        now = now_rfc3339()
        created = 0
        for n_index, node in enumerate(node_names):
            for i in range(per_node):
                name = f"w-{n_index}-{i}"
                pod = {
                    "metadata": {"name": name, "namespace": namespace, "labels": {"app": "workload", **(labels or {})}},
                    "spec": {"nodeName": node, "containers": [container_spec("main", image, gpu_per_pod)], "restartPolicy": "Always",
                             "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"},
                    "status": {"phase": "Running", "startTime": now, "podIP": f"100.{64 + n_index // 65536}.{(n_index // 256) % 256}.{i + 1}",
                               "conditions": [{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"},
                                              {"type": "PodScheduled", "status": "True"}],
                               "containerStatuses": [{"name": "main", "ready": True, "started": True, "restartCount": 0,
                                                      "image": image, "imageID": "", "state": {"running": {"startedAt": now}}}]},
                }
                self.store.insert(rt_pods, pod)  # type: ignore[arg-type]
                created += 1
        return created

    def _workload(self, api_version: str, kind: str, name: str, namespace: str, labels: dict[str, str] | None, spec: dict[str, Any],
                  pod_spec: dict[str, Any], pod_annotations: dict[str, str] | None = None) -> dict[str, Any]:
        self.add_namespace(namespace)
        sel = dict(labels or {"app": name})
        template: dict[str, Any] = {"metadata": {"labels": dict(sel)}, "spec": pod_spec}
        if pod_annotations:
            template["metadata"]["annotations"] = dict(pod_annotations)
        body_spec = dict(spec)
        body_spec["template"] = template
        if kind != "Job":
            body_spec["selector"] = {"matchLabels": sel}
        return self.api.create({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace, "labels": dict(sel)},
                                "spec": body_spec})

    @staticmethod
    def _pod_spec(image: str, gpu: int, node_selector: dict[str, str] | None, tolerations: list[dict[str, Any]] | None,
                  grace_s: int | None, cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [container_spec("main", image, gpu, cpu, memory)]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            spec["tolerations"] = [dict(t) for t in tolerations]
        if grace_s is not None:
            spec["terminationGracePeriodSeconds"] = grace_s
        return spec

    def add_deployment(self, name: str, namespace: str = "default", replicas: int = 1, labels: dict[str, str] | None = None,
                       gpu: int = 0, node_selector: dict[str, str] | None = None, tolerations: list[dict[str, Any]] | None = None,
                       image: str = "nginx:1.27", grace_s: int | None = None, cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
        """Create a Deployment (the controllers create its ReplicaSet and pods)."""
        return self._workload("apps/v1", "Deployment", name, namespace, labels, {"replicas": replicas},
                              self._pod_spec(image, gpu, node_selector, tolerations, grace_s, cpu, memory))

    def add_statefulset(self, name: str, namespace: str = "default", replicas: int = 1, labels: dict[str, str] | None = None,
                        gpu: int = 0, parallel: bool = False, image: str = "nginx:1.27") -> dict[str, Any]:
        """Create a StatefulSet (OrderedReady unless ``parallel``)."""
        spec = {"replicas": replicas, "serviceName": name, "podManagementPolicy": "Parallel" if parallel else "OrderedReady"}
        return self._workload("apps/v1", "StatefulSet", name, namespace, labels, spec, self._pod_spec(image, gpu, None, None, None))

    def add_daemonset(self, name: str, namespace: str = "kube-system", labels: dict[str, str] | None = None,
                      node_selector: dict[str, str] | None = None, tolerations: list[dict[str, Any]] | None = None,
                      image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0") -> dict[str, Any]:
        """Create a DaemonSet (one pod per eligible node)."""
        return self._workload("apps/v1", "DaemonSet", name, namespace, labels, {},
                              self._pod_spec(image, 0, node_selector, tolerations, None))

    def add_job(self, name: str, namespace: str = "default", completions: int | None = 1, parallelism: int = 1,
                backoff_limit: int = 6, duration_s: float | None = None, exit_code: int | None = None,
                exit_codes: list[int] | None = None, log: str | None = None, gpu: int = 0,
                node_selector: dict[str, str] | None = None, indexed: bool = False, image: str = "nvcr.io/nvidia/pytorch:25.01-py3") -> dict[str, Any]:
        """Create a Job whose pods run for ``duration_s`` emulated seconds and exit with ``exit_code`` (or ``exit_codes`` per attempt)."""
        annotations: dict[str, str] = {}
        if duration_s is not None:
            annotations[ANN_DURATION] = str(duration_s)
        if exit_code is not None:
            annotations[ANN_EXIT_CODE] = str(exit_code)
        if exit_codes:
            annotations[ANN_EXIT_CODES] = ",".join(str(c) for c in exit_codes)
        if log is not None:
            annotations[ANN_LOG] = log
        spec: dict[str, Any] = {"parallelism": parallelism, "backoffLimit": backoff_limit}
        if completions is not None:
            spec["completions"] = completions
        if indexed:
            spec["completionMode"] = "Indexed"
        pod_spec = self._pod_spec(image, gpu, node_selector, None, None)
        pod_spec["restartPolicy"] = "Never"
        return self._workload("batch/v1", "Job", name, namespace, {"job-group": name}, spec, pod_spec, annotations)

    def add_pdb(self, name: str, selector: dict[str, str], namespace: str = "default", min_available: int | str | None = None,
                max_unavailable: int | str | None = None, unhealthy_pod_eviction_policy: str | None = None) -> dict[str, Any]:
        """Create a policy/v1 PodDisruptionBudget selecting ``selector`` labels."""
        spec: dict[str, Any] = {"selector": {"matchLabels": dict(selector)}}
        if min_available is not None:
            spec["minAvailable"] = min_available
        if max_unavailable is not None:
            spec["maxUnavailable"] = max_unavailable
        if unhealthy_pod_eviction_policy:
            spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
        return self.api.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                "metadata": {"name": name, "namespace": namespace}, "spec": spec})

    def cordon(self, node: str, unschedulable: bool = True) -> dict[str, Any]:
        """Set ``spec.unschedulable``."""
        return self.api.patch("v1", "Node", node, {"spec": {"unschedulable": unschedulable or None}})

    def taint(self, node: str, key: str, effect: str = "NoSchedule", value: str | None = None) -> dict[str, Any]:
        """Append a taint to a node."""
        current = self.api.get("v1", "Node", node)
        taints = list((current.get("spec") or {}).get("taints") or [])
        taint = {"key": key, "effect": effect}
        if value is not None:
            taint["value"] = value
        taints.append(taint)
        return self.api.patch("v1", "Node", node, {"spec": {"taints": taints}})

    # ------------------------------------------------------------------ waiting

    def scaled(self, emulated_s: float) -> float:
        """Real seconds for ``emulated_s`` emulated seconds."""
        return emulated_s * self.time_scale

    @staticmethod
    def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01, what: str = "condition") -> Any:
        """Poll ``predicate`` until truthy (returns its value) or raise TimeoutError naming ``what``."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until the controllers have processed every queued event (timers may remain)."""
        self.controllers.kick()
        time.sleep(0.005)
        return self.controllers.wait_idle(timeout)
