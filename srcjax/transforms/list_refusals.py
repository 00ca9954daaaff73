"""Refusals of lists and dicts changed in ways derivatives do not follow (called by :class:`.activity.Activity`).

- :func:`shared_lists`: a list changed in place while a second name holds it (``m = out``, then
  ``out.append(y)``; ``d = {"l": out}``; ``outer.append(out)``, then ``out.append(y)``): derivative source follows
  a list by the name it is changed through, so the other name saw the list as it was (a silently wrong Jacobian
  under ``jacrev``, ``jacfwd`` and ``vmap``). Found by :func:`srcjax.frontend.list_aliases.shared_changes`,
  refused at the line that makes the second name.
- :func:`item_pop`: ``out.pop(i)``, ``d.pop(k)`` of a container carrying derivatives (was: an internal
  ``KeyError``/``IndexError`` under reverse mode, a wrong Jacobian under forward mode). ``out.pop()`` (the last
  item: a stack, as derivative code's tapes) is followed.
- :func:`helper_appends`: a helper that appends values carrying derivatives to a list it is passed, called as a
  statement of its own (``push(out, x)``) or for its result (``y, d = push(out, x)``): derivatives do not follow
  the appended values out of the call (was: a zero gradient, silently).

Each refusal quotes the statement as the user wrote it (:func:`srcjax.frontend.locations.user_code`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst

from ..frontend.list_aliases import shared_changes
from ..frontend.names import code, names_in
from ..tape_names import is_saved_list_name
from .anf import DifferentiationError

if TYPE_CHECKING:  # pragma: no cover
    from .activity import Activity

__all__ = ["helper_appends", "item_pop", "shared_lists"]


def shared_lists(act: Activity, body: Sequence[Any]) -> None:
    """Refuse a list carrying derivatives changed in place while a second name holds it."""
    for found in shared_changes(body, act.nf.fn):
        if not ({found.name, found.alias} & act.active or set(names_in(found.change)) & act.active):
            continue
        if found.item:  # (`lists[0].append(y)`, normalized `getitem = lists[0]` first; `for r in rows`)
            raise DifferentiationError(
                f"cannot differentiate through `{act.shown(found.change, found.change, body)}` yet: it changes in "
                f"place a list that `{found.name}` holds (derivatives follow a list by the name it is changed "
                "through)", span=act.span_of(found.change, body),
                hint="build each inner list under a name of its own (`a = []`, `a.append(y)`) and put them "
                     f"together after their last change (`{found.name} = [a, b]`)")
        own = found.name in act.nf.source.name_set()  # (else a list srcjax made: a comprehension's, `cur = [...]`)
        raise DifferentiationError(
            f"cannot differentiate through `{act.shown(found.made, found.made, body)}` yet: `{found.alias}` "
            f"holds the list {f'`{found.name}`' if own else 'this line makes'}, which "
            f"`{act.shown(found.change, found.change, body)}` changes in place after (derivatives follow a list by "
            "the name it is changed through)", span=act.span_of(found.made, body),
            hint=f"read and change the list by one name (`{found.name}`), or make `{found.alias}` after the list's "
                 "last change" if own else f"make the new list under a name of its own and bind `{found.alias}` to "
                 "it after its last change")


def item_pop(act: Activity, call: Any, s: cst.CSTNode, body: Sequence[Any]) -> None:
    """Refuse ``out.pop(i)`` / ``d.pop(k)`` (the statement ``s``, its call ``call``) of a container carrying
    derivatives."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "pop"
            and call.args and code(call.func.value) in act.active):
        return
    recv = code(call.func.value)
    key = code(call.args[0].value)
    # (the list's own slices: `hist.pop(0)` -> `hist = hist[1:]`; was `hist = [hist[0], hist[2]]`, which keeps the
    # item popped)
    k = call.args[0].value
    at = int(k.value) if isinstance(k, cst.Integer) else None
    kept = f"{recv}[1:]" if at == 0 else f"{recv}[:{at}] + {recv}[{at + 1}:]" if at is not None else \
        f"{recv}[:{key}] + {recv}[{key} + 1:]"
    rest = (f"dict of the keys you keep: `{recv} = {{'b': {recv}['b']}}`"
            if isinstance(k, cst.SimpleString) else f"list of the items you keep: `{recv} = {kept}`")
    raise DifferentiationError(
        f"cannot differentiate through `{act.shown(call, s, body)}` yet: it takes an item out of `{recv}` in place, "
        "which derivatives do not follow (only a list's last item, `.pop()`)", span=act.span_of(s, body),
        hint=f"read the item (`v = {recv}[{key}]`), then write what is left out as a new {rest}")


def helper_appends(act: Activity, s: cst.CSTNode, body: Sequence[Any]) -> None:
    """Refuse a helper that appends values carrying derivatives to a list it is passed (``push(out, x)`` with
    ``def push(l, v): l.append(np.sin(v))``), called as a statement of its own or for its result (``y =
    push(out, x)``): derivatives do not follow the appended values out of the call (was: a zero gradient,
    silently; session 43 found the assigned call's). Derivative code's own tapes (``_tape``, ``_tape_dot``,
    handed to a helper half) are not the user's lists: reverse over reverse writes them out."""
    call = s.value if s.__class__ is cst.Expr or s.__class__ is cst.Assign else None  # type: ignore[attr-defined]
    if not (call.__class__ is cst.Call and call.func.__class__ is cst.Name):  # (exact: libcst's classes are final)
        return
    op = act.op(call)
    if op.kind != "call":
        return
    lists = [a for a in act.appended_arguments(op) if not is_saved_list_name(a)]
    if not lists or not any(n in act.active for a in call.args for n in names_in(a.value)):
        return
    raise DifferentiationError(
        f"cannot differentiate through `{code(call)}` yet: `{code(call.func)}` appends to the list "
        f"`{lists[0]}` it is passed, and derivatives do not follow values out of a call that way",
        span=act.span_of(s, body),
        hint=f"return the value from the helper and append it here: `{lists[0]}.append({code(call.func)}(...))`")
