"""Statements that rebind a name they read (``y = e * y``), in every transformation.

Forward mode writes each tangent right after its primal statement; a rule template reads the
statement's operands (and ``out``), so when the statement rebinds one of them the tangent must
not read the new value (issue 13, item 1). Reverse mode reads primals in the adjoint sweep,
where the tape has given them back. Each program here rebinds a name somewhere (straight code,
after a loop or a branch on data, inside loop bodies, tuple targets, rules that read ``out``,
helpers, custom_jvp rules) and is checked in jvp, jacfwd, grad, vjp, hessian and grad of grad
against jax running the same source with ``jax.numpy``.
"""

import ast
import inspect
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from srcjax.frontend.program import Program
from srcjax.transforms import ad
from srcjax.transforms.simplify import simplify_source
from tests import written
from tests.fd import central_fd
from tests.twins import JAX
from tests.written import numpy_and_jax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax reads their source) ---------------------------------------

def scale(e, y):
    y = e * y  # a name rebound from itself
    return y


def loop3(e):
    y = 1.0
    for _ in range(3):
        y = e * y
    return y


def straight(x, w):
    x = x * w
    w = np.sin(w) + x
    x = x / (1.0 + w * w)
    return np.sum(x * w)


def after_while(x):
    z = x * 1.0
    while np.sum(z) < 3.0:
        z = z + 0.5
    z = np.sin(z)  # sin's rule reads its operand: the value before this line
    return np.sum(z * x)


def after_counted_while(x):
    z = x * 1.0
    j = 0
    while j < 3 and np.mean(z) < 2.0:
        z = z + 0.5 * np.cos(x)
        j = j + 1
    z = z * z
    return np.sum(z)


def after_for(x):
    z = x
    for k in range(3):
        z = z * x + k * 0.1
    z = np.tanh(z)
    return np.sum(z)


def in_branch(e, vy):
    if np.sum(vy) > 0.0:
        vy = -e * vy
    else:
        vy = e * vy
    return np.sum(vy * vy)


def in_loop_body(x):
    y = x * 1.0
    for _ in range(3):
        y = np.sin(y)
        y = y * x
    return np.sum(y)


def in_while_body(x):
    y = x * 1.0
    while np.sum(y * y) < 6.0:
        y = np.exp(y)
        y = y + 0.1
    return np.sum(y)


def tuple_targets(x):
    a = x
    b = x * 2.0
    a, b = b * a, a
    a, b = b, a  # a swap reads both names it rebinds
    a, b = np.sin(b) * a, b
    return np.sum(a * b)


def split_rebinds(x):
    x, y = np.split(x, 2)  # a tuple target from an operation that reads the name
    return np.sum(x * np.cos(y))


def rules_reading_out(x):
    x = np.tanh(x)
    x = np.exp(x)
    x = np.sqrt(x)
    x = 1.0 / x
    return np.sum(x)


def index_assign(x):
    y = x * 1.0
    y[0] = y[0] * y[1]
    y[1:] = np.sin(y[1:]) * y[0]
    return np.sum(y * y)


def appended(x):
    ys = []
    y = x
    for _ in range(3):
        ys.append(y)
        y = np.cos(y) * x
    return np.sum((ys[0] + ys[1] * ys[2]) * y)


def _step(e, y):
    y = e * y
    y = np.tanh(y)
    return y


def through_helper(e, x):
    x = _step(e, x)  # a call rebinding its argument, in a helper that rebinds its parameter
    for _ in range(2):
        x = _step(e, x)
    return np.sum(x)


@srcjax.custom_jvp
def sin_c(x):
    return np.sin(x)


@sin_c.defjvp
def sin_c_jvp(primals, tangents):
    x, = primals
    t, = tangents
    t = t * np.cos(x)  # the rule rebinds its names too (differentiated again for hessian)
    x = np.sin(x)
    return x, t


def with_custom_jvp(x):
    x = sin_c(x)
    x = sin_c(x) * x
    return np.sum(x)


def swap_shapes(x, w):
    a = x * 1.0
    b = w * 1.0
    s = np.sum(b)
    a, b = b, a  # the new `b` gets no cotangent: its zeros have the new b's shape, not the old one's
    return np.sum(a * a) + s


@srcjax.custom_vjp
def sq(x):
    return np.sin(x) * x


def sq_fwd(x):
    return np.sin(x) * x, (x, np.cos(x))


def sq_bwd(res, g):
    x, c = res
    return (g * (np.sin(x) + x * c),)


sq.defvjp(sq_fwd, sq_bwd)


def custom_vjp_in_branch(x):
    x = x * 2.0
    if np.sum(x) > 0.0:
        x = sq(x)  # rebinds x inside an `if` on data: its old value is saved in the branch, not on the tape
    else:
        x = x * 3.0
    return np.sum(x * x)


def custom_vjp_in_loop_branch(x):
    for _ in range(2):
        if np.sum(x) > 0.0:
            x = sq(x)
        x = x * 1.5
    return np.sum(x * x)


def fz_a(x, y, z):  # x f64[5,4], y f64[4,4], z f64[5,4]
    j = 0
    while j < 3 and z.mean() < 3.0:
        z = z + 0.5 * (1.5 + np.cos(np.exp(-x * x)))
        j = j + 1
    if np.mean(y) < -0.5:
        z = np.sin(z - x)
    else:
        z = np.sin(z)
    v1 = z[:, -2:]
    v2 = z.T
    if np.max(z) > 0.5:
        y = y + y + 0.1
    else:
        y = y * y * np.tanh(y)
    return np.sum(y) + 0.6 * np.sum(v1 * v1) + 0.1 * np.sum(np.tanh(v2))


def fz_b(x, y, z):  # x f64[], y f64[3], z f64[2,3]
    j = 0
    while j < 2:
        v1 = 0.5 * (1.0 / (1.0 + y * y)) - y  # noqa: F841  (unused loop local)
        y = y / (1.0 + x * x)
        j += 1
    v2 = z @ y
    v3 = x - -y
    v3 = -v3 + v3
    if v3.mean() < 0.5:
        v4 = np.tanh(v2)  # noqa: F841
    else:
        v4 = np.cos(np.log(1.0 + np.tanh(v2) * np.tanh(v2)))  # noqa: F841
    v5 = np.cos(v3) * -x * 0.25
    v8 = np.reshape(v5, (3, 1))
    if v2.mean() > -1.0:
        v8 = np.sin(v8)
    j = 0
    while j < 3 and v8.sum() < 0.0:
        v8 = v8 + 0.3 * np.exp(np.sin(v8))
        j += 1
    v10 = np.sin(z) + np.sum(v5, axis=0, keepdims=True)
    return np.sum(np.tanh(z.T).mean(axis=-2)) - 0.9 * v10.sum() + 0.5 * np.sum(v8)


# -- oracles ------------------------------------------------------------------------------------

_HELPERS = [_step, sin_c, sin_c_jvp, sq, sq_fwd, sq_bwd]


def index_assign_jax(x):
    y = x * 1.0
    y = y.at[0].set(y[0] * y[1])
    y = y.at[1:].set(jnp.sin(y[1:]) * y[0])
    return jnp.sum(y * y)


def jax_twin(fn):
    """``fn``'s source (and its helpers') run with ``np`` as jax.numpy; srcjax.custom_jvp as jax's."""
    if fn is index_assign:
        return index_assign_jax
    ns = {"np": jnp, "srcjax": types.SimpleNamespace(custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp)}
    for h in [*_HELPERS, fn]:
        src = inspect.getsource(getattr(h, "fun", h))
        exec(compile(src, __file__, "exec"), ns)
    ns["sq"].defvjp(ns["sq_fwd"], ns["sq_bwd"])
    return ns[fn.__name__]


def _close(ours, ref, rtol=1e-9, atol=1e-10):
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def check_all(fn, args, argnum=0, max_iters=None):
    """jvp (every argument), jacfwd, grad, vjp, hessian (and grad of grad for a scalar) vs jax."""
    jf = jax_twin(fn)
    r = np.random.default_rng(3)
    tangents = tuple(r.normal(size=np.shape(a)) if np.ndim(a) else float(r.normal()) for a in args)
    _close(srcjax.jvp(fn, args, tangents), JAX.jvp(jf, args, tangents))
    jac = srcjax.jacfwd(fn, argnums=argnum)
    _close(jac(*args), JAX.jacfwd(jf, argnums=argnum)(*args))
    np_args = [np.float64(a) if np.ndim(a) == 0 else a for a in args]  # (a float has no .dtype)
    _close(srcjax.numpy_function(jac)(*np_args), JAX.jacfwd(jf, argnums=argnum)(*args))  # the source, by NumPy
    _close(srcjax.grad(fn, argnum, max_iters=max_iters)(*args), JAX.grad(jf, argnum)(*args))
    _, vjp_fn = srcjax.vjp(fn, *args, max_iters=max_iters)
    _close(vjp_fn(1.0), jax.vjp(jf, *args)[1](1.0))
    _close(srcjax.hessian(fn, argnum, max_iters=max_iters)(*args), JAX.hessian(jf, argnum)(*args))
    if np.ndim(args[argnum]) == 0:
        gg = srcjax.grad(srcjax.grad(fn, argnum, max_iters=max_iters), argnum)
        _close(gg(*args), JAX.grad(jax.grad(jf, argnum), argnum)(*args))


rng = np.random.default_rng(13)
v3 = rng.normal(size=3)


# -- the examples -------------------------------------------------------------------------

def test_scale_jvp_reads_the_value_before_the_rebinding():
    out, t = srcjax.jvp(scale, (0.7, -1.5), (1.0, 0.0))
    assert float(out) == pytest.approx(-1.05)
    assert float(t) == pytest.approx(-1.5)  # d(e*y)/de = y, the old y (was -1.05: the new one)
    check_all(scale, (0.7, -1.5))


def test_scale_jvp_source_names_the_result_first():
    text = srcjax.source(srcjax.jacfwd(scale))
    assert "y_dot = (e_dot * y) + (e * y_dot)" not in text
    # the tangent of `mul = e * y` (batched over the basis: e_dot has a batch axis), then `y = mul`
    assert "mul_dot = batch_align(e_dot, y) * y" in text


def test_loop3_every_forward_mode_transformation():
    assert float(srcjax.jvp(loop3, (1.5,), (1.0,))[1]) == pytest.approx(6.75)
    assert float(srcjax.jacfwd(loop3)(1.5)) == pytest.approx(6.75)
    assert float(srcjax.hessian(loop3)(1.5)) == pytest.approx(9.0)
    assert float(srcjax.grad(srcjax.grad(loop3))(1.5)) == pytest.approx(9.0)
    assert float(srcjax.grad(loop3)(1.5)) == pytest.approx(6.75)
    check_all(loop3, (1.5,))


@pytest.mark.parametrize("fn", [fz_a, fz_b], ids=lambda f: f.__name__)
def test_regression_programs_jvp_wrt_x(fn):
    r = np.random.default_rng(0)
    args = (r.normal(size=(5, 4)), r.normal(size=(4, 4)), r.normal(size=(5, 4))) if fn is fz_a else \
        (0.3, r.normal(size=3), r.normal(size=(2, 3)))
    tx = r.normal(size=np.shape(args[0])) if np.ndim(args[0]) else 1.0
    zeros = tuple(np.zeros_like(a) for a in args[1:])
    out, t = srcjax.jvp(fn, args, (tx, *zeros))
    ref_out, ref_t = JAX.jvp(jax_twin(fn), args, (tx, *zeros))
    _close((out, t), (ref_out, ref_t))
    fd = np.sum(central_fd(fn, args, 0) * tx)
    np.testing.assert_allclose(float(t), fd, rtol=1e-5, atol=1e-6)
    _close(srcjax.jacfwd(fn)(*args), JAX.jacfwd(jax_twin(fn))(*args))


@pytest.mark.parametrize("fn", [fz_a, fz_b], ids=lambda f: f.__name__)
def test_regression_programs_second_order(fn):
    r = np.random.default_rng(1)
    args = (r.normal(size=(5, 4)), r.normal(size=(4, 4)), r.normal(size=(5, 4))) if fn is fz_a else \
        (0.3, r.normal(size=3), r.normal(size=(2, 3)))
    want = JAX.hessian(jax_twin(fn))(*args)  # (one oracle for both checks)
    _close(srcjax.hessian(fn, max_iters=5)(*args), want, rtol=1e-8)
    # reverse over reverse (it met a call of zeros_like inside an `if` on data: KeyError: None)
    _close(srcjax.jacrev(srcjax.grad(fn, max_iters=5), max_iters=5)(*args), want, rtol=1e-8)


# -- the class: a name rebound from itself, everywhere ------------------------------------------------

CASES = [
    (straight, (v3, rng.normal(size=3)), None),
    (after_while, (rng.uniform(-0.5, 0.5, size=3),), 20),
    (after_counted_while, (v3,), None),
    (after_for, (v3,), None),
    (in_branch, (0.7, v3), None),
    (in_branch, (0.7, -np.abs(v3)), None),
    (in_loop_body, (v3,), None),
    (in_while_body, (rng.uniform(0.1, 0.3, size=3),), 10),
    (tuple_targets, (v3,), None),
    (split_rebinds, (rng.normal(size=4),), None),
    (rules_reading_out, (v3,), None),
    (index_assign, (v3,), None),
    (appended, (v3,), None),
    (through_helper, (0.8, v3), None),
    (with_custom_jvp, (v3,), None),
    (swap_shapes, (v3, rng.normal(size=2)), None),
]


@pytest.mark.parametrize("fn, args, max_iters", CASES, ids=[c[0].__name__ + f"-{k}" for k, c in enumerate(CASES)])
def test_rebinding_in_every_mode(fn, args, max_iters):
    check_all(fn, args, max_iters=max_iters)


@pytest.mark.parametrize("fn, args", [(scale, (0.7, -1.5)), (loop3, (1.5,)), (straight, (v3, v3 * 0.5)),
                                      (in_branch, (0.7, v3)), (in_loop_body, (v3,)), (tuple_targets, (v3,)),
                                      (rules_reading_out, (v3,)), (swap_shapes, (v3, v3[:2]))],
                         ids=lambda a: getattr(a, "__name__", ""))
def test_rebinding_reverse_over_reverse(fn, args):
    # (not through a custom_jvp: jacrev(grad(f)) of one gives zeros, rebinding or not, a bug of its own)
    _close(srcjax.jacrev(srcjax.grad(fn))(*args), JAX.jacrev(jax.grad(jax_twin(fn)))(*args))


def test_rebinding_in_a_helper_wrt_the_scalar():
    check_all(through_helper, (0.8, v3), argnum=0)


@pytest.mark.parametrize("fn", [custom_vjp_in_branch, custom_vjp_in_loop_branch], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [np.array([0.1, 0.2, 0.3]), np.array([0.1, -0.5, 0.3])], ids=["pos", "neg"])
def test_custom_vjp_rebinding_in_a_branch_on_data(fn, x):
    # was: `_tape.pop(...)` inside an `if` on array data (the adjoint popped what the branch saved by name)
    jf = jax_twin(fn)
    _close(srcjax.grad(fn)(x), JAX.grad(jf)(x))
    _close(srcjax.vjp(fn, x)[1](1.0), jax.vjp(jf, x)[1](1.0))


@pytest.mark.parametrize("fn, args", [(after_for, (v3,)), (scale, (0.7, -1.5)), (straight, (v3, v3 * 0.5))],
                         ids=lambda a: getattr(a, "__name__", ""))
def test_split_vjp_of_a_rebinding_saves_the_old_value(fn, args):
    out, vjp_fn = srcjax.vjp(fn, *args)
    assert not vjp_fn.recomputes  # the two-program vjp (forward half, backward half)
    _close(vjp_fn(1.0), jax.vjp(jax_twin(fn), *args)[1](1.0))
    _close(vjp_fn(2.5), jax.vjp(jax_twin(fn), *args)[1](2.5))


# -- the guarantee, on the generated source --------------------------------------------------------

def _forward_source(fn):
    prog = Program(fn)
    return ad.jvp_source(prog, (0,), f"{fn.__name__}_jvp")


def _names(node, ctx):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _rebinding_lines(text):
    """Pairs (primal line, tangent line right after it) of the generated jvp where the tangent reads a
    name that the primal line read and rebound: the hazard of issue 13."""
    out = []
    for node in ast.walk(ast.parse(text)):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for p, d in zip(block, block[1:]):
                if not (isinstance(p, ast.Assign) and isinstance(d, ast.Assign)):
                    continue
                bound = {n for t in p.targets for n in _names(t, ast.Store)}
                dots = {n for t in d.targets for n in _names(t, ast.Store)}
                if bound and all(n.endswith("_dot") for n in dots) and not any(n.endswith("_dot") for n in bound):
                    hazard = bound & _names(p.value, ast.Load) & _names(d.value, ast.Load)
                    if hazard:
                        out.append(f"{ast.unparse(p)}  /  {ast.unparse(d)}")
    return out


@pytest.mark.parametrize("fn", [scale, loop3, after_while, in_branch, in_loop_body, tuple_targets, split_rebinds,
                                rules_reading_out, index_assign, appended, through_helper, with_custom_jvp, fz_a,
                                fz_b], ids=lambda f: f.__name__)
def test_no_primal_line_of_forward_mode_reads_what_it_rebinds(fn):
    text = _forward_source(fn)
    assert _rebinding_lines(text) == [], text


def test_jvp_temporaries_do_not_shadow_derivative_helpers():
    # `y = index_update(y, ...)`'s result was named `index_update`, then called by the tangent's rule
    text = _forward_source(index_assign)
    assert "index_update = " not in text


def test_source_imports_the_helpers_its_rules_call():
    # index_update's tangent rule calls `index_update(x_dot, key, 0.0)`: srcjax.source imports it
    text = srcjax.source(srcjax.jacfwd(index_assign))
    header = text.split("\n\n")[0]
    assert "from srcjax.adjoint import" in header and "index_update" in header, header
    ns = {}
    exec(compile(text, "<source>", "exec"), ns)  # runs on its own, with NumPy
    x = np.array([0.3, -0.2, 0.5])
    _close(ns["index_assign_jacfwd"](x), JAX.jacfwd(index_assign_jax)(x))


# -- random straight-line programs where every statement rebinds a name ----------------------------

_OPS = ["{a} = {a} * {b}", "{a} = {a} + {b} * 0.5", "{a} = {b} - {a}", "{a} = {a} / (1.5 + {b} * {b})",
        "{a} = np.tanh({a})", "{a} = np.sin({a}) * {b}", "{a} = np.exp({a} * 0.3)", "{a} = np.sqrt({a} * {a} + 1.0)",
        "{a}, {b} = {b}, {a}", "{a}, {b} = {b} * {a}, {a}", "{a} = np.cos({b}) * {a}"]


@st.composite
def rebinding_program(draw):
    """``def f(x, w)`` over f64[3]; each statement rebinds one of ``x``, ``w``, ``c``."""
    names = ["x", "w", "c"]
    lines = ["c = x * w"]
    for _ in range(draw(st.integers(2, 7))):
        a, b = draw(st.permutations(names))[:2]
        lines.append(draw(st.sampled_from(_OPS)).format(a=a, b=b))
    body = "\n".join("    " + ln for ln in lines)
    out = draw(st.sampled_from(["np.sum(x * w + c)", "np.sum(x) * np.sum(c)", "np.sum(np.sin(x) * c * w)"]))
    return f"import numpy as np\n\n\ndef f(x, w):\n{body}\n    return {out}\n"


@settings(max_examples=written.example_count(6, scale=10), deadline=None, derandomize=not written.THOROUGH)
@given(rebinding_program(), st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_random_rebinding_programs_jvp_and_hessian_match_jax(tmp_path_factory, text, vals):
    f, jf = numpy_and_jax(tmp_path_factory.mktemp("rebinding_programs", numbered=True), text, "rebind")
    x, w = np.array(vals[:3]), np.array(vals[3:])
    tx, tw = np.array([0.3, -0.7, 1.1]), np.array([0.5, 0.2, -0.4])
    try:
        _close(srcjax.jvp(f, (x, w), (tx, tw)), JAX.jvp(jf, (x, w), (tx, tw)), rtol=1e-8, atol=1e-9)
        _close(srcjax.hessian(f)(x, w), JAX.hessian(jf)(x, w), rtol=1e-8, atol=1e-9)
        assert _rebinding_lines(_forward_source(f)) == []
    except AssertionError as e:
        raise AssertionError(f"{e}\n{text}") from None


# -- jvp with parameters left to their defaults ---------------------------------------------------------

def scaled(x, scale=2.0):
    return np.sin(x) * scale


def test_jvp_fills_in_defaults():
    x = np.array([0.3, 0.5])
    out, t = srcjax.jvp(scaled, (x,), (np.ones(2),))
    np.testing.assert_allclose(np.asarray(out), 2.0 * np.sin(x))
    np.testing.assert_allclose(np.asarray(t), 2.0 * np.cos(x))
    out, t = srcjax.jvp(scaled, (x, 3.0), (np.ones(2), 1.0))  # given: differentiated too
    np.testing.assert_allclose(np.asarray(t), 3.0 * np.cos(x) + np.sin(x))
    assert float(srcjax.jvp(scaled, (0.3,), (1.0,))[1]) == pytest.approx(2.0 * np.cos(0.3))


# -- the simplifier: copies and common subexpressions across a rebinding --------------------------------

@pytest.mark.parametrize("text", [
    "def f(b):\n    a = b\n    b = np.sin(b)\n    return a + b\n",
    "def f(x):\n    a = np.sin(x)\n    x = x + 1.0\n    b = np.sin(x)\n    return a + b\n",
    "def f(x):\n    y = x\n    a = y\n    y = np.sin(y)\n    return a + y\n",
    "def f(x):\n    a = x\n    for i in range(3):\n        x = x * 2.0\n    return a + x\n",
    "def f(x):\n    a = x * 2.0\n    x = a\n    a = np.cos(a)\n    return a + x\n",
])
def test_simplifier_keeps_values_across_rebindings(text):
    out = simplify_source(text, set())
    run = {}
    for k, t in enumerate((text, out)):
        ns = {"np": np}
        exec(t, ns)
        run[k] = ns["f"](0.7)
    assert run[0] == run[1], out
