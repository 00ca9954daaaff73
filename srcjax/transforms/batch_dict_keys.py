"""vmap: a loop or comprehension over a dict's keys (``{k: p[k] - lr * g[k] for k in params}``) where the dict
is mapped whole (``in_axes=0`` of a dict argument: the state ``True``, as an array's). Iterating a dict gives
its keys, the same strings in every example; read as a batched array's rows, the key ``k`` was a mapped value
and ``g[k]`` was refused ("must be the same for every example"). Where the function shows the name is a dict
(it indexes it by a string, calls its ``.items()``, binds it to a display: ``frontend/dict_names.py``; or the loop
indexes it, or a dict, by the loop's name: ``for k in g: out[k] = m[k] + g[k]``, :func:`keyed_dict_loop`), the loop
runs over ``batch_keys(d)`` (a name renamed where a loop's body is written in line, ``params_1``, is read as
``params``) (``srcjax/batch_keys.py``: ``d`` itself, checked to be a dict while specializing,
so an array bound to the same name is refused there, never iterated over its batch axis) with unbatched keys.
(A comprehension is written as such a loop first: ``vmap`` reads it again so when it cannot batch it.)"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from ..frontend.dict_names import dict_names, keyed_loop
from ..frontend.names import statement_nodes

if TYPE_CHECKING:
    from .batch import FunctionWriter

_NAMES: dict[int, tuple[cst.FunctionDef, set[str]]] = {}  # id(fdef) -> (fdef, its dict names): one walk each


def mapped_dict_keys(w: FunctionWriter, it: cst.BaseExpression) -> bool:
    """``it`` (``d`` or ``d.keys()``) runs over the keys of a dict whose values are mapped whole."""
    if type(it) is cst.Call and not it.args and type(it.func) is cst.Attribute and it.func.attr.value == "keys":
        it = it.func.value
    return type(it) is cst.Name and w.state(it.value) is True and shown_dict(w, it.value)


def shown_dict(w: FunctionWriter, name: str) -> bool:
    """The function shows ``name`` is a dict (a name renamed in a body written in line read as its original);
    vmap broadcasts such an unmapped value leaf by leaf (``batch_broadcast_items``) where it becomes mapped."""
    if not name.isidentifier():
        return False
    fdef = w.nf.fdef
    hit = _NAMES.get(id(fdef))
    if hit is None or hit[0] is not fdef:  # (the function's and its nested functions', a loop's body)
        # (a function is a statement: its statements walked, no expression)
        hit = _NAMES[id(fdef)] = (fdef, set().union(*(dict_names(d.body.body) for d in statement_nodes(fdef, False)
                                                      if type(d) is cst.FunctionDef)))
    while name not in hit[1] and re.fullmatch(r".+_\d+", name):  # (`params_1`: a body written in line, renamed)
        name = name.rsplit("_", 1)[0]
    return name in hit[1]


def keyed_dict_loop(w: FunctionWriter, loop: cst.For) -> str | None:
    """The name of a dict mapped whole that ``loop`` runs over the keys of, shown by its body (``for k in g:
    out[k] = m[k] + g[k]``: ``dict_names.keyed_loop``); None for any other loop."""
    name = keyed_loop(loop, lambda n: shown_dict(w, n))
    return name if name is not None and w.state(name) is True else None
