"""Regression tests of the classes tests/hunt30_programs.py found: an object of the user's dataclass taken from a
list in a loop and called (``for layer in layers: h = layer(h)``: a zero derivative, silently), a dict of settings
left at its default (refused: "a Python number inside this dict ..."; JAX traces no default), and the refusal of a
call through a local name holding a function chosen while tracing (its hint)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import srcjax


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray

    def __call__(self, x):  # noqa: ANN001, ANN204 - (the user's style)
        return x @ self.W + self.b


X = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
W1 = np.arange(12.0).reshape(3, 4) / 10
W2 = np.arange(8.0).reshape(4, 2) / 10 - 0.3


def layers_in_a_loop(x, W1, W2):  # noqa: ANN001, ANN201, N803
    layers = [Dense(W1, np.zeros(4)), Dense(W2, np.ones(2))]
    h = x
    for i, layer in enumerate(layers):
        h = layer(h)
        if i == 0:
            h = np.tanh(h)
    return np.sum(h**2)


def layers_reversed(x, W1, W2):  # noqa: ANN001, ANN201, N803
    h = x @ W1
    for layer in reversed([Dense(W2.T, np.zeros(4)), Dense(W2, np.ones(2))]):
        h = np.tanh(layer(h))
    return np.sum(h**2)


def layers_appended(x, W1, W2):  # noqa: ANN001, ANN201, N803
    layers = []
    layers.append(Dense(W1, np.zeros(4)))
    h = x
    for layer in layers:
        h = layer(h)
    return np.sum(h**2)


def _fd(f, args, k, eps=1e-6):  # noqa: ANN001, ANN202 - central differences of argument k
    a = [np.array(v, dtype=float) for v in args]
    g = np.zeros_like(a[k])
    for i in np.ndindex(*a[k].shape):
        hi = [v.copy() for v in a]
        lo = [v.copy() for v in a]
        hi[k][i] += eps
        lo[k][i] -= eps
        g[i] = (f(*hi) - f(*lo)) / (2 * eps)
    return g


@pytest.mark.parametrize("fn", [layers_in_a_loop, layers_reversed])
def test_dataclass_objects_from_a_list_called_in_a_loop_are_differentiated(fn) -> None:  # noqa: ANN001
    # was: grad w.r.t. the weights held by the objects was zeros (the call `layer(h)` an opaque static call)
    g1, g2 = srcjax.grad(fn, argnums=(1, 2))(X, W1, W2)
    np.testing.assert_allclose(np.asarray(g1), _fd(fn, (X, W1, W2), 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(g2), _fd(fn, (X, W1, W2), 2), rtol=1e-6, atol=1e-8)
    jr = srcjax.jacrev(fn, argnums=1)(X, W1, W2)
    np.testing.assert_allclose(np.asarray(jr), _fd(fn, (X, W1, W2), 1), rtol=1e-6, atol=1e-8)


def test_a_call_of_a_differentiated_object_not_followed_is_refused_not_zero() -> None:
    # `layers` built by append: the object's class is not known while normalizing; its call is refused at the
    # user's line (was: a zero gradient)
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(layers_appended, argnums=1)(X, W1, W2)
    assert "test_hunt30_fixes.py" in str(e.value) and "h = layer(h)" in str(e.value)


def config_loss(w, X, y, cfg={"loss": "huber", "delta": 1.0, "l1": True}):  # noqa: ANN001, ANN201, B006, N803
    r = X @ w - y
    if cfg["loss"] == "huber":
        d = cfg["delta"]
        base = np.mean(np.where(np.abs(r) < d, 0.5 * r**2, d * np.abs(r) - 0.5 * d**2))
    else:
        base = np.mean(r**2)
    if cfg["l1"]:
        base = base + 0.01 * np.sum(np.abs(w))
    return base


def test_a_dict_of_settings_left_at_its_default_is_a_constant() -> None:
    # was: ArgumentError "a Python number inside this dict is used where a value known at transpile time is needed"
    w, y = np.array([0.3, -0.2, 0.5]), np.array([1.0, -2.0])
    want = config_loss(w, X, y)
    np.testing.assert_allclose(float(srcjax.jit(config_loss)(w, X, y)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(config_loss)(w, X, y)), _fd(config_loss, (w, X, y), 0),
                               rtol=1e-6, atol=1e-8)
    # passed by the caller, the dict's numbers are run-time values: `if cfg["l1"]:` is refused (jax: a traced bool)
    with pytest.raises(srcjax.TranspileError):
        srcjax.jit(config_loss)(w, X, y, {"loss": "huber", "delta": 1.0, "l1": True})


ACTS = {"tanh": np.tanh, "sin": np.sin}


def chosen_activation(w, cfg={"act": "tanh"}):  # noqa: ANN001, ANN201, B006
    act = ACTS[cfg["act"]]
    return np.sum(act(w))


def test_a_function_chosen_while_tracing_is_refused_with_what_to_write() -> None:
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(chosen_activation)(np.array([0.5, -1.0]))
    msg = str(e.value)
    assert "test_hunt30_fixes.py" in msg and "return np.sum(act(w))" in msg
    assert "taken from a container or chosen by an `if` while tracing" in msg and "np.tanh(z)" in msg


class Hyper(NamedTuple):
    lam: float = 0.1
    power: int = 2


def hyper_default(w, hp=Hyper()):  # noqa: ANN001, ANN201, B008
    scale = 2.0 if isinstance(hp, Hyper) else 1.0
    return scale * (np.sum(w**hp.power) + hp.lam * np.sum(np.abs(w)))


def test_a_namedtuple_default_keeps_its_class_in_derivative_code() -> None:
    # was: the derivative's `def` line wrote the default as the tuple literal `hp=(0.1, 2)`: "'tuple' object has
    # no attribute 'power'" under grad (jit ran), and `isinstance(hp, Hyper)` would have been False
    w = np.array([1.0, -2.0])
    np.testing.assert_allclose(float(srcjax.jit(hyper_default)(w)), hyper_default(w), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(hyper_default)(w)), 2.0 * (2 * w + 0.1 * np.sign(w)),
                               rtol=1e-12)
    assert "hp=Hyper()" in srcjax.source(srcjax.grad(hyper_default))
