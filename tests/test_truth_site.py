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


def test_home_answers_then_says_what_the_checks_found(pages: Path) -> None:
    home = (pages / "index.md").read_text(encoding="utf-8")
    assert home.index("**The answer.**") < home.index("## What the checks found") < home.index(
        "## What the data cannot show")
    checks = home.split("## What the checks found", 1)[1].split("## What the data cannot show", 1)[0]
    lines = [line for line in checks.splitlines() if line.startswith("- **")]
    # one line per kind of finding, both environments in one line, under its campaign's name (said once)
    assert "- **error: weights larger than the memory pool** — Qwen2.5-72B-Instruct " \
           "(native and container; 2 findings)" in lines, lines
    assert checks.count("**phase1**") == 1
    assert "Qwen2.5-72B-Instruct's weights: 72.7B parameters in BF16" in checks  # the assumption, once
    assert checks.count("72.7B parameters in BF16") == 1
    campaign = (pages / "campaigns" / "phase1" / "index.md").read_text(encoding="utf-8")
    assert "119.33 tok/s exceeds the memory-bandwidth bound of 93.88 tok/s" in campaign
    assert "KV cache = 0.900 × (pool − memory before the KV cache)" in campaign
    assert len(lines) == len(set(lines))
    assert home.count("## What the data cannot show") == 1


def test_the_banner_is_under_the_title_of_the_pages_it_concerns(pages: Path) -> None:
    banners = {}
    for page in sorted(pages.rglob("index.md")):
        text = page.read_text(encoding="utf-8")
        if not text.startswith("# "):
            continue
        lines = text.splitlines()
        if lines[2].startswith('!!! warning "'):
            banners[page.relative_to(pages).as_posix()] = lines[2] + lines[3]
        # the banner of errors, once, under the title (a Results page's "Read with care" box of
        # warnings, under its answer, is another box)
        banner = re.compile(r'^!!! warning "\d+ error-level finding', flags=re.M)
        assert len(banner.findall(text)) <= 1 and not banner.search("\n".join(lines[3:])), page
    assert "index.md" in banners and "methodology/index.md" not in banners
    # scoped: a model's page names only the findings about that model
    assert "weights larger than the memory pool" in banners["results/qwen72b/index.md"]
    assert "weights larger than the memory pool" not in banners["results/deepseek/index.md"]
    assert "throughput that does not depend on model size" in banners["results/deepseek/index.md"]
    assert banners["index.md"].startswith('!!! warning "11 error-level findings')
    # the warnings that change what a model's figures mean: a box of their own under its answer
    deepseek = (pages / "results" / "deepseek" / "index.md").read_text(encoding="utf-8")
    box = deepseek.split('\n!!! warning "Read with care"\n', 1)[1].split("\n\n", 1)[0]
    assert box.startswith("    - **High run-to-run variation** — container: CV above 5% over 10 runs — KV cache")
    assert ("\n    - **Arms run in separate time blocks** — native and container: environments ran in separate "
            "time blocks (native 2025-11-09T02:26–2025-11-09T04:24; container 2025-11-09T04:37–2025-11-09T06:52), "
            "so drift over time is confounded with the environment — interleave them (randomized blocks).") in box
    assert deepseek.index("- **Worse in container than in native**") < deepseek.index("Read with care")


def test_memory_page_shows_the_identity_and_the_explanations(pages: Path) -> None:
    memory = (pages / "memory" / "index.md").read_text(encoding="utf-8")
    assert "## One finding, not two" in memory and re.search(r"fits all \d+ arms \(R²", memory)
    assert "## Why would a container hold more memory?" in memory
    assert "cgroup accounting of unified memory" in memory and "page cache" in memory
    assert "**Unified memory** — “phase1”. On a unified-memory" in memory and "**Discrete GPU**" not in memory
    assert (pages / "memory" / "charts" / "memory-budget.vl.json").exists()


def test_file_system_failure_is_one_line(tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkreport.errors import BuildError
    from sparkreport.render import core

    def broken(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError(2, "No such file or directory", str(tmp_path / "docs" / "x.svg"))

    monkeypatch.setattr(core, "write_svgs", broken)
    with pytest.raises(BuildError) as info:
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, docs_dir=tmp_path / "build" / "docs"))
    assert info.value.format_message().startswith(f"{tmp_path / 'docs' / 'x.svg'}: No such file or directory — ")
