"""Compiled functions called through jaxlib's C++ dispatcher (issue #18; ``runtime/cpp_dispatch.py``).

After a function's first successful call, :func:`attach` makes a C++ ``PjitFunction`` the
function's ``_dispatch``, which ``Compiled.__call__`` hands every call to without a Python frame.
For a signature it has not seen it calls back the miss function, which runs srcjax's Python path
(``Compiled._call``) and then, when the call's leaves were all srcjax arrays on the program's
device and served by a plan whose leaves are exactly the C++ flattening's (the same rule as
``tree_calls``), hands the C++ side the executable, so that the next such call never enters Python.

Calls with host leaves (NumPy arrays, Python numbers): the C++ side uploads a NumPy array without
copying it on the CPU (jaxlib's ``kImmutableZeroCopy``: the program reads the array's memory while it
runs, asynchronously, so with ``jax.jit`` a write right after the call can change the result). Where
64-bit host values are keyed as they are (``cpp_dispatch.x64()``: srcjax alone, or jax with x64 on),
a CPU function that donates nothing and whose program XLA ran inline (:func:`_inline`) gets records
for them in its first dispatcher whose first result waits for the program
(``cpp_dispatch.out_treedef``'s ``ready``): the call returns once the memory has been read, at the
C++ path's cost. Elsewhere (a program run asynchronously, where the wait costs more than copies;
donation; a GPU) their
signatures get no record there; each such call comes
back to the miss function, which copies the NumPy leaves (:func:`_private_copies`) and calls a second
dispatcher (``Compiled._cpp_host``) that only ever sees srcjax's own copies, and does have records.
Where the NumPy leaves are arguments themselves and the containers hold srcjax arrays only (parameters
on the device, a NumPy batch), later calls copy those arguments alone (:func:`_top_copies`, no
flattening in Python) for a third dispatcher (``Compiled._cpp_top``), whose records have a srcjax
Array (a node of the C++ side's registry) at every container leaf: a NumPy leaf in a container has
another structure there, misses, and is copied whole for the second (whose shortcut looks for the
third's calls again every :data:`_POLL` calls).
After 256 calls copying NumPy leaves, a function packs them: a copy and upload a dtype (``packed_calls.py``);
the second dispatcher's calls and the third's have packers of their own, one a signature
(``packed_calls.Packers``: a function called with NumPy parameters and with device parameters beside a NumPy
batch keeps both packed, and so does a loss shared by two models, each model's calls).
Where jax is imported with ``jax_enable_x64`` off (jaxlib would key and upload a float64 array or a
Python float as 32-bit), the first call with such host leaves puts :func:`attach`'s ``wide`` in front of a
function's dispatch: each call then runs with that flag on for its thread (``swap_local``, what jax's own
``enable_x64`` context does; ``cpp_dispatch.x64_state``), so everything above holds as where srcjax runs
alone (records are keyed by the flag's value, so all of the function's calls take ``wide``). Without a
per-thread flag (another jax), 64-bit host leaves keep srcjax's Python path and others are copied.

Declared static arguments (``static_argnums``/``static_argnames``) are the dispatchers' own static
arguments: the C++ side keys their values (hash, equality, type) and hands the program the others,
so a record's leaves are the dynamic arguments' (:func:`_static_plan`); the NumPy copies leave them
out (:func:`_dynamic`). An unhashable static value makes the C++ side raise its own ValueError before
anything else: such a function's calls go through :func:`attach`'s ``static_call``, which sends that
call to the Python path (srcjax's ``ArgumentError``).

A call leaving out parameters whose defaults are Python numbers is handed to the C++ side with those
defaults as device arrays uploaded once (:func:`attach`'s ``filling``, :func:`_device_tail`), which the
Python path keys as the numbers they are (``plain``: one program for ``f(x)`` and ``f(x, 0.5)``).

A call passing arguments by keyword (:func:`attach`'s ``keyword_miss``) is the positional call it
binds to (:func:`_positional`): where none is left out and the names sorted are in the parameters'
order (the C++ side's flattening: positional leaves, then keyword ones by name), it gets its own record;
otherwise (another order, a default left out between parameters passed) the first such call of each
form (the number of positional arguments and the names in the call's order) installs :func:`attach`'s
``binding`` in front of the dispatch: one Python frame that binds such calls to the positional call
(:func:`_binding_plan`, :func:`_binder`: defaults that are Python numbers as device arrays uploaded once,
keyed by the Python path as the numbers, as ``filling``'s), which the C++ side serves (measured on a
tiny function: 1.0-1.3x jax.jit where served in C++, 1.0-1.9x bound, ~1.9x before when handed on from
the miss function, 2.5-5x on the Python path). Calls that do not bind so (a name that is not a later
parameter, a default that is not a number) are handed on or take the Python path, which raises
srcjax's errors. ``grad``/``value_and_grad`` calls passing a differentiated argument by keyword go to
the Python path (``Compiled._by_position``), which raises JAX's error as an ``ArgumentError``.

Arguments srcjax finds static by itself (``Compiled.auto_static``: a Python int used as a shape, a
string, None) are static arguments of the dispatchers as the declared ones are: when that set changes,
:func:`restatic` drops the dispatchers and the next call that works attaches new ones (at most
:data:`_ATTACHES`). A static parameter left out is filled with its default as it is (keyed by value).

Any other call (keyword calls with a gap among the parameters passed,
other defaults left out, containers with other leaves, Python values in the results) keeps falling back
to the Python path; after
:data:`_REFUSALS` such calls the function stops using the dispatcher. Donation works on both paths
(the executable's aliasing takes the donated buffers either way).

On by default; ``SRCJAX_CPP_DISPATCH=0`` turns it off. Not attached (the Python path does
everything): ``device="numpy"``, explicit shardings, ``*args``/keyword-only parameters, subclasses with their own
``__call__`` (pmap), and a vmap whose in_axes follow what a call passes (``in_axes=0`` of a function
with defaults: ``Vmapped._one_axis``). A vmap (``vmap.Vmapped``) checks the mapped sizes in its ``_call``,
the miss function's Python path: a record serves only the shapes and structures checked there. A Jacobian
(``jacobian._Jacobian``: jacfwd, jacrev, hessian) makes its checks in its ``_call`` too, and its records serve
its array form's plan only for a signature of arrays that path ran on the array form (its ``_served_plan``,
which :func:`_plan` reads); ``grad``/``value_and_grad`` are ``Compiled`` objects, served like any other.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from . import aligned_copies, cpp_budget, packed_calls, pytree
from .core import TranspileError
from .cpp_binding import NUMBERS as _NUMBERS
from .cpp_binding import binder as _binder
from .cpp_binding import binding_plan as _binding_plan
from .cpp_binding import positional as _positional
from .packed_calls import start as start_packer

__all__ = ["attach", "detach", "donated_error"]

_REFUSALS = 16  # calls the C++ side sent back without a record before a function stops using it
_POLL = 32  # calls through the second dispatcher between two looks for the third's (cpp_calls.host_first)
_WIDE = frozenset(np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128))
_SKIP = object()  # (_private_copies: a leaf the second dispatcher cannot take)
_LATER = object()  # (_private_copies: host leaves while srcjax's own upload avoids importing ml_dtypes)
_IN_PLACE = object()  # (_private_copies: host leaves the first dispatcher takes as they are)
_HOST = frozenset((np.ndarray, float, int, bool))
_NUMPY = frozenset((np.ndarray,))
_DTYPE = operator.attrgetter("dtype")
_COPY = aligned_copies.copy  # (a large array's copy aligned, so that jaxlib's upload aliases it: no second copy)
_CONTAINERS = frozenset((list, tuple, dict, type(None)))  # (arguments the third dispatcher's structure checks)


def donated_error() -> TranspileError:
    """The error for a donated array passed again (``runtime/xla.py``'s)."""
    from .runtime.xla import donated_error

    return donated_error()


def detach(c: Any) -> None:
    """Stop using the C++ dispatcher for ``c`` (an argument became static: values matter now)."""
    c._cpp = None
    c._cpp_host = None
    c._cpp_top = None
    del c._dispatch  # (back to the Python path: Compiled._dispatch)
    c.__dict__.pop("_static_next", None)
    c.__dict__.pop("_fill_next", None)  # (back to the class's: the Python path)
    c._cpp_refused = True
    c._cpp_wait = False


_ATTACHES = 3  # (dispatchers a function may have, one after another: its static parameters changed)


def restatic(c: Any) -> None:
    """``c``'s static parameters changed (srcjax found a Python value that picks the program, or an
    argument made static by a None or a string became an array): its dispatcher, keyed by the old ones,
    is dropped, and the next call that works attaches one keying the new ones as static arguments
    (at most :data:`_ATTACHES` in all: a function alternating kinds of values keeps the Python path)."""
    if c._cpp is None and not c._cpp_wait and not c._cpp_attached:
        return  # (none attached yet: attach() will key c._static_all)
    detach(c)
    if c._cpp_attached < _ATTACHES:
        c._cpp_refused = False


def _eligible(c: Any, plain_call: Any) -> bool:
    # (a Jacobian's records serve only signatures its array form ran: jacobian._Jacobian._served_plan; a lazy
    # one's _needs would write its derivative)
    needs = None if getattr(c, "_served_plan", None) is not None else getattr(c, "_needs", None)
    return (type(c).__call__ is plain_call and c.device != "numpy"
            and c.in_shardings is None and c.out_shardings is None and c._simple and not needs
            and getattr(c, "_one_axis", None) is None)  # (a vmap whose in_axes follow what a call passes:
    # vmap.Vmapped._call picks the vmap per call, where the C++ side would fill the defaults left out)


def waited(c: Any, plain_call: Any) -> None:
    """A call of ``c`` through the Python path while it waits for its dispatcher (``cpp_budget.py``)."""
    if cpp_budget.spend(c):
        c._cpp_wait = False
        attach(c, plain_call)


def attach(c: Any, plain_call: Any) -> type | None:
    """Give ``c`` (an ``api.Compiled``) its C++ dispatcher where it can have one (decided once): where
    its class's ``__call__`` is ``plain_call`` (``Compiled.__call__``); srcjax.Array's type when it has.
    Before ``cpp_budget.ready()``, ``c`` waits for it (``c._cpp_wait``: its calls count down ``cpp_budget.BUDGET``)."""
    if c._cpp is not None or c._cpp_refused or c._cpp_wait:
        return None
    if not _eligible(c, plain_call):
        c._cpp_refused = True
        return None
    from .runtime import cpp_dispatch

    if not cpp_dispatch.enabled():
        c._cpp_refused = True
        return None
    if not cpp_budget.ready() and not cpp_budget.remembered(c):
        c._cpp_wait = True
        return None
    c._cpp_refused = True  # (decided once; detach() may refuse it later, restatic() allow another)
    c._cpp_static = c._static_all
    c._cpp_attached += 1
    ref = weakref.ref(c)

    def run(*args: Any, **kwargs: Any) -> Any:  # (jax's disable_jit, when jax is imported: the Python path)
        me = ref()
        assert me is not None
        return me._call(plain(args), kwargs)

    refused = [0]
    polls = [0]  # (host_first's calls since it last looked for host_top's)
    flatten, array = cpp_dispatch.default_flatten(), cpp_dispatch.Array
    from .left_out import filled
    from .runtime import host_upload
    from .runtime.xla import get_backend

    in_place = [not c.donate and get_backend(c.device).platform == "cpu"]  # (see _private_copies, _inline)
    static = _static_positions(c)  # (declared static arguments: the C++ side keys their values itself)

    def route(me: Any, call: Any) -> None:
        """Send ``me``'s next calls to ``call`` (one of its dispatchers or shortcuts): through
        :func:`static_call` where ``me`` has static arguments."""
        if static:
            me._static_next = call
        elif tails:
            me._fill_next = call
        elif front_next[0] is not None:
            front_next[0] = call
        else:
            me._dispatch = call

    tails: dict[int, tuple[Any, ...]] = {}  # (calls of n arguments: the device arrays of the defaults left out)
    originals: dict[int, Any] = {}  # (id of such a device array: the default, a Python number)

    def plain(args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` with the defaults :func:`filling` added as device arrays given back as the numbers they
        are: srcjax's Python path keys them as the calls passing the numbers (one program for both)."""
        if not originals:
            return args
        return tuple(originals.get(id(a), a) if type(a) is array else a for a in args)

    def filling(*args: Any, **kwargs: Any) -> Any:
        """A call of a function some of whose calls leave out parameters with defaults (Python numbers):
        those calls get the defaults as device arrays uploaded once (:func:`_device_tail`), so that the
        C++ side, which hands the program the arguments it is given, serves them too."""
        me = ref()
        assert me is not None
        if not kwargs:
            tail = tails.get(len(args))
            if tail is not None:
                args += tail
        return me._fill_next(*args, **kwargs)

    def start_filling(me: Any, args: tuple[Any, ...]) -> bool:
        """Whether ``args`` (a call leaving out defaults) is now filled by :func:`filling` (defaults that
        are Python numbers, uploaded once; a function that donates keeps the Python path for such calls)."""
        if me.donate or len(args) in tails:
            return False
        tail = _device_tail(me, args, static)
        if tail is None:
            return False
        if not tails:
            if front_next[0] is not None:  # (binding or wide stays in front: it hands calls to filling)
                me._fill_next = static_call if static else front_next[0]
                front_next[0] = filling
            else:
                me._fill_next = static_call if static else me.__dict__.get("_dispatch", me._cpp)
                me._dispatch = filling
        tails[len(args)] = tail
        for d, v in zip(tail, filled(me, args)[len(args):]):
            if type(d) is array:
                originals[id(d)] = v
        return True

    binds: dict[tuple[Any, ...], Callable[[dict[str, Any]], tuple[Any, ...]]] = {}  # (binding's, by call form)
    front_next: list[Any] = [None]  # (where binding or wide, in front of the others, hands calls on)
    wide_state: list[Any] = [None, False]  # (jax's jax_enable_x64 once wide is in front; whether only to read
    # NumPy arguments in place)

    def binding(*args: Any, **kwargs: Any) -> Any:
        """A call of a function some of whose keyword calls the C++ side cannot serve as they are (names
        whose sorted order is not the parameters', a defaulted parameter left out between two passed):
        such a call is handed on as the positional call it binds to (:func:`_binding_plan`: the keyword
        arguments in the parameters' order, the defaults left out as :func:`filling` gives them), which
        the C++ side serves; any other call is handed on as it is."""
        if kwargs:
            bind = binds.get((len(args), *kwargs))
            if bind is not None:
                return front_next[0](*args, *bind(kwargs))
        return front_next[0](*args, **kwargs)

    def wide(*args: Any, **kwargs: Any) -> Any:
        """A call of a function called with host leaves in a process where jax is imported with
        ``jax_enable_x64`` off: :func:`binding`'s work with that flag on for this thread during the call
        (``cpp_dispatch.x64_state``), so that the C++ side keys and uploads 64-bit host values as they
        are, as srcjax does, and reads NumPy arguments in place where srcjax alone does (``_IN_PLACE``)."""
        state = wide_state[0]
        prev = state.swap_local(True)
        try:
            if kwargs:
                bind = binds.get((len(args), *kwargs))
                if bind is not None:
                    return front_next[0](*args, *bind(kwargs))
            return front_next[0](*args, **kwargs)
        finally:
            state.set_local(prev)

    def start_wide(me: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether ``me``'s calls now go through :func:`wide` while jax has x64 off: a call with host leaves
        jaxlib would key as 32-bit (:func:`_narrowed`), or with NumPy arrays a function reading them in place
        may take (``in_place``: its program may run inline; if not, :func:`stop_wide`, as a float32 array
        is keyed as it is and its copies cost less without ``wide``'s ~1.3 us a call); not for a function
        that donates, which keeps ``Compiled._dispatch``."""
        if me.donate or wide_state[0] is not None:
            return False
        state = cpp_dispatch.x64_state()
        if state is None:
            return False
        leaves = flatten((args, kwargs))[0]
        if any(map(_narrowed, leaves)):
            wide_state[1] = False
        elif in_place[0] and _NUMPY.intersection(map(type, leaves)):
            wide_state[1] = True  # (until the program proves asynchronous: :func:`stop_wide`)
        else:
            return False
        wide_state[0] = state
        if front_next[0] is None:
            front_next[0] = me.__dict__.get("_dispatch", me._cpp)
        me._dispatch = wide
        return True

    def stop_wide(me: Any) -> None:
        """Take :func:`wide` away from ``me``'s calls (the next call with narrowed leaves brings it back)."""
        wide_state[0] = None
        if binds:
            me._dispatch = binding
        else:
            me._dispatch, front_next[0] = front_next[0], None

    def start_binding(me: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether the keyword call ``args``, ``kwargs`` is now bound by :func:`binding` (a function that
        donates, or a call that does not bind to a positional one, keeps being handed on or the Python path)."""
        if me.donate or len(binds) >= _BINDS:
            return False
        plan = _binding_plan(me, len(args), kwargs, static, defaults)
        if plan is None:
            return False
        if front_next[0] is None:
            front_next[0] = me.__dict__.get("_dispatch", me._cpp)
            me._dispatch = binding
        binds[(len(args), *kwargs)] = _binder(plan)
        for name, (used, d) in zip(me.params[len(args):], plan):
            if used is None and type(d) is array:
                originals[id(d)] = me.signature.parameters[name].default
        return True

    defaults: dict[int, Any] = {}  # (parameter position: its default as binding passes it, uploaded once)

    def static_call(*args: Any, **kwargs: Any) -> Any:
        """A call of a function with static arguments: jaxlib's C++ side hashes their values before
        anything else, and raises its own error for an unhashable one; the Python path raises srcjax's
        ``ArgumentError`` instead."""
        me = ref()
        assert me is not None
        try:
            return me._static_next(*args, **kwargs)
        except ValueError as e:
            if "Non-hashable static" not in str(e):
                raise
            return me._call(plain(args), kwargs)

    def refuse(me: Any) -> None:
        refused[0] += 1
        if refused[0] > _REFUSALS:  # calls it cannot serve (static values, Python values in the results):
            detach(me)  # each paid a C++ lookup on top of the Python path; the Python path alone from now on

    def miss(*args: Any, **kwargs: Any) -> tuple[Any, Any, bool]:
        me = ref()
        assert me is not None
        if len(args) < me._by_position:  # (grad by keyword: the Python path raises srcjax's error)
            return me._call(args, kwargs), None, False
        if start_wide(me, args, kwargs):  # (host leaves, jax with x64 off: this call and the next ones, wide)
            return me(*args, **kwargs), None, False
        if kwargs:
            return keyword_miss(me, args, kwargs)
        if len(args) < me._nparams and start_filling(me, args):
            return filling(*args), None, False  # (the defaults as device arrays: served like the others)
        copies = None if kwargs else _private_copies(_dynamic(args, static), flatten, array, cpp_dispatch.x64,
                                                     host_upload, in_place[0])
        if copies is _LATER:  # (not a refusal: the second dispatcher takes these calls later)
            return me._call(plain(args), kwargs), None, False
        if copies is not None and copies is not _SKIP and copies is not _IN_PLACE:
            if not me.donate:  # (its next calls skip this dispatcher while they have host leaves)
                if _top_level(_dynamic(args, static), flatten, array):
                    route(me, host_top)
                    return host_top(*args), None, False
                route(me, host_first)
            return me._cpp_host(*_restored(args, copies, static)), None, False  # host leaves: copied, then the
            # second dispatcher
        out = me._call(plain(args), kwargs)
        in_place_call = copies is _IN_PLACE
        if in_place_call and not _inline(out, getattr(_plan(me, args, plain(args))[0], "exe", None)):  # (waiting
            # would cost more than copies: see _inline)
            in_place[0] = False
            if wide_state[1]:  # (wide was there to read NumPy arguments in place: copies cost less without it)
                stop_wide(me)
            return out, None, False
        record = None if kwargs or copies is _SKIP else _record(me, args, in_place_call, in_place_call, plain(args))
        if record is None:
            refuse(me)
        return out, record, False

    def keyword_miss(me: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
        """A call passing arguments by keyword: where the C++ side's order of the leaves (the positional
        arguments, then the keyword ones sorted by name: jaxlib's ``parse_arguments``) is the parameters'
        and none is left out, the call is the positional one's (:func:`_positional`) for :func:`miss`:
        its record (keyed by the C++ side with the keywords' names) serves the next such calls, and host
        leaves route the next calls to the shortcuts, which take keyword calls too. Other keyword calls
        come back here each time and are handed on as the positional call they are; those that do not
        bind so take the Python path (which raises srcjax's errors)."""
        pos = _positional(me, args, kwargs)
        if pos is not None and len(pos) == me._nparams and sorted(kwargs) == me.params[len(args):]:
            return miss(*pos)
        if start_binding(me, args, kwargs):  # (its next calls: the positional call, from binding)
            return me(*args, **kwargs), None, False
        if pos is None:
            out = me._call(plain(args), kwargs)
            refuse(me)
            return out, None, False
        return me(*pos), None, False

    def unkeyed(me: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
        """``args`` and ``kwargs`` as one positional call for the shortcuts, or None (parameters left out,
        names that do not bind: the first dispatcher's)."""
        pos = _positional(me, args, kwargs)
        return None if pos is None or len(pos) < me._nparams or len(args) < me._by_position else pos

    def host_first(*args: Any, **kwargs: Any) -> Any:
        """A call of a function whose last call had host leaves it copies: its copies go straight to the
        second dispatcher, without the first one's lookup, which such calls always miss (measured 15 us
        of a 120 us step with 40 device leaves and 2 NumPy ones); any other call goes back to the first.
        Every :data:`_POLL` calls it looks whether the NumPy leaves have become arguments themselves (a
        first step from NumPy parameters, then the parameters it returned and NumPy batches): those
        calls then take :func:`host_top`."""
        me = ref()
        assert me is not None
        cpp, host = me._cpp, me._cpp_host
        if cpp is None or host is None:  # (detached meanwhile, by another thread)
            return me._call(plain(args), kwargs)
        pos = unkeyed(me, args, kwargs) if kwargs else args
        if pos is None:
            route(me, cpp)
            return cpp(*args, **kwargs)
        dynamic = _dynamic(pos, static)
        copies = _private_copies(dynamic, flatten, array, cpp_dispatch.x64, host_upload, in_place[0])
        if copies is None or copies is _SKIP or copies is _LATER or copies is _IN_PLACE:
            route(me, cpp)
            return cpp(*args, **kwargs)
        out = packed_call(me, pos)
        if out is not _SKIP:  # (packed: this call and the next ones)
            return out
        polls[0] += 1
        if polls[0] >= _POLL:
            polls[0] = 0
            if _top_level(dynamic, flatten, array):
                route(me, host_top)
                return host_top(*pos)
        return host(*_restored(pos, copies, static))

    def host_top(*args: Any, **kwargs: Any) -> Any:
        """A call of a function whose last call had NumPy arrays as arguments themselves (not in
        containers: a batch beside parameters on the device): only those are copied, without flattening
        the containers (their leaves are checked by the third dispatcher's structure: a record there has
        a srcjax Array at every leaf of a container, where a host leaf has another structure); any other
        call goes back to the first dispatcher (measured: 14 us of a 112 us step with 40 device leaves)."""
        me = ref()
        assert me is not None
        cpp, top = me._cpp, me._cpp_top
        if cpp is None or top is None:  # (detached meanwhile, by another thread)
            return me._call(plain(args), kwargs)
        pos = unkeyed(me, args, kwargs) if kwargs else args
        copies = None if pos is None else _top_copies(_dynamic(pos, static), array, cpp_dispatch.x64)
        if pos is None or copies is None:
            route(me, cpp)
            return cpp(*args, **kwargs)
        out = packed_call(me, pos, True)
        return top(*_restored(pos, copies, static)) if out is _SKIP else out

    # (host_first's calls' packers and host_top's, one a signature: a function called both ways, NumPy parameters
    # and device ones beside a NumPy batch, or with two models' parameters, keeps each packed)
    packings = (packed_calls.Packers(), packed_calls.Packers())
    refusing_now = [False]

    def refusing(*args: Any) -> Any:
        """A packed call its packer's dispatcher refused (a NumPy leaf in a container where a ``TopPacker``
        packs NumPy arguments beside device arrays: the function's calls changed kind): this call and the
        next ones go to the first dispatcher, which routes them again (the Python path inside that)."""
        me = ref()
        if me is None or me._cpp is None or refusing_now[0]:
            return run(*args)
        refusing_now[0] = True
        try:
            route(me, me._cpp)
            return me(*args)
        finally:
            refusing_now[0] = False

    def packed_call(me: Any, pos: tuple[Any, ...], top: bool = False) -> Any:
        """The call ``pos`` (NumPy leaves copied for another dispatcher) made by one of its packers
        (``packed_calls.py``; ``top``: host_top's) where one packs it (the next calls: its route), else _SKIP;
        counts the calls none packs and starts packers."""
        packing = packings[top]
        out, pk = packing.call(pos)
        if out is packed_calls.MISS:
            if packing.due() and not packing.compiling():
                if not top and _top_level(_dynamic(pos, static), flatten, array):  # (host_top's calls: its packer)
                    packing.add(None)
                    route(me, host_top)
                    return _SKIP
                plan = _plan(me, pos, plain(pos))[0]
                pk = plan and start_packer(run, plan, _out_treedef(plan, False), pos, flatten, array, static)
                if pk is not None:
                    pk.refusing = refusing
                packing.add(pk)
            return _SKIP
        if pk is not None:  # (None: refused, the call went to the first dispatcher, and so do the next ones)
            route(me, host_packed[top] if static else pk.direct(host_packed[top]))
        return out

    def packed_route(packing: packed_calls.Packers) -> Callable[..., Any]:
        def host_packed(*args: Any, **kwargs: Any) -> Any:
            """A call of a function whose NumPy calls are packed (by one of its packers), or back to the first
            dispatcher."""
            me = ref()
            assert me is not None
            cpp = me._cpp
            pos = unkeyed(me, args, kwargs) if kwargs else args
            if pos is not None and cpp is not None:
                current = packing.current
                if current is not None and current.ready and not current.refusing_now:  # (the route of a function
                    out = current.call(pos)  # with static arguments: its current packer first, in this frame)
                    if out is not packed_calls.MISS:
                        return out
                out, pk = packing.call(pos, False)  # (a call of the other kind may come here: not counted)
                if out is not packed_calls.MISS:
                    if pk is not None and pk is not current and not static:  # (another signature's packer: its
                        route(me, pk.direct(host_packed))  # route from now on)
                    return out
            if cpp is None:  # (detached meanwhile, by another thread)
                return me._call(plain(args), kwargs)
            route(me, cpp)
            return cpp(*args, **kwargs)
        return host_packed

    host_packed = (packed_route(packings[False]), packed_route(packings[True]))

    def miss_top(*args: Any) -> tuple[Any, Any, bool]:  # (the arguments' NumPy arrays are srcjax's copies)
        me = ref()
        assert me is not None
        if not _top_level(_dynamic(args, static), flatten, array):  # (a container holds host leaves: copied by
            # the second)
            route(me, host_first)
            return host_first(*args), None, False
        out = me._call(plain(args), {})
        record = _record(me, args, True, False, plain(args))
        if record is None:
            refuse(me)
        return out, record, False

    def miss_host(*args: Any) -> tuple[Any, Any, bool]:  # (only srcjax's copies reach here)
        me = ref()
        assert me is not None
        out = me._call(plain(args), {})
        record = _record(me, args, True, False, plain(args))
        if record is None:
            refuse(me)
        return out, record, False

    name = getattr(c, "__name__", "f")
    names = [p for p in c.params if p in c._cpp_static]
    c._cpp = cpp_dispatch.make(name, run, miss, ("srcjax", id(c), *names), static, names)  # (not c.fn: a lazy
    # derivative would be written by reading it)
    c._cpp_host = cpp_dispatch.make(name, run, miss_host, ("srcjax host", id(c), *names), static, names)
    c._cpp_top = cpp_dispatch.make(name, run, miss_top, ("srcjax top", id(c), *names), static, names)
    if not c.donate:  # (a function that donates keeps Compiled._dispatch: release_donated after each call)
        route(c, c._cpp)
        if static:
            c._dispatch = static_call
    return cpp_dispatch.Array


def donating_call(c: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                  clean: Callable[[TranspileError], TranspileError]) -> Any:
    """A call of ``c``, which donates arguments: through its C++ dispatcher when it has one, then
    :func:`release_donated`. ``clean`` is api's (a user-facing error without srcjax's frames)."""
    cpp = c._cpp
    if cpp is None:
        out = c._call(args, kwargs)
    else:
        try:
            out = cpp(*args, **kwargs)
        except ValueError as e:  # (jaxlib's message for an array donated twice in one call)
            if "Non-hashable static" in str(e):  # (the Python path raises srcjax's error, located)
                return c._call(args, kwargs)
            if "donated" not in str(e):
                raise
            raise clean(donated_error()) from None
    release_donated(c, args, kwargs)
    return out


def release_donated(c: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Release the buffers a call of ``c`` took by donation (XLA reused them for results): the C++
    dispatcher then sees released arrays for what they are (it sends them back to the Python path,
    which raises srcjax's error), where a taken buffer would reach XLA and fail there with jaxlib's
    own error."""
    values = [v for name, v in zip(c.params, args) if name in c.donate]
    values += [v for name, v in kwargs.items() if name in c.donate]
    for leaf in pytree.flatten(values)[0]:
        b = getattr(leaf, "_buf", None)
        if b is not None and b.is_deleted():
            b.delete()


_BINDS = 64  # (call forms binding remembers per function: names passed by keyword, in the call's order)


def _static_positions(c: Any) -> tuple[int, ...]:
    """The positions of ``c``'s static parameters (``static_argnums``/``static_argnames``, and those srcjax
    found static: ``Compiled.auto_static``)."""
    return tuple(i for i, p in enumerate(c.params) if p in c._static_all)


def _dynamic(args: tuple[Any, ...], static: tuple[int, ...]) -> tuple[Any, ...]:
    """``args`` without the static ones (at the positions ``static``): what the program takes."""
    if not static:
        return args
    return tuple(a for i, a in enumerate(args) if i not in static)


def _restored(args: tuple[Any, ...], dynamic: Any, static: tuple[int, ...]) -> Any:
    """``args`` with its dynamic arguments replaced by ``dynamic`` (in order; the static ones kept)."""
    if not static:
        return dynamic
    it = iter(dynamic)
    return tuple(a if i in static else next(it) for i, a in enumerate(args))


def _device_tail(c: Any, args: tuple[Any, ...], static: tuple[int, ...] = ()) -> tuple[Any, ...] | None:
    """The defaults ``args`` (a call of ``c``) leaves out, uploaded as srcjax arrays (weak-typed, as the
    Python numbers they are: the same program as the call passing them), the static ones (at positions
    ``static``: keyed by the C++ side as values) as they are; or None where a dynamic one is not a Python
    number."""
    from .left_out import filled

    full = filled(c, args)
    if len(full) != c._nparams or len(full) == len(args):
        return None
    tail = full[len(args):]
    kept = [i - len(args) for i in static if i >= len(args)]
    if not all(type(v) in _NUMBERS or j in kept for j, v in enumerate(tail)):
        return None
    from .arguments import _uploadable  # (device_put's leaf check: api imports this module)
    from .runtime import device_put as upload
    from .runtime import get_backend, wrap

    backend = get_backend(c.device if isinstance(c.device, str) else None)
    out = list(tail)
    for j, v in enumerate(tail):
        if j not in kept:
            leaf, aval = _uploadable(v)  # (a Python number: its weak-typed value and aval)
            out[j] = wrap(upload(leaf, aval, backend), aval)
    return tuple(out)


def _private_copies(args: tuple[Any, ...], flatten: Callable[[Any], Any], array: type,
                    x64: Callable[[], bool], upload: Any, in_place: bool = False) -> Any:
    """``args`` with each NumPy array leaf replaced by a copy of its own (which the C++ side may then
    alias safely), or None when there is no host leaf (device arrays only), or _SKIP when a leaf is
    one the second dispatcher cannot take (jax's 64-bit squashing, an unknown leaf), or _LATER while
    srcjax's own upload is avoiding ``ml_dtypes`` (``upload``: ``runtime/host_upload.py``; jaxlib's
    C++ upload imports it, 1-2 s, as ``batched_device_put`` does), or _IN_PLACE (``in_place``: a CPU
    function that donates nothing) where the first dispatcher may take the host leaves as they are:
    its record's results wait for the program to finish (``cpp_dispatch.out_treedef``'s ``ready``),
    so the call returns only once the NumPy memory it reads in place has been read. ``flatten`` is
    jaxlib's default pytree flattening (srcjax arrays are leaves there)."""
    leaves, tree = flatten(args)
    kinds = set(map(type, leaves))
    numpy_only = kinds == _NUMPY  # (NumPy arrays alone: checked and copied without a Python loop)
    kinds.discard(array)
    if not kinds:
        return None
    if upload.active():
        return _LATER
    if not kinds <= _HOST:
        return _SKIP
    narrow = not x64()  # (jaxlib keys and uploads a 64-bit host value as 32-bit)
    if narrow:
        if float in kinds or int in kinds:
            return _SKIP
        if numpy_only and not _WIDE.isdisjoint(map(_DTYPE, leaves)):
            return _SKIP
    elif in_place:  # (x64 off, a float32 record would also take float64 arrays: squashed, keyed alike)
        return _IN_PLACE
    if numpy_only:
        return tree.unflatten(list(map(_COPY, leaves)))
    copies = []
    for x in leaves:  # (the dtypes of the NumPy leaves alone: a device leaf's is keyed as it is)
        if type(x) is np.ndarray:
            if narrow and x.dtype in _WIDE:
                return _SKIP
            x = _COPY(x)
        copies.append(x)
    return tree.unflatten(copies)


def _narrowed(leaf: Any) -> bool:
    """Whether jaxlib keys and uploads ``leaf`` as 32-bit where jax has x64 off (a Python number, a NumPy
    array or scalar of a 64-bit dtype), which srcjax compiles as it is."""
    t = type(leaf)
    if t is float or t is int or t is complex:
        return True
    return (t is np.ndarray or isinstance(leaf, np.generic)) and leaf.dtype in _WIDE


def _top_level(args: tuple[Any, ...], flatten: Callable[[Any], Any], array: type) -> bool:
    """Whether every argument is a NumPy array (exactly ``np.ndarray``), a srcjax Array, or a list, tuple,
    dict or None whose leaves are all srcjax Arrays: calls for the third dispatcher, which copies the
    arguments that are NumPy arrays (:func:`_top_copies`) and flattens nothing in Python."""
    for a in args:
        t = type(a)
        if t is np.ndarray or t is array:
            continue
        if t not in _CONTAINERS:
            return False
        for leaf in flatten(a)[0]:
            if type(leaf) is not array:
                return False
    return True


def _top_copies(args: tuple[Any, ...], array: type, x64: Callable[[], bool]) -> list[Any] | None:
    """``args`` with each argument that is a NumPy array replaced by a copy of its own, or None where
    no argument is one, or one is anything but a NumPy array, a srcjax Array or a container (whose
    leaves the third dispatcher's records check: a srcjax Array at each), or a 64-bit NumPy array
    where jaxlib keys it as 32-bit (those calls go back to the first dispatcher, then its miss)."""
    copies = list(args)
    n = 0
    for i, a in enumerate(args):
        t = type(a)
        if t is np.ndarray:
            if a.dtype in _WIDE and not x64():
                return None
            copies[i] = _COPY(a)
            n += 1
        elif t is not array and t not in _CONTAINERS:
            return None
    return copies if n else None


def _inline(out: Any, exe: Any) -> bool:
    """Whether the program ``exe`` that made ``out`` runs on the calling thread (``Executable.runs_inline``:
    XLA's CPU client runs a program of under 1000 flops there) and had finished when its call returned:
    there a record's wait for the program (NumPy arguments read in place) costs nothing. A program XLA
    runs asynchronously makes the wait cost more than copying the arguments (measured, calling thread's
    CPU time per call on ``bench_models.py``: the 3-layer MLP 66-99 us waiting against 43-62 copied; the
    transformer block 117-143 against 93-107), so such a function's NumPy arguments are copied
    (:func:`_private_copies`). Its first call's results alone could not tell: on a loaded machine they
    were often ready when looked at, and the function then waited at every call."""
    runs_inline = getattr(exe, "runs_inline", None)
    if runs_inline is None or not runs_inline():
        return False
    b = packed_calls.first_buffer(out)
    return b is not None and bool(b.is_ready())


def _plan(c: Any, args: tuple[Any, ...], keyed: Any = None) -> tuple[Any, list[Any]]:
    """The plan serving calls like ``args`` of ``c`` (or None) and the leaves the C++ side hands its
    program; ``keyed``: as :func:`_record`'s."""
    if c._cpp is None or c._static_all != c._cpp_static or len(args) != c._nparams or not args:
        return None, []
    from .runtime import cpp_dispatch
    from .tree_calls import tree_key

    keyed = args if keyed is None else keyed
    served = getattr(c, "_served_plan", None)
    if served is not None:  # (a Jacobian: its array form's plan, for a signature its Python path checked)
        return served(keyed), cpp_dispatch.flatten(args)
    if c._static_all:
        plan, _ = _static_plan(c, keyed)
        bufs = cpp_dispatch.flatten(_dynamic(args, _static_positions(c)))
    else:
        bufs = cpp_dispatch.flatten(args)
        key = c._fast_key(keyed)
        plan = c._cache.get(key) if key is not None else None
        if plan is None:
            tree = tree_key(keyed)
            plan = c._tree_cache.get(tree[0]) if tree is not None else None
    return plan, bufs


def _record(c: Any, args: tuple[Any, ...], host: bool, ready: bool = False, keyed: Any = None) -> Any:
    """The C++ fast-path record for calls like ``args``, or None (see the module's docstring). ``host``:
    ``args`` may hold NumPy arrays and Python numbers (uploaded by the C++ side); ``ready``: the results
    wait for the program (NumPy memory read in place, see :func:`_private_copies`); ``keyed``: the
    arguments as srcjax's Python path keyed them (``args`` with defaults left out given back as numbers
    where ``args`` holds them as device arrays: see :func:`attach`'s ``plain``)."""
    plan, bufs = _plan(c, args, keyed)
    if plan is None or len(bufs) != len(plan.in_avals):
        return None
    from .runtime import cpp_dispatch

    if not cpp_dispatch.same_signatures(bufs, plan.in_avals, host):
        return None
    out_def = _out_treedef(plan, ready)
    if out_def is None:
        return None
    return cpp_dispatch.fastpath(plan.exe, bufs, out_def)


def _static_plan(c: Any, args: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """The plan serving ``args`` of ``c``, a function with static arguments, or None, when its leaves are
    exactly the C++ flattening's of the dynamic arguments, in order (as ``Compiled._remember_tree``);
    and those dynamic arguments (what the C++ side hands the program, the static ones taken out)."""
    static = _static_positions(c)
    dynamic = _dynamic(args, static)
    try:
        key, leaves, _ = c._key(list(args))
    except TranspileError:
        return None, dynamic
    if c._static_all != c._cpp_static:  # (keying found another static argument: c is detached)
        return None, dynamic
    plan = c._cache.get(key)
    fast = pytree_default_flatten(dynamic)
    if plan is None or len(fast) != len(leaves) or any(a is not b for a, b in zip(fast, leaves)):
        return None, dynamic
    return plan, dynamic


def pytree_default_flatten(args: tuple[Any, ...]) -> list[Any]:
    """jaxlib's default flattening of ``args``' leaves (srcjax arrays are leaves there)."""
    from .runtime import cpp_dispatch

    return cpp_dispatch.default_flatten()(args)[0]  # type: ignore[no-any-return]


def _out_treedef(plan: Any, ready: bool) -> Any:
    """The C++ structure of ``plan``'s results (computed once; ``ready``: the one whose ``unflatten``
    waits for the program), or None."""
    if plan.cpp_out is None:
        from .runtime import cpp_dispatch

        tree, template = plan.out_tree, plan.template

        def build(arrays: list[Any]) -> Any:
            if tree is pytree.LEAF and len(template) == 1 and template[0] is None:
                return arrays[0]
            it = iter(arrays)
            return pytree.unflatten(tree, [next(it) if t is None else t for t in template])

        avals: Any = getattr(plan.exe, "out_avals", None)
        ok = avals is not None and len(avals) == plan.n_out
        plain = ok and cpp_dispatch.out_treedef(build, avals)
        plan.cpp_out = (plain or None, plain and cpp_dispatch.out_treedef(build, avals, ready=True) or None)
    return plan.cpp_out[ready]
