# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations


class ModuleDocFragment:
    """The run-wide options of the sentinel's batches (operate/entry.py SENTINEL_BATCH_SPEC): sentinel_quarantine and
    sentinel_drain."""

    DOCUMENTATION = r"""
options:
  lock:
    description: Take (and release) each node's Lease lock. False only when the caller already holds them as O(holder).
    type: bool
    default: true
  holder:
    description: Holder identity of the node locks (the role uses C(<sentinel_actor>/<run id>), the same as its per-node steps).
    type: str
    required: true
  actor:
    description: Who acts (recorded with every write - quarantine record, incident step, breaker entry - and Event).
    type: str
    required: true
  lock_namespace:
    description: Namespace of the node lock Leases.
    type: str
    default: dsxos-system
  lock_duration_s:
    description: Duration of each node lock (a killed run's lock expires after it); it must outlast the batch.
    type: int
    default: 1800
  lock_wait_s:
    description: Seconds to wait for a lock another run holds before leaving the node to the per-node steps.
    type: float
    default: 0.0
  lock_wait_for_purposes:
    description:
      - Seconds to wait (instead of O(lock_wait_s), when longer) for a lock whose holder names one of these purposes, a
        mapping of lease purpose to seconds (O(dsxos.cluster.node_lock#module:wait_for_purposes) of M(dsxos.cluster.node_lock)).
      - The sentinel role waits for its short C(sentinel-release) holders, never for another remediation run.
    type: dict
    default: {}
  event_namespace:
    description: Namespace of the Kubernetes Events about the nodes.
    type: str
    default: default
  workers:
    description: Nodes handled at the same time (1-64); every request also goes through the client's O(qps) limit.
    type: int
    default: 16
"""
