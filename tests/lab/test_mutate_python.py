"""scripts/mutate_python.py's sites: functions, methods and the bounds of module- and class-level
assignments, with the kernel mutator's operators plus and/or and not; annotations and docstrings
left alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from inspector.mutation import apply_site

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutate_python.py"
SOURCE = '''"""Doc."""
LIMIT: int = 4096


class Bounds:
    """Doc."""

    top: float = 1.5

    def inside(self, x: int) -> bool:
        return x < LIMIT and not x == 0


def scaled(x: int) -> int:
    return x * 2
'''


def _module():
    spec = importlib.util.spec_from_file_location("mutate_python", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sites_reach_bounds_methods_and_functions_but_not_annotations() -> None:
    sites = _module().python_sites(SOURCE)
    found = {(s.function, s.before, s.after) for s in sites}
    assert ("<module>", "4096", "4097") in found
    assert ("Bounds", "1.5", "3.0") in found
    assert ("Bounds.inside", "x < LIMIT", "x <= LIMIT") in found
    assert any(s.operator == "And -> Or" and s.function == "Bounds.inside" for s in sites)
    assert any(s.operator == "not dropped" and s.after == "x == 0" for s in sites)
    assert ("scaled", "x * 2", "x / 2") in found
    assert not any(s.before in ("int", "bool", "float", '"""Doc."""') for s in sites)


def test_a_site_changes_only_its_text() -> None:
    site = next(s for s in _module().python_sites(SOURCE) if s.after == "x / 2")
    changed = apply_site(SOURCE, site)
    assert changed == SOURCE.replace("return x * 2", "return x / 2")
