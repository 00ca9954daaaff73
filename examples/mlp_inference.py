"""Quick start: compile a small MLP classifier with srcjax and look at every stage.

    .venv/bin/python examples/mlp_inference.py

It builds a 784-128-10 MLP with random weights, runs the ``@srcjax.compile``'d
``predict`` on a batch (XLA on the CPU), checks the result against plain
NumPy, then prints the Python srcjax generated, the start of the StableHLO,
an ``eval_shape`` result (shapes only, nothing runs) and a timing against
NumPy. Finishes in a few seconds.
"""

from __future__ import annotations

import time

import numpy as np

import srcjax


@srcjax.compile
def predict(params, x):
    """Class probabilities and predicted labels for a batch of flattened images."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    z = logits - np.max(logits, axis=-1, keepdims=True)
    e = np.exp(z)
    probs = e / np.sum(e, axis=-1, keepdims=True)
    return probs, np.argmax(logits, axis=-1)


def init_params(rng: np.random.Generator, sizes: list[int]) -> tuple[np.ndarray, ...]:
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        params.append(np.zeros(n_out, np.float32))
    return tuple(params)


def median_ms(fn, reps: int = 50) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t) / 1e6)
    return float(np.median(times))


def main() -> None:
    rng = np.random.default_rng(0)
    params = init_params(rng, [784, 128, 10])
    x = rng.standard_normal((256, 784)).astype(np.float32)

    # 1. Run it. The first call reads the source, specializes it for these shapes and
    #    compiles it with XLA; later calls with the same shapes reuse the executable.
    t = time.perf_counter()
    probs, labels = predict(params, x)
    first_ms = (time.perf_counter() - t) * 1e3
    print(f"predict(params, x): probs {probs.shape} {probs.dtype}, labels {labels.shape} {labels.dtype}"
          f"  (first call incl. compile: {first_ms:.0f} ms)")
    print(f"  results are {type(probs).__name__} objects on the device; first 8 labels: {np.asarray(labels)[:8]}")

    # 2. Check against NumPy: the undecorated function is the reference.
    ref_probs, ref_labels = predict.__wrapped__(params, x)
    np.testing.assert_allclose(np.asarray(probs), ref_probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(labels), ref_labels)
    print(f"  matches NumPy: max |probs - numpy| = {np.abs(np.asarray(probs) - ref_probs).max():.2e}, "
          "labels equal")

    # 3. The program that runs, as Python (it also runs with NumPy: srcjax.numpy_function(predict)).
    print("\n--- srcjax.source(predict) ---")
    print(srcjax.source(predict))

    # 4. The StableHLO it lowers to for these argument shapes.
    hlo = srcjax.lower(predict, params, x).as_text().splitlines()
    print(f"--- srcjax.lower(predict, params, x).as_text()  (first 8 of {len(hlo)} lines) ---")
    print("\n".join(hlo[:8]))
    print("    ...\n")

    # 5. Shapes and dtypes for another batch size, computed without running anything.
    spec = srcjax.ShapeDtypeStruct((1000, 784), np.float32)
    print("srcjax.eval_shape(predict, params, ShapeDtypeStruct((1000, 784), float32)):")
    print(f"  {srcjax.eval_shape(predict, params, spec)}")

    # 6. Time per call against NumPy: NumPy inputs uploaded on every call, results read back.
    t_srcjax = median_ms(lambda: [np.asarray(o) for o in predict(params, x)])
    t_numpy = median_ms(lambda: predict.__wrapped__(params, x))
    print(f"\nmedian time per call, batch {x.shape[0]}: srcjax (XLA CPU) {t_srcjax:.3f} ms, "
          f"NumPy {t_numpy:.3f} ms (srcjax/NumPy time ratio {t_srcjax / t_numpy:.2f})")


if __name__ == "__main__":
    main()
