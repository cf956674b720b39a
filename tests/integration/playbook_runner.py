# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Run REAL ``ansible-playbook`` against the BUILT and INSTALLED collection and collect per-task results.

* :func:`build_and_install` builds the tarball from the working tree and installs it (offline) under a
  collections root, through ``scripts/install_collection.sh`` (the same script ``make install`` and ``make install-private`` use).
* :func:`run_playbook` runs a playbook (YAML text or a path) with only that installed copy visible
  (``ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False``; besides it only the test-only ``dsxos_test`` collections), a local inventory, and the test-only callback
  ``callback_plugins/dsxos_result_dump.py`` that records every task result as JSON.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import yaml

REPO = Path(__file__).resolve().parents[2]
CALLBACK_DIR = Path(__file__).resolve().parent / "callback_plugins"
CALLBACK_NAME = "dsxos_result_dump"
#: Test-only collections (``dsxos_test.stubs``, used by the stub task files of sentinel_stubs/): searched after the
#: installed dsxos.cluster, never built or shipped.
TEST_COLLECTIONS = Path(__file__).resolve().parent / "test_collections"
PLAYBOOK_TIMEOUT_S = 600
PLAYBOOK_FQCN = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+\.[A-Za-z0-9_.]+$")


def collections_path(collections_root: Union[str, os.PathLike]) -> str:
    """``ANSIBLE_COLLECTIONS_PATH`` for a test run: the installed build first, then the test-only collections."""
    return os.pathsep.join([str(collections_root), str(TEST_COLLECTIONS)])


@dataclass
class PlaybookResult:
    """What one ``ansible-playbook`` run did.

    ``tasks`` holds one dict per task result and host, in order, with keys ``play``, ``host``,
    ``task`` (name), ``action``, ``status`` (ok/failed/skipped/unreachable), ``changed``, ``failed``,
    ``skipped``, ``msg`` and ``result`` (the module's return values). ``stats`` is the recap per host.
    """

    rc: int
    stdout: str
    stderr: str
    command: list[str]
    tasks: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, dict[str, int]] = field(default_factory=dict)

    def results(self, name: str) -> list[dict[str, Any]]:
        """Every record of the task called ``name`` (all hosts, all runs of it), in order."""
        return [record for record in self.tasks if record["task"] == name]

    def task(self, name: str, host: Optional[str] = None) -> dict[str, Any]:
        """The record of task ``name`` (on ``host`` if given); exactly one must exist."""
        found = [record for record in self.results(name) if host is None or record["host"] == host]
        if len(found) != 1:
            known = sorted({record["task"] for record in self.tasks})
            where = f" on host {host!r}" if host else ""
            raise KeyError(f"task {name!r}{where}: expected 1 result, found {len(found)}; tasks run: {known}")
        return found[0]

    def describe(self) -> str:
        """Command, exit status and output, for assertion messages."""
        return f"$ {' '.join(self.command)}\nrc={self.rc}\n--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-4000:]}"


def build_and_install(collections_root: Path, dist_dir: Path, venv: Optional[Path] = None) -> Path:
    """Build the collection from the working tree and install it under ``collections_root``; return that root."""
    env = dict(os.environ)
    env["VENV"] = str(venv or Path(sys.executable).parent.parent)
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "install_collection.sh"), str(dist_dir), str(collections_root)],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building/installing the collection failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    installed = collections_root / "ansible_collections" / "dsxos" / "cluster" / "MANIFEST.json"
    if not installed.is_file():
        raise RuntimeError(f"no installed collection at {installed}:\n{proc.stdout}\n{proc.stderr}")
    return collections_root


def _bin(name: str) -> str:
    """An executable next to the running interpreter (the project venv), else ``name`` from PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else name


def _text_or_path(value: Union[str, os.PathLike], target: Path) -> Path:
    """A path to an existing file, or ``value`` written (as text) to ``target``."""
    if isinstance(value, os.PathLike) or ("\n" not in value and Path(value).is_file()):
        path = Path(value)
        if not path.is_file():
            raise FileNotFoundError(f"playbook/inventory file not found: {path}")
        return path.resolve()
    target.write_text(str(value), encoding="utf-8")
    return target


def default_inventory() -> str:
    """INI inventory with ``localhost`` on the local connection, using the test interpreter."""
    return f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n"


def playbook_env(collections_root: Path, workdir: Path, dump: Path) -> dict[str, str]:
    """Environment for ansible-playbook: only the installed collection, quiet, structured results to ``dump``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_COLLECTIONS_PATH=collections_path(collections_root),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_CALLBACK_PLUGINS=str(CALLBACK_DIR),
        ANSIBLE_CALLBACKS_ENABLED=CALLBACK_NAME,
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_RETRY_FILES_ENABLED="False",
        ANSIBLE_HOME=str(workdir / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(workdir / "ansible-tmp"),
        ANSIBLE_REMOTE_TEMP=str(workdir / "ansible-remote-tmp"),
        ANSIBLE_GALAXY_SERVER="https://galaxy.invalid",  # nothing may reach out to Galaxy
        DSXOS_RESULT_DUMP=str(dump),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)]),
    )
    return env


def read_dump(dump: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Task records and recap stats written by the callback."""
    tasks: list[dict[str, Any]] = []
    stats: dict[str, dict[str, int]] = {}
    if not dump.exists():
        return tasks, stats
    for line in dump.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("kind") == "stats":
            stats = record["stats"]
        else:
            tasks.append(record)
    return tasks, stats


def run_playbook(
    playbook: Union[str, os.PathLike],
    collections_root: Path,
    workdir: Path,
    extra_vars: Optional[Mapping[str, Any]] = None,
    check: bool = False,
    diff: bool = False,
    inventory: Union[None, str, os.PathLike, Mapping[str, Any]] = None,
    extra_args: Optional[list[str]] = None,
) -> PlaybookResult:
    """Run ``ansible-playbook`` once in ``workdir``; never raises on a failed play (look at ``rc``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    if isinstance(playbook, str) and PLAYBOOK_FQCN.match(playbook) and not Path(playbook).exists():
        book: Union[str, Path] = playbook  # a playbook shipped in a collection, e.g. dsxos.cluster.configure
    else:
        book = _text_or_path(playbook, workdir / "playbook.yml")
    if inventory is None:
        inventory = default_inventory()
    if isinstance(inventory, Mapping):
        inv_path = workdir / "inventory.yml"
        inv_path.write_text(yaml.safe_dump(dict(inventory), default_flow_style=False), encoding="utf-8")
    else:
        inv_path = _text_or_path(inventory, workdir / "inventory.ini")
    dump = workdir / "results.jsonl"
    if dump.exists():
        dump.unlink()
    command = [_bin("ansible-playbook"), "-i", str(inv_path), str(book)]
    if extra_vars:
        vars_path = workdir / "extra_vars.json"
        vars_path.write_text(json.dumps(dict(extra_vars)), encoding="utf-8")
        command += ["-e", f"@{vars_path}"]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    command += list(extra_args or [])
    proc = subprocess.run(
        command, cwd=workdir, env=playbook_env(collections_root, workdir, dump), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, check=False, timeout=PLAYBOOK_TIMEOUT_S,
    )
    tasks, stats = read_dump(dump)
    return PlaybookResult(rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr, command=command, tasks=tasks, stats=stats)
