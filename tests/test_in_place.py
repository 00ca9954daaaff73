"""``x op= v`` follows NumPy: an array target keeps its dtype and shape (``srcjax/in_place_cast.py``).

NumPy runs ``w *= m`` as ``np.multiply(w, m, out=w)``: float32 ``w`` stays float32 when ``m`` is float64,
float into int is NumPy's ``UFuncTypeError`` and a result of a larger shape its ``ValueError``; a Python
number, a list or a 0-d value is bound again. Oracles: the user's function run by NumPy (value and dtype,
or an error exactly where NumPy raises one), the generated source run by NumPy, jax for derivatives (jax
rebinds, so its values are compared, and dtypes with NumPy's), finite differences through the float64 twin.
"""

from __future__ import annotations

import itertools
import linecache
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax
from srcjax.core import DTypeError, ShapeError, TranspileError
from tests.written import examples

jax.config.update("jax_enable_x64", True)

_COUNT = itertools.count()


def define(src: str, name: str = "f", **names: Any) -> Any:
    """``src`` as a function srcjax can read (its text registered with linecache)."""
    filename = f"<test_in_place #{next(_COUNT)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict[str, Any] = {"np": np, **names}
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def _same(got: Any, want: Any, rtol: float = 1e-6) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype}, NumPy's {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, NumPy's {want.shape}"
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


X32 = np.array([0.5, -1.25, 2.0], np.float32)
M64 = np.array([0.3, 0.7, -1.1])


# -- the statement, against NumPy ---------------------------------------------------------------------
def test_float32_array_updated_by_float64_stays_float32() -> None:
    f = define("def f(x32, m64):\n    w = x32 * 1.0\n    w *= m64\n    w += m64\n    return w\n")
    want = f(X32, M64)
    assert want.dtype == np.float32
    _same(srcjax.jit(f)(X32, M64), want)
    _same(srcjax.numpy_function(f)(X32, M64), want)
    assert srcjax.eval_shape(f, X32, M64).dtype == np.float32
    text = srcjax.source(f)
    assert "w = in_place(w, mul)" in text and "from srcjax.adjoint import in_place" in text, text


def test_a_float32_array_updated_in_a_loop_on_data_stays_float32() -> None:
    """(was refused: "w is float32 and float64 on different paths": the carry changed dtype)"""
    f = define("def f(x32, m64):\n    w = x32 * 1.0\n    while np.max(np.abs(w)) > 0.1:\n        w *= m64\n"
               "    return w\n")
    m = np.array([0.5, 0.25, -0.5])
    _same(srcjax.jit(f)(X32, m), f(X32, m))


def test_int_array_updated_by_float_is_numpys_error_at_the_users_line() -> None:
    f = define("def f(wi, m64):\n    w = wi * 1\n    w += m64\n    return w\n")
    wi = np.arange(3)
    with pytest.raises(TypeError, match="same_kind"):
        f(wi, M64)  # (NumPy's UFuncTypeError)
    with pytest.raises(DTypeError) as e:
        srcjax.jit(f)(wi, M64)
    msg = str(e.value)
    assert ":3:" in msg and "w += m64" in msg and "same_kind" in msg and "int64" in msg, msg
    assert "w = w + v" in msg, msg  # what to write instead


def test_broadcast_to_a_larger_shape_is_numpys_error_at_the_users_line() -> None:
    f = define("def f(x):\n    w = np.ones(3)\n    w += x\n    return w\n")
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        f(x)
    with pytest.raises(ShapeError) as e:
        srcjax.jit(f)(x)
    msg = str(e.value)
    assert ":3:" in msg and "w += x" in msg and "with shape (3,) doesn't match the broadcast shape (2,3)" in msg, msg


def test_static_operands_refused_too() -> None:
    """Both operands known at transpile time: the same error, located."""
    f = define("def f(x):\n    w = np.ones(3)\n    w += np.ones((2, 3))\n    return w + x\n")
    with pytest.raises(TranspileError) as e:
        srcjax.jit(f)(np.ones(3))
    assert ":3:" in str(e.value) and "non-broadcastable" in str(e.value), str(e.value)


def test_numbers_lists_and_scalars_are_bound_again() -> None:
    f = define("def f(x32, m64):\n"
               "    n = 0\n    n += 2\n"  # a Python int
               "    loss = 0.0\n    loss += x32.sum()\n"  # NEP 50: float32
               "    s = np.sum(x32)\n    s += m64\n"  # a NumPy scalar bound again: float64, shape (3,)
               "    xs = [x32]\n    xs += [m64]\n    t = (1,)\n    t += (2,)\n    ys = [m64]\n    xs += ys\n"
               "    return n * loss, s, xs[1] + xs[2], t[1] * x32\n")
    want = f(X32, M64)
    got = srcjax.jit(f)(X32, M64)
    for g, w in zip(got, want):
        _same(g, w)
    text = srcjax.source(f)
    assert "n = n + 2" in text and "xs.append(m64)" in text and "loss = in_place(loss, add)" in text, text
    assert "xs.append(xs_item)" in text and "t = t + (2,)" in text, text  # (a list joined with itself: appends)


def test_a_list_extended_by_a_tuple_and_added_to_by_an_array_as_python_does() -> None:
    # (Python: list += tuple extends the list; list += ndarray is ndarray's add, as list + ndarray)
    f = define("def f(x):\n"
               "    xs = [1.0]\n    xs += (x[0], 2.0)\n    xs += (x[1] ** 2,)\n"
               "    ys = [1.0]\n    ys += x\n"
               "    return np.stack(xs) * x[0], ys\n")
    x = np.array([3.0, 4.0])
    for g, w in zip(srcjax.jit(f)(x), f(x)):
        _same(g, w)
    assert "xs = xs + [getitem, 2.0]" in srcjax.source(f)


@pytest.mark.parametrize("stmt", ["w += 1", "w *= 0.5", "w -= -2", "w /= 4", "w **= 2", "w += SCALE", "w += [h]"])
def test_python_numbers_print_as_before(stmt: str) -> None:
    """A Python number (weak: NEP 50) cannot change an array target's dtype: no in_place is written."""
    target = stmt.split()[0]
    f = define(f"def f(x32):\n    w = x32 * 1.0\n    h = w\n    {stmt}\n    return w\n", SCALE=0.25)
    text = srcjax.source(f)
    assert "in_place" not in text and f"{target} = {target} " in text, text
    if "[" not in stmt:
        _same(srcjax.jit(f)(X32), f(X32))


def test_local_python_numbers_print_as_before() -> None:
    """Names only ever bound to numbers, shapes' entries, ``len()``s and ``range`` counters: no in_place."""
    f = define("def f(x32, m64):\n    n = 0\n    k = x32.shape[0] * 2\n    total = 0\n"
               "    for i in range(3):\n        n += k\n        total += i - len(m64)\n    w = x32 * 1.0\n"
               "    w *= n\n    return w, total\n")
    text = srcjax.source(f)
    assert "in_place" not in text and "n = n + k" in text and "w = w * n" in text, text
    for g, w in zip(srcjax.jit(f)(X32, M64), f(X32, M64)):
        _same(g, w)


@pytest.mark.parametrize("binding", ["k = m64", "def g(k):\n        return k", "k, j = m64[:2]",
                                     "for k in [m64]:\n        pass"])
def test_a_name_also_bound_to_an_array_gets_in_place(binding: str) -> None:
    f = define(f"def f(x32, m64):\n    k = 2\n    {binding}\n    w = x32 * 1.0\n    w *= k\n    return w\n")
    assert "w = in_place(w, mul)" in srcjax.source(f), srcjax.source(f)


def test_element_writes_keep_their_cast() -> None:
    """``a[i] op= v`` is a write into ``a`` (index_update): a's dtype, as before."""
    f = define("def f(x32, m64):\n    w = x32 * 1.0\n    w[1:] *= m64[1:]\n    w[0] += m64[0]\n    return w\n")
    _same(srcjax.jit(f)(X32, M64), f(X32, M64))


# -- random dtypes x operators x shapes -------------------------------------------------------------------
DTYPES = ["bool", "int32", "int64", "float32", "float64", "complex128"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "@"]
SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((3,), (2, 3)), ((2, 1), (2, 3))]
MATMUL_SHAPES = [((3,), (3, 3)), ((2, 3), (3, 3)), ((2, 3), (3,)), ((3, 3), (3, 2))]


def _operand(r: np.random.Generator, shape: tuple[int, ...], dtype: str, op: str, right: bool) -> np.ndarray:
    """Values where NumPy's result does not depend on the platform: positive integer powers and divisors,
    small shifts."""
    if dtype == "bool":
        return r.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        lo, hi = (1, 4) if right and op in ("//", "%", "**", "<<", ">>") else (-3, 4)
        if not right and op == "**":
            lo = 1
        return r.integers(lo, hi, size=shape).astype(dtype)
    v = r.uniform(0.5, 2.0, size=shape) * r.choice([-1.0, 1.0], size=shape) if op != "**" else \
        r.uniform(0.5, 1.5, size=shape)
    if dtype.startswith("complex"):
        v = v + 1j * r.uniform(-1.0, 1.0, size=shape)
    return v.astype(dtype)


def _numpy(f: Any, a: Any, b: Any) -> tuple[Any, BaseException | None]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return f(a, b), None
        except Exception as e:  # (NumPy's own refusal: UFuncTypeError, ValueError, TypeError)
            return None, e


@examples(30)
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from(OPS), st.integers(0, 3), st.integers(0, 99))
def test_random_in_place_statements_follow_numpy(da: str, db: str, op: str, k: int, seed: int) -> None:
    shapes = MATMUL_SHAPES if op == "@" else SHAPES
    sa, sb = shapes[k % len(shapes)]
    r = np.random.default_rng(seed)
    a, b = _operand(r, sa, da, op, False), _operand(r, sb, db, op, True)
    f = define(f"def f(a, b):\n    w = np.copy(a)\n    w {op}= b\n    return w\n")
    want, error = _numpy(f, a, b)
    where = f"w: {da}{list(sa)} {op}= {db}{list(sb)}"
    if error is not None:
        with pytest.raises(TranspileError) as e:
            srcjax.jit(f)(a, b)
        assert ":3:" in str(e.value), f"{where}: NumPy raises {error!r}; srcjax's error is not located: {e.value}"
        return
    try:
        got = srcjax.jit(f)(a, b)
    except TranspileError as e:
        raise AssertionError(f"{where}: NumPy gives {want.dtype}{list(want.shape)}, srcjax refuses: {e}") from None
    rtol = 1e-5 if "float32" in (da, db) or op == "**" else 1e-12
    try:
        _same(got, want, rtol)
        _same(srcjax.numpy_function(f)(a, b), want, rtol)
    except AssertionError as e:
        raise AssertionError(f"{where}: {e}") from None


SCALARS = [2, 3.5, True, 1.5j, np.float64(0.5), np.int32(2)]


@examples(20)
@given(st.sampled_from(DTYPES), st.sampled_from(SCALARS), st.sampled_from(OPS[:-1]), st.integers(0, 99))
def test_random_scalar_arguments_follow_numpy(da: str, b: Any, op: str, seed: int) -> None:
    """A number passed as an argument (a Python number is weak: NEP 50; a NumPy scalar is not)."""
    a = _operand(np.random.default_rng(seed), (2, 3), da, op, False)
    f = define(f"def f(a, b):\n    w = np.copy(a)\n    w {op}= b\n    return w\n")
    want, error = _numpy(f, a, b)
    where = f"w: {da}[2, 3] {op}= {b!r}"
    if error is not None:
        with pytest.raises(TranspileError) as e:
            srcjax.jit(f)(a, b)
        assert ":3:" in str(e.value), f"{where}: NumPy raises {error!r}; srcjax's error is not located: {e.value}"
        return
    try:
        got = srcjax.jit(f)(a, b)
    except TranspileError as e:
        raise AssertionError(f"{where}: NumPy gives {want.dtype}{list(want.shape)}, srcjax refuses: {e}") from None
    try:
        _same(got, want, 1e-5 if da == "float32" else 1e-12)
    except AssertionError as e:
        raise AssertionError(f"{where}: {e}") from None


# -- derivatives and vmap: the cast of the tangent / cotangent ------------------------------------------------
LOOP = ("def f(x32, m64):\n    w = x32 * 1.0\n    for i in range(2):\n        w *= np.sin(m64) + w\n"
        "    w -= m64 * w\n    return np.sum(w * w)\n")


def test_derivatives_and_vmap_follow_numpys_dtypes_and_jaxs_values() -> None:
    f = define(LOOP)
    jf = define(LOOP, np=jnp)
    x, m = X32, M64
    want = f(x, m)
    assert want.dtype == np.float32
    _same(srcjax.jit(f)(x, m), want, 1e-5)
    ref_g = jax.jit(jax.grad(jf))(x, m)
    ref_h = jax.jit(jax.hessian(jf))(x, m)
    ref_jf = jax.jit(jax.jacfwd(jf, argnums=1))(x, m)
    g = srcjax.grad(f)(x, m)
    assert g.dtype == np.float32 == ref_g.dtype
    np.testing.assert_allclose(g, ref_g, rtol=2e-4)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.grad(f))(x, m), ref_g, rtol=2e-4)
    h = srcjax.hessian(f)(x, m)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, ref_h, rtol=2e-3, atol=1e-4)
    jm = srcjax.jacfwd(f, argnums=1)(x, m)
    assert jm.dtype == np.float32  # (a float32 output's derivative: float32, as NumPy's output)
    np.testing.assert_allclose(jm, ref_jf, rtol=2e-4, atol=1e-5)
    xs = np.stack([x, x * 0.5, -x])
    v = srcjax.vmap(f, in_axes=(0, None))(xs, m)
    _same(v, np.array([f(e, m) for e in xs]), 1e-5)
    vg = srcjax.vmap(srcjax.grad(f), in_axes=(0, None))(xs, m)
    assert vg.dtype == np.float32
    np.testing.assert_allclose(vg, np.stack([g] + [srcjax.grad(f)(e, m) for e in xs[1:]]), rtol=1e-5)
    ms = np.stack([m, m * 2.0])
    vm = srcjax.vmap(f, in_axes=(None, 0))(x, ms)
    _same(vm, np.array([f(x, e) for e in ms]), 1e-5)


def test_gradient_of_float64_program_matches_finite_differences() -> None:
    f = define(LOOP)
    x, m = X32.astype(np.float64), M64
    g = srcjax.grad(f, argnums=(0, 1))(x, m)
    for k, a in enumerate((x, m)):
        fd = np.zeros_like(a)
        for i in range(a.size):
            e = np.zeros_like(a)
            e[i] = 1e-6
            plus = (x + e, m) if k == 0 else (x, m + e)
            minus = (x - e, m) if k == 0 else (x, m - e)
            fd[i] = (f(*plus) - f(*minus)) / 2e-6
        np.testing.assert_allclose(g[k], fd, rtol=1e-6, atol=1e-8)


def test_derivative_source_shows_the_cast() -> None:
    f = define(LOOP)
    grad_text = srcjax.source(srcjax.grad(f))
    assert "in_place(w, " in grad_text, grad_text
    jvp_text = srcjax.source(srcjax.jacfwd(f))
    assert "in_place(" in jvp_text, jvp_text
    vmap_text = srcjax.source(srcjax.vmap(f, in_axes=(0, None)))
    assert "axes=1)" in vmap_text, vmap_text
