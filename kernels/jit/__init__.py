"""The fused RMSNorm forward as Triton kernels: ``y = x * rsqrt(mean(x^2) + eps) * weight``.

One program owns whole rows: it reads those rows of ``x`` and the ``weight``, and writes the same
rows of ``y``. A row's reduction is a register (and shared-memory) tree inside one program, with
no atomics and no second launch. The column loop may give a row to several programs (``PARTS``):
each of them reduces the whole row in that same order and stores its own share of the row.

Two kernels (the launch layout that picks one is ``kernels.layout``): the tile kernel in
:mod:`kernels.jit.tile`, the column loop in :mod:`kernels.jit.loop`, the mutant codes and shared
helpers in :mod:`kernels.jit.parts`; this package names the family:

* :func:`rms_norm_tile_kernel`: each row is one power-of-two tile of ``BLOCK`` lanes in
  registers; a program takes ``ROWS`` consecutive rows (a ``ROWS x BLOCK`` tile: ``ROWS > 1``
  packs short rows). A single row of a width no 16-byte vector divides is peeled (head,
  aligned body, tail: :func:`_peeled_row`) so its accesses stay 16 bytes wide; a row just past
  a power of two may be held as two tiles, ``BLOCK`` then ``BLOCK2`` lanes
  (:func:`_split_rows`, or the peeled row's body), so its lanes past the row are few.
* :func:`rms_norm_loop_kernel`: each row in ``NUM_CHUNKS`` chunks of ``CHUNK`` lanes and two
  passes (square sums; then normalize, weight and store, re-reading the row from L1/L2), for
  rows too wide to keep in registers.

Numerics (``torch.nn.functional.rms_norm``'s): loads are upcast to float32 and the squares, their
sum, the mean, the rsqrt and both products stay float32, because the squares of a wide row span
many binades and a float16 sum overflows at 65504 (4096 values of magnitude 4 already do). The
result is rounded to the output dtype (the input dtype) once, at the store. The mean divides by
the true width, not by the tile's lanes: masked lanes load 0.0 and add nothing to the sum, but
they are not part of the row (the width is exact in float32, <= 2**24). ``eps`` sits inside the
square root, so an all-zero row gives ``rsqrt(eps)``, finite.

``MUTANT`` selects one named mutant (the module-level codes below, ``kernels.launcher`` maps the
names) or ``FAITHFUL``; every ``if MUTANT == CODE:`` is a compile-time branch, so the faithful
kernel carries none of the mutants' code. Import this module through ``kernels``, which decides
between the compiled path and the Triton interpreter before ``@triton.jit`` decorates.
"""

from __future__ import annotations

from kernels.jit import loop, parts, tile
from kernels.jit.loop import rms_norm_loop_kernel
from kernels.jit.parts import (
    EPS_OUTSIDE_ROOT,
    FAITHFUL,
    HALF_ACCUMULATION_BFLOAT16,
    HALF_ACCUMULATION_FLOAT16,
    MASKED_TAIL_INCLUSION,
    MISSING_EPSILON,
    MISSING_SQUARE,
    MISSING_WEIGHT,
    SUM_INSTEAD_OF_MEAN,
    UNMASKED_STORE,
    WRONG_ROW_STRIDE,
)
from kernels.jit.tile import rms_norm_tile_kernel

__all__ = [
    "EPS_OUTSIDE_ROOT",
    "FAITHFUL",
    "HALF_ACCUMULATION_BFLOAT16",
    "HALF_ACCUMULATION_FLOAT16",
    "KERNEL_FUNCTIONS",
    "MASKED_TAIL_INCLUSION",
    "MISSING_EPSILON",
    "MISSING_SQUARE",
    "MISSING_WEIGHT",
    "SUM_INSTEAD_OF_MEAN",
    "UNMASKED_STORE",
    "WRONG_ROW_STRIDE",
    "rms_norm_loop_kernel",
    "rms_norm_tile_kernel",
]

# Every @triton.jit function of the family, in the order their source enters the receipt's
# kernel source hash (kernels.instruments.compile_info.kernel_source).
KERNEL_FUNCTIONS = (
    parts._row_geometry,
    parts._lane_mask,
    parts._load,
    parts._store,
    parts._square,
    parts._rrms_of_sum,
    parts._rrms,
    parts._tile_mask,
    parts._placed,
    parts._body_mask,
    tile._peeled_row,
    tile._split_rows,
    tile.rms_norm_tile_kernel,
    loop._loop_square_chunk,
    loop._loop_store_chunk,
    loop._peeled_loop_row,
    loop._peeled_store_chunk,
    loop._chunked_row,
    loop._store_rrms,
    loop.rms_norm_loop_kernel,
)
