"""NumPy-level helpers that generated derivative source calls.

Plain NumPy-style Python with static control flow on shapes only: they run as they are under NumPy
(``srcjax.numpy_function``), and srcjax transpiles them like any user helper, so derivatives of derivatives work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import (
    branch_guard,
    complex_adjoint,
    conv_adjoint,
    jacobian_adjoint,
    linalg_adjoint,
    loop_adjoint,
    repeat_adjoint,  # (own files)
)
from .collective_trees import inverse_pairs  # noqa: F401  (ppermute's transpose: derivative code imports it)
from .complex_adjoint import abs_bar
from .construction import (  # noqa: F401  (generated derivative code imports them from here)
    cross_bar,
    diagonal_bar,
    kron_bar,
    linspace_bar,
    meshgrid_bars,
    meshgrid_dots,
    move_bar,
)
from .core import index_params
from .einsum_adjoint import einsum_jvp, einsum_terms  # noqa: F401  (generated derivative code imports them)
from .elementwise_adjoint import (  # noqa: F401  (generated derivative code imports them from here)
    abs_share,
    clip_share,
    logaddexp_weight,
    max_share,
    sinc_slope,
)
from .in_place_cast import in_place, rebound_refused  # noqa: F401  (`w += m` in generated source: in_place(w, add))
from .index_writes import clamped, cut, dropping, index_lands, padded, winning_writes  # noqa: F401  (index_update's, index_add's cotangents of a value: derivative code imports them)
from .lax import conv_general_dilated, index_update, with_sharding_constraint  # noqa: F401  (derivative code imports them)
from .linalg_adjoint import spectral_norm_bar  # (norm_bar's matrix orders 2, -2 and 'nuc')
from .order_stats import (  # noqa: F401  (generated derivative code imports them from here)
    order_stat_bar,
    order_stat_jvp,
    partition_bar,
    partition_jvp,
    sort_bar,
    sort_jvp,
)
from .pytree import (
    by_leaves,
    from_leaves,
    is_tree,
    item_keys,
    leaves_like,
    tree_get,
    tree_has,
    tree_like,
    tree_map,
    tree_set,
    tree_without,
)
from .tape_names import (  # noqa: F401  (the names of derivative code's saved lists: read here across srcjax)
    SAVED_LIST_NAME,
    TAPE_NAME,
    TAPE_PREFIX,
    is_saved_list_name,
    is_tape_name,
)
from .weak_arrays import WeakArray, broadcast_weak, weak

for _mod, _names in ((linalg_adjoint, linalg_adjoint.LINALG_HELPERS), (branch_guard, branch_guard.BRANCH_HELPERS),
                     (complex_adjoint, complex_adjoint.COMPLEX_HELPERS), (loop_adjoint, loop_adjoint.LOOP_HELPERS),
                     (repeat_adjoint, repeat_adjoint.REPEAT_HELPERS),
                     (jacobian_adjoint, jacobian_adjoint.JACOBIAN_HELPERS), (conv_adjoint, conv_adjoint.CONV_HELPERS)):
    globals().update({_n: getattr(_mod, _n) for _n in _names})


class _Unset:
    """The value of a name on a branch of an ``if`` on data that does not compute it.

    Generated derivative code saves a loop iteration's values for the adjoint sweep; a name computed on one branch
    only gets ``UNSET`` on the others, and the adjoint reads it only under the same condition. Names the saved
    values need before a loop first binds them are declared ``UNSET`` at the top of the function. Under NumPy it is
    this object (any use but an item read or a sum fails loudly); compiled, it joins the other branch's value as
    zeros of the same shape and dtype.

    It is the one marker of "no value on this path" in generated source (``None`` is only ever a user's value).
    The specializer's compile-time counterpart is ``lower.values.Undefined``: a name unbound, or ``UNSET``, on
    some paths of control flow on data, with the conditions under which it may still be read.
    """

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __getitem__(self, key: Any) -> _Unset:
        """``UNSET`` itself: an item of a value no path computed (``vmap`` joins containers item by item: the item
        of the branch that left it UNSET joins the other's, as the whole would; not iterable: ``__iter__``)."""
        return self

    def __iter__(self) -> Any:  # (else Python iterates by __getitem__ forever: list(UNSET) took all memory)
        raise TypeError("UNSET (a value no path computed) is not iterable")

    __array_ufunc__ = None  # (``array + UNSET`` is ``UNSET.__radd__``, not an object array)

    def __add__(self, other: Any) -> Any:
        """``other``: a cotangent summed with that of a value no path computed (reverse over reverse: the
        cotangent of a tape row's slot that this iteration's branch left UNSET adds nothing, as compiled,
        where UNSET joins as zeros)."""
        return other

    __radd__ = __add__

    def __reduce__(self) -> str:
        return "UNSET"


UNSET = _Unset()

__all__ = [  # what generated derivative source imports (transforms/anf.py: ADJOINT_IMPORTS)
    "unbroadcast", "index_update", "index_cleared", "with_sharding_constraint", "broadcast_like", "zeros_like",
    "ones_like", "expand_reduced", "reduced_size", "cumsum_bar", "matmul_lhs_bar", "matmul_rhs_bar", "index_add",
    "max_bar", "var_bar", "std_bar", "norm_bar", "norm_axes", "inverse_perm", "inverse_pairs", "max_share",
    "abs_share", "clip_share", "prod_others", "ravel_bar", "tensordot_axes", "tensordot_lhs_bar", "tensordot_rhs_bar",
    "dot_lhs_bar", "dot_rhs_bar", "inner_lhs_bar", "inner_rhs_bar", "einsum_terms", "einsum_term_bar", "einsum_bars",
    "einsum_jvp", "axis_slice", "tile_bar", *repeat_adjoint.REPEAT_HELPERS, "atleast_dots", "atleast_bars",
    "join_bars", "rows_bars", "seq_piece", "seq_pieces", "split_bounds", "split_bar", "UNSET", "tree_add",
    "from_leaves", "leaves_like", "pack_like", "is_tree", "by_leaves", "tree_get", "index_key", "item_keys",
    *loop_adjoint.LOOP_HELPERS, "array_bar", "array_dot", "logaddexp_weight", "sinc_slope", "cumprod_terms",
    "cumprod_jvp", "cumprod_bar", "diff_bar", "trace_bar", "diag_bar", "negated", "take_bar", "take_along_axis_bar",
    "is_float", "multi_dot_jvp", "multi_dot_bars", "chain_dot", "sort_jvp", "sort_bar", "partition_jvp",
    "partition_bar", "order_stat_jvp", "order_stat_bar", "diagonal_bar", "move_bar", "kron_bar", "cross_bar",
    "meshgrid_dots", "meshgrid_bars", *linalg_adjoint.LINALG_HELPERS, *complex_adjoint.COMPLEX_HELPERS,
    "conv_general_dilated", *conv_adjoint.CONV_HELPERS, "winning_writes", "index_lands",
    *branch_guard.BRANCH_HELPERS, *jacobian_adjoint.JACOBIAN_HELPERS, "in_place", "linspace_bar",
]

def typed_like(g: Any, x: Any) -> Any:
    """``g`` in ``x``'s dtype when both are floating point (else ``g``).

    A cotangent has its primal's dtype and a tangent its result's, as in JAX: the adjoint of an
    implicit upcast (``w32 * np.arange(3)`` is float64) is a downcast. The shape moves below
    (``unbroadcast``, ``broadcast_like``, ``expand_reduced``: primitives, whose lowerings cast the
    same way) apply it, so a derivative rule that ends in one of them keeps dtypes; generated
    source calls those, never this."""
    dt, dg = _dtype(x), _dtype(g)
    if dg != dt and _is_float_dtype(dg) and _is_float_dtype(dt):
        out = np.asarray(np.real(g) if dt.kind != "c" else g, dtype=dt)  # JAX: a real primal, the real part
        if _is_weak(x):  # a Python number's: weakly typed as it is (joins f32 as f32)
            return out.item() if out.ndim == 0 else weak(out)
        return out
    return g


def _is_weak(v: Any) -> bool:
    """A Python number (not a NumPy scalar) or its repeat along a batch axis (:class:`WeakArray`)."""
    return isinstance(v, WeakArray) or (isinstance(v, (int, float, complex)) and not isinstance(v, np.generic))


def _dtype(v: Any) -> np.dtype:
    return np.asarray(v).dtype if isinstance(v, (list, tuple, str, range)) else np.result_type(v)  # (str: an option)


def _is_float_dtype(dt: np.dtype) -> bool:  # (complex included: what carries a derivative)
    return dt.kind in "fc" or dt.name == "bfloat16"


def unbroadcast(g: Any, x: Any) -> Any:
    """Sum ``g`` over the axes along which ``x`` was broadcast: the result has ``x``'s shape and,
    both being floating point, ``x``'s dtype (``g`` is the cotangent of a result ``x`` took part in)."""
    if is_tree(g):  # a container's cotangent (e.g. of index_add's g): already shaped like x
        return g
    if g is None:  # a leaf without a derivative (a counter's, in a loop's carry): none, as the lowering's
        return None
    g = typed_like(g, x)
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i in range(len(shape)) if shape[i] == 1 and gshape[lead + i] != 1)
    return np.reshape(np.sum(g, axis=axes), shape)


def broadcast_like(t: Any, y: Any) -> Any:
    """``t`` broadcast to the shape of ``y`` and, both being floating point, in ``y``'s dtype (the
    tangent of a result ``y`` from the tangent of one of its operands)."""
    if is_tree(t):
        return t
    t = typed_like(t, y)
    if np.shape(t) == np.shape(y):
        return t
    return broadcast_weak(t, np.shape(y))  # (np.broadcast_to; a Python number's repeat weakly typed, as in XLA)


def zeros_like(x: Any) -> Any:
    """A zero cotangent/tangent for ``x`` (float zeros for integer ``x``); UNSET stays UNSET. For a container: the
    same container with float zeros at the floating-point leaves and ``None`` at the others (no derivative)."""
    if x is UNSET:
        return UNSET
    if is_tree(x):
        return tree_map(zero_leaf, x)
    if x is Ellipsis or isinstance(x, (range, str, slice)):  # a saved option (ord="fro"), index (np.s_[1:]), or a
        return [None] * len(x) if isinstance(x, range) else None  # loop's range: one None per item (jvp zips them)
    if not isinstance(x, (np.ndarray, np.generic)) and isinstance(x, (float, int)):
        return 0.0  # a Python number's (weakly typed) zero: weak, as JAX's (`s = 1.0` carried with float32 values)
    return np.zeros(np.shape(x), dtype=np.result_type(x, 0.0))


@index_params("k")
def index_key(k: Any) -> Any:
    """``k``, an index (a key, integer arrays): derivatives take it as a constant. Reverse mode binds a
    helper's index parameters with it where it writes the helper out in a branch on data
    (``transforms/inline_calls.py``), so that an index carried by a loop with differentiated values
    stays an index there too (:func:`srcjax.core.index_params`)."""
    return k


def is_float(x: Any) -> bool:
    """Whether ``x`` (an array or a number) is floating point."""
    dt = np.result_type(x)
    return dt.kind == "f" or dt.name == "bfloat16"


def has_derivative(x: Any) -> bool:
    """Whether a container leaf carries a derivative: floating point (not an integer, a boolean,
    a string, None, or an index: a slice, ``...``, a range)."""
    if x is None or x is Ellipsis or isinstance(x, (str, slice, range)):
        return False
    return is_float(x) or np.result_type(x).kind == "c"


def zero_leaf(x: Any) -> Any:
    """The zero cotangent of a leaf inside a container: None for a leaf without a derivative."""
    return zeros_like(x) if has_derivative(x) else None


def add_leaf(a: Any, b: Any) -> Any:
    """``a + b`` for two cotangents of one leaf; None (no derivative) absorbs the other."""
    return None if a is None or b is None else a + b


def rebound(x: Any, new: Any, axes: int = 0, alias: str = "", rank: int = 1) -> Any:  # `xs += [v]`: bound again
    kind = "list" if isinstance(x, list) else "dict" if isinstance(x, dict) else ""  # (in_place_cast: refusals)
    return rebound_refused(tree_map(np.ndim, x) if alias and rank > 1 else 0, kind, axes, alias, rank) or new


def first_of(a: Any, b: Any) -> Any:  # what unbroadcast/broadcast_like give for a container's cotangent: `a`
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):  # (`ws + ws`: was silent; two ifs: vmap of
        if len(a) != len(b):  # vmap batches an `if` whose test is static, not `len(a) != batch_len(b)` in an `and`)
            raise ValueError("derivatives of joining lists (`a + b`) are not followed yet: write the list out, [a, b, c]")  # noqa: E501
    return a


def sum_leaf(a: Any, b: Any) -> Any:
    """``a + b`` for two cotangents of one value; None adds nothing (an int held as a container's leaf)."""
    return b if a is None else a if b is None else a + b


def tree_add(a: Any, b: Any) -> Any:
    """The sum of two cotangents of the same value: ``a + b``, leaf by leaf for containers (None:
    :func:`sum_leaf`, never None beside a number, which the adjoint may add with ``+``)."""
    return tree_map(sum_leaf, a, b) if is_tree(a) else sum_leaf(a, b)


def pack_like(x: Any, items: Any) -> Any:
    """One cotangent per element of ``x`` (``a, b = x``; a loop over ``x``) packed like ``x``: the
    same kind of container, or ``np.stack(items)`` for an array. Elements of a container that are
    not floating point get None."""
    if is_tree(x):
        return tree_like(x, [tree_map(mask_leaf, x[i], items[i]) for i in range(len(items))])
    rows = []
    for i in range(len(items)):  # `(x1, y1), (x2, y2) = pts`: nested targets are rows of rows
        rows.append(pack_like(x[i], items[i]) if isinstance(items[i], (tuple, list)) else items[i])
    return np.stack(rows)


def mask_leaf(x: Any, g: Any) -> Any:
    """``g``, the cotangent of the container leaf ``x``; None where ``x`` carries no derivative."""
    return None if g is None or not has_derivative(x) else g


def index_cleared(g: Any, x: Any, key: Any) -> Any:
    """The cotangent of ``x`` in ``index_update(x, key, v)``: ``g`` with ``g[key]`` zero (the item was replaced, so
    the old one gets no derivative); for a container ``x``, zeros like the replaced item, and no item at all where
    ``x`` had none (``out["new"] = v`` adds an item: ``x``'s cotangent has ``x``'s structure)."""
    if is_tree(x):
        return tree_cleared(g, x, key)
    return index_update(g, key, 0.0)


def tree_cleared(g: Any, x: Any, key: Any) -> Any:
    """:func:`index_cleared` of a container ``x``."""
    if not tree_has(x, key):
        return tree_without(g, key)
    return tree_set(g, key, zeros_like(tree_get(x, key)))


def tree_index_add(z: Any, key: Any, g: Any, mode: str = "drop") -> Any:  # (mode: an array's, as index_add)
    """``index_add`` into a container: ``z`` with ``g`` added to ``z[key]`` (a copy; for the
    cotangent of ``z[key]``, ``z[1:]`` or the NamedTuple field ``z.w``)."""
    old = tree_get(z, key)  # (a leaf without derivative stays None: add_leaf)
    return tree_set(z, key, tree_map(add_leaf, old, g) if is_tree(old) else add_leaf(old, g))


def ones_like(x: Any) -> Any:
    return np.ones(np.shape(x), dtype=np.result_type(x, 0.0))


def reduce_axes(a: Any, axis: Any) -> tuple[int, ...]:
    nd = np.ndim(a)
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, int):
        return (axis % nd,)
    return tuple(sorted(ax % nd for ax in axis))


def cumsum_bar(g: Any, a: Any, axis: Any) -> Any:
    """Cotangent of ``a`` in ``np.cumsum(a, axis)``: the cumulative sum from the end (``axis=None``:
    over the flattened array, reshaped back)."""
    ax = 0 if axis is None else axis
    return unbroadcast(np.reshape(np.flip(np.cumsum(np.flip(g, ax), ax), ax), np.shape(a)), a)


def expand_reduced(g: Any, a: Any, axis: Any, keepdims: Any) -> Any:
    """Undo a reduction's shape: ``g`` (reduced) broadcast back to ``a``'s shape, in ``a``'s dtype
    when both are floating point (``np.sum(a, dtype=np.float64)``'s cotangent for a float32 ``a``)."""
    g = typed_like(g, a)
    if not keepdims:
        g = np.reshape(g, tuple(1 if i in reduce_axes(a, axis) else d for i, d in enumerate(np.shape(a))))
    return np.broadcast_to(g, np.shape(a))


def reduced_size(a: Any, axis: Any) -> int:
    n = 1
    for ax in reduce_axes(a, axis):
        n = n * np.shape(a)[ax]
    return n


def matmul_lhs_bar(g: Any, x1: Any, x2: Any) -> Any:
    """Cotangent of ``x1`` in ``x1 @ x2`` for every 1-D/2-D/batched case."""
    if np.ndim(x1) == 1 and np.ndim(x2) == 1:
        return unbroadcast(g * x2, x1)
    if np.ndim(x2) == 1:
        return unbroadcast(np.expand_dims(g, -1) * x2, x1)
    if np.ndim(x1) == 1:
        return unbroadcast(np.squeeze(np.expand_dims(g, -2) @ np.swapaxes(x2, -1, -2), -2), x1)
    return unbroadcast(g @ np.swapaxes(x2, -1, -2), x1)


def matmul_rhs_bar(g: Any, x1: Any, x2: Any) -> Any:
    """Cotangent of ``x2`` in ``x1 @ x2``."""
    if np.ndim(x1) == 1 and np.ndim(x2) == 1:
        return unbroadcast(g * x1, x2)
    if np.ndim(x1) == 1:
        return unbroadcast(np.expand_dims(x1, -1) * np.expand_dims(g, -2), x2)
    if np.ndim(x2) == 1:
        return unbroadcast(np.squeeze(np.swapaxes(x1, -1, -2) @ np.expand_dims(g, -1), -1), x2)
    return unbroadcast(np.swapaxes(x1, -1, -2) @ g, x2)


def index_add(z: Any, key: Any, g: Any, mode: str = "drop") -> Any:
    """``z`` with ``g`` added at ``z[key]``: a functional ``z[key] += g``; an index out of range adds nothing
    (``mode="drop"``, a write's) or adds at the clamped place (``"clip"``: a read's transpose, index_writes.py).
    A primitive (``srcjax.primitives.ad_prims``): this body is its NumPy reference. For a
    container ``z`` it is :func:`tree_index_add`."""
    if is_tree(z):
        return tree_index_add(z, key, g)
    axes, key = dropping(np.shape(z), key) if mode == "drop" else ((), clamped(np.shape(z), key))
    out = padded(np.array(z, dtype=np.result_type(z, g), copy=True), axes)
    # (repeated indices accumulate; g broadcast first: NumPy 2.4's ufunc.at drops some broadcasting g itself)
    np.add.at(out, key, np.broadcast_to(g, np.shape(out[key])))
    return cut(out, np.shape(z)) if axes else out


def max_bar(g: Any, a: Any, y: Any, axis: Any, keepdims: Any, initial: Any = None) -> Any:
    """Cotangent of ``a`` in ``y = max(a, axis)`` (or min): split equally among the elements equal
    to the result, as JAX does; an ``initial`` equal to the result takes its share (and an ``initial``
    beyond every element takes it all: zero cotangent). A NaN result (no element equals it): NaN, as JAX."""
    yk = expand_reduced(y, a, axis, keepdims)
    mask = (a == yk).astype(np.result_type(g))
    count = np.sum(mask, axis=axis, keepdims=keepdims)
    if initial is not None:
        count = count + (y == initial)
    return expand_reduced(g / count, a, axis, keepdims) * mask  # (= g * mask / count; one division per result)


def var_bar(g: Any, a: Any, axis: Any, ddof: Any, keepdims: Any) -> Any:
    n = reduced_size(a, axis)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return expand_reduced(g, a, axis, keepdims) * np.conj(centered) * (2.0 / (n - ddof))  # (complex: |a - mean|**2)


def std_bar(g: Any, a: Any, y: Any, axis: Any, ddof: Any, keepdims: Any) -> Any:
    return var_bar(g / (2.0 * y), a, axis, ddof, keepdims)


@index_params("ndim", "axis")
def norm_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    """The axes ``np.linalg.norm`` reduces in an ``ndim``-D array (one: a vector norm, two: a matrix norm, all for
    ``axis=None``). Indices only, even an axis read from a tape (a second derivative takes it as a constant)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis % ndim,)
    return tuple(ax % ndim for ax in axis)


def norm_bar(g: Any, x: Any, y: Any, axis: Any, keepdims: Any, ord: Any = None) -> Any:
    """Cotangent of ``x`` in ``y = np.linalg.norm(x, ord, axis, keepdims)``, for every order srcjax supports, with
    JAX's definitions (``sum(abs(x))``, ``max(abs(x))``, ...): abs has derivative 1 at 0, ties of max/min share
    equally. One deliberate difference: the 2-norm (and Frobenius) gradient at x == 0 is 0 (JAX: nan)."""
    axes = norm_axes(np.ndim(x), axis)
    gk = expand_reduced(g, x, axes, keepdims)
    yk = expand_reduced(y, x, axes, keepdims)
    if ord is None or ord == "fro" or (ord == 2 and len(axes) == 1):
        return gk * np.conj(x) / np.where(yk == 0, 1.0, yk)
    if isinstance(ord, str) and ord == "nuc" or not isinstance(ord, str) and ord in (2, -2) and len(axes) == 2:
        return spectral_norm_bar(gk, x, axes, ord)
    ax = np.abs(x)
    if len(axes) == 1:
        if ord == 1:
            return abs_bar(gk, x)
        if ord == np.inf or ord == -np.inf:
            return abs_share(max_bar(g, ax, y, axes, keepdims), x)
        if ord == 0:
            return zeros_like(gk)
        return abs_bar(gk * ax ** (ord - 1) / yk ** (ord - 1), x)
    row, col = axes
    if ord == 1 or ord == -1:  # max/min over columns of the column sums
        s = np.sum(ax, axis=row, keepdims=True)
        return abs_share(np.broadcast_to(max_bar(g, s, y, col, keepdims), np.shape(x)), x)
    s = np.sum(ax, axis=col, keepdims=True)  # inf / -inf: max/min over rows of the row sums
    return abs_share(np.broadcast_to(max_bar(g, s, y, row, keepdims), np.shape(x)), x)


def inverse_perm(ndim: int, axes: Any) -> Any:
    """The permutation undoing ``np.transpose(a, axes)`` for an ``ndim``-D ``a``. Static: it takes
    ``np.ndim(a)``, not ``a`` (a helper given an active array counts as active, and its result
    would get a tangent)."""
    if axes is None:
        return None
    perm = [ax % ndim for ax in axes]
    return tuple(perm.index(i) for i in range(ndim))


# -- reductions ----------------------------------------------------------------------------------

def prod_others(a: Any, axis: Any, initial: Any = None) -> Any:
    """For each element of ``a``, the product of the other elements of its reduction group (times
    ``initial``): ``d prod(a, axis, initial=initial) / d a``, as jax's rule: the product of the elements before
    it times the product of those after it (exclusive cumulative products), exact when ``a`` holds zeros, and so
    are its own derivatives (``prod / a`` with zeros masked was right, but constant where a zero made it 0)."""
    nd = np.ndim(a)
    axes = reduce_axes(a, axis)
    perm = tuple(k for k in range(nd) if k not in axes) + axes
    t = np.transpose(a, perm)
    f = np.reshape(t, np.shape(t)[: nd - len(axes)] + (reduced_size(a, axis),))
    one = np.ones_like(f[..., :1])
    before = np.cumprod(np.concatenate([one, f[..., :-1]], axis=-1), axis=-1)
    after = np.flip(np.cumprod(np.flip(np.concatenate([f[..., 1:], one], axis=-1), axis=-1), axis=-1), axis=-1)
    p = np.transpose(np.reshape(before * after, np.shape(t)), inverse_perm(nd, perm))
    return p if initial is None else p * initial


def ravel_bar(g: Any, a: Any, order: Any) -> Any:
    """Cotangent of ``a`` in ``np.ravel(a, order)``."""
    if order == "F":
        return np.transpose(np.reshape(g, tuple(reversed(np.shape(a)))))
    return np.reshape(g, np.shape(a))


def cumprod_terms(a: Any, axis: Any) -> Any:
    """``D[j, ..., i, ...] = d cumprod(a, axis)[i] / d a[j]``: a new leading axis ``j`` (``a``
    flattened for ``axis=None``). The product of ``a[0..i]`` with ``a[j]`` replaced by 1, for
    ``j <= i``; 0 for ``j > i``. Exact with zeros (no division); quadratic in the axis' size."""
    if axis is None:
        a = np.ravel(a)
    ax = 0 if axis is None else axis % np.ndim(a)
    n = np.shape(a)[ax]
    along = tuple([n if k == ax else 1 for k in range(np.ndim(a))])
    j = np.reshape(np.arange(n), (n,) + (1,) * np.ndim(a))
    i = np.reshape(np.arange(n), (1,) + along)
    c = np.cumprod(np.where(j == i, 1.0, a), axis=ax + 1)
    return np.where(i >= j, c, 0.0)


def cumprod_jvp(t: Any, a: Any, axis: Any) -> Any:
    """The tangent of ``np.cumprod(a, axis)`` for the tangent ``t`` of ``a``."""
    if axis is None:
        t = np.ravel(t)
    ax = 0 if axis is None else axis % np.ndim(a)
    tj = np.expand_dims(np.moveaxis(t, ax, 0), ax + 1)  # j first, then a's axes (size 1 at i)
    return np.sum(tj * cumprod_terms(a, axis), axis=0)


def cumprod_bar(g: Any, a: Any, axis: Any) -> Any:
    """The cotangent of ``a`` in ``np.cumprod(a, axis)``."""
    ax = 0 if axis is None else axis % np.ndim(a)
    r = np.sum(np.expand_dims(g, 0) * cumprod_terms(a, axis), axis=ax + 1)  # (j, the other axes)
    return unbroadcast(np.reshape(np.moveaxis(r, 0, ax), np.shape(a)), a)


def diff_bar(g: Any, a: Any, n: Any, axis: Any) -> Any:
    """Cotangent of ``a`` in ``np.diff(a, n, axis)``: ``n`` times the transpose of one difference
    (``[0, g] - [g, 0]`` along the axis)."""
    ax = axis % np.ndim(a)
    if n >= np.shape(a)[ax]:
        return zeros_like(a)
    for _ in range(n):
        z = np.zeros_like(g[axis_slice(np.ndim(g), ax, 0, 1)])  # (no list built from g: jacfwd(jacrev) of it)
        g = np.concatenate([z, g], axis=ax) - np.concatenate([g, z], axis=ax)
    return g


def trace_bar(g: Any, a: Any, offset: Any, axis1: Any, axis2: Any) -> Any:
    """Cotangent of ``a`` in ``np.trace(a, offset, axis1, axis2)``: ``g`` on that diagonal."""
    nd = np.ndim(a)
    shape = np.shape(a)
    i, j = axis1 % nd, axis2 % nd
    eye = np.eye(shape[i], shape[j], k=offset, dtype=bool)
    if i > j:
        eye = np.transpose(eye)
    mask = np.reshape(eye, tuple([shape[k] if k == i or k == j else 1 for k in range(nd)]))
    return unbroadcast(np.where(mask, np.expand_dims(g, (min(i, j), max(i, j))), 0.0), a)


def diag_bar(g: Any, v: Any, k: Any) -> Any:
    """Cotangent of ``v`` in ``np.diag(v, k)``: ``g``'s diagonal (``v`` 1-D) or ``g`` on a ``v``-shaped one (2-D)."""
    if np.ndim(v) == 1:
        return np.diag(g, k)
    r, c = np.shape(v)
    n = r if k >= 0 else c  # the diagonal runs down the rows (k >= 0) or along the columns
    gp = np.concatenate([g, np.zeros(n - np.shape(g)[0], dtype=np.result_type(g))])
    if k >= 0:
        gp = np.reshape(gp, (n, 1))
    return np.where(np.eye(r, c, k=k, dtype=bool), gp, 0.0)


def negated(shift: Any) -> Any:
    """``-shift`` for an int or a tuple of ints (static: ``np.roll``'s inverse shift)."""
    if isinstance(shift, (tuple, list)):
        return tuple([-s for s in shift])
    return -shift


@index_params("indices", "axis")  # (a second derivative takes them as constants)
def take_bar(g: Any, a: Any, indices: Any, axis: Any) -> Any:
    """Cotangent of ``a`` in ``np.take(a, indices, axis)``: ``g`` scatter-added at the indices (clamped, as read)."""
    if axis is None:
        return np.reshape(index_add(np.zeros(np.size(a), dtype=np.result_type(g)), indices, g, "clip"), np.shape(a))
    ax, m = axis % np.ndim(a), np.ndim(indices)  # (the axis moved first: a key of the indices alone batches)
    g = np.moveaxis(g, tuple(range(ax, ax + m)), tuple(range(m)))
    return np.moveaxis(index_add(zeros_like(np.moveaxis(a, ax, 0)), indices, g, "clip"), 0, ax)


@index_params("indices", "axis")
def take_along_axis_bar(g: Any, arr: Any, indices: Any, axis: Any) -> Any:
    """Cotangent of ``arr`` in ``np.take_along_axis(arr, indices, axis)``: ``g`` scatter-added at ``arr[i0, ...,
    indices, ...]`` (an ``arange`` on every other axis); the axes ``arr`` had broadcast along are summed."""
    if axis is None:
        return np.reshape(index_add(np.zeros(np.size(arr), dtype=np.result_type(g)), indices, g, "clip"),
                          np.shape(arr))
    nd = np.ndim(arr)
    ax = axis % nd
    shape = np.shape(arr)
    key: tuple[Any, ...] = ()
    for k in range(nd):
        if k == ax:
            key = key + (indices,)
        else:
            key = key + (np.reshape(np.arange(shape[k]), tuple([shape[k] if q == k else 1 for q in range(nd)])),)
    return index_add(zeros_like(arr), key, g, "clip")  # (a read's: clamped, as the gather)


# -- contractions --------------------------------------------------------------------------------

def tensordot_axes(na: int, nb: int, axes: Any) -> tuple[list[int], list[int]]:
    """The contracted axes ``(of a, of b)`` of ``np.tensordot(a, b, axes)`` for operands of
    ``na`` and ``nb`` dimensions, normalized (static)."""
    if isinstance(axes, int):
        return list(range(na - axes, na)), list(range(axes))
    xa, xb = axes
    la = [xa] if isinstance(xa, int) else list(xa)
    lb = [xb] if isinstance(xb, int) else list(xb)
    return [i % na for i in la], [i % nb for i in lb]


def tensordot_lhs_bar(g: Any, a: Any, b: Any, axes: Any) -> Any:
    """Cotangent of ``a`` in ``np.tensordot(a, b, axes)``: ``g`` contracted with ``b``'s free axes."""
    ca, cb = tensordot_axes(np.ndim(a), np.ndim(b), axes)
    fa = [i for i in range(np.ndim(a)) if i not in ca]
    fb = [i for i in range(np.ndim(b)) if i not in cb]
    r = np.tensordot(g, b, axes=(list(range(len(fa), np.ndim(g))), fb))
    # r's axes: a's free axes, then b's contracted axes in increasing order
    scb = sorted(cb)
    perm = tuple(fa.index(i) if i in fa else len(fa) + scb.index(cb[ca.index(i)]) for i in range(np.ndim(a)))
    if perm == tuple(range(np.ndim(a))):
        return unbroadcast(r, a)
    return unbroadcast(np.transpose(r, perm), a)


def tensordot_rhs_bar(g: Any, a: Any, b: Any, axes: Any) -> Any:
    """Cotangent of ``b`` in ``np.tensordot(a, b, axes)``."""
    ca, cb = tensordot_axes(np.ndim(a), np.ndim(b), axes)
    fa = [i for i in range(np.ndim(a)) if i not in ca]
    fb = [i for i in range(np.ndim(b)) if i not in cb]
    r = np.tensordot(a, g, axes=(fa, list(range(len(fa)))))
    # r's axes: a's contracted axes in increasing order, then b's free axes
    sca = sorted(ca)
    perm = tuple(len(ca) + fb.index(i) if i in fb else sca.index(ca[cb.index(i)]) for i in range(np.ndim(b)))
    if perm == tuple(range(np.ndim(b))):
        return unbroadcast(r, b)
    return unbroadcast(np.transpose(r, perm), b)


def dot_lhs_bar(g: Any, a: Any, b: Any) -> Any:
    """Cotangent of ``a`` in ``np.dot(a, b)`` (scalar, matmul and N-D cases)."""
    if np.ndim(a) == 0:
        return unbroadcast(np.sum(g * b), a)
    if np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:
        return matmul_lhs_bar(g, a, b)
    return tensordot_lhs_bar(g, a, b, ([np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]))


def dot_rhs_bar(g: Any, a: Any, b: Any) -> Any:
    """Cotangent of ``b`` in ``np.dot(a, b)``."""
    if np.ndim(a) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(b) == 0:
        return unbroadcast(np.sum(g * a), b)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:
        return matmul_rhs_bar(g, a, b)
    return tensordot_rhs_bar(g, a, b, ([np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]))


def inner_lhs_bar(g: Any, a: Any, b: Any) -> Any:
    """Cotangent of ``a`` in ``np.inner(a, b)`` (contracts the last axes)."""
    if np.ndim(a) == 0:
        return unbroadcast(np.sum(g * b), a)
    if np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    return tensordot_lhs_bar(g, a, b, ([np.ndim(a) - 1], [np.ndim(b) - 1]))


def inner_rhs_bar(g: Any, a: Any, b: Any) -> Any:
    """Cotangent of ``b`` in ``np.inner(a, b)``."""
    if np.ndim(a) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(b) == 0:
        return unbroadcast(np.sum(g * a), b)
    return tensordot_rhs_bar(g, a, b, ([np.ndim(a) - 1], [np.ndim(b) - 1]))


def einsum_term_bar(g: Any, out: str, rest: Any, others: Any, t: str, x: Any) -> Any:
    """Cotangent of the einsum operand ``x`` with subscripts ``t``: the output
    cotangent ``g`` (subscripts ``out``) contracted with the ``others`` operands (subscripts
    ``rest``). Indices only ``t`` has are broadcast back; a repeated index (a diagonal) puts
    the result on that diagonal."""
    shape = np.shape(x)
    u = "".join([c for i, c in enumerate(t) if c not in t[:i]])
    avail = out + "".join(rest)
    kept = "".join([c for c in u if c in avail])
    spec = ",".join([out] + list(rest)) + "->" + kept
    if len(others) == 0:
        r = np.einsum(spec, g)
    elif len(others) == 1:
        (b,) = others
        r = np.einsum(spec, g, b)
    elif len(others) == 2:
        b, c = others
        r = np.einsum(spec, g, b, c)
    else:
        b, c, d = others
        r = np.einsum(spec, g, b, c, d)
    for i in range(len(u)):
        if u[i] not in kept:
            r = np.expand_dims(r, i)
    r = np.broadcast_to(r, tuple(shape[t.index(c)] for c in u))
    for i in range(len(t)):
        if t[i] in t[:i]:
            j = t.index(t[i])
            mask = np.reshape(np.eye(shape[i], dtype=np.result_type(r)),
                              tuple(shape[i] if q == i or q == j else 1 for q in range(np.ndim(r) + 1)))
            r = np.expand_dims(r, i) * mask
    return unbroadcast(r, x)


def einsum_bars(g: Any, subscripts: Any, operands: Any) -> Any:
    """The cotangents of the einsum operands (a tuple, one per operand; one to four operands)."""
    terms, out = einsum_terms(subscripts, [np.shape(o) for o in operands])
    if len(operands) == 1:
        (a,) = operands
        return (einsum_term_bar(g, out, [], (), terms[0], a),)
    if len(operands) == 2:
        a, b = operands
        return (einsum_term_bar(g, out, [terms[1]], (b,), terms[0], a),
                einsum_term_bar(g, out, [terms[0]], (a,), terms[1], b))
    if len(operands) == 3:
        a, b, c = operands
        ta, tb, tc = terms
        return (einsum_term_bar(g, out, [tb, tc], (b, c), ta, a),
                einsum_term_bar(g, out, [ta, tc], (a, c), tb, b),
                einsum_term_bar(g, out, [ta, tb], (a, b), tc, c))
    if len(operands) == 4:
        a, b, c, d = operands
        ta, tb, tc, td = terms
        return (einsum_term_bar(g, out, [tb, tc, td], (b, c, d), ta, a),
                einsum_term_bar(g, out, [ta, tc, td], (a, c, d), tb, b),
                einsum_term_bar(g, out, [ta, tb, td], (a, b, d), tc, c),
                einsum_term_bar(g, out, [ta, tb, tc], (a, b, c), td, d))
    raise NotImplementedError("einsum derivatives support at most 4 operands")


# -- shapes ---------------------------------------------------------------------------------------

def axis_slice(ndim: int, axis: int, lo: int, hi: int) -> tuple[Any, ...]:
    """The index ``[:, ..., lo:hi, ...]`` selecting ``lo:hi`` along ``axis`` (static)."""
    return tuple(slice(lo, hi) if i == axis else slice(None) for i in range(ndim))


def tile_bar(g: Any, A: Any, reps: Any) -> Any:
    """Cotangent of ``A`` in ``np.tile(A, reps)``: the tiles summed."""
    tup = (reps,) if isinstance(reps, int) else tuple(reps)
    shape = np.shape(A)
    n = max(len(tup), len(shape))
    padded = (1,) * (n - len(shape)) + tuple(shape)
    tup = (1,) * (n - len(tup)) + tup
    inter = tuple([tup[i // 2] if i % 2 == 0 else padded[i // 2] for i in range(2 * n)])  # (t0, s0, t1, s1, ...)
    return np.reshape(np.sum(np.reshape(g, inter), axis=tuple(range(0, 2 * n, 2))), shape)


def seq_piece(g: Any, seq: Any, axis: Any, kind: str, k: int) -> Any:
    """Piece ``k`` of a sequence rule: the cotangent of operand ``k`` of a join (``kind``:
    concatenate, stack, hstack, vstack) or of ``np.atleast_<n>d`` (``atleast``), or the tangent
    of result ``k`` of ``np.atleast_<axis>d`` (``atleast_dot``: ``g`` is the tangents)."""
    if kind == "atleast_dot":
        if axis == 1:
            return np.atleast_1d(g[k])
        if axis == 2:
            return np.atleast_2d(g[k])
        return np.atleast_3d(g[k])
    if kind == "atleast":
        if len(seq) == 1:
            return np.reshape(g, np.shape(seq[0]))
        return np.reshape(g[k], np.shape(seq[k]))
    if kind == "stack":
        return unbroadcast(g[(slice(None),) * (axis % np.ndim(g)) + (k,)], seq[k])
    shapes = [np.shape(a) for a in seq]
    if kind == "concatenate" and axis is None:
        ax = 0
        sizes = [np.size(a) for a in seq]
    elif kind == "concatenate":
        ax = axis % np.ndim(g)
        sizes = [sh[ax] for sh in shapes]
    elif kind == "hstack":  # operands made at least 1-D, joined on axis 0 (1-D) or 1
        ax = 0 if np.ndim(g) == 1 else 1
        sizes = [sh[ax] if len(sh) > 0 else 1 for sh in shapes]
    else:  # vstack: operands made at least 2-D ((n,) -> (1, n)), joined on axis 0
        ax = 0
        sizes = [sh[0] if len(sh) >= 2 else 1 for sh in shapes]
    lo = sum(sizes[:k])
    return unbroadcast(np.reshape(g[axis_slice(np.ndim(g), ax, lo, lo + sizes[k])], shapes[k]), seq[k])


def seq_pieces(g: Any, seq: Any, axis: Any, kind: str) -> Any:
    """``seq_piece`` for every element of ``seq``, as a tuple (a loop of appends, which the AD
    pass differentiates again: the Hessian of ``np.stack(items)``)."""
    pieces = []
    for k in range(len(seq)):
        pieces.append(seq_piece(g, seq, axis, kind, k))
    return tuple(pieces)


def array_bar(g: Any, a: Any) -> Any:
    """The cotangent of ``a`` in ``np.asarray(a)`` / ``np.array(a)``: ``g`` in ``a``'s shape and dtype; for a list
    or tuple of arrays (NumPy stacks them), its rows, one per element (``np.stack``'s rule)."""
    if isinstance(a, (list, tuple)):
        return pack_like(a, seq_pieces(g, a, 0, "stack"))  # (a list's cotangent is a list, as jax's)
    return unbroadcast(g, a)


def array_dot(t: Any, out: Any) -> Any:
    """The tangent of ``np.asarray(a)`` / ``np.array(a)`` from ``a``'s (a list's: its elements' tangents stacked)."""
    if isinstance(t, (list, tuple)):
        return broadcast_like(np.stack(t), out)
    return broadcast_like(t, out)


def atleast_dots(tangents: Any, n: int) -> Any:
    """The tangents of ``np.atleast_<n>d(*arys)``: an array for one operand, else a tuple."""
    if len(tangents) == 1:
        return seq_piece(tangents, tangents, n, "atleast_dot", 0)
    return seq_pieces(tangents, tangents, n, "atleast_dot")


def atleast_bars(g: Any, arys: Any) -> Any:
    """The cotangents of ``np.atleast_<n>d(*arys)``'s operands (``g``: one array, or one per operand)."""
    return seq_pieces(g, arys, None, "atleast")


def rows_bars(g: Any, arrays: Any, axis: Any, kind: str) -> Any:
    """:func:`join_bars` of operands that may be (nested) lists or tuples (NumPy makes them arrays): lists too."""
    made = []  # (a join other than np.stack: its pieces' shapes are those of the operands made arrays)
    for a in arrays:
        made.append(np.asarray(a) if kind != "stack" and isinstance(a, (list, tuple)) else a)
    bars = []
    for k in range(len(arrays)):
        if kind == "stack":
            piece = g[(slice(None),) * (axis % np.ndim(g)) + (k,)]
        else:
            piece = seq_piece(g, made, axis, kind, k)
        bars.append(pack_like(arrays[k], rows_bars(piece, arrays[k], 0, "stack"))  # (a list of lists: level by level)
                    if isinstance(arrays[k], (list, tuple)) else unbroadcast(piece, arrays[k]))
    return tuple(bars)


def join_bars(g: Any, arrays: Any, axis: Any, kind: str) -> Any:
    """The cotangents of the operands of a join (``kind``: concatenate, stack, hstack, vstack):
    slices of ``g``, one per operand, reshaped to its shape."""
    return seq_pieces(g, arrays, axis, kind)


def split_bounds(shape: Any, indices_or_sections: Any, axis: Any) -> tuple[int, list[tuple[int, int]]]:
    """(axis, [(start, stop) of each piece]) of ``np.split``/``np.array_split`` (static)."""
    ax = axis % len(shape)
    n = shape[ax]
    bounds = []
    if isinstance(indices_or_sections, (tuple, list)):
        cuts = [0] + list(indices_or_sections) + [n]
        for k in range(len(cuts) - 1):
            start, stop, _ = slice(cuts[k], cuts[k + 1]).indices(n)
            bounds.append((start, max(start, stop)))
        return ax, bounds
    size, extra = divmod(n, indices_or_sections)
    lo = 0
    for k in range(indices_or_sections):
        hi = lo + size + (1 if k < extra else 0)
        bounds.append((lo, hi))
        lo = hi
    return ax, bounds


def split_bar(g: Any, ary: Any, indices_or_sections: Any, axis: Any) -> Any:
    """Cotangent of ``ary`` in ``np.split``/``np.array_split``: each piece's cotangent
    (``g[k]``) added back where the piece came from (pieces may overlap)."""
    ax, bounds = split_bounds(np.shape(ary), indices_or_sections, axis)
    z = zeros_like(ary)
    for k in range(len(bounds)):
        lo, hi = bounds[k]
        if hi > lo:
            z = index_add(z, axis_slice(np.ndim(ary), ax, lo, hi), g[k])
    return z


def chain_dot(arrays: Any, dots: Any, i: int) -> Any:
    """``arrays[0] @ ... @ arrays[-1]`` with ``dots[i]`` in place of ``arrays[i]``."""
    x = dots[0] if i == 0 else arrays[0]
    for k in range(1, len(arrays)):
        x = x @ (dots[k] if k == i else arrays[k])
    return x


def multi_dot_jvp(arrays: Any, dots: Any) -> Any:
    t = chain_dot(arrays, dots, 0)
    for i in range(1, len(arrays)):
        t = t + chain_dot(arrays, dots, i)
    return t


def multi_dot_bars(g: Any, arrays: Any) -> Any:
    """The cotangents of ``np.linalg.multi_dot(arrays)`` (a tuple), back through the left-to-right chain."""
    n = len(arrays)
    prefix = [arrays[0]]
    for k in range(1, n - 1):
        prefix.append(prefix[k - 1] @ arrays[k])
    rev = []
    for k in range(n - 1, 0, -1):
        rev.append(matmul_rhs_bar(g, prefix[k - 1], arrays[k]))
        g = matmul_lhs_bar(g, prefix[k - 1], arrays[k])
    rev.append(g)
    bars = []
    for k in range(n):
        bars.append(rev[n - 1 - k])
    return tuple(bars)
