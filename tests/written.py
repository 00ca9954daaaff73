"""Random programs written as text: imported from a file (srcjax reads their source) with a jax twin."""

import hashlib
import importlib.util
from typing import Any


def numpy_and_jax(directory: Any, text: str, prefix: str) -> tuple[Any, Any]:
    """``text`` (a module that does ``import numpy as np`` and defines ``f``) written to ``directory``
    and imported, and the same source run with ``jax.numpy`` as ``np``: the two ``f``s."""
    path = directory / f"{prefix}_{hashlib.sha1(text.encode()).hexdigest()[:12]}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ns: dict[str, Any] = {}
    exec(compile(text.replace("import numpy as np", "import jax.numpy as np"), str(path), "exec"), ns)
    return mod.f, ns["f"]
