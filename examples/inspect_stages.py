"""Every stage srcjax goes through, printed for softmax and layer norm.

    .venv/bin/python examples/inspect_stages.py

1. ``srcjax.source(f)``: the normalized program, as Python (one operation per
   line, readable temporaries). It is what gets lowered, and it runs as-is
   with NumPy (``srcjax.numpy_function(f)``), which the script checks.
2. ``srcjax.lower(f, *args).as_text()``: StableHLO for these argument shapes
   (``as_text(debug_info=True)`` keeps ``loc(...)`` of your source lines).
3. ``srcjax.lower(f, *args).compile().as_text()``: the HLO after XLA's
   optimization passes (fusion, layout), i.e. what actually runs.
"""

from __future__ import annotations

import numpy as np

import srcjax


def softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def layer_norm(x, gamma, beta):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def banner(text: str) -> None:
    print(f"\n{'=' * 8} {text} {'=' * max(0, 70 - len(text))}")


def inspect(fn, *args) -> None:
    banner(f"{fn.__name__}: 1. srcjax.source")
    print(srcjax.source(fn).rstrip())

    lowered = srcjax.lower(fn, *args)
    shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in args)
    banner(f"{fn.__name__}: 2. StableHLO for ({shapes})")
    print(lowered.as_text().rstrip())

    banner(f"{fn.__name__}: 3. optimized HLO (after XLA's passes)")
    print(lowered.compile().as_text().rstrip())

    # The three ways to run it agree: the original with NumPy, the generated source with
    # NumPy, and the XLA executable.
    expected = fn(*args)
    generated = srcjax.numpy_function(fn)(*args)
    compiled = np.asarray(srcjax.compile(fn)(*args))
    np.testing.assert_allclose(generated, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(compiled, expected, rtol=1e-5, atol=1e-5)
    banner(f"{fn.__name__}: original, generated source and XLA agree "
           f"(max |xla - numpy| = {np.abs(compiled - expected).max():.1e})")


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    inspect(softmax, x)
    inspect(layer_norm, x, np.ones(8, np.float32), np.zeros(8, np.float32))


if __name__ == "__main__":
    main()
