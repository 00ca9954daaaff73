"""Branches on array data: ``srcjax.lax.cond`` / ``switch`` with a dynamic predicate, and a Python
``if`` whose test is an array value, become ``stablehlo.if`` / ``case``.

Every branch is interpreted into its own region, and the branches' outputs are joined (same
structure and shapes; a Python scalar takes the dtype of the other branch's array). A name bound on
some branches only is :class:`~.values.Undefined` after the ``if``: an error if read, except on the
same branches of a later ``if`` on the same condition (derivative code re-tests the forward pass's
conditions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from .. import pytree
from ..adjoint import UNSET
from ..core import DTypeError, ShapedArray, ShapeError, TranspileError
from ..frontend.names import assigned_names
from ..frontend.read import is_generated
from .hlo import HloValue
from .regions import (
    check_containers,
    exec_without_exits,
    is_data,
    leaf_value,
    out_names,
    scalar_pred,
    snapshot_containers,
)
from .values import Undefined, aval_of_static, join_avals, same_static

if TYPE_CHECKING:  # annotations only: the specializer imports this module, not the other way round
    from .specialize import Specializer


def _derivative_code(sp: Specializer) -> bool:
    """Whether the function being run is a derivative srcjax wrote (its names are srcjax's, not the user's)."""
    return bool(sp.fn_stack) and is_generated(sp.fn_stack[-1].fn)


def branches(sp: Specializer, index: HloValue, fns: Sequence[Callable[[], Any]],
             names: Callable[[int], list[str]] | None = None) -> Any:
    """Run each of ``fns`` in its own region; ``stablehlo.if``/``case`` on ``index``; the joined outputs."""
    assert sp.b is not None
    if sp.print_dep is not None:  # the program prints: each branch passes the print order on
        outer = sp.print_dep

        def in_order(fn: Callable[[], Any]) -> Callable[[], Any]:
            def run() -> Any:
                sp.print_dep = outer
                return fn(), sp.print_dep
            return run

        sp.print_dep = None
        try:
            out, sp.print_dep = branches(sp, index, [in_order(f) for f in fns], names)
        except BaseException:
            sp.print_dep = outer
            raise
        return out
    regions: list[list[str]] = []
    outs: list[Any] = []
    snap = snapshot_containers(sp.envs)
    for k, fn in enumerate(fns):
        with sp.b.region() as lines:
            sp.on_branch.append((index.name, k))  # names defined on branch k of an earlier `if` on index
            try:
                outs.append(fn())
            finally:
                sp.on_branch.pop()
        check_containers(snap, "a branch on array data", index)
        regions.append(lines)
    flat = [pytree.flatten(o) for o in outs]
    if any(t != flat[0][1] for _, t in flat[1:]):
        flat = [pytree.flatten(o) for o in _spread_unset(outs)]
    tree = flat[0][1]
    for _, t in flat[1:]:
        if t != tree:
            raise TranspileError(f"the branches give different structures: {tree} and {t}",
                                 hint="return the same tuple/list/dict structure from every branch")
    n = tree.num_leaves
    labels = names(n) if names is not None else out_names(sp, n)
    result: list[Any] = [None] * n
    partial: dict[int, tuple[Undefined, dict[str, frozenset[int]]]] = {}
    dyn: list[int] = []
    avals: list[ShapedArray] = []
    for j in range(n):
        vals = [leaves[j] for leaves, _ in flat]
        if any(v is UNSET for v in vals):
            vals = [v for v in vals if v is not UNSET]
            if vals and not any(isinstance(v, HloValue | Undefined) for v in vals) and \
                    all(same_static(vals[0], v) for v in vals):
                result[j] = vals[0]  # read only where it was set (derivative code): it stays a Python value
                continue
            if not vals or not all(isinstance(v, HloValue) or aval_of_static(v) is not None for v in vals):
                result[j] = UNSET if not vals else Undefined(labels[j], "an `if` on array data")
                continue
            # zeros on the branches that leave it UNSET
            dyn.append(j)
            avals.append(join_avals([v.aval if isinstance(v, HloValue) else aval_of_static(v)  # type: ignore
                                     for v in vals], labels[j]))
            continue
        if not any(isinstance(v, HloValue) for v in vals) and all(same_static(vals[0], v) for v in vals):
            result[j] = vals[0]
            continue
        undefined = next((v for v in vals if isinstance(v, Undefined)), None)
        if undefined is not None:  # assigned on some paths only: an error if it is read later
            # (a value readable only on another branch of this very test, `stop = False` under an earlier
            # `if gt:`, is unreadable on this one: the branch that reads and rebinds it gives the value; it
            # gave the earlier one, and a loop's flag lost every update)
            avail = {k: v for k, v in enumerate(vals) if not isinstance(v, Undefined) or v.value is not None
                     and k in v.conds.get(index.name, frozenset([k]))}
            conds = [v.conds if isinstance(v, Undefined) else {} for v in avail.values()]
            avs = [(v.value if isinstance(v, Undefined) else v) for v in avail.values()]
            known = [a for a in (x.aval if isinstance(x, HloValue) else aval_of_static(x) for x in avs)
                     if a is not None]
            if not avail or any(c != conds[0] for c in conds):
                result[j] = undefined
                continue
            if not any(isinstance(v, HloValue) for v in avs) and all(same_static(avs[0], v) for v in avs):
                # a Python value (a shape, a flag of derivative code): it stays one, read on those branches only
                result[j] = Undefined(undefined.name, undefined.why, value=avs[0],
                                      conds={**conds[0], index.name: frozenset(avail)})
                continue
            if len(known) < len(avs):
                result[j] = undefined
                continue
            partial[j] = (undefined, {**conds[0], index.name: frozenset(avail)})
            dyn.append(j)
            avals.append(join_avals(known, labels[j]))
            continue
        vavals = [v.aval if isinstance(v, HloValue) else aval_of_static(v) for v in vals]
        odd = next((v for v, a in zip(vals, vavals) if a is None), None)
        if odd is not None:  # (an error where it is read after the `if`: a nested def the branch made again is not)
            result[j] = Undefined(labels[j], "an `if` on array data", message=(
                f"{labels[j]} is {odd!r} on one branch and something else on another; a value decided by array "
                "data must be an array or a number"))
            continue
        try:
            joined = join_avals([a for a in vavals if a is not None], labels[j])
        except (DTypeError, ShapeError) as e:
            if not _derivative_code(sp):
                raise  # (the user's name: the error at the `if`)
            # an error where it is read after the `if`: derivative code binds a cotangent (and its temporaries) in a
            # branch on a test its tape holds, and reads it in that branch alone (hunt22's nbody_loops at float32:
            # `add_1_bar` float32 on one path, float64 on another; `x_bar_dot` of grad(lambda x: np.sum(hessian(f)(x)
            # @ x)) through an `if` on data: batched f64[3,3] on one path, summed to f64[3] on the other)
            result[j] = Undefined(labels[j], "an `if` on array data", message=e.message)
            continue
        dyn.append(j)
        avals.append(joined)
    for k, lines in enumerate(regions):
        with sp.b.region(lines):
            outs_k = []
            for j, a in zip(dyn, avals):
                v = flat[k][0][j]
                if v is UNSET:
                    v = sp.b.full(0, a.shape, a.dtype)
                if isinstance(v, Undefined):  # (zeros where it cannot be read: see avail above)
                    readable = v.value is not None and k in v.conds.get(index.name, frozenset([k]))
                    v = v.value if readable else sp.b.full(0, a.shape, a.dtype)
                outs_k.append(leaf_value(sp, v, a))
            sp.b.region_return(outs_k)
    if dyn:
        outs = sp.b.if_(index, regions, avals)
        # a condition computed inside a branch and returned is known outside by its output's name
        renamed: dict[str, str] = {}
        for j, v in zip(dyn, outs):
            for leaves, _ in flat:
                inner = leaves[j].value if isinstance(leaves[j], Undefined) else leaves[j]
                if isinstance(inner, HloValue):
                    renamed[inner.name] = v.name
        for j, v in zip(dyn, outs):
            if j in partial:
                u, where = partial[j]
                result[j] = Undefined(u.name, u.why, value=v, conds={renamed.get(c, c): ks for c, ks in where.items()})
            else:
                result[j] = v
    return pytree.unflatten(tree, result)

def _spread_unset(outs: Sequence[Any]) -> list[Any]:
    """The branches' outputs with ``UNSET`` or an :class:`Undefined` (a name one branch leaves unbound)
    spread over the structure that another branch gives it: derivative code binds a helper's tuple of
    cotangents, or a shape, on one path only. ``None`` where another branch has it (the cotangent of an
    integer: no derivative) stays ``None`` there."""
    like = next((o for o in outs if pytree.is_tree(o)), None)
    if like is None:
        if any(o is None for o in outs) and all(o is None or _missing(o) for o in outs):
            return [None] * len(outs)
        return list(outs)
    outs = [pytree.tree_map(lambda leaf, o=o: None if leaf is None else o, like) if _missing(o) else o for o in outs]
    keys = _child_keys(like)
    if any(type(o) is not type(like) or _child_keys(o) != keys for o in outs):
        return outs  # different containers: reported by the caller
    columns = [_spread_unset([_child(o, k) for o in outs]) for k in keys]
    rebuilt = []
    for b, o in enumerate(outs):
        kids = [col[b] for col in columns]
        if type(o) is dict:
            rebuilt.append(dict(zip(keys, kids)))
        elif pytree.is_record(o):
            rebuilt.append(type(o)(**dict(zip(keys, kids))))
        else:
            rebuilt.append(pytree.tree_like(o, kids))
    return rebuilt


def _missing(v: Any) -> bool:
    return v is UNSET or (isinstance(v, Undefined) and v.value is None)


def _child_keys(x: Any) -> list[Any]:
    if type(x) is dict:
        return list(x)
    if pytree.is_record(x):
        return list(pytree.record_fields(x))
    return list(range(len(x)))


def _child(x: Any, key: Any) -> Any:
    return getattr(x, key) if pytree.is_record(x) else x[key]


def lax_cond(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if len(args) < 3 or kwargs:
        raise TranspileError("srcjax.lax.cond(pred, true_fun, false_fun, *operands) takes its arguments "
                             "by position")
    pred, tf, ff, *ops = args
    if not is_data(sp, pred):
        return sp.call_value(tf if sp.truth(pred, "cond's predicate") else ff, list(ops), {})
    p = scalar_pred(sp, pred, "the predicate of cond")
    return branches(sp, p, [lambda: sp.call_value(tf, list(ops), {}),
                             lambda: sp.call_value(ff, list(ops), {})])

def lax_switch(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if len(args) < 2 or kwargs:
        raise TranspileError("srcjax.lax.switch(index, branches, *operands) takes its arguments by position")
    index, fns, *ops = args
    fns = list(sp.need_static(fns, "the branches of switch") if not isinstance(fns, list | tuple) else fns)
    if not fns:
        raise TranspileError("switch needs at least one branch")
    if not is_data(sp, index):
        k = min(max(int(index), 0), len(fns) - 1)
        return sp.call_value(fns[k], list(ops), {})
    if index.ndim != 0 or index.dtype.kind not in "iub":
        raise DTypeError(f"the index of switch must be an integer scalar, got {index.aval.str_short()}")
    assert sp.b is not None
    i = sp.b.convert(index, np.dtype(np.int64)) if index.dtype != np.int64 else index
    i64 = np.dtype(np.int64)
    lo, hi = sp.b.full(0, (), i64), sp.b.full(len(fns) - 1, (), i64)
    i = sp.b.convert(sp.b.clamp(lo, i, hi), np.dtype(np.int32))  # clamp first: no wrap-around

    def call(f: Any) -> Callable[[], Any]:
        return lambda: sp.call_value(f, list(ops), {})

    return branches(sp, i, [call(f) for f in fns])


def data_if(sp: Specializer, s: cst.If, test: HloValue, env: dict[str, Any]) -> None:
    """A Python ``if`` on array data: both branches in regions, the assigned names joined."""
    p = scalar_pred(sp, test, "an `if` condition on array data")
    bodies: list[Sequence[Any]] = [s.body.body]
    if type(s.orelse) is cst.Else:
        bodies.append(s.orelse.body.body)
    elif type(s.orelse) is cst.If:
        bodies.append([s.orelse])
    else:
        bodies.append([])
    assigned = sorted(set().union(*(assigned_names(b) for b in bodies)))
    line = sp.nf.spans.get(id(s))
    why = f"the `if` on array data{f' at line {line.line}' if line else ''}"

    first: list[Any] = []

    def run(k: int, body: Sequence[Any]) -> Callable[[], Any]:
        def go() -> Any:
            local = dict(env)
            exec_without_exits(sp, body, local, "an `if` on array data", s.test)
            out = tuple(local.get(n, Undefined(n, why)) for n in assigned)
            first[:] = first or [out]
            return out
        return go

    def labels(n: int) -> list[str]:  # one per leaf: a name bound to a tuple has several
        out = [f"`{x}`" for x, v in zip(assigned, first[0]) for _ in range(pytree.flatten(v)[1].num_leaves)]
        return out if len(out) == n else [f"`{x}`" for x in assigned] + ["a value"] * (n - len(assigned))

    outs = branches(sp, p, [run(k, b) for k, b in enumerate(bodies)], names=labels)
    for name, v in zip(assigned, outs):
        env[name] = v
