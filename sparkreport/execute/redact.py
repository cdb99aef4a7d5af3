"""Secrets never reach the run store: variables by name, credentials by the look of them.

A variable is secret when its name contains TOKEN, KEY, SECRET, PASSWORD or CREDENTIAL, or
when its value looks like a credential (``hf_…``, ``ghp_…`` and other GitHub tokens,
``AKIA…`` AWS key ids, ``Bearer …``). Secret values are also scrubbed from every text file
kept beside run.json (logs, reports), wherever they appear.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"(?:\bhf_[A-Za-z0-9]{8,}|\bgh[pousr]_[A-Za-z0-9]{16,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bBearer\s+[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{16,})"
)


def is_secret(name: str, value: str) -> bool:
    """True when a variable must not be stored."""
    return bool(_SECRET_NAME.search(name)) or bool(_SECRET_VALUE.search(value))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables with secret values replaced (names kept, sorted)."""
    return {k: (REDACTED if is_secret(k, v) else v) for k, v in sorted(env.items())}


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The secret values of ``env`` (longest first, so substrings go last)."""
    values = {v for k, v in env.items() if v and len(v) >= 4 and is_secret(k, v)}
    return sorted(values, key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with known secret values and credential-looking strings replaced."""
    for value in secrets:
        text = text.replace(value, REDACTED)
    return _SECRET_VALUE.sub(REDACTED, text)


def redact_argv(argv: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command line with secrets replaced, including ``--token=…`` style options."""
    found = list(secrets)
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, sep, _ = arg.partition("=")
        if name.startswith("-") and _SECRET_NAME.search(name):
            if sep:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(redact_text(arg, found))
    return out
