"""Programs jax runs that srcjax refused or got wrong (refuse46): properties of NamedTuple and dataclass
arguments, lambdas with defaults, history lists changed at the front, L-BFGS two-loop recursions, loops over
what a branch on data builds. Each is checked by tests/test_refuse46.py against jax, NumPy and finite
differences."""

import dataclasses
import functools
from typing import Any, NamedTuple

import numpy as np


class Body(NamedTuple):
    pos: Any
    vel: Any

    @property
    def energy(self):
        return 0.5 * np.sum(self.vel ** 2)

    @property
    def momentum(self):  # (one class defines it: read as a call of its getter)
        return np.sum(self.vel, axis=-1)


@dataclasses.dataclass
class Particle:
    pos: Any
    vel: Any

    @property
    def energy(self):  # (Body defines `energy` too: read by the object's class)
        return np.sum(np.sin(self.vel) ** 2)

    @functools.cached_property
    def speed(self):
        return np.sqrt(np.sum(self.vel ** 2) + 1.0)


class Gauss(NamedTuple):
    mu: Any
    log_sigma: Any

    @property
    def sigma(self):
        return np.exp(self.log_sigma)

    @property
    def var(self):  # (a property reading another)
        return self.sigma ** 2

    def logpdf(self, x):  # (a method reading properties)
        return -0.5 * np.sum((x - self.mu) ** 2 / self.var) - np.sum(self.log_sigma)


def body_weighted(b):
    return np.sum(b.pos * b.energy)


def body_momentum(b):
    return np.sum(b.pos * b.momentum[..., None] + np.tanh(b.vel))


def particle_weighted(p):
    return np.sum(p.pos * p.energy) + p.speed


def gauss_nll(g, x):
    return -g.logpdf(x) + 0.1 * np.sum(g.var)


def body_made(x):
    b = Body(x, 2.0 * x)
    return b.energy * np.sum(np.cos(x))


def body_nested(s):
    return np.sum(s[0].energy * s[1].pos)


def lambda_default(x):
    f = lambda v, k=3: v ** k  # noqa: E731
    return np.sum(f(x) + f(x, 2) + f(x, k=1))


def lambda_default_local(x):
    c = np.sum(np.sin(x))
    f = lambda v, s=c: v * s  # noqa: E731
    c = 2.0 * c  # (the default is the value `c` had at the lambda)
    return np.sum(f(x)) + c


def lambda_default_in_loop(x):
    acc = 0.0
    for k in range(1, 4):
        g = lambda v, k=k: np.tanh(v * k)  # noqa: E731
        acc = acc + np.sum(g(x))
    return acc
