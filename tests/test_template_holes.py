"""transforms/templates.py: an instantiated derivative template written by filling its holes with names is the
text the tree's way (rename, fold, print) writes, for every template of every primitive's record."""

from __future__ import annotations

import itertools

import libcst as cst

from srcjax.frontend.names import code, renamed
from srcjax.primitives import registry
from srcjax.transforms import templates
from srcjax.transforms.templates import _fold, _named, _partly_named, expr, instantiate


def _templates() -> list[str]:
    found: dict[str, None] = {}
    for prim in registry.PRIMITIVES.values():
        for t in [*prim.jvp.values(), *prim.vjp.values(), *([prim.jvp_joint] if prim.jvp_joint else [])]:
            if isinstance(t, str):
                found[t] = None
    return list(found)


def _tree_way(template: str, mapping: dict[str, str], unique: frozenset[str] = frozenset()) -> str:
    tree = templates.parse_expression(template)
    return code(_fold(renamed(tree, {k: expr(v) for k, v in mapping.items()}), unique))


def test_filled_holes_are_the_tree_way() -> None:
    names = ("g_bar", "x", "getitem_1", "out_bar", "mul_2")
    checked = filled = 0
    for template in _templates():
        tree = templates.parse_expression(template)
        own = sorted({n.value for n in templates.walk(tree) if type(n) is cst.Name})
        # each of the template's names given a name, or left as it is (np, helpers, None), in a few patterns
        for k, pattern in enumerate(itertools.islice(itertools.product((True, False), repeat=len(own)), 6)):
            mapping = {n: names[(i + k) % len(names)] for i, (n, on) in enumerate(zip(own, pattern)) if on}
            given = tuple(mapping.get(n) for n in own)
            got = _named(template, tuple(own), given)
            want = _tree_way(template, mapping)
            checked += 1
            if got is not None:
                filled += 1
                assert got == want, (template, mapping)
            assert instantiate(template, mapping) == want, (template, mapping)
    assert checked > 500 and filled > checked // 3  # (most instantiations take the holes' way)


def test_holes_refused_where_names_fold() -> None:
    # a literal given (folds: 2 - 1), a keyword (None drops dtype=None), a keyed call (folds by its key)
    assert _named("x2 - 1", ("x2",), ("2",)) is None
    assert instantiate("x2 - 1", {"x2": "2"}) == "1"
    assert _named("np.zeros(s, dtype=d)", ("d", "np", "s"), ("None", None, "n")) is None
    assert instantiate("np.zeros(s, dtype=d)", {"d": "None", "s": "n"}) == "np.zeros(n)"
    t = "winning_writes(x, k)"
    assert _named(t, ("k", "winning_writes", "x"), ("i", None, "y")) is None
    # (an integer name's write may fall out of range at run time and drop: whether it lands, not True)
    assert instantiate(t, {"x": "y", "k": "i"}, frozenset({"i"})) == "index_lands(y, i)"
    assert instantiate(t, {"x": "y", "k": "j"}, frozenset({"i"})) == "winning_writes(y, j)"


def test_literals_folded_with_holes_are_the_tree_way() -> None:
    """A template given literals, keywords or expressions for some names and names for the others
    (``x1_dot * x2`` with ``x2`` -> ``2``) is written from the template folded with those texts and holes for
    the names: the tree's way's text, for every template of every primitive's record, names and texts in a
    few patterns, with and without ``unique`` names (a template calling winning_writes, tree_get or
    index_cleared, whose folding reads the names: the tree's way)."""
    texts = ("2", "1", "0", "None", "False", "1.0", "-1", "np.s_[1:]", "x[0]", "a + b", "np")
    names = ("g_bar", "x", "getitem_1", "out_bar", "mul_2")
    checked = filled = 0
    for template in _templates():
        tree = templates.parse_expression(template)
        own = tuple(sorted({n.value for n in templates.walk(tree) if type(n) is cst.Name}))
        for k in range(4):
            mapping = {n: (texts[(i + k) % len(texts)] if (i + k) % 3 == 0 else names[(i + k) % len(names)])
                       for i, n in enumerate(own) if (i + k) % 4 != 3}
            given = tuple(mapping.get(n) for n in own)
            for unique in (frozenset(), frozenset({"x", "getitem_1"})):
                want = _tree_way(template, mapping, unique)
                got = _partly_named(template, own, given)
                checked += 1
                if got is not None:
                    filled += 1
                    assert got == want, (template, mapping, unique)
                assert instantiate(template, mapping, unique) == want, (template, mapping, unique)
    assert checked > 500 and filled > checked // 2
    assert _partly_named("x2 - 1", ("x2",), ("2",)) == "1"
    assert _partly_named("np.zeros(s, dtype=d)", ("d", "np", "s"), ("None", None, "n")) == "np.zeros(n)"
    assert _partly_named("winning_writes(x, k)", ("k", "winning_writes", "x"), ("0", None, "y")) is None
    assert _partly_named("x * y", ("x", "y"), ("__srcjax_hole_0__ + 1", "2")) is None
    assert _partly_named("x * y", ("x", "y"), ("(", "2")) is None  # (does not parse: the tree's way, its error)


def _new_process(monkeypatch) -> None:
    """This process's tables of templates emptied, as in a new process."""
    from srcjax.transforms import template_holes

    for table in ("_TEMPLATE_NAMES", "_HOLES", "_LITERAL_HOLES", "_INSTANCES", "_TEMPLATE_CACHE"):
        monkeypatch.setattr(templates, table, {})
    monkeypatch.setattr(template_holes, "_STATE", {"loaded": False, "pending": False})


def test_a_new_process_finds_the_holes_on_the_disk(tmp_path, monkeypatch):
    """The holed templates an earlier process found are read from the persistent cache: the same
    instantiations, without parsing the templates again; a corrupt entry is ignored."""
    from srcjax.runtime import disk_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    _new_process(monkeypatch)
    cases = [(t, {n: f"v{i}_{j}" for j, n in enumerate(sorted(
        {m.value for m in templates.walk(templates.parse_expression(t)) if type(m) is cst.Name}))})
        for i, t in enumerate(_templates()[:40])]
    want = [instantiate(t, m) for t, m in cases]
    disk_cache.flush()
    (entry,) = (tmp_path / "cache").glob("*.tmpl")
    _new_process(monkeypatch)

    def refused(text: str) -> None:
        raise AssertionError(f"parsed {text!r} again")

    parse = templates.parse_expression
    monkeypatch.setattr(templates, "parse_expression", refused)
    templates.template_holes.load(templates._TEMPLATE_NAMES, templates._HOLES, templates._LITERAL_HOLES)
    filled = [(t, m) for t, m in cases if templates._HOLES.get((t, tuple(True for _ in m))) is not None]
    assert len(filled) > 10
    for t, m in filled:
        assert instantiate(t, m) == want[cases.index((t, m))]
    entry.write_bytes(entry.read_bytes()[:-7] + b"garbage")  # (its checksum no longer matches)
    _new_process(monkeypatch)
    monkeypatch.setattr(templates, "parse_expression", parse)
    assert [instantiate(t, m) for t, m in cases] == want


def test_a_new_process_finds_the_literal_holes_on_the_disk(tmp_path, monkeypatch):
    """Templates given literals for some names (``x2`` -> ``2``), folded with holes for the others, are read
    from the persistent cache by a new process: the same text, without parsing the template or the literal."""
    from srcjax.runtime import disk_cache

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    _new_process(monkeypatch)
    cases = [("x2 - 1", {"x2": "2"}), ("x1_dot * x2", {"x1_dot": "neg_1_dot", "x2": "2"}),
             ("np.sum(a_dot, axis=axis, dtype=dtype, keepdims=keepdims)",
              {"a_dot": "add_dot", "axis": "None", "dtype": "None", "keepdims": "False"}),
             ("index_add(zeros_like(x), key, out_bar)", {"key": "np.s_[1:]", "out_bar": "g_bar", "x": "x"})]
    want = [instantiate(t, m) for t, m in cases]
    assert want[:3] == ["1", "neg_1_dot * 2", "np.sum(add_dot, axis=None, keepdims=False)"]
    disk_cache.flush()
    _new_process(monkeypatch)

    def refused(text: str) -> None:
        raise AssertionError(f"parsed {text!r} again")

    monkeypatch.setattr(templates, "parse_expression", refused)
    assert [instantiate(t, {k: v.replace("neg_1", "other") for k, v in m.items()}) for t, m in cases] == \
        [w.replace("neg_1", "other") for w in want]
