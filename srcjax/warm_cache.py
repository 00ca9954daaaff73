"""The level-2 persistent cache: a new process that runs a program an earlier one ran skips the front
end (reading, normalizing, differentiating, specializing, lowering) and XLA's compile.

An entry is keyed by what names the program before any source is read: the function's identity
(module, qualified name, file and line; for a derivative, the transformation and its options over
its function's identity), the argument signature with static values, the device and platform, the
versions of srcjax (a fingerprint of its files), jaxlib, NumPy and Python. It stores the StableHLO
text, the results' structure and abstract values, the generated Python source, and what the front
end read to write that program, which a lookup checks before serving it:

- every user source file it read (path and SHA-256 of its text): an edit to the function, to a
  helper in another module, anywhere in those files, misses;
- every module-level name it read and its value (``module.NAME`` = a stable description: numbers,
  strings, tuples, arrays by the hash of their bytes, functions and modules by name): a constant
  changed at import time (from the environment, another module) misses.

What cannot be described that way is never stored: functions with closures, reads of attributes of
the user's objects, static arguments or constants of other types, sharded programs. The entry is
JSON, read with ``json`` (never unpickled) and stored by ``runtime/disk_cache.py`` with its safety
rules (0700, owner checks, a checksum, atomic writes, LRU eviction, ``SRCJAX_CACHE=0``). The XLA
executable is then loaded from that cache's first level, keyed by the text itself.

Recording: the front end calls :func:`note_file` when it reads a function's source,
:func:`note_global` when it reads a name in a module's namespace and :func:`note_attr` for an
attribute; while a :class:`Reads` is active (:func:`recording`) those land in it.
"""

from __future__ import annotations

import hashlib
import json
import linecache
import os
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import pytree
from .reuse import fingerprint as _contents_of

__all__ = ["Reads", "current", "entry", "identity", "lookup", "note_attr", "note_closure", "note_file",
           "note_global", "recording", "store"]

_LOCAL = threading.local()
_READ: dict[str, tuple[list[str], str | None]] = {}  # path -> (linecache's lines, their hash) when last read
_ROOT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MISSING = object()
_LIBRARY_ROOTS = frozenset({"numpy", "srcjax", "math", "builtins", "jaxlib", "ml_dtypes", "functools", "operator",
                            "itertools", "cmath", "typing", "collections", "types", "dataclasses"})
STATS = {"hits": 0, "misses": 0, "stores": 0}  # this process's lookups (tests read them)


class Reads:
    """What the front end read while writing one program (or a set of them)."""

    __slots__ = ("files", "names", "tainted", "seen", "noted")

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.names: dict[tuple[str, str], str] = {}  # (module, name) -> stable description of the value
        self.tainted: str | None = None  # why this cannot be cached (None: it can)
        # every read in this process, for reusing a transformed object (reuse.py): (kind, id(where), name,
        # id(value)) -> (kind, where, name, value, its fingerprint then); kind "global", "closure" or "attr"
        self.seen: dict[tuple[str, int, str, int], tuple[str, Any, str, Any, Any]] = {}
        self.noted: set[tuple[int, str, int]] = set()  # (id(namespace), name, id(value)): note_global done here

    def merge(self, other: Reads) -> None:
        self.files |= other.files
        self.names.update(other.names)
        self.seen.update(other.seen)
        self.noted |= other.noted
        if self.tainted is None:
            self.tainted = other.tainted

    def taint(self, why: str) -> None:
        if self.tainted is None:
            self.tainted = why


def _active() -> list[Reads]:
    stack: list[Reads] | None = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


@contextmanager
def recording(reads: Reads) -> Iterator[Reads]:
    """Record the front end's reads into ``reads`` (nested recordings all get them)."""
    stack = _active()
    stack.append(reads)
    try:
        yield reads
    finally:
        stack.pop()


def replay(reads: Reads) -> None:
    """Note ``reads`` again in every recording open now (a result of the front end's reused: what reading it read)."""
    for r in getattr(_LOCAL, "stack", None) or ():
        r.merge(reads)


def current() -> Reads | None:
    """The innermost recording open now (None: none): what a reader that remembers a lookup checks is still
    the one its reads were noted into (``Resolver.static_value``)."""
    stack = getattr(_LOCAL, "stack", None)
    return stack[-1] if stack else None


def note_file(filename: str) -> None:
    stack = getattr(_LOCAL, "stack", None)
    if stack:
        path = filename if filename.startswith("<") else os.path.abspath(filename)
        if path.startswith(_ROOT):
            return  # srcjax's own source (srcjax.adjoint): in the fingerprint
        if not path.startswith("<"):
            lines = linecache.getlines(path)  # the text the front end just read (inspect reads it here)
            seen = _READ.get(path)
            if seen is None or seen[0] is not lines:
                _READ[path] = (lines, _text_hash(lines))
        for r in stack:
            r.files.add(path)


def _see(stack: list[Reads], kind: str, where: Any, name: str, value: Any) -> None:
    """Note a read for :mod:`srcjax.reuse` (the value's contents now, when they can change)."""
    key = (kind, id(where), name, id(value))
    snap: Any = _MISSING
    for r in stack:
        if key not in r.seen:
            if snap is _MISSING:
                snap = _contents_of(value)
            r.seen[key] = (kind, where, name, value, snap)


def _taint(why: str) -> None:
    for r in getattr(_LOCAL, "stack", None) or ():
        r.taint(why)


def _library(v: Any) -> bool:
    """Part of srcjax, NumPy, Python's standard modules (fixed by the versions in the key)."""
    if isinstance(v, types.ModuleType):
        mod: Any = v.__name__
    elif isinstance(v, type) or callable(v):
        mod = getattr(v, "__module__", None)
        if mod is None and isinstance(v, np.ufunc):
            mod = "numpy"
    else:
        mod = type(v).__module__
    return isinstance(mod, str) and mod.split(".")[0] in _LIBRARY_ROOTS


def _generated(v: Any) -> bool:
    """A function srcjax wrote (a derivative of a helper): derived from the files recorded."""
    code = getattr(v, "__code__", None)
    return code is not None and code.co_filename.startswith("<srcjax")


def note_global(namespace: dict[str, Any], name: str, value: Any) -> None:
    """The front end read ``name`` in ``namespace`` (a module's globals, or a copy of them that
    generated code runs in) and got ``value``."""
    stack = getattr(_LOCAL, "stack", None)
    if not stack:
        return
    modname = namespace.get("__name__")
    if isinstance(modname, str) and modname.split(".")[0] in _LIBRARY_ROOTS:
        return  # srcjax's and NumPy's own namespaces: fixed by the versions in the key
    key = (id(namespace), name, id(value))
    if all(key in r.noted for r in stack):
        return  # (read before in every recording open now: noted then, below; `seen` keeps `value` alive)
    _see(stack, "global", namespace, name, value)
    for r in stack:
        r.noted.add(key)
    real = sys.modules.get(modname) if isinstance(modname, str) else None
    if real is not None and real.__dict__.get(name, _MISSING) is value:
        rep = stable(value)
        if rep is None:
            _taint(f"{modname}.{name} is a {type(value).__name__}")
            return
        for r in stack:
            r.names[(modname, name)] = rep  # type: ignore[index]
    elif (rep := _module_function(value)) is not None:  # (a user's function under another name: reverse mode's
        for r in stack:                                    # copy `g_1` of `g`)
            r.names[(value.__module__, value.__qualname__)] = rep
    elif not _library(value) and not _generated(value):
        _taint(f"{name} is not a module-level name of {modname}")


_QUIET: dict[int, types.ModuleType] = {}  # id -> a library module (np, math, ...) whose members read_attr notes not


def _module_function(v: Any) -> str | None:
    """:func:`stable` of a plain function that its module holds under its own name (so a lookup can check it is
    still there); None for anything else."""
    if not isinstance(v, types.FunctionType):
        return None
    m = sys.modules.get(v.__module__)
    return stable(v) if m is not None and m.__dict__.get(v.__qualname__) is v else None


def note_closure(name: str, value: Any) -> None:
    """The front end read a function's closure variable (no module holds it: not cached, unless srcjax's)."""
    stack = getattr(_LOCAL, "stack", None)
    if stack:
        if not _library(value):
            _taint(f"reads the closure variable {name}")
        _see(stack, "closure", None, name, value)  # (an array: its contents)


def read_name(closure: dict[str, Any], namespace: dict[str, Any], name: str) -> Any:
    """``name`` read from a function's closure, else its module's namespace (noted)."""
    if name in closure:
        note_closure(name, closure[name])
        return closure[name]
    note_global(namespace, name, namespace[name])
    return namespace[name]


def read_attr(base: Any, attr: str) -> Any:
    """``getattr(base, attr)``, noted (a member of NumPy or another library module: never noted)."""
    value = getattr(base, attr)
    if _QUIET.get(id(base)) is not base:
        note_attr(base, attr, value)
    return value


def note_attr(base: Any, attr: str, value: Any) -> None:
    """The front end read ``base.attr`` (a constant's attribute, a module's member)."""
    stack = getattr(_LOCAL, "stack", None)
    if not stack:
        return
    if isinstance(base, types.ModuleType):
        modname = base.__dict__.get("__name__")
        if isinstance(modname, str) and modname.split(".")[0] in _LIBRARY_ROOTS:
            _QUIET[id(base)] = base  # (note_global would return at once: its reads need no noting)
            return
        note_global(base.__dict__, attr, value)
    elif type(value).__module__.startswith("srcjax.lower."):
        return  # a traced value (a field of an argument's NamedTuple or dataclass: its structure is in the key)
    elif not _library(base):
        _taint(f"reads .{attr} of a {type(base).__name__}")
        _see(stack, "attr", base, attr, value)


def stable(v: Any, depth: int = 0) -> str | None:
    """A description of ``v`` equal in another process exactly when the value is (None: none)."""
    if depth > 16:
        return None
    t = type(v)
    if v is None or t in (bool, int, float, complex, str, bytes):
        return f"{t.__name__}:{v!r}"
    if t is np.ndarray:
        if v.dtype.hasobject:
            return None
        digest = hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
        return f"ndarray:{v.dtype.name}:{v.shape}:{digest}"
    if isinstance(v, np.generic):
        return f"np:{v.dtype.name}:{v!r}"
    if isinstance(v, np.dtype):
        return f"dtype:{v.name}"
    if t in (tuple, list):
        parts = [stable(x, depth + 1) for x in v]
        return None if None in parts else f"{t.__name__}(" + ",".join(parts) + ")"  # type: ignore[arg-type]
    if t is dict:
        items = [(stable(k, depth + 1), stable(x, depth + 1)) for k, x in v.items()]
        if any(a is None or b is None for a, b in items):
            return None
        return "dict(" + ",".join(f"{a}={b}" for a, b in items) + ")"
    if isinstance(v, types.ModuleType):
        return "module:" + v.__name__
    if isinstance(v, type) or callable(v):
        mod = getattr(v, "__module__", None)
        qual = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
        if not isinstance(qual, str) or not (isinstance(mod, str) or isinstance(v, np.ufunc)):
            return None
        where = ""
        code = getattr(v, "__code__", None)
        if code is not None:
            where = f"@{code.co_filename}:{code.co_firstlineno}"
        return f"{type(v).__name__}:{mod}.{qual}{where}"
    return None


# -- keys ---------------------------------------------------------------------------------------------

def identity(fn: Any) -> list[Any] | None:
    """A plain function's identity across processes (None for closures and functions without a file)."""
    if not isinstance(fn, types.FunctionType) or fn.__closure__:
        return None
    code = fn.__code__
    if not os.path.isfile(code.co_filename):
        return None
    defaults = _plain((fn.__defaults__, sorted((fn.__kwdefaults__ or {}).items())))
    if defaults is None:
        return None
    # (two lambdas on one line share file, line and qualname: their code tells them apart; so do the
    # default values of functions made in a loop, `lambda x, k=k: x * k`)
    return ["fn", fn.__module__, fn.__qualname__, os.path.abspath(code.co_filename), code.co_firstlineno,
            _code_hash(code), defaults]


def _code_hash(code: types.CodeType) -> str:
    """The compiled code of a function (and of the functions nested in it), with where it starts."""
    h = hashlib.sha256()
    first = next(iter(code.co_positions()), None)
    h.update(repr((code.co_code, code.co_names, code.co_varnames, first)).encode())
    for c in code.co_consts:
        h.update(_code_hash(c).encode() if isinstance(c, types.CodeType) else repr((type(c).__name__, c)).encode())
    return h.hexdigest()


def _plain(v: Any) -> Any:
    """``v`` as JSON when it is made of None, bools, numbers, strings, tuples and lists; else None."""
    if v is None or isinstance(v, (bool, int, str)) or (isinstance(v, float) and v == v):
        return [type(v).__name__, v]
    if isinstance(v, (tuple, list)):
        items = [_plain(x) for x in v]
        return None if any(x is None for x in items) else [type(v).__name__, items]
    return None


def _tree(t: pytree.TreeDef, keyed: bool = False) -> Any:
    """``t`` as JSON (None: not described so). ``keyed``: for a key only (never read back), where a NamedTuple
    or a dataclass is its class's name with its fields in order (what the program's leaves follow)."""
    if t.kind in ("leaf", "none"):
        return t.kind
    kids = [_tree(c, keyed) for c in t.children]
    if None in kids:
        return None
    if t.kind in ("tuple", "list"):
        return [t.kind, kids]
    if t.kind == "dict" and all(type(k) is str for k in t.keys):
        return ["dict", kids, list(t.keys)]
    if keyed and t.kind in ("namedtuple", "record"):
        cls = t.keys[0]
        fields = list(cls._fields if t.kind == "namedtuple" else t.keys[1])
        name = stable(cls)
        return None if name is None or not all(type(f) is str for f in fields) else [t.kind, kids, name, fields]
    return None


def _untree(j: Any) -> pytree.TreeDef:
    if j == "leaf":
        return pytree.LEAF
    if j == "none":
        return pytree.NONE
    kind, kids = j[0], tuple(_untree(c) for c in j[1])
    return pytree.TreeDef(kind, kids, tuple(j[2]) if kind == "dict" else ())


def _argkey(k: Any, depth: int = 0) -> Any:
    """A cache key of ``Compiled._key`` as JSON (None where a part has no stable form)."""
    if depth > 32:
        return None
    if isinstance(k, pytree.TreeDef):
        return {"tree": _tree(k, keyed=True)} if _tree(k, keyed=True) is not None else None
    if isinstance(k, np.dtype):
        return {"dtype": k.name}
    if isinstance(k, type):
        return {"type": k.__name__} if k in (float, int, bool, complex) else None
    if type(k) is tuple:
        parts = [_argkey(x, depth + 1) for x in k]
        return None if any(p is None for p in parts) else parts
    if type(k).__name__ == "Static":
        s = stable(k.value)
        return None if s is None else {"static": s}
    s = stable(k)
    return None if s is None else {"value": s}


_FINGERPRINT: str | None = None


def _fingerprint() -> str:
    """srcjax's own files (names, sizes, modification times): an edited srcjax is another compiler."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256()
        for d, dirs, files in sorted(os.walk(root)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    st = os.stat(os.path.join(d, f))
                    h.update(f"{os.path.relpath(os.path.join(d, f), root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def fingerprint() -> str:
    """A digest of srcjax's own files: what srcjax derives from its own code (this cache's entries, the
    normalized library helpers of ``frontend/library_cache.py``) is keyed by it."""
    return _fingerprint()


def entry_key(ident: list[Any], argkey: Any, device: str | None, environment: str) -> str | None:
    a = _argkey(argkey)
    if a is None:
        return None
    text = json.dumps(["srcjax-program-1", _fingerprint(), np.__version__, sys.version, environment, device,
                       ident, a], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# -- entries --------------------------------------------------------------------------------------------

def _file_hash(path: str) -> str | None:
    """SHA-256 of the text Python's ``linecache`` holds for ``path`` (what ``inspect``, and so the front
    end, reads), or None when there is none."""
    return _text_hash(linecache.getlines(path))


def _text_hash(lines: list[str]) -> str | None:
    if not lines:
        return None
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def _aval_json(a: Any) -> list[Any] | None:
    if a.dtype.name == "bfloat16":
        return None
    return [list(a.shape), a.dtype.name, bool(a.weak_type)]


def key_text(argkey: Any) -> str | None:
    """``Compiled._key``'s key as text (None where a part has no stable form)."""
    a = _argkey(argkey)
    return None if a is None else json.dumps(a, sort_keys=True)


def entry(reads: Reads, argkey: Any, text: str, out_avals: list[Any], tree: pytree.TreeDef, template: list[Any],
          in_avals: list[Any], auto_static: frozenset[str], source: str | None) -> bytes | None:
    """A program's entry, for :func:`store`, if everything it depends on has a stable description (else None).
    (Made while XLA compiles the program: ``runtime/compile_worker.py``; stored once it compiled.)"""
    final = key_text(argkey)
    if "xla_ffi_python_cpu_callback" in text:
        return None  # print(): its callbacks are this process's Python closures, named by table ids
    depends = _depends(reads)
    if depends is None or final is None:
        return None
    t = _tree(tree)
    outs = [_aval_json(a) for a in out_avals]
    ins = [_aval_json(a) for a in in_avals]
    if t is None or None in outs or None in ins:
        return None
    temp: list[Any] = []
    for x in template:
        if x is None:
            temp.append(None)
        elif type(x) in (int, float, bool, str):
            temp.append({type(x).__name__: x})
        else:
            return None
    return json.dumps({"key": final, **depends, "text": text, "out_avals": outs, "out_tree": t, "template": temp,
                       "in_avals": ins, "auto_static": sorted(auto_static), "source": source}).encode()


def store(key: str, blob: bytes | None) -> bool:
    """Store an :func:`entry` under ``key`` (nothing for None); whether it was stored."""
    from .runtime import disk_cache

    if blob is None:
        return False
    disk_cache.store_later(key, lambda: blob, kind="program")  # (written after the call: disk_cache.store_later)
    STATS["stores"] += 1
    return True


def _depends(reads: Reads) -> dict[str, Any] | None:
    """The files (with their hashes) and names ``reads`` holds, as JSON; None if not cacheable."""
    if reads.tainted is not None or not reads.files:
        return None
    files = []
    for path in sorted(reads.files):
        if path.startswith("<"):
            continue  # srcjax's own generated text (derivatives, NumPy wrappers): from the files below
        seen = _READ.get(path)  # (the text as read: an edit since then must not be stored as what was read)
        digest = seen[1] if seen is not None else _file_hash(path)
        if digest is None:
            return None
        files.append([path, digest])
    return {"files": files, "names": [[m, n, r] for (m, n), r in sorted(reads.names.items())]}


def _fresh(entry: dict[str, Any]) -> bool:
    """Whether every file and module-level name an entry depends on is as it was."""
    for path, digest in entry["files"]:
        linecache.checkcache(path)  # (as inspect does before the front end reads a file)
        if _file_hash(path) != digest:
            return False
    for mod, name, rep in entry["names"]:
        m = sys.modules.get(mod)
        if m is None or stable(m.__dict__.get(name, _MISSING)) != rep:
            return False
    return True


def note_entry(entry: dict[str, Any], reads: Reads) -> None:
    """An entry served (its module-level names checked by :func:`lookup`): its names as reads of this
    process (``Reads.seen``: what a reused object checks; the front end did not run to note them)."""
    for mod, name, _ in entry["names"]:
        ns = sys.modules[mod].__dict__
        _see([reads], "global", ns, name, ns.get(name, _MISSING))


def mark(key: str, *reads: Reads, data: Any = None) -> None:
    """Note that the front end wrote a derivative under ``key`` from what ``reads`` hold (so a new
    process may wait for the first call to write it again: :func:`marked`), with ``data`` (JSON: what
    that process needs to know of the derivative without writing it, :func:`marked_data`)."""
    from .runtime import disk_cache

    both = Reads()
    for r in reads:
        both.merge(r)
    depends = _depends(both)
    if depends is not None:
        blob = json.dumps({"marker": True, **depends, "data": data}).encode()
        disk_cache.store_later(key, lambda: blob, kind="program")


def marked(key: str) -> bool:
    """Whether :func:`mark` noted ``key`` and nothing it read has changed."""
    return marked_data(key) is not MISSING


MISSING = _MISSING  # (what :func:`marked_data` returns for no marker, or a stale one)


def marked_data(key: str) -> Any:
    """The ``data`` :func:`mark` noted under ``key`` if nothing it read has changed, else :data:`MISSING`."""
    from .runtime import disk_cache

    blob = disk_cache.load(key, count=False, kind="program")
    try:
        entry = json.loads(blob) if blob is not None else None
        return entry.get("data") if entry is not None and _fresh(entry) else _MISSING
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return _MISSING


def lookup(key: str) -> dict[str, Any] | None:
    """The entry under ``key`` if every file and name it read is unchanged (None otherwise)."""
    from .core import ShapedArray
    from .runtime import disk_cache

    blob = disk_cache.load(key, count=False, kind="program")
    if blob is None:
        STATS["misses"] += 1
        return None
    try:
        entry = json.loads(blob)
        if not _fresh(entry):
            STATS["misses"] += 1
            return None
        for field in ("out_avals", "in_avals"):
            entry[field] = [ShapedArray(tuple(s), np.dtype(d), weak_type=w) for s, d, w in entry[field]]
        entry["out_tree"] = _untree(entry["out_tree"])
        entry["template"] = [None if x is None else next(iter(x.values())) for x in entry["template"]]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        STATS["misses"] += 1
        return None  # not an entry this version wrote: ignored (and replaced by the next store)
    STATS["hits"] += 1
    return entry  # type: ignore[no-any-return]
