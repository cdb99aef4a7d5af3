"""Bad configuration is refused before any heavy work (#16): from the store's name index, with
the same one-line errors the checks after the dataset load give, and the index never stale."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.config import load_config
from sparkreport.dataset import load_dataset
from sparkreport.early import (
    ENTRIES_FILE,
    INDEX_FILE,
    _entry_from_json,
    _entry_from_record,
    kept_index,
    store_index,
)
from sparkreport.errors import BuildError, SparkreportError
from sparkreport.render import RenderOptions
from sparkreport.render.preflight import DatasetNames, IndexNames, check_diffs, check_posts, refuse_early

REPO = Path(__file__).resolve().parents[1]

BAD_DIFFS = [
    ("a: nope=1\n    b: environment=native",
     "sparkreport.yml:3: diff 'x': a: selector 'nope=1': no column or label 'nope' — labels here: none"),
    ("a: model=llama\n    b: environment=native",
     "sparkreport.yml:3: diff 'x': a: selector 'model=llama': no run has model='llama' — model values here: "
     "deepseek, gpt120b, qwen72b"),
    ("a: model=qwen72b,environment=nowhere\n    b: environment=native",
     "sparkreport.yml:3: diff 'x': a: selector 'model=qwen72b,environment=nowhere': no run has "
     "environment='nowhere' — environment values here: container, native"),
    ("a: environment=native\n    b: gpu_name=H100",
     "sparkreport.yml:4: diff 'x': b: selector 'gpu_name=H100': no run has gpu_name='H100' — gpu_name values "
     "here: NVIDIA GB10"),
    ("a: environment=native\n    b: oops",
     "sparkreport.yml:4: diff 'x': b: selector 'oops': 'oops' is not KEY=VALUE (e.g. engine_version=1.2.0) — "
     "see the README's diff section"),
]

BAD_BINDINGS = [
    ('value("kv_cache_gib", model="llama", environment="native")',
     "no arm with kv_cache_gib has model='llama' — model values here: deepseek, gpt120b, qwen72b"),
    ('value("kv_cache_gib", label_gpu="h100")', "no label 'gpu' in the data — labels: none"),
    ('value("kv_cache_gib", gpu="h100")',
     "unknown filter 'gpu' — filters: campaign, model, model_name, environment, label_KEY"),
    ('compare("kv_cache_gib", model="deepseek", candidate="podman")',
     "no arm comparing kv_cache_gib has environment='podman' — environment values here: container, native"),
    ('table("arms", metric="kv_cache_gib", campaign="phase9")',
     "no arm with kv_cache_gib has campaign='phase9' — campaign values here: phase1"),
    ('chart("a/b", size=3)', "chart(): got an unexpected keyword argument 'size'"),
    ('value("kv_cache_gib", model="deepseek", environment="native", digits=-1)',
     "value(): digits=-1 is not a number of decimals — digits takes a whole number from 0 to 10, e.g. digits=1"),
    ('compare("kv_cache_gib", factor=["environment"])',
     "compare(): factor=['environment'] is not a column name — write it in quotes, e.g. factor=\"environment\""),
]


def project(tmp_path: Path, config: str = "", post: str | None = None) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True, exist_ok=True)
    (root / "sparkreport.yml").write_text(config, encoding="utf-8")
    if post is not None:
        posts = root / "docs" / "blog" / "posts"
        posts.mkdir(parents=True, exist_ok=True)
        (posts / "post.md").write_text(f"---\ndate: 2026-01-01\n---\n\n# Post\n\n{{{{ {post} }}}}\n",
                                       encoding="utf-8")
    return root


def options(root: Path, runs: Path) -> RenderOptions:
    return RenderOptions(runs_dir=runs, project_root=root, config_path=root / "sparkreport.yml")


@pytest.mark.parametrize(("selectors", "message"), BAD_DIFFS)
def test_a_bad_diff_gets_the_same_line_from_the_index_and_from_the_dataset(
        tmp_path: Path, phase1_store: Path, selectors: str, message: str) -> None:
    root = project(tmp_path, f"diffs:\n  - name: x\n    {selectors}\n")
    config = load_config(root / "sparkreport.yml")
    expected = f"{root}/{message}"
    with pytest.raises(SparkreportError) as early:
        refuse_early(options(root, phase1_store))
    with pytest.raises(SparkreportError) as late:
        check_diffs(DatasetNames(load_dataset(phase1_store)), config)
    assert early.value.format_message() == late.value.format_message() == expected


@pytest.mark.parametrize(("binding", "problem"), BAD_BINDINGS)
def test_a_stale_binding_gets_the_same_line_from_the_index_and_from_the_dataset(
        tmp_path: Path, phase1_store: Path, binding: str, problem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, post=binding)
    monkeypatch.chdir(root)
    config = load_config(root / "sparkreport.yml")
    expected = f"docs/blog/posts/post.md:7: {{{{ {binding} }}}}: {problem}"
    index = store_index(phase1_store)
    for names in (IndexNames(index), DatasetNames(load_dataset(phase1_store))):
        with pytest.raises(BuildError) as raised:
            check_posts(names, config, root / "docs")
        assert raised.value.format_message() == expected


def test_a_selector_on_a_column_the_index_lacks_waits_for_the_dataset(tmp_path: Path, phase1_store: Path) -> None:
    """``iteration`` is not indexed: the early pass lets it through, the check after the load refuses it."""
    root = project(tmp_path, "diffs:\n  - name: x\n    a: iteration=99\n    b: environment=native\n")
    refuse_early(options(root, phase1_store))
    with pytest.raises(SparkreportError, match=r"no run has iteration='99' — iteration values here: 1, 10, 2, 3, "):
        check_diffs(DatasetNames(load_dataset(phase1_store)), load_config(root / "sparkreport.yml"))


def test_long_value_lists_are_cut_short(tmp_path: Path, phase1_store: Path) -> None:
    runs = tmp_path / "runs"
    source = next(phase1_store.glob("*/*/run.json"))
    for i in range(20):
        data = json.loads(source.read_text(encoding="utf-8"))
        data["run_id"], data["model"]["name"] = f"run-{i:02d}", f"model-{i:02d}"
        folder = runs / data["campaign"] / data["run_id"]
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(data), encoding="utf-8")
    root = project(tmp_path, post='value("kv_cache_gib", model="gone")')
    with pytest.raises(BuildError, match=r"model values here: model-00, model-01, model-02, model-03, model-04, "
                                           r"model-05, model-06, model-07, … and 12 more$"):
        refuse_early(options(root, runs))


@pytest.mark.parametrize("command", ["build", "render"])
@pytest.mark.parametrize("case", ["config", "diff", "post"])
def test_build_and_render_refuse_before_loading_the_dataset_and_write_no_page(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch, case: str, command: str) -> None:
    from sparkreport import dataset as dataset_module
    from sparkreport.site import incremental

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("heavy work started before the configuration was checked")

    monkeypatch.setattr(dataset_module, "load_dataset", forbidden)
    monkeypatch.setattr(incremental, "build_key", forbidden)
    config = {"config": "analysis:\n  confidence: 95\n",
              "diff": "diffs:\n  - name: x\n    a: model=llama\n    b: environment=native\n"}.get(case, "")
    root = project(tmp_path, config, post='value("kv_cache_gib", model="llama")' if case == "post" else None)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, [command, "--runs-dir", str(phase1_store)])
    expected = {
        "config": f"{root}/sparkreport.yml:2: analysis.confidence must be between 0 and 1 (exclusive), not 95 — "
                  "e.g. 0.95",
        "diff": f"{root}/sparkreport.yml:3: diff 'x': a: selector 'model=llama': no run has model='llama' — model "
                "values here: deepseek, gpt120b, qwen72b",
        "post": "docs/blog/posts/post.md:7: {{ value(\"kv_cache_gib\", model=\"llama\") }}: no arm with kv_cache_gib "
                "has model='llama' — model values here: deepseek, gpt120b, qwen72b",
    }[case]
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert result.output == f"Error: {expected}\n"
    assert not (root / "build" / "docs").exists() and not (root / "site").exists()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_build_after_a_kept_one_refuses_in_one_line_and_leaves_the_site(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """With an earlier build kept, the checks run beside the store's walk (a forked process that
    writes nothing): a bad diff is refused in the same one line, before the dataset is loaded,
    the site and the build cache are left as they were (no half-written file), and the next
    good build goes on."""
    from sparkreport import dataset as dataset_module
    from sparkreport.parallel import JOBS_ENV

    monkeypatch.setenv(JOBS_ENV, jobs)
    root = project(tmp_path)
    monkeypatch.chdir(root)
    assert CliRunner().invoke(main, ["build", "--runs-dir", str(phase1_store)]).exit_code == 0
    cache = root / "build" / "cache"
    before = {path: path.stat().st_mtime_ns for path in cache.rglob("*")}
    site = {path: path.stat().st_mtime_ns for path in (root / "site").rglob("*")}
    (root / "sparkreport.yml").write_text("diffs:\n  - name: x\n    a: model=llama\n    b: environment=native\n",
                                          encoding="utf-8")

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dataset was loaded before the configuration was checked")

    monkeypatch.setattr(dataset_module, "load_dataset", forbidden)
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(phase1_store)])
    assert result.exit_code == 1 and result.output == (
        f"Error: {root}/sparkreport.yml:3: diff 'x': a: selector 'model=llama': no run has model='llama' — model "
        "values here: deepseek, gpt120b, qwen72b\n")
    after = {path: path.stat().st_mtime_ns for path in cache.rglob("*") if path.name != INDEX_FILE}
    assert after == before  # the name index made for the check aside: nothing written, no temporary file
    assert {path: path.stat().st_mtime_ns for path in (root / "site").rglob("*")} == site
    monkeypatch.undo()
    monkeypatch.chdir(root)
    (root / "sparkreport.yml").write_text("", encoding="utf-8")
    assert CliRunner().invoke(main, ["build", "--runs-dir", str(phase1_store)]).exit_code == 0


def test_the_refusal_imports_no_pandas_scipy_altair_or_mkdocs(tmp_path: Path, phase1_store: Path) -> None:
    root = project(tmp_path, post='value("kv_cache_gib", model="llama")')
    script = ("import sys\nfrom sparkreport.cli import main\ntry:\n    main(['build', '--runs-dir', sys.argv[1]])\n"
              "except SystemExit:\n    pass\nprint(sorted(m for m in ('pandas', 'numpy', 'scipy', 'altair', 'mkdocs', "
              "'material') if m in sys.modules))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script, str(phase1_store)], cwd=root, env=env,
                          capture_output=True, text=True, check=True)
    assert "no arm with kv_cache_gib has model='llama'" in done.stderr
    assert done.stdout.strip() == "[]"


def test_the_index_follows_every_change_to_the_store(tmp_path: Path, phase1_store: Path) -> None:
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    shutil.copytree(phase1_store, runs)
    first = store_index(runs, cache)
    assert first.read == 63 and (cache / INDEX_FILE).is_file()
    again = store_index(runs, cache)
    assert again.read == 0 and [e.values for e in again.entries] == [e.values for e in first.entries]

    changed = sorted(runs.glob("*/*/run.json"))[0]
    data = json.loads(changed.read_text(encoding="utf-8"))
    data["model"]["name"] = "renamed"
    changed.write_text(json.dumps(data), encoding="utf-8")  # same inode, rewritten in place
    index = store_index(runs, cache)
    assert index.read == 1 and "renamed" in IndexNames(index).values("model")

    added = changed.parent.parent / "run-added"
    added.mkdir()
    data["model"]["name"], data["run_id"] = "added", "run-added"
    (added / "run.json").write_text(json.dumps(data), encoding="utf-8")
    index = store_index(runs, cache)
    assert index.read == 1 and len(index.entries) == 64 and "added" in IndexNames(index).values("model")

    shutil.rmtree(changed.parent)
    index = store_index(runs, cache)
    assert index.read == 0 and len(index.entries) == 63 and "renamed" not in IndexNames(index).values("model")
    (cache / INDEX_FILE).write_bytes(b"not a pickle")
    assert store_index(runs, cache).read == 63  # a damaged index is rebuilt, never trusted


def test_the_index_written_later_is_written_once_the_build_says(tmp_path: Path, phase1_store: Path) -> None:
    """A build puts the name index's write off until its builder builds (WritesLater): nothing
    is written before, the same index after; an index unchanged is not written at all."""
    from sparkreport.cache import WritesLater

    runs, cache = tmp_path / "runs", tmp_path / "cache"
    shutil.copytree(phase1_store, runs)
    later = WritesLater()
    first = store_index(runs, cache, later)
    assert first.read == 63 and not (cache / INDEX_FILE).exists()
    later.run()
    again = store_index(runs, cache, later)
    assert again.read == 0 and [e.values for e in again.entries] == [e.values for e in first.entries]
    written = (cache / INDEX_FILE).stat().st_mtime_ns
    later.run()  # nothing was put: the index is as it was
    assert (cache / INDEX_FILE).stat().st_mtime_ns == written


def test_a_build_after_a_kept_one_writes_the_index_its_checks_read(tmp_path: Path, phase1_store: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks of a build after a kept one read a changed run.json into the name index; the
    build writes the index while its builder builds, so the next call reads nothing again."""
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    root = project(tmp_path, "baseline: native\n")  # (a design line: the checks read the index)
    monkeypatch.chdir(root)
    first = CliRunner().invoke(main, ["build", "--runs-dir", str(runs)])
    assert first.exit_code == 0, first.output
    changed = sorted(runs.glob("*/*/run.json"))[0]
    changed.write_text(changed.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert CliRunner().invoke(main, ["build", "--runs-dir", str(runs)]).exit_code == 0
    assert store_index(runs, root / "build" / "cache").read == 0


def test_the_kept_index_reads_its_entries_file_as_the_index_file_says(tmp_path: Path, phase1_store: Path) -> None:
    """The entries file written beside the index gives the index file's entries, in its order (each
    distinct entry one object, as often as runs hold it); one not written with the index file as
    it is now (a stale copy), damaged or gone is not read: the index file itself is."""
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    shutil.copytree(phase1_store, runs)
    whole = store_index(runs, cache)
    read = kept_index(runs, cache)
    assert (cache / ENTRIES_FILE).is_file() and read is not None
    assert read.entries == whole.entries and len(read.entries) == 63
    assert len({id(entry) for entry in read.entries}) < len(read.entries)  # shared where equal
    stale = (cache / ENTRIES_FILE).read_bytes()
    changed = sorted(runs.glob("*/*/run.json"))[0]
    data = json.loads(changed.read_text(encoding="utf-8"))
    data["model"]["name"] = "renamed-model"
    changed.write_text(json.dumps(data), encoding="utf-8")
    now = store_index(runs, cache)  # the index file and its entries file written again
    assert kept_index(runs, cache).entries == now.entries  # type: ignore[union-attr]
    for replaced in (stale, b"damaged", None):
        if replaced is None:
            (cache / ENTRIES_FILE).unlink()
        else:
            (cache / ENTRIES_FILE).write_bytes(replaced)
        kept = kept_index(runs, cache)
        assert kept is not None and kept.entries == now.entries
        assert "renamed-model" in {entry.values.get("model") for entry in kept.entries}


def test_a_broken_run_json_is_named_by_the_index_as_by_the_store(tmp_path: Path, phase1_store: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    broken = sorted(runs.glob("*/*/run.json"))[3]
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(SparkreportError, match=rf"{broken}:1: is not valid JSON"):
        store_index(runs, tmp_path / "cache")


def test_the_fast_reading_of_a_run_json_equals_the_validated_one(phase1_store: Path, published_store: Path) -> None:
    """Every shipped and fixture run.json: the index's plain JSON reading gives what the store's
    validation gives (an older schema or an odd type falls back to the validation itself)."""
    files = [*sorted((REPO / "runs").glob("*/*/run.json")), *sorted(phase1_store.glob("*/*/run.json")),
             *sorted(published_store.glob("*/*/run.json"))]
    assert len(files) > 100
    for file in files:
        fast = _entry_from_json(json.loads(file.read_text(encoding="utf-8")))
        assert fast is not None and fast == _entry_from_record(file), file


def test_index_names_agree_with_the_dataset(published_store: Path) -> None:
    index, dataset = IndexNames(store_index(published_store)), DatasetNames(load_dataset(published_store))
    assert index.label_columns == dataset.label_columns
    for column in ("campaign", "model", "model_name", "environment", "gpu_name", "engine_version"):
        assert index.values(column) == dataset.values(column), column
        assert sorted(map(str, index.run_values(column))) == sorted(map(str, dataset.run_values(column))), column


@pytest.mark.parametrize("count", [1, 63, 64, 65, 100, 1001])
def test_reading_many_run_files_on_threads_keeps_every_file_and_skips_the_unreadable(tmp_path: Path,
                                                                                    count: int) -> None:
    """In one batch below 64 files, else in batches on threads: every file read once, in any
    split (the last file is missing: left out, not an error)."""
    from sparkreport.early import _read_all

    paths = {f"r{i}": str(tmp_path / f"{i}.json") for i in range(count)}
    for i in range(count - 1):
        Path(paths[f"r{i}"]).write_bytes(f"{i}".encode())
    contents = _read_all(paths)
    assert sorted(contents) == sorted(f"r{i}" for i in range(count - 1))
    assert all(contents[f"r{i}"] == f"{i}".encode() for i in range(count - 1))


DESIGN_CONFIGS = [
    ("factor: nosuch\n", "sparkreport.yml:1: factor: no column 'nosuch' to compare on — use environment, campaign, "
                         "model, another run column (engine_version, driver, …) or a label (labels here: none)"),
    ("title: t\nbaseline: docker\n", "sparkreport.yml:2: baseline: no environment called 'docker' — set baseline: to "
                                     "one of the environment values here: container, native"),
    ("factor: model\n", "sparkreport.yml:1: baseline (the default, native): no model called 'native' — set baseline: "
                        "to one of the model values here: deepseek, gpt120b, qwen72b"),
]


@pytest.mark.parametrize("command", ["build", "compare"])
@pytest.mark.parametrize(("config", "message"), DESIGN_CONFIGS)
def test_a_factor_or_baseline_the_data_lacks_is_refused_before_the_dataset(
        tmp_path: Path, phase1_store: Path, monkeypatch: pytest.MonkeyPatch, command: str, config: str,
        message: str) -> None:
    """`factor: nosuch` ended compare and build in a KeyError (a store of published arms), and
    `baseline: docker` built a site saying no comparison could be made: both are refused in one
    line naming sparkreport.yml, its line and what the data holds — build before the dataset."""
    from sparkreport import dataset as dataset_module

    root = project(tmp_path, config)
    monkeypatch.chdir(root)
    if command == "build":
        monkeypatch.setattr(dataset_module, "load_dataset", lambda *a, **k: pytest.fail("the dataset was loaded"))
    result = CliRunner().invoke(main, [command, "--runs-dir", str(phase1_store), "--config", "sparkreport.yml"]
                                if command == "compare" else [command, "--runs-dir", str(phase1_store)])
    where = "" if command == "compare" else f"{root}/"
    assert (result.exit_code, result.output) == (1, f"Error: {where}{message}\n")


def test_a_factor_no_run_has_is_refused_for_published_arms_alone(tmp_path: Path, published_store: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, "factor: nosuch\n")
    monkeypatch.chdir(root)
    expected = ("factor: no column 'nosuch' to compare on — use environment, campaign, model, another run column "
                "(engine_version, driver, …) or a label (labels here: none)")
    result = CliRunner().invoke(main, ["compare", "--runs-dir", str(published_store)])
    assert (result.exit_code, result.output) == (1, f"Error: sparkreport.yml:1: {expected}\n")
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(published_store)])
    assert (result.exit_code, result.output) == (1, f"Error: {root}/sparkreport.yml:1: {expected}\n")
    (root / "sparkreport.yml").write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["compare", "--runs-dir", str(published_store), "--factor", "nosuch"])
    assert (result.exit_code, result.output) == (2, f"Error: --{expected}\n")


def test_home_never_names_another_level_the_baseline(tmp_path: Path, phase1_store: Path) -> None:
    """With no environment called native (the default baseline), Home said 'native against the
    baseline **container**': the first level in order. It says none is the baseline now."""
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    for path in runs.glob("*/*/run.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["environment"]["name"] == "native":
            data["environment"]["name"] = "bare"
            path.write_text(json.dumps(data), encoding="utf-8")
    root = project(tmp_path)
    from sparkreport.render import render

    render(RenderOptions(runs_dir=runs, project_root=root, config_path=root / "sparkreport.yml",
                         docs_dir=tmp_path / "docs"))
    home = (tmp_path / "docs" / "index.md").read_text(encoding="utf-8")
    campaign = (tmp_path / "docs" / "campaigns" / "phase1" / "index.md").read_text(encoding="utf-8")
    assert "against the baseline" not in home
    assert "bare, container, none of them the baseline **native**, 3 models," in home
    assert "(bare, container; none of them the baseline **native**)" in campaign


def test_a_build_checks_against_the_kept_index_and_the_store_decides(tmp_path: Path, phase1_store: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A build after a kept one checks the posts against the name index the last build left,
    without a stat of every run.json: a binding the kept index cannot answer (a model added
    since) is checked against the store itself and passes; one only the kept index can answer (a
    model removed since) passes there and is refused, in the same one line, once the dataset is
    loaded — and the build brings the index up to date for the next one."""
    runs = tmp_path / "runs"
    shutil.copytree(phase1_store, runs)
    root = project(tmp_path, post='value("kv_cache_gib", model="deepseek", environment="native")')
    post = root / "docs" / "blog" / "posts" / "post.md"
    monkeypatch.chdir(root)
    assert CliRunner().invoke(main, ["build", "--runs-dir", str(runs)]).exit_code == 0

    source = next(run for run in sorted(runs.glob("*/*/run.json"))
                  if '"native"' in run.read_text(encoding="utf-8"))
    added = source.parent.parent / "run-added"
    shutil.copytree(source.parent, added)
    data = json.loads((added / "run.json").read_text(encoding="utf-8"))
    data["model"]["name"], data["run_id"] = "added", "run-added"
    (added / "run.json").write_text(json.dumps(data), encoding="utf-8")
    post.write_text(post.read_text(encoding="utf-8").replace('model="deepseek"', 'model="added"'), encoding="utf-8")
    from sparkreport import early

    checked: list[Path] = []
    monkeypatch.setattr(early, "store_index", lambda *args: checked.append(args[0]) or store_index(*args))
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    assert checked == [runs]  # the kept index did not know the model: the store was asked
    assert store_index(runs, root / "build" / "cache").read == 0  # the build wrote the index it found

    for run in runs.glob("*/*/run.json"):
        if json.loads(run.read_text(encoding="utf-8"))["model"]["name"] == "gpt120b":
            shutil.rmtree(run.parent)
    post.write_text(post.read_text(encoding="utf-8").replace('model="added"', 'model="gpt120b"'), encoding="utf-8")
    site = {path: path.stat().st_mtime_ns for path in (root / "site").rglob("*")}
    checked.clear()
    result = CliRunner().invoke(main, ["build", "--runs-dir", str(runs)])
    assert result.exit_code == 1 and result.output == (
        "Error: docs/blog/posts/post.md:7: {{ value(\"kv_cache_gib\", model=\"gpt120b\", environment=\"native\") }}: "
        "no arm with kv_cache_gib has model='gpt120b' — model values here: added, deepseek, qwen72b\n")
    assert checked == []  # passed on the kept index; refused by the dataset's own check
    assert {path: path.stat().st_mtime_ns for path in (root / "site").rglob("*")} == site

    post.write_text(post.read_text(encoding="utf-8").replace('model="gpt120b"', 'model="qwen72b"'), encoding="utf-8")
    assert CliRunner().invoke(main, ["build", "--runs-dir", str(runs)]).exit_code == 0  # (after a failed build:
    checked.clear()  # no state kept, so the checks ran against the store, as in a first build)
    again = next(iter(sorted(runs.glob("*/*/run.json"))))
    shutil.copytree(again.parent, again.parent.parent / "run-again")
    data = json.loads((again.parent.parent / "run-again" / "run.json").read_text(encoding="utf-8"))
    data["run_id"] = "run-again"
    (again.parent.parent / "run-again" / "run.json").write_text(json.dumps(data), encoding="utf-8")
    assert CliRunner().invoke(main, ["build", "--runs-dir", str(runs)]).exit_code == 0
    assert checked == []  # the kept index answered every check: the build alone brought it up to date
    assert store_index(runs, root / "build" / "cache").read == 0


def test_the_index_refresh_passes_over_a_run_removed_since_the_scan(tmp_path: Path) -> None:
    """The build refreshes the name index while MkDocs builds, seconds after its scan of the
    store: a run removed meanwhile is passed over (a cache; the next build reads the store again),
    never an error that fails the build."""
    from sparkreport.early import refresh_index
    from sparkreport.store import StoreScan

    runs, cache = tmp_path / "runs", tmp_path / "cache"
    run = runs / "c1" / "r1" / "run.json"
    run.parent.mkdir(parents=True)
    run.write_text("{}", encoding="utf-8")
    scan = StoreScan([(str(run), os.stat(run))], [], [("c1", "r1")])
    run.unlink()
    refresh_index(runs, cache, scan)
    assert not (cache / INDEX_FILE).exists()
