# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What domain code may use of a Kubernetes client: the :class:`KubeApi` Protocol.

:class:`..client.KubeClient` satisfies it structurally (``tests/unit/test_k8s_client.py`` checks every member on a
built client); domain functions annotate ``client: KubeApi`` so a test double or another transport only needs
these members. The typed API objects (``core``, ``apps``, ...) are the official ``kubernetes`` client's classes,
typed ``Any`` here because that package is optional at import time.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import K8sAuth, TokenBucket


@runtime_checkable
class KubeApi(Protocol):
    """The members of :class:`..client.KubeClient` that callers use."""

    #: connection and client-behaviour options (``request_timeout_s`` is read by raw-response calls)
    auth: "K8sAuth"
    #: the API server URL, for messages
    server: str
    #: the ``kubernetes.client.ApiClient`` (for API classes built on demand, e.g. ``BatchV1Api``)
    api_client: Any
    #: ``CoreV1Api``, ``AppsV1Api``, ``PolicyV1Api``, ``CoordinationV1Api``, ``CustomObjectsApi``, ``VersionApi``
    core: Any
    apps: Any
    policy: Any
    batch: Any
    coordination: Any
    custom: Any
    version: Any
    #: the QPS/burst limiter (``waited_s``)
    limiter: "TokenBucket"
    #: HTTP attempts as ``{"<verb> <resource>": n}``
    stats: Dict[str, int]
    #: retries done so far
    retries_done: int

    def call(self, verb: str, resource: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` rate-limited, retried, failures turned into ``K8sError`` naming verb and resource."""

    def watch(self, resource: str, fn: Callable[..., Any], *args: Any, timeout_s: float = 60.0,
              **kwargs: Any) -> Iterator[Dict[str, Any]]:
        """Watch events (``{"type", "object", "raw_object"}``) of a list method until ``timeout_s`` passes."""

    def to_plain(self, obj: Any) -> Any:
        """A typed API model as plain JSON-style data (camelCase keys)."""

    def close(self) -> None:
        """Close the connection pool."""
