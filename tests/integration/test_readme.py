# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Every command README.md shows runs as written, the way a newcomer runs it.

All ```bash blocks of README.md run, in order, in ONE bash session (state carries over as in a user's shell) with:

* ``HOME`` a fresh temporary directory, no ``ANSIBLE_*`` variable and the venv NOT on ``PATH``: ansible-playbook
  is only found after the README's own ``. .venv/bin/activate``, and dsxos.cluster only where ``make install``
  puts it (``~/.ansible/collections``, ansible's default search path);
* the working directory a temporary directory standing for the checkout (``.venv`` links to the test venv), so
  ``out/demo`` and the bundles never land in the shared source tree;
* ``/tmp/`` in the commands redirected into the test's temporary directory (parallel runs never collide).

What cannot run literally, and why (each is stated in the bash session's output too):

* ``make demo`` and ``make install`` run the REAL Makefile targets (``make -C <repo>``) with the build, the inventory
  and the demo output redirected into the temporary directory. ``make demo`` runs once per test session, in this
  test's checkout and home, as the README's first command: the session fixture ``newcomer_demo``
  (tests/integration/newcomer_demo.py) runs it just before the session below, and test_demo.py checks the same run.
  In the session, each ``make demo`` of the README shows that run's output (rerunning it would only repeat the same
  minute) and the commands after it see its bundles and its install in ``~/.ansible/collections``.
* ``make test`` is not run: it is the command that runs this very test (CI runs it: ``.ci/run``).
* The Certify example needs an inventory of real GPU hosts with nccl-tests; here it runs with ``--syntax-check``
  against an inventory holding the ``gpu_nodes`` group (the playbook FQCN resolves from ~/.ansible/collections and
  the ``-e`` JSON parses). The playbook itself runs for real on the 8-host network-namespace fabric in
  ``test_certify_fabric_e2e.py::test_certify_role_names_the_slow_and_the_dbe_host``.

The YAML playbook block is saved as ``configure.yml`` and run with ``ansible-playbook configure.yml``, as the
README says.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from newcomer_demo import NewcomerDemo, newcomer_env
from playbook_runner import REPO

README = REPO / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)

#: bash functions that stand in for the commands that cannot run literally (see the module docstring).
PRELUDE = r'''
set -euo pipefail
make() {
    case "${1:-}" in
    install)
        command make -C "$DSXOS_REPO" install DIST="$DSXOS_TMP/dist" ;;
    demo)
        if [ -d out/demo/bundles/helm ] && [ -f "${DSXOS_DEMO_LOG:-}" ]; then
            echo "README-TEST: make demo ran once for this session (tests/integration/newcomer_demo.py); its output:"
            cat "$DSXOS_DEMO_LOG"
        else
            command make -C "$DSXOS_REPO" demo DIST="$DSXOS_TMP/dist" DEMO_OUT="$PWD/out/demo" \
                INVENTORY="$DSXOS_TMP/inventory/localhost.ini"
        fi ;;
    test)
        echo "README-TEST: make test not run: it is the command that runs this test (CI: .ci/run)" ;;
    unit|molecule)
        echo "README-TEST: make $* not run: make test runs every stage (unit, integration, checks with molecule)" ;;
    *)
        echo "README-TEST: no stand-in for 'make $*'; add one to tests/integration/test_readme.py" >&2
        return 99 ;;
    esac
}
'''
CERTIFY_STANDIN = r'''
ansible-playbook() {
    echo "README-TEST: certify example syntax-checked only (needs GPU hosts; run for real in test_certify_fabric_e2e.py)"
    command ansible-playbook --syntax-check "$@"
}
'''


def readme_blocks(lang: str) -> list[str]:
    """The fenced blocks of README.md in language ``lang``, in order."""
    return [body for found, body in FENCE.findall(README.read_text(encoding="utf-8")) if found == lang]


def session_script(tmp: Path) -> str:
    """The README's bash blocks (and the YAML playbook) as one bash script, with /tmp/ redirected."""
    parts = [PRELUDE]
    for number, block in enumerate(readme_blocks("bash"), 1):
        body = block.replace("/tmp/", f"{tmp}/out-tmp/")
        parts.append(f'echo "README-TEST: ===== bash block {number} ====="')
        if "dsxos.cluster.certify" in block:
            parts.append("(" + CERTIFY_STANDIN + body + "\n)")
        else:
            parts.append(body)
    playbooks = readme_blocks("yaml")
    assert len(playbooks) == 1, "README.md: expected one YAML playbook block; this test runs it as configure.yml"
    (tmp / "work" / "configure.yml").write_text(playbooks[0].replace("/tmp/", f"{tmp}/out-tmp/"), encoding="utf-8")
    parts.append('echo "README-TEST: ===== yaml playbook ====="\nansible-playbook configure.yml')
    parts.append('echo "README-TEST: all README commands passed"')
    return "\n".join(parts) + "\n"


def test_readme_has_the_commands_this_test_expects() -> None:
    blocks = readme_blocks("bash")
    text = "\n".join(blocks)
    for needle in ("make demo", ". .venv/bin/activate", "make test", "ansible-playbook dsxos.cluster.configure",
                   "ansible-playbook -i inventory.yml dsxos.cluster.certify", "deploy.sh --dry-run", "sha256sum -c"):
        assert needle in text, f"README.md no longer shows {needle!r}; update tests/integration/test_readme.py"
    for block in blocks:
        for line in block.splitlines():
            match = re.match(r"^\s*make\s+(\S+)", line)
            assert match is None or match.group(1) in ("demo", "install", "test", "unit", "molecule"), \
                f"no stand-in for README line {line!r}"


def test_every_readme_command_runs_as_written(newcomer_demo: NewcomerDemo) -> None:
    # the checkout and home where the session's make demo ran (newcomer_demo.py), which the README's first command is
    assert newcomer_demo.returncode == 0, newcomer_demo.stdout[-6000:] + newcomer_demo.stderr[-3000:]
    tmp_path, home, work = newcomer_demo.base, newcomer_demo.home, newcomer_demo.work
    (tmp_path / "out-tmp").mkdir()
    (work / "inventory.yml").write_text("all:\n  children:\n    gpu_nodes:\n      hosts:\n        gpu-1: {ansible_host: 192.0.2.1}\n",
                                        encoding="utf-8")
    script = tmp_path / "readme.sh"
    script.write_text(session_script(tmp_path), encoding="utf-8")
    env = dict(newcomer_env(home, tmp_path), DSXOS_DEMO_LOG=str(newcomer_demo.log))
    proc = subprocess.run(["bash", str(script)], cwd=work, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=1800, check=False)
    log = f"--- stdout ---\n{proc.stdout[-8000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, log
    assert "README-TEST: all README commands passed" in proc.stdout, log
    # make install put the collection where ansible looks by default, and said how to use it.
    installed = home / ".ansible" / "collections" / "ansible_collections" / "dsxos" / "cluster" / "MANIFEST.json"
    assert installed.is_file(), log
    assert "ansible-playbook finds it there by default" in proc.stdout, log
    assert re.search(r"^    \. \S*bin/activate$", proc.stdout, re.M), log  # .venv/bin/activate, or the venv's absolute path
    # The demo ran and the tour's commands saw its bundles.
    assert re.search(r"^\s+returned to service at \d\d:\d\d:\d\d by dsxos-sentinel", proc.stdout, re.M), log
    assert re.search(r"checksums\.txt|: OK$", proc.stdout, re.M), log
    # The packaged playbook and the YAML example rendered their bundles.
    for deployer in ("helm", "flux"):
        assert (tmp_path / "out-tmp" / "bundles" / deployer).is_dir(), log
    assert any((tmp_path / "out-tmp" / "gitops" / "clusters" / "prod").iterdir()), log
    assert "certify example syntax-checked only" in proc.stdout, log
