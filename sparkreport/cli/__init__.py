"""The command line: a thin layer that parses options and calls typed functions.

Each stage's commands live in their own module; heavy libraries (pandas, scipy, mkdocs) are
imported inside the commands so ``sparkreport --help`` stays instant and the executor runs
with only its runtime dependencies.
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from sparkreport import __version__

#: module → command names it defines; loaded lazily by the group.
_COMMANDS: dict[str, tuple[str, ...]] = {
    "sparkreport.cli.ingest_cmds": ("ingest", "formats", "metrics"),
    "sparkreport.cli.data_cmds": ("dataset", "stats", "compare", "check"),
    "sparkreport.cli.site_cmds": ("render", "build", "serve"),
    "sparkreport.cli.run_cmds": ("run",),
    "sparkreport.cli.diff_cmds": ("diff",),
    "sparkreport.cli.history_cmds": ("history",),
    "sparkreport.cli.init_cmds": ("init",),
    "sparkreport.cli.scrub_cmds": ("scrub",),
}


#: ``ctx.meta`` key: what a command stopped by a signal left behind, as a clause for
#: :func:`interrupted_line` ("the previous site is unchanged"), asked for once it stopped.
LEFT_BEHIND = "sparkreport.left_behind"


def interrupted_line(ctx: click.Context | None) -> str:
    """The one line a command stopped by Ctrl-C or SIGTERM ends with."""
    left: Callable[[], str] | None = ctx.meta.get(LEFT_BEHIND) if ctx is not None else None
    return f"interrupted — {left()}" if left is not None else "interrupted"


@contextmanager
def _stops_quietly(ctx: click.Context | None) -> Iterator[None]:
    """Ctrl-C or SIGTERM (raised as KeyboardInterrupt, once the clean-up on the way out is done)
    ends the command with :func:`interrupted_line` and status 128 + the signal's number (130,
    143), as a shell reports a process the signal ended — not click's "Aborted!" and 1."""
    from sparkreport.site import publish

    try:
        yield
    except KeyboardInterrupt as exc:
        click.echo(interrupted_line(ctx), err=True)
        signum = signal.SIGTERM if isinstance(exc, publish.Terminated) else signal.SIGINT
        raise SystemExit(128 + signum) from None
    except Exception:
        # Another exception after a stop signal: library code that turned the KeyboardInterrupt
        # into its own error (publish.stops). The signal is what ended the command.
        if not publish.stops:
            raise
        click.echo(interrupted_line(ctx), err=True)
        raise SystemExit(128 + publish.stops[0]) from None


class LazyGroup(click.Group):
    """A group whose commands are imported only when listed or invoked; Ctrl-C or SIGTERM stops
    any of them with one line (:func:`_stops_quietly`)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _stops_quietly(parent):
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _stops_quietly(ctx):
            return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        for commands in _COMMANDS.values():
            names.update(commands)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for module_name, commands in _COMMANDS.items():
            if cmd_name in commands:
                try:
                    module = importlib.import_module(module_name)
                except ModuleNotFoundError as exc:
                    if exc.name and exc.name.startswith("sparkreport"):
                        return None
                    raise click.ClickException(
                        f"`sparkreport {cmd_name}` needs the Python package {exc.name!r} — "
                        f"install it with `pip install sparkreport` (full install)"
                    ) from None
                command = getattr(module, cmd_name.replace("-", "_") + "_command", None)
                if isinstance(command, click.Command):
                    return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sparkreport")
def main() -> None:
    """Turn LLM-inference benchmark runs into a statistically honest results site.

    \b
    Pipeline:  ingest / run  →  runs/  →  dataset  →  stats · compare · check
               →  render (Markdown + charts)  →  build (MkDocs site)

    Once the project was built, the commands that read its runs/ (dataset, stats, compare,
    check, diff, history) go through build/cache: only the runs changed since are read again,
    and the analysis the build made is reused.
    """
    from sparkreport.cache import batch_collector

    batch_collector()


def entry() -> None:
    """The ``sparkreport`` console script (and ``python -m sparkreport``): :func:`main`, then an
    exit that skips tearing the interpreter's heap down object by object — 0.5–0.6 s of every
    build at 10 000 runs (the dataset, the analysis, the pages), bench/README.md, issue 16's tenth
    round. What an ordinary exit does that matters still happens: threads that are not daemons are
    waited for, the exit handlers run (multiprocessing's, logging's, temporary folders'
    finalizers) and stdout and stderr are flushed. An unexpected exception still ends the
    ordinary way, with its traceback."""
    import atexit
    import contextlib
    import os
    import threading

    _stop_signals_raise()
    try:
        main.main(prog_name="sparkreport")
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("message"): printed, status 1, as Python does
            print(exc.code, file=sys.stderr)
            code = 1
    # The command is done and has said so: a signal from now on only sets the status.
    noted: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is not signal.SIG_IGN:  # `nohup`, a shell's background job
            signal.signal(signum, lambda signum, _frame: noted.append(signum))
    # What the interpreter's shutdown does first, in its order: wait for the threads that are not
    # daemons (a thread pool's workers are told to stop first), then the exit handlers.
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`sparkreport metrics | head`)
            stream.flush()
    os._exit(128 + noted[0] if noted and code == 0 else code)


def _stop_signals_raise() -> None:
    """SIGTERM raises :class:`~sparkreport.site.publish.Terminated` (a KeyboardInterrupt) as
    SIGINT raises KeyboardInterrupt, so that either runs the clean-up on the way out (Python's
    default for SIGTERM ends the process without it); both handlers note the signal
    (:data:`~sparkreport.site.publish.stops`), so an interrupt a library turned into another
    exception still ends the command as interrupted. An interrupt raised where Python cannot
    pass it on — a finalizer, a fork hook (logging's ``_releaseLock``) — would be printed as
    "Exception ignored" and lost: it is sent again instead, to land in the command's own code."""
    from sparkreport.site.publish import Terminated, interrupt, terminate

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, terminate)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not when ignored: `nohup`)
        signal.signal(signal.SIGINT, interrupt)
    printed = sys.unraisablehook

    def unraisable(report: Any) -> None:
        if not isinstance(report.exc_value, KeyboardInterrupt):
            printed(report)
            return
        import os
        import threading

        signum = getattr(report.exc_value, "signum", None) or (
            signal.SIGTERM if isinstance(report.exc_value, Terminated) else signal.SIGINT)
        # Sent from another thread a moment later: sent from here, its handler would run here.
        again = threading.Timer(0.05, os.kill, (os.getpid(), signum))
        again.daemon = True
        again.start()

    sys.unraisablehook = unraisable
