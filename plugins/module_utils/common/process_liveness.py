# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Is the process that left something behind (a temporary folder, a lock) still its live owner?

:func:`owner_alive` answers for a pid of this host and the time the thing was made (its mtime). The owner is gone when:

* no process has that pid (``kill(pid, 0)`` fails with ``ESRCH``, or the number is no pid: not in 1 .. 2**31 - 1);
* the process is a zombie or dead (state ``Z``, ``X`` or ``x`` in ``/proc/<pid>/stat``): ``kill(pid, 0)`` still
  succeeds on it until its parent reaps it, which a killed process's parent may never do;
* the process started more than :data:`START_SLACK_S` after the thing was made: the pid was reused by a later process.

Any other existing process is the live owner, another user's too (``kill`` fails with ``EPERM``). Without a readable
``/proc/<pid>/stat`` (not Linux, ``/proc`` not mounted or mounted with ``hidepid``) only ``kill(pid, 0)`` is asked.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

PROC = "/proc"
#: ``/proc/<pid>/stat`` states of a process that has exited: zombie, dead (``x``: dead on Linux 2.6.33 to 3.13).
GONE_STATES = frozenset("ZXx")
#: The largest pid there can be (``pid_t`` is a signed 32-bit integer).
MAX_PID = 2 ** 31 - 1
#: Start time and mtime are compared with this much slack (``btime`` is whole seconds, start time clock ticks).
START_SLACK_S = 2.0


@dataclass(frozen=True)
class ProcStat:
    """What is read of ``/proc/<pid>/stat``: ``start_ticks`` is field 22, clock ticks after boot."""

    pid: int
    comm: str
    state: str
    start_ticks: int


def parse_proc_stat(text: str) -> ProcStat:
    """Parse one ``/proc/<pid>/stat`` line. ``comm`` (in parentheses) may hold spaces, ``(``, ``)`` and newlines, so
    the fields are those after the LAST ``)``. Raises ``ValueError`` on anything else."""
    head, close, tail = text.rpartition(")")
    pid_text, opening, comm = head.partition(" (")
    fields = tail.split()
    if not close or not opening or not pid_text.isdigit() or len(fields) < 20 or len(fields[0]) != 1:
        raise ValueError("not a /proc/<pid>/stat line: %r" % text[:100])
    if not fields[19].isdigit():
        raise ValueError("bad start time in /proc/<pid>/stat: %r" % fields[19])
    return ProcStat(pid=int(pid_text), comm=comm, state=fields[0], start_ticks=int(fields[19]))


def boot_time(proc: str = PROC) -> Optional[float]:
    """Wall-clock time of boot (``btime`` of ``/proc/stat``), ``None`` where there is none."""
    try:
        with open(os.path.join(proc, "stat"), "rb") as handle:
            for line in handle:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def read_proc_stat(pid: int, proc: str = PROC) -> Optional[ProcStat]:
    """``/proc/<pid>/stat`` of ``pid``, ``None`` when it cannot be read or parsed."""
    try:
        with open(os.path.join(proc, str(pid), "stat"), "rb") as handle:
            info = parse_proc_stat(handle.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    return info if info.pid == pid else None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError:
        return False
    return True


def owner_alive(pid: int, made_at: Optional[float] = None, proc: str = PROC) -> bool:
    """True when process ``pid`` of this host may still be the owner of something made at ``made_at`` (epoch
    seconds; ``None`` skips the pid reuse check); see the module docstring."""
    if not 0 < pid <= MAX_PID or not _pid_exists(pid):
        return False
    info = read_proc_stat(pid, proc)
    if info is None:
        return _pid_exists(pid)  # no /proc: kill 0 alone (asked again: the pid may have exited meanwhile)
    if info.state in GONE_STATES:
        return False
    if made_at is not None:
        btime = boot_time(proc)
        try:
            ticks = os.sysconf("SC_CLK_TCK")
        except (ValueError, OSError):
            ticks = 0
        if btime is not None and ticks > 0 and btime + info.start_ticks / ticks > made_at + START_SLACK_S:
            return False
    return True
