"""``np.ndarray(shape, dtype)``, NumPy's low-level spelling of ``np.empty`` (npbench's nbody and vadv fill one
row by row), was refused ("constructing a ndarray object runs Python code srcjax does not transpile"): it is
``np.empty``'s zeros now (srcjax/composites.py), differentiated and batched through the writes that fill it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax


def _filled(x: Any) -> Any:
    KE = np.ndarray(3, dtype=np.float64)
    c = np.ndarray((2, 3), dtype=x.dtype)
    KE[0] = x[0]
    KE[1:] = 2.0 * x[1]
    c[:] = x[:3]
    return KE, c


def test_np_ndarray_is_an_empty_array_filled_in_place() -> None:
    x = np.arange(1.0, 5.0)
    for got, want in zip(srcjax.jit(_filled)(x), _filled(x), strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)
        assert got.dtype == want.dtype
    assert srcjax.jit(_filled)(x.astype(np.float32))[1].dtype == np.float32
    loss = lambda x: np.sum(_filled(x)[0] ** 2) + np.sum(_filled(x)[1])  # noqa: E731
    np.testing.assert_allclose(np.asarray(srcjax.grad(loss)(x)), [2.0 * x[0] + 2.0, 16.0 * x[1] + 2.0, 2.0, 0.0])
    got = srcjax.vmap(_filled)(np.stack([x, -x]))
    np.testing.assert_array_equal(np.asarray(got[1][1]), _filled(-x)[1])


def _viewed(x: Any) -> Any:
    return np.ndarray((2,), dtype=x.dtype, buffer=x)


def test_np_ndarray_over_a_buffer_is_refused() -> None:
    with pytest.raises(srcjax.TranspileError, match="buffer"):
        srcjax.jit(_viewed)(np.arange(4.0))
