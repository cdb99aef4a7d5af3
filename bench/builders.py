"""MkDocs against Zensical on a bench store: cold build, rebuild after one changed run, per stage.

    python bench/builders.py /work/benchstores/n1000/project [--work /tmp/x] [--builders mkdocs,zensical]

The project is copied (never written in place). For each builder: a cold build (no build/,
no site/), a rebuild with nothing changed (the whole-build cache), and a rebuild after one
run's run.json changed; each in its own process, printing wall seconds, the stages
(render / builder / publish = run files + feed + scan + swap), the run files copied,
hard-linked or kept (carried over), the files scanned, peak memory (the build and its children) and the site's size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def one(project: Path, builder: str) -> dict[str, object]:
    """One ``sparkreport build`` in this process (run by :func:`child`)."""
    sys.path.insert(0, str(REPO))
    from sparkreport.render import RenderOptions
    from sparkreport.site import build

    started = time.perf_counter()
    result = build(RenderOptions(runs_dir=project / "runs", project_root=project,
                                 config_path=project / "sparkreport.yml"), project / "site", builder=builder)
    wall = time.perf_counter() - started
    peak_kib = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return {"wall_s": round(wall, 2), "cached": result.cached, "pages": len(result.render.pages),
            **{f"{k}_s": round(v, 2) for k, v in result.timings_s.items()}, **result.published,
            "peak_mib": round(peak_kib / 1024)}


def child(project: Path, builder: str) -> dict[str, object]:
    proc = subprocess.run([sys.executable, __file__, "--one", builder, str(project)], capture_output=True,
                          text=True, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def size_mib(folder: Path) -> tuple[int, float]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), round(sum(p.stat().st_size for p in files) / 2**20, 1)


def touch_one(runs: Path) -> None:
    first = min(runs.glob("*/*/run.json"))
    data = json.loads(first.read_text())
    data.setdefault("labels", {})["touched"] = str(time.time())
    first.write_text(json.dumps(data, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-builders"))
    parser.add_argument("--builders", default="mkdocs,zensical")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.project, args.one)))
        return 0
    for builder in args.builders.split(","):
        project = args.work / f"{args.project.parent.name}-{builder}"
        shutil.rmtree(project, ignore_errors=True)
        shutil.copytree(args.project, project)
        rows = {"cold": child(project, builder)}
        files, mib = size_mib(project / "site")
        rows["unchanged"] = child(project, builder)
        touch_one(project / "runs")
        rows["one run changed"] = child(project, builder)
        print(f"## {builder} — {args.project} (site: {files} files, {mib} MiB)")
        for name, row in rows.items():
            print(f"  {name:<16} {json.dumps(row)}")
        sys.stdout.flush()
        shutil.rmtree(project, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
