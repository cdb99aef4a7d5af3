"""SciPy's compiled special functions, without ``scipy.special``'s package set-up.

The statistics call four of SciPy's special functions — ``stdtr`` and ``stdtrit`` (Student's t,
what ``scipy.stats.t`` evaluates), ``ndtr`` (the normal CDF) and ``binom`` — which live in the
compiled module ``scipy.special._ufuncs``. Importing ``scipy.special`` first runs the package's
``__init__``, which sets up SciPy's array-API layer: it clones numpy's namespace by reading every
public name of it, which loads numpy's lazy submodules (``numpy.f2py``, ``numpy.testing``, …).
That is 0.16–0.23 s of every build that analyses anything, on the build's critical path, for
functions that take 0.015–0.02 s to load on their own (bench/README.md, issue 16, forty-first
round).

:data:`ufuncs` is that compiled module, loaded under a bare stand-in for its package that is
taken out of ``sys.modules`` again at once: the functions are SciPy's own objects (``import
scipy.special`` later, by ``scipy.stats`` say, runs the package's ``__init__``, which finds the
module loaded and exports the very same functions). Wherever that cannot be done as is — the
package already imported, other threads running (which could import ``scipy.special`` while the
stand-in is there), a SciPy without those names in that module — :data:`ufuncs` is plain
``scipy.special``. Its import loads SciPy's OpenBLAS: import this module through
:func:`sparkreport.cache.import_tuned`.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

#: The functions the statistics call.
NAMES = ("stdtr", "stdtrit", "ndtr", "binom")


def _compiled() -> Any:
    """``scipy.special._ufuncs`` loaded without running ``scipy.special/__init__.py``, or None."""
    import importlib.util

    import scipy

    spec = importlib.util.find_spec("scipy.special")
    if spec is None or not spec.submodule_search_locations:
        return None
    stand_in = types.ModuleType("scipy.special")
    stand_in.__path__ = list(spec.submodule_search_locations)
    sys.modules["scipy.special"] = stand_in
    try:
        from scipy.special import _ufuncs
    finally:
        del sys.modules["scipy.special"]
        # (not hasattr: scipy's module __getattr__ would import the real package to answer)
        vars(scipy).pop("special", None)
    return _ufuncs if all(name in vars(_ufuncs) for name in NAMES) else None


def _load() -> Any:
    if "scipy.special" not in sys.modules and threading.active_count() == 1:
        try:
            compiled = _compiled()
        except Exception:  # noqa: BLE001 — any SciPy layout we do not know: its public import below
            compiled = None
        if compiled is not None:
            return compiled
    from scipy import special

    return special


#: ``scipy.special._ufuncs``, or ``scipy.special`` itself (see the module's docstring).
ufuncs = _load()
