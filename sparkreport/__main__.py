"""``python -m sparkreport`` and the ``sparkreport`` command: the command line, with Ctrl-C quiet
from the first moment."""

from __future__ import annotations

import os
import signal
import sys


def _interrupted(signum: int, _frame: object) -> None:
    """Ctrl-C while the command line is still being imported: nothing has started, so nothing is
    left to undo — one line and the status a shell gives a process the signal ended, not the
    traceback of an import."""
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def quiet_interrupts() -> bool:
    """Until the command line is imported (click and the command's module, ~30 ms), Ctrl-C ends the
    process with one line; SIGINT left ignored (``nohup``, a background job) stays ignored.
    Returns whether the handler was set (then :func:`run` puts Python's own back)."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _interrupted)
    return True


def run() -> None:
    """The ``sparkreport`` console script: :func:`sparkreport.cli.entry`, imported under
    :func:`quiet_interrupts`. From there on the command line's own handling says
    "interrupted — …" and cleans up."""
    quiet = quiet_interrupts()
    from sparkreport.cli import entry

    if quiet:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    entry()


if __name__ == "__main__":
    run()
