"""Shared fixtures: the real Phase 1 data (read from ../shared, never copied) and stores."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from sparkreport.dataset import Dataset, load_dataset
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.store import RunStore

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SPARKREPORT_SHARED", REPO.parent / "shared"))
PHASE1_JSON = SHARED / "data" / "phase1-gb10" / "all_benchmark_results.json"

# Ctrl-C as a terminal delivers it, to these tests and to the commands they start: a test
# runner started as a background job of a shell without job control (as CI may start it)
# inherits SIGINT ignored, Python then installs no handler, and every process started from here
# would ignore the interrupts the tests send. A Python handler becomes the default on exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def phase1_json() -> Path:
    if not PHASE1_JSON.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{PHASE1_JSON} is missing: CI must have shared/ beside the checkout")
        pytest.skip("the Phase 1 data in ../shared is not available")
    return PHASE1_JSON


@pytest.fixture(scope="session")
def phase1_store(tmp_path_factory: pytest.TempPathFactory, phase1_json: Path) -> Path:
    """A run store holding the 63 real Phase 1 runs (read-only for tests)."""
    root = tmp_path_factory.mktemp("phase1") / "runs"
    report = ingest_paths([phase1_json], RunStore(root), IngestOptions())
    assert len(report.added) == 63 and not report.rejected
    return root


@pytest.fixture(scope="session")
def published_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded default's published figures (examples/*.yml), ingested (read-only for tests)."""
    root = tmp_path_factory.mktemp("published") / "runs"
    examples = Path(__file__).resolve().parent.parent / "examples"
    report = ingest_paths(sorted(examples.glob("*.yml")), RunStore(root), IngestOptions())
    assert report.added and not report.rejected
    return root


@pytest.fixture(scope="session")
def phase1_dataset(phase1_store: Path) -> Dataset:
    return load_dataset(phase1_store)
