#!/usr/bin/env bash
# Build the real Kubernetes control plane for the tests once (kube-apiserver, kube-controller-manager, kube-scheduler
# from Debian's kubernetes 1.20 sources, etcd from Debian's etcd-server) into a cache outside the repository
# (default ~/.cache/dsxos/kube-<version>, root overridable with DSXOS_KUBE_CACHE), and print the cache path.
# A finished build is found in seconds; see docs/real-control-plane.md.
# Usage: scripts/build_kube_control_plane.sh   (PYTHON=... picks the interpreter, default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
[ -x "$python" ] || python=python3
path="$("$python" -m tests.harness.kube_control_plane build)"  # the Go compiler runs at nice 10 (DSXOS_KUBE_BUILD_NICE)
echo "kube control plane: $path"
