"""What `mutate` proves the bundled kernel's fixture survivors on besides the rule's map: the
layouts only the check's forced paths and explicit configs launch, rows that start past 2**31
elements, a tail mutant's branch reached through a flag parameter, and a weight's fill spread
over a tile of rows; and ``--sites`` to rerun an earlier report's survivors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from inspector.mutate import equivalence
from inspector.mutate.beyond import _past_2_31_verdict, flag_branches
from inspector.mutate.sites import BUNDLED_FILES, apply_site, mutation_sites
from inspector.mutate.source_mutants import run_mutants

ROOT = Path(__file__).resolve().parents[2]
# The whole coverage walk: on the worker that makes it once (tests/conftest.py).
pytestmark = pytest.mark.xdist_group("coverage_walk")


def _package() -> Path:
    import kernels

    return Path(kernels.__file__).resolve().parent


def _sources() -> list[str]:
    return [(_package() / n).read_text() for n in BUNDLED_FILES]


@pytest.fixture(scope="module")
def beyond():
    from kernels.instruments import coverage, coverage_beyond

    rule = coverage.reachable()
    return rule, coverage_beyond.beyond_rule(rule)


def test_the_layouts_beyond_the_rule_are_new_and_reach_the_code_the_rule_never_compiles(
    beyond,
) -> None:
    from kernels.instruments.coverage_beyond import BEYOND_RULE_WIDTHS

    rule, extra = beyond
    assert extra
    assert not set(extra) & set(rule)
    kinds = {(c.kernel, c.multi_row, c.stream, c.split, c.w_early) for c in extra}
    assert ("loop", False, False, False, False) in kinds  # an unstreamed column loop
    assert ("tile", False, False, True, True) in kinds  # split body, weight early
    # fp32 tiles with the weight after the reduction (the rule loads it with x in fp32).
    assert any(c.dtype == "float32" and c.kernel == "tile" and not c.w_early for c in extra)
    for configuration, witness in extra.items():
        assert witness.dtype == configuration.dtype
        assert witness.width in BEYOND_RULE_WIDTHS


def test_the_original_kernel_passes_the_proofs_beyond_the_rule(beyond) -> None:
    """A sample of every kind (the whole set runs in `mutate`'s line map, which stops on the
    first failure of the original)."""
    from inspector.coverage.proof import prove

    _, extra = beyond
    by_kind: dict[tuple, list] = {}
    for configuration, witness in extra.items():
        key = (configuration.kernel, configuration.multi_row, configuration.peel,
               configuration.split, configuration.stream, configuration.w_early)  # fmt: skip
        by_kind.setdefault(key, []).append((configuration, witness))
    for items in by_kind.values():
        configuration, witness = items[len(items) // 2]
        proof = prove(configuration, witness)
        assert proof.passed, [o.detail for o in proof.outcomes if not o.passed]


def test_a_flag_parameter_passed_as_a_mutant_test_makes_its_branch_a_hand_made_one() -> None:
    sources = _sources()
    parts = sources[0]
    # The PAST_ROW branch's one statement (the tail mutants' lanes).
    line = 1 + parts.splitlines().index(
        "        mask = (cols < body) | ((cols >= row_end) & (cols < tile_end))"
    )
    in_branch = [s for s in mutation_sites(parts) if s.function == "_body_mask" and s.line == line]
    assert in_branch
    for site in in_branch:
        assert flag_branches(parts, site, sources) == ("masked_tail_inclusion", "unmasked_store")
    outside = [s for s in mutation_sites(parts) if s.function == "_body_mask" and s.line != line]
    assert outside
    assert all(flag_branches(parts, s, sources) is None for s in outside)
    # One call that passes anything but `MUTANT == NAME` (or a flag passed so) ends it.
    tampered = sources[1].replace("MUTANT == UNMASKED_STORE)", "EVEN)", 1)
    assert tampered != sources[1]
    assert flag_branches(parts, in_branch[0], [parts, tampered, sources[2]]) is None


BROADCAST_TTIR = textwrap.dedent(
    """\
    module {
      tt.func public @k(%w_ptr: !tt.ptr<f32>, %y_ptr: !tt.ptr<f32>, %n: i32, %r: i32) {
        %cst = arith.constant dense<0.0> : tensor<4xf32> loc(#loc1)
        %c = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32> loc(#loc1)
        %m = tt.splat %n : i32 -> tensor<4xi32> loc(#loc1)
        %mask = arith.cmpi slt, %c, %m : tensor<4xi32> loc(#loc1)
        %rows = tt.make_range {end = 2 : i32, start = 0 : i32} : tensor<2xi32> loc(#loc1)
        %rs = tt.splat %r : i32 -> tensor<2xi32> loc(#loc1)
        %row_ok = arith.cmpi slt, %rows, %rs : tensor<2xi32> loc(#loc1)
        %p = tt.splat %w_ptr : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>> loc(#loc1)
        %q = tt.addptr %p, %c : tensor<4x!tt.ptr<f32>>, tensor<4xi32> loc(#loc1)
        %w = tt.load %q, %mask, %cst : tensor<4x!tt.ptr<f32>> loc(#loc2)
        %w1 = tt.expand_dims %w {axis = 0 : i32} : tensor<4xf32> -> tensor<1x4xf32> loc(#loc1)
        %w2 = tt.broadcast %w1 : tensor<1x4xf32> -> tensor<2x4xf32> loc(#loc1)
        %y = arith.mulf %w2, %w2 : tensor<2x4xf32> loc(#loc1)
        %m1 = tt.expand_dims %mask {axis = 0 : i32} : tensor<4xi1> -> tensor<1x4xi1> loc(#loc1)
        %m2 = tt.broadcast %m1 : tensor<1x4xi1> -> tensor<2x4xi1> loc(#loc1)
        %o1 = tt.expand_dims %row_ok {axis = 1 : i32} : tensor<2xi1> -> tensor<2x1xi1> loc(#loc1)
        %o2 = tt.broadcast %o1 : tensor<2x1xi1> -> tensor<2x4xi1> loc(#loc1)
        %both = arith.andi %o2, %m2 : tensor<2x4xi1> loc(#loc1)
        %yp = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<2x4x!tt.ptr<f32>> loc(#loc1)
        tt.store %yp, %y, %both : tensor<2x4x!tt.ptr<f32>> loc(#loc1)
        tt.return loc(#loc1)
      } loc(#loc1)
    } loc(#loc1)
    #loc1 = loc("/k.py":4:8)
    #loc2 = loc("/k.py":7:12)
    """
)


def test_a_fill_spread_over_rows_is_unobserved_under_rows_and_its_own_columns() -> None:
    proven, why = equivalence.fill_unobserved(BROADCAST_TTIR, "k.py", (7, 7))
    assert proven, why
    # The store under the rows' mask alone sees the fill of the masked columns.
    rows_only = BROADCAST_TTIR.replace("tt.store %yp, %y, %both", "tt.store %yp, %y, %o2")
    assert equivalence.fill_unobserved(rows_only, "k.py", (7, 7)) == (
        False, "its value reaches a store that is not under its mask"
    )  # fmt: skip
    # Spread along the other axis, the columns' mask no longer lines up with the lanes.
    other_axis = BROADCAST_TTIR.replace(
        "%m1 = tt.expand_dims %mask {axis = 0", "%m1 = tt.expand_dims %mask {axis = 1"
    )
    assert not equivalence.fill_unobserved(other_axis, "k.py", (7, 7))[0]
    # An `or` does not imply either side.
    ored = BROADCAST_TTIR.replace("arith.andi %o2, %m2", "arith.ori %o2, %m2")
    assert not equivalence.fill_unobserved(ored, "k.py", (7, 7))[0]


def _copy_with(tmp_path: Path, file: str, before: str, after: str) -> str:
    root = tmp_path / "copy"
    shutil.copytree(_package(), root / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    target = root / "kernels" / file
    text = target.read_text()
    assert text.count(before) == 1
    target.write_text(text.replace(before, after))
    return str(root)


def test_rows_past_2_31_catch_a_dropped_int64_cast_and_pass_the_original(tmp_path) -> None:
    faithful = str(tmp_path / "faithful")
    shutil.copytree(_package(), Path(faithful) / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    assert _past_2_31_verdict(faithful, 600) is None
    dropped = _copy_with(
        tmp_path,
        "jit/tile.py",
        "            row = tl.program_id(0).to(tl.int64)\n",
        "            row = tl.program_id(0)\n",
    )
    outcome, killed_by, detail = _past_2_31_verdict(dropped, 600)
    assert outcome in ("killed", "crashed"), detail
    assert killed_by == ("rows past 2**31",)
    assert "one_row 64" in detail


def test_sites_reruns_only_the_named_mutants(tmp_path) -> None:
    kernel = tmp_path / "k.py"
    kernel.write_text((ROOT / "resources" / "kernels" / "tutorial.py").read_text())
    from inspector.check.user_kernel import loadable_kernel_spec

    spec = loadable_kernel_spec(f"{kernel}:rms_norm")
    sites = mutation_sites(kernel.read_text())
    mutants, left_out = run_mutants(spec, jobs=1, compare_ttir=False, only={"m002", "m004"})
    assert [m.id for m in mutants] == ["m002", "m004"]
    assert [m.site for m in mutants] == [sites[1], sites[3]]
    assert left_out == len(sites) - 2
    assert apply_site(kernel.read_text(), sites[1]) != kernel.read_text()


@pytest.mark.parametrize("ids", ["", "m5", "m005,x"])
def test_sites_refuses_what_is_not_a_list_of_mutant_ids(ids: str) -> None:
    done = subprocess.run(
        [sys.executable, "main.py", "mutate", "--sites", ids, "--out", "unused"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--sites must be mutant ids like m005" in done.stderr + done.stdout
    assert not (ROOT / "unused").exists()


def test_the_map_marks_the_layouts_beyond_the_rule(tmp_path, beyond) -> None:
    from inspector.coverage import child

    found, extra = beyond
    first_extra = next(iter(extra))
    first_rule = next(iter(found))
    path = tmp_path / "map.json"
    both = {first_rule: found[first_rule], first_extra: extra[first_extra]}
    child.write_map(path, both, beyond={first_extra})
    entries = child._read_map(path)
    assert [(c, b) for c, _, _, b in entries] == [(first_rule, False), (first_extra, True)]
    assert child._label(first_extra, True).endswith(" (beyond the rule)")


def test_a_statement_only_layouts_beyond_the_rule_run_gets_no_ttir_equivalence(tmp_path) -> None:
    """The launcher's TTIR signatures are of the rule's layouts: a statement only the others
    compile matches there vacuously."""
    from inspector.coverage import child

    path = tmp_path / "map.json"
    entries = [
        {"configuration": {}, "witness": {}, "beyond_rule": False, "lines": {"jit.py": [10]}},
        {"configuration": {}, "witness": {}, "beyond_rule": True, "lines": {"jit.py": [10, 20]}},
    ]
    path.write_text(json.dumps(entries))
    assert child.beyond_rule_only(path, ("jit.py", 20, 20)) is True
    assert child.beyond_rule_only(path, ("jit.py", 10, 10)) is False  # the rule too
    assert child.beyond_rule_only(path, ("jit.py", 30, 30)) is False  # nothing runs it
    del entries[1]["lines"]
    path.write_text(json.dumps(entries))
    assert child.beyond_rule_only(path, ("jit.py", 20, 20)) is False  # not recorded


_RSTD_GUARDS = """
import numpy as np, kernels
from kernels.layout import LaunchConfig
x = np.random.default_rng(3).standard_normal((3, 64))
run = kernels.run_checked(x, np.ones(64), eps=1e-6, dtype="float32", rstd=True,
                          config=LaunchConfig(False, 64, 1, 2))
print(run.rstd_oob_writes, run.configuration.label)
"""


def test_a_phantom_rows_rrms_stored_past_rstd_lands_in_its_guards(tmp_path) -> None:
    """Three rows on programs of two: the second program's phantom row has no rstd slot. The
    faithful tile masks its store; without the mask it lands in the guard past rstd."""

    def guarded_writes(first: str) -> list[str]:
        import os

        env = dict(os.environ, PYTHONPATH=os.pathsep.join([first, str(ROOT)]))
        done = subprocess.run([sys.executable, "-c", _RSTD_GUARDS], cwd=first, env=env,
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    faithful = tmp_path / "faithful"
    shutil.copytree(_package(), faithful / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    count, label = guarded_writes(str(faithful))
    assert (count, label) == ("0", "float32/tile/multi/vec4/even/row_mask")
    unmasked = _copy_with(
        tmp_path,
        "jit/tile.py",
        # the whole-tile path's store (16 spaces in), not the split tiles' (8)
        "\n                tl.store(rstd_ptr + row_ids[:, None], rrms, mask=row_ok)",
        "\n                tl.store(rstd_ptr + row_ids[:, None], rrms)",
    )
    assert guarded_writes(unmasked)[0] == "1"


def test_sites_that_the_slice_does_not_hold_are_refused_before_anything_runs(tmp_path) -> None:
    kernel = tmp_path / "k.py"
    kernel.write_text((ROOT / "resources" / "kernels" / "tutorial.py").read_text())
    count = len(mutation_sites(kernel.read_text()))
    done = subprocess.run(
        [sys.executable, "main.py", "mutate", "--kernel", f"{kernel}:rms_norm", "--sites",
         f"m001,m{count + 1:03d}", "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"--sites: m{count + 1:03d} not among this slice's mutants (m001..m{count:03d})" in (
        done.stderr + done.stdout
    )
    assert not (tmp_path / "out").exists()
