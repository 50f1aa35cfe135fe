"""What the launcher compiles for each product shape, on sm_90, without a GPU.

For every shape of the benchmark's shape sets and each dtype: the launch layout
:func:`kernels.layout.choose_config` picks, the vector width of the global loads and stores in
the PTX, registers and spill bytes per thread (ptxas from the Triton wheel).

    TRITON_INTERPRET=0 python -m lab.ptx [--dtypes bfloat16,float32]

(No device time: PTX comes from LLVM, registers and spills from ptxas.)
"""

from __future__ import annotations

import argparse
import re

from kernels import bench
from kernels.instruments.compile_info import compile_fields

# ld.global[.L1::evict_last][.L2::cache_hint][.v4].b32 and st.global[.cs][.v4].b16, ...
_WIDTH = re.compile(r"(ld|st)\.global(?:\.[\w:]+)*?(\.v\d)?\.(b|f|u|s)(\d+)")


def access_widths(ptx: str, kind: str) -> list[str]:
    """Distinct global ``kind`` ("ld" or "st") access widths in ``ptx``, e.g. ['v4.b32']."""
    found = set()
    for match in _WIDTH.finditer(ptx):
        if match.group(1) == kind:
            found.add(f"{(match.group(2) or '.v1')[1:]}.b{match.group(4)}")
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.ptx``: one line per shape x dtype on stdout."""
    parser = argparse.ArgumentParser(prog="python -m lab.ptx")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--arch", type=int, default=90)
    args = parser.parse_args(argv)
    shapes = bench.resolve_shapes(None, bench.load_shape_sets())
    for dtype in args.dtypes.split(","):
        for set_name, shape in shapes:
            info = compile_fields(dtype, shape.width, args.arch, None, shape.rows)
            print(
                f"{set_name:>12} {shape.rows:>6}x{shape.width:<6} {dtype:>8} {info['path']:>11} "
                f"B{info['block']:<6} R{info['rows_per_program']:<3} w{info['num_warps']:<3} "
                f"loads {access_widths(info['ptx'], 'ld')} "
                f"stores {access_widths(info['ptx'], 'st')} "
                f"regs {info['registers']} spills {info['spills']}"
            )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
