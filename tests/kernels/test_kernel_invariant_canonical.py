"""``batch_invariant=True`` launches only packed rows from 16-byte-aligned bases
(:func:`kernels.plans.launch_canonical`): a padded batch, an offset base, an offset ``out`` or
weight, in place on an offset base, one row cut from a padded batch: the kernel sees a packed,
aligned copy and the caller gets the packed call's bits in its own tensor. Compiled, Triton
builds another variant for another row stride or pointer alignment, and for the mode's
multi-row tiles another reduction layout (TTGIR, sm_90); packed and aligned, every batch runs
the one variant the certificates prove. The default keeps the caller's strides (no copy)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import torch
from compiler_child import last_line_of

import kernels
from kernels import launcher, plans

DEVICE = torch.device("cuda" if kernels.MODE == "compiled" else "cpu")
ROWS, WIDTH = 5, 70  # the mode's layout for 70: a multi-row tile


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Every kernel launch's (x row stride, y row stride, x, y, weight base mod 16 bytes),
    and last x's base address."""
    seen: list[tuple[int, ...]] = []
    real = launcher.launch_kernel

    def spy(x2d, weight, y2d, eps, **kwargs):
        seen.append((x2d.stride(0), y2d.stride(0), x2d.data_ptr() % 16, y2d.data_ptr() % 16,
                     weight.data_ptr() % 16, x2d.data_ptr()))  # fmt: skip
        return real(x2d, weight, y2d, eps, **kwargs)

    monkeypatch.setattr(launcher, "launch_kernel", spy)
    return seen


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(70)
    x = torch.randn(ROWS, WIDTH, generator=generator) * 4.0
    w = torch.randn(WIDTH, generator=generator)
    return x.to(dtype).to(DEVICE), w.to(dtype).to(DEVICE)


def _offset(values: torch.Tensor, shift: int = 1) -> torch.Tensor:
    """``values`` in a buffer ``shift`` elements past a fresh (aligned) allocation."""
    flat = torch.empty(values.numel() + shift, dtype=values.dtype, device=values.device)
    view = flat[shift:].view(values.shape)
    view.copy_(values)
    return view


def _padded(values: torch.Tensor, pad: int = 3) -> torch.Tensor:
    buffer = torch.zeros(values.shape[0], values.shape[1] + pad, dtype=values.dtype,
                         device=values.device)  # fmt: skip
    buffer[:, : values.shape[1]] = values
    return buffer[:, : values.shape[1]]


def _padded_batch(x, w):
    return _padded(x), w, None


def _offset_base(x, w):
    return _offset(x), w, None


def _offset_out(x, w):
    return x, w, _offset(torch.zeros_like(x))


def _in_place_offset(x, w):
    moved = _offset(x)
    return moved, w, moved


def _offset_weight(x, w):
    return x, _offset(w), None


def _row_of_padded_batch(x, w):
    return _padded(x)[2:3], w, None


CASES: dict[str, Callable] = {
    "padded_batch": _padded_batch,
    "offset_base": _offset_base,
    "offset_out": _offset_out,
    "in_place_on_an_offset_base": _in_place_offset,
    "offset_weight": _offset_weight,
    "one_row_of_a_padded_batch": _row_of_padded_batch,
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bfloat16", "float32"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_mode_runs_every_batch_as_packed_aligned_rows(
    case: str, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans.clear_plans()
    x, w = _inputs(dtype)
    xin, win, out = CASES[case](x, w)
    rows = xin.shape[0]
    packed = kernels.rms_norm(xin.contiguous(), w, 1e-6, batch_invariant=True)
    before = xin.clone()
    seen = _spy(monkeypatch)
    for _ in range(2):  # a new signature's plan, then the planned door
        got = kernels.rms_norm(xin, win, 1e-6, out=out, batch_invariant=True)
        if out is not None:
            assert got is out
        assert torch.equal(got, packed)
        if out is not xin:
            assert torch.equal(xin, before)  # the input is never written
        else:
            xin.copy_(before)
    assert len(seen) == 2
    assert all(s[:5] == (WIDTH, WIDTH, 0, 0, 0) for s in seen), seen
    assert got.shape == (rows, WIDTH)


def test_a_packed_aligned_batch_launches_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    plans.clear_plans()
    x, w = _inputs(torch.float32)
    seen = _spy(monkeypatch)
    kernels.rms_norm(x, w, 1e-6, batch_invariant=True)
    assert [s[5] for s in seen] == [x.data_ptr()]  # no copy


def test_the_default_keeps_the_callers_strides(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spy sees a padded launch where nothing repacks it: the test above can fail."""
    plans.clear_plans()
    x, w = _inputs(torch.float32)
    seen = _spy(monkeypatch)
    kernels.rms_norm(_padded(x), w, 1e-6)
    assert seen[0][0] == WIDTH + 3


_LAYOUTS_CHILD = r"""
import json, re, sys
import kernels, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels import jit
from kernels.instruments.coverage import launch_constexprs
from kernels.plans import invariant_config

def tree_layouts(stride, aligned):
    config = invariant_config(70, 2)
    launched, constexprs = launch_constexprs(config, 16, 70, stride, stride, 2)
    constexprs.pop("WIDTH")
    constexprs.update(MUTANT=0, rstd_ptr=None, STORE_RSTD=False)
    signature = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "rows": "i32",
                 "width_v": "i32", "x_stride_v": "i32", "y_stride_v": "i32", "eps": "fp32"}
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    attrs = {(i,): [["tt.divisibility", 16]] for i in aligned}
    source = ASTSource(fn=jit.rms_norm_tile_kernel, signature=signature, constexprs=constexprs,
                       attrs=attrs)
    ttgir = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": launched.num_warps}).asm["ttgir"]
    aliases = dict(re.findall(r"^(#\w+) = (.*)$", ttgir, re.M))
    operands = re.findall(r"\}\) : \(tensor<[^,]*, (#\w+)>\) ->", ttgir)
    return [aliases[name] for name in operands]

print(json.dumps({"packed": tree_layouts(70, (0, 1, 2)), "padded": tree_layouts(71, (0, 1, 2)),
                  "offset": tree_layouts(70, (1,))}))
"""


@pytest.mark.timeout(120)
def test_another_stride_or_alignment_compiles_another_reduction_tree() -> None:
    """Why the mode repacks: the mode's multi-row tile for 70 bf16 rows, compiled for sm_90
    (no GPU needed), lays the row sum's operand out differently for a padded row stride (VEC 1
    against 2) and for x and y off a 16-byte boundary than for packed, aligned rows."""
    layouts = json.loads(last_line_of(_LAYOUTS_CHILD, timeout=110))
    assert len(layouts["packed"]) == 1  # the one tt.reduce: the rows' sums of squares
    assert layouts["padded"] != layouts["packed"]
    assert layouts["offset"] != layouts["packed"]


OP_CASES = ("padded_batch", "offset_base", "offset_weight", "one_row_of_a_padded_batch")


@pytest.mark.parametrize("case", OP_CASES)
def test_the_torch_op_runs_the_mode_on_packed_aligned_rows(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``torch.ops.rmsnorm_inspector.rms_norm`` (what torch.compile launches) repacks as the
    eager mode does: the same launch and the packed call's bits."""
    x, w = _inputs(torch.bfloat16)
    xin, win, _ = CASES[case](x, w)
    packed = kernels.rms_norm(xin.contiguous(), w, 1e-6, batch_invariant=True)
    seen = _spy(monkeypatch)
    got = torch.ops.rmsnorm_inspector.rms_norm(xin, win, 1e-6, True)
    assert torch.equal(got, packed)
    assert len(seen) == 1
    assert seen[0][:5] == (WIDTH, WIDTH, 0, 0, 0), seen


class _NoLaunch:
    """Stands in for ``wrap_triton(kernel)``: a launch that runs nothing."""

    def __getitem__(self, grid: tuple[int, ...]):
        return lambda *args, **constexprs: None


@pytest.mark.parametrize("batch_invariant", [True, False])
def test_the_traced_op_repacks_tensors_off_a_boundary(
    batch_invariant: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While torch.compile traces, tensors are fake and have no address; the storage offset
    stands for it. The mode launches an offset x and weight as aligned copies; the default
    launches them as they are (so the spy can see an offset launch)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from kernels import op

    seen: list[tuple[int, int, int]] = []
    real = launcher.launch_kernel

    def spy(x2d, weight, y2d, eps, **kwargs):
        seen.append((x2d.storage_offset(), x2d.stride(0), weight.storage_offset()))
        return real(x2d, weight, y2d, eps, **kwargs)

    monkeypatch.setattr(launcher, "launch_kernel", spy)
    monkeypatch.setattr(op, "_wrap", lambda kernel: _NoLaunch())
    with FakeTensorMode():
        x = torch.empty(ROWS * (WIDTH + 3) + 1, dtype=torch.bfloat16, device=DEVICE)
        padded_offset = x[1:].view(ROWS, WIDTH + 3)[:, :WIDTH]
        w = torch.empty(WIDTH + 1, dtype=torch.bfloat16, device=DEVICE)[1:]
        op.rms_norm_op(padded_offset, w, 1e-6, batch_invariant)
    expected = (0, WIDTH, 0) if batch_invariant else (1, WIDTH + 3, 1)
    assert seen == [expected]
