"""lower/static_calls.py: a structural helper called on plain static values runs in Python, not interpreted; the
same StableHLO and numbers as interpreting it, and everything else still interpreted."""

from __future__ import annotations

import types

import numpy as np
import pytest

import srcjax
from srcjax import batched
from srcjax.lower import specialize, static_calls


def _rosen_plans(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosen_hessian(x: np.ndarray) -> np.ndarray:
    n = x.size
    h = np.zeros((n, n))
    for i in range(n - 1):  # each term's second derivatives, by hand
        a, b = x[i], x[i + 1]
        h[i, i] += 1200.0 * a * a - 400.0 * b + 2.0
        h[i, i + 1] += -400.0 * a
        h[i + 1, i] += -400.0 * a
        h[i + 1, i + 1] += 200.0
    return h


def _interpreted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    run_body = specialize.Specializer.run_body

    def recorded(self, nf, body, env):  # type: ignore[no-untyped-def]
        names.append(nf.name)
        return run_body(self, nf, body, env)

    monkeypatch.setattr(specialize.Specializer, "run_body", recorded)
    return names


def test_index_plans_run_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """hessian's batched ``x[1:]``: ``_index_plan`` (a static plan from the shape and the key) is not interpreted;
    the helpers that index the arrays are; the Hessian is the one written by hand."""
    names = _interpreted(monkeypatch)
    x = np.linspace(-1.0, 1.5, 7)
    got = np.asarray(srcjax.hessian(_rosen_plans)(x))
    np.testing.assert_allclose(got, _rosen_hessian(x), rtol=1e-12, atol=1e-9)
    assert "batch_index_add" in names and "_scattered" in names  # (arrays: interpreted)
    assert "_index_plan" not in names and "_is_array_index" not in names


def test_same_stablehlo_as_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module lowered with the static plans run by Python is the one lowered interpreting them (a copy of the
    function: nothing cached is read back)."""
    x = np.linspace(-1.0, 1.5, 7)
    fast = srcjax.lower(srcjax.hessian(_rosen_plans_fast), x).as_text()
    monkeypatch.setattr(static_calls, "run", lambda nf, args, kwargs: static_calls.NOT_RUN)
    names = _interpreted(monkeypatch)
    slow = srcjax.lower(srcjax.hessian(_rosen_plans_interpreted), x).as_text()
    assert "_index_plan" in names
    assert _without_locations(slow) == _without_locations(fast)


def _rosen_plans_fast(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosen_plans_interpreted(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _without_locations(text: str) -> list[str]:
    return [ln.split(" loc(")[0] for ln in text.splitlines() if not ln.startswith("#loc")]


@pytest.mark.parametrize("value,expected", [
    (3, True), (2.5, True), (None, True), (Ellipsis, True), ("k", True), (True, True),
    ((1, (2, slice(1, None, -1)), None), True), (slice(0, 3), True),
    ([1, 2], False), ({"a": 1}, False), (np.int64(3), False), (np.zeros(2), False), ((1, [2]), False),
    (slice(np.zeros(1), None), False)])
def test_plain_values(value: object, expected: bool) -> None:
    assert static_calls.plain(value) is expected


def _helper(fn: object) -> types.SimpleNamespace:
    return types.SimpleNamespace(fn=fn, plain=None)


def test_what_is_interpreted() -> None:
    """An array in the result (a batched key's ``np.arange``), a mutable argument, a call that raises, a function
    of another module: interpreted (NOT_RUN)."""
    plan = static_calls.run(_helper(batched._index_plan), (((4, 3), (slice(1, None),), True, None, True)), {})
    assert plan == ((), (slice(None), slice(1, None)), (), ())
    assert static_calls.run(_helper(batched._index_plan), ((4, 3), (0,), True, True, True), {}) is static_calls.NOT_RUN
    assert static_calls.run(_helper(batched._contiguous), ([0, 1],), {}) is static_calls.NOT_RUN
    assert static_calls.run(_helper(batched._contiguous), ((),), {}) is static_calls.NOT_RUN  # (IndexError)
    assert static_calls.run(_helper(_rosen_plans), (1.0,), {}) is static_calls.NOT_RUN
    assert static_calls.run(types.SimpleNamespace(fn=batched._contiguous, plain=object()), ((0, 1),), {}) is \
        static_calls.NOT_RUN  # (a derivative of a helper)
