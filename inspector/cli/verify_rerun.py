"""``verify --rerun``: the recorded kernel rerun here, on the recorded input and every recorded
fixture.

What a receipt file alone cannot show is that the named kernel produced its numbers. This reruns
that kernel (the bundled one, in its batch-invariant mode where the receipt's check ran it so,
or the user's file when it is still there with the recorded sha256, in its child process) and
compares what it finds with what the receipt says: on the input, the verdict of the comparison
against the scalar reference, the out-of-bounds stores and each row's errors (within the dtype's
tolerance: another device or mode may round differently); on every fixture the receipt records
(rebuilt from its name, as the check builds it), the outcome, for the kernel and for the lane
model. A receipt whose failing fixtures were flipped to pass, or that names another kernel than
the one it records, then disagrees with the rerun. A kernel source that changed since the
receipt is named, and the rerun then says what today's kernel does; a user's file that changed
is not rerun. The user's file is read through
:func:`kernels.sandbox.source_file.read_kernel_source` (a regular file within its bound), so a
receipt that names ``/dev/zero`` or a FIFO is refused, not read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from inspector.records.receipts.exact import from_json_number
from inspector.records.receipts.exports import Check, joined

#: What names the kernel file in a receipt (the refusal of a file no reader should open says so).
RECEIPT_KERNEL_FIELD = "the receipt's kernel.source.path"


def rerun_checks(data: dict[str, Any], device: str = "auto") -> list[Check]:
    """Checks of ``data`` (a schema-valid receipt) against a rerun of its kernel here.

    Raises:
        kernels.sandbox.source_file.KernelFileError: the receipt names a user's kernel file that
            is not a regular file or is over the bound (the command line's exit 2).
    """
    kernel = data["kernel"]
    if not kernel.get("ran"):
        return [Check("rerun", True, "the receipt ran no kernel (model only): nothing to rerun")]
    from oracle import scalar
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
    opener = _open_user if source.get("kind") == "user" else _open_bundled
    checks, implementation, run_input, close = opener(source, kernel, device)
    if implementation is None:
        return checks
    try:
        try:
            run = run_input(problem, scalar.reference(problem).y)
        except Exception as exc:  # the kernel's own failure is this check's finding
            checks.append(Check("rerun", False, f"the kernel failed here: {exc}"))
        else:
            checks += _input_checks(data, problem, run)
        checks.append(_fixture_check(data, implementation))
    finally:
        close()
    return checks


def _input_checks(data: dict[str, Any], problem: Any, run: Any) -> list[Check]:
    """The rerun on the recorded input against the receipt's comparison, stores and rows."""
    from oracle.compare import TOLERANCES

    kernel = data["kernel"]
    tolerance = TOLERANCES[problem.dtype]
    recorded_pass = bool(data["errors"]["passed"])
    checks = [
        Check(
            "rerun: kernel vs scalar reference",
            run.comparison.passed == recorded_pass,
            f"here ({run.mode}) {'pass' if run.comparison.passed else 'FAIL'} max_abs="
            f"{run.comparison.max_abs:.3e}; recorded {'pass' if recorded_pass else 'FAIL'} "
            f"max_abs={from_json_number(data['errors']['max_abs']):.3e}",
        )
    ]
    recorded_oob = int(kernel.get("oob_writes") or 0)
    checks.append(
        Check(
            "rerun: out-of-bounds stores",
            run.stores.count == recorded_oob,
            f"here {run.stores.count}, recorded {recorded_oob}",
        )
    )
    recorded = np.array([from_json_number(r["max_abs_error"]) for r in data["rows"]])
    here = np.asarray(run.row_max_abs, dtype=np.float64)
    if here.shape != recorded.shape:
        detail = f"{here.size} rows here, {recorded.size} recorded"
        return [*checks, Check("rerun: row errors", False, detail)]
    # A NaN or infinite error is a failure on either side: two failures agree, a failure and a
    # figure do not (NaN compares false, so it never passes as "within").
    with np.errstate(invalid="ignore"):
        apart = np.abs(here - recorded)
        bound = tolerance.atol + tolerance.rtol * np.abs(recorded)
        agree = np.where(
            np.isfinite(here) & np.isfinite(recorded),
            apart <= bound,
            ~np.isfinite(here) & ~np.isfinite(recorded),
        )
    differ = np.flatnonzero(~agree)
    checks.append(
        Check(
            "rerun: row errors",
            not differ.size,
            f"every row's max abs error within atol + rtol of the recorded ({problem.dtype})"
            if not differ.size
            else f"row {differ[0]}: here {here[differ[0]]:.3e}, recorded {recorded[differ[0]]:.3e}",
        )
    )
    return checks


def _fixture_check(data: dict[str, Any], implementation: Any) -> Check:
    """Every fixture the receipt records, rebuilt from its name and rerun on the kernel (and on
    the lane model), its outcome against the recorded one. A fixture this machine cannot judge
    (its interpreter's limits) is named, not counted as a disagreement."""
    from oracle import fixtures, matrix

    runners = {"kernel": implementation, "model": matrix.model_implementation}
    cache = matrix.ReferenceCache()
    differ: list[str] = []
    unjudged: list[str] = []
    count = 0
    for entry in data["fixtures"]:
        runner = runners.get(entry["target"])
        known = fixtures.BY_NAME.get(entry["name"])
        label = f"{entry['target']} {entry['name']}"
        if runner is None or known is None:
            differ.append(f"{label}: not a fixture or target this tool can rebuild")
            continue
        outcome = matrix.evaluate(known, runner, None, cache=cache)
        count += 1
        if outcome.actual == matrix.NOT_JUDGED and entry["actual"] != matrix.NOT_JUDGED:
            unjudged.append(label)
        elif outcome.actual != entry["actual"]:
            differ.append(f"{label}: recorded {entry['actual']!r}, here {outcome.actual!r}")
    detail = (
        joined(differ, 3)
        if differ
        else f"{count} fixture outcomes here as recorded"
        + (f" ({len(unjudged)} not judged here: {joined(unjudged, 3)})" if unjudged else "")
    )
    return Check("rerun: fixtures", not differ, detail)


Opened = tuple[list[Check], Any, Callable[[Any, Any], Any], Callable[[], None]]


def _open_bundled(source: dict[str, Any], kernel: dict[str, Any], device: str) -> Opened:
    """The bundled kernel as an implementation, and the check of which source it is; in the
    batch-invariant mode's layout where the receipt's check ran it so
    (``kernel.batch_invariant``)."""
    from inspector.check import pipeline
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

    invariant = bool(kernel.get("batch_invariant"))

    def run_input(problem: Any, reference_y: Any) -> Any:
        return pipeline.run_and_judge_kernel(
            problem, reference_y, device=device, batch_invariant=invariant
        )

    implementation = pipeline.kernel_implementation(device, batch_invariant=invariant)
    return [check], implementation, run_input, lambda: None


def _open_user(source: dict[str, Any], kernel: dict[str, Any], device: str) -> Opened:
    """The user's file, when it is the one the receipt names (its sha256, recorded twice in the
    receipt, and the sha256 of the bytes the loader reads), in its child process."""
    from inspector.check import pipeline
    from inspector.check.user_kernel import UserImplementation
    from kernels.sandbox.source_file import read_kernel_source
    from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec
    from oracle import tiled

    path = Path(str(source.get("path", "")))
    digest = hashlib.sha256(read_kernel_source(path, RECEIPT_KERNEL_FIELD)).hexdigest()
    recorded = {str(source.get("file_sha256")), str(kernel.get("source_sha256"))}
    same = recorded == {digest}
    check = Check(
        "rerun: kernel source",
        same,
        f"{path}:{source.get('function')} sha256 {digest[:16]}..."
        + (
            ""
            if same
            else "; changed since the receipt (not rerun)"
            if len(recorded) == 1
            else "; the receipt's kernel.source_sha256 and source.file_sha256 differ (not rerun)"
        ),
    )
    none: Opened = ([check], None, lambda problem, y: None, lambda: None)
    if not same:
        return none
    try:
        spec = parse_kernel_spec(f"{path}:{source.get('function')}")
        if spec.sha256 != digest:
            raise KernelSpecError(
                f"{path} changed while it was read (sha256 {spec.sha256[:16]}...)"
            )
        user = UserImplementation(spec, poison=tiled.POISON)
    except KernelSpecError as exc:
        return [check, Check("rerun", False, f"the kernel does not load here: {exc}")], *none[1:]

    def run_input(problem: Any, reference_y: Any) -> Any:
        return pipeline.run_and_judge_user_kernel(user, problem, reference_y)

    return [check], user, run_input, user.close
