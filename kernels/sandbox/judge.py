"""The inspector's judgement of one run of a user's kernel, made from the raw memory the kernel's
child process hands back, never by the child.

The child (:mod:`kernels.sandbox.usercode_child`) builds the guarded buffers with
:func:`guarded_buffers`, runs the launcher and sends back, as raw bits, the whole output buffer
with its guards, the whole x buffer and the whole weight buffer, with what it returned. Here the
same buffers are built again from what was sent, and every bit is compared: a changed output
guard is an out-of-bounds store, a changed x element a store into the input, a changed weight
element a kernel that wrote its weight. What the child *says* about its run (the returned
tensor's dtype, layout and memory) is checked against the contract here too, by name; a kernel
can forge what its own process sends, but nothing of this process runs where it can reach.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

#: Integer views of each kernel dtype's bits (torch and numpy agree on these widths).
_BITS = {2: "int16", 4: "int32"}


def guarded_buffers(
    x: np.ndarray,
    weight: np.ndarray,
    *,
    dtype: str,
    guard: int,
    poison: float,
    x_stride: int,
    y_stride: int,
    device: Any = "cpu",
) -> tuple[Any, Any, Any]:
    """``(x buffer, weight buffer, output buffer)``: torch tensors of ``dtype`` on ``device``
    filled with ``poison``, ``guard`` elements before the data, between rows (the stride's
    padding) and after it, with ``x`` and ``weight`` in their places."""
    import torch

    torch_dtype = getattr(torch, dtype)
    rows, width = x.shape

    def buffer(elements: int) -> torch.Tensor:
        return torch.full((2 * guard + elements,), poison, dtype=torch_dtype, device=device)

    x_buffer, y_buffer, w_buffer = buffer(rows * x_stride), buffer(rows * y_stride), buffer(width)
    x_buffer[guard:].as_strided((rows, width), (x_stride, 1)).copy_(torch.tensor(x))
    w_buffer[guard : guard + width].copy_(torch.tensor(weight))
    return x_buffer, w_buffer, y_buffer


def bits(tensor: Any) -> np.ndarray:
    """A tensor's elements as integers of its width, on the host (bfloat16 has no numpy dtype)."""
    import torch

    integer = getattr(torch, _BITS[tensor.element_size()])
    return tensor.detach().view(integer).cpu().numpy()


@dataclasses.dataclass(frozen=True)
class Judged:
    """What the raw buffers of one run show.

    Attributes:
        out_of_bounds: indices into the output buffer (guard included) whose bits changed
            outside the output's rows.
        into_x: indices into the x buffer whose bits changed.
        into_weight: indices into the weight buffer whose bits changed.
        broken: the contract the run broke, in words (empty: none).
    """

    out_of_bounds: tuple[int, ...]
    into_x: tuple[int, ...]
    into_weight: tuple[int, ...]
    broken: tuple[str, ...]


def judge(
    header: dict[str, Any],
    x: np.ndarray,
    weight: np.ndarray,
    raw: tuple[np.ndarray, np.ndarray, np.ndarray],
    returned: dict[str, Any],
) -> Judged:
    """Judge one run from the buffers sent back (``raw``: output, x and weight buffers as bits)
    and what the child says it returned (``returned``: ``dtype``, ``column_stride``,
    ``aliases``), against the run's request (``header``: dtype, guard, poison, strides).

    Raises:
        ValueError: a buffer of another size or width than the request makes (the child's
            answer is not this protocol's).
    """
    dtype = str(header["dtype"])
    guard, y_stride = int(header["guard"]), int(header["y_stride"])
    expected = guarded_buffers(
        np.asarray(x, dtype=np.float64),
        np.asarray(weight, dtype=np.float64),
        dtype=dtype,
        guard=guard,
        poison=float(header["poison"]),
        x_stride=int(header["x_stride"]),
        y_stride=y_stride,
    )
    y_bits, x_bits, w_bits = (_checked(got, bits(want), name) for got, want, name in
                              zip(raw, (expected[2], expected[0], expected[1]),
                                  ("output", "x", "weight"), strict=True))  # fmt: skip
    rows, width = x.shape
    data = np.zeros(y_bits.shape, dtype=bool)
    data[guard:].reshape(-1)[: rows * y_stride].reshape(rows, y_stride)[:, :width] = True
    poison_bits = bits(expected[2])
    out_of_bounds = np.flatnonzero((y_bits != poison_bits) & ~data)
    into_x = np.flatnonzero(x_bits != bits(expected[0]))
    into_weight = np.flatnonzero(w_bits != bits(expected[1]))
    broken = contract_broken(dtype, returned, len(into_weight))
    return Judged(
        tuple(int(i) for i in out_of_bounds),
        tuple(int(i) for i in into_x),
        tuple(int(i) for i in into_weight),
        broken,
    )


def _checked(got: np.ndarray, want: np.ndarray, name: str) -> np.ndarray:
    if got.dtype != want.dtype or got.shape != want.shape:
        raise ValueError(
            f"the kernel's process sent a {name} buffer of {got.shape} {got.dtype}, not the "
            f"{want.shape} {want.dtype} it was given"
        )
    return got


def contract_broken(dtype: str, returned: dict[str, Any], weight_writes: int) -> tuple[str, ...]:
    """What a run broke of ``FUNCTION(x, weight, eps, out=None) -> y``: ``y`` of ``x``'s dtype,
    with contiguous columns, in memory of its own (not x's, not the weight's), the weight left
    as it was given."""
    broken = []
    got = str(returned.get("dtype", ""))
    if got != dtype:
        broken.append(f"returned {got or 'an unknown dtype'} for a {dtype} input")
    if returned.get("column_stride") != 1:
        broken.append(
            f"returned a tensor whose columns are not contiguous (column stride "
            f"{returned.get('column_stride')!s:.20})"
        )
    aliases = [str(a)[:20] for a in returned.get("aliases", []) if isinstance(a, str)]
    if aliases:
        broken.append(f"returned a tensor in the memory of {' and '.join(aliases)}")
    if weight_writes:
        broken.append(f"changed {weight_writes} element(s) of its weight buffer")
    return tuple(broken)
