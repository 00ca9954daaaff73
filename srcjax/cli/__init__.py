"""srcjax-transpile (also ``python -m srcjax``): what srcjax generates for a function, stage by stage.

Modules: :mod:`.tool` (the command: its arguments, the stages, errors),
:mod:`.loading` (the target file, imported), :mod:`.transform` (``--grad``/``--jvp``/...,
``--argnums``, the arguments checked and lowered with), :mod:`.listing` (``--list``),
:mod:`.shapes` (``--arg``/``--dim``/annotations), :mod:`.standalone` (module constants for
written modules), :mod:`.highlight` (ANSI colors).
"""

from .tool import build_parser, main

__all__ = ["build_parser", "main"]
