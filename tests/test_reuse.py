"""``srcjax.jit(f)(x)`` in a loop reuses ``f``'s compiled object (issue #18, ``srcjax/reuse.py``).

Every public transformation of the same function with the same options gives the object made
before (its executables with it), while what the program read is unchanged: a module global
rebound, or a global array changed in place, gives a new object that reads them again (as a new
wrapper did before); a kept object keeps what it compiled (docs/limitations.md)."""

from __future__ import annotations

import functools
import sys
import types

import numpy as np
import pytest

import srcjax
from srcjax import reuse

X = np.linspace(0.1, 0.9, 3)
XS = np.ones((2, 3))
K = 2.0
TABLE = np.ones(3)
BIG = np.ones(reuse.MAX_BYTES // 8 + 1)
PAIR = (1.0, np.ones(3))


def loss(x):
    return np.sum(np.sin(x) * K)


def vec(x):
    return np.sin(x) * K


def with_table(x):
    return x + TABLE


def with_big(x):
    return x * BIG[:3]


def with_pair(x):
    return x * PAIR[0] + PAIR[1]


def scaled(x, n):
    return np.sum(x[:n])


def with_default(x, y=1.0):
    return x * y + TABLE


@srcjax.custom_vjp
def custom(x):
    return np.sin(x)


custom.defvjp(lambda x: (np.sin(x), x), lambda x, g: (g * np.cos(x),))


TRANSFORMATIONS = {
    "jit": lambda: srcjax.jit(loss),
    "compile": lambda: srcjax.compile(vec),
    "jit_static": lambda: srcjax.jit(scaled, static_argnums=1),
    "jit_static_list": lambda: srcjax.jit(scaled, static_argnums=[1]),
    "jit_numpy": lambda: srcjax.jit(vec, device="numpy"),
    "grad": lambda: srcjax.grad(loss),
    "value_and_grad": lambda: srcjax.value_and_grad(loss),
    "jacfwd": lambda: srcjax.jacfwd(vec),
    "jacrev": lambda: srcjax.jacrev(vec),
    "jacrev_tuple": lambda: srcjax.jacrev(scaled, argnums=(0,)),
    "hessian": lambda: srcjax.hessian(loss),
    "vmap": lambda: srcjax.vmap(vec),
    "vmap_axes": lambda: srcjax.vmap(scaled, in_axes=(0, None)),
    "jit_grad": lambda: srcjax.jit(srcjax.grad(loss)),
    "vmap_grad": lambda: srcjax.vmap(srcjax.grad(loss)),
    "jit_vmap": lambda: srcjax.jit(srcjax.vmap(vec)),
    "jit_custom_vjp": lambda: srcjax.jit(custom),
    "pmap": lambda: srcjax.pmap(vec, "i"),
}


@pytest.mark.parametrize("kind", sorted(TRANSFORMATIONS))
def test_a_new_wrapper_of_the_same_function_is_the_same_object(kind):
    make = TRANSFORMATIONS[kind]
    assert make() is make()


def test_other_options_other_objects():
    assert srcjax.jit(scaled, static_argnums=1) is not srcjax.jit(scaled)
    assert srcjax.jit(scaled, static_argnums=1) is srcjax.jit(scaled, static_argnums=(1,))
    assert srcjax.jit(scaled, static_argnums=True) is not srcjax.jit(scaled, static_argnums=1)  # (True == 1)
    assert srcjax.vmap(vec, in_axes=0) is not srcjax.vmap(vec, in_axes=1)
    assert srcjax.jacrev(vec) is not srcjax.jacfwd(vec)
    unhashable = {"x": None}  # (an unhashable option: a new object each time, still correct)
    assert srcjax.jit(vec, in_shardings=unhashable) is not srcjax.jit(vec, in_shardings=unhashable)


def test_loops_of_new_wrappers_compile_once(monkeypatch):
    """The case of issue #18: ``srcjax.jit(f)(x)`` in a loop specializes once (each call of a new wrapper
    used to specialize again: milliseconds)."""
    from srcjax.api import Compiled

    def calls():
        srcjax.jit(loss)(X)
        srcjax.vmap(vec)(XS)
        srcjax.jacrev(vec)(X)
        srcjax.jit(srcjax.grad(loss))(X)

    calls()
    specialized = []
    real = Compiled._specialize_sharded
    monkeypatch.setattr(Compiled, "_specialize_sharded", lambda self, values: specialized.append(self) or
                        real(self, values))
    for _ in range(20):
        calls()
    assert not specialized


def test_a_rebound_global_is_read_by_a_new_wrapper(monkeypatch):
    mod = sys.modules[__name__]
    monkeypatch.setattr(mod, "K", 2.0)
    srcjax.api.Compiled(loss)(X)  # (the level-2 cache holds this program now: a new object is served from it,
    kept = srcjax.jit(loss)  # without the front end noting what it reads: warm_cache.note_entry)
    np.testing.assert_allclose(kept(X), np.sum(np.sin(X)) * 2.0)
    monkeypatch.setattr(mod, "K", 3.0)
    np.testing.assert_allclose(srcjax.jit(loss)(X), np.sum(np.sin(X)) * 3.0)  # (a new wrapper: read again)
    np.testing.assert_allclose(kept(X), np.sum(np.sin(X)) * 2.0)  # (a kept object: compiled with 2.0)
    assert srcjax.jit(loss) is srcjax.jit(loss)  # (then reused again)


def test_a_vmap_called_without_its_defaults_checks_what_it_called():
    TABLE[:] = 1.0
    np.testing.assert_allclose(srcjax.vmap(with_default)(XS), XS + 1.0)  # (y left out: the vmap of (0, None))
    TABLE[:] = 7.0
    try:
        np.testing.assert_allclose(srcjax.vmap(with_default)(XS), XS + 7.0)
    finally:
        TABLE[:] = 1.0


def test_a_global_array_changed_in_place_is_read_by_a_new_wrapper():
    TABLE[:] = 1.0
    kept = srcjax.jit(with_table)
    np.testing.assert_allclose(kept(X), X + 1.0)
    TABLE[:] = 7.0
    try:
        np.testing.assert_allclose(srcjax.jit(with_table)(X), X + 7.0)
        np.testing.assert_allclose(srcjax.vmap(with_table)(XS), XS + 7.0)
        np.testing.assert_allclose(kept(X), X + 1.0)
    finally:
        TABLE[:] = 1.0


def test_a_container_global_changed_in_place_is_read_again():
    global PAIR
    np.testing.assert_allclose(srcjax.jit(with_pair)(X), X + 1.0)
    PAIR[1][:] = 5.0
    try:
        np.testing.assert_allclose(srcjax.jit(with_pair)(X), X + 5.0)
        PAIR = (2.0, PAIR[1])
        np.testing.assert_allclose(srcjax.jit(with_pair)(X), 2.0 * X + 5.0)
    finally:
        PAIR = (1.0, np.ones(3))


def test_reads_too_big_to_check_are_never_reused():
    first = srcjax.jit(with_big)
    np.testing.assert_allclose(first(X), X)
    assert srcjax.jit(with_big) is not first
    BIG[:3] = 2.0
    try:
        np.testing.assert_allclose(srcjax.jit(with_big)(X), 2.0 * X)
    finally:
        BIG[:3] = 1.0


def test_closures_keep_what_they_did():
    """A closure's values are read once per function (frontend/read.py): rebinding the cell after the
    first transformation does not change it, with or without reuse; an array in it changed in place
    is read again by a new wrapper."""
    table = np.ones(3)
    c = 1.0

    def f(x):
        return np.sin(x) * c + table

    np.testing.assert_allclose(srcjax.jit(f)(X), np.sin(X) + 1.0)
    table[:] = 4.0
    np.testing.assert_allclose(srcjax.jit(f)(X), np.sin(X) + 4.0)
    c = 10.0  # noqa: F841 - (the cell rebound: not read again, as before)
    np.testing.assert_allclose(srcjax.jit(f)(X), np.sin(X) + 4.0)


def test_a_redefined_function_is_a_new_function():
    def make(k):
        def f(x):
            return np.sum(x) * k
        return f

    assert srcjax.jit(make(2.0)) is not srcjax.jit(make(2.0))
    np.testing.assert_allclose(srcjax.jit(make(3.0))(X), np.sum(X) * 3.0)


def test_changed_defaults_are_read_again():
    def f(x, k=2.0):
        return x * k

    np.testing.assert_allclose(srcjax.jit(f)(X), X * 2.0)
    f.__defaults__ = (5.0,)
    np.testing.assert_allclose(srcjax.jit(f)(X), X * 5.0)


def test_new_code_is_read_again():
    def f(x):
        return x * 2.0

    def g(x):
        return x * 5.0

    np.testing.assert_allclose(srcjax.jit(f)(X), X * 2.0)
    f.__code__ = g.__code__
    np.testing.assert_allclose(srcjax.jit(f)(X), X * 5.0)


def test_static_values_pick_programs_of_one_object():
    j = srcjax.jit(scaled, static_argnums=1)
    assert float(srcjax.jit(scaled, static_argnums=1)(X, 2)) == pytest.approx(X[:2].sum())
    assert float(j(X, 3)) == pytest.approx(X.sum())


def test_fingerprints():
    assert reuse.fingerprint(1.0) is None and reuse.fingerprint(np) is None and reuse.fingerprint(loss) is None
    assert reuse.fingerprint((1.0, np.ones(2))) == reuse.fingerprint((1.0, np.ones(2)))
    assert reuse.fingerprint((1.0, np.ones(2))) != reuse.fingerprint((1, np.ones(2)))
    assert reuse.fingerprint([np.nan]) == reuse.fingerprint([np.nan])
    assert reuse.fingerprint(types.SimpleNamespace()) is reuse.UNCHECKABLE
    assert reuse.fingerprint(BIG) is reuse.UNCHECKABLE
    assert reuse.fingerprint(functools.partial(loss)) is None


def test_forget_makes_new_objects():
    first = srcjax.jit(vec)
    reuse.forget()
    assert srcjax.jit(vec) is not first
