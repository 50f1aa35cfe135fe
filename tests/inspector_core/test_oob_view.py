"""Out-of-bounds writes on the lane grid, without a window: each distinct address drawn once,
on the tail lane that stored it, or in the margin row when no tile reaches it; hand-checked
addresses, then the real kernel's unmasked store (interpreter on a CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from inspector.model import oob_view, row_verdicts, viewdata
from oracle import scalar, tiled
from oracle.spec import make_problem

# 4 rows of width 70 in a tile of 128, row stride 72: a tail lane c of row r stores to 72 r + c.
GRID = {"rows": 4, "width": 70, "block": 128, "stride": 72}


def test_a_tail_store_is_drawn_on_the_lane_that_made_it() -> None:
    writes = oob_view.place_writes([70, 71, 142, 100], **GRID)
    cells = sorted(zip(writes.rows.tolist(), writes.lanes.tolist(), strict=True))
    # 100 is row 1 lane 28 in the buffer, but only row 0's tail lane 100 stores there.
    assert cells == [(0, 70), (0, 71), (0, 100), (1, 70)]
    assert writes.count == 4
    assert writes.margin.size == 0


def test_stores_past_the_buffer_are_the_last_rows_tail_and_beyond_the_tile_the_margin() -> None:
    end = 4 * 72  # 288: the first address past the last row
    # end + 55 is the last tile lane of row 3, the same address as 3 * 72 + 127: one write.
    writes = oob_view.place_writes([end, end + 55, 3 * 72 + 127, 3 * 72 + 128, -1], **GRID)
    assert writes.at(3, 72) == [(end, 72)]
    assert writes.at(3, 127) == [(end + 55, 72)]
    # One step past the last tile lane, and one element before row 0: no tile reaches them.
    assert writes.margin.tolist() == [-1, 3 * 72 + 128]
    assert writes.margin_lanes.tolist() == [71, 56]
    assert writes.count == 4


def test_a_repeated_address_is_one_write_and_the_model_and_kernel_share_a_frame() -> None:
    once = oob_view.place_writes([70, 70, 70], **GRID)
    assert once.count == 1
    merged = oob_view.merge(once, oob_view.place_writes([70, 142], **GRID))
    assert merged.count == 2
    other_frame = oob_view.place_writes([70], **{**GRID, "stride": 198})
    assert oob_view.merge(once, other_frame).count == 2  # another frame: another address


def test_where_text_names_padding_and_both_ends_of_the_buffer() -> None:
    where = {"rows": 4, "width": 70, "stride": 72}
    assert oob_view.where_text(71, **where) == "row 0 lane 71 (padding)"
    assert oob_view.where_text(-3, **where) == "3 element(s) before row 0"
    assert oob_view.where_text(288, **where) == "1 element(s) past the end of the buffer"


@pytest.fixture(scope="module")
def unmasked_run():
    from inspector.check import pipeline

    rng = np.random.default_rng(0)
    problem = make_problem(
        rng.standard_normal((4, 70)), np.ones(70), eps=1e-6, dtype="float32", row_stride=72
    )
    reference = scalar.reference(problem)
    run = pipeline.run_and_judge_kernel(problem, reference.y, mutant="unmasked_store")
    return problem, tiled.model(problem), run


def test_every_out_of_bounds_store_of_the_real_kernel_is_drawn_once_on_a_tail_lane(
    unmasked_run,
) -> None:
    problem, model, run = unmasked_run
    states, writes = viewdata.lane_states(model, run.stores.output)
    assert run.stores.output  # the guard saw the mutant's stores
    assert writes.count == len(set(run.stores.output))
    assert (states == viewdata.OOB_WRITE).sum() == writes.count
    assert writes.margin.size == 0
    assert (writes.lanes >= problem.width).all()  # written tail lanes, never a valid lane
    # The last row's whole tail stores past the buffer: every one of its lanes is drawn.
    assert (states[3, problem.width :] == viewdata.OOB_WRITE).all()
    text = viewdata.hover_text(problem, model, states, 3, 100, writes=writes)
    assert "out-of-bounds WRITE: stored to address 316" in text
    assert "past the end of the buffer" in text
    assert "masked tail lane that STORED" in text


def test_the_image_grows_a_margin_row_only_for_writes_no_tile_reaches(unmasked_run) -> None:
    problem, model, _ = unmasked_run
    lut = np.zeros((256, 4), dtype=np.uint8)
    inside = viewdata.lane_image(model, lut, (70,))
    assert inside.rgba.shape[0] == problem.rows
    outside = viewdata.lane_image(model, lut, (70, 4 * 72 + 60))
    assert outside.margin
    assert outside.rgba.shape[0] == problem.rows + 1
    lane = int(outside.writes.margin_lanes[0])
    assert tuple(outside.rgba[-1, lane]) == viewdata.STATE_COLORS[viewdata.OOB_WRITE]
    text = viewdata.margin_hover_text(problem, outside.writes, range(lane, lane + 1))
    assert "stored to address 348" in text


def test_a_per_row_scale_shows_a_small_row_beside_a_large_one() -> None:
    x = np.vstack([np.linspace(-1e-3, 1e-3, 8), np.linspace(-1e3, 1e3, 8)])
    problem = make_problem(x, np.ones(8), eps=1e-6, dtype="float32")
    model = tiled.model(problem)
    lut = np.arange(256, dtype=np.uint8)[:, None].repeat(4, axis=1)
    shared = viewdata.lane_image(model, lut)
    own = viewdata.lane_image(model, lut, per_row=True)
    # One scale: the small row sits at the map's middle; per row it spans the map like row 1.
    assert np.ptp(shared.rgba[0, :, 0].astype(int)) <= 1
    assert np.ptp(own.rgba[0, :, 0].astype(int)) == 255
    assert own.per_row


def test_the_worst_row_is_the_kernels_and_a_nan_row_is_worst() -> None:
    assert row_verdicts.worst_row(np.array([0.1, np.nan, 0.5]), np.array([9.0, 0, 0])) == 1
    assert row_verdicts.worst_row(None, np.array([0.0, 3.0, 1.0])) == 1
    assert row_verdicts.worst_row(None, None) is None
