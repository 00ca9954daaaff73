"""The cache-hit path of calls with container arguments (jaxlib's C++ pytree flattening, issue #18):
every call it serves gives what the full path gives, and anything it cannot key (strings, dataclasses,
functions, static arguments, new shapes or structures) takes the full path."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import srcjax
from srcjax.api import Compiled


class Pair(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


def loss(params, x, scale):
    h = x
    for p in params["layers"]:
        h = np.tanh(h @ p.w + p.b)
    return np.sum(h ** 2) * scale + np.sum(params["bias"])


def outputs(params, x):
    return {"z": x * 2.0, "a": (params["bias"], None, [x + 1.0])}, Pair(x, x * 3.0)


def _params(rng, width=3, n=2, kind=Pair):
    return {"layers": [kind(rng.standard_normal((width, width)), rng.standard_normal(width)) for _ in range(n)],
            "bias": rng.standard_normal(2)}


def _same(a, b):
    la, ta = srcjax.tree_util.tree_flatten(a)
    lb, tb = srcjax.tree_util.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-12)


@pytest.mark.parametrize("on_device", [False, True])
def test_repeated_calls_with_containers_match_numpy(on_device):
    rng = np.random.default_rng(0)
    f = srcjax.compile(loss)
    g = srcjax.value_and_grad(loss)
    for _ in range(4):
        params, x = _params(rng), rng.standard_normal((4, 3))
        args = (params, x, 0.5)
        if on_device:
            args = srcjax.tree_util.tree_map(srcjax.device_put, args)
        np.testing.assert_allclose(float(f(*args)), loss(params, x, 0.5), rtol=1e-12)
        value, grads = g(*args)
        np.testing.assert_allclose(float(value), loss(params, x, 0.5), rtol=1e-12)
        h = 1e-6
        bumped = srcjax.tree_util.tree_map(np.asarray, params)
        bumped["bias"] = bumped["bias"] + np.array([h, 0.0])
        np.testing.assert_allclose(float(np.asarray(grads["bias"])[0]),
                                   (loss(bumped, x, 0.5) - loss(params, x, 0.5)) / h, rtol=1e-5)
    assert len(f._tree_cache) == 1  # one structure and signature: one entry, served 3 times


def test_the_fast_path_serves_exactly_the_full_paths_results():
    rng = np.random.default_rng(1)
    params, x = _params(rng), rng.standard_normal((4, 3))
    g = srcjax.grad(loss)
    want = g(params, x, 0.5)  # full path (first call)
    assert g._tree_cache
    got = g(params, x, 0.5)  # fast path
    _same(got, want)
    assert isinstance(got["layers"][0], Pair)
    full = srcjax.grad(loss)
    full._tree_cache = _NeverHits()
    _same(full(params, x, 0.5), got)


class _NeverHits(dict):
    def get(self, key, default=None):
        return default

    def __setitem__(self, key, value):
        pass


def test_new_shapes_dtypes_structures_and_scalar_types_take_the_full_path():
    rng = np.random.default_rng(2)
    f = srcjax.compile(loss)
    params, x = _params(rng), rng.standard_normal((4, 3))
    f(params, x, 0.5)
    np.testing.assert_allclose(float(f(params, x[:2], 0.5)), loss(params, x[:2], 0.5), rtol=1e-12)
    p32 = srcjax.tree_util.tree_map(lambda a: a.astype(np.float32), params)
    assert f(p32, x.astype(np.float32), 0.5).dtype == np.float32
    p3 = _params(rng, n=3)
    np.testing.assert_allclose(float(f(p3, x, 0.5)), loss(p3, x, 0.5), rtol=1e-12)
    np.testing.assert_allclose(float(f(params, x, 2)), loss(params, x, 2), rtol=1e-12)
    assert len(f._tree_cache) == 5


def test_outputs_keep_their_containers():
    rng = np.random.default_rng(3)
    params, x = _params(rng), rng.standard_normal(3)
    f = srcjax.compile(outputs)
    for _ in range(2):
        d, pair = f(params, x)
        assert list(d) == ["a", "z"] and d["a"][1] is None and isinstance(d["a"][2], list)
        assert isinstance(pair, Pair)
        np.testing.assert_allclose(np.asarray(pair.b), x * 3.0)
        assert isinstance(pair.b, srcjax.Array)


def test_what_the_fast_path_cannot_key_still_works():
    rng = np.random.default_rng(4)
    params = _params(rng, kind=Layer)  # dataclasses: leaves to jaxlib's flattening, so the full path
    x = rng.standard_normal((4, 3))
    f = srcjax.compile(loss)
    for _ in range(2):
        np.testing.assert_allclose(float(f(params, x, 0.5)), loss(params, x, 0.5), rtol=1e-12)
    assert not f._tree_cache

    def act(p, x, name):
        return np.sum(np.tanh(x) if p["kind"] == name else x) + p["w"]

    g = srcjax.compile(act)
    for name in ("tanh", "id", "tanh"):
        p = {"kind": "tanh", "w": 1.0}
        want = (np.sum(np.tanh(x)) if name == "tanh" else np.sum(x)) + 1.0
        np.testing.assert_allclose(float(g(p, x, name)), want, rtol=1e-12)


def _with_defaults(x, eps=1e-3, scale=2):
    return x / np.sqrt(np.sum(x * x) + eps) * scale


def _shaped(x, n=3):
    return np.tile(x, n)


@pytest.mark.parametrize("dispatch", ["1", "0"])
@pytest.mark.parametrize("make", [srcjax.jit, srcjax.vmap, srcjax.grad])
def test_calls_leaving_out_defaults_take_the_cache_hit_path(make, dispatch, monkeypatch):
    # (Compiled._filled: the defaults filled in as binding does, then the cache-hit path: no binding)
    monkeypatch.setenv("SRCJAX_CPP_DISPATCH", dispatch)
    x = np.linspace(0.5, 2.0, 6).reshape(2, 3)
    if make is srcjax.grad:
        def loss(x, eps=1e-3, scale=2):
            return np.sum(_with_defaults(x, eps, scale))
        want = srcjax.grad(loss)(x, 1e-3, 2)  # (defaults passed: bound as given)
        h = 1e-6
        np.testing.assert_allclose(np.asarray(want)[0, 0], (loss(x + h * (np.arange(6) == 0).reshape(2, 3))
                                                            - loss(x)) / h, rtol=1e-4)
    elif make is srcjax.vmap:
        loss, want = _with_defaults, np.stack([_with_defaults(r) for r in x])
    else:
        loss, want = _with_defaults, _with_defaults(x)
    f = make(loss)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-12)
    binds = []
    real = Compiled._bind
    monkeypatch.setattr(Compiled, "_bind", lambda self, a, k: binds.append(a) or real(self, a, k))
    for _ in range(20):
        got = f(x)
    assert not binds  # (the first calls specialized; these were served without binding)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    assert type(got) is srcjax.Array
    # other dtypes and values still pick their programs
    assert f(x.astype(np.float32)).dtype == np.float32 and f(x).dtype == np.float64
    if make is not srcjax.vmap:  # (vmap maps a passed argument)
        np.testing.assert_allclose(np.asarray(f(x, 1e-3, 3)), want * 1.5, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-12)


def test_a_left_out_default_used_as_a_shape_stays_static():
    f = srcjax.jit(_shaped)
    x = np.arange(3.0)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x)), np.tile(x, 3))
    np.testing.assert_array_equal(np.asarray(f(x, 2)), np.tile(x, 2))
    np.testing.assert_array_equal(np.asarray(f(x)), np.tile(x, 3))
