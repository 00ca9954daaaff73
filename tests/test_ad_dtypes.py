"""Derivatives keep dtypes as JAX does: a cotangent has its primal's dtype, a tangent its result's.

The adjoint of an implicit upcast is a downcast: ``grad`` of ``np.sum(w * np.arange(3))`` for
a float32 ``w`` is float32 although the product is float64, and so is every intermediate
cotangent (each has its own primal's dtype, as JAX's per-primitive rules give). Checked:

- every derivative rule (the cases of tests/test_ad_rules.py) with float32/float64 mixes, by
  the generated source run by NumPy and by abstract evaluation (what XLA returns);
- random programs over random dtype mixes (float32, float64, integer arrays, Python scalars):
  dtypes against the primals, values against jax;
- containers with mixed leaves, jacfwd/jacrev/hessian, Python-scalar primals, float16;
- tangents and cotangents passed in must have their primal's dtype (JAX refuses others).
"""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import srcjax
from srcjax.autodiff import _wrap
from tests import test_ad_rules as R
from tests.twins import JAX
from tests.written import numpy_and_jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def dtypes(v: Any) -> list[np.dtype]:
    return [np.asarray(x).dtype for x in jax.tree_util.tree_leaves(v)]


# -- the example --------------------------------------------------------------------------
def weighted(w):
    return np.sum(w * np.arange(3))


def test_gradient_of_an_implicit_upcast_is_downcast() -> None:
    """Regression (issue 13.3): w * np.arange(3) is float64; w's gradient is float32, as jax's."""
    w = np.ones(3, np.float32)
    g = srcjax.grad(weighted)
    for ours in (g(w), srcjax.numpy_function(g)(w)):
        assert np.asarray(ours).dtype == F32
        np.testing.assert_array_equal(ours, [0.0, 1.0, 2.0])
    assert JAX.grad(lambda w: jnp.sum(w * np.arange(3.0)))(w).dtype == F32  # (the convention we follow)


def chain(w, x):
    h = w * 2.0  # float32 (a Python scalar is weak)
    z = h * x  # float64
    s = np.sum(z, dtype=np.float64) + np.mean(np.tanh(h), dtype=np.float64)
    return s * np.sqrt(np.sum(h * h))


def test_intermediate_cotangents_have_their_primals_dtype() -> None:
    """Each cotangent is cast where its primal was upcast, so the float32 intermediate h gets a
    float32 cotangent (not a float64 one rounded at the parameter): read from the generated
    gradient's locals, run by NumPy."""
    w, x = np.linspace(0.5, 1.5, 4).astype(np.float32), np.linspace(-1.0, 1.0, 4)
    g = srcjax.grad(chain, argnums=(0, 1))
    seen: dict[str, np.dtype] = {}

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "return" and frame.f_code.co_name == "chain_grad":
            seen.update({k: np.asarray(v).dtype for k, v in frame.f_locals.items() if k.endswith("_bar")})
        return tracer

    sys.settrace(tracer)
    try:
        grads = srcjax.numpy_function(g)(w, x)
    finally:
        sys.settrace(None)
    assert dtypes(grads) == dtypes(g(w, x)) == [F32, F64]
    assert seen["h_bar"] == F32 and seen["z_bar"] == F64, seen


def test_reduction_dtype_argument() -> None:
    def f(x):
        return np.sum(x, dtype=np.float64) + np.mean(x * x, dtype=np.float64) + np.cumsum(x, dtype=np.float64)[-1]

    x = np.linspace(0.5, 1.5, 3).astype(np.float32)
    g = srcjax.grad(f)(x)
    assert g.dtype == F32
    np.testing.assert_allclose(g, JAX.grad(lambda x: jnp.sum(x, dtype=jnp.float64) + jnp.mean(x * x, dtype=jnp.float64)
                                           + jnp.cumsum(x, dtype=jnp.float64)[-1])(x), rtol=1e-6)
    out, t = srcjax.jvp(f, (x,), (np.ones(3, np.float32),))
    assert out.dtype == t.dtype == F64


# -- every rule, float32/float64 mixes ---------------------------------------------------------------
def _variants(n: int) -> list[tuple[np.dtype, ...]]:
    if n == 1:
        return [(F32,)]
    return [(F32,) + (F64,) * (n - 1), (F64,) + (F32,) * (n - 1)]


RULE_CASES = [pytest.param(c, v, id=f"{c.id}:{'/'.join(d.name[5:] for d in v)}", marks=c.marks)
              for c in R.CASES for v in _variants(len(c.args))]


@pytest.mark.parametrize("c, variant", RULE_CASES)
def test_every_rule_keeps_dtypes(c: Any, variant: tuple[np.dtype, ...]) -> None:
    """grad's cotangents have the primals' dtypes, jvp's tangents the outputs' (by the generated
    source run by NumPy and by abstract evaluation: no compilation)."""
    p = R.programs(c)
    args = tuple(np.asarray(a, dtype=d) for a, d in zip(c.args, variant))
    weights = tuple(np.asarray(w, dtype=F32) for w in p.weights)
    nums = tuple(range(len(args)))
    g = srcjax.grad(p.f, argnums=nums)
    want = [a.dtype for a in args]
    with np.errstate(all="ignore"):
        assert dtypes(srcjax.numpy_function(g)(*args, *weights)) == want, "grad, run by NumPy"
    assert [s.dtype for s in srcjax.eval_shape(g, *args, *weights)] == want, "grad, abstract evaluation"
    jv = _wrap(p.g, "jvp", nums, False)
    tangents = tuple(np.ones_like(a) for a in args)
    out, t = srcjax.eval_shape(jv, *args, *tangents)
    assert [s.dtype for s in jax.tree_util.tree_leaves(t)] == [s.dtype for s in jax.tree_util.tree_leaves(out)]


# -- random programs over random dtype mixes -----------------------------------------------------------
_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1
UNARY = ["np.tanh({})", "np.sin({})", "np.exp(-{} * {})", "np.log1p({} * {})", "np.sqrt(1.0 + {} * {})",
         "np.abs({})", "-{}", "np.square({})", "np.exp2({} * 0.5)", "np.log2(2.0 + {} * {})"]
BINARY = ["{} + {}", "{} - {}", "{} * {}", "{} / (1.0 + {} * {})", "np.maximum({}, {})", "np.minimum({}, {})",
          "np.where({} > 0, {}, 0.5)", "np.arctan2({}, 1.5 + {} * {})", "np.hypot({}, {})"]
CONSTS = ["np.arange(4)", "np.arange(4.0)", "(np.arange(4) % 2 == 0)", "np.float64(0.5)", "0.5", "2", "3.0",
          "np.ones(4, np.float32)", "np.ones(4, np.int32)"]


@st.composite
def dtype_program(draw: Any) -> tuple[str, list[np.dtype]]:
    """``def f(a, b, c)`` over vectors of length 4 of random float dtypes, mixing them with
    integer and boolean arrays, float64 and float32 constants and Python scalars; a scalar
    float output (``np.sum`` of some values, some with ``dtype=``)."""
    kinds = [draw(st.sampled_from([F32, F64])) for _ in range(3)]
    names = ["a", "b", "c"]
    lines: list[str] = []
    for k in range(draw(st.integers(2, 7))):
        v = f"v{k}"
        op = draw(st.sampled_from(["unary", "binary", "binary", "const", "cast", "reduce", "dot"]))
        x = draw(st.sampled_from(names))
        y = draw(st.sampled_from(names))
        if op == "unary":
            e = draw(st.sampled_from(UNARY))
            lines.append(f"{v} = " + e.format(*([x] * e.count("{}"))))
        elif op == "binary":
            e = draw(st.sampled_from(BINARY))
            lines.append(f"{v} = " + e.format(*([x] + [y] * (e.count("{}") - 1))))
        elif op == "const":
            c = draw(st.sampled_from(CONSTS))
            lines.append(f"{v} = {x} * {c}" if draw(st.booleans()) else f"{v} = {c} + {x}")
        elif op == "cast":
            lines.append(f"{v} = {x}.astype(np.{draw(st.sampled_from(['float32', 'float64']))}) * {y}")
        elif op == "reduce":
            dt = draw(st.sampled_from(["", ", dtype=np.float64"]))
            lines.append(f"{v} = {x} * np.sum({y}{dt}) + np.mean({x}{dt})")
        else:
            lines.append(f"{v} = np.tanh({x} @ {y}) * {x}")
        names.append(v)
    outs = draw(st.lists(st.sampled_from(names[3:]), min_size=1, max_size=3, unique=True))
    total = " + ".join(f"np.sum({o})" for o in outs)
    body = "\n".join("    " + ln for ln in lines)
    return f"import numpy as np\n\n\ndef f(a, b, c):\n{body}\n    return {total}\n", kinds


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory: Any) -> Any:
    d = tmp_path_factory.mktemp("dtype_programs")
    sys.path.insert(0, str(d))
    yield d
    sys.path.remove(str(d))


def _close(ours: Any, ref: Any, dtype: np.dtype, what: str) -> None:
    tol = dict(rtol=2e-4, atol=2e-5) if dtype != F64 else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(ref, np.float64), err_msg=what, **tol)


@settings(max_examples=6 * _SCALE, deadline=None, derandomize=_SCALE == 1,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(prog=dtype_program(), seed=st.integers(0, 2 ** 16))
# found by the thorough sample: float64 arguments, a float32 cast inside (jvp differs at 1e-8 relative)
@example(prog=("import numpy as np\n\n\ndef f(a, b, c):\n    v0 = np.tanh(a)\n    v1 = a.astype(np.float32) * a\n"
               "    return np.sum(v1)\n", [F64, F64, F64]), seed=0)
def test_random_programs_keep_dtypes(program_dir: Any, prog: tuple[str, list[np.dtype]], seed: int) -> None:
    """grad, vjp and jvp of random programs mixing dtypes: every gradient leaf has its primal's dtype
    (generated source run by NumPy and XLA), every tangent its output's, and values agree with jax
    (float32 operands see jax's own promotion, e.g. float32 * int32 is float32 there: a float32
    tolerance whenever float32 is involved)."""
    text, kinds = prog
    f, f_jax = numpy_and_jax(program_dir, text, "dtypes")
    r = np.random.default_rng(seed)
    args = tuple(np.asarray(r.uniform(0.2, 1.2, 4), dtype=k) for k in kinds)
    note = f"\n{text}dtypes: {[k.name for k in kinds]}"
    # float32 anywhere (an argument, a cast, a constant) rounds at float32: a float32 tolerance
    loose = F32 if F32 in kinds or "float32" in text else F64
    with np.errstate(all="ignore"):
        expected = f(*args)
    if not np.all(np.isfinite(expected)):
        return
    try:
        g = srcjax.grad(f, argnums=(0, 1, 2))
        ours = g(*args)
        assert dtypes(ours) == kinds, "grad"
        with np.errstate(all="ignore"):
            assert dtypes(srcjax.numpy_function(g)(*args)) == kinds, "grad, run by NumPy"
        ref = JAX.grad(f_jax, argnums=(0, 1, 2))(*args)
        assert dtypes(ref) == kinds, "jax's grad"
        for k in range(3):
            _close(ours[k], ref[k], loose, f"grad[{k}]")
        out, vjp_fn = srcjax.vjp(f, *args)
        bars = vjp_fn(np.ones((), np.asarray(out).dtype))
        assert dtypes(bars) == kinds, "vjp"
        for k in range(3):
            _close(bars[k], ours[k], loose, f"vjp[{k}]")
        tangents = tuple(np.asarray(r.normal(size=4), dtype=k) for k in kinds)
        out, t = srcjax.jvp(f, args, tangents)
        assert np.asarray(t).dtype == np.asarray(out).dtype, "jvp: the tangent has the output's dtype"
        _close(t, sum(float(np.sum(np.asarray(ours[k], np.float64) * tangents[k])) for k in range(3)), loose, "jvp")
    except AssertionError as e:
        raise AssertionError(f"{e}{note}") from None


# -- containers, Jacobians, Python scalars, float16 ---------------------------------------------------
class Pair(NamedTuple):
    a: Any
    b: Any


def mixed_containers(p, d, t):
    return np.sum(p.a * p.b) + np.sum(d["u"] * d["v"] * np.arange(3)) + np.sum(t[0] * np.tanh(t[1]))


def test_container_leaves_keep_their_dtypes() -> None:
    x32, x64 = np.linspace(0.1, 0.3, 3).astype(np.float32), np.linspace(-1.0, 1.0, 3)
    args = (Pair(x32, x64), {"u": x32, "v": x64}, (x64, x32))
    want = [F32, F64, F32, F64, F64, F32]
    g = srcjax.grad(mixed_containers, argnums=(0, 1, 2))(*args)
    assert dtypes(g) == want and type(g[0]) is Pair
    twin = lambda p, d, t: (jnp.sum(p.a * p.b) + jnp.sum(d["u"] * d["v"] * np.arange(3))  # noqa: E731
                            + jnp.sum(t[0] * jnp.tanh(t[1])))
    ref = JAX.grad(twin, argnums=(0, 1, 2))(*args)
    assert dtypes(ref) == want
    for o, e in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(o, e, rtol=1e-6)
    out, vjp_fn = srcjax.vjp(mixed_containers, *args)
    assert dtypes(vjp_fn(1.0)) == want
    _, t = srcjax.jvp(mixed_containers, args, args)
    assert np.asarray(t).dtype == np.asarray(out).dtype == F64


def scaled(x):
    return x * np.linspace(1.0, 2.0, 3)  # float64 result


def test_jacobians_follow_jax() -> None:
    """jacfwd is built from tangents (the output's dtype), jacrev from cotangents (the input's)."""
    x = np.linspace(0.5, 1.0, 3).astype(np.float32)
    twin = lambda x: x * jnp.linspace(1.0, 2.0, 3)  # noqa: E731
    assert srcjax.jacfwd(scaled)(x).dtype == JAX.jacfwd(twin)(x).dtype == F64
    assert srcjax.jacrev(scaled)(x).dtype == JAX.jacrev(twin)(x).dtype == F32
    h = srcjax.hessian(lambda x: np.sum(scaled(x) ** 3))(x)
    assert h.dtype == JAX.hessian(lambda x: jnp.sum(twin(x) ** 3))(x).dtype == F32


def test_python_scalars_stay_weak() -> None:
    """A Python float operand does not upcast float32 (NEP 50), in the derivative either."""
    def f(w):
        return np.sum(np.exp2(w * 0.5) + np.log10(1.0 + w * w) + 2 * w ** 3)

    w = np.linspace(0.5, 1.5, 3).astype(np.float32)
    assert srcjax.grad(f)(w).dtype == F32
    assert "unbroadcast" not in srcjax.source(srcjax.grad(lambda w: np.sum(w * 2.0)))  # no cast to write


def test_python_scalar_primal() -> None:
    """grad with respect to a Python float is float64 (its dtype), whatever it multiplies."""
    w = np.ones(3, np.float32)

    def f(s):
        return np.sum(s * w)

    g = srcjax.grad(f)(2.0)
    assert np.asarray(g).dtype == F64 == JAX.grad(lambda s: jnp.sum(s * w))(2.0).dtype
    assert float(g) == 3.0


def test_float16() -> None:
    def f(x):
        return np.sum(np.tanh(x) * x * 0.5)

    x = np.linspace(-1.0, 1.0, 4).astype(np.float16)
    g = srcjax.grad(f)(x)
    assert g.dtype == np.float16
    np.testing.assert_allclose(g, JAX.grad(lambda x: jnp.sum(jnp.tanh(x) * x * 0.5))(x), rtol=1e-2, atol=1e-3)


def test_tangents_and_cotangents_must_have_their_primals_dtype() -> None:
    """As JAX: a float64 tangent for a float32 primal is refused (with a hint); Python numbers take
    the primal's dtype."""
    x = np.ones(3, np.float32)
    with pytest.raises(srcjax.ArgumentError, match="has dtype float64 but its primal has dtype float32") as ei:
        srcjax.jvp(scaled, (x,), (np.ones(3),))
    assert "astype(np.float32)" in (ei.value.hint or "")
    out, t = srcjax.jvp(lambda x: x * 2.0, (x,), (np.ones(3, np.float32),))
    assert t.dtype == F32
    _, t = srcjax.jvp(lambda s: s * x, (2.0,), (1.0,))
    assert t.dtype == F32
    out, vjp_fn = srcjax.vjp(scaled, x)
    with pytest.raises(srcjax.ArgumentError, match="has dtype float32 but its primal has dtype float64"):
        vjp_fn(np.ones(3, np.float32))
    assert vjp_fn(np.ones(3))[0].dtype == F32
