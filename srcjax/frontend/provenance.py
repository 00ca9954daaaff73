"""Provenance of generated lines: the user's statement each line a writer writes comes from.

A writer that turns a user's (normalized) statement into lines of generated source (vmap's batch writers, the jvp
writer) marks each simple statement it writes with that statement's span (:func:`mark`: a comment ``#@k`` at the
line's end; ``k`` numbers the span in this process, so a helper's text reused by another module keeps its marks'
meaning). The text passes after the writer (the simplifier, the readable form) edit statements by their positions
and leave a line's end as it is, so a statement that survives keeps its mark; one folded into another keeps the
survivor's. :func:`unmark` takes the marks off the final text (what ``srcjax.source`` prints is unchanged) and gives
each marked line's span, which ``locations.register`` puts before what it infers from names: a refusal raised in
generated code (``b = in_place(b, ...)`` of the user's ``b -= 1.0``) is located at the user's statement, not at the
statement that bound the same name last.
"""

from __future__ import annotations

import re
import threading

from ..core import Span
from . import parsed

__all__ = ["blank", "mark", "mark_lines", "strip", "unmark"]

_MARK = re.compile(r"[ \t]*#@(\d+)$")
_MARK_ALONE = re.compile(r"\s*#@\d+\s*")
_SPANS: list[Span] = []  # k -> the span of the marks `#@k` (the user's statements: as many as the user wrote)
_INDEX: dict[Span, int] = {}
_LOCK = threading.Lock()


def mark(line: str, span: Span | None) -> str:
    """``line`` (a simple statement of generated source, indented) marked as written from the user's ``span``;
    as it is where there is no span, or where it is not one simple statement (a header ``for ...:``, which writers
    test for its colon; lines of a multi-line text; a line with a comment or a ``#`` in a string)."""
    if span is None or "\n" in line or "#" in line or line.endswith(":") or line.strip() == "pass":
        return line
    k = _INDEX.get(span)
    if k is None:
        with _LOCK:
            k = _INDEX.setdefault(span, len(_SPANS))
            if k == len(_SPANS):
                _SPANS.append(span)
    return f"{line}  #@{k}"


def blank(text: str, also: str = "") -> bool:
    """Whether ``text`` (what follows a statement on its line) is blank, or ``also``, or a mark alone: the passes
    that fold or drop a statement alone on its line see a marked one as alone."""
    return text.strip() in ("", also) or _MARK_ALONE.fullmatch(text) is not None


def mark_lines(lines: list[str], start: int, span: Span | None) -> None:
    """Mark ``lines[start:]`` (what a writer just wrote for one user statement) as written from ``span``."""
    if span is not None:
        lines[start:] = [mark(ln, span) for ln in lines[start:]]


def unmark(text: str, same_tree: bool = False) -> tuple[str, dict[int, Span]]:
    """``text`` without its marks (a line a mark alone is left on, its statement removed by a pass, is dropped),
    and the span of each marked line of the text returned (1-based line numbers). ``same_tree`` (a module about to
    be read, whose marked text a pass just parsed): the text returned shares the marked text's kept ``ast`` tree
    (``parsed.share``) where only comments went (no line dropped, none inside a string): a mark is a comment at a
    line's end, which moves no node, so the text is not parsed again."""
    if "#@" not in text:
        return text, {}
    out: list[str] = []
    lines: dict[int, Span] = {}
    dropped = False
    for line in text.split("\n"):
        m = _MARK.search(line)
        if m is None:
            out.append(line)
            continue
        kept = line[:m.start()]
        if not kept.strip():
            dropped = True
            continue
        out.append(kept)
        if (k := int(m.group(1))) < len(_SPANS):  # (always: texts kept across processes are kept unmarked)
            lines[len(out)] = _SPANS[k]
    unmarked = "\n".join(out)
    if same_tree and not dropped and not _goes_on(text):
        parsed.share(text, unmarked)
    return unmarked, lines


def _goes_on(text: str) -> bool:
    """Whether a line of ``text`` may end inside a string (a triple-quoted one, or a backslash before the line's end):
    a "mark" there would be the string's text."""
    return '"""' in text or "'''" in text or "\\\n" in text


def strip(text: str, same_tree: bool = False) -> str:
    """``text`` without its marks (``same_tree``: as :func:`unmark`'s)."""
    return unmark(text, same_tree)[0]
