# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""scripts/test_times.py: where a run's time went, per test file, from the suites' JUnit files."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test_times.py"

UNIT = """<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.unit.test_a" name="t1" time="1.5"/>
<testcase classname="tests.unit.test_a" name="t2" time="2.5"/>
<testcase classname="tests.unit.test_b" name="t1" time="0.0"/>
</testsuite></testsuites>"""
INTEGRATION = """<testsuites><testsuite name="pytest" tests="1">
<testcase classname="tests.integration.test_slow" name="t" time="96.0"/>
</testsuite></testsuites>"""


def test_files_are_summed_and_listed_slowest_first(tmp_path):
    (tmp_path / "u.xml").write_text(UNIT, encoding="utf-8")
    (tmp_path / "i.xml").write_text(INTEGRATION, encoding="utf-8")
    (tmp_path / "broken.xml").write_text("<testsuites", encoding="utf-8")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--top", "2", str(tmp_path / "u.xml"), str(tmp_path / "i.xml"),
                           str(tmp_path / "broken.xml"), str(tmp_path / "missing.xml")], capture_output=True, text=True, check=True)
    lines = proc.stdout.splitlines()
    assert lines[0] == "worker time per test file (slowest 2 of 3, 100 s in all):", proc.stdout
    assert lines[1].split() == ["96.0", "s", "96.0", "%", "1", "tests", "tests/integration/test_slow.py"]
    assert lines[2].split() == ["4.0", "s", "4.0", "%", "2", "tests", "tests/unit/test_a.py"]
    assert len(lines) == 3


def test_no_report_prints_nothing(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none.xml")], capture_output=True, text=True, check=True)
    assert proc.stdout == ""
