"""One primitive call being batched: what a batching rule sees (``primitives/batch_rules.BatchCall``)."""

from __future__ import annotations

import ast
import functools
import inspect
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..frontend import parsed
from ..frontend.cst_expressions import parse_expression
from ..frontend.names import code, renamed, text_names
from ..primitives import registry
from .batch_state import Stack, Tree, any_batched

if TYPE_CHECKING:
    from .batch import FunctionWriter

__all__ = ["BatchCall", "call_text"]


class BatchCall:
    """A :class:`~srcjax.primitives.batch_rules.BatchCall`: one primitive call being batched."""

    def __init__(self, w: FunctionWriter, prim: registry.Primitive, args: dict[str, Any], flags: dict[str, bool],
                 seq_flags: dict[str, list[bool]], operator: str | None, ind: int) -> None:
        self.w = w
        self.prim = prim
        self.path = prim.path
        self.arrays = prim.arrays
        self.args = args
        self.flags = flags
        self.seq_flags = seq_flags
        self.operator = operator
        self.size = w.size
        self.ind = ind

    def batched(self, param: str) -> bool:
        return self.flags.get(param, False)

    def seq_batched(self, param: str) -> list[bool]:
        return self.seq_flags.get(param, [])

    def reads_batched(self, text: str) -> bool:
        """Whether the expression ``text`` (an element of a key) reads a batched name."""
        return any(any_batched(self.w.state(n)) for n in text_names(text))

    def rows(self, param: str) -> str:
        """The argument of a join's sequence parameter, a list variable: ``batch_items(items)`` where its elements
        are lists or tuples (``items.append((v, 3 * v))``: NumPy makes each an array, whose batch axis then comes
        first), else as it is."""
        text = self.args[param]
        st = self.w.state(text)
        entries = st.entries if isinstance(st, Stack) else [v for _, v in st.items] if isinstance(st, Tree) else []
        if any(isinstance(e, Tree) and e.kind in ("tuple", "list") or isinstance(e, Stack) for e in entries):
            self.w.container_lists.add(text)
        return f"batch_items({text})" if text in self.w.container_lists else text

    def array(self, param: str) -> bool:
        """Whether the argument is a name known to hold an array (a primitive's result), not a container."""
        return self.args.get(param) in self.w.arrays

    def static(self, param: str) -> bool:
        """Whether the argument is a number computed from shapes (``n = x.shape[0]``)."""
        return self.args.get(param) in self.w.static_names

    def call(self, **replace: Any) -> str:
        args = {**self.args, **replace}
        if self.operator is not None:
            if len(self.prim.arrays) == 2:
                return f"{_paren(args['x1'])} {self.operator} {_paren(args['x2'])}"
            return f"{self.operator}{_paren(args['x'])}"
        return call_text(self.prim, args, changed=set(replace))

    def let(self, hint: str, value: str) -> str:
        name = self.w.names.fresh(hint)
        self.w.emit(f"{name} = {value}", self.ind)
        return name

    def per_example(self) -> str:
        """A rolled loop over the examples: ``out[k] = f(x[k], w)``."""
        w = self.w
        k = w.names.fresh("k")
        first = w.names.fresh(f"{self.prim.name}_0")
        out = w.names.fresh(self.prim.name)

        def at(index: str) -> dict[str, Any]:
            new: dict[str, Any] = {}
            for p in self.prim.arrays:
                if self.flags.get(p):
                    new[p] = f"{self.args[p]}[{index}]"
            for p in self.prim.mixed:
                if self.flags.get(p):
                    text = self.args[p]
                    for n in text_names(text):
                        if any_batched(self.w.state(n)):
                            text = replace_name(text, n, f"{n}[{index}]")
                    new[p] = text
            for p in self.prim.array_seqs:
                if p in self.seq_flags:
                    new[p] = "[" + ", ".join(f"{e}[{index}]" if b else e
                                             for e, b in zip(self.args[p], self.seq_flags[p])) + "]"
                elif self.flags.get(p):
                    new[p] = f"{self.args[p]}[{index}]"
            return new

        if self.operator is not None:
            self.operator = None
        w.emit(f"{first} = {call_text(self.prim, {**self.args, **at('0')}, changed=set(at('0')))}", self.ind)
        w.emit(f"{out} = np.zeros(({self.size},) + np.shape({first}), dtype=np.result_type({first}))", self.ind)
        w.emit(f"for {k} in range({self.size}):", self.ind)
        w.emit(f"{out}[{k}] = {call_text(self.prim, {**self.args, **at(k)}, changed=set(at(k)))}", self.ind + 1)
        return out


@functools.lru_cache(maxsize=4096)
def _paren(text: str) -> str:
    """``text`` in parentheses unless it is an atom (a name, number, call, subscript, attribute); per
    text, remembered (``ast`` reads it; libcst where ``ast`` does not)."""
    top = parsed.expression(text)
    if top is not None:  # (libcst's atoms above are ast's Name, Call, Subscript, Attribute, int and float
        # constants, and True, False, None: libcst's names)
        atom = isinstance(top, (ast.Name, ast.Call, ast.Subscript, ast.Attribute)) or isinstance(top, ast.Constant) \
            and (top.value is None or isinstance(top.value, (bool, int, float)))
        return text if atom else f"({text})"
    try:
        node = parse_expression(text)
    except cst.ParserSyntaxError:  # pragma: no cover
        return f"({text})"
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Call, cst.Subscript, cst.Attribute)):
        return text
    return f"({text})"


def call_text(prim: registry.Primitive, args: dict[str, Any], changed: set[str]) -> str:
    """``np.sum(a, axis=1)``: positional leading parameters, keywords for the rest when not defaults."""
    parts: list[str] = []
    params = list(prim.signature.parameters.values())
    skipped: list[str] = []  # positional defaults left out: written after all if a later one is positional
    for i, p in enumerate(params):
        if p.name not in args:
            continue
        v = args[p.name]
        if isinstance(v, list):
            v = "[" + ", ".join(v) + "]"
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            parts.append(v[1:-1] if v.startswith("[") else f"*{v}")
            continue
        default = p.default
        positional = i < prim.positional or p.kind == inspect.Parameter.POSITIONAL_ONLY or \
            p.name in prim.arrays and i == 0
        if p.name not in changed and default is not inspect.Parameter.empty and v == repr(default) and \
                not (positional and p.name in prim.arrays):  # (np.clip(x, y, None): NumPy wants a_max)
            if positional:
                skipped.append(v)
            continue
        if positional:
            parts += skipped  # (np.clip(x, None, 0.5): a_min stays)
            skipped = []
            parts.append(v)
        else:
            parts.append(f"{p.name}={v}")
    return f"{prim.path}({', '.join(parts)})"


def replace_name(text: str, name: str, new: str) -> str:
    return code(renamed(parse_expression(text), {name: parse_expression(new)}))
