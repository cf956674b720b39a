# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Kubernetes reliability holes found by a hostile-input probe (issue 10 part 6), each pinned by a test.

1. an overall deadline per API call (a server that accepts and never answers);
2. names with whitespace or control characters refused by every validator;
3. node locks for node names of up to 253 characters (hashed Lease names that never collide);
4. a cordon whose PATCH response was lost is still reported as this task's change;
5. the quarantine record pairs every reason with the actor who gave it;
6. malformed kubeconfigs fail naming the file.

Portable tests talk to a cluster only through the client layer and the ``cluster_kubeconfig`` fixture (the emulator's
kubeconfig here) and name their objects uniquely, so they also run against a real control plane: override
``cluster_kubeconfig`` with ``real_cluster.kubeconfig_path`` (tests/harness/kube_control_plane). Fault-injection tests
use ``k8s_emulator`` itself and say "Emulator-only".
"""
from __future__ import annotations

import json
import socket
import string
import threading
import time
import uuid
from typing import Any, Iterator

import pytest
import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import (
    K8sAuth, K8sConfigError, K8sDeadlineExceeded, K8sRetriesExhausted, K8sTimeout, K8sUnreachable, KubeClient, auth_from_params,
    check_kubeconfig, client_from_params, ensure_namespace,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import (
    K8sInvalidName, validate_label_key, validate_label_selector, validate_label_value, validate_namespace, validate_node_name,
    validate_subdomain,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_LOCK, NODE_QUARANTINE
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import (
    ANN_NODE, LABEL_NODE, LEASE_PREFIX, NodeLock, NodeLockCollision, lease_name_for, validate_request,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_quarantine import (
    QuarantineOptions, patch_node, read_node, run_node_action, validate_nodes,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.quarantine_state import (
    ANN_HISTORY, ANN_PRIOR, QuarantineRecord, QuarantineRequest, check_request, plan_action,
)
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

#: seconds a failing call may take beyond its deadline (thread start, socket close, a loaded 2-core machine)
SLACK_S = 5.0


@pytest.fixture
def cluster_kubeconfig(k8s_emulator: Any) -> str:
    """The kubeconfig of the cluster the portable tests use (override with a real control plane's)."""
    return k8s_emulator.kubeconfig_path


def _kube(kubeconfig: str, **overrides: Any) -> KubeClient:
    params = {"kubeconfig": kubeconfig, "retry_backoff_s": 0}
    params.update(overrides)
    return client_from_params(params)


def _unique(prefix: str = "gpu") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _make_node(kube: KubeClient, name: str) -> str:
    """A Node object created through the client layer (portable to a real control plane)."""
    kube.call("create", "nodes", kube.core.create_node, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    return name


def _node(kube: KubeClient, name: str) -> dict[str, Any]:
    return read_node(kube, name)


# ---------------------------------------------------------------- 1. deadline


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server (a thread of this test) that accepts every connection and never sends a byte; yields its URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, dummy = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            accepted.append(conn)  # held open, never answered

    thread = threading.Thread(target=accept, name="silent-api-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in accepted:
            conn.close()
        listener.close()


def test_a_server_that_never_answers_fails_within_the_deadline(silent_server):
    kube = client_from_params({"host": silent_server, "request_timeout_s": 30, "retries": 8, "retry_backoff_s": 0.2, "deadline_s": 1.5})
    list_node = kube.core.list_node  # building CoreV1Api takes a while on a small machine: not part of the call
    started = time.monotonic()
    with pytest.raises(K8sDeadlineExceeded) as err:
        kube.call("list", "nodes", list_node)
    elapsed = time.monotonic() - started
    assert 1.5 <= elapsed < 1.5 + SLACK_S, "the 30 s read timeout is clipped to the time left"
    text = str(err.value)
    assert silent_server in text and "list nodes" in text and "1 attempt(s)" in text and "deadline_s" in text
    assert err.value.attempts == 1 and 1.4 <= err.value.elapsed_s < 1.5 + SLACK_S
    assert err.value.to_dict()["server"] == silent_server and err.value.to_dict()["deadline_s"] == 1.5
    # callers that caught a hung server as unreachable (or as exhausted retries / a timeout) still catch it
    assert isinstance(err.value, (K8sUnreachable)) and isinstance(err.value, K8sRetriesExhausted) and isinstance(err.value, K8sTimeout)


def test_retries_stop_at_the_deadline(silent_server):
    kube = client_from_params({"host": silent_server, "request_timeout_s": 0.4, "retries": 50, "retry_backoff_s": 0.05, "deadline_s": 2})
    read = kube.core.read_node
    started = time.monotonic()
    with pytest.raises(K8sDeadlineExceeded) as err:
        kube.call("get", "nodes", read, "gpu-0")
    elapsed = time.monotonic() - started
    assert elapsed < 2 + SLACK_S
    assert 2 <= err.value.attempts < 10 and kube.stats["get nodes"] == err.value.attempts
    assert f"{err.value.attempts} attempt(s)" in str(err.value) and "get nodes" in str(err.value)


def test_the_defaults_bound_a_hung_server_at_120_s_not_291_s():
    """Deterministic: a fake clock; every attempt "hangs" for the whole read timeout it was given."""
    now = [1000.0]
    timeouts: list[float] = []

    def hung(**kwargs: Any) -> None:
        timeouts.append(kwargs["_request_timeout"])
        now[0] += kwargs["_request_timeout"]
        raise urllib3.exceptions.ReadTimeoutError(None, "/api/v1/nodes", "Read timed out.")

    def sleep(seconds: float) -> None:
        now[0] += seconds

    kube = KubeClient(auth_from_params({"host": "https://api.example:6443"}), sleep=sleep, clock=lambda: now[0])
    with pytest.raises(K8sDeadlineExceeded) as err:
        kube.call("list", "nodes", hung, _request_timeout=kube.auth.request_timeout_s)
    assert kube.auth.deadline_s == 120.0
    assert err.value.elapsed_s <= 120.0 and now[0] - 1000.0 <= 120.0
    assert timeouts[:3] == [30.0, 30.0, 30.0] and timeouts[-1] < 30.0, "the last attempt only gets the time left"
    assert "https://api.example:6443" in str(err.value) and "Read timed out" in str(err.value)


def test_deadline_zero_keeps_the_old_retry_count():
    now = [0.0]

    def hung(**kwargs: Any) -> None:
        now[0] += kwargs["_request_timeout"]
        raise urllib3.exceptions.ReadTimeoutError(None, "/x", "Read timed out.")

    kube = KubeClient(K8sAuth(host="https://api.example:6443", retries=2, deadline_s=0), sleep=lambda s: None, clock=lambda: now[0])
    with pytest.raises(K8sUnreachable) as err:
        kube.call("list", "nodes", hung, _request_timeout=30.0)
    assert not isinstance(err.value, K8sDeadlineExceeded) and "3 attempt(s)" in str(err.value) and now[0] == 90.0


def test_a_failing_server_stops_at_the_deadline_with_its_last_status(k8s_emulator):
    """Emulator-only (fault injection): 503 on every request, long backoff; the deadline ends the retries."""
    k8s_emulator.faults.set("/api/v1/nodes", error_rate=1.0, error_code=503)
    kube = client_from_params({"kubeconfig": k8s_emulator.kubeconfig_path, "retries": 20, "retry_backoff_s": 0.4, "deadline_s": 1.0})
    list_node = kube.core.list_node
    started = time.monotonic()
    with pytest.raises(K8sDeadlineExceeded) as err:
        kube.call("list", "nodes", list_node)
    assert time.monotonic() - started < 1.0 + SLACK_S
    assert err.value.status == 503 and "503" in str(err.value) and k8s_emulator.url in str(err.value)


# ---------------------------------------------------------------- 2. names

_LABEL = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
_NAMES = st.lists(_LABEL, min_size=1, max_size=3).map(".".join)
#: whitespace and control characters: C0, DEL, C1, Unicode spaces, line/paragraph separators, zero-width and BOM
_BAD = st.sampled_from(["\n", "\r", "\t", "\x0b", "\x0c", " ", "\x00", "\x1b", "\x7f", "\x85", "\xa0", "\u2028", "\u2029",
                        "\u200b", "\ufeff", "\u3000"])


@st.composite
def _spoiled(draw: Any) -> tuple[str, str, str, str]:
    """A valid name and the same name with a bad character at its start, its end or inside: (clean, spoiled, bad, where)."""
    name = draw(_NAMES)
    bad = draw(_BAD)
    where = draw(st.sampled_from(["start", "end", "inside"]))
    if where == "inside" and len(name) < 2:
        where = "start"
    if where == "start":
        return name, bad + name, bad, where
    if where == "end":
        return name, name + bad, bad, where
    cut = draw(st.integers(min_value=1, max_value=len(name) - 1))
    return name, name[:cut] + bad + name[cut:], bad, where


#: plain spaces that are legitimate where the value sits: around a selector's operators and set items (selector syntax),
#: inside a holder (free text such as "ops bot")
_SPACE_OK = {"selector value": ("start",), "selector set item": ("start", "end"), "selector key": ("end",), "node_lock holder": ("inside",)}


def _validators(name: str) -> list[tuple[str, Any]]:
    """Every place a name from a user or an alert is validated, as (what, callable taking the value)."""
    dashed = name.replace(".", "-")
    return [
        ("validate_node_name", validate_node_name),
        ("validate_subdomain", validate_subdomain),
        ("validate_namespace", lambda v: validate_namespace(v.replace(".", "-"))),
        ("validate_label_key", validate_label_key),
        ("validate_label_key prefix", lambda v: validate_label_key(v + "/gpu")),
        ("validate_label_value", lambda v: validate_label_value(v.replace(".", "-"))),
        ("selector key", lambda v: validate_label_selector(v + "=true")),
        ("selector value", lambda v: validate_label_selector("nvidia.com/gpu.product=" + v.replace(".", "-"))),
        ("selector set item", lambda v: validate_label_selector(f"zone in ({dashed}, {v.replace('.', '-')}),gpu")),
        ("node_lock node", lambda v: validate_request({"node": v, "holder": "bot"})),
        ("node_lock holder", lambda v: validate_request({"node": "gpu-0", "holder": v})),
        ("node_quarantine nodes", lambda v: validate_nodes(["gpu-0", v])),
        ("node_quarantine taint key", lambda v: check_request("taint", "r", [{"key": v, "effect": "NoSchedule"}], None)),
        ("node_quarantine taint value", lambda v: check_request("taint", "r", [{"key": "k", "value": v.replace(".", "-"), "effect": "NoSchedule"}],
                                                                None)),
        ("node_quarantine label key", lambda v: check_request("label", "r", None, {v: "x"})),
        ("node_quarantine label value", lambda v: check_request("label", "r", None, {"dsxos.io/x": v.replace(".", "-")})),
    ]


@settings(max_examples=150, deadline=None)
@given(_spoiled())
def test_whitespace_and_control_characters_are_refused_everywhere(case):
    clean, spoiled, bad, where = case
    for what, check in _validators(clean):
        check(clean)  # the clean name passes ...
        if bad == " " and where in _SPACE_OK.get(what, ()):
            continue
        with pytest.raises(K8sInvalidName):  # ... and the spoiled one is refused, never cleaned
            check(spoiled)
            pytest.fail(f"{what} accepted {spoiled!r}")


@pytest.mark.parametrize("value", ["gpu-1\n", "gpu-1\r\n", " gpu-1", "gpu-1\t", "gpu\x00-1"])
def test_refusals_name_the_field_and_the_value(value):
    with pytest.raises(K8sInvalidName) as err:
        validate_node_name(value, "nodes[0]")
    assert err.value.field == "nodes[0]" and err.value.value == value and repr(value) in str(err.value)


def test_selectors_with_inner_spaces_still_pass():
    for selector in ("a=b", "a = b", "a in (x, y)", "a notin (x),!b", "nvidia.com/gpu.present=true,zone!=us-east-1a"):
        assert validate_label_selector(selector) == selector


@pytest.mark.parametrize("selector", ["a=b\n", " a=b", "a=b ", "a=b,\nc=d", "a in (x,\ty)", "a=\u00a0b", "a=b\x00"])
def test_selectors_with_edge_whitespace_or_control_characters_are_refused(selector):
    with pytest.raises(K8sInvalidName) as err:
        validate_label_selector(selector)
    assert err.value.value == selector


# ---------------------------------------------------------------- 3. long node names and their locks


def _long_name(length: int, seed: str = "n") -> str:
    """A valid node name of exactly ``length`` characters (labels of 50, joined by '.')."""
    body = ""
    while len(body) < length:
        body += ("." if body else "") + (seed + "x" * 49)[:50]
    body = body[:length]
    return body[:-1] + "z" if body.endswith((".", "-")) else body


@pytest.mark.parametrize("length", [63, 64, 236, 237, 244, 253])
def test_long_node_names_get_valid_lease_names(length):
    node = validate_node_name(_long_name(length))
    name = lease_name_for(node)
    assert validate_subdomain(name) == name and len(name) <= 253
    if length <= 236:
        assert name == LEASE_PREFIX + node, "short names stay readable (and keep the lock names taken so far)"
    else:
        assert len(name) == 253 and name.startswith(LEASE_PREFIX + node[:200])


_SUBDOMAIN_CHARS = string.ascii_lowercase + string.digits


@st.composite
def _long_pair(draw: Any) -> tuple[str, str]:
    """Two distinct valid node names of 237..253 characters sharing a long common start."""
    common = _long_name(draw(st.integers(min_value=236, max_value=251)), draw(st.sampled_from(_SUBDOMAIN_CHARS)))
    tails = draw(st.lists(st.text(alphabet=_SUBDOMAIN_CHARS + "-", min_size=1, max_size=253 - len(common)).filter(
        lambda t: t[-1] != "-"), min_size=2, max_size=2, unique=True))
    return common + tails[0], common + tails[1]


@settings(max_examples=200, deadline=None)
@given(_long_pair())
def test_distinct_long_nodes_never_share_a_lease_name(pair):
    first, second = (validate_node_name(n) for n in pair)
    assert lease_name_for(first) != lease_name_for(second)
    for node in pair:
        assert validate_subdomain(lease_name_for(node))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NAMES, _long_pair())
def test_short_and_long_lease_names_never_collide(short, pair):
    """A short form is at most 252 characters, a hashed one exactly 253: a crafted short node cannot take a long one's lock."""
    for node in pair:
        crafted = lease_name_for(node)[len(LEASE_PREFIX):]  # the node name whose plain lease name would be the hashed one
        assert lease_name_for(crafted) != lease_name_for(node)
    assert lease_name_for(short) == LEASE_PREFIX + short


@pytest.mark.parametrize("length", [64, 244, 253])
def test_a_long_node_can_be_locked_and_found(cluster_kubeconfig, length):
    kube = _kube(cluster_kubeconfig)
    node = _make_node(kube, _long_name(length, uuid.uuid4().hex[:10]))
    taken = NodeLock(kube, validate_request({"node": node, "holder": "alice", "reason": "XID 79"})).run()
    assert taken["changed"] and taken["held"] and taken["lease_name"] == lease_name_for(node)
    lease = kube.to_plain(kube.call("get", "leases", kube.coordination.read_namespaced_lease, lease_name_for(node), "dsxos-system"))
    assert lease["metadata"]["annotations"][ANN_NODE] == node, "the full node name is recorded on the Lease"
    assert LABEL_NODE not in lease["metadata"]["labels"], "a node name over 63 characters is no label value"
    again = NodeLock(kube, validate_request({"node": node, "holder": "alice"})).run()
    assert again["action"] == "renewed"
    released = NodeLock(kube, validate_request({"node": node, "holder": "alice", "state": "release"})).run()
    assert released["action"] == "released"


def test_a_lease_recording_another_node_is_never_taken(cluster_kubeconfig):
    kube = _kube(cluster_kubeconfig)
    node = _make_node(kube, _long_name(244, uuid.uuid4().hex[:10]))
    ensure_namespace(kube, "dsxos-system")
    kube.call("create", "leases", kube.coordination.create_namespaced_lease, "dsxos-system", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {},
        "metadata": {"name": lease_name_for(node), "namespace": "dsxos-system", "annotations": {ANN_NODE: node[:-1] + "q"}}})
    with pytest.raises(NodeLockCollision) as err:
        NodeLock(kube, validate_request({"node": node, "holder": "alice"})).run()
    assert node[:-1] + "q" in str(err.value) and err.value.node == node


# ---------------------------------------------------------------- 4. a lost PATCH response


def _quarantine_params(kubeconfig: str, **kw: Any) -> dict[str, Any]:
    out = {key: spec.get("default") for key, spec in NODE_QUARANTINE.spec.items()}
    out.update(kubeconfig=kubeconfig, retry_backoff_s=0)
    out.update(kw)
    return out


def test_emulator_apply_drop_stores_the_change_and_loses_the_answer(k8s_emulator):
    """Emulator-only: the fault itself."""
    kube = _kube(k8s_emulator.kubeconfig_path, retries=0)
    node = _make_node(kube, _unique())
    k8s_emulator.faults.set(f"/api/v1/nodes/{node}", methods=["PATCH"], apply_drop_rate=1.0, limit=1)
    with pytest.raises(K8sUnreachable):
        kube.call("patch", "nodes", kube.core.patch_node, node, {"spec": {"unschedulable": True}})
    assert _node(kube, node)["spec"]["unschedulable"] is True, "applied although unanswered"
    assert k8s_emulator.faults.injected["apply_drop"] == 1
    kube.call("patch", "nodes", kube.core.patch_node, node, {"spec": {"unschedulable": False}})  # limit reached: served
    assert not _node(kube, node)["spec"].get("unschedulable")


def test_a_cordon_whose_response_was_lost_is_reported_as_ours(k8s_emulator):
    """Emulator-only: the first PATCH is applied and its answer dropped; the client's retry meets 409, the node is
    re-read and needs nothing more. The task made the change, so it must say so."""
    kube = _kube(k8s_emulator.kubeconfig_path)
    node = _make_node(kube, _unique())
    k8s_emulator.faults.set(f"/api/v1/nodes/{node}", methods=["PATCH"], apply_drop_rate=1.0, limit=1)
    result = call_entry(NODE_QUARANTINE, _quarantine_params(k8s_emulator.kubeconfig_path, nodes=[node], action="cordon", reason="XID 79", actor="bot"))
    assert "failed" not in result, result
    assert result["changed"] is True and result["changed_nodes"] == [node]
    outcome = result["nodes"][0]
    assert outcome["status"] == "changed" and outcome["response_lost"] is True
    assert "cordoned (the API server applied our first attempt; its response was lost)" in outcome["message"]
    assert k8s_emulator.faults.injected["apply_drop"] == 1
    obj = _node(kube, node)
    history = json.loads(obj["metadata"]["annotations"][ANN_HISTORY])
    assert obj["spec"]["unschedulable"] is True and len(history) == 1, "applied exactly once"
    assert outcome["history_entry"] == history[0] and history[0]["op"].startswith("op-")

    again = call_entry(NODE_QUARANTINE, _quarantine_params(k8s_emulator.kubeconfig_path, nodes=[node], action="cordon", reason="XID 79", actor="bot"))
    assert again["changed"] is False and again["nodes"][0]["response_lost"] is False, "another task did not make the change"
    assert "already cordoned" in again["nodes"][0]["message"]


def test_a_node_someone_else_cordoned_meanwhile_is_not_claimed(cluster_kubeconfig):
    """Portable (the loss is simulated in the client, not by the server): our PATCH is lost BEFORE it is applied, and
    another actor cordons the node with our reason; the retry meets 409 and nothing is left to do - but the change is
    not ours: changed false."""
    kube = _kube(cluster_kubeconfig)
    node = _make_node(kube, _unique())
    original = _node(kube, node)
    other = QuarantineRequest(action="cordon", reason="XID 79", actor="someone-else", now="2026-01-01T00:00:00.000Z")

    def cordoned_by_someone_else(*args: Any, **kwargs: Any) -> Any:
        """Our PATCH is lost before the server sees it; meanwhile someone else cordons the node."""
        patch_node(kube, node, plan_action(original, other).patch or {}, False)
        raise urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset by peer"))

    calls = {"n": 0}
    real_patch = kube.core.patch_node

    def patch_once_lost(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        return cordoned_by_someone_else(*args, **kwargs) if calls["n"] == 1 else real_patch(*args, **kwargs)

    kube.core.patch_node = patch_once_lost
    report = run_node_action(kube, [node], QuarantineOptions(action="cordon", reason="XID 79", actor="bot"))
    result = report.results[0]
    assert calls["n"] == 3, "ours (lost), someone else's, our retry (409)"
    assert result.changed is False and result.response_lost is False and "already cordoned" in result.message


# ---------------------------------------------------------------- 5. who set the cordon, who gave which reason


def test_two_actors_keep_a_consistent_record(cluster_kubeconfig):
    kube = _kube(cluster_kubeconfig)
    node = _make_node(kube, _unique())
    first = call_entry(NODE_QUARANTINE, _quarantine_params(cluster_kubeconfig, nodes=[node], action="cordon", reason="XID 79", actor="alice"))
    second = call_entry(NODE_QUARANTINE, _quarantine_params(cluster_kubeconfig, nodes=[node], action="cordon", reason="XID 48 too",
                                                            actor="bob"))
    assert first["changed"] and second["changed"]
    annotations = _node(kube, node)["metadata"]["annotations"]
    record = QuarantineRecord.from_json(annotations[ANN_PRIOR], node)
    assert record.applied_by == {"cordon": "alice"}, "who set the cordon"
    assert (record.reason, record.actor) == ("XID 48 too", "bob"), "the current reason with the actor who gave it"
    assert [(r["reason"], r["actor"]) for r in record.reasons] == [("XID 79", "alice"), ("XID 48 too", "bob")]
    history = json.loads(annotations[ANN_HISTORY])
    assert [(h["actor"], h["reason"]) for h in history] == [("alice", "XID 79"), ("bob", "XID 48 too")]


def test_record_from_an_older_version_is_read_and_not_rewritten_alone():
    old = json.dumps({"prior": {"unschedulable": False, "taints": [], "labels": {}}, "applied": {"cordon": True, "taints": [], "labels": []},
                      "reason": "XID 79", "actor": "alice", "since": "2026-01-01T00:00:00.000Z"})
    node = {"metadata": {"name": "gpu-0", "resourceVersion": "3", "labels": {"dsxos.io/quarantine": "quarantined"},
                         "annotations": {ANN_PRIOR: old}}, "spec": {"unschedulable": True}}
    record = QuarantineRecord.from_json(old, "gpu-0")
    assert record.reasons == [{"reason": "XID 79", "actor": "alice", "time": "2026-01-01T00:00:00.000Z"}]
    same = plan_action(node, QuarantineRequest(action="cordon", reason="XID 79", actor="bob"))
    assert same.changed is False, "the same reason again is no change, whatever the record's format"


# ---------------------------------------------------------------- 6. malformed kubeconfigs

_CLUSTER = 'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\n'
KUBECONFIGS = {
    "bad-yaml": (b"apiVersion: v1\nclusters: [\n", "malformed yaml"),
    "a-list": (b"- apiVersion: v1\n- kind: Config\n", "must be a yaml mapping"),
    "binary": (bytes(range(256)) * 4, "not utf-8"),
    "empty": (b"", "empty"),
    "no-current-context": ((_CLUSTER + "contexts: [{name: x, context: {cluster: c, user: u}}]\n").encode(), "no current-context"),
    "context-without-cluster": ((_CLUSTER + "contexts: [{name: x, context: {cluster: nope, user: u}}]\ncurrent-context: x\n").encode(),
                                "cluster 'nope'"),
    "unknown-current-context": ((_CLUSTER + "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: y\n").encode(),
                                "current-context 'y'"),
    "cluster-without-server": (b"clusters: [{name: c, cluster: {}}]\ncontexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
                               "no server"),
    "contexts-not-a-list": (b"contexts: {x: 1}\ncurrent-context: x\n", "contexts must be a list"),
}


@pytest.mark.parametrize("case", sorted(KUBECONFIGS))
def test_a_malformed_kubeconfig_is_named_by_the_module(tmp_path, case):
    content, needle = KUBECONFIGS[case]
    path = tmp_path / f"{case}.kubeconfig"
    path.write_bytes(content)
    with pytest.raises(K8sConfigError) as err:
        check_kubeconfig(str(path))
    assert str(path) in str(err.value) and err.value.file == str(path)
    for entry, params in ((NODE_QUARANTINE, {"nodes": ["gpu-0"], "action": "cordon", "reason": "r"}),
                          (NODE_LOCK, {"node": "gpu-0", "holder": "bot"})):
        full = {key: spec.get("default") for key, spec in entry.spec.items()}
        full.update(params, kubeconfig=str(path))
        result = call_entry(entry, full)
        assert result["failed"] is True, result
        assert str(path) in result["msg"] and needle in result["msg"].lower(), result["msg"]
        assert result["error"]["error"] == "K8sConfigError" and result["error"]["file"] == str(path)
        assert "Module failed" not in result["msg"] and "Traceback" not in result["msg"]
