# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A reboot stand-in for the network-namespace fabric (``netns_fabric.py``): a fabric host "reboots" without
touching the real machine.

A fabric host is a network namespace with its own sshd; every namespace shares the root file system and kernel, so
``/proc/sys/kernel/random/boot_id`` is the machine's and a real ``shutdown -r`` would reboot the machine. Instead:

* **boot id**: each host gets a file ``<fabric workdir>/hosts/<name>/boot_id`` (a random UUID). The remediation's
  ``boot_time_command`` reads it (``cat <file>``), exactly as it reads ``/proc/sys/kernel/random/boot_id`` on a
  real node.
* **reboot command**: ``<python> reboot_standin.py reboot --hostdir <hostdir> [--down-delay S] [--boot-s S]``, run
  over SSH ON the host (it inherits the host's network and UTS namespaces from that host's sshd). It refuses to run
  unless its network namespace is a fabric host's (one of ``/run/netns/dsxXXXX-hN``, never the machine's) and the
  host's sshd (its ``sshd.pid``) is in that same namespace. It answers at once (rc 0, like ``shutdown -r +1``) and
  leaves a detached child (:func:`detach` returns only once the child is in a session of its own, so the end of the
  SSH session cannot take the child with it, however late the machine runs it) that, after ``--down-delay``
  seconds, kills every process of THAT network namespace (the host's sshd, every SSH session on it, whatever was
  started through them: what a reboot ends), writes a new boot id, waits ``--boot-s`` seconds (the "boot") and
  starts the host's sshd again with the same configuration (``sshd -f <hostdir>/sshd_config``, which writes the new
  pid to ``sshd.pid``). Nothing outside that namespace is touched.
* **events**: the child appends ``{"event": "down"|"boot_id"|"sshd_started"|"up", "time": <epoch s>, ...}`` lines to
  ``<hostdir>/reboot_events.jsonl`` (``up``: the new sshd answers with its banner), which the MTTR bench uses to
  split a reboot into shutdown, boot and reconnection.

Harness side: :func:`install` writes the boot-id files of a started fabric and returns a :class:`RebootStandin`
with ``reboot_command(host)``, ``boot_time_command(host)``, ``sentinel_reboot(host)`` (the ``sentinel_reboot``
settings of the remediation task file), ``boot_id(host)``, ``events(host)`` and ``sync_fabric_pids()`` (so that the
fabric's ``stop()`` kills the new sshd first; its namespace cleanup would kill it anyway).

This file runs as a script on the hosts, so it imports only the standard library.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

BOOT_ID_FILE = "boot_id"
EVENTS_FILE = "reboot_events.jsonl"
SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/bin/sshd", "/sbin/sshd")
NETNS_DIR = Path("/run/netns")
FABRIC_NAMESPACE_RE = re.compile(r"^dsx[0-9a-f]{4}-h\d+$")


class StandinError(RuntimeError):
    """The stand-in refuses to act (wrong namespace, not a fabric host directory)."""


# ---------------------------------------------------------------------------------------------------- shared helpers
def _net_ns(pid: object = "self") -> Optional[str]:
    try:
        return os.readlink("/proc/%s/ns/net" % pid)
    except OSError:
        return None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _event(hostdir: Path, event: str, **fields: object) -> None:
    record = {"event": event, "time": time.time()}
    record.update(fields)
    with open(hostdir / EVENTS_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _listen_address(config: Path) -> str:
    for line in config.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if len(words) == 2 and words[0].lower() == "listenaddress":
            return words[1]
    raise StandinError("%s has no ListenAddress" % config)


def _read_pid(path: Path) -> Optional[int]:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


# ---------------------------------------------------------------------------------------------------- host side
def check_host(hostdir: Path) -> None:
    """Raise StandinError unless this process runs inside the fabric host that ``hostdir`` describes."""
    mine = _net_ns()
    if mine is None:
        raise StandinError("cannot read this process's network namespace (/proc/self/ns/net)")
    named = fabric_namespace_of(mine)
    if named is None:
        raise StandinError("refusing to act: this process is not in a fabric host's network namespace "
                           "(no /run/netns/<dsxXXXX-hN> is %s)" % mine)
    for name in ("sshd_config", BOOT_ID_FILE):
        if not (hostdir / name).is_file():
            raise StandinError("refusing to act: %s is not a fabric host directory (no %s)" % (hostdir, name))
    pid = _read_pid(hostdir / "sshd.pid")
    if pid is None or _net_ns(pid) != mine:
        raise StandinError("refusing to act: the sshd of %s (pid %s) is not in this network namespace" % (hostdir, pid))


def fabric_namespace_of(net_ns: str) -> Optional[str]:
    """The name of the fabric namespace (``/run/netns/dsxXXXX-hN``) whose inode is ``net_ns`` (``net:[inode]``), else None."""
    inode = net_ns[len("net:["):-1] if net_ns.startswith("net:[") and net_ns.endswith("]") else ""
    if not inode.isdigit() or not NETNS_DIR.is_dir():
        return None
    for entry in NETNS_DIR.iterdir():
        try:
            if FABRIC_NAMESPACE_RE.match(entry.name) and os.stat(entry).st_ino == int(inode):
                return entry.name
        except OSError:
            continue
    return None


def _namespace_pids(net_ns: str) -> List[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid() and _net_ns(entry) == net_ns:
            pids.append(int(entry))
    return pids


def _kill_namespace(net_ns: str, grace_s: float = 2.0) -> int:
    """SIGTERM, then SIGKILL, every other process of ``net_ns``; returns how many were found."""
    pids = _namespace_pids(net_ns)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_net_ns(p) == net_ns for p in pids):
            time.sleep(0.05)
        pids = [p for p in pids if _net_ns(p) == net_ns]
        if not pids:
            break
    return len(_namespace_pids(net_ns)) if pids else 0


def _sshd_binary() -> str:
    for candidate in SSHD_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    raise StandinError("no sshd binary found (%s)" % ", ".join(SSHD_CANDIDATES))


def _wait_banner(address: str, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, 22), timeout=1.0) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def _reboot_child(hostdir: Path, net_ns: str, down_delay_s: float, boot_s: float) -> None:
    """The detached part: down, new boot id, boot, sshd back."""
    time.sleep(down_delay_s)
    left = _kill_namespace(net_ns)
    _event(hostdir, "down", survivors=left)
    new_id = str(uuid.uuid4())
    _write_atomic(hostdir / BOOT_ID_FILE, new_id + "\n")
    _event(hostdir, "boot_id", boot_id=new_id)
    time.sleep(boot_s)
    config = hostdir / "sshd_config"
    with open(os.devnull, "rb") as devnull:
        proc = subprocess.run([_sshd_binary(), "-f", str(config), "-E", str(hostdir / "sshd.log")], stdin=devnull,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=30)
    _event(hostdir, "sshd_started", rc=proc.returncode, pid=_read_pid(hostdir / "sshd.pid"))
    _event(hostdir, "up" if _wait_banner(_listen_address(config)) else "up_failed")


#: Test hook: seconds the first child waits before it leaves the caller's session (forces the slow path, where the
#: caller would have returned and its SSH session ended before the child is detached).
DETACH_PAUSE_S = float(os.environ.get("DSXOS_REBOOT_STANDIN_DETACH_PAUSE_S", "0") or 0)


def detach(work: Callable[[], None]) -> int:
    """Run ``work`` in a grandchild in a session of its own; return 0 in the caller once it is detached.

    The caller waits (on a pipe) until the grandchild exists outside the caller's session and process group: the
    SSH session that ran the caller ends as soon as the caller returns, and its end sends SIGHUP to the process
    group of its terminal, which a child still in that group (not yet scheduled to call ``setsid``, on a loaded
    machine) would die of before it did anything. The child also ignores SIGHUP until it is detached."""
    ready_r, ready_w = os.pipe()
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    pid = os.fork()
    if pid > 0:
        signal.signal(signal.SIGHUP, previous)
        os.close(ready_w)
        try:
            os.read(ready_r, 1)  # b"1" from the detached grandchild, or b"" (EOF) if it died first
        finally:
            os.close(ready_r)
        os.waitpid(pid, 0)  # the first child exits right after the second fork
        return 0
    os.close(ready_r)
    if DETACH_PAUSE_S > 0:
        time.sleep(DETACH_PAUSE_S)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)  # pylint: disable=protected-access
    # the grandchild: no terminal, no inherited descriptors (the SSH session must be able to end)
    signal.signal(signal.SIGHUP, previous)  # the caller's disposition again, now that no session can hang it up
    os.write(ready_w, b"1")
    os.close(ready_w)
    devnull = os.open(os.devnull, os.O_RDWR)
    for descriptor in (0, 1, 2):
        os.dup2(devnull, descriptor)
    os.closerange(3, 1024)
    try:
        work()
    except BaseException:  # pylint: disable=broad-except
        os._exit(1)  # pylint: disable=protected-access
    os._exit(0)  # pylint: disable=protected-access


def reboot(hostdir: Path, down_delay_s: float, boot_s: float) -> int:
    """Check where we are, then detach a child that does the "reboot"; the caller returns once it is detached."""
    check_host(hostdir)
    net_ns = _net_ns()
    assert net_ns is not None
    _event(hostdir, "requested", down_delay_s=down_delay_s, boot_s=boot_s)

    def work() -> None:
        try:
            _reboot_child(hostdir, net_ns, down_delay_s, boot_s)
        except BaseException as exc:  # pylint: disable=broad-except
            try:
                _event(hostdir, "error", error=repr(exc))
            except OSError:
                pass
            raise

    return detach(work)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="reboot stand-in of a network-namespace fabric host (never the machine)")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("reboot", help="restart this fabric host's sshd and give it a new boot id")
    cmd.add_argument("--hostdir", required=True, type=Path)
    cmd.add_argument("--down-delay", type=float, default=1.0, help="seconds before the host goes down")
    cmd.add_argument("--boot-s", type=float, default=1.0, help="seconds the host stays down")
    args = parser.parse_args(argv)
    try:
        return reboot(args.hostdir.resolve(), args.down_delay, args.boot_s)
    except StandinError as exc:
        print("reboot stand-in: %s" % exc, file=sys.stderr)
        return 2


# ---------------------------------------------------------------------------------------------------- harness side
@dataclass
class RebootStandin:
    """The stand-in of one started fabric (``install(fabric)``)."""

    fabric: Any  # a started NetnsFabric (duck-typed: this file imports only the standard library)
    python: str = sys.executable
    script: Path = Path(__file__).resolve()

    def hostdir(self, host: str) -> Path:
        member = self.fabric.host(host)
        return Path(self.fabric.workdir) / "hosts" / member.name

    def boot_id_path(self, host: str) -> Path:
        return self.hostdir(host) / BOOT_ID_FILE

    def boot_id(self, host: str) -> str:
        return self.boot_id_path(host).read_text(encoding="utf-8").strip()

    def reboot_command(self, host: str, down_delay_s: float = 1.0, boot_s: float = 1.0) -> str:
        """The ``reboot_command`` of ``ansible.builtin.reboot`` (starts with an absolute path, as it requires)."""
        words = (self.python, self.script, "reboot", "--hostdir", self.hostdir(host), "--down-delay", down_delay_s, "--boot-s", boot_s)
        return " ".join(shlex.quote(str(w)) for w in words)

    def boot_time_command(self, host: str) -> str:
        return "cat %s" % shlex.quote(str(self.boot_id_path(host)))

    def sentinel_reboot(self, host: str, down_delay_s: float = 1.0, boot_s: float = 1.0, timeout_s: int = 120) -> Dict[str, object]:
        """``sentinel_reboot`` settings for the remediation task file ``reboot.yml`` on this host."""
        return {"command": self.reboot_command(host, down_delay_s, boot_s), "boot_time_command": self.boot_time_command(host),
                "timeout_s": timeout_s, "test_command": "true", "connect_timeout_s": 5}

    def events(self, host: str) -> List[Dict[str, object]]:
        path = self.hostdir(host) / EVENTS_FILE
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def sshd_pid(self, host: str) -> Optional[int]:
        return _read_pid(self.hostdir(host) / "sshd.pid")

    def sync_fabric_pids(self) -> None:
        """Point the fabric's record of each sshd at the running one (after a stand-in reboot)."""
        for member in self.fabric.members:
            pid = self.sshd_pid(member.name)
            if pid:
                member.sshd_pid = pid


def install(fabric: Any) -> RebootStandin:
    """Give every host of a started fabric a boot-id file (kept when it exists) and return the stand-in."""
    standin = RebootStandin(fabric)
    for member in fabric.members:
        path = standin.boot_id_path(member.name)
        if not path.exists():
            _write_atomic(path, str(uuid.uuid4()) + "\n")
    return standin


if __name__ == "__main__":
    sys.exit(main())
