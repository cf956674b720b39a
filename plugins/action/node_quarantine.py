# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.node_quarantine in the Ansible worker when it would run on the controller anyway, else the module
(plugin_utils/local_module_action.py; documentation lives in plugins/modules/node_quarantine.py)."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_QUARANTINE
from ansible_collections.dsxos.cluster.plugins.plugin_utils.local_module_action import make_local_module_action

ActionModule = make_local_module_action(NODE_QUARANTINE)
