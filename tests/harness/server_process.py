# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What every local server the tests start has in common (Alertmanager, Prometheus, the OCI registry): the process
this object started (``proc``), its log file (``log_path``), the log's tail for error messages, and a stop that ends
exactly that process (by PID: SIGTERM, then SIGKILL after ``STOP_GRACE_S``). Subclasses start it and set both
attributes."""
from __future__ import annotations

import abc
import subprocess
import time
import urllib.request
from typing import Any, Optional

STOP_GRACE_S = 10.0
LOG_TAIL = 6000


class ServerProcess(abc.ABC):
    """Base of the local test servers; subclasses define ``start()`` returning ``self``."""

    proc: Optional[subprocess.Popen] = None
    log_path: str = ""

    @abc.abstractmethod
    def start(self) -> Any:
        """Start the server, wait until it is ready (see :meth:`wait_ready`) and return ``self``."""

    def wait_ready(self, name: str, url: str, timeout_s: float) -> None:
        """Poll ``url`` until it answers 200; the process exiting first, or ``timeout_s`` passing (then it is stopped),
        is a ``RuntimeError`` with the log's tail."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s: %s" % (name, self.proc.returncode if self.proc else None, self.log()))
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("%s did not become ready on %s within %ss: %s" % (name, url, timeout_s, self.log()))

    def log(self) -> str:
        """The last :data:`LOG_TAIL` characters of the server's log ("" when there is none yet)."""
        try:
            with open(self.log_path, "r", encoding="utf-8", errors="replace") as handle:
                return handle.read()[-LOG_TAIL:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Terminate the process this object started (by PID), then kill it if it does not exit in time."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_GRACE_S)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
