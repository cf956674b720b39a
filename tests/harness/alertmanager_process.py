# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A real Prometheus Alertmanager for tests: Debian's ``prometheus-alertmanager`` on 127.0.0.1, plain HTTP.

``AlertmanagerProcess(workdir, config).start()`` writes ``config`` (a dict, e.g. extensions/alertmanager/alertmanager.yml
loaded and adapted) into ``workdir``, starts ``prometheus-alertmanager`` on a free port with its own storage directory
and clustering off (never the packaged systemd service), waits until ``/-/ready`` answers, and ``stop()`` ends exactly
that process (by its PID). ``post_alerts()`` posts to the v2 API as Prometheus does; ``alert()`` builds one alert.
``alertmanager_config()`` is that dict: the shipped example pointed at an EDA source, with the caller's timings.
A missing binary is an error that names the package, never a skip.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import yaml

from .server_process import ServerProcess

BINARY = "prometheus-alertmanager"
PACKAGE = "prometheus-alertmanager"
#: the shipped example configuration of this working tree (or of the installed collection this file belongs to)
EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "extensions" / "alertmanager" / "alertmanager.yml"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rfc3339(when: Optional[float] = None) -> str:
    """``when`` (epoch seconds, default now) as an RFC 3339 UTC time with milliseconds."""
    moment = datetime.datetime.fromtimestamp(time.time() if when is None else when, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (moment.microsecond // 1000)


def alert(labels: Dict[str, str], resolved: bool = False, annotations: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """One alert for ``POST /api/v2/alerts``: firing (no end), or resolved (ended a second ago)."""
    body: Dict[str, Any] = {"labels": dict(labels), "annotations": dict(annotations or {}),
                            "generatorURL": "http://prometheus.test/graph"}
    if resolved:
        body["endsAt"] = rfc3339(time.time() - 1)
    return body


def alertmanager_config(source_url: str, token_path: Union[str, Path], *, group_wait: str = "1s", group_interval: str = "1s",
                        repeat_interval: str = "1h", resolve_timeout: Optional[str] = None,
                        base: Optional[Union[str, Path]] = None) -> Dict[str, Any]:
    """extensions/alertmanager/alertmanager.yml (``base``: another copy, e.g. the installed collection's) pointed at the EDA
    source ``source_url`` (its ``/alerts``) with the bearer token in ``token_path``, and the sentinel route's timings.

    ``resolve_timeout`` (global) when given: alerts posted through the API without an end are resolved after it.
    The example has exactly one route and one webhook for it; anything else is an error here, never a guess.
    """
    config = yaml.safe_load(Path(base or EXAMPLE_CONFIG).read_text(encoding="utf-8"))
    if resolve_timeout is not None:
        config.setdefault("global", {})["resolve_timeout"] = resolve_timeout
    (route,) = config["route"]["routes"]
    route.update(group_wait=group_wait, group_interval=group_interval, repeat_interval=repeat_interval)
    receiver = next(item for item in config["receivers"] if item["name"] == route["receiver"])
    (webhook,) = receiver["webhook_configs"]
    webhook["url"] = source_url + "/alerts"
    webhook["http_config"]["authorization"]["credentials_file"] = str(token_path)
    return config


class AlertmanagerProcess(ServerProcess):
    """One Alertmanager process; use as a context manager or call ``start()``/``stop()``."""

    def __init__(self, workdir: str, config: Dict[str, Any], start_timeout_s: float = 30.0) -> None:
        self.workdir = workdir
        self.config = config
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = os.path.join(workdir, "alertmanager.log")

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def start(self) -> "AlertmanagerProcess":
        binary = shutil.which(BINARY) or ("/usr/bin/" + BINARY if os.path.exists("/usr/bin/" + BINARY) else None)
        if binary is None:
            raise RuntimeError("%s not found: install the Debian package %s (apt-get install -y --no-install-recommends %s; "
                               "scripts/system_deps.sh does)" % (BINARY, PACKAGE, PACKAGE))
        storage = os.path.join(self.workdir, "data")
        os.makedirs(storage, exist_ok=True)
        config_path = os.path.join(self.workdir, "alertmanager.yml")
        with open(config_path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(self.config, handle, sort_keys=False)
        self.port = free_port()
        log = open(self.log_path, "wb")  # pylint: disable=consider-using-with
        try:
            self.proc = subprocess.Popen(
                [binary, "--config.file=" + config_path, "--storage.path=" + storage,
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--cluster.listen-address=", "--log.level=debug"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        self.wait_ready(BINARY, self.url + "/-/ready", self.start_timeout_s)
        return self

    def post_alerts(self, alerts: List[Dict[str, Any]]) -> None:
        """``POST /api/v2/alerts`` (what Prometheus does); raises on any answer but 200."""
        request = urllib.request.Request(self.url + "/api/v2/alerts", data=json.dumps(alerts).encode("utf-8"),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            if resp.status != 200:
                raise RuntimeError("Alertmanager answered %d to POST /api/v2/alerts" % resp.status)

    def alerts(self) -> List[Dict[str, Any]]:
        """``GET /api/v2/alerts``: the alerts Alertmanager holds, with their ``status.inhibitedBy``."""
        with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=10) as resp:
            return json.loads(resp.read().decode("utf-8"))
