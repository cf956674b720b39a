#!/usr/bin/env bash
# `make demo`: the whole lifecycle on the built-in cluster (the Kubernetes API emulator, 8 H100 nodes, one of them with
# a slow NCCL link):
#   1. demo/lifecycle.yml: snapshot -> Configure (Helm, Argo CD, Flux bundles) -> drift -> Certify (NCCL Jobs; the slow
#      node is found and named, the report written);
#   2. scripts/demo_operate.py: a real Alertmanager and a real ansible-rulebook (the shipped rulebook and EDA source);
#      one GPU Job runs on every certified node; an XID 79 alert is posted to Alertmanager, the XID kills the Job on its
#      node, and the sentinel quarantines, drains, remediates, recertifies and returns the node; the other Jobs complete;
#   3. demo/report.yml: the sentinel status and fleet reports (GPU-hours completed, lost to the fault, lost to
#      quarantine: the useful-work measure), and the node's story.
# Everything started here is stopped at the end (trap); all logs go under <out-dir>/logs.
# A missing Alertmanager, Java or ansible-rulebook is named with what to install, before anything starts.
# Usage: scripts/demo.sh <collections-root> <inventory> <out-dir>
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
COLLECTIONS="$(cd "$1" && pwd)"
INVENTORY="$2"
OUT="$3"
VENV="${VENV:-$REPO/.venv}"
DEGRADED_NODE="${DEMO_DEGRADED_NODE:-ip-10-0-0-5.ec2.internal}"
TIME_SCALE=0.05  # the emulator's delays (grace periods, Job durations) run 20x faster than real time
STARTED=$SECONDS

"$VENV/bin/python" "$REPO/scripts/demo_operate.py" check --venv "$VENV" || exit $?

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# What one demo run writes (the bundles stay: a rerun shows they are rewritten only when they change).
rm -rf "$OUT/certify" "$OUT/recertify" "$OUT/sentinel" "$OUT/eda" "$OUT/alertmanager" "$OUT/logs" "$OUT/operate.json" \
    "$OUT/kubeconfig" "$OUT/emulator.log"
mkdir -p "$OUT/logs"
KUBECONFIG_FILE="$OUT/kubeconfig"

PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$REPO"
"$VENV/bin/python" -m tests.harness.k8s_emulator serve --nodes 8 --profile h100-eks --time-scale "$TIME_SCALE" \
    --demo-workloads --certify-jobs --degraded "$DEGRADED_NODE=0.5" \
    --git-version v1.32.5-eks-7e2b1c3 --kubeconfig "$KUBECONFIG_FILE" >"$OUT/logs/emulator.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do
    [ -s "$KUBECONFIG_FILE" ] && break
    kill -0 "${PIDS[0]}" 2>/dev/null || { cat "$OUT/logs/emulator.log" >&2; exit 1; }
    sleep 0.1
done
[ -s "$KUBECONFIG_FILE" ] || { echo "the built-in cluster did not start" >&2; cat "$OUT/logs/emulator.log" >&2; exit 1; }
echo "built-in cluster: 8 H100 nodes (Kubernetes API emulator), kubeconfig $KUBECONFIG_FILE"
echo "  (one node, $DEGRADED_NODE, has a slow NCCL link: certification has to find it)"

# The default callback with YAML results: the playbooks' multi-line messages print as plain tables and sentences.
export ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False ANSIBLE_LOCALHOST_WARNING=False \
    ANSIBLE_INVENTORY_UNPARSED_WARNING=False ANSIBLE_NOCOLOR=1 ANSIBLE_PIPELINING=True
playbook() {
    ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default ANSIBLE_CALLBACK_RESULT_FORMAT=yaml \
        "$VENV/bin/ansible-playbook" -i "$INVENTORY" "$@" -e "demo_kubeconfig=$KUBECONFIG_FILE" -e "demo_out=$OUT"
}

# Alertmanager and ansible-rulebook (Java: the slowest to start) start now, next to part 1; the helper holds its
# output back and posts the alert once part 1 is done.
"$VENV/bin/python" "$REPO/scripts/demo_operate.py" run --venv "$VENV" --collections "$COLLECTIONS" \
    --kubeconfig "$KUBECONFIG_FILE" --out "$OUT" --certify-report "$OUT/certify/certify-report.json" \
    --go-file "$OUT/logs/lifecycle.done" --time-scale "$TIME_SCALE" &
OPERATE_PID=$!
PIDS+=("$OPERATE_PID")
echo "starting Alertmanager and ansible-rulebook in the background (scripts/demo_operate.py)"

echo
echo "=== 1/3 Configure and Certify (demo/lifecycle.yml), at $((SECONDS - STARTED)) s"
playbook "$REPO/demo/lifecycle.yml"

echo
echo "=== 2/3 Operate: XID 79 -> Alertmanager -> Event-Driven Ansible -> sentinel (scripts/demo_operate.py), at $((SECONDS - STARTED)) s"
touch "$OUT/logs/lifecycle.done"
wait "$OPERATE_PID"
NODE="$("$VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["node"])' "$OUT/operate.json")"

echo
echo "=== 3/3 Reports (demo/report.yml), at $((SECONDS - STARTED)) s"
playbook "$REPO/demo/report.yml" -e "demo_node=$NODE"

echo
echo "Reports:"
for path in "$OUT"/bundles/helm/recipe.yaml "$OUT"/certify/certify-report.* "$OUT"/recertify/*/certify-report.* \
        "$OUT"/sentinel/status.* "$OUT"/sentinel/fleet-status.* "$OUT"/operate.json; do
    if [ -e "$path" ]; then echo "  $path"; fi
done
echo "Bundles: $OUT/bundles/{helm,argocd,flux}   (try: $OUT/bundles/helm/deploy.sh --dry-run)"
echo "Logs:    $OUT/logs   (emulator, ansible-rulebook; Alertmanager's under $OUT/alertmanager)"
echo "The demo took $((SECONDS - STARTED)) s."
