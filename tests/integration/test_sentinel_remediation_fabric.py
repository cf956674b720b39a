# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The sentinel's remediation task files and its recertification, run directly (a small playbook on localhost that
includes them, as the sentinel role does) against the network-namespace fabric: a fabric host stands for a node.

* reboot: the reboot stand-in (tests/harness/reboot_standin.py) restarts THAT host's sshd and changes its boot-id
  file; ansible.builtin.reboot sees the new boot id and reconnects; the real machine is never touched;
* gpu_reset / driver_reload: stand-in nvidia-smi and modprobe scripts record their argv and the host they ran on;
  the GPU reset is refused while a listed pod is still on the node (asked from the Kubernetes emulator);
* ticket_webhook / contact_support / replace: a local HTTP server records what was posted (token header, incident);
* failure paths: ok false with a message, and the play never fails;
* recertify: recorded NVML readings and the nccl-tests CPU stand-in; a healthy host passes, the DBE host does not;
* the whole loop: the remediate playbook itself (no stub) quarantines, drains, reboots (stand-in) and recertifies two
  nodes whose hosts are fabric hosts: the healthy one returns, the DBE one stays quarantined with the report's reason.
"""
from __future__ import annotations

# pytest fixtures are parameters named like the imported fixture functions
# pylint: disable=redefined-outer-name

import json
import os
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from ansible_collections.dsxos.cluster.tests.harness import reboot_standin
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)
from ansible_collections.dsxos.cluster.tests.harness.netns_fabric_fixture import (  # noqa: F401  pylint: disable=unused-import
    nccl_standin_dir, netns_fabric, netns_fabric_factory)

NVML_FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "nvml"
GHOST = "dsx-ghost"
TOKEN = "s3cr3t-t0ken-do-not-log"


def _task_file(installed_collection: Path, name: str) -> str:
    path = installed_collection / "ansible_collections" / "dsxos" / "cluster" / "roles" / "sentinel" / "tasks" / name
    assert path.is_file(), path
    return str(path)


def _inventory(fabric, directory: Path, host_vars=None) -> Path:
    """The fabric's inventory, an unreachable host and localhost (the sentinel's controller)."""
    data = yaml.safe_load(Path(fabric.inventory_path).read_text(encoding="utf-8"))
    data["all"]["children"]["gpu_nodes"]["hosts"][GHOST] = {"ansible_host": str(fabric.subnet.network_address + 250)}
    data["all"]["hosts"] = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": fabric.python_interpreter}}
    (directory / "host_vars").mkdir(parents=True, exist_ok=True)
    for name, values in (host_vars or {}).items():
        (directory / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump(values), encoding="utf-8")
    path = directory / "hosts.yml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _playbook(cases) -> str:
    """One play on localhost: per case, include the task file with the contract's variables, then show its result."""
    tasks = []
    for index, case in enumerate(cases):
        tasks.append({"name": f"Case {index}", "ansible.builtin.include_tasks": case["file"],
                      "vars": {"sentinel_node": case["node"], "sentinel_host": case.get("host", case["node"]),
                               "sentinel_incident": case.get("incident", {"id": f"inc-{index}", "reason": "XID 79"}),
                               "sentinel_gpus": case.get("gpus", []), "sentinel_pods": case.get("pods", []),
                               **case.get("vars", {})}})
        tasks.append({"name": f"Result {index}", "ansible.builtin.debug": {"var": case.get("result", "sentinel_remediation_result")}})
        tasks.extend(case.get("after", []))
    return yaml.safe_dump([{"name": "Remediation cases", "hosts": "localhost", "gather_facts": False, "tasks": tasks}], sort_keys=False)


def _result(run, index: int, var: str = "sentinel_remediation_result") -> dict:
    value = run.task(f"Result {index}")["result"][var]
    assert isinstance(value, dict), value
    return value


def _script(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _calls(log: Path):
    """[(host, argv string)] recorded by a stand-in script."""
    if not log.exists():
        return []
    return [tuple(line.split("\t", 1)) for line in log.read_text(encoding="utf-8").splitlines() if line]


def _nvidia_smi_standin(directory: Path) -> Path:
    """nvidia-smi stand-in: records `hostname<TAB>argv`; `-r -i N` fails when <dir>/busy-N exists; `-L` lists 2 GPUs."""
    directory.mkdir(parents=True, exist_ok=True)
    return _script(directory / "nvidia-smi", f"""#!/bin/sh
printf '%s\\t%s\\n' "$(hostname)" "$*" >> {directory}/nvidia-smi.log
case "$1" in
  -r) if [ -e "{directory}/busy-$3" ]; then echo "Unable to reset GPU $3: In use by another client" >&2; exit 3; fi
      echo "GPU 00000000:1$3:00.0 was successfully reset." ;;
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-standin-0)"; echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-standin-1)" ;;
esac
""")


# ---------------------------------------------------------------------------------------------------- reboot
def test_reboot_standin_changes_the_boot_id_and_ansible_reconnects(ansible_run, installed_collection, netns_fabric, tmp_path):
    standin = reboot_standin.install(netns_fabric)
    host = netns_fabric.names[1]
    machine_boot_id = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8")
    before, sshd_before = standin.boot_id(host), standin.sshd_pid(host)
    events_before = len(standin.events(host))
    inventory = _inventory(netns_fabric, tmp_path / "inventory")
    after = [{"name": "Use the connection again", "ansible.builtin.command": {"argv": ["hostname"]},
              "delegate_to": host, "changed_when": False, "register": "sentinel_after"}]
    try:
        run = ansible_run(_playbook([{"file": _task_file(installed_collection, "remediation/reboot.yml"), "node": host,
                                      "vars": {"sentinel_reboot": standin.sentinel_reboot(host)}, "after": after}]),
                          inventory=inventory)
    finally:
        standin.sync_fabric_pids()
    result = _result(run, 0)
    new_id = standin.boot_id(host)
    assert result["ok"] is True and result["changed"] is True, result
    assert new_id != before and f"{before} -> {new_id}" in result["message"], (result, before, new_id)
    assert run.task("Use the connection again")["result"]["stdout"] == host
    events = [e["event"] for e in standin.events(host)[events_before:]]
    assert events == ["requested", "down", "boot_id", "sshd_started", "up"], events
    assert standin.sshd_pid(host) != sshd_before and netns_fabric.host(host).sshd_pid == standin.sshd_pid(host)
    assert Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8") == machine_boot_id
    assert run.stats["localhost"].get("failures", 0) == 0


def test_reboot_failures_become_results_not_play_failures(ansible_run, installed_collection, netns_fabric, tmp_path):
    standin = reboot_standin.install(netns_fabric)
    host = netns_fabric.names[2]
    before = standin.boot_id(host)
    reboot_file = _task_file(installed_collection, "remediation/reboot.yml")
    failing = dict(standin.sentinel_reboot(host), command="/bin/false")
    unchanged = dict(standin.sentinel_reboot(host), command="/bin/true", timeout_s=2)
    run = ansible_run(_playbook([
        {"file": reboot_file, "node": "gpu-ghost", "host": GHOST, "vars": {"sentinel_reboot": standin.sentinel_reboot(host)}},
        {"file": reboot_file, "node": host, "vars": {"sentinel_reboot": failing}},
        {"file": reboot_file, "node": host, "vars": {"sentinel_reboot": unchanged}},
    ]), inventory=_inventory(netns_fabric, tmp_path / "inventory"))
    ghost, refused, timed_out = _result(run, 0), _result(run, 1), _result(run, 2)
    assert ghost["ok"] is False and ghost["changed"] is False and "cannot read the boot id of dsx-ghost" in ghost["message"], ghost
    assert "unreachable" in ghost["message"], ghost
    assert refused["ok"] is False and "Reboot command failed" in refused["message"] and "failed:" in refused["message"], refused
    assert timed_out["ok"] is False and "Timed out waiting for last boot time check" in timed_out["message"], timed_out
    assert standin.boot_id(host) == before  # nothing rebooted the host
    assert run.rc == 0 and run.stats["localhost"].get("failures", 0) == 0


# ---------------------------------------------------------------------------------------------------- never the controller
def test_no_host_remediation_runs_on_the_controller(ansible_run, installed_collection, tmp_path):
    """The remediate playbook runs with connection: local. A node whose host is not an inventory host, or whose host is
    the controller, would have its GPU reset, driver unload or reboot run HERE: each is refused with the reason (the
    node then needs attention) and no command runs."""
    smi = _nvidia_smi_standin(tmp_path / "smi")
    marker = tmp_path / "ran-on-the-controller"
    would_run = str(_script(tmp_path / "would-run", f"#!/bin/sh\necho \"$*\" >> {marker}\n"))
    inventory = tmp_path / "inventory.yml"
    controller = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": controller}}}), encoding="utf-8")
    files = {"reboot": _task_file(installed_collection, "remediation/reboot.yml"),
             "gpu_reset": _task_file(installed_collection, "remediation/gpu_reset.yml"),
             "driver_reload": _task_file(installed_collection, "remediation/driver_reload.yml")}
    settings = {"sentinel_reboot": {"command": would_run, "boot_time_command": would_run, "test_command": would_run},
                "sentinel_nvidia_smi": str(smi), "sentinel_gpu_reset": {"verify_pods_gone": False},
                "sentinel_driver_reload": {"modprobe": would_run, "verify_argv": [would_run]}}
    cases = [{"file": path, "node": "gpu-7", "host": host, "gpus": ["3"], "vars": settings}
             for host in ("gpu-7", "localhost", "127.0.0.1") for path in files.values()]
    run = ansible_run(_playbook(cases), inventory=inventory)
    for index, case in enumerate(cases):
        result = _result(run, index)
        assert result["ok"] is False and result["changed"] is False, (case["file"], case["host"], result)
        assert "refusing to run it on the controller" in result["message"], result
        why = "is not an inventory host" if case["host"] != "localhost" else "is the controller (local connection)"
        assert f"the host of gpu-7, {case['host']}, {why}" in result["message"], result
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    assert not _calls(tmp_path / "smi" / "nvidia-smi.log"), "nvidia-smi ran on the controller"
    assert run.rc == 0 and run.stats["localhost"].get("failures", 0) == 0


# ---------------------------------------------------------------------------------------------------- GPU reset, driver
def test_gpu_reset_only_the_given_gpu_and_only_once_its_pods_are_gone(ansible_run, installed_collection, netns_fabric, k8s_emulator, tmp_path):
    emu = k8s_emulator
    node = emu.add_nodes(1, "h100-eks", name_prefix="gpu-")[0]
    emu.seed_pods(1, namespace="ml", nodes=[node], gpu_per_pod=1)
    pod = {"namespace": "ml", "name": "w-0-0"}
    assert emu.api.pods("ml", node=node)
    host = netns_fabric.names[3]
    tools = tmp_path / "tools"
    nvidia_smi = _nvidia_smi_standin(tools)
    (tools / "busy-5").touch()
    gpu_reset = _task_file(installed_collection, "remediation/gpu_reset.yml")
    common = {"sentinel_nvidia_smi": str(nvidia_smi),
              "sentinel_k8s_auth": {"kubeconfig": emu.kubeconfig_path, "retries": 1, "retry_backoff_s": 0.1, "request_timeout_s": 10}}
    inventory = _inventory(netns_fabric, tmp_path / "inventory")

    first = ansible_run(_playbook([
        {"file": gpu_reset, "node": node, "host": host, "gpus": ["3"], "pods": [pod], "vars": common},
        {"file": gpu_reset, "node": node, "host": host, "gpus": ["3; reboot"], "vars": common},
    ]), inventory=inventory)
    refused, invalid = _result(first, 0), _result(first, 1)
    assert refused["ok"] is False and refused["changed"] is False, refused
    assert "refusing to reset: pod(s) ml/w-0-0 still on " + node in refused["message"], refused
    assert invalid["ok"] is False and 'invalid GPU index "3; reboot"' in invalid["message"], invalid
    assert _calls(tools / "nvidia-smi.log") == [], "nvidia-smi must not run while a pod is on the GPU or for a bad index"

    emu.api.delete("v1", "Pod", "w-0-0", namespace="ml", grace_period_seconds=0)
    emu.wait_for(lambda: not emu.api.pods("ml", node=node), 20, what="the pod gone")
    second = ansible_run(_playbook([
        {"file": gpu_reset, "node": node, "host": host, "gpus": ["3"], "pods": [pod], "vars": common},
        {"file": gpu_reset, "node": node, "host": host, "gpus": ["1", "5"], "vars": common},
    ]), inventory=inventory)
    done, partial = _result(second, 0), _result(second, 1)
    assert done == {"ok": True, "changed": True, "message": f"reset GPU(s) 3 of {node} ({host})"}, done
    assert partial["ok"] is False and partial["changed"] is True, partial
    assert "GPU 5: Unable to reset GPU 5: In use by another client" in partial["message"] and "GPU 1" not in partial["message"], partial
    assert _calls(tools / "nvidia-smi.log") == [(host, "-r -i 3"), (host, "-r -i 1"), (host, "-r -i 5")]
    assert second.stats["localhost"].get("failures", 0) == 0


def test_driver_reload_unloads_loads_and_verifies(ansible_run, installed_collection, netns_fabric, tmp_path):
    host = netns_fabric.names[4]
    tools = tmp_path / "tools"
    nvidia_smi = _nvidia_smi_standin(tools)
    modprobe = _script(tools / "modprobe", f"""#!/bin/sh
printf '%s\\t%s\\n' "$(hostname)" "$*" >> {tools}/modprobe.log
if [ "$1" = "-r" ] && [ -e "{tools}/in-use" ]; then echo "modprobe: FATAL: Module nvidia is in use." >&2; exit 1; fi
""")
    reload_file = _task_file(installed_collection, "remediation/driver_reload.yml")
    settings = {"modprobe": str(modprobe), "modules": ["nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia"]}
    inventory = _inventory(netns_fabric, tmp_path / "inventory")
    run = ansible_run(_playbook([
        {"file": reload_file, "node": host, "vars": {"sentinel_driver_reload": settings, "sentinel_nvidia_smi": str(nvidia_smi)}},
        {"file": reload_file, "node": host, "vars": {"sentinel_driver_reload": dict(settings, modules=["nvidia", "$(id)"])}},
    ]), inventory=inventory)
    done, invalid = _result(run, 0), _result(run, 1)
    assert done["ok"] is True and done["changed"] is True and "2 GPU line(s) from nvidia-smi" in done["message"], done
    assert invalid["ok"] is False and "invalid sentinel_driver_reload.modules" in invalid["message"], invalid
    assert _calls(tools / "modprobe.log") == [(host, "-r nvidia_uvm nvidia_drm nvidia_modeset nvidia"),
                                              (host, "-a nvidia nvidia_modeset nvidia_drm nvidia_uvm")]
    assert _calls(tools / "nvidia-smi.log") == [(host, "-L")]

    (tools / "in-use").touch()
    busy_vars = {"sentinel_driver_reload": settings, "sentinel_nvidia_smi": str(nvidia_smi)}
    busy = ansible_run(_playbook([{"file": reload_file, "node": host, "vars": busy_vars}]), inventory=inventory)
    failed = _result(busy, 0)
    assert failed["ok"] is False and failed["changed"] is False, failed
    assert "Module nvidia is in use" in failed["message"], failed
    assert _calls(tools / "modprobe.log")[2:] == [(host, "-r nvidia_uvm nvidia_drm nvidia_modeset nvidia")], "nothing loaded after a failed unload"


# ---------------------------------------------------------------------------------------------------- webhooks, replace
class _Recorder(BaseHTTPRequestHandler):
    posts: list = []
    status = 201

    def do_POST(self):  # noqa: N802  pylint: disable=invalid-name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).posts.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body or b"{}")})
        answer = json.dumps({"id": "INC-%d" % len(type(self).posts)}).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):  # pylint: disable=arguments-differ
        return


@pytest.fixture
def webhook_server():
    handler = type("Recorder", (_Recorder,), {"posts": [], "status": 201})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, handler
    finally:
        server.shutdown()
        server.server_close()


def test_webhooks_post_the_incident_with_the_token_and_never_log_it(ansible_run, installed_collection, webhook_server, tmp_path):
    server, handler = webhook_server
    url = "http://127.0.0.1:%d/tickets" % server.server_address[1]
    incident = {"id": "inc-77", "reason": "XID 79: GPU has fallen off the bus", "gpus": ["3"]}
    hook = _script(tmp_path / "replace-hook", f"""#!/bin/sh
printf '%s|%s|%s|%s|%s\\n' "$DSXOS_NODE" "$DSXOS_HOST" "$DSXOS_INCIDENT_ID" "$DSXOS_GPUS" "$*" >> {tmp_path}/replace.log
printf '%s\\n' "$DSXOS_INCIDENT" >> {tmp_path}/replace.log
echo "replacement order R-1 placed"
""")
    files = {name: _task_file(installed_collection, f"remediation/{name}.yml") for name in ("ticket_webhook", "contact_support", "replace")}
    webhook = {"url": url, "token": TOKEN, "timeout_s": 10}
    node = "gpu-7"
    run = ansible_run(_playbook([
        {"file": files["ticket_webhook"], "node": node, "host": "dsx-h7", "incident": incident, "gpus": ["3"],
         "pods": [{"namespace": "ml", "name": "train-0"}], "vars": {"sentinel_ticket_webhook": webhook}},
        {"file": files["contact_support"], "node": node, "incident": incident},
        {"file": files["replace"], "node": node, "incident": incident, "gpus": ["3"],
         "vars": {"sentinel_replace": {"command": [str(hook), "--zone", "a"]}}},
        {"file": files["replace"], "node": node, "incident": incident, "vars": {"sentinel_ticket_webhook": webhook}},
        {"file": files["ticket_webhook"], "node": "gpu-$(id)", "incident": incident,
         "vars": {"sentinel_ticket_webhook": {"url": "http://127.0.0.1:9/closed", "token": TOKEN, "timeout_s": 5}}},
    ]))
    ticket, no_support, replaced, replace_contact, unreachable = (_result(run, i) for i in range(5))
    assert ticket == {"ok": True, "changed": True,
                      "message": "ticket for gpu-7: posted to http://127.0.0.1:%d: HTTP 201, reference INC-1" % server.server_address[1]}, ticket
    first = handler.posts[0]
    assert first["path"] == "/tickets" and first["headers"]["Authorization"] == "Bearer " + TOKEN
    assert first["headers"]["Content-Type"].startswith("application/json")
    assert first["body"]["kind"] == "ticket" and first["body"]["incident"] == incident and first["body"]["node"] == node
    assert first["body"]["host"] == "dsx-h7" and first["body"]["gpus"] == ["3"] and first["body"]["pods"] == [{"namespace": "ml", "name": "train-0"}]
    assert no_support["ok"] is True and no_support["changed"] is False and "no support webhook configured" in no_support["message"], no_support
    assert replaced["ok"] is True and replaced["changed"] is True and "replacement order R-1 placed" in replaced["message"], replaced
    lines = (tmp_path / "replace.log").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "gpu-7|gpu-7|inc-77|3|--zone a" and json.loads(lines[1]) == incident
    assert replace_contact["ok"] is True and replace_contact["changed"] is False, replace_contact
    assert "no replace hook configured" in replace_contact["message"] and "support contacted" in replace_contact["message"], replace_contact
    assert [p["body"]["kind"] for p in handler.posts] == ["ticket", "contact_support"]
    assert unreachable["ok"] is False and "post to http://127.0.0.1:9 failed" in unreachable["message"], unreachable
    assert TOKEN not in run.stdout and TOKEN not in run.stderr
    leaks = [t["task"] for t in run.tasks if TOKEN in json.dumps(t["result"], default=str)]
    assert not leaks, "the token leaked into the results of %s" % leaks
    assert run.rc == 0

    handler.status = 500
    refused = ansible_run(_playbook([{"file": files["ticket_webhook"], "node": node, "incident": incident,
                                      "vars": {"sentinel_ticket_webhook": webhook}}]))
    result = _result(refused, 0)
    assert result["ok"] is False and result["changed"] is False and "failed: HTTP 500" in result["message"], result
    assert TOKEN not in refused.stdout


# ---------------------------------------------------------------------------------------------------- recertify
def _recertify_settings(nccl_standin_dir: Path, fabric, report_dir: Path) -> dict:
    """sentinel_recertify for the fabric: GPU health on recorded readings, the nccl-tests CPU stand-in (loopback and
    all-reduce over mpirun), relative thresholds only, the neighbours from the inventory group gpu_nodes."""
    return {
        "categories": ["gpu-health", "nccl-loopback", "nccl-all-reduce"], "gpu_health": {"expected_gpu_count": 8},
        "nccl_loopback": {"binary_dir": str(nccl_standin_dir), "gpus": 2, "mpirun": {"enabled": True, "allow_run_as_root": True},
                          "min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1, "timeout_s": 120},
        "mpirun": {"binary_dir": str(nccl_standin_dir), "launcher_env": fabric.mpirun_env(), "allow_run_as_root": True,
                   "args": {"min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1}},
        "thresholds": {"use_builtin_floors": False, "relative": {"fraction": 0.25, "mad_z": 50}},
        "timeout_s": 150, "neighbour_group": "gpu_nodes", "report_dir": str(report_dir),
    }


def test_recertify_passes_a_healthy_host_and_not_the_dbe_host(ansible_run, installed_collection, netns_fabric, nccl_standin_dir, tmp_path):
    names = netns_fabric.names
    healthy, dbe = names[0], names[6]
    host_vars = {name: {"certify_recorded_readings": str(NVML_FIXTURES / ("h100x8_ecc_dbe_volatile.json" if name == dbe else "h100x8_healthy.json"))}
                 for name in names}
    inventory = _inventory(netns_fabric, tmp_path / "inventory", host_vars)
    report_dir = tmp_path / "reports"
    settings = _recertify_settings(nccl_standin_dir, netns_fabric, report_dir)
    recertify = _task_file(installed_collection, "recertify.yml")
    common = {"sentinel_recertify": settings, "sentinel_recertify_neighbours": 2, "sentinel_recertify_exclude_hosts": [dbe, GHOST]}
    run = ansible_run(_playbook([
        {"file": recertify, "node": "gpu-a", "host": healthy, "result": "sentinel_recertify_result", "vars": common,
         "incident": {"id": "inc/1"}},
        {"file": recertify, "node": "gpu-b", "host": dbe, "result": "sentinel_recertify_result", "vars": common,
         "incident": {"id": "inc-2"}},
        {"file": recertify, "node": "gpu-c", "host": GHOST, "result": "sentinel_recertify_result", "vars": common},
    ]), inventory=inventory, extra_args=["-T", "30"])
    passed, failed, ghost = (_result(run, i, "sentinel_recertify_result") for i in range(3))

    assert passed["passed"] is True, passed
    assert passed["reason"] == f"{healthy} passed (with {names[1]}, {names[2]})", passed
    report = json.loads(Path(passed["report"]).read_text(encoding="utf-8"))
    assert Path(passed["report"]).parent == report_dir / "inc_1-gpu-a"
    node = report["nodes"][healthy]
    assert node["verdict"] == "passed"
    statuses = {c: v["status"] for c, v in node["categories"].items()}
    assert statuses == {"gpu-health": "passed", "nccl-loopback": "passed", "nccl-all-reduce": "passed"}, node

    assert failed["passed"] is False, failed
    assert failed["reason"].startswith(f"{dbe} failed: ") and ("DBE" in failed["reason"] or "double-bit" in failed["reason"].lower()), failed
    dbe_report = json.loads(Path(failed["report"]).read_text(encoding="utf-8"))
    assert dbe_report["nodes"][dbe]["categories"]["gpu-health"]["status"] == "failed"
    assert (report_dir / "inc-2-gpu-b" / "certify-report.html").is_file()

    assert ghost["passed"] is False and ghost["reason"].startswith(f"{GHOST} excluded: unreachable"), ghost
    assert run.rc == 0 and run.stats["localhost"].get("failures", 0) == 0
    left = [p for p in os.listdir("/proc") if p.isdigit() and _is_standin(p, nccl_standin_dir)]
    assert not left, "a stand-in process is left: " + "; ".join(_describe(p) for p in left)


def _describe(pid: str) -> str:
    """A leftover process: its command line, state, parent and session, and its parent's command line."""
    def read(path: str) -> str:
        try:
            with open(path, "rb") as handle:
                return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            return "?"
    stat = read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()
    state, ppid, sid = (stat[0], stat[1], stat[3]) if len(stat) > 3 else ("?", "?", "?")
    return f"{pid} [{state}] {read(f'/proc/{pid}/cmdline')[:200]} (ppid {ppid}: {read(f'/proc/{ppid}/cmdline')[:200]}; session {sid})"


def _is_standin(pid: str, binary_dir: Path) -> bool:
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    return os.path.dirname(os.path.realpath(exe)) == os.path.realpath(str(binary_dir))


# ---------------------------------------------------------------------------------------------------- the whole loop
def _xid79(node: str, fingerprint: str) -> dict:
    return {"node": node, "gpu": "3", "uuid": "GPU-1234", "code": 79, "fault_class": "fallen-off-bus", "action": None, "status": "firing",
            "fingerprint": fingerprint, "starts_at": "2026-03-01T10:00:00Z", "ends_at": None, "pods": [], "alertname": "XidCritical",
            "severity": "critical", "labels": {"cluster": "test"}}


def test_the_remediate_playbook_reboots_recertifies_and_returns_a_node_and_keeps_a_failing_one_quarantined(
        ansible_run, installed_collection, netns_fabric, nccl_standin_dir, k8s_emulator, tmp_path):
    """The whole loop through the remediate playbook with the role's own task files (no stub): an XID 79 on two nodes
    whose hosts are fabric hosts (sentinel_node_hosts) -> batch quarantine -> drain -> reboot.yml (the stand-in: a new
    boot id on THAT host) -> recertify.yml (GPU health on recorded readings, NCCL loopback and all-reduce with two
    healthy neighbours) -> the healthy host's node is returned exactly as it was; the DBE host's node needs attention and
    stays quarantined with the report's reason."""
    emu = k8s_emulator
    good, bad = emu.add_nodes(2, "h100-eks", name_prefix="gpu-")
    names = netns_fabric.names
    # the DBE host first in the inventory: the healthy node's recertification must skip it as a neighbour (it is
    # quarantined while the healthy node recertifies) without being told (sentinel_recertify_exclude_quarantined)
    dbe, healthy = names[0], names[1]
    standin = reboot_standin.install(netns_fabric)
    boot_ids = {host: standin.boot_id(host) for host in (healthy, dbe)}
    # each host's reboot stand-in in its inventory (sentinel_host_reboot, merged over sentinel_reboot)
    host_vars = {name: {"certify_recorded_readings": str(NVML_FIXTURES / ("h100x8_ecc_dbe_volatile.json" if name == dbe else "h100x8_healthy.json")),
                        "sentinel_host_reboot": {k: v for k, v in standin.sentinel_reboot(name).items() if k in ("command", "boot_time_command")}}
                 for name in names}
    inventory = _inventory(netns_fabric, tmp_path / "inventory", host_vars)
    report_dir = tmp_path / "reports"
    variables = {
        "sentinel_k8s_auth": {"kubeconfig": emu.kubeconfig_path, "retries": 2, "retry_backoff_s": 0.1},
        "sentinel_destructive": True,
        "sentinel_events": [_xid79(good, "fp-good"), _xid79(bad, "fp-bad")],
        "sentinel_node_hosts": {good: healthy, bad: dbe},
        "sentinel_reboot": {"timeout_s": 120, "test_command": "true", "connect_timeout_s": 5},
        "sentinel_recertify": _recertify_settings(nccl_standin_dir, netns_fabric, report_dir),
        "sentinel_recertify_neighbours": 2,
        "sentinel_circuit_breaker": {"max_fraction": 1.0, "max_nodes": 50},
        "sentinel_drain": {"timeout_s": 60, "pdb_retry_s": 0.05, "pdb_retry_max_s": 0.2},
    }
    before = emu.api.get("v1", "Node", good)
    try:
        run = ansible_run("dsxos.cluster.remediate", extra_vars=variables, inventory=inventory, extra_args=["-T", "30"], expect_rc=0)
    finally:
        standin.sync_fabric_pids()
    summary = run.task("dsxos.cluster.sentinel : Publish the summary")["result"]["ansible_stats"]["data"]["dsxos_sentinel"]
    outcomes = {o["node"]: o for o in summary["outcomes"]}

    # the healthy host: rebooted (a new boot id on that host only), recertified with two neighbours, returned
    assert outcomes[good]["status"] == "returned", json.dumps(summary["outcomes"])
    assert f"{healthy} passed (with {names[2]}, {names[3]})" in outcomes[good]["message"], outcomes[good]["message"]
    assert standin.boot_id(healthy) != boot_ids[healthy] and standin.boot_id(dbe) != boot_ids[dbe], "both nodes were rebooted"
    after = emu.api.get("v1", "Node", good)
    annotations = after["metadata"].get("annotations") or {}
    assert not after["spec"].get("unschedulable") and not [t for t in after["spec"].get("taints") or [] if t["key"].startswith("dsxos.io/")]
    assert after["spec"].get("taints") == before["spec"].get("taints"), "the prior taints restored exactly"
    assert "dsxos.io/incident" not in annotations
    history = json.loads(annotations["dsxos.io/incident-history"])
    assert history[-1]["outcome"] == "returned" and history[-1]["id"] == outcomes[good]["incident"], history
    report = json.loads(next(report_dir.glob(f"*-{good}/certify-report.json")).read_text(encoding="utf-8"))
    assert report["nodes"][healthy]["verdict"] == "passed", report["nodes"][healthy]
    reasons = [e["reason"] for e in emu.api.list("v1", "Event", "default") if (e.get("involvedObject") or {}).get("name") == good]
    for step in ("SentinelQuarantined", "SentinelRemediating", "SentinelRecertifying", "SentinelReturned"):
        assert step in reasons, (step, reasons)

    # the DBE host: rebooted, failed its GPU health check, quarantined with the report's reason
    assert outcomes[bad]["status"] == "needs-attention", json.dumps(summary["outcomes"])
    node = emu.api.get("v1", "Node", bad)
    incident = json.loads(node["metadata"]["annotations"]["dsxos.io/incident"])
    reason = json.loads(node["metadata"]["annotations"]["dsxos.io/quarantine-prior"])["reason"]
    assert node["spec"]["unschedulable"] is True and incident["state"] == "needs-attention"
    assert incident["id"] in reason and dbe in reason and "failed" in reason, reason
    left = [p for p in os.listdir("/proc") if p.isdigit() and _is_standin(p, nccl_standin_dir)]
    assert not left, "a stand-in process is left: " + "; ".join(_describe(p) for p in left)
