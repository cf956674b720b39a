# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Test-only callback: append one JSON line per task result to the file named by $DSXOS_RESULT_DUMP."""
from __future__ import annotations

DOCUMENTATION = r"""
name: dsxos_result_dump
type: aggregate
short_description: Dump every task result as JSON lines (integration tests only)
description:
  - Writes one JSON object per task result and host (for a loop, one per item, with C(item) set, instead
    of the loop's aggregate), plus one C(stats) object at the end, to the file named by the
    E(DSXOS_RESULT_DUMP) environment variable.
  - Used by tests/integration/playbook_runner.py; not shipped as part of the collection's API.
requirements:
  - enable it with E(ANSIBLE_CALLBACKS_ENABLED=dsxos_result_dump)
"""

import json
import os

from ansible.plugins.callback import CallbackBase


def _raw(result):
    """The task's return values, as plain data (ansible-core 2.19 ``result``, older ``_result``)."""
    return dict(result.result if hasattr(type(result), "result") else result._result)  # pylint: disable=protected-access


def _payload(result):
    """The return values without ansible's internal ``_ansible_*`` keys."""
    return {key: value for key, value in _raw(result).items() if not str(key).startswith("_ansible_")}


class CallbackModule(CallbackBase):
    """Record task results for the integration-test fixture."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "dsxos_result_dump"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._path = os.environ.get("DSXOS_RESULT_DUMP")
        self._play = None
        self._looped = set()  # (task uuid, host) pairs whose items were recorded one by one

    def _write(self, record):
        if not self._path:
            return
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=str, sort_keys=True) + "\n")

    def _record(self, result, status, **extra):
        data = _payload(result)
        task = result.task
        key = (task._uuid, result.host.get_name())  # pylint: disable=protected-access
        if "item" in extra:
            self._looped.add(key)
        elif key in self._looped:
            self._looped.discard(key)
            return  # the loop's aggregate result: its items are already recorded
        record = {
            "kind": "task",
            "play": self._play,
            "host": result.host.get_name(),
            "task": task.get_name(),
            "action": task.action,
            "status": status,
            "changed": bool(data.get("changed", False)),
            "failed": status in ("failed", "unreachable"),
            "skipped": status == "skipped",
            "msg": data.get("msg"),
            "result": data,
        }
        record.update(extra)
        self._write(record)

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed", ignore_errors=bool(ignore_errors))

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable")

    def _record_item(self, result, status):
        data = _raw(result)
        loop_var = data.get("ansible_loop_var", "item")
        label = data.get("_ansible_item_label", data.get(loop_var))
        self._record(result, status, item=label, loop_var=loop_var)

    def v2_runner_item_on_ok(self, result):
        self._record_item(result, "ok")

    def v2_runner_item_on_failed(self, result):
        self._record_item(result, "failed")

    def v2_runner_item_on_skipped(self, result):
        self._record_item(result, "skipped")

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        self._write({"kind": "stats", "stats": {host: stats.summarize(host) for host in hosts}})
