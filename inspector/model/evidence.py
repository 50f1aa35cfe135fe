"""Provenance of what the window shows: which run each view's numbers come from, and the
receipts a check leaves in the session's history the moment it ends. Qt-free.

The rules (enforced in :class:`~inspector.model.state.InspectionState`): a check drops an earlier
Run kernel, switching a mutant drops a Run kernel of another mutant, and a new input drops both; so
a view never shows a kernel's output beside a verdict about a different run without saying so.
These captions say which run that is, and when it was taken.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inspector.model.state import InspectionState


def kernel_caption(state: InspectionState) -> str:
    """Where the kernel values on show come from, with the time they were taken."""
    output = state.kernel_output()
    if output is None:
        return "kernel: not run on this input"
    if state.kernel_run is not None:
        when = state.stamps.get("kernel_run", "")
    elif state.check_current and state.check_result.kernel is not None:  # type: ignore[union-attr]
        when = state.stamps.get("check_result", "")
    else:
        when = "saved"
    return f"kernel: {output.source}" + (f" ({when})" if when else "")


def views_caption(state: InspectionState) -> str:
    """One line for the grid, stepper and row table: the input they show (its identity), the
    lane model's mutant and the kernel's run."""
    model = state.tiled
    mutant = getattr(model, "mutant", None)
    lane_model = f"lane model with mutant {mutant}" if mutant else "faithful lane model"
    return f"showing: input {state.input_id} · {lane_model} · {kernel_caption(state)}"


def check_caption(state: InspectionState) -> str:
    """Where the kill matrix and the verdict come from: the shown record's identity, marked
    stale when it does not hold for what is loaded ("" when there is none)."""
    record = state.record()
    if record is None:
        return ""
    text = f"from {record.caption()}"
    if record.of_other_kernel:
        text += "; its kernel rows are withdrawn (the model rows hold for any kernel)"
    return text


def stale_caption(reason: str, caption: str) -> str:
    """A view's caption marked stale in place: ``STALE (reason)`` before what it shows."""
    return f"STALE ({reason}) — {caption.removeprefix('showing: ')}"


#: Largest input (values) whose receipt History keeps on its own when a check ends: a receipt
#: holds every value of x (~20 bytes each), and each counterexample is kept in the session.
MAX_KEPT_RECEIPT_VALUES = 1 << 18


def receipt_texts(result: Any) -> tuple[str, str] | None:
    """The receipt of a check as (JSON, CSV) text, schema-checked; None when it fails the schema
    (Export receipts then says why) or the input has more than ``MAX_KEPT_RECEIPT_VALUES``
    values (Export receipts keeps it)."""
    from inspector.records.receipts import receipt

    if result.problem.rows * result.problem.width > MAX_KEPT_RECEIPT_VALUES:
        return None

    try:
        built = receipt.build_receipt(result)
        receipt.validate_receipt(built)
    except receipt.ReceiptError:
        return None
    return receipt.receipt_json_text(built), receipt.receipt_csv_text(built)


#: The check log's line when History did not keep a check's receipt on its own.
NOT_KEPT = (
    f"History: this check's receipt was not kept on its own (an input over "
    f"{MAX_KEPT_RECEIPT_VALUES} values, or a receipt outside its schema); File → Export "
    "receipts writes it and keeps it"
)


def receipt_reason(result: Any) -> str:
    """The history's reason for a check's receipt: its verdict and first failure."""
    failures = tuple(getattr(result, "failures", ()))
    if result.passed:
        return "check passed"
    unjudged = tuple(getattr(result, "not_judged", ()))
    if not failures and unjudged:
        what, why = unjudged[0]
        return f"check not judged: {len(unjudged)} run(s); first: {what}: {why}"[:300]
    first = failures[0] if failures else "check failed"
    return f"check failed: {len(failures)} failure(s); first: {first}"[:300]


def record_check_receipts(state: InspectionState, result: Any) -> bool:
    """Keep the receipts the check job built (``CheckResult.receipt_texts``) in the session's
    history now: a failed check is a counterexample the moment it is found, not when receipts
    are exported. False when the job built none (the receipt failed its schema: the log says
    why)."""
    texts = getattr(result, "receipt_texts", None)
    if not texts:
        return False
    session = state.session if state.session is not None else state.to_session()
    session.record_receipts(*texts, passed=bool(result.passed), reason=receipt_reason(result))
    state.recorded_check = result
    state.set_session(session)
    return True


def interrupted_verdict(state: InspectionState, how: str) -> str:
    """The verdict line after a check that did not finish (``how``: "cancelled", "failed: ..."):
    it says so, with the previous check of this input beneath it, greyed (when there is one)."""
    from inspector.check import report

    previous = state.check_result if state.check_current else None
    earlier = (
        report.check_verdict_html(previous, state.stamps.get("check_result", "?"), muted=True)
        if previous is not None
        else None
    )
    return report.interrupted_verdict_html(how, earlier)
