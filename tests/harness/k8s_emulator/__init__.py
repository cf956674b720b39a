# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A Kubernetes API emulator for tests: real HTTP on 127.0.0.1, real client libraries, simulated controllers.

See docs/emulator.md. Nothing under plugins/, roles/ or playbooks/ may import this package.
"""
from __future__ import annotations

from .emulator import DEFAULT_GIT_VERSION, Emulator
from .errors import ApiError
from .profiles import PROFILES, NodeProfile

__all__ = ["DEFAULT_GIT_VERSION", "Emulator", "ApiError", "PROFILES", "NodeProfile"]
