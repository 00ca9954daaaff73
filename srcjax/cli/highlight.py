"""ANSI colors for the CLI: Python source (``tokenize``), StableHLO / HLO text (a few regexes), errors.

Every function only inserts escape sequences: removing them (:func:`strip`)
gives back exactly the text it was given.
"""

from __future__ import annotations

import builtins
import io
import keyword
import os
import re
import tokenize
from typing import TextIO

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
BLUE = "\x1b[34m"
MAGENTA = "\x1b[35m"
CYAN = "\x1b[36m"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip(text: str) -> str:
    return _ANSI.sub("", text)


def want_color(mode: str, stream: TextIO) -> bool:
    """``--color always|never|auto``; auto: a terminal, unless NO_COLOR is set (https://no-color.org)."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, color: str) -> str:
    """``text`` in ``color``, line by line (so every line stands alone in a pager)."""
    if not text or not color:
        return text
    return "\n".join(f"{color}{part}{RESET}" if part else part for part in text.split("\n"))


# ---------------------------------------------------------------------------
# Python
# ---------------------------------------------------------------------------

_BUILTINS = frozenset(dir(builtins))
_STRINGS = {tokenize.STRING} | {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                                if hasattr(tokenize, n)}


def python(text: str) -> str:
    """Python source with keywords, definitions, calls, strings, numbers and comments colored."""
    starts = [0]
    for line in text.splitlines(True):
        starts.append(starts[-1] + len(line))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    out: list[str] = []
    pos = 0
    prev = ""
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.ENDMARKER or tok.start[0] > len(starts) - 1:
            break
        a = starts[tok.start[0] - 1] + tok.start[1]
        b = starts[tok.end[0] - 1] + tok.end[1]
        if a < pos or b > len(text):
            continue
        color = _python_color(tok, prev, tokens[i + 1] if i + 1 < len(tokens) else None)
        out.append(text[pos:a])
        out.append(paint(text[a:b], color))
        pos = b
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            prev = tok.string
    out.append(text[pos:])
    return "".join(out)


def _python_color(tok: tokenize.TokenInfo, prev: str, nxt: tokenize.TokenInfo | None) -> str:
    if tok.type == tokenize.NAME:
        if prev in ("def", "class"):
            return BOLD + YELLOW
        if keyword.iskeyword(tok.string):
            return BOLD + MAGENTA
        if nxt is not None and nxt.string == "(":
            return BLUE
        if tok.string in _BUILTINS:
            return CYAN
        return ""
    if tok.type in _STRINGS:
        return GREEN
    if tok.type == tokenize.NUMBER:
        return CYAN
    if tok.type == tokenize.COMMENT:
        return DIM
    return ""


# ---------------------------------------------------------------------------
# StableHLO (MLIR) and HLO text
# ---------------------------------------------------------------------------

_HLO = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<type>tensor<[^>\n]*>|\b(?:pred|[suf]\d+|bf16|f8\w*|token)\[[\d,]*\](?:\{[\d,]*\})?)
  | (?P<value>%[\w.\-#]+|\^bb\d+)
  | (?P<symbol>@[\w.]+)
  | (?P<op>\b(?:stablehlo|func|chlo)\.[\w.]+|\b[a-z][\w\-]*(?=\())
  | (?P<keyword>\b(?:HloModule|ENTRY|ROOT|module|attributes|public|private|return)\b)
""", re.S | re.X)

_HLO_COLORS = {"comment": DIM, "string": GREEN, "type": CYAN, "value": YELLOW, "symbol": BOLD + YELLOW,
               "op": BOLD + BLUE, "keyword": BOLD + MAGENTA}


def hlo(text: str) -> str:
    """StableHLO or HLO text with op names, types, SSA values, strings and comments colored."""
    return _HLO.sub(lambda m: paint(m.group(0), _HLO_COLORS[m.lastgroup or ""]), text)


# ---------------------------------------------------------------------------
# Errors (as TranspileError.render() and the CLI write them)
# ---------------------------------------------------------------------------


def error(text: str) -> str:
    """``file:line:col: error: msg`` bold with a red ``error``, the caret green, ``hint:``/``note:`` cyan."""
    out = []
    for line in text.split("\n"):
        m = re.match(r"(.*?)(error|warning)(: .*)", line)
        if m and not line.startswith(" "):
            color = RED if m.group(2) == "error" else MAGENTA
            out.append(f"{BOLD}{m.group(1)}{color}{m.group(2)}{RESET}{BOLD}{m.group(3)}{RESET}")
        elif line.strip() and set(line.strip()) == {"^"}:
            out.append(paint(line, BOLD + GREEN))
        elif line.startswith(("hint:", "note:")):
            head, rest = line.split(":", 1)
            out.append(f"{BOLD}{CYAN}{head}:{RESET}{rest}")
        else:
            out.append(line)
    return "\n".join(out)
