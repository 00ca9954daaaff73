"""A program: the entry function and every user function it calls, normalized.

``Program.source()`` is the generated module: imports first, then the entry
function, then helpers in the order they are first called. Executed in the
entry function's globals it runs with NumPy and returns what the compiled
function returns.
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
import sys
import textwrap
from collections.abc import Callable, Collection, Iterable
from contextlib import nullcontext
from typing import Any

import libcst as cst

from .. import warm_cache
from ..core import Span, TranspileError
from . import bound_helpers, imported_names, library_cache, shadowing, shared_forms
from .ast_walk import walk_ast
from .functionalize import functionalize
from .normalize import NormalizedFunction, normalize
from .parsed import parse
from .read import anf_text, function_name, generated_source, generated_tree, is_generated, unchecked_nodes
from .resolve import LIBRARY_MODULES, REEXPORTED_MODULES, unwrap

HEADER = "import numpy as np\n"

# srcjax.adjoint helpers never change: normalized once per process (and kept on disk: library_cache.py).
_LIBRARY: dict[Callable[..., Any], NormalizedFunction] = {}
# a copy of a helper srcjax wrote (``max_bar_vmap``) keeps its normalized form itself, on this attribute: it
# lives as long as the copy (a program's own copy runs in the program's namespace, with the user's functions:
# kept in _LIBRARY, every program's namespace lived as long as the process)
FORM_ATTR = "__srcjax_library_form__"


def library_form(fn: Callable[..., Any]) -> NormalizedFunction | None:
    """The normalized form of the library helper ``fn`` (the one every program shares), or None."""
    if not is_generated(fn):
        return _LIBRARY.get(fn)
    nf = getattr(fn, "__dict__", {}).get(FORM_ATTR)
    return nf if nf is not None and nf.fn is fn else None  # (not one copied with a wrapper's __dict__)


def _keep_library_form(fn: Callable[..., Any], nf: NormalizedFunction) -> None:
    if not is_generated(fn):
        _LIBRARY[fn] = nf
        return
    try:
        setattr(fn, FORM_ATTR, nf)
    except AttributeError:  # pragma: no cover - not a plain function: not kept
        pass


class Program:
    _origin: Program | None = None  # (a lowering's copy: the program it was copied from, lowering_copy)

    def __init__(self, entry: Callable[..., Any], bindings: dict[str, Any] | None = None,
                 comprehension_loops: bool = False) -> None:
        entry = unwrap(entry)
        self.entry_fn = entry
        self.bindings = bindings  # entry parameters fixed to functions (see Normalizer.bindings)
        self.comprehension_loops = comprehension_loops  # list comprehensions as append loops (reverse mode)
        self.functions: dict[str, NormalizedFunction] = {}  # generated name -> function
        self.by_fn: dict[Callable[..., Any], str] = {}  # user function -> generated name
        self._queue: list[Callable[..., Any]] = []
        self.no_roll: set[int] = set()  # id() of `for` statements to unroll (their int results are needed static)
        self.data_names: dict[str, set[str]] = {}  # function -> names its exits under a data test made data
        self.rule_only: set[str] = set()  # custom derivative rules (and what they call) the program never calls
        self.called_at: dict[Callable[..., Any], tuple[Callable[..., Any], Span | None]] = {}  # callee -> caller
        self.methods: set[str] = set()  # methods and property getters of the user's classes (not called by name)
        self.reads = warm_cache.Reads()  # the files and module-level names normalizing read (warm_cache.py)
        # reverse mode's helper bodies prepared for branches on data (transforms/inline_calls.py), with the
        # functions they were prepared from (a function replaced, e.g. by lowering: prepared again)
        self.inlined: tuple[list[Any], dict[tuple[Any, ...], list[Any]]] = ([], {})
        self.entry = self.add(entry)
        while self._queue:
            fn = self._queue.pop(0)
            self._normalize(fn)

    def lowering_copy(self) -> Program:
        """A copy of this program that a lowering may rewrite (``lower/specialize.py``: a function
        functionalized again, loops to unroll) without changing what the transformations that share this
        one read, nor what ``srcjax.source`` prints of it: its own ``functions``, ``data_names`` and
        ``no_roll``, the rest shared. ``origin``: the program it was copied from (a pmap's plan names it)."""
        new = copy.copy(self)
        new.functions = dict(self.functions)
        new.data_names = {k: set(v) for k, v in self.data_names.items()}
        new.no_roll = set(self.no_roll)
        new._origin = self.origin
        return new

    @property
    def origin(self) -> Program:
        return self._origin or self

    def helper_name(self, fn: Callable[..., Any], avoid: Collection[str] = ()) -> str:
        """The name generated code calls ``fn`` by: its own name, or ``name_1``, ``name_2`` ... where another
        function of the program has it, none of ``avoid`` (the caller's locals and temporaries: a second copy
        ``total_1`` of ``def total(*xs)`` beside a temporary ``total_1`` of the first call's result)."""
        fn = unwrap(fn)
        name = self.by_fn.get(fn)
        if name is None:
            base = function_name(fn)
            name = base
            k = 0
            taken = set(self.by_fn.values())
            library = getattr(fn, "__module__", "") in LIBRARY_MODULES and not is_generated(fn)
            # (a user function never takes a name generated code calls srcjax's helper by: shadowing.py)
            while name in taken or k and name in avoid or not library and shadowing.is_taken(name):
                k += 1
                name = f"{base}_{k}"
            self.by_fn[fn] = name
            self._queue.append(fn)
        return name

    def add(self, fn: Callable[..., Any]) -> NormalizedFunction:
        name = self.helper_name(fn)
        self._queue.remove(fn)
        return self._normalize(fn, name)

    def _normalize(self, fn: Callable[..., Any], name: str | None = None) -> NormalizedFunction:
        try:
            with warm_cache.recording(self.reads):
                nf = self._normalize_one(fn, name)
        except TranspileError as e:  # in a helper: the calls that lead there from the entry, as a traceback
            raise self.locate(e, fn) from None
        for callee, site in nf.call_sites.items():
            self.called_at.setdefault(callee, (fn, site))
        return nf

    def locate(self, e: TranspileError, fn: Callable[..., Any]) -> TranspileError:
        """``e``, raised in ``fn``, with the calls that lead there from the entry (its chain: where an
        error in srcjax's own helpers is shown, ``api._clean`` takes the innermost user call)."""
        seen = {fn}
        while fn in self.called_at:
            fn, site = self.called_at[fn]
            if fn in seen:
                break
            seen.add(fn)
            e.called_from(site)
        return e

    def _normalize_one(self, fn: Callable[..., Any], name: str | None = None) -> NormalizedFunction:
        name = name or self.by_fn[fn]
        library = getattr(fn, "__module__", "") in LIBRARY_MODULES and name == fn.__name__
        nf = library_form(fn) if library else None
        if nf is None and library:
            nf = library_cache.load(fn, name)  # normalized by an earlier process
            if nf is not None:
                _keep_library_form(fn, nf)
        if nf is None:
            bindings = self.bindings if fn is self.entry_fn else bound_helpers.bound_names(fn)
            if bindings is None and getattr(fn, "__module__", "") not in LIBRARY_MODULES and not is_generated(fn):
                # (a user function: its form shared by the programs that read it alike, shared_forms.py)
                nf = shared_forms.normalized(fn, normalize, self.helper_name, self.by_fn, name,
                                                self.comprehension_loops)
            else:
                with unchecked_nodes() if is_generated(fn) else nullcontext():  # (srcjax's text: valid nodes)
                    nf = normalize(fn, self.helper_name, name, bindings, self.comprehension_loops and not library)
            if library and all(self.by_fn.get(c) == c.__name__ for c in nf.calls):
                # (kept only when it calls the helpers by their own names: not `zeros_like_1` because a
                # user function of this program is called `zeros_like`)
                _keep_library_form(fn, nf)
                library_cache.store(nf)
        elif any(self.helper_name(c) != c.__name__ for c in nf.calls):
            # a user function took a library helper's name: normalize this one afresh
            nf = normalize(fn, self.helper_name, name)
        if not library:  # srcjax.adjoint helpers have no control flow on data
            nf = functionalize(nf, taken=self.by_fn.values())
        self.functions[name] = nf
        return nf

    def function_for(self, fn: Callable[..., Any]) -> NormalizedFunction:
        """The normalized version of a user function, normalizing it on first use."""
        fn = unwrap(fn)
        name = self.helper_name(fn)
        if name not in self.functions:
            self._queue.remove(fn)
            self._normalize(fn, name)
        return self.functions[name]

    def method_for(self, fn: Callable[..., Any]) -> NormalizedFunction:
        """The normalized version of a method (or property getter) of a user class, which the program
        calls through its object (``obj.m(x)``, ``obj.p``): run by the specializer, not shown by ``source()``
        (the generated source calls the method itself)."""
        nf = self.function_for(fn)
        self.methods.add(nf.name)
        return nf

    def add_rule(self, fn: Callable[..., Any]) -> str:
        """Normalize a custom_vjp/custom_jvp rule function (and the functions it calls) for AD; its name.

        Derivatives call rules by this name; ``source()`` leaves them out unless the program calls them.
        """
        before = set(self.functions)
        name = self.function_for(fn).name
        while self._queue:
            self._normalize(self._queue.pop(0))
        self.rule_only |= set(self.functions) - before
        return name

    def source(self, form: str = "readable") -> str:
        """The generated module: imports, the entry function, then helpers.

        Functions srcjax itself wrote (derivatives) are shown as written: they
        are already one operation per line where it matters and read better
        nested; unless control flow on data in them became ``srcjax.lax``
        calls, which is then what runs and is shown. Helpers from
        :mod:`srcjax.adjoint` are imported, not repeated. ``form="anf"`` shows
        those functions as written before :mod:`srcjax.transforms.readable`
        folded their single-use temporaries (one primitive per line).
        """
        module = cst.Module(body=[])
        parts: list[str] = []
        library: dict[str, list[str]] = {m: [] for m in LIBRARY_MODULES}
        called: dict[str, str] = {}  # a library function called by another name (the user has one of its name)
        unbound = bound_helpers.unbound_originals(self.functions.values())
        for nf in self.functions.values():
            if nf.name in self.rule_only or nf.name in self.methods or nf.fn in unbound and nf is not self.entry:
                continue
            mod = getattr(nf.fn, "__module__", "")
            if mod in LIBRARY_MODULES and not is_generated(nf.fn) and bound_helpers.bound_names(nf.fn) is None:
                # (a derivative of one is shown, and a copy with a function parameter fixed: associative_scan's)
                library[mod].append(nf.fn.__name__)
                if nf.name != nf.fn.__name__:
                    called[nf.fn.__name__] = nf.name
                continue
            if is_generated(nf.fn) and nf.name == nf.fn.__name__ and nf.plain is None:
                written = anf_text(nf.fn) if form == "anf" else None
                named = self._called_by_program_names(
                    nf.fn, textwrap.dedent(written if written is not None else generated_source(nf.fn)))
                parts.append("\n\n" + (named if named is not None else module.code_for_node(nf.fdef)).rstrip("\n")
                             + "\n")
            else:
                parts.append("\n\n" + module.code_for_node(nf.fdef))
        text = "".join(parts)
        header = HEADER
        if "math." in text:
            header = "import math\n" + header
        if re.search(r"(?<![\w.])srcjax\.", text):  # (srcjax.lax.cond, srcjax.tree_util.tree_leaves, ...)
            header += "import srcjax\n"
        # helpers srcjax transpiled, and those it runs itself (the index_add primitive, container tests)
        from .. import adjoint, batched, lax

        own: dict[str, list[str]] = {m: [] for m in REEXPORTED_MODULES}
        for m in REEXPORTED_MODULES:  # imported from the module that re-exports them (else from their own)
            for n in library[m]:
                if n in batched.__all__:
                    library["srcjax.batched"].append(n)
                elif getattr(adjoint, n, None) is getattr(sys.modules[m], n, None):
                    library["srcjax.adjoint"].append(n)
                else:  # (a private helper: `_kron_layout`, which kron's written-out derivative calls)
                    own[m].append(n)
        helpers = set(library["srcjax.adjoint"]) | _RUNTIME_HELPERS
        if form == "anf":  # (a helper the readable form no longer calls: `ones_like(a) * a` -> `a`)
            helpers |= set(adjoint.__all__) - set(self.functions)
        calls = called_names(text)  # (the names called: one scan, not a pattern per name)
        used = sorted({n for n in helpers if n in calls} |
                      {n for n in _RUNTIME_VALUES if re.search(rf"(?<![\w.]){n}(?!\w)", text)})
        if used:
            header += f"from srcjax.adjoint import {', '.join(used)}\n"
        library.update(own)
        for mod in ("srcjax.batched", "srcjax.composites", "srcjax.numpy_extras", "srcjax.numpy_bits",
                    "srcjax.linalg_names", "srcjax.polynomials", "srcjax.scatter_combine",
                    "srcjax.random", "srcjax.nn", "srcjax.scipy.special", "srcjax.scipy.stats.norm",
                    *REEXPORTED_MODULES):
            shown = sorted(n if called.get(n, n) == n else f"{n} as {called[n]}"
                           for n in set(library[mod])  # (what the text calls: a private helper too, when a
                           # derivative of a helper that calls it is written out, `_aligned` in selection_fill_fwd)
                           if called.get(n, n) in calls)
            if mod in ("srcjax.lax_slicing", "srcjax.lax_numpy", "srcjax.lax_reduce"):  # (srcjax.lax's: imported
                # from there, as users do)
                public = [n for n in shown if n.split(" ")[0] in lax.__all__]
                if public:
                    header += f"from srcjax.lax import {', '.join(public)}\n"
                shown = [n for n in shown if n not in public]
            if shown:
                header += f"from {mod} import {', '.join(shown)}\n"
        header += _library_imports(header, text, self.functions.values())
        # (`from math import pi as PI` of the user's module: the printed module carries it)
        return header + imported_names.import_lines(header, text, (nf.source.globals for nf in self.functions.values()
                                                                    if nf.name not in self.methods)) + text


    def _called_by_program_names(self, fn: Callable[..., Any], text: str) -> str | None:
        """The written text of the generated function ``fn`` with each function of this program it
        calls by another name (the name its own namespace gave it: ``least_squares_grad_1`` for the
        primal a Jacobian calls) called by the name this module defines it under; None where a name
        cannot be changed (a local of that name)."""
        code = getattr(fn, "__code__", None)
        if code is None:
            return text
        globs = getattr(fn, "__globals__", {})
        renames: dict[str, str] = {}
        for alias in _global_names(code):
            target = globs.get(alias)
            name = self.by_fn.get(unwrap(target)) if callable(target) else None
            if name is not None and name != alias and name in self.functions:
                renames[alias] = name
        if not renames:
            return text
        if set(renames.values()) & (set(code.co_varnames) | set(code.co_cellvars)):
            return None
        renamed = _renamed_names(text, renames)  # (ast's positions: ~10x cheaper than libcst's rename)
        if renamed is not None:
            return renamed
        fdef = generated_tree(text)  # (read_function's tree of this text, when it is exactly the text's)
        if fdef is not None:
            module = cst.Module(body=[fdef])
            if module.code == text:
                return module.visit(_Rename(renames)).code
        return cst.parse_module(text).visit(_Rename(renames)).code


def _global_names(code: Any) -> set[str]:
    """The global names a code object (and the code nested in it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _global_names(const)
    return names


class _Rename(cst.CSTTransformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.renames[updated.value]) if updated.value in self.renames else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)  # (`a.name`: an attribute, not the global)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)  # (`f(name=...)`: a keyword)

def _renamed_names(text: str, renames: dict[str, str]) -> str | None:
    """What :class:`_Rename` writes, from :mod:`ast`'s positions of the names (no libcst tree rebuilt and
    printed again, nor parsed: 2.7 ms of a first ``jacrev``, to rename one call in its wrapper): each
    ``ast.Name`` in ``renames`` rewritten in place. None where the two could differ: a renamed name
    that is also a definition's, a parameter's, an import's or a ``global``'s (libcst's ``Name`` nodes
    too, ``ast``'s strings), an f-string (its positions in ``ast`` before Python 3.12), non-ASCII text
    (``ast`` counts bytes), or a syntax error."""
    if not text.isascii():
        return None
    try:
        tree = parse(text)
    except SyntaxError:
        return None
    spots: list[tuple[int, int, str]] = []
    for node in walk_ast(tree):
        if isinstance(node, ast.Name):
            if node.id in renames:
                spots.append((node.lineno, node.col_offset, node.id))
        elif isinstance(node, ast.JoinedStr) or _binds(node) & renames.keys():
            return None
    lines = text.splitlines(keepends=True)
    for line, col, name in sorted(spots, reverse=True):  # (from the end: earlier positions stay valid)
        row = lines[line - 1]
        lines[line - 1] = row[:col] + renames[name] + row[col + len(name):]
    return "".join(lines)


def _binds(node: ast.AST) -> set[str]:
    """The names ``node`` holds as strings that libcst holds as ``Name`` nodes (not attributes, keywords)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.alias):
        return {node.name.split(".")[0], node.asname or ""}
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    if isinstance(node, ast.ExceptHandler):
        return {node.name or ""}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return {node.name or ""}
    if isinstance(node, ast.MatchMapping):
        return {node.rest or ""}
    return set()


_STRING = re.compile(r"""(?<!\w)[rRbBuU]{0,2}('{3}[\s\S]*?'{3}|"{3}[\s\S]*?"{3}"""
                     r"""|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")


def called_names(text: str) -> set[str]:
    """The names ``text`` calls (``name(``), outside its string literals: a method copy's check reads
    ``'Sigmoid_call() is Sigmoid.__call__ ...'``, a message, not a call to import (an f-string is kept)."""
    return set(re.findall(r"(?<![\w.])(\w+)\(", _STRING.sub("''", text)))


# in srcjax.adjoint, but not transpiled (primitives; run natively)
_RUNTIME_HELPERS = {"index_add", "index_update", "index_cleared", "is_tree", "by_leaves", "unbroadcast",
                    "broadcast_like", "expand_reduced", "from_leaves", "leaves_like", "winning_writes", "taken",
                    "index_lands", "taken_bar", "tree_set", "in_place"}
_RUNTIME_VALUES = {"UNSET"}  # constants of srcjax.adjoint that derivative source reads



def _library_imports(header: str, text: str, functions: Iterable[NormalizedFunction]) -> str:
    """Imports of the Python helpers a printed derivative of a library helper calls from its module's
    namespace (``reduced_perm`` in ``order_stat_bar_jvp``: run at transpile time, not transpiled), so that
    the printed program runs under NumPy."""
    known = set(re.findall(r"^def (\w+)", text, re.M))
    for line in header.splitlines():
        if " import " in line:
            known.update(part.split(" as ")[-1].strip() for part in line.split(" import ", 1)[1].split(","))
    wanted = {n for n in called_names(text) if n[0] not in "0123456789" and n not in known and not hasattr(builtins, n)}
    found: dict[str, set[str]] = {}
    for nf in functions:
        ns = nf.namespace
        if not wanted or not is_generated(nf.fn) or not str(ns.get("__name__", "")).startswith("srcjax."):
            continue
        for n in sorted(wanted):
            obj = ns.get(n)
            if obj is None:
                continue
            mod = getattr(obj, "__module__", None)
            if not isinstance(mod, str) or getattr(sys.modules.get(mod), n, None) is not obj:
                mod = str(ns["__name__"])
            found.setdefault(mod, set()).add(n)
            wanted.discard(n)
    return "".join(f"from {m} import {', '.join(sorted(ns_))}\n" for m, ns_ in sorted(found.items()))
