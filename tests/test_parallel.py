"""Issue 16: a build spreads its independent pieces over forked workers (the pages' fill and
write, MkDocs' Markdown conversion, the publish scan) — and publishes exactly what a build
in one process publishes: the same files byte for byte, the same one-line errors, the same
strict-mode warnings."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from blog_project import blog_project

from sparkreport import parallel
from sparkreport.errors import BuildError
from sparkreport.render import RenderOptions
from sparkreport.site import build

REPO = Path(__file__).resolve().parents[1]
POST = ("---\ndate: 2026-02-03\ncategories: [Notes]\n---\n\n# Memory notes\n\n"
        '{{ chart("memory/kv-vs-peak") }}\n\nThe KV cache against the peak.\n')

needs_fork = pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked: Linux only")


def test_fork_map_keeps_order_and_raises_a_workers_error() -> None:
    assert parallel.fork_map(lambda index: index * index, 7, 2) == [0, 1, 4, 9, 16, 25, 36]

    def task(index: int) -> int:
        if index == 3:
            raise BuildError("page 3: cannot render")
        return index

    with pytest.raises(BuildError, match="^page 3: cannot render$"):
        parallel.fork_map(task, 6, 2)

    def killed(index: int) -> int:
        if index == 4:
            os._exit(9)  # as the kernel's OOM killer would end it: no answer, no exception
        return index

    with pytest.raises(parallel.WorkerError, match="a worker stopped without an answer"):
        parallel.fork_map(killed, 6, 2)


@pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked: Linux only")
def test_fork_map_hands_out_tasks_as_workers_finish_and_raises_the_earliest_error() -> None:
    import multiprocessing
    import time

    last_done = multiprocessing.get_context("fork").Event()

    def task(index: int) -> int:
        if index == 0:  # the long task: it ends only once the last task is done
            assert last_done.wait(60)
        if index == 29:
            last_done.set()
        return os.getpid()

    # Handed out as workers finish, the other worker does tasks 1–29 while task 0 runs; in fixed
    # shares task 0's worker would also own every other task after it.
    pids = parallel.fork_map(task, 30, 2)
    assert pids.count(pids[0]) == 1 and len(set(pids)) == 2

    def failing(index: int) -> int:
        if index in (4, 1):
            time.sleep(0.2 if index == 1 else 0)  # the later task fails first; the earlier is raised
            raise BuildError(f"task {index} failed")
        return index

    with pytest.raises(BuildError, match="^task 1 failed$"):
        parallel.fork_map(failing, 8, 2)


def test_claims_hand_each_item_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    claims = parallel.Claims([3, 1, 2, 5], 2)
    assert list(claims.mine(0)) == [3, 1, 2, 5] and list(claims.mine(1)) == []

    import multiprocessing.context

    def no_semaphores(*_args: object, **_kwargs: object) -> None:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(multiprocessing.context.BaseContext, "Value", no_semaphores)
    fixed = parallel.Claims([3, 1, 2, 5], 2)  # no shared counter: fixed shares, every item once
    assert list(fixed.mine(0)) == [3, 2] and list(fixed.mine(1)) == [1, 5]
    assert parallel.fork_map(lambda index: index * 10, 5, 2) == [0, 10, 20, 30, 40]


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5"])
def test_a_bad_jobs_setting_is_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(parallel.JOBS_ENV, value)
    with pytest.raises(BuildError) as caught:
        parallel.jobs()
    assert str(caught.value) == (f"SPARKREPORT_JOBS={value!r}: must be a whole number of at least 1 — "
                                 "unset it to use every CPU, or set 1 to work in one process")


def test_workers_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    assert parallel.workers_for(10_000) == 0  # one job: everything in the build's own process
    monkeypatch.setenv(parallel.JOBS_ENV, "3")
    fork = parallel.can_fork()
    assert parallel.workers_for(1) == 0  # one piece is never forked
    assert parallel.workers_for(15, per_worker=8) == 0  # a worker gets at least per_worker pieces
    assert parallel.workers_for(16, per_worker=8) == (2 if fork else 0)
    assert parallel.workers_for(100, per_worker=8) == (3 if fork else 0)  # at most the jobs allowed
    monkeypatch.setenv(parallel.JOBS_ENV, "64")
    assert parallel.workers_for(17, per_worker=4) == (4 if fork else 0)  # not 17 forks for 17 pages
    assert parallel.split(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]


@needs_fork
def test_workers_that_answered_are_reaped_after_they_end_not_waited_for() -> None:
    """two_phase returns once every worker answered, without waiting for them to end; each is
    reaped once it has (by the next set_aside): no zombie is left."""
    import time

    parallel._ENDING.clear()
    parallel.two_phase(2, lambda index: index, lambda firsts: None, lambda index, _decided: index)
    pids = [process.pid for _owner, process in parallel._ENDING]
    assert len(pids) <= 2
    deadline = time.monotonic() + 10
    while parallel._ENDING and time.monotonic() < deadline:
        time.sleep(0.01)
        parallel.set_aside([])
    assert parallel._ENDING == []
    for pid in pids:
        with pytest.raises(ChildProcessError):  # reaped: not a child left to wait for
            os.waitpid(pid, os.WNOHANG)


@needs_fork
def test_two_phase_keeps_each_workers_state_and_reports_a_dead_worker() -> None:
    state: dict[int, int] = {}

    def first(index: int) -> int:
        state[index] = index * 10  # only in this worker's memory
        return index

    def second(index: int, total: int) -> int:
        return state[index] + total

    firsts, decided, seconds = parallel.two_phase(3, first, sum, second)
    assert (firsts, decided, seconds) == ([0, 1, 2], 3, [3, 13, 23])
    assert state == {}

    def dies(index: int) -> int:
        if index == 1:
            os._exit(3)
        return index

    with pytest.raises(parallel.WorkerError, match="a worker stopped without an answer"):
        parallel.two_phase(2, dies, sum, second)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped store with a post drawing a page's chart, a hand-written page, and every
    threshold at 1, so the small store's pages, conversions and scan all go to workers."""
    from sparkreport.render import core
    from sparkreport.site import parallel_pages, scan

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    monkeypatch.setattr(core, "PAGES_PER_WORKER", 1)
    monkeypatch.setattr(parallel_pages, "PAGES_PER_WORKER", 1)
    monkeypatch.setattr(parallel_pages, "BUILD_PAGES_PER_WORKER", 1)
    monkeypatch.setattr(scan, "FILES_PER_WORKER", 1)
    return blog_project(tmp_path / "project", REPO / "runs", ("memory.md", POST))


def built(root: Path, jobs: int, monkeypatch: pytest.MonkeyPatch, name: str) -> dict[str, bytes]:
    """A cold build (no build folder) with ``jobs``; the site's files."""
    monkeypatch.setenv(parallel.JOBS_ENV, str(jobs))
    shutil.rmtree(root / "build", ignore_errors=True)
    result = build(RenderOptions(runs_dir=root / "runs", project_root=root), root / name)
    assert result.published["copied"] > 0
    return {p.relative_to(result.site_dir).as_posix(): p.read_bytes()
            for p in sorted(result.site_dir.rglob("*")) if p.is_file()}


def test_pages_go_to_the_workers_longest_first_by_what_they_took_when_last_written() -> None:
    """Pages never measured first (those that read every run, then by the runs they read), then
    the measured ones by their last fill and write, longest first; ties keep the plan's order."""
    from sparkreport.render.core import _weight
    from sparkreport.render.pages import PageDoc

    docs = [PageDoc("short.md", "", "t", inputs=None), PageDoc("model.md", "", "t", inputs=["r1"]),
            PageDoc("new.md", "", "t", inputs=["r1", "r2"]), PageDoc("every.md", "", "t", inputs=None),
            PageDoc("zero.md", "", "t", inputs=["r1"]), PageDoc("tie.md", "", "t", inputs=None)]
    last = {"short.md": 0.02, "model.md": 0.1, "zero.md": 0.0, "tie.md": 0.02, "gone.md": 1.0}
    order = [docs[i].path for i in sorted(range(len(docs)), key=lambda i: _weight(docs[i], last))]
    assert order == ["every.md", "new.md", "zero.md", "model.md", "short.md", "tie.md"]
    # Nothing measured (a cold build): the plan's order by the runs each page reads, as before.
    assert [docs[i].path for i in sorted(range(len(docs)), key=lambda i: _weight(docs[i]))] == \
        ["short.md", "every.md", "tie.md", "new.md", "model.md", "zero.md"]


@needs_fork
def test_the_page_cache_keeps_what_each_page_took(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each page filled in a worker, or in the build's own process, is kept with the seconds its
    fill and write took, which the next render orders the workers' pages by."""
    import json

    from sparkreport.render.pagecache import PAGES_FILE

    for jobs in (2, 1):
        built(project, jobs, monkeypatch, f"site-{jobs}")
        pages = json.loads((project / "build" / "cache" / PAGES_FILE).read_text(encoding="utf-8"))["pages"]
        assert len(pages) > 10 and all(entry["seconds"] > 0 for entry in pages.values()), jobs


@needs_fork
@pytest.mark.parametrize("static", ["all", "posts", "auto", "auto-10"])
def test_a_build_in_workers_publishes_what_one_process_does(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                            static: str) -> None:
    """"all" and "posts" settle the SVG decision before any page (each worker writes a page as it
    fills it), "auto" only once every page is filled (61 charts: all written in the second phase),
    "auto" with a limit of 10 part way (the pages filled before a worker saw 11 charts wait)."""
    from sparkreport import config as config_module

    if static == "auto-10":
        monkeypatch.setattr(config_module, "STATIC_CHART_LIMIT", 10)
    config = (REPO / "sparkreport.yml").read_text(encoding="utf-8") if (REPO / "sparkreport.yml").is_file() else ""
    (project / "sparkreport.yml").write_text(config + f"\nstatic_charts: {static.split('-')[0]}\n",
                                             encoding="utf-8")
    # Counted in a file: MkDocs converts the pages in the build's standby process (Standby).
    log = project.parent / "calls.log"
    two_phase, fork_map = parallel.two_phase, parallel.fork_map

    def counting_two_phase(*args: object, **kwargs: object) -> object:
        with log.open("a", encoding="utf-8") as out:
            out.write("pages\n")
        return two_phase(*args, **kwargs)  # type: ignore[arg-type]

    def counting_fork_map(*args: object, **kwargs: object) -> object:
        with log.open("a", encoding="utf-8") as out:
            out.write("forked\n")
        return fork_map(*args, **kwargs)  # type: ignore[arg-type]

    one = built(project, 1, monkeypatch, "site-one")
    monkeypatch.setattr(parallel, "two_phase", counting_two_phase)
    monkeypatch.setattr(parallel, "fork_map", counting_fork_map)
    monkeypatch.setattr("sparkreport.site.scan.fork_map", counting_fork_map)
    two = built(project, 2, monkeypatch, "site-two")
    calls = log.read_text(encoding="utf-8").split()
    # The pages' fill and write, MkDocs' conversion and page building and the publish scan all went
    # to workers.
    # (fork_map runs on two_phase: the render's own call and one under each fork_map)
    assert calls.count("forked") == 3 and calls.count("pages") == 4
    assert sorted(one) == sorted(two)
    assert [name for name in one if one[name] != two[name]] == []
    svgs = [name for name in two if name.endswith(".svg") and "/charts/" in name]
    assert svgs and ("memory/charts/kv-vs-peak.svg" in svgs)  # drawn from the spec a worker wrote
    if static in ("posts", "auto-10"):
        assert svgs == ["memory/charts/kv-vs-peak.svg"]  # only the post's chart
    else:
        assert len(svgs) > 40


@needs_fork
def test_pages_indexed_in_the_conversion_workers_give_the_same_search_index(project: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages converted in workers but built in the build's process (too few to build ahead): the
    search plugin's parsing of each such page happened in the worker that converted it, and the
    site, its search index included, is the one-process build's. A page changed after it was
    indexed (here by a plugin event) is indexed again in the build's process."""
    from material.plugins.search import plugin as search

    from sparkreport.site import parallel_pages
    from sparkreport.site.builders import MkDocsBuilder

    monkeypatch.setattr(parallel_pages, "BUILD_PAGES_PER_WORKER", 10**6)
    # MkDocs in this process (not in the build's standby process), so that its own parsing is counted here
    monkeypatch.setattr(MkDocsBuilder, "standby", lambda _self, _previous: None)
    fed: list[int] = []
    feed = search.Parser.feed
    parent = os.getpid()

    def counted(self: object, data: str) -> None:
        if os.getpid() == parent:
            fed.append(len(data))
        feed(self, data)  # type: ignore[arg-type]

    monkeypatch.setattr(search.Parser, "feed", counted)
    one = built(project, 1, monkeypatch, "site-one")
    in_one = len(fed)
    fed.clear()
    two = built(project, 2, monkeypatch, "site-two")
    assert one == two
    blog = [name for name in two if name.startswith("blog/") and name.endswith("index.html")]
    assert in_one > len(blog) + 10 and 0 < len(fed) <= len(blog)  # only the blog's pages, not converted ahead
    in_two = len(fed)

    original = parallel_pages._apply

    def changed(page: object, converted: object, config: object, files: object) -> None:
        original(page, converted, config, files)  # type: ignore[arg-type]
        if page.file.src_uri == "methodology/index.md":  # type: ignore[attr-defined]
            page.content += "<p>added after indexing</p>"  # type: ignore[attr-defined]

    monkeypatch.setattr(parallel_pages, "_apply", changed)
    fed.clear()
    three = built(project, 2, monkeypatch, "site-three")
    assert len(fed) == in_two + 1
    assert "added after indexing" in three["search/search_index.json"].decode()


def the_same_error_either_way(project: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The one-line error of a build in one process, which a build in two workers repeats."""
    messages = []
    for jobs in (1, 2):
        with pytest.raises(BuildError) as caught:
            built(project, jobs, monkeypatch, f"site-{jobs}")
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    return messages[0]


@needs_fork
def test_errors_in_workers_read_as_in_one_process(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page that cannot be rendered, and in strict mode a broken link MkDocs finds while a
    worker converts a page: the same one-line error, whatever the number of jobs."""
    (project / "templates").mkdir()
    (project / "templates" / "results.md").write_text("# Results\n\n{{ nope() }}\n", encoding="utf-8")
    assert the_same_error_either_way(project, monkeypatch).startswith(
        f"{project / 'templates' / 'results.md'}:3: cannot render results/")  # the template's file and line
    shutil.rmtree(project / "templates")
    (project / "docs" / "notes.md").write_text("# Notes\n\nSee [the missing page](missing.md).\n", encoding="utf-8")
    message = the_same_error_either_way(project, monkeypatch)
    assert "missing.md" in message and "\n" not in message


@needs_fork
def test_the_publish_scan_in_workers_finds_what_one_process_finds(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    from sparkreport.site import scan

    planted = ["postgres://bench:Hunter2Pass99@db.internal:5432/results",
               "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4", "Authorization: Bearer abcDEF123456ghiJKL789"]
    site = tmp_path / "site"
    for index in range(40):
        folder = site / "runs" / f"r{index:02d}"
        folder.mkdir(parents=True)
        text = f"line one\nrun {index}: {planted[index % 3]}\n" if index % 4 == 0 else f"tokens/s: {index}\n"
        (folder / "run.json").write_text(text, encoding="utf-8")
        (folder / "samples.csv.gz").write_bytes(gzip.compress(text.encode()))
    monkeypatch.setattr(scan, "FILES_PER_WORKER", 1)
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    one = scan.scan_site(site)
    monkeypatch.setenv(parallel.JOBS_ENV, "2")
    assert scan.scan_site(site) == one
    assert len(one) == 20 and [f.path for f in one] == sorted(f.path for f in one)  # in path order


class _Awkward(Exception):
    def __init__(self, what: str, where: int) -> None:  # rebuilt from args alone, it would fail
        super().__init__(f"{what} at {where}")


@needs_fork
def test_an_exception_that_cannot_travel_is_named() -> None:
    def first(index: int) -> int:
        raise _Awkward("bad page", index)

    with pytest.raises(BuildError, match=r"^_Awkward: bad page at 0$"):
        parallel.two_phase(2, first, sum, lambda index, total: total)


# ---------------------------------------------------------------------------------------------
# Background: one task beside the build; no worker outlives a build killed outright


def test_behind_runs_its_work_at_the_lowest_priority_in_a_thread_and_raises_its_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``behind`` runs the build's writes while MkDocs builds at nice 19, in a thread of its own
    (the calling thread's priority untouched), and raises what the work raised; with one job it
    runs in the calling thread as it is."""
    import threading

    monkeypatch.setenv(parallel.JOBS_ENV, "2")
    seen: list[tuple[bool, int]] = []

    def work() -> None:
        native = threading.get_native_id()
        seen.append((threading.current_thread() is threading.main_thread(),
                     os.getpriority(os.PRIO_PROCESS, native)))

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    parallel.behind(work)
    assert seen == [(False, parallel.BEHIND_NICE)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before

    def failing() -> None:
        raise BuildError("a write failed")

    with pytest.raises(BuildError, match="a write failed"):
        parallel.behind(failing)
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    seen.clear()
    parallel.behind(work)
    assert seen == [(True, before)]


def test_background_returns_raises_and_runs_in_process_without_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    parent = os.getpid()
    with parallel.Background(lambda: (os.getpid(), 42)) as pending:
        process = pending._process
        pid, value = pending.result()
        # answered: its pipe and file closed, its process reaped when the block ends, not waited for here
        assert pending._pipe is None and pending._file is None and pending._process is process
    assert value == 42 and (pid != parent) == parallel.can_fork()
    assert pending._process is None and (process is None or not process.is_alive())

    def fails() -> int:
        raise BuildError("runs/x/run.json: cannot publish")

    with pytest.raises(BuildError, match=r"^runs/x/run.json: cannot publish$"), parallel.Background(fails) as pending:
        pending.result()
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    with parallel.Background(lambda: os.getpid()) as pending:
        assert pending.result() == parent  # no fork: the task runs in result(), here

    ran: list[int] = []
    with parallel.Background(lambda: ran.append(1)):
        pass  # never asked for: never run
    assert ran == []


def test_background_then_goes_on_in_the_same_process_once_the_task_has_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Background(task, then=…): the task's value first (result()), then, in the same forked
    process, ``then(value)`` (then_result()) — started as soon as the task answered, before this
    process reads that answer; what ``then`` raises is raised by then_result(); a task that
    raises runs no ``then``; without workers both run here, in order, when asked for."""
    parent = os.getpid()
    went_on = tmp_path / "went-on"

    def then(value: tuple[int, int]) -> tuple[int, int]:
        went_on.write_text(str(os.getpid()), encoding="utf-8")
        return os.getpid(), value[1] + 1

    with parallel.Background(lambda: (os.getpid(), 41), then=then) as pending:
        if parallel.can_fork():
            deadline = time.monotonic() + 30
            while not went_on.exists() and time.monotonic() < deadline:  # not waiting for result()
                time.sleep(0.01)
            assert went_on.exists()
        pid, value = pending.result()
        assert value == 41 and pending.then_result() == (pid, 42)
    assert (pid != parent) == parallel.can_fork()

    def fails(_value: object) -> None:
        raise BuildError("runs/x/run.json: cannot publish")

    with parallel.Background(lambda: 1, then=fails) as pending:
        assert pending.result() == 1
        with pytest.raises(BuildError, match=r"^runs/x/run.json: cannot publish$"):
            pending.then_result()
    went_on.unlink()

    def broken() -> tuple[int, int]:
        raise BuildError("runs: cannot walk")

    with pytest.raises(BuildError, match="^runs: cannot walk$"), parallel.Background(broken, then=then) as pending:
        pending.result()
    assert not went_on.exists()
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    with parallel.Background(lambda: (os.getpid(), 1), then=then) as pending:
        assert not went_on.exists()  # nothing runs before it is asked for
        assert pending.result() == (parent, 1) and pending.then_result() == (parent, 2)


def test_standby_prepares_when_woken_then_runs_its_task_on_the_argument(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Standby: forked at once, ``prepare`` when woken (what it raises is ignored: it only warms
    the process up), then the task of the argument, in that process; the task's error is raised
    here; without workers, the task runs in run(), here, and prepare never does."""
    parent = os.getpid()
    marks = tmp_path / "prepared"

    def prepare() -> None:
        marks.write_text(str(os.getpid()), encoding="utf-8")

    meanwhile: list[int] = []
    with parallel.Standby(prepare, lambda argument: (os.getpid(), argument * 2)) as standby:
        standby.wake()
        standby.wake()  # once is enough
        pid, value = standby.run(21, meanwhile=lambda: meanwhile.append(os.getpid()))
    assert value == 42 and (pid != parent) == parallel.can_fork()
    assert meanwhile == [parent]  # called here, once, while the task ran
    if parallel.can_fork():
        assert marks.read_text(encoding="utf-8") == str(pid)  # prepared in the task's process

    def broken() -> None:
        raise RuntimeError("a plugin that will not import")

    with parallel.Standby(broken, lambda argument: argument + 1) as standby:
        standby.wake()
        assert standby.run(1) == 2  # a failed warm-up is no failure

    def fails(_argument: object) -> None:
        raise BuildError("build/mkdocs.yml: mkdocs build failed")

    with pytest.raises(BuildError, match=r"^build/mkdocs.yml: mkdocs build failed$"), \
            parallel.Standby(prepare, fails) as standby:
        standby.run(None)  # never woken: the task runs without the warm-up
    marks.unlink(missing_ok=True)
    monkeypatch.setenv(parallel.JOBS_ENV, "1")
    order: list[str] = []
    with parallel.Standby(prepare, lambda _argument: order.append("task") or os.getpid()) as standby:
        standby.wake()
        assert standby.run(None, meanwhile=lambda: order.append("meanwhile")) == parent and not marks.exists()
    assert order == ["meanwhile", "task"]
    ran: list[int] = []
    with parallel.Standby(prepare, ran.append):
        pass  # never run: the process is stopped on the way out
    assert ran == []


@needs_fork
def test_a_standby_killed_before_its_argument_is_a_worker_error() -> None:
    """Its process killed (out of memory, say) before run(): a one-line WorkerError, not a
    broken pipe."""
    import signal
    import time

    with parallel.Standby(lambda: None, lambda argument: argument) as standby:
        assert standby._background is not None and standby._background._process is not None
        os.kill(standby._background._process.pid, signal.SIGKILL)
        time.sleep(0.2)
        standby.wake()  # nobody to wake: nothing raised here either
        with pytest.raises(parallel.WorkerError, match="stopped without an answer"):
            standby.run(big := "x" * 1_000_000)
        assert big


_KILLED_BUILD = """
import os, sys, time
from sparkreport import parallel
mode = sys.argv[1]
if mode == "two_phase":
    parallel.two_phase(2, lambda i: os.write(1, f"{os.getpid()}\\n".encode()), lambda firsts: time.sleep(60),
                       lambda i, d: None)
elif mode == "standby":  # woken, it prepares (prints its pid), then waits for an argument never sent
    standby = parallel.Standby(lambda: os.write(1, f"{os.getpid()}\\n".encode()), lambda argument: None)
    standby.wake()
    time.sleep(60)
else:
    pending = parallel.Background(lambda: (os.write(1, f"{os.getpid()}\\n".encode()), time.sleep(60)))
    time.sleep(60)
"""


@needs_fork
@pytest.mark.parametrize("mode", ["two_phase", "background", "standby"])
def test_workers_die_with_a_build_killed_outright(tmp_path: Path, mode: str) -> None:
    """A build killed by a signal it cannot catch (SIGKILL; SIGTERM before its handler is set):
    its workers die with it instead of waiting, forever, for an answer (each also held the
    others' pipes open) — and with them the stdout a CI step reads to its end."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "killed.py"
    script.write_text(_KILLED_BUILD, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), parallel.JOBS_ENV: "2"})
    assert proc.stdout is not None
    workers = [int(proc.stdout.readline()) for _ in range(2 if mode == "two_phase" else 1)]
    proc.send_signal(signal.SIGKILL)
    started = time.monotonic()
    try:
        proc.communicate(timeout=10)  # stdout's EOF: only once every process holding it is gone
    except subprocess.TimeoutExpired:
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        raise

    def gone(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] in "ZX"
        except OSError:
            return True

    while not all(gone(pid) for pid in workers) and time.monotonic() - started < 10:
        time.sleep(0.05)  # SIGKILL was sent: the kernel is tearing them down
    assert all(gone(pid) for pid in workers)


_KILLED_AFTER_THE_VALUE = """
import os, signal, time
from sparkreport import parallel
pending = parallel.Background(lambda: list(range(200_000)))
time.sleep(2)  # the value is written by now, never read: the build is killed outright
os.kill(os.getpid(), signal.SIGKILL)
"""


@needs_fork
def test_a_background_value_travels_through_a_file_that_is_never_left(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The child hands its value over in a file (so it can end before the build reads it); the
    file has no name in the temp folder, so none is left behind: once read, when the value is
    never asked for, or when the build is killed outright after the child wrote it."""
    import subprocess
    import sys
    import tempfile
    import time

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    big = list(range(200_000))  # far more than a pipe holds
    with parallel.Background(lambda: big) as pending:
        assert pending.result() == big
    with parallel.Background(lambda: big):
        time.sleep(2)  # done meanwhile, never asked for
    script = tmp_path / "killed.py"
    script.write_text(_KILLED_AFTER_THE_VALUE, encoding="utf-8")
    killed = subprocess.run([sys.executable, str(script)], check=False, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO), parallel.JOBS_ENV: "2", "TMPDIR": str(tmp_path)})
    assert killed.returncode == -9
    assert [p.name for p in tmp_path.iterdir()] == ["killed.py"]


def test_the_svg_decision_is_settled_only_when_no_more_charts_can_change_it() -> None:
    from sparkreport.config import ProjectConfig
    from sparkreport.render.core import settled

    def static_for(mode: str):  # type: ignore[no-untyped-def]
        config = ProjectConfig(static_charts=mode)
        return config.static_fallbacks

    assert [settled(static_for("auto"), n) for n in (0, 100, 101)] == [None, None, False]
    assert [settled(static_for("all"), n) for n in (0, 10_000)] == [True, True]
    assert [settled(static_for("posts"), n) for n in (0, 10_000)] == [False, False]


def test_a_signal_pending_as_signals_are_held_leaves_every_handler_as_it_was(monkeypatch) -> None:
    """A signal that came just before the block is raised by the first ``signal.signal`` that
    runs after it (CPython runs pending handlers before it changes one): the handler swapped
    before it is put back, else a later Ctrl-C would only be noted, and never raised."""
    import signal

    before = {signum: signal.getsignal(signum) for signum in parallel.STOP_SIGNALS}
    real = signal.signal
    calls = []

    def pending_after_first(signum, handler):
        calls.append(signum)
        if len(calls) == 2:  # the pending SIGINT's handler runs here, as CPython's would
            raise KeyboardInterrupt
        return real(signum, handler)

    monkeypatch.setattr(signal, "signal", pending_after_first)
    with pytest.raises(KeyboardInterrupt), parallel.signals_held():
        pass
    monkeypatch.undo()
    assert {signum: signal.getsignal(signum) for signum in parallel.STOP_SIGNALS} == before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) & parallel.STOP_SIGNALS == set()
