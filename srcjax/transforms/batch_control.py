"""vmap of Python control flow (transforms/batch.py's ``FunctionWriter`` calls these).

- an ``if`` whose test is not batched stays an ``if``; a name batched on one path only is
  broadcast on the other;
- a ``for`` over batched rows walks them (``batch_rows``); a ``while`` on an unbatched test stays;
- a Python ``if``/``while`` testing a batched value (not only its shape) is control flow on data
  the front end left to the lowering (its test read a parameter that might have been a Python
  value): :class:`DataTest` makes the batcher functionalize the function again knowing it, so
  the ``if`` becomes a per-example select and the ``while`` JAX's batched while.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from ..adjoint import is_saved_list_name, is_tape_name
from ..frontend.binding_times import STATIC, BindingTimes
from ..frontend.liveness import Liveness
from ..frontend.names import code, names_in, renamed, target_names, walk
from ..frontend.resolve import LIBRARY_MODULES, STRUCTURAL_MODULES
from . import batch_errors
from .batch_dict_keys import keyed_dict_loop
from .batch_state import Repeated, Stack, Tree, any_batched, element, join

if TYPE_CHECKING:
    from .batch import FunctionWriter


class DataTest(Exception):  # noqa: N818 (a signal, caught by the batcher)
    """A Python ``if``/``while`` in ``function`` tests the batched values ``names``: write the function
    again with its control flow on them functionalized (:meth:`FunctionWriter.data_test`)."""

    def __init__(self, function: str, names: list[str]) -> None:
        super().__init__(function, names)
        self.function, self.names = function, names


def _static_branch(w: FunctionWriter, s: cst.If, body: Any, ind: int) -> None:
    """An ``if``'s first block; of a generated Jacobian's ``if by_leaves(x)`` (its container path), one vmap
    cannot batch raises its error where it runs, not where the array path (the ``else``) is taken."""
    if not (w.only_shapes(s.test) and _container_path(w, s.test)):
        w.block(body, ind)
        return
    start, st = len(w.lines), dict(w.st)
    try:
        w.block(body, ind)
    except batch_errors.BatchingError as e:
        if type(e).__name__ == "Grown":  # (the batcher's own signal: written again)
            raise
        del w.lines[start:]
        w.st = st
        w.emit(f"raise NotImplementedError({e.message!r})", ind)


def _container_path(w: FunctionWriter, test: cst.BaseExpression) -> bool:
    """Whether ``test`` is the marker a Jacobian writer puts on its container path (``jacobian_source``):
    a call of ``by_leaves``, written in the test or bound to the name the test reads (ANF:
    ``by_leaves_1 = by_leaves(x)``; ``or_ = by_leaves_1 or by_leaves_2``; derivative and batched copies
    of that source keep the call, which is static)."""
    cached = getattr(w, "_bound_values", None)
    if cached is not None and cached[0] is w.nf:  # (read once per function written)
        bound: dict[str, cst.BaseExpression] = cached[1]
    else:
        bound = {}
        for n in _assignments(w.nf.fdef.body):
            bound.setdefault(n.targets[0].target.value, n.value)  # type: ignore[attr-defined]
        w._bound_values = (w.nf, bound)  # type: ignore[attr-defined]
    todo, seen = [test], set()
    while todo:
        e = todo.pop()
        if type(e) is cst.Call and code(e.func) == "by_leaves":
            return True
        if type(e) is cst.Name and e.value in bound and e.value not in seen:
            seen.add(e.value)
            todo.append(bound[e.value])
        elif type(e) is cst.BooleanOperation:
            todo += [e.left, e.right]
        elif type(e) is cst.UnaryOperation:
            todo.append(e.expression)
    return False


_BODIES = frozenset({cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine})
_BLOCKS = frozenset({cst.If, cst.For, cst.While, cst.Else, cst.With})


def _assignments(body: cst.BaseSuite) -> list[cst.Assign]:
    """The one-name assignments of a function's body, in its blocks too (not in nested functions): a walk
    over statements only (libcst's ``children`` visits every node)."""
    out: list[cst.Assign] = []
    todo: list[Any] = [body]
    while todo:
        n = todo.pop()
        if type(n) is cst.Assign:
            if len(n.targets) == 1 and type(n.targets[0].target) is cst.Name:
                out.append(n)
        elif type(n) in _BODIES:  # (by exact class: isinstance of libcst nodes is an ABC check, a Python call)
            todo += n.body
        elif type(n) in _BLOCKS:
            other = getattr(n, "orelse", None)
            todo += [n.body, *([other] if other is not None else [])]
    return out


def if_(w: FunctionWriter, s: cst.If, ind: int) -> None:
    test = code(s.test)
    if any(any_batched(w.state(n)) for n in names_in(s.test)):
        broadcast = w.data_test(s)
        test = w.static_expr(s.test, s)
        if broadcast:
            test = f"batch_static({test})"
    w.emit(f"if {test}:", ind)
    before = dict(w.st)
    _static_branch(w, s, s.body.body, ind + 1)
    n_then = len(w.lines)
    st_then = w.st
    w.st = dict(before)
    other: list[Any] = []
    if s.orelse is not None:
        other = [s.orelse] if type(s.orelse) is cst.If else list(s.orelse.body.body)
    else_lines_start = len(w.lines)
    w.block(other, ind + 1)
    st_else = w.st
    else_lines = w.lines[else_lines_start:]
    del w.lines[else_lines_start:]
    # a name batched on one path only: broadcast on the other
    joined = dict(st_else)
    fix_then: list[str] = []
    fix_else: list[str] = []
    for v in sorted(set(st_then) | set(st_else)):  # (sorted: the same source in every process)
        a, b = st_then.get(v, False), st_else.get(v, False)
        # (a name bound on one path only, and not before: its one binding's state; the other path leaves it
        # unbound, or bound as before by an earlier iteration of a loop this `if` is in, in that state)
        j = a if v not in st_else else b if v not in st_then else join(a, b)
        joined[v] = j
        # (a conversion that is the name itself is not written: `v = v` does nothing, and reads a name that
        # path may leave unbound, bound only on the other branch of an earlier `if`)
        if v in st_then and a != j and (c := w.convert(v, a, j)) != v:
            fix_then.append(f"{v} = {c}")
        if v in st_else and b != j and (c := w.convert(v, b, j)) != v:
            fix_else.append(f"{v} = {c}")
    then_lines = w.lines[:n_then]
    w.lines = then_lines
    for f in fix_then:
        w.emit(f, ind + 1)
    if w.lines[-1].strip().endswith(":") and w.lines[-1].startswith("    " * ind + "if"):
        w.emit("pass", ind + 1)
    if other or fix_else:
        w.emit("else:", ind)
        w.lines += else_lines
        for f in fix_else:
            w.emit(f, ind + 1)
        if not else_lines and not fix_else:
            w.emit("pass", ind + 1)
    w.st = joined


def loop(w: FunctionWriter, s: cst.For | cst.While, ind: int) -> None:
    before = dict(w.st)
    # names batched by the loop body must be batched before it (they are carried around)
    for v in w.forced:
        if v in w.st and w.st[v] is not True:
            if (made := w.convert(v, w.st[v], True)) != v:  # (not `d = d`: batched item by item already)
                w.emit(f"{v} = {made}", ind)
            w.st[v] = True
    if isinstance(s, cst.For):
        it = code(s.iter)
        keys_of = keyed_dict_loop(w, s)  # (`for k in g: out[k] = m[k] + g[k]`, g a dict mapped whole: its keys)
        walked = (f"batch_keys({keys_of})", False) if keys_of is not None else \
            w.iterator(s.iter) if any(any_batched(w.state(n)) for n in names_in(s.iter)) else None
        if walked is not None:  # zip / enumerate / .items() of containers: element by element
            it, elem = walked
            w.emit(f"for {code(s.target)} in {it}:", ind)
            w.bind_target(s.target, elem)
        elif type(s.iter) is not cst.Name and any(any_batched(w.state(n)) for n in names_in(s.iter)):
            # a computed sequence (``for ax in reduce_axes(a, axis)``): batched on its own line first
            seq = w.names.fresh("seq")
            value, st = w.rhs(s.iter, ind, s, cst.Name(seq))  # type: ignore[arg-type]
            w.emit(f"{seq} = {value}", ind)
            w.bind(seq, st)
            it = seq
            if isinstance(st, (Tree, Stack)):  # a container (`for layer in p["layers"]`): item by item, as a name
                it, elem = w.iterator(cst.Name(seq)) or (seq, st)
                w.emit(f"for {code(s.target)} in {it}:", ind)
                w.bind_target(s.target, elem)
                walked = (it, elem)
            else:
                it_state = w.iter_state(cst.Name(seq), s)
        else:
            it_state = w.iter_state(s.iter, s)
        if walked is None:
            if it_state is True:
                it = f"batch_rows({it})"
            w.emit(f"for {code(s.target)} in {it}:", ind)
            if isinstance(it_state, Stack):  # a list (of unbatched tuples: `for W, b in layers`): an element's state
                w.bind_target(s.target, element(it_state))  # (was the list's: `b` read as a list, `h @ W + b` its
            else:  # items broadcast whole, a (3, 3) bias against a (3, 5, 3) product)
                for t in target_names(s.target):
                    w.st[t] = it_state if not isinstance(it_state, Tree) else any_batched(it_state)
        one = s.target.value if type(s.target) is cst.Name else ""
        if one in w.forced and isinstance(w.st.get(one), Tree) and any_batched(w.st[one]):  # (`for t in ts`: an
            if (made := w.convert(one, w.st[one], True)) != one:  # item of a list read whole,
                w.emit(f"{one} = {made}", ind + 1)
            w.st[one] = True  # tree_leaves(t): batched throughout, from the top of the body)
    else:
        test = code(s.test)
        if any(any_batched(w.state(n)) for n in names_in(s.test)):
            broadcast = w.data_test(s)
            test = w.static_expr(s.test, s)
            if broadcast:
                test = f"batch_static({test})"
        w.emit(f"while {test}:", ind)
    entry = dict(w.st)
    n = len(w.lines)
    w.block(s.body.body, ind + 1)
    grown = [v for v, st in w.st.items() if isinstance(st, Stack) and _grown_list_read(s, v, st, entry.get(v))
             and not entry[v].entries]  # type: ignore[union-attr]
    if grown:  # (written again, the lists batched item by item from the top: `for kj in ks` reads batched rows)
        del w.lines[n:]
        w.st.clear()
        w.st.update(entry)
        w.st.update({v: Repeated((True,)) for v in grown})
        entry = dict(w.st)
        w.block(s.body.body, ind + 1)
    if len(w.lines) == n:
        w.emit("pass", ind + 1)
    # (a name first bound in the body that the next step reads before binding it again is carried too: `if i == 0:
    # acc = np.zeros(n)`, then `acc = acc * x`)
    exposed = Liveness(s.body.body).live_in(s.body.body, set(), None)
    rebound = _rebound(s.body.body)
    for v, st in w.st.items():
        if isinstance(st, Stack):  # (pushed or popped once per iteration: not a carried value)
            if _grown_list_read(s, v, st, entry.get(v)):  # (items there at the top, unbatched: not rewritten)
                raise w.error(f"vmap: cannot batch the list '{v}' read in a loop that appends batched values to "
                              "it", s, hint="name the items (k1 = ..., k2 = ...), or read the list after the loop "
                                            "that builds it")
            top = entry.get(v, False)
            if v in rebound and (v in before or v in exposed) and isinstance(top, (Tree, Stack)) and \
                    join(st, top) != top:
                # a list bound again to one the body built (`prev = cur` of `cur = [2 * p for p in prev]`), carried
                # around: the next iteration reads the new list's batched items where the body, written for the
                # first, broadcast `prev[1]` of `prev = [x, 1.0]` again (vmap(grad): (3,) against (3, 3), or a
                # silently wrong gradient); batched from before the loop
                w.forced.add(v)
            continue
        top = entry.get(v, False)
        if (v in before or v in exposed) and (any_batched(st) != any_batched(top) or
                            isinstance(top, Tree) and join(st, top) != top or
                            isinstance(st, Tree) and isinstance(top, Tree) and join(st, top) != st):
            # (batched at the end, not at the top; or at the top, not at the end: `f_bar = zeros_like(f)`
            # closing a body that reads `f_bar` batched: the next iteration would read it unbatched; a
            # container with a leaf batched by the body: `carry_dot = (q_dot, p_dot)` whose `p_dot` is
            # unbatched at the loop's entry, batched after a step; or batched at the entry, unbatched after a
            # step: `c = (q * p, np.ones(3))`)
            w.forced.add(v)
    for v, st in list(w.st.items()):
        if not isinstance(st, Stack):
            w.st[v] = join(st, entry.get(v, st))


def _rebound(body: Any) -> set[str]:
    """The names ``body`` binds by a plain assignment (``prev = cur``), not only pushes to (a nested def's too:
    conservative)."""
    return {x for st in body for n in walk(st) if type(n) is cst.Assign for t in n.targets  # type: ignore[attr-defined]
            for x in target_names(t.target)}


def _grown_list_read(s: cst.For | cst.While, v: str, end: Stack, top: Any) -> bool:
    """Whether ``v`` is a list the loop appends batched values to and reads whole in its body (``for kj in ks:``,
    ``zip(row, ks)``, ``sum(ks)``), whose items were unbatched (or none) at the top: the body, written once for
    the first iteration's list, read the items a later iteration appended batched as unbatched (was: an answer
    of the wrong shape, silently; an explicit Runge-Kutta step over a Butcher tableau). Not a derivative's tape
    (``batch_tapes.py`` follows those push by push). An empty list is written
    again batched item by item from the top (``Repeated((True,))``: every push broadcast); one holding unbatched
    items there is refused."""
    if is_saved_list_name(v) or not isinstance(top, Stack) or isinstance(top, Repeated) or \
            any_batched(element(top)) or \
            not any_batched(element(end)) or len(end.entries) == len(top.entries):
        return False
    reads = [n for n in _walk_nodes(s.body) if type(n) is cst.Name and n.value == v]
    moves = [n for n in _walk_nodes(s.body) if type(n) is cst.Attribute and type(n.value) is cst.Name and
             n.value.value == v and n.attr.value in ("append", "pop")]
    return len(reads) > len(moves)


def _walk_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    todo = [node]
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(n.children)
    return out


def data_test(w: FunctionWriter, s: cst.If | cst.While) -> bool:
    """A Python ``if``/``while`` testing a batched value (not only its shape): control flow on data,
    which the front end left to the lowering (the test read a parameter that might have been a
    Python value); the function is functionalized again knowing it (:class:`DataTest`). True where
    the test is static, its batched values broadcast (a derivative's flags on a batched tape: vmap of
    jacrev of a loop with `break`): the `if` reads one row of it (``batch_static``)."""
    if getattr(w.nf.fn, "__module__", "") in LIBRARY_MODULES:  # (srcjax's helpers: their tests are static; those
        # of derivatives' and vmap's own helpers, on a container's structure, are the same in every example: one
        # read from a tape the batch broadcast is read from its first row, as their loops' counts)
        return getattr(w.nf.fn, "__module__", "") in STRUCTURAL_MODULES
    if w.only_shapes(s.test):  # (`while is_tree(x)`, `if x.shape[0] > 2`: static)
        return False
    if w.bta is None:
        w.bta = BindingTimes(w.nf, w.nf.fdef, helpers=w.program.functions)
    # (a name a branch on batched data binds to `taken(x, test)`: the function's own `x`)
    test = renamed(s.test, {a: cst.Name(n) for a, n in w.guards.items()}) if w.guards else s.test
    batched = list(dict.fromkeys(w.guards.get(n, n) for n in names_in(s.test) if any_batched(w.state(n))))
    # (`eq = x.ndim == 2`, then `if eq`; a name the analysis does not know, of a lax body written in line
    # (`for i in range(3): if x[i] > 0`), it takes for static: not trusted)
    if all(n in w.bta.locals for n in batched) and w.bta.of(test) == STATIC:
        return any(n in w.forced or n in w.tape_rows for n in batched)  # (else a Python value: `x.ndim == 2`)
    known = w.b.data_names.get(w.nf.name, set())
    if not set(batched) <= known:  # (the batched parameters too: data, whatever names the test has)
        # (not a tape: what a derivative pops from it has its own binding time; all of it data would make a saved
        # structure flag, `if not__1:` of `not keepdims` around a pop, a branch on data: logsumexp's vmap(grad))
        raise DataTest(w.nf.name, batched + sorted(p for p in (w.params or ()) if any_batched(w.state(p)) and
                                                   not is_tape_name(p)))
    kind = "an `if`" if type(s) is cst.If else "a `while` loop"
    if any(key is not None for _, key in batch_errors.sources(w, batched)):  # `if p["act"] == "relu"`: a string
        raise batch_errors.mapped_error(w, f"the test of {kind} (not turned into a per-example choice)", batched,
                                        s, "")
    raise w.error(f"vmap: {kind} on batched data that srcjax could not turn into a per-example "
                     "choice", s, hint="write it with srcjax.lax.cond / srcjax.lax.while_loop, or np.where")
