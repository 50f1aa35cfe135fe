"""Device smoke check of the kernel (a script, not a test): every mutant through run_checked on
CUDA, and compiler_output for the device in hand. Writes JSON (and PTX/SASS) under OUT_DIR.

    python3 tests/kernels/gpu_kernel_check.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

import kernels

# On a machine without CUDA the same script runs under the interpreter (a dry run of the script).
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TARGET = None if DEVICE == "cuda" else "sm_90"
BF16_RTOL = 5e-3 if kernels.MODE == "compiled" else 1e-2  # the interpreter truncates to bf16
TOLERANCE = {"float32": (1e-6, 1e-5), "float16": (1e-5, 1e-3), "bfloat16": (1e-6, BF16_RTOL)}


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    return torch.from_numpy(values).to(getattr(torch, dtype)).double().numpy()


def main(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "mode": kernels.MODE,
        "mode_reason": kernels.MODE_REASON,
        "device": kernels.device_description(),
        "versions": kernels.versions(),
        "runs": [],
        "compile": [],
    }
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 70))
    x[3] = 0.0  # a zero row: missing_epsilon turns it into NaN
    weight = np.resize(np.array([0.5, 1.25, -2.0]), 70)
    failures = []
    for dtype in ("float32", "float16", "bfloat16"):
        xr, wr = _round(x, dtype), _round(weight, dtype)
        ref = xr / np.sqrt((xr * xr).mean(axis=1, keepdims=True) + 1e-6) * wr
        atol, rtol = TOLERANCE[dtype]
        for row_stride in (70, 75):
            for mutant in (None, *kernels.KERNEL_MUTANTS):
                run = kernels.run_checked(
                    x,
                    weight,
                    eps=1e-6,
                    dtype=dtype,
                    row_stride=row_stride,
                    mutant=mutant,
                    device=DEVICE,
                )
                with np.errstate(invalid="ignore"):
                    bad = ~(np.abs(run.y - ref) <= atol + rtol * np.abs(ref))
                killed = bool(bad.any() or run.oob_writes)
                entry = {
                    "dtype": dtype,
                    "row_stride": row_stride,
                    "mutant": mutant,
                    "bad_elements": int(bad.sum()),
                    "oob_writes": len(run.oob_writes),
                    "first_oob": str(run.oob_writes[0]) if run.oob_writes else None,
                    "killed": killed,
                    "block": run.block,
                    "num_warps": run.num_warps,
                    "mode": run.mode,
                }
                report["runs"].append(entry)
                survived_ok = mutant == "wrong_row_stride" and row_stride == 70  # packed: same
                if (mutant is None and killed) or (mutant and not killed and not survived_ok):
                    failures.append(entry)
                print(
                    f"{dtype:9s} stride {row_stride} {mutant or 'real kernel':22s} "
                    f"bad={entry['bad_elements']:3d} oob={entry['oob_writes']:3d} "
                    f"{'KILLED' if killed else 'passes'}"
                )
    for dtype, width in (("bfloat16", 4096), ("float16", 70), ("float32", 65536)):
        info = kernels.compiler_output(dtype, width, TARGET)
        summary = {
            key: value
            for key, value in info.to_dict().items()
            if key not in ("ttir", "ttgir", "llir", "ptx", "sass")
        }
        summary["ptx_lines"] = len(info.ptx.splitlines())
        summary["sass_lines"] = len(info.sass.splitlines()) if info.sass else None
        report["compile"].append(summary)
        print(
            f"compile {dtype} width {width}: target {info.target}, warps {info.num_warps}, "
            f"stages {info.num_stages}, shared {info.shared_bytes} B, registers "
            f"{info.registers}, spill-store bytes {info.spills} ({info.resource_source})"
        )
        stem = f"{dtype}_{width}_{info.target}"
        (out_dir / f"{stem}.ptx").write_text(info.ptx)
        if info.sass:
            (out_dir / f"{stem}.sass").write_text(info.sass)
    report["failures"] = failures
    (out_dir / "gpu_kernel_check.json").write_text(json.dumps(report, indent=2))
    print(f"{len(failures)} unexpected outcome(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
