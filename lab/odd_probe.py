"""Where peeled 2-byte rows of odd widths lose time: variants that change one stage, on the H200.

A probe, not the product: its own one-row peeled kernel (the product's ``_peeled_row`` without
mutants) with one stage swapped per variant, timed against a copy of the same bytes:

- ``wmode=scalar``: the weight's body loaded from ``w + head`` (the product: scalar loads).
- ``wmode=aligned``: from ``w`` (16-byte loads, wrong values: what scalar loads cost).
- ``wmode=none``: no weight (wrong values).
- ``wmode=table``: from a table of the weight shifted by each head (``PEEL x BLOCK``, 16-byte
  loads, right values; the table is built outside the timed region).
- ``*_el``: the same with the weight loaded evict-last.
- ``rows=2``: two rows per program, both loaded before either is reduced.
- ``group``: ``R`` rows of one head class per program (rows ``PEEL`` apart share the head), one
  weight load for all of them (:func:`group_kernel`).
- ``split``: the body as two power-of-two tiles, so few lanes past the row hold registers
  (:func:`split_kernel`).

    python3 -m lab.odd_probe --out odd_probe.json --set split
    ncu --clock-control none --section Occupancy -k regex:split_kernel \
        python3 -m lab.odd_probe --ncu --out /tmp/x.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time

import torch
import triton
import triton.language as tl

WMODES = {
    "scalar": 0, "aligned": 1, "none": 2, "table": 3, "scalar_el": 4, "aligned_el": 5,
    "table_el": 6,
}  # fmt: skip


@triton.jit
def _probe_row(x_ptr, w_ptr, wt_ptr, y_ptr, row, width, stride, eps, BLOCK: tl.constexpr,
               PEEL: tl.constexpr, WMODE: tl.constexpr):  # fmt: skip
    x_start = row * stride
    head = tl.minimum(((PEEL - x_start % PEEL) % PEEL).to(tl.int32), width)
    body = tl.multiple_of((width - head) // PEEL * PEEL, PEEL)
    tail = head + body
    cols = tl.arange(0, BLOCK)
    edge = tl.arange(0, PEEL)
    x_body = x_ptr + tl.multiple_of(x_start + head, PEEL)
    y_body = y_ptr + tl.multiple_of(x_start + head, PEEL)
    body_in = cols < body
    head_in = edge < head
    tail_in = edge < width - tail
    xb = tl.load(x_body + cols, mask=body_in, other=0.0, eviction_policy="evict_first")
    xh = tl.load(x_ptr + x_start + edge, mask=head_in, other=0.0)
    xt = tl.load(x_ptr + x_start + tail + edge, mask=tail_in, other=0.0)
    return xb, xh, xt, head, body, tail, cols, edge, body_in, head_in, tail_in, y_body


@triton.jit
def _probe_finish(xb, xh, xt, w_ptr, wt_ptr, y_ptr, x_start, head, tail, cols, edge, body_in,
                  head_in, tail_in, y_body, width, eps, BLOCK: tl.constexpr,
                  WMODE: tl.constexpr):  # fmt: skip
    xb = xb.to(tl.float32)
    xh = xh.to(tl.float32)
    xt = xt.to(tl.float32)
    s = tl.sum(xb * xb, axis=0) + tl.sum(xh * xh, axis=0) + tl.sum(xt * xt, axis=0)
    rrms = 1.0 / tl.sqrt(s / width + eps)
    if WMODE == 0:
        wb = tl.load(w_ptr + head + cols, mask=body_in, other=0.0).to(tl.float32)
    elif WMODE == 1:
        wb = tl.load(w_ptr + cols, mask=body_in, other=0.0).to(tl.float32)
    elif WMODE == 3:
        wb = tl.load(wt_ptr + head * BLOCK + cols, mask=body_in, other=0.0).to(tl.float32)
    elif WMODE == 4:
        wb = tl.load(w_ptr + head + cols, mask=body_in, other=0.0, eviction_policy="evict_last")
        wb = wb.to(tl.float32)
    elif WMODE == 5:
        wb = tl.load(w_ptr + cols, mask=body_in, other=0.0, eviction_policy="evict_last")
        wb = wb.to(tl.float32)
    elif WMODE == 6:
        wb = tl.load(wt_ptr + head * BLOCK + cols, mask=body_in, other=0.0,
                     eviction_policy="evict_last").to(tl.float32)  # fmt: skip
    else:
        wb = 1.0
    wh = tl.load(w_ptr + edge, mask=head_in, other=0.0).to(tl.float32)
    wt = tl.load(w_ptr + tail + edge, mask=tail_in, other=0.0).to(tl.float32)
    out_ty = y_ptr.dtype.element_ty
    tl.store(y_body + cols, (xb * rrms * wb).to(out_ty), mask=body_in, cache_modifier=".cs")
    tl.store(y_ptr + x_start + edge, (xh * rrms * wh).to(out_ty), mask=head_in)
    tl.store(y_ptr + x_start + tail + edge, (xt * rrms * wt).to(out_ty), mask=tail_in)


@triton.jit
def probe_kernel(x_ptr, w_ptr, wt_ptr, y_ptr, rows, width, stride, eps, BLOCK: tl.constexpr,
                 PEEL: tl.constexpr, WMODE: tl.constexpr, ROWS: tl.constexpr):  # fmt: skip
    """``ROWS`` rows per program (1 or 2), each peeled; x and y share one row stride."""
    r0 = tl.program_id(0).to(tl.int64) * ROWS
    a = _probe_row(x_ptr, w_ptr, wt_ptr, y_ptr, r0, width, stride, eps, BLOCK, PEEL, WMODE)
    if ROWS == 2:
        r1 = tl.minimum(r0 + 1, rows - 1)
        b = _probe_row(x_ptr, w_ptr, wt_ptr, y_ptr, r1, width, stride, eps, BLOCK, PEEL, WMODE)
        _probe_finish(a[0], a[1], a[2], w_ptr, wt_ptr, y_ptr, r0 * stride, a[3], a[5], a[6],
                      a[7], a[8], a[9], a[10], a[11], width, eps, BLOCK, WMODE)  # fmt: skip
        _probe_finish(b[0], b[1], b[2], w_ptr, wt_ptr, y_ptr, r1 * stride, b[3], b[5], b[6],
                      b[7], b[8], b[9], b[10], b[11], width, eps, BLOCK, WMODE)  # fmt: skip
    else:
        _probe_finish(a[0], a[1], a[2], w_ptr, wt_ptr, y_ptr, r0 * stride, a[3], a[5], a[6],
                      a[7], a[8], a[9], a[10], a[11], width, eps, BLOCK, WMODE)  # fmt: skip


@triton.jit
def group_kernel(x_ptr, w_ptr, y_ptr, rows, width, stride, eps, BLOCK: tl.constexpr,
                 PEEL: tl.constexpr, R: tl.constexpr, W_EARLY: tl.constexpr):  # fmt: skip
    """``R`` rows of one head class per program: rows ``g*PEEL*R + c + PEEL*k``, ``k < R``.

    Rows ``PEEL`` apart start equally far from a 16-byte boundary, so the program's rows share
    one head and one load of the weight (scalar, from ``w + head``), broadcast over them.
    """
    p = tl.program_id(0).to(tl.int64)
    group = p // PEEL
    first = group * (PEEL * R) + p % PEEL
    k = tl.arange(0, R)
    row_ok = first + PEEL * k < rows
    x_start = first * stride
    head = tl.minimum(((PEEL - x_start % PEEL) % PEEL).to(tl.int32), width)
    body = tl.multiple_of((width - head) // PEEL * PEEL, PEEL)
    tail = head + body
    cols = tl.arange(0, BLOCK)
    edge = tl.arange(0, PEEL)
    row_off = (PEEL * k).to(tl.int64) * stride
    base = tl.multiple_of(x_start + head, PEEL)
    body_m = row_ok[:, None] & (cols < body)[None, :]
    head_m = row_ok[:, None] & (edge < head)[None, :]
    tail_m = row_ok[:, None] & (edge < width - tail)[None, :]
    b_off = row_off[:, None] + cols[None, :]
    e_off = row_off[:, None] + edge[None, :]
    if W_EARLY:
        wb = tl.load(w_ptr + head + cols, mask=cols < body, other=0.0)
    xb = tl.load(x_ptr + base + b_off, mask=body_m, other=0.0, eviction_policy="evict_first")
    xh = tl.load(x_ptr + x_start + e_off, mask=head_m, other=0.0)
    xt = tl.load(x_ptr + x_start + tail + e_off, mask=tail_m, other=0.0)
    xb = xb.to(tl.float32)
    xh = xh.to(tl.float32)
    xt = xt.to(tl.float32)
    s = tl.sum(xb * xb, axis=1) + tl.sum(xh * xh, axis=1) + tl.sum(xt * xt, axis=1)
    rrms = (1.0 / tl.sqrt(s / width + eps))[:, None]
    if not W_EARLY:
        wb = tl.load(w_ptr + head + cols, mask=cols < body, other=0.0)
    wh = tl.load(w_ptr + edge, mask=edge < head, other=0.0).to(tl.float32)
    wt = tl.load(w_ptr + tail + edge, mask=edge < width - tail, other=0.0).to(tl.float32)
    out_ty = y_ptr.dtype.element_ty
    yb = (xb * rrms * wb.to(tl.float32)[None, :]).to(out_ty)
    tl.store(y_ptr + base + b_off, yb, mask=body_m, cache_modifier=".cs")
    tl.store(y_ptr + x_start + e_off, (xh * rrms * wh[None, :]).to(out_ty), mask=head_m)
    tl.store(y_ptr + x_start + tail + e_off, (xt * rrms * wt[None, :]).to(out_ty), mask=tail_m)


@triton.jit
def split_kernel(x_ptr, w_ptr, y_ptr, rows, width, stride, eps, BLOCK_A: tl.constexpr,
                 BLOCK_B: tl.constexpr, PEEL: tl.constexpr, W_EARLY: tl.constexpr):  # fmt: skip
    """One peeled row whose body is two power-of-two tiles, ``BLOCK_A`` then ``BLOCK_B`` lanes
    (``BLOCK_A + BLOCK_B >= width``), so few lanes past the row hold registers."""
    row = tl.program_id(0).to(tl.int64)
    x_start = row * stride
    head = tl.minimum(((PEEL - x_start % PEEL) % PEEL).to(tl.int32), width)
    body = tl.multiple_of((width - head) // PEEL * PEEL, PEEL)
    tail = head + body
    ca = tl.arange(0, BLOCK_A)
    cb = BLOCK_A + tl.arange(0, BLOCK_B)
    edge = tl.arange(0, PEEL)
    base = tl.multiple_of(x_start + head, PEEL)
    ma = ca < body
    mb = cb < body
    head_in = edge < head
    tail_in = edge < width - tail
    if W_EARLY:
        wa = tl.load(w_ptr + head + ca, mask=ma, other=0.0)
        wb = tl.load(w_ptr + head + cb, mask=mb, other=0.0)
    xa = tl.load(x_ptr + base + ca, mask=ma, other=0.0, eviction_policy="evict_first")
    xb = tl.load(x_ptr + base + cb, mask=mb, other=0.0, eviction_policy="evict_first")
    xh = tl.load(x_ptr + x_start + edge, mask=head_in, other=0.0).to(tl.float32)
    xt = tl.load(x_ptr + x_start + tail + edge, mask=tail_in, other=0.0).to(tl.float32)
    xa = xa.to(tl.float32)
    xb = xb.to(tl.float32)
    s = (tl.sum(xa * xa, axis=0) + tl.sum(xb * xb, axis=0) + tl.sum(xh * xh, axis=0)
         + tl.sum(xt * xt, axis=0))  # fmt: skip
    rrms = 1.0 / tl.sqrt(s / width + eps)
    if not W_EARLY:
        wa = tl.load(w_ptr + head + ca, mask=ma, other=0.0)
        wb = tl.load(w_ptr + head + cb, mask=mb, other=0.0)
    wh = tl.load(w_ptr + edge, mask=head_in, other=0.0).to(tl.float32)
    wt = tl.load(w_ptr + tail + edge, mask=tail_in, other=0.0).to(tl.float32)
    out_ty = y_ptr.dtype.element_ty
    tl.store(y_ptr + base + ca, (xa * rrms * wa.to(tl.float32)).to(out_ty), mask=ma)
    tl.store(y_ptr + base + cb, (xb * rrms * wb.to(tl.float32)).to(out_ty), mask=mb)
    tl.store(y_ptr + x_start + edge, (xh * rrms * wh).to(out_ty), mask=head_in)
    tl.store(y_ptr + x_start + tail + edge, (xt * rrms * wt).to(out_ty), mask=tail_in)


def split_blocks(width: int) -> tuple[int, int]:
    """``(BLOCK_A, BLOCK_B)``: the largest power of two <= width, then one covering the rest."""
    a = 1 << (width.bit_length() - 1)
    return a, max(16, triton.next_power_of_2(max(1, width - a)))


def shifted_table(weight: torch.Tensor, peel: int, block: int) -> torch.Tensor:
    """``table[h, j] = weight[h + j]`` (0 past the row): the weight's body for head ``h``."""
    width = weight.numel()
    table = torch.zeros(peel, block, dtype=weight.dtype, device=weight.device)
    for h in range(peel):
        table[h, : width - h] = weight[h:]
    return table


NCU = [False]  # under a profiler: one launch per variant, no timing


def time_us(fn, buffers: int, rounds: int = 5, rep: int = 20) -> float:
    """Median over ``rounds`` of the mean launch time of ``rep`` passes over the buffers."""
    if NCU[0]:
        fn(0)
        return 1.0
    for i in range(buffers * 2):
        fn(i % buffers)
    torch.cuda.synchronize()
    medians = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(rep):
            for i in range(buffers):
                fn(i)
        end.record()
        end.synchronize()
        medians.append(start.elapsed_time(end) * 1000 / (rep * buffers))
    return statistics.median(medians)


def probe_case(rows: int, width: int, dtype: torch.dtype, variants, out: list) -> None:
    """Time the copy, the product (``y = rms_norm(x, w)``, as users call it) and each
    ``(kind, rows_per_program, warps, weight_early)`` variant of the probe kernels."""
    import kernels

    per_call = rows * width * dtype.itemsize * 2
    buffers = max(2, min(64, (1 << 29) // per_call))
    xs = [torch.randn(rows, width, device="cuda").to(dtype) for _ in range(buffers)]
    ys = [torch.empty_like(x) for x in xs]
    w = torch.randn(width, device="cuda").to(dtype)
    peel = 16 // dtype.itemsize
    block = triton.next_power_of_2(width)
    table = shifted_table(w, peel, block)
    copy_us = time_us(lambda i: ys[i].copy_(xs[i]), buffers)
    ref = torch.nn.functional.rms_norm(xs[0].float(), (width,), w.float(), 1e-6)

    def record(name, us, err):
        out.append({
            "rows": rows, "width": width, "dtype": str(dtype).split(".")[-1], "variant": name,
            "us": round(us, 2), "pct_of_copy": round(100 * copy_us / us, 1),
            "copy_us": round(copy_us, 2), "max_err": err,
        })  # fmt: skip
        print(json.dumps(out[-1]), flush=True)

    prod_us = time_us(lambda i: kernels.rms_norm(xs[i], w, 1e-6), buffers)
    record("product", prod_us, float((kernels.rms_norm(xs[0], w, 1e-6).float() - ref).abs().max()))
    for kind, per, warps, early in variants:
        if kind == "split":
            grid = (rows,)
            block_a, block_b = split_blocks(width)

            def launch(i, warps=warps, early=early, grid=grid, a=block_a, b=block_b):
                return split_kernel[grid](xs[i], w, ys[i], rows, width, width, 1e-6,
                                          BLOCK_A=a, BLOCK_B=b, PEEL=peel, W_EARLY=early,
                                          num_warps=warps)  # fmt: skip
        elif kind == "group":
            grid = (triton.cdiv(rows, peel * per) * peel,)

            def launch(i, per=per, warps=warps, early=early, grid=grid):
                return group_kernel[grid](xs[i], w, ys[i], rows, width, width, 1e-6, BLOCK=block,
                                   PEEL=peel, R=per, W_EARLY=early,
                                   num_warps=warps)  # fmt: skip
        else:
            grid = (triton.cdiv(rows, per),)

            def launch(i, kind=kind, per=per, warps=warps, grid=grid):
                return probe_kernel[grid](xs[i], w, table, ys[i], rows, width, width, 1e-6,
                                          BLOCK=block, PEEL=peel, WMODE=WMODES[kind],
                                          ROWS=per, num_warps=warps)  # fmt: skip

        ys[0].zero_()
        compiled = launch(0)
        torch.cuda.synchronize()
        err = float((ys[0].float() - ref).abs().max())
        tag = "early" if early else "late"
        record(f"{kind}_r{per}_w{warps}_{tag}", time_us(launch, buffers), err)
        ptx = compiled.asm["ptx"]
        out[-1]["ld_v4"] = ptx.count("ld.global.v4") + ptx.count("ld.global.L1::evict_first.v4")
        out[-1]["ld_b16"] = len(re.findall(r"ld\.global[\w:.]*\.b16", ptx))
        out[-1]["registers"] = compiled.n_regs


# (kind, rows per program, warps, weight early) per --set; the cases differ per set in the
# recorded files (in git: docs/benchmarks/probes/README.md at 197cd72).
VARIANT_SETS = {
    "wmode": [(m, 1, 4, False) for m in ("scalar", "aligned", "none", "table")]
    + [("scalar", 1, 8, False), ("table", 1, 8, False), ("scalar", 2, 8, False)],
    "group": [("scalar", 1, 4, False), ("none", 1, 4, False)]
    + [
        ("group", per, warps, early)
        for per, warps in ((2, 4), (2, 8), (4, 8), (4, 16), (8, 16))
        for early in (False, True)
    ],
    "eviction": [(m, 1, 4, False) for m in WMODES],
    "split": [("scalar", 1, 4, False), ("none", 1, 4, False)]
    + [("split", 1, warps, early) for warps in (2, 4, 8) for early in (False, True)],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.odd_probe")
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-s", type=float, default=200)
    parser.add_argument("--ncu", action="store_true", help="one case, for a profiler run")
    parser.add_argument("--set", choices=sorted(VARIANT_SETS), default="split")
    args = parser.parse_args(argv)
    bf16, fp16 = torch.bfloat16, torch.float16
    cases = [(4096, 5125, bf16), (12288, 2053, bf16), (8192, 4097, bf16), (4096, 5125, fp16),
             (4096, 6151, bf16), (16384, 1539, bf16), (6144, 3073, bf16), (8192, 3586, bf16),
             (12288, 2053, fp16), (4096, 5120, bf16)]  # fmt: skip
    if args.ncu:
        cases, NCU[0] = cases[:1], True
    variants = VARIANT_SETS[args.set]
    results: list = []
    began = time.monotonic()
    for rows, width, dtype in cases:
        if time.monotonic() - began > args.budget_s:
            break
        try:
            probe_case(rows, width, dtype, variants, results)
        except Exception as exc:
            results.append({"rows": rows, "width": width, "error": repr(exc)[:300]})
    with open(args.out, "w") as fh:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "triton": triton.__version__, "results": results}, fh, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
