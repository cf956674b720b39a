# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Certify -> Operate (issue 22): the kubernetes runner's ``recertify_nodes`` (a node cordoned by the quarantine of its
certification failure is tested again, any other cordoned node stays excluded), the sentinel's decision on a
certification alert (quarantine at most, whatever the rules say) and the certify role's reading of that reason."""
from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import run_certify_nccl
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_kubernetes import kube_options_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.sentinel_policy import PolicyOptions, plan
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

ROLE_VARS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles", "certify", "vars", "main.yml")


def role_vars():
    with open(ROLE_VARS, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def cert_alert(node="gpu-1", fingerprint="am-cert-1", starts_at="2026-03-01T10:00:00Z"):
    return {"node": node, "fault_class": "certification", "action": "contact_support", "status": "firing",
            "fingerprint": fingerprint, "starts_at": starts_at, "alertname": "NodeCertificationFailed", "severity": "critical"}


def test_recertify_nodes_option_is_validated():
    assert kube_options_from_params({"image": "x"}).recertify_nodes == ()
    assert kube_options_from_params({"image": "x", "recertify_nodes": ["gpu-1"]}).recertify_nodes == ("gpu-1",)
    with pytest.raises(CertifyError, match="list of strings"):
        kube_options_from_params({"image": "x", "recertify_nodes": "gpu-1"})


def test_only_the_named_cordoned_nodes_are_tested_again(k8s_emulator):
    emu = k8s_emulator
    names = emu.add_nodes(4, "h100-eks", name_prefix="gpu-", start_index=1)
    emu.cordon("gpu-2")
    emu.cordon("gpu-3")
    params = {"runner": "kubernetes", "kubeconfig": emu.kubeconfig_path, "timeout_s": 30, "collectives": ["all_reduce"],
              "kubernetes": {"image": "nccl:2.13", "recertify_nodes": ["gpu-2"]}}
    result = run_certify_nccl(params, check_mode=True)
    assert result["nodes_given"] == names
    assert sorted(result["grouping"]["excluded"]) == ["gpu-3"], "only gpu-2's cordon is a certification quarantine"


@pytest.mark.parametrize("rules", [[], [{"name": "everything", "match": {}, "action": "reboot"}],
                                   [{"name": "cert-replace", "match": {"fault_class": ["certification"]}, "action": "replace"}]])
def test_a_certification_alert_quarantines_at_most(rules):
    result = plan([cert_alert()], rules, {"gpu-1": {"exists": True}}, PolicyOptions(destructive=True, now=1772359200.0))
    decision = result["decisions"][0]
    assert decision["kind"] == "open" and decision["action"] == "quarantine", decision
    assert decision["steps"] == {"quarantine": True, "drain": "none", "remediate": False, "recertify": False}
    # the certify role recognises the reason of such an incident (it tests the node again and releases it when it passes)
    assert re.search(role_vars()["certify_certification_reason"], decision["reason"]), decision["reason"]


def test_other_alerts_keep_their_rules_and_their_reason_is_not_a_certification():
    xid = dict(cert_alert(fingerprint="xid-1"), fault_class="fallen-off-bus", alertname="GPUFallenOffBus", code=79, gpu="3")
    decision = plan([xid], [], {"gpu-1": {"exists": True}}, PolicyOptions(destructive=True, now=1772359200.0))["decisions"][0]
    assert decision["action"] == "reboot"
    assert not re.search(role_vars()["certify_certification_reason"], decision["reason"]), decision["reason"]
