"""Ingest of a folder mixing every parser format, through the library and the CLI."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.store import RunStore

FIXTURES = Path(__file__).parent / "fixtures"
FORMATS = ("trtllm-log", "trtllm-report-json", "trtllm-request-json", "trtllm-iteration-log",
           "vllm-text", "vllm-json", "nvidia-smi-csv")


def good_inputs() -> list[Path]:
    out = []
    for fmt in FORMATS:
        for path in sorted((FIXTURES / fmt).iterdir()):
            if path.name.endswith(".expected.json"):
                continue
            expected = json.loads(path.with_name(path.name + ".expected.json").read_text())
            if "error" not in expected:
                out.append(path)
    return out


def expected_run_count() -> int:
    return sum(len(json.loads(p.with_name(p.name + ".expected.json").read_text())["runs"])
               for p in good_inputs())


@pytest.fixture()
def mixed_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    for path in good_inputs():
        target = folder / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return folder


def test_ingest_folder_of_mixed_formats(mixed_folder: Path, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    report = ingest_paths([mixed_folder], store, IngestOptions(campaign="mixed"))
    assert not report.rejected, [e.format_message() for e in report.rejected]
    assert len(report.added) == expected_run_count()
    records = store.load_all()  # every run.json validates against the schema
    formats = {r.provenance.format for r in records}
    assert formats == set(FORMATS)
    again = ingest_paths([mixed_folder], store, IngestOptions(campaign="mixed"))
    assert not again.added and len(again.skipped) == len(report.added)


def test_tables_are_written_beside_run_json(mixed_folder: Path, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    ingest_paths([mixed_folder / "trtllm-request-json"], store, IngestOptions(campaign="c"))
    (run_json,) = store.run_files()
    with (run_json.parent / "requests.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 and float(rows[0]["ttft_ms"]) == 200.0
    record = store.load(run_json)
    assert any("requests.csv" in note for note in record.provenance.notes)


def test_samples_beside_a_log_attach_to_its_run(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copyfile(FIXTURES / "trtllm-log" / "v1.2_machine_details_spec.log", folder / "run1.log")
    shutil.copyfile(FIXTURES / "nvidia-smi-csv" / "gb10_memory_na.csv", folder / "run1.nvidia-smi.csv")
    store = RunStore(tmp_path / "runs")
    report = ingest_paths([folder], store, IngestOptions(campaign="c"))
    assert len(report.added) == 1 and not report.rejected
    (run_json,) = store.run_files()
    record = store.load(run_json)
    assert record.metrics["start_temp_c"] == 35.0
    assert record.metrics["kv_cache_gib"] == 81.11
    assert (run_json.parent / "samples.csv").exists()
    assert (run_json.parent / "run1.nvidia-smi.csv").exists()


def test_cli_ingest_fixture_folder(mixed_folder: Path, tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    result = CliRunner().invoke(main, ["ingest", str(mixed_folder), "--runs-dir", str(runs_dir), "-q"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(f"{expected_run_count()} added, 0 already present, 0 rejected → {runs_dir}")


def test_cli_ingest_reports_bad_file_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"")
    unknown = tmp_path / "notes.txt"
    unknown.write_text("just some words\n")
    result = CliRunner().invoke(main, ["ingest", str(bad), str(unknown), "--runs-dir", str(tmp_path / "r")])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 2
    assert "format not recognised" in errors[1] and "trtllm-log" in errors[1]


def test_cli_format_override(tmp_path: Path) -> None:
    log = tmp_path / "anything.dat"
    shutil.copyfile(FIXTURES / "vllm-text" / "latency.txt", log)
    result = CliRunner().invoke(main, ["ingest", str(log), "--format", "vllm-text",
                                       "--runs-dir", str(tmp_path / "r"), "-q"])
    assert result.exit_code == 0, result.output


def test_cli_formats_lists_every_parser() -> None:
    result = CliRunner().invoke(main, ["formats"])
    assert result.exit_code == 0
    for fmt in FORMATS:
        assert fmt in result.output


def test_phase1_aggregate_still_ingests(phase1_json: Path, tmp_path: Path) -> None:
    report = ingest_paths([phase1_json], RunStore(tmp_path / "runs"), IngestOptions())
    assert len(report.added) == 63 and not report.rejected
