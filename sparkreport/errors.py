"""The project's error types.

Every error a user can meet is one line: what is wrong, where (file and line when there is one)
and what to do about it. The hierarchy is rooted in ``click.ClickException`` so the CLI prints
the message and exits 1 without a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


class SparkreportError(click.ClickException):
    """Base of every error sparkreport reports to a user (exit code 1)."""

    exit_code = 1

    def format_message(self) -> str:
        return self.message


class InputError(SparkreportError):
    """A file the user gave us is broken: names the file, the line when known, and the fix."""

    def __init__(self, path: str | Path, problem: str, *, line: int | None = None, fix: str = ""):
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.fix = fix
        where = f"{self.path}:{line}" if line is not None else self.path
        text = f"{where}: {problem}"
        if fix:
            text += f" — {fix}"
        super().__init__(text)

    def format_message(self) -> str:
        # One line whatever the path or a value quoted in the problem holds (a YAML key may be "\n").
        return self.message.replace("\r", "\\r").replace("\n", "\\n")

    def __reduce__(self) -> tuple[Any, ...]:
        """Picklable (parsing in worker processes, Ray tasks) despite the keyword-only fields."""
        return _restore_input_error, (type(self), self.path, self.problem, self.line, self.fix)


def _restore_input_error(cls: type[InputError], path: str, problem: str, line: int | None, fix: str) -> InputError:
    return cls(path, problem, line=line, fix=fix)


class ParseError(InputError):
    """Raised by parsers; the only exception type allowed to leave a parser."""


class SchemaError(InputError):
    """A run.json that cannot be read (wrong shape, from the future, …)."""

    #: The run.json field at fault (``hardware.memory_pool_gib``), when one is.
    field: str | None = None


class ConfigError(InputError):
    """A broken project configuration file."""


class OptionError(SparkreportError):
    """A command-line option's value that cannot be used — a bad invocation (exit 2), in one line
    naming the option and the fix (click's own usage errors take four lines)."""

    exit_code = 2

    def __init__(self, option: str, problem: str, fix: str = ""):
        super().__init__(f"{option}: {problem}" + (f" — {fix}" if fix else ""))


class DataError(SparkreportError):
    """The data cannot answer the question asked (no runs, unknown metric, …)."""


class BuildError(SparkreportError):
    """The site could not be rendered or built."""


def file_system_error(exc: OSError, where: str) -> BuildError:
    """A file-system failure of a render or a build (disk full, a folder removed under us) as one
    line: the path it names (else ``where``), what the system said, and what to do."""
    return BuildError(f"{exc.filename or where}: {exc.strerror or exc} — check free space and permissions, "
                      "then run it again")
