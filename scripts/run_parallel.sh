#!/usr/bin/env bash
# Run independent check commands at the same time; print each one's output (in the order given) once all are done.
# Usage: scripts/run_parallel.sh "name=command" ["name=command" ...]
# Exit status: 0 when every command exited 0, else 1 (the failed ones are named). Used by `make test` for
# sanity, docs-check and lint, which read the sources and write only their own directories.
set -uo pipefail

logdir="$(mktemp -d)"
trap 'rm -rf "$logdir"' EXIT
names=()
pids=()
i=0
for check in "$@"; do
    name="${check%%=*}"
    command="${check#*=}"
    names+=("$name")
    (
        t0=$SECONDS
        bash -c "$command" </dev/null >"$logdir/$i.log" 2>&1
        rc=$?
        echo "$rc $((SECONDS - t0))" >"$logdir/$i.rc"
    ) &
    pids+=($!)
    echo "started $name: $command"
    i=$((i + 1))
done
failed=()
summary=()
for j in "${!pids[@]}"; do
    wait "${pids[$j]}"
    read -r rc secs <"$logdir/$j.rc" || { rc=1; secs=0; }
    printf '\n---------- %s (exit %s, %ss) ----------\n' "${names[$j]}" "$rc" "$secs"
    cat "$logdir/$j.log"
    summary+=("${names[$j]} ${secs}s")
    [ "$rc" -eq 0 ] || failed+=("${names[$j]}")
done
detail="$(printf '%s, ' "${summary[@]}")"
if [ "${#failed[@]}" -gt 0 ]; then
    printf '\n---------- FAILED: %s [%s] ----------\n' "${failed[*]}" "${detail%, }"
    exit 1
fi
printf '\n---------- all %d checks OK [%s] ----------\n' "${#names[@]}" "${detail%, }"
