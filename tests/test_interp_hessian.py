"""Second derivatives through the cotangent of ``np.take`` (issue #15; hunt13's interp_lookup).

``take_bar`` (the cotangent of ``np.take``, which ``np.interp`` uses to read ``fp`` at the knots) builds its
scatter key as ``(slice(None),) * axis + (indices,)``; a second derivative differentiated that join of a tuple
holding the indices and refused it, showing srcjax's own line at float32 ("cannot differentiate through `mul +
(indices,)` yet"). The indices are marked as index parameters (``core.index_params``): a derivative takes them as
constants. Checked against jax at float64 and float32.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

KNOTS = np.linspace(-2.0, 2.0, 5)


def interp_lookup(x, fp):
    y = np.interp(x, KNOTS, fp)
    return np.sum(y ** 2 * x)


def take_cubed(a, w):
    i = np.argsort(w)
    return np.sum(np.take(a, i, axis=1) ** 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hessian_of_interp_with_respect_to_fp(dtype) -> None:  # type: ignore[no-untyped-def]
    r = np.random.default_rng(0)
    x, fp = r.uniform(-2.5, 2.5, 6).astype(dtype), r.normal(size=5).astype(dtype)
    got = srcjax.hessian(interp_lookup, argnums=1)(x, fp)
    want = JAX.hessian(jax_twin(interp_lookup, KNOTS=jnp.asarray(KNOTS)), argnums=1)(x, fp)
    assert np.asarray(got).dtype == np.asarray(want).dtype == dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_hessian_of_take_on_an_axis() -> None:
    r = np.random.default_rng(1)
    a, w = r.normal(size=(2, 4)).astype(np.float32), r.normal(size=4).astype(np.float32)
    got = srcjax.hessian(take_cubed)(a, w)
    want = JAX.hessian(jax_twin(take_cubed))(a, w)
    assert np.asarray(got).dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
