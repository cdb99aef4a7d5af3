"""Hardening (#20): what users and machines do to the store, the configuration and the site."""

from __future__ import annotations

from pathlib import Path

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
