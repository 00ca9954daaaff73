"""A user function's normalized form, shared by the programs that read it alike (issue #15).

``jacrev(f)`` reads ``f`` twice: as its own program's entry (the VJP is written from it) and as a helper of
the Jacobian's program (``out = f(x)``: the output's shape). Each :class:`~srcjax.frontend.program.Program`
normalized it again. A form is reused when the second reading would write the same text:

* the same name in the generated module, the same ``comprehension_loops`` option, no bound parameters
  (``bound_helpers``), a user function (srcjax's helpers have their own cache: ``library_cache``);
* every function the first reading named (its callees, and the helpers it reserved names for) gets the
  same name in the new program: already named so there, or its own unsuffixed name, free there (a
  suffixed name depended on the caller's locals: never reused);
* nothing normalizing read has changed since (:func:`srcjax.reuse.unchanged`, as a transformed object is
  reused), nor the function's code, defaults or closure values (the same objects), in the same generation of
  :func:`srcjax.reuse.forget` (each test starts with its own).

The reused form's reads are noted again in the recordings open now (the level-2 cache's, ``reuse``'s), and its
callees are named in the new program in the order the first reading named them (the same queue, so the same
helpers in the same order). A form is never changed after normalizing (functionalizing copies it), so the
programs share the object itself. Kept on the function (``lifetimes.PerFunction``): it dies with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import reuse, warm_cache
from ..lifetimes import PerFunction
from . import shadowing
from .normalize import NormalizedFunction
from .read import function_name, is_generated
from .resolve import LIBRARY_MODULES, unwrap

HelperName = Callable[..., str]

# fn -> (name, comprehension_loops) -> (form, what normalizing read, the names it asked for in order, generation,
# the function's code, defaults and closure values then)
_Kept = tuple[NormalizedFunction, warm_cache.Reads, tuple[tuple[Any, str], ...], int, tuple[Any, ...]]
_FORMS: PerFunction[_Kept] = PerFunction("normalized")


def normalized(fn: Callable[..., Any], normalize: Callable[..., NormalizedFunction], helper_name: HelperName,
               named: dict[Callable[..., Any], str], name: str, comprehension_loops: bool) -> NormalizedFunction:
    """``fn`` (a user function without bound parameters) normalized as ``name`` for a program whose functions
    are ``named`` (function -> its name there) and which names functions with ``helper_name``: the form an
    earlier program wrote where it is the same, else a new one by ``normalize`` (``frontend.normalize``'s,
    as ``program`` calls it), kept for the next program."""
    key = (name, comprehension_loops)
    hit = _FORMS.get(fn, key)
    if hit is not None and _same(hit, named, _made_of(fn)):
        form, reads, asked, _, _ = hit
        for callee, _ in asked:  # (named here as the first reading named them: the same queue of helpers)
            helper_name(callee)
        warm_cache.replay(reads)
        return form
    asked_now: list[tuple[Any, str]] = []

    def naming(callee: Callable[..., Any], *avoid: Any) -> str:
        got = helper_name(callee, *avoid)
        asked_now.append((unwrap(callee), got))
        return got

    reads = warm_cache.Reads()
    with warm_cache.recording(reads):
        form = normalize(fn, naming, name, None, comprehension_loops)
    try:
        _FORMS.set(fn, key, (form, reads, tuple(asked_now), reuse.generation(), _made_of(fn)))
    except TypeError:  # (an unhashable callable: not kept)
        pass
    return form


def _made_of(fn: Callable[..., Any]) -> tuple[Any, ...]:
    """What a function's text and values are read from: its code, defaults and closure values (``f.__code__ =
    g.__code__``, a closure variable rebound: read again)."""
    values = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # (an empty cell: a name bound later)
            values.append(_EMPTY)
    return (getattr(fn, "__code__", None), getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None),
            *values)


_EMPTY = object()


def _same(hit: _Kept, named: dict[Callable[..., Any], str], made_of: tuple[Any, ...]) -> bool:
    """Whether the kept form is what normalizing again for a program naming functions ``named`` would write."""
    _, reads, asked, generation, then = hit
    if generation != reuse.generation() or len(then) != len(made_of) or \
            any(a is not b for a, b in zip(then, made_of)) or not reuse.unchanged(reads.seen):
        return False
    taken = set(named.values())
    planned: dict[Any, str] = {}
    for callee, name in asked:
        have = named.get(callee, planned.get(callee))
        if have is not None:
            if have != name:
                return False
            continue
        library = getattr(callee, "__module__", "") in LIBRARY_MODULES and not is_generated(callee)
        if name != function_name(callee) or name in taken or not library and shadowing.is_taken(name):
            return False  # (a suffixed name, or one taken there: the new program may name it otherwise)
        planned[callee] = name
        taken.add(name)
    return True
