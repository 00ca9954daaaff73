"""Classmethods called through their class, through ``cls`` and through ``self`` (refuse47).

``Kernels.mix(r2, w)`` of a ``@classmethod`` whose body calls ``cls.rbf(r2)`` (a staticmethod) was refused under
jit with "name 'rbf' is not defined" (the specializer ran the method), and under derivatives and vmap as an
opaque call ("derivatives through methods are not followed yet"); ``self.kernel(...)`` of a classmethod inside a
method likewise. Each is now a call of a copy of the classmethod with ``cls`` fixed to the class
(frontend/class_methods.py). Checked against jax running the same text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402
from tests.twins import jax_twin  # noqa: E402

jax.config.update("jax_enable_x64", True)


class Kernels:
    @staticmethod
    def rbf(r2, ls=1.0):
        return np.exp(-0.5 * r2 / ls**2)

    @staticmethod
    def rq(r2, ls=1.0, alpha=2.0):
        return (1.0 + r2 / (2 * alpha * ls**2)) ** (-alpha)

    @classmethod
    def mix(cls, r2, w):
        return w * cls.rbf(r2) + (1 - w) * cls.rq(r2, ls=0.7)

    @classmethod
    def scaled(cls, r2, w):
        return 2.0 * cls.mix(r2, w) + Kernels.rbf(r2, 0.5)


class GP:
    jitter = 1e-3

    def __init__(self, ls):
        self.ls = ls

    @classmethod
    def kernel(cls, r2, ls):
        return Kernels.rbf(r2, ls) + cls.jitter * (r2 == 0)

    def cov(self, x):
        r2 = (x[:, None] - x[None, :]) ** 2
        return self.kernel(r2, self.ls) + self.kernel(r2, 2.0)


gp = GP(0.7)


def kernel_mix(x):
    r2 = (x[:, None] - x[None, :]) ** 2
    return np.sum(Kernels.scaled(r2, 0.3) ** 2)


def gp_cov(x):
    return np.sum(gp.cov(x) ** 2)


TRANSFORMS: dict[str, Callable[[Any, Callable[..., Any]], Callable[..., Any]]] = {
    "jit": lambda m, f: m.jit(f), "grad": lambda m, f: m.grad(f), "hessian": lambda m, f: m.hessian(f),
    "vmap": lambda m, f: m.vmap(f), "vmap_grad": lambda m, f: m.vmap(m.grad(f)),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("fn", [kernel_mix, gp_cov], ids=lambda f: f.__name__)
def test_classmethods_match_jax(fn: Callable[..., Any], name: str) -> None:
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4) if name.startswith("vmap") else np.linspace(-1.0, 1.0, 4)
    twin = jax_twin(fn, Kernels=_twin_class(Kernels), gp=_twin_gp())
    want = np.asarray(TRANSFORMS[name](jax, twin)(x))
    np.testing.assert_allclose(np.asarray(TRANSFORMS[name](srcjax, fn)(x)), want, rtol=1e-12, atol=1e-12)


def _twin_class(cls: type) -> Any:
    import jax.numpy as jnp

    class Twin:
        @staticmethod
        def rbf(r2, ls=1.0):
            return jnp.exp(-0.5 * r2 / ls**2)

        @staticmethod
        def rq(r2, ls=1.0, alpha=2.0):
            return (1.0 + r2 / (2 * alpha * ls**2)) ** (-alpha)

        @classmethod
        def mix(c, r2, w):
            return w * c.rbf(r2) + (1 - w) * c.rq(r2, ls=0.7)

        @classmethod
        def scaled(c, r2, w):
            return 2.0 * c.mix(r2, w) + c.rbf(r2, 0.5)

    return Twin


def _twin_gp() -> Any:
    twin = _twin_class(Kernels)

    class TwinGP(GP):
        @classmethod
        def kernel(cls, r2, ls):
            return twin.rbf(r2, ls) + cls.jitter * (r2 == 0)

    return TwinGP(0.7)


def test_classmethod_copy_is_named_for_its_class() -> None:
    text = srcjax.source(srcjax.jit(kernel_mix))
    assert "def Kernels_scaled(r2, w):" in text and "Kernels_mix(r2, w)" in text, text
