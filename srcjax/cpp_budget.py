"""When a process without ``ml_dtypes`` starts jaxlib's C++ dispatcher (issue #18; ``cpp_calls.py``).

jaxlib's C++ dispatcher imports ``ml_dtypes`` the first time it runs, even for calls whose leaves are
all device arrays (its signature of a value needs NumPy's scalar types, ml_dtypes' among them): 1.2-1.8 s
on the development machine, which a short job would pay at its second call. So a function gets its
dispatcher once something else imported ml_dtypes (jax, a bfloat16 value, srcjax's own upload after
its budget: ``runtime/host_upload.py``), or once the process's calls through the Python path have
spent the budget (a long loop, where the time the dispatcher saves per call has paid for the import):
:data:`SECONDS` of their time, each call counted up to :data:`CAP` (what a call's Python path costs at most:
beyond it a call's time is its program's or a compile's, which the dispatcher does not save), or
:data:`BUDGET` calls, whichever comes first. A training step's Python path costs 30-100 us more than the
dispatcher (``benchmarks/bench_alone.py``): it now switches after ~10-30k steps, where 100k calls wasted
~3 s to save a ~1 s import; a tiny function (~15 us a call) after ~65k.

A function whose calls spent that budget in one process (at least :data:`LONG` calls, and a tenth of
the process's calls through the Python path, were its own) is remembered in the persistent cache
(``warm_cache.mark`` under its level-2 identity, so an edit of anything it read forgets it): in a later
process it gets its dispatcher right after its first call, importing ml_dtypes then (the same training
script run again pays the import once, at its start, instead of ~2x jax.jit's per-call cost until the
budget is spent).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["BUDGET", "CAP", "LONG", "SECONDS", "ready", "spend", "took", "remembered"]

BUDGET = 100_000
SECONDS = 1.0  # (about one ``import ml_dtypes`` on the development machine: 0.7-1.8 s)
CAP = 0.0005
LONG = 1_000  # (a function's own calls when the budget is spent, at least: it is what the loop runs)
_LEFT = [BUDGET]
_TIME = [SECONDS]
_CALLS = [0]  # (calls through the Python path while waiting, every function's)
_SPENT = [False]  # (whether a call has found the budget spent: it alone may remember its function)
_KEY = ("C++ dispatcher: a long loop",)  # (the level-2 key's call part for the marker)


def ready() -> bool:
    """Whether starting jaxlib's C++ dispatcher costs no ``ml_dtypes`` import now (or the budget is spent)."""
    return "ml_dtypes" in sys.modules or _LEFT[0] <= 0 or _TIME[0] <= 0


def took(seconds: float) -> None:
    """A waiting function's call through the Python path took ``seconds`` (counted up to :data:`CAP`)."""
    _TIME[0] -= seconds if seconds < CAP else CAP


def _marker(c: Any) -> str | None:
    try:
        return c._warm_key(_KEY)  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - an identity that cannot be keyed: nothing remembered
        return None


def spend(c: Any) -> bool:
    """One call of ``c`` through the Python path while it waits for its dispatcher: whether the
    dispatcher may start now (the call that spends the budget remembers ``c`` if it ran the loop)."""
    _LEFT[0] -= 1
    _CALLS[0] += 1
    c._cpp_waited = getattr(c, "_cpp_waited", 0) + 1
    if not ready():
        return False
    first, _SPENT[0] = not _SPENT[0] and "ml_dtypes" not in sys.modules, True
    if first and c._cpp_waited >= max(LONG, _CALLS[0] // 10):
        key = _marker(c)
        if key is not None:
            from . import warm_cache

            warm_cache.mark(key, c._warm_reads())
    return True


def remembered(c: Any) -> bool:
    """Whether an earlier process spent the budget calling ``c`` (nothing it read changed since): if so,
    ml_dtypes is imported now, so that ``c`` gets its dispatcher at once."""
    key = _marker(c)
    if key is None:
        return False
    from . import warm_cache

    if not warm_cache.marked(key):
        return False
    import ml_dtypes  # noqa: F401  (what the dispatcher's first call would import)

    return True
