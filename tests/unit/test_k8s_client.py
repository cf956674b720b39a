# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Kubernetes access layer (module_utils/kube/client.py, kube/names.py) against the emulator."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import (
    K8sAuth, K8sConfigError, K8sConflict, K8sForbidden, K8sNotFound, K8sRetriesExhausted, K8sUnauthorized,
    K8sUnreachable, KubeClient, TokenBucket, auth_from_params, client_from_params,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import (
    K8sInvalidName, validate_label_key, validate_label_selector, validate_label_value, validate_namespace, validate_node_name,
)
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name


def _client(emu, **overrides):
    params = {"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0.0}
    params.update(overrides)
    return client_from_params(params)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------- options


def test_auth_defaults_match_the_contract():
    auth = auth_from_params({})
    assert (auth.qps, auth.burst, auth.retries, auth.retry_backoff_s, auth.request_timeout_s, auth.deadline_s) == (50.0, 100, 8, 0.2, 30.0, 120.0)
    assert auth.in_cluster is False and auth.validate_certs is None
    assert set(K8S_AUTH_SPEC) == {"kubeconfig", "context", "host", "api_key", "ca_cert", "validate_certs", "in_cluster", "qps", "burst",
                                  "retries", "retry_backoff_s", "request_timeout_s", "deadline_s"}
    assert K8S_AUTH_SPEC["deadline_s"] == {"type": "float", "default": 120.0}
    assert K8S_AUTH_SPEC["api_key"]["no_log"] is True


def test_api_key_is_not_in_repr():
    auth = auth_from_params({"host": "https://api.example:6443", "api_key": "s3cr3t-token"})
    assert "s3cr3t-token" not in repr(auth)


@pytest.mark.parametrize("params, needle", [
    ({"qps": -1}, "qps"), ({"burst": 0}, "burst"), ({"retries": -2}, "retries"), ({"request_timeout_s": 0}, "request_timeout_s"),
    ({"deadline_s": -1}, "deadline_s"),
    ({"host": "api.example:6443"}, "host"), ({"in_cluster": True, "kubeconfig": "/x"}, "in_cluster"), ({"retries": "many"}, "retries"),
])
def test_bad_options_name_the_option(params, needle):
    with pytest.raises(K8sConfigError) as err:
        auth_from_params(params)
    assert needle in str(err.value)


def test_missing_kubeconfig_file_is_a_clear_error(tmp_path):
    missing = str(tmp_path / "nope" / "kubeconfig")
    with pytest.raises(K8sConfigError) as err:
        KubeClient(K8sAuth(kubeconfig=missing))
    assert missing in str(err.value)


def test_unknown_context_is_a_clear_error(k8s_emulator):
    with pytest.raises(K8sConfigError) as err:
        _client(k8s_emulator, context="no-such-context")
    assert "no-such-context" in str(err.value)


# ---------------------------------------------------------------- calls


def test_get_and_stats(k8s_emulator):
    names = k8s_emulator.add_nodes(2, name_prefix="gpu-")
    kube = _client(k8s_emulator)
    nodes = kube.call("list", "nodes", kube.core.list_node)
    assert sorted(n.metadata.name for n in nodes.items) == names
    node = kube.call("get", "nodes", kube.core.read_node, "gpu-1")
    assert kube.to_plain(node)["metadata"]["labels"]["nvidia.com/gpu.count"] == "8"
    assert kube.stats == {"list nodes": 1, "get nodes": 1}
    assert k8s_emulator.api_calls("get", "nodes") == 1


def test_not_found_names_the_object(k8s_emulator):
    kube = _client(k8s_emulator)
    with pytest.raises(K8sNotFound) as err:
        kube.call("get", "nodes", kube.core.read_node, "gpu-404")
    assert "gpu-404" in str(err.value) and err.value.status == 404
    assert err.value.to_dict()["error"] == "K8sNotFound"


def test_conflict_on_create_twice(k8s_emulator):
    kube = _client(k8s_emulator)
    body = {"metadata": {"name": "cm1"}, "data": {"a": "b"}}
    kube.call("create", "configmaps", kube.core.create_namespaced_config_map, "default", body)
    with pytest.raises(K8sConflict) as err:
        kube.call("create", "configmaps", kube.core.create_namespaced_config_map, "default", body)
    assert "cm1" in str(err.value)


def test_429_is_retried_and_succeeds(k8s_emulator):
    k8s_emulator.add_nodes(1, name_prefix="gpu-")
    k8s_emulator.faults.set("/api/v1/nodes", throttle_rate=0.6, retry_after_s=0)
    kube = _client(k8s_emulator, retries=30)
    for dummy in range(10):
        assert kube.call("get", "nodes", kube.core.read_node, "gpu-0").metadata.name == "gpu-0"
    assert k8s_emulator.faults.injected["throttle"] > 0
    assert kube.retries_done == k8s_emulator.faults.injected["throttle"]
    assert kube.stats["get nodes"] == 10 + kube.retries_done


def test_retry_after_is_honoured(k8s_emulator):
    k8s_emulator.add_nodes(1, name_prefix="gpu-")
    k8s_emulator.faults.set("/api/v1/nodes", throttle_rate=1.0, retry_after_s=1)
    slept = []
    kube = KubeClient(auth_from_params({"kubeconfig": k8s_emulator.kubeconfig_path, "retries": 2, "retry_backoff_s": 0.01}),
                      sleep=slept.append)
    with pytest.raises(K8sRetriesExhausted):
        kube.call("get", "nodes", kube.core.read_node, "gpu-0")
    assert slept == [1.0, 1.0]


def test_backoff_is_exponential_and_capped():
    kube = KubeClient(K8sAuth(host="http://127.0.0.1:1", retry_backoff_s=0.5))
    assert [kube.backoff_s(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 4.0, 5.0]
    assert kube.backoff_s(1, retry_after=3) == 3
    assert kube.backoff_s(1, retry_after=60) == 5.0


def test_exhausted_retries_name_verb_resource_attempts_and_status(k8s_emulator):
    k8s_emulator.add_nodes(1, name_prefix="gpu-")
    k8s_emulator.faults.set("/api/v1/nodes", error_rate=1.0, error_code=503)
    kube = _client(k8s_emulator, retries=3)
    with pytest.raises(K8sRetriesExhausted) as err:
        kube.call("patch", "nodes", kube.core.patch_node, "gpu-0", {"spec": {"unschedulable": True}})
    text = str(err.value)
    assert "patch nodes" in text and "4 attempt(s)" in text and "503" in text
    assert err.value.attempts == 4 and err.value.status == 503
    assert k8s_emulator.api_calls("patch", "nodes") == 0  # faults answer before the request is counted as served
    assert kube.stats["patch nodes"] == 4


def test_403_names_verb_resource_and_user(k8s_emulator):
    k8s_emulator.add_nodes(1, name_prefix="gpu-")
    k8s_emulator.access.add_token("sa-token-123", "system:serviceaccount:ops:drainer")
    k8s_emulator.access.deny(verbs=["patch"], resources=["nodes"], users=["system:serviceaccount:ops:drainer"])
    kube = _client(k8s_emulator, api_key="sa-token-123")
    assert kube.call("get", "nodes", kube.core.read_node, "gpu-0").metadata.name == "gpu-0"
    with pytest.raises(K8sForbidden) as err:
        kube.call("patch", "nodes", kube.core.patch_node, "gpu-0", {"spec": {"unschedulable": True}})
    text = str(err.value)
    assert "patch nodes 'gpu-0'" in text and "system:serviceaccount:ops:drainer" in text
    assert err.value.user == "system:serviceaccount:ops:drainer"
    assert kube.retries_done == 0


def test_token_auth_with_host_only(k8s_emulator_factory):
    emu = k8s_emulator_factory(require_auth=True, token="admin-token-abc")
    emu.add_nodes(1, name_prefix="gpu-")
    good = KubeClient(auth_from_params({"host": emu.url, "api_key": "admin-token-abc"}))
    assert [n.metadata.name for n in good.call("list", "nodes", good.core.list_node).items] == ["gpu-0"]
    bad = KubeClient(auth_from_params({"host": emu.url, "api_key": "wrong-token"}))
    with pytest.raises(K8sUnauthorized) as err:
        bad.call("list", "nodes", bad.core.list_node)
    assert emu.url in str(err.value) and "wrong-token" not in str(err.value)


def test_unreachable_server_names_the_url():
    url = f"http://127.0.0.1:{_free_port()}"
    kube = KubeClient(auth_from_params({"host": url, "retries": 2, "retry_backoff_s": 0.0}))
    with pytest.raises(K8sUnreachable) as err:
        kube.call("list", "nodes", kube.core.list_node)
    assert url in str(err.value) and "3 attempt(s)" in str(err.value)
    assert kube.retries_done == 2


def test_dropped_connections_are_retried(k8s_emulator):
    k8s_emulator.add_nodes(1, name_prefix="gpu-")
    k8s_emulator.faults.set("/api/v1/nodes", drop_rate=0.5)
    kube = _client(k8s_emulator, retries=30)
    for dummy in range(6):
        assert kube.call("get", "nodes", kube.core.read_node, "gpu-0").metadata.name == "gpu-0"
    assert k8s_emulator.faults.injected["drop"] > 0 and kube.retries_done >= k8s_emulator.faults.injected["drop"]


def test_qps_limiter_paces_requests(k8s_emulator):
    kube = _client(k8s_emulator, qps=40, burst=5)
    start = time.monotonic()
    for dummy in range(25):
        kube.call("get", "namespaces", kube.core.read_namespace, "default")
    elapsed = time.monotonic() - start
    # 5 immediately, then 20 at 40/s: never faster than 0.5 s, and the limiter never waits more than that (on a loaded
    # machine the requests themselves take the time and the limiter waits less; no upper bound on the wall clock, which
    # another process on the machine decides). The exact waits are checked on a fake clock below.
    assert elapsed >= 0.5 - 0.05, elapsed
    assert 0.0 <= kube.limiter.waited_s <= 0.5 + 0.05, kube.limiter.waited_s
    assert elapsed >= kube.limiter.waited_s


def test_token_bucket_is_thread_safe():
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=2, clock=lambda: now[0], sleep=lambda s: None)
    waits = []
    lock = threading.Lock()

    def take():
        wait = bucket.reserve()
        with lock:
            waits.append(wait)
    threads = [threading.Thread(target=take) for dummy in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 2 free tokens, then 10 reservations 0.1 s apart
    assert sorted(round(w, 6) for w in waits) == [0.0, 0.0] + [round(0.1 * i, 6) for i in range(1, 11)]


def test_qps_zero_disables_the_limiter():
    bucket = TokenBucket(qps=0, burst=1)
    assert all(bucket.reserve() == 0 for dummy in range(100))


def test_watch_yields_events(k8s_emulator):
    kube = _client(k8s_emulator)

    def later():
        time.sleep(0.2)
        k8s_emulator.add_nodes(1, name_prefix="late-")
    thread = threading.Thread(target=later)
    thread.start()
    seen = []
    for event in kube.watch("nodes", kube.core.list_node, timeout_s=5):
        seen.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "late-0":
            break
    thread.join()
    assert ("ADDED", "late-0") in seen
    assert kube.stats["watch nodes"] == 1


def test_watch_forbidden_is_translated(k8s_emulator):
    k8s_emulator.access.deny(verbs=["watch"], resources=["nodes"])
    kube = _client(k8s_emulator)
    with pytest.raises(K8sForbidden) as err:
        list(kube.watch("nodes", kube.core.list_node, timeout_s=2))
    assert "watch nodes" in str(err.value)


# ---------------------------------------------------------------- names


@pytest.mark.parametrize("name", ["gpu-0", "ip-10-0-0-5.ec2.internal", "a", "a" * 63 + "." + "b" * 63])
def test_valid_node_names(name):
    assert validate_node_name(name) == name


@pytest.mark.parametrize("name", ["", "GPU-0", "gpu_0", "-gpu", "gpu-", "gpu..0", "gpu 0", "gpu;rm -rf /", "$(id)", "a" * 254,
                                  None, 7, "nöde"])
def test_invalid_node_names_name_the_value(name):
    with pytest.raises(K8sInvalidName) as err:
        validate_node_name(name)
    assert repr(name)[:40] in str(err.value) or "must be a string" in str(err.value)
    assert err.value.field == "node"


def test_namespace_and_labels():
    assert validate_namespace("dsxos-system") == "dsxos-system"
    with pytest.raises(K8sInvalidName):
        validate_namespace("a.b")
    assert validate_label_key("nvidia.com/gpu.product") == "nvidia.com/gpu.product"
    assert validate_label_key("app") == "app"
    for bad in ("/x", "nvidia.com/", "Bad_Prefix/x", "x/y/z", "a" * 64):
        with pytest.raises(K8sInvalidName):
            validate_label_key(bad)
    assert validate_label_value("") == ""
    assert validate_label_value("NVIDIA-H100-80GB-HBM3") == "NVIDIA-H100-80GB-HBM3"
    for bad in ("-x", "a b", "a" * 64, 5):
        with pytest.raises(K8sInvalidName):
            validate_label_value(bad)


def test_label_selectors():
    for good in ("nvidia.com/gpu.present=true", "a==b,c!=d", "!nvidia.com/gpu.present", "zone in (a, b),tier notin (x)", "a"):
        assert validate_label_selector(good) == good
    for bad in ("a=b;id", "a in (b", "a=$(x)", "a=b,,c=d", "!a=b"):
        with pytest.raises(K8sInvalidName):
            validate_label_selector(bad)


def test_kube_client_satisfies_the_kube_api_protocol(k8s_emulator):
    """Every member of the KubeApi Protocol exists on a built KubeClient (attributes and callables alike)."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi  # pylint: disable=import-outside-toplevel
    kube = _client(k8s_emulator)
    members = set(KubeApi.__annotations__) | {name for name in vars(KubeApi) if not name.startswith("_")}
    assert {"core", "apps", "policy", "coordination", "custom", "version", "call", "watch", "to_plain", "stats"} <= members
    missing = sorted(name for name in members if not hasattr(kube, name))
    assert not missing, "KubeClient lacks %s" % missing
    for name in ("call", "watch", "to_plain", "close"):
        assert callable(getattr(kube, name))
    assert isinstance(kube, KubeApi)
    kube.close()
