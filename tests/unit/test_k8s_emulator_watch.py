# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Watch streams through kubernetes.watch: replay from a resourceVersion, live events, selectors, timeouts, 410 Gone, bookmarks."""
from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)


def _collect(func, count, *args, **kwargs):
    """The first ``count`` events of a watch (stops early instead of waiting for the timeout)."""
    stream = watch.Watch()
    out = []
    for event in stream.stream(func, *args, timeout_seconds=5, **kwargs):
        out.append(event)
        if len(out) == count:
            stream.stop()
            break
    return out


def test_replay_from_resource_version_in_order(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    start_rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "w1"}})
    core.patch_namespaced_config_map("w1", "default", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("w1", "default")
    core.create_namespace({"metadata": {"name": "elsewhere"}})
    core.create_namespaced_config_map("elsewhere", {"metadata": {"name": "other-ns"}})
    events = _collect(core.list_namespaced_config_map, 3, "default", resource_version=start_rv)
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]
    assert events[1]["object"].data == {"k": "v"}
    rvs = [int(e["object"].metadata.resource_version) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(start_rv)
    all_ns = _collect(core.list_config_map_for_all_namespaces, 4, resource_version=start_rv)
    assert [e["object"].metadata.name for e in all_ns] == ["w1", "w1", "w1", "other-ns"]


def test_watch_without_resource_version_starts_with_current_objects(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    for name in ("a", "b"):
        core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    events = _collect(core.list_namespaced_config_map, 2, "default")
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_live_events_and_timeout(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    got: list[tuple[str, str]] = []
    started = time.monotonic()

    def consume() -> None:
        for event in watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2):
            got.append((event["type"], event["object"].metadata.name))
    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.2)
    core.create_namespaced_config_map("default", {"metadata": {"name": "live"}})
    core.delete_namespaced_config_map("live", "default")
    thread.join(10)
    elapsed = time.monotonic() - started
    assert got == [("ADDED", "live"), ("DELETED", "live")]
    assert 1.8 <= elapsed < 9.5, elapsed  # the 2 s server timeout ended the watch, not join(10)


def test_selector_watch_sees_objects_enter_and_leave(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "m", "labels": {"pick": "no"}}})
    core.patch_namespaced_config_map("m", "default", {"metadata": {"labels": {"pick": "yes"}}})
    core.patch_namespaced_config_map("m", "default", {"data": {"x": "1"}})
    core.patch_namespaced_config_map("m", "default", {"metadata": {"labels": {"pick": "no"}}})
    events = list(watch.Watch().stream(core.list_namespaced_config_map, "default", label_selector="pick=yes",
                                       resource_version=rv, timeout_seconds=1))
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]


def test_pods_watch_by_node_field_selector(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    nodes = k8s_emulator.add_nodes(2)
    core = client.CoreV1Api(k8s_client)
    rv = core.list_pod_for_all_namespaces().metadata.resource_version
    k8s_emulator.seed_pods(1, namespace="default")
    events = _collect(core.list_pod_for_all_namespaces, 1, field_selector=f"spec.nodeName={nodes[1]}", resource_version=rv)
    assert [(e["type"], e["object"].spec.node_name) for e in events] == [("ADDED", nodes[1])]


def test_too_old_resource_version_is_410_gone(k8s_emulator_factory):  # pylint: disable=redefined-outer-name
    emu = k8s_emulator_factory(history_size=8)
    core = client.CoreV1Api(config.new_client_from_config(config_file=emu.kubeconfig_path))
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(20):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
    with pytest.raises(ApiException) as exc:
        list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1))
    assert exc.value.status == 410
    fresh = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "after"}})
    assert [e["object"].metadata.name for e in _collect(core.list_namespaced_config_map, 1, "default", resource_version=fresh)] == ["after"]


def test_bookmarks_carry_current_resource_version(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    k8s_emulator.frontend.bookmark_interval_s = 0.2
    core = client.CoreV1Api(k8s_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespace({"metadata": {"name": "noise"}})
    resp = core.list_namespaced_config_map("default", watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                           timeout_seconds=1, _preload_content=False)
    lines = [line for line in resp.data.decode().splitlines() if line]
    assert lines and all('"type":"BOOKMARK"' in line for line in lines)
    assert f'"resourceVersion":"{k8s_emulator.store.resource_version}"' in lines[-1]


def test_many_concurrent_watches_receive_every_event(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    results: list[int] = []
    lock = threading.Lock()

    def consume() -> None:
        api = client.CoreV1Api(client.ApiClient(k8s_client.configuration))
        count = len(_collect(api.list_namespaced_config_map, 25, "default", resource_version=rv))
        with lock:
            results.append(count)
    threads = [threading.Thread(target=consume) for _watch in range(20)]
    for thread in threads:
        thread.start()
    k8s_emulator.wait_for(lambda: k8s_emulator.store.watcher_count() == 20, 5, what="20 watches open")
    for i in range(25):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"x{i}"}})
    for thread in threads:
        thread.join(10)
    assert results == [25] * 20
