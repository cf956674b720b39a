# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The in-memory object store: CRUD with resourceVersion concurrency, indexes, watch fan-out and an event ring buffer.

Stored objects are never mutated in place: every change stores a new dict (copy-on-write), so readers may
serialise a stored object outside the lock.
"""
from __future__ import annotations

import collections
import queue
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from . import errors
from .errors import ApiError
from .objects import apply_defaults, fill_zero_fields, tracks_generation, validate
from .patches import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, json_patch, merge_patch, strategic_merge_patch
from .resources import ResourceRegistry, ResourceType
from .selectors import FieldSelector, LabelSelector, field_value, fields_match, labels_match
from .util import deep_copy, now_rfc3339, random_suffix

Key = tuple[str, str, str]  # (storage, namespace, name)
Listener = Callable[[str, str, dict[str, Any], "dict[str, Any] | None"], None]


@dataclass(eq=False)
class Watcher:
    """One open watch: what it filters on and the queue its events go to."""

    rt: ResourceType
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    queue: "queue.SimpleQueue[tuple[str, dict[str, Any]] | None]" = field(default_factory=queue.SimpleQueue)

    def matches(self, obj: dict[str, Any] | None) -> bool:
        """Does ``obj`` pass this watch's namespace and selectors?"""
        if obj is None:
            return False
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        if self.labels and not labels_match(self.labels, meta.get("labels")):
            return False
        if self.fields and not fields_match(self.fields, obj):
            return False
        return True

    def offer(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Queue the event, turned into ADDED/DELETED when the object enters/leaves the selection."""
        new_match = etype != "DELETED" and self.matches(obj)
        if etype == "DELETED":
            if self.matches(obj):
                self.queue.put(("DELETED", obj))
            return
        old_match = old is not None and self.matches(old)
        if etype == "ADDED":
            if new_match:
                self.queue.put(("ADDED", obj))
        elif new_match and old_match:
            self.queue.put(("MODIFIED", obj))
        elif new_match:
            self.queue.put(("ADDED", obj))
        elif old_match:
            self.queue.put(("DELETED", obj))


#: metadata fields Go serialises with omitempty: an empty map or list is not returned
_OMIT_EMPTY_META = ("labels", "annotations", "finalizers", "ownerReferences")


def _drop_empty_meta(meta: dict[str, Any]) -> None:
    for key in _OMIT_EMPTY_META:
        if key in meta and not meta[key]:
            del meta[key]


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def convert_event(obj: dict[str, Any], rt: ResourceType) -> dict[str, Any]:
    """Present a stored Event in the other API group's shape (core/v1 <-> events.k8s.io/v1)."""
    if obj.get("apiVersion") == rt.api_version:
        return obj
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    out["apiVersion"], out["kind"] = rt.api_version, "Event"
    pairs = [("involvedObject", "regarding"), ("message", "note"), ("source", "deprecatedSource"),
             ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
             ("count", "deprecatedCount"), ("reportingComponent", "reportingController")]
    for core, new in pairs:
        src, dst = (core, new) if rt.group else (new, core)
        if src in out:
            out[dst] = out.pop(src)
    if rt.group and not out.get("eventTime"):
        # events.k8s.io/v1 requires eventTime; core events created without one get their first/creation timestamp
        stamp = out.get("deprecatedFirstTimestamp") or out["metadata"].get("creationTimestamp", "")
        out["eventTime"] = stamp.replace("Z", ".000000Z") if stamp.endswith("Z") and "." not in stamp else stamp
    return out


class Store:
    """Thread-safe object store with namespace / node / owner indexes and watch support."""

    def __init__(self, registry: ResourceRegistry, history_size: int = 20000) -> None:
        self.registry = registry
        self.lock = threading.RLock()
        self._rv = 1000
        self._data: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self._pods_by_node: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._by_owner: dict[str, set[Key]] = {}
        self._history: collections.deque[tuple[int, str, str, dict[str, Any], dict[str, Any] | None]] = \
            collections.deque(maxlen=history_size)
        self._floor = 0
        self._watchers: dict[str, set[Watcher]] = {}
        self.listeners: list[Listener] = []

    # ------------------------------------------------------------------ basics

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion."""
        return self._rv

    def _bucket(self, rt: ResourceType, namespace: str) -> dict[str, dict[str, Any]]:
        return self._data.setdefault(rt.store_name, {}).setdefault(namespace if rt.namespaced else "", {})

    def _ns(self, rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "") if rt.namespaced else ""

    def present(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The stored object as the type ``rt`` serves it (only events differ between groups)."""
        if rt.storage == "events":
            return convert_event(obj, rt)
        return obj

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        """The stored object (do not mutate it); 404 if missing."""
        obj = self._data.get(rt.store_name, {}).get(self._ns(rt, namespace), {}).get(name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return self.present(rt, obj)

    def find(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The stored object or None."""
        obj = self._data.get(rt.store_name, {}).get(self._ns(rt, namespace), {}).get(name)
        return None if obj is None else self.present(rt, obj)

    def iter_objects(self, rt: ResourceType, namespace: str | None = None) -> Iterable[dict[str, Any]]:
        """Snapshot of the stored objects of a type (optionally one namespace)."""
        with self.lock:
            coll = self._data.get(rt.store_name, {})
            if rt.namespaced and namespace:
                return list(coll.get(namespace, {}).values())
            return [obj for bucket in list(coll.values()) for obj in bucket.values()]

    def pods_on_node(self, node: str) -> list[dict[str, Any]]:
        """Pods bound to ``node`` (index lookup)."""
        with self.lock:
            return list(self._pods_by_node.get(node, {}).values())

    def dependents(self, uid: str) -> list[Key]:
        """Keys of objects whose ownerReferences name ``uid``."""
        with self.lock:
            return list(self._by_owner.get(uid, ()))

    def get_key(self, key: Key) -> dict[str, Any] | None:
        """Object by store key."""
        return self._data.get(key[0], {}).get(key[1], {}).get(key[2])

    def list(self, rt: ResourceType, namespace: str | None, labels: LabelSelector = (),
             fields: FieldSelector = ()) -> tuple[list[dict[str, Any]], int]:
        """Matching objects sorted by namespace/name, and the resourceVersion of the snapshot."""
        with self.lock:
            rv = self._rv
            node = field_value(fields, "spec.nodeName") if rt.store_name == "pods" else None
            name = field_value(fields, "metadata.name")
            if node is not None and node != "":
                candidates: Iterable[dict[str, Any]] = list(self._pods_by_node.get(node, {}).values())
            elif name is not None:
                coll = self._data.get(rt.store_name, {})
                if rt.namespaced and namespace:
                    found = coll.get(namespace, {}).get(name)
                    candidates = [found] if found else []
                else:
                    candidates = [b[name] for b in coll.values() if name in b]
            else:
                candidates = self.iter_objects(rt, namespace)
        out = []
        for obj in candidates:
            meta = obj["metadata"]
            if namespace and rt.namespaced and meta.get("namespace") != namespace:
                continue
            if labels and not labels_match(labels, meta.get("labels")):
                continue
            if fields and not fields_match(fields, obj):
                continue
            out.append(self.present(rt, obj))
        out.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return out, rv

    # ------------------------------------------------------------------ internal commit

    def _index(self, storage: str, obj: dict[str, Any], add: bool) -> None:
        meta = obj["metadata"]
        key = (storage, meta.get("namespace", ""), meta["name"])
        for ref in meta.get("ownerReferences") or ():
            uid = ref.get("uid")
            if not uid:
                continue
            if add:
                self._by_owner.setdefault(uid, set()).add(key)
            else:
                owned = self._by_owner.get(uid)
                if owned is not None:
                    owned.discard(key)
                    if not owned:
                        del self._by_owner[uid]
        if key[0] == "pods":
            node = (obj.get("spec") or {}).get("nodeName")
            if node:
                if add:
                    self._pods_by_node.setdefault(node, {})[(key[1], key[2])] = obj
                else:
                    bucket = self._pods_by_node.get(node)
                    if bucket is not None:
                        bucket.pop((key[1], key[2]), None)
                        if not bucket:
                            del self._pods_by_node[node]

    def _commit(self, rt: ResourceType, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """Store ``obj`` (ADDED/MODIFIED) or drop it (DELETED); bump the resourceVersion; notify watchers and listeners."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        meta = obj["metadata"]
        if etype != "DELETED" and rt.kind in ("Pod", "Node"):
            fill_zero_fields(rt.kind, obj)
        bucket = self._bucket(rt, meta.get("namespace", ""))
        storage = rt.store_name
        if old is not None:
            self._index(storage, old, add=False)
        if etype == "DELETED":
            bucket.pop(meta["name"], None)
        else:
            bucket[meta["name"]] = obj
            self._index(storage, obj, add=True)
        if len(self._history) == self._history.maxlen:
            self._floor = self._history[0][0]
        self._history.append((self._rv, storage, etype, obj, old))
        for watcher in self._watchers.get(storage, ()):
            watcher.offer(etype, self.present(watcher.rt, obj), None if old is None else self.present(watcher.rt, old))
        for listener in self.listeners:
            listener(etype, storage, obj, old)
        return obj

    # ------------------------------------------------------------------ create

    def _check_body(self, rt: ResourceType, body: Any, namespace: str | None) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request(f"the body of the request was in an unknown format - expected a {rt.kind} object")
        api_version = body.get("apiVersion")
        kind = body.get("kind")
        if api_version and api_version != rt.api_version:
            raise errors.bad_request(f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})")
        if kind and kind != rt.kind:
            raise errors.bad_request(f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                                     f"the object provided is unrecognized (kind {kind!r}, expected {rt.kind!r})")
        obj = deep_copy(body)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if rt.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        return obj

    def _check_namespace(self, rt: ResourceType, namespace: str) -> None:
        if not rt.namespaced:
            return
        ns = self._data.get("namespaces", {}).get("", {}).get(namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise ApiError(403, f"{rt.resource_label} \"\" is forbidden: unable to create new content in namespace {namespace} "
                                "because it is being terminated", "Forbidden",
                           {"kind": rt.plural, "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                                           "message": f"namespace {namespace} is being terminated"}]})

    def create(self, rt: ResourceType, namespace: str | None, body: Any, dry_run: bool = False) -> dict[str, Any]:
        """POST semantics: validate, default, 409 if it exists, 404 if the namespace is missing."""
        with self.lock:
            obj = self._check_body(rt, body, namespace)
            meta = obj["metadata"]
            if not meta.get("name"):
                if meta.get("generateName"):
                    meta["name"] = f"{meta['generateName']}{random_suffix()}"
                else:
                    raise errors.invalid(rt.kind, rt.group, "", [("metadata.name", "FieldValueRequired",
                                                                  "Required value: name or generateName is required")])
            for transient in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(transient, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            if tracks_generation(rt):
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            _drop_empty_meta(meta)
            validate(rt, obj)
            self._check_namespace(rt, meta.get("namespace", ""))
            if self._bucket(rt, meta.get("namespace", "")).get(meta["name"]) is not None:
                raise errors.already_exists(rt.plural, rt.group, meta["name"])
            apply_defaults(rt, obj)
            if dry_run:
                if rt.kind in ("Pod", "Node"):
                    fill_zero_fields(rt.kind, obj)
                return obj
            return self._commit(rt, "ADDED", obj, None)

    # ------------------------------------------------------------------ update / patch

    def _merge_update(self, rt: ResourceType, current: dict[str, Any], new: dict[str, Any], subresource: str | None) -> dict[str, Any]:
        """Carry over immutable metadata and enforce the status-subresource split."""
        meta, cur_meta = new["metadata"], current["metadata"]
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if key in cur_meta:
                meta[key] = cur_meta[key]
            else:
                meta.pop(key, None)
        if rt.namespaced:
            meta["namespace"] = cur_meta.get("namespace")
        if subresource == "status":
            out = deep_copy(current)
            out["status"] = new.get("status")
            if out["status"] is None:
                out.pop("status")
            if rt.kind in ("Pod", "Node"):  # their status strategies keep only the spec: labels and annotations pass through
                for key in ("labels", "annotations"):
                    if meta.get(key):
                        out["metadata"][key] = meta[key]
                    else:
                        out["metadata"].pop(key, None)
            return out
        if "status" in rt.subresources:
            if "status" in current:
                new["status"] = current["status"]
            else:
                new.pop("status", None)
        if _spec_part(new) != _spec_part(current) and tracks_generation(rt):
            meta["generation"] = int(cur_meta.get("generation", 1)) + 1
        _drop_empty_meta(meta)
        return new

    def update(self, rt: ResourceType, namespace: str | None, name: str, body: Any, dry_run: bool = False,
               subresource: str | None = None, create_missing: bool = False) -> dict[str, Any]:
        """PUT semantics with optimistic concurrency (a stale ``metadata.resourceVersion`` -> 409 Conflict)."""
        with self.lock:
            obj = self._check_body(rt, body, namespace)
            meta = obj["metadata"]
            if meta.get("name") and meta["name"] != name:
                raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
            meta["name"] = name
            current = self.find(rt, namespace, name)
            if current is None:
                if create_missing and subresource is None:
                    return self.create(rt, namespace, obj, dry_run)
                raise errors.not_found(rt.plural, rt.group, name)
            sent_rv = meta.get("resourceVersion")
            if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name, errors.STALE_OBJECT)
            return self._store_update(rt, current, obj, dry_run, subresource)

    def _store_update(self, rt: ResourceType, current: dict[str, Any], new: dict[str, Any], dry_run: bool,
                      subresource: str | None) -> dict[str, Any]:
        new = self._merge_update(rt, current, new, subresource)
        validate(rt, new)
        if dry_run:
            new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            return new
        stored = self._commit(rt, "MODIFIED", new, self._data[rt.store_name][self._ns(rt, current["metadata"].get("namespace"))]
                              [current["metadata"]["name"]])
        self._finish_if_done(rt, stored)
        return stored

    def patch(self, rt: ResourceType, namespace: str | None, name: str, patch_type: str, patch: Any,
              dry_run: bool = False, subresource: str | None = None) -> dict[str, Any]:
        """PATCH with merge / strategic merge / JSON patch (and server-side apply approximated as a merge)."""
        with self.lock:
            current = self.find(rt, namespace, name)
            if current is None:
                if patch_type == APPLY_PATCH and subresource is None:
                    body = dict(patch) if isinstance(patch, dict) else patch
                    return self.create(rt, namespace, body, dry_run)
                raise errors.not_found(rt.plural, rt.group, name)
            if patch_type == MERGE_PATCH or patch_type == APPLY_PATCH:
                if not isinstance(patch, dict):
                    raise errors.bad_request("merge patch must be a JSON object")
                patched = merge_patch(current, patch)
            elif patch_type == STRATEGIC_PATCH:
                if rt.custom:
                    raise ApiError(415, f"strategic merge patch is not supported for {rt.api_version}, Kind={rt.kind}",
                                   "UnsupportedMediaType")
                patched = strategic_merge_patch(current, patch)
            elif patch_type == JSON_PATCH:
                patched = json_patch(current, patch)
            else:
                raise ApiError(415, f"the body of the request was in an unknown format - accepted media types include: "
                                    f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_PATCH}, {APPLY_PATCH}", "UnsupportedMediaType")
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch result is not an object")
            patched.setdefault("metadata", {})
            sent_rv = patched["metadata"].get("resourceVersion")
            if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name, errors.STALE_OBJECT)
            if patched.get("apiVersion") != rt.api_version or patched.get("kind") != rt.kind:
                raise errors.bad_request("the patch may not change apiVersion or kind")
            patched["metadata"]["name"] = name
            return self._store_update(rt, current, patched, dry_run, subresource)

    def mutate(self, rt: ResourceType, namespace: str | None, name: str,
               change: Callable[[dict[str, Any]], bool | None]) -> dict[str, Any] | None:
        """Controller-side update: ``change`` edits a copy (return False for no change); no rv check, no status split."""
        with self.lock:
            current = self.find(rt, namespace, name)
            if current is None:
                return None
            new = deep_copy(current)
            if change(new) is False or new == current:
                return current
            if _spec_part(new) != _spec_part(current) and tracks_generation(rt):
                new["metadata"]["generation"] = int(current["metadata"].get("generation", 1)) + 1
            stored = self._commit(rt, "MODIFIED", new, current)
            self._finish_if_done(rt, stored)
            return stored

    def insert(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Seed a fully formed object (no validation; uid/timestamps filled when missing). Used for bulk seeding."""
        with self.lock:
            meta = obj.setdefault("metadata", {})
            obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_rfc3339())
            if tracks_generation(rt):
                meta.setdefault("generation", 1)
            if rt.namespaced:
                meta.setdefault("namespace", "default")
            old = self._bucket(rt, meta.get("namespace", "")).get(meta["name"])
            return self._commit(rt, "ADDED" if old is None else "MODIFIED", obj, old)

    # ------------------------------------------------------------------ delete

    def _graceful(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        """Pods bound to a node and not terminal wait for the kubelet (deletionGracePeriodSeconds > 0)."""
        if rt.store_name != "pods":
            return False
        meta = obj["metadata"]
        return bool(obj.get("spec", {}).get("nodeName")) and obj.get("status", {}).get("phase") not in ("Succeeded", "Failed") \
            and int(meta.get("deletionGracePeriodSeconds") or 0) > 0

    def _finish_if_done(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Remove an object whose deletion was pending once nothing holds it any more (finalizers, kubelet, namespace purge)."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not self._graceful(rt, obj) and rt.kind != "Namespace":
            self._remove(rt, obj)

    def _remove(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        gone = dict(obj)
        gone["metadata"] = dict(obj["metadata"])
        return self._commit(rt, "DELETED", gone, obj)

    def remove_now(self, rt: ResourceType, namespace: str | None, name: str, uid: str | None = None) -> bool:
        """Drop an object immediately (kubelet finishing a graceful delete, GC); False if gone or the uid differs."""
        with self.lock:
            current = self._data.get(rt.store_name, {}).get(self._ns(rt, namespace), {}).get(name)
            if current is None or (uid and current["metadata"]["uid"] != uid):
                return False
            self._remove(rt, current)
            return True

    def delete(self, rt: ResourceType, namespace: str | None, name: str, options: dict[str, Any] | None = None,
               dry_run: bool = False) -> tuple[dict[str, Any], bool]:
        """DELETE semantics: returns (object, finished). Pods bound to nodes and objects with finalizers only get a deletionTimestamp."""
        options = options or {}
        with self.lock:
            current = self.find(rt, namespace, name)
            if current is None:
                raise errors.not_found(rt.plural, rt.group, name)
            pre = options.get("preconditions") or {}
            meta = current["metadata"]
            if pre.get("uid") and pre["uid"] != meta["uid"]:
                raise errors.conflict(rt.plural, rt.group, name,
                                      f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta['uid']}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name,
                                      f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                                      f"ResourceVersion in object meta: {meta['resourceVersion']}")
            grace = options.get("gracePeriodSeconds")
            if grace is None and rt.store_name == "pods":
                grace = current.get("spec", {}).get("terminationGracePeriodSeconds", 30)
            grace = int(grace or 0)
            propagation = options.get("propagationPolicy") or ("Orphan" if options.get("orphanDependents") else "Background")
            pending = bool(meta.get("finalizers")) or rt.kind == "Namespace"
            pod_graceful = (rt.store_name == "pods" and grace > 0 and bool(current.get("spec", {}).get("nodeName"))
                            and current.get("status", {}).get("phase") not in ("Succeeded", "Failed"))
            terminating_pod = rt.store_name == "pods" and bool(meta.get("deletionTimestamp")) and \
                int(meta.get("deletionGracePeriodSeconds") or 0) > 0 and grace == 0
            if dry_run:
                if (pending or pod_graceful) and not meta.get("deletionTimestamp"):  # what the delete would have written
                    would = deep_copy(current)
                    would["metadata"]["deletionTimestamp"] = now_rfc3339()
                    if pod_graceful:
                        would["metadata"]["deletionGracePeriodSeconds"] = grace
                    elif rt.kind != "Namespace":
                        would["metadata"].setdefault("deletionGracePeriodSeconds", 0)
                    return would, False
                return current, not (pending or pod_graceful)
            if propagation == "Orphan":
                self._orphan_dependents(meta["uid"])
            if pending or pod_graceful:
                existing_grace = meta.get("deletionGracePeriodSeconds")
                if meta.get("deletionTimestamp") and (not pod_graceful or (existing_grace is not None and existing_grace <= grace)):
                    return current, False
                new = deep_copy(current)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                if pod_graceful:
                    new["metadata"]["deletionGracePeriodSeconds"] = grace
                elif rt.kind != "Namespace":  # the namespace REST delete sets only the deletionTimestamp
                    new["metadata"].setdefault("deletionGracePeriodSeconds", 0)
                if rt.kind == "Namespace":
                    new.setdefault("status", {})["phase"] = "Terminating"
                if propagation == "Foreground":
                    fins = new["metadata"].setdefault("finalizers", [])
                    if "foregroundDeletion" not in fins and self._by_owner.get(meta["uid"]):
                        fins.append("foregroundDeletion")
                return self._commit(rt, "MODIFIED", new, self._data[rt.store_name][self._ns(rt, namespace)][name]), False
            if propagation == "Foreground" and self._by_owner.get(meta["uid"]):
                new = deep_copy(current)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                new["metadata"]["finalizers"] = ["foregroundDeletion"]
                return self._commit(rt, "MODIFIED", new, self._data[rt.store_name][self._ns(rt, namespace)][name]), False
            stored = self._data[rt.store_name][self._ns(rt, namespace)][name]
            if terminating_pod and not meta.get("finalizers"):
                # a terminating pod's grace period shortened to 0 (the kubelet's final delete): the apiserver first writes
                # the new grace period (MODIFIED), then deletes (DELETED), both carrying deletionGracePeriodSeconds 0
                new = deep_copy(stored)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                stored = self._commit(rt, "MODIFIED", new, stored)
            gone = self._remove(rt, stored)
            return self.present(rt, gone), True

    def _orphan_dependents(self, uid: str) -> None:
        for key in list(self._by_owner.get(uid, ())):
            obj = self.get_key(key)
            if obj is None:
                continue
            dep_rt = self.registry.by_kind(obj["apiVersion"], obj["kind"])
            if dep_rt is None:
                continue
            new = deep_copy(obj)
            new["metadata"]["ownerReferences"] = [r for r in new["metadata"].get("ownerReferences") or () if r.get("uid") != uid]
            if not new["metadata"]["ownerReferences"]:
                del new["metadata"]["ownerReferences"]
            self._commit(dep_rt, "MODIFIED", new, obj)

    # ------------------------------------------------------------------ watch

    def watch(self, rt: ResourceType, namespace: str | None, labels: LabelSelector, fields: FieldSelector,
              resource_version: str | None) -> Watcher:
        """Register a watcher; replay history after ``resource_version`` (410 Gone if too old) or send current objects as ADDED."""
        with self.lock:
            watcher = Watcher(rt, namespace if rt.namespaced else None, labels, fields)
            if resource_version in (None, "", "0"):
                for obj in self.list(rt, namespace, labels, fields)[0]:
                    watcher.queue.put(("ADDED", obj))
            else:
                try:
                    since = int(resource_version)
                except ValueError as exc:
                    raise errors.bad_request(f"invalid resource version {resource_version!r}") from exc
                if since < self._floor:
                    raise ApiError(410, f"too old resource version: {since} ({self._floor + 1})", "Expired")
                storage = rt.store_name
                for rv, st, etype, obj, old in self._history:
                    if rv > since and st == storage:
                        watcher.offer(etype, self.present(rt, obj), None if old is None else self.present(rt, old))
            self._watchers.setdefault(rt.store_name, set()).add(watcher)
            return watcher

    def unwatch(self, watcher: Watcher) -> None:
        """Stop delivering to ``watcher``."""
        with self.lock:
            self._watchers.get(watcher.rt.store_name, set()).discard(watcher)

    def close_watchers(self) -> None:
        """Wake every watcher with a ``None`` sentinel (server shutdown)."""
        with self.lock:
            for watchers in self._watchers.values():
                for watcher in watchers:
                    watcher.queue.put(None)

    def watcher_count(self) -> int:
        """Number of open watches."""
        with self.lock:
            return sum(len(w) for w in self._watchers.values())

    def count(self, rt: ResourceType) -> int:
        """Number of stored objects of a type."""
        with self.lock:
            return sum(len(b) for b in self._data.get(rt.store_name, {}).values())
