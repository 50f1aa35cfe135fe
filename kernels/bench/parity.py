"""Output parity inside the harness: every implementation against a float64 reference.

A benchmark that times a wrong result proves nothing, so the harness checks each
implementation's output on fresh random input before it times it; a wrong one is flagged and
kept out of the figures.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from kernels.bench.shapes import Shape, dtype_name


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Parity bounds against the float64 reference for one output dtype.

    An element passes when ``|y - ref| <= atol + rtol * |ref|``; the whole output also needs
    ``||y - ref|| / ||ref|| <= rel_l2``. The bf16/fp16 bounds allow two roundings to the output
    dtype (Liger's "llama" casting multiplies by the weight after rounding) plus fp32 reduction
    error; a wrong formula (no weight, sum instead of mean, no square) misses them by orders of
    magnitude.
    """

    atol: float
    rtol: float
    rel_l2: float


TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(atol=1e-5, rtol=1e-5, rel_l2=1e-5),
    "float16": Tolerance(atol=1e-3, rtol=2e-3, rel_l2=2e-3),
    "bfloat16": Tolerance(atol=1e-2, rtol=2e-2, rel_l2=1e-2),
}


@dataclasses.dataclass(frozen=True)
class Parity:
    """Outcome of comparing one output against the float64 reference."""

    passed: bool
    max_abs: float
    max_rel: float
    rel_l2: float
    worst_ratio: float  # max |err| / (atol + rtol |ref|); <= 1 passes
    bad_elements: int
    nonfinite: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (the ``parity`` object of a result row)."""
        return dataclasses.asdict(self)


def _refused(reason: str) -> Parity:
    """A failed check that measured nothing (the output cannot be compared at all)."""
    nan = float("nan")
    return Parity(False, nan, nan, nan, nan, 0, 0, reason)


def reference_rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    *,
    row_start: int = 0,
    row_stop: int | None = None,
) -> torch.Tensor:
    """float64 RMSNorm of ``x[row_start:row_stop]`` (the values as stored, upcast exactly)."""
    x64 = x[row_start:row_stop].to(torch.float64)
    mean_square = (x64 * x64).mean(dim=-1, keepdim=True)
    return x64 * torch.rsqrt(mean_square + eps) * weight.to(torch.float64)


def check_parity(
    y: object,
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    *,
    tolerance: Tolerance | None = None,
    chunk_elements: int = 1 << 24,
) -> Parity:
    """Compare an implementation's output ``y`` with the float64 reference of ``(x, weight)``.

    Works on any device (the reference is computed where ``x`` lives, ``chunk_elements`` at a
    time so a 2 GiB output never needs a 16 GiB float64 copy).

    Args:
        y: the implementation's output.
        x: its input.
        weight: its weight.
        eps: its epsilon.
        tolerance: the bounds; default ``TOLERANCES`` of ``x``'s dtype.
        chunk_elements: elements of the float64 reference held at once.

    Returns:
        A :class:`Parity`; ``passed`` is False for a wrong shape or dtype, any non-finite
        element, any element outside ``atol + rtol*|ref|``, or a relative L2 error over bound.
    """
    tol = tolerance or TOLERANCES[dtype_name(x.dtype)]
    if not isinstance(y, torch.Tensor):
        return _refused(f"output is {type(y).__name__}, not a tensor")
    if tuple(y.shape) != tuple(x.shape):
        return _refused(f"output shape {tuple(y.shape)} != input shape {tuple(x.shape)}")
    if y.dtype != x.dtype:
        return _refused(f"output dtype {dtype_name(y.dtype)} != input dtype {dtype_name(x.dtype)}")
    width = x.shape[-1]
    x2d = x.reshape(-1, width)
    y2d = y.reshape(-1, width)
    rows = x2d.shape[0]
    step = max(1, chunk_elements // max(1, width))
    max_abs = 0.0
    max_rel = 0.0
    worst = 0.0
    bad = 0
    nonfinite = 0
    err_sq = 0.0
    ref_sq = 0.0
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        ref = reference_rms_norm(x2d, weight, eps, row_start=start, row_stop=stop)
        out = y2d[start:stop].to(torch.float64)
        finite = torch.isfinite(out)
        nonfinite += int((~finite).sum().item())
        err = (out - ref).abs()
        err = torch.where(finite, err, torch.full_like(err, float("inf")))
        bound = tol.atol + tol.rtol * ref.abs()
        bad += int((err > bound).sum().item())
        if err.numel():
            max_abs = max(max_abs, float(err.max().item()))
            worst = max(worst, float((err / bound).max().item()))
            significant = ref.abs() > tol.atol
            if bool(significant.any()):
                max_rel = max(
                    max_rel, float((err[significant] / ref.abs()[significant]).max().item())
                )
        err_sq += float(torch.where(finite, out - ref, torch.zeros_like(ref)).square().sum().item())
        ref_sq += float(ref.square().sum().item())
    rel_l2 = math.sqrt(err_sq) / math.sqrt(ref_sq) if ref_sq > 0 else math.sqrt(err_sq)
    reasons = []
    if nonfinite:
        reasons.append(f"{nonfinite} non-finite element(s)")
    if bad:
        reasons.append(
            f"{bad} element(s) outside atol={tol.atol:g} + rtol={tol.rtol:g}*|ref| "
            f"(max abs error {max_abs:.3g})"
        )
    if rel_l2 > tol.rel_l2:
        reasons.append(f"relative L2 error {rel_l2:.3g} > {tol.rel_l2:g}")
    return Parity(
        passed=not reasons,
        max_abs=max_abs,
        max_rel=max_rel,
        rel_l2=rel_l2,
        worst_ratio=worst,
        bad_elements=bad,
        nonfinite=nonfinite,
        reason="; ".join(reasons) if reasons else "ok",
    )


def check_copy(y: object, x: torch.Tensor) -> Parity:
    """The copy ceiling must reproduce its input bit for bit."""
    if not isinstance(y, torch.Tensor) or y.shape != x.shape or y.dtype != x.dtype:
        return _refused("copy output has the wrong shape or dtype")
    if torch.equal(y, x):
        return Parity(True, 0.0, 0.0, 0.0, 0.0, 0, 0, "ok")
    nan = float("nan")
    return Parity(False, nan, nan, nan, 0.0, -1, 0, "copy differs from its input")


def make_parity_input(
    shape: Shape, dtype: torch.dtype, device: torch.device | str, *, generator: torch.Generator
) -> torch.Tensor:
    """Fresh random rows with row scales spread over 0.1..10 (never zeros)."""
    x = torch.randn(
        shape.rows, shape.width, generator=generator, device=device, dtype=torch.float32
    )
    scales = torch.exp(
        torch.empty(shape.rows, 1, device=device, dtype=torch.float32).uniform_(
            math.log(0.1), math.log(10.0), generator=generator
        )
    )
    x.mul_(scales).add_(0.25 * scales)
    return x.to(dtype)


def make_weight(
    width: int, dtype: torch.dtype, device: torch.device | str, *, generator: torch.Generator
) -> torch.Tensor:
    """Asymmetric weights: magnitudes 0.5..2, random signs (a missing weight cannot hide)."""
    magnitude = torch.empty(width, device=device, dtype=torch.float32).uniform_(
        0.5, 2.0, generator=generator
    )
    sign = torch.where(torch.rand(width, device=device, generator=generator) < 0.3, -1.0, 1.0)
    return (magnitude * sign).to(dtype)
