# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""operate/entry.py: the node-action EntryPoints (and the batch drain), their specs, the breaker doc options matching the one spec, the missing
``kubernetes`` library and the ``node`` field of Operate errors."""
from __future__ import annotations

import ast
import os

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.doc_fragments.circuit_breaker import ModuleDocFragment
from ansible_collections.dsxos.cluster.plugins.doc_fragments.sentinel_batch import ModuleDocFragment as SentinelBatchFragment
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint, call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.kube import client as kube_client
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC
from ansible_collections.dsxos.cluster.plugins.module_utils.operate import entry
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENTRIES = {"node_drain": entry.NODE_DRAIN, "node_quarantine": entry.NODE_QUARANTINE, "circuit_breaker": entry.CIRCUIT_BREAKER,
           "node_lock": entry.NODE_LOCK, "sentinel_drain": entry.SENTINEL_DRAIN}
FRAGMENTS = {"dsxos.cluster.circuit_breaker": yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"],
             "dsxos.cluster.circuit_breaker.settings": yaml.safe_load(ModuleDocFragment.SETTINGS)["options"],
             "dsxos.cluster.sentinel_batch": yaml.safe_load(SentinelBatchFragment.DOCUMENTATION)["options"]}


def defaults(point, **kw):
    out = {key: spec.get("default") for key, spec in point.spec.items()}
    out.update(kw)
    return out


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_module_is_one_entry_point_with_the_k8s_auth_options(name):
    point = ENTRIES[name]
    assert isinstance(point, EntryPoint) and point.name == name and point.fqcn == "dsxos.cluster." + name
    assert set(K8S_AUTH_SPEC) <= set(point.spec) and point.doing
    source = open(os.path.join(REPO, "plugins", "modules", name + ".py"), encoding="utf-8").read()  # pylint: disable=consider-using-with
    main = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert len(main.body) == 2, "main() is AnsibleModule(...) then finish(module, call_entry(...))"
    assert "operate.entry import %s" % [k for k, v in vars(entry).items() if v is point][0] in source


def _compare(doc, spec, where):
    problems = []
    for key in sorted(set(doc) | set(spec)):
        if key not in doc or key not in spec:
            problems.append("%s.%s: documented %s, in the spec %s" % (where, key, key in doc, key in spec))
            continue
        documented, declared = doc[key], spec[key]
        pairs = [("type", documented.get("type"), declared.get("type", "str")),
                 ("required", bool(documented.get("required")), bool(declared.get("required"))),
                 ("choices", documented.get("choices"), declared.get("choices")),
                 ("elements", documented.get("elements"), declared.get("elements"))]
        default = declared.get("default")
        if default not in (None, []):
            shown = documented.get("default")
            pairs.append(("default", float(shown) if isinstance(default, float) else shown, default))
        problems.extend("%s.%s: %s documented %r, declared %r" % (where, key, what, a, b) for what, a, b in pairs if a != b)
        if "options" in declared:
            problems.extend(_compare(documented.get("suboptions") or {}, declared["options"], "%s.%s" % (where, key)))
    return problems


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_documentation_describes_exactly_the_spec(name):
    """What ansible-test validate-modules checks, here in-process: the DOCUMENTATION (+ fragments) is the spec."""
    source = open(os.path.join(REPO, "plugins", "modules", name + ".py"), encoding="utf-8").read()  # pylint: disable=consider-using-with
    namespace = {}
    exec(source.split("from ansible.module_utils.basic import")[0], namespace)  # pylint: disable=exec-used
    doc = yaml.safe_load(namespace["DOCUMENTATION"])
    options = dict(doc.get("options") or {})
    for fragment in doc.get("extends_documentation_fragment") or ():
        options.update(FRAGMENTS.get(fragment, {}))
    spec = {k: v for k, v in ENTRIES[name].spec.items() if k not in K8S_AUTH_SPEC}
    assert not _compare(options, spec, name)


def test_both_breaker_doc_copies_agree_and_match_the_one_spec():
    nested = FRAGMENTS["dsxos.cluster.circuit_breaker"]["circuit_breaker"]["suboptions"]
    settings = FRAGMENTS["dsxos.cluster.circuit_breaker.settings"]
    assert {k: v for k, v in nested.items() if k != "enabled"} == settings
    assert not _compare(settings, entry.BREAKER_SETTINGS_SPEC, "settings")
    assert not _compare(nested, entry.BREAKER_OPTION_SPEC["options"], "circuit_breaker")
    for name in ("node_drain", "node_quarantine"):
        assert ENTRIES[name].spec["circuit_breaker"] is entry.BREAKER_OPTION_SPEC
    assert all(entry.CIRCUIT_BREAKER.spec[k] is v for k, v in entry.BREAKER_SETTINGS_SPEC.items())


@pytest.mark.parametrize("name, params", [
    ("node_drain", {"nodes": ["gpu-0"], "reason": "x"}), ("node_quarantine", {"nodes": ["gpu-0"], "action": "cordon", "reason": "x"}),
    ("circuit_breaker", {"action": "status"}), ("node_lock", {"node": "gpu-0", "holder": "me"}),
    ("sentinel_drain", {"decisions": [], "holder": "me", "actor": "me"}),
])
def test_missing_kubernetes_library_is_a_clear_failure(monkeypatch, name, params):
    monkeypatch.setattr(kube_client, "HAS_KUBERNETES", False)
    monkeypatch.setattr(kube_client, "KUBERNETES_IMPORT_ERROR", "No module named 'kubernetes'")
    result = call_entry(ENTRIES[name], defaults(ENTRIES[name], **params))
    assert result["failed"] and result["changed"] is False
    assert "'kubernetes' is required" in result["msg"] and "pip install kubernetes" in result["msg"]
    assert result["error"]["error"] == "K8sConfigError" and not result["error"].get("unexpected")


def test_a_held_lock_names_the_node(k8s_emulator):
    k8s_emulator.add_nodes(1, "h100-eks", name_prefix="gpu-")
    params = defaults(entry.NODE_LOCK, kubeconfig=k8s_emulator.kubeconfig_path, retry_backoff_s=0, node="gpu-0", holder="alice",
                      duration_s=60, wait_timeout_s=0, poll_interval_s=0.01)
    assert call_entry(entry.NODE_LOCK, params)["action"] == "created"
    params["holder"] = "bob"
    held = call_entry(entry.NODE_LOCK, params)
    assert held["failed"] and held["error"]["error"] == "NodeLockHeld" and held["error"]["node"] == "gpu-0"
    assert held["error"]["holder"] == "alice"
    missing = call_entry(entry.NODE_LOCK, dict(params, node="gpu-9"))
    assert missing["failed"] and missing["error"]["node"] == "gpu-9" and "not found" in missing["msg"]


def test_an_unexpected_exception_is_a_failure_naming_the_module(monkeypatch):
    def boom(*_args, **_kwargs):
        raise ZeroDivisionError("division by zero")
    monkeypatch.setattr(entry, "validate_request", boom)
    result = call_entry(entry.NODE_LOCK, defaults(entry.NODE_LOCK, node="gpu-0", holder="me"))
    assert result["failed"] and "dsxos.cluster.node_lock failed while handling a node lock" in result["msg"]
    assert "Traceback" not in result["msg"]
