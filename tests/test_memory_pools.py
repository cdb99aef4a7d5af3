"""How the Memory page names a campaign's memory pool: the recorded one, and the CUDA runtime's
measured total beside it when the Budget starts from a different figure; and how it names the
campaigns of each kind of memory."""

from types import SimpleNamespace

from sparkreport.render.memory import pool_phrase
from sparkreport.render.report import titles_phrase


def _campaign(name: str, pools: list[float]) -> SimpleNamespace:
    return SimpleNamespace(name=name, pools_gib=pools)


def test_a_recorded_pool_alone() -> None:
    budget = [{"campaign": "gb10", "pool": 119.64}]
    assert pool_phrase([_campaign("gb10", [119.64])], budget) == "119.64 GiB"


def test_the_measured_total_is_named_where_the_budget_uses_it() -> None:
    budget = [{"campaign": "h100", "pool": 79.1801}, {"campaign": "h100", "pool": 79.18},
              {"campaign": "other", "pool": 10.0}]
    assert pool_phrase([_campaign("h100", [79.65])], budget) == (
        "79.65 GiB on the card; the runs measured 79.18 GiB of it through the CUDA runtime, which "
        "leaves out what the driver keeps, and the Budget below starts from that")


def test_no_recorded_pool_names_the_measured_one() -> None:
    assert pool_phrase([_campaign("h100", [])], [{"campaign": "h100", "pool": 79.18}]) == "79.18 GiB"


def test_no_pool_at_all_says_nothing() -> None:
    assert pool_phrase([_campaign("h100", [])], [{"campaign": "h100", "pool": None}]) == ""


def test_the_campaigns_of_a_kind_of_memory_read_as_a_list_in_english() -> None:
    """The Unified memory line joined titles with '; ' ("…container vs native; The unified-memory
    post, as published"): each title now quoted, as the diff pages quote one, and joined with
    commas and "and" (the one helper the "older ones (…)" lists use too)."""
    titled = ["Phase 1 as published: container vs native", "The unified-memory post, as published", "H100 control"]
    assert titles_phrase(titled[:1]) == "“Phase 1 as published: container vs native”"
    assert titles_phrase(titled[:2]) == ("“Phase 1 as published: container vs native” and "
                                         "“The unified-memory post, as published”")
    assert titles_phrase(titled) == ("“Phase 1 as published: container vs native”, “The unified-memory post, "
                                     "as published” and “H100 control”")
