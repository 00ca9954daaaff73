"""Data parallelism: an MLP trained with its batch sharded over 4 CPU devices, the same losses as on one.

The training step is ordinary srcjax code (``value_and_grad`` and an SGD update). Laying the batch
out over a mesh of 4 devices (``srcjax.device_put(x, NamedSharding(mesh, P("data")))``) is all it
takes: the step is compiled once for all 4 devices, XLA's SPMD partitioner splits it and sums the
gradients across devices (the all-reduce shown at the end). Run:

    python examples/data_parallel.py [--steps N]

(4 CPU devices: the script sets ``SRCJAX_NUM_CPU_DEVICES=4`` before srcjax makes its client.)
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("SRCJAX_NUM_CPU_DEVICES", "4")

import numpy as np  # noqa: E402

import srcjax  # noqa: E402
from srcjax.sharding import NamedSharding, P  # noqa: E402


def loss(params, x, labels):
    h = np.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    z = logits - np.max(logits, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=-1))


def train_step(params, x, labels):
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
    mesh = srcjax.make_mesh((4,), ("data",))
    replicated, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    step = srcjax.jit(train_step, out_shardings=replicated)  # parameters and loss: whole on every device
    p4 = srcjax.device_put(params, replicated)
    x4, y4 = srcjax.device_put(x, batch), srcjax.device_put(y, batch)
    print(f"x laid out as {x4.sharding.spec}: {[(s.device.id, s.index[0]) for s in x4.addressable_shards]}")

    one = srcjax.jit(train_step)  # the same step on one device
    p1 = params
    for k in range(args.steps):
        p4, loss4 = step(p4, x4, y4)
        p1, loss1 = one(p1, x, y)
        assert np.allclose(float(loss4), float(loss1), rtol=1e-5), (k, float(loss4), float(loss1))
        if k % 5 == 0 or k == args.steps - 1:
            print(f"step {k:3d}  loss on 4 devices {float(loss4):.6f}   on one device {float(loss1):.6f}")
    print("same losses on 4 devices as on one: True")
    print(f"parameters stay replicated: {p4['w1'].sharding.spec}, the outputs go straight back in (no host copy)")

    hlo = step.lower(p4, x4, y4).compile().as_text()
    reduce = [line.strip() for line in hlo.splitlines() if "all-reduce(" in line]
    print(f"one device's program takes its {x.shape[0] // 4} rows and sums the gradients with "
          f"{len(reduce)} all-reduce(s), e.g.:\n  {reduce[0][:150]}")


if __name__ == "__main__":
    main()
