# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""certify_nccl: the adaptive loop driven by a test-only runner backed by the fabric simulator."""
from __future__ import annotations

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_rounds import (
    CertifyError, RunOutput, certify_nccl, nodes_from_params, validate_config)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_thresholds import ThresholdConfigError
from ansible_collections.dsxos.cluster.tests.harness.fabric_sim import FabricSimulator

RACK = "topology.kubernetes.io/rack"
NO_FLOORS = {"use_builtin_floors": False}
GARBAGE = (bytes(range(256)) * 12).decode("latin-1")  # a log full of control characters


class SimRunner:
    """Runner backed by the fabric simulator; ``hang`` nodes time out, ``garbage`` nodes print noise."""

    def __init__(self, sim, hang=(), garbage=(), crash=False):
        self.sim = sim
        self.hang = set(hang)
        self.garbage = set(garbage)
        self.crash = crash
        self.calls = []

    def run_tests(self, tests, collective):
        self.calls.append(([t.id for t in tests], collective))
        if self.crash:
            raise RuntimeError("ssh agent went away")
        out = {}
        for test in tests:
            nodes = list(test.nodes)
            if self.hang & set(nodes):
                out[test.id] = RunOutput(rc=-9, stdout="# nccl-tests version 2.13.10\n", duration_s=30.0, timed_out=True)
            elif self.garbage & set(nodes):
                out[test.id] = RunOutput(rc=0, stdout=GARBAGE, duration_s=1.0)
            else:
                out[test.id] = RunOutput(rc=0, stdout=self.sim.run_group(nodes, collective), duration_s=2.0)
        return out


def cluster(count=32, per_rack=8, **sim_kwargs):
    names = ["gpu%02d" % i for i in range(1, count + 1)]
    topo = {n: "rack%d" % (i // per_rack) for i, n in enumerate(names)}
    sim = FabricSimulator(names, topology=topo, **sim_kwargs)
    nodes = nodes_from_params([{"name": n, "labels": {RACK: topo[n]}} for n in names])
    return names, sim, nodes


def test_slow_node_is_found_with_a_bandwidth_reason_and_the_rest_pass():
    names, sim, nodes = cluster(degraded_nodes={"gpu13": 0.55}, seed=7)
    messages = []
    result = certify_nccl(nodes, validate_config({}), SimRunner(sim), progress=lambda msg, info: messages.append((msg, info)))
    data = result.to_dict()
    assert data["result"] == "FAILED"
    assert data["faulty_nodes"] == ["gpu13"]
    assert sorted(data["healthy_nodes"]) == sorted(n for n in names if n != "gpu13")
    node = data["nodes"]["gpu13"]
    assert "busbw" in node["reason"] and "GB/s" in node["reason"]
    assert node["failed_collectives"] == ["all_reduce"]
    assert node["busbw"]["all_reduce"] < 0.7 * data["bandwidth"]["all_reduce"]["fleet"]["multi-node"]["median"]
    assert data["rounds"] <= 6 and data["rounds"] == len(data["durations"]["rounds"])
    assert any(g["nodes"] and "gpu13" in g["nodes"] for g in data["failed_groups"])
    assert messages[0][0] == "round 1: 4 groups running, suspects so far: []"
    assert any("gpu13" in msg for msg, _info in messages if msg.startswith("round %d:" % data["rounds"]))
    assert all(info["phase"] in ("start", "done") for _msg, info in messages)
    sizes = data["bandwidth"]["all_reduce"]["bandwidth_by_size"]
    assert list(sizes)[0] == str(1 << 20) and sizes[str(1 << 33)] > sizes[str(1 << 20)]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_healthy_cluster_passes_in_two_rounds_without_false_positives(seed):
    names, sim, nodes = cluster(seed=seed)
    data = certify_nccl(nodes, validate_config({"collectives": ["allreduce", "all_gather_perf"]}), SimRunner(sim)).to_dict()
    assert data["result"] == "PASSED", data["failed_groups"]
    assert data["collectives"] == ["all_reduce", "all_gather"]
    assert data["rounds"] == 2 and data["faulty_nodes"] == [] and data["failed_groups"] == []
    assert set(data["healthy_nodes"]) == set(names)
    for node in names:
        assert 340 < data["nodes"][node]["busbw"]["all_gather"] < 380


def test_hanging_test_is_a_timeout_failure_with_its_reason():
    _names, sim, nodes = cluster(count=16)
    data = certify_nccl(nodes, validate_config({}), SimRunner(sim, hang={"gpu05"})).to_dict()
    assert data["faulty_nodes"] == ["gpu05"]
    assert "timed out after 30 s" in data["nodes"]["gpu05"]["reason"]
    timed = [t for t in data["tests"] if t["timed_out"]]
    assert timed and all("gpu05" in t["nodes"] for t in timed)


def test_garbage_log_gives_a_reason_not_a_traceback():
    _names, sim, nodes = cluster(count=16)
    data = certify_nccl(nodes, validate_config({}), SimRunner(sim, garbage={"gpu11"})).to_dict()
    assert data["faulty_nodes"] == ["gpu11"]
    assert "log is binary or garbage" in data["nodes"]["gpu11"]["reason"]


def test_runner_crash_and_missing_results_are_reasons():
    _names, sim, nodes = cluster(count=8)
    data = certify_nccl(nodes, validate_config({"scale": "per-group"}), SimRunner(sim, crash=True)).to_dict()
    assert data["result"] == "FAILED" and data["rounds"] == 1
    assert all("runner error: RuntimeError: ssh agent went away" in " ".join(g["reasons"]) for g in data["failed_groups"])

    class Silent:
        def run_tests(self, tests, collective):  # pylint: disable=unused-argument
            return {}

    data = certify_nccl(nodes, validate_config({"scale": "per-group"}), Silent()).to_dict()
    assert "the runner returned no result for this test" in data["failed_groups"][0]["reasons"][0]


def test_unreachable_and_cordoned_nodes_are_excluded_with_their_reason():
    names, sim, _nodes = cluster(count=8)
    entries = [{"name": n, "labels": {RACK: "rack0"}} for n in names]
    entries[2]["reachable"] = False
    entries[3]["cordoned"] = True
    entries[4]["exclude_reason"] = "unreachable: ssh timeout"
    data = certify_nccl(nodes_from_params(entries), validate_config({}), SimRunner(sim)).to_dict()
    assert data["result"] == "INCOMPLETE"
    assert data["excluded_nodes"] == ["gpu03", "gpu04", "gpu05"]
    assert data["nodes"]["gpu03"]["reason"] == "unreachable"
    assert data["nodes"]["gpu04"]["reason"].startswith("cordoned")
    assert data["nodes"]["gpu05"]["reason"] == "unreachable: ssh timeout"
    assert all(not {"gpu03", "gpu04", "gpu05"} & set(t["nodes"]) for t in data["tests"])


def test_small_fleet_without_floors_still_finds_the_slow_node():
    """8 nodes, no topology, no floor for the accelerator: 3 screening groups, compared with the best."""
    names = ["node%d" % i for i in range(1, 9)]
    sim = FabricSimulator(names, degraded_nodes={"node6": 0.5}, seed=11)
    data = certify_nccl(nodes_from_params(names), validate_config({"thresholds": NO_FLOORS}), SimRunner(sim)).to_dict()
    assert data["faulty_nodes"] == ["node6"]
    assert data["grouping"]["strategy"] == "sqrt"
    first = [t for t in data["tests"] if t["id"].startswith("r1-") and "node6" in t["nodes"]][0]
    assert "best result" in " ".join(first["reasons"])


def test_faulty_link_between_racks_is_reported():
    _names, sim, nodes = cluster(count=32, link_faults={("rack1", "rack2"): 0.4}, seed=5)
    data = certify_nccl(nodes, validate_config({}), SimRunner(sim)).to_dict()
    assert data["result"] == "FAILED" and data["faulty_nodes"] == []
    faulty = [link for link in data["link_faults"] if link["status"] == "faulty"]
    assert [link["domains"] for link in faulty] == [["rack1", "rack2"]]
    assert faulty[0]["reasons"] and "busbw" in faulty[0]["reasons"][0]


def test_full_scale_passes_in_one_test_and_diagnoses_on_failure():
    _names, sim, nodes = cluster(count=16)
    data = certify_nccl(nodes, validate_config({"scale": "full"}), SimRunner(sim)).to_dict()
    assert data["result"] == "PASSED" and data["test_count"] == 1 and data["tests"][0]["id"] == "full-001"
    _names, sim, nodes = cluster(count=16, dead_nodes=["gpu09"])
    data = certify_nccl(nodes, validate_config({"scale": "full"}), SimRunner(sim)).to_dict()
    assert data["tests"][0]["id"] == "full-001" and not data["tests"][0]["passed"]
    assert data["faulty_nodes"] == ["gpu09"]
    data = certify_nccl(nodes, validate_config({"scale": "full", "diagnose_on_failure": False}), SimRunner(sim)).to_dict()
    assert data["result"] == "FAILED" and data["test_count"] == 1 and len(data["inconclusive_nodes"]) == 16


def test_per_group_scale_stops_after_screening():
    _names, sim, nodes = cluster(count=16, degraded_nodes={"gpu02": 0.5})
    data = certify_nccl(nodes, validate_config({"scale": "per-group"}), SimRunner(sim)).to_dict()
    assert data["rounds"] == 1 and data["result"] == "FAILED"
    assert data["inconclusive_nodes"] == ["gpu%02d" % i for i in range(1, 9)]
    assert "r1-screen-001" in data["nodes"]["gpu02"]["reason"]
    assert data["nodes"]["gpu16"]["status"] == "healthy"


def test_floor_from_user_thresholds_and_accelerator_override():
    _names, sim, nodes = cluster(count=16)
    config = validate_config({"accelerator": "H100-SXM", "thresholds": {"floors": {"h100-sxm": {"multi-node": {"all_reduce": 400}}}}})
    data = certify_nccl(nodes, config, SimRunner(sim)).to_dict()
    # every test misses the floor: no healthy partner exists, so nothing can be isolated or certified
    assert data["result"] == "INCOMPLETE" and data["accelerator"] == "h100-sxm"
    assert data["healthy_nodes"] == [] and len(data["inconclusive_nodes"]) == 16
    assert "below the floor 400.00 GB/s" in data["failed_groups"][0]["reasons"][0]
    assert data["bandwidth"]["all_reduce"]["threshold"]["floor"]["floor"] == 400.0


@pytest.mark.parametrize("params, field", [
    ({"collectives": ["allsum"]}, "collectives[0]"),
    ({"collectives": []}, "collectives"),
    ({"scale": "huge"}, "scale"),
    ({"isolation": {"confirmations": 0}}, "isolation.confirmations"),
    ({"isolation": {"bogus": 1}}, "isolation.bogus"),
    ({"isolation": {"grouping": {"min_group_size": 0}}}, "isolation.min_group_size"),
    ({"large_message_bytes": -1}, "large_message_bytes"),
])
def test_bad_config_names_the_field(params, field):
    with pytest.raises(CertifyError) as err:
        validate_config(params)
    assert err.value.field == field and "field %s" % field in str(err.value)


def test_malformed_thresholds_and_nodes_are_refused():
    with pytest.raises(ThresholdConfigError, match="relative.fraction"):
        validate_config({"thresholds": {"relative": {"fraction": 1.5}}})
    with pytest.raises(CertifyError, match="empty target"):
        nodes_from_params([])
    with pytest.raises(CertifyError, match="duplicate node name"):
        nodes_from_params(["a", "a"])
    with pytest.raises(CertifyError, match=r"nodes\[0\].colour"):
        nodes_from_params([{"name": "a", "colour": "red"}])
    with pytest.raises(CertifyError, match="empty target"):
        certify_nccl([], validate_config({}), SimRunner(None))


def test_hosts_runner_builds_one_mpirun_launch_per_test_with_the_node_addresses():
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_runner  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_hosts import (  # pylint: disable=import-outside-toplevel
        HostsRunner, nccl_spec_factory, validate_hosts_launch)

    names, sim, nodes = cluster(count=8)
    addresses = {n: "10.9.0.%d" % (i + 1) for i, n in enumerate(names)}
    by_address = {a: n for n, a in addresses.items()}
    seen = {}

    def fake_run_groups(specs, max_parallel):
        seen["max_parallel"] = max_parallel
        out = {}
        for test_id, spec in specs.items():
            argv = nccl_runner.build_mpirun_command(spec)
            seen[test_id] = argv
            out[test_id] = nccl_runner.RunOutput(rc=0, stdout=sim.run_group([by_address[h] for h in spec.hosts], spec.collective),
                                                 stderr="", duration_s=1.0)
        return out

    launch = {"binary_dir": "/opt/nccl-tests", "slots_per_host": 8, "args": {"min_bytes": "1M", "max_bytes": "8G"},
              "allow_run_as_root": True, "timeout_s": 120}
    runner = HostsRunner(addresses, launch, max_parallel=2, run_groups=fake_run_groups,
                         spec_factory=nccl_spec_factory(nccl_runner))
    data = certify_nccl(nodes, validate_config({"collectives": ["all_gather"]}), runner).to_dict()
    assert data["result"] == "PASSED" and seen["max_parallel"] == 2
    argv = seen["r1-screen-001"]
    assert argv[0] == "mpirun" and "/opt/nccl-tests/all_gather_perf" in argv
    assert any("10.9.0.1" in arg for arg in argv), argv
    with pytest.raises(CertifyError, match="mpirun.binary_dir"):
        validate_hosts_launch({}, ["all_reduce"])
    with pytest.raises(CertifyError, match="mpirun.args.colour"):
        validate_hosts_launch({"binary_dir": "/x", "args": {"colour": 1}}, ["all_reduce"])


def _fake_mpirun(sim, by_address, seen):
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_runner  # pylint: disable=import-outside-toplevel

    def run_groups(specs, max_parallel):
        del max_parallel
        out = {}
        for test_id, spec in specs.items():
            seen.append(nccl_runner.build_mpirun_command(spec))
            out[test_id] = nccl_runner.RunOutput(rc=0, stdout=sim.run_group([by_address[h] for h in spec.hosts], spec.collective),
                                                 stderr="", duration_s=1.0)
        return out
    return run_groups


@pytest.mark.parametrize("bad_name,bad_address", [("$(id)", None), ("gpu-x;reboot", None), ("ok-name", "10.0.0.9 -oProxyCommand=id"),
                                                  ("`id`", "10.9.0.99"), ("-oProxyCommand=x", None)])
def test_one_invalid_host_is_excluded_on_its_own_and_the_others_are_certified(bad_name, bad_address):
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_runner  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_hosts import (  # pylint: disable=import-outside-toplevel
        HostsRunner, host_problem, nccl_spec_factory, refuse_invalid_hosts)

    names, sim, _nodes = cluster(count=8)
    addresses = {n: "10.9.0.%d" % (i + 1) for i, n in enumerate(names)}
    entries = [{"name": n, "address": addresses[n]} for n in names] + [{"name": bad_name, "address": bad_address}]
    nodes = refuse_invalid_hosts(nodes_from_params(entries))
    reason = host_problem(bad_name, bad_address)
    assert reason and reason.startswith("refused:") and "never contacted" in reason
    assert [n.exclude_reason for n in nodes if n.name == bad_name] == [reason]
    assert all(n.exclude_reason is None for n in nodes if n.name != bad_name)
    seen = []
    runner = HostsRunner({n.name: n.address for n in nodes}, {"binary_dir": "/opt/nccl-tests", "timeout_s": 60},
                         run_groups=_fake_mpirun(sim, {a: n for n, a in addresses.items()}, seen), spec_factory=nccl_spec_factory(nccl_runner))
    data = certify_nccl(nodes, validate_config({"thresholds": NO_FLOORS}), runner).to_dict()
    assert data["nodes"][bad_name]["status"] == "excluded" and data["nodes"][bad_name]["reason"] == reason
    assert data["healthy_nodes"] == names and data["result"] == "INCOMPLETE"
    assert seen and not any(bad_name in " ".join(argv) or (bad_address and bad_address in " ".join(argv)) for argv in seen)


def test_hosts_runner_fails_only_the_test_holding_an_invalid_host():
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_runner  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import GroupTest  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_hosts import (  # pylint: disable=import-outside-toplevel
        HostsRunner, nccl_spec_factory)

    names, sim, _nodes = cluster(count=4)
    addresses = {n: n for n in names}
    addresses["$(id)"] = None
    seen = []
    runner = HostsRunner(addresses, {"binary_dir": "/opt/nccl-tests", "timeout_s": 60},
                         run_groups=_fake_mpirun(sim, {n: n for n in names}, seen), spec_factory=nccl_spec_factory(nccl_runner))
    tests = [GroupTest(id="good", nodes=tuple(names[:2]), purpose="screen"), GroupTest(id="bad", nodes=(names[2], "$(id)"), purpose="screen")]
    out = runner.run_tests(tests, "all_reduce")
    assert out["good"].rc == 0 and "busbw" in out["good"].stdout
    assert out["bad"].rc == -1 and "invalid host name '$(id)'" in out["bad"].stderr
    assert len(seen) == 1 and "$(id)" not in " ".join(seen[0])


def test_validate_only_lists_the_refused_hosts():
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import run_certify_nccl  # pylint: disable=import-outside-toplevel

    nodes = [{"name": "gpu-1", "address": "10.0.0.1"}, {"name": "$(id)", "address": "$(id)"},
             {"name": "gpu_2"}, {"name": "gpu-3", "address": "gpu-3.example.com"}]
    out = run_certify_nccl({"validate_only": True, "runner": "hosts", "nodes": nodes, "mpirun": {"binary_dir": "/opt/nccl-tests"}})
    assert sorted(out["refused_hosts"]) == ["$(id)", "gpu_2"]
    assert "invalid host name" in out["refused_hosts"]["$(id)"] and "mpirun host list" in out["refused_hosts"]["gpu_2"]
    # without multi-node categories (no mpirun), only names and addresses that are unsafe anywhere are refused
    assert sorted(run_certify_nccl({"validate_only": True, "runner": "hosts", "nodes": nodes})["refused_hosts"]) == ["$(id)"]


def test_address_rule_is_strict_only_for_the_mpirun_host_list():
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_hosts import host_problem  # pylint: disable=import-outside-toplevel

    assert host_problem("gpu_2", None, mpirun=False) is None  # ssh-only categories: an inventory-style name is fine
    assert "mpirun host list" in host_problem("gpu_2", None, mpirun=True)
    assert host_problem("gpu-2", "fd00::2", mpirun=False) is None and "IPv6" in host_problem("gpu-2", "fd00::2")
    for hostile in ("-oProxyCommand=id", "a b", "$(id)", "x;y", "10.0.0.1,10.0.0.2"):
        assert "invalid address" in host_problem("gpu-2", hostile, mpirun=False), hostile
    assert host_problem(None) and host_problem(42)


def test_host_names_with_a_trailing_newline_are_refused():
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_runner  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_hosts import host_problem  # pylint: disable=import-outside-toplevel

    assert host_problem("node1", None) is None
    assert "invalid host name" in host_problem("node1\n", None, mpirun=False)
    assert "invalid address" in host_problem("node1", "node1\n", mpirun=False)
    assert "invalid address" in host_problem("node1", "10.0.0.1\n", mpirun=False)
    with pytest.raises(CertifyError):
        nccl_runner.validate_host("node1\n", "address")
