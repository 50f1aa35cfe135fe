"""inspector/coverage/parsing.py: the threads of ``main.py mutate`` parse one at a time (CPython
3.11's AST constructor fails when two convert at once: gh-106905)."""

from __future__ import annotations

import ast
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from inspector.coverage import parsing


def test_parses_never_overlap_and_give_the_tree(monkeypatch) -> None:
    inside, most = [0], [0]
    guard = threading.Lock()
    real = ast.parse

    def slow_parse(source, filename="<unknown>"):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)  # long enough for the other threads to arrive
        try:
            return real(source, filename)
        finally:
            with guard:
                inside[0] -= 1

    monkeypatch.setattr(parsing.ast, "parse", slow_parse)
    with ThreadPoolExecutor(max_workers=8) as pool:
        trees = list(pool.map(lambda i: parsing.parse(f"x = {i}\n"), range(32)))
    assert most[0] == 1
    assert [tree.body[0].value.value for tree in trees] == list(range(32))


def test_the_mismatch_is_parsed_again_and_other_errors_are_not(monkeypatch) -> None:
    real, calls = ast.parse, []

    def flaky(source, filename="<unknown>"):
        calls.append(source)
        if len(calls) < 3:
            raise SystemError("AST constructor recursion depth mismatch (before=24, after=50)")
        return real(source, filename)

    monkeypatch.setattr(parsing.ast, "parse", flaky)
    assert parsing.parse("x = 1\n").body[0].value.value == 1
    assert len(calls) == 3

    def always(source, filename="<unknown>"):
        raise SystemError("AST constructor recursion depth mismatch (before=1, after=2)")

    monkeypatch.setattr(parsing.ast, "parse", always)
    with pytest.raises(SystemError, match="mismatch"):
        parsing.parse("x = 1\n")

    def other(source, filename="<unknown>"):
        calls.append(source)
        raise SystemError("something else")

    calls.clear()
    monkeypatch.setattr(parsing.ast, "parse", other)
    with pytest.raises(SystemError, match="something else"):
        parsing.parse("x = 1\n")
    assert len(calls) == 1
