"""Ingest → run store → dataset on the real Phase 1 data, and what bad input produces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.dataset import load_dataset
from sparkreport.store import RunStore

# The study's published per-arm means (seeds/000, "Detailed Results"): peak GiB, KV GiB, tok/s.
PUBLISHED = {
    ("deepseek", "native"): (70.47, 44.31, 119.79),
    ("deepseek", "container"): (101.30, 16.57, 119.40),
    ("gpt120b", "native"): (71.72, 43.19, 120.26),
    ("gpt120b", "container"): (93.43, 23.65, 120.41),
    ("qwen72b", "native"): (70.03, 44.71, 119.33),
    ("qwen72b", "container"): (90.02, 26.72, 119.51),
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_ingest_then_stats_reproduces_published_means(phase1_json: Path, tmp_path: Path) -> None:
    store = tmp_path / "r"
    code, out, _ = run("ingest", str(phase1_json), "--runs-dir", str(store), "-q")
    assert code == 0
    assert out.strip() == f"63 added, 0 already present, 0 rejected → {store}"
    code, out, _ = run("stats", "--runs-dir", str(store), "--json")
    assert code == 0
    rows = json.loads(out)
    means = {(r["model"], r["environment"], r["metric"]): r["mean"] for r in rows}
    for (model, env), (peak, kv, tput) in PUBLISHED.items():
        assert round(means[(model, env, "pre_kv_memory_gib")], 2) == peak
        assert round(means[(model, env, "kv_cache_gib")], 2) == kv
        assert round(means[(model, env, "output_throughput_tok_s")], 2) == tput


def test_reingest_adds_nothing(phase1_json: Path, tmp_path: Path) -> None:
    store = tmp_path / "r"
    run("ingest", str(phase1_json), "--runs-dir", str(store))
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    code, out, _ = run("ingest", str(phase1_json), "--runs-dir", str(store), "--campaign", "other")
    assert code == 0
    assert out.strip().endswith(f"0 added, 63 already present, 0 rejected → {store}")
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_run_folder_contents(phase1_store: Path) -> None:
    folder = phase1_store / "phase1" / "gpt120b-native-iter01-20251108_195154"
    data = json.loads((folder / "run.json").read_text())
    assert data["schema_version"] == 2
    assert data["environment"] == {"name": "native", "kind": "chroot", "details": data["environment"]["details"]}
    assert data["metrics"]["kv_cache_gib"] == 40.93
    assert "latency_ms_mean" not in data["metrics"]  # null in the source → missing, never 0
    assert data["provenance"]["source_locator"] == "models.gpt120b.native[1]"
    assert len(data["provenance"]["source_sha256"]) == 64
    kept = (folder / data["provenance"]["raw_files"][0]).resolve()
    assert kept.read_bytes() == Path(data["provenance"]["source_path"]).read_bytes()
    assert json.loads((folder / "record.json").read_text())["timestamp"] == "20251108_195154"


def test_dataset_columns_and_nulls(phase1_dataset) -> None:  # type: ignore[no-untyped-def]
    runs = phase1_dataset.runs
    for column in ("run_id", "campaign", "model", "model_name", "environment", "iteration", "exit_code",
                   "ok", "output_throughput_tok_s", "request_throughput_req_s", "peak_memory_gib",
                   "kv_cache_gib", "start_temp_c", "end_temp_c"):
        assert column in runs.columns
    assert len(runs) == 63
    assert "latency_ms_mean" not in runs.columns or runs["latency_ms_mean"].isna().all()


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json"])
def test_dataset_export(phase1_store: Path, tmp_path: Path, suffix: str) -> None:
    import os
    import stat

    out = tmp_path / f"d{suffix}"
    umask = os.umask(0o022)
    try:
        code, text, _ = run("dataset", "--runs-dir", str(phase1_store), "--out", str(out))
    finally:
        os.umask(umask)
    assert code == 0 and out.exists()
    assert text.startswith("63 runs, ")
    # a file to hand on (the Downloads page publishes these): readable by all, as any new file here
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # nothing left beside it
    import pandas as pd

    if suffix == ".parquet":
        frame = pd.read_parquet(out)
        import pyarrow.parquet as pq

        assert pq.read_schema(out).metadata[b"sparkreport.dataset_schema_version"] == b"2"
    elif suffix == ".csv":
        frame = pd.read_csv(out)
    else:
        frame = pd.DataFrame(json.loads(out.read_text())["runs"])
    assert len(frame) == 63


def test_label_option(phase1_json: Path, tmp_path: Path) -> None:
    store = tmp_path / "r"
    code, _, _ = run("ingest", str(phase1_json), "--runs-dir", str(store), "--label", "software.trtllm=1.2.0rc3")
    assert code == 0
    ds = load_dataset(store)
    assert set(ds.runs["label.software.trtllm"]) == {"1.2.0rc3"}
    code, _, err = run("ingest", str(phase1_json), "--runs-dir", str(store), "--label", "novalue")
    assert code == 2 and "is not KEY=VALUE" in err


BAD_INPUTS = {
    "truncated.json": (b'{"models": {"deepseek": {"native": [{"environment": "native", "model_name"', "is not valid JSON"),
    "wrongtype.json": (json.dumps({"models": {"m": {"native": [{"environment": "native", "model_name": "m",
                       "iteration": 1, "timestamp": "20251108_195154", "kv_cache": "lots"}]}}}).encode(),
                       "models.m.native[0].kv_cache should be a number, found 'lots'"),
    "empty.json": (b"", "the file is empty"),
    "garbage.bin": (bytes(range(256)) * 4, "is a binary file"),
    "shape.json": (b'{"models": [1, 2], "model_name": 1}', "expected {\"models\""),
    "badutf8.log": (b"= PERFORMANCE OVERVIEW\nRequest Throughput (req/sec): 1.0\n\xff\xfe oops\n", "is not UTF-8"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, name: str) -> None:
    content, expected = BAD_INPUTS[name]
    bad = tmp_path / name
    bad.write_bytes(content)
    store = tmp_path / "r"
    code, out, err = run("ingest", str(bad), "--runs-dir", str(store))
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {bad}")
    assert expected in lines[0]
    assert "Traceback" not in err + out
    assert not list(store.rglob("run.json")) if store.exists() else True


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"models": {\n  "m": {\n    "native": [,]\n  }\n}}\n')
    code, _, err = run("ingest", str(bad), "--runs-dir", str(tmp_path / "r"))
    assert code == 1
    assert f"{bad}:3: is not valid JSON" in err


def test_directory_ingest_goes_past_bad_files(phase1_json: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.json").write_bytes(phase1_json.read_bytes())
    (folder / "bad.json").write_text("{not json")
    (folder / "README.md").write_text("# notes\n")
    code, out, err = run("ingest", str(folder), "--runs-dir", str(tmp_path / "r"), "-q")
    assert code == 1
    assert "63 added, 0 already present, 1 rejected" in out
    assert err.count("error:") == 1 and "bad.json" in err


def test_unknown_format_lists_formats_tried(tmp_path: Path) -> None:
    odd = tmp_path / "notes.txt"
    odd.write_text("hello\n")
    code, _, err = run("ingest", str(odd), "--runs-dir", str(tmp_path / "r"))
    assert code == 1
    assert "format not recognised" in err and "phase1-aggregate" in err and "--format" in err


def test_unknown_forced_format_is_a_bad_invocation(tmp_path: Path, phase1_json: Path) -> None:
    """The README promises exit 2 for a bad invocation; an unknown --format exited 1."""
    from sparkreport.ingest import PARSERS

    code, _, err = run("ingest", str(phase1_json), "--runs-dir", str(tmp_path / "r"), "--format", "nope")
    assert (code, err) == (2, f"Error: --format: unknown format 'nope' — choose one of: {', '.join(PARSERS)} "
                              "(`sparkreport formats`)\n")
    assert not (tmp_path / "r").exists()


def test_an_unknown_dataset_output_type_is_a_bad_invocation(tmp_path: Path, phase1_store: Path) -> None:
    code, _, err = run("dataset", "--runs-dir", str(phase1_store), "--out", str(tmp_path / "d.xlsx"))
    assert (code, err) == (2, f"Error: --out: {tmp_path / 'd.xlsx'}: unknown output type .xlsx — use .csv, "
                              ".parquet or .json\n")


SEED_LOG = """[11/08/2025-19:50:01] [TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 74.23 GiB, available KV cache memory when calculating max tokens: 45.48 GiB, fraction is set 0.9, kv size per token is 57344. device total memory 119.64 GiB, temporary kv cache memory during profiling 0.50 GiB
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 40.93 GiB for max tokens in paged KV cache (766400).
[11/08/2025-19:51:40] [TRT-LLM] [I]

===========================================================
= PERFORMANCE OVERVIEW 
===========================================================
Request Throughput (req/sec):                     0.9441
Total Output Throughput (tokens/sec):             120.8445
Total Token Throughput (tokens/sec):              241.6890
Total Latency (ms):                               52961.0000
"""


def test_seed_pair_metadata_and_log(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    prefix = folder / "native_gpt120b_iter1_20251108_195154"
    meta = {"environment": "native", "model_name": "gpt120b", "model_id": "openai/gpt-oss-120b",
            "model_path": "/data/models/gpt-oss-120b", "iteration": 1, "timestamp": "20251108_195154",
            "start_temp_celsius": 38, "end_temp_celsius": 60, "exit_code": 0}
    Path(f"{prefix}_metadata.json").write_text(json.dumps(meta))
    Path(f"{prefix}.log").write_text(SEED_LOG)
    store = tmp_path / "r"
    code, out, err = run("ingest", str(folder), "--runs-dir", str(store))
    assert code == 0, err
    assert out.splitlines()[0] == "added    gpt120b-native-iter01-20251108_195154"
    record = RunStore(store).load(store / "phase1" / "gpt120b-native-iter01-20251108_195154" / "run.json")
    assert record.metrics["kv_cache_gib"] == 40.93
    assert record.metrics["pre_kv_memory_gib"] == 74.23
    assert record.metrics["output_throughput_tok_s"] == 120.8445
    assert record.metrics["kv_cache_fraction"] == 0.9
    assert record.metrics["start_temp_c"] == 38
    folder_files = sorted(p.name for p in (store / "phase1" / record.run_id).iterdir())
    assert folder_files == ["native_gpt120b_iter1_20251108_195154.log",
                            "native_gpt120b_iter1_20251108_195154_metadata.json", "run.json"]
    # the same run from the aggregate file would get the same id, so it is not stored twice
    assert record.run_id == "gpt120b-native-iter01-20251108_195154"


def test_environment_option_names_the_environment_of_every_run(tmp_path: Path) -> None:
    source = Path(__file__).parent / "fixtures" / "trtllm-log"
    log = sorted(source.glob("*.log"))[0]
    result = CliRunner().invoke(main, ["ingest", str(log), "--runs-dir", str(tmp_path / "runs"),
                                       "--environment", "docker", "-q"])
    assert result.exit_code == 0, result.output
    (record,) = load_dataset(tmp_path / "runs").records
    assert (record.environment.name, record.environment.kind) == ("docker", "container")


def test_a_failing_write_is_one_line_and_leaves_only_whole_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    logs = [str(p) for p in sorted((Path(__file__).parent / "fixtures" / "trtllm-log").glob("*.log"))]
    assert len(logs) >= 3
    original = RunStore.write
    calls = []

    def full_disk(self: RunStore, record: object, raw: object, tables: object = None, **kwargs: object) -> Path:
        calls.append(record)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(tmp_path / "runs" / "x"))
        return original(self, record, raw, tables, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RunStore, "write", full_disk)
    result = CliRunner().invoke(main, ["ingest", *logs, "--runs-dir", str(tmp_path / "runs"), "-q"])
    assert result.exit_code == 1
    stored = [p for p in (tmp_path / "runs").rglob("run.json")]
    assert result.output.splitlines()[-1] == (
        f"Error: {tmp_path / 'runs' / 'x'}: No space left on device — {len(stored)} runs were stored (each one "
        "whole); free space or fix permissions, then run the same ingest again to add the rest")
    # no staging folder left behind (the store's lock file stays: it is how writers take turns)
    assert [p.name for p in (tmp_path / "runs").rglob(".*")] == [".sparkreport.lock"]
    monkeypatch.setattr(RunStore, "write", original)
    again = CliRunner().invoke(main, ["ingest", *logs, "--runs-dir", str(tmp_path / "runs"), "-q"])
    assert again.exit_code == 0 and f" added, {len(stored)} already present, 0 rejected" in again.output
