"""How the runs were made (issue #15): planted data for every design check, the testing family,
facts instead of tests, blocks and strata, plus golden `compare` and `check` output."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sparkreport.analysis import AnalysisOptions, check, compare, included_runs
from sparkreport.analysis import statistics as st
from sparkreport.analysis.design import compare_by, constant_facts, family_representatives, likely_cause
from sparkreport.cli import main
from sparkreport.dataset import Dataset, build_dataset
from sparkreport.errors import DataError
from sparkreport.execute.monitor import busy_span_metrics, processes_of
from sparkreport.schema import Environment, Hardware, Model, RunRecord, Status
from sparkreport.store import RunStore

GOLDEN = Path(__file__).parent / "fixtures" / "design"
T0 = dt.datetime(2026, 11, 21, 22, 0, tzinfo=dt.UTC)


def rec(rid: str, env: str, tput: float, *, minute: float, campaign: str = "c", model: str = "m",
        iteration: int = 1, labels: dict[str, str] | None = None, gpu: str = "GPU-aaaa", warnings: list[str] | None = None,
        **metrics: float) -> RunRecord:
    """One planted run: output throughput ``tput`` (request throughput = tput / 128), started ``minute``
    minutes after T0 on GPU ``gpu``."""
    started = (T0 + dt.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return RunRecord(
        run_id=rid, campaign=campaign, iteration=iteration, started_at=started, model=Model(name=model),
        environment=Environment(name=env),
        metrics={"output_throughput_tok_s": tput, "request_throughput_req_s": tput / 128.0, **metrics},
        hardware=Hardware(gpu_name="NVIDIA H100", details={"host": {"gpu_uuid": gpu, "kernel": "6.18"}}),
        status=Status(exit_code=0, ok=True, warnings=warnings or []), labels=labels or {})


def interleaved(values: dict[str, list[float]], **kw: object) -> list[RunRecord]:
    """Runs of each environment alternating in time (env A #1, env B #1, A #2, …)."""
    out = []
    minute = 0.0
    n = len(next(iter(values.values())))
    for i in range(n):
        for env, series in values.items():
            out.append(rec(f"{env}.i{i + 1:02d}", env, series[i], minute=minute, iteration=i + 1, **kw))  # type: ignore[arg-type]
            minute += 1.0
    return out


def noisy(mean: float, n: int, seed: int, cv: float = 0.01) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in mean * (1 + cv * rng.standard_normal(n))]


def ds_of(records: list[RunRecord]) -> Dataset:
    return build_dataset(records)


def codes(findings: list) -> list[str]:  # type: ignore[type-arg]
    return [f.code for f in findings]


# --------------------------------------------------------------------------- item 1: facts


def test_constant_quantity_is_a_fact_not_a_test() -> None:
    runs = interleaved({"native": noisy(1000, 6, 1), "cgroup": noisy(1000, 6, 2)},
                       kv_cache_gib=111.8, kv_cache_fraction=0.9)
    ds = ds_of(runs)
    opts = AnalysisOptions()
    frame = compare(ds, "environment", "native", opts)
    assert "kv_cache_gib" not in set(frame["metric"])
    facts = constant_facts(ds, opts)
    assert [f.metric for f in facts] == ["kv_cache_gib"]
    assert facts[0].sentence == ("c/m: KV cache was 111.80 GiB in every run (12 runs): sized by the configured "
                                 "fraction 0.9; stated, not tested")


def test_a_fixed_difference_is_stated_with_both_values() -> None:
    runs = interleaved({"native": noisy(1000, 4, 1), "cgroup": noisy(1000, 4, 2)})
    for r in runs:
        r.metrics["kv_cache_gib"] = 100.0 if r.environment.name == "cgroup" else 111.8
    facts = constant_facts(ds_of(runs), AnalysisOptions())
    assert "100.00 GiB in every cgroup run and 111.80 GiB in every native run" in facts[0].sentence
    # the baseline first, as the pages list the environments (without one: by name)
    (fact,) = constant_facts(ds_of(runs), AnalysisOptions(), baseline="native")
    assert "111.80 GiB in every native run and 100.00 GiB in every cgroup run" in fact.sentence
    assert list(fact.values) == ["native", "cgroup"]


def test_the_memory_page_says_a_constant_memory_figure_once_per_campaign() -> None:
    """Memory figures that did not vary are not compared: the Memory page says so beside the
    answers — one line for those the same in every environment, a fixed difference with both
    values — and nothing about a figure a comparison answers already."""
    from types import SimpleNamespace

    from sparkreport.render.memory import held_constant_lines

    runs = interleaved({"native": noisy(1000, 4, 1), "cgroup": noisy(1000, 4, 2)},
                       kv_cache_gib=57.19, kv_cache_fraction=0.9)
    for r in runs:
        r.metrics["peak_memory_gib"] = 70.0 if r.environment.name == "cgroup" else 76.02
    ds = ds_of(runs)
    site = SimpleNamespace(runs=ds.runs, dataset=ds, facts=constant_facts(ds, AnalysisOptions()), extra={})
    assert held_constant_lines(site, ["c"], set()) == {"c": [  # type: ignore[arg-type]
        "**The same in both environments** (1 model): KV cache, one value in every run — stated, not tested "
        "(the values are in the tables below).",
        "**A fixed difference**: m — Peak memory was 70.00 GiB in every cgroup run and 76.02 GiB in every native "
        "run (no run-to-run variance: a fixed difference)."]}
    assert held_constant_lines(site, ["c"], {("c", "kv_cache_gib"), ("c", "peak_memory_gib")}) == {}  # type: ignore[arg-type]


def test_a_fact_counts_the_runs_that_recorded_it_and_names_three_levels_in_a_list() -> None:
    runs = interleaved({"a": noisy(1000, 3, 1), "b": noisy(1000, 3, 2), "c": noisy(1000, 3, 3)})
    for r in runs:
        r.metrics["max_batch_size"] = {"a": 32.0, "b": 64.0, "c": 64.0}[r.environment.name]
        r.metrics["kv_cache_gib"] = 50.0
        r.metrics["pp_size"] = 1.0
    ds = ds_of(runs)
    assert constant_facts(ds, AnalysisOptions()) == [fact for fact in constant_facts(ds, AnalysisOptions(), every=True)
                                                     if fact.metric == "kv_cache_gib"]
    kv, batch, pp = constant_facts(ds, AnalysisOptions(), every=True)  # every metric: a configured one too
    assert kv.value_text == "50.00 GiB in every run (9 runs)"
    assert kv.body == "KV cache was 50.00 GiB in every run (9 runs)"
    assert (kv.named, pp.named, batch.named) == ("KV cache 50.00 GiB", "Pipeline parallel size 1", None)
    assert batch.metric == "max_batch_size"
    assert batch.value_text == "32 in every a run, 64 in every b run and 64 in every c run (9 runs)"
    assert batch.body == ("Max batch size was 32 in every a run, 64 in every b run and 64 in every c run "
                          "(no run-to-run variance: a fixed difference)")
    # one run of a did not record the KV cache: held constant in the 8 runs that did, and said so
    runs[0].metrics.pop("kv_cache_gib")
    kv, batch, pp = constant_facts(ds_of(runs), AnalysisOptions(), every=True)
    assert (kv.value_text, kv.named) == ("50.00 GiB in every run that recorded it (8 of 9 runs)", "KV cache 50.00 GiB")
    assert (batch.n, batch.runs, pp.value_text) == (9, None, "1 in every run (9 runs)")


def test_a_quantity_some_runs_did_not_record_is_stated_or_tested_never_neither() -> None:
    """compare and the facts share one rule (design.held_constant): a quantity of one value in
    every run that recorded it, one run having lost it, is stated as a fact counted over those
    runs, and compare does not test it; where the runs that recorded it do not agree, it is tested
    and no fact is said. Either way it is said somewhere."""
    runs = interleaved({"native": noisy(1000, 3, 1), "docker": noisy(1000, 3, 2)})
    for r in runs:
        r.metrics["kv_cache_gib"] = 50.0
        r.metrics["peak_memory_gib"] = 70.0 if r.environment.name == "native" else 72.0
    runs[0].metrics.pop("kv_cache_gib")  # native.i01 lost its KV cache figure
    runs[1].metrics.pop("peak_memory_gib")  # docker.i01 lost its peak memory
    ds = ds_of(runs)
    opts = AnalysisOptions()
    assert set(compare(ds, "environment", "native", opts)["metric"]) == {"output_throughput_tok_s"}
    peak, kv = constant_facts(ds, opts)  # in the tested metrics' order
    assert kv.body == "KV cache was 50.00 GiB in every run that recorded it (5 of 6 runs)"
    assert peak.body == ("Peak memory was 72.00 GiB in every docker run that recorded it and 70.00 GiB in every "
                         "native run that recorded it (no run-to-run variance in 5 of 6 runs: a fixed difference)")
    assert (kv.to_dict()["n"], kv.to_dict()["runs"]) == (5, 6)
    # one native run of the two that recorded it left: a single run, of the docker runs' value
    runs[2].metrics.pop("kv_cache_gib")
    _peak, kv = constant_facts(ds_of(runs), opts)
    assert (kv.values, kv.counted) == ({"docker": 50.0, "native": 50.0}, "4 of 6 runs")
    assert "kv_cache_gib" not in set(compare(ds_of(runs), "environment", "native", opts)["metric"])
    # a run that recorded another value: no fact, so the metric is tested
    runs[4].metrics["kv_cache_gib"] = 50.5
    ds = ds_of(runs)
    assert "kv_cache_gib" in set(compare(ds, "environment", "native", opts)["metric"])
    assert [f.metric for f in constant_facts(ds, opts)] == ["peak_memory_gib"]


def test_single_runs_of_one_value_are_a_fact_and_of_two_values_are_not() -> None:
    """An arm of one run has no run-to-run variance to speak of, but where every run of every arm
    recorded one value (400 requests each) that value was held constant; two single runs that
    differ are two measurements, not a fixed difference."""
    runs = [rec("n1", "native", 1000.0, minute=0, num_requests=400.0, failed_requests=0.0),
            rec("d1", "docker", 990.0, minute=1, num_requests=400.0, failed_requests=1.0)]
    (fact,) = constant_facts(ds_of(runs), AnalysisOptions(), every=True)
    assert (fact.metric, fact.value_text, fact.named) == ("num_requests", "400 requests in every run (2 runs)",
                                                          "Requests 400")
    assert constant_facts(ds_of(runs[:1]), AnalysisOptions(), every=True) == []  # one run: nothing to hold


def test_published_figures_of_one_run_each_and_one_value_are_a_fact() -> None:
    """A published figure of one run (or with SD 0) is that value in every run; the same in every
    environment it is held constant, noted as published."""
    from sparkreport.schema import SummaryStat

    def published(env: str, pool: float, kv: float) -> RunRecord:
        return RunRecord(run_id=f"s-{env}", campaign="p", record_type="arm_summary", model=Model(name="m"),
                         environment=Environment(name=env),
                         summary={"memory_total_gib": SummaryStat(n=1, mean=pool),
                                  "kv_cache_gib": SummaryStat(n=1, mean=kv),
                                  "output_throughput_tok_s": SummaryStat(n=10, mean=900.0, sd=5.0)})

    facts = constant_facts(ds_of([published("native", 119.64, 37.26), published("docker", 119.64, 13.31)]),
                           AnalysisOptions(), every=True)
    assert [(f.metric, f.value_text) for f in facts] == [
        ("memory_total_gib", "119.64 GiB in every run (2 runs), as published")]


def test_a_fact_says_what_sized_it_beside_its_value() -> None:
    runs = interleaved({"native": noisy(1000, 3, 1), "cgroup": noisy(1000, 3, 2)},
                       kv_cache_gib=57.19, kv_cache_fraction=0.9)
    (fact,) = constant_facts(ds_of(runs), AnalysisOptions())
    assert fact.note == "sized by the configured fraction 0.9"
    assert fact.value_text == "57.19 GiB in every run (6 runs), sized by the configured fraction 0.9"


# --------------------------------------------------------------------------- item 2: the family


def test_exact_multiples_are_tested_once() -> None:
    kept, stands_for = family_representatives(["output_throughput_tok_s", "request_throughput_req_s", "ttft_ms_mean"])
    assert kept == ["output_throughput_tok_s", "ttft_ms_mean"]
    assert stands_for == {"output_throughput_tok_s": ["request_throughput_req_s"]}
    frame = compare(ds_of(interleaved({"native": noisy(1000, 5, 1), "cgroup": noisy(900, 5, 2)})))
    assert list(frame["metric"]) == ["output_throughput_tok_s"]
    assert list(frame["family"]) == ["c · primary (1 test)"]


def test_holm_family_is_one_campaign_so_an_unrelated_campaign_changes_no_verdict() -> None:
    mine = interleaved({"native": noisy(1000, 6, 1, 0.05), "cgroup": noisy(940, 6, 2, 0.05)}, campaign="mine")
    other = []
    for k in range(6):  # an unrelated campaign with many comparisons and large p-values
        other += interleaved({"native": noisy(500, 5, 10 + k), "cgroup": noisy(500, 5, 20 + k)},
                             campaign="other", model=f"x{k}")
    for r in other:
        r.run_id = f"{r.model.name}.{r.run_id}"
    alone = compare(ds_of(mine))
    together = compare(ds_of(mine + other))
    together = together[together["campaign"] == "mine"].reset_index(drop=True)
    for column in ("p_holm", "verdict", "family"):
        assert list(alone[column]) == list(together[column])


def test_primary_metrics_are_configurable() -> None:
    runs = interleaved({"native": noisy(1000, 5, 1), "cgroup": noisy(900, 5, 2)})
    for i, r in enumerate(runs):
        r.metrics["ttft_ms_mean"] = 100.0 + i
    frame = compare(ds_of(runs), opts=AnalysisOptions(primary_metrics=["ttft_ms_mean"]))
    family = dict(zip(frame["metric"], frame["family"], strict=True))
    assert family == {"output_throughput_tok_s": "c · secondary (1 test)", "ttft_ms_mean": "c · primary (1 test)"}


# --------------------------------------------------------------------------- item 3: blocks and strata


def _cache_runs(effect: float) -> list[RunRecord]:
    runs = []
    minute = 0.0
    for i in range(6):
        for env in ("native", "cgroup"):
            for cache in ("cold", "warm"):
                value = noisy(1000, 1, 100 + len(runs), 0.01)[0] * (1 - effect if cache == "cold" else 1)
                runs.append(rec(f"{env}.{cache}.i{i + 1:02d}", env, value, minute=minute, iteration=i + 1,
                                labels={"cache": cache, "block": str(i + 1)}))
                minute += 1
    return runs


def test_pooled_label_with_an_effect_is_flagged_and_without_is_not() -> None:
    found = [f for f in check(ds_of(_cache_runs(0.2))) if f.code == "pooled-label"]
    assert {f.message.split(":")[0] for f in found} == {"c/m/cgroup", "c/m/native"}
    assert "label 'cache'" in found[0].message and "compare --by cache" in found[0].message
    assert "pooled-label" not in codes(check(ds_of(_cache_runs(0.0))))


def test_with_a_label_as_the_factor_the_checks_count_its_arms_not_the_environments() -> None:
    """Compared by cache, an arm is one level of it: the noise, size and drift of an arm are
    those of its runs, not of an environment that pools cold and warm runs (a 20% effect reads
    as a CV above 10% there). A model whose runs carry no level keeps its environments' arms."""
    runs = _cache_runs(0.2)
    pooled = [f for f in check(ds_of(runs), AnalysisOptions(cv_threshold=0.05)) if f.code == "high-cv"]
    assert {f.message.split(":")[0] for f in pooled} == {"c/m/cgroup", "c/m/native"}
    by_cache = check(ds_of(runs), AnalysisOptions(cv_threshold=0.05, factor="label.cache"))
    assert "high-cv" not in codes(by_cache)
    # one cold run left out: that arm has 11 of the 12 runs planned (six iterations in each of
    # its two environments)
    short = [r for r in runs if r.run_id != "native.cold.i03"]
    small = [f for f in check(ds_of(short), AnalysisOptions(factor="label.cache")) if f.code == "arm-too-small"]
    assert [f.message for f in small] == ["c/m/cache=cold: 11 usable runs, 12 planned"]
    # compared by environment, the native arm pools cold and warm runs, each planned six times
    assert [f.message for f in check(ds_of(short)) if f.code == "arm-too-small"] == [
        "c/m/native: 11 usable runs, 12 planned"]
    # every cold run before every warm one: an arm per environment "drifts" by the cache's effect
    blocked = [rec(f"{cache}.{i}", "native", (900.0 if cache == "cold" else 1000.0) + (i % 3),
                   minute=(0 if cache == "cold" else 10) + i, iteration=i + 1, labels={"cache": cache})
               for cache in ("cold", "warm") for i in range(6)]
    assert "drift" in codes(check(ds_of(blocked)))
    by_cache = check(ds_of(blocked), AnalysisOptions(factor="label.cache"))
    assert "drift" not in codes(by_cache)
    # ... which, compared by cache, is the comparison confounded with time
    order = [f.message for f in by_cache if f.code == "covariate-order"]
    assert len(order) == 1 and order[0].startswith("c/m: levels of cache ran in separate time blocks (cache=cold ")
    assert order[0].endswith("so drift over time is confounded with the cache — interleave them (randomized blocks)")
    assert "covariate-order" not in codes(check(ds_of(blocked)))  # one environment: nothing to confound
    # a second model without the label: its arms stay its environments
    other = [rec(f"x{i}", "native", 1000.0 + i, minute=200 + i, iteration=i + 1) for i in range(3)]
    for record in other:
        record.model = Model(name="m2")
    found = check(ds_of([*short, *other]), AnalysisOptions(factor="label.cache", planned_iterations=6))
    assert {f.message.split(":")[0] for f in found if f.code == "arm-too-small"} == {"c/m/cache=cold", "c/m2/native"}


def test_an_arm_that_pools_cells_is_planned_once_per_cell_when_each_counts_its_own_iterations() -> None:
    """Iterations 1–6 cold and 1–6 warm in one arm: twelve runs are planned, and one missing is
    said. Numbered through (1–6 cold, 7–12 warm), the highest iteration counts them all already.
    A randomized block is not a condition: iterations repeat across blocks only by chance."""
    def runs(through: bool, missing: int | None) -> list[RunRecord]:
        out = []
        for k, cache in enumerate(("cold", "warm")):
            for i in range(1, 7):
                iteration = i + 6 * k if through else i
                if iteration == missing and cache == "warm":
                    continue
                out.append(rec(f"{cache}.{i}", "native", 1000.0 + i, minute=10 * k + i, iteration=iteration,
                               labels={"cache": cache, "block": str(i)}))
        return out

    def small(records: list[RunRecord]) -> list[str]:
        return [f.message for f in check(ds_of(records)) if f.code == "arm-too-small"]

    assert small(runs(through=False, missing=None)) == []
    assert small(runs(through=False, missing=3)) == ["c/m/native: 11 usable runs, 12 planned"]
    assert small(runs(through=True, missing=None)) == []
    assert small(runs(through=True, missing=9)) == ["c/m/native: 11 usable runs, 12 planned"]


def test_pooled_engine_versions_with_an_effect_are_flagged() -> None:
    runs = _cache_runs(0.0)
    for run in runs:  # odd iterations on 1.1, even on 1.2, in both environments
        run.software.engine_version = "1.1" if run.iteration % 2 else "1.2"
        if run.software.engine_version == "1.2":
            run.metrics["output_throughput_tok_s"] *= 1.2
    found = [f for f in check(ds_of(runs)) if f.code == "pooled-label"]
    by_version = [f for f in found if "differ in 'engine_version'" in f.message]
    assert {f.message.split(":")[0] for f in by_version} == {"c/m/cgroup", "c/m/native"}
    assert "compare --by engine_version" in by_version[0].message
    assert set(compare_by(ds_of(runs), "engine_version")["stratum"]) == {"engine_version=1.1", "engine_version=1.2"}


def test_compare_by_label_stratifies_and_names_the_stratum() -> None:
    frame = compare_by(ds_of(_cache_runs(0.2)), "cache")
    assert list(frame["stratum"]) == ["cache=cold", "cache=warm"]
    assert set(frame["family"]) == {"c · primary (2 tests)"}
    with pytest.raises(DataError, match="no label 'nope'"):
        compare_by(ds_of(_cache_runs(0.2)), "nope")


def _drifting_blocks(factor: float) -> list[RunRecord]:
    """Eight blocks of native then cgroup, a slow drift shared by both arms (the block effect),
    cgroup at ``factor`` × native."""
    runs = []
    for block in range(8):
        level = 1000 * (1 - 0.03 * block)
        for env, scale in (("native", 1.0), ("cgroup", factor)):
            runs.append(rec(f"{env}.i{block + 1:02d}", env, level * scale * (1 + 0.0005 * ((block * 7) % 3 - 1)),
                            minute=2 * block + (env == "cgroup"), iteration=block + 1, labels={"block": str(block + 1)}))
    return runs


def test_plan_blocks_make_the_test_and_the_intervals_paired() -> None:
    # The drift hides a 5% difference from Welch, not from the pairs; the intervals shown beside the
    # test come from the same pairs (a Welch interval beside a paired p could contradict it).
    row = compare(ds_of(_drifting_blocks(0.95))).iloc[0]
    assert row["design"] == "blocked: paired t over 8 plan blocks"
    assert row["p_blocked"] < 0.001 < row["p_welch"]
    assert row["verdict"] == "lower"
    assert 0.948 < row["ratio_ci_low"] <= row["ratio_ci_high"] < 0.952  # b = 0.95 a in every block: tight
    assert -49 < row["diff_ci_low"] < row["diff"] < row["diff_ci_high"] < -40
    # A 1% difference is inside the ±2% margin by the paired TOST (Welch's wide interval could not show it).
    row = compare(ds_of(_drifting_blocks(0.99))).iloc[0]
    assert row["verdict"] == "equivalent" and row["p_tost"] < 0.001
    assert row["p_blocked"] < 0.001 < row["p_welch"]


def test_paired_statistics_match_scipy() -> None:
    from scipy import stats

    rng = np.random.default_rng(7)
    a = rng.normal(100, 5, 9)
    b = a * 1.02 + rng.normal(0, 0.4, 9)
    found = st.paired(a, b, margin=5.0)
    reference = stats.ttest_rel(b, a)
    assert found.k == 9 and found.p == pytest.approx(reference.pvalue, rel=1e-9)
    low, high = reference.confidence_interval()
    assert (found.diff_low, found.diff_high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    # Fieller's set: ρ at either end makes mean(b − ρa) exactly significant at 95%.
    for rho in (found.ratio_low, found.ratio_high):
        assert stats.ttest_1samp(b - rho * a, 0.0).pvalue == pytest.approx(0.05, rel=1e-6)
    upper = stats.ttest_1samp(b - a - 5.0, 0.0, alternative="less").pvalue
    lower = stats.ttest_1samp(b - a + 5.0, 0.0, alternative="greater").pvalue
    assert found.p_tost == pytest.approx(max(upper, lower), rel=1e-9)


# --------------------------------------------------------------------------- item 4: time and interference


def test_drift_is_flagged_with_its_slope_and_steady_runs_are_not() -> None:
    falling = [2980 - 124 * i for i in range(11)]
    found = [f for f in check(ds_of(interleaved({"native": falling, "cgroup": noisy(2900, 11, 3)})))
             if f.code == "drift"]
    assert len(found) == 1 and found[0].message.startswith("c/m/native: output throughput drifts -5.")
    assert found[0].numbers["slope_pct_per_run"] == pytest.approx(-100 * 124 / np.mean(falling), abs=1e-4)
    assert "drift" not in codes(check(ds_of(interleaved({"native": noisy(2900, 11, 4), "cgroup": noisy(2900, 11, 5)}))))


def test_contiguous_arms_are_flagged_and_interleaved_are_not() -> None:
    blocked = [rec(f"native.i{i}", "native", v, minute=i, iteration=i) for i, v in enumerate(noisy(1000, 5, 1))]
    blocked += [rec(f"cgroup.i{i}", "cgroup", v, minute=10 + i, iteration=i) for i, v in enumerate(noisy(1000, 5, 2))]
    found = [f for f in check(ds_of(blocked)) if f.code == "covariate-order"]
    assert len(found) == 1 and "environments ran in separate time blocks (native 2026-11-21T22:00" in found[0].message
    assert "covariate-order" not in codes(check(ds_of(interleaved({"native": noisy(1000, 5, 1),
                                                                   "cgroup": noisy(1000, 5, 2)}))))


def test_warmup_outlier_at_a_block_start() -> None:
    values = noisy(1000, 8, 7, 0.005)
    values[0] = 800.0  # the campaign's first run
    found = [f for f in check(ds_of(interleaved({"native": values, "cgroup": noisy(1000, 8, 8, 0.005)})))
             if f.code == "warmup-outlier"]
    assert [f.runs for f in found] == [["native.i01"]]
    assert "the campaign's first run" in found[0].message


def test_foreign_gpu_process_and_gave_up_cooldown_are_flagged_and_can_be_left_out() -> None:
    runs = interleaved({"native": noisy(1000, 4, 1), "cgroup": noisy(1000, 4, 2)})
    runs[1].status.warnings = ["another process held the GPU when the run started: pid 77 (1200 MiB)"]
    runs[2].status.warnings = ["cooldown gave up after 1800 s at 52 °C (limit 45 °C)"]
    ds = ds_of(runs)
    found = [f for f in check(ds) if f.code == "interference"]
    assert sorted(r for f in found for r in f.runs) == ["cgroup.i01", "native.i02"]
    assert all("kept (set analysis.exclude_interference: true" in f.message for f in found)
    opts = AnalysisOptions(exclude_interference=True)
    table = included_runs(ds, opts).set_index("run_id")
    assert not table.loc["cgroup.i01", "included"]
    assert table.loc["cgroup.i01", "exclusion_reason"].startswith("interference: another process held the GPU")
    assert table["included"].sum() == 6


def test_busy_span_metrics_and_processes_from_samples() -> None:
    rows = [{"gpu_util_pct": 0.0, "sm_clock_mhz": 345.0, "gpu_processes": "77:1200"},
            {"gpu_util_pct": 90.0, "sm_clock_mhz": 1980.0, "gpu_power_w": 500.0},
            {"gpu_util_pct": 0.0, "sm_clock_mhz": 1980.0, "gpu_power_w": 300.0},
            {"gpu_util_pct": 96.0, "sm_clock_mhz": 1980.0, "gpu_power_w": 520.0},
            {"gpu_util_pct": 0.0, "sm_clock_mhz": 345.0}]
    assert busy_span_metrics(rows) == {"gpu_util_mean_pct": 93.0, "sm_clock_mean_mhz": 1980.0,
                                       "gpu_power_mean_w": 510.0}
    for t, row in enumerate(rows):
        row["t_s"] = 0.1 * t
    assert busy_span_metrics(rows, (0.05, 0.35)) == {"gpu_util_mean_pct": 62.0, "sm_clock_mean_mhz": 1980.0,
                                                     "gpu_power_mean_w": 440.0}
    assert processes_of(rows[0]) == {77: 1200} and processes_of(rows[1]) == {}
    assert busy_span_metrics([{"gpu_util_pct": 0.0}]) == {}


# --------------------------------------------------------------------------- item 5: noise explained


def test_high_cv_names_the_likely_cause() -> None:
    runs = interleaved({"native": noisy(2000, 6, 1, 0.12), "cgroup": noisy(2000, 6, 2, 0.01)})
    for i, r in enumerate(runs):
        r.metrics.update(gpu_util_mean_pct=55.0 + 6 * (i % 5), sm_clock_mean_mhz=1890.0, measured_window_s=1.1)
    found = [f for f in check(ds_of(runs)) if f.code == "high-cv"]
    assert len(found) == 1
    assert found[0].message.startswith("c/m/native: CV above 5% over 6 runs — output_throughput_tok_s 9.3%; ")
    assert ("likely cause: the GPU was only 65% busy on average (host-bound: kernel launches); GPU "
            "utilisation varied from run to run") in found[0].message
    assert "the measured window was short (1.10 s)" in found[0].message
    assert likely_cause([97.0, 97.5], 0.3, 0.001, 6.5) is None


# --------------------------------------------------------------------------- item 6: hardware and sensors


def test_second_gpu_mid_campaign_is_flagged() -> None:
    runs = interleaved({"native": noisy(1000, 6, 1), "cgroup": noisy(1000, 6, 2)})
    for r in runs[6:]:
        r.hardware.details["host"]["gpu_uuid"] = "GPU-bbbb"
    found = [f for f in check(ds_of(runs)) if f.code == "hardware-change"]
    assert len(found) == 1
    assert found[0].message.startswith("c: runs on 2 GPUs — GPU-aaaa (6 runs, 2026-11-21 22:00–22:05 UTC); "
                                       "GPU-bbbb (6 runs, 2026-11-21 22:06–22:11 UTC)")
    assert "hardware-change" not in codes(check(ds_of(runs[:6])))


def test_a_sensor_that_never_varies_is_probably_not_measured(phase1_store: Path) -> None:
    runs = interleaved({"native": noisy(1000, 4, 1), "cgroup": noisy(1000, 4, 2)}, start_temp_c=40.0)
    found = [f for f in check(ds_of(runs)) if f.code == "sensor-constant"]
    assert [f.message.split(" — ")[0] for f in found] == ["c: start_temp_c is 40 °C in all 8 runs (SD 0)"]
    # Phase 1 (GB10): 38–40 °C over the campaign, but exactly 40 °C in every run of four arms.
    result = CliRunner().invoke(main, ["check", "--runs-dir", str(phase1_store), "--json"])
    import json

    flagged = sorted(f["message"].split(":")[0] for f in json.loads(result.stdout) if f["code"] == "sensor-constant")
    assert flagged == ["phase1/deepseek/container", "phase1/deepseek/native", "phase1/qwen72b/container",
                       "phase1/qwen72b/native"]


def test_copies_of_one_run_are_flagged_not_dropped() -> None:
    """A run ingested three times under other names reports the same value in every metric: one
    warning naming the three, the runs still counted; measured runs, which never agree on every
    value, and a run reporting too few values to tell, are not flagged."""
    runs = interleaved({"native": noisy(1000, 4, 1), "cgroup": noisy(1000, 4, 2)}, kv_cache_gib=20.0)
    copies = [rec(f"native.copy{i}", "native", runs[0].metrics["output_throughput_tok_s"], minute=30.0 + i,
                  kv_cache_gib=20.0) for i in range(2)]
    ds = ds_of(runs + copies)
    found = [f for f in check(ds) if f.code == "identical-runs"]
    assert len(found) == 1
    assert found[0].message.startswith("c/m/native: 3 runs report the same value in every one of their 3 metrics, "
                                       "to the last digit — copies of one run")
    assert found[0].runs == sorted([runs[0].run_id, *(r.run_id for r in copies)])
    assert "identical-runs" not in codes(check(ds_of(runs)))
    few = [rec(f"native.few{i}", "native", 1000.0, minute=40.0 + i) for i in range(2)]  # two values each
    assert "identical-runs" not in codes(check(ds_of(runs + few)))


def test_a_constant_reading_names_only_the_runs_that_report_it() -> None:
    """Three of a campaign's eight runs report the same start temperature and five none: the
    finding is about those three (its sentence and its runs), not about the campaign's eight."""
    runs = interleaved({"native": noisy(1000, 4, 1), "cgroup": noisy(1000, 4, 2)})
    reporting = [runs[0], runs[3], runs[6]]
    for r in reporting:
        r.metrics["start_temp_c"] = 40.0
    found = [f for f in check(ds_of(runs)) if f.code == "sensor-constant"]
    assert [f.message.split(" — ")[0] for f in found] == ["c: start_temp_c is 40 °C in the 3 runs that report it (SD 0)"]
    assert found[0].runs == sorted(r.run_id for r in reporting)


def test_a_constant_reading_sparkreport_took_itself_is_a_reading() -> None:
    """An H100 smoke campaign's short runs: the SM clock pinned at its 1,980 MHz cap and the end
    temperature at 40 °C in every run, read by the executor (NVML, its sampler) — not flagged; the
    same numbers from an ingested source still are."""
    runs = interleaved({"native": noisy(1000, 3, 1), "cgroup": noisy(1000, 3, 2)},
                       end_temp_c=40.0, sm_clock_mean_mhz=1980.0)
    for r in runs:
        r.provenance.format = "sparkreport-run/torch"
    assert "sensor-constant" not in codes(check(ds_of(runs)))
    runs[0].provenance.format = "trtllm-bench-log"
    runs[1].provenance.format = "trtllm-bench-log"
    runs[2].provenance.format = "trtllm-bench-log"
    found = [f.message.split(" — ")[0] for f in check(ds_of(runs)) if f.code == "sensor-constant"]
    assert found == ["c: end_temp_c is 40 °C in all 3 runs (SD 0)", "c: sm_clock_mean_mhz is 1980 MHz in all 3 runs (SD 0)"]


# --------------------------------------------------------------------------- golden CLI output


def _golden_store(root: Path) -> Path:
    store = RunStore(root)
    runs = _cache_runs(0.15)
    for r in runs:
        r.metrics.update(kv_cache_gib=111.8, kv_cache_fraction=0.9)
    runs[0].status.warnings = ["another process held the GPU when the run started: pid 4242 (512 MiB)"]
    for r in runs[12:]:
        r.hardware.details["host"]["gpu_uuid"] = "GPU-bbbb"
    for r in runs:
        store.write(r, [])
    return root


@pytest.mark.parametrize("command", [["compare"], ["compare", "--by", "cache"], ["check"]])
def test_golden_cli_output(tmp_path: Path, command: list[str]) -> None:
    root = _golden_store(tmp_path / "runs")
    result = CliRunner().invoke(main, [*command, "--runs-dir", str(root)])
    assert result.exit_code == 0, result.output
    golden = GOLDEN / ("-".join(command).replace("--", "") + ".txt")
    if os.environ.get("SPARKREPORT_REGENERATE"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


def test_a_familys_size_is_read_back_from_its_name() -> None:
    """The pages count a family's tests from ``family`` (compare's column): read with the format
    that wrote it, so the two cannot drift apart."""
    from sparkreport.analysis.design import family_size, family_text

    assert family_size(family_text("c (v2) · primary", 12)) == 12
    assert family_text("c · primary", 1) == "c · primary (1 test)" and family_size("c · primary (1 test)") == 1
    assert family_size("c · primary") is None and family_size("") is None


def test_with_a_label_as_the_factor_an_arm_that_pools_environments_that_differ_is_flagged() -> None:
    """Compared by cache (factor label.cache), each arm pools native and cgroup runs: where the
    environment matters, that is the pooling to flag — and the cache, now the factor, is not."""
    runs = _cache_runs(0.2)
    for run in runs:
        if run.environment.name == "cgroup":
            run.metrics["output_throughput_tok_s"] *= 0.8
    found = [f for f in check(ds_of(runs), AnalysisOptions(factor="label.cache")) if f.code == "pooled-label"]
    assert {f.message.split(":")[0] for f in found} == {"c/m/cache=cold", "c/m/cache=warm"}
    assert all("differ in 'environment'" in f.message and "compare --by environment" in f.message for f in found)
    assert set(compare_by(ds_of(runs), "environment", "label.cache", "cold")["stratum"]) == {
        "environment=cgroup", "environment=native"}
    # the same runs compared by environment: the cache is what an arm pools
    by_environment = [f for f in check(ds_of(runs)) if f.code == "pooled-label"]
    assert all("label 'cache'" in f.message for f in by_environment) and by_environment
