"""Publishing: the credential scan of a built site and the temporary-folder build + swap.

Builds use a tiny store (two trtllm-bench logs) so that a real `sparkreport build` subprocess
stays short enough to interrupt several times.
"""

from __future__ import annotations

import gzip
import json
import os
import posixpath
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkreport.errors import BuildError, SparkreportError
from sparkreport.ingest import IngestOptions, ingest_paths
from sparkreport.render import RenderOptions
from sparkreport.site import build, publish
from sparkreport.site.scan import MAX_LISTED, PublishScanError, check_site, scan_site
from sparkreport.store import RunStore

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO / "tests" / "fixtures" / "trtllm-log"
TITLE_MODEL = "</title><script>alert(2)</script>"

#: One planted value per shape (none of them real); the scan must name each shape, never the value.
PLANTED = {
    "url-userinfo": "postgres://bench:Hunter2Pass99@db.internal:5432/results",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjaS1qb2IifQ.c2lnbmF0dXJlLXZhbHVlLXgx",
    "key-value-secret": "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    "token-prefix": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4",
    "bearer": "Authorization: Bearer abcDEF123456ghiJKL789",
    "webhook-url": "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXX",
    "docker-auth": '{"auths": {"registry.example": {"auth": "dXNlcjpwYXNzd29yZDEyMzQ="}}}',
    "private-key": "-----BEGIN RSA PRIVATE KEY-----",
    "short-password-field": "Server=db.internal;UID=bench;PWD=Hunter2Pass99;",
}


def _site(tmp_path: Path, files: dict[str, bytes]) -> Path:
    site = tmp_path / "site"
    for name, data in files.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return site


def test_scan_names_every_shape_in_every_kind_of_file_never_the_value(tmp_path: Path) -> None:
    import html

    files: dict[str, bytes] = {}
    for k, (shape, value) in enumerate(PLANTED.items()):
        text = f"line one\nrun {k}: {value}\n"
        files[f"p{k}/index.html"] = f"<p>{html.escape(text)}</p>".encode()
        files[f"search/{k}.json"] = json.dumps({"text": text}).encode()
        files[f"runs/files/c/r{k}/bench.log.gz"] = gzip.compress(text.encode())
        files[f"charts/{shape}.json"] = json.dumps({"data": {"values": [{"label": value}]}}).encode()
    files["assets/images/logo.png"] = PLANTED["jwt"].encode()  # binary formats are not scanned
    site = _site(tmp_path, files)
    findings = scan_site(site)
    by_file = {(f.path, f.shape) for f in findings}
    for k, shape in enumerate(PLANTED):
        for path in (f"p{k}/index.html", f"search/{k}.json", f"runs/files/c/r{k}/bench.log.gz", f"charts/{shape}.json"):
            assert (path, shape) in by_file, (path, shape)
    assert all(f.line == 2 for f in findings if f.path.endswith((".html", ".gz")))
    assert not any(f.path.endswith(".png") for f in findings)
    with pytest.raises(PublishScanError) as caught:
        check_site(site, label="site")
    message = caught.value.format_message()
    lines = message.splitlines()
    assert len(lines) == 1 + MAX_LISTED + 1 and lines[-1] == f"… and {len(findings) - MAX_LISTED} more"
    assert "sparkreport scrub" in lines[1] and lines[1].startswith("site/charts/")
    for value in PLANTED.values():
        for part in (value, value.split(":")[-1].split("@")[0], value.split("=")[-1]):
            if len(part) >= 12:
                assert part not in message


def test_grep_prefilter_finds_what_the_full_scan_finds(tmp_path: Path) -> None:
    """The prefilter is a superset: every hit of the Python scan is also in a grep-selected file."""

    variants = [f"x {value} y" for value in PLANTED.values()] + [
        "see https://user:[REDACTED]@proxy and password=</code>",  # scrubbed, and a tag: no hit
        "PASSWORD = s3cr3tvalue", "apiKey: 'abcdef123456'", "SharedAccessSignature=sv=2020&sig=abcdefgh",
        json.dumps({"url": "https://ci:tok3nValue9@git.example/x.git"}),
    ]
    files = {f"f{k}.txt": v.encode() for k, v in enumerate(variants)}
    files.update({f"g{k}.txt.gz": gzip.compress(v.encode()) for k, v in enumerate(variants)})
    files["plain.html"] = b"<p>tokens/s: 1234, key: value</p>"
    files["nul.log"] = b"\x00\x01binary\n" + PLANTED["jwt"].encode() + b"\n"  # grep must not skip it as binary
    files["nul.log.gz"] = gzip.compress(files["nul.log"])
    site = _site(tmp_path, files)
    fast, full = scan_site(site), scan_site(site, prefilter=False)
    assert fast == full
    assert {"nul.log", "nul.log.gz"} <= {f.path for f in fast}
    n = len(PLANTED)  # then the scrubbed line (no hit), then three more hits
    assert {f.path for f in full} >= {f"f{k}.txt" for k in range(n)} | {f"f{n + k}.txt" for k in (1, 2, 3)}
    assert not any(f.path in (f"f{n}.txt", "plain.html") for f in full)


def prefilter_picks(folder: Path, texts: list[str]) -> set[int]:
    """The numbers (from 1) of the lines of ``texts`` that ``grep -E PREFILTER_ERE`` picks."""
    from sparkreport.site.scan import PREFILTER_ERE

    path = folder / "lines.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    grep = subprocess.run(["grep", "-anE", "-e", PREFILTER_ERE, "--", str(path)], capture_output=True,
                          env={**os.environ, "LC_ALL": "C"}, check=False)
    return {int(line.split(b":", 1)[0]) for line in grep.stdout.splitlines()}


KEY_NAMES = ["AccountKey", "SharedAccessKey", "SharedAccessSignature", "password", "PASSWD", "secret",
             "client_secret", "api_key", "api-key", "apikey", "access_key", "accessKey", "auth_token", "authtoken",
             "_authToken", "_auth", "token", "sig", "HF_TOKEN", "my_password", "tokens", "max tokens", "keys"]


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.tuples(st.sampled_from(["", "x ", "--", "\"", "export ", "a_", "-"]),
                                st.sampled_from(KEY_NAMES), st.sampled_from(["", " ", "  ", "\t", "s", "\""]),
                                st.sampled_from(["=", ":", " = ", ": ", "", " "]),
                                st.sampled_from(["", "'", "\"", " "]),
                                st.text(alphabet="abcXYZ019-_./;&,", min_size=0, max_size=12)),
                      min_size=1, max_size=40))
def test_the_key_value_prefilter_is_a_superset_line_by_line(tmp_path_factory: pytest.TempPathFactory,
                                                            lines: list[tuple[str, ...]]) -> None:
    """Every line the Python scan finds a key-value secret in, ``grep -E PREFILTER_ERE`` picks."""
    from sparkreport.secrets import SHAPES

    shape = next(s for s in SHAPES if s.name == "key-value-secret")
    texts = ["".join(parts) for parts in lines]
    picked = prefilter_picks(tmp_path_factory.mktemp("ere"), texts)
    for number, text in enumerate(texts, start=1):
        if any(shape.matches(text, text.lower())):
            assert number in picked, text


OPTION_NAMES = ["token", "hf-token", "HF-TOKEN", "api-key", "apikey", "password", "passwd", "secret",
                "first-token", "Inter-token", "max-tokens", "keys"]


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.tuples(st.sampled_from(["", "x ", "x", "time-to-", "\\u2026", "&amp;", "\\/", "\\\"", "\"",
                                                 "_", "a-", "\u00e9", "serve "]),
                                st.sampled_from(["", "-", "--"]), st.sampled_from(OPTION_NAMES),
                                st.sampled_from(["", " ", "=", "  ", "\t", "s ", "= "]),
                                st.sampled_from(["", "'", "\""]),
                                st.text(alphabet="abcXYZ019-_./", min_size=0, max_size=12)),
                      min_size=1, max_size=40))
def test_the_option_prefilter_is_a_superset_line_by_line(tmp_path_factory: pytest.TempPathFactory,
                                                         lines: list[tuple[str, ...]]) -> None:
    """Every line the Python scan (escapes undone, as in a page or the search index) finds a
    secret option in, ``grep -E PREFILTER_ERE`` picks — and "Inter-token ", a metric's name in
    every results page, it does not."""
    from sparkreport.site.scan import PREFILTER_ERE, scan_bytes

    texts = ["".join(parts) for parts in lines]
    picked = prefilter_picks(tmp_path_factory.mktemp("ere"), texts)
    for number, text in enumerate(texts, start=1):
        if any(shape.name == "secret-option" for shape, _line in scan_bytes(text.encode())):
            assert number in picked, text
    names = subprocess.run(["grep", "-cE", "-e", PREFILTER_ERE], input=b"Inter-token (ms) 15.1 time-to-first-token \n",
                           capture_output=True, env={**os.environ, "LC_ALL": "C"}, check=False)
    assert names.stdout == b"0\n"


def test_the_prefilter_passes_over_trtllm_logs(tmp_path: Path) -> None:
    """Their "max tokens: 4096" lines named a key once: every log got the full scan."""
    site = _site(tmp_path, {"run.log": b"[TRT-LLM] [I] max tokens: 4096\nmax_num_tokens: 8192\nKV cache: 12 GiB\n"})
    from sparkreport.site.scan import PREFILTER_ERE

    grep = subprocess.run(["grep", "-alE", "-e", PREFILTER_ERE, "--", str(site / "run.log")], capture_output=True,
                          check=False)
    assert grep.stdout == b""


def test_every_shape_has_a_probe_and_a_prefilter_example(tmp_path: Path) -> None:
    """A shape added to sparkreport.secrets needs its anchors here and its part of the grep ERE:
    one example per shape is found by the prefiltered scan exactly as by the full one."""
    from sparkreport.secrets import SHAPES
    from sparkreport.site.scan import _PROBE_ARGS

    assert {shape.name for shape in SHAPES} == set(_PROBE_ARGS)
    examples = dict(PLANTED, **{"secret-option": "serve --hf-token Zx9vbnm1234"})
    assert set(examples) == {shape.name for shape in SHAPES}
    site = _site(tmp_path, {f"{name}.txt": f"x {value} y".encode() for name, value in examples.items()})
    found = {(f.path, f.shape) for f in scan_site(site)}
    assert found == {(f.path, f.shape) for f in scan_site(site, prefilter=False)}
    assert all((f"{name}.txt", name) in found for name in examples)


def test_secret_options_are_found_and_pages_that_name_them_are_not(tmp_path: Path) -> None:
    """``--hf-token VALUE`` in a published log is a hit (both scans); a page that documents the option
    (``--hf-token …</code>``, ``\\u2026`` in the search index) or a metric name ("time-to-first-token (ms)")
    is not."""
    files = {
        "log.txt": b"vllm bench serve --model x --hf-token Zx9vbnm1234 --max-tokens 128\n",
        "cmd.json": json.dumps({"argv": ["serve", "--api-key=plainPass9"]}).encode(),
        "doc.html": b"<p>a vLLM log's <code>vllm bench serve \xe2\x80\xa6 --hf-token \xe2\x80\xa6</code>, arguments</p>",
        "search.json": json.dumps({"text": "<code>vllm bench serve \u2026 --hf-token \u2026</code>, arguments"}).encode(),
        "metrics.html": b"<td><code>Average time-to-first-token (ms)</code>; <code>Output token throughput</code></td>",
    }
    site = _site(tmp_path, files)
    fast, full = scan_site(site), scan_site(site, prefilter=False)
    assert fast == full
    assert {(f.path, f.shape) for f in full} >= {("log.txt", "secret-option"), ("cmd.json", "secret-option")}
    assert {f.path for f in full} == {"log.txt", "cmd.json"}


def test_vendored_assets_are_skipped_only_when_unchanged(tmp_path: Path) -> None:
    from sparkreport.site.scan import vendored_files

    vendored = vendored_files()
    name, size = next((n, s) for n, s in vendored.items() if n.endswith(".js") and s > 1000)
    same_size = (PLANTED["jwt"] + " " + "x" * size)[:size].encode()
    site = _site(tmp_path / "same", {name: same_size})
    assert scan_site(site) == []  # the packaged file (by path and size): not scanned
    changed = ("x" * (size + 10) + " " + PLANTED["jwt"]).encode()
    site = _site(tmp_path / "changed", {name: changed})
    assert [f.path for f in scan_site(site)] == [name]


# ---------------------------------------------------------------------------------------------
# Real builds of a tiny store


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with two runs and a built site (module-scoped: tests copy it)."""
    root = tmp_path_factory.mktemp("tiny")
    logs = root / "logs"
    logs.mkdir()
    for name in ("engine_backend_trt.log", "memory_only_old_cpp.log"):
        shutil.copy(LOGS / name, logs / name)
    report = ingest_paths(sorted(logs.iterdir()), RunStore(root / "runs"), IngestOptions(campaign="tiny",
                                                                                         environment="native"))
    assert len(report.added) == 2, report.rejected
    for run_json in (root / "runs" / "tiny").glob("*/run.json"):  # a model name that closes <title>
        data = json.loads(run_json.read_text(encoding="utf-8"))
        data["model"]["display_name"] = TITLE_MODEL
        run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    (root / "mkdocs.yml").write_text("site_name: tiny\n", encoding="utf-8")
    build(_options(root), root / "site")
    return root


def _options(root: Path) -> RenderOptions:
    return RenderOptions(runs_dir=root / "runs", docs_dir=root / "build" / "docs", config_path=None,
                         command="sparkreport build", project_root=root)


def _copy(tiny: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(tiny, root, symlinks=True)
    shutil.rmtree(root / "build")  # generated paths are absolute: let the copy render its own
    return root


def _files(site: Path) -> set[str]:
    return {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}


def test_a_scan_hit_fails_the_build_and_leaves_the_old_site_untouched(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    before = _files(root / "site")
    assert "index.html" in before
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    log.write_text(log.read_text(encoding="utf-8") + f"proxy {PLANTED['url-userinfo']}\n", encoding="utf-8")
    with pytest.raises(PublishScanError) as caught:
        build(_options(root), root / "site")
    message = caught.value.format_message()
    assert "engine_backend_trt.log" in message and "a password in a URL" in message
    assert "Hunter2Pass99" not in message
    assert _files(root / "site") == before
    assert not publish.staging_dir(root / "site").exists() and not publish.old_dir(root / "site").exists()


def test_a_build_swaps_the_new_site_in_whole(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    site = root / "site"
    (site / "stale.html").write_text("from an older build", encoding="utf-8")
    build(_options(root), site)
    assert not (site / "stale.html").exists() and (site / "index.html").is_file()
    # the previous site is removed by a process of its own, after the build
    assert _gone(lambda: [p.name for p in root.iterdir() if p.name.startswith(".site")])


def _gone(left: Callable[[], list[Any]], wait_s: float = 20) -> bool:
    """Whether ``left()`` comes back empty within ``wait_s`` (what a remover process leaves)."""
    deadline = time.monotonic() + wait_s
    while left():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_previous_site_is_removed_by_a_process_of_its_own_and_a_killed_ones_leftover_by_the_next(
        tmp_path: Path) -> None:
    """The replaced site is renamed beside the new one and removed by a process in a session of
    its own (no terminal's Ctrl-C, no group a caller waits on, none of the build's files open);
    a folder a killed remover left is handed on by the next build's clean-up."""
    target, staging = _sites(tmp_path)
    for k in range(50):
        (target / f"page-{k}").mkdir()
        (target / f"page-{k}" / "index.html").write_text("previous", encoding="utf-8")
    publish.swap(staging, target)
    assert (target / "index.html").read_text(encoding="utf-8") == "new" and not publish.old_dir(target).exists()
    assert _gone(lambda: publish.trash_dirs(target))
    left = target.with_name(f".{target.name}.trash.1.2")  # a remover killed half-way
    (left / "page").mkdir(parents=True)
    (left / "page" / "index.html").write_text("previous", encoding="utf-8")
    publish.recover(target)
    assert _gone(lambda: publish.trash_dirs(target)) and (target / "index.html").is_file()


def test_leftovers_of_a_killed_build_are_cleaned_up(tmp_path: Path) -> None:
    site = tmp_path / "site"
    old = publish.old_dir(site)
    old.mkdir()
    (old / "index.html").write_text("previous", encoding="utf-8")
    publish.staging_dir(site).mkdir()
    (publish.staging_dir(site) / publish.CARRY_JOURNAL).write_text('{"root": "runs/fi', encoding="utf-8")
    publish.recover(site)  # killed between the two renames: the previous site is put back
    # (a journal that cannot be read was never finished, so nothing had moved: it is dropped)
    assert (site / "index.html").read_text(encoding="utf-8") == "previous"
    assert not old.exists() and not publish.staging_dir(site).exists()
    (site / "index.html").unlink()
    site.rmdir()
    site.write_text("a file", encoding="utf-8")
    with pytest.raises(SparkreportError, match="is a file, not a folder"):
        publish.recover(site)


def _sites(tmp_path: Path) -> tuple[Path, Path]:
    target, staging = tmp_path / "site", publish.staging_dir(tmp_path / "site")
    for folder, text in ((target, "previous"), (staging, "new")):
        folder.mkdir()
        (folder / "index.html").write_text(text, encoding="utf-8")
    return target, staging


def test_a_signal_held_during_the_swap_leaves_the_new_site_and_no_previous_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGINT that arrives during the renames waits and is raised as they end: the new site
    is in place and the previous one is removed all the same (it was left as .site.old when the
    signal came from the renames' end, caught by the interrupt test at 92% of a build)."""
    target, staging = _sites(tmp_path)
    rename = os.rename

    def signalled(source: str | Path, destination: str | Path) -> None:
        rename(source, destination)
        if Path(source) == staging:  # to this thread, which holds it until the renames end
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    monkeypatch.setattr(publish.os, "rename", signalled)
    with pytest.raises(KeyboardInterrupt):
        publish.swap(staging, target)
    assert (target / "index.html").read_text(encoding="utf-8") == "new"
    assert not publish.old_dir(target).exists() and not staging.exists()
    assert _gone(lambda: publish.trash_dirs(target))


def test_a_signal_taken_by_another_thread_still_waits_for_the_renames(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With another thread alive (a thread pool's, the live server's) a SIGTERM sent to the
    process can be taken by that thread, which does not hold it; Python then runs the handler
    in the main thread at once. It must still wait for the renames to end."""
    target, staging = _sites(tmp_path)
    rename = os.rename
    seen: list[str] = []
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # a thread that holds no signal back
    other.start()

    def terminated(signum: int, _frame: object) -> None:
        seen.append(f"handler with the new site {'in place' if (target / 'index.html').read_text() == 'new' else 'not yet in place'}")
        raise publish.Terminated(f"signal {signum}")

    def signalled(source: str | Path, destination: str | Path) -> None:
        rename(source, destination)
        if Path(source) == staging:
            signal.pthread_kill(other.ident or 0, signal.SIGTERM)  # taken by the other thread
            time.sleep(0.05)  # time for Python to run the handler, were it not held back
            seen.append("renames end")

    previous = signal.signal(signal.SIGTERM, terminated)
    monkeypatch.setattr(publish.os, "rename", signalled)
    try:
        with pytest.raises(publish.Terminated):
            publish.swap(staging, target)
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop.set()
        other.join()
    assert seen == ["renames end", "handler with the new site in place"]
    assert not publish.old_dir(target).exists() and not staging.exists()


def test_a_swap_that_fails_between_its_renames_keeps_the_previous_site(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second rename failing leaves the previous site as .site.old (never removed: it is the
    only site), and the next build's clean-up puts it back."""
    target, staging = _sites(tmp_path)
    rename = os.rename

    def failing(source: str | Path, destination: str | Path) -> None:
        if Path(source) == staging:
            raise OSError("disk full")
        rename(source, destination)

    monkeypatch.setattr(publish.os, "rename", failing)
    with pytest.raises(OSError, match="disk full"):
        publish.swap(staging, target)
    assert (publish.old_dir(target) / "index.html").read_text(encoding="utf-8") == "previous"
    monkeypatch.setattr(publish.os, "rename", rename)
    publish.recover(target)
    assert (target / "index.html").read_text(encoding="utf-8") == "previous"
    assert not publish.old_dir(target).exists() and not staging.exists()


def test_interrupts_at_any_moment_leave_the_previous_site_whole(tiny: Path, tmp_path: Path) -> None:
    """SIGINT and SIGTERM at varied delays into a real `sparkreport build` subprocess."""
    root = _copy(tiny, tmp_path)
    site = root / "site"
    before = _files(site)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "sparkreport", "build", "--runs-dir", "runs", "--site-dir", "site"]
    start = time.monotonic()
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    full = time.monotonic() - start
    outcomes = []
    for k, fraction in enumerate((0.1, 0.35, 0.65, 0.92)):
        shutil.rmtree(root / "build" / "cache", ignore_errors=True)  # a full build every time
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(full * fraction)
        proc.send_signal(signal.SIGINT if k % 2 == 0 else signal.SIGTERM)
        proc.communicate(timeout=120)
        outcomes.append(proc.returncode)
        assert (site / "index.html").is_file() and _files(site) == before, f"after a signal at {fraction:.0%} of a build"
        assert not publish.staging_dir(site).exists() and not publish.old_dir(site).exists()
    assert any(code != 0 for code in outcomes)  # at least some signals landed mid-build


def test_a_second_build_of_the_same_site_is_refused_and_the_first_keeps_its_folders(
        tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build from another docs folder (the advice of the docs folder's own refusal) shares the
    site and its temporary folders: it is refused at once, before it cleans them up."""
    from click.testing import CliRunner

    from sparkreport.cli import main

    root = _copy(tiny, tmp_path)
    site = root / "site"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from pathlib import Path; from sparkreport.lock import site_lock\n"
        f"with site_lock(Path({str(site)!r})):\n"
        "    print('held', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        publish.staging_dir(site).mkdir()  # the first build's, half written
        before = _files(site)
        monkeypatch.chdir(root)
        refused = CliRunner().invoke(main, ["build", "--docs-dir", "other/docs"])
        assert (refused.exit_code, refused.output) == (1, (
            f"Error: {site}: another sparkreport build is writing this site (pid {holder.pid}) — "
            "wait for it to finish, or pass another --site-dir\n"))
        assert publish.staging_dir(site).is_dir() and _files(site) == before
    finally:
        holder.kill()  # no clean-up: its lock file stays, its flock goes with it
        holder.wait()
    publish.staging_dir(site).rmdir()
    build(_options(root), site)
    assert _gone(lambda: [p.name for p in root.iterdir() if p.name.startswith(".site")])  # the remover's too


# ---------------------------------------------------------------------------------------------
# What is published: raw files inert, only listed files, never through a symlink, env filtered


def test_raw_files_are_published_under_inert_names() -> None:
    from sparkreport.published import published_name

    for name in ("evil.html", "a.htm", "x.xhtml", "pic.svg", "code.js", "m.mjs", "feed.xml", "doc.pdf",
                 "notes.md", "Dockerfile", "page.HTML"):
        assert published_name(name) == name + ".txt", name
    assert published_name("evil.svg.gz") == "evil.svg.txt.gz"
    assert published_name("evil.html", 10 << 20) == "evil.html.txt.gz"
    for name in ("bench.log", "run.json", "samples.csv", "x.jsonl", "c.yaml", "c.yml", "a.txt"):
        assert published_name(name) == name
    assert published_name("samples.csv.gz", 10 << 20) == "samples.csv.gz"  # never gzip twice


def _store_with_links(tmp_path: Path) -> tuple[Path, Path]:
    runs = tmp_path / "runs"
    run = runs / "c" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}\n", encoding="utf-8")
    (run / "bench.log").write_text("log\n", encoding="utf-8")
    (run / "evil.html").write_text("<script>alert(1)</script>\n", encoding="utf-8")
    (run / "unlisted.log").write_text("not in run.json\n", encoding="utf-8")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret of the build machine\n", encoding="utf-8")
    return runs, outside


def test_only_listed_files_are_published_never_through_a_symlink(tmp_path: Path) -> None:
    from sparkreport.render.runs_index import run_files
    from sparkreport.site.run_files import copy_files

    runs, _outside = _store_with_links(tmp_path)
    run = runs / "c" / "r1"
    (run / "inner.log").symlink_to(run / "bench.log")  # a link inside the store: not followed
    links = run_files(runs, "c/r1", ["bench.log", "evil.html", "inner.log", "missing.log"], "files")
    assert [(f["source"], f["name"]) for f in links] == [
        ("run.json", "run.json"), ("bench.log", "bench.log"), ("evil.html", "evil.html.txt")]
    site = tmp_path / "site"
    copy_files(runs, site, [(f["path"], f["store_path"]) for f in links])
    assert sorted(p.name for p in (site / "files" / "c" / "r1").iterdir()) == ["bench.log", "evil.html.txt",
                                                                               "run.json"]
    # the manifest is checked again at copy time: a link that appeared since is skipped
    (run / "bench.log").unlink()
    (run / "bench.log").symlink_to(tmp_path / "outside.txt")
    assert copy_files(runs, tmp_path / "site2", [("files/c/r1/bench.log", "c/r1/bench.log")]) == 0


def test_symlinks_leaving_the_store_are_refused_naming_the_path(tmp_path: Path) -> None:
    from sparkreport.errors import DataError
    from sparkreport.render.runs_index import run_files

    runs, outside = _store_with_links(tmp_path)
    (runs / "c" / "r1" / "environ.log").symlink_to(outside)
    with pytest.raises(DataError, match=r"environ\.log: is a symbolic link to .*outside the run store"):
        run_files(runs, "c/r1", ["environ.log"], "files")
    elsewhere = tmp_path / "elsewhere" / "r2"
    elsewhere.mkdir(parents=True)
    (elsewhere / "run.json").write_text("{}\n", encoding="utf-8")
    (runs / "c" / "r2").symlink_to(elsewhere)
    with pytest.raises(SparkreportError) as caught:
        RunStore(runs).run_files()
    message = caught.value.format_message()
    assert message.startswith(f"{runs / 'c' / 'r2'}: is a symbolic link to {elsewhere}") and "\n" not in message
    (runs / "c" / "r2").unlink()
    (runs / "c" / "r3").symlink_to(runs / "c" / "r1")  # inside the store: read
    assert [p.parent.name for p in RunStore(runs).run_files()] == ["r1", "r3"]


def test_published_run_json_holds_only_allowlisted_variables(tmp_path: Path) -> None:

    from sparkreport.published import published_env
    from sparkreport.site.run_files import copy_files

    env = {"CUDA_VISIBLE_DEVICES": "0", "PATH": "/usr/bin", "ACME_DB": "postgres://u:Pw0rdPw0rd@db/x",
           "HTTPS_PROXY": "http://me:Pr0xyPass@proxy:3128", "NCCL_DEBUG": "INFO", "MY_THING": "private-value-1"}
    details = {"env_vars": env, "env_allowlist": ["MY_*"]}
    assert published_env(details) == {"CUDA_VISIBLE_DEVICES": "0", "MY_THING": "private-value-1",
                                      "NCCL_DEBUG": "INFO", "PATH": "/usr/bin"}
    run = tmp_path / "runs" / "c" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"environment": {"details": {"env_vars": env}}}), encoding="utf-8")
    copy_files(tmp_path / "runs", tmp_path / "site", [("r/run.json", "c/r1/run.json")])
    published = (tmp_path / "site" / "r" / "run.json").read_text(encoding="utf-8")
    assert "Pw0rdPw0rd" not in published and "Pr0xyPass" not in published and "private-value-1" not in published
    assert json.loads(published)["environment"]["details"]["env_vars"] == {
        "CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "INFO", "PATH": "/usr/bin"}
    # A record without the key is copied byte for byte without being parsed; one that spells the
    # key with escapes, or is not UTF-8, is parsed and filtered all the same.
    escaped = json.dumps({"environment": {"details": {"env_vars": env}}}).replace('"env_vars"', '"env\\u005fvars"')
    encodings = {"plain": (json.dumps({"environment": {"details": {"kind": "native"}}}) + "\n", "utf-8"),
                 "escaped": (escaped, "utf-8"),
                 "utf-16": (json.dumps({"environment": {"details": {"env_vars": env}}}), "utf-16")}
    for name, (text, encoding) in encodings.items():
        (run / "run.json").write_bytes(text.encode(encoding))
        copy_files(tmp_path / "runs", tmp_path / name, [("r/run.json", "c/r1/run.json")])
        out = (tmp_path / name / "r" / "run.json").read_bytes()
        if name == "plain":
            assert out == text.encode()
        else:
            assert b"Pw0rdPw0rd" not in out and b"private-value-1" not in out and b"P\x00w\x000\x00r" not in out
            assert json.loads(out)["environment"]["details"]["env_vars"] == {
                "CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "INFO", "PATH": "/usr/bin"}


def test_methodology_describes_environments_without_dumps() -> None:
    from sparkreport.render.describe import environment_descriptions
    from sparkreport.schema import Environment

    class Record:
        def __init__(self, name: str, env_vars: dict[str, str]) -> None:
            self.campaign = "c"
            self.environment = Environment(name=name, kind="native", details={
                "env_vars": env_vars, "commands": [{"argv": ["python", "--token", "x"]}],
                "cgroup": {"path": "/sys/fs/cgroup/x"}, "method": "chroot",
                "flags": "--env DB=postgres://u:Secr3tPw@db/x"})

    described = environment_descriptions([  # type: ignore[arg-type]
        Record("a", {"CUDA_VISIBLE_DEVICES": "0", "PATH": "/bin", "HOME_SECRET_DIR": "/x"}),
        Record("b", {"CUDA_VISIBLE_DEVICES": "1", "PATH": "/bin"})])
    text = repr(described)
    assert "argv" not in text and "/sys/fs/cgroup" not in text and "HOME_SECRET_DIR" not in text
    assert "Secr3tPw" not in text and described[0]["details"]["method"] == ["chroot"]
    assert described[0]["variables"] == {"CUDA_VISIBLE_DEVICES": ["0"]}  # PATH is the same everywhere


def test_the_variables_cell_stays_short() -> None:
    """A chroot given three variables beside native and cgroup environments that inherit a CUDA
    image's (read on an H100 smoke campaign): each cell names at most four variables per side,
    values cut, and counts the rest — never NVIDIA_REQUIRE_CUDA's 1,500 characters."""
    from sparkreport.render.describe import VARIABLE_CHARS, variables_cell

    image = {"CUDA_HOME": ["/usr/local/cuda"], "CUDA_VERSION": ["13.0.2"], "NCCL_VERSION": ["2.28.3-1"],
             "NVIDIA_DRIVER_CAPABILITIES": ["compute,graphics,utility"], "NVIDIA_PRODUCT_NAME": ["CUDA"],
             "NVIDIA_REQUIRE_CUDA": ["cuda>=13.0 " + "brand=tesla,driver>=535,driver<536 " * 40]}
    native = variables_cell(image, ["CUDA_VISIBLE_DEVICES"])
    assert native == ("CUDA_HOME=/usr/local/cuda; CUDA_VERSION=13.0.2; NCCL_VERSION=2.28.3-1; "
                      "NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility … and 2 more; not set: CUDA_VISIBLE_DEVICES")
    chroot = variables_cell({"CUDA_VISIBLE_DEVICES": ["0"]}, sorted(image))
    assert chroot == ("CUDA_VISIBLE_DEVICES=0; not set: CUDA_HOME, CUDA_VERSION, NCCL_VERSION, "
                      "NVIDIA_DRIVER_CAPABILITIES … and 2 more")
    long_value = variables_cell({"NVIDIA_REQUIRE_CUDA": image["NVIDIA_REQUIRE_CUDA"]}, [])
    assert long_value == "NVIDIA_REQUIRE_CUDA=" + image["NVIDIA_REQUIRE_CUDA"][0][:VARIABLE_CHARS - 1] + "…"


def test_formula_cells_are_neutralised_in_csv_downloads() -> None:
    import pandas as pd

    from sparkreport.dataset import csv_safe

    frame = pd.DataFrame({"label": ["=HYPERLINK(\"http://x\")", "+1+2", "-cmd", "@SUM(A1)", "\tx", "\rx", "-3.5",
                                    "plain"],
                          "delta_pct": [-1.5, 2.0, -3.0, 0.0, 1.0, 1.0, -2.0, 3.0]})
    safe = csv_safe(frame)
    assert safe["label"].tolist() == ["'=HYPERLINK(\"http://x\")", "'+1+2", "'-cmd", "'@SUM(A1)", "'\tx", "'\rx",
                                      "-3.5", "plain"]
    assert safe["delta_pct"].tolist() == frame["delta_pct"].tolist()
    assert frame["label"][0].startswith("=")  # the frame itself is left alone


TEXT_CELL = st.one_of(st.text(), st.sampled_from(["=1+1", "+x", "-cmd", "@SUM(A1)", "-3.5", "1e5", "a,b", 'say "hi"',
                                                  "two\nlines", "\r", "", " ", "é ☃"]))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(TEXT_CELL, min_size=3, max_size=3), max_size=12))
def test_a_text_csv_is_the_bytes_pandas_writes_for_the_same_safe_cells(tmp_path_factory: pytest.TempPathFactory,
                                                                      rows: list[list[str]]) -> None:
    """The Data quality page's findings CSV is written without a DataFrame (write_text_csv): the
    same bytes as csv_safe(frame).to_csv, whatever the cells hold (quotes, commas, line breaks,
    formula leads, plain numbers)."""
    import pandas as pd

    from sparkreport.dataset import csv_safe, write_text_csv

    folder = tmp_path_factory.mktemp("csv")
    header = ["severity", "check", "finding"]
    write_text_csv(folder / "direct.csv", header, rows)
    csv_safe(pd.DataFrame(rows, columns=header)).to_csv(folder / "pandas.csv", index=False)  # as the page did
    assert (folder / "direct.csv").read_bytes() == (folder / "pandas.csv").read_bytes()


@pytest.mark.browser
def test_a_model_name_that_closes_the_title_is_inert_on_every_page(tiny: Path) -> None:
    """Headless Chromium over the whole built site: no dialog, no script with the name's body,
    and the name shown literally in the page title and the article; escaped in the search index."""
    from test_browser import CHROMIUM, CHROMIUM_ARGS, PageVisit, free_port, require_browser, serving, site_pages

    require_browser()
    from playwright.sync_api import sync_playwright

    site = tiny / "site"
    assert "<script>alert(2)" not in "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html")
                                           if "runs/files" not in p.as_posix())
    # The search index (rendered by Material's search as HTML) holds the name escaped only.
    entries = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    named = [e for e in entries if "alert(2)" in e["title"] + e["text"]]
    assert named and not any("<script>alert(2)" in e["title"] + e["text"] for e in named)
    pages = site_pages(site)
    with serving(site, free_port()) as url, sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            titled = 0
            for relative in pages:
                visit = PageVisit(chromium, url + relative)
                try:
                    injected = visit.page.evaluate(
                        "Array.from(document.scripts).filter(s => s.textContent.includes('alert(2)')).length")
                    assert injected == 0 and not visit.dialogs, (relative, visit.dialogs)
                    if visit.page.title().startswith(TITLE_MODEL):
                        titled += 1
                        assert TITLE_MODEL in visit.page.locator("article").first.inner_text()
                finally:
                    visit.close()
            assert titled >= 1  # the model's results page carries the name in <title>, as text
        finally:
            chromium.close()


# ---------------------------------------------------------------------------------------------
# End to end: a campaign run from a shell full of credentials, then built into a site

#: Credential-bearing variables of the kinds a CI shell holds; no name says TOKEN/KEY/SECRET/PASSWORD.
SHELL = {
    "DATABASE_URL": ("postgres://app:Db9Pw7Xq2Lm@db.internal:5432/prod", "Db9Pw7Xq2Lm"),
    "HTTPS_PROXY": ("http://alice:Pr0xyPw55Z@proxy.corp:3128", "Pr0xyPw55Z"),
    "CHAT_WEBHOOK": ("https://hooks.slack.com/services/T0AAA/B0BBB/cHaTwEbHoOk1234567890", "cHaTwEbHoOk1234567890"),
    "DOCKER_AUTH_CONFIG": ('{"auths": {"reg.example": {"auth": "dXNlcjpyZWdpc3RyeXB3ZDEy"}}}',
                           "dXNlcjpyZWdpc3RyeXB3ZDEy"),
    "CI_JOB_JWT": ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2ItNDIifQ.c2lnbmF0dXJlcGxhbnRlZDE",
                   "c2lnbmF0dXJlcGxhbnRlZDE"),
    "STORAGE_CONNECTION": ("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=QWNjb3VudEtleVBsYW50ZWQ9",
                           "QWNjb3VudEtleVBsYW50ZWQ9"),
    "PIP_INDEX_URL": ("https://ci:PipIdx9Pw3@pypi.corp/simple", "PipIdx9Pw3"),
    "ACME_PRIVATE": ("plain-private-value-8842", "plain-private-value-8842"),
    "PYTORCH_PROXY": ("http://u:AllowPw8Q@host:1", "AllowPw8Q"),  # allowlisted name, credential value
}
CAMPAIGN = """
campaign: planted
seed: 3
iterations: 1
timeout_s: 60
models:
  - {name: small, id: fake/small, params: {throughput_tok_s: 120}}
  - {name: large, id: fake/large, params: {throughput_tok_s: 20}}
environments:
  - {name: native, kind: native}
workload: {kind: fake, sleep_s: 0, noise: 0.01, print_env: [%s]}
cooldown: {min_s: 0}
monitoring: {interval_s: 0.05}
preflight: {enabled: false}
"""


def _all_text(folder: Path) -> str:
    chunks = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            chunks.append((gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace"))
    return "\n".join(chunks)


def test_no_planted_credential_reaches_runs_build_or_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from sparkreport.cli import main

    for name, (value, _secret) in SHELL.items():
        monkeypatch.setenv(name, value)
    campaign = tmp_path / "planted.yaml"
    campaign.write_text(CAMPAIGN % ", ".join(SHELL), encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("site_name: planted\n", encoding="utf-8")
    ran = CliRunner().invoke(main, ["run", str(campaign), "--runs-dir", str(tmp_path / "runs"), "-q"])
    assert ran.exit_code == 0, ran.output
    build(_options(tmp_path), tmp_path / "site")  # the scan passes: nothing credential-shaped is left
    assert (tmp_path / "site" / "methodology" / "index.html").is_file()
    for folder in ("runs", "build", "site"):
        text = _all_text(tmp_path / folder)
        leaked = [name for name, (_value, secret) in SHELL.items() if secret in text]
        assert not leaked, f"{folder}/ holds the values of {leaked}"


# ---------------------------------------------------------------------------------------------
# Publishing costs what changed: unchanged run files are hard-linked, clean files not re-scanned


def _bytes(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}


def test_a_cold_builds_record_takes_the_build_keys_digests(tmp_path: Path) -> None:
    """A cold build's publisher starts before the build key hashes the store: it records each
    file by mtime and inode, and the build's digests replace those for the files they describe —
    a file changed since (another mtime) keeps its stat, which no later record equals."""
    from sparkreport.cache import HashMemo
    from sparkreport.site.run_files import complete_record, publish_files

    runs = tmp_path / "runs"
    (runs / "c" / "r").mkdir(parents=True)
    for name in ("run.json", "a.log", "b.log"):
        (runs / "c" / "r" / name).write_text("{}" if name == "run.json" else name, encoding="utf-8")
    listed = [(f"runs/files/c/r/{name}", f"c/r/{name}") for name in ("run.json", "a.log", "b.log")]
    memo = HashMemo(None)
    published = publish_files(runs, tmp_path / "site", listed, memo=memo)
    assert all(value[1].startswith("stat:") for value in published.record.values()) and not memo.entries
    for name in ("run.json", "a.log"):
        memo.digest(str(runs / "c" / "r" / name))
    before = os.stat(runs / "c" / "r" / "a.log")
    os.utime(runs / "c" / "r" / "a.log", ns=(before.st_atime_ns, before.st_mtime_ns + 1))  # changed after publishing
    memo.digest(str(runs / "c" / "r" / "a.log"))
    record = complete_record(published.record, listed, runs, memo)
    assert record["runs/files/c/r/run.json"] == [2, memo.known(str(runs / "c" / "r" / "run.json"),
                                                               os.stat(runs / "c" / "r" / "run.json"))]
    assert record["runs/files/c/r/a.log"] == published.record["runs/files/c/r/a.log"]  # not the content published
    assert record["runs/files/c/r/b.log"] == published.record["runs/files/c/r/b.log"]  # never hashed


def test_a_store_folder_unchanged_since_publishing_is_not_stat_ed_file_by_file(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With the walk's stat digest of each store folder kept beside the record, a rebuild takes
    the entries of a folder whose digest is unchanged from the record: only the changed folder's
    files are stat-ed, and the record, the files written and the site are what publishing
    without the digests gives. An entry that names a stat (never hashed) and a file the live
    site lost are still looked at."""
    from sparkreport.cache import HashMemo
    from sparkreport.site import run_files

    runs = tmp_path / "runs"
    listed = []
    for folder in ("c1", "c2"):
        for name in ("run.json", "a.log"):
            (runs / folder / "r").mkdir(parents=True, exist_ok=True)
            (runs / folder / "r" / name).write_text(f"{folder} {name}", encoding="utf-8")
            listed.append((f"runs/files/{folder}/r/{name}", f"{folder}/r/{name}"))
    memo = HashMemo(None)
    for _target, source in listed:
        memo.digest(str(runs / source))
    live = tmp_path / "live"
    first = run_files.publish_files(runs, live, listed, memo=memo, folders={"c1": "one", "c2": "two"})
    assert first.folders == {"c1": "one", "c2": "two"} and first.copied == 4
    (runs / "c2" / "r" / "a.log").write_text("c2 a.log, changed", encoding="utf-8")
    memo.digest(str(runs / "c2" / "r" / "a.log"))
    stat_ed: list[str] = []

    def counted(root: str, relative: str, folders: Any = None) -> Any:
        stat_ed.append(relative)
        return store_stat(root, relative, folders)

    store_stat = run_files.store_stat
    monkeypatch.setattr(run_files, "store_stat", counted)

    def again(name: str, folders: dict[str, str | None] | None) -> run_files.Published:
        stat_ed.clear()
        return run_files.publish_files(runs, tmp_path / name, listed, previous=live, record=first.record, memo=memo,
                                       folders=folders, recorded_folders=first.folders)

    plain = again("plain", None)
    assert len(stat_ed) == 4
    kept = again("kept", {"c1": "one", "c2": "two, changed"})
    assert sorted(stat_ed) == ["c2/r/a.log", "c2/r/run.json"]
    assert kept.record == plain.record and kept.folders == {"c1": "one", "c2": "two, changed"}
    assert (kept.copied, kept.linked, kept.kept) == (plain.copied, plain.linked, plain.kept) == (1, 0, 3)
    assert kept.carry is not None and plain.carry is not None and kept.carry.to_json() == plain.carry.to_json()
    # a file the live site lost (nothing carried over then): the unchanged ones linked, that one copied
    (live / "runs" / "files" / "c1" / "r" / "a.log").unlink()
    lost = again("lost", {"c1": "one", "c2": "two, changed"})
    assert (lost.copied, lost.linked, lost.carry) == (2, 2, None)
    assert (tmp_path / "lost" / "runs" / "files" / "c1" / "r" / "a.log").read_text(encoding="utf-8") == "c1 a.log"
    assert sorted(stat_ed) == ["c1/r/a.log", "c2/r/a.log", "c2/r/run.json"]
    # an entry that names a stat, not a sha256: stat-ed (and hashed) as before
    (live / "runs" / "files" / "c1" / "r" / "a.log").write_text("c1 a.log", encoding="utf-8")
    record = dict(first.record, **{"runs/files/c1/r/run.json": [8, "stat:1:2"]})
    stat_ed.clear()
    run_files.publish_files(runs, tmp_path / "stat", listed, previous=live, record=record, memo=memo,
                            folders={"c1": "one", "c2": "two, changed"}, recorded_folders=first.folders)
    assert sorted(stat_ed) == ["c1/r/run.json", "c2/r/a.log", "c2/r/run.json"]
    # a hidden file, which the walk's digest leaves out: stat-ed, and published again once changed
    (runs / "c1" / "r" / ".hidden.log").write_text("before", encoding="utf-8")
    hidden = [*listed, ("runs/files/c1/r/.hidden.log", "c1/r/.hidden.log")]
    memo.digest(str(runs / "c1" / "r" / ".hidden.log"))
    base = run_files.publish_files(runs, tmp_path / "hidden-1", hidden, memo=memo, folders={"c1": "one"})
    (runs / "c1" / "r" / ".hidden.log").write_text("after!", encoding="utf-8")
    memo.digest(str(runs / "c1" / "r" / ".hidden.log"))
    stat_ed.clear()
    changed = run_files.publish_files(runs, tmp_path / "hidden-2", hidden, previous=tmp_path / "hidden-1",
                                      record=base.record, memo=memo, folders={"c1": "one"},
                                      recorded_folders=base.folders)
    assert "c1/r/.hidden.log" in stat_ed and "c1/r/a.log" not in stat_ed
    assert changed.copied >= 1
    assert (tmp_path / "hidden-2" / "runs" / "files" / "c1" / "r" / ".hidden.log").read_text(encoding="utf-8") == "after!"


def test_the_record_keeps_the_store_folders_it_was_published_from(tmp_path: Path) -> None:
    from sparkreport.site.run_files import load_record, load_record_and_folders, save_record

    save_record(tmp_path, tmp_path / "runs", tmp_path / "site", {"runs/files/c/r/run.json": [2, "ab"]}, {"c": "d"})
    assert load_record_and_folders(tmp_path, tmp_path / "runs", tmp_path / "site") == (
        {"runs/files/c/r/run.json": [2, "ab"]}, {"c": "d"})
    assert load_record(tmp_path, tmp_path / "runs", tmp_path / "site") == {"runs/files/c/r/run.json": [2, "ab"]}
    assert load_record_and_folders(tmp_path, tmp_path / "runs", tmp_path / "other") == ({}, {})


def test_the_record_pickled_ahead_reads_back_with_the_folders_written_after_it(tmp_path: Path) -> None:
    """A build pickles the record's head (files, store folders) while the builder builds and the
    run-files folder's folders after the swap: the file reads back as one record; a file cut
    short, or written for another site, is no record."""
    from sparkreport.site.run_files import RECORD_FILE, load_published_record, record_head, save_record

    runs, site = tmp_path / "runs", tmp_path / "site"
    files = {"runs/files/c/r/run.json": [2, "ab"]}
    dirs = {"runs/files": None, "runs/files/c": (1, 2, 3)}
    save_record(tmp_path, runs, site, files, {"c": "d"}, dirs, head=record_head(runs, site, files, {"c": "d"}))
    assert load_published_record(tmp_path, runs, site) == (files, {"c": "d"}, dirs)
    whole = (tmp_path / RECORD_FILE).read_bytes()
    save_record(tmp_path, runs, site, files, {"c": "d"}, dirs)  # the head made here: the same bytes
    assert (tmp_path / RECORD_FILE).read_bytes() == whole
    assert load_published_record(tmp_path, runs, tmp_path / "other") == ({}, {}, {})
    (tmp_path / RECORD_FILE).write_bytes(whole[:-5])
    assert load_published_record(tmp_path, runs, site) == ({}, {}, {})


def test_the_scan_memo_keeps_carried_files_as_the_record_held_them(tmp_path: Path) -> None:
    """Run files carried over unscanned keep their entries (the file's, or the one another scan
    gave this build); files neither scanned nor carried are dropped."""
    from sparkreport.site.scan import ScanMemo

    path = tmp_path / "scanned.pickle"
    first = ScanMemo(path)
    first.fresh = {"index.html": [1, 1, 1, "x"], "runs/files/a": [2, 2, 2, "y"], "runs/files/b": [3, 3, 3, "z"],
                   "runs/files/gone": [4, 4, 4, "w"]}
    first.save()
    second = ScanMemo(path)
    second.fresh = {"index.html": [5, 1, 1, "x"]}
    second.adopt({"runs/files/b": [6, 3, 3, "z"], "runs/files/new": [7, 1, 1, "v"]})
    second.keep(["runs/files/a", "runs/files/b", "runs/files/unknown"])
    second.save()
    assert ScanMemo(path).files == {"index.html": [5, 1, 1, "x"], "runs/files/a": [2, 2, 2, "y"],
                                    "runs/files/b": [6, 3, 3, "z"]}


def test_the_store_folders_stay_recorded_through_builds(tiny: Path, tmp_path: Path) -> None:
    """A build records each store folder's stat digest with its published files; a build that
    keeps the data (only a hand-written page changed) keeps them too, and a changed run file
    records its folder's new digest."""
    from sparkreport.published import read_manifest
    from sparkreport.site.run_files import load_record_and_folders

    root = _copy(tiny, tmp_path)
    build(_options(root), root / "site")

    def recorded() -> tuple[dict[str, Any], dict[str, str]]:
        manifest = read_manifest(root / "build" / "docs")
        assert manifest is not None
        return load_record_and_folders(root / "build" / "cache", manifest[0], root / "site")

    record, folders = recorded()
    assert record and list(folders) == ["tiny"]
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "notes.md").write_text("# Notes\n\nBy hand.\n", encoding="utf-8")
    kept = build(_options(root), root / "site")
    assert kept.render.data_kept and recorded() == (record, folders)
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    log.write_text(log.read_text(encoding="utf-8") + "one more line\n", encoding="utf-8")
    build(_options(root), root / "site")
    changed_record, changed_folders = recorded()
    assert changed_folders.keys() == folders.keys() and changed_folders["tiny"] != folders["tiny"]
    assert changed_record != record


@pytest.mark.parametrize("builder", ["mkdocs", "zensical"])
def test_a_rebuild_publishes_only_the_changed_run_files(tiny: Path, tmp_path: Path, builder: str) -> None:
    root = _copy(tiny, tmp_path)
    first = build(_options(root), root / "site", builder=builder)
    total = first.published["copied"]
    assert total >= 4 and first.published["linked"] == 0
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    log.write_text(log.read_text(encoding="utf-8") + "one more line\n", encoding="utf-8")
    scan_memo = root / "build" / "cache" / "scanned.pickle"
    whole = scan_memo.read_bytes()
    again = build(_options(root), root / "site", builder=builder)
    # the live run-files folder is carried over whole: one file written, none linked one by one
    assert (again.published["copied"], again.published["kept"], again.published["linked"]) == (1, total - 1, 0)
    assert again.published["scanned"] < first.published["scanned"]  # kept files were scanned clean before
    # what the scan learnt is appended to the memo's journal (the changed files), not written whole
    journal = scan_memo.with_name("scanned.pickle.log").read_text(encoding="utf-8").splitlines()
    assert scan_memo.read_bytes() == whole and 0 < len(journal) < first.published["scanned"]
    published = next((root / "site" / "runs").rglob("engine_backend_trt.log"))
    assert published.read_text(encoding="utf-8").endswith("one more line\n")
    incremental = _bytes(root / "site")
    shutil.rmtree(root / "build")
    shutil.rmtree(root / "site")
    cold = build(_options(root), root / "site", builder=builder)
    assert cold.published["linked"] == 0
    assert _bytes(root / "site") == incremental  # byte for byte what a cold build publishes


def test_a_run_files_folder_changed_by_hand_is_not_carried_over(tiny: Path, tmp_path: Path) -> None:
    """A file added to the live site's run files (or one missing there) is not what a build
    published and scanned: the rebuild links the unchanged files one by one instead, and the
    stray file is gone from the new site."""
    root = _copy(tiny, tmp_path)
    first = build(_options(root), root / "site")
    total = first.published["copied"]
    stray = root / "site" / "runs" / "files" / "tiny" / "added-by-hand.txt"
    stray.write_text(f"token {PLANTED['token-prefix']}\n", encoding="utf-8")
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    log.write_text(log.read_text(encoding="utf-8") + "one more line\n", encoding="utf-8")
    again = build(_options(root), root / "site")
    assert (again.published["copied"], again.published["kept"], again.published["linked"]) == (1, 0, total - 1)
    assert not stray.exists()
    next((root / "site" / "runs" / "files").rglob("run.json")).unlink()
    log.write_text(log.read_text(encoding="utf-8") + "and another\n", encoding="utf-8")
    third = build(_options(root), root / "site")  # one file missing: linked where present, copied where not
    assert (third.published["copied"], third.published["kept"], third.published["linked"]) == (2, 0, total - 2)


def _recorded_dirs(root: Path) -> dict[str, Any]:
    from sparkreport.published import read_manifest
    from sparkreport.site.run_files import load_published_record

    manifest = read_manifest(root / "build" / "docs")
    assert manifest is not None
    return load_published_record(root / "build" / "cache", manifest[0], root / "site")[2]


def _count_listings(monkeypatch: pytest.MonkeyPatch, log: Path) -> Callable[[], list[str]]:
    """The folders of the run files the publisher lists from now on (it runs in a forked
    process: each listing is appended to ``log``), as a call that reads them and starts again."""
    from sparkreport.site import run_files

    listing = run_files._listing

    def counting(path: str) -> dict[str, bool] | None:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(path + "\n")
        return listing(path)

    def listed() -> list[str]:
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return lines

    monkeypatch.setattr(run_files, "_listing", counting)
    return listed


def test_the_carried_folder_is_checked_by_its_folders_stats(tiny: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The record keeps every folder of the published run files with its inode, mtime and ctime
    (none while they are within RACY_NS of being taken: here 0, and the builds wait past the
    file system's clock tick); a rebuild lists only the folders that changed since (the root, and
    the folders the last swap moved files into), carries the folder over, and publishes what a
    cold build publishes."""
    from sparkreport import cache

    monkeypatch.setattr(cache, "RACY_NS", 0)
    root = _copy(tiny, tmp_path)
    first = build(_options(root), root / "site")
    dirs = _recorded_dirs(root)
    folders = {str(p.relative_to(root / "site")) for p in (root / "site" / "runs" / "files").rglob("*") if p.is_dir()}
    assert set(dirs) == folders | {"runs/files"} and dirs["runs/files"] is None
    assert all(dirs[f] is not None for f in folders)
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    listed = _count_listings(monkeypatch, tmp_path / "listed.txt")
    time.sleep(0.05)
    log.write_text(log.read_text(encoding="utf-8") + "one more line\n", encoding="utf-8")
    again = build(_options(root), root / "site")
    assert (again.published["copied"], again.published["kept"]) == (1, first.published["copied"] - 1)
    assert [Path(p).relative_to(root / "site").as_posix() for p in listed()] == ["runs/files"]
    after = _recorded_dirs(root)
    moved_into = posixpath.dirname(next(p for p in after if p.endswith(log.parent.name)))  # (its campaign's)
    assert after["runs/files"] is None and after[f"{moved_into}/{log.parent.name}"] is None
    assert after[moved_into] is None and sum(v is None for v in after.values()) == 3
    time.sleep(0.05)
    log.write_text(log.read_text(encoding="utf-8") + "and another\n", encoding="utf-8")
    third = build(_options(root), root / "site")
    assert third.published["kept"] == first.published["copied"] - 1 and len(listed()) == 3
    carried = _bytes(root / "site")
    shutil.rmtree(root / "build")
    shutil.rmtree(root / "site")
    build(_options(root), root / "site")
    assert _bytes(root / "site") == carried


@pytest.mark.parametrize("change", ["file added", "folder added", "file removed", "file made a link",
                                    "folder made a link", "file renamed"])
def test_a_change_by_hand_deep_in_the_carried_folder_is_found_by_its_folder(
        tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """Whatever is added, removed or replaced by hand in a folder of the live run files changes
    that folder's mtime and ctime: the rebuild lists it, finds it is not what was published, and
    links the unchanged files one by one instead of carrying the folder over; the new site holds
    only what the build published."""
    from sparkreport import cache
    from sparkreport.site import run_files

    monkeypatch.setattr(cache, "RACY_NS", 0)
    root = _copy(tiny, tmp_path)
    first = build(_options(root), root / "site")
    total = first.published["copied"]
    run = next(p.parent for p in (root / "site" / "runs" / "files").rglob("run.json"))
    time.sleep(0.05)
    victim = next(p for p in run.iterdir() if p.name != "run.json")
    if change == "file added":
        (run / "added-by-hand.txt").write_text("by hand\n", encoding="utf-8")
    elif change == "folder added":
        (run / "by-hand").mkdir()
    elif change == "file removed":
        victim.unlink()
    elif change == "file made a link":
        victim.unlink()
        victim.symlink_to(root / "sparkreport.yml")
    elif change == "folder made a link":
        shutil.rmtree(run)
        run.symlink_to(root / "runs", target_is_directory=True)
    else:
        victim.rename(run / f"{victim.name}.renamed")
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    log.write_text(log.read_text(encoding="utf-8") + "one more line\n", encoding="utf-8")
    again = build(_options(root), root / "site")
    assert again.published["kept"] == 0 and again.published["copied"] + again.published["linked"] == total
    published = {p.relative_to(root / "site").as_posix() for p in (root / "site" / "runs" / "files").rglob("*")
                 if p.is_file() or p.is_symlink()}
    assert published == set(run_files.load_record(root / "build" / "cache", root / "runs", root / "site"))
    assert _recorded_dirs(root)  # recorded again, for the next build
    assert not any(p.is_symlink() for p in (root / "site" / "runs" / "files").rglob("*"))


def test_a_packed_scan_is_the_scan(tmp_path: Path) -> None:
    """What the build's walk hands over (:class:`~sparkreport.store.PackedScan`) makes the scan
    it was made from again: paths, folders, incomplete runs, and each stat's mode, inode, size
    and mtime."""
    import pickle

    from sparkreport.store import PackedScan, RunStore

    runs = tmp_path / "runs"
    for campaign, run in [("c1", "r1"), ("c1", "r2"), ("c 2", "r-ü")]:
        (runs / campaign / run).mkdir(parents=True)
        (runs / campaign / run / "run.json").write_text("{}", encoding="utf-8")
    (runs / "c1" / "half-written").mkdir()
    scan = RunStore(runs).scan()
    again = pickle.loads(pickle.dumps(PackedScan.of(scan))).unpacked()
    assert [path for path, _stat in again.files] == [path for path, _stat in scan.files]
    assert (again.folders, again.incomplete) == (scan.folders, scan.incomplete) == (
        [("c 2", "r-ü"), ("c1", "r1"), ("c1", "r2")], ["c1/half-written"])
    assert [(s.st_mode, s.st_ino, s.st_size, s.st_mtime_ns) for _path, s in again.files] \
        == [(s.st_mode, s.st_ino, s.st_size, s.st_mtime_ns) for _path, s in scan.files]
    empty = RunStore(tmp_path / "none").scan()
    assert PackedScan.of(empty).unpacked() == empty


@pytest.mark.parametrize("layout", ["runs", "incomplete", "hidden and odd", "pycache", "linked", "folder run.json",
                                    "empty", "missing"])
def test_the_walks_scan_is_the_stores_scan(tmp_path: Path, layout: str) -> None:
    """What the build key's walk lists gives the store's scan — the same run.json paths (as the
    store names them), stats, run folders and incomplete runs — or, where the walk cannot tell
    (a link, a ``__pycache__``, a run.json that is a folder), None."""
    from sparkreport.cache import walk_store
    from sparkreport.store import RunStore

    runs = tmp_path / "runs"

    def run(campaign: str, name: str, *files: str) -> None:
        folder = runs / campaign / name
        folder.mkdir(parents=True, exist_ok=True)
        for file in files:
            (folder / file).write_text("{}", encoding="utf-8")

    if layout != "missing":
        runs.mkdir()
    if layout not in ("empty", "missing"):
        run("c1", "r2", "run.json", "engine.log")
        run("c1", "r1", "run.json")
        run("c 2", "r-ü", "run.json")
    if layout == "incomplete":
        run("c1", "half", "engine.log")
        (runs / "c1" / "empty").mkdir()
        run("c1", "_sources", "engine.log")
    if layout == "hidden and odd":
        run(".staging", "r9", "run.json")
        run("c1", ".r8", "run.json")
        (runs / "notes.txt").write_text("x", encoding="utf-8")
        (runs / "c1" / "notes.txt").write_text("x", encoding="utf-8")
        run("c1", "r1", "extra")
        (runs / "c1" / "r1" / "deep").mkdir()
        (runs / "c1" / "r1" / "deep" / "run.json").write_text("{}", encoding="utf-8")
    if layout == "pycache":
        run("c1", "__pycache__", "run.json")
    if layout == "linked":
        (runs / "c1" / "r3").mkdir()
        (runs / "c1" / "r3" / "run.json").symlink_to(runs / "c1" / "r1" / "run.json")
    if layout == "folder run.json":
        (runs / "c1" / "r4" / "run.json").mkdir(parents=True)
    walked = walk_store(runs).scan(runs)
    if layout in ("pycache", "linked", "folder run.json"):
        assert walked is None
        return
    assert walked is not None
    scan = RunStore(runs).scan()
    assert [path for path, _stat in walked.files] == [path for path, _stat in scan.files]
    assert (walked.folders, walked.incomplete) == (scan.folders, scan.incomplete)
    assert [(s.st_ino, s.st_size, s.st_mtime_ns) for _path, s in walked.files] \
        == [(s.st_ino, s.st_size, s.st_mtime_ns) for _path, s in scan.files]
    if layout == "incomplete":
        assert scan.incomplete == ["c1/empty", "c1/half"]


def test_a_build_after_a_new_run_lists_the_store_once(
        tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's scan (every run.json and its stat) is taken from the listing the build key's
    walk made, in its process: the dataset and the publisher list the store no more (no
    ``RunStore.scan`` in any process of the build). The site is what a build that scans for
    itself makes."""
    from sparkreport import store

    root = _copy(tiny, tmp_path)
    build(_options(root), root / "site")
    log = tmp_path / "scans.txt"
    scan = store.RunStore.scan

    def logged(self: store.RunStore) -> store.StoreScan:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        return scan(self)

    monkeypatch.setattr(store.RunStore, "scan", logged)
    run_json = next((root / "runs" / "tiny").glob("*/run.json"))
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["metrics"]["output_throughput_tok_s"] *= 1.01
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    build(_options(root), root / "site")
    assert not log.exists()
    built = _bytes(root / "site")
    monkeypatch.setattr(store.RunStore, "scan", scan)
    shutil.rmtree(root / "build")
    shutil.rmtree(root / "site")
    build(_options(root), root / "site")
    assert _bytes(root / "site") == built


@settings(max_examples=200, deadline=None)
@given(names=st.lists(st.lists(st.sampled_from(["a", "b", "c", "run.json", ""]), min_size=1, max_size=3),
                      min_size=1, max_size=12),
       pick=st.lists(st.integers(min_value=0, max_value=20), max_size=4))
def test_what_a_folder_listed_again_must_hold_is_what_every_folders_listing_says(names: list[list[str]],
                                                                                 pick: list[int]) -> None:
    """The children of the few folders a build lists again (a pass over the record per folder)
    are those of the one pass over every folder; a folder no name passes through holds nothing."""
    from sparkreport.site.run_files import _children, _expected

    record = ["runs/files/" + "/".join(parts) for parts in names]
    every = _expected("runs/files", record)
    if every is None:
        return  # (a name both a file and a folder, or an empty part, somewhere: listed whole)
    folders = sorted(every)
    wanted = sorted({folders[i % len(folders)] for i in pick} | {"runs/files/none"})
    assert _children(record, wanted) == {folder: every.get(folder, {}) for folder in wanted}


def test_checked_folders_refuses_a_record_that_does_not_describe_the_folder(tmp_path: Path) -> None:
    """Folders recorded for another root, a folder missing from the record's folders, a recorded
    folder now a file: not checked (the build lists every folder instead, or links file by file)."""
    from sparkreport.site.run_files import checked_folders, folder_stats

    live = tmp_path / "site"
    (live / "runs" / "files" / "c" / "r").mkdir(parents=True)
    (live / "runs" / "files" / "c" / "r" / "run.json").write_text("{}", encoding="utf-8")
    record = ["runs/files/c/r/run.json"]
    dirs = folder_stats(live, "runs/files", record)
    assert dirs is not None and set(dirs) == {"runs/files", "runs/files/c", "runs/files/c/r"}
    assert checked_folders(live, "runs/files", record, dirs) is not None
    assert checked_folders(live, "runs/files", record, {**dirs, "elsewhere": None}) is None
    assert checked_folders(live, "runs/files", record, {k: v for k, v in dirs.items() if k != "runs/files/c/r"}) is None
    assert folder_stats(live, "runs/files", [*record, "runs/files/c/r/missing.log"]) is None
    assert folder_stats(live, "runs/files", ["runs/files/c/r"]) is None  # a folder where a file is listed
    (live / "runs" / "files" / "c" / "empty").mkdir()
    assert folder_stats(live, "runs/files", record) is None  # an empty folder the record does not need
    (live / "runs" / "files" / "c" / "empty").rmdir()
    (live / "runs" / "files" / "c" / "gone").mkdir()  # a folder recorded that the record no longer needs
    assert checked_folders(live, "runs/files", record, {**dirs, "runs/files/c/gone": None}) is None
    (live / "runs" / "files" / "c" / "gone").rmdir()
    (live / "runs" / "files" / "c" / "r" / "run.json").unlink()  # emptied by hand: listed, refused
    assert checked_folders(live, "runs/files", record, {**dirs, "runs/files/c/r": None}) is None
    assert checked_folders(live, "runs/files", [], {**dirs, "runs/files/c/r": None}) is None


def test_a_removed_run_leaves_nothing_behind_in_the_carried_folder(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    build(_options(root), root / "site")
    gone = next(p.parent for p in (root / "runs" / "tiny").glob("*/memory_only_old_cpp.log"))
    shutil.rmtree(gone)
    again = build(_options(root), root / "site")
    assert again.published["kept"] >= 2 and again.published["copied"] == 0
    assert not (root / "site" / "runs" / "files" / "tiny" / gone.name).exists()
    carried = _bytes(root / "site")
    shutil.rmtree(root / "build")
    shutil.rmtree(root / "site")
    build(_options(root), root / "site")
    assert _bytes(root / "site") == carried
    assert {p for p in (root / "site").rglob("*") if p.is_dir() and not any(p.iterdir())} == set()


def test_a_crash_while_carrying_the_run_files_over_is_rolled_forward(tiny: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the live run-files folder moved into the new site (here: the swap's first
    rename fails): the next build finishes the swap from the journal, and the site is what a
    cold build makes."""
    root = _copy(tiny, tmp_path)
    site = root / "site"
    build(_options(root), site)
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    log.write_text(log.read_text(encoding="utf-8") + "one more line\n", encoding="utf-8")
    rename = os.rename

    def crash(source: object, destination: object) -> None:
        if Path(str(destination)) == publish.old_dir(site):
            raise OSError("simulated crash between the carry and the swap")
        rename(source, destination)  # type: ignore[arg-type]

    monkeypatch.setattr(publish.os, "rename", crash)
    with pytest.raises(BuildError, match="^the site folder: simulated crash between the carry and the swap — "
                                         "check free space"):  # one line, as every file-system failure of a build
        build(_options(root), site)
    monkeypatch.setattr(publish.os, "rename", rename)
    staging = publish.staging_dir(site)
    assert (staging / publish.CARRY_JOURNAL).is_file() and not (site / "runs" / "files").exists()
    publish.recover(site)
    assert not staging.exists() and not publish.old_dir(site).exists()
    assert not (site / publish.CARRY_JOURNAL).exists()
    assert next((site / "runs" / "files").rglob("engine_backend_trt.log")).read_text(
        encoding="utf-8").endswith("one more line\n")
    recovered = _bytes(site)
    shutil.rmtree(root / "build")
    shutil.rmtree(site)
    build(_options(root), site)
    assert _bytes(site) == recovered


def test_the_scan_still_catches_a_credential_in_a_changed_file(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    build(_options(root), root / "site")
    build(_options(root), root / "site", strict=False)  # a second build: everything scanned clean is known
    before = _bytes(root / "site")
    log = next((root / "runs" / "tiny").glob("*/memory_only_old_cpp.log"))
    log.write_text(log.read_text(encoding="utf-8") + f"token {PLANTED['token-prefix']}\n", encoding="utf-8")
    with pytest.raises(PublishScanError, match="memory_only_old_cpp.log"):
        build(_options(root), root / "site")
    assert _bytes(root / "site") == before  # the live site (its hard-linked files too) untouched
    log.write_text(log.read_text(encoding="utf-8").replace(PLANTED["token-prefix"], "removed"), encoding="utf-8")
    fixed = build(_options(root), root / "site")
    assert fixed.published["copied"] == 1


def test_the_downloads_scan_vouches_only_for_the_text_files_it_found_clean(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The Downloads page's files are scanned by the process that writes them: the digests it
    hands on are those of its clean text files — not a file with a credential shape, not a binary
    format the scan never reads."""
    from sparkreport.render import builtin
    from sparkreport.store import sha256_file

    def written(_dataset: object, folder: Path, _chunks: object) -> list[dict[str, Any]]:
        folder.mkdir(parents=True)
        texts = {"dataset.csv": "run_id,model\nr1,llama\n", "dataset.json": json.dumps({"note": PLANTED["jwt"]}),
                 "dataset.parquet": "PAR1" + PLANTED["jwt"]}
        for name, text in texts.items():
            (folder / name).write_text(text, encoding="utf-8")
        return [{"name": name, "sha256": sha256_file(folder / name)} for name in texts]

    from sparkreport.render.core import Vouch
    from sparkreport.site.scan import clean_pieces, vouch

    monkeypatch.setattr(builtin, "write_downloads", written)
    files, clean = builtin.scanned_downloads(cast(Any, None), tmp_path / "downloads", None, Vouch(vouch, clean_pieces))
    assert [f["name"] for f in files] == ["dataset.csv", "dataset.json", "dataset.parquet"]
    written = os.stat(tmp_path / "downloads" / "dataset.csv")  # (its stamp: publishing knows it by that)
    assert clean == {"dataset.csv": [written.st_ino, written.st_size, written.st_mtime_ns, files[0]["sha256"]]}
    assert builtin.scanned_downloads(cast(Any, None), tmp_path / "again", None)[1] == {}  # no scan: none vouched for


def test_publishing_reads_no_downloads_file_the_render_scanned(tiny: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """After a new run, the Downloads page's files (tens of MB at 10 000 runs) were scanned where
    they were written and are linked into the site as they are: publishing knows them by their
    inode, size and mtime and neither reads nor hashes them again."""
    from sparkreport.site import scan

    root = _copy(tiny, tmp_path)
    build(_options(root), root / "site")
    run_json = next((root / "runs" / "tiny").glob("*/run.json"))
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["model"]["display_name"] = "llama, again"
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    hashed: list[str] = []
    digest = scan.hashlib.file_digest

    def spy(handle: Any, name: str) -> Any:
        hashed.append(handle.name)
        return digest(handle, name)

    monkeypatch.setattr(scan.hashlib, "file_digest", spy)
    umask = os.umask(0o022)
    try:
        build(_options(root), root / "site")
    finally:
        os.umask(umask)
    assert "llama, again" in (root / "site" / "downloads" / "dataset.csv").read_text(encoding="utf-8")
    assert hashed and not [path for path in hashed if "/downloads/dataset." in path]
    # every published file readable by all (a web server runs as another user): the downloads too
    assert not [path for path in (root / "site").rglob("*") if path.is_file() and not path.stat().st_mode & 0o004]


def test_a_credential_in_the_downloads_still_fails_the_build(tiny: Path, tmp_path: Path) -> None:
    """The downloads, scanned where they are written, still stop a build when a value in the
    dataset has a credential's shape (a second build: every file of the first is known clean)."""
    root = _copy(tiny, tmp_path)
    build(_options(root), root / "site")
    before = _bytes(root / "site")
    run_json = next((root / "runs" / "tiny").glob("*/run.json"))
    data = json.loads(run_json.read_text(encoding="utf-8"))
    data["model"]["display_name"] = f"llama {PLANTED['token-prefix']}"
    run_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(PublishScanError) as caught:
        build(_options(root), root / "site")
    assert {"downloads/dataset.csv", "downloads/dataset.json"} <= {f.path for f in caught.value.findings}
    assert _bytes(root / "site") == before


# ---------------------------------------------------------------------------------------------
# The run files are published from the store alone, beside the render and the builder


def test_the_store_alone_lists_what_the_runs_pages_publish(tiny: Path, tmp_path: Path) -> None:
    """What a build starts publishing before the dataset is loaded (the run store read on its
    own) is what the Runs pages then list: run.json, raw files under inert names, tables, no
    file reached through a symbolic link."""
    from sparkreport.published import read_manifest
    from sparkreport.render.runs_index import RunsPage

    root = _copy(tiny, tmp_path)
    run = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log")).parent
    data = json.loads((run / "run.json").read_text(encoding="utf-8"))
    (run / "notes.html").write_text("<p>notes</p>\n", encoding="utf-8")
    (run / "inner.log").symlink_to(run / "engine_backend_trt.log")
    (run / "samples.csv").write_text("elapsed_s,power_draw_w\n" + "0.1,50\n" * 60000, encoding="utf-8")
    data["provenance"]["raw_files"] += ["notes.html", "inner.log", "missing.log"]
    data["provenance"]["tables"] = ["samples"]
    (run / "run.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    build(_options(root), root / "site")
    manifest = read_manifest(root / "build" / "docs")
    assert manifest is not None
    listed = RunsPage.store_files(root / "runs")
    assert listed == manifest[1]
    names = {posixpath.basename(site_path) for site_path, _store in listed}
    assert {"run.json", "notes.html.txt", "samples.csv.gz"} <= names and "inner.log" not in names


def test_a_store_that_changed_under_the_build_publishes_what_the_pages_list(
        tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The early list and the manifest disagree (a run ingested between the two reads, say):
    the files the pages link are published, not the early ones."""
    from sparkreport.render.runs_index import RunsPage

    root = _copy(tiny, tmp_path)
    expected = RunsPage.store_files(root / "runs")
    monkeypatch.setattr(RunsPage, "store_files", classmethod(lambda cls, runs_dir, *rest: expected[1:]))
    result = build(_options(root), root / "site")
    assert {site_path for site_path, _store in expected} <= _files(root / "site")
    assert result.published["copied"] == len(expected)
    assert not publish.side_dir(root / "site").exists()


def test_the_early_list_reads_an_old_record_through_the_store(tmp_path: Path) -> None:
    """A run.json of an older schema is migrated before its files are listed (as the dataset
    reads it); a current one is read as JSON alone, to the same lists."""
    from sparkreport.render.runs_index import _listed_files

    store = RunStore(tmp_path / "runs")
    old = REPO / "tests" / "fixtures" / "schema-v1" / "torch-run.json"
    migrated = store.load(old)
    assert _listed_files(store, str(old)) == (migrated.provenance.raw_files, migrated.provenance.tables)
    current = tmp_path / "run.json"
    current.write_text(json.dumps(migrated.to_dict(), indent=2), encoding="utf-8")
    assert _listed_files(store, str(current)) == (migrated.provenance.raw_files, migrated.provenance.tables)


@pytest.mark.parametrize("run_path", ["c/r", "c/./r", "c/x/../r", "c//r"])
@pytest.mark.parametrize("name", ["a.log", "./a.log", "sub/../a.log", "sub/b.log", "../r/a.log", ".."])
def test_a_runs_files_are_found_by_their_normal_path(tmp_path: Path, run_path: str, name: str) -> None:
    """The file list names each file by its normalized store path, however the run folder and
    the record spell it (the fast path for plain names gives what normpath(join()) gives)."""

    from sparkreport.render.runs_index import run_files

    (tmp_path / "c" / "r" / "sub").mkdir(parents=True)
    for path in ("c/r/run.json", "c/r/a.log", "c/r/sub/b.log"):
        (tmp_path / path).write_text("x", encoding="utf-8")
    found = {f["store_path"] for f in run_files(tmp_path, run_path, [name], "files")}
    expected = posixpath.normpath(posixpath.join(run_path, name))
    assert found == {"c/r/run.json"} | ({expected} if (tmp_path / expected).is_file() else set())


def test_a_build_resolves_the_project_once_and_reads_its_config_once(
        tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The options are resolved into one Project (paths, sparkreport.yml) that every step reads:
    one build reads and validates sparkreport.yml once — the early refusal, the builder's choice
    and the render included — and a bad one is still refused in one line naming the file."""
    from sparkreport import config as config_module
    from sparkreport.project import resolve_project

    root = _copy(tiny, tmp_path)
    (root / "sparkreport.yml").write_text("title: Once\n", encoding="utf-8")
    options = RenderOptions(runs_dir=Path("runs"), project_root=root)
    project = resolve_project(options)
    assert resolve_project(project) is project
    assert (project.root, project.runs_dir, project.docs_dir) == (root.resolve(), (root / "runs").resolve(),
                                                                  (root / "build" / "docs").resolve())
    assert project.cache_dir == project.docs_dir.parent / "cache"
    assert project.config_path == root.resolve() / "sparkreport.yml"
    assert project.site_dir(None) == root.resolve() / "site" and project.site_dir(Path("/x")) == Path("/x")
    assert project.command == "sparkreport build --runs-dir runs"
    read: list[Path] = []
    load_config = config_module.load_config

    def counting(path: Path | None = None) -> object:
        read.append(Path(str(path)))
        return load_config(path)

    monkeypatch.setattr(config_module, "load_config", counting)
    result = build(options)
    assert read == [root.resolve() / "sparkreport.yml"]
    assert result.render.config.title == "Once"
    (root / "sparkreport.yml").write_text("title: [not, a, string]\n", encoding="utf-8")
    with pytest.raises(SparkreportError) as caught:
        build(options)
    assert str(root.resolve() / "sparkreport.yml") in caught.value.format_message()
    assert "\n" not in caught.value.format_message()


def test_the_walk_and_the_key_are_made_beside_the_imports(
        tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build with a kept site walks the store and computes its key in a forked process while
    it imports what the dataset needs; the answer is the one made in the build's own process,
    and a key equal to the kept site's stops the imports (nothing changed: nothing to load)."""
    import importlib

    from sparkreport.parallel import JOBS_ENV, Background
    from sparkreport.project import resolve_project
    from sparkreport.site import DATA_MODULES, _walk_and_key, _walked_and_keyed, incremental
    from sparkreport.store import RunStore

    root = _copy(tiny, tmp_path)
    build(_options(root), root / "site")
    project = resolve_project(_options(root))
    here = _walk_and_key(project, root / "site", True, "mkdocs", incremental.kept_key(project.cache_dir))
    assert here.scan is None  # the kept site's key: no scan, nothing is loaded
    monkeypatch.setenv(JOBS_ENV, "2")
    imported: list[str] = []
    real_import = importlib.import_module

    def recording(name: str, package: str | None = None) -> object:
        imported.append(name)
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", recording)
    monkeypatch.setattr(Background, "ready", lambda self: self._pipe.poll(30))  # the answer before any import
    answered: list[object] = []
    # (the walk's record aside: it vouches only for folders unchanged for RACY_NS before it, and
    # the build just changed the store's folder — a loaded CI runner took seconds between the two)
    assert _walked_and_keyed(project, root / "site", True, "mkdocs", answered.append)._replace(record=None) \
        == here._replace(record=None)
    assert not set(imported) & set(DATA_MODULES)  # the kept site's key: no import
    assert answered == []  # nothing goes on: no publisher to start
    (root / "runs" / "tiny" / "notes.txt").write_text("x\n", encoding="utf-8")
    walked = _walked_and_keyed(project, root / "site", True, "mkdocs", answered.append)
    folders, key, computed, by_stat = walked.folders, walked.key, walked.computed, walked.by_stat
    assert key != here[1] and folders["tiny"] != here[0]["tiny"] and by_stat["tiny"] != here[3]["tiny"]
    assert answered == [walked]  # handed on before the imports: the publisher starts there
    assert list(computed) == [str(root / "runs" / "tiny" / "notes.txt")]  # its digest, for the build to keep
    assert walked.scan is not None and walked.scan.unpacked().folders == RunStore(project.runs_dir).scan().folders
    assert [name for name in imported if name in DATA_MODULES] == list(DATA_MODULES)
    monkeypatch.setenv(JOBS_ENV, "1")  # in one process: the same answer, no imports
    imported.clear()
    # (but for the walk's record for the next walk, which vouches only for folders unchanged for
    # RACY_NS before it: the folder notes.txt was written into enters it when the walks are
    # seconds apart, as on a loaded CI runner)
    assert _walked_and_keyed(project, root / "site", True, "mkdocs")._replace(record=None) \
        == walked._replace(record=None)
    assert not set(imported) & set(DATA_MODULES)


def test_the_walks_process_publishes_the_run_files_once_it_has_answered(
        tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a kept build and workers, the store's walk and key and then, when the data changed,
    the runs' files' publishing run in one forked process: the publisher starts as the walk
    answers, the build forks none. What it publishes is what the build's own process would;
    a build that keeps its site, or fails, leaves no side folder; a credential the publisher
    finds fails the build and leaves the live site as it was."""
    from sparkreport import site as site_module
    from sparkreport.parallel import JOBS_ENV, can_fork

    root = _copy(tiny, tmp_path)
    site = root / "site"
    build(_options(root), site)
    monkeypatch.setenv(JOBS_ENV, "2")
    where = tmp_path / "where"
    where.mkdir()
    real_walk, real_publish = site_module._Walker.walk, site_module.publish_run_files_beside

    def walk(self: Any) -> Any:
        (where / "walk").write_text(str(os.getpid()), encoding="utf-8")
        return real_walk(self)

    def publish_files(*args: Any, **kwargs: Any) -> Any:
        (where / "publish").write_text(str(os.getpid()), encoding="utf-8")
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(site_module._Walker, "walk", walk)
    monkeypatch.setattr(site_module, "publish_run_files_beside", publish_files)
    build(_options(root), site)  # nothing changed: the site is kept, nothing published
    assert (where / "walk").is_file() and not (where / "publish").exists()
    assert not publish.side_dir(site).exists()
    log = next((root / "runs" / "tiny").glob("*/engine_backend_trt.log"))
    text = log.read_text(encoding="utf-8")
    log.write_text(text + "one more line\n", encoding="utf-8")
    result = build(_options(root), site)
    walked, published = ((where / name).read_text(encoding="utf-8") for name in ("walk", "publish"))
    if can_fork():
        assert walked == published != str(os.getpid())  # one process, not the build's
    assert result.published["copied"] == 1  # the changed log; the rest linked or carried over
    copies = list(site.rglob("engine_backend_trt.log"))
    assert len(copies) == 1 and copies[0].read_text(encoding="utf-8").endswith("one more line\n")
    assert not publish.side_dir(site).exists() and not publish.staging_dir(site).exists()
    before = {path: (site / path).read_bytes() for path in _files(site)}
    log.write_text(text + f"proxy {PLANTED['url-userinfo']}\n", encoding="utf-8")
    with pytest.raises(PublishScanError, match="engine_backend_trt.log"):
        build(_options(root), site)
    assert {path: (site / path).read_bytes() for path in _files(site)} == before
    assert not publish.side_dir(site).exists() and not publish.staging_dir(site).exists()


def test_the_scan_memo_adopts_another_scans_clean_files_by_stamp_and_by_content(tmp_path: Path) -> None:
    """What another scan found clean (the Downloads files, scanned where they were written) is
    known by its stamp where the same file is published (linked), by its content where a copy
    is, and nothing else is taken for clean."""
    from sparkreport.site.scan import ScanMemo
    from sparkreport.store import sha256_file

    written = tmp_path / "written.csv"
    written.write_text("run_id,model\nr1,llama\n", encoding="utf-8")
    stat = os.stat(written)
    memo = ScanMemo(None)
    memo.adopt({"downloads/dataset.csv": [stat.st_ino, stat.st_size, stat.st_mtime_ns, sha256_file(written)]})
    linked, copied, other = tmp_path / "linked.csv", tmp_path / "copied.csv", tmp_path / "other.csv"
    os.link(written, linked)
    shutil.copyfile(written, copied)
    other.write_text("run_id,model\nr2,llama\n", encoding="utf-8")
    assert memo.known_clean("downloads/dataset.csv", str(linked))
    assert memo.known_clean("downloads/dataset.csv", str(copied))
    assert not memo.known_clean("downloads/dataset.csv", str(other))


@given(st.lists(st.sampled_from(["", ".", "..", ".hidden", "run", "__pycache__", "__pycache__x", "a.log", "x."]),
                min_size=1, max_size=5))
def test_a_published_files_path_counts_in_its_folders_digest_as_the_walk_enters_it(parts: list[str]) -> None:
    """The publisher takes a file's entry from the record only where the store's walk counts it
    (``walked_path``, two substring tests): every part of its path one the walk enters — no
    hidden part (``..`` too), no ``__pycache__``."""
    from sparkreport.cache import walked_name, walked_path

    source = "/".join(parts)
    assert walked_path(source) == all(walked_name(part) for part in source.split("/"))
