"""Tracing code into a StableHLO region (a branch, or a loop's condition and body, on array data).

A region runs once at transpile time for every run-time outcome, so it must not change the Python
lists and dicts around it (:func:`snapshot_containers`, :func:`check_containers`) nor leave by
``return``/``break``/``continue`` (:func:`exec_without_exits`). Also here: whether a value decides
control flow at run time (:func:`is_data`), a scalar predicate, values converted to a region's result
types, names for results in errors, and calling a generated branch or loop body.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from ..adjoint import is_saved_list_name
from ..core import NeedStatic, ShapedArray, ShapeError, TranspileError, UnsupportedSyntaxError
from ..frontend.functionalize import with_data_names
from ..frontend.names import names_in
from ..primitives import registry
from .hlo import HloValue
from .values import Break, Continue, LocalFunction, LoopOrigin, Return, is_loop_origin

if TYPE_CHECKING:  # annotations only: the specializer imports this module, not the other way round
    from ..frontend.program import Program
    from .specialize import Specializer


def snapshot_containers(envs: Sequence[dict[str, Any]]) -> dict[int, tuple[str, Any, Any]]:
    """Every Python list/dict reachable from the live scopes: id -> (name, object, shallow copy)."""
    out: dict[int, tuple[str, Any, Any]] = {}

    def visit(name: str, v: Any, depth: int) -> None:
        if depth > 4 or id(v) in out:
            return
        if isinstance(v, list | dict):
            out[id(v)] = (name, v, list(v) if isinstance(v, list) else dict(v))
            for x in (v if isinstance(v, list) else v.values()):
                visit(name, x, depth + 1)
        elif isinstance(v, tuple):
            for x in v:
                visit(name, x, depth + 1)

    for env in envs:
        for k, v in env.items():
            visit(k, v, 0)
    return out


def check_containers(snap: dict[int, tuple[str, Any, Any]], where: str, pred: Any = None) -> None:
    """Refuse a change of a Python list/dict of ``snap`` inside a region (restored first). ``pred``: the
    branch's predicate; where a derivative's tape changes and it was computed from the counter of a rolled
    ``for`` (``eq = i % 2 == 0`` saved by the loop, popped by the adjoint loop), NeedStatic unrolls that loop."""
    for name, obj, copy in snap.values():
        same = len(obj) == len(copy) and (
            all(a is b for a, b in zip(obj, copy)) if isinstance(obj, list)
            else obj.keys() == copy.keys() and all(obj[k] is copy[k] for k in copy))
        if not same:
            if isinstance(obj, list):
                obj[:] = copy
            else:
                obj.clear()
                obj.update(copy)
            loops = frozenset(o for o in (pred.aval.origin if isinstance(pred, HloValue) else ())
                              if isinstance(o, LoopOrigin) and o.rolled_for)
            if is_saved_list_name(name) and loops:
                raise NeedStatic(loops)
            if is_saved_list_name(name):  # (a derivative's tape: the user wrote no such list)
                raise UnsupportedSyntaxError(  # (a first derivative's loop in an `if` on a parameter too: the
                    # `if` decided here, not in the front end, which says it for an `if` on values it computed)
                    f"reverse mode through {where} that saves values for the adjoint in it (a loop inside it, or "
                    "in a derivative of a derivative a helper of the inner one) is not supported yet: the "
                    "derivative's tape would be written on one path only",
                    hint="run the loop outside the `if` and choose its result with np.where, or use forward "
                         "mode (srcjax.jacfwd or srcjax.jvp; for a derivative of a derivative, one of the two: "
                         "grad(lambda x: np.sum(jacfwd(f)(x))) runs)")
            raise UnsupportedSyntaxError(
                f"the Python {type(obj).__name__} `{name}` is changed inside {where}; srcjax transpiles every "
                "branch and the loop body once, so the change cannot depend on the data",
                hint="collect results in arrays (x[i] = v, or srcjax.lax.scan) or decide the condition on "
                     "static values")


def is_data(sp: Specializer, v: Any) -> bool:
    """A dynamic value that decides control flow at run time (not a Python int/bool argument)."""
    if not isinstance(v, HloValue):
        return False
    arg_origins = {o for o in v.aval.origin if not is_loop_origin(o)}
    if arg_origins:
        raise NeedStatic(frozenset(arg_origins))
    return True

def call_local(sp: Specializer, fn: LocalFunction, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    names = [p.name.value for p in fn.fdef.params.params]
    if len(args) != len(names) or kwargs:
        raise TranspileError(f"{fn.name}() takes {len(names)} arguments, got {len(args)}")
    env = dict(fn.env)
    env.update(zip(names, args))
    return sp.run_body(fn.parent, fn.fdef.body.body, env)

def scalar_pred(sp: Specializer, p: HloValue, what: str) -> HloValue:
    if p.ndim != 0:
        raise ShapeError(f"{what} must be a scalar, but it is an array {p.aval.str_short()}",
                         hint="reduce it to one truth value with np.any(...) or np.all(...)")
    if p.dtype != np.bool_:
        zero = sp.lift(0)
        p = sp.apply(registry.PRIMITIVES["not_equal"], [p, zero], {})
    return p

def leaf_value(sp: Specializer, v: Any, aval: ShapedArray) -> HloValue:
    """``v`` (static or dynamic) as an SSA value of abstract value ``aval``, emitted here."""
    assert sp.b is not None
    h = sp.lift(v) if not isinstance(v, HloValue) else v
    if h.dtype != aval.dtype:
        h = sp.b.convert(h, aval.dtype)
    return HloValue(h.name, aval)

def out_names(sp: Specializer, n: int) -> list[str]:
    a = sp.assign_stmt  # (the names the statement being run assigns)
    t = [x for target in a.targets for x in names_in(target.target)] if a is not None else None
    if t is not None and len(t) == n:
        return [f"`{x}`" for x in t]
    return [f"output {i + 1}" if n > 1 else "the result" for i in range(n)]


_EXIT_HINTS = {
    "return": "assign the result to a variable and return it once, after the `if`/loop",
    "break": "use a flag: stop = stop | cond, and test `not stop` in the loop condition",
    "continue": "put the rest of the loop body under `if not cond:` instead",
}


class DataExit(UnsupportedSyntaxError):
    """A ``return``/``break``/``continue`` under an ``if``/``while`` on array data that the front end left
    to the lowering (its test read a parameter that might have been a Python value, ``if x[i] > 0:``):
    :func:`srcjax.lower.specialize.specialize` functionalizes ``function`` again knowing that ``names``
    hold data (the exit becomes a flag) and lowers again; raised as it is if that changes nothing."""

    def __init__(self, message: str, hint: str, function: str, names: Sequence[str]) -> None:
        super().__init__(message, hint=hint)
        self.function, self.names = function, tuple(names)

    def functionalize_again(self, program: Program) -> Program:
        """Replace the function in ``program`` (a lowering's own copy: :func:`own_copy`) by its version with
        the test's names on data, and return it; if they were known to be, this error stands (raised)."""
        nf = program.functions.get(self.function)
        known = program.data_names.setdefault(self.function, set())
        if nf is None or set(self.names) <= known:
            raise self
        known.update(self.names)
        program.functions[self.function] = new = with_data_names(nf, sorted(known), program.functions)
        if program.entry is nf:
            program.entry = new
        return program


def unroll(program: Program, shared: Program, loops: set[int]) -> None:
    """The ``for`` statements ``loops`` (ids) are unrolled from now on, by this lowering (``program``: ``shared`` or
    its copy) and by the later lowerings of ``shared`` (whose int results are needed static: for every signature
    alike, so learned once). Only lowerings read ``no_roll``; the source is unchanged, nothing else reads it."""
    shared.no_roll |= loops
    program.no_roll |= loops


def own_copy(program: Program, shared: Program) -> Program:
    """``program``, or a copy of it where it is ``shared`` (the program a lowering was given, which other
    transformations read and ``srcjax.source`` prints): what the lowering may rewrite (a function
    functionalized again) without changing what anything else reads, nor what ran before changing what a
    later transformation writes (``Program.lowering_copy``)."""
    return shared.lowering_copy() if program is shared else program


def exec_without_exits(sp: Specializer, body: Sequence[Any], env: dict[str, Any], where: str,
                       test: cst.BaseExpression | None = None) -> None:
    """Run ``body`` as one region: a ``return``/``break``/``continue`` out of it is refused clearly
    (:class:`DataExit` where the region is under the data test ``test``)."""
    try:
        sp.exec_block(body, env)
    except (Return, Break, Continue) as e:
        word = {Return: "return", Break: "break", Continue: "continue"}[type(e)]
        message = f"`{word}` inside {where} that srcjax could not rewrite"
        if test is not None:
            raise DataExit(message, _EXIT_HINTS[word], sp.nf.name, names_in(test)) from None
        raise UnsupportedSyntaxError(message, hint=_EXIT_HINTS[word]) from None
