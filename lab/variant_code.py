"""Whether a kernel change changes the code of any layout the rule launches, without a GPU.

Every configuration of a coverage record (``resources/coverage/cpu.json``) is a class of launches
that run the same kernel code, and its witness is one problem the rule launches it on. For each
witness this compiles the kernel the launcher would launch (the rule's config, the witness's row
strides, Triton's specialization of the integers divisible by 16) for sm_90 and hashes its PTX
without debug lines and its SASS (``cuobjdump`` of the cubin; both from Triton's own tools, so no
GPU is needed). ``--dump`` writes the hashes; ``--against`` compares this tree's with a dump and
lists the witnesses whose PTX or SASS differs (exit 1 when any does).

    TRITON_INTERPRET=0 python -m lab.variant_code resources/coverage/cpu.json --dump before.json
    TRITON_INTERPRET=0 python -m lab.variant_code resources/coverage/cpu.json --against before.json

The key of a witness is its problem and the config's layout fields that the kernels still take,
so a dump of one tree compares with another's even where ``LaunchConfig`` gained or lost knobs or
the modules moved (run the other tree's dump from its own checkout, with this file in its lab).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor

# The layout fields a key names (every LaunchConfig has them).
_KEY_FIELDS = ("loop", "block", "num_warps", "rows_per_program", "w_early", "stream_store",
               "peel", "block2")  # fmt: skip


def _key(witness: dict) -> str:
    config = witness["config"]
    layout = ",".join(f"{name}={config[name]}" for name in _KEY_FIELDS)
    return (
        f"{witness['dtype']} {witness['rows']}x{witness['width']} "
        f"strides={witness['x_stride']},{witness['y_stride']} {layout}"
    )


def _compile(witness: dict) -> tuple[str, str, str]:
    """``(key, ptx sha256, sass sha256)`` of the witness's launch, compiled for sm_90."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels import jit
    from kernels.layout import LaunchConfig
    from lab.ptx_compare import code_of

    try:
        from kernels.instruments.compile_info import _TRITON_TYPES, _sass_and_resources
        from kernels.instruments.coverage import launch_constexprs
    except ImportError:  # a tree from before the kernels' rooms (a baseline's)
        from kernels.compile_info import _TRITON_TYPES, _sass_and_resources
        from kernels.coverage import launch_constexprs

    names = {field.name for field in dataclasses.fields(LaunchConfig)}
    config = LaunchConfig(**{k: v for k, v in witness["config"].items() if k in names})
    dtype, rows, width = witness["dtype"], witness["rows"], witness["width"]
    itemsize = 4 if dtype == "float32" else 2
    config, constexprs = launch_constexprs(
        config, rows, width, witness["x_stride"], witness["y_stride"], itemsize
    )
    del constexprs["WIDTH"]
    vec = constexprs["VEC"]
    constexprs.update(MUTANT=0, rstd_ptr=None, STORE_RSTD=False)
    element = "*" + _TRITON_TYPES[dtype]
    runtime = {
        "x_ptr": (element, None), "w_ptr": (element, None), "y_ptr": (element, None),
        "rows": ("i32", rows), "width_v": ("i32", width // vec),
        "x_stride_v": ("i32", witness["x_stride"] // vec),
        "y_stride_v": ("i32", witness["y_stride"] // vec), "eps": ("fp32", None),
    }  # fmt: skip
    signature = {name: kind for name, (kind, _) in runtime.items()}
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    # Triton's launch specialization: 16-byte aligned pointers, ints divisible by 16.
    divisible = [
        index
        for index, (kind, value) in enumerate(runtime.values())
        if kind.startswith("*") or (kind == "i32" and value % 16 == 0)
    ]
    attrs = {(index,): [["tt.divisibility", 16]] for index in divisible}
    kernel = jit.rms_norm_loop_kernel if config.loop else jit.rms_norm_tile_kernel
    source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    compiled = triton.compile(
        source, target=GPUTarget("cuda", 90, 32), options={"num_warps": config.num_warps}
    )
    ptx = compiled.asm["ptx"]
    sass = _sass_and_resources(compiled.asm["cubin"], ptx, 90).sass or ""
    digest = hashlib.sha256
    return (
        _key(witness),
        digest(code_of(ptx).encode()).hexdigest(),
        digest(sass.encode()).hexdigest(),
    )


def witnesses(record: str) -> list[dict]:
    """The witnesses of a coverage record's proofs, one per configuration."""
    with open(record, encoding="utf-8") as handle:
        data = json.load(handle)
    return [proof["witness"] for proof in data["proofs"]]


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.variant_code``; exit 1 where ``--against`` finds a witness's code moved."""
    parser = argparse.ArgumentParser(prog="python -m lab.variant_code")
    parser.add_argument("record", help="a coverage record (its witnesses are compiled)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--dump", help="write the hashes here")
    group.add_argument("--against", help="compare with the hashes written here")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "0"
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        found = {key: [ptx, sass] for key, ptx, sass in pool.map(_compile, witnesses(args.record))}
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as handle:
            json.dump(found, handle, indent=1, sort_keys=True)
        print(f"{len(found)} launched variants written to {args.dump}")
        return 0
    with open(args.against, encoding="utf-8") as handle:
        before = json.load(handle)
    missing = sorted(set(before) - set(found))
    moved = sorted(key for key in found if key in before and before[key] != found[key])
    for key in moved:
        which = [
            n for n, a, b in zip(("ptx", "sass"), before[key], found[key], strict=True) if a != b
        ]
        print(f"code differs ({', '.join(which)}): {key}")
    for key in missing:
        print(f"not compiled here: {key}")
    print(
        f"{len(found)} variants, {len(moved)} with other code than {args.against}, "
        f"{len(missing)} of it not compiled here"
    )
    return 1 if moved or missing else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
