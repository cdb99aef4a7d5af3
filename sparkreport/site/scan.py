"""The publish-time gate: scan a built site for credential shapes before it is published.

Recording by allowlist (:mod:`sparkreport.execute.envcapture`) is the first line of defence;
this is the second. ``sparkreport build`` scans everything it is about to publish — pages,
the search index, chart specs, run files, downloads, the feed, gzip files decompressed — with
the shapes of :mod:`sparkreport.secrets`, and a hit fails the build (:class:`PublishScanError`:
one line per hit naming the file, the line and the shape, never the value).

Fast enough for a 10 000-run site (~180 MiB): ``grep -E`` with :data:`PREFILTER_ERE` (a
superset of every shape) picks the files worth a full scan at C speed; in those, each shape's
regular expression runs only in a window around a literal anchor found with ``bytes.find``.
The vendored assets a build ships (Material's bundle, the Vega builds) are skipped when their
size matches the packaged file. Binary formats (images, fonts, Parquet) are not scanned; the
same data is in the CSV downloads, which are. Without ``grep`` every file gets the full scan.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkreport.errors import SparkreportError
from sparkreport.parallel import fork_map, split, workers_for
from sparkreport.secrets import REDACTED, SHAPES, Shape

#: Suffixes of files that are not text (never scanned). ``.gz`` is decompressed and scanned.
BINARY_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".ico", ".bmp", ".avif",
    ".woff", ".woff2", ".ttf", ".otf", ".eot", ".parquet", ".zip", ".pdf", ".wasm",
})
#: At most this many hits are listed in the error (then "… and N more").
MAX_LISTED = 20
FIX = "run `sparkreport scrub` on the run store, or remove the value from its source, then build again"
_REDACTED = REDACTED.encode()
#: Escaped quotes and ampersands as HTML and JSON write them, undone before the shapes run
#: (``"auth": "…"`` reaches the search index as ``\\"auth\\": \\"…\\"``).
_UNESCAPE = ((b'\\"', b'"'), (b"&quot;", b'"'), (b"&#34;", b'"'), (b"&#x27;", b"'"), (b"&#39;", b"'"),
             (b"&amp;", b"&"), (b"\\u0026", b"&"), (b"\\/", b"/"))


@dataclass(frozen=True, slots=True)
class _Probe:
    """How to look for one shape fast: literal anchors found with ``bytes.find`` (C speed), then
    the shape's regular expression run only in a window around each anchor."""

    shape: Shape
    pattern: re.Pattern[bytes]
    anchors: tuple[bytes, ...]
    lower: bool = False  # anchors are searched in the lower-cased text
    back: int = 2  # window: bytes before the anchor …
    fwd: int = 320  # … and after it
    follow: re.Pattern[bytes] | None = None  # must match right after the anchor (cheap filter)


_KEY_FOLLOW = re.compile(rb"[a-z_-]{0,10}\s{0,4}[=:]")
#: Per shape: anchors (one of which every match contains), window, filter.
_PROBE_ARGS: dict[str, dict[str, object]] = {
    "url-userinfo": {"anchors": (b"@",), "back": 440, "fwd": 1},
    "jwt": {"anchors": (b"eyJ",), "back": 1, "fwd": 16384},
    "key-value-secret": {"anchors": (b"key", b"pass", b"secret", b"token", b"_auth", b"sig"), "lower": True,
                         "back": 24, "fwd": 340, "follow": _KEY_FOLLOW},
    "secret-option": {"anchors": (b"token", b"key", b"passw", b"secret"), "lower": True, "back": 8, "fwd": 340},
    "short-password-field": {"anchors": (b"pw",), "lower": True, "back": 2, "fwd": 340},
    "private-key": {"anchors": (b"PRIVATE KEY-----",), "back": 40, "fwd": 1},
    "token-prefix": {"anchors": (b"hf_", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"glpat-",
                                 b"xox", b"sk-", b"sk_live_", b"AKIA", b"ASIA", b"AIza", b"npm_", b"pypi-",
                                 b"dop_v1_")},
    "bearer": {"anchors": (b"Bearer", b"Basic"), "back": 1, "fwd": 400},
    "webhook-url": {"anchors": (b"hooks.slack.com", b"discord", b"webhook"), "back": 64, "fwd": 1000},
    "docker-auth": {"anchors": (b'"auth"',), "back": 1, "fwd": 400},
}


def _probe(shape: Shape) -> _Probe:
    pattern = re.compile(shape.pattern.pattern.encode("ascii"))
    args = _PROBE_ARGS.get(shape.name)
    if args is None:  # a shape added to sparkreport.secrets without anchors: run it everywhere
        return _Probe(shape, pattern, (b"",), back=0, fwd=1 << 62)
    return _Probe(shape, pattern, **args)  # type: ignore[arg-type]


_PROBES: tuple[_Probe, ...] = tuple(_probe(shape) for shape in SHAPES)


@dataclass(frozen=True, slots=True)
class Finding:
    """A credential shape in a published file: where (site-relative path, line) and which shape."""

    path: str
    line: int
    shape: str
    description: str

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.description}"


class PublishScanError(SparkreportError):
    """The built site holds credential-shaped text: the build fails and nothing is published."""

    def __init__(self, site_label: str, findings: list[Finding]):
        self.findings = findings
        listed = [f"{site_label}/{f.describe()} — {FIX}" for f in findings[:MAX_LISTED]]
        if len(findings) > MAX_LISTED:
            listed.append(f"… and {len(findings) - MAX_LISTED} more")
        head = (f"{site_label}: not published — {len(findings)} credential-shaped "
                f"value{'s' if len(findings) != 1 else ''} found (the values are not shown):")
        super().__init__("\n".join([head, *listed]))


@functools.cache
def vendored_files() -> dict[str, int]:
    """Site-relative paths of the assets a build copies unchanged from installed packages
    (Material's scripts, styles and images; sparkreport's Vega builds), with their sizes (listed
    once a process: the packages a process has imported do not change under it)."""
    from sparkreport.published import ASSETS, TARGET

    out: dict[str, int] = {}
    roots: list[tuple[Path, str]] = [(ASSETS / "vendor", f"{TARGET}/vendor")]
    try:
        import material

        roots.append((Path(material.__file__).resolve().parent / "templates" / "assets", "assets"))
    except ImportError:  # pragma: no cover - Material is a dependency
        pass
    for root, prefix in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                out[f"{prefix}/{Path(path).relative_to(root).as_posix()}"] = os.path.getsize(path)
    return out


def scan_bytes(data: bytes) -> Iterator[tuple[Shape, int]]:
    """(shape, line number) of every credential shape in ``data``."""
    for old, new in _UNESCAPE:
        if old in data:
            data = data.replace(old, new)
    if b"\\u" in data:  # JSON's \u2026 for "…" (the search index): the character itself
        data = _JSON_ESCAPE.sub(_unescape_json, data)
    lower = b""
    text = ""  # latin-1 view of ``data`` (same positions) for shapes' ``before`` checks
    seen: set[tuple[str, int]] = set()
    for probe in _PROBES:
        if probe.lower and not lower:
            lower = data.lower()
        hay = lower if probe.lower else data
        for anchor in probe.anchors:
            i = hay.find(anchor)
            while i != -1:
                after = i + len(anchor)
                if probe.follow is None or probe.follow.match(hay, after):
                    window = (max(0, i - probe.back), min(len(data), after + probe.fwd))
                    for match in probe.pattern.finditer(data, *window):
                        secret = match.group("secret")
                        if (anchor and not match.start() <= i < match.end()) or _REDACTED in secret \
                                or _tag_only(secret):  # `password=</code>`: a tag, no value
                            continue
                        if probe.shape.before is not None:  # e.g. `--hf-token VALUE`, not `first-token (ms)`
                            text = text or data.decode("latin-1")
                            if not probe.shape.before(text, match.start()):
                                continue
                        key = (probe.shape.name, match.start("secret"))
                        if key not in seen:
                            seen.add(key)
                            yield probe.shape, data.count(b"\n", 0, match.start("secret")) + 1
                i = hay.find(anchor, after) if anchor else -1


_JSON_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")


def _unescape_json(match: re.Match[bytes]) -> bytes:
    code = int(match.group(1), 16)
    return match.group(0) if 0xD800 <= code < 0xE000 else chr(code).encode("utf-8")


def _tag_only(secret: bytes) -> bool:
    """The "value" is an HTML tag, or under four characters without a letter before one
    (``--hf-token …</code>`` in a page documenting the option, not a token)."""
    head = secret.split(b"<", 1)[0] if b"<" in secret else None
    return head is not None and (len(head) < 4 or not re.search(rb"[A-Za-z0-9]", head))


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read()
    if path.endswith(".gz"):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return data  # not gzip after all: scan what is there
    return data


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


#: A POSIX extended regular expression that every credential shape implies (a superset, in
#: plain or JSON/HTML-escaped text): ``grep -E`` picks the files worth the full scan at C speed.
PREFILTER_ERE = "|".join([
    r":(\\?/){2}[^[:space:]]*@",
    r"eyJ[A-Za-z0-9_-]{8}",
    # every key name of the key-value shape ends in one of these words, right before its = or :
    # (so "max tokens: 4096", in every TensorRT-LLM log, is not picked)
    "(" + "|".join(_any_case(w) for w in ("key", "secret", "token", "_auth", "sig", "signature", "password",
                                          "passwd"))
    + r")[[:space:]]*[=:]",
    # an option's name: the run of letters, digits, - and _ that holds the word starts with -
    # (secrets._in_option), after the start, a character that is none of those, or a JSON \u
    # escape (the Python scan reads the character it stands for) — so "Inter-token " and
    # "time-to-first-token ", in every page and the search index, are not picked
    r"(^|[^A-Za-z0-9_-]|\\u[0-9a-fA-F]{4})-[A-Za-z0-9_-]*("
    + "|".join(_any_case(w) for w in ("token", "key", "passw", "secret")) + r")[a-zA-Z]{0,4}([[:space:]]|=)",
    "(^|[;?&[:space:]\"'])(" + _any_case("pwd") + "|" + _any_case("pw") + r")[[:space:]]*=",
    "PRIVATE KEY-----",
    r"hf_|gh[pousr]_|github_pat_|glpat-|xox|sk-|sk_live_|AKIA|ASIA|AIza|npm_|pypi-|dop_v1_",
    r"(Bearer|Basic)[[:space:]]",
    r"hooks\.slack\.com|discord|webhook",
    r'auth(\\?"|&quot;|&#34;)',
])


def _grep() -> str | None:
    import shutil

    return shutil.which("grep")


def _prefilter() -> str | None:
    """The ``grep`` that runs :data:`PREFILTER_ERE`, or None: no grep, or a shape added to
    :mod:`sparkreport.secrets` without its probe (and so, likely, without its part of the ERE),
    which turns the prefilter off — never a hit missed."""
    return _grep() if all(shape.name in _PROBE_ARGS for shape in SHAPES) else None


def _prefiltered(paths: list[str], grep: str) -> set[str] | None:
    """The files among ``paths`` (plain text) that ``grep -E`` finds a possible credential in;
    None when grep failed (then every file gets the full scan)."""
    import subprocess

    found: set[str] = set()
    env = {**os.environ, "LC_ALL": "C"}
    for start in range(0, len(paths), 2000):  # keep argv well under the system limit
        chunk = paths[start:start + 2000]
        proc = subprocess.run([grep, "-alE", "-e", PREFILTER_ERE, "--", *chunk], capture_output=True, env=env,
                              check=False)
        if proc.returncode not in (0, 1):
            return None
        found.update(os.fsdecode(line) for line in proc.stdout.splitlines())
    return found


def _candidates(datas: list[bytes], grep: str) -> set[int] | None:
    """Indices of the texts (decompressed files, pieces of a file) that ``grep -E`` finds a
    possible credential in: one grep per 64 MiB batch of texts, joined by newlines (a match never
    spans a line), its ``-b`` byte offsets mapped back to texts; None when grep failed."""
    import bisect
    import subprocess

    found: set[int] = set()
    env = {**os.environ, "LC_ALL": "C"}
    index = 0
    while index < len(datas):
        batch: list[bytes] = []
        starts: list[int] = []
        size = 0
        while index < len(datas) and (not batch or size + len(datas[index]) < 64 << 20):
            starts.append(size)
            batch.append(datas[index])
            size += len(datas[index]) + 1
            index += 1
        proc = subprocess.run([grep, "-aboE", "-e", PREFILTER_ERE], input=b"\n".join(batch), capture_output=True,
                              env=env, check=False)
        if proc.returncode not in (0, 1):
            return None
        first = index - len(batch)
        for line in proc.stdout.split(b"\n"):
            offset, _, _match = line.partition(b":")
            if offset.isdigit():
                found.add(first + bisect.bisect_right(starts, int(offset)) - 1)
    return found


def clean_pieces(pieces: list[bytes]) -> set[int] | None:
    """Of ``pieces`` of a file's text, each whole lines, the indices of those in which the
    prefilter (``grep -E`` with :data:`PREFILTER_ERE`) finds nothing: a file all of whose pieces
    are clean is one :func:`scan_files` reads no further, and :func:`vouch` vouches for (the
    prefilter reads line by line, and a line lies in one piece). None without the prefilter
    (:func:`_prefilter`) — the full scan, which then reads every file, may match across lines —
    or when grep failed."""
    grep = _prefilter()
    found = _candidates(pieces, grep) if grep is not None else None
    return None if found is None else set(range(len(pieces))) - found


def is_binary(name: str) -> bool:
    """Whether a file named ``name`` is a binary format the scan does not read (a ``.gz`` of
    one too)."""
    stem, dot, suffix = name.lower().rpartition(".")
    return bool(dot) and ("." + suffix in BINARY_SUFFIXES
                          or (suffix == "gz" and "." + stem.rpartition(".")[2] in BINARY_SUFFIXES))


def vouch(files: list[tuple[str, str]]) -> set[str]:
    """Of ``files`` ((site path, path)), the site paths of those this scan reads, in this
    process, and finds no credential shape in — never a binary format, which it does not read
    (:data:`~sparkreport.render.core.Vouch`: what the render's Downloads files are scanned with
    where they are written)."""
    text = [(relative, path) for relative, path in files if not is_binary(relative)]
    found = {finding.path for finding in scan_files(text, forked=False)}
    return {relative for relative, _path in text if relative not in found}


def site_files(site_dir: Path) -> list[tuple[str, str]]:
    """(site-relative path, path) of every file to scan: no symlinks, no binary formats, and
    the vendored assets left out when unchanged. Plain strings, not Paths: a 10 000-run site
    has tens of thousands of files."""
    vendored = vendored_files()
    out: list[tuple[str, str]] = []

    def walk(folder: str, prefix: str) -> None:  # as os.walk, top-down, names sorted: no stat a file
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:  # (as os.walk: a folder that cannot be listed is passed over)
            return
        folders = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry)
            elif entry.is_symlink():
                continue  # the site's own files are never links; a link is not published content
            elif not is_binary(entry.name):
                relative = prefix + entry.name
                size = vendored.get(relative)
                if size is not None and size == entry.stat(follow_symlinks=False).st_size:
                    continue
                out.append((relative, entry.path))
        for entry in folders:
            walk(entry.path, f"{prefix}{entry.name}/")

    walk(str(site_dir), "")
    return out


class ScanMemo:
    """What earlier scans found clean, so a rebuild scans only what is new: per site path the
    (inode, size, mtime_ns, sha256) of the file scanned clean. A file with the same inode, size
    and mtime (a hard link of the live site's file, which was scanned before it was published)
    is skipped without reading; any other file whose content digest was scanned clean is
    skipped after hashing. Kept in the build cache (``scanned.pickle`` and its journal of what
    each build changed, :class:`~sparkreport.cache.JournaledDict`); another version of the
    shapes or of this scanner starts it empty."""

    FILE = "scanned.pickle"

    def __init__(self, path: Path | None = None):
        self.path = path
        self.files: dict[str, list[Any]] = {}
        self.fresh: dict[str, list[Any]] = {}
        #: The files carried over unscanned (:meth:`keep`), and those whose entries :meth:`adopt` took.
        self.carried: set[str] = set()
        self.adopted: set[str] = set()
        self.scanned = 0
        from sparkreport.cache import JournaledDict

        self.kept = JournaledDict(path, scanner_signature(), "files")
        self.files = dict(self.kept.entries)
        self.digests = {entry[3] for entry in self.files.values()}

    def known_clean(self, relative: str, path: str) -> bool:
        """Whether ``path`` (site path ``relative``) was scanned clean before; remembers it either way."""
        stat = os.stat(path)
        stamp = [stat.st_ino, stat.st_size, stat.st_mtime_ns]
        old = self.files.get(relative)
        if old is not None and old[:3] == stamp:
            self.fresh[relative] = old
            return True
        with open(path, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        self.fresh[relative] = [*stamp, digest]
        return digest in self.digests

    def adopt(self, clean: dict[str, list[Any]]) -> None:
        """Take what another scan found clean (site path → inode, size, mtime_ns, sha256: the
        run files scanned where they were published, the Downloads files where they were
        written): a file with the same inode, size and mtime is then not read again, and one
        with the same content (a copy) is hashed, not scanned."""
        self.files.update(clean)
        self.adopted.update(clean)
        self.digests.update(entry[3] for entry in clean.values())

    def clean_entries(self, findings: list[Finding]) -> dict[str, list[Any]]:
        """What this scan learnt of the files it found nothing in (for :meth:`adopt`)."""
        dirty = {finding.path for finding in findings}
        return {relative: entry for relative, entry in self.fresh.items() if relative not in dirty}

    def keep(self, paths: list[str]) -> None:
        """Keep what is known of files that were not scanned because the site kept them as they
        were (the run files carried over from the live site): :meth:`save` keeps their entries as
        the file holds them (20 000 at 10 000 runs, not copied one by one after the swap)."""
        self.carried.update(paths)

    def save(self) -> None:
        """Record the files of a site that was scanned clean (call only then)."""
        if self.path is None:
            return
        fresh, carried = self.fresh, self.carried
        # a carried file whose entry this build learnt anew (from another scan: adopt) keeps that
        # one, as taking it from ``files`` would; the others keep the file's own
        for relative in self.adopted:
            if relative in carried and relative not in fresh:
                fresh[relative] = self.files[relative]
        # what changed, appended to its journal (a new run: a few lines)
        self.kept.save(fresh, also=carried)
        self.path.with_name("scanned.json").unlink(missing_ok=True)  # the layout before the pickle


def scanner_signature() -> str:
    """A digest of the shapes and of this scanner: a file clean for other code is scanned again."""
    from sparkreport import secrets
    from sparkreport.cache import code_signature

    return code_signature(secrets.__file__, __file__)


def scan_site(site_dir: Path, *, prefilter: bool = True, memo: ScanMemo | None = None,
              forked: bool = True) -> list[Finding]:
    """Every credential shape in the files of a built site, in path order.

    With ``prefilter`` (and a ``grep`` on the PATH), plain files go through :data:`PREFILTER_ERE`
    first and only those it matches are scanned in Python; gzip files are decompressed and
    handed to grep on stdin. Without grep every file is scanned in Python (same result, slower).
    With a ``memo``, files it knows clean are left out (:class:`ScanMemo`). ``forked=False``
    scans in this process only (the run-file publisher, itself a process beside the build: its
    workers' batches of decompressed samples were the cold build's peak of memory).
    """
    files = list(site_files(site_dir))
    if memo is not None:
        files = [(relative, path) for relative, path in files if not memo.known_clean(relative, path)]
        memo.scanned = len(files)
    return scan_files(files, prefilter=prefilter, forked=forked)


def scan_files(files: list[tuple[str, str]], *, prefilter: bool = True, forked: bool = True) -> list[Finding]:
    """Every credential shape in ``files`` ((site-relative path, path) of text files, as
    :func:`site_files` lists them), in their order: what :func:`scan_site` does once it has
    its list."""
    grep = _prefilter() if prefilter else None
    plain = [path for _relative, path in files if not path.endswith(".gz")]
    candidates = _prefiltered(plain, grep) if grep is not None else None
    todo = [(relative, path) for relative, path in files
            if path.endswith(".gz") or candidates is None or path in candidates]

    def findings_of(share: list[tuple[str, str]]) -> dict[str, list[Finding]]:
        out = _packed_findings([(r, p) for r, p in share if p.endswith(".gz")], grep)
        for relative, path in share:
            if not path.endswith(".gz"):
                with open(path, "rb") as handle:
                    found = _file_findings(relative, handle.read())
                if found:
                    out[path] = found
        return out

    # The candidates' regular expressions and the decompression run in Python: many files go to
    # forked workers (sparkreport.parallel), a share each.
    workers = workers_for(len(todo), per_worker=FILES_PER_WORKER) if forked else 0
    found: dict[str, list[Finding]] = {}
    if workers:
        shares = split(todo, workers * 4)
        for part in fork_map(lambda index: findings_of(list(shares[index])), len(shares), workers):
            found.update(part)
    else:
        found = findings_of(todo)
    return [finding for _relative, path in files for finding in found.get(path, [])]


#: Files a worker scans in Python at least (fewer than twice this: the build's process does it).
FILES_PER_WORKER = 250


def _file_findings(relative: str, data: bytes) -> list[Finding]:
    """The findings in one file's bytes, one per shape and line."""
    out: list[Finding] = []
    seen: set[tuple[str, int]] = set()
    for shape, line in scan_bytes(data):
        if (shape.name, line) not in seen:
            seen.add((shape.name, line))
            out.append(Finding(relative, line, shape.name, shape.description))
    return out


#: Decompressed bytes of gzip files held at once by the scan (the samples of an hour-long run are
#: tens of MB each: a hundred of them at once was most of a cold build's peak memory).
PACKED_BATCH = 64 << 20


def _packed_findings(files: list[tuple[str, str]], grep: str | None) -> dict[str, list[Finding]]:
    """path → findings of each gzip file, decompressed a batch of about :data:`PACKED_BATCH`
    bytes at a time (each batch prefiltered by grep when there is one)."""
    out: dict[str, list[Finding]] = {}
    index = 0
    while index < len(files):
        batch: list[tuple[str, str, bytes]] = []
        size = 0
        while index < len(files) and (not batch or size < PACKED_BATCH):
            relative, path = files[index]
            data = _read(path)
            batch.append((relative, path, data))
            size += len(data)
            index += 1
        hits = _candidates([data for _r, _p, data in batch], grep) if grep is not None else None
        for k, (relative, path, data) in enumerate(batch):
            if hits is None or k in hits:
                found = _file_findings(relative, data)
                if found:
                    out[path] = found
    return out


def check_site(site_dir: Path, label: str | None = None, memo: ScanMemo | None = None) -> None:
    """Raise :class:`PublishScanError` when ``site_dir`` holds a credential shape (the files
    ``memo`` knows clean are not read again)."""
    findings = scan_site(site_dir, memo=memo)
    if findings:
        raise PublishScanError(label or str(site_dir), findings)
