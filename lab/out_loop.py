"""Per-call time of ``kernels.rms_norm`` with and without ``out=`` in an eager loop, beside
``F.rms_norm``, on a CUDA device.

Each sample times ``calls`` back-to-back calls of one form (host included, synchronized at the
end); forms take turns sample by sample, so a drift of the host touches all of them alike.

    python3 -m lab.out_loop --out out_loop.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import triton

import kernels


def _forms(x: torch.Tensor, w: torch.Tensor) -> dict:
    out = torch.empty_like(x)
    width = x.shape[-1]
    return {
        "rms_norm": lambda: kernels.rms_norm(x, w, 1e-6),
        "rms_norm_out": lambda: kernels.rms_norm(x, w, 1e-6, out=out),
        "rms_norm_in_place": lambda: kernels.rms_norm(out, w, 1e-6, out=out),
        "F.rms_norm": lambda: torch.nn.functional.rms_norm(x, (width,), w, 1e-6),
    }


def measure(rows: int, width: int, dtype: torch.dtype, calls: int, samples: int) -> list[dict]:
    """Median, p20 and p80 per-call microseconds of each form for one shape."""
    x = torch.randn(rows, width, device="cuda").to(dtype)
    w = torch.randn(width, device="cuda").to(dtype)
    forms = _forms(x, w)
    for fn in forms.values():
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {name: [] for name in forms}
    for _ in range(samples):
        for name, fn in forms.items():
            began = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            times[name].append((time.perf_counter() - began) / calls * 1e6)
    rows_out = []
    for name, values in times.items():
        ordered = sorted(values)
        rows_out.append({
            "rows": rows, "width": width, "dtype": str(dtype).split(".")[-1], "form": name,
            "median_us": round(statistics.median(values), 2),
            "p20_us": round(ordered[len(ordered) // 5], 2),
            "p80_us": round(ordered[(4 * len(ordered)) // 5], 2), "samples_us": values,
        })  # fmt: skip
        print(json.dumps({k: v for k, v in rows_out[-1].items() if k != "samples_us"}))
    return rows_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.out_loop")
    parser.add_argument("--out", required=True)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--samples", type=int, default=15)
    args = parser.parse_args(argv)
    results = []
    for rows, width in ((1, 4096), (32, 4096), (4096, 4096)):
        for dtype in (torch.bfloat16, torch.float32):
            results += measure(rows, width, dtype, args.calls, args.samples)
    with open(args.out, "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "triton": triton.__version__, "command": "python3 -m lab.out_loop",
                   "results": results}, fh, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
