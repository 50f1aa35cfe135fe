"""``verify --rerun``: the recorded kernel rerun on the recorded input, on this machine.

What a receipt file alone cannot show is that the named kernel produced its numbers. This reruns
that kernel (the bundled one, or the user's file when it is still there with the recorded
sha256, in its child process) on the receipt's input and compares what it finds with what the
receipt says: the verdict of the comparison against the scalar reference, the out-of-bounds
stores, and each row's errors (within the dtype's tolerance: another device or mode may round
differently). A kernel source that changed since the receipt is named, and the rerun then says
what today's kernel does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from inspector.records.receipts.exact import from_json_number
from inspector.records.receipts.exports import Check


def rerun_checks(data: dict[str, Any], device: str = "auto") -> list[Check]:
    """Checks of ``data`` (a schema-valid receipt) against a rerun of its kernel here."""
    kernel = data["kernel"]
    if not kernel.get("ran"):
        return [Check("rerun", True, "the receipt ran no kernel (model only): nothing to rerun")]
    from oracle import scalar
    from oracle.compare import TOLERANCES
    from oracle.spec import ValidationError, make_problem

    given = data["input"]
    try:
        problem = make_problem(
            np.asarray(given["x"], dtype=np.float64),
            np.asarray(given["weight"], dtype=np.float64),
            eps=given["eps"],
            dtype=given["dtype"],
            row_stride=given["row_stride"],
        )
    except ValidationError as exc:
        return [Check("rerun", False, f"the recorded input is not valid here: {exc}")]
    source = kernel.get("source") or {"kind": "bundled"}
    checks, run = _run(problem, source, kernel, device, scalar.reference(problem).y)
    if run is None:
        return checks
    tolerance = TOLERANCES[problem.dtype]
    recorded_pass = bool(data["errors"]["passed"])
    checks.append(
        Check(
            "rerun: kernel vs scalar reference",
            run.comparison.passed == recorded_pass,
            f"here ({run.mode}) {'pass' if run.comparison.passed else 'FAIL'} max_abs="
            f"{run.comparison.max_abs:.3e}; recorded {'pass' if recorded_pass else 'FAIL'} "
            f"max_abs={from_json_number(data['errors']['max_abs']):.3e}",
        )
    )
    recorded_oob = int(kernel.get("oob_writes") or 0)
    checks.append(
        Check(
            "rerun: out-of-bounds stores",
            run.stores.count == recorded_oob,
            f"here {run.stores.count}, recorded {recorded_oob}",
        )
    )
    recorded = np.array([from_json_number(r["max_abs_error"]) for r in data["rows"]])
    apart = np.abs(np.asarray(run.row_max_abs, dtype=np.float64) - recorded)
    bound = tolerance.atol + tolerance.rtol * np.abs(recorded)
    worst = int(np.nanargmax(apart - bound)) if apart.size else 0
    checks.append(
        Check(
            "rerun: row errors",
            bool(np.all(apart <= bound)),
            f"every row's max abs error within atol + rtol of the recorded ({problem.dtype})"
            if np.all(apart <= bound)
            else f"row {worst}: here {run.row_max_abs[worst]:.3e}, recorded {recorded[worst]:.3e}",
        )
    )
    return checks


def _run(
    problem: Any, source: dict[str, Any], kernel: dict[str, Any], device: str, reference_y: Any
) -> tuple[list[Check], Any]:
    """The rerun (or None) and the checks of which kernel it is."""
    from inspector.check import pipeline

    if source.get("kind") == "user":
        return _run_user(problem, source, reference_y)
    from kernels.instruments.compile_info import kernel_source_sha256

    today = kernel_source_sha256()
    recorded = str(kernel.get("source_sha256", ""))
    same = today == recorded
    check = Check(
        "rerun: kernel source",
        same,
        f"the bundled kernel, sha256 {today[:16]}..."
        + ("" if same else f"; the receipt's is {recorded[:16]}... (rerunning today's kernel)"),
    )
    try:
        run = pipeline.run_and_judge_kernel(problem, reference_y, device=device)
    except Exception as exc:  # the kernel's own failure is this check's finding
        return [check, Check("rerun", False, f"the kernel failed here: {exc}")], None
    return [check], run


def _run_user(problem: Any, source: dict[str, Any], reference_y: Any) -> tuple[list[Check], Any]:
    import hashlib

    from inspector.check import pipeline
    from inspector.check.user_kernel import UserImplementation, UserKernelFailed
    from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec
    from oracle import tiled

    path = Path(str(source.get("path", "")))
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return [Check("rerun: kernel source", False, f"{path}: {exc.strerror or exc}")], None
    same = digest == source.get("file_sha256")
    check = Check(
        "rerun: kernel source",
        same,
        f"{path}:{source.get('function')} sha256 {digest[:16]}..."
        + ("" if same else "; changed since the receipt (not rerun)"),
    )
    if not same:
        return [check], None
    try:
        user = UserImplementation(
            parse_kernel_spec(f"{path}:{source.get('function')}"), poison=tiled.POISON
        )
    except KernelSpecError as exc:
        return [check, Check("rerun", False, f"the kernel does not load here: {exc}")], None
    try:
        return [check], pipeline.run_and_judge_user_kernel(user, problem, reference_y)
    except UserKernelFailed as exc:
        return [check, Check("rerun", False, f"the kernel failed here: {exc}")], None
    finally:
        user.close()
