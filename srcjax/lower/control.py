"""Control flow on array data: ``srcjax.lax`` calls and ``if``/``while`` on data -> StableHLO regions.

The specializer calls in here when a decision depends on a run-time value:

- ``srcjax.lax.cond`` / ``switch`` with a dynamic predicate, and a Python
  ``if`` whose test is an array value, become ``stablehlo.if`` / ``case``:
  every branch is interpreted into its own region, and the branches' outputs
  are joined (same structure and shapes; a Python scalar takes the dtype of
  the other branch's array);
- ``srcjax.lax.while_loop`` / ``fori_loop`` / ``scan``, and a Python ``while``
  whose test is an array value, become one ``stablehlo.while``. The body is
  interpreted once with the loop-carried values as block arguments, so
  transpile time does not depend on the trip count.

A Python int that a loop carries, and a ``fori_loop`` counter, are marked
with a *loop origin*: if the body needs them as static values (indexing a
Python list, a ``range`` bound, a shape), a loop with static bounds is
unrolled instead, exactly as Python would run it.

Python ``for`` loops over static ranges are rolled the same way
(:func:`roll_for`); lists they append to (a derivative's tape) hold one
stacked :class:`Segment` per loop, which a reversed loop pops row by row
(a loop inside a rolled loop: one segment per outer row, stacked).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from .. import pytree
from ..adjoint import TAPE_NAME, UNSET
from ..core import (
    PYTHON_SCALAR_DTYPES,
    DTypeError,
    NeedStatic,
    ShapedArray,
    ShapeError,
    StaticValueError,
    TranspileError,
    UnsupportedSyntaxError,
    canonical_dtype,
)
from ..frontend.names import assigned_names
from ..frontend.normalize import NormalizedFunction
from ..primitives import registry
from .hlo import HloValue

if TYPE_CHECKING:
    from .specialize import Specializer

LOOP_ORIGIN = "\0loop"  # prefix of the origin names that mark loop-carried Python ints
TINY_TRIP = 2  # static loops this short are unrolled
_ids = itertools.count()


def is_loop_origin(name: str) -> bool:
    return name.startswith(LOOP_ORIGIN)


@dataclass
class LocalFunction:
    """A ``def`` inside a function (generated branch and loop bodies): a closure over ``env``."""

    fdef: cst.FunctionDef
    env: dict[str, Any]
    parent: NormalizedFunction

    @property
    def name(self) -> str:
        return self.fdef.name.value


class Undefined:
    """A name assigned on only some paths of control flow on data; reading it is an error.

    When those paths are branches of ``if``s on data, ``value`` holds the name's
    value where it is assigned (zeros elsewhere) and ``conds`` maps each
    condition (an SSA name) to the branches that assign it: all must hold. A
    later ``if`` on the very same conditions may read it on those branches
    (generated derivative code re-tests the forward pass's conditions).
    """

    def __init__(self, name: str, why: str, value: Any = None,
                 conds: dict[str, frozenset[int]] | None = None) -> None:
        self.name = name
        self.why = why
        self.value = value
        self.conds = conds or {}

    def readable(self, on_branch: Sequence[tuple[str, int]]) -> bool:
        return self.value is not None and all(any(p == pred and k in ks for p, k in on_branch)
                                              for pred, ks in self.conds.items())


class _Unroll(Exception):
    """Internal: a loop body needs its counter (or a carried int) static; unroll the loop."""


def _aval_of_static(v: Any) -> ShapedArray | None:
    if isinstance(v, bool | int | float) and not isinstance(v, np.generic):
        kind = bool if isinstance(v, bool) else int if isinstance(v, int) else float
        return ShapedArray((), PYTHON_SCALAR_DTYPES[kind], weak_type=True)
    if isinstance(v, np.ndarray | np.generic) and np.asarray(v).dtype.kind in "biuf":
        a = np.asarray(v)
        return ShapedArray(a.shape, canonical_dtype(a.dtype))
    return None


def _same_static(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False


def join_avals(avals: Sequence[ShapedArray], what: str) -> ShapedArray:
    """The one abstract value that every outcome converts to without changing a value's meaning."""
    first = avals[0]
    for a in avals[1:]:
        if a.shape != first.shape:
            raise ShapeError(f"{what} has shape {first.str_short()} on one path and {a.str_short()} on another",
                             hint="give it the same shape on every path (e.g. start from np.zeros_like(...))")
    strong = [a for a in avals if not a.weak_type]
    if not strong:
        dt = np.result_type(*[a.dtype for a in avals])
        return ShapedArray(first.shape, canonical_dtype(dt), weak_type=True)
    dts = {a.dtype for a in strong}
    if len(dts) > 1:
        names = " and ".join(sorted(str(d) for d in dts))
        raise DTypeError(f"{what} is {names} on different paths",
                         hint="convert it to one dtype with .astype(...) on every path")
    dt = strong[0].dtype
    order = "bif"  # a Python bool/int/float takes the array's dtype only if that does not lose its kind
    for a in avals:
        if a.weak_type and order.index(a.dtype.kind if a.dtype.kind in order else "f") > \
                order.index(dt.kind if dt.kind in order else "f"):
            raise DTypeError(f"{what} is a Python {dict(b='bool', i='int', f='float')[a.dtype.kind]} on one "
                             f"path and {dt} on another",
                             hint=f"write the Python number as an array of dtype {dt} (e.g. np.{dt}(...))")
    return ShapedArray(first.shape, dt)


def _containers(envs: Sequence[dict[str, Any]]) -> dict[int, tuple[str, Any, Any]]:
    """Every Python list/dict reachable from the live scopes: id -> (name, object, shallow copy)."""
    out: dict[int, tuple[str, Any, Any]] = {}

    def visit(name: str, v: Any, depth: int) -> None:
        if depth > 4 or id(v) in out:
            return
        if isinstance(v, list | dict):
            out[id(v)] = (name, v, list(v) if isinstance(v, list) else dict(v))
            for x in (v if isinstance(v, list) else v.values()):
                visit(name, x, depth + 1)
        elif isinstance(v, tuple):
            for x in v:
                visit(name, x, depth + 1)

    for env in envs:
        for k, v in env.items():
            visit(k, v, 0)
    return out


def _check_containers(snap: dict[int, tuple[str, Any, Any]], where: str) -> None:
    for name, obj, copy in snap.values():
        same = len(obj) == len(copy) and (
            all(a is b for a, b in zip(obj, copy)) if isinstance(obj, list)
            else obj.keys() == copy.keys() and all(obj[k] is copy[k] for k in copy))
        if not same:
            if isinstance(obj, list):
                obj[:] = copy
            else:
                obj.clear()
                obj.update(copy)
            raise UnsupportedSyntaxError(
                f"the Python {type(obj).__name__} `{name}` is changed inside {where}; srcjax transpiles every "
                "branch and the loop body once, so the change cannot depend on the data",
                hint="collect results in arrays (x[i] = v, or srcjax.lax.scan) or decide the condition on "
                     "static values")


# -- the rules (functions of the Specializer, called by it) ----------------------------------

# -- helpers -------------------------------------------------------------------
def is_data(sp: Specializer, v: Any) -> bool:
    """A dynamic value that decides control flow at run time (not a Python int/bool argument)."""
    if not isinstance(v, HloValue):
        return False
    arg_origins = {o for o in v.aval.origin if not is_loop_origin(o)}
    if arg_origins:
        raise NeedStatic(frozenset(arg_origins))
    return True

def call_local(sp: Specializer, fn: LocalFunction, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    names = [p.name.value for p in fn.fdef.params.params]
    if len(args) != len(names) or kwargs:
        raise TranspileError(f"{fn.name}() takes {len(names)} arguments, got {len(args)}")
    env = dict(fn.env)
    env.update(zip(names, args))
    return sp.run_body(fn.parent, fn.fdef.body.body, env)

def scalar_pred(sp: Specializer, p: HloValue, what: str) -> HloValue:
    if p.ndim != 0:
        raise ShapeError(f"{what} must be a scalar, but it is an array {p.aval.str_short()}",
                         hint="reduce it to one truth value with np.any(...) or np.all(...)")
    if p.dtype != np.bool_:
        zero = sp.lift(0)
        p = sp.apply(registry.PRIMITIVES["not_equal"], [p, zero], {})
    return p

def leaf_value(sp: Specializer, v: Any, aval: ShapedArray) -> HloValue:
    """``v`` (static or dynamic) as an SSA value of abstract value ``aval``, emitted here."""
    assert sp.b is not None
    h = sp.lift(v) if not isinstance(v, HloValue) else v
    if h.dtype != aval.dtype:
        h = sp.b.convert(h, aval.dtype)
    return HloValue(h.name, aval)

def out_names(sp: Specializer, n: int) -> list[str]:
    t = sp.assign_targets
    if t is not None and len(t) == n:
        return [f"`{x}`" for x in t]
    return [f"output {i + 1}" if n > 1 else "the result" for i in range(n)]

# -- branches --------------------------------------------------------------------
def branches(sp: Specializer, index: HloValue, fns: Sequence[Callable[[], Any]],
             names: Callable[[int], list[str]] | None = None) -> Any:
    """Run each of ``fns`` in its own region; ``stablehlo.if``/``case`` on ``index``; the joined outputs."""
    assert sp.b is not None
    regions: list[list[str]] = []
    outs: list[Any] = []
    saved = dict(sp.consts)
    snap = _containers(sp.envs)
    for k, fn in enumerate(fns):
        with sp.b.region() as lines:
            sp.on_branch.append((index.name, k))  # names defined on branch k of an earlier `if` on index
            try:
                outs.append(fn())
            finally:
                sp.consts = dict(saved)
                sp.on_branch.pop()
        _check_containers(snap, "a branch on array data")
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
                    all(_same_static(vals[0], v) for v in vals):
                result[j] = vals[0]  # read only where it was set (derivative code): it stays a Python value
                continue
            if not vals or not all(isinstance(v, HloValue) or _aval_of_static(v) is not None for v in vals):
                result[j] = UNSET if not vals else Undefined(labels[j], "an `if` on array data")
                continue
            # zeros on the branches that leave it UNSET
            dyn.append(j)
            avals.append(join_avals([v.aval if isinstance(v, HloValue) else _aval_of_static(v)  # type: ignore
                                     for v in vals], labels[j]))
            continue
        if not any(isinstance(v, HloValue) for v in vals) and all(_same_static(vals[0], v) for v in vals):
            result[j] = vals[0]
            continue
        undefined = next((v for v in vals if isinstance(v, Undefined)), None)
        if undefined is not None:  # assigned on some paths only: an error if it is read later
            avail = {k: v for k, v in enumerate(vals) if not isinstance(v, Undefined) or v.value is not None}
            conds = [v.conds if isinstance(v, Undefined) else {} for v in avail.values()]
            avs = [(v.value if isinstance(v, Undefined) else v) for v in avail.values()]
            known = [a for a in (x.aval if isinstance(x, HloValue) else _aval_of_static(x) for x in avs)
                     if a is not None]
            if not avail or any(c != conds[0] for c in conds):
                result[j] = undefined
                continue
            if not any(isinstance(v, HloValue) for v in avs) and all(_same_static(avs[0], v) for v in avs):
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
        vavals: list[ShapedArray] = []
        for v in vals:
            a = v.aval if isinstance(v, HloValue) else _aval_of_static(v)
            if a is None:
                raise StaticValueError(f"{labels[j]} is {v!r} on one branch and something else on another; "
                                       "a value decided by array data must be an array or a number")
            vavals.append(a)
        dyn.append(j)
        avals.append(join_avals(vavals, labels[j]))
    for k, lines in enumerate(regions):
        with sp.b.region(lines):
            try:
                outs_k = []
                for j, a in zip(dyn, avals):
                    v = flat[k][0][j]
                    if v is UNSET:
                        v = sp.b.full(0, a.shape, a.dtype)
                    if isinstance(v, Undefined):
                        v = v.value if v.value is not None else sp.b.full(0, a.shape, a.dtype)
                    outs_k.append(leaf_value(sp, v, a))
                sp.b.region_return(outs_k)
            finally:
                sp.consts = dict(saved)
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
    cotangents, or a shape, on one path only."""
    like = next((o for o in outs if pytree.is_tree(o)), None)
    if like is None:
        return list(outs)
    outs = [pytree.tree_map(lambda _, o=o: o, like) if _missing(o) else o for o in outs]
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

_EXIT_HINTS = {
    "return": "assign the result to a variable and return it once, after the `if`/loop",
    "break": "use a flag: stop = stop | cond, and test `not stop` in the loop condition",
    "continue": "put the rest of the loop body under `if not cond:` instead",
}


def exec_without_exits(sp: Specializer, body: Sequence[Any], env: dict[str, Any], where: str) -> None:
    """Run ``body`` as one region: a ``return``/``break``/``continue`` out of it is refused clearly."""
    from .specialize import _Break, _Continue, _Return

    try:
        sp.exec_block(body, env)
    except (_Return, _Break, _Continue) as e:
        word = {_Return: "return", _Break: "break", _Continue: "continue"}[type(e)]
        raise UnsupportedSyntaxError(f"`{word}` inside {where} that srcjax could not rewrite",
                                     hint=_EXIT_HINTS[word]) from None


def data_if(sp: Specializer, s: cst.If, test: HloValue, env: dict[str, Any]) -> None:
    """A Python ``if`` on array data: both branches in regions, the assigned names joined."""
    p = scalar_pred(sp, test, "an `if` condition on array data")
    bodies: list[Sequence[Any]] = [s.body.body]
    if isinstance(s.orelse, cst.Else):
        bodies.append(s.orelse.body.body)
    elif isinstance(s.orelse, cst.If):
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
            exec_without_exits(sp, body, local, "an `if` on array data")
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

# -- loops --------------------------------------------------------------------------
def rolled_loop(sp: Specializer, cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], carry: Any,
                labels: Callable[[int], list[str]], out_origin: str | None = None) -> Any:
    """One ``stablehlo.while`` over the pytree ``carry``.

    Numbers and arrays in ``carry`` are carried (a Python scalar that the body
    turns into an array of another dtype is carried in that dtype); other
    static leaves (None, strings, functions) must come back unchanged.
    Raises :class:`_Unroll` when the body needs a carried Python int static.
    """
    assert sp.b is not None
    leaves, tree = pytree.flatten(carry)
    n = len(leaves)
    names = labels(n)
    carried = [j for j, v in enumerate(leaves) if isinstance(v, HloValue) or _aval_of_static(v) is not None]
    avals: dict[int, ShapedArray] = {}
    marker = f"{LOOP_ORIGIN}{next(_ids)}"
    for j in carried:
        v = leaves[j]
        a = v.aval if isinstance(v, HloValue) else _aval_of_static(v)
        assert a is not None
        if not isinstance(v, HloValue) and a.dtype.kind in "bi" and a.ndim == 0:
            a = a.update(origin=frozenset({marker}))  # a Python int the body might need static
        elif a.origin:
            a = a.update(origin=frozenset(o for o in a.origin if is_loop_origin(o)))
        avals[j] = a
    saved = dict(sp.consts)
    snap = _containers(sp.envs)
    for _attempt in range(4):
        cond_args = sp.b.block_args([avals[j] for j in carried])
        body_args = sp.b.block_args([avals[j] for j in carried])

        def rebuild(args: list[HloValue]) -> Any:
            vals = list(leaves)
            for j, a in zip(carried, args):
                vals[j] = a
            return pytree.unflatten(tree, vals)

        try:
            with sp.b.region() as cond_lines:
                try:
                    c = cond_fn(rebuild(cond_args))
                    _check_containers(snap, "a loop condition on array data")
                    if not isinstance(c, HloValue):
                        c = sp.lift(bool(sp.truth(c, "the loop condition")))
                    c = scalar_pred(sp, c, "the loop condition")
                    sp.b.region_return([c])
                finally:
                    sp.consts = dict(saved)
            with sp.b.region() as body_lines:
                try:
                    out = body_fn(rebuild(body_args))
                    _check_containers(snap, "a loop on array data")
                    out_leaves, out_tree = pytree.flatten(out)
                    if out_tree != tree:
                        raise TranspileError(f"the loop body returns {out_tree}, but the loop carries {tree}",
                                             hint="return the same structure the loop starts with")
                    changed = False
                    for j, v in enumerate(out_leaves):
                        if j not in avals:
                            if not _same_static(v, leaves[j]):
                                raise StaticValueError(
                                    f"{names[j]} changes in a loop on array data from {leaves[j]!r} to {v!r}")
                            continue
                        a = v.aval if isinstance(v, HloValue) else _aval_of_static(v)
                        if a is None:
                            raise StaticValueError(f"{names[j]} becomes {v!r} in the loop body")
                        old = avals[j]
                        if (a.shape, a.dtype) != (old.shape, old.dtype) or (old.weak_type and not a.weak_type):
                            if a.shape != old.shape:
                                raise ShapeError(
                                    f"{names[j]} changes shape in the loop, from {old.str_short()} to "
                                    f"{a.str_short()}",
                                    hint="start the loop with the final shape (e.g. np.zeros(...) or "
                                         "np.broadcast_to(...))")
                            j_aval = join_avals([old, a], names[j])
                            avals[j] = j_aval.update(origin=old.origin)
                            changed = True
                    if changed:
                        continue
                    sp.b.region_return([leaf_value(sp, out_leaves[j], avals[j]) for j in carried])
                finally:
                    sp.consts = dict(saved)
        except NeedStatic as ns:
            if marker in ns.names:
                raise _Unroll() from None
            raise
        inits = [leaf_value(sp, leaves[j], avals[j]) for j in carried]
        res = sp.b.while_((inits), (cond_args, cond_lines), (body_args, body_lines))
        vals = list(leaves)
        for j, r in zip(carried, res):
            # a Python int the loop changed: if code after the loop needs it static, `out_origin` (the
            # loop's key) says which loop to unroll on the next try (see specialize())
            keep = out_origin is not None and marker in avals[j].origin
            vals[j] = HloValue(r.name, r.aval.update(origin=frozenset({out_origin}) if keep else frozenset()))
        return pytree.unflatten(tree, vals)
    raise DTypeError(f"the types of {', '.join(names)} do not settle in the loop")

def data_while(sp: Specializer, s: cst.While, env: dict[str, Any]) -> None:
    """A Python ``while`` whose test is array data: one ``stablehlo.while`` carrying the names it assigns."""
    assigned = sorted(assigned_names(s.body.body))
    carried = [n for n in assigned if n in env and not isinstance(env[n], Undefined)]
    line = sp.nf.spans.get(id(s))
    why = f"the `while` loop on array data{f' at line {line.line}' if line else ''}"

    def scope(carry: tuple[Any, ...]) -> dict[str, Any]:
        local = dict(env)
        local.update(zip(carried, carry))
        return local

    def body(carry: tuple[Any, ...]) -> tuple[Any, ...]:
        local = scope(carry)
        exec_without_exits(sp, s.body.body, local, "a `while` loop on array data")
        return tuple(local[n] for n in carried)

    out = while_common(sp, lambda c: sp.eval(s.test, scope(c)), body, tuple(env[n] for n in carried),
                            lambda n: [f"`{x}`" for x in carried])
    for name, v in zip(carried, out):
        env[name] = v
    for name in assigned:
        if name not in carried:
            env[name] = Undefined(name, why)

def lax_while_loop(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    cond_fun, body_fun, init = _bind(args, kwargs, ("cond_fun", "body_fun", "init_val"), "while_loop")
    return while_common(sp, lambda c: sp.call_value(cond_fun, [c], {}),
                             lambda c: sp.call_value(body_fun, [c], {}), init, lambda n: out_names(sp, n))

def while_common(sp: Specializer, cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], carry: Any,
                 labels: Callable[[int], list[str]]) -> Any:
    from .specialize import MAX_UNROLL, _contains_dynamic

    steps = 0
    while not _contains_dynamic(carry):  # a loop on Python values runs here, as Python runs it
        c = cond_fn(carry)
        if isinstance(c, HloValue):
            break
        if not sp.truth(c, "the loop condition"):
            return carry
        carry = body_fn(carry)
        steps += 1
        if steps > MAX_UNROLL:
            raise UnsupportedSyntaxError(f"a while loop on static values ran more than {MAX_UNROLL} times")
    try:
        return rolled_loop(sp, cond_fn, body_fn, carry, labels)
    except _Unroll:
        raise StaticValueError("a value carried by a loop on array data is used where srcjax needs it at "
                               "transpile time (a Python list index, a range bound or a shape)",
                               hint="index arrays (not lists) with it, or make the loop's trip count static"
                               ) from None

def lax_fori_loop(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    lo, hi, body_fun, init = _bind(args, kwargs, ("lower", "upper", "body_fun", "init_val"), "fori_loop")
    return fori(sp, lo, hi, lambda i, c: sp.call_value(body_fun, [i, c], {}), init, lambda n: out_names(sp, n))

def fori(sp: Specializer, lo: Any, hi: Any, body: Callable[[Any, Any], Any], carry: Any,
         labels: Callable[[int], list[str]]) -> Any:
    from .specialize import MAX_UNROLL

    static = not isinstance(lo, HloValue) and not isinstance(hi, HloValue)
    if static:
        lo, hi = int(lo), int(hi)
        if hi - lo <= TINY_TRIP:
            for i in range(lo, hi):
                carry = body(i, carry)
            return carry
    if isinstance(lo, HloValue):  # the counter is a Python int, as range() gives the reference
        if lo.ndim != 0 or lo.dtype.kind not in "iu":
            raise DTypeError(f"fori_loop's lower bound must be an integer scalar, got {lo.aval.str_short()}")
        lo = leaf_value(sp, lo, ShapedArray((), np.dtype(np.int64), weak_type=True))
    for _peel in range(2):
        try:
            state = (lo, carry)

            def cond_fn(st: Any, hi_v: Any = hi) -> Any:
                return sp.binop("LessThan", st[0], hi_v)

            def body_fn(st: Any) -> Any:
                i, c = st
                return (sp.binop("Add", i, 1), body(i, c))

            return rolled_loop(sp, cond_fn, body_fn, state, lambda n: ["the loop counter"] + labels(n - 1))[1]
        except _Unroll:
            if not static:
                raise StaticValueError("the loop counter of a loop with bounds known only at run time is "
                                       "used where srcjax needs a static value (a Python list index, a "
                                       "range bound or a shape)") from None
            if hi - lo > MAX_UNROLL:
                raise UnsupportedSyntaxError(f"loop has more than {MAX_UNROLL} iterations to unroll") from None
            for i in range(lo, hi):
                carry = body(i, carry)
            return carry
        except (ShapeError, DTypeError):
            # the first iteration may turn Python numbers into arrays: run it, then loop
            if not static or _peel or hi - lo < 1:
                raise
            carry = body(lo, carry)
            lo += 1
    raise AssertionError("unreachable")

def lax_scan(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    f, init, xs, length, reverse = _bind(args, kwargs, ("f", "init", "xs", "length", "reverse"), "scan",
                                         defaults={"xs": None, "length": None, "reverse": False})
    xleaves, xtree = pytree.flatten(xs)
    xleaves = [sp.lift(x) if not isinstance(x, HloValue) else x for x in xleaves]
    n = length
    for x in xleaves:
        if x.ndim == 0:
            raise ShapeError("scan: every array in xs needs a leading dimension")
        if n is None:
            n = x.shape[0]
        elif x.shape[0] != n:
            raise ShapeError(f"scan: xs has leading dimensions {n} and {x.shape[0]}")
    if n is None:
        raise TranspileError("scan: give xs or length")
    n = int(sp.need_static(n, "scan's length"))
    reverse = bool(sp.need_static(reverse, "scan's reverse flag"))

    def x_at(i: Any) -> Any:
        return pytree.unflatten(xtree, [sp.getitem(x, (i,)) for x in xleaves]) if xleaves else None

    # the shape of one y: run the body once on the initial carry (emits dead code, removed by XLA)
    if n == 0:
        raise ShapeError("scan over zero elements is not supported")
    # the type of one y: run the body on the initial carry and once more on the carry it gives
    # (a Python number carried may become an array); emits dead code that XLA removes
    probe_i = n - 1 if reverse else 0
    c1, y0 = sp.call_value(f, [init, x_at(probe_i)], {})
    _, y1 = sp.call_value(f, [c1, x_at(probe_i)], {})
    yleaves0, ytree = pytree.flatten(y0)
    ys0 = []
    for y, y_next in zip(yleaves0, pytree.flatten(y1)[0]):
        avs = [v.aval if isinstance(v, HloValue) else _aval_of_static(v) for v in (y, y_next)]
        if avs[0] is None or avs[1] is None:
            raise StaticValueError(f"scan: f returns {y!r} as a y; ys must be arrays or numbers")
        a = join_avals(avs, "a y of scan")  # type: ignore[arg-type]
        ys0.append(sp.apply(registry.PRIMITIVES["zeros"], [(n,) + a.shape], {"dtype": a.dtype}))
    ysinit = pytree.unflatten(ytree, ys0)

    def body(k: Any, c: Any) -> Any:
        carry, ys = c
        i = sp.binop("Subtract", n - 1, k) if reverse else k
        carry, y = sp.call_value(f, [carry, x_at(i)], {})
        yl, yt = pytree.flatten(y)
        if yt != ytree:
            raise TranspileError(f"scan: f returns ys of structure {yt} and {ytree} on different steps")
        yss = pytree.flatten(ys)[0]
        new = [sp.apply(registry.PRIMITIVES["index_update"], [buf, (i,), v], {}) for buf, v in zip(yss, yl)]
        return carry, pytree.unflatten(ytree, new)

    carry, ys = fori(sp, 0, n, body, (init, ysinit), lambda n: out_names(sp, n))
    return carry, ys


def _bind(args: list[Any], kwargs: dict[str, Any], names: tuple[str, ...], fn: str,
          defaults: dict[str, Any] | None = None) -> list[Any]:
    vals = dict(zip(names, args))
    if len(args) > len(names):
        raise TranspileError(f"srcjax.lax.{fn}() takes at most {len(names)} arguments")
    for k, v in kwargs.items():
        if k not in names or k in vals:
            raise TranspileError(f"srcjax.lax.{fn}() got an unexpected or repeated argument {k!r}")
        vals[k] = v
    for k, v in (defaults or {}).items():
        vals.setdefault(k, v)
    missing = [k for k in names if k not in vals]
    if missing:
        raise TranspileError(f"srcjax.lax.{fn}() is missing {', '.join(missing)}")
    return [vals[k] for k in names]


def lax_rules() -> dict[Any, Callable[[Specializer, list[Any], dict[str, Any]], Any]]:
    from .. import lax

    return {
        lax.cond: lax_cond, lax.switch: lax_switch, lax.while_loop: lax_while_loop,
        lax.fori_loop: lax_fori_loop, lax.scan: lax_scan,
    }


def _contains_dynamic_leaf(v: Any) -> bool:
    return any(isinstance(x, HloValue) for x in pytree.flatten(v)[0])


# -- Python `for` loops over static ranges, rolled ----------------------------------------------

class Segment:
    """What a rolled loop appended to a Python list: row ``r`` holds iteration ``r``'s appends.

    Generated derivative code keeps a tape (``_tape.append(...)`` in the forward
    loop, ``_tape.pop()`` in the reversed adjoint loop). A rolled forward loop
    leaves one ``Segment`` on the list; ``pop`` on it returns the items of the
    last unconsumed row, in reverse order of appending, with a static row when
    the popping loop is unrolled and the popping loop's counter when it is
    rolled too.

    An inner loop rolled inside a rolled loop leaves its own segment in each
    iteration's appends; the outer segment stacks it (its buffers gain the outer
    loop's leading axis), and a pop that reaches it puts that row's inner segment
    on the list, where the inner adjoint loop pops it as if the outer loop had
    been unrolled.
    """

    def __init__(self, trees: list[pytree.TreeDef], bufs: list[list[Any]], n: int, depth: int = 0) -> None:
        self.trees = trees  # per item position within a row
        # per item position, per leaf: an (n, ...) buffer, a _Same (a static value: the same every row), or a
        # Segment of an inner loop's saved values whose buffers are stacked along a leading axis of n rows
        self.bufs = bufs
        self.n = n
        self.rows_left = n  # rows not yet popped (static pops)
        self.pos = len(trees)  # the next item popped in the current row is pos - 1
        # the rolled loops around the place where the segment is put on its list: a loop rolled there that
        # pops its rows is sp.row_contexts[depth]
        self.depth = depth

    def __repr__(self) -> str:
        return f"<{self.n} loop iterations of saved values>"

    def map_bufs(self, f: Callable[[Any], Any]) -> Segment:
        """The same segment with ``f`` applied to each buffer and inner segment (static values kept)."""
        seg = Segment(self.trees, [[b if isinstance(b, _Same) else f(b) for b in bs] for bs in self.bufs], self.n,
                      self.depth)
        seg.rows_left, seg.pos = self.rows_left, self.pos
        return seg

    # a pytree node (see srcjax.pytree): a split VJP's forward program returns it as its stacked
    # arrays, and its backward program takes it back as an argument
    __srcjax_node__ = True

    def tree_flatten(self) -> tuple[tuple[tuple[Any, ...], ...], tuple[Any, ...]]:
        # a static value the same on every row is a static leaf (the backward half gets it as a Python value)
        children = tuple(tuple(b.value if isinstance(b, _Same) else b for b in bs) for bs in self.bufs)
        same = tuple(tuple(isinstance(b, _Same) for b in bs) for bs in self.bufs)
        return children, (tuple(self.trees), self.n, self.rows_left, self.pos, same)

    @classmethod
    def tree_unflatten(cls, aux: tuple[Any, ...], children: list[Any]) -> Segment:
        trees, n, rows_left, pos, same = aux
        bufs = [[_Same(c) if s else c for c, s in zip(cs, ss)] for cs, ss in zip(children, same)]
        seg = cls(list(trees), bufs, n)
        seg.rows_left, seg.pos = rows_left, pos
        return seg


@dataclass
class _Same:
    """A static leaf a rolled loop appends: one traced iteration stands for all, so it is the same
    value on every row, and stays a Python value (a test on it stays static)."""

    value: Any


@dataclass
class _RowContext:
    counter: HloValue  # the rolled loop's iteration number (0, 1, ...)
    n: int  # its trip count
    popped: dict[int, int]  # id(segment) -> items popped in this iteration's trace


def _stacked(sp: Specializer, leaf: Any, n: int) -> Any:
    """Zero buffers for ``n`` rows of a leaf that a loop appends: an ``(n, ...)`` array for an array,
    the value itself for a static leaf, and an inner loop's segment with each buffer stacked."""
    assert sp.b is not None
    if isinstance(leaf, HloValue):
        return sp.b.full(0, (n,) + leaf.aval.shape, leaf.aval.dtype)
    if isinstance(leaf, Segment):
        return leaf.map_bufs(lambda b: _stacked(sp, b, n))
    return _Same(leaf)


def _buffers(entry: Any) -> list[HloValue]:
    """The buffers in an entry of :func:`_stacked`, in a fixed order."""
    if isinstance(entry, HloValue):
        return [entry]
    if isinstance(entry, Segment):
        return [x for bs in entry.bufs for b in bs if not isinstance(b, _Same) for x in _buffers(b)]
    return []


def _refilled(entry: Any, it: Any) -> Any:
    """``entry`` with its buffers taken in order from the iterator ``it``."""
    if isinstance(entry, HloValue):
        return next(it)
    if isinstance(entry, Segment):
        return entry.map_bufs(lambda b: _refilled(b, it))
    return entry


def _row_values(entry: Any, leaf: Any) -> list[HloValue]:
    """The arrays of one iteration's ``leaf``, one per buffer of ``entry``; _Unroll when the iteration
    appends something else than the traced one did."""
    if isinstance(entry, _Same):
        if isinstance(leaf, HloValue | Segment) or not _same_static(leaf, entry.value):
            raise _Unroll()
        return []
    if isinstance(entry, HloValue):
        if not isinstance(leaf, HloValue):
            raise _Unroll()
        return [leaf]
    if not isinstance(leaf, Segment) or leaf.trees != entry.trees or \
            (leaf.n, leaf.rows_left, leaf.pos) != (entry.n, entry.rows_left, entry.pos):
        raise _Unroll()
    out: list[HloValue] = []
    for es, ls in zip(entry.bufs, leaf.bufs):
        for e, x in zip(es, ls):
            if isinstance(e, _Same):
                if not isinstance(x, _Same) or not _same_static(x.value, e.value):
                    raise _Unroll()
            else:
                out += _row_values(e, x)
    return out


def _is_segment_item(tree: pytree.TreeDef, entries: list[Any]) -> bool:
    return tree == pytree.LEAF and isinstance(entries[0], Segment)


def _row(sp: Specializer, buf: Any, row: Any) -> Any:
    if isinstance(buf, Segment):
        return buf.map_bufs(lambda b: _row(sp, b, row))
    return sp.getitem(buf, (row,))


def segment_pop(sp: Specializer, lst: list[Any], static: bool = False) -> Any:
    """``lst.pop()`` where the list ends in a :class:`Segment`."""
    seg = lst[-1]
    assert isinstance(seg, Segment)
    ctx = sp.row_contexts[seg.depth] if len(sp.row_contexts) > seg.depth and not static else None
    k = len(seg.trees)
    rolled = ctx is not None and seg.rows_left == seg.n and seg.pos == k  # a rolled loop consumes the segment

    def take() -> int:  # the position of the next item of the row, marked popped
        if rolled:
            assert ctx is not None
            done = ctx.popped.get(id(seg), 0)
            if seg.n != ctx.n or done >= k:
                raise _Unroll()
            ctx.popped[id(seg)] = done + 1
            return k - 1 - done
        if seg.pos == 0:
            seg.rows_left -= 1
            seg.pos = k
        seg.pos -= 1
        if seg.pos == 0 and seg.rows_left == 1:
            lst.pop()
        return seg.pos

    if rolled:
        row: Any = sp.binop("Subtract", seg.n - 1, ctx.counter)  # type: ignore[union-attr]
        p = take()
    else:  # one static row at a time
        p = take()
        row = seg.rows_left - 1
    leaves = [buf.value if isinstance(buf, _Same) else _row(sp, buf, row) for buf in seg.bufs[p]]
    item = pytree.unflatten(seg.trees[p], leaves)
    if p > 0 and _is_segment_item(seg.trees[p - 1], seg.bufs[p - 1]):
        # the row's next item is an inner loop's saved values: on the list now, as unrolled, for its adjoint loop
        take()
        inner = _row(sp, seg.bufs[p - 1][0], row)
        inner.depth = len(sp.row_contexts)
        lst.append(inner)
    return item


def _read_not_appended(body: Sequence[Any]) -> set[str]:
    """Names the statements read other than as ``name.append(...)`` / ``name.pop()``. Derivative
    code's tapes (``_tape``, ``_tape_1``, ``_tape_bar``) passed to its helpers count as neither: the
    helpers only push and pop them."""
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if isinstance(node.value, cst.Name) and node.attr.value in ("append", "pop"):
                return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            out.add(node.value)

    for st in body:
        st.visit(V())
    return {n for n in out if not TAPE_NAME.match(n)}


def int_range(seq: Any) -> range | None:
    """A list or tuple of Python ints in steps of one size (a derivative's ``list(reversed(range(n)))``)
    as the range it equals, so a loop over it can be rolled too; None for anything else."""
    if not isinstance(seq, (list, tuple)) or len(seq) < 2 or any(type(v) is not int for v in seq):
        return None
    step = seq[1] - seq[0]
    r = range(seq[0], seq[-1] + (1 if step > 0 else -1), step) if step else None
    return r if r is not None and len(r) == len(seq) and all(a == b for a, b in zip(r, seq)) else None


def roll_for(sp: Specializer, s: cst.For, r: range, env: dict[str, Any]) -> bool:
    """A Python ``for`` over a static range as one ``stablehlo.while``; False to unroll it instead.

    Carried: the names the body assigns that exist before the loop. Names first
    assigned in the body are carried too (from zeros; reading one before the body
    assigns it falls back to unrolling), so they hold the last iteration's value
    afterwards, as in Python. A name the body assigns on some paths only (branches
    of an ``if`` on data) is carried as well, where the traced iteration shows it is
    read on those paths only; after the loop it is unreadable, as after such an
    ``if``. Items the body appends to a Python list become one :class:`Segment` of
    stacked rows (an inner loop's segment among them, stacked in turn).

    Falling back to unrolling makes the program N times longer: derivative code
    relies on every loop here staying rolled (``tests/test_bounded_size.py``).
    """
    from .specialize import _Break, _Continue

    assert sp.b is not None and isinstance(s.target, cst.Name)
    target = s.target.value
    n = len(r)
    assigned = [x for x in assigned_names(s.body.body) if x != target]
    # a name that is None or UNSET before the loop (derivative code declares saved values that way), or a
    # function (a `def` in the body, run before: an enclosing loop unrolled) is as good as first assigned in
    # the body: reading it before the body assigns it falls back to unrolling
    carried = [x for x in assigned if x in env and not isinstance(env[x], Undefined | LocalFunction)
               and env[x] is not None and env[x] is not UNSET]
    fresh = [x for x in assigned if x not in carried]
    snap = _containers(sp.envs)
    lists = {i: obj for i, (_, obj, _) in snap.items() if isinstance(obj, list)}
    line = sp.nf.spans.get(id(s))
    why = f"the loop at line {line.line}" if line else "the loop"
    found: dict[str, Any] = {}
    sometimes: dict[str, Any] = {}
    read = _read_not_appended(s.body.body)  # a list the body reads while appending to it: unrolled

    def restore_lists() -> None:
        for i_l, lst in lists.items():
            lst[:] = snap[i_l][2]

    def run(state: Any, out_fresh: bool) -> tuple[dict[str, Any], dict[int, list[Any]]]:
        k, cvals = state[0], state[1]
        local = dict(env)
        local.update(zip(carried, cvals))
        for x in fresh:
            local[x] = Undefined(x, why)
        if out_fresh:  # a name assigned on some paths only holds its last value (zeros at first) elsewhere
            local.update((x, v) for x, v in zip(fresh, state[2]) if x in sometimes)
        i = k if r.start == 0 and r.step == 1 else sp.binop("Add", r.start, sp.binop("Multiply", k, r.step))
        local[target] = i
        ctx = _RowContext(k, n, {})
        sp.row_contexts.append(ctx)
        sp.envs.append(local)
        try:
            sp.exec_block(s.body.body, local)
        except (_Break, _Continue):
            restore_lists()
            raise _Unroll() from None
        except BaseException:
            restore_lists()  # a traced iteration must leave the Python lists as they were
            raise
        finally:
            sp.row_contexts.pop()
            sp.envs.pop()
        for seg_id, count in ctx.popped.items():
            owner = next(lst for lst in lists.values() if lst and id(lst[-1]) == seg_id)
            if count != len(owner[-1].trees):
                raise _Unroll()
            found.setdefault("consumed", {})[seg_id] = owner
        appended: dict[int, list[Any]] = {}
        for i_l, lst in lists.items():
            before = snap[i_l][2]
            if len(lst) < len(before) or any(a is not b for a, b in zip(lst, before)):
                restore_lists()
                raise _Unroll()
            if len(lst) > len(before):
                appended[i_l] = lst[len(before):]
                if snap[i_l][0] in read:  # items[-1], len(items): each iteration sees the earlier appends
                    restore_lists()
                    raise _Unroll()
        restore_lists()
        if out_fresh and any(isinstance(local[x], Undefined) for x in fresh):
            raise _Unroll()  # assigned on some iterations' paths only
        return local, appended

    # a dry run (thrown away) learns what the body first assigns and appends, and their types
    def dry_body(state: Any) -> Any:
        local, appended = run(state, False)
        found["fresh"] = {x: local[x] for x in fresh if not isinstance(local[x], Undefined)}
        # assigned on some paths of the body only (a derivative's branch-local values): read on those
        # paths only, or the traced iteration would have failed; carried, it keeps the loop rolled. One
        # that has no value to carry (unreadable after the body) is not carried.
        found["sometimes"] = {x: local[x].value for x in fresh if isinstance(local[x], Undefined)
                              and isinstance(local[x].value, HloValue)}
        found["unreadable"] = {x for x in fresh if isinstance(local[x], Undefined)} - set(found["sometimes"])
        found["appended"] = appended
        return (sp.binop("Add", state[0], 1), tuple(local[x] for x in carried), state[2])

    def cond(state: Any) -> Any:
        return sp.binop("LessThan", state[0], n)

    labels = lambda m: ["the loop counter"] + [f"`{x}`" for x in carried + fresh] + \
        ["a saved value"] * (m - 1 - len(carried) - len(fresh))  # noqa: E731
    # a Python int the loop changes (a counter, an offset) is carried as data; if code after the loop
    # needs it static, specialization restarts with this loop unrolled (sp.program.no_roll)
    loop_key = f"{LOOP_ORIGIN}for:{id(s)}"
    if id(s) in sp.program.no_roll:
        return False
    state0 = (0, tuple(env[x] for x in carried), ())
    try:
        with sp.b.region():
            rolled_loop(sp, cond, dry_body, state0, labels)
        fresh_vals = {**found["fresh"], **found["sometimes"]}
        sometimes.update(found["sometimes"])
        unreadable = found["unreadable"]
        if set(fresh_vals) | unreadable != set(fresh):
            raise _Unroll()
        fresh = [x for x in fresh if x not in unreadable]
        static_fresh = {x: v for x, v in fresh_vals.items() if not _contains_dynamic_leaf(v)}
        fresh = [x for x in fresh if x not in static_fresh]  # the same on every iteration: not carried

        def zero(v: Any) -> Any:
            assert sp.b is not None
            a = v.aval if isinstance(v, HloValue) else _aval_of_static(v)
            if a is None:
                raise _Unroll()
            return sp.b.full(0, a.shape, a.dtype) if not a.weak_type else HloValue(
                sp.b.full(0, a.shape, a.dtype).name, a)

        zeros = []
        for x in fresh:
            v = fresh_vals[x]
            if pytree.is_tree(v):  # a tuple of arrays (the cotangents a derivative's helper returns)
                leaves, tree = pytree.flatten(v)
                if not all(isinstance(leaf, HloValue) for leaf in leaves):
                    raise _Unroll()
                zeros.append(pytree.unflatten(tree, [zero(leaf) for leaf in leaves]))
            else:
                zeros.append(zero(v))
        # buffers for appended items: per list, per item position, per leaf (see _stacked)
        layout: list[tuple[int, list[pytree.TreeDef]]] = []
        entries: list[Any] = []
        for i_l, items in found["appended"].items():
            trees = []
            for item in items:
                leaves, tree = pytree.flatten(item)
                trees.append(tree)
                entries += [_stacked(sp, leaf, n) for leaf in leaves]
            layout.append((i_l, trees))
            # an inner loop's saved values are popped as a whole, once the item appended after them is
            # (segment_pop): an item of their own, followed by one that is not
            k = len(entries) - sum(t.num_leaves for t in trees)
            for q, tree in enumerate(trees):
                here, k = entries[k:k + tree.num_leaves], k + tree.num_leaves
                if any(isinstance(e, Segment) for e in here) and (
                        not _is_segment_item(tree, here) or q + 1 == len(trees)
                        or _is_segment_item(trees[q + 1], entries[k:k + trees[q + 1].num_leaves])):
                    raise _Unroll()
        bufs = [b for e in entries for b in _buffers(e)]

        def body(state: Any) -> Any:
            local, appended = run(state, True)
            new_bufs = list(state[3])
            j = k = 0
            for i_l, trees in layout:
                items = appended.get(i_l, [])
                if len(items) != len(trees):
                    raise _Unroll()
                for item, tree in zip(items, trees):
                    leaves, t = pytree.flatten(item)
                    if t != tree:
                        raise _Unroll()
                    for leaf in leaves:
                        for v in _row_values(entries[k], leaf):
                            new_bufs[j] = sp.apply(registry.PRIMITIVES["index_update"], [new_bufs[j], (state[0],), v],
                                                   {})
                            j += 1
                        k += 1
            if set(appended) - {i_l for i_l, _ in layout}:
                raise _Unroll()
            return (sp.binop("Add", state[0], 1), tuple(local[x] for x in carried),
                    tuple(local[x] for x in fresh), tuple(new_bufs))

        state1 = (0, tuple(env[x] for x in carried), tuple(zeros), tuple(bufs))
        out = rolled_loop(sp, cond, body, state1, labels, out_origin=loop_key)
    except NeedStatic as e:
        if not all(is_loop_origin(o) for o in e.names):
            raise
        return False
    except (_Unroll, TranspileError):
        # the body needs Python semantics a rolled loop cannot give (a static counter, a changing shape,
        # `continue` on the counter, ...): unroll it, as Python runs it; real errors surface there
        return False
    _, cvals, fvals, bvals = out
    env.update(zip(carried, cvals))
    env.update(zip(fresh, fvals))
    env.update(static_fresh)
    # as after an `if` that assigns them on one branch
    env.update((x, Undefined(x, why)) for x in [*sometimes, *unreadable])
    env[target] = r[-1] if n else env.get(target)
    k = 0
    it = iter(bvals)
    for i_l, trees in layout:
        per_pos = []
        for tree in trees:
            per_pos.append([_refilled(e, it) for e in entries[k:k + tree.num_leaves]])
            k += tree.num_leaves
        seg = Segment(trees, per_pos, n, len(sp.row_contexts))
        if snap[i_l][0].startswith("_tape"):  # a derivative's tape: popped row by row, maybe by a rolled loop
            lists[i_l].append(seg)
        else:  # a user's list: its items, read back from the stacked rows
            for _ in range(n * len(trees)):
                item = segment_pop(sp, [seg], static=True)
                leaves, tree = pytree.flatten(item)
                leaves = [HloValue(v.name, v.aval.update(origin=frozenset({loop_key})))
                          if isinstance(v, HloValue) and v.ndim == 0 and v.dtype.kind in "biu" else v for v in leaves]
                lists[i_l].insert(len(snap[i_l][2]), pytree.unflatten(tree, leaves))
    for seg_id, owner in found.get("consumed", {}).items():  # popped one row per iteration: all gone
        if owner and id(owner[-1]) == seg_id:
            owner.pop()
    return True
