"""Loops on array data: ``srcjax.lax.while_loop`` / ``fori_loop`` / ``scan``, and a Python ``while``
whose test is an array value, become one ``stablehlo.while`` (:func:`rolled_loop`).

The body is interpreted once with the loop-carried values as block arguments, so transpile time does
not depend on the trip count. A Python int that a loop carries, and a ``fori_loop`` counter, are
marked with a *loop origin*: if the body needs them as static values (indexing a Python list, a
``range`` bound, a shape), a loop with static bounds is unrolled instead, exactly as Python would run
it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from .. import lax, pytree
from ..core import (
    DTypeError,
    NeedStatic,
    ShapedArray,
    ShapeError,
    StaticValueError,
    TranspileError,
    UnsupportedSyntaxError,
)
from ..frontend.names import assigned_names
from ..primitives import registry
from .hlo import HloValue
from .regions import check_containers, exec_without_exits, leaf_value, out_names, scalar_pred, snapshot_containers
from .values import (
    MAX_UNROLL,
    ROLL_ABOVE,
    ChangedStructure,
    LocalFunction,
    LoopOrigin,
    Undefined,
    Unroll,
    aval_of_static,
    contains_dynamic,
    is_loop_origin,
    join_avals,
    same_static,
)

if TYPE_CHECKING:  # annotations only: the specializer imports this module, not the other way round
    from .specialize import Specializer


_ids = itertools.count()


def rolled_loop(sp: Specializer, cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], carry: Any,
                labels: Callable[[int], list[str]], out_origin: LoopOrigin | None = None,
                unrollable: bool = True) -> Any:
    """One ``stablehlo.while`` over the pytree ``carry``.

    Numbers and arrays in ``carry`` are carried (a Python scalar that the body
    turns into an array of another dtype is carried in that dtype); other
    static leaves (None, strings, functions) must come back unchanged.
    Raises :class:`Unroll` when the body needs a carried Python int static. A loop that cannot be unrolled
    (``unrollable=False``: a ``while`` on data) carries such an int as data instead, once (``while k < n and x[k] <
    v``: the ``and`` of two booleans of data, ``x[k]`` read at a clamped index where ``k < n`` is False, as jax
    reads it); Unroll when it is needed static still (a Python list index, a range bound).
    """
    assert sp.b is not None
    if sp.print_dep is not None:  # the program prints: the loop carries the print order too
        outer = sp.print_dep

        def cond_in_order(c: Any) -> Any:
            sp.print_dep = c[1]  # (a print in the test is ordered within the test)
            return cond_fn(c[0])

        def body_in_order(c: Any) -> Any:
            sp.print_dep = c[1]
            out = body_fn(c[0])
            return out, sp.print_dep

        sp.print_dep = None
        try:
            out, sp.print_dep = rolled_loop(sp, cond_in_order, body_in_order, (carry, outer), labels, out_origin,
                                            unrollable)
        except BaseException:
            sp.print_dep = outer
            raise
        return out
    leaves, tree = pytree.flatten(carry)
    n = len(leaves)
    names = labels(n)
    carried = [j for j, v in enumerate(leaves) if isinstance(v, HloValue) or aval_of_static(v) is not None]
    avals: dict[int, ShapedArray] = {}
    marker = LoopOrigin(next(_ids))
    for j in carried:
        v = leaves[j]
        a = v.aval if isinstance(v, HloValue) else aval_of_static(v)
        assert a is not None
        if not isinstance(v, HloValue) and a.dtype.kind in "bi" and a.ndim == 0:
            a = a.update(origin=frozenset({marker}))  # a Python int the body might need static
        elif a.origin:
            a = a.update(origin=frozenset(o for o in a.origin if is_loop_origin(o)))
        avals[j] = a
    snap = snapshot_containers(sp.envs)
    as_data = False  # (the carried Python ints held as data: see the docstring)
    for _attempt in range(5):
        cond_args = sp.b.block_args([avals[j] for j in carried])
        body_args = sp.b.block_args([avals[j] for j in carried])

        def rebuild(args: list[HloValue]) -> Any:
            vals = list(leaves)
            for j, a in zip(carried, args):
                vals[j] = a
            return pytree.unflatten(tree, vals)

        try:
            with sp.b.region() as cond_lines:
                c = cond_fn(rebuild(cond_args))
                check_containers(snap, "a loop condition on array data")
                if not isinstance(c, HloValue):
                    c = sp.lift(bool(sp.truth(c, "the loop condition")))
                c = scalar_pred(sp, c, "the loop condition")
                sp.b.region_return([c])
            with sp.b.region() as body_lines:
                out = body_fn(rebuild(body_args))
                check_containers(snap, "a loop on array data")
                out_leaves, out_tree = pytree.flatten(out)
                if out_tree != tree:  # (a loop the lowering rolled is unrolled: `hist = hist + (out,)`, as Python)
                    raise ChangedStructure(TranspileError(
                        f"the loop body returns {out_tree}, but the loop carries {tree}",
                        hint="return the same structure the loop starts with"))
                changed = False
                for j, v in enumerate(out_leaves):
                    if j not in avals:
                        if not same_static(v, leaves[j]):
                            raise StaticValueError(
                                f"{names[j]} changes in a loop on array data from {leaves[j]!r} to {v!r}")
                        continue
                    a = v.aval if isinstance(v, HloValue) else aval_of_static(v)
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
        except NeedStatic as ns:
            if marker not in ns.names:
                raise
            if unrollable or as_data:
                raise Unroll() from None
            as_data = True
            for j in carried:
                avals[j] = avals[j].update(origin=avals[j].origin - {marker})
            continue
        except StaticValueError:  # (DynamicControlFlowError too)
            if as_data:  # (needed static: the refusal of a carried value used so)
                raise Unroll() from None
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
    # (a `def` in the body, bound by an iteration run before the test turned to data, is defined again by each
    # iteration: not carried, as roll_for does not carry one)
    carried = [n for n in assigned if n in env and not isinstance(env[n], Undefined | LocalFunction)]
    line = sp.nf.spans.get(id(s))
    why = f"the `while` loop on array data{f' at line {line.line}' if line else ''}"

    def scope(carry: tuple[Any, ...]) -> dict[str, Any]:
        local = dict(env)
        local.update(zip(carried, carry))
        return local

    def body(carry: tuple[Any, ...]) -> tuple[Any, ...]:
        local = scope(carry)
        exec_without_exits(sp, s.body.body, local, "a `while` loop on array data", s.test)
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
    steps = 0
    while not contains_dynamic(carry):  # a loop on Python values runs here, as Python runs it
        c = cond_fn(carry)
        if isinstance(c, HloValue):
            break
        if not sp.truth(c, "the loop condition"):
            return carry
        carry = body_fn(carry)
        steps += 1
        if steps > MAX_UNROLL:
            raise UnsupportedSyntaxError(f"a while loop on static values ran more than {MAX_UNROLL} times")
    if never_entered(sp, cond_fn, carry):
        return carry
    try:
        return rolled_loop(sp, cond_fn, body_fn, carry, labels, unrollable=False)
    except ChangedStructure as e:
        raise e.error from None
    except Unroll:
        raise StaticValueError("a value carried by a loop on array data is used where srcjax needs it at "
                               "transpile time (a Python list index, a range bound or a shape)",
                               hint="index arrays (not lists) with it, or make the loop's trip count static"
                               ) from None

def never_entered(sp: Specializer, cond_fn: Callable[[Any], Any], carry: Any) -> bool:
    """Whether the loop's condition is False on entry, known while compiling (``for v in x`` of an array of no rows,
    its ``return`` carried: jax's Python loop runs no step; XLA refuses the body's ``x[i]`` of no rows). Nothing it
    computes is kept (a region left out, its value names given back)."""
    assert sp.b is not None
    if sp.print_dep is not None:  # (a test that prints is ordered with the program's prints: evaluated once)
        return False
    count = sp.b._n
    try:
        with sp.b.region():
            c = cond_fn(carry)
        return not isinstance(c, HloValue) and not sp.truth(c, "the loop condition")
    except Exception:  # noqa: BLE001 - (the loop itself meets it again, and says it)
        return False
    finally:
        sp.b._n = count


def lax_fori_loop(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    lo, hi, body_fun, init = _bind(args, kwargs, ("lower", "upper", "body_fun", "init_val"), "fori_loop")
    return fori(sp, lo, hi, lambda i, c: sp.call_value(body_fun, [i, c], {}), init, lambda n: out_names(sp, n))

def fori(sp: Specializer, lo: Any, hi: Any, body: Callable[[Any, Any], Any], carry: Any,
         labels: Callable[[int], list[str]]) -> Any:
    static = not isinstance(lo, HloValue) and not isinstance(hi, HloValue)
    if static:
        lo, hi = int(lo), int(hi)
        if hi - lo <= ROLL_ABOVE.get():  # (a Python for is a fori_loop here: unrolled when this short)
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
        except Unroll:
            bounds = frozenset().union(*(b.aval.origin for b in (lo, hi) if isinstance(b, HloValue)))
            if not static and bounds:  # `range(steps)` of a Python int argument: make it static, then unroll
                raise NeedStatic(bounds) from None
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
            # the first iteration may turn Python numbers into arrays: run it, then loop; a carry still
            # changing shape (`h = np.tanh(h @ w)`, w of rank 3): unrolled, as Python (and jax) runs it
            bounds = frozenset().union(*(b.aval.origin for b in (lo, hi) if isinstance(b, HloValue)))
            if not static and bounds:  # `range(steps)` of a Python int argument: static, then peeled
                raise NeedStatic(bounds) from None
            if not static or hi - lo < 1 or _peel and hi - lo > MAX_UNROLL:
                raise
            if _peel:
                for i in range(lo, hi):
                    carry = body(i, carry)
                return carry
            carry = body(lo, carry)
            lo += 1
    raise AssertionError("unreachable")

def lax_scan(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    f, init, xs, length, reverse, _ = _bind(args, kwargs, ("f", "init", "xs", "length", "reverse", "unroll"),
                                            "scan", defaults={"xs": None, "length": None, "reverse": False,
                                                              "unroll": 1})  # (unroll: XLA's choice; values alike)
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
    if (changed := lax.carry_changed(init, c1, _shape_of, _carry_param(f))) is not None:  # (jax's rule: refused)
        raise ShapeError(changed, hint=lax.SCAN_CARRY_HINT)
    _, y1 = sp.call_value(f, [c1, x_at(probe_i)], {})
    yleaves0, ytree = pytree.flatten(y0)
    ys0 = []
    for y, y_next in zip(yleaves0, pytree.flatten(y1)[0]):
        avs = [v.aval if isinstance(v, HloValue) else aval_of_static(v) for v in (y, y_next)]
        if avs[0] is None or avs[1] is None:
            raise StaticValueError(f"scan: f returns {y!r} as a y; ys must be arrays or numbers")
        a = join_avals(avs, "a y of scan")  # type: ignore[arg-type]
        buf = sp.apply(registry.PRIMITIVES["zeros"], [(n,) + a.shape], {"dtype": a.dtype})
        # rows of a Python number (a weak carry) stack weakly typed, as jax's: `ys * x32` is float32
        ys0.append(HloValue(buf.name, buf.aval.update(weak_type=True)) if a.weak_type else buf)
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


def _shape_of(v: Any) -> tuple[int, ...]:
    return v.aval.shape if isinstance(v, HloValue) else np.shape(v)


def _carry_param(f: Any) -> str:
    params = getattr(getattr(f, "fdef", None), "params", None)
    return params.params[0].name.value if params is not None and params.params else "carry"


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
