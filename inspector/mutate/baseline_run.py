"""The unmutated kernel's own run over the fixtures, made before any mutant is judged, and which
failures mean that Triton refused a program.

A mutant is killed only by a fixture its original passes: a fixture the original already fails
says nothing about a mutant (the failure would be the original's, and a true survivor would be
counted as killed). A mutant that Triton refuses to compile or trace never ran a fixture: it is
*stillborn*, reported as such and left out of the score, never a kill.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from kernels.sandbox.usercode import KernelSpec
from oracle import fixtures, matrix

#: The child's error line when Triton refused the program: a compile error (compiled), or an
#: error raised while the interpreter traced it (Triton's frontend checks run there).
_REFUSED = re.compile(
    r"user kernel error: triton\.(?:compiler\.errors\.\w+|runtime\.errors\.InterpreterError)\b"
)


def is_stillborn(detail: str) -> bool:
    """Whether a fixture failure's ``detail`` is Triton refusing the program, not its output."""
    return bool(_REFUSED.search(detail))


@dataclasses.dataclass(frozen=True)
class Baseline:
    """The unmutated kernel's outcome on every runnable fixture.

    Attributes:
        passed: names of the fixtures it passes (the only ones a mutant is judged on).
        failed: (name, detail) of those it fails.
        not_judged: (name, why) of those this machine could not judge (its interpreter gets an
            operation the kernel uses wrong) or outside the kernel's declared domain: neither
            passed nor failed, and no mutant is judged on them.
    """

    passed: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    not_judged: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "fixtures": len(self.passed) + len(self.failed) + len(self.not_judged),
            "passed": len(self.passed),
            "failed": [{"fixture": name, "detail": detail} for name, detail in self.failed],
            "not_judged": [{"fixture": name, "why": why} for name, why in self.not_judged],
        }


def run_baseline(
    spec: KernelSpec, pythonpath_first: str, poison: float, timeout_s: float
) -> Baseline:
    """Run the unmutated ``spec`` on every runnable fixture (a crash or a hang fails that
    fixture; the child restarts for the next)."""
    from inspector.check.user_kernel import UserImplementation, UserKernelFailed

    implementation = UserImplementation(
        spec, poison=poison, pythonpath_first=pythonpath_first, run_timeout_s=timeout_s
    )
    cache = matrix.ReferenceCache()
    passed: list[str] = []
    failed: list[tuple[str, str]] = []
    not_judged: list[tuple[str, str]] = []
    try:
        for fixture in fixtures.FIXTURES:
            if fixture.check == "rejection":
                continue
            try:
                outcome = matrix.evaluate(fixture, implementation, cache=cache, poison=poison)
            except UserKernelFailed as err:
                failed.append((fixture.name, str(err)[:500]))
                continue
            if outcome.passed:
                passed.append(fixture.name)
            elif outcome.actual in matrix.NO_VERDICT:  # no mutant is judged on it either
                not_judged.append((fixture.name, outcome.detail[:500]))
            else:
                failed.append((fixture.name, outcome.detail[:500]))
    finally:
        implementation.close()
    return Baseline(tuple(passed), tuple(failed), tuple(not_judged))
