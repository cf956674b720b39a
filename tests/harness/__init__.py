# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Test harnesses (emulators, simulators). Nothing under plugins/, roles/ or playbooks/ imports these."""
from __future__ import annotations
