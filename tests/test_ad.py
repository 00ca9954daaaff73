"""Derivatives as source: against jax, central finite differences, and the generated source run by NumPy."""

import inspect
import types

import numpy as np
import pytest

import srcjax
from tests import ad_programs as P
from tests import twins
from tests.fd import central_fd
from tests.twins import JAX

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(7)


def jax_twin(fn):
    """The same source, with `np` bound to jax.numpy (and twins of the helpers it calls)."""
    return twins.jax_twin(fn, helpers=twins.module_functions(P),
                          corpus_helpers=types.SimpleNamespace(cube=P.corpus_helpers.cube))


def args_for(fn):
    r = np.random.default_rng(abs(hash(fn.__name__)) % 2**32)
    n = lambda *s: r.normal(size=s)  # noqa: E731
    table = {
        "mse_tanh": (n(3, 2), n(5, 3), n(5, 2)),
        "mlp_loss": (n(3, 4), n(4), n(4, 2), n(6, 3), n(6, 2)),
        "softmax_xent": (n(4, 5), np.eye(5)[[0, 2, 4, 1]]),
        "layer_norm": (n(3, 6), n(6), n(6)),
        "attention": (n(4, 3), n(5, 3), n(5, 2)),
        "rosenbrock": (n(7),),
        "logistic": (n(3), n(8, 3), (r.uniform(size=8) > 0.5).astype(np.float64)),
        "poly": (n(3), n(4)),
        "branchy": (n(2, 3),),
        "early_return": (n(5),),
        "scalar_fn": (0.7,),
        "reassign": (n(4),),
        "reductions": (n(3, 4),),
        "broadcasting": (n(3), n(4)),
        "shapes": (n(2, 3),),
        "loop_carried_unused_after": (n(3), n(3)),
        "coupled_loop": (r.uniform(0.1, 1, 3), n(3)),
        "data_branches": (n(4), 0.5),
        "long_loop": (n(6), n(6)),
        "newton_sqrt": (r.uniform(0.5, 4.0, 5),),
        "module_attribute_helper": (n(4),),
        "loop_in_helper": (n(3), 0.7),
        "nested_tuples": (n(4),),
        "nested_mixed": (n(3), n(3)),
        "nested_in_dict": (n(3),),
    }
    return table[fn.__name__]


PROGRAMS = [P.mse_tanh, P.mlp_loss, P.softmax_xent, P.layer_norm, P.attention, P.rosenbrock, P.logistic, P.poly,
            P.branchy, P.early_return, P.scalar_fn, P.reassign, P.reductions, P.broadcasting, P.shapes,
            P.loop_carried_unused_after, P.coupled_loop, P.data_branches, P.long_loop, P.module_attribute_helper,
            P.loop_in_helper, P.nested_tuples, P.nested_mixed, P.nested_in_dict]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_matches_jax_fd_and_numpy_source(fn):
    args = args_for(fn)
    g = srcjax.grad(fn)
    ours = np.asarray(g(*args))
    ref = np.asarray(JAX.grad(jax_twin(fn))(*args))
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-11)
    via_numpy = np.asarray(srcjax.numpy_function(g)(*args))  # the generated source, run by NumPy
    np.testing.assert_allclose(via_numpy, ours, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours, central_fd(fn, args, 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [P.mse_tanh, P.mlp_loss, P.attention, P.logistic, P.broadcasting,
                                P.loop_carried_unused_after, P.coupled_loop, P.long_loop],
                         ids=lambda f: f.__name__)
def test_value_and_grad_all_argnums(fn):
    args = args_for(fn)
    nums = tuple(range(len(args)))
    value, grads = srcjax.value_and_grad(fn, argnums=nums)(*args)
    jv, jg = JAX.value_and_grad(jax_twin(fn), argnums=nums)(*args)
    np.testing.assert_allclose(value, jv, rtol=1e-12)
    assert len(grads) == len(args)
    for a, b in zip(grads, jg):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("fn", [P.rosenbrock, P.mse_tanh, P.softmax_xent, P.scalar_fn, P.nested_tuples, P.nested_mixed,
                                P.nested_in_dict],
                         ids=lambda f: f.__name__)
def test_hessian_matches_jax(fn):
    args = args_for(fn)
    ours = np.asarray(srcjax.hessian(fn)(*args))
    ref = np.asarray(JAX.hessian(jax_twin(fn))(*args))
    np.testing.assert_allclose(ours, ref, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("fn", [P.nested_tuples, P.nested_mixed, P.nested_in_dict], ids=lambda f: f.__name__)
def test_reverse_over_reverse_of_nested_tuple_literals(fn):
    # regression: the cotangent of a nested literal's inner elements was dropped, in grad and again
    # in the gradient's own `pack_like(r, (p_bar, (q_bar, s_bar)))` under jacrev(grad)
    args = args_for(fn)
    h = srcjax.jacrev(srcjax.grad(fn))
    ref = np.asarray(JAX.jacrev(JAX.grad(jax_twin(fn)))(*args))
    np.testing.assert_allclose(np.asarray(h(*args)), ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(h)(*args)), ref, rtol=1e-8, atol=1e-10)


def test_grad_of_grad():
    gg = srcjax.grad(srcjax.grad(P.scalar_fn))
    ref = JAX.grad(JAX.grad(jax_twin(P.scalar_fn)))
    for x in (0.3, -1.2, 2.0):
        np.testing.assert_allclose(gg(x), ref(x), rtol=1e-12)
    ggg = srcjax.grad(gg)
    np.testing.assert_allclose(ggg(0.4), JAX.grad(ref)(0.4), rtol=1e-10)


def test_grad_of_grad_source_runs_with_numpy():
    # regression: the forward-mode twin of `unbroadcast` was imported from srcjax.adjoint, where it is not;
    # unbroadcast is a primitive now, whose JVP rule is unbroadcast of the tangent (no twin to write)
    def spread(x):
        return np.sum(np.sin(x * np.arange(3.0)))  # x is broadcast: its cotangent is summed back

    gg = srcjax.grad(srcjax.grad(spread))
    text = srcjax.source(gg)
    assert "unbroadcast_jvp" not in text and "unbroadcast(" in text  # (imported: the NumPy run below)
    np.testing.assert_allclose(srcjax.numpy_function(gg)(0.7), gg(0.7), rtol=1e-12)
    np.testing.assert_allclose(gg(0.7), -np.sum(np.arange(3.0) ** 2 * np.sin(0.7 * np.arange(3.0))), rtol=1e-12)


@pytest.mark.parametrize("fn", [P.mse_tanh, P.layer_norm, P.poly, P.branchy, P.reductions],
                         ids=lambda f: f.__name__)
def test_jvp_matches_jax_and_transposes_vjp(fn):
    args = args_for(fn)
    tangents = tuple(rng.normal(size=np.shape(a)) for a in args)
    out, t = srcjax.jvp(fn, args, tangents)
    jout, jt = JAX.jvp(jax_twin(fn), args, tangents)
    np.testing.assert_allclose(out, jout, rtol=1e-12)
    np.testing.assert_allclose(t, jt, rtol=1e-9, atol=1e-11)
    # <vjp(u), v> == <u, jvp(v)>
    _, f_vjp = srcjax.vjp(fn, *args)
    u = 1.7
    bars = f_vjp(u)
    lhs = sum(float(np.sum(np.asarray(b) * v)) for b, v in zip(bars, tangents))
    np.testing.assert_allclose(lhs, u * float(np.asarray(t)), rtol=1e-9)


def test_jacobians():
    def vec(x):
        return np.tanh(x) * x[::-1]

    x = rng.normal(size=4)
    ref = JAX.jacfwd(lambda x: jnp.tanh(x) * x[::-1])(x)
    np.testing.assert_allclose(srcjax.jacfwd(vec)(x), ref, rtol=1e-12)
    np.testing.assert_allclose(srcjax.jacrev(vec)(x), ref, rtol=1e-12)


def test_has_aux():
    def loss(w, x):
        p = np.tanh(x @ w)
        return np.sum(p ** 2), p

    w, x = rng.normal(size=(3, 2)), rng.normal(size=(4, 3))
    g, aux = srcjax.grad(loss, has_aux=True)(w, x)
    np.testing.assert_allclose(aux, np.tanh(x @ w))
    (v, aux2), g2 = srcjax.value_and_grad(loss, has_aux=True)(w, x)
    np.testing.assert_allclose(g, g2)
    np.testing.assert_allclose(v, np.sum(np.tanh(x @ w) ** 2))


def test_grad_source_is_readable_and_complete():
    text = srcjax.source(srcjax.grad(P.mse_tanh))
    lines = text.splitlines()
    assert lines[0] == "import numpy as np"
    assert lines[1].startswith("from srcjax.adjoint import")
    body = text.split("def mse_tanh_grad(w, x, y):")[1]
    # (the gradient is what the function returns: ``w_bar = ...; return w_bar`` reads as one statement)
    assert body.strip().splitlines()[-1].startswith("    return matmul_rhs_bar(") or \
        body.strip().endswith("return w_bar")
    assert len([ln for ln in body.splitlines() if ln.strip()]) <= 8
    ns = dict(vars(P))
    exec(text, ns)  # runs with NumPy in the primal's globals
    args = args_for(P.mse_tanh)
    np.testing.assert_allclose(ns["mse_tanh_grad"](*args), JAX.grad(jax_twin(P.mse_tanh))(*args), rtol=1e-10)


def test_grad_of_compiled_function_and_float32():
    f = srcjax.compile(P.mse_tanh)
    args = tuple(a.astype(np.float32) for a in args_for(P.mse_tanh))
    g = srcjax.grad(f)(*args)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, JAX.grad(jax_twin(P.mse_tanh))(*args), rtol=2e-4, atol=1e-6)


def test_integer_argument_is_rejected():
    with pytest.raises(srcjax.DTypeError, match="floating"):
        srcjax.grad(P.rosenbrock)(np.arange(5))


def test_grad_needs_scalar_output():
    def vec(x):
        return x * 2.0

    with pytest.raises(srcjax.TranspileError, match="scalar"):
        srcjax.grad(vec)(np.ones(3))


def test_reverse_over_reverse_through_a_derivative_inside_user_code():
    gf = srcjax.grad(P.rosenbrock)

    def penalty(x):
        return np.sum(gf(x) ** 2)

    x = np.array([0.3, -0.5, 1.2, 0.8])
    jg = JAX.grad(jax_twin(P.rosenbrock))
    ref = JAX.grad(lambda x: jnp.sum(jg(x) ** 2))(x)
    np.testing.assert_allclose(srcjax.grad(penalty)(x), ref, rtol=1e-10)


def test_reverse_over_reverse_through_a_derivative_with_a_loop_inside_user_code():
    gf = srcjax.grad(P.loop_sin)

    def penalty(x):
        return np.sum(gf(x) ** 2)

    x = np.array([0.3, -0.5, 1.2])
    jg = JAX.grad(jax_twin(P.loop_sin))
    ref = JAX.grad(lambda x: jnp.sum(jg(x) ** 2))(x)
    np.testing.assert_allclose(srcjax.grad(penalty)(x), ref, rtol=1e-10)
    # forward over reverse gives the same second derivative
    ref = JAX.hessian(jax_twin(P.loop_sin))(x)
    np.testing.assert_allclose(srcjax.hessian(P.loop_sin)(x), ref, rtol=1e-10)


@pytest.mark.parametrize("x", [np.array([0.5, 1.0, 0.2, 0.3]), np.array([-0.9, -1.0, 0.1, -0.4]),
                               np.array([0.1, -0.2, 0.15, 0.05])], ids=["then", "elif", "else"])
def test_grad_through_each_branch_on_data(x):
    g = np.asarray(srcjax.grad(P.data_branches)(x, 0.5))
    np.testing.assert_allclose(g, np.asarray(JAX.grad(jax_twin(P.data_branches))(x, 0.5)), rtol=1e-10)
    np.testing.assert_allclose(g, central_fd(P.data_branches, (x, 0.5), 0), rtol=1e-6, atol=1e-8)


def test_jvp_through_a_while_on_data():
    a = np.array([0.5, 2.0, 3.0, 9.0])
    t = np.array([1.0, -1.0, 0.5, 2.0])
    out, tangent = srcjax.jvp(P.newton_sqrt, (a,), (t,))
    np.testing.assert_allclose(out, np.sum(np.sqrt(a)), rtol=1e-12)
    np.testing.assert_allclose(tangent, np.sum(t / (2 * np.sqrt(a))), rtol=1e-8)


def test_grad_of_a_long_loop_is_one_xla_loop_each_way():
    """The derivative's forward and adjoint loops stay loops (the tape is stacked per iteration)."""
    args = args_for(P.long_loop)
    text = srcjax.lower(srcjax.grad(P.long_loop, argnums=(0, 1)), *args).as_text()
    assert text.count("stablehlo.while") == 2
    assert len(text.splitlines()) < 200


def test_grad_of_a_loop_inside_a_helper_stays_two_loops():
    args = args_for(P.loop_in_helper)
    text = srcjax.lower(srcjax.grad(P.loop_in_helper), *args).as_text()
    assert text.count("stablehlo.while") == 2


@pytest.mark.parametrize("fn", [P.lax_cond_direct, P.lax_fori_nested_body], ids=lambda f: f.__name__)
def test_grad_of_direct_lax_calls(fn):
    """These were refused (before that, a silent zero gradient); now written out as if/for and differentiated."""
    x = np.array([0.5, 1.0])
    g = srcjax.grad(fn)
    np.testing.assert_allclose(np.asarray(g(x)), central_fd(fn, (x,), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(x)), np.asarray(g(x)), rtol=1e-12)


def test_grad_refuses_unknown_calls_clearly():
    """Regression: a call srcjax has no derivative for was treated as constant (a silent zero gradient)."""
    with pytest.raises(srcjax.TranspileError) as ei:
        srcjax.grad(P.opaque_call)(np.array([0.5, 1.0]))
    assert "cannot differentiate" in str(ei.value) and "vectorize" in str(ei.value)


def test_grad_of_a_while_on_data_says_how_to_bound_it():
    with pytest.raises(srcjax.TranspileError) as ei:
        srcjax.grad(P.newton_sqrt)(np.array([0.5, 2.0]))
    assert "while" in str(ei.value) and "max_iters" in str(ei.value)
    assert ei.value.span is not None and ei.value.span.filename == P.__file__
    x = np.array([0.5, 2.0])  # break on data: differentiated as written (one loop each way)
    np.testing.assert_allclose(np.asarray(srcjax.grad(P.break_on_data)(x)), central_fd(P.break_on_data, (x,), 0),
                               rtol=1e-6)


def test_grad_of_the_bounded_form_is_exact_and_rolled():
    a = np.array([0.5, 2.0, 9.0])
    np.testing.assert_allclose(srcjax.grad(P.newton_bounded)(a), 0.5 / np.sqrt(a), rtol=1e-10)
    np.testing.assert_allclose(srcjax.grad(P.newton_bounded)(a), JAX.grad(jax_twin(P.newton_bounded))(a),
                               rtol=1e-10)
    assert srcjax.lower(srcjax.grad(P.newton_bounded), a).as_text().count("stablehlo.while") == 2


def test_jvp_through_a_break_on_data():
    x = np.array([3.0, 2.0])
    t = np.array([1.0, -0.5])
    out, tangent = srcjax.jvp(P.break_on_data, (x,), (t,))
    np.testing.assert_allclose(out, P.break_on_data(x.copy()), rtol=1e-12)
    # the loop stops after k steps: out = 0.9**k * sum(x), k decided by the data
    k = next(k for k in range(1, 101) if np.sum(x) * 0.9 ** k < 1.0)
    np.testing.assert_allclose(tangent, 0.9 ** k * np.sum(t), rtol=1e-12)


def test_regression_grad_keeps_the_default_arguments():
    # the derivative used to be `def with_default_grad(v, eps):`, so grad(f)(v) failed for lack of eps
    v = np.array([1.0, -2.0])
    g = srcjax.grad(P.with_default)
    np.testing.assert_allclose(np.asarray(g(v)), v / np.sqrt(v * v + 1e-6), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g(v, 0.5)), v / np.sqrt(v * v + 0.5), rtol=1e-12)
    assert "eps=1e-06" in srcjax.source(g) or "eps=1e-6" in srcjax.source(g)


def test_regression_recursion_on_a_python_int_under_grad():
    # the `if n == 0` test is not known static before specializing; reverse mode must not try to write the
    # recursive call out in place (it did, and refused the program)
    x = np.array([0.3, -0.4])
    for args in ((x,), (x, 1), (x, 4)):
        g = srcjax.grad(P.recursion_static_depth)
        np.testing.assert_allclose(np.asarray(g(*args)), central_fd(P.recursion_static_depth, args, 0), rtol=1e-6)


def test_grad_with_a_function_passed_as_an_argument():
    """Issue #5: an activation chosen by the caller; the derivative is written per function passed."""
    r = np.random.default_rng(5)
    x, w = r.normal(size=(4, 3)), r.normal(size=(3, 2))
    twin = jax_twin(P.act_layer)
    g = srcjax.grad(P.act_layer, argnums=(0, 1))
    for ours_act, jax_act in ((np.tanh, jnp.tanh), (P.softsign, jax_twin(P.softsign))):
        got = g(x, w, ours_act)
        ref = JAX.grad(twin, argnums=(0, 1))(x, w, jax_act)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10)
    got = g(x, w, act=P.softsign)  # by keyword too
    np.testing.assert_allclose(np.asarray(got[1]), central_fd(lambda w: P.act_layer(x, w, P.softsign), (w,), 0),
                               rtol=1e-6)
    with pytest.raises(srcjax.ArgumentError, match="act"):
        g(x, w, 1.0)
    with pytest.raises(srcjax.ArgumentError, match="act"):
        srcjax.source(g)


def _joins_tuples(x):
    t = (x, x) + (x,)
    return t[0] * t[-1]


def _repeats_list(x):
    return np.sum(np.stack([x] * 3))


def _joins_a_parameter(x, p):
    t = p + (x,)
    return t[0] * t[-1]


def _generator(x):
    return np.sum(np.stack(tuple(np.sin(x * i) for i in range(3))))


@pytest.mark.parametrize("fn,args,fragment", [
    (_joins_tuples, (3.0,), "(x, x) + (x,)"),
    (_repeats_list, (np.ones(2),), "[x] * 3"),
    (_joins_a_parameter, (3.0, (2.0,)), "p + (x,)"),
])
def test_containers_built_from_active_values_are_refused_at_the_line(fn, args, fragment):
    # regression: `(x, x) + (x,)` gave a zero gradient (the tuple operands of `+` carried none)
    with pytest.raises(srcjax.TranspileError, match="cannot differentiate") as e:
        srcjax.grad(fn)(*args)
    text = str(e.value)
    assert f"{__file__}:" in text and fragment in text and "hint:" in text


def test_a_generator_of_active_values_is_written_as_an_append_loop():
    # (was refused: see test_ad_lists.py for generator expressions and appended lists)
    x = rng.normal(size=4)
    ref = sum(i * np.cos(i * x) for i in range(3))
    g = srcjax.grad(_generator)
    np.testing.assert_allclose(g(x), ref, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(g)(x), ref, rtol=1e-12)
    assert ".append(" in srcjax.source(g)


def test_append_loops_are_the_way_to_build_lists():
    def build(x):
        outs = []
        for i in range(3):
            outs.append(np.sin(x * i))
        return np.sum(np.stack(outs))

    x = rng.normal(size=4)
    ref = sum(i * np.cos(i * x) for i in range(3))
    np.testing.assert_allclose(srcjax.grad(build)(x), ref, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.grad(build))(x), ref, rtol=1e-12)


def _mismatched(x, w):
    return np.sum(np.tanh(w @ x))


@pytest.mark.parametrize("transform", [srcjax.grad, srcjax.value_and_grad, srcjax.jacfwd, srcjax.hessian])
def test_shape_errors_of_the_function_point_at_its_line_not_the_derivative(transform):
    with pytest.raises(srcjax.ShapeError) as e:
        transform(_mismatched)(np.ones(3), np.ones((2, 4)))
    text = str(e.value)
    assert f"{__file__}:" in text and "<srcjax." not in text and "w @ x" in text


def _swap(w):
    p, q = w, w * 2
    p, q = q, p
    return np.sum(p - q * 3.0)


def _rotate(a, b, c):
    for _ in range(2):
        a, b, c = b * 1.5, np.sin(c), a - b
    return np.sum(a * b + c)


@pytest.mark.parametrize("fn,args", [(_swap, (np.array([0.7, -0.2]),)),
                                     (_rotate, (np.array([0.3]), np.array([-0.4]), np.array([1.1])))],
                         ids=["swap", "rotate"])
def test_tuple_reassignment_reads_old_values(fn, args):
    # regression: `p, q = q, p` restored p and q from the tape in the wrong order and gave q's
    # cotangent to p after overwriting it (silently wrong gradients)
    nums = tuple(range(len(args)))
    ours = srcjax.grad(fn, argnums=nums)(*args)
    ns = {"np": jnp}
    exec(inspect.getsource(fn), ns)
    ref = JAX.grad(ns[fn.__name__], argnums=nums)(*args)
    via_numpy = srcjax.numpy_function(srcjax.grad(fn, argnums=nums))(*args)
    for k, i in enumerate(nums):
        np.testing.assert_allclose(ours[k], ref[k], rtol=1e-12)
        np.testing.assert_allclose(via_numpy[k], ref[k], rtol=1e-12)
        np.testing.assert_allclose(ours[k], central_fd(fn, args, i), rtol=1e-6)
