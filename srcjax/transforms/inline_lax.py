"""``srcjax.lax`` calls written by the user, as Python control flow that AD reads.

The differentiation passes understand Python ``if``/``for``/``while`` (and
re-test, stack, or bound them as needed). A call such as
``srcjax.lax.fori_loop(0, n, body, x)`` is the same computation with the
control flow hidden in a function argument; before differentiating, this pass
writes it back out::

    def body(i, c):                    c_1 = x
        return c * x                   for i_1 in range(0, n):
    y = srcjax.lax.fori_loop(   ->         c_2 = c_1
        0, n, body, x)                     mul_1 = c_2 * x
                                           c_1 = mul_1
                                       y = c_1

* ``cond(p, f, g, *ops)`` -> ``if p: ... else: ...``;
* ``switch(i, [f0, f1, ...], *ops)`` -> the index clamped as JAX does, then
  an ``if``/``else`` chain on it;
* ``fori_loop(lo, hi, body, init)`` -> ``for i in range(lo, hi)``;
* ``while_loop(cond, body, init)`` -> ``while`` (reverse mode then needs a
  bound, like any ``while`` on data: see :mod:`srcjax.transforms.bounded`);
* ``scan(f, init, xs)`` (``xs`` an array, a container of arrays or None,
  ``length``, ``reverse``; ``ys`` an array, None, or a literal container the
  function returns, ``return (h, c), (h, {"o": o})``) -> a ``for`` over the
  rows (of every leaf of ``xs``), each of ``ys``'s arrays written row by row
  into a buffer shaped from the first row. A start value holding Python numbers
  (``scan(f, 0.0, x32)``) first gets one step that finds the dtype ``f`` gives
  each, and is cast to it (JAX's weak-typed carry), so that the first row, and
  the buffer, have JAX's dtype.

A function argument defined in the same function (a nested ``def``) is
inlined with its own names renamed apart (it reads the enclosing names it
closes over directly); any other function (``np.sin``, a module-level
helper) is called. A nested ``def`` called directly (``y = k(a, b)``) is
written out in place the same way. The derivative source shows the result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import libcst as cst

from ..core import TranspileError
from ..frontend.names import Names, RenameNames, assigned_names, code, names_in
from ..frontend.names import walk as walk_nodes
from ..frontend.normalize import NormalizedFunction
from ..frontend.restructure import single_exit, walk
from . import loop_counter

_LAX = ("cond", "switch", "fori_loop", "while_loop", "scan")




class LaxInlineError(TranspileError):
    """A ``srcjax.lax`` call that differentiation cannot write out as Python control flow."""


def _code(node: cst.CSTNode) -> str:
    return code(node)


def _stmt(text: str) -> Any:
    return cst.parse_statement(text)


def lax_call(value: cst.BaseExpression, nf: NormalizedFunction | None = None) -> str | None:
    """``"fori_loop"`` etc. when ``value`` calls ``srcjax.lax.<that>``: spelled so, or (given the
    function ``nf``) any name that resolves to it in its namespace (``from srcjax import lax``)."""
    if not isinstance(value, cst.Call):
        return None
    name = _code(value.func)
    for kind in _LAX:
        if name == f"srcjax.lax.{kind}":
            return kind
    kind = name.rpartition(".")[2]
    if nf is None or kind not in _LAX:
        return None
    head, *rest = name.split(".")
    src = nf.source
    obj = src.closure[head] if head in src.closure else src.globals.get(head)
    for part in rest:
        obj = getattr(obj, part, None)
    from .. import lax

    return kind if obj is not None and obj is getattr(lax, kind) else None


class Inliner:
    def __init__(self, nf: NormalizedFunction, taken: Iterable[str]) -> None:
        self.nf = nf
        self.names = Names(taken)
        self.fresh = self.names.fresh
        self.defs: dict[str, cst.FunctionDef] = {}
        self.used_defs: set[str] = set()
        self.sequences: dict[str, cst.List | cst.Tuple] = {}  # a name bound to a list of nested defs
        self.depth = 0  # nested defs written out inside one another (a recursive one stays a call)

    def error(self, msg: str, node: cst.CSTNode | None) -> LaxInlineError:
        return LaxInlineError(msg, span=self.nf.spans.get(id(node)) if node is not None else None,
                              hint="write the loop or branch as a Python for/while/if instead; srcjax "
                                   "differentiates those")

    # -- statements ---------------------------------------------------------------------------
    def block(self, stmts: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        for s in stmts:
            if isinstance(s, cst.FunctionDef):
                self.defs[s.name.value] = s
                out.append(s)
            elif isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign) \
                    and len(s.body[0].targets) == 1 and isinstance(s.body[0].targets[0].target, cst.Name) and \
                    isinstance(s.body[0].value, (cst.List, cst.Tuple)) and s.body[0].value.elements and \
                    all(isinstance(e.value, cst.Name) and e.value.value in self.defs
                        for e in s.body[0].value.elements):  # `branches = [f, g]` of nested defs: switch's
                self.sequences[s.body[0].targets[0].target.value] = s.body[0].value
                out.append(s)
            elif isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and \
                    isinstance(s.body[0], cst.Assign) and lax_call(s.body[0].value, self.nf) is not None:
                out += self.expand(s.body[0], s)
            elif self.direct_call(s) is not None:  # `y = k(a, b)` of a nested `def k`: written out in place
                name, args, target = self.direct_call(s)  # type: ignore[misc]
                self.used_defs.add(name)
                self.depth += 1
                out += self.written_out(self.inline(self.defs[name], args, target, s))
                self.depth -= 1
            elif isinstance(s, cst.If):
                out.append(self.if_(s))
            elif isinstance(s, (cst.For, cst.While)):
                out.append(self._same_line(s, s.with_changes(body=s.body.with_changes(body=self.block(s.body.body)))))
            else:
                out.append(s)
        return out

    def written_out(self, inlined: list[Any]) -> list[Any]:
        """An inlined body's statements (:meth:`inline`) with its own lax calls and calls of its own nested defs
        written out in turn; the defs it defines (an RK4 step's ``def fn`` in a fori body, the copy vmap writes
        before each call of a nested def) gone where every call of them was written out."""
        new = self.block(inlined)
        still = set(names_in(cst.Module(body=[s for s in new if not isinstance(s, cst.FunctionDef)])))
        return [s for s in new if not (isinstance(s, cst.FunctionDef) and s.name.value in self.used_defs
                                       and s.name.value not in still)]

    def _same_line(self, old: Any, new: Any) -> Any:
        """``new`` (``old`` rebuilt around a written-out body) located where ``old`` is: a later error about the
        loop or branch (reverse mode's bound on a `while`) names the user's line."""
        if new is not old and id(old) in self.nf.spans:
            self.nf.spans.setdefault(id(new), self.nf.spans[id(old)])
        return new

    def direct_call(self, s: Any) -> tuple[str, list[str], str] | None:
        """(the nested def, the arguments, the target) of a statement ``target = k(args)`` calling a
        nested ``def k`` with its own number of positional arguments (no defaults): what
        :meth:`block` writes out in place, so derivatives read the body like the caller's own."""
        if not (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign)
                and len(s.body[0].targets) == 1 and self.depth < 16):
            return None
        call = s.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in self.defs):
            return None
        fdef = self.defs[call.func.value]
        ps = fdef.params
        if any(a.keyword is not None or a.star for a in call.args) or len(call.args) != len(ps.params) or \
                any(p.default is not None for p in ps.params) or ps.kwonly_params or ps.star_kwarg is not None or \
                ps.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or fdef.decorators:
            return None
        return call.func.value, [_code(a.value) for a in call.args], _code(s.body[0].targets[0].target)

    def if_(self, s: cst.If) -> cst.If:
        orelse = s.orelse
        if isinstance(orelse, cst.If):
            orelse = self.if_(orelse)
        elif orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(body=self.block(orelse.body.body)))
        return self._same_line(s, s.with_changes(body=s.body.with_changes(body=self.block(s.body.body)),  # type: ignore[no-any-return]
                                                 orelse=orelse))

    # -- one call -------------------------------------------------------------------------------
    def expand(self, assign: cst.Assign, line: Any) -> list[Any]:
        call = assign.value
        assert isinstance(call, cst.Call)
        kind = lax_call(call, self.nf)
        if len(assign.targets) != 1:
            raise self.error("chained assignment of a srcjax.lax call", line)
        target = _code(assign.targets[0].target)
        pos = [a.value for a in call.args if a.keyword is None and a.star == ""]
        kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if any(a.star for a in call.args):
            raise self.error(f"srcjax.lax.{kind} with *args", line)
        out: list[Any] = []
        if kind == "cond":
            if len(pos) < 3 or kw:
                raise self.error("srcjax.lax.cond(pred, true_fun, false_fun, *operands) takes positional "
                                 "arguments", line)
            pred, tf, ff, ops = pos[0], pos[1], pos[2], [_code(o) for o in pos[3:]]
            body = self.apply(tf, ops, target, line)
            orelse = self.apply(ff, ops, target, line)
            out.append(cst.If(test=pred, body=cst.IndentedBlock(body=body),
                              orelse=cst.Else(body=cst.IndentedBlock(body=orelse))))
        elif kind == "switch":
            if len(pos) < 2 or kw:
                raise self.error("srcjax.lax.switch(index, branches, *operands) takes positional arguments",
                                 line)
            fns = self.sequence(pos[1], line)
            ops = [_code(o) for o in pos[2:]]
            k = self.fresh("index")
            out.append(_stmt(f"{k} = np.clip({_code(pos[0])}, 0, {len(fns) - 1})"))
            chain: list[Any] = self.apply(fns[-1], ops, target, line)
            for j in range(len(fns) - 2, -1, -1):
                eq = self.fresh(f"is_{j}")
                test_line = _stmt(f"{eq} = {k} == {j}")
                branch = cst.If(test=cst.Name(eq), body=cst.IndentedBlock(body=self.apply(fns[j], ops, target, line)),
                                orelse=cst.Else(body=cst.IndentedBlock(body=chain)))
                chain = [test_line, branch]
            out += chain
        elif kind == "fori_loop":
            if len(pos) != 4 or kw:
                raise self.error("srcjax.lax.fori_loop(lower, upper, body_fun, init_val) takes four positional "
                                 "arguments", line)
            carry = self.fresh("carry")
            i = self.fresh("i")
            out.append(_stmt(f"{carry} = {_code(pos[3])}"))
            body = self.apply(pos[2], [i, carry], carry, line)
            out.append(cst.For(target=cst.Name(i), iter=cst.parse_expression(
                f"range({_code(pos[0])}, {_code(pos[1])})"), body=cst.IndentedBlock(body=body)))
            out.append(_stmt(f"{target} = {carry}"))
        elif kind == "while_loop":
            if len(pos) != 3 or kw:
                raise self.error("srcjax.lax.while_loop(cond_fun, body_fun, init_val) takes three positional "
                                 "arguments", line)
            carry = self.fresh("carry")
            go = self.fresh("go")
            out.append(_stmt(f"{carry} = {_code(pos[2])}"))
            ctr = self.counter(pos)
            trips = self.fresh("trips") if ctr is not None else ""
            if ctr is not None:  # its trip counter written out, in the form reverse mode reads a bound from
                out.append(_stmt(f"{trips} = {ctr[0]}"))
            out += self.apply(pos[0], [carry], go, line)
            body = self.apply(pos[1], [carry], carry, line)
            if ctr is not None:
                body.append(_stmt(f"{trips} = {trips} + {ctr[3]}"))
            body += self.apply(pos[0], [carry], go, line)
            test = cst.parse_expression(f"{trips} {ctr[1]} {ctr[2]} and {go}") if ctr is not None else cst.Name(go)
            out.append(cst.While(test=test, body=cst.IndentedBlock(body=body)))
            out.append(_stmt(f"{target} = {carry}"))
        else:
            out += self.scan(pos, kw, target, line)
        return self.placed(out, line)

    def placed(self, out: list[Any], line: Any) -> list[Any]:
        """``out`` (what the call ``line`` became) with every statement that has no location given the
        call's: an error about the loop or branch (reverse mode's bound) names the user's line."""
        sp = self.nf.spans.get(id(line))
        if sp is not None:
            for node in walk_nodes(cst.Module(body=out)):
                if isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement)):
                    self.nf.spans.setdefault(id(node), sp)
        return out

    def counter(self, pos: list[cst.BaseExpression]) -> tuple[str, str, str, int] | None:
        """(the start, ``<`` or ``<=``, the bound, the step) of the carry item ``while_loop(cond, body,
        init)`` counts with (transforms/loop_counter.py), for nested ``def``s ``cond`` and ``body``."""
        cf, bf, init = pos
        if not (isinstance(cf, cst.Name) and cf.value in self.defs and isinstance(bf, cst.Name)
                and bf.value in self.defs):
            return None
        ctr = loop_counter.counter(self.defs[cf.value], self.defs[bf.value], init)
        if ctr is None:
            return None
        start = init.elements[ctr.index].value if isinstance(init, cst.Tuple) and ctr.index is not None else init
        return _code(start), "<=" if ctr.inclusive else "<", ctr.bound, ctr.step

    def scan(self, pos: list[cst.BaseExpression], kw: dict[str, cst.BaseExpression], target: str,
             line: Any) -> list[Any]:
        names = ["f", "init", "xs", "length", "reverse", "unroll"]
        args: dict[str, cst.BaseExpression] = dict(zip(names, pos))
        for k, v in kw.items():
            if k not in names or k in args:
                raise self.error(f"srcjax.lax.scan: unexpected argument {k}", line)
            args[k] = v
        if "f" not in args or "init" not in args:
            raise self.error("srcjax.lax.scan(f, init, xs=None, length=None, reverse=False)", line)
        xs = args.get("xs")
        xs_code = _code(xs) if xs is not None else "None"
        reverse = args.get("reverse")
        rev = reverse is not None and _code(reverse) not in ("False", "0")
        if reverse is not None and rev and _code(reverse) not in ("True", "1"):
            raise self.error("srcjax.lax.scan: `reverse` must be True or False, written as such", line)
        carry, y, ys, i, n = (self.fresh(b) for b in ("carry", "y", "ys", "i", "n"))
        x = self.fresh("x")
        out: list[Any] = [_stmt(f"{carry} = {_code(args['init'])}")]
        if xs_code == "None":
            if "length" not in args:
                raise self.error("srcjax.lax.scan with xs=None needs length=", line)
            out.append(_stmt(f"{n} = {_code(args['length'])}"))
        else:  # (the leaves' common length: xs may be a container of arrays, `(xs, ys)` or a dict)
            if xs is not None and not isinstance(xs, cst.Name):  # (named: tree_leaves and from_leaves read a name)
                xs_code = self.fresh("xs")
                out.append(_stmt(f"{xs_code} = {_code(xs)}"))
            leaves = self.fresh("xs_leaves")
            out.append(_stmt(f"{leaves} = srcjax.tree_util.tree_leaves({xs_code})"))
            leaf = self.fresh("xs_leaf")
            out.append(_stmt(f"{leaf} = {leaves}[0]"))
            out.append(_stmt(f"{n} = len({leaf})"))
        step = self.fresh("step")
        first = self.fresh("first")
        out.append(_stmt(f"{first} = {n} - 1" if rev else f"{first} = 0"))
        out += self.weak_start(args["init"], args["f"], xs_code, first, carry, x, y, step, line)
        # the first iteration runs apart: its row gives the buffer's shape
        head = self.iteration(args["f"], xs_code, first, carry, x, y, step, line)
        out += head
        y_leaves = self.ys_leaves(head, step)
        if y_leaves is not None:  # ys a literal container (`return h, (h, c)`): one buffer per leaf
            skeleton, y_parts = y_leaves
            bufs = [self.fresh(f"ys_{_slug(path)}") for path, _ in y_parts]
            rows = [self.fresh(f"y_{_slug(path)}") for path, _ in y_parts]
            out += self.leaf_reads(y, y_parts, rows)
            for buf, row in zip(bufs, rows):
                out += [_stmt(f"{buf} = {_buffer(n, row)}"),
                        _stmt(f"{buf} = srcjax.lax.index_update({buf}, {first}, {row})")]
            body = self.iteration(args["f"], xs_code, i, carry, x, y, step, line)
            body += self.leaf_reads(y, y_parts, rows)
            body += [_stmt(f"{buf} = srcjax.lax.index_update({buf}, {i}, {row})") for buf, row in zip(bufs, rows)]
            ys_value = skeleton.format(*bufs)
        else:
            out.append(cst.If(test=cst.parse_expression(f"{y} is None"),
                              body=cst.IndentedBlock(body=[_stmt(f"{ys} = None")]),
                              orelse=cst.Else(body=cst.IndentedBlock(body=[
                                  _stmt(f"{ys} = {_buffer(n, y)}"),
                                  _stmt(f"{ys} = srcjax.lax.index_update({ys}, {first}, {y})")]))))
            body = self.iteration(args["f"], xs_code, i, carry, x, y, step, line)
            body.append(cst.If(test=cst.parse_expression(f"{y} is not None"), body=cst.IndentedBlock(
                body=[_stmt(f"{ys} = srcjax.lax.index_update({ys}, {i}, {y})")])))
            ys_value = ys
        rest = f"range({n} - 2, -1, -1)" if rev else f"range(1, {n})"
        out.append(cst.For(target=cst.Name(i), iter=cst.parse_expression(rest), body=cst.IndentedBlock(body=body)))
        out.append(_stmt(f"{target} = ({carry}, {ys_value})"))
        return out

    def weak_start(self, init: cst.BaseExpression, f: cst.BaseExpression, xs_code: str, first: str, carry: str,
                   x: str, y: str, step: str, line: Any) -> list[Any]:
        """For a start value with Python numbers (``scan(f, 0.0, x32)``, ``(0, {"s": 1.0})``): one step
        that only finds the dtype ``f`` gives each (JAX promotes a weak-typed carry to the dtype of the
        carry ``f`` returns: float32 there; one ``f`` keeps a Python number stays weak), then ``carry``
        restarted with each number cast to it. The first row, which sizes the ys buffer, is then computed as
        JAX computes it (it was float64 under jvp/jacfwd)."""
        numbers = _numbers(init)
        if not numbers:
            return []
        taken = set(self.names.taken)
        out = self.iteration(f, xs_code, first, carry, x, y, step, line)
        if self.returns_carry(out, step, carry):  # (lax.map's scan: the numbers stay as written)
            self.names.taken = taken
            return []
        rows = [self.fresh("carry_leaf") for _ in numbers]
        out += self.leaf_reads(carry, numbers, rows) if any(path for path, _ in numbers) else \
            [_stmt(f"{rows[0]} = {carry}")]
        casts = {}
        for (path, literal), row in zip(numbers, rows):
            start, dt, same = self.fresh("start"), self.fresh("dtype_start"), self.fresh("kept")
            # (the number's own dtype: the step kept it weak, or a float64 one: kept as written)
            out += [_stmt(f"{dt} = np.result_type({literal}, {row})"),
                    _stmt(f"{same} = {dt} == np.result_type({literal})")]
            out.append(cst.If(test=cst.Name(same), body=cst.IndentedBlock(body=[_stmt(f"{start} = {literal}")]),
                              orelse=cst.Else(body=cst.IndentedBlock(body=[
                                  _stmt(f"{start} = np.asarray({literal}, dtype={dt})")]))))
            casts[path] = start
        out.append(_stmt(f"{carry} = {_code(_with_leaves(init, casts, ()))}"))
        return out

    def returns_carry(self, stmts: list[Any], step: str, carry: str) -> bool:
        """Whether the step ``stmts`` returns the carry it was given (``return carry, f(x)``: lax.map's)."""
        values: dict[str, list[cst.BaseExpression]] = {}
        for s in stmts:
            if not isinstance(s, cst.SimpleStatementLine):  # (a name bound inside a branch or loop: not one value)
                for node in walk_nodes(s):
                    if isinstance(node, cst.Name):
                        values.setdefault(node.value, []).append(cst.Ellipsis())
            for small in s.body if isinstance(s, cst.SimpleStatementLine) else []:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        isinstance(small.targets[0].target, cst.Name):
                    values.setdefault(small.targets[0].target.value, []).append(small.value)
        returned = values.get(step, [])
        if len(returned) != 1 or not isinstance(returned[0], cst.Tuple) or len(returned[0].elements) != 2:
            return False
        out = returned[0].elements[0].value
        for _ in range(8):
            if not isinstance(out, cst.Name) or out.value == carry or len(values.get(out.value, [])) != 1:
                break
            out = values[out.value][0]
        return isinstance(out, cst.Name) and out.value == carry

    def ys_leaves(self, stmts: list[Any], step: str) -> tuple[str, list[tuple[tuple[Any, ...], str]]] | None:
        """The literal container the scanned function's rows ``y`` are (``return carry, (h, c)``, or a
        name the function bound once to such a literal) as :func:`_leaves` gives it; None for a row
        written as one name (an array, or a container srcjax cannot see: one buffer, as before)."""
        values: dict[str, list[cst.BaseExpression]] = {}
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                for small in s.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                            isinstance(small.targets[0].target, cst.Name):
                        values.setdefault(small.targets[0].target.value, []).append(small.value)
            else:  # (a name bound inside a branch or loop is not one literal)
                for node in walk_nodes(s):
                    if isinstance(node, cst.Name):
                        values.setdefault(node.value, []).append(cst.Ellipsis())  # (not one literal)
        returned = values.get(step, [])
        if len(returned) != 1 or not isinstance(returned[0], cst.Tuple) or len(returned[0].elements) != 2:
            return None
        row: cst.BaseExpression = returned[0].elements[1].value
        for _ in range(8):
            if not isinstance(row, cst.Name) or len(values.get(row.value, [])) != 1:
                break
            row = values[row.value][0]
        found = _leaves(row)
        return found if found is not None and found[1] and found[0] != "{}" else None

    def leaf_reads(self, y: str, leaves: list[tuple[tuple[Any, ...], str]], rows: list[str]) -> list[Any]:
        """``row = y[k1][k2]...`` for each leaf's path (one subscript per statement: ANF)."""
        out: list[Any] = []
        for (path, _), row in zip(leaves, rows):
            cur = y
            for j, key in enumerate(path):
                nxt = row if j == len(path) - 1 else self.fresh("y_part")
                out.append(_stmt(f"{nxt} = {cur}[{_key(key)}]"))
                cur = nxt
        return out

    def iteration(self, f: cst.BaseExpression, xs_code: str, index: str, carry: str, x: str, y: str, step: str,
                  line: Any) -> list[Any]:
        body: list[Any] = [_stmt(f"{x} = None")] if xs_code == "None" else self.row(xs_code, index, x)
        body += self.apply(f, [carry, x], step, line)
        body.append(_stmt(f"{carry}, {y} = {step}"))
        return body

    def row(self, xs_code: str, index: str, x: str) -> list[Any]:
        """Statements that set ``x`` to row ``index`` of every leaf of ``xs`` (JAX's scan over a pytree:
        ``(xs, ys)[i]`` would be the tuple's item), written as the normalizer writes ``tree_map(lambda a:
        a[i], xs)``, which differentiation reads."""
        items, leaves, leaf, item = (self.fresh(b) for b in ("items", "leaves", "leaf", "item"))
        loop = cst.For(target=cst.Name(leaf), iter=cst.Name(leaves), body=cst.IndentedBlock(
            body=[_stmt(f"{item} = {leaf}[{index}]"), _stmt(f"{items}.append({item})")]))
        return [_stmt(f"{items} = []"), _stmt(f"{leaves} = srcjax.tree_util.tree_leaves({xs_code})"), loop,
                _stmt(f"{x} = srcjax.pytree.from_leaves({xs_code}, {items})")]

    def sequence(self, e: cst.BaseExpression, line: Any) -> list[cst.BaseExpression]:
        if isinstance(e, cst.Name) and e.value in self.sequences:
            e = self.sequences[e.value]
        if isinstance(e, (cst.List, cst.Tuple)):
            return [el.value for el in e.elements]
        raise self.error("srcjax.lax.switch: the branches must be a literal list or tuple of functions", line)

    def apply(self, fn: cst.BaseExpression, args: Sequence[str], target: str, line: Any) -> list[Any]:
        """Statements that set ``target`` to ``fn(*args)``."""
        if isinstance(fn, cst.Name) and fn.value in self.defs:
            self.used_defs.add(fn.value)
            if self.depth >= 16:  # (a recursive one stays a call)
                return self.inline(self.defs[fn.value], args, target, line)
            self.depth += 1  # (its own lax calls and calls of nested defs, `k1 = f(y)` in an RK4 step, in turn)
            out = self.written_out(self.inline(self.defs[fn.value], args, target, line))
            self.depth -= 1
            return out
        return [_stmt(f"{target} = {_code(fn)}({', '.join(args)})")]

    def inline(self, fdef: cst.FunctionDef, args: Sequence[str], target: str, line: Any) -> list[Any]:
        params = [p.name.value for p in fdef.params.params]
        if len(params) != len(args) or fdef.params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or \
                fdef.params.kwonly_params or fdef.params.star_kwarg is not None:
            raise self.error(f"`{fdef.name.value}` takes {len(params)} arguments here, but srcjax.lax passes "
                             f"{len(args)}", line)
        body = list(fdef.body.body)
        result = self.fresh("result")
        try:
            body = single_exit(body, result, statements_only=True)  # (renamed below: every node rebuilt)
        except TranspileError:
            raise self.error(f"`{fdef.name.value}` returns from inside a loop", line) from None
        locals_ = set(params) | set(assigned_names(body))
        mapping = {n: self.fresh(n) for n in sorted(locals_)}
        renamer = RenameNames(mapping)
        out: list[Any] = [_stmt(f"{mapping[p]} = {a}") for p, a in zip(params, args)]
        for s in body[:-1]:
            out.append(s.visit(renamer))
            if id(s) in self.nf.spans:  # (a statement of the function keeps its own line)
                self.nf.spans.setdefault(id(out[-1]), self.nf.spans[id(s)])
        last = body[-1]
        assert isinstance(last, cst.SimpleStatementLine)
        for small in last.body[:-1]:
            out.append(cst.SimpleStatementLine(body=[small.visit(renamer)]))  # type: ignore[list-item]
        ret = last.body[-1]
        assert isinstance(ret, cst.Return)
        value = ret.value.visit(renamer) if ret.value is not None else cst.Name("None")
        out.append(_stmt(f"{target} = {_code(value)}"))  # type: ignore[arg-type]
        return out


def _leaves(e: cst.BaseExpression) -> tuple[str, list[tuple[tuple[Any, ...], str]]] | None:
    """A literal container of names (``(h, c)``, ``{"h": h, "o": (a, b)}``, nested) as a format
    string of its structure (``"({}, {})"``) and its leaves in that order: (the path of keys, the name);
    None when ``e`` is not such a literal."""
    if isinstance(e, cst.Name) and e.value != "None":
        return "{}", [((), e.value)]
    parts: list[tuple[Any, cst.BaseExpression]] = []
    if isinstance(e, (cst.Tuple, cst.List)):
        if any(not isinstance(el, cst.Element) for el in e.elements):
            return None
        parts = list(enumerate(el.value for el in e.elements))
    elif isinstance(e, cst.Dict):
        for el in e.elements:
            if not (isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString)):
                return None
            parts.append((el.key.evaluated_value, el.value))
    else:
        return None
    texts: list[str] = []
    leaves: list[tuple[tuple[Any, ...], str]] = []
    for key, value in parts:
        sub = _leaves(value)
        if sub is None:
            return None
        key_text = _key(key).replace("{", "{{").replace("}", "}}")  # (format's braces)
        texts.append(f"{key_text}: {sub[0]}" if isinstance(e, cst.Dict) else sub[0])
        leaves += [((key,) + path, name) for path, name in sub[1]]
    inner = ", ".join(texts)
    skeleton = f"[{inner}]" if isinstance(e, cst.List) else "{{" + inner + "}}" if isinstance(e, cst.Dict) else \
        f"({inner},)" if len(texts) == 1 else f"({inner})"
    return skeleton, leaves


def _buffer(n: str, row: str) -> str:
    """The ys buffer of ``n`` rows shaped like ``row``, in its dtype, weakly typed where it is (JAX's rows of a
    weak carry: ``np.zeros(..., dtype=np.result_type(row))`` made a Python number's rows float64, and ``ys *
    x32`` float64 under jvp/jacfwd). Every row is written over: no derivative flows from ``row`` into it."""
    return f"broadcast_like(srcjax.lax.stop_gradient({row}), np.zeros(({n},) + np.shape({row}), dtype=bool))"


def _number(e: cst.BaseExpression) -> bool:
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
        e = e.expression
    return isinstance(e, (cst.Integer, cst.Float))


def _items(e: cst.BaseExpression) -> list[tuple[Any, cst.BaseExpression]] | None:
    if isinstance(e, (cst.Tuple, cst.List)) and all(isinstance(el, cst.Element) for el in e.elements):
        return list(enumerate(el.value for el in e.elements))
    if isinstance(e, cst.Dict) and all(isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString)
                                       for el in e.elements):
        return [(el.key.evaluated_value, el.value) for el in e.elements]  # type: ignore[attr-defined,union-attr]
    return None


def _numbers(e: cst.BaseExpression, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """(the path of keys, the literal) of each Python number written in the start value ``e`` of a scan
    (``0.0``, ``(0.0, h)``, ``{"s": 1, "h": h}``, nested displays)."""
    if _number(e):
        return [(path, _code(e))]
    return [leaf for key, value in _items(e) or [] for leaf in _numbers(value, (*path, key))]


def _with_leaves(e: cst.BaseExpression, names: dict[tuple[Any, ...], str], path: tuple[Any, ...]) \
        -> cst.BaseExpression:
    """``e`` with the leaf at each path of ``names`` replaced by that name."""
    if path in names:
        return cst.Name(names[path])
    if isinstance(e, (cst.Tuple, cst.List)) and _items(e) is not None:
        return e.with_changes(elements=[el.with_changes(value=_with_leaves(el.value, names, (*path, k)))
                                        for k, el in enumerate(e.elements)])
    if isinstance(e, cst.Dict) and _items(e) is not None:
        return e.with_changes(elements=[el.with_changes(value=_with_leaves(  # type: ignore[attr-defined,union-attr]
            el.value, names, (*path, el.key.evaluated_value))) for el in e.elements])  # type: ignore[attr-defined,union-attr]
    return e


def _key(k: Any) -> str:
    return json.dumps(k) if isinstance(k, str) else repr(k)  # (the quotes the generated source uses)


def _slug(path: tuple[Any, ...]) -> str:
    return "_".join(str(k) for k in path if str(k).isidentifier() or isinstance(k, int)) or "leaf"


def inline_lax(nf: NormalizedFunction, body: Sequence[Any]) -> list[Any]:
    """``body`` with its ``srcjax.lax`` calls written out (the same list when there are none)."""
    nested = {n.name.value for st in body if type(st) is not cst.SimpleStatementLine  # (no def in those)
              for n in walk_nodes(st) if type(n) is cst.FunctionDef}
    if not any(isinstance(s, cst.Assign) and (lax_call(s.value, nf) is not None or (
            isinstance(s.value, cst.Call) and isinstance(s.value.func, cst.Name) and s.value.func.value in nested))
               for s, _ in walk(body)):
        return list(body)
    inl = Inliner(nf, names_in(nf.plain_fdef))
    new = inl.block(body)
    # nested defs used only by the calls written out (lax bodies, direct calls) are gone; others stay
    # (and AD refuses them)
    # (a list of branches switch read, read nowhere else now: gone too)
    read = names_in(cst.Module(body=[s for s in new if not isinstance(s, cst.FunctionDef)]), skip_targets=True)
    new = [s for s in new if not (isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Assign)
                                  and s.body[0].value in inl.sequences.values()
                                  and _code(s.body[0].targets[0].target) not in read)]
    still = set(names_in(cst.Module(body=[s for s in new if not isinstance(s, cst.FunctionDef)])))
    new = [s for s in new if not (isinstance(s, cst.FunctionDef) and s.name.value in inl.used_defs
                                  and s.name.value not in still)]
    return _without_written_defs(new, inl.used_defs)


def _without_written_defs(body: list[Any], used: set[str]) -> list[Any]:
    """``body`` without the defs inside its loops and branches whose every call was written out (a fori body's
    ``def fn`` of an RK4 step, the copy vmap writes before each call of a nested def): a def read nowhere but
    by its own name."""
    if not used:  # (no def's call was written out: nothing can go, no walk)
        return body
    nested = [n for st in body if type(st) is not cst.SimpleStatementLine for n in walk_nodes(st)
              if type(n) is cst.FunctionDef]
    if not nested:
        return body
    own = {id(d.name) for d in nested}
    read = {n.value for n in walk_nodes(cst.Module(body=body)) if type(n) is cst.Name and id(n) not in own}
    gone = {d.name.value for d in nested if d.name.value in used and d.name.value not in read}
    return [_dropping(st, gone) for st in body] if gone else body


def _dropping(st: Any, gone: set[str]) -> Any:
    """``st`` with the defs named in ``gone`` left out of its blocks (at any depth)."""
    if isinstance(st, (cst.For, cst.While, cst.If, cst.Else)):
        kept = [_dropping(s, gone) for s in st.body.body
                if not (isinstance(s, cst.FunctionDef) and s.name.value in gone)]
        changes: dict[str, Any] = {"body": st.body.with_changes(body=kept or [_stmt("pass")])}
        orelse = getattr(st, "orelse", None)
        if orelse is not None:
            changes["orelse"] = _dropping(orelse, gone)
        return st.with_changes(**changes)
    return st


__all__ = ["Inliner", "LaxInlineError", "inline_lax", "lax_call"]
