# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Event-Driven Ansible source: Alertmanager webhook -> batches of normalized GPU fault events.

ansible-rulebook calls :func:`main` with its queue and the source's arguments. Run the file directly for a mock
runner that prints each batch as one JSON line (see docs/operate-eda.md).
"""
from __future__ import annotations

DOCUMENTATION = r"""
---
short_description: Receive Alertmanager webhooks and emit batches of normalized GPU fault events
description:
  - An HTTP server for Alertmanager's webhook receiver (payload version 4).
  - 'Every request must carry C(Authorization: Bearer <token>) (option O(token)) and/or an HMAC-SHA256 signature of the
    body in the header O(hmac_header) (option O(hmac_secret)); a missing or wrong one is answered 401.'
  - A body larger than O(max_body_bytes) is answered 413, a body that is not JSON or not a valid Alertmanager
    payload 400 (the reply lists every problem by field path); nothing of such a request is queued.
  - Each alert becomes one normalized event (node, gpu, uuid, code, fault_class, action, status, fingerprint,
    starts_at, ends_at, pods, alertname, severity, labels, dropped_labels), or is rejected with a reason when its node name or
    another label is not safe to act on (logged, counted, never passed on). A label whose key or value holds template
    text (C({{), C({%), C({#)) is left out of C(labels) and named in C(dropped_labels); such an alertname or severity becomes empty.
  - Events already passed on with the same (fingerprint, status, starts_at) within O(dedup_window_s) are dropped.
  - Accepted events wait in a bounded queue of O(queue_size) events; when it cannot take a request's events the
    request is answered 503 with C(Retry-After) (Alertmanager retries 5xx) and nothing of it is queued.
  - 'Events are collected for O(batch_window_s) seconds - or until O(batch_quiet_s) seconds pass without another event, or until
    O(batch_max) events - and put on the rulebook queue
    as ONE event per status, C({"batch": [events], "status": "firing"|"resolved", "nodes": [...], "count": N,
    "batch_id": I, "first_received_at": T, "emitted_at": T}), so that a storm becomes a few playbook runs.'
  - Prometheus metrics (prometheus_client) on C(/metrics) of the same listener, or of O(metrics_port).
options:
  host:
    description: Address to listen on.
    type: str
    default: 127.0.0.1
  port:
    description: TCP port to listen on.
    type: int
    default: 5050
  path:
    description: URL path of the webhook.
    type: str
    default: /alerts
  token:
    description: Bearer token Alertmanager sends (C(http_config.authorization.credentials_file)).
    type: str
  token_file:
    description: File holding the bearer token (instead of O(token)).
    type: path
  hmac_secret:
    description: Shared secret of the HMAC-SHA256 body signature (instead of or in addition to the token).
    type: str
  hmac_secret_file:
    description: File holding O(hmac_secret).
    type: path
  hmac_header:
    description: Header holding the hex signature, optionally prefixed C(sha256=).
    type: str
    default: X-Hub-Signature-256
  allow_unauthenticated:
    description: Accept requests without any token or signature (tests only). Without it, a token or a secret is required.
    type: bool
    default: false
  max_body_bytes:
    description: Largest request body accepted (413 above).
    type: int
    default: 1048576
  max_alerts:
    description: Most alerts one payload may hold (400 above).
    type: int
    default: 5000
  queue_size:
    description: Events the internal queue holds before requests are answered 503.
    type: int
    default: 10000
  retry_after_s:
    description: Value of the C(Retry-After) header of a 503.
    type: int
    default: 10
  dedup_window_s:
    description: Seconds during which an event with the same (fingerprint, status, starts_at) is dropped as a duplicate.
    type: float
    default: 600
  dedup_max_entries:
    description: Most (fingerprint, status, starts_at) keys remembered (the oldest are forgotten first).
    type: int
    default: 100000
  batch_window_s:
    description: Seconds a batch collects events, from its first event.
    type: float
    default: 5
  batch_quiet_s:
    description: The window also closes this many seconds after its latest event when no other event came meanwhile
      (a lone alert waits this long, not the whole O(batch_window_s); a storm that keeps arriving fills the window).
      0 turns batching off (every event is handed on at once, one playbook run each); a value not below O(batch_window_s)
      keeps the fixed window.
    type: float
    default: 1
  batch_first_quiet_s:
    description: A window that opens after a calm of at least O(batch_window_s) (no event at all) and holds the alerts
      of one node closes this many seconds after its latest event instead of O(batch_quiet_s), so a lone fault after a
      calm is handed on at once; the first alert of a second node turns the window back to O(batch_quiet_s) (the start
      of a storm stays one batch). Never longer than O(batch_quiet_s); set it to O(batch_quiet_s) to treat every window
      alike.
    type: float
    default: 0.2
  batch_max:
    description: Most events of one batch window (the window closes at once when it is reached).
    type: int
    default: 500
  metrics_port:
    description: Serve C(/metrics) on this port of O(host) instead of on the webhook listener.
    type: int
"""

EXAMPLES = r"""
- name: GPU sentinel
  hosts: all
  sources:
    - dsxos.cluster.alertmanager_gpu:
        host: 0.0.0.0
        port: 5050
        token_file: /etc/dsxos/eda-token
        batch_window_s: 5
        batch_quiet_s: 1
        batch_first_quiet_s: 0.2
        batch_max: 500
  rules:
    - name: Remediate
      condition: event.status == "firing"
      action:
        run_playbook:
          name: dsxos.cluster.remediate
          extra_vars:
            sentinel_events: "{{ event.batch }}"
"""

import argparse  # noqa: E402
import asyncio  # noqa: E402
import hashlib  # noqa: E402
import hmac  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Dict, List, Optional, Tuple  # noqa: E402

from aiohttp import web  # noqa: E402
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest  # noqa: E402

LOG = logging.getLogger("dsxos.cluster.alertmanager_gpu")

#: Request-level reasons of ``dsxos_eda_requests_rejected_total``.
REQUEST_REJECT_REASONS = ("unauthorized", "too_large", "malformed_json", "invalid_payload", "queue_full")


def _logic() -> Any:
    """The collection's pure logic (``operate/alert_events.py``). ansible-rulebook loads this file with ``runpy``
    without putting the collections root on ``sys.path``; when the import fails, the root this file is installed
    under (``<root>/ansible_collections/dsxos/cluster/extensions/eda/plugins/event_source/``) is appended."""
    # pylint: disable=import-outside-toplevel
    try:
        from ansible_collections.dsxos.cluster.plugins.module_utils.operate import alert_events
    except ImportError:
        here = Path(__file__).resolve()
        if len(here.parents) < 8 or here.parents[6].name != "ansible_collections":
            raise
        sys.path.append(str(here.parents[7]))
        from ansible_collections.dsxos.cluster.plugins.module_utils.operate import alert_events
    return alert_events


AE = _logic()


def _int(args: Dict[str, Any], key: str, default: int, minimum: int = 1) -> int:
    value = args.get(key, default)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("alertmanager_gpu: %s must be an integer >= %d, got %r" % (key, minimum, value))
    return value


def _float(args: Dict[str, Any], key: str, default: float) -> float:
    value = args.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("alertmanager_gpu: %s must be a number, got %r" % (key, value)) from None
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise ValueError("alertmanager_gpu: %s must be a non-negative number, got %r" % (key, value))
    return number


def _secret(args: Dict[str, Any], key: str) -> Optional[str]:
    """The value of ``key`` or the first line of the file ``<key>_file`` (never logged)."""
    value = args.get(key)
    path = args.get(key + "_file")
    if value and path:
        raise ValueError("alertmanager_gpu: set %s or %s_file, not both" % (key, key))
    if path:
        with open(str(path), "r", encoding="utf-8") as handle:
            value = handle.read().strip()
        if not value:
            raise ValueError("alertmanager_gpu: %s_file %s is empty" % (key, path))
    if value is not None and not isinstance(value, str):
        raise ValueError("alertmanager_gpu: %s must be a string" % key)
    return value or None


class Settings:
    """The source's arguments, checked."""

    def __init__(self, args: Dict[str, Any]) -> None:
        self.host = str(args.get("host", "127.0.0.1"))
        self.port = _int(args, "port", 5050, minimum=0)
        self.path = str(args.get("path", "/alerts"))
        if not self.path.startswith("/"):
            raise ValueError("alertmanager_gpu: path must start with '/', got %r" % self.path)
        self.token = _secret(args, "token")
        self.hmac_secret = _secret(args, "hmac_secret")
        self.hmac_header = str(args.get("hmac_header", "X-Hub-Signature-256"))
        self.allow_unauthenticated = args.get("allow_unauthenticated", False) in (True, "true", "True", "yes")
        if not (self.token or self.hmac_secret or self.allow_unauthenticated):
            raise ValueError("alertmanager_gpu: set token (or token_file) and/or hmac_secret (or hmac_secret_file); "
                             "allow_unauthenticated: true turns authentication off (tests only)")
        self.max_body_bytes = _int(args, "max_body_bytes", 1048576)
        self.limits = AE.PayloadLimits(max_alerts=_int(args, "max_alerts", 5000)).validate()
        self.queue_size = _int(args, "queue_size", 10000)
        self.retry_after_s = _int(args, "retry_after_s", 10, minimum=0)
        self.dedup_window_s = _float(args, "dedup_window_s", 600.0)
        self.dedup_max_entries = _int(args, "dedup_max_entries", 100000)
        self.batch_window_s = _float(args, "batch_window_s", 5.0)
        self.batch_quiet_s = _float(args, "batch_quiet_s", 1.0)
        self.batch_first_quiet_s = _float(args, "batch_first_quiet_s", 0.2)
        self.batch_max = _int(args, "batch_max", 500)
        metrics_port = args.get("metrics_port")
        self.metrics_port = None if metrics_port in (None, "") else _int(args, "metrics_port", 0, minimum=0)


class Metrics:
    """The source's Prometheus metrics, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.received = Counter("dsxos_eda_alerts_received", "Alerts received in valid webhook payloads", registry=reg)
        self.alerts_rejected = Counter("dsxos_eda_alerts_rejected", "Alerts not passed on (unsafe node name or label)",
                                       ["reason"], registry=reg)
        self.requests_rejected = Counter("dsxos_eda_requests_rejected", "Webhook requests refused, by reason",
                                         ["reason"], registry=reg)
        self.deduplicated = Counter("dsxos_eda_alerts_deduplicated", "Alerts dropped as duplicates (fingerprint, status, starts_at)",
                                    registry=reg)
        self.forwarded = Counter("dsxos_eda_events_forwarded", "Normalized events put on the rulebook queue", registry=reg)
        self.batches = Counter("dsxos_eda_batches_forwarded", "Batch events put on the rulebook queue", ["status"],
                               registry=reg)
        self.queue_depth = Gauge("dsxos_eda_queue_depth", "Events waiting in the internal queue", registry=reg)
        self.queue_capacity = Gauge("dsxos_eda_queue_capacity", "Size of the internal queue", registry=reg)
        for reason in AE.REJECT_REASONS:
            self.alerts_rejected.labels(reason=reason)
        for reason in REQUEST_REJECT_REASONS:
            self.requests_rejected.labels(reason=reason)
        for status in AE.STATUSES:
            self.batches.labels(status=status)


class AlertSource:
    """The HTTP server, the internal queue and the batching pump of one source."""

    def __init__(self, settings: Settings, queue: Any) -> None:
        self.settings = settings
        self.out = queue
        self.metrics = Metrics()
        self.metrics.queue_capacity.set(settings.queue_size)
        self.pending: "asyncio.Queue[Tuple[Dict[str, Any], float]]" = asyncio.Queue(maxsize=settings.queue_size)
        self.dedup = AE.Deduplicator(settings.dedup_window_s, settings.dedup_max_entries)
        self.batcher = AE.Batcher(settings.batch_window_s, settings.batch_max, settings.batch_quiet_s, settings.batch_first_quiet_s)
        self.batch_ids = 0
        self.window_received_at: Optional[float] = None
        self.runners: List[web.AppRunner] = []
        self.lock = asyncio.Lock()

    # -- HTTP --------------------------------------------------------------------------------------------------------

    def _refuse(self, status: int, reason: str, message: str, **extra: Any) -> web.Response:
        self.metrics.requests_rejected.labels(reason=reason).inc()
        LOG.warning("webhook request refused (%d %s): %s", status, reason, message)
        body = {"error": reason, "message": message}
        body.update(extra.pop("body", {}))
        return web.json_response(body, status=status, **extra)

    def _bearer_ok(self, request: web.Request) -> bool:
        if not self.settings.token:
            return True
        header = request.headers.get("Authorization", "")
        scheme, _sep, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode("utf-8"), self.settings.token.encode("utf-8"))

    def _signature_ok(self, request: web.Request, body: bytes) -> bool:
        if not self.settings.hmac_secret:
            return True
        given = request.headers.get(self.settings.hmac_header, "").strip()
        if given.lower().startswith("sha256="):
            given = given[7:]
        expected = hmac.new(self.settings.hmac_secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(given.lower().encode("ascii", "replace"), expected.encode("ascii"))

    async def handle_alerts(self, request: web.Request) -> web.Response:
        unauthorized = {"headers": {"WWW-Authenticate": 'Bearer realm="dsxos-eda"'}}
        if not self._bearer_ok(request):
            return self._refuse(401, "unauthorized", "missing or wrong bearer token", **unauthorized)
        limit = self.settings.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            return self._refuse(413, "too_large", "body of %d bytes; at most %d are accepted" % (request.content_length, limit))
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._refuse(413, "too_large", "body larger than %d bytes" % limit)
        if not self._signature_ok(request, body):
            return self._refuse(401, "unauthorized", "missing or wrong %s signature" % self.settings.hmac_header, **unauthorized)
        try:
            payload = json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            return self._refuse(400, "malformed_json", "the body is not UTF-8 JSON: %s" % str(exc)[:200])
        try:
            results = AE.normalize_payload(payload, self.settings.limits)
        except AE.AlertPayloadError as exc:
            return self._refuse(400, "invalid_payload", exc.message[:500], body={"errors": exc.errors[:50]})
        return await self._accept(payload, results)

    async def _accept(self, payload: Dict[str, Any], results: List[Any]) -> web.Response:
        events, rejections = AE.split_results(results)
        self.metrics.received.inc(len(results))
        for rejection in rejections:
            self.metrics.alerts_rejected.labels(reason=rejection.reason).inc()
            LOG.warning("alert rejected (%s): alertname %s, fingerprint %s, status %s: %s", rejection.reason,
                        AE.shown(rejection.alertname), rejection.fingerprint, rejection.status, rejection.message)
        async with self.lock:
            now = time.monotonic()
            fresh, duplicates = self.dedup.split(events, now)
            free = self.settings.queue_size - self.pending.qsize()
            if len(fresh) > free:
                return self._refuse(503, "queue_full", "%d new events, room for %d; retry later" % (len(fresh), free),
                                    headers={"Retry-After": str(self.settings.retry_after_s)})
            received_at = time.time()
            for event in fresh:
                self.dedup.record(event, now)
                self.pending.put_nowait((event, received_at))
        self.metrics.deduplicated.inc(len(duplicates))
        self.metrics.queue_depth.set(self.pending.qsize())
        LOG.info("webhook from receiver %s, group %s: %d alerts, %d queued, %d duplicates, %d rejected",
                 AE.shown(payload["receiver"]), AE.shown(payload["groupLabels"]), len(results), len(fresh), len(duplicates),
                 len(rejections))
        return web.json_response({"accepted": len(fresh), "duplicates": len(duplicates),
                                  "rejected": [item.to_dict() for item in rejections]})

    async def handle_metrics(self, request: web.Request) -> web.Response:  # pylint: disable=unused-argument
        self.metrics.queue_depth.set(self.pending.qsize())
        return web.Response(body=generate_latest(self.metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def handle_health(self, request: web.Request) -> web.Response:  # pylint: disable=unused-argument
        return web.json_response({"status": "ok", "queued": self.pending.qsize(), "batching": len(self.batcher)})

    async def start(self) -> None:
        app = web.Application(client_max_size=self.settings.max_body_bytes)
        app.router.add_post(self.settings.path, self.handle_alerts)
        app.router.add_get("/healthz", self.handle_health)
        if self.settings.metrics_port is None:
            app.router.add_get("/metrics", self.handle_metrics)
        await self._serve(app, self.settings.port)
        if self.settings.metrics_port is not None:
            metrics_app = web.Application()
            metrics_app.router.add_get("/metrics", self.handle_metrics)
            await self._serve(metrics_app, self.settings.metrics_port)
        LOG.info("alertmanager_gpu listening on http://%s:%d%s (batch window %ss, quiet %ss, after a calm %ss, at most %d events)",
                 self.settings.host, self.settings.port, self.settings.path, self.settings.batch_window_s, self.settings.batch_quiet_s,
                 self.settings.batch_first_quiet_s, self.settings.batch_max)

    async def _serve(self, app: web.Application, port: int) -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self.runners.append(runner)
        await web.TCPSite(runner, self.settings.host, port).start()

    async def stop(self) -> None:
        for runner in self.runners:
            await runner.cleanup()
        self.runners = []

    # -- batching ----------------------------------------------------------------------------------------------------

    async def pump(self) -> None:
        """Move events from the internal queue into batches and batches onto the rulebook queue, forever."""
        while True:
            deadline = self.batcher.deadline()
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                event, received_at = await asyncio.wait_for(self.pending.get(), timeout)
            except asyncio.TimeoutError:
                batches = self.batcher.poll(time.monotonic())
            else:
                if self.window_received_at is None:
                    self.window_received_at = received_at
                batches = self.batcher.add(event, time.monotonic())
                batches += self.batcher.poll(time.monotonic())
            if batches:
                first, self.window_received_at = self.window_received_at, None
                for batch in batches:
                    await self.emit(batch, first)
            self.metrics.queue_depth.set(self.pending.qsize())

    async def emit(self, batch: Any, first_received_at: Optional[float]) -> None:
        self.batch_ids += 1
        item = batch.to_event(self.batch_ids, first_received_at=first_received_at, emitted_at=time.time())
        await self.out.put(item)
        self.metrics.forwarded.inc(item["count"])
        self.metrics.batches.labels(status=item["status"]).inc()
        LOG.info("batch %d: %d %s events over %d nodes", item["batch_id"], item["count"], item["status"], len(item["nodes"]))


async def main(queue: Any, args: Dict[str, Any]) -> None:
    """ansible-rulebook's entry point: serve until cancelled, putting one batch event per window and status on ``queue``."""
    source = AlertSource(Settings(dict(args or {})), queue)
    await source.start()
    try:
        await source.pump()
    finally:
        await source.stop()


class _PrintQueue:
    """The mock runner's queue: prints every event as one JSON line (after ``delay_s``, to show back pressure)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.queue: "asyncio.Queue[Dict[str, Any]]" = asyncio.Queue(maxsize=1)

    async def put(self, event: Dict[str, Any]) -> None:
        await self.queue.put(event)

    async def consume(self) -> None:
        while True:
            event = await self.queue.get()
            await asyncio.sleep(self.delay_s)
            print(json.dumps(event, sort_keys=True), flush=True)


async def _mock(args: Dict[str, Any], delay_s: float) -> None:
    out = _PrintQueue(delay_s)
    consumer = asyncio.ensure_future(out.consume())
    try:
        await main(out, args)
    finally:
        consumer.cancel()


if __name__ == "__main__":
    PARSER = argparse.ArgumentParser(description="Mock runner of the alertmanager_gpu source: prints each batch as a JSON line.")
    PARSER.add_argument("--args", default="{}", help="the source's arguments as a JSON object")
    PARSER.add_argument("--consumer-delay", type=float, default=0.0, help="seconds the mock consumer takes per event")
    OPTIONS = PARSER.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_mock(json.loads(OPTIONS.args), OPTIONS.consumer_delay))
    except KeyboardInterrupt:
        pass
