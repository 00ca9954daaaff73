"""Bulk upload of NumPy arguments (issue #18): a ``value_and_grad`` training step of an MLP with
list-of-dict params (6 and 40 leaves), NumPy inputs, in a tight loop: srcjax uploading the leaves
together in one host-callback execution (``runtime/host_upload.py``), srcjax one
``batched_device_put`` per leaf (the previous path), and ``jax.jit``; 7 interleaved rounds, medians.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_upload.py
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import srcjax
from srcjax.runtime import host_upload


def loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = np.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return np.mean((out - y) ** 2)


def jloss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = jnp.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return jnp.mean((out - y) ** 2)


def main() -> None:
    rng = np.random.default_rng(0)
    print("| leaves | srcjax bulk us | srcjax per leaf us | jax us | bulk/jax | per leaf/jax |")
    print("|---:|---:|---:|---:|---:|---:|")
    for sizes in ([16, 32, 32, 4], [16] + [32] * 19 + [4]):
        params = [{"w": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), "b": np.zeros(b, np.float32)}
                  for a, b in zip(sizes[:-1], sizes[1:])]
        x = rng.standard_normal((32, 16)).astype(np.float32)
        y = rng.standard_normal((32, 4)).astype(np.float32)
        sj = srcjax.value_and_grad(loss)
        jx = jax.jit(jax.value_and_grad(jloss))
        real = host_upload.upload

        def run(f, params=params, x=x, y=y, jx=jx, n=300):
            for _ in range(20):
                r = f(params, x, y)
            t = time.perf_counter()
            for _ in range(n):
                r = f(params, x, y)
            jax.block_until_ready(r) if f is jx else r[0].block_until_ready()
            return (time.perf_counter() - t) / n * 1e6

        res: dict[str, list[float]] = {"bulk": [], "per-leaf": [], "jax": []}
        for _ in range(7):
            host_upload.upload = real
            res["bulk"].append(run(sj))
            host_upload.upload = lambda *a: None  # noqa: E731  (the per-leaf path)
            res["per-leaf"].append(run(sj))
            res["jax"].append(run(jx))
        host_upload.upload = real
        m = {k: statistics.median(v) for k, v in res.items()}
        print(f"| {2 * len(params)} | {m['bulk']:.1f} | {m['per-leaf']:.1f} | {m['jax']:.1f} | "
              f"{m['bulk'] / m['jax']:.2f} | {m['per-leaf'] / m['jax']:.2f} |")


if __name__ == "__main__":
    main()
