"""Class registries (parsers, execution environments, workloads): a name → class mapping and
the decorator that fills it, refusing a name registered twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", bound=type)


def registrar(registry: dict[str, T], key: str, what: str) -> Callable[[T], T]:
    """A class decorator adding classes to ``registry`` under their attribute ``key``."""

    def register(cls: T) -> T:
        name = getattr(cls, key)
        if name in registry:
            raise ValueError(f"{what} {name!r} registered twice")
        registry[name] = cls
        return cls

    register.__doc__ = f"Class decorator: add a {what} to the registry."
    return register
