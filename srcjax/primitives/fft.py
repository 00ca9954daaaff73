"""``np.fft``: the discrete Fourier transforms (fft, ifft, rfft, irfft and their 2-D and n-D forms).

One record per NumPy function, all sharing one plan: the transformed axes and lengths (``n``/``s``,
``axis``/``axes`` as NumPy 2 reads them), each axis cut or zero-padded to its length, the axes moved
last and ``stablehlo.fft`` applied (it transforms at most three trailing dimensions: more are done in
groups), then scaled for ``norm`` ("backward", "ortho", "forward"). XLA's FFT is unscaled and its
IFFT/IRFFT divide by the size, as NumPy's "backward" does. Result dtypes are NumPy 2's: complex64
for float32/complex64 (and float16) input, complex128 otherwise; irfft gives the matching real dtype.

Derivatives (JAX's convention, see ``srcjax/complex_adjoint.py``): every transform is linear, so its
JVP is the transform of the tangent. fft and ifft are symmetric matrices (their own transposes);
rfft's transpose, the real part of an fft of the zero-padded cotangent, is written as an irfft of the
conjugate cotangent with its inner bins halved (half the work, as JAX); irfft's is the conjugate of an
rfft weighted 1, 2, ..., 2, (1) for the halved spectrum (JAX's ``_irfft_transpose``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import FuncBuilder, HloValue, aval_type, real_dtype
from . import batch_rules
from .common import normalize_axis
from .registry import LowerCtx, defprim, set_fields

_NORMS = (None, "backward", "ortho", "forward")


def _fft_stub(a, /, n=None, axis=-1, norm=None, out=None):  # type: ignore[no-untyped-def]
    ...


def _fftn_stub(a, /, s=None, axes=None, norm=None, out=None):  # type: ignore[no-untyped-def]
    ...


def _fft2_stub(a, /, s=None, axes=(-2, -1), norm=None, out=None):  # type: ignore[no-untyped-def]
    ...


def _static_int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise DTypeError(f"{what} must be a static int, got {v!r}")
    if v < 1:
        raise ShapeError(f"{what} must be at least 1, got {v}")
    return int(v)


def plan(name: str, a: ShapedArray, n_or_s: Any, axis_or_axes: Any, norm: Any, out: Any,
         one_axis: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The transformed axes (non-negative, in NumPy's order) and each one's transform length (for
    irfft: the real output's length), as NumPy 2 reads ``n``/``axis`` or ``s``/``axes``."""
    if out is not None:
        raise DTypeError(f"np.fft.{name}: out= is not supported", hint="use the returned array")
    if norm not in _NORMS:
        raise DTypeError(f'np.fft.{name}: norm must be "backward", "ortho" or "forward", got {norm!r}')
    inverse_real = name.startswith("irfft")
    if one_axis:
        axes: tuple[int, ...] = (normalize_axis(axis_or_axes, a.ndim, "axis"),)
        s = None if n_or_s is None else (n_or_s,)
    else:
        s = None if n_or_s is None else tuple(n_or_s) if isinstance(n_or_s, (tuple, list)) else n_or_s
        if s is not None and not isinstance(s, tuple):
            raise DTypeError(f"np.fft.{name}: s must be a static tuple of ints, got {n_or_s!r}")
        if axis_or_axes is None:
            axes = tuple(range(a.ndim - (len(s) if s is not None else a.ndim), a.ndim))
        else:
            raw = tuple(axis_or_axes) if isinstance(axis_or_axes, (tuple, list)) else (axis_or_axes,)
            axes = tuple(normalize_axis(x, a.ndim, "axes") for x in raw)
    if a.ndim == 0 or not axes:
        raise ShapeError(f"np.fft.{name} needs at least one axis to transform (got a {a.ndim}-d array)")
    if len(set(axes)) != len(axes):
        raise ShapeError(f"np.fft.{name}: repeated axes {axes}", hint="name each axis once")
    if s is None:
        lengths = [a.shape[x] for x in axes]
        if inverse_real:
            lengths[-1] = 2 * (lengths[-1] - 1)
    else:
        if len(s) != len(axes):
            raise ShapeError(f"np.fft.{name}: s and axes have different lengths ({len(s)} and {len(axes)})")
        lengths = [_static_int(v, "n" if one_axis else "s") for v in s]
    if any(v < 1 for v in lengths):
        raise ShapeError(f"np.fft.{name}: invalid number of data points ({lengths[-1]}) along axis {axes[-1]}",
                         hint="pass n= (or s=) with the length of the real output")
    return axes, tuple(lengths)


def _out_dtype(name: str, a: ShapedArray) -> np.dtype:
    d = a.dtype
    if d.kind not in "biufc" or d.name == "bfloat16":
        raise DTypeError(f"np.fft.{name} does not support {d.name} arrays",
                         hint="convert to float32/float64 (or complex) first")
    single = d in (np.float16, np.float32, np.complex64)
    if name.startswith("irfft"):
        return np.dtype(np.float32 if single else np.float64)
    if name.startswith("rfft") and d.kind == "c":
        raise DTypeError(f"np.fft.{name} needs a real input, got {d.name}", hint="use np.fft.fft for complex input")
    return np.dtype(np.complex64 if single else np.complex128)


def _abstract(name: str, one_axis: bool) -> Any:
    def rule(a: ShapedArray, ns: Any = None, ax: Any = None, norm: Any = None, out: Any = None) -> ShapedArray:
        axes, lengths = plan(name, a, ns, ax, norm, out, one_axis)
        shape = list(a.shape)
        for x, n in zip(axes, lengths):
            shape[x] = n
        if name.startswith("rfft"):
            shape[axes[-1]] = lengths[-1] // 2 + 1
        return ShapedArray(tuple(shape), _out_dtype(name, a))

    return rule


def _resize(b: FuncBuilder, x: HloValue, axis: int, n: int) -> HloValue:
    """``x`` cut to ``n`` entries along ``axis``, or padded with zeros (NumPy's ``n``)."""
    d = x.shape[axis]
    if d == n:
        return x
    if d > n:
        return b.slice(x, [0] * x.ndim, [n if i == axis else e for i, e in enumerate(x.shape)])
    high = [n - d if i == axis else 0 for i in range(x.ndim)]
    return b.pad(x, b.full(0, (), x.dtype), [0] * x.ndim, high, [0] * x.ndim)


def _fft_op(b: FuncBuilder, x: HloValue, kind: str, axes: tuple[int, ...], lengths: tuple[int, ...],
            out_dtype: np.dtype) -> HloValue:
    """One ``stablehlo.fft`` over ``axes`` (at most 3), moved last and back."""
    rest = [i for i in range(x.ndim) if i not in axes]
    perm = rest + list(axes)
    y = b.transpose(x, perm)
    shape = list(y.shape)
    if kind == "RFFT":
        shape[-1] = lengths[-1] // 2 + 1
    elif kind == "IRFFT":
        shape[-1] = lengths[-1]
    out = ShapedArray(tuple(shape), out_dtype)
    y = b.emit(f"stablehlo.fft {y.name}, type = {kind}, length = {list(lengths)} : "
               f"({aval_type(y.aval)}) -> {aval_type(out)}", out)
    return b.transpose(y, [perm.index(i) for i in range(x.ndim)])


def _groups(axes: tuple[int, ...], lengths: tuple[int, ...]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(axes[i:i + 3], lengths[i:i + 3]) for i in range(0, len(axes), 3)]


def _lower(name: str, one_axis: bool) -> Any:
    def rule(ctx: LowerCtx, a: HloValue, ns: Any = None, ax: Any = None, norm: Any = None,
             out: Any = None) -> HloValue:
        b = ctx.b
        res = ctx.avals_out[0]
        axes, lengths = plan(name, a.aval, ns, ax, norm, out, one_axis)
        cdt = res.dtype if res.dtype.kind == "c" else np.dtype(np.complex64 if res.dtype == np.float32
                                                              else np.complex128)
        inverse = name.startswith("i")
        if name.startswith("rfft"):
            x = b.convert(a, real_dtype(cdt))
            for axis, n in zip(axes, lengths):
                x = _resize(b, x, axis, n)
            x = _fft_op(b, x, "RFFT", axes[-1:], lengths[-1:], cdt)
            for g in _groups(axes[:-1], lengths[:-1]):
                x = _fft_op(b, x, "FFT", *g, cdt)
        elif name.startswith("irfft"):
            x = b.convert(a, cdt)
            for axis, n in zip(axes[:-1], lengths[:-1]):
                x = _resize(b, x, axis, n)
            x = _resize(b, x, axes[-1], lengths[-1] // 2 + 1)
            for g in _groups(axes[:-1], lengths[:-1]):
                x = _fft_op(b, x, "IFFT", *g, cdt)
            x = _fft_op(b, x, "IRFFT", axes[-1:], lengths[-1:], res.dtype)
        else:
            x = b.convert(a, cdt)
            for axis, n in zip(axes, lengths):
                x = _resize(b, x, axis, n)
            for g in _groups(axes, lengths):
                x = _fft_op(b, x, "IFFT" if inverse else "FFT", *g, cdt)
        size = math.prod(lengths)
        scale = {None: 1.0, "backward": 1.0, "ortho": 1 / math.sqrt(size), "forward": 1.0 / size}[norm]
        if inverse:
            scale = {None: 1.0, "backward": 1.0, "ortho": math.sqrt(size), "forward": float(size)}[norm]
        if scale != 1.0:
            x = b.binary("multiply", x, b.full(scale, x.shape, x.dtype))
        return x

    return rule


_DEFS = {  # name: (NumPy function, one axis?, stub)
    "fft": (np.fft.fft, True, _fft_stub), "ifft": (np.fft.ifft, True, _fft_stub),
    "rfft": (np.fft.rfft, True, _fft_stub), "irfft": (np.fft.irfft, True, _fft_stub),
    "fft2": (np.fft.fft2, False, _fft2_stub), "ifft2": (np.fft.ifft2, False, _fft2_stub),
    "rfft2": (np.fft.rfft2, False, _fft2_stub), "irfft2": (np.fft.irfft2, False, _fft2_stub),
    "fftn": (np.fft.fftn, False, _fftn_stub), "ifftn": (np.fft.ifftn, False, _fftn_stub),
    "rfftn": (np.fft.rfftn, False, _fftn_stub), "irfftn": (np.fft.irfftn, False, _fftn_stub),
}

def _batch_nd(c: batch_rules.BatchCall) -> str:
    """``axes`` count per-example axes; ``axes=None`` with ``s`` is the last ``len(s)`` axes, the same
    on the batched operand (kept None), without ``s`` every per-example axis."""
    if c.args.get("axes", "None") == "None" and c.args.get("s", "None") != "None":
        return c.call()
    return batch_rules.axes("axes")(c)


def _record(name: str, fn: Any, one_axis: bool, stub: Any) -> None:
    ns, ax = ("n", "axis") if one_axis else ("s", "axes")
    kind = "irfft" if name.startswith("irfft") else "rfft" if name.startswith("rfft") else \
        "ifft" if name.startswith("i") else "fft"
    defprim(name, fn, stub, abstract_eval=_abstract(name, one_axis), lower=_lower(name, one_axis),
            arrays=("a",), path=f"np.fft.{name}",
            jvp={"a": f"np.fft.{name}(a_dot, {ns}={ns}, {ax}={ax}, norm=norm)"},
            vjp={"a": f"fft_bar(out_bar, a, {ns}, {ax}, norm, {kind!r}, {one_axis})"})
    set_fields(name, batch=batch_rules.axes("axis") if one_axis else _batch_nd)


for _name, (_fn, _one, _stub) in _DEFS.items():
    _record(_name, _fn, _one, _stub)

__all__ = ["plan"]
