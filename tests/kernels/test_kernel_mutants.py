"""run_checked: guard regions, out-of-bounds reports, and every kernel mutant killed by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_cases import (
    CASES,
    DTYPES,
    KILLED_BY,
    SURVIVES,
    case_inputs,
    expected_unmasked_overflow,
    verdict,
)

import kernels

DEVICE = "auto"


def _run(case: str, dtype: str, mutant: str | None = None, device: str = DEVICE):
    x, weight, row_stride, eps = case_inputs(case, dtype)
    run = kernels.run_checked(
        x, weight, eps=eps, dtype=dtype, row_stride=row_stride, mutant=mutant, device=device
    )
    return run, verdict(run, x, weight, eps, dtype)


def test_kernel_mutant_names_are_the_interface_names() -> None:
    assert kernels.KERNEL_MUTANTS == (
        "sum_instead_of_mean",
        "missing_square",
        "missing_epsilon",
        "masked_tail_inclusion",
        "missing_weight",
        "wrong_row_stride",
        "unmasked_store",
    )
    assert set(KILLED_BY) == set(kernels.KERNEL_MUTANTS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_real_kernel_passes_every_named_case(case: str, dtype: str) -> None:
    _, reasons = _run(case, dtype)
    assert not reasons, f"real kernel fails {case}:\n" + "\n".join(reasons)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("mutant", sorted(KILLED_BY))
def test_each_mutant_is_killed_by_its_named_case(mutant: str, dtype: str) -> None:
    case = KILLED_BY[mutant]
    run, reasons = _run(case, dtype, mutant)
    assert reasons, f"kernel mutant {mutant} SURVIVED case {case} ({dtype}, {run.mode})"


@pytest.mark.parametrize("mutant", sorted(SURVIVES))
def test_mutant_survives_the_case_that_cannot_see_it(mutant: str) -> None:
    # Evidence that the killing case matters: these cases are blind to the mutant.
    _, reasons = _run(SURVIVES[mutant], "float32", mutant)
    assert not reasons, f"{mutant} was expected to survive {SURVIVES[mutant]}: {reasons}"


@pytest.mark.parametrize("pad", [0, 5])
def test_guard_catches_unmasked_store_with_row_and_address(pad: int) -> None:
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
    )
    assert run.block == 128
    found = {(write.row, write.address) for write in run.oob_writes}
    expected = expected_unmasked_overflow(rows, width, width + pad, run.block)
    assert found == expected, (
        f"missing {sorted(expected - found)[:8]}, unexpected {sorted(found - expected)[:8]}"
    )
    # The last row's overflow runs into the trailing guard: reported as row rows-1.
    assert (
        max(write.address for write in run.oob_writes)
        == run.guard + (rows - 1) * (width + pad) + run.block - 1
    )
    assert all(write.value == 0.0 for write in run.oob_writes)  # masked x loads 0 -> y = 0


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
    assert (run.block, run.num_warps, run.row_stride, run.guard) == (32, 4, 40, 32)
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
