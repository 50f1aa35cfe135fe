"""``ast.parse`` behind one lock, for code that parses in threads.

CPython 3.11 counts the AST constructor's recursion depth in the interpreter, not per thread:
two threads converting parse trees at once (the GIL can change hands inside one conversion)
can fail with ``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905).
``main.py mutate`` judges its mutants in worker threads, each of which parses kernel sources;
every such parse goes through :func:`parse`.
"""

from __future__ import annotations

import ast
import threading
import time

_LOCK = threading.Lock()


#: Parses tried before the mismatch propagates: a parse elsewhere in the process that does not
#: take the lock (a library's) can still overlap one; the check runs after the tree is built,
#: so a parse that tripped it can simply run again.
ATTEMPTS = 5


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time, again on the 3.11 mismatch.

    Raises:
        SyntaxError: as ``ast.parse``.
        SystemError: the mismatch, ``ATTEMPTS`` times in a row.
    """
    for attempt in range(ATTEMPTS):
        with _LOCK:
            try:
                return ast.parse(source, filename)
            except SystemError as err:
                if "recursion depth mismatch" not in str(err) or attempt == ATTEMPTS - 1:
                    raise
        time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover
