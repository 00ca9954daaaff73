"""``x op= v`` on an array, as NumPy runs it: the result keeps ``x``'s shape and dtype.

NumPy computes ``x += v`` as ``np.add(x, v, out=x)``: the result is cast back into ``x`` with the casting
rule ``'same_kind'`` (float64 into float32 is allowed, float into int is not: ``UFuncTypeError``), and the
output operand ``x`` must already have the broadcast shape (``ValueError: non-broadcastable output
operand``). A name bound to anything else (a Python number, a list, a tuple, a 0-d value) is simply bound
again to ``x op v``, as Python does.

The normalizer writes ``w *= m`` as ``mul = w * m; w = in_place(w, mul)`` (frontend/in_place_updates.py):
:func:`in_place` is the primitive's NumPy reference (``primitives/in_place.py`` holds its record). Its
derivative is the cast of the new value's tangent: linear in ``new``; ``x`` only gives the dtype and shape.

0-d values: NumPy rebinds a NumPy scalar (``s = x.sum(); s += y64`` is float64) but casts into a 0-d
``ndarray``; srcjax cannot tell the two apart, and rebinds both (docs/limitations.md).
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import numpy as np

from .core import UnsupportedSyntaxError
from .pytree import is_tree, tree_map
from .weak_arrays import WeakArray

__all__ = ["cast_refusal", "container_alias", "container_refused", "in_place", "reach_rank", "rebound_refused",
           "shape_refusal"]

# dtype kinds in NumPy's 'same_kind' order: a cast may go down within a kind and up to a later kind
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}  # (V: bfloat16, a float)


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"  # (NumPy's: (2,3), (3,))


def shape_refusal(x_shape: tuple[int, ...], new_shape: tuple[int, ...], axes: int = 0) -> str | None:
    """NumPy's error for an in-place result of shape ``new_shape`` written into ``x_shape`` (None: it fits);
    the first ``axes`` axes of both are batch axes (the message names one example's shapes)."""
    if tuple(new_shape) == tuple(x_shape):
        return None
    return (f"non-broadcastable output operand with shape {_fmt(x_shape[axes:])} doesn't match the broadcast "
            f"shape {_fmt(new_shape[axes:])} (NumPy's ValueError: `x op= v` writes the result into x, which keeps "
            "its shape)")


def cast_refusal(x_dtype: Any, new_dtype: Any) -> str | None:
    """NumPy's error for an in-place result of dtype ``new_dtype`` cast into ``x_dtype`` (None: 'same_kind'
    allows it)."""
    xd, nd = np.dtype(x_dtype), np.dtype(new_dtype)
    if xd == nd:
        return None
    try:
        ok = bool(np.can_cast(nd, xd, "same_kind"))
    except TypeError:  # (a dtype NumPy's table does not know: bfloat16)
        ok = _KIND_RANK.get(nd.kind, 9) <= _KIND_RANK.get(xd.kind, -1)
    if ok:
        return None
    return (f"Cannot cast the in-place result from {nd} to {xd} with casting rule 'same_kind' (NumPy's "
            f"UFuncTypeError: `x op= v` keeps x's dtype)")


def reach_rank(ndims: Any, axes: int = 0) -> int:
    """The dimensions of a container counted through it, given as ``tree_map(np.ndim, xs)``: one per list, tuple or
    dict level and then the leaf's own (less ``axes`` batch axes; a number has 0), the most over its leaves.
    ``xs[0][1]`` of a list ``xs`` of 2-D arrays is a view of a row as ``y[0, 1]`` of a 3-D ``y`` is: both reach 3."""
    if is_tree(ndims):
        values = ndims.values() if isinstance(ndims, dict) else ndims if isinstance(ndims, (list, tuple)) else ()
        return 1 + max((reach_rank(v, axes) for v in values), default=0)
    return max(int(ndims) - axes, 0) if isinstance(ndims, (int, np.integer)) else 0


def container_alias(ndims: Any, axes: int, alias: str, rank: int) -> tuple[str, str] | None:
    """The refusal (message, hint) of ``in_place(xs, xs, alias=..., rank=r)`` of a container ``xs`` (``ndims``:
    ``tree_map(np.ndim, xs)``) whose items are taken by integer indices and keys (``xs[0][1], xs[1][0] = xs[1][0],
    xs[0][1]``) where such an item is a NumPy view (:func:`reach_rank` ``>= r``: a list of 2-D arrays for ``r``
    3); None where they are numbers (copies), or where the check is not of items (``rank`` 0 or 1)."""
    if not alias or rank < 2 or not is_tree(ndims) or reach_rank(ndims, axes) < rank:
        return None
    return _tuple_refusal(alias, rank, held=True) if " = " in alias else alias_refusal(alias, rank)


def rebound_refused(ndims: Any, kind: str, axes: int, alias: str, rank: int) -> bool:
    """``adjoint.rebound``'s refusals (``in_place`` of a container, when specializing), False where there is none:
    a helper's ``xs += [v]`` of the caller's list or dict (``kind``; ``rank`` 0: :func:`container_refused`), or an
    item of an array it holds that is a NumPy view (``ndims``: ``tree_map(np.ndim, xs)``; :func:`container_alias`,
    an ``UnsupportedSyntaxError`` located at the user's line)."""
    if alias and rank == 0 and kind:
        container_refused(alias, kind)
    refused = container_alias(ndims, axes, alias, rank)
    if refused is not None:
        raise UnsupportedSyntaxError(refused[0], hint=refused[1])
    return False


def _rebinds(x: Any, axes: int) -> bool:
    return is_tree(x) or isinstance(x, WeakArray) or not isinstance(x, np.ndarray) or x.ndim <= axes


def in_place(x: Any, new: Any, axes: int = 0, alias: str = "", rank: int = 1) -> Any:
    """``x op= v`` given ``new = x op v``: ``new`` cast into ``x``'s dtype where ``x`` is an array of at least
    one dimension (per example: the first ``axes`` axes of both are batch axes, written by vmap), else ``new``
    (a Python number, a list, a tuple, a 0-d value: bound again). ``alias``: the expression ``x`` was bound to
    (``params["w"]``, ``W[i]``) where its container or array is read after the change: an array ``x`` then
    changes that one too in NumPy, which srcjax's immutable arrays cannot (:func:`alias_refusal`). ``rank``: the
    dimensions from which ``x`` shares its array with ``alias`` (2: ``x`` is ``W`` itself, ``W[i]`` a view of its
    row where ``W`` has two dimensions or more, a number of a 1-D ``W``; frontend/item_views.py); 0: ``alias`` is
    a helper's ``x op= v`` (``"`scale(t, 3.0)` runs `t *= s` (line 5 of scale)"``) and ``new`` is ``x``: a Python
    number or NumPy scalar is bound again in the helper, any ``ndarray`` (a 0-d one too) changed in place, which
    the caller reads after the call (frontend/helper_checks.py)."""
    if alias and rank == 0 and isinstance(x, np.ndarray) and not isinstance(x, WeakArray):
        raise ValueError(alias_refusal(alias, rank)[0])  # (a helper's `t op= v` changes an array, a 0-d one too)
    if alias and rank == 0 and isinstance(x, (list, dict)):  # (a helper's `xs += [v]` / `d |= {...}` changes the
        container_refused(alias, "list" if isinstance(x, list) else "dict")  # caller's list or dict)
    if alias and rank > 1 and is_tree(x):  # (a list's 2-D arrays' rows: views)
        refused = container_alias(tree_map(np.ndim, x), axes, alias, rank)
        if refused is not None:
            raise ValueError(refused[0])
    if _rebinds(x, axes):
        return new
    if alias and x.ndim - axes >= rank:
        raise ValueError(alias_refusal(alias, rank)[0])
    new_shape, new_dtype = np.shape(new), np.result_type(new)
    problem = shape_refusal(x.shape, new_shape, axes)
    if problem is not None:
        raise ValueError(problem)
    problem = cast_refusal(x.dtype, new_dtype)
    if problem is not None:
        raise TypeError(problem)
    return np.asarray(new).astype(x.dtype, copy=False)


def container_refused(alias: str, kind: str) -> NoReturn:
    """``adjoint.rebound``'s and :func:`in_place`'s refusal (a ``ValueError``) of a helper's ``xs += [v]`` /
    ``d |= {...}`` (``alias``: ``"`f(xs, x)` runs `xs += [v]` (line 3 of f)"``) where the target is a list or dict
    (``kind``) the caller passed and reads after the call: Python changes that object in place (``list.__iadd__``,
    ``dict.__ior__``), so the caller sees the change; srcjax's helper binds its own name again. (A tuple or a number
    is bound again in Python too: not refused.)"""
    spelled = "xs = xs + [v]" if kind == "list" else "d = d | {...}"
    raise ValueError(
        f"{alias}: in Python that changes the caller's {kind} in place (`+=` and `|=` of a {kind} extend the object "
        f"itself), and the caller reads it after the call; the change would not reach the caller here. Hint: return "
        f"the new {kind} from the helper and bind it in the caller (`return ...` at the helper's end, "
        f"`... = {alias.split('`')[1]}` here), or build a new one in the helper (`{spelled}`)")


def alias_refusal(alias: str, rank: int = 1) -> tuple[str, str]:
    """The message and hint for an in-place change of an array bound to ``alias`` (``params["w"]``, ``W[i]``),
    whose container or array is read after the change (``rank`` 2 or more: of ``W`` itself, ``W[i]`` read after)."""
    if rank == 0:
        name = alias.split("runs `", 1)[-1].split(" ", 1)[0]
        return (f"{alias}: it changes the caller's array in place in NumPy (an array argument, a 0-d one too; a "
                f"Python number would be bound again), and the caller reads that array after the call; srcjax arrays "
                f"are immutable (as JAX's): the helper's change would not reach the caller",
                f"return the new array from the helper and bind it in the caller (`return {name}` at the helper's "
                f"end, `... = {alias.split('`')[1]}` here), or pass a Python number (`float(...)`)")
    if " = " in alias:  # (a tuple assignment: frontend/alias_events.VALUE)
        return _tuple_refusal(alias, rank)
    base = alias.split("[", 1)[0]
    if rank > 1:
        return (f"this changes `{base}` in place, and a value bound to its item `{alias}` is read after it: in NumPy "
                f"that item is a view of `{base}`'s memory (`{base}` has {rank} dimensions or more), so it would "
                f"change too; srcjax arrays are immutable (as JAX's) and it would keep the old value",
                f"to keep the old value, copy where the item is taken (`{alias}.copy()`); to see the change, rebind "
                f"instead of changing in place (`{base} = {base} + v` for `{base} += v`) and take the item after it")
    return (f"this changes the array bound to `{alias}` in place, and NumPy's `{base}` holds that same array (an "
            f"item, or a view of its rows), so `{base}` read after it would change too; srcjax arrays are immutable "
            f"(as JAX's) and `{base}` would keep the old value",
            f"to keep the old value, copy where the name is bound (`... = {alias}.copy()`); to change `{base}`, "
            f"write into it (`{alias} = {alias} - v` for `w -= v`)")


def _split(side: str) -> list[str]:
    """The items of one side of a tuple assignment as written (``y[0], y[1]``), split at its top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(side):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(side[start:i].strip())
            start = i + 1
    return [*out, side[start:].strip()]


def _tuple_refusal(statement: str, rank: int, held: bool = False) -> tuple[str, str]:
    """The message and hint for the tuple assignment ``statement`` (``y[0], y[1] = y[1], y[0]``) of an array of
    ``rank`` dimensions or more (``held``: of arrays a container holds, its indices and keys counted with theirs), a
    later value of which is an item that an earlier target writes into."""
    targets, values = (_split(side) for side in statement.split(" = ", 1))
    item = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\[([^\[\],:]+)\]")
    found = [item.fullmatch(x) for x in targets + values]
    base = found[0].group(1) if found[0] else "y"
    fancy = f"`{base}[[0, 1]] = {base}[[1, 0]]` swaps two rows"
    if all(found) and len(targets) == len(values) and {m.group(1) for m in found if m} == {base}:
        ti, vi = (", ".join(m.group(2).strip() for m in found[a:b] if m)
                  for a, b in ((0, len(targets)), (len(targets), None)))
        fancy = f"`{base}[[{ti}]] = {base}[[{vi}]]`"
    copies = ", ".join(f"{v}.copy()" if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*\[.*\]", v) else v for v in values)
    return (f"`{statement}`: NumPy evaluates the values first, and an item taken by integer indices of an array of "
            f"{rank} dimensions or more"
            + (" (counting the indices and keys of the list, tuple or dict that holds it: a list of 2-D arrays "
               "counts 3)" if held else "")
            + " is a view of its memory, not a copy; it then writes the targets in order, so a value read after an "
            "earlier target wrote into its elements holds what that write put there (swapping two rows this way "
            "makes both rows the second one); srcjax's values are the items as they were, so the answers would "
            "differ",
            f"index with lists, which copies: {fancy}; or copy the values: `{', '.join(targets)} = {copies}`")
