"""NumPy arguments of compiled functions on the CPU (issue #18, ``srcjax/cpp_calls.py``): read in place by
the C++ dispatcher only where XLA runs the program on the calling thread (``Executable.runs_inline``: under
1000 flops), copied by srcjax otherwise; results never depend on a write to an argument after the call."""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest

import srcjax
from srcjax import cpp_calls


def tiny(x):
    return x * 2.0 + 1.0


def matmuls(a, b):
    return a @ b @ b + 1.0  # (2 * 2 * 48**3 flops: XLA runs it on its own threads)


def _plan_exe(f):
    plans = list(f._cache.values()) + list(f._tree_cache.values())
    assert len(plans) == 1
    return plans[0].exe


def test_runs_inline_is_xlas_rule_for_cheap_programs(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    small = srcjax.api.Compiled(tiny)
    small(np.arange(4, dtype=np.float32))
    assert _plan_exe(small).runs_inline()
    big = srcjax.api.Compiled(matmuls)
    a = np.ones((48, 48), np.float32)
    big(a, a)
    assert not _plan_exe(big).runs_inline()


def test_a_ready_result_of_an_asynchronous_program_does_not_make_it_read_in_place(monkeypatch):
    """The first call's results being ready when looked at (a loaded machine, a slow Python path) said
    "inline" before: every later call then waited for the program (1.3-3.7x jax.jit with NumPy inputs on
    bench_models.py). Only a program XLA runs on the calling thread is read in place."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    big = srcjax.api.Compiled(matmuls)
    a = np.ones((48, 48), np.float32)
    out = big(a, a).block_until_ready()
    assert not cpp_calls._inline(out, _plan_exe(big))
    small = srcjax.api.Compiled(tiny)
    out = small(np.arange(4, dtype=np.float32)).block_until_ready()
    assert cpp_calls._inline(out, _plan_exe(small))
    assert not cpp_calls._inline(out, None)  # (a program of another kind: an SPMD one)


@pytest.mark.parametrize("offset", [0, 1, 4])
def test_numpy_arguments_written_after_the_call(offset, monkeypatch):
    """Aligned, misaligned and strided NumPy arguments of a cheap (read in place) and an asynchronous
    (copied) program, in containers and alone, with Python scalars: a write right after each call does
    not reach its results, which equal NumPy's."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")

    def combine(t, s):
        return t["a"] @ t["b"] @ t["b"] + s, t["c"] * s

    f = srcjax.api.Compiled(combine)
    g = srcjax.api.Compiled(tiny)
    rng = np.random.default_rng(offset)
    for _ in range(6):
        raw = rng.standard_normal(offset + 2 * 48 * 48).astype(np.float32)
        a = raw[offset:offset + 48 * 96].reshape(48, 96)[:, ::2]  # (strided, `offset` floats past the start)
        b = rng.standard_normal((48, 48)).astype(np.float32)
        c = raw[offset:offset + 5]
        want = [np.array(w) for w in combine({"a": a, "b": b, "c": c}, 2.0)]
        want_small = tiny(c)
        got = f({"a": a, "b": b, "c": c}, 2.0)
        got_small = g(c)
        raw[:] = 7.0
        b[:] = 7.0
        np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(np.asarray(got[1]), want[1])
        np.testing.assert_array_equal(np.asarray(got_small), want_small)


def test_results_read_by_numpy_keep_their_dtype_and_stay_read_only():
    """``np.asarray`` of a result takes NumPy's ``__array_struct__`` route for native dtypes (a read-only view
    of the result's memory) and ``__array__`` for the others (bfloat16: the interface cannot spell it)."""
    f = srcjax.jit(tiny)
    for x in (np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(3.0), np.array(2, np.int32),
              np.arange(4, dtype=ml_dtypes.bfloat16)):
        out = f(x)
        v = np.asarray(out)
        assert v.dtype == out.dtype == tiny(x).dtype and v.shape == x.shape
        np.testing.assert_array_equal(v.astype(np.float64), tiny(x).astype(np.float64))
        assert not v.flags.writeable
        with pytest.raises(ValueError):
            v[...] = 0
        w = np.array(out)
        assert w.flags.writeable and w.dtype == v.dtype
        w[...] = 0  # (a copy: the result is unchanged)
        assert np.asarray(out, dtype=np.float64).dtype == np.float64
        np.testing.assert_array_equal(np.asarray(out).astype(np.float64), tiny(x).astype(np.float64))
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        getattr(f(np.ones(2)), "nonsense")  # noqa: B009
