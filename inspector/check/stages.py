"""Stages of the check beside the proof's layers: the compiler's output of the kernel for the
input's shape, the batch-invariance certificate of the input's rows, and the kernel's launches
under compute-sanitizer on a GPU.

Qt-free; :mod:`inspector.check.pipeline` runs them, the receipt and the window show what they give.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oracle.dtypes import ITEMSIZE
from oracle.spec import Problem

if TYPE_CHECKING:
    from kernels.sandbox.usercode import KernelSpec

#: The compiler's stages, in the order Triton lowers through them (the compile stage's texts).
COMPILE_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")

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
    from kernels.instruments.compile_info import compiler_output

    target = None if kernels.MODE == "compiled" else compile_target
    try:
        info = compiler_output(problem.dtype, problem.width, target, rows=problem.rows)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "target": str(target or "device")}
    return compile_summary(info)


def invariance_stage(
    problem: Problem, device: str, *, batch_invariant: bool = False
) -> dict[str, Any]:
    """The receipt's ``batch_invariance`` of the bundled kernel on the input's rows
    (:func:`kernels.instruments.invariance.certify`; with ``batch_invariant``, of
    ``kernels.rms_norm``'s batch-invariant mode), or ``{"error": ...}`` where it could not run.

    Under the interpreter the mode's batches stop at three programs of its layout and a row
    (at most :data:`INTERPRETER_INVARIANCE_ROWS`): each program runs in Python there.
    """
    import kernels
    from kernels.instruments import invariance
    from kernels.instruments.checked import resolve_device

    interpreted = kernels.MODE == "interpreter"
    most_batch = None
    if batch_invariant and interpreted:
        from kernels.plans import invariant_config

        per = invariant_config(problem.width, ITEMSIZE[problem.dtype]).rows_per_program
        most_batch = min(3 * per + 1, INTERPRETER_INVARIANCE_ROWS)
    try:
        certificate = invariance.certify(
            problem.x,
            problem.weight,
            problem.eps,
            problem.dtype,
            resolve_device(device),
            row_stride=problem.row_stride,
            max_rows=INTERPRETER_INVARIANCE_ROWS if interpreted else None,
            batch_invariant=batch_invariant,
            max_batch_rows=most_batch,
        )
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return certificate.to_receipt()


def invariance_failures(section: dict[str, Any] | None) -> list[str]:
    """The check's failures when its batch-invariant mode is required and ``section`` (the
    mode's certificate) does not show it: missing, errored, of another mode, or not
    bit-identical."""
    required = "batch invariance required (--batch-invariant)"
    if section is None or "error" in section:
        why = "" if section is None else f": {section['error']}"
        return [f"{required} but not certified{why}"]
    mode = section.get("mode", "default")
    if mode != "batch_invariant":
        return [f"{required} but the certificate is of mode {mode!r}"]
    if not section["bit_identical"]:
        return [f"{required}: {invariance_line(section)}"]
    return []


def invariance_line(section: dict[str, Any] | None) -> str | None:
    """One line about a ``batch_invariance`` section (None: the check made none); a
    certificate of the batch-invariant mode names it and its one layout."""
    if section is None:
        return None
    if "error" in section:
        return f"batch invariance: not certified: {section['error']}"
    sizes = ", ".join(str(size) for size in section["batch_sizes"])
    head, checked = "batch invariance", "at the first, second, middle and last row of a program"
    if section.get("mode") == "batch_invariant":
        first = section["launches"][0] if section["launches"] else None
        layout = f"{first['path']}, {first['rows_per_program']} rows per program" if first else ""
        head = f"batch invariance of the batch-invariant mode (one layout: {layout})"
        checked = "at every place of a program and through the public call, against each alone"
    if section["bit_identical"]:
        return (
            f"{head}: bit-identical: {section['rows_checked']} row(s) at batch sizes "
            f"{sizes}, each {checked}; CUDA graph: {section['cuda_graph']}"
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
        f"{head}: NOT bit-identical: {len(differing)} of {section['rows_checked']} "
        f"row(s) differ by up to {worst} ulp from the rows launched alone, in "
        f"{places or 'the CUDA graph'}; CUDA graph: {section['cuda_graph']}"
    )


#: Longest a sanitized run of the check's launches may take (memcheck slows each launch).
SANITIZER_TIMEOUT_S = 600
#: Bytes of never-valid memory the sanitizer puts after every allocation, so a store just past
#: one buffer cannot land unseen in the next.
SANITIZER_PADDING_BYTES = 512
SANITIZER_TOOL = f"compute-sanitizer --tool memcheck --padding {SANITIZER_PADDING_BYTES}"
_ROOT = Path(__file__).resolve().parents[2]
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
_LAUNCHES = re.compile(r"^launches (\d+)$", re.MULTILINE)


def parse_sanitizer_output(text: str) -> tuple[int | None, int | None]:
    """``(errors, launches)`` from compute-sanitizer's report and the child's last line
    (None where the text holds none)."""
    errors = [int(found) for found in _SUMMARY.findall(text)]
    launches = _LAUNCHES.findall(text)
    return (sum(errors) if errors else None, int(launches[-1]) if launches else None)


def sanitizer_stage(problem: Problem, kernel: KernelSpec | None = None) -> dict[str, Any]:
    """The check's launches (:mod:`inspector.check.sanitize_child`: the bundled kernel's, or the
    user's ``kernel``) under ``compute-sanitizer --tool memcheck``, or ``{"absent": why}``
    where it cannot run: the interpreter, or no compute-sanitizer on the PATH.

    PyTorch's caching allocator is off in the sanitized process
    (``PYTORCH_NO_CUDA_MEMORY_CACHING=1``): every tensor is an allocation of its own, so a store
    past a tensor's end is past an allocation's end, where memcheck sees it (in the allocator's
    pool it would land inside a larger block and pass).
    """
    import kernels
    from kernels.sandbox.bounded import run_bounded
    from kernels.sandbox.process import kernel_env

    if kernels.MODE != "compiled":
        return {
            "absent": "the Triton interpreter runs on the CPU; compute-sanitizer checks "
            "CUDA launches"
        }
    tool = shutil.which("compute-sanitizer")
    if tool is None:
        return {"absent": "compute-sanitizer is not installed (it comes with the CUDA toolkit)"}
    user = [] if kernel is None else [str(kernel.path), kernel.function]
    with tempfile.TemporaryDirectory(prefix="rmsnorm-sanitize-") as folder:
        # A user's kernel gets the environment and folder of its every process
        # (kernels.sandbox.process.kernel_env); the bundled one this process's.
        env = dict(
            os.environ if kernel is None else kernel_env(compiled=None),
            PYTORCH_NO_CUDA_MEMORY_CACHING="1",
        )
        data = Path(folder) / "input.npz"
        np.savez(
            data,
            x=np.asarray(problem.x),
            weight=np.asarray(problem.weight),
            eps=problem.eps,
            dtype=problem.dtype,
            row_stride=problem.row_stride,
        )
        command = [
            tool,
            "--tool",
            "memcheck",
            "--padding",
            str(SANITIZER_PADDING_BYTES),
            "--print-limit",
            "20",
            sys.executable,
            "-m",
            "inspector.check.sanitize_child",
            str(data),
            *user,
        ]
        try:
            done = run_bounded(
                command,
                timeout_s=SANITIZER_TIMEOUT_S,
                cwd=_ROOT if kernel is None else folder,
                env=env,
            )
        except (subprocess.TimeoutExpired, OSError) as exc:
            why = (
                f"did not finish within {SANITIZER_TIMEOUT_S} s"
                if isinstance(exc, subprocess.TimeoutExpired)
                else f"could not start: {exc}"
            )
            return {
                "tool": SANITIZER_TOOL,
                "ran": False,
                "errors": None,
                "launches": None,
                "passed": False,
                "exit_code": None,
                "report": why,
            }
    text = done.stdout + done.stderr
    errors, launches = parse_sanitizer_output(text)
    return {
        "tool": SANITIZER_TOOL,
        "ran": True,
        "errors": errors,
        "launches": launches,
        # No launch finished (a user's kernel that raised on every run): nothing was checked.
        "passed": errors == 0 and done.returncode == 0 and bool(launches),
        "exit_code": done.returncode,
        "report": "\n".join(text.strip().splitlines()[-12:])[-4000:],
    }


def sanitizer_failures(section: dict[str, Any] | None) -> list[str]:
    """The check's failure lines from a sanitizer section (none when it passed or was absent)."""
    if section is None or "absent" in section or section["passed"]:
        return []
    if section["errors"]:
        return [f"compute-sanitizer memcheck: {section['errors']} error(s) in the kernel launches"]
    if section["launches"] == 0 and section["exit_code"] == 0:
        return [
            "compute-sanitizer memcheck: no launch finished under it (every run raised), so "
            "it checked nothing"
        ]
    last = (section["report"].splitlines() or ["no report"])[-1]
    return [f"compute-sanitizer memcheck did not pass (exit code {section['exit_code']}): {last}"]


def sanitizer_line(section: dict[str, Any] | None) -> str | None:
    """One line about a sanitizer section (None: the check made none)."""
    if section is None:
        return None
    if "absent" in section:
        return f"compute-sanitizer: not run: {section['absent']}"
    verdict = "0 errors" if section["passed"] else f"FAILED ({section['errors']} error(s))"
    if section["errors"] and not section["launches"]:
        # The sanitizer ends the faulting launch; every later run in that process raises.
        return (
            f"compute-sanitizer memcheck: {verdict} in the first launch; no run finished "
            "after the fault"
        )
    return f"compute-sanitizer memcheck: {verdict} over {section['launches']} launches"


def coverage_stage() -> dict[str, Any]:
    """The receipt's ``coverage`` (:func:`inspector.coverage.proof.coverage_section`), or
    ``{"error": ...}`` where the map could not be made."""
    from inspector.coverage.proof import coverage_section

    try:
        return coverage_section()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def coverage_failures(section: dict[str, Any] | None) -> list[str]:
    """The check's failure lines from a coverage section: a configuration the rule can reach
    that no record of this kernel proves."""
    if section is None:
        return []
    if "error" in section:
        return [f"coverage map: could not be made: {section['error']}"]
    unproven = section["unproven"]
    if not unproven:
        return []
    shown = ", ".join(unproven[:3]) + (" ..." if len(unproven) > 3 else "")
    return [
        f"coverage map: {len(unproven)} reachable launch configuration(s) no record of this "
        f"kernel proves ({shown}); run `python main.py coverage --out resources/coverage/cpu.json`"
    ]


def coverage_line(section: dict[str, Any] | None) -> str | None:
    """One line about a coverage section (None: the check made none)."""
    if section is None:
        return None
    if "error" in section:
        return f"coverage: not made: {section['error']}"
    total = len(section["configurations"])
    unproven = len(section["unproven"])
    verdict = "every one proven" if not unproven else f"{unproven} NOT proven"
    return (
        f"coverage: {total} reachable launch configurations; {section['proven_cpu']} proven on "
        f"a CPU ({section['sources']['cpu']}), {section['proven_gpu']} on a GPU "
        f"({section['sources']['gpu']}); {verdict}"
    )
