# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A rerun that certifies the same thing changes nothing: the report of record and the node labels stay.

``certify_report`` with ``rewrite: outcome`` keeps the report already written when a new run reaches the same outcome
(result, category statuses, every node's verdict and category statuses), whatever it measured this time;
``node_certification`` keeps a node's labels while its verdict and category statuses are unchanged and more than
``renew_fraction`` of the validity is left.
"""
from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.certify import entry, report_storage
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.node_certification import (
    ANNOTATION_REASON, LABEL_CERTIFIED_AT, LABEL_VALID_UNTIL, LABEL_VERDICT, LabelRequest, plan_labels, still_certified)

from test_certify_report import sample  # pylint: disable=import-error


def _measured_again(data, factor):
    """The same run measured again: other figures, other times, the same outcome."""
    again = copy.deepcopy(data)
    for node in again["nodes"].values():
        for cat in node["categories"].values():
            if isinstance(cat.get("value"), (int, float)):
                cat["value"] = round(cat["value"] * factor, 3)
    again["categories"]["all_reduce"]["per_node"] = {n: round(v * factor, 3)
                                                     for n, v in again["categories"]["all_reduce"]["per_node"].items()}
    again["finished"] = "2026-03-01T11:14:32Z"
    again["started"] = "2026-03-01T11:00:00Z"
    return again


def _files(path):
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


def test_same_outcome_keeps_the_report_of_record(tmp_path):
    first = entry.run_certify_report({"report": sample(), "dest_dir": str(tmp_path)})
    assert first["changed"] and not first["kept_report_of_record"]
    before = _files(tmp_path)
    again = entry.run_certify_report({"report": _measured_again(sample(), 0.93), "dest_dir": str(tmp_path)})
    assert again["changed"] is False and again["kept_report_of_record"] is True and again["changed_files"] == []
    assert _files(tmp_path) == before
    # the summary is the kept report's: it agrees with what is on disk
    on_disk = json.loads((tmp_path / "certify-report.json").read_text(encoding="utf-8"))
    assert again["summary"]["totals"] == on_disk["totals"] and on_disk["finished"] == "2026-03-01T10:14:32Z"


def test_always_rewrites_and_a_new_outcome_replaces_the_record(tmp_path):
    entry.run_certify_report({"report": sample(), "dest_dir": str(tmp_path)})
    always = entry.run_certify_report({"report": _measured_again(sample(), 0.9), "dest_dir": str(tmp_path), "rewrite": "always"})
    assert always["changed"] is True and always["kept_report_of_record"] is False
    worse = sample()
    worse["nodes"]["gpu-1"]["verdict"] = "failed"
    worse["nodes"]["gpu-1"]["reasons"] = ["gpu-health: XID 79"]
    worse["nodes"]["gpu-1"]["categories"]["gpu-health"] = {"status": "failed", "reason": "XID 79"}
    changed = entry.run_certify_report({"report": worse, "dest_dir": str(tmp_path)})
    assert changed["changed"] is True and changed["kept_report_of_record"] is False
    assert json.loads((tmp_path / "certify-report.json").read_text(encoding="utf-8"))["nodes"]["gpu-1"]["verdict"] == "failed"


def test_missing_format_or_unreadable_record_is_rewritten(tmp_path):
    entry.run_certify_report({"report": sample(), "dest_dir": str(tmp_path), "formats": ["json"]})
    wider = entry.run_certify_report({"report": sample(), "dest_dir": str(tmp_path), "formats": ["json", "html"]})
    assert wider["kept_report_of_record"] is False and wider["changed"] is True
    (tmp_path / "certify-report.json").write_text("{not json", encoding="utf-8")
    assert report_storage.report_of_record(str(tmp_path), sample(), ["json"]) is None
    again = entry.run_certify_report({"report": sample(), "dest_dir": str(tmp_path), "formats": ["json", "html"]})
    assert again["changed"] is True and json.loads((tmp_path / "certify-report.json").read_text(encoding="utf-8"))


@settings(max_examples=40, deadline=None)
@given(factor=st.floats(min_value=0.5, max_value=1.5), flip=st.sampled_from([None, "gpu-1", "gpu-5"]))
def test_outcome_ignores_measurements_but_never_a_verdict(factor, flip):
    base = sample()
    other = _measured_again(base, factor)
    if flip:
        other["nodes"][flip]["verdict"] = "excluded"
    same = report_storage.report_outcome(base) == report_storage.report_outcome(other)
    assert same is (flip is None)


def _node(verdict, statuses, certified_at, valid_until):
    reasons = {c: {"status": s, "reason": "busbw %d GB/s" % certified_at} for c, s in statuses.items()}
    return {"metadata": {"labels": {LABEL_VERDICT: verdict, LABEL_CERTIFIED_AT: str(certified_at),
                                    LABEL_VALID_UNTIL: str(valid_until)},
                         "annotations": {ANNOTATION_REASON: json.dumps(reasons)}}}


def _request(verdict, statuses, now, valid_for=3600):
    reasons = {c: {"status": s, "reason": "busbw %d GB/s (measured again)" % now} for c, s in statuses.items()}
    return LabelRequest(node="gpu-1", verdict=verdict, reasons=reasons, certified_at=now, valid_until=now + valid_for)


@pytest.mark.parametrize("elapsed, verdict, status, keeps", [
    (60, "passed", "passed", True),            # fresh, same outcome: keep the certification of record
    (1799, "passed", "passed", True),          # just under half of the validity used
    (1801, "passed", "passed", False),         # less than half left: renew
    (60, "failed", "failed", False),           # the verdict changed
    (60, "passed", "skipped", False),          # a category status changed
])
def test_labels_are_kept_while_the_same_outcome_is_fresh(elapsed, verdict, status, keeps):
    node = _node("passed", {"nccl-all-reduce": "passed"}, 1000, 1000 + 3600)
    request = _request(verdict, {"nccl-all-reduce": status}, 1000 + elapsed)
    assert still_certified(node, request, 0.5) is keeps
    patch = plan_labels(node, request, renew_fraction=0.5)
    assert (patch is None) is keeps
    if not keeps:
        assert patch["metadata"]["labels"][LABEL_CERTIFIED_AT] == str(1000 + elapsed)


def test_renew_fraction_zero_relabels_every_run_and_bad_values_are_refused():
    node = _node("passed", {"nccl-all-reduce": "passed"}, 1000, 4600)
    request = _request("passed", {"nccl-all-reduce": "passed"}, 1060)
    assert still_certified(node, request, 0.0) is False and plan_labels(node, request) is not None
    broken = copy.deepcopy(node)
    broken["metadata"]["labels"][LABEL_VALID_UNTIL] = "soon"
    assert still_certified(broken, request, 0.5) is False
    with pytest.raises(Exception, match="renew_fraction"):
        entry.run_node_certification({"nodes": ["gpu-1"], "categories": [], "results": {}, "label": True,
                                      "renew_fraction": 1.5, "valid_for_s": 3600})
