# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Scale: 1500 GPU nodes / 22,500 pods seeded in-process, per-node pod listing through the real client, request throughput.

Timings are measured and reported (``-s`` shows the line; it is also a junit property), never asserted.
"""
from __future__ import annotations

import sys

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.scale_probe import format_report, run_scale_probe


def test_1500_nodes_22500_pods_list_by_node(k8s_emulator, record_property):  # pylint: disable=redefined-outer-name
    result = run_scale_probe(k8s_emulator, nodes=1500, pods_per_node=15)
    assert result["pods"] == 22500 and result["settled"]
    assert k8s_emulator.store.count(k8s_emulator.registry.lookup("", "v1", "pods")) == 22500
    assert result["wrong_lists"] == 0 and result["requests"] == 1000
    assert result["rss_growth_mib"] < 1024, f"seeding grew RSS by {result['rss_growth_mib']:.0f} MiB"
    for key, value in result.items():
        record_property(key, value)
    sys.stdout.write(format_report(result) + "\n")
