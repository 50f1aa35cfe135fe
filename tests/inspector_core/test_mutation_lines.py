"""`mutate`'s line map: the kernel lines each coverage configuration runs under the interpreter,
and a fixture survivor proven only on the configurations that run its statement, with the
verdict the whole map gives."""

from __future__ import annotations

import ast
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from inspector.coverage import child, reach
from inspector.coverage.reach import format_span, parse_span, reaching, statement_span
from inspector.mutate.beyond import _coverage_verdict
from inspector.mutate.sites import apply_site, mutation_sites

# Five configurations of two widths: each kernel peeled and not, and rows packed per program.
LABELS = (
    "float32/tile/rows1/vec1/w_early/stream",
    "float32/tile/rows1/vec1/peel/w_early/stream",
    "float32/tile/multi/vec1/w_early/even/stream",
    "float32/loop/rows1/vec1/stream/tail",
    "float32/loop/rows1/vec1/peel/stream/tail",
)


def _package() -> Path:
    import kernels

    return Path(kernels.__file__).resolve().parent


@pytest.fixture(scope="module")
def line_map_file(tmp_path_factory) -> Path:
    """A small map with each configuration's lines recorded, as `mutate` makes it."""
    from kernels.instruments import coverage

    found = coverage.reachable(widths=[8, 8193], dtypes=("float32",))
    chosen = {c: w for c, w in found.items() if c.label in LABELS}
    assert sorted(c.label for c in chosen) == sorted(LABELS)
    path = tmp_path_factory.mktemp("lines") / "map.json"
    child.write_map(path, chosen, sorted(chosen, key=lambda c: LABELS.index(c.label)))
    child.add_lines(path, jobs=2, timeout_s=1200)
    return path


def _function(name: str, file: str) -> ast.FunctionDef:
    tree = ast.parse((_package() / file).read_text())
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _first_line(name: str, file: str) -> tuple[str, int, int]:
    """The span of the first statement of ``name`` past its docstring."""
    statement = _function(name, file).body[1]
    return file, statement.lineno, statement.end_lineno


def _label(entry: dict) -> str:
    from kernels.instruments.coverage import Configuration

    return Configuration.from_json(entry["configuration"]).label


def _by_label(path: Path) -> dict[str, dict[str, list[int]]]:
    entries = json.loads(path.read_text())
    return {_label(e): e["lines"] for e in entries}


def _site(file: str, function: str, operator: str, before: str, index: int = 0):
    source = (_package() / file).read_text()
    return [
        s
        for s in mutation_sites(source)
        if (s.function, s.operator) == (function, operator) and s.before.startswith(before)
    ][index]


def _mutant_copy(root: Path, file: str, site) -> str:
    """A copy of `kernels` with ``site`` of ``file`` applied (None: the faithful copy)."""
    shutil.copytree(_package(), root / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    if site is not None:
        text = (_package() / file).read_text()
        (root / "kernels" / file).write_text(apply_site(text, site))
    return str(root)


def _span(file: str, site) -> tuple[str, int, int]:
    return statement_span((_package() / file).read_text(), file, site.start, site.end)


def test_a_statements_span_is_its_lines_or_its_compound_headers() -> None:
    source = (
        "def f(a, B):\n"  # 1
        "    x = (\n"  # 2
        "        a + 1\n"  # 3
        "    )\n"  # 4
        "    if B == 2:\n"  # 5
        "        x = a * 2\n"  # 6
        "    elif (B\n"  # 7
        "          > 3):\n"  # 8
        "        x = a - 3\n"  # 9
        "    for i in range(B + 4):\n"  # 10
        "        x += i\n"  # 11
        "    return x\n"  # 12
    )
    assert statement_span(source, "k.py", (3, 8), (3, 13)) == ("k.py", 2, 4)
    assert statement_span(source, "k.py", (5, 7), (5, 13)) == ("k.py", 5, 5)  # the if's test
    assert statement_span(source, "k.py", (6, 12), (6, 17)) == ("k.py", 6, 6)  # its body
    assert statement_span(source, "k.py", (7, 10), (8, 13)) == ("k.py", 7, 8)  # the elif's
    assert statement_span(source, "k.py", (9, 12), (9, 17)) == ("k.py", 9, 9)
    assert statement_span(source, "k.py", (10, 19), (10, 24)) == ("k.py", 10, 10)
    assert statement_span(source, "k.py", (11, 13), (11, 14)) == ("k.py", 11, 11)
    with pytest.raises(ValueError, match="no statement"):
        statement_span(source, "k.py", (13, 0), (13, 1))
    assert format_span(("jit.py", 7, 9)) == "jit.py:7-9"
    assert format_span(("jit.py", 7, 7)) == "jit.py:7"
    assert parse_span("jit.py:7-9") == ("jit.py", 7, 9)
    assert parse_span("jit.py:7") == ("jit.py", 7, 7)
    for bad in ("jit.py", "jit.py:x", ":3", "jit.py:9-7"):
        with pytest.raises(ValueError, match="--lines"):
            parse_span(bad)


def test_the_line_map_holds_the_lines_each_configuration_runs(line_map_file) -> None:
    lines = _by_label(line_map_file)
    assert set(lines) == set(LABELS)

    def running(span: tuple[str, int, int]) -> set[str]:
        return {label for label in LABELS if reach.executes(lines[label], span)}

    # Every launch splits its width and strides; only the peeled column loop peels its rows.
    assert running(_first_line("_row_geometry", "jit/parts.py")) == set(LABELS)
    assert running(_first_line("_peeled_loop_row", "jit/loop.py")) == {LABELS[4]}
    assert running(_first_line("_peeled_row", "jit/tile.py")) == {LABELS[1]}
    assert running(_first_line("_chunked_row", "jit/loop.py")) == {LABELS[3]}
    # A hand-made mutant's branch runs in no faithful launch.
    branch = next(n for n in _function("_row_geometry", "jit/parts.py").body
                  if isinstance(n, ast.If))  # fmt: skip
    assert running(("jit/parts.py", branch.body[0].lineno, branch.body[-1].end_lineno)) == set()
    assert running(("jit/parts.py", branch.lineno, branch.lineno)) == set(LABELS)  # its test


def test_a_mutant_only_some_configurations_run_is_killed_on_one_of_them(
    line_map_file, tmp_path
) -> None:
    # The head's square subtracted from the peeled column loop's sum: a 3-line statement.
    site = _site("jit/loop.py", "_peeled_loop_row", "Add -> Sub", "tl.sum(acc, axis=0)")
    span = _span("jit/loop.py", site)
    assert span[2] > span[1]
    copy = _mutant_copy(tmp_path / "m", "jit/loop.py", site)
    result = child.run_child(copy, line_map_file, ["--lines", format_span(span)], 1200)
    assert (result["outcome"], result["reached"], result["map"]) == ("caught", 1, 5), result
    outcome, killed_by, _ = _coverage_verdict(copy, line_map_file, None, 1200, span)
    assert (outcome, killed_by[0].split(":")[1]) == ("killed", LABELS[4])


def test_a_survivor_verdict_names_how_many_configurations_run_its_statement(
    line_map_file, tmp_path, monkeypatch
) -> None:
    faithful = _mutant_copy(tmp_path / "f", "jit/loop.py", None)
    span = _first_line("_peeled_loop_row", "jit/loop.py")
    outcome, _, detail = _coverage_verdict(faithful, line_map_file, None, 1200, span)
    assert outcome == "survived"
    assert detail == (
        f"every fixture and all 1 configurations of the coverage map that run "
        f"{format_span(span)} behaved (4 of its 5 do not run it)"
    )
    # A statement no configuration runs is judged without a child.
    monkeypatch.setattr(child, "run_child", lambda *a: pytest.fail("a child ran"))
    body = _function("_peeled_loop_row", "jit/loop.py").body
    test = "MUTANT == MISSING_WEIGHT"
    branch = next(n for n in body if isinstance(n, ast.If) and ast.unparse(n.test) == test)
    rolled = ("jit/loop.py", branch.body[0].lineno, branch.body[0].end_lineno)  # a mutant's branch
    outcome, killed_by, detail = _coverage_verdict(faithful, line_map_file, None, 1200, rolled)
    assert (outcome, killed_by) == ("survived", ())
    assert f"none of the coverage map's 5 configurations runs {format_span(rolled)}" in detail


SLICE = (
    ("jit/loop.py", "_peeled_loop_row", "Add -> Sub", "tl.sum(acc, axis=0)"),  # loop + peel
    ("jit/parts.py", "_rrms_of_sum", "Div -> Mult", "sum_squares / width"),  # every launch
    ("jit/parts.py", "_load", "load other= -> 1.0", "tl.load"),  # a fill no store sees
    ("jit/loop.py", "_peeled_loop_row", "Mult -> Div", "xh * rrms", 0),  # no launch: a mutant's
)


def test_the_filter_skips_only_configurations_that_do_not_run_the_site(
    line_map_file, tmp_path
) -> None:
    """On a slice of sites: the configurations the filter leaves out pass the mutant's proof
    (the whole map run on them alone), and the filtered verdict is the unfiltered one."""
    entries = json.loads(line_map_file.read_text())
    recorded = [e["lines"] for e in entries]

    def check(index: int) -> tuple[str, str, str]:
        file, *where = SLICE[index]
        site = _site(file, *where)
        span = _span(file, site)
        copy = _mutant_copy(tmp_path / f"s{index}", file, site)
        reached = set(reaching(recorded, span))
        skipped = tmp_path / f"skipped{index}.json"
        skipped.write_text(json.dumps([e for i, e in enumerate(entries) if i not in reached]))
        if len(reached) < len(entries):
            rest = child.run_child(copy, skipped, [], 1200)
            assert rest["outcome"] == "passed", (SLICE[index], rest)
        filtered = _coverage_verdict(copy, line_map_file, None, 1200, span)
        whole = _coverage_verdict(copy, line_map_file, None, 1200)
        if filtered[0] == "killed":
            killer = filtered[1][0].split(":")[1]
            assert killer in {_label(entries[i]) for i in reached}
        return filtered[0], whole[0], len(reached)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(check, range(len(SLICE))))
    assert [(f, w) for f, w, _ in results] == [(w, w) for _, w, _ in results], results
    assert [f for f, _, _ in results] == ["killed", "killed", "survived", "survived"], results
    reached = [n for _, _, n in results]
    assert reached[0] == 1, reached  # the peeled column loop alone
    assert (reached[1], reached[3]) == (5, 0), reached


def test_add_lines_refuses_a_map_the_original_kernel_does_not_pass(tmp_path, monkeypatch):
    path = tmp_path / "map.json"
    path.write_text(json.dumps([{"configuration": {}, "witness": {}}]))
    failing = {"outcome": "recorded", "entries": [
        {"index": 0, "label": "x/tile", "passed": False, "failed": "random_rows: off",
         "lines": {"jit.py": [3]}},
    ]}  # fmt: skip
    monkeypatch.setattr(child, "run_child", lambda *a: failing)
    with pytest.raises(RuntimeError, match="fails the coverage proof of x/tile: random_rows"):
        child.add_lines(path)
    failing["entries"][0].update(passed=True, lines={"jit.py": []})
    with pytest.raises(RuntimeError, match="ran no kernel line"):
        child.add_lines(path)
    monkeypatch.setattr(child, "run_child", lambda *a: "timeout")
    with pytest.raises(RuntimeError, match="timeout"):
        child.add_lines(path)
    assert "lines" not in path.read_text()


def test_the_child_refuses_lines_on_a_map_without_them(tmp_path, capsys) -> None:
    from kernels.instruments import coverage

    path = tmp_path / "map.json"
    child.write_map(path, coverage.reachable(widths=[8], dtypes=("float32",)))
    assert child.line_map(path) is None
    assert child.main([str(path), "--lines", "jit.py:3-4"]) == 2
    assert "the map records no lines" in capsys.readouterr().err
    assert child.main([str(path), "--lines", "jit.py:x"]) == 2
    assert child.main([str(path), "--record-lines", "--mutant", "missing_square"]) == 2


def test_mutate_proves_a_fixture_survivor_where_its_statement_runs(
    line_map_file, tmp_path, monkeypatch
) -> None:
    from inspector.check.user_kernel import loadable_kernel_spec
    from inspector.mutate import source_mutants
    from inspector.mutate.campaign import BUNDLED_LAUNCHER

    shim = tmp_path / "bundled_launcher.py"
    shim.write_text(BUNDLED_LAUNCHER)
    spec = loadable_kernel_spec(f"{shim}:rms_norm")
    source = (_package() / "jit/loop.py").read_text()
    head = _site("jit/loop.py", "_peeled_loop_row", "Add -> Sub", "tl.sum(acc, axis=0)")
    # The loop's row index left int32: every loop configuration runs it and passes (a few rows).
    narrow = _site("jit/loop.py", "rms_norm_loop_kernel", "cast dropped", "tl.program_id(0)")
    monkeypatch.setattr(
        source_mutants, "mutation_sites", lambda text: [head, narrow] if text == source else []
    )
    mutants, _ = source_mutants.run_mutants(
        spec, files=[_package() / "jit/loop.py"], launcher_dir=_package(), jobs=2,
        timeout_s=120, compare_ttir=False, coverage_map=line_map_file,
    )  # fmt: skip
    killed, past = mutants
    assert (killed.outcome, killed.killed_by[0].split(":")[1]) == ("killed", LABELS[4])
    # The map's configurations run it and behave; the rows past 2**31 catch it (an int32 row
    # offset wraps there).
    assert past.outcome in ("killed", "crashed"), past.detail
    assert past.killed_by == ("rows past 2**31",)
    assert "column_loop" in past.detail
