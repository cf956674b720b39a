# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The resource types the emulator serves (built-in kinds, Argo CD / Flux kinds, registered CRDs) and their discovery documents."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One served resource: ``group/version`` + ``plural`` (``kind``), its scope and subresources."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    custom: bool = False
    #: objects of types with the same storage name share one collection (core/v1 and events.k8s.io/v1 events)
    storage: str = ""
    verbs: tuple[str, ...] = ALL_VERBS

    @property
    def api_version(self) -> str:
        """``v1`` or ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        """Lower-case kind, as discovery reports ``singularName``."""
        return self.kind.lower()

    @property
    def store_name(self) -> str:
        """The collection key in the store."""
        if self.storage:
            return self.storage
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def resource_label(self) -> str:
        """``plural`` or ``plural.group`` as the apiserver prints it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _rt(group: str, version: str, plural: str, kind: str, namespaced: bool, short: tuple[str, ...] = (),
        sub: tuple[str, ...] = (), custom: bool = False, storage: str = "", categories: tuple[str, ...] = ()) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, short, sub, categories, custom, storage)


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _rt("", "v1", "namespaces", "Namespace", False, ("ns",), ("status", "finalize")),
    _rt("", "v1", "nodes", "Node", False, ("no",), ("status",)),
    _rt("", "v1", "pods", "Pod", True, ("po",), ("status", "eviction", "log"), categories=("all",)),
    _rt("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    _rt("", "v1", "secrets", "Secret", True),
    _rt("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    _rt("", "v1", "services", "Service", True, ("svc",), ("status",), categories=("all",)),
    _rt("", "v1", "events", "Event", True, ("ev",), storage="events"),
    _rt("events.k8s.io", "v1", "events", "Event", True, ("ev",), storage="events"),
    _rt("coordination.k8s.io", "v1", "leases", "Lease", True),
    _rt("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ("status",)),
    _rt("apps", "v1", "deployments", "Deployment", True, ("deploy",), ("status", "scale"), categories=("all",)),
    _rt("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("status", "scale"), categories=("all",)),
    _rt("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), ("status", "scale"), categories=("all",)),
    _rt("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), ("status",), categories=("all",)),
    _rt("batch", "v1", "jobs", "Job", True, (), ("status",), categories=("all",)),
    _rt("batch", "v1", "cronjobs", "CronJob", True, ("cj",), ("status",), categories=("all",)),
    _rt("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _rt("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _rt("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _rt("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _rt("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False, ("crd", "crds"), ("status",)),
    _rt("argoproj.io", "v1alpha1", "applications", "Application", True, ("app", "apps"), custom=True),
    _rt("argoproj.io", "v1alpha1", "appprojects", "AppProject", True, ("appproj", "appprojs"), custom=True),
    _rt("helm.toolkit.fluxcd.io", "v2", "helmreleases", "HelmRelease", True, ("hr",), ("status",), custom=True),
    _rt("source.toolkit.fluxcd.io", "v1", "helmrepositories", "HelmRepository", True, ("helmrepo",), ("status",), custom=True),
    _rt("source.toolkit.fluxcd.io", "v1", "gitrepositories", "GitRepository", True, ("gitrepo",), ("status",), custom=True),
    _rt("source.toolkit.fluxcd.io", "v1", "ocirepositories", "OCIRepository", True, ("ocirepo",), ("status",), custom=True),
)

#: extra entries in an APIResourceList for subresources whose kind is not the parent's
_SUBRESOURCE_DOCS: dict[str, dict[str, Any]] = {
    "eviction": {"group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]},
    "scale": {"group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]},
    "log": {"verbs": ["get"]},
    "status": {"verbs": ["get", "patch", "update"]},
    "finalize": {"verbs": ["update"]},
}

#: preferred version of each group, as /apis reports it
_GROUP_ORDER = ("", "apps", "events.k8s.io", "batch", "policy", "coordination.k8s.io", "rbac.authorization.k8s.io", "apiextensions.k8s.io")


@dataclass
class ResourceRegistry:
    """Thread-safe registry of served resource types, indexed by group/version/plural and by apiVersion/kind."""

    _types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def with_builtins(cls) -> "ResourceRegistry":
        """A registry pre-filled with :data:`BUILTIN_TYPES`."""
        reg = cls()
        for rt in BUILTIN_TYPES:
            reg.register(rt)
        return reg

    def register(self, rt: ResourceType) -> ResourceType:
        """Add (or replace) a type."""
        with self._lock:
            self._types[(rt.group, rt.version, rt.plural)] = rt
        return rt

    def unregister(self, group: str, version: str, plural: str) -> None:
        """Remove a type (a deleted CRD)."""
        with self._lock:
            self._types.pop((group, version, plural), None)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """Type by URL coordinates."""
        return self._types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """Type by ``apiVersion`` + ``kind``."""
        group, _sep, version = api_version.rpartition("/")
        for rt in list(self._types.values()):
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def all(self) -> list[ResourceType]:
        """All types."""
        return list(self._types.values())

    def groups(self) -> dict[str, list[str]]:
        """``{group: [versions]}`` in discovery order (core group is ``""``)."""
        out: dict[str, list[str]] = {}
        for rt in sorted(self.all(), key=lambda r: (_GROUP_ORDER.index(r.group) if r.group in _GROUP_ORDER else 99, r.group)):
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return out

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """The ``APIResourceList`` for ``group/version`` (None if nothing is served there)."""
        types = [rt for rt in self.all() if rt.group == group and rt.version == version]
        if not types:
            return None
        resources: list[dict[str, Any]] = []
        for rt in sorted(types, key=lambda r: r.plural):
            entry: dict[str, Any] = {
                "name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
                "verbs": list(rt.verbs),
            }
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            resources.append(entry)
            for sub in rt.subresources:
                doc = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced, "kind": rt.kind}
                doc.update(_SUBRESOURCE_DOCS.get(sub, {"verbs": ["get"]}))
                resources.append(doc)
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}

    def group_doc(self, group: str) -> dict[str, Any] | None:
        """The ``APIGroup`` document for one named group."""
        versions = self.groups().get(group)
        if not versions or not group:
            return None
        vers = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": vers, "preferredVersion": vers[0]}

    def group_list(self) -> dict[str, Any]:
        """The ``APIGroupList`` served at ``/apis``."""
        groups = []
        for group in self.groups():
            if group:
                doc = self.group_doc(group)
                if doc:
                    doc = dict(doc)
                    doc.pop("kind")
                    doc.pop("apiVersion")
                    groups.append(doc)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
