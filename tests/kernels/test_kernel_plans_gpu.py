"""The direct launch door on a CUDA device, CUDA-graph capture and torch.compile with Inductor.

A plan launches Triton's compiled kernel itself, without Triton's dispatch; these tests pin that
it launches the kernel Triton would (bit-identical results on every automatic path), that the
door is really taken, that unaligned pointers and profiler hooks go through Triton's dispatch,
and that ``kernels.rms_norm`` is captured by a CUDA graph and compiled by Inductor with no graph
break. ``gpu`` marker; no Qt, no oracle.
"""

from __future__ import annotations

import pytest
import torch

import kernels
from kernels import direct_launch, launcher, plans

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or kernels.MODE != "compiled",
        reason="needs a CUDA device and the compiled (non-interpreted) kernel",
    ),
]

# One shape per automatic path and rule family: packed short rows, one-row tiles, the 2-byte
# tile, column loops, an odd width and a split odd width.
SHAPES = (
    (4096, 70), (65536, 128), (4, 1000), (1, 4096), (4096, 2048), (64, 5125), (512, 2053),
    (8, 65536),
)  # fmt: skip
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@pytest.fixture(autouse=True)
def _no_plans():
    plans.clear_plans()
    yield
    plans.clear_plans()


def _inputs(rows: int, width: int, dtype: torch.dtype, seed: int = 0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, width, generator=generator, device="cuda") * 3.0
    w = torch.randn(width, generator=generator, device="cuda")
    return x.to(dtype), w.to(dtype)


def _unplanned(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    checked = launcher.validate(x, w, eps)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    launcher.launch(checked.x2d, w, y.view(checked.rows, checked.width), checked.eps)
    return y


class _Counting:
    """A plan's direct launches, counted: its door (or ``DirectLaunch.run``) wrapped."""

    def __init__(self, plan: plans.LaunchPlan) -> None:
        assert plan.direct is not None
        field = "door" if plan.direct.door is not None else "run"
        self.launch = getattr(plan.direct, field)
        self.launches = 0
        plan.direct = plan.direct._replace(**{field: self})

    def __call__(self, *args: object) -> object:
        self.launches += 1
        return self.launch(*args)


def _only_plan() -> plans.LaunchPlan:
    assert plans.plan_count() == 1
    return next(iter(plans.PLANS.values()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("rows", "width"), SHAPES)
def test_direct_launch_is_tritons_kernel_bit_for_bit(rows: int, width: int, dtype) -> None:
    x, w = _inputs(rows, width, dtype, seed=rows + width)
    kernels.rms_norm(x, w, 1e-6)  # through Triton's dispatch: the plan keeps its kernel
    counting = _Counting(_only_plan())
    x2, _ = _inputs(rows, width, dtype, seed=rows + width + 1)
    direct = kernels.rms_norm(x2, w, 1e-6)
    torch.cuda.synchronize()
    assert counting.launches == 1
    assert torch.equal(direct, _unplanned(x2, w, 1e-6))
    reference = torch.nn.functional.rms_norm(x2.double(), (width,), w.double(), 1e-6)
    tolerance = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 1.5e-1}[dtype]
    assert (direct.double() - reference).abs().max().item() < tolerance


@pytest.mark.parametrize(("rows", "width"), [(4, 1000), (64, 5125), (4096, 2048)])
def test_out_and_in_place_take_the_direct_door_bit_for_bit(rows: int, width: int) -> None:
    x, w = _inputs(rows, width, torch.bfloat16, seed=width)
    kernels.rms_norm(x, w, 1e-6, out=torch.empty_like(x))  # Triton's dispatch: the out plan
    counting = _Counting(_only_plan())
    x2, _ = _inputs(rows, width, torch.bfloat16, seed=width + 1)
    out = torch.empty_like(x2)
    assert kernels.rms_norm(x2, w, 1e-6, out=out) is out
    torch.cuda.synchronize()
    assert counting.launches == 1
    assert torch.equal(out, _unplanned(x2, w, 1e-6))
    assert kernels.rms_norm(x2, w, 1e-6, out=x2) is x2  # in place: the same plan, the door
    torch.cuda.synchronize()
    assert counting.launches == 2
    assert torch.equal(x2, out)


def test_float32_weight_and_padded_3d_rows_on_the_direct_door() -> None:
    base, _ = _inputs(2 * 3 * 136, 1, torch.bfloat16)
    x = base.view(2, 3, 136)[:, :, :130]
    w = torch.randn(130, device="cuda")
    first = kernels.rms_norm(x, w, 1e-5)
    second = kernels.rms_norm(x, w, 1e-5)
    assert _only_plan().direct is not None
    assert torch.equal(first, second)
    assert torch.equal(second, _unplanned(x, w, 1e-5))


def test_unaligned_pointer_goes_through_tritons_dispatch() -> None:
    base, w = _inputs(8, 1032, torch.float16)
    aligned, unaligned = base[:, :1024], base[:, 1:1025]  # one signature, 2-byte offset
    kernels.rms_norm(aligned, w[:1024].contiguous(), 1e-6)
    counting = _Counting(_only_plan())
    weight = w[:1024].contiguous()
    y = kernels.rms_norm(unaligned, weight, 1e-6)
    torch.cuda.synchronize()
    assert counting.launches == 0
    assert torch.equal(y, _unplanned(unaligned, weight, 1e-6))
    y_aligned = kernels.rms_norm(aligned, weight, 1e-6)
    assert counting.launches == 1
    assert torch.equal(y_aligned, _unplanned(aligned, weight, 1e-6))


def test_launch_hooks_see_every_launch() -> None:
    from triton import knobs

    seen: list[object] = []
    hook = knobs.runtime.launch_enter_hook
    x, w = _inputs(4, 4096, torch.bfloat16)
    kernels.rms_norm(x, w, 1e-6)
    if hasattr(hook, "add"):
        hook.add(seen.append)
    else:
        knobs.runtime.launch_enter_hook = seen.append
    try:
        y = kernels.rms_norm(x, w, 1e-6)
    finally:
        if hasattr(hook, "remove"):
            hook.remove(seen.append)
        else:
            knobs.runtime.launch_enter_hook = hook
    assert len(seen) == 1
    assert torch.equal(y, _unplanned(x, w, 1e-6))


def test_cuda_graph_captures_the_planned_launch() -> None:
    x, w = _inputs(512, 4096, torch.bfloat16)
    static_x = x.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):  # plan, then the direct door, outside the capture
            kernels.rms_norm(static_x, w, 1e-6)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = kernels.rms_norm(static_x, w, 1e-6)
    fresh, _ = _inputs(512, 4096, torch.bfloat16, seed=7)
    static_x.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(static_y, _unplanned(fresh, w, 1e-6))


class _Block(torch.nn.Module):
    def __init__(self, width: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(width, width, device="cuda", dtype=dtype)
        self.weight = torch.nn.Parameter(torch.randn(width, device="cuda", dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = kernels.rms_norm(x, self.weight, 1e-6)
        return kernels.rms_norm(self.proj(h) + x, self.weight, 1e-6)


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_inductor_fullgraph_compiles_the_op(mode: str | None) -> None:
    torch._dynamo.reset()
    model = _Block(2048, torch.bfloat16)
    x, _ = _inputs(256, 2048, torch.bfloat16, seed=3)
    with torch.no_grad():
        eager = model(x)
        explained = torch._dynamo.explain(model)(x)
        assert explained.graph_break_count == 0
        compiled = torch.compile(model, fullgraph=True, mode=mode)
        for _ in range(3):  # reduce-overhead records its CUDA graph on a later call
            result = compiled(x)
        torch.cuda.synchronize()
    # Inductor may fuse the Linear's bias and the residual add (other roundings than eager's).
    torch.testing.assert_close(result, eager, atol=5e-2, rtol=2e-2)


def test_inductor_launches_the_same_kernel_bit_for_bit() -> None:
    torch._dynamo.reset()

    def norms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(kernels.rms_norm(x, w, 1e-6) * 2.0, w, 1e-5)

    x, w = _inputs(4096, 5120, torch.bfloat16, seed=5)
    compiled = torch.compile(norms, fullgraph=True)
    assert torch.equal(compiled(x, w), norms(x, w))


def test_a_refused_direct_launch_falls_back_to_tritons_dispatch_for_good() -> None:
    x, w = _inputs(8, 2048, torch.bfloat16)
    kernels.rms_norm(x, w, 1e-6)
    plan = _only_plan()
    assert plan.direct is not None

    def refuses(*args: object) -> None:
        raise TypeError("launch() takes 13 positional arguments")

    plan.direct = plan.direct._replace(run=refuses, door=refuses if plan.direct.door else None)
    try:
        y = kernels.rms_norm(x, w, 1e-6)
        assert plan.direct is None
        assert direct_launch.DIRECT_REFUSED
        assert torch.equal(y, _unplanned(x, w, 1e-6))
        kernels.rms_norm(x[:4], w, 1e-6)  # a new signature: no direct door any more
        assert all(p.direct is None for p in plans.PLANS.values())
    finally:
        direct_launch.DIRECT_REFUSED.clear()


def test_this_tritons_launcher_gets_the_c_door() -> None:
    # Triton 3.6 and 3.7 have a known CudaLauncher.__call__: the door skips its Python frame.
    x, w = _inputs(8, 4096, torch.bfloat16)
    kernels.rms_norm(x, w, 1e-6)
    direct = _only_plan().direct
    assert direct is not None
    known = direct_launch.launcher_call_digest(direct.run) in direct_launch.KNOWN_LAUNCHER_CALLS
    assert (direct.door is not None) == known


def test_inductor_with_dynamic_shapes_launches_each_shape_right() -> None:
    torch._dynamo.reset()

    def norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(x, w, 1e-6) * 2.0

    compiled = torch.compile(norm, fullgraph=True, dynamic=True)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    for rows in (3, 17, 300):
        x, _ = _inputs(rows, 4096, torch.bfloat16, seed=rows)
        assert torch.equal(compiled(x, w), norm(x, w))
