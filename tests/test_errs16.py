"""Errors are a feature: programs a user writes that srcjax refuses (tests/errs16_programs.py), each under
the transformations it is refused by, and mistakes in calling a transformation.

Each refusal is checked as a user sees it: a ``srcjax.TranspileError`` subclass; located in the user's file
(the helper's, for a mistake inside a helper of another module) at the line and column of the offending
construct, never inside srcjax or a library; ``str(e)`` starts with ``file:line:col: error:``, quotes the
line with a caret and says what to do (a hint); nothing chained (``__cause__``/``__context__``) and a short
traceback. The default tier checks every 2nd case; ``SRCJAX_HYPOTHESIS=thorough`` all of them."""

from __future__ import annotations

import inspect
import os
import traceback

import numpy as np
import pytest

import srcjax
from tests import errs16_helpers as helpers
from tests import errs16_programs as P
from tests.tiers import THOROUGH

X = np.array([1.5, -2.0, 3.0])
TRANSFORMS = {
    "jit": srcjax.jit, "grad": srcjax.grad, "vmap": srcjax.vmap, "jacrev": srcjax.jacrev,
    "hessian": srcjax.hessian, "vmap_grad": lambda f: srcjax.vmap(srcjax.grad(f)),
    "jit_vmap": lambda f: srcjax.jit(srcjax.vmap(f)), "jacrev_vmap": lambda f: srcjax.jacrev(srcjax.vmap(f)),
}
E = srcjax
SRCJAX_DIR = os.path.dirname(srcjax.__file__)

# (program, transformations, error class, the snippet the error points at: its first occurrence in the
# program's source, or (helper, snippet) in another function's; words the message must contain)
CASES: list[tuple[object, tuple[str, ...], type, object, list[str]]] = [
    (P.try_except, ("jit", "grad", "vmap"), E.UnsupportedSyntaxError, "try:", ["try"]),
    (P.with_errstate, ("jit", "jacrev"), E.UnsupportedSyntaxError, "with np.errstate", ["with"]),
    (P.yield_from, ("jit", "vmap"), E.UnsupportedSyntaxError, "yield from x", ["yield"]),
    (P.global_total, ("jit", "hessian"), E.UnsupportedSyntaxError, "global TOTAL", ["global"]),
    (P.del_name, ("grad", "vmap_grad"), E.UnsupportedSyntaxError, "del y", ["del"]),
    (P.walrus_in_if, ("jit", "vmap"), E.UnsupportedSyntaxError, "s := np.sum(x)", ["walrus"]),
    (P.walrus_in_comprehension, ("grad",), E.UnsupportedSyntaxError, "t := v * 2", ["walrus"]),
    (P.fstring_returned, ("jit", "vmap", "jacrev"), E.TranspileError, "return np.sum(x), label",
     ["string formatted from array values"]),
    (P.percent_format, ("jit", "vmap", "jacrev"), E.DTypeError, '"%.2f" % np.sum(x)', ["str"]),
    (P.str_of_traced, ("jit", "vmap", "hessian"), E.StaticValueError, "str(np.sum(x))", ["str()"]),
    (P.assert_on_data, ("jit", "grad", "vmap", "vmap_grad"), E.StaticValueError, "np.all(x > 0)", ["assert"]),
    (P.recursion_on_data, ("jit", "vmap"), E.UnsupportedSyntaxError,
     (P._halve_until_small, "_halve_until_small(x * 0.5"), ["recursion"]),
    (P.in_on_array, ("jit", "grad", "vmap"), E.UnsupportedSyntaxError, "0.0 in x", ["`in`"]),
    (P.list_sort, ("jit", "grad", "vmap", "vmap_grad"), E.StaticValueError, "xs.sort()", ["list.sort()"]),
    (P.sorted_of_traced, ("jit", "vmap"), E.StaticValueError, "sorted(x)", ["sorted()"]),
    (P.sorted_of_traced, ("grad", "jacrev"), E.TranspileError, "sorted(x)", ["sorted(x)"]),
    (P.dict_grows_while_walked, ("jit",), E.StaticValueError, "d:", ["changed size during iteration"]),
    (P.dict_keyed_by_value, ("jit", "grad"), E.StaticValueError, "d[x[0]] = 1.0", ["index into a Python container"]),
    (P.list_item_at_argmax, ("jit", "hessian"), E.StaticValueError, "xs[np.argmax(x)] = 5.0",
     ["index into a Python container"]),
    (P.set_of_arrays, ("jit", "grad", "vmap"), E.UnknownFunctionError, "set(", ["set()"]),
    (P.nonzero_indices, ("jit", "grad", "vmap", "hessian"), E.UnknownFunctionError, "np.nonzero(x > 0)",
     ["depends on the data"]),
    (P.where_one_argument, ("jit", "vmap"), E.UnknownFunctionError, "np.where(x > 0)",
     ["np.where(condition) with one argument", "size depends on the data"]),
    (P.mask_returned, ("jit", "grad", "vmap", "jacrev"), E.ShapeError, "x[x > 0]", ["boolean mask"]),
    (P.unique_values, ("jit", "grad", "vmap"), E.UnknownFunctionError, "np.unique(x)", ["size="]),
    (P.reshape_by_count, ("jit", "grad"), E.StaticValueError, "x.reshape(n, -1)", ["shape"]),
    (P.reshape_by_count, ("vmap",), E.TranspileError, "x.reshape(n, -1)", ["a mapped argument"]),
    (P.slice_to_argmax, ("jit", "grad", "vmap", "vmap_grad"), E.StaticValueError, "x[:n]", ["slice bound"]),
    (P.zeros_of_data_size, ("jit", "hessian"), E.StaticValueError, "np.zeros(int(np.sum(x)))", ["shape"]),
    (P.zeros_of_data_size, ("vmap",), E.TranspileError, "np.zeros(int(np.sum(x)))", ["a mapped argument"]),
    (P.if_on_vector, ("jit", "grad", "vmap", "vmap_grad", "jit_vmap", "jacrev_vmap"), E.ShapeError, "x > 0",
     ["must be a scalar"]),
    (P.while_on_vector, ("jit", "vmap", "jit_vmap"), E.ShapeError, "x < 10.0", ["must be a scalar"]),
    (P.bool_of_traced, ("jit", "grad", "vmap"), E.StaticValueError, "bool(np.sum(x) > 0)", ["bool"]),
    (P.item_of_traced, ("jit", "vmap"), E.UnknownFunctionError, "np.sum(x).item()", ["item"]),
    (P.math_sqrt_of_traced, ("jit", "vmap"), E.StaticValueError, "math.sqrt(np.sum(x * x))", ["sqrt()"]),
    (P.math_sqrt_of_traced, ("grad", "hessian"), E.TranspileError, "math.sqrt(np.sum(x * x))", ["math.sqrt"]),
    (P.math_exp_of_traced, ("jit", "vmap"), E.StaticValueError, "math.exp(x[0])", ["exp()"]),
    (P.math_isnan_of_traced, ("jit", "vmap"), E.StaticValueError, "math.isnan(np.sum(x))", ["isnan()"]),
    (P.math_isnan_of_traced, ("grad",), E.TranspileError, "math.isnan(np.sum(x))", ["math.isnan"]),
    # (jit and grad run it since hunt21: two booleans of data, Python's `and` is np.logical_and's value)
    (P.and_of_arrays, ("vmap",), E.TranspileError, "(x[0] > 0) and (x[1] > 0)", ["cannot batch", "and"]),
    (P.matmul_mismatch, ("jit", "grad", "vmap", "vmap_grad", "jit_vmap", "jacrev_vmap", "hessian"), E.ShapeError,
     "h @ w", ["(3,)", "(4, 2)"]),
    (P.broadcast_mismatch, ("jit", "vmap", "jacrev"), E.ShapeError, "x * y", ["(3,)", "(4,)"]),
    (P.concatenate_mismatch, ("jit", "vmap", "grad"), E.ShapeError, "np.concatenate([x, y])", ["(3,)"]),
    (P.reshape_mismatch, ("jit", "vmap", "hessian"), E.ShapeError, "x.reshape(2, 2)", ["reshape"]),
    (P.stack_mismatch, ("jit", "vmap"), E.ShapeError, "np.stack([x, x[:2]])", ["(3,)", "(2,)"]),
    (P.where_mismatch, ("jit", "vmap", "grad"), E.ShapeError, "np.where(x > 0, x, np.zeros(4))", ["(4,)"]),
    (P.index_out_of_bounds, ("jit", "vmap", "grad"), E.ShapeError, "x[5]", ["index 5", "size 3"]),
    (P.too_many_indices, ("jit", "vmap_grad"), E.ShapeError, "x[0, 1]", ["too many indices"]),
    (P.axis_out_of_bounds, ("jit", "vmap", "jacrev"), E.ShapeError, "np.cumsum(x, axis=2)", ["axis 2"]),
    (P.einsum_of_a_vector_as_matrix, ("jit", "vmap"), E.ShapeError, 'np.einsum("ij,jk->ik", x, x)', ["'ij'"]),
    (P.float_xor, ("jit", "vmap"), E.DTypeError, "x ^ 1", ["float64"]),
    (P.float_left_shift, ("jit", "grad"), E.DTypeError, "np.left_shift(x, 2)", ["float64"]),
    (P.astype_str, ("jit", "vmap"), E.DTypeError, "x.astype(str)", ["not supported"]),
    (P.misspelled_dtype, ("jit", "grad"), E.DTypeError, 'np.zeros(3, dtype="float33")', ["float33"]),
    (P.complex_floor_divide, ("jit", "vmap"), E.DTypeError, "z // 2", ["complex128"]),
    (P.error_in_nested_def, ("jit", "grad", "vmap", "jacrev_vmap"), E.ShapeError, "v @ np.ones(4)", ["(4,)"]),
    (P.error_in_lambda, ("jit", "vmap", "hessian"), E.ShapeError, "v @ np.ones(4)", ["(4,)"]),
    (P.error_in_loop, ("jit", "vmap", "jacrev"), E.ShapeError, "x[i:] @ np.ones(3)", ["(2,)", "(3,)"]),
    (P.bad_lambda_entry, ("jit", "vmap", "vmap_grad"), E.ShapeError, (P.BAD_LAMBDA, "x @ np.ones(4)"), ["(4,)"]),
    (P.BAD_LAMBDA, ("grad", "vmap"), E.ShapeError, "x @ np.ones(4)", ["(4,)"]),
    (P.calls_helper_with_mismatch, ("jit", "grad", "vmap", "jit_vmap"), E.ShapeError,
     (helpers.project, "h @ w"), ["(4, 2)"]),
    (P.calls_helper_with_math, ("jit", "vmap"), E.StaticValueError, (helpers.scale_by_norm, "math.sqrt("),
     ["sqrt()"]),
    (P.calls_helper_with_math, ("grad",), E.TranspileError, (helpers.scale_by_norm, "math.sqrt("), ["math.sqrt"]),
    (P.calls_helper_branching_on_vector, ("jit", "vmap", "hessian"), E.ShapeError,
     (helpers.branch_on_vector, "x > 0"), ["must be a scalar"]),
    (P.calls_helper_with_mask, ("jit", "grad", "vmap"), E.ShapeError, (helpers.first_positive, "x[x > 0]"),
     ["boolean mask"]),
]


def _cases() -> list[tuple[str, object, str, type, object, list[str]]]:
    out = []
    for fn, ts, cls, snippet, words in CASES:
        for t in ts:
            name = "BAD_LAMBDA" if fn is P.BAD_LAMBDA else fn.__name__  # type: ignore[attr-defined]
            out.append((f"{name}-{t}", fn, t, cls, snippet, words))
    return out


ALL = _cases()
DEFAULT = ALL if THOROUGH else ALL[::2]


def locate(snippet: object, fn: object) -> tuple[str, int, int]:
    """(file, 1-based line, 0-based column) of ``snippet``'s first occurrence in ``fn``'s source."""
    if isinstance(snippet, tuple):
        fn, snippet = snippet
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    for i, line in enumerate(lines):
        col = line.find(snippet)  # type: ignore[arg-type]
        if col >= 0:
            return inspect.getsourcefile(fn), start + i, col  # type: ignore[arg-type, return-value]
    raise AssertionError(f"{snippet!r} not in {fn}")


def check_user_facing(e: srcjax.TranspileError, filename: str, line: int, col: int | None) -> None:
    """What the user sees: located in their file, the line quoted with a caret, a hint, nothing chained, a
    short traceback."""
    assert e.span is not None, f"no location: {e}"
    assert not e.span.filename.startswith(SRCJAX_DIR), f"located inside srcjax: {e}"
    assert (e.span.filename, e.span.line) == (filename, line), f"points at {e.span}, expected {filename}:{line}\n{e}"
    if col is not None:
        assert e.span.col == col, f"points at {e.span}, expected column {col + 1}\n{e}"
    text = str(e)
    lines = text.splitlines()
    assert lines[0] == f"{e.span}: error: {e.message}"
    with open(filename) as fh:
        src = fh.read().splitlines()[line - 1]
    assert lines[1] == "    " + src, text
    assert set(lines[2].strip()) == {"^"}, text
    assert e.hint and f"hint: {e.hint}" in text, f"no hint (what to do instead): {text}"
    for word in ("HloValue", "Traceback", "libcst", "site-packages"):
        assert word not in text, text
    assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), "a chain of internal errors"
    frames = traceback.extract_tb(e.__traceback__)
    assert len(frames) <= 16, f"{len(frames)} frames: {[f.filename for f in frames]}"


@pytest.mark.parametrize("case", DEFAULT, ids=[c[0] for c in DEFAULT])
def test_refused_at_the_users_line(case) -> None:
    _, fn, t, cls, snippet, words = case
    x = np.stack([X, X + 0.5]) if "vmap" in t else X
    with pytest.raises(srcjax.TranspileError) as ei:
        TRANSFORMS[t](fn)(x)
    e = ei.value
    assert isinstance(e, cls), f"{type(e).__name__}, not {cls.__name__}: {e}"
    check_user_facing(e, *locate(snippet, fn))
    for w in words:
        assert w in e.message, f"{w!r} not in {e.message!r}"


def _loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2)


def _pair(x):
    return x * 2, np.sum(x)


W, XS = np.ones((3, 2)), np.ones((4, 3))
# (the call, the error class, words of the message); located at this file's line of the call (jax's checks)
CALL_MISTAKES = {
    "argnums_out_of_range": (lambda: srcjax.grad(_loss, argnums=2)(W, XS), E.ArgumentError, ["argnums 2"]),
    "argnums_not_an_int": (lambda: srcjax.grad(_loss, argnums=0.5)(W, XS), E.ArgumentError, ["argnums must be"]),
    "jacrev_argnums_out_of_range": (lambda: srcjax.jacrev(_loss, argnums=-3)(W, XS), E.ArgumentError,
                                    ["argnums -3"]),
    "jvp_primals_not_a_tuple": (lambda: srcjax.jvp(np.sin, X, X), E.ArgumentError, ["tuples or lists"]),
    "jvp_tangents_count": (lambda: srcjax.jvp(np.sin, (X,), (X, X)), E.ArgumentError, ["1 primals but 2"]),
    "in_axes_too_long": (lambda: srcjax.vmap(_loss, in_axes=(None, 0, 0))(W, XS), E.ArgumentError, ["in_axes"]),
    "mapped_sizes_differ": (lambda: srcjax.vmap(_loss, in_axes=(0, 0))(W, XS), E.ArgumentError,
                            ["different sizes"]),
    "in_axes_beyond_rank": (lambda: srcjax.vmap(_loss, in_axes=(None, 2))(W, XS), E.ArgumentError, ["in_axes 2"]),
}


@pytest.mark.parametrize("name", list(CALL_MISTAKES))
def test_a_mistake_in_calling_a_transformation_is_located_at_the_call(name: str) -> None:
    """Regression: argnums out of range was a DTypeError, argnums=0.5 a raw TypeError from srcjax's cache key,
    jvp(f, x, t) of arrays "argnums 1 is out of range" (jax: primals must be tuples), a count mismatch of
    tangents a DTypeError."""
    call, cls, words = CALL_MISTAKES[name]
    with pytest.raises(cls) as ei:
        call()
    e = ei.value
    assert e.span is not None and e.span.filename == __file__, str(e)
    assert str(e).splitlines()[1].strip().startswith(f'"{name}": (lambda: srcjax.'), str(e)
    assert all(w in e.message for w in words), e.message
    assert e.__cause__ is None and len(traceback.extract_tb(e.__traceback__)) <= 12


def test_out_axes_with_more_entries_than_outputs_is_located_at_the_return() -> None:
    """Regression: it was "IndexError: tuple index out of range" (srcjax's own item of the output)."""
    with pytest.raises(srcjax.TranspileError) as ei:
        srcjax.vmap(_pair, out_axes=(0, 0, 0))(XS)
    check_user_facing(ei.value, *locate("return x * 2, np.sum(x)", _pair))
    assert "out_axes has 3 entries" in ei.value.message and "tuple of 2" in ei.value.message


def _while_doubling(x):
    while x < 10.0:
        x = x * 2
    return np.sum(x)


def _while_doubling_sum(x):
    while np.sum(x) < 10.0:
        x = x * 2
    return np.sum(x)


def test_vmap_of_a_while_on_a_vector_is_numpys_error_not_an_elementwise_loop() -> None:
    """Regression (a silent wrong answer): vmap of ``while x < 10.0`` with a vector ``x`` per example looped
    each element until it was done (``np.any`` over every axis of the batched test); NumPy and jit refuse a
    vector test, and so does jax's vmap. A scalar test per example still runs, against the loop over the
    examples and jax."""
    xs = np.array([[1.5, 2.0, 3.0], [2.0, 1.5, 3.5]])
    with pytest.raises(ValueError):
        _while_doubling(xs[0].copy())  # NumPy: the truth value of an array is ambiguous
    for t in ("vmap", "jit_vmap"):
        with pytest.raises(srcjax.ShapeError) as ei:
            TRANSFORMS[t](_while_doubling)(xs)
        check_user_facing(ei.value, *locate("x < 10.0", _while_doubling))
    got = srcjax.vmap(_while_doubling_sum)(xs)
    np.testing.assert_allclose(np.asarray(got), [_while_doubling_sum(x) for x in xs])
    g = srcjax.grad(lambda x: np.sum(srcjax.vmap(_while_doubling_sum)(x)), max_iters=10)(xs)
    np.testing.assert_allclose(np.asarray(g), np.full_like(xs, 2.0))


def test_the_command_line_on_refused_programs_exits_1_with_the_located_error() -> None:
    """``srcjax-transpile FILE::FUNC``: a refused function is exit status 1 and the error at the user's line, no
    traceback (vmap of an ``if`` on a vector per example too: one example's error, not the batched program's)."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = ("import sys\nfrom srcjax.cli import main\nfor argv in sys.argv[1:]:\n"
              "    print('rc', main(argv.split()))\n")
    runs = ["tests/errs16_programs.py::if_on_vector --emit hlo --arg x=f64[3]",
            "tests/errs16_programs.py::if_on_vector --vmap --emit hlo --arg x=f64[2,3]",
            "tests/errs16_programs.py::try_except"]
    p = subprocess.run([sys.executable, "-c", script, *runs], cwd=root, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out
    assert out.count("rc 1") == 3, out
    _, line, col = locate("x > 0", P.if_on_vector)
    assert out.count(f"tests/errs16_programs.py:{line}:{col + 1}: error: an `if` condition on array data must be a "
                     "scalar") == 2, out
    _, line, col = locate("try:", P.try_except)
    assert f"tests/errs16_programs.py:{line}:{col + 1}: error: try/except is not supported" in out, out


def test_a_value_or_a_math_function_passed_for_the_function() -> None:
    """``srcjax.grad(f(x))`` (a value: was "cannot compile 3: it has no Python source") is an ArgumentError at the
    call, as jax's TypeError; ``srcjax.grad(math.sin)`` says to use np.sin."""
    import math

    with pytest.raises(srcjax.ArgumentError) as ei:
        srcjax.grad(3.0)(X)
    assert "not a function" in ei.value.message and "srcjax.grad(f)(x)" in (ei.value.hint or "")
    assert ei.value.span is not None and ei.value.span.filename == __file__
    with pytest.raises(srcjax.UnknownFunctionError) as ej:
        srcjax.grad(math.sin)(1.0)
    assert ej.value.hint == "use np.sin, which takes arrays"


def _dict_filled_in_a_long_loop(x):
    d = {}
    for i in range(4):
        d[i] = x[i % 3] * i
    return d[1] + d[3]


def _list_filled_in_a_long_loop(x):
    xs = [0.0] * 4
    for i in range(4):
        xs[i] = x[i % 3] * i
    return xs[1] + xs[3]


@pytest.mark.parametrize("fn", [_dict_filled_in_a_long_loop, _list_filled_in_a_long_loop])
def test_items_written_in_a_loop_long_enough_to_roll_run_as_numpy(fn) -> None:
    """Regression: a loop over range(4) rolled (CPU rolls a Python loop of more than 2 steps), its counter a run-time value, wrote ``d[i]`` keyed by the value's
    handle ("the loop body returns (*, {%1: i64[]: *},), but the loop carries (*, {},)") and ``xs[i]`` raised
    "list indices must be integers or slices, not HloValue"; a key of a container must be static, so the loop is
    unrolled (as jax unrolls a Python loop), and runs as NumPy does, derivatives included."""
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(X)), fn(X))
    np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(X)), [3.0, 1.0, 0.0])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(fn)(np.stack([X, 2 * X]))), [fn(X), fn(2 * X)])
