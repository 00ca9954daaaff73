"""The derivative helpers of complex numbers (JAX's convention; records in primitives/complex.py).

They are :mod:`srcjax.adjoint` helpers in every respect, kept in their own file for the line budget
(as :mod:`srcjax.linalg_adjoint`): their ``__module__`` is ``srcjax.adjoint`` (set at the bottom).

JAX's convention (its autodiff cookbook, "Complex numbers and differentiation"): a VJP is the
transpose of the JVP as a real-linear map under the pairing ``<a, b> = Re(a * b)`` (no conjugate).
So a holomorphic operation's VJP is its JVP's factor times the cotangent (``out_bar * f'(x)``, the
real rules unchanged), and ``grad`` of a real-valued ``f`` at ``z = x + iy`` is
``df/dx - 1j * df/dy``. The non-holomorphic parts (real, imag, conj, abs, angle) have their own
rules here; a real operand of a complex result gets the real part of its cotangent.

Plain NumPy with static decisions on dtypes only.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def real_bar(g: Any, x: Any) -> Any:
    """The cotangent of ``x`` in ``np.real(x)``: ``g`` as a complex number (JAX: ``complex(g, 0)``)."""
    if np.result_type(x).kind == "c":
        return g.astype(x.dtype)
    return g


def imag_bar(g: Any, x: Any) -> Any:
    """The cotangent of ``x`` in ``np.imag(x)``: ``-1j * g`` (JAX: ``complex(0, -g)``); 0 for real ``x``."""
    if np.result_type(x).kind == "c":
        return (-1j * g).astype(x.dtype)
    return np.zeros_like(g)


def abs_complex_share(g: Any, x: Any, tangent: Any) -> Any:
    """``abs`` of a complex ``x`` (JAX's rule): the tangent ``Re(conj(x) * g) / |x|``, the cotangent
    ``g * conj(x) / |x|``; ``|x|`` read as 1 where it is 0 (so the derivative is 0 at the origin)."""
    a = np.abs(x)
    a = np.where(a == 0, 1.0, a)
    if tangent:
        return np.real(np.conj(x) * g) / a
    return g * np.conj(x) / a


def abs_bar(g: Any, x: Any) -> Any:
    """The cotangent of ``x`` in ``np.abs(x)`` for a cotangent ``g`` of any dtype (a real one cast to a
    complex ``x``'s dtype by ``expand_reduced`` included): ``g * conj(x) / |x|``, or JAX's sign of a real ``x``."""
    if np.result_type(x).kind == "c":
        return abs_complex_share(g, x, False)
    return np.where(x >= 0, g, -g)


def angle_dot(t: Any, z: Any) -> Any:
    """The tangent of ``np.angle(z)`` (``atan2(imag, real)``): ``Im(conj(z) * t) / |z|**2``; 0 for real ``z``."""
    if np.result_type(z).kind == "c":
        return np.imag(np.conj(z) * t) / (np.real(z) ** 2 + np.imag(z) ** 2)
    return np.zeros_like(t)


def angle_bar(g: Any, z: Any) -> Any:
    """The cotangent of ``z`` in ``np.angle(z)``: ``-1j * g * conj(z) / |z|**2``; 0 for real ``z``."""
    if np.result_type(z).kind == "c":
        return (-1j * g * np.conj(z) / (np.real(z) ** 2 + np.imag(z) ** 2)).astype(z.dtype)
    return np.zeros_like(g)


# -- np.fft: every transform is linear; these are the transposes (primitives/fft.py) --------------------

def fft_plan(shape: Any, ns: Any, ax: Any, one_axis: bool, inverse_real: bool) -> Any:
    """The transformed axes and their transform lengths, as NumPy 2 reads ``n``/``axis``, ``s``/``axes``."""
    nd = len(shape)
    axes: Any
    if one_axis:
        axes = (ax % nd,)
        s = None if ns is None else (ns,)
    else:
        s = None if ns is None else tuple(ns)
        if ax is None:
            axes = tuple(range(nd - (nd if s is None else len(s)), nd))
        else:
            axes = tuple(x % nd for x in ax)
    if s is None:
        lengths = tuple(shape[x] for x in axes)
        s = lengths[:-1] + (2 * (lengths[-1] - 1),) if inverse_real else lengths
    return axes, s


def fft_resize(x: Any, axis: int, n: int) -> Any:
    """``x`` cut to ``n`` entries along ``axis`` or padded with zeros (what ``n=`` does to an operand)."""
    d = np.shape(x)[axis]
    if d > n:
        return np.take(x, np.arange(n), axis=axis)
    if d < n:
        shape = np.shape(x)
        return np.concatenate([x, np.zeros(shape[:axis] + (n - d,) + shape[axis + 1:], np.result_type(x))], axis=axis)
    return x


def fft_bar(g: Any, a: Any, ns: Any, ax: Any, norm: Any, kind: str, one_axis: bool) -> Any:
    """The cotangent of ``a`` in a transform ``kind`` (fft, ifft, rfft, irfft over ``ns``/``ax``)."""
    axes, s = fft_plan(np.shape(a), ns, ax, one_axis, kind == "irfft")
    last = axes[-1]
    y: Any
    if kind == "fft":
        y = np.fft.fftn(g, axes=axes, norm=norm)
    elif kind == "ifft":
        y = np.fft.ifftn(g, axes=axes, norm=norm)
    else:
        dual: Any = "ortho" if norm == "ortho" else "backward" if norm == "forward" else "forward"
        k = np.arange(s[-1] // 2 + 1)
        once = (k == 0) | ((k == s[-1] // 2) & (s[-1] % 2 == 0))  # the bins without a mirror image
        if kind == "rfft":  # Re(fftn(g padded to the full spectrum)), as an irfftn of conj(g), inner bins halved
            w = np.moveaxis(np.conj(g), last, -1)
            y = np.fft.irfftn(np.moveaxis(np.where(once, w, 0.5 * w), -1, last), s=s, axes=axes, norm=dual)
        else:  # irfft: the conjugate of an rfft, the inner bins counted twice
            w = np.moveaxis(np.fft.rfftn(g, axes=axes, norm=dual), last, -1)
            y = np.moveaxis(np.conj(np.where(once, w, 2 * w)), -1, last)
    for i in range(len(axes)):
        y = fft_resize(y, axes[i], np.shape(a)[axes[i]])
    if np.result_type(a).kind != "c":
        y = np.real(y)
    return y


COMPLEX_HELPERS = ("real_bar", "imag_bar", "abs_complex_share", "abs_bar", "angle_dot", "angle_bar", "fft_plan",
                   "fft_resize", "fft_bar")
for _name in COMPLEX_HELPERS:
    globals()[_name].__module__ = "srcjax.adjoint"
