"""The tooltip of a downsampled grid cell names every lane the cell stands for."""

from __future__ import annotations

import numpy as np

from inspector.model import viewdata
from inspector.model.cell_summary import block_hover_text, block_of
from oracle import scalar, tiled
from oracle.spec import make_problem


def _case():
    rng = np.random.default_rng(3)
    problem = make_problem(x=rng.standard_normal((10, 300)), weight=np.ones(300), eps=1e-6)
    model = tiled.model(problem)
    expected = scalar.reference(problem).y
    kernel = expected.copy()
    kernel[5, 10] += 0.5  # one wrong lane, not the one under the cursor
    states, _ = viewdata.lane_states(model)
    return problem, model, states, expected, kernel


def test_a_cell_names_its_worst_lane_not_only_the_lane_under_the_cursor() -> None:
    problem, model, states, expected, kernel = _case()
    text = block_hover_text(
        problem, model, states, 4, 8, (4, 8), expected_y=expected, kernel_y=kernel
    )
    assert text.startswith("cell: rows 4-7, lanes 8-15 (32 lanes; downsampled x4 rows, x8 lanes)")
    assert "valid 32" in text
    assert "max error = 0.5 at row 5, lane 10 (kernel vs scalar reference)" in text
    x = np.abs(problem.x[4:8, 8:16])
    r, c = np.unravel_index(int(np.argmax(x)), x.shape)
    assert f"max |x| = {x.max():.7g} at row {4 + r}, lane {8 + c}" in text
    # The lane under the cursor follows in full.
    assert text.endswith(
        viewdata.hover_text(problem, model, states, 4, 8, expected_y=expected, kernel_y=kernel)
    )


def test_a_cell_over_the_tail_counts_valid_and_masked_lanes() -> None:
    problem, model, states, expected, _ = _case()
    text = block_hover_text(problem, model, states, 0, 297, (4, 8), expected_y=expected)
    assert "lanes 296-303" in text
    assert "valid 16 · masked tail 16" in text
    assert "max error" not in text  # no kernel run: nothing to compare


def test_a_cell_at_the_edge_is_clipped_and_one_by_one_is_the_lane_alone() -> None:
    problem, model, states, _, _ = _case()
    assert block_of(9, 511, 4, 8, states.shape) == (range(8, 10), range(504, 512))
    text = block_hover_text(problem, model, states, 9, 0, (4, 8))
    assert text.startswith("cell: rows 8-9, lanes 0-7 (16 lanes;")
    assert block_hover_text(problem, model, states, 2, 3, (1, 1)) == viewdata.hover_text(
        problem, model, states, 2, 3
    )
