# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One facade over the two Kubernetes backends of the integration tests (docs/development.md, "Two Kubernetes backends").

* :class:`EmulatorBackend`: thin delegation to the emulator (``tests/harness/k8s_emulator``).
* :class:`RealBackend`: the real control plane of ``tests/harness/kube_control_plane`` (kube-apiserver,
  controller-manager, scheduler 1.20 with etcd, one per pytest session) reached through the official ``kubernetes``
  client (``rawapi``), plus a :class:`NodeSimulator` for the nodes (same GPU profiles) and their kubelets.

Both offer the same helpers: ``add_nodes``, ``cordon``, ``taint``, ``add_namespace``, ``add_deployment``,
``add_daemonset``, ``add_job``, ``add_pdb``, ``seed_pods``, ``api.get/find/list/pods/create/patch/delete``, ``wait_for``,
``settle``, ``pdb_violated``/``pdb_metrics``, ``job_behaviour``, ``set_kubelet_start_delay``, ``identity`` (a user
refused chosen verbs/resources, for RBAC failures) and ``kubeconfig()``. What only the emulator can do is listed ONCE,
in :data:`EMULATOR_ONLY`; its accessors (``faults``, ``api_calls``, ``access``, ``controllers``, ``stats``) raise
:class:`EmulatorOnly` on the real backend, and a test that needs one is marked ``@pytest.mark.emulator_only("faults")``
(``cluster_backend_fixture.py`` then generates only its emulator parameter).

**Time.** ``time_scale`` (default 0.01, as the emulator fixture) is emulated time on the emulator. The real control
plane runs in real time; the real backend compresses by the same factor only the delays of the workloads IT creates:
the kubelet start delay of its simulator, Job durations (``add_job`` and ``job_behaviour``, in emulated seconds on
both backends) and the termination grace periods of the pods it creates (``ceil(grace x time_scale)``, at least 1 s;
an unset grace is the Kubernetes default 30 s, scaled the same way). Delays a module or the server chooses are real.

**Isolation on the shared real cluster.** The control plane lives for the whole session (each xdist worker has its
own) and a worker runs one test at a time, so a real-backend test starts from an EMPTY cluster: before the test and at
its teardown every namespace but the four system ones is removed, every node with its Lease, the workloads (pods,
Deployments, ReplicaSets, DaemonSets, StatefulSets, Jobs, budgets) and non-system ConfigMaps/Secrets/Leases in the
system namespaces, and the RBAC objects of the test's identities. Test names therefore stay as they are on the emulator
(``gpu-0``, ``ml``, ``dsxos-system``): modules write to fixed namespaces, and cluster-wide reads (``cluster_snapshot``,
the circuit breaker's GPU node count) see only the test's nodes. Namespaces are removed the way the namespace
controller does it, but in parallel (delete the namespace, delete every namespaced resource type in it, check that
nothing is left, then finalize), which takes about 1 s instead of the controller's 5 to 7 s.
"""
from __future__ import annotations

import base64
import json
import math
import os
import secrets
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .k8s_emulator.emulator import container_spec
from .kube_control_plane import rawapi
from .kube_control_plane.cluster import RealCluster, write_kubeconfig
from .kube_control_plane.node_simulator import NodeSimulator

#: What only the emulator can do, with the reason the real control plane cannot; the ONE place such capabilities are
#: declared. ``@pytest.mark.emulator_only("<name>", ...)`` names entries of this table (cluster_backend_fixture.py).
EMULATOR_ONLY: Dict[str, str] = {
    "faults": "injected failures on chosen requests (5xx, 409 conflicts, 429 throttling, latency, dropped connections, "
              "answers lost after the write): a real kube-apiserver cannot be told to fail one request",
    "api_calls": "exact counts of the requests the server answered, by verb and resource: the real apiserver serves every "
                 "client at once (controllers, scheduler, the node simulator), its metrics cannot single out one module's calls",
    "time_scale": "scaled server time (grace periods a module or the server chooses, controller delays, the node monitor): "
                  "the real control plane runs in real time; the real backend scales only its own workloads' delays",
    "access_rules": "the emulator's access table (deny a verb/resource to every user including the admin, unauthenticated "
                    "requests): on the real server use identity(), a ServiceAccount refused the same verbs by RBAC",
}

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: ConfigMaps the control plane itself keeps in the system namespaces
SYSTEM_CONFIGMAPS = frozenset({"kube-root-ca.crt", "extension-apiserver-authentication", "cluster-info"})
#: What is removed from the system namespaces (apiVersion, plural); the rest there belongs to the control plane
SYSTEM_NAMESPACE_CONTENT = (("v1", "pods"), ("apps/v1", "deployments"), ("apps/v1", "replicasets"), ("apps/v1", "daemonsets"),
                            ("apps/v1", "statefulsets"), ("batch/v1", "jobs"), ("policy/v1beta1", "poddisruptionbudgets"),
                            ("v1", "configmaps"), ("v1", "secrets"), ("coordination.k8s.io/v1", "leases"))
#: Prefix of the cluster-scoped RBAC objects identity() creates
IDENTITY_PREFIX = "dsxos-test-"
DEFAULT_GRACE_S = 30
ALL_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
MERGE_PATCH = rawapi.MERGE


class EmulatorOnly(RuntimeError):
    """A capability of :data:`EMULATOR_ONLY` was used on the real backend."""

    def __init__(self, capability: str) -> None:
        super().__init__("%s is emulator-only: %s. Mark the test @pytest.mark.emulator_only(%r) (tests/harness/cluster_backend.py "
                         "EMULATOR_ONLY)" % (capability, EMULATOR_ONLY[capability], capability))
        self.capability = capability


@dataclass(frozen=True)
class Identity:
    """A user of the backend with its own credentials (see :meth:`ClusterBackend.identity`)."""

    name: str
    user: str
    token: str
    kubeconfig_path: str


def _scaled_grace(grace_s: Optional[float], time_scale: float) -> int:
    return max(1, int(math.ceil((DEFAULT_GRACE_S if grace_s is None else grace_s) * time_scale - 1e-9)))


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01, what: str = "condition") -> Any:
    """Poll ``predicate`` until truthy (returns its value) or raise TimeoutError naming ``what`` (as the emulator's)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class ClusterBackend:
    """The helpers every backend offers (see the module docstring); subclasses implement them."""

    name = ""
    kubeconfig_path = ""
    url = ""
    #: CA certificate of the API server (None: plain http)
    ca_cert: Optional[str] = None
    time_scale = 1.0
    #: ``gitVersion`` of the API server
    server_version = ""
    #: the group version serving PodDisruptionBudgets and Evictions
    policy_version = "policy/v1"
    api: Any = None

    wait_for = staticmethod(wait_for)

    def __repr__(self) -> str:
        return "<%s backend %s>" % (self.name, self.url)

    # -------------------------------------------------------------- emulator-only accessors
    @property
    def emulator(self) -> Any:
        """The :class:`Emulator` itself (emulator backend only)."""
        raise EmulatorOnly("faults")

    @property
    def faults(self) -> Any:
        """The emulator's fault injector."""
        raise EmulatorOnly("faults")

    @property
    def access(self) -> Any:
        """The emulator's access table."""
        raise EmulatorOnly("access_rules")

    @property
    def controllers(self) -> Any:
        """The emulator's simulated controllers."""
        raise EmulatorOnly("time_scale")

    def api_calls(self, verb: Optional[str] = None, resource: Optional[str] = None) -> int:
        """Requests the server answered (optionally of one verb and/or resource)."""
        raise EmulatorOnly("api_calls")

    def stats(self) -> Dict[str, Any]:
        """The emulator's counters (faults injected, API calls, objects)."""
        raise EmulatorOnly("api_calls")


# ====================================================================================================== emulator
class EmulatorBackend(ClusterBackend):
    """Thin delegation to a started :class:`~.k8s_emulator.emulator.Emulator`."""

    name = "emulator"

    def __init__(self, emu: Any) -> None:
        self.emu = emu
        self.kubeconfig_path = emu.kubeconfig_path
        self.url = emu.url
        self.time_scale = emu.time_scale
        self.server_version = emu.git_version
        self.api = emu.api
        self._tokens = 0

    # emulator-only accessors work here
    @property
    def emulator(self) -> Any:
        return self.emu

    @property
    def faults(self) -> Any:
        return self.emu.faults

    @property
    def access(self) -> Any:
        return self.emu.access

    @property
    def controllers(self) -> Any:
        return self.emu.controllers

    def api_calls(self, verb: Optional[str] = None, resource: Optional[str] = None) -> int:
        return self.emu.api_calls(verb, resource)

    def stats(self) -> Dict[str, Any]:
        return self.emu.stats()

    # helpers
    def kubeconfig(self) -> Dict[str, Any]:
        """The admin kubeconfig document."""
        return self.emu.kubeconfig()

    def add_namespace(self, name: str, labels: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """Create a namespace unless it exists."""
        return self.emu.add_namespace(name, labels)

    def add_nodes(self, count: int, profile: str = "h100-eks", name_prefix: Optional[str] = None, labels: Optional[Dict[str, str]] = None,
                  taints: Optional[List[Dict[str, Any]]] = None, start_index: Optional[int] = None) -> List[str]:
        """Ready nodes of a GPU profile; returns their names."""
        return self.emu.add_nodes(count, profile, name_prefix, labels, taints, start_index)

    def cordon(self, node: str, unschedulable: bool = True) -> Dict[str, Any]:
        """Set ``spec.unschedulable``."""
        return self.emu.cordon(node, unschedulable)

    def taint(self, node: str, key: str, effect: str = "NoSchedule", value: Optional[str] = None) -> Dict[str, Any]:
        """Append a taint."""
        return self.emu.taint(node, key, effect, value)

    def add_deployment(self, name: str, namespace: str = "default", **kwargs: Any) -> Dict[str, Any]:
        """A Deployment (replicas, labels, gpu, node_selector, tolerations, image, grace_s, cpu, memory)."""
        return self.emu.add_deployment(name, namespace, **kwargs)

    def add_daemonset(self, name: str, namespace: str = "kube-system", **kwargs: Any) -> Dict[str, Any]:
        """A DaemonSet (labels, node_selector, tolerations, image)."""
        return self.emu.add_daemonset(name, namespace, **kwargs)

    def add_job(self, name: str, namespace: str = "default", **kwargs: Any) -> Dict[str, Any]:
        """A Job whose pods run ``duration_s`` emulated seconds."""
        return self.emu.add_job(name, namespace, **kwargs)

    def add_pdb(self, name: str, selector: Dict[str, str], namespace: str = "default", min_available: Any = None,
                max_unavailable: Any = None) -> Dict[str, Any]:
        """A PodDisruptionBudget selecting ``selector``."""
        return self.emu.add_pdb(name, selector, namespace, min_available, max_unavailable)

    def seed_pods(self, per_node: int, namespace: str = "workloads", nodes: Optional[List[str]] = None, labels: Optional[Dict[str, str]] = None,
                  gpu_per_pod: int = 0, image: str = "registry.k8s.io/pause:3.10") -> int:
        """Running bare pods bound to nodes (``w-<node index>-<i>``)."""
        return self.emu.seed_pods(per_node, namespace, nodes, labels, gpu_per_pod, image)

    @property
    def job_behaviour(self) -> Any:
        """``job_behaviour(job, pod) -> (duration_s, exit_code, log_text) or None`` for Job pods (emulated seconds)."""
        return self.emu.job_behaviour

    @job_behaviour.setter
    def job_behaviour(self, hook: Any) -> None:
        self.emu.job_behaviour = hook

    def set_kubelet_start_delay(self, emulated_s: float) -> None:
        """How long a bound pod takes to become Running from now on (a huge value holds every start)."""
        self.emu.controllers.kubelet_start_delay_s = emulated_s

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until the controllers have processed every event."""
        return self.emu.settle(timeout)

    def pdb_violated(self, name: str, namespace: str = "default") -> bool:
        """Whether healthy pods ever dropped below the budget's desiredHealthy."""
        return self.emu.pdb_violated(name, namespace)

    def pdb_metrics(self, name: str, namespace: str = "default") -> Optional[Dict[str, Any]]:
        """``healthy, desired, armed, min_healthy, violated, violations`` of one budget."""
        return self.emu.pdb_metrics(name, namespace)

    def identity(self, name: str, namespace: Optional[str] = None, deny: Sequence[Tuple[Sequence[str], Sequence[str]]] = ()) -> Identity:
        """A user (``system:serviceaccount:<namespace>:<name>`` with a namespace) with its own token and kubeconfig,
        refused every ``(verbs, resources)`` of ``deny``."""
        user = "system:serviceaccount:%s:%s" % (namespace, name) if namespace else name
        token = "dsxos-identity-%s" % secrets.token_hex(8)
        self.emu.access.add_token(token, user)
        for verbs, resources in deny:
            self.emu.access.deny(verbs=list(verbs), resources=list(resources), users=[user])
        self._tokens += 1
        path = os.path.join(self.emu.workdir, "kubeconfig-identity-%d" % self._tokens)
        self.emu.write_kubeconfig(path, user=user, token=token)
        return Identity(name, user, token, path)

    def close(self) -> None:
        """Stop the emulator."""
        self.emu.stop()


# ====================================================================================================== real
#: (apiVersion, kind) -> (group version served by 1.20, plural, namespaced)
_KINDS: Dict[Tuple[str, str], Tuple[str, str, bool]] = {}
for _gv, _kind, _plural, _namespaced in (
        ("v1", "Namespace", "namespaces", False), ("v1", "Node", "nodes", False), ("v1", "Pod", "pods", True),
        ("v1", "ConfigMap", "configmaps", True), ("v1", "Secret", "secrets", True), ("v1", "ServiceAccount", "serviceaccounts", True),
        ("v1", "Service", "services", True), ("v1", "Event", "events", True), ("v1", "Endpoints", "endpoints", True),
        ("apps/v1", "Deployment", "deployments", True), ("apps/v1", "ReplicaSet", "replicasets", True),
        ("apps/v1", "DaemonSet", "daemonsets", True), ("apps/v1", "StatefulSet", "statefulsets", True),
        ("batch/v1", "Job", "jobs", True), ("coordination.k8s.io/v1", "Lease", "leases", True),
        ("policy/v1beta1", "PodDisruptionBudget", "poddisruptionbudgets", True),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
        ("rbac.authorization.k8s.io/v1", "Role", "roles", True), ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True)):
    _KINDS[(_gv, _kind)] = (_gv, _plural, _namespaced)
# Kubernetes 1.20 serves PodDisruptionBudgets only as policy/v1beta1: a policy/v1 object is read and written there
_KINDS[("policy/v1", "PodDisruptionBudget")] = _KINDS[("policy/v1beta1", "PodDisruptionBudget")]


def _collection_path(group_version: str, plural: str, namespace: Optional[str]) -> str:
    base = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
    return "%s/namespaces/%s/%s" % (base, namespace, plural) if namespace else "%s/%s" % (base, plural)


class RealApi:
    """``get/find/list/pods/create/insert/patch/delete`` by apiVersion and kind, as the emulator's ``api``, through raw JSON
    calls (``rawapi``) of the official client; errors are ``kubernetes.client.rest.ApiException``."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client

    @staticmethod
    def _type(api_version: str, kind: str) -> Tuple[str, str, bool]:
        try:
            return _KINDS[(api_version, kind)]
        except KeyError:
            raise KeyError("the real backend's api knows no kind %r in apiVersion %r (add it to cluster_backend._KINDS)"
                           % (kind, api_version)) from None

    def _path(self, api_version: str, kind: str, namespace: Optional[str], name: Optional[str] = None,
              subresource: Optional[str] = None) -> str:
        group_version, plural, namespaced = self._type(api_version, kind)
        path = _collection_path(group_version, plural, (namespace or "default") if namespaced else None)
        if name:
            path += "/" + urllib.parse.quote(name, safe="")
        if subresource:
            path += "/" + subresource
        return path

    def call(self, method: str, path: str, body: Any = None, query: Optional[Sequence[Tuple[str, Any]]] = None,
             content_type: str = rawapi.JSON) -> Any:
        """One raw call (raises ApiException on >= 400)."""
        return rawapi.call(self.api_client, method, path, body, query, content_type)

    def create(self, obj: Dict[str, Any], dry_run: bool = False) -> Dict[str, Any]:
        """POST the object."""
        meta = obj.get("metadata") or {}
        body = dict(obj)
        group_version = self._type(obj.get("apiVersion", ""), obj.get("kind", ""))[0]
        body["apiVersion"] = group_version
        return self.call("POST", self._path(obj["apiVersion"], obj["kind"], meta.get("namespace")), body,
                         [("dryRun", "All")] if dry_run else None)

    insert = create

    def get(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None) -> Dict[str, Any]:
        """The object (ApiException 404 when missing)."""
        return self.call("GET", self._path(api_version, kind, namespace, name))

    def find(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """The object or None."""
        status, data = rawapi.call_status(self.api_client, "GET", self._path(api_version, kind, namespace, name))
        if status == 404:
            return None
        if status >= 400:
            return self.get(api_version, kind, name, namespace)  # raises with the answer
        return data

    def list(self, api_version: str, kind: str, namespace: Optional[str] = None, label_selector: Optional[str] = None,
             field_selector: Optional[str] = None) -> List[Dict[str, Any]]:
        """Objects matching the selectors (all namespaces when ``namespace`` is None)."""
        group_version, plural, _namespaced = self._type(api_version, kind)
        query = [(k, v) for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector)) if v]
        return self.call("GET", _collection_path(group_version, plural, namespace), query=query).get("items") or []

    def patch(self, api_version: str, kind: str, name: str, patch: Any, namespace: Optional[str] = None,
              patch_type: str = MERGE_PATCH, subresource: Optional[str] = None) -> Dict[str, Any]:
        """PATCH (merge by default)."""
        return self.call("PATCH", self._path(api_version, kind, namespace, name, subresource), patch, content_type=patch_type)

    def update(self, obj: Dict[str, Any], subresource: Optional[str] = None) -> Dict[str, Any]:
        """PUT."""
        meta = obj.get("metadata") or {}
        return self.call("PUT", self._path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"], subresource), obj)

    def delete(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None, grace_period_seconds: Optional[int] = None,
               propagation_policy: Optional[str] = None) -> Dict[str, Any]:
        """DELETE; returns the answer (the object with a deletionTimestamp while its deletion is pending)."""
        options: Dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        return self.call("DELETE", self._path(api_version, kind, namespace, name), options)

    def pods(self, namespace: Optional[str] = None, node: Optional[str] = None, label_selector: Optional[str] = None) -> List[Dict[str, Any]]:
        """Pods, optionally of one namespace / node."""
        return self.list("v1", "Pod", namespace, label_selector, "spec.nodeName=%s" % node if node else None)


def _healthy(pod: Mapping[str, Any]) -> bool:
    """Counts towards a budget's currentHealthy (as the disruption controller counts)."""
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and status.get("phase") == "Running" and ready


def _selector_matches(selector: Optional[Mapping[str, Any]], labels: Optional[Mapping[str, str]]) -> bool:
    """``metav1.LabelSelector`` matching (matchLabels and matchExpressions)."""
    if selector is None:
        return False
    labels = labels or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and key in labels and labels[key] in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


class _Budget:
    """The run-long record of one budget (the emulator's PdbTracker semantics: armed once healthy reaches desired)."""

    def __init__(self) -> None:
        self.selector: Optional[Dict[str, Any]] = None
        self.desired: Optional[int] = None
        self.observed = False
        self.armed = False
        self.min_healthy: Optional[int] = None
        self.violations = 0

    def check(self, healthy: int) -> None:
        if self.desired is None:
            return
        if not self.armed:
            if self.desired > 0 and healthy >= self.desired:
                self.armed, self.min_healthy = True, healthy
            return
        self.min_healthy = healthy if self.min_healthy is None else min(self.min_healthy, healthy)
        if healthy < self.desired:
            self.violations += 1


class _NamespaceBudgets:
    """Watches the pods and PodDisruptionBudgets of one namespace and keeps, per budget, the lowest healthy count seen
    (every pod event, in order) against the real disruption controller's ``desiredHealthy``."""

    def __init__(self, kubeconfig: str, namespace: str) -> None:
        from kubernetes import config  # pylint: disable=import-outside-toplevel

        self.namespace = namespace
        self.budgets: Dict[str, _Budget] = {}
        self.pods: Dict[str, Dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.clients = [config.new_client_from_config(config_file=kubeconfig) for _kind in ("pods", "poddisruptionbudgets")]
        self.responses: Dict[str, Any] = {}
        self.errors: List[str] = []
        self.threads = [threading.Thread(target=self._loop, args=(kind, client), daemon=True, name="pdb-watch-%s-%s" % (namespace, kind))
                        for kind, client in zip(("pods", "poddisruptionbudgets"), self.clients)]
        self._primed = {"pods": threading.Event(), "poddisruptionbudgets": threading.Event()}

    def start(self) -> None:
        for thread in self.threads:
            thread.start()
        for event in self._primed.values():
            event.wait(30)

    def stop(self) -> None:
        self.stop_event.set()
        for resp in list(self.responses.values()):
            try:
                resp.response.shutdown()
            except Exception:  # pylint: disable=broad-except
                pass
        for thread in self.threads:
            thread.join(10)
        for client in self.clients:
            client.close()

    def _path(self, kind: str) -> str:
        return _collection_path("v1" if kind == "pods" else "policy/v1beta1", kind, self.namespace)

    def _loop(self, kind: str, client: Any) -> None:
        version = ""
        while not self.stop_event.is_set():
            try:
                if not version:
                    listing = rawapi.call(client, "GET", self._path(kind))
                    with self.lock:
                        for obj in listing.get("items") or []:
                            self._apply(kind, "ADDED", obj)
                    version = str(listing["metadata"]["resourceVersion"])
                    self._primed[kind].set()
                resp = self.responses[kind] = rawapi.stream(client, "GET", self._path(kind), query=[
                    ("watch", "true"), ("resourceVersion", version), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "60")], timeout=None)
                buffer = b""
                for chunk in resp.response.stream(65536, decode_content=False):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            version = ""
                            break
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                            with self.lock:
                                self._apply(kind, event["type"], obj)
                    if not version or self.stop_event.is_set():
                        break
                resp.response.release_conn()
            except Exception as exc:  # pylint: disable=broad-except
                if self.stop_event.is_set():
                    return
                self.errors.append("%s watch: %r" % (kind, exc))
                version = ""
                self.stop_event.wait(0.5)

    def _healthy_count(self, budget: _Budget) -> int:
        return sum(1 for pod in self.pods.values() if _selector_matches(budget.selector, (pod.get("metadata") or {}).get("labels"))
                   and _healthy(pod))

    def _apply(self, kind: str, etype: str, obj: Dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        if kind == "pods":
            if etype == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = obj
            for budget in self.budgets.values():
                budget.check(self._healthy_count(budget))
            return
        if etype == "DELETED":
            self.budgets.pop(name, None)
            return
        budget = self.budgets.setdefault(name, _Budget())
        budget.selector = (obj.get("spec") or {}).get("selector")
        status = obj.get("status") or {}
        budget.observed = int(status.get("observedGeneration") or 0) >= int(meta.get("generation") or 1)
        desired = status.get("desiredHealthy")
        if budget.observed and desired is not None and desired != budget.desired:
            budget.desired = int(desired)
            if budget.armed and self._healthy_count(budget) < budget.desired:
                budget.armed = False  # desiredHealthy grew (a scale-up): a ramp, not a disruption
        budget.check(self._healthy_count(budget))

    def metrics(self, name: str) -> Optional[Dict[str, Any]]:
        with self.lock:
            budget = self.budgets.get(name)
            if budget is None:
                return None
            return {"healthy": self._healthy_count(budget), "desired": budget.desired, "armed": budget.armed,
                    "min_healthy": budget.min_healthy, "violated": budget.violations > 0, "violations": budget.violations}

    def settled(self) -> bool:
        with self.lock:
            return all(b.observed and b.desired is not None for b in self.budgets.values())


class _Discovery:
    """The namespaced resource types of the server (preferred versions), found once per cluster."""

    cache: Dict[str, List[Tuple[str, str, Tuple[str, ...]]]] = {}

    @classmethod
    def resources(cls, api_client: Any, url: str) -> List[Tuple[str, str, Tuple[str, ...]]]:
        """``[(group version, plural, verbs)]`` of every namespaced top-level resource."""
        if url not in cls.cache:
            found = []
            group_versions = ["v1"] + [g["preferredVersion"]["groupVersion"] for g in rawapi.call(api_client, "GET", "/apis")["groups"]]
            for group_version in group_versions:
                path = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
                for res in rawapi.call(api_client, "GET", path).get("resources") or []:
                    if res.get("namespaced") and "/" not in res["name"]:
                        found.append((group_version, res["name"], tuple(res.get("verbs") or ())))
            cls.cache[url] = found
        return cls.cache[url]

    rbac_cache: Dict[str, List[Tuple[str, str]]] = {}

    @classmethod
    def all_resources(cls, api_client: Any, url: str) -> List[Tuple[str, str]]:
        """``[(group, resource)]`` of every resource and subresource of the preferred versions (RBAC rule material)."""
        if url in cls.rbac_cache:
            return cls.rbac_cache[url]
        out = []
        group_versions = [("", "v1")] + [(g["name"], g["preferredVersion"]["groupVersion"])
                                         for g in rawapi.call(api_client, "GET", "/apis")["groups"]]
        for group, group_version in group_versions:
            path = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
            for res in rawapi.call(api_client, "GET", path).get("resources") or []:
                out.append((group, res["name"]))
        cls.rbac_cache[url] = out
        return out


def _rules_except(resources: Iterable[Tuple[str, str]], deny: Sequence[Tuple[Sequence[str], Sequence[str]]]) -> List[Dict[str, Any]]:
    """RBAC rules allowing every verb on every resource except the ``deny`` pairs (the emulator's deny semantics: a
    resource matches by name, or ``<base>/*``, or ``*``; verbs by name or ``*``)."""
    by_verbs: Dict[Tuple[Tuple[str, ...], str], List[str]] = {}
    for group, resource in resources:
        verbs = set(ALL_VERBS)
        base = resource.split("/", 1)[0]
        for denied_verbs, denied_resources in deny:
            if "*" in denied_resources or resource in denied_resources or base + "/*" in denied_resources:
                verbs -= set(ALL_VERBS) if "*" in denied_verbs else set(denied_verbs)
        if verbs:
            key = (tuple(sorted(verbs)) if verbs != set(ALL_VERBS) else ("*",), group)
            by_verbs.setdefault(key, []).append(resource)
    rules = [{"apiGroups": [group], "resources": sorted(res), "verbs": list(verbs)} for (verbs, group), res in sorted(by_verbs.items())]
    if not any("*" in denied_resources and "*" in denied_verbs for denied_verbs, denied_resources in deny):
        rules.append({"nonResourceURLs": ["*"], "verbs": ["*"]})
    return rules


class RealBackend(ClusterBackend):  # pylint: disable=too-many-instance-attributes,too-many-public-methods
    """The session's real control plane for ONE test at a time: a :class:`NodeSimulator` for its nodes, an empty cluster
    before and after the test (see the module docstring)."""

    name = "real"
    policy_version = "policy/v1beta1"
    _active: Optional["RealBackend"] = None

    def __init__(self, cluster: RealCluster, workdir: str, time_scale: float = 0.01, kubelet_start_delay_s: float = 1.0,
                 seed: Optional[int] = None) -> None:  # pylint: disable=unused-argument
        if time_scale <= 0:
            raise ValueError("time_scale must be > 0, got %r" % (time_scale,))
        self.cluster = cluster
        self.workdir = workdir
        self.time_scale = float(time_scale)
        self.kubeconfig_path = str(cluster.kubeconfig_path)
        self.url = cluster.url
        self.ca_cert = str(cluster.ca_file)
        from kubernetes import client as kube_client, config as kube_config  # pylint: disable=import-outside-toplevel

        configuration = kube_client.Configuration()
        kube_config.load_kube_config(config_file=self.kubeconfig_path, client_configuration=configuration)
        configuration.connection_pool_maxsize = 16  # the reset's worker threads share it
        self.client = kube_client.ApiClient(configuration)
        self.api = RealApi(self.client)
        self.sim: Optional[NodeSimulator] = None
        self._behaviour: Any = None
        self._kubelet_start_delay_s = kubelet_start_delay_s
        self._budgets: Dict[str, _NamespaceBudgets] = {}
        self._identities = 0
        self._namespaces_ready: set = set(SYSTEM_NAMESPACES)

    # -------------------------------------------------------------- lifecycle
    def start(self) -> "RealBackend":
        """Empty the cluster (leftovers of earlier tests), start the node simulator."""
        if RealBackend._active is not None:
            raise RuntimeError("the real control plane is shared by the session: one real backend per test (%r is active)"
                               % RealBackend._active)
        RealBackend._active = self
        try:
            self.reset()
            self.server_version = str(rawapi.call(self.client, "GET", "/version")["gitVersion"])
            self.sim = NodeSimulator(self.kubeconfig_path, start_delay_s=self._start_delay(), job_behaviour=self._scaled_behaviour)
            self.sim.start()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the watches and the simulator, then empty the cluster again."""
        try:
            for budgets in self._budgets.values():
                budgets.stop()
            self._budgets.clear()
            if self.sim is not None:
                self.sim.stop()
                self.sim = None
            self.reset()
        finally:
            self.client.close()
            if RealBackend._active is self:
                RealBackend._active = None

    def simulator_errors(self) -> List[str]:
        """What the node simulator failed to do (its kubelets' errors)."""
        return list(self.sim.last_errors) if self.sim is not None else []

    # -------------------------------------------------------------- emptying the cluster
    def reset(self, timeout_s: float = 60.0) -> None:
        """Remove every namespace but the system ones, every node and its Lease, the workloads and non-system
        ConfigMaps/Secrets/Leases of the system namespaces, and the identities' ClusterRoles/Bindings.

        Namespaces go the way the namespace controller removes them, in parallel: the namespace is deleted (Terminating:
        nothing new can be created in it), every namespaced object of it is deleted (pods with grace 0), and once a
        cluster-wide listing of every namespaced type finds nothing left it is finalized.
        """
        zero = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "propagationPolicy": "Background"}
        namespaces = [n["metadata"]["name"] for n in self.api.list("v1", "Namespace") if n["metadata"]["name"] not in SYSTEM_NAMESPACES]
        types = [(gv, plural) for gv, plural, verbs in _Discovery.resources(self.client, self.url) if {"list", "delete"} <= set(verbs)]
        system_types = set(SYSTEM_NAMESPACE_CONTENT)
        deadline = time.monotonic() + timeout_s
        with ThreadPoolExecutor(max_workers=12, thread_name_prefix="reset") as pool:
            list(pool.map(lambda ns: self._delete_quietly("/api/v1/namespaces/%s" % ns), namespaces))
            list(pool.map(self._delete_quietly, ["/api/v1/nodes/%s" % n["metadata"]["name"] for n in self.api.list("v1", "Node")]))
            pool.submit(self._delete_identity_rbac).result()
            while True:
                listings = list(pool.map(lambda t: (t, rawapi.call(self.client, "GET", _collection_path(t[0], t[1], None)).get("items") or []),
                                         types))
                collections, single, remaining = set(), [], []
                for (group_version, plural), items in listings:
                    for item in items:
                        meta = item["metadata"]
                        namespace = meta.get("namespace")
                        if namespace not in SYSTEM_NAMESPACES:
                            collections.add((group_version, plural, namespace))
                        elif (group_version, plural) not in system_types or (plural == "configmaps" and meta["name"] in SYSTEM_CONFIGMAPS) \
                                or (plural == "secrets" and item.get("type") == "kubernetes.io/service-account-token"):
                            continue
                        else:
                            single.append("%s/%s" % (_collection_path(group_version, plural, namespace), meta["name"]))
                        if plural != "events":
                            remaining.append("%s %s/%s" % (plural, namespace, meta["name"]))
                if not remaining or time.monotonic() >= deadline:
                    break
                list(pool.map(lambda c: rawapi.call_status(self.client, "DELETE", _collection_path(*c), zero), sorted(collections)))
                list(pool.map(lambda path: self._delete_quietly(path, zero), single))
                time.sleep(0.1)
            if remaining:
                raise RuntimeError("the cluster could not be emptied within %.0f s; left: %s" % (timeout_s, ", ".join(remaining[:20])))
            for namespace in namespaces:
                status, data = rawapi.call_status(self.client, "PUT", "/api/v1/namespaces/%s/finalize" % namespace, {
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}, "spec": {"finalizers": []}})
                if status >= 400 and status != 404:
                    raise RuntimeError("finalizing namespace %s answered %s: %s" % (namespace, status, data.get("message")))
        wait_for(lambda: not [n for n in self.api.list("v1", "Namespace") if n["metadata"]["name"] not in SYSTEM_NAMESPACES]
                 and not self.api.list("v1", "Node"), max(5.0, deadline - time.monotonic()), 0.05, "the namespaces and nodes to be gone")
        self._namespaces_ready = set(SYSTEM_NAMESPACES)

    def _delete_quietly(self, path: str, body: Any = None) -> None:
        status, data = rawapi.call_status(self.client, "DELETE", path, body)
        if status >= 400 and status not in (404, 409):
            raise RuntimeError("DELETE %s: %s %s" % (path, status, data.get("message")))

    def _delete_identity_rbac(self) -> None:
        for plural in ("clusterrolebindings", "clusterroles"):
            path = "/apis/rbac.authorization.k8s.io/v1/%s" % plural
            for item in rawapi.call(self.client, "GET", path).get("items") or []:
                if item["metadata"]["name"].startswith(IDENTITY_PREFIX):
                    self._delete_quietly("%s/%s" % (path, item["metadata"]["name"]))

    # -------------------------------------------------------------- time
    def _start_delay(self) -> float:
        return max(0.0, self._kubelet_start_delay_s * self.time_scale)

    def _grace(self, grace_s: Optional[float]) -> int:
        return _scaled_grace(grace_s, self.time_scale)

    def _scaled_behaviour(self, job: Optional[Dict[str, Any]], pod: Dict[str, Any]) -> Optional[Tuple[float, int, str]]:
        hook = self._behaviour
        if hook is None or job is None:  # as the emulator: the hook decides for Job pods, else the annotations
            return None
        decided = hook(job, pod)
        if decided is None:
            return None
        duration, code, text = decided
        return float(duration) * self.time_scale, int(code), str(text or "")

    @property
    def job_behaviour(self) -> Any:
        """``job_behaviour(job, pod) -> (duration_s, exit_code, log_text) or None``; durations in emulated seconds."""
        return self._behaviour

    @job_behaviour.setter
    def job_behaviour(self, hook: Any) -> None:
        self._behaviour = hook

    def set_kubelet_start_delay(self, emulated_s: float) -> None:
        """How long a bound pod takes to become Running from now on (a huge value holds every start)."""
        self._kubelet_start_delay_s = emulated_s
        if self.sim is not None:
            self.sim.start_delay_s = self._start_delay()

    # -------------------------------------------------------------- objects
    def kubeconfig(self) -> Dict[str, Any]:
        """The admin kubeconfig document."""
        return json.loads(Path(self.kubeconfig_path).read_text(encoding="utf-8"))

    def add_namespace(self, name: str, labels: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """Create a namespace unless it exists; returns when pods can be created in it (its service account has a token)."""
        existing = self.api.find("v1", "Namespace", name)
        if existing is None:
            status, existing = rawapi.call_status(self.client, "POST", "/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}})
            if status == 409:
                existing = self.api.get("v1", "Namespace", name)
            elif status >= 400:
                raise RuntimeError("creating namespace %s: %s %s" % (name, status, existing.get("message")))
        if name not in self._namespaces_ready:
            self.cluster.wait_for_service_account(name)
            self._namespaces_ready.add(name)
        return existing

    def add_nodes(self, count: int, profile: str = "h100-eks", name_prefix: Optional[str] = None, labels: Optional[Dict[str, str]] = None,
                  taints: Optional[List[Dict[str, Any]]] = None, start_index: Optional[int] = None) -> List[str]:
        """Ready nodes of a GPU profile (the emulator's profiles and naming), registered by the simulator; returns when
        the node lifecycle controller has removed the not-ready taint admission put on them."""
        assert self.sim is not None
        if start_index is None and name_prefix:
            start_index = 0
        names = self.sim.add_nodes(count, profile, name_prefix, labels, taints, start_index=start_index)
        wanted = [dict(t) for t in taints or []]

        def ready() -> bool:
            for node in self.api.list("v1", "Node"):
                if node["metadata"]["name"] in names:
                    current = [{k: v for k, v in t.items() if k != "timeAdded"} for t in (node["spec"].get("taints") or [])]
                    if current != wanted:
                        return False
            return True
        wait_for(ready, 60, 0.05, "nodes %s without the not-ready taint" % ", ".join(names))
        return names

    def cordon(self, node: str, unschedulable: bool = True) -> Dict[str, Any]:
        """Set ``spec.unschedulable``."""
        return self.api.patch("v1", "Node", node, {"spec": {"unschedulable": unschedulable or None}})

    def taint(self, node: str, key: str, effect: str = "NoSchedule", value: Optional[str] = None) -> Dict[str, Any]:
        """Append a taint."""
        current = self.api.get("v1", "Node", node)
        taints = list((current.get("spec") or {}).get("taints") or [])
        taint: Dict[str, Any] = {"key": key, "effect": effect}
        if value is not None:
            taint["value"] = value
        taints.append(taint)
        return self.api.patch("v1", "Node", node, {"spec": {"taints": taints}})

    def _pod_spec(self, image: str, gpu: int, node_selector: Optional[Dict[str, str]], tolerations: Optional[List[Dict[str, Any]]],
                  grace_s: Optional[float], cpu: Optional[str] = None, memory: Optional[str] = None) -> Dict[str, Any]:
        spec: Dict[str, Any] = {"containers": [container_spec("main", image, gpu, cpu, memory)], "terminationGracePeriodSeconds": self._grace(grace_s)}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            spec["tolerations"] = [dict(t) for t in tolerations]
        return spec

    def _workload(self, api_version: str, kind: str, name: str, namespace: str, labels: Optional[Dict[str, str]], spec: Dict[str, Any],
                  pod_spec: Dict[str, Any], pod_annotations: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        self.add_namespace(namespace)
        sel = dict(labels or {"app": name})
        template: Dict[str, Any] = {"metadata": {"labels": dict(sel)}, "spec": pod_spec}
        if pod_annotations:
            template["metadata"]["annotations"] = dict(pod_annotations)
        body_spec = dict(spec)
        body_spec["template"] = template
        if kind != "Job":
            body_spec["selector"] = {"matchLabels": sel}
        return self.api.create({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace, "labels": dict(sel)},
                                "spec": body_spec})

    def add_deployment(self, name: str, namespace: str = "default", replicas: int = 1, labels: Optional[Dict[str, str]] = None, gpu: int = 0,
                       node_selector: Optional[Dict[str, str]] = None, tolerations: Optional[List[Dict[str, Any]]] = None,
                       image: str = "nginx:1.27", grace_s: Optional[float] = None, cpu: Optional[str] = None,
                       memory: Optional[str] = None) -> Dict[str, Any]:
        """A Deployment (the real controllers create its ReplicaSet and pods, the real scheduler places them)."""
        return self._workload("apps/v1", "Deployment", name, namespace, labels, {"replicas": replicas},
                              self._pod_spec(image, gpu, node_selector, tolerations, grace_s, cpu, memory))

    def add_daemonset(self, name: str, namespace: str = "kube-system", labels: Optional[Dict[str, str]] = None,
                      node_selector: Optional[Dict[str, str]] = None, tolerations: Optional[List[Dict[str, Any]]] = None,
                      image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0") -> Dict[str, Any]:
        """A DaemonSet (one pod per eligible node)."""
        return self._workload("apps/v1", "DaemonSet", name, namespace, labels, {}, self._pod_spec(image, 0, node_selector, tolerations, None))

    def add_job(self, name: str, namespace: str = "default", completions: Optional[int] = 1, parallelism: int = 1, backoff_limit: int = 6,
                duration_s: Optional[float] = None, exit_code: Optional[int] = None, log: Optional[str] = None, gpu: int = 0,
                node_selector: Optional[Dict[str, str]] = None, image: str = "nvcr.io/nvidia/pytorch:25.01-py3") -> Dict[str, Any]:
        """A Job whose pods run ``duration_s`` emulated seconds (default 1) and exit with ``exit_code``."""
        annotations = {"emulator.dsxos.io/duration": repr((1.0 if duration_s is None else float(duration_s)) * self.time_scale)}
        if exit_code is not None:
            annotations["emulator.dsxos.io/exit-code"] = str(exit_code)
        if log is not None:
            annotations["emulator.dsxos.io/log"] = log
        spec: Dict[str, Any] = {"parallelism": parallelism, "backoffLimit": backoff_limit}
        if completions is not None:
            spec["completions"] = completions
        pod_spec = self._pod_spec(image, gpu, node_selector, None, None)
        pod_spec["restartPolicy"] = "Never"
        return self._workload("batch/v1", "Job", name, namespace, {"job-group": name}, spec, pod_spec, annotations)

    def add_pdb(self, name: str, selector: Dict[str, str], namespace: str = "default", min_available: Any = None,
                max_unavailable: Any = None) -> Dict[str, Any]:
        """A PodDisruptionBudget (policy/v1beta1 on 1.20), watched for :meth:`pdb_violated`."""
        self._budgets_of(namespace)
        spec: Dict[str, Any] = {"selector": {"matchLabels": dict(selector)}}
        if min_available is not None:
            spec["minAvailable"] = min_available
        if max_unavailable is not None:
            spec["maxUnavailable"] = max_unavailable
        return self.api.create({"apiVersion": self.policy_version, "kind": "PodDisruptionBudget",
                                "metadata": {"name": name, "namespace": namespace}, "spec": spec})

    def seed_pods(self, per_node: int, namespace: str = "workloads", nodes: Optional[List[str]] = None, labels: Optional[Dict[str, str]] = None,
                  gpu_per_pod: int = 0, image: str = "registry.k8s.io/pause:3.10") -> int:
        """Bare pods bound to nodes (``spec.nodeName``, no scheduler), Running when this returns."""
        self.add_namespace(namespace)
        node_names = nodes if nodes is not None else [n["metadata"]["name"] for n in self.api.list("v1", "Node")]
        pods = []
        for n_index, node in enumerate(node_names):
            for i in range(per_node):
                pods.append({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "w-%d-%d" % (n_index, i), "namespace": namespace, "labels": {"app": "workload", **(labels or {})}},
                             "spec": {"nodeName": node, "containers": [container_spec("main", image, gpu_per_pod)], "restartPolicy": "Always",
                                      "terminationGracePeriodSeconds": self._grace(DEFAULT_GRACE_S)}})
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(self.api.create, pods))
        names = {p["metadata"]["name"] for p in pods}
        wait_for(lambda: sum(1 for p in self.api.pods(namespace) if p["metadata"]["name"] in names and _healthy(p)) == len(names), 60, 0.05,
                 "%d seeded pods Running" % len(names))
        return len(pods)

    # -------------------------------------------------------------- waiting and budgets
    def _budgets_of(self, namespace: str) -> _NamespaceBudgets:
        if namespace not in self._budgets:
            self.add_namespace(namespace)
            watch = _NamespaceBudgets(self.kubeconfig_path, namespace)
            watch.start()
            self._budgets[namespace] = watch
        return self._budgets[namespace]

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until the disruption controller has computed every budget created here (and the watches have seen it)."""
        wait_for(lambda: all(w.settled() for w in self._budgets.values()), max(timeout, 30.0), 0.05,
                 "the disruption controller to compute the budgets")
        return True

    def pdb_violated(self, name: str, namespace: str = "default") -> bool:
        """Whether healthy pods ever dropped below the budget's desiredHealthy since it was first met."""
        metrics = self.pdb_metrics(name, namespace)
        return bool(metrics and metrics["violated"])

    def pdb_metrics(self, name: str, namespace: str = "default") -> Optional[Dict[str, Any]]:
        """``healthy, desired, armed, min_healthy, violated, violations`` of a budget created by :meth:`add_pdb`."""
        watch = self._budgets.get(namespace)
        return None if watch is None else watch.metrics(name)

    # -------------------------------------------------------------- identities
    def identity(self, name: str, namespace: Optional[str] = None, deny: Sequence[Tuple[Sequence[str], Sequence[str]]] = ()) -> Identity:
        """A ServiceAccount ``namespace/name`` (namespace default ``dsxos-test-identities``) allowed everything by RBAC but
        the ``deny`` pairs, with its token in its own kubeconfig."""
        namespace = namespace or "dsxos-test-identities"
        self.add_namespace(namespace)
        status, data = rawapi.call_status(self.client, "POST", "/api/v1/namespaces/%s/serviceaccounts" % namespace,
                                          {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
        if status >= 400 and status != 409:
            raise RuntimeError("creating service account %s/%s: %s %s" % (namespace, name, status, data.get("message")))
        self.cluster.wait_for_service_account(namespace, name)
        account = self.api.get("v1", "ServiceAccount", name, namespace)
        secret = self.api.get("v1", "Secret", account["secrets"][0]["name"], namespace)
        token = base64.b64decode(secret["data"]["token"]).decode("ascii")
        user = "system:serviceaccount:%s:%s" % (namespace, name)
        role = "%s%s-%s" % (IDENTITY_PREFIX, namespace, name)
        rules = _rules_except(_Discovery.all_resources(self.client, self.url), deny)
        self.cluster.grant("%s:%s" % (namespace, name), rules, name=role, kind="ServiceAccount")
        self._identities += 1
        path = Path(self.workdir) / ("kubeconfig-identity-%d" % self._identities)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_kubeconfig(path, self.url, self.cluster.ca_file, user, token)
        # the authorizer reads RBAC from its informers: wait until the grant is in force
        probe = next((r for r in rules if r.get("resources")), None)
        if probe is not None:
            verb = "get" if probe["verbs"] == ["*"] else probe["verbs"][0]
            wait_for(lambda: self._allowed(user, verb, probe["resources"][0], probe["apiGroups"][0]), 30, 0.1, "the RBAC grant of %s" % user)
        return Identity(name, user, token, str(path))

    def _allowed(self, user: str, verb: str, resource: str, group: str = "") -> bool:
        base, _sep, sub = resource.partition("/")
        attributes = {"verb": verb, "resource": base, "group": group, "subresource": sub}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
            "user": user, "groups": ["system:serviceaccounts", "system:authenticated"], "resourceAttributes": attributes}}
        return bool((rawapi.call(self.client, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review).get("status") or {})
                    .get("allowed"))
