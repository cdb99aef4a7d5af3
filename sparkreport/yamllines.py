"""Where each key of a YAML file stands: the line a one-line error names.

Keys are written as the messages write them: ``arms[0].metrics.kv_cache_gib``. Used by the
project configuration (``sparkreport.yml``) and the published-summary parser.
"""

from __future__ import annotations

import contextlib
from typing import Any

import yaml


def key_lines(text: str) -> dict[str, int]:
    """The 1-based line of every key path in ``text`` (the first, if a key is repeated); {} when
    the text is not YAML (the loader reports that, with its own mark)."""
    lines: dict[str, int] = {}
    with contextlib.suppress(yaml.YAMLError):
        _walk(yaml.compose(text), "", lines)
    return lines


def _walk(node: Any, prefix: str, lines: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = f"{prefix}.{key.value}" if prefix else str(key.value)
            lines.setdefault(name, key.start_mark.line + 1)
            _walk(value, name, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            name = f"{prefix}[{index}]"
            lines.setdefault(name, item.start_mark.line + 1)
            _walk(item, name, lines)


def line_of(lines: dict[str, int], key: str) -> int | None:
    """The line of ``key``, else of the nearest key above it that has one."""
    line = lines.get(key)
    while line is None and ("." in key or "[" in key):
        key = key[:max(key.rfind("."), key.rfind("["))]
        line = lines.get(key)
    return line


__all__ = ["key_lines", "line_of"]
