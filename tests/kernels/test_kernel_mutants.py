"""run_checked: guard regions, out-of-bounds reports, and every kernel mutant killed by name, on
every launch path (one row per program, several rows per program, the column loop)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_cases import (
    CASES,
    DTYPES,
    EVEN_TILE_KILLS,
    EVEN_TILE_ROWS,
    EVEN_TILE_TAIL_MUTANTS,
    EVEN_TILE_VARIANTS,
    KILL_DTYPE,
    KILLED_BY,
    LAYOUT_VARIANTS,
    LOOP_VARIANTS,
    SURVIVES,
    case_inputs,
    even_tile_inputs,
    expected_unmasked_overflow,
    round_to,
    verdict,
)

import kernels
from kernels import jit
from kernels.geometry import kernel_constexprs, settled
from kernels.launcher import mutant_code
from kernels.layout import LaunchConfig

DEVICE = "auto"
PATHS = ("auto", *kernels.KERNEL_PATHS)


def _run(
    case: str, dtype: str, mutant: str | None = None, device: str = DEVICE, path: str = "auto"
):
    x, weight, row_stride, eps = case_inputs(case, dtype)
    run = kernels.run_checked(
        x,
        weight,
        eps=eps,
        dtype=dtype,
        row_stride=row_stride,
        mutant=mutant,
        device=device,
        path=path,
    )
    if path != "auto":
        assert run.path == path
    return run, verdict(run, x, weight, eps, dtype)


def _run_config(case: str, dtype: str, config: LaunchConfig, mutant: str | None = None):
    x, weight, row_stride, eps = case_inputs(case, dtype)
    run = kernels.run_checked(
        x, weight, eps=eps, dtype=dtype, row_stride=row_stride, mutant=mutant, config=config
    )
    launched = settled(config, x.shape[1], run.peel)  # a split body needs the peel
    assert (run.path, run.block) == (launched.path, launched.block + launched.block2)
    return run, verdict(run, x, weight, eps, dtype)


@pytest.mark.parametrize("variant", sorted(LAYOUT_VARIANTS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_real_kernel_passes_every_case_on_each_layout_variant(case: str, variant: str) -> None:
    _, reasons = _run_config(case, "bfloat16", LAYOUT_VARIANTS[variant])
    assert not reasons, f"real kernel fails {case} on {variant}:\n" + "\n".join(reasons)


@pytest.mark.parametrize("variant", sorted(LAYOUT_VARIANTS))
@pytest.mark.parametrize("mutant", sorted(KILLED_BY))
def test_each_mutant_is_killed_on_each_layout_variant(mutant: str, variant: str) -> None:
    case = KILLED_BY[mutant]
    dtype = KILL_DTYPE.get(mutant, "float32")
    _, reasons = _run_config(case, dtype, LAYOUT_VARIANTS[variant], mutant)
    assert reasons, f"kernel mutant {mutant} SURVIVED case {case} on layout variant {variant}"


# The loop variants whose width-256 launch is EVEN (row_in_three_parts is not: 8 chunks in parts
# of 3, the last part's third chunk past the row, so it keeps its masks).
EVEN_LOOP_VARIANTS = sorted(v for v in LOOP_VARIANTS if LOOP_VARIANTS[v].row_parts != 3)


def test_a_ragged_split_of_an_exact_row_keeps_its_masks() -> None:
    assert not kernel_constexprs(LOOP_VARIANTS["row_in_three_parts"], 256, 8)["EVEN"]
    assert kernel_constexprs(LOOP_VARIANTS["row_in_two_parts"], 256, 8)["EVEN"]


@pytest.mark.parametrize("variant", EVEN_LOOP_VARIANTS)
@pytest.mark.parametrize("mutant", ["masked_tail_inclusion", "unmasked_store"])
def test_tail_mutants_cannot_act_on_even_chunks(mutant: str, variant: str) -> None:
    # Width 256 = 8 chunks of 32: the EVEN kernel has no tail, so both tail mutants are the
    # real kernel there (and the real kernel carries no mask to get wrong).
    config = LOOP_VARIANTS[variant]
    assert kernel_constexprs(config, 256, 8)["EVEN"]
    _, reasons = _run_config("power_of_two_width_256", "float32", config, mutant)
    assert not reasons, f"{mutant} changed an EVEN launch on {variant}: {reasons}"


def _run_even_tile(rows: int, dtype: str, config: LaunchConfig, mutant: str | None = None):
    x, weight, row_stride, eps = even_tile_inputs(rows)
    x, weight = round_to(x, dtype), round_to(weight, dtype)
    run = kernels.run_checked(
        x, weight, eps=eps, dtype=dtype, row_stride=row_stride, mutant=mutant, config=config
    )
    constexprs = kernel_constexprs(config, 256, 1, rows)
    # The variant really runs unmasked columns, with a row mask exactly when rows are left over.
    assert constexprs["EVEN"]
    assert constexprs["ROW_MASK"] == (rows % config.rows_per_program != 0)
    return verdict(run, x, weight, eps, dtype)


@pytest.mark.parametrize("rows", EVEN_TILE_ROWS)
@pytest.mark.parametrize("variant", sorted(EVEN_TILE_VARIANTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_even_multi_row_tile_passes(dtype: str, variant: str, rows: int) -> None:
    reasons = _run_even_tile(rows, dtype, EVEN_TILE_VARIANTS[variant])
    assert not reasons, f"real kernel fails {rows}x256 on {variant}:\n" + "\n".join(reasons)


@pytest.mark.parametrize("rows", EVEN_TILE_ROWS)
@pytest.mark.parametrize("variant", sorted(EVEN_TILE_VARIANTS))
@pytest.mark.parametrize("mutant", EVEN_TILE_KILLS)
def test_even_multi_row_tile_kills_every_mutant_without_a_tail(
    mutant: str, variant: str, rows: int
) -> None:
    reasons = _run_even_tile(rows, "float32", EVEN_TILE_VARIANTS[variant], mutant)
    assert reasons, f"{mutant} SURVIVED {rows}x256 on the EVEN tile {variant}"


@pytest.mark.parametrize("rows", EVEN_TILE_ROWS)
@pytest.mark.parametrize("variant", sorted(EVEN_TILE_VARIANTS))
@pytest.mark.parametrize("mutant", EVEN_TILE_TAIL_MUTANTS)
def test_tail_mutants_cannot_act_on_even_tiles(mutant: str, variant: str, rows: int) -> None:
    # No lane of an EVEN tile is past the row; the phantom rows of 3 rows in blocks of 2 or 4
    # keep their row mask under both tail mutants (no out-of-bounds store).
    reasons = _run_even_tile(rows, "float32", EVEN_TILE_VARIANTS[variant], mutant)
    assert not reasons, f"{mutant} changed an EVEN tile launch on {variant}: {reasons}"


def test_one_row_tiles_and_masked_configs_keep_their_column_masks() -> None:
    # EVEN is for multi-row tiles only (unmasked one-row tiles measured slower on the H200).
    assert not kernel_constexprs(LaunchConfig(False, 256, 1), 256, 8)["EVEN"]
    assert not kernel_constexprs(LaunchConfig(False, 256, 1, 2), 255, 1, 4)["EVEN"]
    assert kernel_constexprs(LaunchConfig(False, 256, 1, 2), 256, 8, 4)["EVEN"]
    assert not kernel_constexprs(LaunchConfig(False, 256, 1), 256, 8, 3)["ROW_MASK"]


def _lanes(run) -> int:
    """Lanes a launch reads/writes past a row start with no column mask."""
    if run.path == "column_loop":
        width = run.y.shape[1]
        return -(-width // run.block) * run.block
    return run.block


def test_kernel_mutant_names_are_the_interface_names() -> None:
    assert kernels.KERNEL_MUTANTS == (
        "sum_instead_of_mean",
        "missing_square",
        "missing_epsilon",
        "masked_tail_inclusion",
        "missing_weight",
        "wrong_row_stride",
        "half_accumulation",
        "eps_outside_root",
        "unmasked_store",
    )
    assert set(KILLED_BY) == set(kernels.KERNEL_MUTANTS)


def test_each_mutant_name_has_its_own_kernel_code() -> None:
    # One MUTANT constexpr: 0 is the real kernel, each name the jit module's constant of the
    # same name, all different.
    assert mutant_code(None) == jit.FAITHFUL.value == 0
    # half_accumulation has one code per half dtype and is the real kernel on float32.
    names = [n for n in kernels.KERNEL_MUTANTS if n != "half_accumulation"]
    codes = [mutant_code(name) for name in names]
    assert codes == [getattr(jit, name.upper()).value for name in names]
    halves = [mutant_code("half_accumulation", dtype) for dtype in (torch.float16, torch.bfloat16)]
    assert halves == [jit.HALF_ACCUMULATION_FLOAT16.value, jit.HALF_ACCUMULATION_BFLOAT16.value]
    assert mutant_code("half_accumulation", torch.float32) == jit.FAITHFUL.value
    assert len(set(codes + halves)) == len(codes) + 2
    assert 0 not in codes + halves
    with pytest.raises(ValueError, match=r"mutant must be None or one of sum_instead_of_mean, "):
        mutant_code("nope")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_real_kernel_passes_every_named_case(case: str, dtype: str, path: str) -> None:
    run, reasons = _run(case, dtype, path=path)
    assert not reasons, f"real kernel fails {case} on {run.path}:\n" + "\n".join(reasons)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mutant", sorted(KILLED_BY))
def test_each_mutant_is_killed_by_its_named_case(mutant: str, dtype: str, path: str) -> None:
    if mutant in KILL_DTYPE and dtype != KILL_DTYPE[mutant]:
        pytest.skip(f"{mutant}'s case kills it in {KILL_DTYPE[mutant]} only")
    case = KILLED_BY[mutant]
    run, reasons = _run(case, dtype, mutant, path=path)
    assert reasons, (
        f"kernel mutant {mutant} SURVIVED case {case} ({dtype}, {run.mode}, path {run.path})"
    )


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mutant", sorted(SURVIVES))
def test_mutant_survives_the_case_that_cannot_see_it(mutant: str, path: str) -> None:
    # Evidence that the killing case matters: these cases are blind to the mutant.
    _, reasons = _run(SURVIVES[mutant], KILL_DTYPE.get(mutant, "float32"), mutant, path=path)
    assert not reasons, f"{mutant} was expected to survive {SURVIVES[mutant]}: {reasons}"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("pad", [0, 5])
def test_guard_catches_unmasked_store_with_row_and_address(pad: int, path: str) -> None:
    rng = np.random.default_rng(21)
    rows, width = 3, 70
    x = rng.standard_normal((rows, width))
    run = kernels.run_checked(
        x,
        np.ones(width),
        eps=1e-6,
        dtype="float32",
        row_stride=width + pad,
        mutant="unmasked_store",
        path=path,
    )
    assert run.block == (32 if run.path == "column_loop" else 128)
    assert run.guard == 128
    lanes = _lanes(run)  # 96 = 3 chunks of 32 on the column loop, else the 128-lane tile
    found = {(write.row, write.address) for write in run.oob_writes}
    expected = expected_unmasked_overflow(rows, width, width + pad, lanes, guard=run.guard)
    assert found == expected, (
        f"missing {sorted(expected - found)[:8]}, unexpected {sorted(found - expected)[:8]}"
    )
    # The last row's overflow runs into the trailing guard: reported as row rows-1.
    assert (
        max(write.address for write in run.oob_writes)
        == run.guard + (rows - 1) * (width + pad) + lanes - 1
    )
    assert all(write.value == 0.0 for write in run.oob_writes)  # masked x loads 0 -> y = 0


@pytest.mark.parametrize("rows", [1, 3, 5])
def test_multi_row_program_masks_its_phantom_rows(rows: int) -> None:
    # 2 rows per program: an odd row count leaves the last program one row past the end, which
    # would land in the trailing guard (G = 128 >= width) if the row mask were missing.
    x = np.random.default_rng(25).standard_normal((rows, 70))
    run = kernels.run_checked(
        x, np.ones(70), eps=1e-6, dtype="float16", row_stride=77, path="multi_row"
    )
    assert (run.path, run.rows_per_program, run.programs) == ("multi_row", 2, -(-rows // 2))
    assert run.oob_writes == ()
    assert np.all(run.buffer[~run.data_mask] == kernels.POISON)
    assert (
        verdict(
            run, np.asarray(x, dtype=np.float16).astype(np.float64), np.ones(70), 1e-6, "float16"
        )
        == []
    )


def test_column_loop_masks_the_chunk_tail() -> None:
    # 5 rows on 5 programs: CHUNK 64 for width 255 leaves a 1-lane hole in the last chunk,
    # masked in both passes.
    x = np.random.default_rng(26).standard_normal((5, 255))
    run = kernels.run_checked(
        x, np.ones(255), eps=1e-6, dtype="float32", row_stride=260, path="column_loop"
    )
    assert (run.path, run.block, run.programs) == ("column_loop", 64, 5)
    assert run.oob_writes == ()
    assert verdict(run, x, np.ones(255), 1e-6, "float32") == []


def test_real_kernel_leaves_every_guard_element_poisoned() -> None:
    x = np.random.default_rng(22).standard_normal((3, 70))
    run = kernels.run_checked(x, np.ones(70), eps=1e-6, dtype="bfloat16", row_stride=77)
    assert run.oob_writes == ()
    guard_values = run.buffer[~run.data_mask]
    assert np.all(guard_values == kernels.POISON)
    assert run.buffer.size == 2 * run.guard + 3 * 77


def test_masked_tail_inclusion_reads_the_trailing_guard_poison() -> None:
    # One packed row: its tail lanes are the guard after the last row, full of poison.
    x = np.full((1, 3), 0.5)
    run = kernels.run_checked(
        x, np.ones(3), eps=1e-6, dtype="float32", mutant="masked_tail_inclusion"
    )
    # lane 3 reads poison: mean_square = (3 * 0.25 + 3072**2) / 3
    expected = 0.5 / np.sqrt((3 * 0.25 + kernels.POISON**2) / 3 + 1e-6)
    np.testing.assert_allclose(run.y, np.full((1, 3), expected), rtol=1e-5)


def test_checked_run_shape_and_metadata() -> None:
    x = np.random.default_rng(23).standard_normal((2, 31))
    run = kernels.run_checked(x, np.ones(31), eps=1e-6, dtype="float16", row_stride=40)
    assert run.y.shape == (2, 31)
    assert run.y.dtype == np.float64
    assert not run.y.flags.writeable
    assert run.mode == kernels.MODE
    # 2 rows of 31 half-precision values: one row per program, one warp (a 64-byte tile).
    assert (run.block, run.num_warps, run.row_stride, run.guard) == (32, 1, 40, 32)
    assert (run.path, run.rows_per_program, run.programs) == ("one_row", 1, 2)
    assert run.device == kernels.device_description(
        torch.device("cuda" if kernels.MODE == "compiled" else "cpu")
    )
    # y is the exact upcast of float16 values
    assert np.array_equal(run.y, run.y.astype(np.float16).astype(np.float64))


def test_nan_poison_is_detected_bitwise() -> None:
    x = np.random.default_rng(24).standard_normal((2, 5))
    clean = kernels.run_checked(x, np.ones(5), eps=1e-6, dtype="float32", poison=float("nan"))
    assert clean.oob_writes == ()
    dirty = kernels.run_checked(
        x, np.ones(5), eps=1e-6, dtype="float32", poison=float("nan"), mutant="unmasked_store"
    )
    assert len(dirty.oob_writes) == 3  # lanes 5..7 of the last row


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        pytest.param({"dtype": "float64"}, TypeError, r"dtype must be one of", id="dtype"),
        pytest.param(
            {"row_stride": 3}, ValueError, r"row_stride must be >= width \(5\); got 3", id="stride"
        ),
        pytest.param(
            {"row_stride": 5.0}, TypeError, r"row_stride must be an int", id="stride_float"
        ),
        pytest.param({"mutant": "nope"}, ValueError, r"mutant must be None or one of", id="mutant"),
        pytest.param(
            {"device": "tpu"}, ValueError, r"device must be 'auto', 'cpu' or 'cuda'", id="device"
        ),
        pytest.param({"weight_dtype": "float16"}, TypeError, r"weight_dtype must be", id="wdtype"),
        pytest.param({"path": "tiles"}, ValueError, r"path must be 'auto' or one of", id="path"),
    ],
)
def test_run_checked_rejects(kwargs: dict, error: type[Exception], pattern: str) -> None:
    arguments = {"eps": 1e-6, "dtype": "float32", "row_stride": 5, **kwargs}
    with pytest.raises(error, match=pattern):
        kernels.run_checked(np.ones((2, 5)), np.ones(5), **arguments)


def test_run_checked_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="x must be a 2-D"):
        kernels.run_checked(np.ones(5), np.ones(5), eps=1e-6, dtype="float32")
    with pytest.raises(ValueError, match=r"weight\.shape must be \(width,\) = \(5,\)"):
        kernels.run_checked(np.ones((1, 5)), np.ones(4), eps=1e-6, dtype="float32")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_requested_without_cuda_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"device='cuda' was requested but no CUDA device"):
        kernels.run_checked(np.ones((1, 4)), np.ones(4), eps=1e-6, dtype="float32", device="cuda")
