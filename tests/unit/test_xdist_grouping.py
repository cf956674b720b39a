# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The integration suite relies on pytest-xdist's ``--dist loadgroup``: every network-namespace fabric test runs on ONE
worker, one after another (tests/integration/conftest.py puts them into the group ``netns_fabric`` by their fixtures),
because they assert that no nccl-tests stand-in process is left on the machine, which a stand-in run of another worker
would break. pytest 9 with pytest-xdist 3.8 silently ignored every group (the fabric tests then ran on every worker and
failed now and then with "a stand-in process is left"). This runs a small session with the installed pytest and xdist
and the suite's own grouping hook, and fails when grouped tests do not share one worker.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

INTEGRATION_CONFTEST = Path(__file__).resolve().parents[1] / "integration" / "conftest.py"

CONFTEST = '''
import pytest

FABRIC_FIXTURES = frozenset({"netns_fabric"})


@pytest.fixture
def netns_fabric():
    return "stand-in for the fabric fixture"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The same marking as tests/integration/conftest.py: by the fixtures a test uses."""
    for item in items:
        if FABRIC_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("netns_fabric"))
'''

TESTS = '''
import json
import os
import time
from pathlib import Path

import pytest


def record(name):
    (Path(os.environ["GROUPING_OUT"]) / name).write_text(json.dumps(os.environ.get("PYTEST_XDIST_WORKER")))
    time.sleep(0.3)


@pytest.mark.parametrize("n", range(6))
def test_fabric(n, netns_fabric):
    record("fabric-%d" % n)


@pytest.mark.parametrize("n", range(6))
def test_other(n):
    record("other-%d" % n)
'''


def test_the_suite_marks_fabric_tests_with_the_mechanism_this_check_uses():
    text = INTEGRATION_CONFTEST.read_text(encoding="utf-8")
    assert "@pytest.hookimpl(tryfirst=True)" in text and "pytest.mark.xdist_group(FABRIC_GROUP)" in text
    assert "--dist loadgroup" in (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")


def test_grouped_tests_run_on_one_worker_and_the_others_spread(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_grouping.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "workers").mkdir()
    env = dict(os.environ, GROUPING_OUT=str(tmp_path / "workers"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist", "loadgroup", "-p", "no:cacheprovider",
                           "--basetemp", str(tmp_path / "base"), str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers = {p.name: json.loads(p.read_text()) for p in (tmp_path / "workers").iterdir()}
    fabric = {workers["fabric-%d" % n] for n in range(6)}
    assert len(workers) == 12 and None not in fabric, workers
    assert len(fabric) == 1, f"the xdist group was ignored: fabric tests ran on {sorted(fabric)}"
    assert len({workers["other-%d" % n] for n in range(6)} | fabric) > 1, "the other tests should spread over the workers"
