# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The connection options every Kubernetes-facing module takes (doc fragment ``dsxos.cluster.k8s_auth``).

A plain dict in a file of its own, so an entry file can declare its modules' argument specs without importing the
``kubernetes`` package (about a second of start-up on a small machine); :mod:`.client` builds clients from them.
"""
from __future__ import annotations

from typing import Any

K8S_AUTH_SPEC: dict[str, dict[str, Any]] = {
    "kubeconfig": {"type": "path"},
    "context": {"type": "str"},
    "host": {"type": "str"},
    "api_key": {"type": "str", "no_log": True},
    "ca_cert": {"type": "path"},
    "validate_certs": {"type": "bool"},
    "in_cluster": {"type": "bool", "default": False},
    "qps": {"type": "float", "default": 50.0},
    "burst": {"type": "int", "default": 100},
    "retries": {"type": "int", "default": 8},
    "retry_backoff_s": {"type": "float", "default": 0.2},
    "request_timeout_s": {"type": "float", "default": 30.0},
    "deadline_s": {"type": "float", "default": 120.0},
}
