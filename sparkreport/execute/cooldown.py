"""Thermal control before each run: wait until the GPU is cool *and* a minimum time has passed.

The seed study's method (5 minutes and ≤ 45 °C between runs), with both figures from the
campaign and a cap on the wait. Clock and sleep are injected so tests run instantly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sparkreport.execute.campaign import Cooldown
from sparkreport.execute.gpu import GpuProbe


@dataclass(frozen=True)
class CooldownResult:
    """How the wait went: seconds waited, the temperature at the end, and any warning."""

    waited_s: float
    temp_c: float | None
    reached: bool
    warning: str | None = None


def wait_for_cooldown(settings: Cooldown, gpu: GpuProbe | None, last_end: float | None,
                      clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep,
                      on_wait: Callable[[float, float | None], None] | None = None) -> CooldownResult:
    """Block until ``min_s`` has passed since ``last_end`` and the GPU is at or below
    ``max_temp_c`` — or ``max_wait_s`` ran out (then the result carries a warning).

    ``last_end`` is the clock reading when the previous run ended (None: first run, no
    minimum). Without a GPU probe only the minimum time is waited.
    """
    start = clock()
    earliest = (last_end + settings.min_s) if last_end is not None else start
    while True:
        now = clock()
        temp = gpu.temperature() if gpu is not None else None
        time_ok = now >= earliest
        temp_ok = temp is None or temp <= settings.max_temp_c
        if time_ok and temp_ok:
            return CooldownResult(waited_s=now - start, temp_c=temp, reached=True)
        if now - start >= settings.max_wait_s:
            return CooldownResult(
                waited_s=now - start, temp_c=temp, reached=False,
                warning=f"cooldown gave up after {now - start:.0f} s at {temp} °C "
                        f"(threshold {settings.max_temp_c:g} °C)")
        if on_wait is not None:
            on_wait(now - start, temp)
        remaining = max(earliest - now, 0.0)
        sleep(min(settings.poll_s, remaining) if not time_ok and temp_ok else settings.poll_s)
