# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A native renderer of Go ``text/template`` with Helm's context and functions, for AICR manifest templates.

:func:`compile_go_template` parses a file (syntax errors, unknown functions and undefined variables are
found here, as Go finds them at parse time); :func:`render_go_template` executes it against data such as
:func:`helm_context` builds. Execution follows Go's semantics (truth, short-circuit ``and``/``or``,
comparisons that refuse different kinds, ``range`` over lists, maps in key order and integers,
``break``/``continue``, variables scoped to their control structure) and Helm's engine (``missingkey=zero``:
a missing map key is nil, ``<no value>`` is removed from the output, a field of a nil value is an error).
Work is bounded by :class:`RenderLimits`; every failure is a ``RenderError`` naming the file, line, column and
the function or construct.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template_funcs import (
    FUNCTIONS, SPECIAL_FUNCTIONS, FuncError, built_size, go_type, sprint, sprint_value, sprintf, sprintln, strval, truth)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template_parse import (
    Action, Branch, Command, LoopControl, Node, Operand, Pipeline, Template, TemplateCall, TemplateFault, Text,
    line_column, parse)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.render_limits import RenderBudget, RenderLimits

NO_VALUE = "<no value>"
FUNCTION_NAMES = frozenset(FUNCTIONS) | SPECIAL_FUNCTIONS
_KIND_NAMES = {"string": "string", "int": "int", "bool": "bool", "map": "map[string]interface {}"}
_MISSING = object()


class GoTemplate:
    """A parsed manifest template and the file it came from."""

    def __init__(self, template: Template, path: Optional[str]) -> None:
        self.template = template
        self.path = path


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _fault_to_error(source: str, fault: TemplateFault, path: Optional[str], field: Optional[str], value: Any,
                    phase: str) -> RenderError:
    line, column = line_column(source, fault.offset)
    where = " at <%s>" % fault.construct if fault.construct else ""
    return RenderError("Go template %s%s: %s" % (phase, where, fault.message), path=path, line=line, column=column,
                       field=field, value=value)


def compile_go_template(source: str, path: Optional[str] = None, limits: Optional[RenderLimits] = None,
                        field: Optional[str] = None, value: Any = None) -> GoTemplate:
    """Parse ``source``; a syntax error raises :class:`RenderError` naming ``path``, line, column and construct."""
    depth = (limits or RenderLimits()).depth
    try:
        return GoTemplate(parse(source, set(FUNCTION_NAMES), depth), path)
    except TemplateFault as fault:
        raise _fault_to_error(source, fault, path, field, value, "syntax error") from None
    except (RecursionError, MemoryError) as exc:
        raise RenderError("Go template syntax error: template too large or nested too deeply (%s)" % type(exc).__name__,
                          path=path, field=field, value=value) from None


def render_go_template(template: GoTemplate, data: Any, limits: Optional[RenderLimits] = None,
                       field: Optional[str] = None, value: Any = None) -> str:
    """Execute ``template`` with ``data`` as dot (Helm: ``<no value>`` is removed from the result)."""
    budget = RenderBudget(limits, template.path, field, value)
    state = _State(template.template, budget)
    state.vars[0][1] = data
    source = template.template.source
    try:
        state.walk(template.template.root, data, False)
    except TemplateFault as fault:
        raise _fault_to_error(source, fault, template.path, field, value, "execution error") from None
    except RecursionError:
        raise budget.fail("Go template execution error: templates or data nested too deeply") from None
    except MemoryError:
        raise budget.fail("Go template execution error: out of memory while rendering") from None
    except (ArithmeticError, AttributeError, LookupError, TypeError, ValueError) as exc:
        raise budget.fail("Go template execution error: %s: %s" % (type(exc).__name__, exc)) from None
    return "".join(state.out).replace(NO_VALUE, "")


#: The version Helm charts get when none is known (AICR's default for a component without one, and ``helm create``'s).
DEFAULT_CHART_VERSION = "0.1.0"


def normalized_chart_version(version: Optional[str]) -> str:
    """A chart version as AICR gives it to ``.Chart.Version``: without a ``v`` prefix, ``0.1.0`` when there is none.

    A version that is empty or only blanks is "none": a label built as ``{{ .Chart.Name }}-{{ .Chart.Version }}``
    must never end in ``-`` (an API server refuses such a label value).
    """
    text = str(version or "").strip()
    if not text:
        return DEFAULT_CHART_VERSION
    return text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text


def chart_metadata(name: str, version: Optional[str]) -> Dict[str, Any]:
    """``.Chart`` as Helm gives it to templates: every field of a chart's ``Chart.yaml`` metadata.

    Helm passes its ``chart.Metadata`` struct, so every field exists; a field the chart does not set is its zero value
    (``""``, an empty list or map, ``false``), never a missing key. ``Name`` is the chart (or the component of a
    manifest-only component), ``Version`` :func:`normalized_chart_version`, ``AppVersion`` the version as the
    recipe names it (AICR stamps the upstream version there), ``APIVersion`` ``v2`` and ``Type`` ``application``
    (what ``helm create`` writes).
    """
    return {
        "Name": name, "Version": normalized_chart_version(version), "AppVersion": str(version or "").strip(),
        "APIVersion": "v2", "Type": "application", "Description": "", "Home": "", "Icon": "", "Condition": "",
        "Tags": "", "KubeVersion": "", "Deprecated": False, "Sources": [], "Keywords": [], "Maintainers": [],
        "Annotations": {}, "Dependencies": [],
    }


def string_keys(data: Any) -> Any:
    """A copy of ``data`` whose mapping keys are all strings (iterative: deep or shared data is fine)."""
    holder: List[Any] = [data]
    copies: Dict[int, Any] = {}
    stack: List[Tuple[Any, Any]] = [(holder, 0)]
    while stack:
        parent, key = stack.pop()
        value = parent[key]
        if not isinstance(value, (dict, list, tuple)):
            continue
        if id(value) in copies:
            parent[key] = copies[id(value)]
            continue
        if isinstance(value, dict):
            new: Any = {(k if isinstance(k, str) else strval(k)): v for k, v in value.items()}
            keys: Iterable[Any] = list(new)
        else:
            new = list(value)
            keys = range(len(new))
        copies[id(value)] = parent[key] = new
        stack.extend((new, k) for k in keys)
    return holder[0]


def helm_context(component: str, values: Any, namespace: Optional[str], chart: Optional[str],
                 version: Optional[str]) -> Dict[str, Any]:
    """The data AICR gives a manifest template: ``.Values`` keyed by component name, ``.Release``, ``.Chart``.

    ``values`` is copied with every mapping key a string (as sigs.k8s.io/yaml gives Helm: ``1:`` is the key ``"1"``).
    """
    return {
        "Values": {component: string_keys(values)},
        "Release": {"Name": component, "Namespace": namespace or "", "Service": "Helm", "IsInstall": True,
                    "IsUpgrade": False, "Revision": 1},
        "Chart": chart_metadata(chart or component, version),
    }


class _State:
    """Execution state of one render: output, variables, template call depth."""

    def __init__(self, template: Template, budget: RenderBudget) -> None:
        self.template = template
        self.budget = budget
        self.out: List[str] = []
        self.vars: List[List[Any]] = [["$", None, False]]
        self.calls = 0

    # ---------------------------------------------------------------- walking
    def emit(self, text: str) -> None:
        self.out.append(text)
        self.budget.add_output(len(text))

    def walk(self, nodes: List[Node], dot: Any, typed: bool) -> None:
        for node in nodes:
            if isinstance(node, Text):
                self.emit(node.text)
            elif isinstance(node, Action):
                result = self.pipeline(node.pipe, dot, typed)
                if not node.pipe.decl:
                    self.emit(NO_VALUE if result is None else self.printable(result, node))
            elif isinstance(node, Branch):
                if node.keyword == "range":
                    self.walk_range(node, dot, typed)
                else:
                    self.walk_if_with(node, dot, typed)
            elif isinstance(node, LoopControl):
                raise _Break() if node.keyword == "break" else _Continue()
            elif isinstance(node, TemplateCall):
                arg = self.pipeline(node.pipe, dot, typed) if node.pipe else None
                self.emit(self.call_template(node.name, arg, node))

    def printable(self, value: Any, node: Node) -> str:
        try:
            return sprint_value(value)
        except FuncError as exc:
            raise TemplateFault(str(exc), node.offset, "print") from None

    def walk_if_with(self, node: Branch, dot: Any, typed: bool) -> None:
        mark = len(self.vars)
        value = self.pipeline(node.pipe, dot, typed)
        if truth(value):
            if node.keyword == "with":
                self.walk(node.body, value, False)
            else:
                self.walk(node.body, dot, typed)
        elif node.other is not None:
            self.walk(node.other, dot, typed)
        del self.vars[mark:]

    def walk_range(self, node: Branch, dot: Any, typed: bool) -> None:
        mark = len(self.vars)
        pipe = node.pipe
        value = self.pipeline(Pipeline(pipe.offset, [], False, pipe.commands), dot, typed)
        if pipe.decl and not pipe.assign:
            for name in pipe.decl:
                self.vars.append([name, value, False])
        if isinstance(value, bool) or isinstance(value, (float, str)):
            raise TemplateFault("range can't iterate over %s" % sprint_value(value), pipe.commands[0].offset, "range")
        if isinstance(value, int):
            if len(pipe.decl) > 1:
                raise TemplateFault("can't use %d to iterate over more than one variable" % value, node.offset, "range")
            items: Any = ((i, i) for i in range(max(value, 0)))
            typed_elems = False
        elif isinstance(value, dict):
            items = ((k, value[k]) for k in sorted(value))
            typed_elems = True
        elif isinstance(value, (list, tuple)):
            items = enumerate(value)
            typed_elems = True
        elif value is None:
            items = iter(())
            typed_elems = False
        else:
            raise TemplateFault("range can't iterate over %s" % sprint_value(value), pipe.commands[0].offset, "range")
        ran = False
        inner = len(self.vars)
        for index, elem in items:
            ran = True
            self.budget.tick()
            if pipe.decl:
                names = pipe.decl
                if len(names) == 1:
                    self.set_var(names[0], elem, typed_elems, node, top=not pipe.assign, pos=1)
                else:
                    self.set_var(names[0], index, False, node, top=not pipe.assign, pos=2)
                    self.set_var(names[1], elem, typed_elems, node, top=not pipe.assign, pos=1)
            try:
                self.walk(node.body, elem, typed_elems)
            except _Continue:
                pass
            except _Break:
                del self.vars[inner:]
                break
            del self.vars[inner:]
        if not ran and node.other is not None:
            self.walk(node.other, dot, typed)
        del self.vars[mark:]

    def call_template(self, name: str, arg: Any, node: Node) -> str:
        body = self.template.defines.get(name)
        if body is None:
            raise TemplateFault('no template "%s" associated with this template' % name, node.offset, "template %s" % name)
        if self.calls >= self.budget.limits.depth:
            raise TemplateFault("exceeded maximum template depth (%d)" % self.budget.limits.depth, node.offset,
                                "template %s" % name)
        saved_vars, saved_out = self.vars, self.out
        self.vars, self.out = [["$", arg, False]], []
        self.calls += 1
        try:
            self.walk(body, arg, False)
            return "".join(self.out)
        finally:
            self.calls -= 1
            self.vars, self.out = saved_vars, saved_out

    # ---------------------------------------------------------------- variables
    def var(self, name: str) -> Tuple[Any, bool]:
        for entry in reversed(self.vars):
            if entry[0] == name:
                return entry[1], entry[2]
        return None, False

    def set_var(self, name: str, value: Any, typed: bool, node: Node, top: bool = False, pos: int = 1) -> None:
        if top:
            entry = self.vars[len(self.vars) - pos]
            entry[1], entry[2] = value, typed
            return
        for entry in reversed(self.vars):
            if entry[0] == name:
                entry[1], entry[2] = value, typed
                return
        raise TemplateFault("undefined variable: %s" % name, node.offset, name)

    # ---------------------------------------------------------------- pipelines
    def pipeline(self, pipe: Pipeline, dot: Any, typed: bool) -> Any:
        value: Any = _MISSING
        for command in pipe.commands:
            value = self.command(command, dot, typed, value)
        for name in pipe.decl:
            if pipe.assign:
                self.set_var(name, value, False, pipe)
            else:
                self.vars.append([name, value, False])
        return value

    def command(self, command: Command, dot: Any, typed: bool, final: Any) -> Any:
        first = command.args[0]
        if first.kind == "ident":
            return self.call(first.value, command.args[1:], dot, typed, final, first)
        has_args = len(command.args) > 1 or final is not _MISSING
        if first.kind == "field":
            return self.fields(dot, typed, first.chain, first, has_args)
        if first.kind == "var":
            value, vtyped = self.var(first.value)
            if not first.chain:
                self.not_a_function(command, final)
                return value
            return self.fields(value, vtyped, first.chain, first, has_args)
        if first.kind == "chain":
            base = self.operand_value(first.value, dot, typed)
            return self.fields(base, False, first.chain, first, has_args)
        self.not_a_function(command, final)
        if first.kind == "nil":
            raise TemplateFault("nil is not a command", first.offset, "nil")
        return self.operand_value(first, dot, typed)

    @staticmethod
    def not_a_function(command: Command, final: Any) -> None:
        if len(command.args) > 1 or final is not _MISSING:
            first = command.args[0]
            raise TemplateFault("can't give argument to non-function %s" % first.text, first.offset, first.text)

    def fields(self, receiver: Any, typed: bool, names: Tuple[str, ...], node: Operand, has_args: bool) -> Any:
        for i, name in enumerate(names):
            if receiver is None:
                if typed:
                    raise TemplateFault("nil pointer evaluating interface {}.%s" % name, node.offset, node.text)
                return None
            if not isinstance(receiver, dict):
                raise TemplateFault("can't evaluate field %s in type %s" % (name, go_type(receiver)), node.offset, node.text)
            if has_args and i == len(names) - 1:
                raise TemplateFault("%s is not a method but has arguments" % name, node.offset, node.text)
            receiver = receiver.get(name)
            typed = True
        return receiver

    def operand_value(self, node: Operand, dot: Any, typed: bool) -> Any:
        """The value of an argument word (numbers as Go's ideal constants: float when written with . or e)."""
        kind = node.kind
        if kind == "field":
            return self.fields(dot, typed, node.chain, node, False)
        if kind == "var":
            value, vtyped = self.var(node.value)
            return self.fields(value, vtyped, node.chain, node, False) if node.chain else value
        if kind == "dot":
            return dot
        if kind == "number":
            number, is_float, _text = node.value
            return float(number) if is_float else number
        if kind in ("string", "bool", "nil"):
            return node.value
        if kind == "pipe":
            mark = len(self.vars)
            value = self.pipeline(node.value, dot, typed)
            del self.vars[mark:]
            return value
        if kind == "ident":
            return self.call(node.value, [], dot, typed, _MISSING, node)
        if kind == "chain":
            return self.fields(self.operand_value(node.value, dot, typed), False, node.chain, node, False)
        raise TemplateFault("can't evaluate %s" % node.text, node.offset, node.text)

    def argument(self, node: Operand, kind: str, dot: Any, typed: bool, name: str) -> Any:
        """An argument for a parameter of ``kind``, checked as Go checks it (literals first, then values)."""
        if kind != "any" and node.kind in ("number", "string", "bool", "nil"):
            if node.kind == "nil":
                raise TemplateFault("cannot assign nil to %s" % _KIND_NAMES[kind], node.offset, name)
            if kind == "int" and node.kind == "number":
                number = node.value[0]
                if isinstance(number, float) and not number.is_integer():
                    raise TemplateFault("expected integer; found %s" % node.text, node.offset, name)
                return int(number)
            if (kind == "string" and node.kind != "string") or (kind == "bool" and node.kind != "bool") or \
                    (kind == "int" and node.kind != "number") or kind == "map":
                expected = {"string": "string", "bool": "bool", "int": "integer", "map": "map"}[kind]
                raise TemplateFault("expected %s; found %s" % (expected, node.text), node.offset, name)
            return node.value
        return self.check_type(self.operand_value(node, dot, typed), kind, node, name)

    @staticmethod
    def check_type(value: Any, kind: str, node: Node, name: str) -> Any:
        if kind == "any":
            return value
        if value is None:
            if kind == "map":
                return {}
            raise TemplateFault("invalid value; expected %s" % _KIND_NAMES[kind], node.offset, name)
        good = {"string": isinstance(value, str), "bool": isinstance(value, bool), "map": isinstance(value, dict),
                "int": isinstance(value, int) and not isinstance(value, bool)}[kind]
        if not good:
            raise TemplateFault("wrong type for value; expected %s; got %s" % (_KIND_NAMES[kind], go_type(value)),
                                node.offset, name)
        return value

    def call(self, name: str, args: List[Operand], dot: Any, typed: bool, final: Any, node: Operand) -> Any:
        if name in ("and", "or"):
            if not args and final is _MISSING:
                raise TemplateFault("wrong number of args for %s: want at least 1 got 0" % name, node.offset, name)
            value: Any = None
            for arg in args:
                value = self.operand_value(arg, dot, typed)
                if truth(value) == (name == "or"):
                    return value
            return final if final is not _MISSING else value
        if name in SPECIAL_FUNCTIONS:
            params: Tuple[str, ...] = {"include": ("string", "any"), "printf": ("string",)}.get(name, ())
            rest: Optional[str] = None if name == "include" else "any"
        else:
            _func, params, rest = FUNCTIONS[name]
        count = len(args) + (final is not _MISSING)
        if rest is None and count != len(params):
            raise TemplateFault("wrong number of args for %s: want %d got %d" % (name, len(params), count), node.offset, name)
        if rest is not None and count < len(params):
            raise TemplateFault("wrong number of args for %s: want at least %d got %d" % (name, len(params), len(args)),
                                node.offset, name)
        values: List[Any] = []
        for i, arg in enumerate(args):
            kind = params[i] if i < len(params) else (rest or "any")
            values.append(self.argument(arg, kind, dot, typed, name))
        if final is not _MISSING:
            kind = params[len(values)] if len(values) < len(params) else (rest or "any")
            values.append(self.check_type(final, kind, node, name))
        try:
            result = self.run(name, values, node)
        except FuncError as exc:
            raise TemplateFault("error calling %s: %s" % (name, exc), node.offset, name) from None
        except (ArithmeticError, ValueError, TypeError, LookupError, UnicodeError) as exc:
            raise TemplateFault("error calling %s: %s" % (name, exc), node.offset, name) from None
        if isinstance(result, str):
            self.budget.check_size(len(result))
        self.budget.check_time()
        return result

    def run(self, name: str, values: List[Any], node: Operand) -> Any:
        if name == "include":
            return self.call_template(values[0], values[1], node)
        if name == "print":
            return sprint(values)
        if name == "println":
            return sprintln(values)
        if name == "printf":
            return sprintf(values[0], values[1:], self.budget.limits.output_bytes)
        size = built_size(name, values)
        if size is not None and size > self.budget.limits.output_bytes:
            raise FuncError("the result would be %d bytes, over the output limit of %d bytes" % (size, self.budget.limits.output_bytes))
        return FUNCTIONS[name][0](*values)
