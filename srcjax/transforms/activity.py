"""Activity analysis, and the data-flow facts both modes read.

:class:`Activity` finds the names that depend differentiably on the active inputs
(flow-insensitive; through helper calls, with their summaries cached), and refuses at the
user's line what derivatives cannot follow (comprehensions over active values, a list passed
as an array). Around it: :func:`hoisted_body` (the body with active loops' sequences named, and
its activity), :func:`array_names` (names that certainly hold arrays, not containers),
:func:`unique_keys` (names that hold integers or booleans: index keys that cannot repeat),
:func:`first_reads` (where an appended list is first read), :func:`upward_exposed` (names read
before they are assigned) and :func:`find_nested_def`. (The names an adjoint reads outside its own
loops: :func:`.anf.lines_free_of_loop_targets`, on the text just written.)
"""

from __future__ import annotations

import keyword
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import libcst as cst

from .. import batched as batched_helpers
from ..core import TranspileError
from ..frontend import parsed, shadowing
from ..frontend.cst_expressions import parse_expression
from ..frontend.liveness import Liveness
from ..frontend.locations import user_code
from ..frontend.names import (
    Names,
    Visitor,
    boolean_valued,
    code,
    comprehension_targets,
    names_in,
    syntax_children,
    target_names,
    walk,
)
from ..frontend.normalize import NormalizedFunction
from ..frontend.program import Program
from ..frontend.restructure import walk as _walk
from . import list_refusals
from .anf import (
    ADJOINT_IMPORTS,
    ComprehensionError,
    DifferentiationError,
    Op,
    all_params,
    call_name,
    classify,
    differentiable_params,
    hoist_loop_sequences,
    inline_loop_iterables,
    loop_sources,
    primitive_paths,
)
from .inline_lax import inline_lax
from .integer_leaves import integer_names, unique_keys  # noqa: F401  (unique_keys: forward_ad, reverse_ad)
from .templates import expr

# -- analysis ------------------------------------------------------------------------------------

def array_names(body: Sequence[Any], act: Activity) -> set[str]:
    """Names that certainly hold arrays (or numbers), never containers: results of array
    primitives and their operands. The cotangents of other names are added with tree_add."""
    out: set[str] = set()
    for st, _ in _walk(body):
        if isinstance(st, cst.Assign):
            op = act.op(st.value)
            if op.kind != "prim" or op.prim is None or op.prim.result_kind(op.args) == "any" or \
                    op.prim.tree is not None:  # (index_update, unbroadcast, ... also take containers)
                continue
            # (not a `nested` operand: np.asarray(ws) of a list, whose cotangent is a list)
            out.update(a for p, a in op.operands.items() if p in op.prim.arrays and p not in op.prim.nested)
            if op.prim.result_kind(op.args) == "array" and isinstance(st.targets[0].target, cst.Name):
                out.add(st.targets[0].target.value)
    return out


# libcst classes tested by exact type (``type(n) in ...``: libcst has no subclasses of them, tests/test_first_call.py;
# isinstance on a libcst class goes through ABCMeta)
_COMPREHENSIONS = frozenset({cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp})
_LOOPS = frozenset({cst.For, cst.While})


_SORTED_HINT = ("sort one array: np.sort(np.stack([a, b, c])) is differentiated (a permutation, as jax's sort), "
                "where sorted() compares array values in Python, which compiled code cannot (nor can jax.jit)")


class Activity:
    """Flow-insensitive activity: a name is active if any assignment to it depends
    differentiably on an active input."""

    def __init__(self, program: Program, nf: NormalizedFunction, active_params: Iterable[str],
                 body: Sequence[Any] | None = None) -> None:
        self.program = program
        self.nf = nf
        shadowing.refuse_parameters(nf, DifferentiationError)
        self.active: set[str] = set(active_params)
        self.ops: dict[int, Op] = {}
        # (a statement's id, loose) -> (it, its effects) that do not depend on activity: propagate's, once
        self._fixed_effects: dict[tuple[int, bool], tuple[Any, list[tuple[list[str], list[str]]]]] = {}
        if body is None:  # a helper's summary: its body as the helper's derivative will see it
            body = inline_loop_iterables(inline_lax(nf, list(nf.plain_fdef.body.body)))
        self.body = body
        self.sequences = _local_sequences(body)
        self.pushed = _pushed_names(body)
        self.ints = integer_names(body, all_params(nf))  # (activity per leaf: an int in an active carry)
        self.propagate(self.active, body)
        self.check(body)

    def propagate(self, active: set[str], body: Sequence[Any], loose: bool = False) -> None:
        """Grow ``active`` (in place) to the names activity flows into, to a fixpoint (``loose``: also through
        the values static calls read, ``sorted(items)``, as if derivatives followed them)."""
        changed, fixed = True, self._fixed_effects
        while changed:
            changed = False
            for s, _ in _walk(body):
                hit = fixed.get((id(s), loose))
                if hit is not None and hit[0] is s:
                    pairs = hit[1]
                else:
                    pairs = _per_element(s) or [self.loose_effect(s) if loose else self.effect(s)]
                    if not (s.__class__ is cst.Assign and self.op(s.value).kind == "call"):  # (a call's: each round)
                        fixed[(id(s), loose)] = (s, pairs)
                for targets, srcs in pairs:
                    if targets and any(n in active for n in srcs):
                        new = set(targets) - active - self.ints
                        if new:
                            active |= new
                            changed = True

    def check(self, body: Sequence[Any]) -> None:
        """Refuse what would otherwise silently lose derivatives."""
        for st in body:
            nested = find_nested_def(st)
            if nested is not None and _read_outside(body, nested):  # (unread: lifted, `srcjax.vmap(f)(x)` of a
                # def reading locals is a call of a module-level copy now; called in a comprehension: read again with
                # it written as a loop, whose calls are)
                raise (ComprehensionError if _read_outside(_comprehensions(body), nested) else DifferentiationError)(
                    f"cannot differentiate through the nested function `{nested.name.value}` (e.g. a body "
                    "passed to srcjax.lax.cond/fori_loop/while_loop/scan) yet", span=self.nf.spans.get(id(nested)),
                    hint="define a helper at module level (calls of module functions are differentiated), and "
                         "write lax bodies as plain Python if/for/while: srcjax rewrites and differentiates that")
        container_binds: dict[int, list[str]] = {}  # id of an assignment binding a list/tuple -> its names
        for s, _ in _walk(body):
            self.check_item_views(s, body)
            self.check_list_changes(s, body)
            list_refusals.helper_appends(self, s, body)  # (`push(out, x)` appending inside)
            if isinstance(s, cst.Assign):
                op = self.op(s.value)
                names = [n for t in s.targets for n in target_names(t.target)]
                if op.kind in ("pack", "convert") or (op.kind == "prim" and op.prim is not None and
                                                      op.prim.result_kind(op.args) == "list") and \
                        isinstance(s.targets[0].target, cst.Name):
                    if isinstance(s.targets[0].target, cst.Name):
                        container_binds[id(s)] = names
                reads_active = [n for n in _value_reads(s.value) if n in self.active]
                if type(s.value) in _COMPREHENSIONS:
                    # an element reading its loop's items reads what the loop iterates over
                    # (`[(k, f(v)) for k, v in params.items()]`; not `[np.shape(a) for a in seq]`)
                    reads_active += _comprehension_item_reads(s.value, self.active)
                arg_reads = [n for a in s.value.args for n in names_in(a.value) if n in self.active] \
                    if isinstance(s.value, cst.Call) else []
                if isinstance(s.value, cst.Call) and isinstance(s.value.func, cst.Attribute) and \
                        isinstance(s.value.func.value, cst.Name) and s.value.func.attr.value not in _CONTAINER_METHODS:
                    # a method of a differentiated object (`params.energy(x)`, params a NamedTuple of the user's
                    # with methods): its result depends on the object (was: a zero derivative, silently)
                    arg_reads += [s.value.func.value.value] if s.value.func.value.value in self.active else []
                elif isinstance(s.value, cst.Call) and isinstance(s.value.func, cst.Name) and \
                        s.value.func.value in self.active:
                    # a call of a differentiated object (`layer(h)`, `layer` a dataclass holding weights, taken
                    # from a list in a loop): its result depends on the object (was: a zero derivative, silently)
                    arg_reads += [s.value.func.value]
                if op.kind == "static" and arg_reads and isinstance(s.value, cst.Call) and \
                        code(s.value.func) not in _STATIC_RESULT_CALLS and not code(s.value.func).endswith(".pop"):
                    own = _own_refusal(self.nf, s.value.func)  # (an object that says why: a pmapped function)
                    raise (ComprehensionError if code(s.value.func) == "sum" else DifferentiationError)(
                        f"cannot differentiate through `{code(s.value.func)}(...)`: " + (own[0] if own else
                        f"srcjax does not know its derivative (it reads {', '.join(sorted(set(arg_reads)))})"),
                        span=self.span_of(s, body), hint=own[1] if own else _method_hint(s.value.func) or
                        _chosen_function_hint(s.value.func, body) or
                        "call NumPy functions srcjax supports, srcjax.lax, or your own Python functions")
                if s.value.__class__ is cst.BinaryOperation and any(
                        v.__class__ in (cst.Tuple, cst.List) and any(n in self.active for n in names_in(v))
                        for v in (s.value.left, s.value.right)):
                    raise DifferentiationError(
                        f"cannot differentiate through `{self.shown(s.value, s, body)}` yet: joining or repeating "
                        f"tuples or lists that hold {', '.join(sorted(set(reads_active) - self.nf.temps)) or 'arrays'}",
                        span=self.span_of(s, body),
                        hint="write the whole tuple or list out, e.g. (a, b, x) instead of (a, b) + (x,)")
                if op.kind == "static" and reads_active and call_name(s.value) in ("max", "min") and not (
                        isinstance(s.value, cst.Call) and s.value.args and isinstance(s.value.args[0].value, cst.Name)
                        and all(a.keyword is not None for a in s.value.args[1:])):  # (`max(d)`: keys; the lowering)
                    name = call_name(s.value)
                    raise DifferentiationError(  # (jax's grad refuses it too: a comparison of traced values)
                        f"the builtin {name}() compares values known only at run time",
                        span=self.span_of(s, body),
                        hint=f"use np.{'maximum' if name == 'max' else 'minimum'}(a, b) or np.{name}(x); several "
                             f"arrays: np.{name}(np.stack([...]), axis=0)")
                if op.kind == "static" and reads_active and _stores_arrays(s.value) and \
                        call_name(s.value) not in ("max", "min") and \
                        not boolean_valued(s.value, lambda e: not any(n in self.active for n in names_in(e))):
                    raise (ComprehensionError if isinstance(s.value, (cst.ListComp, cst.GeneratorExp)) or
                           call_name(s.value) == "dict" else DifferentiationError)(
                        f"cannot differentiate through `{self.shown(s.value, s, body)}` yet (it builds a list or "
                        f"value from {', '.join(sorted(set(reads_active)))} that derivatives cannot follow)",
                        span=self.span_of(s, body),
                        hint=_SORTED_HINT if call_name(s.value) == "sorted" else
                        "write the elements out (np.stack([a, b])), build the list with `out.append(y)` in a "
                        "for loop, or use array operations")
        # a name holds a list where a list binding reaches it: in program order, a binding of the function's
        # own body (not in a loop or branch) to an array ends it (`r = np.stack(r)` after the loop that
        # appends to r); a loop's list bindings count from its top (the next iteration reads them)
        top = {id(small) for st in body if isinstance(st, cst.SimpleStatementLine) for small in st.body}
        containers: set[str] = set()
        for s, _ in _walk(body):
            if type(s) in _LOOPS:
                containers.update(n for inner, _ in _walk(s.body.body) for n in container_binds.get(id(inner), ()))
            if not isinstance(s, cst.Assign):
                continue
            op = self.op(s.value)
            if op.kind == "prim" and op.prim is not None:
                for _p, a in op.operands.items():
                    if a in containers and a in self.active and _p not in op.prim.array_seqs and \
                                op.prim.tree is None and op.prim.result_kind(op.args) != "any":
                        raise ComprehensionError(  # (read again with lists as np.stack: numpy_calls.list_names)
                            f"cannot differentiate through the list `{a}` passed to {op.prim.path} "  # type: ignore[union-attr]
                            "as an array (NumPy makes one array of it, which derivatives do not follow)",
                            span=self.span_of(s, body),
                            hint=f"make the array explicit: {op.prim.path}(np.stack({a}), ...); or index the "
                                 f"list ({a}[0]), or unpack it (a, b = {a})")
            names = [n for t in s.targets for n in target_names(t.target)]
            if id(s) in container_binds:
                containers.update(names)
            elif id(s) in top and op.kind == "prim" and op.prim is not None and \
                    op.prim.result_kind(op.args) == "array":
                containers.difference_update(names)
        list_refusals.shared_lists(self, body)  # (`m = out`, then `out.append(y)`: derivatives follow one name)

    def check_item_views(self, s: cst.CSTNode, body: Sequence[Any]) -> None:
        """Refuse the items of an active container reaching a loop or a name that derivatives do not follow
        (was: a zero derivative, silently): ``pairs = d.items()`` named (not inlined into one loop's
        iterable), ``for a in sorted(items)`` of a list built here (its items' order is a permutation
        derivatives do not undo yet)."""
        if isinstance(s, cst.Assign) and isinstance(s.value, cst.Call) and _items_view(s.value) in self.active and \
                self.reaches_result([n for t in s.targets for n in target_names(t.target)], body):
            recv = _items_view(s.value)
            raise DifferentiationError(
                f"cannot differentiate through `{self.shown(s.value, s, body)}` kept as a value yet (derivatives "
                f"follow `{recv}`'s items only in the loop that iterates over them)", span=self.span_of(s, body),
                hint=f"loop over it where you use it (`for {'k, v' if s.value.func.attr.value == 'items' else 'v'} "  # type: ignore[attr-defined]
                     f"in {code(s.value)}:`, `for k, v in sorted({recv}.items()):`), or index the container "
                     f"(`{recv}[k]`)")
        if s.__class__ is cst.For and call_name(s.iter) in _PERMUTING_CALLS and s.iter.__class__ is cst.Call and \
                any(n in self.active and n in self.sequences for a in s.iter.args for n in names_in(a.value)):
            inner = [self.span_of(small, body) for st in s.body.body if isinstance(st, cst.SimpleStatementLine)
                     for small in st.body]  # (a comprehension's loop: the user's line is its statements')
            raise DifferentiationError(
                f"cannot differentiate through `{call_name(s.iter)}(...)` of a list of arrays yet: its items come "
                "in an order derivatives do not follow",
                span=self.nf.spans.get(id(s)) or next((sp for sp in inner if sp is not None), None),
                hint="loop over the list itself, in its order, or sort indices: `for i in sorted(range(len(xs)), "
                     "key=...)` then read `xs[i]`")

    def check_list_changes(self, s: cst.CSTNode, body: Sequence[Any]) -> None:
        """Refuse a list (or dict) changed in place by a method derivatives do not follow (``out.insert(0, g)``,
        ``out.sort()``, ``m.reverse()`` of a list another name holds too, ``d.setdefault(k, v)``,
        a statement of its own: was a wrong Jacobian under jacrev), where the container or the value carries
        derivatives (was: the tangent and cotangent lists kept the old order or length, a silently wrong
        Jacobian). ``frontend/list_methods.py`` rewrites an unaliased list's ``reverse``/``extend`` first."""
        call = s.value if s.__class__ is cst.Expr or s.__class__ is cst.Assign else None  # (exact: final classes)
        list_refusals.item_pop(self, call, s, body)  # (`out.pop(i)`, `d.pop(k)`)
        if not (s.__class__ is cst.Expr and call.__class__ is cst.Call and call.func.__class__ is cst.Attribute and
                call.func.attr.value in _LIST_CHANGES):
            return
        recv = code(call.func.value)
        if recv not in self.active and not any(n in self.active for a in call.args for n in names_in(a.value)):
            return
        raise DifferentiationError(
            f"cannot differentiate through `{self.shown(call, s, body)}` yet: it changes the list `{recv}` in place, "
            "an order derivatives do not follow" if call.func.attr.value not in ("setdefault", "popitem") else
            f"cannot differentiate through `{self.shown(call, s, body)}` yet: it changes the dict `{recv}` in place",
            span=self.span_of(s, body),
            hint=f"build the list in its final order with `{recv}.append(y)` (loop over reversed(range(n)) and "
                 f"reverse it once: `{recv} = {recv}[::-1]`), or rebind it: `{recv} = {recv}[:i] + [y] + ...` "
                 "of arrays stacked with np.stack")

    def reaches_result(self, names: list[str], body: Sequence[Any]) -> bool:
        """Whether the result would depend on ``names`` were they active (not: ``np.shape(list(d.values())[0])``)."""
        active = self.active | set(names)
        self.propagate(active, body, loose=True)
        return bool((active - self.active) & (_returned_names(self.nf) | set(self.pushed)))

    def loose_effect(self, s: cst.CSTNode) -> tuple[list[str], list[str]]:
        targets, srcs = self.effect(s)
        if isinstance(s, cst.Assign) and not srcs and self.op(s.value).kind == "static":
            return [n for t in s.targets for n in target_names(t.target)], _value_reads(s.value)
        return targets, srcs

    def shown(self, node: cst.CSTNode, small: cst.CSTNode, body: Sequence[Any]) -> str:
        """``node`` of the small statement ``small`` as the user wrote it (not with normalization's names)."""
        return user_code(node, self.span_of(small, body))

    def span_of(self, small: cst.CSTNode, body: Sequence[Any]) -> Any:
        """The user's source position of a small statement of ``body`` (None if it was written by srcjax)."""
        def lines(ss: Sequence[Any]) -> Iterable[Any]:
            for st in ss:
                if isinstance(st, cst.SimpleStatementLine):
                    yield st
                elif isinstance(st, (cst.If, cst.For, cst.While)):
                    yield from lines(st.body.body)
                    orelse = st.orelse
                    while orelse is not None:
                        yield from lines(orelse.body.body)
                        orelse = orelse.orelse if isinstance(orelse, cst.If) else None

        for line in lines(body):
            if any(b is small for b in line.body):
                return self.nf.spans.get(id(line))
        return None

    def op(self, value: cst.BaseExpression) -> Op:
        k = id(value)
        op = self.ops.get(k)
        if op is None:
            op = classify(value, self.program, self.nf)
            if op.kind == "static" and isinstance(value, cst.Call) and call_name(value) in ("tuple", "list") and \
                    len(value.args) == 1 and value.args[0].keyword is None and \
                    isinstance(value.args[0].value, cst.Name) and value.args[0].value.value in self.sequences:
                # tuple(items) of a list built here: the same items (cotangents packed like the list)
                op = Op("convert", operands={"x": value.args[0].value.value}, args={"kind": call_name(value)},
                        reads=op.reads)
            elif op.kind == "static" and (leaves := _leaves_call(value)) is not None:
                op = leaves  # tree_leaves(p) and its derivatives' forms
                op.reads = list(names_in(value))
            elif op.kind == "static" and isinstance(value, cst.Call) and call_name(value) == "float" and \
                    len(value.args) == 1 and value.args[0].keyword is None and \
                    isinstance(value.args[0].value, cst.Name):
                op = Op("copy", operands={"x": value.args[0].value.value}, reads=op.reads)  # float(x): x's value
            self.ops[k] = op
        return op

    def call_output_active(self, op: Op) -> bool:
        """Whether a helper's result depends on its active arguments (``range(np.ndim(x))`` does not)."""
        callee = self.program.functions.get(op.callee or "")
        if callee is None:
            return True
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        diff = differentiable_params(callee)
        pattern = tuple(p for p in params if p in bound and p in diff and
                        any(n in self.active for n in argument_reads(bound[p])))
        return bool(pattern) and result_active(self.program, callee, pattern)

    def called(self, op: Op, s: cst.CSTNode) -> bool:
        """:meth:`call_output_active`; a refusal in the callee records this call (a callee of srcjax's own, e.g.
        ``lax.associative_scan`` calling a lambda: placed at the user's call, not in srcjax's source)."""
        try:
            return self.call_output_active(op)
        except TranspileError as e:
            raise e.called_from(self.span_of(s, self.body)) from None

    def appended_arguments(self, op: Op) -> list[str]:
        """The names passed to a helper's parameters that it (or a helper it calls) appends to (``_tape``)."""
        callee = self.program.functions.get(op.callee or "")
        if callee is None:
            return []
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        return [bound[p] for p in _mutated_params(self.program, callee) if p in bound and bound[p].isidentifier()]

    def effect(self, s: cst.CSTNode) -> tuple[list[str], list[str]]:
        """(names written, names whose activity flows into them)."""
        if isinstance(s, cst.Assign):
            targets = [n for t in s.targets for n in target_names(t.target)]
            op = self.op(s.value)
            if op.kind == "prim":
                assert op.prim is not None
                if not op.prim.differentiable(op.args):
                    return targets, []
                return targets, list(op.operands.values()) + [
                    x for p in op.prim.array_seqs for x in _seq_names(op.args.get(p))] + [
                    x for p in op.prim.arrays if p not in op.operands  # index_add(z, i, (w_bar, b_bar))
                    for x in _seq_names(op.args.get(p))]
            if op.kind == "call" and not self.called(op, s):
                appended = self.appended_arguments(op)  # a tape the helper appends to holds what it reads
                return appended, list(op.reads) if appended else []
            if op.kind == "call":  # a list the helper appends to (a forward half's tape) changes too
                targets = targets + self.appended_arguments(op)
            if op.kind in ("copy", "pack", "call", "tape_pop", "custom", "dict", "getattr", "tree_add", "pack_like",
                           "convert", "record", "leaves"):
                src = list(op.reads)
                if op.kind == "tape_pop" and op.callee:
                    if set(targets) <= self.pushed.get(op.callee, set()):
                        # `y = _tape.pop()` undoing this function's `_tape.append(y)` (derivative code): each
                        # name gets its own value back, so keeps its own activity (a saved `range` stays inactive)
                        return [], []
                    src.append(op.callee)
                return targets, src
            return targets, []
        if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and isinstance(s.value.func, cst.Attribute) \
                and s.value.func.attr.value == "append":
            return [code(s.value.func.value)], [n for a in s.value.args for n in names_in(a.value)]
        if isinstance(s, cst.For):
            srcs = loop_sources(s)  # a loop over a container or array: its items carry derivatives
            if srcs:
                return [n for src in srcs for n in target_names(src.target)], [n for src in srcs
                                                                               for n in names_in(src.seq)]
            return target_names(s.target), []
        return [], []


def _per_element(s: cst.CSTNode) -> list[tuple[list[str], list[str]]]:
    """``(a, (b, c)) = (x, y)``: (targets, sources) per element of a tuple unpacked from a tuple literal
    (``(x,), (t,) = primals, tangents`` in a custom_jvp rule: ``x`` is not a tangent); [] otherwise."""
    pairs: list[tuple[list[str], list[str]]] = []  # (False from _split: an element is not a name)
    return pairs if isinstance(s, cst.Assign) and len(s.targets) == 1 and \
        _split(s.targets[0].target, s.value, pairs) and len(pairs) > 1 else []


def _split(target: cst.BaseExpression, value: cst.BaseExpression, pairs: list[tuple[list[str], list[str]]]) -> bool:
    """:func:`_per_element`'s pairs added to ``pairs`` (module-level: nested, a reference cycle per call)."""
    if (type(target) is cst.Tuple or type(target) is cst.List) and \
            (type(value) is cst.Tuple or type(value) is cst.List) and \
            len(target.elements) == len(value.elements) and \
            not any(type(e) is cst.StarredElement for e in (*target.elements, *value.elements)):
        return all(_split(t.value, v.value, pairs) for t, v in zip(target.elements, value.elements))
    if type(value) is not cst.Name:  # (exact types, as in unique_keys)
        return False
    pairs.append((target_names(target), [value.value]))
    return True


def hoisted_body(program: Program, nf: NormalizedFunction, active_params: Sequence[str], body: list[Any],
             act: Activity, names: Names, spans: dict[int, Any] | None = None) -> tuple[list[Any], Activity]:
    """``body`` with the sequences of active loops named (see hoist_loop_sequences), and its activity; ``spans``:
    the statements' positions in ``body`` (default ``nf``'s: a refusal there located at the user's loop)."""
    before = len(names.taken)
    hoisted = hoist_loop_sequences(body, act.active, names, nf.spans if spans is None else spans)
    if len(names.taken) == before:
        return body, act
    return hoisted, Activity(program, nf, active_params, hoisted)


def _pushed_names(body: Sequence[Any]) -> dict[str, set[str]]:
    """Per list, the names ``body`` appends to it, alone or in a tuple (``_tape.append((a, b,))``)."""
    out: dict[str, set[str]] = {}
    for s, _ in _walk(body):
        if s.__class__ is cst.Expr and s.value.__class__ is cst.Call and s.value.func.__class__ is cst.Attribute \
                and s.value.func.attr.value == "append" and len(s.value.args) == 1:
            v = s.value.args[0].value
            items = [e.value for e in v.elements] if isinstance(v, cst.Tuple) else [v]
            out.setdefault(code(s.value.func.value), set()).update(
                e.value for e in items if isinstance(e, cst.Name))
    return out


class FactsPerFunction:
    """Facts about one normalized function, kept as long as that function object lives (keyed by
    its identity, not by an ``id()`` a new object may reuse)."""

    def __init__(self) -> None:
        self._facts: dict[int, tuple[weakref.ref[NormalizedFunction], dict[Any, Any]]] = {}

    def of(self, nf: NormalizedFunction) -> dict[Any, Any]:
        entry = self._facts.get(id(nf))
        if entry is None or entry[0]() is not nf:
            key = id(nf)

            def forget(ref: weakref.ref[NormalizedFunction]) -> None:
                if self._facts.get(key, (None, None))[0] is ref:
                    del self._facts[key]

            entry = self._facts[key] = (weakref.ref(nf, forget), {})
        return entry[1]


_CALL_ACTIVITY = FactsPerFunction()  # callee -> {its active parameters: whether its result is active}


def result_active(program: Program, callee: NormalizedFunction, pattern: tuple[str, ...]) -> bool:
    """Whether ``callee``'s result depends differentiably on its parameters ``pattern`` (``batch_size_of(x)``, an
    integer from ``x``'s shape, does not). Cached per callee and pattern."""
    known = _CALL_ACTIVITY.of(callee)
    hit = known.get(pattern)
    if hit is None:
        known[pattern] = True  # recursion: assume active
        sub = Activity(program, callee, pattern)
        hit = known[pattern] = bool(_returned_names(callee) & sub.active)
    return hit
_MUTATED = FactsPerFunction()  # function -> {"params": the parameters it appends to}


def _mutated_params(program: Program, nf: NormalizedFunction) -> set[str]:
    """Parameters of ``nf`` that it (or a helper it passes them to) appends to."""
    known = _MUTATED.of(nf)
    if "params" in known:
        return known["params"]  # type: ignore[no-any-return]
    known["params"] = set()  # recursion: nothing yet
    params = {p.name.value for p in nf.plain_fdef.params.params}
    out: set[str] = set()
    for st, _ in _walk(nf.plain_fdef.body.body):
        call = st.value if isinstance(st, (cst.Expr, cst.Assign)) else None
        if not isinstance(call, cst.Call):
            continue
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "append" and \
                isinstance(call.func.value, cst.Name) and call.func.value.value in params:
            out.add(call.func.value.value)
        elif isinstance(call.func, cst.Name) and call.func.value in program.functions:
            callee = program.functions[call.func.value]
            cparams = [p.name.value for p in callee.plain_fdef.params.params]
            bound = {cparams[i]: code(a.value) for i, a in enumerate(call.args) if a.keyword is None
                     and i < len(cparams)}
            bound.update({a.keyword.value: code(a.value) for a in call.args if a.keyword is not None})
            out |= {bound[p] for p in _mutated_params(program, callee) if bound.get(p) in params}
    known["params"] = out
    return out


def _returned_names(nf: NormalizedFunction) -> set[str]:
    out: set[str] = set()
    for s, _ in _walk(nf.plain_fdef.body.body):
        if isinstance(s, cst.Return) and s.value is not None:
            out |= set(names_in(s.value))
    return out


def argument_reads(arg: str) -> list[str]:
    """The names whose values a call argument (source text) passes on: not ``h`` of ``h.shape`` (a shape
    carries no derivative: ``srcjax.random.normal(key, h.shape)`` differentiates nothing in the callee)."""
    return _value_reads(expr(arg))


def _leaves_call(value: cst.BaseExpression) -> Op | None:
    """``tree_leaves(p)`` (``srcjax.tree_util.tree_leaves`` under any module alias) of a name: p's leaves in
    flatten order (a list; linear in p), and the forms derivatives write of it (each linear in its first
    operand, the other giving a structure): ``leaves_like(t, p)`` (a tangent's leaves), ``from_leaves(p, g)``
    (a cotangent from its leaves'). None for anything else."""
    if not isinstance(value, cst.Call) or any(a.keyword is not None or a.star for a in value.args) or \
            not all(isinstance(a.value, cst.Name) for a in value.args):
        return None
    name = code(value.func).rsplit(".", 1)[-1]
    args = [a.value.value for a in value.args]  # type: ignore[attr-defined]
    if name == "tree_leaves" and len(args) == 1:
        return Op("leaves", operands={"x": args[0]}, args={"form": "tree_leaves"})
    if name == "leaves_like" and len(args) == 2:
        return Op("leaves", operands={"x": args[0]}, args={"form": "leaves_like", "like": args[1]})
    if name == "from_leaves" and len(args) == 2:
        return Op("leaves", operands={"x": args[1]}, args={"form": "from_leaves", "like": args[0]})
    return None


_TREE_FUNCTIONS = {"tree_leaves", "tree_flatten", "tree_map", "tree_unflatten", "tree_reduce", "tree_transpose",
                   "leaves_like", "from_leaves"}  # (the last two: what tree_map(f, p, g) is written as)


def _value_reads(node: cst.BaseExpression, follow: bool = False) -> list[str]:
    """Names whose *values* an expression reads: not those only passed to non-primitive calls
    (``np.shape(a)``, ``reduce_axes(a, axis)``) or read for ``.shape``/``.ndim``/``.dtype``. In a comprehension
    (``follow``), a call of the user's function reads its arguments (:func:`_static_query`)."""
    out: list[str] = []
    if type(node) is cst.Call and type(node.func) is cst.Name:  # container builtins: their args
        for a in node.args:
            out.extend(_value_reads(a.value, follow))
        return out
    if type(node) is cst.ListComp or type(node) is cst.GeneratorExp:
        # an iterable's values matter only if the loop variables' values do
        inner = _value_reads(node.elt, True)
        fors: list[cst.CompFor] = []
        f: cst.CompFor | None = node.for_in
        while f is not None:
            fors.append(f)
            for c in f.ifs:
                inner += _value_reads(c.test, True)
            f = f.inner_for_in
        for f in reversed(fors):
            targets = set(target_names(f.target))
            if targets & set(inner):  # (`d` in `for k, v in d.items()`, `a` in `zip(a, b)`)
                inner += _iter_reads(f.iter, True)
            inner = [n for n in inner if n not in targets]
        return inner
    v = _ValueReads(primitive_paths(), follow)
    v.walk(node)
    bound = comprehension_targets(node)
    return [n for n in v.out if n not in bound]


class _ArrayNames(Visitor):
    """The names an array argument reads, not those it reads only the shape of (``q.shape[-1]``)."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def visit_Name(self, n: cst.Name) -> None:
        self.out.append(n.value)

    def visit_Attribute(self, n: cst.Attribute) -> bool:
        if n.attr.value not in ("shape", "ndim", "dtype", "size"):
            self.walk(n.value)
        return False


class _ValueReads(_ArrayNames):
    """:func:`_value_reads`' walker: the names read, in order (not those passed to calls that are not
    primitives)."""

    def __init__(self, paths: Any, follow: bool = False) -> None:
        super().__init__()
        self.paths = paths
        self.follow = follow

    def visit_Call(self, n: cst.Call) -> bool:
        f = code(n.func)
        if f in self.paths or f == "np.astype":
            return True
        if isinstance(n.func, cst.Attribute) and n.func.attr.value in ("items", "values", "copy") and not n.args:
            self.walk(n.func.value)  # `p.items()`: the container's values (in `sorted(p.items())`)
        if f.rsplit(".", 1)[-1] in _TREE_FUNCTIONS or f in _HOLDING_CALLS:  # `tree_leaves(p)`, `list(xs)[i]`: their
            # items' values (was: `[list(xs)[i] for i in order]` read nothing, a zero derivative, silently)
            for a in n.args:  # (read as `_value_reads` reads an argument: `tree_leaves(f(x))` reads x, also
                self.out.extend(_value_reads(a.value, self.follow))  # as `srcjax.tree_util.tree_leaves(f(x))`)
        elif self.follow and not _static_query(f):  # a call srcjax follows (the user's `g(x)`, `helpers.f(x)`,
            if isinstance(n.func, cst.Attribute):  # a method) in a comprehension's element or iterable: its result
                self.walk(n.func.value)  # reads its arguments (was: `sum(g(x) * k for k in range(3))` read nothing,
            for a in n.args:  # a zero derivative, silently)
                self.out.extend(_value_reads(a.value, True))
        return False

    def visit_Subscript(self, n: cst.Subscript) -> bool:
        # `sh[ax]`: the value indexed; a key picks an element and carries no derivative (an axis
        # popped from a tape with the arrays it came with: the Hessian of `np.diff(x, append=c)`)
        self.walk(n.value)
        return False

    def visit_Comparison(self, n: cst.Comparison) -> bool:
        return False  # a bool: `i == axis` in `slice(lo, hi) if i == axis else slice(None)`


_SHAPE_QUERIES = {"shape", "ndim", "size", "result_type", "dtype", "len", "isinstance", "range", "type"}
_HELPERS = frozenset(ADJOINT_IMPORTS) | frozenset(batched_helpers.__all__)


def _static_query(f: str) -> bool:
    """Whether a call of ``f`` (source text) gives a value known at transpile time from its arguments' shapes,
    types or keys (``np.shape(a)``, ``len(xs)``, a NumPy function that is not a primitive), not their data."""
    return f in _STATIC_RESULT_CALLS or f.rsplit(".", 1)[-1] in _SHAPE_QUERIES or \
        f.startswith(("np.", "numpy.", "srcjax.")) or f in _HELPERS  # (srcjax's own helpers: as before, not followed)


def _comprehension_item_reads(node: cst.BaseExpression, active: set[str]) -> list[str]:
    """The active names a comprehension iterates over, when its elements read the items' values."""
    fors: list[cst.CompFor] = []
    f = getattr(node, "for_in", None)
    while isinstance(f, cst.CompFor):
        fors.append(f)
        f = f.inner_for_in
    bound = {n for c in fors for n in target_names(c.target)}
    parts = [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]  # type: ignore[attr-defined]
    if not any(n in bound for p in parts for n in _value_reads(p, True)):
        return []
    return [n for c in fors for n in _iter_reads(c.iter, True) if n in active]


def _iter_reads(it: cst.BaseExpression, follow: bool = False) -> list[str]:
    """The names whose values a loop over ``it`` hands out: ``params`` in ``params.items()``, ``a``
    and ``b`` in ``zip(a, b)``; not ``r`` in ``range(np.ndim(r))``."""
    if isinstance(it, cst.Call):
        f = it.func
        if isinstance(f, cst.Attribute) and f.attr.value in ("items", "values"):
            return _iter_reads(f.value, follow)
        if isinstance(f, cst.Name) and f.value in ("zip", "enumerate", "reversed", "list", "tuple", "sorted"):
            return [n for a in it.args for n in _iter_reads(a.value, follow)]
    return _value_reads(it, follow)


def _stores_arrays(node: cst.BaseExpression) -> bool:
    """Expressions kept nested (comprehensions, ...) or container builtins over arrays."""
    if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.BooleanOperation, cst.IfExp, cst.DictComp)):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return node.func.value in ("list", "tuple", "zip", "enumerate", "reversed", "sum", "sorted", "map",
                                   "dict", "max", "min")
    return False


def _seq_names(v: Any) -> list[str]:
    if isinstance(v, list):
        return [x for x in v if isinstance(x, str) and x.isidentifier()]
    if isinstance(v, str):
        if v.isidentifier() and not keyword.iskeyword(v):  # (a name: itself; a number, a string: none)
            return [v]
        if parsed.is_literal(v):
            return []
        try:
            node = parse_expression(v)
        except cst.ParserSyntaxError:
            return []
        reads = _ArrayNames()
        reads.walk(node)
        return [n for n in reads.out if n not in comprehension_targets(node)]
    return []


# calls whose result carries no derivative even when they read an active value (shapes, types, counts)
# methods of Python containers whose result is a key, a count or the container's own items (followed as such)
_LIST_CHANGES = frozenset({"insert", "remove", "sort", "clear", "reverse", "extend", "setdefault", "popitem"})
_CONTAINER_METHODS = {"keys", "values", "items", "get", "copy", "index", "count", "pop", "_replace", "_asdict"}

_METHOD_HINT = ("derivatives through methods are not followed yet: write a module-level function that takes the "
                "object, `def {1}({0}, ...)`, and call it as `{1}({0}, ...)`")


def _method_hint(func: cst.BaseExpression) -> str | None:
    """The hint for ``obj.method(...)`` called on a name (None for ``np.f``/``math.f``: a module's function)."""
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
            func.value.value not in ("np", "numpy", "math", "srcjax", "jnp", "lax"):
        return _METHOD_HINT.format(func.value.value, func.attr.value)
    return None


def _chosen_function_hint(func: cst.BaseExpression, body: Sequence[Any]) -> str | None:
    """The hint for ``act(x)`` of a local name the function binds to a function or object it takes from a container
    or picks by a test (``act = ACTS[cfg[...]]``, ``act = np.tanh if ... else relu``, ``layers[i](h)``; None: another
    callee)."""
    if not isinstance(func, cst.Name):
        return None
    values = [st.value for st, _ in _walk(body) if isinstance(st, cst.Assign) and
              any(func.value in target_names(t.target) for t in st.targets)]
    if not values or not all(isinstance(v, (cst.Subscript, cst.IfExp, cst.Name, cst.Attribute)) for v in values):
        return None  # (`m = Scaled(W)`: an object built by a call, refused by the generic hint)
    return ("the callee is a function or an object taken from a container or chosen by an `if` while tracing: "
            "derivatives and vmap follow a function called by its own name (call each one under an `if` on the "
            "setting, e.g. `if cfg[\"activation\"] == \"tanh\": h = np.tanh(z)`) and an object built in the "
            "function (`layer = Dense(W, b)`, or a `for` loop over a list of such constructions)")


_STATIC_RESULT_CALLS = {
    "len", "range", "isinstance", "type", "int", "bool", "float", "tuple", "list", "enumerate", "zip",
    "reversed", "str", "repr", "np.shape", "np.ndim", "np.size", "np.result_type", "np.dtype", "dict",
    "slice", "sorted", "divmod", "min", "max", "any", "all", "map", "is_tree", "by_leaves",
    "index_key",  # (an index: srcjax.adjoint's, bound by transforms/inline_calls.py)
    "einsum_terms",  # (an einsum's subscripts as terms: srcjax.adjoint's, anf.STATIC_HELPER_CALLS)
    "item_keys",  # (a container's keys: srcjax.pytree's)
    "zeros_like", "ones_like",  # (srcjax.adjoint's: classify_container)
    # integer index arrays of static sizes, dtype queries (frontend/callees.py: STATIC_NUMPY)
    "np.indices", "np.triu_indices", "np.tril_indices", "np.finfo", "np.iinfo", "np.promote_types",
    "np.can_cast", "np.issubdtype", "np.hanning", "np.hamming", "np.bartlett", "np.blackman", "np.kaiser",
    "np.ndindex",
}


# calls whose items are their argument's items in another order (or some of them): not followed by derivatives
_PERMUTING_CALLS = {"sorted", "filter", "iter", "map"}

# calls whose result holds their arguments' items (their values matter where the result's do)
_HOLDING_CALLS = {"list", "tuple", "sorted", "reversed", "zip", "enumerate", "iter", "next", "dict", "filter", "map"}


def _items_view(value: cst.Call) -> str | None:
    """``d`` of ``d.items()``/``d.values()`` (a name), else None."""
    f = value.func
    if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in ("items", "values") and \
            not value.args:
        return f.value.value
    return None


def _local_sequences(body: Sequence[Any]) -> set[str]:
    """Names bound to lists or tuples built here: literals (``items = []``), and ``tuple``/``list``
    of those."""
    out: set[str] = set()
    for st, _ in _walk(body):
        if isinstance(st, cst.Assign) and len(st.targets) == 1 and isinstance(st.targets[0].target, cst.Name):
            v = st.value
            if type(v) is cst.List or type(v) is cst.Tuple or (
                    call_name(v) in ("tuple", "list") and len(v.args) == 1  # type: ignore[attr-defined]
                    and isinstance(v.args[0].value, cst.Name) and v.args[0].value.value in out):  # type: ignore[attr-defined]
                out.add(st.targets[0].target.value)
    return out


def is_append(st: cst.CSTNode) -> bool:
    return st.__class__ is cst.Expr and st.value.__class__ is cst.Call and \
        st.value.func.__class__ is cst.Attribute and st.value.func.attr.value == "append" and \
        isinstance(st.value.func.value, cst.Name) and len(st.value.args) == 1


def first_reads(body: Sequence[Any]) -> dict[str, int]:
    """Lists appended to -> the program-order position (of :func:`_walk`) of their first read that is
    not an append (``b = items[0]``, ``for v in items``, ``np.stack(items)``)."""
    lists = {code(st.value.func.value) for st, _ in _walk(body) if is_append(st)}
    out: dict[str, int] = {}
    for k, (st, _) in enumerate(_walk(body)):
        if isinstance(st, cst.Assign):
            node: Any = st.value
        elif isinstance(st, (cst.If, cst.While)):
            node = st.test
        elif isinstance(st, cst.For):
            node = st.iter
        elif is_append(st):
            node = st.value.args[0].value
        else:
            node = st
        for n in names_in(node):
            if n in lists and n not in out:
                out[n] = k
    return out


def _read_outside(body: Sequence[Any], fdef: cst.FunctionDef) -> bool:
    """Whether a statement of ``body`` reads the name of the nested function ``fdef`` (outside ``fdef``)."""
    stack: list[cst.CSTNode] = list(body)
    while stack:
        n = stack.pop()
        if n is fdef:
            continue
        if isinstance(n, cst.Name) and n.value == fdef.name.value:
            return True
        stack.extend(syntax_children(n))
    return False


def _comprehensions(body: Sequence[Any]) -> list[cst.CSTNode]:
    """The comprehensions and generator expressions of ``body``'s statements."""
    stack: list[cst.CSTNode] = list(body)
    out: list[cst.CSTNode] = []
    while stack:
        n = stack.pop()
        if type(n) in _COMPREHENSIONS:
            out.append(n)
        else:
            stack.extend(syntax_children(n))
    return out


def find_nested_def(node: cst.CSTNode) -> cst.FunctionDef | None:
    if type(node) is cst.SimpleStatementLine:  # (small statements hold expressions only: no def in them)
        return None
    return next((n for n in walk(node) if type(n) is cst.FunctionDef), None)  # (the first, in source order)


def upward_exposed(stmts: Sequence[Any]) -> set[str]:
    """Names the statements may read before assigning them (an ``if`` assigns what both
    branches assign; a loop's body may run zero times): their live-in set with nothing live
    after them, by the one liveness analysis (:class:`~srcjax.frontend.liveness.Liveness`)."""
    return Liveness(stmts).live_in(stmts, set(), None)


def _own_refusal(nf: NormalizedFunction, func: cst.BaseExpression) -> tuple[str, str] | None:
    """``(message, hint)`` of a callee that says why srcjax cannot read it (``srcjax_refusal``: a
    pmapped function, or ``srcjax.pmap(...)`` itself), found in the function's closure or globals."""
    fn = getattr(nf, "fn", None)
    if isinstance(func, cst.Name):  # a temporary the normalizer made: `pmap = srcjax.pmap(f)`, then `pmap(x)`
        made = [a.value for a in _assignments(nf.fdef) if len(a.targets) == 1 and
                isinstance(a.targets[0].target, cst.Name) and a.targets[0].target.value == func.value]
        if len(made) == 1 and isinstance(made[0], cst.Call):
            func = made[0]
    if isinstance(func, cst.Call):
        func = func.func
    parts = code(func).split(".")
    if fn is None or not all(p.isidentifier() for p in parts):
        return None
    try:
        space = {**fn.__globals__, **dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in
                                                                          fn.__closure__ or ())))}
    except (AttributeError, ValueError):  # pragma: no cover - not a plain function, or an empty cell
        return None
    v = space.get(parts[0])
    for p in parts[1:]:
        v = getattr(v, p, None)
    own = getattr(v, "srcjax_refusal", None)
    return own if isinstance(own, tuple) else None


def _assignments(node: cst.CSTNode) -> list[cst.Assign]:
    return [n for n in walk(node) if type(n) is cst.Assign]  # (read-only: libcst's visitor rebuilt every node)
