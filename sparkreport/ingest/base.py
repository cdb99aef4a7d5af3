"""The parser registry: one class per source format, each saying what it recognizes.

A parser reads one :class:`Source` and returns :class:`ParsedRun` objects. The only exception
allowed to leave ``parse`` is :class:`~sparkreport.errors.ParseError` (the ingest wraps
anything else into one, naming the file, so no traceback reaches a user).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from sparkreport.errors import ParseError
from sparkreport.registry import registrar
from sparkreport.schema import RunRecord
from sparkreport.store import RawFile, sha256_file

HEAD_BYTES = 64 * 1024


class Source:
    """One input file, with cheap access to its head for detection."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @cached_property
    def head(self) -> bytes:
        with self.path.open("rb") as handle:
            return handle.read(HEAD_BYTES)

    @cached_property
    def head_text(self) -> str:
        """The head decoded leniently (for detection only)."""
        return self.head.decode("utf-8", errors="replace")

    @cached_property
    def sha256(self) -> str:
        return sha256_file(self.path)

    def looks_binary(self) -> bool:
        return b"\x00" in self.head

    def text(self) -> str:
        """The whole file as UTF-8 text, or a ParseError naming the bad byte's line."""
        data = self.path.read_bytes()
        if not data.strip():
            raise ParseError(self.path, "the file is empty", fix="point ingest at a results file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ParseError(
                self.path, "is not UTF-8 text (binary or wrongly encoded)", line=line,
                fix="ingest the original text output",
            ) from None

    def json(self) -> Any:
        """The file parsed as JSON, or a ParseError naming the line."""
        text = self.text()
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(
                self.path, f"is not valid JSON ({exc.msg}, column {exc.colno})", line=exc.lineno,
                fix="re-export the file; a truncated copy cannot be read",
            ) from None


@dataclass
class Table:
    """A per-request or per-sample table a source holds (kept as ``<name>.csv`` beside run.json).

    Column names carry their units (``ttft_ms``, ``power_draw_w``); a missing value is None.
    """

    name: str
    columns: list[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    description: str = ""


@dataclass
class ParsedRun:
    """A run as a parser saw it; the ingest adds campaign, labels and provenance."""

    record: RunRecord
    natural_id: str | None = None
    locator: str | None = None
    raw: list[RawFile] = field(default_factory=list)
    keep_source_once: bool = False
    #: Campaign the source itself names (used when ``--campaign`` is not given).
    campaign: str | None = None
    #: Per-request / per-sample tables, written as ``<name>.csv`` beside run.json.
    tables: list[Table] = field(default_factory=list)


class Parser:
    """Base class of a source-format parser."""

    #: Short name used by ``--format`` and shown by ``sparkreport formats``.
    name: ClassVar[str]
    #: One line: what the format is.
    description: ClassVar[str]
    #: Which tool versions it reads (free text).
    versions: ClassVar[str] = ""
    #: Campaign name used when ``--campaign`` is not given.
    default_campaign: ClassVar[str] = "ingested"

    def detect(self, source: Source) -> bool:
        """True when the file is in this format (by content, not by name)."""
        raise NotImplementedError

    def companions(self, source: Source) -> list[Path]:
        """Other files this parser reads together with ``source`` (not ingested on their own)."""
        return []

    def parse(self, source: Source) -> list[ParsedRun]:
        raise NotImplementedError


PARSERS: dict[str, type[Parser]] = {}


register = registrar(PARSERS, "name", "parser")


def stable_id(*parts: str) -> str:
    """A short stable hash of ``parts`` for ids with no natural key."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:12]


def number(value: Any, path: Path, what: str, *, line: int | None = None) -> float | None:
    """A finite float from a JSON value; None stays None; anything else is a ParseError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(path, f"{what} should be a number, found {value!r}", line=line,
                         fix="fix or remove that value")
    if value != value or value in (float("inf"), float("-inf")):
        raise ParseError(path, f"{what} is not a finite number", line=line, fix="fix or remove that value")
    return float(value)


def integer(value: Any, path: Path, what: str) -> int | None:
    """An int from a JSON value (None stays None), or a ParseError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParseError(path, f"{what} should be an integer, found {value!r}", fix="fix that value")
    return value


def text_field(value: Any, path: Path, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParseError(path, f"{what} should be a string, found {value!r}", fix="fix that value")
    return value
