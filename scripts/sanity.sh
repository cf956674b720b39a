#!/usr/bin/env bash
# Run `ansible-test sanity --local` on a copy of the collection laid out as
# .build/sanity/ansible_collections/dsxos/cluster (ansible-test insists on that path).
#
# Usage: scripts/sanity.sh [extra ansible-test sanity arguments...]
# Environment:
#   VENV            virtual environment with ansible-core (default: <repo>/.venv)
#   SANITY_PYTHON   Python version to test (default: the venv's X.Y)
#   SANITY_SKIP     space-separated ansible-test sanity tests to skip (the Makefile sets it, with reasons)
#   SANITY_SRC      directory to copy instead of the repo (used to try a throwaway module)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
SRC="${SANITY_SRC:-$REPO}"
DEST="$REPO/.build/sanity/ansible_collections/dsxos/cluster"
PY="$VENV/bin/python"
SANITY_PYTHON="${SANITY_PYTHON:-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}"

# 1. Fresh copy of exactly what git would ship: tracked files plus untracked files that are not ignored.
rm -rf "$DEST"
mkdir -p "$DEST"
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # --deduplicate: a tracked file that is deleted in the tree is listed once and then skipped by the existence test.
    git -C "$SRC" ls-files -co --exclude-standard --deduplicate -z \
        | (cd "$SRC" && while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done) \
        | tar -C "$SRC" --null --no-recursion -T - -cf - | tar -C "$DEST" -xf -
else
    (cd "$SRC" && tar --exclude=./.venv --exclude=./.build --exclude=./.git --exclude=./tests/output -cf - .) | (cd "$DEST" && tar -xf -)
fi

# ansible-test lists content with git when it finds a .git above the collection; the copy lives inside this
# repo's ignored .build/, so give the copy its own (empty) repository: its files then count as untracked-not-ignored.
git -C "$DEST" init -q

# The collection is Apache-2.0, but validate-modules insists on a GPLv3 header in every module. That single
# code is ignored for each module lacking such a header, in the COPY only, so no per-module ignore lines
# pile up in the repo (any other ignore belongs in the repo's tests/sanity/ignore-X.Y.txt, with a reason).
CORE_MM="$("$PY" -c 'from ansible.release import __version__ as v; print(".".join(v.split(".")[:2]))')"
IGNORES="$DEST/tests/sanity/ignore-$CORE_MM.txt"
for module in "$DEST"/plugins/modules/*.py; do
    [ -e "$module" ] || continue
    if ! head -n 20 "$module" | grep -q "GNU General Public License"; then
        mkdir -p "$(dirname "$IGNORES")"
        printf '%s validate-modules:missing-gplv3-license  # Apache-2.0 collection, see scripts/sanity.sh\n' \
            "${module#"$DEST"/}" >>"$IGNORES"
    fi
done

# 2. ansible-test bootstraps pip in each sanity virtualenv with a get-pip script downloaded from
#    ci-files.testing.ansible.com (unreachable here). Put an offline stand-in at the documented cache path.
PIP_VERSION="$("$PY" -c 'from ansible_test._internal.python_requirements import get_venv_packages as g; from ansible_test._internal.host_configs import NativePythonConfig as N; print(g(N(version="'"$SANITY_PYTHON"'", path="")) ["pip"])' 2>/dev/null || echo 24.2)"
CACHE="$HOME/.ansible/test/cache/get_pip_${PIP_VERSION//./_}.py"
if [ ! -f "$CACHE" ] || grep -q "dsxos.cluster offline get-pip stand-in" "$CACHE"; then
    mkdir -p "$(dirname "$CACHE")"
    cp "$REPO/scripts/ansible_test_get_pip.py" "$CACHE.tmp" && mv "$CACHE.tmp" "$CACHE"
fi

# 3. Run. ansible-test finds ansible-core next to itself; PATH must reach the venv's python for sub-venvs.
skip_args=()
for t in ${SANITY_SKIP:-}; do skip_args+=(--skip-test "$t"); done
cd "$DEST"
export PATH="$VENV/bin:$PATH"
exec "$VENV/bin/ansible-test" sanity --local --python "$SANITY_PYTHON" --color no "${skip_args[@]}" "$@"
