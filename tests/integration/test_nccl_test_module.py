# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.nccl_test through real ansible-playbook runs, with the nccl-tests CPU stand-in: on every host of the
network-namespace fabric, and on localhost for every collective, timeouts, corruption, garbage and bad input."""
from __future__ import annotations

import os
import time
import stat

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import parse_nccl_output
from ansible_collections.dsxos.cluster.tests.harness.netns_fabric_fixture import (  # noqa: F401  pylint: disable=unused-import
    nccl_standin_dir, netns_fabric, netns_fabric_factory)

NCCL_TASK = """
- name: Intra-node nccl-tests
  hosts: {hosts}
  gather_facts: false
  tasks:
    - name: Run the test
      dsxos.cluster.nccl_test:
        binary_dir: "{{{{ binary_dir }}}}"
        collective: "{{{{ collective | default('all_reduce') }}}}"
        gpus: "{{{{ gpus | default(2) }}}}"
        min_bytes: "{{{{ min_bytes | default('1M') }}}}"
        max_bytes: "{{{{ max_bytes | default('2M') }}}}"
        iters: 3
        warmup: 1
        env: "{{{{ env | default({{}}) }}}}"
        timeout_s: "{{{{ timeout_s | default(60) }}}}"
        mpirun: "{{{{ mpirun | default({{'enabled': true, 'allow_run_as_root': true}}) }}}}"
        fail_on_error: "{{{{ fail_on_error | default(false) }}}}"
        large_message_bytes: 1048576
      register: nccl
"""


def _playbook(hosts="localhost"):
    return NCCL_TASK.format(hosts=hosts)


def _standin_processes(binary_dir):
    real = {os.path.realpath(os.path.join(binary_dir, name)) for name in os.listdir(binary_dir)}
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.path.realpath("/proc/%s/exe" % pid) in real:
                    found.append(int(pid))
            except OSError:
                continue
    return found


def _fake_binary(directory, body):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "all_reduce_perf"
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_module_on_every_fabric_host(ansible_run, netns_fabric, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    result = ansible_run(_playbook("gpu_nodes"), inventory=netns_fabric.inventory_path,
                         extra_vars={"binary_dir": str(nccl_standin_dir)}, extra_args=["-f", "8"])
    for member in netns_fabric.members:
        record = result.task("Run the test", member.name)
        ret = record["result"]
        assert record["status"] == "ok" and ret["changed"] is False
        assert ret["ok"] is True, ret["reasons"]
        assert ret["host"] == member.name and ret["result"]["hosts"] == [member.name]
        assert ret["ranks"] == 2 and ret["collective"] == "all_reduce"
        assert ret["busbw"] > 0 and ret["exit_status"] == 0 and ret["timed_out"] is False
        assert ret["command"][:3] == ["mpirun", "-np", "2"]
        assert "# Avg bus bandwidth" in ret["log_tail"]


def test_every_collective_of_the_standin_parses_ok_on_localhost(ansible_run, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    playbook = _playbook().replace("      register: nccl", "      loop: \"{{ collectives }}\"\n      register: nccl")
    playbook = playbook.replace("collective | default('all_reduce')", "item")
    collectives = ["all_reduce", "all_gather", "alltoall", "reduce_scatter", "broadcast", "sendrecv"]
    result = ansible_run(playbook, extra_vars={"binary_dir": str(nccl_standin_dir), "collectives": collectives, "gpus": 3})
    records = result.results("Run the test")
    assert [r["result"]["collective"] for r in records] == collectives
    for record in records:
        ret = record["result"]
        assert ret["ok"] is True, (ret["collective"], ret["reasons"], ret["log_tail"])
        assert ret["result"]["ranks"] == 3 and ret["result"]["out_of_bounds"] == 0
        assert ret["result"]["warnings"] == []
        # the module's parse agrees with a fresh parse of the same log
        again = parse_nccl_output(ret["log_tail"], collective=ret["collective"], large_message_bytes=1 << 20)
        assert again.ok and again.large_message_busbw == ret["busbw"]


def test_a_hanging_test_is_killed_at_its_timeout_and_reported(ansible_run, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    result = ansible_run(_playbook(), extra_vars={"binary_dir": str(nccl_standin_dir), "timeout_s": 3,
                                                  "env": {"NCCL_STANDIN_HANG": "1"}})
    record = result.task("Run the test")
    ret = record["result"]
    assert record["status"] == "ok"
    assert ret["ok"] is False and ret["timed_out"] is True
    assert ret["reasons"][0] == "timed out after 3 s"
    assert 3 <= ret["duration_s"] < 15
    # Every rank was sent SIGKILL with its session; on a loaded machine the kernel may take a moment to take them away.
    deadline = time.monotonic() + 20
    while _standin_processes(str(nccl_standin_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _standin_processes(str(nccl_standin_dir))
    assert not left, [_cmdline(pid) for pid in left]


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return "%d: %s" % (pid, handle.read().replace(b"\0", b" ").decode("utf-8", "replace"))
    except OSError:
        return "%d: gone" % pid


def test_corrupted_results_fail_and_fail_on_error_fails_the_task(ansible_run, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    extra = {"binary_dir": str(nccl_standin_dir), "env": {"NCCL_STANDIN_CORRUPT": "1"}}
    ret = ansible_run(_playbook(), extra_vars=extra).task("Run the test")["result"]
    assert ret["ok"] is False
    assert any(r.startswith("data corruption: #wrong > 0") for r in ret["reasons"]), ret["reasons"]
    failed = ansible_run(_playbook(), extra_vars=dict(extra, fail_on_error=True), expect_rc=2).task("Run the test")
    assert failed["status"] == "failed"
    assert "nccl-tests all_reduce on" in failed["msg"] and "data corruption" in failed["msg"]


def test_garbage_output_gives_a_reason_not_a_traceback(ansible_run, tmp_path):
    fake = _fake_binary(tmp_path / "garbage", "head -c 3000 /dev/urandom; echo; echo 'Segmentation fault' >&2; exit 139")
    ret = ansible_run(_playbook(), extra_vars={"binary_dir": str(fake.parent), "mpirun": {}}).task("Run the test")["result"]
    assert ret["ok"] is False
    assert ret["reasons"][0] == "test exited with status 139"
    assert any("garbage" in r or "no nccl-tests output" in r for r in ret["reasons"]), ret["reasons"]
    assert "Traceback" not in str(ret)


def test_standin_refuses_several_gpus_per_process(ansible_run, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    ret = ansible_run(_playbook(), extra_vars={"binary_dir": str(nccl_standin_dir), "mpirun": {}, "gpus": 4}
                      ).task("Run the test")["result"]
    assert ret["command"][1:] == ["-b", "1M", "-e", "2M", "-f", "2", "-g", "4", "-n", "3", "-w", "1", "-c", "1"]
    assert ret["ok"] is False and ret["reasons"][0] == "test exited with status 2"
    assert "only -g 1 is supported" in ret["log_tail"]


def test_check_mode_runs_nothing(ansible_run, tmp_path):
    marker = tmp_path / "ran"
    fake = _fake_binary(tmp_path / "bin", "touch %s" % marker)
    ret = ansible_run(_playbook(), extra_vars={"binary_dir": str(fake.parent), "mpirun": {}}, check=True
                      ).task("Run the test")["result"]
    assert ret["ok"] is None and ret["command"][0] == str(fake)
    assert not marker.exists()


def test_bad_input_fails_naming_the_field(ansible_run, tmp_path):
    extra = {"binary_dir": str(tmp_path), "collective": "allsum"}
    failed = ansible_run(_playbook(), extra_vars=extra, expect_rc=2).task("Run the test")
    assert failed["status"] == "failed" and "unknown collective" in failed["msg"] and "field collective" in failed["msg"]
    failed = ansible_run(_playbook(), extra_vars={"binary_dir": str(tmp_path), "max_bytes": "lots"},
                         expect_rc=2).task("Run the test")
    assert "field max_bytes" in failed["msg"] and "'lots'" in failed["msg"]
    failed = ansible_run(_playbook(), extra_vars={"binary_dir": str(tmp_path), "env": {"BAD-NAME": "1"}},
                         expect_rc=2).task("Run the test")
    assert "field env.BAD-NAME" in failed["msg"]
    # a missing binary is a failed result, not a crash
    ret = ansible_run(_playbook(), extra_vars={"binary_dir": str(tmp_path / "none"), "mpirun": {}}).task("Run the test")["result"]
    assert ret["ok"] is False and "nccl-tests binary not found or not executable" in ret["reasons"][0]


def test_missing_mpirun_is_a_reason(ansible_run, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    ret = ansible_run(_playbook(), extra_vars={"binary_dir": str(nccl_standin_dir),
                                               "mpirun": {"enabled": True, "path": "/nonexistent/mpirun"}}
                      ).task("Run the test")["result"]
    assert ret["ok"] is False and ret["exit_status"] == 127
    assert ret["reasons"][0].startswith("cannot start /nonexistent/mpirun")
