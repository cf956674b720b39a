# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Base class for action plugins whose work happens on the Ansible controller.

Recipes, bundles and constraint snapshots are controller-side data (like templates): the
built-in catalog ships inside the installed collection, which a module copied to a target
could not see. These actions validate their arguments with the same argument spec the
module documents (the module's ``EntryPoint.spec``), make one call through
``common.entry.call_entry`` and return its result.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint, call_entry

display = Display()


class ControllerAction(ActionBase):
    """Subclasses set ``ENTRY`` (an :class:`EntryPoint`); ``PROGRESS`` makes ``run`` receive a ``progress`` callback
    that prints one line per call on the controller (``<module>: <message>``)."""

    TRANSFERS_FILES = False
    ENTRY: EntryPoint  # set by make_action()
    PROGRESS = False

    def run(self, tmp: Any = None, task_vars: Any = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        entry = self.ENTRY
        _validation, tagged = self.validate_argument_spec(argument_spec=entry.spec, **entry.module_options)
        # Templated values arrive as tagged/unsafe str subclasses: hand plain data to module_utils.
        args = json.loads(json.dumps(tagged, default=str))
        context: Dict[str, Any] = {}
        if self.PROGRESS:
            def progress(message: str, info: Optional[Dict[str, Any]] = None) -> None:
                del info
                display.display("%s: %s" % (entry.name, message))
            context["progress"] = progress
        result.update(call_entry(entry, args, bool(self._task.check_mode), bool(self._task.diff), **context))
        return result


def make_action(entry: EntryPoint, progress: bool = False) -> type:
    """Build a :class:`ControllerAction` subclass for ``entry``."""

    class _Action(ControllerAction):
        ENTRY = entry
        PROGRESS = progress

    _Action.__name__ = "ActionModule"
    return _Action
