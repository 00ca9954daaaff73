"""srcjax.custom_vjp for numerical stability: the gradient of softplus at large inputs.

    .venv/bin/python examples/custom_vjp.py

softplus(x) = log(1 + exp(x)) is written below with `np.where(x > 30, x, ...)`
so that its *value* never overflows. Its derivative, differentiated from that
body, still does: the branch that `where` discards is differentiated too, and
its cotangent 0 meets d exp(x)/dx = inf, giving 0 * inf = nan (the same
happens in jax.grad). A custom_vjp rule states the derivative directly as
1 / (1 + exp(-x)), exact for every x. srcjax transpiles the rule like any
code; the generated gradient calls it (printed at the end), compiled by XLA
or run as plain NumPy.
"""

from __future__ import annotations

import numpy as np

import srcjax


def softplus_naive(x):
    return np.where(x > 30.0, x, np.log1p(np.exp(x)))


@srcjax.custom_vjp
def softplus(x):
    return np.where(x > 30.0, x, np.log1p(np.exp(x)))


def softplus_fwd(x):
    return softplus(x), x  # the output, and what the backward rule needs (residuals)


def softplus_bwd(x, g):
    return (g / (1 + np.exp(-x)),)  # sigmoid(x) * g: exp(-x) can only overflow to a cotangent of 0


softplus.defvjp(softplus_fwd, softplus_bwd)


def total(x):
    return np.sum(softplus(x))


def total_naive(x):
    return np.sum(softplus_naive(x))


def logistic_loss(w, X, y):
    """Mean logistic loss of labels y in {-1, 1}: softplus(-margin)."""
    margins = y * (X @ w)
    return np.mean(softplus(-margins))


def logistic_loss_naive(w, X, y):
    margins = y * (X @ w)
    return np.mean(softplus_naive(-margins))


def main() -> None:
    x = np.array([-1000.0, -50.0, 0.0, 20.0, 50.0, 100.0, 1000.0], dtype=np.float32)
    rule, naive = srcjax.grad(total), srcjax.grad(total_naive)
    with np.errstate(over="ignore"):
        exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    print("d/dx softplus(x), float32 (one gradient call for the whole vector):")
    print(f"  {'x':>8} {'differentiated body':>20} {'custom_vjp rule':>16} {'exact':>10}")
    for xi, a, b, e in zip(x, np.asarray(naive(x)), np.asarray(rule(x)), exact):
        print(f"  {xi:8g} {a:20.6g} {b:16.6g} {e:10.6g}")
    assert np.isnan(np.asarray(naive(x))[-1]) and np.allclose(rule(x), exact, rtol=1e-6)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    y = np.where(rng.normal(size=8) > 0, 1.0, -1.0)
    w = 3000.0 * rng.normal(size=3)  # badly scaled weights: margins beyond +-709, where exp overflows
    g = srcjax.grad(logistic_loss)
    print(f"\nlogistic loss, float64, margins from {np.min(y * (X @ w)):.0f} to {np.max(y * (X @ w)):.0f}:")
    print(f"  loss {float(srcjax.compile(logistic_loss)(w, X, y)):.4f} (naive: "
          f"{float(srcjax.compile(logistic_loss_naive)(w, X, y)):.4f})")
    print(f"  gradient, differentiated body: {np.asarray(srcjax.grad(logistic_loss_naive)(w, X, y))}")
    print(f"  gradient, custom_vjp rule:     {np.asarray(g(w, X, y))}")
    eps = 1e-6
    with np.errstate(over="ignore"):  # NumPy evaluates exp in where's discarded branch too
        fd = np.array([(logistic_loss(w + eps * e, X, y) - logistic_loss(w - eps * e, X, y)) / (2 * eps)
                       for e in np.eye(3)])
        by_numpy = srcjax.numpy_function(g)(w, X, y)  # the generated source, run by NumPy
    print(f"  finite differences:            {fd}")
    print(f"  matches finite differences and the NumPy run of the generated source: "
          f"{np.allclose(g(w, X, y), fd, rtol=1e-6) and np.allclose(by_numpy, g(w, X, y), rtol=1e-12)}")

    print("\nsrcjax.source(srcjax.grad(logistic_loss)), the gradient that ran (its rule calls are ordinary calls):\n")
    print(srcjax.source(g))


if __name__ == "__main__":
    main()
