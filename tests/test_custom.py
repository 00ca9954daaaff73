"""custom_vjp / custom_jvp: the user's rule is what runs, in every mode JAX allows.

Oracles: jax with jax.custom_vjp / jax.custom_jvp twins, the generated source
run by NumPy, and central finite differences where the rule is the true
derivative. Errors in rules are CustomRuleErrors at the rule's line.
"""

import functools
import inspect

import numpy as np
import pytest

import srcjax
from srcjax.autodiff import derivative_function
from tests import corpus_helpers, twins
from tests.corpus_helpers import scaled_gelu, soft_abs
from tests.fd import central_fd
from tests.twins import JAX

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(5)


# ======================================================================================
# Custom functions (srcjax) and their jax twins
# ======================================================================================
@srcjax.custom_vjp
def log1pexp(x):
    return np.log1p(np.exp(x))


def log1pexp_fwd(x):
    return log1pexp(x), x


def log1pexp_bwd(x, g):
    return (g / (1 + np.exp(-x)),)


log1pexp.defvjp(log1pexp_fwd, log1pexp_bwd)


@srcjax.custom_vjp
def doubled(x):  # a deliberately different rule: twice the true gradient
    return np.sin(x)


def doubled_fwd(x):
    return np.sin(x), np.cos(x)


def doubled_bwd(c, g):
    return (2 * g * c,)


doubled.defvjp(doubled_fwd, doubled_bwd)


@srcjax.custom_jvp
def safe_norm(x):
    return np.sqrt(np.sum(x * x))


@safe_norm.defjvp
def safe_norm_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    y = safe_norm(x)
    denom = np.where(y == 0.0, 1.0, y)
    return y, np.sum(x * x_dot) / denom


@srcjax.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return softplus(x), t / (1 + np.exp(-x))


@functools.partial(srcjax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None


def clip_gradient_bwd(lo, hi, _, g):
    return (np.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@functools.partial(srcjax.custom_jvp, nondiff_argnums=(1,))
def power(x, k):
    return x ** k


@power.defjvp
def power_jvp(k, primals, tangents):
    x, = primals
    t, = tangents
    return power(x, k), k * x ** (k - 1) * t


@srcjax.custom_vjp
def mul_add(x, y, z):  # several differentiable arguments
    return x * y + z


def mul_add_fwd(x, y, z):
    return x * y + z, (x, y)


def mul_add_bwd(res, g):
    x, y = res
    return g * y, g * x, g


mul_add.defvjp(mul_add_fwd, mul_add_bwd)


def jax_twins():
    @jax.custom_vjp
    def log1pexp(x):
        return jnp.log1p(jnp.exp(x))

    log1pexp.defvjp(lambda x: (log1pexp(x), x), lambda x, g: (g / (1 + jnp.exp(-x)),))

    @jax.custom_vjp
    def doubled(x):
        return jnp.sin(x)

    doubled.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (2 * g * c,))

    @jax.custom_jvp
    def safe_norm(x):
        return jnp.sqrt(jnp.sum(x * x))

    @safe_norm.defjvp
    def _(primals, tangents):
        x, = primals
        x_dot, = tangents
        y = safe_norm(x)
        return y, jnp.sum(x * x_dot) / jnp.where(y == 0.0, 1.0, y)

    @jax.custom_jvp
    def softplus(x):
        return jnp.log1p(jnp.exp(x))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] / (1 + jnp.exp(-p[0]))))

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x

    clip_gradient.defvjp(lambda lo, hi, x: (x, None), lambda lo, hi, _, g: (jnp.clip(g, lo, hi),))

    @functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
    def power(x, k):
        return x ** k

    power.defjvp(lambda k, p, t: (power(p[0], k), k * p[0] ** (k - 1) * t[0]))

    @jax.custom_vjp
    def mul_add(x, y, z):
        return x * y + z

    mul_add.defvjp(lambda x, y, z: (x * y + z, (x, y)), lambda r, g: (g * r[1], g * r[0], g))
    return dict(log1pexp=log1pexp, doubled=doubled, safe_norm=safe_norm, softplus=softplus,
                clip_gradient=clip_gradient, power=power, mul_add=mul_add)


def jax_twin(fn):
    """The same program source with np = jax.numpy and the custom functions = their jax twins."""
    return twins.jax_twin(fn, **jax_twins())


# ======================================================================================
# Programs calling them (straight line, loops, data-dependent branches)
# ======================================================================================
def vjp_chain(x, w):
    h = log1pexp(x * w)
    return np.sum(h * h) + log1pexp(np.sum(w))


def vjp_loop(x, w):
    h = x
    for _ in range(5):  # one XLA loop; the residuals are saved per iteration
        h = log1pexp(h * w) - 1.0
    return np.sum(h)


def vjp_branch(x):
    if np.sum(x) > 0:  # on data: a cond, and the adjoint re-tests it
        y = log1pexp(x) * 2.0
    else:
        y = np.sin(x)
    return np.sum(y)


def vjp_several(x, y):
    z = mul_add(x, y, x)  # x reaches two arguments: cotangents accumulate
    return np.sum(z * z)


def vjp_nondiff(x):
    return np.sum(clip_gradient(-0.5, 0.5, x * 3.0) ** 2)


def jvp_chain(x, w):
    return safe_norm(x * w) * 3.0 + np.sum(softplus(x))


def jvp_loop(x, w):
    h = x
    for _ in range(4):
        h = np.tanh(softplus(h) * w)
    return np.sum(h) + safe_norm(h)


def jvp_branch(x):
    if np.max(x) > 0.5:
        y = softplus(x * 2.0)
    else:
        y = x * safe_norm(x)
    return np.sum(y)


def jvp_nondiff(x):
    return np.sum(power(x, 3) + power(x, 2))


def mixed(x, w):
    return safe_norm(log1pexp(x) * w)


def args_for(fn):
    n = lambda *s: rng.normal(size=s)  # noqa: E731
    return {
        "vjp_chain": (n(3), n(3)), "vjp_loop": (n(3), 0.5 * n(3)), "vjp_branch": (np.abs(n(4)),),
        "vjp_several": (n(3), n(3)), "vjp_nondiff": (n(4),), "jvp_chain": (n(3), n(3)),
        "jvp_loop": (n(3), n(3)), "jvp_branch": (n(4),), "jvp_nondiff": (n(3),), "mixed": (n(3), n(3)),
    }[fn.__name__]


VJP_PROGRAMS = [vjp_chain, vjp_loop, vjp_branch, vjp_several, vjp_nondiff]
JVP_PROGRAMS = [jvp_chain, jvp_loop, jvp_branch, jvp_nondiff]
TRUE_RULES = [vjp_chain, vjp_loop, vjp_branch, vjp_several, jvp_chain, jvp_loop, jvp_branch, jvp_nondiff, mixed]


@pytest.mark.parametrize("fn", VJP_PROGRAMS + JVP_PROGRAMS + [mixed], ids=lambda f: f.__name__)
def test_grad_and_vjp_match_jax_and_numpy_source(fn):
    args = args_for(fn)
    nums = tuple(range(len(args)))
    value, grads = srcjax.value_and_grad(fn, argnums=nums)(*args)
    jv, jg = JAX.value_and_grad(jax_twin(fn), argnums=nums)(*args)
    np.testing.assert_allclose(value, jv, rtol=1e-12)
    for a, b in zip(grads, jg):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    g = srcjax.grad(fn)
    np.testing.assert_allclose(srcjax.numpy_function(g)(*args), g(*args), rtol=1e-12, atol=1e-14)
    out, f_vjp = srcjax.vjp(fn, *args)
    _, j_vjp = jax.vjp(jax_twin(fn), *args)
    for a, b in zip(f_vjp(1.5), j_vjp(1.5)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fn", TRUE_RULES, ids=lambda f: f.__name__)
def test_true_rules_match_finite_differences(fn):
    args = args_for(fn)
    for i in range(len(args)):
        np.testing.assert_allclose(srcjax.grad(fn, argnums=i)(*args), central_fd(fn, args, i), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", JVP_PROGRAMS, ids=lambda f: f.__name__)
def test_jvp_matches_jax(fn):
    args = args_for(fn)
    tangents = tuple(rng.normal(size=np.shape(a)) for a in args)
    out, t = srcjax.jvp(fn, args, tangents)
    jout, jt = JAX.jvp(jax_twin(fn), args, tangents)
    np.testing.assert_allclose(out, jout, rtol=1e-12)
    np.testing.assert_allclose(t, jt, rtol=1e-9, atol=1e-12)


def test_rule_is_what_runs():
    def total(x):
        return np.sum(doubled(x))

    x = rng.normal(size=5)
    np.testing.assert_allclose(srcjax.grad(total)(x), 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(srcjax.grad(doubled.fun)(np.float64(0.3)), np.cos(0.3), rtol=1e-12)  # the body
    np.testing.assert_allclose(srcjax.grad(total)(x), JAX.grad(lambda x: jnp.sum(jax_twins()["doubled"](x)))(x))
    # custom_jvp, directly differentiated: the rule says d/dx = 1 / (1 + exp(-x))
    np.testing.assert_allclose(srcjax.grad(softplus)(0.7), 1 / (1 + np.exp(-0.7)), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_rule_fixes_the_numerics():
    def naive(x):
        return np.log1p(np.exp(x))

    assert np.isnan(srcjax.grad(naive)(1000.0))  # exp(1000) overflows: inf / inf
    for g in (srcjax.grad(log1pexp), srcjax.grad(softplus)):
        assert float(g(1000.0)) == 1.0
        assert float(srcjax.numpy_function(g)(1000.0)) == 1.0
    assert float(srcjax.grad(log1pexp)(np.float32(1000.0))) == 1.0


def test_generated_source_calls_the_rules():
    text = srcjax.source(srcjax.grad(vjp_chain))
    assert "h, log1pexp_res = log1pexp_fwd(x * w)" in text  # (readable: mul = x * w folded in)
    assert "= log1pexp_bwd(log1pexp_res, " in text
    assert "def log1pexp_fwd(x):" in text and "def log1pexp_bwd(x, g):" in text
    direct = srcjax.source(srcjax.grad(log1pexp))
    assert "y, log1pexp_res = log1pexp_fwd(x)" in direct and "x_bar, = log1pexp_bwd(log1pexp_res, ones_like(y))" in direct
    jtext = srcjax.source(derivative_function(jvp_chain, "jvp", (0, 1)))
    assert "safe_norm_jvp((x * w,), ((x_dot * w) + (x * w_dot),))" in jtext
    gtext = srcjax.source(srcjax.grad(jvp_chain))
    assert "safe_norm_jvp_transpose((mul,), (zeros_like(mul),), (None, " in gtext


def test_custom_function_is_an_ordinary_helper_outside_derivatives():
    x = rng.normal(size=3)
    np.testing.assert_allclose(log1pexp(x), np.log1p(np.exp(x)))  # a direct call: the primal, by NumPy
    np.testing.assert_allclose(srcjax.compile(log1pexp)(x), np.log1p(np.exp(x)), rtol=1e-12)
    np.testing.assert_allclose(srcjax.compile(vjp_chain)(x, x), vjp_chain(x, x), rtol=1e-12)
    srcjax.grad(vjp_chain)(x, x)
    text = srcjax.source(vjp_chain)  # the rules are not part of the primal program
    assert "def log1pexp(x):" in text and "log1pexp_fwd" not in text and "log1pexp_bwd" not in text
    assert srcjax.source(log1pexp).startswith("import numpy as np\n\n\ndef log1pexp(x):")


def test_grad_of_grad_and_hessian():
    for fn, twin in ((softplus, "softplus"), (log1pexp, "log1pexp")):  # custom_vjp: reverse over reverse
        gg, ref = srcjax.grad(srcjax.grad(fn)), JAX.grad(jax.grad(jax_twins()[twin]))
        for x in (0.3, -1.2, 2.0):
            np.testing.assert_allclose(gg(x), ref(x), rtol=1e-12)
    x = rng.normal(size=3)
    np.testing.assert_allclose(srcjax.hessian(safe_norm)(x), JAX.hessian(jax_twins()["safe_norm"])(x), rtol=1e-10)
    w = rng.normal(size=3)
    np.testing.assert_allclose(srcjax.hessian(jvp_chain)(x, w), JAX.hessian(jax_twin(jvp_chain))(x, w), rtol=1e-9)


def test_grad_of_grad_through_custom_vjp_in_a_loop_runs_reverse_over_reverse():
    def f(x):
        h = x
        for _ in range(3):
            h = log1pexp(h) * 0.5
        return h

    lp = jax_twins()["log1pexp"]

    def twin(x):
        h = x
        for _ in range(3):
            h = lp(h) * 0.5
        return h

    gg, ref = srcjax.grad(srcjax.grad(f)), JAX.grad(jax.grad(twin))
    for x in (0.3, -1.2):
        np.testing.assert_allclose(gg(x), ref(x), rtol=1e-12)
        np.testing.assert_allclose(srcjax.numpy_function(gg)(x), ref(x), rtol=1e-12)


def test_forward_mode_over_custom_vjp_is_an_error_as_in_jax():
    x = rng.normal(size=3)
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jvp(jax_twin(vjp_chain), (x, x), (x, x))
    for call in (lambda: srcjax.jvp(vjp_chain, (x, x), (x, x)), lambda: srcjax.jacfwd(log1pexp)(x),
                 lambda: srcjax.hessian(vjp_chain)(x, x)):
        with pytest.raises(srcjax.CustomRuleError, match="forward mode") as e:
            call()
        assert e.value.span.line == inspect.getsourcelines(log1pexp.fun)[1] + 1
        assert "custom_jvp" in e.value.hint


@functools.partial(srcjax.custom_jvp, nondiff_argnums=(0,))
def app(f, x):  # JAX's idiom: a function as a non-differentiable argument
    return f(x)


@app.defjvp
def app_jvp(f, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(x), 2.0 * x_dot


def apply_sin(x):
    return np.sum(app(np.sin, x) + app(sin_helper, x))


def sin_helper(x):
    return np.sin(x)


def test_nondiff_argnums():
    x0 = rng.normal(size=3)
    np.testing.assert_allclose(srcjax.grad(apply_sin)(x0), 4.0)
    np.testing.assert_allclose(srcjax.jvp(apply_sin, (x0,), (np.ones(3),))[1], 12.0)
    x = np.array([0.1, -0.4, 0.3])
    np.testing.assert_allclose(srcjax.grad(vjp_nondiff)(x), np.clip(6 * x * 3.0, -0.5, 0.5) * 3.0)
    assert "clip_gradient_bwd(-0.5, 0.5, clip_gradient_res, " in srcjax.source(srcjax.grad(vjp_nondiff))
    assert "power_jvp(3, (x,), (x_dot,))" in srcjax.source(derivative_function(jvp_nondiff, "jvp", (0,)))
    np.testing.assert_allclose(srcjax.grad(power)(2.0, 3), 12.0)
    with pytest.raises(ValueError, match="nondiff_argnums"):
        srcjax.custom_vjp(log1pexp.fun, nondiff_argnums=(3,))


@srcjax.custom_vjp
def sincos(x, scale=2.0):  # tuple output, a defaulted argument
    return np.sin(x) * scale, np.cos(x)


def sincos_fwd(x, scale=2.0):
    return sincos(x, scale), (x, scale)


def sincos_bwd(res, g):
    x, scale = res
    gs, gc = g
    return gs * np.cos(x) * scale - gc * np.sin(x), np.sum(gs * np.sin(x))


sincos.defvjp(sincos_fwd, sincos_bwd)


@srcjax.custom_jvp
def square_exp(x):
    return x * x, np.exp(x)


@square_exp.defjvp
def square_exp_jvp(primals, tangents):
    x, = primals
    t, = tangents
    a, b = square_exp(x)
    return (a, b), (2 * x * t, b * t)


def tuple_outputs(x, s):
    a, b = sincos(x, scale=s)
    c, d = square_exp(a)
    e, f = sincos(d)
    return np.sum(a * b + c * d + e * f), a


def test_tuple_outputs_keyword_arguments_and_aux():
    @jax.custom_vjp
    def jsincos(x, scale=2.0):
        return jnp.sin(x) * scale, jnp.cos(x)

    jsincos.defvjp(lambda x, scale=2.0: (jsincos(x, scale), (x, scale)),
                   lambda r, g: (g[0] * jnp.cos(r[0]) * r[1] - g[1] * jnp.sin(r[0]), jnp.sum(g[0] * jnp.sin(r[0]))))

    @jax.custom_jvp
    def jsquare_exp(x):
        return x * x, jnp.exp(x)

    jsquare_exp.defjvp(lambda p, t: (jsquare_exp(p[0]), (2 * p[0] * t[0], jnp.exp(p[0]) * t[0])))
    ns = {"np": jnp, "sincos": jsincos, "square_exp": jsquare_exp}
    exec(compile(inspect.getsource(tuple_outputs), __file__, "exec"), ns)
    x, s = rng.normal(size=3), 1.5
    (v, aux), g = srcjax.value_and_grad(tuple_outputs, argnums=(0, 1), has_aux=True)(x, s)
    (jv, jaux), jg = JAX.value_and_grad(ns["tuple_outputs"], argnums=(0, 1), has_aux=True)(x, s)
    np.testing.assert_allclose(v, jv, rtol=1e-12)
    np.testing.assert_allclose(aux, jaux, rtol=1e-12)
    for a, b in zip(g, jg):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    assert "(a, b), sincos_res = sincos_fwd(x, scale=s)" in srcjax.source(srcjax.grad(tuple_outputs, has_aux=True))

    def h(x):
        c, d = square_exp(x)
        return np.sum(c * d)

    _, t = srcjax.jvp(h, (x,), (np.ones(3),))
    np.testing.assert_allclose(t, np.sum((2 * x + x * x) * np.exp(x)), rtol=1e-12)


def test_rule_from_another_module():
    """soft_abs and its jvp rule live in corpus_helpers and read its TEMPERATURE."""
    def f(x):
        return np.sum(soft_abs(x) * x)

    x = rng.normal(size=4)
    g = srcjax.grad(f)
    np.testing.assert_allclose(g(x), central_fd(f, (x,), 0), rtol=1e-6)
    np.testing.assert_allclose(srcjax.numpy_function(g)(x), g(x), rtol=1e-12)
    _, t = srcjax.jvp(f, (x,), (np.ones(4),))
    np.testing.assert_allclose(t, np.sum(central_fd(f, (x,), 0)), rtol=1e-6)


# ======================================================================================
# Errors in rules: CustomRuleError at the rule's line, with a hint
# ======================================================================================
@srcjax.custom_vjp
def no_rule(x):
    return x * 2.0


@srcjax.custom_jvp
def no_jvp_rule(x):
    return x * 2.0


@srcjax.custom_vjp
def fwd_not_pair(x):
    return x * 2.0


def fwd_not_pair_fwd(x):
    return x * 2.0


def fwd_not_pair_bwd(res, g):
    return (g,)


fwd_not_pair.defvjp(fwd_not_pair_fwd, fwd_not_pair_bwd)


@srcjax.custom_vjp
def too_many(x):
    return x * 2.0


def too_many_fwd(x):
    return x * 2.0, x


def too_many_bwd(res, g):
    return (g, g)


too_many.defvjp(too_many_fwd, too_many_bwd)


@srcjax.custom_vjp
def not_a_tuple(x):
    return x * 2.0


def not_a_tuple_fwd(x):
    return x * 2.0, None


def not_a_tuple_bwd(res, g):
    return g * 2.0


not_a_tuple.defvjp(not_a_tuple_fwd, not_a_tuple_bwd)


@srcjax.custom_vjp
def wrong_shape(x):
    return x * 2.0


def wrong_shape_fwd(x):
    return x * 2.0, None


def wrong_shape_bwd(res, g):
    return (np.sum(g),)


wrong_shape.defvjp(wrong_shape_fwd, wrong_shape_bwd)


@srcjax.custom_jvp
def bad_tangent(x):
    return x * 2.0


@bad_tangent.defjvp
def bad_tangent_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return x * 2.0, np.sum(t)


@srcjax.custom_vjp
def none_cotangent(x):
    return x * 2.0


def none_cotangent_fwd(x):
    return x * 2.0, None


def none_cotangent_bwd(res, g):
    out = None  # (not written in the return: a literal None there is a zero cotangent, as in JAX)
    return (out,)


none_cotangent.defvjp(none_cotangent_fwd, none_cotangent_bwd)


def use(fn):
    def total(x):
        return np.sum(fn(x))
    return total


ERRORS = [  # (custom function, transformation, where the error points, message fragment)
    (no_rule, "grad", (no_rule.fun, "def no_rule"), "defvjp was never called"),
    (no_jvp_rule, "jvp", (no_jvp_rule.fun, "def no_jvp_rule"), "defjvp was never called"),
    (no_jvp_rule, "grad", (no_jvp_rule.fun, "def no_jvp_rule"), "defjvp was never called"),
    (fwd_not_pair, "grad", (fwd_not_pair_fwd, "return x * 2.0"), "must return a pair (output, residuals)"),
    (too_many, "grad", (too_many_bwd, "return (g, g)"), "returned 2 cotangents, but too_many has 1"),
    (not_a_tuple, "grad", (not_a_tuple_bwd, "return g * 2.0"), "must return a tuple with one cotangent"),
    (wrong_shape, "grad", (wrong_shape_bwd, "return (np.sum(g),)"), "cotangent for x of shape (), but x has shape (3,)"),
    (none_cotangent, "grad", (none_cotangent_bwd, "return (out,)"), "returned None as the cotangent of x"),
    (bad_tangent, "jvp", (bad_tangent_jvp, "return x * 2.0, np.sum(t)"), "tangent that does not match its output"),
    (bad_tangent, "grad", (bad_tangent_jvp, "def bad_tangent_jvp"), "transposes its jvp rule"),
]


@pytest.mark.parametrize("row", ERRORS, ids=lambda r: f"{r[0].__name__}-{r[1]}")
def test_rule_errors(row):
    fn, how, (where, snippet), fragment = row
    x = np.ones(3)
    with pytest.raises(srcjax.CustomRuleError) as e:
        if how == "grad":
            srcjax.grad(use(fn))(x)
        else:
            srcjax.jvp(use(fn), (x,), (x,))
    assert isinstance(e.value, srcjax.TranspileError)
    assert fragment in e.value.message
    lines, start = inspect.getsourcelines(where)
    line = start + next(i for i, ln in enumerate(lines) if snippet in ln)
    assert e.value.span is not None and e.value.span.filename == __file__ and e.value.span.line == line
    assert e.value.hint
    assert f"{__file__}:{line}:" in str(e.value)


# ======================================================================================
# Helpers from another module (regressions)
# ======================================================================================
def helper_by_attribute(x):
    return np.sum(corpus_helpers.scaled_gelu(x) * x)


def helper_by_name(x):
    return np.sum(scaled_gelu(x) ** 2)


def cube(x):  # takes `cube`'s name: corpus_helpers.cube becomes `cube_1` in the program
    return x * 2.0


def two_cubes(x):
    return np.sum(cube(x) + corpus_helpers.cube(x))


@pytest.mark.parametrize("fn", [helper_by_attribute, helper_by_name, two_cubes], ids=lambda f: f.__name__)
def test_helper_derivatives_read_their_own_module(fn):
    """scaled_gelu reads corpus_helpers.GAIN, GELU_C, LEAK and calls gelu/leaky_relu: the derivative of
    a helper from another module is executed in that module's namespace, compiled and by NumPy."""
    x = rng.normal(size=5)
    np.testing.assert_allclose(srcjax.compile(fn)(x), fn(x), rtol=1e-12)
    g = srcjax.grad(fn)
    np.testing.assert_allclose(g(x), central_fd(fn, (x,), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srcjax.numpy_function(g)(x), g(x), rtol=1e-12)
    v = rng.normal(size=5)
    _, t = srcjax.jvp(fn, (x,), (v,))
    np.testing.assert_allclose(t, central_fd(fn, (x,), 0) @ v, rtol=1e-6)
    _, f_vjp = srcjax.vjp(fn, x)
    np.testing.assert_allclose(f_vjp(1.0)[0], g(x), rtol=1e-12)


def test_helper_result_without_cotangent_leaves_no_residuals_on_the_tape():
    def h1(x):
        return np.sin(x) * x

    def h2(x):
        return np.cos(x) * x

    def f(x):
        acc = x
        for _ in range(3):
            unused = h1(acc)  # noqa: F841  (its forward half would push residuals nobody pops)
            acc = h2(acc)
        return np.sum(acc)

    x = rng.normal(size=3)
    np.testing.assert_allclose(srcjax.grad(f)(x), central_fd(f, (x,), 0), rtol=1e-6)


def test_jvp_through_a_helper_returning_a_one_tuple():
    def pair(x):
        return (np.sin(x),)

    def f(x):
        s, = pair(x)
        return np.sum(s)

    x = rng.normal(size=3)
    _, t = srcjax.jvp(f, (x,), (np.ones(3),))
    assert np.shape(t) == ()
    np.testing.assert_allclose(t, np.sum(np.cos(x)), rtol=1e-12)
    np.testing.assert_allclose(srcjax.hessian(f)(x), np.diag(-np.sin(x)), rtol=1e-12, atol=1e-14)


# -- a bwd returning None for a cotangent: JAX's zero cotangent --------------------------------------------

@srcjax.custom_vjp
def clip_by(x, bound):
    return x


def clip_by_fwd(x, bound):
    return x, bound


def clip_by_bwd(bound, g):
    return np.clip(g, -bound, bound), None


clip_by.defvjp(clip_by_fwd, clip_by_bwd)


def clipped_loss(x, b):
    y = np.tanh(clip_by(x * 3.0, b)) ** 2 * b
    for _ in range(2):  # called again, in a loop (its residuals on the tape)
        y = clip_by(y, b) * np.sin(x)
    return np.sum(y)


def _clip_by_jax():
    @jax.custom_vjp
    def clip_by(x, bound):
        return x

    clip_by.defvjp(lambda x, bound: (x, bound), lambda bound, g: (jnp.clip(g, -bound, bound), None))
    return twins.jax_twin(clipped_loss, clip_by=clip_by)


def test_a_bwd_returning_none_gives_a_zero_cotangent():
    # regression: refused ("returned None as the cotangent of bound; srcjax needs an array") where JAX
    # takes None as zeros of the argument's shape; under vmap the batched bwd returned
    # batch_broadcast(None, n)
    want_f = _clip_by_jax()
    x, b = np.linspace(-1.0, 1.0, 5), np.float64(0.5)
    xs, bs = np.linspace(-1.0, 1.0, 15).reshape(3, 5), np.array([0.1, 0.5, 2.0])
    cases = [
        (srcjax.grad(clipped_loss, argnums=(0, 1)), JAX.grad(want_f, argnums=(0, 1)), (x, b)),
        (srcjax.hessian(clipped_loss), JAX.hessian(want_f), (x, b)),
        (srcjax.jacrev(srcjax.grad(clipped_loss)), JAX.jacrev(jax.grad(want_f)), (x, b)),
        (srcjax.vmap(srcjax.grad(clipped_loss, argnums=(0, 1))), JAX.vmap(jax.grad(want_f, argnums=(0, 1))),
         (xs, bs)),
        (srcjax.grad(lambda xs, bs: np.sum(srcjax.vmap(clipped_loss)(xs, bs)), argnums=(0, 1)),
         JAX.grad(lambda xs, bs: jnp.sum(jax.vmap(want_f)(xs, bs)), argnums=(0, 1)), (xs, bs)),
    ]
    for got_f, jax_f, args in cases:
        got, want = got_f(*args), jax_f(*args)
        for g, w in zip(srcjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)
    text = srcjax.source(srcjax.grad(clipped_loss, argnums=(0, 1)), x, b)
    assert ", _ = clip_by_bwd(" in text and "b_bar = zeros_like(b)" in text
