"""The launches ``check --device cuda`` runs under ``compute-sanitizer --tool memcheck``:
``python -m inspector.sanitize_child INPUT.npz``.

The bundled kernel (compiled on a GPU; the interpreter elsewhere, for tests) on the check's
input, then every fixture that carries numbers on every launch layout (the launcher's choice
and each forced path), faithful kernel only: the mutants exist to be caught, not shipped.
Prints one line ``launches N`` at the end; an exception ends the process with exit code 1 and
its message on stderr. The sanitizer's own report (its ``ERROR SUMMARY``) is read by
:func:`inspector.check_stages.sanitizer_stage`.
"""

from __future__ import annotations

import sys

import numpy as np


def main(path: str) -> int:
    import kernels
    from inspector.pipeline import run_kernel_on
    from oracle import fixtures
    from oracle.spec import make_problem

    with np.load(path, allow_pickle=False) as data:
        problem = make_problem(
            np.array(data["x"]),
            np.array(data["weight"]),
            eps=float(data["eps"]),
            dtype=str(data["dtype"]),
            row_stride=int(data["row_stride"]),
        )
    launches = 0
    run_kernel_on(problem, device="auto")
    launches += 1
    for path_name in ("auto", *kernels.KERNEL_PATHS):
        for fixture in fixtures.FIXTURES:
            if fixture.check == "rejection":
                continue
            run_kernel_on(fixture.build(), device="auto", path=path_name)
            launches += 1
    print(f"launches {launches}", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m inspector.sanitize_child INPUT.npz", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1]))
