"""Reverse mode through bounded loops: the program does not grow with the bound (``max_iters=N``).

A ``while`` on data under ``grad(f, max_iters=N)`` becomes ``for _ in range(N):``
with a guarded body, and every such loop, forward and adjoint, must lower to one
``stablehlo.while`` with a tape of N rows: the StableHLO text (a deterministic
proxy for the time to specialize and compile it) is the same program for N = 10
and N = 300, only the buffer sizes differ. A loop that silently falls back to
being unrolled makes it N times longer. Each derivative is also checked against
jax (which runs the same Python loop eagerly) or central finite differences.
"""

import sys

import jax
import numpy as np
import pytest

import srcjax
from tests import twins
from tests.fd import central_fd
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax reads their source) ---------------------------------------

def projectile(v0, angle, drag):
    vx = v0 * np.cos(angle)
    vy = v0 * np.sin(angle)
    x = 0.0
    y = 0.0
    t = 0.0
    while t < 10.0 and y >= 0.0:
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - 0.01 * drag * speed * vx
        vy = vy - 0.01 * (9.81 + drag * speed * vy)
        x = x + 0.01 * vx
        y = y + 0.01 * vy
        t = t + 0.01
    return x


def projectile_steps(v0, angle, drag, steps):
    vx = v0 * np.cos(angle)
    vy = v0 * np.sin(angle)
    x = 0.0
    y = 0.0
    t = 0.0
    i = 0
    while t < 10.0 and y >= 0.0 and i < steps:
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - 0.01 * drag * speed * vx
        vy = vy - 0.01 * (9.81 + drag * speed * vy)
        x = x + 0.01 * vx
        y = y + 0.01 * vy
        t = t + 0.01
        i = i + 1
    return x


def particles(p0, v0, k):
    p = p0
    v = v0
    t = 0.0
    e = 0.0
    while t < 1.0 and np.min(p) > -1.0:
        acc = -9.81 - k * v * np.abs(v)
        if np.max(v) > 3.0:
            v = v * 0.9
        v = v + 0.01 * acc
        p = p + 0.01 * v
        e = e + 0.005 * np.sum(v * v)
        t = t + 0.01
    return np.sum(p) + e


def newton_in_steps(a, b):
    s = 0.0
    x = a
    for j in range(4):
        c = b + j * a
        while np.abs(x * x - c) > 1e-12:
            x = 0.5 * (x + c / x)
        s = s + x * a
    return s


def lax_while_sim(x0, k):
    def keep_going(s):
        x, t = s
        return np.logical_and(t < 1.0, np.max(np.abs(x)) < 10.0)

    def step(s):
        x, t = s
        return x + 0.01 * np.sin(k * x), t + 0.01

    x, t = srcjax.lax.while_loop(keep_going, step, (x0, 0.0))
    return np.sum(x * x)


jax_twin = twins.jax_twin


PROJ = (np.float64(3.0), np.float64(0.9), np.float64(0.05))  # 46 steps
PARTICLES = (np.linspace(1.0, 2.0, 4), np.linspace(0.2, 1.0, 4), np.float64(0.1))  # 100 steps
NEWTON = (np.float64(1.5), np.float64(2.0))
LAX = (np.linspace(0.1, 1.0, 3), np.float64(1.5))  # 100 steps

SMALL, LARGE = 10, 300


def _hlo(make, args, n):
    return srcjax.lower(make(n), *args).as_text()


def assert_same_program(texts):
    """The StableHLO at the small and the large bound: the same lines, lengths within the digits of N."""
    small, large = texts
    assert small.count("\n") == large.count("\n"), (small.count("\n"), large.count("\n"))
    assert small.count("stablehlo.while") == large.count("stablehlo.while")
    assert len(large) < 1.05 * len(small), (len(small), len(large))


CASES = {
    "grad projectile": (lambda n: srcjax.grad(projectile, argnums=(0, 1, 2), max_iters=n), PROJ),
    "value_and_grad projectile": (lambda n: srcjax.value_and_grad(projectile, argnums=(0, 1, 2), max_iters=n),
                                  PROJ),
    "jacrev projectile": (lambda n: srcjax.jacrev(projectile, max_iters=n), PROJ),
    "hessian projectile": (lambda n: srcjax.hessian(projectile, max_iters=n), PROJ),
    "grad particles": (lambda n: srcjax.grad(particles, argnums=(0, 1, 2), max_iters=n), PARTICLES),
    "hessian particles": (lambda n: srcjax.hessian(particles, argnums=1, max_iters=n), PARTICLES),
    "grad while in a for": (lambda n: srcjax.grad(newton_in_steps, argnums=(0, 1), max_iters=n), NEWTON),
    "hessian while in a for": (lambda n: srcjax.hessian(newton_in_steps, max_iters=n), NEWTON),
    "grad lax.while_loop": (lambda n: srcjax.grad(lax_while_sim, argnums=(0, 1), max_iters=n), LAX),
}


@pytest.mark.parametrize("name", list(CASES))
def test_program_does_not_grow_with_max_iters(name):
    make, args = CASES[name]
    assert_same_program([_hlo(make, args, n) for n in (SMALL, LARGE)])


@pytest.mark.parametrize("fn,args", [(projectile, PROJ), (particles, PARTICLES), (newton_in_steps, NEWTON),
                                     (lax_while_sim, LAX)], ids=["projectile", "particles", "while in a for",
                                                                  "lax.while_loop"])
def test_split_vjp_halves_do_not_grow_with_max_iters(fn, args):
    fwd, bwd = [], []
    for n in (SMALL, LARGE):
        _, f = srcjax.vjp(fn, *args, max_iters=n)
        assert f.recomputes is False
        f(1.0)
        assert f._halves.recompute is None  # both halves ran, as two programs
        fwd.append(srcjax.lower(f._halves.fwd, *args).as_text())
        bwd.append(srcjax.lower(f._halves.bwd, *f._saved, np.float64(1.0)).as_text())
    assert_same_program(fwd)
    assert_same_program(bwd)


# -- the numbers stay right ----------------------------------------------------------------------

def test_projectile_derivatives_against_jax_and_fd():
    g = srcjax.grad(projectile, argnums=(0, 1, 2), max_iters=200)(*PROJ)
    ref = JAX.grad(jax_twin(projectile), argnums=(0, 1, 2))(*PROJ)
    for i in range(3):
        np.testing.assert_allclose(float(g[i]), float(ref[i]), rtol=1e-10)
        np.testing.assert_allclose(float(g[i]), central_fd(projectile, PROJ, i), rtol=1e-5)
    v, gv = srcjax.value_and_grad(projectile, argnums=(0, 1, 2), max_iters=200)(*PROJ)
    np.testing.assert_allclose(float(v), projectile(*(float(a) for a in PROJ)), rtol=1e-12)
    np.testing.assert_allclose([float(a) for a in gv], [float(a) for a in g], rtol=1e-12)
    _, f = srcjax.vjp(projectile, *PROJ, max_iters=200)
    np.testing.assert_allclose([float(a) for a in f(1.0)], [float(a) for a in g], rtol=1e-12)
    H = np.asarray(srcjax.hessian(projectile, max_iters=200)(*PROJ))
    dg = central_fd(lambda v0, a, d: float(srcjax.grad(projectile, max_iters=200)(v0, a, d)), PROJ, 0)
    np.testing.assert_allclose(H, dg, rtol=1e-5, atol=1e-8)


def test_a_bound_below_the_trip_count_truncates_in_every_transformation():
    ref = [float(a) for a in JAX.grad(jax_twin(projectile_steps), argnums=(0, 1, 2))(*PROJ, 20)]
    g = [float(a) for a in srcjax.grad(projectile, argnums=(0, 1, 2), max_iters=20)(*PROJ)]
    np.testing.assert_allclose(g, ref, rtol=1e-10)
    _, f = srcjax.vjp(projectile, *PROJ, max_iters=20)
    np.testing.assert_allclose([float(a) for a in f(1.0)], ref, rtol=1e-10)
    _, gv = srcjax.value_and_grad(projectile, argnums=(0, 1, 2), max_iters=20)(*PROJ)
    np.testing.assert_allclose([float(a) for a in gv], ref, rtol=1e-10)
    assert not np.allclose(g, [float(a) for a in JAX.grad(jax_twin(projectile), argnums=(0, 1, 2))(*PROJ)],
                           rtol=1e-3)


def test_particles_gradient_and_vjp_against_jax():
    ref = JAX.grad(jax_twin(particles), argnums=(0, 1, 2))(*PARTICLES)
    g = srcjax.grad(particles, argnums=(0, 1, 2), max_iters=300)(*PARTICLES)
    _, f = srcjax.vjp(particles, *PARTICLES, max_iters=300)
    for a, b, c in zip(g, f(1.0), ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(b), np.asarray(c), rtol=1e-10, atol=1e-12)
    H = np.asarray(srcjax.hessian(particles, argnums=1, max_iters=300)(*PARTICLES))
    g = srcjax.grad(particles, argnums=1, max_iters=300)
    dg = np.stack([central_fd(lambda p, v, k, i=i: np.asarray(g(p, v, k))[i], PARTICLES, 1) for i in range(4)])
    np.testing.assert_allclose(H, dg, rtol=1e-5, atol=1e-7)


def test_while_in_a_for_every_transformation_against_jax():
    ref = JAX.grad(jax_twin(newton_in_steps), argnums=(0, 1))(*NEWTON)
    g = srcjax.grad(newton_in_steps, argnums=(0, 1), max_iters=40)(*NEWTON)
    _, f = srcjax.vjp(newton_in_steps, *NEWTON, max_iters=40)
    for a, b, c in zip(g, f(1.0), ref):
        np.testing.assert_allclose(float(a), float(c), rtol=1e-10)
        np.testing.assert_allclose(float(b), float(c), rtol=1e-10)
    via_numpy = srcjax.numpy_function(srcjax.grad(newton_in_steps, argnums=(0, 1), max_iters=40))(*NEWTON)
    np.testing.assert_allclose([float(a) for a in via_numpy], [float(a) for a in ref], rtol=1e-10)
    H = np.asarray(srcjax.hessian(newton_in_steps, max_iters=40)(*NEWTON))
    dg = central_fd(lambda a, b: float(srcjax.grad(newton_in_steps, max_iters=40)(a, b)), NEWTON, 0)
    np.testing.assert_allclose(H, dg, rtol=1e-5, atol=1e-8)


def test_lax_while_loop_under_grad_against_fd():
    g = srcjax.grad(lax_while_sim, argnums=(0, 1), max_iters=300)(*LAX)
    _, f = srcjax.vjp(lax_while_sim, *LAX, max_iters=300)
    for i, (a, b) in enumerate(zip(g, f(1.0))):
        np.testing.assert_allclose(np.asarray(a), central_fd(lax_while_sim, LAX, i), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
