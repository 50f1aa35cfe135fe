"""Candidate layouts per shape class, for ``python -m lab.sweep --candidates``.

The record's misses fall into a few classes of shapes; each class gets dev shapes of its own
(none of them in the held-out set, which only the record measures) and the layouts around the
rule's choice that could move it:

* short rows (<= 128 lanes, many rows): rows per program and warps;
* few wide rows (a grid of about one program per SM): warps, the weight early or late;
* rows of 512-1024 lanes: warps, early or late weight, 2-4 rows per program;
* odd rows that are not split (a width only 4 bytes divide, rest past the power of two large):
  warps, early or late weight on the peeled tile;
* rows of 8 KiB or more in large problems (the column loop): chunk and warps, and the one-row
  tile that holds the row in registers, on either side of the loop's problem-size threshold;
* the widest rows (20480-65536 lanes): chunk, warps, one or two programs per row, and the
  tile where it fits;
* launch-bound rows (1-512 rows of 4096, where torch.compile's kernel leads by 1-8%): warps,
  the weight early or late, streaming stores or not.

    python -m lab.class_sweep --out out/class_sweep_layouts.json

Writes ``[{"rows", "width", "dtype", "configs": [LaunchConfig fields...]}]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from kernels.geometry import kernel_constexprs
from kernels.layout import (
    MAX_CHUNKS,
    SINGLE_TILE_MAX,
    LaunchConfig,
    block_for,
    cdiv,
    choose_config,
)

ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}

SHORT = [
    (16384, 112, ("bfloat16", "float32")),
    (8192, 80, ("bfloat16",)),
    (49152, 80, ("bfloat16",)),
    (32768, 96, ("bfloat16", "float32")),
    (196608, 64, ("bfloat16", "float32")),
    (16384, 64, ("bfloat16",)),
]
FEW_WIDE = [
    (128, 6144, ("bfloat16", "float32")),
    (160, 5120, ("bfloat16", "float32")),
    (64, 5120, ("bfloat16",)),
]
MID = [
    (4096, 768, ("bfloat16", "float32")),
    (4096, 832, ("bfloat16",)),
    (8192, 640, ("bfloat16",)),
]
ODD = [(8192, 3074, ("bfloat16", "float16", "float32")), (16384, 1541, ("float32",))]
LOOP = [
    (8192, 6656, ("bfloat16", "float32")),
    # fp32 rows the rule cuts into 1024-lane chunks on 8 warps (8192x6656 fp32 was faster on
    # every other chunk and warp count measured on the H100)
    (8192, 4500, ("float32",)),
    (8192, 5000, ("float32",)),
    # 2-byte rows of 4096-lane chunks on 8 warps (held-out 4096x12288 2-byte, 0.98x QuACK)
    (4096, 10240, ("bfloat16", "float16")),
    (24576, 16384, ("bfloat16",)),
    # fp32 rows of 4096 lanes on either side of LOOP_PROBLEM_BYTES: 60 MiB takes the tile,
    # 68 MiB the loop (4096x4096 fp32, exactly 64 MiB, 0.97x Liger's tile on the H100)
    (3840, 4096, ("float32",)),
    (4352, 4096, ("float32",)),
]
LAUNCH_BOUND = [(rows, 4096, ("bfloat16", "float16", "float32")) for rows in (1, 64, 512)]
WIDE = [
    (1024, 20480, ("bfloat16", "float32")),
    (1024, 28672, ("bfloat16", "float32")),
    (2048, 65536, ("bfloat16", "float32")),
    (2048, 40000, ("bfloat16",)),
]


def _short(rows: int, width: int, itemsize: int) -> list[LaunchConfig]:
    lanes = block_for(width)
    stream = rows * width * itemsize <= 8 * 2**20
    configs = []
    for per in (2, 4, 8, 16, 32, 64):
        for warps in (1, 2, 4, 8):
            elements = per * lanes // (32 * warps)  # per thread
            if 4 <= elements <= 32:
                configs.append(
                    LaunchConfig(False, lanes, warps, per, w_early=True, stream_store=stream)
                )
    return configs


def _tiles(width: int, warps: tuple[int, ...], stream: bool) -> list[LaunchConfig]:
    lanes = block_for(width)
    return [
        LaunchConfig(False, lanes, w, w_early=early, stream_store=stream)
        for w in warps
        for early in (True, False)
    ]


def _mid(rows: int, width: int, itemsize: int) -> list[LaunchConfig]:
    lanes = block_for(width)
    stream = rows * width * itemsize <= 8 * 2**20
    configs = _tiles(width, (1, 2, 4, 8), stream)
    configs += [
        LaunchConfig(False, lanes, w, per, w_early=True, stream_store=stream)
        for per, warps in ((2, (2, 4, 8)), (4, (4, 8)))
        for w in warps
    ]
    return configs


def _loops(
    width: int, itemsize: int, chunks: tuple[int, ...], warps: tuple[int, ...]
) -> list[LaunchConfig]:
    lanes = block_for(width)
    configs = []
    for chunk in chunks:
        if chunk > lanes or cdiv(width, chunk) > MAX_CHUNKS:
            continue
        for w in warps:
            if chunk * itemsize // (32 * w) < 16 // 2:  # under half a 16-byte vector per thread
                continue
            configs.append(LaunchConfig(True, chunk, w, stream_store=True))
    return configs


def _wide(rows: int, width: int, itemsize: int) -> list[LaunchConfig]:
    configs = [choose_config(rows, width, itemsize)]
    loops = _loops(width, itemsize, (4096, 8192, 16384, 32768), (16, 32))
    # two programs per row (the "widest rows" layout) on the chunks that leave each part a
    # chunk of its own
    configs += loops + [
        dataclasses.replace(c, row_parts=2) for c in loops if cdiv(width, c.block) >= 2
    ]
    if block_for(width) <= SINGLE_TILE_MAX:
        configs += _tiles(width, (16, 32), False)
    return configs


def _loop_class(rows: int, width: int, itemsize: int) -> list[LaunchConfig]:
    configs = [choose_config(rows, width, itemsize)]
    configs += _loops(width, itemsize, (1024, 2048, 4096, 8192), (8, 16, 32))
    configs += _tiles(width, (4, 8, 16), False)
    return configs


def _odd(rows: int, width: int, itemsize: int) -> list[LaunchConfig]:
    stream = rows * width * itemsize <= 8 * 2**20
    return _tiles(width, (2, 4, 8, 16), stream)


def _few_wide(rows: int, width: int, itemsize: int) -> list[LaunchConfig]:
    return _tiles(width, (4, 8, 16, 32), True)


def _launch_bound(rows: int, width: int, itemsize: int) -> list[LaunchConfig]:
    return [*_tiles(width, (2, 4, 8, 16), True), *_tiles(width, (2, 4, 8, 16), False)]


CLASSES = (
    (SHORT, _short),
    (FEW_WIDE, _few_wide),
    (MID, _mid),
    (ODD, _odd),
    (LOOP, _loop_class),
    (WIDE, _wide),
    (LAUNCH_BOUND, _launch_bound),
)


def entries() -> list[dict[str, Any]]:
    """Every class's shapes and dtypes with their candidate layouts (the rule's own left out:
    the sweep times it as ``ours``), each layout once and only layouts the launcher takes."""
    out = []
    for shapes, make in CLASSES:
        for rows, width, dtypes in shapes:
            for dtype in dtypes:
                itemsize = ITEMSIZE[dtype]
                rule = choose_config(rows, width, itemsize)
                kept: dict[str, dict[str, Any]] = {}
                for config in make(rows, width, itemsize):
                    if config == rule:
                        continue
                    try:
                        kernel_constexprs(config, width, 1, rows, 16 // itemsize)
                    except ValueError:
                        continue
                    kept.setdefault(repr(config), dataclasses.asdict(config))
                out.append(
                    {"rows": rows, "width": width, "dtype": dtype, "configs": list(kept.values())}
                )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.class_sweep")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    data = entries()
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
        handle.write("\n")
    count = sum(len(entry["configs"]) for entry in data)
    print(f"{len(data)} cases, {count} candidate layouts -> {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
