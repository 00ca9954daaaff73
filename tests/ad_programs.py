"""Programs differentiated by tests/test_ad.py, each with a jax.numpy twin built from the same source."""

import numpy as np

import srcjax
from tests import corpus_helpers


def mse_tanh(w, x, y):
    p = np.tanh(x @ w)
    return np.mean((p - y) ** 2)


def dense(w, b, x):
    return np.tanh(x @ w + b)


def mlp_loss(w1, b1, w2, x, y):
    h = dense(w1, b1, x)
    logits = h @ w2
    return np.mean((logits - y) ** 2)


def softmax_xent(logits, labels_onehot):
    m = np.max(logits, axis=-1, keepdims=True)
    z = logits - m
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.mean(np.sum(labels_onehot * logp, axis=-1))


def layer_norm(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return np.sum((x - mu) / np.sqrt(var + 1e-5) * gamma + beta)


def attention(q, k, v):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    scores = scores - np.max(scores, axis=-1, keepdims=True)
    w = np.exp(scores)
    w = w / np.sum(w, axis=-1, keepdims=True)
    return np.sum((w @ v) ** 2)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def logistic(w, x, y):
    z = x @ w
    p = 1 / (1 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


def poly(x, c):
    acc = 0.0
    for i in range(4):
        acc = acc * x + c[i]
    return np.sum(acc)


def branchy(x):
    if x.ndim == 2:
        y = np.sin(x) * np.cos(x)
    else:
        y = np.exp(-x * x)
    return np.sum(y * x)


def early_return(x):
    if x.shape[0] > 3:
        return np.sum(np.abs(x) ** 1.5)
    return np.sum(x ** 2)


def scalar_fn(x):
    return np.sin(x) * x ** 3


def reassign(x):
    y = x * 2.0
    y = np.sin(y) + y
    y = y * x
    return np.sum(y)


def reductions(x):
    return np.sum(np.max(x, axis=0) ** 2) + np.prod(x[0] + 2.0) + np.std(x) + np.min(x[:, 1])


def broadcasting(a, b):
    return np.sum(np.maximum(a[:, None] * b, 0.1) / (1.0 + b ** 2))


def shapes(x):
    y = np.reshape(x, (-1,))
    z = np.transpose(np.reshape(y, (x.shape[1], x.shape[0])))
    return np.sum(z * x + np.clip(x, -0.5, 0.5) + np.where(x > 0, x, -2.0 * x))


def loop_sin(x):
    acc = x
    for _i in range(3):
        acc = np.sin(acc) * x
    return np.sum(acc)


def loop_carried_unused_after(x, y):
    """Regression: b is carried by the loop but not read after it (its cotangent was dropped)."""
    a = x
    b = y
    for _ in range(3):
        b = b * 2.0
        a = a + np.sin(b)
    return np.sum(a)


def coupled_loop(x, y):
    a = x
    b = y
    for _ in range(5):
        c = a * b
        b = np.sin(b) + c
        a = a + b * 0.1
    return np.sum(a)


def data_branches(x, t):
    s = np.sum(x)
    if s > t:
        y = np.sin(x) * s
    elif s < -t:
        y = x ** 2
    else:
        y = -x * t
    return np.sum(y * y)


def long_loop(x0, v):
    x = x0
    for _ in range(200):
        x = x + 0.01 * np.tanh(v * x)
    return np.sum(x * x)


def newton_sqrt(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-12:
        x = 0.5 * (x + a / x)
    return np.sum(x)


def module_attribute_helper(x):
    """Regression: a helper called as `module.f(x)` was opaque to grad (a silent zero gradient)."""
    return np.sum(corpus_helpers.cube(x) * x)


def _sim(x, k):
    for _ in range(50):
        x = x + 0.01 * np.sin(k * x)
    return x


def loop_in_helper(x0, k):
    return np.sum(_sim(x0, k) ** 2)


def _double(x):
    return x * 2.0


def lax_cond_direct(x):
    """srcjax.lax.cond called directly: grad must refuse (it used to give a silent zero)."""
    return np.sum(srcjax.lax.cond(np.sum(x) > 0, np.sin, _double, x))


def lax_fori_nested_body(x):
    def body(i, c):
        return c * x
    return np.sum(srcjax.lax.fori_loop(0, 3, body, x))


def with_default(v, eps=1e-6):
    return np.sum(np.sqrt(v * v + eps))


def _rec(x, n):
    if n == 0:
        return x
    return _rec(np.sin(x) * 1.5, n - 1)


def recursion_static_depth(x, n=3):
    return np.sum(_rec(x, n))


def softsign(x):
    return x / (1.0 + np.abs(x))


def act_layer(x, w, act):
    return np.sum(act(x @ w) ** 2)


def opaque_call(x):
    return np.sum(np.vectorize(np.sin)(x))


def newton_bounded(a):
    """The bounded form of a data-dependent while that reverse mode supports (one loop each way)."""
    x = a
    done = False
    for _ in range(50):
        done = done | (np.max(np.abs(x * x - a)) < 1e-12)
        x = np.where(done, x, 0.5 * (x + a / x))
    return np.sum(x)


def break_on_data(x):
    for _ in range(100):
        x = x * 0.9
        if np.sum(x) < 1.0:
            break
    return np.sum(x)


def nested_tuples(x):
    # a nested tuple literal, unpacked later: each inner element's cotangent reaches what it holds
    a = np.sin(x)
    y, r = (a * x, (x, a))
    p, q = r
    return np.sum(y * p * q)


def nested_mixed(x, w):
    a = np.tanh(x * w)
    r = (a * x, [w, (a, 2.0 * a)])
    y, (p, (q, s)) = r
    return np.sum(y * p * q * s)


def nested_in_dict(x):
    a = np.sin(x)
    d = {"u": (x, a), "v": [a * 2.0, [x]]}
    p, q = d["u"]
    return np.sum(p * q * d["v"][0] * d["v"][1][0])
