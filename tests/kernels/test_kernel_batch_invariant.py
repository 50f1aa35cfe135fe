"""``kernels.rms_norm(..., batch_invariant=True)``: one layout per width and dtype
(:func:`kernels.plans.invariant_config`), the large batch's layout (so batches of 64 MiB and more
pay nothing for it), its own plans, the torch op, and rows with the same bits in every batch and
at every place in it, certified (:func:`kernels.instruments.invariance.certify`). Interpreter on a
CPU; compiled (and the CUDA graph) on a GPU."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import kernels
from kernels import plans
from kernels.instruments import invariance as inv
from kernels.launcher import MAX_ROWS
from kernels.layout import RULES, cdiv, choose_config, next_power_of_2, problem

DEVICE = torch.device("cuda" if kernels.MODE == "compiled" else "cpu")
MIB = 2**20


def _in_mode(config):
    """``config`` as the mode runs it: a column loop's peel ordered, a tile unpeeled and in one
    tile (a peeled split body made whole)."""
    block = config.block + config.block2 if config.block2 else config.block
    peel = config.peel and config.loop
    return dataclasses.replace(
        config, peel=peel, ordered=peel, block=next_power_of_2(block), block2=0
    )


def test_the_modes_layout_is_the_rules_for_every_batch_of_64_mib_and_more() -> None:
    """For every width and element size, at the 64 MiB bound, one row past it and the largest
    batch, on three SM counts: the default's layout with a column loop's peel ordered and a
    tile unpeeled, except where the rule splits the row in two unpeeled tiles ("split rows",
    "wide split rows"): there the next row of the rule's table."""
    choose = choose_config.__wrapped__  # no cache churn over 262144 problems
    skipped = [rule for rule in RULES if rule.name in ("split rows", "wide split rows")]
    # The rows the mode skips are marked so in the table itself.
    assert [rule for rule in RULES if not rule.invariant] == skipped
    split = 0
    for itemsize in (2, 4):
        for width in range(1, 65537):
            mode = plans.invariant_config(width, itemsize)
            assert mode.ordered == mode.peel == (mode.peel and mode.loop)
            assert not mode.block2
            bound = cdiv(64 * MIB, width * itemsize)
            for rows, sms in ((bound, 132), (bound + 1, 114), (MAX_ROWS, 78)):
                p = problem(rows, width, itemsize, sms)
                if any(rule.applies(p) for rule in skipped):
                    split += 1
                    after = next(r for r in RULES if r not in skipped and r.applies(p))
                    assert _in_mode(after.layout(p)) == mode, (width, rows, sms)
                else:
                    assert _in_mode(choose(rows, width, itemsize, sms)) == mode, (width, rows)
    assert split > 0


def test_below_64_mib_the_mode_keeps_the_large_batchs_layout_where_the_rule_does_not() -> None:
    """The bound is where the rule's row thresholds end: one row under it, some widths get
    another layout from the rule but not from the mode (the test above could fail)."""
    moved = [
        width
        for width in (512, 1024, 2048, 4096, 8192)
        if _in_mode(choose_config(cdiv(64 * MIB, width * 2) - 1, width, 2, 132))
        != plans.invariant_config(width, 2)
    ]
    assert moved == [4096, 8192]  # 8 and 16 KiB rows: the one-row tile under 64 MiB, the loop past
    one_row = choose_config(1, 4096, 2, 132)
    assert one_row.path == "one_row"
    assert plans.invariant_config(4096, 2).path == "column_loop"


@pytest.mark.parametrize("value", [1, 0, None, "yes", 1.0, np.bool_(True)])
def test_batch_invariant_must_be_a_bool(value: object) -> None:
    x = torch.ones(2, 8, device=DEVICE)
    w = torch.ones(8, device=DEVICE)
    with pytest.raises(TypeError, match=r"^batch_invariant must be a bool; got "):
        kernels.rms_norm(x, w, 1e-6, batch_invariant=value)
    # the planned door refuses it too once the signature has a plan
    kernels.rms_norm(x, w, 1e-6)
    with pytest.raises(TypeError, match=r"^batch_invariant must be a bool"):
        kernels.rms_norm(x, w, 1e-6, batch_invariant=value)


def test_the_mode_has_its_own_plans_and_layout() -> None:
    plans.clear_plans()
    x = torch.randn(40, 4096, device=DEVICE, dtype=torch.float16)
    w = torch.randn(4096, device=DEVICE, dtype=torch.float16)
    y = kernels.rms_norm(x, w, 1e-6)
    y_mode = kernels.rms_norm(x, w, 1e-6, batch_invariant=True)
    assert [p.config.path for p in plans.PLANS.values()] == ["one_row"]
    assert [p.config for p in plans.INVARIANT_PLANS.values()] == [plans.invariant_config(4096, 2)]
    assert plans.plan_count() == 2
    # both modes agree with float64 within fp16's rounding (the layouts differ, not the math)
    reference = torch.nn.functional.rms_norm(x.double(), (4096,), w.double(), 1e-6)
    for out in (y, y_mode):
        assert torch.allclose(out.double(), reference, rtol=2e-3, atol=2e-3)
    again = kernels.rms_norm(x, w, 1e-6, batch_invariant=True)  # the planned door
    assert torch.equal(again, y_mode)
    out = torch.empty_like(x)
    assert kernels.rms_norm(x, w, 1e-6, out=out, batch_invariant=True) is out
    assert torch.equal(out, y_mode)
    inplace = x.clone()
    kernels.rms_norm(inplace, w, 1e-6, out=inplace, batch_invariant=True)
    assert torch.equal(inplace, y_mode)


@pytest.mark.parametrize(
    ("width", "dtype"),
    [(100, "float32"), (2053, "float32"), (2053, "bfloat16"), (4096, "float16"), (8, "float16")],
)
def test_the_mode_is_certified_bit_identical_where_the_default_is_not(
    width: int, dtype: str
) -> None:
    """Rows alone, at every place of a program (every shift against a 16-byte boundary
    included) and in batches up to 40 rows through the public call: the same bits."""
    rng = np.random.default_rng(width)
    x = rng.standard_normal((5, width)) * 3.0
    w = rng.standard_normal(width)
    mode = inv.certify(x, w, 1e-6, dtype, DEVICE, batch_invariant=True, max_batch_rows=40)
    assert mode.mode == "batch_invariant"
    assert mode.bit_identical, mode.differing_rows
    assert mode.batch_sizes[0] == 1
    # every size launched is listed: the public call's (at most 40 rows here) and each place's
    assert {entry["batch_size"] for entry in mode.launches} == set(mode.batch_sizes)
    assert max(e["batch_size"] for e in mode.launches if e["position"] == 0) <= 40
    assert all(entry["path"] == plans.invariant_config(width, 4 if dtype == "float32" else 2).path
               for entry in mode.launches)  # fmt: skip
    assert mode.to_receipt()["mode"] == "batch_invariant"


def test_the_default_certificate_sees_a_peeled_row_moved_against_the_16_byte_boundary() -> None:
    """2053 fp32 rows are peeled: a row one element further from the boundary has another head,
    and its elements sum on other lanes. The default's certificate shifts the rows and finds
    it; the mode does not peel a tile."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 2053)) * 3.0
    w = rng.standard_normal(2053)
    default = inv.certify(x, w, 1e-6, "float32", DEVICE, max_rows=6)
    assert default.mode == "default"
    assert not default.bit_identical
    shifted = [e for e in default.launches if e["rows_differing"]]
    assert shifted
    assert all(e["position"] % 4 for e in shifted)
    assert inv.positions_for(choose_config(1, 2053, 4), 2053, 4) == (0, 1, 2, 3)
    assert inv.positions_for(choose_config(1, 2048, 4), 2048, 4) == (0,)


def test_torch_compile_keeps_the_mode() -> None:
    x = torch.randn(9, 300, device=DEVICE)
    w = torch.randn(300, device=DEVICE)

    def block(a: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(a, w, 1e-6, batch_invariant=True)

    compiled = torch.compile(block, fullgraph=True)
    assert torch.equal(compiled(x), kernels.rms_norm(x, w, 1e-6, batch_invariant=True))


def test_every_configuration_the_mode_reaches_is_proven_on_the_map() -> None:
    """Every width, dtype, stride class and row mask the mode can launch lands on a
    configuration that the committed coverage records (CPU and H200) prove: the mode adds no
    layout the map has not proven."""
    import json
    from pathlib import Path

    from kernels.instruments import coverage as cov

    reached = set()
    for dtype in kernels.SUPPORTED_DTYPES:
        itemsize = cov.ITEMSIZES[dtype]
        for width in range(1, kernels.MAX_WIDTH + 1):
            config = plans.invariant_config(width, itemsize)
            per = config.rows_per_program
            for rows in {per, per + 1} if per > 1 else {1}:
                for x_stride, y_stride in cov.stride_classes(width, itemsize):
                    launched, constexprs = cov.launch_constexprs(
                        config, rows, width, x_stride, y_stride, itemsize
                    )
                    reached.add(cov.configuration_of(dtype, launched.loop, constexprs))
    folder = Path(__file__).resolve().parents[2] / "resources" / "coverage"
    for name in ("cpu.json", "h200.json"):
        record = json.loads((folder / name).read_text())
        proven = {
            cov.Configuration.from_json(p["configuration"]) for p in record["proofs"] if p["passed"]
        }
        assert len(proven) == record["configurations"] == record["proven"]
        assert reached <= proven, (name, sorted(c.label for c in reached - proven)[:5])
        assert len(reached) < len(proven)  # the mode takes fewer layouts than the rule
