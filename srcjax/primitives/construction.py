"""Array construction and shape utilities: array, asarray, diagonal, and (below) the rest of issue #16's list.

``np.array`` / ``np.asarray`` of an array cast it (``dtype=``) and prepend axes (``ndmin=``); of a
(nested) list or tuple literal holding traced values, the normalizer writes the literal as
``np.stack`` of its elements first (the record's ``nested`` field), so ``np.array([x, y])`` is
``np.array(np.stack([x, y]))``: NumPy's common dtype of the elements, differentiable and batched
like ``np.stack``. A list of static numbers is evaluated while compiling (a constant).

``np.diagonal`` reads the strided slice of the two axes flattened (no gather): exact, -0.0 kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue
from . import batch_rules
from .common import as_dtype, fmt_shape, normalize_axis
from .registry import LowerCtx, deflinear, defprim, set_fields


def _to_integers(args: Mapping[str, Any]) -> bool:
    """``np.array(x, dtype=int)`` (the call's arguments as source text): no derivative."""
    return any(t in args.get("dtype", "") for t in ("int", "bool", "uint"))


# -- array / asarray --------------------------------------------------------------------------------
def _array_stub(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):  # type: ignore[no-untyped-def]
    ...


def _asarray_stub(a, dtype=None, order=None, *, device=None, copy=None, like=None):  # type: ignore[no-untyped-def]
    ...


def _array_aval(x: ShapedArray, dtype: Any, ndmin: Any, order: Any, like: Any, name: str) -> ShapedArray:
    if like is not None:
        raise DTypeError(f"np.{name}: like= is not supported", hint="drop it: srcjax makes its own arrays")
    if order not in (None, "K", "A", "C", "F"):
        raise ShapeError(f"np.{name}: order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if isinstance(ndmin, bool) or not isinstance(ndmin, (int, np.integer)):
        raise DTypeError(f"np.{name}: ndmin must be a static int, got {ndmin!r}")
    shape = (1,) * max(0, int(ndmin) - x.ndim) + x.shape
    return ShapedArray(shape, as_dtype(dtype) or x.dtype)


def _array_lower(ctx: LowerCtx, x: HloValue, *args: Any, **kwargs: Any) -> HloValue:
    out = ctx.avals_out[0]
    return ctx.b.reshape(ctx.b.convert(x, out.dtype), out.shape)


defprim("array", np.array, _array_stub, nested=("object",), arrays=("object",), static_eval=True,
        abstract_eval=lambda object, dtype=None, copy=True, order="K", subok=False, ndmin=0, like=None:
        _array_aval(object, dtype, ndmin, order, like, "array"),
        lower=_array_lower, nondiff_when=_to_integers,
        jvp={"object": "array_dot(object_dot, out)"}, vjp={"object": "array_bar(out_bar, object)"})
defprim("asarray", np.asarray, _asarray_stub, nested=("a",), arrays=("a",), static_eval=True,
        abstract_eval=lambda a, dtype=None, order=None, device=None, copy=None, like=None:
        _array_aval(a, dtype, 0, order, like, "asarray"),
        lower=_array_lower, nondiff_when=_to_integers,
        jvp={"a": "array_dot(a_dot, out)"}, vjp={"a": "array_bar(out_bar, a)"})


def _stacked(c: batch_rules.BatchCall, param: str) -> dict[str, str]:
    """A batched operand that may be a (nested) list of batched arrays (a mapped list argument, a copy of one, a
    list of batched and unbatched values): stacked after the batch axis (``batch_stacked``: ``np.asarray(ws)``
    stacked the examples' rows)."""
    text = c.args[param]
    # (a display: a list whose unbatched items vmap broadcast, `[q[0], [q[1][0], batch_broadcast(q[1][1], n)]]`)
    if c.batched(param) and (batch_rules.is_name(text) or text.startswith(("[", "("))) and not c.array(param):
        return {param: f"batch_stacked({text})"}
    return {}


def _array_batch(c: batch_rules.BatchCall) -> str:
    """``np.array(x, ndmin=k)``: new axes go after the batch axis (``batch_array``); else as it is."""
    ndmin = c.args.get("ndmin", "0")
    if ndmin == "0":
        return c.call(**_stacked(c, "object"))
    return f"batch_array({_stacked(c, 'object').get('object', c.args['object'])}, {c.args.get('dtype', 'None')}, " \
        f"{ndmin})"


set_fields("array", batch=_array_batch)
set_fields("asarray", batch=lambda c: c.call(**_stacked(c, "a")))


# -- diagonal -----------------------------------------------------------------------------------------
def _diagonal_stub(a, offset=0, axis1=0, axis2=1):  # type: ignore[no-untyped-def]
    ...


def _diagonal_plan(a: ShapedArray, offset: Any, axis1: Any, axis2: Any) -> tuple[int, int, int, int]:
    """(offset, axis1, axis2, length of the diagonal)."""
    if a.ndim < 2:
        raise ShapeError(f"np.diagonal: diag requires an array of at least two dimensions, got shape "
                         f"{fmt_shape(a.shape)}", hint="np.diag builds a matrix from a vector")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise DTypeError(f"np.diagonal: offset must be a static int, got {offset!r}")
    i, j = normalize_axis(axis1, a.ndim, "axis1"), normalize_axis(axis2, a.ndim, "axis2")
    if i == j:
        raise ShapeError("np.diagonal: axis1 and axis2 cannot be the same", hint="pass two different axes")
    k = int(offset)
    n, m = a.shape[i], a.shape[j]
    length = min(n, m - k) if k >= 0 else min(n + k, m)
    return k, i, j, max(length, 0)


def _diagonal_abstract(a: ShapedArray, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> ShapedArray:
    _, i, j, length = _diagonal_plan(a, offset, axis1, axis2)
    return ShapedArray(tuple(d for k, d in enumerate(a.shape) if k not in (i, j)) + (length,), a.dtype)


def _diagonal_lower(ctx: LowerCtx, a: HloValue, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> HloValue:
    """The two axes moved last and flattened: the diagonal is a slice with stride ``m + 1``."""
    b = ctx.b
    k, i, j, length = _diagonal_plan(a.aval, offset, axis1, axis2)
    rest = [d for d in range(a.ndim) if d not in (i, j)]
    n, m = a.shape[i], a.shape[j]
    lead = tuple(a.shape[d] for d in rest)
    x = b.reshape(b.transpose(a, rest + [i, j]), lead + (n * m,))
    start = k if k >= 0 else -k * m
    if length == 0:
        start, limit, stride = 0, 0, 1
    else:
        limit, stride = start + (length - 1) * (m + 1) + 1, m + 1
    return b.slice(x, [0] * len(lead) + [start], list(lead) + [limit], [1] * len(lead) + [stride])


defprim("diagonal", np.diagonal, _diagonal_stub, abstract_eval=_diagonal_abstract, lower=_diagonal_lower,
        arrays=("a",), jvp={"a": "np.diagonal(a_dot, offset, axis1, axis2)"},
        vjp={"a": "diagonal_bar(out_bar, a, offset, axis1, axis2)"})
set_fields("diagonal", batch=batch_rules.axes("axis1", "axis2"))


# -- insert / delete / append / pad / resize: elements moved, by a static plan (move_plan.py) ----------------
def _insert_stub(arr, obj, values, axis=None):  # type: ignore[no-untyped-def]
    ...


def _delete_stub(arr, obj, axis=None):  # type: ignore[no-untyped-def]
    ...


def _append_stub(arr, values, axis=None):  # type: ignore[no-untyped-def]
    ...


def _pad_stub(array, pad_width, mode="constant", constant_values=0):  # type: ignore[no-untyped-def]
    ...


def _resize_stub(a, new_shape):  # type: ignore[no-untyped-def]
    ...


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _static(v: Any, what: str) -> Any:
    """A static index argument as a plain (hashable-by-repr) value: ints, slices, nested tuples."""
    if isinstance(v, ShapedArray):
        raise DTypeError(f"{what} must be static (known while compiling), got an array",
                         hint="the result's shape depends on it: compute it from shapes and Python ints")
    if isinstance(v, np.ndarray):
        return _static(v.tolist(), what)
    if isinstance(v, (list, tuple)):
        return tuple(_static(x, what) for x in v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _move_params(kind: str, args: dict[str, Any]) -> tuple[Any, ...]:
    """The static parameters of a move primitive's plan, from its bound arguments."""
    if kind in ("insert", "delete"):
        return (_static(args["obj"], f"np.{kind}: obj"), args["axis"])
    if kind == "append":
        return (args["axis"],)
    if kind == "pad":
        if args["mode"] not in _PAD_MODES:
            raise DTypeError(f"np.pad: mode={args['mode']!r} is not supported (srcjax has {', '.join(_PAD_MODES)})")
        cv = args["constant_values"]
        if isinstance(cv, ShapedArray) or not isinstance(cv, (int, float, bool, np.number, np.bool_)):
            raise DTypeError("np.pad: constant_values must be a static number",
                             hint="pad with 0 and add value * (1 - np.pad(np.ones_like(x), pad_width))")
        return (_static(args["pad_width"], "np.pad: pad_width"), args["mode"])
    return (_static(args["new_shape"], "np.resize: new_shape"),)


def _move_plan(kind: str, avals: list[ShapedArray], args: dict[str, Any]) -> Any:
    from ..move_plan import move_plan

    params = _move_params(kind, args)
    if kind == "insert" and (isinstance(params[0], bool) or avals[0].ndim == 0 and params[1] is not None):
        raise ShapeError(f"np.insert: bad obj or axis for an array of shape {fmt_shape(avals[0].shape)}")
    try:
        return move_plan(kind, tuple(a.shape for a in avals), params)
    except (IndexError, ValueError) as e:  # NumPy's own refusal (AxisError is both)
        raise ShapeError(f"np.{kind}: {e}") from None
    except TypeError as e:
        raise DTypeError(f"np.{kind}: {e}") from None


def _move_dtype(kind: str, avals: list[ShapedArray]) -> np.dtype:
    if kind == "append":  # (np.append's values go through np.ravel: a Python float is float64)
        return np.result_type(*(a.dtype for a in avals))
    return avals[0].dtype


def _mover(kind: str, stub: Any, arrays: tuple[str, ...], positional: int) -> None:
    import inspect

    sig = inspect.signature(stub)

    def bind(*args: Any) -> dict[str, Any]:
        return dict(zip(sig.parameters, args))

    def abstract(*args: Any) -> ShapedArray:
        a = bind(*args)
        avals = [a[p] for p in arrays]
        return ShapedArray(_move_plan(kind, avals, a).index.shape, _move_dtype(kind, avals))

    def lower(ctx: LowerCtx, *args: Any) -> HloValue:
        """The operands flattened, cast and joined (a constant fill last), then one gather."""
        from . import gather

        b = ctx.b
        a = bind(*args)
        out = ctx.avals_out[0]
        xs = [a[p] for p in arrays]
        plan = _move_plan(kind, [x.aval for x in xs], a)
        parts = [b.reshape(b.convert(x, out.dtype), (x.aval.size,)) for x in xs]
        if kind == "pad" and a["mode"] == "constant":
            parts.append(b.full(a["constant_values"], (1,), out.dtype))
        flat = b.concatenate(parts, 0)
        if plan.index.size == 0:
            return b.full(0, out.shape, out.dtype)
        idx = b.constant(plan.index, ShapedArray(plan.index.shape, np.dtype(np.int64)))
        return gather.lower_gather(b, flat, (idx,), out)

    defprim(kind, getattr(np, kind), stub, abstract_eval=abstract, lower=lower, arrays=arrays, positional=positional,
            nested=arrays)  # (np.append(x, [y[0], 1.0]): the list literal an array, np.stack)


_mover("insert", _insert_stub, ("arr", "values"), 3)
_mover("delete", _delete_stub, ("arr",), 2)
_mover("append", _append_stub, ("arr", "values"), 2)
_mover("pad", _pad_stub, ("array",), 2)
_mover("resize", _resize_stub, ("a",), 2)

# linear: the tangent moves as the values; the cotangent of each operand gathers back its uses
deflinear("insert", {"arr": "np.insert(arr_dot, obj, zeros_like(values), axis)",
                     "values": "np.insert(zeros_like(arr), obj, values_dot, axis)"},
          {"arr": "unbroadcast(move_bar(out_bar, arr, values, 0, 'insert', (obj, axis)), arr)",
           "values": "unbroadcast(move_bar(out_bar, arr, values, 1, 'insert', (obj, axis)), values)"})
set_fields("insert", jvp_joint="np.insert(arr_dot, obj, values_dot, axis)")
deflinear("append", {"arr": "broadcast_like(np.append(arr_dot, zeros_like(values), axis), out)",
                     "values": "broadcast_like(np.append(zeros_like(arr), values_dot, axis), out)"},
          {"arr": "unbroadcast(move_bar(out_bar, arr, values, 0, 'append', (axis,)), arr)",
           "values": "unbroadcast(move_bar(out_bar, arr, values, 1, 'append', (axis,)), values)"})
set_fields("append", jvp_joint="broadcast_like(np.append(arr_dot, values_dot, axis), out)")
deflinear("delete", {"arr": "np.delete(arr_dot, obj, axis)"},
          {"arr": "unbroadcast(move_bar(out_bar, arr, None, 0, 'delete', (obj, axis)), arr)"})
deflinear("pad", {"array": "np.pad(array_dot, pad_width, mode)"},
          {"array": "unbroadcast(move_bar(out_bar, array, None, 0, 'pad', (pad_width, mode)), array)"})
deflinear("resize", {"a": "np.resize(a_dot, new_shape)"},
          {"a": "unbroadcast(move_bar(out_bar, a, None, 0, 'resize', (new_shape,)), a)"})


def _move_batch(kind: str, first: str, second: str | None, params: tuple[str, ...]) -> batch_rules.Rule:
    """Every example moved by the same static plan: ``batch_move`` gathers the flattened examples."""

    def rule(c: batch_rules.BatchCall) -> str:
        y = c.args[second] if second else "None"
        fill = c.args.get("constant_values", "0") if kind == "pad" else "0"
        ps = "(" + ", ".join(c.args[p] for p in params) + ("," if len(params) == 1 else "") + ")"
        return (f"batch_move({c.args[first]}, {y}, {kind!r}, {ps}, {fill}, {c.batched(first)}, "
                f"{c.batched(second) if second else False})")

    return rule


set_fields("insert", batch=_move_batch("insert", "arr", "values", ("obj", "axis")))
set_fields("delete", batch=_move_batch("delete", "arr", None, ("obj", "axis")))
set_fields("append", batch=_move_batch("append", "arr", "values", ("axis",)))
set_fields("pad", batch=_move_batch("pad", "array", None, ("pad_width", "mode")))
set_fields("resize", batch=_move_batch("resize", "a", None, ("new_shape",)))


# -- kron ------------------------------------------------------------------------------------------------
def _kron_stub(a, b):  # type: ignore[no-untyped-def]
    ...


def _kron_shapes(a: ShapedArray, b: ShapedArray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Both shapes padded with leading 1s to the same rank (NumPy's kron)."""
    nd = max(a.ndim, b.ndim)
    return (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape


def _kron_abstract(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    sa, sb = _kron_shapes(a, b)
    return ShapedArray(tuple(x * y for x, y in zip(sa, sb)), np.result_type(a.dtype, b.dtype))


def _kron_lower(ctx: LowerCtx, a: HloValue, b: HloValue) -> HloValue:
    """``a`` and ``b`` broadcast on interleaved axes (a0, b0, a1, b1, ...), multiplied, merged."""
    bld = ctx.b
    out = ctx.avals_out[0]
    sa, sb = _kron_shapes(a.aval, b.aval)
    inter = tuple(d for pair in zip(sa, sb) for d in pair)
    nd = len(sa)
    x = bld.broadcast_in_dim(bld.reshape(bld.convert(a, out.dtype), sa), inter, [2 * i for i in range(nd)])
    y = bld.broadcast_in_dim(bld.reshape(bld.convert(b, out.dtype), sb), inter, [2 * i + 1 for i in range(nd)])
    return bld.reshape(bld.binary("and" if out.dtype == np.bool_ else "multiply", x, y), out.shape)


defprim("kron", np.kron, _kron_stub, abstract_eval=_kron_abstract, lower=_kron_lower, arrays=("a", "b"),
        jvp={"a": "np.kron(a_dot, b)", "b": "np.kron(a, b_dot)"},
        vjp={"a": "unbroadcast(kron_bar(out_bar, a, b, 0), a)", "b": "unbroadcast(kron_bar(out_bar, a, b, 1), b)"})
set_fields("kron", batch=batch_rules.helper("batch_kron", "a", "b"))


# -- cross -----------------------------------------------------------------------------------------------
def _cross_stub(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):  # type: ignore[no-untyped-def]
    ...


def _cross_plan(a: ShapedArray, b: ShapedArray, axisa: Any, axisb: Any, axisc: Any,
                axis: Any) -> tuple[int, int, int | None, tuple[int, ...], np.dtype]:
    """(axis of a, axis of b, axis of the result or None for 2-vectors, result shape, dtype)."""
    if axis is not None:
        axisa, axisb, axisc = axis, axis, axis
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("np.cross: the vectors need an axis", hint="pass arrays of 2- or 3-vectors")
    ia, ib = normalize_axis(axisa, a.ndim, "axisa"), normalize_axis(axisb, b.ndim, "axisb")
    na, nb = a.shape[ia], b.shape[ib]
    if na not in (2, 3) or nb not in (2, 3):
        raise ShapeError(f"np.cross: incompatible dimensions for cross product (dimension must be 2 or 3), got "
                         f"{na} and {nb}")
    from .common import broadcast_shapes

    lead = broadcast_shapes(tuple(d for i, d in enumerate(a.shape) if i != ia),
                            tuple(d for i, d in enumerate(b.shape) if i != ib), what="np.cross: vectors")
    d = np.result_type(a.dtype, b.dtype)
    if d == np.bool_:
        raise DTypeError("np.cross of booleans is not supported (NumPy refuses the subtraction)")
    if na == nb == 2:
        return ia, ib, None, lead, d
    ic = normalize_axis(axisc, len(lead) + 1, "axisc")
    return ia, ib, ic, lead[:ic] + (3,) + lead[ic:], d


def _cross_abstract(a: ShapedArray, b: ShapedArray, axisa: Any = -1, axisb: Any = -1, axisc: Any = -1,
                    axis: Any = None) -> ShapedArray:
    *_, shape, d = _cross_plan(a, b, axisa, axisb, axisc, axis)
    return ShapedArray(shape, d)


def _cross_lower(ctx: LowerCtx, a: HloValue, b: HloValue, axisa: Any = -1, axisb: Any = -1, axisc: Any = -1,
                 axis: Any = None) -> HloValue:
    """Components sliced out, broadcast over the leading axes, combined as NumPy does (a 2-vector's third
    component is 0)."""
    bld = ctx.b
    ia, ib, ic, shape, d = _cross_plan(a.aval, b.aval, axisa, axisb, axisc, axis)
    lead = shape if ic is None else shape[:ic] + shape[ic + 1:]

    def parts(x: HloValue, ax: int) -> list[HloValue | None]:
        x = bld.convert(x, d)
        moved = bld.transpose(x, [i for i in range(x.ndim) if i != ax] + [ax])
        comps: list[HloValue | None] = []
        for k in range(3):
            if k >= x.shape[ax]:
                comps.append(None)
                continue
            s = bld.slice(moved, [0] * (moved.ndim - 1) + [k], list(moved.shape[:-1]) + [k + 1])
            comps.append(bld.broadcast_to(bld.reshape(s, moved.shape[:-1]), lead))
        return comps

    def term(x: HloValue | None, y: HloValue | None) -> HloValue | None:
        return None if x is None or y is None else bld.binary("multiply", x, y)

    def minus(p: HloValue | None, q: HloValue | None) -> HloValue:
        if p is None and q is None:
            return bld.full(0, lead, d)
        if q is None:
            assert p is not None
            return p
        if p is None:
            return bld.unary("negate", q)
        return bld.binary("subtract", p, q)

    (a0, a1, a2), (b0, b1, b2) = parts(a, ia), parts(b, ib)
    z = minus(term(a0, b1), term(a1, b0))
    if ic is None:
        return z
    x = minus(term(a1, b2), term(a2, b1))
    y = minus(term(a2, b0), term(a0, b2))
    stacked = bld.concatenate([bld.reshape(c, lead + (1,)) for c in (x, y, z)], len(lead))
    return bld.transpose(stacked, list(range(ic)) + [len(lead)] + list(range(ic, len(lead))))


defprim("cross", np.cross, _cross_stub, abstract_eval=_cross_abstract, lower=_cross_lower, arrays=("a", "b"),
        jvp={"a": "np.cross(a_dot, b, axisa, axisb, axisc, axis)",
             "b": "np.cross(a, b_dot, axisa, axisb, axisc, axis)"},
        vjp={"a": "unbroadcast(cross_bar(out_bar, a, b, 0, axisa, axisb, axisc, axis), a)",
             "b": "unbroadcast(cross_bar(out_bar, a, b, 1, axisa, axisb, axisc, axis), b)"})
set_fields("cross", batch=lambda c: f"batch_cross({c.args['a']}, {c.args['b']}, {c.batched('a')}, {c.batched('b')}, "
                                    f"{c.args['axisa']}, {c.args['axisb']}, {c.args['axisc']}, {c.args['axis']})")


# -- meshgrid ------------------------------------------------------------------------------------------
def _meshgrid_stub(*xi, copy=True, sparse=False, indexing="xy"):  # type: ignore[no-untyped-def]
    ...


def _mesh_plan(sizes: list[int], sparse: Any, indexing: Any) -> list[tuple[tuple[int, ...], int]]:
    """(result shape, the axis its operand runs along) per operand (NumPy: ``xy`` swaps the first two)."""
    if indexing not in ("xy", "ij"):
        raise ShapeError("np.meshgrid: Valid values for `indexing` are 'xy' and 'ij'.")
    n = len(sizes)
    dims = list(range(n))
    if indexing == "xy" and n >= 2:
        dims[0], dims[1] = 1, 0
    full = tuple(sizes[dims[k]] for k in range(n))  # (dims is its own inverse)
    return [(tuple(sizes[i] if k == dims[i] else 1 for k in range(n)) if sparse else full, dims[i])
            for i in range(n)]


def _meshgrid_abstract(*args: Any) -> Any:
    xi, (_, sparse, indexing) = args[:-3], args[-3:]  # (keywords come positionally, after the operands)
    return [ShapedArray(shape, x.dtype) for x, (shape, _) in zip(xi, _mesh_plan([x.size for x in xi], sparse,
                                                                                  indexing))]


def _meshgrid_lower(ctx: LowerCtx, *args: Any) -> Any:
    b = ctx.b
    xi, (_, sparse, indexing) = args[:-3], args[-3:]
    plan = _mesh_plan([x.aval.size for x in xi], sparse, indexing)
    return [b.broadcast_in_dim(b.reshape(x, (x.aval.size,)), shape, [d]) for x, (shape, d) in zip(xi, plan)]


defprim("meshgrid", np.meshgrid, _meshgrid_stub, abstract_eval=_meshgrid_abstract, lower=_meshgrid_lower,
        arrays=(), array_seqs=("xi",), results="list",
        jvp={"xi": "meshgrid_dots(xi_dot, sparse, indexing)"}, vjp={"xi": "meshgrid_bars(out_bar, xi, indexing)"})


def _meshgrid_batch(c: batch_rules.BatchCall) -> Any:
    """``np.meshgrid`` per example: every result batched (``batch_meshgrid``)."""
    if not isinstance(c.args["xi"], list):
        return c.per_example()
    flags = ", ".join(str(f) for f in c.seq_batched("xi"))
    return (f"batch_meshgrid([{', '.join(c.args['xi'])}], [{flags}], {c.args.get('sparse', 'False')}, "
            f"{c.args.get('indexing', repr('xy'))}, {c.size})")


set_fields("meshgrid", batch=_meshgrid_batch)
