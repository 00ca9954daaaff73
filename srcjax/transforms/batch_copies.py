"""vmap's batched copies of srcjax's own helpers, written once per process.

A batched derivative calls library helpers (``matmul_rhs_bar``, ``max_bar`` of ``srcjax.adjoint``); the
batcher writes a copy of each for its argument states (``matmul_rhs_bar_vmap``), ~3 ms a copy, the same
text in every program that batches the helper for those states. :func:`reuse` hands back the text an
earlier program's batcher wrote, :func:`keep` remembers it.

Input: a :class:`~srcjax.transforms.batch.Batcher` about to write (or that just wrote) the copy of a
program function for a key ``(name, argument states, wanted result state)``. Kept only when the text
can depend on nothing else:

- the function is a library helper in its process-wide normalized form (``program.library_form``:
  the same tree in every program; a copy srcjax wrote only when shared, ``batch_shared.py``), not on a
  cycle of calls (no tapes), with no test found on data;
- writing it wrote nothing else (no other helper's copy, no custom rule) and its text names no other
  function of the program or copy written (a call of another helper is that program's name for it);
- the names it took are the same: the fresh names in the copy (``mul_1``, the copy's own name) avoid the
  program's functions and the names the batcher took, so the names taken then and now that share a
  stem (``mul`` of ``mul_1``) with a word of the text must be the same set.

Nothing in the key or the conditions is reused across differently configured batchers: ``axis_name``
is part of the key.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..batch_shared import is_shared
from ..frontend.program import library_form
from ..frontend.read import is_generated

if TYPE_CHECKING:
    from ..frontend.normalize import NormalizedFunction
    from .batch import Batcher

__all__ = ["keep", "outside_names", "reuse"]

KEPT = 256  # copies remembered (each a few hundred characters)

_WORD = re.compile(r"[A-Za-z_]\w*")
_NUMBERED = re.compile(r"(_\d+)+$")

# (helper function, key, axis_name) -> (its normalized form, copy's name, text, result state, parameters
# needed batched, effects, the names taken then that share a stem with a word of the text, those stems)
_COPIES: dict[Any, tuple[Any, str, str, Any, frozenset[str], dict[str, Any], frozenset[str], frozenset[str]]] = {}


def _library_form(b: Batcher, nf: NormalizedFunction, lists: set[str]) -> bool:
    # (a copy srcjax wrote only when shared: a program's own copy, a key here, would keep its program alive)
    return not lists and library_form(nf.fn) is nf and not b.data_names.get(nf.name) and \
        not b.cycles.get(nf.name, True) and (not is_generated(nf.fn) or is_shared(nf.fn))


def _cache_key(b: Batcher, nf: NormalizedFunction, key: Any) -> Any:
    try:
        k = (nf.fn, key, b.axis_name)
        hash(k)
    except TypeError:
        return None
    return k


def outside_names(b: Batcher, nf: NormalizedFunction, lists: set[str]) -> set[str] | None:
    """The names a copy's fresh names avoid (taken by the batcher, the program's functions), before it
    is written; None when the copy of ``nf`` is not one to keep."""
    if not _library_form(b, nf, lists):
        return None
    return set(b.names.taken) | set(b.program.functions)


def reuse(b: Batcher, nf: NormalizedFunction, key: Any, lists: set[str]) -> Any:
    """The copy written before for this key (recorded in the batcher as if written now), or None."""
    if not _COPIES or not _library_form(b, nf, lists):
        return None
    k = _cache_key(b, nf, key)
    hit = _COPIES.get(k) if k is not None else None
    if hit is None:
        return None
    form, name, text, ret, needs, effects, then, stems = hit
    if form is not nf:
        return None
    now = {n for n in set(b.names.taken) | set(b.program.functions) if _NUMBERED.sub("", n) in stems}
    if now != then:
        return None
    got = b.names.fresh(f"{nf.name}_vmap")
    if got != name:  # (not expected: the same names taken that share its stem give the same name)
        b.names.taken.discard(got)
        return None
    b.texts[name] = text
    b.origins[name] = nf.name
    out = (name, ret, set(needs), dict(effects))
    b.written[key] = out
    return out


def keep(b: Batcher, nf: NormalizedFunction, key: Any, outside: set[str] | None, written: set[Any],
         texts: set[str], customs: set[str], out: Any) -> None:
    """Remember the copy just written (``out``: :meth:`Batcher.function`'s result) if nothing but
    the conditions above made its text; ``written``, ``texts``, ``customs``: the batcher's before."""
    if outside is None:
        return
    name = out[0]
    k = _cache_key(b, nf, key)
    if k is None or set(b.written) - written != {key} or set(b.texts) - texts != {name} or \
            set(b.customs) != customs or b.data_names.get(nf.name):
        return
    text = b.texts[name]
    words = set(_WORD.findall(text))
    if words & ((set(b.texts) - {name}) | set(b.program.functions)):
        return  # (it calls another function of this program, by this program's name for it)
    stems = frozenset(_NUMBERED.sub("", w) for w in words)
    then = frozenset(n for n in outside if _NUMBERED.sub("", n) in stems)
    if len(_COPIES) >= KEPT:
        _COPIES.pop(next(iter(_COPIES)), None)
    _COPIES[k] = (nf, name, text, out[1], frozenset(out[2]), dict(out[3]), then, stems)


def clear() -> None:
    """Forget every copy (tests)."""
    _COPIES.clear()
