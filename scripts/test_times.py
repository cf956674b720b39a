# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Where a test run's time went: the pytest suites' JUnit files summed per test file, slowest first.

Usage: python3 scripts/test_times.py [--top N] REPORT.xml [...]   (scripts/run_stages.sh runs it over .build/reports/pytest-*.xml)
With parallel workers the per-file sums are worker time (setup, call and teardown of every test), not wall time.
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def per_file(paths: list[str]) -> dict[str, tuple[float, int]]:
    """{test file: (seconds, tests)} over every ``testcase`` of the given JUnit files (unreadable files are skipped)."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError):
            continue
        for case in root.iter("testcase"):
            name = (case.get("classname") or "?").replace(".", "/") + ".py"
            entry = totals[name]
            entry[0] += float(case.get("time") or 0.0)
            entry[1] += 1
    return {name: (secs, int(count)) for name, (secs, count) in totals.items()}


def main(argv: list[str] | None = None) -> int:
    """Print the slowest files and the total."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("reports", nargs="*")
    args = parser.parse_args(argv)
    files = per_file(args.reports)
    if not files:
        return 0
    total = sum(secs for secs, dummy_count in files.values())
    sys.stdout.write("worker time per test file (slowest %d of %d, %.0f s in all):\n" % (min(args.top, len(files)), len(files), total))
    for name, (secs, count) in sorted(files.items(), key=lambda kv: -kv[1][0])[:args.top]:
        sys.stdout.write("  %7.1f s %5.1f %%  %4d tests  %s\n" % (secs, 100.0 * secs / total if total else 0.0, count, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
