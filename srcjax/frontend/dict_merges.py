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
from collections.abc import Callable
from typing import Any

import libcst as cst

from .dict_names import Scoped, builtin_dict, dict_names, dictish, is_merge
from .names import target_names, walk
from .read import FunctionSource, Located
from .syntax import attr_chain, params_of, statements_in


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with the dict merges it shows written as displays (``src`` itself where there are none)."""
    if src.filename.startswith("<srcjax.") or not _has_or(src.fdef):
        return src  # (srcjax's output: each `|` it holds was decided when the user's function was read)
    is_dict = _builtin_dict(src)
    names = dict_names(src.fdef.body.body, is_dict)
    arrays, in_arrays = _array_evidence(src.fdef)
    fdef = src.fdef.visit(_Merges(names, src.positions, arrays, in_arrays, is_dict))
    if fdef is src.fdef:
        return src
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def _builtin_dict(src: FunctionSource) -> Callable[[cst.BaseExpression], bool]:
    """Whether a callee is the builtin ``dict`` in ``src``'s function (a module's own ``dict`` is not)."""
    own = "dict" in src.globals or "dict" in src.closure
    return (lambda f: False) if own else builtin_dict


def _has_or(fdef: cst.FunctionDef) -> bool:
    """Whether ``fdef`` holds a ``|`` or ``|=`` (one walk, node classes by exact type: a visitor class made per call,
    and ``isinstance`` through ABCMeta, cost more than the walk)."""
    for n in walk(fdef):
        t = n.__class__
        if (t is cst.BinaryOperation or t is cst.AugAssign) and \
                n.operator.__class__ is (cst.BitOr if t is cst.BinaryOperation else cst.BitOrAssign):  # type: ignore[attr-defined]
            return True
    return False


def _bound_twice(fdef: cst.FunctionDef) -> set[str]:
    """The names the function binds more than once (a parameter counts as a binding): which value a use
    of such a name sees depends on the flow, so it is no evidence of what an operand of ``|`` holds."""
    seen: set[str] = {p.name.value for p in params_of(fdef)}
    twice: set[str] = set()
    for st in statements_in(fdef.body.body):
        if isinstance(st, cst.Assign):
            targets = [n for t in st.targets for n in target_names(t.target)]
        elif isinstance(st, (cst.AugAssign, cst.AnnAssign, cst.For)):
            targets = target_names(st.target)
        elif isinstance(st, cst.With):
            targets = [n for item in st.items if item.asname is not None for n in target_names(item.asname.name)]
        else:
            continue
        for name in targets:
            (twice if name in seen else seen).add(name)
    return twice


_ARRAY_ATTRS = frozenset({"shape", "dtype", "ndim", "size", "T", "sum", "mean", "any", "all", "astype", "reshape",
                          "max", "min", "prod", "ravel", "flatten", "at"})


def _array_valued(node: cst.BaseExpression) -> bool:
    """``node`` is an array (or a number) whatever its names hold: arithmetic, a comparison, a NumPy call."""
    if isinstance(node, cst.BinaryOperation):
        return not isinstance(node.operator, cst.BitOr)
    if isinstance(node, cst.Comparison):
        return not any(isinstance(c.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)) for c in node.comparisons)
    if isinstance(node, cst.UnaryOperation):
        return not isinstance(node.operator, cst.Not)
    if isinstance(node, cst.Call):
        chain = attr_chain(node.func)
        return chain is not None and len(chain) > 1 and chain[0] in ("np", "jnp", "numpy")
    return isinstance(node, (cst.Integer, cst.Float, cst.Imaginary))


def _array_evidence(fdef: cst.FunctionDef) -> tuple[set[str], set[int]]:
    """The names the function uses as arrays (in arithmetic or comparisons, as NumPy's arguments, ``x.shape``,
    ``x[0]``) or binds to an array (``m = x > 0``), and the ids of the ``|`` operations whose value goes to such
    a use (``np.all(p | q)``). Only names bound once count, and only uses in the function's own scope."""
    names: set[str] = set()
    ors: set[int] = set()

    class V(Scoped):
        def operands(self, *nodes: Any) -> None:
            for n in nodes:
                if isinstance(n, cst.Name):
                    if self.shown(n.value):
                        names.add(n.value)
                elif is_merge(n):
                    ors.add(id(n))

        def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
            if not isinstance(n.operator, cst.BitOr):
                self.operands(n.left, n.right)

        def visit_Comparison(self, n: cst.Comparison) -> None:
            if _array_valued(n):
                self.operands(n.left, *(c.comparator for c in n.comparisons))

        def visit_UnaryOperation(self, n: cst.UnaryOperation) -> None:
            if not isinstance(n.operator, cst.Not):
                self.operands(n.expression)

        def visit_Call(self, n: cst.Call) -> None:
            if _array_valued(n):
                self.operands(*(a.value for a in n.args))

        def visit_Attribute(self, n: cst.Attribute) -> None:
            if n.attr.value in _ARRAY_ATTRS:
                self.operands(n.value)

        def visit_Subscript(self, n: cst.Subscript) -> None:
            if any(isinstance(e.slice, cst.Slice) or isinstance(e.slice, cst.Index) and
                   isinstance(e.slice.value, (cst.Integer, cst.UnaryOperation)) for e in n.slice):
                self.operands(n.value)

        def visit_Assign(self, n: cst.Assign) -> None:
            if not self.hidden and _array_valued(n.value):
                names.update(name for t in n.targets if isinstance(t.target, cst.Name) for name in [t.target.value])

    V().run(fdef)
    return names - _bound_twice(fdef), ors


class _Merges(Located):
    def __init__(self, names: set[str], positions: dict[Any, Any], arrays: set[str], in_arrays: set[int],
                 is_dict: Callable[[cst.BaseExpression], bool] = builtin_dict) -> None:
        super().__init__(positions)
        self.names, self.arrays, self.in_arrays, self.is_dict = names, arrays, in_arrays, is_dict
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
        if assigned or any(dictish(e, self.names, self.is_dict) for e in (original.left, original.right)):
            return self.merged(original, updated.left, updated.right)
        left, right = original.left, original.right
        if id(original) in self.in_arrays or not (self.unclear(left) and self.unclear(right)):
            return updated  # (arrays)
        # operands the function shows neither as dicts nor as arrays: decided by the values (a static test)
        test = cst.Call(cst.Name("isinstance"), [cst.Arg(left), cst.Arg(cst.Name("dict"))])
        return self.located(original, cst.IfExp(test=test, body=self.merged(original, left, right), orelse=updated,
                                                lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))

    def unclear(self, node: cst.BaseExpression) -> bool:
        """A name, an item or an attribute the function does not show to be an array: it may hold a dict."""
        if isinstance(node, cst.Name):
            return node.value not in self.arrays
        if isinstance(node, cst.Subscript):
            return not (isinstance(node.value, cst.Name) and node.value.value in self.arrays)
        return isinstance(node, cst.Attribute) and node.attr.value not in _ARRAY_ATTRS

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign) -> Any:
        target = updated.target
        if not (isinstance(updated.operator, cst.BitOrAssign) and isinstance(target, cst.Name) and
                (target.value in self.names or dictish(updated.value, self.names, self.is_dict))):
            return updated
        value = self.merged(original, cst.Name(target.value), updated.value)
        return self.located(original, cst.Assign(targets=[cst.AssignTarget(target)], value=value))

    def merged(self, origin: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression) -> cst.Dict:
        elements = [self.located(origin, cst.StarredDictElement(v)) for v in (left, right)]
        return self.located(origin, cst.Dict(elements))
