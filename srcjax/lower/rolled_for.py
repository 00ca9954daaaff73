"""Python ``for`` loops over static ranges, rolled into one ``stablehlo.while`` (:func:`roll_for`).

A loop that cannot stay rolled (its body needs the counter static, or Python semantics a rolled loop
cannot give) is unrolled instead, as Python runs it. Lists a rolled loop appends to (a derivative's
tape) hold one stacked :class:`Segment` per loop, which a reversed loop pops row by row (a loop inside
a rolled loop: one segment per outer row, stacked).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import libcst as cst

from .. import pytree
from ..adjoint import UNSET, is_saved_list_name, is_tape_name
from ..core import NeedStatic, TranspileError
from ..frontend.names import Visitor, assigned_names
from ..frontend.read import is_generated
from ..primitives import registry
from .hlo import HloValue
from .loops import rolled_loop
from .regions import snapshot_containers
from .values import (
    Break,
    Continue,
    LocalFunction,
    LoopOrigin,
    Undefined,
    Unroll,
    aval_of_static,
    is_loop_origin,
    same_static,
)

if TYPE_CHECKING:  # annotations only: the specializer imports this module, not the other way round
    from .specialize import Specializer


def _contains_dynamic_leaf(v: Any) -> bool:
    return any(isinstance(x, HloValue) for x in pytree.flatten(v)[0])


class Segment:
    """What a rolled loop appended to a Python list: row ``r`` holds iteration ``r``'s appends.

    Generated derivative code keeps a tape (``_tape.append(...)`` in the forward
    loop, ``_tape.pop()`` in the reversed adjoint loop). A rolled forward loop
    leaves one ``Segment`` on the list; ``pop`` on it returns the items of the
    last unconsumed row, in reverse order of appending, with a static row when
    the popping loop is unrolled and the popping loop's counter when it is
    rolled too.

    An inner loop rolled inside a rolled loop leaves its own segment in each
    iteration's appends; the outer segment stacks it (its buffers gain the outer
    loop's leading axis), and a pop that reaches it puts that row's inner segment
    on the list, where the inner adjoint loop pops it as if the outer loop had
    been unrolled.
    """

    def __init__(self, trees: list[pytree.TreeDef], bufs: list[list[Any]], n: int, depth: int = 0) -> None:
        self.trees = trees  # per item position within a row
        # per item position, per leaf: an (n, ...) buffer, a _Same (a static value: the same every row), or a
        # Segment of an inner loop's saved values whose buffers are stacked along a leading axis of n rows
        self.bufs = bufs
        self.n = n
        self.rows_left = n  # rows not yet popped (static pops)
        self.pos = len(trees)  # the next item popped in the current row is pos - 1
        # the rolled loops around the place where the segment is put on its list: a loop rolled there that
        # pops its rows is sp.row_contexts[depth]
        self.depth = depth
        # the loop that appended the rows, and the (item position, leaf) of each Python int/bool it computed from
        # its counter (`eq = i % 2 == 0`): popped, such a leaf names the loop, so that a test needing it static
        # (an `if` on it whose branch saves values) unrolls the loop (sp.program.no_roll)
        self.loop: LoopOrigin | None = None
        self.counted: frozenset[tuple[int, int]] = frozenset()

    def __repr__(self) -> str:
        return f"<{self.n} loop iterations of saved values>"

    def map_bufs(self, f: Callable[[Any], Any]) -> Segment:
        """The same segment with ``f`` applied to each buffer and inner segment (static values kept)."""
        seg = Segment(self.trees, [[b if isinstance(b, _Same) else f(b) for b in bs] for bs in self.bufs], self.n,
                      self.depth)
        seg.rows_left, seg.pos = self.rows_left, self.pos
        seg.loop, seg.counted = self.loop, self.counted
        return seg

    # a pytree node (see srcjax.pytree): a split VJP's forward program returns it as its stacked
    # arrays, and its backward program takes it back as an argument
    __srcjax_node__ = True

    def tree_flatten(self) -> tuple[tuple[tuple[Any, ...], ...], tuple[Any, ...]]:
        # a static value the same on every row is a static leaf (the backward half gets it as a Python value)
        children = tuple(tuple(b.value if isinstance(b, _Same) else b for b in bs) for bs in self.bufs)
        same = tuple(tuple(isinstance(b, _Same) for b in bs) for bs in self.bufs)
        return children, (tuple(self.trees), self.n, self.rows_left, self.pos, same)

    @classmethod
    def tree_unflatten(cls, aux: tuple[Any, ...], children: list[Any]) -> Segment:
        trees, n, rows_left, pos, same = aux
        bufs = [[_Same(c) if s else c for c, s in zip(cs, ss)] for cs, ss in zip(children, same)]
        seg = cls(list(trees), bufs, n)
        seg.rows_left, seg.pos = rows_left, pos
        return seg


@dataclass
class _Same:
    """A static leaf a rolled loop appends: one traced iteration stands for all, so it is the same
    value on every row, and stays a Python value (a test on it stays static)."""

    value: Any


@dataclass
class RowContext:
    counter: HloValue  # the rolled loop's iteration number (0, 1, ...)
    n: int  # its trip count
    popped: dict[int, int]  # id(segment) -> items popped in this iteration's trace


def _stacked(sp: Specializer, leaf: Any, n: int) -> Any:
    """Zero buffers for ``n`` rows of a leaf that a loop appends: an ``(n, ...)`` array for an array,
    the value itself for a static leaf, and an inner loop's segment with each buffer stacked."""
    assert sp.b is not None
    if isinstance(leaf, HloValue):
        return sp.b.full(0, (n,) + leaf.aval.shape, leaf.aval.dtype)
    if isinstance(leaf, Segment):
        return leaf.map_bufs(lambda b: _stacked(sp, b, n))
    return _Same(leaf)


def _buffers(entry: Any) -> list[HloValue]:
    """The buffers in an entry of :func:`_stacked`, in a fixed order."""
    if isinstance(entry, HloValue):
        return [entry]
    if isinstance(entry, Segment):
        return [x for bs in entry.bufs for b in bs if not isinstance(b, _Same) for x in _buffers(b)]
    return []


def _refilled(entry: Any, it: Any) -> Any:
    """``entry`` with its buffers taken in order from the iterator ``it``."""
    if isinstance(entry, HloValue):
        return next(it)
    if isinstance(entry, Segment):
        return entry.map_bufs(lambda b: _refilled(b, it))
    return entry


def _row_values(entry: Any, leaf: Any) -> list[HloValue]:
    """The arrays of one iteration's ``leaf``, one per buffer of ``entry``; Unroll when the iteration
    appends something else than the traced one did."""
    if isinstance(entry, _Same):
        if isinstance(leaf, HloValue | Segment) or not same_static(leaf, entry.value):
            raise Unroll()
        return []
    if isinstance(entry, HloValue):
        if not isinstance(leaf, HloValue):
            raise Unroll()
        return [leaf]
    if not isinstance(leaf, Segment) or leaf.trees != entry.trees or \
            (leaf.n, leaf.rows_left, leaf.pos) != (entry.n, entry.rows_left, entry.pos):
        raise Unroll()
    out: list[HloValue] = []
    for es, ls in zip(entry.bufs, leaf.bufs):
        for e, x in zip(es, ls):
            if isinstance(e, _Same):
                if not isinstance(x, _Same) or not same_static(x.value, e.value):
                    raise Unroll()
            else:
                out += _row_values(e, x)
    return out


def _is_segment_item(tree: pytree.TreeDef, entries: list[Any]) -> bool:
    return tree == pytree.LEAF and isinstance(entries[0], Segment)


def _row(sp: Specializer, buf: Any, row: Any) -> Any:
    if isinstance(buf, Segment):
        return buf.map_bufs(lambda b: _row(sp, b, row))
    return sp.getitem(buf, (row,))


def segment_pop(sp: Specializer, lst: list[Any], static: bool = False) -> Any:
    """``lst.pop()`` where the list ends in a :class:`Segment`."""
    seg = lst[-1]
    assert isinstance(seg, Segment)
    if not static and len(sp.row_contexts) > seg.depth + 1:
        # popped inside a loop rolled within the one that pops this segment's rows: each of its iterations
        # needs its own items, which one traced iteration cannot pop (a silent wrong answer): unrolled
        raise Unroll()
    ctx = sp.row_contexts[seg.depth] if len(sp.row_contexts) > seg.depth and not static else None
    k = len(seg.trees)
    rolled = ctx is not None and seg.rows_left == seg.n and seg.pos == k  # a rolled loop consumes the segment

    def take() -> int:  # the position of the next item of the row, marked popped
        if rolled:
            assert ctx is not None
            done = ctx.popped.get(id(seg), 0)
            if seg.n != ctx.n or done >= k:
                raise Unroll()
            ctx.popped[id(seg)] = done + 1
            return k - 1 - done
        if seg.pos == 0:
            seg.rows_left -= 1
            seg.pos = k
        seg.pos -= 1
        if seg.pos == 0 and seg.rows_left == 1:
            lst.pop()
        return seg.pos

    if rolled:
        row: Any = sp.binop("Subtract", seg.n - 1, ctx.counter)  # type: ignore[union-attr]
        p = take()
    else:  # one static row at a time
        p = take()
        row = seg.rows_left - 1
    leaves = [buf.value if isinstance(buf, _Same) else _row(sp, buf, row) for buf in seg.bufs[p]]
    if seg.loop is not None:
        leaves = [HloValue(v.name, v.aval.update(origin=v.aval.origin | {seg.loop}))
                  if (p, j) in seg.counted and isinstance(v, HloValue) else v for j, v in enumerate(leaves)]
    item = pytree.unflatten(seg.trees[p], leaves)
    if p > 0 and _is_segment_item(seg.trees[p - 1], seg.bufs[p - 1]):
        # the row's next item is an inner loop's saved values: on the list now, as unrolled, for its adjoint loop
        take()
        inner = _row(sp, seg.bufs[p - 1][0], row)
        inner.depth = len(sp.row_contexts)
        lst.append(inner)
    return item


def _read_not_appended(body: Sequence[Any], derivative: bool) -> set[str]:
    """Names the statements read other than as ``name.append(...)`` / ``name.pop()``. Derivative
    code's tapes (``_tape``, ``_tape_1``, ``_tape_bar``: :func:`~srcjax.adjoint.is_tape_name`) passed
    to its helpers count as neither: the helpers only push and pop them."""
    v = _Reads()
    for st in body:
        v.walk(st)
    return {n for n in v.out if not (derivative and is_tape_name(n))}


class _Reads(Visitor):
    """:func:`_read_not_appended`'s walk (read-only: libcst's own visitor rebuilt every node it passed)."""

    def __init__(self) -> None:
        self.out: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return not (type(node.value) is cst.Name and node.attr.value in ("append", "pop"))

    def visit_Name(self, node: cst.Name) -> None:
        self.out.add(node.value)


def int_range(seq: Any) -> range | None:
    """A list or tuple of Python ints in steps of one size (a derivative's ``list(reversed(range(n)))``)
    as the range it equals, so a loop over it can be rolled too; None for anything else."""
    if not isinstance(seq, (list, tuple)) or len(seq) < 2 or any(type(v) is not int for v in seq):
        return None
    step = seq[1] - seq[0]
    r = range(seq[0], seq[-1] + (1 if step > 0 else -1), step) if step else None
    return r if r is not None and len(r) == len(seq) and all(a == b for a, b in zip(r, seq)) else None


def roll_for(sp: Specializer, s: cst.For, r: range, env: dict[str, Any]) -> bool:
    """A Python ``for`` over a static range as one ``stablehlo.while``; False to unroll it instead.

    Carried: the names the body assigns that exist before the loop. Names first
    assigned in the body are carried too (from zeros; reading one before the body
    assigns it falls back to unrolling), so they hold the last iteration's value
    afterwards, as in Python. A name the body assigns on some paths only (branches
    of an ``if`` on data) is carried as well, where the traced iteration shows it is
    read on those paths only; after the loop it is unreadable, as after such an
    ``if``. Items the body appends to a Python list become one :class:`Segment` of
    stacked rows (an inner loop's segment among them, stacked in turn).

    Falling back to unrolling makes the program N times longer: derivative code
    relies on every loop here staying rolled (``tests/test_bounded_size.py``).
    """
    assert sp.b is not None and type(s.target) is cst.Name
    target = s.target.value
    n = len(r)
    assigned = [x for x in assigned_names(s.body.body) if x != target]
    # a name that is None or UNSET before the loop (derivative code declares saved values that way), or a
    # function (a `def` in the body, run before: an enclosing loop unrolled) is as good as first assigned in
    # the body: reading it before the body assigns it falls back to unrolling
    carried = [x for x in assigned if x in env and not isinstance(env[x], Undefined | LocalFunction)
               and env[x] is not None and env[x] is not UNSET]
    fresh = [x for x in assigned if x not in carried]
    snap = snapshot_containers(sp.envs)
    lists = {i: obj for i, (_, obj, _) in snap.items() if isinstance(obj, list)}
    line = sp.nf.spans.get(id(s))
    why = f"the loop at line {line.line}" if line else "the loop"
    found: dict[str, Any] = {}
    sometimes: dict[str, Any] = {}
    # tapes exist only in derivative code srcjax wrote: a user's `_tape` list is the user's list
    derivative = is_generated(sp.nf.fn)
    read = _read_not_appended(s.body.body, derivative)  # a list the body reads while appending to it: unrolled

    # the rows and items left of each saved-values segment on those lists: an iteration traced and thrown
    # away (a dry run, a failed attempt to roll an inner loop) must not consume them
    segments = [(x, x.rows_left, x.pos) for lst in lists.values() for x in lst if isinstance(x, Segment)]

    def segments_moved() -> bool:
        return any((x.rows_left, x.pos) != (rows_left, pos) for x, rows_left, pos in segments)

    def restore_lists() -> None:
        for i_l, lst in lists.items():
            lst[:] = snap[i_l][2]
        for x, rows_left, pos in segments:
            x.rows_left, x.pos = rows_left, pos

    def run(state: Any, out_fresh: bool) -> tuple[dict[str, Any], dict[int, list[Any]]]:
        k, cvals = state[0], state[1]
        local = dict(env)
        local.update(zip(carried, cvals))
        for x in fresh:
            local[x] = Undefined(x, why)
        if out_fresh:  # a name assigned on some paths only holds its last value (zeros at first) elsewhere
            local.update((x, v) for x, v in zip(fresh, state[2]) if x in sometimes)
        i = k if r.start == 0 and r.step == 1 else sp.binop("Add", r.start, sp.binop("Multiply", k, r.step))
        local[target] = i
        ctx = RowContext(k, n, {})
        sp.row_contexts.append(ctx)
        sp.envs.append(local)
        try:
            sp.exec_block(s.body.body, local)
        except (Break, Continue):
            restore_lists()
            raise Unroll() from None
        except BaseException:
            restore_lists()  # a traced iteration must leave the Python lists as they were
            raise
        finally:
            sp.row_contexts.pop()
            sp.envs.pop()
        if segments_moved():  # popped one static row of an outer loop's values: each iteration needs its own
            restore_lists()
            raise Unroll()
        for seg_id, count in ctx.popped.items():
            owner = next(lst for lst in lists.values() if lst and id(lst[-1]) == seg_id)
            if count != len(owner[-1].trees):
                raise Unroll()
            found.setdefault("consumed", {})[seg_id] = owner
        appended: dict[int, list[Any]] = {}
        for i_l, lst in lists.items():
            before = snap[i_l][2]
            if len(lst) < len(before) or any(a is not b for a, b in zip(lst, before)):
                restore_lists()
                raise Unroll()
            if len(lst) > len(before):
                appended[i_l] = lst[len(before):]
                if snap[i_l][0] in read:  # items[-1], len(items): each iteration sees the earlier appends
                    restore_lists()
                    raise Unroll()
        restore_lists()
        if out_fresh and any(isinstance(local[x], Undefined) for x in fresh):
            raise Unroll()  # assigned on some iterations' paths only
        return local, appended

    # a dry run (thrown away) learns what the body first assigns and appends, and their types
    def dry_body(state: Any) -> Any:
        local, appended = run(state, False)
        found["fresh"] = {x: local[x] for x in fresh if not isinstance(local[x], Undefined)}
        # assigned on some paths of the body only (a derivative's branch-local values): read on those
        # paths only, or the traced iteration would have failed; carried, it keeps the loop rolled. One
        # that has no value to carry (unreadable after the body) is not carried.
        found["sometimes"] = {x: local[x].value for x in fresh if isinstance(local[x], Undefined)
                              and isinstance(local[x].value, HloValue)}
        found["unreadable"] = {x for x in fresh if isinstance(local[x], Undefined)} - set(found["sometimes"])
        found["appended"] = appended
        return (sp.binop("Add", state[0], 1), tuple(local[x] for x in carried), state[2])

    def cond(state: Any) -> Any:
        return sp.binop("LessThan", state[0], n)

    labels = lambda m: ["the loop counter"] + [f"`{x}`" for x in carried + fresh] + \
        ["a saved value"] * (m - 1 - len(carried) - len(fresh))  # noqa: E731
    # a Python int the loop changes (a counter, an offset) is carried as data; if code after the loop
    # needs it static, specialization restarts with this loop unrolled (sp.program.no_roll)
    loop_key = LoopOrigin(id(s), rolled_for=True)
    if id(s) in sp.program.no_roll:
        return False
    state0 = (0, tuple(env[x] for x in carried), ())
    order = sp.print_dep  # (the dry run's code is thrown away, and with it the order its prints leave)
    try:
        with sp.b.region():
            try:
                rolled_loop(sp, cond, dry_body, state0, labels)
            finally:
                sp.print_dep = order
        fresh_vals = {**found["fresh"], **found["sometimes"]}
        sometimes.update(found["sometimes"])
        unreadable = found["unreadable"]
        if set(fresh_vals) | unreadable != set(fresh):
            raise Unroll()
        fresh = [x for x in fresh if x not in unreadable]
        static_fresh = {x: v for x, v in fresh_vals.items() if not _contains_dynamic_leaf(v)}
        fresh = [x for x in fresh if x not in static_fresh]  # the same on every iteration: not carried

        def zero(v: Any) -> Any:
            assert sp.b is not None
            a = v.aval if isinstance(v, HloValue) else aval_of_static(v)
            if a is None:
                raise Unroll()
            return sp.b.full(0, a.shape, a.dtype) if not a.weak_type else HloValue(
                sp.b.full(0, a.shape, a.dtype).name, a)

        zeros = []
        for x in fresh:
            v = fresh_vals[x]
            if pytree.is_tree(v):  # a tuple of arrays (the cotangents a derivative's helper returns)
                leaves, tree = pytree.flatten(v)
                if not all(isinstance(leaf, HloValue) for leaf in leaves):
                    raise Unroll()
                zeros.append(pytree.unflatten(tree, [zero(leaf) for leaf in leaves]))
            else:
                zeros.append(zero(v))
        # buffers for appended items: per list, per item position, per leaf (see _stacked)
        layout: list[tuple[int, list[pytree.TreeDef]]] = []
        entries: list[Any] = []
        counted: dict[int, frozenset[tuple[int, int]]] = {}
        for i_l, items in found["appended"].items():
            trees = []
            for q, item in enumerate(items):
                leaves, tree = pytree.flatten(item)
                trees.append(tree)
                entries += [_stacked(sp, leaf, n) for leaf in leaves]
                counted[i_l] = counted.get(i_l, frozenset()) | {
                    (q, j) for j, leaf in enumerate(leaves) if isinstance(leaf, HloValue) and leaf.ndim == 0
                    and leaf.dtype.kind in "biu" and any(is_loop_origin(o) for o in leaf.aval.origin)}
            layout.append((i_l, trees))
            # an inner loop's saved values are popped as a whole, once the item appended after them is
            # (segment_pop): an item of their own, followed by one that is not
            k = len(entries) - sum(t.num_leaves for t in trees)
            for q, tree in enumerate(trees):
                here, k = entries[k:k + tree.num_leaves], k + tree.num_leaves
                if any(isinstance(e, Segment) for e in here) and (
                        not _is_segment_item(tree, here) or q + 1 == len(trees)
                        or _is_segment_item(trees[q + 1], entries[k:k + trees[q + 1].num_leaves])):
                    raise Unroll()
        bufs = [b for e in entries for b in _buffers(e)]

        def body(state: Any) -> Any:
            local, appended = run(state, True)
            new_bufs = list(state[3])
            j = k = 0
            for i_l, trees in layout:
                items = appended.get(i_l, [])
                if len(items) != len(trees):
                    raise Unroll()
                for item, tree in zip(items, trees):
                    leaves, t = pytree.flatten(item)
                    if t != tree:
                        raise Unroll()
                    for leaf in leaves:
                        for v in _row_values(entries[k], leaf):
                            new_bufs[j] = sp.apply(registry.PRIMITIVES["index_update"], [new_bufs[j], (state[0],), v],
                                                   {})
                            j += 1
                        k += 1
            if set(appended) - {i_l for i_l, _ in layout}:
                raise Unroll()
            return (sp.binop("Add", state[0], 1), tuple(local[x] for x in carried),
                    tuple(local[x] for x in fresh), tuple(new_bufs))

        state1 = (0, tuple(env[x] for x in carried), tuple(zeros), tuple(bufs))
        out = rolled_loop(sp, cond, body, state1, labels, out_origin=loop_key)
    except NeedStatic as e:
        if not all(is_loop_origin(o) for o in e.names):
            raise
        return False
    except (Unroll, TranspileError):
        # the body needs Python semantics a rolled loop cannot give (a static counter, a changing shape,
        # `continue` on the counter, ...): unroll it, as Python runs it; real errors surface there
        return False
    _, cvals, fvals, bvals = out
    env.update(zip(carried, cvals))
    env.update(zip(fresh, fvals))
    env.update(static_fresh)
    # as after an `if` that assigns them on one branch
    env.update((x, Undefined(x, why)) for x in [*sometimes, *unreadable])
    env[target] = r[-1] if n else env.get(target)
    k = 0
    it = iter(bvals)
    for i_l, trees in layout:
        per_pos = []
        for tree in trees:
            per_pos.append([_refilled(e, it) for e in entries[k:k + tree.num_leaves]])
            k += tree.num_leaves
        seg = Segment(trees, per_pos, n, len(sp.row_contexts))
        seg.loop, seg.counted = loop_key, counted.get(i_l, frozenset())
        if derivative and is_saved_list_name(snap[i_l][0]):  # a tape: popped row by row, maybe by a rolled loop
            lists[i_l].append(seg)
        else:  # a user's list: its items, read back from the stacked rows
            for _ in range(n * len(trees)):
                item = segment_pop(sp, [seg], static=True)
                leaves, tree = pytree.flatten(item)
                leaves = [HloValue(v.name, v.aval.update(origin=frozenset({loop_key})))
                          if isinstance(v, HloValue) and v.ndim == 0 and v.dtype.kind in "biu" else v for v in leaves]
                lists[i_l].insert(len(snap[i_l][2]), pytree.unflatten(tree, leaves))
    for seg_id, owner in found.get("consumed", {}).items():  # popped one row per iteration: all gone
        if owner and id(owner[-1]) == seg_id:
            owner.pop()
    return True
