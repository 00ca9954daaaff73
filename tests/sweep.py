"""A large sample of random programs with control flow on data, outside pytest: every failure, not the first.

    python -m tests.sweep --count 3000 --seed 0 [--no-xla] [--only jvp,grad] [--oracle jax] [--out FILE]

Program ``s`` is ``write_data_program(RandomChoices(s))`` for ``s`` in ``seed .. seed + count - 1``
(the same program for the same seed on any machine), at arguments drawn from ``s``. Each
transformation (grad, jvp, vjp, hessian; see ``tests/written.py``), compiled by XLA and run as
generated source by NumPy, is compared with central differences of the program run by NumPy
(cheap); a disagreement is then checked against jax, which decides (central differences are wrong
across a branch or a kink). ``--oracle jax`` asks jax every time. Nothing stops at a failure: the
report lists each one with its seed, transformation, error and the program's source, then a summary
of the failures grouped by transformation and message.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from tests.written import TRANSFORMS, RandomChoices, check_transforms, numpy_and_jax, run_numpy, write_data_program


def message(e: BaseException) -> str:
    for ln in str(e).strip().splitlines():  # assert_allclose: "Not equal to tolerance ...": keep the oracle's name
        if ln.strip() and not ln.startswith("Not equal"):
            return f"{type(e).__name__}: {ln.strip()[:200]}"
    return type(e).__name__


def group(what: str, line: str) -> str:
    """A failure's class: the message without file names, positions, numbers and quoted source."""
    line = re.sub(r"(/\S+\.py|<[^>]*>):\d+:\d+", "FILE", line)
    line = re.sub(r"`[^`]*`", "`...`", line)
    line = re.sub(r"\b\d+\b", "N", line)
    line = re.sub(r" \[N\]", "", line)
    return f"{what:8s} {line[:110]}"


def check(what: str, f: Any, jf: Any, args: tuple[np.ndarray, ...], s: int, xla: bool, oracle: str,
          hessian_size: int) -> tuple[str, str] | None:
    """None, or (the failure's message, the details)."""
    try:
        check_transforms(f, jf, args, s, [what], hessian_size, xla, screen=oracle == "fd")
    except AssertionError as e:
        return message(e), str(e)
    except Exception as e:  # noqa: BLE001 (every failure is reported)
        return message(e), "".join(traceback.format_exception(e)[-6:])
    return None


def reduce(text: str, shapes: dict[str, tuple[int, ...]], s: int, what: str, key: str, xla: bool,
           oracle: str, hessian_size: int, directory: Path) -> str:
    """A shorter program that fails in the same class: statements (with their blocks) and terms of
    the returned sum dropped one at a time while the failure stays."""
    def fails(candidate: str) -> bool:
        try:
            f, jf = numpy_and_jax(directory, candidate, f"reduce{s}")
            args = tuple(np.random.default_rng(s).standard_normal(shape) for shape in shapes.values())
            value = run_numpy(f, args)
            if value is None or abs(value) > 1e6:
                return False
            failed = check(what, f, jf, args, s, xla, oracle, hessian_size)
        except Exception:  # noqa: BLE001 (the candidate is not a valid program)
            return False
        return failed is not None and group(what, failed[0]) == key

    lines = text.splitlines()
    changed = True
    while changed:
        changed = False
        body = [i for i, ln in enumerate(lines) if ln.startswith("    ") and not ln.strip().startswith("return")]
        for i in reversed(body):
            depth = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            while j < len(lines) and len(lines[j]) - len(lines[j].lstrip()) > depth:
                j += 1
            candidate = lines[:i] + lines[j:]
            if lines[i].strip() == "else:":
                candidate = lines[:i] + lines[j:]
            if fails("\n".join(candidate) + "\n"):
                lines, changed = candidate, True
                break
        ret = next(i for i, ln in enumerate(lines) if ln.strip().startswith("return "))
        terms = lines[ret].strip()[len("return "):].split(" + ")
        for t in range(len(terms)) if len(terms) > 1 else []:
            candidate = lines[:ret] + ["    return " + " + ".join(terms[:t] + terms[t + 1:])] + lines[ret + 1:]
            if fails("\n".join(candidate) + "\n"):
                lines, changed = candidate, True
                break
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", default=None, help="comma-separated seeds instead of --count/--seed")
    p.add_argument("--only", default=",".join(TRANSFORMS), help="comma-separated: grad,jvp,vjp,hessian")
    p.add_argument("--no-xla", action="store_true", help="run the generated source by NumPy only (faster)")
    p.add_argument("--oracle", choices=["fd", "jax"], default="fd")
    p.add_argument("--max-steps", type=int, default=8)
    p.add_argument("--hessian-size", type=int, default=12, help="the largest first argument for hessian")
    p.add_argument("--out", default=None, help="write the failures (with sources) here too")
    p.add_argument("--reduce", action="store_true", help="shorten each failing program (slow)")
    a = p.parse_args(argv)
    which = [w for w in a.only.split(",") if w]
    directory = Path(tempfile.mkdtemp(prefix="srcjax_sweep_"))
    failures: list[tuple[int, str, str]] = []
    skipped = 0
    start = time.time()
    out = open(a.out, "w") if a.out else None  # noqa: SIM115
    seeds = [int(v) for v in a.seeds.split(",")] if a.seeds else list(range(a.seed, a.seed + a.count))
    for n, s in enumerate(seeds):
        text, shapes = write_data_program(RandomChoices(s), a.max_steps)
        f, jf = numpy_and_jax(directory, text, f"sweep{s}")
        args = tuple(np.random.default_rng(s).standard_normal(shape) for shape in shapes.values())
        value = run_numpy(f, args)
        if value is None or abs(value) > 1e6:
            skipped += 1
            continue
        for w in which:
            failed = check(w, f, jf, args, s, not a.no_xla, a.oracle, a.hessian_size)
            if failed is None:
                continue
            line, details = failed
            failures.append((s, w, line))
            report = f"== seed {s}: {w}: {line}\n{text}{details}\n"
            if a.reduce:
                report += "-- reduced:\n" + reduce(text, shapes, s, w, group(w, line), not a.no_xla, a.oracle,
                                                    a.hessian_size, directory) + f"-- shapes {shapes}\n"
            print(report, flush=True)
            if out:
                out.write(report + "\n")
                out.flush()
        if (n + 1) % 25 == 0:
            print(f"-- {n + 1} programs, {len(failures)} failures, {time.time() - start:.0f} s",
                  file=sys.stderr, flush=True)
    groups: dict[str, list[int]] = collections.defaultdict(list)
    for s, w, line in failures:
        groups[group(w, line)].append(s)
    summary = [f"{len(seeds)} programs (seeds {seeds[0]}..{seeds[-1]}), {skipped} skipped (not finite "
               f"or huge), {len({s for s, *_ in failures})} with a failure, {time.time() - start:.0f} s"]
    for key, seeds in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        summary.append(f"{len(seeds):5d}  {key}   seeds {seeds[:10]}")
    print("\n".join(summary))
    if out:
        out.write("\n".join(summary) + "\n")
        out.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
