"""``sparkreport scrub``: bring an existing run store down to what sparkreport records today.

Records written before the environment allowlist may hold a machine's whole environment
(``environment.details.env_vars``), and any file may hold a credential. For every campaign in
the store this rewrites, in place:

* ``run.json``: ``env_vars`` down to the allowlist (plus the record's own ``env_allowlist``
  and ``env_declared``), their values scrubbed as a run records them today (a URL's userinfo
  and query values go: :func:`~sparkreport.execute.envcapture.scrub_structure`),
  every string scrubbed of credential shapes; written in the store's own layout (indent 2);
* the raw files beside it (logs, reports, ``docker inspect`` output with ``Config.Env`` down
  to the allowlist, gzip files decompressed and recompressed): credential shapes, and the
  distinctive values of the variables just dropped and the parts of the kept values just
  removed (they are known secrets now);
* ``_campaign/`` (campaign copy, plan, journal) and ``_sources/``: the same.

A file is rewritten only when something in it changes (temporary file + rename, mode kept),
so every other byte stays as it was and a second run changes nothing. Symlinks are not
followed. The summary counts what was removed by kind and never prints a value.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkreport.execute.envcapture import known_secrets, recorded_env, scrub_env_lines, structure_secrets
from sparkreport.secrets import REDACTED, find_credentials, scrub_credentials

RUN_FILE = "run.json"
DROPPED_VARS = "environment variables not on the allowlist (values dropped from run.json)"
KNOWN_VALUES = "values of dropped variables found in raw files"
RECORDED_VALUES = "values of allowlisted variables scrubbed (a credential shape, a URL's userinfo or query values)"
INSPECT_VARS = "docker inspect Config.Env entries not on the allowlist"


@dataclass
class ScrubReport:
    """What a scrub changed (or would change, on a dry run)."""

    root: Path
    dry_run: bool = False
    files_checked: int = 0
    changed: list[Path] = field(default_factory=list)
    removed: Counter[str] = field(default_factory=Counter)
    skipped_links: list[Path] = field(default_factory=list)
    unreadable: list[Path] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The one-screen summary (counts only, never a value)."""
        verb = "would rewrite" if self.dry_run else "rewrote"
        if not self.changed:
            out = [f"nothing to scrub: {self.files_checked} files checked under {self.root}, all clean"]
        else:
            out = [f"{verb} {len(self.changed)} of {self.files_checked} files under {self.root}:"]
            out += [f"  {count:>6}  {kind}" for kind, count in sorted(self.removed.items())]
        if self.skipped_links:
            out.append(f"  {len(self.skipped_links)} symlinks not followed (first: {self.skipped_links[0]})")
        if self.unreadable:
            out.append(f"  {len(self.unreadable)} files not text, left as they are (first: {self.unreadable[0]})")
        if self.dry_run and self.changed:
            out.append("dry run: nothing written — run without --dry-run to apply")
        return out


def _count_scrub(text: str, secrets: Iterable[str], removed: Counter[str]) -> str:
    """``scrub_credentials`` that also counts what it removed, by kind."""
    for value in secrets:
        hits = text.count(value)
        if hits:
            removed[KNOWN_VALUES] += hits
            text = text.replace(value, REDACTED)
    for hit in find_credentials(text):
        removed[f"credentials ({hit.shape})"] += 1
    return scrub_credentials(text)


def _walk_strings(value: Any, secrets: list[str], removed: Counter[str]) -> Any:
    if isinstance(value, str):
        return _count_scrub(value, secrets, removed)
    if isinstance(value, list):
        return [_walk_strings(v, secrets, removed) for v in value]
    if isinstance(value, dict):
        return {k: _walk_strings(v, secrets, removed) for k, v in value.items()}
    return value


def scrub_record(data: dict[str, Any], removed: Counter[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """A run.json dict down to the allowlist and free of credential shapes; also the
    variables dropped (name → value: known secrets for the raw files beside it)."""
    dropped: dict[str, str] = {}
    details = (data.get("environment") or {}).get("details")
    kept = recorded_env(details) if isinstance(details, dict) else None
    if kept is not None and isinstance(details, dict):
        env_vars = {str(k): str(v) for k, v in details["env_vars"].items()}
        dropped = {k: v for k, v in env_vars.items() if k not in kept}
        if dropped:
            removed[DROPPED_VARS] += len(dropped)
            details.setdefault("env_vars_unrecorded", len(dropped))
        changed = sum(kept[k] != env_vars[k] for k in kept)
        if changed:
            removed[RECORDED_VALUES] += changed
        if kept != env_vars:
            details["env_vars"] = kept
        # what the kept values lost (a URL's userinfo, a query's values) is as secret as a dropped value
        dropped.update(structure_secrets({k: v for k, v in env_vars.items() if k in kept}))
    return _walk_strings(data, [], removed), dropped


class _Scrubber:
    def __init__(self, report: ScrubReport):
        self.report = report

    def write(self, path: Path, data: bytes) -> None:
        self.report.changed.append(path)
        if self.report.dry_run:
            return
        mode = path.stat().st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def run_json(self, path: Path) -> dict[str, str]:
        """Scrub one run.json; the dropped variables' values."""
        self.report.files_checked += 1
        original = path.read_bytes()
        try:
            data = json.loads(original.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.report.unreadable.append(path)
            return {}
        if not isinstance(data, dict):
            return {}
        removed: Counter[str] = Counter()
        cleaned, dropped = scrub_record(data, removed)
        if removed:
            self.report.removed.update(removed)
            self.write(path, (json.dumps(cleaned, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        return dropped

    def raw(self, path: Path, secrets: list[str]) -> None:
        """Scrub one raw file (gzip decompressed first); left alone when it is not text."""
        self.report.files_checked += 1
        original = path.read_bytes()
        packed = path.suffix == ".gz"
        try:
            text = (gzip.decompress(original) if packed else original).decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError):
            self.report.unreadable.append(path)
            return
        removed: Counter[str] = Counter()
        name = path.name.removesuffix(".gz")
        if name == "docker-inspect.json":
            text = self.inspect(text, removed)
        cleaned = _count_scrub(text, secrets, removed)
        if name.endswith((".json", ".jsonl")) and cleaned != text and not _still_json(cleaned, name):
            # A replacement cut through a JSON escape: scrub string by string instead.
            cleaned = _json_by_strings(text, name, secrets)
        if cleaned == text and not removed:
            return
        self.report.removed.update(removed)
        body = cleaned.encode("utf-8")
        self.write(path, gzip.compress(body, mtime=0) if packed else body)

    def inspect(self, text: str, removed: Counter[str]) -> str:
        try:
            inspect = json.loads(text)
        except json.JSONDecodeError:
            return text
        config = inspect.get("Config") if isinstance(inspect, dict) else None
        if not isinstance(config, dict) or not isinstance(config.get("Env"), list):
            return text
        kept = scrub_env_lines(config["Env"])
        if len(kept) == len(config["Env"]) and kept == config["Env"]:
            return text
        removed[INSPECT_VARS] += len(config["Env"]) - len(kept)
        config["Env"] = kept
        return json.dumps(inspect, indent=2, sort_keys=True)

    def folder(self, folder: Path, secrets: list[str]) -> None:
        for path in sorted(folder.rglob("*")):
            if path.is_symlink():
                self.report.skipped_links.append(path)
            elif path.is_file() and path.name != RUN_FILE and not path.name.startswith("."):
                self.raw(path, secrets)


def _still_json(text: str, name: str) -> bool:
    try:
        if name.endswith(".jsonl"):
            for line in text.splitlines():
                if line.strip():
                    json.loads(line)
        else:
            json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _json_by_strings(text: str, name: str, secrets: list[str]) -> str:
    scratch: Counter[str] = Counter()
    if name.endswith(".jsonl"):
        return "\n".join(json.dumps(_walk_strings(json.loads(line), secrets, scratch), sort_keys=True)
                         if line.strip() else line for line in text.split("\n"))
    return json.dumps(_walk_strings(json.loads(text), secrets, scratch), indent=2) + "\n"


def scrub_store(root: Path, *, dry_run: bool = False) -> ScrubReport:
    """Scrub every campaign of the store at ``root`` (see the module docstring)."""
    report = ScrubReport(root=root, dry_run=dry_run)
    scrubber = _Scrubber(report)
    if not root.is_dir():
        return report
    for campaign in sorted(p for p in root.iterdir() if not p.name.startswith(".")):
        if campaign.is_symlink():
            report.skipped_links.append(campaign)
            continue
        if not campaign.is_dir():
            continue
        dropped_here: dict[str, str] = {}
        runs, others = [], []
        for child in sorted(campaign.iterdir()):
            if child.is_symlink():
                report.skipped_links.append(child)
            elif child.is_dir() and (child / RUN_FILE).is_file() and not child.name.startswith("."):
                runs.append(child)
            elif child.is_dir() and not child.name.startswith("."):
                others.append(child)
        for run in runs:
            run_json = run / RUN_FILE
            if run_json.is_symlink():
                report.skipped_links.append(run_json)
                continue
            dropped = scrubber.run_json(run_json)
            dropped_here.update(dropped)
            scrubber.folder(run, known_secrets(dropped))
        for other in others:  # _campaign/, _sources/
            scrubber.folder(other, known_secrets(dropped_here))
    return report
