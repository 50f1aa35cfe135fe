"""Registers and spills per thread (ptxas, sm_90, no GPU) of a few column-loop layouts, to
compare a kernel change before it is timed: run it in this tree and in a copy with
``lab/pass2_last_first.patch`` applied.

    TRITON_INTERPRET=0 python -m lab.pass2_regs
"""

from __future__ import annotations

from kernels.instruments.compile_info import compile_fields

CASES = [
    (2048, 65536, "float32"), (2048, 65536, "bfloat16"), (2048, 18433, "float32"),
    (4096, 5125, "bfloat16"), (1024, 24576, "float16"), (8192, 7168, "float32"),
    (16384, 4096, "bfloat16"), (4096, 6151, "float16"),
]  # fmt: skip


def main() -> int:
    """One line per case: shape, dtype, chunk, warps, registers, spills, global loads in PTX."""
    for rows, width, dtype in CASES:
        info = compile_fields(dtype, width, 90, None, rows)
        print(
            f"{rows}x{width} {dtype} C{info['block']} w{info['num_warps']} "
            f"regs {info['registers']} spills {info['spills']} "
            f"ld.global {info['ptx'].count('ld.global')}",
            flush=True,
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
