# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""evict_pod: which 404 means "already gone" and which one means "our earlier attempt evicted it".

A retried eviction meets 404 when the pod is gone. Whether that is our doing depends on the earlier attempts: one that
may have been applied without our hearing it (a lost answer, a 5xx) evicted the pod; a refused connection, a 429 or a
dry run never did. A stand-in client with the retry shape of ``KubeClient.call`` replays each sequence exactly.
"""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import translate_api_exception
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.drain_policy import PodDecision
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.eviction_scheduler import evict_pod

SERVERS = itertools.count()


class NewConnectionError(OSError):
    """Named like urllib3's: the connection was refused, the request never left."""


def api_error(status: int) -> ApiException:
    return ApiException(status=status, reason={404: "Not Found", 429: "Too Many Requests", 503: "Service Unavailable"}[status])


class StubClient:  # pylint: disable=too-few-public-methods
    """Answers the eviction POSTs with ``outcomes`` (an exception to raise, or None for accepted), retrying like
    ``KubeClient.call``: 429, 5xx and connection errors are retried, anything else is translated and raised."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.posts = 0
        self.server = "https://stub-%d" % next(SERVERS)  # evict_pod remembers the Eviction version per server
        self.auth = SimpleNamespace(request_timeout_s=5)
        self.core = SimpleNamespace(create_namespaced_pod_eviction=self._post)

    def _post(self, *_args, **_kwargs):
        self.posts += 1
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome

    def call(self, verb, resource, fn):
        while True:
            try:
                return fn()
            except ApiException as exc:
                if exc.status in (429, 500, 502, 503, 504) and self.outcomes:
                    continue
                raise translate_api_exception(exc, verb, resource, self.server) from None
            except OSError:
                if self.outcomes:
                    continue
                raise
            except ProtocolError:
                if self.outcomes:
                    continue
                raise


def decision():
    return PodDecision(namespace="ml", name="w-0", uid="u-1", action="evict", reason="test")


@pytest.mark.parametrize("first", [api_error(503), ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))],
                         ids=["5xx", "lost-answer"])
def test_a_404_after_an_attempt_that_may_have_been_applied_is_our_eviction(first):
    client = StubClient([first, api_error(404)])
    assert evict_pod(client, decision(), None, False) is None
    assert client.posts == 2


@pytest.mark.parametrize("first", [api_error(429), NewConnectionError("Connection refused")], ids=["throttled", "refused-connection"])
def test_a_404_after_attempts_that_never_applied_anything_means_gone(first):
    client = StubClient([first, api_error(404)])
    with pytest.raises(K8sNotFound):
        evict_pod(client, decision(), None, False)
    assert client.posts == 2


def test_a_first_404_means_gone():
    with pytest.raises(K8sNotFound):
        evict_pod(StubClient([api_error(404)]), decision(), None, False)


def test_a_dry_run_never_evicted_anything_so_its_404_means_gone():
    client = StubClient([api_error(503), api_error(404)])
    with pytest.raises(K8sNotFound):
        evict_pod(client, decision(), None, True)
    assert client.posts == 2
