"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``.

The signatures are JAX's (``jax.lax``). Each function here *is* the NumPy
reference implementation: generated source that calls ``srcjax.lax.cond`` runs
with plain NumPy, and compiled code lowers the same call to ``stablehlo.if``,
``stablehlo.case`` or ``stablehlo.while``.

Users may call these directly; srcjax also writes them when it rewrites
``if``/``while``/``for`` statements that depend on array values (see
``srcjax.source``).

Compiled semantics differ from plain Python in one way, as in JAX: both
branches of a ``cond`` and the body of a loop are transpiled, so they must
give the same structure, shapes and dtypes for every outcome. A Python scalar
(weakly typed) output takes the dtype of the other branch's array.

The rest of JAX's ``lax`` that users call lives beside it and is re-exported here:
``stop_gradient`` (``lax_stop.py``, a record of its own), ``dynamic_slice`` and its family
(``lax_slicing.py``), the functions written in NumPy terms (``lax_numpy.py``: ``clamp``,
``dot_general``, ``pad``, ``top_k``, ...), and below, the ones that are NumPy's own functions
(``exp = np.exp``). ``map`` is read as the ``scan`` it is.
"""

from __future__ import annotations

import builtins
import enum
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import index_writes, pytree
from .core import Span, UnboundAxisNameError
from .lax_numpy import (  # noqa: F401  (srcjax.lax's functions in NumPy terms)
    argmax,
    argmin,
    batch_matmul,
    broadcast,
    broadcast_in_dim,
    clamp,
    collapse,
    concatenate,
    convert_element_type,
    cumlogsumexp,
    cummax,
    cummin,
    cumprod,
    cumsum,
    div,
    dot,
    dot_general,
    expand_dims,
    full,
    full_like,
    index_in_dim,
    integer_pow,
    iota,
    lax_round,
    lax_slice,
    logistic,
    pad,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    rem,
    reshape,
    rev,
    rsqrt,
    slice_in_dim,
    sort,
    sort_key_val,
    squeeze,
    top_k,
    transpose,
)
from .lax_reduce import associative_scan, reduce  # noqa: A004  (jax's name)
from .lax_slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
)
from .lax_special import digamma, erf_inv, erfc, lgamma, polygamma
from .lax_stop import stop_gradient
from .weak_arrays import WeakArray, weak
from .windows import ConvDimensionNumbers, conv, conv_general_dilated, conv_transpose, padtype_to_pads, reduce_window

__all__ = ["ConvDimensionNumbers", "RoundingMethod", "abs", "acos", "acosh", "add", "all_gather", "argmax", "argmin",
           "asin", "asinh", "associative_scan", "atan", "atan2", "atanh", "axis_index", "batch_matmul",
           "bitcast_convert_type", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "broadcast",
           "broadcast_in_dim", "cbrt", "ceil", "clamp", "collapse", "concatenate", "cond", "conj", "conv",
           "conv_general_dilated", "conv_transpose", "convert_element_type", "cos", "cosh", "cumlogsumexp", "cummax",
           "cummin", "cumprod", "cumsum", "digamma", "div", "dot", "dot_general", "dynamic_index_in_dim",
           "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim", "dynamic_update_slice",
           "dynamic_update_slice_in_dim", "eq", "erf", "erf_inv", "erfc", "exp", "exp2", "expand_dims", "expm1",
           "floor", "fori_loop", "full", "full_like", "ge", "gt", "imag", "index_in_dim", "index_update",
           "integer_pow", "iota", "is_finite", "le", "lgamma", "log", "log1p", "logistic", "lt", "map", "max", "min",
           "mul", "ne", "neg", "not_", "pad", "padtype_to_pads", "pmax", "pmean", "pmin", "polygamma", "pow",
           "ppermute", "psum", "psum_scatter", "real", "reduce", "reduce_and", "reduce_max", "reduce_min",
           "reduce_or", "reduce_prod", "reduce_sum", "reduce_window", "rem", "reshape", "rev", "round", "rsqrt",
           "scan", "select", "shift_left", "sign", "sin", "sinh", "slice", "slice_in_dim", "sort", "sort_key_val",
           "sqrt", "square", "squeeze", "stop_gradient", "sub", "switch", "tan", "tanh", "top_k", "transpose",
           "while_loop", "with_sharding_constraint"]

# JAX's elementwise monoids, the computations ``reduce_window`` takes: NumPy's ufuncs (so srcjax reads
# ``srcjax.lax.add(x, y)`` as ``np.add``; unlike JAX's they broadcast and promote as NumPy does)
add = np.add
mul = np.multiply
max = np.maximum  # noqa: A001  (JAX's names)
min = np.minimum  # noqa: A001
class RoundingMethod(enum.IntEnum):
    """JAX's ``lax.RoundingMethod``, ``round``'s ``rounding_method``."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


round = lax_round  # noqa: A001  (JAX's names; their functions are named apart from the builtins, which
slice = lax_slice  # noqa: A001  (generated code in srcjax.lax_numpy calls: x[a:b] is written slice(a, b))
select = np.where  # (JAX's ``lax.select(pred, on_true, on_false)``: per element; NumPy's broadcasting, as above)
# JAX's elementwise functions that are NumPy's (for the arguments JAX takes: arrays of one dtype; NumPy also
# promotes mixes): the NumPy functions themselves, so srcjax reads ``srcjax.lax.exp(x)`` as ``np.exp(x)``
exp = np.exp
log = np.log
tanh = np.tanh
sin = np.sin
cos = np.cos
tan = np.tan
asin = np.arcsin
acos = np.arccos
atan = np.arctan
sinh = np.sinh
cosh = np.cosh
asinh = np.arcsinh
acosh = np.arccosh
atanh = np.arctanh
atan2 = np.arctan2
sqrt = np.sqrt
cbrt = np.cbrt
abs = np.abs  # noqa: A001  (JAX's name)
sign = np.sign
floor = np.floor
ceil = np.ceil
neg = np.negative
exp2 = np.exp2
expm1 = np.expm1
log1p = np.log1p
square = np.square
sub = np.subtract
pow = np.power  # noqa: A001  (JAX's name)
is_finite = np.isfinite
eq = np.equal
ne = np.not_equal
lt = np.less
le = np.less_equal
gt = np.greater
ge = np.greater_equal
bitwise_and = np.bitwise_and
bitwise_or = np.bitwise_or
bitwise_xor = np.bitwise_xor
bitwise_not = np.invert
not_ = np.invert
shift_left = np.left_shift
real = np.real
imag = np.imag
conj = np.conj
for _f in (conv, conv_general_dilated, conv_transpose, padtype_to_pads, reduce_window, stop_gradient):
    _f.__module__ = __name__  # (their home is srcjax.windows; users find them here)


def _truth(pred: Any, what: str) -> bool:
    p = np.asarray(pred)
    if p.shape != ():
        raise TypeError(f"{what} must be a scalar (shape ()), got shape {p.shape}; reduce it with np.any or np.all")
    return bool(p)


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], *operands: Any) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; ``pred`` is a scalar. A Python
    container's truth, as the lowering takes it: the front end makes an ``if`` on a value it cannot tell
    from data a ``cond`` (``if plan:`` on a helper's tuple of axes, given an array argument)."""
    if isinstance(pred, (tuple, list, dict)):
        return true_fun(*operands) if pred else false_fun(*operands)
    if _truth(pred, "cond: the predicate"):
        return true_fun(*operands)
    return false_fun(*operands)


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``branches[index](*operands)``, with ``index`` clamped into ``[0, len(branches) - 1]``."""
    i = np.asarray(index)
    if i.shape != () or i.dtype.kind not in "iub":
        raise TypeError(f"switch: the index must be an integer scalar, got {i.dtype}{list(i.shape)}")
    if not branches:
        raise ValueError("switch: at least one branch is needed")
    k = builtins.min(builtins.max(int(i), 0), len(branches) - 1)  # (this module's max/min are JAX's)
    return branches[k](*operands)


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """``val = init_val; while cond_fun(val): val = body_fun(val); return val``."""
    val = init_val
    while _truth(cond_fun(val), "while_loop: cond_fun's result"):
        val = body_fun(val)
    return val


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val); return val``."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` for each leading slice ``x`` of ``xs``; returns ``(carry, stacked ys)``.

    ``xs`` may be an array, a tuple/list/dict of arrays (sliced together), or
    ``None`` with ``length`` given. ``reverse=True`` walks the slices from the
    last to the first and stores each ``y`` at its slice's position. ``unroll`` (JAX's: how many steps one
    iteration of the compiled loop runs) is accepted and left to XLA: the values are the same.
    """


    leaves, tree = pytree.flatten(xs)
    leaves = [np.asarray(x) for x in leaves]
    if leaves:
        n = leaves[0].shape[0] if leaves[0].ndim else None
        if n is None or any(x.ndim == 0 or x.shape[0] != n for x in leaves):
            raise ValueError("scan: every array in xs needs the same leading dimension")
        if length is not None and length != n:
            raise ValueError(f"scan: length={length} but xs has leading dimension {n}")
    elif length is None:
        raise ValueError("scan: give xs or length")
    else:
        n = length
    carry = init
    ys: list[Any] = [None] * n
    order = range(n - 1, -1, -1) if reverse else range(n)
    if n and any(_python_number(u) for u in pytree.flatten(init)[0]):
        # a Python number in init takes the dtype f gives the carry (JAX's weak-typed carry: `scan(f, 0.0, x32)`)
        x = pytree.unflatten(tree, [leaf[order[0]] for leaf in leaves]) if leaves else None
        carry = _promoted_carry(init, f(init, x)[0])
    for k in order:
        x = pytree.unflatten(tree, [leaf[k] for leaf in leaves]) if leaves else None
        before = carry
        carry, y = f(carry, x)
        if (changed := carry_changed(before, carry, np.shape, _carry_name(f))) is not None:
            raise TypeError(f"{changed}; {SCAN_CARRY_HINT}")
        ys[k] = y
    if n == 0:
        return carry, None
    y_leaves = [pytree.flatten(y)[0] for y in ys]
    _, y_tree = pytree.flatten(ys[0])
    stacked = [_stacked([row[j] for row in y_leaves]) for j in range(len(y_leaves[0]))]
    return carry, pytree.unflatten(y_tree, stacked)


SCAN_CARRY_HINT = ("the carry keeps its shape from step to step (jax.lax.scan's rule): start it with the shape f "
                   "gives it, or return what grows as a y (scan stacks the ys)")


def carry_changed(init: Any, out: Any, shape: Callable[[Any], Any], name: str = "carry") -> str | None:
    """What differs between the carry ``f`` is given and the carry it returns (jax requires the same types; srcjax
    the same shapes, a Python number's dtype taken from ``f``'s: JAX's weak-typed carry), or None. ``shape``: a
    leaf's shape (the NumPy reference's ``np.shape``, the compiler's abstract values'); ``name``: ``f``'s carry."""
    a, b = pytree.flatten(init)[0], pytree.flatten(out)[0]
    if len(a) != len(b):
        return None  # (another structure: the loop's own error)
    for k, (u, v) in enumerate(zip(a, b)):
        if tuple(shape(u)) != tuple(shape(v)):
            leaf = f"`{name}`" + (f" (leaf {k} of {len(a)})" if len(a) > 1 else "")
            return f"scan: the carry {leaf} goes into f with shape {tuple(shape(u))} and comes out with shape " \
                   f"{tuple(shape(v))}"
    return None


def _carry_name(f: Any) -> str:
    """The name of ``f``'s carry parameter (its first), for messages."""
    try:
        return next(iter(inspect.signature(f).parameters))
    except (TypeError, ValueError, StopIteration):
        return "carry"


def _stacked(rows: list[Any]) -> Any:
    """``np.stack(rows)``, weakly typed where every row is a Python number (JAX's rows of a weak carry: ``ys``
    of ``scan(lambda c, _: (c * 0.5, c), 1.0, None, length=3)`` times a float32 array is float32)."""
    out = np.stack([np.asarray(r) for r in rows])
    return weak(out) if all(_python_number(r) for r in rows) and out.dtype.kind in "iufc" else out


def _promoted_carry(init: Any, out: Any) -> Any:
    """``init`` with each Python number converted to the dtype of its leaf in ``out`` (one step's carry)."""
    a, tree = pytree.flatten(init)
    b, tree_out = pytree.flatten(out)
    if tree != tree_out:
        return init
    return pytree.unflatten(tree, [np.asarray(u, dtype=np.result_type(v)) if _python_number(u) and isinstance(
        v, (np.ndarray, np.generic)) and not isinstance(v, WeakArray) and np.result_type(v).kind in "iufc" else u
                                   for u, v in zip(a, b)])


def _python_number(u: Any) -> bool:  # (or its repeat along vmap's batch axis: weak_arrays.py)
    return isinstance(u, (int, float, complex, WeakArray)) and not isinstance(u, (bool, np.generic))


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001  (JAX's name)
    """JAX's ``lax.map``: ``f`` of each leading slice of ``xs`` (an array or a container of arrays sliced
    together), the results stacked (a container of stacks). The ``scan`` that carries nothing: srcjax
    reads ``map(f, xs)`` as ``scan(lambda carry, item: (carry, f(item)), 0, xs)[1]``; ``batch_size``
    changes no value."""
    return scan(lambda carry, item: (carry, f(item)), 0, xs)[1]


def index_update(x: Any, key: Any, value: Any) -> Any:
    """A copy of ``x`` with ``x[key] = value`` (NumPy assignment semantics: ``value`` is cast to
    ``x``'s dtype and broadcast to the selection). srcjax writes this for ``x[key] = value``; for a
    dict or list ``x`` (``out["w"] = v`` on a local dict) a copy with that item replaced or added; a tuple,
    NamedTuple or dataclass likewise (as the lowering takes a container: ``pytree.tree_set``). A write at an index
    out of range is dropped (``index_writes.dropping``: JAX's rule; reads clamp)."""
    if type(x) is dict or type(x) is list or pytree.is_tree(x):
        return pytree.tree_set(x, key, value)
    axes, key = index_writes.dropping(np.shape(x), key)  # (out of range: dropped, as JAX's scatter drops it)
    out = index_writes.padded(np.array(x, copy=True), axes)
    out[key] = value
    out = index_writes.cut(out, np.shape(x)) if axes else out
    # (a buffer of a Python number's rows stays weakly typed while every write is one: lax.scan's ys)
    return weak(out) if isinstance(x, WeakArray) and _python_number(value) else out


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """JAX's ``lax.bitcast_convert_type`` between dtypes of one width: the same bits read as
    ``new_dtype`` (``uint32`` <-> ``float32``, ``uint64`` <-> ``float64``), the shape unchanged."""
    x = np.asarray(operand)
    d = np.dtype(new_dtype)
    if d.itemsize != x.dtype.itemsize:
        raise TypeError(f"bitcast_convert_type: {x.dtype} and {d} have different widths (srcjax supports equal ones)")
    return x.view(d)


def erf(x: Any) -> Any:
    """JAX's ``lax.erf``, the error function, elementwise: a float array keeps its dtype, anything else
    gives float64 (here ``math.erf`` per element; compiled, XLA's ``chlo.erf``, as jax)."""
    a = np.asarray(x)
    d = a.dtype if a.dtype.kind == "f" else np.dtype(np.float64)
    return np.asarray(np.vectorize(math.erf, otypes=[np.float64])(a), dtype=d)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """JAX's ``lax.with_sharding_constraint``: ``x`` itself. Compiled for several devices, XLA lays ``x``
    out as ``shardings`` (a ``srcjax.sharding.NamedSharding``) says at this point of the program
    (``sdy.sharding_constraint``), and partitions the code around it accordingly."""
    return x


# -- collectives over a named axis: meaningful only inside ``srcjax.vmap(..., axis_name=...)``, whose
# batched source writes them as NumPy over the batch axis (transforms/batch_collectives.py), and inside
# ``srcjax.pmap(f, axis_name)``, which lowers them to XLA's collectives (lower/replicas.py)

def unbound_axis(what: str, axis_name: Any, depth: int | None = 2) -> UnboundAxisNameError:
    """The error of a collective over a name nothing binds, located at the caller's line (``depth``
    frames up; None: the compiler locates it at the call it reads)."""
    import sys

    span = None
    if depth is not None:
        f = sys._getframe(depth)
        span = Span(f.f_code.co_filename, f.f_lineno, 0, f.f_lineno, 0)
    return UnboundAxisNameError(
        f"unbound axis name: {what} over {axis_name!r}, which no enclosing transformation binds", span,
        hint=f"call it inside srcjax.vmap(f, axis_name={axis_name!r}) or srcjax.pmap(f, axis_name={axis_name!r}) "
             f"(the name of the mapped axis it works over)")


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """JAX's ``lax.psum``: inside ``srcjax.vmap(f, axis_name=...)``, the sum of ``x`` over the mapped
    axis of that name (every example sees the same value)."""
    raise unbound_axis("psum", axis_name)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """JAX's ``lax.pmean``: the mean of ``x`` over the named mapped axis."""
    raise unbound_axis("pmean", axis_name)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """JAX's ``lax.pmax``: the maximum of ``x`` over the named mapped axis."""
    raise unbound_axis("pmax", axis_name)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """JAX's ``lax.pmin``: the minimum of ``x`` over the named mapped axis."""
    raise unbound_axis("pmin", axis_name)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0, tiled: bool = False) -> Any:
    """JAX's ``lax.all_gather``: every example's ``x`` along a new axis ``axis`` (``tiled=True``:
    concatenated along the existing ``axis``) over the named mapped axis."""
    raise unbound_axis("all_gather", axis_name)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0, axis_index_groups: Any = None,
                 tiled: bool = False) -> Any:
    """JAX's ``lax.psum_scatter``: the ``psum`` of ``x``, of which each example keeps its own slice
    along ``scatter_dimension`` (``tiled=True``: its block); the transpose of ``all_gather``."""
    raise unbound_axis("psum_scatter", axis_name)


def axis_index(axis_name: Any) -> Any:
    """JAX's ``lax.axis_index``: the position of this example along the named mapped axis."""
    raise unbound_axis("axis_index", axis_name)


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """JAX's ``lax.ppermute``: ``perm`` is a sequence of (source, destination) pairs of positions
    along the named mapped axis; each destination gets the source's ``x``, a position no pair sends
    to gets zeros."""
    raise unbound_axis("ppermute", axis_name)


def check_perm(perm: Any, n: int) -> list[tuple[int, int]]:
    """``ppermute``'s ``perm`` as (source, destination) pairs of positions below ``n``, each source
    and each destination at most once (else an ``ArgumentError``)."""
    from .core import ArgumentError

    try:
        pairs = [(int(s), int(d)) for s, d in perm]
    except (TypeError, ValueError):
        raise ArgumentError(f"ppermute: perm must be a sequence of (source, destination) pairs, not {perm!r}",
                            hint="e.g. [(0, 1), (1, 2), (2, 0)]") from None
    for s, d in pairs:
        if not (0 <= s < n and 0 <= d < n):
            raise ArgumentError(f"ppermute: the pair {(s, d)} names a position outside the axis of size {n}",
                                hint=f"positions go from 0 to {n - 1}")
    for k, what in ((0, "source"), (1, "destination")):
        seen = [p[k] for p in pairs]
        if len(set(seen)) != len(seen):
            raise ArgumentError(f"ppermute: perm {perm!r} has a {what} twice",
                                hint="each position sends at most once and receives at most once")
    return pairs
