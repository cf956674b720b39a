# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Launching nccl-tests: command lines (never shell strings) and a parallel runner with hard timeouts.

* :class:`NcclTestArgs` - the test binary's flags (``-b -e -f -g -n -w -c`` plus extra arguments);
* :class:`MpiLaunch` - one multi-host test through ``mpirun`` (hosts, slots per host, ``-x`` environment,
  launcher arguments); :func:`build_mpirun_command` turns it into an argv list;
* :class:`LocalLaunch` - one intra-node test: the binary alone (``-g N``, one process driving N GPUs) or,
  with ``processes > 1``, ``mpirun -np N`` on this host; :func:`build_local_command`;
* :func:`run_groups` runs several launches at once (at most ``max_parallel``), each in its own session
  (``start_new_session``). A launch that passes its ``timeout_s`` gets SIGTERM on every process of its
  session (mpirun puts each rank in a process group of its own, so the leader's group is not enough), then
  SIGKILL after a grace period, so no straggler survives; its :class:`RunOutput` says ``timed_out``.

Bad specifications raise :class:`NcclRunnerError` naming the field and the value; failures to run
(program missing, timeout, non-zero exit) are reported in :class:`RunOutput`, never raised.
"""
from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import canonical_collective
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError

#: collective -> nccl-tests binary name
BINARIES: Dict[str, str] = {
    "all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf", "alltoall": "alltoall_perf",
    "reduce_scatter": "reduce_scatter_perf", "broadcast": "broadcast_perf", "reduce": "reduce_perf",
    "sendrecv": "sendrecv_perf", "hypercube": "hypercube_perf", "gather": "gather_perf", "scatter": "scatter_perf",
}
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_GRACE_S = 5.0
#: Bytes of stdout/stderr kept per run (the tail; nccl-tests output of a sweep is a few KiB, NCCL_DEBUG=INFO more).
MAX_OUTPUT_BYTES = 8 * 1024 * 1024

_SIZE_RE = re.compile(r"^\d+[KMGkmg]?$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HOSTNAME_RE = re.compile(r"^(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_SOURCE = "nccl test launch"


class NcclRunnerError(CertifyError):
    """A launch specification is invalid; the message names the field and the value."""


def _fail(message: str, fld: str, value: object) -> NcclRunnerError:
    return NcclRunnerError(message, file=_SOURCE, field=fld, value=value)


def _check_int(value: object, fld: str, minimum: int, maximum: int = 1 << 30) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
        raise _fail("must be an integer in [%d, %d]" % (minimum, maximum), fld, value)
    return value


def _check_size(value: Union[int, str], fld: str) -> str:
    """nccl-tests size syntax: integer bytes or an integer with K/M/G."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and _SIZE_RE.match(value.strip()):
        return value.strip().upper()
    raise _fail("must be a byte count such as 1048576, 1M or 8G", fld, value)


def size_to_bytes(value: Union[int, str]) -> int:
    """``"64M"`` -> 67108864 (K/M/G are powers of 1024, as in nccl-tests)."""
    text = _check_size(value, "size")
    if text[-1] in "KMG":
        return int(text[:-1]) << {"K": 10, "M": 20, "G": 30}[text[-1]]
    return int(text)


def _check_timeout(value: object, fld: str = "timeout_s") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) <= 7 * 24 * 3600:
        raise _fail("must be a number of seconds > 0 (at most 7 days)", fld, value)
    return float(value)


def validate_env(env: Optional[Mapping[str, object]], fld: str = "env") -> Dict[str, str]:
    """Environment names must be shell-style identifiers; values strings without NUL or newline."""
    result: Dict[str, str] = {}
    if env is None:
        return result
    if not isinstance(env, Mapping):
        raise _fail("must be a mapping of variable names to values", fld, env)
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME_RE.match(name):
            raise _fail("invalid environment variable name (letters, digits, _; not starting with a digit)",
                        "%s.%s" % (fld, name), name)
        if isinstance(value, bool):
            value = "1" if value else "0"
        if isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str) or "\x00" in value or "\n" in value:
            raise _fail("environment values must be strings without NUL or newline", "%s.%s" % (fld, name), value)
        result[name] = value
    return result


def validate_host(host: object, fld: str = "hosts") -> str:
    """A host name (RFC 1123) or an IPv4 address; anything else (commas, colons, spaces, options) is refused."""
    if not isinstance(host, str) or not host:
        raise _fail("a host must be a non-empty string", fld, host)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        if address.version != 4:
            raise _fail("IPv6 addresses cannot be used in an mpirun host list (host:slots); use a host name", fld, host)
        return host
    if host.startswith("-") or not _HOSTNAME_RE.fullmatch(host):
        raise _fail("invalid host name (letters, digits, '-' and '.' only)", fld, host)
    return host


def _check_args(values: object, fld: str) -> List[str]:
    if values is None:
        return []
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise _fail("must be a list of separate arguments (not one shell string)", fld, values)
    out = []
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise _fail("arguments must be strings or numbers", "%s[%d]" % (fld, index), value)
        text = str(value)
        if "\x00" in text:
            raise _fail("arguments must not contain NUL", "%s[%d]" % (fld, index), value)
        out.append(text)
    return out


def binary_name(collective: str) -> str:
    """``"all_reduce"`` / ``"allreduce"`` / ``"all_reduce_perf"`` -> ``"all_reduce_perf"``."""
    canon = canonical_collective(collective)
    if canon is None or canon not in BINARIES:
        raise _fail("unknown collective (known: %s)" % ", ".join(sorted(BINARIES)), "collective", collective)
    return BINARIES[canon]


def binary_path(binary_dir: str, collective: str) -> str:
    """Path of the test binary for ``collective`` under ``binary_dir``."""
    if not isinstance(binary_dir, str) or not binary_dir or "\x00" in binary_dir:
        raise _fail("must be a directory path", "binary_dir", binary_dir)
    return os.path.join(binary_dir, binary_name(collective))


@dataclass
class NcclTestArgs:
    """Flags of an nccl-tests binary. ``gpus`` is ``-g`` (GPUs driven by each process)."""

    min_bytes: Union[int, str] = "1M"
    max_bytes: Union[int, str] = "64M"
    step_factor: int = 2
    gpus: int = 1
    iters: int = 20
    warmup: int = 5
    check: int = 1
    extra: List[str] = field(default_factory=list)

    def argv(self) -> List[str]:
        """The flags as separate arguments, validated."""
        low = _check_size(self.min_bytes, "min_bytes")
        high = _check_size(self.max_bytes, "max_bytes")
        if size_to_bytes(low) > size_to_bytes(high):
            raise _fail("min_bytes must not exceed max_bytes (%s)" % high, "min_bytes", self.min_bytes)
        return ["-b", low, "-e", high, "-f", str(_check_int(self.step_factor, "step_factor", 2, 1024)),
                "-g", str(_check_int(self.gpus, "gpus", 1, 1024)), "-n", str(_check_int(self.iters, "iters", 1, 1000000)),
                "-w", str(_check_int(self.warmup, "warmup", 0, 1000000)), "-c", str(_check_int(self.check, "check", 0, 1)),
                *_check_args(self.extra, "extra_args")]


@dataclass
class Command:
    """A prepared process: argv, environment additions, time limit."""

    argv: List[str]
    env: Dict[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    cwd: Optional[str] = None

    def __post_init__(self) -> None:
        self.argv = _check_args(self.argv, "argv")
        if not self.argv:
            raise _fail("a command needs at least the program", "argv", self.argv)
        self.env = validate_env(self.env)
        self.timeout_s = _check_timeout(self.timeout_s)


@dataclass
class MpiLaunch:  # pylint: disable=too-many-instance-attributes
    """One multi-host nccl-tests run through ``mpirun``.

    ``slots_per_host`` processes run on each host (1 for the CPU stand-in; the GPU count per host in
    production, each process with ``-g 1``). ``env`` is exported to every rank with ``-x NAME=VALUE``
    (``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME``, ``NCCL_DEBUG``, ...); ``launcher_env`` is the environment of
    ``mpirun`` itself (``OMPI_MCA_*``). ``mpirun_args`` are extra launcher arguments
    (``["--mca", "btl", "tcp,self"]``).
    """

    binary_dir: str
    collective: str
    hosts: List[str]
    slots_per_host: int = 1
    args: NcclTestArgs = field(default_factory=NcclTestArgs)
    env: Dict[str, str] = field(default_factory=dict)
    launcher_env: Dict[str, str] = field(default_factory=dict)
    mpirun: str = "mpirun"
    mpirun_args: List[str] = field(default_factory=list)
    allow_run_as_root: bool = False
    oversubscribe: bool = False
    tag_output: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def ranks(self) -> int:
        return len(self.hosts) * self.slots_per_host

    def to_command(self) -> Command:
        return Command(build_mpirun_command(self), env=validate_env(self.launcher_env, "launcher_env"),
                       timeout_s=_check_timeout(self.timeout_s))


@dataclass
class LocalLaunch:
    """One intra-node run: the binary alone with ``-g gpus`` or, with ``processes > 1``, ``mpirun -np processes``
    on this host (each process ``-g gpus``; the CPU stand-in needs ``gpus=1`` and one process per rank)."""

    binary_dir: str
    collective: str
    args: NcclTestArgs = field(default_factory=NcclTestArgs)
    processes: int = 1
    env: Dict[str, str] = field(default_factory=dict)
    mpirun: str = "mpirun"
    mpirun_args: List[str] = field(default_factory=list)
    allow_run_as_root: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def ranks(self) -> int:
        return self.processes * self.args.gpus

    def to_command(self) -> Command:
        env = validate_env(self.env)
        if self.processes > 1 and self.allow_run_as_root:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        return Command(build_local_command(self), env=env, timeout_s=_check_timeout(self.timeout_s))


def _check_program(value: object, fld: str) -> str:
    if not isinstance(value, str) or not value or "\x00" in value or value.startswith("-"):
        raise _fail("must be a program name or path", fld, value)
    return value


def build_mpirun_command(spec: MpiLaunch) -> List[str]:
    """``mpirun -np N -H h1:s,h2:s [--map-by slot] [flags] [-x K=V ...] <binary> <test flags>`` as an argv list."""
    if isinstance(spec.hosts, (str, bytes)) or not isinstance(spec.hosts, Sequence) or not spec.hosts:
        raise _fail("must be a non-empty list of hosts", "hosts", spec.hosts)
    hosts = [validate_host(h, "hosts[%d]" % i) for i, h in enumerate(spec.hosts)]
    dupes = sorted({h for h in hosts if hosts.count(h) > 1})
    if dupes:
        raise _fail("hosts must be distinct", "hosts", dupes)
    slots = _check_int(spec.slots_per_host, "slots_per_host", 1, 4096)
    argv = [_check_program(spec.mpirun, "mpirun"), "-np", str(len(hosts) * slots),
            "-H", ",".join("%s:%d" % (h, slots) for h in hosts), "--map-by", "slot"]
    if spec.allow_run_as_root:
        argv.append("--allow-run-as-root")
    if spec.oversubscribe:
        argv.append("--oversubscribe")
    if spec.tag_output:
        argv.append("--tag-output")
    argv += _check_args(spec.mpirun_args, "mpirun_args")
    for name, value in sorted(validate_env(spec.env).items()):
        argv += ["-x", "%s=%s" % (name, value)]
    argv.append(binary_path(spec.binary_dir, spec.collective))
    argv += spec.args.argv()
    return argv


def build_local_command(spec: LocalLaunch) -> List[str]:
    """The test binary alone (``-g N``), or ``mpirun -np P`` on this host when ``processes > 1``."""
    processes = _check_int(spec.processes, "processes", 1, 4096)
    binary = binary_path(spec.binary_dir, spec.collective)
    test = spec.args.argv()
    if processes == 1:
        return [binary, *test]
    argv = [_check_program(spec.mpirun, "mpirun"), "-np", str(processes), "-H", "localhost:%d" % processes,
            "--oversubscribe"]
    if spec.allow_run_as_root:
        argv.append("--allow-run-as-root")
    argv += _check_args(spec.mpirun_args, "mpirun_args")
    for name, value in sorted(validate_env(spec.env).items()):
        argv += ["-x", "%s=%s" % (name, value)]
    return argv + [binary, *test]


@dataclass
class RunOutput:
    """What one launch did. ``rc`` is the exit status (negative: killed by that signal; 127: could not start)."""

    rc: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    argv: List[str] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and self.error is None

    def to_dict(self) -> Dict[str, object]:
        return {"rc": self.rc, "stdout": self.stdout, "stderr": self.stderr, "duration_s": round(self.duration_s, 3),
                "timed_out": self.timed_out, "argv": list(self.argv), "error": self.error}


LaunchSpec = Union[MpiLaunch, LocalLaunch, Command]


def _as_command(test_id: str, spec: LaunchSpec) -> Command:
    if isinstance(spec, Command):
        return spec
    if isinstance(spec, (MpiLaunch, LocalLaunch)):
        return spec.to_command()
    raise _fail("launch specs must be MpiLaunch, LocalLaunch or Command", "specs.%s" % test_id, type(spec).__name__)


def _read_tail(handle, limit: int = MAX_OUTPUT_BYTES) -> str:
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - limit))
    data = handle.read()
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text = "[... %d bytes of output dropped ...]\n%s" % (size - limit, text)
    return text


def _launch_members(sid: int) -> List[int]:
    """Live (non-zombie) processes of the launch whose session leader is ``sid``.

    Each launch starts in a session of its own (``start_new_session``). Its processes may leave the leader's process
    group, but not the session: Open MPI's mpirun puts every local rank in a process group of its own, so signalling
    only the group would leave the ranks running once mpirun is gone.
    """
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no procfs
        return []
    members = []
    for pid in pids:
        try:
            with open("/proc/%s/stat" % pid, encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        # fields: state, ppid, pgrp, session, ...
        if len(fields) > 3 and fields[0] != "Z" and str(sid) in (fields[2], fields[3]):
            members.append(int(pid))
    return members


def _signal_group(sid: int, sig: int) -> None:
    """Send ``sig`` to the launch led by ``sid``: its process group and every other process of its session."""
    try:
        os.killpg(sid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in _launch_members(sid):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


#: How long :func:`run_groups` waits, after its leader exited and its launch was SIGKILLed, for the stragglers to
#: leave the process table before returning its result anyway (a process in uninterruptible sleep may never leave).
GROUP_EXIT_WAIT_S = 5.0


def _group_has_live_member(sid: int) -> bool:
    """Whether a process of the launch led by ``sid`` still runs (zombies waiting for their reaper do not count)."""
    if os.path.isdir("/proc"):
        return bool(_launch_members(sid))
    try:  # no procfs: the process group is all we can probe
        os.killpg(sid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Running:  # pylint: disable=too-few-public-methods
    """One started process with its output files and deadlines."""

    def __init__(self, test_id: str, command: Command, tmpdir: str, base_env: Mapping[str, str]) -> None:
        self.test_id = test_id
        self.command = command
        self.out = tempfile.TemporaryFile(dir=tmpdir)  # pylint: disable=consider-using-with
        self.err = tempfile.TemporaryFile(dir=tmpdir)  # pylint: disable=consider-using-with
        self.started = time.monotonic()
        self.deadline = self.started + command.timeout_s
        self.kill_at: Optional[float] = None
        self.timed_out = False
        #: set when the leader has exited: when it ended, and until when to wait for its SIGKILLed group to be gone
        self.ended: Optional[float] = None
        self.reap_until: Optional[float] = None
        env = dict(base_env)
        env.update(command.env)
        program = command.argv[0]
        self.error: Optional[str] = None
        self.proc: Optional[subprocess.Popen] = None
        if os.sep not in program and shutil.which(program, path=env.get("PATH")) is None:
            self.error = "program not found: %s (PATH=%s)" % (program, env.get("PATH", ""))
            return
        try:
            self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
                command.argv, stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err, env=env, cwd=command.cwd,
                start_new_session=True)
        except OSError as exc:
            self.error = "cannot start %s: %s" % (program, exc.strerror or exc)

    def reaped(self, now: float) -> bool:
        """Called once the leader has exited: SIGKILL the stragglers of its group (first call), then whether the
        result may be returned - no member of the group runs any more, or :data:`GROUP_EXIT_WAIT_S` has passed.
        On a loaded machine the kernel takes a moment to tear killed processes down; the caller keeps polling
        meanwhile, so a process that never leaves (uninterruptible sleep) delays no other launch."""
        if self.proc is None:
            return True
        if self.reap_until is None:
            self.ended = now
            self.reap_until = now + GROUP_EXIT_WAIT_S
            _signal_group(self.proc.pid, signal.SIGKILL)
        return not _group_has_live_member(self.proc.pid) or now >= self.reap_until

    def finish(self) -> RunOutput:
        duration = (self.ended if self.ended is not None else time.monotonic()) - self.started
        stdout, stderr = _read_tail(self.out), _read_tail(self.err)
        self.out.close()
        self.err.close()
        if self.error is not None:
            return RunOutput(rc=127, stdout=stdout, stderr=stderr + self.error, duration_s=duration,
                             argv=list(self.command.argv), error=self.error)
        rc = self.proc.returncode if self.proc is not None and self.proc.returncode is not None else -signal.SIGKILL
        error = "timed out after %g s" % self.command.timeout_s if self.timed_out else None
        return RunOutput(rc=rc, stdout=stdout, stderr=stderr, duration_s=duration, timed_out=self.timed_out,
                         argv=list(self.command.argv), error=error)


def run_groups(specs: Mapping[str, LaunchSpec], max_parallel: int = 4, grace_s: float = DEFAULT_GRACE_S,
               poll_s: float = 0.05, base_env: Optional[Mapping[str, str]] = None) -> Dict[str, RunOutput]:
    """Run every launch (at most ``max_parallel`` at once), each with its own timeout; return ``{test_id: RunOutput}``.

    Specs are validated before anything starts. A launch past its deadline gets SIGTERM on its process
    group, then SIGKILL ``grace_s`` later; every group is SIGKILLed once its leader has exited, and its result is
    returned once the group is gone (at most :data:`GROUP_EXIT_WAIT_S` later), so no straggler outlives its launch.
    """
    _check_int(max_parallel, "max_parallel", 1, 4096)
    if isinstance(grace_s, bool) or not isinstance(grace_s, (int, float)) or grace_s < 0:
        raise _fail("must be a number of seconds >= 0", "grace_s", grace_s)
    commands = {str(test_id): _as_command(str(test_id), spec) for test_id, spec in specs.items()}
    env = dict(os.environ if base_env is None else base_env)
    pending = list(commands.items())
    running: List[_Running] = []
    results: Dict[str, RunOutput] = {}
    with tempfile.TemporaryDirectory(prefix="nccl-runner-") as tmpdir:
        try:
            while pending or running:
                while pending and len(running) < max_parallel:
                    test_id, command = pending.pop(0)
                    running.append(_Running(test_id, command, tmpdir, env))
                now = time.monotonic()
                still: List[_Running] = []
                for item in running:
                    if item.proc is None or item.proc.poll() is not None:
                        if item.reaped(now):
                            results[item.test_id] = item.finish()
                        else:
                            still.append(item)
                        continue
                    if not item.timed_out and now >= item.deadline:
                        item.timed_out = True
                        item.kill_at = now + grace_s
                        _signal_group(item.proc.pid, signal.SIGTERM)
                    elif item.kill_at is not None and now >= item.kill_at:
                        _signal_group(item.proc.pid, signal.SIGKILL)
                        item.kill_at = now + 1.0
                    still.append(item)
                running = still
                if running:
                    time.sleep(poll_s)
        finally:
            for item in running:  # interrupted (KeyboardInterrupt): leave nothing behind
                if item.proc is not None:
                    _signal_group(item.proc.pid, signal.SIGKILL)
                    item.proc.wait()
                item.out.close()
                item.err.close()
    return {test_id: results[test_id] for test_id in commands}


def run_one(spec: LaunchSpec, grace_s: float = DEFAULT_GRACE_S, base_env: Optional[Mapping[str, str]] = None) -> RunOutput:
    """Run a single launch (see :func:`run_groups`)."""
    return run_groups({"run": spec}, max_parallel=1, grace_s=grace_s, base_env=base_env)["run"]
