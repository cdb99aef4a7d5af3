"""sparkreport diff: planted changes are found, and only there; mismatches are refused."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sparkreport.analysis import AnalysisOptions
from sparkreport.analysis.diff import DiffOptions, DiffResult, diff
from sparkreport.cli import main
from sparkreport.dataset import Dataset

FAST = AnalysisOptions(bootstrap_resamples=500)


def sides(ds: Dataset) -> tuple[pd.DataFrame, pd.DataFrame]:
    a = ds.runs[ds.runs["ok"].astype(bool)].copy()
    return a, a.copy()


def test_planted_regression_is_found_and_only_there(phase1_dataset: Dataset) -> None:
    a, b = sides(phase1_dataset)
    cell = (b["model"] == "deepseek") & (b["environment"] == "native")
    b.loc[cell, "output_throughput_tok_s"] = b.loc[cell, "output_throughput_tok_s"] * 0.9
    result = diff(a, b, FAST, DiffOptions())
    regressed = result.cells[result.cells["verdict"] == "regressed"]
    assert regressed[["model", "environment", "metric"]].values.tolist() == [
        ["deepseek", "native", "output_throughput_tok_s"]]
    assert regressed["change_pct"].iloc[0] == pytest.approx(-10.0)
    assert not (result.cells["verdict"] == "improved").any()


def test_direction_awareness(phase1_dataset: Dataset) -> None:
    a, b = sides(phase1_dataset)
    cell = (b["model"] == "qwen72b") & (b["environment"] == "container")
    b.loc[cell, "pre_kv_memory_gib"] = b.loc[cell, "pre_kv_memory_gib"] * 0.8  # less memory is better
    result = diff(a, b, FAST, DiffOptions())
    row = result.cells[(result.cells["model"] == "qwen72b") & (result.cells["environment"] == "container")
                       & (result.cells["metric"] == "pre_kv_memory_gib")]
    assert row["verdict"].iloc[0] == "improved"


def test_a_constant_is_stated_not_tested(phase1_dataset: Dataset) -> None:
    """A metric with one value in every run of both sides gets no test and no interval: its exact
    change decides (unchanged below the minimum effect, else improved/regressed by direction)."""
    from sparkreport.analysis.diff import CONSTANT

    a, b = sides(phase1_dataset)
    cell = (a["model"] == "deepseek") & (a["environment"] == "native")
    a.loc[cell, "kv_cache_gib"], b.loc[cell, "kv_cache_gib"] = 40.0, 40.0
    other = (a["model"] == "qwen72b") & (a["environment"] == "native")
    a.loc[other, "kv_cache_gib"], b.loc[other, "kv_cache_gib"] = 40.0, 30.0  # less KV cache: worse
    cells = diff(a, b, FAST, DiffOptions()).cells
    kv = cells[(cells["metric"] == "kv_cache_gib") & (cells["environment"] == "native")].set_index("model")
    assert kv.loc["deepseek", "verdict"] == "unchanged" and kv.loc["qwen72b", "verdict"] == "regressed"
    for model in ("deepseek", "qwen72b"):
        row = kv.loc[model]
        assert row["reason"] == CONSTANT and pd.isna(row["p_holm"]) and pd.isna(row["ratio_ci_low"])
    assert kv.loc["qwen72b", "change_pct"] == pytest.approx(-25.0)


def test_resampled_copy_raises_no_regression(phase1_dataset: Dataset) -> None:
    a, _ = sides(phase1_dataset)
    rng = np.random.default_rng(11)
    b = pd.concat([g.sample(len(g), replace=True, random_state=int(rng.integers(1 << 30)))
                   for _, g in a.groupby(["model", "environment"])])
    result = diff(a, b, FAST, DiffOptions())
    assert not result.cells["verdict"].isin(["regressed", "improved"]).any()


def _simulated(rng: np.random.Generator, n: int = 10) -> pd.DataFrame:
    rows = []
    for model, level in (("m7b", 120.0), ("m70b", 20.0), ("m1b", 400.0)):
        for env in ("native", "container"):
            for i in range(n):
                rows.append({"model": model, "environment": env, "run_id": f"{model}-{env}-{i}",
                             "output_throughput_tok_s": level * rng.normal(1, 0.01),
                             "request_throughput_req_s": level / 128 * rng.normal(1, 0.01),
                             "peak_memory_gib": 50 * rng.normal(1, 0.02),
                             "kv_cache_gib": 30 * rng.normal(1, 0.03)})
    return pd.DataFrame(rows)


def test_false_regression_rate_is_at_most_5_percent() -> None:
    rng = np.random.default_rng(2024)
    trials = 200
    false = 0
    for _ in range(trials):
        result = diff(_simulated(rng), _simulated(rng), FAST, DiffOptions(min_effect=0.0))
        false += bool((result.cells["verdict"] == "regressed").any())
    print(f"false 'regressed' share per diff: {false / trials:.3f}")
    assert false / trials <= 0.05


def test_workload_mismatch_is_not_comparable(phase1_dataset: Dataset) -> None:
    a, b = sides(phase1_dataset)
    b.loc[b["model"] == "deepseek", "output_len"] = 256.0
    result = diff(a, b, FAST, DiffOptions())
    cells = result.cells[result.cells["model"] == "deepseek"]
    assert set(cells["verdict"]) == {"not comparable"}
    assert any("output_len: 128.0 vs 256.0" in r["reason"] for r in result.not_comparable)
    allowed = diff(a, b, FAST, DiffOptions(allow_mismatch=["output_len"]))
    assert "not comparable" not in set(allowed.cells["verdict"])


def test_metric_one_side_lacks_is_missing_not_changed(phase1_dataset: Dataset) -> None:
    a, b = sides(phase1_dataset)
    b["kv_cache_gib"] = np.nan
    result = diff(a, b, FAST, DiffOptions())
    kv = result.cells[result.cells["metric"] == "kv_cache_gib"]
    assert set(kv["verdict"]) == {"missing in b"}


@pytest.fixture()
def two_stores(phase1_store: Path, tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a"
    b = tmp_path / "b"
    shutil.copytree(phase1_store, a)
    shutil.copytree(phase1_store, b)
    for run_json in b.glob("phase1/gpt120b-container-*/run.json"):
        data = json.loads(run_json.read_text())
        data["metrics"]["output_throughput_tok_s"] *= 0.85
        run_json.write_text(json.dumps(data))
    return a, b


def test_a_rows_interval_is_printed_in_percent_like_its_change(two_stores: tuple[Path, Path]) -> None:
    """A row printed "-15.00%" beside an interval of the ratio, "0.846–0.854": one quantity in two
    units and precisions. The plain table, the comment and the page print the interval in percent
    with the change's decimals ("-15.00% (-15.42 to -14.58)"); --json keeps the ratio's interval."""
    from sparkreport.render.precision import deltas

    a, b = two_stores
    runner = CliRunner()
    args = ["diff", "--a-runs", str(a), "--b-runs", str(b), "--metric", "output_throughput_tok_s"]
    [cell] = [c for c in json.loads(runner.invoke(main, [*args, "--json"]).stdout)["cells"]
              if c["model"] == "gpt120b" and c["environment"] == "container"]
    assert 0.8 < cell["ratio_ci_low"] < cell["ratio"] < cell["ratio_ci_high"] < 0.9  # the JSON as it was
    change, low, high = deltas(cell["change_pct"], (cell["ratio_ci_low"] - 1) * 100, (cell["ratio_ci_high"] - 1) * 100)
    assert change == "-15.00" and all(len(text.split(".")[1]) == 2 for text in (low, high))
    table = runner.invoke(main, args).stdout.splitlines()
    header = next(line for line in table if line.startswith("model "))
    assert header.split()[7:10] == ["change_%", "ci_low_%", "ci_high_%"]
    row = next(line.split() for line in table if line.startswith("gpt120b ") and " container " in line)
    assert row[7:10] == [change, low, high]
    comment = runner.invoke(main, [*args, "--markdown"]).stdout
    assert "| Metric | a | b | Change (95% CI) | p (Holm) | Verdict |" in comment
    assert f" | {change}% ({low} to {high}) | " in comment


def test_cli_three_outputs_and_gate(two_stores: tuple[Path, Path]) -> None:
    a, b = two_stores
    runner = CliRunner()
    args = ["diff", "--a-runs", str(a), "--b-runs", str(b), "--metric", "output_throughput_tok_s"]
    table = runner.invoke(main, args)
    assert table.exit_code == 0, table.output
    assert "gpt120b   container    output_throughput_tok_s" in table.output and "regressed" in table.output
    payload = json.loads(runner.invoke(main, [*args, "--json"]).output)
    assert payload["schema_version"] == 1 and payload["counts"]["regressed"] == 1
    assert [c["verdict"] for c in payload["cells"] if c["model"] == "gpt120b" and c["environment"] == "container"] == [
        "regressed"]
    markdown = runner.invoke(main, [*args, "--markdown"]).output
    assert markdown.startswith(f"### sparkreport diff: `{a}` → `{b}`")
    assert markdown.split("\n")[2] == "**⚠\u00a01 regressed**, 5 unchanged — of 6 comparisons (model × environment × metric)."
    results = markdown[markdown.index("#### Results"):markdown.index("<details>")]  # the regression, outside the fold
    assert "**gpt-oss-120b · container**" in results and "| Output throughput (tok/s) | 120.4 | 102.3 | -15.00% (" in results
    assert results.count("**⚠\u00a0regressed**") == 1 and len(table_rows(results)) == 1
    gated = runner.invoke(main, [*args, "--fail-on", "regression"])  # the diff printed, then the gate said
    assert (gated.exit_code, gated.stdout, gated.stderr) == (1, table.output,
                                                             "--fail-on regression: 1 regressed of 6 comparisons\n")
    gated = runner.invoke(main, [*args, "--json", "--fail-on", "inconclusive"])
    assert gated.exit_code == 1 and json.loads(gated.stdout)["counts"]["regressed"] == 1
    assert gated.stderr == "--fail-on inconclusive: 1 regressed of 6 comparisons\n"
    copies = runner.invoke(main, ["diff", "--a-runs", str(a), "--b-runs", str(b), "--metric", "kv_cache_gib",
                                  "--fail-on", "regression"])
    assert copies.exit_code == 0 and copies.output.endswith(
        "\n4 inconclusive, 2 unchanged — of 6 comparisons (model × environment × metric)\n")  # two stores: the same run ids


def test_a_diff_of_runs_with_themselves_is_refused(phase1_store: Path) -> None:
    """`--a version=0.21.0 --b version=0.22.0` with both naming the same version reported
    '3 unchanged': a gate that cannot fail. Both sides selecting the same runs is a bad invocation."""
    fix = ("a diff of runs with themselves finds nothing; give the sides selectors that differ (e.g. --a "
           "version=0.21.0 --b version=0.22.0)")
    for args, flags, n in ((["--a", "environment=native", "--b", "environment=native"], "--a/--b", 33),
                           (["--a", "campaign=phase1", "--b", "model=deepseek,environment=native"], None, 0),
                           (["--a-runs", str(phase1_store), "--b-runs", str(phase1_store)], "--a-runs/--b-runs", 63)):
        result = CliRunner().invoke(main, ["diff", "--runs-dir", str(phase1_store), *args, "--fail-on", "regression"])
        if flags is None:  # overlapping sides are fine
            assert result.exit_code == 0, result.output
            continue
        assert (result.exit_code, result.output) == (
            2, f"Error: {flags}: both sides select the same {n} run(s) of {phase1_store} — {fix}\n")


def test_a_diff_that_compares_nothing_is_an_error_not_a_passing_gate(two_stores: tuple[Path, Path]) -> None:
    """Every cell not comparable printed an empty table and exited 0 under --fail-on inconclusive. It
    names the first cell, as the diff lists them: the baseline (native) first."""
    a, b = two_stores
    for run_json in b.glob("phase1/*/run.json"):
        data = json.loads(run_json.read_text())
        data["workload"]["output_len"] = 256
        run_json.write_text(json.dumps(data))
    runner = CliRunner()
    result = runner.invoke(main, ["diff", "--a-runs", str(a), "--b-runs", str(b), "--fail-on", "inconclusive"])
    assert (result.exit_code, result.output) == (
        1, "Error: nothing to compare: the workload differs in every cell both sides measured (deepseek/native: "
           "output_len: 128.0 vs 256.0) — pass --allow-mismatch FIELD to diff them anyway\n")
    result = runner.invoke(main, ["diff", "--runs-dir", str(a), "--a", "model=deepseek", "--b", "model=qwen72b",
                                  "--fail-on", "inconclusive"])
    assert (result.exit_code, result.output) == (
        1, "Error: nothing to compare: no model × environment cell has runs on both sides — models: a has deepseek, "
           "b has qwen72b\n")


def test_cli_selectors_and_usage_errors(phase1_store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["diff", "--runs-dir", str(phase1_store), "--a", "environment=native"])
    assert result.exit_code == 2 and "give each side a selector" in result.output
    result = runner.invoke(main, ["diff", "--runs-dir", str(phase1_store), "--a", "nope=1", "--b", "campaign=phase1"])
    assert result.exit_code == 1 and "no column or label 'nope'" in result.output
    result = runner.invoke(main, ["diff", "--runs-dir", str(phase1_store), "--a", "environment=native",
                                  "--b", "environment=container"])
    # cells are model × environment: two environments share none, so nothing is compared
    assert (result.exit_code, result.output) == (
        1, "Error: nothing to compare: no model × environment cell has runs on both sides — environments: a has "
           "native, b has container\n")
    result = runner.invoke(main, ["diff", "--runs-dir", str(phase1_store), "--a", "iteration=1",
                                  "--b", "iteration=2", "--allow-mismatch", "num_requests_planned"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("a: iteration=1\nb: iteration=2\n\nHow the sides differ:\n")  # that first
    # the counts last, regressions first, as the diff page and the PR comment count them
    assert re.search(r"\n(\d+ \w+(, \d+ [\w ]+)*) — of \d+ comparisons \(model × environment × metric\)\n$",
                     result.output), result.output[-300:]


def test_named_diff_page_on_the_default_site(tmp_path: Path) -> None:
    """The embedded runs' example diff: the H100 control campaign, cold vs warm page cache."""
    from sparkreport.render import RenderOptions, render

    repo = Path(__file__).resolve().parents[1]
    shutil.copy(repo / "sparkreport.yml", tmp_path / "sparkreport.yml")
    result = render(RenderOptions(runs_dir=repo / "runs", project_root=tmp_path,
                                  config_path=tmp_path / "sparkreport.yml"))
    page = (result.docs_dir / "diffs" / "cold-vs-warm-cache" / "index.md").read_text(encoding="utf-8")
    assert page.startswith("# H100 control: cold vs warm page cache")
    changed = page[page.index("## How the sides differ"):page.index("## Results")]
    assert "| cache (label) | cold | warm |" in changed
    # the sides in words, the selectors where a reader types them
    assert page.split("\n")[2:4] == [
        "Both sides: campaign “H100 control: native vs cgroup”. Side **a**: cache cold (40 runs); side **b**: "
        "cache warm (40 runs).",
        # the store is outside this project: the command names it, as the reader must
        f"The same diff on the command line: `sparkreport diff --runs-dir {shlex.quote(str(repo / 'runs'))} "
        "--a campaign=gpu-torch-native-vs-cgroup,cache=cold --b campaign=gpu-torch-native-vs-cgroup,cache=warm`."]
    assert "plan" not in changed  # per-run identifiers are not "changes"
    # every comparison unchanged: the page opens on one sentence that says so, with the span of the
    # changes, the minimum effect and the pairs, and the tables wait folded below it (28 rows of
    # "unchanged" were ~5000 px). It says so once: the headline said "Of 28 comparisons (…): 28
    # unchanged." and the Results section opened on "All 28 comparisons are unchanged".
    assert page.split("\n")[5] == SHIPPED_ALL_UNCHANGED
    assert page.count("are unchanged") == 1 and "28 unchanged" not in page
    results = page[page.index("## Results"):]
    assert results.split("\n")[2].startswith("A comparison is `improved` or `regressed` only when")
    assert not [line for line in results.splitlines() if line.startswith("|")]  # no table outside the fold
    folded = fold_of(results, "4 tables of unchanged comparisons")
    # one table per model and environment, named above it (a nine-column table was cut at 1280 px)
    assert folded.count("| Metric |") == 4 and len(table_rows(folded)) == 28
    assert all(row.endswith((" | unchanged |", " | unchanged † |")) for row in table_rows(folded))  # not bold
    native = folded[folded.index("**Llama-3-8B shape (random weights) · native**"):]  # the name the charts show
    # the change and its interval as one quantity: in percent, with one number of decimals
    assert native.split("\n")[2] == "| Metric | a | b | Change (95% CI) | p (Holm) | Verdict |"
    assert native.split("\n")[4].startswith("| Output throughput (tok/s) |")  # primary metrics first, as elsewhere
    table = native[:native.index("\n\n**") if "\n\n**" in native else None]
    # a constant on both sides is stated, not tested: no interval, no p-value, marked †
    assert "| KV cache (GiB) | 57.19 | 57.19 | 0.00% | — | unchanged † |" in table
    # changes to two decimals, as Home's cells (a -0.07% change was "-0.1%" beside "+0.03%"); the
    # means to the decimal the change's interval leaves uncertain (±1.4 ms: whole ms)
    assert "| Time to first token (mean, ms) | 1,219 | 1,218 | -0.07% (-0.23 to +0.09) |" in table
    assert "the minimum effect (2%)" in page and "(marked †) is not tested" in page
    charts = {p.name for p in (result.docs_dir / "diffs" / "cold-vs-warm-cache" / "charts").glob("*.vl.json")}
    assert {"output_throughput_tok_s-sides.vl.json", "output_throughput_tok_s-ratio.vl.json"} <= charts
    # the charts, of nothing but unchanged comparisons, folded too (they were ~2400 px of the page)
    shown, fold = charts_of(page)
    assert shown == [] and fold is not None and fold[0] == "10 charts of unchanged comparisons"
    assert fold[1][:2] == ["output_throughput_tok_s-sides", "output_throughput_tok_s-ratio"]  # as the tables order
    assert len(fold[1]) == 10 and {f"{name}.vl.json" for name in fold[1]} <= charts
    # /diffs/ is a page too (it was a 404): every diff, its sides, their runs and its verdicts
    overview = (result.docs_dir / "diffs" / "index.md").read_text(encoding="utf-8")
    row = ("| [H100 control: cold vs warm page cache](cold-vs-warm-cache/index.md) | "
           "campaign “H100 control: native vs cgroup” | cache cold | cache warm | 40 / 40 | 28 unchanged |")
    assert overview.startswith("# Diffs\n") and row in overview.splitlines()
    assert ("Diffs", [("Overview", "diffs/index.md"),
                      ("H100 control: cold vs warm page cache", "diffs/cold-vs-warm-cache/index.md")]) in result.nav


def test_a_diff_pages_command_is_the_same_diff_as_written(tmp_path: Path) -> None:
    """"The same diff on the command line" left out the named diff's allow_mismatch and metrics
    (its command diffed every metric and refused the pairs it allows), and escaped its selectors
    for Markdown inside the code span, where the backslash shows (`engine\\_version=1.0`). It is
    written as the comment's command is (diff_text.command_line), and gives the page's verdicts."""
    from sparkreport.render import RenderOptions, render

    runs = write_versions_store(tmp_path / "runs", regressed=("model-c", "native"))
    for run_json in runs.glob("nightly/model-e-docker-1.1-*/run.json"):  # a pair the diff allows to differ
        data = json.loads(run_json.read_text())
        data["workload"]["output_len"] = 256
        run_json.write_text(json.dumps(data))
    (tmp_path / "sparkreport.yml").write_text(
        "static_charts: posts\ndiffs:\n  - name: release\n    a: engine_version=1.0\n    b: engine_version=1.1\n"
        "    allow_mismatch: [output_len]\n    metrics: [output_throughput_tok_s]\n", encoding="utf-8")
    page = (render(RenderOptions(runs_dir=runs, project_root=tmp_path)).docs_dir / "diffs" / "release"
            / "index.md").read_text(encoding="utf-8")
    command = ("sparkreport diff --a engine_version=1.0 --b engine_version=1.1 --allow-mismatch output_len "
               "--metric output_throughput_tok_s")
    assert page.split("\n")[3] == f"The same diff on the command line: `{command}`."
    lead = "**⚠\u00a01 regressed**, 9 unchanged — of 10 comparisons (model × environment × metric)."
    assert page.split("\n")[5] == lead and "Not comparable" not in page
    result = CliRunner().invoke(main, [*command.split()[1:], "--runs-dir", str(runs),
                                       "--config", str(tmp_path / "sparkreport.yml"), "--markdown"])
    assert result.exit_code == 0 and result.output.split("\n")[4] == lead  # the page's verdicts


def charts_of(page: str) -> tuple[list[str], tuple[str, list[str]] | None]:
    """The names of a diff page's charts shown, and the title and charts of its fold of charts
    (``<details class="note">``, None when there is none)."""
    import re

    chart = re.compile(r'<div class="sparkreport-chart" id="chart-([^"]+)"')
    start = page.find('<details class="note"><summary>')
    if start < 0:
        return chart.findall(page), None
    end = page.index("</details>", start)
    title = page[start + len('<details class="note"><summary>'):page.index("</summary>", start)]
    return chart.findall(page[:start] + page[end:]), (title, chart.findall(page[start:end]))


def fold_of(text: str, title: str) -> str:
    """The Markdown inside the collapsible box ``??? note "title"`` of ``text``, unindented."""
    lines = text[text.index(f'??? note "{title}"\n\n'):].split("\n")[2:]
    inside = itertools.takewhile(lambda line: not line or line.startswith("    "), lines)
    return "\n".join(line[4:] for line in inside)


def write_versions_store(root: Path, regressed: tuple[str, str], improved: tuple[str, str] | None = None,
                         campaign: str = "nightly") -> Path:
    """Five models in two environments, five runs each of versions 1.0 and 1.1 (seeded): the
    ``regressed`` (model, environment) loses 10% output throughput in 1.1, the ``improved`` one
    gains 10%; every other cell's metrics move by noise of 0.3%, well within the 2% minimum effect.
    ``campaign``: the runs' campaign (``{version}`` in it: the run's version)."""
    from sparkreport.schema import Environment, Model, RunRecord, Software, Workload
    from sparkreport.store import RunStore

    rng = np.random.default_rng(7)
    store = RunStore(root)
    for day, version in enumerate(("1.0", "1.1")):
        for model in ("model-a", "model-b", "model-c", "model-d", "model-e"):
            for env in ("docker", "native"):
                level = {regressed: 0.9, improved: 1.1}.get((model, env), 1.0) if version == "1.1" else 1.0
                for i in range(5):
                    store.write(RunRecord(
                        run_id=f"{model}-{env}-{version}-{i}", iteration=i + 1,
                        campaign=campaign.format(version=version),
                        started_at=f"2026-01-0{day + 1}T0{i}:00:00Z", model=Model(id=model, name=model),
                        environment=Environment(name=env, kind="container" if env == "docker" else "native"),
                        workload=Workload(num_requests=100, input_len=128, output_len=128, concurrency=8),
                        software=Software(engine="trtllm", engine_version=version),
                        metrics={"output_throughput_tok_s": round(1000.0 * level * (1 + rng.normal(0, 0.003)), 3),
                                 "peak_memory_gib": round(40.0 * (1 + rng.normal(0, 0.003)), 4)},
                        labels={"version": version}), [])
    return root


def test_a_diff_page_puts_what_changed_first_and_names_the_unchanged_once(tmp_path: Path) -> None:
    """One cell of ten regressed: its table comes first, in full; the nine unchanged in every metric
    are named once in a sentence (cut short past eight) and their tables are folded — every
    number is still on the page, in one table row per comparison."""
    from sparkreport.render import RenderOptions, render

    runs = write_versions_store(tmp_path / "runs", regressed=("model-c", "native"))
    (tmp_path / "sparkreport.yml").write_text(
        "static_charts: posts\ndiffs:\n  - name: release\n    a: campaign=nightly,label.version=1.0\n"
        "    b: campaign=nightly,label.version=1.1\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    page = (result.docs_dir / "diffs" / "release" / "index.md").read_text(encoding="utf-8")
    assert "**⚠\u00a01 regressed**, 19 unchanged — of 20 comparisons (model × environment × metric)." in page
    results = page[page.index("## Results"):page.index('<div class="sparkreport-chart"')]
    assert "comparisons are unchanged**" not in results  # the lead sentence is for a page of nothing else
    # the changed cell in full, first, at the left margin
    first = results.index("**model-c · native**")
    assert results[first:].split("\n")[4].startswith("| Output throughput (tok/s) | 1,0")
    assert "**⚠\u00a0regressed**" in results[first:].split("\n\n")[1]
    shown = [line for line in results.splitlines() if line.startswith("| ") and not line.startswith("| Metric")]
    assert len(shown) == 2  # its two metrics: the only table outside the fold
    # the others, said once — no sentence per metric — and cut short as the pages cut lists
    said = [line for line in results.splitlines() if line.startswith("The other ")]
    assert len(said) == 1 and results.index(said[0]) > first
    assert said[0].startswith("The other 9 model × environment pairs are unchanged in every metric "
                              "(18 comparisons, changes from -")
    assert said[0].endswith("): model-a · native, model-a · docker, model-b · native, model-b · docker, "
                            "model-c · docker, model-d · native, model-d · docker, model-e · native, … and 1 more.")
    folded = fold_of(results, "9 tables of unchanged comparisons")
    assert folded.count("| Metric |") == 9 and len(table_rows(folded)) == 18 and "**" not in "".join(table_rows(folded))
    assert "**model-e · native**" in folded and "model-c · native" not in folded
    # every comparison keeps its row, with both means
    cells = [line for text in (results, folded) for line in text.splitlines()
             if line.startswith("| ") and line.split(" | ")[1][:1].isdigit()]
    assert len(cells) == 20
    assert "{'" not in results and "['" not in results  # no dict or list reprs
    # p-values as every page writes them: the regression's (1e-9 or so) is "< 0.001", not "0.0000"
    assert p_column(results[first:].split("\n")[4]) == "<\u00a00.001"
    assert_p_values_as_the_site_writes_them(cells)
    # each verdict in its colour, fixed in the spec (Vega's category colours went by the order of the
    # data: a page whose first cell regressed drew regressed blue and unchanged orange)
    ratio = json.loads((result.docs_dir / "diffs" / "release" / "charts" / "output_throughput_tok_s-ratio.vl.json")
                       .read_text(encoding="utf-8"))
    colour = ratio["layer"][1]["encoding"]["color"]
    assert {row["verdict"] for row in ratio["data"]["values"]} == {"regressed", "unchanged"}
    assert dict(zip(colour["scale"]["domain"], colour["scale"]["range"], strict=True)) == {
        "regressed": "#D55E00", "improved": "#009E73", "unchanged": "#0072B2", "inconclusive": "#BBBBBB"}
    assert colour["legend"]["values"] == ["regressed", "unchanged"]
    # the charts of the metric with the regression shown; those of the metric unchanged everywhere folded
    assert charts_of(page) == (["output_throughput_tok_s-sides", "output_throughput_tok_s-ratio"],
                               ("2 charts of unchanged comparisons", ["peak_memory_gib-sides", "peak_memory_gib-ratio"]))


def p_column(row: str) -> str:
    """The p (Holm) column of a row of a diff table (page or comment)."""
    return row.split(" | ")[4]


def assert_p_values_as_the_site_writes_them(rows: list[str]) -> None:
    """Every p of ``rows`` as :func:`sparkreport.render.markdown.pvalue` writes it: three
    decimals, or "< 0.001" (never "0.0000"), or "—" for a metric stated, not tested."""
    import re

    assert rows and all(re.fullmatch("<\u00a00\\.001|[01]\\.\\d{3}|—", p_column(row)) for row in rows), rows


def test_unchanged_groups_in_words() -> None:
    """The sentence's parts: one pair or many, a change span or a single change."""
    from sparkreport.render.diff_text import diff_groups, unchanged_groups

    def cell(model: str, environment: str, change: float | None, verdict: str = "unchanged") -> dict[str, object]:
        return {"model": model, "model_name": model.upper(), "environment": environment, "change_pct": change,
                "verdict": verdict}

    groups = diff_groups([cell("b", "native", 0.5), cell("a", "native", -1.25), cell("a", "docker", 3.0, "regressed")])
    assert [(g["name"], g["unchanged"]) for g in groups] == [("A · docker", False), ("A · native", True),
                                                             ("B · native", True)]
    assert unchanged_groups(groups) == {"groups": 2, "comparisons": 2, "every": False, "names": "A · native and B · native",
                                        "changes": "changes from -1.25% to +0.50%"}
    assert unchanged_groups(diff_groups([cell("a", "native", 0.0), cell("a", "native", 0.0)])) == {
        "groups": 1, "comparisons": 2, "every": True, "names": "A · native", "changes": "every change of 0.00%"}
    assert unchanged_groups(diff_groups([cell("a", "native", 3.0, "regressed")])) is None


#: The one sentence the shipped cold-vs-warm diff opens on, its page and its pull-request comment alike.
SHIPPED_ALL_UNCHANGED = (
    "**All 28 comparisons (model × environment × metric) are unchanged** — changes from -0.07% to +0.05%, "
    "each within ± the minimum effect (2%) — in the 4 model × environment pairs: Llama-3-8B shape (random "
    "weights) · native, Llama-3-8B shape (random weights) · cgroup-16g, Qwen2-0.5B shape (random weights) · "
    "native and Qwen2-0.5B shape (random weights) · cgroup-16g.")  # each model's baseline first


#: `sparkreport diff --markdown` of the shipped store and of a store of two versions, kept as golden
#: files: regenerate after an intended change with ``SPARKREPORT_UPDATE_GOLDEN=1 pytest
#: tests/test_diff.py`` and read the diff.
COMMENT_GOLDEN = Path(__file__).resolve().parent / "golden" / "diff"
SHIPPED_SIDES = ["--a", "campaign=gpu-torch-native-vs-cgroup,cache=cold",
                 "--b", "campaign=gpu-torch-native-vs-cgroup,cache=warm"]
RELEASE_SIDES = ["--a", "label.version=1.0", "--b", "label.version=1.1"]


def comment_args(case: str, tmp_path: Path) -> list[str]:
    """The `sparkreport diff` arguments of a comment case: the shipped cold-vs-warm diff (every
    comparison unchanged) or a release of ten pairs, one regressed and one improved."""
    repo = Path(__file__).resolve().parents[1]
    if case == "shipped-cold-vs-warm":
        return ["diff", "--runs-dir", str(repo / "runs"), "--config", str(repo / "sparkreport.yml"), *SHIPPED_SIDES]
    runs = write_versions_store(tmp_path / "runs", regressed=("model-c", "native"), improved=("model-a", "docker"))
    return ["diff", "--runs-dir", str(runs), *RELEASE_SIDES]


def details_of(comment: str) -> tuple[str, str]:
    """The ``<details>`` block of a comment: its summary and the Markdown inside it."""
    start = comment.index("<details><summary>")
    summary = comment[start + len("<details><summary>"):comment.index("</summary>", start)]
    inside = comment[comment.index("</summary>\n\n", start) + len("</summary>\n\n"):comment.index("\n</details>\n")]
    return summary, inside


def table_rows(markdown: str) -> list[str]:
    """The body rows of the comment's verdict tables (a row per comparison: six columns)."""
    return [line for line in markdown.splitlines() if line.startswith("| ") and line.endswith(" |")
            and line.count(" | ") == 5 and not line.startswith("| Metric |")]


@pytest.mark.parametrize("case", ["shipped-cold-vs-warm", "release-regressed-and-improved"])
def test_pr_comment_golden(tmp_path: Path, case: str) -> None:
    """The whole comment, exactly: the scaffold's workflow posts it on a pull request."""
    import os

    result = CliRunner().invoke(main, [*comment_args(case, tmp_path), "--markdown"])
    assert result.exit_code == 0, result.output
    golden = COMMENT_GOLDEN / f"{case}.md"
    if os.environ.get("SPARKREPORT_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(result.output, encoding="utf-8")
    assert result.output == golden.read_text(encoding="utf-8")


def page_and_comment(case: str, tmp_path: Path) -> tuple[str, str]:
    """The diff page and the pull-request comment of one diff: the shipped cold-vs-warm diff
    (every comparison unchanged, constants among them), or a release of ten pairs, one regressed,
    one improved and one not comparable (side b ran it with longer outputs)."""
    from sparkreport.render import RenderOptions, render

    repo = Path(__file__).resolve().parents[1]
    if case == "shipped-cold-vs-warm":
        runs, config = repo / "runs", tmp_path / "sparkreport.yml"
        shutil.copy(repo / "sparkreport.yml", config)
        page_path, sides = "diffs/cold-vs-warm-cache/index.md", SHIPPED_SIDES
    else:
        runs = write_versions_store(tmp_path / "runs", regressed=("model-c", "native"), improved=("model-a", "docker"))
        for run_json in runs.glob("nightly/model-e-docker-1.1-*/run.json"):
            data = json.loads(run_json.read_text())
            data["workload"]["output_len"] = 256
            run_json.write_text(json.dumps(data))
        config = tmp_path / "sparkreport.yml"
        config.write_text("static_charts: posts\ndiffs:\n  - name: release\n    a: label.version=1.0\n"
                          "    b: label.version=1.1\n", encoding="utf-8")
        page_path, sides = "diffs/release/index.md", RELEASE_SIDES
    page = (render(RenderOptions(runs_dir=runs, project_root=tmp_path, config_path=config)).docs_dir
            / page_path).read_text(encoding="utf-8")
    comment = CliRunner().invoke(main, ["diff", "--runs-dir", str(runs), "--config", str(config), *sides,
                                        "--markdown"])
    assert comment.exit_code == 0, comment.output
    return page, comment.output


@pytest.mark.parametrize("case", ["shipped-cold-vs-warm", "release-regressed-and-improved"])
def test_the_diff_page_and_the_comment_say_the_same_in_the_same_words(tmp_path: Path, case: str) -> None:
    """The page (a Jinja template) and the comment (Python) each wrote the same sentences and
    tables, and drifted apart: the lead, what the verdicts mean, the verdict column and the
    heading of the sides' differences were worded two ways. Both are written by
    sparkreport.render.diff_text now: every line of the comment is a line of the page — the sides
    in words, the lead, the headings, How the sides differ, the pairs not comparable, every table
    row, the sentence on the unchanged pairs, the fold's title and what the verdicts mean — but
    for its own heading of selectors and its fold's HTML; and every table row of the page is in
    the comment."""
    page, comment = page_and_comment(case, tmp_path)
    page_lines = [line.removeprefix("    ") for line in page.splitlines()]  # the fold's tables, unindented
    own = []  # the comment's own lines: its heading, its fold
    for line in comment.splitlines():
        if line.startswith("#### "):
            assert f"## {line.removeprefix('#### ')}" in page_lines  # a section, one level down
        elif line.startswith("<details><summary>"):
            title = line.removeprefix("<details><summary>").removesuffix("</summary>")
            assert f'??? note "{title}"' in page_lines  # the fold's title
        elif line.startswith("### sparkreport diff: ") or line == "</details>":
            own.append(line)
        else:
            assert line in page_lines, line
    assert own == [comment.splitlines()[0], *(["</details>"] if "<details>" in comment else [])]
    assert table_rows(comment) and sorted(table_rows(comment)) == sorted(table_rows("\n".join(page_lines)))
    lead = comment.splitlines()[4]
    assert lead.startswith("**All 28 comparisons" if case == "shipped-cold-vs-warm" else "**⚠\u00a01 regressed**, ")
    assert page.count(lead) == 1  # the page opens on it too
    if case != "shipped-cold-vs-warm":
        assert "- model-e / docker: " in comment and "#### Not comparable" in comment


def test_a_pr_comment_of_nothing_but_unchanged_says_so_and_folds_every_row(tmp_path: Path) -> None:
    """28 of 28 comparisons unchanged was a wall of 28 identical rows: now one sentence that says
    so, the four pairs named once, and their rows inside a <details> block, every number still
    there. It says so once, as the diff page does (the headline said "All 28 comparisons (…) are
    unchanged." and Results opened on "The 4 model × environment pairs are unchanged in every
    metric"): the page's sentence, with the span of the changes, the minimum effect and the pairs,
    takes the headline's place, and Results opens on the fold."""
    runner = CliRunner()
    args = comment_args("shipped-cold-vs-warm", tmp_path)
    comment = runner.invoke(main, [*args, "--markdown"]).output
    lines = comment.split("\n")
    assert lines[2] == ("Both sides: campaign “H100 control: native vs cgroup”. Side **a**: cache cold (40 runs); "
                        "side **b**: cache warm (40 runs).")  # the campaign by its title, as the diff page names it
    assert lines[4] == SHIPPED_ALL_UNCHANGED  # the page's own (test_named_diff_page_on_the_default_site)
    assert comment.count("unchanged in every metric") == 0 and comment.count(" are unchanged") == 1
    # what changed, worded as the page's table words it (it printed the field, `label.cache`)
    assert "\n| Field | a | b |\n|---|---|---|\n| cache (label) | cold | warm |\n\n" in comment
    assert "label.cache" not in comment.split("#### Results")[0]
    results = comment[comment.index("#### Results\n"):]
    assert results.split("\n")[2] == "<details><summary>4 tables of unchanged comparisons</summary>"
    summary, inside = details_of(comment)
    assert summary == "4 tables of unchanged comparisons"
    assert not table_rows(results.replace(inside, ""))  # no row outside the fold
    assert inside.count("| Metric |") == 4 and len(table_rows(inside)) == 28
    assert "**unchanged**" not in comment and "⚠" not in comment  # nothing to draw the eye to
    # every number of the diff, as the page writes it
    cells = json.loads(runner.invoke(main, [*args, "--json"]).output)["cells"]
    assert_every_cell_has_its_row(cells, inside)


def assert_every_cell_has_its_row(cells: list[dict[str, object]], markdown: str) -> None:
    """Each cell × metric of the --json output is one row of ``markdown``, with both means, its
    change with the CI of its ratio in percent (the same decimals) and its verdict."""
    from sparkreport.analysis.diff import CONSTANT
    from sparkreport.render.diff_text import side_places
    from sparkreport.render.markdown import MISSING, num
    from sparkreport.render.precision import deltas

    rows = table_rows(markdown)
    assert len(rows) == len(cells)
    for cell in cells:
        low, high = (None if cell[end] is None else (float(cell[end]) - 1) * 100  # type: ignore[arg-type]
                     for end in ("ratio_ci_low", "ratio_ci_high"))
        said = deltas(cell["change_pct"], low, high)
        change = (MISSING if cell["change_pct"] is None else f"{said[0]}% ({said[1]} to {said[2]})" if low is not None
                  else f"{said[0]}%" if cell["reason"] == CONSTANT else f"{said[0]}% (no CI)")
        d = side_places(cell)  # both means to the decimal the change's interval leaves uncertain
        numbers = f" | {num(cell['mean_a'], digits=d)} | {num(cell['mean_b'], digits=d)} | {change} | "
        assert any(numbers in row and str(cell["verdict"]) in row for row in rows), (cell, numbers)


def test_a_pr_comment_puts_the_regression_first_and_folds_the_unchanged(tmp_path: Path) -> None:
    """One pair regressed and one improved of ten: the headline counts them, regression first and
    marked; the regressed pair's table opens the results though its model sorts after the improved
    one's (the page keeps model order); the eight others are named once and folded."""
    runner = CliRunner()
    args = comment_args("release-regressed-and-improved", tmp_path)
    comment = runner.invoke(main, [*args, "--markdown"]).output
    assert comment.split("\n")[:5] == [
        "### sparkreport diff: `label.version=1.0` → `label.version=1.1`", "",
        "Side **a**: version 1.0 (50 runs); side **b**: version 1.1 (50 runs).", "",
        "**⚠\u00a01 regressed**, **1 improved**, 18 unchanged — of 20 comparisons (model × environment × metric)."]
    results = comment[comment.index("#### Results\n"):comment.index("<details>")]
    blocks = results.split("\n\n")
    assert blocks[1:3] == ["**model-c · native**", blocks[2]] and blocks[3] == "**model-a · docker**"
    regressed, improved = blocks[2].split("\n"), blocks[4].split("\n")
    assert regressed[2].startswith("| Output throughput (tok/s) | 1,0") and regressed[2].endswith(" | **⚠\u00a0regressed** |")
    assert improved[2].startswith("| Output throughput (tok/s) | ") and improved[2].endswith(" | **improved** |")
    assert p_column(regressed[2]) == p_column(improved[2]) == "<\u00a00.001"  # were "0.0000"
    assert_p_values_as_the_site_writes_them(table_rows(comment))
    assert len(table_rows(results)) == 4  # the two pairs' two metrics each, outside the fold
    said = [line for line in results.splitlines() if line.startswith("The other ")]
    assert said == [
        "The other 8 model × environment pairs are unchanged in every metric (16 comparisons, changes from "
        f"{said[0].split('changes from ')[1].split(')')[0]}): model-a · native, model-b · native, model-b · docker, "
        "model-c · docker, model-d · native, model-d · docker, model-e · native and model-e · docker."]
    summary, inside = details_of(comment)
    assert summary == "8 tables of unchanged comparisons" and len(table_rows(inside)) == 16
    assert "model-c · native" not in inside and "model-a · docker" not in inside
    assert comment.rstrip("\n").split("\n")[-1].startswith("A comparison is `improved` or `regressed` only when the "
                                                            "Holm-adjusted Welch p-value is below 0.05 **and** the "
                                                            "change is at least the minimum effect (2%)")
    cells = json.loads(runner.invoke(main, [*args, "--json"]).output)["cells"]
    assert_every_cell_has_its_row(cells, comment)
    assert runner.invoke(main, [*args, "--markdown", "--fail-on", "regression"]).exit_code == 1


def titled_campaign_file(runs: Path, campaign: str, title: str) -> None:
    """The campaign file an executed campaign keeps beside its runs (what the site reads its title from)."""
    path = runs / campaign / "_campaign" / "campaign.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"campaign: {campaign}\ntitle: {json.dumps(title)}\n", encoding="utf-8")


def test_a_pr_comment_names_campaigns_by_their_titles_as_the_diff_page_does(tmp_path: Path) -> None:
    """The comment named campaigns by their folder names (`synth-1.0`) where the site names them
    by their titles (sparkreport.yml's, else the campaign file's or a published summary's, else
    the name): its sides and its How the sides differ table now say what the diff page of the same sides
    says; the selectors in its heading keep the names, as the page's command does."""
    from sparkreport.render import RenderOptions, render

    runs = write_versions_store(tmp_path / "runs", regressed=("model-c", "native"), campaign="synth-{version}")
    titled_campaign_file(runs, "synth-1.0", "Release candidate: 1.0")
    config = tmp_path / "sparkreport.yml"
    config.write_text("static_charts: posts\ncampaigns:\n  synth-1.1:\n    title: Release 1.1\n"
                      "diffs:\n  - name: release\n    a: campaign=synth-1.0\n    b: campaign=synth-1.1\n",
                      encoding="utf-8")
    args = ["diff", "--runs-dir", str(runs), "--config", str(config), "--a", "campaign=synth-1.0",
            "--b", "campaign=synth-1.1", "--markdown"]
    lines = CliRunner().invoke(main, args).output.split("\n")
    sides = ("Side **a**: campaign “Release candidate: 1.0” (50 runs); side **b**: campaign “Release 1.1” "
             "(50 runs).")
    assert lines[:3] == ["### sparkreport diff: `campaign=synth-1.0` → `campaign=synth-1.1`", "", sides]
    assert "| campaign | Release candidate: 1.0 | Release 1.1 |" in lines
    page = (render(RenderOptions(runs_dir=runs, project_root=tmp_path)).docs_dir / "diffs" / "release"
            / "index.md").read_text(encoding="utf-8").split("\n")
    assert sides in page and "| campaign | Release candidate: 1.0 | Release 1.1 |" in page
    config.write_text("static_charts: posts\n", encoding="utf-8")  # synth-1.1 has no title: its name
    lines = CliRunner().invoke(main, args).output.split("\n")
    assert lines[2] == ("Side **a**: campaign “Release candidate: 1.0” (50 runs); side **b**: campaign “synth-1.1” "
                        "(50 runs).")
    assert "| campaign | Release candidate: 1.0 | synth-1.1 |" in lines


def test_a_pr_comment_of_two_run_stores_names_each_sides_campaigns_as_its_store_titles_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow's diff, the base branch's run store against the pull request's: each side's
    campaigns by the titles of its own store (a campaign file is in one of them). The heading
    names the stores, and no sentence says the sides in words."""
    store = write_versions_store(tmp_path / "both", regressed=("model-c", "native"), campaign="synth-{version}")
    for side, version in (("base", "1.0"), ("pr", "1.1")):
        shutil.copytree(store / f"synth-{version}", tmp_path / side / f"synth-{version}")
        titled_campaign_file(tmp_path / side, f"synth-{version}", f"Synth {version}: nightly")
    monkeypatch.chdir(tmp_path)  # no sparkreport.yml
    lines = CliRunner().invoke(main, ["diff", "--a-runs", "base", "--b-runs", "pr", "--markdown"]).output.split("\n")
    assert lines[:3] == ["### sparkreport diff: `base` → `pr`", "",
                         "**⚠\u00a01 regressed**, 19 unchanged — of 20 comparisons (model × environment × metric)."]
    assert "| campaign | Synth 1.0: nightly | Synth 1.1: nightly |" in lines


def test_what_changed_names_each_sides_campaigns_by_that_sides_titles() -> None:
    """changed_rows took one titles dict for both sides, so the comment on two run stores built the
    rows twice, once per store's titles, and merged them: it takes each side's titles now. A
    campaign a side's titles miss keeps its name there; a field other than the campaign is as
    recorded, in field_words."""
    from sparkreport.render.diff_text import changed_rows

    changed = [{"field": "campaign", "a": "synth-1.0, shared", "b": "synth-1.1, shared"},
               {"field": "label.cache", "a": "cold", "b": "warm"}]
    titles_a = {"synth-1.0": "Synth 1.0: nightly", "shared": "Shared (base)"}
    titles_b = {"synth-1.1": "Synth 1.1: nightly", "synth-1.0": "not side b's"}
    assert changed_rows(changed, titles_a, titles_b) == [
        {"field": "campaign", "a": "Synth 1.0: nightly, Shared (base)", "b": "Synth 1.1: nightly, shared"},
        {"field": "cache (label)", "a": "cold", "b": "warm"}]


def test_a_cut_comment_keeps_its_sides_and_campaign_titles_within_the_limit() -> None:
    """The sides in words and the campaigns' titles are in every comment the cut weighs: a large
    diff still keeps within the limit, with as many folded tables as fit beside them."""
    from sparkreport.render.diff_comment import COMMENT_LIMIT

    result = wide_diff(1200, regressed=20)
    result.changed = [{"field": "campaign", "a": "synth-1.0", "b": "synth-1.1"}]
    titles = ({"synth-1.0": "Release candidate: 1.0"}, {"synth-1.1": "Release 1.1"})
    sides = "Side **a**: campaign “Release candidate: 1.0” (80 runs); side **b**: campaign “Release 1.1” (80 runs)."
    comment = comment_of(result, titles=titles, sides=sides)
    assert len(comment) <= COMMENT_LIMIT and comment.split("\n")[2] == sides
    assert "\n| campaign | Release candidate: 1.0 | Release 1.1 |\n" in comment
    kept = details_of(comment)[1].count("| Metric |")
    assert 100 < kept < 1180 and details_of(comment_of(result, titles=titles, sides=sides, limit=len(comment) + 500))[
        1].count("| Metric |") > kept  # as many as fit


def test_the_comment_headline_counts_every_verdict_regressions_first() -> None:
    """The verdicts a reviewer must act on first, bold; `unchanged` last and plain."""
    from sparkreport.render.diff_comment import attention
    from sparkreport.render.diff_text import all_unchanged, headline

    counts = {"improved": 2, "regressed": 3, "unchanged": 40, "inconclusive": 1, "not comparable": 0,
              "missing in a": 0, "missing in b": 4}
    assert headline(counts) == ("**⚠\u00a03 regressed**, **2 improved**, **1 inconclusive**, **4 missing in b**, "
                                "40 unchanged — of 50 comparisons (model × environment × metric).")
    assert headline({"improved": 1, "regressed": 0, "unchanged": 0}) == (
        "**1 improved** — of 1 comparison (model × environment × metric).")
    assert headline({}) == "**Nothing to compare.**"
    one = {"groups": 1, "comparisons": 1, "every": True, "changes": "a change of +0.50%", "names": "A · native"}
    assert all_unchanged(one, "2%") == ("**The one comparison (model × environment × metric) is unchanged** — a "
                                        "change of +0.50%, within ± the minimum effect (2%) — in the model × "
                                        "environment pair: A · native.")
    many = {"groups": 2, "comparisons": 1200, "every": True, "changes": None, "names": "A · native and B_1 · native"}
    assert all_unchanged(many, "2%, 5% for KV cache") == (
        "**All 1,200 comparisons (model × environment × metric) are unchanged** — each within ± the minimum effect "
        "(2%, 5% for KV cache) — in the 2 model × environment pairs: A · native and B\\_1 · native.")

    def pair(*verdicts: str) -> dict[str, object]:
        return {"cells": [{"verdict": v} for v in verdicts]}

    ranked = sorted([pair("unchanged", "inconclusive"), pair("improved"), pair("improved", "regressed")],
                    key=attention)
    assert ranked == [pair("improved", "regressed"), pair("improved"), pair("unchanged", "inconclusive")]


def run_diff_workflow(tmp_path: Path, base_schema: int | None = None, fail_on: str | None = None,
                      base_runs: str = "runs") -> dict[str, Any]:
    """The `diff-comment.yml` steps of a new project that diff and comment, run as GitHub runs
    them (``bash --noprofile --norc -eo pipefail``; the base branch, ``main``, checked out in
    ../base; a pull request of version 1.0 → 1.1, one pair regressed). ``base_schema``: a run.json
    of the base written in that schema version (one this sparkreport refuses). ``fail_on``:
    ``--fail-on FAIL_ON`` added to the diff step's command, as a project that gates its pull
    requests adds it. ``base_runs``: what the base has of its runs: ``runs`` (version 1.0's),
    ``none`` (no runs/ folder) or ``empty`` (a runs/ folder without a run). What each step did,
    the comment `gh` posted and the step summary."""
    import os
    import subprocess
    import sys

    import yaml

    from sparkreport.scaffold import init_project

    project, base = tmp_path / "p", tmp_path / "base"
    init_project(project)
    store = write_versions_store(tmp_path / "both", regressed=("model-c", "native"))
    for side, dropped in ((base / "runs", "1.1"), (project / "runs", "1.0")):  # the pull request: 1.0 → 1.1
        shutil.rmtree(side, ignore_errors=True)
        shutil.copytree(store, side)
        for run in side.glob(f"nightly/*-{dropped}-*"):
            shutil.rmtree(run)
    if base_runs != "runs":
        shutil.rmtree(base / "runs")
    if base_runs == "empty":
        (base / "runs").mkdir()
        (base / "runs" / "README.md").write_text("Runs go here.\n", encoding="utf-8")
    if base_schema is not None:
        run_json = base / "runs" / "nightly" / "model-a-docker-1.0-0" / "run.json"
        run_json.write_text(json.dumps({**json.loads(run_json.read_text()), "schema_version": base_schema}))
    workflow = yaml.safe_load((project / ".github" / "workflows" / "diff-comment.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["diff"]["steps"]
    (diff_step,) = [s for s in steps if "--markdown" in s.get("run", "")]
    if fail_on is not None:
        diff_step = {**diff_step, "run": diff_step["run"].replace("--markdown", f"--markdown --fail-on {fail_on}", 1)}
    (comment_step,) = [s for s in steps if "gh pr comment" in s.get("run", "")]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, script in (  # the installed console script, as this interpreter runs it; gh, recording what it posts
            ("sparkreport", f'exec "{sys.executable}" -m sparkreport "$@"'),
            ("gh", f'echo "$@" > "{tmp_path}/gh-args"; cp "$5" "{tmp_path}/posted.md"')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GITHUB_STEP_SUMMARY": str(summary),
           "PR": "7", "BASE_REF": "main"}
    assert diff_step["env"] == {"BASE_REF": "${{ github.base_ref }}"}

    def run(step: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=project,
                              env=env, capture_output=True, text=True)

    diffed = run(diff_step)
    # The comment step runs after the diff step whether it passed or failed (not when it was skipped).
    assert comment_step["if"] == ("${{ !cancelled() && (steps.diff.outcome == 'success' || "
                                  "steps.diff.outcome == 'failure') }}") and diff_step["id"] == "diff"
    assert steps.index(comment_step) == [s.get("id") for s in steps].index("diff") + 1
    commented = run(comment_step)
    assert commented.returncode == 0, commented.stderr
    assert (tmp_path / "gh-args").read_text(encoding="utf-8") == "pr comment 7 --body-file diff.md\n"
    return {"diff": diffed, "posted": (tmp_path / "posted.md").read_text(encoding="utf-8"),
            "summary": summary.read_text(encoding="utf-8")}


def test_the_scaffolds_workflow_step_posts_the_comment(tmp_path: Path) -> None:
    """diff.md, the pull-request comment, is the comment, and it is the step summary."""
    done = run_diff_workflow(tmp_path)
    assert done["diff"].returncode == 0, done["diff"].stderr
    comment = done["posted"]
    assert done["summary"] == comment
    assert comment.startswith("### sparkreport diff: `../base/runs` → `runs`\n\n**⚠\u00a01 regressed**, 19 unchanged")
    assert comment.index("| **⚠\u00a0regressed** |") < comment.index("<details><summary>9 tables of unchanged")
    assert comment.count("<details>") == comment.count("</details>") == 1


@pytest.mark.parametrize("fail_on", [None, "regression"])
def test_a_failed_diff_is_said_on_the_pull_request_and_fails_the_job(tmp_path: Path, fail_on: str | None) -> None:
    """The step ran `sparkreport diff … > diff.md || true`: a diff that failed posted an empty
    comment (which `gh` refuses) and the error stayed in the log. Now the comment and the step
    summary say the diff failed, with sparkreport's one-line error, and the step fails — after
    which the comment is still posted, and the job fails. An error is no gate's exit, though both
    exit 1: with `--fail-on regression` too."""
    from sparkreport.schema import SCHEMA_VERSION

    done = run_diff_workflow(tmp_path, base_schema=SCHEMA_VERSION + 1, fail_on=fail_on)
    error = (f"Error: ../base/runs/nightly/model-a-docker-1.0-0/run.json: written by a newer sparkreport (schema_version "
             f"{SCHEMA_VERSION + 1}; this one reads up to {SCHEMA_VERSION}) — upgrade sparkreport (`pip install -U "
             "sparkreport`)")
    assert done["diff"].returncode == 1
    assert done["posted"] == done["summary"] == (
        "### sparkreport diff failed\n\n"
        "`sparkreport diff --a-runs ../base/runs --b-runs runs` stopped with exit status 1:\n\n"
        f"```text\n{error}\n```\n\n"
        "No comparison is shown. This job fails once the comment is posted; its log has the whole output.\n")
    assert done["diff"].stderr.strip() == error  # the log keeps what sparkreport wrote
    assert f"::error title=sparkreport diff failed::{error}" in done["diff"].stdout.splitlines()


def test_a_gated_diff_posts_the_comment_with_a_line_saying_the_gate_failed_the_check(tmp_path: Path) -> None:
    """`--fail-on regression` added to the diff step: a regression exits 1, as an error does, and
    the step took it for one — the pull request read "sparkreport diff failed" with no message and
    no comparison. sparkreport's gate exits after the comment is printed, with a line on stderr
    saying what it found (an error prints nothing on stdout): the comment is posted as usual, a
    line saying the gate failed the check added under it, and the step fails, so the job does."""
    plain = run_diff_workflow(tmp_path / "plain")
    assert plain["diff"].returncode == 0 and plain["diff"].stderr == ""
    done = run_diff_workflow(tmp_path / "gated", fail_on="regression")
    gate = "--fail-on regression: 1 regressed of 20 comparisons"
    assert done["diff"].returncode == 1 and done["diff"].stderr == f"{gate}\n"
    assert done["posted"] == done["summary"] == (
        f"{plain['posted']}\n**This check fails on the diff's gate:** `{gate}`.\n")
    assert f"::error title=sparkreport diff gate::{gate}" in done["diff"].stdout.splitlines()


@pytest.mark.parametrize("base_runs", ["none", "empty"])
def test_a_base_branch_without_runs_has_nothing_to_diff_and_passes(tmp_path: Path, base_runs: str) -> None:
    """The pull request that adds a project's first runs: the base branch has no runs/ (or one
    without a run), and the step failed — "no such run store — ingest results first", or "side a
    selects no runs — check the selector" — a red check on a pull request that did nothing wrong.
    Now the comment says there is nothing to diff against yet, and the step passes."""
    done = run_diff_workflow(tmp_path, base_runs=base_runs)
    assert done["diff"].returncode == 0, done["diff"].stderr
    assert done["posted"] == done["summary"] == (
        "### sparkreport diff: no runs on `main` yet\n\n"
        "The base branch, `main`, has no runs (no `run.json` under `runs/`), so there is nothing to diff this pull "
        "request's runs against. Once this pull request is merged, the next ones that change `runs/` are diffed "
        "against the runs it adds.\n")
    assert done["diff"].stdout.splitlines() == [
        "::notice title=sparkreport diff::main has no runs yet: nothing to diff against"]


def wide_diff(pairs: int, regressed: int = 0, improved: int = 0, inconclusive: int = 0,
              only_in_b: int = 0) -> DiffResult:
    """A diff of ``pairs`` model × environment pairs, four runs a side (seeded): the first
    ``regressed`` pairs lose 10% output throughput, the next ``improved`` gain 10%, the next
    ``inconclusive`` are noisy (8%); the others move by noise of 0.3% (unchanged), and peak
    memory everywhere. ``only_in_b``: more pairs that side b alone has (not comparable)."""
    rng = np.random.default_rng(11)
    rows: dict[str, list[dict[str, object]]] = {"a": [], "b": []}
    for i in range(pairs + only_in_b):
        model, env = f"model-{i // 2:04d}", ("docker", "native")[i % 2]
        level = 0.9 if i < regressed else 1.1 if i < regressed + improved else 1.0
        noise = 0.08 if regressed + improved <= i < regressed + improved + inconclusive else 0.003
        for side, factor in (("a", 1.0), ("b", level)):
            if side == "a" and i >= pairs:
                continue
            rows[side] += [{"model": model, "environment": env, "run_id": f"{model}-{env}-{side}-{run}",
                            "output_throughput_tok_s": 1000 * factor * rng.normal(1, noise),
                            "peak_memory_gib": 40 * rng.normal(1, 0.003)} for run in range(4)]
    return diff(pd.DataFrame(rows["a"]), pd.DataFrame(rows["b"]), FAST, DiffOptions())


def comment_of(result: DiffResult, **options: Any) -> str:
    from sparkreport.config import ProjectConfig
    from sparkreport.render.diff_comment import diff_comment

    return diff_comment(result, "label.version=1.0", "label.version=1.1", {}, ProjectConfig(), **options)


def note_of(comment: str, start: str) -> str:
    """The line of ``comment`` that starts with ``start``."""
    (line,) = [line for line in comment.split("\n") if line.startswith(start)]
    return line


#: What a cut comment's notes say of why, and where the whole diff is.
CUT = "left out of this comment (GitHub takes at most 65,536 characters): the whole diff is "


def test_a_comment_on_a_large_diff_leaves_out_the_unchanged_tables_first() -> None:
    """1,200 pairs, 30 of them with a verdict other than unchanged: with every row the comment was
    355,000 characters, which GitHub refuses (65,536 at most), and the workflow posted nothing.
    It keeps within 60,000: the headline, what changed and the 30 tables in full, as they were;
    then as many of the 1,170 folded tables as fit, in their order, and a line saying how many
    are left out and where the whole diff is."""
    from sparkreport.render.diff_comment import COMMENT_LIMIT, GITHUB_LIMIT

    result = wide_diff(1200, regressed=20, improved=5, inconclusive=5)
    full = comment_of(result, limit=10**9)
    comment = comment_of(result, whole_diff="on [the diff page](https://example.test/diffs/nightly/)")
    assert len(full) > GITHUB_LIMIT and len(comment) <= COMMENT_LIMIT < GITHUB_LIMIT
    assert comment.split("\n")[2] == ("**⚠\u00a020 regressed**, **5 improved**, **5 inconclusive**, 2,370 unchanged — "
                                      "of 2,400 comparisons (model × environment × metric).")
    # everything above the fold as it was: the 30 tables in full, regressions first
    above = full[:full.index("<details>")]
    assert comment.startswith(above) and above.count("| Metric |") == 30
    summary, inside = details_of(comment)
    kept = inside.count("| Metric |")
    assert summary == f"{kept:,} of 1,170 tables of unchanged comparisons" and 100 < kept < 1170
    assert table_rows(inside) == table_rows(details_of(full)[1])[:2 * kept]  # the first ones, whole
    assert note_of(comment, f"{1170 - kept:,} of these") == (
        f"{1170 - kept:,} of these 1,170 tables are {CUT}on [the diff page](https://example.test/diffs/nightly/).")
    assert comment.index("</details>") < comment.index(f"{1170 - kept:,} of these")
    assert comment.endswith("otherwise `inconclusive`.")  # what the verdicts mean, last
    assert comment_of(result, limit=len(comment) + 500).count("| Metric |") > kept + 30  # as many as fit


def test_a_comment_still_too_long_leaves_out_the_least_pressing_pairs_next() -> None:
    """390 pairs with a verdict other than unchanged do not fit even without the unchanged
    tables: those go, and then the other tables from the least pressing — the regressions stay,
    first; the headline still counts every comparison, and one line counts what is left out."""
    from sparkreport.render.diff_comment import COMMENT_LIMIT

    comment = comment_of(wide_diff(700, regressed=250, improved=100, inconclusive=40))
    assert len(comment) <= COMMENT_LIMIT
    assert comment.split("\n")[2] == ("**⚠\u00a0250 regressed**, **100 improved**, **40 inconclusive**, 1,010 "
                                      "unchanged — of 1,400 comparisons (model × environment × metric).")
    results = comment[comment.index("#### Results\n"):]
    kept = results.count("| Metric |")
    assert 0 < kept < 250 and results.count("**⚠\u00a0regressed**") == kept  # only regressed pairs are left
    left = 390 - kept
    assert note_of(results, f"**{left} more") == (
        f"**{left} more model × environment pairs with a verdict other than unchanged (of their {2 * left} "
        f"comparisons: {250 - kept} regressed, 100 improved, 40 inconclusive, {left} unchanged) are "
        f"{CUT.replace(' (', '** (', 1)}in the output of `sparkreport diff --json`.")
    assert "<details>" not in comment and "\nTheir tables are left out too.\n" in results
    assert results.index(f"**{left} more") < results.index("The other 310 model × environment pairs are unchanged")


def test_a_cut_comment_of_nothing_but_unchanged_says_so_once() -> None:
    """1,200 pairs all unchanged: the lead sentence names them (cut short) and says they are
    unchanged, once; Results holds as many of their tables as fit, folded, and says how many are
    left out — "the 2,400 tables", or with none kept "The pairs' tables" (the pairs are named in
    the lead, not just above the note)."""
    from sparkreport.render.diff_comment import COMMENT_LIMIT

    result = wide_diff(1200)
    comment = comment_of(result)
    assert len(comment) <= COMMENT_LIMIT
    lead = comment.split("\n")[2]
    assert lead.startswith("**All 2,400 comparisons (model × environment × metric) are unchanged** — changes from ")
    assert lead.endswith(", each within ± the minimum effect (2%) — in the 1,200 model × environment pairs: "
                         "model-0000 · native, model-0000 · docker, model-0001 · native, model-0001 · docker, "
                         "model-0002 · native, model-0002 · docker, model-0003 · native, model-0003 · docker, "
                         "… and 1,192 more.")
    assert comment.count("are unchanged") == 1 and "unchanged in every metric" not in comment
    results = comment[comment.index("#### Results\n"):]
    kept = details_of(comment)[1].count("| Metric |")
    assert 100 < kept < 1200 and results.split("\n")[2].startswith(f"<details><summary>{kept:,} of 1,200 tables")
    assert note_of(results, f"{1200 - kept:,} of the") == (
        f"{1200 - kept:,} of the 1,200 tables are {CUT}in the output of `sparkreport diff --json`.")
    bare = comment_of(result, limit=len(comment_of(result, limit=0)))  # room for no table
    assert "<details>" not in bare and bare.count("are unchanged") == 1
    assert note_of(bare, "The pairs' tables") == (
        f"The pairs' tables are {CUT}in the output of `sparkreport diff --json`.")


def test_a_comment_leaves_out_pairs_not_comparable_before_a_regression() -> None:
    """2,500 pairs that side b alone has (not comparable: a list of 82,500 characters) and one
    regression: the unchanged tables go, then the end of the list; the regression's table stays."""
    from sparkreport.render.diff_comment import COMMENT_LIMIT

    comment = comment_of(wide_diff(10, regressed=1, only_in_b=2500))
    assert len(comment) <= COMMENT_LIMIT
    assert comment.split("\n")[2].startswith("**⚠\u00a01 regressed**, 19 unchanged")
    listed = [line for line in comment.split("\n") if line.endswith(": only in b")]
    assert 0 < len(listed) < 2500 and listed[0].startswith("- model-0005 / docker: only in b")
    assert note_of(comment, f"{2500 - len(listed):,} more pairs") == (
        f"{2500 - len(listed):,} more pairs not comparable are {CUT}in the output of `sparkreport diff --json`.")
    assert "**model-0000 · docker**" in comment and "Their tables are left out of this comment" in comment


def given(*args: str) -> Any:
    """The context of ``sparkreport diff ARGS``, parsed as the command line parses it (not run)."""
    from sparkreport.cli.diff_cmds import diff_command

    return diff_command.make_context("diff", list(args))


def test_a_cut_comment_names_the_diff_page_or_the_command_with_json(tmp_path: Path) -> None:
    """Where a cut comment sends its reader: the site's page of the named diff with the same
    sides over the project's store, when the site has an address; else the command as given,
    with --json."""
    from sparkreport.cli.diff_cmds import whole_diff
    from sparkreport.config import load_config

    (tmp_path / "sparkreport.yml").write_text(
        "diffs:\n  - name: Release 1.1\n    a: label.version=1.0\n    b: version=1.1\n", encoding="utf-8")
    config = load_config(tmp_path / "sparkreport.yml")

    def where(*args: str) -> str:
        return whole_diff(given(*args, "--markdown"), config)

    runs = str(tmp_path / "runs")
    named = ("--a", "version=1.0", "--b", "label.version=1.1", "--runs-dir", runs)
    assert where(*named) == ("in the output of `sparkreport diff --a version=1.0 --b label.version=1.1 "
                             f"--runs-dir {runs} --json`")  # no address: the command
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nsite_url: https://example.test/report\n", encoding="utf-8")
    assert where(*named) == "on [the diff page](https://example.test/report/diffs/Release-1.1/)"
    assert where(*named, "--metric", "output_throughput_tok_s", "--fail-on", "regression") == \
        "on [the diff page](https://example.test/report/diffs/Release-1.1/)"  # the page of those sides
    assert where("--a-runs", "../base/runs", "--b-runs", "runs", "--min-effect", "0.05") == (
        "in the output of `sparkreport diff --a-runs ../base/runs --b-runs runs --min-effect 0.05 --json`")
    assert where("--a", "version=1.0", "--b", "version=1.2", "--runs-dir", runs, "--metric", "ttft_ms_mean") == (
        f"in the output of `sparkreport diff --a version=1.0 --b version=1.2 --runs-dir {runs} "
        "--metric ttft_ms_mean --json`")


@pytest.mark.parametrize(("args", "command"), [
    # the workflow's diff: as given, --json for --markdown
    (["--a-runs", "../base/runs", "--b-runs", "runs", "--markdown"],
     "sparkreport diff --a-runs ../base/runs --b-runs runs --json"),
    # an option given with its default value is given: it was printed only when it differed from the default
    (["--a", "version=1.0", "--b", "version=1.1", "--runs-dir", "runs", "--markdown"],
     "sparkreport diff --a version=1.0 --b version=1.1 --runs-dir runs --json"),
    # no option the command line did not give: --runs-dir's default is not printed
    (["--b", "version=1.1", "--a", "version=1.0", "--markdown"],
     "sparkreport diff --a version=1.0 --b version=1.1 --json"),
    # the canonical form: the options in --help's order, each by its name there with the value read
    # (a path less its trailing slash and leading ./, a number as Python writes it); a repeated option
    # once per value, in the order given; the gate left out, and --json last
    (["--markdown", "--fail-on", "regression", "--metric", "ttft_ms_mean", "--min-effect=0.050",
      "--b-runs", "./runs/", "--metric", "output_throughput_tok_s", "--a-runs=../base/runs/",
      "--allow-mismatch", "output_len", "--config", "ci/sparkreport.yml"],
     "sparkreport diff --a-runs ../base/runs --b-runs runs --config ci/sparkreport.yml --allow-mismatch output_len "
     "--min-effect 0.05 --metric ttft_ms_mean --metric output_throughput_tok_s --json"),
    # a word the shell would split or expand, quoted for it
    (["--a", "label.note=two words", "--b", "label.note=it's $HOME", "--markdown"],
     "sparkreport diff --a 'label.note=two words' --b 'label.note=it'\"'\"'s $HOME' --json"),
])
def test_the_command_of_the_whole_diff_is_the_one_given_with_json(args: list[str], command: str) -> None:
    """json_command rebuilt the command from every parameter's value, printing an option whenever
    its value differed from the default, whether or not it was given, and dropping one given with
    its default value: it prints the options given on the command line, and only those."""
    import shlex

    from sparkreport.cli.diff_cmds import json_command

    assert json_command(given(*args)) == f"`{command}`"
    words = shlex.split(command)
    assert words[:2] == ["sparkreport", "diff"] and words[-1] == "--json"
    # what it prints runs the same diff, but for its output: the parameters it gives are those given
    again = given(*words[2:])
    assert {name: value for name, value in again.params.items() if name not in ("as_json", "markdown", "fail_on")} \
        == {name: value for name, value in given(*args).params.items()
            if name not in ("as_json", "markdown", "fail_on")}
    assert json_command(again) == f"`{command}`"  # and it is its own canonical form


def test_the_cli_comment_of_a_cut_diff_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sparkreport diff --markdown` end to end, with a limit small enough to cut the release's
    comment: the unchanged tables go, and the note names the command to run for all of them."""
    from sparkreport.render import diff_comment

    monkeypatch.setattr(diff_comment, "COMMENT_LIMIT", 3000)
    args = comment_args("release-regressed-and-improved", tmp_path)
    comment = CliRunner().invoke(main, [*args, "--markdown"]).output
    assert len(comment) <= 3000 + 1  # and echo's newline
    assert "| **⚠\u00a0regressed** |" in comment and "| **improved** |" in comment
    summary, _inside = details_of(comment)
    kept = int(summary.split(" of ")[0])
    assert summary == f"{kept} of 8 tables of unchanged comparisons" and 0 < kept < 8
    assert note_of(comment, f"{8 - kept} of these 8 tables") == (
        f"{8 - kept} of these 8 tables are {CUT}in the output of `sparkreport diff --a label.version=1.0 "
        f"--b label.version=1.1 --runs-dir {tmp_path / 'runs'} --json`.")


def test_bad_named_diff_is_a_one_line_config_error(phase1_store: Path, tmp_path: Path) -> None:
    """Refused by the preflight (right after the dataset is loaded), at the selector's line."""
    from sparkreport.errors import ConfigError
    from sparkreport.render import RenderOptions, render

    config = tmp_path / "sparkreport.yml"
    config.write_text("diffs:\n  - name: x\n    a: nope=1\n    b: environment=native\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sparkreport.yml:3: diff 'x': a: selector 'nope=1': no column or label "
                                          r"'nope' — labels here: "):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, config_path=config))


@pytest.mark.parametrize("command", ["diff", "history"])
@pytest.mark.parametrize(("value", "message"), [
    ("5", "must be a fraction in (0, 0.5], not 5.0 — did you mean 5%? write 0.05"),
    ("1", "must be a fraction in (0, 0.5], not 1.0 — did you mean 1%? write 0.01"),
    ("-1", "must be a fraction in (0, 0.5], not -1.0 — e.g. 0.02 for ±2% of the baseline mean"),
    ("0.7", "must be a fraction in (0, 0.5], not 0.7 — e.g. 0.02 for ±2% of the baseline mean"),
])
def test_min_effect_is_checked_as_the_config_file_checks_it(two_stores: tuple[Path, Path], command: str,
                                                            value: str, message: str) -> None:
    """`diff --min-effect 5` read 5 as 500% and called a 15% drop unchanged (the gate passed);
    `--min-effect -1` was taken. sparkreport.yml refuses both: so do the flags (exit 2)."""
    a, b = two_stores
    where = ["--a-runs", str(a), "--b-runs", str(b)] if command == "diff" else ["--runs-dir", str(a)]
    result = CliRunner().invoke(main, [command, *where, "--min-effect", value, "--fail-on", "regression"])
    assert (result.exit_code, result.output) == (2, f"Error: --min-effect: {message}\n")


@pytest.mark.parametrize(("a", "b", "why"), [
    ("campaign=gpu-torch-native-vs-cgroup,cache=cold", "campaign=gpu-torch-native-vs-cgroup,cache=cold",
     "both sides select the same 40 runs — make a and b select different runs"),
    ("campaign=gpu-torch-native-vs-cgroup,model=llama-3-8b", "campaign=gpu-torch-native-vs-cgroup,model=qwen2-0.5b",
     "nothing to compare: no model × environment cell has runs on both sides — models: a has llama-3-8b, "
     "b has qwen2-0.5b"),
])
def test_a_named_diff_of_nothing_stops_the_build_as_the_command_refuses_it(tmp_path: Path, a: str, b: str,
                                                                          why: str) -> None:
    """A diff named in sparkreport.yml whose sides are the same runs, or share no cell, is refused
    by the build with one line naming the file and the diff — its page would publish verdicts
    about no comparison (`sparkreport diff` refuses both)."""
    from sparkreport.errors import BuildError
    from sparkreport.render import RenderOptions, render

    repo = Path(__file__).resolve().parents[1]
    config = tmp_path / "sparkreport.yml"
    config.write_text(f"diffs:\n  - name: d\n    a: {a}\n    b: {b}\n", encoding="utf-8")
    with pytest.raises(BuildError) as caught:
        render(RenderOptions(runs_dir=repo / "runs", project_root=tmp_path, config_path=config))
    assert str(caught.value) == f"{config}: diff 'd': {why}"


def test_a_metric_neither_side_reports_is_no_cell(phase1_dataset: Dataset) -> None:
    """A metric no run of a cell reports on either side is left out, not called inconclusive
    (a gate with --fail-on inconclusive failed on it)."""
    a, b = sides(phase1_dataset)
    cell = (a["model"] == "deepseek") & (a["environment"] == "native")
    a.loc[cell, "output_throughput_tok_s"], b.loc[cell, "output_throughput_tok_s"] = np.nan, np.nan
    cells = diff(a, b, FAST, DiffOptions()).cells
    mine = cells[(cells["model"] == "deepseek") & (cells["environment"] == "native")]
    assert "output_throughput_tok_s" not in set(mine["metric"]) and len(mine) > 0
    assert not ((cells["n_a"] == 0) & (cells["n_b"] == 0)).any()


def test_a_diffs_sides_in_words() -> None:
    """What both sides select, once; each side's own terms; a campaign by its title, a model by its
    name, a label without its prefix; a side with no terms of its own is "all of them"."""
    from sparkreport.render.diff_text import sides_words

    titles, models = {"c1": "H100 control"}, {"m1": "Llama 3"}
    assert sides_words("campaign=c1,label.cache=cold", "campaign=c1,cache=warm", titles, models) == {
        "shared": "campaign “H100 control”", "a": "cache cold", "b": "cache warm"}
    assert sides_words("campaign=c1", "campaign=c1,model=m1", titles, models) == {
        "shared": "campaign “H100 control”", "a": "all of them", "b": "Llama 3"}
    assert sides_words("engine_version=1.0", "engine_version=1.1", titles, models) == {
        "shared": "", "a": "engine_version 1.0", "b": "engine_version 1.1"}
