"""Derivative and batching helpers of ``srcjax.lax.conv_general_dilated`` and ``srcjax.lax.reduce_window``
(records in ``primitives/windows.py``; JAX's rules, jax/_src/lax/convolution.py and windowed_reductions.py).

Plain NumPy with static control flow on shapes only, like :mod:`srcjax.adjoint` and :mod:`srcjax.batched`,
which re-export them: they run as they are under NumPy, and srcjax transpiles them like user code (so
derivatives of derivatives and of batched code go through them). They compute with the primitives
themselves, so everything here is a convolution, a reduce_window or an ordinary array operation:

- the cotangent of a convolution's input is a convolution of the cotangent with the kernel flipped in
  space, its feature axes swapped, window strides and input dilation exchanged
  (:func:`conv_lhs_bar`); the kernel's is a convolution of the input with the cotangent
  (:func:`conv_rhs_bar`); feature groups and batch groups trade places between the two;
- a window reduction is written over *patches*: a convolution with a one-hot kernel gathers, for every
  window, each of its ``K`` elements (:func:`window_patches`: shape ``(K, *out)``), and its transpose
  (:func:`window_scatter`) adds ``K`` values per window back where they came from. A sum's cotangent
  is ``g`` scattered to every element of its window; a max's (min's) goes to the first maximal element
  of each window (as XLA's ``select_and_scatter_add`` in JAX), a product's to each element times the
  product of the others;
- batching folds the batch axis into the batch dimension of the input, or into the output features
  of the kernel using feature groups (JAX's ``_conv_general_dilated_batch_rule``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .windows import conv_general_dilated, reduce_window


def conv_specs(ndim: int, dimension_numbers: Any) -> tuple[Any, Any, Any]:
    """(lhs_spec, rhs_spec, out_spec): where the batch, feature and spatial dimensions are (static)."""
    if dimension_numbers is None:
        iota = tuple(range(ndim))
        return iota, iota, iota
    lhs, rhs, out = dimension_numbers
    if not isinstance(lhs, str):
        return tuple(lhs), tuple(rhs), tuple(out)
    spatial = [c for c in rhs if c not in "OI"]
    return ((lhs.index("N"), lhs.index("C")) + tuple(lhs.index(c) for c in spatial),
            (rhs.index("O"), rhs.index("I")) + tuple(rhs.index(c) for c in spatial),
            (out.index("N"), out.index("C")) + tuple(out.index(c) for c in spatial))


def spec_swap(spec: Any) -> Any:
    """A spec with its first two dimensions exchanged (batch <-> feature, out <-> in feature)."""
    return (spec[1], spec[0]) + tuple(spec[2:])


def dilated(sizes: Any, dilation: Any) -> list[int]:
    return [0 if d == 0 else 1 + r * (d - 1) for d, r in zip(sizes, dilation)]


def ones_or(v: Any, n: int) -> tuple[int, ...]:
    return (1,) * n if v is None else tuple(v)


def explicit_pads(padding: Any, in_sizes: Any, window: Any, strides: Any) -> list[tuple[int, int]]:
    """``padding`` as (low, high) pairs ('SAME', 'SAME_LOWER', 'VALID' as JAX's ``padtype_to_pads``)."""
    if not isinstance(padding, str):
        return [(lo, hi) for lo, hi in padding]
    if padding == "VALID":
        return [(0, 0) for _ in in_sizes]
    pads = []
    for n, k, s in zip(in_sizes, window, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        pads.append((total - total // 2, total // 2) if padding == "SAME_LOWER" else (total // 2, total - total // 2))
    return pads


def axis_into(x: Any, src: int, dst: int) -> Any:
    """``x``'s axis ``src`` merged (as the major part) into the axis that is ``dst`` once ``src`` is removed."""
    shape = np.shape(x)
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    rest = [d for i, d in enumerate(shape) if i != src]
    rest[dst] = rest[dst] * shape[src]
    return np.reshape(np.transpose(x, perm), tuple(rest))


def axis_out_of(x: Any, src: int, size: int) -> Any:
    """``x``'s axis ``src`` split into ``(size, rest)``."""
    shape = np.shape(x)
    return np.reshape(x, tuple(shape[:src]) + (size, shape[src] // size) + tuple(shape[src + 1:]))


def conv_plan_of(lhs: Any, rhs: Any, g: Any, window_strides: Any, padding: Any, lhs_dilation: Any,
                 rhs_dilation: Any, dimension_numbers: Any) -> tuple[Any, ...]:
    """The static facts both transposes need: specs, strides, dilations, pads and spatial sizes."""
    specs = conv_specs(np.ndim(lhs), dimension_numbers)
    ns = np.ndim(lhs) - 2
    ld, rd = ones_or(lhs_dilation, ns), ones_or(rhs_dilation, ns)
    strides = tuple(window_strides)
    in_sp = [np.shape(lhs)[i] for i in specs[0][2:]]
    k_sp = [np.shape(rhs)[i] for i in specs[1][2:]]
    out_sp = [np.shape(g)[i] for i in specs[2][2:]]
    pads = explicit_pads(padding, in_sp, dilated(k_sp, rd), strides)
    return specs, strides, ld, rd, pads, dilated(in_sp, ld), dilated(k_sp, rd), dilated(out_sp, strides)


def conv_lhs_bar(g: Any, lhs: Any, rhs: Any, window_strides: Any, padding: Any, lhs_dilation: Any,
                 rhs_dilation: Any, dimension_numbers: Any, feature_group_count: Any, batch_group_count: Any,
                 precision: Any) -> Any:
    """The cotangent of ``lhs``: ``g`` convolved with the flipped kernel, strides and input dilation swapped."""
    (lspec, rspec, ospec), strides, ld, rd, pads, lhs_d, rhs_d, out_d = conv_plan_of(
        lhs, rhs, g, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers)
    w = rhs
    groups = feature_group_count
    if feature_group_count > 1 or batch_group_count > 1:  # the group moves from out to in features
        groups = max(feature_group_count, batch_group_count)
        w = axis_into(axis_out_of(w, rspec[0], groups), rspec[0], rspec[1])
    before = [k - lo - 1 for k, (lo, _) in zip(rhs_d, pads)]
    pads_t = [(b, n + k - 1 - o - b) for b, n, k, o in zip(before, lhs_d, rhs_d, out_d)]
    w = np.flip(w, tuple(rspec[2:]))
    if np.result_type(w) != np.result_type(g):  # (preferred_element_type: g has the result's dtype)
        w = w.astype(np.result_type(g))
    out = conv_general_dilated(g, w, ld, pads_t, strides, rd, (ospec, spec_swap(rspec), lspec), groups, 1, precision)
    if batch_group_count > 1:
        out = axis_into(axis_out_of(out, lspec[1], batch_group_count), lspec[1], lspec[0])
    if np.result_type(out) != np.result_type(lhs):
        out = out.astype(np.result_type(lhs))
    return out


def conv_rhs_bar(g: Any, lhs: Any, rhs: Any, window_strides: Any, padding: Any, lhs_dilation: Any,
                 rhs_dilation: Any, dimension_numbers: Any, feature_group_count: Any, batch_group_count: Any,
                 precision: Any) -> Any:
    """The cotangent of ``rhs``: the input convolved with ``g``, strides and kernel dilation swapped."""
    if np.size(g) == 0:
        return np.zeros_like(rhs)
    (lspec, rspec, ospec), strides, ld, rd, pads, lhs_d, rhs_d, out_d = conv_plan_of(
        lhs, rhs, g, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers)
    pads_t = [(lo, o - n + k - lo - 1) for (lo, _), n, k, o in zip(pads, lhs_d, rhs_d, out_d)]
    dn = (spec_swap(lspec), spec_swap(ospec), spec_swap(rspec))
    x = lhs
    if np.result_type(x) != np.result_type(g):  # (preferred_element_type)
        x = x.astype(np.result_type(g))
    out = conv_general_dilated(x, g, rd, pads_t, ld, strides, dn, batch_group_count, feature_group_count, precision)
    if np.result_type(out) != np.result_type(rhs):
        out = out.astype(np.result_type(rhs))
    return out


# -- batching -------------------------------------------------------------------------------------------

def batch_conv(lhs: Any, rhs: Any, window_strides: Any, padding: Any, lhs_dilation: Any, rhs_dilation: Any,
               dimension_numbers: Any, feature_group_count: Any, batch_group_count: Any, precision: Any,
               preferred_element_type: Any, lhs_batched: bool, rhs_batched: bool) -> Any:
    """``conv_general_dilated`` of a batched ``lhs`` and/or ``rhs`` (batch axis first): one convolution with
    the batch folded into the input's batch dimension or the kernel's output features (JAX's rule)."""
    nd = np.ndim(rhs) - 1 if rhs_batched else np.ndim(rhs)
    lspec, rspec, ospec = conv_specs(nd, dimension_numbers)
    dn = (lspec, rspec, ospec)
    fg, bg = feature_group_count, batch_group_count
    if lhs_batched and rhs_batched:
        size = np.shape(lhs)[0]
        if bg > 1:
            x = axis_into(lhs, 0, lspec[0])
            bg = bg * size
        else:
            x = axis_into(lhs, 0, lspec[1])
            fg = fg * size
        out = conv_general_dilated(x, axis_into(rhs, 0, rspec[0]), window_strides, padding, lhs_dilation,
                                   rhs_dilation, dn, fg, bg, precision, preferred_element_type)
        return np.moveaxis(axis_out_of(out, ospec[1], size), ospec[1], 0)
    if lhs_batched:
        size = np.shape(lhs)[0]
        if bg == 1:
            x = axis_into(lhs, 0, lspec[0])
        else:  # the groups stay outermost in the batch dimension
            x = axis_into(axis_into(axis_out_of(lhs, lspec[0] + 1, bg), 0, lspec[0] + 1), lspec[0], lspec[0])
        out = conv_general_dilated(x, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dn, fg, bg,
                                   precision, preferred_element_type)
        return np.moveaxis(axis_out_of(out, ospec[0], size), ospec[0], 0)
    size = np.shape(rhs)[0]
    if fg == 1 and bg == 1:
        out = conv_general_dilated(lhs, axis_into(rhs, 0, rspec[0]), window_strides, padding, lhs_dilation,
                                   rhs_dilation, dn, fg, bg, precision, preferred_element_type)
        return np.moveaxis(axis_out_of(out, ospec[1], size), ospec[1], 0)
    groups = max(fg, bg)  # the groups stay outermost in the output features
    w = axis_into(axis_into(axis_out_of(rhs, rspec[0] + 1, groups), 0, rspec[0] + 1), rspec[0], rspec[0])
    out = conv_general_dilated(lhs, w, window_strides, padding, lhs_dilation, rhs_dilation, dn, fg, bg,
                               precision, preferred_element_type)
    out = axis_out_of(out, ospec[1], groups)
    out = axis_out_of(out, ospec[1] + 1, size)
    return np.moveaxis(axis_into(out, ospec[1], ospec[1] + 1), ospec[1], 0)


def batch_reduce_window(operand: Any, init_value: Any, computation: Any, window_dimensions: Any,
                        window_strides: Any, padding: Any, base_dilation: Any, window_dilation: Any,
                        operand_batched: bool) -> Any:
    """``reduce_window`` of a batched operand: a window of 1 along the batch axis."""
    n = len(window_dimensions)
    pads = padding if isinstance(padding, str) else [(0, 0)] + [(lo, hi) for lo, hi in padding]
    return reduce_window(operand, init_value, computation, (1,) + tuple(window_dimensions),
                         (1,) + ones_or(window_strides, n), pads, (1,) + ones_or(base_dilation, n),
                         (1,) + ones_or(window_dilation, n))


# -- reduce_window: patches -------------------------------------------------------------------------------
# (``dims, strides, padding, bd, wd``: the reduction's window_dimensions, window_strides, padding,
# base_dilation and window_dilation)

def window_kernel(dims: Any, dtype: Any) -> Any:
    """The one-hot kernel ``(K, 1, *dims)`` whose convolution gathers each of a window's K elements."""
    k = 1
    for d in dims:
        k = k * d
    return np.reshape(np.eye(k, dtype=dtype), (k, 1) + tuple(dims))


def window_args(operand: Any, dims: Any, strides: Any, padding: Any, bd: Any, wd: Any) -> tuple[Any, Any, Any, Any]:
    """(strides, explicit pads, base dilation, window dilation) of a window reduction over ``operand``."""
    n = np.ndim(operand)
    s, b, w = ones_or(strides, n), ones_or(bd, n), ones_or(wd, n)
    return s, explicit_pads(padding, np.shape(operand), dilated(dims, w), s), b, w


def window_patches(x: Any, dims: Any, strides: Any, padding: Any, bd: Any, wd: Any) -> Any:
    """Each window's K elements, ``(K, *out)`` (0 for padding and holes)."""
    s, pads, b, w = window_args(x, dims, strides, padding, bd, wd)
    return conv_general_dilated(x[None, None], window_kernel(dims, np.result_type(x)), s, pads, b, w)[0]


def window_scatter(p: Any, operand: Any, dims: Any, strides: Any, padding: Any, bd: Any, wd: Any) -> Any:
    """The transpose of :func:`window_patches`: each of ``p``'s ``(K, *out)`` values added to the element it
    came from, in ``operand``'s shape."""
    s, pads, b, w = window_args(operand, dims, strides, padding, bd, wd)
    kernel = window_kernel(dims, np.result_type(p))
    return conv_lhs_bar(p[None], operand[None, None], kernel, s, pads, b, w, None, 1, 1, None)[0, 0]


def window_sum_bar(g: Any, operand: Any, dims: Any, strides: Any, padding: Any, bd: Any, wd: Any) -> Any:
    """The cotangent of a window sum: ``g`` added to every element of its window (one convolution with a
    kernel of ones)."""
    s, pads, b, w = window_args(operand, dims, strides, padding, bd, wd)
    ones = np.ones((1, 1) + tuple(dims), dtype=np.result_type(g))
    return conv_lhs_bar(g[None, None], operand[None, None], ones, s, pads, b, w, None, 1, 1, None)[0, 0]


def window_valid(operand: Any, dims: Any, strides: Any, padding: Any, bd: Any, wd: Any) -> Any:
    """Which of the ``(K, *out)`` patch entries are elements of the operand (not padding or holes)."""
    ones = np.ones(np.shape(operand), dtype=np.float32)
    return window_patches(ones, dims, strides, padding, bd, wd) > 0.5


def window_choice(operand: Any, out: Any, dims: Any, strides: Any, padding: Any, bd: Any, wd: Any) -> Any:
    """``(K, *out)``: true at the first element of each window equal to the window's max (min)."""
    finite = np.where(np.isfinite(operand), operand, 0)  # (a one-hot kernel times inf would give nan)
    p = window_patches(finite, dims, strides, padding, bd, wd)
    up = window_patches((operand == np.inf).astype(p.dtype), dims, strides, padding, bd, wd)
    down = window_patches((operand == -np.inf).astype(p.dtype), dims, strides, padding, bd, wd)
    p = np.where(up > 0.5, np.inf, np.where(down > 0.5, -np.inf, p))
    hit = (p == out[None]) & window_valid(operand, dims, strides, padding, bd, wd)
    return hit & (np.cumsum(hit, axis=0) == 1)


def window_others(operand: Any, dims: Any, strides: Any, padding: Any, bd: Any, wd: Any, init_value: Any) -> Any:
    """``(K, *out)``: for each element of each window, ``init_value`` times the product of the others."""
    p = window_patches(operand, dims, strides, padding, bd, wd)
    p = np.where(window_valid(operand, dims, strides, padding, bd, wd), p, 1)
    if np.shape(p)[0] == 0:
        return p
    one = np.ones_like(p[:1])
    before = np.cumprod(np.concatenate([one, p[:-1]], axis=0), axis=0)
    after = np.flip(np.cumprod(np.flip(np.concatenate([p[1:], one], axis=0), 0), axis=0), 0)
    return before * after * init_value


def window_dot(operand_dot: Any, operand: Any, out: Any, init_value: Any, computation: Any, dims: Any,
               strides: Any, padding: Any, bd: Any, wd: Any) -> Any:
    """The tangent of a window reduction: a window sum of the tangent; for max/min the tangent of each
    window's chosen element; for a product, the product rule."""
    if computation is np.add:
        return reduce_window(operand_dot, 0, np.add, dims, strides, padding, bd, wd)
    t = window_patches(operand_dot, dims, strides, padding, bd, wd)
    if computation is np.multiply:
        return np.sum(t * window_others(operand, dims, strides, padding, bd, wd, init_value), axis=0)
    c = window_choice(operand, out, dims, strides, padding, bd, wd)
    return np.sum(np.where(c, t, 0), axis=0)


def window_bar(g: Any, operand: Any, out: Any, init_value: Any, computation: Any, dims: Any, strides: Any,
               padding: Any, bd: Any, wd: Any) -> Any:
    """The cotangent of a window reduction's operand."""
    if computation is np.add:
        return window_sum_bar(g, operand, dims, strides, padding, bd, wd)
    if computation is np.multiply:
        w = g[None] * window_others(operand, dims, strides, padding, bd, wd, init_value)
        return window_scatter(w, operand, dims, strides, padding, bd, wd)
    c = window_choice(operand, out, dims, strides, padding, bd, wd)
    return window_scatter(np.where(c, g[None], 0), operand, dims, strides, padding, bd, wd)


CONV_HELPERS = ("conv_specs", "spec_swap", "dilated", "ones_or", "explicit_pads", "axis_into", "axis_out_of",
                "conv_plan_of", "conv_lhs_bar", "conv_rhs_bar", "window_kernel", "window_args", "window_patches",
                "window_scatter", "window_sum_bar", "window_valid", "window_choice", "window_others", "window_dot",
                "window_bar")
"""What :mod:`srcjax.adjoint` re-exports (the batching helpers, ``batch_*``, are :mod:`srcjax.batched`'s)."""
CONV_BATCH_HELPERS = ("batch_conv", "batch_reduce_window")
for _name in CONV_HELPERS:
    globals()[_name].__module__ = "srcjax.adjoint"
for _name in CONV_BATCH_HELPERS:
    globals()[_name].__module__ = "srcjax.batched"
