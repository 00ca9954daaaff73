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
  reused), in the same generation of :func:`srcjax.reuse.forget` (each test starts with its own).

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

# fn -> (name, comprehension_loops) -> (form, what normalizing read, the names it asked for in order, generation)
_FORMS: PerFunction[tuple[NormalizedFunction, warm_cache.Reads, tuple[tuple[Any, str], ...], int]] = \
    PerFunction("normalized")


def normalized(fn: Callable[..., Any], normalize: Callable[..., NormalizedFunction], helper_name: HelperName,
               named: dict[Callable[..., Any], str], name: str, comprehension_loops: bool) -> NormalizedFunction:
    """``fn`` (a user function without bound parameters) normalized as ``name`` for a program whose functions
    are ``named`` (function -> its name there) and which names functions with ``helper_name``: the form an
    earlier program wrote where it is the same, else a new one by ``normalize`` (``frontend.normalize``'s,
    as ``program`` calls it), kept for the next program."""
    key = (name, comprehension_loops)
    hit = _FORMS.get(fn, key)
    if hit is not None and _same(hit, named):
        form, reads, asked, _ = hit
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
        _FORMS.set(fn, key, (form, reads, tuple(asked_now), reuse.generation()))
    except TypeError:  # (an unhashable callable: not kept)
        pass
    return form


def _same(hit: tuple[NormalizedFunction, warm_cache.Reads, tuple[tuple[Any, str], ...], int],
          named: dict[Callable[..., Any], str]) -> bool:
    """Whether the kept form is what normalizing again for a program naming functions ``named`` would write."""
    _, reads, asked, generation = hit
    if generation != reuse.generation() or not reuse.unchanged(reads.seen):
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
