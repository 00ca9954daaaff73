"""Read: a Python function -> its libcst tree, positions and namespaces.

Input: a plain Python function object. Output: :class:`FunctionSource` with
the parsed (dedented) definition, a position for every node in the user's
file coordinates, and the globals/closure the names resolve against.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import linecache
import os
import re
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from .. import warm_cache
from ..core import Span, UnknownFunctionError, UnsupportedSyntaxError
from ..lifetimes import PerFunction
from .ast_walk import walk_ast
from .cst_functions import BuiltNames, function_module
from .located import Located as Located  # (its home before located.py)
from .parsed import parse
from .warning_contexts import without_warning_contexts

Range = tuple[int, int, int, int]


@dataclass
class FunctionSource:
    fn: Callable[..., Any]
    name: str
    filename: str
    fdef: cst.FunctionDef
    positions: dict[cst.CSTNode, Range]  # (start line, start column, end line, end column), as parsed
    line_offset: int  # add to a parsed line to get the file line
    col_offset: int  # add to a parsed column to get the file column
    globals: dict[str, Any]
    closure: dict[str, Any]

    def span(self, node: cst.CSTNode) -> Span | None:
        r = self.positions.get(node)
        if r is None:
            return None
        return Span(self.filename, r[0] + self.line_offset, r[1] + self.col_offset,
                    r[2] + self.line_offset, r[3] + self.col_offset)

    def def_span(self) -> Span | None:
        """Where the function's name is, in its ``def``."""
        return self.span(self.fdef.name)

    def names(self) -> list[str]:
        """The variable names of the function's source, in order (repeats kept)."""
        from .names import names_in

        found = self.__dict__.get("_names_of")
        if found is None or found[0] is not self.fdef:
            found = self.__dict__["_names_of"] = (self.fdef, names_in(self.fdef))
        return list(found[1])

    def name_set(self) -> frozenset[str]:
        """``frozenset(self.names())``: for a tree built from ``ast``, the names its builder met (no walk)."""
        built = self.built_names()
        return built.names if built is not None else frozenset(self.names())

    def built_names(self) -> BuiltNames | None:
        """The names ``cst_functions`` met building ``fdef`` from ``ast`` (while ``fdef`` is still that tree);
        None for a tree libcst parsed or another one."""
        built = self.__dict__.get("_built_names")
        return built[1] if built is not None and built[0] is self.fdef else None

    def built_refs(self, fdef: cst.FunctionDef) -> tuple[Any, ...] | None:
        """The variables and attributes of ``fdef``'s body in the tree's order, as ``cst_functions`` met them
        building it (:class:`BuiltNames`'s ``refs``), where ``fdef`` is still that tree; else None."""
        built = self.built_names()
        return built.refs if built is not None and fdef is self.fdef else None


class UnreadSource(FunctionSource):
    """A library helper's source, read only when something asks for its tree or positions (an error's
    location): its normalized form came from the persistent cache (``library_cache.py``), with the
    names of its source."""

    _LAZY = ("fdef", "positions", "line_offset", "col_offset", "filename")

    def __init__(self, fn: Callable[..., Any], names: list[str], def_span: Span | None) -> None:  # (not dataclass's)
        self.fn = fn
        self.name = fn.__name__
        self.globals = fn.__globals__
        self.closure = _closure(fn)
        self._names = names
        self._def_span = def_span

    def __getattr__(self, attr: str) -> Any:  # (only for attributes not set: the ones read lazily)
        if attr not in UnreadSource._LAZY:
            raise AttributeError(attr)
        read = read_function(self.fn)
        for a in UnreadSource._LAZY:
            setattr(self, a, getattr(read, a))
        return getattr(self, attr)

    def names(self) -> list[str]:
        return list(self._names)

    def def_span(self) -> Span | None:
        return self._def_span


_CACHE: PerFunction[FunctionSource] = PerFunction("source")  # fn -> its source (dies with fn)
# a generated function's text -> its tree and positions (relative to the text: each FunctionSource adds
# its own file and offsets). A batched helper's copy or a Jacobian's wrapper is written again, the same
# text, for every function transformed; libcst trees never change, and the positions only gain entries
# for nodes the normalizer makes.
_GENERATED_TREES: dict[str, tuple[cst.FunctionDef, dict[cst.CSTNode, Range], BuiltNames | None]] = {}
_GENERATED_KEPT = 512


def read_function(fn: Callable[..., Any]) -> FunctionSource:
    """Parse ``fn``'s source. Cached per code object (sources do not change under us)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise UnknownFunctionError(
            f"cannot transpile {fn!r}: it has no Python source (a builtin or C function?)",
            hint="write it in NumPy-style Python, or use a NumPy function srcjax supports")
    key = (code, id(fn.__globals__))  # (the function's own: a slot copied from another names another code)
    hit = _CACHE.get(fn, key)
    if hit is not None and hit.fn is fn:
        if fn.__closure__ and not _same_closure(fn, hit.closure):
            # (a closure variable rebound since: read with the values now, as a first read would; the text's
            # parse is the same. Was: the first read's values, a silent wrong answer for every program written
            # after, `scale = np.cos` read as the `np.sin` it was when another program read the function)
            built = hit.__dict__.get("_built_names")
            hit = dataclasses.replace(hit, closure=_closure(fn))
            if built is not None:
                hit.__dict__["_built_names"] = built
            _CACHE.set(fn, key, hit)
        warm_cache.note_file(hit.filename)
        return hit
    if fn.__name__ == "<lambda>":
        src = _read_lambda(fn, code)
        _CACHE.set(fn, key, src)
        warm_cache.note_file(src.filename)
        return src
    node = None  # (a generated function: ast's tree of its text, from its module's parse, where still held)
    try:
        # (by its code: inspect follows a functools.wraps wrapper's __wrapped__ to the wrapped function's text)
        written = _generated(code)
        if written:  # (its file's name is its code's: inspect would search sys.modules to say so)
            (lines, start, node), filename = written, code.co_filename
        else:
            lines, start, filename = _file_lines(fn, code)
    except (OSError, TypeError) as e:
        raise UnknownFunctionError(
            f"cannot read the source of {fn.__qualname__}: {e}",
            hint="srcjax needs the function's source file (functions typed into a REPL have none)") from e
    raw = "".join(lines)
    dedented = textwrap.dedent(raw)
    first_raw = next((ln for ln in lines if ln.strip()), "")
    first_ded = next((ln for ln in dedented.splitlines(True) if ln.strip()), "")
    col_offset = len(first_raw) - len(first_raw.lstrip()) - (len(first_ded) - len(first_ded.lstrip()))
    generated = filename.startswith("<srcjax.")
    known = _GENERATED_TREES.get(raw) if generated else None
    if known is not None:  # (the same text in another generated module: the same tree and positions)
        fdef, positions, names = known
    else:
        try:
            # (straight-line functions, srcjax's or the user's, built from ast with their positions:
            # cst_functions.py, the parser's tree and the positions libcst's code generation finds in it;
            # anything else goes to libcst's parser)
            module, positions, names = function_module(dedented, parse_module, _positions,
                                                       node if dedented is raw or dedented == raw else None)
        except cst.ParserSyntaxError as e:
            raise UnsupportedSyntaxError(f"cannot parse the source of {fn.__qualname__}: {e.message}") from e
        found = next((s for s in module.body if isinstance(s, cst.FunctionDef)), None)
        if found is None:
            raise UnsupportedSyntaxError(f"cannot find the definition of {fn.__qualname__} in its source")
        fdef = found
        if generated:
            _GENERATED_TREES[raw] = (fdef, positions, names)
            if len(_GENERATED_TREES) > _GENERATED_KEPT:
                _GENERATED_TREES.pop(next(iter(_GENERATED_TREES)), None)
    if fdef.asynchronous is not None:
        raise UnsupportedSyntaxError("async functions are not supported",
                                     span=Span(filename, start, col_offset, start, col_offset + 5))
    closure = _closure(fn)
    if not generated and "with" in raw:  # (`with np.errstate(...):` and the like: read as their bodies)
        fdef = without_warning_contexts(fdef, positions, (closure, fn.__globals__),
                                        frozenset(code.co_varnames + code.co_cellvars))
    src = FunctionSource(fn=fn, name=fn.__name__, filename=filename, fdef=fdef, positions=positions,
                         line_offset=start - 1, col_offset=col_offset, globals=fn.__globals__,
                         closure=closure)
    if names is not None:  # (the names of the tree built from ast: FunctionSource.built_names)
        src.__dict__["_built_names"] = (fdef, names)
    _CACHE.set(fn, key, src)
    warm_cache.note_file(filename)
    return src


def _identity_hash() -> None:
    """libcst's nodes are equal by identity and hashed by it, with a Python method (``return id(self)``, copied into
    every node class): one call for every node a position table (``FunctionSource.positions``, keyed by node)
    stores or reads. ``object``'s own hash is the same identity, without the call."""
    own = cst.CSTNode.__dict__.get("__hash__")
    if own is None:  # pragma: no cover - another libcst: its own way
        return
    classes, stack = set(), [cst.CSTNode]
    while stack:
        cls = stack.pop()
        if cls not in classes:
            classes.add(cls)
            stack.extend(cls.__subclasses__())
    for cls in classes:
        if cls.__dict__.get("__hash__") is own:
            cls.__hash__ = object.__hash__  # type: ignore[assignment]


_identity_hash()
_NODE_INIT = cst.CSTNode.__dict__.get("__post_init__")  # (libcst's: validates every node it makes)
_PARSING = threading.Lock()
_COUNTING = threading.Lock()
_UNCHECKED = [0]  # regions of unchecked_nodes() open, in every thread


def _unchecked(self: cst.CSTNode) -> None:
    return None


_WITH_CHANGES = cst.CSTNode.__dict__.get("with_changes")  # (libcst's: ``dataclasses.replace``, through __init__)
_FIELDS: dict[type, tuple[tuple[str, Any], ...]] = {}  # a node class -> (field, its slot) for each field
_NEW = object.__new__


def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    found = _FIELDS[cls] = tuple((f.name, next(c.__dict__[f.name] for c in cls.__mro__ if f.name in c.__dict__))
                                 for f in dataclasses.fields(cls))
    return found


def _changed(self: Any, **changes: Any) -> Any:
    """``self.with_changes(**changes)`` as libcst's, less ``__init__``'s checks (:func:`unchecked_nodes`): the
    fields copied slot by slot (``dataclasses.replace`` makes a dozen calls a node)."""
    cls = self.__class__
    try:
        fields = _FIELDS[cls]
    except KeyError:
        fields = _fields(cls)
    node = _NEW(cls)
    given = 0
    for name, slot in fields:
        if name in changes:
            slot.__set__(node, changes[name])
            given += 1
        else:
            slot.__set__(node, slot.__get__(self, cls))
    if given != len(changes):  # (a field the class has not: dataclasses.replace's error)
        raise TypeError(f"{cls.__name__}.with_changes() got an unexpected field among {sorted(changes)}")
    return node


@contextmanager
def unchecked_nodes() -> Iterator[None]:
    """libcst's nodes made meanwhile are not validated (a node's ``__post_init__`` checks its fields: a third
    of the calls of making one), and ``with_changes`` copies a node's fields without ``__init__``. For trees valid
    by construction: the parser's own (:func:`parse_module`), and the normalized form of source srcjax wrote
    (``program.py``: its nodes rebuilt from its own valid text, checked when its writer's input was normalized).
    While one is open, nodes other threads make are not checked either (only srcjax's own code makes nodes:
    checks that find its bugs, never the user's)."""
    if _NODE_INIT is None or _WITH_CHANGES is None:  # pragma: no cover - another libcst: its own way
        yield
        return
    with _COUNTING:
        _UNCHECKED[0] += 1
        cst.CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
        cst.CSTNode.with_changes = _changed  # type: ignore[method-assign]
    try:
        yield
    finally:
        with _COUNTING:
            _UNCHECKED[0] -= 1
            if not _UNCHECKED[0]:
                cst.CSTNode.__post_init__ = _NODE_INIT  # type: ignore[method-assign]
                cst.CSTNode.with_changes = _WITH_CHANGES  # type: ignore[method-assign]


def parse_module(text: str) -> cst.Module:
    """``cst.parse_module(text)`` without libcst's validation of each node its parser builds
    (:func:`unchecked_nodes`: ~25% of a parse, and redundant for the parser's own output, valid by
    construction; libcst's own comment there says as much). Syntax errors are the parser's, as before."""
    with _PARSING, unchecked_nodes():
        return cst.parse_module(text)


_DEF = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")  # (inspect.findsource's)


def _file_lines(fn: Callable[..., Any], code: Any) -> tuple[list[str], int, str]:
    """``inspect.getsourcelines(code)`` and the source file's name, without ``inspect.getmodule``'s
    search of all of ``sys.modules`` for the module (~0.7 ms a function with jax imported): its lines
    are read with the function's globals (its module's namespace: what linecache's lazy loading reads).
    Anything unusual (no file on disk, a line out of range) goes inspect's way."""
    filename = inspect.getsourcefile(code)
    if filename and not filename.startswith("<") and os.path.isfile(filename):
        linecache.checkcache(filename)
        lines = linecache.getlines(filename, fn.__globals__)
        lnum = code.co_firstlineno - 1
        if lines and 0 <= lnum < len(lines):
            while lnum > 0 and not _DEF.match(lines[lnum]):
                lnum -= 1
            return inspect.getblock(lines[lnum:]), lnum + 1, filename
    found, start = inspect.getsourcelines(code)
    return found, start, inspect.getsourcefile(code) or code.co_filename


# a generated module's file name -> its text's (length, hash) -> its defs' first -> last lines (by file name:
# forgetting a module is one pop, nothing iterated that a finalizer run by a collection inside could change)
_ENDS: dict[str, dict[tuple[int, int], dict[int, int]]] = {}


def _generated_lines(code: Any) -> tuple[list[str], int] | None:
    """``inspect.getsourcelines`` of a top-level function srcjax wrote (its module text is in
    ``linecache``), from one ``ast`` parse of the module instead of tokenizing it per function;
    None for anything else."""
    found = _generated(code)
    return None if found is None else found[:2]


def _generated(code: Any) -> tuple[list[str], int, ast.FunctionDef | None] | None:
    """:func:`_generated_lines`, and the function's ``ast`` tree from its module's parse where that is still
    held (:func:`note_generated`: the module's text in ``linecache`` exactly the text parsed), else None."""
    filename = code.co_filename
    if not filename.startswith("<srcjax."):
        return None
    lines = linecache.getlines(filename)
    if not lines:
        return None
    text = "".join(lines)
    ends = _ENDS.get(filename, {}).get((len(text), hash(text)))
    if ends is None:
        try:
            ends = note_generated(filename, text, parse(text))
        except SyntaxError:
            return None
    end = ends.get(code.co_firstlineno)
    if end is None:
        return None
    held = _DEF_NODES.get(filename)
    node = held[1].get(code.co_firstlineno) if held is not None and held[0] == text else None
    return lines[code.co_firstlineno - 1:end], code.co_firstlineno, node


def generated_source(fn: Callable[..., Any]) -> str:
    """``inspect.getsource(fn)``; for a top-level function srcjax wrote, its lines found as
    :func:`read_function` finds them (one ``ast`` parse of its module, remembered; inspect tokenizes the
    module from the function's first line: ~4 ms a function in a first ``vmap(grad(f))``'s ``source()``)."""
    code = getattr(fn, "__code__", None)
    written = _generated_lines(code) if code is not None else None
    return "".join(written[0]) if written else inspect.getsource(fn)


def generated_tree(text: str) -> cst.FunctionDef | None:
    """The tree :func:`read_function` parsed from ``text`` (a generated function's lines), if it did and
    still remembers it: shared, never to be changed."""
    known = _GENERATED_TREES.get(text)
    return known[0] if known is not None else None


def note_generated(filename: str, text: str, tree: ast.Module) -> dict[int, int]:
    """Remember where the top-level functions of a generated module (``text``, parsed: ``tree``) begin and
    end, for :func:`_generated_lines` (the module's writer parsed it already), and (for the last modules
    written) their ``ast`` trees: :func:`read_function` builds a function's libcst tree from its module's
    parse instead of parsing its text again."""
    defs = {n.lineno: n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.decorator_list}
    ends = {k: n.end_lineno or n.lineno for k, n in defs.items()}
    _ENDS.setdefault(filename, {})[(len(text), hash(text))] = ends
    _DEF_NODES.pop(filename, None)
    _DEF_NODES[filename] = (text, defs)
    while len(_DEF_NODES) > _DEF_NODES_KEPT:  # (the oldest first: a transformation reads its module soon after)
        try:
            _DEF_NODES.pop(next(iter(_DEF_NODES)), None)
        except (RuntimeError, StopIteration):  # pragma: no cover - another thread changed it meanwhile
            break
    return ends


# a generated module's file name -> (its text, its top-level defs' ast trees by first line): read-only trees of
# the last modules written (a hessian writes four, and reads each in the next stage: often in another pause of
# the collector, so not kept with parsed.py's trees of one pause)
_DEF_NODES: dict[str, tuple[str, dict[int, ast.FunctionDef]]] = {}
_DEF_NODES_KEPT = 16



def forget_generated(filename: str) -> None:
    """Drop what :func:`note_generated` remembered of the generated module ``filename`` (its functions died)."""
    _ENDS.pop(filename, None)
    _DEF_NODES.pop(filename, None)


_FUNCTION_TEXTS: dict[str, dict[str, str]] = {}  # a module's text -> each top-level function's text


def function_texts(text: str) -> dict[str, str]:
    """Each top-level function of a module -> its text (cached per text)."""
    found = _FUNCTION_TEXTS.get(text)
    if found is None:
        lines = text.splitlines(True)
        found = _FUNCTION_TEXTS[text] = {
            node.name: "".join(lines[node.lineno - 1 - len(node.decorator_list):node.end_lineno])
            for node in parse(text).body if isinstance(node, ast.FunctionDef)}
    return found


def anf_text(fn: Callable[..., Any]) -> str | None:
    """The text of the generated function ``fn`` before :mod:`srcjax.transforms.readable` folded its
    temporaries (None if that pass changed nothing in its module)."""
    module = getattr(fn, "__srcjax_anf__", None)
    return None if module is None else function_texts(module).get(fn.__name__)


def function_name(fn: Callable[..., Any]) -> str:
    """The name generated source gives ``fn``: its ``__name__``, or for a lambda the variable it
    was assigned to (``loss = lambda w: ...`` -> ``loss``), else ``lambda_fn``."""
    if fn.__name__ != "<lambda>":
        return fn.__name__
    return read_function(fn).name


def _same_closure(fn: Callable[..., Any], closure: dict[str, Any]) -> bool:
    """Whether ``fn``'s closure cells hold the values ``closure`` was read with (the same objects)."""
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # empty cell (defined later)
            if name in closure:
                return False
            continue
        if closure.get(name, _UNREAD) is not value:
            return False
    return True


_UNREAD: Any = object()


def _closure(fn: Callable[..., Any]) -> dict[str, Any]:
    closure: dict[str, Any] = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # empty cell (defined later)
                pass
    return closure


_TREES: dict[tuple[str, int], ast.Module] = {}  # a source file's text (by hash) -> its ast


def _read_lambda(fn: Callable[..., Any], code: Any) -> FunctionSource:
    """A lambda read as ``def name(params): return body``. Python's ``ast`` finds it in its file
    (by line, parameters and the code's instruction positions when several share a line); libcst
    parses just the lambda, placed so positions are the file's own."""
    filename = inspect.getsourcefile(code) or code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise UnknownFunctionError(
            "cannot read the source of a lambda defined here", span=_code_span(fn),
            hint="srcjax needs the function's source file (functions typed into a REPL have none)")
    text = "".join(lines)
    tree = _TREES.get((filename, hash(text)))
    if tree is None:
        try:
            tree = _TREES[(filename, hash(text))] = ast.parse(text)
        except SyntaxError as e:
            raise UnknownFunctionError(f"cannot parse the source file of a lambda: {e}", span=_code_span(fn)) from e
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    line = code.co_firstlineno
    found: list[ast.Lambda] = []
    assigned: dict[int, str] = {}  # id(lambda) -> the one name it is assigned to (`loss = lambda w: ...`)
    for node in walk_ast(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            assigned[id(node.value)] = node.targets[0].id
        if isinstance(node, ast.Lambda) and node.lineno == line:
            a = node.args
            if tuple(p.arg for p in a.posonlyargs + a.args + a.kwonlyargs) == names:
                found.append(node)
    # the instructions' positions (UTF-8 columns, as ast's) lie inside this lambda's body
    spots = [(p[0], p[2], p[1], p[3]) for p in code.co_positions()
             if p[0] is not None and p[2] is not None and p[3] is not None and (p[1], p[3]) > (p[0], p[2])]

    def holds(lam: ast.Lambda) -> bool:
        b = lam.body
        return all((b.lineno, b.col_offset) <= (ln, c) and (el, ec) <= (b.end_lineno, b.end_col_offset)
                   for ln, c, el, ec in spots)

    fits = sorted((lam for lam in found if holds(lam)),
                  key=lambda lam: (lam.end_lineno or 0, lam.end_col_offset or 0, -lam.col_offset))
    if not fits:
        raise UnknownFunctionError("cannot find this lambda in its source file (was the file edited?)",
                                   span=_code_span(fn), hint="define the function with `def`")
    lam = fits[0]
    segment = ast.get_source_segment(text, lam) or ""
    col = len(lines[line - 1].encode()[:lam.col_offset].decode(errors="replace"))
    # the lambda in parentheses, its first character at its column in the file
    module = cst.parse_module("(" + " " * (col - 1) + segment + ")\n" if col else "(" + segment + ")\n")
    positions = _positions(module)
    line_1: Any = module.body[0]
    expr = line_1.body[0].value
    assert isinstance(expr, cst.Lambda)
    if not col:  # shift line 1 back over the "("
        positions = {n: (r[0], r[1] - (r[0] == 1), r[2], r[3] - (r[2] == 1)) for n, r in positions.items()}
    name = assigned.get(id(lam), "lambda_fn")
    ret = cst.Return(value=expr.body)
    stmt = cst.SimpleStatementLine(body=[ret])
    fdef = cst.FunctionDef(name=cst.Name(name), params=expr.params, body=cst.IndentedBlock(body=[stmt]))
    whole = positions[expr]
    positions[fdef] = positions[fdef.name] = whole
    positions[ret] = positions[stmt] = positions[expr.body]
    return FunctionSource(fn=fn, name=name, filename=filename, fdef=fdef, positions=positions,
                          line_offset=line - 1, col_offset=0, globals=fn.__globals__, closure=_closure(fn))


_WHITESPACE = frozenset({cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.Newline,
                         cst.EmptyLine, cst.Comment})


class _PositionState(PositionProvidingCodegenState):
    """libcst's position-recording code generator with cheaper bookkeeping (the same positions, for
    every node but whitespace and comments)."""

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            super()._update_position(value)
        else:
            self.column += len(value)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            super()._update_position(value)
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if node.__class__ not in _WHITESPACE:
            self._stack.append((self.line, self.column))  # type: ignore[arg-type]

    def after_codegen(self, node: cst.CSTNode) -> None:
        if node.__class__ in _WHITESPACE:  # (half the nodes: no span is ever asked of them)
            return
        start: Any = self._stack.pop()
        computed = self.provider._computed
        if node not in computed:  # (a plain tuple: a CodeRange of two CodePositions cost three dataclasses)
            computed[node] = (*start, self.line, self.column)

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Any:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """``PositionProvidingCodegenState.record_syntactic_position`` without a generator."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _PositionState, node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        st = self.state
        computed: Any = st.provider._computed
        start = computed[self.start_node][:2] if self.start_node is not None else self.start
        end = computed[self.end_node][2:] if self.end_node is not None else (st.line, st.column)
        computed[self.node] = (*start, *end)


def _positions(module: cst.Module) -> dict[cst.CSTNode, Range]:
    """``MetadataWrapper(module).resolve(PositionProvider)`` as tuples, without the wrapper's extra
    passes over the tree (the positions come from one code generation of ``module``)."""
    try:
        provider = PositionProvider()
        provider._computed = {}
        state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline,
                               provider=provider)
        module._codegen(state)
        return provider._computed  # type: ignore[return-value]
    except (AttributeError, TypeError):  # pragma: no cover - another libcst: the public way
        return {n: (r.start.line, r.start.column, r.end.line, r.end.column)
                for n, r in MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider).items()}


def _code_span(fn: Callable[..., Any]) -> Span | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return Span(code.co_filename, code.co_firstlineno, 0, code.co_firstlineno, 0)


def is_generated(fn: Callable[..., Any]) -> bool:
    """Written by srcjax (a derivative), with its text registered in linecache."""
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename.startswith("<srcjax.")
