# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""tests/harness/alertmanager_operator_config.py: the Alertmanager configuration the chart and prometheus-operator write.

The expectations follow prometheus-operator's config builder (pkg/alertmanager/amcfg.go): receivers and routes prefixed
``<namespace>/<object>/``, the object's routes first under the root with ``continue: true``, the namespace matcher per
``alertmanagerConfigMatcherStrategy``, Secret credentials inlined; the result is checked by ``amtool check-config``
(Debian's ``prometheus-alertmanager``).
"""
from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from ansible_collections.dsxos.cluster.tests.harness.alertmanager_operator_config import (
    KPS_DEFAULT_CONFIG, base_config, find_route, helm_merge, operator_config,
)

OBJECT = {
    "apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
    "metadata": {"name": "sentinel", "namespace": "monitoring"},
    "spec": {
        "route": {"receiver": "eda", "matchers": [{"name": "fault_class", "matchType": "=~", "value": ".+"}], "groupBy": ["node"],
                  "groupWait": "1s", "groupInterval": "1s", "repeatInterval": "1h"},
        "inhibitRules": [{"sourceMatch": [{"name": "fault_class", "matchType": "=~", "value": "nvlink|memory"}],
                          "targetMatch": [{"name": "fault_class", "value": "application"}], "equal": ["node", "gpu"]}],
        "receivers": [{"name": "eda", "webhookConfigs": [{"url": "http://127.0.0.1:5050/alerts", "sendResolved": True, "maxAlerts": 0,
                                                          "httpConfig": {"authorization": {"type": "Bearer",
                                                                                           "credentials": {"name": "tok", "key": "token"}}}}]}],
    },
}
SECRETS = {("monitoring", "tok"): {"token": "s3cret"}}


def test_helm_merge_merges_maps_and_replaces_lists():
    assert helm_merge({"a": {"b": 1, "c": [1, 2]}, "d": 1}, {"a": {"c": [3]}, "d": None, "e": 2}) == {"a": {"b": 1, "c": [3]}, "e": 2}
    merged = base_config({"alertmanager": {"config": {"route": {"group_wait": "10s"}}}})
    assert merged["route"]["group_wait"] == "10s" and merged["route"]["receiver"] == "null", "the chart's other settings stay"
    assert base_config({}) == KPS_DEFAULT_CONFIG


def test_an_object_in_alertmanagers_namespace_routes_first_without_a_namespace_matcher():
    config = operator_config(base_config({}), [OBJECT], SECRETS, "monitoring", "OnNamespaceExceptForAlertmanagerNamespace")
    first = config["route"]["routes"][0]
    assert first == {"receiver": "monitoring/sentinel/eda", "group_by": ["node"], "group_wait": "1s", "group_interval": "1s",
                     "repeat_interval": "1h", "matchers": ['fault_class=~".+"'], "continue": True}
    assert config["route"]["routes"][1:] == KPS_DEFAULT_CONFIG["route"]["routes"], "the chart's routes follow"
    assert config["receivers"][-1] == {"name": "monitoring/sentinel/eda", "webhook_configs": [
        {"send_resolved": True, "url": "http://127.0.0.1:5050/alerts",
         "http_config": {"authorization": {"type": "Bearer", "credentials": "s3cret"}}}]}
    assert config["inhibit_rules"][-1] == {"source_matchers": ['fault_class=~"nvlink|memory"'], "target_matchers": ['fault_class="application"'],
                                           "equal": ["node", "gpu"]}
    assert find_route(config, "monitoring/sentinel/eda") == first


@pytest.mark.parametrize("strategy, am_namespace, enforced", [
    ("OnNamespace", "monitoring", True), ("", "monitoring", True), ("None", "other", False),
    ("OnNamespaceExceptForAlertmanagerNamespace", "other", True),
])
def test_the_namespace_matcher_follows_the_strategy(strategy, am_namespace, enforced):
    config = operator_config(base_config({}), [OBJECT], SECRETS, am_namespace, strategy)
    assert ('namespace="monitoring"' in config["route"]["routes"][0]["matchers"]) is enforced
    assert ('namespace="monitoring"' in config["inhibit_rules"][-1]["source_matchers"]) is enforced


def test_refusals_name_what_is_missing():
    with pytest.raises(ValueError, match="Secret monitoring/tok key token not found"):
        operator_config(base_config({}), [OBJECT], {}, "monitoring")
    bad = yaml.safe_load(yaml.safe_dump(OBJECT))
    bad["spec"]["route"]["muteTimeIntervals"] = ["night"]
    with pytest.raises(ValueError, match="muteTimeIntervals"):
        operator_config(base_config({}), [bad], SECRETS, "monitoring")
    with pytest.raises(ValueError, match="alertmanagerConfigMatcherStrategy"):
        operator_config(base_config({}), [OBJECT], SECRETS, "monitoring", "Sometimes")


def test_amtool_accepts_the_result(tmp_path):
    amtool = shutil.which("amtool")
    assert amtool, "amtool is not installed: install Debian's prometheus-alertmanager package (scripts/system_deps.sh does)"
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(operator_config(base_config({}), [OBJECT], SECRETS, "monitoring",
                                                   "OnNamespaceExceptForAlertmanagerNamespace")), encoding="utf-8")
    checked = subprocess.run([amtool, "check-config", str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
