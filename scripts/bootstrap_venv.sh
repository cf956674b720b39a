#!/usr/bin/env bash
# Create the virtualenv (when missing) and install one pinned requirement file into it, saying what it does.
# Usage: scripts/bootstrap_venv.sh <venv> <python> <requirements-file> <label>
#   label: what the file is for, printed in the progress lines ("runtime", "test").
# The installer is uv (pinned in requirements-bootstrap.txt, installed into the venv by pip first): it installs the
# exact pins the file names, like pip, an order of magnitude faster. pip's configured find-links and constraint
# files (`pip config`, PIP_FIND_LINKS, PIP_CONSTRAINT) are passed on to uv, so both take the same wheels (e.g. the
# CPU torch wheel that lies on the machine). VENV_INSTALLER=pip uses pip alone; pip is also the fallback when uv
# cannot be installed, and it says so.
set -euo pipefail

VENV="$1"
PYTHON="$2"
REQS="$3"
LABEL="$4"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
start=$SECONDS

"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 required, found " + sys.version)'
if [ ! -x "$VENV/bin/python" ]; then
    echo "venv: creating $VENV with $("$PYTHON" -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3])')"
    "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

installer="${VENV_INSTALLER:-uv}"
if [ "$installer" = uv ]; then
    want="$(grep -E '^uv==' "$HERE/requirements-bootstrap.txt" | head -n 1)"
    if [ "$("$VENV/bin/uv" --version 2>/dev/null | awk '{print "uv==" $2}')" != "$want" ]; then
        if ! "${PIP[@]}" install -q "$want"; then
            echo "venv: could not install $want with pip; pip installs the requirements instead (slower)" >&2
            installer=pip
        fi
    fi
fi

# Packages pinned in the file itself (an included -r file is installed by its own step).
count=$(grep -cE '^[A-Za-z0-9][A-Za-z0-9_.-]*==' "$REQS" || true)
echo "venv: installing $count pinned $LABEL packages from $(basename "$REQS") into $VENV with $installer ..."
if [ "$installer" = uv ]; then
    # pip's own configuration, which uv does not read: indexes, find-links (local wheels) and constraint files, from
    # every place pip reads them (`pip config list`: its files and PIP_* variables), each once; a local path or
    # file:// index that does not exist is left out, as pip only warns about it.
    args=()
    seen=" "
    while IFS= read -r line; do
        key="${line%%=*}"
        value="${line#*=}"
        value="${value#\'}"
        value="${value%\'}"
        case "$key" in
            *.find-links) flag=--find-links ;;
            *.constraint) flag=--constraint ;;
            *.extra-index-url) flag=--extra-index-url ;;
            *.index-url) flag=--index-url ;;
            *) continue ;;
        esac
        for item in $value; do
            path="${item#file://}"
            if [[ "$seen" != *" $flag=$item "* ]] && { [ -e "$path" ] || [[ "$flag" != --constraint && "$item" == http*://* ]]; }; then
                args+=("$flag" "$item")
                seen+="$flag=$item "
            fi
        done
    done < <("${PIP[@]}" config list 2>/dev/null || true)
    # pip's certificate bundle, for an index behind a TLS-intercepting proxy.
    if [ -n "${PIP_CERT:-}" ] && [ -z "${SSL_CERT_FILE:-}" ]; then
        export SSL_CERT_FILE="$PIP_CERT"
    fi
    # As pip does: --index-strategy unsafe-best-match searches every index for the pinned version, and
    # --compile-bytecode writes the .pyc files at install time (uv's default leaves that to the first import, which
    # never happens where PYTHONDONTWRITEBYTECODE is set: every ansible-playbook would compile ansible-core again).
    if ! "$VENV/bin/uv" pip install --python "$VENV/bin/python" --index-strategy unsafe-best-match --compile-bytecode \
            "${args[@]}" -r "$REQS"; then
        echo "venv: uv could not install $(basename "$REQS"); trying pip (slower)" >&2
        installer=pip
    fi
fi
if [ "$installer" = pip ]; then
    # pip prints one line per package ("Collecting ..."), so a long install (torch) is visibly alive.
    "${PIP[@]}" install --progress-bar on -r "$REQS"
fi
echo "venv: $LABEL packages installed in $((SECONDS - start)) s"
