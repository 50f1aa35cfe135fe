"""Launch plans and the torch.compile door: a planned call is the checked call, only cheaper.

A plan is made for a signature only after it passed every check; a call whose signature has a
plan skips the checks, so these tests pin that (a) a planned result is the unplanned result,
bit for bit, (b) a bad argument is rejected with its message whether or not a plan exists for
the rest of the signature, (c) the cache stays bounded, and (d) ``torch.compile(fullgraph=True)``
traces ``kernels.rms_norm`` as one op, no graph break.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kernels
from kernels import direct_launch, launcher, plans

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"


@pytest.fixture(autouse=True)
def _no_plans():
    plans.clear_plans()
    yield
    plans.clear_plans()


def _inputs(rows: int, width: int, dtype=torch.float32, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=generator).to(dtype).to(DEVICE)
    w = torch.randn(width, generator=generator).to(dtype).to(DEVICE)
    return x, w


def _unplanned(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    checked = launcher.validate(x, w, eps)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    launcher.launch(checked.x2d, w, y.view(checked.rows, checked.width), checked.eps)
    return y


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("rows", "width"), [(3, 70), (5, 128), (2, 1000)])
def test_planned_call_equals_unplanned_bitwise(rows: int, width: int, dtype) -> None:
    x, w = _inputs(rows, width, dtype, seed=width)
    first = kernels.rms_norm(x, w, 1e-5)
    assert plans.plan_count() == 1
    x2, _ = _inputs(rows, width, dtype, seed=width + 1)  # same signature, other values
    second = kernels.rms_norm(x2, w, 1e-5)
    assert plans.plan_count() == 1
    assert torch.equal(first, _unplanned(x, w, 1e-5))
    assert torch.equal(second, _unplanned(x2, w, 1e-5))
    reference = torch.nn.functional.rms_norm(x2.double(), (width,), w.double(), 1e-5)
    tolerance = 1e-5 if dtype == torch.float32 else 5e-2
    assert (second.double() - reference).abs().max().item() < tolerance


def test_padded_rows_and_3d_plans_keep_their_layout() -> None:
    base, w = _inputs(6, 96)
    x = base.view(2, 3, 96)[:, :, :70]  # padded rows (stride 96), 3-D
    w = w[:70].contiguous()
    for _ in range(2):
        y = kernels.rms_norm(x, w, 1e-6)
        assert y.shape == x.shape
        assert y.is_contiguous()
        reference = torch.nn.functional.rms_norm(x.double(), (70,), w.double(), 1e-6)
        assert (y.double() - reference).abs().max().item() < 1e-5
    assert plans.plan_count() == 1


def test_each_signature_its_own_plan() -> None:
    x, w = _inputs(3, 70)
    kernels.rms_norm(x, w)
    kernels.rms_norm(x[:2], w)  # other rows
    kernels.rms_norm(x.to(torch.float16), w)  # fp16 x, fp32 weight
    kernels.rms_norm(x, w, 1e-3)  # eps is not part of the signature
    assert plans.plan_count() == 3


@pytest.mark.parametrize(
    ("eps", "error", "pattern"),
    [
        (0.0, ValueError, r"eps must be in \[1e-12, 0\.01\]; got 0\.0"),
        (float("nan"), ValueError, r"eps must be finite"),
        ("1e-6", TypeError, r"eps must be a real number"),
        (0.011, ValueError, r"eps must be in \[1e-12, 0\.01\]; got 0\.011"),
    ],
)
def test_bad_eps_rejected_after_a_plan_exists(eps: object, error, pattern: str) -> None:
    x, w = _inputs(3, 70)
    kernels.rms_norm(x, w, 1e-6)
    assert plans.plan_count() == 1
    with pytest.raises(error, match=pattern):
        kernels.rms_norm(x, w, eps)


@pytest.mark.parametrize("eps", [launcher.EPS_MIN, launcher.EPS_MAX])
def test_eps_at_its_bounds_takes_the_plan(eps: float) -> None:
    x, w = _inputs(3, 70)
    y = kernels.rms_norm(x, w, eps)
    assert plans.plan_count() == 1
    assert torch.equal(y, _unplanned(x, w, eps))


def test_rejected_signatures_make_no_plan() -> None:
    x, w = _inputs(3, 70)
    with pytest.raises(ValueError, match=r"weight\.shape must be \(width,\) = \(70,\); got"):
        kernels.rms_norm(x, w[:69])
    with pytest.raises(ValueError, match=r"x\.stride\(-1\) must be 1"):
        kernels.rms_norm(x.t().contiguous().t()[:, :3], w[:3].contiguous())
    assert plans.plan_count() == 0


def test_non_float_eps_takes_the_checked_door() -> None:
    x, w = _inputs(3, 70)
    numpy_eps = kernels.rms_norm(x, w, np.float64(0.01))  # a float subclass: checked door
    assert plans.plan_count() == 0
    assert torch.equal(numpy_eps, _unplanned(x, w, 0.01))


def test_out_calls_have_their_own_plan_and_write_out_bitwise() -> None:
    x, w = _inputs(3, 70)
    out = torch.empty_like(x)
    assert kernels.rms_norm(x, w, 0.01, out=out) is out
    assert plans.plan_count() == 1  # out='s signature: a plan of its own
    x2, _ = _inputs(3, 70, seed=1)
    out2 = torch.empty_like(x2)
    assert kernels.rms_norm(x2, w, 0.01, out=out2) is out2
    assert plans.plan_count() == 1
    assert torch.equal(out, _unplanned(x, w, 0.01))
    assert torch.equal(out2, _unplanned(x2, w, 0.01))
    assert torch.equal(kernels.rms_norm(x2, w, 0.01), out2)  # no out: another plan
    assert plans.plan_count() == 2


def test_out_into_a_padded_3d_view_on_its_plan() -> None:
    x, w = _inputs(2 * 3, 70)
    x3 = x.view(2, 3, 70)
    store = torch.full((2, 3, 80), 7.0, device=DEVICE)
    out = store[:, :, :70]
    for _ in range(2):  # the plan's first call, then a hit
        assert kernels.rms_norm(x3, w, 1e-5, out=out) is out
    assert plans.plan_count() == 1
    assert torch.equal(out.reshape(6, 70), _unplanned(x, w, 1e-5))
    assert torch.all(store[:, :, 70:] == 7.0)  # the padding is untouched


def test_in_place_on_an_out_plan() -> None:
    x, w = _inputs(4, 70)
    expected = _unplanned(x, w, 1e-5)
    kernels.rms_norm(x, w, 1e-5, out=torch.empty_like(x))  # a plan for out with x's strides
    assert kernels.rms_norm(x, w, 1e-5, out=x) is x
    assert plans.plan_count() == 1
    assert torch.equal(x, expected)


def test_an_out_plan_still_refuses_an_out_that_overlaps_x() -> None:
    base, w = _inputs(6, 70)
    x = base[:3]
    kernels.rms_norm(x, w, 1e-5, out=torch.empty_like(x))  # the plan of this signature
    before = base.clone()
    with pytest.raises(ValueError, match=r"out shares memory with x but is not x itself"):
        kernels.rms_norm(x, w, 1e-5, out=base[3:])  # same signature, x's storage
    padded = torch.randn(3, 80, device=DEVICE)
    x_padded = padded[:, :70]
    kernels.rms_norm(x_padded, w, 1e-5, out=torch.empty(3, 70, device=DEVICE))
    alias = padded.view(-1)[:210].view(3, 70)  # x's first address, other strides
    with pytest.raises(ValueError, match=r"out shares memory with x but is not x itself"):
        kernels.rms_norm(x_padded, w, 1e-5, out=alias)
    assert torch.equal(base, before)


def test_bad_out_rejected_after_an_out_plan_exists() -> None:
    x, w = _inputs(3, 70)
    kernels.rms_norm(x, w, 1e-5, out=torch.empty_like(x))
    with pytest.raises(TypeError, match=r"out must be a torch\.Tensor or None; got list"):
        kernels.rms_norm(x, w, 1e-5, out=[])
    with pytest.raises(TypeError, match=r"out\.dtype must equal x\.dtype"):
        kernels.rms_norm(x, w, 1e-5, out=torch.empty(3, 70, dtype=torch.float64, device=DEVICE))
    with pytest.raises(ValueError, match=r"eps must be"):
        kernels.rms_norm(x, w, 1.0, out=torch.empty_like(x))
    assert plans.plan_count() == 1


def test_empty_rows_make_no_plan_and_no_launch() -> None:
    x, w = _inputs(0, 70)
    y = kernels.rms_norm(x, w)
    assert y.shape == (0, 70)
    assert plans.plan_count() == 0


def test_plan_cache_is_bounded_at_max_plans(monkeypatch) -> None:
    monkeypatch.setattr(plans, "MAX_PLANS", 3)
    w = _inputs(1, 16)[1]
    for rows in range(1, 4):
        kernels.rms_norm(torch.ones(rows, 16, device=DEVICE), w)
    assert plans.plan_count() == 3  # at the bound
    kernels.rms_norm(torch.ones(4, 16, device=DEVICE), w)
    assert plans.plan_count() == 1  # one past it: the cache started again


class _Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(width, width, device=DEVICE)
        self.weight = torch.nn.Parameter(torch.randn(width, device=DEVICE))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(self.proj(x), self.weight, 1e-6) * 2.0 + x


def test_torch_compile_fullgraph_traces_one_op_without_a_graph_break() -> None:
    torch._dynamo.reset()
    model = _Block(64)
    x = torch.randn(4, 64, device=DEVICE)
    with torch.no_grad():
        eager = model(x)
        explained = torch._dynamo.explain(model)(x)
        assert explained.graph_count == 1
        assert explained.graph_break_count == 0
        ops = [
            node.target
            for graph in explained.graphs
            for node in graph.graph.nodes
            if node.op == "call_function"
        ]
        assert torch.ops.rmsnorm_inspector.rms_norm in ops
        compiled = torch.compile(model, fullgraph=True, backend="eager")
        assert torch.equal(compiled(x), eager)


def test_torch_compile_rejects_a_bad_argument_with_the_same_message() -> None:
    torch._dynamo.reset()

    def bad_eps(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(x, w, 0.5)

    def bad_weight(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(x, w[:-1])

    x, w = _inputs(3, 70)
    with pytest.raises(Exception, match=r"eps must be in \[1e-12, 0\.01\]; got 0\.5"):
        torch.compile(bad_eps, fullgraph=True, backend="eager")(x, w)
    with pytest.raises(Exception, match=r"weight\.shape must be \(width,\) = \(70,\)"):
        torch.compile(bad_weight, fullgraph=True, backend="eager")(x, w)


def test_torch_compile_out_argument_is_written() -> None:
    torch._dynamo.reset()

    def into(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(x, w, 1e-6, out=out)

    x, w = _inputs(3, 70)
    out = torch.zeros_like(x)
    torch.compile(into, fullgraph=True, backend="eager")(x, w, out)
    assert torch.equal(out, _unplanned(x, w, 1e-6))
    # Dynamo of torch 2.11 reports the ValueError with its message split into parts.
    with pytest.raises(Exception, match=r"out\.shape must equal x\.shape"):
        torch.compile(into, fullgraph=True, backend="eager")(x, w, torch.zeros(3, 71))


def test_the_op_is_the_launcher() -> None:
    x, w = _inputs(3, 70)
    assert torch.equal(torch.ops.rmsnorm_inspector.rms_norm(x, w, 1e-6), _unplanned(x, w, 1e-6))
    with pytest.raises(ValueError, match=r"weight\.shape must be \(width,\) = \(70,\); got \(5,\)"):
        torch.ops.rmsnorm_inspector.rms_norm(x, w[:5], 1e-6)


class _RecordedKernel:
    """Stands in for ``wrap_triton(kernel)``: records each launch instead of running it."""

    def __init__(self) -> None:
        self.grids: list[tuple[int, ...]] = []

    def __getitem__(self, grid: tuple[int, ...]):
        def launch(*args: object, **constexprs: object) -> None:
            self.grids.append(grid)

        return launch


@pytest.mark.parametrize(
    ("rows", "width", "dtype", "batch_invariant"),
    [
        (256, 2048, torch.bfloat16, False),  # a multi-row tile
        (128, 18432, torch.float16, False),  # few long rows: each row in parts
        (3, 4096, torch.bfloat16, True),
        (5, 70, torch.float32, False),
    ],
)
def test_the_ops_body_traces_on_fake_tensors(monkeypatch, rows, width, dtype, batch_invariant):
    # On a GPU, triton_op traces the op's body on fake tensors before Inductor launches the
    # kernel itself. A fake tensor has no data pointer: torch 2.11 raises on reading one, this
    # torch warns once per process, so here it raises every time. The wrapped kernel only
    # records its grid.
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    from kernels import op
    from kernels.layout import choose_config, sm_count_for
    from kernels.plans import invariant_config

    def no_data_pointer(self: torch.Tensor) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor (e.g. FakeTensor)")

    monkeypatch.setattr(FakeTensor, "data_ptr", no_data_pointer)
    recorded = _RecordedKernel()
    monkeypatch.setattr(op, "_wrap", lambda kernel: recorded)
    with FakeTensorMode():
        x = torch.empty(rows, width, dtype=dtype, device=DEVICE)
        w = torch.empty(width, dtype=dtype, device=DEVICE)
        y = op.rms_norm_op(x, w, 1e-6, batch_invariant)
    assert (tuple(y.shape), y.dtype) == ((rows, width), dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    config = (
        invariant_config(width, itemsize)
        if batch_invariant
        else choose_config(rows, width, itemsize, sm_count_for(torch.device(DEVICE)))
    )
    assert recorded.grids == [(config.grid(rows),)]
    if (rows, width) == (128, 18432):
        # Rows in parts: the grid above counts every part, so they were kept (a call the
        # launcher took for in place would launch one program per row).
        assert config.row_parts > 1


def test_a_meta_tensor_never_takes_a_cpu_plan() -> None:
    # get_device() is -1 for CPU and meta alike: the plan checks the device itself.
    x, w = _inputs(3, 70)
    kernels.rms_norm(x, w)
    assert plans.plan_count() == 1
    with pytest.raises(ValueError, match=r"x must be on a"):
        kernels.rms_norm(x.to("meta"), w.to("meta"))
    with pytest.raises(ValueError, match=r"weight must be on x's device \S+; got meta"):
        kernels.rms_norm(x, w.to("meta"))


def _launcher_without_c_code(launch, **sizes):
    """This Triton's CudaLauncher with its C function replaced (no compiler, no GPU needed)."""
    from triton.backends.nvidia.driver import CudaLauncher

    run = object.__new__(CudaLauncher)
    attributes = {
        "launch": launch,
        "num_ctas": 1,
        "global_scratch_size": 0,
        "global_scratch_align": 1,
        "profile_scratch_size": 0,
        "profile_scratch_align": 1,
        "launch_cooperative_grid": False,
        "launch_pdl": False,
        "arg_annotations": ("annotations",),
        "kernel_signature": ("signature",),
        **sizes,
    }
    for name, value in attributes.items():
        setattr(run, name, value)
    return run


def test_c_launch_passes_exactly_what_the_launchers_call_passes() -> None:
    calls: list[tuple] = []
    run = _launcher_without_c_code(lambda *args: calls.append(args))
    kernel_args = (*direct_launch.POINTERS, 7, 35, 36, 35, direct_launch.EPS, 128, 1, 2, True)
    door = direct_launch.c_launch(run, 7, "function", ("packed",), kernel_args)
    assert door is not None
    door(1234, 0xA0, 0xB0, 0xC0, 1e-6)
    real = (0xA0, 0xB0, 0xC0, 7, 35, 36, 35, 1e-6, 128, 1, 2, True)
    run(7, 1, 1, 1234, "function", ("packed",), None, None, None, *real)
    assert len(calls) == 2
    assert calls[0] == calls[1]


def test_c_launch_is_refused_for_scratch_memory_and_unknown_launchers() -> None:
    kernel_args = (*direct_launch.POINTERS, 7, direct_launch.EPS)
    with_scratch = _launcher_without_c_code(lambda *a: None, global_scratch_size=64)
    assert direct_launch.c_launch(with_scratch, 1, "f", (), kernel_args) is None

    class OtherLauncher:
        launch = staticmethod(lambda *a: None)
        global_scratch_size = profile_scratch_size = 0

        def __call__(self, *args):
            self.launch(*args)

    assert (
        direct_launch.launcher_call_digest(OtherLauncher())
        not in direct_launch.KNOWN_LAUNCHER_CALLS
    )
    assert direct_launch.c_launch(OtherLauncher(), 1, "f", (), kernel_args) is None
