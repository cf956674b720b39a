# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Base class for action plugins whose work happens on the Ansible controller.

Recipes, bundles and constraint snapshots are controller-side data (like templates): the
built-in catalog ships inside the installed collection, which a module copied to a target
could not see. These actions validate their arguments with the same argument spec the
module documents, make one call into ``module_utils`` and return its result.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Dict

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry


class ControllerAction(ActionBase):
    """Subclasses set ``ARGUMENT_SPEC`` and implement :meth:`call`."""

    TRANSFERS_FILES = False
    ARGUMENT_SPEC: Dict[str, Any] = {}

    def call(self, args: Dict[str, Any], check_mode: bool, diff: bool) -> Dict[str, Any]:
        raise AnsibleActionFail("%s does not implement call()" % type(self).__name__)

    def run(self, tmp: Any = None, task_vars: Any = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        _validation, tagged = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        # Templated values arrive as tagged/unsafe str subclasses: hand plain data to module_utils.
        args = json.loads(json.dumps(tagged, default=str))
        result.update(call_entry(self.call, args, bool(self._task.check_mode), bool(self._task.diff)))
        return result


def make_action(spec: Dict[str, Any], func: Callable[[Dict[str, Any], bool, bool], Dict[str, Any]]) -> type:
    """Build a :class:`ControllerAction` subclass from an argument spec and a call."""

    class _Action(ControllerAction):
        ARGUMENT_SPEC = spec

        def call(self, args: Dict[str, Any], check_mode: bool, diff: bool) -> Dict[str, Any]:
            return func(args, check_mode, diff)

    return _Action
