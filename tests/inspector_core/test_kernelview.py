"""The kernel's own intermediates in the views, without a window: the inferred row-table
columns, the stepper's kernel lines, the hover, the grid's out-of-bounds frame and the first
divergence, on outputs built to have one known fault each."""

from __future__ import annotations

import numpy as np
import pytest

from inspector.check.results import StoresOutOfBounds
from inspector.model import kernel_view, reduction_steps, viewdata
from inspector.model.analysis import analyse
from inspector.model.kernel_view import KernelOutput
from oracle import compare as cmp
from oracle.spec import synthetic_problem


@pytest.fixture(scope="module")
def analysed():
    problem = synthetic_problem(4, 70, seed=0)
    return problem, analyse(problem, None)


def _mean_over_block(problem, reference) -> np.ndarray:
    """What a kernel dividing by BLOCK instead of width outputs."""
    rrms = 1.0 / np.sqrt(reference.sum_squares / problem.block + problem.eps)
    return problem.x * rrms[:, None] * problem.weight[None, :]


def test_the_mean_over_block_fault_parts_at_the_rsqrt_with_its_signature(analysed) -> None:
    problem, analysis = analysed
    reference = analysis.reference
    y = _mean_over_block(problem, reference)
    found = kernel_view.first_divergence(problem, reference, KernelOutput(y, "test"))
    # The worst lane against the tolerance (|error| / (atol + rtol * |expected|)).
    ratio = kernel_view.tolerance_ratio(y, reference.y, cmp.TOLERANCES["float32"])
    assert (found.row, found.lane) == np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    assert found.step == "rsqrt"
    assert found.kind == "output"
    assert not found.passed
    text = "\n".join(found.lines)
    assert found.lines[0].startswith("kernel vs scalar reference: FAIL")
    assert f"worst lane outside tolerance: row {found.row}, lane {found.lane}:" in text
    assert "280 element(s) in 4 row(s) outside tolerance; the first at row 0, lane 0" in text
    assert "behaves like a divisor of BLOCK (128) instead of width (70)" in text


def test_a_wrong_lane_parts_at_the_output(analysed) -> None:
    problem, analysis = analysed
    reference = analysis.reference
    y = reference.y.copy()
    y[2, 33] += 0.5
    found = kernel_view.first_divergence(problem, reference, KernelOutput(y, "test"))
    assert (found.row, found.lane, found.step) == (2, 33, "store")
    assert any("1 of 70 lanes differ" in line for line in found.lines)


def test_an_agreeing_output_says_so_and_an_out_of_bounds_store_is_found(analysed) -> None:
    problem, analysis = analysed
    reference = analysis.reference
    same = kernel_view.first_divergence(problem, reference, KernelOutput(reference.y, "t"))
    assert same.passed
    assert (same.step, same.kind) == ("", "none")
    assert len(same.lines) == 1
    assert same.lines[0].startswith("no divergence: within tolerance everywhere (worst: row ")
    assert "|error| 0 = 0× its tolerance" in same.lines[0]
    # Stores past row 1's width in a frame of 70 + 128 (a user kernel's output buffer).
    stores = KernelOutput(
        reference.y, "t", stores=StoresOutOfBounds(output=(198 + 70, 198 + 71), row_stride=198)
    )
    found = kernel_view.first_divergence(problem, reference, stores)
    assert not found.passed
    assert (found.row, found.lane, found.step, found.kind) == (1, 70, "store", "stores")
    assert found.lines[0].startswith("kernel output within tolerance everywhere (worst: ")
    assert found.lines[0].endswith("but it stored out of bounds:")
    assert "kernel stored 2 element(s) out of bounds (row 1 lane 70 (padding)" in found.lines[1]
    assert "first stray store: address 268 (row 1 lane 70 (padding))" in found.lines[2]


def test_a_difference_within_tolerance_is_named_as_such(analysed) -> None:
    problem, analysis = analysed
    reference = analysis.reference
    y = reference.y.copy()
    y[1, 4] = np.nextafter(np.float32(y[1, 4]), np.float32(np.inf))
    found = kernel_view.first_divergence(problem, reference, KernelOutput(y, "t"))
    assert found.passed
    assert (found.row, found.lane, found.step, found.kind) == (1, 4, "", "none")
    assert found.lines[0].startswith(
        "no divergence: within tolerance everywhere (worst: row 1, lane 4: kernel "
    )
    assert "× its tolerance" in found.lines[0]


def test_the_row_table_puts_the_inferred_values_beside_scalar_and_tiled(analysed) -> None:
    problem, analysis = analysed
    reference, model = analysis.reference, analysis.model
    output = KernelOutput(_mean_over_block(problem, reference), "t")
    inferred = kernel_view.inferred_of(problem, output)
    table = viewdata.row_columns(problem, reference, model)
    columns = kernel_view.with_inferred(
        table, kernel_view.inferred_columns(problem, reference, inferred)
    )
    names = [c.name for c in columns]
    assert names[names.index("mean² tiled") + 1] == "mean² kernel (inferred)"
    assert names[names.index("rrms tiled") + 1] == "rrms kernel (inferred)"
    assert names[names.index("rrms rel Δ") + 1] == "rrms inferred / scalar"
    by_name = {c.name: c.values for c in columns}
    np.testing.assert_allclose(by_name["rrms inferred / scalar"], np.sqrt(128 / 70), rtol=1e-5)
    np.testing.assert_allclose(
        by_name["mean² kernel (inferred)"], reference.sum_squares / 128, rtol=1e-9
    )
    blank = kernel_view.inferred_columns(problem, reference, None)
    table_names = {c.name for c in table}
    blank_columns = [
        c for c in kernel_view.with_inferred(table, blank) if c.name not in table_names
    ]
    assert len(blank_columns) == 3
    assert all(np.isnan(c.values).all() for c in blank_columns)


def test_the_bundled_kernels_rstd_output_is_shown_exact_in_table_and_stepper(analysed) -> None:
    from inspector.check.pipeline import run_and_judge_kernel

    problem, analysis = analysed
    reference, model = analysis.reference, analysis.model
    run = run_and_judge_kernel(problem, reference.y, mutant="sum_instead_of_mean", rstd=True)
    assert run.rstd.shape == (problem.rows,)
    # The mutant's own rrms, exactly: rsqrt(sum of squares + eps), in float32.
    np.testing.assert_allclose(run.rstd, 1 / np.sqrt(reference.sum_squares + problem.eps), 2e-6)
    output = KernelOutput(run.y, "Run kernel mutant sum_instead_of_mean", rstd=run.rstd)
    table = viewdata.row_columns(problem, reference, model)
    inferred = kernel_view.inferred_of(problem, output)
    columns = kernel_view.with_inferred(
        table, kernel_view.inferred_columns(problem, reference, inferred, run.rstd)
    )
    names = [c.name for c in columns]
    at = names.index("rrms tiled")
    assert names[at + 1 : at + 3] == ["rrms kernel (inferred)", "rrms kernel (rstd, exact)"]
    np.testing.assert_array_equal(columns[at + 2].values, run.rstd)
    steps = reduction_steps.reduction_steps(problem, model, 2, reference)
    notes = {
        s.key: s.kernel
        for s in kernel_view.annotate_steps(steps, problem, reference, 2, output, inferred)
    }
    assert f"its own rrms (rstd output, exact) = {float(run.rstd[2]):.9g}" in notes["rsqrt"]
    assert "kernel and model part HERE" in notes["rsqrt"]
    plain = run_and_judge_kernel(problem, reference.y, mutant="sum_instead_of_mean")
    assert plain.rstd is None
    np.testing.assert_array_equal(plain.y, run.y)  # the store changes nothing else
    assert kernel_view.exact_rstd(KernelOutput(run.y, "t", rstd=run.rstd[:2]), 4) is None


def test_the_stepper_shows_the_kernels_value_at_the_mean_rsqrt_and_store(analysed) -> None:
    problem, analysis = analysed
    reference, model = analysis.reference, analysis.model
    steps = reduction_steps.reduction_steps(problem, model, 1, reference)
    empty = kernel_view.annotate_steps(steps, problem, reference, 1, None, None)
    assert {s.key for s in empty if s.kernel} == {"mean", "rsqrt", "store"}
    assert all("not run yet" in s.kernel for s in empty if s.kernel)
    output = KernelOutput(_mean_over_block(problem, reference), "Run kernel, interpreter")
    inferred = kernel_view.inferred_of(problem, output)
    annotated = {
        s.key: s.kernel
        for s in kernel_view.annotate_steps(steps, problem, reference, 1, output, inferred)
    }
    assert "part HERE" in annotated["rsqrt"]
    assert f"rrms = {inferred.rrms[1]:.9g} inferred" in annotated["rsqrt"]
    assert "1.35225 × the scalar reference's" in annotated["rsqrt"]
    assert "part HERE" not in annotated["store"]
    assert annotated["mean"].startswith("kernel (Run kernel, interpreter): mean² = ")


def test_the_hover_shows_w_the_kernels_y_the_expected_y_and_the_error(analysed) -> None:
    problem, analysis = analysed
    reference, model = analysis.reference, analysis.model
    states, _ = viewdata.lane_states(model)
    y = reference.y.copy()
    y[0, 3] += 0.25
    text = viewdata.hover_text(problem, model, states, 0, 3, reference.y, y)
    assert f"w = {problem.weight[3]:.7g}" in text
    assert f"y (kernel) = {y[0, 3]:.7g}" in text
    assert f"expected y = {reference.y[0, 3]:.7g} (scalar reference)" in text
    assert "error = 0.25 (relative" in text
    not_run = viewdata.hover_text(problem, model, states, 0, 3, reference.y, None)
    assert "y (kernel) = not run yet" in not_run
    assert "error" not in not_run


def test_out_of_bounds_stores_land_on_the_grid_in_their_own_frame(analysed) -> None:
    _, analysis = analysed
    model = analysis.model
    # Frame 198 (70 + a guard of 128 per row): row 2 lane 100 is on the grid, lane 150 is not.
    states, writes = viewdata.lane_states(model, (2 * 198 + 100, 2 * 198 + 150), 198)
    assert states[2, 100] == viewdata.OOB_WRITE
    assert (states == viewdata.OOB_WRITE).sum() == 1
    assert writes.margin.tolist() == [2 * 198 + 150]
    assert writes.count == 2
