"""`sparkreport history`: each metric across software versions, and where its level changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sparkreport.cli.data_cmds import config_option, print_table
from sparkreport.cli.options import json_option, metric_option, min_effect_option, runs_dir_option

if TYPE_CHECKING:
    from sparkreport.analysis.history import History


@click.command("history")
@runs_dir_option
@config_option
@click.option("--by", default=None, metavar="KEY",
              help="What a version is: a label key or engine_version/trtllm/vllm/torch/cuda/driver/image/"
                   "image_digest (default: history.by, else the label 'version').")
@metric_option
@click.option("--campaign", "campaigns", multiple=True, metavar="NAME", help="Only these campaigns (repeatable).")
@min_effect_option("history.min_effect, else the metric's margin, 0.02")
@click.option("--across-campaigns/--per-campaign", default=None,
              help="Follow each model and environment across campaigns (a campaign per release; each version's "
                   "runs from one campaign), or keep each series inside its campaign (default: "
                   "history.across_campaigns, else per campaign).")
@json_option
@click.option("--fail-on", type=click.Choice(["regression"]), default=None,
              help="Exit 1 when the newest version opens a regression (for CI): after the history is printed, "
                   "with a line on stderr saying what the gate found.")
def history_command(runs_dir: Path, config_path: Path | None, by: str | None, metrics: tuple[str, ...],
                    campaigns: tuple[str, ...], min_effect: float | None, across_campaigns: bool | None,
                    as_json: bool, fail_on: str | None) -> None:
    """Each metric per version (mean, 95% CI, n) and its change points.

    Per campaign, model, environment and metric (with --across-campaigns, per model, environment
    and metric across campaigns, a campaign per release). A change point is reported only when the level
    shifts by at least the minimum effect and the shift is significant at analysis.alpha across
    the series (binary segmentation with Welch tests, Holm-adjusted, and the newest version
    tested on its own; see docs/reference/history.md).
    Exit codes: 0 = done, 1 = --fail-on hit (or an error), 2 = bad invocation. A --fail-on
    hit exits after the history is printed, with one line on stderr naming the gate and what it
    found; an error prints nothing on stdout, only its one line on stderr.
    """
    from sparkreport.analysis.history import UnknownKey, history, history_payload, newest_regressions
    from sparkreport.config import load_config
    from sparkreport.errors import OptionError
    from sparkreport.project import keep_analysis, read_store, store_analysis

    config = load_config(config_path)
    cache = store_analysis(runs_dir, config_path)
    try:
        result = history(read_store(runs_dir, config_path), config.analysis, by=by or config.history.by,
                         metrics=list(metrics) or None, campaigns=list(campaigns) or None,
                         min_effect=min_effect if min_effect is not None else config.history.min_effect, cache=cache,
                         across_campaigns=config.history.across_campaigns if across_campaigns is None
                         else across_campaigns, baseline=config.baseline_of("environment"))
    except UnknownKey as exc:  # a flag's value: a bad invocation; sparkreport.yml's history.by: named at its line
        if exc.option == "--campaign" or by is not None:
            raise OptionError(exc.option, exc.format_message()) from None
        if "history.by" in config.lines:
            raise config.error("history.by", f"history.by: {exc.problem}",
                               fix="set history.by: to one of them, or label the runs with it") from None
        raise
    keep_analysis(cache)
    if as_json:
        click.echo(json.dumps(history_payload(result), indent=2))
    else:
        _print(result)
    regressions = newest_regressions(result) if fail_on == "regression" else []
    if regressions:  # said after the history is printed: an error prints nothing on stdout
        click.echo(f"--fail-on {fail_on}: {gate_finding(result, len(regressions))}", err=True)
        raise SystemExit(1)


def gate_finding(result: History, regressions: int) -> str:
    """What ``--fail-on regression`` found, after the flag on its stderr line: "1 of 4 series
    regressed at the newest version (0.22.0)", counting the series the gate tested (measured in
    the newest version and an earlier one; a series has one change at a version at most)."""
    newest = result.versions[-1]
    tested = sum(1 for s in result.series if len(s.points) > 1 and s.points[-1].version == newest)
    return f"{regressions:,} of {tested:,} series regressed at the newest version ({newest})"


def _print(result: History) -> None:
    from sparkreport.analysis.history import change_sentence

    click.echo(f"versions ({result.column}, {result.order} order): {', '.join(result.versions)}")
    click.echo(f"method: {result.method}; alpha {result.alpha}, minimum effect {result.min_effect:.1%}")
    for s in result.series:
        click.echo()
        click.echo(f"{s.campaign} · {s.model_name} · {s.environment} · {s.metric}")
        print_table([{"version": p.version + (" *" if p.single_run else ""), "n": p.n, "mean": p.mean,
                      "ci_low": p.ci_low, "ci_high": p.ci_high} for p in s.points],
                    ["version", "n", "mean", "ci_low", "ci_high"])
        for c in s.changes:
            click.echo(f"  change: {change_sentence(c)}")
    click.echo()
    if any(p.single_run for s in result.series for p in s.points):
        click.echo("* a single run: no CI, and its version is tested only together with its neighbours")
    changes = result.changes
    spanning = sum(1 for s in result.series if len(s.points) > 1)
    if changes:
        click.echo(f"{len(changes)} change point(s) in {len(result.series)} series")
    elif spanning:
        click.echo(f"no change point in {spanning} series that span two versions or more "
                   f"(of {len(result.series)})")
    elif result.across_campaigns:
        click.echo(f"nothing to compare: none of the {len(result.series)} series spans two versions")
    else:  # nothing was tested: saying "no change point" would claim a flat history
        click.echo(f"nothing to compare: none of the {len(result.series)} series spans two versions "
                   "(a series stays inside its campaign, and no campaign measured a model in two versions; "
                   "--across-campaigns follows a model across a campaign per release)")
