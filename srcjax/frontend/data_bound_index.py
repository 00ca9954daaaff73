"""A ``for i in range(n)`` whose bound ``n`` is computed from array data, indexing with ``i``: refused.

NumPy runs such a loop as written and raises ``IndexError`` where ``x[i]`` reads past the end of ``x``; the
loop srcjax writes (``fori_loop`` with a traced bound, a ``while_loop`` per example under ``vmap``) reads
``x[i]`` with a traced index, which XLA clamps into range: a silent wrong answer (errs16: ``for i in
range(int(np.sum(x)))`` reading ``x[i]`` summed the last element again). JAX refuses ``int()`` of a traced
value, so no program it runs reaches this. A loop whose bound is data and whose body does not index with the
loop variable keeps running (a trip count per example, as before).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..core import UnsupportedSyntaxError
from .names import code, names_in
from .restructure import walk

HINT = ("loop over a static count and mask the steps past the bound: `for i in range(x.shape[0]):` with "
        "`s = np.where(i < n, s + x[i], s)`; or write `srcjax.lax.fori_loop(0, n, body, init)`, whose traced "
        "index clamps into range as JAX's does")


def check(body: list[cst.CSTNode], target: str,
          error: Callable[[str, str], UnsupportedSyntaxError]) -> None:
    """Refuse (``error(message, hint)``) when ``body`` indexes an array with ``target`` or a name computed
    from it by arithmetic (``j = i + 1``)."""
    derived = {target}
    subscripts: list[cst.Subscript] = []
    writes: list[cst.Call] = []
    for node, _ in walk(body):
        head = getattr(node, "test", None) or getattr(node, "iter", None) if not _small(node) else node
        if head is not None:
            subscripts += [n for n in _nodes(head) if type(n) is cst.Subscript]
            writes += [n for n in _nodes(head) if type(n) is cst.Call and _callee(n) in _WRITES]
        if type(node) is cst.Assign and type(node.value) in (cst.Name, cst.BinaryOperation, cst.UnaryOperation) \
                and derived & set(names_in(node.value)):
            for t in node.targets:
                derived.update(names_in(t.target))
    past = "past the end NumPy raises IndexError, while the compiled loop's traced index"
    for call in writes:  # (`y[i] = v`, normalized: index_update(y, i, v), whose traced index past the end is dropped)
        if any(derived & set(names_in(a.value)) for a in call.args[1:-1]):
            raise error(f"`{code(call.args[0].value)}[...] = ...` writes with the index of a loop whose bound is "
                        f"computed from array data: {past} would drop the write (a silently different value)", HINT)
    for sub in subscripts:
        if any(derived & set(names_in(e.slice)) for e in sub.slice):
            raise error(f"`{code(sub)}` reads with the index of a loop whose bound is computed from array data: "
                        f"{past} would be clamped into range (a silently different value)", HINT)


_WRITES = {"index_update", "index_add", "index_mul", "index_min", "index_max"}


def _callee(call: cst.Call) -> str:
    f = call.func
    return f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""


def _small(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.BaseSmallStatement)


def _nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            out.append(n)
            return not isinstance(n, cst.FunctionDef)

    node.visit(_All())
    return out
