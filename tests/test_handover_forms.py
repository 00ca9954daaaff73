"""The two forms of what a writer hands over compute the same numbers (issues #15/#18, the writers' hand-over).

A derivative or batched module is written one primitive per line, simplified (the ANF form, kept as
``__srcjax_anf__``, ``srcjax.source(f, form="anf")``), then folded by :mod:`srcjax.transforms.readable`
(the form registered, printed, normalized again by the next transformation and lowered). Handing the ANF
form to the lowering (or the next writer) instead of the readable one is only sound while the readable
pass is exact. These tests pin that on the chains of ``benchmarks/bench_vmap.py`` (hessian, jacrev,
per-example gradients, a batched ``while``, a nested vmap) and a few more: the printed module and its
ANF form, each run by NumPy, give the same numbers bit for bit (and the same dtypes), and the compiled
program agrees with them.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.api import _as_compiled


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def layer(x):
    w = np.cos(np.arange(x.shape[0] * x.shape[0]).reshape(x.shape[0], x.shape[0]) * 0.37)
    return np.tanh(w @ x) * x


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    m = np.max(logits)
    lse = m + np.log(np.sum(np.exp(logits - m)))
    return lse - np.sum(logits * y)


def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def dist(p, q):
    return np.sqrt(np.sum((p - q) ** 2))


def scaled_norm(x):
    return -(-(2.5 * np.sum(x * x)) * 2.0) / 3.0 + np.sum(np.sin(x) * 3 * x)


def _cases() -> list[tuple[str, Callable[[], tuple[Callable[..., Any], tuple[Any, ...]]]]]:
    rng = np.random.default_rng(7)
    f32 = np.float32
    params = (rng.normal(size=(6, 8)).astype(f32) * 0.3, rng.normal(size=8).astype(f32) * 0.1,
              rng.normal(size=(8, 3)).astype(f32) * 0.3, rng.normal(size=3).astype(f32) * 0.1)
    xs = rng.normal(size=(5, 6)).astype(f32)
    ys = np.eye(3, dtype=f32)[rng.integers(0, 3, 5)]
    x8 = rng.uniform(0.2, 1.5, 8)
    return [
        ("hessian", lambda: (srcjax.hessian(rosen), (x8,))),
        ("jacrev", lambda: (srcjax.jacrev(layer), (x8,))),
        ("jacfwd", lambda: (srcjax.jacfwd(layer), (x8,))),
        ("grad", lambda: (srcjax.grad(scaled_norm), (x8,))),
        ("hessian-tidied", lambda: (srcjax.hessian(scaled_norm), (x8,))),
        ("per-example", lambda: (srcjax.vmap(srcjax.grad(mlp_loss), in_axes=(None, 0, 0)), (params, xs, ys))),
        ("newton", lambda: (srcjax.vmap(newton_sqrt), (rng.uniform(0.5, 1e4, 9),))),
        ("nested", lambda: (srcjax.vmap(srcjax.vmap(dist, in_axes=(None, 0)), in_axes=(0, None)),
                            (rng.normal(size=(4, 3)), rng.normal(size=(5, 3))))),
    ]


CASES = _cases()


def run_printed(text: str, f: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """The printed module's entry run by NumPy, each function in a copy of the globals of the function it was
    written from (as ``tests/test_printed_modules_run.py`` runs it, less its clean namespaces: not imported
    from there, which imports jax), all linked by name."""
    program = _as_compiled(f).program
    code = compile(text, "<printed>", "exec")
    spaces: dict[tuple[int, tuple[str, ...]], dict[str, Any]] = {}
    defined: dict[str, Any] = {}
    for nf in program.functions.values():
        key = (id(nf.source.globals), tuple(sorted(nf.source.closure)))
        ns = spaces.get(key)
        if ns is None:
            ns = spaces[key] = dict(nf.source.globals)
            ns.update(nf.source.closure)
            exec(code, ns)  # noqa: S102 - the printed module, run by NumPy
            for k, v in ns.items():
                if isinstance(v, types.FunctionType) and v.__code__.co_filename == "<printed>":
                    defined.setdefault(k, v)
        mine = ns.get(nf.name)
        if isinstance(mine, types.FunctionType) and mine.__code__.co_filename == "<printed>":
            defined[nf.name] = mine  # (each printed function runs in its own function's namespace)
    for ns in spaces.values():
        ns.update(defined)
    return defined[program.entry.name](*args)


def _leaves(x: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in srcjax.tree_util.tree_leaves(x)]


@pytest.mark.parametrize("make", [m for _, m in CASES], ids=[n for n, _ in CASES])
def test_printed_and_anf_forms_compute_the_same_bits(make: Callable[[], Any]) -> None:
    f, args = make()
    compiled = _leaves(f(*args))  # (the first call: what it wrote for these arguments is what is printed)
    printed, anf = srcjax.source(f), srcjax.source(f, form="anf")
    readable_out = _leaves(run_printed(printed, f, args))
    anf_out = _leaves(run_printed(anf, f, args))
    assert len(readable_out) == len(anf_out) == len(compiled), printed
    for r, a, c in zip(readable_out, anf_out, compiled, strict=True):
        assert r.dtype == a.dtype and r.shape == a.shape, (printed, anf)
        np.testing.assert_array_equal(r, a, err_msg=f"{printed}\n---- anf:\n{anf}")
        assert c.dtype == r.dtype and c.shape == r.shape, printed
        tight = r.dtype == np.float64
        np.testing.assert_allclose(c, r, rtol=1e-9 if tight else 2e-5, atol=1e-11 if tight else 1e-6,
                                   err_msg=printed)
