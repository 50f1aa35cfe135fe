"""Batch-invariance certificates of the bundled kernel over model widths, three dtypes.

    python3 scripts/measure_invariance.py --out DIR [--rows 64] [--budget-s 300] [--map]
        [--widths WIDTH:dtype,...]

For each width x dtype: random normal rows (seeded) certified by
kernels.instruments.invariance.certify on the device the kernel mode gives (CUDA compiled, or the
CPU interpreter with at most 16 rows), by default and in the batch-invariant mode. ``--map``
takes, besides the model widths, one witness per coverage-map configuration the mode can launch
(its smallest width, rows of its stride class): every width class of the map. Writes
DIR/invariance.json (versions, device, one entry per case) after every case, so a stopped run
keeps what it measured. ``--widths`` certifies the rows named instead of the model widths
(packed: the odd widths the mode's ordered column loop runs). No Qt.
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


def map_cases() -> list[tuple[int, str, int, str]]:
    """``(width, dtype, row stride, configuration label)``: the smallest width of every
    coverage-map configuration the batch-invariant mode launches (rows of one stride, x's)."""
    from kernels.instruments import coverage as cov

    found: dict[object, tuple[int, str, int, str]] = {}
    for dtype in DTYPES:
        itemsize = cov.ITEMSIZES[dtype]
        for width in range(1, kernels.MAX_WIDTH + 1):
            for x_stride, _ in cov.stride_classes(width, itemsize):
                for rows, config in cov.mode_layouts(width, itemsize):
                    launched, constexprs = cov.launch_constexprs(
                        config, rows, width, x_stride, x_stride, itemsize
                    )
                    key = cov.configuration_of(dtype, launched.loop, constexprs)
                    found.setdefault(key, (width, dtype, x_stride, key.label))
    # a row-mask pair shares its witness: one certificate covers both (it launches both)
    cases = {case[:3]: case for case in found.values()}
    return sorted(cases.values(), key=lambda case: (case[0], case[1], case[2]))


def width_list(text: str) -> list[tuple[int, str]]:
    """``--widths``: ``WIDTH:dtype`` items, comma-separated, each width in [1, MAX_WIDTH]."""
    found = []
    for item in text.split(","):
        width, _, dtype = item.partition(":")
        if not width.isdigit() or not 1 <= int(width) <= kernels.MAX_WIDTH:
            raise argparse.ArgumentTypeError(
                f"a width must be an integer in [1, {kernels.MAX_WIDTH}]; got {item!r}"
            )
        if dtype not in DTYPES:
            raise argparse.ArgumentTypeError(
                f"a dtype must be one of {', '.join(DTYPES)}; got {item!r}"
            )
        found.append((int(width), dtype))
    return found


def summary(cert: invariance.Certificate) -> dict:
    section = cert.to_receipt()
    return {
        "bit_identical": cert.bit_identical,
        "rows_differing": len(cert.differing_rows),
        "max_ulp": max((r["max_ulp"] for r in cert.differing_rows), default=0),
        "batch_sizes": section["batch_sizes"],
        "launches": len(section["launches"]),
        "differing_launches": [e for e in section["launches"] if e["rows_differing"]],
        "cuda_graph": cert.cuda_graph,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--map", action="store_true", help="also every map configuration")
    parser.add_argument(
        "--widths", type=width_list, help="comma-separated WIDTH:dtype rows to certify packed "
        "instead of the model widths (e.g. 3077:bfloat16)",
    )  # fmt: skip
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
    cases = [(w, d, w, "model width") for w, d in itertools.product(WIDTHS, DTYPES)]
    if args.widths:
        cases = [(w, d, w, "width") for w, d in args.widths]
    if args.map:
        cases += map_cases()
    start = time.monotonic()
    for width, dtype, stride, label in cases:
        if time.monotonic() - start > args.budget_s:
            record["stopped"] = f"budget of {args.budget_s} s spent"
            break
        rng = np.random.default_rng(width)
        torch_dtype = getattr(torch, dtype)
        x = torch.from_numpy(rng.standard_normal((rows, width))).to(torch_dtype)
        w = torch.from_numpy(1 + 0.1 * rng.standard_normal(width)).to(torch_dtype)
        xs, ws = x.double().numpy(), w.double().numpy()
        began = time.monotonic()
        case = {"width": width, "dtype": dtype, "row_stride": stride, "case": label}
        for mode in ("default", "batch_invariant"):
            cert = invariance.certify(
                xs, ws, 1e-6, dtype, device, row_stride=stride,
                batch_invariant=mode == "batch_invariant",
                max_batch_rows=None if kernels.MODE == "compiled" else 40,
            )  # fmt: skip
            case[mode] = summary(cert)
        case["seconds"] = round(time.monotonic() - began, 2)
        record["cases"].append(case)
        print(json.dumps({
            "width": width, "dtype": dtype, "stride": stride, "case": label,
            "default": case["default"]["max_ulp"],
            "mode": case["batch_invariant"]["bit_identical"],
        }), flush=True)  # fmt: skip
        (args.out / "invariance.json").write_text(json.dumps(record) + "\n")
    record["seconds"] = round(time.monotonic() - start, 1)
    (args.out / "invariance.json").write_text(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
