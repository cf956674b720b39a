# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Start and stop a real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler from the cached build (:mod:`.build`), each in its own process group on free ports.

* TLS: a generated CA and serving certificate (``certs.py``); clients authenticate with static bearer tokens
  (``--token-auth-file``): ``admin`` (group ``system:masters``), the controller-manager and scheduler identities, and
  the restricted users given to :class:`RealCluster` (default ``dsxos-restricted``, no permissions until
  :meth:`RealCluster.grant` gives some). Authorization ``Node,RBAC``; admission adds ``NodeRestriction``.
* Service accounts: ``--service-account-key-file``/``--service-account-signing-key-file`` (issuer
  ``https://kubernetes.default.svc.cluster.local``), the controller-manager signs tokens with the same key and runs
  every controller under its own service account (``--use-service-account-credentials``), as kubeadm does.
* One kubeconfig per user in the state directory (``kubeconfig`` is the admin's).

Usage::

    with RealCluster() as cluster:           # or cluster.start() / cluster.stop()
        cluster.kubeconfig_path              # admin
        cluster.kubeconfig_for("dsxos-restricted")
        cluster.grant("dsxos-restricted", [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}])

The state directory records every PID (``real-cluster.json``); :func:`stop_state_dir` stops what a state directory
records (also from another process: ``python -m tests.harness.kube_control_plane stop --state-dir D``).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from . import build as kube_build
from .certs import make_certificates

STATE_FILE = "real-cluster.json"
ADMIN = "admin"
RESTRICTED = "dsxos-restricted"
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"
ISSUER = "https://kubernetes.default.svc.cluster.local"
START_TIMEOUT_S = 120.0
STOP_GRACE_S = 15.0
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


class ClusterError(RuntimeError):
    """The control plane could not be started (or a component died)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead too
        with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stop_group(pid: int, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM the process group led by ``pid``, SIGKILL it after ``grace_s``; reap it when it is our child."""
    def signal_group(signum: int) -> None:
        try:
            os.killpg(pid, signum)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def reap() -> None:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass

    if not pid_alive(pid):
        reap()
        return
    signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        reap()
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    signal_group(signal.SIGKILL)
    for _attempt in range(100):
        reap()
        if not pid_alive(pid):
            return
        time.sleep(0.05)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read_state(state_dir: Path) -> Optional[Dict[str, Any]]:
    """The recorded description of the control plane in ``state_dir`` (None when there is none)."""
    try:
        return json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stop_state_dir(state_dir: Path) -> List[str]:
    """Stop every process recorded in ``state_dir`` (newest first); return their names. Idempotent."""
    state = read_state(state_dir)
    if state is None:
        return []
    stopped = []
    for name, pid in reversed(list(state.get("pids", {}).items())):
        _stop_group(int(pid))
        stopped.append(name)
    etcd_data = state.get("etcd_data_dir")
    if etcd_data and state.get("etcd_data_owned"):
        shutil.rmtree(etcd_data, ignore_errors=True)
    try:
        (state_dir / STATE_FILE).unlink()
    except FileNotFoundError:
        pass
    return stopped


def write_kubeconfig(path: Path, server: str, ca_file: Path, user: str, token: str) -> Path:
    """A kubeconfig (mode 0600, written atomically) for ``user`` with a bearer ``token``."""
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": user,
        "clusters": [{"name": "dsxos-real", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "dsxos-real", "user": user, "namespace": "default"}}],
    }
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=1)
    os.replace(tmp, path)
    return path


def _tmpfs_dir() -> Optional[Path]:
    """/dev/shm when it is writable with at least 2 GiB free (etcd 3.4 fsyncs every write; tmpfs makes that free)."""
    shm = Path("/dev/shm")
    try:
        usage = shutil.disk_usage(shm)
    except OSError:
        return None
    return shm if os.access(shm, os.W_OK) and usage.free >= 2 * 1024 ** 3 else None


class RealCluster:
    """A real control plane in ``state_dir`` (a new temporary directory when None); see the module docstring.

    ``users``: restricted users (name -> extra groups) with static tokens; ``bin_dir``: the binaries (default: the cached
    build, built when missing and ``build_if_missing``); ``node_monitor_grace_s``: how long the node lifecycle
    controller waits for a node's heartbeat (kube default 40 s); ``extra_args``: per component, more flags.
    """

    def __init__(self, state_dir: Optional[Path] = None, users: Optional[Mapping[str, Sequence[str]]] = None,
                 bin_dir: Optional[Path] = None, build_if_missing: bool = True, node_monitor_grace_s: int = 40,
                 etcd_on_tmpfs: bool = True, extra_args: Optional[Mapping[str, Sequence[str]]] = None,
                 log: Callable[[str], None] = lambda message: None) -> None:
        self._owns_state_dir = state_dir is None
        self.state_dir = Path(state_dir) if state_dir else Path(tempfile.mkdtemp(prefix="dsxos-real-cluster-"))
        self.users: Dict[str, List[str]] = {RESTRICTED: []} if users is None else {k: list(v) for k, v in users.items()}
        self.bin_dir = bin_dir
        self.build_if_missing = build_if_missing
        self.node_monitor_grace_s = node_monitor_grace_s
        self.etcd_on_tmpfs = etcd_on_tmpfs
        self.extra_args = {k: list(v) for k, v in (extra_args or {}).items()}
        self.log = log
        self.tokens: Dict[str, str] = {}
        self.pids: Dict[str, int] = {}
        self.ports: Dict[str, int] = {}
        self.procs: Dict[str, subprocess.Popen] = {}
        self.url = ""
        self.started_in_s = 0.0
        self.ready_after_s: Dict[str, float] = {}  # seconds from start() until each readiness check passed
        self.etcd_data_dir: Optional[Path] = None
        self._etcd_data_owned = False

    # ---- paths ------------------------------------------------------------------------------------------------
    @property
    def pki(self) -> Path:
        """Certificates and keys."""
        return self.state_dir / "pki"

    @property
    def ca_file(self) -> Path:
        """The CA certificate that signed the apiserver's serving certificate."""
        return self.pki / "ca.crt"

    @property
    def kubeconfig_path(self) -> Path:
        """The admin's kubeconfig (group system:masters)."""
        return self.state_dir / "kubeconfig"

    def kubeconfig_for(self, user: str) -> Path:
        """The kubeconfig of a static user (``admin`` or one of ``users``)."""
        if user == ADMIN:
            return self.kubeconfig_path
        if user not in self.users:
            raise KeyError("no static user %r (known: %s)" % (user, ", ".join(sorted(self.users))))
        return self.state_dir / ("kubeconfig-%s" % user)

    def log_path(self, component: str) -> Path:
        """Where a component's stdout/stderr goes."""
        return self.state_dir / "logs" / ("%s.log" % component)

    # ---- start ------------------------------------------------------------------------------------------------
    def _binaries(self) -> Path:
        if self.bin_dir:
            return self.bin_dir
        found = kube_build.find_build()
        if found is None:
            if not self.build_if_missing:
                raise ClusterError("no control plane build in %s; run scripts/build_kube_control_plane.sh "
                                   "(python -m tests.harness.kube_control_plane build)" % kube_build.result_dir())
            found = kube_build.build()
        return found / "bin"

    def _spawn(self, name: str, argv: List[str]) -> None:
        self.log_path(name).parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path(name), "ab") as out:
            proc = subprocess.Popen(argv + self.extra_args.get(name, []), cwd=str(self.state_dir), stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        self.procs[name] = proc
        self.pids[name] = proc.pid
        self._record()

    def _record(self, ready: bool = False) -> None:
        write_json(self.state_dir / STATE_FILE, {
            "kind": "real-cluster", "pids": self.pids, "ports": self.ports, "url": self.url, "ready": ready,
            "kubeconfig": str(self.kubeconfig_path), "ca_file": str(self.ca_file),
            "kubeconfigs": {user: str(self.kubeconfig_for(user)) for user in [ADMIN, *self.users]},
            "etcd_data_dir": str(self.etcd_data_dir) if self.etcd_data_dir else None, "etcd_data_owned": self._etcd_data_owned,
            "logs": str(self.state_dir / "logs"), "started_in_s": self.started_in_s, "ready_after_s": self.ready_after_s})

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = self.log_path(name).read_text(encoding="utf-8", errors="replace")[-4000:]
                raise ClusterError("%s exited with %s while starting:\n%s" % (name, proc.returncode, tail))

    def _get(self, url: str, token: Optional[str] = None, context: Optional[ssl.SSLContext] = None) -> tuple[int, str]:
        request = urllib.request.Request(url, headers={"Authorization": "Bearer %s" % token} if token else {})
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as response:
                return int(response.status), response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode("utf-8", errors="replace")
        except (urllib.error.URLError, OSError):
            return 0, ""

    def _wait(self, what: str, check: Callable[[], bool], deadline: float) -> None:
        while time.monotonic() < deadline:
            self._check_alive()
            if check():
                self.ready_after_s[what] = round(time.monotonic() - (deadline - START_TIMEOUT_S), 2)
                return
            time.sleep(0.1)
        raise ClusterError("%s not ready within %.0f s (logs: %s)" % (what, START_TIMEOUT_S, self.state_dir / "logs"))

    def start(self) -> "RealCluster":
        """Start the four components and wait until the API is ready and the controllers work. Idempotent.

        On failure, whatever was started is stopped again before the error is raised.
        """
        if self.procs:
            return self
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> "RealCluster":
        current = read_state(self.state_dir)
        if current and current.get("pids") and any(pid_alive(int(pid)) for pid in current["pids"].values()):
            raise ClusterError("%s already records a running control plane (stop it first: python -m "
                               "tests.harness.kube_control_plane stop --state-dir %s)" % (self.state_dir, self.state_dir))
        bins = self._binaries()
        begin = time.monotonic()
        deadline = begin + START_TIMEOUT_S
        self.state_dir.mkdir(parents=True, exist_ok=True)
        names = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"]
        make_certificates(self.pki, ips=["127.0.0.1", SERVICE_IP], dns=names)
        groups = {ADMIN: ["system:masters"], "system:kube-controller-manager": [], "system:kube-scheduler": []}
        groups.update(self.users)
        self.tokens = {user: secrets.token_hex(16) for user in groups}
        token_file = self.pki / "tokens.csv"
        token_file.write_text("".join('%s,%s,%s,"%s"\n' % (self.tokens[user], user, user, ",".join(extra))
                                      for user, extra in groups.items()), encoding="utf-8")
        os.chmod(token_file, 0o600)
        self.ports = {name: free_port() for name in ("etcd-client", "etcd-peer", "apiserver", "controller-manager", "scheduler")}
        self.url = "https://127.0.0.1:%d" % self.ports["apiserver"]
        for user in [ADMIN, *self.users]:
            write_kubeconfig(self.kubeconfig_for(user), self.url, self.ca_file, user, self.tokens[user])
        internal = {}
        for user in ("system:kube-controller-manager", "system:kube-scheduler"):
            internal[user] = write_kubeconfig(self.pki / ("%s.kubeconfig" % user.split(":")[1]), self.url, self.ca_file, user, self.tokens[user])
        shm = _tmpfs_dir() if self.etcd_on_tmpfs else None
        if shm is not None:
            self.etcd_data_dir = Path(tempfile.mkdtemp(prefix="dsxos-etcd-", dir=str(shm)))
            self._etcd_data_owned = True
        else:
            self.etcd_data_dir = self.state_dir / "etcd"
        etcd_client = "http://127.0.0.1:%d" % self.ports["etcd-client"]
        etcd_peer = "http://127.0.0.1:%d" % self.ports["etcd-peer"]
        self._spawn("etcd", [str(bins / "etcd"), "--name", "dsxos", "--data-dir", str(self.etcd_data_dir),
                             "--listen-client-urls", etcd_client, "--advertise-client-urls", etcd_client,
                             "--listen-peer-urls", etcd_peer, "--initial-advertise-peer-urls", etcd_peer,
                             "--initial-cluster", "dsxos=%s" % etcd_peer, "--initial-cluster-state", "new",
                             "--logger", "zap", "--log-level", "warn", "--quota-backend-bytes", str(4 * 1024 ** 3)])
        self._wait("etcd", lambda: self._get(etcd_client + "/health")[0] == 200, deadline)
        pki = self.pki
        self._spawn("kube-apiserver", [
            str(bins / "kube-apiserver"), "--etcd-servers", etcd_client, "--bind-address", "127.0.0.1",
            "--advertise-address", "127.0.0.1", "--secure-port", str(self.ports["apiserver"]),
            "--tls-cert-file", str(pki / "apiserver.crt"), "--tls-private-key-file", str(pki / "apiserver.key"),
            "--client-ca-file", str(pki / "ca.crt"), "--token-auth-file", str(token_file),
            "--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
            "--service-account-key-file", str(pki / "sa.pub"), "--service-account-signing-key-file", str(pki / "sa.key"),
            "--service-account-issuer", ISSUER, "--service-cluster-ip-range", SERVICE_CIDR,
            "--endpoint-reconciler-type", "none", "--allow-privileged=true", "--cert-dir", str(self.state_dir / "apiserver-certs"),
            # the node simulator serves pods/log on localhost, advertised as the nodes' InternalDNS address
            "--kubelet-preferred-address-types", "InternalDNS,InternalIP,Hostname,ExternalIP",
            "--profiling=false", "--v", "1"])
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        admin = self.tokens[ADMIN]
        self._wait("kube-apiserver /readyz", lambda: self._get(self.url + "/readyz", admin, ctx)[0] == 200, deadline)
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # the components' self-signed serving certificates
        self._spawn("kube-controller-manager", [
            str(bins / "kube-controller-manager"), "--kubeconfig", str(internal["system:kube-controller-manager"]),
            "--authentication-kubeconfig", str(internal["system:kube-controller-manager"]),
            "--authorization-kubeconfig", str(internal["system:kube-controller-manager"]),
            "--bind-address", "127.0.0.1", "--secure-port", str(self.ports["controller-manager"]), "--port", "0",
            "--cert-dir", str(self.state_dir / "controller-manager-certs"), "--leader-elect=false",
            "--use-service-account-credentials=true", "--service-account-private-key-file", str(pki / "sa.key"),
            "--root-ca-file", str(pki / "ca.crt"), "--cluster-signing-cert-file", str(pki / "ca.crt"),
            "--cluster-signing-key-file", str(pki / "ca.key"), "--allocate-node-cidrs=false",
            "--node-monitor-grace-period", "%ds" % self.node_monitor_grace_s, "--profiling=false", "--v", "1"])
        self._spawn("kube-scheduler", [
            str(bins / "kube-scheduler"), "--kubeconfig", str(internal["system:kube-scheduler"]),
            "--authentication-kubeconfig", str(internal["system:kube-scheduler"]),
            "--authorization-kubeconfig", str(internal["system:kube-scheduler"]),
            "--bind-address", "127.0.0.1", "--secure-port", str(self.ports["scheduler"]), "--port", "0",
            "--cert-dir", str(self.state_dir / "scheduler-certs"), "--leader-elect=false", "--profiling=false", "--v", "1"])
        for name, port in (("kube-controller-manager", self.ports["controller-manager"]), ("kube-scheduler", self.ports["scheduler"])):
            url = "https://127.0.0.1:%d/healthz" % port
            self._wait(name + " /healthz", lambda url=url: self._get(url, None, insecure)[0] == 200, deadline)
        # the service-account and token controllers work once `default` has its token secret
        self._wait("the default service account's token", lambda: self._default_sa_ready(ctx), deadline)
        self.started_in_s = round(time.monotonic() - begin, 2)
        self._record(ready=True)
        self.log("real control plane %s ready in %.1f s (state %s)" % (self.url, self.started_in_s, self.state_dir))
        return self

    def _default_sa_ready(self, ctx: ssl.SSLContext) -> bool:
        status, body = self._get(self.url + "/api/v1/namespaces/default/serviceaccounts/default", self.tokens[ADMIN], ctx)
        return status == 200 and bool(json.loads(body).get("secrets"))

    # ---- helpers ----------------------------------------------------------------------------------------------
    def api_client(self, user: str = ADMIN) -> Any:
        """A ``kubernetes.client.ApiClient`` for a static user."""
        from kubernetes import config  # pylint: disable=import-outside-toplevel

        return config.new_client_from_config(config_file=str(self.kubeconfig_for(user)))

    def grant(self, user: str, rules: Sequence[Mapping[str, Any]], namespace: Optional[str] = None, name: Optional[str] = None,
              kind: str = "User") -> str:
        """Give ``user`` (a User, Group or ``namespace:name`` ServiceAccount per ``kind``) the RBAC ``rules``.

        Cluster-wide (ClusterRole + ClusterRoleBinding) when ``namespace`` is None, else a Role + RoleBinding in it.
        Returns the role's name (``name`` or ``dsxos-<user>``). Reapplying replaces the rules.
        """
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel

        role_name = name or "dsxos-%s" % user.replace(":", "-")
        if kind == "ServiceAccount":
            sa_namespace, sa_name = user.split(":", 1)
            subject = {"kind": "ServiceAccount", "name": sa_name, "namespace": sa_namespace}
        else:
            subject = {"kind": kind, "name": user, "apiGroup": "rbac.authorization.k8s.io"}
        meta: Dict[str, Any] = {"name": role_name}
        if namespace:
            meta["namespace"] = namespace
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role" if namespace else "ClusterRole",
                "metadata": meta, "rules": [dict(rule) for rule in rules]}
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
                   "metadata": meta, "subjects": [subject],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role["kind"], "name": role_name}}
        with self.api_client() as api_client:
            rbac = client.RbacAuthorizationV1Api(api_client)
            for body in (role, binding):
                create, replace = {
                    "ClusterRole": (rbac.create_cluster_role, rbac.replace_cluster_role),
                    "ClusterRoleBinding": (rbac.create_cluster_role_binding, rbac.replace_cluster_role_binding),
                    "Role": (rbac.create_namespaced_role, rbac.replace_namespaced_role),
                    "RoleBinding": (rbac.create_namespaced_role_binding, rbac.replace_namespaced_role_binding),
                }[str(body["kind"])]
                args = (namespace,) if namespace else ()
                try:
                    create(*args, body)
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                    if body["kind"].endswith("Binding"):
                        continue  # the roleRef of a binding is immutable; the subject is the same
                    replace(role_name, *args, body)
        return role_name

    def wait_for_service_account(self, namespace: str, name: str = "default", timeout_s: float = 60.0) -> None:
        """Wait until the controllers created ``namespace/name`` with its token secret (pods need it to be admitted)."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status, body = self._get("%s/api/v1/namespaces/%s/serviceaccounts/%s" % (self.url, namespace, name), self.tokens[ADMIN], ctx)
            if status == 200 and json.loads(body).get("secrets"):
                return
            time.sleep(0.1)
        raise ClusterError("service account %s/%s has no token after %.0f s" % (namespace, name, timeout_s))

    # ---- stop -------------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop everything this cluster started, by process group (newest first). Idempotent."""
        for name in reversed(list(self.pids)):
            _stop_group(self.pids[name])
        stop_state_dir(self.state_dir)  # removes the state file (and the tmpfs etcd data)
        if self._etcd_data_owned and self.etcd_data_dir:
            shutil.rmtree(self.etcd_data_dir, ignore_errors=True)
        self.procs.clear()
        self.pids.clear()
        if self._owns_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> "RealCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def describe(self) -> Dict[str, Any]:
        """What the state file records."""
        return read_state(self.state_dir) or {}
