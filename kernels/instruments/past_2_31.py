"""Rows that start past 2**31 elements, on every launch path: ``python -m
kernels.instruments.past_2_31 [DEVICE]``.

Three bfloat16 rows at a row stride of 2**30 + 8 elements, so row 2 of x and of out starts at
element 2**31 + 16, launched with each path's forced layout and the rule's form of the column
loop (one program per row, unrolled; and a row in two programs) and a row in two tiles (one and
two rows per program), at width 64 (16-byte vectors) and 70 (peeled: head, 16-byte body, tail).
Each case prints ``CASE ulps per row: [...]``: each row's largest distance from
``torch.nn.functional.rms_norm`` in float64, in bfloat16 ulps. The storage is allocated, never
filled, so only the pages the rows touch are committed (two 4 GiB reservations).

Run it in a process of its own: an int32 offset wraps to a wild address, and under the Triton
interpreter that store lands in this process's memory (a crash, or silent corruption); one
that stays in bounds reads another row (a large distance). ``tests/kernels/test_kernel_bounds.py``
and ``main.py mutate`` (for the mutants that only act there) read its lines.
"""

from __future__ import annotations

import sys

ROWS, STRIDE = 3, 2**30 + 8
WIDTHS = (64, 70)
PATHS = ("one_row", "multi_row", "column_loop", "column_loop_per_row", "column_loop_parts",
         "split_one_row", "split_multi_row")  # fmt: skip


def cases() -> list[str]:
    """The case names, in the order they run."""
    return [f"{path} {width}" for path in PATHS for width in WIDTHS]


def run(device: str) -> None:
    """Every case, one line each (flushed before the launch: a crash leaves its name)."""
    import torch

    import kernels
    from kernels import launcher, layout

    def strided(width: int) -> torch.Tensor:
        storage = torch.empty((ROWS - 1) * STRIDE + width, dtype=torch.bfloat16, device=device)
        return storage.as_strided((ROWS, width), (STRIDE, 1))

    for path in PATHS:
        for width in WIDTHS:
            gen = torch.Generator().manual_seed(7)
            values = torch.randn(ROWS, width, generator=gen).to(torch.bfloat16).to(device)
            x, out = strided(width), strided(width)
            x.copy_(values)
            weight = torch.linspace(-2, 2, width, dtype=torch.bfloat16, device=device)
            checked = kernels.validate(x, weight, 1e-6, out)
            half = layout.block_for(width) // 2
            if path == "column_loop_per_row":
                config = layout.LaunchConfig(True, half, 2)
            elif path == "column_loop_parts":
                config = layout.LaunchConfig(True, half // 2, 2, row_parts=2)
            elif path.startswith("split"):  # two tiles, unpeeled: half the tile, then the rest
                rest = layout.next_power_of_2(width - half)
                per = 2 if path == "split_multi_row" else 1
                config = layout.LaunchConfig(False, half, 2, per, peel=False, block2=rest)
            else:
                config = layout.forced_config(path, ROWS, width, 2)
            print(path, width, "launching", flush=True)
            launcher.launch(checked.x2d, weight, out, checked.eps, config=config)
            expected = torch.nn.functional.rms_norm(
                values.double(), (width,), weight.double(), 1e-6
            )
            ulp = torch.finfo(torch.bfloat16).eps * expected.abs().clamp_min(2**-126)
            worst = ((out.double() - expected) / ulp).abs().amax(dim=1)
            print(path, width, "ulps per row:", [round(float(v), 2) for v in worst], flush=True)
            del x, out


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "cpu")


# A row within this many bfloat16 ulps of torch in float64 is where it belongs (the
# interpreter truncates where CUDA rounds); a row read from elsewhere is off by far more.
MAX_ULPS = 2.0


def failures(stdout: str, returncode: int) -> list[str]:
    """What is wrong in a run's output: a crash (naming the case it was launching), a case
    missing, or a row past MAX_ULPS; empty when every case came out right."""
    results: dict[str, list[float]] = {}
    launching = ""
    for line in stdout.splitlines():
        case, marker, ulps = line.partition(" ulps per row: ")
        if marker:
            results[case] = [float(u) for u in ulps.strip("[]").split(", ") if u]
        elif line.endswith(" launching"):
            launching = line.removesuffix(" launching")
    if returncode != 0:
        return [f"exit code {returncode} while launching {launching or 'nothing yet'}"]
    problems = [
        f"{case}: ulps per row {ulps} (at most {MAX_ULPS:g})"
        for case, ulps in results.items()
        if len(ulps) != ROWS or max(ulps) > MAX_ULPS
    ]
    return problems + [f"{case}: no result" for case in cases() if case not in results]
