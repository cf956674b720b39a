# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fixtures that run REAL ansible-playbook against the collection built and installed from the working tree.

* ``installed_collection`` (session): builds the tarball and installs it once per test session into a
  temporary collections root, so every session tests the current sources. Set
  ``DSXOS_INSTALLED_COLLECTIONS=<dir holding ansible_collections/>`` to reuse an existing install instead.
* ``ansible_run`` (function): ``ansible_run(playbook, extra_vars=None, check=False, diff=False,
  inventory=None, expect_rc=0) -> PlaybookResult``; asserts the exit status unless ``expect_rc=None``.
"""
from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from playbook_runner import PlaybookResult, build_and_install, run_playbook  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(scope="session")
def installed_collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Collections root (for ANSIBLE_COLLECTIONS_PATH) holding the freshly built dsxos.cluster."""
    reuse = os.environ.get("DSXOS_INSTALLED_COLLECTIONS")
    if reuse:
        root = Path(reuse).resolve()
        manifest = root / "ansible_collections" / "dsxos" / "cluster" / "MANIFEST.json"
        if not manifest.is_file():
            raise pytest.UsageError(f"DSXOS_INSTALLED_COLLECTIONS={reuse}: no installed collection ({manifest} missing)")
        return root
    base = tmp_path_factory.mktemp("collection")
    return build_and_install(base / "collections", base / "dist")


@pytest.fixture
def ansible_run(installed_collection: Path, tmp_path: Path):
    """Return a function that runs one playbook (YAML text, a path, or a collection playbook FQCN)."""
    counter = itertools.count(1)

    def run(playbook, extra_vars=None, check=False, diff=False, inventory=None, expect_rc=0, extra_args=None) -> PlaybookResult:
        workdir = tmp_path / f"run-{next(counter)}"
        result = run_playbook(
            playbook, installed_collection, workdir,
            extra_vars=extra_vars, check=check, diff=diff, inventory=inventory, extra_args=extra_args,
        )
        if expect_rc is not None:
            assert result.rc == expect_rc, f"ansible-playbook exit {result.rc}, expected {expect_rc}\n{result.describe()}"
        return result

    return run
