"""A receipt's judgements held to the figures it records beside them, section against section.

:mod:`inspector.records.receipts.verify` reparses the files and recomputes the oracle's numbers;
here every judgement the receipt states is recomputed from its own data: a comparison's
``passed`` from its rows' errors and the recorded tolerance, a fixture's outcome from its errors
and the matrix's declaration, a mutant's killers from the fixtures recorded, the sanitizer's and
the batch certificate's verdicts from their counts, and the verdict from all of them. An edited
claim then contradicts its own receipt. NaN is within no tolerance: it counts as a failure.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from inspector.records.receipts.exact import from_json_number
from inspector.records.receipts.exports import Check, joined
from oracle.matrix import OUT_OF_DOMAIN

__all__ = [
    "NEWER_FIELDS",
    "bound_checks",
    "claim_checks",
    "content_version_checks",
    "fixture_checks",
    "invariance_checks",
    "killer_checks",
    "row_error_checks",
    "sanitizer_checks",
]

#: What schema version 2 added (and schema 1, ``additionalProperties: false`` throughout,
#: forbade): a receipt labelled 1 that holds any of these is of the newer schema, relabelled so
#: the bound and the later sections go unchecked. Keys: "" the top level, else a section.
NEWER_FIELDS: dict[str, tuple[str, ...]] = {
    "": ("error_bound", "batch_invariance", "device_evidence", "coverage", "timing"),
    "rows[]": ("exact_error", "error_bound"),
    "kernel": (
        "oob_reads",
        "not_judged",
        "machine_faults",
        "autotune_configs",
        "domain",
        "batch_invariant",
    ),
    "verdict": ("outcome",),
}


def _number(value: Any) -> float:
    """A recorded figure as a float; anything that is not one reads as NaN (a failure)."""
    try:
        return from_json_number(value)
    except ValueError:
        return math.nan


def content_version_checks(data: dict[str, Any]) -> list[Check]:
    """A receipt labelled schema 1 holds nothing schema 2 added (none for a version 2 one)."""
    if data["schema_version"] != 1:
        return []
    found = [name for name in NEWER_FIELDS[""] if name in data]
    found += [
        f"rows[].{name}"
        for name in NEWER_FIELDS["rows[]"]
        if any(name in row for row in data["rows"])
    ]
    for section in ("kernel", "verdict"):
        found += [f"{section}.{name}" for name in NEWER_FIELDS[section] if name in data[section]]
    return [
        Check(
            "schema version of the content",
            not found,
            f"labelled 1 but holds what version 2 added: {joined(found, 6)}; a downgrade is "
            "refused (version 1 has no bound to check)"
            if found
            else "version 1 content: none of the fields version 2 added",
        )
    ]


def _comparisons(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every recorded comparison that states a ``passed``: the headline and the kernel's."""
    kernel = data["kernel"]
    return [("errors", data["errors"])] + [
        (f"kernel.{key}", kernel[key])
        for key in ("vs_scalar", "vs_torch_float64")
        if isinstance(kernel.get(key), dict)
    ]


def row_error_checks(data: dict[str, Any], reference_y: np.ndarray | None) -> list[Check]:
    """A passed headline comparison against its rows' errors and the recorded tolerance.

    An element passes when ``|y - ref| <= atol + rtol * |ref|``, so no row of a passed comparison
    records ``max_abs_error`` past ``atol + rtol * max|ref|`` of its row, and none records NaN
    (nor a NaN ``max_rel_error``). ``reference_y``: the scalar reference recomputed from the
    recorded input; None where the input does not rebuild (its own checks say why), and then
    only the NaNs are checked.
    """
    errors = data["errors"]
    atol, rtol = float(errors["atol"]), float(errors["rtol"])
    checks: list[Check] = []
    nan_claims = [
        f"{name}: passed=True with {key}={entry[key]!r}"
        for name, entry in _comparisons(data)
        + [(f"model_checks.{k}", v) for k, v in data["model_checks"].items()]
        if entry.get("passed") is True
        for key in ("max_abs", "max_rel")
        if math.isnan(_number(entry[key]))
    ]
    if errors["passed"]:
        nan_claims += [
            f"errors: passed=True with row {index} {key}={row[key]!r}"
            for index, row in enumerate(data["rows"])
            for key in ("max_abs_error", "max_rel_error")
            if math.isnan(_number(row[key]))
        ]
    checks.append(
        Check(
            "NaN counts as a failure",
            not nan_claims,
            joined(nan_claims, 3) if nan_claims else "no passed comparison holds a NaN error",
        )
    )
    past = []
    if errors["passed"] and reference_y is not None:
        with np.errstate(invalid="ignore"):
            scale = np.nanmax(np.where(np.isfinite(reference_y), np.abs(reference_y), 0), axis=1)
        for index, row in enumerate(data["rows"][: len(scale)]):
            value = _number(row["max_abs_error"])
            limit = atol + rtol * float(scale[index])
            if not value <= limit and not math.isnan(value):
                past.append(
                    f"errors.passed=True but row {index} records max_abs_error {value!r}, "
                    f"{value / limit if limit else math.inf:.3g}x its tolerance {limit:.3g}"
                )
    checks.append(
        Check(
            "row errors within the tolerance",
            not past,
            joined(past, 3)
            if past
            else (
                f"every row's max_abs_error within atol + rtol * max|reference| "
                f"({errors['compare_dtype']})"
                if errors["passed"]
                else "the comparison failed: no row is held to the tolerance"
            ),
        )
    )
    return checks


def fixture_checks(data: dict[str, Any]) -> list[Check]:
    """Each recorded fixture against the matrix's declaration of it, and each ``pass`` against
    its recorded errors and its dtype's tolerance (rebuilt from the fixture's name)."""
    from oracle import fixtures
    from oracle.compare import TOLERANCES
    from oracle.matrix import ReferenceCache

    cache = ReferenceCache()
    wrong: list[str] = []
    past: list[str] = []
    seen: set[tuple[str, str]] = set()
    for entry in data["fixtures"]:
        label = f"{entry['target']} {entry['name']}"
        if (entry["target"], entry["name"]) in seen:
            wrong.append(f"{label} recorded twice")
        seen.add((entry["target"], entry["name"]))
        known = fixtures.BY_NAME.get(entry["name"])
        if known is None:
            wrong.append(f"{label}: no fixture of that name in the matrix")
            continue
        if (entry["expected"], entry["category"]) != (known.expected, known.category):
            wrong.append(
                f"{label}: expected {entry['expected']!r} ({entry['category']}), the matrix "
                f"declares {known.expected!r} ({known.category})"
            )
        if entry["passed"] != (entry["actual"] == entry["expected"]):
            wrong.append(f"{label}: passed={entry['passed']} with actual {entry['actual']!r}")
        if entry["actual"] != "pass" or known.check == "rejection":
            continue
        problem = cache.problem(known)
        tolerance = TOLERANCES[problem.dtype]
        reference = cache.reference(known)
        finite = np.abs(reference[np.isfinite(reference)])
        limit = tolerance.atol + tolerance.rtol * (float(finite.max()) if finite.size else 0.0)
        value = _number(entry["max_abs_error"])
        relative = _number(entry["max_rel_error"])
        if not value <= limit or math.isnan(relative):
            past.append(
                f"{label} recorded pass with max_abs_error {entry['max_abs_error']!r}"
                + (
                    f", {value / limit:.3g}x its {problem.dtype} tolerance {limit:.3g}"
                    if not math.isnan(value)
                    else ""
                )
                + (f", max_rel_error {entry['max_rel_error']!r}" if math.isnan(relative) else "")
            )
    return [
        Check(
            "fixtures as the matrix declares them",
            not wrong,
            joined(wrong, 3)
            if wrong
            else f"{len(data['fixtures'])} fixture outcomes: names, categories and expectations "
            "of the matrix",
        ),
        Check(
            "fixture errors within the tolerance",
            not past,
            joined(past, 3)
            if past
            else "every fixture recorded as pass has its errors within its dtype's tolerance",
        ),
    ]


def killer_checks(data: dict[str, Any]) -> list[Check]:
    """Every mutant's ``killed_by`` names fixtures this receipt records as passed by the same
    target that run an implementation (a mutant is killed only by a fixture the faithful
    implementation passes), and ``killed`` says whether it names any."""
    from oracle import fixtures

    runnable = {f.name for f in fixtures.FIXTURES if f.check != "rejection"}
    passed: dict[str, set[str]] = {}
    recorded: dict[str, set[str]] = {}
    for entry in data["fixtures"]:
        recorded.setdefault(entry["target"], set()).add(entry["name"])
        if entry["passed"]:
            passed.setdefault(entry["target"], set()).add(entry["name"])
    strays: list[str] = []
    for mutant in data["mutants"]:
        label = f"{mutant['target']} mutant {mutant['name']}"
        if mutant["killed"] != bool(mutant["killed_by"]):
            strays.append(
                f"{label}: killed={mutant['killed']} with killed_by {mutant['killed_by']}"
            )
        good = passed.get(mutant["target"], set()) & runnable
        strays += [
            f"{label} killed by {name!r}, not a fixture the {mutant['target']} passed here"
            for name in mutant["killed_by"]
            if name not in good
        ]
    kernel_names = recorded.get("kernel", set()) & runnable
    for entry in data["kernel"].get("paths") or []:
        strays += [
            f"kernel[{entry['path']}] mutant {mutant} killed by {name!r}, not a kernel fixture "
            "recorded here"
            for mutant, killers in entry["killed_by"].items()
            for name in killers
            if name not in kernel_names
        ]
    return [
        Check(
            "mutants killed by recorded fixtures",
            not strays,
            joined(strays, 3)
            if strays
            else "every killer is a fixture its target passed in this receipt",
        )
    ]


def sanitizer_checks(data: dict[str, Any]) -> list[Check]:
    """``device_evidence.sanitizer``'s ``passed`` against its own counts and report."""
    from inspector.check.stages import parse_sanitizer_output

    section = (data.get("device_evidence") or {}).get("sanitizer")
    if section is None or "absent" in section:
        return []
    follows = bool(
        section["ran"]
        and section["errors"] == 0
        and section["exit_code"] == 0
        and section["launches"]
    )
    reported, _ = parse_sanitizer_output(section["report"])
    ok = section["passed"] == follows and not (section["passed"] and reported)
    detail = (
        f"passed={section['passed']} with {section['errors']} error(s), exit code "
        f"{section['exit_code']}, {section['launches']} launch(es)"
    )
    if section["passed"] != follows:
        detail += f": those give passed={follows}"
    if section["passed"] and reported:
        detail += f"; its report counts {reported} error(s)"
    return [Check("device_evidence.sanitizer", ok, detail)]


def invariance_checks(data: dict[str, Any]) -> list[Check]:
    """The batch-invariance certificate's ``bit_identical`` against its rows and launches, and
    its mode against ``kernel.batch_invariant``."""
    section = data.get("batch_invariance")
    if section is None or "absent" in section:
        return []
    differing = [entry["row"] for entry in section["differing_rows"]]
    launches = section["launches"]
    most = max((launch["rows_differing"] for launch in launches), default=0)
    problems = []
    if section["bit_identical"] != (not differing):
        problems.append(
            f"bit_identical={section['bit_identical']} with {len(differing)} row(s) listed"
        )
    if len(set(differing)) != len(differing) or any(
        row >= section["rows_checked"] for row in differing
    ):
        problems.append(f"rows listed twice or past the {section['rows_checked']} checked")
    if section["rows_checked"] > data["input"]["rows"]:
        problems.append(f"{section['rows_checked']} rows checked of {data['input']['rows']}")
    if most > len(differing):
        problems.append(f"a launch differs in {most} row(s), {len(differing)} listed")
    if differing and not most and section["cuda_graph"] != "differs":
        problems.append("rows listed as differing but no launch nor the CUDA graph differs")
    if section["cuda_graph"] == "differs" and not differing:
        problems.append("the CUDA graph differs but no row is listed")
    mode = section.get("mode", "default")
    if section["batch_sizes"][0] != 1 or any(
        launch["batch_size"] not in section["batch_sizes"] for launch in launches
    ):
        problems.append("batch sizes that do not start at 1 or launches of unlisted sizes")
    if (mode == "batch_invariant") != bool(data["kernel"].get("batch_invariant")):
        problems.append(
            f"a certificate of mode {mode!r} with kernel.batch_invariant "
            f"{bool(data['kernel'].get('batch_invariant'))}"
        )
    return [
        Check(
            "batch invariance",
            not problems,
            joined(problems, 3)
            if problems
            else f"bit_identical={section['bit_identical']}: {len(differing)} differing row(s) "
            f"of {section['rows_checked']}, {len(launches)} launches",
        )
    ]


def bound_checks(data: dict[str, Any]) -> list[Check]:
    """The ``error_bound`` section against the rows it summarises (schema version 2)."""
    bound = data.get("error_bound")
    if bound is None:
        return []
    errors = [from_json_number(r["exact_error"]) for r in data["rows"]]
    bounds = [from_json_number(r["error_bound"]) for r in data["rows"]]
    if not bound["applies"]:
        ok = all(math.isnan(b) for b in bounds) and bound["within"] is None
        return [Check("error_bound", ok, f"no bound: {bound['why']}")]
    within = all(e <= b for e, b in zip(errors, bounds, strict=True))
    pairs = zip(errors, bounds, strict=True)
    ratios = [e / b if b > 0 and not math.isnan(e) else math.inf for e, b in pairs]
    worst = max(range(len(ratios)), key=ratios.__getitem__)  # the schema holds >= 1 row
    claimed = from_json_number(bound["worst_ratio"])
    ok = (
        bound["within"] == within
        and bound["worst_row"] == worst
        and math.isclose(claimed, ratios[worst], rel_tol=1e-12)
    )
    return [
        Check(
            "error_bound",
            ok,
            f"within={bound['within']} worst {claimed!r} at row {bound['worst_row']}; rows give "
            f"within={within} worst {ratios[worst]!r} at row {worst}",
        )
    ]


def _failing_sections(data: dict[str, Any]) -> list[str]:
    """What fails the verdict besides the comparisons, fixtures and mutants: the kernel's error
    past its derived bound, the sanitizer's errors, a launch layout's survivors or misbehaving
    fixtures, stores and reads out of bounds, unproven coverage, and under
    ``kernel.batch_invariant`` a batch certificate of that mode that is not bit-identical."""
    kernel = data["kernel"]
    reasons = []
    if kernel.get("oob_writes"):
        reasons.append(f"kernel.oob_writes {kernel['oob_writes']}")
    if kernel.get("oob_reads"):
        reasons.append(f"kernel.oob_reads {kernel['oob_reads']}")
    if data.get("coverage", {}).get("unproven"):
        reasons.append(f"coverage: {len(data['coverage']['unproven'])} unproven")
    certificate = data.get("batch_invariance") or {}
    if kernel.get("batch_invariant") and not (
        certificate.get("mode") == "batch_invariant" and certificate.get("bit_identical") is True
    ):
        reasons.append(
            "batch_invariance: required (kernel.batch_invariant) but no bit-identical "
            "certificate of the batch-invariant mode"
        )
    bound = data.get("error_bound") or {}
    if kernel.get("ran") and bound.get("applies") and bound.get("within") is False:
        reasons.append(f"error_bound: row {bound.get('worst_row')} past its derived bound")
    sanitizer = (data.get("device_evidence") or {}).get("sanitizer") or {}
    if sanitizer and "absent" not in sanitizer and not sanitizer.get("passed"):
        reasons.append(f"device_evidence.sanitizer: {sanitizer.get('errors')} error(s)")
    for entry in kernel.get("paths") or []:
        if entry["survivors"] or entry["fixtures_as_expected"] != entry["fixtures"]:
            reasons.append(f"kernel[{entry['path']}] survivors or fixtures not as expected")
    return reasons


def claim_checks(data: dict[str, Any]) -> list[Check]:
    """The receipt's judgements recomputed from what it records: each comparison's tolerance
    is the one declared for its dtype, its ``passed`` follows from its mismatch count, and the
    verdict follows from every recorded outcome and section (a forged ``passed`` contradicts
    them)."""
    from oracle.compare import TOLERANCES

    checks: list[Check] = []
    comparisons = _comparisons(data)
    loose, wrong = [], []
    for name, entry in comparisons:
        declared = TOLERANCES.get(entry.get("compare_dtype", ""))
        if declared is None or (entry["atol"], entry["rtol"]) != (declared.atol, declared.rtol):
            loose.append(
                f"{name}: atol={entry['atol']!r} rtol={entry['rtol']!r} for "
                f"{entry.get('compare_dtype')!r}"
                + (f", declared {declared.atol!r} / {declared.rtol!r}" if declared else "")
            )
        if "mismatches" in entry and entry["passed"] != (entry["mismatches"] == 0):
            wrong.append(f"{name}: passed={entry['passed']} with {entry['mismatches']} mismatches")
    checks.append(
        Check(
            "tolerances as declared",
            not loose,
            "; ".join(loose) if loose else f"{len(comparisons)} comparison(s) on the dtype's table",
        )
    )
    checks.append(
        Check(
            "comparisons follow their mismatches",
            not wrong,
            "; ".join(wrong) if wrong else "every passed flag matches its mismatch count",
        )
    )
    reasons = [name for name, entry in comparisons if not entry["passed"]]
    reasons += [
        f"{m['target']} mutant {m['name']} survived"
        for m in data["mutants"]
        if not (m["killed"] and m["killed_by"])
    ]
    reasons += [
        f"{f['target']} fixture {f['name']}"
        for f in data["fixtures"]
        if (not f["passed"] or f["expected"] != f["actual"]) and f["actual"] != OUT_OF_DOMAIN
    ]
    reasons += _failing_sections(data)
    verdict = data["verdict"]
    expected = not reasons and not verdict["failures"]
    detail = f"passed={verdict['passed']}, {len(verdict['failures'])} failure(s) recorded"
    if reasons:
        detail += "; the outcomes fail it: " + ", ".join(reasons[:4])
    checks.append(Check("verdict follows the outcomes", verdict["passed"] == expected, detail))
    if "outcome" in verdict:
        unjudged = data["kernel"].get("not_judged") or []
        named = "failed" if verdict["failures"] else "not judged" if unjudged else "passed"
        named = "failed" if named == "passed" and not expected else named
        checks.append(
            Check(
                "verdict names its outcome",
                verdict["outcome"] == named,
                f"outcome {verdict['outcome']!r}; {len(verdict['failures'])} failure(s), "
                f"{len(unjudged)} run(s) not judged give {named!r}",
            )
        )
    return checks
