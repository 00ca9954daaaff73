"""Core records shared by every stage: abstract values, source spans, errors.

Nothing here imports jaxlib; everything here is cheap to import.
"""

from __future__ import annotations

import linecache
import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# bfloat16 is ml_dtypes' dtype (jaxlib depends on ml_dtypes). Importing ml_dtypes takes 1-2 s, so srcjax
# does not: a program only meets bfloat16 in arrays made with ml_dtypes, imported by then. Tell it by
# name (is_bfloat16); `core.bfloat16` imports ml_dtypes when asked for.
SUPPORTED_DTYPES = {
    np.dtype(t)
    for t in (
        np.bool_, np.int8, np.int16, np.int32, np.int64,
        np.uint8, np.uint16, np.uint32, np.uint64,
        np.float16, np.float32, np.float64, np.complex64, np.complex128,
    )
}


def is_bfloat16(d: np.dtype) -> bool:
    return d.name == "bfloat16" and d.kind == "V"


def __getattr__(name: str) -> Any:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# The dtype a weakly typed Python scalar has in NumPy 2 (NEP 50).
PYTHON_SCALAR_DTYPES = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


# ---------------------------------------------------------------------------
# Abstract values
# ---------------------------------------------------------------------------


def transformation(f: Any) -> Any:
    """Marks a transformation (grad, vmap, ...) that the normalizer applies while reading a caller:
    ``srcjax.vmap(f, in_axes=(0, None))(x, y)`` inside a function with static arguments is a call of the
    generated function, so it can be differentiated and batched again."""
    f.__srcjax_transform__ = True
    return f


def index_params(*names: str) -> Any:
    """Marks parameters of a library helper (``srcjax.batched``) that only receive indices: a key,
    integer arrays, flags. Derivatives never flow through them, even where the name passed is
    differentiated (an index carried by a loop together with differentiated values): a derivative of
    the helper takes them as constants (``transforms/anf.differentiable_params``), as a primitive's
    ``nondiff_args``."""
    def mark(f: Any) -> Any:
        f.__srcjax_index_params__ = names
        return f
    return mark


def linear_params(*names: str, shape: tuple[str, ...] = ()) -> Any:
    """Marks a library helper (``srcjax.batched``) as linear in its parameters ``names`` together (its other
    parameters being indices or static values): the helper's JVP is the helper again, called with the
    tangents in place of ``names`` (zeros for one without; ``transforms/forward_ad``), not a derivative of its
    body. A second vmap then meets the helper itself, whose rule it has (``transforms/batch_nested``), instead of
    the Python logic of its body on a key it batches. ``shape``: parameters read for their shape only (the
    reference a sum or a broadcast is shaped like), index parameters (:func:`index_params`): no derivative
    flows through them."""
    def mark(f: Any) -> Any:
        f.__srcjax_linear_params__ = names
        if shape:
            f.__srcjax_index_params__ = tuple(dict.fromkeys([*getattr(f, "__srcjax_index_params__", ()), *shape]))
        return f
    return mark


@dataclass(frozen=True)
class ShapedArray:
    """The abstract value of an array: shape, dtype and NEP 50 weak typing.

    ``weak_type`` is true for values that behave like Python scalars in NumPy
    (a Python ``float`` argument, ``x.shape[0] * 0.5`` ...): they take the dtype
    of the array they meet. ``origin`` names the Python int/bool arguments the
    value was computed from; if such a value reaches a place that needs a
    static value, the argument is made static and the function re-specialized.
    A rolled loop adds its own origin object (``lower.values.LoopOrigin``) for the
    Python ints it carries: needed static, the loop unrolls instead.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False
    origin: frozenset[Hashable] = field(default=frozenset(), compare=False)  # argument names, loop origins

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def update(self, *, shape: tuple[int, ...] | None = None, dtype: np.dtype | None = None,
               weak_type: bool | None = None, origin: frozenset[Hashable] | None = None) -> ShapedArray:
        """This value with the fields given changed (``dataclasses.replace``'s result, made directly: the
        lowering updates a result's weak type or origins at most primitives it applies)."""
        return type(self)(self.shape if shape is None else shape, self.dtype if dtype is None else dtype,
                          self.weak_type if weak_type is None else weak_type,
                          self.origin if origin is None else origin)

    def str_short(self) -> str:
        return f"{dtype_short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (as ``jax.ShapeDtypeStruct``)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...] | list[int], dtype: Any) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ShapeDtypeStruct)
            and self.shape == other.shape
            and self.dtype == other.dtype
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


_SHORT = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "complex64": "c64", "complex128": "c128",
}


def dtype_short_name(dtype: np.dtype) -> str:
    return _SHORT.get(np.dtype(dtype).name, np.dtype(dtype).name)


def canonical_dtype(dtype: Any) -> np.dtype:
    """``np.dtype(dtype)``, refusing what XLA cannot hold (objects, strings, long double)."""
    try:
        d = np.dtype(dtype)
    except TypeError:
        if dtype != "bfloat16":
            raise
        import ml_dtypes  # (imported when first used: NumPy knows the name only once it is)

        d = np.dtype(ml_dtypes.bfloat16)
    if d not in SUPPORTED_DTYPES and not is_bfloat16(d):
        raise DTypeError(f"dtype {d} is not supported (supported: bool, int8-64, uint8-64, "
                         "float16, bfloat16, float32, float64, complex64, complex128)",
                         hint="use one of these dtypes (strings and objects are not arrays compiled code computes)")
    return d


# ---------------------------------------------------------------------------
# Source spans and errors
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """A place in the user's source: 1-based line, 0-based column."""

    filename: str
    line: int
    col: int
    end_line: int
    end_col: int

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.line).rstrip("\n")

    def text(self) -> str:
        """The source text the span covers ("" where the file cannot be read)."""
        lines = [linecache.getline(self.filename, n).rstrip("\n") for n in range(self.line, self.end_line + 1)]
        if not lines or not any(lines):
            return ""
        lines[-1] = lines[-1][:self.end_col]
        lines[0] = lines[0][self.col:]
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col + 1}"


class TranspileError(Exception):
    """Base class of every error srcjax reports about a user's program.

    Carries the place (file:line:col), the offending line with a caret under
    the expression, and a hint of what to write instead.
    """

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None) -> None:
        self.message = message
        self.span = span
        self.hint = hint
        self.note: str | None = None
        self.chain: list[Span] = []  # the calls that led to ``span``, innermost first (a traceback)
        # raised by srcjax's library code (``srcjax.random``) about its arguments: located at the caller's line
        self.at_caller = False
        super().__init__(message)

    def with_span(self, span: Span | None) -> TranspileError:
        if self.span is None and span is not None:
            self.span = span
        return self

    def called_from(self, site: Span | None) -> TranspileError:
        """Record that the code where this error is was reached by a call at ``site`` (one entry a line)."""
        if site is not None and self.span is not None:  # (sites in source srcjax wrote too: ``api._clean``
            # maps them to the user's line they come from; they are never printed)
            seen = {(s.filename, s.line) for s in [self.span, *self.chain]}
            if (site.filename, site.line) not in seen:
                self.chain.append(site)
        return self

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        head = f"{self.message}"
        lines = []
        if self.span is not None:
            lines.append(f"{self.span}: error: {head}")
            src = self.span.source_line()
            if src:
                lines.append(f"    {src}")
                end = self.span.end_col if self.span.end_line == self.span.line else len(src)
                width = max(1, end - self.span.col)
                lines.append("    " + " " * self.span.col + "^" * width)
        else:
            lines.append(head)
        if self.note:
            lines.append(f"note: {self.note}")
        for site in self.chain:
            if site.filename.startswith("<srcjax."):
                continue
            lines.append(f"  called from {site}")
            src = site.source_line()
            if src:
                lines.append(f"    {src.strip()}")
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


def assertion_failed(msg: Any) -> TranspileError:
    """A generated ``assert`` that failed at transpile time (its message ``"why; hint: what to do"``)."""
    why, _, hint = (str(msg) if msg else "").partition("; hint: ")
    return TranspileError(f"assertion failed at transpile time{': ' + why if why else ''}", hint=hint or None)


class ShapeError(TranspileError, ValueError):
    """Operand shapes do not fit the operation (found before anything runs)."""

    # grad's check: the output's inferred type is an array with dimensions or a container (what
    # ``srcjax.hessian`` reads to take ``jacfwd(jacrev(f))`` instead of forward over reverse)
    not_scalar_output = False


def not_scalar_output(message: str, span: Span | None = None, hint: str | None = None) -> ShapeError:
    """grad's refusal of an output that is not a scalar (``ShapeError.not_scalar_output``)."""
    e = ShapeError(message, span=span, hint=hint)
    e.not_scalar_output = True
    return e


class DTypeError(TranspileError, TypeError):
    """An operand has a dtype the operation does not accept."""


class UnsupportedSyntaxError(TranspileError):
    """A Python construct srcjax does not transpile (yet)."""


class UnknownFunctionError(TranspileError, NameError):
    """A name or function srcjax cannot resolve or does not support."""


class OpaqueCallError(UnknownFunctionError):
    """A call of something srcjax cannot read (library code, a C function, a method of an arbitrary
    object such as a ``np.random.Generator``): run once while compiling, its result would be frozen
    into the compiled code, so it is refused where the program calls it."""


class UnboundAxisNameError(TranspileError, NameError):
    """A collective (``srcjax.lax.psum``, ``axis_index``, ...) over an axis name no enclosing
    transformation binds (JAX's "unbound axis name"): called eagerly, or compiled outside a
    ``srcjax.vmap(..., axis_name=...)`` of that name."""


class ArgumentError(TranspileError, TypeError):
    """A compiled function was called with the wrong arguments."""


class ShardingError(ArgumentError, ValueError):
    """A sharding that does not fit its array or its program: a PartitionSpec longer than the array's
    rank, a mesh axis that does not divide the dimension it shards, two meshes in one program."""


class DistributedError(TranspileError, RuntimeError):
    """A multi-process run that cannot start or go on: a coordinator or a peer that never came,
    ``srcjax.distributed.initialize`` called twice or after the first computation, reading an array
    whose shards live in other processes."""


class StaticValueError(TranspileError):
    """A value that must be known at transpile time depends on array data."""


STATIC_EVAL_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, IndexError, KeyError, ArithmeticError)
"""What NumPy and Python's operators raise for bad inputs (``LinAlgError``, ``AxisError``, ``ZeroDivisionError``,
``FloatingPointError``, ``OverflowError`` among them): a value computed at transpile time that raises one of these
is the user program's error, refused at its line as a :class:`StaticValueError`. Anything else (``MemoryError``,
``RecursionError``, an ``AssertionError`` or ``AttributeError`` of srcjax's own code) is not a fault of the
program's values and is never turned into a refusal."""


class DynamicControlFlowError(StaticValueError):
    """A decision srcjax needs at transpile time made on array data (`and`/`or`/`not` on arrays)."""


class CustomRuleError(TranspileError):
    """A custom_vjp/custom_jvp rule is missing or returns what its convention does not allow."""


class InternalError(TranspileError):
    """A bug in srcjax (please report it with the program that triggers it)."""


class NeedStatic(Exception):
    """Internal signal: these Python int/bool arguments must become static."""

    def __init__(self, names: frozenset[Hashable]) -> None:
        super().__init__(sorted(map(str, names)))
        self.names = names
