"""One order of the environments (the factor's levels) wherever they are listed: the baseline
first, then the others by name as models are sorted (case folded, then as written) — in the
statistics, the comparisons, the charts, the Runs, Memory and campaign pages and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sparkreport import charts
from sparkreport.analysis import AnalysisOptions, arm_stats
from sparkreport.cli import main
from sparkreport.dataset import load_dataset
from sparkreport.names import level_order
from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.schema import Environment, Model, RunRecord, Status
from sparkreport.store import RunStore


def ordered(levels: list[str], baseline: str | None) -> list[str]:
    return sorted(levels, key=lambda level: level_order(level, baseline))


def test_the_baseline_first_then_the_others_by_name() -> None:
    assert ordered(["cgroup-16g", "native", "container"], "native") == ["native", "cgroup-16g", "container"]
    # by name as a reader sorts them (Docker between chroot and podman), not by code point
    assert ordered(["podman", "Docker", "native", "chroot"], "native") == ["native", "chroot", "Docker", "podman"]
    # two names that differ only in case keep one order
    assert ordered(["docker", "Docker"], None) == ["Docker", "docker"]


def test_without_the_baseline_among_them_the_order_is_by_name() -> None:
    assert ordered(["native", "cgroup-16g"], None) == ["cgroup-16g", "native"]
    assert ordered(["native", "cgroup-16g"], "chroot") == ["cgroup-16g", "native"]


def test_the_charts_colour_environments_in_that_order() -> None:
    """A site's colours follow the same order as its tables: the baseline takes the first colour."""
    colours = charts.environment_colours(["podman", "Docker", "native", "chroot"], baseline="native")
    assert list(colours) == ["native", "chroot", "Docker", "podman"]
    assert list(colours.values()) == list(charts.ENVIRONMENT_COLOURS[:4])


def write_store(root: Path, environments: dict[str, float], runs: int = 4) -> Path:
    """A campaign of one model in ``environments`` (name → mean output throughput), ``runs`` each,
    with a sparkreport.yml that makes native the baseline."""
    store = RunStore(root / "runs")
    rng = np.random.default_rng(3)
    for env, mean in environments.items():
        for i in range(1, runs + 1):
            value = float(mean * (1 + 0.002 * rng.standard_normal()))
            store.write(RunRecord(
                run_id=f"m.{env}.i{i:02d}", campaign="c", iteration=i, model=Model(name="m"),
                environment=Environment(name=env),
                metrics={"output_throughput_tok_s": value, "request_throughput_req_s": value / 100,
                         "peak_memory_gib": 70.0 + rng.standard_normal(), "kv_cache_gib": 40.0 + rng.standard_normal(),
                         "pre_kv_memory_gib": 30.0 + rng.standard_normal()},
                status=Status(exit_code=0, ok=True)), [])
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return root


#: Three environments whose names sort the baseline last by code point (Docker, cgroup, native)
#: and by name (cgroup, Docker, native): only the rule puts it first.
ENVIRONMENTS = {"Docker": 1000.0, "cgroup": 1050.0, "native": 1000.0}
ORDER = ["native", "cgroup", "Docker"]


def test_stats_and_compare_list_the_baseline_first_on_the_command_line(tmp_path: Path) -> None:
    """`sparkreport stats` lists each campaign and model's arms as the site's tables do; with
    `--factor` another column (no baseline of its own) they are by name; `compare` lists the
    candidates by name."""
    root = write_store(tmp_path, ENVIRONMENTS)
    config = str(root / "sparkreport.yml")
    runner = CliRunner()
    result = runner.invoke(main, ["stats", "--runs-dir", str(root / "runs"), "--config", config, "--json",
                                  "--metric", "output_throughput_tok_s"])
    assert result.exit_code == 0, result.output
    assert [row["environment"] for row in json.loads(result.stdout)] == ORDER
    table = runner.invoke(main, ["stats", "--runs-dir", str(root / "runs"), "--config", config,
                                 "--metric", "output_throughput_tok_s"]).stdout.splitlines()
    assert [line.split()[2] for line in table[1:]] == ORDER
    result = runner.invoke(main, ["compare", "--runs-dir", str(root / "runs"), "--config", config, "--json",
                                  "--metric", "output_throughput_tok_s"])
    assert [row["candidate"] for row in json.loads(result.stdout)] == ["cgroup", "Docker"]


def test_arm_stats_without_a_baseline_lists_the_levels_by_name(tmp_path: Path) -> None:
    root = write_store(tmp_path, ENVIRONMENTS)
    ds = load_dataset(root / "runs")
    opts = AnalysisOptions()
    by_name = arm_stats(ds, opts, metrics=["output_throughput_tok_s"])
    assert by_name["environment"].tolist() == ["cgroup", "Docker", "native"]
    first = arm_stats(ds, opts, metrics=["output_throughput_tok_s", "kv_cache_gib"], baseline="native")
    assert first["environment"].tolist() == [env for env in ORDER for _metric in range(2)]
    assert first["metric"].tolist() == ["kv_cache_gib", "output_throughput_tok_s"] * 3


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    root = write_store(tmp_path_factory.mktemp("order"), ENVIRONMENTS)
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def page(site: RenderResult, path: str) -> str:
    return (site.docs_dir / path).read_text(encoding="utf-8")


def first_cells(markdown: str, names: list[str] = ORDER) -> list[list[str]]:
    """The environment each row of each table of ``markdown`` starts with (a list per table that
    names any: its rows' environments, in their order)."""
    tables: list[list[str]] = [[]]
    for line in markdown.splitlines():
        if not line.lstrip().startswith("|"):
            tables.append([])
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        tables[-1] += [cell for cell in cells[:2] if cell in names][:1]
    return [table for table in tables if table]


def y_sorts(spec: dict[str, Any]) -> list[Any]:
    """The ``sort`` of every y channel of ``spec`` (each layer's)."""
    return [layer["encoding"]["y"].get("sort") for layer in spec["layer"] if "y" in layer.get("encoding", {})]


def test_the_results_tables_and_charts_list_the_baseline_first(site: RenderResult) -> None:
    """The statistics of a tested metric, each box of "Each metric in detail", the Other metrics
    table and every chart of a model's page: native, then cgroup and Docker by name."""
    markdown = page(site, "results/m/index.md")
    tables = first_cells(markdown)
    assert len(tables) > 3 and all(table == ORDER for table in tables), tables
    compared = [line.split(" | ")[0] for line in markdown.splitlines() if " vs native | " in line]
    assert compared and compared == ["| cgroup vs native", "| Docker vs native"] * (len(compared) // 2)
    other, _, detail = markdown.partition("## Other metrics")[2].partition("### Each metric in detail")
    assert first_cells(other) == [ORDER] and first_cells(detail) == [ORDER]
    charts_dir = site.docs_dir / "results" / "m" / "charts"
    drawn = sorted(charts_dir.glob("*-runs.vl.json")) + sorted(charts_dir.glob("*-means.vl.json"))
    assert drawn
    for path in drawn:
        spec = json.loads(path.read_text(encoding="utf-8"))
        assert y_sorts(spec) and all(sort == ORDER for sort in y_sorts(spec)), (path.name, y_sorts(spec))
        colour = next(layer["encoding"]["color"] for layer in spec["layer"] if "color" in layer["encoding"])
        assert colour["scale"]["domain"] == ORDER


def test_a_chart_of_too_many_runs_keeps_the_order() -> None:
    """Past MAX_ROWS runs the per-run chart draws quartiles per arm, in the page's order too."""
    n = charts.MAX_ROWS + 3
    runs = pd.DataFrame({"environment": [ORDER[::-1][i % 3] for i in range(n)], "run_id": [f"r{i}" for i in range(n)],
                         "iteration": range(n), "kv_cache_gib": [40.0 + i % 7 for i in range(n)]})
    chart = charts.per_run_chart(runs, "kv_cache_gib", name="q", title="KV cache", order=ORDER)
    assert chart is not None and chart.rows == 3
    assert all(sort == ORDER for sort in y_sorts(chart.spec))
    # without the page's order, by name
    chart = charts.per_run_chart(runs, "kv_cache_gib", name="q", title="KV cache")
    assert chart is not None and all(sort == ["cgroup", "Docker", "native"] for sort in y_sorts(chart.spec))


def test_the_other_pages_list_the_environments_as_the_results_do(site: RenderResult) -> None:
    """The Runs page's sections, the Memory page's tables, Methodology's arms, the campaign's
    page and its charts, the Campaigns overview and Home: native, then cgroup and Docker."""
    runs = [line.rpartition(" · ")[2] for line in page(site, "runs/index.md").splitlines() if line.startswith("### ")]
    assert runs == ORDER
    memory = first_cells(page(site, "memory/index.md"))
    assert len(memory) >= 2 and all(table == ORDER for table in memory), memory
    methodology = page(site, "methodology/index.md")
    levels = first_cells(methodology.split("## What each arm contains")[0], names=ORDER)
    assert levels and all(table == ORDER for table in levels), levels
    assert "| Model | native | cgroup | Docker |" in methodology.split("## What each arm contains")[1]  # the arms
    campaign = page(site, "campaigns/c/index.md")
    assert "in 3 environments (native, cgroup, Docker; baseline **native**)" in campaign
    assert [line.split(" | ")[0] for line in campaign.splitlines() if line.startswith("| m · ")] == ["| m · cgroup",
                                                                                                   "| m · Docker"]
    for path in sorted((site.docs_dir / "campaigns" / "c" / "charts").glob("*-by-model.vl.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        assert all(sort == [f"{env} · m" for env in ORDER] for sort in y_sorts(spec)), path.name
    assert "| native, cgroup, Docker |" in page(site, "campaigns/index.md")
    assert "**Design.** cgroup, Docker against the baseline **native**" in page(site, "index.md")


def test_a_diff_lists_each_models_environments_baseline_first(tmp_path: Path) -> None:
    """`sparkreport diff` (its table and its JSON) and its pull-request comment list the cells as the
    site's tables do: native, then cgroup and Docker by name (they were by code point: Docker,
    cgroup, native)."""
    a = write_store(tmp_path / "a", ENVIRONMENTS)
    b = write_store(tmp_path / "b", {env: mean * 1.001 for env, mean in ENVIRONMENTS.items()})
    args = ["diff", "--a-runs", str(a / "runs"), "--b-runs", str(b / "runs"), "--config", str(a / "sparkreport.yml"),
            "--metric", "output_throughput_tok_s"]
    runner = CliRunner()
    cells = json.loads(runner.invoke(main, [*args, "--json"]).stdout)["cells"]
    assert [cell["environment"] for cell in cells] == ORDER
    table = runner.invoke(main, args).stdout.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("model "))
    assert [line.split()[1] for line in table[header + 1:header + 4]] == ORDER
    comment = runner.invoke(main, [*args, "--markdown"]).stdout
    assert [line.strip("*").removeprefix("m · ") for line in comment.splitlines() if line.startswith("**m · ")] == ORDER


def test_the_history_lists_each_models_environments_baseline_first(tmp_path: Path) -> None:
    """History's series (its JSON, its table and the History page's) list native before docker,
    the baseline first; without a baseline, by name."""
    from history_store import write_history_store

    from sparkreport.analysis.history import history

    ds = load_dataset(write_history_store(tmp_path / "runs"))
    opts = AnalysisOptions(bootstrap_resamples=50)
    first = history(ds, opts, metrics=["output_throughput_tok_s"], baseline="native")
    assert [s.environment for s in first.series] == ["native", "docker"]
    by_name = history(ds, opts, metrics=["output_throughput_tok_s"])
    assert [s.environment for s in by_name.series] == ["docker", "native"]


def test_data_quality_lists_a_checks_arms_baseline_first(tmp_path: Path) -> None:
    """A finding said of every environment (a single run per arm) is one row of Data quality whose
    arms read as every table lists them, "m (native, cgroup, Docker)" — they were by code point."""
    root = write_store(tmp_path, ENVIRONMENTS, runs=1)
    result = render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))
    quality = page(result, "quality/index.md")
    rows = [line for line in quality.splitlines() if line.startswith("| ") and "single run" in line]
    assert rows and all("(native, cgroup, Docker)" in row for row in rows), rows
