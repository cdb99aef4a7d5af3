"""One order of the models wherever they are listed: by the name the pages show (the display
name, else the id or key), case folded (names.model_order) — the statistics, the comparisons, the
facts, the charts, Methodology, the diffs and History list them as the Results pages do, not by
their keys in code-point order ("Phi-4" before "gemma-3-12b-it")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sparkreport.analysis import AnalysisOptions, arm_stats, compare
from sparkreport.cli import main
from sparkreport.dataset import load_dataset
from sparkreport.names import model_order
from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.schema import Environment, Model, RunRecord, Status
from sparkreport.store import RunStore

#: Model key → display name. By key in code-point order: Phi-4, gemma-3-12b-it, qwen; by key as
#: names sort: gemma-3-12b-it, Phi-4, qwen; as the pages name them: Aardvark-7B (qwen) first.
MODELS = {"Phi-4": None, "gemma-3-12b-it": None, "qwen": "Aardvark-7B"}
SHOWN = ["Aardvark-7B", "gemma-3-12b-it", "Phi-4"]
KEYS = ["qwen", "gemma-3-12b-it", "Phi-4"]


def test_models_sort_by_the_name_the_pages_show_then_by_key() -> None:
    assert sorted(["Phi-4", "gemma-3-12b-it", "llama-3-8b", "Llama-3-70B"], key=model_order) == [
        "gemma-3-12b-it", "Llama-3-70B", "llama-3-8b", "Phi-4"]
    # two models shown under one name: by key
    assert sorted([("Llama", "b"), ("Llama", "a")], key=lambda m: model_order(*m)) == [("Llama", "a"), ("Llama", "b")]


def write_store(root: Path, scale: float = 1.0) -> Path:
    """A campaign of the three :data:`MODELS` in native and docker, three runs each, with a
    KV cache of one value in every run (a fact) and a sparkreport.yml that makes native the baseline."""
    store = RunStore(root / "runs")
    rng = np.random.default_rng(5)
    for key, shown in MODELS.items():
        for env, mean in {"native": 1000.0, "docker": 990.0}.items():
            for i in range(1, 4):
                value = float(mean * scale * (1 + 0.002 * rng.standard_normal()))
                store.write(RunRecord(
                    run_id=f"{key}.{env}.i{i}", campaign="c", iteration=i, model=Model(name=key, display_name=shown),
                    environment=Environment(name=env),
                    metrics={"output_throughput_tok_s": value, "kv_cache_gib": 40.0,
                             "peak_memory_gib": 70.0 + rng.standard_normal(),
                             "pre_kv_memory_gib": 30.0 + rng.standard_normal()},
                    status=Status(exit_code=0, ok=True)), [])
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return root


def test_the_statistics_and_comparisons_list_models_by_their_names(tmp_path: Path) -> None:
    """arm_stats, compare and `sparkreport stats` list the models as the pages do."""
    root = write_store(tmp_path)
    ds = load_dataset(root / "runs")
    opts = AnalysisOptions()
    stats = arm_stats(ds, opts, metrics=["output_throughput_tok_s"], baseline="native")
    assert stats["model"].tolist() == [key for key in KEYS for _env in range(2)]
    assert stats["environment"].tolist() == ["native", "docker"] * 3
    compared = compare(ds, baseline="native", opts=opts, metrics=["output_throughput_tok_s"])
    assert compared["model_name"].tolist() == SHOWN
    result = CliRunner().invoke(main, ["stats", "--runs-dir", str(root / "runs"), "--config",
                                       str(root / "sparkreport.yml"), "--json", "--metric", "output_throughput_tok_s"])
    assert result.exit_code == 0, result.output
    assert [row["model"] for row in json.loads(result.stdout)][::2] == KEYS


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    root = write_store(tmp_path_factory.mktemp("models"))
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def table_models(markdown: str) -> list[str]:
    """The model each table row of ``markdown`` starts with, a run of rows of one model once."""
    names = [line.split(" | ")[0].removeprefix("| ") for line in markdown.splitlines() if line.startswith("| ")]
    named = [name for name in names if name in SHOWN]
    return [name for i, name in enumerate(named) if i == 0 or named[i - 1] != name]


def test_the_pages_list_models_as_the_results_do(site: RenderResult) -> None:
    """Home's table, the Results overview and its nav, the campaign page's charts across models,
    Methodology's facts, Memory (its tables and its scatter's shapes) and Runs: Aardvark-7B,
    gemma-3-12b-it, Phi-4 — the charts and the facts were by key (Phi-4 first)."""
    docs = site.docs_dir
    assert table_models((docs / "index.md").read_text(encoding="utf-8")) == SHOWN
    overview = (docs / "results" / "index.md").read_text(encoding="utf-8")
    assert [line.removeprefix("## [").partition("]")[0] for line in overview.splitlines()
            if line.startswith("## [")] == SHOWN
    results = next(children for title, children in site.nav if title == "Results")
    assert isinstance(results, list) and [title for title, _path in results[1:]] == SHOWN
    for path in sorted((docs / "campaigns" / "c" / "charts").glob("*-by-model.vl.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        sorts = [layer["encoding"]["y"]["sort"] for layer in spec["layer"] if "y" in layer.get("encoding", {})]
        assert sorts and all(sort == [f"{env} · {name}" for name in SHOWN for env in ("native", "docker")]
                             for sort in sorts), path.name
    methodology = (docs / "methodology" / "index.md").read_text(encoding="utf-8")
    facts = [line for line in methodology.splitlines() if "KV cache was 40.00 GiB in every run" in line]
    assert [line.strip().removeprefix("- c · ").partition(" — ")[0] for line in facts] == SHOWN
    runs = [line for line in (docs / "runs" / "index.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("### ")]
    assert [line.rpartition("</a>")[2].split(" · ")[0] for line in runs][::2] == SHOWN
    memory = table_models((docs / "memory" / "index.md").read_text(encoding="utf-8"))
    assert memory and memory == SHOWN * (len(memory) // len(SHOWN)), memory
    # the scatter's legend of shapes (Vega's own order would be by code point)
    scatter = json.loads((docs / "memory" / "charts" / "kv-vs-peak.vl.json").read_text(encoding="utf-8"))
    assert scatter["layer"][0]["encoding"]["shape"]["sort"] == SHOWN


def test_a_diff_lists_models_by_their_names(tmp_path: Path) -> None:
    """`sparkreport diff --json` lists its cells by the models' names, as the diff pages name them."""
    a, b = write_store(tmp_path / "a"), write_store(tmp_path / "b", scale=1.001)
    result = CliRunner().invoke(main, ["diff", "--a-runs", str(a / "runs"), "--b-runs", str(b / "runs"), "--config",
                                       str(a / "sparkreport.yml"), "--metric", "output_throughput_tok_s", "--json"])
    assert result.exit_code == 0, result.output
    cells = json.loads(result.stdout)["cells"]
    assert [cell["model"] for cell in cells] == [key for key in KEYS for _env in range(2)]


def test_the_history_lists_models_by_their_names(tmp_path: Path) -> None:
    """History's series: the model shown as Alpha (key z-model) before the one shown as Zeta
    (key a-model), each model's environments the baseline first."""
    from history_store import write_history_store

    from sparkreport.analysis.history import history

    runs = write_history_store(tmp_path / "runs", model="a-model", model_id="Zeta", runs=2)
    write_history_store(runs, model="z-model", model_id="Alpha", run_prefix="z-", runs=2)
    found = history(load_dataset(runs), AnalysisOptions(bootstrap_resamples=50), metrics=["output_throughput_tok_s"],
                    baseline="native")
    assert [(s.model_name, s.environment) for s in found.series] == [
        ("Alpha", "native"), ("Alpha", "docker"), ("Zeta", "native"), ("Zeta", "docker")]


def test_campaigns_sort_with_the_numbers_in_their_names_by_value(tmp_path: Path) -> None:
    """A campaign per release, "v0.9.0" and "v0.10.0": Home, a model's Results page (its table of
    several campaigns) and Data quality listed v0.10.0 first, by code point; they list the
    releases in order (names.campaign_order)."""
    from sparkreport.names import campaign_order

    assert sorted(["v0.10.0", "v0.9.0", "v0.9.1", "V1"], key=campaign_order) == ["V1", "v0.9.0", "v0.9.1", "v0.10.0"]
    store = RunStore(tmp_path / "runs")
    rng = np.random.default_rng(3)
    for campaign in ("v0.10.0", "v0.9.0"):
        for env in ("native", "docker"):
            for i in range(1, 4):
                store.write(RunRecord(
                    run_id=f"{campaign}.{env}.i{i}", campaign=campaign, iteration=i, model=Model(name="m"),
                    environment=Environment(name=env),
                    metrics={"output_throughput_tok_s": float(1000 * (1 + 0.002 * rng.standard_normal())),
                             "kv_cache_gib": 40.0},
                    status=Status(exit_code=0, ok=True)), [])
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    result = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path,
                                  config_path=tmp_path / "sparkreport.yml"))
    home = (result.docs_dir / "index.md").read_text(encoding="utf-8")
    assert "**The answer of the newest, [v0.10.0](campaigns/v0.10.0/index.md)**" in home  # by name: v0.10.0 is newer
    table = [line for line in home.splitlines() if line.startswith("| v0.")]
    assert [line.split(" | ")[0] for line in table] == ["| v0.9.0", "| v0.10.0"]
    page = (result.docs_dir / "results" / "m" / "index.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| v0.")]
    assert rows and rows[0].startswith("| v0.9.0") and any(row.startswith("| v0.10.0") for row in rows)
    # the statistics' rows too (arms.in_page_order: campaigns by campaign_order)
    arms = [row.split(" | ")[0] for row in rows if " | native | " in row]
    assert arms == ["| v0.9.0", "| v0.10.0"]
    # the facts too (design.held_constant), as Methodology and the Results pages state them
    from sparkreport.analysis.design import constant_facts

    facts = constant_facts(load_dataset(tmp_path / "runs"), AnalysisOptions(), every=True)
    assert [fact.campaign for fact in facts] == ["v0.9.0", "v0.10.0"]
