"""tests/hunt_sweep.py's verdict on a result (``judged``), which the random hunts and the corpora share: srcjax's
result against jax's, then the generated source run by NumPy against srcjax's, each failure with its message."""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax

from .hunt_sweep import judged, leaves_agree


def _sine(x: Any) -> Any:
    return np.sin(x) * 2.0


def _agree(got: Any, want: Any, what: str, rtol: float) -> None:
    leaves_agree(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want), what, rtol)


X = np.array([0.1, 0.2, 0.3])
RIGHT = np.sin(X) * 2.0


def test_a_result_that_agrees_with_jax_and_with_its_source_is_ok() -> None:
    assert judged(srcjax.jit(_sine), (X,), RIGHT, RIGHT, _agree, 1e-9) == ("ok", "")


def test_a_result_that_differs_from_jax_is_wrong_before_its_source_runs() -> None:
    # (arguments the source cannot run on: had it run, the outcome would be "numpy")
    out = judged(srcjax.jit(_sine), (X, X), RIGHT, RIGHT + 1.0, _agree, 1e-9)
    assert out.status == "wrong" and "srcjax vs jax leaf 0" in out.detail
    assert len(judged(srcjax.jit(_sine), (X,), RIGHT, RIGHT + 1.0, _agree, 1e-9, chars=40).detail) == 40


def test_the_generated_source_run_by_numpy_must_agree_with_srcjax() -> None:
    # (srcjax's result and jax's agree with each other, not with what the source computes)
    out = judged(srcjax.jit(_sine), (X,), RIGHT + 1.0, RIGHT + 1.0, _agree, 1e-9)
    assert out.status == "wrong" and "NumPy running the generated source vs srcjax leaf 0" in out.detail
    assert judged(srcjax.jit(_sine), (X,), RIGHT + 1.0, RIGHT + 1.0, _agree, 1e-9, numpy_check=False).status == "ok"
    # (numpy_rtol: the source's own tolerance)
    assert judged(srcjax.jit(_sine), (X,), RIGHT + 1e-6, RIGHT, _agree, 1e-3, numpy_rtol=1e-9).status == "wrong"


def test_a_generated_source_that_does_not_run_is_the_numpy_outcome() -> None:
    out = judged(srcjax.jit(_sine), (X, X), RIGHT, RIGHT, _agree, 1e-9, numpy_chars=20)
    assert out.status == "numpy" and out.detail.startswith("the generated source under NumPy: TypeError: ")
    assert len(out.detail) == len("the generated source under NumPy: TypeError: ") + 20
