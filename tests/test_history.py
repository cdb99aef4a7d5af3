"""sparkreport history: planted steps are found at their version, flat series stay quiet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from history_store import VERSIONS, write_history_store

from sparkreport.analysis import AnalysisOptions
from sparkreport.analysis.changepoints import find_steps
from sparkreport.analysis.history import history, history_json, history_payload, order_versions
from sparkreport.cli import main
from sparkreport.config import load_config
from sparkreport.dataset import load_dataset
from sparkreport.errors import ConfigError

GOLDEN = Path(__file__).parent / "golden" / "history"
FAST = AnalysisOptions(bootstrap_resamples=500)


def _series(rng: np.random.Generator, versions: int, step: float, at: int, runs: int = 5,
            noise: float = 0.01) -> list[np.ndarray]:
    return [1000 * (1 + (step if v >= at else 0)) * (1 + rng.normal(0, noise, runs)) for v in range(versions)]


@pytest.mark.parametrize("step", [0.03, -0.03, 0.05, -0.05, 0.10])
@pytest.mark.parametrize("at", [2, 5, 8])
def test_planted_step_is_found_at_its_version(step: float, at: int) -> None:
    rng = np.random.default_rng(1000 + at)
    steps = find_steps(_series(rng, 10, step, at))
    assert [s.index for s in steps] == [at]
    assert steps[0].change == pytest.approx(step, abs=0.01)


def test_planted_steps_found_exactly_in_most_random_series() -> None:
    """Over 200 series with a 3% step at a random version, nearly all are found exactly there
    (bench/changepoints.py prints the same figure)."""
    rng = np.random.default_rng(17)
    exact = 0
    for _ in range(200):
        at = int(rng.integers(1, 12))
        exact += [s.index for s in find_steps(_series(rng, 12, 0.03, at))] == [at]
    assert exact / 200 >= 0.9


@pytest.mark.parametrize("noise", [0.01, 0.05])
def test_flat_series_false_change_share_within_alpha(noise: float) -> None:
    """Over 2000 flat series (12 versions × 5 runs) the share with any change point is within
    alpha = 0.05 up to sampling error: the method spends its alpha in full when the noise is
    large against the minimum effect (measured 4.8% at 5% noise over 3000 series), so a sample
    of a few hundred lands above 5% about half the time; the bound is alpha plus 2.33 binomial
    SDs (the data do not reject "rate ≤ alpha" at the 1% level). At 1% noise the minimum effect
    keeps it at 0."""
    rng = np.random.default_rng(23)
    series = 2000
    flagged = sum(bool(find_steps(_series(rng, 12, 0.0, 0, noise=noise), alpha=0.05)) for _ in range(series))
    assert flagged / series <= 0.05 + 2.33 * (0.05 * 0.95 / series) ** 0.5
    if noise == 0.01:
        assert flagged == 0


def test_newest_version_regression_found_for_the_gate() -> None:
    """A 4% drop at the newest of 200 versions (5 runs, 2% noise): found by the newest
    version's own test, where one boundary among 199 would not reach significance."""
    rng = np.random.default_rng(8)
    found = 0
    for _ in range(50):
        samples = _series(rng, 200, -0.04, 199, noise=0.02)
        found += [s.index for s in find_steps(samples)] == [199]
    assert found / 50 >= 0.6


def test_two_steps_both_found() -> None:
    rng = np.random.default_rng(5)
    samples = _series(rng, 12, 0.05, 4)
    samples = [s * (0.94 if v >= 9 else 1) for v, s in enumerate(samples)]
    assert [s.index for s in find_steps(samples)] == [4, 9]


def test_version_order() -> None:
    frame = pd.DataFrame({"v": ["0.10.0", "0.9.0", "0.20.0rc1", "0.20.0"], "started_at": ["4", "3", "2", "1"]})
    assert order_versions(frame, "v") == (["0.9.0", "0.10.0", "0.20.0rc1", "0.20.0"], "pep440")
    frame["v"] = ["535.104.05", "580.95", "580.9", "v1.2.3-beta.x"]
    assert order_versions(frame, "v")[1] == "natural"
    assert order_versions(frame, "v")[0] == ["v1.2.3-beta.x", "535.104.05", "580.9", "580.95"]
    frame["v"] = ["sha256:d", "sha256:c", "sha256:b", "sha256:a"]
    assert order_versions(frame, "v") == (["sha256:a", "sha256:b", "sha256:c", "sha256:d"], "date")


def test_history_of_a_store(tmp_path: Path) -> None:
    ds = load_dataset(write_history_store(tmp_path / "runs", steps={"0.21.0": -0.05}, single_run="0.19.0"))
    result = history(ds, FAST)
    assert result.versions == VERSIONS and result.order == "pep440"
    [change] = result.changes
    assert (change.environment, change.metric, change.before, change.after) == (
        "native", "output_throughput_tok_s", "0.20.0", "0.21.0")
    assert change.direction == "regression" and not change.newest
    assert change.change_ci_low < change.change_pct < change.change_ci_high < 0
    assert [p.single_run for p in result.series[0].points] == [False, True, False, False, False, False]
    by_engine = history(ds, FAST, by="trtllm")
    assert by_engine.column == "engine_version" and len(by_engine.changes) == 1


def test_two_campaigns_of_one_model_and_environment_are_two_series(tmp_path: Path) -> None:
    """Two campaigns measure the same model in the same environments over the same versions,
    nightly with a drop at 0.22.0 and weekly with a rise at 0.21.0: each campaign's native
    series holds its own five runs per version (never ten), and each change is found in its own
    campaign at its own version, not in a series of both (which would show neither step cleanly)."""
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042})
    write_history_store(runs, steps={"0.21.0": 0.05}, seed=4, campaign="weekly", run_prefix="weekly-")
    result = history(load_dataset(runs), FAST, metrics=["output_throughput_tok_s"])
    assert [(s.campaign, s.model, s.environment) for s in result.series] == [
        ("nightly", "llama-3.1-8b", "docker"), ("nightly", "llama-3.1-8b", "native"),
        ("weekly", "llama-3.1-8b", "docker"), ("weekly", "llama-3.1-8b", "native")]
    assert {p.n for s in result.series for p in s.points} == {5}
    assert [(c.campaign, c.environment, c.before, c.after, c.direction) for c in result.changes] == [
        ("nightly", "native", "0.21.0", "0.22.0", "regression"), ("weekly", "native", "0.20.0", "0.21.0", "improvement")]
    assert [c.change_pct for c in result.changes] == [pytest.approx(-4.2, abs=1.5), pytest.approx(5, abs=1.5)]


def test_direction_follows_the_metric(tmp_path: Path) -> None:
    ds = load_dataset(write_history_store(tmp_path / "runs"))
    runs = ds.runs
    late = runs["label.version"].isin(VERSIONS[3:]) & (runs["environment"] == "docker")
    runs.loc[late, "peak_memory_gib"] *= 0.9  # less memory: better
    [change] = history(ds, FAST, metrics=["peak_memory_gib"]).changes
    assert (change.environment, change.after, change.direction) == ("docker", VERSIONS[3], "improvement")


def test_cli_json_golden_and_fail_on(tmp_path: Path) -> None:
    """The gate exits 1 after the history is printed, with one line on stderr saying what it found
    (it exited 1 silently: a CI log showed the JSON and a failed step, nothing on why)."""
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.042})
    runner = CliRunner()
    result = runner.invoke(main, ["history", "--runs-dir", str(runs), "--json", "--metric", "output_throughput_tok_s",
                                  "--fail-on", "regression"])
    assert result.exit_code == 1, result.output
    assert result.stderr == "--fail-on regression: 1 of 2 series regressed at the newest version (0.22.0)\n"
    payload = json.loads(result.stdout)
    expected = json.loads((GOLDEN / "history.json").read_text())
    assert payload == expected
    [change] = payload["change_points"]
    assert {"campaign", "model", "environment", "metric", "before", "after", "change_pct", "change_ci_low",
            "change_ci_high", "direction"} <= set(change)


def test_cli_table_exact(tmp_path: Path) -> None:
    runs = write_history_store(tmp_path / "runs", steps={"0.21.0": 0.05}, single_run="0.18.0")
    result = CliRunner().invoke(main, ["history", "--runs-dir", str(runs), "--metric", "output_throughput_tok_s",
                                       "--fail-on", "regression"])
    assert result.exit_code == 0, result.output
    assert result.output == (GOLDEN / "history.txt").read_text() and result.stderr == ""  # an older change: no gate


def test_cli_fail_on_says_what_it_found_after_the_table(tmp_path: Path) -> None:
    """Two campaigns whose native throughput both fall at the newest version: the table printed
    as without the gate, then one line on stderr counting the regressions among the series the
    gate tested (those measured in the newest version and an earlier one)."""
    runs = write_history_store(tmp_path / "runs", steps={"0.22.0": -0.05})
    write_history_store(runs, steps={"0.22.0": -0.05}, seed=4, campaign="weekly", run_prefix="weekly-")
    write_history_store(runs, seed=5, campaign="once", run_prefix="once-", versions=["0.22.0"])  # nothing to test
    runner = CliRunner()
    plain = runner.invoke(main, ["history", "--runs-dir", str(runs)])
    gated = runner.invoke(main, ["history", "--runs-dir", str(runs), "--fail-on", "regression"])
    assert (plain.exit_code, plain.stderr) == (0, "")
    assert (gated.exit_code, gated.stdout) == (1, plain.stdout)
    assert gated.stderr == "--fail-on regression: 2 of 8 series regressed at the newest version (0.22.0)\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--by", "build"], "--by: no version 'build': not a label of these runs nor one of engine_version, cuda, driver, "
                        "image, image_digest, trtllm, vllm, torch — version keys here: version, engine_version, "
                        "trtllm; label runs with --label build=… or pass --by KEY"),
    (["--by", "driver"], "--by: no version 'driver': no run records a driver version — version keys here: version, "
                         "engine_version, trtllm; label runs with --label driver=… or pass --by KEY"),
    (["--campaign", "nosuch"], "--campaign: no campaign 'nosuch' with runs to follow — campaigns here: nightly"),
])
def test_cli_unknown_version_key_or_campaign_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    """`--campaign nosuch` and `--by` a field no run records printed an empty versions line and
    'nothing to compare' (exit 0): each is a bad invocation naming what the runs have."""
    runs = write_history_store(tmp_path / "runs")
    result = CliRunner().invoke(main, ["history", "--runs-dir", str(runs), *args])
    assert (result.exit_code, result.output) == (2, f"Error: {message}\n")


def test_an_unknown_history_by_in_sparkreport_yml_is_named_at_its_line(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The key came from the file, not a flag: the fix says to set it there (it offered --by)."""
    runs = write_history_store(tmp_path / "runs")
    (tmp_path / "sparkreport.yml").write_text("title: t\nhistory:\n  by: build\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["history", "--runs-dir", str(runs)])
    assert (result.exit_code, result.output) == (1, (
        "Error: sparkreport.yml:3: history.by: no version 'build': not a label of these runs nor one "
        "of engine_version, cuda, driver, image, image_digest, trtllm, vllm, torch — version keys here: version, "
        "engine_version, trtllm — set history.by: to one of them, or label the runs with it\n"))


@pytest.mark.parametrize(("text", "line", "says"), [
    ("history:\n  by: 3\n", 2, "history.by has the wrong type"),
    ("history:\n  min_effect: 5\n", 2, "did you mean 5%? write 0.05"),
    ("title: t\nhistory:\n  window: 3\n", 3, "unknown setting history.window"),
])
def test_history_config_errors_are_one_line(tmp_path: Path, text: str, line: int, says: str) -> None:
    path = tmp_path / "sparkreport.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = caught.value.format_message()
    assert message.startswith(f"{path}:{line}: ") and says in message and "\n" not in message


def test_history_config_sets_the_version_key(tmp_path: Path) -> None:
    path = tmp_path / "sparkreport.yml"
    path.write_text("history:\n  by: trtllm\n  min_effect: 0.03\n", encoding="utf-8")
    config = load_config(path)
    assert (config.history.by, config.history.min_effect) == ("trtllm", 0.03)


def test_history_with_a_cache_equals_history_without_and_recomputes_one_campaign(tmp_path: Path) -> None:
    """Kept per campaign (a series lives in one campaign): the same History with or without the
    cache; after one more run only that run's campaign's series are computed again."""
    import json

    from sparkreport.cache import AnalysisCache

    runs = write_history_store(tmp_path / "runs", steps={"0.21.0": -0.05})
    for path in sorted(runs.glob("*/*/run.json"))[:3]:  # a second campaign: three runs moved
        data = json.loads(path.read_text(encoding="utf-8"))
        data["campaign"] = "second"
        folder = runs / "second" / path.parent.name
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(data), encoding="utf-8")
        path.unlink()
        path.parent.rmdir()
    ds = load_dataset(runs)
    cache = AnalysisCache(tmp_path / "analysis.pickle")
    assert history(ds, FAST, cache=cache) == history(ds, FAST)
    assert cache.computed["history-campaign"] == len(ds.campaigns()) == 2
    cache.save()
    again = AnalysisCache(tmp_path / "analysis.pickle")
    kept = history(ds, FAST, cache=again)
    assert kept == history(ds, FAST)
    assert again.computed["history-campaign"] == 0 and again.reused["history-campaign"] == 2
    # the site's history.json from each series' kept entry: the text of the whole payload
    assert all(s.text is not None for s in kept.series)
    expected = json.dumps(history_payload(kept), separators=(",", ":"))
    assert history_json(kept) == expected
    for s in kept.series:
        s.text = None  # (a series without its entry: encoded here)
    assert history_json(kept) == expected
