"""Generated module text: its one-line ``import *`` headers, one parse for its registrations, and the
ANF text split out only when asked (the first-call work around writing derivative / batched source)."""

import ast
import linecache

import numpy as np

import srcjax
from srcjax import adjoint, batched
from srcjax.frontend import read
from srcjax.frontend.ast_walk import imported_names
from srcjax.transforms.readable import readable_source
from srcjax.transforms.readable_facts import guard_rewrites
from srcjax.transforms.readable_names import renumber

STAR = "import numpy as np\nfrom srcjax.adjoint import *\n"
LISTED = "import numpy as np\nfrom srcjax.adjoint import " + ", ".join(adjoint.__all__) + "\n"


def _body(text):
    return text.split("\n", 2)[2]


def test_star_import_binds_the_modules_all():
    assert imported_names(ast.parse("from srcjax.adjoint import *").body[0]) == list(adjoint.__all__)
    assert imported_names(ast.parse("from srcjax.batched import *").body[0]) == list(batched.__all__)
    assert imported_names(ast.parse("from srcjax.adjoint import a as b, c").body[0]) == ["b", "c"]
    assert imported_names(ast.parse("import os.path").body[0]) == ["os"]


def test_renumbering_never_takes_a_helper_name_under_a_star_header():
    body = "\n\ndef f(x):\n    zeros_like_1 = x + 1\n    sub_2 = zeros_like_1 * 2\n    return sub_2\n"
    star, listed = renumber(STAR + body), renumber(LISTED + body)
    assert _body(star) == _body(listed)
    assert "zeros_like_1 = x + 1" in star and "sub = zeros_like_1 * 2" in star


def test_readable_passes_read_the_same_helpers_from_either_header():
    def loss(x):
        return np.sum(np.tanh(x) ** 2) * 3.0

    g = srcjax.grad(loss)
    anf = srcjax.source(g, form="anf")
    fn_text = anf[anf.index("def loss_grad"):]
    assert "is_float(" in fn_text  # (the guard rewrites apply: they need the helpers imported)
    pure = set(adjoint.__all__)
    for rewrite in (guard_rewrites, lambda t: readable_source(t, pure)):
        assert _body(rewrite(STAR + "\n\n" + fn_text)) == _body(rewrite(LISTED + "\n\n" + fn_text))


def test_generated_module_is_registered_from_one_parse_and_runs():
    def f(x):
        return np.sum(np.sin(x) * x)

    g = srcjax.grad(f)
    x = np.linspace(0.1, 1.0, 5)
    np.testing.assert_allclose(np.asarray(g(x)), np.cos(x) * x + np.sin(x), rtol=1e-12)
    fn = g.fn
    filename = fn.__code__.co_filename
    text = "".join(linecache.getlines(filename))
    assert text.startswith("import numpy as np\nfrom srcjax.adjoint import *\n")
    ends = read._ENDS[filename][(len(text), hash(text))]  # noted when the module was loaded
    first = fn.__code__.co_firstlineno
    assert text.splitlines()[first - 1].startswith("def f_grad(")
    assert ends[first] == len(text.rstrip("\n").splitlines())
    np.testing.assert_allclose(fn(x), np.cos(x) * x + np.sin(x), rtol=1e-12)  # (the text runs under NumPy)


def test_anf_text_is_split_out_when_asked():
    def h(x):
        return np.sum((x[1:] - x[:-1] ** 2) ** 2)

    g = srcjax.grad(h)
    readable, anf = srcjax.source(g), srcjax.source(g, form="anf")
    assert anf != readable and len(anf.splitlines()) > len(readable.splitlines())
    assert read.anf_text(g.fn) is not None and read.anf_text(g.fn).startswith("def h_grad(")
    ns = {}
    exec(anf, ns)  # the ANF form runs too, with the same numbers
    x = np.linspace(-1.0, 1.0, 6)
    np.testing.assert_allclose(ns["h_grad"](x), np.asarray(g(x)), rtol=1e-12)


def test_positions_are_libcsts_for_every_node_but_whitespace():
    import inspect

    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    module = cst.parse_module(inspect.getsource(adjoint))
    ref = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ours = read._positions(module)
    checked = 0
    for node, r in ref.items():
        if type(node) in read._WHITESPACE:
            assert node not in ours
            continue
        assert ours[node] == (r.start.line, r.start.column, r.end.line, r.end.column), node
        checked += 1
    assert checked > 5000


def test_forgetting_a_module_drops_its_line_tables_alone_in_one_step():
    """A module's line tables are forgotten by one pop of its file name (a finalizer runs it: the scan over every
    module's tables it replaced raised 'dictionary changed size during iteration' when a collection inside the
    scan ran another module's finalizer, and left the tables behind)."""
    import ast

    a, b = "<srcjax.test_forget_a>", "<srcjax.test_forget_b>"
    text = "def f(x):\n    return x\n"
    read.note_generated(a, text, ast.parse(text))
    read.note_generated(b, text, ast.parse(text))
    read.note_generated(a, text + "\n", ast.parse(text))  # (a second text under the same name)
    assert len(read._ENDS[a]) == 2 and b in read._ENDS
    read.forget_generated(a)
    assert a not in read._ENDS and read._ENDS[b] == {(len(text), hash(text)): {1: 2}}
    read.forget_generated(b)
    assert b not in read._ENDS
