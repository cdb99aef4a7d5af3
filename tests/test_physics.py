"""Physical-plausibility checks: the Phase 1 flaws are caught; sound data raises no alarm."""

from __future__ import annotations

from pathlib import Path

from sparkreport.analysis import check
from sparkreport.analysis.physics import fit_identity
from sparkreport.catalogs import match_hardware, match_model
from sparkreport.dataset import Dataset, build_dataset
from sparkreport.schema import Environment, Hardware, Model, RunRecord, Workload


def codes(ds: Dataset) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in check(ds):
        out.setdefault(f.code, []).append(f.message)
    return out


def test_catalog_facts() -> None:
    gb10 = match_hardware("NVIDIA GB10")
    assert gb10 is not None and gb10.bandwidth_gb_s == 273 and gb10.unified_memory
    assert match_hardware("NVIDIA H100 80GB HBM3").id == "h100-sxm"  # type: ignore[union-attr]
    assert match_hardware("Imaginary GPU") is None
    qwen = match_model("Qwen/Qwen2.5-72B-Instruct")
    assert qwen is not None and round(qwen.weight_gib, 1) == 135.4
    assert qwen.kv_bytes_per_token() == 2 * 80 * 8 * 128 * 2
    inline = match_model("acme/tiny", details={"params_b": 1.0, "layers": 4, "kv_heads": 2, "head_dim": 64})
    assert inline is not None and inline.weight_bytes == 2e9


def test_phase1_flaws_are_caught(phase1_dataset: Dataset) -> None:
    found = codes(phase1_dataset)
    capacity = found["capacity-weights"]
    assert len(capacity) == 2 and all("qwen72b" in m and "135.41 GiB" in m and "119.64 GiB" in m for m in capacity)
    assert len(found["roofline"]) == 2 and all("qwen72b" in m and "93.88 tok/s" in m for m in found["roofline"])
    assert any("DeepSeek" in m and "Qwen2.5-72B" in m for m in found["size-insensitive"])
    identity = found["derived-identity"]
    assert len(identity) == 1 and identity[0].startswith("phase1: KV cache = 0.900 × (pool − memory before the KV cache)")
    assert "capacity-peak" in found and all("qwen72b" in m for m in found["capacity-peak"])
    # gpt-oss-120b (MXFP4, ≈ 60 GiB) and the 7B fit in the pool: no capacity finding for them
    assert not any("gpt120b" in m or "deepseek" in m for m in capacity + found["capacity-peak"])


def test_a_finding_writes_its_sizes_in_one_unit_at_one_precision(phase1_dataset: Dataset) -> None:
    """The roofline sentence read "273 GB/s ÷ 145.4 GB (= 135.4 GiB)", the capacity one "90.02 GiB
    … (135.4 GiB)": every size in GiB (a bandwidth in GiB/s) with two decimals, as the memory
    tables write them, and every throughput of a sentence with the same decimals."""
    import re

    messages = [f.message for f in check(phase1_dataset)
                if f.code in ("capacity-weights", "capacity-peak", "roofline", "size-insensitive")]
    assert len(messages) == 10
    for message in messages:
        # the one GB/s: the data sheet's bandwidth, quoted as its source writes it beside the GiB/s
        assert not re.search(r"\bGB\b|GB/s", message.replace("(the data sheet's 273 GB/s)", "")), message
        sizes = re.findall(r"([\d,.]+) GiB", message)
        assert sizes and all(len(size.split(".")[1]) == 2 for size in sizes), message
        rates = re.findall(r"([\d,.]+) (?:vs [\d,.]+ )?tok/s", message)
        assert len({len(rate.split(".")[1]) for rate in rates if "." in rate}) <= 1, message
    roofline = next(m for m in messages if "bandwidth bound" in m)
    assert "× 254.25 GiB/s (the data sheet's 273 GB/s) ÷ 135.41 GiB of weights read per decode step" in roofline


def _runs(model_id: str, env: str, tput: list[float], peak: float, kv: float, gpu: str = "NVIDIA H100 80GB HBM3",
          pool: float = 79.2, concurrency: int = 8) -> list[RunRecord]:
    return [
        RunRecord(
            run_id=f"{env}-{model_id.split('/')[-1]}-{i}", campaign="ok", iteration=i + 1,
            started_at_local=f"2026-01-01T00:{(i * 2 + (env == 'cgroup')):02d}:00",
            model=Model(id=model_id, name=model_id.split("/")[-1]), environment=Environment(name=env),
            workload=Workload(concurrency=concurrency), hardware=Hardware(gpu_name=gpu, memory_pool_gib=pool),
            metrics={"output_throughput_tok_s": t, "peak_memory_gib": peak, "kv_cache_gib": kv,
                     "start_temp_c": 35.0},
        )
        for i, t in enumerate(tput)
    ]


def test_sound_data_raises_no_physical_alarm() -> None:
    records = (
        _runs("Qwen/Qwen2-1.5B", "native", [900, 905, 898], 20.0, 15.0)
        + _runs("Qwen/Qwen2-1.5B", "cgroup", [901, 899, 903], 20.5, 15.0)
        + _runs("meta-llama/Meta-Llama-3-8B", "native", [300, 302, 299], 40.0, 20.0)
        + _runs("meta-llama/Meta-Llama-3-8B", "cgroup", [301, 300, 298], 40.2, 20.0)
    )
    found = codes(build_dataset(records))
    for code in ("capacity-weights", "capacity-peak", "roofline", "size-insensitive", "covariate-order",
                 "covariate-temperature"):
        assert code not in found, found.get(code)


def test_roofline_triggers_above_the_bound() -> None:
    # Llama-3-70B BF16 on an H100 at concurrency 1: ≤ 3350 / 141.2 ≈ 23.7 tok/s
    records = _runs("meta-llama/Meta-Llama-3-70B", "native", [40.0, 41.0], 150, 5, pool=200, concurrency=1)
    found = codes(build_dataset(records))
    assert "roofline" in found and "23.73 tok/s" in found["roofline"][0]
    ok = _runs("meta-llama/Meta-Llama-3-70B", "native", [20.0, 21.0], 150, 5, pool=200, concurrency=1)
    assert "roofline" not in codes(build_dataset(ok))


def test_unknown_hardware_and_model_skip_visibly() -> None:
    records = _runs("acme/secret-model", "native", [10.0, 11.0], 5, 1, gpu="Acme X1")
    found = codes(build_dataset(records))
    assert "model-unknown" in found
    records = _runs("Qwen/Qwen2-1.5B", "native", [10.0, 11.0], 5, 1, gpu="Acme X1")
    assert "hardware-unknown" in codes(build_dataset(records))


def test_identity_needs_a_real_fit() -> None:
    records = (_runs("Qwen/Qwen2-1.5B", "native", [900, 901], 20.0, 15.0)
               + _runs("Qwen/Qwen2-1.5B", "cgroup", [900, 901], 30.0, 40.0)
               + _runs("meta-llama/Meta-Llama-3-8B", "native", [300, 301], 25.0, 3.0))
    ds = build_dataset(records)
    from sparkreport.analysis import AnalysisOptions, included_runs
    from sparkreport.analysis.physics import arm_points

    assert fit_identity(arm_points(ds, included_runs(ds, AnalysisOptions()))) == []


def test_separate_blocks_are_flagged() -> None:
    native = _runs("Qwen/Qwen2-1.5B", "native", [900, 901, 902], 20.0, 15.0)
    later = _runs("Qwen/Qwen2-1.5B", "cgroup", [900, 901, 902], 20.0, 15.0)
    for r in later:
        r.started_at_local = r.started_at_local.replace("T00", "T05")  # type: ignore[union-attr]
    assert "covariate-order" in codes(build_dataset(native + later))


def test_an_intercept_that_rounds_to_zero_reads_plus_zero() -> None:
    """KV cache = 0.9 × (pool − memory) − 0.003 GiB: the finding reads '+0.00 GiB', never '-0.00'
    (Data quality once split one identity into rows of '+0.00' and '-0.00')."""
    records = []
    for model, pre in (("Qwen/Qwen2-1.5B", 20.0), ("meta-llama/Meta-Llama-3-8B", 30.0), ("Qwen/Qwen2-7B", 40.0)):
        kv = 0.9 * (79.2 - pre) - 0.003
        records += _runs(model, "native", [900, 901, 902], pre + kv, kv)
    [identity] = codes(build_dataset(records))["derived-identity"]
    assert identity.startswith("ok: KV cache = 0.900 × (pool − (peak − KV)) +0.00 GiB fits all 3 arms")


def test_a_data_quality_sentence_quotes_a_published_figure_as_published(published_store: Path) -> None:
    """The Phase 1 study printed DeepSeek's container throughput as "119.40 tok/s" (its record
    holds the float 119.4); the Results table and the posts print "119.40", so the size check's
    sentence quotes it so too (figures.num: the catalog's decimals), not "119.4" — a figure
    reads the same on every page, and as its source printed it."""
    from sparkreport.analysis import AnalysisOptions
    from sparkreport.dataset import load_dataset
    from sparkreport.figures import num

    assert [num(119.4, "output_throughput_tok_s"), num(119.33, "output_throughput_tok_s"),
            num(119.33333, "output_throughput_tok_s"), num(2544.0, "output_throughput_tok_s")] == [
        "119.40", "119.33", "119.33", "2,544.00"]
    messages = [f.message for f in check(load_dataset(published_store), AnalysisOptions())
                if f.code == "size-insensitive" and "/container:" in f.message]
    assert messages and any("(119.40 vs " in m for m in messages), messages
