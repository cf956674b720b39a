# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""node_lock: Lease-based per-node lock against the emulator (acquire/renew/release, expiry, waits, 409 races, check mode)."""
from __future__ import annotations

import datetime
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import K8sForbidden, client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import K8sInvalidName
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import (
    ANN_PREVIOUS, ANN_PURPOSE, ANN_REASON, ANN_RELEASED_BY, NodeLock, NodeLockHeld, NodeLockNotHeld, format_micro_time, validate_request,
    validate_wait_for_purposes,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import run_node_lock
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

LEASE = ("coordination.k8s.io/v1", "Lease", "dsxos-node-lock-gpu-0", "dsxos-system")


@pytest.fixture(autouse=True)
def _node_exists(request):
    """Locks are only taken for nodes that exist: give every emulator-backed test its node gpu-0."""
    if "k8s_emulator" in request.fixturenames:
        request.getfixturevalue("k8s_emulator").add_nodes(1, "h100-eks", name_prefix="gpu-")


def params(emu, **kw):
    out = {"kubeconfig": emu.kubeconfig_path, "node": "gpu-0", "holder": "alice", "purpose": "drain", "reason": "XID 79", "duration_s": 60,
           "retry_backoff_s": 0}
    out.update(kw)
    return out


def lease(emu):
    return emu.api.get(*LEASE[:3], namespace=LEASE[3])


def test_acquire_creates_namespace_and_lease(k8s_emulator):
    result = run_node_lock(params(k8s_emulator))
    assert result["changed"] and result["action"] == "created" and result["held"] and result["holder"] == "alice"
    obj = lease(k8s_emulator)
    assert obj["spec"]["holderIdentity"] == "alice" and obj["spec"]["leaseDurationSeconds"] == 60
    assert obj["metadata"]["annotations"][ANN_PURPOSE] == "drain" and obj["metadata"]["annotations"][ANN_REASON] == "XID 79"
    assert k8s_emulator.api.find("v1", "Namespace", "dsxos-system") is not None
    assert result["expires_at"] is not None


def test_reacquire_by_holder_renews(k8s_emulator):
    first = run_node_lock(params(k8s_emulator))
    second = run_node_lock(params(k8s_emulator))
    assert second["action"] == "renewed" and second["changed"] is True
    assert second["expires_at"] >= first["expires_at"]
    assert lease(k8s_emulator)["spec"].get("leaseTransitions", 0) == 0


def test_held_by_other_fails_naming_holder_and_expiry(k8s_emulator):
    run_node_lock(params(k8s_emulator))
    with pytest.raises(NodeLockHeld) as err:
        run_node_lock(params(k8s_emulator, holder="bob"))
    text = str(err.value)
    assert "'alice'" in text and "until 20" in text and "drain" in text and "XID 79" in text
    assert err.value.holder == "alice" and err.value.expires_at
    assert lease(k8s_emulator)["spec"]["holderIdentity"] == "alice"


def test_expired_lease_is_taken_over_with_previous_holder(k8s_emulator):
    run_node_lock(params(k8s_emulator))
    client = client_from_params(params(k8s_emulator))
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=120)
    result = NodeLock(client, validate_request(params(k8s_emulator, holder="bob")), clock=lambda: later).run()
    assert result["action"] == "taken_over" and result["previous_holder"] == "alice" and result["holder"] == "bob"
    obj = lease(k8s_emulator)
    assert obj["metadata"]["annotations"][ANN_PREVIOUS] == "alice" and obj["spec"]["leaseTransitions"] == 1


def test_wait_for_expiry_then_take_over(k8s_emulator):
    """The wait runs on an injected clock: each poll's sleep moves it forward, so no wall-clock second is spent."""
    run_node_lock(params(k8s_emulator, duration_s=1))
    now = [datetime.datetime.now(datetime.timezone.utc)]
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += datetime.timedelta(seconds=seconds)
    with client_from_params(params(k8s_emulator)) as client:
        request = validate_request(params(k8s_emulator, holder="bob", wait_timeout_s=5, poll_interval_s=0.1))
        result = NodeLock(client, request, clock=lambda: now[0], sleep=sleep).run()
    assert result["action"] == "taken_over" and 0 < result["waited_s"] < 5
    assert result["previous_holder"] == "alice" and 0.9 <= sum(sleeps) <= 1.2 and set(sleeps) == {0.1}


def test_wait_timeout_fails(k8s_emulator):
    run_node_lock(params(k8s_emulator, duration_s=60))
    with pytest.raises(NodeLockHeld, match="waited"):
        run_node_lock(params(k8s_emulator, holder="bob", wait_timeout_s=0.3, poll_interval_s=0.1))


def test_release_semantics(k8s_emulator):
    absent = run_node_lock(params(k8s_emulator, state="release"))
    assert absent["changed"] is False and absent["action"] == "absent"
    run_node_lock(params(k8s_emulator))
    foreign = run_node_lock(params(k8s_emulator, state="release", holder="bob"))
    assert foreign["changed"] is False and foreign["action"] == "held_by_other" and "force" in foreign["message"]
    released = run_node_lock(params(k8s_emulator, state="release"))
    assert released["changed"] and released["action"] == "released" and released["holder"] is None and not released["held"]
    assert "holderIdentity" not in lease(k8s_emulator)["spec"]
    again = run_node_lock(params(k8s_emulator, state="release"))
    assert again["changed"] is False and again["action"] == "not_held"
    taken = run_node_lock(params(k8s_emulator, holder="bob"))
    assert taken["action"] == "acquired" and taken["previous_holder"] is None
    forced = run_node_lock(params(k8s_emulator, state="release", force=True, reason="stuck automation"))
    assert forced["action"] == "force_released" and forced["previous_holder"] == "bob"
    annotations = lease(k8s_emulator)["metadata"]["annotations"]
    assert annotations[ANN_RELEASED_BY] == "alice" and annotations[ANN_PREVIOUS] == "bob" and annotations[ANN_REASON] == "stuck automation"


def test_renew_requires_holding(k8s_emulator):
    with pytest.raises(NodeLockNotHeld, match="does not exist"):
        run_node_lock(params(k8s_emulator, state="renew"))
    run_node_lock(params(k8s_emulator))
    with pytest.raises(NodeLockNotHeld, match="held by 'alice'"):
        run_node_lock(params(k8s_emulator, state="renew", holder="bob"))
    renewed = run_node_lock(params(k8s_emulator, state="renew", duration_s=120))
    assert renewed["action"] == "renewed" and lease(k8s_emulator)["spec"]["leaseDurationSeconds"] == 120


def test_check_mode_writes_nothing(k8s_emulator):
    before = k8s_emulator.store.resource_version
    result = run_node_lock(params(k8s_emulator), check_mode=True)
    assert result["changed"] and result["action"] == "created" and "check mode" in result["message"]
    assert k8s_emulator.store.resource_version == before
    assert k8s_emulator.api.find(*LEASE[:3], namespace=LEASE[3]) is None
    run_node_lock(params(k8s_emulator))
    before = k8s_emulator.store.resource_version
    assert run_node_lock(params(k8s_emulator, state="release"), check_mode=True)["action"] == "released"
    with pytest.raises(NodeLockHeld):
        run_node_lock(params(k8s_emulator, holder="bob", wait_timeout_s=10), check_mode=True)
    assert k8s_emulator.store.resource_version == before


def test_conflict_is_retried_after_re_read(k8s_emulator):
    run_node_lock(params(k8s_emulator))
    client = client_from_params(params(k8s_emulator))
    lock = NodeLock(client, validate_request(params(k8s_emulator, state="renew")))
    original = lock._write  # pylint: disable=protected-access
    calls = []

    def racing_write(current, body):
        if not calls:  # someone else writes between our read and our write
            k8s_emulator.api.patch("coordination.k8s.io/v1", "Lease", LEASE[2], {"metadata": {"labels": {"touched": "yes"}}}, LEASE[3])
        calls.append(body["metadata"]["resourceVersion"])
        return original(current, body)
    lock._write = racing_write  # pylint: disable=protected-access
    result = lock.run()
    assert result["action"] == "renewed" and len(calls) == 2 and calls[0] != calls[1]
    assert client.stats["get leases"] == 2
    assert lease(k8s_emulator)["metadata"]["labels"]["touched"] == "yes"


def test_racing_acquirers_get_exactly_one_lock(k8s_emulator):
    k8s_emulator.add_namespace("dsxos-system")
    outcomes = {}

    def take(name):
        try:
            outcomes[name] = run_node_lock(params(k8s_emulator, holder=name))["action"]
        except NodeLockHeld:
            outcomes[name] = "refused"
    threads = [threading.Thread(target=take, args=(f"holder-{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [n for n, action in outcomes.items() if action != "refused"]
    assert len(winners) == 1, outcomes
    assert lease(k8s_emulator)["spec"]["holderIdentity"] == winners[0]


def test_invalid_inputs_are_named():
    for bad in ("GPU_0", "gpu;reboot", "", "a" * 254, "gpu-0\n", " gpu-0"):
        with pytest.raises(K8sInvalidName):
            validate_request({"node": bad, "holder": "x"})
    with pytest.raises(K8sInvalidName, match="holder"):
        validate_request({"node": "gpu-0", "holder": " "})
    with pytest.raises(K8sInvalidName, match="holder"):
        validate_request({"node": "gpu-0", "holder": "bot\n"})
    with pytest.raises(K8sInvalidName, match="duration_s"):
        validate_request({"node": "gpu-0", "holder": "x", "duration_s": 0})
    with pytest.raises(K8sInvalidName, match="namespace"):
        validate_request({"node": "gpu-0", "holder": "x", "namespace": "Bad_NS"})


def test_rbac_refusal_is_clear(k8s_emulator):
    k8s_emulator.access.deny(verbs=["create", "update"], resources=["leases"])
    with pytest.raises(K8sForbidden, match="create leases"):
        run_node_lock(params(k8s_emulator))


def test_micro_time_format():
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.timezone.utc)
    assert format_micro_time(moment) == "2026-01-02T03:04:05.006000Z"


# ---------------------------------------------------------------------------------------------------- waiting for short holders only


def _waiting_lock(emu, holder, wait_for, on_sleep):
    """A NodeLock whose sleeps are counted and call ``on_sleep(n)`` (no wall-clock second is spent)."""
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        on_sleep(len(sleeps))
    client = client_from_params(params(emu))
    request = validate_request(params(emu, holder=holder, purpose="sentinel", wait_timeout_s=0, poll_interval_s=0.01,
                                      wait_for_purposes=wait_for))
    return NodeLock(client, request, sleep=sleep), sleeps, client


def test_a_release_holder_is_waited_for_and_a_remediation_run_is_not(k8s_emulator):
    run_node_lock(params(k8s_emulator, holder="release-run", purpose="sentinel-release", duration_s=600))

    def release_after_two(count):
        if count == 2:
            run_node_lock(params(k8s_emulator, holder="release-run", state="release"))
    lock, sleeps, client = _waiting_lock(k8s_emulator, "second-run", {"sentinel-release": 30}, release_after_two)
    with client:
        result = lock.run()
    assert result["held"] and result["holder"] == "second-run" and len(sleeps) == 2 and result["waited_s"] > 0

    # a remediation run holds it now: the same request fails at once, naming the holder's purpose
    lock, sleeps, client = _waiting_lock(k8s_emulator, "third-run", {"sentinel-release": 30}, lambda count: None)
    with client, pytest.raises(NodeLockHeld) as err:
        lock.run()
    assert sleeps == [] and err.value.purpose == "sentinel" and err.value.to_dict()["purpose"] == "sentinel"
    assert err.value.to_dict()["holder"] == "second-run"


def test_the_wait_follows_the_current_holder(k8s_emulator):
    """A release holder that hands the node to a remediation run meanwhile: the waiter stops at once (no 30 s wait)."""
    run_node_lock(params(k8s_emulator, holder="release-run", purpose="sentinel-release", duration_s=600))

    def hand_over(count):
        if count == 1:
            run_node_lock(params(k8s_emulator, holder="release-run", state="release"))
            run_node_lock(params(k8s_emulator, holder="other-run", purpose="sentinel", duration_s=600))
    lock, sleeps, client = _waiting_lock(k8s_emulator, "second-run", {"sentinel-release": 30}, hand_over)
    with client, pytest.raises(NodeLockHeld) as err:
        lock.run()
    assert len(sleeps) == 1 and err.value.holder == "other-run" and err.value.purpose == "sentinel"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=5), st.integers(), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.one_of(st.text(max_size=8), st.integers()),
                                 st.one_of(st.floats(allow_nan=True), st.integers(-5, 100), st.text(max_size=4), st.booleans(), st.none()),
                                 max_size=3)))
def test_wait_for_purposes_is_pairs_or_an_error_naming_the_field(value):
    try:
        pairs = validate_wait_for_purposes(value)
    except K8sInvalidName as err:
        assert "wait_for_purposes" in str(err) and "wait_for_purposes" in str(err.to_dict())
        return
    assert all(isinstance(p, str) and p and isinstance(s, float) and 0 <= s < float("inf") for p, s in pairs)
    assert list(pairs) == sorted(pairs)
    if isinstance(value, dict):
        assert dict(pairs) == {k: float(v) for k, v in value.items()}


def test_a_short_holder_is_polled_every_half_second_and_any_other_at_the_poll_interval(k8s_emulator):
    """A release ends within seconds: waiting for it polls every SHORT_POLL_S (0.5 s) even with the default 2 s poll
    interval; a holder the caller waits for only through wait_timeout_s is polled at poll_interval_s."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.operate.node_lock import SHORT_POLL_S  # pylint: disable=import-outside-toplevel
    for holder_purpose, expected in (("sentinel-release", SHORT_POLL_S), ("sentinel", 2.0)):
        run_node_lock(params(k8s_emulator, holder="first-run", purpose=holder_purpose, duration_s=600))
        sleeps = []

        def sleep(seconds, seen=sleeps):  # pylint: disable=dangerous-default-value  # the list is this loop's own
            seen.append(seconds)
            if len(seen) == 3:
                run_node_lock(params(k8s_emulator, holder="first-run", state="release"))
        request = validate_request(params(k8s_emulator, holder="second-run", purpose="sentinel", wait_timeout_s=60,
                                          wait_for_purposes={"sentinel-release": 30}))
        with client_from_params(params(k8s_emulator)) as client:
            result = NodeLock(client, request, sleep=sleep).run()
        assert result["held"] and sleeps == [expected] * 3, (holder_purpose, sleeps)
        run_node_lock(params(k8s_emulator, holder="second-run", state="release"))
