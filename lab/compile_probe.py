"""What torch.compile's RMSNorm kernel does differently from ours on a few rows: its generated
Triton source (``TORCH_LOGS=output_code``) and Nsight Compute's launch, occupancy and
speed-of-light sections of both kernels, one call each, per shape and dtype.

``python3 -m lab.compile_probe --out DIR --shapes 1x4096,256x4096 --dtypes bfloat16,float16``
writes ``DIR/inductor_RxW_DTYPE.txt`` (the child's log: the generated module with its
``num_warps``, block sizes and loads) and ``DIR/ncu_RxW_DTYPE.csv``. Needs CUDA and ``ncu``.
The child (``--child``) compiles ``F.rms_norm`` as ``kernels.bench`` does (static shape,
fullgraph), warms both up, then calls each once between ``cudaProfilerStart`` and
``cudaProfilerStop``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

SECTIONS = ("LaunchStats", "Occupancy", "SpeedOfLight", "MemoryWorkloadAnalysis", "WarpStateStats")


def child(rows: int, width: int, dtype_name: str) -> None:
    import torch
    from torch.nn import functional

    import kernels

    dtype = getattr(torch, dtype_name)
    x = torch.randn(rows, width, device="cuda", dtype=dtype)
    w = torch.randn(width, device="cuda", dtype=dtype)

    def eager(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return functional.rms_norm(x, (width,), w, 1e-6)

    compiled = torch.compile(eager, dynamic=False, fullgraph=True)
    for _ in range(3):
        compiled(x, w)
        kernels.rms_norm(x, w, 1e-6)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    compiled(x, w)
    kernels.rms_norm(x, w, 1e-6)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--shapes", default="1x4096,256x4096")
    parser.add_argument("--dtypes", default="bfloat16,float16")
    parser.add_argument("--child", nargs=3, metavar=("ROWS", "WIDTH", "DTYPE"))
    args = parser.parse_args(argv)
    if args.child:
        child(int(args.child[0]), int(args.child[1]), args.child[2])
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    # One compile thread: inductor's worker pool would be profiled processes too.
    env = dict(os.environ, TORCH_LOGS="output_code", TORCHINDUCTOR_COMPILE_THREADS="1")
    for shape in args.shapes.split(","):
        rows, width = shape.split("x")
        for dtype in args.dtypes.split(","):
            tag = f"{rows}x{width}_{dtype}"
            command = [
                "ncu", "--clock-control", "none", "--profile-from-start", "off",
                "--target-processes", "all", "--csv", "--page", "details",
                *[item for name in SECTIONS for item in ("--section", name)],
                sys.executable, "-m", "lab.compile_probe", "--child", rows, width, dtype,
            ]  # fmt: skip
            csv_path, log_path = args.out / f"ncu_{tag}.csv", args.out / f"inductor_{tag}.txt"
            with csv_path.open("w") as csv_file, log_path.open("w") as log:
                done = subprocess.run(
                    command, stdout=csv_file, stderr=log, env=env, timeout=300, check=False
                )
            print(f"{tag}: ncu exit {done.returncode}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
