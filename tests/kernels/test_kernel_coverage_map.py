"""The launch-layout coverage map's walk (kernels.instruments.coverage): the row classes reach every
layout and row mask the rule gives a width, the stride classes every vector width and peel, the key
is the launch's own, and the walk over every width finds each configuration."""

from __future__ import annotations

import numpy as np
import pytest

import kernels
from kernels.geometry import vector_width
from kernels.instruments import coverage
from kernels.launcher import MAX_ROWS
from kernels.layout import LaunchConfig, choose_config
from kernels.plans import invariant_config

WIDTHS = [1, 2, 3, 64, 70, 127, 512, 513, 1000, 2053, 4096, 5125, 8192, 8193, 20000, 49153, 65536]


@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("width", WIDTHS)
def test_each_row_class_carries_the_rules_layout_for_its_own_rows(width, itemsize):
    # The walk asks the rule once per interval between thresholds and gives every row count it
    # picks there that layout: each must be what the rule gives that very row count.
    picked = coverage.row_layouts(width, itemsize, 132)
    assert [rows for rows, _ in picked] == sorted({rows for rows, _ in picked})
    for rows, config in picked:
        assert config == choose_config(rows, width, itemsize, 132), rows


@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("width", WIDTHS)
def test_row_classes_reach_every_layout_and_row_mask_of_random_row_counts(width, itemsize):
    def key(rows: int) -> tuple[LaunchConfig, bool]:
        config = choose_config(rows, width, itemsize, 132)
        per = config.rows_per_program
        return config, per > 1 and rows % per != 0

    classes = {key(rows) for rows, _ in coverage.row_layouts(width, itemsize, 132)}
    rng = np.random.default_rng(width * itemsize)
    spread = np.unique(np.exp(rng.uniform(0, np.log(MAX_ROWS), 4000)).astype(np.int64))
    for rows in np.concatenate([np.arange(1, 20000), spread, [MAX_ROWS]]):
        assert key(int(rows)) in classes, (width, itemsize, int(rows))


@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("width", WIDTHS)
def test_stride_classes_reach_every_vector_width_and_peel_of_any_strides(width, itemsize):
    config = choose_config(1, width, itemsize, 132)

    def key(x_stride: int, y_stride: int) -> coverage.Configuration:
        launched, constexprs = coverage.launch_constexprs(
            config, 1, width, x_stride, y_stride, itemsize
        )
        return coverage.configuration_of("float32", launched.loop, constexprs)

    classes = {key(x, y) for x, y in coverage.stride_classes(width, itemsize)}
    for x_pad in range(17):
        for y_pad in range(17):
            assert key(width + x_pad, width + y_pad) in classes, (width, x_pad, y_pad)


def test_stride_classes_are_the_smallest_strides_of_each_class() -> None:
    # width 70 (2 bytes): vector widths 2 and 1, each agreeing and not modulo 16 bytes.
    assert coverage.stride_classes(70, 2) == [(70, 70), (70, 72), (71, 71), (71, 72)]
    assert coverage.stride_classes(64, 4) == [(64, 64), (66, 66), (66, 68), (65, 65), (65, 66)]
    for x_stride, y_stride in coverage.stride_classes(70, 2):
        assert vector_width(70, x_stride, y_stride, 2) in (1, 2)


def test_the_key_is_the_launchs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # run_checked's configuration comes from the constexprs launch_kernel passed: the row mask
    # (5 rows in programs of 2) and EVEN (the width fills the tile) change the key.
    x = np.random.default_rng(0).standard_normal((5, 64))
    config = LaunchConfig(False, 64, 1, 2, w_early=True)
    run = kernels.run_checked(x, np.ones(64), eps=1e-6, dtype="float32", config=config)
    assert run.configuration == coverage.Configuration(
        "float32", "tile", True, 4, False, False, True, True, True, False, False, False, False
    )
    run = kernels.run_checked(x[:4, :60], np.ones(60), eps=1e-6, dtype="float32", config=config)
    assert (run.configuration.even, run.configuration.row_mask, run.configuration.tail) == (
        False,
        False,
        True,
    )


def test_out_row_stride_sets_the_vector_width_and_keeps_the_output_where_it_belongs() -> None:
    x = np.random.default_rng(1).standard_normal((3, 64))
    same = kernels.run_checked(x, np.ones(64), eps=1e-6, dtype="bfloat16", row_stride=64)
    other = kernels.run_checked(
        x, np.ones(64), eps=1e-6, dtype="bfloat16", row_stride=64, out_row_stride=67
    )
    assert (same.configuration.vec, other.configuration.vec) == (8, 1)
    np.testing.assert_array_equal(same.y, other.y)
    assert other.oob_writes == ()
    assert other.out_row_stride == 67
    with pytest.raises(ValueError, match=r"out_row_stride must be >= width \(64\); got 63"):
        kernels.run_checked(x, np.ones(64), eps=1e-6, dtype="float32", out_row_stride=63)


def test_configuration_json_round_trip_and_refusals() -> None:
    found = coverage.reachable(widths=[70])
    for configuration in found:
        assert coverage.Configuration.from_json(configuration.to_json()) == configuration
    data = next(iter(found)).to_json()
    with pytest.raises(ValueError, match="fields must be exactly"):
        coverage.Configuration.from_json({**data, "extra": 1})
    with pytest.raises(ValueError, match=r"configuration.vec: wrong type bool"):
        coverage.Configuration.from_json({**data, "vec": True})
    with pytest.raises(ValueError, match=r"configuration.peel: wrong type int"):
        coverage.Configuration.from_json({**data, "peel": 1})


def test_the_walk_over_every_width_finds_every_kernel_path_and_branch(coverage_map) -> None:
    kinds = {(c.dtype, c.kernel) for c in coverage_map}
    assert kinds == {(d, k) for d in ("float32", "float16", "bfloat16") for k in ("tile", "loop")}
    for field in ("multi_row", "peel", "split", "w_early", "even", "row_mask", "stream", "tail"):
        assert {getattr(c, field) for c in coverage_map} == {False, True}, field
    assert {c.parts for c in coverage_map} == {False, True}
    # A row in parts is the column loop's alone, and it takes every loop branch.
    parted = {c for c in coverage_map if c.parts}
    assert {c.kernel for c in parted} == {"loop"}
    for field in ("peel", "even", "tail"):
        assert {getattr(c, field) for c in parted} == {False, True}, field
    assert {c.vec for c in coverage_map} == {1, 2, 4, 8}
    # A peeled split body is a 2-byte layout only; fp32 rows split unpeeled (split rows).
    assert not any(c.split and c.peel for c in coverage_map if c.dtype == "float32")
    assert any(c.split and not c.multi_row for c in coverage_map if c.dtype == "float32")
    assert any(c.split and c.multi_row for c in coverage_map if c.dtype == "bfloat16")
    # The same layouts for both 2-byte dtypes.
    layouts = {d: {c.layout for c in coverage_map if c.dtype == d} for d in ("float16", "bfloat16")}
    assert layouts["float16"] == layouts["bfloat16"]


def test_every_witness_reaches_its_configuration_under_the_rule(coverage_map) -> None:
    """Under the rule, or under the batch-invariant mode's layout (the walk adds its
    layouts: an ordered loop, an unpeeled tile)."""
    for configuration, witness in coverage_map.items():
        itemsize = coverage.ITEMSIZES[witness.dtype]
        rule = choose_config(witness.rows, witness.width, itemsize, 132)
        found = []
        for config in (rule, invariant_config(witness.width, itemsize)):
            launched, constexprs = coverage.launch_constexprs(
                config, witness.rows, witness.width, witness.x_stride, witness.y_stride, itemsize
            )
            if launched == witness.config:
                found.append(coverage.configuration_of(witness.dtype, launched.loop, constexprs))
        assert found, witness
        assert found[0] == configuration


def test_a_proof_on_few_rows_keeps_the_witness_configuration(coverage_map) -> None:
    for configuration, witness in coverage_map.items():
        rows = coverage.proof_rows(witness)
        assert 1 <= rows <= 4096
        itemsize = coverage.ITEMSIZES[witness.dtype]
        launched, constexprs = coverage.launch_constexprs(
            witness.config, rows, witness.width, witness.x_stride, witness.y_stride, itemsize
        )
        assert coverage.configuration_of(witness.dtype, launched.loop, constexprs) == configuration


@pytest.mark.parametrize(
    ("per", "rows", "expected"),
    [(1, 1, 3), (2, 4, 4), (2, 5, 5), (8, 16385, 17), (2048, 4096, 4096), (2048, 4097, 2049)],
)
def test_proof_rows_at_the_row_bound(per: int, rows: int, expected: int) -> None:
    witness = coverage.Witness(rows, 1, 1, 1, "bfloat16", LaunchConfig(False, 1, 1, per))
    assert coverage.proof_rows(witness) == expected
    assert coverage.proof_rows(witness, most=expected) == expected
