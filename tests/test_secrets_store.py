"""Nothing a reader should not see reaches the run store or the site (issue #13, store side):
the CPU smoke campaign run with planted credentials, then built; `sparkreport scrub` on an
old-style store (golden summary, idempotent, every other byte unchanged)."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from sparkreport.cli import main
from sparkreport.secrets import REDACTED
from sparkreport.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "runs" / "gpu-torch-native-vs-cgroup"

# name → (value, distinctive substrings that must never be stored or published). No name holds
# TOKEN, KEY, SECRET or PASSWORD: redaction by name would miss every one of them.
PLANTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "DATABASE_URL": ("postgres://bench:Db-Pa55word-7731@db.internal:5432/results", ("Db-Pa55word-7731",)),
    "HTTPS_PROXY": ("http://ci-bot:Pr0xy-Cred-4418@proxy.corp.example:3128", ("Pr0xy-Cred-4418",)),
    "SLACK_WEBHOOK_URL": ("https://hooks.slack.com/services/T0PLANT01/B0PLANT02/WebhookPlanted9931",
                          ("WebhookPlanted9931", "T0PLANT01/B0PLANT02")),
    "TEAMS_WEBHOOK": ("https://acme.webhook.office.com/webhookb2/7f3e-planted-teams-55@x/IncomingWebhook/abc",
                      ("7f3e-planted-teams-55",)),
    "DOCKER_AUTH_CONFIG": ('{"auths": {"registry.example": {"auth": "cGxhbnRlZDpkb2NrZXJQYXNzOTk="}}}',
                           ("cGxhbnRlZDpkb2NrZXJQYXNzOTk",)),
    "CI_JOB_JWT": ("eyJhbGciOiJSUzI1NiJ9.eyJwbGFudGVkIjoiY2ktam9iIn0.UGxhbnRlZFNpZ25hdHVyZTQy",
                   ("eyJwbGFudGVkIjoiY2ktam9iIn0", "UGxhbnRlZFNpZ25hdHVyZTQy")),
    "AZURE_STORAGE_CONNECTION_STRING": (
        "DefaultEndpointsProtocol=https;AccountName=plantedacct;AccountKey=UGxhbnRlZEF6dXJlS2V5MDE=;"
        "EndpointSuffix=core.windows.net", ("UGxhbnRlZEF6dXJlS2V5MDE",)),
    "NPM_CONFIG__AUTH": ("bnBtLXBsYW50ZWQtYXV0aC03Nw==", ("bnBtLXBsYW50ZWQtYXV0aC03Nw",)),
    "NPM_RC_LINE": ("//registry.npmjs.org/:_authToken=npm-planted-authtoken-8812", ("npm-planted-authtoken-8812",)),
    "MY_PRIVATE_NOTE": ("correct-horse-battery-staple-42", ("correct-horse-battery-staple",)),
    # an allowlisted name carrying a credential: its value is recorded, the password is not
    "CUDA_MIRROR_URL": ("https://mirror-user:CudaMirr0r-Pass-61@mirror.example/cuda", ("CudaMirr0r-Pass-61",)),
    # …and one in a form no credential shape knows (a query key of its own): the query's value goes
    "NCCL_TOPO_FILE": ("/etc/nccl/topo.xml?ticket=Plant3dTicket0099", ("Plant3dTicket0099",)),
}
#: planted on the command line (the model id is passed to the benchmark as --model).
ARGV_URL = "https://hub-bot:Argv-Planted-Pw-5150@models.example/fake/small-7b"
ARGV_SECRET = "Argv-Planted-Pw-5150"
#: set by the campaign's own `env:` (recorded, as the campaign asked, with its password scrubbed).
DECLARED_URL = "https://mirror:Declared-Planted-Pw-808@mirror.example/pip"


def needles() -> list[str]:
    return [ARGV_SECRET, "Declared-Planted-Pw-808", *(value for value, _ in PLANTED.values()),
            *(part for _, parts in PLANTED.values() for part in parts)]


def texts_under(folder: Path) -> dict[Path, str]:
    """Every file under ``folder`` as text (gzip decompressed)."""
    out: dict[Path, str] = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            out[path] = data.decode("utf-8", "replace")
    return out


def leaks(folder: Path) -> list[str]:
    found = []
    for path, text in texts_under(folder).items():
        # JSON files may escape a value's quotes or slashes: look at the decoded text too
        variants = [text, text.replace("\\/", "/").replace('\\"', '"')]
        for needle in needles():
            if any(needle in variant for variant in variants):
                found.append(f"{path.relative_to(folder)}: {needle[:12]}…")
    return sorted(set(found))


def planted_campaign(tmp_path: Path) -> Path:
    """campaigns/smoke-fake.yaml, one iteration, its bench printing the planted variables and
    one model id carrying a password (it reaches the command line)."""
    doc = yaml.safe_load((ROOT / "campaigns" / "smoke-fake.yaml").read_text(encoding="utf-8"))
    doc["iterations"] = 1
    doc["workload"]["sleep_s"] = 0
    doc["workload"]["print_env"] = sorted(PLANTED)
    doc["models"][0]["id"] = ARGV_URL
    doc["env"] = {"BENCH_MIRROR": DECLARED_URL}  # set by the campaign: recorded, scrubbed
    path = tmp_path / "smoke-planted.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_planted_credentials_reach_neither_the_store_nor_the_site(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    campaign = planted_campaign(tmp_path)
    for name, (value, _) in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(campaign), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    records = RunStore(runs).load_all()
    assert len(records) == 4
    # the planted values did reach the benchmark (its log printed them, scrubbed on the way in)
    log = next(runs.glob("smoke-fake/*/bench.log")).read_text(encoding="utf-8")
    assert f"env MY_PRIVATE_NOTE={REDACTED}\n" in log and f"env HTTPS_PROXY={REDACTED}\n" in log
    assert f"env NCCL_TOPO_FILE=/etc/nccl/topo.xml?ticket={REDACTED}\n" in log
    env_vars = records[0].environment.details["env_vars"]
    assert env_vars["CUDA_MIRROR_URL"] == f"https://{REDACTED}@mirror.example/cuda"
    assert env_vars["NCCL_TOPO_FILE"] == f"/etc/nccl/topo.xml?ticket={REDACTED}"
    assert env_vars["BENCH_MIRROR"] == f"https://{REDACTED}@mirror.example/pip"
    assert not set(env_vars) & (set(PLANTED) - {"CUDA_MIRROR_URL", "NCCL_TOPO_FILE"})
    assert records[0].environment.details["env_vars_unrecorded"] >= len(PLANTED) - 2
    assert leaks(runs) == []
    built = CliRunner().invoke(main, ["build", "--runs-dir", str(runs)])
    assert built.exit_code == 0, built.output
    assert (tmp_path / "site" / "index.html").is_file()
    assert leaks(tmp_path / "build") == [] and leaks(tmp_path / "site") == []
    # the check itself sees a planted value, gzip included
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "x.json.gz").write_bytes(gzip.compress(json.dumps({"v": PLANTED["DOCKER_AUTH_CONFIG"][0]}).encode()))
    assert leaks(probe) == ["x.json.gz: cGxhbnRlZDpk…", 'x.json.gz: {"auths": {"…']


# --------------------------------------------------------------------------- sparkreport scrub

OLD_ENV = {"PATH": "/usr/local/bin:/usr/bin", "HOME": "/root", "SHLVL": "1", "CUDA_VISIBLE_DEVICES": "0",
           "HOSTNAME": "bench-box-17", "DATABASE_URL": "postgres://u:OldStore-Db-Pw-303@db/x",
           "MY_PRIVATE_NOTE": "old-store-private-note-value", "LANG": "C.UTF-8"}


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    """Two runs of the shipped store as they were before the allowlist: the whole environment in
    run.json, its values echoed in a log, a gzip file and the journal."""
    root = tmp_path / "store"
    campaign = root / SHIPPED.name
    for run in sorted(p for p in SHIPPED.iterdir() if (p / "run.json").is_file())[:2]:
        shutil.copytree(run, campaign / run.name)
        data = json.loads((campaign / run.name / "run.json").read_text(encoding="utf-8"))
        data["environment"]["details"]["env_vars"] = dict(OLD_ENV)
        (campaign / run.name / "run.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                                      encoding="utf-8")
        (campaign / run.name / "notes.log").write_text(
            "started on bench-box-17\nnote: old-store-private-note-value\nLANG=C.UTF-8 SHLVL=1\n", encoding="utf-8")
        (campaign / run.name / "extra.log.gz").write_bytes(
            gzip.compress(b"Authorization: Bearer OldStoreBearer0123456789\n", mtime=0))
    meta = campaign / "_campaign"
    meta.mkdir(exist_ok=True)
    (meta / "journal.jsonl").write_text(json.dumps({"event": "start", "proxy": "http://a:OldJournalPw77@p:1"})
                                        + "\n", encoding="utf-8")
    return root


def test_scrub_takes_a_query_value_an_old_record_kept_from_the_record_and_the_logs(old_store: Path) -> None:
    run = sorted(p for p in (old_store / SHIPPED.name).iterdir() if (p / "run.json").is_file())[0]
    data = json.loads((run / "run.json").read_text(encoding="utf-8"))
    data["environment"]["details"]["env_vars"] = {"PATH": "/usr/bin", "NCCL_TOPO_FILE": "/etc/topo.xml?ticket=OldTicket4477"}
    (run / "run.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (run / "notes.log").write_text("topo /etc/topo.xml?ticket=OldTicket4477\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["scrub", "--runs-dir", str(old_store)])
    assert result.exit_code == 0, result.output
    assert "       1  values of allowlisted variables scrubbed (a credential shape, a URL's userinfo or query values)" \
        in result.output.splitlines()
    assert leaks_of(old_store, "OldTicket4477") == []
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["environment"]["details"]["env_vars"] == {
        "NCCL_TOPO_FILE": f"/etc/topo.xml?ticket={REDACTED}", "PATH": "/usr/bin"}
    assert (run / "notes.log").read_text(encoding="utf-8") == f"topo /etc/topo.xml?ticket={REDACTED}\n"


def digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_scrub_rewrites_an_old_store_once_and_only_what_holds_secrets(old_store: Path) -> None:
    before = digests(old_store)
    dry = CliRunner().invoke(main, ["scrub", "--runs-dir", str(old_store), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert digests(old_store) == before
    result = CliRunner().invoke(main, ["scrub", "--runs-dir", str(old_store)])
    assert result.exit_code == 0, result.output
    total = len(before)
    assert result.output.splitlines() == [
        f"rewrote 7 of {total} files under {old_store}:",
        "       2  credentials (bearer)",
        "       1  credentials (url-userinfo)",
        "      12  environment variables not on the allowlist (values dropped from run.json)",
        "       4  values of dropped variables found in raw files",
    ]
    assert dry.output.splitlines()[0] == f"would rewrite 7 of {total} files under {old_store}:"
    assert dry.output.splitlines()[-1] == "dry run: nothing written — run without --dry-run to apply"
    for secret in ("OldStore-Db-Pw-303", "old-store-private-note-value", "bench-box-17",
                   "OldStoreBearer0123456789", "OldJournalPw77"):
        assert leaks_of(old_store, secret) == []
    after = digests(old_store)
    changed = sorted(name for name in before if before[name] != after[name])
    assert [name.split("/", 2)[-1] for name in changed] == [
        "journal.jsonl", "extra.log.gz", "notes.log", "run.json", "extra.log.gz", "notes.log", "run.json"]
    for run in sorted(p for p in (old_store / SHIPPED.name).iterdir() if (p / "run.json").is_file()):
        data = json.loads((run / "run.json").read_text(encoding="utf-8"))
        shipped = json.loads((SHIPPED / run.name / "run.json").read_text(encoding="utf-8"))
        assert data["environment"]["details"]["env_vars"] == {"CUDA_VISIBLE_DEVICES": "0",
                                                              "PATH": "/usr/local/bin:/usr/bin"}
        # everything but the environment is as shipped
        data["environment"]["details"].pop("env_vars"), shipped["environment"]["details"].pop("env_vars")
        data["environment"]["details"].pop("env_vars_unrecorded", None)
        shipped["environment"]["details"].pop("env_vars_unrecorded", None)
        assert data == shipped
        assert (run / "notes.log").read_text(encoding="utf-8") == \
            f"started on {REDACTED}\nnote: {REDACTED}\nLANG=C.UTF-8 SHLVL=1\n"
    again = CliRunner().invoke(main, ["scrub", "--runs-dir", str(old_store)])
    assert again.output.splitlines() == [f"nothing to scrub: {total} files checked under {old_store}, all clean"]
    assert digests(old_store) == after


def leaks_of(root: Path, secret: str) -> list[Path]:
    return [path for path, text in texts_under(root).items() if secret in text]


def test_the_shipped_store_is_already_scrubbed() -> None:
    result = CliRunner().invoke(main, ["scrub", "--runs-dir", str(ROOT / "runs"), "--dry-run"])
    assert result.exit_code == 0
    assert result.output.startswith("nothing to scrub:"), result.output


def test_scrub_without_a_store_says_how_to_point_at_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["scrub", "--runs-dir", str(tmp_path / "nowhere")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) <= 3
