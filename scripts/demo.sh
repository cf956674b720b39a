#!/usr/bin/env bash
# `make demo`: start the built-in Kubernetes cluster (emulator), run demo/lifecycle.yml against it, stop it.
# Usage: scripts/demo.sh <collections-root> <inventory> <out-dir>
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
COLLECTIONS="$1"
INVENTORY="$2"
OUT="$3"
VENV="${VENV:-$REPO/.venv}"
mkdir -p "$OUT"
KUBECONFIG_FILE="$OUT/kubeconfig"
rm -f "$KUBECONFIG_FILE"

cd "$REPO"
"$VENV/bin/python" -m tests.harness.k8s_emulator serve --nodes 8 --profile h100-eks --time-scale 0.05 \
    --demo-workloads --git-version v1.32.5-eks-7e2b1c3 --kubeconfig "$KUBECONFIG_FILE" >"$OUT/emulator.log" 2>&1 &
EMULATOR_PID=$!
trap 'kill "$EMULATOR_PID" 2>/dev/null || true; wait "$EMULATOR_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    [ -s "$KUBECONFIG_FILE" ] && break
    kill -0 "$EMULATOR_PID" 2>/dev/null || { cat "$OUT/emulator.log" >&2; exit 1; }
    sleep 0.1
done
[ -s "$KUBECONFIG_FILE" ] || { echo "the built-in cluster did not start" >&2; cat "$OUT/emulator.log" >&2; exit 1; }
echo "built-in cluster: 8 H100 nodes (Kubernetes API emulator), kubeconfig $KUBECONFIG_FILE"

# The default callback with YAML results: the playbook's multi-line messages print as plain tables and sentences.
ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False ANSIBLE_LOCALHOST_WARNING=False \
ANSIBLE_INVENTORY_UNPARSED_WARNING=False ANSIBLE_NOCOLOR=1 \
ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default ANSIBLE_CALLBACK_RESULT_FORMAT=yaml \
    "$VENV/bin/ansible-playbook" -i "$INVENTORY" "$REPO/demo/lifecycle.yml" \
    -e "demo_kubeconfig=$KUBECONFIG_FILE" -e "demo_out=$OUT"
echo
echo "bundles: $OUT/bundles/{helm,argocd,flux}   (try: $OUT/bundles/helm/deploy.sh --dry-run)"
