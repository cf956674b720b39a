# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side action for dsxos.cluster.constraint_check (documentation lives in plugins/modules/constraint_check.py)."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import CONSTRAINT_CHECK
from ansible_collections.dsxos.cluster.plugins.plugin_utils.controller_action import make_action

ActionModule = make_action(CONSTRAINT_CHECK)
