# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""CPU stand-in for nccl-tests (``nccl_standin.c``) and the helper that builds it (``build.py``)."""
from __future__ import annotations
