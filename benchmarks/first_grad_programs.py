"""The first-call workloads of bench_grad.py and callgrind_first_grad.py: their bodies times a constant
{c} never used before (so no cache can hit). No jax import here: callgrind counts srcjax alone."""

FIRST_TEMPLATES = {
    "mlp_xent": """
        def f(w1, b1, w2, b2, x, y):
            h = np.tanh(x @ w1 + b1)
            logits = h @ w2 + b2
            z = logits - np.max(logits, axis=-1, keepdims=True)
            logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
            return -np.mean(np.sum(y * logp, axis=-1)) * {c}
    """,
    "mlp_mse": """
        def f(w1, b1, w2, b2, x, y):
            h = np.tanh(x @ w1 + b1)
            out = h @ w2 + b2
            return np.mean((out - y) ** 2) * {c}
    """,
    "rosen": """
        def f(x):
            return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2) * {c}
    """,
}
