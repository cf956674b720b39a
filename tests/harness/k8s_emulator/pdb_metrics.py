# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Run-long PDB metrics: per budget, the minimum healthy-pod count observed and whether it ever dropped below desiredHealthy.

Fed synchronously by store events (so every transition is seen, in order). Tracking of a budget is *armed* the first
time its healthy count reaches the desired count (a budget created before its pods are up is not a violation).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .disruption import pod_is_healthy
from .resources import ResourceRegistry
from .selectors import LabelSelector, labels_match, selector_from_spec
from .store import Store


@dataclass
class BudgetTrack:
    """Observed history of one PDB."""

    selector: LabelSelector | None
    healthy: set[str] = field(default_factory=set)
    desired: int | None = None
    armed: bool = False
    min_healthy: int | None = None
    violations: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Metrics as a plain dict."""
        return {"healthy": len(self.healthy), "desired": self.desired, "armed": self.armed,
                "min_healthy": self.min_healthy, "violated": self.violations > 0, "violations": self.violations}


class PdbTracker:
    """Store listener maintaining :class:`BudgetTrack` per ``(namespace, name)``."""

    def __init__(self, store: Store, registry: ResourceRegistry) -> None:
        self.store = store
        self._pods = registry.lookup("", "v1", "pods")
        self._pdb_storage = registry.lookup("policy", "v1", "poddisruptionbudgets").store_name  # type: ignore[union-attr]
        self._tracks: dict[str, dict[str, BudgetTrack]] = {}
        self._lock = threading.RLock()

    def on_event(self, etype: str, storage: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Store listener (runs under the store lock)."""
        if storage == "pods":
            self._on_pod(etype, obj)
        elif storage == self._pdb_storage:
            self._on_pdb(etype, obj, old)

    def _on_pdb(self, etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj["metadata"]
        with self._lock:
            bucket = self._tracks.setdefault(meta["namespace"], {})
            if etype == "DELETED":
                bucket.pop(meta["name"], None)
                return
            spec_sel = (obj.get("spec") or {}).get("selector")
            if old is not None and meta["name"] in bucket and (old.get("spec") or {}).get("selector") == spec_sel:
                return
            selector = selector_from_spec(spec_sel, "spec.selector")
            track = bucket.get(meta["name"]) or BudgetTrack(selector)
            track.selector = selector
            pods = self.store.list(self._pods, meta["namespace"], selector)[0] if selector is not None else []  # type: ignore[arg-type]
            track.healthy = {p["metadata"]["name"] for p in pods if pod_is_healthy(p)}
            bucket[meta["name"]] = track
            self._check(track)

    def _on_pod(self, etype: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        with self._lock:
            bucket = self._tracks.get(meta.get("namespace", ""))
            if not bucket:
                return
            for track in bucket.values():
                healthy = etype != "DELETED" and labels_match(track.selector, meta.get("labels")) and pod_is_healthy(pod)
                was = meta["name"] in track.healthy
                if healthy == was:
                    continue
                if healthy:
                    track.healthy.add(meta["name"])
                else:
                    track.healthy.discard(meta["name"])
                self._check(track)

    @staticmethod
    def _check(track: BudgetTrack) -> None:
        if track.desired is None:
            return
        count = len(track.healthy)
        if not track.armed:
            # A budget that protects nothing yet (desired 0: its pods are not up) is not armed.
            if track.desired > 0 and count >= track.desired:
                track.armed = True
                track.min_healthy = count
            return
        track.min_healthy = count if track.min_healthy is None else min(track.min_healthy, count)
        if count < track.desired:
            track.violations += 1

    def set_desired(self, namespace: str, name: str, desired: int) -> None:
        """Called by the disruption controller when it recomputes desiredHealthy."""
        with self._lock:
            track = self._tracks.get(namespace, {}).get(name)
            if track is not None and track.desired != desired:
                track.desired = desired
                if track.armed and len(track.healthy) < desired:
                    # desiredHealthy grew (pods were added, e.g. a scale-up): a ramp, not a disruption.
                    # Re-arm once the healthy count reaches the new desired count.
                    track.armed = False
                self._check(track)

    def get(self, namespace: str, name: str) -> BudgetTrack | None:
        """The track of one PDB."""
        with self._lock:
            return self._tracks.get(namespace, {}).get(name)

    def reset(self) -> None:
        """Forget observed minima (re-arm every budget)."""
        with self._lock:
            for bucket in self._tracks.values():
                for track in bucket.values():
                    track.armed, track.min_healthy, track.violations = False, None, 0
                    self._check(track)
