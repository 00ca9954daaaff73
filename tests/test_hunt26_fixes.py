"""Regressions of hunt 26 (tests/hunt26_programs.py): Python lists tested and walked inside the loop that fills
them (L-BFGS's histories), and ``srcjax.jvp``/``srcjax.vjp`` inside compiled code of a function with a tuple
default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax

from . import hunt26_programs as hp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _tested(np: Any) -> Callable[..., Any]:
    def f(x, n=3):  # noqa: ANN001, ANN202
        hist = []
        out = x
        for _ in range(n):
            if hist:  # (empty at the first pass only)
                g = x * 2.0
            else:
                g = x * 3.0
            out = out * g
            hist.append(out)
        return np.sum(out)
    return f


def _walked(np: Any) -> Callable[..., Any]:
    def f(x, n=3):  # noqa: ANN001, ANN202
        hist = []
        out = x
        for _ in range(n):
            g = 1.0
            for h in hist:  # (one more item at each pass)
                g = g + 0.1 * np.sum(h)
            if not hist:
                g = g * 2.0
            out = out * g
            hist.append(out)
        return np.sum(out)
    return f


def _items(np: Any) -> Callable[..., Any]:
    def f(x, n=3):  # noqa: ANN001, ANN202
        hist = []
        out = x
        for _ in range(n):
            if hist:
                g = np.sum(hist[-1])  # (read only where the list has items)
            else:
                g = 1.0
            out = out * g
            hist.append(out)
        return out
    return f


X = np.array([0.5, 1.5])
XS = np.stack([X, X + 0.25])


@pytest.mark.parametrize("make", [_tested, _walked], ids=["tested", "walked"])
def test_grad_through_a_list_the_loop_appends_to(make: Callable[..., Any]) -> None:
    # `if hist:` was replayed by the adjoint on the full list (the branch of the last pass at every pass: a silent
    # wrong gradient, 5.5 for 6.0); `for h in hist` walked every item at every pass (an internal IndexError)
    f, want = make(np), jax.grad(make(jnp))
    np.testing.assert_allclose(srcjax.grad(f)(X), want(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(f))(XS), jax.vmap(want)(XS), rtol=1e-12)
    np.testing.assert_allclose(srcjax.jacfwd(f)(X), want(X), rtol=1e-12)


def test_an_if_on_a_list_of_arrays_is_a_python_if() -> None:
    # (was a lax.cond on the list: vmap read `hist[-1]` of the empty list, grad an unbound value)
    f, fj = _items(np), _items(jnp)
    assert "srcjax.lax.cond" not in srcjax.source(srcjax.jit(f))
    np.testing.assert_allclose(srcjax.vmap(f)(XS), jax.vmap(fj)(XS), rtol=1e-12)
    g = srcjax.grad(lambda x: np.sum(f(x)))
    np.testing.assert_allclose(g(X), jax.grad(lambda x: jnp.sum(fj(x)))(X), rtol=1e-12)


def test_a_loop_over_a_zip_of_lists_with_a_renamed_target_is_not_indexed() -> None:
    # lbfgs_logreg's `for (s, yv), (rho, a) in zip(zip(s_hist, y_hist), reversed(alphas))` (its names bound again
    # elsewhere) became a fori_loop over `zip(...)[i]`: "object of type 'zip' has no len()"
    r = np.random.default_rng(0)
    w, X2, y = 0.3 * r.standard_normal(3), r.standard_normal((6, 3)), r.integers(0, 2, 6).astype(np.float64)
    got = srcjax.jit(hp.lbfgs_logreg)(w, X2, y)
    for a, b in zip(got, hp.lbfgs_logreg(w, X2, y)):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def _taps(x, taps=(0.25, 0.5)):  # noqa: ANN001, ANN202
    return np.sin(x) * taps[0] + x * taps[1]


_W = np.array([1.0, 2.0])


def _weights(x, w=_W):  # noqa: ANN001, ANN202
    return np.sin(x) * w


def test_jvp_and_vjp_inside_compiled_code_pass_a_tuple_default() -> None:
    # (the generated jvp takes every parameter, then the tangents: the tangent was bound to `taps`, "missing a
    # required argument: 'x_dot'")
    t = np.cos(X)
    out, tan = srcjax.jit(lambda a: srcjax.jvp(_taps, (a,), (np.cos(a),)))(X)
    np.testing.assert_allclose(tan, (0.25 * np.cos(X) + 0.5) * t, rtol=1e-12)

    def pulled(a):  # noqa: ANN001, ANN202
        y, back = srcjax.vjp(_taps, a)
        return back(np.ones(2))

    np.testing.assert_allclose(srcjax.jit(pulled)(X)[0], 0.25 * np.cos(X) + 0.5, rtol=1e-12)
    with pytest.raises(srcjax.TranspileError, match="parameter `w` keeps its default") as e:
        srcjax.jit(lambda a: srcjax.jvp(_weights, (a,), (np.cos(a),)))(X)
    assert "test_hunt26_fixes.py" in str(e.value) and "pass it" in str(e.value)


def _two_loop(np: Any) -> Callable[..., Any]:
    def f(x, n=3):  # noqa: ANN001, ANN202
        s_hist, alphas = [], []
        r = x
        s = 0.0
        for _ in range(n):
            for s, a in zip(s_hist, alphas):
                r = r + s * a
            for (s, a), b in zip(zip(s_hist, alphas), reversed(alphas)):  # (`s`, `a` bound again above)
                r = r + s * a * b
            s_hist.append(r)
            alphas.append(r * 0.5)
            if len(s_hist) > 1:
                s_hist = s_hist[1:]
                alphas = alphas[1:]
        return np.sum(r + s)
    return f


def test_grad_through_a_loop_over_a_zip_of_a_zip_with_names_bound_again() -> None:
    # (its target was renamed whole, `for s_a_b_item in zip(...)`: "cannot differentiate a loop over `zip(zip(...),
    # reversed(...))` yet", with no position, or the enclosing loop's)
    f, want = _two_loop(np), jax.grad(_two_loop(jnp))
    np.testing.assert_allclose(srcjax.grad(f)(X), want(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.jit(f)(X), _two_loop(jnp)(X), rtol=1e-12)


def _popped(x):  # noqa: ANN001, ANN202
    hist = [x, 2.0 * x, 3.0 * x]
    hist.pop(0)
    return np.sum(hist[0] * hist[1])


def test_pop_0_under_derivatives_runs() -> None:
    # (was refused with a hint, which once wrote `hist = [hist[0], hist[2]]`, keeping the item popped; refuse46 reads
    # `hist.pop(0)` as `hist = hist[1:]`): sum(2x * 3x), so 12 x
    np.testing.assert_allclose(srcjax.grad(_popped)(X), 12.0 * X, rtol=1e-12)
    np.testing.assert_allclose(srcjax.jit(_popped)(X), _popped(X), rtol=1e-12)


def _cached(np: Any) -> Callable[..., Any]:
    def f(x, n=4):  # noqa: ANN001, ANN202
        cache = {}
        out = x
        for i in range(n):
            k = i % 2
            if k in cache:  # (the dict's keys: static, once the loop is unrolled)
                out = out + cache[k] * 0.5
            else:
                out = out * 2.0
            cache[k] = out
        return np.sum(out)
    return f


def _either(np: Any) -> Callable[..., Any]:
    def f(x, n=3):  # noqa: ANN001, ANN202
        hist = []
        out = x
        for _ in range(n):
            if not hist or np.sum(out) > 100.0:  # (was np.logical_or(np.logical_not(hist), ...): an empty array)
                g = 2.0
            else:
                g = 1.5
            out = out * g
            hist.append(out)
        return np.sum(out)
    return f


def _anded(np: Any) -> Callable[..., Any]:
    def f(x, n=4):  # noqa: ANN001, ANN202
        hist = []
        out = x
        for _ in range(n):
            if hist and np.sum(hist[-1]) > 1.0:  # (derivatives refused `hist and ...`: "builds a value from hist")
                g = 0.5
            else:
                g = 1.5
            out = out * g
            hist.append(out)
        return np.sum(out)
    return f


def _reversed_items(np: Any) -> Callable[..., Any]:
    def f(x, n=3):  # noqa: ANN001, ANN202
        hist = []
        out = x
        for _ in range(n):
            acc = 0.0
            for h in reversed(hist):  # (was a fori_loop over `reversed_1[i]`: "'list_reverseiterator' has no len()")
                acc = acc * 0.5 + h
            out = out * 0.5 + 0.1 * acc
            hist.append(np.sin(out))
        return np.sum(out)
    return f


@pytest.mark.parametrize("make", [_cached, _either, _anded, _reversed_items], ids=["cached", "either", "anded",
                                                                                 "reversed"])
def test_python_containers_read_in_a_loop_on_data(make: Callable[..., Any]) -> None:
    f, fj = make(np), make(jnp)
    np.testing.assert_allclose(srcjax.jit(f)(X), fj(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.jacfwd(f)(X), jax.grad(fj)(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.grad(f)(X), jax.grad(fj)(X), rtol=1e-12)


def _swap_columns(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[:, 0], y[:, 1] = y[:, 1], y[:, 0]  # (NumPy: both columns y[:, 1], the second value a view of the first column)
    return y


def _swap_items(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0], y[1] = y[1], y[0]  # (a 1-D y: numbers, swapped; a 2-D y: rows, views: both rows y[1] in NumPy)
    return y


def test_a_tuple_assignment_of_slices_of_the_array_it_writes_is_refused() -> None:
    # (was swapped, where NumPy writes the first column into both: a silent wrong answer)
    with pytest.raises(srcjax.TranspileError, match="another value of the same assignment views") as e:
        srcjax.jit(_swap_columns)(np.arange(6.0).reshape(3, 2))
    assert "test_hunt26_fixes.py" in str(e.value) and "y[:, [0, 1]] = y[:, [1, 0]]" in str(e.value)
    x = np.array([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(srcjax.jit(_swap_items)(x), _swap_items(x))  # (bubble sort's swap runs)


def test_a_tuple_assignment_of_rows_of_a_2d_array_it_writes_agrees_with_numpy_or_is_refused() -> None:
    # (was swapped, where NumPy's second value is a view of row 0: both rows y[1], a silent wrong answer; decided when
    # specializing: `in_place(y, y, alias=..., rank=2)` before the first write, frontend/alias_decisions.py)
    x = np.arange(6.0).reshape(3, 2)
    try:
        got = srcjax.jit(_swap_items)(x)
    except srcjax.TranspileError as e:
        assert "test_hunt26_fixes.py" in str(e).splitlines()[0] and "y[[0, 1]] = y[[1, 0]]" in str(e), str(e)
        return
    np.testing.assert_array_equal(got, _swap_items(x.copy()))


def _swap_written_out(y):  # noqa: ANN001, ANN202
    y = y.copy()
    a = y[1]
    b = y[0]
    y[0] = a
    y[1] = b  # (a 1-D y: numbers, swapped; a 2-D y: b is a view of row 0, which `y[0] = a` changed)
    return y


def test_a_swap_written_out_through_names_runs_for_a_1d_array() -> None:
    # (was refused at any rank: "assigning into 'y' would also change 'b'"; a 1-D y's items are numbers)
    x = np.array([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(srcjax.jit(_swap_written_out)(x), _swap_written_out(x))
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(_swap_written_out)(np.arange(6.0).reshape(3, 2))
    assert "test_hunt26_fixes.py" in str(e.value).splitlines()[0]


def _grown(np: Any) -> Callable[..., Any]:
    def f(x, n=3):  # noqa: ANN001, ANN202
        hist = ()
        out = x
        for _ in range(n):
            if hist:
                out = out + hist[0]
            hist = hist + (out,)  # (a tuple that grows: the loop the lowering rolled is unrolled, as Python runs it)
        return np.sum(out)
    return f


def test_a_loop_growing_a_tuple_it_tests() -> None:
    # (jit: "the loop body returns (*, (*, (*,),),), but the loop carries (*, (*, (,),),)"; vmap: `if hist:` of the
    # tuple read as a test on data, "a test of shape (0,)")
    f, fj = _grown(np), _grown(jnp)
    np.testing.assert_allclose(srcjax.jit(f)(X), fj(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.vmap(f)(XS), jax.vmap(fj)(XS), rtol=1e-12)
