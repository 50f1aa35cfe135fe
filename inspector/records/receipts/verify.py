"""``verify``: an independent reparse of receipts written earlier, and their consistency.

Beyond the export proof's comparisons
(:func:`inspector.records.receipts.exports.compare_exports`), it recomputes the input hashes and
the oracle's per-row intermediates from the values recorded in the JSON and every figure of the
tile and of the traffic ledger (each named where it differs), and checks the mutant and fixture
outcomes, every kernel launch layout and the recorded ``export_check``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.records.atomic import JOURNAL_NAME
from inspector.records.receipts import claims
from inspector.records.receipts.exact import from_json_number, nan_max, same_float
from inspector.records.receipts.exports import Check, compare_exports, joined
from inspector.records.receipts.format import (
    READABLE_VERSIONS,
    ReceiptError,
    read_csv_rows,
    read_json,
    schema_errors,
    values_sha256,
)
from oracle.dtypes import ITEMSIZE
from oracle.matrix import NO_VERDICT, NOT_JUDGED, OUT_OF_DOMAIN

if TYPE_CHECKING:  # pragma: no cover - typing only
    from oracle.scalar import ScalarResult
    from oracle.spec import Problem

__all__ = ["Check", "VerifyReport", "verify_receipts"]


@dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify_receipts` found.

    Attributes:
        json_path: the receipt checked.
        csv_path: the CSV checked, or None when there was none.
        checks: every check in order.
    """

    json_path: Path
    csv_path: Path | None
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """Every check held (and there was at least one)."""
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def problems(self) -> list[str]:
        """Each failed check as "name: detail"."""
        return [f"{c.name}: {c.detail}" for c in self.checks if not c.ok]

    def lines(self) -> list[str]:
        """One line per check, "ok" or "FAIL", for a terminal."""
        return [f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in self.checks]


def _recompute_checks(data: dict[str, Any]) -> tuple[list[Check], np.ndarray | None]:
    """Hashes, tile, traffic and the oracle's per-row intermediates, from the recorded input;
    with the scalar reference output recomputed from it (None where the input does not rebuild:
    the checks say why)."""
    from oracle.spec import ValidationError, make_problem

    checks: list[Check] = []
    section = data["input"]
    dtype = section["dtype"]
    x_values, weights = section["x"], section["weight"]
    shape_ok = (
        len(x_values) == section["rows"]
        and all(len(row) == section["width"] for row in x_values)
        and len(weights) == section["width"]
    )
    checks.append(
        Check(
            "input dimensions",
            shape_ok,
            f"x {len(x_values)} rows, weight {len(weights)} values for rows={section['rows']} "
            f"width={section['width']}",
        )
    )
    if not shape_ok:
        return checks, None
    for name, values in (("x", x_values), ("weight", weights)):
        digest = values_sha256(values, dtype)
        checks.append(
            Check(
                f"input.{name}_sha256",
                digest == section[f"{name}_sha256"],
                f"recomputed {digest[:16]}..., recorded {section[f'{name}_sha256'][:16]}...",
            )
        )
    try:
        problem = make_problem(
            x_values, weights, eps=section["eps"], dtype=dtype, row_stride=section["row_stride"]
        )
    except ValidationError as exc:
        checks.append(Check("input valid", False, str(exc)))
        return checks, None
    exact = np.array_equal(problem.x, np.asarray(x_values, dtype=np.float64)) and np.array_equal(
        problem.weight, np.asarray(weights, dtype=np.float64)
    )
    checks.append(Check("input exact in dtype", exact, f"x and weight are {dtype} values"))
    tile = data["tile"]
    checks.append(
        _recomputed(
            "tile",
            tile,
            {
                "block": problem.block,
                "valid_lanes": problem.width,
                "masked_lanes": problem.block - problem.width,
            },
            f"block {tile['block']}, valid {tile['valid_lanes']}, "
            f"masked {tile['masked_lanes']} for width {problem.width}",
        )
    )
    from oracle.traffic import ledger

    modeled = ledger(problem)
    recomputed = {
        name: getattr(modeled, name)
        for name in (
            "bytes_read_x",
            "bytes_read_weight",
            "bytes_read_weight_unique",
            "bytes_read",
            "bytes_written",
            "bytes_total",
            "reductions",
        )
    }
    recomputed["itemsize"] = ITEMSIZE[dtype]
    checks.append(
        _recomputed(
            "traffic ledger",
            data["traffic"],
            recomputed,
            f"{problem.rows * problem.width} elements x {ITEMSIZE[dtype]} bytes: every figure "
            "recomputed",
        )
    )
    from oracle import scalar

    reference = scalar.reference(problem)
    checks.append(_rows_check(data["rows"], problem, from_json_number(tile["poison"]), reference))
    return checks, reference.y


def _recomputed(name: str, section: dict[str, Any], expected: dict[str, int], ok_detail: str):
    """A check that each of ``expected``'s fields of ``section`` is the value recomputed."""
    drift = [
        f"{field_name}: recorded {section[field_name]!r}, recomputed {value}"
        for field_name, value in expected.items()
        if type(section[field_name]) is not int or section[field_name] != value
    ]
    return Check(name, not drift, joined(drift, 4) if drift else ok_detail)


def _rows_check(
    rows: list[dict[str, Any]], problem: Problem, poison: float, reference: ScalarResult
) -> Check:
    """Every recorded row against the oracle's intermediates recomputed from the input."""
    from oracle import tiled

    model = tiled.model(problem, poison=poison)
    drift = []
    if len(rows) != problem.rows:
        drift.append(f"{len(rows)} rows recorded for {problem.rows} input rows")
    for index, row in zip(range(problem.rows), rows, strict=False):
        recomputed = {
            "sum_squares": reference.sum_squares[index],
            "mean_square": reference.mean_square[index],
            "rrms": reference.rrms[index],
            "tiled_sum_squares": model.sum_squares[index],
            "tiled_mean_square": model.mean_square[index],
            "tiled_rrms": model.rrms[index],
        }
        for name, value in recomputed.items():
            if not same_float(from_json_number(row[name]), float(value)):
                drift.append(
                    f"row {index} {name}: recorded {from_json_number(row[name])!r}, "
                    f"oracle {float(value)!r}"
                )
        for name, value in (
            ("index", index),
            ("width", problem.width),
            ("block", problem.block),
            ("valid_lanes", problem.width),
            ("masked_lanes", problem.block - problem.width),
        ):
            if row[name] != value:
                drift.append(f"row {index} {name}: recorded {row[name]!r}, expected {value}")
    return Check(
        "rows recomputed by the oracle",
        not drift,
        joined(drift, 3)
        if drift
        else f"{problem.rows} rows: sum_squares, mean_square, rrms (scalar and tiled) exact",
    )


def _outcome_checks(data: dict[str, Any]) -> list[Check]:
    checks = []
    survivors = [
        f"{m['target']} {m['name']}"
        for m in data["mutants"]
        if not (m["killed"] and m["killed_by"])
    ]
    targets = sorted({m["target"] for m in data["mutants"]})
    checks.append(
        Check(
            "mutants all killed",
            bool(data["mutants"]) and not survivors,
            f"survived: {', '.join(survivors)}"
            if survivors
            else f"{len(data['mutants'])} mutants ({', '.join(targets)}) killed",
        )
    )
    misbehaved = [
        f"{f['target']} {f['name']}"
        for f in data["fixtures"]
        if (not f["passed"] or f["expected"] != f["actual"]) and f["actual"] not in NO_VERDICT
    ]
    checks.append(
        Check(
            "fixtures behave",
            not misbehaved,
            f"unexpected outcome: {', '.join(misbehaved)}"
            if misbehaved
            else f"{len(data['fixtures'])} fixture outcomes as expected",
        )
    )
    outside = [f["name"] for f in data["fixtures"] if f["actual"] == OUT_OF_DOMAIN]
    if outside:
        checks.append(
            Check(
                "declared domain",
                True,
                f"{len(outside)} fixture(s) outside the kernel's declared domain, not run: "
                + ", ".join(outside[:8])
                + (", ..." if len(outside) > 8 else ""),
            )
        )
    unjudged = [f"{f['target']} {f['name']}" for f in data["fixtures"] if f["actual"] == NOT_JUDGED]
    if unjudged:
        checks.append(
            Check(
                "every fixture judged",
                False,
                f"not judged on the machine that ran it: {', '.join(unjudged[:8])}"
                + (", ..." if len(unjudged) > 8 else "")
                + " (kernel.not_judged says why)",
            )
        )
    paths = data["kernel"].get("paths") or []
    path_problems = [
        f"{entry['path']}: "
        + ", ".join(
            [f"{m} survived" for m in entry["survivors"]]
            + [m + " has no killer" for m, killers in entry["killed_by"].items() if not killers]
            + (
                [f"{entry['fixtures_as_expected']}/{entry['fixtures']} fixtures as expected"]
                if entry["fixtures_as_expected"] != entry["fixtures"]
                else []
            )
        )
        for entry in paths
        if entry["survivors"]
        or entry["fixtures_as_expected"] != entry["fixtures"]
        or not all(entry["killed_by"].values())
    ]
    user_kernel = (data["kernel"].get("source") or {}).get("kind") == "user"
    if user_kernel and not paths:
        source = data["kernel"]["source"]
        checks.append(
            Check(
                "kernel launch layouts",
                True,
                f"a user kernel ({source['path']}:{source['function']}): its own launcher, no "
                "forced layouts",
            )
        )
    elif paths or data["kernel"]["ran"]:
        checks.append(
            Check(
                "kernel launch layouts",
                bool(paths) and not path_problems,
                "; ".join(path_problems)
                if path_problems
                else (
                    f"{', '.join(e['path'] for e in paths)}: every mutant killed, every fixture"
                    " as expected"
                    if paths
                    else "the kernel ran but no launch layout was checked"
                ),
            )
        )
    export = data["export_check"]
    checks.append(
        Check(
            "export_check",
            export.get("status") == "passed",
            f"status {export.get('status')!r}"
            + (f": {export['problems'][0]}" if export.get("problems") else ""),
        )
    )
    return checks


def _coverage_checks(data: dict[str, Any]) -> list[Check]:
    """The ``coverage`` section's counts and unproven list against its configurations."""
    section = data.get("coverage")
    if section is None or "absent" in section:
        return []
    entries = section["configurations"]
    cpu = sum(entry["proven_cpu"] for entry in entries)
    gpu = sum(entry["proven_gpu"] for entry in entries)
    unproven = [e["label"] for e in entries if not (e["proven_cpu"] or e["proven_gpu"])]
    labels = [entry["label"] for entry in entries]
    ok = (
        section["proven_cpu"] == cpu
        and section["proven_gpu"] == gpu
        and section["unproven"] == unproven
        and len(set(labels)) == len(labels)
    )
    return [
        Check(
            "coverage",
            ok,
            f"claims cpu {section['proven_cpu']}, gpu {section['proven_gpu']}, "
            f"{len(section['unproven'])} unproven; its {len(entries)} configurations give cpu "
            f"{cpu}, gpu {gpu}, {len(unproven)} unproven"
            + ("" if len(set(labels)) == len(labels) else ", with repeated labels"),
        )
    ]


def _consistency_checks(data: dict[str, Any], csv_file: Path | None) -> list[Check]:
    """Everything ``verify`` checks once the JSON is schema-valid."""
    checks, reference_y = _recompute_checks(data)
    checks += claims.bound_checks(data)
    checks += _coverage_checks(data)
    checks.append(
        Check(
            "json row count",
            len(data["rows"]) == data["input"]["rows"],
            f"{len(data['rows'])} rows for input.rows={data['input']['rows']}",
        )
    )
    recorded_csv = data["export_check"].get("files", {}).get("csv_sha256")
    if csv_file is None and recorded_csv:
        checks.append(
            Check("csv", False, "the receipt says a CSV was exported; none given or found")
        )
    elif csv_file is None:
        checks.append(Check("csv", True, "no CSV given or found beside the JSON; not checked"))
    if csv_file is None:
        for key, column in (("max_abs", "max_abs_error"), ("max_rel", "max_rel_error")):
            headline = from_json_number(data["errors"][key])
            json_max = nan_max(from_json_number(r[column]) for r in data["rows"])
            checks.append(
                Check(
                    f"errors.{key}",
                    same_float(headline, json_max),
                    f"headline {headline!r}, max of rows {json_max!r}",
                )
            )
    else:
        header, csv_rows, csv_problems = read_csv_rows(csv_file)
        checks += [Check("csv parse", False, p) for p in csv_problems]
        if not csv_problems:
            checks += compare_exports(data, header, csv_rows, None)
        recorded = data["export_check"].get("files", {}).get("csv_sha256")
        if recorded:
            digest = hashlib.sha256(csv_file.read_bytes()).hexdigest()
            checks.append(
                Check(
                    "csv unchanged since export",
                    digest == recorded,
                    "same bytes as when exported"
                    if digest == recorded
                    else f"sha256 {digest[:16]}..., export recorded {recorded[:16]}...",
                )
            )
    checks += _outcome_checks(data)
    checks += claims.claim_checks(data)
    checks += claims.row_error_checks(data, reference_y)
    checks += claims.fixture_checks(data)
    checks += claims.killer_checks(data)
    checks += claims.sanitizer_checks(data)
    checks += claims.invariance_checks(data)
    return checks


def verify_receipts(
    json_path: str | os.PathLike[str], csv_path: str | os.PathLike[str] | None = None
) -> VerifyReport:
    """Independently reparse receipts written earlier and check them for consistency.

    Checks: JSON syntax and schema; schema version; x/weight sha256 recomputed from the
    recorded values; dimensions; every tile and traffic ledger figure; per-row intermediates
    recomputed by the oracle from the recorded input; CSV header, row count and every CSV value
    equal to the JSON's exactly; headline max errors equal the maxima of the per-row values;
    every mutant killed; every fixture as expected; ``export_check`` present and passed.

    Args:
        json_path: the receipt JSON.
        csv_path: its CSV; default: the JSON's sibling with suffix ``.csv`` if it exists.

    Returns:
        A :class:`VerifyReport` (``ok`` False names every failed check).

    Raises:
        ReceiptError: a path cannot be read (missing, a folder, no permission).
    """
    json_file = Path(json_path)
    csv_file = Path(csv_path) if csv_path is not None else json_file.with_suffix(".csv")
    if csv_path is None and not csv_file.exists():
        csv_file = None
    for path in (json_file, csv_file):
        if path is None:
            continue
        if not path.is_file():
            raise ReceiptError(f"cannot read {path}: no such file")
        if not os.access(path, os.R_OK):
            raise ReceiptError(f"cannot read {path}: permission denied")
    checks: list[Check] = []
    if (json_file.parent / JOURNAL_NAME).exists():
        checks.append(
            Check(
                "receipt pair",
                False,
                f"a write into {json_file.parent} was interrupted ({JOURNAL_NAME} is there): "
                "the pair may be mixed; the next check there restores the previous pair",
            )
        )
    data, problems = read_json(json_file)
    checks += [Check("json parse", False, p) for p in problems]
    if data is not None:
        errors = schema_errors(data)
        checks.append(
            Check("json schema", not errors, "; ".join(errors[:3]) if errors else "valid")
        )
        if errors:
            data = None
    if data is not None:
        checks.append(
            Check(
                "schema_version",
                data["schema_version"] in READABLE_VERSIONS,
                f"{data['schema_version']} (this tool reads "
                f"{', '.join(map(str, READABLE_VERSIONS))})",
            )
        )
        checks += claims.content_version_checks(data)
        try:
            checks += _consistency_checks(data, csv_file)
        except (KeyError, IndexError, TypeError, ValueError, ArithmeticError) as exc:
            # Schema-valid but self-contradictory in a way no check above anticipated.
            checks.append(Check("consistency", False, f"{type(exc).__name__}: {exc}"))
    return VerifyReport(json_file, csv_file, tuple(checks))
