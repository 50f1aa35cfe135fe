"""First divergence and the stepper judged by the dtype's tolerance, not by bit-equality: the
example kernels (run in their child process) and the bundled kernel with its unmasked_store
mutant give none, the rrms and the first stray store; a store into the next row's data is
drawn and named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inspector.check.pipeline import run_and_judge_kernel, run_and_judge_user_kernel
from inspector.check.user_kernel import UserImplementation
from inspector.model import kernel_view, oob_view, reduction_steps, viewdata
from inspector.model.analysis import analyse
from inspector.model.kernel_view import KernelOutput
from kernels.instruments.checked import POISON
from kernels.sandbox.usercode import parse_kernel_spec
from oracle.spec import make_problem, synthetic_problem

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "kernels"


def _user_run(name: str, problem):
    """The example kernel ``name`` run once on ``problem`` in its child process."""
    spec = parse_kernel_spec(f"{EXAMPLES / name}:rms_norm")
    user = UserImplementation(spec, poison=POISON)
    try:
        reference = analyse(problem, None).reference
        return reference, run_and_judge_user_kernel(user, problem, reference.y)
    finally:
        user.close()


def _divergence(problem, reference, run) -> kernel_view.Divergence:
    output = KernelOutput(run.y, "test", stores=run.stores)
    return kernel_view.first_divergence(problem, reference, output)


def _notes(problem, reference, row, output) -> dict[str, str]:
    analysis = analyse(problem, None)
    steps = reduction_steps.reduction_steps(problem, analysis.model, row, reference)
    inferred = kernel_view.inferred_of(problem, output)
    annotated = kernel_view.annotate_steps(steps, problem, reference, row, output, inferred)
    return {step.key: step.kernel for step in annotated if step.kernel}


def test_the_tutorial_kernel_within_tolerance_has_no_divergence() -> None:
    problem = synthetic_problem(4, 70, seed=0)
    reference, run = _user_run("tutorial.py", problem)
    assert not np.array_equal(run.y, reference.y)  # float32 rounding, not bit-equal
    found = _divergence(problem, reference, run)
    assert (found.kind, found.step, found.passed) == ("none", "", True)
    assert len(found.lines) == 1
    line = found.lines[0]
    assert line.startswith(
        f"no divergence: within tolerance everywhere (worst: row {found.row}, lane {found.lane}: "
    )
    assert "× its tolerance" in line
    assert "(float32: atol=1e-05 + rtol=2e-05 · |expected|)" in line
    # The stepper never says "part HERE" on a row within tolerance.
    notes = _notes(problem, reference, found.row, KernelOutput(run.y, "test"))
    assert not any("part HERE" in note for note in notes.values())
    assert "this row's output is within tolerance: nothing parts here" in notes["store"]


def test_the_mean_over_block_kernel_parts_at_the_rrms() -> None:
    problem = synthetic_problem(4, 70, seed=0)
    reference, run = _user_run("bug_mean_over_block.py", problem)
    found = _divergence(problem, reference, run)
    assert (found.kind, found.step, found.passed) == ("output", "rsqrt", False)
    text = "\n".join(found.lines)
    assert "the stepper shows row 0 at the step where they part: rsqrt (the rrms)" in text
    assert "behaves like a divisor of BLOCK (128) instead of width (70)" in text
    notes = _notes(problem, reference, found.row, KernelOutput(run.y, "test"))
    assert notes["rsqrt"].endswith("kernel and model part HERE")
    assert "part HERE" not in notes["store"]


def test_the_eps_outside_root_kernel_agrees_on_unit_rows_and_parts_at_the_rrms_on_small_ones():
    problem = synthetic_problem(3, 40, seed=1)
    reference, run = _user_run("bug_eps_outside_root.py", problem)
    assert _divergence(problem, reference, run).kind == "none"  # eps is 1e-6 of a mean square ~1
    # Rows whose mean square is near eps: 1 / (rms + eps) is far from 1 / sqrt(ms + eps).
    small = make_problem(problem.x * 1e-3, problem.weight, eps=1e-6, dtype="float32")
    reference, run = _user_run("bug_eps_outside_root.py", small)
    found = _divergence(small, reference, run)
    assert (found.kind, found.step) == ("output", "rsqrt")
    assert "behaves like eps outside the square root" in "\n".join(found.lines)


def test_the_unmasked_store_kernel_is_taken_to_its_first_stray_store() -> None:
    problem = synthetic_problem(4, 70, seed=0)
    reference, run = _user_run("bug_unmasked_store.py", problem)
    found = _divergence(problem, reference, run)
    # Its output agrees; its first store past row 0's 70 elements lands in the guard after it.
    assert (found.kind, found.row, found.lane, found.step) == ("stores", 0, 70, "store")
    assert not found.passed
    assert found.lines[0].endswith("but it stored out of bounds:")
    assert (
        "first stray store: address 70 (row 0 lane 70 (padding)), drawn on row 0's tail lane 70"
        in (found.lines)
    )
    notes = _notes(problem, reference, 0, KernelOutput(run.y, "t", stores=run.stores))
    assert "this row's tail stored out of bounds: 58 into a guard (lanes 70..127)" in notes["store"]
    assert notes["store"].endswith("kernel and model part HERE, at the masked store")


@pytest.fixture(scope="module")
def bundled():
    """The bundled kernel and its unmasked_store mutant on 4 x 72 (stride = width)."""
    problem = synthetic_problem(4, 72, seed=0)
    reference = analyse(problem, None).reference
    faithful = run_and_judge_kernel(problem, reference.y)
    unmasked = run_and_judge_kernel(problem, reference.y, mutant="unmasked_store")
    return problem, reference, faithful, unmasked


def test_the_bundled_kernel_has_none_and_its_unmasked_store_mutant_its_first_stray_store(
    bundled,
) -> None:
    problem, reference, faithful, unmasked = bundled
    assert _divergence(problem, reference, faithful).kind == "none"
    found = _divergence(problem, reference, unmasked)
    # Lanes 72..127 of the last row store past the buffer: the first the guard saw.
    assert (found.kind, found.row, found.lane, found.step) == ("stores", 3, 72, "store")
    text = "\n".join(found.lines)
    assert "first stray store: address 288 (1 element(s) past the end of the buffer)" in text
    assert "and 168 cross-row store(s) (inferred, ▼ on the grid): rows 0..2" in text


def test_cross_row_stores_are_drawn_on_the_lane_that_stores_and_named_where_they_land(
    bundled,
) -> None:
    problem, reference, _, unmasked = bundled
    model = analyse(problem, None).model
    states, writes = viewdata.lane_states(model, unmasked.stores.output)
    # Rows 0..2: lanes 72..127 store into the next row's lanes 0..55, where no guard sees it.
    assert (states[:3, 72:] == viewdata.CROSS_ROW).all()
    assert (states[3, 72:] == viewdata.OOB_WRITE).all()
    assert (states[:, :72] == viewdata.VALID).all()
    assert writes.cross.count == 3 * 56
    assert viewdata.STATE_GLYPHS[viewdata.CROSS_ROW] not in (
        viewdata.STATE_GLYPHS[viewdata.OOB_WRITE],
        viewdata.STATE_GLYPHS[viewdata.POISON_IN],
    )
    source = viewdata.hover_text(problem, model, states, 1, 100, reference.y, unmasked.y, writes)
    assert "cross-row STORE (inferred): stores to address 172 = row 2, lane 28" in source
    assert source.endswith("cross-row store (inferred)")
    target = viewdata.hover_text(problem, model, states, 2, 28, reference.y, unmasked.y, writes)
    assert "stray store from row 1, lane 100 lands here (cross-row, inferred)" in target
    notes = _notes(problem, reference, 1, KernelOutput(unmasked.y, "t", stores=unmasked.stores))
    assert "56 into row 2's data (lanes 72..127; cross-row, inferred)" in notes["store"]


def test_a_store_into_padding_is_no_cross_row_store() -> None:
    # Stride 200 > tile 128: every tail lane stores into its own row's padding.
    placed = oob_view.place_run((70, 270, 127), rows=2, width=70, block=128, stride=200)
    assert placed.cross.count == 0
    # Stride 70: lane 100 of row 0 lands on row 1's lane 30; row 1's on row 2's (no such row).
    placed = oob_view.place_run((140 + 30,), rows=2, width=70, block=128, stride=70)
    assert placed.cross.count == 1
    assert placed.cross.from_lane(0, 100) == (100, 1, 30, 1)
    assert placed.cross.into(1, 30) == [(0, 100)]


def test_the_rrms_parts_only_past_the_tolerance() -> None:
    problem = synthetic_problem(4, 70, seed=0)
    reference = analyse(problem, None).reference
    rrms = reference.rrms[:, None]
    w = problem.weight[None, :]
    # Every rrms off by half the relative tolerance: bit-different, within it, no divergence.
    close = np.float32(problem.x * (rrms * (1 + 1e-5)) * w).astype(np.float64)
    found = kernel_view.first_divergence(problem, reference, KernelOutput(close, "t"))
    assert found.kind == "none"
    notes = _notes(problem, reference, 0, KernelOutput(close, "t"))
    assert not any("part HERE" in note for note in notes.values())
    # Off by 1e-3 (50 × rtol): the rrms alone takes the output past it.
    far = np.float32(problem.x * (rrms * (1 + 1e-3)) * w).astype(np.float64)
    found = kernel_view.first_divergence(problem, reference, KernelOutput(far, "t"))
    assert (found.kind, found.step) == ("output", "rsqrt")
    assert "they part at the rrms: each row's output is x * c * w with the wrong c" in found.lines
    notes = _notes(problem, reference, found.row, KernelOutput(far, "t"))
    assert notes["rsqrt"].endswith("kernel and model part HERE")
