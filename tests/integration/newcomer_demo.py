# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A newcomer's checkout and shell, and the one ``make demo`` run of a test session in it.

``make demo`` (the real Makefile target: runtime venv, build, install into ``~/.ansible/collections``, the whole
lifecycle on the built-in cluster) takes 35-60 s on a 2-core machine. Two tests need it: test_readme.py runs every README
command as written, the first of which is ``make demo``, and test_demo.py checks what the demo did. The session fixture
``newcomer_demo`` (tests/integration/conftest.py) runs it ONCE, the way the README's first command runs it, and both
tests read that run: test_readme.py continues in the same checkout and home (its ``make demo`` finds the demo's output
and shows its log), test_demo.py checks the log and the output directory. conftest.py puts both tests on one xdist
worker (group ``make_demo``), so the fixture is made once.

* ``newcomer_env(home, tmp)``: a user's shell: no ``ANSIBLE_*`` settings, the venv not on ``PATH`` (the README's
  activate line puts it there), ``HOME`` the given fresh directory.
* ``run_make_demo(base)``: makes ``base/home`` and ``base/work`` (the checkout stand-in, ``.venv`` linked to the test
  venv) and runs ``make -C <repo> demo`` there with the build, the inventory and ``out/demo`` under ``base``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from playbook_runner import REPO

#: Generous for a loaded 2-core machine: every sentinel step is an ansible task.
DEMO_TIMEOUT_S = 1500


@dataclass(frozen=True)
class NewcomerDemo:
    """What ``make demo`` did in a newcomer's checkout: its exit status and output, and where everything is."""

    returncode: int
    stdout: str
    stderr: str
    base: Path
    home: Path
    work: Path

    @property
    def out(self) -> Path:
        """The demo's output directory (``out/demo`` of the checkout, as ``make demo`` writes it)."""
        return self.work / "out" / "demo"

    @property
    def log(self) -> Path:
        """``make demo``'s stdout, saved beside the checkout."""
        return self.base / "make-demo.log"


def newcomer_env(home: Path, tmp: Path) -> dict[str, str]:
    """A user's shell: no ANSIBLE_* settings, the venv not on PATH (the README's activate line puts it there)."""
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p and os.path.realpath(p) != os.path.realpath(venv_bin)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHONPATH", "MAKE"))}
    env.update(HOME=str(home), PATH=os.pathsep.join(path), VENV=str(Path(sys.executable).parent.parent),
               DSXOS_REPO=str(REPO), DSXOS_TMP=str(tmp), PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def run_make_demo(base: Path) -> NewcomerDemo:
    """Run ``make demo`` once in a fresh checkout stand-in under ``base`` (see the module docstring)."""
    home, work = base / "home", base / "work"
    for directory in (home, work, base / "inventory"):
        directory.mkdir(parents=True, exist_ok=True)
    (work / ".venv").symlink_to(Path(sys.executable).parent.parent)
    proc = subprocess.run(
        ["make", "-C", str(REPO), "demo", f"DIST={base / 'dist'}", f"DEMO_OUT={work / 'out' / 'demo'}",
         f"INVENTORY={base / 'inventory' / 'localhost.ini'}"],
        cwd=work, env=newcomer_env(home, base), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=DEMO_TIMEOUT_S, check=False)
    demo = NewcomerDemo(proc.returncode, proc.stdout, proc.stderr, base, home, work)
    demo.log.write_text(proc.stdout, encoding="utf-8")
    return demo
