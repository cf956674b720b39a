# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""In-process access to the emulator's store by ``apiVersion``/``kind`` (seeding and assertions without HTTP)."""
from __future__ import annotations

from typing import Any

from .disruption import DisruptionLogic
from .patches import MERGE_PATCH
from .resources import ResourceRegistry, ResourceType
from .selectors import parse_field_selector, parse_label_selector
from .store import Store
from .util import deep_copy


class StoreApi:
    """Direct store calls; everything returned is a copy the caller may modify."""

    def __init__(self, store: Store, registry: ResourceRegistry, disruption: DisruptionLogic) -> None:
        self.store = store
        self.registry = registry
        self.disruption = disruption

    def rt(self, api_version: str, kind: str) -> ResourceType:
        """The served type for apiVersion/kind; KeyError naming both if unknown."""
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            raise KeyError(f"the emulator serves no kind {kind!r} in apiVersion {api_version!r}")
        return rt

    def create(self, obj: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """Create like POST (validation, defaults, namespace check)."""
        rt = self.rt(obj.get("apiVersion", ""), obj.get("kind", ""))
        return deep_copy(self.store.create(rt, (obj.get("metadata") or {}).get("namespace"), obj, dry_run))

    def insert(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a fully formed object without validation (bulk seeding, objects with status)."""
        rt = self.rt(obj.get("apiVersion", ""), obj.get("kind", ""))
        return deep_copy(self.store.insert(rt, deep_copy(obj)))

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        """Object or ApiError(404)."""
        return deep_copy(self.store.get(self.rt(api_version, kind), namespace, name))

    def find(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """Object or None."""
        obj = self.store.find(self.rt(api_version, kind), namespace, name)
        return None if obj is None else deep_copy(obj)

    def list(self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> list[dict[str, Any]]:
        """Objects matching the selectors (same syntax as the query parameters)."""
        rt = self.rt(api_version, kind)
        items = self.store.list(rt, namespace, parse_label_selector(label_selector), parse_field_selector(field_selector, rt.plural))[0]
        return [deep_copy(i) for i in items]

    def update(self, obj: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
        """Replace like PUT (rv check when metadata.resourceVersion is set)."""
        rt = self.rt(obj.get("apiVersion", ""), obj.get("kind", ""))
        meta = obj.get("metadata") or {}
        return deep_copy(self.store.update(rt, meta.get("namespace"), meta.get("name", ""), obj, subresource=subresource))

    def patch(self, api_version: str, kind: str, name: str, patch: Any, namespace: str | None = None,
              patch_type: str = MERGE_PATCH, subresource: str | None = None) -> dict[str, Any]:
        """PATCH (merge by default; pass a content type for the others)."""
        return deep_copy(self.store.patch(self.rt(api_version, kind), namespace, name, patch_type, patch, subresource=subresource))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None,
               grace_period_seconds: int | None = None, propagation_policy: str | None = None) -> dict[str, Any]:
        """DELETE; returns the object (with deletionTimestamp when the deletion is pending)."""
        options: dict[str, Any] = {}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        obj = self.store.delete(self.rt(api_version, kind), namespace, name, options)[0]
        return deep_copy(obj)

    def evict(self, name: str, namespace: str = "default", dry_run: bool = False) -> dict[str, Any]:
        """POST pods/eviction in-process (ApiError 429 when a PDB blocks)."""
        return self.disruption.evict(namespace, name, {}, dry_run)

    def pods(self, namespace: str | None = None, node: str | None = None, label_selector: str | None = None) -> list[dict[str, Any]]:
        """Pods, optionally of one namespace / node."""
        return self.list("v1", "Pod", namespace, label_selector, f"spec.nodeName={node}" if node else None)
