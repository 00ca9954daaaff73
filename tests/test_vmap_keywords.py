"""vmap with arguments passed by keyword (issue #15, JAX's meaning): in_axes gives the positional
arguments' axes (one for all, or one entry each: a tuple may be shorter than the parameters), an argument
passed by keyword is mapped over its axis 0, one left to its default is not mapped; under jit, grad and
inside a function srcjax reads. Was refused ("in_axes has 1 entries but f takes 2 arguments", with no
location), or wrong where one in_axes is not 0 (the keyword argument mapped over that axis). Every vmap
error about its arguments or options is located at the user's line."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import srcjax
from tests.twins import jax_twin

jax.config.update("jax_enable_x64", True)


def scaled(a, b):
    return np.sin(a) * np.sum(b)


def shifted(a, b=2.0):
    return np.sin(a) * b


XS = np.linspace(0.1, 1.2, 12).reshape(4, 3)
YS = np.linspace(-1.0, 1.0, 8).reshape(4, 2)
BS = np.array([0.5, 1.5, -2.0, 3.0])


def loss_prefix(x, y):
    return np.sum(srcjax.vmap(scaled, in_axes=(0,))(x, b=y) ** 2)


def loss_default(x, b):
    return np.sum(srcjax.vmap(shifted, in_axes=(0,))(x, b=b) ** 2)


def per_example_grad(x, b):
    return srcjax.vmap(srcjax.grad(lambda a, c: np.sum(np.sin(a) * c)), in_axes=(0,))(x, c=b)


def cases():  # (name, srcjax's call, jax's call)
    jscaled, jshifted = jax_twin(scaled), jax_twin(shifted)
    jloss_prefix = jax_twin(loss_prefix, scaled=jscaled)
    jloss_default = jax_twin(loss_default, shifted=jshifted)
    return [
        ("prefix", lambda v, g, s, sh: v(s, in_axes=(0,))(XS, b=YS), jscaled),
        ("one axis 1", lambda v, g, s, sh: v(s, in_axes=1)(XS.T, b=YS), jscaled),
        ("no positional", lambda v, g, s, sh: v(s, in_axes=())(a=XS, b=YS), jscaled),
        ("default passed", lambda v, g, s, sh: v(sh, in_axes=(0,))(XS, b=BS), jshifted),
        ("default left", lambda v, g, s, sh: v(sh, in_axes=(0,))(XS), jshifted),
        ("jit prefix", lambda v, g, s, sh: g[0](v(s, in_axes=(0,)))(XS, b=YS), jscaled),
        ("jit default passed", lambda v, g, s, sh: g[0](v(sh, in_axes=(0,)))(XS, b=BS), jshifted),
        ("jit one axis default passed", lambda v, g, s, sh: g[0](v(sh))(XS, b=BS), jshifted),
        ("grad inside", lambda v, g, s, sh: g[1](s)(XS, YS), jloss_prefix),
        ("grad inside default", lambda v, g, s, sh: g[1](sh)(XS, BS), jloss_default),
    ]


@pytest.mark.parametrize("k", range(10))
def test_keyword_arguments_are_mapped_as_jax_maps_them(k: int) -> None:
    name, call, twin = cases()[k]
    jscaled, jshifted = jax_twin(scaled), jax_twin(shifted)
    if name.startswith("grad"):
        ours = call(srcjax.vmap, (srcjax.jit, lambda f: srcjax.grad(loss_prefix if f is scaled else loss_default,
                                                                     argnums=(0, 1))), scaled, shifted)
        want = call(jax.vmap, (jax.jit, lambda f: jax.grad(twin, argnums=(0, 1))), jscaled, jshifted)
        for o, w in zip(ours, want):
            np.testing.assert_allclose(o, w, rtol=1e-12)
        return
    ours = call(srcjax.vmap, (srcjax.jit, None), scaled, shifted)
    want = call(jax.vmap, (jax.jit, None), jscaled, jshifted)
    assert ours.shape == want.shape
    np.testing.assert_allclose(ours, want, rtol=1e-12)


def test_vmap_of_grad_with_a_keyword_argument() -> None:
    want = np.cos(XS) * BS[:, None]
    np.testing.assert_allclose(per_example_grad(XS, BS), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.jit(per_example_grad)(XS, BS), want, rtol=1e-12)


def test_vmap_argument_errors_are_at_the_users_line() -> None:
    import inspect
    line = inspect.currentframe().f_lineno  # type: ignore[union-attr]
    calls = [lambda: srcjax.vmap(scaled, in_axes=(0,))(XS, YS),  # jax: in_axes has 1 entry, 2 positional
             lambda: srcjax.vmap(scaled)(XS, YS[:3]),
             lambda: srcjax.vmap(scaled, in_axes="x"),
             lambda: srcjax.vmap(scaled, in_axes=(0, 0, 0)),
             lambda: srcjax.vmap(scaled, axis_size=-1)]
    for i, call in enumerate(calls):
        with pytest.raises(srcjax.TranspileError) as e:
            call()
        assert e.value.span is not None and e.value.span.filename == __file__, str(e.value)
        assert e.value.span.line == line + 1 + i, str(e.value)
    assert "2 positional arguments" in str(pytest.raises(srcjax.TranspileError, calls[0]).value)


def test_a_keyword_the_function_does_not_take_is_an_argument_error() -> None:
    with pytest.raises(srcjax.ArgumentError):  # (was an AssertionError inside srcjax)
        srcjax.vmap(scaled, in_axes=(0,))(XS, c=YS)
    with pytest.raises(srcjax.ArgumentError):
        srcjax.vmap(scaled)(XS, c=YS)
