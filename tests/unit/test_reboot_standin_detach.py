# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The reboot stand-in's detached child survives the end of the SSH session that started it, also on the slow path.

CI failure of 2026-12-04: ``test_reboot_standin_changes_the_boot_id_and_ansible_reconnects`` timed out waiting for the
new boot id; the host's event log had the ``requested`` line and nothing after it. The child used to be forked and
left to call ``setsid`` on its own while the caller returned at once. When the loaded machine ran the child late, the
SSH session had ended by then, and its SIGHUP to the terminal's process group had killed the child.
Here the caller's process group gets SIGHUP the moment ``detach`` returns, which is what a session's end does. The
child is made slow on purpose (``DSXOS_REBOOT_STANDIN_DETACH_PAUSE_S``), so it would still be in that group if
``detach`` returned before the child had left it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import os, signal, sys, time
signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as in a login shell's session, even when run under nohup (CI)
sys.path.insert(0, sys.argv[1])
from tests.harness import reboot_standin
marker = sys.argv[2]
def work():
    time.sleep(0.2)
    with open(marker, "w") as handle:
        handle.write("%d %d" % (os.getsid(0), os.getpgrp()))
rc = reboot_standin.detach(work)
os.killpg(os.getpgrp(), signal.SIGHUP)  # the session ends: SIGHUP to the whole process group of the caller
time.sleep(5)
sys.exit(rc)
'''


def _run(tmp_path: Path, pause_s: float) -> tuple[subprocess.CompletedProcess, Path]:
    marker = tmp_path / ("done-%s" % pause_s)
    env = dict(os.environ, DSXOS_REBOOT_STANDIN_DETACH_PAUSE_S=str(pause_s))
    # a process group of its own, like the shell of an SSH session
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO), str(marker)], env=env, capture_output=True,
                          text=True, timeout=60, check=False, start_new_session=True)
    return proc, marker


def _wait_for(path: Path, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(encoding="utf-8").strip():
            return True
        time.sleep(0.05)
    return False


def test_the_detached_child_outlives_the_sighup_of_the_callers_session_even_when_it_starts_late(tmp_path):
    for pause_s in (0.0, 1.5):
        proc, marker = _run(tmp_path, pause_s)
        assert proc.returncode == -1, (proc.returncode, proc.stderr)  # the caller died of the SIGHUP...
        assert _wait_for(marker), "the detached child died with the caller's session (pause %s s)" % pause_s
        session, group = (int(v) for v in marker.read_text(encoding="utf-8").split())  # ...the child did its work
        assert session == group and session != os.getsid(0), "the child runs in a session of its own"


def test_detach_returns_only_after_the_child_left_the_session(tmp_path):
    started = time.monotonic()
    proc, marker = _run(tmp_path, 1.0)
    assert time.monotonic() - started >= 1.0, "detach returned before the slow child had detached"
    assert proc.returncode == -1 and _wait_for(marker)
