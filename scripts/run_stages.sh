#!/usr/bin/env bash
# Run test stages in order, stop at the first failure, end with one pytest-style summary line.
# Usage: scripts/run_stages.sh "name=command" ["name=command" ...]
# A stage passes when its command exits 0. Exit status: 0 when all passed, 1 otherwise.
set -uo pipefail

start=$(date +%s.%N)
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
    printf '========== 1 failed (%s), %d passed, %d not run in %ss [%s] ==========\n' "$failed" "${#passed[@]}" "$not_run" "$total" "$detail"
    exit 1
fi
printf '========== %d passed in %ss [%s] ==========\n' "${#passed[@]}" "$total" "$detail"
