# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Layered recipe directories (AICR layout) loaded once and indexed.

A recipe directory holds ``registry.yaml``, ``overlays/*.yaml`` (kind
``RecipeMetadata``), ``mixins/*.yaml`` (kind ``RecipeMixin``) and ``components/<name>/``
(values files and Jinja2 manifest templates).  Other top-level directories
(``checks/``, ``validators/``, ...) are ignored.

Layering: the collection's own ``recipes/`` first, then the user directories in
order.  A later directory replaces files of the same relative path (for overlays,
mixins, values and manifests alike); ``registry.yaml`` files are merged by
component name (a later entry replaces the earlier entry of the same name).

Every file referenced by a recipe (``valuesFile``, ``manifestFiles``) goes through
:meth:`RecipeStore.resolve_path`, which refuses absolute paths, ``..`` escapes and
symlinks that resolve outside the recipe directory the file was found in.

Every file is read through ``safe_yaml`` (size limit, regular files only, UTF-8, no duplicate keys, nesting
at most ``safe_yaml.MAX_DEPTH`` levels); component names must be DNS-1123 labels
(:func:`..recipe_model.validate_component_name`) and constraint expressions must parse
(:func:`..constraints.parse_constraint`), so a bad overlay is refused when the store is loaded, naming its file
and field.
"""
from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_criteria import parse_overlay_criteria
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import parse_constraint, parse_constraint_value
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import (
    ConstraintError, RecipeLoadError, RecipePathError, RecipeSchemaError)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import (
    ACCEPTED_API_VERSIONS, COMPONENT_TYPES, CRITERIA_FIELDS, Criteria, validate_component_name)
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import MAX_BYTES, load_yaml_file, read_regular_file

OVERLAY_KIND = "RecipeMetadata"
MIXIN_KIND = "RecipeMixin"
REGISTRY_KIND = "ComponentRegistry"
REGISTRY_FILE = "registry.yaml"
BASE_NAME = "base"
YAML_SUFFIXES = (".yaml", ".yml")

_STRING_REF_FIELDS = ("type", "source", "chart", "version", "namespace", "path", "tag", "valuesFile")
_LIST_REF_FIELDS = ("dependencyRefs", "manifestFiles", "patches", "expectedResources")


def default_builtin_dir() -> str:
    """``<collection root>/recipes`` (configure -> module_utils -> plugins -> collection root)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))), "recipes")


@dataclass
class RecipeDocument:
    """One parsed overlay (``RecipeMetadata``) or mixin (``RecipeMixin``) file."""

    name: str
    kind: str
    path: str  # absolute path of the file, used in error messages
    relpath: str  # path relative to its recipe directory, e.g. ``overlays/eks.yaml``
    recipe_dir: str  # the recipe directory the file came from
    api_version: str
    spec: Dict[str, Any]
    criteria: Optional[Criteria] = None  # None: never matched directly (base, intermediate overlays)
    base: str = ""
    mixins: List[str] = dc_field(default_factory=list)


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _check_string_list(value: Any, path: str, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RecipeSchemaError("%s must be a list of non-empty strings" % where, path=path, field=where, value=value)


def _check_named_list(value: Any, path: str, where: str, components: bool = False) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise RecipeSchemaError("%s must be a list" % where, path=path, field=where, value=value)
    seen: Set[str] = set()
    for pos, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item.get("name"):
            raise RecipeSchemaError("%s[%d] must be a mapping with a non-empty string name" % (where, pos),
                                    path=path, field="%s[%d]" % (where, pos), value=item)
        if components:
            validate_component_name(item["name"], path, "%s[%d].name" % (where, pos))
        if item["name"] in seen:
            raise RecipeSchemaError("%s lists %r twice" % (where, item["name"]), path=path,
                                    field="%s[%s]" % (where, item["name"]), value=item["name"])
        seen.add(item["name"])


def _check_constraints(value: Any, path: str, where: str, names: bool = True) -> None:
    """Every constraint of a list (already a named list) has a parsable value expression (a known operator) and,
    with ``names``, a ``{Type}.{Subtype}.{Key}`` name (validation-phase checks have free names)."""
    for item in value or []:
        try:
            if names:
                parse_constraint(item["name"], item.get("value"))
            else:
                parse_constraint_value(item["name"], item.get("value"))
        except ConstraintError as exc:
            raise ConstraintError(exc.message, path=path, field="%s[%s].value" % (where, item["name"]),
                                  value=item.get("value")) from None


def _check_component_ref(ref: Dict[str, Any], path: str) -> None:
    where = "spec.componentRefs[%s]" % ref["name"]
    for key in _STRING_REF_FIELDS:
        value = ref.get(key)
        if value is not None and not isinstance(value, str):
            if key == "version" and isinstance(value, (int, float)) and not isinstance(value, bool):
                ref[key] = str(value)  # ``version: 1.2`` unquoted in YAML
                continue
            raise RecipeSchemaError("%s.%s must be a string" % (where, key), path=path, field="%s.%s" % (where, key),
                                    value=value)
    if ref.get("type") not in (None, "") and ref["type"] not in COMPONENT_TYPES:
        raise RecipeSchemaError("%s.type must be one of %s" % (where, ", ".join(COMPONENT_TYPES)), path=path,
                                field="%s.type" % where, value=ref["type"])
    if ref.get("overrides") is not None and not isinstance(ref["overrides"], dict):
        raise RecipeSchemaError("%s.overrides must be a mapping" % where, path=path, field="%s.overrides" % where,
                                value=ref["overrides"])
    for key in ("dependencyRefs", "manifestFiles"):
        _check_string_list(ref.get(key), path, "%s.%s" % (where, key))
    for key in ("patches", "expectedResources"):
        if ref.get(key) is not None and not isinstance(ref[key], list):
            raise RecipeSchemaError("%s.%s must be a list" % (where, key), path=path, field="%s.%s" % (where, key),
                                    value=ref[key])


def check_spec(spec: Any, path: str) -> Dict[str, Any]:
    """Structural check of an overlay/mixin ``spec``; errors name the file and field."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise RecipeSchemaError("spec must be a mapping", path=path, field="spec", value=spec)
    _check_named_list(spec.get("constraints"), path, "spec.constraints")
    for item in spec.get("constraints") or []:
        if "value" not in item:
            raise RecipeSchemaError("constraint %r has no value" % item["name"], path=path,
                                    field="spec.constraints[%s].value" % item["name"], value=None)
    _check_constraints(spec.get("constraints"), path, "spec.constraints")
    _check_named_list(spec.get("componentRefs"), path, "spec.componentRefs", components=True)
    for ref in spec.get("componentRefs") or []:
        _check_component_ref(ref, path)
    validation = spec.get("validation")
    if validation is not None:
        if not isinstance(validation, dict):
            raise RecipeSchemaError("spec.validation must be a mapping of phase name to phase", path=path,
                                    field="spec.validation", value=validation)
        for phase, body in validation.items():
            if body is not None and not isinstance(body, dict):
                raise RecipeSchemaError("validation phase must be a mapping", path=path,
                                        field="spec.validation.%s" % phase, value=body)
            if body:
                _check_string_list(body.get("checks"), path, "spec.validation.%s.checks" % phase)
                _check_named_list(body.get("constraints"), path, "spec.validation.%s.constraints" % phase)
                _check_constraints(body.get("constraints"), path, "spec.validation.%s.constraints" % phase, names=False)
    _check_string_list(spec.get("mixins"), path, "spec.mixins")
    if spec.get("base") is not None and not isinstance(spec["base"], str):
        raise RecipeSchemaError("spec.base must be a string (an overlay name)", path=path, field="spec.base",
                                value=spec["base"])
    return spec


def _load_document(path: str, kind_required: Optional[str]) -> Optional[Dict[str, Any]]:
    data = load_yaml_file(path, error=RecipeLoadError)
    if not isinstance(data, dict):
        raise RecipeSchemaError("recipe file must hold one YAML mapping", path=path, field="(document)",
                                value=type(data).__name__)
    kind = data.get("kind") or ""
    if kind_required is None:  # overlays/: skip other kinds (e.g. ValidatorCatalog), as AICR does
        if kind not in ("", OVERLAY_KIND):
            return None
    elif kind != kind_required:
        raise RecipeSchemaError("wrong kind, expected %s" % kind_required, path=path, field="kind", value=kind)
    api_version = data.get("apiVersion")
    if api_version not in ACCEPTED_API_VERSIONS:
        raise RecipeSchemaError("unsupported apiVersion; accepted: %s" % ", ".join(ACCEPTED_API_VERSIONS), path=path,
                                field="apiVersion", value=api_version)
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise RecipeSchemaError("metadata.name is missing or not a string", path=path, field="metadata.name", value=name)
    return data


def _walk_yaml(recipe_dir: str, sub: str) -> List[str]:
    """Relative paths (``sub/...``) of the YAML files under ``recipe_dir/sub``, sorted."""
    top = os.path.join(recipe_dir, sub)
    out: List[str] = []
    if not os.path.isdir(top):
        return out
    for root, dirs, files in os.walk(top):
        dirs.sort()
        rel_root = os.path.relpath(root, recipe_dir).replace(os.sep, "/")
        for name in sorted(files):
            if name.endswith(YAML_SUFFIXES):
                out.append(posixpath.join(rel_root, name))
    return out


class RecipeStore:
    """All overlays, mixins and the component registry of a stack of recipe directories.

    Build with :meth:`load`.  ``overlays`` and ``mixins`` map a name to a
    :class:`RecipeDocument`; ``registry`` maps a component name to its registry
    entry.  Files referenced by recipes are read lazily and cached.  Treat all
    returned data as read-only: it is shared between resolutions.
    """

    def __init__(self, dirs: List[str], builtin_dir: Optional[str] = None) -> None:
        self.dirs: List[str] = list(dirs)  # absolute, in layering order (builtin first)
        self.builtin_dir = builtin_dir
        self.overlays: Dict[str, RecipeDocument] = {}
        self.mixins: Dict[str, RecipeDocument] = {}
        self.registry: Dict[str, Dict[str, Any]] = {}
        self.registry_sources: Dict[str, str] = {}  # component name -> registry.yaml that defined it
        #: criteria values used by overlays of user (non-builtin) directories, per field
        self.extra_criteria_values: Dict[str, Set[str]] = {}
        #: per-store caches of other modules (resolved chains, compiled templates, ...)
        self.memo: Dict[Any, Any] = {}
        self._real_dirs = [os.path.realpath(d) for d in self.dirs]
        self._paths: Dict[str, Tuple[str, str]] = {}
        self._texts: Dict[str, str] = {}
        self._yaml: Dict[str, Any] = {}

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, dirs: Union[str, Iterable[str], None] = (), include_builtin: bool = True,
             builtin_dir: Optional[str] = None) -> "RecipeStore":
        """Load the builtin recipes (unless ``include_builtin`` is false) and ``dirs`` on top.

        A user directory (or an explicitly given ``builtin_dir``) that does not exist
        is an error naming it; a missing default builtin directory is skipped.
        """
        if dirs is None:
            dirs = []
        elif isinstance(dirs, str):
            dirs = [dirs]
        user_dirs = [os.path.abspath(os.path.expanduser(str(d))) for d in dirs]
        ordered: List[str] = []
        builtin: Optional[str] = None
        if include_builtin:
            builtin = os.path.abspath(builtin_dir) if builtin_dir else default_builtin_dir()
            if os.path.isdir(builtin):
                ordered.append(builtin)
            elif builtin_dir:
                raise RecipePathError("builtin recipe directory does not exist", path=builtin, field="builtin_dir",
                                      value=builtin_dir)
            else:
                builtin = None
        for given, path in zip(dirs, user_dirs):
            if not os.path.isdir(path):
                raise RecipePathError("recipe directory does not exist or is not a directory", path=path,
                                      field="recipe_dirs", value=str(given))
            if path not in ordered:
                ordered.append(path)
        store = cls(ordered, builtin)
        store._load_documents()
        store._load_registry()
        return store

    def _layered(self, sub: str) -> List[Tuple[int, str, str]]:
        """``[(dir index, relpath, abs path)]`` of YAML files under ``sub``, later dirs replacing."""
        chosen: Dict[str, Tuple[int, str, str]] = {}
        for index, recipe_dir in enumerate(self.dirs):
            for rel in _walk_yaml(recipe_dir, sub):
                abs_path = os.path.join(recipe_dir, rel)
                if not _is_within(os.path.realpath(abs_path), self._real_dirs[index]):
                    raise RecipePathError("recipe file is a symlink resolving outside its recipe directory",
                                          path=abs_path, field=sub, value=rel)
                chosen[rel] = (index, rel, abs_path)
        return sorted(chosen.values())

    def _load_documents(self) -> None:
        for sub, kind, target in (("overlays", None, self.overlays), ("mixins", MIXIN_KIND, self.mixins)):
            origin: Dict[str, Tuple[int, str]] = {}
            for index, rel, abs_path in self._layered(sub):
                data = _load_document(abs_path, kind)
                if data is None:
                    continue
                name = data["metadata"]["name"]
                if name in origin:
                    prev_index, prev_path = origin[name]
                    if prev_index == index:
                        raise RecipeSchemaError("duplicate %s name %r (also in %s)" % (sub[:-1], name, prev_path),
                                                path=abs_path, field="metadata.name", value=name)
                spec = check_spec(data.get("spec"), abs_path)
                criteria = None
                if spec.get("criteria") is not None and name != BASE_NAME:
                    criteria = parse_overlay_criteria(spec["criteria"], abs_path)
                    if self.dirs[index] != self.builtin_dir:
                        for fname in CRITERIA_FIELDS[:-1]:
                            self.extra_criteria_values.setdefault(fname, set()).add(getattr(criteria, fname))
                doc = RecipeDocument(
                    name=name, kind=data.get("kind") or OVERLAY_KIND, path=abs_path, relpath=rel,
                    recipe_dir=self.dirs[index], api_version=data["apiVersion"], spec=spec, criteria=criteria,
                    base=(spec.get("base") or "").strip(), mixins=list(spec.get("mixins") or []))
                origin[name] = (index, abs_path)
                target[name] = doc

    def _load_registry(self) -> None:
        for recipe_dir in self.dirs:
            path = os.path.join(recipe_dir, REGISTRY_FILE)
            if not os.path.lexists(path):
                continue
            if not _is_within(os.path.realpath(path), os.path.realpath(recipe_dir)):
                raise RecipePathError("registry.yaml is a symlink resolving outside its recipe directory", path=path,
                                      field=REGISTRY_FILE, value=os.path.realpath(path))
            data = load_yaml_file(path, error=RecipeLoadError)
            if not isinstance(data, dict):
                raise RecipeSchemaError("registry must be a YAML mapping", path=path, field="(document)",
                                        value=type(data).__name__)
            if data.get("kind") != REGISTRY_KIND:
                raise RecipeSchemaError("wrong kind, expected %s" % REGISTRY_KIND, path=path, field="kind",
                                        value=data.get("kind"))
            if data.get("apiVersion") not in ACCEPTED_API_VERSIONS:
                raise RecipeSchemaError("unsupported apiVersion; accepted: %s" % ", ".join(ACCEPTED_API_VERSIONS),
                                        path=path, field="apiVersion", value=data.get("apiVersion"))
            components = data.get("components") or []
            _check_named_list(components, path, "components", components=True)
            for entry in components:
                for section in ("helm", "kustomize"):
                    if entry.get(section) is not None and not isinstance(entry[section], dict):
                        raise RecipeSchemaError("%s must be a mapping" % section, path=path,
                                                field="components[%s].%s" % (entry["name"], section), value=entry[section])
                _check_string_list(entry.get("manifestFiles"), path, "components[%s].manifestFiles" % entry["name"])
                self.registry[entry["name"]] = entry
                self.registry_sources[entry["name"]] = path

    # ------------------------------------------------------------------ files
    @property
    def user_dirs(self) -> List[str]:
        return [d for d in self.dirs if d != self.builtin_dir]

    def _locate(self, relpath: str, origin: Optional[str], field_name: Optional[str]) -> Optional[Tuple[str, str]]:
        cached = self._paths.get(relpath)
        if cached is not None:
            return cached
        if not isinstance(relpath, str) or not relpath.strip() or "\0" in relpath:
            raise RecipePathError("path must be a non-empty relative path", path=origin, field=field_name, value=relpath)
        if relpath.startswith(("/", "\\", "~")) or os.path.isabs(relpath) or (len(relpath) > 1 and relpath[1] == ":"):
            raise RecipePathError("absolute paths are refused; use a path relative to the recipe directory",
                                  path=origin, field=field_name, value=relpath)
        norm = posixpath.normpath(relpath.replace("\\", "/"))
        if norm == ".." or norm.startswith("../"):
            raise RecipePathError("path escapes the recipe directory", path=origin, field=field_name, value=relpath)
        for index in range(len(self.dirs) - 1, -1, -1):
            candidate = os.path.join(self.dirs[index], norm)
            if not os.path.lexists(candidate):
                continue
            real = os.path.realpath(candidate)
            if not _is_within(real, self._real_dirs[index]):
                raise RecipePathError("path is a symlink resolving outside the recipe directory %s" % self.dirs[index],
                                      path=origin, field=field_name, value=relpath)
            if not os.path.isfile(real):
                raise RecipePathError("path is not a regular file", path=origin, field=field_name, value=relpath)
            found = (real, self.dirs[index])
            self._paths[relpath] = found
            return found
        return None

    def exists(self, relpath: str) -> bool:
        """True when ``relpath`` names a file of some recipe directory (containment-checked)."""
        return self._locate(relpath, None, None) is not None

    def resolve_path(self, relpath: str, origin: Optional[str] = None, field: Optional[str] = None) -> str:
        """Absolute real path of ``relpath`` in the topmost directory that has it.

        Raises :class:`RecipePathError` naming ``origin`` (the referencing file),
        ``field`` and the value when the path is absolute, escapes with ``..``, is a
        symlink leaving its recipe directory, or exists in no directory.
        """
        found = self._locate(relpath, origin, field)
        if found is None:
            raise RecipePathError("file not found in the recipe directories (%s)" % ", ".join(self.dirs),
                                  path=origin, field=field, value=relpath)
        return found[0]

    def read_text(self, relpath: str, origin: Optional[str] = None, field: Optional[str] = None) -> str:
        """UTF-8 text of a recipe file (cached)."""
        real = self.resolve_path(relpath, origin, field)
        text = self._texts.get(real)
        if text is None:
            try:
                raw = read_regular_file(real, MAX_BYTES)
            except OSError as exc:
                raise RecipeLoadError("cannot read file: %s" % exc.strerror, path=real) from None
            if raw is None:
                raise RecipeLoadError("not a regular file; refused", path=real, field=field, value=relpath)
            if len(raw) > MAX_BYTES:
                raise RecipeLoadError("file is over the %d byte limit; refused" % MAX_BYTES, path=real, field=field,
                                      value=relpath)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise RecipeLoadError("file is not UTF-8 text", path=real, field=field, value=relpath) from None
            self._texts[real] = text
        return text

    def load_yaml(self, relpath: str, origin: Optional[str] = None, field: Optional[str] = None) -> Any:
        """Parsed YAML of a recipe file (cached; do not mutate the result)."""
        real = self.resolve_path(relpath, origin, field)
        if real not in self._yaml:
            self._yaml[real] = load_yaml_file(real, error=RecipeLoadError)
        return self._yaml[real]

    def overlay_files(self) -> Mapping[str, str]:
        """``{overlay name: file}`` (for diagnostics)."""
        return {name: doc.path for name, doc in self.overlays.items()}
