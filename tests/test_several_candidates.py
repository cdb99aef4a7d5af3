"""A campaign of several environments against one baseline (native vs cgroup vs chroot, as
`campaigns/gpu-smoke.yaml` runs): every sentence, table row and chart row names its comparison.

Found on a real H100 smoke campaign: Home's table was headed "cgroup-16g vs native" but showed
chroot's numbers (one cell per model and metric, the last comparison won), its answer named
cgroup-16g for a range that spanned both, and the forest chart drew both comparisons on one row.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.schema import Environment, Model, RunRecord, Status
from sparkreport.store import RunStore

#: Mean output throughput per environment: cgroup 5% faster, chroot the same.
MEANS = {"native": 1000.0, "cgroup": 1050.0, "chroot": 1000.0}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    root = tmp_path_factory.mktemp("several")
    store = RunStore(root / "runs")
    rng = np.random.default_rng(7)
    for env, mean in MEANS.items():
        for i in range(1, 9):
            value = float(mean * (1 + 0.002 * rng.standard_normal()))
            store.write(RunRecord(run_id=f"m.{env}.i{i:02d}", campaign="smoke", iteration=i, model=Model(name="m"),
                                  environment=Environment(name=env),
                                  metrics={"output_throughput_tok_s": value, "request_throughput_req_s": value / 100},
                                  status=Status(exit_code=0, ok=True)), [])
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def text(site: RenderResult, path: str) -> str:
    return (site.docs_dir / path).read_text(encoding="utf-8")


@pytest.mark.parametrize("page", ["index.md", "campaigns/smoke/index.md"])
def test_the_answer_and_the_table_name_each_comparison(site: RenderResult, page: str) -> None:
    markdown = text(site, page)
    answer = [line for line in markdown.splitlines() if line.startswith("- **")]
    assert any(re.fullmatch(r"- \*\*Better in cgroup than in native\*\*: Output throughput higher for 1 model "
                            r"\(\+\d\.\d\d%; 95% CI \+\d\.\d\d% to \+\d\.\d\d%\)\.", line) for line in answer), answer
    same = [line for line in answer if line.startswith("- **The same within ±2%**")]
    assert len(same) == 1 and ", chroot against native " in same[0] and "cgroup" not in same[0], same
    head = "| Model · environment (vs native) | Output throughput |"
    assert head in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| m · ")]
    assert [row.split(" | ")[0] for row in rows] == ["| m · cgroup", "| m · chroot"]
    assert rows[0].split(" | ")[1].startswith("▲ +") and rows[1].split(" | ")[1].startswith("≈ ")


def test_the_forest_chart_draws_each_comparison_on_its_own_row(site: RenderResult) -> None:
    spec = json.loads((site.docs_dir / "charts" / "effects.vl.json").read_text(encoding="utf-8"))
    rows = [d["row"] for d in spec["layer"][-1]["data"]["values"]]
    assert sorted(rows) == ["m · cgroup · Output throughput", "m · chroot · Output throughput"]


def test_one_candidate_reads_as_before(tmp_path: Path) -> None:
    """With one comparison the table keeps its old head and rows, and the chart its old labels."""
    from sparkreport.render.report import forest_chart

    effects = [{"model_name": "m", "label": "Output throughput", "candidate": "docker", "baseline": "native",
                "campaign": "c", "delta_pct": 1.0, "delta_low": 0.5, "delta_high": 1.5, "verdict": "higher",
                "margin_pct": 2.0}]
    chart = forest_chart(effects, name="e", title="t", confidence=0.95)
    assert chart is not None and chart.spec["layer"][-1]["data"]["values"][0]["row"] == "m · Output throughput"
    two_campaigns = [effects[0], {**effects[0], "campaign": "c2"}]
    chart = forest_chart(two_campaigns, name="e", title="t", confidence=0.95)
    assert chart is not None
    panels = chart.spec["vconcat"]  # one panel per campaign, the rows named without it
    assert [(p["title"]["text"], [d["row"] for d in p["layer"][-1]["data"]["values"]]) for p in panels] == [
        ("c", ["m · Output throughput"]), ("c2", ["m · Output throughput"])]


def test_the_runs_table_shows_the_cache_state_of_each_run(tmp_path: Path) -> None:
    """The smoke campaign's shape: one iteration, cold and warm, a plan block equal to the
    iteration and a plan index per run. The Runs table gets a Cache column (the design label);
    neither the block (the iteration again) nor the plan index (names runs) get one."""
    store = RunStore(tmp_path / "runs")
    for index, (env, cache) in enumerate((e, c) for e in ("native", "chroot") for c in ("cold", "warm")):
        store.write(RunRecord(run_id=f"m.{env}.{cache}.i01", campaign="smoke", iteration=1, model=Model(name="m"),
                              environment=Environment(name=env), metrics={"output_throughput_tok_s": 100.0 + index},
                              status=Status(exit_code=0, ok=True),
                              labels={"cache": cache, "block": "1", "plan_index": str(index)}), [])
    site = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path, docs_dir=tmp_path / "docs"))
    page = text(site, "runs/index.md")
    assert ("<thead><tr><th>Run</th><th>Model</th><th>Environment</th><th>Iteration</th><th>Cache</th>"
            "<th>Status</th>") in page
    cells = re.findall(r"<td>m</td><td>(\w+)</td><td>1</td><td>(\w+)</td><td>ok</td>", page)
    # the baseline (native, sparkreport.yml's default) first, as every table lists the environments
    assert cells == [("native", "cold"), ("native", "warm"), ("chroot", "cold"), ("chroot", "warm")]


def test_an_inconclusive_interval_that_excludes_zero_is_explained() -> None:
    """A '?' whose unadjusted interval excludes zero (Welch p < 0.05, Holm's p not): the answer
    says why it is not called higher or lower, and counts the campaign's tests; an interval
    that spans zero gets no such sentence."""
    from types import SimpleNamespace

    from sparkreport.config import ProjectConfig
    from sparkreport.render.report import answer

    site = SimpleNamespace(config=ProjectConfig(), confidence_label="95%", errors=[])
    row = {"model": "m1", "model_name": "m1", "label": "Output throughput", "primary": True, "untested": False,
           "verdict": "inconclusive", "candidate": "docker", "baseline": "native", "delta_pct": -2.5,
           "delta_low": -4.61, "delta_high": -0.37, "family": "c · primary (12 tests)"}
    spans = row | {"model": "m2", "model_name": "m2", "delta_pct": 1.0, "delta_low": -3.0, "delta_high": 5.0}
    two = answer(site, [row, spans])  # type: ignore[arg-type]
    assert two == ["**No difference detected, none ruled out** (2 models): Output throughput (-2.50% to +1.00%; "
                   "95% CIs between -4.61% and +5.00%); the intervals are wider than the ±2% margin. One of these 95% intervals "
                   "excludes zero, but with Holm's adjustment over the campaign's 12 tests that difference is not "
                   "significant."]
    alone = answer(site, [row], count_models=False)  # type: ignore[arg-type]
    assert alone[0].endswith(" Its 95% interval excludes zero, but with Holm's adjustment over the campaign's "
                             "12 tests it is not significant.")
    assert "excludes zero" not in answer(site, [spans])[0]  # type: ignore[arg-type]
