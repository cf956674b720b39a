# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Per-component Helm values and rendered manifests (:class:`ComponentBundle`).

Values, lowest precedence first (maps merge, lists and scalars replace, an
explicit ``null`` is kept):

1. ``components/<name>/values.yaml`` when it exists;
2. the componentRef's ``valuesFile`` (when set and different from 1.);
3. the merged ``overrides`` (without the ``enabled`` switch);
4. the bundle's ``set`` entries (``aicr bundle --set``, :mod:`.value_overrides`);
5. node scheduling at the registry's paths (:mod:`.node_scheduling`; AICR injects after ``--set``);
6. ``extra_overrides[name]`` (the structured ``values_overrides``, like ``aicr bundle --set-json``: last, wins).

``manifestFiles`` are templates; the engine follows the file name (as AICR does). A ``*.j2`` file is Jinja2,
rendered in a sandbox with ``StrictUndefined`` and the variables ``values``, ``release`` (name, namespace),
``chart`` (name, version, repository), ``component`` and ``criteria``; it loses the suffix. Every other file is a
Go ``text/template`` (:mod:`.go_template`) with Helm's functions and AICR's data: ``.Values.<component>``,
``.Release`` and ``.Chart``. Both engines are bounded in time, output and loop iterations (:mod:`.render_limits`).
"""
from __future__ import annotations

import functools
import json
import math
import posixpath
import re
import string
import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set


try:
    from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError
    from jinja2 import nodes as jinja_nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment
    HAS_JINJA2 = True
except ImportError:  # pragma: no cover - Jinja2 ships with ansible-core; guarded for the import sanity test
    HAS_JINJA2 = False
    StrictUndefined = SandboxedEnvironment = ImmutableSandboxedEnvironment = jinja_nodes = None  # type: ignore

    class TemplateError(Exception):  # type: ignore[no-redef]
        """Placeholder so ``except TemplateError`` stays valid without Jinja2."""

    class TemplateSyntaxError(TemplateError):  # type: ignore[no-redef]
        """Placeholder so ``except TemplateSyntaxError`` stays valid without Jinja2."""

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError, RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template import (
    compile_go_template, helm_context, render_go_template)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.render_limits import DEFAULT_LIMITS, RenderBudget, RenderLimits
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_merge import copy_data, deep_merge
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.node_scheduling import SchedulingOptions, apply_scheduling
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle, ComponentRef, RecipeResult, SchedulingPaths
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.value_overrides import SetOverride, apply_set
from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import YamlLoadError
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml

_TEMPLATE_MEMO = "component_values.templates"
_MEANINGLESS_LINE = re.compile(r"^\s*(#.*)?$|^\s*(---|\.\.\.)\s*(#.*)?$")
_ENV: Any = None


#: Manifests named ``*.j2`` (Jinja2 templates that are not YAML before rendering) lose the suffix.
TEMPLATE_SUFFIX = ".j2"


def _to_yaml(value: Any) -> str:
    try:
        return dump_yaml(value).rstrip("\n")
    except (YamlLoadError, TypeError, ValueError) as exc:
        raise RenderError("manifest template error: to_yaml cannot serialize a %s value (%s)"
                          % (type(value).__name__, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)) from None


def _to_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise RenderError("manifest template error: to_json cannot serialize a %s value (%s)" % (type(value).__name__, exc)) from None


_ACTIVE = threading.local()
#: A printf-style conversion: the optional ``(key)``, flags, width and precision (``*`` takes them from the arguments).
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d*))?")


def _output_limit() -> int:
    budget: Optional[RenderBudget] = getattr(_ACTIVE, "budget", None)
    return (budget.limits if budget else DEFAULT_LIMITS).output_bytes


def _refuse_size(what: str, size: Any) -> None:
    """Refuse a width, count or estimated size larger than the output limit, before the value is built."""
    limit = _output_limit()
    if isinstance(size, int) and not isinstance(size, bool) and size > limit:
        raise RenderError("manifest template: %s %d is larger than the output limit of %d bytes" % (what, size, limit))


def _check_percent_format(fmt: Any, args: Any) -> None:
    """Refuse a ``%`` format whose width or precision (literal or ``*``) is larger than the output limit."""
    if not isinstance(fmt, str):
        return
    star = False
    for match in _PERCENT_SPEC.finditer(fmt):
        for group in match.groups():
            if group == "*":
                star = True
            elif group:
                _refuse_size("a format width or precision of", int(group))
    if star:
        for arg in args if isinstance(args, tuple) else (args,):
            _refuse_size("a format width or precision of", arg)


def _check_str_format(fmt: str) -> None:
    """Refuse a ``str.format`` field whose width or precision is larger than the output limit (or nested)."""
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # str.format itself reports the malformed string
    for _literal, field, spec, _conversion in fields:
        if field is None or not spec:
            continue
        if "{" in spec:
            raise RenderError("manifest template: nested replacement fields in a format spec are not supported")
        for digits in re.findall(r"\d+", spec):
            _refuse_size("a format width or precision of", int(digits))


def _bounded_binop(env: Any, context: Any, operator: str, left: Any, right: Any) -> Any:
    """``*``, ``**`` and string ``%`` refused before they build a value larger than the output limit."""
    limit_bits = _output_limit() * 8
    if operator == "%":
        _check_percent_format(left, right)
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
    if operator == "**" and ints and right > 0 and abs(left) > 1 and right * math.log2(abs(left)) > limit_bits:
        raise RenderError("manifest template: %d ** %d is larger than the output limit" % (left, right))
    if operator == "*":
        if ints and left.bit_length() + right.bit_length() > limit_bits:
            raise RenderError("manifest template: the product of two integers is larger than the output limit")
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(count, int) and len(seq) * count * 8 > limit_bits:
                raise RenderError("manifest template: repeating a %s %d times exceeds the output limit"
                                  % (type(seq).__name__, count))
    return SandboxedEnvironment.call_binop(env, context, operator, left, right)


def _bounded_filters(filters: Mapping[str, Any]) -> Dict[str, Any]:
    """``center``, ``indent``, ``wordwrap``, ``truncate``, ``format`` and ``replace`` refused before they build a
    value larger than the output limit (the originals keep their ``pass_*`` markers through ``functools.wraps``)."""
    originals = dict(filters)

    @functools.wraps(originals["center"])
    def center(value: Any, width: int = 80) -> str:
        _refuse_size("center width", width)
        return originals["center"](value, width)

    @functools.wraps(originals["indent"])
    def indent(s: Any, width: Any = 4, first: bool = False, blank: bool = False) -> str:
        size = width if isinstance(width, int) else len(str(width))
        _refuse_size("indent width", size)
        text = str(s)
        _refuse_size("indenting gives a value of", len(text) + (text.count("\n") + 1) * size)
        return originals["indent"](s, width, first, blank)

    @functools.wraps(originals["wordwrap"])
    def wordwrap(environment: Any, s: Any, width: int = 79, break_long_words: bool = True, wrapstring: Optional[str] = None,
                 break_on_hyphens: bool = True) -> str:
        _refuse_size("wordwrap width", width)
        text = str(s)
        _refuse_size("wrapping gives a value of", len(text) * (1 + len(wrapstring if wrapstring is not None else "\n")))
        return originals["wordwrap"](environment, s, width, break_long_words, wrapstring, break_on_hyphens)

    @functools.wraps(originals["truncate"])
    def truncate(env: Any, s: Any, length: int = 255, killwords: bool = False, end: str = "...", leeway: Optional[int] = None) -> str:
        _refuse_size("truncate length", length)
        return originals["truncate"](env, s, length, killwords, end, leeway)

    @functools.wraps(originals["format"])
    def format_filter(value: Any, *args: Any, **kwargs: Any) -> str:
        _check_percent_format(str(value), kwargs or args)
        return originals["format"](value, *args, **kwargs)

    @functools.wraps(originals["replace"])
    def replace(eval_ctx: Any, s: Any, old: Any, new: Any, count: Optional[int] = None) -> str:
        text, old_text, new_text = str(s), str(old), str(new)
        found = text.count(old_text) if count is None or count < 0 else min(count, text.count(old_text))
        _refuse_size("replacing gives a value of", len(text) + found * (len(new_text) - len(old_text)))
        return originals["replace"](eval_ctx, s, old, new, count)

    return {"center": center, "indent": indent, "wordwrap": wordwrap, "truncate": truncate, "format": format_filter,
            "replace": replace}


def _bounded_iter(iterable: Any) -> Any:
    """Every Jinja2 ``for`` loop iterates through this: each item counts against the loop budget."""
    budget: Optional[RenderBudget] = getattr(_ACTIVE, "budget", None)
    for item in iterable:
        if budget is not None:
            budget.tick()
        yield item


def _make_environment() -> Any:
    """An immutable sandboxed Jinja2 environment (manifests cannot change the values they are given) whose
    ``*``/``**``/``%``, format widths, size-building filters and ``for`` loops are bounded; no ``lipsum``."""

    class BoundedSandbox(ImmutableSandboxedEnvironment):  # type: ignore[misc,valid-type]
        intercepted_binops = frozenset(["*", "**", "%"])

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            return _bounded_binop(self, context, operator, left, right)

        def wrap_str_format(self, value: Any) -> Any:
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None
            fmt = value.__self__

            def bounded(*args: Any, **kwargs: Any) -> str:
                _check_str_format(fmt)
                return wrapped(*args, **kwargs)

            return bounded

        def _parse(self, source: str, name: Optional[str], filename: Optional[str]) -> Any:
            tree = super()._parse(source, name, filename)
            for loop in tree.find_all(jinja_nodes.For):
                loop.iter = jinja_nodes.Call(jinja_nodes.EnvironmentAttribute("bounded_iter"), [loop.iter], [], None, None,
                                             lineno=loop.lineno)
            return tree

        bounded_iter = staticmethod(_bounded_iter)

    env = BoundedSandbox(undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, autoescape=False)
    env.globals.pop("lipsum", None)
    env.filters.update(_bounded_filters(env.filters))
    return env


def template_environment() -> Any:
    """The shared sandboxed Jinja2 environment (``trim_blocks`` on, as in Ansible; bounded loops and operators)."""
    global _ENV  # pylint: disable=global-statement
    if not HAS_JINJA2:
        raise RenderError("rendering manifest templates needs the Python package jinja2, which is not installed")
    if _ENV is None:
        env = _make_environment()
        env.filters["to_yaml"] = _to_yaml
        env.filters["to_json"] = _to_json
        _ENV = env
    return _ENV


def is_jinja_manifest(relpath: str) -> bool:
    """The engine rule: ``*.j2`` manifests are Jinja2, every other manifest is a Go template."""
    return relpath.endswith(TEMPLATE_SUFFIX)


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
    """Compiled template of ``relpath`` (cached per store and real path): Jinja2 for ``*.j2``, else Go."""
    cache: Dict[str, Any] = store.memo.setdefault(_TEMPLATE_MEMO, {})
    real = store.resolve_path(relpath, None, origin)
    template = cache.get(real)
    if template is None:
        text = store.read_text(relpath, None, origin)
        if not is_jinja_manifest(relpath):
            template = compile_go_template(text, real, field=origin, value=relpath)
            cache[real] = template
            return template
        env = template_environment()
        try:
            code = env.compile(text, name=relpath, filename=real)
        except TemplateSyntaxError as exc:
            raise RenderError("manifest template syntax error: %s" % exc.message, path=real, line=exc.lineno,
                              field=origin, value=relpath) from None
        except (RecursionError, MemoryError) as exc:
            raise RenderError("manifest template too large or nested too deeply (%s)" % type(exc).__name__, path=real,
                              field=origin, value=relpath) from None
        template = env.template_class.from_code(env, code, env.make_globals(None))
        cache[real] = template
    return template


def _render_jinja(template: Any, variables: Mapping[str, Any], budget: RenderBudget) -> str:
    chunks: List[str] = []
    _ACTIVE.budget = budget
    try:
        for chunk in template.generate(**variables):
            chunks.append(chunk)
            budget.add_output(len(chunk))
    finally:
        _ACTIVE.budget = None
    return "".join(chunks)


def render_manifest(store: RecipeStore, relpath: str, variables: Mapping[str, Any], origin: str,
                    limits: Optional[RenderLimits] = None) -> str:
    """Render one manifest template (engine by file name); errors name the file and the template line.

    ``variables`` are the Jinja2 variables; a Go template gets :func:`.go_template.helm_context` built from them.
    ``limits`` bound the work (default :data:`.render_limits.DEFAULT_LIMITS`).
    """
    template = _compile(store, relpath, origin)
    real = store.resolve_path(relpath, None, origin)
    if not is_jinja_manifest(relpath):
        release = variables.get("release") or {}
        chart = variables.get("chart") or {}
        data = helm_context(str(variables.get("component") or release.get("name") or ""), variables.get("values"),
                            release.get("namespace"), chart.get("name"), chart.get("version"))
        return render_go_template(template, data, limits, field=origin, value=relpath)
    budget = RenderBudget(limits, real, origin, relpath)
    try:
        return _render_jinja(template, variables, budget)
    except TemplateError as exc:
        raise RenderError("manifest template error: %s" % (exc.message or type(exc).__name__), path=real,
                          line=_template_line(exc, real), field=origin, value=relpath) from None
    except RecursionError:
        raise budget.fail("manifest template error: templates or data nested too deeply") from None
    except MemoryError:
        raise budget.fail("manifest template error: out of memory while rendering") from None
    except RenderError as exc:
        if exc.file:
            raise
        raise RenderError(exc.message, path=real, line=_template_line(exc, real), field=origin, value=relpath) from None
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


def component_values(store: RecipeStore, ref: ComponentRef, extra: Optional[Mapping[str, Any]] = None,
                     set_overrides: Sequence[SetOverride] = (), scheduling: Optional[SchedulingOptions] = None,
                     scheduling_paths: Optional[SchedulingPaths] = None) -> Dict[str, Any]:
    """The final Helm values of one component (a new dict), layered as the module docstring says."""
    default_file = "components/%s/values.yaml" % ref.name
    layers: List[Mapping[str, Any]] = []
    if store.exists(default_file):
        layers.append(_load_values(store, default_file, "components/%s/values.yaml" % ref.name))
    if ref.values_file and posixpath.normpath(ref.values_file) != default_file:
        layers.append(_load_values(store, ref.values_file, "componentRefs[%s].valuesFile" % ref.name))
    layers.append({k: v for k, v in (ref.overrides or {}).items() if k != "enabled"})
    values: Dict[str, Any] = copy_data(layers[0])
    for layer in layers[1:]:
        if layer:
            values = deep_merge(values, layer)
    if set_overrides:
        values = apply_set(values, set_overrides)
    if scheduling is not None and scheduling_paths is not None:
        apply_scheduling(values, scheduling_paths, scheduling, ref.overrides, [o.dotted for o in set_overrides])
    if extra:
        values = deep_merge(values, {k: v for k, v in extra.items() if k != "enabled"})
    return values


def _extra_disables(extra: Optional[Mapping[str, Any]]) -> bool:
    if not extra or "enabled" not in extra:
        return False
    value = extra["enabled"]
    return value is False or (isinstance(value, str) and value.strip().lower() == "false")


def build_component_bundles(store: RecipeStore, result: RecipeResult,
                            extra_overrides: Optional[Mapping[str, Mapping[str, Any]]] = None,
                            disabled: Iterable[str] = (),
                            set_overrides: Optional[Mapping[str, Sequence[SetOverride]]] = None,
                            scheduling: Optional[SchedulingOptions] = None) -> List[ComponentBundle]:
    """One :class:`ComponentBundle` per enabled component, in deployment order.

    ``extra_overrides`` maps a component name to values merged last (an
    ``enabled: false`` there disables the component).  ``disabled`` names more
    components to leave out.  DependencyRefs to left-out components are dropped.
    ``set_overrides`` maps a component name to its parsed ``set`` entries; ``scheduling``
    (when given) is written at the paths of each component's registry entry.
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
        paths = SchedulingPaths.from_registry(store.registry.get(name), store.registry_sources.get(name))
        values = component_values(store, ref, extra_overrides.get(name), (set_overrides or {}).get(name, ()),
                                  scheduling, paths)
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
