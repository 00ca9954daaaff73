"""Convolutions and pooling: srcjax vs jax.jit vs NumPy, per-call time of forward passes and gradients.

Run (from the repository root, in the venv that has jax, the oracle)::

    .venv/bin/python benchmarks/bench_conv.py            # batch 8 and 32
    .venv/bin/python benchmarks/bench_conv.py --quick    # a smoke run

Workloads on float32 NHWC images of 32x32 with 16 channels (``HWIO`` kernels):

* ``conv3x3 fwd``   ``srcjax.lax.conv_general_dilated`` with a 3x3x16x32 kernel, 'SAME';
* ``conv3x3 grad``  the gradient of ``sum(conv(x, w) ** 2)`` w.r.t. the kernel and the input (the two
  transposes: a convolution of the cotangent with the flipped kernel, one of the input with the cotangent);
* ``maxpool fwd``   ``reduce_window`` max, 2x2, stride 2; ``maxpool grad`` its gradient (srcjax: one-hot patches
  and their transpose; jax: ``select_and_scatter_add``);
* ``cnn grad``      the gradient of a two-layer CNN loss (conv, relu, max pool, conv, mean, linear head).

srcjax is ``srcjax.compile(f)`` / ``srcjax.grad(f)``; jax is ``jax.jit`` of the same code with ``srcjax.lax``
replaced by ``jax.lax`` (``jax.jit(jax.grad(...))``); NumPy runs srcjax's reference implementation of the
forward (``sliding_window_view`` and ``einsum``). Cells are the median time per call in microseconds
(``bench_foundation.measure``: interleaved batches, results forced, NumPy inputs); ``sj/jax`` and ``sj/np``
are ratios of medians (below 1 srcjax is faster).
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover
    sys.exit("bench_conv.py needs jax: it is the comparison oracle")

from bench_foundation import measure  # same directory as this script

NHWC = ("NHWC", "HWIO", "NHWC")


def conv3x3(x, w):
    return srcjax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC)


def conv_loss(x, w):
    return np.sum(conv3x3(x, w) ** 2)


def maxpool(x):
    return srcjax.lax.reduce_window(x, -np.inf, srcjax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def pool_loss(x):
    return np.sum(maxpool(x) ** 2)


def cnn_loss(x, w1, w2, v):
    h = np.maximum(srcjax.lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=NHWC), 0.0)
    h = srcjax.lax.reduce_window(h, -np.inf, srcjax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = np.maximum(srcjax.lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=NHWC), 0.0)
    return np.sum((np.mean(h, axis=(1, 2)) @ v) ** 2)


class _JaxNames:
    """``srcjax`` for the jax twin: ``srcjax.lax`` is ``jax.lax``."""

    lax = jax.lax


def as_jax(fn: Callable[..., Any]) -> Callable[..., Any]:
    g = dict(fn.__globals__)
    g.update(np=jnp, srcjax=_JaxNames)
    for name in ("conv3x3", "maxpool"):
        g[name] = types.FunctionType(fn.__globals__[name].__code__, g, name)
    return types.FunctionType(fn.__code__, g, fn.__name__ + "_jax")


def force(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(np.asarray(a) for a in x)
    return np.asarray(x)


def close(a: Any, b: Any) -> None:
    for p, q in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
        np.testing.assert_allclose(p, q, rtol=2e-3, atol=2e-3 * max(1.0, float(np.max(np.abs(q)))))


def row(label: str, batch: int, t: dict[str, float]) -> None:
    np_t = t.get("np")
    np_cell = f"{np_t:.0f}" if np_t else "-"
    np_ratio = f"{t['sj'] / np_t:.2f}" if np_t else "-"
    print(f"{label:<14}{batch:>6}{t['sj']:>12.0f}{t['jax']:>12.0f}{np_cell:>12}{t['sj'] / t['jax']:>9.2f}"
          f"{np_ratio:>9}", flush=True)


def bench_forward(f: Callable[..., Any], args: tuple[Any, ...], rounds: int, numpy: bool) -> dict[str, float]:
    sj, jj = srcjax.compile(f), jax.jit(as_jax(f))
    ref = jj(*args)
    close(force(sj(*args)), ref)
    fns = {"sj": lambda: force(sj(*args)), "jax": lambda: force(jj(*args))}
    if numpy:
        close(f(*args), ref)
        fns["np"] = lambda: f(*args)
    return measure(fns, rounds, 2e7)


def bench_grad(f: Callable[..., Any], args: tuple[Any, ...], rounds: int) -> dict[str, float]:
    nums = tuple(range(len(args)))
    sg, jg = srcjax.grad(f, argnums=nums), jax.jit(jax.grad(as_jax(f), argnums=nums))
    close(force(sg(*args)), force(jg(*args)))
    return measure({"sj": lambda: force(sg(*args)), "jax": lambda: force(jg(*args))}, rounds, 2e7)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, nargs="*", default=[8, 32])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="batch 2, 2 rounds")
    a = ap.parse_args()
    if a.quick:
        a.batch, a.rounds = [2], 2
    rng = np.random.default_rng(0)
    f32 = np.float32
    print(f"{'workload':<14}{'batch':>6}{'srcjax':>12}{'jax.jit':>12}{'numpy':>12}{'sj/jax':>9}{'sj/np':>9}"
          "   (us per call)")
    for n in a.batch:
        x = rng.standard_normal((n, 32, 32, 16)).astype(f32)
        w = (rng.standard_normal((3, 3, 16, 32)) * 0.1).astype(f32)
        w2 = (rng.standard_normal((3, 3, 32, 32)) * 0.1).astype(f32)
        v = (rng.standard_normal((32, 10)) * 0.1).astype(f32)
        row("conv3x3 fwd", n, bench_forward(conv3x3, (x, w), a.rounds, numpy=True))
        row("conv3x3 grad", n, bench_grad(conv_loss, (x, w), a.rounds))
        row("maxpool fwd", n, bench_forward(maxpool, (x,), a.rounds, numpy=True))
        row("maxpool grad", n, bench_grad(pool_loss, (x,), a.rounds))
        row("cnn grad", n, bench_grad(cnn_loss, (x, w, w2, v), a.rounds))


if __name__ == "__main__":
    main()
