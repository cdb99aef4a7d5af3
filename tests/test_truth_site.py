"""The plausibility findings reach the pages: home leads with them, a banner warns, sentences flag."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkreport.render import RenderOptions, RenderResult, render


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory, phase1_store: Path) -> Path:
    root = tmp_path_factory.mktemp("truth")
    result: RenderResult = render(RenderOptions(runs_dir=phase1_store, project_root=root,
                                                docs_dir=root / "build" / "docs"))
    return result.docs_dir


def test_home_leads_with_the_physical_findings(pages: Path) -> None:
    home = (pages / "index.md").read_text(encoding="utf-8")
    first = home.index("## What the checks found first")
    assert first < home.index("## Key findings")
    assert "capacity-weights** — phase1/qwen72b/native: the weights alone need 135.4 GiB" in home
    # every weight-based finding states what it assumes
    assumes = "assumes Qwen2.5-72B-Instruct's weights: 72.7B parameters in BF16 (from the catalog; the record states no precision)"
    weight_lines = [line for line in home.splitlines()
                    if line.startswith(("- **error · capacity", "- **error · roofline")) and "qwen72b" in line]
    assert len(weight_lines) >= 3 and all(assumes in line for line in weight_lines)
    assert "roofline** — phase1/qwen72b/native: 119.33 tok/s exceeds the memory-bandwidth bound of 93.9 tok/s" in home
    assert "derived-identity** — phase1: KV cache = 0.900 × (pool − memory before the KV cache)" in home


def test_every_page_carries_the_error_banner_under_its_title(pages: Path) -> None:
    for page in sorted(pages.rglob("index.md")):
        text = page.read_text(encoding="utf-8")
        if "{% include" in text or not text.startswith("# "):
            continue
        lines = text.splitlines()
        assert lines[2].startswith("> ⚠ **"), page
        assert "unresolved error-level finding" in lines[2]


def test_sentences_about_flagged_runs_carry_a_warning(pages: Path) -> None:
    home = (pages / "index.md").read_text(encoding="utf-8")
    qwen = [line for line in home.splitlines() if line.startswith("- Qwen2.5-72B-Instruct:")]
    assert qwen and all("⚠ These runs have error-level findings (" in line for line in qwen)


def test_memory_page_shows_the_identity_and_the_explanations(pages: Path) -> None:
    memory = (pages / "memory" / "index.md").read_text(encoding="utf-8")
    assert "## One finding, not two" in memory and re.search(r"fits all \d+ arms \(R²", memory)
    assert "## Why would a container hold more memory?" in memory
    assert "cgroup accounting of unified memory" in memory and "page cache" in memory
    assert (pages / "memory" / "charts" / "memory-budget.vl.json").exists() or "memory-budget" in memory


def test_file_system_failure_is_one_line(tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport.errors import BuildError
    from sparkreport.render import core

    def broken(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError(2, "No such file or directory", str(tmp_path / "docs" / "x.svg"))

    monkeypatch.setattr(core, "write_svgs", broken)
    with pytest.raises(BuildError) as info:
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, docs_dir=tmp_path / "build" / "docs"))
    assert info.value.format_message().startswith(f"{tmp_path / 'docs' / 'x.svg'}: No such file or directory — ")
