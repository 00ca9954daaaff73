"""THE primitive table: one record per supported operation, carrying every rule.

A primitive is keyed by the NumPy callable it stands for (``np.tanh``), which
is also its reference implementation: generated source calls it directly, so
running that source with NumPy *is* the reference semantics. Each entry adds:

- ``signature``: the NumPy call signature (from a stub), used to canonicalize
  calls (positional -> keyword) and to bind arguments;
- ``arrays``: the parameters that take array operands (everything else must be
  static, i.e. known at transpile time);
- ``abstract_eval(**bound) -> ShapedArray | tuple``: shapes and dtypes;
- ``lower(ctx, **bound) -> HloValue | tuple``: StableHLO emission.

Families register their entries with :func:`defprim` in their own module.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import ShapedArray


@dataclass
class LowerCtx:
    """What a lowering rule sees besides its operands."""

    b: Any  # lower.hlo.FuncBuilder
    avals_out: list[ShapedArray]


@dataclass(eq=False)
class Primitive:
    name: str
    path: str  # how generated source spells it, e.g. "np.linalg.norm"
    fn: Callable[..., Any]
    signature: inspect.Signature
    arrays: tuple[str, ...]
    abstract_eval: Callable[..., Any]
    lower: Callable[..., Any]
    array_seqs: tuple[str, ...] = ()  # parameters taking a sequence of arrays
    static_eval: bool = True  # all-static operands may be evaluated by NumPy at transpile time
    positional: int = 1  # leading parameters kept positional in generated source
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def bind_args(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Bind a call's arguments to parameter names, defaults applied."""
        ba = self.signature.bind(*args, **kwargs)
        ba.apply_defaults()
        return dict(ba.arguments)


PRIMITIVES: dict[str, Primitive] = {}  # by name
BY_CALLABLE: dict[int, Primitive] = {}  # by id() of the NumPy callable
OPERATORS: dict[str, Primitive] = {}  # libcst operator class name -> primitive


def defprim(
    name: str,
    fn: Callable[..., Any],
    stub: Callable[..., Any],
    *,
    abstract_eval: Callable[..., Any],
    lower: Callable[..., Any],
    arrays: Sequence[str] = ("x",),
    array_seqs: Sequence[str] = (),
    path: str | None = None,
    static_eval: bool = True,
    positional: int | None = None,
    **extra: Any,
) -> Primitive:
    """Register one primitive. ``stub`` only provides the signature."""
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name!r} registered twice")
    sig = inspect.signature(stub)
    if positional is None:
        positional = len(arrays) + len(array_seqs)
    prim = Primitive(
        name=name,
        path=path or f"np.{fn.__name__}",
        fn=fn,
        signature=sig,
        arrays=tuple(arrays),
        array_seqs=tuple(array_seqs),
        abstract_eval=abstract_eval,
        lower=lower,
        static_eval=static_eval,
        positional=positional,
        extra=dict(extra),
    )
    PRIMITIVES[name] = prim
    BY_CALLABLE.setdefault(id(fn), prim)
    return prim


def alias(fn: Callable[..., Any], name: str) -> None:
    """Another NumPy spelling of a registered primitive (``np.mod`` for ``np.remainder``)."""
    BY_CALLABLE[id(fn)] = PRIMITIVES[name]


def lookup(fn: Any) -> Primitive | None:
    return BY_CALLABLE.get(id(fn))
