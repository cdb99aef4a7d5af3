"""Execute: run benchmark campaigns (plan, environments, workloads, monitor, ledger).

Deliberately light: this package imports only the standard library, click and PyYAML at
module level (nvidia-ml-py, docker and torch lazily, where used), so ``sparkreport run``
works on a GPU machine that has only the runtime dependencies. Nothing is imported here;
use the submodules (:mod:`.campaign`, :mod:`.plan`, :mod:`.runner`, …).
"""
