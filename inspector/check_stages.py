"""Two stages of the check that stand apart from the proof's verdict: the compiler's output of
the kernel for the input's shape, and the batch-invariance certificate of the input's rows.

Qt-free; :mod:`inspector.pipeline` runs them, the receipt and the window show what they give.
"""

from __future__ import annotations

import hashlib
from typing import Any

from oracle.spec import Problem

#: Rows the certificate compares under the Triton interpreter, which runs each program in
#: Python (a compiled kernel compares every row).
INTERPRETER_INVARIANCE_ROWS = 64


def compile_summary(info: Any) -> dict[str, Any]:
    """A plain dict of compiler facts plus the texts (for the session and the window)."""
    texts = {
        name: getattr(info, name)
        for name in ("ttir", "ttgir", "llir", "ptx", "sass")
        if getattr(info, name, None)
    }
    summary: dict[str, Any] = {
        "target": str(getattr(info, "target", "")),
        "num_warps": getattr(info, "num_warps", None),
        "num_stages": getattr(info, "num_stages", None),
        "shared_bytes": getattr(info, "shared_bytes", None),
        "registers": getattr(info, "registers", None),
        "spills": getattr(info, "spills", None),
        "source_sha256": getattr(info, "source_sha256", ""),
        "triton_version": getattr(info, "triton_version", ""),
        "stages_sha256": {k: hashlib.sha256(v.encode()).hexdigest() for k, v in texts.items()},
        "ptx_lines": len(texts.get("ptx", "").splitlines()),
    }
    summary["texts"] = texts
    return summary


def compile_stage(problem: Problem, compile_target: Any) -> dict[str, Any]:
    """The bundled kernel compiled for the input (for ``compile_target`` when interpreted)."""
    import kernels
    from kernels.compile_info import compiler_output

    target = None if kernels.MODE == "compiled" else compile_target
    try:
        info = compiler_output(problem.dtype, problem.width, target, rows=problem.rows)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "target": str(target or "device")}
    return compile_summary(info)


def invariance_stage(problem: Problem, device: str) -> dict[str, Any]:
    """The receipt's ``batch_invariance`` of the bundled kernel on the input's rows
    (:func:`kernels.invariance.certify`), or ``{"error": ...}`` where it could not run."""
    import kernels
    from kernels import invariance
    from kernels.checked import resolve_device

    try:
        certificate = invariance.certify(
            problem.x,
            problem.weight,
            problem.eps,
            problem.dtype,
            resolve_device(device),
            row_stride=problem.row_stride,
            max_rows=INTERPRETER_INVARIANCE_ROWS if kernels.MODE == "interpreter" else None,
        )
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return certificate.to_receipt()


def invariance_line(section: dict[str, Any] | None) -> str | None:
    """One line about a ``batch_invariance`` section (None: the check made none)."""
    if section is None:
        return None
    if "error" in section:
        return f"batch invariance: not certified: {section['error']}"
    sizes = ", ".join(str(size) for size in section["batch_sizes"])
    if section["bit_identical"]:
        return (
            f"batch invariance: bit-identical: {section['rows_checked']} row(s) at batch sizes "
            f"{sizes}, each at the first, second, middle and last row of a program; "
            f"CUDA graph: {section['cuda_graph']}"
        )
    differing = section["differing_rows"]
    worst = max(row["max_ulp"] for row in differing)
    where: dict[tuple[int, str, int], int] = {}
    for launch in section["launches"]:
        if launch["rows_differing"]:
            key = (launch["batch_size"], launch["path"], launch["rows_per_program"])
            where[key] = where.get(key, 0) + 1
    places = "; ".join(
        f"batch {batch} ({path}, {per} rows per program, {count} position(s))"
        for (batch, path, per), count in where.items()
    )
    return (
        f"batch invariance: NOT bit-identical: {len(differing)} of {section['rows_checked']} "
        f"row(s) differ by up to {worst} ulp from the rows launched alone, in "
        f"{places or 'the CUDA graph'}; CUDA graph: {section['cuda_graph']}"
    )
