#!/usr/bin/env bash
# Create the virtualenv (when missing) and install one pinned requirement file into it, saying what it does.
# Usage: scripts/bootstrap_venv.sh <venv> <python> <requirements-file> <label>
#   label: what the file is for, printed in the progress lines ("runtime", "test").
# pip prints one line per package ("Collecting ..."), so a long install (torch) is visibly alive.
set -euo pipefail

VENV="$1"
PYTHON="$2"
REQS="$3"
LABEL="$4"
start=$SECONDS

"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 required, found " + sys.version)'
if [ ! -x "$VENV/bin/python" ]; then
    echo "venv: creating $VENV with $("$PYTHON" -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3])')"
    "$PYTHON" -m venv "$VENV"
fi
# Packages pinned in the file itself (an included -r file is installed by its own step).
count=$(grep -cE '^[A-Za-z0-9][A-Za-z0-9_.-]*==' "$REQS" || true)
echo "venv: installing $count pinned $LABEL packages from $(basename "$REQS") into $VENV ..."
"$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar on -r "$REQS"
echo "venv: $LABEL packages installed in $((SECONDS - start)) s"
