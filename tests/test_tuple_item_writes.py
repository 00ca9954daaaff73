"""Tuple assignments of items, rows and slices of the array they write (``y[0], y[1] = y[1], y[0]``), and the same
written out (``a = y[1]; b = y[0]; y[0] = a; y[1] = b``): frontend/alias_events.py, alias_decisions.py,
view_updates.py.

NumPy evaluates the values first; an item taken by integer indices is a number (a copy) where the array has as many
dimensions as indices (1-D ``y[0]``: bubble sort's swap), and a *view* where it has more (2-D ``y[0]``, a row). The
targets are then written in order, so a view read after an earlier target wrote into it holds what that write put
there: ``y[0], y[1] = y[1], y[0]`` of a 2-D ``y`` makes both rows ``y[1]``. srcjax's values are immutable, so it
runs the scalar case and refuses the view case at the user's line (which only the specialization knows: an
``in_place(y, y, alias=..., rank=...)`` check before the first write that a later value may see). Slices are views
whatever the rank (refused where a later value may see the write); lists of indices copy (run).
"""

from __future__ import annotations

import importlib.util
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from .written import examples

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

V1 = np.array([3.0, 1.0, 2.0, -0.5, 4.0])
V2 = np.arange(10.0).reshape(5, 2) * 0.5 - 1.0
V3 = np.arange(40.0).reshape(5, 2, 4) * 0.25


def _swap(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0], y[1] = y[1], y[0]
    return y


def _written_out(y):  # noqa: ANN001, ANN202
    y = y.copy()
    a = y[1]
    b = y[0]
    y[0] = a
    y[1] = b
    return y


def _rotated(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0], y[1], y[2] = y[1], y[2], y[0]
    return y


def _negative(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[-1], y[0] = y[0], y[-1]
    return y


def _apart(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0], y[1] = y[2], y[3]  # (no later value is a row an earlier target writes: NumPy's answer at any rank)
    return y


def _name_first(y):  # noqa: ANN001, ANN202
    y = y.copy()
    a, y[0] = y[0], 5.0  # (a 2-D y: NumPy's `a` is row 0, which the second target writes)
    return y * 2.0 + a


def _bubble(y):  # noqa: ANN001, ANN202
    y = y.copy()
    for i in range(3):
        y[i], y[i + 1] = y[i + 1], y[i]
    return y


def _by_index(y, i, j):  # noqa: ANN001, ANN202
    y = y.copy()
    y[i], y[j] = y[j], y[i]
    return y


def _two_indices(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0, 1], y[1, 0] = y[1, 0], y[0, 1]  # (numbers of a 2-D y, rows of a 3-D one)
    return y


def _chained_indices(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0][1], y[1][0] = y[1][0], y[0][1]  # (numbers of a 2-D y, rows of a 3-D one; was swapped there)
    return y


def _rotated_out(y):  # noqa: ANN001, ANN202
    y = y.copy()
    t = y[0]
    y[0] = y[1]
    y[1] = y[2]
    y[2] = t
    return y


def _other_row(y):  # noqa: ANN001, ANN202
    y = y.copy()
    r = y[0]
    y[1] = 7.0  # (other rows: NumPy's r is unchanged at any rank; was refused)
    return y + r


def _slices(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0:2], y[2:4] = y[2:4], y[0:2]  # (views at any rank: both halves y[2:4] in NumPy)
    return y


def _fancy(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[[0, 1]] = y[[1, 0]]  # (lists of indices copy: a swap at any rank)
    return y


def _copied(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y[0], y[1] = y[1].copy(), y[0].copy()
    return y


def _reversed_between(y):  # noqa: ANN001, ANN202
    y = y.copy()
    a, b = y[0], y[1]
    y = y[::-1]  # (a view: NumPy's y[4] is the old row 0, a's; by its index, another row)
    y[4] = 9.0
    return a * 1.0 + b


def _reversed_in_loop(y):  # noqa: ANN001, ANN202
    y = y.copy()
    a, b = y[0], y[1]
    for _ in range(2):
        y[4] = y[4] + 1.0  # (the second pass writes the old row 0 through the reversed view)
        y = y[::-1]
    return a * 1.0 + b


def _chained_in_lists(a, b):  # noqa: ANN001, ANN202
    xs = [a.copy(), b.copy()]
    xs[0][1], xs[1][0] = xs[1][0], xs[0][1]  # (items of 1-D arrays: numbers)
    return xs[0] + xs[1]


def test_chained_indices_into_a_lists_arrays_run() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(np.asarray(srcjax.jit(_chained_in_lists)(a, b)), _chained_in_lists(a, b))


def _listed(a, b):  # noqa: ANN001, ANN202
    xs = [a.copy(), b.copy()]
    xs[0][1], xs[1][0] = xs[1][0], xs[0][1]  # (rows of 2-D arrays: views; was run as a swap, a silent wrong answer)
    return xs[0] + 2.0 * xs[1]


def _one_array_listed(a, b):  # noqa: ANN001, ANN202
    xs = [a.copy(), b.copy()]
    xs[0][0], xs[0][1] = xs[0][1], xs[0][0]
    return xs[0] + 2.0 * xs[1]


def _in_a_dict(a, b):  # noqa: ANN001, ANN202
    d = {"w": a.copy(), "v": b.copy()}
    d["w"][0], d["v"][1] = d["v"][1], d["w"][0]
    return d["w"] + 2.0 * d["v"]


def _in_a_tuple(a, b):  # noqa: ANN001, ANN202
    pair = (a.copy(), b.copy())
    pair[1][0], pair[0][1] = pair[0][1], pair[1][0]
    return pair[0] + 2.0 * pair[1]


def _by_loop_index(a, b):  # noqa: ANN001, ANN202
    xs = [a.copy(), b.copy()]
    for i in range(2):
        xs[i][0], xs[i][1] = xs[i][1], xs[i][0]
    return xs[0] + 2.0 * xs[1]


def _by_loop_key(a, b):  # noqa: ANN001, ANN202
    d = {"w": a.copy(), "v": b.copy()}
    for k in ["w", "v"]:
        d[k][0], d[k][1] = d[k][1], d[k][0]
    return d["w"] + 2.0 * d["v"]


def _loop_variable(a, b):  # noqa: ANN001, ANN202
    out = []
    for x in [a, b]:
        x = x.copy()
        x[0], x[1] = x[1], x[0]
        out.append(x)
    return out[0] + 2.0 * out[1]


def _list_argument(xs):  # noqa: ANN001, ANN202
    xs = [x.copy() for x in xs]
    xs[0][1], xs[1][0] = xs[1][0], xs[0][1]
    return xs[0] + 2.0 * xs[1]


def _two_indices_listed(a, b):  # noqa: ANN001, ANN202
    xs = [a.copy(), b.copy()]
    xs[0][1, 2], xs[1][0, 1] = xs[1][0, 1], xs[0][1, 2]  # (numbers of 2-D arrays: run)
    return xs[0] + 2.0 * xs[1]


def _copied_listed(a, b):  # noqa: ANN001, ANN202
    xs = [a.copy(), b.copy()]
    xs[0][1], xs[1][0] = xs[1][0].copy(), xs[0][1].copy()  # (copies: run)
    return xs[0] + 2.0 * xs[1]


# (function of two arrays held in a container, the ranks of those arrays where NumPy's items are views)
HELD: list[tuple[Callable[..., Any], set[int]]] = [
    (_listed, {2}), (_one_array_listed, {2}), (_in_a_dict, {2}), (_in_a_tuple, {2}), (_by_loop_index, {2}),
    (_by_loop_key, {2}), (_loop_variable, {2}), (_two_indices_listed, set()), (_copied_listed, set())]
A1, B1 = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
A2, B2 = np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3) - 10.0


@pytest.mark.parametrize("fn,views", HELD, ids=[f.__name__.strip("_") for f, _ in HELD])
@pytest.mark.parametrize("ab", [(A1, B1), (A2, B2)], ids=["1d", "2d"])
def test_items_of_arrays_a_container_holds_agree_with_numpy_or_are_refused(
        fn: Callable[..., Any], views: set[int], ab: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = ab
    if fn is _two_indices_listed and a.ndim == 1:
        pytest.skip("NumPy's IndexError")
    want = fn(a, b)
    if a.ndim in views:
        for run in (lambda: srcjax.jit(fn)(a, b), lambda: srcjax.grad(lambda a, b: np.sum(fn(a, b)))(a, b),
                    lambda: srcjax.vmap(fn)(np.stack([a, a]), np.stack([b, b]))):
            with pytest.raises(srcjax.TranspileError) as e:
                run()
            assert "test_tuple_item_writes.py:" in str(e.value).splitlines()[0], str(e.value)
            assert "_srcjax_" not in str(e.value), str(e.value)
        return
    np.testing.assert_array_equal(np.asarray(srcjax.jit(fn)(a, b)), want)
    np.testing.assert_array_equal(np.asarray(srcjax.numpy_function(srcjax.jit(fn))(a, b)), want)
    w = np.arange(1.0, 1.0 + want.size).reshape(want.shape)
    grads = srcjax.grad(lambda a, b: np.sum(fn(a, b) * w), argnums=(0, 1))(a, b)
    fd = [np.zeros_like(a), np.zeros_like(b)]
    for k, x in enumerate((a, b)):  # (linear: one difference of each entry is exact)
        for i in np.ndindex(x.shape):
            e1 = np.zeros_like(x)
            e1[i] = 1.0
            shifted = (a + e1, b) if k == 0 else (a, b + e1)
            fd[k][i] = np.sum((fn(*shifted) - want) * w)
    for g, f in zip(grads, fd):
        np.testing.assert_allclose(np.asarray(g), f, rtol=1e-12, atol=1e-12)
    batched = np.asarray(srcjax.vmap(fn)(np.stack([a, a + 1.0]), np.stack([b, b - 1.0])))
    np.testing.assert_array_equal(batched, np.stack([fn(a, b), fn(a + 1.0, b - 1.0)]))


def test_a_list_argument_of_2d_arrays_is_refused_and_of_1d_runs() -> None:
    np.testing.assert_array_equal(np.asarray(srcjax.jit(_list_argument)([A1, B1])), _list_argument([A1, B1]))
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(_list_argument)([A2, B2])
    text = str(e.value)
    assert f"test_tuple_item_writes.py:{_line_of(_list_argument, 'xs[0][1], xs[1][0] =')}:" in text.splitlines()[0]
    assert "a list of 2-D arrays counts 3" in text and "xs[1][0].copy(), xs[0][1].copy()" in text, text


def _repeated_into_a_dict(y):  # noqa: ANN001, ANN202
    d = {"w": y.copy(), "v": y.copy() * 2.0}
    d["v"][[4, 4, 3]] = d["w"][[4, 2, 3]]  # (the write of y[4] is overwritten by that of y[2]: no derivative)
    return np.stack([d["w"], d["v"]]) * np.arange(1.0, 3.0)[:, None]


def _repeated_into_a_dict_loss(y):  # noqa: ANN001, ANN202
    return np.sum(_repeated_into_a_dict(y))


def test_grad_of_a_write_at_repeated_indices_into_a_dicts_array() -> None:
    x = np.arange(6.0) * 0.5 - 2.0
    want = [np.sum(_repeated_into_a_dict(x + e) - _repeated_into_a_dict(x)) for e in np.eye(6)]
    np.testing.assert_allclose(np.asarray(srcjax.grad(_repeated_into_a_dict_loss)(x)), want, rtol=1e-12)


def _swap_in(y, i, j):  # noqa: ANN001, ANN202
    y[i], y[j] = y[j], y[i]
    return y


def _helper_swap(y):  # noqa: ANN001, ANN202
    y = y.copy()
    y = _swap_in(y, 0, 2)
    return y


# (function, the ranks where NumPy's items are views a later write reaches: refused there, run elsewhere)
CASES: list[tuple[Callable[..., Any], set[int]]] = [
    (_swap, {2, 3}), (_written_out, {2, 3}), (_rotated, {2, 3}), (_negative, {2, 3}), (_apart, set()),
    (_name_first, {2, 3}), (_bubble, {2, 3}), (_two_indices, {3}), (_chained_indices, {3}), (_rotated_out, {2, 3}), (_other_row, set()),
    (_slices, {1, 2, 3}), (_fancy, set()), (_copied, set()), (_helper_swap, {2, 3}), (_reversed_between, {2, 3}),
    (_reversed_in_loop, {2, 3})]


def _line_of(fn: Callable[..., Any], text: str) -> int:
    lines, start = __import__("inspect").getsourcelines(fn)
    return start + next(k for k, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("fn,views", CASES, ids=[f.__name__.strip("_") for f, _ in CASES])
@pytest.mark.parametrize("x", [V1, V2, V3], ids=["1d", "2d", "3d"])
def test_it_agrees_with_numpy_or_is_refused_where_items_are_views(fn: Callable[..., Any], views: set[int],
                                                                   x: np.ndarray) -> None:
    if fn in (_two_indices, _chained_indices) and x.ndim == 1:
        pytest.skip("NumPy's IndexError")
    want = fn(x.copy())
    if x.ndim in views:
        with pytest.raises(srcjax.TranspileError) as e:
            srcjax.jit(fn)(x)
        assert "test_tuple_item_writes.py:" in str(e.value).splitlines()[0], str(e.value)
        return
    np.testing.assert_array_equal(np.asarray(srcjax.jit(fn)(x)), want)
    np.testing.assert_array_equal(np.asarray(srcjax.numpy_function(srcjax.jit(fn))(x.copy())), want)


def test_the_refusal_names_the_statement_and_what_to_write_instead() -> None:
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(_rotated)(V2)
    text = str(e.value)
    assert f"test_tuple_item_writes.py:{_line_of(_rotated, 'y[0], y[1], y[2] =')}:" in text.splitlines()[0], text
    assert "y[[0, 1, 2]] = y[[1, 2, 0]]" in text and "y[1].copy(), y[2].copy(), y[0].copy()" in text, text
    assert "_srcjax_" not in text, text
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(_two_indices)(V3)
    assert "`y[0, 1], y[1, 0] = y[1, 0].copy(), y[0, 1].copy()`" in str(e.value), str(e.value)


def test_the_check_is_one_line_before_the_first_write_a_later_value_sees() -> None:
    text = srcjax.source(_swap)
    assert text.count("in_place(y, y, alias='y[0], y[1] = y[1], y[0]', rank=2)") == 1, text
    assert "in_place" not in srcjax.source(_apart), srcjax.source(_apart)


def test_indices_given_as_arguments() -> None:
    np.testing.assert_array_equal(np.asarray(srcjax.jit(_by_index)(V1, 1, 3)), _by_index(V1, 1, 3))
    np.testing.assert_array_equal(np.asarray(srcjax.jit(_by_index)(V1, 2, 2)), _by_index(V1, 2, 2))
    with pytest.raises(srcjax.TranspileError, match="y\\[\\[i, j\\]\\] = y\\[\\[j, i\\]\\]"):
        srcjax.jit(_by_index)(V2, 1, 3)


def _swap_jax(y):  # noqa: ANN001, ANN202
    return y.at[0].set(y[1]).at[1].set(y[0])


def _loss(y):  # noqa: ANN001, ANN202
    return np.sum(_swap(y) * np.arange(1.0, 1.0 + y.size).reshape(y.shape) ** 2)


def _loss_jax(y):  # noqa: ANN001, ANN202
    return jnp.sum(_swap_jax(y) * jnp.arange(1.0, 1.0 + y.size).reshape(y.shape) ** 2)


def test_a_1d_swap_under_transformations_agrees_with_jax() -> None:
    np.testing.assert_allclose(srcjax.grad(_loss)(V1), jax.grad(_loss_jax)(V1), rtol=1e-12)
    out, tangent = srcjax.jvp(_swap, (V1,), (V1 * 0.5 + 1.0,))
    want, want_t = jax.jvp(_swap_jax, (V1,), (V1 * 0.5 + 1.0,))
    np.testing.assert_allclose(out, want, rtol=1e-12)
    np.testing.assert_allclose(tangent, want_t, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(_swap)(V2)), np.stack([_swap(r) for r in V2]))
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(_loss))(V2), jax.vmap(jax.grad(_loss_jax))(V2), rtol=1e-12)


def test_a_2d_swap_under_transformations_is_refused_at_its_line() -> None:
    line = f"test_tuple_item_writes.py:{_line_of(_swap, 'y[0], y[1] = y[1], y[0]')}:"
    for run in (lambda: srcjax.grad(_loss)(V2), lambda: srcjax.jvp(_swap, (V2,), (V2,)),
                lambda: srcjax.vmap(_swap)(V3), lambda: srcjax.jacfwd(_swap)(V2)):
        with pytest.raises(srcjax.TranspileError) as e:
            run()
        assert line in str(e.value).splitlines()[0], str(e.value)


# ---- random tuple assignments of items, rows and slices ------------------------------------------------------

_DIR = Path(tempfile.mkdtemp(prefix="srcjax_tuple_items_"))
SHAPES = {1: (6,), 2: (6, 3), 3: (6, 2, 3)}


# the containers a program may hold its arrays in (the items as written, then the display): `y` itself, or two
# arrays made from it in a list, a tuple, a dict, or a tuple of lists
HOLDERS = {"": (["y"], ""), "list": (["xs[0]", "xs[1]"], "xs = [y.copy(), y.copy() * 2.0]"),
           "tuple": (["xs[0]", "xs[1]"], "xs = (y.copy(), y.copy() * 2.0)"),
           "dict": (['d["w"]', 'd["v"]'], 'd = {"w": y.copy(), "v": y.copy() * 2.0}'),
           "lists": (["p[0][0]", "p[1][0]"], "p = ([y.copy()], [y.copy() * 2.0])")}


def write_program(r: random.Random) -> tuple[str, int]:
    """``def f(y)`` writing ``k`` items (integer indices, possibly negative, overlapping or equal), slices of one
    length, lists of indices or pairs of indices of ``y``, or of two arrays made from it that a list, a tuple, a
    dict or a tuple of lists holds, with ``k`` others, as one tuple assignment or written out through names; and
    the rank of ``y``."""
    ndim = r.choice([1, 2, 3])
    n = SHAPES[ndim][0]
    kind = r.choice(["int", "int", "int", "slice", "list"] + (["pair"] if ndim > 1 else []))
    length = r.randint(1, 3)
    held, made = HOLDERS[r.choice(["", "", "list", "tuple", "dict", "lists"])]

    def index() -> str:
        if kind == "int":
            i = r.randrange(n)
            return str(i - n if r.random() < 0.3 else i)
        if kind == "slice":
            a = r.randrange(n - length + 1)
            return f"{a}:{a + length}"
        if kind == "list":
            return str([r.randrange(n) for _ in range(length)])
        return f"{r.randrange(n)}, {r.randrange(SHAPES[ndim][1])}"

    k = r.randint(2, 3)
    targets = [f"{r.choice(held)}[{index()}]" for _ in range(k)]
    values = [f"{r.choice(held)}[{index()}]" + (".copy()" if r.random() < 0.15 else "") for _ in range(k)]
    if r.random() < 0.7:
        body = [f"{', '.join(targets)} = {', '.join(values)}"]
    else:
        body = [f"v{j} = {v}" for j, v in enumerate(values)] + [f"{t} = v{j}" for j, t in enumerate(targets)]
    text = "import numpy as np\n\n\ndef f(y):\n    " + (made or "y = y.copy()") + "\n"
    text += "".join(f"    {ln}\n" for ln in body)
    text += f"    return {'y' if not made else f'np.stack([{held[0]}, {held[1]}])'}\n"
    return text, ndim


def _load(text: str) -> Any:
    path = _DIR / f"tuple_{abs(hash(text)) % 10**12}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


def _refused_at_a_written_line(e: srcjax.TranspileError, text: str) -> None:
    first = str(e).splitlines()[0]
    lines = {k + 1 for k, ln in enumerate(text.splitlines()) if "][" in ln or "y[" in ln and "=" in ln}
    assert any(f".py:{ln}:" in first for ln in lines), f"{e}\n{text}"
    assert "_srcjax_" not in str(e), f"{e}\n{text}"


def check(text: str, ndim: int) -> str:
    """``"ok"`` or ``"refused"`` (at one of the program's lines); an AssertionError (with the program) where srcjax
    gives another number than NumPy: jit, the generated source run by NumPy, grad (a weighted sum of the result)
    against NumPy's function's own derivative, which is exact (the result is a selection of ``y``), and vmap (a
    refusal there too where jit refuses)."""
    f = _load(text)
    x = np.arange(float(np.prod(SHAPES[ndim]))).reshape(SHAPES[ndim]) * 0.5 - 2.0
    want = f(x.copy())
    try:
        got = np.asarray(srcjax.jit(f)(x))
    except srcjax.TranspileError as e:
        _refused_at_a_written_line(e, text)
        with pytest.raises(srcjax.TranspileError) as e2:
            srcjax.vmap(f)(np.stack([x, x + 1.0]))
        _refused_at_a_written_line(e2.value, text)
        return "refused"
    np.testing.assert_array_equal(got, want, err_msg=f"jit\n{text}")
    np.testing.assert_array_equal(np.asarray(srcjax.numpy_function(srcjax.jit(f))(x.copy())), want,
                                  err_msg=f"numpy_function\n{text}")
    w = np.arange(1.0, 1.0 + want.size).reshape(want.shape)
    grad = np.asarray(srcjax.grad(lambda y: np.sum(f(y) * w))(x))
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):  # (linear in y: one difference of each entry is exact)
        e1 = np.zeros_like(x)
        e1[i] = 1.0
        fd[i] = np.sum((f(x + e1) - f(x.copy())) * w)
    np.testing.assert_allclose(grad, fd, rtol=1e-12, atol=1e-12, err_msg=f"grad\n{text}")
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(f)(np.stack([x, x + 1.0]))),
                                  np.stack([want, f(x + 1.0)]), err_msg=f"vmap\n{text}")
    return "ok"


@examples(20, scale=25)
@given(st.integers(0, 2**32 - 1))
def test_random_tuple_assignments_agree_with_numpy_or_are_refused(seed: int) -> None:
    check(*write_program(random.Random(seed)))


def test_the_generator_writes_each_kind() -> None:
    texts = "".join(write_program(random.Random(s))[0] for s in range(200))
    for spelling in ("y[-", ":", "y[[", ".copy()", "v0 = ", ", y[", "xs[1][", 'd["v"][', "p[1][0][", "= (y"):
        assert spelling in texts, spelling


def main(count: int, seed: int) -> None:  # pragma: no cover (a sweep by hand)
    counts: dict[str, int] = {}
    for s in range(seed, seed + count):
        text, ndim = write_program(random.Random(s))
        try:
            verdict = check(text, ndim)
        except AssertionError as e:
            verdict = "WRONG"
            print(f"seed {s}: {str(e)[:2000]}")
        counts[verdict] = counts.get(verdict, 0) + 1
    print(counts)


if __name__ == "__main__":  # pragma: no cover
    import sys
    main(int(sys.argv[1]), int(sys.argv[2]))
