"""``a | b`` of dicts (Python's merge) read as ``{**a, **b}``, and ``d |= e`` as ``d = {**d, **e}``.

NumPy runs ``a | b`` of two dicts as Python does, and so did the compiled program; but derivatives took ``|`` for
``np.bitwise_or`` (no derivative: zero gradients, silently) and vmap batched it as an array operation (issue #15).
``{**a, **b}`` is read item by item (a new dict filled by loops over ``a`` then ``b``, see
:func:`~.comprehension_loops.merged_dict`), which every transformation follows.

The source does not say which ``|`` are dicts' (``mask_a | mask_b`` is a bitwise or of arrays), so an operation
is rewritten where the function shows a dict: an operand that is a dict display (``{...}``, a dict
comprehension, a ``dict(...)`` call), or a name that the function indexes by a string (``d["w"]``), whose
``.items()`` / ``.keys()`` / ``.values()`` it calls, or that it binds to such a value; or the target of the
assignment is such a name (``d = defaults | a`` then ``d["x"]``). An array is never indexed by a string.
``|`` of two names the function shows neither as dicts nor as arrays (in arithmetic, comparisons, NumPy calls,
``x.shape``, ``x[0]``; nor is the ``|`` itself an operand of those: ``np.all(p | q)``) is decided by the values:
``({**a, **b} if isinstance(a, dict) else a | b)``, a test on the argument's type that specializing settles
(``total(defaults | a)``, a helper indexing the merge, gave zero gradients silently before).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst

from .names import Visitor
from .read import FunctionSource

_DICT_METHODS = ("items", "keys", "values")


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with the dict merges it shows written as displays (``src`` itself where there are none)."""
    if not _has_or(src.fdef):
        return src
    names = _dict_names(src.fdef)
    arrays, in_arrays = _array_evidence(src.fdef)
    fdef = src.fdef.visit(_Merges(names, src.positions, arrays, in_arrays))
    if fdef is src.fdef:
        return src
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def _has_or(fdef: cst.FunctionDef) -> bool:
    found = False

    class V(Visitor):
        def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
            nonlocal found
            found = found or isinstance(n.operator, cst.BitOr)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            nonlocal found
            found = found or isinstance(n.operator, cst.BitOrAssign)

    V().walk(fdef)
    return found


def _display(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Dict, cst.DictComp)) or \
        isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict"


def _dict_names(fdef: cst.FunctionDef) -> set[str]:
    """The names the function shows to be dicts (see the module docstring)."""
    names: set[str] = set()
    binds: list[tuple[str, cst.BaseExpression]] = []

    class V(Visitor):
        def visit_Subscript(self, n: cst.Subscript) -> None:
            if isinstance(n.value, cst.Name) and len(n.slice) == 1 and isinstance(n.slice[0].slice, cst.Index) \
                    and isinstance(n.slice[0].slice.value, cst.SimpleString):
                names.add(n.value.value)

        def visit_Call(self, n: cst.Call) -> None:
            f = n.func
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in _DICT_METHODS \
                    and not n.args:
                names.add(f.value.value)

        def visit_Assign(self, n: cst.Assign) -> None:
            if len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                binds.append((n.targets[0].target.value, n.value))

    V().walk(fdef)
    grown = True
    while grown:  # a name bound to a display, or to a merge of a dict (d = defaults | a; e = d)
        grown = False
        for name, value in binds:
            if name not in names and (_display(value) or _dictish(value, names) or
                                      _merge(value) and (_dictish(value.left, names) or  # type: ignore[attr-defined]
                                                         _dictish(value.right, names))):  # type: ignore[attr-defined]
                names.add(name)
                grown = True
    return names


_ARRAY_ATTRS = frozenset({"shape", "dtype", "ndim", "size", "T", "sum", "mean", "any", "all", "astype", "reshape",
                          "max", "min", "prod", "ravel", "flatten", "at"})


def _array_evidence(fdef: cst.FunctionDef) -> tuple[set[str], set[int]]:
    """The names the function uses as arrays (in arithmetic or comparisons, as NumPy's arguments, ``x.shape``,
    ``x[0]``), and the ids of the ``|`` operations whose value goes to such a use (``np.all(p | q)``)."""
    names: set[str] = set()
    ors: set[int] = set()

    def operands(*nodes: Any) -> None:
        for n in nodes:
            if isinstance(n, cst.Name):
                names.add(n.value)
            elif _merge(n):
                ors.add(id(n))

    class V(Visitor):
        def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
            if not isinstance(n.operator, cst.BitOr):
                operands(n.left, n.right)

        def visit_Comparison(self, n: cst.Comparison) -> None:
            if not any(isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)) for c in n.comparisons):
                operands(n.left, *(c.comparator for c in n.comparisons))

        def visit_UnaryOperation(self, n: cst.UnaryOperation) -> None:
            if not isinstance(n.operator, cst.Not):
                operands(n.expression)

        def visit_Call(self, n: cst.Call) -> None:
            chain = n.func
            while isinstance(chain, cst.Attribute):
                chain = chain.value
            if isinstance(chain, cst.Name) and chain.value in ("np", "jnp", "numpy") and n.func is not chain:
                operands(*(a.value for a in n.args))

        def visit_Attribute(self, n: cst.Attribute) -> None:
            if n.attr.value in _ARRAY_ATTRS:
                operands(n.value)

        def visit_Subscript(self, n: cst.Subscript) -> None:
            if any(isinstance(e.slice, cst.Slice) or isinstance(e.slice, cst.Index) and
                   isinstance(e.slice.value, (cst.Integer, cst.UnaryOperation)) for e in n.slice):
                operands(n.value)

    V().walk(fdef)
    return names, ors


def _merge(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr)


def _dictish(node: cst.BaseExpression, names: set[str]) -> bool:
    return _display(node) or isinstance(node, cst.Name) and node.value in names or \
        _merge(node) and (_dictish(node.left, names) or _dictish(node.right, names))  # type: ignore[attr-defined]


class _Merges(cst.CSTTransformer):
    def __init__(self, names: set[str], positions: dict[Any, Any], arrays: set[str], in_arrays: set[int]) -> None:
        self.names, self.positions, self.arrays, self.in_arrays = names, positions, arrays, in_arrays
        self.values: list[Any] = []  # per enclosing assignment: its value where it binds a dict's name

    def visit_Assign(self, n: cst.Assign) -> None:
        to_dict = len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) and \
            n.targets[0].target.value in self.names
        self.values.append(n.value if to_dict else None)

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        self.values.pop()
        return self.located(original, updated)

    def leave_BinaryOperation(self, original: cst.BinaryOperation, updated: cst.BinaryOperation) -> Any:
        if not isinstance(updated.operator, cst.BitOr):
            return updated
        assigned = bool(self.values) and original is self.values[-1]
        if assigned or _dictish(original.left, self.names) or _dictish(original.right, self.names):
            return self.merged(original, updated.left, updated.right)
        left, right = original.left, original.right
        if id(original) in self.in_arrays or not (isinstance(left, cst.Name) and isinstance(right, cst.Name)) or \
                left.value in self.arrays or right.value in self.arrays:
            return updated  # (arrays, or not two names)
        # two names the function shows neither as dicts nor as arrays: decided by the values (a static test)
        test = cst.Call(cst.Name("isinstance"), [cst.Arg(cst.Name(left.value)), cst.Arg(cst.Name("dict"))])
        return self.located(original, cst.IfExp(test=test, body=self.merged(original, left, right), orelse=updated,
                                                lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign) -> Any:
        target = updated.target
        if not (isinstance(updated.operator, cst.BitOrAssign) and isinstance(target, cst.Name) and
                (target.value in self.names or _dictish(updated.value, self.names))):
            return updated
        value = self.merged(original, cst.Name(target.value), updated.value)
        return self.located(original, cst.Assign(targets=[cst.AssignTarget(target)], value=value))

    def merged(self, origin: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression) -> cst.Dict:
        elements = [self.located(origin, cst.StarredDictElement(v)) for v in (left, right)]
        return self.located(origin, cst.Dict(elements))

    def on_leave(self, original: Any, updated: Any) -> Any:
        return self.located(original, super().on_leave(original, updated))  # (every node rebuilt keeps its place)

    def located(self, original: Any, updated: Any) -> Any:
        if updated is not original and isinstance(updated, cst.CSTNode) and original in self.positions:
            self.positions[updated] = self.positions[original]  # (errors keep the user's positions)
        return updated
