"""``srcjax.vmap`` objects called through jaxlib's C++ dispatcher (``cpp_calls.py``; issues #15 and #18):
after a first call, calls with device arrays, NumPy arrays, both, and containers are served without
entering srcjax's Python path, with the results of a Python loop over the examples; a call of other
mapped sizes or another structure comes back to the Python path and raises the same located error as
with the dispatcher off; a NumPy argument written to right after a call does not change its result; a
vmap whose in_axes follow what a call passes (``in_axes=0`` of a function with defaults) keeps its own
path."""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (the dispatcher starts once ml_dtypes is imported: cpp_budget.BUDGET)
import numpy as np
import pytest

import srcjax
from tests.python_path import Counting


def newton(a):
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def affine(p, x):
    return np.tanh(x @ p["w"] + p["b"]), np.sum(x * x)


def scaled(x, s=2.0):
    return x * s


@pytest.fixture(params=["on", "off"])
def dispatch(request, monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1" if request.param == "on" else "0")
    return request.param


def _loop(f, *args):
    outs = [f(*a) for a in zip(*args)]
    return np.stack(outs)


def test_device_and_numpy_calls_are_served_in_cpp(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 100.0, 16)
    v = srcjax.vmap(newton)
    want = np.sqrt(a)
    np.testing.assert_allclose(np.asarray(v(a)), want, rtol=1e-12)
    assert v._cpp is not None  # (a vmap gets the dispatcher: it had its own __call__ before)
    d = srcjax.device_put(a)
    for _ in range(3):  # (the NumPy calls settle on their shortcut; with jax imported and x64 off, `wide`
        v(d), v(a), v(a)  # in front takes a call more to learn that the program runs asynchronously)
    seen = Counting(v)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(v(d)), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(v(a)), want, rtol=1e-12)
    assert seen.n == 0


@pytest.mark.parametrize("on_device", [False, True])
def test_containers_and_unmapped_parameters(dispatch, on_device):
    rng = np.random.default_rng(1)
    p = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = rng.standard_normal((5, 3))
    v = srcjax.vmap(affine, in_axes=(None, 0))
    put = srcjax.device_put if on_device else (lambda t: t)
    pp = srcjax.tree_util.tree_map(put, p)
    for _ in range(3):
        h, s = v(pp, put(xs))
        np.testing.assert_allclose(np.asarray(h), np.tanh(xs @ p["w"] + p["b"]), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(s), np.sum(xs * xs, axis=1), rtol=1e-12)
    mixed = v(pp, xs)  # (parameters on the device or not, a NumPy batch)
    np.testing.assert_allclose(np.asarray(mixed[0]), np.tanh(xs @ p["w"] + p["b"]), rtol=1e-12)


def _error(f, *args, **kwargs):
    with pytest.raises(srcjax.TranspileError) as e:
        f(*args, **kwargs)
    return str(e.value)


def test_wrong_sizes_and_structures_after_records_give_the_same_errors(monkeypatch):
    rng = np.random.default_rng(2)
    p = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    xs = rng.standard_normal((5, 3))
    messages = {}
    for mode in ("0", "1"):
        monkeypatch.setenv("SRCJAX_CPP_DISPATCH", mode)
        v = srcjax.vmap(affine, in_axes=({"w": 1, "b": 0}, 0))
        pb = {"w": np.stack([p["w"]] * 5, axis=1), "b": np.stack([p["b"]] * 5)}
        for _ in range(3):  # (records for device and NumPy calls where the dispatcher is on)
            v(pb, xs)
            v(srcjax.tree_util.tree_map(srcjax.device_put, pb), srcjax.device_put(xs))
        if mode == "1":
            assert v._cpp is not None
        bad = {"w": pb["w"], "b": pb["b"][:4]}
        messages[mode] = (
            _error(v, bad, xs),
            _error(v, srcjax.tree_util.tree_map(srcjax.device_put, bad), srcjax.device_put(xs)),
            _error(v, pb, xs[:4]),
            _error(v, {"w": pb["w"]}, xs),  # (another structure)
        )
        assert "different sizes" in messages[mode][0] and "has 4" in messages[mode][0]
        np.testing.assert_allclose(np.asarray(v(pb, xs)[1]), np.sum(xs * xs, axis=1), rtol=1e-12)  # still served
    assert messages["0"] == messages["1"]


def test_numpy_arguments_written_after_the_call(monkeypatch):
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", "1")
    v = srcjax.vmap(newton)
    a = np.linspace(1.0, 50.0, 4096)
    want = np.sqrt(a)
    for _ in range(6):
        b = a.copy()
        out = v(b)
        b[...] = 7.0
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)


def test_in_axes_following_what_a_call_passes(dispatch):
    v = srcjax.vmap(scaled)  # (in_axes=0 of a function with a default: the default is not mapped)
    x = np.arange(6.0).reshape(3, 2)
    s = np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(v(x)), x * 2.0)
        np.testing.assert_allclose(np.asarray(v(x, s)), _loop(scaled, x, s))
        np.testing.assert_allclose(np.asarray(v(srcjax.device_put(x))), x * 2.0)
    with pytest.raises(srcjax.TranspileError):
        v(x, 3.0)  # (a passed parameter is mapped: a number has no axis 0)


def test_nested_vmap_and_vmap_of_grad(dispatch):
    rng = np.random.default_rng(3)
    p, q = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))

    def dist(x, y):
        return np.sqrt(np.sum((x - y) ** 2))

    pair = srcjax.vmap(srcjax.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))
    want = np.sqrt(((p[:, None, :] - q[None, :, :]) ** 2).sum(-1))
    g = srcjax.vmap(srcjax.grad(lambda x: np.sum(np.sin(x) * x)))
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(pair(p, q)), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(pair(srcjax.device_put(p), q)), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g(p)), np.cos(p) * p + np.sin(p), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(pair(p[:2], q)), want[:2], rtol=1e-12)  # (a new size: compiled anew)


def product(a, b):
    return a * b


def test_keyword_calls_on_both_paths(monkeypatch):
    a, b = np.arange(4.0), np.arange(4.0) + 1.0
    messages = {}
    for mode in ("0", "1"):
        monkeypatch.setenv("SRCJAX_CPP_DISPATCH", mode)
        v = srcjax.vmap(product, in_axes=(0, 0))
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(v(a, b=b)), a * b)
            np.testing.assert_array_equal(np.asarray(v(b=b, a=a)), a * b)
        # (sizes of arguments passed by keyword are checked too: the C++ side's records take them as positional)
        messages[mode] = (_error(v, a, b=b[:3]), _error(v, b=b[:3], a=a))
        assert all("different sizes" in m and "a has 4, b has 3" in m for m in messages[mode])
    assert messages["0"] == messages["1"]
