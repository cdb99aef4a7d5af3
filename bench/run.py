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
* ``mkdocs``   — a bare ``mkdocs build`` (Material) of as many plain pages as ``build`` made.

No figure is asserted here: the targets are in bench/README.md, next to the latest figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE_LIMIT = 1.5 * 2**20


def run_child(command: list[str], cwd: Path) -> tuple[float, float]:
    """Run ``command``; returns (wall seconds, peak RSS MiB of that child). Fails loudly."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    output = process.stdout.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.stderr.write(output.decode(errors="replace")[-3000:])
        raise SystemExit(f"{' '.join(command)} failed (exit {process.returncode})")
    return wall, usage.ru_maxrss / 1024  # Linux: KiB


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


def bench(n: int, work: Path, sampled: int, hours: float, seed: int, skip: set[str]) -> dict[str, object]:
    source = generate(work, n, sampled, hours, seed)
    project = work / f"n{n}" / "project"
    runs = project / "runs"
    project.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "sparkreport.yml", project / "sparkreport.yml")
    sparkreport = [sys.executable, "-m", "sparkreport"]
    row: dict[str, object] = {"runs": n, "sampled": min(sampled, n)}

    def stage(name: str, command: list[str], before: object = None) -> None:
        if name in skip:
            return
        if callable(before):
            before()
        wall, rss = run_child(command, project)
        row[f"{name}_s"], row[f"{name}_mib"] = round(wall, 2), round(rss)
        print(f"  n={n:>6} {name:<9} {wall:8.2f} s  {rss:7.0f} MiB", file=sys.stderr)

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

    if "ingest" not in skip or not runs.exists():
        skip.discard("ingest")
        stage("ingest", [sys.executable, str(HERE / "stages.py"), "ingest", str(source), str(runs)], clean_store)
    stage("dataset", [sys.executable, str(HERE / "stages.py"), "dataset", str(runs)])
    stage("analysis", [sys.executable, str(HERE / "stages.py"), "analysis", str(project)])
    stage("render", [*sparkreport, "render"], clean_build)
    stage("build", [*sparkreport, "build"], clean_build)
    stage("rebuild", [*sparkreport, "build"])
    stage("scan", [sys.executable, str(HERE / "stages.py"), "scan", str(project / "site")])

    def touch_one() -> None:
        first = min(runs.glob("*/*/run.json"))
        data = json.loads(first.read_text())
        data["labels"]["touched"] = str(time.time())
        first.write_text(json.dumps(data, indent=2) + "\n")

    stage("rebuild1", [*sparkreport, "build"], touch_one)
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
        if "mkdocs" not in skip:
            plain = plain_site(work / f"n{n}" / "plain", md_pages)
            wall, rss = run_child([sys.executable, "-m", "mkdocs", "build", "-q"], plain)
            row["mkdocs_pages"], row["mkdocs_s"], row["mkdocs_mib"] = md_pages, round(wall, 2), round(rss)
            print(f"  n={n:>6} mkdocs    {wall:8.2f} s  {rss:7.0f} MiB ({md_pages} plain pages)", file=sys.stderr)
            if "build_s" in row:
                row["build_over_mkdocs"] = round(float(row["build_s"]) / wall, 2)  # type: ignore[arg-type]
    return row


COLUMNS = [("runs", "runs"), ("ingest_s", "ingest s"), ("ingest_mib", "MiB"), ("dataset_s", "dataset s"),
           ("dataset_mib", "MiB"), ("analysis_s", "analysis s"), ("analysis_mib", "MiB"),
           ("render_s", "render s"), ("render_mib", "MiB"), ("build_s", "build s"), ("build_mib", "MiB"),
           ("rebuild_s", "rebuild s"), ("scan_s", "scan s"), ("rebuild1_s", "1 changed s"),
           ("mkdocs_s", "bare mkdocs s"),
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
    lines += ["", "Marginal cost, seconds per 1 000 more runs (linear time = a flat column):", "",
              "| from → to | ingest | dataset | analysis | build |", "|---|---|---|---|---|"]
    ordered = sorted(rows, key=lambda r: int(r["runs"]))  # type: ignore[call-overload]
    for low, high in zip(ordered, ordered[1:], strict=False):
        n0, n1 = int(low["runs"]), int(high["runs"])  # type: ignore[call-overload]
        per = [f"{(float(high[k]) - float(low[k])) / (n1 - n0) * 1000:.2f}"  # type: ignore[arg-type]
               if k in low and k in high else "—" for k in ("ingest_s", "dataset_s", "analysis_s", "build_s")]
        lines.append(f"| {n0} → {n1} | " + " | ".join(per) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--sampled", type=int, default=100, help="runs with nvidia-smi samples")
    parser.add_argument("--sample-hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("build") / "bench",
                        help="where campaigns, run stores and sites go (default build/bench, git-ignored)")
    parser.add_argument("--skip", default="", help="comma-separated stages to skip (ingest reuses the store)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    work = args.work.resolve()
    rows = []
    for n in args.runs:
        rows.append(bench(n, work, args.sampled, args.sample_hours, args.seed,
                          {s for s in args.skip.split(",") if s}))
        print(table(rows), file=sys.stderr)
    print(table(rows))
    over = [r for r in rows if int(r.get("largest_page_kib", 0)) * 1024 > PAGE_LIMIT]  # type: ignore[call-overload]
    for row in over:
        print(f"page over 1.5 MB at n={row['runs']}: {row['largest_page']} ({row['largest_page_kib']} KiB)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
