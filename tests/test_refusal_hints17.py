"""Refusals a user meets, located at the user's line with what to write instead (known17's list, from errs16's
left items): one-argument ``np.where(condition)`` (was "np.where(): missing a required argument: 'x'") and a
wrong tuple-unpack count ``a, b = (x, y, z)`` (had no hint)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

X = np.array([1.5, -2.0, 3.0])


def indices_where(x: Any) -> Any:
    return np.sum(np.where(x > 0))


def unpack_three_into_two(x: Any) -> Any:
    p, q = (x, x * 2, x * 3)
    return p + q


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0]


@pytest.mark.parametrize("transform", [srcjax.jit, srcjax.grad])
def test_one_argument_where_says_it_is_nonzero(transform: Any) -> None:
    with pytest.raises(srcjax.TranspileError, match=r"np\.where\(condition\) with one argument") as e:
        transform(indices_where)(X)
    assert "test_refusal_hints17.py:18:" in _first_line(e.value)
    assert "np.where(condition, x, y)" in (e.value.hint or "")


def test_the_mask_the_hint_names_runs() -> None:
    def masked(x: Any) -> Any:
        return np.sum(np.where(x > 0, x, 0.0)) + np.count_nonzero(x > 0)

    np.testing.assert_allclose(np.asarray(srcjax.jit(masked)(X)), 4.5 + 2)


def test_a_wrong_unpack_count_has_a_hint() -> None:
    with pytest.raises(srcjax.ShapeError, match="cannot unpack 3 values into 2 names") as e:
        srcjax.jit(unpack_three_into_two)(X)
    assert "test_refusal_hints17.py:22:" in _first_line(e.value)
    assert "write 3 names" in (e.value.hint or "")
