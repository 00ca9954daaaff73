"""Four small programs written the way a JAX user writes them, run by srcjax, each checked against
NumPy: linear regression, an MLP classifier with list-of-dicts parameters and SGD (with dropout from
srcjax.random), per-example gradients with vmap, and a physics simulation whose `while` loop runs
until the data says stop, differentiated with respect to the launch angle.

Run: python examples/coming_from_jax.py [--steps N]
"""

from __future__ import annotations

import argparse

import numpy as np

import srcjax

# -- 1. linear regression: a dict of parameters, grad, tree_map -----------------------------------


def linear_loss(params, x, y):
    pred = x @ params["w"] + params["b"]
    return np.mean((pred - y) ** 2)


@srcjax.jit
def linear_update(params, x, y):
    grads = srcjax.grad(linear_loss)(params, x, y)
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def linear_regression(steps: int) -> bool:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.3
    params = {"w": np.zeros(3), "b": np.array(0.0)}
    ref = {"w": np.zeros(3), "b": np.array(0.0)}
    for _ in range(steps):
        params = linear_update(params, x, y)
        r = x @ ref["w"] + ref["b"] - y  # the gradient by hand, in NumPy
        ref = {"w": ref["w"] - 0.1 * 2 * x.T @ r / len(y), "b": ref["b"] - 0.1 * 2 * np.mean(r)}
    ok = np.allclose(np.asarray(params["w"]), ref["w"]) and np.allclose(np.asarray(params["b"]), ref["b"])
    print(f"1. linear regression: w = {np.round(np.asarray(params['w']), 3)}, b = {float(params['b']):.3f}; "
          f"matches NumPy: {ok}")
    return ok


# -- 2. an MLP classifier: list-of-dicts parameters, dropout, SGD with a dict comprehension -------


def mlp_logits(params, x):
    for layer in params[:-1]:
        x = np.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def mlp_loss(params, key, x, labels):
    keep = srcjax.random.bernoulli(key, 0.9, x.shape)  # dropout on the inputs
    logits = mlp_logits(params, np.where(keep, x / 0.9, 0.0))
    logits = logits - np.max(logits, axis=1, keepdims=True)
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(x.shape[0]), labels])


@srcjax.jit
def mlp_step(params, key, x, labels):
    key, sub = srcjax.random.split(key)
    loss, grads = srcjax.value_and_grad(mlp_loss)(params, sub, x, labels)
    new = [{k: p[k] - 0.5 * g[k] for k in p} for p, g in zip(params, grads)]
    return new, key, loss


def mlp_classifier(steps: int) -> bool:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(128, 2))
    labels = (x[:, 0] * x[:, 1] > 0).astype(np.int64)  # XOR of the signs
    sizes = [2, 16, 16, 2]
    params = [{"w": rng.normal(size=(a, b)) / np.sqrt(a), "b": np.zeros(b)} for a, b in zip(sizes, sizes[1:])]
    key = srcjax.random.key(0)
    on_numpy = srcjax.compile(mlp_step.fn, device="numpy")  # the same generated source, run by NumPy
    ref_params, ref_key = params, key
    for _ in range(steps):
        params, key, loss = mlp_step(params, key, x, labels)
        ref_params, ref_key, ref_loss = on_numpy(ref_params, ref_key, x, labels)
    accuracy = np.mean(np.argmax(np.asarray(mlp_logits(params, x)), axis=1) == labels)
    ok = bool(np.allclose(float(loss), float(ref_loss), rtol=1e-6)) and all(
        np.allclose(np.asarray(p[k]), r[k], rtol=1e-5, atol=1e-8) for p, r in zip(params, ref_params) for k in p)
    print(f"2. MLP classifier: loss {float(loss):.3f}, training accuracy {accuracy:.2f}; matches NumPy: {ok}")
    return ok


# -- 3. per-example gradients: vmap of grad ---------------------------------------------------------


def example_loss(w, x, y):
    return (np.tanh(x @ w) - y) ** 2


def per_example_gradients() -> bool:
    rng = np.random.default_rng(2)
    w, xs, ys = rng.normal(size=3), rng.normal(size=(8, 3)), rng.normal(size=8)
    per_example = srcjax.vmap(srcjax.grad(example_loss), in_axes=(None, 0, 0))
    got = np.asarray(per_example(w, xs, ys))
    t = np.tanh(xs @ w)  # by hand, in NumPy: d/dw (tanh(x.w) - y)^2 for each example
    want = (2 * (t - ys) * (1 - t ** 2))[:, None] * xs
    ok = bool(np.allclose(got, want))
    print(f"3. per-example gradients: {got.shape} (one row per example); matches NumPy: {ok}")
    return ok


# -- 4. physics: a projectile with drag, integrated until it lands ---------------------------------


def landing_distance(angle, speed):
    x, y = 0.0, 0.0
    vx, vy = speed * np.cos(angle), speed * np.sin(angle)
    dt = 0.001
    while y >= 0.0:
        v = np.sqrt(vx * vx + vy * vy)
        vx, vy = vx - 0.1 * v * vx * dt, vy - (9.81 + 0.1 * v * vy) * dt
        x, y = x + vx * dt, y + vy * dt
    return x


def steps_to_land(angle: np.ndarray, speed: np.ndarray) -> int:
    """How many steps the loop takes (NumPy), for the oracle below."""
    x, y, vx, vy, n = 0.0, 0.0, speed * np.cos(angle), speed * np.sin(angle), 0
    while y >= 0.0:
        v = np.sqrt(vx * vx + vy * vy)
        vx, vy = vx - 0.1 * v * vx * 0.001, vy - (9.81 + 0.1 * v * vy) * 0.001
        x, y, n = x + vx * 0.001, y + vy * 0.001, n + 1
    return n


def distance_after(angle: np.ndarray, speed: np.ndarray, n: int) -> float:
    x, vx, vy = 0.0, speed * np.cos(angle), speed * np.sin(angle)
    for _ in range(n):
        v = np.sqrt(vx * vx + vy * vy)
        vx, vy = vx - 0.1 * v * vx * 0.001, vy - (9.81 + 0.1 * v * vy) * 0.001
        x = x + vx * 0.001
    return float(x)


def physics() -> bool:
    angle, speed = np.array(0.6), np.array(20.0)
    got = float(srcjax.jit(landing_distance)(angle, speed))
    want = float(landing_distance(angle, speed))  # the same function, run by NumPy
    slope = float(srcjax.grad(landing_distance, max_iters=5000)(angle, speed))
    # the derivative of the computation that ran (the same number of steps), by finite differences
    n, h = steps_to_land(angle, speed), 1e-6
    fd = (distance_after(angle + h, speed, n) - distance_after(angle - h, speed, n)) / (2 * h)
    ok = bool(np.isclose(got, want) and np.isclose(slope, fd, rtol=1e-5))
    print(f"4. projectile: lands at {got:.3f} m after {n} steps, d(distance)/d(angle) = {slope:.3f} "
          f"(finite differences {fd:.3f}); matches NumPy: {ok}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ns = ap.parse_args()
    results = [linear_regression(ns.steps), mlp_classifier(ns.steps), per_example_gradients(), physics()]
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
