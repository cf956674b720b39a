# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Polling for tests, benches and the demo: ``wait_until(predicate, timeout_s, what)``.

``predicate`` is called every ``step_s`` seconds until it returns something true (returned) or ``timeout_s`` has passed
(``error``, AssertionError unless the caller is no test, naming ``what``). An exception of the predicate propagates
at once: a predicate that sees its process die raises instead of waiting out the timeout.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Type


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str, step_s: float = 0.5,
               error: Type[BaseException] = AssertionError) -> Any:
    """The first true value ``predicate()`` returns, polled every ``step_s`` s; ``error`` after ``timeout_s`` s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step_s)
    raise error("timed out after %ss waiting for %s" % (timeout_s, what))
