"""Hardening (#20): what users and machines do to the store, the configuration and the site."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
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
