# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Watching the pods of one node: :func:`list_node_pods` (one list, ``fieldSelector spec.nodeName``) and
:class:`PodWatch`, ONE watch from the list's resourceVersion feeding ``("pod", type, object)`` events into a queue and a
final ``("watch_end", error_or_None)`` when the stream ends (server timeout, 410 Gone, lost connection).
"""
from __future__ import annotations

import json
import queue
import socket
import threading
from typing import Any

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError


class PodWatch(threading.Thread):
    """ONE watch on a node's pods (``fieldSelector spec.nodeName``) feeding events into a queue; :meth:`stop` ends it."""

    def __init__(self, client: KubeApi, node: str, resource_version: str, events: "queue.Queue[tuple[Any, ...]]", timeout_s: float) -> None:
        super().__init__(name=f"dsxos-watch-{node}", daemon=True)
        self.client = client
        self.node = node
        self.resource_version = resource_version
        self.events = events
        self.timeout_s = max(1.0, timeout_s)
        self._stopped = threading.Event()
        self._resp: Any = None

    def _open(self, *args: Any, **kwargs: Any) -> Any:
        """Open the stream and keep the response so stop() can shut its socket."""
        resp = self.client.core.list_pod_for_all_namespaces(*args, **kwargs)
        self._resp = resp
        if self._stopped.is_set():
            self._shutdown()
        return resp

    def _shutdown(self) -> None:
        resp = self._resp
        sock = getattr(getattr(resp, "connection", None), "sock", None) if resp is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def run(self) -> None:
        try:
            for event in self.client.watch("pods", self._open, field_selector=f"spec.nodeName={self.node}",
                                           resource_version=self.resource_version, timeout_s=self.timeout_s,
                                           allow_watch_bookmarks=True):
                if self._stopped.is_set():
                    return
                self.events.put(("pod", event.get("type"), event.get("raw_object") or event.get("object")))
            self.events.put(("watch_end", None))
        except K8sError as err:
            if not self._stopped.is_set():
                self.events.put(("watch_end", err))
        except Exception as exc:  # pylint: disable=broad-except  # a shut socket surfaces as any urllib3/OS error
            if not self._stopped.is_set():
                self.events.put(("watch_end", K8sError(f"watch pods on node {self.node} failed: {type(exc).__name__}: {exc}",
                                                       verb="watch", resource="pods", node=self.node)))

    def stop(self) -> None:
        """End the stream now."""
        self._stopped.set()
        self._shutdown()


def list_node_pods(client: KubeApi, node: str) -> tuple[list[dict[str, Any]], str]:
    """Pods bound to ``node`` (all namespaces) as camelCase dicts, and the list's resourceVersion.

    ``resourceVersion=0``: served from the API server's watch cache, as informers list, not by a quorum read of every pod
    in etcd (a field selector is filtered after the read); the watch from the returned version brings anything newer.
    150 parallel drains' quorum lists timed out on a real kube-apiserver (bench/nvsentinel_scenario.py --backend real).
    """
    resp = client.call("list", "pods", client.core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node}",
                       resource_version="0", _preload_content=False)
    data = json.loads(resp.data)
    return list(data.get("items") or []), str((data.get("metadata") or {}).get("resourceVersion") or "")


__all__ = ["PodWatch", "list_node_pods"]
