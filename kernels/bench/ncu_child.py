"""The call ``bench --ncu`` profiles:
``python -m kernels.bench.ncu_child ROWS WIDTH DTYPE EPS [FILE.py:FUNCTION]``.

Run under ``ncu --profile-from-start off`` (:mod:`kernels.bench.ncu`): the input is made and
the launcher warmed up (compiled, its launch plan built) outside the profiled range, then one
call runs between ``cudaProfilerStart`` and ``cudaProfilerStop``, so ncu sees that call's
kernels and nothing else. The launcher is ``kernels.rms_norm``, or the user's kernel named by
the fifth argument (``bench --kernel``'s candidate, imported as the benchmark imports it, after
the benchmark's preflight passed). Prints nothing on stdout (ncu's CSV goes there); one line on
stderr. Exit 0 profiled, 1 the call failed (its error on stderr), 2 bad arguments.
"""

from __future__ import annotations

import math
import sys
from typing import Any

#: Calls before the profiled one: the first compiles, the next use the launch plan it made.
WARMUP_CALLS = 3
_DTYPES = ("bfloat16", "float16", "float32")


USAGE = "usage: python -m kernels.bench.ncu_child ROWS WIDTH DTYPE EPS [FILE.py:FUNCTION]"


def parse_args(argv: list[str]) -> tuple[int, int, str, float, str | None]:
    """``(rows, width, dtype, eps, kernel spec or None)`` from the command line.

    Raises:
        ValueError: the wrong number of arguments, or one out of its range (the message names it).
    """
    if len(argv) not in (4, 5):
        raise ValueError(USAGE)
    rows_text, width_text, dtype, eps_text = argv[:4]
    try:
        rows, width, eps = int(rows_text), int(width_text), float(eps_text)
    except ValueError:
        raise ValueError(f"ROWS and WIDTH must be integers and EPS a number; got {argv}") from None
    if rows < 1 or width < 1:
        raise ValueError(f"ROWS and WIDTH must be >= 1; got {rows} x {width}")
    if dtype not in _DTYPES:
        raise ValueError(f"DTYPE must be one of {', '.join(_DTYPES)}; got {dtype!r}")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"EPS must be a finite number > 0; got {eps_text!r}")
    if len(argv) == 5:
        from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec

        try:
            parse_kernel_spec(argv[4])
        except KernelSpecError as err:
            raise ValueError(str(err)) from None
    return rows, width, dtype, eps, (argv[4] if len(argv) == 5 else None)


def _launcher(kernel: str | None) -> Any:
    """``kernels.rms_norm``, or the user's launcher of ``kernel`` (``FILE.py:FUNCTION``).

    Raises:
        ValueError: the spec or the file is not a kernel (the message says why).
    """
    if kernel is None:
        import kernels

        return kernels.rms_norm
    from kernels.bench.candidate import CandidateError, load_launcher
    from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec

    try:
        return load_launcher(parse_kernel_spec(kernel))
    except (KernelSpecError, CandidateError) as err:  # the file changed or went since parse_args
        raise ValueError(str(err)) from None


def main(argv: list[str]) -> int:
    try:
        rows, width, dtype_name, eps, kernel = parse_args(argv)
    except ValueError as err:
        print(str(err), file=sys.stderr)
        return 2
    import torch

    import kernels
    from kernels.bench.parity import make_weight

    if kernels.MODE != "compiled" or not torch.cuda.is_available():
        print(f"ncu_child: needs a CUDA device (kernels.MODE is {kernels.MODE})", file=sys.stderr)
        return 1
    try:
        launcher = _launcher(kernel)
    except ValueError as err:
        print(f"ncu_child: {err}", file=sys.stderr)
        return 2
    device = torch.device("cuda", torch.cuda.current_device())
    dtype = getattr(torch, dtype_name)
    generator = torch.Generator(device=device)
    generator.manual_seed(7919 * rows + width)
    x = (
        torch.randn(rows, width, device=device, dtype=torch.float32, generator=generator)
        .add_(0.25)
        .to(dtype)
    )
    weight = make_weight(width, dtype, device, generator=generator)
    for _ in range(WARMUP_CALLS):
        launcher(x, weight, eps)
    torch.cuda.synchronize(device)
    torch.cuda.profiler.start()
    try:
        y = launcher(x, weight, eps)
        torch.cuda.synchronize(device)
    finally:
        torch.cuda.profiler.stop()
    print(f"ncu_child: profiled one call on {tuple(y.shape)} {dtype_name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
