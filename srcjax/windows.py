"""Windowed operations of ``srcjax.lax``: ``conv_general_dilated`` (with ``conv`` and ``conv_transpose``)
and ``reduce_window``, with JAX's signatures and semantics.

Each public function here *is* the NumPy reference implementation (generated source that calls
``srcjax.lax.conv_general_dilated`` runs with plain NumPy); compiled code lowers the same call to
``stablehlo.convolution`` / ``stablehlo.reduce_window`` (``primitives/windows.py``). The plans
(:func:`conv_plan`, :func:`window_plan`) are shared by the reference, abstract evaluation and the
lowering, so the three read the arguments alike and refuse bad ones with the same located error.

Conventions (JAX's): ``dimension_numbers`` is ``None`` (``NCHW``/``OIHW``/``NCHW`` for any rank), a
tuple of three strings (``('NHWC', 'HWIO', 'NHWC')``; spatial letters pair up by name, and the
order of ``window_strides``, ``padding`` and the dilations is the order of the spatial letters in
the kernel's string), or three tuples of dimension numbers ``(batch, feature, spatial...)`` (JAX's
``ConvDimensionNumbers``). ``padding`` is ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or a ``(low,
high)`` pair per spatial dimension (negative values crop).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .core import DTypeError, ShapeError

__all__ = ["ConvDimensionNumbers", "conv", "conv_dimension_numbers", "conv_general_dilated", "conv_plan",
           "conv_transpose", "padtype_to_pads", "reduce_window", "window_identity", "window_monoid", "window_plan"]


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of each operand are (JAX's namedtuple)."""

    lhs_spec: tuple[int, ...]  # (batch, feature, spatial...)
    rhs_spec: tuple[int, ...]  # (out feature, in feature, spatial...)
    out_spec: tuple[int, ...]  # (batch, feature, spatial...)


_CONV = "srcjax.lax.conv_general_dilated"


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _ints(v: Any, n: int, what: str, fn: str, least: int = 1) -> tuple[int, ...]:
    """A static sequence of ``n`` ints, each at least ``least`` (``None``: ones)."""
    if v is None:
        return (1,) * n
    if not isinstance(v, (tuple, list)) or not all(_is_int(e) for e in v):
        raise DTypeError(f"{fn}: {what} must be a static sequence of ints, got {v!r}",
                         hint=f"write one int per spatial dimension, e.g. {(1,) * max(n, 1)}")
    if len(v) != n:
        raise ShapeError(f"{fn}: {what} needs one entry per spatial dimension ({n}), got {len(v)}: {tuple(v)}")
    if any(e < least for e in v):
        raise ShapeError(f"{fn}: every entry of {what} must be at least {least}, got {tuple(v)}")
    return tuple(int(e) for e in v)


def conv_dimension_numbers(ndim: int, dimension_numbers: Any) -> ConvDimensionNumbers:
    """``dimension_numbers`` as three tuples of dimension numbers for operands of rank ``ndim``."""
    if dimension_numbers is None:
        iota = tuple(range(ndim))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3:
        raise DTypeError(f"{_CONV}: dimension_numbers must be None or three specs (lhs, rhs, out), got "
                         f"{dimension_numbers!r}", hint="e.g. dimension_numbers=('NHWC', 'HWIO', 'NHWC')")
    if all(isinstance(s, str) for s in dimension_numbers):
        return _parse_specs(ndim, *dimension_numbers)
    specs = []
    for s in dimension_numbers:
        if not isinstance(s, (tuple, list)) or sorted(s) != list(range(ndim)) or not all(_is_int(e) for e in s):
            raise ShapeError(f"{_CONV}: each of dimension_numbers must be a permutation of range({ndim}) or a "
                             f"string, got {dimension_numbers!r}", hint="e.g. ('NCHW', 'OIHW', 'NCHW')")
        specs.append(tuple(int(e) for e in s))
    return ConvDimensionNumbers(*specs)


def _parse_specs(ndim: int, lhs: str, rhs: str, out: str) -> ConvDimensionNumbers:
    for s, need in ((lhs, "NC"), (rhs, "OI"), (out, "NC")):
        if len(s) != ndim or len(set(s)) != ndim or any(c not in s for c in need):
            raise ShapeError(f"{_CONV}: dimension_numbers {(lhs, rhs, out)} do not fit operands of rank {ndim}",
                             hint=f"each string names every dimension once: {'NC' + 'HWD'[:max(ndim - 2, 0)]!r} "
                                  f"for the input and output ('N' batch, 'C' feature), "
                                  f"{'OI' + 'HWD'[:max(ndim - 2, 0)]!r} for the kernel")
    spatial = [c for c in rhs if c not in "OI"]
    if sorted(spatial) != sorted(c for c in lhs if c not in "NC") or \
            sorted(spatial) != sorted(c for c in out if c not in "NC"):
        raise ShapeError(f"{_CONV}: dimension_numbers {(lhs, rhs, out)} name different spatial dimensions",
                         hint="use the same spatial letters in the three strings")
    return ConvDimensionNumbers((lhs.index("N"), lhs.index("C"), *(lhs.index(c) for c in spatial)),
                                (rhs.index("O"), rhs.index("I"), *(rhs.index(c) for c in spatial)),
                                (out.index("N"), out.index("C"), *(out.index(c) for c in spatial)))


def dilate_dim(d: int, dilation: int) -> int:
    return 0 if d == 0 else 1 + dilation * (d - 1)


def padtype_to_pads(in_shape: Any, window: Any, strides: Any, padding: str, fn: str) -> tuple[tuple[int, int], ...]:
    """``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'`` as (low, high) pairs (JAX's ``padtype_to_pads``)."""
    if padding == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if padding not in ("SAME", "SAME_LOWER"):
        raise DTypeError(f"{fn}: unknown padding {padding!r}",
                         hint="pass 'SAME', 'SAME_LOWER', 'VALID' or a (low, high) pair per spatial dimension")
    pads = []
    for n, k, s in zip(in_shape, window, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        lo, hi = total // 2, total - total // 2
        pads.append((hi, lo) if padding == "SAME_LOWER" else (lo, hi))
    return tuple(pads)


def _pads(padding: Any, n: int, fn: str) -> tuple[tuple[int, int], ...]:
    ok = isinstance(padding, (tuple, list)) and all(
        isinstance(p, (tuple, list)) and len(p) == 2 and all(_is_int(e) for e in p) for p in padding)
    if not ok:
        raise DTypeError(f"{fn}: padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of static (low, high) "
                         f"int pairs, got {padding!r}", hint=f"e.g. padding={((1, 1),) * max(n, 1)}")
    if len(padding) != n:
        raise ShapeError(f"{fn}: padding needs one (low, high) pair per spatial dimension ({n}), got {len(padding)}")
    return tuple((int(lo), int(hi)) for lo, hi in padding)


def _out_dims(fn: str, in_shape: Any, window: Any, strides: Any, pads: Any, lhs_dil: Any,
              win_dil: Any) -> tuple[int, ...]:
    out = []
    for n, k, s, (lo, hi), ld, wd in zip(in_shape, window, strides, pads, lhs_dil, win_dil):
        padded = dilate_dim(n, ld) + lo + hi
        if padded < 0:
            raise ShapeError(f"{fn}: negative padding {(lo, hi)} is larger than the dimension it crops ({n})")
        w = dilate_dim(k, wd)
        out.append(max(0, (padded - w) // s + 1) if padded >= w else 0)
    return tuple(out)


class ConvPlan(NamedTuple):
    dn: ConvDimensionNumbers
    strides: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_group_count: int
    batch_group_count: int
    shape: tuple[int, ...]  # the result's
    dtype: np.dtype


def conv_plan(lhs_shape: tuple[int, ...], lhs_dtype: Any, rhs_shape: tuple[int, ...], rhs_dtype: Any,
              window_strides: Any, padding: Any, lhs_dilation: Any = None, rhs_dilation: Any = None,
              dimension_numbers: Any = None, feature_group_count: Any = 1, batch_group_count: Any = 1,
              preferred_element_type: Any = None) -> ConvPlan:
    """Every argument of a ``conv_general_dilated`` call checked and normalized; the result's shape and dtype."""
    fn = _CONV
    if len(lhs_shape) != len(rhs_shape) or len(lhs_shape) < 2:
        raise ShapeError(f"{fn}: lhs and rhs need the same rank, at least 2 (batch and feature dimensions), got "
                         f"shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}",
                         hint="a 2-D convolution takes an input (N, C, H, W) and a kernel (O, I, H, W)")
    ld, rd = np.dtype(lhs_dtype), np.dtype(rhs_dtype)
    common = np.result_type(ld, rd)
    if ld.kind not in "iufc" or rd.kind not in "iufc":
        raise DTypeError(f"{fn} does not support {(ld if ld.kind not in 'iufc' else rd).name} operands",
                         hint="use numeric (integer, float or complex) arrays")
    nd = len(lhs_shape)
    ns = nd - 2
    dn = conv_dimension_numbers(nd, dimension_numbers)
    lhs_t = [lhs_shape[i] for i in dn.lhs_spec]
    rhs_t = [rhs_shape[i] for i in dn.rhs_spec]
    strides = _ints(window_strides, ns, "window_strides", fn)
    l_dil = _ints(lhs_dilation, ns, "lhs_dilation", fn)
    r_dil = _ints(rhs_dilation, ns, "rhs_dilation", fn)
    for what, v in (("feature_group_count", feature_group_count), ("batch_group_count", batch_group_count)):
        if not _is_int(v) or v < 1:
            raise DTypeError(f"{fn}: {what} must be a static positive int, got {v!r}")
    g, bg = int(feature_group_count), int(batch_group_count)
    if g > 1 and bg > 1:
        raise ShapeError(f"{fn}: at most one of batch_group_count and feature_group_count may be > 1, got "
                         f"batch_group_count={bg} and feature_group_count={g}")
    if lhs_t[1] % g or lhs_t[1] // g != rhs_t[1]:
        raise ShapeError(f"{fn}: the input has {lhs_t[1]} features, feature_group_count={g}, so the kernel needs "
                         f"{lhs_t[1] / g:g} input features; it has {rhs_t[1]} (shapes {tuple(lhs_shape)} and "
                         f"{tuple(rhs_shape)})", hint="check dimension_numbers and the kernel's layout")
    if rhs_t[0] % g or rhs_t[0] % bg:
        raise ShapeError(f"{fn}: the kernel's {rhs_t[0]} output features are not a multiple of the group count "
                         f"{max(g, bg)}")
    if lhs_t[0] % bg:
        raise ShapeError(f"{fn}: batch_group_count={bg} does not divide the batch dimension ({lhs_t[0]})")
    if isinstance(padding, str):
        if any(d != 1 for d in l_dil):
            raise ShapeError(f"{fn}: string padding with lhs_dilation (a transposed convolution) is not defined",
                             hint="give the padding as (low, high) pairs, or use srcjax.lax.conv_transpose")
        window = [dilate_dim(k, r) for k, r in zip(rhs_t[2:], r_dil)]
        pads = padtype_to_pads(lhs_t[2:], window, strides, padding, fn)
    else:
        pads = _pads(padding, ns, fn)
    spatial = _out_dims(fn, lhs_t[2:], rhs_t[2:], strides, pads, l_dil, r_dil)
    out_t = (lhs_t[0] // bg, rhs_t[0], *spatial)
    shape = [0] * nd
    for i, d in zip(dn.out_spec, out_t):
        shape[i] = d
    dtype = common if preferred_element_type is None else np.dtype(preferred_element_type)
    return ConvPlan(dn, strides, pads, l_dil, r_dil, g, bg, tuple(shape), dtype)


def _dilate_pad(x: np.ndarray, axes: Any, dilation: Any, pads: Any, fill: Any) -> np.ndarray:
    """``x`` with ``dilation - 1`` holes between elements along ``axes``, then padded (negative: cropped),
    holes and padding holding ``fill``."""
    for ax, d, (lo, hi) in zip(axes, dilation, pads):
        n = x.shape[ax]
        if d > 1 and n > 1:
            shape = list(x.shape)
            shape[ax] = dilate_dim(n, d)
            y = np.full(shape, fill, x.dtype)
            y[(slice(None),) * ax + (slice(None, None, d),)] = x
            x = y
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=fill)
        stop = x.shape[ax] + min(hi, 0)
        x = x[(slice(None),) * ax + (slice(max(-lo, 0), max(stop, max(-lo, 0))),)]
    return x


def _windows(x: np.ndarray, axes: Any, window: Any, strides: Any, dilation: Any, out: Any) -> np.ndarray:
    """Every window of ``x`` along ``axes``: ``x``'s other axes, then one axis per window position, then one
    per element in the window."""
    dilated = [dilate_dim(k, d) for k, d in zip(window, dilation)]
    v = np.lib.stride_tricks.sliding_window_view(x, dilated, axis=tuple(axes))
    keep = [slice(None)] * v.ndim
    for i, (ax, s, d, n) in enumerate(zip(axes, strides, dilation, out)):
        keep[ax] = slice(0, (n - 1) * s + 1 if n else 0, s)
        keep[x.ndim + i] = slice(None, None, d)
    return v[tuple(keep)]


def _accumulate(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype.kind == "f" else np.complex128 if dtype.kind == "c" else
                    np.int64 if dtype.kind == "i" else np.uint64)


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Any, padding: Any, lhs_dilation: Any = None,
                         rhs_dilation: Any = None, dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None) -> Any:
    """JAX's ``lax.conv_general_dilated``: a general n-d convolution (XLA's; a cross-correlation, the
    kernel not flipped) with strides, padding, input (``lhs``) and kernel (``rhs``) dilation, feature and
    batch groups. ``precision`` is accepted for JAX compatibility (srcjax computes floats at full precision)."""
    x, w = np.asarray(lhs), np.asarray(rhs)
    p = conv_plan(x.shape, x.dtype, w.shape, w.dtype, window_strides, padding, lhs_dilation, rhs_dilation,
                  dimension_numbers, feature_group_count, batch_group_count, preferred_element_type)
    if 0 in p.shape:
        return np.zeros(p.shape, p.dtype)
    acc = _accumulate(p.dtype)
    x = np.transpose(x, p.dn.lhs_spec).astype(acc)
    w = np.transpose(w, p.dn.rhs_spec).astype(acc)
    ns = x.ndim - 2
    sp = tuple(range(2, 2 + ns))
    out_t = [p.shape[i] for i in p.dn.out_spec]
    x = _dilate_pad(x, sp, p.lhs_dilation, p.pads, 0)
    win = _windows(x, sp, w.shape[2:], p.strides, p.rhs_dilation, out_t[2:])  # (N, C, *out, *kernel)
    bg, g = p.batch_group_count, p.feature_group_count
    n, c, o = win.shape[0], win.shape[1], w.shape[0]
    win = win.reshape((bg, n // bg, g, c // g) + win.shape[2:])
    w = w.reshape((bg, g, o // (bg * g), c // g) + w.shape[2:])
    letters = "pqrstuvwxyz"
    outs, ks = letters[:ns], letters[ns:2 * ns].upper()
    r = np.einsum(f"BNGC{outs}{ks},BGOC{ks}->NBGO{outs}", win, w, optimize=True)
    r = r.reshape((n // bg, o) + r.shape[4:])
    return np.transpose(r, np.argsort(p.dn.out_spec)).astype(p.dtype)


def conv(lhs: Any, rhs: Any, window_strides: Any, padding: Any, precision: Any = None,
         preferred_element_type: Any = None) -> Any:
    """JAX's ``lax.conv``: ``conv_general_dilated`` with ``NCHW``/``OIHW`` layouts and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:
        raise DTypeError(f"srcjax.lax.conv_transpose: unknown padding {padding!r}",
                         hint="pass 'SAME', 'VALID' or (low, high) pairs")
    return lo, total - lo


def conv_transpose(lhs: Any, rhs: Any, strides: Any, padding: Any, rhs_dilation: Any = None,
                   dimension_numbers: Any = None, transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None) -> Any:
    """JAX's ``lax.conv_transpose``: a fractionally strided convolution (the input dilated by ``strides``),
    TensorFlow layouts by default (``NHWC``/``HWIO``). ``'SAME'``/``'VALID'`` are the forward convolution's
    padding; (low, high) pairs pad the dilated input. ``transpose_kernel=True`` flips the kernel's spatial
    axes and swaps its feature axes (Keras' ``Conv2DTranspose``)."""
    x, w = np.asarray(lhs), np.asarray(rhs)
    nd = x.ndim
    if dimension_numbers is None:
        defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                    5: ("NHWDC", "HWDIO", "NHWDC")}
        if nd not in defaults:
            raise ShapeError(f"srcjax.lax.conv_transpose: no default dimension_numbers for rank {nd}",
                             hint="pass dimension_numbers")
        dimension_numbers = defaults[nd]
    dn = conv_dimension_numbers(nd, dimension_numbers)
    ns = nd - 2
    k_sdims = [w.shape[i] for i in dn.rhs_spec[2:]]
    r_dil = _ints(rhs_dilation, ns, "rhs_dilation", "srcjax.lax.conv_transpose")
    st = _ints(strides, ns, "strides", "srcjax.lax.conv_transpose")
    if isinstance(padding, str):
        pads: Any = tuple(_transpose_padding(dilate_dim(k, r), s, padding) for k, r, s in zip(k_sdims, r_dil, st))
    else:
        pads = padding
    if transpose_kernel:
        w = np.flip(w, tuple(dn.rhs_spec[2:]))
        w = np.swapaxes(w, dn.rhs_spec[0], dn.rhs_spec[1])
    return conv_general_dilated(x, w, (1,) * ns, pads, st, r_dil, dn, precision=precision,
                                preferred_element_type=preferred_element_type)


# -- reduce_window -----------------------------------------------------------------------------------

_MONOIDS = {id(np.add): "add", id(np.maximum): "max", id(np.minimum): "min", id(np.multiply): "mul"}


def window_monoid(computation: Any) -> str:
    """'add', 'max', 'min' or 'mul': the reduction ``computation`` names (a NumPy ufunc, or a function of
    the program of two parameters that returns ``a + b``, ``a * b``, ``np.maximum(a, b)``, ...)."""
    kind = _MONOIDS.get(id(computation))
    if kind is None:
        kind = _written_monoid(computation)
    if kind is None:
        fdef = getattr(computation, "fdef", None)
        name = "this lambda" if fdef is not None and fdef.name.value.startswith("lambda") else \
            f"`{fdef.name.value}`" if fdef is not None else repr(computation)
        raise DTypeError(f"srcjax.lax.reduce_window: unsupported computation {name} (srcjax reduces windows with "
                         "a sum, product, maximum or minimum)",
                         hint="pass srcjax.lax.add, srcjax.lax.max, srcjax.lax.min or srcjax.lax.mul (or np.add, "
                              "np.maximum, np.minimum, np.multiply, or `lambda a, b: a + b`)")
    return kind


_BINOPS = {"Add": "add", "Multiply": "mul"}
_CALLS = {"np.add": "add", "np.multiply": "mul", "np.maximum": "max", "np.minimum": "min", "max": "max",
          "min": "min", "srcjax.lax.add": "add", "srcjax.lax.mul": "mul", "srcjax.lax.max": "max",
          "srcjax.lax.min": "min"}


def _written_monoid(computation: Any) -> str | None:
    """The monoid a lambda or nested ``def`` of the program computes, when its body is one
    ``a + b``/``a * b``/``np.maximum(a, b)``/``np.minimum(a, b)`` of its two parameters (either order)."""
    import libcst as cst

    from .frontend.names import code

    fdef = getattr(computation, "fdef", None)
    if not isinstance(fdef, cst.FunctionDef) or len(fdef.params.params) != 2:
        return None
    params = {p.name.value for p in fdef.params.params}
    body = [small for st in fdef.body.body if isinstance(st, cst.SimpleStatementLine) for small in st.body]
    if len(body) != len(fdef.body.body) or not body or not isinstance(body[-1], cst.Return):
        return None
    value = body[-1].value
    if len(body) == 2 and isinstance(body[0], cst.Assign) and isinstance(value, cst.Name) and \
            code(body[0].targets[0].target) == value.value:  # (ANF: `t = a + b; return t`)
        value = body[0].value
    elif len(body) != 1:
        return None
    return monoid_of(params, value)


def monoid_of(params: set[str], value: Any) -> str | None:
    """'add', 'mul', 'max' or 'min' when ``value`` (an expression) is that operation of the two
    ``params`` in either order (``a + b``, ``np.maximum(b, a)``); None otherwise."""
    import libcst as cst

    from .frontend.names import code

    if isinstance(value, cst.BinaryOperation):
        kind, operands = _BINOPS.get(type(value.operator).__name__), [value.left, value.right]
    elif isinstance(value, cst.Call) and all(a.keyword is None and not a.star for a in value.args):
        kind, operands = _CALLS.get(code(value.func)), [a.value for a in value.args]
    else:
        return None
    if kind is None or len(operands) != 2 or {code(o) for o in operands} != params or len(params) != 2:
        return None
    return kind


class WindowPlan(NamedTuple):
    kind: str
    window: tuple[int, ...]
    strides: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    base_dilation: tuple[int, ...]
    window_dilation: tuple[int, ...]
    shape: tuple[int, ...]


def window_plan(shape: tuple[int, ...], dtype: Any, init_value: Any, computation: Any, window_dimensions: Any,
                window_strides: Any = None, padding: Any = "VALID", base_dilation: Any = None,
                window_dilation: Any = None) -> WindowPlan:
    """Every argument of a ``reduce_window`` call checked and normalized; the result's shape."""
    fn = "srcjax.lax.reduce_window"
    kind = window_monoid(computation)
    if np.dtype(dtype).kind not in "biuf":
        raise DTypeError(f"{fn} does not support {np.dtype(dtype).name} operands", hint="use a real dtype")
    if not isinstance(init_value, (bool, int, float, np.number, np.bool_)) and np.ndim(init_value) != 0:
        raise DTypeError(f"{fn}: init_value must be a scalar, got {init_value!r}")
    n = len(shape)
    window = _ints(window_dimensions, n, "window_dimensions", fn, least=0)
    strides = _ints(window_strides, n, "window_strides", fn)
    bd = _ints(base_dilation, n, "base_dilation", fn)
    wd = _ints(window_dilation, n, "window_dilation", fn)
    if isinstance(padding, str):
        pads = padtype_to_pads(shape, [dilate_dim(k, d) for k, d in zip(window, wd)], strides, padding, fn)
    else:
        pads = _pads(padding, n, fn)
    return WindowPlan(kind, window, strides, pads, bd, wd, _out_dims(fn, shape, window, strides, pads, bd, wd))


def window_identity(kind: str, dtype: Any) -> Any:
    """The identity of the monoid ``kind`` in ``dtype``: what padding and dilation holes hold (XLA skips them)."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return kind in ("min", "mul")
    if kind in ("add", "mul"):
        return d.type(0 if kind == "add" else 1)
    big = np.inf if d.kind == "f" else np.iinfo(d).max
    small = -np.inf if d.kind == "f" else np.iinfo(d).min
    return d.type(small if kind == "max" else big)


_UFUNCS = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}


def reduce_window(operand: Any, init_value: Any, computation: Any, window_dimensions: Any,
                  window_strides: Any = None, padding: Any = "VALID", base_dilation: Any = None,
                  window_dilation: Any = None) -> Any:
    """JAX's ``lax.reduce_window`` with a monoid ``computation`` (``srcjax.lax.add``/``max``/``min``/``mul``
    or ``np.add``/``np.maximum``/``np.minimum``/``np.multiply``): ``init_value`` combined once with every
    element of each window; padding and the holes of ``base_dilation`` are skipped (as XLA does). The result
    keeps the operand's dtype."""
    x = np.asarray(operand)
    p = window_plan(x.shape, x.dtype, init_value, computation, window_dimensions, window_strides, padding,
                    base_dilation, window_dilation)
    init = np.asarray(init_value).astype(x.dtype)
    if 0 in p.shape:
        return np.full(p.shape, init, x.dtype)
    axes = tuple(range(x.ndim))
    y = _dilate_pad(x, axes, p.base_dilation, p.pads, window_identity(p.kind, x.dtype))
    if 0 in p.window:
        return np.full(p.shape, init, x.dtype)
    win = _windows(y, axes, p.window, p.strides, p.window_dilation, p.shape)
    ufunc = _UFUNCS[p.kind]
    r = ufunc.reduce(win, axis=tuple(range(x.ndim, 2 * x.ndim))) if x.ndim else win
    return np.asarray(ufunc(init, r)).astype(x.dtype)
