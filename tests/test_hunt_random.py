"""Seeded random user-like programs under random transformations, against jax one example at a time (issue #15).

The programs and transformations are tests/hunt_programs.py's. Each case is checked three ways: srcjax (XLA)
against jax's eager transformations run on each example in a Python loop (``vmap`` is the loop; Jacobians by
``jax.jacrev`` or one ``jax.jvp`` per basis vector, so Python control flow on data runs as it is), and the
generated source run by NumPy (``srcjax.numpy_function``) against srcjax's XLA result. A located
``TranspileError`` (a refusal) is allowed for the messages in ``KNOWN_REFUSALS``; any other error, an error
located in srcjax's own files, or a different answer fails.

The default run checks ``DEFAULT_SEEDS``; ``SRCJAX_HYPOTHESIS=thorough`` checks ``THOROUGH_COUNT`` seeds more.
``python -m tests.test_hunt_random --count 300 --start 0`` runs a sweep that reports every failure grouped.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import textwrap
import types
import warnings
from typing import Any, NamedTuple

import numpy as np
import pytest

from . import hunt_programs, hunt_sweep, tiers
from .hunt_programs import N_BATCH, C, Case, D, H, T
from .hunt_sweep import Outcome, crash, judged, refusal
from .twins import jax_twin

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)
from jax.flatten_util import ravel_pytree  # noqa: E402

DEFAULT_SEEDS = (9, 10, 14, 29, 36)  # (one of each family, jit mode and most transformations)
THOROUGH_COUNT = 120

# Refusals met and reported (a located TranspileError, with a hint, where jax runs).
KNOWN_REFUSALS: tuple[str, ...] = ()

MAX_ITERS = 8


# -- srcjax's side ---------------------------------------------------------------------------------------

def _transform_source(c: Case) -> tuple[str, str]:
    """(the transformed function as an expression of the module, extra module text)."""
    a = hunt_programs.axes_source(c.in_axes)
    o = hunt_programs.axes_source(_out_axes(c))
    mi = f", max_iters={MAX_ITERS}" if "while_on_data" in c.blocks else ""
    k = c.argnums
    if c.how in ("vmap", "vmap_params"):
        return f"srcjax.vmap(f, in_axes={a}, out_axes={o})", ""
    if c.how == "vmap(vmap)":
        inner = hunt_programs.axes_source((None, c.in_axes[1], None))
        outer = hunt_programs.axes_source((None, None, 0 if c.in_axes[2] is None else c.in_axes[2]))
        return f"srcjax.vmap(srcjax.vmap(f, in_axes={inner}), in_axes={outer}, out_axes={o})", ""
    if c.how == "grad(vmap)":
        extra = f"\n\ndef total(p, x, y):\n    return np.mean(srcjax.vmap(f, in_axes={a})(p, x, y))\n"
        return f"srcjax.grad(total{mi})", extra
    inner_name = c.how[5:-1]
    kw = f"argnums={k}" + (mi if inner_name in ("grad", "value_and_grad", "jacrev", "hessian") else "")
    return f"srcjax.vmap(srcjax.{inner_name}(f, {kw}), in_axes={a}, out_axes={o})", ""


def _out_axes(c: Case) -> Any:
    if c.out_axes != "tree":
        return c.out_axes
    leaf = [0, -1, 1][c.seed % 3], [1, 0, -1][c.seed % 3], [-1, 1, 0][c.seed % 3]
    if c.family == "deep":
        return {"layers": [{"w": leaf[0], "b": leaf[1]}, leaf[2]], "out": leaf[1]}
    return {"dict": {"w1": leaf[0], "b1": leaf[1], "w2": leaf[2]}, "list": list(leaf),
            "namedtuple": ("Params", *leaf)}[c.params]


def srcjax_module(c: Case, directory: pathlib.Path) -> types.ModuleType:
    expr, extra = _transform_source(c)
    text = c.text + extra + f"\n\nTRANSFORMED = {expr}\n\n\ndef whole(p, x, y):\n    return {expr}(p, x, y)\n"
    path = directory / f"hunt_case_{c.seed}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def srcjax_function(c: Case, mod: types.ModuleType) -> Any:
    import srcjax
    if c.jit == "whole":
        return srcjax.jit(mod.whole)
    if c.jit == "outer":
        return srcjax.jit(mod.TRANSFORMED)
    return mod.TRANSFORMED


# -- arguments ---------------------------------------------------------------------------------------------

def _insert(a: np.ndarray, axis: Any, rng: np.random.Generator) -> np.ndarray:
    if axis is None:
        return a
    ax = axis % (a.ndim + 1)
    return np.stack([a * (1.0 + 0.3 * rng.standard_normal(a.shape)) for _ in range(N_BATCH)], axis=ax)


def _insert_tree(tree: Any, axes: Any, rng: np.random.Generator) -> Any:
    """``tree`` with a batch of examples inserted where the prefix ``axes`` says."""
    if axes is None:
        return tree
    if isinstance(axes, int):
        return jax.tree_util.tree_map(lambda a: _insert(a, axes, rng), tree)
    if isinstance(axes, dict):
        return {k: _insert_tree(v, axes[k], rng) for k, v in tree.items()}
    return type(tree)(_insert_tree(v, a, rng) for v, a in zip(tree, axes))


def arguments(c: Case, params_type: Any) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(c.seed)
    pa, ax_x, ax_y = c.in_axes
    if c.family == "deep":
        p: Any = {"layers": [{"w": 0.7 * rng.standard_normal((D, H)), "b": 0.2 * rng.standard_normal(H)},
                             {"w": 0.7 * rng.standard_normal((H, H)), "b": 0.2 * rng.standard_normal(H)}],
                  "out": 0.7 * rng.standard_normal((H, C))}
        x = rng.standard_normal(D)
        if c.how == "vmap_params":
            p = _insert_tree(p, pa, rng)
        x = _insert(x, ax_x, rng)
        if c.how == "vmap(vmap)" or ax_y is not None:
            y: Any = rng.integers(0, C, N_BATCH)
        else:
            y = np.int64(rng.integers(0, C))
        return p, x, y
    w1 = 0.6 * rng.standard_normal((D, H))
    b1 = 0.3 * rng.standard_normal(H)
    w2 = 0.6 * rng.standard_normal((H, C))
    x = rng.standard_normal((T, D) if c.seq else (D,))
    y = np.exp(rng.standard_normal(C))
    y = y / np.sum(y)
    if c.how == "vmap_params":
        leaves = pa if not isinstance(pa, tuple) else list(pa[1:])
        axes = [leaves["w1"], leaves["b1"], leaves["w2"]] if isinstance(leaves, dict) else leaves
        w1, b1, w2 = (_insert(v, ax, rng) for v, ax in zip((w1, b1, w2), axes))
    if c.how == "vmap(vmap)":
        x = _insert(x, ax_x, rng)
        y = _insert(y, 0 if ax_y is None else ax_y, rng)
    else:
        x = _insert(x, ax_x, rng)
        y = _insert(y, ax_y, rng)
    p = {"dict": {"w1": w1, "b1": b1, "w2": w2}, "list": [w1, b1, w2],
         "namedtuple": params_type(w1, b1, w2)}[c.params]
    return p, x, y


# -- the oracle: jax, one example at a time ------------------------------------------------------------------

def jax_namespace(c: Case) -> dict[str, Any]:
    ns: dict[str, Any] = {"np": jnp, "NamedTuple": NamedTuple,
                          "srcjax": types.SimpleNamespace(lax=jax.lax, custom_vjp=jax.custom_vjp)}
    exec(compile(c.jax_text, f"<jax twin of hunt case {c.seed}>", "exec"), ns)
    return ns


def _take(tree: Any, axes: Any, k: int) -> Any:
    if axes is None:
        return tree
    if isinstance(axes, int):
        return jax.tree_util.tree_map(lambda a: jnp.take(jnp.asarray(a), k, axis=axes), tree)
    if isinstance(axes, dict):
        return {key: _take(tree[key], axes[key], k) for key in tree}
    if isinstance(axes, tuple) and axes and axes[0] == "Params":
        return type(tree)(*(_take(t, a, k) for t, a in zip(tree, axes[1:])))
    if isinstance(axes, (list, tuple)) and hasattr(tree, "_fields"):
        return type(tree)(*(_take(t, a, k) for t, a in zip(tree, axes)))
    return type(tree)(_take(t, a, k) for t, a in zip(tree, axes))


def _stack(outs: list[Any], axes: Any) -> Any:
    if isinstance(axes, int):
        return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs, axis=axes), *outs)
    if isinstance(axes, dict):
        return {key: _stack([o[key] for o in outs], axes[key]) for key in outs[0]}
    if isinstance(axes, tuple) and axes and axes[0] == "Params":
        return type(outs[0])(*(_stack([o[i] for o in outs], a) for i, a in enumerate(axes[1:])))
    if hasattr(outs[0], "_fields"):
        return type(outs[0])(*(_stack([o[i] for o in outs], a) for i, a in enumerate(axes)))
    return type(outs[0])(_stack([o[i] for o in outs], a) for i, a in enumerate(axes))


def _loop(fn: Any, in_axes: tuple[Any, ...], out_axes: Any) -> Any:
    def batched(*args: Any) -> Any:
        return _stack([fn(*(_take(a, ax, k) for a, ax in zip(args, in_axes))) for k in range(N_BATCH)], out_axes)
    return batched


def _zero_tangent(a: Any) -> Any:
    if jnp.issubdtype(jnp.asarray(a).dtype, jnp.floating):
        return jnp.zeros_like(a)
    return np.zeros(np.shape(a), dtype=jax.dtypes.float0)  # (an integer label)


def _jacfwd(f: Any, argnums: int) -> Any:
    def jac(*args: Any) -> Any:
        flat, unravel = ravel_pytree(args[argnums])
        cols = []
        for e in np.eye(flat.size):
            tangents = tuple(unravel(jnp.asarray(e)) if i == argnums else
                             jax.tree_util.tree_map(_zero_tangent, a) for i, a in enumerate(args))
            cols.append(jax.jvp(f, args, tangents)[1])
        return unravel(jnp.stack(cols))  # (f is scalar: the Jacobian has the argument's structure)
    return jac


def oracle(c: Case, f: Any) -> Any:
    o = _out_axes(c)
    k = c.argnums
    if c.how in ("vmap", "vmap_params"):
        return _loop(f, c.in_axes, o)
    if c.how == "vmap(vmap)":
        inner = _loop(f, (None, c.in_axes[1], None), 0)
        return _loop(inner, (None, None, 0 if c.in_axes[2] is None else c.in_axes[2]), o)
    if c.how == "grad(vmap)":
        return jax.grad(lambda p, x, y: jnp.mean(_loop(f, c.in_axes, 0)(p, x, y)))
    inner_fn = {"grad": lambda: jax.grad(f, argnums=k), "value_and_grad": lambda: jax.value_and_grad(f, argnums=k),
                "jacfwd": lambda: _jacfwd(f, k), "jacrev": lambda: jax.jacrev(f, argnums=k),
                "hessian": lambda: jax.jacrev(jax.jacrev(f, argnums=k), argnums=k)}[c.how[5:-1]]()
    return _loop(inner_fn, c.in_axes, o)


# -- comparison ---------------------------------------------------------------------------------------------

def agree(got: Any, want: Any, what: str, rtol: float = 1e-7) -> None:
    gl = jax.tree_util.tree_leaves(got)
    wl = jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl), f"{what}: {len(gl)} leaves, want {len(wl)}"
    gs, ws = str(jax.tree_util.tree_structure(got)), str(jax.tree_util.tree_structure(want))
    assert gs == ws, f"{what}: structure {gs} != {ws}"
    for i, (g, w) in enumerate(zip(gl, wl)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: leaf {i} shape {g.shape} != {w.shape}"
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=f"{what} leaf {i}")




def run_case(seed: int, directory: pathlib.Path, numpy_check: bool = True) -> Outcome:
    import srcjax
    c = hunt_programs.case(seed)
    mod = srcjax_module(c, directory)
    args = arguments(c, mod.Params)
    ns = jax_namespace(c)
    jargs = arguments(c, ns["Params"])
    jargs = jax.tree_util.tree_map(jnp.asarray, jargs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = oracle(c, ns["f"])(*jargs)
    except Exception as e:  # noqa: BLE001 - (jax cannot run it: not a case)
        return Outcome("oracle", f"{type(e).__name__}: {str(e)[:200]}")
    try:
        fn = srcjax_function(c, mod)
        got = fn(*args)
    except srcjax.TranspileError as e:
        return refusal(e, ("hunt_case_",), KNOWN_REFUSALS, 600)
    except Exception as e:  # noqa: BLE001
        return crash(e, 1500)
    return judged(fn, args, got, want, agree, 1e-7, numpy_check=numpy_check, numpy_rtol=1e-9)


def _check(seed: int, tmp_path: pathlib.Path) -> None:
    out = run_case(seed, tmp_path)
    c = hunt_programs.case(seed)
    assert out.status in ("ok", "known", "oracle"), f"{c.describe()}\n{out.status}: {out.detail}\n{c.text}"


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_hunt_case(seed: int, tmp_path: pathlib.Path) -> None:
    _check(seed, tmp_path)


@pytest.mark.parametrize("seed", tiers.thorough_cases(range(1000, 1000 + THOROUGH_COUNT)))
def test_hunt_case_thorough(seed: int, tmp_path: pathlib.Path) -> None:
    _check(seed, tmp_path)


# -- regressions found by the hunt -----------------------------------------------------------------------

class _Pair(NamedTuple):
    a: Any
    b: Any


def _by_container(p: Any, x: Any) -> Any:
    a = p["a"] if isinstance(p, dict) else p[0]
    return np.sum(np.tanh(x * a))


@pytest.mark.parametrize(("how", "kind"), [("grad", "dict"), ("grad", "list"), ("grad", "namedtuple"),
                                         ("jacrev", "namedtuple"), ("jacfwd", "list")])
def test_vmap_of_derivative_by_container_with_out_axes(how: str, kind: str) -> None:
    """``vmap(grad(f), out_axes=-1)`` by a dict/list/NamedTuple argument moves every leaf's batch axis (was
    ``np.moveaxis`` of the container itself: a StaticValueError "axis 0 is out of bounds" or "a list of
    traced values where an array goes"); a leaf the output does not depend on is broadcast first."""
    import srcjax
    rng = np.random.default_rng(0)
    w, xs = rng.standard_normal(3), rng.standard_normal((2, 3))
    p: Any = {"dict": {"a": w, "b": w}, "list": [w, w], "namedtuple": _Pair(w, w)}[kind]
    for out_axes in (-1, 1):
        got = srcjax.jit(srcjax.vmap(getattr(srcjax, how)(_by_container), in_axes=(None, 0), out_axes=out_axes))(p, xs)
        want = jax.vmap(getattr(jax, how)(jax_twin(_by_container)), in_axes=(None, 0), out_axes=out_axes)(p, xs)
        agree(got, want, f"{how} {kind} out_axes={out_axes}")


def _layers(p: Any, x: Any) -> Any:
    h = x
    for layer in p["layers"]:
        z = h @ layer["w"] + layer["b"]
        h = np.tanh(z)
    return np.sum(h @ p["out"])


def _pairs(p: Any, x: Any) -> Any:
    h = x
    for w, v in p:
        h = np.tanh(h @ w + h @ v)
    return np.sum(h)


@pytest.mark.parametrize("in_axes", [({"layers": [{"w": 0, "b": None}, None], "out": None}, None),
                                     ({"layers": [0, None], "out": 0}, 0),
                                     ({"layers": [None, {"w": -1, "b": 0}], "out": None}, None)])
def test_vmap_loop_over_a_list_of_layers_mapped_in_part(in_axes: Any) -> None:
    """``for layer in p["layers"]`` where in_axes maps some layers (or some of a layer's leaves) and not
    others: the loop walks the list item by item, each made batched (was ``batch_rows`` of the list, read as
    a batched array: a ShapeError at the matmul), and an unmapped layer's dict is broadcast leaf by leaf
    (was ``np.broadcast_to`` of the dict: an IndexError)."""
    import srcjax
    rng = np.random.default_rng(1)

    def mapped(a: np.ndarray, ax: Any) -> np.ndarray:
        return a if ax is None else np.stack([a + 0.1 * k for k in range(2)], axis=ax)

    def leaf_axes(spec: Any, key: str) -> Any:
        return spec if not isinstance(spec, dict) else spec[key]

    la = in_axes[0]["layers"]
    p = {"layers": [{k: mapped(rng.standard_normal(s), leaf_axes(a, k)) for k, s in (("w", (3, 3)), ("b", (3,)))}
                    for a in la],
         "out": mapped(rng.standard_normal((3, 2)), in_axes[0]["out"])}
    x = mapped(rng.standard_normal(3), in_axes[1])
    got = srcjax.vmap(_layers, in_axes=in_axes)(p, x)
    agree(got, jax.vmap(jax_twin(_layers), in_axes=in_axes)(p, x), f"in_axes={in_axes}")
    pairs = [[mapped(rng.standard_normal((3, 3)), 0), mapped(rng.standard_normal((3, 3)), 0)],
             [rng.standard_normal((3, 3)), rng.standard_normal((3, 3))]]
    got = srcjax.jit(srcjax.vmap(_pairs, in_axes=([0, None], None)))(pairs, x if in_axes[1] is None else x[0])
    agree(got, jax.vmap(jax_twin(_pairs), in_axes=([0, None], None))(pairs, x if in_axes[1] is None else x[0]),
          "pairs")


def _early_return_by_dict(p: Any, x: Any) -> Any:
    h = np.tanh(x @ p["w"])
    if np.max(np.abs(h)) > 0.5:
        return np.sum(h * h)
    return np.sum(h @ p["out"])


@pytest.mark.parametrize("how", ["jacrev", "hessian"])
def test_vmap_of_reverse_mode_joins_a_dict_cotangent_per_example(how: str) -> None:
    """``vmap(jacrev(f), in_axes=(None, 0))`` of an early ``return`` on data where one branch does not read the
    dict ``p["out"]`` (seeds 16 and 473): the inner vmap (jacrev's basis) broadcasts that branch's zero cotangent
    of ``p`` with ``batch_broadcast_items``; the outer one joined it with the other branch's by ``batch_select``
    of the dict (was "internal error: object of type 'HloValue' has no len()"). A name bound to zeros of a
    container, through tuples, copies and broadcasts of it, is selected leaf by leaf. Against jax run on each
    example (jax cannot vmap the Python ``if``) and the generated source run by NumPy."""
    import srcjax
    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal((3, 4)), "out": rng.standard_normal((4, 2))}
    xs = rng.standard_normal((4, 3)) * np.array([[0.05], [1.0], [0.05], [2.0]])  # (both branches taken)
    g = srcjax.vmap(getattr(srcjax, how)(_early_return_by_dict), in_axes=(None, 0))
    got = srcjax.jit(g)(p, xs)
    one = getattr(jax, how)(jax_twin(_early_return_by_dict))
    want = jax.tree_util.tree_map(lambda *r: np.stack(r), *[one(p, x) for x in xs])
    agree(got, want, f"vmap({how})")
    agree(srcjax.numpy_function(g)(p, xs), got, "NumPy running the generated source", rtol=1e-9)


def test_block_tests_do_not_sit_on_a_tie_after_layer_norm() -> None:
    """Each test a block makes of ``h`` alone (``np.sum(h) > 0.0``, ``np.sum(h * h) < 3.0``...) is away from its
    threshold for a layer-normed ``h`` (the deep family's ``layer_norm(h) if NORM``): ``np.sum`` of one is 0 up
    to rounding, and seeds 165 and 485 took the other branch of ``lax.cond(np.sum(h) > 0.0, ...)`` than jax's
    twin from a sum of 1e-16 (srcjax agreeing with NumPy running the user's function), reported as wrong."""
    import ast

    rng = np.random.default_rng(0)
    tests = [node for text in [t for t, _ in hunt_programs.BLOCKS.values()] + [hunt_programs.EARLY_RETURN]
             for node in ast.walk(ast.parse(textwrap.dedent(text))) if isinstance(node, ast.Compare)
             and {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} <= {"h", "np"}]
    assert len(tests) >= 4
    for node in tests:
        for _ in range(20):
            v = rng.standard_normal(H) * rng.choice([0.1, 1.0, 10.0])
            h = (v - np.mean(v)) / np.sqrt(np.var(v) + 1e-5)  # (hunt_programs' layer_norm)
            left, right = (eval(compile(ast.Expression(e), "<test>", "eval"), {"np": np, "h": h})
                           for e in (node.left, node.comparators[0]))
            assert abs(left - right) > 1e-9 * (1.0 + abs(right)), ast.unparse(node)


def main() -> None:
    hunt_sweep.main(run_case, lambda s: hunt_programs.case(s).describe(), 1500)


if __name__ == "__main__":
    main()
