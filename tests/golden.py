"""Golden generated source: what ``srcjax.source`` prints for every program of the test corpora.

Refactors must keep behaviour, and the generated source is behaviour a user reads. Every program
of the corpora (tests/corpus_programs.py, tests/ad_programs.py, tests/container_programs.py and
the control-flow programs of tests/test_ad_control.py and tests/test_ad_higher.py) is written
under each transformation (compile, grad, jvp, vjp, hessian, grad with ``max_iters``, vmap), and the
text is compared with tests/golden/<module>.<function>.<transform>.txt. A transformation that
refuses a program records the refusal (class and first line), so a change of what is refused
shows up too.

Refresh after a deliberate change, then read the diff (``git diff tests/golden``):

    SRCJAX_GOLDEN=refresh .venv/bin/python -m pytest -n 2 tests/test_golden.py

The default suite checks a fixed tenth of the cases; ``SRCJAX_GOLDEN=all`` checks every one.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import srcjax
from srcjax import autodiff

GOLDEN_DIR = Path(__file__).parent / "golden"

MODULES = ("tests.corpus_programs", "tests.ad_programs", "tests.container_programs",
           "tests.test_ad_control", "tests.test_ad_higher")


def _programs(module: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    mod = importlib.import_module(module)
    for name, fn in vars(mod).items():
        if name.startswith(("_", "test_")) or not inspect.isfunction(fn) or fn.__module__ != mod.__name__:
            continue
        if name in {"jax_twin", "check", "agree", "args_for", "program", "f32", "f64", "i64", "make_call"}:
            continue
        try:
            inspect.getsource(fn)
        except (OSError, TypeError):
            continue
        if not list(inspect.signature(fn).parameters):
            continue
        yield name, fn


TRANSFORMS: dict[str, Callable[[Callable[..., Any]], str]] = {
    "compile": lambda f: srcjax.source(f),
    "grad": lambda f: srcjax.source(srcjax.grad(f)),
    "grad_bounded": lambda f: srcjax.source(srcjax.grad(f, max_iters=8)),
    "jvp": lambda f: srcjax.source(autodiff._wrap(f, "jvp", (0,), False)),
    "vjp": lambda f: srcjax.source(autodiff._wrap(f, "vjp", (0,), False)),
    "hessian": lambda f: srcjax.source(srcjax.hessian(f)),
    "vmap": lambda f: srcjax.source(srcjax.vmap(f)),  # every parameter mapped over its axis 0
}


def cases() -> list[tuple[str, Callable[..., Any], str]]:
    out = []
    for module in MODULES:
        short = module.rsplit(".", 1)[1]
        for name, fn in _programs(module):
            for t in TRANSFORMS:
                out.append((f"{short}.{name}.{t}", fn, t))
    return out


def render(fn: Callable[..., Any], transform: str) -> str:
    try:
        return TRANSFORMS[transform](fn)
    except srcjax.TranspileError as e:
        first = str(e).splitlines()[0] if str(e) else ""
        # the refusal without its location prefix (paths differ between checkouts)
        return f"refused: {type(e).__name__}: {first.split(': error: ', 1)[-1]}\n"
