# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The one error base class of the collection.

Every domain error (recipes, Kubernetes access, certification, node actions) derives from
:class:`DsxosError`. Its named fields say where the problem is (``file``/``line``, ``field``, ``value``),
what was being done to what (``verb``, ``resource``, ``name``/``namespace``, ``server``) and on which
``node``; ``str(err)`` is the whole message with every known field, and :meth:`DsxosError.to_dict` is the
JSON-friendly form a module returns as ``error``. :func:`..entry.call_entry` turns any of them into a clean
task failure.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

#: The named fields every error may carry, in the order ``str()`` shows them.
ERROR_FIELDS: Tuple[str, ...] = ("file", "line", "field", "value", "verb", "resource", "name", "namespace", "server", "node")


class DsxosError(Exception):
    """Base class of every error the collection raises on purpose.

    ``message`` says what is wrong; the keyword fields say where. Subclasses that already compose a full
    message (the Kubernetes errors) set ``render_fields = False`` so ``str()`` is the message alone.
    """

    #: Whether ``str()`` appends the known fields ``(file:line, field F, value V, ...)`` to the message.
    render_fields = True

    def __init__(self, message: str, *, file: Optional[str] = None, line: Optional[int] = None,
                 field: Optional[str] = None, value: Any = None, verb: Optional[str] = None,
                 resource: Optional[str] = None, name: Optional[str] = None, namespace: Optional[str] = None,
                 server: Optional[str] = None, node: Optional[str] = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        self.value = value
        self.verb = verb
        self.resource = resource
        self.name = name
        self.namespace = namespace
        self.server = server
        self.node = node
        super().__init__(self.render())

    def where(self) -> str:
        """The known fields as ``file:line, field F, value V, node N, ...`` (empty when none is known)."""
        parts = []
        if self.file:
            parts.append(self.file + (":%d" % self.line if self.line else ""))
        if self.field:
            parts.append("field %s" % self.field)
        if self.value is not None:
            parts.append("value %r" % (self.value,))
        for key in ("verb", "resource", "name", "namespace", "server", "node"):
            val = getattr(self, key)
            if val:
                parts.append("%s %s" % (key, val))
        return ", ".join(parts)

    def render(self) -> str:
        """The full message: ``message (where)`` or just ``message``."""
        where = self.where() if self.render_fields else ""
        return "%s (%s)" % (self.message, where) if where else self.message

    def to_dict(self) -> Dict[str, Any]:
        """JSON-friendly description: ``error`` (the class name), ``message`` and every named field."""
        out: Dict[str, Any] = {"error": type(self).__name__, "message": self.message}
        for key in ERROR_FIELDS:
            out[key] = getattr(self, key)
        return out


class InputError(DsxosError):
    """Bad input data or a bad request (a value out of range, a missing field, an unknown name)."""


class YamlLoadError(InputError):
    """A YAML document could not be read or parsed (malformed, too large, alias bomb, not UTF-8)."""
