"""``srcjax.adjoint.max_bar`` (the cotangent of ``np.max``/``np.min``) divides each result's share before
spreading it (one division per result, JAX's form, which XLA compiles faster than a division over the
operand's shape): the values must be bit for bit those of the spread-then-divide form ``g * mask / count``,
ties, an ``initial``, infinite cotangents and NaN rows included."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from srcjax.adjoint import expand_reduced, max_bar


def _spread_then_divide(g, a, y, axis, keepdims, initial=None):
    yk = expand_reduced(y, a, axis, keepdims)
    mask = (a == yk).astype(np.result_type(g))
    count = expand_reduced(np.sum(mask, axis=axis, keepdims=keepdims), a, axis, keepdims)
    if initial is not None:
        count = count + (yk == initial)
    return expand_reduced(g, a, axis, keepdims) * mask / count


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (0 / 0 and inf * 0, on purpose)
@pytest.mark.parametrize("axis, keepdims, initial, dtype", list(itertools.product(
    [None, 0, 1, -1, (0, 1)], [False, True], [None, 0.5], [np.float32, np.float64])))
def test_max_bar_is_spread_then_divide_bit_for_bit(axis, keepdims, initial, dtype) -> None:
    rng = np.random.default_rng(0)
    a = np.round(rng.standard_normal((4, 5)), 0).astype(dtype)  # (rounded: many ties)
    a[1, 2] = np.nan
    a[3] = 0.5
    y = np.max(a, axis=axis, keepdims=keepdims, **({} if initial is None else {"initial": initial}))
    g = (rng.standard_normal(np.shape(y)) * 3).astype(dtype)
    g.reshape(-1)[0] = np.inf
    g.reshape(-1)[-1] = -np.inf
    want = _spread_then_divide(g, a, y, axis, keepdims, initial)
    got = max_bar(g, a, y, axis, keepdims, initial)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
