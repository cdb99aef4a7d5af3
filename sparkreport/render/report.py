"""What the report pages say, computed once: campaigns and their questions, the headline effects,
findings grouped for a reader, and which error findings concern which page.

The pages read these instead of listing every comparison sentence: a visitor sees the question,
the answer with its numbers and intervals, and what the checks found, in that order; every
sentence stays one click away on the Results and Data quality pages.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.analysis.checks import check_title
from sparkreport.dataset import frame_rows, model_name_of
from sparkreport.figures import is_missing
from sparkreport.names import campaign_order, level_order, model_order, name_order
from sparkreport.render.markdown import margin_text
from sparkreport.render.tables import metric_label

if TYPE_CHECKING:
    import pandas as pd
    from markupsafe import Markup

    from sparkreport.analysis import Finding
    from sparkreport.charts import ChartSpec
    from sparkreport.config import ProjectConfig
    from sparkreport.dataset import Dataset
    from sparkreport.render.context import SiteData
    from sparkreport.schema import RunRecord

#: An arm key: (campaign, model, factor level).
ArmKey = tuple[str, str, str]

#: A finding's arm: campaign[/model[/environment, or factor=level as the checks name a label's arm
#: (a level is any text without a colon or a slash)]].
_PREFIX = re.compile(r"^[\w.\-]+(?:/[\w.\-]+)*(?:/[\w.\-]+=[^:/\n]+)?: ")


def message_where(message: str) -> str:
    """What a finding's message is about: its 'campaign/model/environment' prefix ('' if none)."""
    found = _PREFIX.match(message)
    return found.group(0)[:-2] if found else ""


def message_campaign(message: str) -> str:
    """The campaign a finding's message is about: the first part of its prefix ('' if none)."""
    return message_where(message).split("/")[0]


#: A metric's name as a finding's message writes it ("ttft_ms_mean 6.0%"), not a part of a
#: dotted setting, a path, a command's argument or code.
_METRIC_NAME = re.compile(r"(?<![\w.`/=-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w`/=-]|\.\w)")


def labelled(text: str) -> str:
    """``text`` with each catalogued metric name in it as the pages call the metric, written as
    a sentence carries it: "CV above 5% over 10 runs — time to first token (mean) 6.0%", "the
    source does not report memory before KV cache" (an acronym keeps its capitals). The checks
    write the names (findings.csv and ``--json`` keep them); the pages say the labels."""
    from sparkreport import metrics as metric_catalog

    def label(found: re.Match[str]) -> str:
        name = found.group(0)
        if metric_catalog.lookup(name) is None:
            return name
        text = metric_label(name)
        return text[:1].lower() + text[1:] if text[1:2].islower() else text

    return _METRIC_NAME.sub(label, text)


def message_body(message: str) -> str:
    """A finding's message without its 'campaign/model/environment: ' prefix, as a sentence, its
    metrics named by their labels (:func:`labelled`)."""
    body = labelled(_PREFIX.sub("", message, count=1).strip())
    if re.match(r"[a-z]+(?=[\s,:;])", body):  # a word, not a name ("gpt-oss-120b and …" stays as is)
        body = body[:1].upper() + body[1:]
    return body + ("" if body.endswith(".") else ".")


@dataclass
class Campaign:
    """One campaign as a reader meets it: its question, design and where the data came from."""

    name: str
    description: str
    published: bool
    models: list[str]
    #: The levels of the factor its runs carry (its environments with the factor ``environment``).
    levels: list[str]
    runs: int
    #: Its arms of the comparisons: campaign × model × level of the factor (a campaign none of
    #: whose runs carries a level of it: campaign × model × environment, as its Results rows).
    arms: int
    gpus: list[str] = field(default_factory=list)
    unified: bool | None = None
    pools_gib: list[float] = field(default_factory=list)
    source: str = ""
    design: dict[str, Any] = field(default_factory=dict)
    #: The configured baseline when one of ``levels`` (then the first), else None: the pages
    #: never name another level the baseline.
    baseline: str | None = None
    #: What the pages call it (:func:`campaign_titles`); the name when none is given.
    title: str = ""
    #: The environments its runs were made in (what ``levels`` is with the factor ``environment``).
    environments: list[str] = field(default_factory=list)
    #: The question it answers (Home and its page open on it): sparkreport.yml's
    #: ``campaigns.<name>.question``, else the campaign file's description; empty when neither.
    question: str = ""

    def __post_init__(self) -> None:
        self.title = self.title or self.name

    @property
    def slug(self) -> str:
        from sparkreport.schema import slug

        return slug(self.name)

    @property
    def path(self) -> str:
        return f"campaigns/{self.slug}/index.md"


def _campaign_file(runs_dir: Path, campaign: str) -> dict[str, Any]:
    """The campaign file kept beside executed runs (``_campaign/campaign.yaml``), or {}."""
    import yaml

    path = runs_dir / campaign / "_campaign" / "campaign.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _campaign_entry(records: list[RunRecord]) -> dict[str, Any]:
    """What :func:`campaigns` says of one campaign, from its records: models, levels, GPUs,
    memory, runs and published arms, the published source's note and title."""
    entry: dict[str, Any] = {
        "models": {}, "levels": [], "gpus": [], "unified": set(), "pools": set(), "notes": [], "titles": [],
        "runs": 0, "published": 0, "arms": set()}
    for record in records:
        entry["models"].setdefault(record.model.name, model_name_of(record))
        level = record.environment.name
        if level not in entry["levels"]:
            entry["levels"].append(level)
        if record.hardware.gpu_name and record.hardware.gpu_name not in entry["gpus"]:
            entry["gpus"].append(record.hardware.gpu_name)
        if record.hardware.unified_memory is not None:
            entry["unified"].add(bool(record.hardware.unified_memory))
        if record.hardware.memory_pool_gib is not None:
            entry["pools"].add(round(float(record.hardware.memory_pool_gib), 2))
        if record.record_type == "arm_summary":
            entry["published"] += 1
        else:
            entry["runs"] += 1
        entry["arms"].add((record.model.name, level))
        for note in record.provenance.notes:
            if note.startswith("published in:") and note not in entry["notes"]:
                entry["notes"].append(note)
    entry["titles"] = published_titles(records)
    return entry


def published_titles(records: Iterable[RunRecord]) -> list[str]:
    """The ``title:`` s of the published summaries among ``records`` (each summary's records carry
    it as a note, ``TITLE_NOTE``), each once, in record order."""
    from sparkreport.schema import TITLE_NOTE

    titles: list[str] = []
    for record in records:
        if record.record_type != "arm_summary":
            continue
        for note in record.provenance.notes:
            title = note.removeprefix(TITLE_NOTE).strip() if note.startswith(TITLE_NOTE) else ""
            if title and title not in titles:
                titles.append(title)
    return titles


def campaigns(site: SiteData) -> list[Campaign]:
    """Every campaign in the store, with its title (:func:`campaign_title_of`), description (the
    campaign file's), question (sparkreport.yml's, else that description; a published source is
    not a question: the pages name it where they say where the figures come from) and design
    (iterations, order, cooldown) where recorded."""
    cached = site.extra.get("_campaigns")
    if cached is not None:
        return list(cached)
    by_name = site.per_campaign("campaign-entry", _campaign_entry)
    arms_by_level: dict[str, set[tuple[str, str]]] = {}  # a factor other than environment: its levels' arms
    if site.config.factor != "environment":
        for campaign_name, model, level in site.level_runs():
            arms_by_level.setdefault(campaign_name, set()).add((model, level))
    out = []
    titles: dict[str, str] = {}
    for name in sorted(by_name, key=campaign_order):
        entry = by_name[name]
        environments = sorted(entry["levels"], key=lambda lv: level_order(lv, site.config.baseline))
        if site.config.factor != "environment":
            # a campaign none of whose runs carries a level keeps its environments' arms (published
            # figures: each arm as published), as its models' Results rows do; it has no levels
            arms = arms_by_level.get(name, set())
            entry = {**entry, "levels": list(dict.fromkeys(level for _, level in sorted(arms))),
                     "arms": arms or entry["arms"]}
        doc = _campaign_file(site.runs_dir, name)
        titles[name] = campaign_title_of(site.config, name, doc, entry["titles"])
        configured = site.config.campaigns.get(name)
        description = " ".join(str(doc.get("description") or "").split())
        source = entry["notes"][0].removeprefix("published in:").strip() if entry["notes"] else ""
        design: dict[str, Any] = {key: doc[key] for key in ("iterations", "order", "cache", "cooldown", "seed")
                                  if key in doc}
        if "cache" in design:  # a campaign file writes one state as text, several as a list
            design["cache"] = [str(v) for v in (design["cache"] if isinstance(design["cache"], list)
                                                else [design["cache"]])]
        baseline = site.config.baseline
        levels = sorted(entry["levels"], key=lambda lv: level_order(lv, baseline))
        out.append(Campaign(
            name=name, description=description, published=entry["runs"] == 0,
            question=(configured.question if configured is not None and configured.question else description),
            models=[model_name for _key, model_name in sorted(entry["models"].items(),
                                                               key=lambda item: model_order(item[1], item[0]))],
            levels=levels, runs=entry["runs"], arms=len(entry["arms"]), gpus=entry["gpus"],
            unified=(True in entry["unified"]) if entry["unified"] else None,
            pools_gib=sorted(entry["pools"]), source=source, design=design,
            baseline=baseline if baseline in levels else None, environments=environments))
    shown = unique_titles(titles)
    for campaign in out:
        campaign.title = shown[campaign.name]
    site.extra["_campaigns"] = out
    return list(out)


def campaign_title_of(config: ProjectConfig, name: str, doc: dict[str, Any], published: list[str]) -> str:
    """What the pages call campaign ``name``: sparkreport.yml's ``campaigns.<name>.title``, else
    the ``title:`` of its campaign file (``doc``, the copy kept beside executed runs), else the
    first ``title:`` of the published summaries ingested into it (``published``, in record
    order), else the name itself. Bidirectional control characters are dropped, as from names."""
    from sparkreport.names import title_problem, title_text

    configured = config.campaigns.get(name)
    found = doc.get("title")  # checked when the campaign ran (execute.campaign); an older copy may hold anything
    for title in (configured.title if configured is not None else None,
                  None if title_problem(found) else found, *published):
        if title and title_text(title):
            return title_text(title)
    return name


def unique_titles(titles: dict[str, str]) -> dict[str, str]:
    """``titles`` (name → title) with each title two campaigns share followed by the campaign's
    name in brackets: a reader must tell every heading, nav entry and table cell apart."""
    from collections import Counter

    counts = Counter(titles.values())
    return {name: f"{title} ({name})" if counts[title] > 1 and title != name else title
            for name, title in titles.items()}


def campaign_titles(site: SiteData) -> dict[str, str]:
    """Campaign name → its title, for every campaign in the store (see :func:`campaigns`)."""
    cached = site.extra.get("_campaign_titles")
    if cached is None:
        cached = site.extra["_campaign_titles"] = {c.name: c.title for c in campaigns(site)}
    return cached  # shared: do not modify


def store_campaign_titles(dataset: Dataset, runs_dir: Path, config: ProjectConfig) -> dict[str, str]:
    """Campaign name → its title, for every campaign of ``dataset`` (the run store ``runs_dir``):
    what the site built from that store calls each (:func:`campaign_titles`, by the same rule:
    :func:`campaign_title_of`, then :func:`unique_titles`), without building it — what `sparkreport
    diff --markdown` names campaigns by. Of the records, only the published summaries are read."""
    summaries: dict[str, list[RunRecord]] = {}
    for index, key in enumerate(dataset.record_keys()):
        if key.record_type == "arm_summary":
            summaries.setdefault(key.campaign, []).append(dataset.records[index])
    return unique_titles({name: campaign_title_of(config, name, _campaign_file(runs_dir, name),
                                                  published_titles(summaries.get(name, [])))
                          for name in dataset.campaigns()})


def campaign_title(site: SiteData, name: str) -> str:
    """What the pages call campaign ``name`` (the name itself for one not in the store, such as
    the History page's "across campaigns")."""
    return campaign_titles(site).get(str(name), str(name))


def run_arms(site: SiteData) -> dict[str, ArmKey]:
    """run id → (campaign, model, level), from the arm index the site already holds."""
    cached = site.extra.get("_run_arms")
    if cached is None:
        cached = {run: key for key, runs in site.arm_runs().items() for run in runs}
        site.extra["_run_arms"] = cached
    return cached  # shared: do not modify


def finding_arms(site: SiteData, finding: Finding) -> set[ArmKey]:
    """The arms a finding concerns (through its runs)."""
    index = run_arms(site)
    return {index[run] for run in finding.runs if run in index}


def errors_in(site: SiteData, scope: Iterable[tuple[str, str]] | None) -> list[Finding]:
    """The error-level findings that concern a page: all of them for ``scope`` None, else those
    touching a (campaign, model) pair of ``scope``; a finding with no runs concerns every page."""
    if scope is None:
        return site.errors
    wanted = set(scope)
    out = []
    for finding in site.errors:
        arms = finding_arms(site, finding)
        if not arms or any((c, m) in wanted for c, m, _ in arms):
            out.append(finding)
    return out


def grouped(site: SiteData, table: str, column: str) -> Groups:
    """``site.<table>`` (``stats``, ``comparisons``, ``runs``) split by ``column`` once per render,
    rows in their order: the pages index it by key instead of filtering the whole frame per page."""
    key = f"_grouped:{table}:{column}"
    cached = site.extra.get(key)
    if cached is None:
        cached = site.extra[key] = Groups(getattr(site, table), column)
    assert isinstance(cached, Groups)
    return cached


class Groups(Mapping[str, "pd.DataFrame"]):
    """A table split by one column's values (as text): each value's rows, in their order and with
    their index, as ``frame.groupby(column)`` gives them — but only the positions are found up
    front, and the first :attr:`ONE_BY_ONE` groups asked for are taken from the table one by one.
    A build after one new run fills two or three pages that read a model's or a campaign's rows:
    taking every group of the runs table (84 columns, 20 models) was 0.2 s of its fill. A
    process that asks for more (a cold build fills every page) gets the rest in one pass of
    ``groupby``, cheaper than a take per group (150 of the runs table cost a cold build 0.4 s)."""

    #: Groups taken one by one before the rest are taken at once.
    ONE_BY_ONE = 4

    def __init__(self, frame: pd.DataFrame, column: str):
        self.frame = frame
        self.column = column
        self.positions: dict[str, Any] = ({} if frame.empty or column not in frame.columns else
                                          {str(value): rows for value, rows
                                           in frame.groupby(column, sort=False, observed=True).indices.items()})
        self.taken: dict[str, pd.DataFrame] = {}

    def __getitem__(self, key: str) -> pd.DataFrame:
        found = self.taken.get(key)
        if found is None:
            rows = self.positions[key]  # KeyError for a value the table does not hold
            if len(self.taken) < self.ONE_BY_ONE:
                found = self.taken[key] = self.frame.take(rows)
            else:
                self.taken = {str(value): group for value, group
                              in self.frame.groupby(self.column, sort=False, observed=True)}
                found = self.taken[key]
        return found

    def among(self, key: str, column: str, values: Iterable[str]) -> pd.DataFrame | None:
        """``self[key]``'s rows whose ``column`` (as text) is one of ``values``, in their order
        (None: the table has no rows for ``key``), taken from the table once: a model page that
        shows some of its model's campaigns took the model's rows, then cut them again (two
        takes of the runs table's 84 columns, a third of the page's fill). When every row is
        kept, the group itself (as ``self[key]``): copy it before changing it."""
        rows = self.positions.get(key)
        if rows is None:
            return None
        found = self.taken.get(key)
        cells = self.frame[column].take(rows) if found is None else found[column]
        keep = cells.astype(str).isin(set(values)).to_numpy()
        return self[key] if keep.all() else self.frame.take(rows[keep])

    def cells(self, key: str, column: str) -> pd.Series | None:
        """One column of ``key``'s rows (None: no such rows), without taking the others: what
        a page's key asks of every campaign (its environments, the metrics it compares)."""
        rows = self.positions.get(key)
        return None if rows is None else self.frame[column].take(rows)

    def __contains__(self, key: object) -> bool:
        return key in self.positions

    def __iter__(self) -> Iterator[str]:
        return iter(self.positions)

    def __len__(self) -> int:
        return len(self.positions)


def environment_colours(site: SiteData) -> dict[str, str]:
    """Each environment of the site's records, and each level of its factor (what the Results
    charts draw where the factor is a label), → its colour on every chart that colours by
    environment (:func:`sparkreport.charts.environment_colours`: the baseline first, then the
    others by name), once per render: an environment has one colour on every page that draws
    with them, whatever else a chart shows. A page drawing them reads them (its ``also_reads``):
    an environment new to the site can move another's colour."""
    cached = site.extra.get("_environment_colours")
    if cached is None:
        from sparkreport.charts import environment_colours as colours

        names = {environment for _campaign, _model, environment in site.arm_runs()}
        names |= {level for _campaign, _model, level in site.level_runs()}
        cached = site.extra["_environment_colours"] = colours(names, baseline=site.config.baseline)
    return dict(cached)


def slice_digest(site: SiteData, table: str, column: str | tuple[str, ...], value: str | tuple[str, ...]) -> str:
    """The sha256 of the rows of ``site.<table>`` whose ``column`` is ``value`` (what a page
    reads of an analysis result, for its cache key); 'none' when there are none. ``column``
    may name several columns, ``value`` then being one value per column.

    Only the columns holding a value in those rows count (each by its name, its dtype and its
    cells): a label key that a run of another campaign brings adds a column that is empty here,
    which changes nothing a page of these rows shows — and so renders none of them again. Rows
    of the runs table (:data:`RUN_ROW_TABLES`) count by their runs instead of their cells
    (:func:`column_hashes`). Each group's digest is of its rows' hashes (:func:`row_hashes`), in
    order: one sha256 of a few hundred bytes per group (the 1 650 groups a build's planning asks
    for at 10 000 runs: 0.02 s, against 0.07–0.1 s when each group's cells were cut out)."""
    import hashlib

    columns = [column] if isinstance(column, str) else list(column)
    key = f"_digests:{table}:{','.join(columns)}"
    digests = site.extra.get(key)
    if digests is None:
        frame = getattr(site, table)
        digests = {}
        if not frame.empty and set(columns) <= set(frame.columns):
            rows = row_hashes(site, table)
            by = columns[0] if len(columns) == 1 else columns
            for name, positions in frame.groupby(by, sort=False, observed=True).indices.items():
                name_key = str(name) if len(columns) == 1 else tuple(map(str, name))
                digests[name_key] = hashlib.sha256(rows[positions].tobytes()).hexdigest()
        site.extra[key] = digests
    return str(digests.get(value if isinstance(value, str) else tuple(value), "none"))


def row_hashes(site: SiteData, table: str) -> Any:
    """One 64-bit hash per row of ``site.<table>`` (once per render), of the cells that hold a
    value, each by its column's name and dtype: the sum, modulo 2⁶⁴, of each such cell's hash
    (:func:`column_hashes`) times its column's odd multiplier plus its column's offset (both
    from the sha256 of the column's name and dtype; the offset, so that a value whose hash is 0 —
    pandas hashes 0.0 so — still counts). A missing cell adds nothing, so a column empty in a row
    is as if the table had no such column; a value moved to another column, or another dtype,
    changes the row's hash. A row of :data:`RUN_ROW_TABLES` is its run's hash
    (:func:`column_hashes`) and which columns hold a value in it (the sum of their offsets).

    A row's hash is of that row alone, so a table the analysis cache kept whole
    (:attr:`~sparkreport.render.context.SiteData.wholes`) keeps its rows' hashes with it, by
    campaign (:func:`kept_row_hashes`): a new run's build hashes its campaign's rows only."""
    key = f"_row_hashes:{table}"
    cached = site.extra.get(key)
    if cached is None:
        frame = getattr(site, table)
        heads = column_heads(frame)
        handed, whole = site.wholes.get(table, (None, None))
        if whole is not None and handed is frame:  # (the table as the analysis handed it out)
            cached = kept_row_hashes(site, table, frame, heads, whole)
        elif table == "runs" and site.analysis_cache is not None:
            cached = cached_run_row_hashes(site, frame, heads)
        if cached is None:
            cached = frame_row_hashes(site, table, frame, heads)
        site.extra[key] = cached
    return cached


def column_heads(frame: Any) -> list[str]:
    """Each column's name and dtype, as :func:`row_hashes` weighs its cells by."""
    return [f"{name}:{dtype}" for name, dtype in zip(frame.columns, frame.dtypes, strict=True)]


def frame_row_hashes(site: SiteData, table: str, frame: Any, heads: list[str]) -> Any:
    """:func:`row_hashes` of ``frame`` (``site.<table>`` or some of its rows; ``heads``: its
    :func:`column_heads`)."""
    import hashlib

    import numpy as np

    hashes, present = column_hashes(site, table, frame)
    digests = [hashlib.sha256(head.encode()).digest() for head in heads]
    multipliers = np.array([int.from_bytes(d[:8], "big") | 1 for d in digests], dtype=np.uint64)
    offsets = np.array([int.from_bytes(d[8:16], "big") for d in digests], dtype=np.uint64)
    if table in RUN_ROW_TABLES:
        shown = np.where(present, offsets, np.uint64(0)).sum(axis=1, dtype=np.uint64)
        return hashes[:, 0] * np.uint64(RUN_ROW_MIX) + shown
    cells = hashes * multipliers + offsets
    return np.where(present, cells, np.uint64(0)).sum(axis=1, dtype=np.uint64)


def kept_row_hashes(site: SiteData, table: str, frame: Any, heads: list[str], whole: Any) -> Any:
    """:func:`row_hashes` of ``frame``, the table ``whole`` (a
    :class:`~sparkreport.analysis.splice.Whole`) holds, one block a campaign (its spans): each
    campaign's kept with it while the columns' heads are the same (a splice keeps the unchanged
    campaigns'), the others' made (:func:`blocks_hashed`), and all of them kept with it for the
    next build."""
    import numpy as np

    kept: dict[str, Any] = whole.row_hashes[1] if whole.row_hashes is not None and whole.row_hashes[0] == heads else {}
    spans = sorted(((name, start, stop) for name, (start, stop) in whole.spans.items()), key=lambda span: span[1])
    made = dict(zip((name for name, _start, _stop in spans),
                    blocks_hashed(site, table, frame, heads, spans, lambda name, _start, _stop: kept.get(name)),
                    strict=True))
    if made.keys() != kept.keys() or any(made[name] is not kept[name] for name in made):
        whole.row_hashes = (heads, made)  # (one assignment: a save may be pickling it meanwhile)
        if site.analysis_cache is not None:
            site.analysis_cache.whole_annotated()
    return np.concatenate(list(made.values())) if made else np.zeros(0, dtype=np.uint64)


def cached_run_row_hashes(site: SiteData, frame: Any, heads: list[str]) -> Any:
    """:func:`row_hashes` of the runs table ``frame`` (``site.runs``), each campaign's rows' kept
    in the analysis cache by what they are made from: the campaign's runs and which of them are
    included, why not the others (:func:`~sparkreport.analysis.arms.campaign_digests`), their
    folders, and the table's columns (``heads``). None when a campaign's rows are not one block."""
    import hashlib

    import numpy as np
    import pandas as pd

    from sparkreport.analysis.arms import campaign_digests

    cache = site.analysis_cache
    assert cache is not None
    if frame.empty:
        return None
    codes, names = pd.factorize(frame["campaign"].astype(str))
    edges = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), len(frame)]
    if len(edges) - 1 != len(names):  # (a campaign in two blocks)
        return None
    spans = [(str(names[codes[start]]), start, stop) for start, stop in zip(edges, edges[1:], strict=False)]
    digests = campaign_digests(site.dataset, site.config.analysis)
    if any(name not in digests for name, _start, _stop in spans):
        return None
    columns = hashlib.sha256("\0".join(heads).encode()).hexdigest()
    folders = frame["run_path"].astype(str).tolist()
    keys = {name: cache.key(("kind", "run-row-hashes-1"), ("columns", columns), ("runs", digests[name]),
                            ("folders", "\0".join(folders[start:stop]))) for name, start, stop in spans}
    kept = {name: cache.get("run-row-hashes", keys[name]) for name, _start, _stop in spans}
    parts = blocks_hashed(site, "runs", frame, heads, spans, lambda name, _start, _stop: kept[name])
    for (name, _start, _stop), rows in zip(spans, parts, strict=True):
        if rows is not kept[name]:
            cache.put("run-row-hashes", keys[name], rows)
    return np.concatenate(parts)


def blocks_hashed(site: SiteData, table: str, frame: Any, heads: list[str], spans: list[tuple[str, int, int]],
                  kept: Callable[[str, int, int], Any]) -> list[Any]:
    """The row hashes (:func:`frame_row_hashes`) of each block of ``frame`` (``spans``: each
    campaign's name, first row and end, in order): ``kept(name, start, stop)`` where it gives
    them for that many rows, else made — block by block, or the whole table at once when most
    blocks miss (a first build: a block's hashing costs about as much as a small table's)."""
    from sparkreport.cache import AnalysisCache

    found = [kept(*span) for span in spans]
    found = [rows if rows is not None and len(rows) == stop - start else None
             for rows, (_name, start, stop) in zip(found, spans, strict=True)]
    missing = sum(rows is None for rows in found)
    every = frame_row_hashes(site, table, frame, heads) if missing > AnalysisCache.WHOLE_WHEN_MISSING * len(spans) \
        else None
    return [rows if rows is not None else every[start:stop].copy() if every is not None
            else frame_row_hashes(site, table, frame.iloc[start:stop], heads)
            for rows, (_name, start, stop) in zip(found, spans, strict=True)]


#: An odd 64-bit constant (2⁶⁴ over the golden ratio) that a run's hash is multiplied by before
#: the columns holding a value in its row are added (:func:`row_hashes`).
RUN_ROW_MIX = 0x9E3779B97F4A7C15


#: How many campaigns a page that spans campaigns shows in full: the newest, by the start of
#: their last run. The older ones are named with a link to where they are in full, so a page
#: stays a report when a store holds one campaign per release. With this many campaigns or
#: fewer, every one is shown.
CAMPAIGNS_IN_FULL = 5


def _run_times(site: SiteData) -> tuple[dict[str, Any], bool, bool]:
    """:func:`campaign_times`; whether any run's time is a local start time with no time zone (a
    vLLM result file's ``date``); and whether a campaign with run times has runs without one (its
    trtllm-bench logs, beside vLLM results that have one). Computed once per render, campaign by
    campaign: with the build's analysis cache, each campaign's three are kept by the digest of its
    runs (:func:`_campaign_run_times`), so a new run reads its own campaign's times only (parsing
    10 000 runs' start times was 0.015–0.025 s of every build's planning)."""
    cached = site.extra.get("_campaign_times")
    if cached is None:
        dataset, cache = site.dataset, site.analysis_cache
        times: dict[str, Any] = {}
        naive = untimed = False
        if not dataset.runs.empty:
            named = list(dict.fromkeys(dataset.runs["campaign"].astype(str).tolist()))  # (in the runs' order)
            keys, kept = {}, {}
            if cache is not None:
                keys = {campaign: cache.key(("kind", "campaign-times-1"), ("runs", digest))
                        for campaign, digest in dataset.campaign_digests().items()}
                kept = {campaign: cache.get("campaign-times", key) for campaign, key in keys.items()}
            missing = [campaign for campaign in named if kept.get(campaign) is None]
            found = _campaign_run_times(dataset.runs, missing) if missing else {}
            for campaign, value in found.items():
                if cache is not None and campaign in keys:
                    cache.put("campaign-times", keys[campaign], value)
            for campaign in named:
                last, campaign_naive, campaign_untimed = found.get(campaign) or kept[campaign]
                times[campaign] = last
                naive, untimed = naive or campaign_naive, untimed or campaign_untimed
        cached = site.extra["_campaign_times"] = (times, naive, untimed)
    return cached


def _campaign_run_times(runs: pd.DataFrame, campaigns: list[str]) -> dict[str, tuple[Any, bool, bool]]:
    """Of each of ``campaigns`` (their rows of the runs table): the start of its last run that
    records one, whether a run's time was a local one with no time zone, and whether it has runs
    without a time beside runs with one."""
    import pandas as pd

    named = runs["campaign"].astype(str)
    wanted = named.isin(campaigns).to_numpy()
    runs, named = runs.loc[wanted, ["started_at", "started_at_local"]], named[wanted]  # (these columns only)
    started = pd.to_datetime(runs["started_at"], utc=True, errors="coerce", format="ISO8601", cache=False)
    # A run with no UTC start (a vLLM result file's date, an ingested study's timestamp)
    # counts by its local one: exact where it carries its offset, else off by the time
    # zone's hours, which orders campaigns run days apart all the same.
    local_text = runs["started_at_local"].astype("string")
    local = pd.to_datetime(local_text, utc=True, errors="coerce", format="ISO8601", cache=False)
    used_local = started.isna() & local.notna()
    naive = used_local & ~local_text.str.contains(r"(?:Z|[+-]\d\d:?\d\d)$", na=False)
    started = started.fillna(local)
    by = started.groupby(named, sort=False)
    last, timed, rows = by.max(), by.count(), by.size()
    naive_in = naive.groupby(named, sort=False).any()
    return {str(campaign): (last[campaign], bool(naive_in[campaign]), bool(0 < timed[campaign] < rows[campaign]))
            for campaign in last.index}


def campaign_times(site: SiteData) -> dict[str, Any]:
    """Campaign → the start of its last run that records one (UTC; NaT for published figures,
    which have none, and for a campaign none of whose runs records it). A run that records no UTC
    start counts by its local one (vLLM's result files give only that): converted where it
    carries its offset, else read as if UTC."""
    return dict(_run_times(site)[0])


def newest_rule(site: SiteData) -> str:
    """How the pages that show the newest campaigns chose them, in words (after "newest"):
    by their last run when every campaign has run times, else what :func:`newest_campaigns`
    falls back to; saying so where some runs of a campaign record no time (its last timed run
    counts) and where a run's time is a local one with no time zone."""
    import pandas as pd

    times, naive, untimed = _run_times(site)
    known = sum(1 for t in times.values() if not pd.isna(t))
    if not known:
        return "by name, as no run records when it ran"
    rule = ("by their last timed run" if untimed else "by their last run") + \
        (", in local time where a run records no UTC time" if naive else "")
    if known == len(campaigns(site)):
        return rule
    return rule + ", a campaign without run times counting as oldest"


def newest_campaigns(site: SiteData, names: Iterable[str]) -> tuple[list[str], list[str]]:
    """``names`` split into (shown in full, earlier): the :data:`CAMPAIGNS_IN_FULL` newest by
    their last run (a campaign without a run time counts as oldest; names break ties), and the
    rest. Each list in name order, as the pages list campaigns."""
    names = sorted(set(names))
    if len(names) <= CAMPAIGNS_IN_FULL:
        return names, []
    shown = set(sorted(names, key=recency(site))[-CAMPAIGNS_IN_FULL:])
    return [n for n in names if n in shown], [n for n in names if n not in shown]


def recency(site: SiteData) -> Callable[[str], tuple[Any, ...]]:
    """A sort key for campaign names, oldest first: the start of the campaign's last run (a
    campaign without a run time counts as oldest), then the name, its numbers by value
    (:func:`~sparkreport.names.campaign_order`: "v0.10.0" after "v0.9.0")."""
    import pandas as pd

    times = campaign_times(site)
    epoch = pd.Timestamp(0, tz="UTC")

    def when(name: str) -> tuple[Any, ...]:
        found = times.get(name)
        return (epoch if found is None or pd.isna(found) else found, campaign_order(name))

    return when


def campaign_split(site: SiteData) -> tuple[set[str], set[str]]:
    """Of every campaign in the store, the newest shown in full by the pages that span the whole
    site (Home, Methodology) and the rest, whose own pages say it all (:func:`newest_campaigns`)."""
    shown, earlier = newest_campaigns(site, [c.name for c in campaigns(site)])
    return set(shown), set(earlier)


#: The site's tables whose rows are rows of the runs table (``level_runs_frame``: with its
#: factor's level as the environment). Such a row is made from its run.json alone, in its folder,
#: typed as its whole column is, and marked included or not by the analysis options (which other
#: campaigns' runs can change): the run.json's digest, the folder and the inclusion stand for
#: its cells, the column heads for its types.
RUN_ROW_TABLES = ("runs", "level_runs_frame")


def column_hashes(site: SiteData, table: str, frame: Any) -> tuple[Any, Any]:
    """Of ``frame`` (``site.<table>`` or some of its rows): one 64-bit hash per cell (rows ×
    columns; values and dtypes) and whether each cell holds a value. For a table of
    :data:`RUN_ROW_TABLES`, one hash per row, of its run (hashing the 84 columns of 10 000 runs'
    rows took 0.09 s of every build). A cell's hash is of that cell alone, whatever rows are
    hashed with it."""
    import numpy as np
    import pandas as pd

    if table in RUN_ROW_TABLES:  # (column by column, combined per row: no Python loop over the runs)
        runs = pd.DataFrame({"digest": frame["run_id"].map(site.dataset.run_digests), "folder": frame["run_path"],
                             "included": frame["included"], "reason": frame["exclusion_reason"]})
        return pd.util.hash_pandas_object(runs, index=False).to_numpy()[:, None], frame.notna().to_numpy()
    hashes = np.empty((len(frame), len(frame.columns)), dtype=np.uint64)
    by_dtype: dict[Any, list[int]] = {}  # numpy's numbers and booleans, a pass per dtype
    for position, dtype in enumerate(frame.dtypes):
        if numpy_hashable(dtype):
            by_dtype.setdefault(dtype, []).append(position)
    for dtype, numbers in by_dtype.items():
        stacked = np.column_stack([frame.iloc[:, p].to_numpy(dtype=dtype) for p in numbers])
        hashes[:, numbers] = hash_numbers(stacked)
    done = {position for numbers in by_dtype.values() for position in numbers}
    for position in (p for p in range(len(frame.columns)) if p not in done):
        cells = frame.iloc[:, position]
        try:
            hashes[:, position] = pd.util.hash_pandas_object(cells, index=False).to_numpy()
        except TypeError:  # a cell pandas cannot hash (a list): each cell of such a column by its text
            hashes[:, position] = [cell_text_hash(cell) for cell in cells]
    # pandas hashes -0.0 as 0.0, which a page shows otherwise ("-0.0"): a cell's sign counts
    for position, dtype in enumerate(frame.dtypes):
        if pd.api.types.is_float_dtype(dtype):
            values = frame.iloc[:, position].to_numpy(dtype=float, na_value=np.nan)
            hashes[(values == 0) & np.signbit(values), position] ^= np.uint64(NEGATIVE_ZERO)
    return hashes, frame.notna().to_numpy()


def cell_text_hash(cell: object) -> int:
    """A cell pandas cannot hash (a list) by its text; a cell it can as pandas hashes it alone —
    so a cell's hash does not depend on whether a list is among the rows hashed with it."""
    import pandas as pd

    try:
        return int(pd.util.hash_array(pd.array([cell], dtype=object).to_numpy())[0])
    except TypeError:
        return hash_text([str(cell)])


#: Mixed into the hash of a cell holding -0.0 (:func:`column_hashes`), which pandas hashes as 0.0.
NEGATIVE_ZERO = 0x5BD1E9955BD1E995


def numpy_hashable(dtype: Any) -> bool:
    """Whether a column of ``dtype`` is one :func:`hash_numbers` hashes (numpy's 64-bit floats and
    integers, its booleans), not an extension type pandas hashes its own way."""
    import numpy as np

    return isinstance(dtype, np.dtype) and (dtype.kind == "b" or (dtype.kind in "fiu" and dtype.itemsize == 8))


def hash_numbers(values: Any) -> Any:
    """``pd.util.hash_pandas_object(column, index=False)`` of each column of ``values`` (a 2-D
    array of columns of one :func:`numpy_hashable` dtype: float64, int64, uint64 or bool), the
    same 64-bit hashes in one pass: a float's bits with NaN and -0.0 made canonical, an
    integer's or boolean's value, each mixed as pandas' ``_hash_ndarray`` mixes them (the
    splitmix64 finaliser). :func:`column_hashes` stacks the columns of each dtype apart (stacked
    together, integers would be floats, whose hashes differ)."""
    import numpy as np

    if values.dtype == bool:
        bits = values.astype(np.uint64)
    elif values.dtype.kind == "f":
        bits = values.view(np.uint64).copy()
        bits[np.isnan(values)] = np.array(np.nan, dtype=values.dtype).view(np.uint64)
        bits[bits == np.array(-0.0, dtype=values.dtype).view(np.uint64)] = 0
    else:
        bits = values.view(np.uint64).copy()
    with np.errstate(over="ignore"):
        bits ^= bits >> np.uint64(30)
        bits *= np.uint64(0xBF58476D1CE4E5B9)
        bits ^= bits >> np.uint64(27)
        bits *= np.uint64(0x94D049BB133111EB)
        bits ^= bits >> np.uint64(31)
    return bits


def hash_text(row: Iterable[str]) -> int:
    """A stable 63-bit hash of a row's cells (Python's own hash() changes per process)."""
    import hashlib

    return int.from_bytes(hashlib.sha256("\0".join(row).encode()).digest()[:8], "big") >> 1


def grouped_findings(site: SiteData, severities: Sequence[str] = ("error", "warning"),
                     per_model: bool = True) -> list[dict[str, Any]]:
    """One line per kind of finding and model: the environments (factor levels) joined in one line
    (``per_model=False``: one line per kind of finding and campaign, its models listed).

    Each group has ``severity``, ``code``, ``title``, ``campaign``, ``models`` (display names),
    ``levels`` (in :func:`~sparkreport.names.level_order`: the baseline first), ``count`` (findings
    merged), ``example`` (the message of the first finding about the level listed first, its
    prefix and its assumption cut) and ``assumes`` (the assumptions the check rests on, stated once
    by the page).
    """
    key = f"_grouped_findings:{','.join(severities)}:{per_model}"
    cached = site.extra.get(key)
    if cached is None:
        cached = site.extra[key] = _grouped_findings(site, severities, per_model)
    return [dict(group) for group in cached]


def _grouped_findings(site: SiteData, severities: Sequence[str], per_model: bool) -> list[dict[str, Any]]:
    names = {(c, m): str(n) for (c, m), n in model_names(site).items()}
    groups: dict[tuple[str, str, str, tuple[str, ...]], dict[str, Any]] = {}
    first_level: dict[tuple[str, str, str, tuple[str, ...]], tuple[Any, ...]] = {}  # of each group's example
    for finding in site.findings:
        if finding.severity not in severities:
            continue
        arms = finding_arms(site, finding)
        # the example is a finding about the level the line names first (its levels as every table
        # lists them, the baseline first), so that its figures are not read as another level's
        placed = min((level_order(lv, site.config.baseline) for _, _, lv in arms), default=())
        campaign = min({c for c, _, _ in arms}, key=campaign_order) if arms else ""
        models = tuple(sorted({names.get((c, m), m) for c, m, _ in arms}, key=name_order))
        key = (finding.severity, finding.code, campaign, models if per_model else ())
        group = groups.setdefault(key, {
            "severity": finding.severity, "code": finding.code, "title": check_title(finding.code),
            "campaign": campaign, "models": list(models), "levels": [], "count": 0,
            "example": "", "assumes": []})
        if not group["example"] or placed < first_level[key]:
            # the assumption a check rests on is stated once under the list, not on every line
            group["example"] = message_body(finding.message).partition(" — assumes ")[0]
            first_level[key] = placed
        for assumption in finding.assumes:
            if assumption not in group["assumes"]:
                group["assumes"].append(assumption)
        group["count"] += 1
        group["models"] += [m for m in models if m not in group["models"]]
        for _, _, level in sorted(arms):
            if level not in group["levels"]:
                group["levels"].append(level)
    for group in groups.values():  # one order of the models and levels on every line (they came in finding order)
        group["models"].sort(key=name_order)
        group["levels"].sort(key=lambda level: level_order(level, site.config.baseline))
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(groups.values(), key=lambda g: (order.get(g["severity"], 3), campaign_order(g["campaign"]), g["code"],
                                                  [name_order(m) for m in g["models"]]))


def model_names(site: SiteData) -> dict[tuple[str, str], str]:
    """(campaign, model) → the model's name as the pages show it (made once per render: a page's
    answers ask for it per campaign, ~4 ms each at 10 000 runs)."""
    cached = site.extra.get("_model_names")
    if cached is None:
        cached = {}
        for frame in (site.dataset.runs, site.dataset.summaries):
            if frame.empty:
                continue
            pairs = frame[["campaign", "model", "model_name"]].drop_duplicates()
            for campaign, model, name in pairs.itertuples(index=False):
                cached.setdefault((str(campaign), str(model)), str(name))
        site.extra["_model_names"] = cached
    return dict(cached)


def primary_metrics(site: SiteData, present: Iterable[str]) -> list[str]:
    """The configured primary metrics that ``present`` holds, in the configured order."""
    have = set(present)
    return [m for m in site.config.primary_metrics if m in have]


def effect_rows(site: SiteData, comparisons: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Each comparison as an effect: Δ% of the candidate against the baseline with its CI (from the
    ratio's CI), the margin in %, and a verdict mark. Primary metrics first.

    Every comparison's (no ``comparisons``) is computed once per render and shared (the Home page
    and the Memory page each read it twice or more; ~0.1 s at 10 000 runs): do not modify it."""
    if comparisons is None:
        if site.effects is None:
            site.effects = _site_effect_rows(site)
        return site.effects
    return _effect_rows(site, comparisons)


def _site_effect_rows(site: SiteData) -> list[dict[str, Any]]:
    """Every comparison's effect row: with the analysis cache, each campaign's rows kept by the
    digest of the campaign's comparison rows (:func:`slice_digest`), the table's columns and the
    settings the rows read, so a new run makes its campaign's rows only (all of them: ~0.06 s at
    10 000 runs, which the Home, Memory and Campaigns pages each paid in their own worker). The
    rows sort by campaign first (:func:`_effect_rows`), so each campaign's sorted rows, in the
    campaigns' order, are the whole table's."""
    frame = site.comparisons
    cache = site.analysis_cache
    if cache is None or frame.empty or "campaign" not in frame.columns:
        return _effect_rows(site, frame)
    groups: dict[str, Any] = {str(name): rows for name, rows
                              in frame.groupby("campaign", sort=False, observed=True).indices.items()}
    layout = [(str(column), str(dtype)) for column, dtype in frame.dtypes.items()]
    settings = (sorted(site.config.analysis.margins.items()), site.config.analysis.equivalence_margin,
                list(site.config.primary_metrics))
    out: list[dict[str, Any]] = []
    for campaign in sorted(groups, key=campaign_order):
        key = cache.key(("kind", "effect-rows-1"), ("rows", slice_digest(site, "comparisons", "campaign", campaign)),
                        ("layout", layout), ("settings", settings))
        kept = cache.get_or("effect-rows", key, functools.partial(_campaign_effect_rows, site, groups[campaign]))
        out += [dict(row) for row in kept]  # (copies: what a page does with a row never reaches the cache)
    return out


def _campaign_effect_rows(site: SiteData, positions: Any) -> list[dict[str, Any]]:
    """:func:`_effect_rows` of the comparisons at ``positions`` (one campaign's), taken only when made."""
    return _effect_rows(site, site.comparisons.take(positions))


def prime_effect_rows(site: SiteData) -> None:
    """Make the site's effect rows (:func:`effect_rows`) in this process, before the pages are
    filled in forked workers: each worker that fills a page reading them (Home, Memory, the
    Campaigns overview) then finds them made, and the rows a new run did not change come from
    the analysis cache, which only this process saves."""
    if site.analysis_cache is not None:
        effect_rows(site)


def _effect_rows(site: SiteData, frame: pd.DataFrame) -> list[dict[str, Any]]:
    from sparkreport.analysis.compare import untested_reason

    if frame.empty:
        return []
    order = {m: i for i, m in enumerate(site.config.primary_metrics)}
    out = []
    for row in frame_rows(frame):
        ratio, low, high = row.get("ratio"), row.get("ratio_ci_low"), row.get("ratio_ci_high")
        mean_b = row.get("mean_baseline")
        if (low is None or high is None) and mean_b and row.get("diff_ci_low") is not None:
            # No ratio interval (published figures): the difference's interval over the baseline
            # mean, which leaves out the baseline mean's own uncertainty.
            low = 1 + float(row["diff_ci_low"]) / float(mean_b)
            high = 1 + float(row["diff_ci_high"]) / float(mean_b)
        margin = site.config.analysis.margins.get(str(row["metric"]), site.config.analysis.equivalence_margin)
        out.append({
            **row, "label": metric_label(str(row["metric"])),
            "delta_pct": (ratio - 1) * 100 if ratio is not None else None,
            "delta_low": (low - 1) * 100 if low is not None else None,
            "delta_high": (high - 1) * 100 if high is not None else None,
            "margin_pct": float(margin) * 100,
            "primary": row["metric"] in order,
            "untested": row["verdict"] == "untested",  # no test could run (compare's verdict)
        })
        # why it was not tested, as its answer, key and chart say it (published, single runs)
        out[-1]["untested_reason"] = untested_reason(row) if out[-1]["untested"] else ""
    for row in out:
        kind = str(row["verdict"])
        row["mark"] = VERDICT_MARKS[kind]
        row["judgement"] = judgement(kind, str(row["metric"]))
        row["words"] = verdict_words(kind, margin_text(row["margin_pct"] / 100)) + (
            f" ({row['judgement']})" if row["judgement"] else "")
    out.sort(key=lambda r: (*campaign_order(str(r["campaign"])), order.get(r["metric"], len(order)),
                            *model_order(str(r["model_name"]), str(r["model"]))))
    return out


#: Said in a key with ▲ or ▼: a mark gives the direction of a difference, not its worth.
BETTER_OR_WORSE = "Whether ▲ or ▼ is better depends on the metric; the answers say which."

#: The verdict marks of the summary tables (explained under each table).
VERDICT_MARKS = {"equivalent": "≈", "higher": "▲", "lower": "▼", "inconclusive": "?", "untested": "○"}
#: A verdict in words: after its mark in the Results pages' tables, in the key under a table of
#: marks, in the forest chart's legend, and (capitalized) leading an answer's sentence.
VERDICT_WORDS = {"equivalent": "the same within {margin}", "higher": "higher", "lower": "lower",
                 "inconclusive": "no difference detected", "untested": "not tested"}


def judgement(verdict: str, metric: str) -> str:
    """Whether a "higher" or "lower" verdict is "better" or "worse", by the metric's better
    direction in the catalog (higher throughput, lower latency and memory); "" for the other
    verdicts and for a metric with no better direction (a temperature, a configured count)."""
    from sparkreport import metrics as metric_catalog

    found = metric_catalog.lookup(metric) if verdict in ("higher", "lower") else None
    if found is None or found.direction == "none":
        return ""
    return "better" if verdict == found.direction else "worse"


def verdict_words(verdict: str, margin: str = "the margin") -> str:
    """``verdict`` (or "untested") in :data:`VERDICT_WORDS`; ``margin``: "±2%" (:func:`margin_text`),
    or "the margin" where rows of several margins share the words (a chart's legend)."""
    return VERDICT_WORDS.get(verdict, verdict).format(margin=margin)


def untested_reasons(effects: Iterable[dict[str, Any]]) -> str:
    """Why the untested of ``effects`` were not tested, each reason once, in the order of
    :data:`~sparkreport.analysis.compare.UNTESTED_REASONS` ("published without a spread; one run
    per arm")."""
    from sparkreport.analysis.compare import UNTESTED_REASONS

    found = {str(e.get("untested_reason")) for e in effects}
    return "; ".join(why for why in UNTESTED_REASONS if why in found)


def design_sentence(effects: list[dict[str, Any]]) -> str:
    """How the tested effects were tested: paired block by block where a campaign ran its arms in
    blocks (``design`` of the comparison), Welch's (independent samples) otherwise."""
    designs = {str(e.get("design") or "").startswith("blocked") for e in effects if not e.get("untested")}
    if designs == {True}:
        return "Tests and intervals pair the arms block by block (the runs were made in randomized blocks)."
    if designs == {True, False}:
        return "Tests and intervals are paired by block where a campaign ran in blocks, else Welch's."
    if designs == {False}:
        return "Tests and intervals are Welch's (independent samples)."
    return ""


def margin_of(site: SiteData, effects: Iterable[dict[str, Any]]) -> str | None:
    """The equivalence margin ``effects`` share, as the pages write it ("±2%"); the project's when
    none says; None when they differ (``analysis.margins`` per metric): then each metric's is said
    beside it (:func:`with_margins`)."""
    found = {round(float(e["margin_pct"]), 9) for e in effects if e.get("margin_pct") is not None}
    if not found:
        return margin_text(site.config.analysis.equivalence_margin)
    return margin_text(found.pop() / 100) if len(found) == 1 else None


def with_margins(effects: list[dict[str, Any]]) -> str:
    """The metrics of ``effects``, each with its margin: "Output throughput (±2%) and KV cache (±5%)"."""
    seen = dict.fromkeys((str(e["label"]), float(e["margin_pct"])) for e in effects)
    return join_and([f"{label} ({margin_text(margin / 100)})" for label, margin in seen])


def table_gaps(*tables: dict[str, Any]) -> bool:
    """Whether any row of these :func:`summary_table` s lacks a cell (drawn "—")."""
    return any(len(row["cells"]) < len(table["metrics"]) or any(cell.get("delta_pct") is None
                                                                 for cell in row["cells"].values())
               for table in tables for row in table["rows"])


def verdict_key(site: SiteData, effects: list[dict[str, Any]], *, what: str = "Cells",
                gaps: bool = False, intervals: bool = True) -> Markup:
    """The key under a table of verdict marks, saying only what the table shows: the marks
    present, how they were tested, the margin when a mark depends on it, that the intervals are
    not Holm-adjusted when a ? interval excludes zero (the answers above say their intervals in
    words, :func:`answer`).
    ``what``: the name of the column or cells that hold the differences; ``gaps``: a table above
    has cells of "—", which the key then explains; ``intervals=False``: its cells hold marks
    without intervals (Home's table of how the answers of several campaigns moved, whose heading
    says what a cell holds), so the key does not say what a cell holds."""
    from markupsafe import Markup

    marks = {str(e["mark"]) for e in effects}
    ci_label = site.confidence_label
    margin = margin_of(site, [e for e in effects if e["mark"] == "≈"]) or "each metric's margin"
    out = [f"{what}: difference from the baseline in percent, with its {ci_label} confidence interval."
           if intervals else ""]
    said = []
    if "≈" in marks:
        said.append(f"≈ {verdict_words('equivalent', margin)} (TOST: the {site.tost_label} interval lies inside "
                    f"the margin, so the {ci_label} one shown may reach a little past it)")
    said += [f"{VERDICT_MARKS[kind]} {verdict_words(kind)}{more}"
             for kind, more in (("higher", ""), ("lower", ""), ("inconclusive", " and none ruled out"))
             if VERDICT_MARKS[kind] in marks]
    tested = [e for e in effects if e["mark"] in ("▲", "▼", "?")]
    # a ≈ or ? whose interval excludes zero: the unadjusted interval beside an adjusted p above α
    apart = " or ".join(mark for mark in ("≈", "?") if any(
        e["mark"] == mark and e.get("delta_low") is not None and e.get("delta_high") is not None
        and (e["delta_low"] > 0 or e["delta_high"] < 0) for e in effects))
    unadjusted = f"the intervals are not adjusted, so a {apart} interval may exclude zero"
    if tested:
        said[-1] += " (Holm-adjusted over the campaign's tests" + (f"; {unadjusted})" if apart else ")")
    elif apart:
        said.append(f"the intervals are not Holm-adjusted, so a {apart} interval may exclude zero")
    if "○" in marks:
        said.append(f"○ {verdict_words('untested')} ({untested_reasons(effects)})")
    if gaps:
        said.append("— not compared (the metric was not reported in both arms)")
    if said:
        out.append("; ".join(said) + ".")
    if marks & {"▲", "▼"}:
        out.append(BETTER_OR_WORSE)
    out.append(design_sentence(effects))
    if marks & {"≈", "?"}:
        shared = margin_of(site, [e for e in effects if e["mark"] in ("≈", "?")])
        # Said in a reader's words; Methodology names the settings (a reader has no sparkreport.yml).
        if shared is None:
            out.append("The margins, one per metric, were set by the project's author, not pre-registered.")
        else:
            out.append(f"The {shared} margin was set by the project's author, not pre-registered.")
    return Markup(" ".join(part for part in out if part))  # noqa: S704 — our own text, no data in it


def forest_chart(effects: list[dict[str, Any]], *, name: str, title: str, confidence: float,
                 titles: dict[str, str] | None = None) -> ChartSpec | None:
    """Every effect (Δ% vs the baseline) with its CI, one row each (model × metric, named by the
    candidate and the campaign too where two would share a row), and the equivalence band (±
    margin) drawn. An effect without a CI (published without a spread, single runs) is in the tables only: a
    point alone would say nothing of its uncertainty and stretch the axis past every interval.
    ``titles``: campaign name → what the chart calls it (:func:`campaign_titles`)."""
    from sparkreport.charts import ChartSpec

    data = []
    # One row per effect, named "model · metric", with the candidate where a campaign compares
    # several environments with one baseline, and the campaign where the same model and metric
    # come from several (Home's chart spans the newest campaigns): else two effects share a row.
    shown = [e for e in effects if e["delta_pct"] is not None and e["delta_low"] is not None]
    left_out = [e for e in effects if e["delta_pct"] is not None and e["delta_low"] is None]
    pairs: dict[str, set[tuple[str, str]]] = {}
    for e in shown:
        pairs.setdefault(str(e["campaign"]), set()).add((str(e["candidate"]), str(e["baseline"])))
    comparisons = any(len(found) > 1 for found in pairs.values())

    def named(e: dict[str, Any]) -> list[str]:
        return [str(e["model_name"]), *([str(e["candidate"])] if comparisons else []), str(e["label"])]

    names = [" · ".join(named(e)) for e in shown]
    # Several campaigns share a model and metric (Home spans the newest ones): one panel per
    # campaign, its name as the panel's heading, rather than a prefix on every label (which cut
    # the labels at 320 px and mixed the campaigns' rows).
    # Rows from several campaigns always get a panel each: one axis of rows from, say, an H100
    # control and a GB10 study's published figures reads as one experiment.
    campaigns = len(set(names)) < len(names) or len({str(e["campaign"]) for e in shown}) > 1
    if campaigns:
        shown = sorted(shown, key=lambda e: campaign_order(str(e["campaign"])))
    from sparkreport.render.precision import delta_places, deltas

    # the points keep as many decimals as the tooltips print (more where one that is not zero
    # would print as +0.00), so a tooltip shows what was drawn
    kept = max(3, delta_places([e[key] for e in shown for key in ("delta_pct", "delta_low", "delta_high")]))
    for e in shown:
        # the tooltip's Δ % and ends as the effects table prints them (precision.deltas, in
        # Python): a signed d3 format printed a zero "+0.00", and gave the whole field the
        # decimals of its smallest figure where the table gives each effect its own
        delta_text, low_text, high_text = deltas(e["delta_pct"], e["delta_low"], e["delta_high"])
        data.append({
            "row": " · ".join(named(e)), "metric": e["label"],
            "comparison": f"{e['candidate']} vs {e['baseline']}",
            "campaign": (titles or {}).get(str(e["campaign"]), str(e["campaign"])),
            "delta": round(e["delta_pct"], kept), "low": _round(e["delta_low"], kept),
            "high": _round(e["delta_high"], kept),
            "delta_text": delta_text, "low_text": low_text, "high_text": high_text,
            "verdict": verdict_words(str(e["verdict"])), "margin": e["margin_pct"],
        })
    if not data:
        return None
    from sparkreport.config import confidence_label

    level = confidence_label(confidence)
    margin = max(d["margin"] for d in data)
    description = (f"Every comparison as a difference from the baseline in percent with its {level} "
                   f"confidence interval{', one panel per campaign' if campaigns else ''}; the shaded band "
                   f"is the ±{margin:g}% equivalence margin"
                   + (f"; {undrawn_text(left_out)} {'is' if len(left_out) == 1 else 'are'} in the tables only."
                      if left_out else "."))
    spec = (forest_panels(data, level=level, margin=margin, title=title) if campaigns
            else forest_spec(data, level=level, margin=margin, title=title))
    return ChartSpec(name=name, title=title, description=description, spec=spec, rows=len(data))


def undrawn_text(effects: list[dict[str, Any]]) -> str:
    """Effects a chart cannot draw (no interval), counted with why: "2 effects without an
    interval (published without a spread)"; empty for none."""
    if not effects:
        return ""
    why = untested_reasons(effects)
    return (f"{len(effects)} {'effect' if len(effects) == 1 else 'effects'} without an interval"
            + (f" ({why})" if why else ""))


def forest_spec(data: list[dict[str, Any]], *, level: str, margin: float, title: str,
                verdicts: set[str] | None = None) -> dict[str, Any]:
    """The forest chart's spec: the equivalence band (± ``margin``), the line at zero, the CIs
    of the effects that have one, and every effect as a point (hollow without a CI), one row
    per effect in ``data``'s order, coloured by verdict; its tooltip's Δ % and ends are
    ``data``'s ``delta_text``, ``low_text`` and ``high_text``, printed as the effects table
    prints them (:func:`~sparkreport.render.precision.deltas`)."""
    from sparkreport.charts import EQUIVALENCE_BAND, mark, nominal, quantitative, top_level

    def y() -> dict[str, Any]:
        return nominal("row", axis={"labelLimit": 440}, sort=[d["row"] for d in data], title=None)

    def colour() -> dict[str, Any]:
        return _verdict_colour(verdicts if verdicts is not None else {str(d["verdict"]) for d in data})

    layers: list[dict[str, Any]] = [
        {"data": {"values": [{"lo": -margin, "hi": margin}]},
         "mark": mark("rect", color=EQUIVALENCE_BAND, opacity=0.12),
         "encoding": {"x": quantitative("lo"), "x2": {"field": "hi"}}},
        {"data": {"values": [{"x": 0}]}, "mark": mark("rule", color="#555"), "encoding": {"x": quantitative("x")}},
    ]
    layers.append({"data": {"values": data}, "mark": mark("rule", strokeWidth=2),
                   "encoding": {"color": colour(), "x": quantitative("low"), "x2": {"field": "high"}, "y": y()}})
    layers.append({"data": {"values": data}, "mark": mark("point", size=60, filled=True), "encoding": {
        "color": colour(),
        "tooltip": _forest_tooltip("row", level),
        "x": quantitative("delta", title=f"difference from the baseline, % (with {level} CI; band = ±{margin:g}%)"),
        "y": y()}})
    return top_level({"layer": layers}, height={"step": 22}, title=title, width=FOREST_WIDTH)


def forest_panels(data: list[dict[str, Any]], *, level: str, margin: float, title: str) -> dict[str, Any]:
    """:func:`forest_spec` once per campaign (``data``'s ``campaign``, in its order), one under
    the other with the campaign's name as each panel's title (rows are named without it), the x
    scale shared and its title on the last panel only. Panels, not a facet: a facet's
    independent y scales over a layer whose rule omits the rows without an interval make Vega
    warn that it cannot size the view."""
    campaigns = list(dict.fromkeys(str(d["campaign"]) for d in data))
    panels = []
    for i, campaign in enumerate(campaigns):
        rows = [d for d in data if str(d["campaign"]) == campaign]
        # one colour scale for every panel (Vega merges them: differing domains warn)
        panel = forest_spec(rows, level=level, margin=margin, title=campaign,
                            verdicts={str(d["verdict"]) for d in data})
        del panel["$schema"], panel["config"]
        panel["title"] = {"anchor": "start", "fontSize": 12, "frame": "group", "text": campaign}
        if i < len(campaigns) - 1:
            panel["layer"][-1]["encoding"]["x"]["title"] = None
        panels.append(panel)
    from sparkreport.charts import top_level

    return top_level({"vconcat": panels}, bounds="flush", resolve={"scale": {"x": "shared"}}, spacing=48,
                     title=title)


#: The forest chart's plot width: its rows' names ("Llama-3-8B shape (random weights) · Time to
#: first token (mean)", up to ~380 px) and this plot fit a desktop column (~690 px) unscaled, where
#: the 420 px of the other charts and a legend beside it drew it at 68% (7 px text). The legend
#: goes under the plot for the same reason; the axis spans a few percent, which 250 px shows.
FOREST_WIDTH = 250

#: The verdicts the forest chart draws, in its legend's order (each in its colour on every chart:
#: :data:`sparkreport.charts.VERDICT_COLOURS`; the legend says them in :func:`verdict_words`).
FOREST_VERDICTS = ("equivalent", "higher", "lower", "inconclusive")


def _verdict_colour(present: set[str]) -> dict[str, Any]:
    """The colour by verdict: every verdict in the scale, the legend listing the verdicts
    ``present`` (their words)."""
    from sparkreport.charts import verdict_colour

    return verdict_colour(FOREST_VERDICTS, present, names={v: verdict_words(v) for v in FOREST_VERDICTS},
                          orient="bottom")


def _forest_tooltip(field: str, level: str) -> list[dict[str, Any]]:
    from sparkreport.charts import nominal

    return [nominal(field, title="effect"), nominal("comparison"), nominal("campaign"),
            nominal("delta_text", title="Δ %"), nominal("low_text", title=f"{level} CI low"),
            nominal("high_text", title=f"{level} CI high"), nominal("verdict")]


def _round(value: float | None, places: int = 3) -> float | None:
    return None if value is None else round(value, places)


def means_with_band(site: SiteData, arms: list[dict[str, Any]], metric: str, *, name: str,
                    title: str) -> ChartSpec | None:
    """Arm means with their CIs on an axis that starts at zero, or says that it does not, each row
    labelled by ``arms``' ``arm`` where it has one and in its environment's colour on the site
    (:func:`environment_colours`); the baseline's equivalence band (± margin) is drawn when the
    metric is compared. ``arms``: statistics rows as :func:`~sparkreport.dataset.frame_rows`
    gives them."""
    from sparkreport.charts import means_chart_of_rows

    margin = site.config.analysis.margins.get(metric, site.config.analysis.equivalence_margin)
    base = [arm for arm in arms if str(arm["environment"]) == site.config.baseline and not is_missing(arm["mean"])]
    band = None
    if len(base) == 1 and metric in site.config.analysis.tested_metrics:
        mean = float(base[0]["mean"])
        band = (mean * (1 - margin), mean * (1 + margin))
    return means_chart_of_rows(arms, metric, name=name, title=title, confidence=site.config.analysis.confidence,
                               band=band, colours=environment_colours(site))


def cgroup_peaks(records: list[RunRecord]) -> tuple[list[float], set[float], int]:
    """A campaign's cgroup memory peaks, limits and OOM kills, as the executor recorded them."""
    peaks: list[float] = []
    limits: set[float] = set()
    ooms = 0
    for record in records:
        group = record.environment.details.get("cgroup")
        if isinstance(group, dict) and isinstance(group.get("peak_gib"), int | float):
            peaks.append(float(group["peak_gib"]))
            if isinstance(group.get("limit_gib"), int | float):
                limits.add(float(group["limit_gib"]))
            ooms += int(group.get("oom_kills") or 0)
    return peaks, limits, ooms


def cgroup_observation(site: SiteData, campaign: str) -> str | None:
    """'The 16 GiB cgroup's memory peaked at 2.23 GiB (no OOM kill) while the GPU held 130.54 GiB'
    — from the cgroup statistics the executor records, when the campaign has them."""
    peaks, limits, ooms = site.per_campaign("cgroup", cgroup_peaks).get(campaign, ([], set(), 0))
    if not peaks:
        return None
    stats = site.stats[(site.stats["campaign"] == campaign) & (site.stats["metric"] == "peak_memory_gib")]
    # GiB with two decimals, as the memory tables write them: one precision in the sentence
    held = f" while the GPU held up to {float(stats['mean'].max()):.2f} GiB" if not stats.empty else ""
    limit = f" {'/'.join(f'{v:g}' for v in sorted(limits))} GiB" if limits else ""
    kills = "no OOM kill" if ooms == 0 else f"{ooms} OOM kill{'s' if ooms != 1 else ''}"
    return (f"The{limit} cgroup's memory peaked at {max(peaks):.2f} GiB at most ({kills}){held}: the "
            "cgroup does not count GPU memory on a discrete GPU.")


def why_not_compared(site: SiteData, campaign: Campaign) -> str:
    """Why a campaign has no comparison, as Markdown ending the sentence "No comparison could be
    made in this campaign: …" ('' when there is nothing more to say than that)."""
    from sparkreport.config import factor_words
    from sparkreport.render.markdown import code, md_escape

    config = site.config
    if config.factor != "environment" and not campaign.levels:
        return (f"no run carries {md_escape(config.factor_a_name)} ({code(config.factor)}, the factor the "
                "comparisons contrast), so its figures are described per environment on Results")
    _name, one, many = (md_escape(words) for words in factor_words(config.factor))
    levels = [md_escape(level) for level in campaign.levels]
    if len(levels) == 1:
        return f"every run is in one {one} ({levels[0]}), so there is nothing to compare it with"
    if levels and campaign.baseline is None:
        return (f"none of its {many} ({', '.join(levels)}) is the baseline {md_escape(config.baseline)} "
                f"({code('baseline:')} in sparkreport.yml)")
    note = site.extra.get("compare_note")
    return md_escape(note) if note else ""


def campaign_answer(site: SiteData, campaign: str, effects: list[dict[str, Any]], *,
                    model: str | None = None) -> list[str]:
    """A campaign's answer to its question as every page gives it — Home, the campaign's page and
    a model's Results page alike: a sentence per verdict (:func:`answer`), then what the question
    asks that did not vary and so was not compared (:func:`constant_lines` of the metrics the
    pages lead with, ``analysis.primary_metrics``). ``effects``: the campaign's
    (:func:`effect_rows`). ``model``: a model's own page, whose answer is the lines of that model
    alone, counting no models and naming none the checks flagged (its banner does)."""
    whole = model is None
    if not whole:
        effects = [e for e in effects if e["model"] == model]
    return answer(site, effects, count_models=whole, flag_models=whole) + stated_lines(site, campaign, model)


def stated_lines(site: SiteData, campaign: str, model: str | None = None) -> list[str]:
    """The lines of :func:`campaign_answer` that state, not test: what ``campaign``'s question
    asks (the metrics the pages lead with) that did not vary, of any model its comparisons do not
    answer (:func:`constant_lines`); ``model``: of that model alone."""
    return constant_lines(site, campaign, site.config.primary_metrics, compared_metrics(site, campaign), model=model)


def compared_metrics(site: SiteData, campaign: str) -> set[str]:
    """The metrics ``campaign``'s comparisons cover, of any of its models: its answer gives their
    verdicts, and states none of them as held constant (:func:`constant_lines`)."""
    metrics = grouped(site, "comparisons", "campaign").cells(campaign, "metric")
    return set() if metrics is None else {str(metric) for metric in metrics.unique()}


def answer_reads(site: SiteData, campaign: str) -> str:
    """What :func:`campaign_answer` reads of ``campaign`` beyond a model's own rows and facts, for
    the cache key of a page that gives one model's answer: the metrics the campaign compares and
    its environments (another model's runs can change either). Made once per campaign and render
    (every model page of a campaign asks for it)."""
    memo = site.extra.setdefault("_answer_reads", {})
    said = memo.get(campaign)
    if said is None:
        environments = grouped(site, "runs", "campaign").cells(campaign, "environment")
        levels = [] if environments is None else sorted(str(level) for level in environments.unique())
        said = memo[campaign] = repr((sorted(compared_metrics(site, campaign)), levels))
    return str(said)


def constant_lines(site: SiteData, campaign: str, metrics: Sequence[str], compared: set[str],
                   where: str = "", model: str | None = None) -> list[str]:
    """A campaign's ``metrics`` that did not vary and so were not compared
    (:func:`~sparkreport.analysis.design.constant_facts`; ``compared``: the metrics it compared),
    as sentences for its answer: the same value in every run of every environment ("**The same in
    both environments** (2 models): KV cache, one value in every run — stated, not tested" and
    ``where`` the values are), or, where the environments' fixed values differ, each fact's clause
    (a fixed difference, not a test). A question about the KV cache answered by throughput alone
    left it unsaid. ``model``: that model's facts alone (its own page: no count of models, no
    name before a fixed difference)."""
    from sparkreport.render.markdown import counted

    names = model_names(site)
    environments = grouped(site, "runs", "campaign").cells(campaign, "environment")
    levels = set() if environments is None else {str(level) for level in environments.unique()}
    facts = [f for f in site.facts if f.campaign == campaign and (model is None or f.model == model)
             and f.metric in metrics and f.metric not in compared and set(f.values) >= levels and len(levels) > 1]
    same = [f for f in facts if len(set(f.values.values())) == 1]
    lines = []
    if same:
        labels = join_and([metric_label(m) for m in metrics if any(f.metric == m for f in same)])
        in_all = "both environments" if len(levels) == 2 else f"all {len(levels)} environments"
        recorded = " that recorded it" if any(f.runs is not None for f in same) else ""  # some runs lack it
        many = f" ({counted(len({f.model for f in same}), 'model')})" if model is None else ""
        lines.append(f"**The same in {in_all}**{many}: {labels}, one value in every run{recorded} — stated, "
                     f"not tested{where}.")
    lines += [f"**A fixed difference**: {'' if model else f'{names.get((campaign, f.model), f.model)} — '}{f.body}."
              for f in facts if len(set(f.values.values())) > 1]
    return lines


def answer(site: SiteData, effects: list[dict[str, Any]], *, count_models: bool = True,
           flag_models: bool = True) -> list[str]:
    """A campaign's answer in a few sentences: one per verdict, naming the metrics and models it
    covers, with the range of the differences and their intervals, then which models' runs the
    checks found errors in. ``count_models=False`` (a model's own page): the sentences do not
    count models; ``flag_models=False`` (the same page, whose banner already says its runs
    carry errors): no sentence names the flagged models."""
    if not effects:
        return []
    primary = [e for e in effects if e["primary"]] or effects
    out = []
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in primary:  # a difference is said as better or worse where the metric has a better direction
        groups.setdefault("untested" if e["untested"] else e.get("judgement") or str(e["verdict"]), []).append(e)

    def metrics_of(rows: list[dict[str, Any]]) -> str:
        return join_and(list(dict.fromkeys(str(r["label"]) for r in rows)))

    def span(rows: list[dict[str, Any]], intervals: bool = True, *, in_parentheses: bool = False) -> str:
        """The differences of ``rows`` ("-0.03% to +0.03%"), and, with ``intervals``, the span of
        their confidence intervals said in words where the sentence stands ("(95% CIs between
        -0.12% and +0.16%)"; after "; " when the span is itself in parentheses): a reader of the
        answer needs no key to read it."""
        deltas = [r["delta_pct"] for r in rows if r["delta_pct"] is not None]
        lows = [r["delta_low"] for r in rows if r["delta_low"] is not None]
        highs = [r["delta_high"] for r in rows if r["delta_high"] is not None]
        if not deltas:
            return ""
        from sparkreport.render.precision import deltas as printed

        # the span and its intervals printed with one number of decimals (the precision rule)
        with_ci = intervals and bool(lows) and bool(highs)
        low, high, *ends = printed(min(deltas), max(deltas), *((min(lows), max(highs)) if with_ci else ()))
        text = f"{low}%" if len(deltas) == 1 else f"{low}% to {high}%"
        if ends:
            ci = site.confidence_label
            said = (f"{ci} CI {ends[0]}% to {ends[1]}%" if len(deltas) == len(lows) == 1 else
                    f"{ci} CIs between {ends[0]}% and {ends[1]}%")
            text += f"; {said}" if in_parentheses else f" ({said})"
        return text

    def count(rows: list[dict[str, Any]]) -> str:
        n = len({r["model"] for r in rows})
        return f"{n} model{'s' if n != 1 else ''}"

    def counted(rows: list[dict[str, Any]]) -> str:  # " (3 models)", or nothing on a model's own page
        return f" ({count(rows)})" if count_models else ""

    # Each sentence speaks of one comparison (candidate against baseline) at a time: a campaign of
    # several environments against one baseline (native vs cgroup vs chroot) has one per level.
    for kind in ("equivalent", "worse", "better", "higher", "lower", "inconclusive", "untested"):
        rows = groups.get(kind)
        if not rows:
            continue
        pairs = by_comparison(rows)
        margin = margin_of(site, rows)  # None: the metrics' margins differ, each said beside it
        if kind == "equivalent":
            said = "; ".join(f"{metrics_of(rs) if margin else with_margins(rs)}, {cand} against {base} {span(rs)}"
                             for (cand, base), rs in pairs)
            words = verdict_words(kind, margin or "each metric's margin")
            out.append(f"**{words[:1].upper()}{words[1:]}**{counted(rows)}: {said}.")
        elif kind in ("worse", "better"):  # each metric with its direction: "Output throughput lower"
            for (cand, base), rs in pairs:
                parts = [f"{label} {verdict}{f' for {count(items)}' if count_models else ''} "
                         f"({span(items, in_parentheses=True)})"
                         for (label, verdict), items in grouped_by(rs, "label", "verdict")]
                out.append(f"**{kind.capitalize()} in {cand} than in {base}**: {'; '.join(parts)}.")
        elif kind in ("higher", "lower"):
            for (cand, base), rs in pairs:
                parts = [f"{label}{f' for {count(items)}' if count_models else ''} ({span(items, in_parentheses=True)})"
                         for label, items in grouped_by(rs, "label")]
                out.append(f"**{kind.capitalize()} in {cand} than in {base}**: {'; '.join(parts)}.")
        elif kind == "inconclusive":
            smallest = detectable(rows)
            detect = (f" With these runs, differences smaller than {smallest} could not have been "
                      "detected.") if smallest is not None else ""
            named = metrics_of if margin else with_margins
            said = (f"{named(rows)} ({span(rows, in_parentheses=True)})" if len(pairs) == 1 else
                    "; ".join(f"{cand} against {base}, {named(rs)} ({span(rs, in_parentheses=True)})"
                              for (cand, base), rs in pairs))
            out.append(f"**No difference detected, none ruled out**{counted(rows)}: {said}; the intervals are "
                       f"wider than {f'the {margin} margin' if margin else 'their margins'}."
                       f"{detect}{not_after_holm(rows, site.confidence_label)}")
        else:  # a sentence per reason: published without a spread, one run per arm
            from sparkreport.analysis.compare import UNTESTED_REASONS

            def ranged(rs: list[dict[str, Any]]) -> str:  # each metric's effect, or its range over the models
                labelled = grouped_by(rs, "label")
                # two numbers are the models' least and greatest effect, not an interval (these
                # effects have none): said so
                ranges = any(len({r["delta_pct"] for r in items if r["delta_pct"] is not None}) > 1
                             for _label, items in labelled)
                return join_and([f"{label} {span(items, intervals=False)}" for label, items in labelled]) \
                    + (" across the models" if ranges else "")

            for why, untested in sorted(grouped_by(rows, "untested_reason"),
                                        key=lambda item: UNTESTED_REASONS.index(item[0])):
                said = "; ".join(f"{cand} against {base}, {ranged(rs)}" for (cand, base), rs in by_comparison(untested))
                out.append(f"**{why[:1].upper()}{why[1:]}, so not tested**{counted(untested)}: {said}.")
    flagged = flagged_models(site, primary) if flag_models else {}
    if flagged:
        # which checks: the banner above every page with such findings names them
        out.append(f"**Read with care**: the checks found errors in the runs of {join_and(list(flagged))} "
                   "(see Data quality).")
    return out


def flagged_models(site: SiteData, effects: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Model name → the codes of the error-level findings about the runs behind its effects
    (either arm), in the order the effects name the models."""
    from sparkreport.analysis.claims import errors_behind

    errors = site.errors
    if not errors:
        return {}
    arm_runs = site.level_runs()
    out: dict[str, list[str]] = {}
    for e in effects:
        for finding in errors_behind(e, errors, arm_runs):
            codes = out.setdefault(str(e["model_name"]), [])
            if finding.code not in codes:
                codes.append(finding.code)
    return out


def not_after_holm(rows: list[dict[str, Any]], ci_label: str) -> str:
    """For inconclusive rows whose (unadjusted) interval excludes zero: why they are not called
    higher or lower — the test is adjusted for the campaign's family of tests (Holm), the
    interval shown is not. Empty when no such row."""
    apart = [r for r in rows if r.get("delta_low") is not None and r.get("delta_high") is not None
             and (float(r["delta_low"]) > 0 or float(r["delta_high"]) < 0)]
    if not apart:
        return ""
    from sparkreport.analysis.design import family_size

    sizes = {family_size(str(r.get("family") or "")) for r in apart} - {None}
    tests = f"the campaign's {sizes.pop()} tests" if len(sizes) == 1 else "the campaign's tests"
    if len(apart) == len(rows) == 1:
        return f" Its {ci_label} interval excludes zero, but with Holm's adjustment over {tests} it is not significant."
    if len(apart) == 1:
        return (f" One of these {ci_label} intervals excludes zero, but with Holm's adjustment over {tests} "
                "that difference is not significant.")
    return (f" {len(apart)} of these {ci_label} intervals exclude zero, but with Holm's adjustment over {tests} "
            "none of those differences is significant.")


def grouped_by(rows: list[dict[str, Any]], *keys: str) -> list[tuple[Any, list[dict[str, Any]]]]:
    """``rows`` per value of ``keys`` (one key: its text; several: a tuple of texts), in the
    order the values first appear."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        value = tuple(str(row[k]) for k in keys)
        out.setdefault(value[0] if len(keys) == 1 else value, []).append(row)
    return list(out.items())


def by_comparison(effects: list[dict[str, Any]]) -> list[tuple[tuple[str, str], list[dict[str, Any]]]]:
    """``effects`` per comparison (candidate, baseline), in the order they first appear."""
    return grouped_by(effects, "candidate", "baseline")


def join_and(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def titles_phrase(titles: Iterable[str], limit: int | None = None) -> str:
    """Campaign titles as a sentence names them, each quoted (a title may hold a comma or a capital
    of its own) and joined by :func:`join_and`: '“Phase 1 as published: container vs native” and
    “The unified-memory post, as published”'; past ``limit`` titles, cut short ('“a”, “b” and 12
    more')."""
    quoted = [f"“{title}”" for title in titles]
    if limit is not None and len(quoted) > limit:
        return join_and([*quoted[:limit], f"{len(quoted) - limit} more"])
    return join_and(quoted)


def summary_table(site: SiteData, effects: list[dict[str, Any]], budget: int, *, by: str = "model") -> dict[str, Any]:
    """Model × primary metric: Δ% with its CI and a verdict mark (at most ``budget`` models).
    Against one baseline with several candidates (native vs cgroup vs chroot), a row per model
    and candidate, named "model · candidate". ``by="campaign"``: a row per campaign instead (one
    model's answer in several campaigns, on its page), named by the campaign's title, in name
    order (:func:`~sparkreport.names.campaign_order`). Each row's ``key`` is its (model or
    campaign, (candidate, baseline)): two models may share a name."""
    metrics = [m for m in site.config.primary_metrics if any(e["metric"] == m for e in effects)]
    pairs = [pair for pair, _rows in by_comparison(effects)]
    several = len(pairs) > 1
    cells: dict[tuple[str, tuple[str, str]], dict[str, dict[str, Any]]] = {}
    names: dict[str, str] = {}
    for e in effects:
        if e["metric"] in metrics:
            row = str(e[by])
            cells.setdefault((row, (str(e["candidate"]), str(e["baseline"]))), {})[str(e["metric"])] = e
            names[row] = str(e["model_name"]) if by == "model" else campaign_title(site, row)
    order = sorted(names, key=(lambda m: model_order(names[m], m)) if by == "model" else campaign_order)
    rows = [{"model_name": f"{names[m]} · {pair[0]}" if several else names[m], "cells": cells[(m, pair)],
             "key": (m, pair)} for m in order[:budget] for pair in pairs if (m, pair) in cells]
    # A campaign's comparisons share its one baseline.
    what = "Model" if by == "model" else "Campaign"
    head = (f"{what} · {site.config.factor} (vs {pairs[0][1]})" if several else
            f"{what} ({pairs[0][0]} vs {pairs[0][1]})" if pairs else what)
    return {"metrics": [{"metric": m, "label": metric_label(m)} for m in metrics], "rows": rows,
            "more": max(0, len(order) - budget), "head": head}


def across_campaigns_notes(effects: list[dict[str, Any]], where: str = "a cell") -> list[str]:
    """What a model's answers in several campaigns would each say beside their verdicts, said
    once under the table of them (:func:`summary_table` ``by="campaign"``): how small a
    difference the ? cells could have detected (``where``: what holds a mark, "a cell" or, on
    Home's table of several campaigns' marks per cell, "a mark"). (That the checks found errors
    in its runs, the page's banner says.)"""
    primary = [e for e in effects if e["primary"]] or effects
    detect = detectable(e for e in primary if not e["untested"] and e["verdict"] == "inconclusive")
    return [] if detect is None else [f"Where {where} is ?, differences smaller than {detect} could not have been "
                                      "detected with these runs."]


def detectable(rows: Iterable[dict[str, Any]]) -> str | None:
    """How small a difference inconclusive effects could not have detected, in percent of the
    baseline: "about 2%", or the span of their minimum detectable effects where they differ —
    "about 2% to 8% (depending on the comparison)": the smallest alone would be true of each but
    read as if a 3% difference in the least precise metric would have shown. None when none
    says."""
    mde = [abs(float(r["min_detectable_effect"]) / float(r["mean_baseline"])) * 100 for r in rows
           if r.get("min_detectable_effect") is not None and r.get("mean_baseline")]
    if not mde:
        return None
    low, high = f"{min(mde):.0f}", f"{max(mde):.0f}"
    return f"about {low}%" if low == high else f"about {low}% to {high}% (depending on the comparison)"
