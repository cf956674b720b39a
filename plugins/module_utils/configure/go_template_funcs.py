# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Functions of Go templates as Helm offers them: Go's builtins (``printf``, ``len``, ``index``, comparisons)
and the Sprig/Helm subset AICR manifests use (``toYaml``, ``nindent``, ``default``, ``required``, ...).

Values are plain Python data as loaded from YAML: ``None`` is Go's nil, ``dict`` a
``map[string]interface {}``, ``list`` a ``[]interface {}``, ``int``/``float``/``bool``/``str`` the basic
kinds. Formatting follows Go's ``fmt`` (``%v`` of a float is ``1e+06``, of a map ``map[a:1]``) and
``toYaml`` follows sigs.k8s.io/yaml (sorted keys, ``null``, sequences not indented under their key,
multi-line strings as literal blocks). A function signals a failure by raising :class:`FuncError`.
"""
from __future__ import annotations

import base64
import json
import math
import re
from decimal import Decimal
from typing import Any, Callable, Dict, List, Optional, Tuple

INT64 = 1 << 63


class FuncError(Exception):
    """A template function failed (the evaluator adds the function name, file, line and column)."""


def go_type(value: Any) -> str:
    """Go's name of the dynamic type of ``value``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, (list, tuple)):
        return "[]interface {}"
    if value is None:
        return "<nil>"
    return type(value).__name__


def truth(value: Any) -> bool:
    """Go template truth: false, 0, nil and empty strings, lists and maps are false."""
    if value is None:
        return False
    if isinstance(value, (bool, int, float)):
        return bool(value)
    if isinstance(value, (str, list, tuple, dict)):
        return len(value) > 0
    return True


def _int64(value: int) -> int:
    return ((value + INT64) % (2 * INT64)) - INT64


# ---------------------------------------------------------------------------- fmt
def _shortest_digits(value: float) -> Tuple[str, int]:
    """Shortest round-trip decimal digits and the decimal point position of a finite, non-zero float."""
    text = repr(abs(value))
    mantissa, _sep, exp = text.partition("e")
    whole, _dot, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exp) if exp else 0)
    if whole == "0":
        stripped = frac.lstrip("0")
        point = -(len(frac) - len(stripped)) + (int(exp) if exp else 0)
        digits = stripped
    digits = digits.rstrip("0") or "0"
    return digits, point


def format_float_g(value: float) -> str:
    """``strconv.FormatFloat(v, 'g', -1, 64)`` (what ``%v`` and YAML print)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(value)
    exp = point - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return "%s%se%s%02d" % (sign, mant, "-" if exp < 0 else "+", abs(exp))
    if point <= 0:
        return sign + "0." + "0" * -point + digits
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return sign + digits[:point] + "." + digits[point:]


def format_float_v(value: float) -> str:
    """``fmt``'s ``%v`` of a float64 (the same as ``format_float_g``: ``1e+06``, ``123456``, ``1.5``)."""
    return format_float_g(value)


def sprint_value(value: Any, depth: int = 0) -> str:
    """``fmt.Sprint`` of one value (``%v``)."""
    if depth > 200:
        raise FuncError("value nested too deeply to print")
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float_v(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "map[" + " ".join("%s:%s" % (k, sprint_value(value[k], depth + 1)) for k in sorted(value)) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(sprint_value(v, depth + 1) for v in value) + "]"
    return str(value)


def go_quote(text: str) -> str:
    """``strconv.Quote``."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(char)])
        elif code < 0x20 or code == 0x7F:
            out.append("\\x%02x" % code)
        elif code < 0x80 or char.isprintable():
            out.append(char)
        elif code <= 0xFFFF:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
    out.append('"')
    return "".join(out)


def sprint(args: List[Any]) -> str:
    """``fmt.Sprint``: a space between operands when neither is a string."""
    out = []
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out.append(" ")
        out.append(sprint_value(arg))
    return "".join(out)


def sprintln(args: List[Any]) -> str:
    return " ".join(sprint_value(a) for a in args) + "\n"


#: flags, [index], width, .[index]precision, [index], verb (Go's explicit argument indexes ``%[n]`` are 1-based).
_VERB = re.compile(r"%([-+# 0]*)(?:\[([^\]]*)\])?(\*|\d+)?(?:\.(?:\[([^\]]*)\])?(\*|\d*))?(?:\[([^\]]*)\])?([a-zA-Z%])")


def _bad(verb: str, arg: Any) -> str:
    if arg is None:
        return "%%!%s(<nil>)" % verb
    return "%%!%s(%s=%s)" % (verb, go_type(arg), sprint_value(arg))


def _pad(text: str, flags: str, width: Optional[int], numeric: bool) -> str:
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text + " " * (width - len(text))
    if "0" in flags and numeric:
        sign = text[0] if text[:1] in "+-" else ""
        return sign + "0" * (width - len(text)) + text[len(sign):]
    return " " * (width - len(text)) + text


def _format_one(verb: str, flags: str, width: Optional[int], prec: Optional[int], arg: Any) -> str:
    if isinstance(arg, (list, tuple)) and verb in "dsvqxXfeEgGtco" and verb != "v":
        return "[" + " ".join(_format_one(verb, flags, width, prec, a) for a in arg) + "]"
    numeric = False
    if verb == "v":
        if isinstance(arg, float):
            text, numeric = format_float_v(arg), True
        else:
            text = sprint_value(arg)
            numeric = isinstance(arg, int) and not isinstance(arg, bool)
            if "+" in flags and numeric and arg >= 0:
                text = "+" + text
    elif verb == "s":
        if not isinstance(arg, str):
            return _bad(verb, arg)
        text = arg if prec is None else arg[:prec]
    elif verb == "q":
        if isinstance(arg, str):
            text = go_quote(arg)
        elif isinstance(arg, int) and not isinstance(arg, bool) and 0 <= arg <= 0x10FFFF:
            text = "'" + go_quote(chr(arg))[1:-1].replace("'", "\\'").replace('\\"', '"') + "'"
        else:
            return _bad(verb, arg)
    elif verb == "t":
        if not isinstance(arg, bool):
            return _bad(verb, arg)
        text = "true" if arg else "false"
    elif verb in "dxXobc":
        if isinstance(arg, str) and verb in "xX":
            text = arg.encode("utf-8").hex()
            text = text.upper() if verb == "X" else text
        elif not isinstance(arg, int) or isinstance(arg, bool):
            return _bad(verb, arg)
        elif verb == "c":
            text = chr(arg) if 0 <= arg <= 0x10FFFF else "\ufffd"
        else:
            base = {"d": "d", "x": "x", "X": "X", "o": "o", "b": "b"}[verb]
            text = format(arg, base)
            if "#" in flags and verb in "xX":
                text = ("-" if arg < 0 else "") + ("0x" if verb == "x" else "0X") + text.lstrip("-")
            if "+" in flags and arg >= 0:
                text = "+" + text
            numeric = True
    elif verb in "feEgGF":
        if not isinstance(arg, float):
            return _bad(verb, arg)
        if math.isinf(arg) or math.isnan(arg):
            text = format_float_g(arg)
        elif verb in "gG" and prec is None:
            text = format_float_g(arg)
            text = text.upper() if verb == "G" else text
        else:
            text = ("%" + ("+" if "+" in flags else "") + ".%d" % (6 if prec is None else prec) + verb.replace("F", "f")) % arg
        numeric = True
    else:
        return _bad(verb, arg)
    return _pad(text, flags, width, numeric)


def sprintf(fmt: str, args: List[Any], max_size: int) -> str:
    """``fmt.Sprintf`` for the verbs %v %s %q %d %f %e %g %t %x %X %o %b %c and %%, with flags, width, precision
    and explicit argument indexes (``%[2]s``: argument 2, the following verbs continue from argument 3)."""
    out: List[str] = []
    pos = 0
    argi = 0
    reordered = False
    while True:
        match = _VERB.search(fmt, pos)
        if not match:
            out.append(fmt[pos:])
            break
        out.append(fmt[pos:match.start()])
        pos = match.end()
        flags, index_w, width_s, index_p, prec_s, index_v, verb = match.groups()
        good = True
        after_index = False

        def select(index: str) -> bool:
            nonlocal argi, reordered, good
            reordered = True
            if index.isdigit() and index.isascii() and 1 <= int(index) <= len(args):
                argi = int(index) - 1
                return True
            good = False
            return index.isdigit() and index.isascii()

        if index_w is not None:
            after_index = select(index_w)
        width: Optional[int] = None
        prec: Optional[int] = None
        if width_s == "*":
            if argi < len(args) and isinstance(args[argi], int):
                width = args[argi]
            else:
                out.append("%!(BADWIDTH)")
            argi += 1
            after_index = False
        elif width_s:
            width = int(width_s)
            if after_index:  # "%[3]2d"
                good = False
        if prec_s is not None:
            if after_index:  # "%[3].2d"
                good = False
            if index_p is not None:
                after_index = select(index_p)
            if prec_s == "*":
                if argi < len(args) and isinstance(args[argi], int):
                    prec = args[argi]
                else:
                    out.append("%!(BADPREC)")
                argi += 1
                after_index = False
            else:
                prec = int(prec_s) if prec_s else 0
        if index_v is not None:
            if after_index:
                good = False
            else:
                select(index_v)
        if (width or 0) > max_size or (prec or 0) > max_size:
            raise FuncError("printf width or precision over the output limit")
        if verb == "%":
            out.append("%")
            continue
        if not good:
            out.append("%%!%s(BADINDEX)" % verb)
            continue
        if argi >= len(args):
            out.append("%%!%s(MISSING)" % verb)
            continue
        out.append(_format_one(verb, flags, width, prec, args[argi]))
        argi += 1
    if not reordered and argi < len(args):
        out.append("%!(EXTRA " + ", ".join("%s=%s" % (go_type(a), sprint_value(a)) for a in args[argi:]) + ")")
    return "".join(out)


# ---------------------------------------------------------------------------- YAML and JSON
_YAML_SPECIAL = re.compile(r"^(?:~|null|Null|NULL|y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|"
                           r"Off|OFF|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|<<|=)$")
_YAML_NUMBER = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|0b[01_]+|0x[0-9a-fA-F_]+|"
                          r"[1-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)$")


_YAML_TIMESTAMP = re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?$")


def _yaml_printable(char: str) -> bool:
    code = ord(char)
    if code in (0x2028, 0x2029):
        return False
    return char == "\n" or 0x20 <= code <= 0x7E or (0xA0 <= code <= 0xD7FF) or \
        (0xE000 <= code <= 0xFFFD and code != 0xFEFF) or 0x10000 <= code <= 0x10FFFF


def _yaml_style(text: str, is_key: bool) -> str:
    """``plain``, ``single``, ``double`` or ``literal``, as go-yaml v2's emitter picks for a string."""
    if text == "" or _YAML_SPECIAL.match(text) or _YAML_NUMBER.match(text) or _YAML_TIMESTAMP.match(text):
        return "double"
    special = any(not _yaml_printable(c) for c in text)
    space_break = " \n" in text
    break_space = "\n " in text
    if special or space_break:
        return "double"
    if "\n" in text:
        if is_key or text.endswith(" ") or text.startswith("\n") or text.endswith("\n\n"):
            return "double"
        return "literal"
    indicators = text[0] in "#,[]{}&*!|>'\"%@`" or (text[0] in "?:-" and (len(text) == 1 or text[1] == " ")) or \
        text.startswith(("---", "...")) or ": " in text or text.endswith(":") or " #" in text
    if indicators or text[0] == " " or text[-1] == " " or break_space:
        return "single"
    return "plain"


def _yaml_scalar_text(text: str, is_key: bool, indent: int) -> str:
    style = _yaml_style(text, is_key)
    if style == "plain":
        return text
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    if style == "double":
        out = ['"']
        for char in text:
            code = ord(char)
            if char in '"\\':
                out.append("\\" + char)
            elif char in "\0\a\b\t\n\v\f\r\x1b":
                out.append("\\" + "0abtnvfre"["\0\a\b\t\n\v\f\r\x1b".index(char)])
            elif _yaml_printable(char) and code != 0x85:
                out.append(char)
            elif code <= 0xFF:
                out.append("\\x%02X" % code)
            elif code <= 0xFFFF:
                out.append("\\u%04X" % code)
            else:
                out.append("\\U%08X" % code)
        out.append('"')
        return "".join(out)
    chomp = "-" if not text.endswith("\n") else ("+" if text.endswith("\n\n") or text == "\n" else "")
    hint = "2" if text[0] in " \n" else ""
    pad = " " * (indent + 2)
    body = text[:-1] if text.endswith("\n") else text
    lines = [(pad + line) if line else "" for line in body.split("\n")]
    return "|" + hint + chomp + "\n" + "\n".join(lines)


def _yaml_scalar(value: Any, indent: int) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2 ** 63:
            return str(int(value))
        text = format_float_g(value)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    return _yaml_scalar_text(value if isinstance(value, str) else sprint_value(value), False, indent)


def _yaml_lines(value: Any, indent: int, out: List[str], depth: int) -> None:
    """Append the block lines of a non-empty mapping or sequence at ``indent``."""
    if depth > 200:
        raise FuncError("value nested too deeply for toYaml")
    pad = " " * indent
    items = [(k, value[k]) for k in sorted(value, key=str)] if isinstance(value, dict) else list(value)
    for item in items:
        if isinstance(value, dict):
            key, val = item
            head = pad + _yaml_scalar_text(str(key), True, indent) + ":"
            child_indent = indent + 2
            if isinstance(val, dict) and val:
                out.append(head)
                _yaml_lines(val, child_indent, out, depth + 1)
                continue
            if isinstance(val, (list, tuple)) and val:
                out.append(head)
                _yaml_lines(val, indent, out, depth + 1)
                continue
        else:
            val = item
            head = pad + "-"
            if isinstance(val, (dict, list, tuple)) and val:
                inner: List[str] = []
                _yaml_lines(val, indent + 2, inner, depth + 1)
                inner[0] = head + " " + inner[0][indent + 2:]
                out.extend(inner)
                continue
        if isinstance(val, dict):
            out.append(head + " {}")
        elif isinstance(val, (list, tuple)):
            out.append(head + " []")
        else:
            out.append(head + " " + _yaml_scalar(val, indent))


def to_yaml(value: Any) -> str:
    """Helm's ``toYaml``: sigs.k8s.io/yaml output without the final newline."""
    if isinstance(value, (dict, list, tuple)) and value:
        lines: List[str] = []
        _yaml_lines(value, 0, lines, 0)
        return "\n".join(lines)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, (list, tuple)):
        return "[]"
    # A top-level literal block is indented like go-yaml's (two spaces), so a line such as ":" or "- a" stays text.
    return _yaml_scalar(value, 0)


def _json_float(value: float) -> str:
    if math.isinf(value) or math.isnan(value):
        raise FuncError("json: unsupported value: %s" % format_float_g(value))
    if value == 0:
        return "0" if math.copysign(1, value) > 0 else "-0"
    if abs(value) < 1e-6 or abs(value) >= 1e21:
        text = format_float_g(value)
        return re.sub(r"e-0(\d)$", r"e-\1", text)
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def to_json(value: Any, depth: int = 0) -> str:
    """Go's ``json.Marshal`` (compact, sorted keys, HTML characters escaped)."""
    if depth > 200:
        raise FuncError("value nested too deeply for toJson")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for char, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
            text = text.replace(char, esc)
        return text
    if isinstance(value, dict):
        return "{" + ",".join(to_json(str(k)) + ":" + to_json(value[k], depth + 1) for k in sorted(value, key=str)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v, depth + 1) for v in value) + "]"
    raise FuncError("json: unsupported type: %s" % go_type(value))


# ---------------------------------------------------------------------------- comparisons
def _basic(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return None


def go_eq(first: Any, *others: Any) -> bool:
    if not others:
        raise FuncError("missing argument for comparison")
    kind1 = _basic(first)
    for other in others:
        kind2 = _basic(other)
        if kind1 != kind2:
            if first is not None and other is not None:
                raise FuncError("incompatible types for comparison: %s and %s" % (go_type(first), go_type(other)))
            continue
        if kind1 is None:
            if first is None and other is None:
                return True
            if isinstance(first, (dict, list)) or isinstance(other, (dict, list)):
                raise FuncError("non-comparable type %s: %s" % (sprint_value(first), go_type(first)))
            continue
        if first == other:
            return True
    return False


def go_lt(first: Any, second: Any) -> bool:
    kind1, kind2 = _basic(first), _basic(second)
    if kind1 is None or kind2 is None:
        raise FuncError("invalid type for comparison")
    if kind1 != kind2:
        raise FuncError("incompatible types for comparison: %s and %s" % (go_type(first), go_type(second)))
    if kind1 == "bool":
        raise FuncError("invalid type for comparison")
    if kind1 == "string":
        return first.encode("utf-8") < second.encode("utf-8")
    return first < second


# ---------------------------------------------------------------------------- Sprig / Helm
def strval(value: Any) -> str:
    return value if isinstance(value, str) else sprint_value(value)


def empty(value: Any) -> bool:
    return not truth(value)


def _index(item: Any, *keys: Any) -> Any:
    if item is None:
        raise FuncError("index of untyped nil")
    for key in keys:
        if isinstance(item, (list, tuple, str)):
            if not isinstance(key, int) or isinstance(key, bool):
                raise FuncError("cannot index slice/array with type %s" % go_type(key))
            size = len(item.encode("utf-8")) if isinstance(item, str) else len(item)
            if key < 0 or key >= size:
                raise FuncError("index out of range: %d" % key)
            item = item.encode("utf-8")[key] if isinstance(item, str) else item[key]
        elif isinstance(item, dict):
            if not isinstance(key, str):
                raise FuncError("value has type %s; should be string" % go_type(key))
            item = item.get(key)
        elif item is None:
            raise FuncError("index of nil pointer")
        else:
            raise FuncError("can't index item of type %s" % go_type(item))
    return item


def _len(item: Any) -> int:
    if isinstance(item, str):
        return len(item.encode("utf-8"))
    if isinstance(item, (list, tuple, dict)):
        return len(item)
    raise FuncError("len of %s" % ("nil pointer" if item is None else "type " + go_type(item)))


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return _int64(value)
    if isinstance(value, float):
        return _int64(int(value)) if math.isfinite(value) else 0
    if isinstance(value, str):
        text = value.strip()
        try:
            return _int64(int(text, 0))
        except ValueError:
            try:
                return _int64(int(float(text)))
            except (ValueError, OverflowError):
                return 0
    return 0


def _trunc(count: int, text: str) -> str:
    if count < 0 and len(text) + count > 0:
        return text[len(text) + count:]
    if 0 <= count < len(text):
        return text[:count]
    return text


def _dict(*pairs: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for i in range(0, len(pairs), 2):
        out[strval(pairs[i])] = pairs[i + 1] if i + 1 < len(pairs) else ""
    return out


def strslice(value: Any) -> List[str]:
    """Sprig's ``strslice``: a list without its nil items, nil as no items, anything else as one item."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [strval(v) for v in value if v is not None]
    return [strval(value)]


def built_size(name: str, values: List[Any]) -> Optional[int]:
    """The length of the string ``indent``, ``nindent`` or ``replace`` would build (checked before it is built)."""
    if name in ("indent", "nindent") and len(values) == 2 and isinstance(values[0], int) and isinstance(values[1], str):
        return max(values[0], 0) * (values[1].count("\n") + 1) + len(values[1]) + (name == "nindent")
    if name == "replace" and len(values) == 3 and all(isinstance(v, str) for v in values):
        old, new, text = values
        return len(text) + text.count(old) * (len(new) - len(old))
    return None


def _indent(spaces: int, text: str) -> str:
    pad = " " * spaces
    return pad + text.replace("\n", "\n" + pad)


def _required(message: str, value: Any) -> Any:
    if value is None or value == "":
        raise FuncError(message)
    return value


def _ternary(if_true: Any, if_false: Any, cond: bool) -> Any:
    return if_true if cond else if_false


def _fail(message: str) -> Any:
    raise FuncError(message)


def _default(default: Any, *given: Any) -> Any:
    if not given or empty(given[0]):
        return default
    return given[0]


def _arith(name: str) -> Callable[..., int]:
    def run(first: Any, *rest: Any) -> int:
        total = _to_int(first)
        for value in rest:
            value = _to_int(value)
            total = total + value if name == "add" else total - value if name == "sub" else total * value
            total = _int64(total)
        return total
    return run


Signature = Tuple[Callable[..., Any], Tuple[str, ...], Optional[str]]

#: name -> (function, parameter kinds, kind of the variadic rest or None).  Kinds: any, string, int, bool, map.
#: ``and``, ``or``, ``include``, ``tpl`` and the printing functions are handled by the evaluator.
FUNCTIONS: Dict[str, Signature] = {
    "not": (lambda v: not truth(v), ("any",), None),
    "eq": (go_eq, ("any",), "any"),
    "ne": (lambda a, b: not go_eq(a, b), ("any", "any"), None),
    "lt": (go_lt, ("any", "any"), None),
    "le": (lambda a, b: go_lt(a, b) or go_eq(a, b), ("any", "any"), None),
    "gt": (lambda a, b: not (go_lt(a, b) or go_eq(a, b)), ("any", "any"), None),
    "ge": (lambda a, b: not go_lt(a, b), ("any", "any"), None),
    "index": (_index, ("any",), "any"),
    "len": (_len, ("any",), None),
    "toYaml": (to_yaml, ("any",), None),
    "toJson": (to_json, ("any",), None),
    "toString": (strval, ("any",), None),
    "nindent": (lambda n, s: "\n" + _indent(n, s), ("int", "string"), None),
    "indent": (_indent, ("int", "string"), None),
    "default": (_default, ("any",), "any"),
    "empty": (empty, ("any",), None),
    "required": (_required, ("string", "any"), None),
    "fail": (_fail, ("string",), None),
    "quote": (lambda *a: " ".join(go_quote(strval(v)) for v in a if v is not None), (), "any"),
    "squote": (lambda *a: " ".join("'" + strval(v) + "'" for v in a if v is not None), (), "any"),
    "trim": (lambda s: s.strip(" \t\n\r\v\f\x85\xa0"), ("string",), None),
    "trimSuffix": (lambda suf, s: s[:-len(suf)] if suf and s.endswith(suf) else s, ("string", "string"), None),
    "trimPrefix": (lambda pre, s: s[len(pre):] if pre and s.startswith(pre) else s, ("string", "string"), None),
    "upper": (lambda s: s.upper(), ("string",), None),
    "lower": (lambda s: s.lower(), ("string",), None),
    "replace": (lambda old, new, s: s.replace(old, new), ("string", "string", "string"), None),
    "trunc": (_trunc, ("int", "string"), None),
    "contains": (lambda sub, s: sub in s, ("string", "string"), None),
    "hasPrefix": (lambda pre, s: s.startswith(pre), ("string", "string"), None),
    "hasSuffix": (lambda suf, s: s.endswith(suf), ("string", "string"), None),
    "hasKey": (lambda m, k: k in m, ("map", "string"), None),
    "list": (lambda *a: list(a), (), "any"),
    "dict": (_dict, (), "any"),
    "b64enc": (lambda s: base64.b64encode(s.encode("utf-8")).decode("ascii"), ("string",), None),
    "ternary": (_ternary, ("any", "any", "bool"), None),
    "int": (_to_int, ("any",), None),
    "int64": (_to_int, ("any",), None),
    "add": (_arith("add"), ("any",), "any"),
    "sub": (_arith("sub"), ("any", "any"), None),
    "join": (lambda sep, items: sep.join(strslice(items)), ("string", "any"), None),
    "coalesce": (lambda *a: next((v for v in a if truth(v)), None), (), "any"),
}

#: Functions the evaluator implements itself (lazy arguments, templates, printing).
SPECIAL_FUNCTIONS = frozenset(("and", "or", "include", "print", "printf", "println"))
