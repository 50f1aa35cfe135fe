"""The batch-invariance certificate's parts, one at a time (kernels/instruments/invariance.py):
the batch sizes it tries, where rows start in a program, the ulp distance, the CUDA graph's
verdict, the batch-invariant mode's largest batch, and the counts and per-row ulps a certificate
reports.

The launches are replaced by recorders (monkeypatch) that return the input's rows, with chosen
rows moved by a known number of ulps, so everything here runs in milliseconds; the real launches
are test_kernel_invariance.py's and test_kernel_batch_invariant.py's.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import kernels.api
from kernels.instruments import invariance as inv
from kernels.launcher import MAX_ROWS
from kernels.layout import (
    LOOP_PROBLEM_BYTES,
    STREAM_TILE_BYTES,
    choose_config,
    row_thresholds,
    sm_count_for,
)
from kernels.plans import invariant_config

DEVICE = torch.device("cpu")
SM = sm_count_for(DEVICE)
MIB = 2**20
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
INT = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


# --- candidate_batches ---------------------------------------------------------------------


@pytest.mark.parametrize("sm", [132, 114, 78, 1])
@pytest.mark.parametrize(
    ("width", "itemsize"), [(70, 4), (1000, 2), (4096, 4), (2501, 2), (1, 2), (65536, 4)]
)
def test_candidate_batches_are_every_change_point_of_the_rule_with_both_neighbours(
    width: int, itemsize: int, sm: int
) -> None:
    got = inv.candidate_batches(width, itemsize, sm)
    assert got == sorted(set(got))  # ascending, each once
    found = set(got)
    assert min(got) >= 1
    assert max(got) <= MAX_ROWS
    assert 1 in found
    assert 2 in found
    # The last row under each of the rule's fixed row thresholds, and both its neighbours: the
    # threshold's first row itself and the row before the last.
    fixed = row_thresholds(sm)
    assert {16385, 8193} <= fixed
    for start in fixed:  # on one SM a few long rows' bound can be row 1 or 2
        assert {start - 2, start - 1, start} - {-1, 0} <= found, start
    # Every power of two a batch can have (2**31 > MAX_ROWS), each with both neighbours.
    powers = [2**k for k in range(31)]
    assert powers[-1] <= MAX_ROWS < 2**31
    for power in powers:
        assert {power - 1, power, power + 1} - {0} <= found, power
    # The rows per program halve while the grid has fewer than four programs per SM: rows per
    # program 2, 4, ..., 8192 start one row past (4 * SM - 1) * 1, 2, ..., 4096 rows.
    halvings = [(4 * sm - 1) * 2**k for k in range(13)]
    assert halvings[-1] == (4 * sm - 1) * 4096
    for rows in halvings:
        assert {rows - 1, rows, rows + 1} - {0} <= found, rows
    # The rows where the problem crosses the tile's stream bytes and the column loop's bytes.
    row_bytes = width * itemsize
    crossings = [STREAM_TILE_BYTES // row_bytes, LOOP_PROBLEM_BYTES // row_bytes]
    for rows in crossings:
        assert {rows - 1, rows, rows + 1} - {0} <= found, rows
    # And nothing else.
    points = {1, *(start - 1 for start in fixed), *powers, *halvings, *crossings}
    near = {p - 1 for p in points} | points | {p + 1 for p in points}
    assert found == {p for p in near if 1 <= p <= MAX_ROWS}
    assert MAX_ROWS not in found  # 2**31 - 1 neighbours no change point


def test_candidate_batches_count_for_a_short_fp32_row() -> None:
    # 70 fp32 (280 bytes) on 132 SMs, counted by hand: 31 powers of two (1 to 5 around 1, 2
    # and 4, then 3 around each of the 28 from 8 to 2**30: 89), the 13 halvings of 527 rows
    # (527 * 2**k, none next to a power of two: 39), the fixed thresholds' last rows 16384,
    # 8192 (powers), 2112, 1056, 528, 264 (2112, 1056 and 528 next to a halving: 527 * 4 = 2108
    # is not, 1054 and 527 are; 264 is not): 2111..2113 and 263..265 add 6, 1055..1057 adds
    # 1056 and 1057, 527..529 adds 529; the stream crossing 29959 and the loop crossing 239674
    # add 3 each. The few long rows' bounds (row_thresholds: a loop of at most 132 rows, and
    # each part count's 264 // parts + 1, 265 already there) add 131..133, 87..89, 65..67 (65
    # next to 64), 51..53, 43..45 and 36..38, and 34 (33 next to 32): 18.
    got = inv.candidate_batches(70, 4, 132)
    assert STREAM_TILE_BYTES // 280 == 29959
    assert LOOP_PROBLEM_BYTES // 280 == 239674
    assert len(got) == 89 + 39 + 6 + 2 + 1 + 3 + 3 + 18
    assert {263, 264, 265, 1055, 1056, 1057, 529, 2111, 2112, 2113} <= set(got)
    assert {34, 36, 37, 38, 66, 67, 131, 132, 133} <= set(got)
    assert 35 not in got
    assert 262 not in got
    assert 266 not in got
    assert 2114 not in got


# --- positions_for -------------------------------------------------------------------------


def _config(per: int):
    return dataclasses.replace(choose_config(1, 64, 4, 132), rows_per_program=per)


@pytest.mark.parametrize("per", [1, 2, 3, 4, 8, 16])
def test_positions_are_first_second_middle_and_last_row_of_a_program(per: int) -> None:
    expected = sorted({0, 1 if per > 1 else 0, per // 2, per - 1})
    for itemsize in (2, 4):
        assert inv.positions_for(_config(per), 0, itemsize) == tuple(expected)
        assert inv.positions_for(_config(per), 64, itemsize) == tuple(expected)
    assert inv.positions_for(_config(per)) == tuple(expected)


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
@pytest.mark.parametrize("per", [1, 8])
def test_a_stride_off_the_16_byte_boundary_adds_every_shift_against_it(
    itemsize: int, per: int
) -> None:
    # A 16-byte vector holds 16 // itemsize elements; rows a stride apart that is not a
    # multiple of it start at every shift against the boundary.
    lanes = {1: 16, 2: 8, 4: 4, 8: 2}[itemsize]
    base = {0, min(1, per - 1), per // 2, per - 1}
    for k in (1, 2, 3, 17):
        for stride in range(lanes * k - lanes + 1, lanes * k + lanes + 1):
            aligned = (stride * itemsize) % 16 == 0
            expected = base if aligned else base | set(range(lanes))
            got = inv.positions_for(_config(per), stride, itemsize)
            assert got == tuple(sorted(expected)), (stride, itemsize)


# --- ulp_distance --------------------------------------------------------------------------


def _from_bits(patterns: list[int], dtype: torch.dtype) -> torch.Tensor:
    """Tensor of ``dtype`` with these unsigned bit patterns."""
    width = torch.finfo(dtype).bits
    signed = [p - (1 << width) if p >= 1 << (width - 1) else p for p in patterns]
    return torch.tensor(signed, dtype=torch.int64).to(INT[dtype]).view(dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_ulp_distance_counts_every_16_bit_pattern_in_order(dtype: torch.dtype) -> None:
    # All 65536 patterns listed in the order of the values: the negative ones from the most
    # negative (-NaN 0xFFFF) up to -0 (0x8000), then +0 (0x0000) up to +NaN 0x7FFF. The
    # distance of two patterns is how far apart they are in this list: consecutive ones are 1
    # apart, so two different patterns are never 0 apart.
    order = list(range(0xFFFF, 0x7FFF, -1)) + list(range(0x8000))
    place = {pattern: i for i, pattern in enumerate(order)}
    values = _from_bits(order, dtype)
    steps = inv.ulp_distance(values[1:], values[:-1])
    assert steps.dtype == torch.int64
    assert bool((steps == 1).all())
    for reference in (0x0000, 0x8000, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x7BFF, 0xFBFF, 0xFFFF):
        ref = _from_bits([reference], dtype).expand(len(order))
        expected = torch.tensor([abs(place[p] - place[reference]) for p in order])
        assert torch.equal(inv.ulp_distance(values, ref), expected), hex(reference)
        assert torch.equal(inv.ulp_distance(ref, values), expected), hex(reference)


def _walk(value: float, steps: int, dtype: np.dtype) -> np.ndarray:
    """``value`` and the next ``steps`` representable values of ``dtype`` towards +inf."""
    out = [np.asarray(value, dtype=dtype)]
    for _ in range(steps):
        out.append(np.nextafter(out[-1], np.asarray(np.inf, dtype=dtype)))
    return np.array(out, dtype=dtype)


@pytest.mark.parametrize("npdtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    "start", [-np.inf, -65504.0, -300.0, -2.0, -1.0, -1e-3, 0.0, 1.0, 2.0, 60000.0]
)
def test_ulp_distance_counts_the_steps_of_nextafter(npdtype, start: float) -> None:
    walk = torch.from_numpy(_walk(start, 40, npdtype))
    first = walk[:1].expand(len(walk))
    assert inv.ulp_distance(walk, first).tolist() == list(range(len(walk)))
    assert inv.ulp_distance(first, walk).tolist() == list(range(len(walk)))


def test_ulp_distance_across_zero_and_at_large_magnitudes() -> None:
    for dtype in DTYPES.values():
        pos, neg = torch.tensor([0.0], dtype=dtype), torch.tensor([-0.0], dtype=dtype)
        assert inv.ulp_distance(pos, neg).tolist() == [1]  # +0 and -0: different bits
        assert inv.ulp_distance(neg, neg).tolist() == [0]
        tiny = torch.tensor([torch.finfo(dtype).smallest_normal], dtype=dtype)
        assert (
            inv.ulp_distance(tiny, -tiny).tolist()
            == inv.ulp_distance(tiny, pos).mul(2).add(1).tolist()
        )
    # Counted by hand: from +0 up to 1.0 lie 127 binades of 2**23 fp32 values (exponents 0 to
    # 126), 15 of 2**10 fp16 values and 127 of 2**7 bf16 values.
    for dtype, below_one in (
        (torch.float32, 127 * 2**23),
        (torch.float16, 15 * 2**10),
        (torch.bfloat16, 127 * 2**7),
    ):
        one = torch.tensor([1.0], dtype=dtype)
        zero = torch.tensor([0.0], dtype=dtype)
        assert inv.ulp_distance(one, zero).tolist() == [below_one]
        assert inv.ulp_distance(-one, -zero).tolist() == [below_one]
        assert inv.ulp_distance(-one, one).tolist() == [2 * below_one + 1]
        # 2.0 is one binade above 1.0, -4.0 two binades below -1.0
        binade = {torch.float32: 2**23, torch.float16: 2**10, torch.bfloat16: 2**7}[dtype]
        assert inv.ulp_distance(-one * 2, -one).tolist() == [binade]
        assert inv.ulp_distance(-one * 4, one * 2).tolist() == [2 * below_one + 3 * binade + 1]
        big = torch.tensor([torch.finfo(dtype).max], dtype=dtype)
        inf = torch.tensor([float("inf")], dtype=dtype)
        assert inv.ulp_distance(-big, -inf).tolist() == [1]
        assert inv.ulp_distance(-inf, inf).tolist() == [2 * inv.ulp_distance(inf, zero).item() + 1]
    # fp32 patterns at the ends: -0 (0x80000000) and -NaN 0xFFFFFFFF are 2**31 - 1 apart, +NaN
    # 0x7FFFFFFF and -NaN 0xFFFFFFFF 2**32 - 1.
    ends = _from_bits([0x80000000, 0xFFFFFFFF, 0x7FFFFFFF, 0x00000000], torch.float32)
    assert inv.ulp_distance(ends[:1], ends[1:2]).tolist() == [2**31 - 1]
    assert inv.ulp_distance(ends[2:3], ends[1:2]).tolist() == [2**32 - 1]
    assert inv.ulp_distance(ends[3:], ends[:1]).tolist() == [1]
    # element by element, any shape
    a = torch.tensor([[1.0, -2.0], [0.0, 3.0]])
    b = torch.tensor([[1.0, -2.0], [-0.0, 3.0]])
    assert inv.ulp_distance(a, b).tolist() == [[0, 0], [1, 0]]


# --- the CUDA graph's verdict --------------------------------------------------------------


def test_the_graph_verdict_folds_each_rows_largest_distance_into_the_worst() -> None:
    reference = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    worst = torch.tensor([0, 2], dtype=torch.int64)
    folded, verdict = inv._graph_compared(reference.clone(), reference, worst)
    assert verdict == "same bits"
    assert folded.tolist() == [0, 2]
    got = reference.clone()
    bits = got.view(torch.int32)
    bits[0, 2] += 1  # row 0: 1 ulp
    bits[1, 0] += 1  # row 1: 1 ulp and 5 ulps: 5
    bits[1, 1] -= 5
    folded, verdict = inv._graph_compared(got, reference, worst)
    assert verdict == "differs"
    assert folded.tolist() == [1, 5]
    folded, verdict = inv._graph_compared(got, reference, torch.tensor([3, 9]))
    assert verdict == "differs"
    assert folded.tolist() == [3, 9]
    # one row 1 ulp off is enough
    got = reference.clone()
    got.view(torch.int32)[1, 2] -= 1
    folded, verdict = inv._graph_compared(got, reference, torch.zeros(2, dtype=torch.int64))
    assert verdict == "differs"
    assert folded.tolist() == [0, 1]


# --- the batch-invariant mode's batches ----------------------------------------------------


def _bump(y: torch.Tensor, row: int, ulps: int) -> None:
    """Move ``y``'s row ``row`` (positive values) ``ulps`` representable values up."""
    y.view(INT[y.dtype])[row, 0] += ulps


def _mode(monkeypatch, rows, width, stride, max_batch_rows=None, moved=None, dtype="float32"):
    """The mode's certificate of ``rows`` rows of ``width``, the public call replaced by one
    that returns its input (with ``moved[batch]``'s ``{batch row: ulps}`` moved), and the
    batch sizes the public call got."""
    calls: list[int] = []
    placed: list[int] = []

    def public(x, weight, eps=1e-6, *, out=None, batch_invariant=False):
        assert batch_invariant is True
        assert out is None
        calls.append(x.shape[0])
        y = x.clone()
        for row, ulps in (moved or {}).get(x.shape[0], {}).items():
            _bump(y, row, ulps)
        return y

    def at(x, weight, eps, config, position, row_stride, canonical=False):
        assert config == invariant_config(width, x.element_size())
        assert row_stride == stride
        assert canonical  # the mode's rows are launched as the mode launches them: packed
        placed.append(position)
        return x.clone()

    monkeypatch.setattr(kernels.api, "rms_norm", public)
    monkeypatch.setattr(inv, "_launch_at", at)
    # no batch of 256 MiB: the rows as they are (the stride only sets the cap and positions)
    monkeypatch.setattr(inv, "_strided", lambda values, row_stride: values.clone())
    x = np.arange(1.0, rows * width + 1).reshape(rows, width)
    cert = inv.certify(
        x, np.ones(width), 1e-6, dtype, DEVICE, row_stride=stride, batch_invariant=True,
        max_batch_rows=max_batch_rows,
    )  # fmt: skip
    assert calls[:rows] == [1] * rows  # each row alone first
    return cert, calls[rows:], placed


def test_the_modes_batches_reach_256_mib_of_x() -> None:
    assert inv.MODE_BATCH_BYTES == 256 * MIB  # docs/gpu_check/invariant/README.md


@pytest.mark.parametrize(
    ("stride", "itemsize", "cap"),
    [
        (2**18, 4, 256),  # 1 MiB rows: 256 of them
        (2**16, 4, 1024),
        (2**17, 2, 1024),
        (2**10, 4, 65536),
        (2**26 // 3, 4, 3),  # rows of 89478484 bytes: 3.0000001 of them fit
    ],
)
def test_the_modes_largest_batch_is_256_mib_of_rows(monkeypatch, stride, itemsize, cap) -> None:
    dtype = "float32" if itemsize == 4 else "bfloat16"
    assert 256 * MIB // (stride * itemsize) == cap
    cert, batches, _ = _mode(monkeypatch, 2, 4, stride, dtype=dtype)
    candidates = inv.candidate_batches(4, itemsize, SM)
    assert cap in candidates
    assert cap + 1 in candidates
    assert batches == [b for b in candidates if b <= cap]
    assert batches[-1] == cap
    assert cert.bit_identical
    assert [e["batch_size"] for e in cert.launches[-len(batches) :]] == batches
    assert all(e["position"] == 0 for e in cert.launches[-len(batches) :])


@pytest.mark.parametrize("stride", [2**26, 2**26 + 1, 2**27, 2**29])
def test_rows_of_256_mib_or_more_are_launched_in_a_batch_of_one(monkeypatch, stride) -> None:
    cert, batches, _ = _mode(monkeypatch, 2, 4, stride)
    assert batches == [1]
    assert cert.launches[-1]["batch_size"] == 1


@pytest.mark.parametrize(
    ("max_batch_rows", "expected_last"),
    [(256, 256), (257, 257), (258, 257), (0, 1), (1, 1), (-5, 1)],
)
def test_max_batch_rows_caps_the_modes_batches(monkeypatch, max_batch_rows, expected_last) -> None:
    _, batches, _ = _mode(monkeypatch, 3, 4, 4, max_batch_rows=max_batch_rows)
    candidates = inv.candidate_batches(4, 4, SM)
    assert batches == [b for b in candidates if b <= max(1, max_batch_rows)]
    assert batches[-1] == expected_last
    if max_batch_rows >= 256:
        assert 257 in candidates
        assert 258 not in candidates
    # the cap of the bytes holds too: 256 MiB of 1 MiB rows
    _, capped, _ = _mode(monkeypatch, 3, 4, 2**18, max_batch_rows=10**6)
    assert capped[-1] == 256


def test_the_modes_launches_name_their_batch_and_place(monkeypatch) -> None:
    rows, width = 3, 4
    cert, batches, placed = _mode(monkeypatch, rows, width, width, max_batch_rows=16)
    config = invariant_config(width, 4)
    positions = inv.positions_for(config, width, 4)
    assert placed == list(positions)
    assert len(cert.launches) == len(positions) + len(batches)
    for entry, position in zip(cert.launches, positions, strict=False):
        assert entry["position"] == position
        assert entry["batch_size"] == position + rows  # rows position.. of a batch
        assert entry["rows_per_program"] == config.rows_per_program
    for entry, batch in zip(cert.launches[len(positions) :], batches, strict=True):
        assert entry["position"] == 0
        assert entry["batch_size"] == batch
    assert list(cert.batch_sizes) == sorted({*batches, *(p + rows for p in positions)})
    assert cert.mode == "batch_invariant"
    assert cert.bit_identical
    assert cert.differing_rows == ()


def test_the_modes_counts_and_ulps_are_exact(monkeypatch) -> None:
    # batch 3 (rows 0, 1, 2): rows 0 and 2 moved 1 ulp; batch 5 (rows 0, 1, 2, 0, 1): its row 3
    # (input row 0) moved 2 ulps, its row 0 not; batch 9: rows 2 and 8 (input row 2) 1 and 4 ulps
    moved = {3: {0: 1, 2: 1}, 5: {3: 2}, 9: {2: 1, 8: 4}}
    cert, batches, _ = _mode(monkeypatch, 3, 4, 4, max_batch_rows=16, moved=moved)
    assert {3, 5, 9} <= set(batches)
    differing = {e["batch_size"]: e["rows_differing"] for e in cert.launches if e["position"] == 0}
    assert differing[3] == 2
    assert differing[5] == 1
    assert differing[9] == 1
    others = [e for e in cert.launches if e["batch_size"] not in moved]
    assert others
    assert all(e["rows_differing"] == 0 for e in others)
    assert cert.differing_rows == ({"row": 0, "max_ulp": 2}, {"row": 2, "max_ulp": 4})
    assert not cert.bit_identical
    assert cert.rows_checked == 3


# --- the default certificate ---------------------------------------------------------------


def _default(monkeypatch, rows, width, moved=None, device=DEVICE):
    """The default certificate, each launch replaced by one that returns the input's rows (with
    ``moved[(layout index, position)]``'s ``{row: ulps}`` moved), and the launches made."""
    layouts = inv.layouts_by_batch(width, 4, SM)
    calls = []

    def at(x, weight, eps, config, position, row_stride, canonical=False):
        assert not canonical  # the default's layouts run on the caller's strides
        calls.append((layouts.index(next(item for item in layouts if item[1] == config)), position))
        y = x.clone()
        for row, ulps in (moved or {}).get(calls[-1], {}).items():
            _bump(y, row, ulps)
        return y

    monkeypatch.setattr(inv, "_launch_at", at)
    x = np.arange(1.0, rows * width + 1).reshape(rows, width)
    cert = inv.certify(x, np.ones(width), 1e-6, "float32", device)
    return cert, calls, layouts


def test_each_launch_runs_once_and_the_batch_of_one_is_the_rows_alone(monkeypatch) -> None:
    cert, calls, layouts = _default(monkeypatch, 3, 70)  # 70 fp32: off the 16-byte boundary
    assert len(inv.positions_for(layouts[0][1], 70, 4)) > 1
    expected = [(0, 0)] + [
        (i, position)
        for i, (_, config) in enumerate(layouts)
        for position in inv.positions_for(config, 70, 4)
        if (i, position) != (0, 0)
    ]
    assert calls == expected
    assert len(cert.launches) == len(expected)
    assert next((e["batch_size"], e["position"]) for e in cert.launches) == (1, 0)
    assert cert.bit_identical


def test_the_counts_and_ulps_are_exact(monkeypatch) -> None:
    moved = {(1, 0): {0: 1, 2: 1}, (2, 0): {2: 3}, (0, 1): {1: 2}}
    cert, _, layouts = _default(monkeypatch, 3, 70, moved=moved)
    batch = {i: b for i, (b, _) in enumerate(layouts)}
    for entry in cert.launches:
        key = (next(i for i in batch if batch[i] == entry["batch_size"]), entry["position"])
        assert entry["rows_differing"] == len(moved.get(key, {})), key
    assert cert.differing_rows == (
        {"row": 0, "max_ulp": 1},
        {"row": 1, "max_ulp": 2},
        {"row": 2, "max_ulp": 3},
    )
    assert not cert.bit_identical
    assert cert.cuda_graph == "not run: CUDA graphs need a CUDA device"
    assert cert.batch_sizes == tuple(b for b, _ in layouts)


def test_the_rows_are_launched_on_the_device_asked_for(monkeypatch) -> None:
    seen = []

    class Launched(Exception):
        pass

    def at(x, weight, eps, config, position, row_stride):
        seen.append((x.device.type, weight.device.type, x.dtype, weight.dtype))
        raise Launched

    monkeypatch.setattr(inv, "_launch_at", at)
    with pytest.raises(Launched):
        inv.certify(np.ones((2, 8)), np.ones(8), 1e-6, "float16", torch.device("meta"))
    assert seen == [("meta", "meta", torch.float16, torch.float16)]
