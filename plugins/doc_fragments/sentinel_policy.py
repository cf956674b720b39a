# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations


class ModuleDocFragment:
    """The sentinel policy's inputs (operate/entry.py SENTINEL_POLICY_SPEC): sentinel_plan, and sentinel_quarantine when
    it is given the events instead of decisions."""

    DOCUMENTATION = r"""
options:
  events:
    description: Normalized alert events (firing and resolved). Each is validated on its own.
    type: list
    elements: raw
    default: []
  rules:
    description:
      - The ruleset, a list of C({name, match, action, priority, dry_run, rate}). C(match) may hold C(fault_class)
        (list), C(code) (list of integers), C(labels) (mapping the alert labels must contain), C(severity) and C(alertname)
        (lists); an empty C(match) matches every alert. C(action) is one of C(record), C(quarantine),
        C(quarantine_drain), C(partial_drain), C(reset_gpu), C(reboot), C(replace), C(contact_support), C(driver_reload).
      - An empty list uses the built-in ruleset (returned as C(rules); see docs/operate-sentinel.md).
    type: list
    elements: raw
    default: []
  manual_nodes:
    description: Nodes of a manual run; each gets a synthesized event with O(manual_reason) and O(manual_action) that
      bypasses the rules (not the opt-out label, the attempt cap or O(destructive)). A node with an open incident resumes it.
    type: list
    elements: str
    default: []
  manual_reason:
    description: Why the manual run quarantines O(manual_nodes) (required with them).
    type: str
    default: ""
  manual_action:
    description: Action of the manual run.
    type: str
    default: quarantine
    choices: [quarantine, quarantine_drain, partial_drain, reset_gpu, reboot, replace, contact_support, driver_reload]
  destructive:
    description: Allow drains and remediations. When false only record and quarantine happen.
    type: bool
    default: false
  dry_run:
    description: Mark every decision as a dry run (the role then reports it and changes nothing). Rules can set their own C(dry_run).
    type: bool
    default: false
  attempt_cap:
    description: Remediation attempts per node within O(attempt_window_s) after which the node needs attention.
    type: int
    default: 3
  attempt_window_s:
    description: Window of O(attempt_cap) in seconds.
    type: float
    default: 86400.0
  now:
    description: Current time (RFC 3339) for the attempt window and manual events; default the controller's clock.
    type: str
"""
