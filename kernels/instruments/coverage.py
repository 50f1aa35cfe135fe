"""The launch-layout coverage map: every kernel configuration the layout rule, or the
batch-invariant mode's layout, can reach.

A *configuration* is what changes the code a launch runs: the kernel (tile or column loop),
the dtype, and the compile-time branches :func:`kernels.geometry.kernel_constexprs` sets (rows
per program one or more, the vector width, peeled or not, a split body, the weight's load
early or late, EVEN, the row mask, streaming stores, a row in several programs, a peel summed
in the unpeeled order) plus whether lanes lie past the row (the masked tail). The sizes
themselves (tile lanes, chunk, warps, the number of parts) are not part of it: they set how
many lanes run the same code, not which code.

:func:`reachable` walks every supported width (1..MAX_WIDTH), both element sizes, every class
of row counts between which the rule or the row mask can change (:func:`row_layouts`) and
every alignment class of the two row strides (each vector width the width allows, with the
strides agreeing or not modulo 16 bytes), and keeps for each configuration the cheapest
problem that reaches it (its *witness*). :func:`configuration_of`
is the key of one launch, taken from the constexprs the launcher computed.

Qt-free and oracle-free: :mod:`inspector.coverage.proof` proves each configuration with the
fixture matrix. The walk takes an H200's 132 SMs (the short-row tiles' grid depends on
the SM count); ``reachable(sm_count=...)`` walks another device's.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from kernels.geometry import kernel_constexprs, peel_elements, settled, vector_width
from kernels.launcher import MAX_ROWS, MAX_WIDTH, SUPPORTED_DTYPES
from kernels.layout import (
    LOOP_PROBLEM_BYTES,
    STREAM_TILE_BYTES,
    LaunchConfig,
    cdiv,
    choose_config,
    row_thresholds,
)
from kernels.plans import invariant_config

ITEMSIZES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2}

# The fields of a configuration, in the order the map and the receipt list them.
FIELDS: tuple[str, ...] = (
    "dtype", "kernel", "multi_row", "vec", "peel", "split", "w_early", "even", "row_mask",
    "stream", "tail", "parts", "ordered",
)  # fmt: skip


@dataclasses.dataclass(frozen=True, order=True)
class Configuration:
    """One class of launches that run the same kernel code.

    Attributes:
        dtype: the input's dtype name.
        kernel: ``"tile"`` (rms_norm_tile_kernel) or ``"loop"`` (rms_norm_loop_kernel).
        multi_row: ROWS > 1 (several rows per program of the tile); False on the loop.
        vec: VEC, the elements per vector access (1, 2, 4 or 8).
        peel: PEEL > 0 (head, 16-byte body and tail apart).
        split: BLOCK2 > 0 (a peeled body of two power-of-two tiles).
        w_early: W_EARLY (tile: weight loaded with x); False on the loop.
        even: EVEN (no column masks).
        row_mask: ROW_MASK (the tile's phantom rows past the last are masked); False on the
            loop.
        stream: STREAM_STORE.
        tail: lanes past the row exist (the tile's lanes or the loop's chunks overhang it).
        parts: PARTS > 1 (the loop's row in several programs); False on the tile.
        ordered: ORDERED (the loop's peeled row summed in its unpeeled lanes' order: the
            batch-invariant mode's peel); False on the tile.
    """

    dtype: str
    kernel: str
    multi_row: bool
    vec: int
    peel: bool
    split: bool
    w_early: bool
    even: bool
    row_mask: bool
    stream: bool
    tail: bool
    parts: bool
    ordered: bool

    @property
    def label(self) -> str:
        """A short stable name: ``bfloat16/tile/rows1/vec8/peel/split/...``."""
        flags = [
            self.dtype,
            self.kernel,
            "multi" if self.multi_row else "rows1",
            f"vec{self.vec}",
        ]
        names = (
            "peel", "split", "w_early", "even", "row_mask", "stream", "tail", "parts", "ordered",
        )  # fmt: skip
        flags += [name for name in names if getattr(self, name)]
        return "/".join(flags)

    @property
    def layout(self) -> str:
        """The label without the dtype: the map's row (its columns are the dtypes)."""
        return self.label.split("/", 1)[1]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Configuration:
        """The configuration of a receipt or record entry.

        Raises:
            ValueError: a missing or unknown field, or a value of the wrong type.
        """
        if not isinstance(data, Mapping) or set(data) != set(FIELDS):
            raise ValueError(f"configuration: fields must be exactly {', '.join(FIELDS)}")
        for name in FIELDS:
            value = data[name]
            if name in ("dtype", "kernel"):
                ok = isinstance(value, str)
            elif name == "vec":
                ok = isinstance(value, int) and not isinstance(value, bool)
            else:
                ok = isinstance(value, bool)
            if not ok:
                raise ValueError(f"configuration.{name}: wrong type {type(value).__name__}")
        return cls(**{name: data[name] for name in FIELDS})


@dataclasses.dataclass(frozen=True)
class Witness:
    """The cheapest problem found that reaches a configuration under the rule.

    ``rows`` is the row count the rule saw; ``config`` is what it chose (after the peel
    settled it), so a proof can launch ``config`` on a few rows of the same width and
    strides and reach the same configuration (:func:`proof_rows`).
    """

    rows: int
    width: int
    x_stride: int
    y_stride: int
    dtype: str
    config: LaunchConfig

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["config"] = dataclasses.asdict(self.config)
        return data


def configuration_of(dtype: str, loop: bool, constexprs: Mapping[str, Any]) -> Configuration:
    """The configuration of one launch, from the constexprs the launcher passed the kernel."""
    if loop:
        tail = constexprs["NUM_CHUNKS"] * constexprs["CHUNK"] > constexprs["WIDTH"]
        return Configuration(
            dtype, "loop", False, constexprs["VEC"], constexprs["PEEL"] > 0, False, False,
            bool(constexprs["EVEN"]), False, bool(constexprs["STREAM_STORE"]), tail,
            constexprs["PARTS"] > 1, bool(constexprs["ORDERED"]),
        )  # fmt: skip
    tail = constexprs["BLOCK"] + constexprs["BLOCK2"] > constexprs["WIDTH"]
    return Configuration(
        dtype, "tile", constexprs["ROWS"] > 1, constexprs["VEC"], constexprs["PEEL"] > 0,
        constexprs["BLOCK2"] > 0, bool(constexprs["W_EARLY"]), bool(constexprs["EVEN"]),
        bool(constexprs["ROW_MASK"]), bool(constexprs["STREAM_STORE"]), tail, False, False,
    )  # fmt: skip


def launch_constexprs(
    config: LaunchConfig, rows: int, width: int, x_stride: int, y_stride: int, itemsize: int
) -> tuple[LaunchConfig, dict[str, Any]]:
    """The config and constexprs ``kernels.launcher.launch_kernel`` launches for this problem
    (the same functions in the same order), with the width beside them as ``WIDTH``."""
    vec = vector_width(width, x_stride, y_stride, itemsize)
    peel = peel_elements(config, width, vec, x_stride, y_stride, itemsize)
    config = settled(config, width, peel)
    constexprs = kernel_constexprs(config, width, vec, rows, peel)
    constexprs["WIDTH"] = width
    return config, constexprs


def stride_classes(width: int, itemsize: int) -> list[tuple[int, int]]:
    """Row strides ``(x, y)`` of every alignment class this width allows: each vector width
    up to the width's own, with the strides agreeing modulo 16 bytes and (below a full
    vector) not agreeing; the smallest such strides."""
    full = max(1, 16 // itemsize)
    top = vector_width(width, width, width, itemsize)
    pairs: list[tuple[int, int]] = []
    vec = top
    while vec >= 1:
        x_stride = width
        while vector_width(width, x_stride, x_stride, itemsize) != vec:
            x_stride += 1
        pairs.append((x_stride, x_stride))
        if vec < full:
            pairs.append((x_stride, x_stride + vec))
        vec //= 2
    return pairs


def _cost(witness: Witness) -> tuple[int, int]:
    return (witness.rows * max(witness.x_stride, witness.y_stride), witness.width)


def row_layouts(width: int, itemsize: int, sm_count: int) -> list[tuple[int, LaunchConfig]]:
    """Row counts that between them reach every layout and row mask the rule gives this width
    over 1..MAX_ROWS rows, each with its layout, ascending.

    Every row-dependent test of :func:`kernels.layout.choose_config` is monotone in the rows:
    its fixed row thresholds (:func:`kernels.layout.row_thresholds`), fewer than four programs
    per SM at each rows-per-program (a power of two up to 4096), x within STREAM_TILE_BYTES,
    the problem at LOOP_PROBLEM_BYTES or more. So the layout is constant between consecutive
    thresholds (the rule is asked once per interval); inside each such interval the row mask
    takes each value the interval allows (a multiple of the rows per program, and not).
    """
    row_bytes = width * itemsize
    starts = {1, STREAM_TILE_BYTES // row_bytes + 1, cdiv(LOOP_PROBLEM_BYTES, row_bytes)}
    starts.update(row_thresholds(sm_count))
    starts.update((4 * sm_count - 1) * 2**k + 1 for k in range(13))
    bounds = [*sorted(b for b in starts if 1 <= b <= MAX_ROWS), MAX_ROWS + 1]
    rule = choose_config.__wrapped__
    picked: list[tuple[int, LaunchConfig]] = []
    for low, end in itertools.pairwise(bounds):
        config = rule(low, width, itemsize, sm_count)
        per = config.rows_per_program
        picks = {low}
        if per > 1:
            multiple = cdiv(low, per) * per
            other = low if low % per else low + 1
            picks.update(r for r in (multiple, other) if r < end)
        picked.extend((rows, config) for rows in sorted(picks))
    return picked


def mode_layouts(width: int, itemsize: int) -> list[tuple[int, LaunchConfig]]:
    """The batch-invariant mode's layout of this width (one for every batch,
    :func:`kernels.plans.invariant_config`) with the fewest rows that reach each of its row
    masks: one row, or a multi-row tile's full program and one more row."""
    config = invariant_config(width, itemsize)
    per = config.rows_per_program
    return [(per, config), (per + 1, config)] if per > 1 else [(1, config)]


def reachable(
    sm_count: int = 132,
    widths: Iterable[int] | None = None,
    dtypes: Iterable[str] = tuple(SUPPORTED_DTYPES),
) -> dict[Configuration, Witness]:
    """Every configuration the rule or the batch-invariant mode reaches, with its cheapest
    witness.

    The walk over every width (the default) is a function of the code alone and takes tens of
    seconds under CPython, so a process makes it once per ``(sm_count, dtypes)`` and returns
    copies after.

    Args:
        sm_count: the device's SMs (the rule keeps four programs per SM on short rows).
        widths: the widths to walk (default every supported width, 1..MAX_WIDTH).
        dtypes: dtype names.
    """
    if widths is None:
        key = (sm_count, tuple(dtypes))
        if key not in _WHOLE_WALKS:
            _WHOLE_WALKS[key] = _walk(sm_count, range(1, MAX_WIDTH + 1), key[1])
        return dict(_WHOLE_WALKS[key])
    return _walk(sm_count, widths, dtypes)


# The whole walks made in this process (frozen keys and values: callers get copies of the dict).
_WHOLE_WALKS: dict[tuple[int, tuple[str, ...]], dict[Configuration, Witness]] = {}


def _walk(
    sm_count: int, widths: Iterable[int], dtypes: Iterable[str]
) -> dict[Configuration, Witness]:
    found: dict[Configuration, Witness] = {}
    by_itemsize: dict[int, list[str]] = {}
    for dtype in dtypes:
        by_itemsize.setdefault(ITEMSIZES[dtype], []).append(dtype)
    for itemsize, names in sorted(by_itemsize.items()):
        for width in widths:
            layouts: dict[tuple[LaunchConfig, bool], int] = {}
            for rows, config in row_layouts(width, itemsize, sm_count):  # ascending: the fewest
                row_mask = config.rows_per_program > 1 and rows % config.rows_per_program != 0
                layouts.setdefault((config, row_mask), rows)
            for rows, config in mode_layouts(width, itemsize):
                layouts.setdefault((config, rows % config.rows_per_program != 0), rows)
            strides = stride_classes(width, itemsize)
            for (config, _), rows in layouts.items():
                for x_stride, y_stride in strides:
                    launched, constexprs = launch_constexprs(
                        config, rows, width, x_stride, y_stride, itemsize
                    )
                    cost = (rows * max(x_stride, y_stride), width)
                    for dtype in names:
                        key = configuration_of(dtype, launched.loop, constexprs)
                        if key not in found or cost < _cost(found[key]):
                            found[key] = Witness(rows, width, x_stride, y_stride, dtype, launched)
    return dict(sorted(found.items()))


def proof_rows(witness: Witness, most: int = 4096) -> int:
    """Rows a proof launches the witness's config on, at most ``most``: three programs of one
    row, or of several rows two full programs and, with the witness's row mask, a third that
    holds one row (one full and one such where three would pass ``most``)."""
    per = witness.config.rows_per_program
    if per == 1:
        return 3
    row_mask = witness.rows % per != 0
    if not row_mask:
        return 2 * per if 2 * per <= most else per
    return 2 * per + 1 if 2 * per + 1 <= most else per + 1


def describe(configurations: Iterable[Configuration]) -> dict[str, int]:
    """Counts by kernel and dtype, for the command's summary line."""
    counts: dict[str, int] = {}
    for configuration in configurations:
        name = f"{configuration.dtype}/{configuration.kernel}"
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))
