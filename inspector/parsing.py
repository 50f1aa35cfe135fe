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

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename)
