#!/usr/bin/env bash
# Run one pytest suite and make its "no tests collected" outcome (exit 5) explicit:
#  * no test files at all under the directory  -> exit 0, with a loud "EMPTY SUITE" line (nothing written yet);
#  * test files exist but nothing was collected -> exit 5 (tests were lost: bad -k/-m, import-time skip, ...).
# Usage: scripts/pytest_suite.sh <tests-dir> [pytest args...]
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${VENV:-$REPO/.venv}/bin/python"
dir="$1"
shift
# Each suite leaves a JUnit file in .build/reports so scripts/run_stages.sh can print one grand total.
mkdir -p "$REPO/.build/reports"
"$PY" -m pytest "$dir" --junitxml="$REPO/.build/reports/pytest-$(basename "$dir").xml" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    files=$(find "$dir" -type f \( -name 'test_*.py' -o -name '*_test.py' \) | wc -l)
    if [ "$files" -eq 0 ]; then
        echo "EMPTY SUITE: $dir has no test files; counted as passed."
        exit 0
    fi
    echo "ERROR: $dir has $files test file(s) but pytest collected no tests (exit 5)." >&2
fi
exit "$rc"
