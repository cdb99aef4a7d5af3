"""A new run's build, older code against this checkout's, in alternate pairs (issue 16).

Prints figures; asserts nothing. On a shared or noisy machine two identical builds can differ by
a second, so one build of each side says little: this adds one new run to each side's own copy
of a bench project before every build, and alternates which side builds first, so that both
see the same phases of the machine. What it prints is each build's wall time and, per side,
the median and range.

The older side is ``--old REF`` checked out in a git worktree (``WORK/ab-old``), run with that
worktree first on ``PYTHONPATH``; it builds a copy of ``PROJECT`` (``WORK/ab-project-old``),
the new side builds another (``WORK/ab-project-new``), each built once first so that both start
from their own code's caches. The last line is the paired difference (new − old) of each pair:
its median and in how many pairs the new side was faster. Redirect the output to keep it (``>
ab.log``): each build's line is printed as it ends. ``PROJECT`` is a project that ``bench/run.py`` made (its
``runs/`` and ``sparkreport.yml``); its ``sources/`` beside it give the new runs, which this
checkout's ``sparkreport ingest`` adds to both sides (what is compared is the build).

    python bench/run.py --runs 10000 --only ingest --work /tmp/bench   # the store, once
    python bench/ab.py --old 32a46c2 --project /tmp/bench/n10000/project --pairs 8
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from run import add_one_run, run_child  # noqa: E402 (bench/ is not a package)


def build(project: Path, pythonpath: str | None) -> tuple[float, float]:
    """One ``sparkreport build`` in a fresh process (``pythonpath`` first on its path): its wall
    and CPU seconds (:func:`run.run_child`, which fails loudly)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    wall, _rss, cpu = run_child([sys.executable, "-m", "sparkreport", "build"], project, env=env)
    return wall, cpu


def prepare(old: str, project: Path, work: Path) -> dict[str, tuple[Path, str | None]]:
    """The old code's worktree and each side's copy of the project (made afresh)."""
    tree = work / "ab-old"
    if tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(tree, ignore_errors=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(tree), old], check=True,
                   capture_output=True)
    sides: dict[str, tuple[Path, str | None]] = {}
    for side, pythonpath in (("old", str(tree)), ("new", str(ROOT))):
        copy = work / f"ab-project-{side}"
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir(parents=True)
        shutil.copytree(project / "runs", copy / "runs", symlinks=True)
        shutil.copyfile(project / "sparkreport.yml", copy / "sparkreport.yml")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(pythonpath) / "sparkreport")], check=True)
        sides[side] = (copy, pythonpath)
    return sides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="the older code: a commit, branch or tag")
    parser.add_argument("--project", type=Path, required=True, help="a bench project (bench/run.py made it)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/sparkreport-ab"), help="where the copies go")
    parser.add_argument("--pairs", type=int, default=6)
    args = parser.parse_args()
    project = args.project.resolve()
    sources = project.parent / "sources"
    if not (project / "runs").is_dir() or not (sources / "manifest.json").is_file():
        raise SystemExit(f"{project}: not a bench project (no runs/, or no sources/manifest.json beside it) — "
                         "make one with `python bench/run.py --runs N --only ingest`")
    work = args.work.resolve()
    sides = prepare(args.old, project, work)
    try:
        compare(sides, sources, work, args.pairs, args.old)
    finally:  # the worktree's record in this repository's .git goes with it
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "ab-old")], check=False)


def compare(sides: dict[str, tuple[Path, str | None]], sources: Path, work: Path, pairs: int, old: str) -> None:
    """Each side built once, then ``pairs`` alternate pairs of one new run's build each."""
    for side, (copy, pythonpath) in sides.items():
        wall, cpu = build(copy, pythonpath)
        print(f"{side}: first build {wall:.2f} s ({cpu:.1f} s CPU)", flush=True)
    times: dict[str, list[float]] = {side: [] for side in sides}
    for pair in range(pairs):
        for side in ("old", "new") if pair % 2 == 0 else ("new", "old"):
            copy, pythonpath = sides[side]
            add_one_run(sources, copy, work)
            wall, cpu = build(copy, pythonpath)
            times[side].append(wall)
            print(f"pair {pair + 1} {side}: one new run {wall:.2f} s ({cpu:.1f} s CPU)", flush=True)
    for side, walls in times.items():
        print(f"{side} ({old if side == 'old' else 'this checkout'}): median {statistics.median(walls):.2f} s, "
              f"range {min(walls):.2f}–{max(walls):.2f} s over {len(walls)} build{'' if len(walls) == 1 else 's'}")
    print(paired_summary(times["old"], times["new"]))


def paired_summary(old: list[float], new: list[float]) -> str:
    """Each pair's difference (new − old; the two built minutes apart, in the same phase of the
    machine): its median, and in how many pairs the new side was faster — what says more on a
    noisy machine than the two medians apart."""
    differences = [b - a for a, b in zip(old, new, strict=True)]
    faster = sum(d < 0 for d in differences)
    return (f"paired (new − old): median {statistics.median(differences):+.3f} s, "
            f"range {min(differences):+.3f} to {max(differences):+.3f} s; new faster in {faster} of {len(differences)}")


if __name__ == "__main__":
    main()
