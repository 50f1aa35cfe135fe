"""Shared data for the kernel tests: tolerances, the float64 torch reference, named cases.

Self-contained on purpose (torch float64 is the reference here, not ``oracle``), so these tests
run on a GPU image with nothing but torch, triton, numpy and pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from kernels.layout import LaunchConfig

# (dtype, mode, atol, rtol): |kernel - reference| <= atol + rtol * |reference|, element-wise.
# The reference is torch.nn.functional.rms_norm in float64 on the same dtype-rounded inputs, so
# the budget is the kernel's float32 arithmetic plus its single rounding to the output dtype.
TOLERANCE_TABLE: tuple[tuple[str, str, float, float], ...] = (
    # float32: float32 square sum and the compiled rsqrt.approx (~2 ulp) stay near 1e-6.
    ("float32", "compiled", 1e-6, 1e-5),
    ("float32", "interpreter", 1e-6, 1e-5),
    # float16: half an ulp of the final rounding is 2**-11 ~ 4.9e-4 relative.
    ("float16", "compiled", 1e-5, 1e-3),
    ("float16", "interpreter", 1e-5, 1e-3),
    # bfloat16 compiled: the store rounds to nearest, half an ulp is 2**-8 ~ 3.9e-3 relative.
    ("bfloat16", "compiled", 1e-6, 5e-3),
    # bfloat16 under the interpreter: numpy has no bfloat16, and the interpreter converts
    # float32 -> bfloat16 by dropping the low 16 bits (truncation toward zero), so the error is
    # up to one full ulp, 2**-7 ~ 7.8e-3 relative, not half of one.
    ("bfloat16", "interpreter", 1e-6, 1e-2),
)

DTYPES = ("float32", "float16", "bfloat16")
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
ODD_WIDTHS = (1, 2, 3, 31, 70, 127, 255, 256, 1000, 1025)


def tolerance(dtype: str, mode: str) -> tuple[float, float]:
    for name, table_mode, atol, rtol in TOLERANCE_TABLE:
        if name == dtype and table_mode == mode:
            return atol, rtol
    raise KeyError((dtype, mode))


def torch_reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``torch.nn.functional.rms_norm`` in float64 on the (already rounded) inputs, on CPU."""
    x64 = x.detach().to("cpu", torch.float64)
    w64 = weight.detach().to("cpu", torch.float64)
    return torch.nn.functional.rms_norm(x64, (x64.shape[-1],), w64, eps)


def differing(
    actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float, limit: int = 12
) -> list[str]:
    """Human-readable list of the elements outside ``atol + rtol * |expected|``."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(actual - expected) <= atol + rtol * np.abs(expected))
    lines = []
    for index in np.argwhere(bad)[:limit]:
        where = tuple(int(i) for i in index)
        got, want = actual[where], expected[where]
        lines.append(
            f"  at {where}: kernel {got!r}, reference {want!r}, |diff| {abs(got - want)!r}"
        )
    total = int(bad.sum())
    if total > limit:
        lines.append(f"  ... and {total - limit} more")
    return lines


def assert_close(actual, expected, dtype: str, mode: str, what: str = "") -> None:
    """Assert element-wise closeness with the table's tolerance; list the differing elements."""
    if isinstance(actual, torch.Tensor):
        actual = actual.detach().to("cpu", torch.float64).numpy()
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().to("cpu", torch.float64).numpy()
    assert np.shape(actual) == np.shape(expected), (
        f"{what}: shape {np.shape(actual)} != {np.shape(expected)}"
    )
    atol, rtol = tolerance(dtype, mode)
    lines = differing(actual, expected, atol, rtol)
    assert not lines, (
        f"{what} ({dtype}, {mode}, atol={atol}, rtol={rtol}): {len(lines)} element(s) differ\n"
        + "\n".join(lines)
    )


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round float64 values to ``dtype`` (nearest even) and back to float64."""
    return (
        torch.from_numpy(np.asarray(values, dtype=np.float64))
        .to(TORCH_DTYPES[dtype])
        .double()
        .numpy()
    )


# ---------------------------------------------------------------------------------------------
# Named cases: each kernel mutant has the case that kills it (and survives some other case, to
# show the case is the reason).


@dataclass(frozen=True)
class NamedCase:
    name: str
    build: Callable[[], tuple[np.ndarray, np.ndarray]]  # -> (x, weight) float64
    row_stride_pad: int = 0  # row_stride = width + pad
    eps: float = 1e-6


def _asymmetric_weight(width: int) -> np.ndarray:
    return np.resize(np.array([0.5, 1.25, -2.0]), width)


def _random_rows() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(7).standard_normal((3, 70))
    return x, _asymmetric_weight(70)


def _zero_row() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(8).standard_normal((2, 70))
    x[1] = 0.0
    return x, _asymmetric_weight(70)


def _alternating_signs() -> tuple[np.ndarray, np.ndarray]:
    x = np.resize(np.array([1.5, -1.5]), (2, 70)).copy()
    return x, _asymmetric_weight(70)


def _ones_weight_rows() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(9).standard_normal((2, 70))
    return x, np.ones(70)


def _power_of_two_width() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(10).standard_normal((2, 256))
    return x, _asymmetric_weight(256)


def _tiny_squares() -> tuple[np.ndarray, np.ndarray]:
    # |x| in [7e-5, 2e-4]: normal float16 values whose squares are below its smallest
    # subnormal, so squares taken in float16 are zeros on every path (eps 1e-12 below).
    rng = np.random.default_rng(11)
    x = rng.uniform(7e-5, 2e-4, (2, 70)) * rng.choice([-1.0, 1.0], (2, 70))
    return x, _asymmetric_weight(70)


def _mean_square_near_eps() -> tuple[np.ndarray, np.ndarray]:
    # Mean square ~0.01 = eps: where eps sits (inside or outside the root) moves rrms by ~25%.
    x = np.random.default_rng(12).standard_normal((2, 48)) * 0.1
    return x, _asymmetric_weight(48)


CASES: dict[str, NamedCase] = {
    case.name: case
    for case in (
        NamedCase("random_rows_width_70", _random_rows),
        NamedCase("tiny_squares", _tiny_squares, eps=1e-12),
        NamedCase("mean_square_near_eps", _mean_square_near_eps, eps=1e-2),
        NamedCase("zero_row", _zero_row),
        NamedCase("alternating_signs", _alternating_signs),
        NamedCase("asymmetric_weights_padded_stride", _random_rows, row_stride_pad=5),
        NamedCase("ones_weight", _ones_weight_rows),
        NamedCase("power_of_two_width_256", _power_of_two_width),
    )
}

# The column-loop variants choose_config launches on wide rows, at CHUNK 32 so the named cases
# exercise them: width 70 is 3 chunks with a masked tail, width 256 is 8 full chunks (EVEN: the
# kernel drops every mask). One program per row, with and without streaming stores, on one and
# two warps; and a row in several programs (row_parts): in two parts width 70's second part owns
# chunk 2 and a chunk wholly past the row, in three each part one chunk; width 256 splits evenly
# in two (EVEN kept) and raggedly in three (3 + 3 + 2 chunks: masked).
LOOP_VARIANTS: dict[str, LaunchConfig] = {
    "per_row_streaming": LaunchConfig(True, 32, 1, stream_store=True),
    "per_row": LaunchConfig(True, 32, 1),
    "per_row_two_warps": LaunchConfig(True, 32, 2),
    "row_in_two_parts": LaunchConfig(True, 32, 1, stream_store=True, row_parts=2),
    "row_in_three_parts": LaunchConfig(True, 32, 2, row_parts=3),
}

# The tile kernel with streaming hints (x evict-first, weight evict-last, y .cs), one and two
# rows per program, on a 256-lane tile (width 70: a masked tail of 186 lanes; width 256: none).
STREAM_TILE_VARIANTS: dict[str, LaunchConfig] = {
    "one_row_streaming": LaunchConfig(False, 256, 1, stream_store=True),
    "two_rows_streaming_early_weight": LaunchConfig(
        False, 256, 1, 2, w_early=True, stream_store=True
    ),
}

# Rows in two tiles. Peeled (the rule's split of 2-byte rows with a small rest): width 70 as
# 64 + 16 lanes, the tail mutants acting on the 10 lanes past the row. Unpeeled (a multi-row
# tile, or the peel off): width 70 as 64 + 8 lanes, the first tile read unmasked, the tail
# mutants acting on the second's 2 lanes past the row. On width 256 the tiles do not reach
# the row's end, and each launches as the plain 256-lane tile.
SPLIT_TILE_VARIANTS: dict[str, LaunchConfig] = {
    "one_row_split_body": LaunchConfig(False, 64, 2, block2=16),
    "one_row_unpeeled_split": LaunchConfig(False, 64, 2, block2=8, peel=False),
    "two_rows_split_early_weight": LaunchConfig(False, 64, 1, 2, w_early=True, block2=8),
}

# The batch-invariant mode's ordered peel (LaunchConfig.ordered): width 70 peeled as a column
# loop of 32-lane chunks in two parts, the head starting the accumulator in the chunk's last
# lanes, the tail ending it, the accumulator rotated back to the unpeeled lanes before the sum.
# Width 256 is not peeled (a 16-byte vector divides it).
ORDERED_VARIANTS: dict[str, LaunchConfig] = {
    "row_in_two_parts_ordered_peel": LaunchConfig(
        True, 32, 1, stream_store=True, row_parts=2, ordered=True
    ),
}

# Every explicit layout the matrix runs besides the forced paths.
LAYOUT_VARIANTS: dict[str, LaunchConfig] = {
    **LOOP_VARIANTS,
    **STREAM_TILE_VARIANTS,
    **SPLIT_TILE_VARIANTS,
    **ORDERED_VARIANTS,
}

# Multi-row tiles on rows as wide as the tile (width 256) drop their column masks (the tile
# kernel's EVEN), and their row mask too when ROWS divides the row count (ROW_MASK off): the
# narrow product shapes (65536 x 128/256/512) run that way. The named cases above are 70 wide
# (a tail) and cannot reach that code, so these variants get their own inputs (even_tile_inputs)
# on which every mutant that does not need a tail is killed.
EVEN_TILE_VARIANTS: dict[str, LaunchConfig] = {
    "two_rows_even_early_weight": LaunchConfig(False, 256, 1, 2, w_early=True),
    "four_rows_even_streaming": LaunchConfig(False, 256, 2, 4, stream_store=True),
    # Two tiles that end at the row's end (128 + 128 lanes): no column mask on either.
    "two_rows_even_split": LaunchConfig(False, 128, 1, 2, block2=128),
    "one_row_even_split_streaming": LaunchConfig(
        False, 128, 2, block2=128, stream_store=True, peel=False
    ),
}
EVEN_TILE_ROWS = (4, 3)  # 4: every block of rows full; 3: the last block has phantom rows
EVEN_TILE_KILLS = (
    "sum_instead_of_mean",
    "missing_square",
    "missing_epsilon",
    "missing_weight",
    "wrong_row_stride",
)
EVEN_TILE_TAIL_MUTANTS = ("masked_tail_inclusion", "unmasked_store")


def even_tile_inputs(rows: int) -> tuple[np.ndarray, np.ndarray, int, float]:
    """(x, weight, row_stride, eps) for EVEN_TILE_VARIANTS: ``rows`` random rows of 256 with
    row 1 all zero (missing_epsilon), an asymmetric weight (missing_weight) and 5 padding
    elements per row (wrong_row_stride); float64, exact in every dtype's rounding."""
    x = np.random.default_rng(11).standard_normal((rows, 256))
    x[1] = 0.0
    return x, _asymmetric_weight(256), 256 + 5, 1e-6


# mutant -> the case that must kill it
KILLED_BY: dict[str, str] = {
    "sum_instead_of_mean": "random_rows_width_70",
    "missing_square": "alternating_signs",
    "missing_epsilon": "zero_row",
    "masked_tail_inclusion": "random_rows_width_70",
    "missing_weight": "random_rows_width_70",
    "wrong_row_stride": "asymmetric_weights_padded_stride",
    "unmasked_store": "random_rows_width_70",
    "half_accumulation": "tiny_squares",
    "eps_outside_root": "mean_square_near_eps",
}

# mutant -> the dtype its case kills it in, where not float32: half_accumulation squares and
# sums in the input dtype, so on float32 it is the real kernel.
KILL_DTYPE: dict[str, str] = {"half_accumulation": "float16"}

# mutant -> a case it survives: evidence that the killing case is not incidental
SURVIVES: dict[str, str] = {
    "missing_epsilon": "random_rows_width_70",  # eps is invisible next to mean squares ~1
    "masked_tail_inclusion": "power_of_two_width_256",  # no tail lanes at a power of two
    "missing_weight": "ones_weight",  # ones hide a dropped weight
    "wrong_row_stride": "random_rows_width_70",  # packed rows: stride == width
    "half_accumulation": "random_rows_width_70",  # float16 sums of ~70 squares ~1 stay exact
    "eps_outside_root": "random_rows_width_70",  # eps 1e-6 is invisible next to ~1
}


def case_inputs(name: str, dtype: str) -> tuple[np.ndarray, np.ndarray, int, float]:
    """(x, weight, row_stride, eps) of a named case, values already rounded to ``dtype``."""
    case = CASES[name]
    x, weight = case.build()
    return round_to(x, dtype), round_to(weight, dtype), x.shape[1] + case.row_stride_pad, case.eps


def reference_for(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return torch_reference(torch.from_numpy(x), torch.from_numpy(weight), eps).numpy()


def verdict(run, x: np.ndarray, weight: np.ndarray, eps: float, dtype: str) -> list[str]:
    """Why a checked run is wrong (empty: it passes). Output error or any out-of-bounds store."""
    reasons = []
    expected = reference_for(x, weight, eps)
    atol, rtol = tolerance(dtype, run.mode)
    lines = differing(run.y, expected, atol, rtol)
    if lines:
        reasons.append("output differs:\n" + "\n".join(lines))
    if run.oob_writes:
        reasons.append(f"{len(run.oob_writes)} out-of-bounds store(s), first {run.oob_writes[0]}")
    return reasons


def expected_unmasked_overflow(
    rows: int, width: int, row_stride: int, block: int, guard: int | None = None
) -> set:
    """Guard addresses an all-``block``-lanes store reaches, with the row that reaches them."""
    guard = block if guard is None else guard
    expected = set()
    for row in range(rows):
        for lane in range(width, block):
            offset = row * row_stride + lane
            in_some_row = offset < rows * row_stride and offset % row_stride < width
            if not in_some_row:
                owner = min(offset // row_stride, rows - 1)
                expected.add((owner, guard + offset))
    return expected
