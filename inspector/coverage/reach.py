"""Which lines of the kernel's ``@triton.jit`` files each configuration of the coverage map
runs under the Triton interpreter, and so which configurations a mutated statement can act in.

Under the interpreter every program of a launch runs the jit functions as Python, each
rewritten under its own file's name and line numbers, so ``sys.settrace`` sees every line a
proof runs (:class:`LineRecorder`). A source mutant differs from the original kernel in one
statement. Its run of a configuration's proof is the original's run (same inputs, the same
deterministic steps) up to the first time that statement executes; if the original never
executes it there, neither does the mutant, and the proof ends as the original's did. So
``mutate`` proves a fixture survivor only on the configurations whose recorded lines meet the
mutated statement's (:func:`statement_span`, :func:`reaching`), and the verdict is the one the
whole map would give. A compiled launch runs no Python line: there the whole map is proven.

Qt-free.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from inspector.coverage import parsing

#: A statement's place: the file (relative to the ``kernels`` package), its first and last line.
Span = tuple[str, int, int]


def kernel_files() -> dict[str, str]:
    """``{code file name: name relative to the package}`` of the files that hold the imported
    ``kernels`` package's ``@triton.jit`` functions (the names the interpreter runs them under)."""
    import kernels
    from kernels.jit import KERNEL_FUNCTIONS

    package = Path(kernels.__file__).resolve().parent
    files = {}
    for function in KERNEL_FUNCTIONS:
        filename = function.fn.__code__.co_filename
        files[filename] = Path(filename).resolve().relative_to(package).as_posix()
    return files


class LineRecorder:
    """Records the lines of ``files`` (``{code file name: name}``) that run while it is
    entered, as ``lines[name]``. Frames of other files are not traced past their call."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = dict(files)
        self.lines: dict[str, set[int]] = {name: set() for name in self.files.values()}
        self._previous: Any = None

    def __enter__(self) -> LineRecorder:
        self._previous = sys.gettrace()
        sys.settrace(self._tracer())
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)

    def _tracer(self) -> Callable[[FrameType, str, object], Any]:
        # Called on every Python call while entered (the interpreter makes many): a closure
        # with its lookups bound, not a method.
        name_of, lines = self.files.get, self.lines

        def call(frame: FrameType, event: str, arg: object) -> Any:
            name = name_of(frame.f_code.co_filename)
            if name is None:
                return None
            add = lines[name].add

            def line(frame: FrameType, event: str, arg: object) -> Any:
                if event == "line":
                    add(frame.f_lineno)
                return line

            return line

        return call

    def as_json(self) -> dict[str, list[int]]:
        return {name: sorted(lines) for name, lines in sorted(self.lines.items())}


def record(configuration: Any, witness: Any, files: Mapping[str, str]) -> tuple[Any, dict]:
    """The original kernel's proof of ``configuration`` and the lines of ``files`` it ran."""
    from inspector.coverage.proof import prove

    with LineRecorder(files) as recorder:
        proof = prove(configuration, witness)
    return proof, recorder.as_json()


_BODIES = ("body", "orelse", "finalbody", "handlers")


def _holds(node: ast.AST, start: tuple[int, int], end: tuple[int, int]) -> bool:
    first = (node.lineno, node.col_offset)
    last = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return first <= start and end <= last


def _innermost(statements: Iterable[ast.stmt], start: tuple[int, int], end: tuple[int, int]):
    for statement in statements:
        if not _holds(statement, start, end):
            continue
        for field in _BODIES:
            inner = _innermost(getattr(statement, field, []) or [], start, end)
            if inner is not None:
                return inner
        return statement
    return None


def _header_end(statement: ast.stmt) -> int:
    """The last line of a compound statement's header (its test, target, iterable or items)."""
    parts = [getattr(statement, name, None) for name in ("test", "target", "iter")]
    parts += [item.context_expr for item in getattr(statement, "items", [])]
    ends = [part.end_lineno or part.lineno for part in parts if isinstance(part, ast.expr)]
    return max(ends, default=statement.lineno)


def statement_span(source: str, name: str, start: tuple[int, int], end: tuple[int, int]) -> Span:
    """Where the statement that holds the source range ``start``..``end`` (``(line, column)``,
    as ``ast`` gives them) lies in file ``name``: the innermost statement's first and last
    line, or, for a range in a compound statement's header (an ``if`` test, a ``for`` target or
    iterable), the header's lines: its body runs apart from it.

    Raises:
        ValueError: no statement of ``source`` holds the range.
    """
    statement = _innermost(parsing.parse(source).body, start, end)
    if statement is None:
        raise ValueError(f"{name}: no statement holds {start}..{end}")
    if any(getattr(statement, field, None) for field in _BODIES):
        return name, statement.lineno, _header_end(statement)
    return name, statement.lineno, statement.end_lineno or statement.lineno


def format_span(span: Span) -> str:
    """``jit.py:159-161`` (``jit.py:42`` for one line)."""
    name, first, last = span
    return f"{name}:{first}" if first == last else f"{name}:{first}-{last}"


def parse_span(text: str) -> Span:
    """The span ``FILE:FIRST-LAST`` (or ``FILE:LINE``) names.

    Raises:
        ValueError: not of that form, or a last line before the first.
    """
    name, _, lines = text.rpartition(":")
    first, _, last = lines.partition("-")
    if not name or not first.isdigit() or not (last or first).isdigit():
        raise ValueError(f"--lines: expected FILE:FIRST-LAST, got {text!r}")
    span = (name, int(first), int(last or first))
    if span[2] < span[1]:
        raise ValueError(f"--lines: {text!r} ends before it starts")
    return span


def executes(lines: Mapping[str, Iterable[int]], span: Span) -> bool:
    """Whether a configuration's recorded ``lines`` meet ``span``."""
    name, first, last = span
    return any(first <= line <= last for line in lines.get(name, ()))


def reaching(line_map: list[Mapping[str, Iterable[int]]], span: Span) -> list[int]:
    """The indices of the map's configurations whose recorded lines meet ``span``."""
    return [index for index, lines in enumerate(line_map) if executes(lines, span)]
