"""Peak memory (proportional set size) of a user kernel's process tree over one run: what
``--kernel-memory`` must leave room for. ``python scripts/kernel_tree_memory.py FILE.py:FN ROWS
WIDTH DTYPE``."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np

from kernels.sandbox import reaper
from kernels.sandbox.usercode import UserKernel, parse_kernel_spec


def main(argv: list[str]) -> int:
    spec = parse_kernel_spec(argv[0])
    rows, width, dtype = int(argv[1]), int(argv[2]), argv[3]
    peak, done = [0], threading.Event()
    with UserKernel(spec) as kernel:
        pid = kernel._child.pid

        def watch() -> None:
            while not done.is_set():
                tree = [pid, *reaper.descendants(pid)]
                peak[0] = max(peak[0], sum(reaper.process_memory(p) for p in tree))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        x = np.random.default_rng(0).standard_normal((rows, width))
        block = 1 << (width - 1).bit_length()
        started = time.perf_counter()
        run = kernel.run(x, np.ones(width), eps=1e-6, dtype=dtype, x_stride=width,
                         y_stride=width + block, poison=-3072.0, guard=block)  # fmt: skip
        seconds = time.perf_counter() - started
        done.set()
        watcher.join()
    limit = kernel.memory_limit_bytes / 2**20
    print(
        f"{rows}x{width} {dtype}: {run.outcome} {run.detail[:200]} oob={len(run.oob_writes)} "
        f"{seconds:.2f} s, peak tree {peak[0] / 2**20:.0f} MiB (limit {limit:.0f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
