"""vmap's batched copies of srcjax's own helpers, written once per installation.

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

A new process finds the copies an earlier one wrote in the persistent cache (``runtime/disk_cache.py``: its
safety rules, checksummed, written atomically, JSON read with ``json``, never unpickled): a per-example
gradient's first call wrote 5-7 copies again in each process. An entry is keyed as the helper's normalized
form is (``library_cache.helper_key``: srcjax's files, the helper's code, and for a shared copy its text;
the libcst, NumPy and Python versions), and by the key above (the helper's name, the argument states, the
wanted result state, ``axis_name``: a string or None, else not stored); it holds the text, the result state,
the parameters needed batched, the effects and the names taken then. It is used under the same conditions as
a copy written in this process (the same names taken; the text's stems read from its text again); a corrupt
or foreign entry is ignored, and the copy written again stored over it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from ..batch_shared import is_shared
from ..frontend import library_cache, provenance
from ..frontend.program import library_form
from ..frontend.read import is_generated
from .batch_state import Repeated, Stack, State, Tree

if TYPE_CHECKING:
    from ..frontend.normalize import NormalizedFunction
    from .batch import Batcher

__all__ = ["keep", "outside_names", "reuse"]

KEPT = 256  # copies remembered (each a few hundred characters)
_VERSION = "srcjax-batched-copy-1"  # (the persistent cache's entries)

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
    """The copy written before for this key, in this process or an earlier one (recorded in the batcher as
    if written now), or None."""
    if not _library_form(b, nf, lists):
        return None
    k = _cache_key(b, nf, key)
    if k is None:
        return None
    hit = _COPIES.get(k)
    if hit is None:
        hit = _load(b, nf, key)  # (an earlier process's)
        if hit is None:
            return None
        _remember(k, hit)
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
    if name in b.sized:
        return  # (its callers pass the batch size: noted in the batcher when written, not when reused)
    text = provenance.strip(b.texts[name])  # (kept without its lines' marks: their numbers are this process's)
    words = set(_WORD.findall(text))
    if words & ((set(b.texts) - {name}) | set(b.program.functions)):
        return  # (it calls another function of this program, by this program's name for it)
    stems = frozenset(_NUMBERED.sub("", w) for w in words)
    then = frozenset(n for n in outside if _NUMBERED.sub("", n) in stems)
    hit = (nf, name, text, out[1], frozenset(out[2]), dict(out[3]), then, stems)
    _remember(k, hit)
    _store(b, nf, key, hit)


def _remember(k: Any, hit: Any) -> None:
    if len(_COPIES) >= KEPT:
        _COPIES.pop(next(iter(_COPIES)), None)
    _COPIES[k] = hit


def _disk_key(b: Batcher, nf: NormalizedFunction, key: Any) -> str | None:
    """The persistent cache's key of the copy of ``nf`` for ``key`` (None: not stored)."""
    if b.axis_name is not None and type(b.axis_name) is not str:
        return None
    helper = library_cache.helper_key(nf.fn, nf.name)
    if helper is None:
        return None
    name, states, want = key
    text = json.dumps([_VERSION, helper, name, [_state_json(s) for s in states],
                       None if want is None else _state_json(want), b.axis_name], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _store(b: Batcher, nf: NormalizedFunction, key: Any, hit: Any) -> None:
    """Keep the copy just written (``hit``: as :data:`_COPIES` holds it) for later processes; never raises."""
    from ..runtime import disk_cache

    try:
        if disk_cache.cache_dir() is None:
            return
        dkey = _disk_key(b, nf, key)
        if dkey is None:
            return
        _, name, text, ret, needs, effects, then, _ = hit
        record = {"version": _VERSION, "key": dkey, "helper": nf.name, "name": name, "text": text,
                  "ret": _state_json(ret), "needs": sorted(needs),
                  "effects": {p: _state_json(s) for p, s in effects.items()}, "then": sorted(then)}
        blob = json.dumps(record, separators=(",", ":")).encode()
        disk_cache.store_later(dkey, lambda: blob, kind="batched")
    except Exception:  # noqa: BLE001 - the cache is an optimization (a state it cannot write: not stored)
        pass


def _load(b: Batcher, nf: NormalizedFunction, key: Any) -> Any:
    """The copy of ``nf`` for ``key`` an earlier process stored (as :data:`_COPIES` holds it), or None."""
    from ..runtime import disk_cache

    try:
        dkey = _disk_key(b, nf, key)
        blob = None if dkey is None else disk_cache.load(dkey, count=False, kind="batched")
        if blob is None:
            return None
        r = json.loads(blob.decode())
        name, text = r["name"], r["text"]
        if r["version"] != _VERSION or r["key"] != dkey or r["helper"] != nf.name or type(name) is not str \
                or type(text) is not str or not text.startswith(f"def {name}("):
            return None
        needs, then = _names(r["needs"]), _names(r["then"])
        effects = r["effects"]
        if type(effects) is not dict:
            return None
        effects = {str(p): _json_state(s) for p, s in effects.items()}
        stems = frozenset(_NUMBERED.sub("", w) for w in _WORD.findall(text))  # (from the text, as when kept)
        return (nf, name, text, _json_state(r["ret"]), needs, effects, then, stems)
    except Exception:  # noqa: BLE001 - a corrupt or foreign entry: the copy is written again
        return None


def _names(v: Any) -> frozenset[str]:
    if type(v) is not list or any(type(n) is not str for n in v):
        raise ValueError("names")
    return frozenset(v)


def _state_json(s: State) -> Any:
    """A :data:`State` as JSON (``[kind, ...]`` for a container); raises TypeError on anything else."""
    t = type(s)
    if t is bool:
        return s
    if t is Tree:
        return ["tree", s.kind, [[k, _state_json(v)] for k, v in s.items]]  # type: ignore[union-attr]
    if t is Repeated or t is Stack:
        return ["repeated" if t is Repeated else "stack", [_state_json(e) for e in s.entries]]  # type: ignore[union-attr]
    raise TypeError(t)


def _json_state(v: Any) -> State:
    """The :data:`State` :func:`_state_json` wrote; raises ValueError on anything else."""
    if type(v) is bool:
        return v
    if type(v) is list and len(v) == 3 and v[0] == "tree" and type(v[1]) is str and type(v[2]) is list:
        items = []
        for item in v[2]:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
                raise ValueError("a tree's item")
            items.append((item[0], _json_state(item[1])))
        return Tree(v[1], tuple(items))
    if type(v) is list and len(v) == 2 and v[0] in ("repeated", "stack") and type(v[1]) is list:
        return (Repeated if v[0] == "repeated" else Stack)(tuple(_json_state(e) for e in v[1]))
    raise ValueError("a state")


def clear() -> None:
    """Forget every copy (tests)."""
    _COPIES.clear()
