"""Batch invariance: does a row come out with the same bits whatever batch it is launched in?

The launch layout (:func:`kernels.layout.choose_config`) depends on the number of rows, and a
layout sets the reduction order (rows per program, warps, tile or column loop), so the same row
may be summed differently in a batch of 1 and in a batch of 65536. :func:`certify` launches the
rows of one input under every layout the rule picks for some batch size of their width
(:func:`layouts_by_batch`), each at several positions inside a program of several rows, and on
a GPU also from a CUDA graph, and compares every output's bits with the rows launched alone.

With ``batch_invariant=True`` it certifies :func:`kernels.rms_norm`'s batch-invariant mode
instead: one layout for every batch size (:func:`kernels.plans.invariant_config`), each row
launched alone through the public call as the reference, the rows at every place of a program,
and the public call on batches of every size at which the default rule changes layout (as many
as :data:`MODE_BATCH_BYTES` and the caller's ``max_batch_rows`` allow).

Qt-free: the check and the window's job call it; tests/kernels/test_kernel_invariance.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from kernels.launcher import MAX_ROWS, launch
from kernels.layout import (
    LOOP_PROBLEM_BYTES,
    STREAM_TILE_BYTES,
    LaunchConfig,
    choose_config,
    row_thresholds,
    sm_count_for,
)
from kernels.plans import invariant_config, launch_canonical

# Most bytes of x in one batch the batch-invariant mode's certificate launches: the batches
# cover the default rule's row thresholds up to this size.
MODE_BATCH_BYTES = 256 * 2**20

_TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_BITS = {torch.float32: (torch.int32, 32), torch.float16: (torch.int16, 16),
         torch.bfloat16: (torch.int16, 16)}  # fmt: skip


def candidate_batches(width: int, itemsize: int, sm_count: int) -> list[int]:
    """Row counts at which :func:`choose_config` can change for this width: every power of two
    and its neighbours up to ``MAX_ROWS``, the rule's row thresholds
    (:func:`kernels.layout.row_thresholds`, four programs per SM at each rows-per-program) and
    the rows where the problem crosses its byte thresholds, each with both neighbours."""
    row_bytes = width * itemsize
    points = {start - 1 for start in row_thresholds(sm_count)}
    points.update(2**k for k in range(31))  # 2**0: the batch of 1
    # The rows per program halve while the grid has fewer than four programs per SM: each
    # rows-per-program 2**(k+1) starts past (4 * SM - 1) * 2**k rows.
    points.update((4 * sm_count - 1) * 2**k for k in range(13))
    points.update(limit // row_bytes for limit in (STREAM_TILE_BYTES, LOOP_PROBLEM_BYTES))
    near = {row for p in points for row in (p - 1, p, p + 1)}
    return sorted(p for p in near if 1 <= p <= MAX_ROWS)


def layouts_by_batch(width: int, itemsize: int, sm_count: int) -> list[tuple[int, LaunchConfig]]:
    """``(smallest batch size, layout)`` for every distinct layout the rule gives rows of this
    width, the batch of 1 first."""
    seen: dict[LaunchConfig, int] = {}
    for rows in candidate_batches(width, itemsize, sm_count):
        seen.setdefault(choose_config(rows, width, itemsize, sm_count), rows)
    return sorted(((rows, config) for config, rows in seen.items()), key=lambda item: item[0])


def positions_for(config: LaunchConfig, stride: int = 0, itemsize: int = 4) -> tuple[int, ...]:
    """Where the rows start inside a batch under ``config``: first, second, middle and last
    row of a program of ``config.rows_per_program`` rows (one row per program: only the
    first), and, where rows ``stride`` elements apart do not all start on a 16-byte boundary,
    every shift of a row's start against that boundary (a peeled row's head length follows
    it, and with it which lanes sum which elements)."""
    per = config.rows_per_program
    places = {0, min(1, per - 1), per // 2, per - 1}
    vector = 16 // itemsize
    if stride % vector:
        places.update(range(vector))
    return tuple(sorted(places))


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per element, how many representable values of the dtype lie between ``a`` and ``b``
    (0: the same bits; +0 and -0 are 1 apart)."""
    view, bits = _BITS[a.dtype]
    low = (1 << (bits - 1)) - 1

    def ordered(t: torch.Tensor) -> torch.Tensor:
        raw = t.contiguous().view(view).to(torch.int64)
        return torch.where(raw < 0, -(raw & low) - 1, raw)

    return (ordered(a) - ordered(b)).abs()


@dataclasses.dataclass(frozen=True)
class Certificate:
    """What :func:`certify` found; :meth:`to_receipt` is the receipt's ``batch_invariance``.

    Attributes:
        bit_identical: every launch gave every row the bits of the rows launched alone.
        rows_checked: the input's rows compared (all of them, or the first ``max_rows``).
        batch_sizes: one batch size per distinct layout, the batch of 1 first (the mode's:
            every batch size launched, ascending).
        launches: each launch compared: its batch size, layout, row position and rows that
            differed.
        differing_rows: ``{row, max_ulp}`` for every row that differed in some launch.
        cuda_graph: "same bits", "differs" or why it was not run.
        device: where it ran.
        mode: "default" (the layouts the rule picks by batch size) or "batch_invariant"
            (``kernels.rms_norm(..., batch_invariant=True)``).
    """

    bit_identical: bool
    rows_checked: int
    batch_sizes: tuple[int, ...]
    launches: tuple[dict[str, Any], ...]
    differing_rows: tuple[dict[str, int], ...]
    cuda_graph: str
    device: str
    mode: str = "default"

    def to_receipt(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "bit_identical": self.bit_identical,
            "rows_checked": self.rows_checked,
            "batch_sizes": list(self.batch_sizes),
            "differing_rows": [dict(r) for r in self.differing_rows],
            "launches": [dict(entry) for entry in self.launches],
            "cuda_graph": self.cuda_graph,
            "device": self.device,
        }


def _strided(values: torch.Tensor, row_stride: int) -> torch.Tensor:
    """A copy of ``values`` whose rows start ``row_stride`` elements apart (zeros between)."""
    rows, width = values.shape
    storage = torch.zeros(rows * row_stride, dtype=values.dtype, device=values.device)
    view = storage.as_strided((rows, width), (row_stride, 1))
    view.copy_(values)
    return view


def _launch_at(
    x: torch.Tensor, weight: torch.Tensor, eps: float, config: LaunchConfig, position: int,
    row_stride: int, canonical: bool = False,
) -> torch.Tensor:  # fmt: skip
    """``x``'s rows launched as rows ``position..`` of a batch under ``config`` (the rows
    around them copies of the input's, so the last program is full of real rows), input and
    output rows ``row_stride`` apart; ``canonical``: as the batch-invariant mode launches
    them (:func:`kernels.plans.launch_canonical`: packed rows from aligned bases)."""
    rows = x.shape[0]
    per = config.rows_per_program
    total = -(-(position + rows) // per) * per
    index = torch.roll(torch.arange(total, device=x.device).remainder(rows), position)
    batch = _strided(x[index], row_stride)  # x's row i is batch row position + i
    out = _strided(torch.full_like(batch, float("nan")), row_stride)
    if canonical:
        launch_canonical(batch, weight, out, eps, config=config)
    else:
        launch(batch, weight, out, eps, config=config)
    return out[position : position + rows]


def _graph_output(
    x: torch.Tensor, weight: torch.Tensor, eps: float, batch_invariant: bool = False
) -> torch.Tensor:
    """``kernels.rms_norm(x, weight, eps, out=..., batch_invariant=...)`` replayed from a CUDA
    graph."""
    from kernels.api import rms_norm

    out = torch.empty_like(x)
    stream = torch.cuda.Stream(x.device)
    stream.wait_stream(torch.cuda.current_stream(x.device))
    with torch.cuda.stream(stream):
        # plans and compiles outside the capture
        rms_norm(x, weight, eps, out=out, batch_invariant=batch_invariant)
    torch.cuda.current_stream(x.device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        rms_norm(x, weight, eps, out=out, batch_invariant=batch_invariant)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize(x.device)
    return out


def _graph_compared(
    got: torch.Tensor, reference: torch.Tensor, worst: torch.Tensor
) -> tuple[torch.Tensor, str]:
    """``worst`` (each row's largest ulp distance so far) with the CUDA graph's output ``got``
    compared with ``reference`` folded in, and the graph's verdict: "same bits" or "differs"."""
    graph_ulps = ulp_distance(got, reference).amax(dim=1)
    graph = "differs" if bool((graph_ulps > 0).any()) else "same bits"
    return torch.maximum(worst, graph_ulps), graph


def certify(
    x: np.ndarray,
    weight: np.ndarray,
    eps: float,
    dtype: str,
    device: torch.device,
    row_stride: int | None = None,
    max_rows: int | None = None,
    *,
    batch_invariant: bool = False,
    max_batch_rows: int | None = None,
) -> Certificate:
    """Launch ``x``'s rows under every layout their width can get and compare the bits (with
    ``batch_invariant``: under the mode's one layout, in batches of every size that changes
    the default's).

    Args:
        x: ``(rows, width)`` values, exact in ``dtype``.
        weight: ``(width,)`` values.
        eps: as the kernel takes it.
        dtype: "float32" | "float16" | "bfloat16".
        device: CUDA, or CPU under the interpreter.
        row_stride: elements between row starts of every batch (default: the width), as the
            input's: the stride sets the vector width and the peel.
        max_rows: compare only the first this many rows (the interpreter runs each program in
            Python); None: all.
        batch_invariant: certify ``kernels.rms_norm(..., batch_invariant=True)``.
        max_batch_rows: the mode's largest batch (None: as many rows as fit
            :data:`MODE_BATCH_BYTES`).

    Returns:
        The certificate; ``bit_identical`` is False as soon as one row differs anywhere.
    """
    torch_dtype = _TORCH[dtype]
    values = np.array(x, dtype=np.float64)  # a writable copy for torch
    if max_rows is not None:
        values = values[:max_rows]
    xt = torch.from_numpy(values).to(torch_dtype).to(device)
    wt = torch.from_numpy(np.array(weight, dtype=np.float64)).to(torch_dtype).to(device)
    rows, width = xt.shape
    stride = width if row_stride is None else int(row_stride)
    if batch_invariant:
        return _certify_mode(xt, wt, eps, stride, max_batch_rows)
    layouts = layouts_by_batch(width, xt.element_size(), sm_count_for(device))
    alone = _launch_at(xt, wt, eps, layouts[0][1], 0, stride)
    worst = torch.zeros(rows, dtype=torch.int64, device=device)
    launches = []
    for batch, config in layouts:
        for position in positions_for(config, stride, xt.element_size()):
            if config == layouts[0][1] and position == 0:
                got = alone  # the batch of 1 itself
            else:
                got = _launch_at(xt, wt, eps, config, position, stride)
            ulps = ulp_distance(got, alone).amax(dim=1)
            worst = torch.maximum(worst, ulps)
            launches.append(_launch_entry(batch, config, position, ulps))
    graph = "not run: CUDA graphs need a CUDA device"
    if device.type == "cuda":
        from kernels.api import rms_norm

        strided = _strided(xt, stride)
        graph_out = _graph_output(strided, wt, eps)
        worst, graph = _graph_compared(graph_out, rms_norm(strided, wt, eps), worst)
    sizes = [batch for batch, _ in layouts]
    return _certificate(worst, sizes, launches, graph, str(device), "default")


def _certify_mode(
    xt: torch.Tensor, wt: torch.Tensor, eps: float, stride: int, max_batch_rows: int | None
) -> Certificate:
    """:func:`certify` of the batch-invariant mode: each row launched alone through
    ``kernels.rms_norm`` is the reference; the rows at every place of a program of the mode's
    layout, and the public call on batches of each size at which the default rule changes
    layout (the input's rows repeated), must give its bits."""
    from kernels.api import rms_norm

    rows, width = xt.shape
    device = xt.device
    config = invariant_config(width, xt.element_size())
    strided = _strided(xt, stride)
    alone = torch.cat(
        [rms_norm(strided[i : i + 1], wt, eps, batch_invariant=True) for i in range(rows)]
    )
    worst = torch.zeros(rows, dtype=torch.int64, device=device)
    launches = []

    def compared(batch: int, position: int, per_row: torch.Tensor) -> None:
        nonlocal worst
        worst = torch.maximum(worst, per_row)
        launches.append(_launch_entry(batch, config, position, per_row))

    for position in positions_for(config, stride, xt.element_size()):
        got = _launch_at(xt, wt, eps, config, position, stride, canonical=True)
        compared(position + rows, position, ulp_distance(got, alone).amax(dim=1))
    most = max(1, MODE_BATCH_BYTES // (stride * xt.element_size()))
    if max_batch_rows is not None:
        most = min(most, max(1, int(max_batch_rows)))
    sizes = [
        b for b in candidate_batches(width, xt.element_size(), sm_count_for(device)) if b <= most
    ]
    for batch in sizes:
        index = torch.arange(batch, device=device).remainder(rows)
        got = rms_norm(_strided(xt[index], stride), wt, eps, batch_invariant=True)
        each = ulp_distance(got, alone[index]).amax(dim=1)
        per_row = torch.zeros(rows, dtype=torch.int64, device=device)
        compared(batch, 0, per_row.scatter_reduce(0, index, each, "amax"))
    graph = "not run: CUDA graphs need a CUDA device"
    if device.type == "cuda":
        worst, graph = _graph_compared(_graph_output(strided, wt, eps, True), alone, worst)
    listed = sorted({*sizes, *(entry["batch_size"] for entry in launches)})
    return _certificate(worst, listed, launches, graph, str(device), "batch_invariant")


def _launch_entry(
    batch: int, config: LaunchConfig, position: int, per_row: torch.Tensor
) -> dict[str, Any]:
    """One launch of a certificate: its batch, layout and place, and how many rows (of
    ``per_row``'s ulp distances) differ from the row launched alone."""
    return {
        "batch_size": batch, "path": config.path, "block": config.block,
        "num_warps": config.num_warps, "rows_per_program": config.rows_per_program,
        "position": position, "rows_differing": int((per_row > 0).sum()),
    }  # fmt: skip


def _certificate(
    worst: torch.Tensor,
    sizes: list[int],
    launches: list[dict[str, Any]],
    graph: str,
    device: str,
    mode: str,
) -> Certificate:
    """The certificate of ``worst`` (each row's largest ulp distance over every launch)."""
    worst_host = worst.cpu().numpy()
    differing = tuple(
        {"row": int(r), "max_ulp": int(worst_host[r])} for r in np.flatnonzero(worst_host)
    )
    return Certificate(
        bit_identical=not differing,
        rows_checked=len(worst_host),
        batch_sizes=tuple(sizes),
        launches=tuple(launches),
        differing_rows=differing,
        cuda_graph=graph,
        device=device,
        mode=mode,
    )
