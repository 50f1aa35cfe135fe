"""The batch-invariant mode on padded and offset batches, on a GPU: the same rows as a packed,
aligned batch, launched (old) straight on the caller's tensors with the mode's layout, as the
mode did before ``kernels.plans.launch_canonical``, and (new) through ``kernels.rms_norm``,
which repacks them. Prints and writes, per dtype and width, the rows (of 64) whose bits differ
from the packed batch's, ``[old, new]``, for row strides of width + 1..3 (``pad``) and x and out
one or two elements off a 16-byte boundary (``off``).

    PYTHONPATH=. python3 scripts/probe_invariant_placement.py OUT.json
"""

from __future__ import annotations

import json
import sys
import time

import torch

import kernels
from kernels.launcher import launch_kernel
from kernels.plans import invariant_config

ROWS = 64
WIDTHS = (8, 64, 70, 100, 128, 256, 512, 1000, 2048, 4096)


def _offset(values: torch.Tensor, shift: int) -> torch.Tensor:
    flat = torch.empty(values.numel() + shift, dtype=values.dtype, device=values.device)
    view = flat[shift:].view(values.shape)
    view.copy_(values)
    return view


def _padded(values: torch.Tensor, pad: int) -> torch.Tensor:
    rows, width = values.shape
    buffer = torch.zeros(rows, width + pad, dtype=values.dtype, device=values.device)
    buffer[:, :width] = values
    return buffer[:, :width]


def _differing(got: torch.Tensor, reference: torch.Tensor) -> int:
    return int((~(got == reference).all(dim=1)).sum())


def main(path: str) -> None:
    torch.manual_seed(0)
    records = []
    start = time.time()
    for dtype in (torch.bfloat16, torch.float32):
        itemsize = torch.empty((), dtype=dtype).element_size()
        for width in WIDTHS:
            scale = torch.exp2(torch.randint(-6, 7, (ROWS, width), device="cuda").float())
            x = (torch.randn(ROWS, width, device="cuda") * scale).to(dtype)
            w = torch.randn(width, device="cuda").to(dtype)
            reference = kernels.rms_norm(x, w, 1e-6, batch_invariant=True)
            config = invariant_config(width, itemsize)
            record = {"dtype": str(dtype).removeprefix("torch."), "width": width,
                      "path": config.path, "rows_per_program": config.rows_per_program}  # fmt: skip
            placed = {f"pad{p}": (_padded(x, p), None) for p in (1, 2, 3)}
            for shift in (k for k in (1, 2) if k < 16 // itemsize):
                placed[f"off{shift}"] = (_offset(x, shift), _offset(torch.zeros_like(x), shift))
            for name, (xv, out) in placed.items():
                y_old = torch.empty_like(xv) if out is None else out
                launch_kernel(xv, w, y_old, 1e-6, config=config)
                out_new = None if out is None else _offset(torch.zeros_like(x), 1)
                y_new = kernels.rms_norm(xv, w, 1e-6, out=out_new, batch_invariant=True)
                record[name] = [_differing(y_old, reference), _differing(y_new, reference)]
            records.append(record)
            print(json.dumps(record), flush=True)
    seconds = round(time.time() - start, 1)
    print("seconds", seconds, torch.cuda.get_device_name(), torch.__version__)
    with open(path, "w") as handle:
        json.dump(records, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
