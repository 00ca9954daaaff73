"""Argument shapes for the CLI: ``f32[n, 784]`` specs from ``--arg``, ``--dim`` and source annotations.

The light syntax is ``DTYPE[DIM, ...]``: DTYPE is a short (``f32``, ``bf16``,
``i64``, ``bool``) or NumPy (``float32``) dtype name, each DIM an integer or a
symbolic name; ``f32[]`` and a bare ``f32`` are scalars. Annotations are read
from the file's source text, never evaluated: a string in that syntax
(``w: "f32[784, 256]"``) or a ``ShapeDtypeStruct((784, 256), np.float32)``
call written literally (also inside a string). Other annotations (``int``,
``np.ndarray``, ``"list[int]"``) say nothing about shapes and are skipped.

A symbolic dimension takes its value from ``--dim n=128``, or from an
``--arg`` that replaces an annotation of the same rank (``--arg x=f32[128,784]``
against ``x: "f32[n, 784]"`` binds n=128). Two sources giving one name
different values is an error naming both.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import ArgumentError, ShapeDtypeStruct, Span

_SHORT = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "bool",
    "c64": "complex64", "c128": "complex128",
}
DTYPE_NAMES = {**_SHORT, **{v: v for v in _SHORT.values()}, "bool_": "bool"}


class SpecError(ValueError):
    """A malformed spec or an inconsistent set of them (a usage error)."""


class ShapeAnnotationError(ArgumentError):
    """A shape annotation in the source that does not parse."""


def dtype_of(name: str) -> np.dtype:
    full = DTYPE_NAMES[name]
    if full == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(full)


@dataclass(frozen=True)
class ShapeSpec:
    """A dtype and dimensions, each an int or a symbolic name."""

    dtype: np.dtype
    dims: tuple[int | str, ...]
    origin: str = field(default="", compare=False)  # where it was written, for messages

    def symbols(self) -> list[str]:
        return [d for d in self.dims if isinstance(d, str)]

    def resolve(self, values: Mapping[str, int]) -> ShapeDtypeStruct:
        return ShapeDtypeStruct(tuple(values[d] if isinstance(d, str) else d for d in self.dims), self.dtype)

    def __str__(self) -> str:
        from ..core import dtype_short_name

        return f"{dtype_short_name(self.dtype)}[{','.join(map(str, self.dims))}]"


_HEAD = re.compile(r"\s*([A-Za-z_]\w*)")
_DIM = re.compile(r"\d+|[A-Za-z_]\w*")


def parse_spec(text: str, origin: str = "") -> ShapeSpec | None:
    """``"f32[n, 784]"`` -> ShapeSpec; None when ``text`` does not start with a dtype name.

    Raises SpecError when it starts with a dtype name but the rest is malformed.
    """
    m = _HEAD.match(text)
    if m is None or m.group(1) not in DTYPE_NAMES:
        return None
    rest = text[m.end():].strip()
    dims: list[int | str] = []
    if rest:
        if not (rest.startswith("[") and rest.endswith("]")):
            raise SpecError(f"expected {m.group(1)}[dim, ...] in {text.strip()!r}")
        parts = [p.strip() for p in rest[1:-1].split(",")]
        if parts[-1] == "":
            parts.pop()  # f32[] or a trailing comma, as in a tuple
        for p in parts:
            if not _DIM.fullmatch(p):
                raise SpecError(f"bad dimension {p!r} in {text.strip()!r}: a dimension is an integer or a name")
            dims.append(int(p) if p.isdigit() else p)
    return ShapeSpec(dtype_of(m.group(1)), tuple(dims), origin)


def parse_assignment(text: str, flag: str) -> tuple[str, str]:
    if "=" not in text:
        raise SpecError(f"{flag} {text!r}: expected NAME=VALUE")
    name, value = (s.strip() for s in text.split("=", 1))
    if not name.isidentifier():
        raise SpecError(f"{flag} {text!r}: {name!r} is not a parameter name")
    return name, value


_TOKEN = re.compile(r"\s*(?:(?P<spec>[A-Za-z_]\w*\s*\[[^\]]*\])|(?P<str>'[^']*'|\"[^\"]*\")|"
                    r"(?P<word>[-+.\w]+)|(?P<punct>[\[\](){}:,]))")


def parse_tree(text: str, origin: str = "") -> Any:
    """A container of shapes and numbers, as Python writes it: ``[{w: f32[3,2], b: f32[2]}]``,
    ``(f32[3], 0.5)``, ``{'w': f32[n]}`` (dict keys are names or quoted strings). Raises SpecError."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SpecError(f"cannot read {text[pos:].strip()!r} in {text.strip()!r}")
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    out, k = _tree_value(tokens, 0, text, origin)
    if k != len(tokens):
        raise SpecError(f"unexpected {tokens[k][1]!r} in {text.strip()!r}")
    return out


def _tree_value(tokens: list[tuple[str, str]], k: int, text: str, origin: str) -> tuple[Any, int]:
    if k >= len(tokens):
        raise SpecError(f"{text.strip()!r} ends too early")
    kind, tok = tokens[k]
    if kind == "spec":
        spec = parse_spec(tok, origin)
        if spec is None:
            raise SpecError(f"unknown dtype in {tok!r} (use one of {', '.join(_SHORT)})")
        return spec, k + 1
    if kind == "str":
        return tok[1:-1], k + 1
    if kind == "word":
        return _number(tok, text), k + 1
    close = {"[": "]", "(": ")", "{": "}"}.get(tok)
    if close is None:
        raise SpecError(f"unexpected {tok!r} in {text.strip()!r}")
    items: list[Any] = []
    keys: list[str] = []
    k += 1
    while k < len(tokens) and tokens[k][1] != close:
        if tok == "{":
            kkind, key = tokens[k]
            if kkind not in ("word", "str") or k + 1 >= len(tokens) or tokens[k + 1][1] != ":":
                raise SpecError(f"expected `key: value` in {text.strip()!r}")
            keys.append(key[1:-1] if kkind == "str" else key)
            k += 2
        value, k = _tree_value(tokens, k, text, origin)
        items.append(value)
        if k < len(tokens) and tokens[k][1] == ",":
            k += 1
        elif k < len(tokens) and tokens[k][1] != close:
            raise SpecError(f"expected ',' or {close!r} in {text.strip()!r}")
    if k >= len(tokens):
        raise SpecError(f"{text.strip()!r}: missing {close!r}")
    if tok == "{":
        return dict(zip(keys, items)), k + 1
    return (tuple(items) if tok == "(" else items), k + 1


def _number(tok: str, text: str) -> Any:
    if tok in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[tok]
    for conv in (int, float):
        try:
            return conv(tok)
        except ValueError:
            pass
    raise SpecError(f"{tok!r} in {text.strip()!r} is not a shape (like f32[3,4]) or a number")


def tree_specs(value: Any) -> list[ShapeSpec]:
    """The shapes in a (container) argument value, in order."""
    if isinstance(value, ShapeSpec):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in tree_specs(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in tree_specs(v)]
    return []


def tree_text(value: Any) -> str:
    """A (container) argument value as ``--arg`` writes it: ``[{w: f32[3,2], b: f32[2]}]``."""
    if isinstance(value, ShapeSpec):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {tree_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(tree_text(v) for v in value) + (",)" if len(value) == 1 else ")")
    if isinstance(value, list):
        return "[" + ", ".join(tree_text(v) for v in value) + "]"
    return repr(value)


def _resolve_tree(value: Any, values: Mapping[str, int]) -> Any:
    if isinstance(value, ShapeSpec):
        return value.resolve(values)
    if isinstance(value, dict):
        return {k: _resolve_tree(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_resolve_tree(v, values) for v in value)
    return value


def parse_arg(text: str) -> tuple[str, Any]:
    """``--arg x=f32[3,4]`` / ``x=f32[n,4]`` -> a ShapeSpec; ``n=5`` / ``eps=0.1`` -> a static number;
    ``params=[{w: f32[3,2], b: f32[2]}]`` -> that container of ShapeSpecs and numbers."""
    name, value = parse_assignment(text, "--arg")
    if value[:1] in ("[", "(", "{"):
        try:
            return name, parse_tree(value, origin=f"--arg {name}={value}")
        except SpecError as e:
            raise SpecError(f"--arg {text!r}: {e}") from None
    try:
        spec = parse_spec(value, origin=f"--arg {name}={value}")
    except SpecError as e:
        raise SpecError(f"--arg {text!r}: {e}") from None
    if spec is not None:
        return name, spec
    if value in ("True", "False"):
        return name, value == "True"
    for conv in (int, float):
        try:
            return name, conv(value)
        except ValueError:
            pass
    m = re.fullmatch(r"\s*(\w+)\s*\[.*\]\s*", value)
    if m is not None:
        raise SpecError(f"--arg {text!r}: unknown dtype {m.group(1)!r} (use one of {', '.join(_SHORT)})")
    raise SpecError(f"--arg {text!r}: expected a shape like f32[3,4] or a number")


def parse_dim(text: str) -> tuple[str, int]:
    name, value = parse_assignment(text, "--dim")
    if not value.isdigit():
        raise SpecError(f"--dim {text!r}: expected NAME=<non-negative integer>, e.g. --dim n=128")
    return name, int(value)


# ---------------------------------------------------------------------------
# Annotations in the source
# ---------------------------------------------------------------------------


@dataclass
class FunctionDecl:
    """A top-level ``def`` as written: its parameters and the shapes its annotations give."""

    name: str
    line: int
    params: list[str]
    specs: dict[str, Any]  # parameter -> a ShapeSpec, or a container of them (and numbers)
    other: dict[str, str]  # parameter -> an annotation that is not a shape (for messages)
    errors: dict[str, ShapeAnnotationError]  # parameter -> its annotation's error
    spans: dict[str, Span] = field(default_factory=dict)  # "" (the def line) and each parameter
    defaults: dict[str, str] = field(default_factory=dict)  # parameter -> its default, as written


def read_declarations(tree: ast.Module, filename: str) -> dict[str, FunctionDecl]:
    """Every top-level function in a parsed module, in source order."""
    out: dict[str, FunctionDecl] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = _declaration(node, filename)
    return out


def _declaration(node: ast.FunctionDef | ast.AsyncFunctionDef, filename: str) -> FunctionDecl:
    a = node.args
    positional = a.posonlyargs + a.args
    decl = FunctionDecl(node.name, node.lineno, [p.arg for p in positional + a.kwonlyargs], {}, {}, {})
    head = len("async def " if isinstance(node, ast.AsyncFunctionDef) else "def ") + len(node.name)
    decl.spans[""] = Span(filename, node.lineno, node.col_offset, node.lineno, node.col_offset + head)
    pos_defaults = zip(positional[len(positional) - len(a.defaults):], a.defaults)
    for p, d in [*pos_defaults, *zip(a.kwonlyargs, a.kw_defaults)]:
        if d is not None:
            decl.defaults[p.arg] = ast.unparse(d)
    for p in positional + a.kwonlyargs:
        decl.spans[p.arg] = Span(filename, p.lineno, p.col_offset, p.end_lineno or p.lineno,
                                 p.end_col_offset or p.col_offset)
        ann = p.annotation
        if ann is None:
            continue
        origin = f"annotation {p.arg}: {ast.unparse(ann)}"
        try:
            spec = _annotation_spec(ann, origin)
        except SpecError as e:
            span = Span(filename, ann.lineno, ann.col_offset, ann.end_lineno or ann.lineno,
                        ann.end_col_offset or ann.col_offset)
            decl.errors[p.arg] = ShapeAnnotationError(
                f"shape annotation of {p.arg!r}: {e}", span=span,
                hint='write a shape as a string: "f32[784, 256]" (dims are integers or names)')
            continue
        if spec is None:
            decl.other[p.arg] = ast.unparse(ann)
        else:
            decl.specs[p.arg] = spec
    return decl


def _annotation_spec(ann: ast.expr, origin: str) -> Any:
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        spec = parse_spec(ann.value, origin)
        if spec is not None:
            return spec
        if ann.value.strip()[:1] in ("[", "(", "{") and "[" in ann.value.strip()[1:]:
            try:  # a container of shapes: "[{w: f32[3, 2], b: f32[2]}]"
                return parse_tree(ann.value, origin)  # type: ignore[no-any-return]
            except SpecError:
                pass
        try:
            inner = ast.parse(ann.value.strip(), mode="eval").body
        except SyntaxError:
            return None
        return _struct_spec(inner, origin)
    return _struct_spec(ann, origin)


def _struct_spec(node: ast.expr, origin: str) -> ShapeSpec | None:
    """``ShapeDtypeStruct((3, n), np.float32)`` written literally -> ShapeSpec (never evaluated)."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if fname != "ShapeDtypeStruct":
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    shape = node.args[0] if node.args else kw.get("shape")
    dtype = node.args[1] if len(node.args) > 1 else kw.get("dtype")
    if shape is None or dtype is None:
        raise SpecError("ShapeDtypeStruct needs a shape and a dtype")
    if not isinstance(shape, (ast.Tuple, ast.List)):
        raise SpecError(f"the shape {ast.unparse(shape)} is not a tuple of integers and names")
    dims: list[int | str] = []
    for d in shape.elts:
        if isinstance(d, ast.Constant) and type(d.value) is int and d.value >= 0:
            dims.append(d.value)
        elif isinstance(d, ast.Constant) and isinstance(d.value, str) and d.value.isidentifier():
            dims.append(d.value)
        elif isinstance(d, ast.Name):
            dims.append(d.id)
        else:
            raise SpecError(f"bad dimension {ast.unparse(d)!r}: a dimension is an integer or a name")
    dname = dtype.attr if isinstance(dtype, ast.Attribute) else dtype.id if isinstance(dtype, ast.Name) else \
        dtype.value if isinstance(dtype, ast.Constant) and isinstance(dtype.value, str) else None
    if dname not in DTYPE_NAMES:
        raise SpecError(f"unknown dtype {ast.unparse(dtype)} (use e.g. np.float32 or 'f32')")
    return ShapeSpec(dtype_of(dname), tuple(dims), origin)


# ---------------------------------------------------------------------------
# Resolution: annotations + --arg + --dim -> concrete arguments
# ---------------------------------------------------------------------------


@dataclass
class Resolved:
    args: dict[str, Any]  # parameter -> ShapeDtypeStruct or a static number
    specs: dict[str, ShapeSpec]  # parameter -> the spec it came from (arrays only)
    missing: list[str]  # parameters with no shape and no default
    dims: dict[str, int]  # every symbolic dimension's value
    stand_ins: dict[str, int]  # those given a stand-in value (only when asked to)


def resolve(decl: FunctionDecl, overrides: Mapping[str, ShapeSpec | int | float], dims: Mapping[str, int],
            stand_ins: bool = False) -> Resolved:
    """Concrete shapes for ``decl``'s parameters. ``--arg`` replaces an annotation.

    Raises SpecError when two sources give a symbolic dimension different values, or
    (unless ``stand_ins``) when one has no value at all; ShapeAnnotationError for a
    malformed annotation that no ``--arg`` replaces.
    """
    for p, err in decl.errors.items():
        if p not in overrides:
            raise err
    bound: dict[str, tuple[int, str]] = {n: (v, f"--dim {n}={v}") for n, v in dims.items()}
    for p, override in overrides.items():
        olds, news = tree_specs(decl.specs.get(p)), tree_specs(override)
        if len(olds) != len(news):
            continue
        for old, new in zip(olds, news):
            if len(old.dims) != len(new.dims):
                continue
            for a, b in zip(old.dims, new.dims):
                if isinstance(a, str) and isinstance(b, int):
                    _bind(bound, a, b, f"{new.origin} (annotated {old})")
    chosen: dict[str, Any] = {}
    for p in decl.params:
        if p in overrides:
            chosen[p] = overrides[p]
        elif p in decl.specs:
            chosen[p] = decl.specs[p]
    specs = {p: s for p, s in chosen.items() if isinstance(s, ShapeSpec)}
    unbound: dict[str, list[str]] = {}
    for p, tree in chosen.items():
        for s in tree_specs(tree):
            for d in s.symbols():
                if d not in bound:
                    unbound.setdefault(d, []).append(f"{p}: {s}")
    given: dict[str, int] = {}
    if unbound and not stand_ins:
        names = list(unbound)
        uses = "; ".join(f"{d} in {', '.join(u)}" for d, u in unbound.items())
        example = " ".join(f"--dim {d}=128" for d in names)
        p, s = next((q, t) for q, tree in chosen.items() for t in tree_specs(tree) if t.symbols())
        concrete = ShapeSpec(s.dtype, tuple(128 if isinstance(d, str) else d for d in s.dims))
        raise SpecError(f"symbolic dimension{'s' if len(names) > 1 else ''} {', '.join(names)} "
                        f"{'have' if len(names) > 1 else 'has'} no value ({uses}): pass {example}, "
                        f"or concrete shapes, e.g. --arg {p}={concrete}")
    if unbound:
        taken = {d for tree in chosen.values() for s in tree_specs(tree) for d in s.dims if isinstance(d, int)} | \
            {v for v, _ in bound.values()}
        v = 11
        for d in unbound:
            while v in taken:
                v += 1
            given[d] = v
            taken.add(v)
    values = {n: v for n, (v, _) in bound.items()} | given
    args: dict[str, Any] = {p: _resolve_tree(s, values) for p, s in chosen.items()}
    missing = [p for p in decl.params if p not in chosen and p not in decl.defaults]
    return Resolved(args, specs, missing, values, given)


def _bind(bound: dict[str, tuple[int, str]], name: str, value: int, origin: str) -> None:
    old = bound.get(name)
    if old is None:
        bound[name] = (value, origin)
    elif old[0] != value:
        raise SpecError(f"symbolic dimension {name} is inconsistent: {old[0]} from {old[1]}, "
                        f"but {value} from {origin}")


def missing_message(decl: FunctionDecl, missing: list[str], why: str) -> str:
    """The usage error for parameters with no shape: names them and shows both ways to give one."""
    p = missing[0]
    number = {"int": "4", "float": "0.5", "bool": "True"}.get(decl.other.get(p, ""))
    if number is not None:
        return f"{why} needs a value for {p!r} of {decl.name} (annotated {decl.other[p]}): pass --arg {p}={number}"
    sig = ", ".join(f'{q}: "f32[3, 4]"' if q == p else q for q in decl.params[:decl.params.index(p) + 1])
    more = ", ..." if p != decl.params[-1] else ""
    names = ", ".join(repr(q) for q in missing)
    msg = (f"{why} needs {'shapes' if len(missing) > 1 else 'a shape'} for {names} of {decl.name}: "
           f"annotate it, def {decl.name}({sig}{more}), or pass --arg {p}=f32[3,4]")
    notes = [f"{q}: {decl.other[q]}" for q in missing if q in decl.other]
    if notes:
        msg += f" (the annotation{'s' if len(notes) > 1 else ''} {'; '.join(notes)} "\
               f"{'are' if len(notes) > 1 else 'is'} not a shape)"
    return msg
