"""Candidate layouts for the rows a 16-byte vector does not divide, for ``python -m lab.sweep``.

The record's odd-width misses, on shapes of this module's own (no held-out width, which only the
record measures), across row counts, so that a threshold is read off a trend and not one shape:

* 2-byte rows of 4097-8191 elements with a large rest (the column loop of regime 2): chunks of
  1024-4096 lanes on 4 warps, 4096-32768 rows;
* 2-byte rows of 2049-4095 elements with a large rest (one 4096-lane peeled tile): the tile on
  4 or 8 warps, early or late weight, and the column loop on 1024-2048-lane chunks;
* 2-byte rows of an even width that 16 bytes do not divide: the rule's peeled layout against
  the unpeeled one, whose x and weight accesses share one narrower vector;
* wide rows past a power of two (fp32 17001-25001, 2-byte 20480-28672 of 32768 lanes): chunks
  and warps of the column loop.

    python -m lab.odd_sweep --out out/odd_classes_layouts.json
    python -m lab.sweep --out odd.json --candidates odd_classes_layouts.json --only candidates \\
        --references copy,ours --rep-ms 10 --precompile 12

Writes ``[{"rows", "width", "dtype", "configs": [LaunchConfig fields...]}]``; the rule's own
layout is the sweep's ``ours`` and is left out of the candidates.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from kernels.geometry import kernel_constexprs
from kernels.layout import LaunchConfig, block_for, choose_config
from lab.class_sweep import ITEMSIZE

TWO_BYTE = ("bfloat16", "float16")


def _loop(chunk: int, warps: int, **fields: Any) -> LaunchConfig:
    return LaunchConfig(True, chunk, warps, stream_store=True, **fields)


def _tile(warps: int, *, w_early: bool = False, peel: bool = True) -> LaunchConfig:
    return LaunchConfig(False, 0, warps, w_early=w_early, peel=peel)


def _classes() -> list[tuple[list[int], list[int], tuple[str, ...], list[LaunchConfig]]]:
    """(rows, widths, dtypes, candidates) per class; tiles get their block from the width."""
    return [
        (
            [4096, 8192, 16384, 32768],
            [4501, 5001, 6001, 7001],
            TWO_BYTE,
            [_loop(1024, 4), _loop(2048, 4), _loop(4096, 4)],
        ),
        (
            [4096, 16384, 32768],
            [2501, 3001, 3333, 3901],
            TWO_BYTE,
            [
                _tile(4),
                _tile(8),
                _tile(4, w_early=True),
                _loop(1024, 2),
                _loop(1024, 4),
                _loop(2048, 4),
            ],
        ),
        (
            [8192, 16384],
            [2054, 2566, 3590, 5126],
            TWO_BYTE,
            [_tile(4, peel=False), _tile(8, peel=False), _tile(4, w_early=True, peel=False)],
        ),
        (
            [1024, 2048, 4096],
            [17001, 20001, 25001],
            ("float32",),
            [
                _loop(2048, 8),
                _loop(4096, 8),
                _loop(4096, 16),
                _loop(4096, 32),
                _loop(8192, 16),
                _loop(8192, 32),
            ],
        ),
        (
            [1024, 2048],
            [20480, 28672],
            TWO_BYTE,
            [_loop(4096, 8), _loop(4096, 16), _loop(8192, 16), _loop(8192, 32), _loop(16384, 32)],
        ),
    ]


def _fitted(config: LaunchConfig, width: int) -> LaunchConfig:
    if config.loop:
        return config
    return dataclasses.replace(config, block=block_for(width))


def entries() -> list[dict[str, Any]]:
    """Every case of every class with the candidates that differ from the rule's layout."""
    out: list[dict[str, Any]] = []
    for rows_list, widths, dtypes, candidates in _classes():
        for width in widths:
            for dtype in dtypes:
                itemsize = ITEMSIZE[dtype]
                for rows in rows_list:
                    rule = choose_config(rows, width, itemsize)
                    configs = []
                    for candidate in candidates:
                        config = _fitted(candidate, width)
                        if config == rule:
                            continue
                        kernel_constexprs(config, width, 1, rows, 16 // itemsize)
                        configs.append(dataclasses.asdict(config))
                    out.append({"rows": rows, "width": width, "dtype": dtype, "configs": configs})
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.odd_sweep --out FILE``."""
    parser = argparse.ArgumentParser(prog="python -m lab.odd_sweep")
    parser.add_argument("--out", required=True, help="JSON file for the candidate layouts")
    args = parser.parse_args(argv)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(entries(), handle)
        handle.write("\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
