"""Transformed functions die with their users: srcjax's caches keep nothing a user dropped.

Every public transformation of fresh closures (``srcjax.jit(make_loss(k))`` in a loop), then ``del``
and ``gc.collect()``: the functions, their ``Compiled`` objects and their executables are freed, while
the same live function transformed twice still hits its caches."""

from __future__ import annotations

import functools
import gc
import types
import weakref
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax import api, autodiff, lifetimes
from srcjax.runtime import get_backend

X = np.linspace(0.1, 0.9, 3)


@pytest.fixture(autouse=True, scope="module")
def _older_objects_frozen() -> None:
    """One full collection, then the objects alive before this module are left out of the collections its
    tests make (``gc.freeze``): each ``gc.collect()`` below scans what the tests made, not the whole test
    session's heap (0.5 s of CPU a collection after two test files, more in a long xdist worker). Nothing a
    test makes is frozen; garbage from before was collected first, so it cannot keep a test's objects alive."""
    gc.collect()
    gc.freeze()  # (left frozen after the module: objects alive now; tests/conftest.py freezes the same way)


def _make(k: float) -> Any:
    def f(x):
        return np.sum(np.sin(x) * k)
    return f


def _make_vec(k: float) -> Any:
    def g(x):
        return np.sin(x) * k
    return g


def _make_custom_vjp(k: float) -> Any:
    @srcjax.custom_vjp
    def h(x):
        return np.sin(x) * k

    def h_fwd(x):
        return np.sin(x) * k, x

    def h_bwd(x, g):
        return (g * np.cos(x) * k,)

    h.defvjp(h_fwd, h_bwd)

    def loss(x):
        return np.sum(h(x))
    return loss, h


def _make_custom_jvp(k: float) -> Any:
    @srcjax.custom_jvp
    def h(x):
        return np.sin(x) * k

    @h.defjvp
    def h_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return np.sin(x) * k, np.cos(x) * k * t

    def loss(x):
        return np.sum(h(x))
    return loss, h


def _use_all(k: float, refs: list[Any]) -> None:
    """Every public transformation of fresh functions; weak references to what must die after."""
    f, g = _make(k), _make_vec(k)
    srcjax.jit(f)(X)
    srcjax.compile(g)(X)
    np.testing.assert_allclose(srcjax.grad(f)(X), np.cos(X) * k, rtol=1e-6)
    srcjax.value_and_grad(f)(X)
    srcjax.jvp(g, (X,), (X,))
    _, back = srcjax.vjp(g, X)
    back(X)
    srcjax.jacfwd(g)(X)
    srcjax.jacrev(g)(X)
    srcjax.hessian(f)(X)
    srcjax.vmap(g)(np.ones((2, 3)))
    srcjax.jit(srcjax.vmap(g))(np.ones((2, 3)))
    srcjax.source(srcjax.grad(f))
    srcjax.source(g)
    srcjax.eval_shape(f, X)
    srcjax.lower(f, X)
    srcjax.jit(f, device="numpy")(X)
    loss, h = _make_custom_vjp(k)
    np.testing.assert_allclose(srcjax.grad(loss)(X), np.cos(X) * k, rtol=1e-6)
    srcjax.jit(h)(X)
    loss2, h2 = _make_custom_jvp(k)
    srcjax.grad(loss2)(X)
    srcjax.jvp(h2, (X,), (X,))
    part = functools.partial(_make_vec(k))
    np.testing.assert_allclose(srcjax.jit(part)(X), np.sin(X) * k)
    srcjax.grad(functools.partial(f))(X)
    # the objects reused for a new wrapper of the same function (reuse.py): kept on it, dying with it
    refs += [weakref.ref(o) for o in (srcjax.jit(f), srcjax.compile(g), srcjax.vmap(g), srcjax.jacrev(g),
                                      srcjax.hessian(f), srcjax.jit(srcjax.vmap(g)), srcjax.jit(h), srcjax.jit(part),
                                      api._as_compiled(part).fn)]
    for fn in (f, g, loss, h, loss2, h2, part):
        refs.append(weakref.ref(fn))
    for fn in (f, g, loss, loss2):
        refs.append(weakref.ref(api._as_compiled(fn)))
    refs.append(weakref.ref(autodiff._wrap(f, "grad", 0, False)))


def test_transformed_functions_die_with_their_users() -> None:
    refs: list[Any] = []
    _use_all(0.5, [])  # (srcjax's own programs, compiled once per process: uploads, zeros)
    from srcjax import packed_calls

    packed_calls.wait()  # (an earlier test's packed program compiling on its thread would be counted after)
    gc.collect()
    before = len(get_backend().client.live_executables())
    modules = _generated_registrations()
    for k in range(3):
        _use_all(float(k + 1), refs)
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"{len(alive)} of {len(refs)} still alive: {alive[:4]}"
    assert len(get_backend().client.live_executables()) <= before  # (their executables freed with them)
    after = _generated_registrations()  # (their generated modules' text and line tables too)
    assert all(n <= m for n, m in zip(after, modules)), (after, modules)


def _generated_registrations() -> tuple[int, int, int]:
    import linecache

    from srcjax.frontend import locations, read

    return (sum(1 for k in linecache.cache if k.startswith("<srcjax.") and "#" in k), len(locations._TABLES),
            len(read._ENDS))


def test_same_function_still_hits() -> None:
    f = _make(2.0)
    assert api._as_compiled(f) is api._as_compiled(f)
    d1 = autodiff.derivative_function(f, "grad")
    assert autodiff.derivative_function(f, "grad") is d1
    w1 = autodiff._wrap(f, "grad", 0, False)
    assert autodiff._wrap(f, "grad", 0, False) is w1
    g = _make_vec(2.0)
    from srcjax.vmap import batched_function

    b1 = batched_function(g, 0, 0, None)
    assert batched_function(g, 0, 0, None) is b1


def test_wrapper_never_gets_the_wrapped_functions_program() -> None:
    f = _make(3.0)
    np.testing.assert_allclose(srcjax.jit(f)(X), np.sum(np.sin(X)) * 3.0)
    srcjax.grad(f)(X)

    @functools.wraps(f)  # (copies f's __dict__: its cache slot with it)
    def wrapper(x):
        return f(x) * 2.0

    assert api._as_compiled(wrapper).fn is wrapper
    np.testing.assert_allclose(srcjax.jit(wrapper)(X), np.sum(np.sin(X)) * 6.0, rtol=1e-6)
    np.testing.assert_allclose(srcjax.grad(wrapper)(X), np.cos(X) * 6.0, rtol=1e-6)
    np.testing.assert_allclose(srcjax.grad(f)(X), np.cos(X) * 3.0, rtol=1e-6)


def test_recycled_ids_never_serve_a_dead_functions_entry() -> None:
    """Functions of one code object over fresh globals dicts (whose ids the allocator reuses)."""
    import linecache

    text = "def f(x):\n    return np.sum(np.sin(x) * k)\n"
    filename = "/lifetimes-test/recycled.py"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    code = next(c for c in compile(text, filename, "exec").co_consts if isinstance(c, types.CodeType))
    for k in range(5):  # (each round compiles a gradient and collects: kept short)
        fn = types.FunctionType(code, {"np": np, "k": float(k), "__name__": __name__})
        got = srcjax.grad(fn)(X)
        np.testing.assert_allclose(got, np.cos(X) * k, rtol=1e-6, atol=1e-12)
        del fn
        gc.collect()


def test_untaggable_callables_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Callables srcjax must not write to (a user's objects, bound methods) are kept in a bounded LRU."""
    monkeypatch.setattr(lifetimes, "KEPT", 4)
    cache: lifetimes.PerFunction[int] = lifetimes.PerFunction("test")

    class Model:
        def __call__(self, x: Any) -> Any:
            return x

    models = [Model() for _ in range(10)]
    for i, m in enumerate(models):
        cache.set(m, None, i)
        assert "__srcjax_cache__" not in vars(m)
    assert len(cache) == 4
    assert cache.get(models[-1]) == 9 and cache.get(models[0]) is None
    ref = weakref.ref(models[0])
    del models, m
    gc.collect()
    assert ref() is None


def test_cache_slot_pickles_and_copies_empty() -> None:
    import copy
    import pickle

    f = _make(1.0)
    srcjax.grad(f)(X)
    slot = vars(f)["__srcjax_cache__"]
    assert slot.entries
    assert not copy.copy(slot).entries and not copy.deepcopy(slot).entries
    assert not pickle.loads(pickle.dumps(slot)).entries


K = 3.0


def _module_f(x):
    return np.sum(np.sin(x) * K)


@functools.wraps(_module_f)
def _module_wrapper(x):
    return _module_f(x) * 2.0


def test_wraps_wrapper_is_read_from_its_own_source() -> None:
    """A ``functools.wraps`` wrapper has ``__wrapped__``, which ``inspect.getsourcelines`` follows: srcjax
    read the wrapped function's text (``_module_f``) as the wrapper's, a silent wrong answer (half)."""
    np.testing.assert_allclose(srcjax.jit(_module_wrapper)(X), _module_wrapper(X), rtol=1e-12)
    np.testing.assert_allclose(srcjax.grad(_module_wrapper)(X), np.cos(X) * 2 * K, rtol=1e-12)
    assert "* 2.0" in srcjax.source(_module_wrapper)
