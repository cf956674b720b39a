# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The network-namespace fabric: 8 SSH-reachable hosts, MPI across them with the nccl-tests CPU stand-in,
slowed links, timeouts and unreachable hosts (tests/harness/netns_fabric.py, plugins/module_utils/certify/nccl_runner.py)."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import parse_nccl_output
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_runner import MpiLaunch, NcclTestArgs, run_groups
from ansible_collections.dsxos.cluster.tests.harness.netns_fabric import (
    STATE_DIR, NetnsFabric, cleanup_leftovers, list_links, list_namespaces)
from ansible_collections.dsxos.cluster.tests.harness.netns_fabric_fixture import (  # noqa: F401  pylint: disable=unused-import
    nccl_standin_dir, netns_fabric, netns_fabric_factory)

#: Small sweep: the fabric runs 8 MPI processes on the CI machine's few cores.
SWEEP = NcclTestArgs(min_bytes="1M", max_bytes="4M", step_factor=2, iters=3, warmup=1, check=1)
#: Shorter still for groups behind a slowed link (200 Mbit/s moves 2 MiB in about 0.1 s).
SHORT = NcclTestArgs(min_bytes="1M", max_bytes="2M", step_factor=2, iters=3, warmup=1, check=1)

PING = """
- name: Reach every fabric host
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:

    - name: Host name and addresses inside the namespace
      ansible.builtin.shell: hostname && ip -o -4 addr show
      changed_when: false
"""


def _launch(fabric, binary_dir, hosts, collective="all_reduce", args=SWEEP, env=None, timeout_s=120):
    return MpiLaunch(binary_dir=str(binary_dir), collective=collective, hosts=[fabric.host(h).address for h in hosts],
                     args=args, env=dict(env or {}), launcher_env=fabric.mpirun_env(), allow_run_as_root=True,
                     timeout_s=timeout_s)


def _standin_pids(fabric, binary_dir):
    """Stand-in processes still running in any namespace of the fabric."""
    found = []
    real = {os.path.realpath(os.path.join(binary_dir, name)) for name in os.listdir(binary_dir)}
    for member in fabric.members:
        proc = subprocess.run(["ip", "netns", "pids", member.namespace], capture_output=True, text=True, check=False)
        for pid in proc.stdout.split():
            try:
                if os.path.realpath("/proc/%s/exe" % pid) in real:
                    found.append(int(pid))
            except OSError:
                continue
    return found


def test_every_host_answers_ansible_over_ssh(ansible_run, netns_fabric):  # pylint: disable=redefined-outer-name
    assert len(netns_fabric.members) == 8
    result = ansible_run(PING, inventory=netns_fabric.inventory_path, extra_args=["-f", "8"])
    assert sorted(result.stats) == sorted(netns_fabric.names)
    for member in netns_fabric.members:
        assert result.task("Ping", member.name)["result"]["ping"] == "pong"
        name, addresses = result.task("Host name and addresses inside the namespace", member.name)["result"]["stdout"].split("\n", 1)
        assert name == member.name
        assert "inet %s/24" % member.address in addresses
        assert addresses.count(" inet ") == 2, addresses  # loopback and the veth, nothing else
        assert result.stats[member.name]["failures"] == 0 and result.stats[member.name]["unreachable"] == 0


def test_mpirun_of_the_standin_across_eight_hosts_parses_ok(netns_fabric, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    launch = _launch(netns_fabric, nccl_standin_dir, netns_fabric.names)
    out = run_groups({"all8": launch})["all8"]
    assert out.ok, out.stdout + out.stderr
    result = parse_nccl_output(out.stdout, collective="all_reduce")
    assert result.ok, result.reasons
    assert result.ranks == 8 and result.hosts == netns_fabric.names
    assert [row.size for row in result.rows] == [1 << 20, 2 << 20, 4 << 20]
    assert all(row.oop_wrong == 0 and row.ip_wrong == 0 for row in result.rows), result.rows
    assert result.large_message_busbw > 0


def test_a_slowed_link_lowers_the_busbw_of_its_group_only(netns_fabric, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    names = netns_fabric.names
    group_a, group_b = names[:4], names[4:]
    netns_fabric.slow_link(group_a[2], rate="200mbit")
    outs = run_groups({"a": _launch(netns_fabric, nccl_standin_dir, group_a, args=SHORT),
                       "b": _launch(netns_fabric, nccl_standin_dir, group_b, args=SHORT)}, max_parallel=2)
    busbw = {}
    for test_id, out in outs.items():
        assert out.ok, out.stdout + out.stderr
        parsed = parse_nccl_output(out.stdout)
        assert parsed.ok, parsed.reasons
        busbw[test_id] = parsed.large_message_busbw
    # 200 Mbit/s is 0.025 GB/s: an all-reduce ring through that link cannot exceed it by much
    assert busbw["a"] <= 0.04, busbw
    assert busbw["a"] < 0.5 * busbw["b"], busbw
    netns_fabric.clear_link(group_a[2])
    healed = run_groups({"a": _launch(netns_fabric, nccl_standin_dir, group_a, args=SHORT)})["a"]
    assert healed.ok
    assert parse_nccl_output(healed.stdout).large_message_busbw > 2 * busbw["a"]


def test_a_hanging_rank_is_killed_at_the_timeout_with_no_stragglers(netns_fabric, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    hosts = netns_fabric.names[:3]
    launch = _launch(netns_fabric, nccl_standin_dir, hosts, env={"NCCL_STANDIN_HANG": "1"}, timeout_s=4)
    start = time.monotonic()
    out = run_groups({"hang": launch}, grace_s=2.0)["hang"]
    assert out.timed_out and out.error == "timed out after 4 s"
    assert time.monotonic() - start < 10
    parsed = parse_nccl_output(out.stdout + out.stderr)
    assert not parsed.ok and parsed.reasons
    deadline = time.monotonic() + 10
    while _standin_pids(netns_fabric, nccl_standin_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _standin_pids(netns_fabric, nccl_standin_dir)


def test_an_unreachable_host_fails_the_launch_with_a_reason(netns_fabric, nccl_standin_dir):  # pylint: disable=redefined-outer-name
    launch = _launch(netns_fabric, nccl_standin_dir, netns_fabric.names[:1], timeout_s=60)
    ghost = str(netns_fabric.subnet.network_address + 250)  # in the fabric subnet, no namespace behind it
    launch.hosts = launch.hosts + [ghost]
    out = run_groups({"ghost": launch})["ghost"]
    assert not out.ok and not out.timed_out
    parsed = parse_nccl_output(out.stdout + out.stderr)
    assert not parsed.ok
    assert any(ghost in reason or "daemons" in reason for reason in parsed.reasons), parsed.reasons


def test_fabric_lifecycle_and_leftover_cleanup(tmp_path):
    fabric = NetnsFabric(hosts=2, workdir=tmp_path / "small").start()
    namespaces = [m.namespace for m in fabric.members]
    assert set(namespaces) <= set(list_namespaces())
    assert fabric.bridge in list_links()
    assert fabric.ssh("dsx-h2", "hostname").stdout.strip() == "dsx-h2"
    # a host of its own: the remote login shell reads the host's start-up files, never the controller user's
    # (a stale pyenv rehash lock in root's ~/.bashrc once held every remote command for 60 s)
    bashrc = Path(os.path.expanduser("~root"), ".bashrc")
    own = tmp_path / "small" / "hosts" / "dsx-h2" / "shell-startup"
    own.write_text("echo dsx-h2-startup-file >&2\n", encoding="utf-8")
    login = fabric.ssh("dsx-h2", "echo $HOME; cat ~/.bashrc 2>/dev/null || true")
    assert login.returncode == 0, login.stderr
    assert login.stdout.splitlines()[0] == str(bashrc.parent)  # HOME as on a real host
    if bashrc.exists():  # covered inside the host only: the controller still sees its own file
        assert "dsx-h2-startup-file" in login.stderr and "dsx-h2-startup-file" in login.stdout
        assert "dsx-h2-startup-file" not in bashrc.read_text(encoding="utf-8")
    else:  # nothing to cover, nothing read
        assert "dsx-h2-startup-file" not in login.stderr + login.stdout
    # host to host over the bridge: ssh from inside dsx-h1's namespace to dsx-h2
    hop = fabric.run_in("dsx-h1", ["ssh", *fabric.ssh_common_args(), fabric.host("dsx-h2").address, "hostname"])
    assert hop.returncode == 0 and hop.stdout.strip() == "dsx-h2", hop.stderr
    # pretend the owner died: its fabric is a leftover that the next start removes
    dead = subprocess.Popen(["true"])  # pylint: disable=consider-using-with
    dead.wait()
    state = STATE_DIR / ("%s.json" % fabric.prefix)
    state.write_text(state.read_text(encoding="utf-8").replace('"owner_pid": %d' % os.getpid(), '"owner_pid": %d' % dead.pid),
                     encoding="utf-8")
    sshd = [m.sshd_pid for m in fabric.members]
    assert fabric.prefix in cleanup_leftovers()
    assert not set(namespaces) & set(list_namespaces())
    assert not [link for link in list_links() if link.startswith(fabric.prefix)]
    assert not state.exists()
    for pid in sshd:
        assert not Path("/proc/%d/cmdline" % pid).exists() or Path("/proc/%d/stat" % pid).read_text().split()[2] == "Z"
    fabric.stop()  # idempotent after the cleanup
