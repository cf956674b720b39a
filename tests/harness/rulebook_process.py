# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A real ``ansible-rulebook`` for tests, benches and the demo, serving the EDA source ``dsxos.cluster.alertmanager_gpu``.

``RulebookProcess(workdir, rulebook, inventory, rulebook_vars, collections).start()`` writes the inventory and the
rulebook's variables into ``workdir`` (dicts; paths are used as they are), starts ``ansible-rulebook`` (a rulebook path
or FQCN such as ``dsxos.cluster.gpu_sentinel``) in a session of its own, with ``JAVA_HOME``, the installed collection as
``ANSIBLE_COLLECTIONS_PATH`` (no scan of ``sys.path``), no colours and the binary's directory first on ``PATH``, its
output in a log file, and waits until the source's ``/healthz`` on ``sentinel_eda_port`` answers. ``stop()`` SIGTERMs
its process group (SIGKILL after a grace time); with ``kill_descendants`` first the processes below it by PID (the
playbooks ansible-runner starts in sessions of their own). Also a context manager.

A missing ``ansible-rulebook`` or Java is ``error`` (AssertionError in tests) naming what to install, never a skip.
``find_java_home``, ``localhost_inventory`` and ``descendants`` are the helpers the callers share.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Type, Union

import yaml

from .polling import wait_until

BINARY = "ansible-rulebook"
JAVA_PACKAGE = "openjdk-17-jre-headless"


def find_java_home(error: Type[BaseException] = AssertionError, required: bool = True) -> str:
    """``JAVA_HOME`` of the ``java`` on PATH (ansible-rulebook's rule engine needs Java 17+); ``""`` or ``error`` without one."""
    java = shutil.which("java")
    if java is None:
        if not required:
            return ""
        raise error("java not found: ansible-rulebook needs Java 17+ (apt-get install -y %s; scripts/system_deps.sh does)" % JAVA_PACKAGE)
    return str(Path(os.path.realpath(java)).parents[1])


def localhost_inventory(host_vars: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """An inventory of ``localhost`` alone (local connection, this Python) carrying ``host_vars``: ansible-rulebook hands
    its inventory to every playbook it runs, so the sentinel's settings go here."""
    localhost = dict(host_vars or {}, ansible_connection="local", ansible_python_interpreter=sys.executable)
    return {"all": {"hosts": {"localhost": localhost}}}


def descendants(pid: int) -> List[int]:
    """Every process below ``pid`` (from /proc), depth first."""
    parents: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                stat = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        parents.setdefault(int(fields[1]), []).append(int(entry))
    out: List[int] = []
    todo = list(parents.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(parents.get(child, []))
    return out


class RulebookProcess:  # pylint: disable=too-many-instance-attributes
    """One ansible-rulebook process; use as a context manager or call ``start()``/``stop()``.

    ``inventory`` / ``rulebook_vars``: a dict (written to ``workdir``/inventory.yml and ``workdir``/``vars_name``) or the
    path of a file the caller wrote. ``port``: the EDA source's port (default ``rulebook_vars["sentinel_eda_port"]``).
    ``binary``: default the ``ansible-rulebook`` beside this Python. ``extra_env`` is added to the environment (from
    ``os.environ``, without its ``ANSIBLE_*`` variables when ``clean_ansible_env``). ``java_home``: default
    ``find_java_home(error)``. ``verbose`` adds ``-v``. ``log_tail``: characters of the log an error quotes.
    """

    def __init__(self, workdir: Union[str, Path], rulebook: Union[str, Path], inventory: Union[Path, Mapping[str, Any]],
                 rulebook_vars: Union[Path, Mapping[str, Any]], collections: Union[str, Path], *, port: Optional[int] = None,
                 binary: Optional[Path] = None, log_path: Optional[Path] = None, vars_name: str = "vars.yml",
                 extra_env: Optional[Mapping[str, str]] = None, clean_ansible_env: bool = False, java_home: Optional[str] = None,
                 verbose: bool = True, start_timeout_s: float = 180.0, step_s: float = 0.5, stop_timeout_s: float = 30.0,
                 kill_descendants: bool = False, error: Type[BaseException] = AssertionError, log_tail: int = 6000) -> None:
        self.workdir = Path(workdir)
        self.rulebook = rulebook
        self.inventory = inventory
        self.rulebook_vars = rulebook_vars
        self.collections = Path(collections)
        if port is None:
            if not isinstance(rulebook_vars, Mapping):
                raise ValueError("RulebookProcess: give port= when the rulebook's variables are a file")
            port = int(rulebook_vars["sentinel_eda_port"])
        self.port = port
        self.binary = binary or Path(sys.executable).parent / BINARY
        self.log_path = log_path or self.workdir / "ansible-rulebook.log"
        self.vars_name = vars_name
        self.extra_env = dict(extra_env or {})
        self.clean_ansible_env = clean_ansible_env
        self.java_home = java_home
        self.verbose = verbose
        self.start_timeout_s = start_timeout_s
        self.step_s = step_s
        self.stop_timeout_s = stop_timeout_s
        self.kill_descendants = kill_descendants
        self.error = error
        self.log_tail = log_tail
        self.proc: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        """The EDA source's base URL (``/alerts``, ``/healthz``, ``/metrics`` below it)."""
        return "http://127.0.0.1:%d" % self.port

    @property
    def pid(self) -> int:
        assert self.proc is not None, "ansible-rulebook was not started"
        return self.proc.pid

    @property
    def returncode(self) -> Optional[int]:
        return None if self.proc is None else self.proc.poll()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def environment(self) -> Dict[str, str]:
        """The process environment: ``os.environ`` (``ANSIBLE_*`` dropped when ``clean_ansible_env``), the common settings,
        then ``extra_env``."""
        env = {key: value for key, value in os.environ.items() if not (self.clean_ansible_env and key.startswith("ANSIBLE_"))}
        env.update(JAVA_HOME=find_java_home(self.error) if self.java_home is None else self.java_home,
                   ANSIBLE_COLLECTIONS_PATH=str(self.collections), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False",
                   ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_NOCOLOR="1",
                   PATH=str(self.binary.parent) + os.pathsep + os.environ.get("PATH", ""))
        env.update(self.extra_env)
        return env

    def command(self, inventory_path: Path, vars_path: Path) -> List[str]:
        return ([str(self.binary), "--rulebook", str(self.rulebook), "-i", str(inventory_path), "--vars", str(vars_path)]
                + (["-v"] if self.verbose else []))

    def _file(self, data: Union[Path, Mapping[str, Any]], name: str) -> Path:
        if not isinstance(data, Mapping):
            return Path(data)
        path = self.workdir / name
        path.write_text(yaml.safe_dump(dict(data)), encoding="utf-8")
        return path

    def start(self, wait: bool = True) -> "RulebookProcess":
        """Start ansible-rulebook; with ``wait``, wait until its source answers (stopping it when it does not)."""
        if not self.binary.exists():
            raise self.error("%s is not installed in %s: pip install -r requirements-test.txt" % (BINARY, self.binary.parent))
        env = self.environment()
        command = self.command(self._file(self.inventory, "inventory.yml"), self._file(self.rulebook_vars, self.vars_name))
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
                command, cwd=str(self.workdir), env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                self.stop()
                raise
        return self

    def check_running(self) -> None:
        """``error`` with the log's tail when ansible-rulebook has exited."""
        if self.proc is not None and self.proc.poll() is not None:
            raise self.error("%s exited with %s (log %s):\n%s" % (BINARY, self.proc.returncode, self.log_path, self.log()[-self.log_tail:]))

    def healthy(self) -> bool:
        """Does the source answer ``/healthz``? ``error`` when ansible-rulebook has exited."""
        self.check_running()
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def wait_ready(self) -> "RulebookProcess":
        """Wait (``start_timeout_s``, every ``step_s``) until the source answers; ``error`` otherwise (it keeps running)."""
        wait_until(self.healthy, self.start_timeout_s, "the EDA source inside %s on %s (log %s)" % (BINARY, self.url, self.log_path),
                   step_s=self.step_s, error=self.error)
        return self

    def log(self) -> str:
        """The whole log so far ("" before there is one)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self) -> bool:
        """SIGTERM the processes below it by PID (with ``kill_descendants``) and its process group, SIGKILL the group after
        ``stop_timeout_s``. True when it was still running."""
        proc = self.proc
        if proc is None:
            return False
        if self.kill_descendants and proc.returncode is None:  # not reaped yet: the PID is still this child's
            for pid in descendants(proc.pid):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        if proc.poll() is not None:
            return False
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass
        return True

    def __enter__(self) -> "RulebookProcess":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
