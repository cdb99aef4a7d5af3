"""Property tests: reports generated from the formats.md templates with random values, whitespace
damage and truncation parse back to their values — or fail with a clean ParseError, never with
another exception. Random bytes fed to every parser give a result or a ParseError."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkreport.errors import ParseError
from sparkreport.ingest import PARSERS
from sparkreport.ingest.base import ParsedRun, Source

PARSER_FORMATS = ("trtllm-log", "trtllm-report-json", "trtllm-request-json", "trtllm-iteration-log",
                  "vllm-text", "vllm-json", "nvidia-smi-csv")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Line = tuple[str, str | None, float | None]  # text, canonical metric, expected value

values = st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False)
counts = st.integers(min_value=1, max_value=100_000)


@contextmanager
def written(data: str | bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.log"
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
        yield path


def parse(fmt: str, path: Path) -> list[ParsedRun] | None:
    """Parse, allowing only ParseError out (returned as None)."""
    try:
        return PARSERS[fmt]().parse(Source(path))
    except ParseError as exc:
        assert "\n" not in exc.format_message()
        return None


def four(v: float) -> tuple[str, float]:
    text = f"{v:.4f}"
    return text, float(text)


def trtllm_lines(draw: st.DrawFn) -> list[Line]:
    """A current-era (1.x) report with random values, in template order."""
    sep = draw(st.sampled_from(["\t", "  ", "\t\t", " "]))
    pad = draw(st.sampled_from(["", " "]))  # banners with or without their trailing space
    lines: list[Line] = [("", None, None),
                         ("===========================================================", None, None),
                         ("= PYTORCH BACKEND" + pad, None, None),
                         ("===========================================================", None, None),
                         (f"Model:{sep}org/model-{draw(counts)}", None, None),
                         (f"TensorRT LLM Version:{sep}1.{draw(st.integers(0, 9))}.0", None, None),
                         ("", None, None)]
    n = draw(counts)
    lines += [("===========================================================", None, None),
              ("= REQUEST DETAILS" + pad, None, None),
              ("===========================================================", None, None),
              (f"Number of requests:{sep}{n}", "num_requests", float(n))]
    for label, metric in (("Average Input Length (tokens)", "avg_input_len"),
                          ("Average Output Length (tokens)", "avg_output_len")):
        text, value = four(draw(values))
        lines.append((f"{label}:{sep}{text}", metric, value))
    tp = draw(st.integers(1, 8))
    pct = draw(st.sampled_from(["90.00%", "None", "85.50%"]))
    lines += [("===========================================================", None, None),
              ("= WORLD + RUNTIME INFORMATION" + pad, None, None),
              ("===========================================================", None, None),
              (f"TP Size:{sep}{tp}", "tp_size", float(tp)),
              (f"EP Size:{sep}None", None, None),
              (f"KV Memory Percentage:{sep}{pct}", "kv_cache_fraction",
               None if pct == "None" else float(pct.rstrip("%")) / 100),
              (f"Issue Rate (req/sec):{sep}{draw(values):.4E}", None, None),
              ("", None, None),
              ("===========================================================", None, None),
              ("= PERFORMANCE OVERVIEW" + pad, None, None),
              ("===========================================================", None, None)]
    for label, metric in (("Request Throughput (req/sec)", "request_throughput_req_s"),
                          ("Total Output Throughput (tokens/sec)", "output_throughput_tok_s"),
                          ("Total Token Throughput (tokens/sec)", "total_token_throughput_tok_s"),
                          ("Total Latency (ms)", "total_latency_ms"),
                          ("Average request latency (ms)", "latency_ms_mean"),
                          ("Per User Output Throughput [w/ ctx] (tps/user)", "per_user_output_throughput_tok_s"),
                          ("Per GPU Output Throughput (tps/gpu)", "per_gpu_output_throughput_tok_s")):
        text, value = four(draw(values))
        lines.append((f"{label}:{sep}{text}", metric, value))
    lines += [("", None, None), ("-- Request Latency Breakdown (ms) -----------------------", None, None),
              ("", None, None)]
    for key, stat in (("P50    ", "p50"), ("P90    ", "p90"), ("P95    ", "p95"), ("P99    ", "p99"),
                      ("MINIMUM", "min"), ("MAXIMUM", "max")):
        text, value = four(draw(values))
        lines.append((f"[Latency] {key}: {text}", f"latency_ms_{stat}", value))
    return lines


@st.composite
def trtllm_report(draw: st.DrawFn) -> tuple[list[Line], int, bool, str]:
    lines = trtllm_lines(draw)
    keep = draw(st.integers(min_value=1, max_value=len(lines)))
    cut_mid_line = draw(st.booleans()) and keep < len(lines)
    prefix = draw(st.sampled_from(["", "[01/18/2025-01:01:42] [TRT-LLM] [I] ",
                                   "[01/18/2025-01:01:42] [TRT-LLM] [RANK 0] [I] "]))
    trailing = draw(st.sampled_from(["", " ", "   "]))
    return lines, keep, cut_mid_line, prefix + trailing


@given(trtllm_report(), st.data())
@SETTINGS
def test_trtllm_report_round_trip(report: tuple[list[Line], int, bool, str], data: st.DataObject) -> None:
    lines, keep, cut_mid_line, decoration = report
    trailing = decoration[len(decoration.rstrip(" ")):]
    prefix = decoration.rstrip(" ")
    rendered = [text + trailing for text, _, _ in lines[:keep]]
    rendered[0] = (prefix + " " + rendered[0]) if prefix else rendered[0]
    body = "\n".join(rendered) + "\n"
    checked = lines[:keep]
    if cut_mid_line:
        partial = lines[keep][0]
        body += partial[: data.draw(st.integers(0, max(0, len(partial) - 1)))]
    with written(body) as path:
        runs = parse("trtllm-log", path)
    if runs is None:
        return
    assert len(runs) == 1
    metrics = runs[0].record.metrics
    for _text, metric, value in checked:
        if metric is None:
            continue
        if value is None:
            assert metrics.get(metric) is None
        else:
            assert metrics[metric] == value or abs(metrics[metric] - value) <= 1e-9 * max(1.0, value)
    complete = keep == len(lines) and not cut_mid_line
    truncated = any(w.startswith("truncated") for w in runs[0].record.status.warnings)
    assert truncated != complete


@st.composite
def vllm_block(draw: st.DrawFn) -> tuple[list[Line], int]:
    def label(text: str) -> str:
        return draw(st.sampled_from([text, text.lower(), text.upper()]))

    lines: list[Line] = [("============ Serving Benchmark Result ============", None, None)]
    n = draw(counts)
    lines.append((f"{label('Successful requests:'):<40} {n:<10}", "num_requests", float(n)))
    if draw(st.booleans()):
        failed = draw(st.integers(0, 10))
        lines.append((f"{'Failed requests:':<40} {failed:<10}", "failed_requests", float(failed)))
    for text, metric in (("Benchmark duration (s):", "duration_s"),
                         ("Request throughput (req/s):", "request_throughput_req_s"),
                         ("Output token throughput (tok/s):", "output_throughput_tok_s"),
                         (draw(st.sampled_from(["Total Token throughput (tok/s):",
                                                "Total token throughput (tok/s):"])),
                          "total_token_throughput_tok_s")):
        value = float(f"{draw(values):.2f}")
        lines.append((f"{label(text):<40} {value:<10.2f}", metric, value))
    lines.append(("---------------Time to First Token----------------", None, None))
    for stat, key in (("Mean", "mean"), ("Median", "p50"), ("P99", "p99"), ("P99.9", "p99_9")):
        value = float(f"{draw(values):.2f}")
        lines.append((f"{stat + ' TTFT (ms):':<40} {value:<10.2f}", f"ttft_ms_{key}", value))
    lines.append(("=" * 50, None, None))
    return lines, draw(st.integers(min_value=1, max_value=len(lines)))


@given(vllm_block())
@SETTINGS
def test_vllm_block_round_trip(block: tuple[list[Line], int]) -> None:
    lines, keep = block
    body = "\n".join(text for text, _, _ in lines[:keep]) + "\n"
    with written(body) as path:
        runs = parse("vllm-text", path)
    assert runs is not None and len(runs) == 1
    metrics = runs[0].record.metrics
    for _text, metric, value in lines[:keep]:
        if metric is not None:
            assert metrics[metric] == value
    truncated = any(w.startswith("truncated") for w in runs[0].record.status.warnings)
    assert truncated == (keep < len(lines))


NULLS = ["[N/A]", "[Not Supported]", "[Insufficient Permissions]"]


@given(st.lists(st.tuples(st.one_of(st.integers(0, 100), st.sampled_from(NULLS)),
                          st.one_of(st.integers(0, 200_000), st.sampled_from(NULLS))),
                min_size=1, max_size=20),
       st.booleans())
@SETTINGS
def test_nvidia_smi_nulls_never_become_zero(rows: list[tuple[int | str, int | str]], units: bool) -> None:
    header = "index, temperature.gpu, memory.used [MiB]"
    body = [header] + [f"0, {t}, {m}{' MiB' if units and isinstance(m, int) else ''}" for t, m in rows]
    with written("\n".join(body) + "\n") as path:
        runs = parse("nvidia-smi-csv", path)
    assert runs is not None
    (table,) = runs[0].tables
    for (t, m), row in zip(rows, table.rows, strict=True):
        assert row[1] == (None if isinstance(t, str) else float(t))
        assert row[2] == (None if isinstance(m, str) else float(m))


FRAGMENTS = ["= PERFORMANCE OVERVIEW", "Total Latency (ms):", "[TPOT] P50    :", "= DATASET DETAILS",
             "============ Serving Benchmark Result ============", "Mean TTFT (ms):", "{'iter': 1}",
             '{"request_throughput": ', '[{"start_timestamp": 1}]', "index, memory.used [MiB]",
             "[N/A]", "None", "N/A", "1.0526E+15", "90.00%", "\t", "  ", "\n", ":", ","]


@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=40),
       st.sampled_from(PARSER_FORMATS))
@SETTINGS
def test_random_text_gives_result_or_parse_error(parts: list[str], fmt: str) -> None:
    with written("".join(parts)) as path:
        parse(fmt, path)


@given(st.binary(max_size=400), st.sampled_from(PARSER_FORMATS))
@SETTINGS
def test_random_bytes_give_result_or_parse_error(blob: bytes, fmt: str) -> None:
    with written(blob) as path:
        parse(fmt, path)


CELLS = st.one_of(st.integers(0, 200_000).map(str), st.sampled_from(NULLS + ["96 %", "7650 MiB", "12.x", "", " 5 ",
                                                                           '"7"', "NVIDIA GB10", "2025/01/01 00:00:00.1"]))


@given(st.lists(st.lists(CELLS, min_size=4, max_size=4), min_size=1, max_size=12),
       st.sampled_from(["\n", "\r\n"]), st.booleans(), st.sampled_from(["", "", "\r", "  \n", "\xff", ", 1"]))
@SETTINGS
def test_nvidia_smi_fast_reader_agrees_with_the_row_reader(rows: list[list[str]], newline: str, blank: bool,
                                                           damage: str) -> None:
    """The pyarrow path of read_samples gives what the line-by-line reader gives, or hands the
    file to it (so errors still name their line)."""
    from sparkreport.ingest import nvidia_smi

    header = "index, name, utilization.gpu [%], memory.used [MiB]"
    lines = [header] + [", ".join(row) for row in rows]
    if blank:
        lines.insert(len(lines) // 2 + 1, "")
    text = newline.join(lines) + newline
    if damage:
        text = text[: len(text) // 2] + damage + text[len(text) // 2:]
    with written(text) as path:
        try:
            expected = nvidia_smi._read_rows(path)
        except ParseError as exc:
            expected_error: ParseError | None = exc
        else:
            expected_error = None
        try:
            got = nvidia_smi.read_samples(path)
        except ParseError as exc:
            assert expected_error is not None and exc.format_message() == expected_error.format_message()
            return
    assert expected_error is None
    assert (got[0].columns, [list(r) for r in got[0].rows], got[1]) == (expected[0].columns, expected[0].rows,
                                                                       expected[1])


def test_nvidia_smi_plain_files_take_the_columnar_path() -> None:
    from sparkreport.ingest import nvidia_smi

    fixture = Path(__file__).parent / "fixtures" / "nvidia-smi-csv" / "h100_header_units.csv"
    fast = nvidia_smi._read_columnar(fixture)
    assert fast is not None
    assert [list(r) for r in fast[0].rows] == nvidia_smi._read_rows(fixture)[0].rows
