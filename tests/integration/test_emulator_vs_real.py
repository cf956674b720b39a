# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Differential test: one scripted sequence of API calls played on the emulator (tests/harness/k8s_emulator, Kubernetes
1.3x) and on a REAL kube-apiserver 1.20 (tests/harness/kube_control_plane), the normalized answers compared.

Every step is a raw call through the official client (``rawapi``): method, path, body, content type, query. The answer's
status code and normalized body are compared; each difference must be listed in ``KNOWN_DIFFERENCES`` (mirrored by the
table "Known differences from a real API server" in docs/emulator.md), and each listed difference must still occur.

Nobody plays the kubelet but the script: the emulator runs with a one-hour kubelet start delay and the pods' grace
period is 600 s at time scale 1, the real cluster has no node simulator. Pods become Running through a ``pods/status``
patch and a graceful deletion is finished by a ``gracePeriodSeconds=0`` DELETE, as a kubelet does. The node's Lease in
``kube-node-lease`` is renewed in the background on both backends so the real node lifecycle controller keeps it Ready.
"""
from __future__ import annotations

import fnmatch
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import k8s_emulator_factory  # noqa: F401  pylint: disable=unused-import
from ansible_collections.dsxos.cluster.tests.harness.kube_control_plane import rawapi

NS = "evr"
NODE = "evr-node-1"
GRACE = 600
JSON, MERGE, STRATEGIC, JSON_PATCH = rawapi.JSON, rawapi.MERGE, rawapi.STRATEGIC, "application/json-patch+json"
#: the PodDisruptionBudget / Eviction group version each server serves (1.20: only policy/v1beta1; 1.3x: only policy/v1)
POLICY = {"real": "policy/v1beta1", "emulator": "policy/v1"}

Ctx = Dict[str, Tuple[int, Any]]
Body = Any  # a value, or ``fn(ctx) -> value`` computed from earlier answers of the same backend


@dataclass
class Step:
    """One API call (or a wait, or a watch) of the sequence."""

    id: str
    method: str = "GET"
    path: str = ""
    body: Body = None
    ctype: str = JSON
    query: List[Tuple[str, str]] = field(default_factory=list)
    #: ``wait``: poll the GET until ``until(status, body)`` holds, then compare the last answer
    until: Optional[Callable[[int, Any], bool]] = None
    #: ``watch``: read a whole watch stream (the query carries ``timeoutSeconds``); ``only``: play on that backend only, not compared
    kind: str = "call"
    only: Optional[str] = None
    #: ``watch`` only: start from the list resourceVersion answered at this step (none: from now, current objects as ADDED)
    since: Optional[str] = None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _pod(name: str, **labels: str) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict({"app": "evr"}, **labels)},
            "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": GRACE, "automountServiceAccountToken": False,
                     "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3"}]}}


def _running(_ctx: Ctx) -> Dict[str, Any]:
    """What a kubelet patches into pods/status when the pod's containers run."""
    stamp = _now()
    conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
                  for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return {"status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "100.64.0.2", "podIPs": [{"ip": "100.64.0.2"}],
                       "startTime": stamp, "conditions": conditions,
                       "containerStatuses": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "imageID": "",
                                              "containerID": "containerd://0123", "ready": True, "restartCount": 0, "started": True,
                                              "state": {"running": {"startedAt": stamp}}}]}}


def _node_status(_ctx: Ctx) -> Dict[str, Any]:
    stamp = _now()
    conds = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
              "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]
    res = {"cpu": "192", "memory": "2047Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"status": {"conditions": conds, "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": NODE}],
                       "capacity": res, "allocatable": res}}


def _stale(step_id: str, change: Callable[[Dict[str, Any]], None]) -> Callable[[Ctx], Dict[str, Any]]:
    """The object answered at ``step_id`` (so its resourceVersion is old by now), changed by ``change``."""
    def build(ctx: Ctx) -> Dict[str, Any]:
        obj = json.loads(json.dumps(ctx[step_id][1]))
        change(obj)
        return obj
    return build


def _current(step_id: str, change: Callable[[Dict[str, Any]], None]) -> Callable[[Ctx], Dict[str, Any]]:
    return _stale(step_id, change)


def _eviction(name: str, version: str = "{policy}", dry_run: bool = False) -> Dict[str, Any]:
    body: Dict[str, Any] = {"apiVersion": version, "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
    if dry_run:
        body["deleteOptions"] = {"dryRun": ["All"]}
    return body


def _pdb_allows(count: int, healthy: int) -> Callable[[int, Any], bool]:
    """The disruption controller has computed the budget (not only the eviction handler's own status write)."""
    def check(status: int, body: Any) -> bool:
        st = (body.get("status") or {}) if status == 200 else {}
        return (st.get("disruptionsAllowed") == count and st.get("currentHealthy") == healthy and not st.get("disruptedPods")
                and st.get("observedGeneration") == body["metadata"].get("generation"))
    return check


def _taints(body: Any) -> List[str]:
    return sorted(t.get("key", "") for t in (body.get("spec") or {}).get("taints") or ())


PODS = "/api/v1/namespaces/%s/pods" % NS
LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
PDBS = "/apis/{policy}/namespaces/%s/poddisruptionbudgets" % NS
PDB_BODY = {"apiVersion": "{policy}", "kind": "PodDisruptionBudget", "metadata": {"name": "evr"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "evr"}}}}
LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "evr-leader"},
         "spec": {"holderIdentity": "op-a", "leaseDurationSeconds": 15, "leaseTransitions": 0}}

SEQUENCE: List[Step] = [
    # ---- namespaces: create, duplicate, invalid name, not found
    Step("ns-create", "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    Step("ns-create-again", "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    Step("ns-create-invalid", "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Bad_Name"}}),
    Step("ns-get-missing", "GET", "/api/v1/namespaces/evr-missing"),
    Step("sa-token", "GET", "/api/v1/namespaces/%s/serviceaccounts/default" % NS, only="real",
         until=lambda s, b: s == 200 and bool(b.get("secrets"))),
    # ---- a node: create, status subresource, cordon / uncordon by patch, selectors
    Step("node-create", "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": NODE, "labels": {"evr.dsxos.io/pool": "a", "kubernetes.io/hostname": NODE}}, "spec": {}}),
    Step("node-ttl", "GET", "/api/v1/nodes/%s" % NODE, only="real",  # the TTL controller's annotation, before anything is compared
         until=lambda s, b: s == 200 and "node.alpha.kubernetes.io/ttl" in (b["metadata"].get("annotations") or {})),
    Step("node-status", "PATCH", "/api/v1/nodes/%s/status" % NODE, _node_status, STRATEGIC),
    Step("node-settled", "GET", "/api/v1/nodes/%s" % NODE, only="real",  # the lifecycle controller untaints, the TTL controller annotates
         until=lambda s, b: s == 200 and not _taints(b) and "node.alpha.kubernetes.io/ttl" in (b["metadata"].get("annotations") or {})),
    Step("node-ready", "GET", "/api/v1/nodes/%s" % NODE, until=lambda s, b: s == 200 and not _taints(b)),
    Step("node-get-missing", "GET", "/api/v1/nodes/evr-node-missing"),
    Step("node-cordon", "PATCH", "/api/v1/nodes/%s" % NODE, {"spec": {"unschedulable": True}}, STRATEGIC),
    Step("node-cordon-tainted", "GET", "/api/v1/nodes/%s" % NODE, only="real",
         until=lambda s, b: s == 200 and _taints(b) == ["node.kubernetes.io/unschedulable"]),
    Step("node-list-label", "GET", "/api/v1/nodes", query=[("labelSelector", "evr.dsxos.io/pool=a")]),
    Step("node-list-label-set", "GET", "/api/v1/nodes", query=[("labelSelector", "evr.dsxos.io/pool in (a,b),!absent")]),
    Step("node-list-field", "GET", "/api/v1/nodes", query=[("fieldSelector", "spec.unschedulable=true,metadata.name=%s" % NODE)]),
    Step("node-list-field-bad", "GET", "/api/v1/nodes", query=[("fieldSelector", "spec.bogus=1")]),
    Step("node-status-only", "PATCH", "/api/v1/nodes/%s/status" % NODE, {"spec": {"unschedulable": False},
                                                                         "metadata": {"labels": {"evr.dsxos.io/via-status": "x"}}}, MERGE),
    Step("node-uncordon", "PATCH", "/api/v1/nodes/%s" % NODE, {"spec": {"unschedulable": None}}, MERGE),
    Step("node-uncordon-untainted", "GET", "/api/v1/nodes/%s" % NODE, only="real", until=lambda s, b: s == 200 and not _taints(b)),
    Step("node-uncordoned", "GET", "/api/v1/nodes/%s" % NODE),
    # ---- pods bound to the node; the list's resourceVersion starts the watch replay at the end
    Step("pods-list-empty", "GET", PODS),
    Step("pod-a-create", "POST", PODS, _pod("evr-a")),
    Step("pod-b-create", "POST", PODS, _pod("evr-b")),
    Step("pod-c-create", "POST", PODS, _pod("evr-c", tier="db")),
    Step("pod-create-dry-run", "POST", PODS, _pod("evr-dry"), query=[("dryRun", "All")]),
    Step("pod-dry-run-absent", "GET", PODS + "/evr-dry"),
    Step("pod-create-invalid", "POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "evr-x"}, "spec": {"containers": []}}),
    Step("pod-a-running", "PATCH", PODS + "/evr-a/status", _running, STRATEGIC),
    Step("pod-b-running", "PATCH", PODS + "/evr-b/status", _running, STRATEGIC),
    Step("pod-c-running", "PATCH", PODS + "/evr-c/status", _running, STRATEGIC),
    Step("pods-list-field", "GET", PODS, query=[("fieldSelector", "spec.nodeName=%s,status.phase=Running" % NODE)]),
    Step("pods-list-set-based", "GET", PODS, query=[("labelSelector", "app in (evr),tier notin (db)")]),
    Step("pods-list-field-ne", "GET", "/api/v1/pods", query=[("fieldSelector", "metadata.namespace=%s,metadata.name!=evr-a" % NS)]),
    # ---- patches: merge, strategic merge, JSON patch (good and failing test), dry run, stale resourceVersion
    Step("pod-a-merge", "PATCH", PODS + "/evr-a", {"metadata": {"labels": {"tier": "web"}, "annotations": {"evr/note": "x"}}}, MERGE),
    Step("pod-a-strategic", "PATCH", PODS + "/evr-a", {"spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.06-py3"}]}},
         STRATEGIC),
    Step("pod-a-json-patch", "PATCH", PODS + "/evr-a", [{"op": "test", "path": "/metadata/labels/tier", "value": "web"},
                                                        {"op": "add", "path": "/metadata/labels/extra", "value": "1"},
                                                        {"op": "remove", "path": "/metadata/annotations/evr~1note"}], JSON_PATCH),
    Step("pod-a-json-patch-test-fails", "PATCH", PODS + "/evr-a", [{"op": "test", "path": "/metadata/labels/tier", "value": "db"}], JSON_PATCH),
    Step("pod-a-merge-dry-run", "PATCH", PODS + "/evr-a", {"metadata": {"labels": {"dry": "yes"}}}, MERGE, [("dryRun", "All")]),
    Step("pod-a-after-dry-run", "GET", PODS + "/evr-a"),
    Step("pod-a-update-stale", "PUT", PODS + "/evr-a", _stale("pod-a-create", lambda o: o["metadata"]["labels"].update(stale="1"))),
    Step("pod-a-patch-stale", "PATCH", PODS + "/evr-a",
         lambda ctx: {"metadata": {"resourceVersion": ctx["pod-a-create"][1]["metadata"]["resourceVersion"], "labels": {"stale": "1"}}}, MERGE),
    Step("pod-a-update", "PUT", PODS + "/evr-a", _current("pod-a-after-dry-run", lambda o: o["metadata"]["labels"].update(updated="1"))),
    Step("pod-a-patch-missing", "PATCH", PODS + "/evr-missing", {"metadata": {"labels": {"x": "1"}}}, MERGE),
    # ---- a budget, eviction allowed (201) then blocked (429), dry run, a policy/v1 body, a missing pod
    Step("pdb-create-v1beta1", "POST", "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % NS,
         dict(PDB_BODY, apiVersion="policy/v1beta1")),
    Step("pdb-create-v1", "POST", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % NS, dict(PDB_BODY, apiVersion="policy/v1")),
    Step("pdb-allows-1", "GET", PDBS + "/evr", until=_pdb_allows(1, 3)),
    Step("evict-a-dry-run", "POST", PODS + "/evr-a/eviction", _eviction("evr-a", dry_run=True)),
    Step("pod-a-after-evict-dry-run", "GET", PODS + "/evr-a"),
    Step("evict-a", "POST", PODS + "/evr-a/eviction", _eviction("evr-a")),
    Step("pod-a-terminating", "GET", PODS + "/evr-a"),
    Step("pdb-allows-0", "GET", PDBS + "/evr", until=_pdb_allows(0, 2)),
    Step("evict-b-blocked", "POST", PODS + "/evr-b/eviction", _eviction("evr-b")),
    Step("evict-b-policy-v1-body", "POST", PODS + "/evr-b/eviction", _eviction("evr-b", "policy/v1")),
    Step("evict-missing", "POST", PODS + "/evr-missing/eviction", _eviction("evr-missing")),
    Step("evict-a-again", "POST", PODS + "/evr-a/eviction", _eviction("evr-a")),
    # ---- graceful deletion: the kubelet's final delete, dry run, shortening the grace period
    Step("pod-a-kubelet-delete", "DELETE", PODS + "/evr-a", {"gracePeriodSeconds": 0, "preconditions": {}}),
    Step("pod-a-gone", "GET", PODS + "/evr-a"),
    Step("pod-b-delete-dry-run", "DELETE", PODS + "/evr-b", query=[("dryRun", "All")]),
    Step("pod-b-after-delete-dry-run", "GET", PODS + "/evr-b"),
    Step("pod-b-delete", "DELETE", PODS + "/evr-b"),
    Step("pod-b-delete-shorter", "DELETE", PODS + "/evr-b", query=[("gracePeriodSeconds", "5")]),
    Step("pod-b-kubelet-delete", "DELETE", PODS + "/evr-b", query=[("gracePeriodSeconds", "0")]),
    Step("pdb-delete", "DELETE", PDBS + "/evr"),
    Step("evict-c-no-budget", "POST", PODS + "/evr-c/eviction", _eviction("evr-c")),
    Step("pod-c-kubelet-delete", "DELETE", PODS + "/evr-c", query=[("gracePeriodSeconds", "0")]),
    Step("pods-list-final", "GET", PODS),
    # ---- a Lease: create, update, stale update (409), merge patch, delete
    Step("lease-create", "POST", LEASES, lambda ctx: dict(LEASE, spec=dict(LEASE["spec"], acquireTime=_micro(), renewTime=_micro()))),
    Step("lease-create-again", "POST", LEASES, LEASE),
    Step("lease-update", "PUT", LEASES + "/evr-leader",
         _current("lease-create", lambda o: o["spec"].update(holderIdentity="op-b", leaseTransitions=1, renewTime=_micro()))),
    Step("lease-update-stale", "PUT", LEASES + "/evr-leader", _stale("lease-create", lambda o: o["spec"].update(holderIdentity="op-c"))),
    Step("lease-renew", "PATCH", LEASES + "/evr-leader", lambda ctx: {"spec": {"renewTime": _micro()}}, MERGE),
    Step("lease-create-dry-run", "POST", LEASES, dict(LEASE, metadata={"name": "evr-dry"}), query=[("dryRun", "All")]),
    Step("lease-delete", "DELETE", LEASES + "/evr-leader"),
    Step("lease-delete-again", "DELETE", LEASES + "/evr-leader"),
    # ---- watch: replay every pod event since the empty list, in order, with bookmarks
    Step("pods-watch", "GET", PODS, kind="watch", since="pods-list-empty",
         query=[("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "5")]),
    Step("pods-watch-now", "GET", PODS, kind="watch", query=[("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "4")]),
    # ---- clean up: node (Status answer), namespace (the object, Terminating)
    Step("node-delete", "DELETE", "/api/v1/nodes/%s" % NODE),
    Step("ns-delete", "DELETE", "/api/v1/namespaces/%s" % NS),
]

#: Every difference between the emulator and kube-apiserver 1.20 that the sequence shows and that is not fixed.
#: Key: a step id (the whole answer may differ) or "step-id@path" (only that part of the normalized answer: the path
#: and everything under it); fnmatch patterns ("node-*@...") name several steps. Value: why ("version: ..." when only the
#: Kubernetes version makes the difference, "not emulated: ..." for a controller or admission plugin the emulator lacks).
#: Mirrored by "Known differences from a real API server" in docs/emulator.md.
KNOWN_DIFFERENCES: Dict[str, str] = {
    "ns-create@body.metadata.labels": "version: the kubernetes.io/metadata.name label is set on namespaces from 1.21",
    "ns-delete@body.metadata.labels": "version: the kubernetes.io/metadata.name label is set on namespaces from 1.21",
    "node-create@body.spec.taints": "not emulated: the TaintNodesByCondition admission plugin's node.kubernetes.io/not-ready taint "
                                    "on a new node (and the node lifecycle controller that removes it once Ready)",
    "node-*@body.metadata.annotations": "not emulated: the TTL controller's node.alpha.kubernetes.io/ttl annotation",
    "node-*@body.items[0].metadata.annotations": "not emulated: the TTL controller's node.alpha.kubernetes.io/ttl annotation",
    "node-*@body.spec.taints": "not emulated: the node lifecycle controller's node.kubernetes.io/unschedulable taint on a cordoned "
                               "node (the emulator's scheduler treats spec.unschedulable as that taint)",
    "node-*@body.items[0].spec.taints": "not emulated: the node lifecycle controller's node.kubernetes.io/unschedulable taint",
    "node-uncordoned@body.metadata.resourceVersion": "not emulated: the lifecycle controller's removal of the unschedulable taint "
                                                     "writes the node once more",
    "pdb-create-v1beta1": "version: policy/v1beta1 PodDisruptionBudget is served up to 1.24 (the emulator models 1.3x)",
    "pdb-create-v1": "version: policy/v1 PodDisruptionBudget is served from 1.21",
    "pdb-allows-*@body.status.conditions": "version: the DisruptionAllowed condition is set from 1.21",
    "evict-b-policy-v1-body": "version: a policy/v1 Eviction body is accepted from 1.22 (1.20 answers 400 BadRequest)",
}


# ------------------------------------------------------------------------------------------------ playing


def _fill(value: Any, backend: str) -> Any:
    if isinstance(value, str):
        return value.replace("{policy}", POLICY[backend])
    if isinstance(value, dict):
        return {k: _fill(v, backend) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, backend) for v in value]
    return value


def _watch(api_client: Any, path: str, query: List[Tuple[str, str]]) -> Tuple[int, List[Dict[str, Any]]]:
    resp = rawapi.stream(api_client, "GET", path, query=query, timeout=60)
    if resp.status >= 400:
        return int(resp.status), [json.loads(resp.read() or b"{}")]
    events, buffer = [], b""
    for chunk in resp.response.stream(65536, decode_content=False):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        events.extend(json.loads(line) for line in lines if line.strip())
    resp.response.release_conn()
    return int(resp.status), events


def play(api_client: Any, backend: str, sequence: List[Step], timeout_s: float = 120.0) -> Dict[str, Tuple[int, Any]]:
    """Play ``sequence`` on one backend; returns step id -> (status, body) of every compared step."""
    ctx: Ctx = {}
    for step in sequence:
        if step.only and step.only != backend:
            continue
        path, query = _fill(step.path, backend), _fill(step.query, backend)
        body = step.body(ctx) if callable(step.body) else step.body
        body = _fill(body, backend)
        if step.kind == "watch":
            if step.since:
                query = list(query) + [("resourceVersion", ctx[step.since][1]["metadata"]["resourceVersion"])]
            ctx[step.id] = _watch(api_client, path, query)
            continue
        deadline = time.monotonic() + timeout_s
        while True:
            status, answer = rawapi.call_status(api_client, step.method, path, body, query, step.ctype)
            if step.until is None or step.until(status, answer):
                break
            if time.monotonic() > deadline:
                raise AssertionError("%s on %s: %s not reached in %.0f s (last: %s %s)"
                                     % (step.id, backend, step.path, timeout_s, status, json.dumps(answer)[:2000]))
            time.sleep(0.25)
        ctx[step.id] = (status, answer)
    return {k: v for k, v in ctx.items() if not any(s.id == k and s.only for s in sequence)}


class Heartbeat:
    """Renews the node's Lease in kube-node-lease (what a kubelet does), so a real node lifecycle controller keeps it Ready."""

    def __init__(self, api_client: Any, interval_s: float = 5.0) -> None:
        self.api, self.interval_s = api_client, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evr-heartbeat", daemon=True)
        self.errors: List[str] = []

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": NODE},
                 "spec": {"holderIdentity": NODE, "leaseDurationSeconds": 40}}
        while not self._stop.is_set():
            lease["spec"]["renewTime"] = _micro()
            status, answer = rawapi.call_status(self.api, "PATCH", "%s/%s" % (path, NODE), {"spec": {"renewTime": lease["spec"]["renewTime"]}},
                                                content_type=MERGE)
            if status == 404:
                status, answer = rawapi.call_status(self.api, "POST", path, lease)
            if status >= 400 and status != 404:
                self.errors.append("%s %s" % (status, answer.get("message")))
            self._stop.wait(self.interval_s)


# ------------------------------------------------------------------------------------------------ normalizing

_TIME_KEYS = re.compile(r"(Time|Timestamp|At)$")
_DROP_META = ("uid", "creationTimestamp", "managedFields", "selfLink", "generateName")


class Normalizer:
    """Drops what differs by nature (uids, times, managedFields, selfLink); a resourceVersion becomes whether it changed."""

    def __init__(self) -> None:
        self.versions: Dict[Tuple[str, str, str], str] = {}

    def answer(self, status: int, body: Any) -> Dict[str, Any]:
        """The comparable form of one answer."""
        return {"code": status, "body": self._value(body, "")}

    def _object_rv(self, obj: Dict[str, Any], rv: Any) -> str:
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind") or "")
        key = (kind if kind != "Status" else "", str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if not meta.get("name"):
            return "<set>" if rv else "<unset>"
        before = self.versions.get(key)
        self.versions[key] = str(rv)
        if before is None:
            return "<new>"
        return "<changed>" if before != str(rv) else "<same>"

    def _value(self, value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return self._object(value)
        if isinstance(value, list):
            return [self._value(v, key) for v in value]
        return value

    def _object(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key, value in obj.items():
            if key == "metadata" and isinstance(value, dict):
                out[key] = self._metadata(obj, value)
            elif key == "apiVersion" and value in ("policy/v1beta1", "policy/v1"):
                out[key] = "policy/<version>"
            elif _TIME_KEYS.search(key) and isinstance(value, str):
                out[key] = "<time>"
            elif key == "uid" and isinstance(value, str):
                out[key] = "<uid>"
            elif key == "items" and isinstance(value, list):
                out[key] = [self._object(i) if isinstance(i, dict) else i for i in value]
            else:
                out[key] = self._value(value, key)
        return out

    def _metadata(self, obj: Dict[str, Any], meta: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key, value in meta.items():
            if key in _DROP_META:
                continue
            if key == "resourceVersion":
                out[key] = self._object_rv(obj, value) if "items" not in obj else "<list>"
            elif key in ("deletionTimestamp", "creationTimestamp"):
                out[key] = "<time>"
            elif key == "continue":
                out[key] = "<token>"
            else:
                out[key] = self._value(value, key)
        return out

    def watch(self, status: int, events: List[Dict[str, Any]]) -> Dict[str, Any]:
        """A watch stream's events in order (type, pod name, phase, Ready, terminating, grace period); of its bookmarks
        only what holds whenever one comes (when they come is the server's choice: kube-apiserver 1.20 sends one just
        before timeoutSeconds, and none to a watch started ahead of its watch cache; the emulator every idle second)."""
        if status >= 400:
            return self.answer(status, events[0] if events else {})
        seen: List[Any] = []
        last_rv, order_ok, marks_ok = 0, True, True
        for event in events:
            obj = event.get("object") or {}
            meta = obj.get("metadata") or {}
            rv = int(meta.get("resourceVersion") or 0)
            order_ok = order_ok and rv >= last_rv
            last_rv = max(last_rv, rv)
            if event.get("type") == "BOOKMARK":
                marks_ok = marks_ok and rv > 0 and obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1" and not meta.get("name")
                continue
            status_ = obj.get("status") or {}
            ready = [c.get("status") for c in status_.get("conditions") or () if c.get("type") == "Ready"]
            seen.append([event.get("type"), meta.get("name"), status_.get("phase"), ready[0] if ready else None,
                         bool(meta.get("deletionTimestamp")), meta.get("deletionGracePeriodSeconds")])
        return {"code": status, "body": {"events": seen, "resourceVersions ascending": order_ok,
                                         "bookmarks are Pod kind with a resourceVersion only": marks_ok}}


def normalize(sequence: List[Step], answers: Dict[str, Tuple[int, Any]]) -> Dict[str, Any]:
    """step id -> comparable answer, in sequence order."""
    norm = Normalizer()
    out: Dict[str, Any] = {}
    for step in sequence:
        if step.id not in answers:
            continue
        status, body = answers[step.id]
        out[step.id] = norm.watch(status, body) if step.kind == "watch" else norm.answer(status, body)
    return out


def differences(real: Any, emu: Any, path: str = "") -> List[Tuple[str, Any, Any]]:
    """(path, real value, emulator value) for every place the two normalized answers differ."""
    if isinstance(real, dict) and isinstance(emu, dict):
        out: List[Tuple[str, Any, Any]] = []
        for key in sorted(set(real) | set(emu), key=str):
            sub = "%s.%s" % (path, key) if path else str(key)
            if key not in real:
                out.append((sub, "<absent>", emu[key]))
            elif key not in emu:
                out.append((sub, real[key], "<absent>"))
            else:
                out.extend(differences(real[key], emu[key], sub))
        return out
    if isinstance(real, list) and isinstance(emu, list) and len(real) == len(emu):
        out = []
        for index, (left, right) in enumerate(zip(real, emu)):
            out.extend(differences(left, right, "%s[%d]" % (path, index)))
        return out
    return [] if real == emu else [(path, real, emu)]


def _covers(key: str, step_id: str, where: str) -> bool:
    """Does the known-difference ``key`` (a step id, or "step@path"; ``*`` matches anything, ``[`` is literal) cover ``where``?"""
    pattern = key.replace("[", "[[]")
    if "@" not in key:
        return fnmatch.fnmatchcase(step_id, pattern)
    return any(fnmatch.fnmatchcase(where, pattern + suffix) for suffix in ("", ".*", "[[]*"))


def compare(sequence: List[Step], real: Dict[str, Any], emu: Dict[str, Any],
            known: Dict[str, str]) -> Tuple[List[str], List[str], Dict[str, List[str]]]:
    """(unexplained differences, known entries that no longer match anything, known entry -> the differences it covers)."""
    unexplained: List[str] = []
    used: Dict[str, List[str]] = {}
    for step in sequence:
        if step.only:
            continue
        for path, left, right in differences(real.get(step.id), emu.get(step.id)):
            where = "%s@%s" % (step.id, path) if path else step.id
            text = "%s: real=%s emulator=%s" % (where, json.dumps(left, sort_keys=True)[:400], json.dumps(right, sort_keys=True)[:400])
            entry = next((k for k in known if _covers(k, step.id, where)), None)
            if entry is None:
                unexplained.append(text)
            else:
                used.setdefault(entry, []).append(text)
    stale = [k for k in known if k not in used]
    return unexplained, stale, used


# ------------------------------------------------------------------------------------------------ the test


def _run_backend(api_client: Any, backend: str) -> Dict[str, Any]:
    with Heartbeat(api_client) as beat:
        answers = play(api_client, backend, SEQUENCE)
    assert not beat.errors, beat.errors
    return normalize(SEQUENCE, answers)


def test_step_ids_and_known_differences_are_consistent():
    ids = [s.id for s in SEQUENCE]
    assert len(ids) == len(set(ids)), "duplicate step ids"
    for key in KNOWN_DIFFERENCES:
        assert fnmatch.filter(ids, key.split("@")[0]), "known difference %r names no step" % key
        assert KNOWN_DIFFERENCES[key].strip(), "known difference %r has no reason" % key


def test_emulator_answers_like_a_real_apiserver(real_cluster, k8s_emulator_factory):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator_factory(time_scale=1.0, kubelet_start_delay_s=3600.0)
    from kubernetes import config  # pylint: disable=import-outside-toplevel

    emu_client = config.new_client_from_config(config_file=emu.kubeconfig_path)
    real_client = real_cluster.api_client()
    try:
        real = _run_backend(real_client, "real")
        emulated = _run_backend(emu_client, "emulator")
    finally:
        emu_client.close()
        real_client.close()
    unexplained, stale, _used = compare(SEQUENCE, real, emulated, KNOWN_DIFFERENCES)
    assert not unexplained, "differences not in KNOWN_DIFFERENCES:\n" + "\n".join(unexplained)
    assert not stale, "KNOWN_DIFFERENCES entries that no longer differ (remove them here and in docs/emulator.md): %s" % stale
