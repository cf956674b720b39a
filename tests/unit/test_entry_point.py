# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""call_entry: results pass through, expected failures become task failures with a clear message."""
from __future__ import annotations

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.entry_point import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.k8s_errors import K8sForbidden
from ansible_collections.dsxos.cluster.plugins.module_utils.recipe_errors import RecipeResolveError


def test_result_passes_through_with_changed_default():
    seen = {}

    def entry(params, check_mode, diff):
        seen.update(params=dict(params), check_mode=check_mode, diff=diff)
        return {"value": 1}

    assert call_entry(entry, {"a": 1}, True, True) == {"value": 1, "changed": False}
    assert seen == {"params": {"a": 1}, "check_mode": True, "diff": True}


def test_entry_reported_failure_is_kept():
    assert call_entry(lambda p, c, d: {"failed": True, "msg": "violated"}, {}) == {"failed": True, "msg": "violated", "changed": False}
    assert "failed" not in call_entry(lambda p, c, d: {"failed": False, "changed": True}, {})


@pytest.mark.parametrize("exc, needle", [
    (RecipeResolveError("unknown value", field="criteria.accelerator", value="h1000"), "h1000"),
    (K8sForbidden("patch nodes 'gpu-1': forbidden (403)", verb="patch", resource="nodes"), "patch nodes"),
])
def test_expected_errors_become_failures_with_structured_error(exc, needle):
    def entry(params, check_mode, diff):
        raise exc

    result = call_entry(entry, {})
    assert result["failed"] is True and needle in result["msg"]
    assert result["error"]["message"] and result["changed"] is False


def test_os_error_names_the_file():
    def entry(params, check_mode, diff):
        raise PermissionError(13, "Permission denied", "/srv/bundle")

    result = call_entry(entry, {})
    assert result == {"failed": True, "msg": "/srv/bundle: Permission denied", "changed": False}


def test_unexpected_errors_are_not_swallowed():
    def entry(params, check_mode, diff):
        raise ZeroDivisionError("bug")

    with pytest.raises(ZeroDivisionError):
        call_entry(entry, {})
