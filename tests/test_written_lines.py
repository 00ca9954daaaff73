"""Facts the derivative writers read from lines they just wrote (``anf.lines_rebound``,
``anf.lines_free_of_loop_targets``): read with ``ast``, the same answers libcst's reading gave."""

from __future__ import annotations

from srcjax.transforms.anf import lines_free_of_loop_targets, lines_rebound

ADJ = [
    "    a_bar = a_bar + x",
    "    (b, (c, *d)) = t.pop()",
    "    e += 1",
    "    y[0] = 2",
    "    for i, p in reversed(list(enumerate(ps))):",
    "        s = s - p * w.v",
    "        if q:",
    "            u = f(k=i, z=None)",
    "        elif r:",
    "            v = True",
    "        else:",
    "            g = lambda h: h + p",
    "    else:",
    "        late = 1",
    "    while m:",
    "        n = n - 1",
]


def test_lines_rebound_assign_and_for_targets_in_nested_blocks() -> None:
    assert lines_rebound(ADJ) == {"a_bar", "b", "c", "d", "i", "p", "s", "u", "v", "g", "n"}
    assert lines_rebound([]) == set()


def test_lines_free_of_loop_targets() -> None:
    got = lines_free_of_loop_targets(ADJ)
    # (not i, p inside their loop; not the attribute v nor the keyword k; True/None/lambda parameters: names)
    assert got == {"a_bar", "x", "b", "c", "d", "t", "e", "y", "reversed", "list", "enumerate", "ps", "s", "w",
                   "q", "u", "f", "None", "r", "v", "True", "g", "h", "m", "n"}
    assert lines_free_of_loop_targets([]) == set()
