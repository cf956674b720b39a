#!/usr/bin/env bash
# Run test stages in order, stop at the first failure, end with one pytest-style summary line.
# Usage: scripts/run_stages.sh "name=command" ["name=command" ...]
# A stage passes when its command exits 0. Exit status: 0 when all passed, 1 otherwise.
set -uo pipefail

start=$(date +%s.%N)
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rm -f "$REPO"/.build/reports/pytest-*.xml

# Grand total over every pytest suite that ran (their JUnit files), as one plain closing line.
grand_total() {
    python3 - "$REPO"/.build/reports/pytest-*.xml <<'PY'
import sys
import xml.etree.ElementTree as ET
tests = failures = errors = skipped = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        continue
    for suite in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
        tests += int(suite.get("tests", 0))
        failures += int(suite.get("failures", 0))
        errors += int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
passed = tests - failures - errors - skipped
line = "%d passed, %d failed" % (passed, failures + errors)
if skipped:
    line += ", %d skipped" % skipped
print(line)
PY
}
passed=()
failed=""
timings=()
for stage in "$@"; do
    name="${stage%%=*}"
    command="${stage#*=}"
    printf '\n========== stage %s: %s ==========\n' "$name" "$command"
    t0=$(date +%s.%N)
    bash -c "$command"
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    timings+=("$name ${secs}s")
    if [ "$rc" -ne 0 ]; then
        failed="$name"
        printf '\n---------- stage %s FAILED (exit %d) after %ss ----------\n' "$name" "$rc" "$secs"
        break
    fi
    passed+=("$name")
done
total=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
ran=${#passed[@]}
[ -n "$failed" ] && ran=$((ran + 1))
not_run=$(( $# - ran ))
detail="$(printf '%s, ' "${timings[@]}")"
detail="${detail%, }"
if [ -n "$failed" ]; then
    printf '========== stage %s failed; %d stage(s) passed, %d not run in %ss [%s] ==========\n' "$failed" "${#passed[@]}" "$not_run" "$total" "$detail"
    echo "tests: $(grand_total)"
    exit 1
fi
printf '========== all %d stages OK in %ss [%s] ==========\n' "${#passed[@]}" "$total" "$detail"
echo "tests: $(grand_total)"
# where the time went, per test file (worker time, slowest first)
python3 "$REPO/scripts/test_times.py" "$REPO"/.build/reports/pytest-*.xml || true
