"""TTIR text compared by meaning: locations stripped, names and the order of pure ops ignored.

:func:`canonical_digest` reads the module as a tree of ops (an op that opens a region holds the
ops up to its closing line) and gives every SSA value a key built from what computes it: the
op's text with each operand replaced by the operand's key, and the keys of its regions. Block
arguments are keyed by position and depth. The digest covers the ordered sequence of the ops
that are not known to be pure (loads, stores, calls, terminators, loops...), so two modules
that perform the same memory operations on the same dataflow in the same order get the same
digest however the pure arithmetic between them is ordered or named; anything unknown counts
as ordered, which can only make two modules differ.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

# Ops without side effects or ordering (anything else is kept in program order).
PURE_PREFIXES = ("arith.", "math.")
PURE_OPS = frozenset(
    {
        "tt.splat",
        "tt.broadcast",
        "tt.expand_dims",
        "tt.make_range",
        "tt.addptr",
        "tt.reshape",
        "tt.trans",
        "tt.get_program_id",
        "tt.get_num_programs",
        "tt.fp_to_fp",
        "tt.bitcast",
        "tt.int_to_ptr",
        "tt.ptr_to_int",
        "tt.precise_sqrt",
        "tt.precise_divf",
        "tt.clampf",
        "tt.mulhiui",
        "tt.join",
        "tt.split",
        "tt.cat",
        "tt.dot",
        "tt.reduce",
        "tt.scan",
    }
)
_NAME = re.compile(r"%[A-Za-z0-9_$.\-]+(?:#\d+)?")
_RESULTS = re.compile(
    r"^\s*((?:%[A-Za-z0-9_$.\-]+(?::\d+)?\s*,\s*)*%[A-Za-z0-9_$.\-]+(?::\d+)?)\s*=\s*"
)
_OP = re.compile(r'^"?([A-Za-z_][\w.]*)"?')


def strip_locations(text: str) -> str:
    """``text`` without ``#locN = ...`` lines, ``loc(...)`` annotations and blank lines."""
    lines = []
    for line in text.splitlines():
        if line.startswith("#loc"):
            continue
        out, index = [], 0
        while (start := line.find(" loc(", index)) >= 0:
            out.append(line[index:start])
            depth, position = 0, len(line)
            for at, char in _unquoted(line, start + 4):
                depth += (char == "(") - (char == ")")
                if char == ")" and depth == 0:
                    position = at
                    break
            index = position + 1
        out.append(line[index:])
        if "".join(out).strip():
            lines.append("".join(out).rstrip())
    return "\n".join(lines) + "\n"


def _unquoted(line: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(position, character) of ``line`` from ``start`` on, passing over what stands in double
    quotes (the quotes included)."""
    quoted = False
    for position in range(start, len(line)):
        char = line[position]
        if char == '"':
            quoted = not quoted
        elif not quoted:
            yield position, char


def _net_braces(line: str) -> int:
    return sum((char == "{") - (char == "}") for _, char in _unquoted(line))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


class _Canonical:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.keys: dict[str, str] = {}

    def _substitute(self, text: str, depth: int, defining: list[str]) -> str:
        def key(match: re.Match[str]) -> str:
            name = match.group(0)
            base = name.split("#")[0]
            if name in self.keys:
                return self.keys[name]
            if base in self.keys and "#" in name:
                return f"{self.keys[base]}#{name.split('#')[1]}"
            # First sight on a region-opening line: a block argument, keyed by position.
            self.keys[name] = f"<arg{len(defining)}@{depth}>"
            defining.append(name)
            return self.keys[name]

        return _NAME.sub(key, text)

    def block(self, start: int, depth: int) -> tuple[list[str], int]:
        """The ordered keys of one region's non-pure ops from line ``start``; returns them and
        the index of the line that closes the region."""
        ordered: list[str] = []
        index = start
        while index < len(self.lines):
            line = self.lines[index].strip()
            if line.startswith("}"):
                return ordered, index
            if line.startswith("^"):  # a block label with its arguments
                ordered.append(self._substitute(line, depth, []))
                index += 1
                continue
            match = _RESULTS.match(line)
            results = match.group(1) if match else ""
            body = line[match.end() :] if match else line
            op_match = _OP.match(body)
            op = op_match.group(1) if op_match else body
            children: list[str] = []
            closer = ""
            opens = _net_braces(line) > 0
            if op == "tt.func":  # a function's own names: its arguments, keyed by position
                self.keys = {}
            header = self._substitute(body, depth + 1 if opens else depth, [])
            index += 1
            while opens:
                region, index = self.block(index, depth + 1)
                children.append("|".join(region))
                closer = self.lines[index].strip()
                # "} {" or "}, {" continues with another region (scf.if's else).
                opens = _net_braces(closer) > 0 or closer.endswith("{")
                index += 1
            key = _digest(f"{header}[{'/'.join(children)}]{self._substitute(closer, depth, [])}")
            for number, result in enumerate(
                n.split(":")[0] for n in re.split(r"\s*,\s*", results) if n
            ):
                self.keys[result] = f"{key}.{number}"
            if not (op.startswith(PURE_PREFIXES) or op in PURE_OPS):
                ordered.append(key)
        return ordered, index


def canonical_digest(text: str) -> str:
    """A digest of ``text``'s (TTIR) memory operations and their dataflow (module docstring)."""
    lines = strip_locations(text).splitlines()
    ordered, _ = _Canonical(lines).block(0, 0)
    return _digest("|".join(ordered))
