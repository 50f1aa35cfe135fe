"""The check's report text, Qt-free and built once: ``main.py check`` prints it, the window's
check log shows it.

:func:`result_lines` are the lines both print about a
:class:`~inspector.check.pipeline.CheckResult`. The CLI follows them with the receipt's lines
(:func:`check_command_lines`); the window's log (:func:`check_log_lines`) puts a verdict line
above them and the modeled traffic and every failure below. Every sentence the check, its
receipt and its verdict say is made here.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from inspector.check import findings, stages, timing_stage
from oracle.matrix import NOT_JUDGED, OUT_OF_DOMAIN

PASSED_COLOR = "rgb(102,187,106)"
FAILED_COLOR = "rgb(239,83,80)"
STALE_COLOR = "rgb(255,167,38)"
GREY_COLOR = "rgb(138,147,163)"


def fixture_summary(kill_matrix: Any) -> str:
    """What one kill matrix's fixtures did, each count naming what it counts: the runnable
    fixtures the implementation passed (and those this machine could not judge), and the
    malformed inputs the validator refused (no implementation runs on those)."""
    runnable = [o for o in kill_matrix.baseline if not o.expected.startswith("reject:")]
    malformed = [o for o in kill_matrix.baseline if o.expected.startswith("reject:")]
    not_judged = sum(o.actual == NOT_JUDGED for o in runnable)
    outside = sum(o.actual == OUT_OF_DOMAIN for o in runnable)
    notes = [f"{not_judged} not judged on this machine"] if not_judged else []
    notes += [f"{outside} out of its declared domain"] if outside else []
    text = (
        f"{kill_matrix.target} passed {sum(o.passed for o in runnable)}/{len(runnable)} runnable"
        + (f" ({', '.join(notes)})" if notes else "")
    )
    if malformed:
        text += (
            f", the validator refused {sum(o.passed for o in malformed)}/{len(malformed)} malformed"
        )
    return text


def not_judged_lines(result: Any) -> list[str]:
    """The runs this machine could not judge, once per cause, with what to do."""
    by_cause: dict[str, list[str]] = {}
    for what, why in getattr(result, "not_judged", ()):
        by_cause.setdefault(why.removeprefix("not judged on this machine: "), []).append(what)
    return [
        f"NOT JUDGED on this machine ({len(names)} run(s): {', '.join(names[:6])}"
        + (", ..." if len(names) > 6 else "")
        + f"): {why}"
        for why, names in by_cause.items()
    ]


def result_lines(result: Any) -> list[str]:
    """Input, kernel, device, every comparison, the fixtures, each mutant and launch layout."""
    problem = result.problem
    lines = [
        f"input: {problem.name}: {problem.rows} rows x {problem.width}, row_stride "
        f"{problem.row_stride}, {problem.dtype}, eps {problem.eps:g}; tile {problem.block} lanes "
        f"({problem.width} valid, {problem.block - problem.width} masked)",
        f"kernel: {result.kernel_note}",
        f"device: {result.device}",
        f"tiled model vs scalar: output {result.output.describe()}",
        f"tiled model vs scalar: mean square + rrms {result.intermediates.describe()}",
    ]
    if result.kernel is not None:
        kernel = result.kernel
        lines += [
            f"kernel vs scalar: {kernel.comparison.describe()}",
            f"kernel vs torch float64 rms_norm: {kernel.torch_comparison.describe()}",
            f"kernel out-of-bounds stores: {kernel.stores.count}",
        ]
        lines += [f"diagnosis: {line}" for line in getattr(result, "diagnosis", ())]
        if getattr(result, "kernel_source", {}).get("kind") == "user":
            from kernels.sandbox.domain import describe

            outside = getattr(result, "out_of_domain", ())
            lines.append(
                f"kernel domain: {describe(getattr(result, 'declared_domain', None))}"
                + (f"; out of it (not run): {', '.join(outside)}" if outside else "")
            )
        configs = getattr(result, "autotune_configs", ())
        if configs:
            lines.append(
                f"autotune: each of {len(configs)} configs run and judged on every fixture: "
                + "; ".join(configs)
            )
        invariance = stages.invariance_line(getattr(result, "batch_invariance", None))
        if invariance is not None:
            lines.append(invariance)
        sanitized = stages.sanitizer_line(getattr(result, "sanitizer", None))
        if sanitized is not None:
            lines.append(sanitized)
        covered = stages.coverage_line(getattr(result, "coverage", None))
        if covered is not None:
            lines.append(covered)
        lines += timing_stage.timing_lines(getattr(result, "timing", None))
    matrices = [m for m in (result.model_matrix, result.kernel_matrix) if m is not None]
    lines.append("fixtures: " + "; ".join(fixture_summary(m) for m in matrices))
    lines += not_judged_lines(result)
    for kill_matrix in matrices:
        lines += kill_matrix.summary_lines()
    for path, path_matrix in result.kernel_path_matrices.items():
        survivors = path_matrix.survivors
        lines.append(
            f"kernel layout {path}: {fixture_summary(path_matrix)}; "
            + (
                f"SURVIVED: {', '.join(survivors)}"
                if survivors
                else f"all {len(path_matrix.mutants)} mutants killed"
            )
        )
    return lines


def receipt_lines(receipt: dict[str, Any], skip: frozenset[str] = frozenset()) -> list[str]:
    """A few human lines about a receipt: its errors, bound, evidence (less the ``skip``
    sections, already said from the run) and export check."""
    errors = receipt["errors"]
    export = receipt["export_check"]
    return [
        f"errors ({errors['compared']}): max_abs={errors['max_abs']!r} "
        f"max_rel={errors['max_rel']!r} ({errors['compare_dtype']}: atol={errors['atol']:g}, "
        f"rtol={errors['rtol']:g}) {'pass' if errors['passed'] else 'FAIL'}",
        *receipt_bound_lines(receipt),
        *receipt_evidence_lines(receipt, skip),
        f"export check: {export['status']}"
        + (f" ({'; '.join(export['problems'][:2])})" if export["problems"] else ""),
    ]


def receipt_bound_lines(receipt: dict[str, Any]) -> list[str]:
    """The derived bound's line of :func:`receipt_lines` (none for a version-1 receipt)."""
    bound = receipt.get("error_bound")
    if bound is None:
        return []
    if not bound["applies"]:
        return [f"error bound: {bound['why']}"]
    return [
        f"error bound: worst |y - exact| / bound {float(bound['worst_ratio']):.3g} "
        f"at row {bound['worst_row']}, {'within' if bound['within'] else 'PAST THE BOUND'} "
        f"({bound['why']}; {bound['adds']} additions per square)"
    ]


def receipt_evidence_lines(
    receipt: dict[str, Any], skip: frozenset[str] = frozenset()
) -> list[str]:
    """The batch-invariance, sanitizer, timing and coverage lines of :func:`receipt_lines`
    (none for a version-1 receipt), less the ``skip`` sections (names of
    :data:`EVIDENCE_SECTIONS`)."""
    section = receipt.get("batch_invariance")
    if section is None:
        return []
    lines = []
    if "invariance" not in skip:
        lines.append(
            f"batch invariance: not certified: {section['absent']}"
            if "absent" in section
            else stages.invariance_line(section)
        )
    evidence = receipt.get("device_evidence")
    if evidence is not None and "sanitizer" not in skip:
        lines.append(stages.sanitizer_line(evidence["sanitizer"]))
    if "timing" in receipt and "timing" not in skip:
        lines += timing_stage.timing_lines(
            {**receipt["timing"], "dram": (evidence or {}).get("dram", {"absent": "not recorded"})}
        )
    coverage = receipt.get("coverage")
    if coverage is not None and "coverage" not in skip:
        lines.append(
            f"coverage: not made: {coverage['absent']}"
            if "absent" in coverage
            else stages.coverage_line(coverage)
        )
    return lines


#: The evidence sections a check's run and its receipt both speak of.
EVIDENCE_SECTIONS = ("invariance", "sanitizer", "timing", "coverage")


def said_of_the_run(result: Any) -> frozenset[str]:
    """The evidence sections :func:`result_lines` already said of ``result``."""
    if result.kernel is None:
        return frozenset()
    said = {
        "invariance": stages.invariance_line(getattr(result, "batch_invariance", None)),
        "sanitizer": stages.sanitizer_line(getattr(result, "sanitizer", None)),
        "coverage": stages.coverage_line(getattr(result, "coverage", None)),
        "timing": timing_stage.timing_lines(getattr(result, "timing", None)) or None,
    }
    return frozenset(name for name, line in said.items() if line is not None)


def check_command_lines(result: Any, receipt: dict[str, Any]) -> list[str]:
    """What ``main.py check`` prints before the receipts' paths: the run's lines, then what the
    receipt adds (each evidence section said once, from the run where it was said)."""
    return result_lines(result) + receipt_lines(receipt, said_of_the_run(result))


#: Each verdict's colour: amber for a run this machine could not judge (neither pass nor fail).
VERDICT_COLORS = {"passed": PASSED_COLOR, "failed": FAILED_COLOR, "not judged": STALE_COLOR}


def verdict_of(result: Any) -> str:
    """ "passed", "failed" or "not judged": a check's (``CheckResult.verdict``) or a saved one's
    (``SessionResults.verdict``)."""
    return str(getattr(result, "verdict", "passed" if result.passed else "failed"))


def verdict_word(result: Any) -> str:
    """ "PASSED", "FAILED" or "NOT JUDGED"."""
    return verdict_of(result).upper()


def failure_lines(failures: Any) -> list[str]:
    """One ``FAILURE:`` line per failure, as the check log lists them."""
    return [f"FAILURE: {failure}" for failure in failures]


def check_status_line(result: Any) -> str:
    """The status bar's line after a check: its verdict and what it counts."""
    unjudged = f", {len(result.not_judged)} not judged" if result.not_judged else ""
    return f"check {verdict_of(result)}: {len(result.failures)} failure(s){unjudged}."


def check_log_lines(result: Any) -> list[str]:
    """The window's check log: verdict, :func:`result_lines`, modeled traffic, failures."""
    traffic = result.traffic
    return [
        f"check {verdict_word(result)} — mode {result.mode}, device {result.device}",
        *result_lines(result),
        f"traffic (modeled, not measured): read {traffic.bytes_read} B, written "
        f"{traffic.bytes_written} B, {traffic.reductions} reductions",
        *failure_lines(result.failures),
    ]


def clock() -> str:
    """The local time, HH:MM:SS (what the window stamps its results with)."""
    return time.strftime("%H:%M:%S")


def check_verdict_html(result: Any, at: str = "", *, muted: bool = False) -> str:
    """The rich-text verdict under the Run buttons after a check (taken at ``at``); ``muted``:
    grey, for a verdict a newer run superseded."""
    color = GREY_COLOR if muted else VERDICT_COLORS[verdict_of(result)]
    headline = result.headline
    when = f" at {at}" if at else ""
    text = (
        f"<b style='color:{color}'>check {verdict_word(result)}</b>{when} "
        f"({result.mode}) · "
        f"max abs {headline.max_abs:.2e} · max rel {headline.max_rel:.2e}"
    )
    if getattr(result, "kernel", None) is None and getattr(result, "input_not_judged", ""):
        text += " (the lane model's: the kernel's run on this input was not judged)"
    text += evidence_html(*_evidence_words(result))
    if result.failures:
        text += f"<br>{len(result.failures)} failure(s): see the check log"
    unjudged = getattr(result, "not_judged", ())
    if unjudged:
        text += (
            f"<br>{len(unjudged)} run(s) this machine could not judge (its interpreter's fault, "
            "not the kernel's): see the check log"
        )
    return text


def _evidence_words(result: Any) -> tuple[list[str], list[str]]:
    """The verdict's evidence: (what the verdict requires: the bound's worst ratio, the
    layouts proven, the batch certificate under ``--batch-invariant``; what it does not: the
    batch certificate otherwise)."""
    kernel = result.kernel
    ratio = findings.bound_ratio(kernel) if kernel is not None else None
    worst = float(np.max(ratio)) if ratio is not None and ratio.size else None
    return section_words(
        worst,
        getattr(result, "batch_invariance", None),
        getattr(result, "coverage", None),
        batch_invariant=bool(getattr(result, "batch_invariant", False)),
    )


def section_words(
    worst_ratio: float | None, invariance: Any, coverage: Any, *, batch_invariant: bool = False
) -> tuple[list[str], list[str]]:
    """:func:`_evidence_words` from the figures a check and its receipt both hold: the worst
    err/bound (None: no bound), the ``batch_invariance`` and ``coverage`` sections (None, or
    with ``error`` / ``absent``: not made). The certificate is required where
    ``batch_invariant`` says the check required it, and wherever it is of the batch-invariant
    mode (only such a check certifies that mode)."""
    required: list[str] = []
    optional: list[str] = []
    if worst_ratio is not None:
        required.append(f"err/bound ≤ {worst_ratio:.2f}")
    if isinstance(coverage, dict) and "configurations" in coverage:
        total = len(coverage["configurations"])
        proven = total - len(coverage["unproven"])
        required.append(f"layouts proven {proven}/{total}")
    certified = isinstance(invariance, dict) and "bit_identical" in invariance
    mode = invariance.get("mode", "default") if certified else None
    words = required if batch_invariant or mode == "batch_invariant" else optional
    if certified and invariance["bit_identical"]:
        words.append(
            f"batch-invariant at {len(invariance['batch_sizes'])} batch sizes"
            if mode == "batch_invariant"
            else f"batch-invariant over {len(invariance['batch_sizes'])} layouts"
        )
    elif certified:
        worst = max(row["max_ulp"] for row in invariance["differing_rows"])
        words.append(
            f"NOT batch-invariant: {len(invariance['differing_rows'])} row(s), ≤ {worst} ulp"
        )
    elif batch_invariant:
        required.append("batch-invariant: NOT certified")
    return required, optional


def evidence_html(required: list[str], optional: list[str]) -> str:
    """The verdict's evidence lines: what the verdict requires, then, greyed and said to be
    so, what it does not (a kernel passes whether or not it is batch-invariant)."""
    text = ""
    if required:
        text += "<br>required: " + " · ".join(required)
    if optional:
        text += (
            f"<br><span style='color:{GREY_COLOR}'>not required to pass: "
            + " · ".join(optional)
            + "</span>"
        )
    return text


def saved_check_lines(results: Any, matrices: list[Any], provenance: Any = None) -> list[str]:
    """The check log of a check saved in a session file (``session.results``)."""
    return [
        f"saved check {verdict_word(results)}: {results.kernel_note}",
        *([provenance.message] if provenance is not None else []),
        *[line for kill_matrix in matrices for line in kill_matrix.summary_lines()],
        *failure_lines(results.failures),
    ]


def saved_verdict_html(results: Any, provenance: Any = None) -> str:
    """The rich-text verdict of a check saved in a session file; when the kernel it proved has
    changed since (``records.provenance.KernelProvenance``), that instead of a green verdict."""
    if provenance is not None and provenance.changed:
        return (
            f"<b style='color:{STALE_COLOR}'>kernel changed since this receipt</b>: the saved "
            f"check ({verdict_word(results)}) proved another kernel · run the check again"
        )
    if provenance is not None and provenance.stale:
        return (
            f"<b style='color:{STALE_COLOR}'>receipt of another kernel</b>: the saved check "
            f"({verdict_word(results)}) is not of the loaded kernel (the check log says "
            "whose it is) · run the check"
        )
    color = VERDICT_COLORS[verdict_of(results)]
    return (
        f"<b style='color:{color}'>saved check {verdict_word(results)}</b> "
        f"({results.mode}, {results.device}) · run the check again to refresh"
    )


def interrupted_verdict_html(how: str, earlier: str | None) -> str:
    """The verdict after a check that did not finish (``how``: "cancelled", "failed: ...");
    ``earlier``, the previous check's verdict of this input, greyed beneath, or None."""
    text = f"<b style='color:{STALE_COLOR}'>check {how}</b> at {clock()}: no new verdict"
    if earlier is None:
        return text + " (no earlier check of this input)"
    return (
        text + f"<br><span style='color:{GREY_COLOR}'>previous check of this input, "
        f"superseded: {earlier}</span>"
    )


def failed_verdict_html(name: str, message: str) -> str:
    """The rich-text verdict after job ``name`` failed with ``message``."""
    return f"<b style='color:{FAILED_COLOR}'>{name} failed</b>: {message}"


def kernel_run_line(run: Any) -> str:
    """The check-log line of one kernel run (``pipeline.KernelRun``)."""
    tag = f" mutant {run.mutant}" if run.mutant else ""
    if run.path == "user":  # its tile and warps are its launcher's business, unknown here
        where = f"user kernel ({run.mode}, {run.device}, in a child process)"
        into = run.stores.into_input
        writes = f"; {len(into)} store(s) into x" if into else ""
        return (
            f"{where}: {run.comparison.describe()}; "
            f"{run.stores.count} out-of-bounds store(s){writes}"
        )
    return (
        f"kernel{tag} ({run.mode}, {run.device}, BLOCK {run.block}, "
        f"num_warps {run.num_warps}): {run.comparison.describe()}; "
        f"{run.stores.count} out-of-bounds store(s)"
    )


def kernel_run_status(run: Any) -> str:
    """The status-bar line of one kernel run."""
    tag = f" mutant {run.mutant}" if run.mutant else ""
    state = "agrees" if run.comparison.passed else "DISAGREES"
    who = "user kernel" if run.path == "user" else f"kernel{tag}"
    return (
        f"{who} ({run.mode}) {state} with the scalar reference; "
        f"{run.stores.count} out-of-bounds store(s)."
    )
