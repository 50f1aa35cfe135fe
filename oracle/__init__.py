"""Independent numpy oracle for the fused RMSNorm forward.

``y = x * rsqrt(mean(x**2) + eps) * w``, judged two ways that share no normalization code:
a direct scalar reference (:mod:`oracle.scalar`) and a tiled lane model of the Triton program
(:mod:`oracle.tiled`). This package imports numpy and the standard library only: it must be
able to judge the kernel without sharing a line of its code.
"""

from __future__ import annotations

from oracle.spec import LIMITS, Problem, ValidationError, make_problem

__all__ = ["LIMITS", "Problem", "ValidationError", "make_problem"]
