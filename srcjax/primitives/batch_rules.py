"""Batching rules (``vmap``): how a primitive call runs on batched operands.

A rule is the ``batch`` field of a primitive's record (set next to its ``defprim`` in
each family module). It gets a :class:`BatchCall`: the call's arguments as source text
(``args``), which array operands are batched (batch axis first, :meth:`BatchCall.batched`),
and a way to emit statements before the call; it returns the batched call as an
expression. Unbatched operands keep their per-example shapes, so a rule never repeats
them along the batch (``x @ w`` with a batched ``x`` stays one matmul with ``w``).

Rules are shape-generic like the rest of generated source: where a per-example rank
matters (broadcasting a batched ``x`` against an unbatched ``w``), they call a helper of
:mod:`srcjax.batched`, whose static shape logic runs at compile time.

Any primitive can fall back to :meth:`BatchCall.per_example`: a rolled loop over the
examples, correct for every call (and what a rule uses for a case with no vectorized form,
like ``np.take`` with batched array and indices).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

Rule = Callable[["BatchCall"], Any]


class BatchCall(Protocol):
    """What a batching rule sees (written by transforms/batch.py)."""

    path: str  # the primitive as generated source spells it
    arrays: tuple[str, ...]  # its array parameters
    args: dict[str, Any]  # parameter -> source text (a list of texts for a sequence parameter)
    size: str  # the batch size, a name

    def batched(self, param: str) -> bool: ...

    def seq_batched(self, param: str) -> list[bool]: ...

    def static(self, param: str) -> bool: ...

    def call(self, **replace: Any) -> str: ...

    def let(self, hint: str, value: str) -> str: ...

    def per_example(self) -> str: ...


def _is_name(text: Any) -> bool:
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
    ops = [p for p in _operands(c) if p in c.args]
    new: dict[str, str] = {}
    for p in ops:
        if not c.batched(p):
            continue
        e = c.args[p]
        for q in ops:
            if q != p and _is_name(c.args[q]) and c.args[q] != c.args[p] and not c.static(q):
                e = f"batch_align{'_b' if c.batched(q) else ''}({e}, {c.args[q]})"
        new[p] = e
    return c.call(**new)


def _operands(c: BatchCall) -> list[str]:
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


def axes(*params: str, operand: str = "a", none: str = "all") -> Rule:
    """A call of one batched operand whose axis parameters count per-example axes (``np.sum(a,
    axis=0)`` -> ``axis=1``). ``none``: what ``axis=None`` means: ``"all"`` per-example axes, or
    ``"flatten"`` (each example flattened first: ``np.cumsum``, ``np.argmax``)."""

    def rule(c: BatchCall) -> str:
        new: dict[str, str] = {}
        for p in params:
            if p not in c.args:
                continue
            if _literal(c.args[p]) is None and none == "flatten":
                new[operand] = f"batch_flat_axis({c.args[operand]})"
                new[p] = "1"
                if _literal(c.args.get("keepdims", "False")) is True:
                    return c.per_example()
            elif _literal(c.args[p]) is None and none == "loop":
                return c.per_example()
            else:
                new[p] = _shift(c.args[p], c.args[operand], None)
        return c.call(**new)

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


def per_example(c: BatchCall) -> str:
    """A rolled loop over the examples (correct for any call; no vectorized form)."""
    return c.per_example()


# -- sequences of operands --------------------------------------------------------------------------

def _broadcast_elements(c: BatchCall, param: str) -> list[str]:
    """The elements of a sequence operand, the unbatched ones repeated along the batch."""
    elems = c.args[param]
    flags = c.seq_batched(param)
    return [e if b else f"batch_broadcast({e}, {c.size})" for e, b in zip(elems, flags)]


def join(param: str, none_flattens: bool = True) -> Rule:
    """``np.concatenate``/``np.stack``: elements batched, the axis shifted."""

    def rule(c: BatchCall) -> str:
        ax = c.args.get("axis", "0")
        if not isinstance(c.args[param], list):  # a list variable: every element batched
            if _literal(ax) is None:
                return c.per_example()
            return c.call(axis=_shift(ax, f"{c.args[param]}[0]", None))
        elems = _broadcast_elements(c, param)
        if _literal(ax) is None:
            if not none_flattens:
                return c.per_example()
            elems = [f"batch_flat_axis({e})" for e in elems]
            return c.call(**{param: "[" + ", ".join(elems) + "]", "axis": "1"})
        return c.call(**{param: "[" + ", ".join(elems) + "]", "axis": _shift(ax, elems[0], None)})

    return rule


def hvstack(k: int) -> Rule:
    """``np.vstack`` (k=2: rows) and ``np.hstack`` (k=1)."""

    def rule(c: BatchCall) -> str:
        param = "tup"
        if not isinstance(c.args[param], list):
            return c.per_example()
        elems = [f"batch_atleast({e}, {k})" for e in _broadcast_elements(c, param)]
        if k == 2:
            return f"np.concatenate([{', '.join(elems)}], axis=1)"
        return f"batch_hstack([{', '.join(elems)}])"

    return rule


def atleast(k: int) -> Rule:
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


def seq_operands(params: Sequence[str]) -> list[str]:
    return list(params)


# -- shapes ---------------------------------------------------------------------------------------

def reshape(c: BatchCall) -> str:
    if _literal(c.args.get("order", "'C'")) != "C":
        return c.per_example()
    return f"batch_reshape({c.args['a']}, {c.args['shape']})"


def broadcast_to(c: BatchCall) -> str:
    return f"batch_broadcast_to({c.args['array']}, {c.args['shape']}, True)"


def triangle(lower: bool) -> Rule:
    def rule(c: BatchCall) -> str:
        return f"batch_triangle({c.args['m']}, {c.args.get('k', '0')}, {lower})"

    return rule


def full(c: BatchCall) -> str:
    """``np.full(shape, v)`` with a batched ``v``."""
    return f"batch_full({c.args['shape']}, {c.args['fill_value']}, {c.args.get('dtype', 'None')})"


def like(c: BatchCall) -> str:
    """``np.zeros_like(a)``: a batched template gives a batched result, unless ``shape=`` is given."""
    if _literal(c.args.get("shape", "None")) is None:
        return c.call()
    return f"batch_broadcast({c.call()}, {c.size})"


def full_like(c: BatchCall) -> str:
    if _literal(c.args.get("shape", "None")) is not None:
        return c.per_example()
    if not c.batched("fill_value"):
        return c.call()
    return (f"batch_full_like({c.args['a']}, {c.args['fill_value']}, {c.args.get('dtype', 'None')}, "
            f"{c.batched('a')}, True)")


# -- indexing -------------------------------------------------------------------------------------

def _simple_gather(key: str) -> bool:
    """``x[i]``, ``x[i, j]``, ``x[i, 0]``: indices that broadcast together (no slices): with batched
    index arrays and an unbatched ``x`` the result is per example as it stands."""
    try:
        node = ast.parse(key, mode="eval").body
    except SyntaxError:
        return False
    elems = node.elts if isinstance(node, ast.Tuple) else [node]
    return all(isinstance(e, ast.Name) or isinstance(e, ast.Constant) and isinstance(e.value, int) for e in elems) \
        and sum(isinstance(e, ast.Name) for e in elems) <= 1


def getitem(c: BatchCall) -> str:
    """``x[key]``: a static key keeps the batch axis whole in front; batched indices gather per example."""
    if c.batched("key"):
        if not c.batched("x") and _simple_gather(c.args["key"]):
            return c.call()
        return c.per_example()
    return f"batch_getitem({c.args['x']}, {c.args['key']})"


def keyed(name: str, x: str, key: str, value: str) -> Rule:
    """``index_update(x, key, v)`` / ``index_add``: a static key is shifted past the batch axis; a
    batched key updates per example."""

    def rule(c: BatchCall) -> str:
        if c.batched(key):
            return c.per_example()
        return f"{name}({c.args[x]}, {c.args[key]}, {c.args[value]}, {c.batched(x)}, {c.batched(value)})"

    return rule
