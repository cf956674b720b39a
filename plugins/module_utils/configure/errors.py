# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Errors of the Configure phase (all :class:`DsxosError`).  Every error names what was wrong and where
(file, field, value) so modules can hand ``str(err)`` straight to ``fail_json``."""
from __future__ import annotations

from typing import Any, Dict, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError, YamlLoadError


class RecipeError(InputError):
    """Base class: bad recipe data or a bad request.  ``str()`` is the full message.

    ``path`` is the recipe file (stored as the base class's ``file`` field).
    """

    def __init__(self, message: str, path: Optional[str] = None, field: Optional[str] = None,
                 value: Any = None, line: Optional[int] = None, **fields: Any) -> None:
        super().__init__(message, file=fields.pop("file", None) or path, field=field, value=value, line=line, **fields)

    @property
    def path(self) -> Optional[str]:
        """The file the error is about (an alias of ``file``)."""
        return self.file

    def to_dict(self) -> Dict[str, Any]:
        out = super().to_dict()
        out["path"] = self.file
        return out


class RecipeLoadError(RecipeError, YamlLoadError):
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
    """A bundle could not be rendered (template error, invalid option).

    ``column`` (1-based, optional) is the column in ``line`` of the template construct at fault.
    """

    def __init__(self, message: str, path: Optional[str] = None, field: Optional[str] = None,
                 value: Any = None, line: Optional[int] = None, column: Optional[int] = None, **fields: Any) -> None:
        self.column = column
        super().__init__(message, path=path, field=field, value=value, line=line, **fields)

    def where(self) -> str:
        text = super().where()
        if self.column and self.file and self.line:
            where = "%s:%d" % (self.file, self.line)
            text = text.replace(where, "%s:%d" % (where, self.column), 1)
        return text

    def to_dict(self) -> Dict[str, Any]:
        out = super().to_dict()
        out["column"] = self.column
        return out
