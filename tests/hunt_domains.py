"""Seeded random programs in the domains tests/hunt_programs.py does not generate (issue #15, hunt6).

:func:`case` (seed -> :class:`DCase`) writes one module whose function ``f`` is built of one or two *blocks*
over its arguments and a *tail* that returns a scalar, a tuple or a dict. The blocks are what a JAX user writes
and srcjax's earlier generator left out:

- transformations called INSIDE the function (``srcjax.grad``, ``value_and_grad``, ``jacrev``, ``jacfwd``,
  ``hessian``, ``vjp``, ``jvp``, ``vmap`` of a helper, in the body),
- ``custom_jvp`` / ``custom_vjp`` helpers (then under vmap and nested derivatives),
- ``srcjax.lax.scan`` / ``fori_loop`` / ``while_loop`` / ``cond`` / ``switch`` with tuple or dict carries
  reading closures, the carry's initial value an argument (so ``in_axes`` maps carries),
- parameters in a dict, a NamedTuple or a registered dataclass, with ``in_axes`` pytree prefixes,
- integer and boolean arguments (never differentiated) beside float ones, float32 arguments,
- in-place updates at argument indices (``y[idx] = v`` with distinct indices, ``.at[idx].add`` with repeated
  ones), ``break`` / ``continue`` / ``while`` on data, a static argument (``static_argnums``).

The transformation (:data:`HOWS`) is applied around ``f``: ``jit``, ``vmap`` with random ``in_axes`` (negative,
``None``, prefixes) and ``out_axes`` (pytrees for tuple and dict outputs), ``axis_size`` with nothing mapped,
``vmap(grad)``, ``grad``, ``jacfwd``, ``jacrev``, ``hessian``, ``grad(vmap)``, ``vmap(jacrev)``; ``jit``
outside, or all of it compiled whole. Arguments are generated per example (tests/test_hunt_domains.py stacks
them along the axes and runs jax one example at a time as the oracle).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

N_BATCH = 3
D, H, K, T = 4, 3, 3, 3  # features, hidden, indices, steps


@dataclasses.dataclass
class Arg:
    name: str
    kind: str  # "f" float, "i" int, "b" bool, "p" parameters (container of floats), "s" static int
    shape: tuple[int, ...] = ()
    note: str = ""  # "distinct" (distinct indices < D), "repeat" (indices < D, repeats), "count" (1..D), "idx3"


@dataclasses.dataclass
class DCase:
    seed: int
    text: str  # srcjax's module
    jax_text: str  # the oracle's module (``srcjax`` bound to jax there)
    args: list[Arg]
    blocks: list[str]
    tail: str  # "scalar" | "tuple" | "dict"
    how: str
    in_axes: tuple[Any, ...]
    out_axes: Any
    argnums: int
    jit: str  # "none" | "outer" | "whole"
    dtype: str  # "float64" | "float32"
    container: str  # "dict" | "namedtuple" | "dataclass"
    axis_size: int | None = None
    reverse_only: bool = False
    forward_only: bool = False
    while_on_data: bool = False
    static: int | None = None  # the index of the static argument, if any

    def describe(self) -> str:
        return (f"seed={self.seed} how={self.how} blocks={self.blocks} tail={self.tail} in_axes={self.in_axes} "
                f"out_axes={self.out_axes} argnums={self.argnums} jit={self.jit} dtype={self.dtype} "
                f"container={self.container} axis_size={self.axis_size}")


HEADER = "import dataclasses\nfrom typing import NamedTuple\n\nimport numpy as np\nimport srcjax\n\n\n"

HELPERS = '''
class Params(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


srcjax.tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=[])


def inner_loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2)


def inner_vec(x, w):
    return np.tanh(x @ w)


def inner_row(c, x):
    return np.sin(c @ x) + 0.1 * np.sum(c * c)


@srcjax.custom_jvp
def soft_plus(z):
    return np.logaddexp(0.0, z)


@soft_plus.defjvp
def soft_plus_jvp(primals, tangents):
    (z,) = primals
    (t,) = tangents
    return soft_plus(z), t / (1.0 + np.exp(-z))


@srcjax.custom_vjp
def clip_grad(z):
    return np.tanh(z)


def clip_grad_fwd(z):
    t = np.tanh(z)
    return t, t


def clip_grad_bwd(t, g):
    return (np.clip(g, -0.5, 0.5) * (1.0 - t * t),)


clip_grad.defvjp(clip_grad_fwd, clip_grad_bwd)
'''

# A block reads its family's arguments and the float vector `h` (H floats, from x and w), and leaves `h` an
# H-vector of floats depending on it. Each block: (text, jax text or None, extra arguments, flags).
# flags: "rev" (custom_vjp: no forward mode in jax), "fwd" (no reverse mode), "while" (a while on data)

Block = tuple[str, "str | None", list[Arg], set[str]]

BLOCKS: dict[str, Block] = {
    # -- transformations inside the body
    "in_grad": ("""
    g = srcjax.grad(inner_loss)(w, x)
    h = h + np.tanh(x @ (w - 0.3 * g))
""", None, [], set()),
    "in_grad_x": ("""
    gx = srcjax.grad(inner_loss, argnums=1)(w, x)
    h = h * (1.0 + 0.1 * np.sum(gx * x))
""", None, [], set()),
    "in_value_and_grad": ("""
    v, g = srcjax.value_and_grad(inner_loss)(w, x)
    h = h + 0.1 * v * np.sum(g, axis=0)
""", None, [], set()),
    "in_jacrev": ("""
    jac = srcjax.jacrev(inner_vec)(x, w)
    h = h + 0.5 * jac @ x
""", None, [], set()),
    "in_jacfwd": ("""
    jac = srcjax.jacfwd(inner_vec)(x, w)
    h = h - 0.5 * jac @ np.sin(x)
""", None, [], set()),
    "in_hessian": ("""
    hess = srcjax.hessian(inner_loss, argnums=1)(w, x)
    h = h + 0.1 * (hess @ x)[:h.shape[0]]
""", None, [], set()),
    "in_vjp": ("""
    y, pull = srcjax.vjp(inner_vec, x, w)
    gx, gw = pull(np.cos(y))
    h = h + 0.2 * np.sum(gw, axis=0) + 0.1 * np.sum(gx)
""", None, [], set()),
    "in_jvp": ("""
    y, t = srcjax.jvp(inner_vec, (x, w), (np.cos(x), 0.1 * w))
    h = h + 0.3 * t * y
""", None, [], set()),
    "in_vmap": ("""
    rows = srcjax.vmap(inner_row, in_axes=(1, None))(w, x)
    h = h + 0.5 * rows
""", None, [], set()),
    "in_vmap_grad": ("""
    gs = srcjax.vmap(srcjax.grad(inner_row), in_axes=(1, None), out_axes=1)(w, x)
    h = h + 0.5 * np.sum(gs * w, axis=0)
""", None, [], set()),
    # -- custom rules
    "custom_jvp": ("""
    h = soft_plus(h * 2.0 - 0.5) - 0.3
""", None, [], set()),
    "custom_vjp": ("""
    h = clip_grad(1.5 * h) + 0.1 * h
""", None, [], {"rev"}),
    # -- lax with pytree carries
    "scan_tuple": ("""
    def step(carry, xt):
        hc, s = carry
        hc = np.tanh(xt @ w + 0.5 * hc)
        s = s + np.sum(hc)
        return (hc, s), hc * s
    (hc, s), hs = srcjax.lax.scan(step, (c0, 0.0), xs)
    h = h + hc + 0.1 * np.sum(hs, axis=0) + 0.05 * s
""", None, [Arg("c0", "f", (H,)), Arg("xs", "f", (T, D))], set()),
    "scan_dict": ("""
    def step(carry, xt):
        hc = np.tanh(xt @ w + carry["h"])
        return {"h": hc, "m": np.maximum(carry["m"], hc)}, np.sum(hc)
    out, ss = srcjax.lax.scan(step, {"h": c0, "m": c0}, xs)
    h = h + out["h"] * out["m"] + 0.1 * ss[-1]
""", None, [Arg("c0", "f", (H,)), Arg("xs", "f", (T, D))], set()),
    "fori_tuple": ("""
    def body(i, carry):
        hc, acc = carry
        hc = 0.8 * np.tanh(hc + h) + 0.1 * i
        return hc, acc + hc * hc
    hc, acc = srcjax.lax.fori_loop(0, 3, body, (c0, np.zeros_like(c0)))
    h = hc + 0.2 * acc
""", None, [Arg("c0", "f", (H,))], set()),
    "while_dict": ("""
    def cond_fn(c):
        return (c["i"] < 4) & (np.sum(c["h"] * c["h"]) < 4.0)
    def body_fn(c):
        return {"i": c["i"] + 1, "h": c["h"] * 1.3 + 0.1 * h}
    out = srcjax.lax.while_loop(cond_fn, body_fn, {"i": 0, "h": c0})
    h = h + out["h"]
""", None, [Arg("c0", "f", (H,))], {"fwd"}),
    "cond_tuple": ("""
    a, b = srcjax.lax.cond(np.sum(h) > c0[0], lambda u, v: (u * 2.0, v + u), lambda u, v: (np.sin(u), v * u),
                           h, c0)
    h = a + 0.5 * b
""", None, [Arg("c0", "f", (H,))], set()),
    "switch_int": ("""
    h = srcjax.lax.switch(n % 3, [lambda v: v * 2.0, lambda v: np.sin(v), lambda v: v - c0], h)
""", None, [Arg("c0", "f", (H,)), Arg("n", "i", ())], set()),
    # -- parameters in containers (p: Params / dict / Layer, fields w (H, H) and b (H,))
    "params": ("""
    h = np.tanh(h @ PW + PB)
""", None, [Arg("p", "p")], set()),
    # -- integer and boolean arguments
    "int_bool": ("""
    h = np.where(n % 2 == 0, np.where(mask, h, 0.5 * h), 2.0 * h) + np.sum(x[idx])
""", None, [Arg("n", "i", ()), Arg("mask", "b", (H,)), Arg("idx", "i", (K,), "repeat")], set()),
    "int_gather": ("""
    h = h + x[idx] * np.take(w[:, 0], idx)
""", None, [Arg("idx", "i", (K,), "repeat")], set()),
    # -- in-place updates at argument indices
    "set_distinct": ("""
    z = np.zeros(D) + x
    z[idx] = h * 2.0
    h = h + np.sum(z * z) * 0.1
""", """
    z = np.zeros(D) + x
    z = z.at[idx].set(h * 2.0)
    h = h + np.sum(z * z) * 0.1
""", [Arg("idx", "i", (K,), "distinct")], set()),
    "add_repeat": ("""
    z = np.zeros(D)
    z = z.at[idx].add(h)
    h = h + np.tanh(z[:3]) * x[:3]
""", None, [Arg("idx", "i", (K,), "repeat")], set()),
    "iadd_repeat": ("""
    z = np.ones(4) * x
    z[idx] += h
    h = h + 0.1 * z[:3]
""", """
    z = np.ones(4) * x
    z = z.at[idx].set(z[idx] + h)  # (NumPy's buffered `+=`: the last write of a repeated index lands)
    h = h + 0.1 * z[:3]
""", [Arg("idx", "i", (K,), "repeat")], set()),
    # -- break / continue / while on data
    "while_data": ("""
    k = 0
    while k < n and np.sum(h * h) < 6.0:
        h = h * 1.3 + 0.1
        k += 1
""", None, [Arg("n", "i", (), "count")], {"while"}),
    "break_data": ("""
    s = 0.0
    for i in range(4):
        if x[i] > thr:
            break
        s = s + np.tanh(x[i]) * h[i % 3]
    h = h + s
""", None, [Arg("thr", "f", ())], set()),
    "continue_mask": ("""
    acc = np.zeros_like(h)
    for i in range(3):
        if not mask[i]:
            continue
        acc[i] = h[i] * h[i]
    h = h + acc
""", """
    acc = np.zeros_like(h)
    for i in range(3):
        if not mask[i]:
            continue
        acc = acc.at[i].set(h[i] * h[i])
    h = h + acc
""", [Arg("mask", "b", (H,))], set()),
    # -- a static argument (a loop count and a shape)
    "static": ("""
    for _ in range(reps):
        h = np.tanh(h + 0.1 * np.sum(np.ones(reps)))
""", None, [Arg("reps", "s", ())], set()),
}

TAILS = {
    "scalar": "    return np.sum(h * h) + 0.5 * np.sum(np.sin(h))\n",
    "tuple": "    return np.sum(h * h), np.tanh(h)\n",
    "dict": "    return {\"out\": np.tanh(h), \"s\": np.sum(h) * x}\n",
}

# jax has no forward mode of a custom_vjp (jacfwd, hessian) and no reverse mode of a while_loop
REVERSE = ("vmap(grad)", "grad", "jacrev", "hessian", "grad(vmap)", "vmap(jacrev)")
FORWARD = ("jacfwd", "hessian")
HOWS = ("jit", "vmap", "vmap", "vmap", "axis_size", "vmap(grad)", "vmap(grad)", "grad", "jacfwd", "jacrev",
        "hessian", "grad(vmap)", "vmap(jacrev)")


def _axis(rng: random.Random, ndim: int, none: bool = True) -> Any:
    return rng.choice([*range(ndim + 1), *range(-(ndim + 1), 0), *([None] if none else [])])


def _params_axes(rng: random.Random, container: str) -> Any:
    w, b = rng.choice([0, 1, -1, None]), rng.choice([0, -1, None])
    if rng.random() < 0.3:
        return rng.choice([0, None])
    return {"dict": {"w": w, "b": b}, "namedtuple": ("Params", w, b), "dataclass": ("Layer", w, b)}[container]


def case(seed: int) -> DCase:
    """The ``seed``-th random program and transformation (the same on every machine)."""
    rng = random.Random(seed)
    names = sorted(BLOCKS)
    blocks = rng.sample(names, rng.choice([1, 1, 2]))
    flags: set[str] = set()
    extra: list[Arg] = []
    for b in blocks:
        flags |= BLOCKS[b][3]
        for a in BLOCKS[b][2]:
            if all(a.name != e.name for e in extra):
                extra.append(a)
    container = rng.choice(["dict", "namedtuple", "dataclass"])
    args = [Arg("x", "f", (D,)), Arg("w", "f", (D, H)), *extra]
    static = next((i for i, a in enumerate(args) if a.kind == "s"), None)
    float_args = [i for i, a in enumerate(args) if a.kind in "fp"]
    reverse_only = "rev" in flags
    forward_only = "fwd" in flags
    hows = [h for h in HOWS if not (reverse_only and h in FORWARD) and not (forward_only and h in REVERSE)]
    how = rng.choice(hows)
    tail = "scalar"
    if how in ("jit", "vmap", "axis_size", "jacrev", "jacfwd", "vmap(jacrev)"):
        tail = rng.choice(["scalar", "scalar", "tuple", "dict"])
    argnums = rng.choice(float_args) if how not in ("jit", "vmap", "axis_size") else 0
    in_axes: list[Any] = []
    for a in args:
        if a.kind == "s":
            in_axes.append(None)
        elif a.kind == "p":
            in_axes.append(_params_axes(rng, container))
        elif a.kind in "ib" and a.note == "count":
            in_axes.append(rng.choice([0, None]))
        else:
            in_axes.append(_axis(rng, len(a.shape)))
    if how == "axis_size":
        in_axes = [None] * len(args)
    elif all(ax is None for ax in in_axes):
        in_axes[0] = 0
    out_axes: Any = 0
    if how in ("vmap", "vmap(jacrev)"):
        if tail == "tuple":
            out_axes = rng.choice([0, -1, (0, -1), (-1, 0)])
        elif tail == "dict":
            out_axes = rng.choice([0, -1, {"out": -1, "s": 0}, {"out": 0, "s": 1}])
        else:
            out_axes = rng.choice([0, -1])
    elif how == "vmap(grad)" and args[argnums].kind == "p":
        out_axes = rng.choice([0, -1])
    elif how == "axis_size":
        out_axes = rng.choice([0, -1])
    jit = rng.choice(["none", "outer", "whole"])
    dtype = "float32" if rng.random() < 0.3 else "float64"
    body = "    h = np.tanh(x @ w)\n"
    jbody = body
    for b in blocks:
        text, jtext = BLOCKS[b][0], BLOCKS[b][1]
        pw, pb = {"dict": ('p["w"]', 'p["b"]'), "namedtuple": ("p.w", "p.b"), "dataclass": ("p.w", "p.b")}[container]
        body += text.lstrip("\n").replace("PW", pw).replace("PB", pb).replace("np.zeros(D)", f"np.zeros({D})")
        jbody += (jtext or text).lstrip("\n").replace("PW", pw).replace("PB", pb).replace("np.zeros(D)", f"np.zeros({D})")
    sig = "def f(" + ", ".join(a.name for a in args) + "):\n"
    text = HEADER + HELPERS + "\n\n" + sig + body + TAILS[tail]
    jax_text = HELPERS + "\n\n" + sig + jbody + TAILS[tail]
    return DCase(seed, text, jax_text, args, blocks, tail, how, tuple(in_axes), out_axes, argnums, jit, dtype,
                 container, axis_size=3 if how == "axis_size" else None, reverse_only=reverse_only,
                 forward_only=forward_only, while_on_data="while" in flags, static=static)


def axes_source(axes: Any) -> str:
    """``axes`` written as Python (a NamedTuple / dataclass prefix is ``("Params" | "Layer", ...)``)."""
    if isinstance(axes, tuple) and axes and axes[0] in ("Params", "Layer"):
        return f"{axes[0]}(" + ", ".join(axes_source(a) for a in axes[1:]) + ")"
    if isinstance(axes, dict):
        return "{" + ", ".join(f"{k!r}: {axes_source(v)}" for k, v in axes.items()) + "}"
    if isinstance(axes, list):
        return "[" + ", ".join(axes_source(a) for a in axes) + "]"
    if isinstance(axes, tuple):
        return "(" + ", ".join(axes_source(a) for a in axes) + ("," if len(axes) == 1 else "") + ")"
    return repr(axes)
