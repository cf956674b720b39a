# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Running ``dcgmi diag`` on this host (or reading a recorded output) and turning it into a DCGM report.

:func:`dcgm_report` is what ``gpu_health`` does for ``dcgm_level`` 1-4: read ``dcgm_recorded_output`` when given,
else find ``dcgmi``, run ``dcgmi diag -r <level> -j`` under coreutils ``timeout`` (an argv list, never a shell) and
parse the JSON with :func:`dcgm_diag.parse_dcgm_diag`. A diagnostic that timed out or printed something unreadable
is a report with ``status: error`` (a failed check), not an exception; a missing ``dcgmi`` or ``timeout`` is a
:class:`GpuError`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Dict, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.dcgm_diag import (
    DEFAULT_TIMEOUT_S, KILL_AFTER_S, DcgmDiagError, build_dcgmi_diag_command, error_report, parse_dcgm_diag,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.errors import GpuError

#: Searched after ``PATH`` (as Ansible's ``get_bin_path`` does): DCGM installs ``dcgmi`` under /usr/bin, some
#: distributions put admin tools under sbin.
EXTRA_BIN_DIRS = ("/sbin", "/usr/sbin", "/usr/local/sbin")
#: Exit codes of coreutils ``timeout``: the command timed out (124) or had to be killed (137).
TIMEOUT_EXIT_CODES = (124, 137)
#: Extra seconds the Python-side guard waits beyond ``timeout --kill-after=KILL_AFTER_S``.
_GUARD_S = 60


def find_executable(name: str) -> Optional[str]:
    """The full path of ``name`` on ``PATH`` or in :data:`EXTRA_BIN_DIRS`; ``None`` when it is nowhere."""
    path = os.environ.get("PATH", os.defpath)
    return shutil.which(name, path=os.pathsep.join([path] + list(EXTRA_BIN_DIRS)))


def run_argv(argv: Any, timeout_s: Optional[float] = None) -> Tuple[Optional[int], str, str]:
    """Run ``argv`` (no shell, no stdin) and return ``(rc, stdout, stderr)``; ``rc`` is None when ``timeout_s`` ran out."""
    try:
        proc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        return None, _text(exc.stdout), _text(exc.stderr)
    return proc.returncode, _text(proc.stdout), _text(proc.stderr)


def _text(data: Any) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else str(data)


def read_recorded_output(path: str) -> Dict[str, Any]:
    """A DCGM report from a saved ``dcgmi diag -j`` output file (errors name the file)."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            text = handle.read()
    except OSError as err:
        raise GpuError("cannot read dcgm_recorded_output %s: %s" % (path, err.strerror or err)) from err
    return parse_dcgm_diag(text, source=path)


def dcgm_report(level: int, host: str, dcgmi_path: Optional[str] = None, timeout_s: Optional[int] = None,
                recorded_output: Optional[str] = None) -> Dict[str, Any]:
    """The DCGM report of diagnostic ``level`` on ``host``: recorded (``recorded_output``) or run now."""
    if recorded_output:
        return read_recorded_output(recorded_output)
    dcgmi = dcgmi_path or find_executable("dcgmi")
    if not dcgmi:
        raise GpuError("dcgmi not found on %s: install DCGM (datacenter-gpu-manager) or set dcgm_level: 0" % host)
    timeout_bin = find_executable("timeout")
    if not timeout_bin:
        raise GpuError("coreutils 'timeout' not found on %s (needed to bound dcgmi diag)" % host)
    seconds = timeout_s or DEFAULT_TIMEOUT_S[level]
    argv = build_dcgmi_diag_command(level, dcgmi, timeout_s=seconds, timeout_bin=timeout_bin)
    rc, out, err = run_argv(argv, timeout_s=seconds + KILL_AFTER_S + _GUARD_S)
    if rc is None or rc in TIMEOUT_EXIT_CODES:
        return error_report("dcgmi diag -r %d timed out after %d s" % (level, seconds))
    try:
        return parse_dcgm_diag(out, source="dcgmi diag -r %d -j (rc=%d)" % (level, rc))
    except DcgmDiagError as exc:
        return error_report("%s; stderr: %s" % (exc, (err or "").strip()[:500]))
