"""Batching rules (``vmap``): how a primitive call runs on batched operands.

A rule is the ``batch`` field of a primitive's record (set next to its ``defprim`` in
each family module). It gets a :class:`BatchCall`: the call's arguments as source text
(``args``), which array operands are batched (batch axis first, :meth:`BatchCall.batched`),
and a way to emit statements before the call; it returns the batched call as an
expression. Unbatched operands keep their per-example shapes, so a rule never repeats
them along the batch (``x @ w`` with a batched ``x`` stays one matmul with ``w``).

Rules are shape-generic like the rest of generated source: where a per-example rank
matters (broadcasting a batched ``x`` against an unbatched ``w``), they call a helper of
:mod:`srcjax.batched`, whose static shape logic runs at compile time. So does a static
argument a rule cannot read (a name: ``axis=AXIS``), which the helper reads then.

Any primitive can fall back to :meth:`BatchCall.per_example`: a rolled loop over the
examples, correct for every call. Rules use it only where there is no vectorized form
(a key or an ``einsum`` subscript that is not a literal, ``order=`` other than C).
tests/test_vmap_primitives.py checks every rule, and that no case it marks vectorized loops.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any, Protocol

from ..core import StaticValueError
from ..frontend.ast_walk import walk_ast

Rule = Callable[["BatchCall"], Any]


class BatchCall(Protocol):
    """What a batching rule sees (written by transforms/batch.py)."""

    path: str  # the primitive as generated source spells it
    arrays: tuple[str, ...]  # its array parameters
    args: dict[str, Any]  # parameter -> source text (a list of texts for a sequence parameter)
    size: str  # the batch size, a name

    def batched(self, param: str) -> bool: ...

    def reads_batched(self, text: str) -> bool: ...  # whether an expression reads a batched name

    def seq_batched(self, param: str) -> list[bool]: ...

    def static(self, param: str) -> bool: ...

    def array(self, param: str) -> bool: ...

    def rows(self, param: str) -> str: ...  # a list variable's elements as arrays (batch_items where containers)

    def call(self, **replace: Any) -> str: ...

    def let(self, hint: str, value: str) -> str: ...

    def per_example(self) -> str: ...


def is_name(text: Any) -> bool:
    """Whether a call's argument text is a variable (not a literal)."""
    return isinstance(text, str) and text.isidentifier() and text not in ("None", "True", "False")


def _literal(text: Any) -> Any:
    """The value of a literal argument, or ``...`` when it is not one (a name)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError):
        return ...


# -- elementwise ---------------------------------------------------------------------------------

def elementwise(c: BatchCall) -> str:
    """A ufunc-like call (``x1 * x2``, ``np.where``, ``np.clip``): each batched operand gets as many
    per-example axes as the others (``batch_align``), then NumPy broadcasts per example."""
    return c.call(**_aligned(c))


def linspace(c: BatchCall) -> str:
    """``np.linspace(start, stop, num)`` with batched endpoints: broadcast as an elementwise call's operands, the
    samples' axis one further along (``axis=1``: the batch axis first)."""
    axis = _literal(c.args.get("axis", "0"))
    if not isinstance(axis, int) or isinstance(axis, bool):
        return c.per_example()
    return c.call(**_aligned(c), axis=repr(axis + 1 if axis >= 0 else axis))


def _aligned(c: BatchCall) -> dict[str, str]:
    """(:func:`elementwise`) each batched operand's text, aligned with the others."""
    ops = [p for p in _operands(c) if p in c.args]
    new: dict[str, str] = {}
    for p in ops:
        if not c.batched(p):
            continue
        e = c.args[p]
        for q in ops:
            if q != p and is_name(c.args[q]) and c.args[q] != c.args[p] and not c.static(q):
                e = f"batch_align{'_b' if c.batched(q) else ''}({e}, {c.args[q]})"
        new[p] = e
    return new


def _operands(c: BatchCall) -> list[str]:
    """The array parameters of the call."""
    return list(c.arrays)


# -- axes ---------------------------------------------------------------------------------------

def _shift(text: str, operand: str, none: str | None) -> str:
    """An axis argument for the batched operand: literal axes shifted past the batch axis."""
    v = _literal(text)
    if v is None:
        return none if none is not None else f"batch_axes({operand})"
    if isinstance(v, bool) or v is ...:
        return f"batch_axis({text}, {operand})"
    if isinstance(v, int):
        return repr(v + 1 if v >= 0 else v)
    if isinstance(v, (tuple, list)) and all(isinstance(a, int) for a in v):
        return repr(tuple(a + 1 if a >= 0 else a for a in v))
    return f"batch_axis({text}, {operand})"


def axes(*params: str, operand: str = "a") -> Rule:
    """A call of one batched operand whose axis parameters count per-example axes (``np.sum(a,
    axis=0)`` -> ``axis=1``); ``axis=None`` is every per-example axis."""

    def rule(c: BatchCall) -> str:
        return c.call(**{p: _shift(c.args[p], c.args[operand], None) for p in params if p in c.args})

    return rule


def flattening(name: str, *params: str, operand: str = "a") -> Rule:
    """A call whose ``axis=None`` works on each flattened example (``np.argmax``, ``np.cumsum``,
    ``np.repeat``, ``np.roll``): a literal axis is shifted past the batch axis; otherwise the helper
    ``name`` of :mod:`srcjax.batched` takes the arguments ``params`` and decides while specializing."""
    shifted = axes("axis", operand=operand)

    def rule(c: BatchCall) -> str:
        axis = _literal(c.args.get("axis", "None"))
        if axis is not None and axis is not ...:
            return shifted(c)
        return f"{name}({', '.join(c.args[p] for p in params)})"

    return rule


def unary(c: BatchCall) -> str:
    """A call that works per example as it is on a batched operand (``np.copy``, ``np.astype``)."""
    return c.call()


def helper(name: str, *params: str) -> Rule:
    """A call of a :mod:`srcjax.batched` helper that takes the arguments ``params`` and then, for
    each array operand, whether it is batched."""

    def rule(c: BatchCall) -> str:
        flags = [str(c.batched(p)) for p in _operands(c)]
        args = [c.args[p] for p in params]
        return f"{name}({', '.join(args + flags)})"

    return rule


def helper_batched_only(name: str, *params: str) -> Rule:
    """A :mod:`srcjax.batched` helper taking ``params`` of a call whose one operand is batched."""

    def rule(c: BatchCall) -> str:
        return f"{name}({', '.join(c.args[p] for p in params)})"

    return rule


def multi_dot(c: BatchCall) -> str:
    """``np.linalg.multi_dot([...])``: a chain of per-example matmuls (``batch_multi_dot``); a list
    that is not a literal runs per example."""
    elems = c.args["arrays"]
    if not isinstance(elems, list):
        return c.per_example()
    return f"batch_multi_dot([{', '.join(elems)}], {c.seq_batched('arrays')!r})"


def per_example(c: BatchCall) -> str:
    """A rolled loop over the examples (correct for any call; no vectorized form)."""
    return c.per_example()


# -- sequences of operands --------------------------------------------------------------------------

def _broadcast_elements(c: BatchCall, param: str) -> list[str]:
    """The elements of a sequence operand, the unbatched ones repeated along the batch."""
    elems = c.args[param]
    flags = c.seq_batched(param)
    # (a list or tuple of numbers written in place, `np.concatenate(([0.0], x, [0.0]))`, is an array operand:
    # repeated as one, not as a container whose items batch_broadcast would leave as they are)
    return [e if b else f"batch_broadcast(np.asarray({e}), {c.size})" if e[:1] in "[(" else
            f"batch_broadcast({e}, {c.size})" for e, b in zip(elems, flags)]


def join(param: str, none_flattens: bool = True) -> Rule:
    """``np.concatenate``/``np.stack``: elements batched, the axis shifted."""

    def rule(c: BatchCall) -> str:
        ax = c.args.get("axis", "0")
        if not isinstance(c.args[param], list):  # a list variable: every element batched
            rows = c.rows(param)  # (`items.append((v, w))`: each element an array, batch axis first)
            if _literal(ax) is None:
                if not none_flattens:
                    return c.per_example()
                return f"batch_concatenate_flat({rows}, {c.args.get('dtype', 'None')})"
            return c.call(**{param: rows, "axis": _shift(ax, f"{rows}[0]", None)})
        elems = _broadcast_elements(c, param)
        if _literal(ax) is None:
            if not none_flattens:
                return c.per_example()
            elems = [f"batch_flat_axis({e})" for e in elems]
            return c.call(**{param: "[" + ", ".join(elems) + "]", "axis": "1"})
        return c.call(**{param: "[" + ", ".join(elems) + "]", "axis": _shift(ax, elems[0], None)})

    return rule


def hvstack(k: int) -> Rule:
    """``np.vstack`` (k=2: rows) and ``np.hstack`` (k=1): ``batch_vstack``/``batch_hstack`` make each
    batched element at least ``k``-D per example and join them."""

    def rule(c: BatchCall) -> str:
        tup = c.args["tup"]
        if isinstance(tup, list):
            tup = "[" + ", ".join(_broadcast_elements(c, "tup")) + "]"
        return f"batch_{'vstack' if k == 2 else 'hstack'}({tup}, {c.args.get('dtype', 'None')})"

    return rule


def atleast(k: int) -> Rule:
    """``np.atleast_{k}d``: each batched element given NumPy's new axes after the batch axis."""

    def rule(c: BatchCall) -> Any:
        if not isinstance(c.args["arys"], list):
            return c.per_example()
        elems = [f"batch_atleast({e}, {k})" for e in _broadcast_elements(c, "arys")]
        if len(elems) == 1:
            return elems[0]
        return "(" + ", ".join(elems) + ")"

    return rule


# -- einsum ----------------------------------------------------------------------------------------

def einsum(c: BatchCall) -> str:
    """``np.einsum``: a new index letter for the batch axis of each batched operand."""
    ops = c.args["operands"]
    sub = _literal(c.args["subscripts"])
    if not isinstance(ops, list) or not isinstance(sub, str):
        return c.per_example()
    flags = c.seq_batched("operands")
    spec = sub.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->")
    else:
        ins = spec
        letters = re.sub(r"[^A-Za-z]", "", ins)
        out = "".join(sorted(ch for ch in set(letters) if letters.count(ch) == 1))
        if "..." in ins:
            out = "..." + out
    z = next(ch for ch in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if ch not in spec)
    terms = ins.split(",")
    if len(terms) != len(ops):
        return c.per_example()
    new = ",".join(z + t if b else t for t, b in zip(terms, flags)) + "->" + z + out
    return f"np.einsum({new!r}, {', '.join(ops)})"


# -- shapes ---------------------------------------------------------------------------------------

def reshape(c: BatchCall) -> str:
    """``np.reshape``: every example to ``shape`` (srcjax reshapes in C order only)."""
    if _literal(c.args.get("order", "'C'")) != "C":
        return c.per_example()
    return f"batch_reshape({c.args['a']}, {c.args['shape']})"


def ravel(c: BatchCall) -> str:
    """``np.ravel``: each example flattened (``order="F"``: its axes reversed first)."""
    if _literal(c.args.get("order", "'C'")) == "C":
        return f"batch_flat_axis({c.args['a']})"
    return f"batch_ravel({c.args['a']}, {c.args['order']})"


def broadcast_to(c: BatchCall) -> str:
    """``np.broadcast_to``: every example to ``shape`` (``batch_align`` first)."""
    return f"batch_broadcast_to({c.args['array']}, {c.args['shape']}, True)"


def triangle(lower: bool) -> Rule:
    """``np.tril`` (``lower``) / ``np.triu``: on the last two axes, a per-example vector made rows first."""

    def rule(c: BatchCall) -> str:
        return f"batch_triangle({c.args['m']}, {c.args.get('k', '0')}, {lower})"

    return rule


def full(c: BatchCall) -> str:
    """``np.full(shape, v)`` with a batched ``v``."""
    return f"batch_full({c.args['shape']}, {c.args['fill_value']}, {c.args.get('dtype', 'None')})"


def like(c: BatchCall) -> str:
    """``np.zeros_like(a)``: a batched template gives a batched result, unless ``shape=`` is given (the
    same array in every example; ``batch_like`` decides for a shape that is not a literal)."""
    shape = _literal(c.args.get("shape", "None"))
    if shape is None:
        return c.call()
    if shape is ...:
        return f"batch_like({c.call()}, {c.args['shape']}, {c.size})"
    return f"batch_broadcast({c.call()}, {c.size})"


def full_like(c: BatchCall) -> str:
    """``np.full_like(a, v)``: as :func:`like` for an unbatched ``v``; a batched ``v`` fills each example
    (``batch_full_like``)."""
    if not c.batched("fill_value"):
        return like(c)
    return (f"batch_full_like({c.args['a']}, {c.args['fill_value']}, {c.args.get('dtype', 'None')}, "
            f"{c.args.get('shape', 'None')}, {c.batched('a')})")


# -- indexing -------------------------------------------------------------------------------------

def _key_elements(key: str) -> list[str] | None:
    """The elements of a key's source text (``(i, slice(1, None, None),)`` -> two), None if unreadable."""
    try:
        node = ast.parse(key, mode="eval").body
    except SyntaxError:
        return None
    elems = node.elts if isinstance(node, ast.Tuple) else [node]
    return [ast.unparse(e) for e in elems]


def _subscript(elem: str) -> str:
    """A key element as subscript syntax: ``slice(1, n, None)`` -> ``1:n``; ``np.s_[::2]`` -> ``::2``."""
    node = ast.parse(elem, mode="eval").body
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "slice" and \
            not node.keywords and 1 <= len(node.args) <= 3:
        parts = [ast.unparse(a) for a in node.args]
        if len(parts) == 1:
            parts = ["None"] + parts
        lo, hi, step = (parts + ["None"])[:3]
        text = ("" if lo == "None" else lo) + ":" + ("" if hi == "None" else hi)
        return text + ("" if step == "None" else ":" + step)
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "np.s_":
        return ast.unparse(node.slice).removeprefix("(").removesuffix(")") if isinstance(node.slice, ast.Tuple) \
            else ast.unparse(node.slice)
    return elem


def _basic(elem: str) -> bool:
    """Whether a key element is basic indexing: an int literal, a slice, None or ``...``."""
    node = ast.parse(elem, mode="eval").body
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        node = node.operand
    if isinstance(node, ast.Constant):
        return node.value is None or node.value is Ellipsis or isinstance(node.value, int)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "slice":
        return True
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "np.s_":
        return not any(isinstance(n, (ast.List, ast.Tuple)) and n is not node.slice for n in walk_ast(node.slice))
    return False


def _batched_key(c: BatchCall, key: str) -> tuple[str, str] | None:
    """A batched key for a ``batch_index`` helper: its text (a list of indices holding batched integers
    as one array per example) and the flags of its elements; None if it cannot be read."""
    elems = _key_elements(key)
    if elems is None:
        return None
    new = []
    for e in elems:
        if c.reads_batched(e) and _subscript(e) != e:
            raise StaticValueError(f"vmap: a slice bound of the index [{_subscript(e)}] depends on a mapped argument",
                                   hint="slice bounds must be static; index with np.arange(n) + i for a moving window")
        if c.reads_batched(e) and not is_name(e):
            items = _list_items(e)
            if items is None or not all(is_name(i) or not c.reads_batched(i) for i in items):
                return None
            # x[[i, 0]]: the index list as an array per example
            e = "np.stack([" + ", ".join(i if c.reads_batched(i) else f"batch_broadcast({i}, {c.size})"
                                        for i in items) + "], axis=1)"
        new.append(e)
    flags = ", ".join(str(c.reads_batched(e)) for e in elems)
    return f"({', '.join(new)},)", f"({flags},)"


def getitem(c: BatchCall) -> str:
    """``x[key]``: basic indexing keeps the batch axis whole in front (``x[:, 1:, None]``); integer
    arrays and run-time integers gather per example, vectorized (``batch_getitem`` for an unbatched key,
    ``batch_index`` for a batched one)."""
    x, key = c.args["x"], c.args["key"]
    elems = _key_elements(key)
    if not c.batched("key"):
        if elems is not None and all(_basic(e) for e in elems) and c.array("x"):  # (a container: as it is)
            return f"{x}[{', '.join([':'] + [_subscript(e) for e in elems])}]"
        return f"batch_getitem({x}, {key})"
    batched = _batched_key(c, key)
    if batched is None:
        return c.per_example()
    return f"batch_index({x}, {batched[0]}, {c.batched('x')}, {batched[1]})"


def _list_items(text: str) -> list[str] | None:
    """The items of a list or tuple literal's source text, None if it is not one."""
    node = ast.parse(text, mode="eval").body
    if isinstance(node, (ast.List, ast.Tuple)):
        return [ast.unparse(e) for e in node.elts]
    return None


def keyed(name: str, x: str, key: str, value: str | None, mode: bool = False) -> Rule:
    """``index_update(x, key, v)`` / ``index_add``: one scatter into the batched ``x`` (``batch_index_update``,
    ``batch_index_add``), with a batched key too; with no ``value``, ``winning_writes(x, key)``: the key applied
    to ``x``'s shape only, per example (``batch_winning_writes``). ``mode``: the call's ``mode`` passed on where it
    is not the default (index_add's ``mode="clip"``)."""

    def rule(c: BatchCall) -> str:
        flags = "None"
        k = c.args[key]
        if c.batched(key):
            batched = _batched_key(c, k)
            if batched is None:
                return c.per_example()
            k, flags = batched
        v = "" if value is None else f"{c.args[value]}, "
        vb = "" if value is None else f", {c.batched(value)}"
        m = c.args.get("mode") if mode else None
        m = "" if m is None or str(m).strip("'\"") == "drop" else f", {m}"
        return f"{name}({c.args[x]}, {k}, {v}{c.size}, {c.batched(x)}{vb}, {flags}{m})"

    return rule
