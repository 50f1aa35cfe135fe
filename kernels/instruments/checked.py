"""Check mode: run the real (or a mutant) kernel inside poison-filled guard regions.

Numpy in, numpy out, so ``main.py check`` and the window never handle tensors. One buffer layout
serves input and output (element units, ``G = guard`` elements of guard at each end)::

    [ G guard | row 0: width data, row_stride - width pad | row 1 ... | row R-1 ... | G guard ]
      ^ index 0  ^ index G                                  (total = 2 * G + R * row_stride)

Everything that is not a data element is *guard*: filled with ``poison`` before the launch. In
the input buffer the poison is what a tail-inclusion bug reads; in the output buffer any guard
element that no longer holds the poison bits after the launch is an out-of-bounds store.
``G = BLOCK`` (next_power_of_2(width), at least the lanes any launch path reads past a row start)
so that even a store or load of all lanes of the last row stays inside the allocation (a mutant
must be caught by the guard, never by a memory fault). A multi-row program's phantom rows past
the last row would land in the trailing guard too.

``path`` selects the launch path: ``"auto"`` is what ``kernels.rms_norm`` would launch for this
shape (``choose_config``); ``"one_row"``, ``"multi_row"`` and ``"column_loop"`` force that path
with a small layout (``forced_config``), so every mutant can be run through every path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from kernels.env import device_description
from kernels.instruments import guarded_reads
from kernels.instruments.coverage import Configuration, configuration_of
from kernels.launcher import MAX_WIDTH, SUPPORTED_DTYPES, launch_kernel, mutant_code
from kernels.layout import (
    KERNEL_PATHS,
    LaunchConfig,
    block_for,
    choose_config,
    forced_config,
    sm_count_for,
)
from kernels.mode import COMPILED, INTERPRETER, MODE

# Default guard/padding value. Finite, large next to unit-scale data (so poison that enters a
# square sum shows up as a big error, not a NaN that hides the magnitude), and exactly
# representable in float32, float16 and bfloat16 (-3072 = -3 * 2**10). The same value as
# oracle.tiled.POISON, duplicated on purpose (kernels never imports oracle).
POISON = -3072.0

_BITS_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


@dataclass(frozen=True)
class OobWrite:
    """One guard element the kernel changed.

    Attributes:
        row: the row whose data region precedes ``address`` (the likely writer: row ``r``'s
            padding and, for the last row, the trailing guard), or None for the leading guard.
        address: element index into ``CheckedRun.buffer``.
        value: the value found there (float64, exact upcast).
    """

    row: int | None
    address: int
    value: float


@dataclass(frozen=True)
class CheckedRun:
    """Result of one checked launch (arrays are read-only copies)."""

    y: np.ndarray
    buffer: np.ndarray
    oob_writes: tuple[OobWrite, ...]
    mode: str
    device: str
    block: int
    num_warps: int
    guard: int = 0
    path: str = "one_row"
    rows_per_program: int = 1
    programs: int = 0
    peel: int = 0  # the tile kernel's PEEL (elements of 16 bytes; 0: not peeled)
    row_stride: int = 0
    dtype: str = ""
    mutant: str | None = None
    poison: float = POISON
    data_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)
    # Each row's rrms as the kernel computed it (its rstd output, float32 values); empty when
    # the run did not ask for it.
    rstd: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    # Stores into the poison guards around the rstd output (a phantom row's rrms).
    rstd_oob_writes: int = 0
    # Loads from a guard or a row's padding under the interpreter
    # (kernels.instruments.guarded_reads): (buffer "x" | "weight" | "out", how many, the first
    # element indices into it).
    oob_reads: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    # The output's row stride (the input's unless the run gave out_row_stride); buffer,
    # data_mask and oob_writes are laid out with it.
    out_row_stride: int = 0
    # The launch's class in the coverage map (kernels.instruments.coverage.configuration_of).
    configuration: Configuration | None = None


def _stores_out_of_bounds(
    y_buffer: torch.Tensor, mask: np.ndarray, poison_bits: int, guard: int, stride: int, rows: int
) -> tuple[np.ndarray, tuple[OobWrite, ...]]:
    """The output allocation upcast to float64, and every guard element whose bits are no
    longer the poison's."""
    y_cpu = y_buffer.cpu()
    bits = y_cpu.view(_BITS_VIEW[y_cpu.dtype]).numpy()
    buffer64 = y_cpu.to(torch.float64).numpy()
    changed = np.flatnonzero((bits != poison_bits) & ~mask)
    oob = tuple(
        OobWrite(
            row=_row_of(int(address), guard, stride, rows),
            address=int(address),
            value=float(buffer64[address]),
        )
        for address in changed
    )
    return buffer64, oob


def _guarded_weight(
    weights: np.ndarray, dtype: torch.dtype, guard: int, poison: float, device: torch.device
) -> torch.Tensor:
    """The weight between ``guard`` elements of poison on each side, so that a read past it
    lands where :mod:`kernels.instruments.guarded_reads` sees it (and on poison, not on other
    memory)."""
    width = weights.shape[0]
    buffer = torch.full((2 * guard + width,), float(poison), dtype=torch.float64).to(dtype)
    buffer[guard : guard + width] = torch.from_numpy(weights).to(dtype)
    return buffer.to(device)


def resolve_device(device: str) -> torch.device:
    """Map ``"auto" | "cpu" | "cuda"`` to the torch device the kernel can run on here.

    Raises:
        ValueError: unknown name, ``"cuda"`` without a CUDA device, or a device the process's
            mode cannot run (``"cpu"`` needs the interpreter, decided at import).
    """
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda'; got {device!r}")
    if device == "auto":
        return torch.device("cuda" if MODE == COMPILED else "cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                "device='cuda' was requested but no CUDA device is available "
                "(torch.cuda.is_available() is False); use device='cpu' or 'auto'"
            )
        return torch.device("cuda")
    if MODE != INTERPRETER:
        raise ValueError(
            "device='cpu' needs the Triton interpreter, but this process runs compiled "
            "(a CUDA device was found); set TRITON_INTERPRET=1 before starting to use the CPU"
        )
    return torch.device("cpu")


def _as_matrix(x: object) -> np.ndarray:
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"x must be a 2-D (rows, width) array; got {array.ndim} dimensions")
    rows, width = array.shape
    if rows < 1:
        raise ValueError(f"x must have at least 1 row; got {rows}")
    if not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"x width must be in [1, {MAX_WIDTH}]; got {width}")
    return array


def data_mask_for(
    rows: int, width: int, row_stride: int, guard: int, phantom_rows: int = 0
) -> np.ndarray:
    """Boolean mask over the buffer: True on data elements, False on guard/padding. The
    trailing guard also spans ``phantom_rows`` row strides: the rows a program of several rows
    holds past the last (masked in the real kernel), so a store of one lands in a guard."""
    total = 2 * guard + (rows + phantom_rows) * row_stride
    mask = np.zeros(total, dtype=bool)
    body = mask[guard : guard + rows * row_stride].reshape(rows, row_stride)
    body[:, :width] = True
    return mask


def _stride(name: str, value: object, width: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= width ({width}); got {value!r}")
    if value < width:
        raise ValueError(f"{name} must be >= width ({width}); got {value}")
    return int(value)


def run_checked(
    x: object,
    weight: object,
    *,
    eps: float,
    dtype: str,
    row_stride: int | None = None,
    mutant: str | None = None,
    poison: float = POISON,
    device: str = "auto",
    weight_dtype: str | None = None,
    path: str = "auto",
    config: LaunchConfig | None = None,
    rstd: bool = False,
    out_row_stride: int | None = None,
) -> CheckedRun:
    """Run the kernel (or ``mutant``) on ``x`` laid out in guarded buffers; report what it did.

    Args:
        x: logical ``(rows, width)`` values (float64-convertible); rounded to ``dtype``.
        weight: ``(width,)`` values; rounded to ``weight_dtype`` (default ``dtype``).
        eps: float, passed to the kernel as float32 (range checks are the caller's job here:
            the oracle validates the problem; this door also serves out-of-range experiments).
        dtype: ``"float32" | "float16" | "bfloat16"``, the input and output dtype.
        row_stride: elements between row starts of input and output, ``>= width``
            (default ``width``); ``row_stride - width`` padding elements per row hold poison.
        mutant: None for the real kernel, else one of ``KERNEL_MUTANTS``.
        poison: value of every guard/padding element (rounded to ``dtype``; NaN allowed).
        device: ``"auto"`` (cuda when compiled, cpu under the interpreter), ``"cpu"``, ``"cuda"``.
        weight_dtype: ``dtype`` or ``"float32"``; default ``dtype``.
        path: ``"auto"`` (the launcher's choice for this shape) or one of ``KERNEL_PATHS``
            (``"one_row"``, ``"multi_row"``, ``"column_loop"``) to force that code path.
        config: an exact ``LaunchConfig`` (overrides ``path``); for tests and experiments.
        rstd: also take the kernel's per-row rrms from its optional rstd output (the kernel is
            then compiled with that store; ``y`` is bit-identical either way). The check runs
            without it: it proves the kernel users launch.
        out_row_stride: the output's row stride, ``>= width`` (default ``row_stride``): the
            vector width and the peel depend on both strides (the coverage map's alignment
            classes).

    Returns:
        CheckedRun with ``y`` ``(rows, width)`` float64 (exact upcast of the kernel's output),
        ``buffer`` the whole output allocation upcast, ``oob_writes`` every changed guard
        element, and mode/device/block/num_warps/path/rows_per_program/programs of the launch
        (``block`` is the tile's lanes per row, or CHUNK on the column loop).

    Raises:
        TypeError: ``dtype``/``weight_dtype`` not a supported name, ``row_stride`` not an int.
        ValueError: bad shapes, ``row_stride < width``, unknown mutant, path or unusable
            device.
    """
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"dtype must be one of {', '.join(SUPPORTED_DTYPES)}; got {dtype!r}")
    weight_dtype = dtype if weight_dtype is None else weight_dtype
    if weight_dtype not in (dtype, "float32"):
        raise TypeError(f"weight_dtype must be {dtype!r} or 'float32'; got {weight_dtype!r}")
    mutant_code(mutant)  # an unknown name raises here, before any allocation
    values = _as_matrix(x)
    rows, width = values.shape
    weights = np.asarray(weight, dtype=np.float64)
    if weights.shape != (width,):
        raise ValueError(f"weight.shape must be (width,) = ({width},); got {weights.shape}")
    row_stride = _stride("row_stride", width if row_stride is None else row_stride, width)
    out_row_stride = _stride(
        "out_row_stride", row_stride if out_row_stride is None else out_row_stride, width
    )
    if not isinstance(eps, (int, float, np.floating)) or isinstance(eps, bool):
        raise TypeError(f"eps must be a float; got {eps!r}")
    if path != "auto" and path not in KERNEL_PATHS:
        raise ValueError(f"path must be 'auto' or one of {', '.join(KERNEL_PATHS)}; got {path!r}")
    torch_device = resolve_device(device)

    torch_dtype = SUPPORTED_DTYPES[dtype]
    itemsize = torch.empty((), dtype=torch_dtype).element_size()
    if config is None:
        if path == "auto":
            config = choose_config(rows, width, itemsize, sm_count_for(torch_device))
        else:
            config = forced_config(path, rows, width, itemsize)
    guard = max(block_for(width), config.lanes(width))
    phantom = config.rows_per_program - 1
    x_valid = data_mask_for(rows, width, row_stride, guard, phantom)
    x_total = x_valid.size
    mask = data_mask_for(rows, width, out_row_stride, guard, phantom)
    total = mask.size

    def body(buffer: torch.Tensor, stride: int) -> torch.Tensor:
        return buffer[guard:].as_strided((rows, width), (stride, 1))

    # Build in float64, round once to the dtype (round to nearest even, like the oracle).
    x_host = torch.full((x_total,), float(poison), dtype=torch.float64)
    body(x_host, row_stride).copy_(torch.from_numpy(values))
    x_buffer = x_host.to(torch_dtype).to(torch_device)
    y_buffer = torch.full((total,), float(poison), dtype=torch.float64).to(torch_dtype)
    y_buffer = y_buffer.to(torch_device)
    poison_bits = y_buffer[:1].view(_BITS_VIEW[torch_dtype]).cpu().item()
    w_buffer = _guarded_weight(weights, SUPPORTED_DTYPES[weight_dtype], guard, poison, torch_device)
    w_tensor = w_buffer[guard : guard + width]

    rstd_guard = max(16, 2 * config.rows_per_program)
    rstd_buffer = _rstd_buffer(rows, rstd_guard, poison, torch_device) if rstd else None
    rstd_out = None if rstd_buffer is None else rstd_buffer[rstd_guard : rstd_guard + rows]
    watch = guarded_reads.Watch()
    if MODE == INTERPRETER:  # every load checked (on a GPU: compute-sanitizer's memcheck)
        w_valid = guarded_reads.strided_valid(guard, 1, width, width)
        for name, buffer, valid in (("x", x_buffer, x_valid), ("weight", w_buffer, w_valid),
                                    ("out", y_buffer, mask)):  # fmt: skip
            watch.add(name, buffer.data_ptr(), buffer.element_size(), valid)
    with guarded_reads.watching(watch):
        run = launch_kernel(
            body(x_buffer, row_stride), w_tensor, body(y_buffer, out_row_stride), float(eps),
            mutant=mutant, config=config, rstd=rstd_out,
        )  # fmt: skip
    launched = run.config
    if torch_device.type == "cuda":
        torch.cuda.synchronize(torch_device)

    buffer64, oob = _stores_out_of_bounds(y_buffer, mask, poison_bits, guard, out_row_stride, rows)
    y = body(torch.from_numpy(buffer64), out_row_stride).numpy().copy()
    rrms, rstd_oob = np.zeros(0), 0
    if rstd_buffer is not None:
        rrms, rstd_oob = _read_rstd(rstd_buffer, rstd_guard, rows, poison)
    for array in (y, buffer64, mask, rrms):
        array.setflags(write=False)
    return CheckedRun(
        y=y,
        buffer=buffer64,
        oob_writes=oob,
        mode=MODE,
        device=device_description(torch_device),
        block=launched.block + launched.block2,
        num_warps=launched.num_warps,
        guard=guard,
        path=launched.path,
        rows_per_program=launched.rows_per_program,
        programs=launched.grid(rows),
        peel=run.peel,
        row_stride=row_stride,
        dtype=dtype,
        mutant=mutant,
        poison=float(poison),
        data_mask=mask,
        rstd=rrms,
        rstd_oob_writes=rstd_oob,
        oob_reads=tuple(
            (name, watch.counts[name], tuple(watch.found[name][:64])) for name in watch.counts
        ),
        out_row_stride=out_row_stride,
        configuration=configuration_of(dtype, launched.loop, {**dict(run.layout), "WIDTH": width}),
    )


def _rstd_buffer(rows: int, guard: int, poison: float, device: torch.device) -> torch.Tensor:
    """The rstd output between ``guard`` float32 elements of poison on each side, as y: a
    store of a phantom row's rrms past the last row (or before the first) lands in a guard.
    The rows' own slots start as NaN (a row the kernel skips stays visible)."""
    buffer = torch.full((rows + 2 * guard,), float(poison), device=device)
    buffer[guard : guard + rows] = float("nan")
    return buffer


def _read_rstd(
    buffer: torch.Tensor, guard: int, rows: int, poison: float
) -> tuple[np.ndarray, int]:
    """(the rows' rrms as float64, how many guard elements no longer hold the poison)."""
    host = buffer.cpu()
    guards = torch.cat([host[:guard], host[guard + rows :]])
    poison32 = torch.tensor(float(poison), dtype=torch.float32)
    changed = int((guards.view(torch.int32) != poison32.view(torch.int32)).sum())
    return host[guard : guard + rows].double().numpy(), changed


def _row_of(address: int, guard: int, row_stride: int, rows: int) -> int | None:
    """Row whose region (data + padding) holds ``address``; the last row owns the tail guard."""
    if address < guard:
        return None
    return min((address - guard) // row_stride, rows - 1)
