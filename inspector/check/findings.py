"""What a check finds in one run of a kernel on the input: its disagreements with the two
references, its stores out of bounds or into x, and its error against the derived bound.

Qt-free; :mod:`inspector.check.pipeline` turns these into the check's failures. The bound
(:mod:`oracle.error_bound`) applies to the bundled kernel, whose reduction order is known from
its launch layout; a user's kernel gets its error against the exact output, and no bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inspector.check.results import KernelRun
from oracle import diagnose
from oracle import error_bound as eb
from oracle.scalar import ScalarResult
from oracle.spec import Problem

#: Why a row has no bound: a user's kernel sums in an order the inspector does not know.
NO_BOUND_USER = "no bound: the reduction order of a user's kernel is not known"


def bound_fields(
    problem: Problem,
    y: np.ndarray,
    y_exact: np.ndarray,
    *,
    path: str,
    block: int,
    peel: int,
    mode: str,
) -> dict[str, Any]:
    """The bound fields of a ``KernelRun``: each row's error against the exact output, and
    for a bundled-kernel layout its bound, the additions it assumes, and whether the output
    rounding truncates (the interpreter's float32 -> bfloat16)."""
    exact_error = eb.row_errors_against_exact(y, y_exact)
    if path == "user":
        return {
            "row_exact_error": exact_error,
            "row_error_bound": None,
            "bound_adds": None,
            "bound_truncating": False,
        }
    adds = eb.layout_adds(problem.width, path, block, peel)
    truncating = mode == "interpreter" and problem.dtype == "bfloat16"
    return {
        "row_exact_error": exact_error,
        "row_error_bound": eb.row_bounds(problem, y_exact, adds, truncating),
        "bound_adds": adds,
        "bound_truncating": truncating,
    }


def bound_failure(run: KernelRun) -> str | None:
    """The failure line where a row's error is past its bound (or NaN), else None."""
    bound = run.row_error_bound
    if bound is None:
        return None
    error = np.asarray(run.row_exact_error, dtype=np.float64)
    past = ~(error <= bound)
    if not past.any():
        return None
    row = int(np.argmax(past))
    return (
        f"kernel error past the derived bound in {int(past.sum())} row(s); row {row}: "
        f"{error[row]:.3e} > {bound[row]:.3e} ({run.bound_adds} additions per square)"
    )


def bound_ratio(run: KernelRun) -> np.ndarray | None:
    """Each row's ``|y - exact y| / bound`` of a kernel run (None: no bound for it)."""
    bound = run.row_error_bound
    if bound is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(run.row_exact_error, dtype=np.float64) / bound


def batch_ulps(section: dict[str, Any] | None, rows: int) -> np.ndarray | None:
    """Each row's largest ulp distance across batches from a ``batch_invariance`` section:
    0 where bit-identical, NaN past the rows it checked (None: no certificate)."""
    if section is None or "bit_identical" not in section:
        return None
    ulps = np.full(rows, np.nan)
    ulps[: min(rows, int(section["rows_checked"]))] = 0.0
    for entry in section["differing_rows"]:
        if entry["row"] < rows:
            ulps[entry["row"]] = entry["max_ulp"]
    return ulps


def kernel_run_findings(
    run: KernelRun, problem: Problem, reference: ScalarResult
) -> tuple[list[str], tuple[str, ...]]:
    """``(failures, diagnosis)`` of one kernel run on the input: empty when it is right."""
    failures: list[str] = []
    diagnosis: tuple[str, ...] = ()
    if not run.comparison.passed:
        failures.append("kernel vs scalar reference: " + run.comparison.describe())
        diagnosis = tuple(
            diagnose.diagnose(
                problem.x,
                problem.weight,
                run.y,
                reference.y,
                reference.rrms,
                problem.eps,
                problem.block,
                problem.dtype,
            )
        )
    if not run.torch_comparison.passed:
        failures.append("kernel vs torch float64 rms_norm: " + run.torch_comparison.describe())
    for label, comparison in run.variant_comparisons:
        if not comparison.passed:
            failures.append(f"kernel config {label} vs scalar reference: {comparison.describe()}")
    beyond = bound_failure(run)
    if beyond is not None:
        failures.append(beyond)
    if run.stores.count:
        failures.append(
            f"kernel stored {run.stores.count} element(s) out of bounds"
            + diagnose.describe_stores(
                run.stores.output,
                run.stores.row_stride or problem.row_stride,
                problem.rows,
                problem.width,
            )
        )
    if run.oob_reads:
        failures.append(
            f"kernel read {run.oob_reads} element(s) out of bounds (seen by the interpreter's "
            f"guarded loads): {run.oob_read_detail}"
        )
    if run.stores.into_input:
        failures.append(
            f"kernel stored {len(run.stores.into_input)} element(s) into its input x"
            + diagnose.describe_stores(
                run.stores.into_input, problem.row_stride, problem.rows, problem.width
            )
        )
    return failures, diagnosis


def check_bounds(result: Any) -> dict[str, Any]:
    """The bound of a check's output under test (the kernel's, else the lane model's):
    ``row_exact_error``, ``row_error_bound`` (None: no bound), ``bound_adds``,
    ``bound_truncating`` and ``why``."""
    kernel = result.kernel
    if kernel is not None and kernel.row_exact_error is not None:
        fields = {
            "row_exact_error": kernel.row_exact_error,
            "row_error_bound": kernel.row_error_bound,
            "bound_adds": kernel.bound_adds,
            "bound_truncating": kernel.bound_truncating,
        }
        if kernel.row_error_bound is None:
            return {**fields, "why": NO_BOUND_USER}
        return {**fields, "why": f"the kernel, {kernel.path} layout, {kernel.mode}"}
    problem, exact = result.problem, result.scalar.y_exact
    adds = eb.tree_adds(problem.width)
    return {
        "row_exact_error": eb.row_errors_against_exact(result.tiled.y, exact),
        "row_error_bound": eb.row_bounds(problem, exact, adds),
        "bound_adds": adds,
        "bound_truncating": False,
        "why": "the tiled lane model's tree (the kernel did not run)",
    }
