"""Float64 accumulators carried by a loop that updates float32 parameters (ML-From-Scratch's Adam: `m =
np.zeros(np.shape(w))` beside float32 `w`): NumPy makes `w` float64 after one step; srcjax peels the first
iteration of a loop with a static bound (a literal, a Python int argument or default, a shape) and gives NumPy's
dtype and values (hunt14 listed adam_steps and adagrad_rmsprop_steps at float32 as refused "is float32 and
float64 on different paths"). A dtype that depends on the data (an `if` on data that makes the value float64 on
one path only: nesterov_quadratic's `if not w_updt.any(): w_updt = np.zeros(...)`) stays a located refusal.
Oracles: the function run by NumPy (values and dtype), finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax
from srcjax.core import TranspileError


def adam(w, X, y, lr=0.1, b1=0.9, b2=0.999, steps=3):
    m = np.zeros(np.shape(w))
    v = np.zeros(np.shape(w))
    for _ in range(steps):
        g = 2 * X.T.dot(X.dot(w) - y) / len(y)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        w = w - lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + 1e-8)
    return np.sum((X.dot(w) - y) ** 2)


def momentum_by_shape(w):
    state = {"m": np.zeros(np.shape(w)), "w": w}
    for _ in range(w.shape[0]):
        state["m"] = 0.9 * state["m"] + state["w"]
        state["w"] = state["w"] - 0.1 * state["m"]
    return np.sum(state["w"] ** 2)


def reset_on_data(w):
    u = np.zeros_like(w)
    for _ in range(2):
        if not u.any():
            u = np.zeros(np.shape(w))
        u = 0.5 * u + w
        w = w - 0.1 * u
    return np.sum(w ** 2)


W = np.linspace(0.1, 0.5, 3).astype(np.float32)
X = np.linspace(-1.0, 1.0, 12).reshape(4, 3).astype(np.float32)
Y = np.linspace(0.0, 1.0, 4).astype(np.float32)


def _fd(f, x, *rest, eps=1e-6):
    x = x.astype(np.float64)
    return np.array([(f(x + eps * e, *rest) - f(x - eps * e, *rest)) / (2 * eps) for e in np.eye(len(x))])


@pytest.mark.parametrize("f,args", [(adam, (W, X, Y)), (momentum_by_shape, (W,))], ids=["adam", "by_shape"])
def test_float64_accumulator_of_float32_parameters(f, args):
    want = f(*args)
    assert want.dtype == np.float64
    got = srcjax.jit(f)(*args)
    assert got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)  # (float32 sums in another order: ulps)
    np.testing.assert_allclose(np.asarray(srcjax.grad(f)(*args)), _fd(f, *args), rtol=1e-5, atol=1e-7)
    batch = np.stack([args[0], 2 * args[0]])
    vm = srcjax.vmap(f, in_axes=(0,) + (None,) * (len(args) - 1))(batch, *args[1:])
    np.testing.assert_allclose(np.asarray(vm), [f(b, *args[1:]) for b in batch], rtol=1e-6)
    assert vm.dtype == np.float64


def test_a_dtype_that_depends_on_the_data_is_refused_at_the_branch():
    with pytest.raises(TranspileError) as e:
        srcjax.jit(reset_on_data)(W)
    text = str(e.value)
    assert "is float32 and float64 on different paths" in text and "if not u.any():" in text
    assert "test_float32_accumulators.py" in text
