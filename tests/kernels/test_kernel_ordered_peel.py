"""The ordered peel (``LaunchConfig.ordered``, the column loop's ``ORDERED``): a peeled row keeps
its 16-byte accesses but is summed in the order of its unpeeled lanes, so its bits do not depend
on where it starts. Under the interpreter (``numpy.sum`` over the lanes as laid out) that order is
checkable exactly: every row, at every offset from a 16-byte boundary, gives the unpeeled
launch's bits, y and rstd, while the plain peel's differ. Compiled, the certificates hold it
(``tests/kernels/test_kernel_batch_invariant.py``, ``docs/gpu_check/invariant``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import kernels
from kernels.geometry import kernel_constexprs
from kernels.launcher import launch_kernel
from kernels.layout import LaunchConfig

DEVICE = torch.device("cuda" if kernels.MODE == "compiled" else "cpu")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# (name, config, width): a row over several chunks with a tail, a row shorter than one chunk,
# a row in three parts.
LAYOUTS = [
    ("loop", LaunchConfig(True, 256, 2, ordered=True), 1003),
    ("loop_one_chunk", LaunchConfig(True, 64, 1, stream_store=True, ordered=True), 37),
    ("loop_three_parts", LaunchConfig(True, 128, 2, row_parts=3, ordered=True), 517),
]  # fmt: skip


def _rows(width: int, dtype: str, rows: int = 9) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of widely spread magnitudes (so the order of additions shows in the last bit),
    contiguous: row r starts ``r * width`` elements in, every offset mod 16 bytes over 8 rows."""
    rng = np.random.default_rng(width)
    x = rng.standard_normal((rows, width)) * np.exp2(rng.integers(-6, 7, (rows, width)))
    w = rng.standard_normal(width)
    return (torch.tensor(x, dtype=DTYPES[dtype], device=DEVICE),
            torch.tensor(w, dtype=DTYPES[dtype], device=DEVICE))  # fmt: skip


def _launch(x: torch.Tensor, w: torch.Tensor, config: LaunchConfig):
    y = torch.empty_like(x)
    rstd = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    launched = launch_kernel(x, w, y, 1e-6, config=config, rstd=rstd)
    return y, rstd, dict(launched.layout)


@pytest.mark.skipif(kernels.MODE != "interpreter", reason="the interpreter's exact order")
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize(("name", "config", "width"), LAYOUTS, ids=[n for n, _, _ in LAYOUTS])
def test_an_ordered_peel_gives_the_unpeeled_rows_bits_wherever_a_row_starts(
    name: str, config: LaunchConfig, width: int, dtype: str
) -> None:
    x, w = _rows(width, dtype)
    y, rstd, layout = _launch(x, w, config)
    assert layout["PEEL"] > 0, layout  # the ordered path ran
    assert layout["ORDERED"], layout
    y_plain, rstd_plain, plain = _launch(x, w, dataclasses.replace(config, peel=False))
    assert plain["PEEL"] == 0
    assert not plain["ORDERED"]
    assert torch.equal(rstd, rstd_plain), (rstd - rstd_plain).abs().max()
    assert torch.equal(y, y_plain)
    # each row alone (at offset 0) has the bits it has in the batch
    for r in range(x.shape[0]):
        y_alone, rstd_alone, _ = _launch(x[r : r + 1].clone(), w, config)
        assert torch.equal(rstd_alone[0], rstd[r]), r
        assert torch.equal(y_alone[0], y[r]), r
    reference = torch.nn.functional.rms_norm(x.double(), (width,), w.double(), 1e-6)
    atol = 1e-5 if dtype == "float32" else 0.05
    assert torch.allclose(y.double(), reference, rtol=1e-2, atol=atol)


@pytest.mark.skipif(kernels.MODE != "interpreter", reason="the interpreter's exact order")
def test_the_plain_peel_of_the_same_rows_does_not_keep_the_unpeeled_bits() -> None:
    """The test above can fail: on these rows the plain peel sums in another order."""
    x, w = _rows(1003, "float32")
    _, rstd, _ = _launch(x, w, LaunchConfig(True, 256, 2))
    _, rstd_plain, _ = _launch(x, w, LaunchConfig(True, 256, 2, peel=False))
    assert not torch.equal(rstd, rstd_plain)


def test_ordered_is_off_where_the_row_is_not_peeled() -> None:
    ordered = LaunchConfig(True, 256, 2, ordered=True)
    assert kernel_constexprs(ordered, 1003, 1, 1, 4)["ORDERED"]
    assert not kernel_constexprs(ordered, 1003, 1, 1, 0)["ORDERED"]  # no peel: nothing to order
    assert not kernel_constexprs(dataclasses.replace(ordered, ordered=False), 1003, 1, 1, 4)[
        "ORDERED"
    ]


def test_a_tile_has_no_ordered_peel() -> None:
    tile = LaunchConfig(False, 128, 2, ordered=True)
    for peel in (8, 0):
        with pytest.raises(ValueError, match=r"^config.ordered is the column loop's \(loop=True\); "
                           r"got a tile$"):  # fmt: skip
            kernel_constexprs(tile, 70, 1, 1, peel)
    assert "ORDERED" not in kernel_constexprs(dataclasses.replace(tile, ordered=False), 70, 1, 1, 8)


@pytest.mark.parametrize("value", [1, 0, None, "yes"])
def test_ordered_must_be_a_bool(value: object) -> None:
    x = torch.ones(2, 70, device=DEVICE)
    y = torch.empty_like(x)
    config = LaunchConfig(True, 32, 2, ordered=value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^config.ordered must be a bool; got "):
        launch_kernel(x, torch.ones(70, device=DEVICE), y, 1e-6, config=config)
