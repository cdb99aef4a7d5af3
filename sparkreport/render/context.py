"""Everything the pages read, computed once per render from the run store.

The pages never compute statistics themselves: they read ``stats`` (``arm_stats``),
``comparisons`` (``compare``), ``findings`` (``check``) and ``runs`` (``included_runs``)
from here, so every page, post and CLI command shows the same numbers.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from sparkreport import __version__

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.analysis import Finding
    from sparkreport.analysis.design import Fact
    from sparkreport.cache import AnalysisCache, GitRun, HashMemo, Held, WritesLater
    from sparkreport.config import ProjectConfig
    from sparkreport.dataset import Dataset
    from sparkreport.schema import RunRecord

T = TypeVar("T")

#: Part of every :meth:`SiteData.per_campaign` key: another layout of the values drops them.
PER_CAMPAIGN_LAYOUT = 2


@dataclass
class Provenance:
    """What every page's footer says about where its numbers came from."""

    dataset_sha256: str
    run_count: int
    summary_count: int
    version: str
    command: str
    git_commit: str | None = None


@dataclass
class SiteData:
    """The dataset and every analysis result the pages show."""

    dataset: Dataset
    config: ProjectConfig
    runs_dir: Path
    stats: pd.DataFrame
    comparisons: pd.DataFrame
    #: ``check``'s findings, in its order: severity (error first), code, message.
    findings: list[Finding]
    runs: pd.DataFrame
    inclusion_rule: str
    provenance: Provenance
    extra: dict[str, Any] = field(default_factory=dict)
    #: Quantities that did not vary (SD 0 in every arm), of every metric, the tested ones first:
    #: stated, never tested (analysis.design).
    facts: list[Fact] = field(default_factory=list)
    #: The testing-family rule (primary metrics, Holm per campaign, exact families) in words.
    family_rule: str = ""
    #: The analysis cache this was computed with (its ``computed``/``reused`` counts), if any.
    analysis_cache: AnalysisCache | None = field(default=None, repr=False)
    #: The build's file sha256s by stat (``build/cache/hashes.pickle``), set by the render: a page
    #: keyed by a file's content (a samples.csv it draws) reads the hash from here, so a fresh
    #: checkout (every mtime new) does not redraw it. None outside a render.
    hash_memo: HashMemo | None = field(default=None, repr=False)
    #: Each campaign folder's stat digest from the build's walk of the store
    #: (:attr:`sparkreport.cache.StoreWalk.folders`), set by a build's render; None otherwise.
    store_folders: dict[str, str | None] | None = field(default=None, repr=False)
    #: Where a build's render puts off writing cache files that nothing reads before the next
    #: build (:class:`~sparkreport.cache.WritesLater`: written while the builder builds); None:
    #: they are written at once.
    later: WritesLater | None = field(default=None, repr=False)
    #: The project's folder, which the commands the pages print run in (None: the runs' parent).
    project_root: Path | None = None
    _arm_runs: dict[tuple[str, str, str], list[str]] | None = field(default=None, init=False, repr=False)
    #: Every comparison as an effect (:func:`sparkreport.render.report.effect_rows`), once computed.
    effects: list[dict[str, Any]] | None = field(default=None, init=False, repr=False)
    #: The whole tables the analysis cache kept of :attr:`stats`, :attr:`comparisons` and
    #: :attr:`level_stats` (:class:`~sparkreport.analysis.splice.Whole`, by attribute name,
    #: each with the frame it was handed out as), with which the render keeps their row hashes
    #: (:func:`~sparkreport.render.report.row_hashes`).
    wholes: dict[str, tuple[pd.DataFrame, Any]] = field(default_factory=dict, repr=False)

    @property
    def confidence_label(self) -> str:
        """'95%' — the confidence level every interval on the site uses."""
        return self.config.analysis.confidence_label

    @property
    def tost_label(self) -> str:
        """'90%' — the interval an equivalence test (TOST at α) sees inside its margin: 1 − 2α."""
        return f"{1 - 2 * self.config.analysis.alpha:.0%}"

    def command(self, name: str, *words: str) -> list[str]:
        """``sparkreport NAME …`` as a reader runs it in the project's folder to get what a page
        shows: with ``--runs-dir`` when the store is not the project's ``runs/`` (a site built
        with ``--runs-dir``), relative to the project where it lies inside it."""
        from sparkreport.project import DEFAULT_RUNS_DIR

        root = self.project_root if self.project_root is not None else self.runs_dir.parent
        store = [] if self.runs_dir == root / DEFAULT_RUNS_DIR else [
            "--runs-dir", self.runs_dir.relative_to(root).as_posix() if self.runs_dir.is_relative_to(root)
            else str(self.runs_dir)]
        return ["sparkreport", name, *store, *words]

    def per_campaign(self, kind: str, compute: Callable[[list[RunRecord]], T],
                     parts: tuple[tuple[str, object], ...] = ()) -> dict[str, T]:
        """``compute`` of each campaign's records (in record order), by campaign in record
        order: what a page across campaigns reads of the records (sources, settings, memory
        ledgers). Each campaign's value is kept in the analysis cache by ``kind``, ``parts``
        (whatever else ``compute`` depends on) and the digest of the campaign's runs, so after
        one new run only that campaign's records are read (the others' stay unpickled,
        :class:`~sparkreport.dataset.Records`); computed once per render. The value is shared:
        do not modify it."""
        memo = self.extra.setdefault("_per_campaign", {})
        if (kind, parts) in memo:
            return memo[(kind, parts)]
        cache = self.analysis_cache
        out: dict[str, T] = {}
        for campaign, digest in self.dataset.campaign_digests().items():
            key = cache.key(("kind", f"{kind}-{PER_CAMPAIGN_LAYOUT}"), ("campaign", campaign),
                            ("runs", digest), *parts) if cache is not None else ""
            kept = cache.get(kind, key) if cache is not None else None
            if isinstance(kept, tuple) and len(kept) == 1:
                out[campaign] = kept[0]
                continue
            out[campaign] = compute(self.dataset.campaign_records(campaign))
            if cache is not None:
                cache.put(kind, key, (out[campaign],))  # a tuple: a value may be None
        memo[(kind, parts)] = out
        return out

    def arm_runs(self) -> dict[tuple[str, str, str], list[str]]:
        """(campaign, model, environment) → the run ids (or published-arm ids) behind that arm:
        every record, whatever the factor (what a page's inputs and a finding's scope read).

        Computed once per render (pages ask for it per model and per post); do not modify it.
        """
        if self._arm_runs is None:
            self._arm_runs = {}
            for record in self.dataset.record_keys():
                key = (record.campaign, record.model, record.environment)
                self._arm_runs.setdefault(key, []).append(record.run_id)
        return self._arm_runs

    @property
    def level_stats(self) -> pd.DataFrame:
        """:attr:`stats` with an arm per level of the factor (campaign × model × level: what the
        comparisons contrast; the level in the ``environment`` column), where the pages show
        statistics beside comparisons: :attr:`stats` itself when the factor is ``environment``.
        The other pages describe the environments the runs were made in (memory, settings)."""
        if self.config.factor == "environment":
            return self.stats
        kept: pd.DataFrame | None = self.extra.get("_level_stats")
        if kept is not None:
            return kept
        from sparkreport.analysis import arm_stats

        def made() -> pd.DataFrame:
            return arm_stats(self.dataset, self.config.analysis, cache=self.analysis_cache,
                             level=self.config.factor, baseline=self.config.baseline)

        found, whole = kept_whole(self.analysis_cache, "arm_stats", made)
        if whole is not None:
            self.wholes["level_stats"] = (found, whole)
        self.extra["_level_stats"] = found
        return found

    @property
    def level_runs_frame(self) -> pd.DataFrame:
        """:attr:`runs` as the comparisons see them: each run's level of the factor in its
        ``environment`` column (runs without one left out); :attr:`runs` itself when the factor
        is ``environment``."""
        from sparkreport.analysis.arms import with_level

        if self.config.factor == "environment":
            return self.runs
        found = self.extra.get("_level_runs_frame")
        if found is None:
            found = self.extra["_level_runs_frame"] = with_level(self.runs, self.config.factor)
        return found

    def level_runs(self) -> dict[tuple[str, str, str], list[str]]:
        """(campaign, model, level of the factor) → the run ids (or published-arm ids) behind that
        arm of the comparisons (:func:`~sparkreport.analysis.claims.errors_behind` reads it):
        :meth:`arm_runs` when the factor is ``environment``, else the runs and published arms
        that carry a level of it. Computed once per render; do not modify it."""
        from sparkreport.analysis.arms import with_level

        if self.config.factor == "environment":
            return self.arm_runs()
        found = self.extra.get("_level_runs")
        if found is None:
            found = self.extra["_level_runs"] = {}
            frames = [with_level(f, self.config.factor) for f in (self.dataset.runs, self.dataset.summaries)]
            # a summary has a row per metric: each run id once
            for campaign, model, level, run_id in dict.fromkeys(
                    (str(c), str(m), str(level), str(run)) for f in frames
                    for c, m, level, run in zip(f["campaign"], f["model"], f["environment"], f["run_id"], strict=True)):
                found.setdefault((campaign, model, level), []).append(run_id)
        return found

    @property
    def errors(self) -> list[Finding]:
        """The error-level findings (shown as a banner on every page while unresolved)."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def assumption_groups(self) -> list[dict[str, Any]]:
        """Findings grouped by the assumption they rest on (``physics.assumption_groups``): each
        group is one doubt about that assumption, never independent checks."""
        from sparkreport.analysis.physics import assumption_groups

        return assumption_groups(self.findings)

    def model_facts(self) -> list[dict[str, Any]]:
        """Per arm: the model facts the plausibility checks used and where they came from
        (``physics.model_facts_table``: record, record and catalog, catalog, none)."""
        from sparkreport.analysis.physics import model_facts_table

        return model_facts_table(self.dataset, self.runs)

    def models(self) -> list[tuple[str, str]]:
        """(model key, display name) of every model with per-run or published data, in the order
        every page lists models (:func:`~sparkreport.names.model_order`)."""
        from sparkreport.names import model_order

        seen: dict[str, str] = {}
        for frame in (self.dataset.runs, self.dataset.summaries):
            for key, name in zip(frame["model"].tolist(), frame["model_name"].tolist(), strict=True):
                seen.setdefault(str(key), str(name))
        return sorted(seen.items(), key=lambda item: model_order(item[1], item[0]))


def git_commit(root: Path) -> str | None:
    """The project's current git commit (short, '+dirty' when modified), or None outside git."""
    return start_git_commit(root).answer()


def start_git_commit(root: Path) -> CommitAhead:
    """:func:`git_commit` of ``root`` with its two git commands started now, side by side: a
    build starts them before it walks the store (``git status`` stats every tracked file)."""
    from sparkreport.cache import GitRun

    return CommitAhead(GitRun(root, "rev-parse", "--short=12", "HEAD", timeout=10),
                       GitRun(root, "status", "--porcelain", "--untracked-files=no", timeout=10))


class CommitAhead(NamedTuple):
    """The two git commands of :func:`git_commit`, started; :meth:`answer` reads them."""

    head: GitRun
    status: GitRun

    def answer(self) -> str | None:
        try:
            head = self.head.output().decode("utf-8", "replace").strip()
            dirty = self.status.output().strip()
        except (OSError, subprocess.SubprocessError):
            self.stop()
            return None
        return f"{head}+dirty" if dirty else head or None

    def stop(self) -> None:
        """Both commands stopped if they still run (the build failed before it asked)."""
        self.head.stop()
        self.status.stop()


def kept_whole(cache: AnalysisCache | None, kind: str, make: Callable[[], T]) -> tuple[T, Any]:
    """``make()`` and the whole table of ``kind`` it kept in ``cache`` (None: none, or no cache)."""
    if cache is None:
        return make(), None
    return cache.take_made(kind, make)


def build_site_data(dataset: Dataset, config: ProjectConfig, runs_dir: Path, command: str,
                    project_root: Path, cache_dir: Path | None = None, *, save: bool = True,
                    held: Held | None = None, commit: str | None = None, commit_known: bool = False,
                    hashes: HashMemo | None = None) -> SiteData:
    """Run the analysis over ``dataset`` once and bundle what the pages need.

    With ``cache_dir`` (a build's ``build/cache``), arm statistics are kept per arm and the
    comparisons, checks and facts per campaign, each by the digests of the runs it read
    (:class:`sparkreport.cache.AnalysisCache`): after one new run only its arm and its
    campaign are computed again, and the results are the same as without the cache. Without
    ``save`` the cache is left for the caller to save (``site.analysis_cache.save()``) once what
    else goes into it is in: the render saves it after planning its pages, which computes the
    history (one 5 MB pickle a build at 10 000 runs instead of two). ``held``: see
    :func:`~sparkreport.cache.analysis_cache`. ``commit``: the project's commit as the caller found
    it (a build: the one its key was made with, which saves asking git again — a status of every
    tracked file); None asks git, unless ``commit_known`` (the caller asked: the project is not in
    git). ``hashes``: the build's file digests, which know the package's files (the cache's salt
    is their digest: 0.02–0.03 s to read and hash them all without).
    """
    import pandas as pd
    from markupsafe import Markup

    from sparkreport.analysis import arm_stats, check, compare, included_runs, inclusion_rule_text
    from sparkreport.analysis.design import constant_facts, family_rule_text
    from sparkreport.cache import analysis_cache
    from sparkreport.errors import DataError

    opts = config.analysis
    cache = analysis_cache(cache_dir, held, hashes)
    stats, whole_stats = kept_whole(cache, "arm_stats", functools.partial(
        arm_stats, dataset, opts, cache=cache, baseline=config.baseline_of("environment")))
    wholes = {"stats": (stats, whole_stats)}
    extra: dict[str, Any] = {}
    try:
        comparisons, whole_comparisons = kept_whole(cache, "compare", functools.partial(
            compare, dataset, config.factor, config.baseline, opts, cache=cache))
        wholes["comparisons"] = (comparisons, whole_comparisons)
    except DataError as exc:  # e.g. no arm at the baseline level: say so on the pages
        comparisons = pd.DataFrame()
        extra["compare_note"] = exc.format_message()
    provenance = Provenance(
        dataset_sha256=dataset.digest,
        run_count=len(dataset.runs),
        summary_count=int(dataset.summaries["run_id"].nunique()) if not dataset.summaries.empty else 0,
        version=__version__,
        command=command,
        git_commit=commit if commit is not None or commit_known else git_commit(project_root),
    )
    site = SiteData(
        dataset=dataset, config=config, runs_dir=runs_dir, stats=stats, comparisons=comparisons,
        findings=check(dataset, opts, cache=cache), runs=included_runs(dataset, opts),
        # our own sentence: the settings and check names in it are marked as code, not escaped
        inclusion_rule=Markup(inclusion_rule_text(opts, code=lambda text: f"`{text}`")),  # noqa: S704
        provenance=provenance, extra=extra,
        # every metric's: the Results pages state any that did not vary (a configured batch size as
        # much as a KV cache); the Methodology page lists the tested ones
        facts=constant_facts(dataset, opts, config.factor, cache=cache, every=True, baseline=config.baseline),
        family_rule=Markup(family_rule_text(opts, code=lambda text: f"`{text}`")),  # noqa: S704 (our own sentence)
        analysis_cache=cache, project_root=project_root,
        wholes={name: kept for name, kept in wholes.items() if kept[1] is not None},
    )
    if cache is not None and save:
        cache.save()
    return site
