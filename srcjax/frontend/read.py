"""Read: a Python function -> its libcst tree, positions and namespaces.

Input: a plain Python function object. Output: :class:`FunctionSource` with
the parsed (dedented) definition, a position for every node in the user's
file coordinates, and the globals/closure the names resolve against.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from ..core import Span, UnknownFunctionError, UnsupportedSyntaxError


@dataclass
class FunctionSource:
    fn: Callable[..., Any]
    name: str
    filename: str
    fdef: cst.FunctionDef
    positions: dict[cst.CSTNode, CodeRange]
    line_offset: int  # add to a parsed line to get the file line
    col_offset: int  # add to a parsed column to get the file column
    globals: dict[str, Any]
    closure: dict[str, Any]

    def span(self, node: cst.CSTNode) -> Span | None:
        r = self.positions.get(node)
        if r is None:
            return None
        return Span(self.filename, r.start.line + self.line_offset, r.start.column + self.col_offset,
                    r.end.line + self.line_offset, r.end.column + self.col_offset)


_CACHE: dict[Any, FunctionSource] = {}


def read_function(fn: Callable[..., Any]) -> FunctionSource:
    """Parse ``fn``'s source. Cached per code object (sources do not change under us)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise UnknownFunctionError(
            f"cannot transpile {fn!r}: it has no Python source (a builtin or C function?)",
            hint="write it in NumPy-style Python, or use a NumPy function srcjax supports")
    key = (code, id(fn.__globals__))
    hit = _CACHE.get(key)
    if hit is not None and hit.fn is fn:
        return hit
    if fn.__name__ == "<lambda>":
        raise UnsupportedSyntaxError(
            "lambda functions are not supported", span=_code_span(fn),
            hint="define the function with `def` so srcjax can read its source")
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or code.co_filename
    except (OSError, TypeError) as e:
        raise UnknownFunctionError(
            f"cannot read the source of {fn.__qualname__}: {e}",
            hint="srcjax needs the function's source file (functions typed into a REPL have none)") from e
    raw = "".join(lines)
    dedented = textwrap.dedent(raw)
    first_raw = next((ln for ln in lines if ln.strip()), "")
    first_ded = next((ln for ln in dedented.splitlines(True) if ln.strip()), "")
    col_offset = len(first_raw) - len(first_raw.lstrip()) - (len(first_ded) - len(first_ded.lstrip()))
    try:
        module = cst.parse_module(dedented)
    except cst.ParserSyntaxError as e:
        raise UnsupportedSyntaxError(f"cannot parse the source of {fn.__qualname__}: {e.message}") from e
    positions = _positions(module)
    fdef = next((s for s in module.body if isinstance(s, cst.FunctionDef)), None)
    if fdef is None:
        raise UnsupportedSyntaxError(f"cannot find the definition of {fn.__qualname__} in its source")
    if fdef.asynchronous is not None:
        raise UnsupportedSyntaxError("async functions are not supported",
                                     span=Span(filename, start, col_offset, start, col_offset + 5))
    closure: dict[str, Any] = {}
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # empty cell (defined later)
                pass
    src = FunctionSource(fn=fn, name=fn.__name__, filename=filename, fdef=fdef, positions=positions,
                         line_offset=start - 1, col_offset=col_offset, globals=fn.__globals__,
                         closure=closure)
    _CACHE[key] = src
    return src


class _PositionState(PositionProvidingCodegenState):
    """libcst's position-recording code generator with cheaper bookkeeping (same positions)."""

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
        self._stack.append((self.line, self.column))  # type: ignore[arg-type]

    def after_codegen(self, node: cst.CSTNode) -> None:
        start: Any = self._stack.pop()
        computed = self.provider._computed
        if node not in computed:
            computed[node] = CodeRange(CodePosition(*start), CodePosition(self.line, self.column))

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
        self.start = CodePosition(self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        st = self.state
        computed: Any = st.provider._computed
        start = computed[self.start_node].start if self.start_node is not None else self.start
        end = computed[self.end_node].end if self.end_node is not None else CodePosition(st.line, st.column)
        computed[self.node] = CodeRange(start, end)


def _positions(module: cst.Module) -> dict[cst.CSTNode, CodeRange]:
    """``MetadataWrapper(module).resolve(PositionProvider)``, without the wrapper's extra passes
    over the tree (the positions come from one code generation of ``module``)."""
    try:
        provider = PositionProvider()
        provider._computed = {}
        state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline,
                               provider=provider)
        module._codegen(state)
        return provider._computed  # type: ignore[return-value]
    except (AttributeError, TypeError):  # pragma: no cover - another libcst: the public way
        return dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))


def _code_span(fn: Callable[..., Any]) -> Span | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return Span(code.co_filename, code.co_firstlineno, 0, code.co_firstlineno, 0)
