# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Errors of the Configure phase.  Every error names what was wrong and where
(file, field, value) so modules can hand ``str(err)`` straight to ``fail_json``."""
from __future__ import annotations

from typing import Any, Optional


class RecipeError(Exception):
    """Base class: bad recipe data or a bad request.  ``str()`` is the full message."""

    def __init__(self, message: str, path: Optional[str] = None, field: Optional[str] = None,
                 value: Any = None, line: Optional[int] = None) -> None:
        self.message = message
        self.path = path
        self.field = field
        self.value = value
        self.line = line
        super().__init__(self.render())

    def render(self) -> str:
        where = []
        if self.path:
            where.append(self.path + (":%d" % self.line if self.line else ""))
        if self.field:
            where.append("field %s" % self.field)
        if self.value is not None:
            where.append("value %r" % (self.value,))
        return "%s (%s)" % (self.message, ", ".join(where)) if where else self.message

    def to_dict(self) -> dict:
        return {"error": type(self).__name__, "message": self.message, "path": self.path,
                "field": self.field, "value": self.value, "line": self.line}


class RecipeLoadError(RecipeError):
    """A file could not be read or parsed (malformed YAML, alias bomb, too large)."""


class RecipeSchemaError(RecipeError):
    """A document is readable but violates the recipe schema (wrong type, unknown enum value)."""


class RecipePathError(RecipeError):
    """A referenced path is missing or escapes its recipe directory."""


class RecipeResolveError(RecipeError):
    """Criteria could not be resolved (unknown value, missing base, inheritance cycle)."""


class DependencyError(RecipeError):
    """Unknown dependencyRef or a dependency cycle (the cycle path is in the message)."""


class ConstraintError(RecipeError):
    """A constraint expression is malformed (unknown operator, empty name)."""


class RenderError(RecipeError):
    """A bundle could not be rendered (template error, invalid option)."""
