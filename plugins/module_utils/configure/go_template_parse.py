# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Lexer and parser of Go ``text/template`` (the syntax of Helm templates and AICR manifests).

:func:`parse` turns template text into a :class:`Template`: the main node list plus the ``define``/``block``
templates. Nodes are tuples-in-classes with the byte-free character ``offset`` of their construct so errors can
name line and column. Syntax errors raise :class:`TemplateFault`, which the renderer turns into a
``RenderError`` naming the file.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

KEYWORDS = frozenset(("if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"))
SPACE_CHARS = " \t\r\n"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELD_CHAIN = re.compile(r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_NUMBER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F_]+(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?[0-9_]+)?|0[oO][0-7_]+|0[bB][01_]+|"
                     r"(?:[0-9][0-9_]*\.?[0-9_]*|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9_]+)?)")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


class TemplateFault(Exception):
    """A template error at a character offset; ``construct`` names the function or construct at fault."""

    def __init__(self, message: str, offset: int, construct: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.construct = construct


class Node:
    """Base of every node: ``offset`` is where its construct starts in the source."""

    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset


class Text(Node):
    __slots__ = ("text",)

    def __init__(self, offset: int, text: str) -> None:
        super().__init__(offset)
        self.text = text


class Operand(Node):
    """One argument word: ``kind`` is field/var/dot/nil/bool/number/string/ident/pipe; ``chain`` are field names."""

    __slots__ = ("kind", "value", "chain", "text")

    def __init__(self, offset: int, kind: str, value: Any = None, chain: Sequence[str] = (), text: str = "") -> None:
        super().__init__(offset)
        self.kind = kind
        self.value = value
        self.chain = tuple(chain)
        self.text = text


class Command(Node):
    __slots__ = ("args",)

    def __init__(self, offset: int, args: List[Operand]) -> None:
        super().__init__(offset)
        self.args = args


class Pipeline(Node):
    """Commands joined by ``|``; ``decl`` are the declared (``:=``) or assigned (``=``) variable names."""

    __slots__ = ("decl", "assign", "commands")

    def __init__(self, offset: int, decl: List[str], assign: bool, commands: List[Command]) -> None:
        super().__init__(offset)
        self.decl = decl
        self.assign = assign
        self.commands = commands


class Action(Node):
    __slots__ = ("pipe",)

    def __init__(self, offset: int, pipe: Pipeline) -> None:
        super().__init__(offset)
        self.pipe = pipe


class Branch(Node):
    """``if``, ``with`` or ``range``: ``body`` when the pipeline is true (or per element), else ``other``."""

    __slots__ = ("keyword", "pipe", "body", "other")

    def __init__(self, offset: int, keyword: str, pipe: Pipeline, body: List[Node], other: Optional[List[Node]]) -> None:
        super().__init__(offset)
        self.keyword = keyword
        self.pipe = pipe
        self.body = body
        self.other = other


class LoopControl(Node):
    __slots__ = ("keyword",)

    def __init__(self, offset: int, keyword: str) -> None:
        super().__init__(offset)
        self.keyword = keyword


class TemplateCall(Node):
    __slots__ = ("name", "pipe")

    def __init__(self, offset: int, name: str, pipe: Optional[Pipeline]) -> None:
        super().__init__(offset)
        self.name = name
        self.pipe = pipe


class Template:
    """A parsed template file: ``root`` nodes and the named templates it defines."""

    def __init__(self, source: str, root: List[Node], defines: Dict[str, List[Node]]) -> None:
        self.source = source
        self.root = root
        self.defines = defines


Token = Tuple[str, Any, int, bool]  # kind, value, offset, preceded by space


def _unquote(body: str, offset: int) -> str:
    out: List[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in ('"', "'"):
            out.append(nxt)
            i += 2
        elif nxt in ("x", "u", "U"):
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            digits = body[i + 2:i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise TemplateFault("invalid syntax in quoted string: bad \\%s escape" % nxt, offset)
            out.append(chr(int(digits, 16)) if int(digits, 16) <= 0x10FFFF else "\ufffd")
            i += 2 + width
        elif nxt and nxt in "01234567":
            digits = body[i + 1:i + 4]
            if len(digits) != 3 or not all(c in "01234567" for c in digits) or int(digits, 8) > 255:
                raise TemplateFault("invalid syntax in quoted string: bad octal escape", offset)
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise TemplateFault("invalid syntax in quoted string: unknown escape \\%s" % nxt, offset)
    return "".join(out)


def _number(text: str, offset: int) -> Tuple[Any, bool]:
    """The value of a number literal and whether it is written as a float (Go's ideal constants)."""
    clean = text.replace("_", "")
    low = clean.lower().lstrip("+-")
    sign = -1 if clean.startswith("-") else 1
    try:
        if low.startswith(("0x", "0o", "0b")) and "." not in low and "p" not in low:
            return sign * int(low[2:], {"x": 16, "o": 8, "b": 2}[low[1]]), False
        if low.startswith("0x"):
            return sign * float.fromhex(low), True
        if any(c in low for c in ".e"):
            value = float(clean)
            return value, True
        if len(low) > 1 and low.startswith("0"):
            return sign * int(low, 8), False
        return int(clean), False
    except (ValueError, OverflowError):
        raise TemplateFault("bad number syntax: %r" % text, offset, "number") from None


def _lex_action(src: str, pos: int, end_delim_search: int) -> Tuple[List[Token], int, bool]:
    """Tokens of the action starting at ``pos`` (after ``{{`` and any trim marker).

    Returns the tokens, the offset just after ``}}`` and whether the action ends with ``-}}``.
    """
    tokens: List[Token] = []
    spaced = True
    i = pos
    n = len(src)
    start_action = end_delim_search
    while True:
        if i >= n:
            raise TemplateFault("unclosed action", start_action, "{{")
        char = src[i]
        if char in SPACE_CHARS:
            j = i
            while j < n and src[j] in SPACE_CHARS:
                j += 1
            if src.startswith("-}}", j):
                return tokens, j + 3, True
            i = j
            spaced = True
            continue
        if src.startswith("}}", i):
            return tokens, i + 2, False
        if char in "()|,":
            tokens.append((char, char, i, spaced))
            i += 1
        elif src.startswith(":=", i):
            tokens.append((":=", ":=", i, spaced))
            i += 2
        elif char == "=":
            tokens.append(("=", "=", i, spaced))
            i += 1
        elif char == '"':
            j = i + 1
            while j < n and src[j] != '"':
                if src[j] == "\\":
                    j += 1
                if j < n and src[j] == "\n":
                    raise TemplateFault("unterminated quoted string", i, "string")
                j += 1
            if j >= n:
                raise TemplateFault("unterminated quoted string", i, "string")
            tokens.append(("string", _unquote(src[i + 1:j], i), i, spaced))
            i = j + 1
        elif char == "`":
            j = src.find("`", i + 1)
            if j < 0:
                raise TemplateFault("unterminated raw quoted string", i, "string")
            tokens.append(("string", src[i + 1:j].replace("\r", ""), i, spaced))
            i = j + 1
        elif char == "'":
            match = re.compile(r"'(\\(?:[abfnrtv\\'\"]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3})|[^\\'\n])'").match(src, i)
            if not match:
                raise TemplateFault("unterminated character constant", i, "character")
            tokens.append(("number", (ord(_unquote(match.group(1), i)), False, match.group(0)), i, spaced))
            i = match.end()
        elif char == "$":
            match = re.compile(r"\$[A-Za-z0-9_]*").match(src, i)
            name = match.group(0) if match is not None else "$"
            chain = _FIELD_CHAIN.match(src, match.end())
            parts = chain.group(0)[1:].split(".") if chain else []
            tokens.append(("var", (name, parts), i, spaced))
            i = chain.end() if chain else match.end()
        elif char == "." and not (i + 1 < n and src[i + 1].isdigit()):
            chain = _FIELD_CHAIN.match(src, i)
            if chain:
                tokens.append(("field", chain.group(0)[1:].split("."), i, spaced))
                i = chain.end()
            else:
                tokens.append(("dot", ".", i, spaced))
                i += 1
        elif char.isdigit() or char in "+-.":
            match = _NUMBER.match(src, i)
            if not match or not match.group(0).strip("+-") or (match.end() < n and (src[match.end()].isalnum() or src[match.end()] in "_.")):
                bad = re.compile(r"[^\s(){}|]+").match(src, i)
                raise TemplateFault("bad number syntax: %r" % (bad.group(0) if bad else char), i, "number")
            value, is_float = _number(match.group(0), i)
            tokens.append(("number", (value, is_float, match.group(0)), i, spaced))
            i = match.end()
        else:
            match = _IDENT.match(src, i)
            if not match:
                raise TemplateFault("unexpected bad character %r in command" % char, i, "action")
            word = match.group(0)
            if word in ("true", "false"):
                tokens.append(("bool", word == "true", i, spaced))
            elif word == "nil":
                tokens.append(("nil", None, i, spaced))
            elif word in KEYWORDS:
                tokens.append(("kw", word, i, spaced))
            else:
                tokens.append(("ident", word, i, spaced))
            i = match.end()
            if i < n and src[i] == "." and _FIELD_CHAIN.match(src, i):
                chain = _FIELD_CHAIN.match(src, i)
                tokens.append(("field", chain.group(0)[1:].split(".") if chain is not None else [], i, False))
                i = chain.end()
        spaced = False


class _Parser:
    """Recursive descent over the item stream of one template file."""

    def __init__(self, source: str, funcs: Set[str], max_depth: int) -> None:
        self.src = source
        self.funcs = funcs
        self.max_depth = max_depth
        self.items = self._items()
        self.index = 0
        self.defines: Dict[str, List[Node]] = {}
        self.scopes: List[List[str]] = [["$"]]
        self.depth = 0
        self.loops = 0

    # ---------------------------------------------------------------- items
    def _items(self) -> List[Tuple[str, Any, int]]:
        src = self.src
        items: List[Tuple[str, Any, int]] = []
        pos = 0
        trim_next = False
        while True:
            start = src.find("{{", pos)
            text = src[pos:] if start < 0 else src[pos:start]
            text_offset = pos
            if trim_next:
                stripped = text.lstrip(SPACE_CHARS)
                text_offset += len(text) - len(stripped)
                text = stripped
            if start < 0:
                if text:
                    items.append(("text", text, text_offset))
                return items
            inner = start + 2
            if src.startswith("-", inner) and src[inner + 1:inner + 2] in tuple(SPACE_CHARS):
                text = text.rstrip(SPACE_CHARS)
                inner += 2
            if text:
                items.append(("text", text, text_offset))
            if src.startswith("/*", inner):
                close = src.find("*/", inner + 2)
                if close < 0:
                    raise TemplateFault("unclosed comment", start, "comment")
                after = close + 2
                if src.startswith("}}", after):
                    pos, trim_next = after + 2, False
                elif src[after:after + 1] in tuple(SPACE_CHARS) and src.startswith("-}}", after + 1):
                    pos, trim_next = after + 4, True
                else:
                    raise TemplateFault("comment ends before closing delimiter", close, "comment")
                continue
            tokens, pos, trim_next = _lex_action(src, inner, start)
            items.append(("action", tokens, start))

    # ---------------------------------------------------------------- helpers
    def _enter(self, offset: int, what: str) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise TemplateFault("template nesting deeper than the limit of %d" % self.max_depth, offset, what)

    def _declare(self, name: str) -> None:
        self.scopes[-1].append(name)

    def _known(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    # ---------------------------------------------------------------- structure
    def parse(self) -> Template:
        root, stop = self._list(top=True)
        if stop is not None:
            raise TemplateFault("unexpected {{%s}}" % stop[0], stop[1], stop[0])
        return Template(self.src, root, self.defines)

    def _list(self, top: bool = False) -> Tuple[List[Node], Optional[Tuple[str, int, List[Token]]]]:
        """Nodes up to an ``{{end}}``/``{{else}}`` (returned as the stop item) or the end of input."""
        nodes: List[Node] = []
        while self.index < len(self.items):
            kind, value, offset = self.items[self.index]
            self.index += 1
            if kind == "text":
                nodes.append(Text(offset, value))
                continue
            tokens: List[Token] = value
            if not tokens:
                raise TemplateFault("missing value for command", offset, "action")
            head = tokens[0]
            if head[0] == "kw":
                word = head[1]
                if word in ("end", "else"):
                    return nodes, (word, offset, tokens)
                if word == "define":
                    if not top:
                        raise TemplateFault("unexpected {{define}}: define only at the top level", offset, "define")  # pylint: disable=raising-format-tuple
                    self._define(tokens, offset)
                    continue
                nodes.append(self._keyword(word, tokens, offset))
            else:
                pipe = self._pipeline(tokens, 0, offset, "command")[0]
                nodes.append(Action(offset, pipe))
        return nodes, None

    def _body(self, word: str, offset: int) -> Tuple[List[Node], Tuple[str, int, List[Token]]]:
        nodes, stop = self._list()
        if stop is None:
            raise TemplateFault("unexpected EOF: {{%s}} has no {{end}}" % word, offset, word)
        return nodes, stop

    def _name(self, tokens: List[Token], word: str, offset: int) -> str:
        if len(tokens) < 2 or tokens[1][0] != "string":
            raise TemplateFault("{{%s}} needs a quoted template name" % word, offset, word)
        return tokens[1][1]

    def _define(self, tokens: List[Token], offset: int) -> None:
        name = self._name(tokens, "define", offset)
        if len(tokens) > 2:
            raise TemplateFault("unexpected %r in define clause" % str(tokens[2][1]), tokens[2][2], "define")
        saved, self.scopes = self.scopes, [["$"]]
        self._enter(offset, "define")
        body, stop = self._body("define", offset)
        self.depth -= 1
        self.scopes = saved
        if stop[0] != "end" or len(stop[2]) > 1:
            raise TemplateFault("unexpected {{%s}} in define" % stop[0], stop[1], "define")
        self.defines[name] = body

    def _keyword(self, word: str, tokens: List[Token], offset: int) -> Node:
        if word in ("break", "continue"):
            if not self.loops:
                raise TemplateFault("{{%s}} outside {{range}}" % word, offset, word)
            if len(tokens) > 1:
                raise TemplateFault("unexpected %r in {{%s}}" % (str(tokens[1][1]), word), tokens[1][2], word)
            return LoopControl(offset, word)
        if word in ("template", "block"):
            name = self._name(tokens, word, offset)
            pipe = self._pipeline(tokens, 2, offset, word)[0] if len(tokens) > 2 else None
            if word == "block":
                saved, self.scopes = self.scopes, [["$"]]
                self._enter(offset, word)
                body, stop = self._body(word, offset)
                self.depth -= 1
                self.scopes = saved
                if stop[0] != "end" or len(stop[2]) > 1:
                    raise TemplateFault("unexpected {{%s}} in block" % stop[0], stop[1], word)
                self.defines[name] = body
            return TemplateCall(offset, name, pipe)
        return self._branch(word, tokens, 1, offset)

    def _branch(self, word: str, tokens: List[Token], start: int, offset: int) -> Branch:
        """``if``/``with``/``range`` (``start`` is the token after the keyword); handles ``else if``/``else with``."""
        self._enter(offset, word)
        self.scopes.append([])
        pipe = self._pipeline(tokens, start, offset, word, allow_decl=True, in_range=word == "range")[0]
        if word == "range":
            self.loops += 1
        body, stop = self._body(word, offset)
        if word == "range":
            self.loops -= 1
        other: Optional[List[Node]] = None
        if stop[0] == "else":
            else_tokens = stop[2]
            if len(else_tokens) > 1:
                if else_tokens[1][0] != "kw" or else_tokens[1][1] not in ("if", "with") or word == "range":
                    raise TemplateFault("unexpected %r in {{else}}" % str(else_tokens[1][1]), else_tokens[1][2], word)
                if else_tokens[1][1] != word:
                    raise TemplateFault("{{else %s}} inside {{%s}}" % (else_tokens[1][1], word), stop[1], word)
                other = [self._branch(word, else_tokens, 2, stop[1])]
                self.scopes.pop()
                self.depth -= 1
                return Branch(offset, word, pipe, body, other)
            other, stop = self._body(word, offset)
            if stop[0] != "end":
                raise TemplateFault("expected {{end}}; found {{else}}", stop[1], word)  # pylint: disable=raising-format-tuple
        if len(stop[2]) > 1:
            raise TemplateFault("unexpected %r in end" % str(stop[2][1][1]), stop[2][1][2], "end")
        self.scopes.pop()
        self.depth -= 1
        return Branch(offset, word, pipe, body, other)

    # ---------------------------------------------------------------- pipelines
    def _pipeline(self, tokens: List[Token], pos: int, offset: int, context: str, allow_decl: bool = True,
                  in_range: bool = False, stop_paren: bool = False) -> Tuple[Pipeline, int]:
        decl: List[str] = []
        assign = False
        # declarations: $x := / $x = / $i, $e :=
        probe = pos
        names: List[Tuple[str, int]] = []
        while probe < len(tokens) and tokens[probe][0] == "var" and not tokens[probe][1][1]:
            names.append((tokens[probe][1][0], tokens[probe][2]))
            if probe + 1 < len(tokens) and tokens[probe + 1][0] == "," and in_range and len(names) == 1:
                probe += 2
                continue
            break
        if names and probe + 1 < len(tokens) and tokens[probe + 1][0] in (":=", "="):
            if not allow_decl:
                raise TemplateFault("unexpected declaration in %s" % context, tokens[pos][2], context)
            assign = tokens[probe + 1][0] == "="
            for name, where in names:
                if assign and not self._known(name):
                    raise TemplateFault('undefined variable "%s"' % name, where, name)
            decl = [name for name, _where in names]
            pos = probe + 2
        elif len(names) > 1:
            raise TemplateFault("range can only initialize variables", tokens[pos][2], context)
        commands: List[Command] = []
        args: List[Operand] = []
        cmd_offset = tokens[pos][2] if pos < len(tokens) else offset
        while pos < len(tokens):
            kind, value, where, _spaced = tokens[pos]
            if kind == ")":
                if not stop_paren:
                    raise TemplateFault("unexpected right paren", where, context)
                break
            if kind == "|":
                if not args:
                    raise TemplateFault("missing value for command", where, context)
                commands.append(Command(cmd_offset, args))
                args = []
                pos += 1
                cmd_offset = tokens[pos][2] if pos < len(tokens) else where
                continue
            if args and not tokens[pos][3] and kind not in ("field",):
                raise TemplateFault("unexpected %r in operand" % str(value), where, context)
            operand, pos = self._operand(tokens, pos, context)
            args.append(operand)
        if not args:
            if stop_paren and pos < len(tokens):
                raise TemplateFault("missing value for parenthesized pipeline", tokens[pos][2], context)
            raise TemplateFault("missing value for %s" % context, offset, context)
        commands.append(Command(cmd_offset, args))
        for command in commands[1:]:
            if command.args[0].kind in ("bool", "number", "string", "nil", "dot"):
                raise TemplateFault("non executable command in pipeline stage 2", command.offset, context)
        for name in decl:
            if not assign:
                self._declare(name)
        return Pipeline(offset, decl, assign, commands), pos

    def _operand(self, tokens: List[Token], pos: int, context: str) -> Tuple[Operand, int]:
        kind, value, where, _spaced = tokens[pos]
        pos += 1
        if kind == "field":
            node = Operand(where, "field", chain=value, text="." + ".".join(value))
        elif kind == "var":
            name, parts = value
            if not self._known(name):
                raise TemplateFault('undefined variable "%s"' % name, where, name)
            node = Operand(where, "var", name, parts, text=name + "".join("." + p for p in parts))
        elif kind == "dot":
            node = Operand(where, "dot", text=".")
        elif kind == "nil":
            node = Operand(where, "nil", text="nil")
        elif kind == "bool":
            node = Operand(where, "bool", value, text=str(value).lower())
        elif kind == "number":
            node = Operand(where, "number", value, text=value[2])
        elif kind == "string":
            node = Operand(where, "string", value, text=repr(value))
        elif kind == "ident":
            if value not in self.funcs:
                raise TemplateFault('function "%s" not defined' % value, where, value)
            node = Operand(where, "ident", value, text=value)
        elif kind == "(":
            self._enter(where, "(")
            inner, pos = self._pipeline(tokens, pos, where, "parenthesized pipeline", allow_decl=True, stop_paren=True)
            self.depth -= 1
            if pos >= len(tokens) or tokens[pos][0] != ")":
                raise TemplateFault("unclosed left paren", where, "(")
            pos += 1
            node = Operand(where, "pipe", inner, text="(...)")
        elif kind == "kw":
            raise TemplateFault("unexpected keyword %r in %s" % (value, context), where, value)
        else:
            raise TemplateFault("unexpected %r in %s" % (str(value), context), where, context)
        if pos < len(tokens) and tokens[pos][0] == "field" and not tokens[pos][3]:
            if node.kind in ("bool", "number", "string", "nil", "dot"):
                raise TemplateFault("unexpected . after term %r" % node.text, tokens[pos][2], context)
            node = Operand(where, "chain", node, tokens[pos][1], text=node.text + "." + ".".join(tokens[pos][1]))
            pos += 1
        return node, pos


def parse(source: str, funcs: Set[str], max_depth: int = 100) -> Template:
    """Parse ``source``; ``funcs`` are the function names templates may call (checked at parse time, as Go does)."""
    return _Parser(source, funcs, max_depth).parse()


def line_column(source: str, offset: int) -> Tuple[int, int]:
    """1-based line and column of a character offset."""
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column
