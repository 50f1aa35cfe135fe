"""Launch-configuration sweep for ``kernels.rmsnorm_fast`` on the shapes that miss their targets.

Each candidate :class:`kernels.rmsnorm_fast.FastConfig` is measured exactly like an
implementation of ``kernels.bench`` (same buffers rotated past 2x L2, same CUDA-graph or event
timing, parity against the float64 reference first), next to the copy ceiling, ``ours`` and the
default :func:`choose_config` layout (``fast_auto``). Output: one JSON file and a table on stdout.

    python3 -m kernels.bench_sweep --out sweep.json [--rep-ms 25]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from kernels import bench
from kernels.rmsnorm_fast import FastConfig, rms_norm_fast


def _rows(
    block: int, rows_per_program: int, num_warps: int, *, evict: bool = False, w_early: bool = True
) -> FastConfig:
    return FastConfig("rows", block, rows_per_program, num_warps, 0, evict, w_early)


def _cols(
    chunk: int, num_warps: int, programs: int, *, evict: bool = True, unroll: bool = False
) -> FastConfig:
    return FastConfig("cols", chunk, 1, num_warps, programs, evict, True, unroll)


def _unrolled(chunk: int, num_warps: int, programs: int) -> FastConfig:
    return _cols(chunk, num_warps, programs, unroll=True)


def _grid(block: int, rows_list: tuple[int, ...], warps: tuple[int, ...]) -> list[FastConfig]:
    return [_rows(block, r, w) for r in rows_list for w in warps]


def _early_late(block: int, warps: tuple[int, ...]) -> list[FastConfig]:
    return [_rows(block, 1, w, w_early=e) for w in warps for e in (False, True)]


def _evict(block: int, warps: tuple[int, ...]) -> list[FastConfig]:
    return [_rows(block, 1, w, evict=e) for w in warps for e in (False, True)]


# Reference implementations measured next to the candidates of every case.
REFERENCES = ("copy", "ours", "fast_auto", "torch_compile")


def sweep_cases_v3() -> list[tuple[bench.Shape, str, list[FastConfig], tuple[str, ...]]]:
    """Third sweep: the vector-width hint (1000), 4-warp 2048 rows, and compile-time unrolled
    two-pass column loops on the shapes where torch.compile still wins or 65536 misses 80%."""
    s = bench.Shape
    bf16, fp32 = "bfloat16", "float32"
    return [
        (s(4096, 1000), bf16, [_rows(1024, 4, 4), _rows(1024, 1, 4)], ()),
        (s(32768, 2048), bf16, [_rows(2048, 1, 8), _unrolled(1024, 4, 32768)], ()),
        (
            s(32768, 8192),
            bf16,
            [
                _unrolled(2048, 8, 32768),
                _unrolled(4096, 8, 32768),
                _unrolled(2048, 4, 32768),
                _unrolled(8192, 16, 32768),
            ],
            (),
        ),
        (s(32768, 4096), fp32, [_unrolled(1024, 4, 32768), _unrolled(2048, 8, 32768)], ()),
        (
            s(16384, 16384),
            fp32,
            [_unrolled(4096, 8, 16384), _unrolled(8192, 16, 16384), _unrolled(2048, 8, 16384)],
            (),
        ),
        (
            s(2048, 32768),
            bf16,
            [
                _unrolled(4096, 8, 2048),
                _unrolled(8192, 16, 2048),
                _unrolled(8192, 16, 264),
                _unrolled(2048, 8, 2048),
            ],
            (),
        ),
        (
            s(2048, 32768),
            fp32,
            [_unrolled(4096, 8, 2048), _unrolled(8192, 16, 2048), _unrolled(4096, 16, 264)],
            (),
        ),
        (
            s(2048, 65536),
            bf16,
            [
                _unrolled(16384, 32, 264),
                _unrolled(8192, 16, 264),
                _unrolled(8192, 32, 264),
                _unrolled(4096, 8, 2048),
                _unrolled(8192, 16, 2048),
            ],
            (),
        ),
        (
            s(2048, 65536),
            fp32,
            [
                _unrolled(16384, 32, 264),
                _unrolled(8192, 16, 264),
                _unrolled(8192, 32, 132),
                _unrolled(4096, 8, 2048),
            ],
            (),
        ),
    ]


def sweep_cases() -> list[tuple[bench.Shape, str, list[FastConfig], tuple[str, ...]]]:
    """Second sweep: (shape, dtype, candidates, extra references), by kind of problem."""
    s = bench.Shape
    bf16, fp32 = "bfloat16", "float32"
    return [
        (s(1, 4096), bf16, _early_late(4096, (4, 8, 16)), ("liger",)),
        (
            s(512, 4096),
            bf16,
            [*_early_late(4096, (4, 8, 16)), _rows(4096, 1, 8, evict=True)],
            ("liger",),
        ),
        (s(4096, 70), bf16, _grid(128, (2, 4, 8), (1, 2, 4)), ()),
        (s(4096, 1000), bf16, _grid(1024, (1, 2, 4), (2, 4, 8)), ()),
        (
            s(4096, 5125),
            bf16,
            [
                *_early_late(8192, (4, 8, 16, 32)),
                _cols(1024, 4, 4096, evict=False),
                _cols(2048, 4, 4096, evict=False),
                _cols(2048, 8, 4096, evict=False),
                _cols(1024, 4, 4096),
            ],
            (),
        ),
        (s(65536, 128), bf16, _grid(128, (8, 16, 32), (2, 4, 8)), ("liger",)),
        (s(65536, 128), fp32, _grid(128, (8, 16, 32), (4, 8)), ()),
        (s(65536, 256), bf16, _grid(256, (4, 8, 16), (2, 4, 8)), ("liger",)),
        (s(65536, 512), bf16, _grid(512, (2, 4, 8), (4, 8)), ()),
        (s(65536, 512), fp32, _grid(512, (2, 4, 8), (4, 8)), ()),
        (
            s(16384, 4096),
            bf16,
            [*_evict(4096, (4, 8, 16)), _rows(4096, 1, 8, w_early=False)],
            ("liger",),
        ),
        (
            s(32768, 5120),
            bf16,
            [
                *_evict(8192, (4, 8, 16)),
                _cols(1024, 4, 32768, evict=False),
                _cols(2048, 8, 32768, evict=False),
            ],
            (),
        ),
        (s(32768, 8192), bf16, _evict(8192, (8, 16, 32)), ()),
        (s(32768, 4096), fp32, [*_evict(4096, (8, 16)), _rows(4096, 1, 8, w_early=False)], ()),
        (s(16384, 16384), fp32, [*_evict(16384, (16, 32)), _cols(8192, 16, 264)], ()),
        (
            s(2048, 65536),
            bf16,
            [
                *[
                    _cols(c, w, p)
                    for c in (8192, 16384, 32768)
                    for w in (16, 32)
                    for p in (132, 264)
                ],
                _cols(16384, 16, 2048),
                _cols(8192, 16, 264, evict=False),
            ],
            (),
        ),
        (
            s(2048, 65536),
            fp32,
            [_cols(c, w, p) for c in (8192, 16384) for w in (16, 32) for p in (132, 264)],
            (),
        ),
        (
            s(2048, 32768),
            bf16,
            [
                _rows(32768, 1, 16),
                _rows(32768, 1, 32),
                _cols(4096, 8, 2048),
                _cols(8192, 16, 2048),
                _cols(8192, 16, 264),
                _cols(16384, 32, 264),
            ],
            (),
        ),
        (
            s(2048, 32768),
            fp32,
            [
                _rows(32768, 1, 32),
                _cols(4096, 8, 2048),
                _cols(8192, 16, 2048),
                _cols(8192, 16, 264),
            ],
            (),
        ),
    ]


def _label(config: FastConfig) -> str:
    flags = (
        ("_ev" if config.evict else "")
        + ("_unroll" if config.unroll else "")
        + ("" if config.w_early or config.kind == "cols" else "_wlate")
    )
    if config.kind == "rows":
        return f"rows_R{config.rows_per_program}_w{config.num_warps}{flags}"
    return f"cols_C{config.block}_w{config.num_warps}_P{config.programs}{flags}"


def _fast_preparer(
    config: FastConfig | None,
) -> Callable[[bench.Shape, torch.dtype, float, torch.device], bench.Prepared]:
    def prepare(
        shape: bench.Shape, dtype: torch.dtype, eps: float, device: torch.device
    ) -> bench.Prepared:
        def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
            return rms_norm_fast(x, weight, eps, config=config)

        return bench.Prepared(call=call, note=_label(config) if config else "choose_config")

    return prepare


def run_sweep(rep_ms: float, budget_s: float, cases: str = "v3") -> list[dict[str, Any]]:
    device = bench.require_cuda()
    l2_bytes, _ = bench._l2_bytes(device)
    generator = torch.Generator(device=device)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    chosen = sweep_cases_v3() if cases == "v3" else sweep_cases()
    for shape, dtype_key, candidates, extra in chosen:
        if time.perf_counter() - started > budget_s:
            print(f"sweep: budget spent, skipping {shape} {dtype_key}", file=sys.stderr)
            continue
        preparers = {
            "copy": bench.PREPARERS["copy"],
            "ours": bench.PREPARERS["ours"],
            "fast_auto": _fast_preparer(None),
            "torch_compile": bench.PREPARERS["torch_compile"],
        }
        for name in extra:
            preparers[name] = bench.PREPARERS[name]
        for config in candidates:
            preparers[_label(config)] = _fast_preparer(config)
        config_run = bench.BenchConfig(
            shapes=[("sweep", shape)],
            dtypes=[dtype_key],
            impls=list(preparers),
            rep_ms=rep_ms,
            warmup_ms=5.0,
            device=str(device),
        )
        generator.manual_seed(17 + shape.rows + shape.width)
        rows = bench._bench_one_shape(
            config_run,
            device,
            l2_bytes,
            "sweep",
            shape,
            bench.DTYPES[dtype_key],
            generator,
            {},
            preparers,
        )
        bench.finalize(rows)
        results.extend(rows)
        torch.cuda.empty_cache()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.bench_sweep")
    parser.add_argument("--out", required=True, help="JSON file for the sweep results")
    parser.add_argument("--rep-ms", type=float, default=25.0)
    parser.add_argument("--budget-s", type=float, default=150.0)
    parser.add_argument("--cases", choices=("v2", "v3"), default="v3")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run_sweep(args.rep_ms, args.budget_s, args.cases)
    report = {
        "schema_version": "rmsnorm-bench-sweep/1",
        "environment": bench.environment(bench.require_cuda()),
        "wall_s": time.perf_counter() - started,
        "results": results,
    }
    bench.write_json(report, args.out)
    print("\nsweep (median us, GB/s, % of copy):")
    for row in results:
        if row.get("status") == "ok":
            print(
                f"{row['rows']:>6}x{row['width']:<6} {row['dtype']:>8} {row['impl']:>26} "
                f"{row['median_us']:9.2f} {row['gbps']:7.0f} {row.get('pct_of_copy', 0):6.1f}%"
            )
        else:
            print(
                f"{row['rows']:>6}x{row['width']:<6} {row['dtype']:>8} {row['impl']:>26} "
                f"{row.get('status')} {str(row.get('note', ''))[:80]}"
            )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
