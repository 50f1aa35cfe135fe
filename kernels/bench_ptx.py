"""Compile ``kernels.rmsnorm_fast`` launch configurations for sm_90 without a GPU and report
what the code does per thread: global load/store vector widths, registers, spills.

    TRITON_INTERPRET=0 python -m kernels.bench_ptx

(No device time: PTX comes from LLVM, registers and spills from the ptxas Triton ships.)
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kernels import rmsnorm_fast as fast
from kernels.compile_info import _tool

_TYPES = {2: "bf16", 4: "fp32"}


def compile_config(
    width: int, itemsize: int, config: fast.FastConfig, *, arch: int = 90
) -> dict[str, object]:
    """Compile one configuration for a contiguous (rows, width) input; return a summary."""
    element = "*" + _TYPES[itemsize]
    vec = fast.vector_width(width, width, width, itemsize)
    signature = {
        "x_ptr": element,
        "w_ptr": element,
        "y_ptr": element,
        "rows": "i32",
        "width_v": "i32",
        "x_stride_v": "i32",
        "y_stride_v": "i32",
        "eps": "fp32",
    }
    if config.kind == "rows":
        kernel = fast.rms_norm_rows_kernel
        constexprs = {
            "BLOCK_N": config.block,
            "ROWS": config.rows_per_program,
            "EVICT": config.evict,
            "W_EARLY": config.w_early,
            "VEC": vec,
        }
    else:
        kernel = fast.rms_norm_cols_kernel
        constexprs = {
            "CHUNK": config.block,
            "EVICT": config.evict,
            "VEC": vec,
            "NUM_CHUNKS": triton.cdiv(width, config.block) if config.unroll else 0,
        }
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    # What a launch specializes: 16-byte aligned pointers; ints divisible by 16 marked so.
    divisible = [0, 1, 2] + [
        i for i, v in ((4, width // vec), (5, width // vec), (6, width // vec)) if v % 16 == 0
    ]
    attrs = {(i,): [["tt.divisibility", 16]] for i in divisible}
    source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    compiled = triton.compile(
        source, target=GPUTarget("cuda", arch, 32), options={"num_warps": config.num_warps}
    )
    ptx = compiled.asm["ptx"]
    loads = re.findall(r"ld\.global(?:\.[a-z0-9_:]+)*?(\.v[248])?\.(?:b|u|f|s)(\d+)", ptx)
    stores = re.findall(r"st\.global(?:\.[a-z0-9_:]+)*?(\.v[248])?\.(?:b|u|f|s)(\d+)", ptx)
    regs = spills = None
    ptxas = _tool("ptxas")
    if ptxas:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "k.ptx"
            path.write_text(ptx)
            log = subprocess.run(
                [ptxas, f"-arch=sm_{arch}a", "-v", str(path), "-o", str(Path(tmp) / "k.cubin")],
                capture_output=True,
                text=True,
                check=False,
            )
            text = log.stdout + log.stderr
            match = re.search(r"Used (\d+) registers", text)
            regs = int(match.group(1)) if match else None
            match = re.search(r"(\d+) bytes spill stores", text)
            spills = int(match.group(1)) if match else None

    def widths(found: list[tuple[str, str]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for vector, bits in found:
            key = f"{vector or '.v1'}x{bits}"
            out[key] = out.get(key, 0) + 1
        return out

    return {
        "width": width,
        "itemsize": itemsize,
        "vec": vec,
        "config": config,
        "loads": widths(loads),
        "stores": widths(stores),
        "registers": regs,
        "spill_bytes": spills,
        "shared": compiled.metadata.shared,
    }


def main() -> int:
    cases = [
        (4096, 2, fast.choose_config(512, 4096, 2)),
        (1000, 2, fast.FastConfig("rows", 1024, 2, 4)),
        (70, 2, fast.FastConfig("rows", 128, 4, 1)),
        (5125, 2, fast.FastConfig("rows", 8192, 1, 8)),
        (5120, 2, fast.FastConfig("rows", 8192, 1, 8)),
        (8192, 4, fast.FastConfig("rows", 8192, 1, 16, w_early=False)),
        (16384, 4, fast.FastConfig("rows", 16384, 1, 16, w_early=False)),
        (32768, 2, fast.FastConfig("rows", 32768, 1, 32, w_early=False)),
        (32768, 4, fast.FastConfig("rows", 32768, 1, 32, w_early=False)),
        (65536, 2, fast.FastConfig("cols", 16384, 1, 32, 264, True)),
        (65536, 2, fast.FastConfig("cols", 16384, 1, 32, 264, True, True, True)),
        (8192, 2, fast.FastConfig("cols", 2048, 1, 8, 32768, True, True, True)),
    ]
    for width, itemsize, config in cases:
        info = compile_config(width, itemsize, config)
        print(
            f"{width:>6} {_TYPES[itemsize]} {config.kind} B{config.block} R"
            f"{config.rows_per_program} w{config.num_warps} ev{int(config.evict)} "
            f"early{int(config.w_early)} unroll{int(config.unroll)} vec{info['vec']}: "
            f"loads {info['loads']} stores {info['stores']} regs {info['registers']} "
            f"spills {info['spill_bytes']} smem {info['shared']}"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
