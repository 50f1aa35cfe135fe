"""`mutate`: mutation sites of a kernel's @triton.jit source, spliced exactly, and a small
kernel's mutants run against the fixture matrix in child processes (killed, survived, crashed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kernels
from inspector.mutate.sites import apply_site, mutation_sites
from kernels.mode import INTERPRETER

ROOT = Path(__file__).resolve().parents[2]

SOURCE = textwrap.dedent(
    """\
    import triton
    import triton.language as tl


    def not_a_kernel(a, b):
        return a + b  # not @triton.jit: never mutated


    @triton.jit
    def _row(x_ptr, y_ptr, width, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        mask = cols < width
        x = tl.load(x_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + cols, -x, mask=mask)
    """
)


def test_sites_cover_each_operator_class_of_jit_functions_only() -> None:
    sites = mutation_sites(SOURCE)
    operators = {site.operator for site in sites}
    assert {s.function for s in sites} == {"_row"}
    assert {
        "Lt -> LtE",
        "Add -> Sub",
        "load mask dropped",
        "load mask inverted",
        "load other= -> 1.0",
        "store mask dropped",
        "negation dropped",
        "constant 0 -> 1",
        "constant 0.0 -> 1.0",
    } <= operators
    lt = next(s for s in sites if s.operator == "Lt -> LtE")
    assert (lt.line, lt.before, lt.after) == (12, "cols < width", "cols <= width")


def test_a_mutant_changes_its_site_and_nothing_else() -> None:
    for site in mutation_sites(SOURCE):
        mutated = apply_site(SOURCE, site)
        before, after = SOURCE.splitlines(), mutated.splitlines()
        assert len(before) == len(after)
        changed = [i + 1 for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert changed == [site.line], site
        assert site.after in after[site.line - 1]


@pytest.mark.slow(reason="every mutant of the tutorial kernel through `mutate`: 75 s here")
@pytest.mark.timeout(600)
def test_mutate_runs_every_mutant_and_reports_the_survivors(tmp_path) -> None:
    kernel = ROOT / "resources" / "kernels" / "tutorial.py"
    out = tmp_path / "mutation"
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "mutate", "--kernel", f"{kernel}:rms_norm",
         "--out", str(out), "--jobs", "2", "--timeout", "600"],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=1800,
        check=False,
    )  # fmt: skip
    # A generous per-run timeout: on a busy machine a child's start alone can take a minute,
    # and a "timeout" outcome would say nothing about the mutants.
    data = json.loads((out / "mutation.json").read_text())
    assert data["timeout"] == 0, [m for m in data["mutants"] if m["outcome"] == "timeout"]
    assert data["kernel"]["function"] == "rms_norm"
    outcomes = [m["outcome"] for m in data["mutants"]]
    assert set(outcomes) <= {"killed", "survived", "crashed", "timeout", "equivalent",
                             "stillborn"}  # fmt: skip
    assert data["killed"] == outcomes.count("killed")
    assert data["survived"] == outcomes.count("survived")
    assert data["stillborn"] == outcomes.count("stillborn")
    assert data["baseline"]["failed"] == []
    caught = data["killed"] + data["crashed"] + data["timeout"]
    assert data["score"] == caught / (len(outcomes) - data["equivalent"] - data["stillborn"])
    # Dropping a load's mask drops its other= too (Triton refuses one without the other): the
    # unmasked x load mixes the next row's values into the sum; the unmasked weight load reads
    # the weight's guard, which the interpreter's guarded loads see (the output never uses it).
    dropped = {m["before"]: m for m in data["mutants"] if m["operator"] == "load mask dropped"}
    assert len(dropped) == 2
    assert all("other=" not in m["after"] and "mask=" not in m["after"] for m in dropped.values())
    assert all(m["outcome"] == "killed" for m in dropped.values()), dropped
    weight = dropped["tl.load(w_ptr + cols, mask=mask, other=0.0)"]
    if kernels.MODE == INTERPRETER:
        assert "out-of-bounds read(s):" in weight["detail"]
        assert re.search(r"of weight \(lane \d+ \(past the width\)", weight["detail"])
    # The mean's divisor and the rsqrt are caught, each by a named fixture.
    by_site = {(m["operator"], m["before"]): m for m in data["mutants"]}
    divisor = by_site[("Div -> Mult", "tl.sum(x * x, axis=0) / width")]
    assert divisor["outcome"] == "killed"
    assert divisor["killed_by"]
    assert by_site[("sqrt -> rsqrt", "tl.sqrt(mean_square + eps)")]["outcome"] == "killed"
    # The five that cannot act, by TTIR or by the masked fill: equivalent, and so out of the score.
    equivalent = {(m["operator"], m["before"], m["after"]) for m in data["mutants"]
                  if m["outcome"] == "equivalent"}  # fmt: skip
    assert equivalent == {
        ("constant 0 -> -1", "0", "-1"),  # axis=-1 of a 1-D sum
        ("cast dropped", "tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)",
         "tl.load(w_ptr + cols, mask=mask, other=0.0)"),
        ("load other= -> 1.0", "tl.load(w_ptr + cols, mask=mask, other=0.0)",
         "tl.load(w_ptr + cols, mask=mask, other=1.0)"),
        ("constant 0.0 -> 1.0", "0.0", "1.0"),  # the weight's fill again
        ("cast dropped", "y.to(y_ptr.dtype.element_ty)", "y"),
    }, equivalent  # fmt: skip
    for m in data["mutants"]:
        if m["outcome"] == "equivalent":
            assert "TTIR identical" in m["detail"] or "never observed" in m["detail"], m
    survivors = [m for m in data["mutants"] if m["outcome"] == "survived"]
    assert done.returncode == (1 if survivors else 0), done.stdout + done.stderr
    for m in survivors:
        assert f"SURVIVED {m['id']} {m['function']}:{m['line']}" in done.stdout
    lines = (out / "mutation.csv").read_text().splitlines()
    assert lines[0] == "id,function,line,operator,before,after,outcome,killed_by"
    assert len(lines) == 1 + len(data["mutants"])


def test_mutate_refuses_bad_usage_with_one_line(tmp_path) -> None:
    for args, message in [
        (["--jobs", "-1"], "--jobs must be in [0, 256]; got -1"),
        (["--timeout", "0.5"], "--timeout must be in [1, 3600] seconds; got 0.5"),
        (["--kernel", "nofile.py:f"], "--kernel FILE 'nofile.py' is not a readable file"),
    ]:
        done = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), "mutate", *args, "--out", str(tmp_path / "o")],
            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "o").exists()


def test_a_bundled_kernel_mutant_runs_in_its_own_copy_of_the_package(tmp_path) -> None:
    # The square dropped in kernels/jit/parts.py: caught only if the child imports the mutated
    # copy of `kernels`, not the repository's.
    import kernels
    from inspector.check.user_kernel import loadable_kernel_spec
    from inspector.mutate.campaign import BUNDLED_LAUNCHER
    from inspector.mutate.source_mutants import run_mutants

    package = Path(kernels.__file__).resolve().parent
    shim = tmp_path / "bundled_launcher.py"
    shim.write_text(BUNDLED_LAUNCHER)
    spec = loadable_kernel_spec(f"{shim}:rms_norm")
    source = (package / "jit" / "parts.py").read_text()
    site = next(s for s in mutation_sites(source) if s.before == "x * x")
    import inspector.mutate.source_mutants as mutation

    original = mutation.mutation_sites
    try:
        mutation.mutation_sites = lambda text: [site] if text == source else []
        mutants, left_out = run_mutants(
            spec,
            files=[package / "jit" / "parts.py"],
            launcher_dir=package,
            jobs=1,
            compare_ttir=False,  # the copy is what this test is about (TTIR: test_equivalence)
        )
    finally:
        mutation.mutation_sites = original
    assert left_out == 0
    assert [(m.site.before, m.site.after, m.outcome) for m in mutants] == [
        ("x * x", "x / x", "killed")
    ]
    assert mutants[0].killed_by


def _package_copy(tmp_path: Path, file: str | None = None, old: str = "", new: str = "") -> str:
    """A copy of `kernels` in tmp_path (one replacement in ``file``), as the mutants get."""
    import shutil

    import kernels

    package = Path(kernels.__file__).resolve().parent
    shutil.copytree(package, tmp_path / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    if file is not None:
        text = (package / file).read_text()
        assert text.count(old) == 1
        (tmp_path / "kernels" / file).write_text(text.replace(old, new))
    return str(tmp_path)


def _small_map(tmp_path: Path) -> Path:
    from inspector.coverage.child import write_map
    from kernels.instruments import coverage

    path = tmp_path / "map.json"
    write_map(path, coverage.reachable(widths=[70], dtypes=("float32",)))
    return path


def test_hand_made_branch_names_the_mutant_whose_compile_time_branch_holds_a_site() -> None:
    import kernels
    from inspector.mutate.beyond import hand_made_branch

    source = (Path(kernels.__file__).resolve().parent / "jit" / "loop.py").read_text()
    sites = mutation_sites(source)
    inside = next(s for s in sites if s.before == "x * rrms" and s.function == "_loop_store_chunk")
    assert hand_made_branch(source, inside) == "missing_weight"
    test = next(s for s in sites if s.before == "MUTANT == MISSING_WEIGHT")
    assert hand_made_branch(source, test) is None  # the test itself runs in faithful launches
    faithful = next(s for s in sites if s.function == "_loop_store_chunk" and s.line > inside.line)
    assert hand_made_branch(source, faithful) is None


def test_the_coverage_map_kills_what_the_fixtures_miss_and_names_where(tmp_path) -> None:
    from inspector.mutate.beyond import _coverage_verdict

    map_path = _small_map(tmp_path)
    faithful = _package_copy(tmp_path / "faithful")
    outcome, killed_by, detail = _coverage_verdict(faithful, map_path, None, 600)
    assert outcome == "survived"
    assert "configurations of the coverage map behaved" in detail
    broken = _package_copy(
        tmp_path / "broken", "jit/parts.py", "        squares = x * x\n", "        squares = x\n"
    )
    outcome, killed_by, _ = _coverage_verdict(broken, map_path, None, 600)
    assert outcome == "killed"
    assert killed_by[0].startswith("coverage:float32/")


def test_a_site_in_a_hand_made_branch_is_equivalent_while_that_mutant_is_still_caught(tmp_path):
    from inspector.mutate.beyond import _coverage_verdict

    map_path = _small_map(tmp_path)
    same = _package_copy(tmp_path / "same")
    outcome, _, detail = _coverage_verdict(same, map_path, "missing_square", 600)
    assert outcome == "equivalent"
    assert "hand-made mutant missing_square is still caught (coverage:float32/" in detail
    # The branch made faithful: the check's own mutant would survive, so the site is killed.
    tame = _package_copy(
        tmp_path / "tame", "jit/parts.py", "        squares = x\n", "        squares = x * x\n"
    )
    outcome, killed_by, _ = _coverage_verdict(tame, map_path, "missing_square", 600)
    assert (outcome, killed_by) == ("killed", ("hand-made missing_square",))
