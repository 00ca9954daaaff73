"""vmap: what the writer reads of an expression without batching it (shape queries, loop iterables)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from ..frontend.cst_expressions import parse_expression
from ..frontend.names import NODE_CLASSES, code, names_in, syntax_fields, walk
from .batch_dict_keys import mapped_dict_keys
from .batch_state import Stack, State, Tree, all_batched, any_batched, element, literal_key

if TYPE_CHECKING:
    from .batch import FunctionWriter

__all__ = ["PER_EXAMPLE_QUERIES", "PerExample", "argument_states", "checked_exprs", "decided_at_run_time",
           "display_query", "element_state", "iterator", "literal_state", "per_example", "scalar_query", "unpacked"]

PER_EXAMPLE_QUERIES = {  # a shape query of a batched x -> the same query of one example
    "shape": "{x}.shape[1:]", "ndim": "({x}.ndim - 1)", "size": "({x}.size // {n})",
    "np.shape": "np.shape({x})[1:]", "np.ndim": "(np.ndim({x}) - 1)", "np.size": "(np.size({x}) // {n})",
    "len": "np.shape({x})[1]", "batch_shape": "batch_shape({x})[1:]",  # (an array batched again: vmap of vmap)
}


def display_query(w: FunctionWriter, query: str, of: cst.BaseExpression | None) -> str | None:
    """``np.shape`` / ``np.ndim`` / ``np.size`` of a list or tuple display holding batched arrays (``np.size([x,
    y])``), per example: its unbatched items broadcast, ``batch_shape`` of it (its lengths, then an example's
    shape) or the batched query less the batch axis. None for anything else (those of a name: the caller's).
    (Written as it was, NumPy's query counted the batch axis: 2x a size, one more dimension, silently.)"""
    if query not in ("np.shape", "np.ndim", "np.size") or not isinstance(of, (cst.List, cst.Tuple)):
        return None
    st = w.value_state(of)
    if not isinstance(st, Tree) or not any_batched(st) or not _sequence_of_leaves(st):
        return None
    seq = w.convert(code(of), st, all_batched(st))
    return f"batch_shape({seq})" if query == "np.shape" else PER_EXAMPLE_QUERIES[query].format(x=seq, n=w.size)


def _sequence_of_leaves(st: State) -> bool:
    """A tuple or list whose items are arrays or such sequences (no dict, no list built by appends)."""
    if isinstance(st, Tree):
        return st.kind in ("tuple", "list") and all(_sequence_of_leaves(v) for _, v in st.items)
    return isinstance(st, bool)


def decided_at_run_time(w: FunctionWriter, query: str, name: str, param: bool) -> bool:
    """Whether ``len(x)`` / ``np.shape(x)`` of the batched ``x`` is written ``batch_len`` / ``batch_shape``: ``x``
    may be a list of batched arrays (a parameter, or a value such as its copy ``u = ws``), or is a Python list or
    tuple of batched values (``u = list(ws)``): ``np.shape(x)[1:]`` dropped its length, not the batch axis."""
    st = w.state(name)
    return query in ("len", "np.shape") and name not in w.arrays and \
        (param or st is True or query == "np.shape" and isinstance(st, (Tree, Stack)))


def unpacked(expr: str, target: cst.BaseExpression) -> str:
    """A batched array unpacked into a nested target (``(x1, y1), (x2, y2) = pts``): its rows, and the
    rows of the rows the inner levels unpack, each with the batch axis first (``batch_unpacked``)."""
    def spec(t: cst.BaseExpression) -> str:
        if isinstance(t, (cst.Tuple, cst.List)):
            return "(" + "".join(spec(e.value) + ", " for e in t.elements) + ")"
        return "None"

    return f"batch_unpacked({expr}, {spec(target)})"


def iterator(w: FunctionWriter, it: cst.BaseExpression) -> tuple[str, State] | None:
    """``zip(a, b)``, ``enumerate(a)``, ``d.items()``, ``reversed(a)`` over batched values: the
    iterable (a batched array's rows, ``batch_rows``) and the state of each element; None when
    ``it`` is none of these."""
    if type(it) is cst.Name:
        st = w.state(it.value)
        if mapped_dict_keys(w, it):  # (`for k in params`, params mapped whole: its keys)
            return f"batch_keys({it.value})", False
        if isinstance(st, (Tree, Stack)):
            return _uniform(w, it.value, st)
        return (f"batch_rows({it.value})", True) if st is True else (it.value, False)
    if isinstance(it, (cst.Tuple, cst.List)):  # a literal sequence: its elements' states
        return _uniform(w, code(it), w.value_state(it))
    if type(it) is not cst.Call:
        return None
    f = code(it.func)
    args = [a.value for a in it.args]
    if type(it.func) is cst.Attribute and not args and it.func.attr.value in ("items", "values", "keys") and \
            type(it.func.value) is cst.Name:
        st = w.state(it.func.value.value)
        kind = it.func.attr.value
        text = code(it)
        leaf_states = [s for _, s in st.items] if isinstance(st, Tree) else []
        if kind != "keys" and any_batched(st) and any(s != leaf_states[0] for s in leaf_states):
            # (mapped and unmapped values, `{k: f(v) for k, v in params.items()}` with in_axes={'w': 0, 'b': None}:
            # every value batched first, as each iteration's value is read as batched)
            name, have = it.func.value.value, st
            st = all_batched(st)
            if isinstance(have, Tree) and all(isinstance(s, bool) for s in leaf_states):  # (the dict's own order
                # kept: a literal would be in the state's order, not the run-time dict's sorted one)
                flags = "{" + ", ".join(f"{k}: {not s}" for k, s in have.items) + "}" if have.kind == "dict" else \
                    str(tuple(not s for s in leaf_states))
                text = f"batch_broadcast_parts({name}, {flags}, {w.size}).{kind}()"
            else:
                text = f"({w.convert(name, have, st, items=True)}).{kind}()"
        v = element(st) if isinstance(st, Tree) else any_batched(st)
        return text, (Tree("tuple", (("0", False), ("1", v))) if kind == "items" else
                      v if kind == "values" else False)
    if f in ("zip", "enumerate", "reversed", "list", "tuple") and args and all(a.keyword is None for a in it.args):
        parts = [w.iterator(a) for a in args]
        if any(p is None for p in parts):
            return None
        texts = [p[0] for p in parts if p is not None]
        states = [p[1] for p in parts if p is not None]
        if f == "zip":
            return f"zip({', '.join(texts)})", Tree("tuple", tuple((str(i), v) for i, v in enumerate(states)))
        if f == "enumerate" and len(args) == 1:
            return f"enumerate({texts[0]})", Tree("tuple", (("0", False), ("1", states[0])))
        if len(args) == 1:
            return f"{f}({texts[0]})", states[0]
    return None


def dict_keys(w: FunctionWriter, it: cst.BaseExpression) -> bool:
    """``it`` (``d`` or ``d.keys()``) runs over the keys of a dict: the same in every example."""
    if type(it) is cst.Call and not it.args and type(it.func) is cst.Attribute and it.func.attr.value == "keys":
        it = it.func.value
    if type(it) is not cst.Name:
        return False
    st = w.state(it.value)
    return isinstance(st, Tree) and st.kind == "dict" or mapped_dict_keys(w, it)


def _uniform(w: FunctionWriter, text: str, st: State) -> tuple[str, State]:
    """A sequence iterated over, with every element in one state: batched and unbatched elements
    (``for v in [x, w]``, x mapped) are all batched first. A dict yields its keys: static strings or numbers
    (``for k in params``, was read as the batched values' rows)."""
    if isinstance(st, Tree) and st.kind == "dict":
        return text, False
    parts = [v for _, v in st.items] if isinstance(st, Tree) else list(st.entries) if isinstance(st, Stack) else []
    if parts and any_batched(st) and any(v != parts[0] for v in parts):
        want = all_batched(st) if isinstance(st, Tree) else True
        # (items: an element may be a container, `for layer in [{'w': w0, 'b': b0}, layer1]`, a layer mapped)
        return w.convert(text, st, want, items=True), element(want) if isinstance(want, Tree) else True
    return text, element(st)


def checked_exprs(s: cst.Assert | cst.Raise) -> list[cst.BaseExpression]:
    if isinstance(s, cst.Assert):
        return [e for e in (s.test, s.msg) if e is not None]
    return [e for e in (s.exc, s.cause.item if s.cause is not None else None) if e is not None]


def per_example(w: FunctionWriter, node: Any) -> Any:
    """``node`` with its shape queries of batched values made per example (``x.shape`` -> ``x.shape[1:]``,
    ``x.shape[0]`` -> ``x.shape[1]``): bottom up, as a libcst transformer's ``leave_`` methods would (each
    rule reads the original node, and keeps the node with its rewritten children otherwise), but the
    subtrees with nothing rewritten are kept as they are (the same objects), not rebuilt node by node."""
    t = type(node)
    changes: dict[str, Any] = {}
    for f in syntax_fields(t):
        v = getattr(node, f)
        if v.__class__ in NODE_CLASSES:  # (isinstance of libcst's base class: an ABC's check, a Python call)
            nv = per_example(w, v)
            if nv is not v:
                changes[f] = nv
        elif v.__class__ is tuple or v.__class__ is list:
            items = [per_example(w, c) if c.__class__ in NODE_CLASSES else c for c in v]
            if any(a is not b for a, b in zip(items, v)):
                changes[f] = items
    upd = node.with_changes(**changes) if changes else node
    if t is cst.Subscript:
        v = node.value  # x.shape[0] -> x.shape[1] (a per-example axis by its index)
        if type(v) is cst.Attribute and v.attr.value == "shape" and type(v.value) is cst.Name and \
                any_batched(w.state(v.value.value)) and len(node.slice) == 1 and \
                type(node.slice[0].slice) is cst.Index:
            k = literal_key(code(node.slice[0].slice.value))
            if isinstance(k, int) and not isinstance(k, bool):
                return parse_expression(f"{v.value.value}.shape[{k + 1 if k >= 0 else k}]")
        return upd
    if t is cst.Attribute:
        return w.per_example_query(node.attr.value, node.value, upd)
    # np.size(x, axis): one entry of an example's shape (np.size(x, None): the whole size, below)
    if t is cst.Call and code(node.func) == "np.size" and len(node.args) == 2 and \
            (axis := _size_arguments(upd.args)[1]) is not None and code(axis) != "None" and \
            (of := _size_arguments(node.args)[0]) is not None:
        shape = w.per_example_query("np.shape", of, parse_expression(f"np.shape({code(of)})"))
        if isinstance(axis, (cst.Tuple, cst.List)):  # np.size(x, (0, 1)): the product of those lengths
            return parse_expression("(" + " * ".join(f"{code(shape)}[{code(e.value)}]" for e in axis.elements) + ")"
                                    if axis.elements else "1")
        return parse_expression(f"{code(shape)}[{code(axis)}]")  # (the query of np.size(x) dropped the axis)
    if t is cst.Call:
        return w.per_example_query(code(node.func), node.args[0].value if node.args else None, upd)
    return upd


def _size_arguments(args: Any) -> tuple[Any, Any]:
    """``(a, axis)`` of ``np.size(a, axis)``'s arguments, given by position or keyword."""
    pos = [a.value for a in args if a.keyword is None]
    kw = {a.keyword.value: a.value for a in args if a.keyword is not None}
    a = pos.pop(0) if pos else kw.get("a")
    return a, pos.pop(0) if pos else kw.get("axis")


class PerExample(cst.CSTTransformer):
    """Shape queries of batched values in an ``assert`` or ``raise`` made per example."""

    def __init__(self, w: FunctionWriter) -> None:
        super().__init__()
        self.w = w

    def on_leave(self, original: Any, updated: Any) -> Any:
        if isinstance(original, cst.BaseExpression) and type(original) is not cst.Name and \
                any(any_batched(self.w.state(n)) for n in names_in(original)) and \
                isinstance(original, (cst.Attribute, cst.Call, cst.Subscript)) and self.w.only_shapes(original):
            return parse_expression(self.w.static_expr(original, original))
        return updated


def element_state(w: FunctionWriter, node: cst.Subscript) -> State | None:
    """The state of ``t[k]`` (a literal key) of a name ``t`` holding a container; None: not such a read."""
    st = w.state(node.value.value) if type(node.value) is cst.Name else None
    if not isinstance(st, Tree) or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    key = code(node.slice[0].slice.value)
    k = literal_key(key)
    if st.kind in ("tuple", "list") and isinstance(k, int) and not isinstance(k, bool) and \
            -len(st.items) <= k < len(st.items):
        return st.items[k][1]
    return next((v for kk, v in st.items if kk == key), None) if st.kind == "dict" else None


def argument_states(w: FunctionWriter, params: list[str], arguments: dict[str, Any],
                    line: cst.CSTNode) -> tuple[list[State], dict[str, str]]:
    """The state of each parameter's argument text in a helper call, and the arguments that read batched values
    only through shape queries (``normal(key, x.shape)``) rewritten to the per-example query (state False)."""
    states: list[State] = []
    shaped: dict[str, str] = {}
    for p in params:
        a = arguments.get(p)
        try:
            node = parse_expression(a) if isinstance(a, str) else None
        except cst.ParserSyntaxError:
            node = None
        if isinstance(a, str) and node is not None and type(node) is not cst.Name and \
                any(any_batched(w.state(n)) for n in names_in(node)) and w.only_shapes(node):
            shaped[a] = w.static_expr(node, line)
            states.append(False)
        else:
            states.append(w.value_state(node) if node is not None else False)
    return states, shaped


def literal_state(w: FunctionWriter, node: cst.BaseExpression) -> State:
    """:meth:`FunctionWriter.value_state` of a tuple, list or dict literal whose elements that read batched
    values only through shape queries (made per example by :class:`PerExample`) are unbatched."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return Tree("tuple" if type(node) is cst.Tuple else "list",
                    tuple((str(i), literal_state(w, e.value)) for i, e in enumerate(node.elements)))
    if type(node) is cst.Dict:
        return Tree("dict", tuple((code(e.key), literal_state(w, e.value)) for e in node.elements
                                  if type(e) is cst.DictElement))
    if type(node) is not cst.Name and w.only_shapes(node):
        return False
    return w.value_state(node)


def scalar_query(value: cst.BaseExpression) -> bool:
    """``x.shape[0]``, ``x.ndim``, ``len(x)``: a shape query giving one int (not a tuple)."""
    if type(value) is cst.Subscript:
        return len(value.slice) == 1 and type(value.slice[0].slice) is cst.Index and \
            type(value.slice[0].slice.value) is cst.Integer
    if type(value) is cst.Attribute:
        return value.attr.value in ("ndim", "size")
    return type(value) is cst.Call and code(value.func) in ("len", "np.ndim", "np.size")


def comprehension_fors(value: cst.BaseExpression) -> list[cst.CompFor]:
    """The ``for`` clauses of the comprehensions in ``value``, outermost first (remembered for the last
    value asked about: :meth:`FunctionWriter.only_shapes` asks three times of each right-hand side)."""
    global _LAST_FORS
    last = _LAST_FORS  # (one tuple, swapped whole: another thread's writer sees a consistent pair)
    if last[0] is not value:
        last = _LAST_FORS = (value, [n for n in walk(value) if type(n) is cst.CompFor])
    return last[1]


_LAST_FORS: tuple[Any, list[cst.CompFor]] = (None, [])


def is_empty_list(value: cst.BaseExpression) -> bool:
    """``[]`` (a list the writer fills, or a tape)."""
    return type(value) is cst.List and not value.elements
