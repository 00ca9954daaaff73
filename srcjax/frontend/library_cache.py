"""srcjax's own helpers (``srcjax.adjoint``, ``srcjax.batched``, ...), normalized once per installation.

Generated derivatives and batched programs call ~25 library helpers, which are read, normalized and
specialized like user code. :class:`~srcjax.frontend.program.Program` keeps their normalized form for
the rest of the process; this module keeps it on disk too, so a new process does not read and
normalize them again (40-60 ms of a cold process's first ``hessian``): the normalized text is stored
in the persistent cache (``runtime/disk_cache.py``: its safety rules, JSON read with ``json``, never
unpickled), with the statements' spans, the helpers it calls (by module and qualified name), the
names the normalizer invented, and the names and the ``def``'s place of the helper's own source.

Keyed by srcjax's files (``warm_cache.fingerprint``: an edited srcjax, normalizer or helper, is
another key), the helper's code, and the libcst, NumPy and Python versions. An entry is written only
when its text parses back into exactly the tree the normalizer built (:func:`_same`), and loaded
only when every helper it calls is found again by name; otherwise the helper is normalized as
before. The helper's own source (:class:`~srcjax.frontend.read.UnreadSource`) is read only if
something asks for it (an error's location).

The tree is stored beside its text as flat JSON lists (:func:`_encode`: its nodes in pre-order, each its
libcst class, by name, and its fields in order, a child node by its place; whitespace included; each distinct
token or whitespace node written once, a name without parentheses written where it is held), rebuilt
without libcst's parser in one loop (:func:`_decode`: ~45% less than parsing the text, which was most of
loading a helper: 20-25% of a warm first ``vmap(grad(f))`` or ``jacrev``; no call a node), its statements'
spans set by their places (no walk of the rebuilt tree). The rebuilt tree is the parsed text's tree, node
type for node type and field for field (:func:`_identical`; tests/test_first_call.py checks every helper),
an entry names only libcst's node classes (nothing else is made from one), and a stored tree that is not
a tree (a cycle, a node held twice or by nothing, a field unset) is refused; an entry without a tree, or
with one refused, is parsed, as before.

vmap's shared batched copies of the helpers (``batch_shared.py``: ``max_bar_vmap``, a module of its own
whose text decides what it computes) are kept the same way, keyed by that text too (a copy's code is
written in each process, not in srcjax's files); spans in the copy's own module are stored without its
name (``<srcjax.vmap shared max_bar_vmap #2>`` in one process, ``#5`` in another), and a copy with spans
in another generated module, or calling another copy, is not kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import linecache
import sys
from collections.abc import Callable
from itertools import repeat
from typing import Any

import libcst as cst
import numpy as np

from .. import warm_cache
from ..core import Span
from .bound_helpers import bound_names
from .names import syntax_children, walk
from .normalize import NormalizedFunction
from .read import UnreadSource, is_generated, parse_module

_VERSION = "srcjax-normalized-6"
_MODULE = cst.Module(body=[])
_WHITESPACE = (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline)


_SHARED_ATTR = "__srcjax_shared__"  # (batch_shared.SHARED_ATTR: on a shared batched copy; that module imports this one)
_OWN_FILE = ""  # a span's file name where it is the shared copy's own module (another name in each process)


def _shared_text(fn: Callable[..., Any]) -> str | None:
    """The text of a shared batched copy's module (only the copy's own function), or None for anything else
    (and for a copy with parameters fixed to functions: its form depends on them too)."""
    if not isinstance(getattr(fn, "__dict__", {}).get(_SHARED_ATTR), str) or bound_names(fn) is not None:
        return None
    return "".join(linecache.getlines(fn.__code__.co_filename)) or None


def _key(fn: Callable[..., Any], name: str, text: str | None = None) -> str:
    code = fn.__code__
    h = _key_start(warm_cache.fingerprint()).copy()
    for part in (fn.__module__, fn.__qualname__, name, str(code.co_firstlineno), text or ""):
        h.update(part.encode())
        h.update(b"\0")
    h.update(code.co_code)
    return h.hexdigest()


def helper_key(fn: Callable[..., Any], name: str) -> str | None:
    """The key of the library helper ``fn`` named ``name`` (or of a shared batched copy of one, its text
    included), as its normalized form's entry is keyed: what srcjax derives from the helper alone is keyed by
    it; None for anything else (a function srcjax wrote in this process that is not a shared copy)."""
    shared = _shared_text(fn) if is_generated(fn) else None
    if shared is None and is_generated(fn):
        return None
    return _key(fn, name, shared)


def _key_start(fingerprint: str) -> Any:
    """The digest of what every helper's key starts with (this format, srcjax's files, the versions of
    libcst, NumPy and Python), remembered for ``fingerprint``."""
    if _KEY_START[0] != fingerprint:
        from libcst import _version

        h = hashlib.sha256()
        for part in (_VERSION, fingerprint, _version.__version__, np.__version__, sys.version):
            h.update(part.encode())
            h.update(b"\0")
        _KEY_START[:] = [fingerprint, h]
    return _KEY_START[1]


_KEY_START: list[Any] = [None, None]


def _find(module: str, qualname: str) -> Any:
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _ref(fn: Callable[..., Any]) -> list[str] | None:
    """``[module, qualified name]`` that finds ``fn`` again, or None."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or _find(module, qualname) is not fn:
        return None
    return [module, qualname]


def _same(a: Any, b: Any) -> bool:
    """The same tree, field by field, as far as what it computes goes: libcst's ``deep_equals``, except
    that a list and a tuple of the same nodes are the same (the normalizer builds lists where the parser
    builds tuples), and whitespace is not compared (a default ``MaybeSentinel`` is written as the
    whitespace or comma the parser then reads; the text, and so the code of the whole tree, is the same).

    Each node's type is classified once (:func:`_kind`): ``isinstance`` against libcst's abstract
    whitespace classes cost most of this walk, which runs on every helper stored (~2 ms each)."""
    if a is _DEFAULT or b is _DEFAULT:
        return True
    ta, tb = type(a), type(b)
    ka = _KINDS.get(ta)
    if ka is None:
        ka = _kind(ta)
    if ka == _SEQUENCE:
        if _KINDS.get(tb) is None:
            _kind(tb)
        return _KINDS[tb] == _SEQUENCE and len(a) == len(b) and all(map(_same, a, b))
    if ka == _SPACE:
        if _KINDS.get(tb) is None:
            _kind(tb)
        if _KINDS[tb] == _SPACE:
            return True
    if ta is not tb:
        return False
    if ka == _NODE:
        return all(_same(getattr(a, f), getattr(b, f)) for f in _FIELDS[ta])
    return bool(a == b)


_DEFAULT = cst.MaybeSentinel.DEFAULT
_SPACE, _SEQUENCE, _NODE, _VALUE = range(4)
_KINDS: dict[type, int] = {}  # a type -> which branch of _same compares its values
_FIELDS: dict[type, tuple[str, ...]] = {}  # a libcst node type -> its fields


def _kind(t: type) -> int:
    """``t``'s branch of :func:`_same`, remembered (a whitespace node first: it is also a node)."""
    if issubclass(t, _WHITESPACE):
        k = _SPACE
    elif issubclass(t, (list, tuple)):
        k = _SEQUENCE
    elif issubclass(t, cst.CSTNode):
        k = _NODE
        _FIELDS[t] = tuple(t.__dataclass_fields__)  # type: ignore[attr-defined]
    else:
        k = _VALUE
    _KINDS[t] = k
    return k


def _encode(node: Any, types: dict[str, int], leaves: dict[tuple[Any, ...], int], nodes: list[Any],
            index: dict[int, int], keep: frozenset[int] | set[int] = frozenset()) -> Any:
    """``node`` (a libcst tree) as JSON values, its nodes flat in ``nodes`` in pre-order (a node before its
    children): a node ``[its class's index in types, *its fields]`` there, and a field holding one its index
    in ``nodes`` (always past its holder's); a sequence (a tuple) a list of those, ``{}`` for
    ``MaybeSentinel.DEFAULT``, strings, booleans and None as they are; raises ValueError on anything else (a
    list, another value: then no tree is stored). A token or whitespace node (:data:`_LEAVES`:
    ``SimpleWhitespace(" ")``, ``Newline()``, ``Comma()``, ``Add()``, ``TrailingWhitespace()``: ~60% of a
    helper's nodes) whose fields are values or such nodes is ``-1 - its index`` in ``leaves`` (the distinct
    ones, written once, each after the leaves it holds: :func:`_leaf`): one node per distinct leaf when
    decoded. A name without parentheses is ``{"n": its text}`` where it is held (a fresh ``Name`` each,
    not in ``nodes``: ~25% of a helper's nodes), unless its ``id`` is in ``keep`` (a node with a span).
    ``index``: each node's place in ``nodes``, by its ``id`` (where its span goes)."""
    t = type(node)
    fields = _ENCODED.get(t)
    if fields is not None:
        if t is cst.Name and _INLINE_NAMES and node.lpar == () and node.rpar == () and id(node) not in keep \
                and type(node.value) is str:
            return {"n": node.value}
        if t in _LEAVES:
            j = _leaf(node, types, leaves)
            if j is not None:
                return -1 - j
        i = types.get(t.__name__)
        if i is None:
            i = types[t.__name__] = len(types)
        k = index[id(node)] = len(nodes)
        nodes.append(None)  # (its place first: its children come after it)
        nodes[k] = [i, *[_encode(getattr(node, f), types, leaves, nodes, index, keep) for f in fields]]
        return k
    if t is str or node is None or t is bool:
        return node
    if t is tuple:
        return [_encode(n, types, leaves, nodes, index, keep) for n in node]
    if node is _DEFAULT:
        return {}
    if isinstance(node, cst.CSTNode) and getattr(cst, t.__name__, None) is t:
        _ENCODED[t] = _fields(t)  # (a libcst node class, found again by its name)
        return _encode(node, types, leaves, nodes, index, keep)
    raise ValueError(t)


def _leaf(node: Any, types: dict[str, int], leaves: dict[tuple[Any, ...], int]) -> int | None:
    """``node``'s index in ``leaves`` (a :data:`_LEAVES` node whose fields are strings, booleans, None or such
    leaves: ``(its class's index, *its values, a leaf held as -1 - its index)``, added after the leaves it
    holds), or None where a field holds anything else (a tuple, ``MaybeSentinel.DEFAULT``: a node as usual)."""
    t = type(node)
    values: list[Any] = []
    for f in _fields(t):
        v = getattr(node, f)
        tv = type(v)
        if v is None or tv is str or tv is bool:
            values.append(v)
        elif tv in _LEAVES and getattr(cst, tv.__name__, None) is tv:
            j = _leaf(v, types, leaves)
            if j is None:
                return None
            values.append(-1 - j)
        else:
            return None
    i = types.get(t.__name__)
    if i is None:
        i = types[t.__name__] = len(types)
    leaf = (i, *values)
    j = leaves.get(leaf)
    if j is None:
        j = leaves[leaf] = len(leaves)
    return j


def _leaf_classes() -> frozenset[type]:
    """libcst's token and whitespace node classes (an operator, a comma, a parenthesis, whitespace): immutable
    and never asked for a span or position, so one node may stand for every equal one in a decoded tree."""
    bases = {cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp}
    # (by their MROs: issubclass against libcst's abstract classes walks every subclass of each, ~14 ms)
    ops = {c for c in vars(cst).values() if type(c) is not type(cst) and isinstance(c, type) and c not in bases
           and not bases.isdisjoint(c.__mro__)}
    return frozenset({cst.SimpleWhitespace, cst.Newline, cst.Comment, cst.TrailingWhitespace, cst.EmptyLine,
                      cst.Comma, cst.Dot, cst.Colon, cst.AssignEqual, cst.Semicolon, cst.LeftParen, cst.RightParen,
                      cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, *ops})


# token and whitespace nodes, shared within a decoded tree (libcst's nodes never change; spans and positions
# are never asked of them)
_LEAVES = _leaf_classes()
_ENCODED: dict[type, tuple[str, ...]] = {}  # libcst's node classes met -> their fields
_INLINE_NAMES = tuple(f.name for f in dataclasses.fields(cst.Name)) == ("value", "lpar", "rpar")
_NAME_SETTERS: list[Any] = [cst.Name.__dict__[f].__set__ for f in ("value", "lpar", "rpar")] if _INLINE_NAMES else []


def _decode(tree: dict[str, Any], classes: list[Any]) -> list[Any]:
    """The nodes :func:`_encode` wrote, in its order (``classes``: the tree's node classes by index, with their
    fields' setters): made in one loop, no call a node. Each node is made without its ``__init__`` (a frozen
    dataclass: one ``object.__setattr__`` a field, then libcst's validation), its fields set through their
    slots, as the parser's nodes are unchecked (``read.parse_module``). Checked as it goes (raises on a
    corrupt tree): every field set, every node but the first held by exactly one field of a node before it
    (a tree: no cycle, nothing shared but the token and whitespace leaves, each made of earlier ones), only
    strings, booleans and None as values, and a name written ``{"n": its text}``."""
    stored = tree["leaves"]
    kinds = [classes[leaf[0]] for leaf in stored]
    leaves: list[Any] = list(map(_NEW, [m[0] for m in kinds]))
    for before, (leaf, (cls, setters, fields), node) in enumerate(zip(stored, kinds, leaves)):
        if cls not in _LEAVES or len(leaf) != fields + 1:
            raise ValueError("not a leaf")
        i = 0
        for v in leaf:  # (the class's index first)
            if i:
                tv = type(v)
                if tv is int:
                    if not -before <= v < 0:  # (an earlier leaf only)
                        raise ValueError("not a leaf")
                    v = leaves[-1 - v]
                elif v is not None and tv is not str and tv is not bool:
                    raise ValueError("a leaf's value")
                setters[i - 1](node, v)
            i += 1
    name_setters: list[Any] = _NAME_SETTERS or [None, None, None]  # (None: never a name written inline)
    set_name, set_lpar, set_rpar = name_setters
    count = tree.get("names", 0)
    if type(count) is not int or count < 0 or count and set_name is None:
        raise ValueError("names")
    names = list(map(_NEW, repeat(_NAME, count)))  # (made at once: the names written inline, in order)
    made_names = 0
    entries = tree["nodes"]
    made = [classes[e[0]] for e in entries]
    nodes = list(map(_NEW, [m[0] for m in made]))
    held = bytearray(len(nodes))
    k = 0
    for e in entries:
        _, setters, fields = made[k]
        node = nodes[k]
        i = 0
        for v in e:  # (the class's index first: e[i] is the value setters[i - 1] sets)
            if i:
                tv = type(v)
                if tv is int:
                    if v < 0:
                        v = leaves[-1 - v]
                    elif v > k and not held[v]:
                        held[v] = 1
                        v = nodes[v]
                    else:
                        raise ValueError("not a tree")
                elif tv is list:
                    if v:
                        items = []
                        for j in v:
                            if type(j) is not int:
                                if type(j) is dict:  # (a name)
                                    items.append(_rebuild_name(j, names[made_names]))
                                    made_names += 1
                                    continue
                                raise ValueError("a sequence's item")
                            if j < 0:
                                items.append(leaves[-1 - j])
                            elif j > k and not held[j]:
                                held[j] = 1
                                items.append(nodes[j])
                            else:
                                raise ValueError("not a tree")
                        v = tuple(items)
                    else:
                        v = ()  # (most lists: a name's empty parentheses)
                elif tv is dict:
                    if v:  # (a name without parentheses: {"n": its text})
                        text = v["n"]  # (KeyError: not a name)
                        if type(text) is not str or v != {"n": text} or set_name is None:
                            raise ValueError("a name")
                        v = names[made_names]  # (IndexError: more than the tree says)
                        made_names += 1
                        set_name(v, text)
                        set_lpar(v, ())
                        set_rpar(v, ())
                    else:
                        v = _DEFAULT
                elif v is not None and tv is not str and tv is not bool:
                    raise ValueError("a field's value")
                setters[i - 1](node, v)
            i += 1
        if i != fields + 1:  # (one value too many: setters[i - 1] raised IndexError)
            raise ValueError("a node's fields")
        k += 1
    if held.count(0) != 1:  # (the first node, the tree's root, only)
        raise ValueError("a node held by no field")
    if made_names != count:
        raise ValueError("names")
    return nodes


def _rebuild(tree: dict[str, Any], classes: list[Any] | None = None) -> Any:
    """The tree :func:`_tree` encoded (``classes``: :func:`_classes` of its types, where found already)."""
    return _decode(tree, classes if classes is not None else _classes(tree["types"]))[0]


def _rebuild_name(v: dict[str, Any], node: Any) -> cst.Name:
    """``node`` (made by ``object.__new__``) as the name :func:`_encode` wrote as ``{"n": its text}`` (in a
    sequence)."""
    text = v["n"]  # (KeyError: not a name)
    if type(text) is not str or v != {"n": text} or not _NAME_SETTERS:
        raise ValueError("a name")
    for setter, value in zip(_NAME_SETTERS, (text, (), ())):
        setter(node, value)
    return node  # type: ignore[no-any-return]


_NEW = object.__new__
_NAME = cst.Name
_DATA_FIELDS: dict[type, tuple[str, ...]] = {}  # a libcst node class -> its fields (no class variables)


def _fields(t: type) -> tuple[str, ...]:
    fields = _DATA_FIELDS.get(t)
    if fields is None:
        fields = _DATA_FIELDS[t] = tuple(f.name for f in dataclasses.fields(t))
    return fields


def _classes(names: list[Any]) -> list[Any]:
    """``(class, its fields' slots' setters, how many)`` for each name of an encoded tree: libcst's node classes
    only."""
    known = _CLASSES
    try:
        return [known[name] for name in names]  # (every class met before in this process: one call)
    except (KeyError, TypeError):
        pass
    out = []
    for name in names:
        found = _CLASSES.get(name) if type(name) is str else None
        if found is None:
            cls = getattr(cst, str(name), None)
            if not isinstance(cls, type) or cst.CSTNode not in cls.__mro__:  # (not issubclass: ABCMeta's check)
                raise ValueError(name)
            setters = [cls.__dict__[f].__set__ for f in _fields(cls)]
            found = _CLASSES[str(name)] = (cls, setters, len(setters))
        out.append(found)
    return out


_CLASSES: dict[str, tuple[type, list[Any], int]] = {}  # a libcst node class's name -> (it, its fields' slots'
# setters, how many)


# what holds statements (besides statements): walking only these finds every statement, not expressions
_HOLDERS = (cst.BaseStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
            cst.MatchCase)


def _statements(fdef: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of ``fdef`` (itself first) in :func:`~.names.walk`'s order, the nodes a normalized
    function's spans are kept for, found without walking any expression (a statement is only ever held
    by a statement or one of :data:`_HOLDERS`)."""
    out: list[cst.CSTNode] = []
    stack = [fdef]
    kinds = _HOLDER_KINDS
    while stack:
        n = stack.pop()
        t = n.__class__
        k = kinds[t] if t in kinds else _holder_kind(t)  # (`in` and a subscript: no call a node)
        if k == _STATEMENT:
            out.append(n)
            if t is cst.SimpleStatementLine:
                continue
        stack += [c for c in reversed(syntax_children(n))
                  if (kinds[c.__class__] if c.__class__ in kinds else _holder_kind(c.__class__))]
    return out


_OTHER, _STATEMENT, _HOLDER = range(3)
_HOLDER_KINDS: dict[type, int] = {}  # a node type -> a statement, another holder of statements, or neither


def _holder_kind(t: type) -> int:
    """``t``'s kind for :func:`_statements`, remembered (``isinstance`` against libcst's abstract classes
    (ABCMeta) was most of that walk: a thousand checks in loading a per-example gradient's helpers)."""
    k = _HOLDER_KINDS[t] = _STATEMENT if issubclass(t, cst.BaseStatement) else _HOLDER if issubclass(
        t, _HOLDERS) else _OTHER
    return k


def _identical(a: Any, b: Any) -> bool:
    """The same tree: the same types everywhere (tuples and lists apart), the same fields, whitespace too."""
    t = type(a)
    if t is not type(b):
        return False
    if t is tuple or t is list:
        return len(a) == len(b) and all(map(_identical, a, b))
    if isinstance(a, cst.CSTNode):
        return all(_identical(getattr(a, f), getattr(b, f)) for f in _fields(t))
    return bool(a == b)


def _tree(fdef: cst.CSTNode, spanned: list[cst.CSTNode] = ()) -> dict[str, Any] | None:  # type: ignore[assignment]
    """``fdef`` (as the parser read it) encoded, or None where it holds anything :func:`_encode` does not
    write. :func:`_decode` makes it again field for field, the same node classes, tuples and values (the
    parser's sequences are tuples; its nodes' ``__post_init__`` only validates): comparing the two here
    doubled the cost of storing a helper (tests/test_first_call.py compares them for every helper).
    ``spanned``: nodes of ``fdef`` with a span (the entry's ``spans``, in order), whose places in the flat
    ``nodes`` are kept (``at``): the decoded tree's spans are set without walking it."""
    types: dict[str, int] = {}
    leaves: dict[tuple[Any, ...], int] = {}
    nodes: list[Any] = []
    index: dict[int, int] = {}
    try:
        _encode(fdef, types, leaves, nodes, index, {id(n) for n in spanned})
        at = [index[id(n)] for n in spanned]
    except (ValueError, KeyError):
        return None
    names = sum(type(v) is dict and bool(v) or type(v) is list and sum(type(j) is dict for j in v)
                for e in nodes for v in e)  # (the names written inline: made at once when decoded)
    return {"types": list(types), "leaves": [list(leaf) for leaf in leaves], "nodes": nodes, "at": at,
            "names": names}


class _Unportable(Exception):
    """A shared copy's span in another generated module (named differently in each process): not kept."""


def _span(s: Span | None, own: str | None = None) -> list[Any] | None:
    """``s`` for JSON; ``own``: a shared copy's own file, written as :data:`_OWN_FILE`."""
    if s is None:
        return None
    filename = s.filename
    if own is not None:
        if filename == own:
            filename = _OWN_FILE
        elif filename.startswith("<"):
            raise _Unportable(filename)
    return [filename, s.line, s.col, s.end_line, s.end_col]


def _unspan(v: Any, own: str | None = None) -> Span | None:
    if v is None:
        return None
    filename = str(v[0])
    if own is not None and filename == _OWN_FILE:
        filename = own
    return Span(filename, int(v[1]), int(v[2]), int(v[3]), int(v[4]))


def store(nf: NormalizedFunction) -> None:
    """Keep ``nf`` (a library helper just normalized) for later processes; never raises."""
    from ..runtime import disk_cache

    try:
        shared = _shared_text(nf.fn) if is_generated(nf.fn) else None
        if disk_cache.cache_dir() is None or nf.plain is not None or is_generated(nf.fn) and shared is None:
            return  # (a derivative of a helper, written in this process: its code is not in the key)
        own = nf.fn.__code__.co_filename if shared is not None else None
        text = _MODULE.code_for_node(nf.fdef)
        back = parse_module(text).body[0]  # (without libcst's checks of its own parser's nodes: read.py)
        if not _same(nf.fdef, back):  # (a tree whose text reads back as another tree: not kept)
            return
        calls = [_ref(c) for c in nf.calls]
        sites = [(_ref(c), _span(s, own)) for c, s in nf.call_sites.items()]
        if any(r is None for r in calls) or any(r is None for r, _ in sites):
            return
        spans_of = "statements"
        nodes = _statements(nf.fdef)
        places = [i for i, n in enumerate(nodes) if id(n) in nf.spans]
        if len(places) != len(nf.spans):  # (a span of a node that is not a statement: every node is counted)
            spans_of = "all"
            nodes = list(walk(nf.fdef))
            places = [i for i, n in enumerate(nodes) if id(n) in nf.spans]
        spans = [[i, _span(nf.spans[id(nodes[i])], own)] for i in places]
        record = {"version": _VERSION, "name": nf.name, "text": text, "spans": spans, "calls": calls,
                  "spans_of": spans_of,
                  "call_sites": sites, "temps": sorted(nf.temps), "names": nf.source.names(),
                  "def_span": _span(nf.source.def_span(), own)}
        # (the tree encoded and the entry written on a thread of its own: ~1 ms a helper of the caller's
        # first call, 42 helpers in a per-example gradient's with an empty cache; `back` never changes)
        def blob() -> bytes:
            order = list(walk(back) if spans_of == "all" else _statements(back))
            tree = _tree(back, [order[i] for i in places])
            return json.dumps({**record, "tree": tree}, separators=(",", ":")).encode()

        disk_cache.store_later(_key(nf.fn, nf.name, shared), blob, kind="normalized")
    except Exception:  # noqa: BLE001 - the cache is an optimization
        pass


def load(fn: Callable[..., Any], name: str) -> NormalizedFunction | None:
    """The normalized form of the library helper ``fn`` named ``name`` that an earlier process stored, or None."""
    from ..runtime import disk_cache

    shared = _shared_text(fn) if is_generated(fn) else None
    if shared is None and is_generated(fn):
        return None
    own = fn.__code__.co_filename if shared is not None else None
    try:
        blob = disk_cache.load(_key(fn, name, shared), count=False, kind="normalized")  # (None: no cache directory)
        if blob is None:
            return None
        record = json.loads(blob.decode())
        if record.get("version") != _VERSION or record.get("name") != name:
            return None
        calls = [_find(m, q) for m, q in record["calls"]]
        sites = {_find(m, q): _unspan(s, own) for (m, q), s in record["call_sites"]}
        if any(c is None for c in calls) or None in sites:
            return None
        text = record["text"]
        if not isinstance(text, str) or not text.startswith(f"def {name}("):
            return None
        tree = record.get("tree")
        classes = _classes(tree["types"]) if tree else None  # (libcst's node classes only, or no entry: ValueError)
        wanted = [(int(i), _unspan(s, own)) for i, s in record["spans"]]
        source = UnreadSource(fn, [str(n) for n in record["names"]], _unspan(record["def_span"], own))
        return _Loaded.lazily(name=name, fn=fn, source=source, calls=calls, call_sites=sites,
                       temps={str(t) for t in record["temps"]}, entry=(record, classes, wanted))
    except Exception:  # noqa: BLE001 - a corrupt or foreign entry: normalize the helper again
        return None


class _Loaded(NormalizedFunction):
    """A helper's normalized form from the disk cache whose tree (``fdef``) and statements' spans are rebuilt
    from the entry when first read: a program normalizes every helper its functions call, and some are
    never read (a ``jacrev``'s program loads 17, reads 14). The same as :func:`load` rebuilding them at once:
    made by :meth:`lazily`; its ``__init__`` is the dataclass's (``dataclasses.replace`` of one makes one with
    every field given, nothing left to rebuild)."""

    _entry: tuple[dict[str, Any], list[Any] | None, list[tuple[int, Span | None]]]  # (an attribute, not a field)

    @classmethod
    def lazily(cls, *, name: str, fn: Callable[..., Any], source: Any, calls: list[Callable[..., Any]],
               call_sites: dict[Callable[..., Any], Span | None], temps: set[str],
               entry: tuple[dict[str, Any], list[Any] | None, list[tuple[int, Span | None]]]) -> _Loaded:
        """The helper's form with its fields but ``fdef`` and ``spans``, rebuilt from ``entry`` when first read."""
        self = cls.__new__(cls)
        self.name, self.fn, self.source, self.calls, self.call_sites, self.temps = \
            name, fn, source, calls, call_sites, temps
        self.plain = None
        self.loop_names = {}
        self._entry = entry  # (the entry, its classes, its spans with their statement's index in _statements' order)
        return self

    def __getattr__(self, attr: str) -> Any:  # (only for attributes not set: the two rebuilt lazily)
        if attr != "fdef" and attr != "spans":
            raise AttributeError(attr)
        record, classes, stored = self.__dict__["_entry"]
        fdef: Any = None
        nodes: list[Any] = []
        if classes is not None:
            try:
                nodes = _decode(record["tree"], classes)
                fdef = nodes[0]
                if type(fdef) is not cst.FunctionDef or fdef.name.value != self.name:
                    fdef = None
            except Exception:  # noqa: BLE001 - a corrupt tree: its text, parsed (the same tree)
                fdef = None
        at = record["tree"].get("at") if fdef is not None else None
        if fdef is None or type(at) is not list or len(at) != len(stored):  # (the parsed text: its nodes in order)
            if fdef is None:
                fdef = cst.ensure_type(parse_module(record["text"]).body[0], cst.FunctionDef)
            nodes = list(walk(fdef) if record["spans_of"] == "all" else _statements(fdef))
            at = [i for i, _ in stored]
        spans: dict[int, Span] = {}
        n = len(nodes)
        for j, (_, span) in zip(at, stored):
            if span is not None and type(j) is int and 0 <= j < n:
                spans[id(nodes[j])] = span
        self.fdef, self.spans = fdef, spans
        del self._entry  # (the entry's JSON lists: thousands of objects the collector would keep walking)
        return spans if attr == "spans" else fdef
