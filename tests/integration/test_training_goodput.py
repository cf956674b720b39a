# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.training_goodput through real ansible-playbook runs: the real PyTorch/gloo workload with a
checkpoint, an injected interruption and a resume, on 127.0.0.1 (2 ranks) and across network-namespace hosts."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ansible_collections.dsxos.cluster.tests.harness.netns_fabric_fixture import (  # noqa: F401  pylint: disable=unused-import
    netns_fabric, netns_fabric_factory)

# pylint: disable=redefined-outer-name

PLAY = """
- name: Training goodput
  hosts: "{{ goodput_hosts | default('ranks') }}"
  gather_facts: false
  vars:
    workdir: "{{ goodput_root }}/{{ inventory_hostname }}"
  tasks:
    - name: Workdir
      ansible.builtin.file:
        path: "{{ workdir }}"
        state: directory
        mode: "0755"

    - name: Copy the workload
      ansible.builtin.copy:
        src: "{{ goodput_script }}"
        dest: "{{ workdir }}/goodput_train.py"
        mode: "0644"

    - name: Start one rank per host
      dsxos.cluster.training_goodput:
        mode: run
        script: "{{ workdir }}/goodput_train.py"
        host: "{{ inventory_hostname }}"
        rank: "{{ ansible_play_hosts.index(inventory_hostname) }}"
        world_size: "{{ ansible_play_hosts | length }}"
        master_addr: "{{ hostvars[ansible_play_hosts[0]].ansible_host | default('127.0.0.1') }}"
        master_port: "{{ master_port }}"
        workdir: "{{ workdir }}"
        steps: "{{ steps }}"
        batch_size: 16
        hidden: 32
        layers: 2
        checkpoint_every: "{{ checkpoint_every }}"
        interrupt_after: "{{ interrupt_after }}"
        comm_timeout_s: "{{ comm_timeout_s | default(30) }}"
        timeout_s: "{{ rank_timeouts[inventory_hostname] | default(timeout_s | default(120)) if rank_timeouts is defined else timeout_s | default(120) }}"
        extra_args: "{{ rank_args[inventory_hostname] | default([]) }}"
      async: 300
      poll: 0
      register: goodput_job

    - name: Wait for every rank
      ansible.builtin.async_status:
        jid: "{{ goodput_job.ansible_job_id }}"
      register: goodput_run
      until: goodput_run.finished
      retries: 600
      delay: 0.5

    - name: Goodput
      dsxos.cluster.training_goodput:
        mode: evaluate
        runs: "{{ ansible_play_hosts_all | map('extract', hostvars) | map(attribute='goodput_run', default={}) | list }}"
        expected_hosts: "{{ ansible_play_hosts_all }}"
        world_size: "{{ ansible_play_hosts | length }}"
        min_goodput: 0.05
      run_once: true
      delegate_to: localhost
"""


def _script(installed_collection: Path) -> str:
    path = installed_collection / "ansible_collections" / "dsxos" / "cluster" / "roles" / "certify" / "files" / "goodput_train.py"
    assert path.is_file(), "the built collection does not ship %s" % path
    return str(path)


def _local_inventory(ghost: bool = False) -> str:
    py = sys.executable
    lines = ["[ranks]"]
    lines += ["rank%d ansible_connection=local ansible_python_interpreter=%s" % (i, py) for i in range(2)]
    if ghost:
        # nothing listens on 127.0.0.1:9: ssh is refused at once and the host is unreachable
        lines.append("ghost ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=9 ansible_ssh_common_args='-o ConnectTimeout=3 "
                     "-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'")
    return "\n".join(lines) + "\n"


def _free_port_pair() -> int:
    import socket  # pylint: disable=import-outside-toplevel
    for _try in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port >= 65000:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free pair of TCP ports on 127.0.0.1")


def _check_consistent(report, steps, interrupt_after, checkpoint_every, ranks, batch=16):
    assert report["steps_completed"] == steps
    assert report["steps_recomputed"] == interrupt_after - (interrupt_after // checkpoint_every) * checkpoint_every
    assert report["samples"] == steps * batch * ranks
    assert report["attempts"] == 2 and report["interruptions"] == 1
    assert report["checkpoints"] == (steps - 1) // checkpoint_every
    assert report["t_resume"] > 0 and report["t_checkpoint"] > 0 and report["t_save"] > 0
    expected = (report["t_total"] - report["t_checkpoint"] - report["t_resume"] - report["t_save"]) / (report["t_total"] - report["t_resume"])
    assert report["goodput"] == pytest.approx(expected, abs=1e-5)
    assert 0 < report["goodput"] <= 1
    assert report["gpu_seconds"] == pytest.approx(ranks * report["t_step"], rel=1e-4)
    assert len(report["ranks"]) == ranks
    for rank in report["ranks"]:
        assert rank["complete"] and rank["attempts"] == 2 and rank["errors"] == []


def test_two_ranks_on_loopback_with_interruption_and_an_unreachable_host(ansible_run, installed_collection, tmp_path):
    result = ansible_run(PLAY, inventory=_local_inventory(ghost=True), expect_rc=4, extra_vars={
        "goodput_root": str(tmp_path / "hosts"), "goodput_script": _script(installed_collection), "master_port": _free_port_pair(),
        "steps": 24, "checkpoint_every": 5, "interrupt_after": 13,
    })
    assert result.stats["ghost"]["unreachable"] == 1
    runs = {record["host"]: record["result"] for record in result.results("Wait for every rank")}
    assert sorted(runs) == ["rank0", "rank1"]
    for host, run in runs.items():
        assert [a["rc"] for a in run["attempt_results"]] == [75, 0], run
        assert run["workload_failed"] is False and run["rank"] == int(host[-1])
    ckpt = tmp_path / "hosts" / "rank0" / "checkpoints"
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "checkpoint-00000005.pt", "checkpoint-00000010.pt", "checkpoint-00000015.pt", "checkpoint-00000020.pt", "final.pt"]
    report = result.task("Goodput")["result"]
    assert report["passed"] is False  # the unreachable host is a reason ...
    assert report["reasons"] == ["host ghost excluded: unreachable or did not run the workload"]
    _check_consistent(report, steps=24, interrupt_after=13, checkpoint_every=5, ranks=2)  # ... and the two ranks still count
    assert report["world_size"] == 2 and report["profile"] == "dsxos"


def test_hung_rank_is_killed_at_its_timeout_and_reported(ansible_run, installed_collection, tmp_path):
    result = ansible_run(PLAY, inventory=_local_inventory(), extra_vars={
        "goodput_root": str(tmp_path / "hosts"), "goodput_script": _script(installed_collection), "master_port": _free_port_pair(),
        # Each rank's start (torch import, gloo rendezvous) can take 20 s and more on a loaded 2-core machine: the hung
        # rank's timeout leaves room to reach step 4 first, and the peer, which must end by its collective timing out
        # (not by being killed), gets a long one.
        "steps": 12, "checkpoint_every": 5, "interrupt_after": 0, "comm_timeout_s": 3, "timeout_s": 180,
        "rank_timeouts": {"rank1": 60}, "rank_args": {"rank1": ["--hang-at-step", "4"]},
    })
    hung = result.task("Wait for every rank", host="rank1")["result"]
    assert hung["timed_out"] is True and hung["workload_failed"] is True
    assert "killed at its timeout of 60.0 s" in hung["reason"]
    peer = result.task("Wait for every rank", host="rank0")["result"]
    assert peer["timed_out"] is False and peer["workload_failed"] is True  # its collective timed out waiting for rank 1
    report = result.task("Goodput")["result"]
    assert report["passed"] is False
    reasons = " | ".join(report["reasons"])
    assert "rank 1 (host rank1): killed at its timeout of 60.0 s" in reasons
    assert "fault injection: rank 1 hangs at step 4" in reasons
    assert "rank 0 (host rank0): the workload reported an error" in reasons
    assert report["steps_completed"] == 3


EVALUATE_ONLY = """
- name: Evaluate given logs
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Goodput
      dsxos.cluster.training_goodput:
        mode: evaluate
        logs: "{{ logs }}"
        profile: "{{ profile }}"
        world_size: "{{ world_size }}"
        fail_on: "{{ fail_on | default('never') }}"
"""


def test_bad_profile_and_garbage_log_fail_with_a_reason(ansible_run, tmp_path):
    bad = ansible_run(EVALUATE_ONLY, expect_rc=2, extra_vars={
        "logs": [{"text": "x", "rank": 0}], "profile": {"events": {"step": "step (?P<step>\\d+"}}, "world_size": 1})
    msg = bad.task("Goodput")["msg"]
    assert "invalid regular expression" in msg and "profile.events.step" in msg

    garbage = tmp_path / "rank0.log"
    garbage.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00 not a log at all \xff\xfe\n" * 50)
    report = ansible_run(EVALUATE_ONLY, expect_rc=2, extra_vars={
        "logs": [{"path": str(garbage), "rank": 0, "host": "h0"}, {"path": str(tmp_path / "missing.log"), "rank": 1, "host": "h1"}],
        "profile": "dsxos", "world_size": 2, "fail_on": "fail"}).task("Goodput")
    assert report["status"] == "failed" and "Traceback" not in report["msg"]
    reasons = report["result"]["reasons"]
    assert any(r.startswith("rank 1 (host h1) excluded: cannot read") and "missing.log" in r for r in reasons)
    assert any(r.startswith("rank 0 (host h0): no training step found") for r in reasons)


def test_three_fabric_hosts_over_ssh(ansible_run, installed_collection, netns_fabric, tmp_path):
    hosts = netns_fabric.names[:3]
    result = ansible_run(PLAY, inventory=netns_fabric.inventory_path, extra_vars={
        "goodput_hosts": ":".join(hosts), "goodput_root": str(tmp_path / "hosts"), "goodput_script": _script(installed_collection),
        "master_port": 29500, "steps": 15, "checkpoint_every": 4, "interrupt_after": 10,
    })
    report = result.task("Goodput")["result"]
    assert report["passed"] is True, report["reasons"]
    _check_consistent(report, steps=15, interrupt_after=10, checkpoint_every=4, ranks=3)
    assert [r["host"] for r in report["ranks"]] == hosts
    # each rank ran inside its own namespace and met the others at the fabric address of the first host
    for host in hosts:
        run = result.task("Wait for every rank", host=host)["result"]
        assert run["log"].count("master=%s:29500" % netns_fabric.host(hosts[0]).address) == 1
