"""srcjax-transpile: print what srcjax generates for a function, stage by stage.

    srcjax-transpile model.py --list                         # every function: transpiles? shapes? grad?
    srcjax-transpile model.py::predict                      # normalized source
    srcjax-transpile model.py::loss --grad -o loss_grad.py   # write an importable module
    srcjax-transpile model.py::predict --emit hlo --arg x=f32[128,784] --arg w=f32[784,10]
    srcjax-transpile model.py::loss --emit optimized-hlo --dim n=128   # shapes from annotations

The file is imported as a module (running its top-level code, as Python
does; not its ``if __name__ == "__main__":`` block); functions are read and
transformed, never called. Errors in the program print as
``file:line:col: error: ...`` with the source line and a caret and exit
with status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import importlib.util
import inspect
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core import DTypeError, ShapeDtypeStruct, ShapeError, Span, TranspileError, dtype_short_name
from . import highlight
from .shapes import (
    FunctionDecl,
    ShapeSpec,
    SpecError,
    missing_message,
    parse_arg,
    parse_dim,
    read_declarations,
    resolve,
)

KINDS = {"grad": "--grad", "value_and_grad": "--value-and-grad", "jvp": "--jvp", "vjp": "--vjp"}


class UsageError(Exception):
    """A mistake on the command line: exit status 2, argparse style."""


# ---------------------------------------------------------------------------
# Loading the file
# ---------------------------------------------------------------------------


@dataclass
class Loaded:
    path: Path
    module: ModuleType
    decls: dict[str, FunctionDecl]  # top-level defs, in source order


def split_target(target: str) -> tuple[str, str | None]:
    if "::" in target:
        path, func = target.rsplit("::", 1)
        return path, func
    return target, None


def load(path_s: str) -> Loaded:
    """Parse the file (for its top-level defs and their annotations), then import it."""
    path = Path(path_s)
    if not path.is_file():
        raise UsageError(f"{path_s}: no such file")
    text = path.read_text()
    try:
        tree = ast.parse(text, filename=path_s)
    except SyntaxError as e:
        line, col = e.lineno or 1, max((e.offset or 1) - 1, 0)
        end = (e.end_offset or col + 2) - 1 if (e.end_lineno or line) == line else col + 1
        raise TranspileError(f"SyntaxError: {e.msg}", span=Span(path_s, line, col, line, max(end, col + 1))) from None
    mod_name = "_srcjax_cli_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the output stays clean of the module's prints
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # the user's top-level code raised: report where
        frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename) == path.resolve()]
        span = None
        if frames:
            f = frames[-1]
            col = f.colno or 0
            span = Span(path_s, f.lineno or 1, col, f.lineno or 1, f.end_colno or col + 1)
        raise TranspileError(f"importing {path_s} raised {type(e).__name__}: {e}", span=span,
                             hint="the file is imported (its top-level code runs) to read its functions") from None
    return Loaded(path, module, read_declarations(tree, path_s))


def declaration(loaded: Loaded, name: str, fn: Any) -> FunctionDecl:
    """The function as written in the file; for one bound otherwise (an import), from its signature."""
    decl = loaded.decls.get(name)
    if decl is not None:
        return decl
    params = inspect.signature(fn).parameters
    defaults = {p: repr(v.default) for p, v in params.items() if v.default is not v.empty}
    return FunctionDecl(name, 0, list(params), {}, {}, {}, defaults=defaults)


def def_span(decl: FunctionDecl) -> Span | None:
    return decl.spans.get("")


# ---------------------------------------------------------------------------
# Transformations and argument shapes
# ---------------------------------------------------------------------------


def requested_kind(ns: argparse.Namespace) -> str | None:
    return next((k for k in KINDS if getattr(ns, k)), None)


def parse_argnums(text: str | None, kind: str | None, decl: FunctionDecl) -> tuple[int, ...] | int:
    """``--argnums``: grad's default 0 (an int: a single gradient), jvp/vjp's default every parameter."""
    n = len(decl.params)
    if text is None:
        return 0 if kind in (None, "grad", "value_and_grad") else tuple(range(n))
    try:
        nums = tuple(int(a) for a in text.split(","))
    except ValueError:
        raise UsageError(f"--argnums {text!r}: expected integers like 0 or 0,1") from None
    bad = [a for a in nums if not -n <= a < n]
    if bad:
        raise UsageError(f"--argnums {text}: {decl.name} has {n} parameter{'s' if n != 1 else ''} "
                         f"({', '.join(decl.params)}), so argnums are 0..{n - 1}")
    nums = tuple(a % n for a in nums)
    return nums[0] if len(nums) == 1 and kind in (None, "grad", "value_and_grad") else nums


def transformed(fn: Any, kind: str | None, argnums: tuple[int, ...] | int) -> Any:
    """The function srcjax writes for ``kind`` (a plain Python function with source), or ``fn``."""
    if kind is None:
        return fn
    from ..autodiff import derivative_function

    return derivative_function(fn, kind, argnums)


def primal_args(decl: FunctionDecl, overrides: dict[str, Any], dims: dict[str, int], why: str,
                stand_ins: bool = False) -> tuple[dict[str, Any], dict[str, int]]:
    """Concrete arguments of the user's function (keyword -> ShapeDtypeStruct or number), stand-ins used."""
    try:
        r = resolve(decl, {k: v for k, v in overrides.items() if k in decl.params}, dims, stand_ins)
    except SpecError as e:
        raise UsageError(str(e)) from None
    if r.missing:
        raise UsageError(missing_message(decl, r.missing, why))
    return r.args, r.stand_ins


def with_defaults(fn: Any, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` and the defaults of the parameters it leaves out: derivatives are written without defaults."""
    out = dict(args)
    for p, prm in inspect.signature(fn).parameters.items():
        if p not in out and prm.default is not prm.empty:
            out[p] = prm.default
    return out


def check_differentiable(fn: Any, decl: FunctionDecl, kind: str, nums: tuple[int, ...], args: dict[str, Any],
                         names: dict[int, str] | None = None) -> None:
    """What ``srcjax.grad`` would refuse when called: integer inputs, a non-scalar output (for grad)."""
    from .. import api

    flag = KINDS[kind]
    for i in nums:
        p = decl.params[i]
        a = args.get(p)
        if isinstance(a, ShapeDtypeStruct) and not (a.dtype.kind == "f" or a.dtype.name == "bfloat16"):
            shown = f"{dtype_short_name(a.dtype)}[{','.join(map(str, a.shape))}]"
            raise DTypeError(f"{flag} needs floating-point inputs, but argument {p!r} is {shown}",
                             span=decl.spans.get(p),
                             hint=f"annotate it as float (\"f32[...]\"), pass --arg {p}=f32[...], or choose other "
                                  "parameters with --argnums")
    if kind in ("grad", "value_and_grad"):
        from ..autodiff import grad_output_error

        bad = grad_output_error(fn, api.eval_shape(fn, **args), False, flag, lambda o: describe(o, names))
        if bad is not None:  # at the function's return, as srcjax.grad reports it
            bad.hint = "use --vjp for a non-scalar output" if isinstance(bad, ShapeError) else bad.hint
            raise bad


def describe(out: Any, names: dict[int, str] | None = None) -> str:
    """``f32[3,4]`` for one array, ``(f32[], f32[3])`` for a tuple of them; dims in ``names`` by name."""
    if isinstance(out, ShapeDtypeStruct):
        dims = ",".join(names.get(d, str(d)) if names else str(d) for d in out.shape)
        return f"{dtype_short_name(out.dtype)}[{dims}]"
    if isinstance(out, (tuple, list)):
        inner = ", ".join(describe(o, names) for o in out)
        return f"({inner},)" if isinstance(out, tuple) and len(out) == 1 else \
            f"({inner})" if isinstance(out, tuple) else f"[{inner}]"
    if isinstance(out, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v, names)}" for k, v in out.items()) + "}"
    return repr(out)


def derived_args(fn: Any, derived: Any, kind: str | None, nums: tuple[int, ...], decl: FunctionDecl,
                 args: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Arguments of the transformed function: jvp tangents take their primal's shape, vjp's
    cotangent the output's; ``--arg`` may give them too."""
    from .. import api

    extra = list(inspect.signature(derived).parameters)[len(decl.params):]
    out = dict(args)
    for i, p in enumerate(extra):
        given = overrides.get(p)
        if isinstance(given, ShapeSpec):
            if given.symbols():
                raise UsageError(f"--arg {p}={given}: give the shape of {p} with numbers")
            out[p] = given.resolve({})
        elif given is not None:
            out[p] = given
        elif kind == "jvp":
            out[p] = args[decl.params[nums[i]]]
        else:  # vjp: the cotangent of the output
            out[p] = api.eval_shape(fn, **args)
    return out


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="srcjax-transpile",
        description="Show what srcjax generates for a function in FILE.py: the normalized Python source,\n"
                    "a derivative's source, StableHLO, or XLA's optimized HLO; or, with --list, check\n"
                    "every function in the file.\n\n"
                    "FILE.py is imported as a module to read its functions: its top-level code runs, as\n"
                    "with `import` (what it prints goes to stderr), but not its `if __name__ == \"__main__\":`\n"
                    "block. Functions are read, transformed and compiled, never called.",
        epilog="""argument shapes (for --emit hlo / optimized-hlo, and --list's checks):
  from annotations in the source, a string in the --arg syntax, never evaluated:
      def loss(w: "f32[784, 256]", x: "f32[n, 784]", y: "f32[n, 10]"): ...
  or a literal ShapeDtypeStruct((784, 256), np.float32) annotation. Dims are integers or
  names; a name (n) gets its value from --dim n=128, or from an --arg that replaces an
  annotation of the same rank (--arg x=f32[128,784] gives n=128). --arg overrides an
  annotation. With --list, --arg and --dim apply to every function that has that
  parameter or dim. srcjax.compile and srcjax.grad ignore such annotations.

examples:
  srcjax-transpile model.py --list
  srcjax-transpile model.py::predict
  srcjax-transpile model.py::loss --grad --argnums 0,1
  srcjax-transpile model.py::loss --value-and-grad -o loss_grad.py
  srcjax-transpile model.py::loss --jvp --argnums 0
  srcjax-transpile model.py::predict --emit hlo --arg x=f32[128,784] --arg w=f32[784,10]
  srcjax-transpile model.py::loss --grad --emit optimized-hlo --dim n=128
  srcjax-transpile model.py::predict --emit hlo --arg x=f32[n,784] --dim n=32 --color always | less -R

exit status: 0 success; 1 an error in the program (file:line:col: error: ...); 2 a usage error.
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", metavar="FILE.py[::FUNC]",
                   help="the file and the function in it (FUNC may be left out with --list)")
    p.add_argument("--list", action="store_true",
                   help="list every top-level function in FILE.py: whether it transpiles (or its first error as "
                        "line:col: ErrorClass: message), its argument shapes from annotations, its output, and "
                        "whether --grad works on it")
    p.add_argument("--emit", choices=["source", "hlo", "optimized-hlo"], default="source",
                   help="what to print: the generated Python source (default), StableHLO, or the HLO after XLA's "
                        "optimizations (hlo and optimized-hlo need every argument's shape)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--grad", action="store_true", help="the gradient: def FUNC_grad(params...)")
    mode.add_argument("--value-and-grad", action="store_true",
                      help="value and gradient: def FUNC_value_and_grad(params...) -> (value, grad)")
    mode.add_argument("--jvp", action="store_true",
                      help="forward mode: def FUNC_jvp(params..., tangents...) -> (out, out_tangent)")
    mode.add_argument("--vjp", action="store_true",
                      help="reverse mode: def FUNC_vjp(params..., out_bar) -> (out, cotangents)")
    p.add_argument("--argnums", metavar="N[,N...]",
                   help="parameters to differentiate (default: 0 for --grad/--value-and-grad and --list's grad "
                        "check, all for --jvp/--vjp)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                   help="an argument's shape and dtype, e.g. x=f32[3,4], x=f32[n,4], s=f32[] (scalar); dtypes "
                        "f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool; or a Python number, n=5, eps=0.1, "
                        "flag=True (static where the code needs it, as with srcjax.compile). Overrides an "
                        "annotation. Repeatable")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=INT",
                   help="the value of a symbolic dimension used in annotations or --arg, e.g. n=128. Repeatable")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the output to FILE instead of stdout (never colored). With --emit source it is a "
                        "standalone module: module constants the code reads are written into it, and it imports "
                        "and runs with NumPy and through srcjax")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="syntax highlighting (default auto: when writing to a terminal and NO_COLOR is not set)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    err_color = highlight.want_color(ns.color, sys.stderr)
    try:
        return run(ns)
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    except TranspileError as e:
        path_s = split_target(ns.target)[0]
        if e.span is not None and Path(e.span.filename).resolve() == Path(path_s).resolve():
            e.span = dataclasses.replace(e.span, filename=path_s)  # as the user wrote it
        text = e.render() if e.span is not None else f"{ns.target}: error: {e.render()}"
        print(highlight.error(text) if err_color else text, file=sys.stderr)
        return 1


def run(ns: argparse.Namespace) -> int:
    path_s, func = split_target(ns.target)
    if func is None and not ns.list:
        raise UsageError(f"{ns.target}: which function? write {ns.target}::FUNCTION, "
                         f"or use --list to see the functions in {path_s}")
    if func == "":
        raise UsageError(f"{ns.target}: expected FILE.py::FUNCTION")
    if ns.output and ns.list:
        raise UsageError("-o/--output writes one function's output; --list prints to stdout")
    if ns.output and Path(ns.output).resolve() == Path(path_s).resolve():
        raise UsageError(f"-o {ns.output} would overwrite the input file")
    try:
        overrides = dict(parse_arg(a) for a in ns.arg)
        dims = dict(parse_dim(d) for d in ns.dim)
    except SpecError as e:
        raise UsageError(str(e)) from None
    kind = requested_kind(ns)
    if ns.argnums is not None and kind is None and not ns.list:
        raise UsageError("--argnums needs --grad, --value-and-grad, --jvp or --vjp")
    loaded = load(path_s)
    out_color = highlight.want_color(ns.color, sys.stdout)
    if ns.list:
        from .listing import listing

        if func is not None and func not in loaded.decls:
            raise UsageError(f"{path_s} has no top-level function {func!r}{_known(loaded)}")
        sys.stdout.write(listing(loaded, func, overrides, dims, ns.argnums, out_color))
        return 0
    assert func is not None
    fn = getattr(loaded.module, func, None)
    if fn is None or not callable(fn):
        raise UsageError(f"{path_s} has no function {func!r}{_known(loaded)}")
    decl = declaration(loaded, func, fn)
    argnums = parse_argnums(ns.argnums, kind, decl)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    try:
        text = stage(ns, loaded, fn, decl, kind, argnums, nums, overrides, dims)
    except TranspileError as e:
        raise e.with_span(def_span(decl)) from None
    if not text.endswith("\n"):
        text += "\n"
    if ns.output:
        Path(ns.output).write_text(text)
        return 0
    if out_color:
        text = highlight.python(text) if ns.emit == "source" else highlight.hlo(text)
    sys.stdout.write(text)
    return 0


def stage(ns: argparse.Namespace, loaded: Loaded, fn: Any, decl: FunctionDecl, kind: str | None,
          argnums: tuple[int, ...] | int, nums: tuple[int, ...], overrides: dict[str, Any],
          dims: dict[str, int]) -> str:
    """The requested output for one function."""
    from .. import api

    derived = transformed(fn, kind, argnums)
    params = list(inspect.signature(derived).parameters)
    unknown = [p for p in overrides if p not in params]
    if unknown:
        raise UsageError(f"--arg {unknown[0]}=...: {getattr(derived, '__name__', decl.name)} has no parameter "
                         f"{unknown[0]!r} (its parameters: {', '.join(params)})")
    if ns.emit == "source":
        return module_text(derived, ns, loaded)
    args, _ = primal_args(decl, overrides, dims, f"--emit {ns.emit}")
    args = with_defaults(fn, args)
    if kind is not None:
        check_differentiable(fn, decl, kind, nums, args)
    args = derived_args(fn, derived, kind, nums, decl, args, overrides)
    lowered = api.Compiled(derived).lower(**args)
    return lowered.as_text() if ns.emit == "hlo" else lowered.compile().as_text()


def module_text(fn: Any, ns: argparse.Namespace, loaded: Loaded) -> str:
    """The generated module, with the module constants it reads written into it."""
    from .. import api
    from .standalone import module_constants

    text = api.source(fn)
    consts, bad = module_constants(fn, text)
    if consts:
        header, sep, body = text.partition("\n\n\n")
        if "base64.b64decode(" in consts:
            header = f"import base64\n{header}"
        text = f"{header}\n\n{consts}{sep}{body}"
    for name in bad:
        print(f"{ns.target}: warning: the generated code reads {name!r} from {loaded.path.name}, which cannot be "
              "written into the output as a literal; define it before running the output", file=sys.stderr)
    if ns.output:
        kind = requested_kind(ns)
        how = f" {KINDS[kind]}" if kind else ""
        how += f" --argnums {ns.argnums}" if ns.argnums is not None else ""
        text = f"# Generated by srcjax-transpile {ns.target}{how}; edit {loaded.path.name}, not this file.\n{text}"
    return text


def _known(loaded: Loaded) -> str:
    names = list(loaded.decls)
    return f" (its functions: {', '.join(names)})" if names else " (it defines no functions)"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
