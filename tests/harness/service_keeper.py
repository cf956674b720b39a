# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Start and stop the test environments outside pytest: the built-in Kubernetes cluster (the API emulator) and the
multi-host network-namespace fabric with the nccl-tests CPU stand-in.

Molecule's ``create``/``destroy`` playbooks (``extensions/molecule/``) call it; the environments are the same code
the pytest fixtures use (``k8s_emulator``, ``netns_fabric.NetnsFabric``, ``nccl_standin.build``), only kept alive
by a background process instead of a pytest session. Run from the collection root::

    python -m tests.harness.service_keeper start cluster --state-dir DIR [--nodes 4] [--profile h100-eks] [--emulator-arg=ARG ...]
    python -m tests.harness.service_keeper start fabric --state-dir DIR [--hosts 4] [--slow HOST=RATE ...]
    python -m tests.harness.service_keeper stop --state-dir DIR

``start`` returns once the environment is ready and prints its description as JSON (also written to
``DIR/<kind>.json``): the cluster's ``kubeconfig``; the fabric's ``hosts`` (name, address, namespace),
``inventory`` (the fabric's own Ansible inventory), ``mpirun_env``, ``standin_dir``, ``subnet``, ``slowed``
(``--slow dsx-h3=200mbit`` limits that host's link with tc tbf) and ``unused_address`` (an address of the subnet
that no host answers on, for an unreachable inventory host). ``stop`` ends
every environment recorded in ``DIR`` (SIGTERM, then SIGKILL after a grace period) and removes a fabric whose
keeper died (by its prefix), so nothing is left behind. Both are idempotent: starting a running environment
reports it again, stopping a stopped one does nothing.

The fabric keeper is a process of its own (``serve-fabric``): it owns the fabric (its PID is the fabric's owner, so
a concurrent test session's leftover sweep leaves the fabric alone) and tears it down on SIGTERM.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parents[2]
KINDS = ("cluster", "fabric", "real-cluster")
START_TIMEOUT_S = 240.0
STOP_GRACE_S = 20.0


class KeeperError(RuntimeError):
    """An environment could not be started or stopped."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours is dead too
        with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _state_path(state_dir: Path, kind: str) -> Path:
    return state_dir / ("%s.json" % kind)


def _write_json(path: Path, data: Dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read_state(state_dir: Path, kind: str) -> Optional[Dict[str, Any]]:
    """The recorded description of ``kind`` in ``state_dir`` (None when there is none)."""
    try:
        return json.loads(_state_path(state_dir, kind).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _wait_ready(state_dir: Path, kind: str, pid: int, log: Path, ready) -> Dict[str, Any]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = read_state(state_dir, kind)
        if state is not None and ready(state):
            return state
        if not _alive(pid):
            tail = log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.exists() else ""
            raise KeeperError("the %s did not start (process %d exited):\n%s" % (kind, pid, tail))
        time.sleep(0.1)
    _terminate(pid)
    raise KeeperError("the %s was not ready within %.0f s (log: %s)" % (kind, START_TIMEOUT_S, log))


def _spawn(argv: List[str], log: Path) -> int:
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, cwd=str(REPO), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    return proc.pid


def start_cluster(state_dir: Path, nodes: int, profile: str, time_scale: float, emulator_args: List[str]) -> Dict[str, Any]:
    """Start the Kubernetes API emulator in the background; return ``{pid, kubeconfig, log}``."""
    current = read_state(state_dir, "cluster")
    if current and _alive(int(current["pid"])):
        return current
    kubeconfig = state_dir / "kubeconfig"
    if kubeconfig.exists():
        kubeconfig.unlink()
    log = state_dir / "cluster.log"
    pid = _spawn([sys.executable, "-m", "tests.harness.k8s_emulator", "serve", "--nodes", str(nodes), "--profile", profile,
                  "--time-scale", str(time_scale), "--kubeconfig", str(kubeconfig), *emulator_args], log)
    state = {"kind": "cluster", "pid": pid, "kubeconfig": str(kubeconfig), "log": str(log), "nodes": nodes, "profile": profile}
    _write_json(_state_path(state_dir, "cluster"), state)
    _wait_ready(state_dir, "cluster", pid, log, lambda s: kubeconfig.is_file() and kubeconfig.stat().st_size > 0)
    return state


def start_fabric(state_dir: Path, hosts: int, slow: List[str]) -> Dict[str, Any]:
    """Start a fabric keeper in the background; return the fabric's description once its sshds answer."""
    current = read_state(state_dir, "fabric")
    if current and current.get("ready") and _alive(int(current["pid"])):
        return current
    log = state_dir / "fabric.log"
    argv = [sys.executable, "-m", "tests.harness.service_keeper", "serve-fabric", "--state-dir", str(state_dir), "--hosts", str(hosts)]
    for item in slow:
        argv += ["--slow", item]
    pid = _spawn(argv, log)
    return _wait_ready(state_dir, "fabric", pid, log, lambda s: bool(s.get("ready")) and int(s.get("pid", -1)) == pid)


def serve_fabric(state_dir: Path, hosts: int, slow: List[str]) -> int:
    """Foreground keeper: build the stand-in and the fabric, describe it, wait for SIGTERM, tear it down."""
    from .nccl_standin.build import KEEPER_CACHE, build_standin  # pylint: disable=import-outside-toplevel
    from .netns_fabric import NetnsFabric  # pylint: disable=import-outside-toplevel

    stop = {"now": False}

    def on_signal(signum, frame):  # pylint: disable=unused-argument
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # A stand-in build of its own (KEEPER_CACHE, not the pytest suites' DEFAULT_CACHE): `make test` runs the molecule
    # scenarios beside the integration tests, whose "no stand-in process is left on the machine" checks match processes
    # by the realpath of the stand-in binaries they built, so this keeper's runs are never mistaken for their leftovers.
    standin = build_standin(KEEPER_CACHE)
    fabric = NetnsFabric(hosts=hosts, workdir=state_dir / "fabric")
    fabric.start()
    try:
        for item in slow:
            host, sep, rate = item.partition("=")
            if not sep:
                raise KeeperError("--slow wants HOST=RATE (e.g. dsx-h3=200mbit), got %r" % item)
            fabric.slow_link(host, rate=rate)
        _write_json(_state_path(state_dir, "fabric"), {
            "kind": "fabric", "pid": os.getpid(), "ready": True, "prefix": fabric.prefix, "subnet": fabric.cidr,
            "inventory": str(fabric.inventory_path), "mpirun_env": fabric.mpirun_env(), "standin_dir": str(standin),
            "hosts": [{"name": m.name, "address": m.address, "namespace": m.namespace} for m in fabric.members],
            "slowed": {name: rate for name, rate in fabric.link_rates().items() if rate},
            "unused_address": str(fabric.subnet.network_address + 250) if fabric.subnet else None,
        })
        while not stop["now"]:
            signal.pause()
    finally:
        fabric.stop()
        try:
            _state_path(state_dir, "fabric").unlink()
        except FileNotFoundError:
            pass
    return 0


def _terminate(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_all(state_dir: Path) -> List[str]:
    """Stop every environment recorded in ``state_dir``; return the kinds that were stopped."""
    stopped = []
    for kind in KINDS:
        state = read_state(state_dir, kind)
        if state is None:
            continue
        if kind == "real-cluster":  # a real control plane: every recorded process group (docs/real-control-plane.md)
            from .kube_control_plane.cluster import stop_state_dir  # pylint: disable=import-outside-toplevel
            stop_state_dir(state_dir)
        else:
            _terminate(int(state["pid"]))
        if kind == "fabric" and state.get("prefix"):
            from .netns_fabric import remove_prefix  # pylint: disable=import-outside-toplevel
            remove_prefix(str(state["prefix"]))  # no-op when the keeper already removed it
        try:
            _state_path(state_dir, kind).unlink()
        except FileNotFoundError:
            pass
        stopped.append(kind)
    return stopped


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.service_keeper", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start an environment in the background and print its description")
    start.add_argument("kind", choices=KINDS)
    start.add_argument("--state-dir", required=True, type=Path)
    start.add_argument("--nodes", type=int, default=4, help="cluster: number of GPU nodes")
    start.add_argument("--profile", default="h100-eks", help="cluster: node profile")
    start.add_argument("--time-scale", type=float, default=0.05, help="cluster: emulated-delay multiplier")
    start.add_argument("--emulator-arg", dest="emulator_args", action="append", default=[], metavar="ARG",
                       help="cluster: one more argument of `k8s_emulator serve` (e.g. --emulator-arg=--certify-jobs)")
    start.add_argument("--hosts", type=int, default=4, help="fabric: number of hosts")
    start.add_argument("--slow", action="append", default=[], metavar="HOST=RATE", help="fabric: slow a host's link (tc tbf)")
    serve = sub.add_parser("serve-fabric", help=argparse.SUPPRESS)
    serve.add_argument("--state-dir", required=True, type=Path)
    serve.add_argument("--hosts", type=int, default=4)
    serve.add_argument("--slow", action="append", default=[])
    stop = sub.add_parser("stop", help="stop every environment recorded in the state directory")
    stop.add_argument("--state-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    args.state_dir = args.state_dir.resolve()
    args.state_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.command == "serve-fabric":
            return serve_fabric(args.state_dir, args.hosts, args.slow)
        if args.command == "stop":
            print(json.dumps({"stopped": stop_all(args.state_dir)}))
            return 0
        if args.kind == "cluster":
            state = start_cluster(args.state_dir, args.nodes, args.profile, args.time_scale, args.emulator_args)
        elif args.kind == "real-cluster":  # a real control plane with --nodes simulated nodes (docs/real-control-plane.md)
            from .kube_control_plane.keeper import start_real_cluster  # pylint: disable=import-outside-toplevel
            state = start_real_cluster(args.state_dir, args.nodes, args.profile, KeeperError)
        else:
            state = start_fabric(args.state_dir, args.hosts, args.slow)
    except KeeperError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(json.dumps(state, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
