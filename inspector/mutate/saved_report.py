"""A ``mutation.json`` (``python main.py mutate``) read back for the window's Mutation tab, Qt-free.

The file is untrusted: :func:`read_report` bounds its size, parses it as JSON and checks every
field's type, and refuses anything else with a :class:`ReportError` naming the field. The rows
come survivors first (:data:`OUTCOME_ORDER`), and :func:`diff_lines` shows a mutant as a
unified diff of its line, with context from the kernel's source when the file is found (read
as text and parsed, never imported).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from bounded_json import JsonBounds, loads
from inspector.coverage import parsing
from inspector.mutate.sites import BUNDLED_FILES

# Largest mutation.json read (the bundled kernel's 400 mutants take ~250 KB).
MAX_REPORT_BYTES = 16 << 20
MAX_SOURCE_BYTES = 2 << 20
MAX_MUTANTS = 100_000
# What a report's JSON holds at most: per mutant an object of nine fields and its killed_by
# list (a name per killing fixture, a few dozen), and the coverage map beside them (the
# bundled kernel's report: 950 containers and 4,900 values).
REPORT_BOUNDS = JsonBounds(
    size=MAX_REPORT_BYTES,
    containers=4 * MAX_MUTANTS + 4096,
    values=64 * MAX_MUTANTS + 65_536,
    strings=64 * MAX_MUTANTS + 65_536,
)
OUTCOME_ORDER = ("survived", "timeout", "crashed", "killed", "equivalent", "stillborn")
CONTEXT_LINES = 3
ROOT = Path(__file__).resolve().parents[2]


class ReportError(ValueError):
    """A file that is not a mutation report (the message names the file's part)."""


@dataclasses.dataclass(frozen=True)
class MutantRow:
    """One mutant of the report."""

    id: str
    function: str
    line: int
    operator: str
    before: str
    after: str
    outcome: str
    killed_by: tuple[str, ...]
    detail: str


@dataclasses.dataclass(frozen=True)
class MutationReport:
    """A report: the kernel it mutated, its mutants survivors first, its counts and score."""

    kernel_path: str
    kernel_function: str
    kernel_sha256: str
    rows: tuple[MutantRow, ...]
    counts: dict[str, int]
    score: float
    source_name: str = ""

    def summary(self) -> str:
        """One line: score and counts."""
        counts = ", ".join(f"{self.counts.get(k, 0)} {k}" for k in OUTCOME_ORDER)
        return (
            f"score {self.score:.3f} (killed / (total - equivalent)); "
            f"{len(self.rows)} mutants: {counts}"
        )


def _string(value: Any, where: str, limit: int = 20_000) -> str:
    if not isinstance(value, str):
        raise ReportError(f"{where} must be a string; got {type(value).__name__}")
    if len(value) > limit:
        raise ReportError(f"{where} is longer than {limit} characters")
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReportError(f"{where} must be a non-negative integer; got {value!r:.40}")
    return value


def _row(item: Any, index: int) -> MutantRow:
    where = f"mutants[{index}]"
    if not isinstance(item, dict):
        raise ReportError(f"{where} must be an object; got {type(item).__name__}")
    missing = [
        k
        for k in ("id", "function", "line", "operator", "before", "after", "outcome", "killed_by")
        if k not in item
    ]
    if missing:
        raise ReportError(f"{where} has no {missing[0]!r}")
    outcome = _string(item["outcome"], f"{where}.outcome")
    if outcome not in OUTCOME_ORDER:
        raise ReportError(
            f"{where}.outcome must be one of {', '.join(OUTCOME_ORDER)}; got {outcome[:40]!r}"
        )
    killed_by = item["killed_by"]
    if not isinstance(killed_by, list) or len(killed_by) > 1000:
        raise ReportError(f"{where}.killed_by must be a list of fixture names")
    line = item["line"]
    if isinstance(line, bool) or not isinstance(line, int) or not 1 <= line <= 10_000_000:
        raise ReportError(f"{where}.line must be a line number; got {line!r:.40}")
    return MutantRow(
        id=_string(item["id"], f"{where}.id", 64),
        function=_string(item["function"], f"{where}.function", 200),
        line=line,
        operator=_string(item["operator"], f"{where}.operator", 200),
        before=_string(item["before"], f"{where}.before"),
        after=_string(item["after"], f"{where}.after"),
        outcome=outcome,
        killed_by=tuple(
            _string(k, f"{where}.killed_by[{i}]", 200) for i, k in enumerate(killed_by)
        ),
        detail=_string(item.get("detail", ""), f"{where}.detail"),
    )


def ordered(rows: list[MutantRow] | tuple[MutantRow, ...]) -> tuple[MutantRow, ...]:
    """Survivors first, then timeouts, crashes, killed and equivalent; by id within each."""
    return tuple(sorted(rows, key=lambda r: (OUTCOME_ORDER.index(r.outcome), r.id)))


def parse_report(data: Any) -> MutationReport:
    """A parsed ``mutation.json`` checked field by field.

    Raises:
        ReportError: a missing or mistyped field, or counts that do not match the mutants.
    """
    if not isinstance(data, dict):
        raise ReportError("a mutation report is a JSON object")
    kernel = data.get("kernel")
    if not isinstance(kernel, dict):
        raise ReportError("kernel must be an object {path, function, sha256}")
    mutants = data.get("mutants")
    if not isinstance(mutants, list) or len(mutants) > MAX_MUTANTS:
        raise ReportError(f"mutants must be a list of at most {MAX_MUTANTS} mutants")
    rows = [_row(item, index) for index, item in enumerate(mutants)]
    counts = {k: sum(r.outcome == k for r in rows) for k in OUTCOME_ORDER}
    for key in ("killed", "survived", "equivalent"):
        if _count(data.get(key), key) != counts[key]:
            raise ReportError(f"{key} is {data.get(key)} but {counts[key]} mutants say {key}")
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        raise ReportError(f"score must be a number in [0, 1]; got {score!r:.40}")
    return MutationReport(
        kernel_path=_string(kernel.get("path"), "kernel.path", 4096),
        kernel_function=_string(kernel.get("function"), "kernel.function", 200),
        kernel_sha256=_string(kernel.get("sha256"), "kernel.sha256", 64),
        rows=ordered(rows),
        counts=counts,
        score=float(score),
    )


def read_report(path: str | Path) -> MutationReport:
    """:func:`parse_report` of the file at ``path`` (at most MAX_REPORT_BYTES, and within
    :data:`REPORT_BOUNDS`, counted before it is parsed).

    Raises:
        ReportError: unreadable, too large, not JSON, or not a mutation report (named).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_REPORT_BYTES:
            raise ReportError(
                f"{path.name}: {size} bytes; a mutation report is at most {MAX_REPORT_BYTES} bytes"
            )
        with path.open("rb") as stream:
            data = loads(stream.read(MAX_REPORT_BYTES + 1), path.name, REPORT_BOUNDS)
    except ReportError:
        raise
    except (OSError, ValueError) as err:  # JsonRefused (a ValueError) names the bound
        raise ReportError(f"{path.name}: not a readable JSON file ({err})"[:300]) from None
    try:
        return parse_report(data)
    except ReportError as err:
        raise ReportError(f"{path.name}: {err}") from None


def source_files(report: MutationReport, report_path: str | Path | None = None) -> list[Path]:
    """The kernel's source files found on this machine: the file named in the report (as is,
    or relative to the repository or to the report's folder), or for the bundled kernel
    (``kernels.rms_norm``) the ``jit`` files of the ``kernels`` package this process
    imports (found without importing it: no torch for a report)."""
    if report.kernel_function == "kernels.rms_norm":
        found = importlib.util.find_spec("kernels")
        if found is None or found.origin is None:
            return []
        package = Path(found.origin).parent
        return [package / name for name in BUNDLED_FILES if (package / name).is_file()]
    named = Path(report.kernel_path)
    candidates = [named] if named.is_absolute() else [ROOT / named]
    if report_path is not None and not named.is_absolute():
        candidates.append(Path(report_path).parent / named)
    return [p for p in candidates if p.is_file()][:1]


def _function_lines(source: str) -> dict[str, tuple[int, int]]:
    try:
        tree = parsing.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    return {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def _mutated_lines(row: MutantRow, source: str, lines: list[str]) -> list[str] | None:
    """The mutant's text of the lines its site spans (the site found again by its function,
    line, operator and texts, so the column is exact); None when the source has no such site."""
    from inspector.mutate.sites import apply_site, mutation_sites

    try:
        sites = mutation_sites(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    for site in sites:
        if (site.function, site.line, site.operator, site.before, site.after) == (
            row.function,
            row.line,
            row.operator,
            row.before,
            row.after,
        ):
            mutated = apply_site(source, site).splitlines()
            grown = len(mutated) - len(lines)
            return mutated[site.start[0] - 1 : site.end[0] + grown]
    return None


def diff_lines(row: MutantRow, files: list[Path]) -> list[str]:
    """A unified diff of the mutant: the lines of its site before and after, with CONTEXT_LINES
    of context, when a file in ``files`` has this very site; else the bare before/after."""
    for path in files:
        try:
            if path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = source.splitlines()
        new = _mutated_lines(row, source, lines)
        if new is None:
            continue
        end = row.line - 1 + len(row.before.splitlines() or [""])
        old = lines[row.line - 1 : end]
        start = max(0, row.line - 1 - CONTEXT_LINES)
        stop = min(len(lines), end + CONTEXT_LINES)
        out = [
            f"--- {path.name}:{row.line} ({row.function})",
            f"+++ mutant {row.id}: {row.operator}",
            f"@@ -{start + 1},{stop - start} +{start + 1},{stop - start - len(old) + len(new)} @@",
        ]
        out += [f" {line}" for line in lines[start : row.line - 1]]
        out += [f"-{line}" for line in old] + [f"+{line}" for line in new]
        out += [f" {line}" for line in lines[end:stop]]
        return out
    return [
        f"--- line {row.line} ({row.function}); the site is not in a source file found here",
        f"+++ mutant {row.id}: {row.operator}",
        *[f"-{line}" for line in row.before.splitlines() or [""]],
        *[f"+{line}" for line in row.after.splitlines() or [""]],
    ]


def source_note(report: MutationReport, files: list[Path]) -> str:
    """Whether the source shown is the one the report mutated ("" when it is)."""
    if not files:
        return "the kernel's source is not on this machine: diffs show the site alone"
    if report.kernel_function == "kernels.rms_norm":
        try:
            from kernels.instruments.compile_info import kernel_source_sha256

            same = kernel_source_sha256() == report.kernel_sha256
        except Exception:  # no kernel floor here: say nothing is checked
            return "the bundled kernel's hash is not checked here"
    else:
        try:
            same = hashlib.sha256(files[0].read_bytes()).hexdigest() == report.kernel_sha256
        except OSError:
            same = False
    return "" if same else "the kernel's source changed since this report: context may differ"
