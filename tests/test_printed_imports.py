"""Names a function's module imported (``from math import pi as PI``, ``from mymod import SCALE``, a module
imported under another name) are imported by the printed module too (srcjax/frontend/imported_names.py): the
printed module of each transformation runs by itself, in a namespace holding nothing of the user's module
(it read ``PI`` with no definition: a NameError)."""

from __future__ import annotations

from math import pi as PI
from math import tau

import numpy as np
import pytest

import srcjax

from . import printed_constants as pc
from .printed_constants import OFFSET, SCALE


def uses_imported(x):
    return np.sum(np.sin(PI * x) * SCALE) + tau * np.sum((x - OFFSET) ** 2) + pc.SCALE * np.sum(x)


def _run(text: str, name: str, *args):
    ns: dict = {"__name__": "printed"}
    exec(compile(text, "<printed>", "exec"), ns)
    return ns[name](*args)


@pytest.mark.parametrize("how", ["jit", "grad", "vmap"])
def test_printed_module_runs_by_itself(how):
    x = np.array([0.1, 0.7, -0.3])
    f = getattr(srcjax, how)(uses_imported)
    text = srcjax.source(f)
    assert "from math import pi as PI, tau\n" in text and "from tests import printed_constants as pc\n" in text
    assert "from tests.printed_constants import OFFSET, SCALE\n" in text
    arg = np.stack([x, 2 * x]) if how == "vmap" else x
    name = {"jit": "uses_imported", "grad": "uses_imported_grad", "vmap": "uses_imported_vmap"}[how]
    np.testing.assert_allclose(_run(text, name, arg), f(arg), rtol=1e-12)


def test_import_lines_without_a_parse_agree_with_the_parse():
    """``import_lines`` answers "" without parsing the module when no name the user's module imports is written
    in it (other than ones the header imports itself): the same answer as the parse gives, on texts reading one,
    none, or one only in the header."""
    from srcjax.frontend import imported_names

    ns = [globals()]
    header = "import numpy as np\nimport srcjax\n"
    cases = {"def f(x):\n    return np.sin(x) * PI\n": "from math import pi as PI\n",
             "def f(x):\n    return np.sin(x)\n": "",  # `np`: imported by the user's module and by the header
             "def f(x, PI):\n    return x * PI\n": "",  # a word, bound by the text: the parse says so
             "def f(x):\n    return x * pc.SCALE + SCALE\n":
                 "from tests import printed_constants as pc\nfrom tests.printed_constants import SCALE\n"}
    for text, want in cases.items():
        assert imported_names.import_lines(header, text, ns) == want
        assert imported_names._may_read_imported(header, text, ns) == ("np.sin(x)\n" not in text)
