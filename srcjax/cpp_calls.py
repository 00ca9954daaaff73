"""Compiled functions called through jaxlib's C++ dispatcher (issue #18; ``runtime/cpp_dispatch.py``).

After a function's first successful call, :func:`attach` gives it a C++ ``PjitFunction``: later
calls without keyword arguments go straight to it. For a signature it has not seen it calls back
:func:`_miss`, which runs srcjax's Python path (``Compiled._call``) and then, when the call's
leaves were all srcjax arrays on the program's device and served by a plan whose leaves are exactly
the C++ flattening's (the same rule as ``tree_calls``), hands the C++ side the executable, so that
the next such call never enters Python. Any other call (NumPy inputs, static values, containers
with other leaves) keeps falling back to the Python path, which is then the whole story. Donation
works on both paths (the executable's aliasing takes the donated buffers either way).

Only with ``SRCJAX_CPP_DISPATCH=1`` (off by default: ``runtime/cpp_dispatch.py``). Not attached
(the Python path does everything): ``device="numpy"``,
static arguments (declared or found), explicit shardings, ``*args``/keyword-only
parameters, and subclasses with their own ``__call__`` (vmap, jacobians, pmap).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from . import pytree
from .core import TranspileError

__all__ = ["attach", "detach", "donated_error"]

_REFUSALS = 16  # calls the C++ side sent back without a record before a function stops using it


def donated_error() -> TranspileError:
    """The error for a donated array passed again (``runtime/xla.py``'s)."""
    from .runtime.xla import donated_error

    return donated_error()


def detach(c: Any) -> None:
    """Stop using the C++ dispatcher for ``c`` (an argument became static: values matter now)."""
    c._cpp = None
    c._cpp_refused = True


def _eligible(c: Any, plain_call: Callable[..., Any]) -> bool:
    return (type(c).__call__ is plain_call and c.device != "numpy" and not c._static_all
            and c.in_shardings is None and c.out_shardings is None and c._simple and not getattr(c, "_needs", None))


def attach(c: Any, plain_call: Callable[..., Any]) -> type | None:
    """Give ``c`` (an ``api.Compiled``) its C++ dispatcher where it can have one (decided once): where
    its class's ``__call__`` is ``plain_call`` (``Compiled.__call__``); srcjax.Array's type when it has."""
    if c._cpp is not None or c._cpp_refused:
        return None
    c._cpp_refused = True  # (decided once; detach() may refuse it later)
    if not _eligible(c, plain_call):
        return None
    from .runtime import cpp_dispatch

    if not cpp_dispatch.enabled():
        return None
    ref = weakref.ref(c)

    def run(*args: Any, **kwargs: Any) -> Any:  # (jax's disable_jit, when jax is imported: the Python path)
        me = ref()
        assert me is not None
        return me._call(args, kwargs)

    refused = [0]

    def miss(*args: Any, **kwargs: Any) -> tuple[Any, Any, bool]:
        me = ref()
        assert me is not None
        out = me._call(args, kwargs)
        record = None if kwargs else _record(me, args)
        if record is None:
            refused[0] += 1
            if refused[0] > _REFUSALS:  # calls it cannot serve (host leaves, Python values in the results):
                detach(me)  # each paid a C++ lookup on top of the Python path; the Python path alone from now on
        return out, record, False

    c._cpp = cpp_dispatch.make(getattr(c, "__name__", "f"), run, miss, ("srcjax", id(c)))  # (not c.fn: a lazy
    # derivative would be written by reading it)
    return cpp_dispatch.Array


def _record(c: Any, args: tuple[Any, ...]) -> Any:
    """The C++ fast-path record for calls like ``args``, or None (see the module's docstring)."""
    if c._cpp is None or c._static_all or len(args) != c._nparams or not args:
        return None
    from .runtime import cpp_dispatch
    from .tree_calls import tree_key

    bufs = cpp_dispatch.flatten(args)
    key = c._fast_key(args)
    plan = c._cache.get(key) if key is not None else None
    if plan is None:
        tree = tree_key(args)
        plan = c._tree_cache.get(tree[0]) if tree is not None else None
    if plan is None or len(bufs) != len(plan.in_avals):
        return None
    if not cpp_dispatch.same_signatures(bufs, plan.in_avals):
        return None
    out_def = _out_treedef(plan)
    if out_def is None:
        return None
    return cpp_dispatch.fastpath(plan.exe, bufs, out_def)


def _out_treedef(plan: Any) -> Any:
    """The C++ structure of ``plan``'s results (computed once), or None."""
    if plan.cpp_out is None:
        from .runtime import cpp_dispatch

        tree, template = plan.out_tree, plan.template

        def build(arrays: list[Any]) -> Any:
            if tree is pytree.LEAF and len(template) == 1 and template[0] is None:
                return arrays[0]
            it = iter(arrays)
            return pytree.unflatten(tree, [next(it) if t is None else t for t in template])

        plan.cpp_out = cpp_dispatch.out_treedef(build, plan.n_out) or False
    return plan.cpp_out or None
