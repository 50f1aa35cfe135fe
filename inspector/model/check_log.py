"""The check log as the window shows it: each line judged pass, fail or warn (not judged, stale)
by its words, and the check's report grouped into the sections it is made of.

Qt-free: ``inspector.qt.widgets.check_log`` draws these (colour per line, a foldable section
per group). The words are the report's own (``inspector.check.report``): ``pass`` / ``FAIL`` of
a comparison, ``killed by`` / ``SURVIVED`` of a mutant, ``passed 40/48`` of the fixtures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PASS, FAIL, WARN, NEUTRAL = "pass", "fail", "warn", ""

_FAIL = re.compile(
    r"FAIL|SURVIVED|NOT (?:bit-identical|batch-invariant|proven|VERIFIED)|PAST THE BOUND|OUTSIDE"
    r"|\bfailed\b|out-of-bounds stores?: [1-9]|Traceback|\b[A-Z]\w*Error\b"
)
_WARN = re.compile(
    r"NOT JUDGED|not judged|not certified|not run\b|not made|not measured|changed since"
    r"|another kernel|cancelled|superseded|stale"
)
_PASS = re.compile(
    r"\bpass\b|PASSED|killed by|bit-identical|\b0 errors|every one proven|mutants killed"
    r"|\bwithin\b|\bverified\b|\bagrees?\b"
)
_COUNTS = re.compile(r"(?:passed|refused) (\d+)/(\d+)")

#: The check report's sections: a line starting with one of the prefixes opens (or joins) the
#: section; a line matching none continues the section before it.
SECTIONS = (
    ("verdict", ("check ", "saved check ", "record:")),
    ("input, kernel, device", ("input:", "kernel:", "device:", "kernel changed", "receipt of")),
    (
        "comparisons",
        ("tiled model vs", "kernel vs", "kernel out-of-bounds", "diagnosis:", "kernel domain"),
    ),
    (
        "evidence",
        (
            "autotune",
            "batch invariance",
            "compute-sanitizer",
            "coverage",
            "timing",
            "DRAM",
            "error bound",
            "errors (",
            "export check",
        ),
    ),
    ("fixtures", ("fixtures:", "NOT JUDGED")),
    ("mutants", ("model mutant", "kernel mutant", "kernel layout")),
    ("traffic", ("traffic",)),
    ("failures", ("FAILURE:",)),
)
_RANK = {NEUTRAL: 0, PASS: 1, WARN: 2, FAIL: 3}


def line_state(text: str) -> str:
    """``FAIL`` when the line says something failed, else ``WARN`` (not judged, stale,
    cancelled, or a failure the verdict says is not required), else ``PASS`` (pass, killed,
    within...), else ``NEUTRAL``."""
    counts = [(int(done), int(of)) for done, of in _COUNTS.findall(text)]
    if "not required" in text:  # evidence the verdict does not hang on: a caution at most
        return WARN if _FAIL.search(text) or _WARN.search(text) else PASS
    if _FAIL.search(text) or any(done < of for done, of in counts):
        return FAIL
    if _WARN.search(text):
        return WARN
    if _PASS.search(text) or counts:
        return PASS
    return NEUTRAL


def worst(states: list[str] | tuple[str, ...]) -> str:
    """The worst of ``states`` (fail > warn > pass > neutral)."""
    return max(states, key=_RANK.__getitem__, default=NEUTRAL)


@dataclass(frozen=True)
class LogSection:
    """One foldable group: its title, its lines, each line's state and the title's own (a
    later entry's title is a line of the log too)."""

    title: str
    lines: tuple[str, ...]
    states: tuple[str, ...]
    title_state: str = NEUTRAL

    @property
    def state(self) -> str:
        """The section's colour: its worst line's (the title's included)."""
        return worst((*self.states, self.title_state))


def _section_of(line: str) -> str | None:
    for title, prefixes in SECTIONS:
        if line.startswith(prefixes):
            return title
    return None


def report_sections(lines: list[str]) -> list[LogSection]:
    """The check report's ``lines`` grouped by :data:`SECTIONS`, in the order each section
    first appears (a section met again later gets the later lines too)."""
    grouped: dict[str, list[str]] = {}
    current = "notes"
    for line in lines:
        if not line.strip():
            continue
        current = _section_of(line) or current
        grouped.setdefault(current, []).append(line)
    return [
        LogSection(title, tuple(body), tuple(line_state(line) for line in body))
        for title, body in grouped.items()
    ]


def entry_section(text: str) -> LogSection:
    """A later entry of the log (a kernel run, First divergence, a failed job) as a section
    titled by its first line, the rest its body."""
    first, _, rest = text.strip("\n").partition("\n")
    body = tuple(line for line in rest.split("\n") if line.strip())
    return LogSection(first, body, tuple(line_state(line) for line in body), line_state(first))
