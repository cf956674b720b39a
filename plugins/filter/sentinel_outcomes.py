# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Jinja2 filters of the sentinel role: the outcome rows of the nodes a batch settled, in one call
(``plugins/module_utils/operate/run_outcomes.py``). Thin adapters; documentation in ``plugins/filter/<filter>.yml``."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from ansible.errors import AnsibleFilterError

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.run_outcomes import (
    OutcomeError, entry_outcomes, intake_outcomes, waiting_message, waiting_outcomes,
)


def _fail(name: str, exc: Exception) -> AnsibleFilterError:
    return AnsibleFilterError("dsxos.cluster.%s: %s" % (name, exc))


def sentinel_intake_outcomes(decisions: Any, batch_nodes: Any = None, held_back: Any = None, check_mode: bool = False,
                             joined: Any = None) -> List[Dict[str, Any]]:
    """``decisions | dsxos.cluster.sentinel_intake_outcomes(batch.nodes, batch.held_back, ansible_check_mode, batch.joined)``."""
    try:
        return intake_outcomes(list(decisions or []), list(batch_nodes or []), list(held_back or []), bool(check_mode), list(joined or []))
    except (OutcomeError, TypeError) as exc:
        raise _fail("sentinel_intake_outcomes", exc) from None


def sentinel_entry_outcomes(entries: Any, decisions: Any, status: str, prefix: str = "", states: Any = None) -> List[Dict[str, Any]]:
    """``batch.held_back | dsxos.cluster.sentinel_entry_outcomes(decisions, 'skipped')``."""
    try:
        return entry_outcomes(list(entries or []), list(decisions or []), str(status), str(prefix or ""), dict(states or {}))
    except (OutcomeError, TypeError, ValueError) as exc:
        raise _fail("sentinel_entry_outcomes", exc) from None


def sentinel_waiting_outcomes(waiting: Any, drained: Any = None) -> List[Dict[str, Any]]:
    """``waiting_decisions | dsxos.cluster.sentinel_waiting_outcomes(drained_nodes)``."""
    try:
        return waiting_outcomes(list(waiting or []), [str(n) for n in drained or []])
    except (OutcomeError, TypeError) as exc:
        raise _fail("sentinel_waiting_outcomes", exc) from None


def sentinel_waiting_message(incident: Any, state: Any, held_back: Any = None) -> str:
    """``incident_id | dsxos.cluster.sentinel_waiting_message(state, held_back)``."""
    try:
        return waiting_message(incident, state, list(held_back or []))
    except TypeError as exc:
        raise _fail("sentinel_waiting_message", exc) from None


class FilterModule:
    """dsxos.cluster sentinel filters."""

    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {
            "sentinel_intake_outcomes": sentinel_intake_outcomes,
            "sentinel_entry_outcomes": sentinel_entry_outcomes,
            "sentinel_waiting_outcomes": sentinel_waiting_outcomes,
            "sentinel_waiting_message": sentinel_waiting_message,
        }
