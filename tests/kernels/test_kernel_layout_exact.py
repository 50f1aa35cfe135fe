"""The kernel's per-row rstd and output, bit for bit, against a float32 emulation of its order
(``kernel_order``), in every launch layout the rule gives (one case per row of
``kernels.layout.RULES``) and every layout the check forces, on packed and padded row strides
(x and the output apart), with phantom rows (fewer rows than a program holds, and a row count
no multiple of it) wherever a layout has them, in guarded buffers (``kernels.run_checked``):
a store outside the output's rows or the rstd's, or a read outside x's rows, fails.

A rounding the kernel's documented order does not make (a mean by reciprocal multiply, a
reordered sum), a row read from the wrong place (a lost stride, in place or not) and a phantom
row stored all fail here, whatever else the layout does. Interpreter only: the interpreter's
tree is ``numpy.sum``, which the emulation reproduces; a GPU's tree is another order.
"""

from __future__ import annotations

import kernel_order
import numpy as np
import pytest
import torch

import kernels
from kernels import launcher
from kernels.instruments.coverage import configuration_of, launch_constexprs
from kernels.layout import KERNEL_PATHS, RULES, LaunchConfig, choose_config, forced_config, rule_for

pytestmark = pytest.mark.skipif(
    kernels.MODE != "interpreter", reason="the emulation reproduces the interpreter's tree"
)

TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
EPS = 1e-5

# (dtype, width, rows the rule sees): one case per row of RULES (a test holds that), and the
# rule's other branches: multi-row tiles of partial, full (EVEN) and unaligned rows, a one-row
# tile with a late weight, column loops peeled, unpeeled and EVEN.
RULE_CASES: tuple[tuple[str, int, int], ...] = (
    ("float32", 70, 100_000),  # short rows: multi-row, partial rows
    ("bfloat16", 64, 100_000),  # short rows: multi-row, EVEN
    ("float16", 255, 5_000),  # short rows: multi-row, unaligned
    ("float32", 37, 3),  # short rows: one row per program, peeled
    ("float32", 1027, 3),  # peeled fp32 tile
    ("float16", 7001, 3),  # 2-byte rows of one 8192-lane body: peeled loop
    ("bfloat16", 2501, 8193),  # odd 2-byte rows of one 4096-lane body, many rows: loop
    ("float16", 2501, 3),  # odd 2-byte rows of one 4096-lane body: peeled tile
    ("bfloat16", 2566, 3),  # even 2-byte rows of one 4096-lane body: unpeeled tile
    ("bfloat16", 1027, 3),  # peeled 2-byte tile: split body (1024 + 16 lanes), body <= 1024
    ("float16", 1100, 3),  # split body (1024 + 128 lanes) whose second tile holds elements
    ("float16", 2056, 3),  # split rows: 2048 + 16 lanes, unpeeled, a tail of 8
    ("float32", 1152, 3),  # split rows: 1024 + 128 lanes, unpeeled, no tail
    ("float16", 8200, 3),  # wide split rows: 8192 + 16 lanes, unpeeled, a tail of 8
    ("bfloat16", 520, 5_000),  # short rows: multi-row split, 512 + 16 lanes
    ("float16", 576, 3),  # short rows of one row per program: split, 512 + 64 lanes
    ("float32", 9000, 1000),  # column loop, unpeeled
    ("float32", 9001, 1000),  # column loop, peeled
    ("bfloat16", 12400, 3),  # few long rows: 4 chunks in 4 parts, a tail
    ("float32", 16384, 5),  # few long rows: 4 chunks in 4 parts, EVEN
    ("float16", 12290, 2),  # few long rows: 4 chunks in 3 parts (2 + 2), peeled on odd strides
    ("float32", 8192, 4096),  # column loop past LOOP_PROBLEM_BYTES: EVEN chunks
    ("float32", 65536, 2048),  # widest rows: 2 chunks of 32768 in 2 parts, EVEN
    ("float32", 50001, 2048),  # widest rows: 4 chunks of 16384 in 2 parts, peeled, a tail
    ("float32", 1000, 3),  # one-row tile, weight early
    ("bfloat16", 1000, 20_000),  # one-row tile, weight late
)

# The layouts the check forces (kernels.layout.forced_config), on a partial row, an odd one
# and a full (EVEN) one.
FORCED_CASES: tuple[tuple[str, str, int], ...] = tuple(
    (path, dtype, width)
    for path in KERNEL_PATHS
    for dtype, width in (("float32", 70), ("float16", 37), ("bfloat16", 64))
)


def _rule_config(dtype: str, width: int, rule_rows: int) -> LaunchConfig:
    return choose_config(rule_rows, width, ITEMSIZE[dtype])


def _forced(path: str, dtype: str, width: int) -> LaunchConfig:
    return forced_config(path, 3, width, ITEMSIZE[dtype])


def _row_counts(config: LaunchConfig) -> list[int]:
    """Rows to launch ``config`` on: one-row programs 4 rows (rows 1-3 need the row stride);
    several rows per program a lone phantom-filled program (1 row, and one fewer than a
    program), one row past a program and two full programs."""
    per = config.rows_per_program
    if per == 1:
        return [4]
    return sorted({1, per - 1, per + 1, 2 * per} - {0})


def _stride_pairs(width: int, dtype: str) -> list[tuple[int, int]]:
    """(x, out) row strides: packed; padded apart by 16 and 32 elements (the vector width and
    the peel unchanged); padded off the vector, agreeing modulo 16 bytes (a peel where the
    width allows one) and not agreeing (no peel: x's and out's heads would differ)."""
    full = 16 // ITEMSIZE[dtype]
    return [
        (width, width),
        (width + 16, width + 32),
        (width + 3, width + 3 + full),
        (width + 1, width + 2),
    ]


def _inputs(rows: int, width: int, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random rows and weight, exact in ``dtype`` (float64 arrays)."""
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((rows, width)) * 2.0).to(TORCH[dtype])
    w = torch.from_numpy(rng.uniform(-2.0, 2.0, width)).to(TORCH[dtype])
    return x.double().numpy(), w.double().numpy()


def _rounded(y32: np.ndarray, dtype: str) -> np.ndarray:
    """The float32 output rounded to ``dtype`` as the interpreter rounds it: to nearest for
    float16, toward zero (the low 16 bits dropped) for bfloat16."""
    if dtype == "float32":
        return y32.astype(np.float64)
    if dtype == "float16":
        return y32.astype(np.float16).astype(np.float64)
    bits = y32.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(np.float64)


def _differing(got: np.ndarray, want: np.ndarray) -> str:
    where = np.argwhere(got != want)
    pairs = [f"[{r},{c}] {got[r, c]!r} != {want[r, c]!r}" for r, c in where[:5]]
    return f"{len(where)} differ: " + "; ".join(pairs)


def _check_run(dtype: str, width: int, config: LaunchConfig, rows: int, strides) -> None:
    x_stride, y_stride = strides
    x, w = _inputs(rows, width, dtype, seed=width * 31 + rows + x_stride)
    run = kernels.run_checked(
        x, w, eps=EPS, dtype=dtype, row_stride=x_stride, out_row_stride=y_stride,
        config=config, rstd=True,
    )  # fmt: skip
    launched, constexprs = launch_constexprs(
        config, rows, width, x_stride, y_stride, ITEMSIZE[dtype]
    )
    where = f"{run.configuration.label} rows={rows} strides={strides}"
    assert run.configuration == configuration_of(dtype, launched.loop, constexprs), where
    assert run.oob_writes == (), f"{where}: stores outside the output: {run.oob_writes[:4]}"
    assert run.rstd_oob_writes == 0, f"{where}: stores outside the rstd output"
    assert all(count == 0 for _, count, _ in run.oob_reads), f"{where}: {run.oob_reads}"
    want = kernel_order.row_rrms(x, x_stride, EPS, launched.loop, constexprs)
    got = run.rstd.astype(np.float32)
    assert got.view(np.int32).tolist() == want.view(np.int32).tolist(), (
        f"{where}: rstd {got.tolist()} != emulated {want.tolist()}"
    )
    want_y = _rounded(kernel_order.output(x, w, want), dtype)
    assert np.array_equal(run.y, want_y), f"{where}: {_differing(run.y, want_y)}"


@pytest.mark.parametrize(("dtype", "width", "rule_rows"), RULE_CASES)
def test_each_rule_layout_is_the_emulated_order_bit_for_bit(dtype, width, rule_rows) -> None:
    config = _rule_config(dtype, width, rule_rows)
    for rows in _row_counts(config):
        for strides in _stride_pairs(width, dtype):
            _check_run(dtype, width, config, rows, strides)


@pytest.mark.parametrize(("path", "dtype", "width"), FORCED_CASES)
def test_each_forced_layout_is_the_emulated_order_bit_for_bit(path, dtype, width) -> None:
    config = _forced(path, dtype, width)
    assert config.path == path
    for rows in _row_counts(config):
        for strides in _stride_pairs(width, dtype):
            _check_run(dtype, width, config, rows, strides)


def test_the_cases_reach_every_rule_row_and_every_branch_of_both_kernels() -> None:
    # The two tests above are only as good as their cases: every row of the rule, and each
    # value of each compile-time branch of both kernels (the split body, the row mask, EVEN of
    # a multi-row tile and of a loop, peeled and unpeeled, the weight early and late).
    names = {rule_for(rows, width, ITEMSIZE[dtype]).name for dtype, width, rows in RULE_CASES}
    assert names == {rule.name for rule in RULES}
    seen: set[tuple[str, str, object]] = set()
    configs = [(d, w, _rule_config(d, w, r)) for d, w, r in RULE_CASES]
    configs += [(d, w, _forced(p, d, w)) for p, d, w in FORCED_CASES]
    for dtype, width, config in configs:
        for rows in _row_counts(config):
            for x_stride, y_stride in _stride_pairs(width, dtype):
                launched, constexprs = launch_constexprs(
                    config, rows, width, x_stride, y_stride, ITEMSIZE[dtype]
                )
                key = configuration_of(dtype, launched.loop, constexprs)
                seen.update((key.kernel, name, value) for name, value in vars(key).items())
    for kernel, name in [("tile", n) for n in ("multi_row", "peel", "w_early", "tail")] + [
        ("loop", "peel"), ("loop", "even"), ("loop", "tail"), ("tile", "stream"),
        ("loop", "parts"),
    ]:  # fmt: skip
        assert {(kernel, name, True), (kernel, name, False)} <= seen, (kernel, name)
    for name in ("split", "even", "row_mask"):
        assert ("tile", name, True) in seen, name
        assert ("tile", name, False) in seen, name
    assert {("tile", "vec", v) for v in (1, 2, 4, 8)} <= seen


@pytest.mark.parametrize(("dtype", "width", "rule_rows"), RULE_CASES)
def test_in_place_each_row_reads_its_own_input(dtype, width, rule_rows) -> None:
    # out is x itself, rows 16 elements apart: a row that reads another row's place (a lost or
    # wrong row stride) reads a row already normalized, or padding. Room for the phantom rows
    # of the last program follows the rows (and the rstd), and must stay as it was.
    config = _rule_config(dtype, width, rule_rows)
    rows = max(4, config.rows_per_program + 1)
    stride = width + 16
    room = config.rows_per_program + 1  # rows of room past the last row
    x, w = _inputs(rows, width, dtype, seed=width + 7)
    storage = torch.full(((rows + room) * stride,), -3072.0, dtype=TORCH[dtype])
    x2d = storage.as_strided((rows, width), (stride, 1))
    x2d.copy_(torch.from_numpy(x))
    untouched = storage.view(rows + room, stride).clone()
    untouched[:rows, :width] = float("nan")
    weight = torch.from_numpy(w).to(TORCH[dtype])
    rstd_room = torch.full((rows + room,), -3072.0)
    rstd = rstd_room[:rows]
    launcher.launch_kernel(x2d, weight, x2d, EPS, config=config, rstd=rstd)
    launched, constexprs = launch_constexprs(config, rows, width, stride, stride, ITEMSIZE[dtype])
    want = kernel_order.row_rrms(x, stride, EPS, launched.loop, constexprs)
    assert rstd.numpy().view(np.int32).tolist() == want.view(np.int32).tolist()
    got = x2d.double().numpy()
    want_y = _rounded(kernel_order.output(x, w, want), dtype)
    assert np.array_equal(got, want_y), _differing(got, want_y)
    after = storage.view(rows + room, stride).clone()
    after[:rows, :width] = float("nan")
    assert torch.equal(after.isnan(), untouched.isnan())
    assert torch.equal(after.nan_to_num(), untouched.nan_to_num()), "padding or room written"
    assert torch.all(rstd_room[rows:] == -3072.0), "an rstd stored past the rows"


def test_the_emulation_divides_by_the_width() -> None:
    # The emulation's own mean: a division, which a reciprocal multiply does not always match
    # (so the tests above can tell them apart), on rows where the two differ.
    total, width = np.float32(2.0), 3
    divided = kernel_order.rrms_of_sum(total, width, 0.0)
    assert divided == np.float32(1) / np.sqrt(total / np.float32(width))
    rng = np.random.default_rng(0)
    sums = rng.uniform(1, 100, 1000).astype(np.float32)
    by_division = sums / np.float32(70)
    by_reciprocal = sums * (np.float32(1) / np.float32(70))
    assert np.any(by_division != by_reciprocal)
