# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Action plugins that run a Kubernetes module's entry point in the Ansible worker when the module would run on the
controller anyway, and the module itself everywhere else.

A Kubernetes module (``node_lock``, ``node_incident``, ...) is usually run on ``localhost`` with the local connection:
the controller talks to the API server. Run as a module, each task starts a new Python process that unpacks the
module, imports ``ansible.module_utils.basic`` and the ``kubernetes`` client (about 1.2 s of CPU per task, most of a
remediation's time). Run here, the task costs the worker's fork and the API calls: the action plugin is imported once
by ``ansible-playbook`` itself (the linear strategy loads it before forking workers), ``kubernetes`` with it.

The entry point is the same :class:`~..module_utils.common.entry.EntryPoint` the module calls, validated with the same
argument spec, so the result is the same. It runs in process only when nothing about the task would differ:

* the connection is ``local`` (also for ``delegate_to`` a host on the local connection) and there is no ``become``;
* the task has no ``environment`` (the module process would see it, this process does not) and no ``async``;
* the host's ``ansible_python_interpreter`` is unset, ``auto*``, or this very interpreter (another one may hold other
  library versions, and the user chose it);
* the ``kubernetes`` client imports here;
* the environment variable ``DSXOS_MODULES_IN_PROCESS`` is not ``0``/``false``/``no`` (the switch to compare the two).

Otherwise the module runs as any module does (``_execute_module``), and the result says nothing different. Values of
``no_log`` options are masked in the in-process result exactly as ``AnsibleModule`` masks them.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Mapping, Optional

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint, call_entry

try:  # imported here, in ansible-playbook's own process, so that every forked worker has it already
    from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import HAS_KUBERNETES
except ImportError:  # pragma: no cover - the collection without its kube package is not installable
    HAS_KUBERNETES = False

SWITCH = "DSXOS_MODULES_IN_PROCESS"
_OFF = frozenset({"0", "false", "no", "off"})


def in_process_refusal(connection: str, become: bool, environment: Any, async_val: Any, interpreter: Optional[str],
                       executable: str = sys.executable, has_kubernetes: bool = HAS_KUBERNETES,
                       switch: Optional[str] = None) -> Optional[str]:
    """Why a task must run as a module process (a phrase), or ``None`` when it may run in process."""
    if str(switch if switch is not None else os.environ.get(SWITCH, "")).strip().lower() in _OFF:
        return "%s is off" % SWITCH
    if connection.rsplit(".", 1)[-1] != "local":
        return "the connection is %s" % connection
    if become:
        return "the task uses become"
    if any(entry for entry in (environment or []) if entry):
        return "the task sets an environment"
    if async_val:
        return "the task is async"
    if interpreter and not str(interpreter).startswith("auto") and os.path.abspath(str(interpreter)) != os.path.abspath(executable):
        return "the host's interpreter is %s" % interpreter
    if not has_kubernetes:
        return "the kubernetes client does not import on the controller"
    return None


def run_entry(entry: EntryPoint, task_args: Mapping[str, Any], check_mode: bool, diff: bool) -> Dict[str, Any]:
    """The result :class:`AnsibleModule` + :func:`call_entry` give for ``task_args``: the same validation and its
    messages, ``invocation``, and no value of a ``no_log`` option anywhere in the result."""
    validation = ArgumentSpecValidator(entry.spec, **entry.module_options).validate(dict(task_args))
    # templated values arrive as tagged/unsafe str subclasses: hand plain data to module_utils
    args = json.loads(json.dumps(validation.validated_parameters, default=str))
    if validation.error_messages:
        msg = validation.errors.msg
        if isinstance(validation.errors[0], UnsupportedError):
            msg = "Unsupported parameters for (%s) module: %s" % (entry.fqcn, msg)
        outcome: Dict[str, Any] = {"failed": True, "changed": False, "msg": msg}
    else:
        outcome = call_entry(entry, args, check_mode, diff)
    outcome.setdefault("invocation", {"module_args": args})
    return remove_values(outcome, validation._no_log_values)  # pylint: disable=protected-access


class LocalModuleAction(ActionBase):
    """Subclasses set ``ENTRY``; see the module docstring."""

    _supports_check_mode = True
    _supports_async = True
    ENTRY: EntryPoint  # set by make_local_module_action()

    def _refusal(self, task_vars: Dict[str, Any]) -> Optional[str]:
        interpreter = task_vars.get("ansible_python_interpreter")
        if interpreter is not None:
            interpreter = self._templar.template(interpreter)
        connection = getattr(self._connection, "ansible_name", None) or getattr(self._connection, "_load_name", None) \
            or str(self._play_context.connection or "")
        return in_process_refusal(str(connection), bool(self._play_context.become), self._task.environment,
                                  self._task.async_val, interpreter)

    def run(self, tmp: Any = None, task_vars: Any = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        if self._refusal(task_vars) is not None:
            wrap_async = self._task.async_val and not self._connection.has_native_async
            result = merge_hash(result, self._execute_module(module_name=self.ENTRY.fqcn, module_args=self._task.args,
                                                             task_vars=task_vars, wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)  # pylint: disable=protected-access
            return result
        result.update(run_entry(self.ENTRY, self._task.args, bool(self._task.check_mode), bool(self._task.diff)))
        return result


def make_local_module_action(entry: EntryPoint) -> type:
    """Build a :class:`LocalModuleAction` subclass for ``entry``."""

    class _Action(LocalModuleAction):
        ENTRY = entry

    _Action.__name__ = "ActionModule"
    return _Action
