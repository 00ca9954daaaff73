"""srcjax-transpile: print what srcjax generates for a function, stage by stage.

    srcjax-transpile model.py::predict                      # normalized source
    srcjax-transpile model.py::predict --emit hlo --arg x=f32[128,784] --arg w=f32[784,10]
    srcjax-transpile model.py::predict --emit optimized-hlo --arg ...
    srcjax-transpile model.py::predict -o predict_src.py     # write an importable module

Errors print as ``file:line:col: error: ...`` with the source line and a
caret, and exit with status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16,
    "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32, "u64": np.uint64, "bool": np.bool_,
    "bf16": "bfloat16",
}


def parse_arg_spec(text: str) -> tuple[str, Any]:
    """``x=f32[3,4]`` -> ("x", ShapeDtypeStruct); ``n=5`` / ``eps=0.1`` -> a Python number."""
    from .core import ShapeDtypeStruct

    if "=" not in text:
        raise ValueError(f"--arg {text!r}: expected NAME=f32[3,4] or NAME=<number>")
    name, spec = text.split("=", 1)
    m = re.fullmatch(r"\s*(\w+)\[([\d,\s]*)\]\s*", spec)
    if m:
        dt = _DTYPES.get(m.group(1))
        if dt is None:
            raise ValueError(f"--arg {text!r}: unknown dtype {m.group(1)!r} (use one of {', '.join(_DTYPES)})")
        if dt == "bfloat16":
            import ml_dtypes

            dt = ml_dtypes.bfloat16
        dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
        return name.strip(), ShapeDtypeStruct(dims, dt)
    try:
        return name.strip(), int(spec)
    except ValueError:
        pass
    try:
        return name.strip(), float(spec)
    except ValueError:
        raise ValueError(f"--arg {text!r}: expected a shape like f32[3,4] or a number") from None


def load_function(target: str) -> Any:
    if "::" not in target:
        raise ValueError(f"{target!r}: expected FILE.py::FUNCTION")
    path_s, func = target.rsplit("::", 1)
    path = Path(path_s)
    if not path.exists():
        raise ValueError(f"{path_s}: no such file")
    mod_name = "_srcjax_cli_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, str(path.resolve().parent))
    spec.loader.exec_module(module)
    if not hasattr(module, func):
        raise ValueError(f"{path_s} has no function {func!r}")
    return getattr(module, func)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="srcjax-transpile",
        description="Show what srcjax generates for FILE.py::FUNC: the normalized Python source, "
                    "StableHLO, or XLA's optimized HLO.",
        epilog="examples:\n"
               "  srcjax-transpile model.py::predict\n"
               "  srcjax-transpile model.py::loss --grad --argnums 0,1\n"
               "  srcjax-transpile model.py::loss --value-and-grad -o loss_grad.py\n"
               "  srcjax-transpile model.py::predict --emit hlo --arg x=f32[128,784] --arg w=f32[784,10]\n"
               "  srcjax-transpile model.py::predict -o predict_generated.py\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", help="FILE.py::FUNCTION")
    p.add_argument("--emit", choices=["source", "hlo", "optimized-hlo"], default="source",
                   help="what to print (default: source)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                   help="argument shape, e.g. x=f32[3,4], or a static number n=5 (needed for hlo)")
    p.add_argument("-o", "--output", help="write the output to this file instead of stdout")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--grad", action="store_true", help="transform with srcjax.grad first")
    mode.add_argument("--value-and-grad", action="store_true", help="transform with srcjax.value_and_grad first")
    mode.add_argument("--jvp", action="store_true", help="forward mode: def f_jvp(params..., tangents...)")
    mode.add_argument("--vjp", action="store_true", help="reverse mode: def f_vjp(params..., out_bar)")
    p.add_argument("--argnums", default="0", metavar="N[,N...]",
                   help="parameters to differentiate (default 0; --jvp/--vjp default: all)")
    return p


def transformed(fn: Any, ns: argparse.Namespace) -> Any:
    """Apply the requested transformation (a plain function with source)."""
    from .autodiff import derivative_function

    kind = "grad" if ns.grad else "value_and_grad" if ns.value_and_grad else "jvp" if ns.jvp else \
        "vjp" if ns.vjp else None
    if kind is None:
        return fn
    import inspect

    n = len(inspect.signature(fn).parameters)
    explicit = ns.argnums != "0" or kind in ("grad", "value_and_grad")
    try:
        nums = tuple(int(a) for a in ns.argnums.split(",")) if explicit else tuple(range(n))
    except ValueError:
        raise ValueError(f"--argnums {ns.argnums!r}: expected integers like 0 or 0,1") from None
    argnums: Any = nums[0] if len(nums) == 1 and kind in ("grad", "value_and_grad") else nums
    return derivative_function(fn, kind, argnums)


def main(argv: list[str] | None = None) -> int:
    from . import api
    from .core import TranspileError

    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        fn = load_function(ns.target)
        args = dict(parse_arg_spec(a) for a in ns.arg)
    except ValueError as e:
        parser.print_usage(sys.stderr)
        print(f"srcjax-transpile: error: {e}", file=sys.stderr)
        return 2
    try:
        try:
            fn = transformed(fn, ns)
        except ValueError as e:
            parser.print_usage(sys.stderr)
            print(f"srcjax-transpile: error: {e}", file=sys.stderr)
            return 2
        if ns.emit == "source":
            out = api.source(fn)
        else:
            c = api.Compiled(fn)
            missing = [p for p in c.params if p not in args and
                       c.signature.parameters[p].default is c.signature.parameters[p].empty]
            if missing:
                print(f"srcjax-transpile: error: --emit {ns.emit} needs shapes for: {', '.join(missing)} "
                      f"(e.g. --arg {missing[0]}=f32[3,4])", file=sys.stderr)
                return 2
            lowered = c.lower(**args)
            out = lowered.as_text() if ns.emit == "hlo" else lowered.compile().as_text()
    except TranspileError as e:
        print(e.render(), file=sys.stderr)
        return 1
    if ns.output:
        Path(ns.output).write_text(out)
    else:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
