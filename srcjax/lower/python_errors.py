"""Python's own errors where the user's function, run by NumPy, raises them and the specializer would not:
a dict walked by a ``for`` loop that adds keys to it (written ``d = index_update(d, ...)``, a new dict, so the
walk itself never sees the change), a Python method of a list of arrays that compares them (``xs.sort()``), an
item of a dict or list written at a key computed from array data (``d[x[0]] = v``: refused as reading it is)."""

from __future__ import annotations

from typing import Any

import libcst as cst

from .. import pytree
from ..core import StaticValueError
from ..frontend.names import walk
from ..frontend.resolve import LIBRARY_MODULES
from .values import contains_dynamic


def walked_size(nf: Any, s: cst.For, seq: Any) -> tuple[str, int] | None:
    """The name of the dict ``for`` statement ``s`` walks (``seq``, the dict a name holds) and its size, to check
    after each step (:func:`check_walked`); None where there is nothing to check (srcjax's own helpers included).
    A derivative walks the dict under another name (``loop_items = d``, ``for k in loop_items:``) while its body
    binds ``d`` to the dict with the new key: the name checked is then ``d``."""
    if not (isinstance(seq, dict) and type(s.iter) is cst.Name and
            getattr(getattr(nf, "fn", None), "__module__", None) not in LIBRARY_MODULES):
        return None
    name = s.iter.value
    fdef = getattr(nf, "fdef", None)
    if name.startswith("loop_items") and fdef is not None:
        for st in walk(fdef.body):
            if type(st) is cst.Assign and len(st.targets) == 1 and type(st.targets[0].target) is cst.Name \
                    and st.targets[0].target.value == name and type(st.value) is cst.Name:
                name = st.value.value
                break
    return name, len(seq)


def check_walked(s: cst.For, env: dict[str, Any], size: tuple[str, int] | None) -> None:
    """Python's "dictionary changed size during iteration" where a step of the loop changed it."""
    now = env.get(size[0]) if size is not None else None
    if isinstance(now, dict) and size is not None and len(now) != size[1]:
        raise StaticValueError("dictionary changed size during iteration (Python's RuntimeError): the loop adds "
                               "or removes keys of the dict it walks",
                               hint="loop over a copy of its keys, for k in list(d):, or build a new dict")


def method_of_arrays(fv: Any, name: str) -> StaticValueError | None:
    """The error for a Python method (``xs.sort()``) whose object holds arrays, which it compares in Python."""
    if not contains_dynamic(getattr(fv, "__self__", None)):
        return None
    return StaticValueError(f"{name}() needs values known at transpile time, but its object holds arrays",
                            hint="sort or compare one array with NumPy: np.sort(np.stack(xs)), np.argsort"
                            if name.endswith("sort") else "use the NumPy equivalent on arrays")


def array_key(fv: Any, args: Any) -> Any:
    """The key of an item of a dict or list that ``fv(*args)`` writes (``tree_set``) or reads in batched source
    (``item_key``), where it is a run-time value (else None)."""
    if fv is pytree.tree_set and len(args) >= 2 and isinstance(args[0], (dict, list)) and contains_dynamic(args[1]):
        return args[1]
    if fv is pytree.item_key and args and contains_dynamic(args[0]):
        return args[0]
    return None
