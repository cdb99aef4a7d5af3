"""Credential shapes (sparkreport.secrets) and the environment allowlist (envcapture): what is
found, what is scrubbed and what is kept; the store scrubs what it writes."""

from __future__ import annotations

import gzip
import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkreport.execute.campaign import CampaignError, load_campaign
from sparkreport.execute.envcapture import (
    ALLOWLIST,
    allowed_env,
    capture_env,
    is_allowed,
    known_secrets,
    pattern_error,
    scrub_env_lines,
    scrub_structure,
)
from sparkreport.execute.redact import redact_argv
from sparkreport.schema import Environment, RunRecord
from sparkreport.secrets import REDACTED, SHAPES, find_credentials, scrub_bytes, scrub_credentials
from sparkreport.store import RawFile, RunStore

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (shape, text, the secret part that must go, context that must stay)
EXAMPLES = [
    ("url-userinfo", "DATABASE_URL=postgres://app:Sup3rS3cret-pw@db.internal:5432/bench",
     "Sup3rS3cret-pw", "postgres://app:"),
    ("url-userinfo", "proxy http://alice:pr0xy-Pass@proxy.corp:3128 in use", "pr0xy-Pass", "@proxy.corp:3128"),
    ("jwt", "CI_JOB_JWT=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2IifQ.c2lnbmF0dXJlLXBhcnQ",
     "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2IifQ.c2lnbmF0dXJlLXBhcnQ", "CI_JOB_JWT="),
    ("key-value-secret", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=QmFzZTY0S2V5PT0abc==;"
     "EndpointSuffix=core.windows.net", "QmFzZTY0S2V5PT0abc==", "AccountName=acct"),
    ("key-value-secret", "//registry.npmjs.org/:_authToken=npm-s3cr3t-value-9", "npm-s3cr3t-value-9",
     "registry.npmjs.org"),
    ("token-prefix", "using hf_abcdefghijklmnopqrstuvwx for downloads", "hf_abcdefghijklmnopqrstuvwx", "using "),
    ("token-prefix", "AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP", ""),
    ("bearer", "Authorization: Bearer abc.def-ghi_jkl~mno", "abc.def-ghi_jkl~mno", "Authorization"),
    ("webhook-url", "SLACK_HOOK https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX done",
     "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX", " done"),
    ("webhook-url", "https://acme.webhook.office.com/webhookb2/abc-123-def@x/IncomingWebhook/zz",
     "abc-123-def", ""),
    ("docker-auth", '{"auths": {"reg.io": {"auth": "dXNlcjpwYXNzd29yZDEyMw=="}}}',
     "dXNlcjpwYXNzd29yZDEyMw==", '"reg.io"'),
    ("secret-option", "vllm bench serve --model m --hf-token plainValue123 --max-tokens 128", "plainValue123",
     "--max-tokens 128"),
    ("secret-option", "python bench.py --api-key abcdefgh1 --port 8000", "abcdefgh1", "--port 8000"),
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn", "BEGIN OPENSSH PRIVATE KEY", ""),
    ("short-password-field", "Driver={ODBC};Server=db;UID=bench;PWD=s3cr3t-Pass;", "s3cr3t-Pass", "UID=bench;"),
    ("short-password-field", "NCCL_DEBUG_FILE=/tmp/nccl.%h?pw=ncclsecret4242", "ncclsecret4242", "/tmp/nccl.%h?"),
]


@pytest.mark.parametrize(("shape", "text", "secret", "context"), EXAMPLES)
def test_each_shape_is_found_and_scrubbed_keeping_its_context(shape: str, text: str, secret: str,
                                                              context: str) -> None:
    assert shape in {hit.shape for hit in find_credentials(text)}
    cleaned = scrub_credentials(text)
    assert secret not in cleaned and REDACTED in cleaned and context in cleaned
    assert find_credentials(cleaned) == []
    assert scrub_credentials(cleaned) == cleaned


def test_every_shape_has_an_example() -> None:
    assert {shape.name for shape in SHAPES} == {example[0] for example in EXAMPLES}


@pytest.mark.parametrize("text", [
    "https://huggingface.co/Qwen/Qwen2-0.5B", "max_tokens=128 tokens: 42", "PATH=/usr/bin:/bin",
    "NCCL_SOCKET_IFNAME=eth0", "time: 12:34:56 at host@10.0.0.1", "ssh://git@github.com/org/repo.git",
    "kv_cache_free_gpu_mem_fraction: 0.9", "password", "the key = value of a table",
    "--max-tokens 128 --max-token 8192 --tokenizer gpt2 --no-secret", "Namespace(max_tokens=128, n=2)",
    "PWD=/home/bench/work", "OLDPWD=/tmp", "PWD=~/runs", "pw=", "mypwd=abcdef1",
])
def test_ordinary_benchmark_text_is_left_alone(text: str) -> None:
    assert find_credentials(text) == []
    assert scrub_credentials(text) == text


def test_known_values_are_scrubbed_longest_first_and_short_ones_left() -> None:
    text = "note=correct-horse-battery-staple-42 short=abc"
    assert scrub_credentials(text, ["correct-horse-battery-staple-42", "correct-horse", "abc"]) == \
        f"note={REDACTED} short=abc"


def test_scrub_bytes_reads_gzip_and_leaves_binary_alone() -> None:
    secret = b"proxy http://u:pr0xyPassw0rd@h:1\n"
    packed = gzip.compress(secret, mtime=0)
    cleaned = gzip.decompress(scrub_bytes(packed))
    assert b"pr0xyPassw0rd" not in cleaned and cleaned.startswith(b"proxy http://u:")
    binary = bytes(range(256)) * 4
    assert scrub_bytes(binary) is binary
    plain = b"nothing to see\n"
    assert scrub_bytes(plain) is plain


# --------------------------------------------------------------------------- properties

_secret_chars = string.ascii_letters + string.digits
# A secret holds a digit and the filler none, so the secret can only come from the planted text.
secrets = st.text(alphabet=_secret_chars, min_size=12, max_size=40).filter(lambda s: any(c.isdigit() for c in s))
filler = st.text(alphabet=string.ascii_letters + " \n\t.,;:/=-_", max_size=80)
planted = st.one_of(
    secrets.map(lambda s: (f"https://user:{s}@host.example/x", s)),
    secrets.map(lambda s: (f"AccountKey={s};", s)),
    secrets.map(lambda s: (f"password={s}", s)),
    secrets.map(lambda s: (f"hf_{s}{s}", f"hf_{s}{s}")),
    secrets.map(lambda s: (f"Bearer {s}", s)),
    secrets.map(lambda s: (f"https://hooks.slack.com/services/{s}", s)),
)


@SETTINGS
@given(before=filler, after=filler, item=planted)
def test_a_planted_credential_never_survives_a_scrub(before: str, after: str, item: tuple[str, str]) -> None:
    text, secret = item
    cleaned = scrub_credentials(f"{before} {text} {after}")
    assert secret not in cleaned
    assert find_credentials(cleaned) == []


@SETTINGS
@given(text=st.text(max_size=300))
def test_scrubbing_is_idempotent_and_leaves_nothing_to_find(text: str) -> None:
    once = scrub_credentials(text)
    assert scrub_credentials(once) == once
    assert find_credentials(once) == []


@SETTINGS
@given(text=st.text(alphabet=string.ascii_letters + string.digits + " \n.,/_-", max_size=300))
def test_text_without_separators_or_prefixes_is_unchanged(text: str) -> None:
    if not any(p in text for p in ("hf_", "gh", "AKIA", "ASIA", "AIza", "sk-", "sk_", "xox", "npm_", "pypi-",
                                   "glpat-", "dop_v1_", "github_pat_", "Bearer", "Basic")):
        assert scrub_credentials(text) == text


# --------------------------------------------------------------------------- allowlist


def test_allowlist_records_result_relevant_variables_only() -> None:
    env = {"CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "INFO", "PATH": "/usr/bin", "HF_HUB_OFFLINE": "1",
           "VLLM_USE_V1": "1", "OMP_NUM_THREADS": "8", "HOME": "/root", "DATABASE_URL": "postgres://a:b@c/d",
           "HF_TOKEN": "hf_xxxxxxxxxxxxxxxxxxxx", "CUDA_PROXY": "https://u:p4ssw0rd@h", "MYLIB_THREADS": "4",
           "NCCL_IB_AUTH_KEY": "not-recorded"}
    assert allowed_env(env) == {
        "CUDA_PROXY": f"https://{REDACTED}@h", "CUDA_VISIBLE_DEVICES": "0", "HF_HUB_OFFLINE": "1",
        "NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "8", "PATH": "/usr/bin", "VLLM_USE_V1": "1"}
    assert "MYLIB_THREADS" in allowed_env(env, ["MYLIB_*"])
    assert not is_allowed("NCCL_IB_AUTH_KEY") and not is_allowed("HF_TOKEN", ["HF_*"])
    assert all(entry.why for entry in ALLOWLIST)


def test_capture_records_declared_variables_scrubbed_and_counts_the_rest() -> None:
    process = {"PATH": "/usr/bin", "HOME": "/root", "MY_PRIVATE_NOTE": "correct-horse-battery-staple-42",
               "MY_FLAG": "on", "HF_TOKEN": "hf_abcdefghijklmnopqrstu"}
    capture = capture_env(process, {"MY_FLAG": "on", "HF_TOKEN": "hf_abcdefghijklmnopqrstu"})
    assert capture.values == {"HF_TOKEN": REDACTED, "MY_FLAG": "on", "PATH": "/usr/bin"}
    assert capture.unrecorded == 2


@pytest.mark.parametrize(("value", "recorded"), [
    # a credential in a form no shape knows: the structure that carries it goes, whatever its name
    ("/tmp/blob?sig=Zm9vYmFy&se=2027-01-01&sp=r", f"/tmp/blob?sig={REDACTED}&se={REDACTED}&sp={REDACTED}"),
    ("https://opaquetoken123@git.example/org/repo", f"https://{REDACTED}@git.example/org/repo"),
    ("https://u:p@h/x?ticket=42", f"https://{REDACTED}@h/x?ticket={REDACTED}"),
    ("/tmp/x?next=https://tok123@h/y&n=2", f"/tmp/x?next={REDACTED}&n={REDACTED}"),  # a URL in a query value
    ("/tmp/nccl.%h?=v", f"/tmp/nccl.%h?={REDACTED}"),
    # no userinfo, no query: as it is
    ("/usr/local/cuda/lib64:/usr/lib", "/usr/local/cuda/lib64:/usr/lib"), ("tcp://10.0.0.1:2379", "tcp://10.0.0.1:2379"),
    ("/home/u/.cache/model@v2/weights", "/home/u/.cache/model@v2/weights"), ("what?", "what?"),
    ("expandable_segments:True,max_split_size_mb:512", "expandable_segments:True,max_split_size_mb:512"),
])
def test_recorded_values_lose_a_urls_userinfo_and_query_values_whatever_they_are_called(
        value: str, recorded: str) -> None:
    assert allowed_env({"CUDA_SOMETHING": value}) == {"CUDA_SOMETHING": recorded}
    assert scrub_env_lines([f"NCCL_X={value}"]) == [f"NCCL_X={recorded}"]


@given(st.text(alphabet=st.characters(blacklist_characters="?@", blacklist_categories=("Cs",)), max_size=60))
def test_a_value_without_userinfo_or_query_is_recorded_as_its_shapes_leave_it(value: str) -> None:
    assert scrub_structure(value) == value


@pytest.mark.parametrize(("value", "scrubbed"), [
    ("correct-horse-battery-staple-42", True), ("postgres://u:p@h/db", True), ("1", False), ("true", False),
    ("/root", False), ("/usr/local/bin:/usr/bin", False), ("en_US.UTF-8", False), ("noninteractive", False),
    ("1234567890", False), ("abcdefg", False), ("abcdefgh", True),
])
def test_known_secret_rule(value: str, scrubbed: bool) -> None:
    assert (known_secrets({"X": value}) == [value]) is scrubbed


@pytest.mark.parametrize(("pattern", "problem"), [
    ("MYLIB_*", None), ("VLLM_USE_V1", None), ("MY*", "is neither a variable name nor PREFIX_*"),
    ("MY LIB", "is neither"), ("GITHUB_TOKEN", "names a secret"), ("AWS_SECRET_*", "names a secret"),
])
def test_allowlist_pattern_check(pattern: str, problem: str | None) -> None:
    found = pattern_error(pattern)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_campaign_env_allowlist_is_validated_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("campaign: x\nmodels: [a]\nenvironments: [{kind: native}]\nworkload: {kind: fake}\n"
                    "env_allowlist:\n  - MYLIB_*\n  - DEPLOY_TOKEN\n", encoding="utf-8")
    with pytest.raises(CampaignError) as info:
        load_campaign(path)
    message = info.value.format_message()
    assert message.startswith(f"{path}:7: env_allowlist[1]: 'DEPLOY_TOKEN' names a secret")
    path.write_text(path.read_text().replace("  - DEPLOY_TOKEN\n", ""), encoding="utf-8")
    assert load_campaign(path).env_allowlist == ("MYLIB_*",)


def test_docker_inspect_env_lines_down_to_the_allowlist() -> None:
    lines = ["PATH=/usr/bin", "DATABASE_URL=postgres://a:pw123456@h/d", "NCCL_DEBUG=WARN", "MY_FLAG=on",
             "CUDA_X=https://u:pw123456@h"]
    assert scrub_env_lines(lines, keep=["MY_FLAG"]) == [
        "PATH=/usr/bin", "NCCL_DEBUG=WARN", "MY_FLAG=on", f"CUDA_X=https://{REDACTED}@h"]


def test_argv_known_values_shapes_and_secret_options() -> None:
    argv = ["bench", "--model", "https://bot:Cmd-Passw0rd@models.example/m", "--hf-token", "hf_x",
            "--note=correct-horse-battery-staple-42", "HF_TOKEN=abc", "--tp", "2"]
    assert redact_argv(argv, ["correct-horse-battery-staple-42"]) == [
        "bench", "--model", f"https://bot:{REDACTED}@models.example/m", "--hf-token", REDACTED,
        f"--note={REDACTED}", f"HF_TOKEN={REDACTED}", "--tp", "2"]


def test_reading_an_old_record_never_goes_beyond_the_allowlist() -> None:
    record = RunRecord(run_id="r", campaign="c", environment=Environment(
        name="e", kind="native", details={"env_vars": {"PATH": "/bin", "DATABASE_URL": "postgres://a:pw@h/d",
                                                       "SHLVL": "1", "MYLIB_THREADS": "4"},
                                          "env_allowlist": ["MYLIB_*"]}))
    loaded = RunRecord.from_dict(record.to_dict())
    assert loaded.environment.details["env_vars"] == {"MYLIB_THREADS": "4", "PATH": "/bin"}
    # a variable the campaign set itself (env:) is named in env_declared and kept
    record.environment.details["env_declared"] = ["SHLVL"]
    assert RunRecord.from_dict(record.to_dict()).environment.details["env_vars"] == {
        "MYLIB_THREADS": "4", "PATH": "/bin", "SHLVL": "1"}


# --------------------------------------------------------------------------- store


def test_store_scrubs_raw_files_tables_and_run_json_it_writes(tmp_path: Path) -> None:
    source = tmp_path / "bench.log"
    source.write_text("proxy https://ci:Pr0xyPassw0rd@proxy:3128\nthroughput 12\n", encoding="utf-8")
    record = RunRecord(run_id="r1", campaign="c", labels={"note": "Bearer abcdefghijklmnop"})
    store = RunStore(tmp_path / "runs")
    folder = store.write(record, [RawFile("bench.log", source=source),
                                  RawFile("report.json.gz", content=gzip.compress(b'{"auth": "dXNlcjpwYXNzd29yZA=="}')),
                                  RawFile("samples.bin", content=bytes(range(256)))])
    assert "Pr0xyPassw0rd" not in (folder / "bench.log").read_text(encoding="utf-8")
    assert "throughput 12" in (folder / "bench.log").read_text(encoding="utf-8")
    assert b"dXNlcjpwYXNzd29yZA" not in gzip.decompress((folder / "report.json.gz").read_bytes())
    assert (folder / "samples.bin").read_bytes() == bytes(range(256))
    data = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert data["labels"]["note"] == f"Bearer {REDACTED}"
    # sample tables are numbers: kept byte for byte, without a scan (the build's scan reads them)
    samples = tmp_path / "samples.csv"
    samples.write_text("t,util\n0.1,97\n", encoding="utf-8")
    other = store.write(RunRecord(run_id="r2", campaign="c"), [RawFile("samples.csv", source=samples)])
    assert (other / "samples.csv").read_bytes() == samples.read_bytes()
    kept = store.keep_source("c", source, "ab" * 32)
    assert "Pr0xyPassw0rd" not in (folder / kept).read_text(encoding="utf-8")


def test_overlapping_shapes_are_scrubbed_as_one() -> None:
    text = "password=https://u:Inner-Secret-99@h/x tail"
    cleaned = scrub_credentials(text)
    assert "Inner-Secret-99" not in cleaned and cleaned.endswith(" tail") and find_credentials(cleaned) == []


def test_ingested_files_and_records_are_stored_scrubbed(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sparkreport.cli import main

    fixture = Path(__file__).parent / "fixtures" / "vllm-text" / "serve_new_e2el_p999.txt"
    text = fixture.read_text(encoding="utf-8").replace(
        "vllm bench serve --model", "vllm bench serve --hf-token plainIngestTok9 --model", 1)
    source = tmp_path / "serve.txt"
    source.write_text("proxy: https://bot:IngestProxyPw42@proxy.example:3128\n" + text, encoding="utf-8")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["ingest", str(source), "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    stored = {p: (gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()).decode()
              for p in runs.rglob("*") if p.is_file()}
    assert stored and not [p for p, t in stored.items() if "plainIngestTok9" in t or "IngestProxyPw42" in t]
    record = RunStore(runs).load_all()[0]
    assert f"--hf-token {REDACTED}" in record.workload.details["command"]
    assert record.model.id == "openai/gpt-oss-20b"
