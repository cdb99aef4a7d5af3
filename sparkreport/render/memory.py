"""The Unified-memory page: KV cache against the memory in use before it, and the budget per arm.

Two memory figures, never one column (schema 2): ``pre_kv_memory_gib``, memory in use before the
KV cache is allocated (trtllm-bench, TensorRT-LLM's memory log, the Phase 1 study, the
unified-memory post), and ``peak_memory_gib``, the peak in use with the KV cache (the torch
runner). The budget follows TensorRT-LLM's rule: the KV cache gets ``fraction`` of the memory that
is free once the model is loaded (``--kv_cache_free_gpu_mem_fraction``, default 0.9). Free memory
is the figure the run recorded (``memory_available_gib``), else pool − memory before the KV cache
(that one recorded, else derived as pool − free or peak − KV cache, and marked).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkreport.dataset import plain
from sparkreport.names import arm_order, campaign_order
from sparkreport.render.pages import Page, PageDoc, register

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.charts import ChartSpec
    from sparkreport.render.context import SiteData
    from sparkreport.schema import RunRecord

BUDGET_METRICS = ("memory_total_gib", "pre_kv_memory_gib", "peak_memory_gib", "memory_available_gib",
                  "kv_cache_gib", "kv_cache_fraction")
#: The metrics whose arms the page reports on (its warning banner's scope).
MEMORY_METRICS = ("pre_kv_memory_gib", "peak_memory_gib", "kv_cache_gib")


def held_constant_lines(site: SiteData, campaigns: list[str], compared: set[tuple[str, str]]) -> dict[str, list[str]]:
    """Per campaign, its memory figures that did not vary and were not compared, said once beside
    its answers (:func:`~sparkreport.render.report.constant_lines`), their values in the tables below."""
    from sparkreport.render.report import constant_lines

    out: dict[str, list[str]] = {}
    for campaign in campaigns:
        lines = constant_lines(site, campaign, MEMORY_METRICS, {m for c, m in compared if c == campaign},
                               where=" (the values are in the tables below)")
        if lines:
            out[campaign] = lines
    return out


def scatter_points(site: SiteData, campaign: str | None = None) -> pd.DataFrame:
    """Included runs, plus one point per published arm that gives memory before the KV cache and
    the KV cache (a figure a source does not give stays NaN); of one ``campaign`` only, read from
    its own rows (a campaign page), else of every campaign."""
    import pandas as pd

    from sparkreport.charts import MEASURED, PUBLISHED
    from sparkreport.render.report import grouped

    columns = ["campaign", "model_name", "environment", "pre_kv_memory_gib", "peak_memory_gib", "kv_cache_gib",
               "origin"]
    frames = []
    runs = site.runs if campaign is None else grouped(site, "runs", "campaign").get(campaign, site.runs.iloc[:0])
    runs = runs[runs["included"].astype(bool)] if not runs.empty else runs
    if not runs.empty:
        frames.append(runs.assign(origin=MEASURED).reindex(columns=columns))
    sums = site.dataset.summaries
    if campaign is not None and not sums.empty:
        sums = sums[sums["campaign"].astype(str) == campaign]
    if not sums.empty:
        wide = sums.pivot_table(index=["campaign", "model_name", "environment"], columns="metric",
                                values="mean", aggfunc="first").reset_index()
        if "kv_cache_gib" in wide.columns:
            frames.append(wide.assign(origin=PUBLISHED).reindex(columns=columns))
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)


#: Every arm's memory budget, beside the page when it shows only the newest campaigns.
BUDGET_FILE = "budget.csv"
BUDGET_COLUMNS = ("campaign", "model", "environment", "pool", "pre_kv", "pre_kv_from", "peak", "free",
                  "free_computed", "fraction", "expected_kv", "kv", "kv_share")


def write_budget_csv(budget: list[dict[str, Any]], path: Path) -> None:
    """The budget rows as CSV, in GiB (4 decimals), through the site's CSV guard (``csv_safe``)."""
    import pandas as pd

    from sparkreport.dataset import csv_safe

    csv_safe(pd.DataFrame(budget, columns=list(BUDGET_COLUMNS)).round(4)).to_csv(path, index=False)


def budget_rows(site: SiteData) -> list[dict[str, Any]]:
    """Per arm: pool → memory before the KV cache → free → KV cache at the recorded fraction.

    Memory before the KV cache is ``pre_kv_memory_gib`` where the source reports it (trtllm-bench,
    TensorRT-LLM's log), else the pool less the memory the run found free for the KV cache
    (``memory_available_gib``: the torch runner), else the peak in use less the KV cache
    (``peak_memory_gib`` includes it): a budget never stacks the peak and the KV cache. Computed
    once per render (the page's text and its chart both read it).
    """
    cached = site.extra.get("_budget_rows")
    if cached is None:
        cached = site.extra["_budget_rows"] = _budget_rows(site)
    return [dict(row) for row in cached]


def _budget_rows(site: SiteData) -> list[dict[str, Any]]:
    stats = site.stats
    stats = stats.loc[stats["metric"].isin(BUDGET_METRICS).to_numpy(),
                      ["campaign", "model", "environment", "metric", "mean", "source", "model_name"]]
    if stats.empty:
        return []
    # Each arm's first mean of each budget metric, its first source and name (what a pivot and
    # two groupings of the rows gave, with their "first": the first value that is not missing),
    # read in one pass over plain columns (the pivot and groupings were a third of the page's fill).
    means: dict[tuple[str, str, str], dict[str, float]] = {}
    sources: dict[tuple[str, str, str], Any] = {}
    names: dict[tuple[str, str, str], Any] = {}
    for campaign, model, environment, metric, mean, source, name in zip(
            *(stats[column].tolist() for column in stats.columns), strict=True):
        if campaign is None or model is None or environment is None:
            continue  # (no group for a missing key)
        key = (str(campaign), str(model), str(environment))
        row = means.setdefault(key, {})
        if _present(mean):
            row.setdefault(str(metric), float(mean))
        if _present(source):
            sources.setdefault(key, source)
        if _present(name):
            names.setdefault(key, name)
    pools: dict[tuple[str, str, str], float] = {}
    fractions: dict[tuple[str, str, str], float] = {}
    unified: dict[tuple[str, str, str], bool] = {}
    for settings in site.per_campaign("memory-settings", arm_memory_settings).values():
        for key, (pool, fraction, unified_memory) in settings.items():  # keys carry their campaign
            if pool is not None:
                pools[key] = pool
            if fraction is not None:
                fractions[key] = fraction
            unified[key] = unified_memory
    out = []
    for key in sorted(key for key, row in means.items() if row):  # (an arm with no mean: none in a pivot)
        values = {m: plain(means[key].get(m)) for m in BUDGET_METRICS}
        kv = values["kv_cache_gib"]
        pre_kv = values["pre_kv_memory_gib"]
        peak = values["peak_memory_gib"]
        pool = values["memory_total_gib"] or pools.get(key)
        free = values["memory_available_gib"]
        # Not recorded: the pool less the memory the run found free for the KV cache (the two add
        # up to the pool, as a budget must), else the peak less the KV cache (which also counts the
        # working memory of the forward passes: an upper bound).
        pre_kv_from = None
        if pre_kv is None and pool is not None and free is not None:
            pre_kv, pre_kv_from = pool - free, "pool − free"
        elif pre_kv is None and peak is not None and kv is not None:
            pre_kv, pre_kv_from = peak - kv, "peak − KV cache"
        if pre_kv is None:
            continue
        free_computed = free is None and pool is not None
        if free_computed and pool is not None:
            free = pool - pre_kv
        fraction = values["kv_cache_fraction"] or fractions.get(key)
        expected = fraction * free if fraction is not None and free is not None else None
        out.append({
            "campaign": key[0], "model": key[1], "model_name": names.get(key, math.nan), "environment": key[2],
            "published": sources.get(key) == "published", "pool": pool, "pre_kv": pre_kv,
            # memory in use before the KV cache (recorded, else derived: pre_kv_from says how) is
            # what the budget starts from; "peak" is the peak with the KV cache, when recorded.
            "pre_kv_from": pre_kv_from, "peak": peak,
            "free": free, "free_computed": free_computed, "fraction": fraction, "expected_kv": expected,
            "kv": kv, "kv_share": kv / free if kv is not None and free else None,
            "unified": unified.get(key, False),
            "over_pool": pool is not None and pre_kv + (kv or 0.0) > pool * 1.001,
        })
    # by the name a reader sees, as every page lists models (the keys sorted Qwen before gemma),
    # each model's environments as every table lists them (the baseline first)
    baseline = site.config.baseline_of("environment")
    out.sort(key=lambda b: arm_order(b["campaign"], b["model_name"], b["model"], b["environment"], baseline))
    return out


def _present(value: Any) -> bool:
    """Whether a cell read with ``tolist`` holds a value (not None, not NaN)."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


@register
class MemoryPage(Page):
    name = "memory"
    title = "Memory"
    template = "memory.md"
    folder = "memory"
    order = 20

    def context(self, site: SiteData, doc: PageDoc, out: Path) -> dict[str, Any]:
        from sparkreport.dataset import frame_rows as rows

        shown, earlier = self.campaign_split(site)
        pairs = site.stats[site.stats["metric"].isin(MEMORY_METRICS)
                           & site.stats["campaign"].astype(str).isin(shown)]
        doc.scope = sorted(set(zip(pairs["campaign"].astype(str), pairs["model"].astype(str), strict=True)))
        wide = []
        arms: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in rows(pairs):  # one conversion, then grouped (a frame's rows cost ~3 ms a call)
            arms.setdefault((str(row["campaign"]), str(row["model"]), str(row["environment"])), []).append(row)
        baseline = site.config.baseline_of("environment")
        for (campaign, model, env), group in sorted(arms.items(), key=lambda item: arm_order(
                item[0][0], str(item[1][0]["model_name"]), item[0][1], item[0][2], baseline)):
            by_metric = {r["metric"]: r for r in group}
            wide.append({"campaign": campaign, "model": model, "environment": env,
                         "model_name": group[0]["model_name"], "source": group[0]["source"],
                         "pre_kv": by_metric.get("pre_kv_memory_gib"),
                         "peak": by_metric.get("peak_memory_gib"), "kv": by_metric.get("kv_cache_gib")})
        from sparkreport.render.report import (
            answer,
            campaigns,
            cgroup_observation,
            effect_rows,
            titles_phrase,
            verdict_key,
        )

        # Neighbouring campaigns of one design (a release each) are one block, as on Home: the
        # newest in full, the others by how far they differ from it (see the module's docstring).
        blocks = self.blocks(site, shown)
        drawn = {block["newest"].name for block in blocks}
        several = [block for block in blocks if len(block["campaigns"]) > 1]
        for block in several:
            block["older"] = [c.name for c in block["campaigns"] if c.name != block["newest"].name]
        every_arm = budget_rows(site)
        budget = [b for b in every_arm if b["campaign"] in shown]
        known = [c for c in campaigns(site) if c.name in shown]
        unified = [c for c in known if c.unified]
        discrete = [c for c in known if c.unified is False]
        observations = [text for text in (cgroup_observation(site, c.name) for c in discrete) if text]
        pool_text = {"unified": pool_phrase(unified, budget), "discrete": pool_phrase(discrete, budget)}
        titles = {"unified": titles_phrase([c.title for c in unified]),
                  "discrete": titles_phrase([c.title for c in discrete])}
        if earlier or several:  # every arm's budget, the older campaigns' too, beside the page
            folder = out / self.folder
            folder.mkdir(parents=True, exist_ok=True)
            write_budget_csv(every_arm, folder / BUDGET_FILE)
            doc.files = [f"{self.folder}/{BUDGET_FILE}"]
        # each campaign's answer about memory, worded as Home and Results word theirs
        effects = [e for e in effect_rows(site) if e["metric"] in MEMORY_METRICS and str(e["campaign"]) in shown]
        compared = {(str(e["campaign"]), str(e["metric"])) for e in effects}
        constant = held_constant_lines(site, [c.name for c in known], compared)
        answered = {str(e["campaign"]) for e in effects} | set(constant)
        # In the blocks' order, each several campaigns' introduction (``intro``) with its own answer,
        # not all of them above the first: a lone campaign listed first kept theirs from them.
        answers = []
        for block in blocks:
            newest = block["newest"].name
            intro = block if len(block["campaigns"]) > 1 else None
            if not answered & {c.name for c in block["campaigns"]}:
                if intro is not None:  # no answer, but the page still says which campaigns it covers
                    answers.append({"campaign": newest, "lines": [], "block": None, "intro": intro})
                continue
            lines = answer(site, [e for e in effects if e["campaign"] == newest]) + constant.get(newest, [])
            answers.append({"campaign": newest, "lines": lines, "intro": intro,
                            "block": intro and block_answers(site, block, effects, constant)})
        fits = [f for f in identity_fits(site) if f["campaign"] in shown]
        moves = [a["block"]["moves"] for a in answers if a["block"] and a["block"]["moves"]]
        return {"answers": answers,
                "key": verdict_key(site, [e for m in moves for e in m["effects"]],
                                   gaps=any(m["gaps"] for m in moves),
                                   intervals=all(m["by"] == "campaign" for m in moves)) if moves else "",
                "block_of": {block["newest"].name: block for block in several},
                "moved": {block["newest"].name: largest_move(wide, block) for block in several},
                "arms": [a for a in wide if a["campaign"] in drawn],
                "budget": [b for b in budget if b["campaign"] in drawn],
                "unified_campaigns": unified, "discrete_campaigns": discrete,
                "observations": observations, "pool_text": pool_text, "titles": titles,
                "has_pre_kv": bool((pairs["metric"] == "pre_kv_memory_gib").any()),
                # the fits of the campaigns shown, and as the page says them: a block's once
                "identity": fits, "fits": identity_sections(fits, blocks),
                "ledger": ledger_summary(site),
                "shown": sorted(shown, key=campaign_order), "earlier": sorted(earlier, key=campaign_order),
                "budget_file": BUDGET_FILE,
                "results_href": doc.href("results/index.md")}

    @staticmethod
    def blocks(site: SiteData, shown: set[str]) -> list[dict[str, Any]]:
        """The campaigns the page shows as Home's blocks
        (:func:`~sparkreport.render.home.campaign_blocks`): a run of neighbouring campaigns of one
        design is one block, whose ``newest`` the page gives in full; any other campaign a block
        of its own."""
        from sparkreport.render.home import campaign_blocks
        from sparkreport.render.report import campaigns

        return campaign_blocks(site, [c for c in campaigns(site) if c.name in shown])

    @staticmethod
    def campaign_split(site: SiteData) -> tuple[set[str], set[str]]:
        """The campaigns the page shows (the newest, of those with memory figures), and the rest."""
        from sparkreport.render.report import newest_campaigns

        memory = site.stats[site.stats["metric"].isin(MEMORY_METRICS + BUDGET_METRICS)]
        shown, earlier = newest_campaigns(site, {str(value) for value in memory["campaign"].unique()})
        return set(shown), set(earlier)

    def charts(self, site: SiteData, doc: PageDoc) -> list[ChartSpec]:
        from sparkreport.charts import memory_scatter
        from sparkreport.render.report import campaign_titles, environment_colours

        shown, _earlier = self.campaign_split(site)
        # of campaigns of one design, the newest, its panel saying so: a panel per release
        # repeated one budget
        blocks = self.blocks(site, shown)
        drawn = {block["newest"].name for block in blocks}
        titles = campaign_titles(site)
        titles = {**titles, **{block["newest"].name: f"{block['newest'].title}, the newest of "
                                                     f"{block['campaigns'][0].title} to {block['campaigns'][-1].title}"
                               for block in blocks if len(block["campaigns"]) > 1}}
        out = []
        waterfall = budget_chart([b for b in budget_rows(site) if b["campaign"] in drawn], titles)
        if waterfall is not None:
            out.append(waterfall)
        points = scatter_points(site)
        chart = memory_scatter(points[points["campaign"].astype(str).isin(drawn)], name="kv-vs-peak",
                               title="KV cache against memory in use before it was allocated",
                               fits=[f for f in identity_fits(site) if f["campaign"] in drawn],
                               titles=titles, colours=environment_colours(site))
        if chart is not None:
            out.append(chart)
        return out


#: Rows of a block's table of how its answers moved before "and N more" (as on Home).
ANSWER_ROWS = 40


def block_answers(site: SiteData, block: dict[str, Any], effects: list[dict[str, Any]],
                  constant: dict[str, list[str]]) -> dict[str, Any]:
    """How the memory answers of a block's campaigns (of one design) moved, beside its newest's
    answer: ``moves``, Home's table of them (:func:`~sparkreport.render.home.answers_moved`, the
    memory metrics only), or, when every campaign gave each model the same verdict on each
    figure, ``alike`` instead: the span of their differences per metric, a sentence. What an
    older campaign held constant that the newest did not (``besides``: campaign and lines) is
    said under it. Without a table (no memory metric is primary), ``older_answers``: each older
    campaign's own answer, as the page gave it before."""
    from sparkreport.render.home import answers_moved
    from sparkreport.render.report import answer

    names = [c.name for c in block["campaigns"]]
    newest = block["newest"].name
    of_block = [e for e in effects if e["campaign"] in names]
    older = [name for name in names if name != newest]
    besides = [{"campaign": name, "lines": constant[name]} for name in older
               if constant.get(name) and constant.get(name) != constant.get(newest)]
    moves = answers_moved(site, of_block, names, ANSWER_ROWS) if of_block else None
    if moves is not None and not moves["rows"]:
        moves = None
    alike = answered_alike(moves) if moves is not None and not besides else None
    older_answers = [] if moves is not None else [
        {"campaign": name, "lines": lines} for name in older
        if (lines := answer(site, [e for e in of_block if e["campaign"] == name]))]
    return {"campaigns": block["campaigns"], "older": older, "differs": block["differs"],
            "moves": None if alike else moves, "alike": alike, "besides": besides, "older_answers": older_answers}


def answered_alike(moves: dict[str, Any]) -> list[dict[str, Any]] | None:
    """When every campaign of a block gave each model the same mark on each metric of ``moves``
    (:func:`~sparkreport.render.home.answers_moved`), the span of their differences per metric
    (``label``, ``low``, ``high``, in percent), for one sentence instead of the table; else None
    (a mark that moves, a model compared in some campaigns only, or rows cut short)."""
    if moves.get("more"):
        return None
    spans = []
    for m in moves["metrics"]:
        deltas: list[float] = []
        if moves["by"] == "campaign":  # a row per campaign, each cell an effect
            cells = [row["cells"].get(m["metric"]) for row in moves["rows"]]
            if len({cell["mark"] if cell is not None else None for cell in cells}) > 1:
                return None
            deltas = [cell["delta_pct"] for cell in cells if cell is not None and cell["delta_pct"] is not None]
        else:  # a row per model, each cell the campaigns' marks in order and the span of their Δ%
            for row in moves["rows"]:
                cell = row["cells"][m["metric"]]
                if len(set(cell["marks"])) > 1:
                    return None
                deltas += [value for value in (cell["low"], cell["high"]) if value is not None]
        if deltas:
            spans.append({"label": m["label"], "low": min(deltas), "high": max(deltas)})
    return spans


def largest_move(arms: list[dict[str, Any]], block: dict[str, Any]) -> dict[str, Any] | None:
    """How far the older campaigns of a block are from its newest, in the figures of the page's
    table of memory in use (``arms``: its rows, every campaign's): the largest difference of an
    arm's mean from the newest's same arm (``gib``, with the ``arm``, ``label`` and ``campaign``
    it is found in), and how many of their arms the newest lacks (``unmatched``). None when no
    arm of theirs matches one of the newest."""
    from sparkreport.render.tables import metric_label

    newest = block["newest"].name
    names = {c.name for c in block["campaigns"]} - {newest}
    figures = {"pre_kv": "pre_kv_memory_gib", "peak": "peak_memory_gib", "kv": "kv_cache_gib"}
    base = {(a["model"], a["environment"]): a for a in arms if a["campaign"] == newest}
    best: dict[str, Any] | None = None
    unmatched = 0
    for a in arms:
        if a["campaign"] not in names:
            continue
        same = base.get((a["model"], a["environment"]))
        if same is None:
            unmatched += 1
            continue
        for key, metric in figures.items():
            mean, newest_mean = (plain(row[key]["mean"]) if row[key] is not None else None for row in (a, same))
            if mean is None or newest_mean is None:
                continue
            gib = abs(float(mean) - float(newest_mean))
            if best is None or gib > best["gib"]:
                best = {"gib": gib, "arm": f"{a['model_name']} in {a['environment']}", "label": metric_label(metric),
                        "campaign": a["campaign"]}
    return None if best is None else {**best, "unmatched": unmatched}


def identity_fits(site: SiteData) -> list[dict[str, Any]]:
    """The derived-identity fits (KV = fraction × free + c) per campaign, with their numbers;
    ``body``: the finding's sentence without its campaign prefix (the page names the campaign
    by its title where it shows several)."""
    from sparkreport.render.report import message_body

    return [
        {"campaign": f.message.split(":")[0], "message": f.message, "body": message_body(f.message), **f.numbers}
        for f in site.findings if f.code == "derived-identity"
    ]


#: The numbers of a derived-identity finding's sentence that differ between two campaigns whose
#: runtimes sized the KV cache alike: its intercept and its R² (written by
#: :func:`sparkreport.analysis.physics._identity`).
_FIT_NUMBERS = re.compile(r" (?P<c>[+-]\d+\.\d+) GiB fits all (?P<arms>\d+) arms \(R² (?P<r2>\d\.\d+)\)")


def identity_sections(fits: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """"One finding, not two": the ``fits`` (:func:`identity_fits`) in the order of ``blocks``,
    the campaigns of a block whose sentences agree but for the intercept and R² (the same
    fraction, the same free memory and as many arms) said once (``campaigns``, several, with
    ``contiguous``: they follow one another in it, so the page names them by the first and the
    last; ``body``: the sentence with the span of their intercepts and R²), any other fit as its
    campaign's own.
    ``fractions``: the fitted fraction of each line, and ``same``: one fraction, in more than one
    campaign (said once: "0.900 in every campaign"). Empty ``lines`` when no fit holds."""
    by_campaign = {f["campaign"]: f for f in fits}
    lines: list[dict[str, Any]] = []
    for block in blocks:
        names = [c.name for c in block["campaigns"]]
        groups: dict[str, list[dict[str, Any]]] = {}
        for name in names:
            fit = by_campaign.get(name)
            if fit is not None:
                found = _FIT_NUMBERS.search(fit["body"])
                key = _FIT_NUMBERS.sub(f" _ fits all {found['arms']} arms", fit["body"]) if found else name
                groups.setdefault(key, []).append(fit)
        for members in groups.values():
            if len(members) == 1:
                lines.append({"campaigns": [members[0]["campaign"]], "body": members[0]["body"],
                              "fraction": members[0]["fraction"]})
                continue
            numbers = [match for f in members if (match := _FIT_NUMBERS.search(f["body"]))]  # all: they are keyed so
            intercepts = sorted({float(match["c"]) for match in numbers})
            r2 = sorted({match["r2"] for match in numbers}, key=float)
            c = f"{numbers[0]['c']} GiB" if len(intercepts) == 1 else "+ c"  # one: as the finding writes it
            told = f"R² {r2[0]}" if len(r2) == 1 else f"R² {r2[0]} to {r2[-1]}"
            if len(intercepts) > 1:
                told = f"c from {intercepts[0]:+.2f} to {intercepts[-1]:+.2f} GiB; {told}"
            body = _FIT_NUMBERS.sub(f" {c} fits all {numbers[0]['arms']} arms of each ({told})", members[0]["body"])
            at = [names.index(f["campaign"]) for f in members]
            lines.append({"campaigns": [f["campaign"] for f in members], "body": body,
                          "fraction": members[0]["fraction"], "contiguous": at == list(range(at[0], at[0] + len(at)))})
    fractions = [line["fraction"] for line in lines]
    return {"lines": lines, "fractions": fractions,
            "same": len({round(f, 3) for f in fractions}) == 1 and sum(len(line["campaigns"]) for line in lines) > 1}


def pool_phrase(campaigns: list[Any], budget: list[dict[str, Any]]) -> str:
    """The memory pools of ``campaigns`` as the prose names them: each recorded pool (the
    hardware record: NVML's total or the published one) and, where the Budget's pool differs (the
    device total a run measured through the CUDA runtime, without what the driver keeps), that
    one too, so both numbers a reader meets on the page are explained where the first appears."""
    from sparkreport.render.markdown import num

    recorded = sorted({round(pool, 2) for c in campaigns for pool in c.pools_gib})
    names = {c.name for c in campaigns}
    measured = sorted({round(b["pool"], 2) for b in budget if b["campaign"] in names and b["pool"] is not None}
                      - set(recorded))
    text = " / ".join(num(pool, digits=2) for pool in recorded)
    if not recorded:
        return " / ".join(num(pool, digits=2) for pool in measured) + " GiB" if measured else ""
    if not measured:
        return f"{text} GiB"
    seen = " / ".join(num(pool, digits=2) for pool in measured)
    return (f"{text} GiB on the card; the runs measured {seen} GiB of it through the CUDA runtime, which "
            "leaves out what the driver keeps, and the Budget below starts from that")


#: Keys in a run's environment/hardware details that the executor's memory ledger writes.
LEDGER_HINTS = ("meminfo", "cgroup", "page_cache", "ledger", "shm")


def arm_memory_settings(records: list[RunRecord]) -> dict[tuple[str, str, str], tuple[Any, Any, bool]]:
    """Per (campaign, model, environment) of a campaign's records: the first memory pool and KV
    cache fraction recorded (None if none) and whether its first record says unified memory."""
    pools: dict[tuple[str, str, str], float] = {}
    fractions: dict[tuple[str, str, str], float] = {}
    unified: dict[tuple[str, str, str], bool] = {}
    for record in records:
        key = (record.campaign, record.model.name, record.environment.name)
        if record.hardware.memory_pool_gib is not None:
            pools.setdefault(key, record.hardware.memory_pool_gib)
        if record.workload.kv_cache_fraction is not None:
            fractions.setdefault(key, record.workload.kv_cache_fraction)
        unified.setdefault(key, bool(record.hardware.unified_memory))
    return {key: (pools.get(key), fractions.get(key), unified[key]) for key in unified}


def ledger_summary(site: SiteData) -> dict[str, Any]:
    """Which runs recorded a memory ledger (/proc/meminfo, cgroup statistics, cache state)."""
    per = site.per_campaign("ledger", ledger_fields)
    keys = {key for _runs, fields in per.values() for key in fields}
    return {"runs": sum(runs for runs, _fields in per.values()), "total": len(site.dataset.records),
            "fields": sorted(keys)}


def ledger_fields(records: list[RunRecord]) -> tuple[int, list[str]]:
    """How many of a campaign's records hold a memory ledger, and the ledger fields they hold."""
    with_ledger = []
    keys: set[str] = set()
    is_ledger: dict[str, bool] = {}  # by key: ten thousand runs repeat a few dozen names
    for record in records:
        found = set()
        for section in (record.environment.details, record.hardware.details, record.workload.details):
            for k in section:
                hit = is_ledger.get(k)
                if hit is None:
                    hit = is_ledger[k] = any(h in k.lower() for h in LEDGER_HINTS)
                if hit:
                    found.add(k)
        if found:
            with_ledger.append(record.run_id)
            keys |= found
    return len(with_ledger), sorted(keys)


def budget_chart(budget: list[dict[str, Any]], titles: dict[str, str] | None = None) -> ChartSpec | None:
    """The memory budget as stacked bars per arm: memory before the KV cache → KV cache → left
    free. The bar is the pool: a KV cache that would pass it is cut at the pool (and said so).
    A row of bars per campaign, headed by its title (``titles``: campaign → title)."""
    from sparkreport.charts import BUDGET_COLOURS, ChartSpec

    parts = tuple(BUDGET_COLOURS)
    data = []
    for b in budget:
        if b["pool"] is None or b["pre_kv"] is None:
            continue
        arm = f"{b['model_name']} · {b['environment']}"
        pre_kv = min(b["pre_kv"], b["pool"])
        kv = min(b["kv"] or 0.0, b["pool"] - pre_kv)
        rest = max(b["pool"] - pre_kv - kv, 0.0)
        for order, (part, value) in enumerate(zip(parts, (pre_kv, kv, rest), strict=True)):
            data.append({"arm": arm, "campaign": (titles or {}).get(b["campaign"], b["campaign"]), "part": part,
                         "gib": round(value, 3),
                         "order": order})
    if not data:
        return None
    title = "Memory budget per arm"
    description = ("The memory pool of each arm split into the memory in use before the KV cache, the KV "
                   "cache and what is left free (means); each bar is exactly the pool.")
    return ChartSpec(name="memory-budget", title=title, description=description,
                     spec=budget_spec(data, parts, title=title), rows=len(data))


def budget_spec(data: list[dict[str, Any]], parts: tuple[str, ...], *, title: str) -> dict[str, Any]:
    """The budget chart's spec: per arm a bar of the ``parts`` stacked in order (the sum of
    ``gib``), each in its :data:`~sparkreport.charts.BUDGET_COLOURS` colour, a row of arms per
    campaign, each row with its own arms."""
    from sparkreport.charts import BUDGET_COLOURS, PANEL_WIDTH, mark, nominal, quantitative, top_level

    return top_level({"data": {"values": data}, "mark": mark("bar"), "encoding": {
        "color": nominal("part", legend={"orient": "bottom"},
                         scale={"domain": list(parts), "range": [BUDGET_COLOURS[part] for part in parts]},
                         title="budget"),
        "order": quantitative("order"),
        # each campaign's name above its panel, not beside it: beside, it took ~200 px of the
        # column and the chart was drawn at 77% of its size on a desktop
        "row": nominal("campaign", header={"labelAlign": "left", "labelAnchor": "start", "labelAngle": 0,
                                           "labelFontWeight": "bold", "labelLimit": 600, "labelOrient": "top"},
                       title=None),
        "tooltip": [nominal("arm"), nominal("part"), quantitative("gib", format=".2f", title="GiB")],
        "x": quantitative("gib", aggregate="sum", stack="zero", title="GiB of the memory pool (the whole bar)"),
        "y": nominal("arm", axis={"labelLimit": 360}, sort=None, title=None)}},
        resolve={"scale": {"y": "independent"}}, title=title, width=PANEL_WIDTH)
