"""Error-path hygiene (lst22): what srcjax refuses is said at the user's line, briefly; what is not the user's fault
(MemoryError, a bug of srcjax's own) is never turned into a refusal of the user's program."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.primitives.registry import PRIMITIVES


@contextmanager
def _raising(name: str, exc: BaseException) -> Iterator[None]:
    """The primitive ``name``'s NumPy function raising ``exc`` (its records are frozen: set and restored)."""
    prim = PRIMITIVES[name]
    fn = prim.fn

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc

    object.__setattr__(prim, "fn", boom)
    try:
        yield
    finally:
        object.__setattr__(prim, "fn", fn)


def _static_tanh(x):
    c = np.tanh(2.0)  # (all static: NumPy evaluates it while compiling)
    return x * c


def test_memory_error_in_static_evaluation_is_not_a_refusal() -> None:
    # was: StaticValueError "np.tanh(): MemoryError: ..." at the user's line, as if the program were wrong
    with _raising("tanh", MemoryError("no memory")), pytest.raises(MemoryError):
        srcjax.jit(_static_tanh)(np.ones(2))


def test_a_bug_in_static_evaluation_is_an_internal_error() -> None:
    # was: StaticValueError (a refusal of the user's program) for srcjax's own AssertionError
    with _raising("tanh", AssertionError("a bug")), pytest.raises(srcjax.TranspileError) as info:
        srcjax.jit(_static_tanh)(np.ones(2))
    assert type(info.value).__name__ == "InternalError", info.value
    assert "this is a bug in srcjax" in str(info.value)


def test_numpy_refusing_static_inputs_is_still_the_users_error() -> None:
    with _raising("tanh", ValueError("bad input")), pytest.raises(srcjax.TranspileError) as info:
        srcjax.jit(_static_tanh)(np.ones(2))
    assert type(info.value).__name__ == "StaticValueError"
    assert "ValueError: bad input" in str(info.value)
    assert "c = np.tanh(2.0)" in str(info.value)


# -- a transformation chosen by a conditional expression inside compiled code (item 5) --------------------------


def _cube(x):
    return np.sum(x ** 3)


def _sines(x):
    return np.sum(np.sin(x))


def _chosen_by_local_flag(x):
    flag = True
    g = srcjax.grad(_cube) if flag else srcjax.grad(_sines)
    return g(x)


def _chosen_by_argument(x, flag):
    g = srcjax.grad(_cube) if flag else srcjax.grad(_sines)
    return g(x)


def _chosen_in_an_if(x, flag):
    if flag:
        g = srcjax.jacfwd(_cube)
    else:
        g = srcjax.jacfwd(_sines)
    return g(x) * 2.0


def _function_chosen_then_transformed(x):
    g = srcjax.grad(_cube if x.shape[0] > 1 else _sines)
    return g(x)


def _chosen_by_data(x):
    g = srcjax.grad(_cube) if np.sum(x) > 0 else srcjax.grad(_sines)
    return g(x)


def test_transformation_chosen_by_a_static_flag_runs() -> None:
    # was: ArgumentError "cannot transform NormalizedFunction(name='_cube', ...)" with 40 kB of its tree
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    x = np.array([0.5, -1.5, 2.0])
    cube = np.asarray(jax.grad(lambda v: jnp.sum(v ** 3))(x))
    sines = np.asarray(jax.grad(lambda v: jnp.sum(jnp.sin(v)))(x))
    np.testing.assert_allclose(np.asarray(srcjax.jit(_chosen_by_local_flag)(x)), cube, rtol=1e-12)
    jitted = srcjax.jit(_chosen_by_argument, static_argnums=1)
    np.testing.assert_allclose(np.asarray(jitted(x, True)), cube, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jitted(x, False)), sines, rtol=1e-12)
    in_if = srcjax.jit(_chosen_in_an_if, static_argnums=1)
    np.testing.assert_allclose(np.asarray(in_if(x, False)), 2.0 * np.cos(x), rtol=1e-12)
    text = srcjax.source(jitted)
    assert "select = _cube_grad" in text and "select = _sines_grad" in text, text


@pytest.mark.parametrize("fn, snippet", [
    (_function_chosen_then_transformed, "srcjax.grad(_cube if x.shape[0] > 1 else _sines)"),
    (_chosen_by_data, "srcjax.grad(_cube) if np.sum(x) > 0 else srcjax.grad(_sines)"),
])
def test_transformation_of_a_chosen_function_is_a_short_refusal(fn, snippet) -> None:
    with pytest.raises(srcjax.TranspileError) as info:
        srcjax.jit(fn)(np.ones(3))
    text = str(info.value)
    assert len(text) < 800 and "NormalizedFunction" not in text and "FunctionDef" not in text, text[:2000]
    assert snippet in text and __file__ in text.splitlines()[0], text


# -- a dict or list changed through one name while a second name made by `m = d` holds it (item 4) --------------


def _dict_changed_while_second_name_reads(x):
    d = {"a": x}
    m = d
    d["b"] = x * 2.0
    return np.sum(m["a"] * m["b"])


def _dict_changed_through_second_name(x):
    d = dict(a=x)
    m = d
    m["a"] = x * 3.0
    return np.sum(d["a"])


def _list_changed_while_second_name_reads(x):
    lst = [x, x * 2.0]
    m = lst
    lst[0] = x * 3.0
    return np.sum(m[0])


def _line_of(fn, text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("transform", [srcjax.jit, srcjax.grad])
@pytest.mark.parametrize("fn, kind, changed, made, change", [
    (_dict_changed_while_second_name_reads, "dict", "d", "m = d", 'd["b"] = x * 2.0'),
    (_dict_changed_through_second_name, "dict", "m", "m = d", 'm["a"] = x * 3.0'),
    (_list_changed_while_second_name_reads, "list", "lst", "m = lst", "lst[0] = x * 3.0"),
])
def test_container_changed_through_a_second_name_names_it(transform, fn, kind, changed, made, change) -> None:
    # was: "assigning into 'd' would also change 'm' in NumPy (one is a view of the other) ... append .copy()"
    # (NumPy's words for arrays), and for `m["a"] = v`: "changes `m`'s array in place ... `d = dict(a=x)` does
    # not copy"
    with pytest.raises(srcjax.TranspileError) as info:
        transform(fn)(np.ones(2))
    text = str(info.value)
    first = text.splitlines()[0]
    assert f"{__file__}:{_line_of(fn, change)}:" in first, text
    assert f"the {kind} {changed!r}" in first and f"`{made}`, line {_line_of(fn, made)}" in first, text
    assert "view" not in text and ".copy()" not in text, text
