# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Safe, fast YAML I/O for recipes, bundles, thresholds and every other YAML input.

* Uses PyYAML's C loader/dumper when present (falls back to pure Python).
* Refuses files over a size limit and documents whose alias expansion would exceed
  a node budget ("billion laughs"), *before* constructing any Python object.
* Refuses a mapping that repeats a key (YAML says keys are unique; PyYAML silently keeps the last one),
  naming the file and the line of the repeated key.
* Refuses data nested deeper than :data:`MAX_DEPTH` levels (and self-referencing aliases): every later walk
  (merging, copying, diffing, dumping) is recursive, so depth is checked once, here, at load;
  :func:`check_depth` does the same for data that did not come from a file (module options).
* Reads only regular files (a FIFO or device is refused without blocking on it).
* Errors name the file and the 1-based line; they are :class:`YamlLoadError`, or the subclass a caller passes
  as ``error`` (the recipe store passes ``RecipeLoadError``).
"""
from __future__ import annotations

import os
import stat
from typing import Any, Dict, List, Optional, Type

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import DsxosError, YamlLoadError

try:
    import yaml
    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError as _exc:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False
    YAML_IMPORT_ERROR = _exc

HAS_LIBYAML = False
if HAS_YAML:
    try:  # pragma: no cover - depends on how PyYAML was built
        from yaml import CSafeLoader as SafeLoader, CSafeDumper as SafeDumper
        HAS_LIBYAML = True
    except ImportError:  # pragma: no cover
        from yaml import SafeLoader, SafeDumper  # type: ignore

MAX_BYTES = 4 * 1024 * 1024
MAX_EXPANDED_NODES = 200_000
#: Deepest nesting of mappings/lists accepted in any document or option (Helm values rarely pass 10).
MAX_DEPTH = 100

if HAS_YAML:
    class StrictSafeLoader(SafeLoader):  # type: ignore[valid-type,misc]
        """The (C) safe loader, refusing a mapping that repeats a key (merge keys ``<<`` may still be overridden)."""

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                first: Dict[Any, Any] = {}
                for key_node, dummy in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        earlier = first.get(key)
                    except TypeError:  # unhashable key: SafeConstructor reports it below
                        continue
                    if earlier is not None:
                        # the key as written (YAML 1.1 reads on/yes/no/off as booleans: say what it was read as too)
                        mark, written = earlier
                        text = key_node.value if isinstance(key_node, yaml.ScalarNode) else key
                        read_as = "" if (text == key and written == key) else " (read as %r%s)" % (
                            key, "" if written == text else ", like %r there" % (written,))
                        raise yaml.constructor.ConstructorError(
                            None, None, "duplicate key %r in a mapping (first at line %d)%s" % (text, mark.line + 1, read_as),
                            key_node.start_mark)
                    first[key] = (key_node.start_mark, key_node.value if isinstance(key_node, yaml.ScalarNode) else key)
            return super().construct_mapping(node, deep=deep)
else:  # pragma: no cover
    StrictSafeLoader = None  # type: ignore


def data_depth_error(data: Any, max_depth: int = MAX_DEPTH) -> Optional[str]:
    """``None`` when ``data`` nests at most ``max_depth`` mappings/lists, else the key path (``a.b[0]...``) where
    the limit is crossed. Iterative (no recursion), so it is safe on any input, cycles included."""
    stack: List[Any] = [(data, 0, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict):
            items: Any = ((("%s.%s" % (where, k)) if where else str(k), v) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            items = (("%s[%d]" % (where, i), v) for i, v in enumerate(value))
        else:
            continue
        if depth >= max_depth:
            return where or "(top level)"
        for sub_where, sub in items:
            if isinstance(sub, (dict, list, tuple)):
                stack.append((sub, depth + 1, sub_where))
    return None


def check_depth(data: Any, source: Optional[str] = None, field: Optional[str] = None, max_depth: int = MAX_DEPTH,
                error: Type[DsxosError] = YamlLoadError, line: Optional[int] = None) -> Any:
    """Raise ``error`` naming ``source`` (a file) or ``field`` (an option) when ``data`` nests deeper than
    ``max_depth``; return ``data``."""
    where = data_depth_error(data, max_depth)
    if where is not None:
        if len(where) > 120:
            where = where[:60] + "..." + where[-40:]
        raise error("data nested deeper than %d levels (at %s); refused" % (max_depth, where),
                    file=source, field=field, line=line)
    return data


def _check_expansion(text: str, source: str, max_nodes: int, error: Type[YamlLoadError] = YamlLoadError) -> None:
    """Walk parser events and count nodes as if every alias were expanded."""
    if "*" not in text:  # no alias at all: nothing can blow up
        return
    sizes: Dict[str, int] = {}
    stack: List[List[Any]] = []
    total = 0
    for event in yaml.parse(text, Loader=SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            stack.append([event.anchor, 1])
            total += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, count = stack.pop()
            if anchor:
                sizes[anchor] = count
            if stack:
                stack[-1][1] += count
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor:
                sizes[event.anchor] = 1
            if stack:
                stack[-1][1] += 1
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor, 1)
            total += size
            if stack:
                stack[-1][1] += size
            if total > max_nodes:
                line = event.start_mark.line + 1 if event.start_mark else None
                raise error(
                    "YAML alias expansion exceeds %d nodes (alias bomb?); refused" % max_nodes,
                    file=source, line=line)


def load_yaml_text(text: str, source: str = "<string>", max_nodes: int = MAX_EXPANDED_NODES,
                   multi: bool = False, error: Type[YamlLoadError] = YamlLoadError) -> Any:
    """Parse YAML text safely.  ``multi`` returns a list of all documents."""
    try:
        _check_expansion(text, source, max_nodes, error)
        if multi:
            data: Any = list(yaml.load_all(text, Loader=StrictSafeLoader))
        else:
            data = yaml.load(text, Loader=StrictSafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        if "maximum nesting depth" in problem:
            problem = "data nested deeper than the YAML parser allows (limit %d levels); refused" % MAX_DEPTH
            raise error(problem, file=source, line=line) from None
        raise error("malformed YAML: %s" % problem, file=source, line=line) from None
    except yaml.YAMLError as exc:
        raise error("malformed YAML: %s" % exc, file=source) from None
    except RecursionError:  # pragma: no cover - the C parser stops at 1000 levels first
        raise error("data nested too deeply; refused", file=source) from None
    return check_depth(data, source=source, max_depth=MAX_DEPTH + (1 if multi else 0), error=error)


def load_yaml_file(path: str, max_bytes: int = MAX_BYTES, max_nodes: int = MAX_EXPANDED_NODES,
                   display: Optional[str] = None, multi: bool = False, error: Type[YamlLoadError] = YamlLoadError) -> Any:
    """Read and parse a YAML file; ``display`` is the name used in errors (defaults to path)."""
    name = display or path
    try:
        raw = read_regular_file(path, max_bytes)
    except OSError as exc:
        raise error("cannot read file: %s" % exc.strerror, file=name) from None
    if raw is None:
        raise error("not a regular file (a FIFO, device or directory); refused", file=name)
    if len(raw) > max_bytes:
        raise error("YAML file is over the %d byte limit; refused" % max_bytes, file=name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error("file is not UTF-8 text", file=name) from None
    return load_yaml_text(text, source=name, max_nodes=max_nodes, multi=multi, error=error)


def read_regular_file(path: str, max_bytes: int) -> Optional[bytes]:
    """At most ``max_bytes + 1`` bytes of ``path``; ``None`` when it is not a regular file (checked on the open
    descriptor, opened non-blocking so a FIFO never hangs the caller). ``OSError`` propagates."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: List[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _dump(documents: List[Any], explicit_start: bool) -> str:
    try:
        return yaml.dump_all(documents, Dumper=SafeDumper, default_flow_style=False, sort_keys=False,
                             allow_unicode=True, width=1000, explicit_start=explicit_start)
    except RecursionError:
        raise YamlLoadError("data nested too deeply to write as YAML (limit %d levels)" % MAX_DEPTH) from None
    except yaml.YAMLError as exc:  # e.g. a value with no YAML representation
        raise YamlLoadError("cannot write as YAML: %s" % exc) from None


def dump_yaml(data: Any) -> str:
    """Deterministic block-style YAML (keys in insertion order, unicode kept)."""
    return _dump([data], False)


def dump_yaml_all(documents: List[Any]) -> str:
    return _dump(list(documents), True)
