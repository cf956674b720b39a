# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side action for dsxos.cluster.certify_nccl (documentation lives in plugins/modules/certify_nccl.py).

The adaptive loop runs in the controller process: it launches group tests (mpirun over SSH or Kubernetes Jobs),
so there is nothing to ship to a target. Each round is announced on the controller (``progress=True``).
"""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import CERTIFY_NCCL
from ansible_collections.dsxos.cluster.plugins.plugin_utils.controller_action import make_action

ActionModule = make_action(CERTIFY_NCCL, progress=True)
