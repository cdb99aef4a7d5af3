"""What a run records of its environment: the values of an allowlist of variables, nothing else.

The names and the shapes of secrets are open-ended, so sparkreport does not try to recognise
them in the environment. It records the values only of variables that can change a benchmark's
result (:data:`ALLOWLIST`, extended by a campaign's ``env_allowlist:``) and of the variables the
campaign sets itself; every other variable is left out entirely (not even its name: a name such
as ``ACME_PROD_DB_URL`` says something about the machine, and a run page has no use for it) and
only their number is kept (``env_vars_unrecorded``). Recorded values still pass
:func:`sparkreport.secrets.scrub_credentials` (a proxy URL with a password in an allowlisted
variable loses the password).

The values of the variables left out are *known secrets*: they are scrubbed wherever they turn
up (argv, logs, raw files, the journal) when they are distinctive enough to scrub safely — see
:func:`known_secrets` for the rule.

Only the standard library and :mod:`sparkreport.secrets` are imported, so the record loader
(:mod:`sparkreport.schema`) and the publishing side can call :func:`allowed_env` cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparkreport.secrets import REDACTED, scrub_credentials


@dataclass(frozen=True, slots=True)
class Allowed:
    """One allowlist entry: an exact name or a ``PREFIX_*`` pattern, and why it is on the list."""

    pattern: str
    why: str


#: The variables whose values a run records, each with the reason it can change a result.
ALLOWLIST: tuple[Allowed, ...] = (
    Allowed("CUDA_*", "device selection and CUDA runtime behaviour (CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, …)"),
    Allowed("CUBLAS_*", "cuBLAS workspace and determinism settings"),
    Allowed("CUBLASLT_*", "cuBLASLt logging and heuristics"),
    Allowed("CUDNN_*", "cuDNN algorithm selection"),
    Allowed("NCCL_*", "collective communication (transport, algorithm, buffer sizes)"),
    Allowed("NVIDIA_*", "container runtime: visible devices, driver capabilities, CUDA requirement"),
    Allowed("TRTLLM_*", "TensorRT-LLM switches"),
    Allowed("TLLM_*", "TensorRT-LLM switches (short prefix)"),
    Allowed("VLLM_*", "vLLM switches (attention backend, V1 engine, …)"),
    Allowed("PYTORCH_*", "PyTorch allocator and kernel settings (PYTORCH_CUDA_ALLOC_CONF, …)"),
    Allowed("TORCH_*", "PyTorch compile and runtime switches"),
    Allowed("TORCHINDUCTOR_*", "torch.compile code generation"),
    Allowed("TRITON_*", "Triton kernel cache and compilation"),
    Allowed("OMP_*", "OpenMP thread count and binding"),
    Allowed("MKL_*", "MKL threads"),
    Allowed("OPENBLAS_*", "OpenBLAS threads"),
    Allowed("KMP_*", "Intel OpenMP runtime (affinity, fork behaviour)"),
    Allowed("UCX_*", "UCX transports (multi-node)"),
    Allowed("FI_*", "libfabric provider (multi-node)"),
    Allowed("HF_HUB_OFFLINE", "whether models are downloaded"),
    Allowed("HF_HUB_ENABLE_HF_TRANSFER", "download path"),
    Allowed("HF_HUB_CACHE", "where models are read from"),
    Allowed("HF_HOME", "where models are read from"),
    Allowed("HF_DATASETS_OFFLINE", "whether data sets are downloaded"),
    Allowed("HF_DATASETS_CACHE", "where data sets are read from"),
    Allowed("TRANSFORMERS_OFFLINE", "whether models are downloaded"),
    Allowed("TRANSFORMERS_CACHE", "where models are read from"),
    Allowed("TOKENIZERS_PARALLELISM", "tokenizer threads"),
    Allowed("LD_LIBRARY_PATH", "which CUDA, cuDNN and NCCL libraries load"),
    Allowed("LD_PRELOAD", "libraries forced into the process (allocators, profilers)"),
    Allowed("PATH", "which binaries run"),
    Allowed("PYTHONHASHSEED", "hash randomisation (ordering, sampling)"),
    Allowed("PYTHONPATH", "which Python modules load"),
    Allowed("MALLOC_ARENA_MAX", "host allocator behaviour"),
    Allowed("SPARKREPORT_*", "sparkreport's own switches"),
)

#: ``NAME`` or ``PREFIX_*`` (a campaign's ``env_allowlist:`` entries).
PATTERN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:_\*)?$")

#: Names whose values are never recorded, even when a campaign sets them or allowlists them.
SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|APIKEY)S?(?:_|$)",
                         re.IGNORECASE)

#: A known secret shorter than this is not scrubbed from text (it would mangle the text).
MIN_SECRET_CHARS = 8

_COMMON_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "noninteractive",
                           "xterm-256color", "screen-256color", "dumb"})
#: ``en_US.UTF-8``, ``C.UTF-8``: a locale is not a secret (and turns up in many logs).
_LOCALE = re.compile(r"^[A-Za-z]{1,3}(?:_[A-Za-z]{2})?\.[A-Za-z0-9-]+(?:@\w+)?$")


def pattern_error(pattern: str) -> str | None:
    """None when ``pattern`` is a valid ``env_allowlist:`` entry, else what is wrong (a phrase)."""
    if not PATTERN_RE.match(pattern):
        return f"{pattern!r} is neither a variable name nor PREFIX_* (letters, digits and _, then optionally _*)"
    if SECRET_NAME.search(pattern.removesuffix("*")):
        return f"{pattern!r} names a secret (TOKEN, KEY, SECRET, PASSWORD, CREDENTIAL or AUTH): never recorded"
    return None


def is_allowed(name: str, extra: Iterable[str] = ()) -> bool:
    """True when ``name``'s value may be recorded (built-in allowlist or ``extra`` patterns)."""
    if SECRET_NAME.search(name):
        return False
    for pattern in (*(entry.pattern for entry in ALLOWLIST), *extra):
        if pattern.endswith("*"):
            if name.startswith(pattern[:-1]):
                return True
        elif name == pattern:
            return True
    return False


#: A URL's userinfo, whatever it holds: ``scheme://user@`` (a token as user name) or ``scheme://user:password@``.
_USERINFO = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<secret>[^\s/?#@'\"<>]+)@")
#: A value in a URL's query (or a path's: ``/tmp/nccl.%h?pw=…``), whatever its key is called.
_QUERY_VALUE = re.compile(r"[?&][^\s=&#?]*=(?P<secret>[^\s&#]+)")


def _structure_spans(value: str) -> list[tuple[int, int]]:
    """Where in ``value`` a URL's userinfo and its query's values lie, in order."""
    spans = [m.span("secret") for m in _USERINFO.finditer(value)] if "@" in value else []
    if "?" in value:
        spans += [m.span("secret") for m in _QUERY_VALUE.finditer(value, value.index("?"))]
    return sorted(spans)


def scrub_structure(value: str) -> str:
    """A recorded value with the parts that carry credentials whatever they are called removed:
    a URL's userinfo (``https://[REDACTED]@host``) and every value of a query
    (``?sig=[REDACTED]&se=[REDACTED]``). The allowlisted variables hold switches, numbers and
    paths, so nothing a result depends on is lost; a credential in a form no shape of
    :mod:`sparkreport.secrets` knows (an odd query key, an opaque token as a URL's user) is."""
    out, pos = [], 0
    for start, end in _structure_spans(value):
        if end > pos:  # a URL in a query's value: one replacement covers both
            out += [value[pos:max(start, pos)], REDACTED]
            pos = end
    return "".join([*out, value[pos:]])


def structure_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """What recording ``env``'s values removes from them (:func:`scrub_structure`), keyed
    ``NAME#i``: as secret as the values of the variables left out (a benchmark that prints the
    variable prints them whole)."""
    return {f"{name}#{index}": part for name, value in env.items()
            for index, part in enumerate(str(value)[start:end] for start, end in _structure_spans(str(value)))
            if part != REDACTED}


def scrub_value(name: str, value: str) -> str:
    """A value as recorded: all of it when the name says secret, else credential shapes
    scrubbed and a URL's userinfo and query values removed (:func:`scrub_structure`)."""
    if SECRET_NAME.search(name):
        return REDACTED
    return scrub_structure(scrub_credentials(value))


def allowed_env(env: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The allowlisted variables of ``env`` (sorted by name), their values scrubbed of credentials."""
    patterns = tuple(extra)
    return {name: scrub_value(name, str(value)) for name, value in sorted(env.items())
            if is_allowed(name, patterns)}


def recorded_env(details: Mapping[str, object]) -> dict[str, str] | None:
    """What a record's ``environment.details`` may show of ``env_vars``: the allowlisted ones,
    those of the record's own ``env_allowlist`` and the names the campaign declared itself
    (``env_declared``), values scrubbed. None when the record has no ``env_vars`` mapping.
    The record loader and ``sparkreport scrub`` both apply it, so an old record holding a
    machine's whole environment is never read (or published) beyond this."""
    env_vars = details.get("env_vars")
    if not isinstance(env_vars, Mapping):
        return None
    extra, declared = details.get("env_allowlist"), details.get("env_declared")
    patterns = [p for p in extra if isinstance(p, str) and pattern_error(p) is None] \
        if isinstance(extra, list) else []
    names = {n for n in declared if isinstance(n, str)} if isinstance(declared, list) else set()
    return {str(name): scrub_value(str(name), str(value)) for name, value in sorted(env_vars.items())
            if str(name) in names or is_allowed(str(name), patterns)}


@dataclass(frozen=True, slots=True)
class Capture:
    """What a run records of its process environment."""

    values: dict[str, str]
    unrecorded: int


def capture_env(process_env: Mapping[str, str], declared: Mapping[str, str],
                extra: Iterable[str] = ()) -> Capture:
    """The recorded variables of a process (allowlisted or ``declared`` by the campaign) and how
    many were left out. What to scrub from text is the runner's
    (:meth:`~sparkreport.execute.runner.CampaignRunner.known_secrets`: the left-out values and
    what recording the others removes)."""
    patterns = tuple(extra)
    values = allowed_env(process_env, patterns)
    for name, value in declared.items():
        values[name] = scrub_value(name, str(value))
    unrecorded = sum(1 for k in process_env if k not in values)
    return Capture(values=dict(sorted(values.items())), unrecorded=unrecorded)


def _is_path_like(value: str) -> bool:
    parts = [p for p in value.split(":") if p]
    return bool(parts) and all(p.startswith(("/", "~", ".")) and "@" not in p and "=" not in p for p in parts)


def known_secrets(env: Mapping[str, str], exclude: Iterable[str] = ()) -> list[str]:
    """The values of ``env`` worth scrubbing wherever they appear, longest first.

    The rule: at least :data:`MIN_SECRET_CHARS` characters, with a letter in it, neither a
    filesystem path or path list (``/root``, ``/usr/bin:/bin``) nor a common word (``true``,
    ``noninteractive``) or a locale (``en_US.UTF-8``), and not a value that is recorded anyway (``exclude``). Shorter or
    commoner values ("1", "C.UTF-8", "/root") are left alone: replacing them would mangle logs
    and argv, and they are not what a credential looks like.
    """
    skip = {str(v) for v in exclude}
    found = {v for v in (str(x) for x in env.values())
             if len(v) >= MIN_SECRET_CHARS and any(c.isalpha() for c in v)
             and v.strip().lower() not in _COMMON_WORDS and not _LOCALE.match(v) and not _is_path_like(v)
             and v not in skip}
    return sorted(found, key=lambda v: (-len(v), v))


def scrub_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with known secret values and credential shapes replaced."""
    return scrub_credentials(text, tuple(secrets))


def scrub_env_lines(lines: Iterable[str], extra: Iterable[str] = (),
                    keep: Iterable[str] = ()) -> list[str]:
    """``NAME=value`` lines (``docker inspect``'s ``Config.Env``) down to allowlisted or ``keep`` names."""
    patterns, kept = tuple(extra), set(keep)
    out: list[str] = []
    for line in lines:
        name, sep, value = str(line).partition("=")
        if sep and (name in kept or is_allowed(name, patterns)):
            out.append(f"{name}={scrub_value(name, value)}")
    return out


def allowlist_markdown() -> str:
    """The allowlist as a Markdown table (the docs page shows the same list)."""
    rows = ["| variable | why it is recorded |", "|---|---|"]
    rows += [f"| `{entry.pattern}` | {entry.why} |" for entry in ALLOWLIST]
    return "\n".join(rows)
