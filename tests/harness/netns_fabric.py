# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A multi-host test fabric on one Linux machine: network namespaces, a bridge, veth pairs, one sshd per host.

``NetnsFabric(hosts=8, workdir=...)`` builds, in the root namespace, a Linux bridge ``<prefix>br`` with the
address ``10.77.<X>.1/24`` and, per host ``i``, a network namespace ``<prefix>-h<i>`` joined to the bridge by a
veth pair (``<prefix>h<i>n`` inside the namespace, address ``10.77.<X>.<10+i>/24``, ``<prefix>h<i>b`` on the
bridge). Each namespace runs its own ``sshd`` (listening on the host address only, host key under the work
directory, root login by key only, no PAM) inside its own UTS namespace whose host name is the inventory name
(``dsx-h1`` ...), so ``hostname`` - and therefore nccl-tests' ``#  Rank ... on <host>`` lines - tell hosts apart.
All namespaces share the root file system: programs reached over SSH are the same binaries (the project venv,
the nccl-tests CPU stand-in).

``<prefix>`` is ``dsx`` plus 4 hex digits, new for every fabric; ``<X>`` is the first ``10.77.X.0/24`` not in use
on the machine. A state file per fabric under ``/run/dsxos-netns-fabric/`` records the owner process; starting a
fabric first removes what earlier fabrics whose owner is gone left behind (namespaces, bridge, veths, their
processes), so an interrupted run never blocks the next one, and concurrent sessions never touch each other.

What the fabric gives its users:

* ``inventory_path``: an Ansible inventory (YAML) with group ``gpu_nodes`` (``ansible_host``, ``ansible_user: root``,
  the private key, ``StrictHostKeyChecking=no``, ``UserKnownHostsFile=/dev/null``, the test's Python);
* ``ssh_config_path`` / ``private_key``: for ``ssh -F`` and mpirun (``mpirun_env()``, ``mpirun_mca_args()``);
* ``slow_link(host, rate="50mbit")`` / ``clear_link(host)``: a ``tc tbf`` qdisc on both ends of the host's veth;
* ``run_in(host, argv)`` (``ip netns exec``) and ``ssh(host, command)``;
* ``stop()``: kills every process in the namespaces, deletes namespaces, veths and bridge.

Needs root and iproute2, openssh-server, openssh-client, util-linux (``unshare``), hostname; the MPI checks also
need openmpi-bin, libopenmpi-dev and gcc (``mpicc`` runs ``gcc``). :func:`missing_requirements` names what is missing; nothing is installed here.
"""
from __future__ import annotations

import ipaddress
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

import yaml

STATE_DIR = Path("/run/dsxos-netns-fabric")
SUBNET_BASE = "10.77"
PREFIX_RE = re.compile(r"^dsx[0-9a-f]{4}$")
NAMESPACE_RE = re.compile(r"^(dsx[0-9a-f]{4})-h\d+$")
LINK_RE = re.compile(r"^(dsx[0-9a-f]{4})(?:br|h\d+[nb])$")
RATE_RE = re.compile(r"^\d+(?:\.\d+)?(?:bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)$")
SIZE_RE = re.compile(r"^\d+(?:\.\d+)?(?:b|k|kb|m|mb|g|gb|kbit|mbit|gbit)?$")
TIME_RE = re.compile(r"^\d+(?:\.\d+)?(?:s|ms|us)$")
MAX_HOSTS = 200
SSHD = "/usr/sbin/sshd"
# the login user's shell start-up files: a fabric host gets its own (empty) copies, see NetnsFabric._start_sshds
SHELL_STARTUP_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile")

#: program -> Debian package that provides it
REQUIRED_PROGRAMS: Dict[str, str] = {
    "ip": "iproute2", "tc": "iproute2", "sshd": "openssh-server", "ssh": "openssh-client",
    "ssh-keygen": "openssh-client", "unshare": "util-linux", "hostname": "hostname",
}
MPI_PROGRAMS: Dict[str, str] = {"mpirun": "openmpi-bin", "mpicc": "libopenmpi-dev", "gcc": "gcc"}


class FabricError(RuntimeError):
    """The fabric could not be built, used or removed; the message names the command and its output."""


def _login_home(user: str = "root") -> str:
    """Home directory of the user the fabric's ssh clients log in as (the client config says `User root`)."""
    return pwd.getpwnam(user).pw_dir


def _which(program: str) -> Optional[str]:
    if program == "sshd":
        return SSHD if os.access(SSHD, os.X_OK) else shutil.which("sshd")
    return shutil.which(program, path=os.pathsep.join([os.environ.get("PATH", os.defpath), "/usr/sbin", "/sbin"]))


def missing_requirements(mpi: bool = True) -> List[str]:
    """What this machine lacks for the fabric (and, with ``mpi``, for MPI over it); empty when all is there."""
    problems: List[str] = []
    if os.geteuid() != 0:
        problems.append("root privileges (network namespaces, veth, bridge and tc need root; CI runs as root)")
    wanted = dict(REQUIRED_PROGRAMS)
    if mpi:
        wanted.update(MPI_PROGRAMS)
    lacking: Dict[str, List[str]] = {}
    for program, package in wanted.items():
        if not _which(program):
            lacking.setdefault(package, []).append(program)
    for package, programs in sorted(lacking.items()):
        problems.append("%s (Debian package %s)" % (", ".join(programs), package))
    return problems


def requirements_message(problems: Sequence[str]) -> str:
    """One message naming everything missing and the install command."""
    packages = sorted({m.group(1) for m in (re.search(r"Debian package (\S+)\)", p) for p in problems) if m})
    text = "the network-namespace test fabric cannot run here; missing: " + "; ".join(problems)
    if packages:
        text += ". Install with: apt-get install -y --no-install-recommends %s" % " ".join(packages)
    return text


def _run(argv: Sequence[str], check: bool = True, timeout: float = 30.0, **kwargs) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=timeout,
                              stdin=subprocess.DEVNULL, **kwargs)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FabricError("command failed to run: %s: %s" % (" ".join(argv), exc)) from exc
    if check and proc.returncode != 0:
        raise FabricError("command failed (rc=%d): %s\n%s%s" % (proc.returncode, " ".join(argv), proc.stdout, proc.stderr))
    return proc


def _pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid, "r", encoding="utf-8", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _kill_pids(pids: Iterable[int], grace_s: float = 2.0) -> None:
    """SIGTERM, then SIGKILL what is still alive after ``grace_s``."""
    pending = [p for p in set(pids) if p > 1 and p != os.getpid()]
    for pid in pending:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace_s
    while pending and time.monotonic() < deadline:
        pending = [p for p in pending if _pid_alive(p)]
        if pending:
            time.sleep(0.05)
    for pid in pending:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _namespace_pids(namespace: str) -> List[int]:
    proc = _run(["ip", "netns", "pids", namespace], check=False)
    return [int(tok) for tok in proc.stdout.split() if tok.isdigit()]


def list_namespaces() -> List[str]:
    """Names of every network namespace (``ip netns list``)."""
    proc = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]


def list_links() -> List[str]:
    """Names of the links in the root namespace."""
    proc = _run(["ip", "-o", "link", "show"], check=False)
    names = []
    for line in proc.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@", 1)[0])
    return names


def _state_owner_alive(prefix: str) -> bool:
    path = STATE_DIR / ("%s.json" % prefix)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        return _pid_alive(int(state["owner_pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def remove_prefix(prefix: str) -> None:
    """Remove everything a fabric with ``prefix`` created: processes in its namespaces, namespaces, links, state."""
    if not PREFIX_RE.match(prefix):
        raise FabricError("refusing to remove %r: not a fabric prefix (dsx + 4 hex digits)" % prefix)
    namespaces = [ns for ns in list_namespaces() if NAMESPACE_RE.match(ns) and NAMESPACE_RE.match(ns).group(1) == prefix]
    pids: List[int] = []
    for namespace in namespaces:
        pids.extend(_namespace_pids(namespace))
    _kill_pids(pids)
    for namespace in namespaces:
        _run(["ip", "netns", "del", namespace], check=False)
    for link in list_links():
        match = LINK_RE.match(link)
        if match and match.group(1) == prefix:
            _run(["ip", "link", "del", link], check=False)
    try:
        (STATE_DIR / ("%s.json" % prefix)).unlink()
    except FileNotFoundError:
        pass


def cleanup_leftovers() -> List[str]:
    """Remove fabrics whose owner process is gone; return their prefixes. Live fabrics are left alone."""
    prefixes = set()
    for namespace in list_namespaces():
        match = NAMESPACE_RE.match(namespace)
        if match:
            prefixes.add(match.group(1))
    for link in list_links():
        match = LINK_RE.match(link)
        if match:
            prefixes.add(match.group(1))
    if STATE_DIR.is_dir():
        for path in STATE_DIR.glob("dsx*.json"):
            if PREFIX_RE.match(path.stem):
                prefixes.add(path.stem)
    removed = []
    for prefix in sorted(prefixes):
        if not _state_owner_alive(prefix):
            remove_prefix(prefix)
            removed.append(prefix)
    return removed


def _used_subnets() -> set:
    used = set()
    proc = _run(["ip", "-o", "-4", "addr", "show"], check=False)
    for match in re.finditer(r"\binet (\d+\.\d+\.\d+\.\d+)/(\d+)", proc.stdout):
        used.add(ipaddress.ip_network("%s/%s" % match.groups(), strict=False))
    if STATE_DIR.is_dir():
        for path in STATE_DIR.glob("dsx*.json"):
            try:
                used.add(ipaddress.ip_network(json.loads(path.read_text(encoding="utf-8"))["subnet"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return used


def _free_subnet() -> ipaddress.IPv4Network:
    used = _used_subnets()
    for third in range(256):
        candidate = ipaddress.ip_network("%s.%d.0/24" % (SUBNET_BASE, third))
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise FabricError("no free %s.X.0/24 subnet for the test fabric" % SUBNET_BASE)


@dataclass
class FabricHost:
    """One emulated host: its inventory name (also its host name inside), namespace, address and links."""

    name: str
    index: int
    namespace: str
    address: str
    veth_inside: str
    veth_bridge: str
    sshd_pid: Optional[int] = None
    slowed: Optional[str] = None

    def to_dict(self) -> Dict[str, object]:
        return {"name": self.name, "index": self.index, "namespace": self.namespace, "address": self.address,
                "veth_inside": self.veth_inside, "veth_bridge": self.veth_bridge, "sshd_pid": self.sshd_pid,
                "slowed": self.slowed}


@dataclass
class NetnsFabric:  # pylint: disable=too-many-instance-attributes
    """N hosts in network namespaces on one bridge, each with an sshd. Use as a context manager or start()/stop()."""

    hosts: int = 8
    workdir: Path = field(default_factory=lambda: Path("/tmp"))
    host_prefix: str = "dsx-h"
    python_interpreter: str = sys.executable
    prefix: str = ""
    subnet: Optional[ipaddress.IPv4Network] = None
    members: List[FabricHost] = field(default_factory=list)
    started: bool = False
    _children: List[subprocess.Popen] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.hosts, int) or isinstance(self.hosts, bool) or not 1 <= self.hosts <= MAX_HOSTS:
            raise FabricError("hosts must be an integer 1..%d, got %r" % (MAX_HOSTS, self.hosts))
        if not re.match(r"^[a-z][a-z0-9-]{0,30}$", self.host_prefix):
            raise FabricError("host_prefix must be lower-case letters, digits and '-', got %r" % self.host_prefix)
        self.workdir = Path(self.workdir)

    # ------------------------------------------------------------------ properties
    @property
    def bridge(self) -> str:
        return "%sbr" % self.prefix

    @property
    def bridge_address(self) -> str:
        assert self.subnet is not None
        return str(self.subnet.network_address + 1)

    @property
    def cidr(self) -> str:
        """The fabric's subnet, e.g. ``10.77.0.0/24`` (for ``btl_tcp_if_include``)."""
        return str(self.subnet)

    @property
    def private_key(self) -> Path:
        return self.workdir / "client" / "id_ed25519"

    @property
    def ssh_config_path(self) -> Path:
        return self.workdir / "client" / "ssh_config"

    @property
    def inventory_path(self) -> Path:
        return self.workdir / "inventory.yml"

    @property
    def names(self) -> List[str]:
        return [h.name for h in self.members]

    @property
    def addresses(self) -> List[str]:
        return [h.address for h in self.members]

    def host(self, name_or_address: str) -> FabricHost:
        """The host with that inventory name, namespace or address."""
        for member in self.members:
            if name_or_address in (member.name, member.namespace, member.address):
                return member
        raise FabricError("unknown fabric host %r (hosts: %s)" % (name_or_address, ", ".join(self.names)))

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "NetnsFabric":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> "NetnsFabric":
        """Build everything; on any failure, remove what was built and raise FabricError."""
        problems = missing_requirements(mpi=False)
        if problems:
            raise FabricError(requirements_message(problems))
        cleanup_leftovers()
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._claim_prefix_and_subnet()
        try:
            self._plan_hosts()
            self._write_state()
            self._build_network()
            self._write_client_files()
            self._start_sshds()
            self.write_inventory()
            self.started = True
        except BaseException:
            self.stop()
            raise
        return self

    def _claim_prefix_and_subnet(self) -> None:
        taken = set(list_namespaces()) | set(list_links())
        for _attempt in range(100):
            prefix = "dsx%s" % secrets.token_hex(2)
            if (STATE_DIR / ("%s.json" % prefix)).exists():
                continue
            if any(name.startswith(prefix) for name in taken):
                continue
            self.prefix = prefix
            break
        else:
            raise FabricError("could not find an unused fabric prefix")
        self.subnet = _free_subnet()

    def _plan_hosts(self) -> None:
        assert self.subnet is not None
        base = self.subnet.network_address
        self.members = [
            FabricHost(name="%s%d" % (self.host_prefix, i), index=i, namespace="%s-h%d" % (self.prefix, i),
                       address=str(base + 10 + i), veth_inside="%sh%dn" % (self.prefix, i),
                       veth_bridge="%sh%db" % (self.prefix, i))
            for i in range(1, self.hosts + 1)
        ]

    def _write_state(self) -> None:
        state = {"owner_pid": os.getpid(), "prefix": self.prefix, "subnet": self.cidr, "workdir": str(self.workdir),
                 "hosts": [h.to_dict() for h in self.members]}
        path = STATE_DIR / ("%s.json" % self.prefix)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        os.replace(tmp, path)

    def _build_network(self) -> None:
        assert self.subnet is not None
        plen = self.subnet.prefixlen
        root_cmds = [
            "link add %s type bridge" % self.bridge,
            "addr add %s/%d dev %s" % (self.bridge_address, plen, self.bridge),
            "link set %s up" % self.bridge,
        ]
        for member in self.members:
            _run(["ip", "netns", "add", member.namespace])
            root_cmds += [
                "link add %s type veth peer name %s" % (member.veth_bridge, member.veth_inside),
                "link set %s netns %s" % (member.veth_inside, member.namespace),
                "link set %s master %s" % (member.veth_bridge, self.bridge),
                "link set %s up" % member.veth_bridge,
            ]
        self._ip_batch(root_cmds)
        for member in self.members:
            self._ip_batch(["addr add %s/%d dev %s" % (member.address, plen, member.veth_inside),
                            "link set %s up" % member.veth_inside, "link set lo up"], namespace=member.namespace)

    @staticmethod
    def _ip_batch(commands: Sequence[str], namespace: Optional[str] = None) -> None:
        argv = ["ip"] + (["-n", namespace] if namespace else []) + ["-batch", "-"]
        try:
            proc = subprocess.run(argv, input="\n".join(commands) + "\n", capture_output=True, text=True,
                                  check=False, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            raise FabricError("ip -batch failed to run: %s" % exc) from exc
        if proc.returncode != 0:
            raise FabricError("ip -batch failed (rc=%d)%s:\n%s\n%s%s" % (
                proc.returncode, " in namespace %s" % namespace if namespace else "", "\n".join(commands),
                proc.stdout, proc.stderr))

    def _write_client_files(self) -> None:
        client = self.private_key.parent
        client.mkdir(parents=True, exist_ok=True)
        if not self.private_key.exists():
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dsxos-fabric-client", "-f", str(self.private_key)])
        lines = []
        for member in self.members:
            lines += ["Host %s %s" % (member.name, member.address), "    HostName %s" % member.address]
        lines += [
            "Host *",
            "    User root",
            "    IdentityFile %s" % self.private_key,
            "    IdentitiesOnly yes",
            "    StrictHostKeyChecking no",
            "    UserKnownHostsFile /dev/null",
            "    GlobalKnownHostsFile /dev/null",
            "    BatchMode yes",
            "    LogLevel ERROR",
            "    ConnectTimeout 10",
            "",
        ]
        self.ssh_config_path.write_text("\n".join(lines), encoding="utf-8")
        (self.workdir / "authorized_keys").write_text(
            Path(str(self.private_key) + ".pub").read_text(encoding="utf-8"), encoding="utf-8")

    def _sshd_config(self, member: FabricHost, hostdir: Path) -> Path:
        config = hostdir / "sshd_config"
        config.write_text("\n".join([
            "ListenAddress %s" % member.address,
            "Port 22",
            "HostKey %s" % (hostdir / "ssh_host_ed25519_key"),
            "PidFile %s" % (hostdir / "sshd.pid"),
            "AuthorizedKeysFile %s" % (self.workdir / "authorized_keys"),
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "PrintMotd no",
            "MaxStartups 200",
            "MaxSessions 200",
            "Subsystem sftp internal-sftp",
            "LogLevel ERROR",
            "",
        ]), encoding="utf-8")
        return config

    def _start_sshds(self) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        home = Path(_login_home())
        covered = [str(home / name) for name in SHELL_STARTUP_FILES if (home / name).exists()]  # see below
        for member in self.members:
            hostdir = self.workdir / "hosts" / member.name
            hostdir.mkdir(parents=True, exist_ok=True)
            key = hostdir / "ssh_host_ed25519_key"
            if not key.exists():
                _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", member.name, "-f", str(key)])
            config = self._sshd_config(member, hostdir)
            log = hostdir / "sshd.log"
            # A host of its own: sshd runs the login shell, which reads the user's start-up files (~/.bashrc: pyenv,
            # conda, ...). Those are the controller's, not this host's, and one that blocks (a stale pyenv rehash lock
            # held every remote command for 60 s) must not hang the fabric. `ip netns exec` gives the host a private
            # mount namespace, so each start-up file is covered by the host's own empty copy there, invisible outside.
            startup = hostdir / "shell-startup"
            startup.write_text("# %s: shell start-up file of this fabric host\n" % member.name, encoding="utf-8")
            # ip netns exec -> unshare (own UTS namespace) -> sh sets the host name, covers the start-up files
            # -> exec sshd: one pid throughout
            script = ('name=$1 sshd=$2 cfg=$3 log=$4 own=$5; shift 5; hostname "$name" &&'
                      ' for f in "$@"; do mount --bind "$own" "$f" 2>>"$log" || exit 1; done && exec "$sshd" -D -f "$cfg" -E "$log"')
            argv = ["ip", "netns", "exec", member.namespace, "unshare", "--uts", "sh", "-c", script, "sh",
                    member.name, _which("sshd") or SSHD, str(config), str(log), str(startup), *covered]
            with open(os.devnull, "rb") as devnull:
                proc = subprocess.Popen(argv, stdin=devnull, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)  # pylint: disable=consider-using-with
            member.sshd_pid = proc.pid
            self._children.append(proc)
        self._write_state()
        for member in self.members:
            self._wait_port(member)

    def _wait_port(self, member: FabricHost, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            if member.sshd_pid and not _pid_alive(member.sshd_pid):
                break
            try:
                with socket.create_connection((member.address, 22), timeout=1.0) as sock:
                    banner = sock.recv(64)
                    if banner.startswith(b"SSH-"):
                        return
            except OSError as exc:
                last = str(exc)
            time.sleep(0.05)
        log = self.workdir / "hosts" / member.name / "sshd.log"
        text = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.exists() else ""
        raise FabricError("sshd of %s (%s, namespace %s) did not come up: %s\n%s"
                          % (member.name, member.address, member.namespace, last or "process exited", text))

    def stop(self) -> None:
        """Kill the processes in the namespaces (sshd first), delete namespaces, veths, bridge and state file."""
        if not self.prefix:
            return
        _kill_pids([m.sshd_pid for m in self.members if m.sshd_pid])
        remove_prefix(self.prefix)
        for child in self._children:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self._children = []
        self.started = False

    # ------------------------------------------------------------------ client side
    def ssh_common_args(self) -> List[str]:
        """ssh options reaching the hosts (also what Ansible gets as ansible_ssh_common_args)."""
        return ["-F", str(self.ssh_config_path)]

    def ssh(self, host: str, command: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run ``command`` (a remote shell command line) on ``host`` over SSH."""
        member = self.host(host)
        return _run(["ssh", *self.ssh_common_args(), member.address, command], check=False, timeout=timeout)

    def run_in(self, host: str, argv: Sequence[str], timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run ``argv`` inside the host's network namespace (root's UTS namespace, not sshd's)."""
        member = self.host(host)
        return _run(["ip", "netns", "exec", member.namespace, *argv], check=False, timeout=timeout)

    def inventory(self, group: str = "gpu_nodes") -> Dict[str, object]:
        """The Ansible inventory as a mapping (what :meth:`write_inventory` writes)."""
        common = ("-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null "
                  "-o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=10")
        hosts = {m.name: {"ansible_host": m.address, "fabric_namespace": m.namespace} for m in self.members}
        return {"all": {"children": {group: {
            "hosts": hosts,
            "vars": {
                "ansible_connection": "ssh",
                "ansible_pipelining": True,
                "ansible_user": "root",
                "ansible_ssh_private_key_file": str(self.private_key),
                "ansible_ssh_common_args": common,
                "ansible_python_interpreter": self.python_interpreter,
                "fabric_subnet": self.cidr,
            },
        }}}}

    def write_inventory(self, path: Optional[os.PathLike] = None, group: str = "gpu_nodes") -> Path:
        """Write the inventory (YAML) atomically; default path ``<workdir>/inventory.yml``."""
        target = Path(path) if path is not None else self.inventory_path
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(yaml.safe_dump(self.inventory(group), default_flow_style=False, sort_keys=True), encoding="utf-8")
        os.replace(tmp, target)
        return target

    def mpirun_env(self) -> Dict[str, str]:
        """Environment for ``mpirun`` in the root namespace: ssh with the fabric's key, TCP on the fabric subnet."""
        return {
            "OMPI_MCA_plm_rsh_agent": "ssh",
            "OMPI_MCA_plm_rsh_args": "-F %s" % self.ssh_config_path,
            "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
            "OMPI_MCA_btl": "tcp,self",
            "OMPI_MCA_btl_tcp_if_include": self.cidr,
            "OMPI_MCA_oob_tcp_if_include": self.cidr,
            "OMPI_MCA_mpi_yield_when_idle": "1",
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        }

    def mpirun_mca_args(self) -> List[str]:
        """The same settings as ``mpirun`` arguments (``--mca k v`` pairs plus ``--allow-run-as-root``)."""
        args: List[str] = []
        for key, value in self.mpirun_env().items():
            if key.startswith("OMPI_MCA_"):
                args += ["--mca", key[len("OMPI_MCA_"):], value]
        return args + ["--allow-run-as-root"]

    # ------------------------------------------------------------------ link shaping
    def slow_link(self, host: str, rate: str = "50mbit", burst: str = "64kb", latency: str = "100ms") -> None:
        """Limit the host's link to ``rate`` in both directions (``tc qdisc replace ... root tbf`` on both veth ends)."""
        member = self.host(host)
        for label, value, pattern in (("rate", rate, RATE_RE), ("burst", burst, SIZE_RE), ("latency", latency, TIME_RE)):
            if not isinstance(value, str) or not pattern.match(value):
                raise FabricError("slow_link(%s): invalid %s %r (tc syntax, e.g. rate 50mbit, burst 64kb, latency 100ms)"
                                  % (member.name, label, value))
        tbf = ["root", "tbf", "rate", rate, "burst", burst, "latency", latency]
        _run(["tc", "qdisc", "replace", "dev", member.veth_bridge, *tbf])
        _run(["ip", "netns", "exec", member.namespace, "tc", "qdisc", "replace", "dev", member.veth_inside, *tbf])
        member.slowed = rate

    def clear_link(self, host: str) -> None:
        """Remove the shaping of ``host``'s link (no error when there is none)."""
        member = self.host(host)
        _run(["tc", "qdisc", "del", "dev", member.veth_bridge, "root"], check=False)
        _run(["ip", "netns", "exec", member.namespace, "tc", "qdisc", "del", "dev", member.veth_inside, "root"], check=False)
        member.slowed = None

    def clear_all_links(self) -> None:
        """Remove every shaping this fabric applied."""
        for member in self.members:
            if member.slowed:
                self.clear_link(member.name)

    def link_rates(self) -> Mapping[str, Optional[str]]:
        """``{host: rate or None}`` as applied through :meth:`slow_link`."""
        return {m.name: m.slowed for m in self.members}
