"""The named mutants of the tiled model: bugs the fixture matrix must catch.

The kernel floor (``kernels``) carries the same ones plus ``unmasked_store``; the names are
shared by value (a test compares the two lists), never by import.
"""

from __future__ import annotations

MODEL_MUTANTS: tuple[str, ...] = (
    "sum_instead_of_mean",
    "missing_square",
    "missing_epsilon",
    "masked_tail_inclusion",
    "missing_weight",
    "wrong_row_stride",
    "half_accumulation",
    "eps_outside_root",
)

DESCRIPTIONS: dict[str, str] = {
    "sum_instead_of_mean": "divides the sum of squares by 1 instead of the true width",
    "missing_square": "reduces x instead of x*x",
    "missing_epsilon": "rsqrt(mean_square) with no eps inside the root",
    "masked_tail_inclusion": "reduces the tail lanes (offset >= width) too, poison included",
    "missing_weight": "stores x * rrms, ignoring the per-feature weight",
    "wrong_row_stride": "addresses rows with width instead of the declared row stride",
    "half_accumulation": "squares, sums and averages in the input dtype (float16, bfloat16), "
    "not float32",
    "eps_outside_root": "1 / (sqrt(mean_square) + eps): eps added outside the root",
    "unmasked_store": "stores all BLOCK lanes, past the end of the row (kernel only)",
}


def check_mutant(name: str | None) -> str | None:
    """Return ``name`` if it is a model mutant (or None), else raise ValueError."""
    if name is not None and name not in MODEL_MUTANTS:
        raise ValueError(f"mutant: {name!r} is not one of {', '.join(MODEL_MUTANTS)}")
    return name
