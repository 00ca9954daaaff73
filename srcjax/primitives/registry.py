"""THE primitive table: one record per supported operation, carrying every rule.

A primitive is keyed by the NumPy callable it stands for (``np.tanh``), which
is also its reference implementation: generated source calls it directly, so
running that source with NumPy *is* the reference semantics. Its record
(:class:`Primitive`, registered with :func:`defprim` in the module of its
family: ``elementwise``, ``reductions``, ``shape``, ...) holds:

- ``signature``: the NumPy call signature (from a stub), used to canonicalize
  calls (positional -> keyword) and to bind arguments;
- ``arrays``/``array_seqs``: the parameters that take array operands (or sequences
  of them); everything else must be static, i.e. known at transpile time;
- ``abstract_eval(**bound) -> ShapedArray | tuple``: shapes and dtypes;
- ``lower(ctx, **bound) -> HloValue | tuple``: StableHLO emission;
- ``jvp``/``vjp``: the derivative templates (below), ``nondiff``/``nondiff_args``/
  ``nondiff_when`` where there is no derivative, ``jvp_joint`` for a rule that is
  linear in several operands together;
- ``batch``: the batching rule (``vmap``, issue #15; empty for now);
- ``results``: what the call returns (one array, a list, one per operand, anything);
- ``simplify``: what the simplifier of generated source may assume about the
  result's shape and dtype (:data:`SIMPLIFY_KINDS`).

tests/test_ad_rules.py fails when a primitive lacks a rule it should have.

Derivative rules
----------------
A JVP template is the tangent contribution of one operand; a VJP template is the
cotangent contribution to one operand. Templates are Python expressions over the
primitive's parameter names, ``out`` (its result), ``out_bar`` (the result's
cotangent) and ``<param>_dot`` (an operand's tangent); helpers come from
:mod:`srcjax.adjoint` (its ``__all__``). They read like the math and are
instantiated by substituting the atoms of the statement being differentiated.

``nondiff=True`` primitives have zero derivatives (comparisons, integer results,
rounding, ...), as in JAX; ``nondiff_args`` names the array operands that carry no
derivative (``where``'s condition, ``full_like``'s template); ``nondiff_when(args)``
says so from a call's (source-text) arguments (``x.astype(int)``).

Sequence operands (``concatenate``'s ``arrays``, ``einsum``'s ``operands``): the
JVP template sees ``<param>_dot`` as a list literal of all the elements'
tangents; the VJP template evaluates to a tuple with one cotangent per element.
Multiple results (``split``, ``atleast_*d`` of several arrays): the JVP gives a
list of tangents, ``out_bar`` is a tuple of cotangents.

Conventions at non-differentiable points follow JAX (tests/test_ad_rules.py
checks each against jax): ``abs`` has derivative 1 at 0; ``maximum``/``minimum``
split a tie 0.5/0.5, and so does ``clip`` on a bound; ``max``/``min`` reductions
split the gradient equally among tied extrema; ``sqrt``/``cbrt`` have an
infinite derivative at 0; ``prod`` is exact with zeros. One deliberate
difference: ``linalg.norm`` has gradient 0 at the zero vector (JAX: nan).

Dtypes follow JAX: a cotangent has its primal's dtype and a tangent its result's, so
float32 gradients stay float32 and the adjoint of an implicit upcast (``w32 * x64``,
``w32 * np.arange(3)``, ``np.sum(w32, dtype=np.float64)``) is a downcast. The shape moves
``unbroadcast``/``broadcast_like``/``expand_reduced`` cast to their reference operand's dtype
(both being floating point or complex; a complex cotangent of a real operand is its real part, as in
JAX), so a template that can change dtypes ends in one of them. Complex numbers follow JAX's
convention (``srcjax/complex_adjoint.py``): holomorphic templates need no conjugate.
Constants in templates are Python numbers (weak: ``0.5 * g`` keeps float32), never NumPy
scalars (``np.log(2.0)`` is a float64 that would upcast), and helpers select on the
cotangent with ``np.where`` rather than multiply by a float64 mask.
tests/test_ad_rules.py checks both for every case with float32/float64 mixes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..core import ShapedArray

Results = Literal["array", "list", "per_operand", "any"]
"""What a primitive returns: one array (or number); a list of arrays (``split``); one array per
operand, a tuple when there are several (``atleast_1d(a, b)``); or anything (``x[i]`` of a tuple)."""

SIMPLIFY_KINDS = {
    "float": "unary; a floating result, a strong floating operand's dtype kept (np.sin)",
    "same": "unary; the operand's dtype (np.negative)",
    "shape": "unary; the operand's shape, some dtype (np.floor, np.isnan)",
    "shape_family": "unary; the operand's shape and dtype family (np.abs)",
    "arith": "binary; broadcast shape, the dtype family of ``a + b`` (np.multiply)",
    "promote": "binary; broadcast shape, the promoted dtype of ``a + b`` (np.maximum)",
    "binary": "binary; broadcast shape, some dtype (np.arctan2)",
    "select": "np.where(c, a, b): broadcast shape, the promoted dtype of ``a + b``",
    "reduce": "a reduction over ``axis`` (np.sum): a strong floating operand's dtype kept",
    "reduce_keep": "a reduction keeping every dtype (np.max)",
    "reduce_float": "a reduction with a floating result (np.mean)",
    "reduce_real": "a reduction with a real floating result of a real or complex operand (np.var)",
}
"""The facts the simplifier of generated source (transforms/simplify.py) may use about a result."""


@dataclass
class LowerCtx:
    """What a lowering rule sees besides its operands."""

    b: Any  # lower.hlo.FuncBuilder
    avals_out: list[ShapedArray]


@dataclass(eq=False)
class Primitive:
    name: str
    path: str  # how generated source spells it, e.g. "np.linalg.norm"
    fn: Callable[..., Any]  # the NumPy reference implementation
    signature: inspect.Signature
    arrays: tuple[str, ...]
    abstract_eval: Callable[..., Any]
    lower: Callable[..., Any]
    array_seqs: tuple[str, ...] = ()  # parameters taking a sequence of arrays
    static_eval: bool = True  # all-static operands may be evaluated by NumPy at transpile time
    positional: int = 1  # leading parameters kept positional in generated source
    # -- derivatives (transforms/forward_ad.py, transforms/reverse_ad.py) --
    jvp: dict[str, str] = field(default_factory=dict)  # operand -> its tangent contribution
    vjp: dict[str, str] = field(default_factory=dict)  # operand -> its cotangent
    nondiff: bool = False  # zero derivative everywhere
    nondiff_args: frozenset[str] = frozenset()  # array operands without a derivative
    nondiff_when: Callable[[Mapping[str, Any]], bool] | None = None  # no derivative for these arguments
    vjp_when: Callable[[Mapping[str, Any]], Mapping[str, str]] | None = None  # templates for these arguments
    jvp_joint: str | None = None  # the tangent when the rule is linear in its operands together
    no_rule_hint: str | None = None  # what to write instead, when the primitive has no derivative rule
    static_hint: str | None = None  # what to write instead, when a static parameter gets run-time data
    # -- batching (vmap, issue #15): None until it exists --
    batch: Callable[..., Any] | None = None
    # -- what the call returns, and what the simplifier may assume about it --
    results: Results | Callable[[Mapping[str, Any]], Results] = "array"  # (a function of the call's arguments)
    simplify: str | None = None  # a key of SIMPLIFY_KINDS
    tree: Callable[..., Any] | None = None  # the operation on a container first operand (index_add)
    mixed: tuple[str, ...] = ()  # static parameters that may hold dynamic integers (index keys)
    origin_from: tuple[str, ...] = ()  # the operands a scalar result is computed from, if not all (x of x[i])
    nested: tuple[str, ...] = ()  # array operands whose (nested) list literal is written as np.stack (np.array)
    # > 0: the rank of one entry of its one array operand's stack (a matrix's: 2), each result a stack along
    # the same leading axes (np.linalg.inv): on a repeat of a smaller stack, lowered once (lower/apply.py)
    stacked: int = 0
    # first operands that are the result as they are (unbroadcast's None: an integer leaf's cotangent; taken's UNSET:
    # a value a path leaves unset): static folds before anything is bound or checked
    through: tuple[Any, ...] = ()
    fold: Callable[[list[Any]], Any] | None = None  # a result some static operands decide (None: not decided)

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def bind_args(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Bind a call's arguments to parameter names, defaults applied."""
        ba = self.bind(args, kwargs)
        ba.apply_defaults()
        return dict(ba.arguments)

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> inspect.BoundArguments:
        """``self.signature.bind(*args, **kwargs)``, the same arguments and the same ``TypeError``s. Binding
        never reads the values, only how many are positional and the keywords' names: which parameter each
        takes is worked out once per such call shape (:func:`_bind_plan`) and reused (``inspect``'s bind is
        ~30 Python calls; the normalizer and reverse mode bind every primitive call they read)."""
        steps = _bind_plan(self.signature, len(args), tuple(kwargs))
        arguments: dict[str, Any] = {}
        for name, how, key in steps:
            if how == 0:  # one argument, by position (an int) or by keyword (a str)
                arguments[name] = args[key] if key.__class__ is int else kwargs[key]
            elif how == 1:  # the `*args` parameter: the positions it collects
                arguments[name] = tuple(args[i] for i in key)
            else:  # the `**kwargs` parameter: the keywords it collects
                arguments[name] = {k: kwargs[k] for k in key}
        return inspect.BoundArguments(self.signature, arguments)  # type: ignore[arg-type]

    def result_kind(self, args: Mapping[str, Any]) -> Results:
        """What a call with these (source-text) arguments returns (``np.linalg.svd``: a list, or with
        ``compute_uv=False`` one array)."""
        return self.results(args) if callable(self.results) else self.results

    def vjp_for(self, args: Mapping[str, Any]) -> dict[str, str]:
        """The VJP templates for a call with these (source-text) arguments: ``vjp``, with those
        ``vjp_when`` gives for them in place (``1.0 / x``: its cotangent from the result alone)."""
        return {**self.vjp, **self.vjp_when(args)} if self.vjp_when is not None else self.vjp

    def differentiable(self, args: Mapping[str, Any]) -> bool:
        """Whether a call with these (source-text) arguments has a derivative at all."""
        return not self.nondiff and not (self.nondiff_when is not None and self.nondiff_when(args))


PRIMITIVES: dict[str, Primitive] = {}  # by name

# (id(signature), positional count, keyword names) -> (the signature, its steps: (parameter, how, key))
_BIND_PLANS: dict[tuple[int, int, tuple[str, ...]], tuple[inspect.Signature, tuple[tuple[str, int, Any], ...]]] = {}


class _Slot:
    """A stand-in for one argument while a call shape is bound: where the argument comes from."""

    __slots__ = ("key",)

    def __init__(self, key: int | str) -> None:
        self.key = key


def _bind_plan(sig: inspect.Signature, npos: int, names: tuple[str, ...]) -> tuple[tuple[str, int, Any], ...]:
    """Which parameter of ``sig`` each argument of a call with ``npos`` positional arguments and the keywords
    ``names`` binds, in ``sig.bind``'s order: ``inspect`` binds stand-ins once (its ``TypeError`` is the call's:
    its messages name parameters, never values), and the plan is kept for the signature."""
    key = (id(sig), npos, names)
    hit = _BIND_PLANS.get(key)
    if hit is not None and hit[0] is sig:
        return hit[1]
    bound = sig.bind(*[_Slot(i) for i in range(npos)], **{k: _Slot(k) for k in names})
    steps: list[tuple[str, int, Any]] = []
    for name, v in bound.arguments.items():
        if v.__class__ is _Slot:
            steps.append((name, 0, v.key))
        elif v.__class__ is tuple:
            steps.append((name, 1, tuple(x.key for x in v)))
        else:
            steps.append((name, 2, tuple(v)))
    _BIND_PLANS[key] = (sig, tuple(steps))
    return _BIND_PLANS[key][1]
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
    jvp: Mapping[str, str] | None = None,
    vjp: Mapping[str, str] | None = None,
    nondiff: bool = False,
    nondiff_args: Sequence[str] = (),
    nondiff_when: Callable[[Mapping[str, Any]], bool] | None = None,
    jvp_joint: str | None = None,
    results: Results | Callable[[Mapping[str, Any]], Results] = "array",
    simplify: str | None = None,
    tree: Callable[..., Any] | None = None,
    mixed: Sequence[str] = (),
    origin_from: Sequence[str] = (),
    nested: Sequence[str] = (),
) -> Primitive:
    """Register one primitive. ``stub`` only provides the signature."""
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name!r} registered twice")
    if simplify is not None and simplify not in SIMPLIFY_KINDS:
        raise ValueError(f"primitive {name!r}: unknown simplify kind {simplify!r}")
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
        nondiff=nondiff,
        nondiff_args=frozenset(nondiff_args),
        nondiff_when=nondiff_when,
        jvp_joint=jvp_joint,
        results=results,
        simplify=simplify,
        tree=tree,
        mixed=tuple(mixed),
        origin_from=tuple(origin_from),
        nested=tuple(nested),
        jvp=dict(jvp or {}),
        vjp=dict(vjp or {}),
    )
    PRIMITIVES[name] = prim
    BY_CALLABLE.setdefault(id(fn), prim)
    _REGISTERED[0] += 1
    return prim


_REGISTERED = [0]


def registrations() -> int:
    """How many times :func:`register` ran (tables derived from :data:`PRIMITIVES` rebuild when it changes)."""
    return _REGISTERED[0]


def set_fields(name: str, **fields: Any) -> None:
    """Other fields of a primitive registered in a table loop (``nondiff_args``, ``simplify``)."""
    p = PRIMITIVES[name]
    for k, v in fields.items():
        if not hasattr(p, k):
            raise AttributeError(f"a primitive has no field {k!r}")
        setattr(p, k, v)


def defjvp(name: str, **templates: str) -> None:
    """The JVP templates of a primitive registered in a table loop (one per operand)."""
    PRIMITIVES[name].jvp = dict(templates)


def defvjp(name: str, **templates: str) -> None:
    """The VJP templates of a primitive registered in a table loop (one per operand)."""
    PRIMITIVES[name].vjp = dict(templates)


def deflinear(name: str, jvp: Mapping[str, str], vjp: Mapping[str, str]) -> None:
    """Both templates of a primitive registered in a table loop (linear ones read like their transposes)."""
    PRIMITIVES[name].jvp = dict(jvp)
    PRIMITIVES[name].vjp = dict(vjp)


def nondiff(*names: str) -> None:
    """Primitives registered in a table loop that have no derivative (comparisons, integer results)."""
    for n in names:
        PRIMITIVES[n].nondiff = True


def alias(fn: Callable[..., Any], name: str) -> None:
    """Another NumPy spelling of a registered primitive (``np.mod`` for ``np.remainder``)."""
    BY_CALLABLE[id(fn)] = PRIMITIVES[name]


def lookup(fn: Any) -> Primitive | None:
    return BY_CALLABLE.get(id(fn))


def numpy_spellings() -> dict[str, Primitive]:
    """``"sin"`` -> its primitive, for every name in the ``np`` namespace that is a primitive
    (aliases included: ``abs``, ``amax``, ``asin``)."""
    out = {}
    for k, v in vars(np).items():
        p = BY_CALLABLE.get(id(v)) if callable(v) else None
        if p is not None:
            out[k] = p
    return out
