"""vmap's errors for a batched value used where a static one is needed: which argument made it batched.

A shape, a ``range`` bound, an index into a Python list, or an ``if`` on a string that ``in_axes``
maps: the batched program cannot have one per example. The error (at the user's line) names the
mapped argument the value comes from, the item of a container argument when it is one
(``p['act']``), and the ``in_axes`` that leaves it unmapped: :func:`mapped_error`.
"""

from __future__ import annotations

import linecache
import re
import weakref
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..core import Span, TranspileError
from ..frontend.list_aliases import shared_changes
from ..frontend.locations import user_code
from ..frontend.names import Names, code, names_in, target_names, walk
from .batch_state import State, Tree, any_batched, literal_key

if TYPE_CHECKING:
    from .batch import FunctionWriter

__all__ = ["BatchingError", "ComprehensionBatchingError", "located", "mapped_error", "refuse_shared_lists", "sources"]


class BatchingError(TranspileError):
    """A construct srcjax cannot batch (a batched value where a static one is needed)."""


class ComprehensionBatchingError(BatchingError):
    """A comprehension or generator over batched values: written as a loop (``items.append(y)``), it can
    be batched (:func:`srcjax.vmap.batched_source` reads the program again that way)."""


# the fresh name of a name of a nested function written in line (a branch on batched data, transforms/batch_lax.py)
# -> the user's name it stands for, in the writers sharing one ``Names``: what a refusal shows
USER_NAMES: weakref.WeakKeyDictionary[Names, dict[str, str]] = weakref.WeakKeyDictionary()


def user_text(w: FunctionWriter, text: str) -> str:
    """``text`` with the fresh names of :data:`USER_NAMES` spelled as the user wrote them."""
    shown = USER_NAMES.get(w.names)
    if not shown:
        return text
    return re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: shown.get(m.group(0), m.group(0)), text)


def shown(w: FunctionWriter, node: cst.CSTNode, line: cst.CSTNode | None) -> str:
    """``node`` of the statement ``line``, quoted, as the user wrote it (not with normalization's names:
    ``'out.insert(0, r[t] * 2)'``, not ``'out.insert(0, mul)'``)."""
    span = w.nf.spans.get(id(line)) if line is not None else None
    return repr(user_code(node, span if span is not None else w.nf.spans.get(id(w.at))))


def located(w: FunctionWriter, e: TranspileError, node: cst.CSTNode | None) -> TranspileError:
    """``e`` at ``node``'s span; else (an expression, or a node srcjax wrote) at the statement being
    written (in derivative source: the user's line it comes from, srcjax/frontend/locations.py); else at
    the function. Its message names the user's names (:func:`user_text`)."""
    e.message = user_text(w, e.message)
    if e.hint:
        e.hint = user_text(w, e.hint)
    for n in (node, w.at):
        span = w.nf.spans.get(id(n)) if n is not None else None
        if span is not None:
            return e.with_span(span)
    fspan = getattr(w.nf.source, "span", None)
    return e.with_span(fspan) if isinstance(fspan, Span) else e


def sources(w: FunctionWriter, names: list[str]) -> list[tuple[str, str | None]]:
    """The mapped parameters (with the literal key of the item read, ``p['act']``) that ``names`` are
    computed from, following the function's assignments and loop targets back."""
    deps: dict[str, set[str]] = {}
    items: dict[str, tuple[str, str]] = {}  # t = p['act'] of a parameter p
    for fdef in (w.nf.fdef, w.nf.plain_fdef):
        for n in walk(fdef):
            if type(n) is cst.Assign:
                reads = set(names_in(n.value))
                for t in n.targets:
                    for v in target_names(t.target):
                        deps.setdefault(v, set()).update(reads)
                        if type(n.value) is cst.Subscript and type(n.value.value) is cst.Name and \
                                len(n.value.slice) == 1 and type(n.value.slice[0].slice) is cst.Index:
                            items[v] = (n.value.value.value, code(n.value.slice[0].slice.value))
            elif type(n) is cst.For:
                for v in target_names(n.target):
                    deps.setdefault(v, set()).update(names_in(n.iter))
    found: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    todo = list(names)
    while todo:
        v = todo.pop(0)
        if v in seen:
            continue
        seen.add(v)
        if v in items and items[v][0] in w.param_states:
            p, key = items[v]
            st = w.param_states[p]
            same = [k for k, _ in st.items if literal_key(k) == literal_key(key)] if isinstance(st, Tree) else []
            if same and isinstance(st, Tree) and any_batched(dict(st.items)[same[0]]):
                found.append((p, same[0]))
                continue
            if st is True and isinstance(literal_key(key), str):  # an item of a dict mapped whole (in_axes=0)
                keys = sorted({k for q, k in items.values() if q == p}, key=lambda k: (k != key, k))
                w.param_states[p] = Tree("dict", tuple((repr(literal_key(k)), True) for k in keys))
                found.append((p, repr(literal_key(key))))
                continue
        if v in w.param_states and any_batched(w.param_states[v]):
            found.append((v, None))
            continue
        todo += sorted(deps.get(v, ()))
    return found


def _axes(st: State, key: str | None) -> str:
    """The in_axes entry of a parameter in state ``st`` with the item ``key`` (or all of it) unmapped."""
    if key is None or not isinstance(st, Tree):
        return "None"
    parts = []
    for k, v in st.items:
        if st.kind == "dict":
            parts.append(f"{k}: {'None' if k == key or not any_batched(v) else '0'}")
        else:
            parts.append("None" if k == key or not any_batched(v) else "0")
    if st.kind == "dict":
        return "{" + ", ".join(parts) + "}"
    return ("[" + ", ".join(parts) + "]") if st.kind == "list" else "(" + ", ".join(parts) + ("," if len(parts) == 1
                                                                                            else "") + ")"


def mapped_error(w: FunctionWriter, what: str, names: list[str], node: cst.CSTNode | None,
                 default_hint: str) -> TranspileError:
    """``vmap: <what> ...`` naming the mapped argument ``names`` come from, with the in_axes to give it."""
    found = sources(w, [USER_NAMES.get(w.names, {}).get(n, n) for n in names])
    if not found:
        return w.error(f"vmap: {what} must be the same for every example, but it depends on a mapped argument",
                       node, hint=default_hint)
    p, key = found[0]
    shown = f"`{p}[{key}]`" if key is not None else f"`{p}`"
    params = list(w.param_states)
    entries = []
    for q in params:
        st = w.param_states[q]
        entries.append(_axes(st, key) if q == p else ("0" if st is True else "None" if not any_batched(st)
                                                      else _axes(st, None if st is True else "")))
    spelled = entries[0] if len(entries) == 1 else "(" + ", ".join(entries) + ")"
    where = "" if w.is_entry else f" (an argument of {w.nf.name}: give the in_axes to the argument it is passed)"
    kind = "an item of a mapped argument" if key is not None else "a mapped argument"
    hint = (f"pass in_axes={spelled} to leave {shown} unmapped{where}: it is then the same for every example"
            + (" (a string or other Python value cannot be mapped)" if key is not None else ""))
    return w.error(f"vmap: {what} must be the same for every example, but it depends on {shown}, {kind}",
                   node, hint=hint)


def refuse_shared_lists(w: FunctionWriter) -> None:
    """Refuse a list of batched values changed in place while a second name holds it (``m = out``, then
    ``out.append(y)``: batched source follows a list by the name it is changed through; was a silently wrong
    vmap), at the line making the second name (:mod:`srcjax.frontend.list_aliases`)."""
    for found in shared_changes(w.nf.fdef.body.body, w.nf.fn):
        if any(any_batched(w.state(n)) for n in {found.name, found.alias, *names_in(found.change)}):
            line = next((n for n in walk(w.nf.fdef) if isinstance(n, cst.SimpleStatementLine) and
                         any(b is found.made for b in n.body)), None)
            span = w.nf.spans.get(id(line)) if line is not None else None
            change = next((n for n in walk(w.nf.fdef) if isinstance(n, cst.SimpleStatementLine) and
                           any(b is found.change for b in n.body)), None)
            if found.item:  # (`lists[0].append(y)`, normalized `getitem = lists[0]` first; `for r in rows`)
                raise located(w, BatchingError(
                    f"vmap: cannot batch `{user_code(found.change, w.nf.spans.get(id(change)))}`: it changes in place "
                    f"a list that `{found.name}` holds (batched source follows a list by the name it is changed "
                    "through)", hint="build each inner list under a name of its own (`a = []`, `a.append(y)`) and "
                    f"put them together after their last change (`{found.name} = [a, b]`)"), change)
            if span is not None and not _written_there(found.alias, span):  # (a name srcjax made: reverse mode's
                # saved value, a tape; no span: the user's own line, refused below)
                xs = found.name if _written_there(found.name, w.nf.spans.get(id(change))) else "xs"
                raise located(w, BatchingError(
                    f"vmap: cannot batch `{user_code(found.change, w.nf.spans.get(id(change)))}`: it changes in place "
                    "a list that the derivative also keeps as it was (batched source follows a list by the name it "
                    "is changed through)",
                    hint=f"make a new list instead of changing it in place (`{xs} = {xs} + [v]`, `{xs} = {xs}[1:]`)"),
                    change)
            raise located(w, BatchingError(
                f"vmap: cannot batch `{user_code(found.made, span)}`: `{found.alias}` holds the list `{found.name}`, "
                f"which `{user_code(found.change, w.nf.spans.get(id(change)))}` changes in place after (batched "
                "source follows a list by the name it is changed through)",
                hint=f"read and change the list by one name (`{found.name}`), or make `{found.alias}` after the "
                     "list's last change"), line)


def _written_there(name: str, span: Span | None) -> bool:
    """Whether ``name`` is written in the user's source at ``span`` (not a name srcjax made for its own source)."""
    if span is None:
        return False
    lines = "\n".join(linecache.getline(span.filename, n) for n in range(span.line, span.end_line + 1))
    # (the whole lines: a statement's span may be its value's, `out` of `m = out`)
    return re.search(rf"\b{re.escape(name)}\b", lines) is not None


def outer_container(w: FunctionWriter, name: str) -> bool:
    """Whether ``name`` is a module constant or closure variable holding a Python list or tuple
    (``SCALES[k]``: an index into it must be static; was left to the lowering's internal error)."""
    if name in w.st:
        return False
    src = w.nf.source
    value = src.closure[name] if name in src.closure else src.globals.get(name)
    return isinstance(value, (list, tuple))


def refuse_field_of_mixed_items(w: FunctionWriter, st: State, op: Any, line: cst.CSTNode | None) -> None:
    """A field read (``p.pos``) of a tuple/list state whose items are mapped differently: a NamedTuple mapped by a
    plain tuple of in_axes, where which item is the field is unknown here (was read as batched whole, an unmapped
    field's values taken per example: silently wrong)."""
    if isinstance(st, Tree) and st.kind in ("tuple", "list") and len({any_batched(v) for _, v in st.items}) > 1:
        x = op.operands["x"]
        who = f"`{x}`, whose in_axes is" if x in w.param_states else "a record argument, whose in_axes is"
        raise w.error(f"vmap: `.{op.args.get('attr')}` reads a field of {who} a {st.kind} mapping some of "
                      "its items", line,
                      hint="write its in_axes as the record itself (`Point(0, None)` for a NamedTuple "
                           "Point), or one int/None for all of it")
