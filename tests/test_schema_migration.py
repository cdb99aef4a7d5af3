"""Schema 1 → 2: stored records of the old schema are migrated on read (golden files).

``tests/fixtures/schema-v1/<name>.json`` is a schema-1 run.json; ``<name>.v2.json`` is what
``RunRecord.from_dict(...).to_dict()`` must give. Regenerate after an intended change with
``SPARKREPORT_UPDATE_GOLDEN=1 pytest tests/test_schema_migration.py`` and read the diff.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sparkreport.dataset import load_dataset
from sparkreport.schema import SCHEMA_VERSION, RunRecord, migrate
from sparkreport.store import RunStore

FIXTURES = Path(__file__).parent / "fixtures" / "schema-v1"
UPDATE = os.environ.get("SPARKREPORT_UPDATE_GOLDEN") == "1"
OLD = sorted(p for p in FIXTURES.glob("*.json") if not p.name.endswith(".v2.json"))


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.stem)
def test_v1_record_migrates_to_the_golden_v2(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema_version"] == 1
    migrated = RunRecord.from_dict(data, path).to_dict()
    target = path.with_name(path.stem + ".v2.json")
    if UPDATE:
        target.write_text(json.dumps(migrated, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert migrated == json.loads(target.read_text(encoding="utf-8"))
    assert migrated["schema_version"] == SCHEMA_VERSION == 2


def _v2(name: str) -> dict[str, object]:
    return RunRecord.from_dict(json.loads((FIXTURES / f"{name}.json").read_text()), name).to_dict()


def test_the_source_format_decides_what_peak_meant() -> None:
    # trtllm-bench's log printed TensorRT-LLM's "Peak memory during memory usage profiling":
    # memory in use before the KV cache is allocated.
    log = _v2("trtllm-log-run")
    assert log["metrics"]["pre_kv_memory_gib"] == 20.5 and "peak_memory_gib" not in log["metrics"]
    assert any("schema 1 → 2" in note for note in log["provenance"]["notes"])
    # The torch runner's peak includes the KV cache: it keeps its name.
    torch = _v2("torch-run")
    assert torch["metrics"]["peak_memory_gib"] > torch["metrics"]["kv_cache_gib"] > 0
    assert "pre_kv_memory_gib" not in torch["metrics"]
    # A published summary: TensorRT-LLM's figure for engine trtllm, the plain meaning otherwise.
    assert "pre_kv_memory_gib" in _v2("published-trtllm")["summary"]
    other = _v2("published-other-engine")
    assert "peak_memory_gib" in other["summary"] and "pre_kv_memory_gib" not in other["summary"]


def test_torch_run_gains_its_model_facts() -> None:
    details = _v2("torch-run")["model"]["details"]
    assert details == {"params_b": 0.494033, "layers": 24, "kv_heads": 2, "head_dim": 64, "hidden_size": 896,
                       "dtype": "bf16", "weight_gb": 0.9881,
                       "source": "recorded by the torch runner (the model as loaded)"}


def test_store_reads_old_records_without_touching_them(tmp_path: Path) -> None:
    source = FIXTURES / "trtllm-log-run.json"
    folder = tmp_path / "runs" / "logs" / "llama-3.1-8b-log"
    folder.mkdir(parents=True)
    shutil.copyfile(source, folder / "run.json")
    before = (folder / "run.json").read_bytes()
    (record,) = RunStore(tmp_path / "runs").load_all()
    assert record.schema_version == 2 and record.metrics["pre_kv_memory_gib"] == 20.5
    assert (folder / "run.json").read_bytes() == before  # migrated on read; the file is left as it was
    ds = load_dataset(tmp_path / "runs")
    assert ds.runs["pre_kv_memory_gib"].tolist() == [20.5] and ds.runs["peak_memory_gib"].isna().all()


def test_migration_is_one_step_at_a_time() -> None:
    data = json.loads((FIXTURES / "torch-run.json").read_text())
    assert migrate(dict(data), "x")["schema_version"] == 2


def test_shipped_store_is_current() -> None:
    root = Path(__file__).parent.parent / "runs"
    versions = {json.loads(p.read_text())["schema_version"] for p in root.glob("*/*/run.json")}
    assert versions == {SCHEMA_VERSION}
