"""Whether a kernel source change changes the code of any benchmarked layout, without a GPU.

For every shape of the benchmark's shape sets and each dtype, the PTX that
:func:`kernels.instruments.compile_info.compile_fields` gives for sm_90 (the launcher's automatic
layout), with its debug lines (``.loc``, ``.file``, the ``.debug_*`` sections) dropped, hashed.
``--dump`` writes the hashes; ``--against`` compares this tree's hashes with a dump and lists the
cases whose code differs (exit 1 when any does). A source change whose hashes all match leaves every
recorded layout's instructions as they were: the record's timings still describe its kernels.

    TRITON_INTERPRET=0 python -m lab.ptx_compare --dump before.json
    TRITON_INTERPRET=0 python -m lab.ptx_compare --against before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re

from kernels import bench
from kernels.instruments.compile_info import compile_fields

_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug_\w+\s*\{.*?^\s*\}", re.S | re.M)
_DEBUG_LINE = re.compile(r"^\s*(\.loc|\.file)\b.*$|^\$L__(?:tmp|func_end|info)\w*:$", re.M)


def code_of(ptx: str) -> str:
    """``ptx`` without its debug information (line records and debug sections)."""
    text = _DEBUG_SECTION.sub("", ptx)
    text = _DEBUG_LINE.sub("", text)
    return "\n".join(line for line in text.splitlines() if line.strip())


def case_hashes(dtypes: list[str]) -> dict[str, str]:
    """``{"RxW:dtype": sha256 of code_of(PTX)}`` over every shape set."""
    out: dict[str, str] = {}
    for dtype in dtypes:
        for _, shape in bench.resolve_shapes(None, bench.load_shape_sets()):
            key = f"{shape.rows}x{shape.width}:{dtype}"
            if key in out:
                continue
            info = compile_fields(dtype, shape.width, 90, None, shape.rows)
            out[key] = hashlib.sha256(code_of(info["ptx"]).encode()).hexdigest()
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.ptx_compare``; exit 1 when ``--against`` finds a case whose code moved."""
    parser = argparse.ArgumentParser(prog="python -m lab.ptx_compare")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--dump", help="write the hashes here")
    group.add_argument("--against", help="compare with the hashes written here")
    parser.add_argument("--dtypes", default="bfloat16,float16,float32")
    args = parser.parse_args(argv)
    hashes = case_hashes(args.dtypes.split(","))
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as handle:
            json.dump(hashes, handle, indent=1, sort_keys=True)
        print(f"{len(hashes)} cases written to {args.dump}")
        return 0
    with open(args.against, encoding="utf-8") as handle:
        before = json.load(handle)
    moved = sorted(key for key in hashes if before.get(key) != hashes[key])
    for key in moved:
        print(f"code differs: {key}")
    print(f"{len(hashes)} cases, {len(moved)} with other code than {args.against}")
    return 1 if moved else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
