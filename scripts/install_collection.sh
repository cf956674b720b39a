#!/usr/bin/env bash
# Build the collection tarball from the working tree and install it, offline, as
#   <collections-root>/ansible_collections/dsxos/cluster
# Usage: scripts/install_collection.sh [dist-dir] [collections-root]
#        scripts/install_collection.sh --explain <collections-root>
#   dist-dir          where the tarball goes            (default: .build/dist)
#   collections-root  what ANSIBLE_COLLECTIONS_PATH gets (default: .build/installed)
# Prints the collections root on the last line of stdout. The collection has no dependencies, so
# `--offline` means Galaxy is never contacted.
# --explain: say what was installed where and whether a plain ansible-playbook (this venv's, with the caller's
# environment) finds it; when it does not, print the one `export` line that makes it (`make install` uses this).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"

if [ "${1:-}" = "--explain" ]; then
    DEST="$(cd "$2" && pwd)"
    version="$("$VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' \
        "$DEST/ansible_collections/dsxos/cluster/MANIFEST.json")"
    echo "installed dsxos.cluster $version into $DEST/ansible_collections/dsxos/cluster"
    # The search path ansible-playbook uses with the caller's environment and configuration.
    found="$("$VENV/bin/python" - "$DEST" <<'PY'
import os, sys
from ansible import constants as C
dest = os.path.realpath(sys.argv[1])
print("yes" if any(os.path.realpath(os.path.expanduser(p)) == dest for p in C.COLLECTIONS_PATHS) else "no")
PY
)"
    rel_bin="$VENV/bin"
    case "$rel_bin" in "$PWD"/*) rel_bin="${rel_bin#"$PWD"/}" ;; esac
    if [ "$found" = yes ]; then
        echo "ansible-playbook finds it there by default. To run the README's examples in this shell:"
        echo "    . $rel_bin/activate"
    else
        echo "$DEST is not on ansible's collections path here; to run the README's examples in this shell:"
        echo "    . $rel_bin/activate && export ANSIBLE_COLLECTIONS_PATH=$DEST"
    fi
    exit 0
fi
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
