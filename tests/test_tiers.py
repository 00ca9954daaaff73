"""tests/tiers.py names test functions that exist (a renamed test must not silently rejoin the default tier).
The parametrization ids were checked against `pytest --collect-only` when listed."""

from __future__ import annotations

import re
from pathlib import Path

from tests import tiers

ROOT = Path(__file__).resolve().parent.parent


def test_every_tiered_test_exists() -> None:
    for node in [*tiers.THOROUGH_ONLY, *tiers.SAMPLED]:
        path, name = node.split("::", 1)
        text = (ROOT / path).read_text()
        base = re.escape(name.split("[", 1)[0])
        # (a def, or a module-level assignment: a corpus's `test_x, test_x_thorough = CORPUS.tests(...)`)
        assert re.search(rf"^(def {base}\(|{base}\b[^=\n]*=)", text, re.M), node
