"""The plan: models × environments × cache states × iterations, in a recorded order.

The default order is *randomized complete blocks*: block *k* holds every (model, environment,
cache) combination once, for iteration *k*, shuffled with a generator seeded from the
campaign's seed and the block number. Environments are thus interleaved in time, so a drift
(thermal, a background job, a filling disk) spreads over all arms instead of landing on one.
``order: sequential`` runs model by model, environment by environment, as the seed study did.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sparkreport.execute.campaign import Campaign, iter_cells_names

PLAN_VERSION = 1


@dataclass(frozen=True)
class Cell:
    """One planned run."""

    index: int
    block: int
    model: str
    environment: str
    cache: str
    iteration: int
    run_id: str
    seed: int

    def describe(self) -> str:
        """One short human line: model · environment · cache · iteration."""
        return f"{self.model} · {self.environment} · {self.cache} · #{self.iteration}"


@dataclass(frozen=True)
class Plan:
    """The ordered cells of a campaign plus what produced the order."""

    campaign: str
    order: str
    seed: int
    cells: tuple[Cell, ...]
    campaign_sha256: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored as ``_campaign/plan.json``."""
        return {"plan_version": PLAN_VERSION, "campaign": self.campaign, "order": self.order,
                "seed": self.seed, "campaign_sha256": self.campaign_sha256,
                "cells": [asdict(c) for c in self.cells]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """Read a stored plan (written by :meth:`to_dict`)."""
        return cls(campaign=data["campaign"], order=data["order"], seed=data["seed"],
                   campaign_sha256=data.get("campaign_sha256", ""),
                   cells=tuple(Cell(**c) for c in data["cells"]))

    def save(self, path: Path) -> None:
        """Write the plan as JSON (atomically)."""
        from sparkreport.store import write_json_atomic

        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: Path) -> Plan:
        """Read a plan written by :meth:`save`."""
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))


def run_id_for(model: str, environment: str, cache: str, iteration: int) -> str:
    """The run folder name of a cell: stable, readable, unique within the campaign."""
    return f"{model}.{environment}.{cache}.i{iteration:02d}"


def make_plan(campaign: Campaign) -> Plan:
    """Cross the campaign's factors and order the cells (seeded, reproducible)."""
    combos = list(iter_cells_names(campaign))
    ordered: list[tuple[int, str, str, str, int]] = []
    if campaign.order == "sequential":
        for model, env, cache in combos:
            for iteration in range(1, campaign.iterations + 1):
                ordered.append((iteration, model, env, cache, iteration))
    else:
        for block in range(1, campaign.iterations + 1):
            shuffled = list(combos)
            random.Random(f"{campaign.seed}:{block}").shuffle(shuffled)
            ordered.extend((block, m, e, c, block) for m, e, c in shuffled)
    cells = tuple(
        Cell(index=i, block=block, model=model, environment=env, cache=cache, iteration=iteration,
             run_id=run_id_for(model, env, cache, iteration),
             seed=random.Random(f"{campaign.seed}:{model}:{env}:{cache}:{iteration}").randrange(2**31))
        for i, (block, model, env, cache, iteration) in enumerate(ordered)
    )
    return Plan(campaign=campaign.name, order=campaign.order, seed=campaign.seed, cells=cells,
                campaign_sha256=campaign.sha256)


def estimate_seconds(campaign: Campaign, cells: tuple[Cell, ...] | list[Cell],
                     run_s: dict[str, float]) -> float:
    """Estimated wall time of ``cells``: each run's own estimate plus the minimum cooldown.

    ``run_s`` maps model name → estimated seconds per run (the workload's own estimate).
    The cooldown's temperature wait cannot be known ahead; its minimum is counted.
    """
    total = 0.0
    for position, cell in enumerate(cells):
        total += run_s.get(cell.model, 60.0)
        if position:
            total += campaign.cooldown.min_s
    return total


def format_duration(seconds: float) -> str:
    """``3h 05m``, ``4m 10s`` or ``12s``."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
