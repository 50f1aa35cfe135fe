"""A kernel declares its domain (kernels.sandbox.domain): fixtures outside it are out of domain,
neither passed nor failed, counted by name; the receipt, the report and verify say so; a declaration
that is not one is refused by key when the kernel loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.sandbox.domain import DomainError, describe, outside, parse_domain
from oracle import fixtures, matrix

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "resources" / "kernels" / "tutorial.py"


def run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ([1, 2], "must be a dict; got list"),
        ({"max_rows": 4}, "unknown key(s) max_rows"),
        ({"min_width": 0}, "inspector_domain.min_width must be an integer >= 1; got 0"),
        ({"max_width": 1.5}, "inspector_domain.max_width must be an integer >= 1; got 1.5"),
        ({"min_width": 8, "max_width": 7}, "inspector_domain.max_width must be >= min_width (8)"),
        ({"dtypes": []}, "inspector_domain.dtypes must be a non-empty list"),
        ({"dtypes": ["float64"]}, "inspector_domain.dtypes must be a non-empty list"),
        ({"row_strides": "padded"}, "inspector_domain.row_strides must be 'any' or 'contiguous'"),
    ],
)
def test_a_declaration_that_is_not_one_is_refused_by_key(value, names) -> None:
    with pytest.raises(DomainError, match=None) as caught:
        parse_domain(value)
    assert names in str(caught.value)


def test_each_bound_holds_at_the_bound_and_not_one_past_it() -> None:
    domain = parse_domain({"min_width": 8, "max_width": 8, "dtypes": ["float16"]})
    assert domain == {"min_width": 8, "max_width": 8, "dtypes": ["float16"], "row_strides": "any"}
    assert outside(domain, 8, "float16", 8) == ""
    assert outside(domain, 9, "float16", 9) == "width 9 > max_width 8"
    assert outside(domain, 7, "float16", 7) == "width 7 < min_width 8"
    assert outside(domain, 8, "bfloat16", 8) == "dtype bfloat16 not in float16"
    contiguous = parse_domain({"row_strides": "contiguous"})
    assert outside(contiguous, 70, "float32", 70) == ""
    assert outside(contiguous, 70, "float32", 71) == (
        "row stride 71 != width 70 (row_strides: contiguous)"
    )
    assert parse_domain(None) is None
    assert outside(None, 10**6, "float32", 10**6) == ""
    assert describe(None) == "none declared: every input the inspector makes"
    assert describe(domain) == "widths 8..8, dtypes float16, row strides any"


def test_out_of_domain_is_neither_a_pass_a_failure_nor_a_kill() -> None:
    def implementation(problem, poison, mutant):
        if problem.width > 64:
            raise matrix.OutOfDomain(f"width {problem.width} > max_width 64")
        if mutant is not None:
            raise ValueError("a mutant that fails what it runs")
        return matrix.model_implementation(problem, poison, None)

    chosen = [f for f in fixtures.FIXTURES if f.name in ("width_31", "width_70")]
    result = matrix.kill_matrix(implementation, ["broken"], chosen, target="kernel")
    wide = {o.fixture: o for o in result.baseline}["width_70"]
    assert wide.actual == matrix.OUT_OF_DOMAIN
    assert wide.detail == "out of the kernel's declared domain: width 70 > max_width 64"
    assert result.baseline_failures == ()
    assert [o.fixture for o in result.out_of_domain] == ["width_70"]
    assert result.killed_by("broken") == ("width_31",)
    assert result.passed


def test_a_kernel_that_declares_its_limits_passes_within_them_and_says_what_it_left(tmp_path):
    kernel = tmp_path / "limited.py"
    kernel.write_text(
        TUTORIAL.read_text()
        + '\nrms_norm.inspector_domain = {"max_width": 4096, "dtypes": ["float32", "float16"]}\n'
    )
    out = tmp_path / "out"
    done = run_main("check", "--quiet", "--kernel", f"{kernel}:rms_norm", "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    receipt = json.loads((out / "receipt.json").read_text())
    assert receipt["kernel"]["domain"] == {
        "min_width": 1, "max_width": 4096, "dtypes": ["float32", "float16"], "row_strides": "any"
    }  # fmt: skip
    outside_names = {
        f["name"] for f in receipt["fixtures"]
        if f["target"] == "kernel" and f["actual"] == "out of domain"
    }  # fmt: skip
    expected = {
        f.name for f in fixtures.FIXTURES
        if f.check != "rejection" and (f.build().width > 4096 or f.build().dtype == "bfloat16")
    }  # fmt: skip
    assert outside_names == expected
    assert {"max_width", "bfloat16_rows"} <= outside_names
    runnable = sum(f.check != "rejection" for f in fixtures.FIXTURES)
    assert (
        f"kernel passed {runnable - len(expected)}/{runnable} runnable "
        f"({len(expected)} out of its declared domain)" in done.stdout
    )
    assert "kernel domain: widths 1..4096, dtypes float32, float16, row strides any" in done.stdout
    verified = run_main("verify", str(out / "receipt.json"), str(out / "receipt.csv"))
    assert verified.returncode == 0, verified.stdout
    assert f"declared domain: {len(expected)} fixture(s) outside" in verified.stdout


def test_a_kernel_whose_declaration_is_not_one_is_refused_at_load(tmp_path) -> None:
    kernel = tmp_path / "bad_domain.py"
    kernel.write_text(TUTORIAL.read_text() + '\nrms_norm.inspector_domain = {"max_width": 0}\n')
    done = run_main("check", "--kernel", f"{kernel}:rms_norm", "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert "inspector_domain.max_width must be an integer >= 1; got 0" in done.stderr
