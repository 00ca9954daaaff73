"""Values a tape's pushes prove static stay unbatched on a tape batched as a whole with the slot rule off
(seeds 1816, 1411, 1677 of tests/test_transform_compose_random.py).

``batch_tapes`` keeps a tape's unbatched values unbatched slot by slot, but turns that rule off for the whole
program where a tape is used otherwise (a cotangent tape pushed a value whole: ``_tape_bar.append(zeros_like(w5))``
in a Jacobian's backward half reversed again). Every value popped was then batched, a Python value too: a
Jacobian's backward half popped its forward half's flag (``by_leaves_1 = by_leaves(out)``, static there) batched
and took ``if by_leaves_1:`` for a test on data, functionalizing the half again with the adjoint loop's pops
inside that ``if`` (refused); a batch size popped batched made a shape out of array data.

With the rule off, a position of a tuple row stays as pushed where the pushes prove it static, never by the
popped name: every tuple literal of that arity pushed on a tape (not a cotangent tape, whose rows may be
pushed whole) anywhere in the program holds there a value the same in every example by its bindings
(:func:`_static_form`: a query of shapes and structure such as ``by_leaves(out)`` or ``batch_size_of(x)``, or a
name the pushing function's binding-time analysis finds STATIC: a comparison, ``range(3)``'s items reversed, a
``slice``, a ``shape[1]``; bound by ``=``, never by a pop). Where such a value is found batched at its push, a
Python bool or int is pushed as its first row (``batch_static``); anything else is refused (:func:`kept`).
Reverse mode pushes every row popped into several names as a tuple literal (``batch_tapes.SINGLE``), so these
are all the values such a pop reads; where a cotangent tape reaches a tape's name (bound to one, or passed to a
tape parameter) nothing is proved. Push and pop read the same answer (:func:`static_positions`, a function of
the program's source), so a value kept unbatched at its push is bound unbatched at its pop. A value the tape
restores that no push proves static and that is then needed the same for every example is refused at the user's
function (:func:`unproved`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import libcst as cst

from ..adjoint import is_saved_list_name
from ..frontend.binding_times import STATIC, BindingTimes
from ..frontend.names import code, walk
from .batch_errors import BatchingError
from .batch_state import any_batched

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping

    from ..frontend.normalize import NormalizedFunction
    from .batch import FunctionWriter
    from .batch_tapes import Slots

Rows = dict[int, list[tuple[int, ...]]]  # per position: 0 not proved, SCALAR, or STATIC_VALUE
SCALAR, STATIC_VALUE = 1, 2


def single_kind(lst: str) -> bool:
    """Whether a value pushed whole on ``lst`` is popped into one name, and nothing else is: a tape and its
    tangent tapes (``_tape``, ``_tape_1``, ``_tape_dot``), not a cotangent tape (``_tape_bar``: the adjoint
    of a tuple push pops the tuple of cotangents into one name, ``saved_bar = _tape_bar.pop()``)."""
    return is_saved_list_name(lst) and "_bar" not in lst


def static_positions(w: FunctionWriter, lst: str, arity: int) -> dict[int, bool]:
    """The positions of a tuple row of ``arity`` on the tape ``lst`` that every such push in the program fills
    with a static value (see the module docstring), each with whether every push proves it a Python bool or int by
    its form (what ``batch_static`` reads back where vmap broadcast it); empty for a cotangent tape."""
    if not single_kind(lst):
        return {}
    pushes = _pushes(w)
    rows = None if pushes is None else pushes.get(arity)
    if not rows:
        return {}
    return {i: all(row[i] == SCALAR for row in rows) for i in range(arity) if all(row[i] for row in rows)}


def kept(w: FunctionWriter, e: cst.BaseExpression, scalar: bool) -> str:
    """The value ``e`` pushed at a position :func:`static_positions` keeps as pushed: itself; a Python bool or int
    vmap broadcast all the same (``forced``: every row is that value) its first row. Another static value found
    batched here is refused (:func:`unproved`), never read back from one row by guess."""
    if not any_batched(w.value_state(e)):
        return code(e)
    if scalar:
        return f"batch_static({code(e)})"
    raise BatchingError(f"vmap: `{code(e)}`, a static value saved on a tape, was found batched")


def _pushes(w: FunctionWriter) -> Rows | None:
    """Per arity, each tuple literal the program pushes on a tape, as a flag per position (static); None where a
    cotangent tape reaches a tape's name. Computed again when a function of the program is replaced (written
    again knowing its data: ``FunctionWriter.data_test``)."""
    functions = w.program.functions
    fdefs = tuple(nf.fdef for nf in functions.values())
    cached = getattr(w.b, "_static_pushes", None)
    if cached is not None and len(cached[0]) == len(fdefs) and all(a is b for a, b in zip(cached[0], fdefs)):
        out: Rows | None = cached[1]
        return out
    out = _scan(functions)
    w.b._static_pushes = (fdefs, out)  # type: ignore[attr-defined]
    return out


def _cotangent_tape(e: cst.CSTNode) -> bool:
    return any(type(n) is cst.Name and is_saved_list_name(n.value) and not single_kind(n.value) for n in walk(e))


def _scan(functions: Mapping[str, NormalizedFunction]) -> Rows | None:
    out: Rows = {}
    for nf in functions.values():
        bta: BindingTimes | None = None
        for node in walk(nf.fdef):
            if type(node) is cst.Assign and any(single_kind(n.value) for t in node.targets for n in walk(t.target)
                                                if type(n) is cst.Name) and _cotangent_tape(node.value):
                return None
            if type(node) is not cst.Call:
                continue
            if any(_cotangent_tape(a.value) for a in node.args) and not _handed_to_cotangent(node, functions):
                return None
            f = node.func
            if not (type(f) is cst.Attribute and f.attr.value == "append" and type(f.value) is cst.Name and
                    single_kind(f.value.value) and len(node.args) == 1 and type(node.args[0].value) is cst.Tuple):
                continue
            elems = node.args[0].value.elements  # type: ignore[attr-defined]
            if any(type(e) is not cst.Element for e in elems):
                return None  # (a starred push: its arity is not its length)
            if bta is None:
                bta = BindingTimes(nf, nf.fdef, helpers=functions)
            flags = tuple(_static_form(nf.fdef, e.value.value, bta.of(e.value) == STATIC)
                          if type(e.value) is cst.Name and e.value.value in bta.locals and
                          e.value.value not in bta.params else 0 for e in elems)
            out.setdefault(len(elems), []).append(flags)
    return out


def _handed_to_cotangent(call: cst.Call, functions: Mapping[str, NormalizedFunction]) -> bool:
    """Whether every cotangent tape ``call`` passes lands in a parameter named as a cotangent tape (of a function
    of the program), or in a helper that only reads it (``zeros_like(_tape_bar)``)."""
    name = code(call.func)
    nf = functions.get(name)
    if nf is None:
        return name in ("zeros_like", "len", "reversed")
    params = list(nf.fdef.params.params)
    for k, a in enumerate(call.args):
        if not _cotangent_tape(a.value):
            continue
        if a.keyword is not None:
            target = a.keyword.value
        elif a.star == "" and k < len(params):
            target = params[k].name.value
        else:
            return False
        if not _cotangent_tape(cst.Name(target)):
            return False
    return True


_SCALAR_CALLS = frozenset({"by_leaves", "is_tree", "batch_size_of", "np.size", "np.ndim"})
"""Queries of shapes and structure: a Python bool or int, the same in every example, whatever they read."""


def _is_pop(v: cst.BaseExpression) -> bool:
    return type(v) is cst.Call and type(v.func) is cst.Attribute and v.func.attr.value == "pop"


def _static_form(fdef: cst.FunctionDef, name: str, static: bool) -> int:
    """Whether every binding of ``name`` in ``fdef`` (one name bound by ``=``, not a tape pop) gives a value the same
    in every example: :data:`SCALAR` where each is a call of :data:`_SCALAR_CALLS`, or a comparison or a number
    where the analysis found ``name`` STATIC (``static``); :data:`STATIC_VALUE` where the analysis found it STATIC
    and some binding has another form (``loop_items_4 = list(reversed_1)``, ``slice_1 = slice(None, None)``,
    ``inner_size = shape_1[1]``: seeds 1677, 1411); else 0."""
    form, bound = SCALAR, False
    for node in walk(fdef):
        if type(node) is cst.Assign and any(type(n) is cst.Name and n.value == name
                                            for t in node.targets for n in walk(t.target)):
            v = node.value
            if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name or _is_pop(v):
                return 0
            if type(v) is cst.Call and code(v.func) in _SCALAR_CALLS:
                pass
            elif not static:
                return 0
            elif type(v) not in (cst.Comparison, cst.Integer):
                form = STATIC_VALUE
            bound = True
        elif type(node) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.CompFor) and \
                any(type(n) is cst.Name and n.value == name for n in walk(node.target)):  # type: ignore[attr-defined]
            return 0
        elif type(node) in (cst.FunctionDef, cst.ClassDef) and node is not fdef and \
                node.name.value == name:  # type: ignore[attr-defined]
            return 0  # (a nested function that only reads the name, or binds its own, leaves it as bound here)
        elif type(node) in (cst.Global, cst.Nonlocal) and \
                name in {a.name.value for a in node.names if type(a.name) is cst.Name}:  # type: ignore[attr-defined]
            return 0
        elif type(node) is cst.AsName and name in {n.value for n in walk(node.name) if type(n) is cst.Name}:
            return 0
    return form if bound else 0


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (srcjax's own directory)


def unproved(e: BatchingError, slots: Slots) -> BatchingError:
    """``e``, raised in source srcjax wrote or in srcjax's own helpers while the slot rule is off for the program,
    as the refusal it is: a value a tape restores that no push proves static (a helper's parameter, an axis or a
    size computed from one: ``batch_axis(source, x)``) is batched with the tape and then needed the same for every
    example (seed 1411: a helper's ``np.moveaxis`` axis; was that error, unlocated). Without a span, vmap places it
    at the user's function (``vmap.batched_source``). Any other error is ``e`` itself."""
    span = e.span
    if not slots.opaque or (span is not None and not span.filename.startswith("<srcjax") and
                            not os.path.abspath(span.filename).startswith(_PACKAGE + os.sep)):
        return e
    first = e.message.split("\n")[0]
    return type(e)(
        "vmap of a derivative of a derivative whose tape vmap batches whole (its backward half pushes a value on it "
        "whole) is not supported yet where a value the tape restores must be the same for every example and no push "
        f"proves it static: {first}",
        hint="call the function once per example in Python, or take one of the two derivatives in forward mode "
             "(srcjax.jacfwd or srcjax.jvp)")
