"""Hardening (#20): what users and machines do to the store, the configuration and the site."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sparkreport.config import AnalysisOptions, load_config
from sparkreport.errors import ConfigError
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.names import unique_slugs
from sparkreport.render import RenderOptions, render
from sparkreport.store import RunStore


def _summary_csv(path: Path, models: list[str], environment: str = "native") -> Path:
    lines = ["model,environment,metric,n,mean,sd"]
    for i, model in enumerate(models):
        lines.append(f'"{model}",{environment},output_throughput_tok_s,3,{100 + i}.0,1.0')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- 2. page paths are unique -------------------------------------------------------------------

def test_colliding_slugs_get_a_hash_suffix() -> None:
    folders = unique_slugs(["foo/bar", "foo bar", "baz", "Baz"])
    assert folders["foo/bar"] != folders["foo bar"]
    assert folders["foo/bar"].startswith("foo-bar-") and len(folders["foo/bar"]) == len("foo-bar-") + 6
    assert folders["baz"] != folders["Baz"]  # case-insensitive file systems
    assert unique_slugs(["foo/bar", "qux"])["foo/bar"] == "foo-bar"  # no collision, no suffix


def test_two_models_with_one_slug_get_two_pages(tmp_path: Path) -> None:
    source = _summary_csv(tmp_path / "two.csv", ["foo/bar", "foo bar"])
    runs = tmp_path / "runs"
    assert not ingest_paths([source], RunStore(runs), IngestOptions()).rejected
    result = render(RenderOptions(runs_dir=runs, project_root=tmp_path))
    pages = sorted(p.parent.name for p in (result.docs_dir / "results").glob("*/index.md"))
    assert len(pages) == 2 and all(p.startswith("foo-bar-") for p in pages)
    titles = {(result.docs_dir / "results" / p / "index.md").read_text(encoding="utf-8").splitlines()[0]
              for p in pages}
    assert titles == {"# foo/bar", "# foo bar"}
    overview = (result.docs_dir / "results" / "index.md").read_text(encoding="utf-8")
    assert all(f"{p}/" in overview for p in pages)


# --- 1. configuration values are checked for range at load --------------------------------------

def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sparkreport.yml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "line", "says"), [
    ("analysis:\n  alpha: 7\n", 2, "analysis.alpha must be between 0 and 1"),
    ("title: t\nanalysis:\n  confidence: -0.5\n", 3, "analysis.confidence must be between 0 and 1"),
    ("analysis:\n  confidence: 5\n", 2, "analysis.confidence must be between 0 and 1"),
    ("analysis:\n  confidence: .nan\n", 2, "analysis.confidence must be a finite number"),
    ("analysis:\n  equivalence_margin: 5\n", 2, "did you mean 5%? write 0.05"),
    ("analysis:\n  equivalence_margin: 0.7\n", 2, "must be a fraction in (0, 0.5]"),
    ("analysis:\n  margins:\n    ttft_ms_p50: 2\n", 3, "did you mean 2%? write 0.02"),
    ("analysis:\n  bootstrap_resamples: -10\n", 2, "must be an integer in [100, 1000000]"),
    ("analysis:\n  bootstrap_resamples: 1000000000000\n", 2, "must be an integer in [100, 1000000]"),
    ("analysis:\n  bootstrap_resamples: .inf\n", 2, "wrong type"),
    ("analysis:\n  cv_threshold: 0\n", 2, "must be a fraction in (0, 1]"),
    ("diffs:\n  - name: x\n    a: engine_version=1\n    b: engine_version=2\n    metrics: [nope]\n", 5,
     "diffs[0].metrics: 'nope' is not a canonical metric name"),
    ("analysis:\n  compare_metrics: [output_throughput_tok_s, 3]\n", 2, "3 is not a canonical metric name"),
])
def test_out_of_range_values_are_one_line_errors(tmp_path: Path, text: str, line: int, says: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = caught.value.format_message()
    assert message.startswith(f"{path}:{line}: ") and says in message and "\n" not in message


def test_in_range_values_load(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "analysis:\n  alpha: 0.01\n  confidence: 0.99\n"
                                           "  equivalence_margin: 0.5\n  bootstrap_resamples: 100\n"
                                           "  planned_iterations: null\n"))
    assert (config.analysis.alpha, config.analysis.confidence, config.analysis.equivalence_margin) == (0.01, 0.99, 0.5)


_ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
_ANALYSIS_KEYS = sorted(AnalysisOptions.__dataclass_fields__)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from([*(f"analysis.{k}" for k in _ANALYSIS_KEYS), "title", "charts", "static_charts",
                            "diffs", "diffs.0.metrics", "diffs.0.a", "analysis"]),
       value=_ANY_VALUE)
@example(key="analysis.margins", value={"\n": None})  # a key that is a line break: still one line
def test_no_value_gives_a_traceback(tmp_path: Path, key: str, value: object) -> None:
    doc: dict[str, object] = {}
    if key.startswith("diffs.0."):
        doc["diffs"] = [{"name": "d", "a": "engine_version=1", "b": "engine_version=2", key.split(".")[2]: value}]
    elif "." in key:
        doc["analysis"] = {key.split(".", 1)[1]: value}
    else:
        doc[key] = value
    path = _config(tmp_path, yaml.safe_dump(doc))
    try:
        config = load_config(path)
    except ConfigError as exc:
        assert exc.format_message().startswith(str(path)) and "\n" not in exc.format_message()
        return
    options = config.analysis
    assert 0 < options.alpha < 1 and 0 < options.confidence < 1
    assert 0 < options.equivalence_margin <= 0.5 and all(0 < m <= 0.5 for m in options.margins.values())
    assert 100 <= options.bootstrap_resamples <= 1_000_000 and math.isfinite(options.cv_threshold)


# --- 3. the store checks itself; ingest re-creates a run that lost its run.json -----------------

def _ingested(tmp_path: Path, phase1_json: Path) -> Path:
    runs = tmp_path / "runs"
    report = ingest_paths([phase1_json], RunStore(runs), IngestOptions())
    assert len(report.added) == 63 and not report.rejected
    return runs


def test_a_run_without_run_json_is_a_finding_and_ingest_recreates_it(tmp_path: Path, phase1_json: Path) -> None:
    from sparkreport.analysis import check
    from sparkreport.dataset import load_dataset

    runs = _ingested(tmp_path, phase1_json)
    victim = sorted(runs.glob("*/*/run.json"))[5]
    before = victim.read_bytes()
    victim.unlink()
    (runs / "phase1" / "_campaign").mkdir()  # the runner's campaign folder is no run
    ds = load_dataset(runs)
    assert len(ds.runs) == 62 and ds.incomplete == [f"{victim.parent.parent.name}/{victim.parent.name}"]
    finding = next(f for f in check(ds) if f.code == "incomplete-run")
    assert finding.severity == "error" and victim.parent.name in finding.message and finding.runs == [victim.parent.name]

    report = ingest_paths([phase1_json], RunStore(runs), IngestOptions())
    assert report.added == [victim.parent.name] == report.recreated and len(report.skipped) == 62
    assert victim.exists() and _without_time(victim.read_bytes()) == _without_time(before)
    assert not load_dataset(runs).incomplete and not _litter(runs)


def _without_time(data: bytes) -> dict[str, object]:
    import json

    record = json.loads(data)
    record["provenance"].pop("ingested_at")
    return record


def test_the_advice_for_an_invalid_run_json_works(tmp_path: Path, phase1_json: Path) -> None:
    from sparkreport.dataset import load_dataset
    from sparkreport.errors import SchemaError

    runs = _ingested(tmp_path, phase1_json)
    victim = sorted(runs.glob("*/*/run.json"))[7]
    victim.write_text("{ not json", encoding="utf-8")
    with pytest.raises(SchemaError, match="re-create it with `sparkreport ingest` from its source"):
        load_dataset(runs)
    report = ingest_paths([phase1_json], RunStore(runs), IngestOptions())
    assert report.recreated == [victim.parent.name]
    assert len(load_dataset(runs).runs) == 63


# --- 4. impossible values are rejected at the boundary ------------------------------------------

@pytest.mark.parametrize(("key", "value", "says"), [
    ("output_throughput", -98, "output_throughput_tok_s = -98 tok/s is negative"),
    ("peak_memory", -1.5, "memory_gib = -1.5 GiB is negative"),
    ("start_temp_celsius", -140, "start_temp_c = -140 °C is outside -40…150 °C"),
    ("end_temp_celsius", 151, "end_temp_c = 151 °C is outside -40…150 °C"),
])
def test_impossible_values_reject_the_run(tmp_path: Path, phase1_json: Path, key: str, value: float,
                                          says: str) -> None:
    import json

    data = json.loads(phase1_json.read_text(encoding="utf-8"))
    data["models"]["deepseek"]["native"][0][key] = value
    source = tmp_path / "all_benchmark_results.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    report = ingest_paths([source], RunStore(tmp_path / "runs"), IngestOptions())
    assert len(report.added) == 62 and len(report.rejected) == 1
    message = report.rejected[0].format_message()
    assert message.startswith(f"{source}: run ") and says in message and "\n" not in message


def test_impossible_values_in_a_run_json_are_refused_at_load(tmp_path: Path) -> None:
    from sparkreport.errors import SchemaError
    from sparkreport.schema import RunRecord

    for metrics, says in [({"output_throughput_tok_s": -1.0}, "is negative"),
                          ({"end_temp_c": 200}, "outside -40…150 °C"),
                          ({"ttft_ms_p99": -0.1}, "is negative")]:
        with pytest.raises(SchemaError, match=says):
            RunRecord.from_dict({"schema_version": 2, "run_id": "r", "campaign": "c", "metrics": metrics}, "x.json")
    record = RunRecord.from_dict({"schema_version": 2, "run_id": "r", "campaign": "c",
                                  "metrics": {"start_temp_c": -40, "kv_cache_gib": 0}}, "x.json")
    assert record.metrics == {"start_temp_c": -40.0, "kv_cache_gib": 0.0}


# --- 6. concurrent writers: the loser waits -----------------------------------------------------

def _cli(*args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "sparkreport", *args]


def _env() -> dict[str, str]:
    import os

    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _litter(runs: Path) -> list[Path]:
    return [p for p in runs.rglob(".*") if p.name != ".sparkreport.lock"]


def test_concurrent_ingests_of_one_source_both_succeed(tmp_path: Path, phase1_json: Path) -> None:
    import subprocess

    for trial in range(10):
        runs = tmp_path / f"runs{trial}"
        procs = [subprocess.Popen(_cli("ingest", "-q", str(phase1_json), "--runs-dir", str(runs)), env=_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        summaries = sorted(out.strip().splitlines()[-1].split(",")[0] for out, _ in outputs)
        assert summaries == ["0 added", "63 added"], outputs
        assert not any("remove" in err or "free space" in err for _, err in outputs)
        assert len(list(runs.glob("*/*/run.json"))) == 63 and not _litter(runs)


def test_a_writer_that_waits_too_long_names_the_holder(tmp_path: Path) -> None:
    import fcntl
    import os

    from sparkreport.errors import SparkreportError
    from sparkreport.lock import store_lock

    runs = tmp_path / "runs"
    runs.mkdir()
    told: list[str] = []
    fd = os.open(runs / ".sparkreport.lock", os.O_RDWR | os.O_CREAT)
    os.write(fd, b"4242\n")
    with open(os.open(runs / ".sparkreport.lock", os.O_RDWR), "rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX)  # another open file description: as if another process
        with pytest.raises(SparkreportError) as caught, store_lock(runs, wait_s=0.3, notify=told.append):
            pass
    os.close(fd)
    message = caught.value.format_message()
    assert "pid 4242" in message and "remove" not in message and "\n" not in message
    assert told == [f"waiting for pid 4242, which is writing to {runs.resolve()}"]


# --- 8. no litter after a full disk or SIGTERM --------------------------------------------------

def test_a_full_disk_leaves_no_partial_copy(tmp_path: Path, phase1_json: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from sparkreport import store as store_module
    from sparkreport.errors import SparkreportError

    def full(src: object, dst: str | Path) -> None:
        Path(dst).write_bytes(b"x" * 4096)  # part of the file, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    def full_bytes(dst: str | Path, data: bytes) -> None:
        full(None, dst)

    monkeypatch.setattr(store_module.shutil, "copyfile", full)
    monkeypatch.setattr(store_module, "write_bytes", full_bytes)
    runs = tmp_path / "runs"
    for _ in range(3):
        with pytest.raises(SparkreportError, match="No space left on device .* free space"):
            ingest_paths([phase1_json], RunStore(runs), IngestOptions())
        assert not _litter(runs)
    monkeypatch.undo()
    assert len(ingest_paths([phase1_json], RunStore(runs), IngestOptions()).added) == 63


def test_sigterm_during_ingest_leaves_nothing_the_next_run_keeps(tmp_path: Path, phase1_json: Path) -> None:
    import random
    import signal
    import subprocess
    import time

    runs = tmp_path / "runs"
    rng = random.Random(20)
    for _ in range(6):
        proc = subprocess.Popen(_cli("ingest", "-q", str(phase1_json), "--runs-dir", str(runs)), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 2.5))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    report = ingest_paths([phase1_json], RunStore(runs), IngestOptions())
    assert not report.rejected and len(report.added) + len(report.skipped) == 63
    assert not _litter(runs) and len(list(runs.glob("*/*/run.json"))) == 63


def test_stale_staging_of_a_dead_pid_is_cleaned_and_a_live_ones_kept(tmp_path: Path) -> None:
    import os

    runs = tmp_path / "runs"
    campaign = runs / "c"
    (campaign / "_sources" / "abc").mkdir(parents=True)
    dead = (campaign / ".r1.999999999.0", campaign / "_sources" / "abc" / ".x.json.999999999.k2j3",
            campaign / ".run.json.999999999.zz")
    live = campaign / f".r2.{os.getppid()}.0"
    for path in (dead[0], live):
        path.mkdir()
    for path in dead[1:]:
        path.write_bytes(b"partial")
    removed = RunStore(runs).clean_litter()
    assert sorted(removed) == sorted(dead) and live.exists()


# --- 7. any byte in a file name -----------------------------------------------------------------

def test_file_names_that_are_not_utf8_give_no_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from click.testing import CliRunner

    from sparkreport.cli import main

    source = _summary_csv(Path(os.fsdecode(bytes(tmp_path) + b"/res\xff.csv")), ["m1", "m2"])
    runs = tmp_path / "runs"
    report = ingest_paths([source], RunStore(runs), IngestOptions())
    assert len(report.added) == 2 and not report.rejected
    # the raw copy is kept under its escaped name, as run.json names it
    assert sorted(p.name for p in runs.glob("*/*/res*")) == ["res\\xff.csv"] * 2
    folders = sorted(runs.glob("*/*/run.json"))
    monkeypatch.chdir(tmp_path)  # no project configuration
    run = folders[0].parent
    run.rename(Path(os.fsdecode(bytes(run) + b"\xfe")))  # a run folder renamed by hand
    Path(os.fsdecode(bytes(folders[1].parent) + b"/raw\xfd.txt")).write_bytes(b"raw")
    for args in (["stats"], ["check"], ["dataset", "--out", str(tmp_path / "d.parquet")],
                 ["build", "--site-dir", str(tmp_path / "site")]):
        result = CliRunner().invoke(main, [*args, "--runs-dir", str(runs)])
        assert result.exit_code == 0 and result.exception is None, (args, result.output, result.exception)
    page = (tmp_path / "site" / "runs" / "index.html").read_text(encoding="utf-8")
    # the renamed folder linked by its bytes; the source's raw copy under its escaped name
    assert "%FE/run.json" in page and "res%5Cxff.csv" in page


# --- 9. names: length capped, bidirectional controls stripped ----------------------------------

def test_a_very_long_name_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    import click

    source = _summary_csv(tmp_path / "long.csv", ["m" * 10_000, "ok"])
    report = ingest_paths([source], RunStore(tmp_path / "runs"), IngestOptions())
    assert len(report.added) == 1 and len(report.rejected) == 1
    message = report.rejected[0].format_message()
    assert "model name is 10000 characters long (at most 200)" in message and "free space" not in message
    with pytest.raises(click.UsageError, match="--campaign is 10000 characters long"):
        ingest_paths([source], RunStore(tmp_path / "runs"), IngestOptions(campaign="c" * 10_000))


def test_a_long_campaign_name_in_a_campaign_file_is_one_line(tmp_path: Path) -> None:
    from sparkreport.execute.campaign import CampaignError, load_campaign

    path = tmp_path / "c.yml"
    path.write_text(f"campaign: {'c' * 300}\nmodels: [m]\nenvironments: [{{kind: native}}]\n", encoding="utf-8")
    with pytest.raises(CampaignError, match=r"c.yml:1: .*300 characters long — use at most 200"):
        load_campaign(path)


def test_bidi_controls_are_stripped_from_names(tmp_path: Path) -> None:
    from sparkreport.dataset import load_dataset
    from sparkreport.schema import RunRecord

    source = _summary_csv(tmp_path / "bidi.csv", ["llama\u202e8b-evil\u202c", "qwen"])
    runs = tmp_path / "runs"
    assert not ingest_paths([source], RunStore(runs), IngestOptions(labels={"v\u2066": "1\u200f"})).rejected
    ds = load_dataset(runs)
    assert sorted(ds.summaries["model"].unique()) == ["llama8b-evil", "qwen"]
    record = next(r for r in ds.records if r.model.name == "llama8b-evil")
    assert record.labels == {"v": "1"} and any("bidirectional" in note for note in record.provenance.notes)
    hand_edited = RunRecord.from_dict({"schema_version": 2, "run_id": "r", "campaign": "c\u202e",
                                       "model": {"name": "a\u2067b"}})
    assert (hand_edited.campaign, hand_edited.model.name) == ("c", "ab")


# --- 10. outputs and campaign names checked before the heavy work -------------------------------

def test_an_unwritable_output_is_refused_before_the_render(tmp_path: Path, phase1_store: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from click.testing import CliRunner

    from sparkreport import dataset as dataset_module
    from sparkreport.cli import main

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dataset was loaded before the output was checked")

    monkeypatch.setattr(dataset_module, "load_dataset", no_load)
    monkeypatch.chdir(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    for args, option in ((["build", "--site-dir", str(blocker / "site")], "--site-dir"),
                         (["render", "--docs-dir", str(blocker / "docs")], "--docs-dir"),
                         (["dataset", "--out", str(blocker / "runs.csv")], "--out")):
        started = time.perf_counter()
        result = CliRunner().invoke(main, [*args, "--runs-dir", str(phase1_store)])
        elapsed = time.perf_counter() - started
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert f"is a file, not a folder; pass another {option}" in result.output and elapsed < 5
    assert not (tmp_path / "build").exists()


def test_ingest_run_and_init_refuse_a_place_they_cannot_write_in_one_line(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A store or project folder under a file, or where nothing can be created (/proc: even root
    cannot), is one line naming it and the fix — not an OSError traceback from the first mkdir."""
    import re

    from click.testing import CliRunner

    from sparkreport.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    source = _summary_csv(tmp_path / "one.csv", ["llama"])
    campaign = tmp_path / "fake.yaml"
    campaign.write_text("campaign: fake-ro\nmodels: [a]\nenvironments: [{kind: native}]\n"
                        "workload: {kind: fake, sleep_s: 0}\ncooldown: {min_s: 0}\n", encoding="utf-8")
    under_a_file = "is a file, not a folder; pass another"
    here = re.escape(str(tmp_path))
    for args, line in (
            (["ingest", str(source), "--runs-dir", "a-file/runs"],
             f"a-file/runs: cannot be created — a-file {under_a_file} --runs-dir"),
            (["run", str(campaign), "--runs-dir", "a-file/runs"],
             f"{here}/a-file/runs/fake-ro: cannot be created — {here}/a-file {under_a_file} --runs-dir"),
            (["init", "a-file/x"], f"a-file/x: cannot be created — a-file {under_a_file} DIRECTORY"),
            (["ingest", str(source), "--runs-dir", "/proc/sparkreport-test/runs"],
             r"/proc/sparkreport-test/runs: cannot be written \(.+\) — fix the permissions of /proc or pass "
             "another --runs-dir"),
            (["init", "/proc/sparkreport-test"],
             r"/proc/sparkreport-test: cannot be written \(.+\) — fix the permissions of /proc or pass "
             "another DIRECTORY")):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert re.fullmatch(f"Error: {line}\n", result.output), (args, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "fake.yaml", "one.csv"]


def test_a_diff_naming_no_campaign_is_refused_before_the_load(tmp_path: Path, phase1_store: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from sparkreport import dataset as dataset_module
    from sparkreport.cli import main
    from sparkreport.errors import DataError

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dataset was loaded before the campaign was checked")

    monkeypatch.setattr(dataset_module, "load_dataset", no_load)
    result = CliRunner().invoke(main, ["diff", "--a", "campaign=phase1", "--b", "campaign=nope",
                                       "--runs-dir", str(phase1_store)])
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: --b: campaign 'nope' is not in {phase1_store} — campaigns there: phase1"
    config = _config(tmp_path, "diffs:\n  - name: d\n    a: campaign=phase1\n    b: campaign=phase2\n")
    with pytest.raises(DataError, match=r"diffs\[0\].b: campaign 'phase2' is not in"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, config_path=config))
