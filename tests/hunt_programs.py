"""Seeded random programs written as a JAX user writes them, and random transformations of them (issue #15).

:func:`case` (seed -> :class:`Case`) writes one module: a model (a dense layer in a helper function, optionally a
self-attention block over a sequence, activations including a ``custom_vjp`` one), parameters in a dict, a list
or a NamedTuple, one or two blocks of control flow on data (``if``, ``while`` with a counter, ``for`` over a
range with accumulators and in-place ``z[i] = ...`` updates, ``break``/``continue`` on data,
``srcjax.lax.scan``/``fori_loop``/``cond``/``while_loop``), and a loss (softmax cross-entropy through a
logsumexp helper, huber with ``np.where``, squared error), then a transformation of it: ``vmap`` with random
``in_axes``/``out_axes`` (ints, negative ints, ``None``, pytree prefixes of the parameters), ``vmap`` of
``grad``/``value_and_grad``/``jacfwd``/``jacrev``/``hessian``, nested ``vmap``, ``grad`` of a ``vmap``, with
``jit`` around the outermost, or all of it compiled whole as a function of the module.

Two texts per program: srcjax's (in-place ``z[i] = v``) and the jax oracle's (``z = z.at[i].set(v)``, ``np``
bound to ``jax.numpy``); the oracle runs the transformation one example at a time with jax's eager
transformations (Python control flow on data runs as it is), see tests/test_hunt_random.py.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

N_BATCH = 3
D, H, C, T = 4, 3, 2, 3  # input, hidden, classes, sequence length


@dataclasses.dataclass
class Case:
    seed: int
    text: str  # srcjax's module
    jax_text: str  # the oracle's module (no in-place updates)
    params: str  # "dict" | "list" | "namedtuple"
    seq: bool  # x is a sequence (T, D) per example
    how: str  # the transformation, e.g. "vmap(grad)"
    in_axes: tuple[Any, ...]  # (params, x, y) axes of the (outer) vmap
    out_axes: Any
    argnums: int  # the differentiated argument (0: params, 1: x)
    jit: str  # "none" | "outer" (srcjax.jit of the transformed function) | "whole" (compiled module function)
    forward_only: bool  # the program has a lax.while_loop (jax has no reverse mode of it)
    reverse_only: bool  # the program has a custom_vjp (jax has no forward mode of it)
    blocks: list[str]
    family: str = "mlp"  # "mlp": p holds w1, b1, w2, y is a target vector; "deep": p = {"layers": [...], "out": w}, y an int label

    def describe(self) -> str:
        return (f"seed={self.seed} family={self.family} how={self.how} params={self.params} seq={self.seq} in_axes={self.in_axes} "
                f"out_axes={self.out_axes} argnums={self.argnums} jit={self.jit} blocks={self.blocks}")


HEADER = "from typing import NamedTuple\n\nimport numpy as np\nimport srcjax\n\n\n"

HELPERS = '''
class Params(NamedTuple):
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray


def dense(x, w, b, act):
    z = x @ w + b
    if act == "tanh":
        return np.tanh(z)
    if act == "relu":
        return np.maximum(z, 0.0)
    if act == "softplus":
        return np.logaddexp(0.0, z)
    if act == "gelu":
        return 0.5 * z * (1.0 + np.tanh(0.7978845608 * (z + 0.044715 * z ** 3)))
    return z


def logsumexp(v, axis=-1):
    m = np.max(v, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(v - m), axis=axis))


def softmax(v, axis=-1):
    e = np.exp(v - np.max(v, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@srcjax.custom_vjp
def soft_clip(z):
    return 2.0 * np.tanh(0.5 * z)


def soft_clip_fwd(z):
    t = np.tanh(0.5 * z)
    return 2.0 * t, t


def soft_clip_bwd(t, g):
    return (g * (1.0 - t * t),)


soft_clip.defvjp(soft_clip_fwd, soft_clip_bwd)
'''

UNPACK = {
    "dict": "    w1, b1, w2 = p[\"w1\"], p[\"b1\"], p[\"w2\"]\n",
    "list": "    w1, b1, w2 = p\n",
    "namedtuple": "    w1, b1, w2 = p.w1, p.b1, p.w2\n",
}

# Blocks of control flow on `h` (a vector of H floats); each is (srcjax text, jax text or None if the same).
# A block may only read h, w1, b1, w2 and x, and must leave h a float vector of H.
BLOCKS: dict[str, tuple[str, str | None]] = {
    "if_on_data": ("""
    if np.sum(h) > 0.1:
        h = h * 1.5 - 0.2
    else:
        h = h - 0.5 * np.tanh(h)
""", None),
    "if_no_else": ("""
    s = np.max(h)
    if s > 0.5:
        h = h / s
""", None),
    "while_on_data": ("""
    it = 0
    while it < 3 and np.sum(h * h) < 3.0:
        h = h * 1.4 + 0.1
        it += 1
""", None),
    "for_inplace": ("""
    z = np.zeros(h.shape[0])
    for i in range(h.shape[0]):
        z[i] = h[i] * w2[i, 0] + np.sin(h[i])
    h = h + 0.5 * z
""", """
    z = np.zeros(h.shape[0])
    for i in range(h.shape[0]):
        z = z.at[i].set(h[i] * w2[i, 0] + np.sin(h[i]))
    h = h + 0.5 * z
"""),
    "for_accumulate": ("""
    acc = 0.0
    prev = h[0]
    for i in range(1, h.shape[0]):
        acc = acc + prev * h[i]
        prev = 0.5 * prev + h[i]
    h = h + 0.1 * acc
""", None),
    "for_inplace_add": ("""
    g = np.ones(h.shape[0])
    for i in range(h.shape[0] - 1):
        g[i + 1] += g[i] * np.tanh(h[i])
    h = h * g
""", """
    g = np.ones(h.shape[0])
    for i in range(h.shape[0] - 1):
        g = g.at[i + 1].add(g[i] * np.tanh(h[i]))
    h = h * g
"""),
    "break_on_data": ("""
    s = 0.0
    for i in range(h.shape[0]):
        s = s + np.tanh(h[i])
        if s > 0.6:
            break
    h = h * (1.0 + s)
""", None),
    "continue_on_data": ("""
    acc = 0.0
    for i in range(h.shape[0]):
        if h[i] < 0.0:
            continue
        acc = acc + h[i] * h[i]
    h = h + 0.2 * acc
""", None),
    "argmax_update": ("""
    k = np.argmax(h)
    h[k] = 2.0 * h[k]
""", """
    k = np.argmax(h)
    h = h.at[k].set(2.0 * h[k])
"""),
    "lax_scan": ("""
    def step(c, hi):
        c = 0.8 * c + hi
        return c, c * np.tanh(c)
    last, ys = srcjax.lax.scan(step, 0.0, h)
    h = h + 0.3 * ys + 0.1 * last
""", None),
    "lax_fori": ("""
    h = srcjax.lax.fori_loop(0, 3, lambda i, v: 0.9 * np.tanh(v) + 0.1 * v, h)
""", None),
    # (not `np.sum(h) > 0.0`: a layer-normed h sums to 0 up to rounding, a tie that srcjax and jax round apart)
    "lax_cond": ("""
    h = srcjax.lax.cond(np.sum(h[1:]) > 0.0, lambda v: v * 2.0, lambda v: np.sin(v), h)
""", None),
    "lax_while": ("""
    _, h = srcjax.lax.while_loop(lambda c: (c[0] < 3) & (np.sum(c[1] * c[1]) < 3.0),
                                 lambda c: (c[0] + 1, c[1] * 1.3 + 0.1), (0, h))
""", None),
    "soft_clip": ("""
    h = soft_clip(3.0 * h)
""", None),
}

ATTENTION = """
    q = x @ w1
    scores = q @ q.T / np.sqrt(1.0 * q.shape[-1])
    a = softmax(scores, axis=-1)
    h = np.mean(np.tanh(a @ q + b1), axis=0)
"""

LOSSES = {
    "xent": "    return -np.sum(y * (logits - logsumexp(logits)))\n",
    "huber": ("    d = logits - y\n    ad = np.abs(d)\n"
              "    return np.sum(np.where(ad < 0.5, 0.5 * d * d, 0.5 * (ad - 0.25)))\n"),
    "mse": "    return np.mean((logits - y) ** 2)\n",
    "mse_reg": "    return np.mean((logits - y) ** 2) + 1e-2 * (np.sum(w1 * w1) + np.sum(w2 * w2))\n",
}

HOWS = ("vmap", "vmap(grad)", "vmap(value_and_grad)", "vmap(jacfwd)", "vmap(jacrev)", "vmap(hessian)",
        "vmap(vmap)", "grad(vmap)", "vmap_params")


DEEP_BODY = """
def layer_norm(v, eps=1e-5):
    mu = np.mean(v, axis=-1, keepdims=True)
    var = np.mean((v - mu) ** 2, axis=-1, keepdims=True)
    return (v - mu) / np.sqrt(var + eps)


def f(p, x, y):
    h = x
    for layer in p["layers"]:
        z = h @ layer["w"] + layer["b"]
        h = ACT
    h = layer_norm(h) if NORM else h
BLOCKS    logits = h @ p["out"]
    logp = logits - logsumexp(logits)
LOSS"""

DEEP_LOSSES = {
    "gather": "    return -logp[y]\n",
    "onehot": "    onehot = np.arange(logits.shape[-1]) == y\n    return -np.sum(np.where(onehot, logp, 0.0))\n",
    "take": "    return -np.take(logp, y) + 0.01 * np.sum(p[\"out\"] ** 2)\n",
}

DEEP_ACTS = ("np.tanh(z)", "np.maximum(z, 0.0) + 0.01 * z", "z * (1.0 / (1.0 + np.exp(-z)))", "h + np.tanh(z) if h.shape == z.shape else np.tanh(z)")

EARLY_RETURN = """
    if np.max(np.abs(h)) > 2.5:
        return np.sum(h * h)
"""


def _deep(seed: int, rng: random.Random) -> Case:
    blocks = rng.sample(sorted(b for b in BLOCKS if b not in ("for_inplace",)), rng.choice([0, 1, 1, 2]))
    early = rng.random() < 0.3
    if early:
        blocks.append("early_return")
    text = DEEP_BODY.replace("ACT", rng.choice(DEEP_ACTS)).replace("NORM", str(rng.random() < 0.5))
    loss = rng.choice(sorted(DEEP_LOSSES))
    text = text.replace("LOSS", DEEP_LOSSES[loss])
    src = "".join((EARLY_RETURN if b == "early_return" else BLOCKS[b][0]).lstrip("\n") for b in blocks)
    jsrc = "".join((EARLY_RETURN if b == "early_return" else (BLOCKS[b][1] or BLOCKS[b][0])).lstrip("\n")
                   for b in blocks)
    w2_free = [b for b in blocks if b == "for_inplace"]
    assert not w2_free
    forward_only = "lax_while" in blocks
    reverse_only = "soft_clip" in blocks
    hows = [h for h in HOWS
            if not (forward_only and h in ("vmap(grad)", "vmap(value_and_grad)", "vmap(jacrev)", "grad(vmap)",
                                           "vmap(hessian)"))
            and not (reverse_only and h in ("vmap(jacfwd)", "vmap(hessian)"))]
    how = rng.choice(hows)
    argnums = rng.choice([0, 1]) if how in ("vmap(grad)", "vmap(value_and_grad)", "vmap(jacrev)", "vmap(jacfwd)") else 1
    ax_x = _axis(rng, 1) if rng.random() < 0.5 else 0
    in_axes: tuple[Any, ...] = (None, ax_x, 0)
    out_axes: Any = 0
    if how == "vmap_params":
        layers = rng.choice([0, [0, None], [{"w": 0, "b": None}, None], [None, {"w": -1, "b": 0}]])
        in_axes = ({"layers": layers, "out": rng.choice([None, 0])}, rng.choice([None, 0]),
                   rng.choice([None, 0]))
        if in_axes[0] == {"layers": [0, None], "out": None} and in_axes[1:] == (None, None):
            in_axes = (in_axes[0], 0, None)
    elif how in ("vmap(grad)", "vmap(jacrev)", "vmap(jacfwd)") and argnums == 0:
        out_axes = rng.choice([0, -1, "tree"])
    elif how == "vmap(value_and_grad)":
        out_axes = rng.choice([0, (0, 0), (-1, 0)][: 2 if argnums == 0 else 3])
    elif how in ("vmap", "vmap(jacfwd)", "vmap(jacrev)", "vmap(hessian)"):
        out_axes = rng.choice([0, -1])
    jit = rng.choice(["none", "outer", "whole"])
    fn = src and text.replace("BLOCKS", src) or text.replace("BLOCKS", "")
    jfn = text.replace("BLOCKS", jsrc)
    return Case(seed, HEADER + HELPERS + "\n" + fn, HELPERS + "\n" + jfn, "deep", False, how, in_axes, out_axes,
                argnums, jit, forward_only, reverse_only, blocks, family="deep")


def _axis(rng: random.Random, ndim: int) -> int:
    """A random axis for an argument of ``ndim`` dims (negative ones included)."""
    return rng.choice([*range(ndim + 1), *range(-(ndim + 1), 0)])


def case(seed: int) -> Case:
    """The ``seed``-th random program and transformation (the same on every machine)."""
    rng = random.Random(seed)
    if rng.random() < 0.4:
        return _deep(seed, rng)
    params = rng.choice(["dict", "list", "namedtuple"])
    seq = rng.random() < 0.25
    act = rng.choice(["tanh", "relu", "softplus", "gelu", "none"])
    blocks = rng.sample(sorted(BLOCKS), rng.choice([1, 1, 2]))
    loss = rng.choice(sorted(LOSSES))
    body = UNPACK[params]
    jbody = UNPACK[params]
    if seq:
        body += ATTENTION
        jbody += ATTENTION
    else:
        body += f"    h = dense(x, w1, b1, {act!r})\n"
        jbody += f"    h = dense(x, w1, b1, {act!r})\n"
    for b in blocks:
        text, jtext = BLOCKS[b]
        body += text.lstrip("\n")
        jbody += (jtext or text).lstrip("\n")
    body += "    logits = h @ w2\n" + LOSSES[loss]
    jbody += "    logits = h @ w2\n" + LOSSES[loss]
    forward_only = "lax_while" in blocks
    reverse_only = "soft_clip" in blocks
    hows = [h for h in HOWS
            if not (forward_only and h in ("vmap(grad)", "vmap(value_and_grad)", "vmap(jacrev)", "grad(vmap)",
                                           "vmap(hessian)"))
            and not (reverse_only and h in ("vmap(jacfwd)", "vmap(hessian)"))]
    how = rng.choice(hows)
    argnums = rng.choice([0, 1]) if how in ("vmap(grad)", "vmap(value_and_grad)") else 1
    if how in ("vmap(jacfwd)", "vmap(jacrev)", "vmap(hessian)"):
        argnums = rng.choice([0, 1]) if how != "vmap(hessian)" else 1
    x_nd = 2 if seq else 1
    ax_x = _axis(rng, x_nd) if rng.random() < 0.5 else 0
    ax_y = rng.choice([0, -1, None]) if how != "vmap_params" else None
    if ax_y is None and how != "vmap_params" and rng.random() < 0.5:
        ax_y = 0
    in_axes: tuple[Any, ...] = (None, ax_x, ax_y)
    out_axes: Any = 0
    if how == "vmap_params":  # an ensemble: some parameters batched (a pytree prefix), x and y shared or not
        pa = {"w1": rng.choice([0, 1, -1]), "b1": rng.choice([0, None]), "w2": rng.choice([0, None, -1])}
        pa_tree: Any = ({"dict": pa, "list": [pa["w1"], pa["b1"], pa["w2"]],
                         "namedtuple": ("Params", pa["w1"], pa["b1"], pa["w2"])}[params])
        in_axes = (pa_tree, rng.choice([None, 0]), None)
    elif how in ("vmap(grad)", "vmap(jacrev)", "vmap(jacfwd)") and argnums == 0:
        out_axes = rng.choice([0, -1, "tree"])
    elif how == "vmap(value_and_grad)":
        out_axes = rng.choice([0, (0, -1), (None, 0)]) if argnums == 1 else rng.choice([0, (0, 0)])
        if out_axes == (None, 0):
            out_axes = (0, 0)  # (the value is per example: None would be JAX's error)
    elif how in ("vmap", "vmap(hessian)", "vmap(jacfwd)", "vmap(jacrev)"):
        out_axes = rng.choice([0, -1])
    jit = rng.choice(["none", "outer", "whole"])
    fn = "def f(p, x, y):\n" + body
    jfn = "def f(p, x, y):\n" + jbody
    return Case(seed, HEADER + HELPERS + "\n\n" + fn, HELPERS + "\n\n" + jfn, params, seq, how, in_axes, out_axes,
                argnums, jit, forward_only, reverse_only, blocks)


def axes_source(axes: Any) -> str:
    """``axes`` written as Python (a NamedTuple prefix is ``("Params", ...)``)."""
    if isinstance(axes, tuple) and axes and axes[0] == "Params":
        return "Params(" + ", ".join(axes_source(a) for a in axes[1:]) + ")"
    if isinstance(axes, dict):
        return "{" + ", ".join(f"{k!r}: {axes_source(v)}" for k, v in axes.items()) + "}"
    if isinstance(axes, list):
        return "[" + ", ".join(axes_source(a) for a in axes) + "]"
    if isinstance(axes, tuple):
        return "(" + ", ".join(axes_source(a) for a in axes) + ("," if len(axes) == 1 else "") + ")"
    return repr(axes)
