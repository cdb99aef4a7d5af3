"""Campaigns whose runs come from different inputs (trtllm-bench logs beside vLLM results): what
one kind of record gives and the other does not is never said of every run."""

from __future__ import annotations

import pytest

from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.render.builtin import describe_campaign, design_groups
from sparkreport.schema import Environment, Hardware, Model, Provenance, RunRecord, Software, Workload
from sparkreport.store import RunStore


def trtllm(run_id: str, env: str, campaign: str = "c", version: str = "1.0.0", tok_s: float = 1000.0) -> RunRecord:
    """A run parsed from a trtllm-bench log: lengths, KV cache fraction and GPU, no concurrency, no time."""
    return RunRecord(
        run_id=run_id, campaign=campaign, model=Model(id="Qwen/Qwen3-8B", name="Qwen3-8B"),
        environment=Environment(name=env, kind="container" if env == "docker" else "native"),
        workload=Workload(num_requests=512, input_len=1024.0, output_len=1024.0, kv_cache_fraction=0.9),
        software=Software(engine="trtllm", engine_version=version, backend="pytorch"),
        hardware=Hardware(gpu_name="NVIDIA GB10", memory_pool_gib=119.7),
        metrics={"output_throughput_tok_s": tok_s, "num_requests": 512.0},
        provenance=Provenance(format="trtllm-log"))


def vllm(run_id: str, env: str, campaign: str = "c", started_at_local: str | None = None, tok_s: float = 1600.0,
         completed: float = 400.0, failed: float = 0.0) -> RunRecord:
    """A run parsed from a vLLM result file: concurrency and its local start time, no lengths, no GPU."""
    return RunRecord(
        run_id=run_id, campaign=campaign, started_at_local=started_at_local,
        model=Model(id="openai/gpt-oss-20b", name="gpt-oss-20b"),
        environment=Environment(name=env, kind="container" if env == "docker" else "native"),
        workload=Workload(num_requests=int(completed), concurrency=32),
        software=Software(engine="vllm", backend="openai-chat"),
        metrics={"output_throughput_tok_s": tok_s, "num_requests": completed, "failed_requests": failed},
        provenance=Provenance(format="vllm-json"))


def mixed(campaign: str = "c", version: str = "1.0.0") -> list[RunRecord]:
    return ([trtllm(f"{campaign}-t{env}{i}", env, campaign, version) for env in ("native", "docker") for i in range(3)]
            + [vllm(f"{campaign}-v{env}{i}", env, campaign) for env in ("native", "docker") for i in range(2)])


def test_a_setting_only_some_runs_record_is_not_held_constant() -> None:
    """Concurrency 32 is in the vLLM records only, the lengths, KV cache fraction and GPU in the
    trtllm ones only: none is held constant over the campaign, each is said with its runs."""
    d = describe_campaign(mixed(), "native")
    assert d["held"] == []
    assert [(p["label"], p["value"], p["scope"]) for p in d["partly"]] == [
        ("input length", "1024 tokens", "the 6 trtllm runs"),
        ("output length", "1024 tokens", "the 6 trtllm runs"),
        ("concurrency", "32", "the 4 vllm runs"),
        ("KV cache fraction of free memory", "0.9", "the 6 trtllm runs"),
        ("engine version", "1.0.0", "the 6 trtllm runs"),
        ("GPU", "NVIDIA GB10", "the 6 trtllm runs"),
        ("memory pool", "119.7 GiB", "the 6 trtllm runs"),
    ]
    assert "requests per run: 512 / 400" in d["varying"]
    # every run records them: held constant, as before
    alone = describe_campaign([trtllm(f"t{i}", "native") for i in range(3)], "native")
    assert ["GPU", "NVIDIA GB10"] in alone["held"] and alone["partly"] == []


def test_runs_no_kind_names_are_counted() -> None:
    """Where the runs that record a setting are not all the runs of some engine, format,
    environment or model, they are counted."""
    runs = [trtllm(f"t{i}", "native") for i in range(4)]
    runs[0].hardware.gpu_name = None
    d = describe_campaign(runs, "native")
    assert {"label": "GPU", "value": "NVIDIA GB10", "scope": "3 of the 4 runs", "scope_key": "3 of the 4 runs"} \
        in d["partly"]


def test_campaigns_of_one_design_name_the_runs_a_differing_setting_is_recorded_by() -> None:
    from types import SimpleNamespace

    described = [{"campaign": SimpleNamespace(name=name, description=None, source=None, models=["m"], design={},
                                              published=False, runs=10),
                  **describe_campaign(mixed(name, version), "native")}
                 for name, version in (("a", "1.0.0"), ("b", "1.1.0"))]
    [group] = design_groups(described)
    assert group["differs"] == [{"label": "engine version", "values": ["1.0.0", "1.1.0"],
                                 "scope": "the 6 trtllm runs"}]
    assert "engine version" not in [p["label"] for p in group["d"]["partly"]]
    assert ["concurrency", "32"] not in group["d"]["held"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    root = tmp_path_factory.mktemp("mixed")
    store = RunStore(root / "runs")
    for record in mixed():
        store.write(record, [])
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def text(site: RenderResult, path: str) -> str:
    return (site.docs_dir / path).read_text(encoding="utf-8")


def test_methodology_says_which_runs_record_a_setting(site: RenderResult) -> None:
    page = text(site, "methodology/index.md")
    assert "**Held constant**" not in page
    assert ("**Recorded by some runs only** (one value in the runs named; the other runs do not record them): "
            "input length 1024 tokens, output length 1024 tokens, KV cache fraction of free memory 0.9, "
            "engine version 1.0.0, GPU NVIDIA GB10, memory pool 119.7 GiB (the 6 trtllm runs); "
            "concurrency 32 (the 4 vllm runs).\n") in page
    assert "*Recorded\nby some runs only* names it with those runs." in page
