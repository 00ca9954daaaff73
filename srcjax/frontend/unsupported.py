"""The statements and expressions compiled functions do not take, each with what to write instead: the normalizer
refuses them at the user's line (``srcjax.UnsupportedSyntaxError``)."""

from __future__ import annotations

import libcst as cst

__all__ = ["UNSUPPORTED_EXPRESSIONS", "UNSUPPORTED_STATEMENTS"]

UNSUPPORTED_STATEMENTS = {
    cst.Try: ("try/except", "remove it: errors inside compiled code cannot be caught"),
    cst.TryStar: ("try/except*", "remove it: errors inside compiled code cannot be caught"),
    cst.With: ("with", "move the context manager outside the compiled function"),
    cst.ClassDef: ("class definitions", "define classes outside the function"),
    cst.Global: ("global", "pass the value as an argument and return the new value"),
    cst.Nonlocal: ("nonlocal", "pass the value as an argument and return the new value"),
    **dict.fromkeys((cst.Import, cst.ImportFrom), ("import inside a function", "import at module level")),
    cst.Del: ("del", "just stop using the name"),
}
UNSUPPORTED_EXPRESSIONS = {
    cst.Lambda: ("a lambda inside a comprehension or a kept-nested expression",
                 "assign it to a name first (f = lambda y: ...) or define it with `def`"),
    cst.Yield: ("yield", "return the values (e.g. stacked with np.stack)"),
    cst.Await: ("await", "compiled functions are synchronous"),
    cst.NamedExpr: ("the walrus operator `:=`", "assign in a separate statement"),
    cst.SetComp: ("set comprehensions", "use a list or tuple"),
    cst.Set: ("sets", "use a tuple"),
}
