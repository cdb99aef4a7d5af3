#!/usr/bin/env python3
"""Benchmarks: ingest, dataset, analysis, render and build at N runs; prints a table of figures.

Each stage runs in its own process; its wall time and peak resident memory (``ru_maxrss`` of
that child, from ``os.wait4``) are reported. Campaigns come from ``bench/synth.py`` and are
kept under the work folder (generated once per N, reused).

    python bench/run.py                         # N = 100, 1000, 10000 (100 runs with 1 h of 10 Hz samples)
    python bench/run.py --runs 100 1000         # a subset
    python bench/run.py --json bench/results.json

Stages (all cold unless named otherwise):

* ``ingest``   — every source into an empty run store (``ingest_paths`` per group);
* ``dataset``  — ``load_dataset`` (read, validate and flatten every run.json);
* ``analysis`` — dataset + ``arm_stats``, ``compare``, ``check`` (what every page reads);
* ``render``   — ``sparkreport render`` into an empty ``build/``;
* ``build``    — ``sparkreport build`` with no ``build/`` and no ``site/`` (render + MkDocs);
* ``rebuild``  — ``sparkreport build`` again, nothing changed;
* ``rebuild1`` — ``sparkreport build`` after one run.json changed;
* ``newrun``   — ``sparkreport build`` after ``sparkreport ingest`` added ONE new run (the ingest
  itself untimed);
* ``post``     — ``sparkreport build`` after the text of one blog post changed (the project gets
  one post with live bindings, ``docs/blog/posts/bench.md``, before its first build);
* ``refuse``   — ``sparkreport build`` refusing bad configuration, three cases (a bad
  sparkreport.yml value, a diff naming a version no run has, a post binding naming a model no
  run has), each with the caches of an earlier build (warm) and without ``build/`` (cold); each
  must exit 1 with its expected one-line error and no traceback, or the bench fails;
* ``gates``    — the CI gates, ``sparkreport history`` and ``sparkreport diff --a
  environment=native --b environment=docker``, after the last build: through the project's build
  cache (``cached``), and reading the store as it is (``as is``: the same sparkreport.yml, from a
  folder that was never built);
* ``mkdocs``   — a bare ``mkdocs build`` (Material) of as many plain pages as ``build`` made.

``--only refuse,newrun`` re-runs just those stages on the stores of an earlier run (an untimed
build first where a stage needs a built site and there is none). The runs that an earlier
bench's ``newrun`` or ``series`` stage ingested are taken out of such a store first
(:func:`drop_added_runs`), and the run.json its ``rebuild1`` stage touched is put back
(:func:`put_back_touched`): every bench measures the store ``synth.py`` generated.

No figure is asserted here: the targets are in bench/README.md, next to the latest figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: This checkout (the folder above bench/): the code every measured command runs (:func:`checkout_env`).
ROOT = HERE.parent
PAGE_LIMIT = 1.5 * 2**20


STAGES = ("ingest", "dataset", "dataset_cached", "analysis", "render", "build", "rebuild", "scan", "rebuild1", "newrun",
          "post", "refuse", "gates", "ci", "mkdocs", "series")
#: Stages run only when named in ``--only`` (minutes each at 10 000 runs).
OPT_IN = {"series"}
#: Stages that need a site built before them (``--only`` builds one, untimed, when there is none).
NEEDS_SITE = {"rebuild", "scan", "rebuild1", "newrun", "post", "refuse", "gates"}
#: The CI gates timed by the ``gates`` stage.
GATES = {"history": ["history"], "diff": ["diff", "--a", "environment=native", "--b", "environment=docker"]}


#: Peak PSS (MiB) of the last :func:`run_child`'s process tree: a build's forked workers share
#: most of their pages with it, which ``ru_maxrss`` (the largest single process) does not show.
#: None when the command ended before the first sample (:data:`PSS_INTERVAL_S`).
LAST_TREE_PSS_MIB: float | None = None
#: Seconds between two PSS samples. Reading ``smaps_rollup`` of a 600 MB process costs ~14 ms
#: of CPU: every 0.2 s over a build's four processes that was a quarter of one CPU taken from the
#: build it measured (cold builds 10–20% slower here than the same build alone). A build's peak
#: lasts seconds (the pages' fill), so one sample a second still finds it.
PSS_INTERVAL_S = 1.0


def _tree_pss_kib(pid: int) -> int:
    """The PSS of ``pid`` and its descendants (a page shared by n of them counts 1/n in each)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack += [int(child) for child in handle.read().split()]
            with open(f"/proc/{current}/smaps_rollup") as handle:
                total += next((int(line.split()[1]) for line in handle if line.startswith("Pss:")), 0)
        except (OSError, ValueError):
            continue  # ended meanwhile
    return total


def checkout_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (else this process's environment) with this checkout first on ``PYTHONPATH``: a
    measured ``python -m sparkreport`` runs the code beside this script, not whatever copy of the
    package is installed (an editable install of another clone, or of a folder since removed,
    would otherwise be measured, or fail, without a word)."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([out["PYTHONPATH"]] if out.get("PYTHONPATH") else [])])
    return out


def run_child(command: list[str], cwd: Path, expect_error: str | None = None,
              env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Run ``command`` (in ``env``, else in :func:`checkout_env`'s); returns (wall seconds, peak
    RSS MiB, CPU seconds of that child and the workers it forked). Fails loudly. Sets
    :data:`LAST_TREE_PSS_MIB` (sampled every :data:`PSS_INTERVAL_S`).

    With ``expect_error``, the command must fail instead: exit 1, one line on stderr that starts
    with ``Error:`` and contains ``expect_error``, and no traceback.
    """
    import threading

    global LAST_TREE_PSS_MIB
    peak = [0]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err,
                                   env=checkout_env() if env is None else env)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(PSS_INTERVAL_S):
                peak[0] = max(peak[0], _tree_pss_kib(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        if os.path.isdir("/proc"):
            sampler.start()
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        LAST_TREE_PSS_MIB = peak[0] / 1024 if peak[0] else None
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if expect_error is None:
        if process.returncode != 0:
            sys.stderr.write((stdout + stderr)[-3000:])
            raise SystemExit(f"{' '.join(command)} failed (exit {process.returncode})")
    else:
        lines = [line for line in stderr.splitlines() if line.strip()]
        if (process.returncode != 1 or len(lines) != 1 or not lines[0].startswith("Error:")
                or expect_error not in lines[0] or "Traceback" in stderr):
            sys.stderr.write(stderr[-3000:])
            raise SystemExit(f"{' '.join(command)} in {cwd}: expected exit 1 and one line "
                             f"'Error: …{expect_error}…', got exit {process.returncode}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss: KiB on Linux


def generate(work: Path, runs: int, sampled: int, hours: float, seed: int) -> Path:
    source = work / f"n{runs}" / "sources"
    marker = source / "manifest.json"
    wanted = {"runs": runs, "sampled": min(sampled, runs), "hours": hours, "seed": seed}
    if marker.exists():
        manifest = json.loads(marker.read_text())
        opts = manifest["options"]
        if {"runs": manifest["runs"], "sampled": manifest["sampled"], "hours": opts["sample_hours"],
                "seed": opts["seed"]} == wanted:
            return source
        shutil.rmtree(source)
    print(f"generating {runs} runs ({min(sampled, runs)} sampled) …", file=sys.stderr)
    subprocess.run([sys.executable, str(HERE / "synth.py"), str(source), "--runs", str(runs),
                    "--sampled", str(min(sampled, runs)), "--sample-hours", str(hours), "--seed", str(seed)],
                   check=True)
    return source


def folder_stats(folder: Path, suffix: str) -> tuple[int, int, str]:
    """(count, largest size in bytes, largest file) of files with ``suffix`` under ``folder``."""
    count, largest, name = 0, 0, ""
    for path in folder.rglob(f"*{suffix}"):
        count += 1
        size = path.stat().st_size
        if size > largest:
            largest, name = size, str(path.relative_to(folder))
    return count, largest, name


def plain_site(folder: Path, pages: int) -> Path:
    """A bare MkDocs Material project of ``pages`` plain Markdown pages (a table and text each)."""
    docs = folder / "docs"
    if folder.exists():
        shutil.rmtree(folder)
    docs.mkdir(parents=True)
    for i in range(pages):
        body = [f"# Page {i}", "", "Some text about the numbers on this page. " * 5, "",
                "| a | b | c |", "|---|---|---|"]
        body += [f"| {i} | {j} | {i * j} |" for j in range(40)]
        (docs / ("index.md" if i == 0 else f"page-{i:05d}.md")).write_text("\n".join(body) + "\n")
    (folder / "mkdocs.yml").write_text(
        "site_name: plain\ntheme:\n  name: material\n  font: false\n  features: [navigation.sections]\n"
        "markdown_extensions: [tables, {toc: {permalink: true}}]\n")
    return folder


#: The post every bench project gets (its bindings name the first run's arm; see ``write_post``).
POST = """---
date: 2026-01-01
---

# Bench post

The first model ran at {{{{ value("output_throughput_tok_s", campaign="{campaign}", model="{model}",
environment="{environment}") }}}} in {campaign}.
{{{{ table("arms", metric="output_throughput_tok_s", campaign="{campaign}") }}}}
"""

#: The refusal cases: (name, how the project is broken, the text its one-line error must hold).
REFUSALS = ("config", "diff", "post")


def first_arm(runs: Path) -> dict[str, str]:
    """Campaign, model and environment of the store's first run (names the bench post binds)."""
    data = json.loads(min(runs.glob("*/*/run.json")).read_text())
    return {"campaign": data["campaign"], "model": data["model"]["name"],
            "environment": data["environment"]["name"]}


def write_post(project: Path) -> Path:
    """The project's one blog post with live bindings (written once; its first build includes it)."""
    post = project / "docs" / "blog" / "posts" / "bench.md"
    if not post.exists():
        post.parent.mkdir(parents=True, exist_ok=True)
        post.write_text(POST.format(**first_arm(project / "runs")))
    return post


def break_project(project: Path, case: str) -> tuple[str, Callable[[], object]]:
    """Break ``project`` the way refusal ``case`` says; returns (expected error text, undo)."""
    config = project / "sparkreport.yml"
    original = config.read_text()
    if case == "config":
        config.write_text(original + "analysis:\n  confidence: 95\n")
        return "analysis.confidence must be between 0 and 1", lambda: config.write_text(original)
    if case == "diff":
        config.write_text(original + "diffs:\n  - name: gone\n    a: version=9.9.9\n    b: version=1.0.0\n")
        return "no run has version='9.9.9'", lambda: config.write_text(original)
    stale = project / "docs" / "blog" / "posts" / "stale.md"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text('---\ndate: 2026-01-02\n---\n\n# Stale\n\nIt ran at '
                     '{{ value("output_throughput_tok_s", model="retired-model") }}.\n')
    return "has model='retired-model'", lambda: stale.unlink()


def drop_added_runs(runs: Path) -> int:
    """Take out of the store the runs that :func:`add_one_run` ingested (those whose source log
    is named ``…-new<ns>.log``), so that every bench measures the store ``synth.py`` generated:
    otherwise each ``newrun`` and ``series`` stage leaves its runs behind, all in the newest
    group's arm (it had grown from 10 runs to 196 by the forty-eighth round, and with it the
    model page a new run changes). Returns how many run folders were removed."""
    added = {log.parent for log in runs.glob("*/*/*-new*.log") if log.stem.rsplit("-new", 1)[-1].isdigit()}
    for folder in sorted(added):
        shutil.rmtree(folder)
    return len(added)


#: The copy of the run.json the ``rebuild1`` stage touched, as it was before (put back by :func:`put_back_touched`).
UNTOUCHED = "untouched-run.json"


def keep_untouched(runs: Path, run_json: Path, work: Path) -> None:
    """Keep ``run_json`` as it is now (once: the first touch's copy is the generated file) and
    where it is, for :func:`put_back_touched`."""
    kept = work / UNTOUCHED
    if not kept.exists():
        kept.write_text(json.dumps({"path": run_json.relative_to(runs).as_posix(), "text": run_json.read_text()}))


def put_back_touched(runs: Path, work: Path) -> int:
    """The run.json the ``rebuild1`` stage gave a ``touched`` label, as it was generated; 1 if
    one was put back, else 0."""
    kept = work / UNTOUCHED
    if not kept.exists():
        return 0
    found = json.loads(kept.read_text())
    target = runs / found["path"]
    put = target.exists()
    if put:
        target.write_text(found["text"])
    kept.unlink()
    return int(put)


def add_one_run(source: Path, project: Path, work: Path, group_index: int = -1) -> None:
    """``sparkreport ingest`` ONE new run: a copy of the newest group's first log (or the group
    at ``group_index``: 0 is the oldest campaign's first) with one more line at its end (so a new
    source hash and run id), into that group's campaign with its labels. Fails unless the store
    then holds one run more."""
    manifest = json.loads((source / "manifest.json").read_text())
    group = manifest["groups"][group_index]
    log = min((source / group["path"]).rglob("*.log"))
    folder = work / "newrun"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    copy = folder / f"{log.stem}-new{time.time_ns()}.log"
    copy.write_bytes(log.read_bytes() + f"[bench] new run {time.time_ns()}\n".encode())
    command = [sys.executable, "-m", "sparkreport", "ingest", "-q", "--runs-dir", "runs", "--campaign",
               group["campaign"], "--environment", group.get("environment", group["labels"]["env"])]
    for key, value in group["labels"].items():
        command += ["--label", f"{key}={value}"]
    before = sum(1 for _ in (project / "runs").glob("*/*/run.json"))
    run_child([*command, str(copy)], project)
    after = sum(1 for _ in (project / "runs").glob("*/*/run.json"))
    if after != before + 1:
        raise SystemExit(f"ingesting {copy} into {project / 'runs'} added {after - before} runs, not 1")


def bench(n: int, work: Path, sampled: int, hours: float, seed: int, skip: set[str],
          only: set[str] | None = None, rounds: tuple[int, int] = (3, 4), ci_newruns: int = 1) -> dict[str, object]:
    source = generate(work, n, sampled, hours, seed)
    project = work / f"n{n}" / "project"
    runs = project / "runs"
    project.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "sparkreport.yml", project / "sparkreport.yml")
    sparkreport = [sys.executable, "-m", "sparkreport"]
    row: dict[str, object] = {"runs": n, "sampled": min(sampled, n)}
    wanted = set(STAGES) - skip - OPT_IN if only is None else set(only)
    if only is not None and not runs.exists():
        wanted.add("ingest")  # nothing to re-run on: make the store first

    def stage(name: str, command: list[str], before: object = None) -> None:
        if name not in wanted:
            return
        if callable(before):
            before()
        wall, rss, cpu = run_child(command, project)
        row[f"{name}_s"], row[f"{name}_mib"], row[f"{name}_cpu_s"] = round(wall, 2), round(rss), round(cpu, 2)
        tree = LAST_TREE_PSS_MIB
        row[f"{name}_tree_mib"] = round(tree) if tree is not None else None
        pss = f"{tree:5.0f} MiB PSS with its workers" if tree is not None \
            else f"PSS not sampled (ended within {PSS_INTERVAL_S:g} s)"
        print(f"  n={n:>6} {name:<9} {wall:8.2f} s ({cpu:7.2f} s CPU) {rss:7.0f} MiB, {pss}", file=sys.stderr)

    def set_aside(path: Path) -> None:
        # Deleting 10 000 run folders keeps ext4 busy for seconds after rmtree returns, which
        # would be charged to the next stage: move the old tree aside, delete it at the end.
        if path.exists():
            trash = work / ".trash"
            trash.mkdir(exist_ok=True)
            path.rename(trash / f"{path.name}-{time.time_ns()}")

    def clean_store() -> None:
        set_aside(runs)

    def clean_build() -> None:
        set_aside(project / "build")
        set_aside(project / "site")

    if "ingest" in wanted or not runs.exists():
        wanted.add("ingest")
        stage("ingest", [sys.executable, str(HERE / "stages.py"), "ingest", str(source), str(runs)], clean_store)
    if "ingest" not in wanted and (restored := drop_added_runs(runs) + put_back_touched(runs, work)):
        print(f"put back {restored} runs as generated (added or touched by earlier benches)", file=sys.stderr)
        if (project / "site").exists():  # built once, untimed: the next timed build is its stage's alone
            run_child([*sparkreport, "build"], project)
    post = write_post(project)
    stage("dataset", [sys.executable, str(HERE / "stages.py"), "dataset", str(runs)])
    dataset_cache = project.parent / "dataset-cache"  # filled by an untimed load first
    if "dataset_cached" in wanted:
        run_child([sys.executable, str(HERE / "stages.py"), "dataset", str(runs), "--cache", str(dataset_cache)],
                  project)
    stage("dataset_cached", [sys.executable, str(HERE / "stages.py"), "dataset", str(runs),
                             "--cache", str(dataset_cache)])
    stage("analysis", [sys.executable, str(HERE / "stages.py"), "analysis", str(project)])
    stage("render", [*sparkreport, "render"], clean_build)
    stage("build", [*sparkreport, "build"], clean_build)
    if wanted & NEEDS_SITE and not (project / "site").exists():
        print(f"  n={n:>6} (an untimed build first: the stages asked for need a site)", file=sys.stderr)
        run_child([*sparkreport, "build"], project)
    stage("rebuild", [*sparkreport, "build"])
    stage("scan", [sys.executable, str(HERE / "stages.py"), "scan", str(project / "site")])

    def touch_one() -> None:
        first = min(runs.glob("*/*/run.json"))
        keep_untouched(runs, first, work)
        data = json.loads(first.read_text())
        data["labels"]["touched"] = str(time.time())
        first.write_text(json.dumps(data, indent=2) + "\n")

    stage("rebuild1", [*sparkreport, "build"], touch_one)
    stage("newrun", [*sparkreport, "build"], lambda: add_one_run(source, project, work))
    stage("post", [*sparkreport, "build"],
          lambda: post.write_text(post.read_text() + f"\nEdited at {time.time_ns()}.\n"))
    if "refuse" in wanted:
        refuse(n, project, row, set_aside)
    if "gates" in wanted:
        gates(n, project, row)
    if "ci" in wanted:
        ci_jobs(n, project, source, work, row, post, ci_newruns)
    if "series" in wanted:
        series(n, project, source, work, row, clean_build, *rounds)
    shutil.rmtree(work / ".trash", ignore_errors=True)
    site = project / "site"
    if site.exists():
        pages, largest, name = folder_stats(site, ".html")
        row["pages"], row["largest_page_kib"], row["largest_page"] = pages, round(largest / 1024), name
        row["site_mib"] = round(sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 2**20)
        row["charts"] = sum(1 for _ in site.rglob("charts/*.vl.json"))
        row["svgs"] = sum(1 for _ in site.rglob("charts/*.svg"))
        index = site / "search" / "search_index.json"
        row["search_index_kib"] = round(index.stat().st_size / 1024) if index.exists() else 0
        md_pages, _largest, _name = folder_stats(project / "build" / "docs", ".md")
        if "mkdocs" in wanted:
            plain = plain_site(work / f"n{n}" / "plain", md_pages)
            wall, rss, _cpu = run_child([sys.executable, "-m", "mkdocs", "build", "-q"], plain)
            row["mkdocs_pages"], row["mkdocs_s"], row["mkdocs_mib"] = md_pages, round(wall, 2), round(rss)
            print(f"  n={n:>6} mkdocs    {wall:8.2f} s  {rss:7.0f} MiB ({md_pages} plain pages)", file=sys.stderr)
    if "build_s" in row and "mkdocs_s" in row:
        row["build_over_mkdocs"] = round(float(row["build_s"]) / float(row["mkdocs_s"]), 2)  # type: ignore[arg-type]
    for key in ("rebuild1_s", "newrun_s", "post_s"):
        if key in row and "build_s" in row:
            row[key.replace("_s", "_pct")] = round(100 * float(row[key]) / float(row["build_s"]), 1)  # type: ignore[arg-type]
    for key in ("ci_same_s", "ci_newrun_s", "ci_post_s"):
        if key in row and "ci_cold_s" in row:
            row[key.replace("_s", "_pct")] = round(100 * float(row[key]) / float(row["ci_cold_s"]), 1)  # type: ignore[arg-type]
    return row


def series(n: int, project: Path, source: Path, work: Path, row: dict[str, object],
           clean_build: Callable[[], None], rounds: int, after: int) -> None:
    """``rounds`` times, a cold build (no ``build/``, no ``site/``) and then ``after`` new runs,
    each ingested and built in turn: the median cold build, the median new run's build and the
    one as a share of the other. On a machine whose speed drifts between minutes, one cold build
    and the new run after it (the ``build`` and ``newrun`` stages) can land anywhere within the
    drift; the medians of a series say where the share is.

    The new runs go into the newest campaign (where a study adds them); after each of them, one
    more goes into the oldest campaign and is built apart (``old``): such a run changes the
    pages that show the older campaigns too — a model's page of earlier campaigns, the longest
    page of a build — and its median is reported beside the newest campaign's."""
    colds: list[float] = []
    news: list[float] = []
    olds: list[float] = []
    command = [sys.executable, "-m", "sparkreport", "build"]
    for _round in range(rounds):
        clean_build()
        wall, _rss, cpu = run_child(command, project)
        colds.append(wall)
        print(f"  n={n:>6} series    cold build {wall:8.2f} s ({cpu:7.2f} s CPU)", file=sys.stderr)
        for _run in range(after):
            add_one_run(source, project, work)
            wall, _rss, cpu = run_child(command, project)
            news.append(wall)
            print(f"  n={n:>6} series    one new run {wall:7.2f} s ({cpu:7.2f} s CPU)", file=sys.stderr)
            add_one_run(source, project, work, group_index=0)
            wall, _rss, cpu = run_child(command, project)
            olds.append(wall)
            print(f"  n={n:>6} series    one new run, oldest campaign {wall:7.2f} s ({cpu:7.2f} s CPU)",
                  file=sys.stderr)
    cold, new, old = statistics.median(colds), statistics.median(news), statistics.median(olds)
    row["series_cold_s"], row["series_newrun_s"] = round(cold, 2), round(new, 2)
    row["series_newrun_pct"] = round(100 * new / cold, 1)
    row["series_oldrun_s"], row["series_oldrun_pct"] = round(old, 2), round(100 * old / cold, 1)
    print(f"  n={n:>6} series    median cold build {cold:.2f} s ({min(colds):.2f}–{max(colds):.2f}, {len(colds)}), "
          f"median new run {new:.2f} s ({min(news):.2f}–{max(news):.2f}, {len(news)}): "
          f"{100 * new / cold:.1f}% of the cold build; in the oldest campaign {old:.2f} s "
          f"({min(olds):.2f}–{max(olds):.2f}, {len(olds)}): {100 * old / cold:.1f}%", file=sys.stderr)


#: What a CI job commits before its build (``ci`` stage), after the cold job.
CI_JOBS = ("same", "newrun", "post")


def ci_jobs(n: int, project: Path, source: Path, work: Path, row: dict[str, object], post: Path,
            newruns: int = 1) -> None:
    """Time `sparkreport build` as the publishing workflow runs it: in a fresh shallow clone of
    the project (every file with a new mtime and inode), with build/ and site/ restored as
    actions/cache restores them (`tar --posix`: nanosecond mtimes, new inodes) and saved again
    after it. The project (runs/, docs/, sparkreport.yml) is committed to a repository of its
    own first (untimed; about a minute at 10 000 runs). Jobs: ``cold`` (no cache), then
    ``same`` (nothing committed since), ``newrun`` (one run ingested and committed, as
    :func:`add_one_run`; ``newruns`` such jobs one after another, each with the cache the last
    saved, and their median kept: one job's figure moves with the machine), ``post`` (the bench
    post edited and committed). The clone and the restore are not timed (GitHub's steps, not
    sparkreport's)."""
    base = work / f"n{n}"
    origin, job, archive = base / "ci-origin", base / "ci-job", base / "ci-cache.tar"
    for folder in (origin, job):
        shutil.rmtree(folder, ignore_errors=True)
    archive.unlink(missing_ok=True)
    origin.mkdir()
    for name in ("runs", "docs"):
        shutil.copytree(project / name, origin / name)
    shutil.copyfile(project / "sparkreport.yml", origin / "sparkreport.yml")
    (origin / ".gitignore").write_text("build/\nsite/\n")
    # No automatic housekeeping: after a commit of 10 000 runs, `git gc --auto` repacks in the
    # background for a minute or more, on one of the two CPUs the timed build runs on. The first
    # commit is packed here instead, before any job (else each clone packs 30 000 loose objects).
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org", "-c", "gc.auto=0",
           "-c", "maintenance.auto=false"]

    def commit(message: str) -> None:
        subprocess.run([*git, "add", "-A"], cwd=origin, check=True)
        subprocess.run([*git, "commit", "-qm", message], cwd=origin, check=True)

    subprocess.run([*git, "init", "-q"], cwd=origin, check=True)
    commit("the bench project")
    subprocess.run([*git, "repack", "-adq"], cwd=origin, check=True)
    origin_post = origin / post.relative_to(project)
    changes: dict[str, Callable[[], object]] = {
        "cold": lambda: None, "same": lambda: None,
        "newrun": lambda: add_one_run(source, origin, work),
        "post": lambda: origin_post.write_text(origin_post.read_text() + f"\nEdited at {time.time_ns()}.\n"),
    }
    order = ["cold", *(kind for kind in CI_JOBS for _ in range(newruns if kind == "newrun" else 1))]
    newrun_walls: list[float] = []
    for name in order:
        changes[name]()
        if name in ("newrun", "post"):
            commit(name)
        if job.exists():
            shutil.rmtree(job)
        subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(job)], check=True)
        if name != "cold":
            subprocess.run(["tar", "-xf", str(archive), "-C", str(job)], check=True)
        wall, rss, cpu = run_child([sys.executable, "-m", "sparkreport", "build"], job)
        subprocess.run(["tar", "--posix", "-cf", str(archive), "build", "site"], cwd=job, check=True)
        row[f"ci_{name}_s"], row[f"ci_{name}_cpu_s"], row[f"ci_{name}_mib"] = round(wall, 2), round(cpu, 2), round(rss)
        print(f"  n={n:>6} ci {name:<6} {wall:8.2f} s ({cpu:7.2f} s CPU) {rss:7.0f} MiB", file=sys.stderr)
        if name == "newrun":
            newrun_walls.append(wall)
    if len(newrun_walls) > 1:
        median = statistics.median(newrun_walls)
        row["ci_newrun_s"] = round(median, 2)
        print(f"  n={n:>6} ci newrun median {median:.2f} s ({min(newrun_walls):.2f}–{max(newrun_walls):.2f}, "
              f"{len(newrun_walls)} jobs): {100 * median / float(row['ci_cold_s']):.1f}% of the cold job",  # type: ignore[arg-type]
              file=sys.stderr)


def gates(n: int, project: Path, row: dict[str, object]) -> None:
    """Time each CI gate through the build's cache (current: the last build read every run), then
    reading the store as it is — the project's sparkreport.yml copied to a folder never built
    (the commands find the project, and its cache, by the config's folder)."""
    unbuilt = project.parent / "gates-unbuilt"
    unbuilt.mkdir(exist_ok=True)
    shutil.copyfile(project / "sparkreport.yml", unbuilt / "sparkreport.yml")
    for name, args in GATES.items():
        for how, extra in (("cached", []), ("as_is", ["--config", str(unbuilt / "sparkreport.yml")])):
            command = [sys.executable, "-m", "sparkreport", *args, *extra]
            wall, rss, cpu = run_child(command, project)
            key = f"gate_{name}_{how}"
            row[f"{key}_s"], row[f"{key}_cpu_s"], row[f"{key}_mib"] = round(wall, 2), round(cpu, 2), round(rss)
            print(f"  n={n:>6} {name:<7} {how:<6} {wall:6.2f} s ({cpu:5.2f} s CPU) {rss:7.0f} MiB", file=sys.stderr)


def refuse(n: int, project: Path, row: dict[str, object], set_aside: Callable[[Path], None]) -> None:
    """Time ``sparkreport build`` refusing each broken case, warm (the caches of the last
    build) and cold (no ``build/``); the command must fail with the expected one line."""
    command = [sys.executable, "-m", "sparkreport", "build"]
    build, kept = project / "build", project / "build.bench-kept"
    set_aside(kept)  # left by an interrupted bench
    if build.exists():
        # Warm means the name index current, as the last build with this code leaves it (the
        # refusal reads nothing else from build/). A site built by other code (`--only refuse`
        # after a change) has a stale or no index: one untimed refusal brings it up to date.
        expected, undo = break_project(project, "diff")
        try:
            run_child(command, project, expect_error=expected)
        finally:
            undo()
    for warmth in ("warm", "cold"):
        if warmth == "cold" and build.exists():
            build.rename(kept)  # the cold cases run without it; put back below
        for case in REFUSALS:
            if warmth == "cold":
                set_aside(build)  # what the previous cold refusal wrote
            expected, undo = break_project(project, case)
            try:
                wall, rss, cpu = run_child(command, project, expect_error=expected)
            finally:
                undo()
            key = f"refuse_{case}_{warmth}"
            row[f"{key}_s"], row[f"{key}_cpu_s"], row[f"{key}_mib"] = round(wall, 2), round(cpu, 2), round(rss)
            print(f"  n={n:>6} refuse {case:<6} {warmth} {wall:6.2f} s ({cpu:5.2f} s CPU) {rss:7.0f} MiB",
                  file=sys.stderr)
    set_aside(build)
    if kept.exists():
        kept.rename(build)


COLUMNS = [("runs", "runs"), ("ingest_s", "ingest s"), ("ingest_mib", "MiB"), ("dataset_s", "dataset s"),
           ("dataset_mib", "MiB"), ("dataset_cached_s", "dataset cached s"), ("analysis_s", "analysis s"),
           ("analysis_mib", "MiB"),
           ("render_s", "render s"), ("render_mib", "MiB"), ("build_s", "build s"), ("build_mib", "MiB"),
           ("rebuild_s", "rebuild s"), ("scan_s", "scan s"), ("rebuild1_s", "1 changed s"),
           ("rebuild1_pct", "% of build"), ("newrun_s", "1 new run s"), ("newrun_pct", "% of build"),
           ("post_s", "post edit s"), ("mkdocs_s", "bare mkdocs s"),
           ("build_over_mkdocs", "build/mkdocs"), ("pages", "pages"), ("largest_page_kib", "largest page KiB"),
           ("charts", "charts"), ("svgs", "SVG fallbacks"), ("search_index_kib", "search index KiB"),
           ("site_mib", "site MiB")]


def table(rows: list[dict[str, object]]) -> str:
    """The figures as a Markdown table (one row per N), plus per-run time to show linearity."""
    header = "| " + " | ".join(title for _key, title in COLUMNS) + " |"
    lines = [header, "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(key, "—")) for key, _title in COLUMNS) + " |")
    # Every N carries the same fixed part (the sampled runs, MkDocs' own pages), so linear growth
    # shows as a constant marginal cost: seconds per 1 000 extra runs between consecutive N.
    ordered = sorted(rows, key=lambda r: int(r["runs"]))  # type: ignore[call-overload]
    if len(ordered) > 1:  # (one store size: no step to take a marginal cost over)
        lines += ["", "Marginal cost, seconds per 1 000 more runs (linear time = a flat column):", "",
                  "| from → to | ingest | dataset | analysis | build |", "|---|---|---|---|---|"]
    for low, high in zip(ordered, ordered[1:], strict=False):
        n0, n1 = int(low["runs"]), int(high["runs"])  # type: ignore[call-overload]
        per = [f"{(float(high[k]) - float(low[k])) / (n1 - n0) * 1000:.2f}"  # type: ignore[arg-type]
               if k in low and k in high else "—" for k in ("ingest_s", "dataset_s", "analysis_s", "build_s")]
        lines.append(f"| {n0} → {n1} | " + " | ".join(per) + " |")
    if any(key.startswith("refuse_") for row in rows for key in row):
        lines += ["", "Refusal of bad configuration by `sparkreport build` (exit 1, one line): wall seconds "
                  "(CPU seconds of the process); warm = the caches of an earlier build, cold = no build/:", "",
                  "| runs | " + " | ".join(f"{case} {warmth}" for warmth in ("warm", "cold") for case in REFUSALS)
                  + " | peak MiB |", "|---|" + "---|" * (2 * len(REFUSALS) + 1)]
        for row in ordered:
            cells = [f"{row[f'refuse_{case}_{warmth}_s']} ({row.get(f'refuse_{case}_{warmth}_cpu_s', '—')})"
                     if f"refuse_{case}_{warmth}_s" in row else "—" for warmth in ("warm", "cold") for case in REFUSALS]
            peaks = [int(v) for k, v in row.items() if k.startswith("refuse_") and k.endswith("_mib")]  # type: ignore[call-overload]
            lines.append(f"| {row['runs']} | " + " | ".join(cells) + f" | {max(peaks) if peaks else '—'} |")
    if any(key.startswith("ci_") for row in rows for key in row):
        lines += ["", "`sparkreport build` in a CI job (a fresh clone, build/ and site/ restored through "
                  "`tar --posix`): wall seconds (CPU seconds), and % of the cold job:", "",
                  "| runs | cold | nothing new | 1 new run | % | post edit | % |", "|---|---|---|---|---|---|---|"]
        for row in ordered:
            cells = [f"{row[f'ci_{name}_s']} ({row[f'ci_{name}_cpu_s']})" + (
                f" | {row.get(f'ci_{name}_pct', '—')}" if name in ("newrun", "post") else "")
                if f"ci_{name}_s" in row else "—" for name in ("cold", *CI_JOBS)]
            lines.append(f"| {row['runs']} | " + " | ".join(cells) + " |")
    if any(key.startswith("gate_") for row in rows for key in row):
        lines += ["", "CI gates after the last build: wall seconds (CPU seconds), through the build's cache "
                  "and reading the store as it is:", "",
                  "| runs | " + " | ".join(f"{name} {how.replace('_', ' ')}" for name in GATES
                                           for how in ("cached", "as_is")) + " |",
                  "|---|" + "---|" * (2 * len(GATES))]
        for row in ordered:
            cells = [f"{row[f'gate_{name}_{how}_s']} ({row[f'gate_{name}_{how}_cpu_s']})"
                     if f"gate_{name}_{how}_s" in row else "—" for name in GATES for how in ("cached", "as_is")]
            lines.append(f"| {row['runs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def byte_compile() -> None:
    """Compile the sparkreport package being measured, as ``pip install`` does: an editable
    install under ``PYTHONDONTWRITEBYTECODE=1`` (set on these machines) otherwise compiles its
    ~70 modules from source in every process timed (~0.2 s a command), which an installed
    sparkreport never does. The package's digest leaves ``__pycache__`` out: no cache is dropped.
    The checkout's own package (``ROOT/sparkreport``, which every command measured runs), not the
    installed one: an editable install of another clone compiled that clone and left this one's
    modules to be compiled in every timed command (and an install of a folder since removed
    stopped the bench with "No module named 'sparkreport'")."""
    import compileall

    compileall.compile_dir(ROOT / "sparkreport", quiet=1)


def file_creation_us(folder: Path, count: int = 200) -> tuple[float, float]:
    """Microseconds to make a folder and to create an empty file in ``folder`` (the median of
    ``count`` each, in a fresh folder removed afterwards), printed before the figures: a cold
    build makes ~25 000 of them at 10 000 runs, a new run's build ~1 000, so a phase where they
    are slow weighs on the cold build more (on one machine of this kind 350–450 µs for a while,
    20–110 µs later on the same disk: bench/README.md, issue 16, forty-first round)."""
    folder.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".file-creation-", dir=folder))
    try:
        made, created = [], []
        for index in range(count):
            began = time.perf_counter()
            (scratch / str(index)).mkdir()
            made.append(time.perf_counter() - began)
            began = time.perf_counter()
            (scratch / str(index) / "f").touch()
            created.append(time.perf_counter() - began)
        return statistics.median(made) * 1e6, statistics.median(created) * 1e6
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--sampled", type=int, default=100, help="runs with nvidia-smi samples")
    parser.add_argument("--sample-hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("build") / "bench",
                        help="where campaigns, run stores and sites go (default build/bench, git-ignored)")
    parser.add_argument("--skip", default="", help="comma-separated stages to skip (ingest reuses the store)")
    parser.add_argument("--only", default=None, metavar="STAGE,…",
                        help=f"run only these stages on the stores of an earlier run ({', '.join(STAGES)}); "
                             "with --json, the figures are merged into that file's rows")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--series", type=int, nargs=2, default=(3, 4), metavar=("ROUNDS", "RUNS"),
                        help="the series stage (only with --only series): ROUNDS cold builds, each followed "
                             "by RUNS new runs built one at a time (default 3 4)")
    parser.add_argument("--ci-newruns", type=int, default=1, metavar="JOBS",
                        help="the ci stage's new-run jobs, one after another; their median is kept (default 1)")
    args = parser.parse_args(argv)
    if args.ci_newruns < 1:
        parser.error("--ci-newruns must be at least 1")
    only = None if args.only is None else {s for s in args.only.split(",") if s}
    unknown = sorted((only or set()) - set(STAGES)) + sorted({s for s in args.skip.split(",") if s} - set(STAGES))
    if unknown:
        parser.error(f"unknown stage {unknown[0]!r} — stages: {', '.join(STAGES)}")
    work = args.work.resolve()
    byte_compile()
    probes = 200
    made, created = file_creation_us(work, probes)
    print(f"{work}: a folder made in {made:.0f} µs, a file created in {created:.0f} µs (medians of {probes})",
          file=sys.stderr)
    earlier: dict[int, dict[str, object]] = {}
    if only is not None and args.json and args.json.exists():
        earlier = {int(r["runs"]): r for r in json.loads(args.json.read_text())}
    rows = []
    for n in args.runs:
        row = bench(n, work, args.sampled, args.sample_hours, args.seed,
                    {s for s in args.skip.split(",") if s}, only, tuple(args.series), args.ci_newruns)
        rows.append({**earlier.pop(n, {}), **row})
        print(table(rows), file=sys.stderr)
    rows += earlier.values()
    rows.sort(key=lambda r: int(r["runs"]))  # type: ignore[call-overload]
    print(table(rows))
    over = [r for r in rows if int(r.get("largest_page_kib", 0)) * 1024 > PAGE_LIMIT]  # type: ignore[call-overload]
    for row in over:
        print(f"page over 1.5 MB at n={row['runs']}: {row['largest_page']} ({row['largest_page_kib']} KiB)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
