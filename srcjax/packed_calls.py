"""NumPy arguments copied and uploaded as one array per dtype, for a program that unpacks them (issue #18).

jaxlib's C++ dispatcher uploads a NumPy argument by aliasing its memory (the program reads it while
it runs, asynchronously), so srcjax hands it private copies (``cpp_calls.py``: ``_private_copies``,
``_top_copies``) and it uploads each one on its own: ~2 us a leaf of C++ work (as jax.jit's) on top of
the copies and srcjax's Python frame. A function called again and again with NumPy arrays (a training
loop fed by a NumPy data loader) gets a :class:`Packer` after :data:`AFTER` such calls: a second program
(``lower/packed.py``: the same program behind a prologue that slices one flat array per dtype back into
the arguments), compiled on a thread of its own while the calls go on as before, and a dispatcher of its
own whose calls take the packed arrays and the device leaves. Each call then costs one C++ flattening,
a check of its leaves' kinds, shapes and dtypes against the ones packed for, and one copy per dtype: the
arrays' bytes joined (``b"".join`` of the arrays, NumPy's buffer export of a C-contiguous array, read back
by ``np.frombuffer`` as the packed dtype: 0.6 us for 8 leaves against 2.5 for ``np.concatenate``, which
an array that is not C-contiguous still takes), a new array, never the caller's memory: writes to the
NumPy arguments after the call cannot reach the program. The one exception (round np49): a dtype's pack of
one large array that is C-contiguous at a 64-byte boundary is the caller's array itself
(``aligned_copies.in_place``: XLA's CPU client reads it in place, as for ``jax.jit``), and the call then
returns once its program has finished (:func:`waited`), so writes after the call cannot reach it either.
A packer of one dtype serves its calls in one
Python frame (:meth:`Packer.direct`). Measured (thread CPU per call, ``benchmarks/bench_models.py``'s
models with jax imported): the 3-layer MLP ~22-27 us against jax.jit's 30-35; the transformer block
46-49 against 75-81 (before ``direct`` and the joined bytes: see docs/benchmarks.md).

Where the NumPy leaves are the arguments themselves (a NumPy batch beside containers of device arrays:
``cpp_calls``' third dispatcher's calls), a :class:`TopPacker` packs those arguments without flattening
the others (the C++ side checks them), in one generated Python frame (:meth:`TopPacker.direct`); measured
(thread CPU per call, ``bench_models.py``'s MLP with a NumPy batch): 23.7-24.1 us against 25.9-27.4
copied for the third dispatcher (jax.jit 19.5-21.7).

A call whose leaves differ (another structure, kind, shape or dtype: bytes of int32 would be read as
float32, so dtypes are compared first) is not packed (:meth:`Packer.pack` gives None): the function's other
packers of that kind of call are tried (:class:`Packers`, one a signature, :data:`PACKERS` at most), and a
call none packs goes back to the other dispatchers (and counts towards a packer for its signature); a
packed call the packed program's dispatcher refuses (a NumPy leaf in a container beside a
:class:`TopPacker`'s NumPy arguments) goes to :attr:`Packer.refusing` (``cpp_calls``: the function's first
dispatcher, which routes it and the next calls again). The wrapped program is compiled
through the persistent cache like any other, on a thread that is not a daemon (the interpreter's exit
waits for it, as for the cache's writes: a daemon thread ending inside XLA's compile while the interpreter
finalizes could abort the process).
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import aligned_copies, pytree
from .aligned_copies import in_place as _in_place
from .aligned_copies import joined as _aligned
from .core import ShapedArray
from .lower.packed import packed_text

__all__ = ["AFTER", "MISS", "PACKERS", "Packer", "Packers", "TopPacker", "due", "start", "wait"]

AFTER = 256  # calls with NumPy arguments (copied) before a function's packed program is compiled
MIN_HOST = 3  # NumPy leaves in containers a call with device leaves too must have to be packed by a Packer (which
# flattens every call in Python; a NumPy batch as the arguments themselves: TopPacker, which does not)
PACKERS = 3  # packed programs one function may make for one kind of call (:class:`Packers`: one a signature)
_SHAPE = operator.attrgetter("shape")
_DTYPE = operator.attrgetter("dtype")
_concatenate = np.concatenate
_frombuffer = np.frombuffer
_join = b"".join
MISS = object()  # (Packer.call: a call it does not pack)
_COMPILING: list[threading.Thread] = []  # (the compile threads not known finished: wait())


def due(calls: int, made: int) -> bool:
    """Whether a function that made ``calls`` calls copying NumPy leaves, and ``made`` packers, makes one now."""
    return calls >= AFTER and made < PACKERS


def wait(timeout: float | None = None) -> None:
    """Wait for the packed programs being compiled (tests, benchmarks: a function's calls are packed
    once its program is ready), each for ``timeout`` seconds at most; one still compiling after that is
    waited for again by the next call (under valgrind a compile outlasted ``bench_models._steady``'s 120 s,
    and ``callgrind_models.py``'s own wait found nothing left to wait for: its transformer windows copied)."""
    for thread in list(_COMPILING):
        thread.join(timeout)
    _COMPILING[:] = [t for t in _COMPILING if t.is_alive()]


class Packers:
    """The packers of one kind of a function's calls (``cpp_calls``' ``host_first``'s, NumPy leaves in
    containers, or ``host_top``'s, NumPy arguments beside device ones), one a signature, :data:`PACKERS` at
    most: a loss shared by two models (``srcjax.value_and_grad(f)`` is one object), or calls by turns with
    two batch shapes, keep each signature packed. ``current`` is the one the calls took last (its
    :meth:`Packer.direct` is the function's route); a call it does not pack tries the others before
    counting towards a new one (one packer a kind, dropped after 16 misses in a row, made another
    signature's calls drop it: the MLP of ``benchmarks/callgrind_models.py`` copied every leaf of its
    NumPy calls, 1.31x jax.jit's instructions, in a process that had run the wide MLP first)."""

    __slots__ = ("current", "packers", "unpacked", "made")

    def __init__(self) -> None:
        self.current: Packer | None = None
        self.packers: list[Packer] = []  # (the current one first)
        self.unpacked = 0  # (calls no packer packed, since the last one was made)
        self.made = 0

    def compiling(self) -> bool:
        """Whether a packer made is still being compiled (the calls none packs copy meanwhile, uncounted)."""
        return any(not pk.ready and not pk.failed for pk in self.packers)

    def call(self, args: tuple[Any, ...], count: bool = True) -> tuple[Any, Packer | None]:
        """``args`` made by the current packer or, where that does not pack them, another ready one (then
        the current one), and the packer that served it (None where its dispatcher refused the call, which
        went elsewhere: :attr:`Packer.refusing`); :data:`MISS` and None where none packs it (``count``: a
        call of this kind, counted towards a new packer where none is being compiled)."""
        for pk in self.packers:
            if not pk.ready or pk.refusing_now:  # (a call it refused, routed again: jaxlib refuses a recursive call)
                continue
            refused = pk.refused
            out = pk.call(args)
            if out is MISS:
                continue
            others = [p for p in self.packers if p is not pk]  # (a new list: other threads may be reading this one)
            if pk.refused != refused:  # (tried last from now on: its calls may be another packer's)
                self.packers = [*others, pk]
                self.current = self.packers[0]
                return out, None
            pk.refused = 0  # (refusals in a row stop a TopPacker: not those of calls by turns of two kinds)
            if pk is not self.current:
                self.current = pk
                self.packers = [pk, *others]
            return out, pk
        if any(pk.failed for pk in self.packers):
            self.packers = [pk for pk in self.packers if not pk.failed]
            self.current = self.packers[0] if self.packers else None
        if count and not self.compiling():
            self.unpacked += 1
        return MISS, None

    def due(self) -> bool:
        """Whether a packer for the calls no packer packs is made now (:func:`due`)."""
        return due(self.unpacked, self.made)

    def add(self, packer: Packer | None) -> None:
        """``packer`` (being compiled) made for the calls no packer packs, or None where they cannot be packed."""
        self.unpacked = 0
        if packer is not None:
            self.made += 1
            self.current = packer
            self.packers = [packer, *self.packers]


def _getter(idx: Sequence[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A function of a sequence giving its items at ``idx`` as a tuple (one C call)."""
    if len(idx) == 1:
        i = idx[0]
        return lambda s: (s[i],)
    if not idx:
        return lambda s: ()
    return operator.itemgetter(*idx)  # type: ignore[return-value]


class Packer:
    """The packed program of one signature of a function's calls (leaves' structure, kinds, shapes, dtypes).

    ``ready`` once the program is compiled (on its own thread; ``failed`` where it could not be), then
    :meth:`pack` gives a call's arguments for ``cpp`` (its dispatcher), or None where the call's leaves
    are not the ones packed for. A packed call the program should not run as it is (a device leaf on
    another device, a donated one: the C++ side misses, and the miss checks) and a call under jax's
    ``disable_jit`` go back to ``fallback`` (srcjax's Python path) with the call's arguments unpacked."""

    def __init__(self, fallback: Callable[..., Any], exe: Any, out_def: Any, tree: Any, kinds: tuple[type, ...],
                 groups: list[tuple[np.dtype, list[int]]], shapes: list[tuple[int, ...]],
                 in_avals: Sequence[ShapedArray], flatten: Callable[[Any], Any], array: type,
                 static: tuple[int, ...] = (), statics: tuple[Any, ...] = ()) -> None:
        self.ready = False
        self.failed = False
        self.refused = 0  # (packed calls its dispatcher's miss sent elsewhere: :class:`TopPacker`)
        self.refusing_now = False  # (while one is sent elsewhere: its dispatcher cannot be called again inside)
        self.refusing: Callable[..., Any] | None = None  # (where those go: ``cpp_calls``' first dispatcher, else
        # ``fallback``, the Python path)
        self.cpp: Any = None
        self._static, self._statics = static, statics  # (static arguments' positions, and their values)
        self._flatten = flatten
        self._tree = tree
        self._kinds = kinds
        host = [i for i, k in enumerate(kinds) if k is np.ndarray]
        self._host = _getter(host)
        self._dev = _getter([i for i, k in enumerate(kinds) if k is array])
        self._shapes = shapes
        self._dtypes = [in_avals[i].dtype for i in host]  # (the host leaves' dtypes, compared by :meth:`_split`)
        where = {i: j for j, i in enumerate(host)}  # (a host leaf's position among the host leaves)
        self._groups = [(_getter([where[i] for i in idx]), dtype) for dtype, idx in groups]
        self._one = self._groups[0] if len(self._groups) == 1 else None
        # (each packed array's elements, and whether it is copied into aligned memory: aligned_copies.LARGE)
        self._sizes = [sum(math.prod(in_avals[i].shape) for i in idx) for _, idx in groups]
        self._large = [n * np.dtype(d).itemsize >= aligned_copies.LARGE for (d, _), n in zip(groups, self._sizes)]
        self._group_avals = groups
        self._packed_positions = frozenset(i for _, idx in groups for i in idx)
        self._fallback, self._exe, self._out_def = fallback, exe, out_def
        self._in_avals = list(in_avals)
        self.thread: threading.Thread | None = None

    def _dynamic(self, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """``args`` less the static ones, or None where those are not the ones this packer was made for."""
        try:
            if tuple(args[i] for i in self._static) != self._statics:
                return None
        except Exception:  # noqa: BLE001 - an equality that does not say: not packed (the other paths key it)
            return None
        return tuple(a for i, a in enumerate(args) if i not in self._static)

    def _split(self, args: tuple[Any, ...]) -> tuple[Sequence[Any], Sequence[Any]] | None:
        """The call's NumPy leaves and what else the packed program's dispatcher is handed (its device
        leaves), or None where its leaves are not of the structure, kinds and shapes this packer was made
        for, or its static arguments not equal to the ones it was made for."""
        if self._static:
            dynamic = self._dynamic(args)
            if dynamic is None:
                return None
            args = dynamic
        leaves, tree = self._flatten(args)
        if tree != self._tree or tuple(map(type, leaves)) != self._kinds:
            return None
        hosts = self._host(leaves)
        if list(map(_SHAPE, hosts)) != self._shapes or list(map(_DTYPE, hosts)) != self._dtypes:
            return None
        return hosts, self._dev(leaves)

    def _concat(self, hosts: Sequence[Any]) -> tuple[Any, ...] | None:
        """The packed arrays of ``hosts`` (new copies; their dtypes are the ones packed for: :meth:`_split`
        checks them, as the bytes joined here are read as the group's dtype), or None where a dtype is not."""
        one = self._one
        if any(self._large):  # (copied into aligned memory, which the upload aliases: aligned_copies)
            try:
                return tuple(_aligned(get(hosts), dtype, n) for (get, dtype), n in zip(self._groups, self._sizes))
            except TypeError:  # (another dtype)
                return None
        try:  # (each array's bytes joined into one new bytes object read as the packed array: NumPy's buffer
            # export of a C-contiguous array, no copy of its own; 8 leaves 2.5 -> 0.6 us against np.concatenate)
            if one is not None:
                return (_frombuffer(_join(one[0](hosts)), one[1]),)
            return tuple(_frombuffer(_join(get(hosts)), dtype) for get, dtype in self._groups)
        except TypeError:  # (an array that is not C-contiguous exports no plain buffer)
            pass
        try:
            if one is not None:
                return (_concatenate(one[0](hosts), axis=None, dtype=one[1], casting="no"),)
            return tuple(_concatenate(get(hosts), axis=None, dtype=dtype, casting="no") for get, dtype in self._groups)
        except TypeError:  # (another dtype: casting="no")
            return None

    def pack(self, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The packed arrays (new copies: ``np.concatenate``) and what else the packed program's dispatcher
        is handed, or None where the call's leaves are not the ones this packer was made for."""
        split = self._split(args)
        if split is None:
            return None
        packs = self._concat(split[0])
        return None if packs is None else (*packs, *split[1])

    def call(self, args: tuple[Any, ...]) -> Any:
        """The call ``args`` made by the packed program, or :data:`MISS` where :meth:`pack` would give None.
        The packed arrays are new copies each call: the C++ side's upload aliases them, so an earlier
        call's may still be read by its program (kept and written again once that program had finished,
        they served 425 of 3000 calls of a tight loop of bench_models.py's MLP: the programs queue up)."""
        split = self._split(args)
        if split is None:
            return MISS
        packs = self._concat(split[0])
        return MISS if packs is None else self.cpp(*packs, *split[1])

    def direct(self, fallback: Callable[..., Any]) -> Callable[..., Any]:
        """A function of a call making it as :meth:`call` does, in one Python frame (the function's route once
        its calls are packed: ``cpp_calls``' ``host_packed``, :meth:`call`, :meth:`_split` and :meth:`_concat`
        are four frames), handing any other call (keywords, leaves it does not pack, an array that is not
        C-contiguous) to ``fallback``. Only for a packer of one dtype without static arguments, once ready
        (``fallback`` where not)."""
        if self._static or not self.ready or self._one is None:
            return fallback
        get, dtype = self._one
        scope: dict[str, Any] = {"flatten": self._flatten, "T": self._tree, "K": list(self._kinds), "H": self._host,
                                 "S": self._shapes, "DT": self._dtypes, "G": get, "D": dtype, "DEV": self._dev,
                                 "shape": _SHAPE, "dtype": _DTYPE, "buf": _frombuffer, "join": _join, "pk": self,
                                 "cpp": self.cpp, "fallback": fallback, "big": _aligned, "N": self._sizes[0],
                                 "own": _in_place if self._exe.out_avals else _copied, "waited": waited}
        codes = _DIRECTS[self._large[0]]
        exec(codes[0] if len(self._packed_positions) < len(self._kinds) else codes[1], scope)
        return scope["direct"]  # type: ignore[no-any-return]

    def unpack(self, flat: tuple[Any, ...]) -> tuple[Any, ...]:
        """The call :meth:`pack` made ``flat`` of (its NumPy leaves as read-only views of the packed copies)."""
        k = len(self._group_avals)
        leaves: list[Any] = [None] * len(self._kinds)
        for i, view in self._views(flat).items():
            leaves[i] = view
        devices = iter(flat[k:])
        leaves = [next(devices) if leaf is None else leaf for leaf in leaves]
        args = list(self._tree.unflatten(leaves))
        for i, v in zip(self._static, self._statics):
            args.insert(i, v)
        return tuple(args)

    def _views(self, flat: tuple[Any, ...]) -> dict[int, Any]:
        """Position of each packed leaf -> a read-only view of it in ``flat``'s packed copies."""
        views: dict[int, Any] = {}
        for pack, (_, idx) in zip(flat[:len(self._group_avals)], self._group_avals):
            offset = 0
            for i in idx:
                shape = self._in_avals[i].shape
                n = math.prod(shape)
                view = pack[offset:offset + n].reshape(shape)
                view.flags.writeable = False
                views[i] = view
                offset += n
        return views

    def compile(self, text: str, backend: Any) -> None:
        """Compile the packed program ``text`` (on its own thread) and make its dispatcher; ``ready`` after."""
        try:
            from .runtime import cpp_dispatch
            from .runtime.xla import Executable

            packed = Executable(text, self._exe.out_avals, backend)
            self._packed = packed
            avals = [ShapedArray((sum(math.prod(self._in_avals[i].shape) for i in idx),), np.dtype(dtype))
                     for dtype, idx in self._group_avals]
            avals += [a for i, a in enumerate(self._in_avals) if i not in self._packed_positions]
            self._packed_avals = avals
            self.cpp = cpp_dispatch.make("srcjax packed", self._run, self._miss, ("srcjax packed", id(self)))
            self.ready = True
        except Exception:  # noqa: BLE001 - no packed program: the calls keep copying (srcjax's other paths)
            self.failed = True

    def _run(self, *flat: Any) -> Any:  # (jax's disable_jit, when jax is imported: srcjax's Python path)
        return self._fallback(*self.unpack(flat))

    def _miss(self, *flat: Any) -> tuple[Any, Any, bool]:
        """A packed call the C++ side has no record for: a record where its leaves are the packed program's
        (the results computed by it), else the Python path's results for the call unpacked."""
        from .runtime import cpp_dispatch

        bufs = cpp_dispatch.flatten(flat)
        k, buffer = len(self._group_avals), cpp_dispatch.BUFFER
        try:  # (the packed arrays alone may be host leaves: a NumPy leaf elsewhere would be read in place)
            ok = cpp_dispatch.same_signatures(bufs, self._packed_avals, True) and all(
                type(b) is buffer and not b.is_deleted() for b in bufs[k:])
            record = cpp_dispatch.fastpath(self._packed, bufs, self._out_def) if ok else None
        except Exception:  # noqa: BLE001 - a leaf the checks cannot read: the Python path says what it is
            record = None
        if record is None:
            self.refused += 1
            self.refusing_now = True  # (the call routed again must not come back to this dispatcher: :class:`Packers`)
            try:
                return (self.refusing or self._fallback)(*self.unpack(flat)), None, False
            finally:
                self.refusing_now = False
        exe = self._packed
        ins = [b if type(b) is buffer else exe.put(b, v) for b, v in zip(bufs, self._packed_avals)]
        out = self._out_def.unflatten(exe.loaded.execute_sharded(ins).consume_with_handlers(exe.handlers))
        return out, record, False

    _packed: Any
    _packed_avals: list[ShapedArray]


# (Packer.direct's function: its names are the packer's, in the scope it is run in; compiled once, with
# device leaves and without: no call of an empty getter where every leaf is a NumPy array)
_DIRECT_TEXT = """def direct(*args, **kwargs):
    if not kwargs:
        leaves, t = flatten(args)
        if t == T and list(map(type, leaves)) == K:
            hosts = H(leaves)
            if list(map(shape, hosts)) == S and list(map(dtype, hosts)) == DT:
                try:
                    p = buf(join(G(hosts)), D)
                except TypeError:
                    pass
                else:
                    return cpp(p, *DEV(leaves))
    return fallback(*args, **kwargs)
"""
_DIRECT_LARGE_TEXT = _DIRECT_TEXT.replace("""                try:
                    p = buf(join(G(hosts)), D)""", """                p = own(G(hosts))
                if p is not None:
                    return waited(cpp(p, *DEV(leaves)))
                try:
                    p = big(G(hosts), D, N)""")  # (aligned_copies.in_place: the caller's memory read in place,
# the call returns once its program has finished; else aligned_copies.joined's copy)
assert "own(G(hosts))" in _DIRECT_LARGE_TEXT
_DIRECTS = tuple((compile(text, "<srcjax packed call>", "exec"),
                  compile(text.replace("cpp(p, *DEV(leaves))", "cpp(p)"), "<srcjax packed call>", "exec"))
                 for text in (_DIRECT_TEXT, _DIRECT_LARGE_TEXT))  # (small, large: device leaves too, and without)


def waited(out: Any) -> Any:
    """``out``, the results of a call that handed its program NumPy memory to read in place, once that program
    has finished (:func:`first_buffer`'s wait: XLA's CPU client makes every result of a program ready at its
    end), so that the caller's writes to that memory after the call cannot reach it."""
    b = first_buffer(out)
    if b is not None:
        b.block_until_ready()
    return out


def first_buffer(out: Any) -> Any:
    """The device buffer of the first srcjax Array among ``out``'s leaves, or None."""
    b = getattr(out, "_buf", None)  # (one result: no flattening)
    if b is not None:
        return b
    for leaf in pytree.flatten(out)[0]:
        b = getattr(leaf, "_buf", None)
        if b is not None:
            return b
    return None


def _copied(arrays: Sequence[np.ndarray]) -> None:
    """:func:`aligned_copies.in_place` for a program without results (nothing to wait for): always copied."""
    return None


REFUSED = 16  # packed calls in a row a TopPacker's dispatcher may send elsewhere before it packs no more (a call
# :class:`Packers` finds it packs starts the count again)


class TopPacker(Packer):
    """A :class:`Packer` for calls whose NumPy leaves are arguments themselves (a NumPy batch beside
    parameters on the device: the third dispatcher's calls, ``cpp_calls.host_top``): :meth:`pack` copies
    those arguments into the packed arrays without flattening the others, which it hands on as they are
    (containers of srcjax Arrays, Arrays). Their leaves are checked by the C++ side: its record has a
    device buffer at each, so a NumPy leaf in a container (another structure there) misses, and the
    miss sends that call to the Python path unpacked (:data:`REFUSED` such calls in a row, and it packs no
    more)."""

    def __init__(self, *a: Any, tops: tuple[int, ...], n_args: int, **k: Any) -> None:
        super().__init__(*a, **k)
        self._tops = _getter(tops)  # (the positions of the NumPy arguments among the dynamic ones)
        self._others = _getter([i for i in range(n_args) if i not in tops])
        self._top_positions = tops
        self._n_args = n_args
        self._host_kinds = (np.ndarray,) * len(tops)
        self._where_leaf = [i for i, k in enumerate(self._kinds) if k is np.ndarray]  # (their leaves' positions)
        self._code: Any = None  # (direct's compiled code, once written)

    def _split(self, args: tuple[Any, ...]) -> tuple[Sequence[Any], Sequence[Any]] | None:
        """The call's NumPy arguments and its other arguments as they are, or None where those NumPy
        arguments are not of the shapes packed for (its other arguments: the C++ side checks them)."""
        if self.refused > REFUSED:
            return None
        if self._static:
            dynamic = self._dynamic(args)
            if dynamic is None:
                return None
            args = dynamic
        if len(args) != self._n_args:
            return None
        hosts = self._tops(args)
        if tuple(map(type, hosts)) != self._host_kinds or list(map(_SHAPE, hosts)) != self._shapes or \
                list(map(_DTYPE, hosts)) != self._dtypes:
            return None
        others = self._others(args)
        if np.ndarray in map(type, others):  # (another signature's NumPy argument: its dispatcher would refuse it)
            return None
        return hosts, others

    def direct(self, fallback: Callable[..., Any]) -> Callable[..., Any]:
        """A function of a call making it as :meth:`call` does, written for this packer's positions, shapes
        and dtypes in one Python frame (the function's route once its calls are packed: ``cpp_calls``'
        ``host_packed`` and :meth:`call` cost ~1 us more), handing any other call to ``fallback``. Only
        for a packer without static arguments, once ready (``fallback`` where not)."""
        if self._static or not self.ready:
            return fallback
        scope: dict[str, Any] = {"nd": np.ndarray, "S": tuple(self._shapes), "buf": np.frombuffer, "join": _join,
                                 "pk": self, "D": tuple(d for d, _ in self._group_avals), "R": REFUSED,
                                 "cpp": self.cpp, "fallback": fallback, "big": _aligned,
                                 "own": _in_place if self._exe.out_avals else _copied, "waited": waited}
        exec(self._direct_code(), scope)
        return scope["direct"]  # type: ignore[no-any-return]

    def _direct_code(self) -> Any:
        """The compiled code of :meth:`direct`'s function, written and compiled once per packer (a function whose
        calls alternate between device and NumPy batches routes here again at each change: compiling it again
        cost ~450k instructions, a hundred calls' worth of the gap to ``jax.jit``)."""
        if self._code is not None:
            return self._code
        tops = list(self._top_positions)
        where = {leaf: j for j, leaf in enumerate(self._where_leaf)}  # (a NumPy leaf: its place among tops)
        dtype_of = {where[i]: g for g, (_, idx) in enumerate(self._group_avals) for i in idx}  # (top -> its group)
        checks = " and ".join([f"type(a{i}) is nd and a{i}.shape == S[{j}] and a{i}.dtype == D[{dtype_of[j]}]"
                               for j, i in enumerate(tops)] +  # (and no NumPy array where it has device ones)
                              [f"type(args[{i}]) is not nd" for i in range(self._n_args) if i not in tops])
        packs = []
        for g, (_, idx) in enumerate(self._group_avals):
            # (each array's bytes in C order, joined into one new bytes object read as the packed array: the
            # copy `np.concatenate` made, at less than half its cost for small arrays, 14k -> 6-7k instructions;
            # one array's by `.tobytes()` (any layout), several arrays' by `b''.join` of the arrays themselves,
            # NumPy's buffer export with no copy of its own (`.tobytes()` each then joined copied twice: 2 arrays
            # 0.45 -> 0.39 us); an array that is not C-contiguous exports none: TypeError, then `fallback`)
            parts = [f"a{tops[where[i]]}" for i in idx]
            joined = parts[0] + ".tobytes()" if len(parts) == 1 else "join((" + "".join(f"{a}, " for a in parts) + "))"
            if self._large[g] and len(parts) == 1:  # (one large array: read in place where it can be, the call
                # then waiting for its program, aligned_copies.in_place; else copied as below)
                packs.append(f"            p{g} = own(({parts[0]},))\n            if p{g} is None:\n"
                             f"                p{g} = big(({parts[0]},), D[{g}], {self._sizes[g]})\n"
                             f"            else:\n                w = True\n")
            elif self._large[g]:  # (a large pack: copied into aligned memory, which the upload aliases: aligned_copies)
                tup = "".join(f"{a}, " for a in parts)
                packs.append(f"            p{g} = big(({tup}), D[{g}], {self._sizes[g]})\n")
            else:
                packs.append(f"            p{g} = buf({joined}, D[{g}])\n")
        rest = "".join(f"args[{i}], " for i in range(self._n_args) if i not in tops)
        names = "".join(f"p{g}, " for g in range(len(packs)))
        call = f"cpp({names}{rest})"
        if any("own(" in p for p in packs):
            packs.insert(0, "            w = False\n")
            call = f"waited({call}) if w else {call}"
        code = (f"def direct(*args, **kwargs):\n"
                f"    if not kwargs and len(args) == {self._n_args}:\n"
                f"        {', '.join(f'a{i}' for i in tops)}, = {', '.join(f'args[{i}]' for i in tops)},\n"
                f"        if {checks} and pk.refused <= R:\n"
                f"          try:\n{''.join(packs)}"
                f"          except (TypeError, ValueError):\n            pass\n"
                f"          else:\n            return {call}\n"
                f"    return fallback(*args, **kwargs)\n")
        self._code = compile(code, "<srcjax packed call>", "exec")
        return self._code

    def unpack(self, flat: tuple[Any, ...]) -> tuple[Any, ...]:
        """The call :meth:`pack` made ``flat`` of (its NumPy arguments as read-only views of the packed copies)."""
        k = len(self._group_avals)
        views = self._views(flat)
        by_arg = dict(zip(self._top_positions, (views[i] for i in self._where_leaf)))
        others = iter(flat[k:])
        args = [by_arg[i] if i in by_arg else next(others) for i in range(self._n_args)]
        for i, v in zip(self._static, self._statics):
            args.insert(i, v)
        return tuple(args)


def start(fallback: Callable[..., Any], plan: Any, out_def: Any, args: tuple[Any, ...], flatten: Callable[[Any], Any],
          array: type, static: tuple[int, ...] = ()) -> Packer | None:
    """A :class:`Packer` for calls like ``args`` (served by ``plan``, whose results the C++ side builds
    with ``out_def``), its program compiling on a thread of its own; or None where they cannot be packed
    (a leaf that is neither an exact NumPy array nor a srcjax Array, no NumPy leaf, a weak-typed or
    sharded argument, a program text of another form). ``static``: the positions of the static arguments
    (keyed by the dispatchers by value; the program takes the others)."""
    from .runtime.xla import Executable

    exe = getattr(plan, "exe", None)
    if out_def is None or type(exe) is not Executable or exe.backend.platform != "cpu":
        return None
    statics = tuple(args[i] for i in static)
    dynamic = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, tree = flatten(dynamic)
    kinds = tuple(map(type, leaves))
    in_avals = plan.in_avals
    hosts = kinds.count(np.ndarray)
    tops = tuple(i for i, a in enumerate(dynamic) if type(a) is np.ndarray)  # (NumPy arrays as arguments)
    top = hosts == len(tops)  # (every NumPy leaf an argument itself: TopPacker, no flattening per call)
    if len(leaves) != len(in_avals) or not set(kinds) <= {np.ndarray, array} or not hosts or \
            (hosts < MIN_HOST and array in kinds and not top):
        return None
    groups: dict[np.dtype, list[int]] = {}
    for i, (leaf, aval) in enumerate(zip(leaves, in_avals)):
        if type(leaf) is np.ndarray:
            if leaf.dtype != aval.dtype or leaf.shape != aval.shape or aval.weak_type or leaf.dtype.hasobject:
                return None
            groups.setdefault(aval.dtype, []).append(i)
    order = list(groups.items())
    text = packed_text(exe.text, in_avals, exe.out_avals, order)
    if text is None:
        return None
    shapes = [leaf.shape for leaf in leaves if type(leaf) is np.ndarray]
    packer = (TopPacker(fallback, exe, out_def, tree, kinds, order, shapes, in_avals, flatten, array, static, statics,
                        tops=tops, n_args=len(dynamic)) if top else
              Packer(fallback, exe, out_def, tree, kinds, order, shapes, in_avals, flatten, array, static, statics))
    packer.thread = threading.Thread(target=packer.compile, args=(text, exe.backend),
                                     name="srcjax packed compile")
    _COMPILING[:] = [t for t in _COMPILING if t.is_alive()]
    _COMPILING.append(packer.thread)
    packer.thread.start()
    return packer
