"""Reads out of bounds under the interpreter (kernels.instruments.guarded_reads): every load of a
user kernel is checked against the guarded buffers of its run. A read into a guard or a row's
padding fails the fixture by buffer, row and lane, whether or not the output used it; a correct
kernel reads nothing there; addresses outside the watched buffers are not judged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernels
from kernels.instruments.guarded_reads import Watch, strided_valid
from kernels.mode import INTERPRETER
from oracle import fixtures, matrix

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "kernels"


def test_a_read_in_a_guard_or_padding_is_found_and_one_elsewhere_is_not() -> None:
    watch = Watch()
    base, itemsize = 1_000_000, 4
    # 2 rows of 3 in a stride of 4, a guard of 2: [g g d d d p d d d p g g]
    valid = strided_valid(2, 2, 3, 4)
    assert valid.tolist() == [0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0]
    watch.add("x", base, itemsize, valid)
    addresses = np.array([base + 4 * i for i in (2, 3, 5, 9, 11)] + [base - 4, 5], np.uint64)
    mask = np.array([True, True, True, True, False, True, True])
    watch.check(addresses, mask)
    # 5 (padding) and 9 (padding); 11 is masked off; the two outside the buffer are not ours.
    assert watch.found == {"x": [5, 9]}
    assert watch.counts == {"x": 2}
    watch.check(np.array([base + 4 * 5], np.uint64), np.array(True))  # a scalar mask
    assert watch.counts == {"x": 3}


interpreted = pytest.mark.skipif(kernels.MODE != INTERPRETER, reason="interpreter mode only")


def _evaluate(kernel: str, names: tuple[str, ...]) -> dict[str, matrix.FixtureOutcome]:
    from inspector.check.user_kernel import UserImplementation
    from kernels.sandbox.usercode import parse_kernel_spec

    implementation = UserImplementation(parse_kernel_spec(kernel), poison=-3072.0)
    try:
        return {
            f.name: matrix.evaluate(f, implementation) for f in fixtures.FIXTURES if f.name in names
        }
    finally:
        implementation.close()


@interpreted
def test_an_unmasked_weight_load_fails_by_its_reads_though_the_output_is_right() -> None:
    outcomes = _evaluate(
        f"{EXAMPLES / 'bug_unmasked_weight_load.py'}:rms_norm", ("width_70", "padded_row_stride")
    )
    width_70 = outcomes["width_70"]
    assert width_70.actual == "fail"
    # The output is right: only the reads fail it, 58 lanes past the width on each of its rows.
    assert "output vs scalar reference" not in width_70.detail
    assert "out-of-bounds read(s): " in width_70.detail
    assert "of weight (lane 70 (past the width), lane 71 (past the width), lane 72" in (
        width_70.detail
    )
    assert outcomes["padded_row_stride"].actual == "fail"


@interpreted
def test_a_correct_kernel_reads_nothing_out_of_bounds_on_any_layout_of_the_fixtures() -> None:
    names = ("width_70", "padded_row_stride", "multiple_rows", "min_width", "row_isolation")
    outcomes = _evaluate(f"{EXAMPLES / 'tutorial.py'}:rms_norm", names)
    assert set(outcomes) == set(names)
    assert all(o.passed for o in outcomes.values()), {n: o.detail for n, o in outcomes.items()}


@interpreted
def test_an_unmasked_x_load_reads_past_the_last_row(tmp_path) -> None:
    source = (EXAMPLES / "tutorial.py").read_text()
    source = source.replace(
        "x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0)",
        "x = tl.load(x_ptr + row * x_stride + cols)",
    )
    planted = tmp_path / "unmasked_x.py"
    planted.write_text(source)
    outcome = _evaluate(f"{planted}:rms_norm", ("padded_row_stride",))["padded_row_stride"]
    assert outcome.actual == "fail"
    assert "of x (row 0 lane " in outcome.detail
    assert "(padding)" in outcome.detail


@interpreted
@pytest.mark.parametrize("path", kernels.KERNEL_PATHS)
def test_the_bundled_kernel_reads_only_its_data_on_every_layout(path: str) -> None:
    # Its checked runs watch the same buffers (kernels.instruments.checked): a correct layout reads
    # no guard and no padding, in any dtype, with a padded row stride.
    for dtype in ("float32", "bfloat16"):
        x = np.linspace(-2.0, 3.0, 5 * 70).reshape(5, 70)
        run = kernels.run_checked(
            x, np.linspace(0.5, 1.5, 70), eps=1e-6, dtype=dtype, row_stride=75, path=path
        )
        assert run.oob_reads == (), (path, dtype, run.oob_reads)


@interpreted
def test_a_bundled_run_that_reads_past_the_weight_is_seen(monkeypatch) -> None:
    # The weight's guard is watched in the bundled kernel's checked runs too: a launcher that
    # hands the kernel a weight view one element early reads one element before the weight.
    from kernels.instruments import checked

    real = checked.launch_kernel

    def early(x, weight, *args, **kwargs):
        base = weight.as_strided((weight.numel(),), (1,), weight.storage_offset() - 1)
        return real(x, base, *args, **kwargs)

    monkeypatch.setattr(checked, "launch_kernel", early)
    run = kernels.run_checked(np.ones((2, 70)), np.ones(70), eps=1e-6, dtype="float32")
    assert [(name, count) for name, count, _ in run.oob_reads] == [("weight", 2)]
