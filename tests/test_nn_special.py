"""``srcjax.nn``, ``srcjax.scipy.special``, ``srcjax.scipy.stats.norm`` and the special-function primitives
(``srcjax.lax.lgamma``/``digamma``/``polygamma``/``erfc``/``erf_inv``) against jax: each function's value
compiled (float64 and float32, edge values: 0, +-inf, NaN, large), as its own NumPy reference, its
gradient, and ``vmap`` of its gradient; then user programs (an MLP classifier written with jax.nn's
calls, a Student-t log-likelihood with ``gammaln``) under jit, grad and vmap(grad)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax
import srcjax.scipy.special as sp
from srcjax.scipy.special import logsumexp
from srcjax.scipy.stats import norm

from .twins import JAX

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)
jsp = jax.scipy.special
jnorm = jax.scipy.stats.norm

INF, NAN = math.inf, math.nan
ROW = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.5, 6.0, 7.0])  # 0 and kinks (relu6 at 6, hard_tanh at +-1)
EDGE = np.array([-INF, -1e3, -40.0, -1.0, 0.0, 1.0, 40.0, 1e3, INF, NAN])
POS = np.array([1e-3, 0.3, 1.0, 2.5, 7.0, 30.0])  # gamma-family arguments (away from the poles)
PROB = np.array([1e-12, 1e-3, 0.2, 0.5, 0.7, 0.999, 1 - 1e-9])


THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"


def _case(name: str, ours: Callable[..., Any], theirs: Callable[..., Any], x: np.ndarray, *,
          edge: np.ndarray | None = EDGE, grad: float = 1e-9, rtol: float = 1e-12, atol: float = 0.0,
          float32: bool = False, thorough: bool = False) -> Any:
    """One function's case; ``thorough``: only with SRCJAX_HYPOTHESIS=thorough (a function written over
    others that the default run checks)."""
    marks = [pytest.mark.skipif(not THOROUGH, reason="SRCJAX_HYPOTHESIS=thorough")] if thorough else []
    return pytest.param(ours, theirs, x, edge, grad, rtol, atol, float32, id=name, marks=marks)


CASES = [
    _case("relu", srcjax.nn.relu, jax.nn.relu, ROW),
    _case("relu6", srcjax.nn.relu6, jax.nn.relu6, ROW),
    _case("sigmoid", srcjax.nn.sigmoid, jax.nn.sigmoid, ROW, rtol=1e-15),
    _case("log_sigmoid", srcjax.nn.log_sigmoid, jax.nn.log_sigmoid, ROW),
    _case("softplus", srcjax.nn.softplus, jax.nn.softplus, ROW),
    _case("soft_sign", srcjax.nn.soft_sign, jax.nn.soft_sign, ROW, grad=0, thorough=True),
    _case("silu", srcjax.nn.silu, jax.nn.silu, ROW),
    _case("mish", srcjax.nn.mish, jax.nn.mish, ROW, thorough=True),
    _case("gelu", srcjax.nn.gelu, jax.nn.gelu, ROW),
    _case("gelu_exact", lambda x: srcjax.nn.gelu(x, approximate=False), lambda x: jax.nn.gelu(x, approximate=False),
          ROW),
    _case("elu", lambda x: srcjax.nn.elu(x, 0.7), lambda x: jax.nn.elu(x, 0.7), ROW),
    _case("leaky_relu", srcjax.nn.leaky_relu, jax.nn.leaky_relu, ROW, grad=0, thorough=True),
    _case("celu", srcjax.nn.celu, jax.nn.celu, ROW),
    _case("selu", srcjax.nn.selu, jax.nn.selu, ROW, grad=0, thorough=True),
    _case("hard_tanh", srcjax.nn.hard_tanh, jax.nn.hard_tanh, ROW),
    _case("hard_sigmoid", srcjax.nn.hard_sigmoid, jax.nn.hard_sigmoid, ROW, grad=0, thorough=True),
    _case("hard_silu", srcjax.nn.hard_silu, jax.nn.hard_silu, ROW),
    _case("sparse_plus", srcjax.nn.sparse_plus, jax.nn.sparse_plus, ROW, thorough=True),
    _case("squareplus", srcjax.nn.squareplus, jax.nn.squareplus, ROW, grad=0, thorough=True),
    _case("glu", srcjax.nn.glu, jax.nn.glu, ROW[1:], edge=None),
    _case("softmax", srcjax.nn.softmax, jax.nn.softmax, ROW, edge=None, float32=True),
    _case("log_softmax", srcjax.nn.log_softmax, jax.nn.log_softmax, ROW, edge=None),
    _case("softmax_where", lambda x: srcjax.nn.softmax(x, where=x < 3), lambda x: jax.nn.softmax(x, where=x < 3),
          ROW, edge=None),
    _case("log_softmax_where", lambda x: srcjax.nn.log_softmax(x, where=x > -2),
          lambda x: jax.nn.log_softmax(x, where=x > -2), ROW, edge=None),
    _case("standardize", srcjax.nn.standardize, jax.nn.standardize, ROW, edge=None, rtol=1e-10),
    _case("standardize_stable_where", lambda x: srcjax.nn.standardize(x, where=x < 5, algorithm="stable"),
          lambda x: jax.nn.standardize(x, where=x < 5, algorithm="stable"), ROW, edge=None, rtol=1e-10),
    _case("logsumexp", logsumexp, jsp.logsumexp, ROW, edge=None),
    _case("logsumexp_b", lambda x: logsumexp(x, b=np.abs(x) - 0.5, keepdims=True),
          lambda x: jsp.logsumexp(x, b=jnp.abs(x) - 0.5, keepdims=True), ROW, edge=None),
    _case("logsumexp_sign", lambda x: logsumexp(x, b=-np.abs(x), return_sign=True)[0],
          lambda x: jsp.logsumexp(x, b=-jnp.abs(x), return_sign=True)[0], ROW, edge=None, grad=0, thorough=True),
    _case("logsumexp_where", lambda x: srcjax.nn.logsumexp(x, where=x > 0),
          lambda x: jax.nn.logsumexp(x, where=x > 0), ROW, edge=None),
    _case("gammaln", sp.gammaln, jsp.gammaln, POS, edge=np.array([0.0, -1.0, -2.5, 1e6, INF, NAN]), float32=True),
    # (jax's betaln derivative at 30 is off by 1.6e-7 relative: digamma(30) - digamma(32.5) is -0.08133845326853874)
    _case("betaln", lambda x: sp.betaln(x, 2.5), lambda x: jsp.betaln(x, 2.5), POS, edge=None, rtol=1e-8, grad=1e-6),
    _case("digamma", sp.digamma, jsp.digamma, POS, edge=np.array([0.0, -2.5, 1e6, INF, NAN]), rtol=1e-11, float32=True),
    _case("polygamma", lambda x: sp.polygamma(2, x), lambda x: jsp.polygamma(2, x), POS[1:],
          edge=np.array([0.0, -2.5, 1e6, NAN]), rtol=1e-11),
    _case("erf", sp.erf, jsp.erf, ROW),
    _case("erfc", sp.erfc, jsp.erfc, ROW),
    _case("erfinv", sp.erfinv, jsp.erfinv, PROB * 2 - 1, edge=np.array([-1.0, 0.0, 1.0, 1.5, NAN]), rtol=1e-10, float32=True),
    _case("expit", sp.expit, jsp.expit, ROW, rtol=1e-15),
    _case("logit", sp.logit, jsp.logit, PROB, edge=np.array([0.0, 1.0, 2.0, NAN])),
    _case("xlogy", lambda x: sp.xlogy(x, x + 1.0), lambda x: jsp.xlogy(x, x + 1.0), POS,
          edge=np.array([0.0, -1.0, -2.0, INF, NAN])),
    _case("xlog1py", lambda x: sp.xlog1py(x, x * x), lambda x: jsp.xlog1py(x, x * x), ROW),
    _case("entr", sp.entr, jsp.entr, POS, edge=np.array([-1.0, 0.0, INF, NAN])),
    _case("ndtr", sp.ndtr, jsp.ndtr, ROW * 3, rtol=1e-11),
    _case("log_ndtr", sp.log_ndtr, jsp.log_ndtr, np.concatenate([ROW * 3, [-45.0, 12.0]]), rtol=1e-11),
    _case("ndtri", sp.ndtri, jsp.ndtri, PROB, edge=np.array([1e-300, 0.0, 1.0, -0.5, NAN]), rtol=1e-9,
          atol=1e-15),
    _case("norm.logpdf", lambda x: norm.logpdf(x, 0.5, 2.0), lambda x: jnorm.logpdf(x, 0.5, 2.0), ROW),
    _case("norm.pdf", norm.pdf, jnorm.pdf, ROW, grad=0, thorough=True),
    _case("norm.cdf", lambda x: norm.cdf(x, 1.0, 3.0), lambda x: jnorm.cdf(x, 1.0, 3.0), ROW, rtol=1e-11),
    _case("norm.logcdf", norm.logcdf, jnorm.logcdf, ROW * 5, rtol=1e-11),
    _case("norm.sf", norm.sf, jnorm.sf, ROW, rtol=1e-11, grad=0, thorough=True),
    _case("norm.logsf", norm.logsf, jnorm.logsf, ROW * 5, rtol=1e-11, grad=0, thorough=True),
    _case("norm.ppf", lambda q: norm.ppf(q, 1.0, 2.0), lambda q: jnorm.ppf(q, 1.0, 2.0), PROB, rtol=1e-9,
          atol=1e-15, grad=0),
]


def _close(ours: Any, theirs: Any, rtol: float, atol: float = 0.0) -> None:
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=atol)


@pytest.mark.parametrize("ours, theirs, x, edge, grad, rtol, atol, float32", CASES)
def test_matches_jax(ours: Callable[..., Any], theirs: Callable[..., Any], x: np.ndarray, edge: np.ndarray | None,
                     grad: float, rtol: float, atol: float, float32: bool) -> None:
    """Values compiled and as the NumPy reference (float64, with the edge values), the float32 result's
    dtype (compiled values too where ``float32``), and vmap of the gradient (to ``grad``'s relative
    tolerance; 0: not checked: a function written over others checked here)."""
    f, twin = srcjax.jit(ours), jax.jit(theirs)
    xe = x if edge is None else np.concatenate([x, edge])
    expected = twin(xe)
    _close(f(xe), expected, rtol, atol)
    _close(ours(xe), expected, rtol, atol)  # (the function itself is the NumPy reference)
    x32 = x.astype(np.float32)
    assert srcjax.eval_shape(ours, x32).dtype == jax.eval_shape(theirs, x32).dtype
    if float32:
        _close(f(x32), twin(x32), 2e-5, 1e-6)
    if grad:
        xs = np.stack([x, x[::-1] * 0.9 + 0.01 * (x[::-1] < 0.9)])
        g = srcjax.vmap(srcjax.grad(lambda v: np.sum(np.sin(ours(v)) + 0.5 * ours(v))))(xs)
        _close(g, JAX.vmap(jax.grad(lambda v: jnp.sum(jnp.sin(theirs(v)) + 0.5 * theirs(v))))(xs), grad, 1e-12)


def test_kinks_follow_jax() -> None:
    """relu'(0) = 0, relu6' = 0 at 0 and 6, hard_tanh' = 0 outside (-1, 1), celu's tie at 0."""
    x = np.array([-1.0, 0.0, 1.0, 6.0, 0.5])
    pairs = ((srcjax.nn.relu, jax.nn.relu), (srcjax.nn.relu6, jax.nn.relu6), (srcjax.nn.hard_tanh, jax.nn.hard_tanh),
             (srcjax.nn.celu, jax.nn.celu))
    for ours, theirs in pairs:
        _close(srcjax.grad(_summed(ours))(x), jax.grad(_summed(theirs))(x), 0)
    assert srcjax.grad(_summed(srcjax.nn.relu))(x)[1] == 0.0


def _summed(f: Callable[..., Any]) -> Callable[..., Any]:
    def total(v: Any) -> Any:
        return f(v).sum()

    return total


def test_logistic_far_tails_have_finite_derivative() -> None:
    """``srcjax.lax.logistic`` (so ``nn.sigmoid``, ``expit``): the derivative at -1000 is 0, as jax's (was
    NaN: ``1 / (1 + exp(1000))``'s derivative is ``0 * inf``)."""
    x = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    g = srcjax.grad(lambda v: np.sum(srcjax.nn.sigmoid(v)))(x)
    _close(g, jax.grad(lambda v: jnp.sum(jax.nn.sigmoid(v)))(x), 1e-12, 1e-17)  # (jax: 0 at 40, not 4.2e-18)
    _close(srcjax.grad(lambda v: np.sum(srcjax.nn.log_sigmoid(v)))(x),
           jax.grad(lambda v: jnp.sum(jax.nn.log_sigmoid(v)))(x), 1e-12)


def test_logsumexp_of_minus_infinities() -> None:
    """A slice of ``-inf`` gives ``-inf`` (its maximum taken as 0), as jax's."""
    x = np.array([[-INF, -INF], [0.0, -INF]])
    _close(srcjax.jit(lambda v: logsumexp(v, axis=1))(x), jsp.logsumexp(x, axis=1), 0)


def test_xlogy_at_zero() -> None:
    """``xlogy(0, 0) = 0`` and ``entr(0) = 0`` with a finite gradient (jax's custom rule gives -inf/NaN
    there; srcjax gives 0); elsewhere the gradient is jax's."""
    g = srcjax.grad(lambda x, y: np.sum(sp.xlogy(x, y)), argnums=(0, 1))
    gx, gy = g(np.array([0.0, 0.0, 2.0]), np.array([0.0, 3.0, 3.0]))
    _close(gx, [0.0, math.log(3.0), math.log(3.0)], 1e-15)
    _close(gy, [0.0, 0.0, 2 / 3], 1e-15)
    assert srcjax.jit(sp.xlogy)(0.0, 0.0) == 0.0
    _close(srcjax.grad(lambda p: np.sum(sp.entr(p)))(np.array([0.0, 0.5])), [0.0, -math.log(0.5) - 1], 1e-15)


def test_one_hot() -> None:
    """jax's: float64 by default (jax with x64), ``dtype=``, ``axis=``, zeros outside ``[0, n)``; vmapped."""
    y = np.array([[0, 3, -1], [2, 1, 1]], dtype=np.int32)
    for ours, theirs in ((srcjax.jit(lambda v: srcjax.nn.one_hot(v, 3)), jax.nn.one_hot(y, 3)),
                         (srcjax.jit(lambda v: srcjax.nn.one_hot(v, 3, dtype=np.float32)),
                          jax.nn.one_hot(y, 3, dtype=jnp.float32)),
                         (srcjax.jit(lambda v: srcjax.nn.one_hot(v, 3, axis=0)), jax.nn.one_hot(y, 3, axis=0)),
                         (srcjax.jit(lambda v: srcjax.nn.one_hot(v, 3, axis=1, dtype=np.int32)),
                          jax.nn.one_hot(y, 3, axis=1, dtype=jnp.int32))):
        out = ours(y)
        assert np.asarray(out).dtype == theirs.dtype
        _close(out, theirs, 0)
    _close(srcjax.vmap(lambda v: srcjax.nn.one_hot(v, 4))(y), jax.vmap(lambda v: jax.nn.one_hot(v, 4))(y), 0)


def test_special_primitives_higher_order() -> None:
    """lgamma'' = polygamma(1, .), digamma'' = polygamma(2, .), erf_inv and erfc to second order."""
    x = np.array([0.3, 1.7, 4.0])
    for ours, theirs in ((srcjax.lax.lgamma, jax.lax.lgamma), (srcjax.lax.digamma, jax.lax.digamma),
                         (srcjax.lax.erf_inv, jax.lax.erf_inv), (srcjax.lax.erfc, jax.lax.erfc)):
        v = x / 5 if ours is srcjax.lax.erf_inv else x
        _close(srcjax.hessian(_summed(ours))(v), JAX.hessian(_summed(theirs))(v), 1e-10)
    p = srcjax.jvp(lambda v: srcjax.lax.polygamma(1, v), (x,), (np.ones(3),))[1]
    _close(p, jax.lax.polygamma(2.0, x), 1e-11)


def _mlp(params: Any, x: Any, y: Any) -> Any:
    w1, b1, w2, b2 = params
    h = srcjax.nn.relu(srcjax.nn.standardize(x @ w1 + b1))
    h = srcjax.nn.gelu(h) + srcjax.nn.silu(h)
    logits = h @ w2 + b2
    return -np.mean(np.sum(srcjax.nn.one_hot(y, 3) * srcjax.nn.log_softmax(logits), axis=-1)) \
        + 0.1 * np.mean(srcjax.nn.softmax(logits)[:, 0]) + 0.01 * np.mean(logsumexp(logits, axis=1))


def _jmlp(params: Any, x: Any, y: Any) -> Any:
    w1, b1, w2, b2 = params
    h = jax.nn.relu(jax.nn.standardize(x @ w1 + b1))
    h = jax.nn.gelu(h) + jax.nn.silu(h)
    logits = h @ w2 + b2
    return -jnp.mean(jnp.sum(jax.nn.one_hot(y, 3) * jax.nn.log_softmax(logits), axis=-1)) \
        + 0.1 * jnp.mean(jax.nn.softmax(logits)[:, 0]) + 0.01 * jnp.mean(jsp.logsumexp(logits, axis=1))


def test_mlp_classifier() -> None:
    r = np.random.default_rng(0)
    params = (r.normal(size=(4, 5)), r.normal(size=5), r.normal(size=(5, 3)), r.normal(size=3))
    x, y = r.normal(size=(3, 6, 4)), r.integers(0, 3, size=(3, 6))
    _close(srcjax.jit(_mlp)(params, x[0], y[0]), jax.jit(_jmlp)(params, x[0], y[0]), 1e-12)
    ours_b = srcjax.vmap(srcjax.grad(_mlp), in_axes=(None, 0, 0))(params, x, y)
    theirs_b = JAX.vmap(jax.grad(_jmlp), in_axes=(None, 0, 0))(params, x, y)
    for a, b in zip(ours_b, theirs_b):
        _close(a, b, 1e-10, 1e-14)


def _student_t(x: Any, loc: Any, log_scale: Any, df: Any) -> Any:
    z = (x - loc) / np.exp(log_scale)
    c = sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * np.log(df * np.pi)
    return np.sum(c - log_scale - (df + 1) / 2 * np.log1p(z ** 2 / df))


def _jstudent_t(x: Any, loc: Any, log_scale: Any, df: Any) -> Any:
    z = (x - loc) / jnp.exp(log_scale)
    c = jsp.gammaln((df + 1) / 2) - jsp.gammaln(df / 2) - 0.5 * jnp.log(df * jnp.pi)
    return jnp.sum(c - log_scale - (df + 1) / 2 * jnp.log1p(z ** 2 / df))


def test_student_t_loglik_df_as_data() -> None:
    """The degrees of freedom as an array (``math.lgamma`` of it is refused, as in jax): ``gammaln``
    under jit and vmap of grad (``digamma``; ``polygamma``, its derivative: test_special_primitives_higher_order)."""
    r = np.random.default_rng(1)
    x, args = r.normal(size=6), (0.1, -0.2, 4.0)
    _close(srcjax.jit(_student_t)(x, *args), jax.jit(_jstudent_t)(x, *args), 1e-12)
    dfs = np.array([2.5, 4.0, 9.0])
    g = srcjax.vmap(srcjax.grad(_student_t, argnums=3), in_axes=(None, None, None, 0))(x, *args[:2], dfs)
    _close(g, JAX.vmap(jax.grad(_jstudent_t, argnums=3), in_axes=(None, None, None, 0))(x, *args[:2], dfs), 1e-11)


def _uses_math_lgamma(x: Any, df: Any) -> Any:
    return np.sum(x) * math.lgamma(df)


def test_math_lgamma_of_data_points_to_gammaln() -> None:
    with pytest.raises(srcjax.TranspileError, match="srcjax.scipy.special.gammaln"):
        srcjax.jit(_uses_math_lgamma)(np.ones(3), np.float64(4.0))


def test_source_shows_the_library_calls() -> None:
    text = srcjax.source(_mlp)
    assert "from srcjax.nn import " in text and "from srcjax.scipy.special import logsumexp" in text
    assert "srcjax.lax.lgamma(" in srcjax.source(srcjax.grad(_student_t, argnums=3))


def test_bare_lax_records_are_transformed() -> None:
    """``srcjax.jit(srcjax.lax.lgamma)``, ``srcjax.grad(srcjax.lax.digamma)``: a ``srcjax.lax`` record passed
    as the function is wrapped as ``np.sin`` is (``srcjax.jit(srcjax.lax.erf)`` was "cannot call
    vectorize()": its NumPy reference was read as the user's code)."""
    x = np.array([0.3, 1.7, 4.0])
    _close(srcjax.jit(srcjax.lax.erf)(x), jax.lax.erf(x), 1e-15)
    _close(srcjax.jit(srcjax.lax.lgamma)(x), jax.lax.lgamma(x), 1e-14)
    _close(srcjax.grad(srcjax.lax.digamma)(1.5), jax.grad(jax.lax.digamma)(1.5), 1e-12)
    _close(srcjax.vmap(srcjax.lax.polygamma)(np.array([1.0, 2.0, 3.0]), x), jax.lax.polygamma(np.arange(1.0, 4.0), x),
           1e-12)


def test_polygamma_below_minus_five() -> None:
    """XLA's chlo.polygamma (jax's ``polygamma(2, -8.9)`` is 1.66e5, ``grad(digamma)(-8.9)`` 7.2e3) loses every
    digit below about -5; srcjax's lowering reflects there: the series' -1998.67 and 101.3."""
    x = np.array([-5.55, -8.9, -15.5, -100.3])
    ref1, ref2 = srcjax.lax.polygamma(1, x), srcjax.lax.polygamma(2, x)  # (the NumPy reference: the series)
    _close(srcjax.jit(lambda v: srcjax.lax.polygamma(2, v))(x), ref2, 1e-10, 1e-12)  # (-0.0039 at -15.5: cancels)
    _close(srcjax.vmap(srcjax.grad(srcjax.lax.digamma))(x), ref1, 1e-10, 1e-12)
    _close(srcjax.jit(lambda v: srcjax.lax.polygamma(1, v))(x.astype(np.float32)), ref1, 2e-5)
    _close(ref2[1], -1998.6709458609944, 1e-13)
