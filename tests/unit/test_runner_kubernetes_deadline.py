# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A Job the Job controller failed at its activeDeadlineSeconds (the runner's timeout_s) is the runner's timeout."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runner_kubernetes import _deadline_exceeded


def job(*conditions):
    return {"metadata": {"name": "j"}, "status": {"conditions": list(conditions)}}


def test_failed_at_the_deadline_is_a_timeout():
    assert _deadline_exceeded(job({"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}))


def test_other_failures_and_unset_conditions_are_not():
    assert not _deadline_exceeded(job({"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}))
    assert not _deadline_exceeded(job({"type": "Failed", "status": "False", "reason": "DeadlineExceeded"}))
    assert not _deadline_exceeded(job({"type": "Complete", "status": "True"}))
    assert not _deadline_exceeded({"metadata": {"name": "j"}})
    assert not _deadline_exceeded({"status": None})
