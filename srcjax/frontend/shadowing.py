"""User names that generated code needs for itself, given other names.

Derivative and batched source call srcjax's helpers by their bare names (``ones_like(y)``,
``unbroadcast(g, x)``, ``is_float(out)``) and NumPy as ``np``: a user's local variable of one of those
names (``ones_like = x * 2.0``) would be called instead, and a user function of one of those names
would be taken for the helper (``unbroadcast`` is also a primitive's name). So a function's locals
that take such a name are renamed in its normalized form (``ones_like`` -> ``ones_like_1``), and a
user function of such a name is called by another name (:meth:`Program.helper_name`). A parameter
keeps its name (callers pass it by keyword): differentiating a function with such a parameter is
refused at the parameter (:func:`refuse_parameters`).

Input: a normalized function (ANF) and its statement spans; output: the same function with those
locals renamed, spans carried over to the rebuilt statements.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import libcst as cst

from ..core import Span, UnsupportedSyntaxError
from .names import renamed, walk
from .read import is_generated
from .resolve import LIBRARY_MODULES, RESERVED

if TYPE_CHECKING:
    from ..core import TranspileError
    from .normalize import NormalizedFunction

# the names generated code refers to as globals (besides its own temporaries); not what the helper
# modules import for themselves and generated code never names (`re`, typing's `Any`, `annotations`)
TAKEN = frozenset((RESERVED - {"re", "Any", "annotations"}) | {"np", "math", "srcjax"})


def is_taken(name: str) -> bool:
    return name in TAKEN


def free_name(base: str, used: Callable[[str], bool]) -> str:
    """``base_1``, ``base_2``, ...: the first that is not ``used`` nor taken by generated code."""
    k = 0
    while True:
        k += 1
        name = f"{base}_{k}"
        if not used(name) and not is_taken(name) and not hasattr(builtins, name):
            return name


def unshadow(fdef: cst.FunctionDef, spans: dict[int, Span], locals_: Iterable[str], used: set[str],
             span_of: Callable[[cst.CSTNode], Span | None], source_fdef: cst.FunctionDef) -> cst.FunctionDef:
    """``fdef`` (normalized from ``source_fdef``) with its locals of :data:`TAKEN` names renamed
    (``spans`` updated in place)."""
    p = source_fdef.params
    params = {prm.name.value for prm in [*p.posonly_params, *p.params, *p.kwonly_params]}
    clash = sorted(n for n in set(locals_) - params if n in TAKEN)
    if not clash:
        return fdef
    for module in ("np", "math", "srcjax"):  # (the normalized code names those modules so: no renaming after)
        if module in clash:
            first = next((n for n in walk(source_fdef) if isinstance(n, cst.Name) and n.value == module), None)
            raise UnsupportedSyntaxError(
                f"a local variable named `{module}` (generated code calls the module `{module}` by that name)",
                span=None if first is None else span_of(first), hint=f"rename the variable, e.g. `{module}_`")
    mapping: dict[str, cst.BaseExpression] = {}
    for n in clash:
        new = free_name(n, lambda s: s in used)
        used.add(new)
        mapping[n] = cst.Name(new)
    body = renamed(fdef.body, mapping)
    for before, after in zip(walk(fdef.body), walk(body)):
        s = spans.get(id(before))
        if s is not None and before is not after:
            spans[id(after)] = s
    return fdef.with_changes(body=body)


def refuse_parameters(nf: NormalizedFunction, error: type[TranspileError]) -> None:
    """Refuse to write the derivative of a user function with a parameter of a :data:`TAKEN` name (the
    derivative code would call that parameter for srcjax's helper)."""
    if is_generated(nf.fn) or getattr(nf.fn, "__module__", "") in LIBRARY_MODULES:
        return
    p = nf.plain_fdef.params
    for prm in [*p.posonly_params, *p.params, *p.kwonly_params]:
        name = prm.name.value
        if is_taken(name):
            at = next((q for q in walk(nf.source.fdef) if isinstance(q, cst.Param) and q.name.value == name), None)
            raise error(f"cannot differentiate `{nf.source.name}`: its parameter `{name}` has the name of a helper "
                        "srcjax's derivative code calls", span=None if at is None else nf.source.span(at),
                        hint=f"rename the parameter, e.g. `{name}_`")
