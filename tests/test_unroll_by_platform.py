"""A Python ``for`` over a short static range is unrolled on a GPU (``lower.values.roll_above``): each
step of a rolled ``stablehlo.while`` there costs kernel launches and a test read back by the host, and
jax unrolls every Python loop. On the CPU it stays one rolled loop. The GPU's choice is tested here on the
CPU by asking for its threshold."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from srcjax.lower import values


def rnn(w, xs):
    h = np.zeros(w.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + xs[t])
    return np.sum(h ** 2)


def rnn_gpu(w, xs):  # (rnn again: the persistent cache keys a program by its platform, which the test fakes)
    h = np.zeros(w.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + xs[t])
    return np.sum(h ** 2)


W = np.random.default_rng(0).standard_normal((4, 4)) * 0.5


@pytest.fixture
def gpu_threshold(monkeypatch):
    monkeypatch.setattr(values, "roll_above", lambda platform: values.GPU_UNROLL_TRIP)


def _whiles(fn, *args):
    return srcjax.jit(fn).lower(*args).as_text().count("stablehlo.while")


def test_the_cpu_rolls_a_python_for(monkeypatch):
    assert values.roll_above("cpu") == values.TINY_TRIP
    monkeypatch.setattr(values, "roll_above", lambda platform: values.TINY_TRIP)  # (the suite may run on a GPU)
    assert _whiles(rnn, W, np.ones((8, 4))) == 1


def test_a_gpu_unrolls_short_python_fors_and_rolls_long_ones(gpu_threshold):
    xs = np.linspace(-1, 1, 32).reshape(8, 4)
    assert _whiles(rnn_gpu, W, xs) == 0
    assert _whiles(rnn_gpu, W, np.ones((values.GPU_UNROLL_TRIP + 1, 4))) == 1
    np.testing.assert_allclose(srcjax.jit(rnn_gpu)(W, xs), rnn(W, xs), rtol=1e-12)
    g = srcjax.jit(srcjax.grad(rnn_gpu))
    assert "stablehlo.while" not in g.lower(W, xs).as_text()  # (the derivative's loops too)
    np.testing.assert_allclose(g(W, xs), srcjax.numpy_function(srcjax.grad(rnn))(W, xs), rtol=1e-12)


def test_fori_loops_take_the_same_threshold(gpu_threshold):
    def f(x):
        a = srcjax.lax.fori_loop(0, 8, lambda i, c: c * 0.5 + x, x)
        return srcjax.lax.fori_loop(0, 40, lambda i, c: c * 0.5 + x, a)

    assert _whiles(f, np.ones(3)) == 1
    np.testing.assert_allclose(srcjax.jit(f)(np.ones(3)), np.full(3, 2.0), rtol=1e-9)
