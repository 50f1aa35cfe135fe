"""scripts/mutate_python.py's sites: functions, methods and the bounds of module- and class-level
assignments, with the kernel mutator's operators plus and/or and not; annotations and docstrings
left alone."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from inspector.mutate.sites import apply_site

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


def test_a_mutant_key_counts_repeats_of_the_same_change_and_ignores_the_line() -> None:
    module = _module()
    same = {"file": "p/a.py", "function": "f", "operator": "constant 0 -> 1",
            "before": "0", "after": "1"}  # fmt: skip
    mutants = module.keyed([dict(same, line=3), dict(same, line=9), dict(same, function="g")])
    assert [m["occurrence"] for m in mutants] == [0, 1, 0]
    moved = module.keyed([dict(same, line=30), dict(same, line=90)])
    assert [module.key(m) for m in moved] == [module.key(m) for m in mutants[:2]]


def test_an_explanation_needs_a_kind_and_a_reason(tmp_path: Path) -> None:
    module = _module()
    entry = {"file": "p/a.py", "function": "f", "operator": "o", "before": "0", "after": "1"}
    path = tmp_path / "explained.json"
    for bad in ({**entry, "kind": "fine", "reason": "r"}, {**entry, "kind": "equivalent"}):
        path.write_text(json.dumps([bad]))
        with pytest.raises(SystemExit, match=re.escape("kind equivalent|unkilled and a reason")):
            module._explanations(path)
    path.write_text(json.dumps([{**entry, "kind": "equivalent", "reason": "r"}]))
    assert list(module._explanations(path)) == [("p/a.py", "f", "o", "0", "1", 0)]


def test_merged_reports_keep_a_later_kill_and_fill_what_was_not_run() -> None:
    module = _module()
    base = {"file": "p/a.py", "function": "f", "operator": "o", "before": "0", "occurrence": 0}
    first = {"machine": "cpu", "mutants": [
        dict(base, id="p1", after="1", outcome="survived"),
        dict(base, id="p2", after="2", outcome="not run"),
        dict(base, id="p3", after="3", outcome="killed"),
    ]}  # fmt: skip
    later = {"machine": "gpu", "mutants": [
        dict(base, id="p1", after="1", outcome="killed"),
        dict(base, id="p2", after="2", outcome="survived"),
        dict(base, id="p3", after="3", outcome="survived"),
    ]}  # fmt: skip
    merged = module.merge([first, later])
    assert [(m["outcome"], m["machine"]) for m in merged] == [
        ("killed", "gpu"), ("survived", "gpu"), ("killed", "cpu")
    ]  # fmt: skip


def test_a_mutant_whose_key_now_names_another_site_is_not_carried() -> None:
    """Dropping the first of two equal changes in a function shifts the second onto the first's
    key: its recorded line tells the merge that the outcome is another site's."""
    module = _module()
    before = "def f(x):\n    a = x > 0\n    return x.sum(0)\n"
    after = "def f(x):\n    return x.sum(0)\n"
    head = {"file": "p/a.py", "function": "f", "operator": "constant 0 -> 1", "before": "0",
            "after": "1"}  # fmt: skip
    old = [dict(head, site=module.line_hash(line), occurrence=i, outcome="killed")
           for i, line in enumerate(before.splitlines()[1:])]  # fmt: skip
    now = [dict(head, id="p0001", line=2, site=module.line_hash(after.splitlines()[1]),
                occurrence=0)]  # fmt: skip
    assert module.key(old[0]) == module.key(now[0])
    assert not module.same_site(old[0], now[0])
    assert module.same_site(dict(old[0], site=""), now[0])  # a report older than the hashes
    with pytest.raises(SystemExit, match="no mutant of 1 current sites"):
        module.merge([{"mutants": old}], now)
    rerun = [dict(now[0], outcome="survived")]
    merged = module.merge([{"mutants": old}, {"mutants": rerun}], now)
    assert [(m["site"], m["outcome"]) for m in merged] == [(old[1]["site"], "survived")]


def test_each_current_site_records_the_hash_of_its_own_line() -> None:
    module = _module()
    path = SCRIPT.parents[1] / "oracle" / "scalar.py"
    lines = path.read_text().splitlines()
    planned = module.current_sites([path])
    assert planned
    assert all(m["site"] == module.line_hash(lines[m["line"] - 1]) for m in planned)
    assert len({m["site"] for m in planned}) > 1
