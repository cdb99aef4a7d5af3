"""run.json validation, versioning and the atomic store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport import schema
from sparkreport.cli import main
from sparkreport.dataset import load_dataset
from sparkreport.errors import SchemaError
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.schema import Model, RunRecord, SummaryStat
from sparkreport.store import RawFile, RunStore


def test_roundtrip() -> None:
    record = RunRecord(run_id="r1", campaign="c", model=Model(id="org/m", name="m"),
                       metrics={"kv_cache_gib": 1.5, "ttft_ms_p99": 20.0}, labels={"a": "b"})
    assert RunRecord.from_dict(record.to_dict()) == record
    summary = RunRecord(run_id="s", campaign="c", record_type="arm_summary",
                        summary={"kv_cache_gib": SummaryStat(n=10, mean=44.3)})
    assert RunRecord.from_dict(summary.to_dict()) == summary


def test_future_schema_is_refused() -> None:
    data = RunRecord(run_id="r", campaign="c").to_dict() | {"schema_version": 99}
    with pytest.raises(SchemaError) as info:
        RunRecord.from_dict(data, "runs/c/r/run.json")
    assert str(info.value.format_message()) == (
        "runs/c/r/run.json: written by a newer sparkreport (schema_version 99; this one reads up to 2)"
        " — upgrade sparkreport (`pip install -U sparkreport`)"
    )


def test_older_schema_is_migrated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the current version is 2 with a v1→v2 step that renames a field."""
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 2)

    def v1_to_v2(data: dict) -> dict:  # type: ignore[type-arg]
        data["labels"] = {"migrated": "yes", **data.get("labels", {})}
        return data

    monkeypatch.setitem(schema.MIGRATIONS, 1, v1_to_v2)
    old = RunRecord(run_id="r", campaign="c").to_dict() | {"schema_version": 1}
    record = RunRecord.from_dict(old)
    assert record.labels == {"migrated": "yes"} and record.schema_version == 2


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"metrics": {"kv_cache_gib": "x"}}, "field 'metrics.kv_cache_gib' must be a number or null, not 'x'"),
        ({"metrics": {"kv_cache": 1}}, "field 'metrics.kv_cache' is not a canonical metric name"),
        ({"model": {"name": 3}}, "field 'model.name' has the wrong type (int)"),
        ({"model": {"nickname": "x"}}, "field 'model.nickname' is not a known field"),
        ({"run_id": None}, "field 'run_id' is missing"),
        ({"schema_version": "1"}, "schema_version is '1', expected an integer ≥ 1"),
        # hand edits that were taken as they were (a list read as no metrics, a kind or time no page knows)
        ({"metrics": []}, "field 'metrics' must be an object of metric name → number, not a list"),
        ({"hardware": []}, "field 'hardware' must be an object, not a list"),
        ({"labels": []}, "field 'labels' must be an object of string → string"),
        ({"hardware": {"memory_pool_gib": -3}},
         "field 'hardware.memory_pool_gib': hardware.memory_pool_gib = -3 GiB is negative"),
        ({"workload": {"num_requests": -1}}, "field 'workload.num_requests': workload.num_requests = -1 is negative"),
        ({"environment": {"kind": "vm"}},
         "field 'environment.kind' must be one of native, chroot, container, cgroup, unknown, not 'vm'"),
        ({"started_at": "yesterday"},
         "field 'started_at' is 'yesterday', not an ISO 8601 time such as 2026-01-31T12:00:00Z"),
        ({"started_at_local": "noon"},
         "field 'started_at_local' is 'noon', not an ISO 8601 time such as 2026-01-31T12:00:00Z"),
    ],
)
def test_bad_run_json_fields(patch: dict, message: str) -> None:  # type: ignore[type-arg]
    data = RunRecord(run_id="r", campaign="c").to_dict() | patch
    with pytest.raises(SchemaError) as info:
        RunRecord.from_dict(data, "x/run.json")
    assert info.value.problem == message


def test_a_broken_run_json_in_the_store_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "runs" / "c" / "r1" / "run.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"schema_version": 1, "run_id": ')
    result = CliRunner().invoke(main, ["stats", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {bad}:1: is not valid JSON (Expecting value) — re-create it with `sparkreport ingest` from its source"
    )


def test_an_iso_time_and_null_sections_are_read() -> None:
    data = RunRecord(run_id="r", campaign="c").to_dict() | {
        "started_at": "2026-01-31T12:00:00Z", "started_at_local": "2026-01-31T13:00:00+01:00",
        "metrics": None, "hardware": None}
    record = RunRecord.from_dict(data)
    assert (record.started_at, record.metrics, record.hardware.memory_pool_gib) == ("2026-01-31T12:00:00Z", {}, None)


def _store_of_two(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    store = RunStore(runs)
    for run_id in ("r1", "r2"):
        store.write(RunRecord(run_id=run_id, campaign="c", metrics={"kv_cache_gib": 1.0}), [])
    return runs


def test_a_run_json_in_another_campaigns_folder_is_refused(tmp_path: Path) -> None:
    runs = _store_of_two(tmp_path)
    path = runs / "c" / "r2" / "run.json"
    path.write_text(path.read_text().replace('"campaign": "c"', '"campaign": "d"'))
    result = CliRunner().invoke(main, ["stats", "--runs-dir", str(runs)])
    assert result.exit_code == 1
    assert result.output == (f"Error: {path}: field 'campaign' is 'd', but the run is in the campaign folder 'c' "
                             "— set it to 'c', or move the run's folder into the campaign folder 'd'\n")


def test_two_runs_sharing_a_run_id_are_refused(tmp_path: Path) -> None:
    runs = _store_of_two(tmp_path)
    (runs / "d").mkdir()
    copy = runs / "d" / "r1" / "run.json"
    copy.parent.mkdir()
    copy.write_text((runs / "c" / "r1" / "run.json").read_text().replace('"campaign": "c"', '"campaign": "d"'))
    result = CliRunner().invoke(main, ["stats", "--runs-dir", str(runs)])
    assert result.exit_code == 1, result.output
    expected = (f"{copy}: field 'run_id' is 'r1', the run_id of {runs / 'c' / 'r1' / 'run.json'} too — two runs "
                "cannot share an id: remove the copy, or give one of them another run_id (and its folder that name)")
    assert result.output == f"Error: {expected}\n"
    for _ in range(2):  # a build's record cache, cold then warm, refuses it the same way
        with pytest.raises(SchemaError) as info:
            load_dataset(runs, cache_dir=tmp_path / "cache")
        assert info.value.format_message() == expected


def test_ingest_refuses_a_negative_memory_pool(tmp_path: Path) -> None:
    source = tmp_path / "s.yml"
    source.write_text("sparkreport: published-summary\nhardware: {memory_pool_gib: -3}\narms:\n  - model: m\n"
                      "    environment: native\n    n: 3\n    metrics:\n      kv_cache_gib: 3\n")
    report = ingest_paths([source], RunStore(tmp_path / "r"), IngestOptions())
    assert not report.added
    assert report.rejected[0].format_message() == (f"{source}:2: hardware.memory_pool_gib = -3 GiB is negative — "
                                                   "fix that value")
    record = RunRecord(run_id="r", campaign="c")
    record.hardware.memory_pool_gib = -3.0  # any parser's run: refused before it is stored
    assert schema.physical_problems(record) == ["hardware.memory_pool_gib = -3 GiB is negative"]


def test_write_is_atomic_and_refuses_overwrite(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    record = RunRecord(run_id="r1", campaign="c")
    store.write(record, [RawFile("raw.log", content=b"hello")])
    assert sorted(p.name for p in (tmp_path / "c" / "r1").iterdir()) == ["raw.log", "run.json"]
    with pytest.raises(Exception, match="this run is already stored"):
        store.write(record, [])
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["r1"]  # no staging folder left behind


def test_failed_raw_copy_leaves_nothing(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    with pytest.raises(FileNotFoundError):
        store.write(RunRecord(run_id="r1", campaign="c"), [RawFile("x", source=tmp_path / "missing")])
    assert list((tmp_path / "c").iterdir()) == []


SUMMARY_CSV = """model,environment,metric,unit,n,mean,sd,sd_ddof
llama,native,output_throughput_tok_s,tok/s,10,100.0,2.0,0
llama,container,output_throughput_tok_s,tok/s,10,101.0,2.0,0
llama,native,total_latency_ms,s,10,1.5,,
"""


def test_summary_csv(tmp_path: Path) -> None:
    source = tmp_path / "published.csv"
    source.write_text(SUMMARY_CSV)
    report = ingest_paths([source], RunStore(tmp_path / "r"), IngestOptions(campaign="pub"))
    assert len(report.added) == 2 and not report.rejected
    records = {r.environment.name: r for r in RunStore(tmp_path / "r").iter_runs()}
    stat = records["native"].summary["output_throughput_tok_s"]
    assert stat.sd == pytest.approx(2.0 * (10 / 9) ** 0.5) and stat.sd_as_published == 2.0
    assert records["native"].summary["total_latency_ms"].mean == 1500.0  # s → ms


def test_summary_csv_bad_row_names_the_line(tmp_path: Path) -> None:
    source = tmp_path / "published.csv"
    source.write_text(SUMMARY_CSV.replace("101.0", "lots"))
    result = CliRunner().invoke(main, ["ingest", str(source), "--runs-dir", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert f"error: {source}:3: not a number" in result.stderr


def test_summary_yaml_unknown_unit(tmp_path: Path) -> None:
    source = tmp_path / "s.yml"
    source.write_text(
        "sparkreport: published-summary\narms:\n  - model: m\n    environment: native\n    n: 3\n"
        "    metrics:\n      peak_memory_gib: {mean: 3, unit: furlongs}\n"
    )
    report = ingest_paths([source], RunStore(tmp_path / "r"), IngestOptions())
    assert report.rejected[0].problem == (
        "arms[0].metrics.peak_memory_gib: unit 'furlongs' cannot be converted to 'GiB'"
    )


SUMMARY_YAML = """sparkreport: published-summary
campaign: pub
source: "a blog post"
hardware: {gpu_name: NVIDIA GB10, memory_pool_gib: 119.64}
environments:
  native: {kind: native}
arms:
  - model: small
    environment: native
    n: 5
    metrics:
      output_throughput_tok_s: {mean: 119.79, sd: 0.55}
"""


@pytest.mark.parametrize(("old", "new", "message"), [
    ("source:", "sorce:", "3: sorce: unknown key — did you mean 'source'?"),
    ("{mean: 119.79, sd: 0.55}", "{mean: 119.79, sd: -0.55}",
     "12: arms[0].metrics.output_throughput_tok_s: sd = -0.55 is negative (a standard deviation never is) — fix that "
     "value (the spread, not a signed difference)"),
    ("    environment: native\n", "",
     "8: arms[0]: environment is missing — add `environment:` (every arm names its model and its environment)"),
    ("published-summary", "published-sumary",
     "1: sparkreport: 'published-sumary' is not a format sparkreport reads — did you mean "
     "`sparkreport: published-summary`?"),
    ("    n: 5\n", "    n: 5\n    nn: 3\n", "11: arms[0].nn: unknown key — did you mean 'n'?"),
    ("{kind: native}", "{kind: vm}",
     "6: environments.native.kind: must be one of native, chroot, container, cgroup, unknown, not 'vm' — fix that value"),
    ("memory_pool_gib: 119.64", "memory_pool_gb: 119.64",
     "4: hardware.memory_pool_gb: unknown key — did you mean 'memory_pool_gib'?"),
    ("memory_pool_gib: 119.64", "memory_pool_gib: -3", "4: hardware.memory_pool_gib = -3 GiB is negative — fix that value"),
    ("{mean: 119.79, sd: 0.55}", "{mean: 119.79, sd: x}",
     "12: arms[0].metrics.output_throughput_tok_s: sd must be a number, found 'x' — fix that value"),
])
def test_a_bad_published_summary_names_the_line_and_the_fix(tmp_path: Path, old: str, new: str, message: str) -> None:
    source = tmp_path / "s.yml"
    assert old in SUMMARY_YAML
    source.write_text(SUMMARY_YAML.replace(old, new, 1))
    result = CliRunner().invoke(main, ["ingest", str(source), "--runs-dir", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert f"error: {source}:{message}\n" in result.stderr
    assert not (tmp_path / "r" / "pub").exists()


def test_a_published_summary_models_details_are_kept(tmp_path: Path) -> None:
    source = tmp_path / "s.yml"
    source.write_text(SUMMARY_YAML.replace("environments:", "models:\n  small: {details: {dtype: fp8}}\nenvironments:"))
    report = ingest_paths([source], RunStore(tmp_path / "r"), IngestOptions())
    assert [r.model.details for r in RunStore(tmp_path / "r").iter_runs()] == [{"dtype": "fp8"}], report.rejected


def test_run_json_is_stable_json(phase1_store: Path) -> None:
    path = next(phase1_store.glob("*/*/run.json"))
    data = json.loads(path.read_text())
    assert list(data)[:3] == ["schema_version", "run_id", "campaign"]


def test_per_run_tables_are_listed_and_loadable(tmp_path: Path) -> None:
    from sparkreport.dataset import load_dataset

    fixture = Path(__file__).parent / "fixtures" / "trtllm-request-json"
    source = sorted(p for p in fixture.iterdir() if not p.name.endswith(".expected.json"))[0]
    report = ingest_paths([source], RunStore(tmp_path / "r"), IngestOptions())
    assert report.added and not report.rejected
    ds = load_dataset(tmp_path / "r")
    assert ds.records[0].provenance.tables == ["requests"]
    requests = ds.table("requests", tmp_path / "r")
    assert list(requests.columns)[0] == "run_id" and len(requests) > 0
    assert ds.table("samples", tmp_path / "r").empty


def test_staging_folders_are_not_runs(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write(RunRecord(run_id="r1", campaign="c"), [])
    stray = tmp_path / "c" / ".r2.abc123"
    stray.mkdir()
    (stray / "run.json").write_text(json.dumps(RunRecord(run_id="r2", campaign="c").to_dict()))
    assert [p.parent.name for p in store.run_files()] == ["r1"]


def test_run_folders_get_the_usual_permissions_not_mkdtemps_private_ones(tmp_path: Path) -> None:
    import os
    import stat

    from sparkreport.schema import RunRecord

    folder = RunStore(tmp_path / "runs").write(RunRecord(run_id="r", campaign="c"), [])
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask


def test_input_errors_survive_pickling() -> None:
    """Errors cross process boundaries (Ray tasks, worker pools) whole."""
    import pickle

    from sparkreport.errors import ParseError

    error = ParseError(Path("/data/x.log"), "row has 3 fields, the header 4", line=12, fix="ingest it unchanged")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ParseError and copy.format_message() == error.format_message()
    assert (copy.path, copy.line, copy.problem, copy.fix) == (error.path, 12, error.problem, error.fix)
