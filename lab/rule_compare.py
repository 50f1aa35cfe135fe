"""Whether this tree's layout rule gives another rule's decision on every case compared.

The other rule is a ``kernels/layout.py`` file of another revision (``git show REV:kernels/
layout.py > old_layout.py``), loaded on its own. Cases: every width 1..65536, itemsizes 2 and 4,
SM counts 132 (H200) and 78 (a smaller part), and per width the row counts where the rule can
change its mind: 1-8, each fixed row threshold and its neighbours, the powers of two, and the
rows where the problem's bytes cross STREAM_TILE_BYTES and LOOP_PROBLEM_BYTES. Decisions compare
by the layout fields both rules' ``LaunchConfig`` have; a field only the other has must be at
its default. Exit 1 with the first differing cases.

    python -m lab.rule_compare old_layout.py [--jobs 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
from concurrent.futures import ProcessPoolExecutor

from kernels import layout

_OLD = None


def _old_module(path: str):
    global _OLD
    if _OLD is None:
        spec = importlib.util.spec_from_file_location("old_layout", path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot load {path}")
        _OLD = importlib.util.module_from_spec(spec)
        sys.modules["old_layout"] = _OLD  # dataclasses look their module up
        spec.loader.exec_module(_OLD)
    return _OLD


def _rows_for(width: int, itemsize: int) -> list[int]:
    rows = set(range(1, 9))
    for start in layout.row_thresholds(132) | layout.row_thresholds(78) | {16385, 8193}:
        rows.update((start - 2, start - 1, start, start + 1))
    rows.update(1 << k for k in range(0, 22))
    for limit in (layout.STREAM_TILE_BYTES, layout.LOOP_PROBLEM_BYTES):
        edge = limit // (width * itemsize)
        rows.update((edge - 1, edge, edge + 1, edge + 2))
    return sorted(r for r in rows if r >= 1)


def _compare(task: tuple[str, int, int]) -> tuple[int, int, list[str]]:
    path, first, last = task
    old = _old_module(path)
    new_fields = {f.name for f in dataclasses.fields(layout.LaunchConfig)}
    # The other rule's fields this tree's LaunchConfig lacks: each must stay at its default.
    dropped = {
        f.name: f.default for f in dataclasses.fields(old.LaunchConfig) if f.name not in new_fields
    }
    count, differing, differ = 0, 0, []
    for width in range(first, last):
        for itemsize in (2, 4):
            for rows in _rows_for(width, itemsize):
                for sms in (132, 78):
                    count += 1
                    a = old.choose_config.__wrapped__(rows, width, itemsize, sms)
                    b = layout.choose_config.__wrapped__(rows, width, itemsize, sms)
                    same = all(getattr(a, n) == getattr(b, n) for n in new_fields)
                    same = same and all(getattr(a, n) == v for n, v in dropped.items())
                    if not same:
                        differing += 1
                        if len(differ) < 20:
                            line = f"{rows}x{width} itemsize={itemsize} sms={sms}: {a} != {b}"
                            differ.append(line)
    return count, differing, differ


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.rule_compare OLD_LAYOUT``; exit 1 where a decision differs."""
    parser = argparse.ArgumentParser(prog="python -m lab.rule_compare")
    parser.add_argument("old", help="the other revision's kernels/layout.py")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--max-width", type=int, default=65536)
    args = parser.parse_args(argv)
    step = 512
    tasks = [
        (args.old, w, min(w + step, args.max_width + 1)) for w in range(1, args.max_width + 1, step)
    ]
    total, differing, differ = 0, 0, []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for count, block_differing, found in pool.map(_compare, tasks):
            total += count
            differing += block_differing
            differ += found
    for line in differ[:20]:
        print(f"differs: {line}")
    print(f"{total} cases compared, {differing} differing (the first 20 listed)")
    return 1 if differing else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
