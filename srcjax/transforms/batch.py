"""vmap: a normalized function -> its batched version, as source.

Input: a program function after functionalization (``NormalizedFunction.fdef``: A-normal form; control flow on
data already ``srcjax.lax.cond``/``while_loop``/``fori_loop`` calls on nested functions; ``break``/``continue``
on data already flags), and which parameters are batched. Output: ``def <name>_vmap(same parameters)`` where every
batched value has its batch axis first, and values that do not depend on a mapped input keep their per-example
shapes (what is batched is tracked statically per name, :data:`State`).

Per statement:

- a primitive call: its record's ``batch`` rule (primitives/batch_rules.py);
- a call of a program function with batched arguments: a batched copy of that function,
  written once per (function, argument states) (:meth:`Batcher.function`);
- shape queries of batched values give per-example shapes (``x.shape`` -> ``x.shape[1:]``);
- ``srcjax.lax.cond`` on a batched predicate runs both branches and selects per example; ``while_loop`` with a
  batched condition runs until every example is done, with finished examples frozen (JAX's batched while);
  ``fori_loop``/``scan`` carry batched values; Python ``if``/``for`` on static values stay as they are.

The result is handed back as module text and runs through the normal pipeline (normalize,
functionalize, specialize), so it composes with every other transformation.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

import libcst as cst

from .. import batched as batched_helpers
from ..adjoint import is_saved_list_name
from ..core import Span, TranspileError
from ..frontend import numpy_calls, provenance
from ..frontend.binding_times import BindingTimes
from ..frontend.functionalize import with_data_names
from ..frontend.names import Names, code, names_in, parse_expression, syntax_children, target_names, text_names, walk
from ..frontend.normalize import NormalizedFunction
from ..frontend.program import Program
from ..primitives import registry
from ..primitives.elementwise import OPERATOR_PRIMS
from . import (
    batch_collectives,
    batch_containers,
    batch_control,
    batch_custom,
    batch_errors,
    batch_lax,
    batch_nested,
    batch_queries,
    batch_recursion,
    batch_tapes,
)
from .anf import ADJOINT_IMPORTS, Op, classify
from .batch_call import BatchCall
from .batch_dict_keys import shown_dict
from .batch_errors import BatchingError, ComprehensionBatchingError
from .batch_state import (
    Repeated,
    Stack,
    State,
    Tree,
    all_batched,
    any_batched,
    element,
    item,
    join,
    pack,
    parts_of,
    returns_join,
)
from .inline_lax import lax_call

BATCHED_IMPORTS = tuple(batched_helpers.__all__)


_SHAPE_ATTRS = {"shape", "ndim", "size"}
_DISPLAYS = frozenset({cst.Tuple, cst.List, cst.Dict})  # (by exact class: isinstance of libcst nodes is an ABC check)
_STATIC_CALLS = {"np.shape", "np.ndim", "np.size", "len", "np.result_type", "is_tree", "by_leaves", "is_float",
                 "isinstance", "type", "np.issubdtype", "np.iscomplexobj", "np.isrealobj", "np.dtype", "item_keys",
                 "has_derivative", "is_complex", "batch_shape"}
_LAX = {"srcjax.lax.cond", "srcjax.lax.switch", "srcjax.lax.while_loop", "srcjax.lax.fori_loop", "srcjax.lax.scan"}
_COMPARE = {"LessThan": "<", "LessThanEqual": "<=", "GreaterThan": ">", "GreaterThanEqual": ">=",
            "Equal": "==", "NotEqual": "!="}
_BINOPS = {"Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/", "FloorDivide": "//", "Modulo": "%",
           "Power": "**", "MatrixMultiply": "@", "BitAnd": "&", "BitOr": "|", "BitXor": "^"}


class Batcher:
    """Writes the batched functions of one program (the entry, helpers once per argument states)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.names = Names(set(program.functions) | set(ADJOINT_IMPORTS) | set(BATCHED_IMPORTS))
        self.written: dict[tuple[Any, ...], tuple[str, State, set[str], dict[str, State]]] = {}
        self.customs: dict[str, tuple[str, tuple[int, ...], tuple[str, ...]]] = {}  # batched custom functions
        self.texts: dict[str, str] = {}  # helper functions written, in order
        self.origins: dict[str, str] = {}  # generated function -> the program function it batches
        self.data_names: dict[str, set[str]] = {}  # program function -> its tests found to be on data
        self.axis_name: Any = None  # vmap's axis_name: the collectives over it are written here
        self.cycles: dict[str, bool] = {}  # program function -> whether it can call itself
        self.uses: dict[str, tuple[bool, bool]] = {}  # recursive function -> (pushes, pops) a list given
        self.tapes: dict[tuple[str, str], State] = {}  # (recursive function, list parameter) -> its values' state
        self.recursed: dict[tuple[Any, ...], bool] = {}  # functions being written -> whether they called themselves
        self.tape_slots = batch_tapes.Slots()  # (tapes batched as a whole: which values stay unbatched)
        self.sized: dict[str, str] = {}  # batched helpers whose caller passes the batch size -> its parameter

    def function(self, nf: NormalizedFunction, states: tuple[State, ...], force: bool = False,
                 want_return: State | None = None) -> tuple[str, State, set[str], dict[str, State]]:
        """The batched copy of a program function for these argument states: its name, its result's
        state, and the parameters it needs batched on entry (lists it appends batched values to: the
        caller batches its list, and calls again)."""
        params = _params(nf.fdef)
        lists: set[str] = set()
        mixed: set[str] = set()
        after: dict[str, State] = {}
        given = states
        if batch_recursion.on_cycle(self.program, nf.name, self.cycles):  # (see batch_recursion)
            uses = batch_recursion.list_uses(self.program, nf.name, self.uses)
            states, lists, mixed, after = batch_recursion.list_states(params, states, self.tapes, nf.name, uses)
        key = (nf.name, states, want_return)
        hit = self.written.get(key)
        if hit is not None:
            if key in self.recursed:
                self.recursed[key] = True  # a call of the function being written: its result assumed
        else:
            try:
                hit = batch_recursion.fixed_point(self, nf, params, states, key, want_return, lists)
            except batch_recursion.Grown as g:  # a tape made here pushed values more batched than assumed
                if g.function != nf.name or not g.learn(self.tapes, params, given):
                    span = getattr(nf.source, "span", None)  # (at the user's function where it has one)
                    raise (g.with_span(span) if isinstance(span, Span) and g.function == nf.name else g) from None
                return self.function(nf, given, force, want_return)
            if hit is None:
                e = BatchingError("vmap: the batched values of this recursive function did not settle",
                                  hint="pass in_axes=None for the arguments that need not be mapped")
                span = getattr(nf.source, "span", None)
                raise e.with_span(span) if isinstance(span, Span) else e
        name, ret, needs, effects = hit
        if lists:  # each list one state for all its values, for the caller too
            needs = set(needs) | mixed
            effects = {**effects, **after}
        return name, ret, needs, effects

    def write_function(self, nf: NormalizedFunction, params: list[str], states: tuple[State, ...], name: str,
                       want_return: State | None, lists: set[str]) -> tuple[str, State, set[str], dict[str, State]]:
        nf = self.with_data_tests(nf)
        w = FunctionWriter(self, nf, dict(zip(params, states)), want_return=want_return)
        w.params = set(params)
        w.size = w.names.fresh("batch_size")
        size = batch_recursion.batch_size_expr(params, states, lists)
        if size is not None:
            w.emit(f"{w.size} = {size}", 1)
        given = size is None and batch_tapes.needs_size(params, states)  # (the caller passes it)
        w.write_body()
        batch_errors.refuse_shared_lists(w)  # (`m = out`, then `out.append(y)`)
        if any(s != w.returned for s in w.return_states):  # returns in other states: each brought to their join
            return self.write_function(nf, params, states, name, returns_join(w.return_states), lists)
        ps = batch_tapes.sized(nf.fdef.params, w.size, self.sized, name) if given else code(nf.fdef.params)
        head = f"def {name}({ps}):"
        self.texts[name] = head + "\n" + "\n".join(w.lines) + "\n"
        self.origins[name] = nf.name
        needs = {p for p in w.forced & set(params) if states[params.index(p)] is not True}
        effects = {p: w.st[p] for p, s in zip(params, states) if isinstance(s, Stack) and w.st.get(p) != s}
        if w.grown:  # a tape's values more batched than assumed: the caller makes it so (batch_recursion)
            raise batch_recursion.Grown(nf.name, w.grown)
        return name, w.returned, needs, effects

    def with_data_tests(self, nf: NormalizedFunction) -> NormalizedFunction:
        """``nf``, functionalized again if some of its tests were found to be on batched data."""
        names = self.data_names.get(nf.name)
        return with_data_names(nf, sorted(names), self.program.functions) if names else nf

    def custom_rules(self, name: str, nf: NormalizedFunction, states: tuple[State, ...], ret: State) -> None:
        batch_custom.custom_rules(self, name, nf, states, ret)

    def used(self, entry: str) -> list[str]:
        """The names of the helpers written that the entry's text calls (directly or through another)."""
        seen: set[str] = set()
        todo = [entry]
        while todo:  # (a text's called names found in one scan, `name(` not after `.` or a word character)
            new = {n for n in re.findall(r"(?<![\w.])(\w+)\(", todo.pop()) if n in self.texts} - seen
            seen |= new
            todo += [self.texts[n] for n in new]
        return [n for n in self.texts if n in seen]


def _params(fdef: cst.FunctionDef) -> list[str]:
    ps = fdef.params
    return [p.name.value for p in [*ps.posonly_params, *ps.params, *ps.kwonly_params]]


class FunctionWriter:
    """Writes one batched function body (and the nested functions its lax calls take)."""

    entry_writer = False  # (vmap's entry function: its parameters are the ones in_axes maps)

    def __init__(self, batcher: Batcher, nf: NormalizedFunction, states: dict[str, State],
                 parent: FunctionWriter | None = None, want_return: State | None = None) -> None:
        self.b = batcher
        self.nf = nf
        self.program = batcher.program
        self.st: dict[str, State] = dict(parent.st) if parent is not None else {}
        self.st.update(states)
        self.names: Names = parent.names if parent is not None else \
            Names(set(names_in(nf.fdef)) | set(batcher.program.functions) | set(ADJOINT_IMPORTS) |
                  set(BATCHED_IMPORTS) | set(batcher.names.taken))
        self.size: str = parent.size if parent is not None else "batch_size"
        self.defs: dict[str, cst.FunctionDef] = dict(parent.defs) if parent is not None else {}
        self.fn_items: dict[str, list[str] | None] = dict(parent.fn_items) if parent is not None else {}
        self.lines: list[str] = []
        self.returned: State = False
        self.return_states: list[State] = []  # (each `return`'s state: see Batcher.write_function)
        self.want_return = want_return
        self.forced: set[str] = set()  # names that must be batched wherever bound (loops, lists)
        self.tape_rows: set[str] = set(parent.tape_rows) if parent is not None else set()  # (from a batched pop)
        self.grown: dict[str, State] = {}  # tapes (Repeated) pushed a value more batched than their state
        self.wholes: list[str] = parent.wholes if parent is not None else []  # tapes used whole (batch_tapes)
        self.zeros: set[str] = set(parent.zeros) if parent is not None else set()  # bound to zeros_like(...)
        self.params: set[str] = set()  # (a helper's own parameters)
        self.packed: dict[str, State] = {}  # names bound to a container literal of unbatched values: its Tree
        self.arrays: set[str] = set(parent.arrays) if parent is not None else set()
        self.trees: set[str] = set(parent.trees) if parent is not None else set()  # bound to a container somewhere
        self.sequences: set[str] = set(parent.sequences) if parent is not None else set()  # batched tuples/lists
        self.container_lists: set[str] = parent.container_lists if parent is not None else set()  # (lists of rows)
        self.last_array = self.last_sequence = False
        self.static_names: set[str] = set(parent.static_names) if parent is not None else set()
        self.bta: BindingTimes | None = None  # (the function's binding times, when a test needs them)
        self.guards: dict[str, str] = {}  # a name `taken(x, test)` binds in a branch on data -> x
        self.param_states: dict[str, State] = parent.param_states if parent is not None else dict(states)
        self.is_entry: bool = parent.is_entry if parent is not None else type(self).entry_writer
        self.at: cst.CSTNode | None = parent.at if parent is not None else None  # (the statement being written)

    # -- output -----------------------------------------------------------------------------
    def emit(self, line: str, ind: int) -> None:
        at = self.at  # (marked with the user's statement it is written from: errors in it are located there)
        self.lines.append(provenance.mark("    " * ind + line, self.nf.spans.get(id(at)) if at is not None else None))

    def error(self, msg: str, node: cst.CSTNode | None = None, hint: str | None = None) -> TranspileError:
        return batch_errors.located(self, BatchingError(msg, hint=hint), node)

    def state(self, atom: str) -> State:
        return self.st.get(atom, False)

    def convert(self, expr: str, have: State, want: State, items: bool = False) -> str:
        """``expr`` (in state ``have``) brought to the state ``want`` by broadcasting unbatched leaves
        (``items``: an unbatched part may be a container, a loop's carry: broadcast item by item)."""
        if have == want or not any_batched(want):  # (nothing to broadcast: a value in state False is kept whole,
            return expr  # whatever the structure of a Tree of unbatched leaves found on another path)
        if isinstance(have, Stack) or isinstance(want, Stack):  # a list: every element, or none, batched
            if all(v is True for v in (have.entries if isinstance(have, Stack) else (have,))):
                if is_saved_list_name(expr) and isinstance(have, Stack) and have.entries:
                    self.forced.add(expr)  # (a tape followed push by push made whole: its pushes slot by slot)
                return expr
            if not any_batched(have):
                batch_tapes.whole(self, expr, have)
                return f"batch_broadcast_items({expr}, {self.size})"
            if expr.isidentifier() and (expr not in self.params or is_saved_list_name(expr)):  # a list of batched
                self.forced.add(expr)  # and unbatched values used whole: written again, batching each value where it
                return expr  # is put in the list (a tape parameter: the caller passes it batched, batch_tapes)
            raise self.error("vmap: a list holding batched and unbatched values is used as a whole",
                             hint="loop over the examples in Python (the list is a derivative's tape: values saved "
                                  "by helpers called more than once)" if is_saved_list_name(expr) else
                             "make the unbatched values batched where they are put in the list")
        if have is False and want is True:
            if expr == "None":  # (no value to batch: a custom_vjp bwd's zero cotangent, as JAX reads None)
                return expr
            batch_tapes.whole(self, expr)
            if expr in self.zeros or items or shown_dict(self, expr):  # (zeros of a value that may be a container,
                # a cotangent; a dict rebound to mapped values: batch_dict_keys)
                return f"batch_broadcast_items({expr}, {self.size})"
            return f"batch_broadcast({expr}, {self.size})"
        if isinstance(want, Tree):
            if have is True:
                return expr
            parts = dict(have.items) if isinstance(have, Tree) else {}
            if have is False and want.kind in ("tuple", "dict") and all(isinstance(v, bool) for _, v in want.items):
                flags = (str(tuple(v for _, v in want.items)) if want.kind == "tuple" else
                         "{" + ", ".join(f"{k}: {v}" for k, v in want.items) + "}")
                return f"batch_broadcast_parts({expr}, {flags}, {self.size})"  # (or UNSET)
            return pack(want.kind, [(k, self.convert(item(expr, k), parts.get(k, False), v, items))
                                    for k, v in want.items], expr)
        assert isinstance(have, Tree) and want is True, (expr, have, want)
        return batch_containers.batched_items(self, expr, have, items)

    def bind(self, name: str, state: State) -> None:
        self.st[name] = state
        if isinstance(state, Tree):  # (a container: made batched whole later, its state True, still one)
            self.trees.add(name)

    # -- bodies ------------------------------------------------------------------------------
    def write_body(self, stmts: Sequence[Any] | None = None, ind: int = 1) -> None:
        body = list(self.nf.fdef.body.body) if stmts is None else list(stmts)
        start_st = dict(self.st)
        start_lines = list(self.lines)
        names_taken = set(self.names.taken)
        for _ in range(8):  # until the names forced batched (loops, lists) stop growing
            before = set(self.forced)
            if stmts is None:
                self.wholes.clear()
            own = set(_params(self.nf.fdef))  # (the entry's unmapped parameter may hold a dict: leaf by leaf)
            for v in sorted(self.forced):
                if v in self.params:  # (the caller passes it batched: see Batcher.function)
                    continue
                if v in self.st and self.st[v] is not True:
                    if (made := self.convert(v, self.st[v], True, items=v in own)) != v:  # (not `d = d`: batched
                        self.emit(f"{v} = {made}", ind)  # item by item already)
                    self.st[v] = True
            self.block(body, ind)
            if self.forced == before:
                if stmts is None:
                    batch_tapes.settled(self)
                return
            self.st = dict(start_st)
            self.lines = list(start_lines)
            self.names.taken = set(names_taken)
            self.returned = False
            self.return_states = []
        raise self.error("vmap: the batched values of this function did not settle")  # pragma: no cover

    def block(self, stmts: Sequence[Any], ind: int) -> None:
        for s in stmts:
            self.at = s
            if type(s) is cst.SimpleStatementLine:
                for small in s.body:
                    self.small(small, ind, s)
            elif type(s) is cst.FunctionDef:
                self.defs[s.name.value] = s
            elif type(s) is cst.If:
                self.if_(s, ind)
            elif isinstance(s, (cst.For, cst.While)):
                self.loop(s, ind)
            else:
                raise self.error(f"vmap: cannot batch a {type(s).__name__} statement", s)

    def if_(self, s: cst.If, ind: int) -> None:
        batch_control.if_(self, s, ind)

    def loop(self, s: cst.For | cst.While, ind: int) -> None:
        batch_control.loop(self, s, ind)

    def iterator(self, it: cst.BaseExpression) -> tuple[str, State] | None:
        return batch_queries.iterator(self, it)

    def iter_state(self, it: cst.BaseExpression, node: cst.CSTNode) -> State:
        if type(it) is cst.Name:
            s = self.state(it.value)
            if isinstance(s, Tree):
                j: State = False
                for _, v in s.items:
                    j = join(j, v)
                return any_batched(j)
            return s
        return False

    def small(self, s: Any, ind: int, line: cst.SimpleStatementLine) -> None:
        if type(s) is cst.Return:
            self.return_(s, ind)
        elif type(s) is cst.Assign:
            self.assign(s, ind, line)
        elif type(s) is cst.Expr:
            self.expr_stmt(s, ind, line)
        elif isinstance(s, (cst.Pass, cst.Break, cst.Continue)):
            self.emit(code(s), ind)
        elif isinstance(s, (cst.Assert, cst.Raise)):  # (on shapes: per example)
            reads = [n for n in names_in(s) if any_batched(self.state(n))]
            if reads and not all(self.only_shapes(e) for e in batch_queries.checked_exprs(s)):
                raise self.error(f"vmap: cannot batch {batch_errors.shown(self, s, line)}", line)
            self.emit(code(s.visit(batch_queries.PerExample(self))) if reads else code(s), ind)  # type: ignore[arg-type]
        else:
            raise self.error(f"vmap: cannot batch {batch_errors.shown(self, s, line)}", line)

    def return_(self, s: cst.Return, ind: int) -> None:
        val = code(s.value) if s.value is not None else "None"
        st = self.value_state(s.value) if s.value is not None else False
        want = self.want_return
        if want is None:
            self.returned = join(self.returned, st) if self.returned is not False else st
            self.return_states.append(st)
            self.emit(f"return {self.returned_expr(val, st)}", ind)
        else:
            self.returned = join(self.returned, join(st, want))
            to = join(st, want)  # (items: a value in state False may be a container, see returns_join)
            self.emit(f"return {self.returned_expr(self.convert(val, st, to, items=st is False), to)}", ind)

    def returned_expr(self, val: str, st: State) -> str:
        return val

    def value_state(self, node: cst.BaseExpression, structured: bool = False) -> State:
        """``node``'s state; ``structured``: a name bound to a tuple, list or dict of unbatched values
        written here as that container of ``False`` (a loop's carry made batched leaf by leaf)."""
        if type(node) is cst.Name:
            st = self.state(node.value)
            return self.packed.get(node.value, st) if structured and st is False else st
        if isinstance(node, (cst.Tuple, cst.List)):
            return Tree("tuple" if type(node) is cst.Tuple else "list",
                        tuple((str(i), self.value_state(e.value, structured)) for i, e in enumerate(node.elements)))
        if type(node) is cst.Dict:
            return Tree("dict", tuple((code(e.key), self.value_state(e.value, structured)) for e in node.elements
                                      if type(e) is cst.DictElement))
        return any(any_batched(self.state(n)) for n in names_in(node))

    def expr_stmt(self, s: cst.Expr, ind: int, line: cst.SimpleStatementLine) -> None:
        call = s.value
        if type(call) is cst.Call and type(call.func) is cst.Attribute and \
                call.func.attr.value == "append" and type(call.func.value) is cst.Name:
            batch_tapes.append(self, s, call, ind)
            return
        if type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value == "pop" \
                and not call.args and type(call.func.value) is cst.Name:  # a value dropped from a list (a tape)
            self.popped(call.func.value.value, line)
            self.emit(code(s), ind)
            return
        if any(any_batched(self.state(n)) for n in names_in(s)) and not (
                type(call) is cst.Call and type(call.func) is cst.Name and call.func.value == "print"):
            raise self.error(f"vmap: cannot batch {batch_errors.shown(self, s, line)}", line)
        self.emit(code(s), ind)  # (print: the batched values, whole)

    def popped(self, lst: str, line: cst.CSTNode) -> State:
        """The state of the value ``lst.pop()`` gives (the list's state updated)."""
        have = self.state(lst)
        if isinstance(have, Repeated):
            return have.entries[0]
        if isinstance(have, Stack):
            if not have.entries:
                raise self.error(f"vmap: {lst}.pop() of a value pushed where srcjax cannot follow it", line)
            if isinstance(have.entries[-1], Repeated):
                raise self.error(f"vmap: {lst}.pop() of values a recursive function pushed", line)
            self.st[lst] = Stack(have.entries[:-1])
            return have.entries[-1]
        return element(have)

    # -- assignments -------------------------------------------------------------------------
    def assign(self, s: cst.Assign, ind: int, line: cst.SimpleStatementLine) -> None:
        if len(s.targets) != 1:
            raise self.error("vmap: chained assignment", line)
        target = s.targets[0].target
        value = s.value
        self.last_array = type(value) is cst.BinaryOperation or type(value) is cst.Comparison  # (no ABC check)
        self.last_sequence = False
        value = batch_containers.def_alias(self, target, value)  # (`h = r[1]` of `r = (y, vjp_fn)`: h calls vjp_fn)
        expr, st = self.rhs(value, ind, line, target)
        tnames = target_names(target)
        for n in tnames:  # names known to hold an array (a primitive's result), not a container
            (self.arrays.add if self.last_array and type(target) is cst.Name else self.arrays.discard)(n)
            (self.sequences.add if self.last_sequence and type(target) is cst.Name else self.sequences.discard)(n)
        if expr == code(target):  # bound where it was computed (the branches of an if)
            for n, v in zip(tnames, [v for _, v in st.items] if isinstance(st, Tree) and len(tnames) > 1
                            else [st] * len(tnames)):
                self.bind(n, v)
            return
        if type(target) is cst.Name:
            name = target.value
            self.packed.pop(name, None)
            stars = (cst.StarredElement, cst.StarredDictElement)
            if st is False and type(value) in _DISPLAYS and not any(isinstance(e, stars) for e in value.elements):  # type: ignore[attr-defined]
                self.packed[name] = self.value_state(value, structured=True)
            batch_containers.note_zeros(self, [name], value)
            if name in self.forced and st is not True:
                if isinstance(value, (cst.Integer, cst.Float)):  # a number carried around a loop
                    expr = f"batch_broadcast({expr}, {self.size})"
                elif st is False and not batch_queries.is_empty_list(value):  # a list or tape made batched: each item
                    batch_tapes.whole(self, name)
                    expr = f"batch_broadcast_items({expr}, {self.size})"
                elif st is not False:
                    if isinstance(st, Tree) and not expr.isidentifier() and parts_of(expr) is None:
                        self.emit(f"{name} = {expr}", ind)  # (a call's container: read item by item once bound,
                        expr = name  # not called again for each item)
                    expr = self.convert(expr, st, True)
                st = True
            if st is True and batch_tapes.whole_pop(self, expr):  # (a value pushed whole: batched as pushed)
                kept = batch_tapes.popped(self, expr[:-len(".pop()")], [name], single=True)
                if kept is None:  # (a tuple popped whole, from a cotangent tape: its slots as pushed)
                    batch_tapes.whole(self, expr[:-len(".pop()")])
                st = True if kept is None else kept[0]
            if expr != name:  # (`out = out`: a container batched already, bound above)
                self.emit(f"{name} = {expr}", ind)
            self.bind(name, st)
            if type(value) is cst.Call and code(value.func).rsplit(".", 1)[-1] in ("from_leaves", "pack_like"):
                self.trees.add(name)  # (a container whatever its state, maybe: a join selects it item by item)
            batch_containers.note_tree(self, name, expr)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and not all(type(e.value) is cst.Name for e in target.elements) \
                and all(isinstance(n, (cst.Name, cst.Tuple, cst.List, cst.Element)) for n in walk(target)):
            # nested unpacking (``a, (b, c) = t``): inner levels are containers, element by element
            self.emit(f"{code(target)} = {batch_queries.unpacked(expr, target) if st is True else expr}", ind)
            self.bind_target(target, st)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and all(type(e.value) is cst.Name for e in target.elements):
            elems = [e.value.value for e in target.elements]  # type: ignore[attr-defined]
            if isinstance(st, Tree) and (len(st.items) == len(elems) or st.kind in ("tuple", "list")):
                # (a sequence of another length fails when run: any element's state, to join with what runs)
                states = [v for _, v in st.items] if len(st.items) == len(elems) else [element(st)] * len(elems)
            elif isinstance(st, Stack):  # a list's items (`ev, Q = np.linalg.eigh(X)`): arrays, each its push's state
                states = list(st.entries) if len(st.entries) == len(elems) else [element(st)] * len(elems)
            else:
                states = [st] * len(elems)
                if st is True:
                    whole = batch_tapes.whole_pop(self, expr)
                    kept = batch_tapes.popped(self, expr[:-len(".pop()")], elems) if whole else None
                    states = states if kept is None else kept
                    self.tape_rows.update(n for n, v in zip(elems, states) if v and expr.endswith(".pop()"))
                    if kept is None:  # (kept: every push a tuple literal, which batch_rows leaves as it is; a
                        expr = f"batch_rows({expr})"  # name bound to the pop would turn the rule off outside)
            self.emit(f"{code(target)} = {expr}", ind)
            batch_containers.note_zeros(self, elems, value)
            for n, v in zip(elems, states):
                self.bind(n, v)
            extra = [n for n, v in zip(elems, states) if n in self.forced and v is not True]
            for n in extra:
                if (made := self.convert(n, self.st[n], True)) != n:
                    self.emit(f"{n} = {made}", ind)
                self.bind(n, True)
            return
        if not any(any_batched(self.state(n)) for n in names_in(value)) and \
                not any(any_batched(self.state(n)) for n in tnames):
            self.emit(code(s), ind)
            return
        raise self.error(f"vmap: cannot batch the assignment to {code(target)!r}", line)

    def bind_target(self, target: cst.BaseExpression, st: State) -> None:
        if type(target) is cst.Name:
            self.bind(target.value, st)
            return
        assert isinstance(target, (cst.Tuple, cst.List))
        parts = [v for _, v in st.items] if isinstance(st, Tree) and len(st.items) == len(target.elements) else \
            [st] * len(target.elements)
        for e, v in zip(target.elements, parts):
            self.bind_target(e.value, v)

    def rhs(self, value: cst.BaseExpression, ind: int, line: cst.SimpleStatementLine,
            target: cst.BaseExpression) -> tuple[str, State]:
        """The batched right-hand side and its state (statements it needs are emitted first)."""
        if type(value) is cst.Call and (code(value.func) in _LAX or lax_call(value, self.nf) is not None):
            return self.lax_call(value, ind, line, target)  # (also `lax.cond` after `from srcjax import lax`)
        if type(value) is cst.Call and code(value.func) in batch_collectives.COLLECTIVES:
            return batch_collectives.collective(self, value, ind, line)
        reads = names_in(value)
        if batch_queries.is_empty_list(value):
            return code(value), Stack(())
        if type(value) is cst.Call and code(value.func) in ("zeros_like", "ones_like") and value.args and \
                type(value.args[0].value) is cst.Name and isinstance(self.state(value.args[0].value.value), Stack):
            return code(value), self.state(value.args[0].value.value)  # zeros like a tape: the same states
        if type(value) is cst.Call and self.stack_args(value):  # a helper pushing to or popping a list
            op = classify(value, self.program, self.nf)
            if op.kind in ("call", "custom"):
                return self.helper_call(op, ind, line)
        if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "pop" \
                and not value.args and type(value.func.value) is cst.Name and \
                isinstance(self.state(value.func.value.value), Stack):  # (a tape of unbatched values too)
            return code(value), self.popped(value.func.value.value, line)
        if not any(any_batched(self.state(n)) for n in reads):
            if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in self.defs:
                return self.local_call(value, ind, line)
            if type(value) is cst.Call:  # (a helper reaching psum(x, "i") of this vmap needs the batch)
                batch_collectives.check_helper(self, value, line)
            return code(value), False
        if type(value) is cst.Name:
            return value.value, self.state(value.value)
        if type(value) in _DISPLAYS:  # (an element `x.size`: the per-example query)
            value = value.visit(batch_queries.PerExample(self))  # type: ignore[assignment]
            return code(value), batch_queries.literal_state(self, value)
        if type(value) is cst.BinaryOperation and (joined := batch_containers.sequence_op(self, value)) is not None:
            return joined  # (`a + b`, `[x] * 2` of lists or tuples)
        if type(value) is cst.Call and (fields := batch_containers.record_fields(self, value.func)) is not None:
            return code(value), batch_containers.record_state(self, fields, value)
        if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value not in self.defs \
                and value.func.value not in self.params:
            builtin = batch_containers.builtin_call(self, value)
            if builtin is not None:
                return builtin
        if self.only_shapes(value):  # (`x.ndim > 1` too: a static flag)
            if type(target) is cst.Name and batch_queries.scalar_query(value):
                self.static_names.add(target.value)  # a Python int: never an operand to align with
            return self.static_expr(value, line), False
        if type(value) is cst.Comparison and \
                any(type(c.operator).__name__ not in _COMPARE for c in value.comparisons):
            return code(value), False  # `x is UNSET`, `k in d`: about the value's identity, not its data
        if type(value) is cst.Comparison and len(value.comparisons) == 1:
            opname = type(value.comparisons[0].operator).__name__
            prim = registry.PRIMITIVES[OPERATOR_PRIMS[opname]]
            args = {"x1": code(value.left), "x2": code(value.comparisons[0].comparator)}
            return self.prim_call(prim, args, ind, line, _COMPARE[opname]), True
        if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in self.defs:
            return self.local_call(value, ind, line)
        if type(value) is cst.Call and code(value.func).rsplit(".", 1)[-1] in batch_containers.TREE_CALLS:
            return batch_containers.tree_call(self, value)  # g["w"] (a record's field too), tree_leaves(p), ...
        op = classify(value, self.program, self.nf)
        if op.kind == "prim":
            assert op.prim is not None
            opsym = None
            if type(value) is cst.BinaryOperation:
                opsym = _BINOPS.get(type(value.operator).__name__)
            elif type(value) is cst.UnaryOperation:
                opsym = {"Minus": "-", "Plus": "+", "BitInvert": "~"}.get(type(value.operator).__name__)
            x = op.args.get(op.prim.arrays[0]) if op.prim.arrays else None
            key = op.args.get("key")
            if isinstance(x, str) and isinstance(key, str) and (isinstance(self.state(x), (Tree, Stack)) or
                                                                batch_errors.outer_container(self, x)) and \
                    any(any_batched(self.state(n)) for n in text_names(key)):  # parts[i]: a Python list's item
                raise batch_errors.mapped_error(self, f"the index [{key}] into the Python container `{x}`",
                                                text_names(key), line, "index an array instead: np.stack(...)[i]")
            if isinstance(x, str) and isinstance(self.state(x), (Tree, Stack)) and (item := batch_containers.
                    container_item(self, value, x, op, op.prim.result_kind(op.args) == "any")) is not None:
                return item
            if op.prim.tree is None and op.prim.result_kind(op.args) == "array" and any(isinstance(
                    op.args.get(p), str) and isinstance(self.state(op.args[p]), Stack) and op.args[p] in
                    numpy_calls.list_names_in(self.nf.fdef) for p in op.prim.arrays):
                # np.mean(outs) of a list built by appends: read again, the list written np.stack(outs)
                raise ComprehensionBatchingError(f"vmap: cannot batch {code(value)!r}")
            e = self.prim_call(op.prim, dict(op.args), ind, line, opsym)
            kind = op.prim.result_kind(op.args)
            self.last_array = kind == "array" and op.prim.tree is None  # (index_add of a tuple: a tuple)
            parts = parts_of(e)  # (a tuple of results, atleast_1d(a, b): batched element by element)
            if kind == "list":  # np.split: a list of batched arrays (of a length known later)
                return e, Stack((True,))
            return e, (Tree("tuple", tuple((k, True) for k in parts)) if parts is not None else True)
        if op.kind in ("call", "custom"):
            return self.helper_call(op, ind, line)
        if op.kind == "copy":
            return code(value), self.state(code(value))
        if op.kind == "pack_like":  # an array's rows stacked after the batch axis (batched.batch_pack_like)
            return batch_containers.pack_like(self, op), True
        if op.kind == "tree_add":  # (an unbatched cotangent broadcasts against the other per example: aligned
            states = [self.value_state(parse_expression(e)) for e in op.elements]  # where a second vmap sees it)
            if all(v is True for v in states):
                return code(value), True
            terms = [self.convert(e, v, True, items=True) for e, v in zip(op.elements, states)]
            return f"batch_tree_add({', '.join(terms)})", True
        if op.kind == "getattr":
            st = self.state(op.operands["x"])
            if isinstance(st, Tree) and st.kind == "record":  # a field of a NamedTuple/dataclass
                return code(value), dict(st.items).get("." + str(op.args.get("attr")), any_batched(st))
            batch_errors.refuse_field_of_mixed_items(self, st, op, line)
            return code(value), any_batched(st)
        if op.kind == "tape_pop":
            return code(value), self.popped(op.callee or "", line)
        if type(value) is cst.Call and code(value.func) == "tree_set" and len(value.args) == 3:
            z, k, v = (a.value for a in value.args)  # a container with one element replaced
            zs, vs = self.value_state(z), self.value_state(v)
            zc = code(z) if any_batched(zs) else f"batch_broadcast_items({code(z)}, {self.size})"
            vc = code(v) if any_batched(vs) else f"batch_broadcast_items({code(v)}, {self.size})"
            return f"tree_set({zc}, {code(k)}, {vc})", True
        walked = self.iterator(value) if type(value) is cst.Call else None
        if walked is not None:  # zip(a, b), enumerate(a), d.items(), list(reversed(a)): a sequence
            return walked[0], Stack((walked[1],))  # (every element in that state)
        if type(value) is cst.Call and code(value.func) in ("zeros_like", "ones_like", "np.zeros_like",
                                                                 "np.ones_like"):
            return code(value), self.value_state(value.args[0].value)
        if isinstance(value, (cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)) or \
                type(value) is cst.Call and code(value.func) == "sum":
            raise ComprehensionBatchingError(f"vmap: cannot batch {code(value)!r} as an expression")
        raise self.error(f"vmap: cannot batch {batch_errors.shown(self, value, line)}", line,
                         hint="pass in_axes=None for the arguments it reads, if they should not be mapped")

    def stack_args(self, value: cst.Call) -> bool:
        return any(type(a.value) is cst.Name and isinstance(self.state(a.value.value), Stack) for a in value.args)

    def comprehension_targets(self, value: cst.BaseExpression) -> set[str]:
        """Targets of comprehensions over batched sequences (``[np.shape(a) for a in seq]``) are batched; the
        others (``i in range(np.ndim(b))``), returned, are not, whatever a name they shadow holds."""
        unbatched: set[str] = set()
        for n in batch_queries.comprehension_fors(value):
            if self.reads_only_shapes(n.iter, unbatched) or batch_queries.dict_keys(self, n.iter):
                unbatched.update(target_names(n.target))  # (a dict's keys: `{k: ema[k] for k in ema}`)
            else:
                self.st.update(dict.fromkeys(target_names(n.target), True))
        return unbatched

    def only_shapes(self, value: cst.BaseExpression) -> bool:
        """Whether ``value`` reads batched names only through shape queries (``x.shape``, ``len(x)``)."""
        if not batch_queries.comprehension_fors(value):  # (most values: no comprehension, no targets to learn)
            return self.reads_only_shapes(value, set())
        return self.reads_only_shapes(value, self.comprehension_targets(value))

    def reads_only_shapes(self, value: cst.BaseExpression, unbatched: set[str]) -> bool:
        """:meth:`only_shapes`, the names ``unbatched`` (comprehensions' targets) read as unbatched."""
        ok = True  # (the items of a comprehension over data, `t` of `[np.tanh(t) for t in [x, y]]`, are data)
        items = {t for c in batch_queries.comprehension_fors(value) if not self.reads_only_shapes(c.iter, unbatched)
                 for t in target_names(c.target)}

        def visit(n: cst.CSTNode, inside: bool) -> None:
            nonlocal ok
            if not ok:  # (the answer is known: the rest of the value is not walked)
                return
            if type(n) is cst.Name:
                if not inside and (n.value in items or any_batched(self.state(n.value)) and n.value not in unbatched):
                    ok = False
                return
            if type(n) is cst.Attribute and n.attr.value in (_SHAPE_ATTRS | {"dtype"}):
                visit(n.value, True)
                return
            if type(n) is cst.Call and code(n.func) in _STATIC_CALLS:
                for a in n.args:
                    visit(a.value, True)
                return
            if type(n) is cst.Attribute:
                visit(n.value, inside)
                return
            if type(n) is cst.Comparison and \
                    any(type(c.operator).__name__ not in _COMPARE for c in n.comparisons):
                visit(n.left, True)  # `x is UNSET`, `k in d`: the value's identity, not its data
                for c in n.comparisons:
                    visit(c.comparator, True)
                return
            if type(n) is cst.CompFor:  # the sequence a comprehension runs over is not read as data
                visit(n.target, True)
                visit(n.iter, True)
                for cond in n.ifs:
                    visit(cond, inside)
                if n.inner_for_in is not None:
                    visit(n.inner_for_in, inside)
                return
            for child in syntax_children(n):
                visit(child, inside)

        visit(value, False)
        return ok

    def per_example_query(self, query: str, of: cst.BaseExpression | None, as_is: cst.BaseExpression) -> \
            cst.BaseExpression:
        """``x.shape`` -> ``x.shape[1:]`` (and ``ndim``, ``size``, ``np.shape``, ``len``...) for a batched ``x``."""
        template = batch_queries.PER_EXAMPLE_QUERIES.get(query)
        if template is not None and type(of) is cst.Subscript and batch_queries.element_state(self, of) is True:
            # an element of a container (`np.ndim(out[0])`, grad's check of a helper's first output)
            return parse_expression(template.format(x=code(of), n=self.size))
        if template is not None and (shown := batch_queries.display_query(self, query, of)) is not None:
            return parse_expression(shown)  # np.shape([x, y]) of batched x, y: of one example's list
        if template is None or type(of) is not cst.Name or not any_batched(self.state(of.value)) or \
                query == "batch_shape" and self.state(of.value) is not True:  # (a list of batched arrays: as is)
            return as_is
        param = of.value in self.params or self.is_entry and of.value in self.param_states
        if batch_queries.decided_at_run_time(self, query, of.value, param):  # (a list of batched arrays, maybe)
            return parse_expression(f"batch_{'len' if query == 'len' else 'shape'}({of.value})")
        if query == "len" and (isinstance(self.state(of.value), (Tree, Stack)) or not param and
                               self.state(of.value) is not True):
            return as_is  # (a local list or tuple of batched values: its length, not an example's `len(lst)`)
        return parse_expression(template.format(x=of.value, n=self.size))

    def data_test(self, s: cst.If | cst.While) -> bool:
        return batch_control.data_test(self, s)

    def static_expr(self, value: cst.BaseExpression, node: cst.CSTNode) -> str:
        """A shape query of batched values as the per-example query (``x.shape`` -> ``x.shape[1:]``)."""
        return code(batch_queries.per_example(self, value))

    # -- primitives -------------------------------------------------------------------------
    def per_example_text(self, text: str, line: cst.CSTNode) -> str:
        """An argument written as an expression (``x.ndim``, ``(x.size,)``): shape queries of batched
        values become per-example queries; any other read of a batched value there is refused."""
        if text.isidentifier() or not any(any_batched(self.state(n)) for n in text_names(text)):
            return text
        node = parse_expression(text)
        if self.only_shapes(node):
            return self.static_expr(node, line)
        raise self.error(f"vmap: cannot batch the argument {text!r}", line,
                         hint="compute it on its own line first")

    def prim_call(self, prim: registry.Primitive, args: dict[str, Any], ind: int, line: cst.CSTNode,
                  operator: str | None = None) -> str:
        operands_batched: dict[str, bool] = {}
        for p, v in list(args.items()):
            if isinstance(v, str) and p in prim.arrays and isinstance(parts_of(v), dict):
                st = self.value_state(parse_expression(v))  # a container operand written out
                if any_batched(st):
                    args[p] = self.convert(v, st, all_batched(st))
                    operands_batched[p] = True
            elif isinstance(v, str) and p in prim.arrays:
                args[p] = batch_containers.whole_operand(self, self.per_example_text(v, line), p, operands_batched)
            elif isinstance(v, list):
                args[p] = [self.per_example_text(e, line) for e in v]
        flags = {p: any_batched(self.state(args[p])) for p in prim.arrays
                 if isinstance(args.get(p), str) and args[p].isidentifier()}
        flags.update(operands_batched)
        seq_flags: dict[str, list[bool]] = {}
        for p in prim.array_seqs:
            a = args.get(p)
            if isinstance(a, str):
                node = parse_expression(a)
                if isinstance(node, (cst.List, cst.Tuple)):
                    a = args[p] = [code(e.value) for e in node.elements]
            if isinstance(a, list):
                a = args[p] = [self.per_example_text(e, line) for e in a]
                seq_flags[p] = [any_batched(self.state(e)) if e.isidentifier() else False for e in a]
            elif isinstance(a, str):
                st = self.state(a)
                flags[p] = any_batched(st)
                if flags[p] and st is not True:  # a list of batched and unbatched arrays: every one batched
                    args[p] = self.convert(a, st, True)
        for p in prim.mixed:  # static parameters that may hold dynamic integers (an index key)
            if isinstance(args.get(p), str):
                flags[p] = any(any_batched(self.state(n)) for n in text_names(args[p]))
        static_batched = [p for p, v in args.items() if p not in prim.arrays and p not in prim.array_seqs and
                          p not in prim.mixed and isinstance(v, str) and
                          any(any_batched(self.state(n)) for n in text_names(v))]
        for p in list(static_batched):  # ``(x.size,)``: a per-example shape query is static
            node = parse_expression(args[p])
            if self.only_shapes(node):
                args[p] = self.static_expr(node, line)
                static_batched.remove(p)
        if static_batched:
            p = static_batched[0]
            raise batch_errors.mapped_error(self, f"{prim.path}'s {p}= argument", text_names(args[p]), line,
                                            "pass in_axes=None for the argument it is computed from")
        rule = prim.batch
        c = BatchCall(self, prim, args, flags, seq_flags, operator, ind)
        if rule is None:
            return c.per_example()
        try:
            out = rule(c)
        except TranspileError as e:  # (a rule's refusal: at the user's line, as the writer's own errors)
            raise batch_errors.located(self, e, line) if e.span is None else e from None
        return str(out)

    # -- calls ------------------------------------------------------------------------------
    def helper_call(self, op: Op, ind: int, line: cst.CSTNode) -> tuple[str, State]:
        callee = op.callee
        assert callee is not None
        nf = self.program.functions[callee]
        params = _params(nf.fdef)
        sig = inspect.signature(nf.fn)
        try:
            bound = sig.bind(*op.call_args, **op.call_kwargs)
        except TypeError as e:
            raise self.error(f"vmap: {callee}(): {e}", line) from None
        states, shaped = batch_queries.argument_states(self, params, bound.arguments, line)  # (x.shape: per example)
        args = [*(shaped.get(a, a) for a in op.call_args),
                *(f"{k}={shaped.get(v, v)}" for k, v in op.call_kwargs.items())]
        if not any(any_batched(s) or isinstance(s, Stack) for s in states):
            return f"{callee}({', '.join(args)})", False
        texts = {p: a for p, a in bound.arguments.items() if isinstance(a, str)}
        called = batch_nested.called(self, nf.fn, texts, dict(zip(params, states)), ind)  # (batched source's helpers)
        if called is not None:
            return called
        name, ret, needs, effects, args = batch_containers.called(self, nf, params, states, bound, args)
        if op.kind == "custom":
            self.b.custom_rules(name, nf, tuple(states), ret)
        for p, after in effects.items():  # what the helper pushed to (popped from) a list argument
            a = bound.arguments.get(p)
            if isinstance(a, str) and a.isidentifier():
                self.st[a] = after
        for p in needs:  # a list the helper appends batched values to: batched here from the start
            a = bound.arguments.get(p)
            if isinstance(a, str) and a.isidentifier():
                self.forced.add(a)
        if name in self.b.sized:  # (a helper batched only through a tape batched whole: see batch_tapes)
            args.append(f"{self.b.sized[name]}={self.size}")
        return f"{name}({', '.join(args)})", ret

    def local_call(self, value: cst.Call, ind: int, line: cst.CSTNode) -> tuple[str, State]:
        fname = code(value.func)
        fdef = self.defs[fname]
        texts = {str(i): code(a.value) for i, a in enumerate(value.args)}  # (x.size: per example)
        states, shaped = batch_queries.argument_states(self, list(texts), texts, line)
        name, ret = self.nested(fdef, states, ind)
        args = [(f"{a.keyword.value}=" if a.keyword else "") + shaped.get(t, t)
                for a, t in zip(value.args, texts.values())]
        return f"{name}({', '.join(args)})", ret

    def nested(self, fdef: cst.FunctionDef, states: Sequence[State], ind: int,
               want_return: State | None = None, name: str | None = None) -> tuple[str, State]:
        """Write the batched copy of a nested function (closure reads see the current states)."""
        params = _params(fdef)
        sub = FunctionWriter(self.b, self.nf, dict(zip(params, states)), parent=self, want_return=want_return)
        sub.forced = set()
        sub.write_body(fdef.body.body, ind + 1)
        if want_return is None and any(s != sub.returned for s in sub.return_states):  # (as a helper's)
            return self.nested(fdef, states, ind, returns_join(sub.return_states), name)
        new = name or fdef.name.value
        self.emit(f"def {new}({code(fdef.params)}):", ind)
        self.lines += sub.lines
        return new, (sub.returned if want_return is None else join(sub.returned, want_return))

    def sub(self, states: dict[str, State]) -> FunctionWriter:
        """A writer for a function nested here (closure reads see the current states)."""
        w = FunctionWriter(self.b, self.nf, states, parent=self)
        w.forced = set()
        return w

    def nested_state(self, fdef: cst.FunctionDef, states: Sequence[State]) -> State:
        """The result state of a nested function for these parameter states (written to a scratch buffer)."""
        params = _params(fdef)
        sub = FunctionWriter(self.b, self.nf, dict(zip(params, states)), parent=self)
        taken = set(self.names.taken)
        sub.write_body(fdef.body.body, 1)
        self.names.taken = taken
        return sub.returned

    def lax_call(self, value: cst.Call, ind: int, line: cst.CSTNode,
                 target: cst.BaseExpression) -> tuple[str, State]:
        return batch_lax.lax_call(self, value, ind, line, target)


def _replace_name(text: str, name: str, new: str) -> str:
    from ..frontend.names import renamed

    return code(renamed(parse_expression(text), {name: parse_expression(new)}))
