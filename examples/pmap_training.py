"""Data parallelism JAX's older way: ``srcjax.pmap``, one program per device, gradients ``pmean``-ed.

Each of 4 CPU devices runs the training step on its quarter of the batch; ``srcjax.lax.pmean(grads,
"data")`` averages the gradients across the devices (a ``stablehlo.all_reduce``), so every device
makes the same update and the losses equal those of one device training on the whole batch.
Compare ``examples/data_parallel.py``, where one program is split by XLA's SPMD partitioner. Run:

    python examples/pmap_training.py [--steps N]

(4 CPU devices: the script sets ``SRCJAX_NUM_CPU_DEVICES=4`` before srcjax makes its client.)
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("SRCJAX_NUM_CPU_DEVICES", "4")

import numpy as np  # noqa: E402

import srcjax  # noqa: E402

N = 4


def loss(params, x, labels):
    h = np.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    z = logits - np.max(logits, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=-1))


def update(params, x, labels):
    value, grads = srcjax.value_and_grad(loss)(params, x, labels)
    grads = srcjax.lax.pmean(grads, "data")  # the mean over the devices: the whole batch's gradient
    new = srcjax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
    return new, srcjax.lax.pmean(value, "data")


def one_device_step(params, x, labels):
    value, grads = srcjax.value_and_grad(loss)(params, x, labels)
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads), value


def make_data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    k = rng.integers(0, 3, size=n)
    pts = np.stack([np.cos(2 * np.pi * k / 3), np.sin(2 * np.pi * k / 3)], axis=1) + rng.normal(scale=0.6, size=(n, 2))
    x = np.tanh(pts @ rng.normal(size=(2, 8))).astype(np.float32)
    return x, np.eye(3, dtype=np.float32)[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x, y = make_data(512, rng)
    params = {"w1": (rng.normal(size=(8, 32)) / np.sqrt(8)).astype(np.float32), "b1": np.zeros(32, np.float32),
              "w2": (rng.normal(size=(32, 3)) / np.sqrt(32)).astype(np.float32), "b2": np.zeros(3, np.float32)}

    print(f"devices: {srcjax.devices()}")
    step = srcjax.pmap(update, "data", out_axes=(0, None))  # new parameters per device; the loss, once
    replicated = {k: np.stack([v] * N) for k, v in params.items()}  # a copy of the parameters per device
    xs, ys = x.reshape(N, -1, x.shape[1]), y.reshape(N, -1, y.shape[1])  # a quarter of the batch each

    one = srcjax.jit(one_device_step)
    p4, p1 = replicated, params
    for k in range(args.steps):
        p4, loss4 = step(p4, xs, ys)
        p1, loss1 = one(p1, x, y)
        assert np.allclose(float(loss4), float(loss1), rtol=1e-5), (k, float(loss4), float(loss1))
        if k % 5 == 0 or k == args.steps - 1:
            print(f"step {k:3d}  loss with pmap on 4 devices {float(loss4):.6f}   on one device {float(loss1):.6f}")
    print("same losses with pmap on 4 devices as on one: True")
    print(f"parameters: {p4['w1'].shape} laid out as {p4['w1'].sharding.spec} over {p4['w1'].sharding.mesh}, "
          "fed straight back (no host copy)")

    print("\nthe program each device runs (srcjax.source):\n")
    print(srcjax.source(step))
    text = step.lower(p4, xs, ys).as_text()
    reduce = [line.strip() for line in text.splitlines() if "stablehlo.all_reduce" in line]
    print(f"its StableHLO has {len(reduce)} all_reduce(s) over replica groups, e.g.:\n  {reduce[0][:120]}")


if __name__ == "__main__":
    main()
