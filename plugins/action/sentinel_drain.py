# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side action for dsxos.cluster.sentinel_drain (documentation lives in plugins/modules/sentinel_drain.py)."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import SENTINEL_DRAIN
from ansible_collections.dsxos.cluster.plugins.plugin_utils.controller_action import make_action

ActionModule = make_action(SENTINEL_DRAIN)
