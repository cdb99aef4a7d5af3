"""Where each key of a YAML file stands: the line a one-line error names.

Keys are written as the messages write them: ``arms[0].metrics.kv_cache_gib``. Used by the
project configuration (``sparkreport.yml``), the published-summary parser and the campaign files.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import yaml

if TYPE_CHECKING:
    from sparkreport.errors import InputError

#: The error a file's problems raise (a ConfigError for sparkreport.yml, a ParseError for an input).
E = TypeVar("E", bound="InputError")


def key_lines(text: str) -> dict[str, int]:
    """The 1-based line of every key path in ``text``, dotted (:func:`dotted`); {} when the text is
    not YAML (the loader reports that, with its own mark)."""
    with contextlib.suppress(yaml.YAMLError):
        node = yaml.compose(text)
        if node is not None:
            return {dotted(path): line for path, line in node_lines(node).items() if path}
    return {}


def node_lines(node: yaml.Node) -> dict[tuple[Any, ...], int]:
    """The 1-based line of every key path (a tuple of keys and list indexes, () the document) in a
    composed YAML tree; a repeated key's last line, whose value the loader keeps."""
    out: dict[tuple[Any, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
        out.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                out[path + (key_node.value,)] = key_node.start_mark.line + 1
                walk(value_node, path + (key_node.value,))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                out[path + (index,)] = item.start_mark.line + 1
                walk(item, path + (index,))

    walk(node, ())
    return out


def dotted(path: tuple[Any, ...]) -> str:
    """A key path as the messages write it: ``arms[0].metrics.kv_cache_gib``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def line_of(lines: dict[str, int], key: str) -> int | None:
    """The line of ``key``, else of the nearest key above it that has one."""
    line = lines.get(key)
    while line is None and ("." in key or "[" in key):
        key = key[:max(key.rfind("."), key.rfind("["))]
        line = lines.get(key)
    return line


class Where(Generic[E]):
    """A YAML file and the line of each key in it, for one-line errors that name both."""

    def __init__(self, path: Path, text: str, error: type[E], *, fix: str = "", node: yaml.Node | None = None):
        """``node``: the file's composed tree, when the caller has it (else ``text`` is composed);
        then the document's own line is kept too, for what has no key of its own."""
        self.path = path
        self.lines = key_lines(text) if node is None else {dotted(k): v for k, v in node_lines(node).items()}
        self._error = error
        self._fix = fix

    def line(self, key: str | tuple[Any, ...]) -> int | None:
        """The line of ``key`` (dotted, or a path of keys and list indexes), else of its nearest
        parent's, else the document's (when known)."""
        key = dotted(key) if isinstance(key, tuple) else key
        found = line_of(self.lines, key)
        return found if found is not None else self.lines.get("")

    def error(self, key: str, problem: str, fix: str | None = None) -> E:
        """``problem`` at ``key``'s line (or its nearest parent's; none for the empty key, the whole
        file, unless the document's line is known), with ``fix`` or else the file's own."""
        return self._error(self.path, problem, line=self.line(key), fix=self._fix if fix is None else fix)

    def fail(self, path: tuple[Any, ...], problem: str, fix: str | None = None) -> E:
        """:meth:`error` at a path of keys and list indexes, the path leading the message
        (``models[1].name: …``)."""
        key = dotted(path)
        return self.error(key, f"{key}: {problem}" if key else problem, fix)


__all__ = ["Where", "dotted", "key_lines", "line_of", "node_lines"]
