"""Private copies of NumPy arguments that jaxlib's upload can alias (issue #18, np48).

srcjax copies every NumPy argument it hands jaxlib's C++ dispatcher (``cpp_calls.py``,
``packed_calls.py``): the dispatcher uploads a NumPy array with ``kImmutableZeroCopy``, and XLA's CPU
client then reads the array's memory while the program runs. It aliases only memory aligned to
:data:`ALIGN` bytes; any other array it copies again, into memory of its own (measured with
``jax.device_put``: an array at an address ``% 64`` of 16, 32 or 48 was copied, one at 0 aliased).
NumPy's allocator (``malloc``) gives 16-byte alignment, and ``np.frombuffer`` of a ``bytes`` object
(the packed copies) never 64, so a large argument was copied twice a call: ``rosen``'s f64[1e5] (800 KB)
in ``benchmarks/bench_grad.py``, ~25-50 us a copy.

:func:`copy` and :func:`joined` make the one copy srcjax needs in memory aligned to :data:`ALIGN`, which the
upload then aliases. Below :data:`LARGE` bytes the plain copies stay (``ndarray.copy``, ``b"".join``):
an aligned buffer costs ~1 us of Python work more, and a second copy of a small array costs less.

:func:`in_place` (round np49) is no copy at all: a packed call whose one large argument is the caller's own
C-contiguous array at an aligned address hands that memory to the upload as it is (what ``jax.jit`` does) and
then waits for its program before it returns (``packed_calls``' ``waited``), so a write to the array once the
call has returned can no longer reach the program. An array at any other address is copied as before: XLA's
CPU client would copy it itself, and waiting behind that copy measured slower than srcjax's aligned copy and
an asynchronous program (rosen, f64[1e5]: 1.2-1.35x jax.jit's time against 0.8-1.1x).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ALIGN", "LARGE", "copy", "empty", "in_place", "joined"]

ALIGN = 64  # (XLA's CPU client: the alignment it aliases a host buffer at, cpu_function_runtime's kMinAlign)
LARGE = 1 << 15  # bytes from which a copy is made aligned (below: NumPy's own copy)
_UINT8 = np.dtype(np.uint8)
_concatenate = np.concatenate
_copyto = np.copyto
_addressof = ctypes.addressof
_char_at = ctypes.c_char.from_buffer


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A new C-contiguous array of ``shape`` and ``dtype`` (not of objects) whose data starts at an address
    aligned to :data:`ALIGN` bytes."""
    dtype = np.dtype(dtype)
    n = dtype.itemsize
    for d in shape:
        n *= d
    raw = np.empty(n + ALIGN, _UINT8)
    start = -raw.__array_interface__["data"][0] % ALIGN
    return raw[start:start + n].view(dtype).reshape(shape)


def copy(x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of the NumPy array ``x`` of its own, aligned to :data:`ALIGN` bytes where it has
    :data:`LARGE` bytes or more (what ``x.copy()`` gives otherwise)."""
    if x.nbytes < LARGE or x.dtype.hasobject:
        return x.copy()
    out = empty(x.shape, x.dtype)
    _copyto(out, x, casting="no")
    return out


def joined(arrays: Sequence[np.ndarray], dtype: np.dtype, size: int) -> np.ndarray:
    """The flat array of ``size`` elements of ``dtype`` holding ``arrays`` (each of ``dtype``, in C order)
    one after another: a new array aligned to :data:`ALIGN` bytes. Raises TypeError where an array is of
    another dtype (as ``np.frombuffer`` of the joined bytes cannot tell, and ``packed_calls`` checks first)."""
    out = empty((size,), dtype)
    if len(arrays) == 1:
        a = arrays[0]
        _copyto(out.reshape(a.shape), a, casting="no")
    else:
        _concatenate(arrays, axis=None, out=out, casting="no")
    return out


def in_place(arrays: Sequence[np.ndarray]) -> np.ndarray | None:
    """The flat array a pack of ``arrays`` is, without a copy, where the upload reads it in place: one
    C-contiguous array (of :data:`LARGE` bytes or more: the packer's own rule) whose data start at an address
    aligned to :data:`ALIGN` bytes, as a flat view of the caller's memory; None otherwise (copy them:
    :func:`joined`). A call handing the view on must wait for its program before it returns."""
    if len(arrays) != 1:
        return None
    a = arrays[0]
    if not a.flags.c_contiguous:
        return None
    try:  # (the address through ctypes: ~0.3 us, against ~3 us for ``__array_interface__``'s dictionary)
        address = _addressof(_char_at(a))  # type: ignore[arg-type]
    except (TypeError, ValueError):  # (read-only memory, which ctypes will not take)
        address = a.__array_interface__["data"][0]
    return None if address % ALIGN else a.reshape(-1)
