"""One order of the environments (the factor's levels) wherever they are listed: the baseline
first, then the others by name as models are sorted (case folded, then as written) — in the
statistics, the comparisons, the charts, the Runs, Memory and campaign pages and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from sparkreport import charts
from sparkreport.analysis import AnalysisOptions, arm_stats
from sparkreport.cli import main
from sparkreport.dataset import load_dataset
from sparkreport.names import level_order
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
