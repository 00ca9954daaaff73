"""Integer-array indexing (gather) and its transposes (scatter-add, scatter): against NumPy and jax.

Oracles: NumPy on the same source, the generated derivative source run by NumPy, jax.grad of
the jax.numpy twin, and finite differences. Random keys by hypothesis: index arrays of random
(broadcastable) shapes mixed with integers, slices (with steps) and ..., adjacent or not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import srcjax
from tests import written
from tests.fd import central_fd

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from tests.twins import JAX  # noqa: E402

jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(5)


def take(x, idx):
    return x[idx]


def pairs(x, r, c):
    return x[r, c]


def cols(x, idx):
    return x[:, idx]


def split(x, i, j):
    return x[i, :, j]


def sliced(x, idx):
    return x[::-1, idx, 1:]


def constant_list(x):
    return x[[0, 2, -1]]


def xent(logits, labels):
    m = np.max(logits, axis=1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(labels.shape[0]), labels])


def embed(table, tokens, w):
    e = table[tokens]
    return np.sum(np.tanh(e @ w) ** 2)


def weighted(x, idx):
    return np.sum(x[idx] ** 2 * np.arange(idx.shape[0]))


def scatter_set(x, idx, v):
    y = x * 1.0
    y[idx] = v
    return np.sum(y ** 2)


def scatter_add(x, idx, v):
    y = x * 1.0
    y[idx] += v * v
    return np.sum(np.sin(y))


def twin(fn):
    import inspect

    ns = {"np": jnp}
    src = inspect.getsource(fn)
    if fn in (scatter_set, scatter_add):  # jax arrays are immutable: the same update with .at
        src = src.replace("y[idx] = v", "y = y.at[idx].set(v)").replace("y[idx] += v * v",
                                                                      "y = y.at[idx].set(y[idx] + v * v)")
    exec(src, ns)
    return ns[fn.__name__]


X = np.arange(20.0).reshape(4, 5)
X3 = np.arange(60.0).reshape(3, 4, 5)
FORWARD = [
    (take, (X, np.array([0, 2, 2, -1]))),
    (take, (X, np.array([[3, 0], [1, 1]]))),
    (pairs, (X, np.array([0, 2, 3]), np.array([4, 0, -2]))),
    (pairs, (X, np.array([[0], [3]]), np.array([1, 2, 4]))),
    (cols, (X, np.array([4, 0, 4]))),
    (split, (X3, np.array([0, 2]), np.array([[1], [4]]))),
    (sliced, (X3, np.array([3, 0]))),
    (constant_list, (X,)),
]


@pytest.mark.parametrize("fn,args", FORWARD, ids=lambda v: getattr(v, "__name__", None) or "")
def test_gather_matches_numpy(fn, args):
    out = srcjax.compile(fn)(*args)
    ref = fn(*args)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("fn,args", [
    (weighted, (rng.normal(size=6), np.array([0, 2, 2, 5, -1]))),
    (xent, (rng.normal(size=(5, 4)), np.array([0, 3, 3, 1, 2]))),
    (embed, (rng.normal(size=(7, 3)), np.array([[1, 4, 1], [6, 0, 1]]), rng.normal(size=(3, 2)))),
    (cols, (rng.normal(size=(3, 4)), np.array([1, 1, 3]))),
    (scatter_set, (rng.normal(size=6), np.array([4, 0]), rng.normal(size=2))),
    (scatter_add, (rng.normal(size=6), np.array([4, 0, -1]), rng.normal(size=3))),  # distinct indices
], ids=lambda v: getattr(v, "__name__", None) or "")
def test_gradients_match_jax_numpy_and_fd(fn, args):
    if fn is cols:
        def scalar_cols(x, idx):
            return np.sum(np.sin(x[:, idx]))
        fn = scalar_cols
        ref_fn = lambda x, i: jnp.sum(jnp.sin(x[:, i]))  # noqa: E731
    else:
        ref_fn = twin(fn)
    floats = tuple(i for i, a in enumerate(args) if a.dtype.kind == "f")
    g = srcjax.grad(fn, argnums=floats)
    ours = g(*args)
    ref = JAX.grad(ref_fn, argnums=floats)(*args)
    numpy_run = srcjax.numpy_function(g)(*args)
    for k, i in enumerate(floats):
        np.testing.assert_allclose(ours[k], ref[k], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(numpy_run[k], ref[k], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ours[k], central_fd(fn, args, i), rtol=1e-5, atol=1e-6)


def test_jvp_of_gather():
    x, idx = rng.normal(size=(4, 3)), np.array([3, 3, 0])
    t = rng.normal(size=(4, 3))

    def f(x, idx):
        return np.sin(x[idx, 1:])

    out, dt = srcjax.jvp(f, (x, idx), (t, None))
    jout, jdt = jax.jvp(lambda x: jnp.sin(x[idx, 1:]), (x,), (t,))
    np.testing.assert_allclose(out, jout, rtol=1e-12)
    np.testing.assert_allclose(dt, jdt, rtol=1e-12)


def test_gather_inside_a_loop_and_float32():
    def f(table, tokens):
        acc = np.zeros(table.shape[1], dtype=table.dtype)
        for t in range(tokens.shape[0]):
            acc = np.tanh(acc + np.sum(table[tokens[t]], axis=0))
        return np.sum(acc ** 2)

    table = rng.normal(size=(6, 3)).astype(np.float32)
    tokens = rng.integers(0, 6, size=(5, 2))
    g = srcjax.grad(f)(table, tokens)
    assert g.dtype == np.float32
    ns = {"np": jnp}
    exec("def f(table, tokens):\n    acc = np.zeros(table.shape[1], dtype=table.dtype)\n"
         "    for t in range(tokens.shape[0]):\n        acc = np.tanh(acc + np.sum(table[tokens[t]], axis=0))\n"
         "    return np.sum(acc ** 2)\n", ns)
    np.testing.assert_allclose(g, JAX.grad(ns["f"])(table, tokens), rtol=2e-5, atol=1e-6)


def test_dynamic_out_of_bounds_indices_clamp_like_jax():
    x = np.arange(5.0)
    np.testing.assert_array_equal(srcjax.compile(take)(x, np.array([7, -9])), jnp.asarray(x)[np.array([7, -9])])


@pytest.mark.parametrize("src,err,match", [
    ("def f(x, m):\n    return x[m]\n", srcjax.ShapeError, "boolean mask"),
    ("def f(x, i):\n    return x[i, None]\n", srcjax.ShapeError, "None"),
    ("def f(x, i):\n    return x[i.astype(np.float64)]\n", srcjax.DTypeError, "integer type"),
    ("def f(x, i):\n    return x[i, np.arange(3)]\n", srcjax.ShapeError, "broadcast"),
    ("def f(x, i):\n    return x[[0, 9]]\n", srcjax.ShapeError, "out of bounds"),
])
def test_errors_point_at_the_index(tmp_path, src, err, match):
    import importlib.util

    path = tmp_path / f"m_{abs(hash(src))}.py"
    path.write_text("import numpy as np\n\n\n" + src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x, i = np.zeros((4, 3)), np.array([0, 1])
    arg = (x > 0) if "m)" in src else i
    with pytest.raises(err, match=match) as e:
        srcjax.compile(mod.f)(x, arg)
    assert f"{path}:5:" in str(e.value)


@st.composite
def keys(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    n_idx = draw(st.integers(1, len(shape)))
    batch = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    entries = []
    for axis, d in enumerate(shape):
        kind = draw(st.sampled_from(["array", "slice", "int"])) if axis < n_idx else "slice"
        if kind == "array":
            sub = batch[draw(st.integers(0, len(batch))):]  # a suffix: broadcastable with the others
            entries.append(np.asarray(draw(st.lists(st.integers(-d, d - 1), min_size=int(np.prod(sub, dtype=int)),
                                                    max_size=int(np.prod(sub, dtype=int))))).reshape(sub))
        elif kind == "int":
            entries.append(draw(st.integers(-d, d - 1)))
        else:
            start, stop = draw(st.sampled_from([None, 0, 1, -1])), draw(st.sampled_from([None, -1, d]))
            entries.append(slice(start, stop, draw(st.sampled_from([None, 1, 2, -1]))))
    if not any(isinstance(e, np.ndarray) for e in entries):
        entries[0] = np.asarray([0, shape[0] - 1])
    return shape, entries


@settings(max_examples=written.example_count(12, scale=5), deadline=None, derandomize=not written.THOROUGH,
          suppress_health_check=[HealthCheck.too_slow])
@given(keys())
def test_random_keys_forward_and_gradient(case):
    shape, entries = case
    x = rng.normal(size=shape)
    arrays = [e for e in entries if isinstance(e, np.ndarray)]
    # the index arrays are dynamic arguments; the rest of the key is written into the source
    parts, k = [], 0
    for e in entries:
        if isinstance(e, np.ndarray):
            parts.append(f"i{k}")
            k += 1
        else:
            parts.append(repr(e))
    names = ", ".join(f"i{j}" for j in range(len(arrays)))
    src = f"def f(x, {names}):\n    return np.sum(np.sin(x[{', '.join(parts)}]) * 1.5)\n"
    ns: dict = {"np": np}
    import linecache

    fname = f"<gather-case-{abs(hash(src))}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    exec(compile(src, fname, "exec"), ns)
    f = ns["f"]
    key = tuple(entries)
    np.testing.assert_allclose(srcjax.compile(f)(x, *arrays), np.sum(np.sin(x[key]) * 1.5), rtol=1e-12)
    g = srcjax.grad(f)(x, *arrays)
    jns: dict = {"np": jnp}
    exec(compile(src, fname, "exec"), jns)
    np.testing.assert_allclose(g, JAX.grad(jns["f"])(x, *arrays), rtol=1e-10, atol=1e-12)


def list_with_a_runtime_int(x, i):
    return np.sum(np.sin(x[[i, 0, i]]) * np.arange(3.0))


def test_a_list_index_holding_a_runtime_int():
    x = np.linspace(0.0, 1.0, 5)
    for i in (3, -2):
        np.testing.assert_allclose(srcjax.compile(list_with_a_runtime_int)(x, i), list_with_a_runtime_int(x, i),
                                   rtol=1e-12)
    ref = JAX.grad(lambda x, i: jnp.sum(jnp.sin(x[jnp.array([i, 0, i])]) * jnp.arange(3.0)))(x, 3)
    np.testing.assert_allclose(srcjax.grad(list_with_a_runtime_int)(x, 3), ref, rtol=1e-12)
