"""``*args`` parameters (issue #15): ``def total(*xs)``, ``def f(x, *rest)``, called with 1-4 arrays, as the entry
function of jit/grad/vmap (one program per number of arguments; grad's argnums and vmap's in_axes count positions
as jax does) and as a helper called with ``*args``, or forwarding them (``g(*rest)``); against jax and NumPy
running the user's function."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def total(*xs):
    return sum(np.sum(x) for x in xs)


def weighted(x, *rest):
    s = np.sum(x ** 2)
    for k, r in enumerate(rest):
        s = s + (k + 1) * np.sum(np.sin(r) * x)
    return s


def sum_of_all(*xs):
    t = 0.0
    for x in xs:
        t = t + np.sum(x ** 2)
    return t


def caller(a, b):
    return sum_of_all(a, b, a * b)


def forwards(x, *rest):
    return sum_of_all(x, *rest) + total(*rest, x) + weighted(*(x, x))


def scaled(x, *rest, scale=2.0):
    return scale * np.sum(x * np.stack(rest))


def _twin(fn):
    return jax_twin(fn, helpers=[total, weighted, sum_of_all])


def _args(n: int, batch: bool = False) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    shape = (3, 4) if batch else (4,)
    return [rng.normal(size=shape) for _ in range(n)]


@pytest.mark.parametrize("fn,counts", [(total, (1, 2, 4)), (weighted, (1, 3)), (caller, (2,)), (forwards, (1, 3))])
def test_jit_grad_vmap_match_jax(fn, counts):
    twin = _twin(fn)
    for n in counts:
        args = _args(n)
        np.testing.assert_allclose(srcjax.jit(fn)(*args), fn(*args), rtol=1e-12)
        np.testing.assert_allclose(srcjax.jit(fn)(*args), jax.jit(twin)(*args), rtol=1e-12)
        nums = tuple(range(n))
        got = srcjax.grad(fn, argnums=nums)(*args)
        for g, r in zip(got, JAX.grad(twin, argnums=nums)(*args)):
            np.testing.assert_allclose(g, r, rtol=1e-10)
        bat = _args(n, batch=True)
        np.testing.assert_allclose(srcjax.vmap(fn)(*bat), JAX.vmap(twin)(*bat), rtol=1e-12)
        axes = (0,) + (None,) * (n - 1)
        mixed = [bat[0], *args[1:]]
        np.testing.assert_allclose(srcjax.vmap(fn, in_axes=axes)(*mixed), JAX.vmap(twin, in_axes=axes)(*mixed),
                                   rtol=1e-12)
        np.testing.assert_allclose(srcjax.vmap(srcjax.grad(fn, argnums=n - 1))(*bat),
                                   JAX.vmap(jax.grad(twin, argnums=n - 1))(*bat), rtol=1e-10)


def test_argnums_counts_positions():
    """argnums=2 of ``weighted(x, a, b)`` is ``b`` (the second of ``*rest``), as in jax."""
    args = _args(3)
    np.testing.assert_allclose(srcjax.grad(weighted, argnums=2)(*args), jax.grad(_twin(weighted), argnums=2)(*args),
                               rtol=1e-12)


def test_keyword_after_star():
    args = _args(3)
    twin = _twin(scaled)
    np.testing.assert_allclose(srcjax.jit(scaled)(*args, scale=0.5), twin(*args, scale=0.5), rtol=1e-12)
    np.testing.assert_allclose(srcjax.grad(scaled, argnums=1)(*args), jax.grad(twin, argnums=1)(*args), rtol=1e-12)


def test_source_per_count():
    x, y = _args(2)
    text = srcjax.source(srcjax.grad(total), x, y)
    assert "def total_grad(xs_0, xs_1):" in text and "xs = (xs_0, xs_1)" in text
    ns: dict = {}
    exec(compile(text, "<total_grad>", "exec"), ns)  # (the printed module runs by itself)
    np.testing.assert_allclose(ns["total_grad"](x, y), np.ones(4))
    with pytest.raises(srcjax.TranspileError, match=r"takes \*args") as e:
        srcjax.source(srcjax.grad(total))
    assert "test_star_args.py" in str(e.value)


def unpacked_local(a, b):
    args = (a, b)
    return sum_of_all(*args)


def unpacked_changed_local(a, b):
    args = [a]
    args.append(b)
    return sum_of_all(*args)


def test_star_call_of_a_local():
    """``f(*args)`` of a literal bound once and never changed: its items (tests/test_builtins_compose.py); a list
    changed after (its length not written in the function) is refused at the user's line."""
    a, b = _args(2)
    np.testing.assert_allclose(np.asarray(srcjax.jit(unpacked_local)(a, b)), unpacked_local(a, b))
    np.testing.assert_allclose(np.asarray(srcjax.grad(unpacked_local)(a, b)), 2 * a)
    with pytest.raises(srcjax.UnsupportedSyntaxError, match=r"\*-arguments in a call") as e:
        srcjax.jit(unpacked_changed_local)(a, b)
    assert "test_star_args.py" in str(e.value).splitlines()[0]


def summed(*xs):
    return sum(xs)


def two_counts(a, b, c):
    return np.sum(summed(a, b) * 2.0 + summed(a, b, c))


def two_counts_beside_a_local(a, b, c):
    summed_1 = a * 2.0
    return np.sum(summed(a, b) * summed_1 + summed(a, b, c))


@pytest.mark.parametrize("fn", [two_counts, two_counts_beside_a_local])
def test_copies_for_two_counts_are_named_apart_from_the_callers_names(fn):
    # (the copy for 3 arguments was `summed_1`, the name of the first call's temporary or of a local: "a HloValue
    # object is not callable")
    x = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x, x + 1, x * x)), fn(x, x + 1, x * x))
    want = jax.grad(jax_twin(fn, helpers=[summed]))(x, x + 1, x * x)
    np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(x, x + 1, x * x)), np.asarray(want))
