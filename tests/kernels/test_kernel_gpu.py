"""The compiled kernel on a CUDA device: parity, int64 row offsets, mutants, compiler output.

Every test here carries the ``gpu`` marker and skips without CUDA. Nothing here imports Qt or
``oracle``: the device image has torch, triton, numpy and pytest only.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_cases import (
    CASES,
    DTYPES,
    EVEN_TILE_KILLS,
    EVEN_TILE_ROWS,
    EVEN_TILE_TAIL_MUTANTS,
    EVEN_TILE_VARIANTS,
    KILL_DTYPE,
    KILLED_BY,
    LAYOUT_VARIANTS,
    ODD_WIDTHS,
    TORCH_DTYPES,
    assert_close,
    case_inputs,
    even_tile_inputs,
    expected_unmasked_overflow,
    torch_reference,
    verdict,
)

import kernels

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or kernels.MODE != "compiled",
        reason="needs a CUDA device and the compiled (non-interpreted) kernel",
    ),
]

GPU_WIDTHS = (*ODD_WIDTHS, 4096, 5120, 8192, 16384, 32768, 40000, 65536)
PATHS = ("auto", *kernels.KERNEL_PATHS)


def _inputs(rows: int, width: int, dtype: str, weight_dtype: str | None = None, seed: int = 0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, width, generator=generator, device="cuda", dtype=torch.float32) * 3.0
    weight = torch.randn(width, generator=generator, device="cuda", dtype=torch.float32)
    return x.to(TORCH_DTYPES[dtype]), weight.to(TORCH_DTYPES[weight_dtype or dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", GPU_WIDTHS)
def test_compiled_parity_with_torch_float64(dtype: str, width: int) -> None:
    x, weight = _inputs(64, width, dtype, seed=width)
    y = kernels.rms_norm(x, weight, 1e-6)
    torch.cuda.synchronize()
    assert_close(y, torch_reference(x, weight, 1e-6), dtype, "compiled", f"width {width}")


# (rows, width) that make choose_config pick each path on an H200: several rows per program,
# one row per program, the two-chunk column loop, the persistent column loop. A pair is the
# path of (fp32, 2-byte types).
AUTO_PATH_SHAPES = (
    (4096, 70, "multi_row"),
    (65536, 128, "multi_row"),
    (4099, 255, "multi_row"),
    (4096, 1000, ("one_row", "multi_row")),
    (4096, 4096, ("column_loop", "one_row")),
    (4096, 8192, "column_loop"),
    (300, 65536, "column_loop"),
)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("rows", "width", "path"), AUTO_PATH_SHAPES)
def test_compiled_parity_on_each_auto_path(
    rows: int, width: int, path: str | tuple[str, str], dtype: str
):
    x, weight = _inputs(rows, width, dtype, seed=rows + width)
    itemsize = x.element_size()
    config = kernels.choose_config(
        rows, width, itemsize, torch.cuda.get_device_properties(0).multi_processor_count
    )
    if isinstance(path, tuple):
        path = path[0] if itemsize == 4 else path[1]
    assert config.path == path
    y = kernels.rms_norm(x, weight, 1e-6)
    torch.cuda.synchronize()
    # Compare a sample of rows (first, last, a stride through the middle) in float64 on the CPU.
    index = torch.unique(
        torch.cat([torch.arange(0, rows, max(1, rows // 61)), torch.tensor([rows - 1])])
    )
    index = index.to("cuda")
    assert_close(
        y[index],
        torch_reference(x[index], weight, 1e-6),
        dtype,
        "compiled",
        f"{rows}x{width} on {config.path}",
    )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_compiled_float32_weight(dtype: str) -> None:
    x, weight = _inputs(33, 4096, dtype, weight_dtype="float32", seed=1)
    y = kernels.rms_norm(x, weight)
    assert y.dtype == x.dtype
    assert_close(y, torch_reference(x, weight, 1e-6), dtype, "compiled", "float32 weight")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_compiled_agrees_with_torch_native_within_one_ulp(dtype: str) -> None:
    # torch's own CUDA rms_norm in the same dtype; both round once from float32 arithmetic, so
    # they may differ by one ulp (different summation order), never more.
    x, weight = _inputs(128, 4096, dtype, seed=2)
    ours = kernels.rms_norm(x, weight).double()
    theirs = torch.nn.functional.rms_norm(x, (4096,), weight, 1e-6).double()
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)
    bound = ulp * torch.maximum(ours.abs(), theirs.abs()) + 1e-6
    assert torch.all((ours - theirs).abs() <= bound)


def test_padded_strides_3d_and_out_on_cuda() -> None:
    wide, weight = _inputs(12, 1100, "bfloat16", seed=3)
    x = wide[:, :1000]
    out_storage = torch.zeros(12, 1024, dtype=torch.bfloat16, device="cuda")
    out = out_storage[:, :1000]
    kernels.rms_norm(x, weight[:1000].contiguous(), out=out)
    assert torch.all(out_storage[:, 1000:] == 0)
    assert_close(out, torch_reference(x, weight[:1000], 1e-6), "bfloat16", "compiled", "padded")
    x3 = torch.randn(2, 3, 70, device="cuda", dtype=torch.float16)
    w3 = torch.randn(70, device="cuda", dtype=torch.float16)
    assert_close(
        kernels.rms_norm(x3, w3), torch_reference(x3, w3, 1e-6), "float16", "compiled", "3-D"
    )


def test_row_offsets_past_two_to_the_31_elements() -> None:
    # 32769 rows of 65536 bfloat16: the last row starts at element 2**31, which an int32 row
    # offset would wrap to a negative address. ~8.6 GB of input and output.
    rows, width = 2**15 + 1, kernels.MAX_WIDTH
    if torch.cuda.get_device_properties(0).total_memory < 24 * 2**30:
        pytest.skip("needs ~9 GiB of free device memory")
    x = torch.empty(rows, width, dtype=torch.bfloat16, device="cuda")
    x[:-2].fill_(0.25)
    x[-2:].copy_(torch.randn(2, width, device="cuda", dtype=torch.bfloat16))
    weight = torch.linspace(-2, 2, width, device="cuda", dtype=torch.bfloat16)
    y = kernels.rms_norm(x, weight)
    torch.cuda.synchronize()
    assert_close(y[-2:], torch_reference(x[-2:], weight, 1e-6), "bfloat16", "compiled", "last rows")
    assert_close(y[:1], torch_reference(x[:1], weight, 1e-6), "bfloat16", "compiled", "first row")
    del x, y
    torch.cuda.empty_cache()


@pytest.mark.parametrize(
    ("rows", "width"),
    [(64, 2053), (32, 4097), (16, 1025), (8, 5125), (33, 70), (4, 20000), (8, 8200), (8, 12288)],
)
def test_split_bodies_and_the_rstd_output_on_cuda(rows: int, width: int) -> None:
    # The rule's layout for each shape (2053, 4097 and 1025 split their peeled body; 8200 and
    # 12288 are wide split rows), with and without the rstd output: the same bits of y, and
    # rstd the rows' rrms.
    x = (torch.randn(rows, width, device="cuda") * 3.0).to(torch.bfloat16)
    weight = torch.randn(width, device="cuda").to(torch.bfloat16)
    y = kernels.rms_norm(x, weight, 1e-6)
    rstd = torch.full((rows,), float("nan"), device="cuda")
    y2 = torch.empty_like(x)
    kernels.launcher.launch_kernel(x, weight, y2, 1e-6, rstd=rstd)
    torch.cuda.synchronize()
    assert torch.equal(y, y2)
    assert_close(y, torch_reference(x, weight, 1e-6), "bfloat16", "compiled", f"{rows}x{width}")
    expected = torch.rsqrt(x.double().pow(2).mean(dim=1) + 1e-6)
    torch.testing.assert_close(rstd.double(), expected, rtol=2e-6, atol=0)


@pytest.mark.parametrize("stride", [2**31 - 8, 2**31 - 1])
def test_row_strides_at_the_bound_address_the_right_row(stride: int) -> None:
    # 2**31 - 8: a vector of 8 bfloat16 divides it, so the kernel gets stride / 8 and multiplies
    # back (a stride of 2**31 with that vector wrapped in 32 bits: refused by validate now).
    # ~4 GiB of device memory, touched at the two rows only.
    width = 4096
    storage = torch.empty(stride + width, dtype=torch.bfloat16, device="cuda")
    x = storage.as_strided((2, width), (stride, 1))
    x.copy_(torch.randn(2, width, device="cuda", dtype=torch.bfloat16) * 2.0)
    weight = torch.linspace(-2, 2, width, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(storage).as_strided((2, width), (stride, 1))
    kernels.rms_norm(x, weight, out=out)
    torch.cuda.synchronize()
    assert_close(out, torch_reference(x, weight, 1e-6), "bfloat16", "compiled", f"stride {stride}")
    del storage, out
    torch.cuda.empty_cache()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_real_kernel_passes_named_cases_on_cuda(case: str, dtype: str, path: str) -> None:
    x, weight, row_stride, eps = case_inputs(case, dtype)
    run = kernels.run_checked(
        x, weight, eps=eps, dtype=dtype, row_stride=row_stride, device="cuda", path=path
    )
    assert run.mode == "compiled"
    reasons = verdict(run, x, weight, eps, dtype)
    assert not reasons, f"path {run.path}:\n" + "\n".join(reasons)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mutant", sorted(KILLED_BY))
def test_each_mutant_killed_on_cuda(mutant: str, dtype: str, path: str) -> None:
    if mutant in KILL_DTYPE and dtype != KILL_DTYPE[mutant]:
        pytest.skip(f"{mutant} is killed by its case in {KILL_DTYPE[mutant]} (the real kernel "
                    "on float32; bfloat16's wider range does not overflow)")  # fmt: skip
    x, weight, row_stride, eps = case_inputs(KILLED_BY[mutant], dtype)
    run = kernels.run_checked(
        x,
        weight,
        eps=eps,
        dtype=dtype,
        row_stride=row_stride,
        mutant=mutant,
        device="cuda",
        path=path,
    )
    assert verdict(run, x, weight, eps, dtype), (
        f"{mutant} SURVIVED {KILLED_BY[mutant]} on cuda, path {run.path}"
    )


def _fp32_reasons_on_cuda(inputs, config, mutant: str | None, dtype: str = "float32") -> list[str]:
    """Why ``mutant`` (None: the real kernel) under ``config`` is wrong on ``inputs`` (x,
    weight, row_stride, eps) in ``dtype`` on cuda; empty when it passes."""
    x, weight, row_stride, eps = inputs
    run = kernels.run_checked(
        x,
        weight,
        eps=eps,
        dtype=dtype,
        row_stride=row_stride,
        mutant=mutant,
        device="cuda",
        config=config,
    )
    return verdict(run, x, weight, eps, dtype)


@pytest.mark.parametrize("variant", sorted(LAYOUT_VARIANTS))
@pytest.mark.parametrize("mutant", [None, *sorted(KILLED_BY)])
def test_layout_variants_real_and_mutants_on_cuda(mutant: str | None, variant: str) -> None:
    # The column-loop and streaming-tile variants of choose_config, compiled: the real kernel
    # passes every named case; each mutant is killed by its case.
    cases = sorted(CASES) if mutant is None else [KILLED_BY[mutant]]
    dtype = KILL_DTYPE.get(mutant, "float32")
    for case in cases:
        reasons = _fp32_reasons_on_cuda(
            case_inputs(case, dtype), LAYOUT_VARIANTS[variant], mutant, dtype
        )
        if mutant is None:
            assert not reasons, f"real kernel fails {case} on {variant}: {reasons}"
        else:
            assert reasons, f"{mutant} SURVIVED {case} on {variant} (cuda)"


@pytest.mark.parametrize("rows", EVEN_TILE_ROWS)
@pytest.mark.parametrize("variant", sorted(EVEN_TILE_VARIANTS))
@pytest.mark.parametrize("mutant", [None, *EVEN_TILE_KILLS, *EVEN_TILE_TAIL_MUTANTS])
def test_even_multi_row_tiles_on_cuda(mutant: str | None, variant: str, rows: int) -> None:
    # Unmasked multi-row tiles, compiled: the real kernel and the tail mutants (no tail to act
    # on) pass and store nothing out of bounds; every other mutant is killed.
    reasons = _fp32_reasons_on_cuda(even_tile_inputs(rows), EVEN_TILE_VARIANTS[variant], mutant)
    if mutant in EVEN_TILE_KILLS:
        assert reasons, f"{mutant} SURVIVED {rows}x256 on {variant} (cuda)"
    else:
        assert not reasons, f"{mutant or 'real kernel'} fails {rows}x256 on {variant}: {reasons}"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("pad", [0, 5])
def test_guard_catches_unmasked_store_on_cuda(pad: int, path: str) -> None:
    rows, width = 3, 70
    x = np.random.default_rng(4).standard_normal((rows, width))
    run = kernels.run_checked(
        x,
        np.ones(width),
        eps=1e-6,
        dtype="bfloat16",
        row_stride=width + pad,
        mutant="unmasked_store",
        device="cuda",
        path=path,
    )
    lanes = 96 if run.path == "column_loop" else run.block
    found = {(write.row, write.address) for write in run.oob_writes}
    assert found == expected_unmasked_overflow(rows, width, width + pad, lanes, guard=run.guard)


def test_cpu_device_in_compiled_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"device='cpu' needs the Triton interpreter"):
        kernels.run_checked(np.ones((1, 4)), np.ones(4), eps=1e-6, dtype="float32", device="cpu")


def test_compiler_output_for_the_device_in_hand() -> None:
    major, minor = torch.cuda.get_device_capability()
    info = kernels.compiler_output("bfloat16", 4096)
    assert info.target == f"sm_{major}{minor}"
    assert ".target sm_" in info.ptx
    assert info.registers is not None
    assert info.registers > 0
    assert info.spills is not None
    assert "registers: driver" in info.resource_source
    assert "spills: ptxas" in info.resource_source


def test_device_description_names_the_gpu() -> None:
    text = kernels.device_description()
    assert torch.cuda.get_device_name(0) in text
    assert "sm_" in text
