"""srcjax-transpile (also ``python -m srcjax``): what srcjax generates for a function, stage by stage.

Modules: :mod:`.tool` (arguments, loading the file, the stages, errors),
:mod:`.listing` (``--list``), :mod:`.shapes` (``--arg``/``--dim``/annotations),
:mod:`.standalone` (module constants for written modules), :mod:`.highlight`
(ANSI colors).
"""

from .tool import build_parser, main

__all__ = ["build_parser", "main"]
