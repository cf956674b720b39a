# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests for plugins/module_utils/certify/nccl_runner.py: command building, validation, parallel runs and timeout kills."""
from __future__ import annotations

import os
import sys
import subprocess
import time

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_runner import (
    Command, LocalLaunch, MpiLaunch, NcclRunnerError, NcclTestArgs, binary_name, build_local_command,
    build_mpirun_command, run_groups, run_one, size_to_bytes, validate_env)

BIN = "/opt/nccl-tests/build"


#: the time limit of the tests that need a launch killed at its timeout: long enough for the launched shell to
#: set itself up (start a child, trap SIGTERM, start a Python rank) on a loaded 2-core machine before the timeout comes
SETUP_S = 4.0


def _spec(**kwargs):
    base = dict(binary_dir=BIN, collective="all_reduce", hosts=["gpu-01", "gpu-02"], slots_per_host=8,
                args=NcclTestArgs(min_bytes="1M", max_bytes="8G", iters=20, warmup=5))
    base.update(kwargs)
    return MpiLaunch(**base)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
        return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"


# ---------------------------------------------------------------- command building

def test_mpirun_command_is_an_argv_list_with_hosts_slots_env_and_flags():
    spec = _spec(env={"NCCL_IB_HCA": "mlx5", "NCCL_DEBUG": "WARN"}, allow_run_as_root=True,
                 mpirun_args=["--mca", "btl", "tcp,self"])
    assert build_mpirun_command(spec) == [
        "mpirun", "-np", "16", "-H", "gpu-01:8,gpu-02:8", "--map-by", "slot", "--allow-run-as-root",
        "--mca", "btl", "tcp,self", "-x", "NCCL_DEBUG=WARN", "-x", "NCCL_IB_HCA=mlx5",
        BIN + "/all_reduce_perf", "-b", "1M", "-e", "8G", "-f", "2", "-g", "1", "-n", "20", "-w", "5", "-c", "1"]
    assert spec.ranks == 16


def test_values_with_spaces_and_quotes_stay_single_arguments():
    spec = _spec(env={"NCCL_SOCKET_IFNAME": "=eth0 ; rm -rf /", "X": "a'b\"c"}, hosts=["10.0.0.1"], slots_per_host=1,
                 oversubscribe=True, tag_output=True)
    argv = build_mpirun_command(spec)
    assert "-x" in argv and "NCCL_SOCKET_IFNAME==eth0 ; rm -rf /" in argv and "X=a'b\"c" in argv
    assert argv[:7] == ["mpirun", "-np", "1", "-H", "10.0.0.1:1", "--map-by", "slot"]
    assert "--oversubscribe" in argv and "--tag-output" in argv


@pytest.mark.parametrize("alias, binary", [("allreduce", "all_reduce_perf"), ("all_gather_perf", "all_gather_perf"),
                                           ("AllToAll", "alltoall_perf"), ("reduce-scatter", "reduce_scatter_perf"),
                                           ("sendrecv", "sendrecv_perf"), ("broadcast", "broadcast_perf")])
def test_collective_aliases_pick_the_binary(alias, binary):
    assert binary_name(alias) == binary
    assert build_mpirun_command(_spec(collective=alias))[7] == BIN + "/" + binary


@pytest.mark.parametrize("hosts, field, fragment", [
    (["gpu-01", "gpu-01"], "hosts", "distinct"),
    (["gpu-01,gpu-02"], "hosts[0]", "invalid host name"),
    (["-oProxyCommand=evil"], "hosts[0]", "invalid host name"),
    (["gpu-01:4"], "hosts[0]", "invalid host name"),
    (["bad host"], "hosts[0]", "invalid host name"),
    (["::1"], "hosts[0]", "IPv6"),
    ([""], "hosts[0]", "non-empty"),
    ([], "hosts", "non-empty list"),
    ("gpu-01,gpu-02", "hosts", "non-empty list"),
])
def test_bad_hosts_are_refused_naming_field_and_value(hosts, field, fragment):
    with pytest.raises(NcclRunnerError) as info:
        build_mpirun_command(_spec(hosts=hosts))
    assert info.value.field == field
    assert fragment in str(info.value)
    assert "field %s" % field in str(info.value)


@pytest.mark.parametrize("env, field", [({"1BAD": "x"}, "env.1BAD"), ({"A-B": "x"}, "env.A-B"),
                                        ({"OK": "a\nb"}, "env.OK"), ({"OK": ["list"]}, "env.OK")])
def test_bad_environment_is_refused(env, field):
    with pytest.raises(NcclRunnerError) as info:
        build_mpirun_command(_spec(env=env))
    assert info.value.field == field


def test_env_values_are_stringified():
    assert validate_env({"A": 1, "B": True, "C": "x"}) == {"A": "1", "B": "1", "C": "x"}
    with pytest.raises(NcclRunnerError):
        validate_env("A=1")


@pytest.mark.parametrize("kwargs, field", [
    ({"min_bytes": "1.5M"}, "min_bytes"), ({"max_bytes": "8T"}, "max_bytes"), ({"min_bytes": -1}, "min_bytes"),
    ({"min_bytes": "2G", "max_bytes": "1G"}, "min_bytes"), ({"step_factor": 1}, "step_factor"),
    ({"gpus": 0}, "gpus"), ({"iters": 0}, "iters"), ({"warmup": -1}, "warmup"), ({"check": 2}, "check"),
    ({"extra": "-G 1"}, "extra_args"), ({"iters": True}, "iters"),
])
def test_bad_test_flags_are_refused(kwargs, field):
    with pytest.raises(NcclRunnerError) as info:
        NcclTestArgs(**kwargs).argv()
    assert info.value.field == field


def test_sizes_and_other_spec_errors():
    assert size_to_bytes("64M") == 64 << 20 and size_to_bytes("8g") == 8 << 30 and size_to_bytes(4096) == 4096
    with pytest.raises(NcclRunnerError, match="unknown collective"):
        build_mpirun_command(_spec(collective="allsum"))
    with pytest.raises(NcclRunnerError) as info:
        build_mpirun_command(_spec(mpirun_args="--mca btl tcp"))
    assert info.value.field == "mpirun_args"
    with pytest.raises(NcclRunnerError) as info:
        build_mpirun_command(_spec(slots_per_host=0))
    assert info.value.field == "slots_per_host"
    with pytest.raises(NcclRunnerError) as info:
        _spec(timeout_s=0).to_command()
    assert info.value.field == "timeout_s"
    with pytest.raises(NcclRunnerError) as info:
        _spec(launcher_env={"BAD NAME": "1"}).to_command()
    assert info.value.field == "launcher_env.BAD NAME"


def test_local_command_alone_and_under_mpirun():
    args = NcclTestArgs(min_bytes="8", max_bytes="8G", gpus=8, iters=5, warmup=1, check=0, extra=["-G", "1"])
    single = LocalLaunch(binary_dir=BIN, collective="all_gather", args=args)
    assert build_local_command(single) == [BIN + "/all_gather_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8",
                                           "-n", "5", "-w", "1", "-c", "0", "-G", "1"]
    assert single.ranks == 8
    multi = LocalLaunch(binary_dir=BIN, collective="all_reduce", args=NcclTestArgs(gpus=1), processes=4,
                        env={"NCCL_DEBUG": "WARN"}, allow_run_as_root=True)
    argv = build_local_command(multi)
    assert argv[:8] == ["mpirun", "-np", "4", "-H", "localhost:4", "--oversubscribe", "--allow-run-as-root", "-x"]
    assert argv[8] == "NCCL_DEBUG=WARN" and argv[9] == BIN + "/all_reduce_perf"
    command = multi.to_command()
    assert command.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and command.argv == argv


# ---------------------------------------------------------------- running

def test_runs_in_parallel_and_captures_output(tmp_path):
    # Parallelism proven by a rendezvous, not by a wall-clock margin (which a loaded machine eats): each command marks
    # its start and then waits until all three have started; run one after another, the first would give up and
    # exit 99 instead of its own status.
    script = ('sleep 0.6; touch "$2/started-$0"; n=0; while [ "$(ls "$2" | wc -l)" -lt 3 ] && [ $n -lt 600 ]; '
              'do sleep 0.05; n=$((n+1)); done; [ "$(ls "$2" | wc -l)" -ge 3 ] || exit 99; '
              'echo out-$0; echo err-$0 >&2; exit $1')
    specs = {"t%d" % i: Command(["sh", "-c", script, str(i), str(i), str(tmp_path)]) for i in range(3)}
    results = run_groups(specs, max_parallel=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["started-0", "started-1", "started-2"]
    assert list(results) == ["t0", "t1", "t2"]
    for i in range(3):
        out = results["t%d" % i]
        assert out.rc == i and out.stdout == "out-%d\n" % i and out.stderr == "err-%d\n" % i
        assert not out.timed_out and out.duration_s >= 0.5
        assert out.ok is (i == 0)


def test_max_parallel_limits_concurrency(tmp_path):
    """Structural, not timed: every command logs its start and end (O_APPEND lines); the first two wait until two
    have started (a limit of 1 would leave them waiting, exit 99), and replaying the log never finds three at once."""
    log = tmp_path / "log"
    script = ('echo "start $0" >> "$1"; n=0; while [ "$(grep -c start "$1")" -lt 2 ] && [ $n -lt 600 ]; '
              'do sleep 0.02; n=$((n+1)); done; [ "$(grep -c start "$1")" -ge 2 ] || exit 99; '
              'sleep 0.1; echo "end $0" >> "$1"')
    specs = {"t%d" % i: Command(["sh", "-c", script, str(i), str(log)]) for i in range(4)}
    results = run_groups(specs, max_parallel=2)
    assert all(r.ok for r in results.values()), {k: (r.rc, r.stderr) for k, r in results.items()}
    running, peak = 0, 0
    events = log.read_text().split("\n")[:-1]
    for line in events:
        running += 1 if line.startswith("start") else -1
        peak = max(peak, running)
    assert sorted(events) == ["end %d" % i for i in range(4)] + ["start %d" % i for i in range(4)]
    assert peak == 2, events


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = "sleep 60 & echo $! > %s; echo started; wait" % pidfile
    start = time.monotonic()
    # the timeout leaves the script time to start its child and say so on a loaded machine (0.5 s did not, once)
    out = run_one(Command(["sh", "-c", script], timeout_s=SETUP_S), grace_s=1.0)
    elapsed = time.monotonic() - start
    assert out.timed_out and out.error == "timed out after %g s" % SETUP_S
    assert out.rc < 0 and not out.ok
    assert out.stdout == "started\n"
    assert SETUP_S <= elapsed < 30.0, "the timeout and the grace (1 s) ended it, not the 60 s sleep"
    child = int(pidfile.read_text().strip())
    deadline = time.monotonic() + 2.0
    while _pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _pid_alive(child), "background child %d survived the timeout kill" % child


def test_stragglers_are_gone_when_the_result_is_returned(tmp_path):
    """A leader that exits and leaves a child in its group: the child is killed AND gone before run_one returns
    (no polling by the caller), even with a CPU-bound process beside it."""
    pidfile = tmp_path / "child.pid"
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # pylint: disable=consider-using-with
    try:
        for attempt in range(5):
            out = run_one(Command(["sh", "-c", "sleep 60 & echo $! > %s; echo started" % pidfile], timeout_s=10))
            assert out.ok and not out.timed_out and out.stdout == "started\n"
            child = int(pidfile.read_text().strip())
            assert not _pid_alive(child), "attempt %d: straggler %d still runs after run_one returned" % (attempt, child)
    finally:
        busy.kill()
        busy.wait()


def test_processes_that_leave_the_process_group_are_killed_too(tmp_path):
    """mpirun puts every local rank in a process group of its own (same session): after a timeout kill or the
    leader's exit, those ranks must be gone as well."""
    for timeout_s, leader_waits in ((SETUP_S, True), (10.0, False)):
        pidfile = tmp_path / ("rank-%s.pid" % leader_waits)
        rank = ("import os, time; os.setpgid(0, 0); open(%r, 'w').write(str(os.getpid())); time.sleep(60)"
                % str(pidfile))
        script = "%s -c \"%s\" & while [ ! -s %s ]; do sleep 0.02; done; echo started%s" % (
            sys.executable, rank, pidfile, "; wait" if leader_waits else "")
        out = run_one(Command(["sh", "-c", script], timeout_s=timeout_s), grace_s=1.0)
        assert out.stdout == "started\n" and out.timed_out is leader_waits
        child = int(pidfile.read_text().strip())
        assert not _pid_alive(child), "rank %d in its own process group survived (timeout %s)" % (child, timeout_s)


def test_a_process_ignoring_sigterm_gets_sigkill_after_the_grace(tmp_path):
    marker = tmp_path / "ready"
    script = "trap '' TERM; touch %s; while true; do sleep 0.05; done" % marker
    start = time.monotonic()
    out = run_one(Command(["sh", "-c", script], timeout_s=SETUP_S), grace_s=0.5)
    elapsed = time.monotonic() - start
    assert marker.exists(), "the script reached its trap before the SIGTERM"
    assert out.timed_out and out.rc == -9
    assert SETUP_S + 0.5 <= elapsed < 30.0, "the grace (0.5 s) was waited for, and SIGKILL ended the endless loop"


def test_a_missing_program_is_reported_not_raised():
    out = run_one(Command(["/nonexistent/all_reduce_perf", "-b", "1M"]))
    assert out.rc == 127 and "cannot start /nonexistent/all_reduce_perf" in out.error
    out = run_one(Command(["no-such-program-dsxos"]))
    assert out.rc == 127 and "program not found: no-such-program-dsxos" in out.error


def test_bad_run_arguments():
    with pytest.raises(NcclRunnerError) as info:
        run_groups({"a": Command(["true"])}, max_parallel=0)
    assert info.value.field == "max_parallel"
    with pytest.raises(NcclRunnerError) as info:
        run_groups({"a": ["true"]})
    assert info.value.field == "specs.a"
    with pytest.raises(NcclRunnerError) as info:
        Command("true")
    assert info.value.field == "argv"


def test_environment_reaches_the_process_and_mpi_specs_convert():
    out = run_one(Command(["sh", "-c", "echo $DSX_VALUE"], env={"DSX_VALUE": "hello world"}))
    assert out.stdout == "hello world\n"
    command = _spec(launcher_env={"OMPI_MCA_plm_rsh_args": "-F /tmp/cfg"}, timeout_s=12).to_command()
    assert command.timeout_s == 12.0 and command.env == {"OMPI_MCA_plm_rsh_args": "-F /tmp/cfg"}
    assert command.argv[0] == "mpirun"
