"""Where a kernel file can be mutated, and how: every ``@triton.jit`` function searched for sites
(:func:`mutation_sites`): arithmetic and comparison operators swapped, numeric constants moved
(+-1, x2, 0 <-> 1), masks dropped or inverted on loads and stores (a dropped load mask drops
``other=`` too, so the program stays one Triton accepts), ``other=`` fill values changed, casts
dropped (``.to(...)``: the arithmetic then runs in the input dtype), reductions swapped
(``tl.sum`` <-> ``tl.max``), ``rsqrt`` <-> ``sqrt``, negations dropped; :func:`apply_site` makes
the mutant's text. Qt-free.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Iterator

from inspector.coverage import parsing

ARITHMETIC = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
COMPARISON = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
SWAPPED_CALLS = {"sum": "max", "max": "sum", "rsqrt": "sqrt", "sqrt": "rsqrt"}

#: The bundled kernel's ``@triton.jit`` files, relative to the ``kernels`` package, in the order
#: their sites are numbered.
BUNDLED_FILES = ("jit/parts.py", "jit/tile.py", "jit/loop.py")


@dataclasses.dataclass(frozen=True)
class Site:
    """One mutation: where, which operator, the text before and after."""

    function: str
    line: int
    operator: str
    before: str
    after: str
    start: tuple[int, int]
    end: tuple[int, int]


def _is_jit(node: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).split("(")[0].endswith("jit") for d in node.decorator_list)


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _variants(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(operator, replacement node) for every mutation of ``node`` itself."""
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        new = copy.deepcopy(node)
        new.op = ARITHMETIC[type(node.op)]()
        yield f"{type(node.op).__name__} -> {type(new.op).__name__}", new
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARISON:
        new = copy.deepcopy(node)
        new.ops = [COMPARISON[type(node.ops[0])]()]
        yield f"{type(node.ops[0]).__name__} -> {type(new.ops[0]).__name__}", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield "negation dropped", copy.deepcopy(node.operand)
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        moved = {value + 1, value - 1, value * 2, 0 if value else 1} - {value}
        if isinstance(value, float):
            moved = {value * 2, 1.0 if value == 0.0 else 0.0} - {value}
        for new_value in sorted(moved):
            yield f"constant {value!r} -> {new_value!r}", ast.Constant(new_value)
    elif isinstance(node, ast.Call):
        name = _call_name(node)
        if name in SWAPPED_CALLS and isinstance(node.func, ast.Attribute):
            new = copy.deepcopy(node)
            new.func.attr = SWAPPED_CALLS[name]
            yield f"{name} -> {SWAPPED_CALLS[name]}", new
        if name == "to" and isinstance(node.func, ast.Attribute):
            yield "cast dropped", copy.deepcopy(node.func.value)
        if name in ("load", "store"):
            for index, keyword in enumerate(node.keywords):
                if keyword.arg == "mask":
                    # A load without its mask has no other= either (Triton refuses one without
                    # the other): the unmasked load itself, which guarded reads then see.
                    dropped = copy.deepcopy(node)
                    gone = ("mask", "other") if name == "load" else ("mask",)
                    dropped.keywords = [k for k in dropped.keywords if k.arg not in gone]
                    yield f"{name} mask dropped", dropped
                    inverted = copy.deepcopy(node)
                    inverted.keywords[index].value = ast.UnaryOp(
                        ast.Invert(), copy.deepcopy(keyword.value)
                    )
                    yield f"{name} mask inverted", inverted
                if keyword.arg == "other":
                    changed = copy.deepcopy(node)
                    changed.keywords[index].value = ast.Constant(1.0)
                    yield "load other= -> 1.0", changed


def mutation_sites(source: str) -> list[Site]:
    """Every site of every ``@triton.jit`` function of ``source``, in file order."""
    tree = parsing.parse(source)
    sites = []
    for function in tree.body:
        if not (isinstance(function, ast.FunctionDef) and _is_jit(function)):
            continue
        for statement in function.body:
            for node in ast.walk(statement):
                if not hasattr(node, "end_lineno") or node.end_lineno is None:
                    continue
                before = ast.get_source_segment(source, node)
                if before is None:
                    continue
                for operator, new in _variants(node):
                    sites.append(
                        Site(
                            function.name,
                            node.lineno,
                            operator,
                            before,
                            ast.unparse(new),
                            (node.lineno, node.col_offset),
                            (node.end_lineno, node.end_col_offset),
                        )
                    )
    sites.sort(key=lambda s: (s.start, s.operator))
    return sites


def apply_site(source: str, site: Site) -> str:
    """``source`` with the text of ``site`` replaced (lines and columns as ``ast`` gives them)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")
    start = offsets[site.start[0] - 1] + site.start[1]
    end = offsets[site.end[0] - 1] + site.end[1]
    after = site.after if "\n" not in site.before else f"({site.after})"
    return (data[:start] + after.encode("utf-8") + data[end:]).decode("utf-8")
