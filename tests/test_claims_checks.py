"""Every plausibility finding states what it rests on (issue 19).

Model facts from the record before the catalog; the assumption each finding makes (precision,
weight size) stated in it and findings sharing one grouped; a two-arm fit never reported as
evidence; environments identified by (campaign, name).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from sparkreport.analysis import AnalysisOptions, check, compare, included_runs
from sparkreport.analysis.physics import arm_points, assumption_groups, model_facts_table
from sparkreport.dataset import Dataset, build_dataset
from sparkreport.execute.workloads import TorchWorkload
from sparkreport.render.describe import environment_descriptions
from sparkreport.schema import Environment, Hardware, Model, RunRecord, Workload

GB10 = Hardware(gpu_name="NVIDIA GB10", memory_pool_gib=119.64, unified_memory=True)
TORCH_RUN = Path(__file__).parent.parent / "runs" / "gpu-torch-native-vs-cgroup" / "llama-3-8b.native.warm.i01"


def _runs(model: Model, env: Environment, metrics: dict[str, float], *, campaign: str = "c", n: int = 3,
          hardware: Hardware = GB10, concurrency: int = 50) -> list[RunRecord]:
    return [
        RunRecord(run_id=f"{campaign}-{model.name}-{env.name}-{i}", campaign=campaign, iteration=i + 1,
                  model=model, environment=env, workload=Workload(concurrency=concurrency), hardware=hardware,
                  metrics={k: v * (1 + 0.002 * i) for k, v in metrics.items()})
        for i in range(n)
    ]


def _findings(records: list[RunRecord]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in check(build_dataset(records)):
        out.setdefault(f.code, []).append(f.message)
    return out


def _facts(ds: Dataset) -> list[dict[str, object]]:
    return model_facts_table(ds, included_runs(ds, AnalysisOptions()))


def test_unknown_model_with_its_architecture_in_the_record_is_checked() -> None:
    # Not in catalogs/models.yaml, but the record says what it is: 8B parameters in BF16 (14.9 GiB
    # of weights). A 5 GiB peak with a 2 GiB KV cache cannot have held it.
    model = Model(id="acme/private-8b", name="private-8b", display_name="Private-8B",
                  details={"params_b": 8.0, "layers": 32, "kv_heads": 8, "head_dim": 128, "dtype": "bf16"})
    found = _findings(_runs(model, Environment("native", "native"),
                            {"peak_memory_gib": 5.0, "kv_cache_gib": 2.0, "output_throughput_tok_s": 30.0}))
    assert "model-unknown" not in found
    (message,) = found["capacity-peak"]
    assert "peak memory in use, 5.01 GiB, is below the weights plus KV cache it must have held (16.91 GiB)" in message
    assert message.endswith("assumes Private-8B's weights: 8B parameters in BF16 (as the record states)")


def test_same_model_without_facts_is_skipped_visibly() -> None:
    found = _findings(_runs(Model(id="acme/private-8b", name="private-8b"), Environment("native", "native"),
                            {"peak_memory_gib": 5.0, "kv_cache_gib": 2.0}))
    assert "capacity-peak" not in found and "model-unknown" in found


def test_fp8_record_of_a_model_whose_bf16_weights_would_not_fit() -> None:
    # Qwen2.5-72B: 135.4 GiB in BF16 (more than the 119.64 GiB pool), about 68 GiB in FP8. The
    # Phase 1 figures — 70 GiB in use before the KV cache, 119 tok/s at 50 requests — are
    # impossible in BF16 and unremarkable in FP8.
    metrics = {"pre_kv_memory_gib": 70.03, "kv_cache_gib": 44.0, "output_throughput_tok_s": 119.3}
    fp8 = Model(id="Qwen/Qwen2.5-72B-Instruct", name="qwen72b", display_name="Qwen2.5-72B-Instruct",
                details={"dtype": "fp8"})
    ds = build_dataset(_runs(fp8, Environment("native", "native"), metrics))
    codes = {f.code for f in check(ds)}
    assert not codes & {"capacity-weights", "capacity-peak", "roofline"}, codes
    (facts,) = _facts(ds)
    assert facts["dtype"] == "fp8" and facts["dtype_stated"] and facts["weights_gib"] == 67.71
    assert facts["assumes"] == ("Qwen2.5-72B-Instruct's weights: 72.7B parameters in FP8 "
                                "(from the catalog; precision as the record states)")
    # The same figures with no precision in the record: the BF16 assumption, stated in every finding.
    bare = Model(id="Qwen/Qwen2.5-72B-Instruct", name="qwen72b", display_name="Qwen2.5-72B-Instruct")
    findings = check(build_dataset(_runs(bare, Environment("native", "native"), metrics)))
    flagged = [f for f in findings if f.code in ("capacity-weights", "capacity-peak", "roofline")]
    assert {f.code for f in flagged} == {"capacity-weights", "capacity-peak", "roofline"}
    assumption = ("Qwen2.5-72B-Instruct's weights: 72.7B parameters in BF16 "
                  "(from the catalog; the record states no precision)")
    assert all(f.assumes == [assumption] and f.message.endswith(f"assumes {assumption}") for f in flagged)
    # ... and grouped: three findings, one assumption — one doubt, not three independent checks.
    (group,) = assumption_groups(findings)
    assert group["assumes"] == assumption and sorted(group["codes"]) == ["capacity-peak", "capacity-weights",
                                                                         "roofline"]
    assert not any("independent" in f.message for f in findings)


def test_two_campaigns_with_a_same_named_environment_of_different_kinds() -> None:
    model = Model(id="Qwen/Qwen2-1.5B", name="qwen2-1.5b")
    metrics = {"output_throughput_tok_s": 900.0, "pre_kv_memory_gib": 4.0, "kv_cache_gib": 60.0}
    phase1 = (_runs(model, Environment("native", "chroot", {"rootfs": "/srv/trtllm-rootfs"}), metrics,
                    campaign="phase1")
              + _runs(model, Environment("container", "container"), {**metrics, "output_throughput_tok_s": 850.0},
                      campaign="phase1"))
    h200 = (_runs(model, Environment("native", "native"), {**metrics, "output_throughput_tok_s": 1500.0},
                  campaign="h200", hardware=Hardware(gpu_name="NVIDIA H200", memory_pool_gib=139.8))
            + _runs(model, Environment("container", "container"), {**metrics, "output_throughput_tok_s": 1490.0},
                    campaign="h200", hardware=Hardware(gpu_name="NVIDIA H200", memory_pool_gib=139.8)))
    records = phase1 + h200
    described = {(e["campaign"], e["name"]): e for e in environment_descriptions(records)}
    assert described[("phase1", "native")]["kinds"] == ["chroot"]
    assert described[("phase1", "native")]["details"] == {"rootfs": ["/srv/trtllm-rootfs"]}
    assert described[("h200", "native")]["kinds"] == ["native"] and described[("h200", "native")]["details"] == {}
    ds = build_dataset(records)
    arms = {(p.campaign, p.environment): p for p in arm_points(ds, included_runs(ds, AnalysisOptions()))}
    assert len(arms) == 4 and arms[("phase1", "native")].tput != arms[("h200", "native")].tput
    rows = compare(ds, metrics=["output_throughput_tok_s"])
    assert sorted(rows["campaign"]) == ["h200", "phase1"]  # each campaign's native is its own baseline
    by_campaign = dict(zip(rows["campaign"], rows["mean_baseline"], strict=True))
    assert round(by_campaign["h200"]) == 1503 and round(by_campaign["phase1"]) == 902


def test_a_two_arm_fit_is_not_evidence() -> None:
    # The unified-memory post: one run per environment. Any line fits two points.
    model = Model(name="unnamed")
    records = (_runs(model, Environment("native", "native"),
                     {"pre_kv_memory_gib": 78.31, "memory_available_gib": 41.33, "kv_cache_gib": 37.2}, n=1)
               + _runs(model, Environment("container", "container"),
                       {"pre_kv_memory_gib": 104.92, "memory_available_gib": 14.72, "kv_cache_gib": 13.31}, n=1))
    found = _findings(records)
    assert "derived-identity" not in found
    (message,) = found["derived-identity-untested"]
    assert "only 2 distinct points" in message and "R²" not in message


def test_torch_runner_writes_the_model_facts_into_the_record(tmp_path: Path) -> None:
    shutil.copyfile(TORCH_RUN / "torch-report.json", tmp_path / "torch-report.json")
    shutil.copyfile(TORCH_RUN / "torch-spec.json", tmp_path / "torch-spec.json")
    workload = TorchWorkload(SimpleNamespace(options={}))  # type: ignore[arg-type]
    result = workload.collect(SimpleNamespace(), SimpleNamespace(name="llama-3-8b"), tmp_path, {})  # type: ignore[arg-type]
    # Pages name it plainly where the campaign gives no display_name (not "random:llama-3-8b").
    assert result.model_id == "random:llama-3-8b" and result.model_display_name == "llama-3-8b shape (random weights)"
    assert result.model_details == {
        "params_b": 8.030261, "layers": 32, "kv_heads": 8, "head_dim": 128, "hidden_size": 4096, "dtype": "bf16",
        "weight_gb": 16.0605, "source": "recorded by the torch runner (the model as loaded)"}


def test_a_metric_missing_in_all_but_one_run_says_one_run() -> None:
    model, env = Model(id="m", name="m"), Environment(name="native", kind="native")
    records = _runs(model, env, {"output_throughput_tok_s": 100.0, "end_temp_c": 60.0}, n=3)
    for record in records[1:]:
        del record.metrics["end_temp_c"]
    records[2].metrics.pop("output_throughput_tok_s")
    found = _findings(records)["missing-metric"]
    assert any(m.endswith("end_temp_c missing in 2 of 3 runs; its statistics use the one run that reports it")
               for m in found)
    assert any(m.endswith("output_throughput_tok_s missing in 1 of 3 runs; its statistics use the 2 runs that "
                          "report it") for m in found)


def test_metrics_missing_in_the_same_runs_are_one_finding() -> None:
    """A run that lacks six metrics the others report: one finding naming four of them and
    counting the rest, about that run — not six rows of Data quality."""
    model, env = Model(id="m", name="m"), Environment(name="native", kind="native")
    names = ["latency_ms_max", "latency_ms_mean", "latency_ms_min", "latency_ms_p50", "tpot_ms_mean", "ttft_ms_mean"]
    records = _runs(model, env, {"output_throughput_tok_s": 100.0, **dict.fromkeys(names, 1.0)}, n=3)
    for name in names:
        del records[0].metrics[name]
    found = _findings(records)["missing-metric"]
    assert len(found) == 1, found
    assert found[0].endswith(": latency_ms_max, latency_ms_mean, latency_ms_min, latency_ms_p50 and 2 more metrics "
                             "missing in 1 of 3 runs; their statistics use the 2 runs that report them")


def test_every_finding_a_check_makes_has_a_title_in_words() -> None:
    """The pages name a check by its title (CHECK_TITLES), never by its code: every code a check
    in sparkreport/analysis emits has one, and no title is left for a code nothing emits."""
    import re

    from sparkreport.analysis.checks import CHECK_TITLES

    analysis = Path(__file__).resolve().parents[1] / "sparkreport" / "analysis"
    pattern = r'Finding\(\s*"(?:error|warning|info|note)",\s*"([a-z0-9-]+)"'
    emitted = {code for path in analysis.glob("*.py") for code in re.findall(pattern, path.read_text())}
    assert len(emitted) >= 20  # the pattern still finds them
    assert emitted == set(CHECK_TITLES)


def test_errors_behind_a_comparison_are_those_about_either_arms_runs() -> None:
    from sparkreport.analysis import Finding
    from sparkreport.analysis.claims import errors_behind

    row = {"campaign": "c", "model": "m", "baseline": "native", "candidate": "container"}
    arm_runs = {("c", "m", "native"): ["n1", "n2"], ("c", "m", "container"): ["k1"], ("c", "m2", "native"): ["x"]}
    base, cand = Finding("error", "roofline", "a", ["n2"]), Finding("error", "capacity-peak", "b", ["k1"])
    other, warning = Finding("error", "roofline", "c", ["x"]), Finding("warning", "high-cv", "d", ["n1"])
    assert errors_behind(row, [base, other, warning, cand], arm_runs) == [base, cand]
    assert errors_behind(row | {"model": "m3"}, [base, cand], arm_runs) == []
