"""Equivalent mutants: TTIR compared by meaning (kernels.instruments.ttir), a load's unobserved fill
proven (inspector.mutate.equivalence), and a small kernel's mutants classified by a real TTIR
compile."""

from __future__ import annotations

import textwrap

from inspector.check.user_kernel import loadable_kernel_spec
from inspector.mutate import equivalence, source_mutants
from inspector.mutate.sites import mutation_sites
from inspector.mutate.source_mutants import run_mutants
from kernels.instruments.ttir import canonical_digest, strip_locations

TTIR = textwrap.dedent(
    """\
    #loc = loc("/k.py":3:0)
    module {
      tt.func public @k(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc)), %n: i32 loc("n"(#loc))) {
        %cst = arith.constant dense<0.0> : tensor<4xf32> loc(#loc1)
        %c = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32> loc(#loc1)
        %m = tt.splat %n : i32 -> tensor<4xi32> loc(#loc1)
        %mask = arith.cmpi slt, %c, %m : tensor<4xi32> loc(#loc1)
        %p = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>> loc(#loc1)
        %q = tt.addptr %p, %c : tensor<4x!tt.ptr<f32>>, tensor<4xi32> loc(#loc1)
        %x = tt.load %q, %mask, %cst : tensor<4x!tt.ptr<f32>> loc(#loc2)
        %y = arith.mulf %x, %x : tensor<4xf32> loc(#loc1)
        tt.store %q, %y, %mask : tensor<4x!tt.ptr<f32>> loc(#loc1)
        tt.return loc(#loc1)
      } loc(#loc)
    } loc(#loc)
    #loc1 = loc("/k.py":4:8)
    #loc2 = loc("x"(#loc3))
    #loc3 = loc("/k.py":7:12)
    """
)


def test_locations_and_names_do_not_count_but_memory_operations_do() -> None:
    assert "loc(" not in strip_locations(TTIR)
    assert "#loc" not in strip_locations(TTIR)
    renamed = TTIR.replace("%y", "%other_name").replace('"/k.py":4:8', '"/elsewhere.py":9:1')
    assert canonical_digest(renamed) == canonical_digest(TTIR)
    # The mask and the pointer built in another order: the same dataflow.
    lines = TTIR.splitlines()
    reordered = "\n".join([*lines[:5], lines[7], lines[5], lines[6], *lines[8:]]) + "\n"
    assert reordered != TTIR
    assert canonical_digest(reordered) == canonical_digest(TTIR)
    assert canonical_digest(TTIR.replace("arith.mulf", "arith.addf")) != canonical_digest(TTIR)
    assert canonical_digest(TTIR.replace("dense<0.0>", "dense<1.0>")) != canonical_digest(TTIR)
    assert canonical_digest(TTIR.replace("slt", "sle")) != canonical_digest(TTIR)


def test_a_fill_is_unobserved_only_when_every_use_is_lane_wise_under_its_mask() -> None:
    proven, why = equivalence.fill_unobserved(TTIR, "k.py", (7, 7))
    assert proven, why
    assert "never observed" in why
    assert equivalence.fill_unobserved(TTIR, "k.py", (6, 6)) == (
        False,
        "no load of that line found in the TTIR",
    )
    unmasked = TTIR.replace("tt.store %q, %y, %mask", "tt.store %q, %y")
    assert not equivalence.fill_unobserved(unmasked, "k.py", (7, 7))[0]
    reduced = TTIR.replace("%y = arith.mulf %x, %x", '%y = "tt.reduce"(%x) <{axis = 0 : i32}> ({')
    proven, why = equivalence.fill_unobserved(reduced, "k.py", (7, 7))
    assert (proven, why) == (False, "its value reaches tt.reduce")


KERNEL = textwrap.dedent(
    """\
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _row(x_ptr, w_ptr, y_ptr, stride, width, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < width
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rrms = (1.0 / tl.sqrt(tl.sum(x * x, axis=0) / width + eps)).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * stride + cols, x * rrms * w, mask=mask)


    def rms_norm(x, weight, eps, out=None):
        width = x.shape[-1]
        y = torch.empty_like(x) if out is None else out
        if x.stride(0) != y.stride(0):
            y = torch.empty_like(x)
        _row[(x.shape[0],)](x, weight, y, x.stride(0), width, eps,
                            BLOCK=triton.next_power_of_2(width))
        if out is not None and y is not out:
            out.copy_(y)
        return y if out is None else out
    """
)


def test_mutants_with_the_originals_ttir_are_equivalent_and_a_real_one_is_not(
    tmp_path, monkeypatch
) -> None:
    path = tmp_path / "small_kernel.py"
    path.write_text(KERNEL)
    spec = loadable_kernel_spec(f"{path}:rms_norm")
    wanted = {
        # fp32 already: the cast cannot act.
        ("cast dropped", "(1.0 / tl.sqrt(tl.sum(x * x, axis=0) / width + eps)).to(tl.float32)"),
        # the weight's masked lanes are multiplied and stored under the same mask: never seen.
        ("load other= -> 1.0", "tl.load(w_ptr + cols, mask=mask, other=0.0)"),
        # x's masked lanes are summed: seen.
        ("load other= -> 1.0", "tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)"),
        ("Lt -> LtE", "cols < width"),
    }
    sites = [s for s in mutation_sites(KERNEL) if (s.operator, s.before) in wanted]
    assert len(sites) == len(wanted)
    monkeypatch.setattr(source_mutants, "mutation_sites", lambda text: sites)
    # A narrow sweep keeps the compile short; the fixtures' own layouts stay.
    monkeypatch.setattr(equivalence, "SWEEP_WIDTHS", (70, 4096))
    monkeypatch.setattr(equivalence, "SWEEP_ROWS", (3,))
    monkeypatch.setattr(equivalence, "SWEEP_DTYPES", ("float32", "bfloat16"))
    mutants, left_out = run_mutants(spec, jobs=2)
    assert left_out == 0
    by_site = {(m.site.operator, m.site.before): m for m in mutants}
    cast = by_site[("cast dropped", next(b for o, b in wanted if o == "cast dropped"))]
    assert cast.outcome == "equivalent", cast.detail
    assert cast.detail.startswith("TTIR identical to the original for ")
    w_fill = by_site[("load other= -> 1.0", "tl.load(w_ptr + cols, mask=mask, other=0.0)")]
    assert w_fill.outcome == "equivalent", w_fill.detail
    assert "never observed" in w_fill.detail
    x_fill = by_site[
        ("load other= -> 1.0", "tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)")
    ]
    assert x_fill.outcome == "killed", x_fill.detail
    assert by_site[("Lt -> LtE", "cols < width")].outcome == "killed"
    data = source_mutants.report(spec, mutants, left_out)
    assert data["equivalent"] == 2
    assert data["score"] == data["killed"] / (len(mutants) - 2) == 1.0


def test_the_sweep_launches_every_code_path_the_rule_reaches(coverage_map) -> None:
    # A mutant is called equivalent when its TTIR matches on every recorded launch: a code path
    # no recorded launch compiles would make every mutant in it "equivalent". So the dry-run
    # layouts must reach each kernel branch of the bundled rule's map (the kernel, one or
    # several rows, peeled or not, one tile or two).
    from kernels.instruments import coverage
    from kernels.layout import choose_config

    def branches(configurations):
        return {(c.dtype, c.kernel, c.multi_row, c.peel, c.split) for c in configurations}

    reached = set()
    for layout in equivalence._layouts():
        itemsize = coverage.ITEMSIZES[layout["dtype"]]
        config = choose_config(layout["rows"], layout["width"], itemsize)
        launched, constexprs = coverage.launch_constexprs(
            config, layout["rows"], layout["width"], layout["x_stride"], layout["y_stride"],
            itemsize,
        )  # fmt: skip
        reached.add(coverage.configuration_of(layout["dtype"], launched.loop, constexprs))
    assert branches(coverage_map) <= branches(reached)
