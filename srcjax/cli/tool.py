"""srcjax-transpile: print what srcjax generates for a function, stage by stage.

    srcjax-transpile model.py --list                         # every function: transpiles? shapes? grad?
    srcjax-transpile model.py::predict                      # normalized source
    srcjax-transpile model.py::loss --grad -o loss_grad.py   # write an importable module
    srcjax-transpile model.py::predict --emit hlo --arg x=f32[128,784] --arg w=f32[784,10]
    srcjax-transpile model.py::loss --emit optimized-hlo --dim n=128   # shapes from annotations
    srcjax-transpile model.py::loss --grad --vmap --in-axes None,0,0   # per-example gradients

The file is imported as a module (running its top-level code, as Python
does; not its ``if __name__ == "__main__":`` block); functions are read and
transformed, never called. Errors in the program print as
``file:line:col: error: ...`` with the source line and a caret and exit
with status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import sys
from pathlib import Path
from typing import Any

from ..core import TranspileError
from ..transforms.bounded import LoopBoundError
from . import highlight
from .listing import listing
from .loading import Loaded, UsageError, declaration, def_span, load, split_target
from .shapes import FunctionDecl, SpecError, parse_arg, parse_dim
from .transform import (
    KINDS,
    batched_args,
    check_differentiable,
    derived_args,
    parse_argnums,
    parse_in_axes,
    parse_out_axes,
    primal_args,
    requested_kind,
    transformed,
    unbatched_overrides,
    vmapped,
    with_defaults,
)

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
  srcjax-transpile model.py::loss --grad --vmap --in-axes None,0,0
  srcjax-transpile model.py::predict --vmap --in-axes None,0 --emit hlo --arg x=f32[32,128,784]
  srcjax-transpile model.py::predict --emit hlo --arg x=f32[n,784] --dim n=32 --color always | less -R

exit status: 0 success; 1 an error in the program (file:line:col: error: ...); 2 a usage error.
""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", metavar="FILE.py[::FUNC]", nargs="?",
                   help="the file and the function in it (FUNC may be left out with --list)")
    p.add_argument("--cache-info", action="store_true",
                   help="print where the persistent compilation cache is, its entries and size, and exit")
    p.add_argument("--cache-clear", action="store_true",
                   help="remove every entry of the persistent compilation cache, and exit")
    p.add_argument("--list", action="store_true",
                   help="list every top-level function in FILE.py: whether it transpiles (or its first error as "
                        "line:col: ErrorClass: message), its argument shapes from annotations, its output, and "
                        "whether --grad works on it")
    p.add_argument("--emit", choices=["source", "hlo", "optimized-hlo"], default="source",
                   help="what to print: the generated Python source (default), StableHLO, or the HLO after XLA's "
                        "optimizations (hlo and optimized-hlo need every argument's shape)")
    p.add_argument("--anf", action="store_true",
                   help="with --emit source: derivatives and batched programs one primitive per line, as written "
                        "before their single-use temporaries are folded into the expressions they feed (as "
                        "srcjax.source(f, form='anf'); for debugging srcjax itself)")
    p.add_argument("--for-args", action="store_true",
                   help="with --emit source: the program for the arguments' shapes and dtypes (from --arg, --dim "
                        "and annotations), as srcjax.source(f, *args): guards they pass, shape-generic helpers "
                        "and values read only for shapes are gone")
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
    p.add_argument("--max-iters", type=int, metavar="N",
                   help="with --grad/--value-and-grad/--vjp: a bound on the iterations of each `while` on "
                        "array data (reverse mode needs one; as srcjax.grad(f, max_iters=N))")
    p.add_argument("--vmap", action="store_true",
                   help="the batched program (srcjax.vmap) of FUNC, or of its derivative with --grad, "
                        "--value-and-grad, --jvp or --vjp: def FUNC_vmap(params...). With --emit hlo, --arg gives "
                        "a mapped parameter's batched shape; annotations give one example's")
    p.add_argument("--in-axes", metavar="AXIS[,AXIS...]",
                   help="with --vmap: the mapped axis of each parameter, an integer or None (shared by every "
                        "example), one per parameter, e.g. None,0,0 (default: 0 for each)")
    p.add_argument("--out-axes", metavar="AXIS",
                   help="with --vmap: where the batch axis goes in every output, an integer (default 0) or None "
                        "(outputs that depend on no mapped parameter)")
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
        path_s = split_target(ns.target or "")[0]
        if ns.target and e.span is not None and Path(e.span.filename).resolve() == Path(path_s).resolve():
            e.span = dataclasses.replace(e.span, filename=path_s)  # as the user wrote it
        if isinstance(e, LoopBoundError):  # the CLI's spelling of max_iters=
            e.hint = "pass --max-iters N (a bound on its iterations), or count in the test: " \
                     "`while it < 100 and ...:` with `it = 0` before the loop and `it += 1` in it"
        text = e.render() if e.span is not None else f"{ns.target}: error: {e.render()}"
        print(highlight.error(text) if err_color else text, file=sys.stderr)
        return 1


def cache_command(ns: argparse.Namespace) -> int:
    """``--cache-info`` / ``--cache-clear``: the persistent compilation cache (``runtime/disk_cache.py``)."""
    from ..runtime import disk_cache

    if ns.cache_clear:
        print(f"removed {disk_cache.clear()} entries from {disk_cache.cache_dir()}")
        return 0
    info = disk_cache.info()
    if info.directory is None:
        print("the persistent compilation cache is off (SRCJAX_CACHE=0)")
        return 0
    print(f"{info.directory}: {info.entries} entr{'y' if info.entries == 1 else 'ies'}, "
          f"{info.bytes / 2**20:.1f} MiB of at most {info.max_bytes / 2**20:.0f} MiB "
          "(SRCJAX_CACHE_DIR moves it, SRCJAX_CACHE_MAX_BYTES caps it, SRCJAX_CACHE=0 turns it off)")
    return 0


def run(ns: argparse.Namespace) -> int:
    if ns.cache_info or ns.cache_clear:
        if ns.target is not None:
            raise UsageError("--cache-info and --cache-clear take no FILE")
        return cache_command(ns)
    if ns.target is None:
        raise UsageError("expected FILE.py::FUNCTION (or FILE.py --list)")
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
    if ns.max_iters is not None and kind not in ("grad", "value_and_grad", "vjp") and not ns.list:
        raise UsageError("--max-iters bounds the `while` loops of reverse mode: use it with --grad, "
                         "--value-and-grad, --vjp (or --list, for its GRAD column)")
    if ns.max_iters is not None and ns.max_iters < 1:
        raise UsageError(f"--max-iters {ns.max_iters}: expected a positive number of iterations")
    if ns.argnums is not None and kind is None and not ns.list:
        raise UsageError("--argnums needs --grad, --value-and-grad, --jvp or --vjp")
    if not ns.vmap and (ns.in_axes is not None or ns.out_axes is not None):
        raise UsageError(f"{'--in-axes' if ns.in_axes is not None else '--out-axes'} needs --vmap")
    if ns.vmap and ns.list:
        raise UsageError("--vmap shows one function's batched program; --list checks the functions themselves")
    loaded = load(path_s)
    out_color = highlight.want_color(ns.color, sys.stdout)
    if ns.list:
        if func is not None and func not in loaded.decls:
            raise UsageError(f"{path_s} has no top-level function {func!r}{_known(loaded)}")
        sys.stdout.write(listing(loaded, func, overrides, dims, ns.argnums, out_color, ns.max_iters))
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

    derived = transformed(fn, kind, argnums, ns.max_iters)
    params = list(inspect.signature(derived).parameters)
    unknown = [p for p in overrides if p not in params]
    if unknown:
        raise UsageError(f"--arg {unknown[0]}=...: {getattr(derived, '__name__', decl.name)} has no parameter "
                         f"{unknown[0]!r} (its parameters: {', '.join(params)})")
    size = None
    if ns.vmap:
        in_axes = parse_in_axes(ns.in_axes, getattr(derived, "__name__", decl.name), params)
        if all(a is None for a in in_axes):
            raise UsageError(f"--in-axes {ns.in_axes}: map at least one parameter (an integer axis)")
        shown = vmapped(derived, in_axes, parse_out_axes(ns.out_axes))
        overrides, size = unbatched_overrides(overrides, params, in_axes, dims)  # one example's shapes
    if ns.emit == "source" and not ns.for_args:
        return module_text(shown if ns.vmap else derived, ns, loaded)
    args, _ = primal_args(decl, overrides, dims, "--for-args" if ns.emit == "source" else f"--emit {ns.emit}")
    args = with_defaults(fn, args)
    if kind is not None:
        check_differentiable(fn, decl, kind, nums, args)
    args = derived_args(fn, derived, kind, nums, decl, args, overrides)
    if ns.vmap:
        args = batched_args(args, params, in_axes, size)
    if ns.emit == "source":
        return module_text(shown if ns.vmap else derived, ns, loaded, args)
    if ns.vmap:
        lowered = shown.lower(**args)
    else:
        lowered = api.Compiled(derived).lower(**args)
    return lowered.as_text() if ns.emit == "hlo" else lowered.compile().as_text()


def module_text(fn: Any, ns: argparse.Namespace, loaded: Loaded, args: dict[str, Any] | None = None) -> str:
    """The generated module (for ``args``' shapes, if given), with the module constants it reads written into it."""
    from .. import printing
    from .standalone import module_constants

    text = printing.source(fn, form="anf" if ns.anf else "readable", **(args or {}))
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
        how += f" --max-iters {ns.max_iters}" if ns.max_iters is not None else ""
        how += " --vmap" if ns.vmap else ""
        how += " --anf" if ns.anf else ""
        how += f" --in-axes {ns.in_axes}" if ns.in_axes is not None else ""
        how += f" --out-axes {ns.out_axes}" if ns.out_axes is not None else ""
        text = f"# Generated by srcjax-transpile {ns.target}{how}; edit {loaded.path.name}, not this file.\n{text}"
    return text


def _known(loaded: Loaded) -> str:
    names = list(loaded.decls)
    return f" (its functions: {', '.join(names)})" if names else " (it defines no functions)"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
