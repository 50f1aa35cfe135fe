"""Shared results for the records tests: one real check, computed once per session."""

from __future__ import annotations

import pytest

from inspector.check import pipeline
from oracle.spec import synthetic_problem


@pytest.fixture(scope="session")
def kernel_result() -> pipeline.CheckResult:
    """The default CLI input (4 x 70 float32, seed 0), model and real kernel (interpreter)."""
    return pipeline.run_check(synthetic_problem(4, 70, seed=0), pipeline.CheckConfig())


@pytest.fixture(scope="session")
def model_results() -> dict[str, pipeline.CheckResult]:
    """Model-only checks (fast) for each dtype, with a padded row stride."""
    config = pipeline.CheckConfig(run_kernel=False)
    return {
        dtype: pipeline.run_check(
            synthetic_problem(3, 37, seed=5, dtype=dtype, row_stride=40), config
        )
        for dtype in ("float32", "float16", "bfloat16")
    }
