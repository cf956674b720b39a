# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.node_certification in the Ansible worker when it would run on the controller anyway, else the module
(plugin_utils/local_module_action.py; documentation lives in plugins/modules/node_certification.py)."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import NODE_CERTIFICATION
from ansible_collections.dsxos.cluster.plugins.plugin_utils.local_module_action import make_local_module_action

ActionModule = make_local_module_action(NODE_CERTIFICATION)
