# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fault catalog: XID and DCGM error entries, lookups and the node-condemning rule."""
from __future__ import annotations

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_catalog import (
    ACTIONS, COMPONENTS, DCGM_ERROR_CATALOG, SEVERITIES, XID_CATALOG, condemns_node, lookup_dcgm_error, lookup_xid,
    strongest_action,
)

REQUIRED_XIDS = (8, 13, 31, 32, 38, 43, 45, 48, 54, 56, 57, 58, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109, 119, 120,
                 121, 140, 143)
APPLICATION_XIDS = (13, 31, 43, 45)


@pytest.mark.parametrize("code", REQUIRED_XIDS)
def test_required_xids_are_catalogued_with_valid_fields(code):
    entry = lookup_xid(code)
    assert entry.known and entry.code == code and entry.kind == "xid"
    assert entry.severity in SEVERITIES
    assert entry.action in ACTIONS and entry.follow_up in ACTIONS
    assert entry.component in COMPONENTS
    assert entry.mnemonic and entry.name


def test_every_catalog_entry_uses_the_vocabularies():
    for entry in list(XID_CATALOG.values()) + list(DCGM_ERROR_CATALOG.values()):
        assert entry.severity in SEVERITIES, entry
        assert entry.action in ACTIONS and entry.follow_up in ACTIONS, entry
        assert entry.component in COMPONENTS, entry


@pytest.mark.parametrize("code", APPLICATION_XIDS)
def test_application_xids_never_condemn_a_node(code):
    entry = lookup_xid(code)
    assert entry.application_class
    assert entry.component == "application"
    assert not condemns_node(entry)


def test_no_application_class_entry_condemns():
    for entry in XID_CATALOG.values():
        if entry.application_class:
            assert not condemns_node(entry), entry.code


@pytest.mark.parametrize("code,action", [(48, "reset_gpu"), (79, "reboot"), (95, "reset_gpu"), (74, "reset_gpu"),
                                         (119, "reset_gpu"), (140, "reset_gpu")])
def test_hardware_xids_condemn_with_documented_action(code, action):
    entry = lookup_xid(code)
    assert condemns_node(entry)
    assert entry.action == action


@pytest.mark.parametrize("code", [63, 92, 94, 121])
def test_informational_and_contained_xids_do_not_condemn(code):
    assert not condemns_node(lookup_xid(code))


def test_unknown_xid_is_conservative():
    entry = lookup_xid(9999)
    assert not entry.known
    assert entry.action == "contact_support"
    assert entry.severity == "warning"
    assert not condemns_node(entry)


def test_xid_codes_as_text_are_accepted_and_junk_is_refused():
    assert lookup_xid("79").mnemonic == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    with pytest.raises(ValueError, match="XID code"):
        lookup_xid("seventy-nine")
    with pytest.raises(ValueError):
        lookup_xid(True)


def test_dcgm_errors_by_number_and_name():
    assert lookup_dcgm_error(4).mnemonic == "DCGM_FR_VOLATILE_DBE_DETECTED"
    assert lookup_dcgm_error("DCGM_FR_ROW_REMAP_FAILURE").action == "replace"
    assert condemns_node(lookup_dcgm_error(14))  # NVLink down
    assert not condemns_node(lookup_dcgm_error(29))  # persistence mode is configuration
    unknown = lookup_dcgm_error(4242)
    assert not unknown.known and unknown.action == "contact_support" and not condemns_node(unknown)
    assert not lookup_dcgm_error("DCGM_FR_SOMETHING_NEW").known


def test_dcgm_catalog_matches_dcgm_error_numbering():
    # Spot checks against dcgmError_t (dcgm_errors.h).
    expected = {3: "DCGM_FR_PCI_REPLAY_RATE", 46: "DCGM_FR_PCIE_WIDTH", 58: "DCGM_FR_MEMORY_MISMATCH",
                81: "DCGM_FR_UNCONTAINED_ERROR", 85: "DCGM_FR_PENDING_ROW_REMAP", 101: "DCGM_FR_XID_ERROR",
                111: "DCGM_FR_NAN_VALUE"}
    for code, name in expected.items():
        assert DCGM_ERROR_CATALOG[code].mnemonic == name


def test_strongest_action_ranking():
    assert strongest_action([]) == "none"
    assert strongest_action(["none", "reset_gpu", "check_application"]) == "reset_gpu"
    assert strongest_action(["reboot", "replace", "reset_gpu"]) == "replace"
    assert strongest_action(["something-odd"]) == "contact_support"


def test_entries_serialise_to_plain_dicts():
    data = lookup_xid(48).to_dict()
    assert data["code"] == 48 and data["severity"] == "critical" and data["application_class"] is False
