"""One Python process that runs ``python -m srcjax ARGS`` again and again (tests/test_cli.py).

Each new ``python -m srcjax`` paid Python's start and srcjax's import (about 0.8 CPU s, most of
tests/test_cli.py's time). This process pays them once: for each request (a JSON line on stdin: the
arguments and the environment) it runs ``srcjax/__main__.py`` as ``-m`` does (``runpy``: its
``sys.exit(main())``), with file descriptors 1 and 2 pointed at files of their own (what Python and C
code print, as a subprocess's pipes hold it), and answers on the descriptor its argument names: the
exit status, stdout and stderr. An exception that escapes prints its traceback and exits 1, as Python
does. The modules a request imported from outside srcjax and the Python installation (the user's files) are
forgotten after it and ``sys.path`` restored: the next request imports its files afresh.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import tempfile
import traceback

_SRCJAX = ""  # srcjax's directory


def _serve_one(request: dict) -> dict:
    modules, path = set(sys.modules), list(sys.path)
    try:
        return _run(request)
    finally:  # the next request imports its files afresh, as a new process would
        for name in set(sys.modules) - modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file and not file.startswith((sys.prefix, sys.base_prefix, _SRCJAX)):
                del sys.modules[name]
        sys.path[:] = path


def _run(request: dict) -> dict:
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [os.path.join(_SRCJAX, "__main__.py"), *request["argv"]]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            try:
                runpy.run_module("srcjax", run_name="__main__", alter_sys=True)
                rc = 0
            except SystemExit as e:
                code = e.code
                rc = 0 if code is None else code if isinstance(code, int) else 1
                if not isinstance(code, (int, type(None))):
                    print(code, file=sys.stderr)
            except BaseException:  # noqa: BLE001 - what escapes `python -m srcjax`: its traceback, status 1
                traceback.print_exc()
                rc = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return {"rc": rc, "stdout": out.read().decode(), "stderr": err.read().decode()}


def main() -> None:
    global _SRCJAX
    import srcjax  # imported once, before the first request

    _SRCJAX = os.path.dirname(srcjax.__file__)
    replies = os.fdopen(int(sys.argv[1]), "w")
    for line in sys.stdin:
        replies.write(json.dumps(_serve_one(json.loads(line))) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
