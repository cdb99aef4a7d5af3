"""Secrets never reach the run store: argv and text scrubbed before anything is written.

The environment itself is recorded by allowlist (:mod:`sparkreport.execute.envcapture`); this
module scrubs what is left: the *known secrets* (the distinctive values of the variables left
out, see :func:`~sparkreport.execute.envcapture.known_secrets`) and every credential shape
(:mod:`sparkreport.secrets`) from argv, logs, raw files, the journal and the campaign copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sparkreport.execute.envcapture import SECRET_NAME
from sparkreport.secrets import REDACTED, scrub_credentials

#: ``--hf-token``, ``--api-key``, ``--password``: the option's value is secret.
_SECRET_OPTION = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
#: ``NAME=value`` as ``env``/``chroot … env -i`` take it.
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with known secret values and credential shapes replaced."""
    return scrub_credentials(text, tuple(secrets))


def redact_argv(argv: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """A command line with secrets replaced: known values, credential shapes, the value of a
    ``--token=…``/``--api-key …`` style option and of a ``HF_TOKEN=…`` style assignment."""
    found = tuple(secrets)
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, sep, _ = arg.partition("=")
        if name.startswith("-") and _SECRET_OPTION.search(name):
            if sep:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                hide_next = True
            continue
        if sep and _ENV_ASSIGNMENT.match(name) and SECRET_NAME.search(name):
            out.append(f"{name}={REDACTED}")
            continue
        out.append(redact_text(arg, found))
    return out
