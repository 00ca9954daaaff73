"""``srcjax.random``: JAX's keys and draws, bit for bit against ``jax.random``, the same eagerly, compiled
and in the NumPy run of the generated source; their statistics (moments, Kolmogorov-Smirnov); keys as
values under ``vmap``, loops and ``grad``; located errors."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import srcjax
import srcjax.random as sr

from . import optimized_xla

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)
jr = jax.random

KEY = sr.key(0)
JKEY = jr.PRNGKey(0)


def three_ways(fn, *args):
    """``fn(*args)`` eagerly (NumPy), compiled (XLA) and as generated source run by NumPy."""
    compiled = srcjax.jit(fn)
    return fn(*args), compiled(*args), srcjax.compile(fn, device="numpy")(*args)


def same_bits(*arrays):
    first = np.asarray(arrays[0])
    for a in arrays[1:]:
        a = np.asarray(a)
        assert a.dtype == first.dtype and a.shape == first.shape
        np.testing.assert_array_equal(a.view(np.uint8), first.view(np.uint8))


def ulps(a, b):
    """The largest distance in units in the last place between two float arrays of one dtype."""
    a, b = np.asarray(a), np.asarray(b)
    i = np.dtype(f"i{a.dtype.itemsize}")
    return int(np.max(np.abs(a.view(i).astype(np.int64) - b.view(i).astype(np.int64))))


# -- bit for bit against jax.random -----------------------------------------------------------------

def exact_draws(key):
    """Every draw whose value is an integer operation of the bits (and a uniform in [0, 1))."""
    k1, k2 = sr.split(key)
    lg = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    return (sr.split(key, 5), sr.split(key, (2, 3)), sr.fold_in(key, 7), sr.bits(k1, (3, 5)),
            sr.bits(k2, (4,), np.uint64), sr.uniform(k1, (1000,), np.float32), sr.uniform(k2, (2, 500)),
            sr.bernoulli(k1, 0.3, (1000,)), sr.randint(k2, (1000,), -3, 17, np.int32), sr.randint(k1, (7,), 0, 2 ** 40),
            sr.categorical(k2, lg, shape=(500,)), sr.permutation(k1, 10), sr.choice(k2, 10, (5,)),
            sr.choice(k1, 10, (5,), replace=False), sr.choice(k2, 4, (50,), p=np.array([0.1, 0.2, 0.3, 0.4])))


def jax_exact_draws(key):
    k1, k2 = jr.split(key)
    lg = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    return (jr.split(key, 5), jr.split(key, (2, 3)), jr.fold_in(key, 7), jr.bits(k1, (3, 5), jnp.uint32),
            jr.bits(k2, (4,), jnp.uint64), jr.uniform(k1, (1000,), jnp.float32), jr.uniform(k2, (2, 500)),
            jr.bernoulli(k1, 0.3, (1000,)), jr.randint(k2, (1000,), -3, 17, jnp.int32), jr.randint(k1, (7,), 0, 2 ** 40),
            jr.categorical(k2, lg, shape=(500,)), jr.permutation(k1, 10), jr.choice(k2, 10, (5,)),
            jr.choice(k1, 10, (5,), replace=False), jr.choice(k2, 4, (50,), p=jnp.array([0.1, 0.2, 0.3, 0.4])))


@pytest.mark.parametrize("seed", [0, 42, 2 ** 40 + 5])
def test_keys_match_jax(seed):
    same_bits(sr.key(seed), sr.PRNGKey(seed), np.asarray(jr.PRNGKey(seed)))
    # a seed that is data (a 64-bit integer, and a 32-bit one: high word 0)
    same_bits(srcjax.jit(sr.key)(np.int64(seed)), np.asarray(jr.PRNGKey(seed)))
    same_bits(srcjax.jit(sr.key)(np.int32(seed % 2 ** 31)), np.asarray(jr.PRNGKey(np.int32(seed % 2 ** 31))))


def test_draws_match_jax_bit_for_bit_eager_compiled_and_generated_source():
    want = [np.asarray(w) for w in jax_exact_draws(JKEY)]
    for got in three_ways(exact_draws, KEY):
        for g, w in zip(got, want):
            same_bits(np.asarray(g).astype(w.dtype), w)  # (jax returns bools and ints in its own dtypes)
    eager = exact_draws(KEY)
    assert eager[0].dtype == np.uint32 and eager[7].dtype == np.bool_ and eager[9].dtype == np.int64


def check_normal_and_ranged_uniform_match_jax(dtype):
    """Compiled: jax's numbers bit for bit (the same XLA program). NumPy (eagerly or running the generated
    source) uses the same bits and polynomial, but XLA fuses multiply-adds (FMA) and has its own log1p:
    a few ulp (float64's 23-term polynomial: up to 16 eps relative)."""
    def draws(key):
        return (sr.normal(key, (20000,), dtype), sr.uniform(key, (1000,), dtype, -2.0, 3.0),
                sr.truncated_normal(key, -1.0, 2.0, (1000,), dtype))

    want = [np.asarray(jr.normal(JKEY, (20000,), dtype)), np.asarray(jr.uniform(JKEY, (1000,), dtype, -2.0, 3.0)),
            np.asarray(jr.truncated_normal(JKEY, -1.0, 2.0, (1000,), dtype))]
    eager, compiled, generated = three_ways(draws, KEY)
    for e, c, g, w in zip(eager, compiled, generated, want):
        same_bits(c, w)
        same_bits(e, g)
        eps = np.finfo(dtype).eps  # (a few ulp of the values; of the range's ends for uniform near 0)
        np.testing.assert_allclose(e, w, rtol=(4 if dtype == np.float32 else 32) * eps, atol=16 * eps)


def test_normal_and_ranged_uniform_match_jax():
    """float32 and float64, bit for bit with jax where XLA optimizes as it does by default. The tests compile
    at LLVM optimization level 0 (tests/conftest.py), where XLA's machine code for jax's and srcjax's
    programs differs in the last ulp of some values: then the check runs in a process of its own at XLA's
    default level."""
    if optimized_xla.optimized():
        for dtype in (np.float32, np.float64):
            check_normal_and_ranged_uniform_match_jax(dtype)
        return
    optimized_xla.run_optimized("tests.test_random", "check_normal_and_ranged_uniform_match_jax(np.float32); "
                                "check_normal_and_ranged_uniform_match_jax(np.float64)")


def test_same_key_same_numbers_different_keys_different_numbers():
    f = srcjax.jit(lambda k: sr.normal(k, (4,)))
    same_bits(f(KEY), f(KEY), f(sr.key(0)))
    assert not np.any(np.asarray(f(KEY)) == np.asarray(f(sr.key(1))))
    assert not np.any(sr.split(KEY)[0] == sr.split(KEY)[1])


# -- statistics ----------------------------------------------------------------------------------

def ks_statistic(sample, cdf):
    """The Kolmogorov-Smirnov distance between a sample's empirical distribution and ``cdf``."""
    x = np.sort(np.asarray(sample, dtype=np.float64))
    n = x.size
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def normal_cdf(x):
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


N = 20000
KS_BOUND = 1.95 / math.sqrt(N)  # the 0.1% critical value (one fixed seed: deterministic, with room)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_and_normal_statistics(dtype):
    k1, k2 = sr.split(sr.key(7))
    u = sr.uniform(k1, (N,), dtype, -1.0, 3.0)
    assert u.dtype == dtype and u.min() >= -1 and u.max() < 3
    assert abs(u.mean() - 1.0) < 4 * 4 / math.sqrt(12 * N) and abs(u.var() - 16 / 12) < 0.05
    assert ks_statistic(u, lambda x: (x + 1) / 4) < KS_BOUND
    z = sr.normal(k2, (N,), dtype)
    assert z.dtype == dtype
    assert abs(z.mean()) < 4 / math.sqrt(N) and abs(z.var() - 1) < 0.05
    assert abs(np.mean(z ** 3)) < 0.1 and abs(np.mean(z ** 4) - 3) < 0.2
    assert ks_statistic(z, normal_cdf) < KS_BOUND
    t = sr.truncated_normal(sr.fold_in(k2, 1), -0.5, 1.5, (N,), dtype)
    assert t.dtype == dtype and t.min() >= -0.5 and t.max() <= 1.5
    lo, hi = normal_cdf(np.array([-0.5, 1.5]))
    assert ks_statistic(t, lambda x: (normal_cdf(x) - lo) / (hi - lo)) < KS_BOUND


def test_discrete_statistics():
    ks = sr.split(sr.key(3), 5)
    b = sr.bernoulli(ks[0], 0.9, (N,))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.9) < 4 * math.sqrt(0.09 / N)
    r = sr.randint(ks[1], (N,), -2, 3)
    counts = np.bincount(r + 2, minlength=5)
    assert r.min() == -2 and r.max() == 2 and np.all(np.abs(counts / N - 0.2) < 4 * math.sqrt(0.16 / N))
    p = np.array([0.1, 0.2, 0.3, 0.4])
    c = sr.categorical(ks[2], np.log(p), shape=(N,))
    assert np.all(np.abs(np.bincount(c, minlength=4) / N - p) < 4 * np.sqrt(p * (1 - p) / N))
    ch = sr.choice(ks[3], 4, (N,), p=p)
    assert np.all(np.abs(np.bincount(ch, minlength=4) / N - p) < 4 * np.sqrt(p * (1 - p) / N))
    perm = sr.permutation(ks[4], 50)
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    rows = sr.permutation(ks[4], np.arange(12.0).reshape(4, 3))
    assert sorted(rows[:, 0].tolist()) == [0, 3, 6, 9] and np.all(rows[:, 1] == rows[:, 0] + 1)


def test_split_keys_are_independent():
    keys = sr.split(sr.key(11), 8)
    z = np.stack([sr.normal(k, (N,)) for k in keys])
    c = np.corrcoef(z)
    assert np.max(np.abs(c - np.eye(8))) < 4 / math.sqrt(N)
    # fold_in(key, i) is split's i-th key (JAX's partitionable mode)
    same_bits(sr.fold_in(sr.key(11), 5), keys[5])


# -- keys are values: vmap, loops, returned, data --------------------------------------------------

def test_vmap_over_split_keys():
    keys = sr.split(KEY, 8)
    got = srcjax.vmap(lambda k: srcjax.random.normal(k, (3,)))(keys)
    want = np.asarray(jax.vmap(lambda k: jr.normal(k, (3,)))(jr.split(JKEY, 8)))
    same_bits(got, want)
    same_bits(got, np.stack([sr.normal(k, (3,)) for k in keys]))
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.vmap(lambda k: sr.normal(k, (3,))))(keys)),
                               np.asarray(got), rtol=1e-14)
    both = srcjax.vmap(lambda k, x: x + sr.uniform(k, x.shape) + sr.randint(k, (), 0, 5), in_axes=(0, None))(
        keys, np.ones(2))
    assert np.asarray(both).shape == (8, 2)
    # vmap over the data folded in (step numbers), and per-example gradients with per-example keys
    same_bits(srcjax.vmap(lambda i: sr.fold_in(KEY, i))(np.arange(5)),
              np.asarray(jax.vmap(lambda i: jr.fold_in(JKEY, i))(jnp.arange(5))))
    w = np.array([0.5, 1.0, 2.0])
    per_example = srcjax.vmap(srcjax.grad(noisy_loss), in_axes=(None, 0))(w, keys[:4])
    want = jax.vmap(jax.grad(j_noisy_loss), in_axes=(None, 0))(w, jr.split(JKEY, 8)[:4])
    np.testing.assert_allclose(np.asarray(per_example), np.asarray(want), rtol=1e-12)


def noisy_loss(w, key):
    return np.sum(np.tanh(sr.normal(key, (3,)) * w))


def j_noisy_loss(w, key):
    return jnp.sum(jnp.tanh(jr.normal(key, (3,)) * w))


def walk(key, x, steps):
    """A loop over split keys that returns its last key (a pass-the-key-along random walk)."""
    for _ in range(3):
        key, sub = sr.split(key)
        x = x + 0.1 * sr.normal(sub, x.shape)
    for i, k in enumerate(sr.split(key, 2)):
        x = x + sr.uniform(sr.fold_in(k, steps + i), x.shape)
    return x, key


def test_keys_pass_through_loops_and_are_returned():
    x = np.zeros(4)
    eager, compiled, generated = three_ways(walk, KEY, x, np.int64(3))
    same_bits(eager[1], compiled[1], generated[1])
    same_bits(eager[0], generated[0])
    assert ulps(eager[0], compiled[0]) <= 4
    jk = JKEY
    jx = jnp.zeros(4)
    for _ in range(3):
        jk, sub = jr.split(jk)
        jx = jx + 0.1 * jr.normal(sub, (4,))
    for i, k in enumerate(jr.split(jk, 2)):
        jx = jx + jr.uniform(jr.fold_in(k, 3 + i), (4,))
    same_bits(compiled[1], np.asarray(jk))
    same_bits(compiled[0], np.asarray(jx))


def diffuse(key, x):
    """A 100-step loop (kept rolled: its counter is data) folding the step into the key."""
    for i in range(100):
        x = x + 0.01 * sr.normal(sr.fold_in(key, i), x.shape)
    return x


def until_big(key, x):
    """A while on data that carries its key."""
    while np.sum(x) < 5.0:
        key, sub = sr.split(key)
        x = x + sr.uniform(sub, x.shape)
    return x, key


def test_keys_in_rolled_loops_and_whiles_on_data():
    x = np.zeros(3)
    jx = jnp.zeros(3)
    for i in range(100):
        jx = jx + 0.01 * jr.normal(jr.fold_in(JKEY, i), (3,))
    np.testing.assert_allclose(np.asarray(srcjax.jit(diffuse)(KEY, x)), np.asarray(jx), rtol=0, atol=1e-15)
    eager, compiled, generated = three_ways(until_big, KEY, x)
    same_bits(eager[1], compiled[1], generated[1])
    same_bits(eager[0], compiled[0], generated[0])


# -- derivatives: reparameterized samples -------------------------------------------------------------

def reparam(mu, sigma, a, b, key):
    z = sr.normal(key, (50,)) * sigma + mu
    u = sr.uniform(sr.fold_in(key, 1), (50,), minval=a, maxval=b)
    t = sr.truncated_normal(sr.fold_in(key, 2), a, b, (50,))  # (differentiable in its bounds, as jax's)
    return np.sum(np.tanh(z) * u) + np.sum(t * t)


def j_reparam(mu, sigma, a, b, key):
    z = jr.normal(key, (50,)) * sigma + mu
    u = jr.uniform(jr.fold_in(key, 1), (50,), minval=a, maxval=b)
    t = jr.truncated_normal(jr.fold_in(key, 2), a, b, (50,))
    return jnp.sum(jnp.tanh(z) * u) + jnp.sum(t * t)


def test_grad_through_normal_and_uniform_reparameterization():
    args = (0.3, 1.5, -1.0, 2.0)
    g = srcjax.grad(reparam, argnums=(0, 1, 2, 3))(*args, KEY)
    want = jax.grad(j_reparam, argnums=(0, 1, 2, 3))(*args, JKEY)
    np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(want, dtype=float), rtol=1e-10)
    h = 1e-6
    for i in range(4):
        up, down = list(args), list(args)
        up[i] += h
        down[i] -= h
        fd = (reparam(*up, KEY) - reparam(*down, KEY)) / (2 * h)
        assert float(g[i]) == pytest.approx(fd, rel=1e-6)


def dropout_loss(w, x, y, key):
    h = np.tanh(x @ w)
    keep = srcjax.random.bernoulli(key, 0.9, h.shape)
    h = np.where(keep, h / 0.9, 0.0)
    return np.mean((h - y) ** 2)


def j_dropout_loss(w, x, y, key):
    h = jnp.tanh(x @ w)
    keep = jr.bernoulli(key, 0.9, h.shape)
    h = jnp.where(keep, h / 0.9, 0.0)
    return jnp.mean((h - y) ** 2)


@srcjax.jit
def dropout_step(w, x, y, key):
    key, sub = srcjax.random.split(key)
    loss, g = srcjax.value_and_grad(dropout_loss)(w, x, y, sub)
    return w - 0.1 * g, loss, key


def test_dropout_training_step():
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=(3, 4)), rng.normal(size=(16, 3)), rng.normal(size=(16, 4))
    key, jkey = KEY, JKEY
    for _ in range(3):
        w2, loss, key = dropout_step(w, x, y, key)
        jkey, sub = jr.split(jkey)
        jloss, jg = jax.value_and_grad(j_dropout_loss)(w, x, y, sub)
        assert float(loss) == pytest.approx(float(jloss), rel=1e-12)
        np.testing.assert_allclose(np.asarray(w2), w - 0.1 * np.asarray(jg), rtol=1e-12)
        same_bits(key, np.asarray(jkey))
        w = np.asarray(w2)
    via_numpy = srcjax.compile(dropout_step.fn, device="numpy")(w, x, y, key)
    np.testing.assert_allclose(np.asarray(via_numpy[0]), np.asarray(dropout_step(w, x, y, key)[0]), rtol=1e-12)


# -- readable source, located errors ------------------------------------------------------------------

def noisy(x, key):
    return x + 0.1 * srcjax.random.normal(key, x.shape)


def test_generated_source_calls_the_library_function():
    text = srcjax.source(srcjax.jit(noisy))
    assert "from srcjax.random import normal" in text
    assert "normal(key, x.shape)" in text.replace("np.shape(x)", "x.shape")
    assert "threefry" not in text and len(text.splitlines()) < 15


def float_key(x):
    return srcjax.random.normal(x, (3,))


def data_shape(key, x):
    n = np.sum(x > 0)
    return srcjax.random.uniform(key, (n,))


def int_dtype(key):
    return srcjax.random.normal(key, (3,), np.int32)


def numpy_draw(x):
    return x + np.random.normal(size=x.shape)


@pytest.mark.parametrize("fn, args, words", [
    (float_key, (np.ones(2),), ["key must be a uint32[2]", "float64", "srcjax.random.key(0)"]),
    (float_key, (np.zeros(3, np.uint32),), ["uint32[2]", "(3,)"]),
    (data_shape, (KEY, np.ones(3)), ["shape must be a tuple of Python ints", "np.where"]),
    (int_dtype, (KEY,), ["np.float32 or np.float64", "int32"]),
])
def test_bad_arguments_are_located_errors(fn, args, words):
    with pytest.raises(sr.RandomArgumentError) as ei:
        srcjax.jit(fn)(*args)
    e = ei.value
    assert isinstance(e, srcjax.TranspileError)
    lines, first = inspect.getsourcelines(fn)
    assert e.span is not None and e.span.filename == inspect.getsourcefile(fn)
    assert e.span.line == first + next(i for i, t in enumerate(lines) if "srcjax.random." in t)
    for w in words:
        assert w in e.message
    with pytest.raises(sr.RandomArgumentError):  # eagerly too
        fn(*args)


def test_numpy_random_in_compiled_code_names_srcjax_random():
    with pytest.raises(srcjax.OpaqueCallError) as ei:
        srcjax.jit(numpy_draw)(np.ones(3))
    assert "srcjax.random.normal(sub, shape)" in ei.value.hint and "srcjax.random.key(0)" in ei.value.hint
