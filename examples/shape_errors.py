"""Shape mistakes are caught before anything runs, and point at your line.

    .venv/bin/python examples/shape_errors.py

srcjax infers every shape statically from the source, so a mismatch is
reported while the function is being specialized: no data is needed (the
arguments below are ``srcjax.ShapeDtypeStruct``s, or arrays that are never
uploaded), nothing is compiled, nothing runs. Each error is a
``srcjax.ShapeError`` (a ``srcjax.TranspileError`` and a ``ValueError``)
carrying the file, line and column, the offending line with a caret, the
operand shapes and a hint.
"""

from __future__ import annotations

import numpy as np

import srcjax

S = srcjax.ShapeDtypeStruct


def attention(q, k, v):
    scores = q @ k / q.shape[-1] ** 0.5  # bug: should be q @ k.T
    w = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    w = w / np.sum(w, axis=-1, keepdims=True)
    return w @ v


def center(x):
    return x - np.mean(x, axis=1)  # bug: needs keepdims=True (or [:, None])


def normalize(x):
    return x / np.sum(x, axis=2)  # bug: x has only 2 axes


@srcjax.compile
def predict(w1, b1, w2, x):
    h = np.tanh(x @ w1 + b1)
    return h @ w2


def show(title: str, thunk) -> None:
    print(f"== {title}")
    try:
        result = thunk()
    except srcjax.ShapeError as e:
        print(e)  # file:line:col: error: ..., the source line, a caret, note and hint
        s = e.span
        print(f"   (e.span: {s.filename.rsplit('/', 1)[-1]} line {s.line}, column {s.col + 1})\n")
    else:
        raise SystemExit(f"expected a ShapeError, got {result!r}")


def main() -> None:
    f32 = np.float32
    show("attention with k not transposed (eval_shape: shapes only, no data)",
         lambda: srcjax.eval_shape(attention, S((4, 8), f32), S((4, 8), f32), S((4, 8), f32)))
    show("centering rows without keepdims",
         lambda: srcjax.eval_shape(center, S((3, 4), f32)))
    show("reducing over an axis that does not exist",
         lambda: srcjax.eval_shape(normalize, S((3, 4), f32)))

    rng = np.random.default_rng(0)
    w1, b1, w2 = (rng.standard_normal(s).astype(f32) for s in [(3, 16), (16,), (16, 4)])
    show("a compiled call with a batch of the wrong width (caught before upload or compile)",
         lambda: predict(w1, b1, w2, np.zeros((7, 5), f32)))

    # The same function is fine with the right shapes:
    out = predict(w1, b1, w2, np.ones((7, 3), f32))
    print(f"== fixed: predict(w1, b1, w2, x) with x of shape (7, 3) -> {out.shape} {out.dtype}")
    print("   attention with q @ k.T:", srcjax.eval_shape(attention_fixed, S((4, 8), f32), S((4, 8), f32),
                                                       S((4, 8), f32)))


def attention_fixed(q, k, v):
    scores = q @ k.T / q.shape[-1] ** 0.5
    w = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    w = w / np.sum(w, axis=-1, keepdims=True)
    return w @ v


if __name__ == "__main__":
    main()
