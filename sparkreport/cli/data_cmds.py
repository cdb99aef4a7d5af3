"""`sparkreport dataset`, `stats`, `compare` and `check`: the analysis, on the terminal."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from sparkreport.cli.options import json_option, metric_option, runs_dir_option, strict_option


def config_option(func: Any) -> Any:
    return click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
                        help="Project configuration (default: ./sparkreport.yml when present).")(func)


def duplicates_option(func: Any) -> Any:
    return click.option("--duplicates", type=click.Choice(["all", "first", "last"]), default=None,
                        help="Repeated iterations: keep all, or the first/last of each "
                             "(overrides analysis.duplicates).")(func)


def _setup(runs_dir: Path, config_path: Path | None, duplicates: str | None) -> tuple[Any, Any, Any]:
    """The dataset, the configuration and the build's analysis cache (None: not built,
    :func:`~sparkreport.project.kept_build_cache`), which the command ends by keeping
    (:func:`~sparkreport.project.keep_analysis`)."""
    from sparkreport.config import load_config
    from sparkreport.errors import DataError
    from sparkreport.project import read_store, store_analysis

    config = load_config(config_path)
    if duplicates is not None:
        config.analysis.duplicates = duplicates
    ds = read_store(runs_dir, config_path)
    if ds.is_empty():
        raise DataError(f"{runs_dir}: no runs — ingest results first (`sparkreport ingest FILE`)")
    return ds, config, store_analysis(runs_dir, config_path)


def _cell(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if abs(value) >= 1e15 or (value != 0 and abs(value) < 1e-3):  # p-values, not throughputs
            return f"{value:.{digits}g}"
        return f"{value:,.{digits}f}".rstrip("0").rstrip(".")  # thousands separated, as the site prints
    return str(value)


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """A plain aligned table (no dependencies)."""
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


@click.command("dataset")
@runs_dir_option
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the runs table to FILE.csv, FILE.parquet or FILE.json.")
def dataset_command(runs_dir: Path, out: Path | None) -> None:
    """Flatten the run store into one tidy table (one row per run).

    Without --out, prints a one-line summary of what the table holds.
    """
    from sparkreport.dataset import EXPORT_SUFFIXES, export
    from sparkreport.project import read_store

    if out is not None:  # before the load: a file type or a folder that cannot be written says so at once
        from sparkreport.early import check_writable
        from sparkreport.errors import OptionError

        if out.suffix.lower() not in EXPORT_SUFFIXES:
            raise OptionError("--out", f"{out}: unknown output type {out.suffix or '(none)'}",
                              fix="use .csv, .parquet or .json")
        check_writable(out.parent, "--out")
    ds = read_store(runs_dir)
    if out is not None:
        export(ds, out)
        click.echo(f"{len(ds.runs)} runs, {len(ds.runs.columns)} columns → {out}")
        return
    click.echo(f"{len(ds.runs)} runs in {ds.runs['campaign'].nunique()} campaign(s), "
               f"{len(ds.summaries)} published summary figures; metrics: "
               f"{', '.join(ds.metric_columns) or 'none'}")
    click.echo(f"dataset sha256 {ds.digest}")


@click.command("stats")
@runs_dir_option
@config_option
@duplicates_option
@click.option("--by", "by", multiple=True, metavar="LABEL",
              help="Also split arms by this label (repeatable), e.g. --by software.trtllm.")
@click.option("--factor", default="environment", show_default=True, metavar="NAME",
              help="Arms per level of this run column or label.KEY instead of per environment: the arms "
                   "compare contrasts with that factor, and the Results pages' rows when sparkreport.yml "
                   "sets it (a run without a level is in no arm; the column is named after the factor).")
@metric_option
@json_option
def stats_command(runs_dir: Path, config_path: Path | None, duplicates: str | None,
                  by: tuple[str, ...], factor: str, metrics: tuple[str, ...], as_json: bool) -> None:
    """Per arm (campaign × model × environment, or × level of --factor): n, mean, sd, median, min,
    max, CV, 95% t-CI.

    Within each campaign and model the baseline comes first (sparkreport.yml's, where --factor is
    the factor it compares), then the other levels by name: the order of the site's tables.
    """
    from sparkreport.analysis import arm_stats
    from sparkreport.dataset import frame_rows
    from sparkreport.errors import OptionError
    from sparkreport.project import keep_analysis
    from sparkreport.render.preflight import DatasetNames, factor_problem

    ds, config, cache = _setup(runs_dir, config_path, duplicates)
    _refuse_absent(ds, by, metrics)
    if factor != "environment" and (found := factor_problem(DatasetNames(ds), factor)) is not None:
        raise OptionError("--factor", found[0].replace("to compare on", "to group arms by"), fix=found[1])
    frame = arm_stats(ds, config.analysis, by=list(by), metrics=list(metrics) or None, cache=cache, level=factor,
                      baseline=config.baseline_of(factor))
    keep_analysis(cache)
    if factor != "environment":  # the level in its own column, named as the factor
        frame = frame.rename(columns={"environment": factor})
    rows = frame_rows(frame.drop(columns=["model_name"]))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    columns = [c for c in rows[0] if c not in ("unit", "source", "ci_clipped")] if rows else []
    print_table(rows, columns)
    clipped = sum(1 for row in rows if row["ci_clipped"])
    if clipped:
        cut = "1 interval reached past what the quantity can be and was" if clipped == 1 else \
            f"{clipped} intervals reached past what the quantity can be and were"
        click.echo(f"note: {cut} cut there (0, or 100 for a percentage): arms of few runs give wide "
                   "t-intervals (95% at n = 2: 12.7 standard errors each side).", err=True)


def _refuse_absent(ds: Any, labels: tuple[str, ...], metrics: tuple[str, ...]) -> None:
    """A ``--by`` label or a ``--metric`` no run (or published arm) has is a bad invocation: a
    column of '-' or a blank table would look like an answer."""
    from sparkreport.errors import OptionError
    from sparkreport.names import shown_values

    for label in labels:
        if (label if label.startswith("label.") else f"label.{label}") not in ds.runs.columns:
            raise OptionError("--by", f"no run has a label {label.removeprefix('label.')!r}",
                              fix=f"labels here: {shown_values(c.removeprefix('label.') for c in ds.label_columns)}")
    reported = [*ds.metric_columns, *sorted(set(ds.summaries["metric"].astype(str)) - set(ds.metric_columns))]
    for metric in metrics:
        if metric not in reported:
            raise OptionError("--metric", f"no run reports {metric}", fix=f"metrics here: {shown_values(reported)}")


@click.command("compare")
@runs_dir_option
@config_option
@duplicates_option
@click.option("--factor", default=None,
              help="What differs between arms: a run column (environment, campaign, model, …) or label.KEY "
                   "(default: sparkreport.yml's factor, else environment).")
@click.option("--baseline", default=None,
              help="The factor level the others are compared to (default: sparkreport.yml's baseline, else native).")
@click.option("--by", "by", default=None, metavar="LABEL",
              help="Compare within each level of this label (e.g. cache): one stratum per level "
                   "(overrides analysis.stratify_by).")
@metric_option
@json_option
def compare_command(runs_dir: Path, config_path: Path | None, duplicates: str | None,
                    factor: str | None, baseline: str | None, by: str | None, metrics: tuple[str, ...],
                    as_json: bool) -> None:
    """Candidate vs baseline per model × metric: difference, ratio, tests, TOST, verdict.

    Holm's adjustment runs per campaign over its primary metric(s) (analysis.primary_metrics),
    and separately over the other tested metrics; metrics with no variance in either arm are
    printed as facts, not tested; where the plan ran in blocks, the test is a paired t over blocks.
    A comparison no test could run on is "untested", and why_untested says why (published without
    a spread, published from a single run, one run per arm, a single run in ARM); it is empty (null
    in --json) where tested.
    """
    from sparkreport.analysis import claim_sentence, compare
    from sparkreport.analysis.design import compare_by, constant_facts
    from sparkreport.dataset import frame_rows
    from sparkreport.project import keep_analysis
    from sparkreport.render.preflight import DatasetNames, check_compare_options

    ds, config, cache = _setup(runs_dir, config_path, duplicates)
    factor, baseline = check_compare_options(DatasetNames(ds), config, factor, baseline)
    stratum = by or config.analysis.stratify_by
    if stratum:
        frame = compare_by(ds, stratum, factor, baseline, config.analysis, metrics=list(metrics) or None)
    else:
        frame = compare(ds, factor, baseline, config.analysis, metrics=list(metrics) or None, cache=cache)
    facts = constant_facts(ds, config.analysis, factor, metrics=list(metrics) or None, cache=cache, baseline=baseline)
    keep_analysis(cache)
    rows = frame_rows(frame)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if rows:
        # why_untested blank where a test ran: "-" would read as a reason that is missing
        print_table([{**row, "why_untested": row["why_untested"] or ""} for row in rows],
                    ["model", *(["stratum"] if stratum else []), "metric", "candidate", "n_baseline", "n_candidate",
                     "ratio", "ratio_ci_low", "ratio_ci_high", "p_holm", "verdict", "why_untested"])
        click.echo()
    elif not facts:  # a header row alone would read as an answer
        click.echo(_nothing_compared(ds, factor, baseline))
    records = frame.to_dict(orient="records")
    for row in records:
        prefix = f"[{row['stratum']}] " if stratum else ""
        click.echo(f"- {prefix}{claim_sentence(row)}")
    for line in dict.fromkeys(f"{r['campaign']}: {r['design']}; Holm over {r['family']}" for r in records):
        click.echo(f"- design: {line}")
    for fact in facts:
        click.echo(f"- fact: {fact.sentence}")


def _nothing_compared(ds: Any, factor: str, baseline: str) -> str:
    """Why compare found no pair of arms: one level of the factor only, or no model in two."""
    levels = sorted({str(v) for frame in (ds.runs, ds.summaries) if factor in frame.columns
                     for v in frame[factor].dropna().unique()})
    others = [level for level in levels if level != baseline]
    if not others:
        return (f"nothing to compare: every run has {factor} {baseline} — compare needs runs in a second "
                f"{factor} (or pass --factor)")
    return (f"nothing to compare: no model has included runs in both {baseline} and another {factor} "
            f"({', '.join(others)}) with a metric both report")


@click.command("check")
@runs_dir_option
@config_option
@duplicates_option
@json_option
@strict_option
def check_command(runs_dir: Path, config_path: Path | None, duplicates: str | None,
                  as_json: bool, strict: bool | None) -> None:
    """Data-quality findings: duplicates, failed runs, missing metrics, small or noisy arms.

    An arm is what the comparisons contrast: campaign × model × environment, or, with a label
    as the factor in sparkreport.yml (factor: label.cache), × level of it (named
    campaign/model/cache=cold). With --strict, exits 1 when any finding is an error.
    """
    from sparkreport.analysis import check, inclusion_rule_text
    from sparkreport.project import keep_analysis

    ds, config, cache = _setup(runs_dir, config_path, duplicates)
    findings = check(ds, config.analysis, cache=cache)
    keep_analysis(cache)
    if as_json:
        click.echo(json.dumps([f.to_dict() for f in findings], indent=2))
    else:
        click.echo(f"Inclusion rule: {inclusion_rule_text(config.analysis)}")
        for f in findings:
            click.echo(f"{f.severity:<7} {f.code:<20} {f.message}")
        counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
        click.echo(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s)")
    if strict and any(f.severity == "error" for f in findings):
        raise SystemExit(1)
