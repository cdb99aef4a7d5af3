"""Credential shapes: what a secret looks like in text, wherever it turns up.

This is the *second* line of defence. The first is that sparkreport records environment
values by allowlist only (see ``sparkreport.execute.envcapture``); the shapes here catch a
credential that an allowlisted value, an argument, a log line or an ingested file carries
anyway. Used by the executor (scrub before anything is written), by ``sparkreport scrub``
(old stores) and by ``sparkreport build`` (scan everything about to be published).

A shape is a name and a regular expression; :func:`find_credentials` reports each hit with
its shape's name, :func:`scrub_credentials` replaces the secret part and keeps the context
(``https://user:[REDACTED]@host`` rather than the whole URL).
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"


@dataclass(frozen=True, slots=True)
class Shape:
    """One kind of credential: ``pattern``'s group ``secret`` is secret.

    ``pattern`` works on any text. For speed (every stored file and every published file is
    scanned), a shape also has ``gates`` — literal strings of which one must occur for the
    pattern to be tried at all — and, when it is case-insensitive, ``lowered``: the same pattern
    written in lower case, run without ``(?i)`` on the lower-cased text (several times faster)."""

    name: str
    pattern: re.Pattern[str]
    description: str
    gates: tuple[str, ...] = ()
    lowered: re.Pattern[str] | None = None
    #: Checked on each match (text, start): what a look-behind would check, much faster here.
    before: Callable[[str, int], bool] | None = None

    def matches(self, text: str, low: str | None) -> Iterator[re.Match[str]]:
        """The pattern's matches in ``text`` (``low``: ``text.lower()`` when it has the same
        length, so positions agree; else None)."""
        if self.lowered is not None and low is not None:
            if any(gate in low for gate in self.gates):
                yield from (m for m in self.lowered.finditer(low) if self.before is None or self.before(low, m.start()))
        elif not self.gates or any(gate in text for gate in self.gates):
            yield from (m for m in self.pattern.finditer(text) if self.before is None or self.before(text, m.start()))


def _shape(name: str, regex: str, description: str, gates: tuple[str, ...] = (),
           ignore_case: bool = False, before: Callable[[str, int], bool] | None = None) -> Shape:
    if ignore_case:  # written in lower case (gates too): matched as it is against lower-cased text
        return Shape(name, re.compile("(?i)" + regex), description, gates, re.compile(regex), before)
    return Shape(name, re.compile(regex), description, gates, None, before)


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _starts_word(text: str, start: int) -> bool:
    """``password=`` but not ``mypassword=`` (``hf_token=``, ``--api-key=`` are fine)."""
    return start == 0 or text[start - 1] not in _WORD


def _in_option(text: str, start: int) -> bool:
    """The match lies in a command-line option's name: ``--hf-token`` (not ``my-token``)."""
    pos = start
    while pos > 0 and (text[pos - 1] in _WORD or text[pos - 1] == "-"):
        pos -= 1
    if not text.startswith("-", pos):
        return False
    return pos == 0 or not (text[pos - 1] in _WORD or text[pos - 1] in "_-")


def _after_separator(text: str, start: int) -> bool:
    """``pwd=`` at the start, or after ``;``, ``?``, ``&``, a space or a quote: a field of a
    connection string (``UID=u;PWD=…``) or of a URL's query (``?pw=…``), not ``mypwd=``."""
    return start == 0 or text[start - 1] in ";?& \t\n\"'"


_KEY_NAMES = ("accountkey|sharedaccesskey|sharedaccesssignature|password|passwd|secret|client_secret|"
              "api[_-]?key|access[_-]?key|auth[_-]?token|_authtoken|_auth|token|sig")
_TOKEN_PREFIXES = ("hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "sk-",
                   "sk_live_", "AKIA", "ASIA", "AIza", "npm_", "pypi-", "dop_v1_")

# Each pattern names the secret part ``secret`` so that scrubbing keeps what is around it.
SHAPES: tuple[Shape, ...] = (
    _shape(
        "url-userinfo",
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"<>]{0,200}:(?P<secret>[^\s@/'\"<>]{1,200})@",
        "a password in a URL (scheme://user:password@host)",
        gates=("://",),
    ),
    _shape(
        "jwt",
        r"\b(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        "a JSON Web Token (eyJ….eyJ….…)",
        gates=("eyJ",),
    ),
    _shape(
        "key-value-secret",
        r"(?:" + _KEY_NAMES + r")\s*[=:]\s*[\"']?(?P<secret>[^\s;&\"',]{6,})",
        "a secret in a key=value pair (AccountKey=…, password=…, _authToken=…)",
        gates=("key", "sharedaccess", "passw", "secret", "token", "_auth", "sig"),
        ignore_case=True, before=_starts_word,
    ),
    _shape(
        "short-password-field",
        r"(?:pwd|pw)\s*=\s*(?P<secret>(?![/~.$])[^\s;&\"',]{4,})",
        "a password in a connection string or a URL's query (UID=…;PWD=…, ?pw=…); not a path (PWD=/home/…)",
        gates=("pw",), ignore_case=True, before=_after_separator,
    ),
    _shape(
        "secret-option",
        r"(?:token|api-?key|password|passwd|secret)(?:=|\s+)[\"']?"
        r"(?P<secret>(?=[^\s\"']*[a-z])[^\s\"'-][^\s\"']{3,})",
        "a command-line option that takes a secret (--hf-token VALUE, --api-key=VALUE, --password …)",
        gates=("token", "key", "passw", "secret"),
        ignore_case=True, before=_in_option,
    ),
    _shape(
        "private-key",
        r"(?P<secret>-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----)",
        "a PEM private key",
        gates=("PRIVATE KEY",),
    ),
    _shape(
        "token-prefix",
        r"(?P<secret>\b(?:hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
        r"|glpat-[A-Za-z0-9_-]{16,}|xox[abposr]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}"
        r"|sk_live_[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}"
        r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}|dop_v1_[a-f0-9]{30,}))",
        "a token with a known prefix (hf_, ghp_, github_pat_, glpat-, xox…-, sk-, AKIA, npm_, pypi-, …)",
        gates=_TOKEN_PREFIXES,
    ),
    _shape(
        "bearer",
        r"\b(?:Bearer|Basic)\s+(?P<secret>[A-Za-z0-9._~+/=-]{12,})",
        "an HTTP Authorization credential (Bearer …, Basic …)",
        gates=("Bearer", "Basic"),
    ),
    _shape(
        "webhook-url",
        r"(?P<secret>https://(?:hooks\.slack\.com/services|discord(?:app)?\.com/api/webhooks"
        r"|[a-z0-9.-]+\.webhook\.office\.com|outlook\.office\.com/webhook)/[^\s'\"<>]{8,})",
        "a chat webhook URL (Slack, Discord, Teams): the URL itself is the credential",
        gates=("https://",),
    ),
    _shape(
        "docker-auth",
        r"\"auth\"\s*:\s*\"(?P<secret>[A-Za-z0-9+/=]{12,})\"",
        "a container-registry auth entry (\"auth\": \"base64…\")",
        gates=('"auth"',),
    ),
)

_BY_NAME = {shape.name: shape for shape in SHAPES}


@dataclass(frozen=True, slots=True)
class Hit:
    """One credential found in a text: its shape and where its secret part lies."""

    shape: str
    start: int
    end: int

    def describe(self) -> str:
        """The shape's description, for error messages."""
        return _BY_NAME[self.shape].description


def find_credentials(text: str) -> list[Hit]:
    """Every credential-shaped string in ``text``, in order of position."""
    hits: list[Hit] = []
    low: str | None = text.lower()
    if low is not None and len(low) != len(text):  # a character lower-cased to two: positions differ
        low = None
    for shape in SHAPES:
        for match in shape.matches(text, low):
            start, end = match.start("secret"), match.end("secret")
            if REDACTED in text[start:end]:
                continue
            hits.append(Hit(shape.name, start, end))
    return sorted(hits, key=lambda hit: (hit.start, hit.end))


def scrub_credentials(text: str, known: tuple[str, ...] | list[str] = ()) -> str:
    """``text`` with known secret values and every credential's secret part replaced."""
    for value in sorted((v for v in known if v and len(v) >= 4), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    hits = find_credentials(text)
    if not hits:
        return text
    out: list[str] = []
    pos = 0
    for hit in hits:
        if hit.start < pos:  # overlapping shapes: one replacement covers both
            pos = max(pos, hit.end)
            continue
        out.append(text[pos : hit.start])
        out.append(REDACTED)
        pos = hit.end
    out.append(text[pos:])
    return "".join(out)


#: Files larger than this are kept as they are (a raw file that size is sample data, not a log).
SCRUB_MAX_BYTES = 256 * 2**20


def scrub_bytes(data: bytes, known: tuple[str, ...] | list[str] = ()) -> bytes:
    """A file's bytes with credentials scrubbed: UTF-8 text as text, gzip decompressed and
    recompressed; anything else (binary, over :data:`SCRUB_MAX_BYTES`) returned as it is.
    Returns ``data`` itself (the same object) when nothing changed."""
    if len(data) > SCRUB_MAX_BYTES:
        return data
    packed = data[:2] == b"\x1f\x8b"
    try:
        body = gzip.decompress(data) if packed else data
        text = body.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error):
        return data
    cleaned = scrub_credentials(text, known)
    if cleaned == text:
        return data
    out = cleaned.encode("utf-8")
    return gzip.compress(out, mtime=0) if packed else out


def scrub_strings(value: Any) -> Any:
    """A JSON-like value with :func:`scrub_credentials` applied to every string in it."""
    if isinstance(value, str):
        return scrub_credentials(value)
    if isinstance(value, list):
        return [scrub_strings(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub_strings(v) for k, v in value.items()}
    return value
