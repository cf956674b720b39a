# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A real OCI registry for tests: Debian's ``docker-registry`` (CNCF distribution) on 127.0.0.1, plain HTTP.

``OciRegistry(workdir).start()`` writes a config with its own storage directory and a free port, starts
``docker-registry serve <config>`` (never the packaged systemd service), waits until ``GET /v2/`` answers and
``stop()`` ends exactly that process (by its PID).  ``users={"name": "password"}`` turns on htpasswd basic
auth (bcrypt hashes through the C library's ``crypt``, no extra package).  A missing binary is an error, never a skip.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Dict, Optional

from .server_process import ServerProcess

BINARY = "docker-registry"
PACKAGE = "docker-registry"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bcrypt_hash(password: str) -> str:
    """A bcrypt hash for htpasswd (``$2b$``), from the C library (glibc/libxcrypt) through ``crypt``."""
    import warnings  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # pylint: disable=import-outside-toplevel,deprecated-module
    hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
    if not hashed or not hashed.startswith("$2"):
        raise RuntimeError("the C library's crypt() cannot make bcrypt hashes, which htpasswd auth needs")
    return hashed


class OciRegistry(ServerProcess):
    """One registry process; use as a context manager or call ``start()``/``stop()``."""

    def __init__(self, workdir: str, users: Optional[Dict[str, str]] = None, start_timeout_s: float = 30.0) -> None:
        self.workdir = workdir
        self.users = dict(users or {})
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = os.path.join(workdir, "registry.log")

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``, the registry part of a reference."""
        return "127.0.0.1:%d" % self.port

    @property
    def url(self) -> str:
        return "http://%s" % self.host

    def _config(self) -> str:
        storage = os.path.join(self.workdir, "storage")
        os.makedirs(storage, exist_ok=True)
        lines = [
            "version: 0.1",
            "log:",
            "  level: info",
            "storage:",
            "  filesystem:",
            "    rootdirectory: %s" % storage,
            "  delete:",
            "    enabled: true",
            "http:",
            "  addr: %s" % self.host,
        ]
        if self.users:
            htpasswd = os.path.join(self.workdir, "htpasswd")
            with open(htpasswd, "w", encoding="utf-8") as handle:
                for name, password in sorted(self.users.items()):
                    handle.write("%s:%s\n" % (name, bcrypt_hash(password)))
            lines += ["auth:", "  htpasswd:", "    realm: dsxos-test", "    path: %s" % htpasswd]
        path = os.path.join(self.workdir, "config.yml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        return path

    def start(self) -> "OciRegistry":
        binary = shutil.which(BINARY)
        if binary is None:
            raise RuntimeError("%s not found: install the Debian package %s (scripts/system_deps.sh does)"
                               % (BINARY, PACKAGE))
        os.makedirs(self.workdir, exist_ok=True)
        self.port = free_port()
        config = self._config()
        log = open(self.log_path, "wb")  # pylint: disable=consider-using-with
        try:
            self.proc = subprocess.Popen([binary, "serve", config], stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s: %s" % (BINARY, self.proc.returncode, self.log()))
            try:
                with urllib.request.urlopen(self.url + "/v2/", timeout=2):
                    return self
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and self.users:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("%s did not answer on %s/v2/ within %ss: %s" % (BINARY, self.url, self.start_timeout_s,
                                                                           self.log()))
