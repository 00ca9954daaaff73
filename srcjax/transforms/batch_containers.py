"""vmap: the batched states of container expressions (records, ``list``/``tuple``/``abs``/``round`` of
batched values, sums of lists, an element of a container) for the writer in transforms/batch.py."""

from __future__ import annotations

import re
import types
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..frontend.cst_expressions import parse_expression
from ..frontend.names import code, names_in
from ..frontend.resolve import STRUCTURAL_MODULES
from .anf import Op
from .batch_state import (
    Repeated,
    Stack,
    State,
    Tree,
    all_batched,
    any_batched,
    fully_batched,
    item,
    join,
    literal_key,
    pack,
    record_type_fields,
)

if TYPE_CHECKING:
    from .batch import FunctionWriter

__all__ = ["batched_items", "builtin_call", "container_item", "def_alias", "note_tree", "note_zeros", "record_fields",
           "record_state", "sequence_sum"]

# calls whose result is their first argument's container with something added in (zeros of a container stay one)
ADDS_INTO = {"index_add", "tree_add", "tree_index_add", "batch_index_add", "batch_broadcast_items"}


def sequence_sum(w: FunctionWriter, value: cst.BinaryOperation) -> tuple[str, State] | None:
    """``a + b`` of lists or tuples: their elements side by side (all batched if any is); None for shape
    queries (``(2,) + x.shape``: the per-example shape, static)."""
    if w.only_shapes(value):
        return None
    ls, rs = w.value_state(value.left), w.value_state(value.right)

    def seq(e: cst.BaseExpression, st: State) -> bool:  # (a name bound by such a sum: a batched tuple or list)
        return isinstance(st, Stack) or isinstance(st, Tree) and st.kind in ("list", "tuple") or \
            type(e) is cst.Name and e.value in w.sequences

    if not (seq(value.left, ls) or seq(value.right, rs)):
        return None
    w.last_array, w.last_sequence = False, True
    if isinstance(ls, Tree) and isinstance(rs, Tree) and ls.kind == rs.kind:
        items = [v for _, v in ls.items] + [v for _, v in rs.items]
        return code(value), Tree(ls.kind, tuple((str(i), v) for i, v in enumerate(items)))
    if not (any_batched(ls) or any_batched(rs)):
        return code(value), False

    def batched(e: cst.BaseExpression, st: State) -> str:
        if st is False:  # a list of unbatched values
            return f"batch_broadcast_items({code(e)}, {w.size})"
        return w.convert(code(e), st, all_batched(st) if isinstance(st, Tree) else True)

    return f"{batched(value.left, ls)} + {batched(value.right, rs)}", True


def _atom(e: cst.BaseExpression) -> bool:
    """A name or a number (``-1.0`` too): its batched text is its own."""
    if type(e) is cst.UnaryOperation and type(e.operator) is cst.Minus:
        e = e.expression
    return type(e) in (cst.Name, cst.Integer, cst.Float)


def builtin_call(w: FunctionWriter, value: cst.Call) -> tuple[str, State] | None:
    """``abs(x)``, ``round(x, 2)`` (elementwise on a batched array), ``float(x)``/``int(x)`` (each
    example's number), ``list(t)``, ``tuple(t)`` (a container element by element) of batched values."""
    f = value.func.value  # type: ignore[attr-defined]
    if f == "trip_bound" and len(value.args) == 2:  # (see srcjax/loop_adjoint.py)
        return code(value.args[1].value), False
    if f == "range" and all(w.only_shapes(a.value) for a in value.args):  # range(r.size): an example's size
        from .batch_queries import PerExample
        return code(value.visit(PerExample(w))), False  # type: ignore[arg-type]
    if f == "range" and getattr(w.nf.fn, "__module__", "") in STRUCTURAL_MODULES:  # (derivatives' and vmap's
        # helpers: a count of their tape, `range(loop_count)` of a tree's levels, is the same in every example)
        return "range(" + ", ".join(f"batch_static({code(a.value)})" if any_batched(w.value_state(a.value)) else
                                    code(a.value) for a in value.args) + ")", False
    if f == "range":
        from . import batch_errors
        named = batch_errors.mapped_error(w, "its bound", sorted(names_in(value)), value, "")
        which = named.message.split(" but it depends on ", 1)[1] if " but it depends on " in named.message else ""
        raise w.error(f"vmap: a loop over {code(value)!r} runs a different number of times per example"
                      + (f": its bound depends on {which}" if which else ""), value,
                      hint=(f"{named.hint}; or " if which and named.hint else "")
                      + "a `while` loop on a counter (`while i < n:`) runs per example under vmap; under grad "
                        "give max_iters= (srcjax.grad(f, max_iters=100)) to bound it for every example"
                      + ("" if which else ", or pass in_axes=None for the bound"))
    args = [a for a in value.args if a.keyword is None and not a.star]
    if not args:
        return None
    first = w.value_state(args[0].value)
    rest = [a.value for a in value.args[1:]]
    if f in ("max", "min") and len(args) == 1 and type(args[0].value) is cst.Name and \
            all(a.keyword is not None for a in value.args[1:]):
        return code(value), False  # (a dict's keys, static; a batched value's items: the lowering refuses them)
    if f in ("max", "min") and len(args) >= 2 and len(args) == len(value.args) and not w.only_shapes(value) and \
            all(_atom(a.value) for a in args) and \
            all(w.value_state(a.value) in (True, False) for a in args) and \
            any(w.value_state(a.value) is True for a in args):  # (Python's max of each example's single values:
        # names and numbers only, so the batched text is the names' own; `len(x)` of a batched `x` is a shape)
        flags = tuple(w.value_state(a.value) is True for a in args)
        return (f"batch_builtin_max(({', '.join(code(a.value) for a in args)}), {flags!r}"
                + (")" if f == "max" else ", largest=False)")), True
    if f in ("max", "min") and any(any_batched(w.value_state(a.value)) for a in value.args) and \
            not w.only_shapes(value):  # (`min(len(x), len(y))`: each example's sizes, static: the caller's query)
        raise w.error(f"the builtin {f}() compares values known only at run time", value,
                      hint=f"use np.{'maximum' if f == 'max' else 'minimum'}(a, b) or np.{f}(x); several arrays: "
                           f"np.{f}(np.stack([...]), axis=0)")
    if f in ("abs", "round") and not any(any_batched(w.value_state(r)) for r in rest):
        return code(value), first
    if f in ("float", "int") and len(value.args) == 1 and first is True:  # a per-example number, as data
        x = code(args[0].value)
        return (f"{x} * 1.0", True) if f == "float" else (f"{x}.astype(np.int64)", True)
    if f in ("sorted", "list", "tuple", "len") and len(value.args) == 1 and \
            isinstance(first, Tree) and first.kind == "dict":  # a dict's keys (or their count): static
        return code(value), False
    if f == "sorted" and len(args) == 1 and first is True and type(args[0].value) is cst.Name and \
            all(a.keyword is None or a.keyword.value == "reverse" for a in value.args):
        # a mapped dict's keys (the dict is batched leaf by leaf): static strings or numbers. Of a batched array or
        # a container of batched arrays it compares array data, which the lowering refuses anyway
        return code(value), False
    if f == "sorted" and len(value.args) == 1 and isinstance(first, Stack) and not isinstance(first, Repeated) and all(
            isinstance(e, Tree) and e.kind == "tuple" and e.items and e.items[0][1] is False for e in first.entries):
        return code(value), first  # sorted(d.items()): by the unbatched keys, the pairs as they are
    if f == "dict" and len(value.args) == 1 and value.args[0].keyword is None and isinstance(first, Tree) and \
            first.kind == "dict":  # (a copy of a dict mapped in part, `s = dict(state)`: item by item as it is)
        return code(value), first
    if f in ("list", "tuple") and len(value.args) == 1 and isinstance(first, (Tree, Stack)):
        if isinstance(first, Tree) and first.kind in ("tuple", "list"):
            return code(value), Tree(f, first.items)
        if isinstance(first, Stack):
            return code(value), first
    return None


def record_fields(w: FunctionWriter, func: cst.BaseExpression) -> tuple[str, ...] | None:
    """The fields of the NamedTuple or dataclass ``func`` names (None: not a record type)."""
    chain = code(func).split(".")
    closure = w.nf.source.closure  # (a closure's name first, as Python reads it: a plain class's dataclass there)
    obj: Any = closure[chain[0]] if chain[0] in closure else w.nf.namespace.get(chain[0])
    for part in chain[1:]:
        obj = getattr(obj, part, None) if isinstance(obj, (type, types.ModuleType)) else None
    return record_type_fields(obj)


def record_state(w: FunctionWriter, fields: tuple[str, ...], value: cst.Call) -> State:
    """The state of ``Record(a, b=c)``: field by field (a field left to its default: unbatched)."""
    got: dict[str, State] = {}
    for i, a in enumerate(value.args):
        if a.star:
            return True
        name = a.keyword.value if a.keyword is not None else (fields[i] if i < len(fields) else None)
        if name is None:
            return True
        got[name] = w.value_state(a.value)
    return Tree("record", tuple((f".{f}", got.get(f, False)) for f in fields))


def container_item(w: FunctionWriter, value: cst.BaseExpression, x: str, op: Op,
                   any_kind: bool) -> tuple[str, State] | None:
    """``t[k]`` of a tuple, list or dict whose elements are batched element by element (``any_kind``: the
    getitem's result may be other than an array), or ``lst[-j]`` with a literal ``j`` of a list followed push
    by push (a tape: the value pushed there, in its own state; batched source reads its batch size so,
    ``batch_size_of(_tape_dot[-1][1])``, which a second vmap must not take for batched). None: neither."""
    xs = w.state(x)
    key = op.args.get("key", "")
    k = literal_key(key)
    if isinstance(xs, Stack):
        pushed = not isinstance(xs, Repeated) and type(value) is cst.Subscript and isinstance(k, int)
        return (code(value), xs.entries[k]) if pushed and -len(xs.entries) <= k < 0 else None
    if not any_kind or not isinstance(xs, Tree):
        return None
    if xs.kind == "record" and isinstance(k, int) and -len(xs.items) <= k < len(xs.items):
        return code(value), xs.items[k][1]  # a NamedTuple's field by position
    if k is not None:
        for kk, v in xs.items:
            if literal_key(kk) == k:
                return code(value), v
    j: State = False
    for _, v in xs.items:
        j = join(j, v)
    if any_batched(j) and not all(v is True for _, v in xs.items):
        w.forced.add(x)  # an element chosen at run time: every element batched
    return code(value), any_batched(j)


def called(w: FunctionWriter, nf: Any, params: list[str], states: list[State], bound: Any,
           args: list[str]) -> tuple[str, State, set[str], dict[str, Any], list[str]]:
    """The batched helper ``nf`` for its arguments' ``states`` (``Batcher.function``), and the call's ``args``. A
    parameter the helper needs batched on entry (an item read at an index known at run time, a list it appends
    batched values to) whose argument is a literal, ``helper((k, v), j)``, is broadcast at the call and the
    helper written again for it batched (a name is made batched where it is bound, by the caller's ``forced``;
    a literal left as it was had its unbatched items read as batched: ``operand[j - 1]`` of an unmapped ``k``
    gave one of ``k``'s elements per example)."""
    name, ret, needs, effects = w.b.function(nf, tuple(states))
    again = False
    for p in sorted(needs):
        text = bound.arguments.get(p)
        if not (isinstance(text, str) and not text.isidentifier() and p in params):
            continue
        new = w.convert(text, states[params.index(p)], True, items=True)
        spelled = [a for a in args if a == text or a.endswith(f"={text}") and a.split("=", 1)[1] == text]
        if spelled:
            args = [new if a == text else f"{a.split('=', 1)[0]}={new}" if a in spelled else a for a in args]
            states = [True if q == p else s for q, s in zip(params, states)]
            again = True
    if again:
        name, ret, needs, effects = w.b.function(nf, tuple(states))
    return name, ret, needs, effects, args


def pack_like(w: FunctionWriter, op: Op) -> str:
    """``pack_like(x, items)`` (``a, b = x`` differentiated) per example: an array's rows stacked after the
    batch axis; a container's items as they are, each unbatched item of a tuple or list literal, or of a
    container whose state says which are unbatched (``items`` a helper's parameter: ``vmap(jacrev(f))`` of a loop
    whose carry holds a value no example changes), or all of them where ``items`` is a name bound to the zeros of
    an unbatched value (its tangent; not a helper's result, whose state False is not known to be exact: a
    recursion's), broadcast here (the result's state is True: every item batched)."""
    items = op.elements[0]
    node = parse_expression(items)
    have = w.value_state(node)
    zeros = have is False and type(node) is cst.Name and node.value in w.zeros  # (a tangent's zeros, unbatched)
    if (isinstance(node, (cst.Tuple, cst.List)) or isinstance(have, Tree) or zeros) and not fully_batched(have):
        items = w.convert(items, have, True, items=True)
    return f"batch_pack_like({op.args['x']}, {items}, {any_batched(w.state(op.args['x']))}, {w.size})"


TREE_CALLS = {"tree_get", "tree_leaves", "leaves_like", "from_leaves"}


def tree_call(w: FunctionWriter, value: cst.Call) -> tuple[str, State]:
    """``tree_get(z, "w")`` (derivative code's read of a container's item by a string key): the item's
    state; ``tree_leaves(p)`` and its tangent ``leaves_like(t, p)``: a list whose items are batched
    alike (all batched when any is: the container is made batched throughout); ``from_leaves(p, g)``
    (``p``'s cotangent): as the list ``g``."""
    name = code(value.func).rsplit(".", 1)[-1]
    args = [a.value for a in value.args]
    if name == "from_leaves":
        return code(value), any_batched(w.value_state(args[1]))
    if name != "tree_get":  # the leaves of args[0] (leaves_like's second argument gives a structure only)
        st = w.value_state(args[0])
        if any_batched(st) and st is not True and type(args[0]) is cst.Name:
            w.forced.add(args[0].value)  # (some leaves batched: all are, so the list's items are alike)
        return code(value), Stack((any_batched(st),))
    z, key = args
    zs = w.value_state(z)
    k = literal_key(code(key))
    if isinstance(zs, Tree):
        for kk, v in zs.items:
            if kk == f".{k}" or literal_key(kk) == k:
                return code(value), v
        if type(z) is cst.Name and any_batched(zs) and not all(v is True for _, v in zs.items):
            w.forced.add(z.value)  # an item chosen at run time (`for k in item_keys(x)`): every item batched, as
            # container_item's (was: an unbatched item read as batched, vmap(jacfwd(jacfwd(f))), seed 1194;
            # gradient_noise_scale's ShapeError under vmap with the parameters mapped in part)
        elif any_batched(zs) and not fully_batched(zs):  # (not a name: the container made batched at every leaf)
            whole = w.convert(code(z), zs, True)
            return f"{code(value.func)}({whole}, {code(key)})", True
    return code(value), any_batched(zs)


def def_alias(w: FunctionWriter, target: cst.BaseExpression, value: cst.BaseExpression) -> cst.BaseExpression:
    """``target`` bound to a nested function through a tuple (``r = (y, vjp_fn)``, then ``h = r[1]``: a
    ``srcjax.vjp`` result indexed instead of unpacked): a call of ``h`` is a call of ``vjp_fn`` (written
    batched like it where it is called), and the tuple holds None in its place (a nested function is written
    where it is called, not where it is defined). ``w.fn_items``: a tuple's items where one is a nested
    function, None for a name that stands for one. The value to batch is returned."""
    if type(target) is not cst.Name:
        return value
    name = target.value
    if name in w.fn_items and w.fn_items.pop(name) is None:
        w.defs.pop(name, None)
    if type(value) is cst.Tuple or type(value) is cst.List:  # (a list too: `branches = [f, g]` for lax.switch)
        items = [code(e.value) for e in value.elements]
        if any(i in w.defs for i in items):
            w.fn_items[name] = items
            return value.with_changes(elements=[e.with_changes(value=cst.Name("None")) if i in w.defs else e
                                                for e, i in zip(value.elements, items)])
    elif type(value) is cst.Subscript and type(value.value) is cst.Name and len(value.slice) == 1 and \
            type(value.slice[0].slice) is cst.Index and type(value.slice[0].slice.value) is cst.Integer:
        fns = w.fn_items.get(value.value.value)
        k = int(value.slice[0].slice.value.value)
        if fns is not None and -len(fns) <= k < len(fns) and fns[k] in w.defs:
            w.defs[name] = w.defs[fns[k]]
            w.fn_items[name] = None
    return value


def sequence_op(w: FunctionWriter, value: cst.BinaryOperation) -> tuple[str, State] | None:
    """:func:`sequence_sum` of ``a + b``, :func:`sequence_repeat` of ``[x] * 2``; None for anything else."""
    if type(value.operator) is cst.Add:
        return sequence_sum(w, value)
    return sequence_repeat(w, value) if type(value.operator) is cst.Multiply else None


def sequence_repeat(w: FunctionWriter, value: cst.BinaryOperation) -> tuple[str, State] | None:
    """``[x] * 2`` (``2 * (a, b)``): a list or tuple display repeated a literal number of times, its elements'
    states repeated (was batched as an array: ``ys[:, 1]``, "list indices must be integers or slices, not
    tuple"); None for anything else."""
    for seq, n in ((value.left, value.right), (value.right, value.left)):
        if isinstance(seq, (cst.List, cst.Tuple)) and type(n) is cst.Integer and \
                not any(isinstance(e, cst.StarredElement) for e in seq.elements):
            st = w.value_state(seq)
            assert isinstance(st, Tree)
            items = [v for _, v in st.items] * int(n.value)
            w.last_array, w.last_sequence = False, True
            return code(value), Tree(st.kind, tuple((str(i), v) for i, v in enumerate(items)))
    return None


def whole_operand(w: FunctionWriter, text: str, param: str, batched: dict[str, bool]) -> str:
    """A primitive's operand: a container with batched and unbatched leaves (``d = {"w": x, "s": np.sum(y)}``, x
    mapped) made batched leaf by leaf, as the batched helpers (``batch_index_update``, ``batch_index_add``, ...)
    take a container batched at every leaf or at none (the partial one was called batched: its unbatched leaf then
    read as batched, an internal IndexError under vmap(grad))."""
    st = w.state(text) if text.isidentifier() else False
    if isinstance(st, Tree) and any_batched(st) and not fully_batched(st):
        batched[param] = True
        return w.convert(text, st, True)
    return text


def batched_items(w: FunctionWriter, expr: str, have: Tree, items: bool) -> str:
    """``expr`` (a container in state ``have``) made batched as a whole, item by item; a container whose items are
    all batched already as it is (a tuple may be UNSET: a join's tuple bound on another path only, pushed on a
    tape: ``(r[0], r[1])`` of it failed)."""
    # (an unbatched item of a parameter may hold a container itself: `{"w": 0, "b": None}` with a list at "b")
    root = re.match(r"\w+", expr)
    param = root is not None and root.group() in {p.name.value for p in w.nf.fdef.params.params}
    packed = [(k, w.convert(item(expr, k), v, True, items or (param and v is False))) for k, v in have.items]
    if all(t == item(expr, k) for k, t in packed):  # (a dict's, a list's too: written again as it was)
        return expr
    return pack(have.kind, packed, expr)


def note_zeros(w: FunctionWriter, names: list[str], value: cst.BaseExpression) -> None:
    """Record which of ``names`` (bound to ``value``, one each where ``value`` is a tuple literal) hold zeros of a
    value that may be a container, a cotangent (``w.zeros``: broadcast and selected item by item); a name bound
    to anything else is forgotten. Followed through copies, tuples of them, adds into them and their
    broadcasts (a derivative batched twice: the inner vmap's ``batch_broadcast_items`` of zeros, a branch's
    ``h_bar, p_bar = (h_bar_1, zs)``)."""
    def zeros(v: cst.BaseExpression) -> bool:
        if type(v) is cst.Name:
            return v.value in w.zeros
        return type(v) is cst.Call and (code(v.func) in ("zeros_like", "ones_like") or code(v.func) in ADDS_INTO
                                            and bool(v.args) and code(v.args[0].value) in w.zeros)

    parts: list[cst.BaseExpression | None] = [value] if len(names) == 1 else [None] * len(names)
    if len(names) > 1 and isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names) and \
            not any(type(e) is cst.StarredElement for e in value.elements):
        parts = [e.value for e in value.elements]
    for n, v in zip(names, parts):
        (w.zeros.add if v is not None and zeros(v) else w.zeros.discard)(n)


def note_tree(w: FunctionWriter, name: str, expr: str) -> None:
    """Record that ``name``, bound to ``expr``, may hold a container whose structure the state does not show
    (``w.trees``: a join selects it item by item): a join selected item by item (``batch_select_items(...)``), or a
    copy of such a name, or a branch's read of one (``taken(d_bar, test)``). A loop's carried cotangent of a dict is
    selected whole at the loop's joins: with ``batch_select`` (arrays only) it was "cannot use a value of type dict"."""
    if expr.startswith("batch_select_items("):
        w.trees.add(name)
        return
    m = _TAKEN.fullmatch(expr)
    source = m[1] if m is not None else expr
    if source in w.trees and source not in w.arrays:
        w.trees.add(name)


_TAKEN = re.compile(r"taken\((\w+), [^()]*\)")
