"""Shared helpers of the text parsers: streamed lines, logger prefixes, lenient numbers.

Benchmark logs can be large (a 1 GB trtllm-bench log is not unusual), so text parsers read
them through :func:`iter_lines`, which keeps at most one line (capped at ``MAX_LINE`` bytes)
in memory, decodes strictly as UTF-8 and turns a bad byte or a NUL into a one-line
:class:`~sparkreport.errors.ParseError` naming the line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sparkreport.errors import ParseError

#: Longest line kept; the rest of a longer line is dropped (such lines are never report lines).
MAX_LINE = 64 * 1024

#: Logger prefixes TensorRT-LLM and friends put before a message. Only these known bracket
#: groups are stripped: report lines such as ``[TPOT] P50 : …`` start with a bracket too.
_PREFIX = re.compile(
    r"^\s*(?:\[(?:\d{1,2}/\d{1,2}/\d{4}-\d{1,2}:\d{2}:\d{2}(?:\.\d+)?|TRT-LLM|TensorRT-LLM|"
    r"RANK \d+|[IWEVD]|INFO|WARNING|WARN|ERROR|DEBUG|VERBOSE|TRACE)\]\s*)+"
)
#: Spellings of "no value" across tools.
NULL_WORDS = frozenset({
    "", "none", "null", "n/a", "na", "nan", "-", "[n/a]", "[not supported]",
    "[insufficient permissions]", "[unknown error]", "not supported", "inf", "+inf", "-inf",
})


def strip_prefix(line: str) -> str:
    """``line`` without a leading logger prefix and without trailing whitespace."""
    return _PREFIX.sub("", line).rstrip()


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each line of ``path``, newline removed, streamed.

    Raises ParseError (with the line) on a NUL byte or on bytes that are not UTF-8.
    """
    for number, text, _ended in iter_ended_lines(path):
        yield number, text


def iter_ended_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """:func:`iter_lines` with whether each line ended with a line end: all but the last of a file
    cut off mid-line, whose last value may be a number cut short ("MAXIMUM: 28" of "MAXIMUM:
    2878.0000"). A line longer than MAX_LINE counts as ended (the rest of it is skipped)."""
    with path.open("rb") as handle:
        number = 0
        while True:
            chunk = handle.readline(MAX_LINE)
            if not chunk:
                return
            number += 1
            ended = chunk.endswith(b"\n") or len(chunk) == MAX_LINE
            if not chunk.endswith(b"\n") and len(chunk) == MAX_LINE:
                while (rest := handle.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass
            if b"\x00" in chunk:
                raise ParseError(path, "holds binary data (NUL bytes), not benchmark output",
                                 line=number, fix="ingest the original text output")
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError:
                raise ParseError(path, "is not UTF-8 text (binary or wrongly encoded)", line=number,
                                 fix="ingest the original text output") from None
            yield number, text.rstrip("\r\n"), ended


#: Why a value is left out of a run (:func:`iter_ended_lines`: the last line of a file cut off mid-line).
CUT_VALUE = "the last line has no line end, so its value may be cut off (line {line}): it is left out"


def report_lines(path: Path, bad: Callable[[], tuple[int, str] | None], holds_value: Callable[[str], bool],
                 cut: list[int]) -> Iterator[tuple[int, str]]:
    """A text report's non-empty lines (logger prefix removed, :func:`strip_prefix`), each as a
    reader may take it. A value the reader found bad (``bad()``: its line and the problem) stops
    the read at the next line, naming that value's line. The last line of a file cut off mid-line
    is held back when ``holds_value`` says it carries a value ("MAXIMUM: 28" of "MAXIMUM:
    2878.0000"): its number goes into ``cut`` (the reader says so with :data:`CUT_VALUE`)."""
    for number, raw, ended in iter_ended_lines(path):
        line = strip_prefix(raw)
        if not line:
            continue
        found = bad()
        if found is not None:
            raise ParseError(path, found[1], line=found[0], fix="fix or remove that value")
        if not ended and holds_value(line):
            cut.append(number)
            continue
        yield number, line


def require_content(path: Path) -> None:
    """ParseError when ``path`` holds nothing but whitespace (read in bounded chunks)."""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 16):
            if chunk.strip():
                return
    raise ParseError(path, "the file is empty", fix="point ingest at a results file")


class NotANumber(ValueError):
    """A value that should be a number but is not (e.g. ``12.x``)."""


def to_number(raw: str) -> float | None:
    """A float from report text: ``None``/``N/A``/``[N/A]``/``inf`` → None, ``90.00%`` → 90.0,
    ``1.0526E+15`` and plain ints accepted, a trailing unit word dropped (``7650 MiB``).

    Raises :class:`NotANumber` for anything else.
    """
    text = raw.strip()
    if text.lower() in NULL_WORDS:
        return None
    text = text.rstrip("%").strip()
    parts = text.split()
    if len(parts) == 2 and re.fullmatch(r"[A-Za-z/°%]+", parts[1]):
        text = parts[0]
    try:
        value = float(text)
    except ValueError:
        raise NotANumber(raw) from None
    if not math.isfinite(value):
        return None
    return value


def scaled(value: float, factor: float) -> float:
    """``value * factor`` without binary noise in the last digits (37.02859 s → 37028.59 ms)."""
    return float(f"{value * factor:.12g}")


def normalise_label(label: str) -> str:
    """A report label compared case- and whitespace-insensitively."""
    return re.sub(r"\s+", " ", label.strip().lower())


def iter_json_objects(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, value)`` for each JSON value in ``text`` (``--append-result`` files hold
    several objects one after the other); a broken one is a ParseError naming its line."""
    decoder = json.JSONDecoder()
    pos = 0
    end = len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            return
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ParseError(path, f"is not valid JSON ({exc.msg}, column {exc.colno})",
                             line=exc.lineno, fix="re-export the file; a truncated copy cannot be read"
                             ) from None
        except RecursionError:
            raise ParseError(path, "JSON nested too deeply", line=line, fix="check the file") from None
        yield line, value
