"""Random programs built around full reductions, against jax: the ``batch_align`` elisions of
``transforms/batch_aligns.py`` (a reduction over every per-example axis has none left) must keep every value.

Each program reduces its arguments (every axis or one, ``keepdims`` or not, batched arguments or not, as
``np.max``/``np.sum``/``np.mean``/``np.min``), combines the reductions with the arguments elementwise, rebinds
names (from themselves, after the reduction), in a loop or on both sides of a branch on data, and returns a
value of the arguments' broadcast shape. It runs under ``vmap`` (``in_axes`` with ``None`` mixes, ``out_axes``),
nested ``vmap`` (the inner one's lines copied by the outer one too), ``vmap(grad)``, ``jacrev``,
``jacfwd(jacrev)`` and ``hessian`` (of a scalar and of an array: the withdrawn ``*_like`` rule fails the last
two), by XLA and as generated source by NumPy, against jax (and a Python loop over the examples for ``vmap``).
The default tier draws a few derandomized programs; ``SRCJAX_HYPOTHESIS=thorough`` many fresh ones;
``python -m tests.test_batch_aligns_random N SEED`` sweeps N
seeded programs and prints each failure.
"""

from __future__ import annotations

import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import Phase, given
from hypothesis import strategies as st

import srcjax
from tests.written import Choices, DrawChoices, RandomChoices, examples, numpy_and_jax

jax.config.update("jax_enable_x64", True)

# per-example shapes: every pair broadcasts (the first axis is 1 or 2, the last 1 or 3)
X_SHAPE, Y_SHAPE = (2, 3), (3,)
_REDUCE = ["np.max", "np.sum", "np.mean", "np.min"]
_AXES = ["", ", axis=None", ", axis=-1", ", axis=0", ", keepdims=True", ", axis=-1, keepdims=True",
         ", axis=(0, 1)"]
_COMBINE = ["{a} - {m}", "{a} * {m}", "np.exp({a} - {m})", "{m} + {a}", "np.where({a} > {m}, {a}, {m})",
            "np.maximum({a}, {m})", "({a} - {m}) * ({a} - {m})", "{a} / (1.0 + {m} * {m})",
            "np.sin({a}) * 2.0 + {m}", "2.0 * np.cos({a} - {m})"]  # (a number times an array: an unbroadcast)
_UNARY = ["np.log(1.0 + {m} * {m})", "{m} * 2.0", "np.tanh({m})", "-{m}", "{m} + 1.0"]
_TRANSFORMS = ["vmap", "vmap_x", "vmap_y", "vmap_out1", "vmap_vmap", "vmap_vmap_crossed", "vmap_grad", "jacrev",
               "jacfwd_jacrev", "hessian", "hessian_of_array", "vmap_jacrev"]


def write_program(c: Choices) -> str:
    """``def f(x, y)``: x of shape (2, 3), y of (3,); the result has shape (2, 3)."""
    lines: list[str] = []
    env: dict[str, Any] = {"np": np, "x": np.full(X_SHAPE, 0.5), "y": np.full(Y_SHAPE, 0.25)}
    arrays = ["x", "y"]  # (values with axes)
    scalars: list[str] = []  # (reductions and what is computed from them, keepdims' shapes included)
    n = 0

    def new(prefix: str) -> str:
        nonlocal n
        n += 1
        return f"{prefix}{n}"

    def shape(expr: str) -> tuple[int, ...]:
        return np.shape(eval(expr, env))

    def bind(name: str, expr: str) -> None:
        lines.append(f"{name} = {expr}")
        env[name] = eval(expr, env)

    for _ in range(c.integers(2, 6)):
        kind = c.choice(["reduce", "reduce", "combine", "unary", "rebind", "loop", "branch"])
        if kind == "reduce" or not scalars:
            src = c.choice(arrays)
            red = c.choice(_REDUCE)
            axes = c.choice([a for a in _AXES if _fits(env, f"{red}({src}{a})")])
            m = new("m")
            bind(m, f"{red}({src}{axes})")
            scalars.append(m)
        elif kind == "combine":
            a, m = c.choice(arrays), c.choice(scalars)
            out = new("a")
            bind(out, c.choice(_COMBINE).format(a=a, m=m))
            arrays.append(out)
        elif kind == "unary":
            m = c.choice(scalars)
            if c.integers(0, 1):  # (rebound from itself: the reduced value replaced by one of its own rank)
                bind(m, c.choice(_UNARY).format(m=m))
            else:
                out = new("m")
                bind(out, c.choice(_UNARY).format(m=m))
                scalars.append(out)
        elif kind == "rebind":  # (a reduced name bound again to a value with axes: its facts are forgotten)
            m, a = c.choice(scalars), c.choice(arrays)
            bind(m, f"{a} * 0.5")
            scalars.remove(m)
            arrays.append(m)
        elif kind == "loop":
            m, a = c.choice(scalars), c.choice(arrays)
            step = c.choice(_COMBINE).format(a=a, m=m)
            if shape(step) != shape(a):  # (a loop carry keeps its shape)
                step = f"{a} * np.tanh({a})"
            lines += ["for i in range(2):", f"    {m} = " + c.choice(_UNARY).format(m=m), f"    {a} = {step}"]
        else:
            m, a = c.choice(scalars), c.choice(arrays)
            other = c.choice([o for o in arrays + scalars if shape(o) == shape(m)] or [m])
            lines += [f"if np.sum({a}) > 0.0:", f"    {m} = {other} * 1.5", "else:",
                      f"    {m} = " + c.choice(_UNARY).format(m=m)]
    a, m = c.choice(arrays), c.choice(scalars) if scalars else "1.0"
    lines.append("return " + c.choice(_COMBINE).format(a=a, m=m) + " + 0.0 * x")
    body = "\n".join("    " + ln for ln in lines)
    return f"import numpy as np\n\n\ndef f(x, y):\n{body}\n"


def _fits(env: dict[str, Any], expr: str) -> bool:
    """Whether ``expr`` runs and its shape broadcasts into (2, 3) (every value of a program does)."""
    try:
        return np.broadcast_shapes(np.shape(eval(expr, env)), X_SHAPE) == X_SHAPE
    except (ValueError, np.exceptions.AxisError):
        return False


def _loss(fn: Any, lib: Any) -> Any:
    return lambda x, y: lib.sum(fn(x, y) ** 2)


def run_case(f: Any, jf: Any, how: str, seed: int = 0) -> None:
    """``how`` of ``f`` (srcjax: by XLA and as NumPy source) against the same of ``jf`` (jax), and a vmap's
    against a Python loop over the examples (of ``f`` by NumPy, of jax's transformation of ``jf``: jax cannot
    vmap a Python branch on data)."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=X_SHAPE), rng.normal(size=Y_SHAPE)
    xs, ys = rng.normal(size=(4,) + X_SHAPE), rng.normal(size=(4,) + Y_SHAPE)
    xss = rng.normal(size=(3, 4) + X_SHAPE)
    loop: Any = None
    if how == "vmap":
        ours, args = srcjax.vmap(f), (xs, ys)
        loop, want = (np.stack([g(xs[i], ys[i]) for i in range(4)]) for g in (f, jf))
    elif how == "vmap_x":
        ours, args = srcjax.vmap(f, in_axes=(0, None)), (xs, y)
        loop, want = (np.stack([g(xs[i], y) for i in range(4)]) for g in (f, jf))
    elif how == "vmap_y":
        ours, args = srcjax.vmap(f, in_axes=(None, 0)), (x, ys)
        loop, want = (np.stack([g(x, ys[i]) for i in range(4)]) for g in (f, jf))
    elif how == "vmap_out1":
        ours, args = srcjax.vmap(f, out_axes=1), (xs, ys)
        loop, want = (np.stack([g(xs[i], ys[i]) for i in range(4)], axis=1) for g in (f, jf))
    elif how == "vmap_vmap":
        ours, args = srcjax.vmap(srcjax.vmap(f, in_axes=(0, None)), in_axes=(0, 0)), (xss, ys[:3])
        loop, want = (np.stack([np.stack([g(xss[i, j], ys[i]) for j in range(4)]) for i in range(3)])
                      for g in (f, jf))
    elif how == "vmap_vmap_crossed":  # (the inner vmap's lines of y alone: copied as they are by the outer one)
        yss = rng.normal(size=(4,) + Y_SHAPE)
        ours, args = srcjax.vmap(srcjax.vmap(f, in_axes=(None, 0)), in_axes=(0, None)), (xs[:3], yss)
        loop, want = (np.stack([np.stack([g(xs[i], yss[j]) for j in range(4)]) for i in range(3)])
                      for g in (f, jf))
    elif how == "jacfwd_jacrev":  # (jacfwd batches jacrev's batched VJP again)
        ours, args = srcjax.jacfwd(srcjax.jacrev(f)), (x, y)
        want = jax.jacrev(jax.jacrev(jf))(x, y)
    elif how == "vmap_grad":
        ours, args = srcjax.vmap(srcjax.grad(_loss(f, np)), in_axes=(0, None)), (xs, y)
        want = np.stack([jax.grad(_loss(jf, jnp))(xs[i], y) for i in range(4)])
    elif how == "vmap_jacrev":
        ours, args = srcjax.vmap(srcjax.jacrev(f, argnums=1), in_axes=(0, None)), (xs, y)
        want = np.stack([jax.jacrev(jf, argnums=1)(xs[i], y) for i in range(4)])
    elif how == "jacrev":
        ours, args = srcjax.jacrev(f), (x, y)
        want = jax.jacrev(jf)(x, y)
    elif how == "hessian_of_array":  # (an array output: jacfwd(jacrev(f)), after the gradient's path refused it)
        ours, args = srcjax.hessian(f, argnums=1), (x, y)
        want = jax.jacrev(jax.jacrev(jf, argnums=1), argnums=1)(x, y)
    else:  # (jax.hessian is jacfwd over jacrev: a vmap, which refuses a branch on data; jacrev twice does not)
        ours, args = srcjax.hessian(_loss(f, np)), (x, y)
        want = jax.jacrev(jax.jacrev(_loss(jf, jnp)))(x, y)
    want = np.asarray(want)
    got = np.asarray(ours(*args))
    assert got.shape == want.shape, f"{how}: shape {got.shape}, jax {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=f"{how} (XLA)")
    by_numpy = np.asarray(srcjax.numpy_function(ours)(*args))
    np.testing.assert_allclose(by_numpy, want, rtol=1e-9, atol=1e-9, err_msg=f"{how} (NumPy source)")
    if loop is not None:
        np.testing.assert_allclose(got, loop, rtol=1e-9, atol=1e-9, err_msg=f"{how} (a loop over examples)")


@st.composite
def programs(draw: Any) -> tuple[str, str]:
    return write_program(DrawChoices(draw)), draw(st.sampled_from(_TRANSFORMS))


@examples(4, scale=50, phases=[Phase.explicit, Phase.generate])
@given(programs())
def test_random_reduction_programs_agree_with_jax(tmp_path_factory, case):
    text, how = case
    f, jf = numpy_and_jax(tmp_path_factory.mktemp("aligns", numbered=True), text, "al")
    try:
        run_case(f, jf, how)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{text}\n{how}") from None


def _sweep(count: int, seed: int) -> int:  # pragma: no cover - run by hand
    import pathlib
    import tempfile
    bad = 0
    root = pathlib.Path(tempfile.mkdtemp(prefix="aligns_sweep_"))
    for k in range(seed, seed + count):
        c = RandomChoices(k)
        text = write_program(c)
        f, jf = numpy_and_jax(root, text, "al")
        for how in _TRANSFORMS:
            try:
                run_case(f, jf, how, k)
            except Exception as e:  # noqa: BLE001 - a sweep reports every failure
                bad += 1
                print(f"--- seed {k} {how}: {type(e).__name__}: {str(e)[:600]}\n{text}")
    print(f"{count} programs x {len(_TRANSFORMS)} transforms: {bad} failures")
    return bad


if __name__ == "__main__":  # pragma: no cover
    sys.exit(1 if _sweep(int(sys.argv[1]) if len(sys.argv) > 1 else 50,
                         int(sys.argv[2]) if len(sys.argv) > 2 else 0) else 0)
