#!/usr/bin/env bash
# Build the collection tarball from the working tree and install it, offline, as
#   <collections-root>/ansible_collections/dsxos/cluster
# Usage: scripts/install_collection.sh [dist-dir] [collections-root]
#   dist-dir          where the tarball goes            (default: .build/dist)
#   collections-root  what ANSIBLE_COLLECTIONS_PATH gets (default: .build/installed)
# Prints the collections root on the last line of stdout. The collection has no dependencies, so
# `--offline` means Galaxy is never contacted.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
DIST="${1:-$REPO/.build/dist}"
DEST="${2:-$REPO/.build/installed}"
mkdir -p "$DIST" "$DEST"
DIST="$(cd "$DIST" && pwd)"
DEST="$(cd "$DEST" && pwd)"

# Installing into a path that is on ANSIBLE_COLLECTIONS_PATH avoids ansible-galaxy's "not in configured path" warning.
export ANSIBLE_COLLECTIONS_PATH="$DEST"
export ANSIBLE_NOCOLOR=1

version="$("$VENV/bin/python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' "$REPO/galaxy.yml")"
tarball="$DIST/dsxos-cluster-$version.tar.gz"
rm -f "$tarball"
"$VENV/bin/ansible-galaxy" collection build --force --output-path "$DIST" "$REPO" >&2
[ -f "$tarball" ] || { echo "install_collection.sh: expected $tarball after build" >&2; exit 1; }
"$VENV/bin/ansible-galaxy" collection install --offline --no-deps --force -p "$DEST" "$tarball" >&2
[ -f "$DEST/ansible_collections/dsxos/cluster/MANIFEST.json" ] || { echo "install_collection.sh: install left no MANIFEST.json under $DEST" >&2; exit 1; }
echo "$DEST"
