"""What the alternatives launch: Inductor's generated Triton code and every kernel's launch shape.

For each shape: the source Inductor generates for ``torch.compile(F.rms_norm)`` (its reduction
loop, block sizes and eviction hints), and, from one profiled call of each implementation, the
CUDA kernels it launched with grid, block, registers, shared memory and the profiler's occupancy
estimate. A tuning aid: where an alternative is faster, this says how it cuts the work.

    python3 -m kernels.bench_alternatives --out alts.json [--shapes 2048x32768,...] \
        [--cases 2048x32768:bfloat16,4096x4096:float32,...]

Needs a CUDA device; writes one JSON file (code as text) and prints the launch table.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

import torch

from kernels import bench

DEFAULT_CASES = (
    "2048x32768:bfloat16,2048x32768:float32,4096x255:bfloat16,4096x4096:float32,"
    "32768x5120:float32,16384x16384:bfloat16,2048x65536:bfloat16,32768x2048:float32,"
    "32768x8192:bfloat16,4096x1000:float16"
)
IMPLS = ("ours", "torch_compile", "liger")
_ARGS = ("grid", "block", "registers per thread", "shared memory", "est. achieved occupancy %")


def inductor_code(shape: bench.Shape, dtype: torch.dtype, eps: float) -> str:
    """The Triton source Inductor generates for this shape (fresh compile)."""
    import torch._dynamo
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.utils import run_and_get_code
    from torch.nn import functional

    torch._dynamo.reset()
    compiled = torch.compile(
        lambda x, w: functional.rms_norm(x, (shape.width,), w, eps), dynamic=False, fullgraph=True
    )
    x = torch.randn(shape.rows, shape.width, device="cuda", dtype=dtype)
    w = torch.randn(shape.width, device="cuda", dtype=dtype)
    _, codes = run_and_get_code(compiled, x, w)
    picked = autotune_picks(codes, PyCodeCache.modules)
    return "\n".join(picked) + "\n\n# ----\n\n" + "\n\n# ----\n\n".join(codes)


def autotune_picks(codes: list[str], modules: list[Any]) -> list[str]:
    """The config Inductor's autotuner launched, per Triton kernel of this compile.

    ``modules`` are the output modules Inductor loaded (``PyCodeCache.modules``: every compile
    of the process); one belongs to this compile when its source file is one of ``codes``. Its
    kernels are the ``triton_*`` globals; after a call each keeps only the launcher it picked,
    whose ``config`` holds the block sizes (``kwargs``), ``num_warps`` and ``num_stages``.
    """
    picked = []
    for module in modules:
        try:
            with open(module.__file__, encoding="utf-8") as handle:
                if handle.read() not in codes:
                    continue
        except (AttributeError, OSError, TypeError):
            continue
        for name, kernel in sorted(vars(module).items()):
            launchers = getattr(kernel, "launchers", None)
            if not name.startswith("triton_") or not launchers:
                continue
            config = launchers[0].config
            picked.append(
                f"# autotuner pick: {name} {dict(config.kwargs)} num_warps={config.num_warps} "
                f"num_stages={config.num_stages} (of {len(getattr(kernel, 'configs', None) or [])})"
            )
    return picked


def launches(impl: str, shape: bench.Shape, dtype: torch.dtype, eps: float) -> list[dict[str, Any]]:
    """Kernels one call of ``impl`` launches, from a torch.profiler trace."""
    device = torch.device("cuda")
    prepared = bench.PREPARERS[impl](shape, dtype, eps, device)
    x = torch.randn(shape.rows, shape.width, device=device, dtype=dtype)
    w = torch.randn(shape.width, device=device, dtype=dtype)
    with prepared.steady():
        prepared.call(x, w, None)  # warm
        torch.cuda.synchronize()
        activities = [torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            prepared.call(x, w, None)
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as handle:
            trace = json.load(handle)
    found = []
    for event in trace.get("traceEvents", []):
        if event.get("cat") != "kernel":
            continue
        args = event.get("args", {})
        found.append(
            {"kernel": event.get("name"), "dur_us": event.get("dur")}
            | {key: args.get(key) for key in _ARGS}
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.bench_alternatives")
    parser.add_argument("--out", required=True)
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--eps", type=float, default=1e-6)
    args = parser.parse_args(argv)
    bench.require_cuda()
    report: dict[str, Any] = {"schema_version": "rmsnorm-bench-alternatives/1", "cases": []}
    for item in args.cases.split(","):
        text, _, dtype_key = item.partition(":")
        shape = bench.parse_shape(text)
        dtype = bench.DTYPES[dtype_key]
        case: dict[str, Any] = {"rows": shape.rows, "width": shape.width, "dtype": dtype_key}
        try:
            case["inductor_code"] = inductor_code(shape, dtype, args.eps)
        except Exception as err:  # a tuning aid: record and go on
            case["inductor_code"] = f"failed: {type(err).__name__}: {err}"
        case["launches"] = {}
        for impl in IMPLS:
            try:
                case["launches"][impl] = launches(impl, shape, dtype, args.eps)
            except Exception as err:
                case["launches"][impl] = f"failed: {type(err).__name__}: {err}"
        report["cases"].append(case)
        print(case["inductor_code"].split("# ----")[0].strip())
        for impl, found in case["launches"].items():
            if isinstance(found, str):
                print(f"{text} {dtype_key} {impl}: {found[:120]}")
                continue
            for k in found:
                print(
                    f"{text} {dtype_key} {impl:>13}: {str(k['kernel'])[:40]:40} "
                    f"{k['dur_us']} us grid {k['grid']} block {k['block']} "
                    f"regs {k['registers per thread']} smem {k['shared memory']} "
                    f"occ {k['est. achieved occupancy %']}"
                )
        torch.cuda.empty_cache()
    bench.write_json(report, args.out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
