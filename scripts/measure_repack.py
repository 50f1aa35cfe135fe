"""What the batch-invariant mode's repacking costs, on a GPU: ``kernels.rms_norm`` per shape and
dtype on a packed batch, on a padded one (row stride width + 8) and on one an element off a
16-byte boundary, by default and with ``batch_invariant=True``. The mode copies a padded or
offset batch into packed, aligned tensors and copies the result back
(``kernels.plans.launch_canonical``); the default launches on the caller's tensors.

Device time is a CUDA graph of 20 calls over rotating buffers (at least 4x the L2), median of
replays; the eager loop is the per-call wall time of 200 back-to-back calls, host included
(median of samples). Writes JSON with the versions and the device, one row of ``columns`` per
record (``docs/gpu_check/invariant/repack_cost.json`` is this output).

    PYTHONPATH=. python3 scripts/measure_repack.py OUT.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch

import kernels
from kernels.bench import timing
from kernels.bench.harness import environment

SHAPES = ((1, 4096), (128, 4096), (4096, 4096), (8192, 1000), (65536, 128), (16384, 8192))
DTYPES = (torch.bfloat16, torch.float32)
PLACEMENTS = ("packed", "padded", "offset")
COLUMNS = ("rows", "width", "dtype", "placement", "batch_invariant", "device_us", "loop_us")


def _placed(x: torch.Tensor, placement: str) -> torch.Tensor:
    rows, width = x.shape
    if placement == "padded":
        buffer = torch.zeros(rows, width + 8, dtype=x.dtype, device=x.device)
        buffer[:, :width] = x
        return buffer[:, :width]
    if placement == "offset":
        flat = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
        view = flat[1:].view(rows, width)
        view.copy_(x)
        return view
    return x


def _measure(rows: int, width: int, dtype: torch.dtype, device: torch.device) -> list[dict]:
    nbytes = rows * width * torch.empty((), dtype=dtype).element_size()
    l2, _ = timing.device_l2_bytes(device)
    count = max(2, min(64, -(-4 * l2 // (2 * nbytes))))
    weight = torch.randn(width, device=device).to(dtype)
    found = []
    for placement in PLACEMENTS:
        xs = [_placed(torch.randn(rows, width, device=device).to(dtype), placement)
              for _ in range(count)]  # fmt: skip
        for mode in (False, True):

            def call(index: int, xs=xs, mode=mode) -> torch.Tensor:
                return kernels.rms_norm(xs[index], weight, 1e-6, batch_invariant=mode)

            graph = timing.time_graph(call, count, launches=20, replays=30, device=device)
            loop = timing.time_loop(call, count, calls=200, samples=7, device=device)
            found.append({
                "rows": rows, "width": width, "dtype": str(dtype).removeprefix("torch."),
                "placement": placement, "batch_invariant": mode,
                "device_us": round(statistics.median(graph), 3),
                "loop_us": round(statistics.median(loop), 3),
            })  # fmt: skip
            print(json.dumps(found[-1]), flush=True)
        del xs
    return found


def main(path: str) -> None:
    device = torch.device("cuda")
    torch.manual_seed(0)
    start = time.time()
    records = [
        record
        for rows, width in SHAPES
        for dtype in DTYPES
        for record in _measure(rows, width, dtype, device)
    ]
    with open(path, "w") as handle:
        json.dump(
            {"environment": environment(device), "seconds": round(time.time() - start, 1),
             "columns": list(COLUMNS),
             "records": [[record[name] for name in COLUMNS] for record in records]},
            handle, separators=(",", ":"),
        )  # fmt: skip
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
