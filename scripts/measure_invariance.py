"""Batch-invariance certificates of the bundled kernel over model widths, three dtypes.

    python3 scripts/measure_invariance.py --out DIR [--rows 64] [--budget-s 300]

For each width x dtype: random normal rows (seeded) certified by
kernels.instruments.invariance.certify on the device the kernel mode gives (CUDA compiled, or the
CPU interpreter with at most 16 rows). Writes DIR/invariance.json (versions, device, one entry per
case) after every case, so a stopped run keeps what it measured. No Qt.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kernels
from kernels.instruments import invariance
from kernels.instruments.checked import resolve_device

WIDTHS = (64, 70, 128, 896, 1024, 2053, 2560, 4096, 5120, 5125, 8192, 18432)
DTYPES = ("float32", "float16", "bfloat16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--budget-s", type=float, default=300.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = resolve_device("auto")
    rows = args.rows if kernels.MODE == "compiled" else min(args.rows, 16)
    record = {
        "versions": kernels.versions(),
        "device": kernels.device_description(),
        "mode": kernels.MODE,
        "rows": rows,
        "cases": [],
    }
    start = time.monotonic()
    for width, dtype in itertools.product(WIDTHS, DTYPES):
        if time.monotonic() - start > args.budget_s:
            record["stopped"] = f"budget of {args.budget_s} s spent"
            break
        rng = np.random.default_rng(width)
        torch_dtype = getattr(torch, dtype)
        x = torch.from_numpy(rng.standard_normal((rows, width))).to(torch_dtype)
        w = torch.from_numpy(1 + 0.1 * rng.standard_normal(width)).to(torch_dtype)
        began = time.monotonic()
        cert = invariance.certify(x.double().numpy(), w.double().numpy(), 1e-6, dtype, device)
        section = cert.to_receipt()
        differing = [entry for entry in section["launches"] if entry["rows_differing"]]
        case = {
            "width": width,
            "dtype": dtype,
            "bit_identical": cert.bit_identical,
            "rows_differing": len(cert.differing_rows),
            "max_ulp": max((r["max_ulp"] for r in cert.differing_rows), default=0),
            "batch_sizes": section["batch_sizes"],
            "differing_launches": differing,
            "cuda_graph": cert.cuda_graph,
            "seconds": round(time.monotonic() - began, 2),
        }
        record["cases"].append(case)
        shown = ("width", "dtype", "bit_identical", "rows_differing", "max_ulp", "cuda_graph")
        print(json.dumps({key: case[key] for key in shown}), flush=True)
        (args.out / "invariance.json").write_text(json.dumps(record, indent=1) + "\n")
    (args.out / "invariance.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
