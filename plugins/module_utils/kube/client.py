# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The one way this collection talks to Kubernetes: the official ``kubernetes`` Python client, wrapped.

* :class:`K8sAuth` / :func:`auth_from_params` - connection options (kubeconfig/context, host + token, in-cluster) and
  client behaviour (QPS/burst limiter, retries, timeouts), from a module's params (:data:`..connection_options.K8S_AUTH_SPEC`).
* :class:`KubeClient` - typed API objects (``core``, ``apps``, ``policy``, ``coordination``, ``custom``, ``version``)
  plus :meth:`KubeClient.call`, which rate-limits, retries 429/5xx/connection errors with exponential backoff
  (honouring ``Retry-After``), counts calls and turns every failure into a :class:`K8sError` subclass that names the
  verb, resource, object and server; and :meth:`KubeClient.watch` with the same translation.

The ``kubernetes`` import is guarded (ansible-test import sanity runs without it): check :data:`HAS_KUBERNETES`.
"""
from __future__ import annotations

import functools
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import YamlLoadError
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_file
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.lean_core_api import LeanCoreV1Api
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import (  # noqa: F401  pylint: disable=unused-import
    K8sApiError, K8sConfigError, K8sConflict, K8sDeadlineExceeded, K8sError, K8sForbidden, K8sInvalid, K8sNotFound,
    K8sRetriesExhausted, K8sTimeout, K8sUnauthorized, K8sUnreachable,
)

try:
    import urllib3
    from kubernetes import client as kube_client
    from kubernetes import config as kube_config
    from kubernetes import watch as kube_watch
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR: Optional[str] = None
except ImportError as import_error:  # pragma: no cover - exercised by ansible-test import sanity only
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = str(import_error)
    urllib3 = None  # type: ignore[assignment]
    kube_client = kube_config = kube_watch = None  # type: ignore[assignment]

    class ApiException(Exception):  # type: ignore[no-redef]
        """Placeholder so ``except ApiException`` stays valid without the kubernetes package."""

    class ConfigException(Exception):  # type: ignore[no-redef]
        """Placeholder so ``except ConfigException`` stays valid without the kubernetes package."""


#: argument_spec entries every Kubernetes-facing module merges into its own (documented by the ``k8s_auth`` doc fragment).

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF_S = 5.0
_USER_RE = re.compile(r'User "([^"]+)"')
_NAMESPACE_RE = re.compile(r'in the namespace "([^"]+)"')


@dataclass(frozen=True)
class K8sAuth:
    """Connection and client-behaviour options (``api_key`` is never shown by ``repr``)."""

    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    host: Optional[str] = None
    api_key: Optional[str] = field(default=None, repr=False)
    ca_cert: Optional[str] = None
    validate_certs: Optional[bool] = None
    in_cluster: bool = False
    qps: float = 50.0
    burst: int = 100
    retries: int = 8
    retry_backoff_s: float = 0.2
    request_timeout_s: float = 30.0
    #: overall deadline of one call with its retries (0: none)
    deadline_s: float = 120.0


def _number(params: Mapping[str, Any], key: str, default: Any, kind: type, minimum: float, allow_equal: bool = True) -> Any:
    value = params.get(key)
    if value is None:
        return default
    try:
        number = kind(value)
    except (TypeError, ValueError) as err:
        raise K8sConfigError(f"option {key} must be a {kind.__name__}, got {value!r}", reason="Invalid") from err
    if isinstance(value, bool) or number < minimum or (number == minimum and not allow_equal):
        relation = ">=" if allow_equal else ">"
        raise K8sConfigError(f"option {key} must be {relation} {minimum}, got {value!r}", reason="Invalid")
    return number


def auth_from_params(params: Mapping[str, Any]) -> K8sAuth:
    """Build and validate a :class:`K8sAuth` from module params (missing/None keys take the defaults)."""
    def text(key: str) -> Optional[str]:
        value = params.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise K8sConfigError(f"option {key} must be a string, got {type(value).__name__}", reason="Invalid")
        return value

    host = text("host")
    if host is not None and not re.match(r"^https?://[^\s/]+", host):
        raise K8sConfigError(f"option host must be an http(s) URL such as https://api.example:6443, got {host!r}", reason="Invalid")
    validate_certs = params.get("validate_certs")
    in_cluster = bool(params.get("in_cluster"))
    kubeconfig = text("kubeconfig")
    if in_cluster and kubeconfig:
        raise K8sConfigError("options in_cluster and kubeconfig are mutually exclusive", reason="Invalid")
    return K8sAuth(
        kubeconfig=kubeconfig, context=text("context"), host=host, api_key=text("api_key"), ca_cert=text("ca_cert"),
        validate_certs=None if validate_certs is None else bool(validate_certs), in_cluster=in_cluster,
        qps=_number(params, "qps", 50.0, float, 0.0), burst=_number(params, "burst", 100, int, 1),
        retries=_number(params, "retries", 8, int, 0), retry_backoff_s=_number(params, "retry_backoff_s", 0.2, float, 0.0),
        request_timeout_s=_number(params, "request_timeout_s", 30.0, float, 0.0, allow_equal=False),
        deadline_s=_number(params, "deadline_s", 120.0, float, 0.0),
    )


def require_kubernetes() -> None:
    """Raise :class:`K8sConfigError` if the ``kubernetes`` package cannot be imported."""
    if not HAS_KUBERNETES:
        raise K8sConfigError("the Python package 'kubernetes' is required on the host running this module "
                             f"(pip install kubernetes, for the interpreter {sys.executable}): {KUBERNETES_IMPORT_ERROR}",
                             reason="MissingLibrary")


#: kubeconfig sections checked before the ``kubernetes`` loader sees the file, with the key of each entry's body
_KUBECONFIG_SECTIONS = (("clusters", "cluster"), ("contexts", "context"), ("users", "user"))
#: what the ``kubernetes`` loader raises on a file it cannot use besides ConfigException (a list, a scalar, a bad entry)
_LOADER_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError)


def _config_error(path: str, problem: str) -> K8sConfigError:
    return K8sConfigError(f"kubeconfig {path}: {problem}", file=path, reason="Invalid")


def _kubeconfig_entries(path: str, data: Mapping[str, Any], merged: dict[str, dict[str, tuple[str, Any]]]) -> None:
    """Add the named clusters/contexts/users of one file to ``merged`` (the first definition of a name wins, like kubectl)."""
    for section, body_key in _KUBECONFIG_SECTIONS:
        entries = data.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise _config_error(path, f"{section} must be a list of {{name, {body_key}}} entries, got {type(entries).__name__}")
        for index, entry in enumerate(entries):
            name = entry.get("name") if isinstance(entry, Mapping) else None
            if not isinstance(name, str) or not name:
                raise _config_error(path, f"{section}[{index}] must be a mapping with a non-empty name, got {entry!r:.200}")
            body = entry.get(body_key)
            if body is not None and not isinstance(body, Mapping):
                raise _config_error(path, f"{section}[{index}] ({name!r}): {body_key} must be a mapping, got {type(body).__name__}")
            merged[section].setdefault(name, (path, dict(body or {})))


def check_kubeconfig(path: str, context: Optional[str] = None, host_given: bool = False) -> list[str]:
    """Parse the kubeconfig file(s) of ``path`` (``os.pathsep``-separated like ``KUBECONFIG``) and check what the loader needs.

    Raises :class:`K8sConfigError` naming the file and the problem for: an unreadable, empty, binary or malformed
    file, a document that is not a mapping, malformed clusters/contexts/users, no current-context (and no
    ``context`` option), a context that is not defined, a context naming a cluster or user that is not defined, a
    cluster without a server URL (unless ``host`` overrides it). Returns the files that exist. Missing files of a
    list are skipped (kubectl's rule); when none exists the first one is named.
    """
    files = [os.path.expanduser(name) for name in path.split(os.pathsep) if name]
    existing = [name for name in files if os.path.exists(name)] if len(files) > 1 else files
    if not existing:
        raise _config_error(files[0] if files else path, "file does not exist")
    merged: dict[str, dict[str, tuple[str, Any]]] = {section: {} for section, dummy in _KUBECONFIG_SECTIONS}
    current: Optional[tuple[str, str]] = None
    for name in existing:
        try:
            data = load_yaml_file(name)
        except YamlLoadError as err:
            line = f" (line {err.line})" if err.line else ""
            raise _config_error(name, f"cannot be loaded: {err.message}{line}") from None
        if data is None:
            raise _config_error(name, "file is empty (expected a kubeconfig with clusters, contexts, users and current-context)")
        if not isinstance(data, Mapping):
            raise _config_error(name, f"must be a YAML mapping (apiVersion, clusters, contexts, users, current-context), got a "
                                      f"{type(data).__name__}")
        _kubeconfig_entries(name, data, merged)
        value = data.get("current-context")
        if value not in (None, "") and not isinstance(value, str):
            raise _config_error(name, f"current-context must be a string, got {type(value).__name__}")
        if value and current is None:
            current = (name, value)
    where = existing[0] if len(existing) == 1 else ", ".join(existing)
    contexts = merged["contexts"]
    known = ", ".join(sorted(contexts)) or "none"
    if context:
        selected, source = context, f"option context {context!r}"
    elif current is not None:
        selected, source = current[1], f"current-context {current[1]!r}"
    else:
        raise _config_error(where, f"no current-context is set and no context option was given (contexts: {known})")
    if selected not in contexts:
        raise _config_error(current[0] if current and not context else where, f"{source} names no context of the file (contexts: {known})")
    ctx_file, ctx = contexts[selected]
    cluster = ctx.get("cluster")
    if not isinstance(cluster, str) or not cluster:
        raise _config_error(ctx_file, f"context {selected!r} names no cluster")
    if cluster not in merged["clusters"]:
        raise _config_error(ctx_file, f"context {selected!r} points at cluster {cluster!r}, which is not defined (clusters: "
                                      f"{', '.join(sorted(merged['clusters'])) or 'none'})")
    user = ctx.get("user")
    if user not in (None, "") and (not isinstance(user, str) or user not in merged["users"]):
        raise _config_error(ctx_file, f"context {selected!r} points at user {user!r}, which is not defined (users: "
                                      f"{', '.join(sorted(merged['users'])) or 'none'})")
    cluster_file, cluster_body = merged["clusters"][cluster]
    server = cluster_body.get("server")
    if not host_given and (not isinstance(server, str) or not server.strip()):
        raise _config_error(cluster_file, f"cluster {cluster!r} (context {selected!r}) has no server URL")
    return existing


def build_configuration(auth: K8sAuth) -> Any:
    """A ``kubernetes.client.Configuration`` for ``auth`` (kubeconfig / in-cluster / host+token, then explicit overrides).

    A kubeconfig is checked by :func:`check_kubeconfig` first, so a malformed one fails naming the file and problem.
    """
    require_kubernetes()
    cfg = kube_client.Configuration()
    source = "in-cluster service account"
    try:
        if auth.in_cluster:
            kube_config.load_incluster_config(client_configuration=cfg)
        elif auth.host and not auth.kubeconfig:
            cfg.host = auth.host
        else:
            path = auth.kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
            first = path.split(os.pathsep)[0]
            if not os.path.exists(first) and not auth.kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
                kube_config.load_incluster_config(client_configuration=cfg)
            else:
                if not os.path.exists(first) and os.pathsep not in path:
                    raise K8sConfigError(f"kubeconfig file {first!r} does not exist (option kubeconfig, KUBECONFIG or ~/.kube/config); "
                                         "set kubeconfig, host + api_key, or in_cluster", reason="Invalid", file=first)
                source = "kubeconfig " + ", ".join(check_kubeconfig(path, auth.context, host_given=bool(auth.host)))
                try:
                    kube_config.load_kube_config(config_file=path, context=auth.context, client_configuration=cfg, persist_config=False)
                except _LOADER_ERRORS as err:
                    raise K8sConfigError(f"cannot load Kubernetes credentials from {source}: {type(err).__name__}: {err}",
                                         reason="Invalid", file=path) from None
    except ConfigException as err:
        context = f", context {auth.context!r}" if auth.context else ""
        raise K8sConfigError(f"cannot load Kubernetes credentials from {source}{context}: {err}", reason="Invalid") from err
    if auth.host:
        cfg.host = auth.host
    if auth.api_key:
        cfg.api_key = {"BearerToken": "Bearer " + auth.api_key}
        cfg.api_key_prefix = {}
        cfg.refresh_api_key_hook = None
    if auth.ca_cert:
        cfg.ssl_ca_cert = auth.ca_cert
    if auth.validate_certs is not None:
        cfg.verify_ssl = auth.validate_certs
    cfg.retries = 0  # retries are ours (call()), not urllib3's
    return cfg


class TokenBucket:
    """Thread-safe token bucket: ``qps`` tokens per second, at most ``burst`` saved up. ``qps <= 0`` disables it."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()
        self.waited_s = 0.0

    def reserve(self) -> float:
        """Take one token; return how long the caller must wait for it (0 when one was available)."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
            self.waited_s += wait
            return wait

    def acquire(self) -> float:
        """Take one token, sleeping as needed; returns the seconds slept."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait


def _status_body(exc: Any) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body.strip().startswith("{"):
        try:
            data = json.loads(body)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}
    return {}


def _retry_after(exc: Any, status: dict[str, Any]) -> Optional[float]:
    headers = getattr(exc, "headers", None) or {}
    raw = None
    try:
        raw = headers.get("Retry-After")
    except AttributeError:
        raw = None
    if raw is None:
        raw = (status.get("details") or {}).get("retryAfterSeconds")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except (TypeError, ValueError):
        return None


def translate_api_exception(exc: Any, verb: str, resource: str, server: str, attempts: int = 1) -> K8sError:
    """Turn a ``kubernetes.client.ApiException`` into the matching :class:`K8sError` subclass."""
    code = int(getattr(exc, "status", 0) or 0)
    status = _status_body(exc)
    server_msg = str(status.get("message") or getattr(exc, "reason", "") or "").strip()
    reason = str(status.get("reason") or getattr(exc, "reason", "") or "") or None
    details = status.get("details") or {}
    name = details.get("name") or None
    ns_match = _NAMESPACE_RE.search(server_msg)
    namespace = ns_match.group(1) if ns_match else None
    subject = f"{verb} {resource}" + (f" {name!r}" if name else "") + (f" in namespace {namespace!r}" if namespace else "")
    common: dict[str, Any] = {"verb": verb, "resource": resource, "name": name, "namespace": namespace, "status": code,
                              "reason": reason, "server": server, "detail": server_msg or None}
    if code == 403:
        user_match = _USER_RE.search(server_msg)
        user = user_match.group(1) if user_match else None
        who = f" for user {user!r}" if user else ""
        return K8sForbidden(f"RBAC refused {subject}{who} (403 Forbidden): {server_msg}; grant '{verb}' on '{resource}' "
                            "(see docs/kubernetes.md for the ClusterRole)", user=user, **common)
    if code == 401:
        return K8sUnauthorized(f"the API server {server} rejected the credentials for {subject} (401 Unauthorized): check "
                               "kubeconfig/context or api_key", **common)
    if code == 404:
        return K8sNotFound(f"{subject}: not found (404): {server_msg}", **common)
    if code == 409:
        return K8sConflict(f"{subject}: conflict (409 {reason or 'Conflict'}): {server_msg}", **common)
    if code in (400, 422):
        return K8sInvalid(f"{subject}: rejected as invalid ({code} {reason or ''}): {server_msg}".replace(" )", ")"), **common)
    if code in RETRYABLE_STATUS:
        return K8sRetriesExhausted(f"{subject} on {server} still failing after {attempts} attempt(s); last status {code} "
                                   f"{reason or ''}: {server_msg}", attempts=attempts, **common)
    return K8sApiError(f"{subject} on {server} failed ({code} {reason or ''}): {server_msg}", **common)


def _connection_reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)
    text = str(inner if inner is not None else exc)
    return text or type(exc).__name__


def _is_tls_error(exc: BaseException) -> bool:
    inner = getattr(exc, "reason", None)
    return HAS_KUBERNETES and isinstance(inner if inner is not None else exc, urllib3.exceptions.SSLError)


def _connection_errors() -> tuple[type[BaseException], ...]:
    if HAS_KUBERNETES:
        return (urllib3.exceptions.HTTPError, OSError)
    return (OSError,)


class KubeClient:  # pylint: disable=too-many-instance-attributes
    """Typed Kubernetes API objects over one ``ApiClient`` plus rate-limited, retrying, error-translating :meth:`call`.

    ``client.stats`` counts HTTP attempts as ``{"<verb> <resource>": n}``; ``client.retries_done`` the retries and
    ``client.limiter.waited_s`` the time spent waiting for the QPS limiter.
    """

    def __init__(self, auth: K8sAuth, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.auth = auth
        self.configuration = build_configuration(auth)
        self.server: str = str(self.configuration.host)
        self.api_client = kube_client.ApiClient(self.configuration)
        self.limiter = TokenBucket(auth.qps, auth.burst, clock=clock, sleep=sleep)
        self._sleep = sleep
        self._clock = clock
        self._lock = threading.Lock()
        self.stats: dict[str, int] = {}
        self.retries_done = 0

    # ------------------------------------------------------------------ lifecycle

    # The typed API groups are built on first use: importing kubernetes.client's CoreV1Api alone takes ~0.9 s and
    # AppsV1Api ~0.5 s on a 2-core machine, and most modules need one or two of them per task. ``core`` is a
    # LeanCoreV1Api: the raw-JSON calls of the hot paths (nodes, namespaces, ConfigMaps, Events, pod lists) go out
    # without importing CoreV1Api at all; anything else builds the typed API on first use.
    @functools.cached_property
    def core(self) -> Any:
        """``CoreV1Api`` (nodes, pods, namespaces, ConfigMaps, Secrets, evictions), as :class:`~.lean_core_api.LeanCoreV1Api`."""
        return LeanCoreV1Api(self.api_client, lambda: kube_client.CoreV1Api(self.api_client))

    @functools.cached_property
    def apps(self) -> Any:
        """``AppsV1Api``."""
        return kube_client.AppsV1Api(self.api_client)

    @functools.cached_property
    def policy(self) -> Any:
        """``PolicyV1Api`` (PodDisruptionBudgets)."""
        return kube_client.PolicyV1Api(self.api_client)

    @functools.cached_property
    def batch(self) -> Any:
        """``BatchV1Api`` (Jobs)."""
        return kube_client.BatchV1Api(self.api_client)

    @functools.cached_property
    def coordination(self) -> Any:
        """``CoordinationV1Api`` (Leases)."""
        return kube_client.CoordinationV1Api(self.api_client)

    @functools.cached_property
    def custom(self) -> Any:
        """``CustomObjectsApi`` (Argo CD Applications, Flux HelmReleases)."""
        return kube_client.CustomObjectsApi(self.api_client)

    @functools.cached_property
    def version(self) -> Any:
        """``VersionApi``."""
        return kube_client.VersionApi(self.api_client)

    def close(self) -> None:
        """Close the connection pool."""
        self.api_client.close()

    def __enter__(self) -> "KubeClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ helpers

    def to_plain(self, obj: Any) -> Any:
        """A typed API model (or list of them) as plain JSON-style data with the API's camelCase keys."""
        return self.api_client.sanitize_for_serialization(obj)

    def _count(self, verb: str, resource: str) -> None:
        key = f"{verb} {resource}"
        with self._lock:
            self.stats[key] = self.stats.get(key, 0) + 1

    def backoff_s(self, retry: int, retry_after: Optional[float] = None) -> float:
        """Delay before retry number ``retry`` (1-based): exponential from ``retry_backoff_s``, capped, at least Retry-After."""
        delay = min(MAX_BACKOFF_S, self.auth.retry_backoff_s * (2 ** (retry - 1)))
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_BACKOFF_S))
        return delay

    @staticmethod
    def _takes_request_timeout(fn: Callable[..., Any]) -> bool:
        owner = getattr(fn, "__self__", None)
        return owner is not None and hasattr(owner, "api_client")

    # ------------------------------------------------------------------ calls

    def _clip_timeout(self, timeout: Any, remaining: Optional[float]) -> Any:
        """``timeout`` (seconds, or a (connect, read) pair) no longer than ``remaining`` (None: no deadline)."""
        if remaining is None:
            return timeout
        left = max(remaining, 0.001)
        if isinstance(timeout, (tuple, list)):
            return tuple(left if part is None else min(float(part), left) for part in timeout)
        return left if timeout is None else min(float(timeout), left)

    def _deadline_error(self, verb: str, resource: str, attempts: int, elapsed: float, last: str,
                        status: Optional[int] = None, reason: Optional[str] = None) -> K8sDeadlineExceeded:
        return K8sDeadlineExceeded(f"{verb} {resource} on the API server {self.server}: gave up after {attempts} attempt(s) in "
                                   f"{elapsed:.1f} s, the deadline of {self.auth.deadline_s:g} s (option deadline_s) has passed; "
                                   f"last failure: {last}", attempts=attempts, elapsed_s=elapsed, deadline_s=self.auth.deadline_s,
                                   verb=verb, resource=resource, server=self.server, status=status, reason=reason or "DeadlineExceeded",
                                   detail=last)

    def call(self, verb: str, resource: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:  # pylint: disable=too-many-locals
        """Run ``fn(*args, **kwargs)`` (a kubernetes API method) with the limiter, retries and error translation.

        ``verb`` and ``resource`` (``get``/``nodes``, ``create``/``pods/eviction``) only label stats and errors.
        Retried: HTTP 429, 500, 502, 503, 504 and connection errors, ``retries`` times, waiting
        ``retry_backoff_s * 2**n`` (capped at 5 s, at least Retry-After). Note that a create whose answer was lost may
        have been applied: the retry then meets 409 AlreadyExists (:class:`K8sConflict`).

        ``deadline_s`` bounds the whole sequence, counted from the first attempt (the QPS limiter's wait before it is
        client-side pacing, not counted): each attempt's timeout is clipped to the time left, a retry that would start
        after the deadline is not made, and :class:`K8sDeadlineExceeded` names the server, verb, resource, attempts,
        elapsed time and the last failure.
        """
        timeout = kwargs.pop("_request_timeout", None)
        if timeout is None and self._takes_request_timeout(fn):
            timeout = self.auth.request_timeout_s
        attempts = 0
        started = 0.0
        last_failure = ""
        last_status: Optional[int] = None
        last_reason: Optional[str] = None
        while True:
            attempts += 1
            self.limiter.acquire()
            now = self._clock()
            if attempts == 1:
                started = now
            remaining = (started + self.auth.deadline_s - now) if self.auth.deadline_s > 0 else None
            if remaining is not None and remaining <= 0 and attempts > 1:
                raise self._deadline_error(verb, resource, attempts - 1, now - started, last_failure, last_status, last_reason)
            if timeout is not None:
                kwargs["_request_timeout"] = self._clip_timeout(timeout, remaining)
            self._count(verb, resource)
            try:
                return fn(*args, **kwargs)
            except ApiException as exc:
                code = int(getattr(exc, "status", 0) or 0)
                if code not in RETRYABLE_STATUS or attempts > self.auth.retries:
                    raise translate_api_exception(exc, verb, resource, self.server, attempts) from None
                delay = self.backoff_s(attempts, _retry_after(exc, _status_body(exc)))
                last_status, last_reason = code, str(getattr(exc, "reason", "") or "") or None
                last_failure = f"HTTP {code} {last_reason or ''}".strip()
            except _connection_errors() as exc:
                if _is_tls_error(exc):
                    raise K8sUnreachable(f"TLS failure talking to the API server {self.server} ({verb} {resource}): "
                                         f"{_connection_reason(exc)}; check ca_cert / validate_certs", verb=verb, resource=resource,
                                         server=self.server, reason="TLSError", detail=_connection_reason(exc)) from None
                elapsed = self._clock() - started
                last_status, last_reason, last_failure = None, "Unreachable", _connection_reason(exc)
                if self.auth.deadline_s > 0 and elapsed >= self.auth.deadline_s:
                    raise self._deadline_error(verb, resource, attempts, elapsed, last_failure) from None
                if attempts > self.auth.retries:
                    raise K8sUnreachable(f"cannot reach the Kubernetes API server {self.server} ({verb} {resource}) after "
                                         f"{attempts} attempt(s): {_connection_reason(exc)}", verb=verb, resource=resource,
                                         server=self.server, reason="Unreachable", detail=_connection_reason(exc)) from None
                delay = self.backoff_s(attempts)
            elapsed = self._clock() - started
            if self.auth.deadline_s > 0 and elapsed + delay >= self.auth.deadline_s:
                raise self._deadline_error(verb, resource, attempts, elapsed, last_failure + f" (the next retry would start after "
                                           f"{delay:g} s)", last_status, last_reason)
            with self._lock:
                self.retries_done += 1
            if delay > 0:
                self._sleep(delay)

    def watch(self, resource: str, fn: Callable[..., Any], *args: Any, timeout_s: float = 60.0, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """Yield watch events (``{"type", "object", "raw_object"}``) from a list method until ``timeout_s`` passes.

        Errors are translated like :meth:`call` (a 410 Gone becomes :class:`K8sApiError` with status 410; re-list then).
        A read timeout simply ends the stream.
        """
        watcher = kube_watch.Watch()
        kwargs.setdefault("timeout_seconds", max(1, int(timeout_s)))
        kwargs.setdefault("_request_timeout", (self.auth.request_timeout_s, float(timeout_s) + 5.0))
        self.limiter.acquire()
        self._count("watch", resource)
        try:
            for event in watcher.stream(fn, *args, **kwargs):
                if isinstance(event, dict) and event.get("type") == "ERROR":
                    raw = event.get("raw_object") or {}
                    code = int(raw.get("code") or 500)
                    raise K8sApiError(f"watch {resource} on {self.server} ended with an error ({code} {raw.get('reason', '')}): "
                                      f"{raw.get('message', '')}", verb="watch", resource=resource, status=code,
                                      reason=raw.get("reason"), server=self.server, detail=raw.get("message"))
                yield event
        except ApiException as exc:
            raise translate_api_exception(exc, "watch", resource, self.server) from None
        except _connection_errors() as exc:
            if HAS_KUBERNETES and isinstance(exc, urllib3.exceptions.ReadTimeoutError):
                return
            raise K8sUnreachable(f"watch {resource}: lost the API server {self.server}: {_connection_reason(exc)}", verb="watch",
                                 resource=resource, server=self.server, reason="Unreachable", detail=_connection_reason(exc)) from None
        finally:
            watcher.stop()


def client_from_params(params: Mapping[str, Any], **kwargs: Any) -> KubeClient:
    """``KubeClient(auth_from_params(params))`` (raises :class:`K8sConfigError` when ``kubernetes`` is missing)."""
    return KubeClient(auth_from_params(params), **kwargs)


def run_with_client(params: Mapping[str, Any], work: Callable[[KubeClient], Dict[str, Any]]) -> Dict[str, Any]:
    """Open a client from the module's connection ``params``, run ``work(client)``, close it; the result gets
    ``api_calls`` (HTTP attempts per ``"<verb> <resource>"``) unless ``work`` set it."""
    with client_from_params(params) as client:
        result = work(client)
        result.setdefault("api_calls", dict(client.stats))
    return result


def discard(response: Any) -> None:
    """Read and drop a raw (``_preload_content=False``) answer nobody needs, so its connection goes back to the pool
    (an unread answer keeps its connection: the next request opens - and, on TLS, handshakes - a new one)."""
    drain = getattr(response, "drain_conn", None)
    if callable(drain):
        drain()
    release = getattr(response, "release_conn", None)
    if callable(release):
        release()


def ensure_namespace(client: KubeApi, name: str, labels: Optional[Mapping[str, str]] = None) -> bool:
    """Create namespace ``name`` when it does not exist; ``True`` when it was created.

    Used for the collection's own state (locks, circuit breaker, reports) in ``dsxos-system``.
    A concurrent creation by someone else (409) counts as existing.
    """
    try:
        discard(client.call("get", "namespaces", client.core.read_namespace, name, _preload_content=False))
        return False
    except K8sNotFound:
        pass
    body = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": dict(labels or {"app.kubernetes.io/managed-by": "dsxos.cluster"})}}
    try:
        discard(client.call("create", "namespaces", client.core.create_namespace, body, _preload_content=False))
    except K8sConflict:
        return False
    return True
