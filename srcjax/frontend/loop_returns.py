"""``return`` inside a loop on array data: a done flag and a carried result.

Input: the body of a normalized function (ANF) and the loops (outermost) in which a ``return`` sits under a
test on array data (``for _ in range(50): ... if abs(f(m)) < tol: return m``, a ``while`` with an early
``return``). Output: the same body in which each such loop

- sets ``returned = True`` and ``result = v`` and ``break``s where it returned ``v`` (a loop nested in it
  that returned is followed by ``if returned: break``), and
- is followed by ``if returned: return result``,

so the loop keeps its shape (a ``while_loop`` carrying the flag and the result, its finished examples frozen
under ``vmap``) and the result is selected at the end: :func:`srcjax.frontend.restructure.single_exit` then
moves that ``return`` to the function's end as for any ``return`` under an ``if`` on data.

The carried result needs a value before the loop, of the type it has in the loop (the loop's carry cannot
change type). It is the returned value computed once before the loop by a copy of the straight-line
statements that lead to the first ``return`` (its names renamed, the loop's target at its first value):
pure code, its value never read, since ``result`` is read only once ``returned`` is set. A path to the
``return`` that is not straight-line (a nested loop before it), or that reads a name the loop first assigns
elsewhere, is refused at the ``return`` with the rewrite to write by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import libcst as cst

from ..core import Span, UnsupportedSyntaxError
from .names import names_in, target_names
from .names import walk as walk_nodes
from .syntax import params_of

LOOPS = (cst.For, cst.While)
_HINT = "set a flag and `break` out of the loop, then return after it (a value for the result assigned before it)"


def has_return(node: cst.CSTNode) -> bool:
    """Whether a ``return`` of this function sits inside ``node`` (not in a nested function)."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Return):
            return True
        if isinstance(n, (cst.FunctionDef, cst.Lambda, cst.BaseExpression)):
            continue
        stack.extend(n.children)
    return False


class _Rewriter:
    def __init__(self, fresh: Callable[[str], str], spans: dict[int, Span], params: set[str]) -> None:
        self.fresh = fresh
        self.spans = spans
        self.params = params
        self.made: list[cst.CSTNode] = []  # (new statements: kept alive, their spans keyed by id)

    def line(self, small: cst.BaseSmallStatement, span: Span | None) -> cst.SimpleStatementLine:
        out = cst.SimpleStatementLine(body=[small])
        if span is not None:
            self.spans[id(out)] = span
        self.made.append(out)
        return out

    def assign(self, name: str, value: cst.BaseExpression, span: Span | None) -> cst.SimpleStatementLine:
        return self.line(cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value), span)

    # -- the whole body -------------------------------------------------------------------
    def block(self, stmts: Sequence[Any], loops: set[int], before: set[str]) -> list[Any]:
        """``stmts`` with each loop of ``loops`` rewritten; ``before``: names bound before ``stmts``."""
        out: list[Any] = []
        bound = set(before)
        for s in stmts:
            if isinstance(s, LOOPS) and id(s) in loops:
                out += self.loop(s, bound)
            elif isinstance(s, cst.If):
                out.append(self.if_(s, loops, bound))
            elif isinstance(s, LOOPS):
                body = self.block(s.body.body, loops, bound | _bound_by(s))
                out.append(self.keep_span(s, s.with_changes(body=s.body.with_changes(body=body))))
            else:
                out.append(s)
            bound |= _bound_by(s)
        return out

    def if_(self, s: cst.If, loops: set[int], bound: set[str]) -> cst.If:
        body = self.block(s.body.body, loops, bound)
        orelse = s.orelse
        if isinstance(orelse, cst.If):
            orelse = self.if_(orelse, loops, bound)
        elif orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(body=self.block(orelse.body.body, loops, bound)))
        return self.keep_span(s, s.with_changes(body=s.body.with_changes(body=body), orelse=orelse))

    def keep_span(self, old: cst.CSTNode, new: Any) -> Any:
        if new is not old and id(old) in self.spans:
            self.spans[id(new)] = self.spans[id(old)]
            self.made.append(new)
        return new

    # -- one loop ---------------------------------------------------------------------------
    def loop(self, loop: cst.For | cst.While, bound: set[str]) -> list[Any]:
        span = self.spans.get(id(loop))
        flag, result = self.fresh("returned"), self.fresh("result")
        init = self.initial(loop, bound)
        first = self.assign(flag, cst.Name("False"), span)
        new = self.exits(loop, flag, result)
        ret_span = self.first_return_span(loop) or span
        after = cst.If(test=cst.Name(flag), body=cst.IndentedBlock(body=[
            self.line(cst.Return(value=cst.Name(result)), ret_span)]))
        if span is not None:
            self.spans[id(after)] = span
        self.made.append(after)
        return [*init[:-1], self.assign(result, init[-1], ret_span), first, new, after]

    def exits(self, loop: cst.For | cst.While, flag: str, result: str) -> Any:
        """``loop`` with ``return v`` -> ``result = v; flag = True; break`` (and ``if flag: break`` after a
        nested loop that returned)."""
        body = self.exit_block(list(loop.body.body), flag, result)
        return self.keep_span(loop, loop.with_changes(body=loop.body.with_changes(body=body)))

    def exit_block(self, stmts: list[Any], flag: str, result: str) -> list[Any]:
        out: list[Any] = []
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine) and any(isinstance(x, cst.Return) for x in s.body):
                span = self.spans.get(id(s))
                k = next(i for i, x in enumerate(s.body) if isinstance(x, cst.Return))
                ret = s.body[k]
                assert isinstance(ret, cst.Return)
                if k:
                    out.append(self.keep_span(s, s.with_changes(body=s.body[:k])))
                out += [self.assign(result, ret.value or cst.Name("None"), span),
                        self.assign(flag, cst.Name("True"), span), self.line(cst.Break(), span)]
                break  # (what follows a return never runs)
            if isinstance(s, cst.If) and has_return(s):
                out.append(self.exit_if(s, flag, result))
            elif isinstance(s, LOOPS) and has_return(s):
                out.append(self.exits(s, flag, result))
                brk = cst.If(test=cst.Name(flag), body=cst.IndentedBlock(body=[
                    self.line(cst.Break(), self.spans.get(id(s)))]))
                out.append(self.keep_span(s, brk))
            else:
                out.append(s)
        return out

    def exit_if(self, s: cst.If, flag: str, result: str) -> cst.If:
        body = self.exit_block(list(s.body.body), flag, result)
        orelse = s.orelse
        if isinstance(orelse, cst.If):
            orelse = self.exit_if(orelse, flag, result)
        elif orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(
                body=self.exit_block(list(orelse.body.body), flag, result)))
        return self.keep_span(s, s.with_changes(body=s.body.with_changes(body=body), orelse=orelse))

    def first_return_span(self, node: cst.CSTNode) -> Span | None:
        for n in walk_nodes(node):
            if isinstance(n, cst.SimpleStatementLine) and any(isinstance(x, cst.Return) for x in n.body):
                return self.spans.get(id(n))
        return None

    # -- the result's value before the loop ----------------------------------------------------
    def initial(self, loop: cst.For | cst.While, bound: set[str]) -> list[Any]:
        """Statements computing the first ``return``'s value before the loop (renamed copies of the
        straight-line statements on the path to it), then that value (an expression)."""
        path = _path_to_return([loop])
        ret_span = self.first_return_span(loop) or self.spans.get(id(loop))
        if path is None:
            raise UnsupportedSyntaxError("`return` inside a loop on array data, after a loop or a `with` in the same "
                                         "iteration, or in a `for` over something other than a range, an array or "
                                         "a tuple (reading its target), is not supported", span=ret_span, hint=_HINT)
        stmts, ret = path
        value = ret.value or cst.Name("None")
        needed = set(names_in(value))
        kept: list[cst.Assign] = []
        for small in reversed([x for s in stmts for x in s.body]):  # (only what the value reads: a slice)
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, (cst.Name, cst.Tuple)):
                targets = set(target_names(small.targets[0].target))
                if targets & needed:
                    kept.append(small)
                    needed = (needed - targets) | set(names_in(small.value))
            elif set(names_in(small)) & needed:
                raise UnsupportedSyntaxError("`return` inside a loop on array data, after a statement that changes "
                                             "what it returns other than by an assignment to a name, is not "
                                             "supported", span=ret_span, hint=_HINT)
        rename: dict[str, str] = {}
        out: list[Any] = []
        locals_ = bound | self.params
        for a in reversed(kept):
            renamed = self.renamed(a.value, rename, locals_, ret_span)
            for t in target_names(a.targets[0].target):
                rename[t] = self.fresh(f"{t}_first")
            target = self.renamed(a.targets[0].target, rename, None, ret_span)
            if id(a.value) in _FIRST_ITEMS and isinstance(target, cst.Name) and isinstance(renamed, cst.Subscript):
                out += self.first_or_zeros(target.value, renamed.value, ret_span)
                continue
            out.append(self.line(cst.Assign(targets=[cst.AssignTarget(target)], value=renamed), ret_span))
        return [*out, self.renamed(value, rename, locals_, ret_span)]

    def first_or_zeros(self, target: str, seq: cst.BaseExpression, span: Span | None) -> list[Any]:
        """``target = seq[0]`` where ``seq`` has an item; zeros of an item's shape where it is empty (an array of
        no rows: the loop never runs, the result is never read, but it is carried with that type)."""
        n, nonempty, head = self.fresh("len"), self.fresh("nonempty"), self.fresh("head")
        xs = cst.Module(body=[]).code_for_node(seq)
        text = (f"{n} = len({xs})\n{nonempty} = {n} > 0\nif {nonempty}:\n    {target} = {xs}[0]\nelse:\n"
                f"    {head} = {xs}[:1]\n    {target} = np.sum({head}, axis=0, dtype={xs}.dtype)\n")
        stmts = list(cst.parse_module(text).body)
        for st, _ in _statements(stmts):
            if span is not None:
                self.spans[id(st)] = span
            self.made.append(st)
        return stmts

    def renamed(self, node: Any, rename: dict[str, str], bound: set[str] | None, span: Span | None) -> Any:
        """``node`` with the names of ``rename`` renamed; a name it reads that the loop binds first
        (neither renamed nor in ``bound``, but a local of the function) is refused."""
        if bound is not None:
            for n in names_in(node):
                if n not in rename and n not in bound and n in self.locals:
                    raise UnsupportedSyntaxError(
                        f"`return` inside a loop on array data: the value returned reads `{n}`, which the loop "
                        "assigns first after the `return`'s iteration began", span=span, hint=_HINT)
        return node.visit(_Rename(rename))

    locals: set[str] = set()


def _bound_by(s: Any) -> set[str]:
    """The names a statement binds (anywhere inside it)."""
    out: set[str] = set()
    for n in walk_nodes(s):
        if isinstance(n, cst.AssignTarget):
            out.update(target_names(n.target))
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            out.update(target_names(n.target))
        elif isinstance(n, cst.For):
            out.update(target_names(n.target))
        elif isinstance(n, cst.FunctionDef):
            out.add(n.name.value)
    return out


def _read(stmts: Sequence[Any], ret: cst.Return) -> set[str]:
    out: set[str] = set(names_in(ret))
    for s in stmts:
        out.update(names_in(s))
    return out


def _path_to_return(stmts: list[Any]) -> tuple[list[Any], cst.Return] | None:
    """The straight-line statements leading to the first ``return`` in ``stmts`` (through the bodies of the
    ``if``s around it, not their tests' other branches), and that ``return``; None: the path crosses a
    loop or another compound statement."""
    before: list[Any] = []
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine):
            for k, x in enumerate(s.body):
                if isinstance(x, cst.Return):
                    if k:
                        before.append(s.with_changes(body=s.body[:k]))
                    return before, x
            before.append(s)
        elif isinstance(s, LOOPS) and has_return(s):  # (entered: its target at its first value)
            inner = _path_to_return(list(s.body.body))
            if inner is None:
                return None
            if isinstance(s, cst.For):
                first = _first_item(s.iter)
                if first is None or not isinstance(s.target, cst.Name):
                    if set(target_names(s.target)) & _read(*inner):
                        return None
                else:
                    before.append(cst.SimpleStatementLine(body=[cst.Assign(
                        targets=[cst.AssignTarget(cst.Name(s.target.value))], value=first)]))
            return before + inner[0], inner[1]
        elif isinstance(s, cst.If):
            if has_return(s):
                branch = s
                while True:
                    if has_return(branch.body):
                        inner = _path_to_return(list(branch.body.body))
                        return None if inner is None else (before + inner[0], inner[1])
                    orelse = branch.orelse
                    if isinstance(orelse, cst.If):
                        branch = orelse
                        continue
                    assert orelse is not None
                    inner = _path_to_return(list(orelse.body.body))
                    return None if inner is None else (before + inner[0], inner[1])
            return None
        else:
            return None
    return None


def _first_item(it: cst.BaseExpression) -> cst.BaseExpression | None:
    """The first value a ``for`` over ``it`` binds: a range's start, an array's or tuple's first element."""
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range":
        args = [a for a in it.args if a.keyword is None]
        if len(args) == 1:
            return cst.Integer("0")
        if len(args) >= 2:
            return args[0].value
        return None
    if isinstance(it, cst.Name):
        first = cst.Subscript(value=it, slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])
        _FIRST_ITEMS[id(first)] = first  # (written `first_or_zeros`: the sequence may be empty)
        return first
    return None


_FIRST_ITEMS: dict[int, cst.CSTNode] = {}  # (kept alive: keyed by id)


def _statements(stmts: Sequence[Any]) -> Iterable[tuple[Any, None]]:
    """Every statement of ``stmts``, those in ``if`` blocks too."""
    for st in stmts:
        yield st, None
        if isinstance(st, cst.If):
            yield from _statements(st.body.body)
            if isinstance(st.orelse, cst.Else):
                yield from _statements(st.orelse.body.body)


class _Rename(cst.CSTTransformer):
    def __init__(self, rename: dict[str, str]) -> None:
        self.rename = rename

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False  # (its name is no variable: its value is renamed on leaving it)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(value=original.value.visit(self))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.rename.get(original.value)
        return updated if new is None else cst.Name(new)

    def visit_Arg(self, node: cst.Arg) -> bool:
        return False  # (a keyword is no variable)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(value=original.value.visit(self))


def rewrite(body: list[Any], loops: set[int], fresh: Callable[[str], str], spans: dict[int, Span],
            params: set[str], local_names: set[str]) -> tuple[list[Any], list[cst.CSTNode]]:
    """``body`` with the loops ``loops`` (ids) returning through a flag and a carried result (see the module's
    docstring); and the statements made (kept alive: spans are keyed by their ids)."""
    r = _Rewriter(fresh, spans, params)
    r.locals = local_names
    return r.block(body, loops, set(params)), r.made


def every_loop(fdef: cst.FunctionDef, spans: dict[int, Span], fresh: Callable[[str], str]) -> list[Any]:
    """``fdef``'s body with every loop holding a ``return`` rewritten (reverse mode, which moves every
    ``return`` to the end of the function, whether the loop's test is data or not)."""
    body = list(fdef.body.body)
    loops = {id(s) for s in body_loops(body) if has_return(s)}
    if not loops:
        return body
    params = {p.name.value for p in params_of(fdef)}
    return rewrite(body, loops, fresh, spans, params, _bound_by(fdef.body))[0]


def body_loops(stmts: Sequence[Any]) -> list[Any]:
    """The outermost loops of ``stmts`` (in the bodies of its ``if``s too)."""
    out: list[Any] = []
    for s in stmts:  # (exact classes: libcst's node classes are final; `isinstance` on them goes through ABCMeta)
        t = s.__class__
        if t is cst.For or t is cst.While:
            out.append(s)
        elif t is cst.If:
            out += body_loops(s.body.body)
            orelse = s.orelse
            if orelse is not None:
                out += body_loops([orelse] if orelse.__class__ is cst.If else orelse.body.body)
    return out
