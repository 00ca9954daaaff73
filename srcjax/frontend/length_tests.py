"""``if hist:`` on a name that only ever holds a Python list, tuple or dict, written as a test of its length.

Input: a normalized function's body (ANF), the ``id()`` of the ``if`` tests to rewrite and the names that only
hold containers (:class:`srcjax.frontend.binding_times.BindingTimes`' ``length_tests`` and ``containers``);
output: the body with each such ``if`` written ``len_hist = len(hist)``, ``nonempty = len_hist > 0``,
``if nonempty:`` (and ``empty = not hist`` written ``len_hist = len(hist)``, ``empty = len_hist == 0``), spans
carried to the new statements; the plain form too (what the derivatives read). The same Python; the test is then
a static name bound where it is made, which reverse mode saves at each pass of a loop and reads back when it
replays the ``if``: ``if hist:`` itself read the list the loop had filled at every pass (L-BFGS's ``if s_hist:``
before ``s_hist.append(...)``: a silent wrong gradient).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from typing import Any

import libcst as cst

from ..core import Span

__all__ = ["rewrite"]


def rewrite(body: Sequence[Any], tests: set[int], containers: set[str], fresh: Callable[[str], str],
            spans: dict[int, Span], keep: list[cst.CSTNode], only_tested: Set[str] = frozenset()) -> list[Any] | None:
    """``body`` with each ``if`` whose test's id is in ``tests``, and each ``not`` of a name of ``containers``,
    rewritten (see the module docstring); ``keep`` holds the new nodes (their ids are span keys). ``only_tested``:
    the names read only as an ``if``'s test, whose ``hist and x.sum() > t`` reads ``hist``'s length (its value,
    the list when empty, is then only tested). None: nothing to rewrite."""
    changed = False

    def mark(node: Any, like: cst.CSTNode) -> Any:
        keep.append(node)
        if id(like) in spans:
            spans[id(node)] = spans[id(like)]
        return node

    def block(stmts: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        for s in stmts:
            if s.__class__ is cst.If:
                out.extend(one_if(s))
            elif s.__class__ in (cst.For, cst.While):
                out.append(mark(s.with_changes(body=s.body.with_changes(body=block(s.body.body))), s))
            else:
                out.extend(negation(s))
        return out

    def length(name: str, test: cst.BaseCompOp, target: str, like: cst.CSTNode) -> list[Any]:
        nonlocal changed
        changed = True
        n = fresh(f"len_{name}")
        made = [(n, cst.Call(func=cst.Name("len"), args=[cst.Arg(cst.Name(name))])),
                (target, cst.Comparison(left=cst.Name(n), comparisons=[
                    cst.ComparisonTarget(operator=test, comparator=cst.Integer("0"))]))]
        lines = [cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(t))], value=v)])
                 for t, v in made]
        for line in lines:
            mark(line.body[0], like)
            mark(line, like)
        return lines

    def negation(s: Any) -> list[Any]:
        """``empty = not hist`` -> ``len_hist = len(hist)``, ``empty = len_hist == 0``."""
        small = s.body[0] if s.__class__ is cst.SimpleStatementLine and len(s.body) == 1 else None
        if small.__class__ is not cst.Assign or len(small.targets) != 1 or \
                small.targets[0].target.__class__ is not cst.Name:
            return [s]
        v = small.value
        target = small.targets[0].target.value
        if v.__class__ is cst.BooleanOperation and target in only_tested and v.left.__class__ is cst.Name and \
                v.left.value in containers:  # (`and_ = hist and np.sum(hist[-1]) > 1.0`, then `if and_:`)
            ne = fresh("nonempty")
            new = s.with_changes(body=[small.with_changes(value=v.with_changes(left=cst.Name(ne)))])
            mark(new.body[0], small)
            return [*length(v.left.value, cst.GreaterThan(), ne, s), mark(new, s)]
        if v.__class__ is not cst.UnaryOperation or v.operator.__class__ is not cst.Not or \
                v.expression.__class__ is not cst.Name or v.expression.value not in containers:
            return [s]
        return length(v.expression.value, cst.Equal(), target, s)

    def one_if(s: cst.If) -> list[Any]:
        orelse: Any = s.orelse
        if orelse.__class__ is cst.If:
            made = one_if(orelse)
            orelse = made[0] if len(made) == 1 else cst.Else(body=cst.IndentedBlock(body=made))
        elif orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(body=block(orelse.body.body)))
        new = s.with_changes(body=s.body.with_changes(body=block(s.body.body)), orelse=orelse)
        if id(s.test) not in tests:
            return [mark(new, s)]
        ne = fresh("nonempty")
        return [*length(s.test.value, cst.GreaterThan(), ne, s),  # type: ignore[attr-defined]
                mark(new.with_changes(test=cst.Name(ne)), s)]

    out = block(body)
    return out if changed else None
