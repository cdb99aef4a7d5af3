"""Names that users give (models, campaigns, environments, labels) and the paths made from them.

Three rules, applied where a name enters (ingest, run.json) or becomes a path (render):

* A name is at most :data:`MAX_NAME_CHARS` characters; a longer one is refused with a message
  that says so (it would otherwise fail later as "File name too long").
* Bidirectional control characters (U+200E/F, U+202A–202E, U+2066–2069) are **stripped** from
  names, with a warning kept on the run: they let one name display as another in titles and
  tables, and no model or campaign name needs them.
* Page paths are unique: names whose file-safe forms collide (``foo/bar`` and ``foo bar`` both
  become ``foo-bar``) each get a short hash of the full name as a suffix; the display name is
  kept as it was.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterable
from typing import Any

from sparkreport.schema import RunRecord, slug

#: The longest model, campaign, environment or label name accepted (file names end at 255 bytes).
MAX_NAME_CHARS = 200
#: A run id longer than this is shortened, with a hash of the whole id kept as its suffix.
MAX_ID_CHARS = 180

BIDI_CONTROLS = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def strip_bidi(text: str) -> str:
    """``text`` without bidirectional control characters."""
    return BIDI_CONTROLS.sub("", text)


def has_bidi(text: str) -> bool:
    return BIDI_CONTROLS.search(text) is not None


def too_long(kind: str, text: str) -> str | None:
    """The complaint about a name longer than :data:`MAX_NAME_CHARS`, or None when it fits."""
    if len(text) <= MAX_NAME_CHARS:
        return None
    return f"{kind} is {len(text)} characters long (at most {MAX_NAME_CHARS}): {text[:40]!r}…"


def short_id(text: str) -> str:
    """``text`` itself, or when longer than :data:`MAX_ID_CHARS` its start plus a hash of all of it."""
    if len(text) <= MAX_ID_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{text[:MAX_ID_CHARS - 11]}-{digest}"


def unique_slugs(names: Iterable[str]) -> dict[str, str]:
    """A file-safe, unique path component for each distinct name.

    Names whose slugs collide (also when they differ only in letter case, for case-insensitive
    file systems) each get ``-<6 hex digits of sha256(name)>``; the others keep their plain slug,
    so adding a colliding model changes no other page's address.
    """
    distinct = sorted(set(names))
    groups: dict[str, list[str]] = {}
    for name in distinct:
        groups.setdefault(slug(name).casefold(), []).append(name)
    out: dict[str, str] = {}
    for members in groups.values():
        for name in members:
            plain = slug(name)
            if len(members) == 1:
                out[name] = plain
            else:
                digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:6]
                out[name] = f"{plain}-{digest}"
    return out


def shown(path: os.PathLike[str] | str) -> str:
    """A path for a message, whatever bytes its name holds (undecodable bytes as ``\\xNN``)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_clean_name(name: str) -> bool:
    """Whether a file name is valid UTF-8 (no surrogate escapes from undecodable bytes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def name_order(name: str) -> tuple[str, str]:
    """Where a model's name sorts on the pages: case folded ("alpha" before "Beta", "gemma"
    before "Qwen"), then as written (two names that differ only in case keep one order)."""
    return name.casefold(), name


@functools.lru_cache(maxsize=8192)
def natural_key(text: str) -> tuple[Any, ...]:
    """A sort key that orders the numbers inside ``text`` by value (1.4.9 before 1.4.10). Kept per
    text: the pages sort thousands of rows by a few dozen campaign names (7 000 calls after a new
    run at 10 000 runs)."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


@functools.lru_cache(maxsize=8192)
def campaign_order(name: str) -> tuple[Any, ...]:
    """Where a campaign sorts wherever campaigns are listed by name — Home, the Results pages'
    tables of several campaigns, Data quality, Methodology, Downloads: the numbers in its name by
    value (:func:`natural_key`: "v0.9.0" before "v0.10.0", a campaign per release in release
    order), then as written."""
    return natural_key(name), name


def model_order(name: str, key: str = "") -> tuple[str, str, str]:
    """Where a model sorts wherever models are listed — the Results pages and their overview, the
    statistics and comparisons (and ``sparkreport stats`` and ``compare``), Home's and the campaign
    pages' tables and answers, Memory, Runs, Data quality, the diffs and History alike: by ``name``,
    the name the pages show it by (its display name), as :func:`name_order` sorts names ("gemma"
    before "Phi", "Llama-3-70B" before "llama-3-8b"), then by ``key``, its name in the store (two
    models shown under one name keep one order)."""
    return *name_order(name), key


def arm_order(campaign: str, model_name: str, model: str, level: str, baseline: str | None) -> tuple[Any, ...]:
    """Where an arm (``campaign`` × model × ``level``) sorts wherever arms are listed — Data
    quality's findings and Methodology's arms, Memory's tables and budget, History's series: by
    :func:`campaign_order`, then :func:`model_order` (``model_name``, the name the pages show,
    then ``model``, its key), then :func:`level_order` (``baseline`` first)."""
    return *campaign_order(campaign), *model_order(model_name, model), *level_order(level, baseline)


def level_order(level: str, baseline: str | None) -> tuple[bool, str, str]:
    """Where a level of the factor (an environment, with the factor ``environment``) sorts
    wherever levels are listed — statistics, comparisons, charts, Runs, Memory, the campaign
    pages and ``sparkreport stats`` alike: ``baseline`` first, then the others by name as
    :func:`name_order` sorts them. A reader finds the reference row on top and the same order on
    every page; where ``baseline`` is None or not among them, the order is by name alone."""
    return level != baseline, *name_order(level)


#: How many values an error message lists before it says "… and N more".
SHOWN_VALUES = 8


def shown_values(values: Iterable[object], limit: int = SHOWN_VALUES, empty: str = "none", sep: str = ", ") -> str:
    """Values for a one-line message, cut short: ``a, b, c, … and 97 more`` (``empty`` when none);
    ``sep="; "`` for values that may hold commas of their own (campaign titles).

    Every error that lists what is allowed (models, campaigns, labels, metrics) goes through
    here, so a store of 10 000 runs still gives a one-line error.
    """
    items = [str(value) for value in values]
    if not items:
        return empty
    if len(items) <= limit:
        return sep.join(items)
    return sep.join(items[:limit]) + f"{sep}… and {len(items) - limit:,} more"


def clean_names(record: RunRecord) -> int:
    """Strip bidirectional control characters from every name a record shows (model, display
    name, campaign, environment, label keys and values); returns how many were removed."""
    before = _name_chars(record)
    model, environment = record.model, record.environment
    model.name = strip_bidi(model.name)
    if model.display_name is not None:
        model.display_name = strip_bidi(model.display_name)
    if model.id is not None:
        model.id = strip_bidi(model.id)
    record.campaign = strip_bidi(record.campaign)
    environment.name = strip_bidi(environment.name)
    record.labels = {strip_bidi(k): strip_bidi(v) for k, v in record.labels.items()}
    return before - _name_chars(record)


def _name_chars(record: RunRecord) -> int:
    model = record.model
    texts = [model.name, model.display_name or "", model.id or "", record.campaign, record.environment.name,
             *record.labels, *record.labels.values()]
    return sum(len(text) for text in texts)


def name_problems(record: RunRecord) -> list[str]:
    """Names of a record longer than :data:`MAX_NAME_CHARS` (each as a complaint)."""
    named = [("model name", record.model.name), ("display name", record.model.display_name),
             ("campaign name", record.campaign), ("environment name", record.environment.name),
             *((f"label {key[:40]!r}", value) for key, value in record.labels.items()),
             *(("label name", key) for key in record.labels)]
    return [problem for kind, text in named if text and (problem := too_long(kind, text))]


#: The fix for a title that is not text.
TITLE_FIX = 'write it in quotes: title: "what the pages call it"'


def title_problem(value: object) -> str | None:
    """What is wrong with a ``title:`` value (of sparkreport.yml, a campaign file or a published
    summary), or None: a title is text; an empty one is said so (None from YAML is ``title:``
    with nothing after it)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return "is empty"
    if not isinstance(value, str):
        kind = {list: "a list", dict: "a mapping", bool: "true/false"}.get(type(value), "a number")
        return f"must be text, not {kind}"
    return None


def title_text(value: str) -> str:
    """A title as the pages show it: its whitespace folded, bidirectional controls dropped."""
    return " ".join(strip_bidi(value).split())


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option ``word`` most likely misspells (difflib's ratio ≥ 0.6), or None: the "did you
    mean" of every unknown name the project refuses."""
    import difflib

    found = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return found[0] if found else None
