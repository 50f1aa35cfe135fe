"""Building a receipt: one check turned into the JSON-ready dict the schema describes."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.check import findings
from inspector.check.timing_stage import split_dram
from inspector.records.receipts.exact import from_json_number, json_number, nan_max
from inspector.records.receipts.format import FORMAT, HASH_METHOD, SCHEMA_VERSION, values_sha256
from oracle import error_bound
from oracle.dtypes import ITEMSIZE
from oracle.mutants import DESCRIPTIONS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from inspector.check.pipeline import CheckResult

TORCH_REFERENCE = (
    "torch.nn.functional.rms_norm(x, (width,), weight, eps) on float64 CPU tensors of the same "
    "values, rounded once to the declared dtype; compared under the errors' tolerance"
)

TRUTH_BOUNDARY = (
    "The oracle (scalar reference, tiled lane model, mutants, fixture matrix) proves bounded "
    "numerical logic. The kernel section records what the real Triton program did in the mode "
    "named there: 'interpreter' runs the kernel's logic on the CPU and validates no generated "
    "GPU code; 'compiled' ran it on the named device. Traffic is modeled, never measured. "
    "Timings appear only in 'timing': the benchmark's protocol run on the named device, on "
    "contiguous random rows of the input's shape, after the proof passed."
)


def _comparison(comparison: Any) -> dict[str, Any]:
    tolerance = comparison.tolerance
    return {
        "max_abs": json_number(comparison.max_abs),
        "max_rel": json_number(comparison.max_rel),
        "atol": float(tolerance.atol),
        "rtol": float(tolerance.rtol),
        "compare_dtype": tolerance.dtype,
        "mismatches": int(comparison.mismatches),
        "passed": bool(comparison.passed),
    }


def _versions(result: CheckResult) -> dict[str, str]:
    versions = {str(k): str(v) for k, v in dict(result.versions).items()}
    for package in ("numpy", "torch", "triton"):
        if package not in versions:
            try:
                versions[package] = importlib.metadata.version(package) + " (installed, not used)"
            except importlib.metadata.PackageNotFoundError:
                versions[package] = "not installed"
    versions.setdefault("tool", "rmsnorm-inspector")
    versions.setdefault("python", "unknown")
    return versions


def _kernel_source_sha256(result: CheckResult) -> str | None:
    source = getattr(result, "kernel_source", None) or {}
    if source.get("kind") == "user":
        return str(source["file_sha256"])
    compile_info = result.compile or {}
    digest = compile_info.get("source_sha256")
    if digest:
        return str(digest)
    if result.kernel is None:
        return None
    try:
        from kernels.instruments.compile_info import kernel_source_sha256

        return kernel_source_sha256()
    except Exception:  # the hash is informative; its absence is recorded as null
        return None


def _compile_section(compile_info: dict[str, Any] | None) -> dict[str, Any] | None:
    """Compiler facts without the (large) IR texts; those live in the session."""
    if compile_info is None:
        return None
    keep = (
        "target",
        "num_warps",
        "num_stages",
        "shared_bytes",
        "registers",
        "spills",
        "triton_version",
        "ptx_lines",
        "stages_sha256",
        "error",
    )
    section = {key: compile_info[key] for key in keep if key in compile_info}
    return json.loads(json.dumps(section, default=str))


def _fixture_entries(kill_matrix: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": outcome.fixture,
            "category": outcome.category,
            "target": kill_matrix.target,
            "expected": outcome.expected,
            "actual": outcome.actual,
            "passed": bool(outcome.passed),
            "max_abs_error": json_number(outcome.max_abs),
            "max_rel_error": json_number(outcome.max_rel),
            "detail": outcome.detail,
        }
        for outcome in kill_matrix.baseline
    ]


def _mutant_entries(kill_matrix: Any) -> list[dict[str, Any]]:
    entries = []
    for name in kill_matrix.mutants:
        killers = list(kill_matrix.killed_by(name))
        entries.append(
            {
                "name": name,
                "target": kill_matrix.target,
                "description": DESCRIPTIONS.get(name, ""),
                "killed": bool(killers),
                "killed_by": killers,
            }
        )
    return entries


def _row_entries(result: CheckResult, bounds: dict[str, Any]) -> list[dict[str, Any]]:
    problem = result.problem
    reference = result.scalar
    model = result.tiled
    row_abs = np.asarray(result.row_max_abs, dtype=np.float64)
    row_rel = np.asarray(result.row_max_rel, dtype=np.float64)
    exact = np.asarray(bounds["row_exact_error"], dtype=np.float64)
    bound = bounds["row_error_bound"]
    bound = np.full(problem.rows, np.nan) if bound is None else np.asarray(bound, np.float64)
    rows = []
    for index in range(problem.rows):
        rows.append(
            {
                "index": index,
                "width": problem.width,
                "block": int(model.block),
                "valid_lanes": int(model.valid_lanes),
                "masked_lanes": int(model.masked_lanes),
                "sum_squares": json_number(reference.sum_squares[index]),
                "mean_square": json_number(reference.mean_square[index]),
                "rrms": json_number(reference.rrms[index]),
                "tiled_sum_squares": json_number(model.sum_squares[index]),
                "tiled_mean_square": json_number(model.mean_square[index]),
                "tiled_rrms": json_number(model.rrms[index]),
                "max_abs_error": json_number(row_abs[index]),
                "max_rel_error": json_number(row_rel[index]),
                "exact_error": json_number(exact[index]),
                "error_bound": json_number(bound[index]),
            }
        )
    return rows


def _device_evidence(result: CheckResult) -> dict[str, Any]:
    """The sanitizer's word on the check's launches and Nsight Compute's DRAM figures of the
    timed call (:func:`inspector.check.timing_stage.split_dram`), each or why there is none."""
    sanitizer = result.sanitizer
    if sanitizer is None:
        sanitizer = {"absent": "the kernel did not run"}
    return {"sanitizer": sanitizer, "dram": split_dram(getattr(result, "timing", None))[1]}


def _stage_section(
    result: CheckResult, section: dict[str, Any] | None, failed: str, user: str
) -> dict[str, Any]:
    """A check stage's section (the certificate, the coverage map), or why there is none:
    ``failed`` before its error, ``user`` for a user's kernel (the stage is the bundled
    kernel's)."""
    if section is not None and "error" not in section:
        return section
    if section is not None:
        return {"absent": f"{failed}: {section['error']}"}
    if result.kernel is None:
        return {"absent": "the kernel did not run"}
    return {"absent": user}


def _bound_section(problem: Any, bounds: dict[str, Any]) -> dict[str, Any]:
    """The receipt's ``error_bound``: the bound's model and whether every row is within."""
    bound = bounds["row_error_bound"]
    adds = bounds["bound_adds"]
    section: dict[str, Any] = {
        "applies": bound is not None,
        "why": bounds["why"],
        "adds": adds,
        "truncating": bool(bounds["bound_truncating"]),
        "relative": None,
        "within": None,
        "worst_ratio": None,
        "worst_row": None,
    }
    if bound is None:
        return section
    error = np.asarray(bounds["row_exact_error"], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(np.isnan(error), np.inf, error / np.asarray(bound, dtype=np.float64))
    worst = int(np.argmax(ratio))
    section["relative"] = json_number(
        error_bound.relative_bound(problem.dtype, adds, bounds["bound_truncating"])
    )
    section["within"] = bool((error <= bound).all())
    section["worst_ratio"] = json_number(float(ratio[worst]))
    section["worst_row"] = worst
    return section


def build_receipt(result: CheckResult) -> dict[str, Any]:
    """Turn one check into the receipt dict (``export_check`` still "pending").

    Args:
        result: what :func:`inspector.check.pipeline.run_check` returned.

    Returns:
        A JSON-ready dict matching ``resources/receipt.schema.json``.
    """
    problem = result.problem
    headline = result.headline
    bounds = findings.check_bounds(result)
    rows = _row_entries(result, bounds)
    fixtures = _fixture_entries(result.model_matrix)
    mutants = _mutant_entries(result.model_matrix)
    if result.kernel_matrix is not None:
        fixtures += _fixture_entries(result.kernel_matrix)
        mutants += _mutant_entries(result.kernel_matrix)
    errors = _comparison(headline)
    # Headline maxima are the maxima of the per-row figures (the less flattering measure:
    # a non-zero output where the reference is 0 counts as an infinite relative error).
    errors["max_abs"] = json_number(nan_max(from_json_number(r["max_abs_error"]) for r in rows))
    errors["max_rel"] = json_number(nan_max(from_json_number(r["max_rel_error"]) for r in rows))
    errors["compared"] = result.errors_source
    errors["tolerance_why"] = headline.tolerance.why
    errors["first_mismatch"] = (
        list(headline.first_mismatch) if headline.first_mismatch is not None else None
    )
    kernel = result.kernel
    traffic = result.traffic
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "truth_boundary": TRUTH_BOUNDARY,
        "input": {
            "name": problem.name,
            "rows": problem.rows,
            "width": problem.width,
            "row_stride": problem.row_stride,
            "dtype": problem.dtype,
            "eps": float(problem.eps),
            "synthetic": True,
            "x": [[float(v) for v in row] for row in np.asarray(problem.x)],
            "weight": [float(v) for v in np.asarray(problem.weight)],
            "x_sha256": values_sha256(problem.x, problem.dtype),
            "weight_sha256": values_sha256(problem.weight, problem.dtype),
            "hash_method": HASH_METHOD,
        },
        "tile": {
            "block": int(result.tiled.block),
            "valid_lanes": int(result.tiled.valid_lanes),
            "masked_lanes": int(result.tiled.masked_lanes),
            "poison": json_number(result.tiled.poison),
        },
        "rows_source": {
            "intermediates": (
                "sum_squares, mean_square, rrms: scalar reference (binary64 loops); "
                "tiled_*: tiled lane model (float32 pairwise tree)"
            ),
            "errors": result.errors_source,
        },
        "rows": rows,
        "errors": errors,
        "error_bound": _bound_section(problem, bounds),
        "batch_invariance": _stage_section(
            result,
            result.batch_invariance,
            "could not run",
            "a user's kernel: its launch layouts are its own, not the rule's",
        ),
        "device_evidence": _device_evidence(result),
        "timing": split_dram(getattr(result, "timing", None))[0],
        "coverage": _stage_section(
            result,
            getattr(result, "coverage", None),
            "could not be made",
            "a user's kernel: the map is of the bundled layout rule",
        ),
        "model_checks": {
            "output": _comparison(result.output),
            "intermediates": _comparison(result.intermediates),
        },
        "traffic": {
            "modeled": True,
            "note": traffic.note,
            "bytes_read_x": int(traffic.bytes_read_x),
            "bytes_read_weight": int(traffic.bytes_read_weight),
            "bytes_read_weight_unique": int(traffic.bytes_read_weight_unique),
            "bytes_read": int(traffic.bytes_read),
            "bytes_written": int(traffic.bytes_written),
            "bytes_total": int(traffic.bytes_total),
            "reductions": int(traffic.reductions),
            "itemsize": ITEMSIZE[problem.dtype],
        },
        "fixtures": fixtures,
        "mutants": mutants,
        "kernel": {
            "mode": (
                result.mode if getattr(result, "kernel_matrix", None) is not None else "model only"
            ),
            "ran": kernel is not None,
            "note": result.kernel_note,
            "source_sha256": _kernel_source_sha256(result),
            "block": int(kernel.block) if kernel is not None else None,
            "num_warps": int(kernel.num_warps) if kernel is not None else None,
            "oob_writes": kernel.stores.count if kernel is not None else None,
            "oob_reads": (
                int(kernel.oob_reads)
                if kernel is not None
                and result.mode == "interpreter"
                and (getattr(result, "kernel_source", None) or {}).get("kind") == "user"
                else None
            ),
            "vs_scalar": _comparison(kernel.comparison) if kernel is not None else None,
            "vs_torch_float64": (
                _comparison(kernel.torch_comparison) if kernel is not None else None
            ),
            "torch_reference": TORCH_REFERENCE if kernel is not None else None,
            "compile": _compile_section(result.compile),
            "path": kernel.path if kernel is not None else None,
            "paths": _path_entries(result),
            "source": dict(getattr(result, "kernel_source", None) or {"kind": "bundled"}),
            "not_judged": [
                {"run": what, "why": why} for what, why in getattr(result, "not_judged", ())
            ],
            "machine_faults": [
                {"name": f["name"], "cause": f["cause"], "signature": list(f.get("signature", []))}
                for f in getattr(result, "machine_faults", ())
            ],
            "autotune_configs": list(getattr(result, "autotune_configs", ())),
            "domain": getattr(result, "declared_domain", None),
            "batch_invariant": bool(getattr(result, "batch_invariant", False)),
        },
        "device": result.device,
        "versions": _versions(result),
        "verdict": {
            "passed": bool(result.passed),
            "failures": list(result.failures),
            "outcome": result.verdict,
        },
        "export_check": {"status": "pending", "checks": [], "problems": []},
    }


def _path_entries(result: CheckResult) -> list[dict[str, Any]]:
    """Each forced launch layout of the kernel: its fixtures and which fixtures killed what."""
    entries = []
    for path, path_matrix in result.kernel_path_matrices.items():
        entries.append(
            {
                "path": path,
                "fixtures": len(path_matrix.baseline),
                "fixtures_as_expected": sum(o.passed for o in path_matrix.baseline),
                "survivors": list(path_matrix.survivors),
                "killed_by": {m: list(path_matrix.killed_by(m)) for m in path_matrix.mutants},
            }
        )
    return entries
