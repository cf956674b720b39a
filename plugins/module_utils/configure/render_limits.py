# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Bounds on the work one manifest template may do (both template engines).

A manifest template is recipe data that may come from an overlay directory the operator did not write, so
rendering it must never hang the controller or exhaust its memory. :class:`RenderLimits` holds the bounds
(wall time, output size, loop iterations, nesting depth); :class:`RenderBudget` tracks one file's use of them
and raises :class:`RenderError` naming the file and the bound as soon as one is exceeded.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError

#: Defaults: 5 s of rendering, 8 MiB of output, one million loop iterations per file.
DEFAULT_TIME_S = 5.0
DEFAULT_OUTPUT_BYTES = 8 * 1024 * 1024
DEFAULT_ITERATIONS = 1000000
#: Nested control structures, parentheses, template calls and data levels.
DEFAULT_DEPTH = 100


@dataclass(frozen=True)
class RenderLimits:
    """The bounds of one file's rendering."""

    time_s: float = DEFAULT_TIME_S
    output_bytes: int = DEFAULT_OUTPUT_BYTES
    iterations: int = DEFAULT_ITERATIONS
    depth: int = DEFAULT_DEPTH


DEFAULT_LIMITS = RenderLimits()


class RenderBudget:
    """One file's use of its :class:`RenderLimits`; every method raises :class:`RenderError` past a bound."""

    def __init__(self, limits: Optional[RenderLimits], path: Optional[str], field: Optional[str] = None,
                 value: Optional[str] = None) -> None:
        self.limits = limits or DEFAULT_LIMITS
        self.path = path
        self.field = field
        self.value = value
        self.deadline = time.monotonic() + self.limits.time_s
        self.iterations = 0
        self.output = 0

    def fail(self, message: str, line: Optional[int] = None, column: Optional[int] = None) -> RenderError:
        """A :class:`RenderError` about this file."""
        return RenderError(message, path=self.path, line=line, column=column, field=self.field, value=self.value)

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise self.fail("manifest template ran longer than the limit of %g s" % self.limits.time_s)

    def tick(self, count: int = 1) -> None:
        """Count loop iterations (and check the clock every 256 of them)."""
        self.iterations += count
        if self.iterations > self.limits.iterations:
            raise self.fail("manifest template exceeded the limit of %d loop iterations" % self.limits.iterations)
        if not self.iterations & 0xFF:
            self.check_time()

    def check_size(self, size: int) -> None:
        """Refuse a single value larger than the output limit before it is built."""
        if size > self.limits.output_bytes:
            raise self.fail("manifest template would produce a value of %d bytes, over the output limit of %d bytes"
                            % (size, self.limits.output_bytes))

    def add_output(self, size: int) -> None:
        """Count produced output (characters) and check the clock."""
        self.output += size
        if self.output > self.limits.output_bytes:
            raise self.fail("manifest template output exceeds the limit of %d bytes" % self.limits.output_bytes)
        self.check_time()
