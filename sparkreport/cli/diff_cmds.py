"""`sparkreport diff`: what changed between two sets of runs, as a table, JSON, Markdown or CI gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sparkreport.cli.data_cmds import config_option, print_table
from sparkreport.cli.options import metric_option, min_effect_option

if TYPE_CHECKING:
    from sparkreport.config import ProjectConfig


@click.command("diff")
@click.option("--a", "sel_a", metavar="SELECTOR", help="Side a: KEY=VALUE[,KEY=VALUE] over dataset columns or labels.")
@click.option("--b", "sel_b", metavar="SELECTOR", help="Side b, likewise (e.g. engine_version=1.2.0).")
@click.option("--runs-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("runs"), show_default=True,
              help="The run store both selectors read.")
@click.option("--a-runs", type=click.Path(path_type=Path, file_okay=False), help="A separate run store for side a.")
@click.option("--b-runs", type=click.Path(path_type=Path, file_okay=False), help="A separate run store for side b.")
@config_option
@click.option("--allow-mismatch", multiple=True, metavar="FIELD",
              help="A workload field that may differ between the sides (repeatable).")
@min_effect_option("analysis.equivalence_margin, else 0.02; per metric analysis.margins")
@metric_option
@click.option("--json", "as_json", is_flag=True, help="Print the documented JSON shape.")
@click.option("--markdown", is_flag=True,
              help="Print a pull-request comment (GitHub Markdown): the counts per verdict and the tables "
                   "with a verdict other than unchanged, regressions first; the pairs unchanged in every metric "
                   "named once, their rows folded; campaigns named by the site's titles. Kept within 60,000 "
                   "characters (GitHub takes at most 65,536): a larger diff leaves out the unchanged tables first, "
                   "saying how many and where the whole diff is.")
@click.option("--fail-on", type=click.Choice(["regression", "inconclusive"]), default=None,
              help="Exit 1 when any comparison is regressed (or, with 'inconclusive', regressed or inconclusive): "
                   "after the diff is printed, with a line on stderr saying what the gate found.")
def diff_command(sel_a: str | None, sel_b: str | None, runs_dir: Path, a_runs: Path | None, b_runs: Path | None,
                 config_path: Path | None, allow_mismatch: tuple[str, ...], min_effect: float | None,
                 metrics: tuple[str, ...], as_json: bool, markdown: bool, fail_on: str | None) -> None:
    """Diff two software versions (or any two selections of runs), metric by metric.

    A cell is a model × environment pair; each of its metrics is one comparison, with one
    verdict (improved, regressed, unchanged, inconclusive). A cell whose workload differs
    between the sides is not comparable and is not diffed; a diff where nothing is comparable is an error, and two
    selections of one store that pick the same runs are refused. Exit codes: 0 = no gated
    verdict, 1 = --fail-on hit, nothing compared (or another error), 2 = bad invocation. A
    --fail-on hit exits after the diff is printed, with one line on stderr naming the gate and
    what it found; an error prints nothing on stdout, only its one line on stderr.
    """
    from sparkreport.early import check_selector_campaigns

    if not (sel_a or a_runs) or not (sel_b or b_runs):
        raise click.UsageError("give each side a selector (--a/--b) or a run store (--a-runs/--b-runs)")
    if as_json and markdown:
        raise click.UsageError("choose one of --json and --markdown")
    # Before pandas is imported and the runs loaded: a campaign the store does not hold.
    check_selector_campaigns(a_runs or runs_dir, [("--a", sel_a)] if sel_a else [])
    check_selector_campaigns(b_runs or runs_dir, [("--b", sel_b)] if sel_b else [])
    from sparkreport.analysis.diff import (
        DiffOptions,
        Selector,
        diff,
        model_names,
        nothing_compared,
        same_runs,
        select_sides,
    )
    from sparkreport.config import load_config
    from sparkreport.errors import DataError, OptionError
    from sparkreport.project import read_store

    config = load_config(config_path)
    ds_a = read_store(a_runs or runs_dir, config_path)
    ds_b = ds_a if (b_runs or runs_dir) == (a_runs or runs_dir) else read_store(b_runs or runs_dir, config_path)
    a, b = select_sides(ds_a, ds_b, Selector.parse(sel_a) if sel_a else None,
                        Selector.parse(sel_b) if sel_b else None, config.analysis)
    if ds_a is ds_b and not a.empty and same_runs(a, b):
        flags = "--a/--b" if sel_a or sel_b else "--a-runs/--b-runs"
        raise OptionError(flags, f"both sides select the same {len(a)} run(s) of {a_runs or runs_dir}",
                          fix="a diff of runs with themselves finds nothing; give the sides selectors that differ "
                              "(e.g. --a version=0.21.0 --b version=0.22.0)")
    dopts = DiffOptions(allow_mismatch=list(allow_mismatch), metrics=list(metrics) or None,
                        min_effect=min_effect if min_effect is not None else config.analysis.equivalence_margin,
                        min_effects=dict(config.analysis.margins))
    result = diff(a, b, config.analysis, dopts, baseline=config.baseline_of("environment"))  # the baseline first
    why = nothing_compared(result, a, b)
    if why is not None:  # a gate over no comparison would pass on nothing
        raise DataError(why)
    payload = diff_payload(result, sel_a or str(a_runs), sel_b or str(b_runs))
    if as_json:
        click.echo(json.dumps(payload, indent=2))
    elif markdown:
        from sparkreport.render.diff_comment import diff_comment
        from sparkreport.render.diff_text import sides_sentence
        from sparkreport.render.report import store_campaign_titles

        names = model_names(a, b)
        # each side's campaigns by the titles the site of its run store gives them
        titles_a = store_campaign_titles(ds_a, a_runs or runs_dir, config)
        titles_b = titles_a if ds_b is ds_a else store_campaign_titles(ds_b, b_runs or runs_dir, config)
        sides = None  # the sides in words, as the diff page says them, for two selections of one store
        if sel_a and sel_b and ds_b is ds_a:
            sides = sides_sentence(sel_a, sel_b, titles_a, names, len(a), len(b))
        click.echo(diff_comment(result, payload["a"], payload["b"], names, config, titles=(titles_a, titles_b),
                                sides=sides, whole_diff=whole_diff(click.get_current_context(), config)))
    else:
        _print(payload)
    gated = {"regression": ("regressed",), "inconclusive": ("regressed", "inconclusive")}.get(fail_on or "", ())
    from sparkreport.render.diff_text import verdict_counts

    hits = [said for _verdict, said in verdict_counts(payload["counts"], gated)]
    if hits:  # said after the diff is printed: an error prints nothing on stdout, so a script tells them apart
        from sparkreport.render.markdown import counted

        click.echo(f"--fail-on {fail_on}: {' and '.join(hits)} of "
                   f"{counted(sum(payload['counts'].values()), 'comparison')}", err=True)
        raise SystemExit(1)


def diff_payload(result: Any, a: str, b: str) -> dict[str, Any]:
    """The JSON shape (schema_version 1): sides, what changed, not-comparable cells, per-metric cells."""
    from sparkreport.dataset import frame_rows

    return {
        "schema_version": 1,
        "a": a,
        "b": b,
        "what_changed": result.changed,
        "not_comparable": result.not_comparable,
        "counts": result.counts(),
        "cells": frame_rows(result.cells),
    }


def whole_diff(ctx: click.Context, config: ProjectConfig) -> str:
    """Where the reader of a comment too long for GitHub finds the whole diff, as the end of a
    sentence: the site's page of the named diff with these sides over the project's run store,
    when the site has an address (``site_url`` in mkdocs.yml, or SPARKREPORT_SITE_URL); else
    the output of this command with ``--json``."""
    from sparkreport.errors import BuildError
    from sparkreport.project import is_project_store, store_root
    from sparkreport.render.diffs import named_diff_page
    from sparkreport.site.mkdocs_site import PROJECT_CONFIG, read_project_config, site_url

    given = ctx.params
    root = store_root(config.path)
    page = None
    if given["sel_a"] and given["sel_b"] and not (given["a_runs"] or given["b_runs"]) \
            and is_project_store(Path(given["runs_dir"]), root):
        page = named_diff_page(config.diffs, given["sel_a"], given["sel_b"])
    if page is not None:
        try:
            address = site_url(read_project_config(root / PROJECT_CONFIG))
        except BuildError:  # an mkdocs.yml that does not parse: the build says so; the comment names the command
            address = ""
        if address:
            return f"on [the diff page]({address}{page})"
    return f"in the output of {json_command(ctx)}"


#: What the command of the whole diff leaves out of the one given: ``--json`` takes the place of
#: ``--markdown``, and the gate's exit status is no part of the diff.
NOT_IN_JSON_COMMAND = ("as_json", "markdown", "fail_on")


def json_command(ctx: click.Context) -> str:
    """This ``sparkreport diff`` as it was given, with ``--json`` for ``--markdown`` (and without
    ``--fail-on``): the command whose output is the whole diff, as inline code.

    It is written in one canonical form, which runs the same diff as the command given: the
    options given on the command line and no other (not one that took its default value), in
    the order ``sparkreport diff --help`` lists them, each by its name there with the value it
    was read as — a repeated option once per value, in the order given; a path as given, less a
    trailing slash or a leading ``./``; a number as Python writes it (``0.050`` → ``0.05``) —
    each word quoted for a POSIX shell where it needs it (:func:`shlex.join`), then ``--json``."""
    from click.core import ParameterSource

    from sparkreport.render.diff_text import command_line

    words = ["sparkreport", "diff"]
    for param in ctx.command.params:
        name = param.name or ""
        if not isinstance(param, click.Option) or name in NOT_IN_JSON_COMMAND \
                or ctx.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[name]
        if param.is_flag:
            words.append(param.opts[0] if value else param.secondary_opts[0])
            continue
        words += [word for v in (value if param.multiple else (value,)) for word in (param.opts[0], str(v))]
    return command_line([*words, "--json"])


#: The plain table's columns of a row's change b/a − 1 and its interval's ends, in percent.
CHANGE_COLUMNS = ("change_%", "ci_low_%", "ci_high_%")


def _print(payload: dict[str, Any]) -> None:
    from sparkreport.render.diff_text import change_figures, verdict_counts
    from sparkreport.render.markdown import MISSING

    click.echo(f"a: {payload['a']}\nb: {payload['b']}\n")
    click.echo("How the sides differ:")  # the diff page's and the PR comment's words
    if payload["what_changed"]:
        print_table(payload["what_changed"], ["field", "a", "b"])
    else:
        click.echo("  nothing recorded differs")
    for r in payload["not_comparable"]:
        click.echo(f"not comparable: {r['model']}/{r['environment']}: {r['reason']}")
    click.echo()
    # the change and its interval in percent, with one number of decimals, as the pages print them
    # (--json keeps the ratio's interval and every digit)
    changes = [dict(zip(CHANGE_COLUMNS, (text.replace(MISSING, "-") for text in change_figures(cell)), strict=True))
               for cell in payload["cells"]]
    print_table([cell | change for cell, change in zip(payload["cells"], changes, strict=True)],
                ["model", "environment", "metric", "n_a", "n_b", "mean_a", "mean_b", *CHANGE_COLUMNS, "p_holm",
                 "verdict"])
    click.echo()
    counts = payload["counts"]  # regressions first, as the page and the comment count them
    click.echo(f"{', '.join(words for _verdict, words in verdict_counts(counts))} — of "
               f"{sum(counts.values()):,} comparisons (model × environment × metric)")
