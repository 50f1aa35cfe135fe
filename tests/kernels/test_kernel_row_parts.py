"""A column-loop row in several programs (``LaunchConfig.row_parts``, the kernel's ``PARTS``).

Every part sums the whole row in the one-program order and stores its own share of the chunks,
so splitting a row changes no bit of y or of the rstd; every element of y is written by exactly
one part and nothing past the rows is touched. The bounds: ``row_parts`` an int >= 1, only on
the column loop, and rows * row_parts programs at most 2**31 - 1 (CUDA's grid x limit).
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

import kernels
from kernels.geometry import kernel_constexprs
from kernels.launcher import launch_kernel
from kernels.layout import WIDEST_ROW_BYTES, LaunchConfig, choose_config, rule_for

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# (width, row stride, chunk): exact chunks, a masked last chunk, a peeled row (a stride no
# 16-byte vector divides) of masked chunks, and a row of one chunk and a bit.
GEOMETRIES = ((1024, 1024, 128), (1000, 1000, 128), (1003, 1005, 128), (770, 773, 64), (65, 65, 64))
PARTS = (2, 3, 4, 5, 8)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int16)


def _run(x, w, rows, width, stride, config):
    """y (a strided view over a NaN-filled buffer with 7 guard elements past the last row),
    the buffer and the rstd of one launch of ``config``."""
    buffer = torch.full((rows * stride + 7,), float("nan"), dtype=x.dtype)
    y = buffer[: (rows - 1) * stride + width].as_strided((rows, width), (stride, 1))
    rstd = torch.full((rows,), float("nan"))
    launched = launch_kernel(x, w, y, 1e-5, config=config, rstd=rstd)
    return y, buffer, rstd, launched


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("width", "stride", "chunk"), GEOMETRIES)
def test_a_row_in_parts_gives_the_bits_of_one_program(dtype, width, stride, chunk) -> None:
    rows = 3
    source = torch.randn(rows * stride, generator=torch.Generator().manual_seed(width))
    x = source.to(dtype)[: (rows - 1) * stride + width].as_strided((rows, width), (stride, 1))
    w = torch.randn(width, generator=torch.Generator().manual_seed(1)).to(dtype)
    whole = LaunchConfig(True, chunk, 2, stream_store=True)
    y1, _, rstd1, first = _run(x, w, rows, width, stride, whole)
    expected = torch.nn.functional.rms_norm(x.double(), (width,), w.double(), 1e-5)
    torch.testing.assert_close(y1.double(), expected, atol=2e-2, rtol=2e-2)
    for parts in PARTS:
        config = LaunchConfig(True, chunk, 2, stream_store=True, row_parts=parts)
        y, buffer, rstd, launched = _run(x, w, rows, width, stride, config)
        assert launched.grid == rows * parts
        assert dict(launched.layout)["PARTS"] == parts
        assert launched.peel == first.peel
        assert torch.equal(_bits(y), _bits(y1)), parts
        assert torch.equal(rstd, rstd1), parts
        # Nothing between the rows (the stride's padding) or past the last row is written.
        written = torch.zeros(buffer.numel(), dtype=torch.bool)
        for row in range(rows):
            written[row * stride : row * stride + width] = True
        assert torch.isnan(buffer[~written].float()).all(), parts


def test_the_loop_takes_row_parts_and_the_grid_multiplies() -> None:
    config = LaunchConfig(True, 64, 1, row_parts=3)
    assert config.grid(5) == 15
    constexprs = kernel_constexprs(config, 192, 1, rows=5)
    assert constexprs["PARTS"] == 3
    assert constexprs["EVEN"]
    # 4 chunks in 3 parts: parts of 2, the last one a chunk past the row, so masked.
    assert not kernel_constexprs(config, 256, 1, rows=5)["EVEN"]
    assert kernel_constexprs(LaunchConfig(True, 64, 1), 256, 1)["PARTS"] == 1


@pytest.mark.parametrize("value", [0, -1, True, 2.0])
def test_row_parts_that_is_not_an_int_of_at_least_one_is_refused(value) -> None:
    message = f"config.row_parts must be an int >= 1; got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        kernel_constexprs(LaunchConfig(True, 64, 1, row_parts=value), 256, 1)


def test_a_tile_refuses_row_parts() -> None:
    kernel_constexprs(LaunchConfig(False, 256, 1, row_parts=1), 256, 1)
    message = "config.row_parts must be 1 on a tile (loop=False); got 2"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        kernel_constexprs(LaunchConfig(False, 256, 1, row_parts=2), 256, 1)


def test_the_grid_bound_is_two_to_the_31_minus_one_programs() -> None:
    config = LaunchConfig(True, 64, 1, row_parts=2)
    rows = (2**31 - 1) // 2  # 2**30 - 1 rows: 2**31 - 2 programs
    assert kernel_constexprs(config, 256, 1, rows=rows)["PARTS"] == 2
    three = LaunchConfig(True, 64, 1, row_parts=3)
    kernel_constexprs(three, 256, 1, rows=715827882)  # 2**31 - 2 programs
    message = "config.row_parts 3 gives 2147483649 programs for 715827883 rows; at most 2147483647"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        kernel_constexprs(three, 256, 1, rows=715827883)


def test_rows_past_192_kib_run_in_two_parts_and_the_bound_is_exact() -> None:
    # "widest rows": column-loop rows of more than WIDEST_ROW_BYTES, beyond one row per SM.
    assert WIDEST_ROW_BYTES == 192 * 1024
    assert rule_for(2048, 49152, 4).name == "column loop"  # 192 KiB: one program per row
    assert choose_config(2048, 49152, 4).row_parts == 1
    assert rule_for(2048, 49153, 4).name == "widest rows"  # a lane more: two, peeled chunks
    assert choose_config(2048, 49153, 4) == LaunchConfig(
        True, 16384, 32, stream_store=True, row_parts=2
    )
    assert choose_config(2048, 65536, 4) == LaunchConfig(
        True, 32768, 32, stream_store=True, row_parts=2
    )
    # 2-byte rows are 128 KiB at most; a row per SM or fewer stays with "few long rows".
    assert rule_for(2048, 65536, 2).name == "column loop"
    assert rule_for(132, 65536, 4).name == "few long rows"
    assert rule_for(133, 65536, 4).name == "widest rows"


@pytest.mark.parametrize("width", [65536, 50001])
def test_the_widest_rows_layout_gives_the_bits_of_one_program_and_in_place(width) -> None:
    rows = 2
    config = choose_config(2048, width, 4)
    assert config.row_parts == 2
    x = torch.randn(rows, width, generator=torch.Generator().manual_seed(width))
    w = torch.randn(width, generator=torch.Generator().manual_seed(2))
    y, _, rstd, launched = _run(x, w, rows, width, width, config)
    assert launched.grid == 2 * rows
    one, _, rstd1, _ = _run(x, w, rows, width, width, dataclasses.replace(config, row_parts=1))
    assert torch.equal(_bits(y), _bits(one))
    assert torch.equal(rstd, rstd1)
    expected = torch.nn.functional.rms_norm(x.double(), (width,), w.double(), 1e-5)
    torch.testing.assert_close(y.double(), expected, atol=1e-5, rtol=1e-5)
    into = x.clone()  # y is x: the launch keeps each row in one program
    assert launch_kernel(into, w, into, 1e-5, config=config).grid == rows
    assert torch.equal(_bits(into), _bits(one))


def test_in_place_a_row_stays_in_one_program() -> None:
    # y is x: a part's stores would overwrite the row its other parts are still summing.
    rows, width = 3, 12400
    assert rule_for(rows, width, 2).name == "few long rows"
    assert choose_config(rows, width, 2).row_parts == 4
    x = torch.randn(rows, width, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    w = torch.randn(width, generator=torch.Generator().manual_seed(6)).to(torch.bfloat16)
    expected = kernels.rms_norm(x, w, 1e-5)
    config = LaunchConfig(True, 4096, 2, stream_store=True, row_parts=4)
    into = x.clone()
    launched = launch_kernel(into, w, into, 1e-5, config=config)
    assert launched.config.row_parts == 1
    assert launched.grid == rows
    assert torch.equal(_bits(into), _bits(expected))
    # Through the public door's plan: out= with x's strides keeps one program per row.
    into = x.clone()
    assert kernels.rms_norm(into, w, 1e-5, out=into) is into
    assert torch.equal(_bits(into), _bits(expected))
    other = torch.empty_like(x)
    kernels.rms_norm(x, w, 1e-5, out=other)
    assert torch.equal(_bits(other), _bits(expected))
