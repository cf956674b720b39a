# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Safe, fast YAML I/O for recipes, bundles, thresholds and every other YAML input.

* Uses PyYAML's C loader/dumper when present (falls back to pure Python).
* Refuses files over a size limit and documents whose alias expansion would exceed
  a node budget ("billion laughs"), *before* constructing any Python object.
* Errors name the file and the 1-based line; they are :class:`YamlLoadError`, or the subclass a caller passes
  as ``error`` (the recipe store passes ``RecipeLoadError``).
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Type

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import YamlLoadError

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
            return list(yaml.load_all(text, Loader=SafeLoader))
        return yaml.load(text, Loader=SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise error("malformed YAML: %s" % problem, file=source, line=line) from None
    except yaml.YAMLError as exc:
        raise error("malformed YAML: %s" % exc, file=source) from None


def load_yaml_file(path: str, max_bytes: int = MAX_BYTES, max_nodes: int = MAX_EXPANDED_NODES,
                   display: Optional[str] = None, multi: bool = False, error: Type[YamlLoadError] = YamlLoadError) -> Any:
    """Read and parse a YAML file; ``display`` is the name used in errors (defaults to path)."""
    name = display or path
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise error("YAML file is %d bytes, over the %d byte limit; refused" % (size, max_bytes), file=name)
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error("cannot read file: %s" % exc.strerror, file=name) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error("file is not UTF-8 text", file=name) from None
    return load_yaml_text(text, source=name, max_nodes=max_nodes, multi=multi, error=error)


def dump_yaml(data: Any) -> str:
    """Deterministic block-style YAML (keys in insertion order, unicode kept)."""
    return yaml.dump(data, Dumper=SafeDumper, default_flow_style=False, sort_keys=False,
                     allow_unicode=True, width=1000)


def dump_yaml_all(documents: List[Any]) -> str:
    return yaml.dump_all(documents, Dumper=SafeDumper, default_flow_style=False, sort_keys=False,
                         allow_unicode=True, width=1000, explicit_start=True)
