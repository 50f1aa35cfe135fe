"""The launches ``check --device cuda`` runs under ``compute-sanitizer --tool memcheck``:
``python -m inspector.check.sanitize_child INPUT.npz [FILE.py FUNCTION]``.

The bundled kernel (compiled on a GPU; the interpreter elsewhere, for tests) on the check's
input, then every fixture that carries numbers on every launch layout (the launcher's choice
and each forced path), faithful kernel only: the mutants exist to be caught, not shipped.
Prints one line ``launches N`` at the end; an exception ends the process with exit code 1 and
its message on stderr.

With ``FILE.py FUNCTION``, a user's kernel instead (its launcher chooses its own layout): the
check's input and every fixture that carries numbers, each in the poison-guarded buffers its
check runs it in (:func:`kernels.sandbox.usercode_child.run_guarded`), in this process, which is a
child of the sanitizer's already. A run that raises is named on stderr and not counted (the
fixture matrix fails it on its own); after a memory error every later run raises, since the
sanitizer ends the faulting launch. The sanitizer's own report (its ``ERROR SUMMARY``) is read
by :func:`inspector.check.stages.sanitizer_stage`.
"""

from __future__ import annotations

import sys

import numpy as np

from oracle.spec import Problem


def bundled_launches(problem: Problem) -> int:
    """The bundled kernel's launches; returns how many ran."""
    import kernels
    from inspector.coverage.proof import run_kernel_on
    from oracle import fixtures

    launches = 0
    run_kernel_on(problem, device="auto")
    launches += 1
    for path_name in ("auto", *kernels.KERNEL_PATHS):
        for fixture in fixtures.FIXTURES:
            if fixture.check == "rejection":
                continue
            run_kernel_on(fixture.build(), device="auto", path=path_name)
            launches += 1
    return launches


def user_launches(problem: Problem, path: str, function: str) -> int:
    """The user kernel ``path:function``'s runs; returns how many finished."""
    from inspector.check.user_kernel import guarded_layout
    from kernels.sandbox.usercode_child import load_launcher, run_guarded
    from oracle import fixtures
    from oracle.tiled import POISON

    launcher = load_launcher(path, function)
    cases = [("input", problem)] + [
        (fixture.name, fixture.build())
        for fixture in fixtures.FIXTURES
        if fixture.check != "rejection"
    ]
    launches = 0
    for name, case in cases:
        guard, y_stride = guarded_layout(case)
        header = {
            "dtype": case.dtype,
            "eps": case.eps,
            "x_stride": case.row_stride,
            "y_stride": y_stride,
            "poison": POISON,
            "guard": guard,
        }
        try:
            # Writable copies, as the check's protocol delivers them (torch refuses to share
            # a read-only array without a warning).
            run_guarded(launcher, header, np.array(case.x), np.array(case.weight))
        except Exception as err:
            print(f"not counted: {name} raised {type(err).__name__}: {err}"[:300], file=sys.stderr)
            continue
        launches += 1
    return launches


def main(argv: list[str]) -> int:
    from oracle.spec import make_problem

    with np.load(argv[0], allow_pickle=False) as data:
        problem = make_problem(
            np.array(data["x"]),
            np.array(data["weight"]),
            eps=float(data["eps"]),
            dtype=str(data["dtype"]),
            row_stride=int(data["row_stride"]),
        )
    launches = bundled_launches(problem) if len(argv) == 1 else user_launches(problem, *argv[1:])
    print(f"launches {launches}", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 4):
        print(
            "usage: python -m inspector.check.sanitize_child INPUT.npz [FILE.py FUNCTION]",
            file=sys.stderr,
        )
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1:]))
