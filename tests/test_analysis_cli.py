"""compare / check / stats on the CLI: JSON contracts, verdicts, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sparkreport.analysis import AnalysisOptions, check, claim_sentence, compare, included_runs
from sparkreport.analysis.compare import COMPARE_KEYS
from sparkreport.cli import main
from sparkreport.dataset import build_dataset
from sparkreport.schema import Environment, Model, RunRecord, Status

STATS_KEYS = ["campaign", "model", "environment", "metric", "unit", "n", "mean", "sd", "median",
              "min", "max", "cv", "ci_low", "ci_high", "ci_clipped", "source"]
CHECK_KEYS = ["severity", "code", "message", "runs", "numbers", "assumes"]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout + result.stderr


def test_stats_json_contract(phase1_store: Path) -> None:
    code, out = invoke("stats", "--runs-dir", str(phase1_store), "--json")
    assert code == 0
    rows = json.loads(out)
    assert all(list(r) == STATS_KEYS for r in rows)
    gpt = next(r for r in rows if (r["model"], r["environment"], r["metric"]) ==
               ("gpt120b", "native", "kv_cache_gib"))
    assert gpt["n"] == 13 and gpt["source"] == "runs"


def test_compare_json_contract_and_reproducibility(phase1_store: Path) -> None:
    code, first = invoke("compare", "--runs-dir", str(phase1_store), "--json")
    assert code == 0
    rows = json.loads(first)
    assert all(list(r)[: len(COMPARE_KEYS)] == COMPARE_KEYS for r in rows)
    assert {r["verdict"] for r in rows} <= {"higher", "lower", "equivalent", "inconclusive", "untested"}
    assert invoke("compare", "--runs-dir", str(phase1_store), "--json")[1] == first  # seeded bootstrap
    kv = {r["model"]: r for r in rows if r["metric"] == "kv_cache_gib"}
    assert kv["deepseek"]["verdict"] == "lower" and kv["deepseek"]["ratio_ci_high"] < 0.4
    tput = {r["model"]: r for r in rows if r["metric"] == "output_throughput_tok_s"}
    assert all(r["verdict"] == "equivalent" and r["equivalent"] for r in tput.values())


def test_a_comparison_no_test_could_run_is_untested_not_inconclusive(tmp_path: Path) -> None:
    """Figures published without an SD get no test: the verdict says so ("inconclusive" would
    claim a test ran and found neither a difference nor equivalence), in the table and the JSON,
    and so does why — the why_untested column (null in the JSON, blank in the table where a test
    ran), which names the arm of a single run — and the sentence under the table."""
    summary = tmp_path / "published.csv"
    summary.write_text("model,environment,metric,n,mean,sd\n"
                       "m,native,kv_cache_gib,10,44.31,\nm,container,kv_cache_gib,10,16.57,\n"
                       "one,native,kv_cache_gib,10,44.31,0.5\none,container,kv_cache_gib,1,16.57,\n"
                       "sd,native,kv_cache_gib,10,44.31,0.5\nsd,container,kv_cache_gib,10,16.57,0.4\n",
                       encoding="utf-8")
    runs = tmp_path / "runs"
    code, out = invoke("ingest", str(summary), "--runs-dir", str(runs), "--campaign", "pub")
    assert code == 0, out
    code, out = invoke("compare", "--runs-dir", str(runs), "--json")
    assert code == 0, out
    assert [(r["model"], r["verdict"], r["why_untested"]) for r in json.loads(out)] == [
        ("m", "untested", "published without a spread"), ("one", "untested", "a single run in container"),
        ("sd", "lower", None)]
    code, out = invoke("compare", "--runs-dir", str(runs))
    assert code == 0, out
    assert out.splitlines()[:4] == [
        "model  metric        candidate  n_baseline  n_candidate  ratio  ratio_ci_low  ratio_ci_high  p_holm    "
        "verdict   why_untested",
        "m      kv_cache_gib  container  10          10           0.374  -             -              -         "
        "untested  published without a spread",
        "one    kv_cache_gib  container  10          1            0.374  -             -              -         "
        "untested  a single run in container",
        "sd     kv_cache_gib  container  10          10           0.374  0.3672        0.3808         1.53e-27  "
        "lower",
    ]
    assert "— published without a spread, so no test is possible." in out
    assert "— a single run in container, so no test is possible." in out


def test_why_untested_names_the_arm_of_a_single_run() -> None:
    """One comparison's why_untested: the pages' reason (untested_reason, which they group by),
    with the arm named where one arm is a single run; None where a test ran — in the strata of
    `compare --by` too, whose verdicts are made again after Holm over them."""
    from sparkreport.analysis.compare import ONE_RUN_PER_ARM, PUBLISHED_SINGLE_RUN, untested_reason, why_untested

    row = {"verdict": "untested", "baseline": "native", "candidate": "docker", "skipped": "Welch t-test"}
    assert why_untested(row | {"n_baseline": 1, "n_candidate": 5}) == "a single run in native"
    assert why_untested(row | {"n_baseline": 5, "n_candidate": 1}) == "a single run in docker"
    assert untested_reason(row | {"n_baseline": 5, "n_candidate": 1}) == "a single run in one arm"
    assert why_untested(row | {"n_baseline": 1, "n_candidate": 1}) == ONE_RUN_PER_ARM
    published = row | {"n_baseline": 1, "n_candidate": 1, "skipped": "Mann–Whitney U, Welch t-test"}
    assert why_untested(published) == PUBLISHED_SINGLE_RUN
    assert why_untested(row | {"n_baseline": 5, "n_candidate": 5, "verdict": "lower"}) is None
    repo = Path(__file__).resolve().parents[1]
    code, out = invoke("compare", "--runs-dir", str(repo / "runs"), "--by", "cache", "--json")
    rows = json.loads(out)
    assert code == 0 and rows and all(list(r)[-2:] == ["stratum", "why_untested"] for r in rows)
    assert {r["why_untested"] for r in rows if r["verdict"] != "untested"} == {None}


def test_check_flags_the_13_run_arm_and_strict_fails(phase1_store: Path) -> None:
    code, out = invoke("check", "--runs-dir", str(phase1_store), "--json")
    assert code == 0
    findings = json.loads(out)
    assert all(list(f) == CHECK_KEYS for f in findings)
    dup = [f for f in findings if f["code"] == "duplicate-iteration"]
    assert len(dup) == 1 and dup[0]["severity"] == "error"
    assert dup[0]["message"].startswith("phase1/gpt120b/native: 13 runs where iterations 1–10 were planned")
    assert "the statistics use all 13 runs" in dup[0]["message"]
    assert len(dup[0]["runs"]) == 4
    code, _ = invoke("check", "--runs-dir", str(phase1_store), "--strict")
    assert code == 1


def test_duplicates_policy_changes_what_stats_use(phase1_store: Path) -> None:
    code, out = invoke("stats", "--runs-dir", str(phase1_store), "--json", "--duplicates", "last",
                       "--metric", "kv_cache_gib")
    rows = {(r["model"], r["environment"]): r for r in json.loads(out)}
    assert rows[("gpt120b", "native")]["n"] == 10
    code, out = invoke("check", "--runs-dir", str(phase1_store), "--duplicates", "last")
    assert "keeping the last run of each iteration" in out


def _run(rid: str, env: str, value: float, ok: bool = True, iteration: int = 1) -> RunRecord:
    return RunRecord(run_id=rid, campaign="c", iteration=iteration, model=Model(name="m"),
                     environment=Environment(name=env), metrics={"output_throughput_tok_s": value},
                     status=Status(exit_code=0 if ok else 1, ok=ok))


def _dataset(base: list[float], cand: list[float]):  # type: ignore[no-untyped-def]
    records = [_run(f"b{i}", "native", v, iteration=i + 1) for i, v in enumerate(base)]
    records += [_run(f"c{i}", "container", v, iteration=i + 1) for i, v in enumerate(cand)]
    return build_dataset(records)


def test_verdicts() -> None:
    rng = np.random.default_rng(1)
    base = list(100 + rng.normal(0, 0.5, 10))
    assert compare(_dataset(base, [v * 1.10 for v in base])).loc[0, "verdict"] == "higher"
    assert compare(_dataset(base, [v * 0.90 for v in base])).loc[0, "verdict"] == "lower"
    assert compare(_dataset(base, list(100 + rng.normal(0, 0.5, 10)))).loc[0, "verdict"] == "equivalent"
    noisy = compare(_dataset(list(100 + rng.normal(0, 8, 3)), list(100 + rng.normal(0, 8, 3))))
    assert noisy.loc[0, "verdict"] == "inconclusive"
    sentence = claim_sentence(noisy.iloc[0].to_dict())
    assert "no significant difference detected" in sentence and "equivalent" not in sentence.split(";")[0]


def test_failed_runs_are_excluded_and_reported() -> None:
    records = [_run(f"b{i}", "native", 100.0 + i, iteration=i + 1) for i in range(3)]
    records.append(_run("bad", "native", 1.0, ok=False, iteration=4))
    ds = build_dataset(records)
    runs = included_runs(ds, AnalysisOptions())
    assert runs.set_index("run_id").loc["bad", "exclusion_reason"] == "failed run (exit code 1)"
    findings = check(ds)
    failed = [f for f in findings if f.code == "failed-run"]
    assert failed[0].runs == ["bad"] and "excluded from the statistics" in failed[0].message
    small = [f for f in findings if f.code == "arm-too-small"]
    assert small and small[0].message == "c/m/native: 3 usable runs, 4 planned"


def test_high_cv_is_flagged() -> None:
    ds = _dataset([100, 120, 80, 110], [100, 101, 99, 100])
    noisy = [f for f in check(ds) if f.code == "high-cv"]
    assert [f.message for f in noisy] == ["c/m/native: CV above 5% over 4 runs — output_throughput_tok_s 16.7%"]
    assert noisy[0].numbers == {"output_throughput_tok_s": 0.1666}


def test_intervals_are_cut_at_what_the_quantity_can_be(tmp_path: Path) -> None:
    """Two runs give a t-interval of ±12.7 standard errors: a GPU utilisation of 10% and 90%
    would read −498% to 598%. It is cut at 0–100 (a throughput at 0; a temperature is not cut),
    ``ci_clipped`` says which, and the text table is followed by a note."""
    from sparkreport.schema import Environment, Model, RunRecord, Status
    from sparkreport.store import RunStore

    store = RunStore(tmp_path / "r")
    for i, (util, tput, temp) in enumerate([(10.0, 5.0, -1.0), (90.0, 500.0, 60.0)], start=1):
        store.write(RunRecord(run_id=f"m.native.i{i}", campaign="c", iteration=i, model=Model(name="m"),
                              environment=Environment(name="native"),
                              metrics={"gpu_util_mean_pct": util, "output_throughput_tok_s": tput,
                                       "start_temp_c": temp},
                              status=Status(exit_code=0, ok=True)), [])
    code, out = invoke("stats", "--runs-dir", str(tmp_path / "r"), "--json")
    assert code == 0
    rows = {r["metric"]: r for r in json.loads(out)}
    util, tput, temp = rows["gpu_util_mean_pct"], rows["output_throughput_tok_s"], rows["start_temp_c"]
    assert (util["ci_low"], util["ci_high"], util["ci_clipped"]) == (0.0, 100.0, True)
    assert tput["ci_low"] == 0.0 and tput["ci_high"] > 500 and tput["ci_clipped"]
    assert temp["ci_low"] < -1 and not temp["ci_clipped"]
    code, out = invoke("stats", "--runs-dir", str(tmp_path / "r"))
    assert code == 0 and "ci_clipped" not in out
    assert out.strip().endswith("note: 2 intervals reached past what the quantity can be and were cut there (0, "
                                "or 100 for a percentage): arms of few runs give wide t-intervals (95% at n = 2: "
                                "12.7 standard errors each side).")


def test_empty_store_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    code, out = invoke("stats", "--runs-dir", str(tmp_path / "r"))
    assert code == 1 and out.strip() == f"Error: {tmp_path / 'r'}: no runs — ingest results first (`sparkreport ingest FILE`)"


def test_unknown_baseline_is_a_bad_invocation(phase1_store: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no sparkreport.yml: the baseline is the default
    code, out = invoke("compare", "--runs-dir", str(phase1_store), "--baseline", "docker")
    assert (code, out) == (2, "Error: --baseline: no environment called 'docker' — environment values here: "
                              "container, native\n")
    code, out = invoke("compare", "--runs-dir", str(phase1_store), "--factor", "model")
    assert (code, out) == (2, "Error: --baseline: no model called 'native' (no --baseline given: native is the "
                              "default) — pass --baseline with one of the model values here: deepseek, gpt120b, "
                              "qwen72b\n")


def test_embedded_default_published_figures() -> None:
    repo = Path(__file__).resolve().parents[1]
    code, out = invoke("stats", "--runs-dir", str(repo / "runs"), "--json", "--metric", "output_throughput_tok_s")
    rows = [r for r in json.loads(out) if r["campaign"] == "phase1-published"]
    assert len(rows) == 6 and all(r["source"] == "published" and r["n"] == 10 for r in rows)
    deepseek = next(r for r in rows if r["model"] == "deepseek" and r["environment"] == "native")
    # published σ = 0.55 is a population SD; the sample SD is 0.55·√(10/9)
    assert deepseek["sd"] == pytest.approx(0.55 * (10 / 9) ** 0.5)
    assert deepseek["median"] is None


def test_skipped_names_what_a_published_arm_cannot_get_and_reads_back_as_keys() -> None:
    from sparkreport.analysis.compare import skipped_tests

    repo = Path(__file__).resolve().parents[1]
    code, out = invoke("compare", "--runs-dir", str(repo / "runs"), "--json")
    rows = {r["metric"]: r["skipped"] for r in json.loads(out) if r["campaign"] == "phase1-published"}
    assert code == 0 and rows["output_throughput_tok_s"] == "Mann–Whitney U"  # n, mean and SD published
    assert rows["kv_cache_gib"] == "Mann–Whitney U, Welch t-test, difference CI, ratio CI, TOST, Hedges' g"
    assert skipped_tests(rows["output_throughput_tok_s"]) == {"mann_whitney"}
    assert skipped_tests(rows["kv_cache_gib"]) == {"mann_whitney", "welch", "diff_ci", "ratio_ci", "tost", "hedges_g"}
    assert skipped_tests(None) == set() and skipped_tests("ratio CI (the baseline mean is not clearly away from "
                                                          "zero)") == {"ratio_ci_near_zero"}


def test_claim_wording_for_every_verdict() -> None:
    from sparkreport.analysis import Finding

    base = {"model": "m", "model_name": "M", "metric": "kv_cache_gib", "unit": "GiB", "baseline": "native",
            "candidate": "container", "mean_baseline": 40.0, "mean_candidate": 20.0, "diff": -20.0,
            "diff_ci_low": -22.0, "diff_ci_high": -18.0, "ratio": 0.5, "ratio_ci_low": 0.45, "ratio_ci_high": 0.55,
            "p_welch": 1e-9, "p_holm": 1e-8, "p_tost": 0.9, "margin": 0.8, "min_detectable_effect": 2.0}
    lower = claim_sentence(base | {"verdict": "lower"})
    # the figures in GiB to the decimal the difference's interval (±2 GiB) leaves uncertain
    assert lower == ("M: container had 0.50× the KV cache of native (95% CI 0.45 to 0.55×): 20 vs 40 GiB, "
                     "a difference of -20 GiB (95% CI -22 to -18), Holm-adjusted p <\u00a00.001.")
    equivalent = claim_sentence(base | {"verdict": "equivalent", "mean_candidate": 40.1, "p_tost": 0.01})
    assert "is equivalent in container and native within the project's ±2% margin" in equivalent
    inconclusive = claim_sentence(base | {"verdict": "inconclusive", "p_holm": 0.3})
    assert "no significant difference detected" in inconclusive and "minimum detectable effect 5.0%" in inconclusive
    assert "equivalent" not in inconclusive.replace("equivalence", "")
    assert inconclusive == ("M: no significant difference detected in KV cache between container and native "
                            "(20 vs 40 GiB, Holm-adjusted p = 0.300, its 95% CI excluding zero before the "
                            "adjustment, minimum detectable effect 5.0%); equivalence within ±2% was not shown either.")
    spanning = claim_sentence(base | {"verdict": "inconclusive", "p_holm": 0.3, "diff_ci_high": 1.0})
    assert "excluding zero" not in spanning
    untestable = claim_sentence(base | {"verdict": "untested", "p_welch": float("nan"), "n_baseline": 10,
                                        "n_candidate": 10, "skipped": "Mann–Whitney U, Welch t-test"})
    assert untestable.endswith("published without a spread, so no test is possible.")
    # two single measured runs: no spread either, but nothing was published
    single = claim_sentence(base | {"verdict": "untested", "p_welch": float("nan"), "n_baseline": 1,
                                    "n_candidate": 1, "skipped": "Welch t-test"})
    assert single.endswith("in native — one run per arm, so no test is possible.")
    # a single run in one arm: the sentence names it
    for n_baseline, arm in ((1, "native"), (10, "container")):
        one = claim_sentence(base | {"verdict": "untested", "p_welch": float("nan"), "n_baseline": n_baseline,
                                     "n_candidate": 11 - n_baseline, "skipped": "Welch t-test"})
        assert one.endswith(f"in native — a single run in {arm}, so no test is possible.")
    flagged = claim_sentence(base | {"verdict": "lower"}, [Finding("error", "roofline", "x", ["r1"])])
    assert flagged.endswith("⚠ The checks found errors in these runs (throughput above the memory-bandwidth bound): see Data quality before relying on this.")


def test_design_labels_are_not_repeats() -> None:
    """cold and warm runs of the same iteration are two conditions, not a duplicated iteration."""
    records = []
    for env in ("native", "cgroup"):
        for i in range(1, 4):
            for cache in ("cold", "warm"):
                r = _run(f"{env}-{cache}-{i}", env, 100.0 + i, iteration=i)
                r.labels = {"cache": cache, "plan_index": f"{env}{cache}{i}"}
                records.append(r)
    ds = build_dataset(records)
    assert not [f for f in check(ds) if f.code == "duplicate-iteration"]
    records.append(_run("native-cold-1-again", "native", 101.0, iteration=1))
    records[-1].labels = {"cache": "cold", "plan_index": "x"}
    found = [f for f in check(build_dataset(records)) if f.code == "duplicate-iteration"]
    assert len(found) == 1 and found[0].runs == ["native-cold-1", "native-cold-1-again"]


def test_one_iteration_of_each_cache_state_is_not_a_repeat() -> None:
    """A smoke campaign (one iteration, cold and warm): each arm holds one run per cache state,
    as many values as runs, yet cold and warm recur across the arms — conditions, not names.
    A plan index, unique to each run of the campaign, still names runs."""
    records = []
    for index, (env, cache) in enumerate((e, c) for e in ("native", "cgroup", "chroot") for c in ("cold", "warm")):
        r = _run(f"{env}-{cache}-1", env, 100.0 + index, iteration=1)
        r.labels = {"cache": cache, "plan_index": str(index)}
        records.append(r)
    assert not [f for f in check(build_dataset(records)) if f.code == "duplicate-iteration"]
    for r in records:
        r.labels = {"plan_index": r.labels["plan_index"]}  # the cache state not recorded: repeats
    found = [f for f in check(build_dataset(records)) if f.code == "duplicate-iteration"]
    assert sorted(f.runs for f in found) == [["cgroup-cold-1", "cgroup-warm-1"], ["chroot-cold-1", "chroot-warm-1"],
                                             ["native-cold-1", "native-warm-1"]]


@pytest.mark.parametrize("command", ["stats", "compare", "diff"])
def test_unknown_metric_is_a_usage_error(phase1_store: Path, command: str) -> None:
    args = [command, "--metric", "bogus"]
    if command == "diff":
        args += ["--a-runs", str(phase1_store), "--b-runs", str(phase1_store)]
    else:
        args += ["--runs-dir", str(phase1_store)]
    code, out = invoke(*args)
    assert code == 2 and "'bogus' is not a canonical metric name (see `sparkreport metrics`)" in out


def test_a_failed_run_without_an_exit_code_is_reported_not_a_crash() -> None:
    records = [_run(f"b{i}", "native", 100.0 + i, iteration=i + 1) for i in range(3)]
    records.append(_run("bad", "native", 1.0, ok=False, iteration=4))
    lost = _run("lost", "native", 1.0, ok=False, iteration=5)
    lost.status.exit_code = None  # killed, or a source that records no exit code
    ds = build_dataset([*records, lost])
    reasons = included_runs(ds, AnalysisOptions()).set_index("run_id")["exclusion_reason"]
    assert (reasons["bad"], reasons["lost"]) == ("failed run (exit code 1)", "failed run")
    (failed,) = [f for f in check(ds) if f.code == "failed-run"]
    assert failed.message.startswith("c/m/native: 2 failed run(s) (exit code 1); ")


@pytest.mark.parametrize(("args", "message"), [
    (["--by", "nosuchlabel"], "--by: no run has a label 'nosuchlabel' — labels here: none"),
    (["--metric", "ttft_ms_p99"], "--metric: no run reports ttft_ms_p99 — metrics here: output_throughput_tok_s, "
                                  "request_throughput_req_s, pre_kv_memory_gib, kv_cache_gib, start_temp_c, end_temp_c"),
])
def test_stats_refuses_a_label_or_metric_no_run_has(phase1_store: Path, args: list[str], message: str) -> None:
    """`--by nosuchlabel` added a column of '-', `--metric` no run reports printed a blank line (exit 0)."""
    code, out = invoke("stats", "--runs-dir", str(phase1_store), *args)
    assert (code, out) == (2, f"Error: {message}\n")


def test_stats_prints_zero_spread_as_zero_and_large_numbers_in_plain_digits(tmp_path: Path) -> None:
    """Three identical runs printed `sd 8.911e-12 cv 1.675e-16` (the rounding of their mean), and
    a mean of 106382.9787 printed as 1.064e+05."""
    from sparkreport.store import RunStore

    store = RunStore(tmp_path / "r")
    for i in range(1, 4):
        store.write(RunRecord(run_id=f"m.native.i{i}", campaign="c", iteration=i, model=Model(name="m"),
                              environment=Environment(name="native"),
                              metrics={"output_throughput_tok_s": 53.2, "request_throughput_req_s": 106382.9787},
                              status=Status(exit_code=0, ok=True)), [])
    code, out = invoke("stats", "--runs-dir", str(tmp_path / "r"))
    assert code == 0
    assert out.splitlines() == [
        "campaign  model  environment  metric                    n  mean          sd  median        min           "
        "max           cv  ci_low        ci_high",
        "c         m      native       output_throughput_tok_s   3  53.2          0   53.2          53.2          "
        "53.2          0   53.2          53.2",
        "c         m      native       request_throughput_req_s  3  106,382.9787  0   106,382.9787  106,382.9787  "
        "106,382.9787  0   106,382.9787  106,382.9787",
    ]


def test_compare_with_nothing_to_pair_says_why_in_one_line(tmp_path: Path) -> None:
    """One environment printed the table's header row alone."""
    from sparkreport.store import RunStore

    store = RunStore(tmp_path / "r")
    for i in range(1, 4):
        store.write(_run(f"m.native.i{i}", "native", 100.0 + i, iteration=i), [])
    code, out = invoke("compare", "--runs-dir", str(tmp_path / "r"))
    assert (code, out) == (0, "nothing to compare: every run has environment native — compare needs runs in a "
                              "second environment (or pass --factor)\n")
    for i in range(1, 3):
        other = _run(f"k.docker.i{i}", "docker", 90.0 + i, iteration=i)
        other.model = Model(name="k")  # another model: no model in both environments
        store.write(other, [])
    code, out = invoke("compare", "--runs-dir", str(tmp_path / "r"))
    assert (code, out) == (0, "nothing to compare: no model has included runs in both native and another "
                              "environment (docker) with a metric both report\n")


def test_stats_per_level_of_a_factor_gives_the_arms_compare_contrasts() -> None:
    """`stats --factor label.cache`: an arm per cache level, pooling the environments — the arms
    `compare --factor label.cache` contrasts and the Results pages show under `factor:
    label.cache` — in a column named after the factor; published figures carry no cache, so
    they are in no arm. A factor no run has is refused."""
    repo = Path(__file__).resolve().parents[1]
    code, out = invoke("stats", "--runs-dir", str(repo / "runs"), "--json", "--metric", "output_throughput_tok_s",
                       "--factor", "label.cache")
    rows = json.loads(out)
    assert code == 0 and [(r["model"], r["label.cache"], r["n"]) for r in rows] == [
        ("llama-3-8b", "cold", 20), ("llama-3-8b", "warm", 20), ("qwen2-0.5b", "cold", 20), ("qwen2-0.5b", "warm", 20)]
    assert "environment" not in rows[0] and f"{rows[0]['ci_low']:,.2f}" == "2,543.91"
    code, out = invoke("compare", "--runs-dir", str(repo / "runs"), "--json", "--metric", "output_throughput_tok_s",
                       "--factor", "label.cache", "--baseline", "cold")
    means = {(r["model"], "warm"): r["mean_candidate"] for r in json.loads(out)}
    assert means == {(r["model"], "warm"): r["mean"] for r in rows if r["label.cache"] == "warm"}
    code, out = invoke("stats", "--runs-dir", str(repo / "runs"), "--factor", "label.nope")
    assert code == 2 and out.startswith("Error: --factor: no column 'label.nope' to group arms by — use environment")
