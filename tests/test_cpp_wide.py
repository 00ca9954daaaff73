"""NumPy arguments through jaxlib's C++ dispatcher where jax is imported with ``jax_enable_x64`` off
(``srcjax/cpp_calls.py``'s ``wide``; issue #18): jaxlib would key and upload a float64 array or a Python
float as 32-bit, so such a function's calls run with the flag on for their thread (jax's own
``enable_x64`` context does the same), and are served as where srcjax runs alone: NumPy arguments read in
place by programs XLA runs inline, copied for the others. Results are the Python path's and NumPy's, a
NumPy array written right after a call never changes its result, and jax's flag is as it was after each
call."""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest

import srcjax
from tests.python_path import Counting

jax = pytest.importorskip("jax")


@pytest.fixture
def x64_off(monkeypatch):
    """jax's jax_enable_x64 off for this thread (whatever other test modules set globally)."""
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    from jax._src import config

    prev = config.enable_x64.swap_local(False)
    yield config.enable_x64
    config.enable_x64.set_local(prev)


def loss(params, x, y):
    h = np.tanh(x @ params["w"] + params["b"])
    return np.mean((h - y) ** 2)


def _inputs(dtype=np.float32):
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((3, 4)).astype(dtype), "b": rng.standard_normal(4).astype(dtype)}
    return params, rng.standard_normal((5, 3)).astype(dtype), rng.standard_normal((5, 4)).astype(dtype)


def _same(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        assert np.asarray(u).dtype == np.asarray(v).dtype
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


@pytest.mark.parametrize("inline", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_steps_are_served_in_cpp_with_jax_x64_off(x64_off, monkeypatch, dtype, inline):
    """float64 NumPy inputs go through ``wide`` (they took srcjax's Python path on every call); float32 ones
    too where the program runs inline (read in place), and otherwise keep the copies (``host_first``),
    without ``wide``'s cost."""
    from srcjax import cpp_calls

    monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe: inline)
    def step(params, x, y):  # (a function of its own in each case: once wide, a function stays wide)
        h = np.tanh(x @ params["w"] + params["b"])
        return np.mean((h - y) ** 2)

    g = srcjax.value_and_grad(step)
    args = _inputs(dtype)
    for _ in range(3):
        _same(g(*args), g._call(args, {}))
    assert not x64_off.value  # (as it was, after srcjax's calls)
    counting = Counting(g)
    for _ in range(5):
        _same(g(*args), g._call(args, {}))
    assert counting.n == 5  # (only the reference calls above: every g(...) served without the Python path)
    assert g.__dict__["_dispatch"].__name__ == ("wide" if dtype == np.float64 or inline else "host_first")
    assert g(*args)[0].dtype == dtype
    assert jax.numpy.ones(2).dtype == np.float32  # (jax unaffected)


def test_64_bit_and_python_number_arguments_keep_their_programs(x64_off):
    def scale(x, s):
        return x * s

    f = srcjax.jit(scale)
    x32, x64 = np.ones(3, np.float32), np.ones(3, np.float64)
    counting = Counting(f)
    for _ in range(4):
        assert f(x32, np.float32(2.0) * x32).dtype == np.float32
        out = f(x64, x64 * 2)
        assert out.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(out), np.full(3, 2.0))
        assert f(x32, 2.0).dtype == np.float32  # (a weak Python float)
        assert f(x64, 0.5).dtype == np.float64
        np.testing.assert_array_equal(np.asarray(f(x64, 1e-40)), np.full(3, 1e-40))  # (not squashed to f32: 0)
    assert counting.n <= 5  # (each signature's first call)
    assert not x64_off.value


def chain(a, b):
    return a[0, 0] * 1.0, {"ab": (a @ b) @ b}  # (the first result is cheap, the last is not)


@pytest.mark.parametrize("inline", [True, False])
def test_numpy_arguments_written_after_the_call(x64_off, monkeypatch, inline):
    """Read in place (``_inline`` said so: the call waits for the program) or copied (a program XLA runs
    asynchronously): a write right after the call never reaches its result."""
    from srcjax import cpp_calls

    monkeypatch.setattr(cpp_calls, "_inline", lambda out, exe: inline)
    f = srcjax.jit(chain)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((400, 400))  # (float64: through ``wide``)
    b = rng.standard_normal((400, 400)) / 20
    want = f._call((a, b), {})
    for kwargs in [{}, {"b": None}]:
        for _ in range(8):
            a_in, b_in = a.copy(), b.copy()
            first, rest = f(a_in, b=b_in) if kwargs else f(a_in, b_in)
            a_in[:] = 0.0  # (right after the call)
            b_in[:] = 1.0
            _same((first, rest), want)
    assert f.__dict__["_dispatch"].__name__ == "wide"


def test_keyword_calls_with_numbers_are_served_with_jax_x64_off(x64_off):
    def gapped(y, x, scale=2.0, shift=0.0):
        return x * scale - y + shift

    f = srcjax.jit(gapped)
    y, x = np.ones(4, np.float32), np.arange(4, dtype=np.float32)
    calls = [((y, x), {}), ((), {"x": x, "y": y, "shift": 0.5}), ((y,), {"x": x, "scale": 3.0}), ((y, x, 1.5), {})]
    for _ in range(2):
        for args, kwargs in calls:
            f(*args, **kwargs)
    counting = Counting(f)
    for _ in range(3):
        for args, kwargs in calls:
            want = gapped(*args, **kwargs)
            out = f(*args, **kwargs)
            assert out.dtype == want.dtype
            np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    assert counting.n == 0
