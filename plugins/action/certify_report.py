# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Controller-side action for dsxos.cluster.certify_report (documentation lives in plugins/modules/certify_report.py).

Reports are written on the controller, next to the playbook's other artefacts; the ConfigMap (when asked for) is
stored from the controller too, with the same Kubernetes options as every other module of the k8s action group.
"""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import CERTIFY_REPORT
from ansible_collections.dsxos.cluster.plugins.plugin_utils.controller_action import make_action

ActionModule = make_action(CERTIFY_REPORT)
