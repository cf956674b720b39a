# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The layering rules of docs/architecture.md, enforced on the source (every import, also inside functions).

* ``plugins/module_utils/`` holds packages only; which package may import which is ``ALLOWED`` below (the same table
  as the diagram in docs/architecture.md, which this test also reads).
* module_utils never imports Ansible; nothing under plugins/, roles/ or playbooks/ imports the test harnesses.
* every module and action plugin reaches its domain code through ``common.entry`` and one phase's ``entry`` file
  (``host_entry`` for the modules that run on every GPU host);
* those host-side entry files stay light: importing them loads neither ``kubernetes`` nor the controller-side code.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from typing import Dict, Iterator, List, Set, Tuple

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_UTILS = os.path.join(REPO, "plugins", "module_utils")
PREFIX = "ansible_collections.dsxos.cluster.plugins.module_utils."

#: package -> the packages it may import (besides itself). Keep in sync with docs/architecture.md.
ALLOWED: Dict[str, Set[str]] = {
    "common": set(),
    "kube": {"common"},
    "gpu": {"common"},
    "configure": {"common", "kube"},
    "certify": {"common", "kube", "gpu"},
    "operate": {"common", "kube", "gpu", "certify"},
}


#: The files a module or action plugin may import from module_utils: a phase's entry points.
ENTRY_FILES = ("entry", "host_entry")

#: Entry files of modules that run on every managed GPU host (AnsiballZ ships and imports them there, once per task).
HOST_ENTRIES = ("gpu.entry", "certify.host_entry")


def _imports(path: str) -> Iterator[Tuple[int, str]]:
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                yield node.lineno, "." * node.level + node.module
                continue
            yield node.lineno, node.module
            if node.module + "." == PREFIX:  # ``from ...module_utils import configure`` imports the package
                for alias in node.names:
                    yield node.lineno, node.module + "." + alias.name


def _py_files(top: str) -> List[str]:
    out = []
    for root, _dirs, files in os.walk(top):
        out.extend(os.path.join(root, name) for name in files if name.endswith(".py"))
    return sorted(out)


def _package_of(dotted: str) -> str:
    rest = dotted[len(PREFIX):] if dotted.startswith(PREFIX) else ""
    return rest.split(".")[0]


def layering_violations(files_by_package: Dict[str, List[str]]) -> List[str]:
    """Every import of one module_utils package by another that ``ALLOWED`` does not permit."""
    problems = []
    for package, files in files_by_package.items():
        for path in files:
            for line, name in _imports(path):
                rel = os.path.relpath(path, REPO)
                if name.startswith("."):
                    problems.append("%s:%d: relative import %s (use the full collection path)" % (rel, line, name))
                    continue
                if name == "ansible" or name.startswith("ansible."):
                    problems.append("%s:%d: module_utils must not import Ansible (%s)" % (rel, line, name))
                    continue
                if name.startswith("tests") or ".harness" in name:
                    problems.append("%s:%d: imports a test harness (%s)" % (rel, line, name))
                    continue
                target = _package_of(name)
                if not target or target == package:
                    continue
                if target not in ALLOWED:
                    problems.append("%s:%d: imports %s, which is not a module_utils package" % (rel, line, name))
                elif target not in ALLOWED.get(package, set()):
                    problems.append("%s:%d: %s may not import %s (%s)" % (rel, line, package, target, name))
    return problems


def _files_by_package() -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for entry in sorted(os.listdir(MODULE_UTILS)):
        full = os.path.join(MODULE_UTILS, entry)
        if os.path.isdir(full) and entry != "__pycache__":
            out[entry] = _py_files(full)
    return out


def test_module_utils_holds_only_the_declared_packages():
    loose = [name for name in os.listdir(MODULE_UTILS) if name.endswith(".py") and name != "__init__.py"]
    assert not loose, "files directly under plugins/module_utils/ (put them in a package): %s" % loose
    packages = set(_files_by_package())
    assert packages == set(ALLOWED), "packages %s, declared %s" % (sorted(packages), sorted(ALLOWED))


def test_no_forbidden_import_between_packages():
    problems = layering_violations(_files_by_package())
    assert not problems, "\n".join(problems)


def test_the_checker_catches_a_forbidden_import(tmp_path):
    """The rule is not vacuous: kube importing configure, a relative import and an Ansible import are all reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError\n"
                   "from .names import validate_node_name\n"
                   "def f():\n    from ansible.module_utils.basic import AnsibleModule\n"
                   "    from ansible_collections.dsxos.cluster.plugins.module_utils import operate\n")
    problems = layering_violations({"kube": [str(bad)]})
    assert len(problems) == 4, problems
    assert any("kube may not import configure" in p for p in problems)
    assert any("kube may not import operate" in p for p in problems)
    assert any("relative import" in p for p in problems) and any("must not import Ansible" in p for p in problems)


def test_the_rules_are_the_ones_documented():
    """docs/architecture.md lists each package's allowed imports in a table; it must say exactly ``ALLOWED``."""
    with open(os.path.join(REPO, "docs", "architecture.md"), encoding="utf-8") as handle:
        text = handle.read()
    documented = {}
    for match in re.finditer(r"^\| `(\w+)/` \| [^|]* \| ([^|]*) \|", text, re.M):
        names = set(re.findall(r"`(\w+)`", match.group(2)))
        documented[match.group(1)] = names
    assert documented == ALLOWED


@pytest.mark.parametrize("top", ["plugins", "roles", "playbooks"])
def test_shipped_content_never_imports_the_test_harnesses(top):
    problems = []
    for path in _py_files(os.path.join(REPO, top)):
        for line, name in _imports(path):
            if name == "tests" or name.startswith("tests.") or "harness" in name:
                problems.append("%s:%d: %s" % (os.path.relpath(path, REPO), line, name))
    assert not problems, problems


def _plugin_files() -> List[str]:
    files = []
    for kind in ("modules", "action"):
        files.extend(_py_files(os.path.join(REPO, "plugins", kind)))
    return [path for path in files if not path.endswith("__init__.py")]


@pytest.mark.parametrize("path", _plugin_files(), ids=lambda p: os.path.relpath(p, REPO))
def test_modules_and_actions_reach_domain_code_only_through_an_entry_file(path):
    """Argument spec -> one call into the phase's entry functions -> result: no other module_utils import, no try."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    bad = set()
    for _line, name in _imports(path):
        parts = name[len(PREFIX):].split(".") if name.startswith(PREFIX) else None
        if parts is not None and (len(parts) < 2 or parts[1] not in ENTRY_FILES):
            bad.add(name[len(PREFIX):])
    assert not bad, "%s imports module_utils other than an entry file: %s" % (os.path.relpath(path, REPO), sorted(bad))
    tree = ast.parse(source)
    tries = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Try)]
    assert not tries, "%s keeps its own try/except at line(s) %s" % (os.path.relpath(path, REPO), tries)


@pytest.mark.parametrize("entry", HOST_ENTRIES)
def test_host_side_entries_stay_light(entry):
    """gpu_health, nccl_test and training_goodput run on every GPU host: their entry must not pull in the Kubernetes
    client or the controller-side certification code (a second of start-up per task and a payload many times larger)."""
    code = ("import sys; import ansible_collections.dsxos.cluster.plugins.module_utils.%s; "
            "print('\\n'.join(sorted(sys.modules)))" % entry)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.split()
    heavy = [name for name in loaded if name == "kubernetes" or name.startswith("kubernetes.")
             or any(name.startswith(PREFIX + pkg) for pkg in ("kube", "configure", "operate"))
             or name.startswith(PREFIX + "certify.") and name.split(".")[-1] in CONTROLLER_ONLY]
    assert not heavy, "%s imports %s" % (entry, heavy[:10])


#: certify files that only the controller-side modules use.
CONTROLLER_ONLY = ("nccl_rounds", "runner_hosts", "runner_kubernetes", "isolation_planner", "isolation_model", "isolation_evidence",
                   "isolation_node_search", "isolation_link_search", "topology_grouping", "node_certification", "report_model",
                   "report_render", "report_html", "report_storage", "entry")
