# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""configure/value_overrides.py: ``component:path=value`` parsing, typing, application, enabled=false, errors."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import (
    ComponentRef, Criteria, RecipeResult, SchedulingPaths)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.value_overrides import (
    ValueOverrideError, apply_set, parse_scalar, parse_set, plan_overrides, without_components)


def _result():
    refs = [ComponentRef(name="cert-manager"), ComponentRef(name="gpu-operator", dependency_refs=["cert-manager"]),
            ComponentRef(name="old", enabled=False)]
    return RecipeResult(criteria=Criteria(), component_refs=refs, deployment_order=["cert-manager", "gpu-operator"],
                        metadata={"warnings": []})


PATHS = {"gpu-operator": SchedulingPaths(override_keys=["gpuoperator"])}


@pytest.mark.parametrize("text, value", [
    ("true", True), ("false", False), ("null", None), ("~", None), ("42", 42), ("-7", -7), ("1.5", 1.5),
    ("1e3", 1000.0), ("'true'", "true"), ('"42"', "42"), ("''", ""), ("580.65.06", "580.65.06"), ("True", "True"),
    ("yes", "yes"), ("nvcr.io/nvidia", "nvcr.io/nvidia"), ("a=b", "a=b"),
])
def test_scalar_typing(text, value):
    assert parse_scalar(text) == value and type(parse_scalar(text)) is type(value)


def test_scalar_with_too_many_digits_stays_a_string():
    assert parse_scalar("9" * 5000) == "9" * 5000 and parse_scalar("-" + "1" * 4301) == "-" + "1" * 4301


def test_parse_and_apply():
    items = parse_set(["gpu-operator:driver.version='580'", "gpu-operator:driver.enabled=true", "nfd:x=1"])
    assert [(i.component, i.dotted, i.value) for i in items] == [
        ("gpu-operator", "driver.version", "580"), ("gpu-operator", "driver.enabled", True), ("nfd", "x", 1)]
    values = apply_set({"driver": {"enabled": False, "repo": "r"}}, items[:2])
    assert values == {"driver": {"enabled": True, "repo": "r", "version": "580"}}


@pytest.mark.parametrize("bad, why", [
    ("gpu-operator", "expected"), ("gpu-operator:driver", "expected"), (":driver=1", "component name"),
    ("gpu-operator:driver..version=1", "empty segment"), ("gpu-operator:.driver=1", "empty segment"),
    ("gpu-operator:driver.=1", "empty segment"), ("gpu-operator:driver=", "value is empty"),
    ("gpu-operator:enabled=maybe", "true or false"),
])
def test_bad_entries_are_named(bad, why):
    with pytest.raises(ValueOverrideError) as err:
        parse_set(["ok:a=1", bad])
    assert why in str(err.value) and repr(bad) in str(err.value) and err.value.field == "set[1]"


def test_path_through_a_scalar_or_list_is_named():
    with pytest.raises(ValueOverrideError) as err:
        apply_set({"driver": "on"}, parse_set(["c:driver.version=1"]))
    assert "driver is a str" in str(err.value) and "c:driver.version=1" in str(err.value)
    with pytest.raises(ValueOverrideError, match="args is a list"):
        apply_set({"args": [1]}, parse_set(["c:args.0=1"]))


def test_plan_resolves_aliases_drops_and_refuses():
    plan = plan_overrides(_result(), parse_set(["gpuoperator:a=1", "gpu-operator:a=2", "cert-manager:enabled=false"]), PATHS)
    assert plan.dropped == ["cert-manager"]
    assert [o.value for o in plan.values["gpu-operator"]] == [1, 2]
    assert apply_set({}, plan.values["gpu-operator"]) == {"a": 2}  # the component's own name wins over the alias
    with pytest.raises(ValueOverrideError, match="'nope'.*not part of the recipe.*cert-manager, gpu-operator, old"):
        plan_overrides(_result(), parse_set(["nope:a=1"]), PATHS)
    with pytest.raises(ValueOverrideError, match="disabled by the recipe and cannot be re-enabled"):
        plan_overrides(_result(), parse_set(["old:enabled=true"]), PATHS)
    with pytest.raises(ValueOverrideError, match="not in the bundle .set 'cert-manager:enabled=false' removes it"):
        plan_overrides(_result(), parse_set(["cert-manager:enabled=false", "cert-manager:a=1"]), PATHS)
    with pytest.raises(ValueOverrideError, match="disabled_components lists it"):
        plan_overrides(_result(), parse_set(["cert-manager:a=1"]), PATHS, ["cert-manager"])
    with pytest.raises(ValueOverrideError, match="values_overrides for component 'old'"):
        plan_overrides(_result(), [], PATHS, structured={"old": {"a": 1}})


def test_without_components_prunes_order_and_dependencies():
    out = without_components(_result(), ["cert-manager"], "a set override")
    assert out.deployment_order == ["gpu-operator"]
    assert out.component("gpu-operator").dependency_refs == []
    assert out.component("cert-manager").enabled is False
    assert out.metadata["disabledComponents"] == ["cert-manager"]
    assert "'gpu-operator' depends on 'cert-manager'" in out.metadata["warnings"][0]
    assert [r.name for r in out.component_refs] == ["gpu-operator", "cert-manager", "old"]


_KEY = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,8}", fullmatch=True)
_VALUE = st.one_of(st.booleans(), st.none(), st.integers(-10 ** 6, 10 ** 6),
                   st.from_regex(r"[a-z][a-z0-9./-]{0,10}", fullmatch=True).filter(lambda s: s not in ("true", "false", "null")))


def _text(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@settings(max_examples=60, deadline=None)
@given(path=st.lists(_KEY, min_size=1, max_size=4), value=_VALUE,
       base=st.dictionaries(_KEY, st.integers(), max_size=3))
def test_property_set_value_lands_exactly_at_its_path(path, value, base):
    entry = "comp:%s=%s" % (".".join(path), _text(value))
    base = {k: v for k, v in base.items() if k != path[0]} if len(path) > 1 else base
    out = apply_set(base, parse_set([entry]))
    node = out
    for part in path:
        node = node[part]
    assert node == value and type(node) is type(value)
    for key, val in base.items():  # nothing else changed
        if key != path[0]:
            assert out[key] == val


@settings(max_examples=60, deadline=None)
@given(st.one_of(
    st.from_regex(r"[a-z]{1,6}", fullmatch=True),  # no ':' at all
    st.from_regex(r"[a-z]{1,6}:[a-z.]{0,6}", fullmatch=True),  # no '='
    st.from_regex(r"[a-z]{1,6}:([a-z]{1,3}\.)*\.[a-z]{1,3}=[a-z0-9]{1,4}", fullmatch=True),  # empty segment
    st.from_regex(r"[a-z]{1,6}:[a-z]{1,6}=", fullmatch=True),  # empty value
))
def test_property_bad_entries_always_raise_naming_the_entry(bad):
    with pytest.raises(ValueOverrideError) as err:
        parse_set([bad])
    assert repr(bad) in str(err.value) and err.value.value == bad
