"""The ordered peel (``LaunchConfig.ordered``, the column loop's ``ORDERED``): a peeled row keeps
its 16-byte accesses but is summed in the order of its unpeeled lanes, so its bits do not depend
on where it starts. Under the interpreter (``numpy.sum`` over the lanes as laid out) that order is
checkable exactly: every row, at every offset from a 16-byte boundary, gives the unpeeled
launch's bits, y and rstd, while the plain peel's differ. Compiled, each row alone keeps its
batch bits (the test runs on a GPU too), and a one-row launch compiles the batch's gathers and
tree (TTGIR for sm_90, here)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from compiler_child import last_line_of

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


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_each_row_alone_has_its_bits_in_the_batch(dtype: str) -> None:
    """What the mode promises, compiled too: rows at every offset from a 16-byte boundary, each
    launched alone from an aligned copy, give the bits they have in the batch."""
    _, config, width = LAYOUTS[0]
    x, w = _rows(width, dtype)
    y, rstd, layout = _launch(x, w, config)
    assert layout["ORDERED"], layout
    for r in range(x.shape[0]):
        y_alone, rstd_alone, _ = _launch(x[r : r + 1].clone(), w, config)
        assert torch.equal(rstd_alone[0], rstd[r]), r
        assert torch.equal(y_alone[0], y[r]), r


_VARIANTS_CHILD = r"""
import json, re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels import jit
from kernels.instruments.coverage import launch_constexprs
from kernels.plans import invariant_config

def layouts(width, itemsize, rows_one):
    config = invariant_config(width, itemsize)
    launched, constexprs = launch_constexprs(config, 64, width, width, width, itemsize)
    constexprs.pop("WIDTH")
    assert constexprs["ORDERED"], constexprs
    constexprs.update(MUTANT=0, rstd_ptr=None, STORE_RSTD=False)
    pointer = "*bf16" if itemsize == 2 else "*fp32"
    signature = {"x_ptr": pointer, "w_ptr": pointer, "y_ptr": pointer, "rows": "i32",
                 "width_v": "i32", "x_stride_v": "i32", "y_stride_v": "i32", "eps": "fp32"}
    if rows_one:  # Triton specializes an int argument of 1: a launch of one row
        signature["rows"] = "constexpr"
        constexprs["rows"] = 1
    signature.update((name, "constexpr") for name in constexprs if name != "rows")
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2)}
    source = ASTSource(fn=jit.rms_norm_loop_kernel, signature=signature, constexprs=constexprs,
                       attrs=attrs)
    ttgir = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": launched.num_warps}).asm["ttgir"]
    aliases = dict(re.findall(r"^(#\w+) = (.*)$", ttgir, re.M))
    resolve = lambda text: re.sub(r"#\w+", lambda m: aliases.get(m.group(0), m.group(0)), text)
    reduces = re.findall(r"\}\) : \(tensor<[^,]*, (#\w+)>\) ->", ttgir)
    gathers = re.findall(r"tt\.gather .*?\} : (\(.*?\) -> tensor<[^>]*>)", ttgir)
    return {"reduce": [aliases[name] for name in reduces],
            "gather": [resolve(types) for types in gathers]}

print(json.dumps({f"{w}x{s}": [layouts(w, s, False), layouts(w, s, True)]
                  for w, s in ((3077, 2), (18433, 4))}))
"""


@pytest.mark.timeout(150)
def test_a_row_alone_compiles_the_batchs_gathers_and_tree() -> None:
    """Why the ordered peel is invariant compiled: the mode launches every batch packed from
    aligned bases (``kernels.plans.launch_canonical``), so the one variant left besides the
    batch's is a launch of one row (Triton specializes ``rows`` == 1). Compiled for sm_90 (no
    GPU needed), that variant gives the rotation's gathers and the row sum's tree the batch's
    layouts, and a gather is an exact permutation: every row sums the same values in the same
    tree, alone or in any batch."""
    found = json.loads(last_line_of(_VARIANTS_CHILD, timeout=140))
    for case, (batch, alone) in found.items():
        assert len(batch["reduce"]) == 1, case  # the one tt.reduce: the row's sum of squares
        assert len(batch["gather"]) == 3, case  # head and tail placed, the accumulator rotated
        assert alone == batch, case
