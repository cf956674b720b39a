# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One call of a module's entry point, with expected failures turned into a result.

Modules and the controller-side action plugins both run ``entry(params, check_mode, diff) -> dict``.
Bad input and Kubernetes/I-O failures must become a task failure with a clear ``msg`` (and the
structured ``error``), never a traceback; this is the one place that decides how.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

from ansible_collections.dsxos.cluster.plugins.module_utils.k8s_errors import K8sError
from ansible_collections.dsxos.cluster.plugins.module_utils.recipe_errors import RecipeError

Entry = Callable[[Mapping[str, Any], bool, bool], Dict[str, Any]]


def call_entry(entry: Entry, params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Run ``entry``; a :class:`RecipeError`, :class:`K8sError` or ``OSError`` yields ``{"failed": True, "msg": ...}``.

    The returned dict always has ``changed``; ``failed`` is present (True) only on failure.
    """
    try:
        result = dict(entry(params, check_mode, diff))
    except (RecipeError, K8sError) as err:
        result = {"failed": True, "msg": str(err), "error": err.to_dict()}
    except OSError as err:
        result = {"failed": True, "msg": "%s: %s" % (getattr(err, "filename", None) or "I/O error", err.strerror or err)}
    result.setdefault("changed", False)
    if not result.get("failed"):
        result.pop("failed", None)
    return result
