# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""``CoreV1Api`` without its import cost, for the calls that read the raw JSON answer.

Importing ``kubernetes.client.api.core_v1_api`` builds some 250 pydantic model classes: 0.9 s of CPU on a 2-core
machine (``kubernetes`` 33+), paid by every module process that touches a Node, a ConfigMap or an Event - and by the
sentinel's first task between an alert and its cordon. The collection reads almost every answer as raw JSON
(``_preload_content=False``) and never needs those models there.

:class:`LeanCoreV1Api` offers the ``CoreV1Api`` methods of :data:`ROUTES` with the same positional arguments and
keyword options. A call with ``_preload_content=False`` and only the query options of :data:`QUERY_PARAMETERS` is sent
through the official client's own ``ApiClient.param_serialize`` and ``ApiClient.call_api`` (the same configuration,
authentication, TLS, headers, body encoding and ``rest`` layer), and a non-2xx answer raises the official
``ApiException`` subclass exactly as the typed method does (``ApiException.from_response``). Every other call - a
typed answer, another option, a watch, any other method - goes to the real ``CoreV1Api``, built (and imported) on first
use. So callers need not know which path ran; :class:`~.client.KubeClient` hands this out as ``client.core``.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

try:
    from kubernetes.client.exceptions import ApiException
except ImportError:  # pragma: no cover - ansible-test import sanity runs without kubernetes (client.require_kubernetes says so)
    ApiException = None  # type: ignore[assignment,misc]

#: method -> (HTTP method, path, positional argument names in the typed method's order, the typed method's return type -
#: a watch of the typed API deserializes its events by it, so the lean method carries it as its return annotation)
ROUTES: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "read_node": ("GET", "/api/v1/nodes/{name}", ("name",), "V1Node"),
    "patch_node": ("PATCH", "/api/v1/nodes/{name}", ("name", "body"), "V1Node"),
    "list_node": ("GET", "/api/v1/nodes", (), "V1NodeList"),
    "read_namespace": ("GET", "/api/v1/namespaces/{name}", ("name",), "V1Namespace"),
    "create_namespace": ("POST", "/api/v1/namespaces", ("body",), "V1Namespace"),
    "read_namespaced_config_map": ("GET", "/api/v1/namespaces/{namespace}/configmaps/{name}", ("name", "namespace"), "V1ConfigMap"),
    "create_namespaced_config_map": ("POST", "/api/v1/namespaces/{namespace}/configmaps", ("namespace", "body"), "V1ConfigMap"),
    "replace_namespaced_config_map": ("PUT", "/api/v1/namespaces/{namespace}/configmaps/{name}", ("name", "namespace", "body"),
                                      "V1ConfigMap"),
    "create_namespaced_event": ("POST", "/api/v1/namespaces/{namespace}/events", ("namespace", "body"), "CoreV1Event"),
    "list_namespaced_pod": ("GET", "/api/v1/namespaces/{namespace}/pods", ("namespace",), "V1PodList"),
    "list_pod_for_all_namespaces": ("GET", "/api/v1/pods", (), "V1PodList"),
    "create_namespaced_pod_eviction": ("POST", "/api/v1/namespaces/{namespace}/pods/{name}/eviction", ("name", "namespace", "body"),
                                       "V1Eviction"),
    "delete_namespaced_pod": ("DELETE", "/api/v1/namespaces/{namespace}/pods/{name}", ("name", "namespace"), "V1Pod"),
}

#: methods that also take an optional ``body`` keyword (the DeleteOptions of a DELETE)
OPTIONAL_BODY = ("delete_namespaced_pod",)

#: the typed methods' query options this path sends (Python name -> the API's name); any other option takes the typed path
QUERY_PARAMETERS = {"label_selector": "labelSelector", "field_selector": "fieldSelector", "limit": "limit", "_continue": "continue",
                    "resource_version": "resourceVersion", "resource_version_match": "resourceVersionMatch", "dry_run": "dryRun",
                    "field_manager": "fieldManager", "pretty": "pretty", "grace_period_seconds": "gracePeriodSeconds",
                    "propagation_policy": "propagationPolicy", "watch": "watch", "allow_watch_bookmarks": "allowWatchBookmarks",
                    "timeout_seconds": "timeoutSeconds"}

JSON = "application/json"


class LeanCoreV1Api:
    """The :data:`ROUTES` of ``CoreV1Api`` sent directly when the caller reads raw JSON; everything else to the typed API."""

    def __init__(self, api_client: Any, typed_factory: Callable[[], Any]) -> None:
        self.api_client = api_client
        self._typed_factory = typed_factory
        self._typed_api: Optional[Any] = None
        self._lock = threading.Lock()
        #: calls sent directly (answered or not) / handed to the typed API (tests and benchmarks read them)
        self.direct_calls = 0
        self.typed_calls = 0

    @property
    def typed(self) -> Any:
        """The real ``CoreV1Api`` (imported and built on first use, once)."""
        with self._lock:
            if self._typed_api is None:
                self._typed_api = self._typed_factory()
            return self._typed_api

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("api_client", "_typed_factory", "_typed_api", "_lock"):
            raise AttributeError(name)
        return getattr(self.typed, name)

    def send(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], request_timeout: Any, content_type: Optional[str]) -> Any:
        """One call of :data:`ROUTES` ``name`` through ``ApiClient``: the urllib3 response (``.data`` is the JSON), or the
        ``ApiException`` the typed method raises for the same answer."""
        method, path, names, _returns = ROUTES[name]
        if len(args) > len(names):
            raise TypeError(f"{name}() takes {len(names)} positional argument(s) but {len(args)} were given")
        values = dict(zip(names, args))
        for key in names:
            if key in kwargs:
                values[key] = kwargs.pop(key)
        missing = [key for key in names if values.get(key) is None]
        if missing:
            raise ValueError(f"{name}: missing the required parameter(s) {', '.join(missing)}")
        body = values.get("body", kwargs.pop("body", None) if name in OPTIONAL_BODY else None)
        path_params = {key: values[key] for key in ("name", "namespace") if key in values}
        query = [(QUERY_PARAMETERS[key], value) for key, value in kwargs.items() if value is not None]
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type or JSON
        serialized = self.api_client.param_serialize(method=method, resource_path=path, path_params=path_params, query_params=query,
                                                     header_params=headers, body=body, auth_settings=["BearerToken"])
        with self._lock:
            self.direct_calls += 1
        response = self.api_client.call_api(*serialized, _request_timeout=request_timeout)
        if not 200 <= response.status <= 299:
            response.read()
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response

    def route(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Direct when the caller reads raw JSON with known options only, else the typed method with the same arguments."""
        preload = kwargs.get("_preload_content", True)
        options = {k: v for k, v in kwargs.items() if k not in ("_preload_content", "_request_timeout", "_content_type")}
        known = set(QUERY_PARAMETERS) | set(ROUTES[name][2]) | ({"body"} if name in OPTIONAL_BODY else set())
        # a PATCH without its content type is the typed method's (it picks json-patch, or strategic merge for an object)
        patch_default = ROUTES[name][0] == "PATCH" and not kwargs.get("_content_type")
        if preload is False and set(options) <= known and not patch_default:
            return self.send(name, args, options, kwargs.get("_request_timeout"), kwargs.get("_content_type"))
        with self._lock:
            self.typed_calls += 1
        return getattr(self.typed, name)(*args, **kwargs)


def _method(name: str) -> Callable[..., Any]:
    def call(self: LeanCoreV1Api, *args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        if _request_timeout is not None:
            kwargs["_request_timeout"] = _request_timeout
        return self.route(name, args, kwargs)
    call.__name__ = name
    call.__doc__ = f"``CoreV1Api.{name}`` ({ROUTES[name][0]} {ROUTES[name][1]}); direct with ``_preload_content=False``."
    call.__annotations__ = {"return": ROUTES[name][3]}
    return call


for _name in ROUTES:
    setattr(LeanCoreV1Api, _name, _method(_name))


__all__ = ["JSON", "OPTIONAL_BODY", "QUERY_PARAMETERS", "ROUTES", "LeanCoreV1Api"]
