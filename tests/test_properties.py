"""Property tests (hypothesis): the three oracles agree on random inputs and random programs.

- binary operators on random mutually broadcastable shapes;
- NEP 50 dtype promotion over random dtype pairs and weak Python scalars: the
  result dtype equals NumPy's (and a refused combination is a DTypeError where
  NumPy raises a TypeError);
- reductions over random axes (None, int, negative, tuples) and keepdims,
  passed as plain Python arguments (made static automatically);
- random basic indexing expressions (ints, negative ints, slices with steps,
  None, ...);
- random small programs: a generator composes elementwise ops, reductions,
  matmuls, reshapes, static loops and static ifs into source text, writes it
  to a module file (so its source can be read) and imports it.

Each distinct argument signature compiles an XLA program (10-30 ms), so the
example counts are kept small.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import srcjax
from tests import written

# The default profile is small and deterministic (CI); SRCJAX_HYPOTHESIS=thorough hunts with fresh
# random examples and 10x as many of them.
_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1
_DERANDOMIZE = _SCALE == 1


def examples(n: int) -> settings:
    return settings(max_examples=n * _SCALE, deadline=None, derandomize=_DERANDOMIZE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


SETTINGS = examples(25)


def tol(dtype: np.dtype) -> dict[str, float]:
    return {"float16": dict(rtol=2e-3, atol=2e-3), "float32": dict(rtol=1e-5, atol=1e-6)}.get(
        np.dtype(dtype).name, dict(rtol=1e-12, atol=1e-12))


def check_agree(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                who: str = "") -> None:
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), who
        for a, e in zip(actual, expected):
            check_agree(a, e, rtol, atol, who)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"{who}: shape {a.shape} != {e.shape}"
    assert a.dtype == e.dtype, f"{who}: dtype {a.dtype} != {e.dtype}"
    if e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=who)
    else:
        t = tol(e.dtype)
        np.testing.assert_allclose(a, e, rtol=rtol if rtol is not None else t["rtol"],
                                   atol=atol if atol is not None else t["atol"], equal_nan=True, err_msg=who)


def three_oracles(fn: Any, compiled: Any, *args: Any, rtol: float | None = None, atol: float | None = None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # copies: the program run by NumPy may change an argument in place (`w += v1`)
        expected = fn(*(np.copy(a) if isinstance(a, np.ndarray) else a for a in args))
        generated = srcjax.numpy_function(fn)(*args)
    check_agree(generated, expected, rtol, atol, "generated source run by NumPy")
    check_agree(compiled(*args), expected, rtol, atol, "XLA")
    return expected


# ======================================================================================
# Binary operators with broadcasting
# ======================================================================================
def op_add(a, b):
    return a + b


def op_sub(a, b):
    return a - b


def op_mul(a, b):
    return a * b


def op_div(a, b):
    return a / b


def op_maximum(a, b):
    return np.maximum(a, b)


def op_arctan2(a, b):
    return np.arctan2(a, b)


def op_greater_where(a, b):
    return np.where(a > b, a, b - 1.0)


def op_pow(a, b):
    return np.abs(a) ** b


def op_outer_mix(a, b):
    return a * 2.0 - b / (1.0 + b * b), a <= b


BINARY = [op_add, op_sub, op_mul, op_div, op_maximum, op_arctan2, op_greater_where, op_pow, op_outer_mix]
COMPILED = {f: srcjax.compile(f) for f in BINARY}


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4),
       op=st.sampled_from(BINARY), dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 16))
def test_binary_broadcasting(shapes, op, dtype, seed) -> None:
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(0.5, 2.0, size=s).astype(dtype) * rng.choice([-1, 1], size=s).astype(dtype)
            for s in shapes.input_shapes)
    out = three_oracles(op, COMPILED[op], a, b)
    first = out[0] if isinstance(out, tuple) else out
    assert np.shape(first) == shapes.result_shape


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, min_side=2, max_side=4))
def test_incompatible_shapes_are_shape_errors(shapes) -> None:
    """Make the shapes incompatible in one axis: srcjax refuses exactly what NumPy refuses."""
    s1, s2 = (list(s) for s in shapes.input_shapes)
    assume(len(s1) >= 1 and len(s2) >= 1)
    s2[-1] = s1[-1] + 1
    a, b = np.ones(s1, np.float32), np.ones(s2, np.float32)
    with pytest.raises(ValueError):
        np.add(a, b)
    with pytest.raises(srcjax.ShapeError) as ei:
        srcjax.eval_shape(op_add, a, b)
    assert str(tuple(s1)) in ei.value.message and str(tuple(s2)) in ei.value.message


# ======================================================================================
# dtype promotion (NEP 50)
# ======================================================================================
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.float16,
          np.float32, np.float64]
PY_SCALARS = [2, 2.5, True]


def promote_add(a, b):
    return a + b


def promote_mul(a, b):
    return a * b


def promote_sub(a, b):
    return a - b


def promote_div(a, b):
    return a / b


def promote_max(a, b):
    return np.maximum(a, b)


def promote_where(a, b):
    return np.where(a > 0, a, b)


PROMOTING = [promote_add, promote_mul, promote_sub, promote_div, promote_max, promote_where]
COMPILED.update({f: srcjax.compile(f) for f in PROMOTING})


def sample(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        return rng.integers(1, 5, size=shape).astype(d)
    return rng.uniform(1.0, 5.0, size=shape).astype(d)


@SETTINGS
@given(op=st.sampled_from(PROMOTING), left=st.sampled_from(DTYPES + PY_SCALARS),
       right=st.sampled_from(DTYPES + PY_SCALARS), seed=st.integers(0, 2 ** 16))
def test_nep50_promotion(op, left, right, seed) -> None:
    assume(not (isinstance(left, (int, float)) and isinstance(right, (int, float))))
    rng = np.random.default_rng(seed)
    a = left if isinstance(left, (int, float)) else sample(rng, left, (3,))
    b = right if isinstance(right, (int, float)) else sample(rng, right, (3,))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = op(a, b)
    except TypeError:  # NumPy refuses (e.g. bool - bool): so does srcjax, before running anything
        with pytest.raises(srcjax.DTypeError):
            srcjax.eval_shape(op, a, b)
        return
    shape = srcjax.eval_shape(op, a, b)
    assert (shape.shape, shape.dtype) == (np.shape(expected), np.asarray(expected).dtype), \
        f"{op.__name__}({left}, {right})"
    three_oracles(op, COMPILED[op], a, b)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float32])
def test_weak_bool_scalar(dtype) -> None:
    x = sample(np.random.default_rng(0), dtype, (3,))
    three_oracles(promote_add, COMPILED[promote_add], x, True)


def compare_weak(a, b):
    return a > b, a == b


def test_compare_two_weak_ints() -> None:
    three_oracles(compare_weak, srcjax.compile(compare_weak), 2, 3)


def test_compare_two_weak_floats() -> None:
    three_oracles(compare_weak, srcjax.compile(compare_weak), 2.0, 3.5)


def weak_int_scalar(x):
    return x + 1, x * 3, 2 - x


def weak_float_scalar(x):
    return x + 1.5, x * 0.5, 2.0 / (1.0 + x * x)


COMPILED.update({f: srcjax.compile(f) for f in (weak_int_scalar, weak_float_scalar)})


@SETTINGS
@given(dtype=st.sampled_from([d for d in DTYPES if d is not np.bool_]), seed=st.integers(0, 2 ** 16))
def test_weak_scalars_take_the_array_dtype(dtype, seed) -> None:
    x = sample(np.random.default_rng(seed), dtype, (2, 3))
    out = three_oracles(weak_int_scalar, COMPILED[weak_int_scalar], x)
    assert all(np.asarray(o).dtype == np.dtype(dtype) for o in out)
    out = three_oracles(weak_float_scalar, COMPILED[weak_float_scalar], x)
    expected = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)
    assert all(np.asarray(o).dtype == expected for o in out)


# ======================================================================================
# Reductions over random axes
# ======================================================================================
def red_sum(x, axis, keepdims):
    return np.sum(x, axis=axis, keepdims=keepdims)


def red_mean(x, axis, keepdims):
    return x.mean(axis=axis, keepdims=keepdims)


def red_max(x, axis, keepdims):
    return np.max(x, axis=axis, keepdims=keepdims)


def red_min(x, axis, keepdims):
    return x.min(axis=axis, keepdims=keepdims)


def red_prod(x, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims)


def red_var(x, axis, keepdims):
    return np.var(x, axis=axis, keepdims=keepdims)


def red_std(x, axis, keepdims):
    return x.std(axis=axis, keepdims=keepdims)


def red_any(x, axis, keepdims):
    return np.any(x > 0.5, axis=axis, keepdims=keepdims)


def red_all(x, axis, keepdims):
    return (x > -0.5).all(axis=axis, keepdims=keepdims)


REDUCTIONS = [red_sum, red_mean, red_max, red_min, red_prod, red_var, red_std, red_any, red_all]
COMPILED.update({f: srcjax.compile(f) for f in REDUCTIONS})


@st.composite
def shape_and_axis(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    nd = len(shape)
    axis = draw(st.one_of(
        st.none(),
        st.integers(-nd, nd - 1),
        st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(tuple),
        st.lists(st.integers(-nd, -1), min_size=1, max_size=nd, unique=True).map(tuple),
    ))
    return shape, axis


@SETTINGS
@given(sa=shape_and_axis(), keepdims=st.booleans(), op=st.sampled_from(REDUCTIONS),
       dtype=st.sampled_from([np.float32, np.float64, np.int32]), seed=st.integers(0, 2 ** 16))
def test_reductions(sa, keepdims, op, dtype, seed) -> None:
    shape, axis = sa
    x = np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(dtype)
    # float32 var/std/prod accumulate differently on XLA and NumPy (pairwise summation)
    rtol = 1e-4 if dtype == np.float32 else None
    three_oracles(op, COMPILED[op], x, axis, keepdims, rtol=rtol, atol=1e-5 if rtol else None)


def argmax_axis(x, axis):
    return np.argmax(x, axis=axis), x.argmin(axis=axis)


COMPILED[argmax_axis] = srcjax.compile(argmax_axis)


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), data=st.data())
def test_argmax_argmin(shape, data) -> None:
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    # distinct values, so the index of the extreme is unique
    x = np.random.default_rng(len(shape)).permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)
    three_oracles(argmax_axis, COMPILED[argmax_axis], x, axis)


# ======================================================================================
# Generated modules: random indexing and random programs
# ======================================================================================
@pytest.fixture(scope="module")
def module_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("generated_programs")
    sys.path.insert(0, str(d))
    yield d
    sys.path.remove(str(d))


def load(module_dir, text: str) -> Any:
    """Write ``text`` to a fresh module file and import it (its functions have readable source)."""
    name = "gen_" + hashlib.sha1(text.encode()).hexdigest()[:16]
    path = module_dir / f"{name}.py"
    if not path.exists():
        path.write_text(text)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@st.composite
def index_expression(draw, shape):
    """A random basic index for an array of ``shape`` (as source text): one entry per axis (an int,
    possibly negative, or a slice with optional negative/out-of-range bounds and steps), then
    possibly a run of axes replaced by ``...`` or trailing axes left out, then ``None``s inserted."""
    entries: list[str] = []
    for d in shape:
        kind = draw(st.sampled_from(["int", "slice", "slice", "full"]))
        if kind == "int":
            entries.append(str(draw(st.integers(-d, d - 1))))
        elif kind == "slice":
            lo = draw(st.one_of(st.just(""), st.integers(-d - 1, d + 1).map(str)))
            hi = draw(st.one_of(st.just(""), st.integers(-d - 1, d + 1).map(str)))
            step = draw(st.sampled_from(["", "1", "2", "3", "-1", "-2"]))
            entries.append(f"{lo}:{hi}" + (f":{step}" if step else ""))
        else:
            entries.append(":")
    how = draw(st.sampled_from(["all", "ellipsis", "prefix"]))
    if how == "ellipsis":
        i = draw(st.integers(0, len(entries)))
        j = draw(st.integers(i, len(entries)))
        entries[i:j] = ["..."]
    elif how == "prefix":
        entries = entries[: draw(st.integers(0, len(entries)))]
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), "None")
    return ", ".join(entries) if entries else "..."


@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), data=st.data())
def test_random_basic_indexing(module_dir, shape, data) -> None:
    key = data.draw(index_expression(shape))
    mod = load(module_dir, f"def take(x):\n    return x[{key}]\n")
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = three_oracles(mod.take, srcjax.compile(mod.take), x)
    assert np.shape(expected) == np.shape(x[eval(f"np.s_[{key}]")])


# -- random programs -------------------------------------------------------------------------------
UNARY = ["np.tanh({})", "np.sin({})", "np.cos({})", "np.abs({})", "np.square(np.tanh({}))", "-{}",
         "np.exp(-np.abs({}))", "np.sqrt(np.abs({}) + 1.0)", "np.log1p(np.abs({}))", "np.maximum({}, 0.0)",
         "np.clip({}, -1.5, 1.5)", "np.where({0} > 0, {0}, 0.1 * {0})"]
BINARY_OPS = ["{} + {}", "{} - {}", "{} * {}", "np.maximum({}, {})", "np.minimum({}, {})",
              "{} / (1.0 + {} ** 2)"]
REDUCE = ["np.sum", "np.mean", "np.max", "np.min"]
REBIND = ["{a} = {b} * {a}", "{a} = np.tanh({a}) + {a}", "{a} = {a} / (1.0 + {b} ** 2)", "{a} = np.sin({a} - {b})",
          "{a} = {a} * {a} * 0.5", "{a} += {b}"]


HELPERS = """

def helper(v, scale=1.0):
    return inner(v) * scale


def inner(v):
    if v.ndim == 0:
        return v + 1.0
    return np.tanh(v) + v.mean()
"""


def broadcastable(s1: tuple[int, ...], s2: tuple[int, ...]) -> bool:
    return all(a == b or a == 1 or b == 1 for a, b in zip(s1[::-1], s2[::-1]))


def broadcast(s1: tuple[int, ...], s2: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(s1, s2))


@st.composite
def random_program(draw):
    """Source text of ``def prog(x, y, w)`` and the shapes of its arguments.

    The generator tracks each variable's shape, so every program it writes is
    well-typed; values stay bounded (tanh, clip, division by 1 + v**2, ...).
    """
    m, n, k = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    shapes: dict[str, tuple[int, ...]] = {"x": (m, n), "y": (n,), "w": (n, k)}
    lines: list[str] = []
    counter = 0
    viewed: set[str] = set()  # names that share memory with another (a basic slice, .T, reshape: NumPy views)

    def new() -> str:
        nonlocal counter
        counter += 1
        return f"v{counter}"

    for _ in range(draw(st.integers(2, 7))):
        names = sorted(shapes)
        a = draw(st.sampled_from(names))
        kind = draw(st.sampled_from(["unary", "unary", "binary", "binary", "scalar", "reduce", "matmul", "T",
                                     "reshape", "loop", "if", "augassign", "slice", "stack", "helper",
                                     "compare", "unpack", "rebind", "rebind"]))
        v = new()
        if kind == "unary":
            lines.append(f"{v} = " + draw(st.sampled_from(UNARY)).format(a))
            shapes[v] = shapes[a]
        elif kind == "binary":
            partners = [b for b in names if broadcastable(shapes[a], shapes[b])]
            b = draw(st.sampled_from(partners))
            lines.append(f"{v} = " + draw(st.sampled_from(BINARY_OPS)).format(a, b))
            shapes[v] = broadcast(shapes[a], shapes[b])
        elif kind == "scalar":
            c = draw(st.sampled_from(["2", "0.5", "-1.25", "3"]))
            op = draw(st.sampled_from(["+", "-", "*"]))
            lines.append(f"{v} = {a} {op} {c}" if draw(st.booleans()) else f"{v} = {c} {op} {a}")
            shapes[v] = shapes[a]
        elif kind == "reduce" and shapes[a]:
            nd = len(shapes[a])
            axis = draw(st.integers(-nd, nd - 1))
            keep = draw(st.booleans())
            lines.append(f"{v} = {draw(st.sampled_from(REDUCE))}({a}, axis={axis}, keepdims={keep})")
            s = list(shapes[a])
            if keep:
                s[axis] = 1
            else:
                del s[axis]
            shapes[v] = tuple(s)
        elif kind == "matmul" and len(shapes[a]) >= 1:
            partners = [b for b in names if len(shapes[b]) == 2 and shapes[b][0] == shapes[a][-1]]
            if not partners:
                lines.append(f"{v} = np.tanh({a})")
                shapes[v] = shapes[a]
                continue
            b = draw(st.sampled_from(partners))
            lines.append(f"{v} = np.tanh({a} @ {b})")
            shapes[v] = shapes[a][:-1] + (shapes[b][1],)
        elif kind == "slice" and shapes[a]:
            d = shapes[a][0]
            lo, step = draw(st.integers(-d, d - 1)), draw(st.sampled_from([1, 2, -1]))
            lines.append(f"{v} = {a}[{lo}::{step}, ...]")
            viewed |= {a, v}
            shapes[v] = (len(range(d)[lo::step]),) + shapes[a][1:]
        elif kind == "stack":
            axis = draw(st.integers(0, len(shapes[a])))
            lines.append(f"{v} = np.stack([{a}, np.tanh({a}), {a} * 0.5], axis={axis})")
            s = list(shapes[a])
            s.insert(axis, 3)
            shapes[v] = tuple(s)
        elif kind == "helper":
            lines.append(f"{v} = helper({a}, scale={draw(st.sampled_from(['0.5', '2', '-1.0']))})")
            shapes[v] = shapes[a]
        elif kind == "compare":
            partners = [b for b in names if broadcastable(shapes[a], shapes[b])]
            b = draw(st.sampled_from(partners))
            op = draw(st.sampled_from([">", "<=", "=="]))
            lines.append(f"{v} = np.where(({a} {op} {b}) | ({a} > 1.0), {a}, {b})")
            shapes[v] = broadcast(shapes[a], shapes[b])
        elif kind == "unpack":
            lines.append(f"p, q = {a}, {a} * 2")
            lines.append("p, q = q, p")
            lines.append(f"{v} = p - q")
            shapes[v] = shapes[a]
        elif kind == "rebind":  # a copy, then the name rebound from itself (the copy keeps the old value)
            b = draw(st.sampled_from([b for b in names if broadcastable(shapes[b], shapes[a])
                                      and broadcast(shapes[b], shapes[a]) == shapes[a]]))
            rebind = draw(st.sampled_from(REBIND))
            if "+=" in rebind and a in viewed:  # (in place through a view changes the other name too: refused)
                rebind = "{a} = {a} + {b}"
            # `+=` changes the array in place in NumPy, and the copy with it: srcjax refuses a plain
            # alias read after that (tests/test_aliasing.py), so this copy is explicit
            lines.append(f"{v} = np.copy({a})" if "+=" in rebind else f"{v} = {a}")
            lines.append(rebind.format(a=a, b=b))
            shapes[v] = shapes[a]
        elif kind == "T":
            lines.append(f"{v} = {a}.T")
            viewed |= {a, v}
            shapes[v] = shapes[a][::-1]
        elif kind == "reshape":
            lines.append(f"{v} = {a}.reshape(-1)")
            viewed |= {a, v}
            shapes[v] = (int(np.prod(shapes[a], dtype=int)),)
        elif kind == "loop":
            steps = draw(st.integers(1, 3))
            lines.append(f"{v} = {a}")
            lines.append(f"for i in range({steps}):")
            lines.append(f"    {v} = np.tanh({v}) * 0.5 + i")
            if draw(st.booleans()):
                lines.append(f"{v} = np.sin({v})")  # rebound right after the loop
            shapes[v] = shapes[a]
        elif kind == "if":
            lines.append(f"if {a}.ndim >= 2 and {a}.shape[0] > 1:")
            lines.append(f"    {v} = {a}.sum(axis=0)")
            lines.append("else:")
            lines.append(f"    {v} = {a} * 2")
            s = shapes[a]
            shapes[v] = s[1:] if len(s) >= 2 and s[0] > 1 else s
        else:  # augmented assignment (or a fallback for 0-d operands)
            lines.append(f"{v} = {a} + 0.0")
            lines.append(f"{v} *= 0.75")
            shapes[v] = shapes[a]
    outs = [f"v{i}" for i in range(max(1, counter - 1), counter + 1)]
    body = "\n".join("    " + ln for ln in lines)
    text = (f"import numpy as np\n\n\ndef prog(x, y, w):\n{body}\n    return {', '.join(outs)}\n"
            + HELPERS)
    return text, (m, n), (n,), (n, k)


# SRCJAX_HYPOTHESIS_EXAMPLES=N sets the random-program tests' count; each failing example prints its source
_NO_SHRINK = {} if written.THOROUGH or written.EXAMPLES else {"phases": [Phase.explicit, Phase.reuse, Phase.generate]}


@written.examples(30)
@given(prog=random_program(), dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 16))
def test_random_programs(module_dir, prog, dtype, seed) -> None:
    text, sx, sy, sw = prog
    note(text)
    mod = load(module_dir, text)
    rng = np.random.default_rng(seed)
    x, y, w = (rng.standard_normal(s).astype(dtype) for s in (sx, sy, sw))
    if dtype == np.float32:
        three_oracles(mod.prog, srcjax.compile(mod.prog), x, y, w, rtol=1e-4, atol=1e-5)
    else:
        three_oracles(mod.prog, srcjax.compile(mod.prog), x, y, w, rtol=1e-10, atol=1e-12)
    # abstract evaluation predicts the outputs without running anything
    shapes = srcjax.eval_shape(mod.prog, x, y, w)
    expected = mod.prog(x, y, w)
    assert [(s.shape, s.dtype) for s in shapes] == [(np.shape(e), np.asarray(e).dtype) for e in expected]


LOSS = """

def loss(x, y, w):
    a, b = prog(x, y, w)
    return np.sum(a * a) + np.sum(np.tanh(b))
"""


@written.examples(6, scale=20, **_NO_SHRINK)  # (thorough: 120, as before)
@given(prog=random_program(), seed=st.integers(0, 2 ** 16))
def test_random_program_gradients(module_dir, prog, seed) -> None:
    """Reverse mode of random programs (loops, static ifs, helpers, slices, stacks, unpacking, ...)
    against jax.grad of the same text with ``np`` bound to jax.numpy, and the derivative source run by
    NumPy; forward mode against the same directional derivative; vjp of the program itself (two
    array outputs) against jax.vjp."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from tests.twins import JAX, jitted
    from tests.twins import jvp as jax_jvp
    text, sx, sy, sw = prog
    text = text + LOSS
    note(text)
    mod = load(module_dir, text)
    rng = np.random.default_rng(seed)
    args = tuple(rng.standard_normal(s) for s in (sx, sy, sw))
    ns: dict[str, Any] = {}
    exec(compile(text.replace("import numpy as np", "import jax.numpy as np"), "<jax twin>", "exec"), ns)
    g = srcjax.grad(mod.loss, argnums=(0, 1, 2))
    ours = g(*args)
    ref = JAX.grad(ns["loss"], argnums=(0, 1, 2))(*args)  # (jax oracles jitted: tests/twins.py)
    via_numpy = srcjax.numpy_function(g)(*args)
    for a, b, c in zip(ours, ref, via_numpy):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(c, np.asarray(b), rtol=1e-9, atol=1e-11)
    tangents = tuple(rng.standard_normal(s) for s in (sx, sy, sw))
    _, t = srcjax.jvp(mod.loss, args, tangents)
    _, jt = jax_jvp(ns["loss"], args, tangents)
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-8, atol=1e-10, err_msg="jvp")
    # vjp of the program itself (two array outputs), random cotangents
    outs, back = srcjax.vjp(mod.prog, *args)
    assert [np.shape(o) for o in outs] == [o.shape for o in jax.eval_shape(ns["prog"], *args)]
    cts = tuple(rng.standard_normal(np.shape(o)) for o in outs)
    jbars = jitted(lambda args, cts: jax.vjp(ns["prog"], *args)[1](cts))(args, cts)
    for a, b in zip(back(cts), jbars):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11, err_msg="vjp")
