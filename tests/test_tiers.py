"""tests/tiers.py names test functions that exist (a renamed test must not silently rejoin the default tier).
The parametrization ids were checked against `pytest --collect-only` when listed."""

from __future__ import annotations

import re
from pathlib import Path

from tests import tiers

ROOT = Path(__file__).resolve().parent.parent


def test_every_tiered_test_exists() -> None:
    for node in [*tiers.THOROUGH_ONLY, *tiers.SAMPLED, *tiers.COVER]:
        path, name = node.split("::", 1)
        text = (ROOT / path).read_text()
        base = re.escape(name.split("[", 1)[0])
        # (a def, or a module-level assignment: a corpus's `test_x, test_x_thorough = CORPUS.tests(...)`)
        assert re.search(rf"^(def {base}\(|{base}\b[^=\n]*=)", text, re.M), node


def test_covering_keeps_the_first_case_of_every_class() -> None:
    """A case runs when it is the first of one of its classes; a case left out names an earlier case."""
    classes = [("add", "f32"), ("add", "f64"), ("add", "f32"), ("mul", "f32"), ("mul", "f64"), ("mul", "f64"), ()]
    assert tiers.covering(classes) == {2: 0, 4: 3, 5: 3}
    kept = [c for i, c in enumerate(classes) if i not in tiers.covering(classes)]
    assert {x for c in kept for x in c} == {x for c in classes for x in c}


def test_rule_branches_tell_apart_what_picks_a_branch() -> None:
    """tests/test_ad_rules.py's cases: another reduction, index or keyword is another class; other shapes are not."""
    def branch(case: str) -> tuple[str, ...]:
        return tiers._rule_branch(case, {})

    assert branch("reduce_window:lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 2), 'SAME'):(5, 6)") != \
        branch("reduce_window:lax.reduce_window(x, -np.inf, lax.max, (2, 3), (2, 1), 'SAME'):(5, 6)")
    assert branch("index_update:index_update(x, np.s_[1:3], y):(4, 2)x(2,)") != \
        branch("index_update:index_update(x, 2, y):(4, 2)x()")
    assert branch("matmul:x @ y:(2, 3)x(3,)") == branch("matmul:x @ y:(3,)x(3, 2)")
    assert branch("dot:np.dot(x, y):()x(2, 3)") != branch("matmul:np.dot(x, y):()x(2, 3)")
