# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A real Prometheus for tests: Debian's ``prometheus`` on 127.0.0.1, plain HTTP, and ``promtool test rules``.

``PrometheusProcess(workdir, config, rule_groups).start()`` writes ``config`` (a dict: ``global``, ``scrape_configs``,
``alerting``; ``rule_files`` is set here) and the rule groups (a list of Prometheus rule groups, e.g. a PrometheusRule's
``spec.groups``) into ``workdir``, checks both with ``promtool``, starts ``prometheus`` on a free port with its own TSDB
directory (never the packaged systemd service), waits until ``/-/ready`` answers, and ``stop()`` ends exactly that
process (by its PID). ``query``, ``series``, ``targets`` and ``alerts`` read its HTTP API.

``promtool_test(workdir, rule_groups, tests)`` runs ``promtool test rules`` on a unit-test file (``tests``: the
``tests`` list of the file) over the rule groups unchanged; ``promtool_tests`` runs one process per test group, side by
side. A missing binary is an error naming the package
(``prometheus``), never a skip.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

from .alertmanager_process import free_port
from .server_process import ServerProcess

PACKAGE = "prometheus"


def binary(name: str) -> str:
    """The path of ``prometheus`` / ``promtool``; RuntimeError naming the Debian package without it."""
    found = shutil.which(name) or ("/usr/bin/" + name if os.path.exists("/usr/bin/" + name) else None)
    if found is None:
        raise RuntimeError("%s not found: install the Debian package %s (apt-get install -y --no-install-recommends %s; "
                           "scripts/system_deps.sh does)" % (name, PACKAGE, PACKAGE))
    return found


def write_rules(path: str, rule_groups: Sequence[Mapping[str, Any]]) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"groups": [dict(g) for g in rule_groups]}, handle, sort_keys=False, width=1000)
    return path


def promtool(*args: str, cwd: Optional[str] = None, timeout: float = 300.0) -> subprocess.CompletedProcess:
    return subprocess.run([binary("promtool")] + list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def promtool_test(workdir: str, rule_groups: Sequence[Mapping[str, Any]], tests: Sequence[Mapping[str, Any]],
                  evaluation_interval: str = "30s", name: str = "seam") -> Tuple[subprocess.CompletedProcess, str]:
    """``promtool test rules`` of ``tests`` over ``rule_groups`` (written unchanged to ``<name>.rules.yml``); returns the
    completed process and the test file's path."""
    os.makedirs(workdir, exist_ok=True)
    rules = write_rules(os.path.join(workdir, name + ".rules.yml"), rule_groups)
    test_path = os.path.join(workdir, name + ".test.yml")
    with open(test_path, "w", encoding="utf-8") as handle:
        # JSON is YAML: written at C speed (a replay file is megabytes; a slow dump holds the GIL from the exporters' threads)
        json.dump({"rule_files": [os.path.basename(rules)], "evaluation_interval": evaluation_interval, "tests": list(tests)}, handle)
    return promtool("test", "rules", os.path.basename(test_path), cwd=workdir), test_path


def promtool_tests(workdir: str, rule_groups: Sequence[Mapping[str, Any]], groups: Sequence[Mapping[str, Any]],
                   evaluation_interval: str = "30s", timeout: float = 300.0) -> List[Tuple[str, subprocess.CompletedProcess, str]]:
    """Each test group in its own file, the ``promtool test rules`` of all of them run side by side (the groups are
    independent; one process per group uses the cores). Returns (group name, completed process, test file) per group."""
    os.makedirs(workdir, exist_ok=True)
    rules = write_rules(os.path.join(workdir, "seam.rules.yml"), rule_groups)
    running = []
    for index, group in enumerate(groups):
        test_path = os.path.join(workdir, "group-%d.test.yml" % index)
        with open(test_path, "w", encoding="utf-8") as handle:
            json.dump({"rule_files": [os.path.basename(rules)], "evaluation_interval": evaluation_interval, "tests": [dict(group)]}, handle)
        proc = subprocess.Popen([binary("promtool"), "test", "rules", os.path.basename(test_path)], cwd=workdir,  # pylint: disable=consider-using-with
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        running.append((str(group.get("name") or index), proc, test_path))
    out = []
    for name, proc, test_path in running:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        out.append((name, subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), test_path))
    return out


class PrometheusProcess(ServerProcess):
    """One Prometheus process; use as a context manager or call ``start()``/``stop()``."""

    def __init__(self, workdir: str, config: Mapping[str, Any], rule_groups: Sequence[Mapping[str, Any]] = (),
                 start_timeout_s: float = 60.0) -> None:
        self.workdir = workdir
        self.config = dict(config)
        self.rule_groups = list(rule_groups)
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = os.path.join(workdir, "prometheus.log")
        self.config_path = os.path.join(workdir, "prometheus.yml")

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def start(self) -> "PrometheusProcess":
        prometheus = binary("prometheus")
        os.makedirs(self.workdir, exist_ok=True)
        storage = os.path.join(self.workdir, "data")
        os.makedirs(storage, exist_ok=True)
        config = dict(self.config)
        if self.rule_groups:
            config["rule_files"] = [write_rules(os.path.join(self.workdir, "rules.yml"), self.rule_groups)]
        with open(self.config_path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle, sort_keys=False, width=1000)
        checked = promtool("check", "config", self.config_path)
        if checked.returncode != 0:
            raise RuntimeError("promtool check config %s failed:\n%s%s" % (self.config_path, checked.stdout, checked.stderr))
        self.port = free_port()
        log = open(self.log_path, "wb")  # pylint: disable=consider-using-with
        try:
            self.proc = subprocess.Popen(
                [prometheus, "--config.file=" + self.config_path, "--storage.tsdb.path=" + storage,
                 "--web.listen-address=127.0.0.1:%d" % self.port, "--storage.tsdb.retention.time=1d", "--log.level=info"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.workdir)
        finally:
            log.close()
        self.wait_ready("prometheus", self.url + "/-/ready", self.start_timeout_s)
        return self

    def api(self, path: str, params: Optional[Sequence[Tuple[str, str]]] = None) -> Any:
        """GET ``/api/v1/<path>``; the ``data`` of a successful answer, RuntimeError otherwise."""
        url = self.url + "/api/v1/" + path + ("?" + urllib.parse.urlencode(list(params)) if params else "")
        with urllib.request.urlopen(url, timeout=30) as resp:
            body = json.loads(resp.read().decode("utf-8"))
        if body.get("status") != "success":
            raise RuntimeError("prometheus %s: %s" % (path, body))
        return body["data"]

    def query(self, expr: str, at: Optional[float] = None) -> List[Dict[str, Any]]:
        """An instant query's result vector."""
        params = [("query", expr)] + ([("time", "%.3f" % at)] if at is not None else [])
        return self.api("query", params)["result"]

    def query_range(self, expr: str, start: float, end: float, step: float) -> List[Dict[str, Any]]:
        return self.api("query_range", [("query", expr), ("start", "%.3f" % start), ("end", "%.3f" % end), ("step", "%g" % step)])["result"]

    def series(self, *matchers: str, start: Optional[float] = None, end: Optional[float] = None) -> List[Dict[str, str]]:
        """The label sets of the stored series matching any of ``matchers``."""
        params = [("match[]", m) for m in matchers]
        if start is not None:
            params.append(("start", "%.3f" % start))
        if end is not None:
            params.append(("end", "%.3f" % end))
        return self.api("series", params)

    def targets(self) -> List[Dict[str, Any]]:
        return self.api("targets")["activeTargets"]

    def alerts(self) -> List[Dict[str, Any]]:
        """The alerts of the rule manager (pending and firing) with labels, annotations, state and activeAt."""
        return self.api("alerts")["alerts"]
