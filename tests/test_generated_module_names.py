"""Generated modules' file names are unique: a module's registrations (its text in ``linecache``, its lines'
locations) are dropped by file name when its functions die, so a second module written meanwhile under the
same name lost its source when the first one was collected (``OSError: could not get source code`` in
``numpy_function`` of ``vjp(hessian(f))`` in compiled code, depending on when the collector ran: found by a
test order in session 40). The Jacobians by several argnums and the Hessian called in compiled code were
named by their function alone."""

from __future__ import annotations

import gc
import linecache
from typing import Any

import numpy as np

import srcjax


def _make(k: float) -> Any:
    def f(x: Any, y: Any) -> Any:  # (one qualname for every k: the old file name's only part)
        return np.sum(np.tanh(x) * y ** 2) * k
    return f


def test_a_module_of_a_function_of_the_same_name_keeps_its_source_when_the_first_dies() -> None:
    x, y = np.array([0.3, -0.2]), np.array([0.5, 0.1])
    first = srcjax.jacrev(_make(1.0), argnums=(0, 1))
    first_file = first.__srcjax_fn__.__code__.co_filename  # type: ignore[attr-defined]
    second = srcjax.jacrev(_make(2.0), argnums=(0, 1))
    second_file = second.__srcjax_fn__.__code__.co_filename  # type: ignore[attr-defined]
    assert first_file != second_file
    del first
    gc.collect()
    assert linecache.getlines(second_file), "the second module's text was dropped with the first"
    want = srcjax.jit(second)(x, y)
    for got, w in zip(srcjax.numpy_function(second)(x, y), want, strict=True):
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-12)
