# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The one way a module or a controller action reaches its domain code.

Each phase declares its modules in ``<phase>/entry.py`` as :class:`EntryPoint` values: the module's name, what it
does (a phrase for error messages), its argument spec (the single source shared by the module, its action plugin and
its DOCUMENTATION, which ansible-test checks against it) and ``run(params, check_mode, diff) -> dict``.

:func:`call_entry` is the single place that turns failures into results:

* a :class:`DsxosError` (every domain error) becomes ``failed`` + its message + the structured ``error``;
* an ``OSError`` becomes ``failed`` + ``<file>: <reason>``;
* anything else is a bug, but still becomes a failure that names the module, what it was doing, the exception
  and where it was raised, never a raw traceback.
"""
from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import DsxosError

Run = Callable[..., Mapping[str, Any]]


@dataclass(frozen=True)
class EntryPoint:
    """One module's contract: ``name`` (``node_drain``), ``doing`` (``draining nodes``), ``spec``, ``run``.

    ``module_options`` are the extra :class:`AnsibleModule` arguments (``mutually_exclusive``, ``required_if``, ...),
    kept here so the module and its action plugin validate the same way.
    """

    name: str
    doing: str
    spec: Dict[str, Any]
    run: Run
    module_options: Dict[str, Any] = field(default_factory=dict)

    @property
    def fqcn(self) -> str:
        """``dsxos.cluster.<name>``."""
        return "dsxos.cluster." + self.name


def _raised_at(err: BaseException) -> str:
    """``file.py:LINE in function`` of the innermost frame that raised ``err``."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return "unknown location"
    last = frames[-1]
    return "%s:%s in %s" % (os.path.basename(last.filename), last.lineno, last.name)


def unexpected_failure(name: str, doing: str, err: BaseException) -> Dict[str, Any]:
    """The result for an exception no domain code expected: names the module, the action and the exception."""
    text = str(err) or "(no message)"
    msg = "%s failed while %s: %s: %s (raised at %s; this is a bug, please report it)" % (
        name, doing, type(err).__name__, text, _raised_at(err))
    return {"failed": True, "msg": msg,
            "error": {"error": type(err).__name__, "message": text, "module": name, "doing": doing, "unexpected": True}}


def call_entry(entry: EntryPoint, params: Mapping[str, Any], check_mode: bool = False, diff: bool = False,
               **context: Any) -> Dict[str, Any]:
    """Run ``entry.run`` and return a module result.

    ``context`` is passed to ``run`` as keyword arguments (a controller action's ``progress`` callback).
    The returned dict always has ``changed``; ``failed`` is present (True) only on failure.
    """
    try:
        result = dict(entry.run(params, check_mode, diff, **context))
    except DsxosError as err:
        result = {"failed": True, "msg": str(err), "error": err.to_dict()}
    except OSError as err:
        result = {"failed": True, "msg": "%s: %s" % (getattr(err, "filename", None) or "I/O error", err.strerror or err)}
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as err:  # pylint: disable=broad-except
        result = unexpected_failure(entry.fqcn, entry.doing, err)
    result.setdefault("changed", False)
    if not result.get("failed"):
        result.pop("failed", None)
    return result


def finish(module: Any, result: Mapping[str, Any]) -> None:
    """End an AnsibleModule with ``result``: ``fail_json`` when it failed, else ``exit_json``.

    ``module`` is duck-typed (this file never imports Ansible); modules call this as their last line.
    """
    payload = dict(result)
    if payload.get("failed"):
        payload.pop("failed", None)
        module.fail_json(**payload)
    else:
        module.exit_json(**payload)
