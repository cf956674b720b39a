# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Test-only action ``dsxos_test.stubs.record_call``: write ``content`` to ``dest`` on the controller.

The stub remediation and recertification task files of tests/integration/sentinel_stubs record each call in a file
the tests read back. ``ansible.builtin.copy`` did that through two module runs (stat, then copy) in fresh Python
processes, about 0.7 s of CPU a call on the 2-core CI machine; the stubs stand for an operator's task file, whose
cost is not what the tests measure, so they record in the controller process instead. The playbooks of those tests
run on ``localhost`` with the local connection, so the controller's file system is the host's.
"""
from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    """Write one file (arguments ``dest``, ``content``); ``changed`` only when its content changed; nothing written in
    check mode."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset({"dest", "content"})
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        dest, content = args.get("dest"), args.get("content")
        if not isinstance(dest, str) or not os.path.isabs(dest):
            raise AnsibleActionFail(f"record_call: dest must be an absolute path, got {dest!r}")
        if not isinstance(content, str):
            raise AnsibleActionFail(f"record_call: content must be a string, got {type(content).__name__}")
        data = content.encode("utf-8")
        try:
            with open(dest, "rb") as handle:
                unchanged = handle.read() == data
        except FileNotFoundError:
            unchanged = False
        if not unchanged and not self._task.check_mode:  # as ansible.builtin.copy: check mode only says it would change
            with open(dest, "wb") as handle:
                handle.write(data)
        result.update(changed=not unchanged, dest=dest)
        return result
