# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""call_entry: results pass through, expected failures become task failures with a clear message."""
from __future__ import annotations

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint, call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import DsxosError
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sForbidden
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeResolveError


def _entry(run):
    return EntryPoint(name="test_module", doing="testing", spec={}, run=run)


def test_result_passes_through_with_changed_default():
    seen = {}

    def entry(params, check_mode, diff):
        seen.update(params=dict(params), check_mode=check_mode, diff=diff)
        return {"value": 1}

    assert call_entry(_entry(entry), {"a": 1}, True, True) == {"value": 1, "changed": False}
    assert seen == {"params": {"a": 1}, "check_mode": True, "diff": True}


def test_entry_reported_failure_is_kept():
    assert call_entry(_entry(lambda p, c, d: {"failed": True, "msg": "violated"}), {}) == {"failed": True, "msg": "violated", "changed": False}
    assert "failed" not in call_entry(_entry(lambda p, c, d: {"failed": False, "changed": True}), {})


@pytest.mark.parametrize("exc, needle", [
    (RecipeResolveError("unknown value", field="criteria.accelerator", value="h1000"), "h1000"),
    (K8sForbidden("patch nodes 'gpu-1': forbidden (403)", verb="patch", resource="nodes"), "patch nodes"),
])
def test_expected_errors_become_failures_with_structured_error(exc, needle):
    def entry(params, check_mode, diff):
        raise exc

    result = call_entry(_entry(entry), {})
    assert result["failed"] is True and needle in result["msg"]
    assert result["error"]["message"] and result["changed"] is False


def test_os_error_names_the_file():
    def entry(params, check_mode, diff):
        raise PermissionError(13, "Permission denied", "/srv/bundle")

    result = call_entry(_entry(entry), {})
    assert result == {"failed": True, "msg": "/srv/bundle: Permission denied", "changed": False}


def test_unexpected_errors_name_the_module_and_what_it_was_doing():
    def run(params, check_mode, diff):
        return {"ratio": 1 / len(params)}

    entry = EntryPoint(name="node_drain", doing="draining nodes", spec={}, run=run)
    result = call_entry(entry, {})
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith("dsxos.cluster.node_drain failed while draining nodes: ZeroDivisionError: division by zero")
    assert "test_entry_point.py:" in result["msg"] and "in run" in result["msg"]
    assert "Traceback" not in result["msg"]
    assert result["error"] == {"error": "ZeroDivisionError", "message": "division by zero", "module": "dsxos.cluster.node_drain",
                               "doing": "draining nodes", "unexpected": True}


def test_every_domain_error_derives_from_one_base_with_named_fields():
    err = K8sForbidden("patch nodes 'gpu-1': forbidden (403)", verb="patch", resource="nodes", name="gpu-1", status=403)
    assert isinstance(err, DsxosError)
    fields = err.to_dict()
    assert {"file", "line", "field", "value", "verb", "resource", "name", "namespace", "server", "node"} <= set(fields)
    assert fields["verb"] == "patch" and fields["status"] == 403 and str(err) == "patch nodes 'gpu-1': forbidden (403)"
    recipe = RecipeResolveError("unknown value", field="criteria.accelerator", value="h1000")
    assert isinstance(recipe, DsxosError) and recipe.to_dict()["field"] == "criteria.accelerator"
    assert str(recipe) == "unknown value (field criteria.accelerator, value 'h1000')"
    node = DsxosError("node is not Ready", node="gpu-7", server="https://10.0.0.1:6443")
    assert str(node) == "node is not Ready (server https://10.0.0.1:6443, node gpu-7)"


def test_context_reaches_run_and_keyboard_interrupt_is_not_swallowed():
    seen = []

    def run(params, check_mode, diff, progress=None):
        progress("round 1")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        call_entry(_entry(run), {}, progress=seen.append)
    assert seen == ["round 1"]


def test_finish_ends_the_module_with_the_right_call():
    calls = []

    class FakeModule:
        def exit_json(self, **kw):
            calls.append(("exit", kw))

        def fail_json(self, **kw):
            calls.append(("fail", kw))

    finish(FakeModule(), {"changed": True, "value": 1})
    finish(FakeModule(), {"failed": True, "msg": "no", "changed": False})
    assert calls == [("exit", {"changed": True, "value": 1}), ("fail", {"msg": "no", "changed": False})]
