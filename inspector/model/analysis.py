"""What the views show of one problem before any kernel runs: the scalar reference and the
tiled lane model under the model mutant that is on, with the model's per-row errors. Small
problems are analysed on the GUI thread (:func:`analyse`), large ones by the worker
(``inspector.jobs.tasks.analysis_job``). Qt-free.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracle import compare as cmp
from oracle import scalar, tiled
from oracle.spec import Problem

Progress = tuple[int, int, str]


@dataclass(frozen=True)
class Analysis:
    """Scalar reference and lane model of one problem under one model mutant.

    Attributes:
        errors: per-row (max abs, max rel) of the model's output against the reference's.
        image: the lane grid's image of ``model`` (no kernel stores in it), when it was drawn
            off the GUI thread; None otherwise.
    """

    problem: Problem
    mutant: str | None
    reference: scalar.ScalarResult
    model: tiled.TiledResult
    errors: tuple[np.ndarray, np.ndarray]
    image: Any = None


def analysis_steps(
    problem: Problem, mutant: str | None, lut: np.ndarray | None = None
) -> Iterator[Progress | Analysis]:
    """Progress before each step, then the :class:`Analysis`.

    Args:
        problem: a validated problem.
        mutant: a model mutant or None.
        lut: the lane grid's colour table; with it the grid image is drawn here too, so the
            GUI thread only uploads it.
    """
    total = 3 if lut is not None else 2
    yield (0, total, "scalar reference")
    reference = scalar.reference(problem)
    yield (1, total, "tiled lane model")
    model = tiled.model(problem, mutant=mutant)
    errors = cmp.max_errors(model.y, reference.y)
    image = None
    if lut is not None:
        yield (2, total, "lane grid image")
        from inspector.model import viewdata

        image = viewdata.lane_image(model, lut)
    yield Analysis(problem, mutant, reference, model, errors, image)


def analyse(problem: Problem, mutant: str | None) -> Analysis:
    """:func:`analysis_steps` drained in place (small problems, on the GUI thread)."""
    *_, analysis = analysis_steps(problem, mutant)
    return analysis  # type: ignore[return-value]
