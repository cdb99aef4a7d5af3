"""Independent pieces of a build, spread over forked processes.

A cold build at 10 000 runs spends most of its time in work that splits into independent
pieces, on one core: filling and writing a thousand pages, MkDocs' Markdown conversion and
building of them, the publish scan's pass over thousands of files. :func:`fork_map` and :func:`two_phase`
run such pieces in worker processes forked from the build, so each worker starts with
everything already loaded (the dataset, the analysis, the MkDocs config) and only the results
travel back, in order; a worker killed (by the OOM killer, say) is a one-line error, not a
hang. :class:`Background` runs one piece beside the build's own work from its start: publishing
the run files (file system calls and zlib on a few threads, then their scan) while the build
loads, analyses, renders and runs the builder, which leave a CPU idle much of the time.

How many workers: ``SPARKREPORT_JOBS`` when set (``1``: none, everything in the build's own
process), else the number of CPUs this process may use. Workers are forked, so this is done
only on Linux; elsewhere, with one CPU, or for a handful of pieces, everything runs in the
build's own process, with the same result (tests compare both byte for byte).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from sparkreport.errors import BuildError

JOBS_ENV = "SPARKREPORT_JOBS"
T = TypeVar("T")

def jobs() -> int:
    """The workers a build may use: ``SPARKREPORT_JOBS``, else the CPUs this process may run on."""
    value = os.environ.get(JOBS_ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise BuildError(f"{JOBS_ENV}={value!r}: must be a whole number of at least 1 — "
                             f"unset it to use every CPU, or set 1 to work in one process")
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    """Workers are forked; only where fork is the platform's own (Linux)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


#: The nice value :func:`behind` runs its work at (the lowest priority).
BEHIND_NICE = 19


def behind(work: Callable[[], object]) -> None:
    """``work()`` run at the lowest CPU priority, this thread waiting for it: in a thread of its
    own (on Linux a nice value is a thread's own, so this thread's is untouched and nothing needs
    the privilege to raise it again), whose exception is raised here. For what a build's process
    does while its builder's processes build (the caches' writes): it takes a CPU only when they
    leave one idle, instead of slowing the build's longest path. An interrupt (Ctrl-C) waits for
    the work to end (a write cut short in its thread would leave its temporary file behind), then
    goes on. With one job, or where a thread's priority cannot be set apart (not Linux), it runs
    here."""
    if jobs() < 2 or not sys.platform.startswith("linux"):
        work()
        return
    failed: list[BaseException] = []

    def run() -> None:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BEHIND_NICE)
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 — raised in the waiting thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="sparkreport-behind", daemon=True)
    thread.start()
    try:
        thread.join()
    except BaseException:  # an interrupt: the work ends first (its writes leave no temporary file)
        thread.join()
        raise
    if failed:
        raise failed[0]


def workers_for(count: int, *, per_worker: int = 1) -> int:
    """How many workers ``count`` pieces get: one per ``per_worker`` pieces, at most :func:`jobs`
    (a 64-CPU runner does not fork 17 workers for 17 pages); none (0) when that is fewer than
    two, or without fork."""
    workers = min(jobs(), count // max(1, per_worker))
    return workers if workers >= 2 and can_fork() else 0


#: Signals that stop a build: its own process handles them (and stops its workers).
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (and are raised after) while the block runs: around a fork in the
    build's process, and around the site's swap (:mod:`sparkreport.site.publish`).

    A signal that came during a fork would otherwise land in a fork hook (logging's
    ``_releaseLock``), where Python prints it as "Exception ignored" and the build goes on; in the
    new worker, before :func:`_quiet_signals`, it would raise in multiprocessing's start-up code
    (the worker starts with them blocked and unblocks them once its own handlers are set); during
    the swap it would split its two renames. Blocking them in this thread is not enough where the
    process has other threads (a pool's, the live server's): the kernel hands a signal to one that
    does not block it, and Python runs the handler in this one at once — so the block also runs
    under handlers that only note a signal, raised again once the previous handlers are back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous_handlers: dict[int, Any] = {}
    previous_mask = None
    try:
        # One at a time, undone in `finally`: a signal already pending is raised by the first
        # signal.signal() that runs after it, and must not leave the other handler swapped.
        for stop in STOP_SIGNALS:
            previous_handlers[stop] = signal.signal(stop, lambda signum, _frame: noted.append(signum))
        previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        yield
    finally:
        if previous_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)  # a signal held back is noted now
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
        for noted_signal in dict.fromkeys(noted):
            signal.raise_signal(noted_signal)


def _quiet_signals(parent: int) -> None:
    """In a worker (started under :func:`signals_held`, with SIGINT and SIGTERM blocked): an interrupt is
    the build's process to handle (it stops the workers), and a stop signal ends the worker at
    once (not through the build's own handlers). The worker dies with the build's process
    ``parent`` (SIGKILL on its death, Linux's ``PR_SET_PDEATHSIG``): a build killed by a signal
    it does not catch leaves no worker behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before the line above: nobody waits for this worker
        os._exit(1)


def fork_map(task: Callable[[int], T], count: int, workers: int) -> list[T]:
    """``[task(0), …, task(count - 1)]``, computed in ``workers`` forked processes that take the
    next task as each finishes its last (:class:`Claims`: one long task does not leave the other
    workers idle behind it), in this process when ``workers`` is below 2. The first failing task's
    exception (by index, as in one process) is raised here; a killed worker is named rather than
    waited for (:func:`two_phase`)."""
    if workers < 2 or count < 2:
        return [task(index) for index in range(count)]
    workers = min(workers, count)
    claims = Claims(range(count), workers)

    def share(worker: int) -> list[tuple[int, Any, BaseException | None]]:
        done: list[tuple[int, Any, BaseException | None]] = []
        for index in claims.mine(worker):
            try:
                done.append((index, task(index), None))
            except Exception as exc:  # noqa: BLE001 — every task runs; the lowest index's is raised
                done.append((index, None, portable(exc)))
        return done

    shares, _decided, _seconds = two_phase(workers, share, lambda _firsts: None, lambda _worker, _decided: None)
    return [value for _index, value in in_order(entry for part in shares for entry in part)]


def in_order(entries: Iterable[tuple[int, Any, BaseException | None]]) -> list[tuple[int, Any]]:
    """(index, value) of tasks done by several workers, in index order; raises the exception of
    the lowest index that failed (what one process running them in order would have raised)."""
    done = sorted(entries, key=lambda entry: entry[0])
    failed = [exc for _index, _value, exc in done if exc is not None]
    if failed:
        raise failed[0]
    return [(index, value) for index, value, _exc in done]


class Claims:
    """``order`` handed out to ``workers`` forked workers one item at a time, each item to one of
    them: a counter in shared memory, made before the fork. Each worker iterates :meth:`mine`.
    Where no shared counter can be made (no ``/dev/shm``, say), worker ``w`` takes every
    ``workers``-th item from the ``w``-th: the same items, in fixed shares."""

    def __init__(self, order: Sequence[int], workers: int):
        import multiprocessing

        self.order = list(order)
        self.workers = workers
        try:
            self._next: Any = multiprocessing.get_context("fork").Value("q", 0)
        except (OSError, ImportError):  # no POSIX semaphores here
            self._next = None

    def mine(self, worker: int) -> Iterator[int]:
        """The items worker ``worker`` takes, as it asks for them."""
        if self._next is None:
            yield from self.order[worker::self.workers]
            return
        while True:
            with self._next.get_lock():
                position = self._next.value
                self._next.value = position + 1
            if position >= len(self.order):
                return
            yield self.order[position]


class WorkerError(BuildError):
    """A worker stopped without answering (killed, out of memory)."""


def _worker(connection: Any, index: int, first: Callable[[int], Any], second: Callable[[int, Any], Any],
            parent: int, others: list[Any]) -> None:
    _quiet_signals(parent)
    for pipe in others:  # the build's ends of earlier workers' pipes: they must see EOF when it dies
        pipe.close()
    try:
        connection.send(("ok", first(index)))
        between = connection.recv()
        connection.send(("ok", second(index, between)))
    except BaseException as exc:  # noqa: BLE001 — handed to the build's process, raised there
        connection.send(("error", portable(exc)))
    finally:
        connection.close()
        os._exit(0)  # no atexit handlers, no flushing of buffers the build's process owns


def portable(exc: BaseException) -> BaseException:
    """``exc`` when it survives the trip to the build's process (pickled and rebuilt), else a
    BuildError that says what it was."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 — any failure to pickle or to rebuild it
        return BuildError(f"{type(exc).__name__}: {exc}")


def two_phase(count: int, first: Callable[[int], T], decide: Callable[[list[T]], Any],
              second: Callable[[int, Any], Any]) -> tuple[list[T], Any, list[Any]]:
    """Shares ``0 … count - 1`` in one forked worker each, in two steps that keep the worker's
    state: ``first(i)`` in every worker; ``decide(firsts)`` here, with all their results; then
    ``second(i, decided)`` in every worker. Returns (firsts, decided, seconds). The first
    exception (by share) raised in a worker is raised here; the workers are always reaped."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    pipes: list[Any] = []
    processes = []
    answered = False
    try:
        gc.freeze()  # the workers' collector leaves the build's objects (and their pages) alone
        try:
            for index in range(count):
                mine, theirs = context.Pipe()
                # The worker closes the build's ends, its own among them: else, the build gone, a
                # worker writing a large answer would wait forever for a reader (itself).
                process = context.Process(target=_worker, daemon=True,
                                          args=(theirs, index, first, second, os.getpid(), [*pipes, mine]))
                with signals_held():
                    process.start()
                theirs.close()
                pipes.append(mine)
                processes.append(process)
        finally:
            gc.unfreeze()
        firsts = [_answer(pipe) for pipe in pipes]
        decided = decide(firsts)
        for pipe in pipes:
            pipe.send(decided)
        seconds = [_answer(pipe) for pipe in pipes]
        answered = True
        return firsts, decided, seconds
    finally:
        for pipe in pipes:
            pipe.close()
        # Every worker answered: each is ending, and is reaped later (set_aside). Else (a worker's
        # error, Ctrl-C, SIGTERM here) their work is not wanted, and a worker ignores SIGINT: it is
        # stopped now, not waited for.
        if answered:
            set_aside(processes)
        else:
            _reap(processes, wait=0)


#: Workers that answered and are ending (:func:`set_aside`), each with the process that forked
#: it (a forked process inherits the list, not the children), reaped as they are found ended.
_ENDING: list[tuple[int, Any]] = []


def set_aside(processes: Iterable[Any]) -> None:
    """Workers that answered their last, left to end on their own instead of waited for: a
    worker forked from a build's process of 300 MB takes 5–10 ms to end, which the fill's two
    spent on the build's path, one after the other. Each is reaped once it has ended (by the next
    call here; and by multiprocessing, which reaps its ended children when it starts another
    and waits for any left when the process exits)."""
    here = os.getpid()
    _ENDING.extend((here, process) for process in processes)
    # (is_alive reaps one that ended)
    _ENDING[:] = [(owner, process) for owner, process in _ENDING if owner == here and process.is_alive()]


def _reap(processes: Iterable[Any], wait: float) -> None:
    """Wait up to ``wait`` seconds for each of ``processes`` to end, then kill those still running."""
    for process in processes:
        if wait:
            process.join(timeout=wait)
        if process.is_alive():
            process.kill()
        process.join()


def _answer(pipe: Any, file: Any = None) -> Any:
    try:
        kind, value = pipe.recv()
    except (EOFError, OSError):
        raise WorkerError("a worker stopped without an answer (killed, or out of memory?) — "
                          f"run the command again, or set {JOBS_ENV}=1 to work in one process") from None
    if kind == "error":
        raise value
    if kind == "file":  # a background task's value, pickled by it into ``file`` (ours, just written)
        import pickle

        file.seek(0)
        return pickle.load(file)  # noqa: S301
    return value


class Background(Generic[T]):
    """``task()`` in one forked process, started at once; :meth:`result` waits for its value (or
    raises what it raised, or :class:`WorkerError` when it was killed). Where no worker may be
    forked (:func:`jobs` is 1, not Linux) the task runs in :meth:`result`, in this process: the
    same value, later. :meth:`cancel` (or leaving the ``with`` block) kills it if it still runs.

    With ``then``, the process goes on once it has handed :meth:`result` the task's value: it
    runs ``then(value)``, whose value :meth:`then_result` waits for — a second step that the
    first one's answer starts at once in the same process, whenever this one reads that answer
    (in this process, without a fork: in :meth:`then_result`)."""

    def __init__(self, task: Callable[[], T], then: Callable[[T], Any] | None = None):
        self._task: Callable[[], T] | None = task
        self._then = then
        self._value: Any = None
        self._pipe: Any = None
        self._file: Any = None
        self._then_file: Any = None
        self._process: Any = None
        self._answered = False  # (its value read: the process is ending)
        self._in_process = True  # (False once forked: then_result never runs ``then`` here)
        if jobs() < 2 or not can_fork():
            return
        import multiprocessing
        import tempfile

        context = multiprocessing.get_context("fork")
        mine, theirs = context.Pipe()
        # The value's file, made before the fork and without a name (unlinked at once): the child
        # writes it, this process reads it, and a kill of either at any moment leaves nothing.
        self._file = tempfile.TemporaryFile(prefix=".sparkreport-background.")  # noqa: SIM115 (closed in cancel)
        if then is not None:  # (the second value's own: the first is read while the second is written)
            self._then_file = tempfile.TemporaryFile(prefix=".sparkreport-background.")  # noqa: SIM115
        gc.freeze()  # the child's collector leaves the build's objects (and their pages) alone
        try:
            # Not a daemon, so that a task may fork workers of its own; it never outlives the
            # build (PR_SET_PDEATHSIG, and cancel() when the build leaves the block).
            self._process = context.Process(target=_background, args=(theirs, task, os.getpid(), self._file, mine,
                                                                       then, self._then_file))
            with signals_held():
                self._process.start()
        finally:
            gc.unfreeze()
        theirs.close()
        self._pipe = mine
        self._task = None
        self._in_process = False

    @property
    def forked(self) -> bool:
        """Whether the task runs in its own process (else :meth:`result` runs it here)."""
        return self._process is not None

    def ready(self) -> bool:
        """Whether :meth:`result` would return (or raise) at once: the forked task has answered."""
        return self._pipe is not None and self._pipe.poll()

    def result(self) -> T:
        if self._task is not None:
            task, self._task = self._task, None
            self._value = task()
            return self._value
        try:
            value = _answer(self._pipe, self._file)
        except BaseException:  # its error, a killed task, Ctrl-C: the task is stopped, not waited for
            self.cancel()
            raise
        if self._then is None:
            # It answered: it is ending. Its pipe and file are closed now; the process is reaped
            # when the task is done with (cancel, leaving the block) instead of waited for here:
            # a process of 150 MB takes 5–10 ms to end (the builder's, on the build's path).
            self._answered = True
            self._close()
        return value

    def then_result(self) -> Any:
        """``then(value)``'s value (after :meth:`result`), or what it raised."""
        assert self._then is not None
        if self._in_process:
            then, self._then = self._then, None
            return then(self._value)
        if self._pipe is None:
            raise WorkerError("a build worker was stopped before it answered — build again")
        try:
            value = _answer(self._pipe, self._then_file)
        except BaseException:
            self.cancel()
            raise
        self.cancel(wait=5)
        return value

    def cancel(self, wait: float = 0) -> None:
        """Stop the task (given ``wait`` seconds to end by itself first; a task that answered is
        ending, and is waited for)."""
        self._task = None
        self._close()
        if self._process is not None:
            _reap([self._process], 5 if self._answered else wait)
            self._process = None

    def _close(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        if self._file is not None:
            self._file.close()  # nameless: closing it is all there is to remove
            self._file = None
        if self._then_file is not None:
            self._then_file.close()
            self._then_file = None

    def __enter__(self) -> Background[T]:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.cancel()


A = TypeVar("A")

#: What :meth:`Standby.wake` sends: the task may prepare now.
_WAKE = "wake"


class Standby(Generic[A, T]):
    """``task(argument)`` in a process forked now that waits for its argument: :meth:`wake` lets
    it run ``prepare()`` first (imports, a configuration read: what ``task`` would otherwise do
    on the build's critical path, done on a CPU the build leaves idle), :meth:`run` hands it the
    argument and waits for ``task``'s value (:class:`Background`'s, with its errors, its kill on
    the way out). ``prepare`` only warms the process up: what it raises is ignored, and ``task``
    does the work either way. Where no worker may be forked, :meth:`run` calls ``task`` here
    and :meth:`wake` does nothing."""

    def __init__(self, prepare: Callable[[], object], task: Callable[[A], T]):
        self._task = task
        self._writer: Any = None
        self._woken = False
        self._background: Background[T] | None = None
        if jobs() < 2 or not can_fork():
            return
        import multiprocessing

        reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
        self._background = Background(functools.partial(_standing_by, prepare, task, reader, writer))
        reader.close()
        self._writer = writer

    def wake(self) -> None:
        """Let it prepare (once; a no-op once :meth:`run` was called, or in this process)."""
        if self._writer is not None and not self._woken:
            self._woken = True
            with contextlib.suppress(OSError):  # it is gone: run() says so, as a WorkerError
                self._writer.send(_WAKE)

    def run(self, argument: A, meanwhile: Callable[[], object] | None = None) -> T:
        """``task(argument)``'s value; ``meanwhile()`` is called while the task runs (in this
        process: before it)."""
        if self._background is None:
            if meanwhile is not None:
                meanwhile()
            return self._task(argument)
        writer, self._writer = self._writer, None
        with contextlib.suppress(OSError):  # it is gone (killed, out of memory): result() says so
            writer.send(argument)
        writer.close()
        if meanwhile is not None:
            meanwhile()
        return self._background.result()

    def cancel(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._background is not None:
            self._background.cancel()

    def __enter__(self) -> Standby[A, T]:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.cancel()


def _standing_by(prepare: Callable[[], object], task: Callable[[Any], Any], reader: Any, writer: Any) -> Any:
    """:class:`Standby`'s process: ``prepare()`` when woken, then ``task`` of the argument (an
    EOF, the build gone or cancelled, ends it with an error nobody reads)."""
    writer.close()  # the build's end: when the build closes its own, recv() sees EOF
    argument = reader.recv()
    if isinstance(argument, str) and argument == _WAKE:
        with contextlib.suppress(Exception):
            prepare()
        argument = reader.recv()
    reader.close()
    return task(argument)


def _background(connection: Any, task: Callable[[], Any], parent: int, file: Any, builds_end: Any,
                then: Callable[[Any], Any] | None = None, then_file: Any = None) -> None:
    _quiet_signals(parent)
    builds_end.close()  # when the build is gone, a send here fails instead of waiting for a reader
    try:
        # Each value goes through a file, so that this process goes on (or ends, and frees its
        # memory) as soon as it is done instead of waiting, in send(), for the build to read a pipe.
        import pickle

        value = task()
        pickle.dump(value, file, protocol=pickle.HIGHEST_PROTOCOL)
        file.flush()
        connection.send(("file", None))
        if then is not None:
            pickle.dump(then(value), then_file, protocol=pickle.HIGHEST_PROTOCOL)
            then_file.flush()
            connection.send(("file", None))
    except BaseException as exc:  # noqa: BLE001 — handed to the build's process, raised there
        connection.send(("error", portable(exc)))
    finally:
        connection.close()
        os._exit(0)


def split(items: Sequence[T], pieces: int) -> list[Sequence[T]]:
    """``items`` in ``pieces`` contiguous runs of nearly equal length (none empty)."""
    pieces = max(1, min(pieces, len(items)))
    size, extra = divmod(len(items), pieces)
    out: list[Sequence[T]] = []
    start = 0
    for index in range(pieces):
        end = start + size + (1 if index < extra else 0)
        out.append(items[start:end])
        start = end
    return out
