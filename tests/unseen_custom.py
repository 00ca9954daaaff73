"""A custom_jvp rule that calls its own function, used together with a custom_vjp (test_ad_unseen.py)."""

import numpy as np

import srcjax


@srcjax.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1.0 + np.exp(-x))


@srcjax.custom_vjp
def clip_gradient(x):
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(res, g):
    return (np.clip(g, -0.1, 0.1),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def softplus_twice(x):
    return np.sum(softplus(x) * softplus(x * 3.0))


def softplus_and_clip(x):
    return np.sum(softplus(x) * clip_gradient(x * 3.0))


def two_arguments(a, b):
    return np.sum(a * np.exp(b)) + np.sum(a ** 2 * b)
