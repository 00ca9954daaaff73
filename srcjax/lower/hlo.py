"""A small builder for StableHLO text, one ``func.func`` at a time.

Values are SSA names with their abstract value attached; every method emits
one line in StableHLO's pretty form (the generic form where the pretty one is
not accepted) and returns the new value. The builder knows nothing about
NumPy semantics: promotion and broadcasting are decided by the primitive
rules, which call these methods.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from ..core import ShapedArray, is_bfloat16

_SSA_NAME = re.compile(r"%\w+")  # an SSA value's name as the text spells it (%12, %arg0; %12#0 reads %12)

_ELEM = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "complex<f32>", "complex128": "complex<f64>",
}


# The platform a module is lowered for ("cpu" or "gpu"; specialize() sets it): where the two differ
# (np.linalg: LAPACK's custom calls on CPU, cuSOLVER's on a GPU) a lowering rule reads it.
TARGET: ContextVar[str] = ContextVar("TARGET", default="cpu")


_ELEM_OF: dict[Any, str] = {}  # dtype (or scalar type) -> its element type: dtype.name is a Python property


def elem_type(dtype: np.dtype) -> str:
    found = _ELEM_OF.get(dtype)
    if found is None:
        found = _ELEM_OF[dtype] = _ELEM[np.dtype(dtype).name]
    return found


def tensor_type(shape: Sequence[int], dtype: np.dtype) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{elem_type(dtype)}>"


def aval_type(aval: ShapedArray) -> str:
    return tensor_type(aval.shape, aval.dtype)


def compare_type(dtype: np.dtype) -> str:
    d = np.dtype(dtype)
    if d.kind in "fc" or is_bfloat16(d):
        return "FLOAT"
    if d.kind == "i":
        return "SIGNED"
    return "UNSIGNED"  # unsigned ints and bool


def is_float(dtype: np.dtype) -> bool:
    d = np.dtype(dtype)
    return d.kind == "f" or is_bfloat16(d)


def is_inexact(dtype: np.dtype) -> bool:
    """Floating point or complex: what carries a derivative."""
    return is_float(dtype) or np.dtype(dtype).kind == "c"


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a complex dtype's parts (complex64 -> float32); other dtypes unchanged."""
    d = np.dtype(dtype)
    return np.dtype(f"f{d.itemsize // 2}") if d.kind == "c" else d


def scalar_literal(value: Any, dtype: np.dtype) -> str:
    """MLIR text for one element of ``dtype``; exact for every float."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return "true" if bool(value) else "false"
    if d.kind in "iu":
        return str(int(value))
    if d.kind == "c":  # complex<fN>: a (real, imaginary) pair
        c = complex(np.asarray(value, dtype=d))
        part = np.dtype(f"f{d.itemsize // 2}")
        return f"({scalar_literal(c.real, part)}, {scalar_literal(c.imag, part)})"
    v = np.asarray(value, dtype=d)
    if bool(np.isfinite(v)):
        f = float(v)
        mantissa, e, exponent = repr(f).partition("e")
        if "." not in mantissa:  # MLIR needs `1.0e-05`, not `1e-05`
            mantissa += ".0"
        return mantissa + e + exponent
    # NaN and infinities: the bit pattern in hex.
    bits = v.view(f"u{d.itemsize}")
    return f"0x{int(bits):0{2 * d.itemsize}X}"


def dense_literal(array: np.ndarray) -> str:
    """``dense<...>`` payload for a whole array (splat when all elements agree)."""
    a = np.ascontiguousarray(array)
    if a.size == 0:
        return "dense<>"  # (an empty elements literal takes its shape from the type)
    flat = a.reshape(-1)
    if a.size == 1 or bool(np.all(flat == flat[0])) and not (a.dtype.kind in "fc" and np.isnan(flat[0])):
        return f"dense<{scalar_literal(flat[0], a.dtype)}>"
    if a.dtype == np.bool_:
        def nest(x: np.ndarray) -> str:
            if x.ndim == 0:
                return "true" if bool(x) else "false"
            return "[" + ", ".join(nest(e) for e in x) + "]"
        return f"dense<{nest(a)}>"
    return f'dense<"0x{a.astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()}">'


class HloValue:
    """An SSA value in the function being built, with its abstract value.

    ``literal`` keeps the Python scalar a weak constant came from, so that
    rules can materialize it directly in the dtype it is promoted to.
    """

    __slots__ = ("name", "aval", "literal")

    def __init__(self, name: str, aval: ShapedArray, literal: Any = None) -> None:
        self.name = name
        self.aval = aval
        self.literal = literal

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    def __repr__(self) -> str:
        return f"{self.name}: {self.aval.str_short()}"


class FuncBuilder:
    """Emits the body of one ``func.func``."""

    def __init__(self, name: str, arg_avals: Sequence[ShapedArray]) -> None:
        self.name = name
        self.args = [HloValue(f"%arg{i}", a) for i, a in enumerate(arg_avals)]
        self.lines: list[str] = []
        self._n = 0
        self._const_cache: dict[tuple[Any, ...], HloValue] = {}
        # a static array object -> its constant (region-scoped like _const_cache: a constant made inside a
        # region does not dominate the code after it)
        self.lifted: dict[int, tuple[Any, HloValue]] = {}
        self.indent = "    "
        self.loc: str | None = None
        # a value broadcast_in_dim made by repeating another along new leading axes -> that other (a
        # contraction reads the unrepeated operand: vmap's shared weight marked in a branch, branch_guard.py)
        self.repeated: dict[str, HloValue] = {}
        # a value a transpose made -> (its operand, the permutation): a contraction reads the operand with
        # its dimensions renumbered (``x.T @ g``, ``matmul_rhs_bar``'s swapaxes: no transpose to fold)
        self.transposed: dict[str, tuple[HloValue, list[int]]] = {}

    # -- plumbing ---------------------------------------------------------
    def fresh(self) -> str:
        self._n += 1
        return f"%{self._n - 1}"

    def emit(self, text: str, aval: ShapedArray) -> HloValue:
        name = self.fresh()
        loc = f" loc({self.loc})" if self.loc else ""
        self.lines.append(f"{self.indent}{name} = {text}{loc}")
        return HloValue(name, aval)

    def finish(self, results: Sequence[HloValue], visibility: str = "public",
               arg_attrs: Sequence[str | None] = (), result_attrs: Sequence[str | None] = ()) -> str:
        """The function's text; ``arg_attrs``/``result_attrs``: an attribute dictionary per argument
        and result, or None (sharding annotations of an SPMD entry function)."""
        self._drop_dead_transposes(results)
        rtypes = ", ".join(aval_type(r.aval) for r in results)
        if arg_attrs or result_attrs:
            arg_attrs = list(arg_attrs) or [None] * len(self.args)
            result_attrs = list(result_attrs) or [None] * len(results)
            args = ", ".join(f"{a.name}: {aval_type(a.aval)}" + (f" {t}" if t else "")
                             for a, t in zip(self.args, arg_attrs))
            rsig = ", ".join(aval_type(r.aval) + (f" {t}" if t else "") for r, t in zip(results, result_attrs))
        else:
            args = ", ".join(f"{a.name}: {aval_type(a.aval)}" for a in self.args)
            rsig = rtypes
        out = [f"  func.func {visibility} @{self.name}({args}) -> ({rsig}) {{"]
        out += ["  " + line for line in self.lines]
        if results:
            names = ", ".join(r.name for r in results)
            out.append(f"      func.return {names} : {rtypes}")
        else:
            out.append("      func.return")
        out.append("  }")
        return "\n".join(out)

    def _drop_dead_transposes(self, results: Sequence[HloValue]) -> None:
        """Drop the transposes nothing reads (a contraction read their operand instead: :meth:`_untransposed`)."""
        if not self.transposed:
            return
        text = "\n".join(self.lines) + " " + " ".join(r.name for r in results)
        uses = Counter(_SSA_NAME.findall(text))  # (one pass over the text, not one per transpose: models have 20-40)
        dead = {n for n in self.transposed if uses[n] == 1}  # (its definition only)
        if dead:
            self.lines = [ln for ln in self.lines if ln.lstrip().split(" ", 1)[0] not in dead]

    # -- regions (the bodies of if / case / while) -------------------------
    @contextmanager
    def region(self, lines: list[str] | None = None) -> Iterator[list[str]]:
        """Emit into ``lines`` (a new region, or one to continue) until the block ends.

        Values defined outside stay visible inside (StableHLO regions of ``if``,
        ``case`` and ``while`` may capture them); constants made inside are
        forgotten on exit, since they do not dominate the code after the region.
        """
        saved = (self.lines, self.indent, self._const_cache, self.lifted)
        self.lines = [] if lines is None else lines
        self.indent = saved[1] + "    "
        self._const_cache = dict(saved[2])
        self.lifted = dict(saved[3])
        try:
            yield self.lines
        finally:
            self.lines, self.indent, self._const_cache, self.lifted = saved

    def block_args(self, avals: Sequence[ShapedArray]) -> list[HloValue]:
        """Fresh block arguments for a region; emit them with :meth:`region_header`."""
        return [HloValue(self.fresh(), a) for a in avals]

    def region_return(self, values: Sequence[HloValue]) -> None:
        types = ", ".join(aval_type(v.aval) for v in values)
        names = ", ".join(v.name for v in values)
        self.lines.append(f"{self.indent}stablehlo.return {names} : {types}" if values else
                          f"{self.indent}stablehlo.return")

    def _multi(self, op: str, operands: Sequence[HloValue], regions: Sequence[tuple[list[HloValue], list[str]]],
               out_avals: Sequence[ShapedArray]) -> list[HloValue]:
        name = self.fresh()
        n = len(out_avals)
        lhs = f"{name}:{n}" if n > 1 else name
        in_types = ", ".join(aval_type(v.aval) for v in operands)
        out_types = ", ".join(aval_type(a) for a in out_avals)
        if n != 1:
            out_types = f"({out_types})"
        loc = f" loc({self.loc})" if self.loc else ""
        text = [f"{self.indent}{lhs} = \"{op}\"({', '.join(v.name for v in operands)}) ({{"]
        for k, (args, lines) in enumerate(regions):
            if k:
                text.append(f"{self.indent}}}, {{")
            if args:
                text.append(f"{self.indent}  ^bb0(" + ", ".join(f"{a.name}: {aval_type(a.aval)}" for a in args)
                            + "):")
            text += lines
        text.append(f"{self.indent}}}) : ({in_types}) -> {out_types}{loc}")
        self.lines += text
        if n == 1:
            return [HloValue(name, out_avals[0])]
        return [HloValue(f"{name}#{i}", a) for i, a in enumerate(out_avals)]

    def if_(self, pred: HloValue, branches: Sequence[list[str]], out_avals: Sequence[ShapedArray]) -> list[HloValue]:
        """``stablehlo.if`` (two branches, ``pred`` an i1 scalar) or ``stablehlo.case`` (an i32 index)."""
        op = "stablehlo.if" if len(branches) == 2 and pred.dtype == np.bool_ else "stablehlo.case"
        return self._multi(op, [pred], [([], lines) for lines in branches], out_avals)

    def while_(self, inits: Sequence[HloValue], cond: tuple[list[HloValue], list[str]],
               body: tuple[list[HloValue], list[str]]) -> list[HloValue]:
        return self._multi("stablehlo.while", inits, [cond, body], [v.aval for v in inits])

    # -- constants --------------------------------------------------------
    def constant(self, value: Any, aval: ShapedArray) -> HloValue:
        arr = np.asarray(value)
        if arr.shape != aval.shape:
            if arr.size == 1:
                arr = arr.reshape(())
            else:
                arr = np.broadcast_to(arr, aval.shape)
        arr = arr.astype(aval.dtype) if arr.dtype != aval.dtype else arr
        if arr.ndim == 0 or arr.size == 1:
            payload = f"dense<{scalar_literal(arr.reshape(-1)[0] if arr.size else 0, aval.dtype)}>"
        else:
            payload = dense_literal(arr)
        key = (payload, aval.shape, aval.dtype)
        if len(payload) < 200 and key in self._const_cache:
            hit = self._const_cache[key]
            # (the same constant with this aval: `np.float64(2.0)` after a weak Python `2.0` stays strong)
            return hit if hit.aval == aval else HloValue(hit.name, aval)
        if aval.size > 1 and payload[6:7] not in ('"', "["):  # a splat: its scalar, broadcast (as jax)
            # (XLA imports a splat constant as a literal of every element: 6 MB for f64[512,512,3], and
            # that many bytes copied by its passes; a broadcast of a scalar fuses, and compiles faster)
            scalar = self.constant(arr.reshape(-1)[0], aval.update(shape=()))
            v = self.emit(f"stablehlo.broadcast_in_dim {scalar.name}, dims = [] : "
                          f"({aval_type(scalar.aval)}) -> {aval_type(aval)}", aval)
        else:
            v = self.emit(f"stablehlo.constant {payload} : {aval_type(aval)}", aval)
        if len(payload) < 200:
            self._const_cache[key] = v
        return v

    def full(self, value: Any, shape: Sequence[int], dtype: np.dtype) -> HloValue:
        return self.constant(np.asarray(value, dtype=dtype), ShapedArray(tuple(shape), np.dtype(dtype)))

    # -- shape and type ---------------------------------------------------
    def convert(self, x: HloValue, dtype: np.dtype) -> HloValue:
        dtype = np.dtype(dtype)
        if x.dtype == dtype:
            return x
        if x.literal is not None:
            return self.full(x.literal, x.shape, dtype)
        if x.name in self.repeated:  # (a repeat stays one: the unrepeated value converted, then repeated)
            return self.broadcast_to(self.convert(self.repeated[x.name], dtype), x.shape)
        if dtype == np.bool_:  # convert truncates; NumPy tests != 0
            zero = self.full(0, x.shape, x.dtype)
            return self.compare("NE", x, zero)
        if x.dtype.kind == "c" and dtype.kind != "c":  # NumPy (and JAX) keep the real part
            x = self.part("real", x)
            if x.dtype == dtype:
                return x
        if x.dtype == np.bool_ and is_float(dtype):
            # Through uint8: XLA rewrites convert(pred) * y into select(pred, y, 0), which loses
            # 0 * inf = nan (np.true_divide(False, False) must be nan, not 0).
            x = self._convert(x, np.dtype(np.uint8))
        elif is_float(x.dtype) and dtype.kind in "iu" and dtype.itemsize < 8:
            # Through int64, as C casts do on x86: NumPy turns -2.7 into 254 as uint8, not 0.
            x = self._convert(x, np.dtype(np.int64))
        return self._convert(x, dtype)

    def _convert(self, x: HloValue, dtype: np.dtype) -> HloValue:
        out = x.aval.update(dtype=dtype)
        return self.emit(f"stablehlo.convert {x.name} : ({aval_type(x.aval)}) -> {aval_type(out)}", out)

    def broadcast_in_dim(self, x: HloValue, shape: Sequence[int], dims: Sequence[int]) -> HloValue:
        shape = tuple(shape)
        if x.shape == shape and list(dims) == list(range(len(shape))):
            return x
        if x.literal is not None:
            return self.full(x.literal, shape, x.dtype)
        out = x.aval.update(shape=shape)
        r = self.emit(
            f"stablehlo.broadcast_in_dim {x.name}, dims = {list(dims)} : "
            f"({aval_type(x.aval)}) -> {aval_type(out)}", out)
        lead = len(shape) - x.ndim
        if list(dims) == list(range(lead, len(shape))) and shape[lead:] == x.shape:
            self.repeated[r.name] = self.repeated.get(x.name, x)
        return r

    def broadcast_to(self, x: HloValue, shape: Sequence[int]) -> HloValue:
        """NumPy broadcasting of ``x`` to ``shape`` (trailing dimensions align)."""
        shape = tuple(shape)
        if x.shape == shape:
            return x
        lead = len(shape) - x.ndim
        if any(d not in (1, s) for d, s in zip(x.shape, shape[lead:])):
            raise ValueError(f"cannot broadcast {x.shape} to {shape}")
        # Drop size-1 dims that expand, so broadcast_in_dim stays simple.
        return self.broadcast_in_dim(x, shape, list(range(lead, len(shape))))

    def reshape(self, x: HloValue, shape: Sequence[int]) -> HloValue:
        shape = tuple(shape)
        if x.shape == shape:
            return x
        if x.literal is not None:
            return self.full(x.literal, shape, x.dtype)
        out = x.aval.update(shape=shape)
        return self.emit(f"stablehlo.reshape {x.name} : ({aval_type(x.aval)}) -> {aval_type(out)}", out)

    def transpose(self, x: HloValue, perm: Sequence[int]) -> HloValue:
        perm = list(perm)
        if perm == list(range(x.ndim)):
            return x
        lead = x.ndim - self.repeated[x.name].ndim if x.name in self.repeated else 0
        if lead and perm[:lead] == list(range(lead)):  # (a repeat stays one: the unrepeated value transposed)
            t = self.transpose(self.repeated[x.name], [p - lead for p in perm[lead:]])
            return self.broadcast_to(t, tuple(x.shape[p] for p in perm))
        out = x.aval.update(shape=tuple(x.shape[p] for p in perm))
        t = self.emit(f"stablehlo.transpose {x.name}, dims = {perm} : ({aval_type(x.aval)}) -> {aval_type(out)}", out)
        self.transposed[t.name] = (x, perm)
        return t

    def slice(self, x: HloValue, starts: Sequence[int], limits: Sequence[int],
              strides: Sequence[int] | None = None) -> HloValue:
        strides = list(strides) if strides is not None else [1] * x.ndim
        if list(starts) == [0] * x.ndim and tuple(limits) == x.shape and strides == [1] * x.ndim:
            return x
        shape = tuple(max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(starts, limits, strides))
        out = x.aval.update(shape=shape)
        parts = ", ".join(
            f"{lo}:{hi}" if st == 1 else f"{lo}:{hi}:{st}" for lo, hi, st in zip(starts, limits, strides))
        return self.emit(f"stablehlo.slice {x.name} [{parts}] : ({aval_type(x.aval)}) -> {aval_type(out)}", out)

    def reverse(self, x: HloValue, dims: Sequence[int]) -> HloValue:
        if not dims:
            return x
        return self.emit(f"stablehlo.reverse {x.name}, dims = {list(dims)} : {aval_type(x.aval)}", x.aval)

    def concatenate(self, xs: Sequence[HloValue], dim: int) -> HloValue:
        if len(xs) == 1:
            return xs[0]
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        out = xs[0].aval.update(shape=tuple(shape))
        names = ", ".join(x.name for x in xs)
        types = ", ".join(aval_type(x.aval) for x in xs)
        return self.emit(f"stablehlo.concatenate {names}, dim = {dim} : ({types}) -> {aval_type(out)}", out)

    def iota(self, aval: ShapedArray, dim: int) -> HloValue:
        return self.emit(f"stablehlo.iota dim = {dim} : {aval_type(aval)}", aval)

    def pad(self, x: HloValue, value: HloValue, low: Sequence[int], high: Sequence[int],
            interior: Sequence[int]) -> HloValue:
        shape = tuple(lo + hi + d + max(0, d - 1) * it
                      for d, lo, hi, it in zip(x.shape, low, high, interior))
        out = x.aval.update(shape=shape)
        return self.emit(
            f"stablehlo.pad {x.name}, {value.name}, low = {list(low)}, high = {list(high)}, "
            f"interior = {list(interior)} : ({aval_type(x.aval)}, {aval_type(value.aval)}) -> "
            f"{aval_type(out)}", out)

    def dynamic_slice(self, x: HloValue, starts: Sequence[HloValue], sizes: Sequence[int]) -> HloValue:
        out = x.aval.update(shape=tuple(sizes))
        idx = ", ".join(s.name for s in starts)
        itypes = ", ".join(aval_type(s.aval) for s in starts)
        return self.emit(
            f"stablehlo.dynamic_slice {x.name}, {idx}, sizes = {list(sizes)} : "
            f"({aval_type(x.aval)}, {itypes}) -> {aval_type(out)}", out)

    # -- elementwise ------------------------------------------------------
    def unary(self, op: str, x: HloValue, out: ShapedArray | None = None) -> HloValue:
        out = out or x.aval
        if op.startswith("chlo."):
            return self.emit(f"{op} {x.name} : {aval_type(x.aval)} -> {aval_type(out)}", out)
        if out.dtype != x.dtype:  # is_finite and friends
            return self.emit(f"stablehlo.{op} {x.name} : ({aval_type(x.aval)}) -> {aval_type(out)}", out)
        return self.emit(f"stablehlo.{op} {x.name} : {aval_type(out)}", out)

    def binary(self, op: str, x: HloValue, y: HloValue) -> HloValue:
        assert x.shape == y.shape and x.dtype == y.dtype, (op, x, y)
        return self.emit(f"stablehlo.{op} {x.name}, {y.name} : {aval_type(x.aval)}", x.aval.update(weak_type=False))

    def complex(self, re: HloValue, im: HloValue) -> HloValue:
        """``re + 1j * im`` from two same-typed floating-point values."""
        assert re.shape == im.shape and re.dtype == im.dtype, (re, im)
        out = ShapedArray(re.shape, np.dtype(np.complex64 if re.dtype == np.float32 else np.complex128))
        return self.emit(f"stablehlo.complex {re.name}, {im.name} : ({aval_type(re.aval)}, {aval_type(im.aval)}) "
                         f"-> {aval_type(out)}", out)

    def part(self, which: str, x: HloValue) -> HloValue:
        """``stablehlo.real``/``imag`` of a complex value (a floating-point value of its parts' dtype)."""
        return self.unary(which, x, ShapedArray(x.shape, real_dtype(x.dtype)))

    def abs2(self, x: HloValue) -> HloValue:
        """``|x|**2``, real (``x * x`` for a real ``x``)."""
        if x.dtype.kind != "c":
            return self.binary("multiply", x, x)
        re, im = self.part("real", x), self.part("imag", x)
        return self.binary("add", self.binary("multiply", re, re), self.binary("multiply", im, im))

    def compare(self, direction: str, x: HloValue, y: HloValue) -> HloValue:
        assert x.shape == y.shape and x.dtype == y.dtype, (direction, x, y)
        out = ShapedArray(x.shape, np.dtype(np.bool_))
        return self.emit(
            f"stablehlo.compare {direction}, {x.name}, {y.name}, {compare_type(x.dtype)} : "
            f"({aval_type(x.aval)}, {aval_type(y.aval)}) -> {aval_type(out)}", out)

    def select(self, pred: HloValue, x: HloValue, y: HloValue) -> HloValue:
        return self.emit(
            f"stablehlo.select {pred.name}, {x.name}, {y.name} : "
            f"{aval_type(pred.aval)}, {aval_type(x.aval)}", x.aval)

    def clamp(self, lo: HloValue, x: HloValue, hi: HloValue) -> HloValue:
        return self.emit(
            f"stablehlo.clamp {lo.name}, {x.name}, {hi.name} : "
            f"({aval_type(lo.aval)}, {aval_type(x.aval)}, {aval_type(hi.aval)}) -> {aval_type(x.aval)}", x.aval)

    # -- contractions and reductions -------------------------------------
    def dot_general(self, x: HloValue, y: HloValue, batch: tuple[Sequence[int], Sequence[int]],
                    contract: tuple[Sequence[int], Sequence[int]], out: ShapedArray) -> HloValue:
        x, y, batch, contract = self._untransposed(x, y, batch, contract)
        for which in (0, 1):  # an operand repeated along leading axes: the product of the unrepeated one
            r = self._unrepeated_dot(x, y, batch, contract, out, which)
            if r is not None:
                return r
        prec = ", precision = [HIGHEST, HIGHEST]" if is_float(out.dtype) else ""
        bd = f"batching_dims = {list(batch[0])} x {list(batch[1])}, " if batch[0] else ""
        return self.emit(
            f"stablehlo.dot_general {x.name}, {y.name}, {bd}"
            f"contracting_dims = {list(contract[0])} x {list(contract[1])}{prec} : "
            f"({aval_type(x.aval)}, {aval_type(y.aval)}) -> {aval_type(out)}", out)

    def _untransposed(self, x: HloValue, y: HloValue, batch: tuple[Sequence[int], Sequence[int]],
                      contract: tuple[Sequence[int], Sequence[int]]) -> tuple[HloValue, HloValue, Any, Any]:
        """The operands of a dot_general, an operand a transpose made replaced by the transpose's operand
        and its batch and contracting dimensions renumbered (as jax writes ``x.T @ g``: one dot_general,
        nothing for XLA to fold), where the free dimensions keep their order (the result's layout)."""
        ops, dims = [x, y], [[list(batch[0]), list(contract[0])], [list(batch[1]), list(contract[1])]]
        for k in (0, 1):
            hit = self.transposed.get(ops[k].name)
            if hit is None:
                continue
            src, perm = hit
            free = [perm[d] for d in range(ops[k].ndim) if d not in dims[k][0] and d not in dims[k][1]]
            if free == sorted(free):
                ops[k], dims[k] = src, [[perm[d] for d in dims[k][0]], [perm[d] for d in dims[k][1]]]
        return ops[0], ops[1], (dims[0][0], dims[1][0]), (dims[0][1], dims[1][1])

    def _unrepeated_dot(self, x: HloValue, y: HloValue, batch: tuple[Sequence[int], Sequence[int]],
                        contract: tuple[Sequence[int], Sequence[int]], out: ShapedArray,
                        which: int) -> HloValue | None:
        """:meth:`dot_general` where operand ``which`` is a repeat (:attr:`repeated`) whose repeated axes
        are batch or free axes: the product of the unrepeated operand, the other operand's partner of
        each repeated batch axis a free axis of it, transposed (and broadcast along a repeated free axis)
        into the result's layout; None where no operand is such a repeat (vmap's shared weight read in a
        branch on batched data, ``batch_tensordot(taken(batch_broadcast(A, n), test), x, ...)``: one
        product with ``A``, not one per example)."""
        ops = [x, y]
        src = self.repeated.get(ops[which].name)
        if src is None:
            return None
        lead = ops[which].ndim - src.ndim
        mine, summed = (batch[which], batch[1 - which]), (contract[which], contract[1 - which])
        if any(i < lead for i in summed[0]):
            return None  # (a repeated axis contracted: left as it is)
        # the result's axes named: ("b", k) the k-th batch pair, (0, i) / (1, j) free axes of x / y
        nx, ny = x.ndim, y.ndim
        names = [("b", k) for k in range(len(batch[0]))] + \
            [(0, i) for i in range(nx) if i not in batch[0] and i not in contract[0]] + \
            [(1, j) for j in range(ny) if j not in batch[1] and j not in contract[1]]
        keep = [k for k, i in enumerate(mine[0]) if i >= lead]
        partner = {mine[1][k]: k for k, i in enumerate(mine[0]) if i < lead}
        nb = ([mine[0][k] - lead for k in keep], [mine[1][k] for k in keep])
        nc = ([i - lead for i in summed[0]], list(summed[1]))
        if which == 1:
            nb, nc = (nb[1], nb[0]), (nc[1], nc[0])
        ops[which] = src
        new_names: list[Any] = [("b", k) for k in keep]
        order = [1 - which, which]  # (the other operand first: its stack axes lead the product, as they lead
        for w in order:             # the result)
            for i in range(ops[w].ndim):
                if i not in nb[w] and i not in nc[w]:
                    if w == which:
                        new_names.append((w, i + lead))
                    else:
                        new_names.append(("b", partner[i]) if i in partner else (w, i))
        shape = tuple(out.shape[names.index(n)] for n in new_names)
        r = self.dot_general(ops[order[0]], ops[order[1]], (nb[order[0]], nb[order[1]]),
                             (nc[order[0]], nc[order[1]]), ShapedArray(shape, out.dtype))
        present = [n for n in names if n in new_names]
        r = self.transpose(r, [new_names.index(n) for n in present])
        return self.broadcast_in_dim(r, out.shape, [names.index(n) for n in present])

    def reduce(self, x: HloValue, op: str, init: Any, dims: Sequence[int]) -> HloValue:
        """Reduce ``x`` over ``dims`` with the binary ``stablehlo.<op>`` starting from ``init``."""
        dims = sorted(dims)
        if not dims:
            return x
        init_v = self.full(init, (), x.dtype)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in dims)
        out = ShapedArray(shape, x.dtype)
        return self.emit(
            f"stablehlo.reduce({x.name} init: {init_v.name}) applies stablehlo.{op} across dimensions = "
            f"{dims} : ({aval_type(x.aval)}, {aval_type(init_v.aval)}) -> {aval_type(out)}", out)

    def arg_reduce(self, x: HloValue, axis: int, index_dtype: np.dtype, largest: bool) -> HloValue:
        """Index of the first max (``largest``) or min along ``axis``, as NumPy's argmax/argmin.

        One variadic reduce over (value, index) pairs. The reducer keeps the pair that comes
        first in a total order: a NaN before any number (NumPy returns the first NaN, for argmax
        and argmin alike), then the larger (smaller) value, then, among equal values or among
        NaNs, the lower index. A total order makes the reducer commutative and associative, so
        XLA may combine partial results in any order. The init pair (the worst value, the largest
        index) loses every comparison. The caller refuses an empty ``axis``.
        """
        index_dtype = np.dtype(index_dtype)
        d = x.dtype
        worst = (-np.inf if largest else np.inf) if is_float(d) else \
            (not largest) if d == np.bool_ else (np.iinfo(d).min if largest else np.iinfo(d).max)
        init_v = self.full(worst, (), d)
        init_i = self.full(np.iinfo(index_dtype).max, (), index_dtype)
        idx = self.iota(ShapedArray(x.shape, index_dtype), axis)
        shape = tuple(n for i, n in enumerate(x.shape) if i != axis)
        vt, it = f"tensor<{elem_type(d)}>", f"tensor<{elem_type(index_dtype)}>"
        ct = compare_type(d)

        def cmp(name: str, direction: str, a: str, b: str, t: str = vt, kind: str = ct) -> str:
            return f"%{name} = stablehlo.compare {direction}, {a}, {b}, {kind} : ({t}, {t}) -> tensor<i1>"

        def logic(name: str, op: str, a: str, b: str = "") -> str:
            return f"%{name} = stablehlo.{op} {a}{', ' + b if b else ''} : tensor<i1>"

        # the candidate (%v, %i) against the accumulator (%w, %j)
        body = [cmp("greater", "GT" if largest else "LT", "%v", "%w"), cmp("equal", "EQ", "%v", "%w")]
        if is_float(d):
            body += [cmp("v_nan", "NE", "%v", "%v"), cmp("w_nan", "NE", "%w", "%w"),
                     logic("w_num", "not", "%w_nan"), logic("nan_first", "and", "%v_nan", "%w_num"),
                     logic("better", "or", "%greater", "%nan_first"), logic("both_nan", "and", "%v_nan", "%w_nan"),
                     logic("same", "or", "%equal", "%both_nan")]
            better, same = "%better", "%same"
        else:
            better, same = "%greater", "%equal"
        body += [cmp("earlier", "LT", "%i", "%j", it, "SIGNED"), logic("tie_won", "and", same, "%earlier"),
                 logic("pick", "or", better, "%tie_won"),
                 f"%value = stablehlo.select %pick, %v, %w : tensor<i1>, {vt}",
                 f"%index = stablehlo.select %pick, %i, %j : tensor<i1>, {it}",
                 f"stablehlo.return %value, %index : {vt}, {it}"]
        name = self.fresh()
        out_v, out_i = ShapedArray(shape, d), ShapedArray(shape, index_dtype)
        self.lines.append(
            f"{self.indent}{name}:2 = stablehlo.reduce({x.name} init: {init_v.name}), ({idx.name} init: "
            f"{init_i.name}) across dimensions = [{axis}] : ({aval_type(x.aval)}, {aval_type(idx.aval)}, {vt}, "
            f"{it}) -> ({aval_type(out_v)}, {aval_type(out_i)})")
        self.lines.append(f"{self.indent}  reducer(%v: {vt}, %w: {vt}) (%i: {it}, %j: {it}) {{")
        self.lines += [f"{self.indent}    {line}" for line in body]
        self.lines.append(f"{self.indent}  }}")
        return HloValue(f"{name}#1", out_i)


    def sort(self, operands: Sequence[HloValue], dimension: int, num_keys: int = 1) -> list[HloValue]:
        """``stablehlo.sort`` of ``operands`` (one shape) along ``dimension``: stable and ascending,
        ordered by the first ``num_keys`` operands lexicographically (the first most significant), the
        others carried along. NumPy's order: NaNs after every number and equal to each other, -0.0 equal
        to 0.0 (so a stable sort keeps their order)."""
        args: list[str] = []
        body: list[str] = []
        less, equal = "", ""
        for k, v in enumerate(operands):
            t = f"tensor<{elem_type(v.dtype)}>"
            args += [f"%sort_a{k}: {t}", f"%sort_b{k}: {t}"]
            if k >= num_keys:
                continue
            a, b, ct = f"%sort_a{k}", f"%sort_b{k}", compare_type(v.dtype)

            def cmp(name: str, direction: str, x: str, y: str, t: str = t, ct: str = ct) -> str:
                return f"%{name} = stablehlo.compare {direction}, {x}, {y}, {ct} : ({t}, {t}) -> tensor<i1>"

            if is_float(v.dtype):  # a < b, or b is NaN and a is not; equal: neither is before the other
                body += [cmp(f"lt{k}", "LT", a, b), cmp(f"gt{k}", "GT", a, b), cmp(f"anan{k}", "NE", a, a),
                         cmp(f"bnan{k}", "NE", b, b),
                         f"%anum{k} = stablehlo.not %anan{k} : tensor<i1>",
                         f"%bnum{k} = stablehlo.not %bnan{k} : tensor<i1>",
                         f"%nanb{k} = stablehlo.and %anum{k}, %bnan{k} : tensor<i1>",
                         f"%nana{k} = stablehlo.and %bnum{k}, %anan{k} : tensor<i1>",
                         f"%less{k} = stablehlo.or %lt{k}, %nanb{k} : tensor<i1>",
                         f"%more{k} = stablehlo.or %gt{k}, %nana{k} : tensor<i1>"]
            else:
                body += [cmp(f"less{k}", "LT", a, b), cmp(f"more{k}", "GT", a, b)]
            body += [f"%either{k} = stablehlo.or %less{k}, %more{k} : tensor<i1>",
                     f"%same{k} = stablehlo.not %either{k} : tensor<i1>"]
            if k == 0:
                less, equal = "%less0", "%same0"
            else:  # earlier keys equal, and this one less
                body += [f"%tie{k} = stablehlo.and {equal}, %less{k} : tensor<i1>",
                         f"%acc{k} = stablehlo.or {less}, %tie{k} : tensor<i1>",
                         f"%eqacc{k} = stablehlo.and {equal}, %same{k} : tensor<i1>"]
                less, equal = f"%acc{k}", f"%eqacc{k}"
        body.append(f"stablehlo.return {less} : tensor<i1>")
        name = self.fresh()
        n = len(operands)
        lhs = f"{name}:{n}" if n > 1 else name
        in_types = ", ".join(aval_type(v.aval) for v in operands)
        out_types = in_types if n == 1 else f"({in_types})"
        self.lines.append(f'{self.indent}{lhs} = "stablehlo.sort"({", ".join(v.name for v in operands)}) ({{')
        self.lines.append(f"{self.indent}  ^bb0({', '.join(args)}):")
        self.lines += [f"{self.indent}    {line}" for line in body]
        self.lines.append(f"{self.indent}}}) {{dimension = {dimension} : i64, is_stable = true}} : ({in_types}) -> "
                          f"{out_types}")
        if n == 1:
            return [HloValue(name, operands[0].aval)]
        return [HloValue(f"{name}#{i}", v.aval) for i, v in enumerate(operands)]


def module_text(funcs: Sequence[str], name: str = "srcjax", num_partitions: int = 1,
                preamble: Sequence[str] = (), num_replicas: int = 1) -> str:
    return f"module @{name} attributes {{mhlo.num_partitions = {num_partitions} : i32, " \
        f"mhlo.num_replicas = {num_replicas} : i32}} {{\n" + "".join(line + "\n" for line in preamble) + \
        "\n".join(funcs) + "\n}\n"
