# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Find the nccl-tests text inside one line of a launcher's log, whatever the launcher put in front of it.

Launchers prefix every line they relay: ``mpirun --tag-output`` writes ``[1,0]<stdout>:``, ``srun --label``
``0: ``, ``kubectl logs --prefix`` ``[pod/name/container] ``, ``kubectl logs --timestamps`` an RFC 3339 stamp,
``pdsh`` ``host: ``, and cluster tools wrap all of that again (``(head, rank=0, pid=3808) [1,0]<stdout>:``).
Rather than listing prefixes, :func:`nccl_content` looks for the shapes of the lines nccl-tests prints
(``#`` header lines, result rows, the ``Avg bus bandwidth`` and ``Out of bounds`` trailer, ``NCCL WARN`` and
``Test ... failure`` lines) wherever they start in the line, and returns the line from there on.

:func:`continuations` serves the launchers' own messages, which are not nccl-tests text and may be wrapped over two
lines: it gives the tails of a line that may continue the previous line's message.
"""
from __future__ import annotations

import re
from typing import List

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

#: Where a prefix may end: the start of the line, or just after a blank or one of ``: ] > )``.
_BOUNDARY = r"(?:^|(?<=[\s:\]>)]))"

#: Shapes of nccl-tests lines, searched anywhere in a line; the earliest match is where the nccl-tests text starts.
_SHAPES = (
    # a header line: '#' then a blank or the end of the line ("#", "# nThread ...", "#  Rank ...", "# Avg ...")
    re.compile(_BOUNDARY + r"#(?=\s|$)"),
    # header lines whose '#' a wrapper dropped
    re.compile(r"\bnThread\s+\d+\s+nGpus\s+\d+"),
    re.compile(r"\bRank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s"),
    re.compile(r"\bOut of bounds values\s*:"),
    re.compile(r"\bAvg bus bandwidth\s*:"),
    re.compile(r"\bnccl-tests version\s"),
    re.compile(r"\bCollective test (?:starting|concluded)\s*:"),
    re.compile(r"\bsize\s+count\s+type\b"),
    re.compile(r"\(B\)\s+\(elements\)"),
    # a result row: size, count, type, then more
    re.compile(_BOUNDARY + r"\d+\s+\d+\s+[A-Za-z][A-Za-z0-9_]*(?:\s|$)"),
)

#: ``host:pid:tid [dev] NCCL WARN message`` (the NCCL debug line shape); the host is what precedes ``:pid:tid``.
NCCL_DEBUG_LINE_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*):\d+:\d+\s+\[\d+\]\s+NCCL (WARN|ERROR|INFO)\b")


def strip_controls(line: str) -> str:
    """The line without ANSI colour codes, NUL bytes and line-end characters."""
    return _ANSI_RE.sub("", line.replace("\x00", "")).rstrip("\r\n")


#: All shapes in one pattern: one search finds the earliest.
_ANY_SHAPE = re.compile("|".join("(?:%s)" % shape.pattern for shape in _SHAPES))


def content_start(line: str) -> int:
    """Index where nccl-tests text starts in ``line`` (already stripped of controls), or -1 if none is found."""
    match = _ANY_SHAPE.search(line)
    return match.start() if match else -1


def nccl_content(line: str) -> str:
    """The nccl-tests part of one log line: from the first nccl-tests line shape on; the whole cleaned line if none."""
    cleaned = strip_controls(line)
    start = content_start(cleaned)
    return cleaned[start:] if start > 0 else cleaned


def continuations(line: str, limit: int = 48) -> List[str]:
    """Tails of ``line`` that start at a word, or inside a word just after ``:``, ``>`` or ``]`` (a prefix glued to
    the text, ``[1,0]<stderr>:signal 6``), longest first and at most ``limit``: the candidates for the part of the line
    that continues a message wrapped at the end of the previous line, whatever prefix this line carries."""
    cleaned = strip_controls(line).strip()
    tails: List[str] = []
    for word in re.finditer(r"\S+", cleaned):
        if len(tails) >= limit:
            break
        tails.append(cleaned[word.start():])
        for glue in re.finditer(r"[:>\]](?=\S)", word.group(0)):
            tails.append(cleaned[word.start() + glue.end():])
    return tails[:limit]
