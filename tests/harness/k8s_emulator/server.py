# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The HTTP front end: URL routing, discovery documents, verbs, watch streams, auth, fault injection and call counters."""
from __future__ import annotations

import collections
import io
import json
import queue
import select
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import yaml

from . import errors
from .errors import ApiError
from .patches import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, json_patch, merge_patch, strategic_merge_patch
from .resources import ResourceType
from .selectors import parse_field_selector, parse_label_selector

if TYPE_CHECKING:  # pragma: no cover
    from .emulator import Emulator

_NOT_FOUND_MSG = "the server could not find the requested resource"
_JSON = "application/json"


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "dsxos-k8s-emulator"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # pragma: no cover - non-TCP sockets
            pass

    def log_message(self, format: str, *args: Any) -> None:  # pylint: disable=redefined-builtin
        """Silence per-request logging."""

    def _dispatch(self) -> None:
        self.server.frontend.handle(self)  # type: ignore[attr-defined]

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, addr: tuple[str, int], frontend: "ApiFrontend") -> None:
        self.frontend = frontend
        super().__init__(addr, _Handler)


class _Route:
    """A parsed resource URL."""

    __slots__ = ("rt", "namespace", "name", "sub", "watch_path")

    def __init__(self, rt: ResourceType, namespace: str | None, name: str | None, sub: str | None, watch_path: bool) -> None:
        self.rt, self.namespace, self.name, self.sub, self.watch_path = rt, namespace, name, sub, watch_path

    @property
    def resource(self) -> str:
        return f"{self.rt.plural}/{self.sub}" if self.sub else self.rt.plural


class ApiFrontend:
    """Owns the HTTP server thread and answers requests against an :class:`Emulator`."""

    def __init__(self, emulator: "Emulator", host: str = "127.0.0.1", port: int = 0) -> None:
        self.emu = emulator
        self._server = _Server((host, port), self)
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.counters: collections.Counter[tuple[str, str]] = collections.Counter()
        self._count_lock = threading.Lock()
        self.bookmark_interval_s = 1.0
        self.default_watch_timeout_s = 1800.0

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="k8s-emulator-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self.emu.store.close_watchers()
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def count(self, verb: str, resource: str) -> None:
        with self._count_lock:
            self.counters[(verb, resource)] += 1

    # ------------------------------------------------------------------ low-level responses

    @staticmethod
    def _send(req: BaseHTTPRequestHandler, code: int, body: bytes, content_type: str = _JSON,
              headers: dict[str, str] | None = None) -> None:
        head = [f"HTTP/1.1 {code} {req.responses.get(code, ('',))[0]}", f"Content-Type: {content_type}",
                f"Content-Length: {len(body)}", "Cache-Control: no-cache, private"]
        for key, value in (headers or {}).items():
            head.append(f"{key}: {value}")
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (b"" if req.command == "HEAD" else body)
        req.wfile.write(payload)

    def _send_error(self, req: BaseHTTPRequestHandler, err: ApiError) -> None:
        self._send(req, err.code, _dumps(err.status()), headers=err.headers)

    # ------------------------------------------------------------------ entry point

    def handle(self, req: BaseHTTPRequestHandler) -> None:
        """Serve one request (called on the connection's thread)."""
        split = urllib.parse.urlsplit(req.path)
        path = split.path
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(split.query, keep_blank_values=True).items()}
        length = int(req.headers.get("Content-Length") or 0)
        raw = req.rfile.read(length) if length > 0 else b""
        decision = self.emu.faults.decide(req.command, path)
        if decision.delay_s > 0:
            time.sleep(decision.delay_s)
        if decision.action == "drop":
            req.close_connection = True
            try:
                req.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if decision.action == "error":
            err = ApiError(decision.code, "Internal error occurred: injected fault" if decision.code == 500 else
                           "the server is currently unable to handle the request (injected fault)")
            self._send_error(req, err)
            return
        if decision.action == "throttle":
            err = ApiError(429, "the server has received too many requests and has asked us to try again later",
                           "TooManyRequests", {"retryAfterSeconds": decision.retry_after_s},
                           {"Retry-After": str(decision.retry_after_s)})
            self._send_error(req, err)
            return
        if decision.action == "apply_drop":  # serve the request (a write is stored), then lose the answer
            req.wfile, req.close_connection = io.BytesIO(), True
        try:
            user = self.emu.access.user_for(req.headers.get("Authorization"))
            if user is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            self._route(req, path, query, raw, user)
        except ApiError as err:
            self._send_error(req, err)
        except (BrokenPipeError, ConnectionResetError):
            req.close_connection = True
        except Exception as exc:  # pylint: disable=broad-except  # report as a 500 Status, keep serving
            self._send_error(req, ApiError(500, f"Internal error occurred: {type(exc).__name__}: {exc}"))

    # ------------------------------------------------------------------ routing

    def _route(self, req: BaseHTTPRequestHandler, path: str, query: dict[str, str], raw: bytes, user: str) -> None:
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        method = req.command if req.command != "HEAD" else "GET"
        if not parts or parts[0] in ("healthz", "livez", "readyz"):
            self.count("get", "healthz")
            self._send(req, 200, b"ok", "text/plain; charset=utf-8")
            return
        if parts == ["version"]:
            self.count("get", "version")
            self._send(req, 200, _dumps(self.emu.version_info()))
            return
        doc = self._discovery(parts)
        if doc is not None:
            self.count("get", "discovery")
            if method != "GET":
                raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")
            self._send(req, 200, _dumps(doc))
            return
        route = self._parse(parts)
        if route is None:
            raise ApiError(404, _NOT_FOUND_MSG, "NotFound")
        self._serve(req, route, method, query, raw, user)

    def _discovery(self, parts: list[str]) -> dict[str, Any] | None:
        registry = self.emu.registry
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}]}
        if parts == ["apis"]:
            return registry.group_list()
        if len(parts) == 2 and parts[0] == "api":
            doc = registry.resource_list("", parts[1])
            if doc is None:
                raise ApiError(404, _NOT_FOUND_MSG, "NotFound")
            return doc
        if len(parts) == 2 and parts[0] == "apis":
            doc = registry.group_doc(parts[1])
            if doc is None:
                raise ApiError(404, _NOT_FOUND_MSG, "NotFound")
            return doc
        if len(parts) == 3 and parts[0] == "apis":
            doc = registry.resource_list(parts[1], parts[2])
            if doc is None:
                raise ApiError(404, _NOT_FOUND_MSG, "NotFound")
            return doc
        return None

    def _parse(self, parts: list[str]) -> _Route | None:
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        watch_path = False
        if rest and rest[0] == "watch":
            watch_path, rest = True, rest[1:]
        if not rest:
            return None
        registry = self.emu.registry
        if rest[0] == "namespaces" and len(rest) >= 3:
            rt = registry.lookup(group, version, rest[2])
            if rt is not None and rt.namespaced:
                if len(rest) > 5:
                    return None
                return _Route(rt, rest[1], rest[3] if len(rest) > 3 else None, rest[4] if len(rest) > 4 else None, watch_path)
        rt = registry.lookup(group, version, rest[0])
        if rt is None or len(rest) > 3:
            return None
        return _Route(rt, None, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None, watch_path)

    @staticmethod
    def _verb(method: str, route: _Route, query: dict[str, str]) -> str:
        if method == "GET":
            if route.name is None:
                return "watch" if route.watch_path or query.get("watch") in ("true", "1") else "list"
            return "watch" if route.watch_path else "get"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if route.name else "deletecollection"
        raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    @staticmethod
    def _body(req: BaseHTTPRequestHandler, raw: bytes) -> Any:
        if not raw:
            return None
        ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            if ctype.endswith("yaml"):
                return yaml.safe_load(raw.decode("utf-8"))
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"the body of the request could not be decoded as {ctype or 'JSON'}: {exc}") from exc

    # ------------------------------------------------------------------ verbs

    def _serve(self, req: BaseHTTPRequestHandler, route: _Route, method: str, query: dict[str, str], raw: bytes, user: str) -> None:
        rt = route.rt
        verb = self._verb(method, route, query)
        if route.sub and route.sub not in rt.subresources:
            raise ApiError(404, _NOT_FOUND_MSG, "NotFound")
        if rt.namespaced is False and route.namespace:
            raise ApiError(404, _NOT_FOUND_MSG, "NotFound")
        self.count(verb, route.resource)
        namespace = route.namespace or ""
        if not self.emu.access.allowed(user, verb, route.resource, namespace, rt.group):
            scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            raise errors.forbidden(rt.plural, rt.group, route.name,
                                   f'User "{user}" cannot {verb} resource "{route.resource}" in API group "{rt.group}" {scope}')
        body = self._body(req, raw)
        dry_run = query.get("dryRun") == "All" or (isinstance(body, dict) and "All" in (body.get("dryRun") or ()))
        if isinstance(body, dict) and isinstance(body.get("deleteOptions"), dict) and "All" in (body["deleteOptions"].get("dryRun") or ()):
            dry_run = True
        store = self.emu.store
        if rt.namespaced and route.namespace is None and verb not in ("list", "watch"):
            raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")
        if verb in ("list", "watch"):
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"), rt.plural)
            if verb == "watch":
                self._watch(req, route, query, labels, fields)
                return
            self._send(req, 200, _dumps(self._list(route, query, labels, fields)))
            return
        if verb == "get":
            self._send_get(req, route, query)
            return
        if verb == "create":
            if route.sub == "eviction":
                status = self.emu.disruption.evict(namespace, str(route.name), body if isinstance(body, dict) else {}, dry_run)
                self._send(req, 201, _dumps(status))
                return
            if route.name is not None or route.sub:
                raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")
            obj = store.create(rt, route.namespace, body, dry_run)
            self._send(req, 201, _dumps(obj))
            return
        name = str(route.name) if route.name else ""
        if verb == "update":
            if route.sub == "scale":
                self._send(req, 200, _dumps(self._scale_write(route, body, None, dry_run)))
                return
            if route.sub == "finalize":
                fins = ((body or {}).get("spec") or {}).get("finalizers") or []
                obj = store.mutate(rt, None, name, lambda o: o.setdefault("spec", {}).__setitem__("finalizers", fins))
                self.emu.controllers.kick()
                self._send(req, 200, _dumps(obj))
                return
            obj = store.update(rt, route.namespace, name, body, dry_run, route.sub, create_missing=False)
            self._send(req, 200, _dumps(obj))
            return
        if verb == "patch":
            ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip()
            if route.sub == "scale":
                self._send(req, 200, _dumps(self._scale_write(route, body, ctype, dry_run)))
                return
            obj = store.patch(rt, route.namespace, name, ctype, body, dry_run, route.sub)
            self._send(req, 200, _dumps(obj))
            return
        if verb == "delete":
            options = dict(body) if isinstance(body, dict) else {}
            for key in ("gracePeriodSeconds",):
                if key in query:
                    options[key] = int(query[key])
            if "propagationPolicy" in query:
                options["propagationPolicy"] = query["propagationPolicy"]
            obj, finished = store.delete(rt, route.namespace, name, options, dry_run)
            if finished and rt.store_name != "pods":
                details = {"name": name, "kind": rt.plural, "uid": obj["metadata"]["uid"]}
                if rt.group:
                    details["group"] = rt.group
                done = errors.status_object(200, "", "", details, failure=False)
                done.pop("code")  # the apiserver's delete Status carries no code
                self._send(req, 200, _dumps(done))
            else:
                self._send(req, 200, _dumps(obj))
            return
        if verb == "deletecollection":
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"), rt.plural)
            items = store.list(rt, route.namespace, labels, fields)[0]
            options = dict(body) if isinstance(body, dict) else {}
            deleted = []
            for item in items:
                try:
                    obj, _done = store.delete(rt, item["metadata"].get("namespace"), item["metadata"]["name"], options, dry_run)
                    deleted.append(obj)
                except ApiError:
                    continue
            self._send(req, 200, _dumps(self._list_doc(rt, deleted, store.resource_version)))
            return
        raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    def _send_get(self, req: BaseHTTPRequestHandler, route: _Route, query: dict[str, str]) -> None:
        rt, store = route.rt, self.emu.store
        name = str(route.name)
        obj = store.get(rt, route.namespace, name)
        if route.sub == "log":
            text = self.emu.pod_log(obj, query.get("container"))
            tail = query.get("tailLines")
            if tail:
                lines = text.splitlines(keepends=True)
                text = "".join(lines[-int(tail):]) if int(tail) > 0 else ""
            self._send(req, 200, text.encode("utf-8"), "text/plain")
            return
        if route.sub == "scale":
            self._send(req, 200, _dumps(self._scale_doc(rt, obj)))
            return
        self._send(req, 200, _dumps(obj))

    # ------------------------------------------------------------------ list / watch

    @staticmethod
    def _list_doc(rt: ResourceType, items: list[dict[str, Any]], rv: int, cont: str = "", remaining: int | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if cont:
            meta["continue"] = cont
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        if not rt.custom:
            items = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in items]
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": meta, "items": items}

    def _list(self, route: _Route, query: dict[str, str], labels: Any, fields: Any) -> dict[str, Any]:
        items, rv = self.emu.store.list(route.rt, route.namespace, labels, fields)
        limit = int(query.get("limit") or 0)
        token = query.get("continue")
        if token:
            try:
                state = json.loads(urllib.parse.unquote(token))
                start = (state["ns"], state["name"])
            except (ValueError, KeyError, TypeError) as exc:
                raise errors.bad_request(f"continue key is not valid: {token}") from exc
            items = [i for i in items if (i["metadata"].get("namespace", ""), i["metadata"]["name"]) > start]
        if limit > 0 and len(items) > limit:
            last = items[limit - 1]["metadata"]
            cont = json.dumps({"ns": last.get("namespace", ""), "name": last["name"]}, separators=(",", ":"))
            return self._list_doc(route.rt, items[:limit], rv, cont, len(items) - limit)
        return self._list_doc(route.rt, items, rv)

    def _watch(self, req: BaseHTTPRequestHandler, route: _Route, query: dict[str, str], labels: Any, fields: Any) -> None:
        store = self.emu.store
        namespace = route.namespace
        if route.watch_path and route.name:
            fields = tuple(fields) + (("metadata.name", True, route.name),)
        timeout = float(query.get("timeoutSeconds") or self.default_watch_timeout_s)
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        head = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                "Cache-Control: no-cache, private\r\n\r\n").encode("latin-1")
        try:
            watcher = store.watch(route.rt, namespace, labels, fields, query.get("resourceVersion"))
        except ApiError as err:
            if err.code != 410:
                raise
            req.wfile.write(head + self._chunk(_dumps({"type": "ERROR", "object": err.status()}) + b"\n") + b"0\r\n\r\n")
            return
        req.wfile.write(head)
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + self.bookmark_interval_s
        try:
            while not self._stopping.is_set():
                now = time.monotonic()
                if now >= deadline:
                    break
                wait = min(deadline - now, 0.25)
                try:
                    item = watcher.queue.get(timeout=wait)
                except queue.Empty:
                    item = ()
                if item is None:
                    break
                if item:
                    batch = [item]
                    while len(batch) < 256:
                        try:
                            nxt = watcher.queue.get_nowait()
                        except queue.Empty:
                            break
                        if nxt is None:
                            break
                        batch.append(nxt)
                    data = b"".join(_dumps({"type": etype, "object": obj}) + b"\n" for etype, obj in batch)
                    req.wfile.write(self._chunk(data))
                    continue
                if self._peer_closed(req.connection):
                    req.close_connection = True
                    return
                if bookmarks and time.monotonic() >= next_bookmark:
                    next_bookmark = time.monotonic() + self.bookmark_interval_s
                    with store.lock:
                        rv = store.resource_version
                        empty = watcher.queue.empty()
                    if empty:
                        mark = {"type": "BOOKMARK", "object": {"kind": route.rt.kind, "apiVersion": route.rt.api_version,
                                                               "metadata": {"resourceVersion": str(rv)}}}
                        req.wfile.write(self._chunk(_dumps(mark) + b"\n"))
            req.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            req.close_connection = True
        finally:
            store.unwatch(watcher)

    @staticmethod
    def _chunk(data: bytes) -> bytes:
        return f"{len(data):x}\r\n".encode("latin-1") + data + b"\r\n"

    @staticmethod
    def _peer_closed(sock: socket.socket) -> bool:
        try:
            readable = select.select([sock], [], [], 0)[0]
            if readable:
                return sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
        return False

    # ------------------------------------------------------------------ scale subresource

    @staticmethod
    def _scale_doc(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
                "spec": {"replicas": int((obj.get("spec") or {}).get("replicas", 0))},
                "status": {"replicas": int((obj.get("status") or {}).get("replicas", 0)),
                           "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))}}

    def _scale_write(self, route: _Route, body: Any, patch_type: str | None, dry_run: bool) -> dict[str, Any]:
        store, rt = self.emu.store, route.rt
        with store.lock:
            current = store.get(rt, route.namespace, str(route.name))
            scale = self._scale_doc(rt, current)
            if patch_type is None:
                new_scale = body if isinstance(body, dict) else {}
                sent_rv = (new_scale.get("metadata") or {}).get("resourceVersion")
                if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
                    raise errors.conflict(rt.plural, rt.group, str(route.name), errors.STALE_OBJECT)
            elif patch_type == STRATEGIC_PATCH:
                new_scale = strategic_merge_patch(scale, body)
            elif patch_type in (MERGE_PATCH, APPLY_PATCH):
                new_scale = merge_patch(scale, body)
            elif patch_type == JSON_PATCH:
                new_scale = json_patch(scale, body)
            else:
                raise ApiError(415, f"unsupported patch type {patch_type!r}", "UnsupportedMediaType")
            replicas = (new_scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid("Scale", "autoscaling", str(route.name),
                                     [("spec.replicas", "FieldValueInvalid", f"Invalid value: {replicas!r}: must be greater than or equal to 0")])
            if dry_run:
                scale["spec"]["replicas"] = replicas
                return scale
            obj = store.mutate(rt, route.namespace, str(route.name), lambda o: o.setdefault("spec", {}).__setitem__("replicas", replicas))
            return self._scale_doc(rt, obj or current)
