# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""scripts/system_deps.sh --demo: what `make demo` needs from the system, named with the line to run for a normal user."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "system_deps.sh"


def _bare_path(tmp_path: Path) -> Path:
    """A PATH folder with just what the script itself runs: no Alertmanager, no Java."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("sort", "git", "make", "sha256sum"):
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    (folder / "python3").symlink_to(sys._base_executable)  # pylint: disable=protected-access  # not a pyenv shim
    return folder


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to run the script as another user")
def test_a_normal_user_is_told_the_exact_apt_get_line_and_nothing_is_installed():
    # pytest's tmp_path lies under a root-only folder: the other user needs one it can reach
    tmp_path = Path(tempfile.mkdtemp(prefix="dsxos-sysdeps-"))
    tmp_path.chmod(0o755)
    try:
        _as_nobody(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _as_nobody(tmp_path: Path) -> None:
    folder = _bare_path(tmp_path)
    proc = subprocess.run([shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", str(SCRIPT), "--demo"],
                          env={"PATH": str(folder), "HOME": str(tmp_path)}, capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "sudo apt-get install -y openjdk-17-jre-headless prometheus-alertmanager" in proc.stderr, proc.stderr
    assert "installing" not in proc.stdout


def test_nothing_missing_exits_0_without_a_word(tmp_path):
    folder = _bare_path(tmp_path)
    for tool in ("prometheus-alertmanager", "java"):
        stub = folder / tool
        stub.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        stub.chmod(0o755)
    proc = subprocess.run(["/bin/bash", str(SCRIPT), "--demo"], env={"PATH": str(folder)}, capture_output=True, text=True,
                          check=False, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), proc
