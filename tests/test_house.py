"""The house stays readable: product files cut along their jobs, code that states what is.

Product code is everything under ``oracle/``, ``kernels/`` and ``inspector/``; the lab and the
tests are not held to these bounds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = sorted(
    p for pkg in ("oracle", "kernels", "inspector") for p in (ROOT / pkg).rglob("*.py")
)
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 150
# A tuning diary in the product: "sweep 19", "session 5", "call 3".
DIARY = re.compile(r"\b([Ss]weep|[Ss]ession|[Cc]all) [0-9]+\b")


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_product_has_files_to_check():
    assert len(PRODUCT) > 40
    assert ROOT / "kernels" / "jit" / "tile.py" in PRODUCT


@pytest.mark.parametrize("path", PRODUCT, ids=_name)
def test_product_file_is_at_most_600_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_FILE_LINES, f"{_name(path)} has {lines} lines"


@pytest.mark.parametrize("path", PRODUCT, ids=_name)
def test_product_functions_are_at_most_150_lines(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{_name(path)}: {', '.join(long)}"


@pytest.mark.parametrize("path", PRODUCT, ids=_name)
def test_product_code_does_not_narrate_tuning_history(path):
    hits = [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if DIARY.search(line)
    ]
    assert not hits, f"{_name(path)}: " + "; ".join(hits)


#: inspector's rooms, top to bottom (pyproject's layers contract holds the order of imports).
ROOMS = ("cli", "qt", "jobs", "model", "mutate", "records", "check", "coverage")


def _loose_modules_and_rooms_with_signs(package: str, rooms: tuple[str, ...]) -> list[str]:
    """The package's modules outside a room (``__init__`` aside); asserts its folders are
    ``rooms`` and each room's ``__init__.py`` has a docstring."""
    folders = sorted(
        p.name for p in (ROOT / package).iterdir() if p.is_dir() and p.name != "__pycache__"
    )
    assert folders == sorted(rooms)
    for room in rooms:
        sign = ast.get_docstring(ast.parse((ROOT / package / room / "__init__.py").read_text()))
        assert sign, f"{package}/{room}/__init__.py says nothing of what the room owns"
    return sorted(p.stem for p in (ROOT / package).glob("*.py") if p.name != "__init__.py")


def test_every_inspector_module_lives_in_a_room_with_a_sign():
    loose = _loose_modules_and_rooms_with_signs("inspector", ROOMS)
    # The package's entry (python -m inspector) is the only module beside the rooms.
    assert loose == ["__main__"], f"modules outside a room: {loose}"


def test_the_layers_contract_names_every_room_in_order():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    layers = re.search(r'containers = \["inspector"\]\nlayers = \[([^\]]*)\]', text)
    assert layers is not None
    assert tuple(re.findall(r'"(\w+)"', layers.group(1))) == ROOMS


#: kernels' rooms (folders with a sign) and the door's modules beside them, which the layers
#: contract orders with the rooms.
KERNEL_ROOMS = ("bench", "instruments", "jit", "sandbox")
KERNEL_DOOR = ("api", "direct_launch", "env", "geometry", "interpreter_calls", "launcher", "layout",
               "mode", "op", "plans")  # fmt: skip


def test_every_kernels_module_is_the_door_or_lives_in_a_room_with_a_sign():
    assert _loose_modules_and_rooms_with_signs("kernels", KERNEL_ROOMS) == sorted(KERNEL_DOOR)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    layers = re.search(r'containers = \["kernels"\]\nlayers = \[([^\]]*)\]', text)
    assert layers is not None
    named = set(re.findall(r'"([\w| ]+)"', layers.group(1)))
    listed = {name.strip() for group in named for name in group.split("|")}
    assert listed == set(KERNEL_ROOMS) | set(KERNEL_DOOR)


#: docs/ holds what a reader reads: prose, figures and the records they cite; sweeps, second
#: records and probes stay in git history, data the product reads ships under resources/. The
#: benchmark record alone is about half of it (2.1 MiB: seven implementations, every raw
#: sample of 147 shape x dtype cases).
MAX_DOCS_BYTES = 4.5 * 1024 * 1024


def test_docs_stay_under_4_5_mib_and_the_product_reads_nothing_from_them():
    size = sum(p.stat().st_size for p in (ROOT / "docs").rglob("*") if p.is_file())
    assert size < MAX_DOCS_BYTES, f"docs/ holds {size} bytes"
    readers = [_name(path) for path in PRODUCT if _names_docs(path)]
    assert readers == []


def _names_docs(path: Path) -> bool:
    """A string in the code (docstrings aside) that is the docs folder or a path into it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return any(
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and re.fullmatch(r"docs(/[\w./-]*)?", node.value)
        for node in ast.walk(tree)
    )
