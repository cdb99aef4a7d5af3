"""Golden files per format and era, the version matrix, and bad input for every parser.

Each input ``tests/fixtures/<format>/<name>`` has ``<name>.expected.json`` beside it: either the
parsed runs (record without provenance, tables abridged) or ``{"error": "<substring>"}``.
Regenerate after an intended change with ``SPARKREPORT_UPDATE_GOLDEN=1 pytest tests/test_parsers.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sparkreport.errors import ParseError
from sparkreport.ingest import PARSERS, detect_parser
from sparkreport.ingest.base import ParsedRun, Source

FIXTURES = Path(__file__).parent / "fixtures"
PARSER_FORMATS = ("trtllm-log", "trtllm-report-json", "trtllm-request-json", "trtllm-iteration-log",
                  "vllm-text", "vllm-json", "nvidia-smi-csv")
UPDATE = os.environ.get("SPARKREPORT_UPDATE_GOLDEN") == "1"


def fixture_inputs(fmt: str | None = None) -> list[Path]:
    formats = [fmt] if fmt else list(PARSER_FORMATS)
    return [p for f in formats for p in sorted((FIXTURES / f).iterdir())
            if p.is_file() and not p.name.endswith(".expected.json")]


def expected_path(path: Path) -> Path:
    return path.with_name(path.name + ".expected.json")


def snapshot(runs: list[ParsedRun]) -> dict[str, Any]:
    """What a golden file pins: each run's record (no provenance) and its tables (abridged)."""
    out = []
    for run in runs:
        record = run.record.to_dict()
        for key in ("provenance", "run_id", "campaign"):
            record.pop(key)
        out.append({
            "natural_id": run.natural_id,
            "locator": run.locator,
            "raw": [item.name for item in run.raw],
            "keep_source_once": run.keep_source_once,
            "record": record,
            "tables": {t.name: {"columns": t.columns, "row_count": len(t.rows), "first_rows": t.rows[:3]}
                       for t in run.tables},
        })
    return json.loads(json.dumps({"runs": out}, default=str))


def parse_fixture(path: Path) -> dict[str, Any]:
    source = Source(path)
    try:
        parser = detect_parser(source)
        assert parser.name == path.parent.name, f"{path.name} detected as {parser.name}"
        return snapshot(parser.parse(source))
    except ParseError as exc:
        return {"error": exc.format_message().replace(str(path), path.name)}


@pytest.mark.parametrize("path", fixture_inputs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden(path: Path) -> None:
    actual = parse_fixture(path)
    target = expected_path(path)
    if UPDATE:
        target.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(target.read_text(encoding="utf-8"))
    if "error" in expected:
        assert "error" in actual, f"{path.name} parsed but should have failed"
        assert expected["error"] in actual["error"]
        assert "\n" not in actual["error"]
    else:
        assert actual == expected


def test_every_parser_format_has_fixtures() -> None:
    for fmt in PARSER_FORMATS:
        assert fmt in PARSERS
        assert fixture_inputs(fmt), f"no golden inputs for {fmt}"


def test_sparkreport_metrics_lists_every_metric_the_parsers_write() -> None:
    """Every metric name a parser writes for a fixture (``vllm bench latency``'s P10/P25/P75,
    vLLM's ``--metric-percentiles 99.9`` among them) is a line of ``sparkreport metrics``, which
    ``--metric`` and the stats pages accept."""
    from click.testing import CliRunner

    from sparkreport.cli import main

    listed = {line.split()[0] for line in CliRunner().invoke(main, ["metrics"]).output.splitlines()}
    written = {name for path in fixture_inputs() if "runs" in (snapshot := parse_fixture(path))
               for run in snapshot["runs"] for name in run["record"].get("metrics", {})}
    assert {"latency_ms_p10", "latency_ms_p25", "latency_ms_p75", "ttft_ms_p99_9"} <= written
    assert sorted(written - listed) == []


def _metrics(path: Path) -> list[dict[str, float | None]]:
    source = Source(path)
    return [run.record.metrics for run in PARSERS[path.parent.name]().parse(source)]


# -- version matrix ---------------------------------------------------------------------------

#: For each trtllm-bench era: the canonical metrics it reports (non-null). A diff between eras
#: reads this as "not reported by this version", never as a change to 0.
TRTLLM_MATRIX: dict[str, set[str]] = {
    "v0.12_statistics.log": {
        "num_requests", "avg_input_len", "avg_output_len", "tp_size", "pp_size", "max_batch_size",
        "max_num_tokens", "kv_cache_fraction", "output_throughput_tok_s", "request_throughput_req_s",
        "total_latency_ms", "memory_total_gib", "memory_available_gib", "kv_cache_gib",
        "kv_cache_max_tokens"},
    "v0.14_streaming.log": {
        "num_requests", "avg_input_len", "avg_output_len", "tp_size", "pp_size", "max_batch_size",
        "max_num_tokens", "kv_cache_fraction", "output_throughput_tok_s", "request_throughput_req_s",
        "total_latency_ms", "latency_ms_mean", "ttft_ms_mean", "itl_ms_mean"},
    "v0.17_pytorch_spaces.log": {
        "num_requests", "avg_input_len", "avg_output_len", "tp_size", "pp_size", "max_batch_size",
        "max_num_tokens", "kv_cache_fraction", "output_throughput_tok_s", "request_throughput_req_s",
        "total_latency_ms"},
    "v0.19_request_details.log": {
        "num_requests", "avg_input_len", "avg_output_len", "tp_size", "pp_size", "max_batch_size",
        "max_num_tokens", "request_throughput_req_s", "output_throughput_tok_s",
        "per_user_output_throughput_tok_s", "per_gpu_output_throughput_tok_s",
        "total_token_throughput_tok_s", "total_latency_ms", "latency_ms_mean", "gtps_tok_s_mean",
        "ttft_ms_mean", "tpot_ms_mean",
        *(f"{f}_{s}" for f in ("tpot_ms", "ttft_ms") for s in ("min", "max", "mean", "p50", "p95", "p99"))},
    "v0.21_autodeploy_streaming.log": {
        "num_requests", "avg_input_len", "avg_output_len", "tp_size", "pp_size", "max_batch_size",
        "max_num_tokens", "kv_cache_fraction", "request_throughput_req_s", "output_throughput_tok_s",
        "total_token_throughput_tok_s", "total_latency_ms", "latency_ms_mean",
        "per_user_output_throughput_tok_s", "per_gpu_output_throughput_tok_s", "ttft_ms_mean",
        "tpot_ms_mean", "gtps_tok_s_mean",
        *(f"{f}_{s}" for f in ("tpot_ms", "ttft_ms", "gtps_tok_s", "latency_ms")
          for s in ("min", "max", "mean", "p50", "p90", "p95", "p99"))},
    "v1.0_hyphen_rank_prefix.log": {
        "num_requests", "avg_input_len", "avg_output_len", "tp_size", "pp_size", "max_batch_size",
        "max_num_tokens", "kv_cache_fraction", "request_throughput_req_s", "output_throughput_tok_s",
        "total_token_throughput_tok_s", "total_latency_ms", "latency_ms_mean",
        "per_user_output_throughput_tok_s", "per_gpu_output_throughput_tok_s",
        "memory_total_gib", "memory_available_gib", "kv_cache_gib", "kv_cache_max_tokens",
        *(f"latency_ms_{s}" for s in ("min", "max", "p50", "p90", "p95", "p99"))},
    "v1.2_machine_details_spec.log": {
        "num_requests", "avg_input_len", "avg_output_len", "tp_size", "pp_size", "max_batch_size",
        "max_num_tokens", "kv_cache_fraction", "request_throughput_req_s", "output_throughput_tok_s",
        "total_token_throughput_tok_s", "total_latency_ms", "latency_ms_mean",
        "per_user_output_throughput_tok_s", "per_gpu_output_throughput_tok_s",
        "memory_total_gib", "memory_available_gib", "kv_cache_gib", "kv_cache_max_tokens",
        "pre_kv_memory_gib", *(f"latency_ms_{s}" for s in ("min", "max", "p50", "p90", "p95", "p99"))},
}


@pytest.mark.parametrize("name", sorted(TRTLLM_MATRIX))
def test_trtllm_version_matrix(name: str) -> None:
    (metrics,) = _metrics(FIXTURES / "trtllm-log" / name)
    reported = {k for k, v in metrics.items() if v is not None}
    assert reported == TRTLLM_MATRIX[name]
    assert all(v != 0 or k in {"failed_requests"} for k, v in metrics.items())


VLLM_MATRIX: dict[str, set[str]] = {
    "serve_old_benchmark_serving.txt": {
        "num_requests", "duration_s", "total_input_tokens", "total_output_tokens",
        "request_throughput_req_s", "output_throughput_tok_s", "total_token_throughput_tok_s",
        "request_rate_req_s",
        *(f"{f}_{s}" for f in ("ttft_ms", "tpot_ms", "itl_ms") for s in ("mean", "p50", "p99"))},
    "serve_new_e2el_p999.txt": {
        "num_requests", "failed_requests", "max_concurrency", "request_rate_req_s", "duration_s",
        "total_input_tokens", "total_output_tokens", "request_throughput_req_s",
        "output_throughput_tok_s", "total_token_throughput_tok_s",
        *(f"{f}_{s}" for f in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
          for s in ("mean", "p50", "p90", "p99", "p99_9"))},
    "throughput_new.txt": {"request_throughput_req_s", "total_token_throughput_tok_s",
                           "output_throughput_tok_s", "total_input_tokens", "total_output_tokens"},
    "throughput_old_pr8914.txt": {"request_throughput_req_s", "total_token_throughput_tok_s"},
    "latency.txt": {"latency_ms_mean", *(f"latency_ms_p{p}" for p in (10, 25, 50, 75, 90, 99))},
}


@pytest.mark.parametrize("name", sorted(VLLM_MATRIX))
def test_vllm_version_matrix(name: str) -> None:
    (metrics,) = _metrics(FIXTURES / "vllm-text" / name)
    assert {k for k, v in metrics.items() if v is not None} == VLLM_MATRIX[name]


def test_json_and_text_agree_on_names() -> None:
    """The --report_json of an era reports the same canonical names as its text report."""
    (json_metrics,) = _metrics(FIXTURES / "trtllm-report-json" / "report_1x_machine.json")
    (old_json,) = _metrics(FIXTURES / "trtllm-report-json" / "report_old_no_p90.json")
    assert "latency_ms_p90" in json_metrics and "latency_ms_p90" not in old_json
    assert "total_token_throughput_tok_s" not in old_json  # added Apr 2025: missing, not 0
    assert json_metrics["kv_cache_fraction"] == 0.9
    assert "kv_cache_fraction" not in old_json


# -- specific behaviours ----------------------------------------------------------------------

def test_seconds_become_ms_and_percent_becomes_fraction() -> None:
    (metrics,) = _metrics(FIXTURES / "trtllm-log" / "v0.12_statistics.log")
    assert metrics["total_latency_ms"] == pytest.approx(37028.59)
    assert metrics["kv_cache_fraction"] == pytest.approx(0.9)


def test_truncated_report_keeps_what_is_there() -> None:
    (run,) = PARSERS["trtllm-log"]().parse(Source(FIXTURES / "trtllm-log" / "truncated_mid_performance.log"))
    metrics = run.record.metrics
    assert metrics["total_token_throughput_tok_s"] == 1310.72
    assert "total_latency_ms" not in metrics
    assert any(w.startswith("truncated") for w in run.record.status.warnings)


def test_a_report_cut_inside_its_last_value_leaves_that_value_out(tmp_path: Path) -> None:
    """'[Latency] MAXIMUM: 2878.0000' cut after '2878' (or '28') still parses as a number, maybe a
    wrong one: an unterminated last line's value is left out and the run marked truncated; the
    same line with its line end is read."""
    whole = (FIXTURES / "trtllm-log" / "v1.0_hyphen_rank_prefix.log").read_text(encoding="utf-8")
    head = whole[:whole.index("[Latency] MAXIMUM: 2878") + len("[Latency] MAXIMUM: 28")]
    cut = tmp_path / "cut.log"
    cut.write_text(head, encoding="utf-8")
    (run,) = PARSERS["trtllm-log"]().parse(Source(cut))
    assert "latency_ms_max" not in run.record.metrics and run.record.metrics["latency_ms_min"] == 2860.0
    assert [w for w in run.record.status.warnings if w.startswith("truncated")] == [
        "truncated: the LATENCY breakdown is incomplete (5 values); the last line has no line end, so its value "
        f"may be cut off (line {head.count(chr(10)) + 1}): it is left out"]
    cut.write_text(head + "78.0000\n", encoding="utf-8")
    (run,) = PARSERS["trtllm-log"]().parse(Source(cut))
    assert run.record.metrics["latency_ms_max"] == 2878.0
    assert not [w for w in run.record.status.warnings if w.startswith("truncated")]


def test_a_vllm_block_cut_inside_a_value_leaves_that_value_out(tmp_path: Path) -> None:
    """'Mean TTFT (ms): 88.40' cut after '88' is left out, and said so beside the open block."""
    whole = (FIXTURES / "vllm-text" / "serve_new_e2el_p999.txt").read_text(encoding="utf-8")
    head = whole[:whole.index("Mean TTFT (ms):")]
    head += whole[len(head):].split("\n", 1)[0].split("88")[0] + "88"
    cut = tmp_path / "cut.txt"
    cut.write_text(head, encoding="utf-8")
    (run,) = PARSERS["vllm-text"]().parse(Source(cut))
    assert "ttft_ms_mean" not in run.record.metrics
    assert run.record.status.warnings[-1] == (
        "truncated: the result block has no closing rule; the last line has no line end, so its value may be "
        f"cut off (line {head.count(chr(10)) + 1}): it is left out")
    cut.write_text(head + ".40\n", encoding="utf-8")
    (run,) = PARSERS["vllm-text"]().parse(Source(cut))
    assert run.record.metrics["ttft_ms_mean"] == 88.4


def test_two_runs_and_dataset_block_read_once() -> None:
    runs = PARSERS["trtllm-log"]().parse(Source(FIXTURES / "trtllm-log" / "two_runs_sweep.log"))
    assert [r.record.metrics["request_throughput_req_s"] for r in runs] == [22.22, 11.11]
    assert [r.record.metrics["kv_cache_gib"] for r in runs] == [16.05, 16.10]
    for run in runs:
        dataset = run.record.workload.details["dataset"]
        assert dataset["num_sequences"] == 64
        assert run.record.metrics["num_requests"] == 64
        assert not run.record.status.warnings
    assert len({r.natural_id for r in runs}) == 2


def test_machine_details_gb_label_is_recorded_as_gib() -> None:
    (run,) = PARSERS["trtllm-log"]().parse(Source(FIXTURES / "trtllm-log" / "v1.2_machine_details_spec.log"))
    hardware = run.record.hardware
    assert hardware.gpu_name == "NVIDIA GB10" and hardware.memory_pool_gib == 119.7
    assert "GiB" in hardware.details["machine_memory_label"]
    assert run.record.metrics["kv_cache_gib"] == 81.11  # the last allocation, not the profiling one
    assert run.record.software.details["speculative_decoding"]["acceptance_length"]["mean"] == 2.45


def test_engine_mb_lines_are_converted_and_labelled() -> None:
    (run,) = PARSERS["trtllm-log"]().parse(Source(FIXTURES / "trtllm-log" / "engine_backend_trt.log"))
    memory = run.record.hardware.details["memory_log"]
    assert memory["allocations"]["runtime_buffers_gib"] == pytest.approx(43.29e6 / 2**30)
    assert memory["trt_context_gpu_now_gib"] == pytest.approx(6683 / 1024)
    assert "MB" in run.record.hardware.details["memory_log_units"]["allocations.runtime_buffers_gib"]


def test_request_json_converts_ns_units() -> None:
    (run,) = PARSERS["trtllm-request-json"]().parse(Source(FIXTURES / "trtllm-request-json" / "requests.json"))
    (table,) = run.tables
    row = dict(zip(table.columns, table.rows[0], strict=True))
    assert row["ttft_ms"] == pytest.approx(200.0)
    assert row["e2el_ms"] == pytest.approx(4000.0)
    assert row["generation_throughput_tok_s"] == pytest.approx(33.421)
    assert row["end_s"] == pytest.approx(4.0)
    assert run.record.metrics["total_output_tokens"] == 192


def test_vllm_append_result_gives_one_run_per_object() -> None:
    runs = PARSERS["vllm-json"]().parse(Source(FIXTURES / "vllm-json" / "serve_old_append.json"))
    assert len(runs) == 2
    first, second = (r.record for r in runs)
    assert "request_rate_req_s" not in first.metrics and first.workload.details["request_rate"] == "inf"
    assert second.metrics["request_rate_req_s"] == 2.0
    assert second.workload.details["goodput_req_s"] == 1.1
    assert runs[0].tables[0].rows[0][3] == pytest.approx(50.0)  # ttft s → ms


def test_gb10_memory_is_missing_not_zero() -> None:
    (run,) = PARSERS["nvidia-smi-csv"]().parse(Source(FIXTURES / "nvidia-smi-csv" / "gb10_memory_na.csv"))
    record = run.record
    assert "memory_total_gib" not in record.metrics
    assert record.hardware.unified_memory is True
    assert record.hardware.details["nvidia_smi"]["memory_reported"] is False
    (table,) = run.tables
    assert all(row[table.columns.index("memory_used_mib")] is None for row in table.rows)
    assert record.metrics["start_temp_c"] == 35 and record.metrics["end_temp_c"] == 66


# -- bad input --------------------------------------------------------------------------------

BAD_INPUTS: dict[str, bytes] = {
    "empty": b"",
    "blank": b"\n\n   \n",
    "binary": bytes(range(256)) * 4,
    "latin1": "Model:\tcaf\xe9\n".encode("latin-1"),
    "wrong_json_shape": b'["not", "a", "report"]',
    "json_truncated": b'{"engine": {"model": "x"}, "performance": {"total_latency_ms": 1',
}


@pytest.mark.parametrize("fmt", PARSER_FORMATS)
@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_parse_error(tmp_path: Path, fmt: str, name: str) -> None:
    path = tmp_path / f"{name}.txt"
    path.write_bytes(BAD_INPUTS[name])
    with pytest.raises(ParseError) as info:
        PARSERS[fmt]().parse(Source(path))
    message = info.value.format_message()
    assert str(path) in message and "\n" not in message


@pytest.mark.parametrize(("fmt", "text", "line"), [
    ("trtllm-log", "= PERFORMANCE OVERVIEW\nRequest Throughput (req/sec):  12.x\nTotal Latency (ms): 1\n", 2),
    ("vllm-text", "==== Serving Benchmark Result ====\nSuccessful requests:   ten\nFailed requests: 0\n", 2),
    ("nvidia-smi-csv", "index, temperature.gpu\n0, 35\n0, hot\n", 3),
    ("trtllm-iteration-log", "{'iter': 0}\n{'iter': 1, oops}\n", 2),
])
def test_not_a_number_names_the_line(tmp_path: Path, fmt: str, text: str, line: int) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ParseError) as info:
        PARSERS[fmt]().parse(Source(path))
    assert info.value.line == line


def test_json_value_of_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text('{"world_info": {"tp_size": "two"}, "performance": {}}')
    with pytest.raises(ParseError, match="tp_size should be a number"):
        PARSERS["trtllm-report-json"]().parse(Source(path))


def test_iteration_log_is_never_evaluated(tmp_path: Path) -> None:
    path = tmp_path / "iter.log"
    path.write_text("{'iter': __import__('os').getcwd()}\n")
    with pytest.raises(ParseError):
        PARSERS["trtllm-iteration-log"]().parse(Source(path))


def test_big_log_streams(tmp_path: Path) -> None:
    """A log far bigger than the head (and with an over-long line) still parses, line by line."""
    path = tmp_path / "big.log"
    report = (FIXTURES / "trtllm-log" / "v1.0_hyphen_rank_prefix.log").read_text()
    with path.open("w") as handle:
        handle.write("[TRT-LLM] [I] start\n")
        handle.write("x" * 300_000 + "\n")
        for i in range(20_000):
            handle.write(f"[07/22/2025-03:04:05] [TRT-LLM] [I] iteration {i} done\n")
        handle.write(report)
    (run,) = PARSERS["trtllm-log"]().parse(Source(path))
    assert run.record.metrics["request_throughput_req_s"] == 22.22


def test_a_vllm_run_asked_for_its_prompts_whatever_failed() -> None:
    """workload.num_requests is what the run was asked to make: ``num_prompts`` where recorded,
    else completed and failed together; the completed count stays the ``num_requests`` metric.
    A run with failed requests is not a run of another design ("400 / 398")."""
    from sparkreport.ingest.vllm import requests_asked

    assert requests_asked({"num_requests": 398, "failed_requests": 2}, {"num_prompts": 400}) == 400
    assert requests_asked({"num_requests": 398, "failed_requests": 2}, {}) == 400
    assert requests_asked({"num_requests": 398}, {}) == 398
    assert requests_asked({}, {}) is None
    (run,) = PARSERS["vllm-text"]().parse(Source(FIXTURES / "vllm-text" / "serve_new_e2el_p999.txt"))
    assert run.record.workload.num_requests == 400 and run.record.metrics["num_requests"] == 398
