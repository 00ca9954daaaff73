"""Loading ``FILE.py`` for srcjax-transpile: the target ``FILE.py[::FUNC]``, the file imported as a
module with its top-level ``def``s read from the source, and :class:`UsageError` (a mistake on the
command line, exit status 2).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core import Span, TranspileError
from .shapes import FunctionDecl, read_declarations


class UsageError(Exception):
    """A mistake on the command line: exit status 2, argparse style."""


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
