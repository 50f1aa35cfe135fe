"""``out=``'s contract at every door of the launcher: an ``out`` of another shape with the same
number of elements, another dtype or another device is refused by name, before anything is
written; an ``out`` whose rows the launcher cannot view without a copy is refused, or written
in place: the caller's tensor holds the result either way, never a temporary copy of it.

The doors: ``kernels.rms_norm`` (a signature's first call, which validates and plans, and its
second, which launches from the plan), :func:`kernels.launcher.validate` itself, and the
``torch.compile`` door :func:`kernels.op.traced_rms_norm` (called eagerly here).
"""

from __future__ import annotations

import pytest
import torch

import kernels
from kernels import launcher
from kernels.op import traced_rms_norm
from kernels.plans import clear_plans

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"
ROWS, WIDTH = 4, 8


def _x(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    generator = torch.Generator().manual_seed(5)
    return torch.randn(ROWS, WIDTH, generator=generator).to(dtype).to(DEVICE)


def _w(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.linspace(-2.0, 2.0, WIDTH, dtype=dtype, device=DEVICE)


def _rms_norm_twice(x, weight, out):
    """The first call (checks, then a plan) and the second (the plan's launch)."""
    clear_plans()
    kernels.rms_norm(x, weight, out=out)
    return kernels.rms_norm(x, weight, out=out)


def _validate(x, weight, out):
    return launcher.validate(x, weight, 1e-6, out)


def _traced(x, weight, out):
    return traced_rms_norm(x, weight, 1e-6, out)


DOORS = {"rms_norm": _rms_norm_twice, "validate": _validate, "traced": _traced}

# (case, out of x's numel in another shape): every one must be refused for its shape.
SAME_NUMEL_SHAPES = {
    "transposed_counts": (WIDTH, ROWS),
    "flat": (ROWS * WIDTH,),
    "rows_split": (2, 2, WIDTH),
    "leading_one": (1, ROWS, WIDTH),
    "wider_rows": (ROWS // 2, 2 * WIDTH),
}


@pytest.mark.parametrize("door", sorted(DOORS))
@pytest.mark.parametrize("shape", sorted(SAME_NUMEL_SHAPES))
def test_out_of_another_shape_with_the_same_numel_is_refused(door: str, shape: str) -> None:
    out = torch.full(SAME_NUMEL_SHAPES[shape], 7.0, device=DEVICE)
    with pytest.raises(ValueError, match=r"^out\.shape must equal x\.shape \(4, 8\); got "):
        DOORS[door](_x(), _w(), out)
    assert torch.all(out == 7.0), "a refused out was written"


OTHER_OUTS = [
    pytest.param(
        lambda: (_x(), _w(), torch.zeros(ROWS, WIDTH, dtype=torch.float16, device=DEVICE)),
        TypeError, r"^out\.dtype must equal x\.dtype \(float32\); got float16$", id="fp16_for_fp32",
    ),
    pytest.param(
        # The weight may be float32 for a bfloat16 x; the output is still x's dtype.
        lambda: (_x(torch.bfloat16), _w(), torch.zeros(ROWS, WIDTH, device=DEVICE)),
        TypeError, r"^out\.dtype must equal x\.dtype \(bfloat16\); got float32$",
        id="fp32_weight_dtype_for_bf16",
    ),
    pytest.param(
        lambda: (_x(), _w(), torch.zeros(ROWS, WIDTH, dtype=torch.float64, device=DEVICE)),
        TypeError, r"^out\.dtype must equal x\.dtype \(float32\); got float64$", id="fp64",
    ),
    pytest.param(
        lambda: (_x(), _w(), torch.zeros(ROWS, WIDTH, device="meta")),
        ValueError, r"^out must be on x's device .*; got meta$", id="meta_device",
    ),
]  # fmt: skip


@pytest.mark.parametrize("door", sorted(DOORS))
@pytest.mark.parametrize(("make", "error", "pattern"), OTHER_OUTS)
def test_out_of_another_dtype_or_device_is_refused(door, make, error, pattern) -> None:
    x, weight, out = make()
    with pytest.raises(error, match=pattern):
        DOORS[door](x, weight, out)
    if out.device.type != "meta":
        assert torch.all(out == 0), "a refused out was written"


def _expected(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    clear_plans()
    return kernels.rms_norm(x.contiguous(), weight)


def _holds_result_or_refused(door: str, x, weight, out) -> None:
    """The door either refuses ``out`` naming it (and leaves it alone) or writes the result
    into the caller's ``out`` itself."""
    before = out.clone()
    try:
        returned = DOORS[door](x, weight, out)
    except ValueError as err:
        assert str(err).startswith("out"), err
        assert torch.allclose(out, before, rtol=0, atol=0, equal_nan=True), "out was written"
        return
    if door == "validate":  # nothing launched: the view it checked must be out's own memory
        view = launcher.rows_view("out", out, WIDTH)
        assert view.data_ptr() == out.data_ptr()
        view[:] = 3.0
        assert torch.all(out == 3.0), "validate checked a copy of out"
        return
    assert returned is out
    assert torch.equal(out, _expected(x, weight).reshape(out.shape)), (
        "out does not hold the result: the kernel wrote somewhere else"
    )


def _non_viewable() -> torch.Tensor:
    """x's shape (2, 2, 8) as a transposed view: its leading dimensions do not flatten to one
    row stride, so its rows cannot be viewed as (4, 8) without a copy."""
    out = torch.full((2, 2, WIDTH), float("nan"), device=DEVICE).transpose(0, 1)
    assert not out.is_contiguous()
    with pytest.raises(RuntimeError):
        out.view(-1, WIDTH)
    return out


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_non_viewable_out_is_refused_or_holds_the_result(door: str) -> None:
    x = _x().reshape(2, 2, WIDTH)
    _holds_result_or_refused(door, x, _w(), _non_viewable())


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_padded_out_holds_the_result_and_its_padding_is_untouched(door: str) -> None:
    storage = torch.full((ROWS, WIDTH + 3), -5.0, device=DEVICE)
    out = storage[:, :WIDTH]
    assert not out.is_contiguous()
    _holds_result_or_refused(door, _x(), _w(), out)
    assert torch.all(storage[:, WIDTH:] == -5.0)


def test_the_public_door_refuses_the_non_viewable_out_by_name() -> None:
    # What the bundled launcher does today: it never copies out, it refuses.
    x = _x().reshape(2, 2, WIDTH)
    out = _non_viewable()
    with pytest.raises(ValueError, match=r"^out's leading dimensions must flatten to one row"):
        kernels.rms_norm(x, _w(), out=out)
    assert torch.isnan(out).all()


def test_in_place_out_is_x_and_holds_the_result() -> None:
    x = _x()
    expect = _expected(x, _w())
    clear_plans()
    assert kernels.rms_norm(x, _w(), out=x) is x
    assert torch.equal(x, expect)
