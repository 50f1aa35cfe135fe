"""Each mutant toggle says what it changes on this input, or why it cannot show and which
fixture shows it; the fixture it names really does."""

from __future__ import annotations

import re

import numpy as np
import pytest

from inspector.model.analysis import analyse
from inspector.model.mutant_effect import mutant_effect
from oracle import fixtures
from oracle.mutants import MODEL_MUTANTS
from oracle.spec import make_problem


def _effect(problem, mutant) -> str:
    return mutant_effect(problem, mutant, analyse(problem, mutant).errors)


def _quiet_inputs() -> dict[str, object]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 64))
    return {
        "missing_epsilon": fixtures.get("padded_row_stride").build(),
        "missing_weight": make_problem(x, np.ones(64), eps=1e-6, dtype="float32"),
        "masked_tail_inclusion": make_problem(x, np.full(64, 0.5), eps=1e-6, dtype="float32"),
        "wrong_row_stride": make_problem(x, np.full(64, 0.5), eps=1e-6, dtype="float32"),
    }


@pytest.mark.parametrize("mutant", sorted(_quiet_inputs()))
def test_a_quiet_mutant_says_why_and_its_named_fixture_shows_it(mutant) -> None:
    problem = _quiet_inputs()[mutant]
    text = _effect(problem, mutant)
    assert text.startswith(f"{mutant} has no visible effect on this input: ")
    named = re.search(r"load (\w+)", text)
    assert named is not None, text
    shown = _effect(fixtures.get(named.group(1)).build(), mutant)
    assert shown.startswith(f"{mutant} changes y in "), shown


@pytest.mark.parametrize("mutant", MODEL_MUTANTS)
def test_on_the_demo_input_a_visible_mutant_names_its_worst_row(mutant) -> None:
    problem = fixtures.get("multiple_rows").build()
    analysis = analyse(problem, mutant)
    text = mutant_effect(problem, mutant, analysis.errors)
    if text.startswith(f"{mutant} changes y"):
        worst = int(np.argmax(analysis.errors[1]))
        assert f"(worst row {worst}, relative error " in text
    else:
        assert "load " in text


def test_the_kernel_only_mutant_points_at_run_kernel_and_nothing_is_said_when_off() -> None:
    problem = fixtures.get("padded_row_stride").build()
    assert "press Run kernel; its stores show" in mutant_effect(problem, "unmasked_store", None)
    full = make_problem(np.ones((2, 64)), np.ones(64), eps=1e-6, dtype="float32")
    assert "fills its tile, so it stores nothing extra here: load non_power_of_two_tail" in (
        mutant_effect(full, "unmasked_store", None)
    )
    assert mutant_effect(problem, None, None) == ""
    assert mutant_effect(problem, "missing_weight", None) == "missing_weight: analysing…"
