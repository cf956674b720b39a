# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Per-component Helm values and rendered manifests (:class:`ComponentBundle`).

Values, lowest precedence first (maps merge, lists and scalars replace, an
explicit ``null`` is kept):

1. ``components/<name>/values.yaml`` when it exists;
2. the componentRef's ``valuesFile`` (when set and different from 1.);
3. the merged ``overrides`` (without the ``enabled`` switch);
4. ``extra_overrides[name]`` (the bundle-time ``--set`` equivalent).

``manifestFiles`` are Jinja2 templates rendered in a sandbox with
``StrictUndefined`` and the variables ``values``, ``release`` (name, namespace),
``chart`` (name, version, repository), ``component`` and ``criteria``.
"""
from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set

try:
    from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment
    HAS_JINJA2 = True
except ImportError:  # pragma: no cover - Jinja2 ships with ansible-core; guarded for the import sanity test
    HAS_JINJA2 = False
    StrictUndefined = SandboxedEnvironment = None  # type: ignore

    class TemplateError(Exception):  # type: ignore[no-redef]
        """Placeholder so ``except TemplateError`` stays valid without Jinja2."""

    class TemplateSyntaxError(TemplateError):  # type: ignore[no-redef]
        """Placeholder so ``except TemplateSyntaxError`` stays valid without Jinja2."""

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError, RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_merge import copy_data, deep_merge
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle, ComponentRef, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml

_TEMPLATE_MEMO = "component_values.templates"
_MEANINGLESS_LINE = re.compile(r"^\s*(#.*)?$|^\s*(---|\.\.\.)\s*(#.*)?$")
_ENV: Any = None


#: Manifests named ``*.j2`` (Jinja2 templates that are not YAML before rendering) lose the suffix.
TEMPLATE_SUFFIX = ".j2"


def _to_yaml(value: Any) -> str:
    return dump_yaml(value).rstrip("\n")


def _to_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def template_environment() -> Any:
    """The shared sandboxed Jinja2 environment (``trim_blocks`` on, as in Ansible)."""
    global _ENV  # pylint: disable=global-statement
    if not HAS_JINJA2:
        raise RenderError("rendering manifest templates needs the Python package jinja2, which is not installed")
    if _ENV is None:
        env = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                                   autoescape=False)
        env.filters["to_yaml"] = _to_yaml
        env.filters["to_json"] = _to_json
        _ENV = env
    return _ENV


def is_blank_manifest(text: str) -> bool:
    """True when ``text`` holds only whitespace, comments and document markers."""
    return all(_MEANINGLESS_LINE.match(line) for line in text.splitlines())


def _template_line(exc: BaseException, filename: str) -> Optional[int]:
    line = getattr(exc, "lineno", None)
    if line:
        return line
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            found = tb.tb_lineno
        tb = tb.tb_next
    return found


def _compile(store: RecipeStore, relpath: str, origin: str) -> Any:
    """Compiled template of ``relpath`` (cached per store and real path)."""
    cache: Dict[str, Any] = store.memo.setdefault(_TEMPLATE_MEMO, {})
    real = store.resolve_path(relpath, None, origin)
    template = cache.get(real)
    if template is None:
        env = template_environment()
        text = store.read_text(relpath, None, origin)
        try:
            code = env.compile(text, name=relpath, filename=real)
        except TemplateSyntaxError as exc:
            raise RenderError("manifest template syntax error: %s" % exc.message, path=real, line=exc.lineno,
                              field=origin, value=relpath) from None
        template = env.template_class.from_code(env, code, env.make_globals(None))
        cache[real] = template
    return template


def render_manifest(store: RecipeStore, relpath: str, variables: Mapping[str, Any], origin: str) -> str:
    """Render one manifest template; errors name the file and the template line."""
    template = _compile(store, relpath, origin)
    real = store.resolve_path(relpath, None, origin)
    try:
        return template.render(**variables)
    except TemplateError as exc:
        raise RenderError("manifest template error: %s" % (exc.message or type(exc).__name__), path=real,
                          line=_template_line(exc, real), field=origin, value=relpath) from None
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
        raise RenderError("manifest template error: %s: %s" % (type(exc).__name__, exc), path=real,
                          line=_template_line(exc, real), field=origin, value=relpath) from None


def _load_values(store: RecipeStore, relpath: str, field: str) -> Dict[str, Any]:
    data = store.load_yaml(relpath, None, field)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RecipeSchemaError("values file must hold a YAML mapping", path=store.resolve_path(relpath), field=field,
                                value=type(data).__name__)
    return data


def component_values(store: RecipeStore, ref: ComponentRef, extra: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The final Helm values of one component (a new dict)."""
    default_file = "components/%s/values.yaml" % ref.name
    layers: List[Mapping[str, Any]] = []
    if store.exists(default_file):
        layers.append(_load_values(store, default_file, "components/%s/values.yaml" % ref.name))
    if ref.values_file and posixpath.normpath(ref.values_file) != default_file:
        layers.append(_load_values(store, ref.values_file, "componentRefs[%s].valuesFile" % ref.name))
    layers.append({k: v for k, v in (ref.overrides or {}).items() if k != "enabled"})
    if extra:
        layers.append({k: v for k, v in extra.items() if k != "enabled"})
    values: Dict[str, Any] = copy_data(layers[0])
    for layer in layers[1:]:
        if layer:
            values = deep_merge(values, layer)
    return values


def _extra_disables(extra: Optional[Mapping[str, Any]]) -> bool:
    if not extra or "enabled" not in extra:
        return False
    value = extra["enabled"]
    return value is False or (isinstance(value, str) and value.strip().lower() == "false")


def build_component_bundles(store: RecipeStore, result: RecipeResult,
                            extra_overrides: Optional[Mapping[str, Mapping[str, Any]]] = None,
                            disabled: Iterable[str] = ()) -> List[ComponentBundle]:
    """One :class:`ComponentBundle` per enabled component, in deployment order.

    ``extra_overrides`` maps a component name to values merged last (an
    ``enabled: false`` there disables the component).  ``disabled`` names more
    components to leave out.  DependencyRefs to left-out components are dropped.
    """
    extra_overrides = extra_overrides or {}
    for name, extra in extra_overrides.items():
        if not isinstance(extra, Mapping):
            raise RenderError("extra overrides of a component must be a mapping", field="extra_overrides.%s" % name,
                              value=extra)
    known = {ref.name for ref in result.component_refs}
    for name in extra_overrides:
        if name not in known:
            raise RenderError("extra overrides name component %r, which is not part of the recipe" % name,
                              field="extra_overrides", value=name)
    off: Set[str] = set(disabled or ())
    off.update(ref.name for ref in result.component_refs if not ref.enabled)
    off.update(name for name, extra in extra_overrides.items() if _extra_disables(extra))
    criteria = result.criteria.to_dict()
    bundles: List[ComponentBundle] = []
    for name in result.deployment_order:
        if name in off:
            continue
        ref = result.component(name)
        values = component_values(store, ref, extra_overrides.get(name))
        variables = {
            "values": values,
            "release": {"name": name, "namespace": ref.namespace},
            "chart": {"name": ref.chart, "version": ref.version, "repository": ref.source},
            "component": name,
            "criteria": criteria,
        }
        manifests: Dict[str, str] = {}
        sources: Dict[str, str] = {}
        for relpath in ref.manifest_files:
            key = posixpath.basename(relpath)
            if key.endswith(TEMPLATE_SUFFIX):  # x.yaml.j2 renders to x.yaml
                key = key[:-len(TEMPLATE_SUFFIX)]
            if key in sources:
                raise RenderError("two manifests of component %r have the same file name %r (%s and %s)"
                                  % (name, key, sources[key], relpath),
                                  field="componentRefs[%s].manifestFiles" % name, value=relpath)
            sources[key] = relpath
            text = render_manifest(store, relpath, variables, "componentRefs[%s].manifestFiles" % name)
            if not is_blank_manifest(text):
                manifests[key] = text
        bundles.append(ComponentBundle(
            name=name, type=ref.type, order=len(bundles), namespace=ref.namespace, repository=ref.source,
            chart=ref.chart, version=ref.version, values=values, manifests=manifests,
            dependency_refs=[d for d in ref.dependency_refs if d not in off],
            kustomize_path=ref.path, kustomize_tag=ref.tag))
    return bundles
