"""What the verdict line and the check log say about the shown record
(:mod:`inspector.model.record`), Qt-free: its verdict with every detail the receipt or the run
holds, its identity, and when it does not hold for what is loaded, why, never in a verdict's
colour. The check's own sentences are :mod:`inspector.check.report`'s.
"""

from __future__ import annotations

from typing import Any

from inspector.check import report
from inspector.model.launch import mode_name, of_other_mode
from inspector.model.record import Record


def _tag_html(record: Record) -> str:
    return f"<br><span style='color:{report.GREY_COLOR}'>{record.tag}</span>"


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def receipt_words(receipt: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``report.section_words`` of a parsed receipt: its bound, coverage and batch
    certificate, as the live check's verdict says them."""
    bound = receipt.get("error_bound")
    worst = None
    if isinstance(bound, dict) and bound.get("applies"):
        worst = _number(bound.get("worst_ratio"))
    return report.section_words(worst, receipt.get("batch_invariance"), receipt.get("coverage"))


def saved_verdict_html(record: Record) -> str:
    """A saved check's verdict with the details the live one gives, from its receipt."""
    saved = record.saved
    color = report.VERDICT_COLORS[report.verdict_of(saved)]
    text = (
        f"<b style='color:{color}'>saved check {report.verdict_word(saved)}</b> "
        f"({saved.mode}, {saved.device})"
    )
    receipt = record.receipt_data
    if receipt is None:
        return text + " · no receipt of this check in the file: run the check for its details"
    errors = receipt.get("errors") or {}
    text += (
        f" · max abs {_number(errors.get('max_abs')):.2e}"
        f" · max rel {_number(errors.get('max_rel')):.2e}"
    )
    text += report.evidence_html(*receipt_words(receipt))
    if saved.failures:
        text += f"<br>{len(saved.failures)} failure(s): see the check log"
    return text


def stale_verdict_html(record: Record) -> str:
    """A record that does not hold for what is loaded: why, in amber, with its verdict
    greyed beneath (never in a verdict's colour beside another kernel's name)."""
    word = report.verdict_word(record.check if record.check is not None else record.saved)
    if record.saved is not None and record.stale == "kernel changed since this receipt":
        return (
            f"<b style='color:{report.STALE_COLOR}'>kernel changed since this receipt</b>: the "
            f"saved check ({word}) proved another kernel · run the check again" + _tag_html(record)
        )
    if of_other_mode(record.stale):
        return (
            f"<b style='color:{report.STALE_COLOR}'>STALE: another launch mode</b>: its "
            f"verdict ({word}) is {record.stale} · run the check or the kernel in it"
            + _tag_html(record)
        )
    if record.of_other_kernel:
        head = (
            "receipt of another kernel" if record.saved is not None else "check of another kernel"
        )
        return (
            f"<b style='color:{report.STALE_COLOR}'>{head}</b>: its verdict ({word}) is "
            f"{record.stale} · run the check to prove the loaded one" + _tag_html(record)
        )
    if record.check is not None:
        earlier = report.check_verdict_html(record.check, record.when, muted=True)
    else:
        earlier = f"saved check {word} ({record.saved.mode})"
    return (
        f"<b style='color:{report.STALE_COLOR}'>STALE</b>: {record.stale}"
        f"<br><span style='color:{report.GREY_COLOR}'>{earlier}</span>" + _tag_html(record)
    )


def mutant_note(mutant: str | None, matrices: list[Any]) -> str:
    """With a mutant switched on: the verdict is the faithful implementation's, and what the
    record's kill matrix says of that mutant ("" with none on)."""
    if not mutant:
        return ""
    said = []
    for matrix in matrices:
        if mutant not in matrix.mutants:
            continue
        killers = matrix.killed_by(mutant)
        said.append(
            f"{matrix.target}: killed by {len(killers)} fixture(s)"
            if killers
            else f"{matrix.target}: SURVIVED"
        )
    judged = "; ".join(said) if said else "not in this check's kill matrix"
    return (
        f"<br>this verdict is the faithful kernel's and lane model's; the views show mutant "
        f"<b>{mutant}</b> ({judged})"
    )


def record_verdict_html(record: Record, mutant: str | None, matrices: list[Any]) -> str:
    """The verdict line of ``record``: its verdict and identity when it holds, why not when
    it does not; with a mutant on, that the verdict is the faithful check's."""
    if record.stale:
        return stale_verdict_html(record)
    if record.check is not None:
        text = report.check_verdict_html(record.check, record.when)
    else:
        text = saved_verdict_html(record)
    return text + mutant_note(mutant, matrices) + _tag_html(record)


def record_log_lines(record: Record, matrices: list[Any], provenance: Any = None) -> list[str]:
    """The check log of ``record``: its identity (and why it is stale), then the run's lines
    (a check of this window) or the saved check's with its receipt's."""
    head = [f"record: {record.tag}"]
    if record.stale:
        head.append(f"STALE: {record.stale}")
    if record.batch_invariant is not None:
        head.append(f"launch: the kernel ran the {mode_name(record.batch_invariant)} launch")
    if record.check is not None:
        return head + report.check_log_lines(record.check)
    lines = report.saved_check_lines(record.saved, matrices, provenance)
    if record.receipt_data is not None:
        try:
            lines += report.receipt_lines(record.receipt_data)
        except (KeyError, TypeError, ValueError):
            lines.append("(the saved receipt's details could not be read)")
    return head + lines


def no_record_verdict(problem_valid: bool, kernel_name: str) -> str:
    """The verdict line before any check of this input (or while it is invalid)."""
    if not problem_valid:
        return "Invalid input: nothing to check until the framed field is fixed."
    return f"Input changed: run the check (kernel: {kernel_name})."
