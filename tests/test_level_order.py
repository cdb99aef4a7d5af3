"""One order of the environments (the factor's levels) wherever they are listed: the baseline
first, then the others by name as models are sorted (case folded, then as written) — in the
statistics, the comparisons, the charts, the Runs, Memory and campaign pages and the CLI."""

from __future__ import annotations

from sparkreport import charts
from sparkreport.names import level_order


def ordered(levels: list[str], baseline: str | None) -> list[str]:
    return sorted(levels, key=lambda level: level_order(level, baseline))


def test_the_baseline_first_then_the_others_by_name() -> None:
    assert ordered(["cgroup-16g", "native", "container"], "native") == ["native", "cgroup-16g", "container"]
    # by name as a reader sorts them (Docker between chroot and podman), not by code point
    assert ordered(["podman", "Docker", "native", "chroot"], "native") == ["native", "chroot", "Docker", "podman"]
    # two names that differ only in case keep one order
    assert ordered(["docker", "Docker"], None) == ["Docker", "docker"]


def test_without_the_baseline_among_them_the_order_is_by_name() -> None:
    assert ordered(["native", "cgroup-16g"], None) == ["cgroup-16g", "native"]
    assert ordered(["native", "cgroup-16g"], "chroot") == ["cgroup-16g", "native"]


def test_the_charts_colour_environments_in_that_order() -> None:
    """A site's colours follow the same order as its tables: the baseline takes the first colour."""
    colours = charts.environment_colours(["podman", "Docker", "native", "chroot"], baseline="native")
    assert list(colours) == ["native", "chroot", "Docker", "podman"]
    assert list(colours.values()) == list(charts.ENVIRONMENT_COLOURS[:4])
