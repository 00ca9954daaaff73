"""Lambdas: as the function compiled or differentiated, assigned inside a function, and as the
body of a ``srcjax.lax`` call. Each result is checked against NumPy (the lambda itself), jax,
and the generated source run by NumPy; errors point into the lambda."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import lax

jax.config.update("jax_enable_x64", True)

SCALE = 2.0

loss = lambda w: np.sum(np.tanh(w) ** 2) * SCALE  # noqa: E731
jloss = lambda w: jnp.sum(jnp.tanh(w) ** 2) * SCALE  # noqa: E731
first, second = (lambda x: x + 1, lambda y: np.sin(y) * 3)  # two on one line
spread = lambda x: np.sum(  # noqa: E731
    x[:, None]
    @ x[None])
act = lambda z: np.tanh(z)  # noqa: E731  (a lambda called by a def)


def uses_act(x):
    return np.sum(act(x) * 2)


def assigned_inside(x):
    f = lambda y: np.sin(y) + 1  # noqa: E731
    return f(x) * 2


def fori_body(x):
    return lax.fori_loop(0, x.shape[0], lambda i, c: c + x[i] * i, 0.0)


def jfori_body(x):
    x = jnp.asarray(x)
    return jax.lax.fori_loop(0, x.shape[0], lambda i, c: c + x[i] * i, 0.0)


def scan_body(x):
    c, ys = lax.scan(lambda c, xi: (c * xi, c + xi), 1.0, x)
    return c + np.sum(ys)


def jscan_body(x):
    c, ys = jax.lax.scan(lambda c, xi: (c * xi, c + xi), 1.0, x)
    return c + jnp.sum(ys)


def cond_body(x):
    return np.sum(lax.cond(np.sum(x) > 0, lambda v: v * 2, lambda v: np.sin(v), x))


def jcond_body(x):
    return jnp.sum(jax.lax.cond(jnp.sum(x) > 0, lambda v: v * 2, lambda v: jnp.sin(v), x))


def in_comprehension(x):
    return [(lambda y: y * k)(x) for k in range(3)]


def with_default(x):  # (passed on: a default's use depends on the callee; bound to a name and called, it runs)
    return np.sum(apply_twice(lambda y, k=2: y * k, x))


def apply_twice(f, x):
    return f(f(x))


def check_all(fn, *args):
    """XLA == NumPy-run of the generated source == the function itself."""
    out = np.asarray(srcjax.compile(fn)(*args))
    np.testing.assert_allclose(out, fn(*args), rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(fn)(*args), out, rtol=1e-12)
    return out


def test_lambda_entry_compiles_and_differentiates() -> None:
    w = np.linspace(-1, 1, 5)
    check_all(loss, w)
    g = srcjax.grad(loss)
    np.testing.assert_allclose(g(w), jax.grad(jloss)(w), rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(g)(w), jax.grad(jloss)(w), rtol=1e-12)
    # named after the variable it is assigned to; reads the module global as the lambda does
    text = srcjax.source(g)
    assert "def loss_grad(w):" in text and "SCALE" in text
    assert srcjax.source(loss).splitlines()[3] == "def loss(w):"


def test_two_lambdas_on_one_line_are_told_apart() -> None:
    x = np.linspace(0, 1, 3)
    np.testing.assert_allclose(check_all(first, x), x + 1)
    np.testing.assert_allclose(check_all(second, x), np.sin(x) * 3)
    assert "np.sin" in srcjax.source(second) and "np.sin" not in srcjax.source(first)
    assert "def lambda_fn(y):" in srcjax.source(second)  # not assigned to one name: a generic name


def test_lambda_over_several_lines() -> None:
    x = np.linspace(0, 1, 4)
    check_all(spread, x)
    np.testing.assert_allclose(srcjax.grad(spread)(x), 2 * np.full(4, x.sum()), rtol=1e-12)


def test_lambda_called_by_a_def() -> None:
    x = np.linspace(-1, 1, 4)
    check_all(uses_act, x)
    np.testing.assert_allclose(srcjax.grad(uses_act)(x), 2 * (1 - np.tanh(x) ** 2), rtol=1e-12)
    assert "def act(z):" in srcjax.source(uses_act)


def test_lambda_inline_in_a_call() -> None:
    x = np.linspace(-1, 1, 3)
    h = srcjax.grad(lambda v: np.sum(np.sin(v) * v))
    np.testing.assert_allclose(h(x), np.cos(x) * x + np.sin(x), rtol=1e-12)


def test_lambda_assigned_inside_a_function_is_a_nested_def() -> None:
    x = np.linspace(-1, 1, 3)
    check_all(assigned_inside, x)
    assert "    def f(y):" in srcjax.source(assigned_inside)


@pytest.mark.parametrize("fn,jfn,x", [
    (fori_body, jfori_body, np.arange(4.0)),
    (scan_body, jscan_body, np.arange(1.0, 4.0)),
    (cond_body, jcond_body, np.arange(1.0, 4.0)),
    (cond_body, jcond_body, -np.arange(1.0, 4.0)),
])
def test_lambda_as_lax_body_forward_and_grad(fn, jfn, x) -> None:
    np.testing.assert_allclose(srcjax.compile(fn)(x), jfn(x), rtol=1e-12)
    g = srcjax.grad(fn)
    want = jax.grad(jfn)(x)
    np.testing.assert_allclose(g(x), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(g)(x), want, rtol=1e-12)


def test_lambda_errors_point_into_the_lambda() -> None:
    f = lambda x: x @ np.ones(3)  # noqa: E731
    with pytest.raises(srcjax.ShapeError) as ei:
        srcjax.compile(f)(np.ones(2))
    lines, start = inspect.getsourcelines(test_lambda_errors_point_into_the_lambda)
    row = next(i for i, ln in enumerate(lines) if "f = lambda" in ln)
    assert (ei.value.span.line, ei.value.span.col) == (start + row, lines[row].index("x @ np"))
    assert "x @ np.ones(3)" in str(ei.value)


def test_lambda_inside_a_comprehension_is_refused_with_a_hint() -> None:
    with pytest.raises(srcjax.UnsupportedSyntaxError) as ei:
        srcjax.compile(in_comprehension)(np.ones(2))
    assert "lambda" in ei.value.message and "f = lambda" in (ei.value.hint or "")
    assert ei.value.span.line == inspect.getsourcelines(in_comprehension)[1] + 1


def test_lambda_with_a_default_is_refused_at_its_parameters() -> None:
    with pytest.raises(srcjax.UnsupportedSyntaxError) as ei:
        srcjax.compile(with_default)(np.ones(2))
    assert "defaults" in ei.value.message and "y, k=2" in str(ei.value)


def test_lambda_without_a_source_file() -> None:
    f = eval("lambda x: x + 1")  # noqa: S307 - no file to read
    with pytest.raises(srcjax.UnknownFunctionError) as ei:
        srcjax.compile(f)(np.ones(2))
    assert "source" in ei.value.message
