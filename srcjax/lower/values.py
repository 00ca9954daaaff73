"""The interpreter's values and signals, shared by the specializer and its control-flow rules.

- :class:`Return`, :class:`Break`, :class:`Continue`: a ``return``/``break``/``continue`` on its way
  out of the statements being run; :class:`Unroll`: a loop that cannot stay one ``stablehlo.while``;
- *dynamic* values (:class:`HloValue`) and containers holding them;
- :class:`LocalFunction` (a generated branch or loop body) and :class:`Undefined` (a name bound on
  some paths of control flow on data only);
- *loop origins*, which mark loop-carried Python ints, and how far loops unroll;
- the abstract value of a static number or array, and the one abstract value several join to.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import libcst as cst
import numpy as np

from ..core import PYTHON_SCALAR_DTYPES, STATIC_EVAL_ERRORS, DTypeError, ShapedArray, ShapeError, canonical_dtype
from ..frontend.normalize import NormalizedFunction
from ..weak_arrays import WeakArray
from .hlo import HloValue

MAX_UNROLL = 10_000  # iterations a static loop may run, unrolled
TINY_TRIP = 2  # static loops this short are unrolled
# On a GPU a Python ``for`` over a static range this short is unrolled (jax unrolls every Python loop):
# each step of a rolled ``stablehlo.while`` there costs kernel launches and a test read back by the host
# (an 8-step LSTM's training step ran 2.8-4.8x jax.jit's time on an H200, rolled)
GPU_UNROLL_TRIP = 16
ROLL_ABOVE: ContextVar[int] = ContextVar("ROLL_ABOVE", default=TINY_TRIP)  # (a Python for longer is rolled)


def roll_above(platform: str) -> int:
    """The trip count above which a Python ``for`` over a static range is one rolled loop on ``platform``."""
    return TINY_TRIP if platform in ("cpu", "numpy") else GPU_UNROLL_TRIP


@dataclass(frozen=True)
class LoopOrigin:
    """The origin of a Python int a rolled loop carries (its counter, an offset), next to the argument
    names in ``ShapedArray.origin``: if code needs it static, the loop unrolls. ``key`` identifies the
    loop (``rolled_for``: the ``id()`` of its ``for`` statement, which the program keeps alive, so the
    retry can unroll exactly that loop via ``Program.no_roll``; otherwise a fresh counter)."""

    key: int
    rolled_for: bool = False

    def __str__(self) -> str:
        return f"<{'for' if self.rolled_for else 'loop'} {self.key}>"


class Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class Break(Exception):
    pass


class Continue(Exception):
    pass


class Unroll(Exception):
    """Internal: a loop body needs its counter (or a carried int) static; unroll the loop."""


class ChangedStructure(Unroll):
    """Internal: a rolled loop's body returns another structure than it carries (a tuple that grows); unrolled where
    the trip count is static, else ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def is_dynamic(v: Any) -> bool:
    return isinstance(v, HloValue)


def contains_dynamic(v: Any) -> bool:
    if is_dynamic(v):
        return True
    if isinstance(v, (tuple, list)):
        return any(contains_dynamic(x) for x in v)
    if isinstance(v, dict):
        return any(contains_dynamic(x) for x in v.values())
    return False


def is_loop_origin(origin: Any) -> bool:
    return isinstance(origin, LoopOrigin)


@dataclass
class LocalFunction:
    """A ``def`` inside a function (generated branch and loop bodies): a closure over ``env``."""

    fdef: cst.FunctionDef
    env: dict[str, Any]
    parent: NormalizedFunction

    @property
    def name(self) -> str:
        return self.fdef.name.value

    def __repr__(self) -> str:  # (in messages: the function's name, not its syntax tree)
        return f"<function {self.name}>"


class Undefined:
    """A name assigned on only some paths of control flow on data; reading it is an error.

    When those paths are branches of ``if``s on data, ``value`` holds the name's
    value where it is assigned (zeros elsewhere) and ``conds`` maps each
    condition (an SSA name) to the branches that assign it: all must hold. A
    later ``if`` on the very same conditions may read it on those branches
    (generated derivative code re-tests the forward pass's conditions).

    This is the compile-time form of the source-level marker ``srcjax.adjoint.UNSET``
    (a branch that leaves a name ``UNSET`` gives an ``Undefined`` where the branches
    join); the two are one concept at two stages, not two sentinels.
    """

    def __init__(self, name: str, why: str, value: Any = None,
                 conds: dict[str, frozenset[int]] | None = None, message: str = "") -> None:
        self.name = name
        self.why = why
        self.value = value
        self.conds = conds or {}
        self.message = message  # (the error of a read, where it is not "assigned on only some paths")

    def readable(self, on_branch: Sequence[tuple[str, int]]) -> bool:
        return self.value is not None and all(any(p == pred and k in ks for p, k in on_branch)
                                              for pred, ks in self.conds.items())


def aval_of_static(v: Any) -> ShapedArray | None:
    if isinstance(v, bool | int | float | complex) and not isinstance(v, np.generic):
        kind = bool if isinstance(v, bool) else int if isinstance(v, int) else type(v)
        return ShapedArray((), PYTHON_SCALAR_DTYPES[kind], weak_type=True)
    if isinstance(v, np.ndarray | np.generic) and np.asarray(v).dtype.kind in "biufc":
        a = np.asarray(v)  # (a WeakArray: a Python number repeated, weakly typed)
        return ShapedArray(a.shape, canonical_dtype(a.dtype), weak_type=isinstance(v, WeakArray))
    return None


def same_static(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except STATIC_EVAL_ERRORS:  # (an equality that does not say, `[a1] == [a2]` of arrays: not the same)
        return False


def join_avals(avals: Sequence[ShapedArray], what: str) -> ShapedArray:
    """The one abstract value that every outcome converts to without changing a value's meaning."""
    first = avals[0]
    for a in avals[1:]:
        if a.shape != first.shape:
            raise ShapeError(f"{what} has shape {first.str_short()} on one path and {a.str_short()} on another",
                             hint="give it the same shape on every path (e.g. start from np.zeros_like(...))")
    strong = [a for a in avals if not a.weak_type]
    if not strong:
        dt = np.result_type(*[a.dtype for a in avals])
        return ShapedArray(first.shape, canonical_dtype(dt), weak_type=True)
    dts = {a.dtype for a in strong}
    if len(dts) > 1:
        names = " and ".join(sorted(str(d) for d in dts))
        raise DTypeError(f"{what} is {names} on different paths",
                         hint="convert it to one dtype with .astype(...) on every path")
    dt = strong[0].dtype
    order = "bif"  # a Python bool/int/float takes the array's dtype only if that does not lose its kind
    for a in avals:
        if a.weak_type and order.index(a.dtype.kind if a.dtype.kind in order else "f") > \
                order.index(dt.kind if dt.kind in order else "f"):
            raise DTypeError(f"{what} is a Python {dict(b='bool', i='int', f='float')[a.dtype.kind]} on one "
                             f"path and {dt} on another",
                             hint=f"write the Python number as an array of dtype {dt} (e.g. np.{dt}(...))")
    return ShapedArray(first.shape, dt)


STATIC_ARANGE = 256  # np.arange of static ints up to this size is NumPy's own array while specializing


class StaticArange(np.ndarray):
    """``np.arange`` of static ints held as NumPy's array while specializing (and what NumPy computes from it):
    returned from the compiled function, an output array as before (not a constant kept on the host)."""


def static_arange(args: list[Any], kwargs: dict[str, Any]) -> np.ndarray | None:
    """``np.arange(...)`` of static integers as NumPy's array (``for i in np.arange(n, 0, -1)``: its items are
    static, slice bounds, as in NumPy); None for anything else or more than ``STATIC_ARANGE`` items (an iota)."""
    if set(kwargs) - {"start", "stop", "step"} or len(args) + len(kwargs) > 3 or not all(
            type(v) is int or isinstance(v, np.integer) for v in [*args, *kwargs.values()]):
        return None
    try:
        out = np.arange(*args, **kwargs)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return out.view(StaticArange) if out.size <= STATIC_ARANGE else None


def item_at_counter(x: Any, key: Sequence[Any], out: Any) -> Any:
    """``out = x[key]``; where ``x`` is a constant integer array and the key a rolled loop's counter (the loop
    over ``np.arange(n, 0, -1)`` reads ``np.arange(...)[k]``), ``out`` is as static as the counter: needed
    static (a slice bound), the loop is unrolled."""
    if not (isinstance(x, np.ndarray) and x.dtype.kind in "biu" and isinstance(out, HloValue)):
        return out
    loops = frozenset(o for k in key if isinstance(k, HloValue) for o in k.aval.origin if is_loop_origin(o))
    return HloValue(out.name, out.aval.update(origin=out.aval.origin | loops)) if loops else out
