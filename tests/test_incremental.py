"""Issue 16: bad configuration is refused before any heavy work, with one line whose lists of
values are cut short; a render rewrites only the generated files whose bytes changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.errors import BuildError, ConfigError
from sparkreport.names import shown_values
from sparkreport.render import RenderOptions, render


def test_shown_values_cuts_long_lists_short() -> None:
    assert shown_values([]) == "none"
    assert shown_values(["a", "b"]) == "a, b"
    assert shown_values([f"m{i}" for i in range(8)]) == "m0, m1, m2, m3, m4, m5, m6, m7"
    assert shown_values([f"m{i}" for i in range(100)], limit=2) == "m0, m1, … and 98 more"
    assert shown_values(range(10)) == "0, 1, 2, 3, 4, 5, 6, 7, … and 2 more"


@pytest.fixture
def no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the render gets as far as the analysis (statistics, pages, charts)."""
    import sparkreport.render.context as context

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the analysis ran before the bad configuration was refused")

    monkeypatch.setattr(context, "build_site_data", refuse)


def write_config(tmp_path: Path, a: str, b: str = "environment=native") -> Path:
    config = tmp_path / "sparkreport.yml"
    config.write_text(f"title: t\ndiffs:\n  - name: x\n    a: {a}\n    b: {b}\n", encoding="utf-8")
    return config


@pytest.mark.parametrize(("selector", "problem"), [
    ("environment=bare-metal", "selector 'environment=bare-metal': no run has environment='bare-metal' — "
     "environment values here: container, native"),
    ("model=llama,environment=native", "selector 'model=llama,environment=native': no run has model='llama' — "
     "model values here: deepseek, gpt120b, qwen72b"),
    ("gpu=h100", "selector 'gpu=h100': no column or label 'gpu' — labels here: none"),
    ("campaign", "selector 'campaign': 'campaign' is not KEY=VALUE (e.g. engine_version=1.2.0) — see the README's "
     "diff section"),
])
def test_bad_diff_selector_refused_before_the_analysis(tmp_path: Path, phase1_store: Path, no_analysis: None,
                                                       selector: str, problem: str) -> None:
    config = write_config(tmp_path, selector)
    with pytest.raises(ConfigError) as raised:
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, config_path=config))
    assert raised.value.format_message() == f"{config}:4: diff 'x': a: {problem}"
    assert not (tmp_path / "build" / "docs").exists()  # refused before anything was written


def test_diff_whose_conditions_match_apart_but_not_together(tmp_path: Path, phase1_store: Path,
                                                             no_analysis: None) -> None:
    config = write_config(tmp_path, "model=deepseek", "model=qwen72b,model=gpt120b")
    with pytest.raises(ConfigError, match=r":5: diff 'x': b: selector 'model=qwen72b,model=gpt120b': no run "
                                          r"matches every condition at once — check the selector"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path, config_path=config))


def test_stale_post_binding_refused_before_the_analysis(tmp_path: Path, phase1_store: Path, no_analysis: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    posts = tmp_path / "docs" / "blog" / "posts"
    posts.mkdir(parents=True)
    (posts / "p.md").write_text('# P\n\nText.\n{{ value("output_throughput_tok_s", model="llama-3-8b") }}\n',
                                encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(phase1_store)])
    assert result.exit_code == 1
    assert result.output == ('Error: docs/blog/posts/p.md:4: {{ value("output_throughput_tok_s", model="llama-3-8b") '
                             "}}: no arm with output_throughput_tok_s has model='llama-3-8b' — model values here: "
                             "deepseek, gpt120b, qwen72b\n")
    (posts / "p.md").write_text('# P\n\n{{ value("output_throughput_tok_s", label_gpu="x") }}\n', encoding="utf-8")
    with pytest.raises(BuildError, match=r"^docs/blog/posts/p\.md:3: .*: no label 'gpu' in the data — labels: none$"):
        render(RenderOptions(runs_dir=phase1_store, project_root=tmp_path))


def files_and_mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_render_rewrites_only_changed_files(tmp_path: Path, phase1_store: Path) -> None:
    """Equal bytes keep their mtime; a changed page is rewritten; a removed page is deleted."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "notes.md").write_text("# Notes\n\nOne.\n", encoding="utf-8")
    (project / "docs" / "gone.md").write_text("# Gone\n", encoding="utf-8")
    first = render(RenderOptions(runs_dir=phase1_store, project_root=project))
    docs = first.docs_dir
    before = files_and_mtimes(docs)
    assert "notes.md" in before and "index.md" in before
    assert first.changed_files == len(before) - 1  # every file but the marker, written before the render
    for path in docs.rglob("*"):  # back-date everything: a rewrite now shows as a new mtime
        if path.is_file():
            os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    (project / "docs" / "notes.md").write_text("# Notes\n\nTwo.\n", encoding="utf-8")
    (project / "docs" / "gone.md").unlink()
    second = render(RenderOptions(runs_dir=phase1_store, project_root=project))
    after = files_and_mtimes(docs)
    assert set(after) == set(before) - {"gone.md"}
    rewritten = sorted(name for name, mtime in after.items() if mtime != 1_000_000_000)
    assert rewritten == ["notes.md"]
    assert second.changed_files == 2  # notes.md written, gone.md removed
    assert (docs / "notes.md").read_text(encoding="utf-8") == "# Notes\n\nTwo.\n"
    assert not (docs.parent / ".docs.staging").exists()
