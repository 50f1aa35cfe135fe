"""``python -m kernels.bench ...``: the same command line as ``python main.py bench``."""

from __future__ import annotations

from kernels.bench.cli import bench_main

if __name__ == "__main__":
    raise SystemExit(bench_main())
