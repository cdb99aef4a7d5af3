"""Campaigns whose runs come from different inputs (trtllm-bench logs beside vLLM results): what
one kind of record gives and the other does not is never said of every run."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkreport.render import RenderOptions, RenderResult, render
from sparkreport.render.describe import describe_campaign, design_groups
from sparkreport.schema import Environment, Hardware, Model, Provenance, RunRecord, Software, Workload
from sparkreport.store import RunStore


def trtllm(run_id: str, env: str, campaign: str = "c", version: str = "1.0.0", tok_s: float = 1000.0) -> RunRecord:
    """A run parsed from a trtllm-bench log: lengths, KV cache fraction and GPU, no concurrency, no time."""
    return RunRecord(
        run_id=run_id, campaign=campaign, model=Model(id="Qwen/Qwen3-8B", name="Qwen3-8B"),
        environment=Environment(name=env, kind="container" if env == "docker" else "native"),
        workload=Workload(num_requests=512, input_len=1024.0, output_len=1024.0, kv_cache_fraction=0.9),
        software=Software(engine="trtllm", engine_version=version, backend="pytorch"),
        hardware=Hardware(gpu_name="NVIDIA GB10", memory_pool_gib=119.7),
        metrics={"output_throughput_tok_s": tok_s, "num_requests": 512.0, "pre_kv_memory_gib": 19.9,
                 "kv_cache_gib": 89.8},
        provenance=Provenance(format="trtllm-log"))


def vllm(run_id: str, env: str, campaign: str = "c", started_at_local: str | None = None, tok_s: float = 1600.0,
         completed: float = 400.0, failed: float = 0.0) -> RunRecord:
    """A run parsed from a vLLM result file: concurrency and its local start time, no lengths, no GPU."""
    return RunRecord(
        run_id=run_id, campaign=campaign, started_at_local=started_at_local,
        model=Model(id="openai/gpt-oss-20b", name="gpt-oss-20b"),
        environment=Environment(name=env, kind="container" if env == "docker" else "native"),
        workload=Workload(num_requests=int(completed), concurrency=32),
        software=Software(engine="vllm", backend="openai-chat"),
        metrics={"output_throughput_tok_s": tok_s, "num_requests": completed, "failed_requests": failed},
        provenance=Provenance(format="vllm-json"))


def mixed(campaign: str = "c", version: str = "1.0.0") -> list[RunRecord]:
    return ([trtllm(f"{campaign}-t{env}{i}", env, campaign, version) for env in ("native", "docker") for i in range(3)]
            + [vllm(f"{campaign}-v{env}{i}", env, campaign) for env in ("native", "docker") for i in range(2)])


def test_a_setting_only_some_runs_record_is_not_held_constant() -> None:
    """Concurrency 32 is in the vLLM records only, the lengths, KV cache fraction and GPU in the
    trtllm ones only: none is held constant over the campaign, each is said with its runs."""
    d = describe_campaign(mixed(), "native")
    assert d["held"] == []
    assert [(p["label"], p["value"], p["scope"]) for p in d["partly"]] == [
        ("input length", "1024 tokens", "the 6 trtllm runs"),
        ("output length", "1024 tokens", "the 6 trtllm runs"),
        ("concurrency", "32", "the 4 vllm runs"),
        ("KV cache fraction of free memory", "0.9", "the 6 trtllm runs"),
        ("engine version", "1.0.0", "the 6 trtllm runs"),
        ("GPU", "NVIDIA GB10", "the 6 trtllm runs"),
        ("memory pool", "119.70 GiB", "the 6 trtllm runs"),
    ]
    assert "requests per run: 512 / 400" in d["varying"]
    # every run records them: held constant, as before
    alone = describe_campaign([trtllm(f"t{i}", "native") for i in range(3)], "native")
    assert ["GPU", "NVIDIA GB10"] in alone["held"] and alone["partly"] == []


def test_runs_no_kind_names_are_counted() -> None:
    """Where the runs that record a setting are not all the runs of some engine, format,
    environment or model, they are counted."""
    runs = [trtllm(f"t{i}", "native") for i in range(4)]
    runs[0].hardware.gpu_name = None
    d = describe_campaign(runs, "native")
    assert {"label": "GPU", "value": "NVIDIA GB10", "scope": "3 of the 4 runs", "scope_key": "3 of the 4 runs"} \
        in d["partly"]


def test_campaigns_of_one_design_name_the_runs_a_differing_setting_is_recorded_by() -> None:
    from types import SimpleNamespace

    described = [{"campaign": SimpleNamespace(name=name, description=None, source=None, models=["m"], design={},
                                              published=False, runs=10),
                  **describe_campaign(mixed(name, version), "native")}
                 for name, version in (("a", "1.0.0"), ("b", "1.1.0"))]
    [group] = design_groups(described)
    assert group["differs"] == [{"label": "engine version", "values": ["1.0.0", "1.1.0"],
                                 "scope": "the 6 trtllm runs"}]
    assert "engine version" not in [p["label"] for p in group["d"]["partly"]]
    assert ["concurrency", "32"] not in group["d"]["held"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    root = tmp_path_factory.mktemp("mixed")
    store = RunStore(root / "runs")
    for record in mixed():
        if record.run_id == "c-vdocker1":  # completed 399 of its 400 requests
            record.metrics.update(num_requests=399.0, failed_requests=1.0)
        store.write(record, [])
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def text(site: RenderResult, path: str) -> str:
    return (site.docs_dir / path).read_text(encoding="utf-8")


def test_methodology_says_which_runs_record_a_setting(site: RenderResult) -> None:
    page = text(site, "methodology/index.md")
    assert "**Held constant**" not in page
    assert ("**Recorded by some runs only** (one value in the runs named; the other runs do not record them): "
            "input length 1024 tokens, output length 1024 tokens, KV cache fraction of free memory 0.9, "
            "engine version 1.0.0, GPU NVIDIA GB10, memory pool 119.70 GiB (the 6 trtllm runs); "
            "concurrency 32 (the 4 vllm runs).\n") in page
    assert "*Recorded\nby some runs only* names it with those runs." in page


def test_a_run_with_a_local_start_time_only_counts_by_it() -> None:
    """vLLM result files give a local start time and no UTC one, trtllm-bench logs neither: a
    campaign's last run is its last timed one, at its local time (converted where it carries its
    offset), and the rule says both."""
    from types import SimpleNamespace

    import pandas as pd

    from sparkreport.render.report import _run_times

    def times_of(rows: list[tuple[str, str | None, str | None]]) -> tuple[dict[str, object], bool, bool]:
        runs = pd.DataFrame(rows, columns=["campaign", "started_at", "started_at_local"])
        site = SimpleNamespace(dataset=SimpleNamespace(runs=runs), extra={}, analysis_cache=None)
        return _run_times(site)  # type: ignore[arg-type]

    times, naive, untimed = times_of([("a", None, "2026-01-05T08:37:11"), ("a", None, None),
                                      ("b", "2026-01-04T10:00:00Z", None), ("b", None, "2026-01-04T23:00:00+02:00")])
    assert times == {"a": pd.Timestamp("2026-01-05T08:37:11Z"), "b": pd.Timestamp("2026-01-04T21:00:00Z")}
    assert naive and untimed
    times, naive, untimed = times_of([("a", None, "2026-01-05T08:37:11+01:00"), ("b", "2026-01-04T10:00:00Z", None),
                                      ("p", None, None)])
    assert times["a"] == pd.Timestamp("2026-01-05T07:37:11Z") and pd.isna(times["p"])
    assert not naive and not untimed  # a published campaign has no times at all: it counts as oldest


def test_the_campaigns_run_times_are_kept_per_campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the build's analysis cache, each campaign's last run time and flags are kept by the
    digest of its runs: a render after a change to one campaign's runs parses that campaign's
    start times only, and the times are those of the whole table parsed at once."""
    from types import SimpleNamespace

    import pandas as pd

    from sparkreport.cache import AnalysisCache
    from sparkreport.render import report

    parsed: list[list[str]] = []
    parse = report._campaign_run_times

    def counting(runs: pd.DataFrame, campaigns: list[str]) -> dict[str, tuple[object, bool, bool]]:
        parsed.append(sorted(campaigns))
        return parse(runs, campaigns)

    monkeypatch.setattr(report, "_campaign_run_times", counting)
    rows = [("a", None, "2026-01-05T08:37:11"), ("a", None, None), ("b", "2026-01-04T10:00:00Z", None),
            ("b", None, "2026-01-04T23:00:00+02:00"), ("p", None, None)]

    def times_of(rows: list[tuple[str, str | None, str | None]],
                 cache: AnalysisCache | None) -> tuple[dict[str, object], bool, bool]:
        runs = pd.DataFrame(rows, columns=["campaign", "started_at", "started_at_local"])
        runs["run_id"] = [f"r{i}-{started}-{local}" for i, (_c, started, local) in enumerate(rows)]
        digests = {run_id: run_id for run_id in runs["run_id"]}

        def digest_of(run_ids: list[str]) -> str:
            return ",".join(sorted(digests[run_id] for run_id in run_ids))

        dataset = SimpleNamespace(runs=runs, digest_of=digest_of, campaign_digests=lambda: {
            str(c): digest_of(list(group["run_id"])) for c, group in runs.groupby("campaign", sort=False)})
        return report._run_times(SimpleNamespace(dataset=dataset, extra={}, analysis_cache=cache))  # type: ignore[arg-type]

    cache = AnalysisCache(tmp_path / "analysis.pickle")
    whole = times_of(rows, None)
    assert times_of(rows, cache) == whole and parsed == [["a", "b", "p"], ["a", "b", "p"]]
    parsed.clear()
    assert times_of(rows, cache) == whole and parsed == []  # every campaign's kept
    changed = [*rows[:4], ("p", "2026-01-06T00:00:00Z", None)]
    assert times_of(changed, cache) == times_of(changed, None)
    assert parsed[0] == ["p"]  # only the campaign whose runs changed


#: Campaign → the day its vLLM runs ran: in name order c1 is the oldest, in time the newest.
DAYS = {"c1": 9, "c2": 5, "c3": 4, "c4": 3, "c5": 2, "c6": 1}


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory) -> RenderResult:
    root = tmp_path_factory.mktemp("timed")
    store = RunStore(root / "runs")
    for campaign, day in DAYS.items():
        for record in mixed(campaign):
            if record.software.engine == "vllm":
                record.started_at_local = f"2026-01-{day:02d}T08:{int(record.run_id[-1]):02d}:00"
            store.write(record, [])
    (root / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    return render(RenderOptions(runs_dir=root / "runs", project_root=root, docs_dir=root / "build" / "docs"))


def test_the_newest_campaigns_are_those_whose_runs_ran_last(timed: RenderResult) -> None:
    """Only the vLLM runs record when they ran (local time): the newest campaigns are chosen by
    them, not by name, the pages say so, and the Campaigns overview keeps its Last run column."""
    rule = "by their last timed run, in local time where a run records no UTC time"
    overview = text(timed, "campaigns/index.md")
    assert f"Every campaign in the store, newest first ({rule}); the nav lists the 5 newest." in overview
    assert "| Campaign | Last run |" in overview
    assert [line.split(" | ")[:2] for line in overview.splitlines() if line.startswith("| [c")][:2] == [
        ["| [c1](c1/index.md)", "2026-01-09"], ["| [c2](c2/index.md)", "2026-01-05"]]
    home = text(timed, "index.md")
    assert f"The 5 newest campaigns ({rule}) are above" in home
    assert "no run records when it ran" not in home
    assert "\n## c1 to c5 (5 campaigns)\n" in home and "campaigns/c6/" not in home  # by name: c2 to c6
    assert f"This page shows the 5 newest campaigns ({rule})." in text(timed, "memory/index.md")
    assert f"The 5 newest campaigns of this model, {rule}; the" in text(timed, "results/gpt-oss-20b/index.md")


def test_a_run_whose_requests_failed_is_flagged_with_what_it_means_for_throughput() -> None:
    from sparkreport.analysis import check
    from sparkreport.dataset import build_dataset

    runs = mixed()
    failed = [r for r in runs if r.run_id in ("c-vdocker0", "c-vdocker1")]
    failed[0].metrics.update(num_requests=399.0, failed_requests=1.0)
    failed[1].metrics.update(num_requests=388.0, failed_requests=12.0)
    found = [f for f in check(build_dataset(runs)) if f.code == "failed-requests"]
    assert [(f.severity, f.runs) for f in found] == [("warning", ["c-vdocker0", "c-vdocker1"])]
    assert found[0].message == (
        "c/gpt-oss-20b/docker: 2 of 2 runs had failed requests (c-vdocker0: 1 of 400; c-vdocker1: 12 of 400) — "
        "such a run did less work than one that completed them all, so its throughput is not comparable with "
        "theirs, and this arm's throughput figures include it: rerun it, or leave it out, to compare like with like")
    assert found[0].numbers == {"runs": 2.0, "failed_requests": 13.0}
    # none failed, or no run reports failed requests (trtllm-bench logs): nothing to say
    assert not [f for f in check(build_dataset(mixed())) if f.code == "failed-requests"]
    assert not [f for f in check(build_dataset([trtllm(f"t{i}", env) for env in ("native", "docker")
                                                for i in range(3)])) if f.code == "failed-requests"]


def test_data_quality_and_the_campaign_name_the_run_whose_request_failed(site: RenderResult) -> None:
    quality = text(site, "quality/index.md")
    section = quality.split("### Runs in which requests failed\n", 1)[1].split("\n### ", 1)[0]
    assert ("| c: openai/gpt-oss-20b (docker) | 1 of 2 runs had failed requests (c-vdocker1: 1 of 400) — such a run "
            "did less work than one that completed them all, so its throughput is not comparable with theirs") in section
    assert "**warning: runs in which requests failed** — openai/gpt-oss-20b (docker): 1 of 2 runs had failed " \
        "requests (c-vdocker1: 1 of 400)" in text(site, "campaigns/c/index.md")


def test_a_count_every_run_made_is_held_constant_not_a_row_of_means(site: RenderResult, tmp_path: Path) -> None:
    """Requests 400 in each of two single runs is one line, "Held constant", not a table row of
    400 | 400 as if measured; where one run completed 399 (and one failed) neither is constant,
    and the table keeps them."""
    store = RunStore(tmp_path / "runs")
    for env in ("native", "docker"):
        store.write(vllm(f"v{env}", env, tok_s=1600.0 if env == "native" else 1590.0), [])
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    single = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path))
    page = text(single, "results/gpt-oss-20b/index.md")
    # a single run per arm is a warning the page's own figures show (no interval): no box for it
    assert "### A single run per arm" in text(single, "quality/index.md") and "Read with care" not in page
    assert ("\n## Other metrics\n\n**Held constant**, stated, not tested — one value in every run (2 runs): Failed "
            "requests 0; Requests 400.\n\nEvery run's value of every metric:") in page
    assert "| Requests |" not in page and "??? note" not in page
    # two single measured runs are untested for want of a second run, not for want of a published SD
    assert page.startswith("# openai/gpt-oss-20b\n\n- **One run per arm, so not tested**: docker against native, "
                           "Output throughput -0.62%.\n")
    assert "○ not tested (one run per arm)." in page and "published" not in page.lower()
    home = text(single, "index.md")
    assert "- **One run per arm, so not tested** (1 model): docker against native, Output throughput -0.62%." in home
    assert "Published without a spread" not in home
    failed = text(site, "results/gpt-oss-20b/index.md")
    assert "**Held constant**" not in failed and "| Requests |" in failed and "| Failed requests |" in failed
    # the trtllm model of the same campaign: its 512 requests in each of its 6 runs
    assert ("**Held constant**, stated, not tested — one value in every run (6 runs): Requests 512."
            in text(site, "results/Qwen3-8B/index.md"))


def test_a_model_page_says_which_warnings_bear_on_its_figures(site: RenderResult, tmp_path: Path) -> None:
    """The failed request that Data quality and the campaign page name is on the model's Results
    page too, where its throughput is read: one line per check, in a "Read with care" box above
    the tables, the arms a sentence is said of named once, a clause every finding of a check ends
    with said once — and no warning whose figure the page shows anyway (a single run, its n)."""
    page = text(site, "results/gpt-oss-20b/index.md")
    box = page.split('!!! warning "Read with care"\n', 1)[1].split("\n\n", 2)
    assert box[0].splitlines() == [
        "    - **Runs in which requests failed** — docker: 1 of 2 runs had failed requests (c-vdocker1: 1 of 400) — "
        "such a run did less work than one that completed them all, so its throughput is not comparable with "
        "theirs, and this arm's throughput figures include it: rerun it, or leave it out, to compare like with like.",
        "    - **Runs that repeat another run's every value** — native: 2 runs report the same value in every one of "
        "their 3 metrics, to the last digit — copies of one run (a result ingested again under another name?); the "
        "statistics count them as 2 independent runs, which narrows the interval: remove the copies from the "
        "store, or keep them knowing this."]
    assert box[1] == "    Every finding of the checks, with its numbers: [Data quality](../../quality/index.md)."
    assert page.index("Read with care") < page.index("## Output throughput")
    # two campaigns of one model: each arm after its campaign, the consequence once
    store = RunStore(tmp_path / "runs")
    for campaign, failed in (("a", 1.0), ("b", 3.0)):
        for i, env in enumerate(("native", "native", "docker", "docker")):
            record = vllm(f"{campaign}-{env}{i}", env, campaign, tok_s=1600.0 + 3 * i)
            if i == 3:
                record.metrics.update(num_requests=400.0 - failed, failed_requests=failed)
            store.write(record, [])
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    page = text(render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path)), "results/gpt-oss-20b/index.md")
    assert ("    - **Runs in which requests failed** — a · docker: 1 of 2 runs had failed requests (a-docker3: 1 of "
            "400); b · docker: 1 of 2 runs had failed requests (b-docker3: 3 of 400) — such a run did less work than "
            "one that completed them all, so its throughput is not comparable with theirs, and this arm's throughput "
            "figures include it: rerun it, or leave it out, to compare like with like.\n") in page
    assert page.count("such a run did less work") == 1


def test_other_metrics_say_which_are_described_and_why_when_none_is_tested(tmp_path: Path) -> None:
    """Two single runs: the latency (a tested metric, not a primary one) is compared but has no
    test (○), the temperature is not compared at all; the lead-in says "compared", not "tested",
    and names what the comparisons are of."""
    store = RunStore(tmp_path / "runs")
    for env, tok_s in (("native", 1600.0), ("docker", 1590.0)):
        record = vllm(f"v{env}", env, tok_s=tok_s)
        record.metrics.update(latency_ms_mean=900.0 if env == "native" else 905.0,
                              end_temp_c=61.0 if env == "native" else 63.0)
        store.write(record, [])
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    page = text(render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path)),
                "results/gpt-oss-20b/index.md")
    assert ("Each metric's mean per environment, and its difference from the baseline where it was compared.\n"
            "The others are described, not tested: the comparisons here are of Output throughput and Request "
            "latency (mean) — one metric of each family, as the project chose (see "
            "[Methodology](../../methodology/index.md)).") in page
    assert "None of them" not in page


def test_a_quantity_one_run_did_not_record_is_held_constant_in_the_runs_that_did(tmp_path: Path) -> None:
    """One docker run lost its KV cache and batch size figures: each is one value in the three
    runs that recorded them, stated with that count (not "in every run"), and tested nowhere —
    the comparisons and the held-constant line follow one rule."""
    store = RunStore(tmp_path / "runs")
    for env in ("native", "docker"):
        for i in range(2):
            record = vllm(f"v{env}{i}", env, tok_s=1600.0 + i + (10 if env == "native" else 0))
            if (env, i) != ("docker", 1):
                record.metrics.update(kv_cache_gib=50.0, max_batch_size=32.0)
            store.write(record, [])
    (tmp_path / "sparkreport.yml").write_text("factor: environment\nbaseline: native\n", encoding="utf-8")
    built = render(RenderOptions(runs_dir=tmp_path / "runs", project_root=tmp_path))
    page = text(built, "results/gpt-oss-20b/index.md")
    assert ("**The same in both environments** (1 model): KV cache, one value in every run that recorded it — "
            "stated, not tested.") in text(built, "index.md")
    assert ("## KV cache (GiB)\n\n50.00 GiB in every run that recorded it (3 of 4 runs): no run-to-run variance, "
            "so stated, not tested.\n") in page
    assert ("**Held constant**, stated, not tested — one value in every run (4 runs): Failed requests 0; Requests "
            "400; and Max batch size: 32 in every run that recorded it (3 of 4 runs).") in page
    assert "| KV cache" not in page and "KV cache +" not in page


def test_what_the_data_cannot_show_blames_no_missing_sd_on_a_single_measured_run() -> None:
    """A single measured run against a published arm with an SD skips Mann–Whitney (no runs on the
    published side) and Welch's test (one run): the reason is the single run, so Home must not say
    that figures published without an SD cannot be tested; an arm published without an SD does."""
    from types import SimpleNamespace

    from sparkreport.config import ProjectConfig
    from sparkreport.render.builtin import data_limits

    site = SimpleNamespace(findings=[], config=ProjectConfig())
    skipped = "Mann–Whitney U, Welch t-test, difference CI, ratio CI, TOST, Hedges' g"
    single = {"skipped": skipped, "untested_reason": "a single run in one arm"}
    without_sd = {"skipped": skipped, "untested_reason": "published without a spread"}
    (published,) = [line for line in data_limits(site, [single]) if line.startswith("Published figures")]
    assert published.endswith("(Welch's test, the intervals and TOST use n, mean and SD).")
    (published,) = [line for line in data_limits(site, [without_sd]) if line.startswith("Published figures")]
    assert published.endswith("; figures published without an SD cannot be tested at all.")


@given(st.lists(st.one_of(st.sampled_from([1, 1.0, True, False, 0, -0.0, 0.0, "a", "", "1"]),
                          st.floats(allow_nan=True), st.integers(), st.text(max_size=3),
                          st.lists(st.integers(), max_size=2)), max_size=12),
       st.sampled_from(["", " GiB"]))
def test_a_settings_values_are_written_once_each_in_the_order_they_first_come(values: list[object],
                                                                              unit: str) -> None:
    """describe_campaign writes each distinct recorded value of a setting once (a campaign's
    runs mostly record one): what writing every run's value and keeping each text once gives."""
    from sparkreport.render.describe import _text, _texts

    assert _texts(values, unit) == list(dict.fromkeys(_text(value, unit) for value in values))
