# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side action for dsxos.cluster.certify_nccl (documentation lives in plugins/modules/certify_nccl.py).

The adaptive loop runs in the controller process: it launches group tests (mpirun over SSH or Kubernetes Jobs),
so there is nothing to ship to a target. Each round is announced with Ansible's Display.
"""
from __future__ import annotations

from typing import Any, Dict

from ansible.utils.display import Display

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.runners import CERTIFY_NCCL_SPEC, run_certify_nccl
from ansible_collections.dsxos.cluster.plugins.plugin_utils.controller_action import ControllerAction

display = Display()


class ActionModule(ControllerAction):
    """Validate with the module's argument spec, run the loop, print one line per round."""

    ARGUMENT_SPEC = CERTIFY_NCCL_SPEC

    def call(self, args: Dict[str, Any], check_mode: bool, diff: bool) -> Dict[str, Any]:
        del diff

        def progress(message: str, info: Dict[str, Any]) -> None:
            del info
            display.display("certify_nccl: %s" % message)

        return run_certify_nccl(args, check_mode, progress=progress)
