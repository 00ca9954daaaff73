"""Activity analysis (srcjax/transforms/activity.py): its caches, and what it refuses rather than lose derivatives."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.transforms.activity import FactsPerFunction


class _Fn:  # stands in for a NormalizedFunction (any object that takes weak references)
    pass


def test_per_function_facts_die_with_their_function() -> None:
    """Facts are keyed by the function object: a new function never sees an old one's facts, even
    when it reuses the old one's id() (which a cache keyed by id() would hand it)."""
    cache = FactsPerFunction()
    seen = set()
    reused = 0
    for _ in range(200):  # (until ids were reused a few times)
        nf = _Fn()
        facts = cache.of(nf)  # type: ignore[arg-type]
        assert facts == {}, "a new function saw facts of an earlier one"
        facts["active"] = True
        assert cache.of(nf) is facts  # type: ignore[arg-type]
        reused += id(nf) in seen
        seen.add(id(nf))
        del nf, facts
        gc.collect(1)  # (the young generations, where this round's objects are: a full collection scans the whole
        # heap the worker's earlier tests left, ~0.05 s a round late in a worker, 10 CPU s for this test)
        if reused >= 3:
            break
    assert reused >= 3  # ids were reused, so the test exercised the hazard
    assert not cache._facts  # nothing kept for dead functions


def _push(ls: Any, v: Any) -> None:
    ls.append(np.sin(v))


def _pushed_twice(x: Any) -> Any:
    ls: list[Any] = []
    _push(ls, x)
    _push(ls, x * 2.0)
    return np.sum(ls[0] + ls[1])


def _push_and_double(ls: Any, v: Any) -> Any:
    ls.append(np.sin(v) * 3.0)
    return v * 2.0, np.sqrt(v * v)


def _pushed_for_its_result(x: Any) -> Any:
    ls: list[Any] = []
    y, d = _push_and_double(ls, x)
    return np.sum(ls[0]) + np.sum(y)


def test_a_helper_appending_to_a_list_it_is_passed_is_refused_when_its_result_is_used_too() -> None:
    """``y, d = push(ls, x)``: grad gave 2, the appended ``3 sin(x)``'s derivative dropped (SILENT; session 43:
    the refusal read only a call written as a statement of its own)."""
    with pytest.raises(srcjax.TranspileError, match=r"appends to the list `ls` it is passed") as e:
        srcjax.grad(_pushed_for_its_result)(np.array([0.3, -0.2, 0.5]))
    assert f"test_activity.py:{_pushed_for_its_result.__code__.co_firstlineno + 2}:" in str(e.value)


@pytest.mark.parametrize("how", ["grad", "jvp", "jacfwd"])
def test_a_helper_appending_to_a_list_it_is_passed_is_refused(how: str) -> None:
    """``push(ls, x)``, a helper appending ``np.sin(x)`` to the list it is passed, as a statement of its own: grad,
    jvp and jacfwd gave zeros (SILENT: activity saw no effect of the call on ``ls``); now a DifferentiationError at
    the call, with a hint."""
    x = np.array([0.3, -0.2, 0.5])
    run = {"grad": lambda: srcjax.grad(_pushed_twice)(x),
           "jvp": lambda: srcjax.jvp(_pushed_twice, (x,), (np.ones(3),)),
           "jacfwd": lambda: srcjax.jacfwd(_pushed_twice)(x)}[how]
    with pytest.raises(srcjax.TranspileError, match=r"appends to the list `ls` it is passed") as e:
        run()
    assert f"test_activity.py:{_pushed_twice.__code__.co_firstlineno + 2}:" in str(e.value)
    assert "ls.append(_push(...))" in str(e.value)
