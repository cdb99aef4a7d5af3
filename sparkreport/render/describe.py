"""How the runs of a campaign were made, as the pages describe them: each campaign's design
(:func:`describe_campaign`: what it held constant, what only some runs recorded, what differs
between its environments) and the runs of neighbouring campaigns of one design
(:func:`design_groups`), which Methodology describes once and Home and Memory give one block.

Here, not in :mod:`sparkreport.render.builtin`, so that the modules of those blocks
(:mod:`sparkreport.render.home`, :mod:`sparkreport.render.memory`) and the built-in pages import
it without importing each other.
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Any

from sparkreport.names import level_order
from sparkreport.render.report import join_and
from sparkreport.schema import RunRecord

if TYPE_CHECKING:
    from sparkreport.render.context import SiteData


def _description(records: list[RunRecord], baseline: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A campaign's :func:`describe_campaign` and :func:`environment_descriptions`."""
    return describe_campaign(records, baseline), environment_descriptions(records)


def campaign_descriptions(site: SiteData) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each campaign's :func:`describe_campaign` and :func:`environment_descriptions`, made from
    its records alone (environments are never compared across campaigns), kept per campaign."""
    baseline = site.config.baseline
    return site.per_campaign("description", functools.partial(_description, baseline=baseline),
                             (("baseline", baseline),))


def described_campaigns(site: SiteData, shown: list[Any]) -> list[dict[str, Any]]:
    """Methodology's description of each campaign in ``shown``: what was run, what was held
    constant, how the factor's levels differ (with the allowlisted environment variables that
    differ between them, never a dump)."""
    per = campaign_descriptions(site)
    described = [{"campaign": c, **copy.deepcopy(per[c.name][0])} for c in shown]
    variables = {(e["campaign"], e["name"]): e["variables"] for c in shown for e in per[c.name][1]}
    for d in described:
        named = {n for level in d["levels"] for n in variables.get((d["campaign"].name, level["name"])) or {}}
        for level in d["levels"]:
            found = variables.get((d["campaign"].name, level["name"])) or {}
            if named:
                level["variables"] = variables_cell(found, sorted(named - set(found)))
        if any("variables" in level for level in d["levels"]):
            d["level_columns"].append({"key": "variables", "label": "variables that differ"})
    return described


def _design(d: dict[str, Any]) -> str:
    """What a campaign's description says of its design but for the values of the settings held
    constant and its run count: campaigns with equal designs are described once."""
    c = d["campaign"]
    return repr((c.description, c.source, c.models, sorted(c.design.items(), key=str), d["varying"], d["levels"],
                 d["level_columns"], d["iterations"], d["cooldown"], [label for label, _value in d["held"]],
                 [(p["label"], p["scope_key"]) for p in d["partly"]]))


def design_groups(described: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Methodology's sections: each run of neighbouring campaigns (in ``described``'s order) of one
    design (:func:`_design`: the same models, workload settings, environments, iterations and
    order; only the values of settings held constant, an engine version say, and the run counts
    may differ) is one section, described once — ``campaigns``, ``d`` (the first one's
    description with only what every one of them holds constant, and their runs as one count or a
    range) and ``differs`` (each setting whose value differs, with its values in order, then the
    run counts where they differ). Published figures are described one campaign at a time.
    A release per campaign (a store of fifty) gave five copies of one description."""
    groups: list[list[dict[str, Any]]] = []
    for d in described:
        last = groups[-1][-1] if groups else None
        if last is not None and not d["campaign"].published and not last["campaign"].published \
                and _design(d) == _design(last):
            groups[-1].append(d)
        else:
            groups.append([d])
    out = []
    for members in groups:
        if len(members) == 1:
            out.append({"campaigns": [members[0]["campaign"]], "d": members[0], "differs": []})
            continue
        merged = copy.deepcopy(members[0])
        values = [[value for _label, value in d["held"]] for d in members]
        labels = [label for label, _value in merged["held"]]
        same = [len({row[i] for row in values}) == 1 for i in range(len(labels))]
        merged["held"] = [pair for pair, kept in zip(merged["held"], same, strict=True) if kept]
        runs = [d["campaign"].runs for d in members]
        merged["runs_text"] = (f"{runs[0]:,}" if len(set(runs)) == 1 else f"{min(runs):,} to {max(runs):,}")
        merged["each"] = True
        differs = [{"label": label, "values": [row[i] for row in values]}
                   for i, label in enumerate(labels) if not same[i]]
        merged["partly"] = []
        for i, first in enumerate(members[0]["partly"]):
            each = [d["partly"][i] for d in members]
            # the count where every campaign has it, else "the vllm runs" of each
            scope = first["scope"] if len({p["scope"] for p in each}) == 1 else first["scope_key"]
            if len({p["value"] for p in each}) == 1:
                merged["partly"].append({**first, "scope": scope})
            else:
                differs.append({"label": first["label"], "values": [p["value"] for p in each], "scope": scope})
        if len(set(runs)) > 1:
            differs.append({"label": "runs", "values": [f"{n:,}" for n in runs]})
        out.append({"campaigns": [d["campaign"] for d in members], "d": merged, "differs": differs})
    return out


#: The "variables that differ" cell: at most this many variables, each value cut to this length
#: (a chroot given three variables beside a native environment that inherits a CUDA image's ten
#: made a 3,000-character cell of NVIDIA_REQUIRE_CUDA's driver ranges).
VARIABLES_SHOWN = 4
VARIABLE_CHARS = 32


def variables_cell(found: dict[str, list[Any]], missing: list[str]) -> str:
    """The variables one environment sets differently from the others (``found``, by name) and
    those the others set and it does not (``missing``), for a table cell: at most
    :data:`VARIABLES_SHOWN` of each, each value cut to :data:`VARIABLE_CHARS`, and how many
    more; every value is in each run's record (Runs)."""
    def value(values: list[Any]) -> str:
        text = "/".join(map(str, values))
        return text if len(text) <= VARIABLE_CHARS else text[:VARIABLE_CHARS - 1] + "…"

    def more(count: int) -> str:
        return f" … and {count} more" if count > 0 else ""

    parts = []
    if found:
        parts.append("; ".join(f"{name}={value(values)}" for name, values in list(found.items())[:VARIABLES_SHOWN])
                     + more(len(found) - VARIABLES_SHOWN))
    if missing:
        parts.append("not set: " + ", ".join(missing[:VARIABLES_SHOWN]) + more(len(missing) - VARIABLES_SHOWN))
    return "; ".join(parts)


#: Settings a reader needs to know how runs were made, by section: (attribute, label, unit).
SETTINGS = {
    "workload": (("num_requests", "requests per run", ""), ("input_len", "input length", " tokens"),
                 ("output_len", "output length", " tokens"), ("batch_size", "batch size", ""),
                 ("concurrency", "concurrency", ""), ("kv_cache_fraction", "KV cache fraction of free memory", "")),
    "software": (("engine", "engine", ""), ("engine_version", "engine version", ""), ("backend", "backend", ""),
                 ("cuda", "CUDA", ""), ("driver", "driver", ""), ("image", "container image", "")),
    "hardware": (("gpu_name", "GPU", ""), ("memory_pool_gib", "memory pool", " GiB"),
                 ("unified_memory", "unified memory", "")),
}
#: Environment details worth a column when they differ between levels (never paths, argv or
#: environment variables).
ENVIRONMENT_DETAILS = ("runtime", "flags", "method", "memory_limit_gib", "cgroup_version", "image")


def _text(value: Any, unit: str = "") -> str:
    from sparkreport.render.tables import value_text

    # a size in GiB as every page writes one (two decimals: 79.65, not 79.647 beside the Memory
    # page's 79.65); other settings as recorded
    text = f"{value:,.2f}" if unit == " GiB" and isinstance(value, float) else value_text(value)
    return (text if len(text) <= 120 else text[:117] + "…") + unit


def _texts(values: list[Any], unit: str) -> list[str]:
    """Each distinct :func:`_text` of ``values``, in the order they first come (each distinct
    value written once: a campaign's two hundred runs mostly record one)."""
    seen: dict[Any, Any] = {}
    try:  # (by type and value: 1, 1.0 and True are written apart; a float by its repr: -0.0 and 0.0)
        for value in values:
            seen.setdefault((type(value), repr(value) if isinstance(value, float) else value), value)
        distinct = list(seen.values())
    except TypeError:  # (a list or mapping: each written)
        distinct = values
    return list(dict.fromkeys(_text(value, unit) for value in distinct))


#: What names the runs that record a setting, in the order tried (:func:`which_runs`): the
#: engine, the input format, the environment, the model.
RUN_KINDS: tuple[tuple[str, str], ...] = (("software", "engine"), ("provenance", "format"),
                                          ("environment", "name"), ("model", "name"))


def _noun(records: list[Any]) -> str:
    """What a campaign's records are called: runs, arms (published arm summaries) or records."""
    kinds = {r.record_type for r in records}
    return "runs" if kinds == {"run"} else "arms" if kinds == {"arm_summary"} else "records"


def which_runs(records: list[Any], recording: list[bool]) -> tuple[str, str]:
    """The records ``recording`` marks (some of ``records``, not all), named so a reader can find
    them: where they are exactly the runs of some engines (or input formats, environments,
    models, tried in that order: :data:`RUN_KINDS`), "the 12 vllm runs", else "12 of the 24
    runs". Returns that and the same without the count ("the vllm runs"), which neighbouring
    campaigns of one design share whatever their run counts."""
    noun = _noun(records)
    count = sum(recording)
    for section, attribute in RUN_KINDS:
        kinds = [str(getattr(getattr(r, section), attribute) or "") for r in records]
        named = sorted({kind for kind, found in zip(kinds, recording, strict=True) if found})
        if "" not in named and not any(kind in named for kind, found in zip(kinds, recording, strict=True)
                                       if not found):
            what = join_and(named)
            return f"the {count:,} {what} {noun}", f"the {what} {noun}"
    text = f"{count:,} of the {len(records):,} {noun}"
    return text, text


def describe_campaign(records: list[Any], baseline: str) -> dict[str, Any]:
    """What a campaign's records say about how its runs were made: the settings held constant
    (one value in every record), those recorded by some records only with one value in those
    (``partly``: each with ``label``, ``value`` and the records that give it, ``scope``, named
    by :func:`which_runs`, and ``scope_key``, the same without the count), those that vary
    (their values, and which records give them where not all do), and how the levels differ (a
    small table). A setting is never called held constant from the records that give it alone:
    a campaign of trtllm logs (lengths, GPU) and vLLM results (concurrency) held none of them
    in every run."""
    held: list[list[str]] = []  # [label, value] of each setting with one value in every record
    partly: list[dict[str, str]] = []
    varying: list[str] = []
    for section, settings in SETTINGS.items():
        for attribute, label, unit in settings:
            recorded = [getattr(getattr(r, section), attribute) for r in records]
            recording = [value not in (None, "") for value in recorded]
            values = _texts([value for value, found in zip(recorded, recording, strict=True) if found], unit)
            scope, scope_key = which_runs(records, recording) if values and not all(recording) else ("", "")
            if len(values) == 1 and not scope:
                held.append([label, values[0]])
            elif len(values) == 1:
                partly.append({"label": label, "value": values[0], "scope": scope, "scope_key": scope_key})
            elif values:
                shown = " / ".join(values) if len(values) <= 6 else f"{len(values)} distinct values"
                varying.append(f"{label}: {shown}" + (f" (recorded by {scope} only)" if scope else ""))
    levels: dict[str, dict[str, str]] = {}
    for r in records:
        row = levels.setdefault(r.environment.name, {"kind": r.environment.kind or "—"})
        for key in ENVIRONMENT_DETAILS:
            value = r.environment.details.get(key)
            if isinstance(value, str | int | float | bool) and key not in row:
                row[key] = _text(value)
    columns = [key for key in ENVIRONMENT_DETAILS
               if len({row.get(key, "—") for row in levels.values()}) > 1]
    columns = (["kind"] if len({row["kind"] for row in levels.values()}) > 1 else []) + columns
    cooldown = [r.workload.details.get("cooldown_waited_s") for r in records]
    waits = [float(w) for w in cooldown if isinstance(w, int | float)]
    iterations = sorted({r.iteration for r in records if r.iteration is not None})
    return {
        "held": held, "partly": partly, "varying": varying,
        "levels": [{"name": name, **row} for name, row in
                   sorted(levels.items(), key=lambda item: level_order(item[0], baseline))],
        "level_columns": [{"key": key, "label": key.replace("_gib", " (GiB)").replace("_", " ")} for key in columns],
        "cooldown": (f"{min(waits):.0f}–{max(waits):.0f} s" if waits and min(waits) != max(waits)
                     else f"{waits[0]:.0f} s" if waits else None),
        "iterations": f"{iterations[0]}–{iterations[-1]}" if len(iterations) > 1 else None,
    }


def environment_descriptions(records: list[RunRecord]) -> list[dict[str, Any]]:
    """One entry per environment, identified by (campaign, name): two campaigns' "native" can be
    different things (a chroot in one, the host in another) and are never merged.

    Each entry: ``campaign``, ``name``, ``kinds``, ``details`` (key → distinct values; plain
    settings only, never an environment, argv or cgroup dump), ``variables`` (allowlisted
    environment variables whose values differ between the campaign's environments, through
    ``published_env``) and
    ``campaigns`` (``[campaign]``, kept for templates that list it).
    """
    from sparkreport.published import published_env
    from sparkreport.secrets import scrub_credentials

    environments: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        key = (record.campaign, record.environment.name)
        env = environments.setdefault(key, {"campaign": record.campaign, "name": record.environment.name,
                                            "kinds": [], "details": {}, "campaigns": [record.campaign],
                                            "variables": {}})
        if record.environment.kind not in env["kinds"]:
            env["kinds"].append(record.environment.kind)
        for detail, value in record.environment.details.items():
            if str(detail) in UNPUBLISHED_DETAILS or isinstance(value, dict | list):
                continue  # records (environment, argv, cgroup paths), not descriptions: never on a page
            value = scrub_credentials(value) if isinstance(value, str) else value
            known = env["details"].setdefault(str(detail), [])
            if value not in known:
                known.append(value)
        for name, value in published_env(record.environment.details).items():
            values = env["variables"].setdefault(name, [])
            if value not in values:
                values.append(value)
    out = [environments[key] for key in sorted(environments)]
    # Only the variables that tell a campaign's environments apart (one the same in all of them
    # says nothing about the comparison, and a campaign of one environment compares nothing).
    for campaign in {env["campaign"] for env in out}:
        group = [env for env in out if env["campaign"] == campaign]
        for name in {n for env in group for n in env["variables"]}:
            if len(group) < 2 or len({tuple(env["variables"].get(name, ())) for env in group}) == 1:
                for env in group:
                    env["variables"].pop(name, None)
    for env in out:
        env["variables"] = dict(sorted(env["variables"].items()))
    return out


#: Environment details that are records rather than descriptions (the environment, argv, cgroup
#: paths, cache measurements): kept in run.json, never printed on a page.
UNPUBLISHED_DETAILS = ("env_vars", "env_vars_unrecorded", "env_allowlist", "commands", "argv", "cgroup", "cache")

