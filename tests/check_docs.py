#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Check that ``ansible-doc`` renders every module and every filter of the INSTALLED collection.

Usage: python tests/check_docs.py [--collections-path DIR] [--collection dsxos.cluster] [--source DIR]

* Modules: every ``plugins/modules/*.py`` of the source tree must appear in ``ansible-doc -t module -l``.
* Filters: every name ``ansible-doc -t filter -l`` lists, plus every sidecar ``plugins/filter/*.yml``.
* Each plugin must have DOCUMENTATION with a ``short_description`` (modules also EXAMPLES; RETURN is left to validate-modules),
  must render as text and as JSON with exit status 0, and ``ansible-doc`` must print no warning.
Exits 0 when everything renders, 1 otherwise (one line per problem on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_COLLECTIONS_PATH = REPO / ".build" / "installed"
WARNING_MARKERS = ("[WARNING]", "[DEPRECATION WARNING]", "[ERROR]")


@dataclass
class DocRun:
    """Outcome of one ansible-doc call."""

    args: list[str]
    rc: int
    stdout: str
    stderr: str

    def warnings(self) -> list[str]:
        """Lines of output that carry an ansible warning or error marker."""
        return [line.strip() for line in (self.stdout + "\n" + self.stderr).splitlines() if any(m in line for m in WARNING_MARKERS)]


@dataclass
class Report:
    """Problems found so far, and what was checked."""

    problems: list[str] = field(default_factory=list)
    checked: dict[str, list[str]] = field(default_factory=dict)

    def add(self, message: str) -> None:
        """Record one problem."""
        self.problems.append(message)


def ansible_doc_env(collections_path: Path) -> dict[str, str]:
    """Environment that makes ansible-doc see only the installed copy of the collection."""
    env = dict(os.environ)
    env.pop("ANSIBLE_CONFIG", None)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(collections_path),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_DEPRECATION_WARNINGS="True",
        ANSIBLE_PAGER="cat",
        PAGER="cat",
        COLUMNS="160",
    )
    return env


def ansible_doc_command() -> list[str]:
    """The ansible-doc next to the running interpreter (the project venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "ansible-doc"
    return [str(beside)] if beside.exists() else ["ansible-doc"]


def run_doc(args: list[str], env: dict[str, str], cwd: Path) -> DocRun:
    """Run ansible-doc with the given arguments."""
    proc = subprocess.run(ansible_doc_command() + args, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=300)
    return DocRun(args=args, rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)


def listed(plugin_type: str, collection: str, env: dict[str, str], cwd: Path, report: Report) -> dict[str, str]:
    """Return {fqcn: short description} from ``ansible-doc -t TYPE -l COLLECTION --json``."""
    run = run_doc(["-t", plugin_type, "-l", collection, "--json"], env, cwd)
    if run.rc != 0:
        report.add(f"ansible-doc -t {plugin_type} -l {collection}: exit {run.rc}: {run.stderr.strip()}")
        return {}
    for warning in run.warnings():
        report.add(f"ansible-doc -t {plugin_type} -l {collection}: {warning}")
    try:
        data = json.loads(run.stdout or "{}")
    except json.JSONDecodeError as err:
        report.add(f"ansible-doc -t {plugin_type} -l {collection}: output is not JSON ({err})")
        return {}
    return {str(k): str(v) for k, v in data.items()}


def check_plugin(plugin_type: str, fqcn: str, env: dict[str, str], cwd: Path, report: Report) -> None:
    """Render one plugin as JSON and as text; record every problem."""
    label = f"{plugin_type} {fqcn}"
    as_json = run_doc(["-t", plugin_type, "--json", fqcn], env, cwd)
    if as_json.rc != 0:
        report.add(f"{label}: ansible-doc --json exit {as_json.rc}: {(as_json.stderr or as_json.stdout).strip()[-400:]}")
        return
    for warning in as_json.warnings():
        report.add(f"{label}: {warning}")
    try:
        entry = json.loads(as_json.stdout).get(fqcn) or {}
    except (json.JSONDecodeError, AttributeError) as err:
        report.add(f"{label}: ansible-doc --json output is not a JSON object ({err})")
        return
    _check_entry(plugin_type, fqcn, entry, report)
    as_text = run_doc(["-t", plugin_type, fqcn], env, cwd)
    if as_text.rc != 0:
        report.add(f"{label}: ansible-doc (text) exit {as_text.rc}: {(as_text.stderr or as_text.stdout).strip()[-400:]}")
    for warning in as_text.warnings():
        report.add(f"{label}: {warning}")
    if as_text.rc == 0 and fqcn.split(".")[-1] not in as_text.stdout:
        report.add(f"{label}: text rendering does not mention the plugin name")


def _check_entry(plugin_type: str, fqcn: str, entry: dict, report: Report) -> None:
    """The DOCUMENTATION/EXAMPLES checks of one plugin's ``ansible-doc --json`` entry."""
    label = f"{plugin_type} {fqcn}"
    doc = entry.get("doc") or {}
    if not doc:
        report.add(f"{label}: missing DOCUMENTATION")
    elif not doc.get("short_description"):
        report.add(f"{label}: DOCUMENTATION has no short_description")
    if plugin_type == "module" and not entry.get("examples"):
        report.add(f"{label}: missing EXAMPLES")


def text_sections(plugin_type: str, text: str) -> dict[str, str]:
    """Split a multi-plugin text rendering into {fqcn: its section} (each starts with ``> TYPE fqcn (path)``)."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    marker = f"> {plugin_type.upper()} "
    for line in text.splitlines():
        if line.startswith(marker):
            current = sections.setdefault(line[len(marker):].split(" ", 1)[0], [])
        current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def check_plugins(plugin_type: str, fqcns: list[str], env: dict[str, str], cwd: Path, report: Report) -> None:
    """Render every plugin of one type in ONE ``ansible-doc --json`` and ONE text call (each call costs ansible's start-up,
    ~1 s); when either fails, warns, or leaves a plugin out, every plugin is checked alone so each problem is named."""
    if not fqcns:
        return
    as_json = run_doc(["-t", plugin_type, "--json", *fqcns], env, cwd)
    as_text = run_doc(["-t", plugin_type, *fqcns], env, cwd)
    try:
        entries = json.loads(as_json.stdout) if as_json.rc == 0 else None
    except json.JSONDecodeError:
        entries = None
    sections = text_sections(plugin_type, as_text.stdout) if as_text.rc == 0 else {}
    clean = (isinstance(entries, dict) and not as_json.warnings() and not as_text.warnings()
             and all(isinstance(entries.get(f), dict) and f.split(".")[-1] in sections.get(f, "") for f in fqcns))
    if not clean:
        for fqcn in fqcns:
            check_plugin(plugin_type, fqcn, env, cwd, report)
        return
    for fqcn in fqcns:
        _check_entry(plugin_type, fqcn, entries[fqcn], report)


def module_names(source: Path) -> list[str]:
    """Module names from the source tree's plugins/modules/*.py."""
    return sorted(p.stem for p in (source / "plugins" / "modules").glob("*.py") if p.stem != "__init__")


def sidecar_filter_names(source: Path) -> list[str]:
    """Filter names documented by sidecar files plugins/filter/*.yml / *.yaml."""
    folder = source / "plugins" / "filter"
    return sorted({p.stem for pattern in ("*.yml", "*.yaml") for p in folder.glob(pattern)})


def check_collection(collections_path: Path, collection: str, source: Path) -> Report:
    """Check every module and filter of ``collection`` as installed under ``collections_path``."""
    report = Report()
    installed = collections_path.joinpath("ansible_collections", *collection.split("."))
    if not installed.is_dir():
        report.add(f"{installed}: collection not installed (run `make install-private`)")
        return report
    env = ansible_doc_env(collections_path)
    cwd = collections_path  # not the repo: an ansible.cfg there must not change what is checked

    listed_modules = listed("module", collection, env, cwd, report)
    modules = sorted(set(module_names(source)) | {name.rsplit(".", 1)[-1] for name in listed_modules})
    for name in module_names(source):
        if f"{collection}.{name}" not in listed_modules:
            report.add(f"module {collection}.{name}: plugins/modules/{name}.py exists but ansible-doc -l does not list it")
    listed_filters = listed("filter", collection, env, cwd, report)
    filters = sorted(set(sidecar_filter_names(source)) | {name.rsplit(".", 1)[-1] for name in listed_filters})

    check_plugins("module", [f"{collection}.{name}" for name in modules], env, cwd, report)
    check_plugins("filter", [f"{collection}.{name}" for name in filters], env, cwd, report)
    report.checked = {"module": modules, "filter": filters}
    return report


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections-path", type=Path, default=DEFAULT_COLLECTIONS_PATH,
                        help="directory holding ansible_collections/ (default: %(default)s)")
    parser.add_argument("--collection", default="dsxos.cluster")
    parser.add_argument("--source", type=Path, default=REPO, help="source tree whose plugins/ must all be documented")
    args = parser.parse_args(argv)
    report = check_collection(args.collections_path.resolve(), args.collection, args.source.resolve())
    for problem in report.problems:
        sys.stderr.write(f"FAIL {problem}\n")
    counts = ", ".join(f"{len(names)} {kind}s" for kind, names in report.checked.items())
    status = "failed" if report.problems else "passed"
    sys.stdout.write(f"check_docs: {status}: {counts or 'nothing checked'}; {len(report.problems)} problem(s)\n")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
