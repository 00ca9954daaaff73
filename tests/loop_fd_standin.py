"""A NumPy stand-in for srcjax's transformations, the oracle that shares no code with them: ``vmap`` is a Python
loop over the examples (in_axes/out_axes as ints, None, negative ints and pytree prefixes: tuples, lists, dicts,
NamedTuples; ``axis_size``; keyword arguments mapped along 0), ``grad``/``value_and_grad``/``jacfwd``/``jacrev``/
``hessian``/``jvp``/``vjp`` are central finite differences in float64 (nested at most two deep: a third level's
round-off would swamp the answer), ``jit`` is the function itself, ``custom_jvp``/``custom_vjp`` call the primal
function (a rule that is not the derivative, a clipped gradient, is then not what finite differences give).
``lax`` and ``tree_util`` are srcjax's own NumPy implementations (they run eagerly on NumPy arrays).

``namespace()`` is what a program module's text sees as ``srcjax``; ``TRANSFORMS`` what a check's text sees.
A derivative asked of a float32 or integer argument, or nested three deep, raises :class:`NoReference` (the
test has no NumPy reference for that check then).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax

tree_util = srcjax.tree_util
EPS = 1e-4  # (relative to the element's size: truncation ~1e-8, round-off ~1e-12; nested twice ~1e-8)


class NoReference(Exception):  # noqa: N818 - (a signal, not an error)
    """The stand-in cannot give this check a reference (float32 derivatives, three nested derivatives)."""


class _State:
    depth = 0  # finite differences in progress
    deepest = 0  # the deepest nesting since reset()


def reset() -> None:
    _State.depth = _State.deepest = 0


def deepest() -> int:
    return _State.deepest


# -- vmap as a loop -------------------------------------------------------------------------------------------

def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def take(x: Any, ax: Any, k: int) -> Any:
    """Example ``k`` of ``x`` mapped along the prefix ``ax``."""
    if ax is None:
        return x
    if isinstance(ax, int):
        return tree_util.tree_map(lambda a: np.take(np.asarray(a), k, axis=ax), x)
    if isinstance(ax, dict):
        return {key: take(x[key], ax[key], k) for key in x}
    if _is_namedtuple(ax):
        return type(x)(*[take(v, a, k) for v, a in zip(x, ax)])
    return type(x)(take(v, a, k) for v, a in zip(x, ax))


def size(x: Any, ax: Any) -> int | None:
    """The mapped size of ``x`` along the prefix ``ax`` (None: nothing mapped)."""
    if ax is None:
        return None
    if isinstance(ax, int):
        leaves = tree_util.tree_leaves(x)
        return int(np.shape(leaves[0])[ax]) if leaves else None
    pairs = [(x[k], ax[k]) for k in ax] if isinstance(ax, dict) else list(zip(x, ax))
    return next((s for s in (size(v, a) for v, a in pairs) if s is not None), None)


def stack(outs: list[Any], ax: Any) -> Any:
    """The examples' outputs stacked along the prefix ``ax`` (None: the first, every example's the same)."""
    if ax is None:
        return outs[0]
    if isinstance(ax, int):
        return tree_util.tree_map(lambda *xs: np.stack([np.asarray(v) for v in xs], axis=ax), *outs)
    if isinstance(ax, dict):
        return {k: stack([o[k] for o in outs], ax[k]) for k in ax}
    if _is_namedtuple(ax):
        return type(outs[0])(*[stack([o[i] for o in outs], a) for i, a in enumerate(ax)])
    return type(outs[0])(stack([o[i] for o in outs], a) for i, a in enumerate(ax))


def vmap(fn: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         axis_name: Any = None) -> Callable[..., Any]:
    def batched(*args: Any, **kwargs: Any) -> Any:
        axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) and not _is_namedtuple(in_axes) else \
            (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"in_axes {in_axes!r} for {len(args)} arguments")
        sizes = [s for s in (size(a, ax) for a, ax in zip(args, axes)) if s is not None]
        sizes += [np.shape(tree_util.tree_leaves(v)[0])[0] for v in kwargs.values()]
        n = sizes[0] if sizes else axis_size
        if n is None:
            raise ValueError("vmap with nothing mapped needs axis_size")
        outs = [fn(*[take(a, ax, k) for a, ax in zip(args, axes)], **{key: take(v, 0, k) for key, v in kwargs.items()})
                for k in range(n)]
        return stack(outs, out_axes)
    return batched


# -- derivatives by central finite differences ---------------------------------------------------------------

def _float_leaves(x: Any) -> list[Any]:
    leaves = tree_util.tree_leaves(x)
    for leaf in leaves:
        dt = np.asarray(leaf).dtype
        if dt != np.float64 and not isinstance(leaf, float):
            raise NoReference(f"a derivative with respect to a {dt} leaf")
    return leaves


def _perturbed(x: Any, leaf: int, idx: tuple[int, ...], h: float) -> Any:
    leaves, tree = tree_util.tree_flatten(x)
    a = np.array(leaves[leaf], dtype=np.float64)
    scalar = np.ndim(leaves[leaf]) == 0
    a[idx] += h
    leaves = list(leaves)
    leaves[leaf] = float(a) if scalar and isinstance(tree_util.tree_leaves(x)[leaf], float) else a
    return tree_util.tree_unflatten(tree, leaves)


def _enter() -> None:
    if _State.depth >= 2:
        raise NoReference("finite differences nested three deep")
    _State.depth += 1
    _State.deepest = max(_State.deepest, _State.depth)


def _exit() -> None:
    _State.depth -= 1


def _step(v: float) -> float:
    return EPS * max(1.0, abs(v))


def _jacobian(fn: Callable[..., Any], args: tuple[Any, ...], argnums: Any, has_aux: bool) -> tuple[Any, Any, Any]:
    """(value, d value / d args[argnums] shaped as jax's jacobians: the output's tree of the inputs' trees,
    each leaf out.shape + in.shape, aux)."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    _enter()
    try:
        out = fn(*args)
        aux = None
        if has_aux:
            out, aux = out
        out_leaves, out_tree = tree_util.tree_flatten(out)
        out_leaves = [np.asarray(o, dtype=np.float64) for o in out_leaves]
        per_arg = []
        for k in nums:
            leaves, in_tree = tree_util.tree_flatten(args[k])
            _float_leaves(args[k])
            jac_leaves: list[list[np.ndarray]] = [[] for _ in out_leaves]  # [out][in]
            for j, leaf in enumerate(leaves):
                x = np.asarray(leaf, dtype=np.float64)
                cols: list[list[np.ndarray]] = [[] for _ in out_leaves]
                for idx in np.ndindex(x.shape):
                    h = _step(float(x[idx]))
                    outs = []
                    for sign in (1.0, -1.0):
                        a = list(args)
                        a[k] = _perturbed(args[k], j, idx, sign * h)
                        o = fn(*a)
                        outs.append(tree_util.tree_leaves(o[0] if has_aux else o))
                    for i in range(len(out_leaves)):
                        cols[i].append((np.asarray(outs[0][i], np.float64) - np.asarray(outs[1][i], np.float64)) / (2 * h))
                for i, o in enumerate(out_leaves):
                    d = np.stack(cols[i], axis=-1) if cols[i] else np.zeros(o.shape + (0,))
                    jac_leaves[i].append(d.reshape(o.shape + x.shape))
            per_arg.append([tree_util.tree_unflatten(in_tree, js) for js in jac_leaves])
        trees = [tuple(per_arg[a][i] for a in range(len(nums))) if isinstance(argnums, tuple) else per_arg[0][i]
                 for i in range(len(out_leaves))]
        return out, tree_util.tree_unflatten(out_tree, trees), aux
    finally:
        _exit()


def jacfwd(fn: Callable[..., Any], argnums: Any = 0, has_aux: bool = False) -> Callable[..., Any]:
    def jac(*args: Any) -> Any:
        _, d, aux = _jacobian(fn, args, argnums, has_aux)
        return (d, aux) if has_aux else d
    return jac


jacrev = jacfwd


def grad(fn: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, **_: Any) -> Callable[..., Any]:
    return jacfwd(fn, argnums, has_aux)


def value_and_grad(fn: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, **_: Any) -> Callable[..., Any]:
    def vg(*args: Any) -> Any:
        out, d, aux = _jacobian(fn, args, argnums, has_aux)
        return ((out, aux) if has_aux else out), d
    return vg


def hessian(fn: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    return jacfwd(jacfwd(fn, argnums), argnums)


def jvp(fn: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """(fn(*primals), its directional derivative along tangents), by one central difference."""
    _enter()
    try:
        for p in primals:
            _float_leaves(p)
        scale = max([1.0] + [float(np.max(np.abs(np.asarray(v, np.float64)), initial=0.0))
                             for p in primals for v in tree_util.tree_leaves(p)])
        h = EPS * scale

        def at(s: float) -> Any:
            return fn(*[tree_util.tree_map(lambda p, t: np.asarray(p, np.float64) + s * np.asarray(t, np.float64),
                                           p, t) for p, t in zip(primals, tangents)])
        plus, minus = tree_util.tree_leaves(at(h)), tree_util.tree_leaves(at(-h))
        out = fn(*primals)
        leaves, tree = tree_util.tree_flatten(out)
        return out, tree_util.tree_unflatten(tree, [(np.asarray(a) - np.asarray(b)) / (2 * h)
                                                    for a, b in zip(plus, minus)])
    finally:
        _exit()


def vjp(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """(fn(*primals), the pullback: the cotangent contracted with the finite-difference Jacobian)."""
    out = fn(*primals)
    jacs = [tree_util.tree_leaves(_jacobian(fn, primals, a, False)[1]) for a in range(len(primals))]

    def pullback(ct: Any) -> tuple[Any, ...]:
        ct_leaves = [np.asarray(c, np.float64) for c in tree_util.tree_leaves(ct)]
        result = []
        for a, p in enumerate(primals):
            p_leaves, p_tree = tree_util.tree_flatten(p)
            sums = [np.zeros(np.shape(v)) for v in p_leaves]
            for i, c in enumerate(ct_leaves):  # (jacs[a]: for each output leaf, one per leaf of primal a)
                for j in range(len(p_leaves)):
                    sums[j] = sums[j] + np.tensordot(c, jacs[a][i * len(p_leaves) + j], axes=c.ndim)
            result.append(tree_util.tree_unflatten(p_tree, sums))
        return tuple(result)
    return out, pullback


# -- the rest of srcjax's names a program may read ---------------------------------------------------------------

def jit(fn: Callable[..., Any] | None = None, **_: Any) -> Any:
    return fn if fn is not None else (lambda f: f)


class _Custom:
    """``custom_jvp``/``custom_vjp``: the primal function; the rules are recorded and not used."""

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: tuple[int, ...] = ()) -> None:
        self.fun = fun

    def __call__(self, *args: Any) -> Any:
        return self.fun(*args)

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        return rule

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        return None


def namespace() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        vmap=vmap, grad=grad, value_and_grad=value_and_grad, jacfwd=jacfwd, jacrev=jacrev, hessian=hessian,
        jvp=jvp, vjp=vjp, jit=jit, custom_jvp=_Custom, custom_vjp=_Custom, lax=srcjax.lax, tree_util=tree_util,
        random=srcjax.random)


TRANSFORMS: dict[str, Any] = {"vmap": vmap, "grad": grad, "value_and_grad": value_and_grad, "jacfwd": jacfwd,
                              "jacrev": jacrev, "hessian": hessian, "jvp": jvp, "vjp": vjp, "jit": jit}
