#!/usr/bin/env python3
"""One pipeline stage per process, for ``bench/run.py`` to time (wall time and peak RSS).

    python bench/stages.py ingest SOURCES RUNS_DIR      # a generated campaign → run store
    python bench/stages.py dataset RUNS_DIR [--cache DIR]    # load_dataset (read + validate + flatten)
    python bench/stages.py analysis PROJECT [--cache DIR]    # load_dataset + the site's analysis
    python bench/stages.py change-one PROJECT                # edit one run.json (untimed set-up)

``--cache DIR`` uses a build's cache folder (the record cache and the analysis cache, as
``sparkreport build`` does): run a stage twice for cold and warm figures, and after
``change-one`` for "one run changed". The analysis stage prints how many arms and campaigns
it computed and reused. ``change-one`` edits the project in place: use a copy.
    python bench/stages.py scan SITE_DIR [--full]        # the publish-time credential scan
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _cache(args: list[str]) -> Path | None:
    """The ``--cache DIR`` argument, if given."""
    return Path(args[args.index("--cache") + 1]) if "--cache" in args else None


def main(argv: list[str]) -> int:
    stage, *args = argv
    started = time.perf_counter()
    if stage == "ingest":
        from synth import ingest_campaign

        totals = ingest_campaign(Path(args[0]), Path(args[1]))
        print(json.dumps(totals))
        if totals["rejected"]:
            return 1
    elif stage == "dataset":
        from sparkreport.dataset import load_dataset

        ds = load_dataset(Path(args[0]), cache_dir=_cache(args))
        print(json.dumps({"runs": len(ds.runs), "columns": len(ds.runs.columns)}))
    elif stage == "analysis":
        from sparkreport.config import load_config
        from sparkreport.dataset import load_dataset
        from sparkreport.render.context import build_site_data

        project = Path(args[0])
        cache = _cache(args)
        config = load_config(project / "sparkreport.yml")
        ds = load_dataset(project / "runs", cache_dir=cache)
        site = build_site_data(ds, config, project / "runs", "bench", project, cache_dir=cache)
        counts = site.analysis_cache
        print(json.dumps({"stats": len(site.stats), "comparisons": len(site.comparisons),
                          "findings": len(site.findings),
                          "computed": dict(counts.computed) if counts else None,
                          "reused": dict(counts.reused) if counts else None}))
    elif stage == "change-one":
        run_json = sorted(Path(args[0]).glob("runs/*/*/run.json"))[0]
        data = json.loads(run_json.read_text(encoding="utf-8"))
        metrics = data["metrics"]
        metrics["output_throughput_tok_s"] = round(metrics["output_throughput_tok_s"] * 1.001, 4)
        run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
        print(json.dumps({"changed": str(run_json)}))
    elif stage == "scan":
        from sparkreport.site.scan import scan_site, site_files

        site_dir = Path(args[0])
        files = site_files(site_dir)
        findings = scan_site(site_dir, prefilter="--full" not in args)
        size = sum(Path(path).stat().st_size for _relative, path in files)
        print(json.dumps({"files": len(files), "mib": round(size / 2**20, 1), "findings": len(findings)}))
    else:
        print(f"unknown stage {stage!r}", file=sys.stderr)
        return 2
    print(f"{stage}: {time.perf_counter() - started:.2f} s in-process", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
